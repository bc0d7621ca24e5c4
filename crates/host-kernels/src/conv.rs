//! 2-D convolution, NCHW data and OIHW weights, with a fused [`Epilogue`].
//!
//! - 1x1, stride 1, no padding: one GEMM per image and group on the input as is.
//! - depthwise (one input channel per group): a direct loop per output channel
//!   whose inner loop runs along an output row (vectorizable at stride 1).
//! - otherwise: im2col per image and group, then a GEMM.

use rayon::prelude::*;

use crate::gemm::{Gemm, MatRef};
use crate::simd::axpy;
use crate::{check_len, for_chunks, Epilogue, KernelError, Result};

/// Shapes and attributes of a 2-D convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dShape {
    /// Batch size.
    pub n: usize,
    /// Input channels.
    pub c_in: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Output channels.
    pub c_out: usize,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// Strides (height, width).
    pub stride: [usize; 2],
    /// Padding (top, left, bottom, right).
    pub pad: [usize; 4],
    /// Dilation (height, width).
    pub dilation: [usize; 2],
    /// Groups.
    pub groups: usize,
}

impl Conv2dShape {
    /// Output height and width (0 where the window is larger than the padded input).
    pub fn out_hw(&self) -> Result<(usize, usize)> {
        let dim = |size: usize, p0: usize, p1: usize, k: usize, s: usize, d: usize| -> Result<usize> {
            let span = (k.max(1) - 1)
                .checked_mul(d)
                .and_then(|x| x.checked_add(1))
                .ok_or_else(|| KernelError("conv2d: window size overflows".into()))?;
            let padded = size
                .checked_add(p0)
                .and_then(|x| x.checked_add(p1))
                .ok_or_else(|| KernelError("conv2d: padded size overflows".into()))?;
            if s == 0 {
                return Err(KernelError("conv2d: zero stride".into()));
            }
            // A window larger than the padded input leaves no output position (an
            // empty output, as TVM's shape `(padded - span) // s + 1` clamped at 0).
            Ok(if padded < span { 0 } else { (padded - span) / s + 1 })
        };
        Ok((
            dim(
                self.h,
                self.pad[0],
                self.pad[2],
                self.kh,
                self.stride[0],
                self.dilation[0],
            )?,
            dim(
                self.w,
                self.pad[1],
                self.pad[3],
                self.kw,
                self.stride[1],
                self.dilation[1],
            )?,
        ))
    }

    fn validate(&self) -> Result<()> {
        if self.groups == 0 || !self.c_in.is_multiple_of(self.groups) || !self.c_out.is_multiple_of(self.groups) {
            return Err(KernelError(format!(
                "conv2d: {} input and {} output channels cannot be split into {} groups",
                self.c_in, self.c_out, self.groups
            )));
        }
        if self.kh == 0 || self.kw == 0 || self.dilation.contains(&0) {
            return Err(KernelError("conv2d: empty kernel or zero dilation".into()));
        }
        Ok(())
    }
}

