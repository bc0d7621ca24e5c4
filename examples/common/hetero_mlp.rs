//! The `hetero_mlp` demo: normalisation on the host VDevice, dense layers on the GPU
//! VDevice, checked against a host-only run of the same program.

use std::time::Instant;

use relax_wgpu::engine::{DeviceChoice, RunStats, Value};

use super::{choose_device, engine, max_abs_diff, parse_module, pseudo_random, read_f32, tensor_f32};

/// The TVMScript program.
pub const PROGRAM: &str = include_str!("../relax/hetero_mlp.py");

/// What one demo run measured.
pub struct Report {
    /// Whether a GPU adapter ran the GPU VDevice's kernels.
    pub used_gpu: bool,
    /// Largest difference between the heterogeneous and the host-only result.
    pub max_diff: f32,
    /// Statistics of the timed heterogeneous run alone (weights already placed).
    pub run: RunStats,
    /// Copies made by that run.
    pub copies: u64,
    /// Bytes those copies moved.
    pub bytes_copied: u64,
}

/// Subtract the counters of `a` from `b` (the work between two snapshots).
fn delta(b: RunStats, a: RunStats) -> RunStats {
    RunStats {
        runs: b.runs - a.runs,
        kernels_run: b.kernels_run - a.kernels_run,
        host_kernels_run: b.host_kernels_run - a.host_kernels_run,
        gpu_kernels_run: b.gpu_kernels_run - a.gpu_kernels_run,
        kernels_compiled: b.kernels_compiled - a.kernels_compiled,
        kernel_cache_hits: b.kernel_cache_hits - a.kernel_cache_hits,
        host_kernel_ns: b.host_kernel_ns - a.host_kernel_ns,
        gpu_kernel_ns: b.gpu_kernel_ns - a.gpu_kernel_ns,
        packed_calls: b.packed_calls - a.packed_calls,
        copies: b.copies - a.copies,
        bytes_copied: b.bytes_copied - a.bytes_copied,
        uploads: b.uploads - a.uploads,
        bytes_uploaded: b.bytes_uploaded - a.bytes_uploaded,
        downloads: b.downloads - a.downloads,
        bytes_downloaded: b.bytes_downloaded - a.bytes_downloaded,
        device_copies: b.device_copies - a.device_copies,
        bytes_device_copied: b.bytes_device_copied - a.bytes_device_copied,
        allocations: b.allocations - a.allocations,
        bytes_allocated: b.bytes_allocated - a.bytes_allocated,
        device_allocations: b.device_allocations - a.device_allocations,
    }
}

