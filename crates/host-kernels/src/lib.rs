//! Host kernel library: multi-threaded `f32` kernels on plain slices, the CPU
//! counterpart of a vendor library (MLAS, DNNL) that Relax calls reach through
//! `call_dps_packed`.
//!
//! - [`gemm`]: matrix products on cache-blocked AVX-512 / AVX2 register tiles (the
//!   `blocked` module: row-major weights and weights stored transposed, `[n, k]`),
//!   `matrixmultiply` for other strides and other CPUs, split over rayon's pool (one
//!   level of threading only, so the two never oversubscribe the cores).
//! - [`conv`]: NCHW/OIHW 2-D convolution as GEMM (1x1 directly, others through
//!   im2col), depthwise convolution as a direct loop, both with a fused
//!   [`Epilogue`] (per-channel scale and shift, residual add, ReLU).
//! - [`ordered`]: matrix products whose data is near or past the float range,
//!   recomputed in TVM's order after a fast kernel.
//! - [`pool`]: max and average pooling.
//! - [`elementwise`]: ReLU, broadcasting add, softmax, inner-axis mean, inference
//!   batch normalization, transposition and concatenation.
//!
//! Tensors are row-major; every kernel checks the lengths of its slices against the
//! shapes it is given and reports a [`KernelError`] instead of panicking.

pub mod attention;
mod blocked;
pub mod conv;
pub mod elementwise;
pub mod gemm;
pub mod gemv;
pub mod library;
pub mod math;
mod microkernel;
pub mod ordered;
pub mod pool;
pub mod prepacked;
pub mod simd;

use std::fmt;

pub use conv::{conv2d, Conv2dShape};
pub use gemm::{matmul, sgemm_parallel};

/// A kernel was called with inconsistent shapes or buffers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelError(pub String);

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KernelError {}

/// Result of a kernel.
pub type Result<T> = std::result::Result<T, KernelError>;

/// Fail unless `slice` holds exactly `n` elements.
pub(crate) fn check_len(what: &str, len: usize, n: usize) -> Result<()> {
    if len != n {
        return Err(KernelError(format!("{what}: expected {n} elements, got {len}")));
    }
    Ok(())
}

/// Work applied to each output element of a GEMM-shaped kernel after the product,
/// per output channel `c` (a row of the GEMM): `y = y * scale[c] + shift[c]`, then
/// `y += residual`, then `y = max(y, 0)` when `relu`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Epilogue<'a> {
    /// Per-channel multiplier (inference batch normalization).
    pub scale: Option<&'a [f32]>,
    /// Per-channel addend (bias, batch-normalization shift).
    pub shift: Option<&'a [f32]>,
    /// A tensor of the output's shape added element by element.
    pub residual: Option<&'a [f32]>,
    /// Clamp at zero.
    pub relu: bool,
}

impl Epilogue<'_> {
    /// Whether the epilogue does nothing.
    pub fn is_identity(&self) -> bool {
        self.scale.is_none() && self.shift.is_none() && self.residual.is_none() && !self.relu
    }

    /// Apply to `row`, which belongs to channel `c` and starts at element `offset`
    /// of the output (for the residual).
    #[inline]
    pub(crate) fn apply_row(&self, c: usize, offset: usize, row: &mut [f32]) {
        let s = self.scale.map_or(1.0, |s| s[c]);
        let b = self.shift.map_or(0.0, |b| b[c]);
        if self.scale.is_some() || self.shift.is_some() {
            for v in row.iter_mut() {
                *v = *v * s + b;
            }
        }
        if let Some(r) = self.residual {
            let n = row.len();
            for (v, r) in row.iter_mut().zip(&r[offset..offset + n]) {
                *v += *r;
            }
        }
        if self.relu {
            for v in row.iter_mut() {
                *v = v.max(0.0);
            }
        }
    }

    /// Check the epilogue's buffers against `channels` and the output length.
    pub(crate) fn check(&self, channels: usize, out_len: usize) -> Result<()> {
        if let Some(s) = self.scale {
            check_len("epilogue scale", s.len(), channels)?;
        }
        if let Some(b) = self.shift {
            check_len("epilogue shift", b.len(), channels)?;
        }
        if let Some(r) = self.residual {
            check_len("epilogue residual", r.len(), out_len)?;
        }
        Ok(())
    }
}

/// A raw pointer that may cross threads: each task writes a disjoint region.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr<T>(pub *mut T);
// SAFETY: only used to hand disjoint sub-ranges of one buffer to rayon tasks.
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}

/// A read-only raw pointer that may cross threads.
#[derive(Clone, Copy)]
pub(crate) struct SendConst<T>(pub *const T);
// SAFETY: the pointee is only read while the borrow it came from is alive.
unsafe impl<T> Send for SendConst<T> {}
unsafe impl<T> Sync for SendConst<T> {}

impl<T> SendConst<T> {
    /// The pointer (a closure that calls this captures the whole wrapper, which may
    /// cross threads, rather than the bare pointer field).
    pub(crate) fn get(self) -> *const T {
        self.0
    }
}

impl<T> SendPtr<T> {
    /// The pointer (see [`SendConst::get`]).
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}

/// Below this much work (elements or multiply-adds) a kernel stays on the calling
/// thread: waking rayon's pool costs more than it saves.
pub(crate) const PAR_MIN_WORK: usize = 1 << 15;

/// `f` over `(index, chunk)` of `out` in chunks of `size`: on rayon's pool when
/// `work` is large enough to pay for it and there are several chunks, else on the
/// calling thread.
pub(crate) fn for_chunks<T, F>(out: &mut [T], size: usize, work: usize, f: F)
where
    T: Send,
    F: Fn((usize, &mut [T])) + Sync + Send,
{
    use rayon::prelude::*;
    let size = size.max(1);
    if work < PAR_MIN_WORK || out.len() <= size {
        out.chunks_mut(size).enumerate().for_each(f);
    } else {
        out.par_chunks_mut(size).enumerate().for_each(f);
    }
}

/// Number of pieces to split `work` floating-point operations into: one per
/// `MIN_WORK`, at most a few per thread (work stealing evens out loaded cores).
pub(crate) fn pieces(work: usize, max: usize) -> usize {
    const MIN_WORK: usize = 1 << 17;
    let threads = rayon::current_num_threads().max(1);
    (work / MIN_WORK).clamp(1, 4 * threads).min(max.max(1))
}
