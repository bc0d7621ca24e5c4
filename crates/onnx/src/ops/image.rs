//! Image operators: depth and space rearrangements, grids, sampling, unpooling.

use super::*;

pub(crate) fn static4(ctx: &Ctx, n: &Node) -> Result<[i64; 4], ConvertError> {
    let s = val(ctx, n, 0)?.const_shape().ok_or("a static 4-D input is needed")?;
    <[i64; 4]>::try_from(s.as_slice()).map_err(|_| ConvertError::from("the input must be 4-D"))
}

/// `DepthToSpace` (DCR and CRD modes): reshape, transpose, reshape.
pub(crate) fn depth_to_space(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let [b, c, h, w] = static4(ctx, n)?;
    let bs = n.int("blocksize", 0);
    if bs <= 0 || c % (bs * bs) != 0 {
        return Err(convert_err!("blocksize {bs} does not divide the channels"));
    }
    let c2 = c / (bs * bs);
    let a = x(ctx, n, 0)?;
    let crd = n.string("mode").as_deref() == Some("CRD");
    let (dims, perm) = if crd {
        ([b, c2, bs, bs, h, w], [0, 1, 4, 2, 5, 3])
    } else {
        ([b, bs, bs, c2, h, w], [0, 3, 4, 1, 5, 2])
    };
    let r = reshape_expr(ctx, a, ints(&dims))?;
    let t = emit(ctx, "permute_dims", vec![r], &[("axes", ints_attr(&perm))])?;
    out1(ctx.op("reshape", vec![t, Expr::shape(ints(&[b, c2, h * bs, w * bs]))], &[])?)
}

/// `SpaceToDepth` (DCR and CRD modes): reshape, transpose, reshape.
pub(crate) fn space_to_depth(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let [b, c, h, w] = static4(ctx, n)?;
    let bs = n.int("blocksize", 0);
    if bs <= 0 || h % bs != 0 || w % bs != 0 {
        return Err(convert_err!("blocksize {bs} does not divide the spatial dimensions"));
    }
    let a = x(ctx, n, 0)?;
    let r = reshape_expr(ctx, a, ints(&[b, c, h / bs, bs, w / bs, bs]))?;
    let perm = if n.string("mode").as_deref() == Some("CRD") {
        [0, 1, 3, 5, 2, 4]
    } else {
        [0, 3, 5, 1, 2, 4]
    };
    let t = emit(ctx, "permute_dims", vec![r], &[("axes", ints_attr(&perm))])?;
    out1(ctx.op(
        "reshape",
        vec![t, Expr::shape(ints(&[b, c * bs * bs, h / bs, w / bs]))],
        &[],
    )?)
}

/// `AffineGrid`: `theta` applied to the homogeneous coordinates of the output grid
/// (a constant of the known size), `(N, H, W, 2)` or `(N, D, H, W, 3)`.
pub(crate) fn affine_grid(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let size = val(ctx, n, 1)?.const_ints().ok_or_else(|| super::must_be_known(n, 1))?;
    let dt = val(ctx, n, 0)?.dtype;
    let spatial = &size[2..];
    let k = spatial.len();
    if !(2..=3).contains(&k) {
        return Err(ConvertError::unsupported("AffineGrid supports 2-D and 3-D grids"));
    }
    let align = n.int("align_corners", 0) != 0;
    let coords = |dim: i64| -> Vec<f64> {
        (0..dim)
            .map(|i| {
                if align {
                    if dim == 1 {
                        -1.0
                    } else {
                        -1.0 + i as f64 * 2.0 / (dim - 1) as f64
                    }
                } else {
                    let step = 2.0 / dim as f64;
                    -1.0 + step / 2.0 + i as f64 * step
                }
            })
            .collect()
    };
    let axes: Vec<Vec<f64>> = spatial.iter().map(|&d| coords(d)).collect();
    let count: i64 = spatial.iter().product();
    // rows: x (last spatial axis), y, (z), 1; columns: the grid points in order
    let mut rows: Vec<Vec<f64>> = vec![Vec::with_capacity(count as usize); k + 1];
    for p in 0..count {
        let mut rem = p;
        let mut idx = vec![0i64; k];
        for a in (0..k).rev() {
            idx[a] = rem % spatial[a];
            rem /= spatial[a];
        }
        for (j, row) in rows.iter_mut().enumerate().take(k) {
            let a = k - 1 - j;
            row.push(axes[a][idx[a] as usize]);
        }
        rows[k].push(1.0);
    }
    let g = crate::convert::constant(
        dt,
        vec![k as i64 + 1, count],
        rows.iter().flatten().map(|&v| tensor::encode(dt, v)),
    );
    let theta = x(ctx, n, 0)?;
    let m = emit(ctx, "matmul", vec![theta, g], &[])?;
    let t = emit(ctx, "permute_dims", vec![m], &[("axes", ints_attr(&[0, 2, 1]))])?;
    let mut dims = vec![size[0]];
    dims.extend_from_slice(spatial);
    dims.push(k as i64);
    out1(ctx.op("reshape", vec![t, Expr::shape(ints(&dims))], &[])?)
}