/// Run the heterogeneous MLP on `batch` rows (with the GPU when `use_gpu` and one exists).
pub fn run(batch: usize, use_gpu: bool, verbose: bool) -> Result<Report, String> {
    let module = parse_module(PROGRAM)?;
    let device = choose_device(use_gpu, verbose);
    let used_gpu = device == DeviceChoice::Gpu;

    let (f, h, o) = (32usize, 64usize, 10usize);
    let x = pseudo_random(batch * f, 1, 5.0)
        .iter()
        .enumerate()
        .map(|(i, v)| v + (i % f) as f32)
        .collect::<Vec<_>>();
    let mean: Vec<f32> = (0..f).map(|j| j as f32).collect();
    let inv_std: Vec<f32> = (0..f).map(|j| 1.0 / (1.0 + 0.1 * j as f32)).collect();
    let w1 = pseudo_random(f * h, 2, 0.3);
    let b1 = pseudo_random(h, 3, 0.1);
    let w2 = pseudo_random(h * o, 4, 0.3);
    let b2 = pseudo_random(o, 5, 0.1);
    let n = batch as i64;
    let host_args = vec![
        tensor_f32(&[n, f as i64], &x)?,
        tensor_f32(&[f as i64], &mean)?,
        tensor_f32(&[f as i64], &inv_std)?,
        tensor_f32(&[f as i64, h as i64], &w1)?,
        tensor_f32(&[h as i64], &b1)?,
        tensor_f32(&[h as i64, o as i64], &w2)?,
        tensor_f32(&[o as i64], &b2)?,
    ];

    // Heterogeneous engine: the weights are placed on the GPU VDevice once.
    let engine = engine(device);
    let loaded = engine.load(&module).map_err(|e| e.to_string())?;
    let mut args = host_args.clone();
    for a in args.iter_mut().skip(3) {
        let t = a.as_tensor().ok_or("weights are tensors")?;
        *a = Value::Tensor(loaded.to_vdevice(t, "vulkan:0:global").map_err(|e| e.to_string())?);
    }
    let placed = loaded.stats();
    // First run: compiles every kernel (once).
    loaded.run("main", &args).map_err(|e| e.to_string())?;
    let warm = loaded.stats();
    let t0 = Instant::now();
    let out = loaded.run("main", &args).map_err(|e| e.to_string())?;
    let wall = t0.elapsed();
    let run = delta(loaded.stats(), warm);
    let (shape, got) = read_f32(&out)?;
    if shape != [n, o as i64] {
        return Err(format!("result shape {shape:?}, expected [{n}, {o}]"));
    }

    // Host-only run of the same program.
    let host = engine_cpu();
    let host_loaded = host.load(&module).map_err(|e| e.to_string())?;
    host_loaded.run("main", &host_args).map_err(|e| e.to_string())?;
    let t1 = Instant::now();
    let (_, want) = read_f32(&host_loaded.run("main", &host_args).map_err(|e| e.to_string())?)?;
    let host_wall = t1.elapsed();
    let max_diff = max_abs_diff(&got, &want);

    if verbose {
        let ms = |ns: u64| ns as f64 / 1e6;
        println!("batch {batch}: result {shape:?}");
        println!(
            "  weights placed on the vulkan VDevice once: {} copies, {} bytes",
            placed.copies, placed.bytes_copied
        );
        println!(
            "  compilation (first run): {} PrimFuncs compiled",
            warm.kernels_compiled
        );
        println!("  timed run:");
        if used_gpu {
            println!(
                "    host VDevice (llvm):  {} kernel(s), {:.3} ms",
                run.host_kernels_run,
                ms(run.host_kernel_ns)
            );
            println!(
                "    GPU VDevice (vulkan): {} kernel(s), {:.3} ms",
                run.gpu_kernels_run,
                ms(run.gpu_kernel_ns)
            );
        } else {
            println!(
                "    host (no GPU adapter: both VDevices): {} kernel(s), {:.3} ms",
                run.host_kernels_run,
                ms(run.host_kernel_ns)
            );
        }
        println!(
            "    copies made: {} ({} bytes): {} upload(s) {} B, {} readback(s) {} B, {} host copies",
            run.copies,
            run.bytes_copied,
            run.uploads,
            run.bytes_uploaded,
            run.downloads,
            run.bytes_downloaded,
            run.copies - run.uploads - run.downloads - run.device_copies
        );
        println!(
            "    wall time: heterogeneous {:.3} ms, host-only {:.3} ms",
            wall.as_secs_f64() * 1e3,
            host_wall.as_secs_f64() * 1e3
        );
        println!("  max |heterogeneous - host-only| = {max_diff:.3e}");
    }
    let tol = 1e-3 * want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    if max_diff.is_nan() || max_diff > tol {
        return Err(format!(
            "heterogeneous result differs from the host-only run by {max_diff} (tolerance {tol})"
        ));
    }
    if run.copies != 2 {
        return Err(format!(
            "expected 2 copies per run (activations to the GPU VDevice and back), saw {}",
            run.copies
        ));
    }
    Ok(Report {
        used_gpu,
        max_diff,
        run,
        copies: run.copies,
        bytes_copied: run.bytes_copied,
    })
}

fn engine_cpu() -> relax_wgpu::engine::Engine {
    engine(DeviceChoice::Cpu)
}