/// `out = epilogue(conv2d(x, w))` with `x: [n, c_in, h, w]`, `w: [c_out, c_in/groups,
/// kh, kw]`, `out: [n, c_out, oh, ow]`; the epilogue's channels are output channels.
pub fn conv2d(s: &Conv2dShape, x: &[f32], w: &[f32], epilogue: &Epilogue<'_>, out: &mut [f32]) -> Result<()> {
    s.validate()?;
    let (oh, ow) = s.out_hw()?;
    let icg = s.c_in / s.groups;
    let ocg = s.c_out / s.groups;
    let (hw, p) = (s.h * s.w, oh * ow);
    check_len("conv2d input", x.len(), s.n * s.c_in * hw)?;
    check_len("conv2d weight", w.len(), s.c_out * icg * s.kh * s.kw)?;
    check_len("conv2d output", out.len(), s.n * s.c_out * p)?;
    epilogue.check(s.c_out, out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    let k = icg * s.kh * s.kw;
    if !sums_stay_finite(x, w, k) {
        return direct(s, oh, ow, x, w, epilogue, out);
    }
    if icg == 1 && ocg == 1 {
        return depthwise(s, oh, ow, x, w, epilogue, out);
    }
    let pointwise = s.kh == 1 && s.kw == 1 && s.stride == [1, 1] && s.pad == [0; 4];
    // One GEMM per image and group: over the pool's threads when there are several
    // (each single-threaded), else one parallel GEMM at a time.
    let tasks = s.n * s.groups;
    let run = |t: usize, og: &mut [f32], col: &mut Vec<f32>, parallel: bool| -> Result<()> {
        let (img, g) = (t / s.groups, t % s.groups);
        let xg = &x[(img * s.c_in + g * icg) * hw..(img * s.c_in + (g + 1) * icg) * hw];
        let wg = &w[g * ocg * k..(g + 1) * ocg * k];
        let o0 = t * ocg * p;
        let ep = Epilogue {
            residual: epilogue.residual.map(|r| &r[o0..o0 + ocg * p]),
            ..*epilogue
        };
        let b = if pointwise {
            MatRef::row_major(xg, p)
        } else {
            col.resize(k * p, 0.0);
            im2col(s, oh, ow, xg, col, parallel);
            MatRef::row_major(col, p)
        };
        let gemm = Gemm {
            m: ocg,
            k,
            n: p,
            a: MatRef::row_major(wg, k),
            b,
            epilogue: &ep,
            channel0: g * ocg,
        };
        gemm.run(og, parallel)
    };
    let work = s.n * s.c_out * p * k;
    if tasks > 1 && tasks >= rayon::current_num_threads() && work >= crate::PAR_MIN_WORK {
        out.par_chunks_mut(ocg * p)
            .enumerate()
            .try_for_each_init(Vec::new, |col, (t, og)| run(t, og, col, false))
    } else {
        let mut col = Vec::new();
        for (t, og) in out.chunks_mut(ocg * p).enumerate() {
            run(t, og, &mut col, true)?;
        }
        Ok(())
    }
}

/// Whether every product of an input and a weight, and every sum of `k` of them,
/// stays far from `f32::MAX` (and no value is infinite or NaN). Otherwise the fast
/// paths' fused multiply-adds and blocked order could give `inf` where TVM's
/// sequential multiply-then-add overflows to `inf - inf = NaN`, or a finite value
/// where it overflows.
fn sums_stay_finite(x: &[f32], w: &[f32], k: usize) -> bool {
    let (Some(mx), Some(mw)) = (max_abs_finite(x), max_abs_finite(w)) else {
        return false;
    };
    f64::from(mx) * f64::from(mw) * k.max(1) as f64 <= f64::from(f32::MAX) / 4.0
}

/// The largest `|v[i]|`, or `None` when a value is infinite or NaN. A pass over every
/// weight and input of each convolution: in eight independent lanes (vectorised) and
/// over the pool's threads for large slices, since a serial pass was an eighth of
/// ResNet-50's host time on two threads and, not shrinking with more, most of it on 16.
pub(crate) fn max_abs_finite(v: &[f32]) -> Option<f32> {
    const LANES: usize = 8;
    const PIECE: usize = 1 << 15;
    let piece = |v: &[f32]| -> (f32, bool) {
        let mut m = [0.0f32; LANES];
        let mut bad = [false; LANES];
        let mut chunks = v.chunks_exact(LANES);
        for c in &mut chunks {
            for l in 0..LANES {
                let a = c[l].abs();
                // `a > m` is false for NaN: caught by `bad`, as infinities are.
                m[l] = if a > m[l] { a } else { m[l] };
                bad[l] |= !a.is_finite();
            }
        }
        let (mut mt, mut bt) = (0.0f32, false);
        for &a in chunks.remainder() {
            let a = a.abs();
            mt = if a > mt { a } else { mt };
            bt |= !a.is_finite();
        }
        let top = m.iter().fold(mt, |t, &a| if a > t { a } else { t });
        (top, bt || bad.iter().any(|&b| b))
    };
    let (top, bad) = if v.len() >= 4 * PIECE && rayon::current_num_threads() > 1 {
        v.par_chunks(PIECE)
            .map(piece)
            .reduce(|| (0.0, false), |a, b| (a.0.max(b.0), a.1 || b.1))
    } else {
        piece(v)
    };
    (!bad).then_some(top)
}

/// The convolution as TVM's legalized loop computes it, for data near or past the
/// float range: each output sums `x * w` over input channels, then kernel rows,
/// then kernel columns, multiplying and adding separately (a padded input reads 0).
fn direct(
    s: &Conv2dShape,
    oh: usize,
    ow: usize,
    x: &[f32],
    w: &[f32],
    epilogue: &Epilogue<'_>,
    out: &mut [f32],
) -> Result<()> {
    let icg = s.c_in / s.groups;
    let ocg = s.c_out / s.groups;
    let p = oh * ow;
    for (row, o) in out.chunks_mut(p).enumerate() {
        let (img, oc) = (row / s.c_out, row % s.c_out);
        let g = oc / ocg;
        for (q, v) in o.iter_mut().enumerate() {
            let (oy, ox) = (q / ow, q % ow);
            let mut acc = 0.0f32;
            for ic in 0..icg {
                let c = g * icg + ic;
                let plane = &x[(img * s.c_in + c) * s.h * s.w..(img * s.c_in + c + 1) * s.h * s.w];
                for ky in 0..s.kh {
                    let iy = (oy * s.stride[0] + ky * s.dilation[0]) as isize - s.pad[0] as isize;
                    for kx in 0..s.kw {
                        let ix = (ox * s.stride[1] + kx * s.dilation[1]) as isize - s.pad[1] as isize;
                        let xv = if (0..s.h as isize).contains(&iy) && (0..s.w as isize).contains(&ix) {
                            plane[iy as usize * s.w + ix as usize]
                        } else {
                            0.0
                        };
                        let wv = w[((oc * icg + ic) * s.kh + ky) * s.kw + kx];
                        acc += xv * wv;
                    }
                }
            }
            *v = acc;
        }
        epilogue.apply_row(oc, row * p, o);
    }
    Ok(())
}

/// Unfold one image's channel group `x: [icg, h, w]` into `col: [icg*kh*kw, oh*ow]`.
fn im2col(s: &Conv2dShape, oh: usize, ow: usize, x: &[f32], col: &mut [f32], parallel: bool) {
    let p = oh * ow;
    let (kh, kw) = (s.kh, s.kw);
    let unfold_row = |(row, dst): (usize, &mut [f32])| {
        let c = row / (kh * kw);
        let (ky, kx) = ((row / kw) % kh, row % kw);
        let plane = &x[c * s.h * s.w..(c + 1) * s.h * s.w];
        let (ox0, ox1) = valid_range(s.w, ow, kx * s.dilation[1], s.pad[1], s.stride[1]);
        for oy in 0..oh {
            let d = &mut dst[oy * ow..(oy + 1) * ow];
            let iy = (oy * s.stride[0] + ky * s.dilation[0]) as isize - s.pad[0] as isize;
            if iy < 0 || iy >= s.h as isize {
                d.fill(0.0);
                continue;
            }
            let src = &plane[iy as usize * s.w..(iy as usize + 1) * s.w];
            d[..ox0].fill(0.0);
            d[ox1.max(ox0)..].fill(0.0);
            let off = kx * s.dilation[1];
            if ox1 <= ox0 {
                continue;
            }
            if s.stride[1] == 1 {
                let i0 = ox0 + off - s.pad[1];
                d[ox0..ox1].copy_from_slice(&src[i0..i0 + (ox1 - ox0)]);
            } else {
                for (ox, v) in d.iter_mut().enumerate().take(ox1).skip(ox0) {
                    *v = src[ox * s.stride[1] + off - s.pad[1]];
                }
            }
        }
    };
    if parallel && col.len() >= crate::PAR_MIN_WORK {
        col.par_chunks_mut(p).enumerate().for_each(unfold_row);
    } else {
        col.chunks_mut(p).enumerate().for_each(unfold_row);
    }
}

/// The outputs `o` in `0..out` whose input index `o * stride + offset - pad` lies
/// in `0..size`, as a half-open range.
fn valid_range(size: usize, out: usize, offset: usize, pad: usize, stride: usize) -> (usize, usize) {
    // First o with o*stride + offset >= pad.
    let lo = if offset >= pad {
        0
    } else {
        (pad - offset).div_ceil(stride)
    };
    // Last o with o*stride + offset - pad <= size - 1.
    let limit = size + pad; // o*stride + offset < size + pad
    let hi = if offset >= limit {
        0
    } else {
        (limit - offset - 1) / stride + 1
    };
    (lo.min(out), hi.min(out))
}

/// Depthwise convolution: output channel `oc` reads only input channel `oc`. Each
/// plane is copied into a zero-padded scratch plane, so that every output row is a
/// branch-free sum of `kh * kw` scaled input rows.
fn depthwise(
    s: &Conv2dShape,
    oh: usize,
    ow: usize,
    x: &[f32],
    w: &[f32],
    epilogue: &Epilogue<'_>,
    out: &mut [f32],
) -> Result<()> {
    let p = oh * ow;
    let (kh, kw) = (s.kh, s.kw);
    let [sh, sw] = s.stride;
    let [dh, dw] = s.dilation;
    let (ph, pw) = (s.h + s.pad[0] + s.pad[2], s.w + s.pad[1] + s.pad[3]);
    // The last output's window must lie inside the padded plane.
    if (oh > 0 && (oh - 1) * sh + (kh - 1) * dh >= ph) || (ow > 0 && (ow - 1) * sw + (kw - 1) * dw >= pw) {
        return Err(KernelError(format!(
            "depthwise conv2d: output {oh}x{ow} does not fit the padded input {ph}x{pw}"
        )));
    }
    let work = out.len() * kh * kw;
    let plane_in = s.h * s.w;
    for_chunks(out, p, work, |(plane_idx, dst)| {
        let oc = plane_idx % s.c_out;
        let plane = &x[plane_idx * plane_in..(plane_idx + 1) * plane_in];
        let wk = &w[oc * kh * kw..(oc + 1) * kh * kw];
        SCRATCH.with_borrow_mut(|(padded, full)| depthwise_plane(s, (oh, ow), plane, wk, padded, full, dst));
        epilogue.apply_row(oc, plane_idx * p, dst);
    });
    Ok(())
}

thread_local! {
    /// Per-thread scratch planes of [`depthwise`] (padded input, padded-width output).
    static SCRATCH: std::cell::RefCell<(Vec<f32>, Vec<f32>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// One plane of [`depthwise`] into `dst` (before the epilogue). The zero-padded
/// plane is split by column phase (`stride_w` interleaved planes), so that every
/// tap adds a contiguous run of input to a contiguous run of output.
fn depthwise_plane(
    s: &Conv2dShape,
    (oh, ow): (usize, usize),
    plane: &[f32],
    wk: &[f32],
    padded: &mut Vec<f32>,
    full: &mut Vec<f32>,
    dst: &mut [f32],
) {
    let (kh, kw) = (s.kh, s.kw);
    let [sh, sw] = s.stride;
    let [dh, dw] = s.dilation;
    let (ph, pw) = (s.h + s.pad[0] + s.pad[2], s.w + s.pad[1] + s.pad[3]);
    if sw == 1 && sh == 1 {
        padded.clear();
        padded.resize(ph * pw, 0.0);
        for (iy, row) in plane.chunks_exact(s.w).enumerate() {
            let at = (iy + s.pad[0]) * pw + s.pad[1];
            padded[at..at + s.w].copy_from_slice(row);
        }
        // Stride 1: accumulate whole padded-width rows at once (`oh * pw` contiguous
        // elements per tap; the columns past `ow` are discarded).
        let len = oh * pw;
        full.clear();
        full.resize(len, 0.0);
        for ky in 0..kh {
            for kx in 0..kw {
                let off = ky * dh * pw + kx * dw;
                let n = len.min(padded.len() - off);
                axpy(&mut full[..n], &padded[off..off + n], wk[ky * kw + kx]);
            }
        }
        for (drow, frow) in dst.chunks_exact_mut(ow).zip(full.chunks(pw)) {
            drow.copy_from_slice(&frow[..ow]);
        }
        return;
    }
    // Phase `r` holds the padded columns `r, r + sw, r + 2 sw, ...` of every row.
    let qw = pw.div_ceil(sw);
    padded.clear();
    padded.resize(sw * ph * qw, 0.0);
    for (iy, row) in plane.chunks_exact(s.w).enumerate() {
        let y = iy + s.pad[0];
        for r in 0..sw {
            let dst_row = &mut padded[(r * ph + y) * qw..(r * ph + y + 1) * qw];
            // Padded column c = j * sw + r is input column c - pad_left: the first
            // input column of this phase and the number of them.
            let j0 = s.pad[1].saturating_sub(r).div_ceil(sw);
            let first = j0 * sw + r - s.pad[1];
            if first < s.w {
                let n = (s.w - first).div_ceil(sw);
                for (d, &v) in dst_row[j0..j0 + n].iter_mut().zip(row[first..].iter().step_by(sw)) {
                    *d = v;
                }
            }
        }
    }
    for (oy, drow) in dst.chunks_exact_mut(ow).enumerate() {
        drow.fill(0.0);
        for ky in 0..kh {
            let y = oy * sh + ky * dh;
            for kx in 0..kw {
                let off = kx * dw;
                let at = ((off % sw) * ph + y) * qw + off / sw;
                axpy(drow, &padded[at..at + ow], wk[ky * kw + kx]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::max_abs_finite;

    #[test]
    fn max_abs_finite_sees_every_lane_and_piece() {
        assert_eq!(max_abs_finite(&[]), Some(0.0));
        // Large enough for the parallel pieces, with a remainder after the lanes.
        let n = (1 << 17) + 5;
        let mut v: Vec<f32> = (0..n).map(|i| ((i % 97) as f32 - 48.0) / 8.0).collect();
        assert_eq!(max_abs_finite(&v), Some(6.0));
        for at in [0, 3, 8 * 1000 + 7, n - 1, n - 6] {
            let keep = v[at];
            v[at] = -7.5;
            assert_eq!(max_abs_finite(&v), Some(7.5), "max at {at}");
            for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                v[at] = bad;
                assert_eq!(max_abs_finite(&v), None, "{bad} at {at}");
                assert_eq!(
                    max_abs_finite(&v[at.saturating_sub(9)..=at]),
                    None,
                    "{bad} at {at}, short"
                );
            }
            v[at] = keep;
        }
    }
}