/// `Col2Im`: the sum of the sliding blocks back into the image, as the product with
/// a constant `(K * L, H * W)` placement matrix.
pub(crate) fn col2im(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let shape = xv.const_shape().ok_or("a static input shape is needed")?;
    let img = val(ctx, n, 1)?.const_ints().ok_or_else(|| super::must_be_known(n, 1))?;
    let blk = val(ctx, n, 2)?.const_ints().ok_or_else(|| super::must_be_known(n, 2))?;
    let k = img.len();
    if blk.len() != k || shape.len() != 3 {
        return Err("image_shape and block_shape must match; the input must be 3-D".into());
    }
    let dil = n.ints("dilations").unwrap_or_else(|| vec![1; k]);
    let strides = n.ints("strides").unwrap_or_else(|| vec![1; k]);
    let pads = n.ints("pads").unwrap_or_else(|| vec![0; 2 * k]);
    let kk: i64 = blk.iter().product();
    if kk <= 0 || shape[1] % kk != 0 {
        return Err("the block size does not divide the channels".into());
    }
    let c = shape[1] / kk;
    let counts: Vec<i64> = (0..k)
        .map(|d| (img[d] + pads[d] + pads[d + k] - dil[d] * (blk[d] - 1) - 1) / strides[d] + 1)
        .collect();
    let l: i64 = counts.iter().product();
    if l != shape[2] {
        return Err(convert_err!("{} blocks given, the shapes make {l}", shape[2]));
    }
    let hw: i64 = img.iter().product();
    if kk * l * hw > 1 << 24 {
        return Err("Col2Im too large".into());
    }
    let unravel = |mut i: i64, dims: &[i64]| -> Vec<i64> {
        let mut v = vec![0; dims.len()];
        for d in (0..dims.len()).rev() {
            v[d] = i % dims[d];
            i /= dims[d];
        }
        v
    };
    let mut m = vec![0.0f64; (kk * l * hw) as usize];
    for b in 0..kk {
        let bi = unravel(b, &blk);
        for li in 0..l {
            let lv = unravel(li, &counts);
            let mut flat = 0i64;
            let mut inside = true;
            for d in 0..k {
                let p = lv[d] * strides[d] - pads[d] + bi[d] * dil[d];
                if p < 0 || p >= img[d] {
                    inside = false;
                }
                flat = flat * img[d] + p;
            }
            if inside {
                m[((b * l + li) * hw + flat) as usize] += 1.0;
            }
        }
    }
    let dt = xv.dtype;
    let mat = crate::convert::constant(dt, vec![kk * l, hw], m.iter().map(|&v| tensor::encode(dt, v)));
    let a = x(ctx, n, 0)?;
    let a = reshape_expr(ctx, a, ints(&[shape[0], c, kk * l]))?;
    let y = emit(ctx, "matmul", vec![a, mat], &[])?;
    let mut dims = vec![shape[0], c];
    dims.extend_from_slice(&img);
    out1(ctx.op("reshape", vec![y, Expr::shape(ints(&dims))], &[])?)
}

/// `MaxUnpool`: the values scattered to their flat indices in a zero tensor of the
/// output shape.
pub(crate) fn max_unpool(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let shape = xv.const_shape().ok_or("a static input shape is needed")?;
    let k = shape.len().checked_sub(2).ok_or("the input must have spatial axes")?;
    // the indices address the inferred shape; a larger `output_shape` pads it with
    // zeros at the end of each axis (ONNX's reference)
    let out: Vec<i64> = {
        let kernel = n.ints("kernel_shape").ok_or("kernel_shape is required")?;
        let strides = n.ints("strides").unwrap_or_else(|| vec![1; k]);
        let pads = n.ints("pads").unwrap_or_else(|| vec![0; 2 * k]);
        if kernel.len() != k || strides.len() != k || pads.len() != 2 * k {
            return Err("kernel_shape, strides and pads must match the spatial axes".into());
        }
        let mut o = shape[..2].to_vec();
        for d in 0..k {
            o.push((shape[d + 2] - 1) * strides[d] - pads[d] - pads[d + k] + kernel[d]);
        }
        o
    };
    let given: Option<Vec<i64>> = if n.has(2) {
        Some(val(ctx, n, 2)?.const_ints().ok_or_else(|| super::must_be_known(n, 2))?)
    } else {
        None
    };
    let total: i64 = out.iter().product();
    let numel: i64 = shape.iter().product();
    let dt = xv.dtype;
    let zeros = emit(
        ctx,
        "full",
        vec![Expr::shape(ints(&[total])), scalar(dt, 0.0)],
        &[("dtype", AttrValue::DataType(dt))],
    )?;
    let a = x(ctx, n, 0)?;
    let a = reshape_expr(ctx, a, ints(&[numel]))?;
    let i = x(ctx, n, 1)?;
    let i = reshape_expr(ctx, i, ints(&[numel]))?;
    let s = emit(
        ctx,
        "scatter_elements",
        vec![zeros, i, a],
        &[
            ("axis", AttrValue::Int(0)),
            ("reduction", AttrValue::Str("update".into())),
        ],
    )?;
    let Some(given) = given.filter(|g| *g != out) else {
        return out1(ctx.op("reshape", vec![s, Expr::shape(ints(&out))], &[])?);
    };
    if given.len() != out.len() || given.iter().zip(&out).any(|(g, o)| g < o) {
        return Err(convert_err!(
            "output_shape {given:?} is smaller than the unpooled shape {out:?}"
        ));
    }
    let r = reshape_expr(ctx, s, ints(&out))?;
    let mut width = vec![0i64; 2 * out.len()];
    for (d, (g, o)) in given.iter().zip(&out).enumerate() {
        width[2 * d + 1] = g - o;
    }
    out1(ctx.op(
        "nn.pad",
        vec![r],
        &[
            ("pad_width", ints_attr(&width)),
            ("pad_value", AttrValue::Float(0.0)),
            ("pad_mode", AttrValue::Str("constant".into())),
        ],
    )?)
}

