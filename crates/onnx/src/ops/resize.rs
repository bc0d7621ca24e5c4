//! ONNX `Resize` (opsets 10 to 19) and `Upsample`: interpolation is separable, so each
//! resized axis becomes a matrix product with an `(out, in)` interpolation matrix
//! computed when importing (nearest, linear and cubic modes, antialiasing, every
//! coordinate transformation, `exclude_outside`), following the operator's reference
//! definition; `tf_crop_and_resize` positions outside the input take
//! `extrapolation_value`.

use crate::error::{convert_err, ConvertError};
use relax_ir::{AttrValue, DataType, Expr};

use crate::convert::{constant, Ctx, Known, TVal};
use crate::ops::{ints_attr, norm_axis, out1, scalar, tval_leaf, val, x, Node};
use crate::tensor;

/// How the interpolation weights of one output position are computed.
struct Kernel {
    mode: String,
    nearest_mode: String,
    cubic_a: f64,
    antialias: bool,
}

impl Kernel {
    fn coeffs(&self, ratio: f64, scale: f64) -> Result<Vec<f64>, ConvertError> {
        let a = self.cubic_a;
        Ok(match self.mode.as_str() {
            "nearest" => {
                if ratio.fract() == 0.0 {
                    return Ok(vec![0.0, 1.0]);
                }
                let b = |c: bool| c as i64 as f64;
                match self.nearest_mode.as_str() {
                    "round_prefer_floor" => vec![b(ratio <= 0.5), b(ratio > 0.5)],
                    "round_prefer_ceil" => vec![b(ratio < 0.5), b(ratio >= 0.5)],
                    "floor" => vec![1.0, 0.0],
                    "ceil" => vec![0.0, 1.0],
                    o => return Err(convert_err!(Unsupported;"nearest_mode `{o}` is not supported")),
                }
            }
            "linear" if self.antialias => {
                let scale = scale.min(1.0);
                let start = (-1.0 / scale).floor() as i64 + 1;
                let footprint = 2 - 2 * start;
                let c: Vec<f64> = (start..start + footprint)
                    .map(|i| (1.0 - ((i as f64 - ratio) * scale).abs()).clamp(0.0, 1.0))
                    .collect();
                let s: f64 = c.iter().sum();
                c.into_iter().map(|v| v / s).collect()
            }
            "linear" => vec![1.0 - ratio, ratio],
            "cubic" if self.antialias => {
                let scale = scale.min(1.0);
                let coeff = |x: f64| {
                    let x = x.abs();
                    let (x2, x3) = (x * x, x * x * x);
                    if x <= 1.0 {
                        (a + 2.0) * x3 - (a + 3.0) * x2 + 1.0
                    } else if x < 2.0 {
                        a * x3 - 5.0 * a * x2 + 8.0 * a * x - 4.0 * a
                    } else {
                        0.0
                    }
                };
                let i_start = (-2.0 / scale).floor() as i64 + 1;
                let i_end = 2 - i_start;
                let c: Vec<f64> = (i_start..i_end).map(|i| coeff(scale * (i as f64 - ratio))).collect();
                let s: f64 = c.iter().sum();
                c.into_iter().map(|v| v / s).collect()
            }
            "cubic" => {
                let r = ratio;
                let q = 1.0 - ratio;
                vec![
                    ((a * (r + 1.0) - 5.0 * a) * (r + 1.0) + 8.0 * a) * (r + 1.0) - 4.0 * a,
                    ((a + 2.0) * r - (a + 3.0)) * r * r + 1.0,
                    ((a + 2.0) * q - (a + 3.0)) * q * q + 1.0,
                    ((a * (q + 1.0) - 5.0 * a) * (q + 1.0) + 8.0 * a) * (q + 1.0) - 4.0 * a,
                ]
            }
            o => return Err(convert_err!(Unsupported;"mode `{o}` is not supported")),
        })
    }
}

