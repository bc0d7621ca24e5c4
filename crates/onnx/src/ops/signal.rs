//! Signal processing: windows, DFT, STFT and mel weight matrices.

use super::*;

/// `HannWindow`, `HammingWindow`, `BlackmanWindow`: a constant of the known size.
pub(crate) fn window(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let size = known_scalar(ctx, n, 0)?;
    if !(0..=1 << 24).contains(&size) {
        return Err(convert_err!("window size {size} is out of range"));
    }
    let dt = tensor::dtype_of(n.int("output_datatype", 1) as i32)
        .ok_or_else(|| ConvertError::unsupported("output_datatype is not supported"))?;
    let periodic = n.int("periodic", 1) != 0;
    let n1 = if periodic { size } else { size - 1 } as f64;
    let pi = std::f64::consts::PI;
    let w = |i: f64| match n.op_type.as_str() {
        "HannWindow" => (i * pi / n1).sin().powi(2),
        "HammingWindow" => 25.0 / 46.0 - (i * pi * 2.0 / n1).cos() * (21.0 / 46.0),
        _ => 0.42 - 0.5 * (i * pi * 2.0 / n1).cos() + 0.08 * (i * pi * 4.0 / n1).cos(),
    };
    let data = (0..size).flat_map(|i| tensor::encode(dt, w(i as f64))).collect();
    let out = n.outputs.first().cloned().unwrap_or_default();
    out1(array_value(
        &out,
        NDArray {
            dtype: dt,
            shape: vec![size],
            data,
        },
    ))
}