/// `v` reflected into `[lo, hi]` (repeatedly, by the nearer border), elementwise.
pub(crate) fn reflect(ctx: &mut Ctx, v: Expr, lo: f64, hi: f64) -> Result<Expr, ConvertError> {
    let f = DataType::FLOAT32;
    let s = |x: f64| scalar(f, x);
    let rng = hi - lo;
    if rng <= 0.0 {
        return emit(ctx, "full_like", vec![v, s(lo)], &[]);
    }
    let side = |ctx: &mut Ctx, dx: Expr, near: f64, far_sign: bool| -> Result<Expr, ConvertError> {
        // n = floor(dx / rng), r = dx - n * rng; even n: near +- r, odd: far -+ r
        let q = emit(ctx, "divide", vec![dx.clone(), s(rng)], &[])?;
        let nn = emit(ctx, "floor", vec![q], &[])?;
        let nr = emit(ctx, "multiply", vec![nn.clone(), s(rng)], &[])?;
        let r = emit(ctx, "subtract", vec![dx, nr], &[])?;
        let half = emit(ctx, "multiply", vec![nn.clone(), s(0.5)], &[])?;
        let fl = emit(ctx, "floor", vec![half.clone()], &[])?;
        let even = emit(ctx, "equal", vec![half, fl], &[])?;
        let (near_op, far_op, far) = if far_sign {
            ("add", "subtract", hi)
        } else {
            ("subtract", "add", lo)
        };
        let a = emit(ctx, near_op, vec![s(near), r.clone()], &[])?;
        let b = emit(ctx, far_op, vec![s(far), r], &[])?;
        emit(ctx, "where", vec![even, a, b], &[])
    };
    let below = emit(ctx, "less", vec![v.clone(), s(lo)], &[])?;
    let above = emit(ctx, "greater", vec![v.clone(), s(hi)], &[])?;
    let dlo = emit(ctx, "subtract", vec![s(lo), v.clone()], &[])?;
    let dhi = emit(ctx, "subtract", vec![v.clone(), s(hi)], &[])?;
    let from_lo = side(ctx, dlo, lo, true)?;
    let from_hi = side(ctx, dhi, hi, false)?;
    let t = emit(ctx, "where", vec![above, from_hi, v], &[])?;
    emit(ctx, "where", vec![below, from_lo, t], &[])
}

/// `GridSample` (2-D and 3-D; nearest, linear and cubic; zeros, border and reflection
/// padding): per spatial axis the taps' indices and weights are computed from the
/// grid, and the input is gathered at each combination of taps.
pub(crate) fn grid_sample(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let xs = xv.const_shape().ok_or("a static input shape is needed")?;
    let gv = val(ctx, n, 1)?;
    let gs = gv.const_shape().ok_or("a static grid shape is needed")?;
    let mode = match n.string("mode").as_deref() {
        None | Some("linear" | "bilinear") => "linear",
        Some("nearest") => "nearest",
        Some("cubic" | "bicubic") => "cubic",
        Some(o) => return Err(convert_err!(Unsupported;"mode `{o}` is not supported")),
    };
    let pad = n.string("padding_mode").unwrap_or_else(|| "zeros".into());
    if !matches!(pad.as_str(), "zeros" | "border" | "reflection") {
        return Err(convert_err!(Unsupported;"padding_mode `{pad}` is not supported"));
    }
    let align = n.int("align_corners", 0) != 0;
    let (a, g) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    let y = grid_sample_exprs(ctx, (a, xv.dtype, &xs), (g, gv.dtype, &gs), mode, &pad, align)?;
    out1(tval_leaf(ctx, y)?)
}

