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
    /// Maximum of the window's elements inside the input (padding is ignored).
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
    let (dy, dx) = (s.dilation[0], s.dilation[1]);
    let work = out.len() * s.pool[0] * s.pool[1];
    for_chunks(out, s.oh * s.ow, work, |(pi, dst)| {
        let plane = &x[pi * s.h * s.w..(pi + 1) * s.h * s.w];
        // Separable: reduce the window's rows elementwise (vectorizes), then each
        // output's columns of that row.
        let mut acc = vec![0f32; s.w];
        for (oy, dst_row) in dst.chunks_exact_mut(s.ow).enumerate() {
            let ry = rows[oy];
            match kind {
                PoolKind::Max => acc.fill(f32::NEG_INFINITY),
                PoolKind::Avg { .. } => acc.fill(0.0),
            }
            for iy in (ry.lo..ry.hi).step_by(dy) {
                let r = &plane[iy * s.w..(iy + 1) * s.w];
                match kind {
                    PoolKind::Max => acc.iter_mut().zip(r).for_each(|(a, &v)| *a = a.max(v)),
                    PoolKind::Avg { .. } => acc.iter_mut().zip(r).for_each(|(a, &v)| *a += v),
                }
            }
            for (o, c) in dst_row.iter_mut().zip(&cols) {
                let window = acc[c.lo..c.hi].iter().step_by(dx);
                *o = match kind {
                    PoolKind::Max => window.fold(f32::NEG_INFINITY, |m, &v| m.max(v)),
                    PoolKind::Avg { .. } => window.sum(),
                };
            }
            if let PoolKind::Avg { count_include_pad } = kind {
                for (o, c) in dst_row.iter_mut().zip(&cols) {
                    let d = if count_include_pad {
                        ry.padded * c.padded
                    } else {
                        ry.inside * c.inside
                    };
                    *o = if d == 0 { 0.0 } else { *o / d as f32 };
                }
            }
        }
    });
    Ok(())
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
