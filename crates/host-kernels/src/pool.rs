//! Max and average pooling over the two innermost axes of NCHW data.

use crate::{check_len, for_chunks, KernelError, Result};

/// Shapes and attributes of a 2-D pooling (`ceil_mode` is expressed through the
/// output size the caller gives; windows are clipped to the padded input).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool2dShape {
    /// Number of planes (batch times channels).
    pub planes: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Output height.
    pub oh: usize,
    /// Output width.
    pub ow: usize,
    /// Window (height, width).
    pub pool: [usize; 2],
    /// Strides (height, width).
    pub stride: [usize; 2],
    /// Padding (top, left, bottom, right).
    pub pad: [usize; 4],
    /// Dilation (height, width).
    pub dilation: [usize; 2],
}

/// The pooling reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    /// Maximum of the window's elements, starting from (and padding with) the
    /// lowest `float32`, -3.4028235e38, as TVM's legalization does: a window of
    /// padding or of `-inf`s gives -3.4028235e38.
    Max,
    /// Mean of the window; `count_include_pad` divides by the window's size within
    /// the padded input, otherwise by the number of input elements it covers.
    Avg {
        /// Count padding elements in the divisor.
        count_include_pad: bool,
    },
}

/// 2-D pooling of `x: [planes, h, w]` into `out: [planes, oh, ow]`.
pub fn pool2d(s: &Pool2dShape, kind: PoolKind, x: &[f32], out: &mut [f32]) -> Result<()> {
    check_len("pool2d input", x.len(), s.planes * s.h * s.w)?;
    check_len("pool2d output", out.len(), s.planes * s.oh * s.ow)?;
    if s.stride.contains(&0) || s.dilation.contains(&0) || s.pool.contains(&0) {
        return Err(KernelError("pool2d: zero window, stride or dilation".into()));
    }
    if out.is_empty() {
        return Ok(());
    }
    let rows = Window::along(s.oh, s.h, s.pool[0], s.stride[0], s.pad[0], s.pad[2], s.dilation[0]);
    let cols = Window::along(s.ow, s.w, s.pool[1], s.stride[1], s.pad[1], s.pad[3], s.dilation[1]);
    let dx = s.dilation[1];
    let work = out.len() * s.pool[0] * s.pool[1];
    let plan = Plan {
        s,
        kind,
        columns: Columns::new(&cols, s.pool[1], s.stride[1], s.pad[1], dx),
        rows,
        cols,
    };
    #[cfg(target_arch = "x86_64")]
    let avx2 = std::arch::is_x86_feature_detected!("avx2");
    for_chunks(out, s.oh * s.ow, work, |(pi, dst)| {
        let plane = &x[pi * s.h * s.w..(pi + 1) * s.h * s.w];
        #[cfg(target_arch = "x86_64")]
        if avx2 {
            // SAFETY: the CPU has the features the function is compiled for.
            unsafe { plan.plane_avx2(plane, dst) };
            return;
        }
        plan.plane(plane, dst);
    });
    Ok(())
}

/// One pooling, ready to run plane by plane.
struct Plan<'a> {
    s: &'a Pool2dShape,
    kind: PoolKind,
    rows: Vec<Window>,
    cols: Vec<Window>,
    columns: Columns,
}

impl Plan<'_> {
    /// [`Plan::plane`] compiled for AVX2 (the crate is built for the baseline target).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn plane_avx2(&self, plane: &[f32], dst: &mut [f32]) {
        self.plane(plane, dst)
    }

    /// Pool one `[h, w]` plane into `dst: [oh, ow]`. Separable: the window's input
    /// rows are reduced elementwise (vectorizes), then each output's columns of that
    /// row.
    #[inline(always)]
    fn plane(&self, plane: &[f32], dst: &mut [f32]) {
        let (s, kind) = (self.s, self.kind);
        let mut acc = vec![0f32; s.w];
        let mut phases: Vec<Vec<f32>> = Vec::new();
        for (oy, dst_row) in dst.chunks_exact_mut(s.ow).enumerate() {
            let ry = self.rows[oy];
            match kind {
                PoolKind::Max => acc.fill(f32::MIN),
                PoolKind::Avg { .. } => acc.fill(0.0),
            }
            for iy in (ry.lo..ry.hi).step_by(s.dilation[0]) {
                let r = &plane[iy * s.w..(iy + 1) * s.w];
                combine(kind, &mut acc, r);
            }
            self.columns.reduce(&acc, dst_row, &self.cols, kind, &mut phases);
            if let PoolKind::Avg { count_include_pad } = kind {
                for (o, c) in dst_row.iter_mut().zip(&self.cols) {
                    let d = if count_include_pad {
                        ry.padded * c.padded
                    } else {
                        ry.inside * c.inside
                    };
                    *o = if d == 0 { 0.0 } else { *o / d as f32 };
                }
            }
        }
    }
}