/// `DFT` (opsets 17 to 20): the transform along `axis` as matrix products with
/// constant cosine and sine matrices (forward, inverse, one-sided forward and the
/// one-sided inverse of a Hermitian spectrum), `dft_length` zero-padding or truncating.
pub(crate) fn dft(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let shape = xv.const_shape().ok_or("DFT needs a static input shape")?;
    let r = shape.len();
    let c = *shape.last().ok_or("DFT of a scalar")?;
    if r < 2 || !(c == 1 || c == 2) {
        return Err("the last dimension must be 1 (real) or 2 (complex)".into());
    }
    let axis_v = if n.opset >= 20 {
        if n.has(2) {
            known_scalar(ctx, n, 2)?
        } else {
            -2
        }
    } else {
        n.int("axis", 1)
    };
    let axis = norm_axis(axis_v, r)?;
    if axis == r - 1 {
        return Err("the axis cannot be the last (complex) dimension".into());
    }
    let (inverse, onesided) = (n.int("inverse", 0) != 0, n.int("onesided", 0) != 0);
    let n_in = shape[axis];
    let len = if n.has(1) {
        known_scalar(ctx, n, 1)?
    } else if inverse && onesided {
        2 * (n_in - 1)
    } else {
        n_in
    };
    if len <= 0 || len > 1 << 16 {
        return Err(convert_err!("dft_length {len} is out of range"));
    }
    let dt = xv.dtype;
    let two_pi = 2.0 * std::f64::consts::PI;
    let used = n_in.min(len);
    // (n_in, k_out) matrices for the real and imaginary parts of the output
    let k_out = if inverse && onesided {
        len
    } else if onesided {
        len / 2 + 1
    } else {
        len
    };
    let mat = |f: &dyn Fn(i64, i64) -> f64| -> Expr {
        let vals = (0..n_in).flat_map(|i| (0..k_out).map(move |k| (i, k)));
        crate::convert::constant(
            dt,
            vec![n_in, k_out],
            vals.map(|(i, k)| tensor::encode(dt, if i < used { f(i, k) } else { 0.0 })),
        )
    };
    let theta = move |i: i64, k: i64| two_pi * ((i * k) % len) as f64 / len as f64;
    let lf = len as f64;
    // out_re = xr @ rr + xi @ ir, out_im = xr @ ri + xi @ ii
    let (rr, ir, ri, ii): (Expr, Expr, Option<Expr>, Option<Expr>) = if inverse && onesided {
        // the input index is the frequency, the output index the sample
        let w = move |k: i64| {
            if k == 0 || (len % 2 == 0 && k == len / 2) {
                1.0
            } else {
                2.0
            }
        };
        let half = len / 2 + 1;
        let live = move |k: i64| k < half;
        (
            mat(&|k, t| if live(k) { w(k) * theta(k, t).cos() / lf } else { 0.0 }),
            mat(&|k, t| if live(k) { -w(k) * theta(k, t).sin() / lf } else { 0.0 }),
            None,
            None,
        )
    } else if inverse {
        (
            mat(&|i, k| theta(i, k).cos() / lf),
            mat(&|i, k| -theta(i, k).sin() / lf),
            Some(mat(&|i, k| theta(i, k).sin() / lf)),
            Some(mat(&|i, k| theta(i, k).cos() / lf)),
        )
    } else {
        (
            mat(&|i, k| theta(i, k).cos()),
            mat(&|i, k| theta(i, k).sin()),
            Some(mat(&|i, k| -theta(i, k).sin())),
            Some(mat(&|i, k| theta(i, k).cos())),
        )
    };
    let a = x(ctx, n, 0)?;
    let mut perm: Vec<i64> = (0..r as i64 - 1).filter(|&d| d != axis as i64).collect();
    perm.push(axis as i64);
    let mut back = vec![0i64; r - 1];
    for (i, &p) in perm.iter().enumerate() {
        back[p as usize] = i as i64;
    }
    let part = |ctx: &mut Ctx, k: i64| -> Result<Expr, ConvertError> {
        let p = slice_axis(ctx, a.clone(), r as i64 - 1, k, k + 1, 1)?;
        let p = emit(ctx, "squeeze", vec![p], &[("axis", ints_attr(&[r as i64 - 1]))])?;
        emit(ctx, "permute_dims", vec![p], &[("axes", ints_attr(&perm))])
    };
    let xr = part(ctx, 0)?;
    let xi = if c == 2 { Some(part(ctx, 1)?) } else { None };
    let combine = |ctx: &mut Ctx, mr: Expr, mi: Expr| -> Result<Expr, ConvertError> {
        let mut y = emit(ctx, "matmul", vec![xr.clone(), mr], &[])?;
        if let Some(xi) = &xi {
            let t = emit(ctx, "matmul", vec![xi.clone(), mi], &[])?;
            y = emit(ctx, "add", vec![y, t], &[])?;
        }
        let y = emit(ctx, "permute_dims", vec![y], &[("axes", ints_attr(&back))])?;
        emit(ctx, "expand_dims", vec![y], &[("axis", ints_attr(&[r as i64 - 1]))])
    };
    let re = combine(ctx, rr, ir)?;
    let y = match (ri, ii) {
        (Some(ri), Some(ii)) => {
            let im = combine(ctx, ri, ii)?;
            concat_exprs(ctx, vec![re, im], r as i64 - 1)?
        }
        _ => re,
    };
    out1(tval_leaf(ctx, y)?)
}

/// `MelWeightMatrix`: a constant of the known arguments (triangular filters on the
/// mel scale, as the operator's reference computes them).
pub(crate) fn mel_weight_matrix(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let bins = known_scalar(ctx, n, 0)?;
    let dft = known_scalar(ctx, n, 1)?;
    let rate = known_scalar(ctx, n, 2)?;
    let (lo, hi) = (known_f64(ctx, n, 3)?, known_f64(ctx, n, 4)?);
    if bins <= 0 || dft <= 0 || rate <= 0 || bins > 4096 || dft > 1 << 16 {
        return Err("MelWeightMatrix arguments out of range".into());
    }
    let dt = tensor::dtype_of(n.int("output_datatype", 1) as i32)
        .ok_or_else(|| ConvertError::unsupported("output_datatype is not supported"))?;
    let spec = dft / 2 + 1;
    let mel = |hz: f64| 2595.0 * (hz / 700.0).ln_1p() / 10f64.ln();
    let (lm, hm) = (mel(lo), mel(hi));
    let step = (hm - lm) / (bins + 2) as f64;
    let fb: Vec<i64> = (0..bins + 2)
        .map(|i| {
            let m = i as f64 * step + lm;
            let hz = 700.0 * (m / 2595.0 * 10f64.ln()).exp_m1();
            (((dft + 1) as f64 * hz) / rate as f64).floor() as i64
        })
        .collect();
    let mut out = vec![0.0f64; (spec * bins) as usize];
    let mut set = |j: i64, i: i64, v: f64| {
        if (0..spec).contains(&j) {
            out[(j * bins + i) as usize] = v;
        }
    };
    for i in 0..bins {
        let (l, c, h) = (fb[i as usize], fb[i as usize + 1], fb[i as usize + 2]);
        if c == l {
            set(c, i, 1.0);
        } else {
            for j in l..=c {
                set(j, i, (j - l) as f64 / (c - l) as f64);
            }
        }
        if h > c {
            for j in c..h {
                set(j, i, (h - j) as f64 / (h - c) as f64);
            }
        }
    }
    let name = n.outputs.first().cloned().unwrap_or_default();
    let data = out.iter().flat_map(|&v| tensor::encode(dt, v)).collect();
    out1(array_value(
        &name,
        NDArray {
            dtype: dt,
            shape: vec![spec, bins],
            data,
        },
    ))
}