/// The `(out, in)` interpolation matrix of one axis and, for `tf_crop_and_resize`, the
/// output positions that take the extrapolation value.
#[allow(clippy::too_many_arguments)]
fn axis_matrix(
    k: &Kernel,
    in_w: i64,
    out_w: i64,
    scale: f64,
    roi: Option<(f64, f64)>,
    ctm: &str,
    exclude_outside: bool,
) -> Result<(Vec<f64>, Vec<bool>), ConvertError> {
    let (inw, outf) = (in_w as f64, scale * in_w as f64);
    let mut m = vec![0.0; (out_w * in_w) as usize];
    let mut extrap = vec![false; out_w as usize];
    for y in 0..out_w {
        let yf = y as f64;
        let x_ori = match ctm {
            "align_corners" => {
                if outf == 1.0 {
                    0.0
                } else {
                    yf * (inw - 1.0) / (outf - 1.0)
                }
            }
            "asymmetric" => yf / scale,
            "tf_crop_and_resize" => {
                let (r0, r1) = roi.ok_or("tf_crop_and_resize needs a roi")?;
                let v = if outf == 1.0 {
                    (r1 - r0) * (inw - 1.0) / 2.0
                } else {
                    yf * (r1 - r0) * (inw - 1.0) / (outf - 1.0)
                } + r0 * (inw - 1.0);
                extrap[y as usize] = v < 0.0 || v > inw - 1.0;
                v
            }
            "pytorch_half_pixel" => {
                if outf == 1.0 {
                    -0.5
                } else {
                    (yf + 0.5) / scale - 0.5
                }
            }
            "half_pixel" => (yf + 0.5) / scale - 0.5,
            "half_pixel_symmetric" => {
                let adjustment = out_w as f64 / outf;
                let offset = inw / 2.0 * (1.0 - adjustment);
                offset + (yf + 0.5) / scale - 0.5
            }
            o => return Err(convert_err!(Unsupported;"coordinate_transformation_mode `{o}` is not supported")),
        };
        let fl = x_ori.floor();
        let ratio = if x_ori == fl { 1.0 } else { x_ori - fl };
        let mut c = k.coeffs(ratio, scale)?;
        let n = c.len() as i64;
        let pad = (n + 1) / 2;
        let xp = x_ori + pad as f64;
        let pp = xp.floor();
        let frac = xp - pp;
        let off = if n % 2 == 0 {
            if frac == 0.0 {
                -(n / 2)
            } else {
                -(n / 2) + 1
            }
        } else {
            let base = -((n - 1) / 2);
            if frac <= 0.5 {
                base
            } else {
                base + 1
            }
        };
        let start = pp as i64 + off;
        let idx: Vec<i64> = (0..n).map(|t| start + t - pad).collect();
        if exclude_outside {
            for (ci, &i) in c.iter_mut().zip(&idx) {
                if i < 0 || i >= in_w {
                    *ci = 0.0;
                }
            }
            let s: f64 = c.iter().sum();
            let s = if s == 0.0 { 1.0 } else { s };
            c.iter_mut().for_each(|v| *v /= s);
        }
        for (ci, &i) in c.iter().zip(&idx) {
            let col = i.clamp(0, in_w - 1);
            m[(y * in_w + col) as usize] += ci;
        }
    }
    Ok((m, extrap))
}

fn known_floats(ctx: &Ctx, n: &Node, i: usize) -> Result<Option<Vec<f64>>, ConvertError> {
    if !n.has(i) {
        return Ok(None);
    }
    let v = val(ctx, n, i)?;
    match &v.known {
        Some(Known::Float(f)) => Ok(Some(f.clone())),
        Some(Known::Int(_)) => Ok(v.const_floats()),
        None => Err(crate::ops::must_be_known(n, i)),
    }
}

fn emit(ctx: &mut Ctx, op: &str, args: Vec<Expr>, attrs: &[(&str, AttrValue)]) -> Result<Expr, ConvertError> {
    let v = ctx.op(op, args, attrs)?;
    ctx.leaf(&v)
}