/// ONNX `GridSample` of `data` (`(N, C, in...)`, static) at `grid` (`(N, out...,
/// k)`, static, normalized coordinates) as taps gathered from the flattened data,
/// computed in `float32`: `(N, C, out...)` in the data's dtype.
pub(crate) fn grid_sample_exprs(
    ctx: &mut Ctx,
    (a, a_dt, xs): (Expr, DataType, &[i64]),
    (g, g_dt, gs): (Expr, DataType, &[i64]),
    mode: &str,
    pad: &str,
    align: bool,
) -> Result<Expr, ConvertError> {
    let k = xs.len().checked_sub(2).ok_or("the input must have spatial axes")?;
    if !(1..=3).contains(&k) || gs.len() != k + 2 || gs[k + 1] != k as i64 || gs[0] != xs[0] {
        return Err("the grid must be (N, out..., k) for k spatial axes".into());
    }
    let f = DataType::FLOAT32;
    let i64t = DataType::INT64;
    let s = |v: f64| scalar(f, v);
    let (nb, c) = (xs[0], xs[1]);
    let dims = &xs[2..];
    let q: i64 = gs[1..=k].iter().product();
    let p: i64 = dims.iter().product();
    let g = astype(ctx, g, g_dt, f)?;
    let g = reshape_expr(ctx, g, ints(&[nb, q, k as i64]))?;
    // per spatial axis: the taps (index, weight, valid)
    let mut axes_taps: Vec<Vec<(Expr, Expr, Option<Expr>)>> = Vec::new();
    for (i, &d) in dims.iter().enumerate() {
        let comp = k - 1 - i;
        let gi = slice_axis(ctx, g.clone(), 2, comp as i64, comp as i64 + 1, 1)?;
        let gi = emit(ctx, "squeeze", vec![gi], &[("axis", ints_attr(&[2]))])?;
        let df = d as f64;
        let mut v = if align {
            let t = emit(ctx, "add", vec![gi, s(1.0)], &[])?;
            emit(ctx, "multiply", vec![t, s((df - 1.0) / 2.0)], &[])?
        } else {
            let t = emit(ctx, "add", vec![gi, s(1.0)], &[])?;
            let t = emit(ctx, "multiply", vec![t, s(df)], &[])?;
            let t = emit(ctx, "subtract", vec![t, s(1.0)], &[])?;
            emit(ctx, "multiply", vec![t, s(0.5)], &[])?
        };
        if mode == "nearest" {
            v = emit(ctx, "round", vec![v], &[])?;
        }
        let (lo, hi) = if align { (0.0, df - 1.0) } else { (-0.5, df - 0.5) };
        match pad {
            "border" => {
                let t = emit(ctx, "maximum", vec![v, s(0.0)], &[])?;
                v = emit(ctx, "minimum", vec![t, s(df - 1.0)], &[])?;
            }
            "reflection" => v = reflect(ctx, v, lo, hi)?,
            _ => {}
        }
        // the taps' integer positions and weights
        let (base, offsets, weights): (Expr, Vec<i64>, Vec<Expr>) = match mode {
            "nearest" => {
                // truncation toward zero, as a cast to int32 does
                let t = emit(ctx, "trunc", vec![v], &[])?;
                (t, vec![0], vec![s(1.0)])
            }
            "linear" => {
                let x0 = emit(ctx, "floor", vec![v.clone()], &[])?;
                let fr = emit(ctx, "subtract", vec![v, x0.clone()], &[])?;
                let w0 = emit(ctx, "subtract", vec![s(1.0), fr.clone()], &[])?;
                (x0, vec![0, 1], vec![w0, fr])
            }
            _ => {
                let x0 = emit(ctx, "floor", vec![v.clone()], &[])?;
                let t = emit(ctx, "subtract", vec![v, x0.clone()], &[])?;
                let a = -0.75;
                let cubic = |ctx: &mut Ctx, z: Expr, near: bool| -> Result<Expr, ConvertError> {
                    // near (|z| <= 1): ((a+2)z - (a+3)) z z + 1; far: ((a z - 5a) z + 8a) z - 4a
                    if near {
                        let m = emit(ctx, "multiply", vec![z.clone(), s(a + 2.0)], &[])?;
                        let m = emit(ctx, "subtract", vec![m, s(a + 3.0)], &[])?;
                        let m = emit(ctx, "multiply", vec![m, z.clone()], &[])?;
                        let m = emit(ctx, "multiply", vec![m, z], &[])?;
                        emit(ctx, "add", vec![m, s(1.0)], &[])
                    } else {
                        let m = emit(ctx, "multiply", vec![z.clone(), s(a)], &[])?;
                        let m = emit(ctx, "subtract", vec![m, s(5.0 * a)], &[])?;
                        let m = emit(ctx, "multiply", vec![m, z.clone()], &[])?;
                        let m = emit(ctx, "add", vec![m, s(8.0 * a)], &[])?;
                        let m = emit(ctx, "multiply", vec![m, z], &[])?;
                        emit(ctx, "subtract", vec![m, s(4.0 * a)], &[])
                    }
                };
                let t1 = emit(ctx, "add", vec![t.clone(), s(1.0)], &[])?;
                let one_t = emit(ctx, "subtract", vec![s(1.0), t.clone()], &[])?;
                let two_t = emit(ctx, "subtract", vec![s(2.0), t.clone()], &[])?;
                let w = vec![
                    cubic(ctx, t1, false)?,
                    cubic(ctx, t, true)?,
                    cubic(ctx, one_t, true)?,
                    cubic(ctx, two_t, false)?,
                ];
                (x0, vec![-1, 0, 1, 2], w)
            }
        };
        let mut taps = Vec::new();
        for (off, w) in offsets.iter().zip(weights) {
            let pos = emit(ctx, "add", vec![base.clone(), s(*off as f64)], &[])?;
            let (pos, valid) = match pad {
                "zeros" => {
                    let ge = emit(ctx, "greater_equal", vec![pos.clone(), s(0.0)], &[])?;
                    let le = emit(ctx, "less_equal", vec![pos.clone(), s(df - 1.0)], &[])?;
                    let ok = emit(ctx, "logical_and", vec![ge, le], &[])?;
                    let t = emit(ctx, "maximum", vec![pos, s(0.0)], &[])?;
                    (emit(ctx, "minimum", vec![t, s(df - 1.0)], &[])?, Some(ok))
                }
                "border" => {
                    let t = emit(ctx, "maximum", vec![pos, s(0.0)], &[])?;
                    (emit(ctx, "minimum", vec![t, s(df - 1.0)], &[])?, None)
                }
                _ => {
                    let r = reflect(ctx, pos, lo, hi)?;
                    let r = emit(ctx, "trunc", vec![r], &[])?;
                    let t = emit(ctx, "maximum", vec![r, s(0.0)], &[])?;
                    (emit(ctx, "minimum", vec![t, s(df - 1.0)], &[])?, None)
                }
            };
            let idx = astype(ctx, pos, f, i64t)?;
            taps.push((idx, w, valid));
        }
        axes_taps.push(taps);
    }
    let a = astype(ctx, a, a_dt, f)?;
    let a = reshape_expr(ctx, a, ints(&[nb, c, p]))?;
    let strides: Vec<i64> = (0..k).map(|i| dims[i + 1..].iter().product()).collect();
    let mut combos: Vec<Vec<usize>> = vec![vec![]];
    for taps in &axes_taps {
        combos = combos
            .into_iter()
            .flat_map(|cmb| (0..taps.len()).map(move |t| [cmb.clone(), vec![t]].concat()))
            .collect();
    }
    let mut acc: Option<Expr> = None;
    for cmb in combos {
        let mut flat: Option<Expr> = None;
        let mut weight: Option<Expr> = None;
        let mut valid: Option<Expr> = None;
        for (i, &t) in cmb.iter().enumerate() {
            let (idx, w, ok) = &axes_taps[i][t];
            let term = emit(ctx, "multiply", vec![idx.clone(), scalar(i64t, strides[i] as f64)], &[])?;
            flat = Some(match flat {
                None => term,
                Some(fl) => emit(ctx, "add", vec![fl, term], &[])?,
            });
            weight = Some(match weight {
                None => w.clone(),
                Some(wt) => emit(ctx, "multiply", vec![wt, w.clone()], &[])?,
            });
            if let Some(ok) = ok {
                valid = Some(match valid {
                    None => ok.clone(),
                    Some(v) => emit(ctx, "logical_and", vec![v, ok.clone()], &[])?,
                });
            }
        }
        let flat = flat.ok_or("no axes")?;
        let mut w = weight.ok_or("no axes")?;
        if let Some(v) = valid {
            w = emit(ctx, "where", vec![v, w, s(0.0)], &[])?;
        }
        let fi = emit(ctx, "expand_dims", vec![flat], &[("axis", ints_attr(&[1]))])?;
        let fi = emit(ctx, "broadcast_to", vec![fi, Expr::shape(ints(&[nb, c, q]))], &[])?;
        let got = emit(
            ctx,
            "gather_elements",
            vec![a.clone(), fi],
            &[("axis", AttrValue::Int(2))],
        )?;
        let w = emit(ctx, "broadcast_to", vec![w, Expr::shape(ints(&[nb, q]))], &[])?;
        let w = emit(ctx, "expand_dims", vec![w], &[("axis", ints_attr(&[1]))])?;
        let t = emit(ctx, "multiply", vec![got, w], &[])?;
        acc = Some(match acc {
            None => t,
            Some(sum) => emit(ctx, "add", vec![sum, t], &[])?,
        });
    }
    let y = acc.ok_or("no taps")?;
    let mut out = vec![nb, c];
    out.extend_from_slice(&gs[1..=k]);
    let y = reshape_expr(ctx, y, ints(&out))?;
    astype(ctx, y, f, a_dt)
}

