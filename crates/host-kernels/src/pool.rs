//! Max and average pooling over the two innermost axes of NCHW data.

use rayon::prelude::*;

use crate::{check_len, KernelError, Result};

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
    let (ph, pw) = (s.h + s.pad[0] + s.pad[2], s.w + s.pad[1] + s.pad[3]);
    out.par_chunks_mut(s.oh * s.ow).enumerate().for_each(|(pi, dst)| {
        let plane = &x[pi * s.h * s.w..(pi + 1) * s.h * s.w];
        for oy in 0..s.oh {
            for ox in 0..s.ow {
                let mut acc = match kind {
                    PoolKind::Max => f32::NEG_INFINITY,
                    PoolKind::Avg { .. } => 0.0,
                };
                let (mut inside, mut padded) = (0usize, 0usize);
                for ky in 0..s.pool[0] {
                    let py = oy * s.stride[0] + ky * s.dilation[0];
                    if py >= ph {
                        continue;
                    }
                    let in_y = py >= s.pad[0] && py - s.pad[0] < s.h;
                    for kx in 0..s.pool[1] {
                        let px = ox * s.stride[1] + kx * s.dilation[1];
                        if px >= pw {
                            continue;
                        }
                        padded += 1;
                        if !in_y || px < s.pad[1] || px - s.pad[1] >= s.w {
                            continue;
                        }
                        inside += 1;
                        let v = plane[(py - s.pad[0]) * s.w + px - s.pad[1]];
                        match kind {
                            PoolKind::Max => acc = acc.max(v),
                            PoolKind::Avg { .. } => acc += v,
                        }
                    }
                }
                dst[oy * s.ow + ox] = match kind {
                    PoolKind::Max => acc,
                    PoolKind::Avg { count_include_pad } => {
                        let d = if count_include_pad { padded } else { inside };
                        if d == 0 {
                            0.0
                        } else {
                            acc / d as f32
                        }
                    }
                };
            }
        }
    });
    Ok(())
}