/// The converter of `Resize` and `Upsample`.
pub fn resize(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let in_shape = xv.const_shape().ok_or("Resize needs a static input shape")?;
    let r = in_shape.len();
    let old = n.op_type == "Upsample" || n.opset < 11;
    let (roi, scales, sizes) = if old {
        let scales = if n.op_type == "Upsample" && n.opset < 9 {
            n.attr("scales").map(|a| a.floats.iter().map(|&f| f as f64).collect())
        } else {
            known_floats(ctx, n, 1)?
        };
        (None, scales, None)
    } else {
        let crop = n.string("coordinate_transformation_mode").as_deref() == Some("tf_crop_and_resize");
        let roi = match known_floats(ctx, n, 1) {
            Ok(r) => r.filter(|v| !v.is_empty()),
            Err(e) if crop => return Err(e),
            Err(_) => None,
        };
        let scales = known_floats(ctx, n, 2)?.filter(|v| !v.is_empty());
        let sizes = if scales.is_none() {
            known_floats(ctx, n, 3)?
                .filter(|v| !v.is_empty())
                .map(|v| v.into_iter().map(|f| f as i64).collect::<Vec<_>>())
        } else {
            None
        };
        (roi, scales, sizes)
    };
    let mode = n.string("mode").unwrap_or_else(|| "nearest".into());
    let ctm = if old {
        "asymmetric".to_string()
    } else {
        n.string("coordinate_transformation_mode")
            .unwrap_or_else(|| "half_pixel".into())
    };
    let kernel = Kernel {
        nearest_mode: if old {
            "floor".into()
        } else {
            n.string("nearest_mode").unwrap_or_else(|| "round_prefer_floor".into())
        },
        cubic_a: n.float("cubic_coeff_a", -0.75),
        antialias: n.int("antialias", 0) != 0,
        mode: mode.clone(),
    };
    if kernel.antialias && mode == "nearest" {
        return Err(ConvertError::unsupported(
            "antialias is not supported with mode nearest",
        ));
    }
    let axes: Vec<usize> = match n.ints("axes") {
        Some(a) => a.iter().map(|&v| norm_axis(v, r)).collect::<Result<_, _>>()?,
        None => (0..r).collect(),
    };
    // per-axis scales, output sizes and roi over all r axes
    let mut sc = vec![1.0; r];
    let mut out = in_shape.clone();
    let mut full_roi: Option<Vec<f64>> = None;
    if let Some(roi) = &roi {
        let mut v: Vec<f64> = [vec![0.0; r], vec![1.0; r]].concat();
        if roi.len() != 2 * axes.len() {
            return Err("roi does not match the axes".into());
        }
        for (i, &d) in axes.iter().enumerate() {
            v[d] = roi[i];
            v[r + d] = roi[axes.len() + i];
        }
        full_roi = Some(v);
    }
    if let Some(s) = &scales {
        if s.len() != axes.len() {
            return Err("scales do not match the axes".into());
        }
        for (i, &d) in axes.iter().enumerate() {
            sc[d] = s[i];
            out[d] = (s[i] * in_shape[d] as f64) as i64;
        }
    } else if let Some(sz) = &sizes {
        if sz.len() != axes.len() {
            return Err("sizes do not match the axes".into());
        }
        for (i, &d) in axes.iter().enumerate() {
            out[d] = sz[i];
            sc[d] = sz[i] as f64 / in_shape[d] as f64;
        }
        let policy = n.string("keep_aspect_ratio_policy").unwrap_or_else(|| "stretch".into());
        if policy != "stretch" {
            let vals = axes.iter().map(|&d| sc[d]);
            let s = match policy.as_str() {
                "not_larger" => vals.fold(f64::INFINITY, f64::min),
                "not_smaller" => vals.fold(f64::NEG_INFINITY, f64::max),
                o => return Err(convert_err!(Unsupported;"keep_aspect_ratio_policy `{o}` is not supported")),
            };
            for &d in &axes {
                sc[d] = s;
                out[d] = (s * in_shape[d] as f64 + 0.5) as i64;
            }
        }
    } else {
        return Err("neither scales nor sizes is given".into());
    }
    let dt = xv.dtype;
    if !dt.is_float() {
        return Err(ConvertError::unsupported(
            "Resize of a non-float tensor is not supported",
        ));
    }
    let ev = n.float("extrapolation_value", 0.0);
    let exclude = n.int("exclude_outside", 0) != 0;
    let mut cur = x(ctx, n, 0)?;
    let mut shape = in_shape.clone();
    for &d in &axes {
        let rd = full_roi.as_ref().map(|v| (v[d], v[d + r]));
        let trivial_roi = rd.is_none_or(|(a, b)| a.abs() < 1e-12 && (b - 1.0).abs() < 1e-12);
        if (sc[d] - 1.0).abs() < 1e-9 && out[d] == shape[d] && trivial_roi {
            continue;
        }
        if out[d] < 0 {
            return Err("negative output size".into());
        }
        let (m, ex) = axis_matrix(&kernel, shape[d], out[d], sc[d], rd, &ctm, exclude)?;
        let (o, i) = (out[d] as usize, shape[d] as usize);
        let mt = constant(
            dt,
            vec![shape[d], out[d]],
            (0..i * o).map(|k| tensor::encode(dt, m[(k % o) * i + k / o])),
        );
        // move axis d to the last place, multiply by M^T, move it back
        let last = r - 1;
        let mut perm: Vec<i64> = (0..r as i64).collect();
        perm.swap(d, last);
        if d != last {
            cur = emit(ctx, "permute_dims", vec![cur], &[("axes", ints_attr(&perm))])?;
        }
        cur = emit(ctx, "matmul", vec![cur, mt], &[])?;
        if d != last {
            cur = emit(ctx, "permute_dims", vec![cur], &[("axes", ints_attr(&perm))])?;
        }
        shape[d] = out[d];
        if ex.iter().any(|&b| b) {
            let mut mshape = vec![1i64; r];
            mshape[d] = out[d];
            let mask = constant(DataType::BOOL, mshape, ex.iter().map(|&b| vec![b as u8]));
            cur = emit(ctx, "where", vec![mask, scalar(dt, ev), cur], &[])?;
        }
    }
    out1(tval_leaf(ctx, cur).or_else(|_| {
        // nothing resized: the input itself
        Ok::<TVal, String>(xv.clone())
    })?)
}
