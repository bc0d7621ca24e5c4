//! The hand-written reference kernel that benchmarks compare against: an 8x8
//! register-tiled f32 matmul (`shaders/matmul_8x8.wgsl`), timed on device-resident
//! operands on the runtime's own adapter.

use std::time::Instant;

use crate::{Access, GpuError, GpuResult, GpuRuntime, KernelLayout};

/// WGSL source of the hand 8x8 register-tiled matmul (row-major `n x n`, `n` a
/// multiple of 64; dispatch `(n / 64, n / 64, 1)`).
pub const HAND_MATMUL_8X8_WGSL: &str = include_str!("../../../shaders/matmul_8x8.wgsl");

/// Achieved GFLOP/s (`2 n^3` per product) of the hand 8x8 matmul on `rt`: one
/// warm-up dispatch, then the median of `reps` timed dispatches, each including
/// completion. `n` must be a positive multiple of 64.
pub fn hand_matmul_gflops(rt: &GpuRuntime, n: u32, reps: usize) -> GpuResult<f64> {
    if n == 0 || !n.is_multiple_of(64) {
        return Err(GpuError::InvalidArgument(format!(
            "hand matmul size {n} is not a positive multiple of 64"
        )));
    }
    let elems = (n as usize) * (n as usize);
    let a: Vec<f32> = (0..elems).map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0).collect();
    let b: Vec<f32> = (0..elems).map(|i| ((i * 5 % 11) as f32 - 5.0) / 8.0).collect();
    let a = rt.upload_pod(&a)?;
    let b = rt.upload_pod(&b)?;
    let c = rt.alloc((elems * 4) as u64)?;
    let layout = KernelLayout::new([Access::Read, Access::Read, Access::ReadWrite], 4);
    let kernel = rt.create_kernel(HAND_MATMUL_8X8_WGSL, "main", &layout)?;
    let groups = n / 64;
    let mut times = Vec::new();
    for i in 0..=reps.max(1) {
        let t = Instant::now();
        rt.dispatch(&kernel, &[&a, &b, &c], &n.to_le_bytes(), [groups, groups, 1])?;
        rt.synchronize()?;
        if i > 0 {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    times.sort_by(f64::total_cmp);
    let t = times[times.len() / 2];
    Ok(2.0 * f64::from(n).powi(3) / t / 1e9)
}

/// Copies recorded per timed submission by [`copy_bandwidth`], so that the wait for
/// completion is a small part of the time.
const COPIES_PER_WAIT: u64 = 8;

/// Device memory bandwidth in bytes per second: copies of `bytes` bytes (rounded
/// down to a multiple of 4, at most the adapter's binding limit) between two device
/// buffers, counting each byte read and written; eight copies per submission, the
/// best of `reps` timed submissions after one warm-up, each timed to completion. The
/// floor a memory-bound GPU kernel (a decode step reading every weight once) is
/// measured against.
pub fn copy_bandwidth(rt: &GpuRuntime, bytes: u64, reps: usize) -> GpuResult<f64> {
    let bytes = bytes.min(rt.max_binding_bytes()) / 4 * 4;
    if bytes == 0 {
        return Err(GpuError::InvalidArgument("copy bandwidth of zero bytes".into()));
    }
    let src = rt.alloc(bytes)?;
    let dst = rt.alloc(bytes)?;
    let mut best = f64::INFINITY;
    for i in 0..=reps.max(1) {
        let t = Instant::now();
        let mut batch = rt.batch();
        for _ in 0..COPIES_PER_WAIT {
            batch.copy(&src, 0, &dst, 0, bytes)?;
        }
        batch.submit_and_wait()?;
        if i > 0 {
            best = best.min(t.elapsed().as_secs_f64());
        }
    }
    Ok(2.0 * (COPIES_PER_WAIT * bytes) as f64 / best)
}
