//! The `symbolic_batch` demo: one program with a symbolic batch size `n`, run for
//! several batch sizes; every kernel compiles once and is then served from the cache.

use relax_wgpu::engine::DeviceChoice;

use super::{choose_device, engine, parse_module, pseudo_random, read_f32, tensor_f32};

/// Counters after one batch size.
pub struct Step {
    /// The batch size.
    pub batch: usize,
    /// PrimFuncs compiled by the engine so far (once per PrimFunc and device).
    pub kernels_compiled: u64,
    /// Kernel calls served by an already compiled kernel so far.
    pub kernel_cache_hits: u64,
    /// GPU pipelines the JIT created so far (`None` without a GPU).
    pub gpu_pipelines: Option<u64>,
}

/// Run the (symbolic-batch) MLP program for each of `batches`; fails when a kernel is
/// compiled again after the first batch or a result has the wrong shape or values.
pub fn run(batches: &[usize], use_gpu: bool, verbose: bool) -> Result<Vec<Step>, String> {
    let module = parse_module(super::hetero_mlp::PROGRAM)?;
    let device = choose_device(use_gpu, verbose);
    let loaded = engine(device).load(&module).map_err(|e| e.to_string())?;
    let reference = engine(DeviceChoice::Cpu).load(&module).map_err(|e| e.to_string())?;
    let (f, h, o) = (32i64, 64i64, 10i64);
    let weights = [
        tensor_f32(&[f], &pseudo_random(f as usize, 11, 1.0))?,
        tensor_f32(&[f], &vec![1.0; f as usize])?,
        tensor_f32(&[f, h], &pseudo_random((f * h) as usize, 12, 0.3))?,
        tensor_f32(&[h], &pseudo_random(h as usize, 13, 0.1))?,
        tensor_f32(&[h, o], &pseudo_random((h * o) as usize, 14, 0.3))?,
        tensor_f32(&[o], &pseudo_random(o as usize, 15, 0.1))?,
    ];
    let mut steps: Vec<Step> = Vec::new();
    for &batch in batches {
        let mut args = vec![tensor_f32(
            &[batch as i64, f],
            &pseudo_random(batch * f as usize, batch as u64, 2.0),
        )?];
        args.extend(weights.iter().cloned());
        let (shape, got) = read_f32(&loaded.run("main", &args).map_err(|e| e.to_string())?)?;
        if shape != [batch as i64, o] {
            return Err(format!("batch {batch}: result shape {shape:?}"));
        }
        let (_, want) = read_f32(&reference.run("main", &args).map_err(|e| e.to_string())?)?;
        let diff = super::max_abs_diff(&got, &want);
        if diff.is_nan() || diff > 1e-3 {
            return Err(format!(
                "batch {batch}: result differs from the host reference by {diff}"
            ));
        }
        let st = loaded.stats();
        let step = Step {
            batch,
            kernels_compiled: st.kernels_compiled,
            kernel_cache_hits: st.kernel_cache_hits,
            gpu_pipelines: loaded.jit_counters().map(|c| c.kernels_compiled),
        };
        if verbose {
            let pipes = step
                .gpu_pipelines
                .map(|p| format!(", GPU pipelines {p:>2}"))
                .unwrap_or_default();
            println!(
                "n = {:>4}: kernels compiled {:>2}, cache hits {:>3}{pipes} | {} on the host, {} on the GPU so far | max diff vs host {diff:.2e}",
                batch, step.kernels_compiled, step.kernel_cache_hits, st.host_kernels_run, st.gpu_kernels_run
            );
        }
        if let Some(first) = steps.first() {
            if step.kernels_compiled != first.kernels_compiled || step.gpu_pipelines != first.gpu_pipelines {
                return Err(format!(
                    "batch {batch} compiled new kernels: the symbolic program should compile once"
                ));
            }
        }
        steps.push(step);
    }
    if let (Some(first), Some(last)) = (steps.first(), steps.last()) {
        if steps.len() > 1 && last.kernel_cache_hits <= first.kernel_cache_hits {
            return Err("later batches did not hit the kernel cache".into());
        }
    }
    Ok(steps)
}