/// `acc[i] = acc[i] (max | +) x[i]`; max skips a NaN `x[i]`.
#[inline(always)]
fn combine(kind: PoolKind, acc: &mut [f32], x: &[f32]) {
    match kind {
        PoolKind::Max => acc.iter_mut().zip(x).for_each(|(a, &v)| *a = nan_skipping_max(*a, v)),
        PoolKind::Avg { .. } => acc.iter_mut().zip(x).for_each(|(a, &v)| *a += v),
    }
}

/// The column step of a pooling: each output of a row reduces its window of the
/// row-reduced input. Outputs whose window lies wholly inside the input (without
/// dilation) are computed `size` passes at a time over the phase-split row
/// (`phase[r][j] = row[j * stride + r]`), contiguous slices that vectorize; the
/// others one window at a time.
struct Columns {
    size: usize,
    stride: usize,
    dilation: usize,
    /// The interior outputs `o0..o1`, and the input index of `o0`'s window.
    interior: std::ops::Range<usize>,
    base0: usize,
}

impl Columns {
    fn new(cols: &[Window], size: usize, stride: usize, pad: usize, dilation: usize) -> Columns {
        let full = |o: usize| dilation == 1 && cols[o].inside == size;
        let o0 = (0..cols.len()).find(|&o| full(o)).unwrap_or(cols.len());
        let o1 = (o0..cols.len()).find(|&o| !full(o)).unwrap_or(cols.len());
        Columns {
            size,
            stride,
            dilation,
            interior: o0..o1,
            base0: (o0 * stride).saturating_sub(pad),
        }
    }

    #[inline(always)]
    fn reduce(&self, acc: &[f32], dst: &mut [f32], cols: &[Window], kind: PoolKind, phases: &mut Vec<Vec<f32>>) {
        let fold = |c: &Window| {
            let window = acc[c.lo..c.hi].iter().step_by(self.dilation);
            match kind {
                PoolKind::Max => window.fold(f32::MIN, |m, &v| nan_skipping_max(m, v)),
                PoolKind::Avg { .. } => window.sum(),
            }
        };
        let (o0, o1) = (self.interior.start, self.interior.end);
        for o in (0..o0).chain(o1..dst.len()) {
            dst[o] = fold(&cols[o]);
        }
        if o0 == o1 {
            return;
        }
        let s = self.stride;
        phases.resize_with(s, Vec::new);
        for (r, ph) in phases.iter_mut().enumerate() {
            ph.clear();
            ph.extend(acc.iter().skip(r).step_by(s));
        }
        let out = &mut dst[o0..o1];
        match kind {
            PoolKind::Max => out.fill(f32::MIN),
            PoolKind::Avg { .. } => out.fill(0.0),
        }
        for k in 0..self.size {
            let (p, q) = ((self.base0 + k) % s, (self.base0 + k) / s);
            combine(kind, out, &phases[p][q..q + out.len()]);
        }
    }
}

/// `max(m, v)` skipping a NaN `v` (`m` is never NaN here: it starts at the
/// lowest `float32`, as TVM's `max_pool2d` initializes and pads), like
/// `f32::max`, written as a select so that it vectorizes to `maxps` (`f32::max` also
/// handles a NaN `m`, which keeps LLVM on scalar code).
#[inline(always)]
fn nan_skipping_max(m: f32, v: f32) -> f32 {
    if v > m {
        v
    } else {
        m
    }
}

/// The input positions one output position's window covers along an axis.
#[derive(Clone, Copy, Debug)]
struct Window {
    /// First input index inside the input.
    lo: usize,
    /// One past the last input index inside the input (`lo` when none).
    hi: usize,
    /// Window positions inside the input.
    inside: usize,
    /// Window positions inside the padded input.
    padded: usize,
}

impl Window {
    /// The windows of `out` output positions over an input of `len` elements.
    fn along(
        out: usize,
        len: usize,
        size: usize,
        stride: usize,
        pad_lo: usize,
        pad_hi: usize,
        dil: usize,
    ) -> Vec<Window> {
        let padded_len = len + pad_lo + pad_hi;
        (0..out)
            .map(|o| {
                let mut w = Window {
                    lo: 0,
                    hi: 0,
                    inside: 0,
                    padded: 0,
                };
                let mut first = None;
                let mut last = 0;
                for k in 0..size {
                    let p = o * stride + k * dil;
                    if p >= padded_len {
                        continue;
                    }
                    w.padded += 1;
                    if p < pad_lo || p - pad_lo >= len {
                        continue;
                    }
                    w.inside += 1;
                    first.get_or_insert(p - pad_lo);
                    last = p - pad_lo;
                }
                if let Some(f) = first {
                    w.lo = f;
                    w.hi = last + 1;
                }
                w
            })
            .collect()
    }
}