/// `RoiAlign` (opset 10, 16 and 22). Average mode is `R.vision.roi_align` on
/// `[batch, x1, y1, x2, y2]` rows: `half_pixel` (opset 16's default) shifts the
/// scaled corners by half a pixel and keeps regions under one pixel (`aligned`);
/// `output_half_pixel` clamps them to one pixel. ONNX's `max` mode (its reference
/// and ONNX Runtime) takes, per sample, the largest of the four *weighted* corner
/// values `w_k * X[corner_k]` and then the largest over the bin's samples, which
/// TVM's `roi_align` max mode (the largest interpolated sample) does not compute;
/// it is composed from other Relax operators instead ([`roi_align_max`]).
pub(crate) fn roi_align(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let mode = n.string("mode").unwrap_or_else(|| "avg".into());
    if !matches!(mode.as_str(), "avg" | "max") {
        return Err(convert_err!(Unsupported; "RoiAlign mode `{mode}` (ONNX has avg and max)"));
    }
    let default_ct = if n.opset >= 16 {
        "half_pixel"
    } else {
        "output_half_pixel"
    };
    let ct = n
        .string("coordinate_transformation_mode")
        .unwrap_or_else(|| default_ct.into());
    let aligned = match ct.as_str() {
        "half_pixel" => true,
        "output_half_pixel" => false,
        o => return Err(convert_err!(Unsupported; "coordinate_transformation_mode `{o}`")),
    };
    let scale = n.float("spatial_scale", 1.0);
    if !(scale.is_finite() && scale > 0.0) {
        return Err(convert_err!("spatial_scale must be a positive number, got {scale}"));
    }
    let (ph, pw) = (n.int("output_height", 1), n.int("output_width", 1));
    if ph <= 0 || pw <= 0 {
        return Err(convert_err!(
            "output_height and output_width must be positive, got {ph} and {pw}"
        ));
    }
    let dt = val(ctx, n, 1)?.dtype;
    if val(ctx, n, 0)?.dtype != dt || !matches!(dt.code, relax_ir::TypeCode::Float) {
        return Err(convert_err!("X and rois must be of the same float type"));
    }
    if mode == "max" {
        return roi_align_max(ctx, n, dt, aligned, scale, [ph, pw]);
    }
    let mut rois = x(ctx, n, 1)?;
    if aligned {
        // ONNX subtracts half a pixel after scaling: (x - 0.5 / scale) * scale.
        rois = emit(ctx, "subtract", vec![rois, scalar(dt, 0.5 / scale)], &[])?;
    }
    let batch = x(ctx, n, 2)?;
    let batch = emit(ctx, "expand_dims", vec![batch], &[("axis", ints_attr(&[1]))])?;
    let batch = astype(ctx, batch, val(ctx, n, 2)?.dtype, dt)?;
    let rois = concat_exprs(ctx, vec![batch, rois], 1)?;
    let data = x(ctx, n, 0)?;
    out1(ctx.op(
        "vision.roi_align",
        vec![data, rois],
        &[
            ("pooled_size", ints_attr(&[ph, pw])),
            ("spatial_scale", AttrValue::Float(scale)),
            ("sample_ratio", AttrValue::Int(n.int("sampling_ratio", 0))),
            ("aligned", AttrValue::Bool(aligned)),
            ("layout", AttrValue::Str("NCHW".into())),
            ("mode", AttrValue::Str("avg".into())),
        ],
    )?)
}