/// `STFT`: the frames (a constant gather of the signal) times the window, by constant
/// cosine and sine matrices; one-sided unless `onesided = 0`.
pub(crate) fn stft(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let sv = val(ctx, n, 0)?;
    let shape = sv.const_shape().ok_or("a static signal shape is needed")?;
    if shape.len() != 3 {
        return Err("the signal must be (batch, length, 1 or 2)".into());
    }
    let (b, len, c) = (shape[0], shape[1], shape[2]);
    if c != 1 {
        return Err(ConvertError::unsupported("complex signals are not supported"));
    }
    let step = known_scalar(ctx, n, 1)?;
    let wlen = if n.has(2) {
        Some(val(ctx, n, 2)?.const_shape().ok_or("window shape")?[0])
    } else {
        None
    };
    let flen = if n.has(3) {
        known_scalar(ctx, n, 3)?
    } else {
        wlen.ok_or("frame_length or window is needed")?
    };
    if step <= 0 || flen <= 0 || flen > len || flen > 1 << 14 {
        return Err("frame_step or frame_length out of range".into());
    }
    let frames = (len - flen) / step + 1;
    let onesided = n.int("onesided", 1) != 0;
    let bins = if onesided { flen / 2 + 1 } else { flen };
    let dt = sv.dtype;
    let a = x(ctx, n, 0)?;
    let a = reshape_expr(ctx, a, ints(&[b, len]))?;
    let idx = crate::convert::constant(
        DataType::INT64,
        vec![frames * flen],
        (0..frames * flen).map(|k| ((k / flen) * step + k % flen).to_le_bytes().to_vec()),
    );
    let fr = emit(ctx, "take", vec![a, idx], &[("axis", AttrValue::Int(1))])?;
    let mut fr = reshape_expr(ctx, fr, ints(&[b, frames, flen]))?;
    if n.has(2) {
        let w = x(ctx, n, 2)?;
        fr = emit(ctx, "multiply", vec![fr, w], &[])?;
    }
    let two_pi = 2.0 * std::f64::consts::PI;
    let mat = |f: &dyn Fn(f64) -> f64| {
        crate::convert::constant(
            dt,
            vec![flen, bins],
            (0..flen * bins).map(|q| {
                let (i, k) = (q / bins, q % bins);
                tensor::encode(dt, f(two_pi * ((i * k) % flen) as f64 / flen as f64))
            }),
        )
    };
    let cosm = mat(&|t| t.cos());
    let sinm = mat(&|t| -t.sin());
    let re = emit(ctx, "matmul", vec![fr.clone(), cosm], &[])?;
    let im = emit(ctx, "matmul", vec![fr, sinm], &[])?;
    let re = emit(ctx, "expand_dims", vec![re], &[("axis", ints_attr(&[3]))])?;
    let im = emit(ctx, "expand_dims", vec![im], &[("axis", ints_attr(&[3]))])?;
    let y = concat_exprs(ctx, vec![re, im], 3)?;
    out1(tval_leaf(ctx, y)?)
}
