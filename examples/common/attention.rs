//! The `attention` demo: softmax(Q K^T / sqrt(d)) V on the GPU (every PrimFunc of the
//! program), checked against a plain-Rust reference.

use std::time::Instant;

use relax_wgpu::engine::DeviceChoice;

use super::{choose_device, engine, max_abs_diff, parse_module, pseudo_random, read_f32, tensor_f32};

/// The TVMScript program.
pub const PROGRAM: &str = include_str!("../relax/attention.py");

/// Head size of the program.
pub const D: usize = 16;

/// Plain-Rust single-head attention on row-major `s x D` matrices.
pub fn reference(q: &[f32], k: &[f32], v: &[f32], s: usize) -> Vec<f32> {
    let scale = 1.0 / (D as f32).sqrt();
    let mut out = vec![0.0f32; s * D];
    for i in 0..s {
        let scores: Vec<f32> = (0..s)
            .map(|j| (0..D).map(|r| q[i * D + r] * k[j * D + r]).sum::<f32>() * scale)
            .collect();
        let m = scores.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = scores.iter().map(|x| (x - m).exp()).collect();
        let z: f32 = e.iter().sum();
        for c in 0..D {
            out[i * D + c] = (0..s).map(|j| e[j] / z * v[j * D + c]).sum();
        }
    }
    out
}

/// Run attention for sequence length `s`; returns the largest difference to the reference.
pub fn run(s: usize, use_gpu: bool, verbose: bool) -> Result<(bool, f32), String> {
    let module = parse_module(PROGRAM)?;
    // No VDevices in this program: everything runs on the engine's default device.
    let device = choose_device(use_gpu, verbose);
    let used_gpu = device == DeviceChoice::Gpu;
    let loaded = engine(device).load(&module).map_err(|e| e.to_string())?;
    let q = pseudo_random(s * D, 21, 1.0);
    let k = pseudo_random(s * D, 22, 1.0);
    let v = pseudo_random(s * D, 23, 1.0);
    let shape = [s as i64, D as i64];
    let args = vec![
        tensor_f32(&shape, &q)?,
        tensor_f32(&shape, &k)?,
        tensor_f32(&shape, &v)?,
    ];
    let t0 = Instant::now();
    let (out_shape, got) = read_f32(&loaded.run("main", &args).map_err(|e| e.to_string())?)?;
    let elapsed = t0.elapsed();
    if out_shape != shape {
        return Err(format!("result shape {out_shape:?}, expected {shape:?}"));
    }
    let want = reference(&q, &k, &v, s);
    let diff = max_abs_diff(&got, &want);
    if verbose {
        let st = loaded.stats();
        println!(
            "s = {s}, d = {D}: {} kernels run on {} in {:.3} ms (first run, includes compiling {} PrimFuncs)",
            st.kernels_run,
            if used_gpu { "the GPU" } else { "the host" },
            elapsed.as_secs_f64() * 1e3,
            st.kernels_compiled
        );
        println!(
            "  copies: {} uploads ({} bytes), {} readbacks ({} bytes)",
            st.uploads, st.bytes_uploaded, st.downloads, st.bytes_downloaded
        );
        println!("  max |relax - plain Rust| = {diff:.3e}");
    }
    if diff.is_nan() || diff > 1e-4 {
        return Err(format!("attention differs from the plain-Rust reference by {diff}"));
    }
    Ok((used_gpu, diff))
}