/// ONNX `RoiAlign` max mode from Relax operators, as ONNX's reference and ONNX
/// Runtime compute it: each sample `(y, x)` of a bin is outside (below `-1` or past
/// the height/width: every weight 0) or clamped to `[0, size - 1]`, with corners
/// `y_low = floor(y)`, `y_high = min(y_low + 1, H - 1)` (likewise for `x`) and
/// weights `hy*hx, hy*lx, ly*hx, ly*lx`; its value is the largest weighted corner
/// value and the bin's the largest over its `sampling_ratio^2` samples. The sample
/// positions (`[R, ph, s]` and `[R, pw, s]`) are elementwise in the regions, the
/// corners are `take`s of `X` as `[N*H*W, C]` rows, and two `max` reductions end
/// it. Adaptive sampling (`sampling_ratio` 0, a region-dependent number of samples
/// per bin) is refused.
fn roi_align_max(
    ctx: &mut Ctx,
    n: &Node,
    dt: DataType,
    aligned: bool,
    scale: f64,
    [ph, pw]: [i64; 2],
) -> Result<Vec<TVal>, ConvertError> {
    let g = n.int("sampling_ratio", 0);
    if g <= 0 {
        return Err(convert_err!(Unsupported;
            "RoiAlign max mode needs a positive sampling_ratio (with {g}, the number of \
             samples per bin depends on each region at run time)"));
    }
    let xs = shape_of(ctx, n, 0)?;
    if xs.len() != 4 {
        return Err("RoiAlign's X must be 4-D".into());
    }
    let (Some(h), Some(w)) = (xs[2].as_int(), xs[3].as_int()) else {
        return Err(convert_err!(Unsupported; "RoiAlign max mode needs a static height and width"));
    };
    if h <= 0 || w <= 0 {
        return Err(convert_err!("RoiAlign's X has an empty height or width ({h} x {w})"));
    }
    if rank_of(ctx, n, 1)? != 2 || rank_of(ctx, n, 2)? != 1 {
        return Err("RoiAlign's rois must be 2-D and batch_indices 1-D".into());
    }
    let s = |v: f64| scalar(dt, v);
    let i64t = DataType::INT64;
    let rois = x(ctx, n, 1)?;
    let off = if aligned { 0.5 } else { 0.0 };
    // one corner coordinate of every region as [R, 1, 1]
    let corner = |ctx: &mut Ctx, k: i64| -> Result<Expr, ConvertError> {
        let c = slice_axis(ctx, rois.clone(), 1, k, k + 1, 1)?;
        let c = emit(ctx, "multiply", vec![c, s(scale)], &[])?;
        let c = emit(ctx, "subtract", vec![c, s(off)], &[])?;
        emit(ctx, "expand_dims", vec![c], &[("axis", ints_attr(&[2]))])
    };
    let (x1, y1, x2, y2) = (corner(ctx, 0)?, corner(ctx, 1)?, corner(ctx, 2)?, corner(ctx, 3)?);
    // the samples of one axis, [R, pooled, g]: start + p * bin + (i + 0.5) * bin / g,
    // then whether each is outside, its two corners (int64) and their weights
    let axis = |ctx: &mut Ctx, start: Expr, end: Expr, pooled: i64, size: i64| {
        let mut len = emit(ctx, "subtract", vec![end, start.clone()], &[])?;
        if !aligned {
            len = emit(ctx, "maximum", vec![len, s(1.0)], &[])?;
        }
        let bin = emit(ctx, "divide", vec![len, s(pooled as f64)], &[])?;
        let p = crate::convert::constant(dt, vec![pooled, 1], (0..pooled).map(|p| tensor::encode(dt, p as f64)));
        let i = crate::convert::constant(dt, vec![1, g], (0..g).map(|i| tensor::encode(dt, i as f64 + 0.5)));
        let a = emit(ctx, "multiply", vec![p, bin.clone()], &[])?;
        let b = emit(ctx, "multiply", vec![i, bin], &[])?;
        let b = emit(ctx, "divide", vec![b, s(g as f64)], &[])?;
        let v = emit(ctx, "add", vec![start, a], &[])?;
        let v = emit(ctx, "add", vec![v, b], &[])?;
        let lo = emit(ctx, "less", vec![v.clone(), s(-1.0)], &[])?;
        let hi = emit(ctx, "greater", vec![v.clone(), s(size as f64)], &[])?;
        let outside = emit(ctx, "logical_or", vec![lo, hi], &[])?;
        let v = emit(ctx, "maximum", vec![v, s(0.0)], &[])?;
        let v = emit(ctx, "minimum", vec![v, s((size - 1) as f64)], &[])?;
        // v >= 0: the cast truncates to floor(v) (and needs no float64 `floor`,
        // which the GPU lacks)
        let low = astype(ctx, v.clone(), dt, i64t)?;
        let high = emit(ctx, "add", vec![low.clone(), scalar(i64t, 1.0)], &[])?;
        let high = emit(ctx, "minimum", vec![high, scalar(i64t, (size - 1) as f64)], &[])?;
        let low_f = astype(ctx, low.clone(), i64t, dt)?;
        let frac = emit(ctx, "subtract", vec![v, low_f], &[])?;
        let rest = emit(ctx, "subtract", vec![s(1.0), frac.clone()], &[])?;
        Ok::<_, ConvertError>((outside, [low, high], [rest, frac]))
    };
    let (y_out, y_at, y_w) = axis(ctx, y1, y2, ph, h)?;
    let (x_out, x_at, x_w) = axis(ctx, x1, x2, pw, w)?;
    // y values as [R, ph, g, 1, 1], x values as [R, 1, 1, pw, g]
    let ys = |ctx: &mut Ctx, e: Expr| emit(ctx, "expand_dims", vec![e], &[("axis", ints_attr(&[3, 4]))]);
    let xs_ = |ctx: &mut Ctx, e: Expr| emit(ctx, "expand_dims", vec![e], &[("axis", ints_attr(&[1, 2]))]);
    let (yo, xo) = (ys(ctx, y_out)?, xs_(ctx, x_out)?);
    let outside = emit(ctx, "logical_or", vec![yo, xo], &[])?;
    let b = x(ctx, n, 2)?;
    let b = astype(ctx, b, val(ctx, n, 2)?.dtype, i64t)?;
    let b = emit(ctx, "expand_dims", vec![b], &[("axis", ints_attr(&[1, 2, 3, 4]))])?;
    let base = emit(ctx, "multiply", vec![b, scalar(i64t, (h * w) as f64)], &[])?;
    // X as [N*H*W, C] rows
    let data = x(ctx, n, 0)?;
    let data = emit(ctx, "permute_dims", vec![data], &[("axes", ints_attr(&[0, 2, 3, 1]))])?;
    let rows = ctx.bin(BinOp::Mul, &xs[0], &PrimExpr::int(h * w));
    let data = reshape_expr(ctx, data, vec![rows, xs[1].clone()])?;
    let mut best: Option<Expr> = None;
    for (yi, xi) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
        let ya = ys(ctx, y_at[yi].clone())?;
        let ya = emit(ctx, "multiply", vec![ya, scalar(i64t, w as f64)], &[])?;
        let xa = xs_(ctx, x_at[xi].clone())?;
        let at = emit(ctx, "add", vec![base.clone(), ya], &[])?;
        let at = emit(ctx, "add", vec![at, xa], &[])?;
        let v = emit(ctx, "take", vec![data.clone(), at], &[("axis", AttrValue::Int(0))])?;
        let (wy, wx) = (ys(ctx, y_w[yi].clone())?, xs_(ctx, x_w[xi].clone())?);
        let wt = emit(ctx, "multiply", vec![wy, wx], &[])?;
        let wt = emit(ctx, "where", vec![outside.clone(), s(0.0), wt], &[])?;
        let wt = emit(ctx, "expand_dims", vec![wt], &[("axis", ints_attr(&[5]))])?;
        let t = emit(ctx, "multiply", vec![wt, v], &[])?;
        best = Some(match best {
            None => t,
            Some(m) => emit(ctx, "maximum", vec![m, t], &[])?,
        });
    }
    let best = best.ok_or("no corners")?;
    // [R, ph, g, pw, g, C] -> [R, ph, pw, C] -> [R, C, ph, pw]
    let m = emit(
        ctx,
        "max",
        vec![best],
        &[("axis", ints_attr(&[2, 4])), ("keepdims", AttrValue::Bool(false))],
    )?;
    out1(ctx.op("permute_dims", vec![m], &[("axes", ints_attr(&[0, 3, 1, 2]))])?)
}

/// `DeformConv` (opset 19, 2-D, static shapes), as ONNX's reference: every kernel
/// tap `(a, b)` of output position `(i, j)` reads the input bilinearly (zero outside,
/// `GridSample` with `align_corners=1`) at `(i * stride - pad + a * dilation +
/// offset_y, j * stride - pad + b * dilation + offset_x)`, with one offset field per
/// offset group of channels, times the mask when given; the taps then meet the
/// weights as in a grouped convolution (one batched `matmul`), plus the bias.
pub(crate) fn deform_conv(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let [nb, c, h, w] = static4(ctx, n)?;
    let wsh = val(ctx, n, 1)?.const_shape().ok_or("a static weight shape is needed")?;
    let osh = val(ctx, n, 2)?.const_shape().ok_or("a static offset shape is needed")?;
    let (Ok([oc, cg, kh, kw]), Ok([on, oo, oh, ow])) = (
        <[i64; 4]>::try_from(wsh.as_slice()),
        <[i64; 4]>::try_from(osh.as_slice()),
    ) else {
        return Err(convert_err!(Unsupported; "DeformConv supports 2-D convolutions (4-D X, W and offset)"));
    };
    let dt = xv.dtype;
    if !dt.is_float() {
        return Err("DeformConv needs float data".into());
    }
    let group = n.int("group", 1);
    let og = n.int("offset_group", 1);
    let kk = kh * kw;
    if group <= 0 || og <= 0 || c != cg * group || oc % group != 0 || c % og != 0 {
        return Err(convert_err!(
            "DeformConv: {c} input channels, weight {wsh:?}, group {group} and offset_group {og} do not fit"
        ));
    }
    if on != nb || oo != og * kk * 2 || oh <= 0 || ow <= 0 {
        return Err(convert_err!("DeformConv: offset shape {osh:?} does not fit"));
    }
    if let Some(ks) = n.ints("kernel_shape") {
        if ks != [kh, kw] {
            return Err(convert_err!(
                "DeformConv: kernel_shape {ks:?} differs from the weight's"
            ));
        }
    }
    let two = |name: &str| -> Result<[i64; 2], ConvertError> {
        let v = n.ints(name).unwrap_or_else(|| vec![1, 1]);
        <[i64; 2]>::try_from(v.as_slice()).map_err(|_| convert_err!("DeformConv: {name} must hold two values"))
    };
    let [sh, sw] = two("strides")?;
    let [dh, dw] = two("dilations")?;
    let pads = n.ints("pads").unwrap_or_else(|| vec![0; 4]);
    if pads.len() != 4 {
        return Err("DeformConv: pads must hold four values".into());
    }
    let s = |v: f64| scalar(dt, v);
    // offsets as [N, og, K, 2, oh, ow]; y and x each [N, og, K, oh, ow]
    let off = x(ctx, n, 2)?;
    let off = reshape_expr(ctx, off, ints(&[nb, og, kk, 2, oh, ow]))?;
    let mut coords = Vec::new();
    for (axis, (size, base_shape)) in [(h, [1, 1, kk, oh, 1]), (w, [1, 1, kk, 1, ow])].into_iter().enumerate() {
        let (stride, dil, pad, out) = if axis == 0 {
            (sh, dh, pads[0], oh)
        } else {
            (sw, dw, pads[1], ow)
        };
        // tap k = (a, b): a = k / kw, b = k % kw
        let mut base = Vec::new();
        for k in 0..kk {
            let tap = if axis == 0 { k / kw } else { k % kw };
            for i in 0..out {
                base.push(tensor::encode(dt, (i * stride - pad + tap * dil) as f64));
            }
        }
        let base = crate::convert::constant(dt, base_shape.to_vec(), base.into_iter());
        let o = slice_axis(ctx, off.clone(), 3, axis as i64, axis as i64 + 1, 1)?;
        let o = emit(ctx, "squeeze", vec![o], &[("axis", ints_attr(&[3]))])?;
        let v = emit(ctx, "add", vec![base, o], &[])?;
        // normalized as the reference: v / (size - 1) * 2 - 1
        let v = emit(ctx, "divide", vec![v, s((size - 1) as f64)], &[])?;
        let v = emit(ctx, "multiply", vec![v, s(2.0)], &[])?;
        let v = emit(ctx, "subtract", vec![v, s(1.0)], &[])?;
        let v = emit(ctx, "expand_dims", vec![v], &[("axis", ints_attr(&[5]))])?;
        coords.push(v);
    }
    let xcoord = coords.pop().ok_or("no x")?;
    let ycoord = coords.pop().ok_or("no y")?;
    // grid [N*og, K*oh, ow, (x, y)], data [N*og, C/og, H, W]
    let grid = concat_exprs(ctx, vec![xcoord, ycoord], 5)?;
    let grid = reshape_expr(ctx, grid, ints(&[nb * og, kk * oh, ow, 2]))?;
    let cpo = c / og;
    let data = x(ctx, n, 0)?;
    let data = reshape_expr(ctx, data, ints(&[nb * og, cpo, h, w]))?;
    let sampled = grid_sample_exprs(
        ctx,
        (data, dt, &[nb * og, cpo, h, w]),
        (grid, dt, &[nb * og, kk * oh, ow, 2]),
        "linear",
        "zeros",
        true,
    )?;
    let mut cols = reshape_expr(ctx, sampled, ints(&[nb, og, cpo, kk, oh, ow]))?;
    if n.has(4) {
        let m = x(ctx, n, 4)?;
        let m = reshape_expr(ctx, m, ints(&[nb, og, 1, kk, oh, ow]))?;
        cols = emit(ctx, "multiply", vec![cols, m], &[])?;
    }
    // grouped convolution: [1, g, oc/g, C/g*K] @ [N, g, C/g*K, oh*ow]
    let cols = reshape_expr(ctx, cols, ints(&[nb, group, cg * kk, oh * ow]))?;
    let wt = x(ctx, n, 1)?;
    let wt = reshape_expr(ctx, wt, ints(&[1, group, oc / group, cg * kk]))?;
    let y = emit(ctx, "matmul", vec![wt, cols], &[])?;
    let mut y = reshape_expr(ctx, y, ints(&[nb, oc, oh, ow]))?;
    if n.has(3) {
        let b = x(ctx, n, 3)?;
        let b = reshape_expr(ctx, b, ints(&[1, oc, 1, 1]))?;
        y = emit(ctx, "add", vec![y, b], &[])?;
    }
    out1(tval_leaf(ctx, y)?)
}
