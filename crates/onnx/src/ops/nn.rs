//! Neural network layers: products, convolutions, pools, normalizations, softmax.

use super::*;

/// `MatMul`; `float16` and `bfloat16` products accumulate in `float32` and are
/// rounded once (`out_dtype`), as ONNX's reference (numpy) and ONNX Runtime do.
pub(crate) fn matmul(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let (a, b) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    if dt.bits == 16 && matches!(dt.code, relax_ir::TypeCode::Float | relax_ir::TypeCode::BFloat) {
        let y = emit(
            ctx,
            "matmul",
            vec![a, b],
            &[("out_dtype", AttrValue::DataType(DataType::FLOAT32))],
        )?;
        return out1(ctx.op("astype", vec![y], &[("dtype", AttrValue::DataType(dt))])?);
    }
    out1(ctx.op("matmul", vec![a, b], &[])?)
}

pub(crate) fn transpose_2d(ctx: &mut Ctx, e: Expr) -> Result<Expr, ConvertError> {
    let t = ctx.op("permute_dims", vec![e], &[("axes", ints_attr(&[1, 0]))])?;
    leaf(ctx, &t)
}

pub(crate) fn gemm(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let (alpha, beta) = (n.float("alpha", 1.0), n.float("beta", 1.0));
    let mut a = x(ctx, n, 0)?;
    let mut b = x(ctx, n, 1)?;
    if n.int("transA", 0) != 0 {
        a = transpose_2d(ctx, a)?;
    }
    if n.int("transB", 0) != 0 {
        b = transpose_2d(ctx, b)?;
    }
    let mut y = ctx.op("matmul", vec![a, b], &[])?;
    if alpha != 1.0 {
        let l = leaf(ctx, &y)?;
        y = emit2(ctx, "multiply", l, scalar(dt, alpha))?;
    }
    if n.has(2) && beta != 0.0 {
        let mut c = x(ctx, n, 2)?;
        if beta != 1.0 {
            let t = emit2(ctx, "multiply", c, scalar(dt, beta))?;
            c = leaf(ctx, &t)?;
        }
        let l = leaf(ctx, &y)?;
        y = emit2(ctx, "add", l, c)?;
    }
    out1(y)
}

/// Padding of `dims` spatial axes: explicit `pads` or `auto_pad`; ONNX's order
/// `[begin..., end...]`, which is also Relax's.
pub(crate) fn spatial_pads(
    n: &Node,
    in_dims: Option<&[i64]>,
    kernel: &[i64],
    strides: &[i64],
    dilations: &[i64],
) -> Result<Vec<i64>, ConvertError> {
    let k = kernel.len();
    let auto = n.string("auto_pad").unwrap_or_else(|| "NOTSET".into());
    match auto.as_str() {
        "NOTSET" | "" => {
            let p = n.ints("pads").unwrap_or_else(|| vec![0; 2 * k]);
            if p.len() != 2 * k {
                return Err(convert_err!("pads has {} values, expected {}", p.len(), 2 * k));
            }
            Ok(p)
        }
        "VALID" => Ok(vec![0; 2 * k]),
        "SAME_UPPER" | "SAME_LOWER" => {
            let dims = in_dims.ok_or("auto_pad SAME needs static spatial dimensions")?;
            let mut p = vec![0; 2 * k];
            for i in 0..k {
                let out = (dims[i] + strides[i] - 1) / strides[i];
                let eff = (kernel[i] - 1) * dilations[i] + 1;
                let total = ((out - 1) * strides[i] + eff - dims[i]).max(0);
                let (lo, hi) = if auto == "SAME_UPPER" {
                    (total / 2, total - total / 2)
                } else {
                    (total - total / 2, total / 2)
                };
                p[i] = lo;
                p[i + k] = hi;
            }
            Ok(p)
        }
        o => Err(convert_err!(Unsupported;"auto_pad `{o}` is not supported")),
    }
}

pub(crate) fn spatial_in_dims(v: &TVal) -> Option<Vec<i64>> {
    v.const_shape().map(|s| s[2..].to_vec())
}

pub(crate) fn conv(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let wv = val(ctx, n, 1)?;
    let rank = xv.rank().ok_or("input has unknown rank")?;
    let k = rank
        .checked_sub(2)
        .filter(|k| (1..=3).contains(k))
        .ok_or_else(|| ConvertError::unsupported("Conv supports 1 to 3 spatial axes"))?;
    let wshape = wv.const_shape().ok_or("the weight needs a static shape")?;
    let (a, w) = if n.op_type == "ConvInteger" {
        // exact in float32 for 8-bit operands: the int32 result is rounded back
        let a = super::quant::centered_f32(ctx, n, 0, 2)?;
        let w = super::quant::centered_f32(ctx, n, 1, 3)?;
        (a, w)
    } else {
        (x(ctx, n, 0)?, x(ctx, n, 1)?)
    };
    let mut y = conv_expr(ctx, n, a, w, &xv, &wshape)?;
    if n.op_type == "ConvInteger" {
        let l = leaf(ctx, &y)?;
        let r = ctx.op("round", vec![l], &[])?;
        let l = leaf(ctx, &r)?;
        return out1(ctx.op("astype", vec![l], &[("dtype", AttrValue::DataType(DataType::INT32))])?);
    }
    if n.has(2) {
        y = add_channel_bias(ctx, n, y, k)?;
    }
    out1(y)
}

/// The convolution of `a` by `w` (of shape `wshape`) with the node's kernel, strides,
/// dilations, pads and groups; `xv` is the input's value.
pub(crate) fn conv_expr(
    ctx: &mut Ctx,
    n: &Node,
    a: Expr,
    w: Expr,
    xv: &TVal,
    wshape: &[i64],
) -> Result<TVal, ConvertError> {
    let rank = xv.rank().ok_or("input has unknown rank")?;
    let k = rank
        .checked_sub(2)
        .filter(|k| (1..=3).contains(k))
        .ok_or_else(|| ConvertError::unsupported("Conv supports 1 to 3 spatial axes"))?;
    if wshape.len() != rank {
        return Err("the weight's rank differs from the input's".into());
    }
    let kernel = n.ints("kernel_shape").unwrap_or_else(|| wshape[2..].to_vec());
    let strides = n.ints("strides").unwrap_or_else(|| vec![1; k]);
    let dil = n.ints("dilations").unwrap_or_else(|| vec![1; k]);
    let pads = spatial_pads(n, spatial_in_dims(xv).as_deref(), &kernel, &strides, &dil)?;
    let op = ["nn.conv1d", "nn.conv2d", "nn.conv3d"][k - 1];
    ctx.op(
        op,
        vec![a, w],
        &[
            ("strides", ints_attr(&strides)),
            ("padding", ints_attr(&pads)),
            ("dilation", ints_attr(&dil)),
            ("groups", AttrValue::Int(n.int("group", 1))),
        ],
    )
}

/// `y + reshape(bias, (1, C, 1, ...))`.
pub(crate) fn add_channel_bias(ctx: &mut Ctx, n: &Node, y: TVal, k: usize) -> Result<TVal, ConvertError> {
    let b = x(ctx, n, 2)?;
    let bshape = shape_of(ctx, n, 2)?;
    let mut target = vec![PrimExpr::int(1), bshape.first().cloned().ok_or("bias must be 1-D")?];
    target.extend((0..k).map(|_| PrimExpr::int(1)));
    let br = ctx.op("reshape", vec![b, Expr::shape(target)], &[])?;
    let (l, bl) = (leaf(ctx, &y)?, leaf(ctx, &br)?);
    emit2(ctx, "add", l, bl)
}

pub(crate) fn conv_transpose(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let wv = val(ctx, n, 1)?;
    let rank = xv.rank().ok_or("input has unknown rank")?;
    let k = rank
        .checked_sub(2)
        .filter(|k| (1..=3).contains(k))
        .ok_or_else(|| ConvertError::unsupported("ConvTranspose supports 1 to 3 spatial axes"))?;
    let wshape = wv.const_shape().ok_or("the weight needs a static shape")?;
    let kernel = n.ints("kernel_shape").unwrap_or_else(|| wshape[2..].to_vec());
    let strides = n.ints("strides").unwrap_or_else(|| vec![1; k]);
    let dil = n.ints("dilations").unwrap_or_else(|| vec![1; k]);
    let auto = n.string("auto_pad").unwrap_or_else(|| "NOTSET".into());
    if !matches!(auto.as_str(), "NOTSET" | "VALID" | "SAME_UPPER" | "SAME_LOWER") {
        return Err(convert_err!(Unsupported;"auto_pad `{auto}` is not supported"));
    }
    let mut pads = n.ints("pads").unwrap_or_else(|| vec![0; 2 * k]);
    let mut out_pad = n.ints("output_padding").unwrap_or_else(|| vec![0; k]);
    let in_dims = spatial_in_dims(&xv);
    // an explicit output shape (or SAME padding) fixes the pads: the total padding is
    // split between the two ends, the odd one at the end (the start for SAME_LOWER)
    let target: Option<Vec<i64>> = match n.ints("output_shape") {
        Some(o) if o.len() >= k => Some(o[o.len() - k..].to_vec()),
        Some(_) => return Err("output_shape does not match the spatial axes".into()),
        None if auto.starts_with("SAME") => in_dims
            .as_ref()
            .map(|d| d.iter().zip(&strides).map(|(a, s)| a * s).collect()),
        None => None,
    };
    if let Some(target) = target {
        let dims = in_dims.ok_or("output_shape needs static spatial dimensions")?;
        for i in 0..k {
            let total = strides[i] * (dims[i] - 1) + out_pad[i] + (kernel[i] - 1) * dil[i] + 1 - target[i];
            if total < 0 {
                out_pad[i] -= total;
                pads[i] = 0;
                pads[i + k] = 0;
            } else if auto == "SAME_UPPER" {
                pads[i] = total / 2;
                pads[i + k] = total - total / 2;
            } else {
                pads[i] = total - total / 2;
                pads[i + k] = total / 2;
            }
        }
    }
    let (a, w) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    let op = ["nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose"][k - 1];
    let mut y = ctx.op(
        op,
        vec![a, w],
        &[
            ("strides", ints_attr(&strides)),
            ("padding", ints_attr(&pads)),
            ("output_padding", ints_attr(&out_pad)),
            ("dilation", ints_attr(&dil)),
            ("groups", AttrValue::Int(n.int("group", 1))),
        ],
    )?;
    if n.has(2) {
        y = add_channel_bias(ctx, n, y, k)?;
    }
    out1(y)
}

pub(crate) fn pool(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = x(ctx, n, 0)?;
    let max = n.op_type == "MaxPool";
    let include_pad = n.int("count_include_pad", 0) != 0;
    let mut outs = pool_of(ctx, n, a.clone(), max, include_pad)?;
    if max && n.outputs.get(1).is_some_and(|o| !o.is_empty()) {
        let y = outs.first().cloned().ok_or("no output")?;
        outs.push(max_pool_indices(ctx, n, a, &y)?);
    }
    Ok(outs)
}

/// Max or average pooling of `a` (the node's input 0 or a function of it) with the
/// node's kernel, strides, dilations and pads.
pub(crate) fn pool_of(
    ctx: &mut Ctx,
    n: &Node,
    a: Expr,
    max: bool,
    include_pad: bool,
) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let rank = xv.rank().ok_or("input has unknown rank")?;
    let k = rank
        .checked_sub(2)
        .filter(|k| (1..=3).contains(k))
        .ok_or_else(|| ConvertError::unsupported("pooling supports 1 to 3 spatial axes"))?;
    let kernel = n.ints("kernel_shape").ok_or("kernel_shape is required")?;
    if kernel.len() != k {
        return Err("kernel_shape does not match the input's rank".into());
    }
    let strides = n.ints("strides").unwrap_or_else(|| vec![1; k]);
    let dil = n.ints("dilations").unwrap_or_else(|| vec![1; k]);
    let pads = spatial_pads(n, spatial_in_dims(&xv).as_deref(), &kernel, &strides, &dil)?;
    let op = if max {
        ["nn.max_pool1d", "nn.max_pool2d", "nn.max_pool3d"][k - 1]
    } else {
        ["nn.avg_pool1d", "nn.avg_pool2d", "nn.avg_pool3d"][k - 1]
    };
    let mut attrs = vec![
        ("pool_size", ints_attr(&kernel)),
        ("strides", ints_attr(&strides)),
        ("dilation", ints_attr(&dil)),
        ("padding", ints_attr(&pads)),
        ("ceil_mode", AttrValue::Bool(n.int("ceil_mode", 0) != 0)),
    ];
    if !max {
        attrs.push(("count_include_pad", AttrValue::Bool(include_pad)));
    }
    out1(ctx.op(op, vec![a], &attrs)?)
}

pub(crate) fn global_pool(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let axes: Vec<i64> = (2..rank as i64).collect();
    let a = x(ctx, n, 0)?;
    let op = if n.op_type == "GlobalMaxPool" { "max" } else { "mean" };
    out1(ctx.op(
        op,
        vec![a],
        &[("axis", ints_attr(&axes)), ("keepdims", AttrValue::Bool(true))],
    )?)
}

pub(crate) fn batch_norm(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    if n.int("training_mode", 0) != 0 {
        return batch_norm_training(ctx, n);
    }
    let mut args = Vec::new();
    for i in 0..5 {
        args.push(x(ctx, n, i)?);
    }
    let t = ctx.op_tuple(
        "nn.batch_norm",
        args,
        &[
            ("axis", AttrValue::Int(1)),
            ("epsilon", AttrValue::Float(n.float("epsilon", 1e-5))),
            ("momentum", AttrValue::Float(n.float("momentum", 0.9))),
            ("training", AttrValue::Bool(false)),
        ],
    )?;
    out1(ctx.item(&t, 0)?)
}

pub(crate) fn instance_norm(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let axes: Vec<i64> = (2..rank as i64).collect();
    let (a, g, b) = (x(ctx, n, 0)?, x(ctx, n, 1)?, x(ctx, n, 2)?);
    out1(ctx.op(
        "nn.instance_norm",
        vec![a, g, b],
        &[
            ("channel_axis", AttrValue::Int(1)),
            ("axes", ints_attr(&axes)),
            ("epsilon", AttrValue::Float(n.float("epsilon", 1e-5))),
        ],
    )?)
}

pub(crate) fn layer_norm(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let rank = xv.rank().ok_or("input has unknown rank")?;
    let axis = norm_axis(n.int("axis", -1), rank)?;
    let axes: Vec<i64> = (axis as i64..rank as i64).collect();
    let a = x(ctx, n, 0)?;
    let g = x(ctx, n, 1)?;
    let b = if n.has(2) {
        x(ctx, n, 2)?
    } else {
        let gs = val(ctx, n, 1)?.const_shape().ok_or("scale needs a static shape")?;
        let numel = const_product(&gs) as usize;
        crate::convert::constant(xv.dtype, gs, (0..numel).map(|_| tensor::encode(xv.dtype, 0.0)))
    };
    let eps = n.float("epsilon", 1e-5);
    let y = ctx.op(
        "nn.layer_norm",
        vec![a.clone(), g, b],
        &[("axes", ints_attr(&axes)), ("epsilon", AttrValue::Float(eps))],
    )?;
    if n.outputs.iter().skip(1).all(|s| s.is_empty()) {
        return out1(y);
    }
    // Mean and InvStdDev, reduced with keepdims
    let red = [("axis", ints_attr(&axes)), ("keepdims", AttrValue::Bool(true))];
    let mean = ctx.op("mean", vec![a.clone()], &red)?;
    let ml = leaf(ctx, &mean)?;
    let d = emit2(ctx, "subtract", a, ml)?;
    let dl = leaf(ctx, &d)?;
    let sq = emit2(ctx, "multiply", dl.clone(), dl)?;
    let sql = leaf(ctx, &sq)?;
    let var = ctx.op("mean", vec![sql], &red)?;
    let vl = leaf(ctx, &var)?;
    let ve = emit2(ctx, "add", vl, scalar(xv.dtype, eps))?;
    let vel = leaf(ctx, &ve)?;
    let inv = ctx.op("rsqrt", vec![vel], &[])?;
    Ok(vec![y, mean, inv])
}

pub(crate) fn rms_norm(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let axis = norm_axis(n.int("axis", -1), rank)?;
    let axes: Vec<i64> = (axis as i64..rank as i64).collect();
    let (a, g) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    out1(ctx.op(
        "nn.rms_norm",
        vec![a, g],
        &[
            ("axes", ints_attr(&axes)),
            ("epsilon", AttrValue::Float(n.float("epsilon", 1e-5))),
        ],
    )?)
}

pub(crate) fn softmax(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let shape = shape_of(ctx, n, 0)?;
    let rank = shape.len();
    let axis = norm_axis(n.int("axis", if n.opset < 13 { 1 } else { -1 }), rank)?;
    let op = if n.op_type == "Softmax" {
        "nn.softmax"
    } else {
        "nn.log_softmax"
    };
    let a = x(ctx, n, 0)?;
    if n.opset >= 13 || axis + 1 == rank {
        return out1(ctx.op(op, vec![a], &[("axis", AttrValue::Int(axis as i64))])?);
    }
    // opsets before 13: the input is coerced to 2-D at `axis`
    let (lo, hi) = (product(ctx, &shape[..axis]), product(ctx, &shape[axis..]));
    let r = ctx.op("reshape", vec![a, Expr::shape(vec![lo, hi])], &[])?;
    let l = leaf(ctx, &r)?;
    let s = ctx.op(op, vec![l], &[("axis", AttrValue::Int(1))])?;
    let l = leaf(ctx, &s)?;
    out1(ctx.op("reshape", vec![l, Expr::shape(shape)], &[])?)
}

/// `Hardmax`: the one-hot of the first maximum along `axis`.
pub(crate) fn hardmax(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let shape = v.shape.clone().ok_or("input has unknown shape")?;
    if n.opset < 13 {
        return Err(ConvertError::unsupported("Hardmax before opset 13 is not supported"));
    }
    let axis = norm_axis(n.int("axis", -1), shape.len())?;
    let depth = shape[axis].as_int().ok_or("Hardmax needs a static axis length")?;
    let a = x(ctx, n, 0)?;
    let am = emit(
        ctx,
        "argmax",
        vec![a],
        &[
            ("axis", AttrValue::Int(axis as i64)),
            ("keepdims", AttrValue::Bool(false)),
        ],
    )?;
    let p = |f: f64| Expr::new(ExprKind::PrimValue(PrimExpr::float_of(f, v.dtype)));
    out1(ctx.op(
        "one_hot",
        vec![am, p(1.0), p(0.0)],
        &[("depth", AttrValue::Int(depth)), ("axis", AttrValue::Int(axis as i64))],
    )?)
}

/// `LpNormalization`: `x / norm_p(x)` along `axis` (p = 1 or 2).
pub(crate) fn lp_normalization(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let axis = norm_axis(n.int("axis", -1), rank)? as i64;
    let a = x(ctx, n, 0)?;
    let red = [("axis", ints_attr(&[axis])), ("keepdims", AttrValue::Bool(true))];
    let norm = match n.int("p", 2) {
        1 => {
            let t = emit(ctx, "abs", vec![a.clone()], &[])?;
            emit(ctx, "sum", vec![t], &red)?
        }
        2 => {
            let t = emit(ctx, "multiply", vec![a.clone(), a.clone()], &[])?;
            let s = emit(ctx, "sum", vec![t], &red)?;
            emit(ctx, "sqrt", vec![s], &[])?
        }
        p => return Err(convert_err!(Unsupported;"p = {p} is not supported (1 or 2)")),
    };
    // a zero norm gives zeros, not NaN
    let dt = val(ctx, n, 0)?.dtype;
    let zero = emit(ctx, "equal", vec![norm.clone(), scalar(dt, 0.0)], &[])?;
    let safe = emit(ctx, "where", vec![zero.clone(), scalar(dt, 1.0), norm], &[])?;
    let q = emit(ctx, "divide", vec![a, safe], &[])?;
    out1(ctx.op("where", vec![zero, scalar(dt, 0.0), q], &[])?)
}

/// `GroupNormalization`: `R.nn.group_norm` over the channel axis 1 (a per-group
/// scale and bias of opset 18 are repeated per channel).
pub(crate) fn group_norm(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let shape = shape_of(ctx, n, 0)?;
    let rank = shape.len();
    let groups = n.int("num_groups", 0);
    let c = shape
        .get(1)
        .and_then(PrimExpr::as_int)
        .ok_or("static channels needed")?;
    if groups <= 0 || c % groups != 0 {
        return Err(convert_err!("{groups} groups do not divide {c} channels"));
    }
    let (a, mut g, mut b) = (x(ctx, n, 0)?, x(ctx, n, 1)?, x(ctx, n, 2)?);
    if val(ctx, n, 1)?.const_shape() == Some(vec![groups]) && groups != c {
        let rep = [("repeats", AttrValue::Int(c / groups)), ("axis", AttrValue::Int(0))];
        g = emit(ctx, "repeat", vec![g], &rep)?;
        b = emit(ctx, "repeat", vec![b], &rep)?;
    }
    let axes: Vec<i64> = (2..rank as i64).collect();
    out1(ctx.op(
        "nn.group_norm",
        vec![a, g, b],
        &[
            ("num_groups", AttrValue::Int(groups)),
            ("channel_axis", AttrValue::Int(1)),
            ("axes", ints_attr(&axes)),
            ("epsilon", AttrValue::Float(n.float("epsilon", 1e-5))),
        ],
    )?)
}

/// `MeanVarianceNormalization`: `(x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9)`.
pub(crate) fn mvn(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let rank = rank_of(ctx, n, 0)?;
    let axes: Vec<i64> = n
        .ints("axes")
        .unwrap_or_else(|| vec![0, 2, 3])
        .iter()
        .map(|&a| norm_axis(a, rank).map(|v| v as i64))
        .collect::<Result<_, _>>()?;
    let a = x(ctx, n, 0)?;
    let red = [("axis", ints_attr(&axes)), ("keepdims", AttrValue::Bool(true))];
    let m = emit(ctx, "mean", vec![a.clone()], &red)?;
    let m2 = emit(ctx, "multiply", vec![m.clone(), m.clone()], &[])?;
    let sq = emit(ctx, "multiply", vec![a.clone(), a.clone()], &[])?;
    let e2 = emit(ctx, "mean", vec![sq], &red)?;
    let var = emit(ctx, "subtract", vec![e2, m2], &[])?;
    let sd = emit(ctx, "sqrt", vec![var], &[])?;
    let sd = emit(ctx, "add", vec![sd, scalar(dt, 1e-9)], &[])?;
    let d = emit(ctx, "subtract", vec![a, m], &[])?;
    out1(ctx.op("divide", vec![d, sd], &[])?)
}

/// `LpPool`: `(sum over the window of |x|^p)^(1/p)`, the sum an average pool with
/// padding counted, times the window size.
pub(crate) fn lp_pool(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let p = n.int("p", 2) as f64;
    let kernel = n.ints("kernel_shape").ok_or("kernel_shape is required")?;
    let a = x(ctx, n, 0)?;
    let abs = emit(ctx, "abs", vec![a], &[])?;
    let pw = emit(ctx, "power", vec![abs, scalar(dt, p)], &[])?;
    let pooled = pool_of(ctx, n, pw, false, true)?;
    let pl = ctx.leaf(pooled.first().ok_or("pool")?)?;
    let k: i64 = kernel.iter().product();
    let s = emit(ctx, "multiply", vec![pl, scalar(dt, k as f64)], &[])?;
    out1(ctx.op("power", vec![s, scalar(dt, 1.0 / p)], &[])?)
}

/// `Einsum` as broadcasting products and sums: each operand's repeated indices are
/// reduced to their diagonal, its axes ordered and padded to every index of the
/// equation, the operands multiplied, and the indices absent from the output summed.
pub(crate) fn einsum(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let eq: String = n
        .string("equation")
        .ok_or("no equation")?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (eq.clone(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    let count = n.inputs.iter().filter(|s| !s.is_empty()).count();
    if terms.len() != count {
        return Err(convert_err!(
            "the equation has {} operands, the node {count}",
            terms.len()
        ));
    }
    let mut shapes = Vec::new();
    for i in 0..count {
        shapes.push(val(ctx, n, i)?.const_shape().ok_or("Einsum needs static shapes")?);
    }
    // expand `...` into placeholder indices, right-aligned across operands
    let ell_rank = terms
        .iter()
        .zip(&shapes)
        .filter(|(t, _)| t.contains("..."))
        .map(|(t, s)| s.len() + 3 - t.chars().count())
        .max()
        .unwrap_or(0);
    let ell = |m: usize| -> Vec<char> {
        (ell_rank - m..ell_rank)
            .map(|i| char::from_u32(0x100 + i as u32).unwrap_or('?'))
            .collect()
    };
    let expand = |t: &str, rank: usize| -> Result<Vec<char>, ConvertError> {
        match t.split_once("...") {
            Some((a, b)) => {
                let named = a.chars().count() + b.chars().count();
                let m = rank.checked_sub(named).ok_or("the ellipsis does not fit the rank")?;
                Ok(a.chars().chain(ell(m)).chain(b.chars()).collect())
            }
            None => Ok(t.chars().collect()),
        }
    };
    let mut idx: Vec<Vec<char>> = Vec::new();
    for (t, s) in terms.iter().zip(&shapes) {
        let v = expand(t, s.len())?;
        if v.len() != s.len() {
            return Err(convert_err!("operand `{t}` does not match rank {}", s.len()));
        }
        idx.push(v);
    }
    let out: Vec<char> = match &rhs {
        Some(r) => expand(r, ell_rank + r.replace("...", "").chars().count())?,
        None => {
            let mut once: Vec<char> = Vec::new();
            let all: Vec<char> = idx.iter().flatten().copied().collect();
            for &c in &all {
                if c.is_ascii_alphabetic() && all.iter().filter(|&&d| d == c).count() == 1 {
                    once.push(c);
                }
            }
            once.sort();
            ell(ell_rank).into_iter().chain(once).collect()
        }
    };
    // every index in order: the output's, then the summed ones
    let mut order: Vec<char> = out.clone();
    for v in &idx {
        for &c in v {
            if !order.contains(&c) {
                order.push(c);
            }
        }
    }
    let mut size: std::collections::HashMap<char, i64> = Default::default();
    for (v, s) in idx.iter().zip(&shapes) {
        for (&c, &d) in v.iter().zip(s) {
            let e = size.entry(c).or_insert(d);
            if *e == 1 {
                *e = d;
            } else if d != 1 && d != *e {
                return Err(convert_err!("index `{c}` has sizes {} and {d}", *e));
            }
        }
    }
    let total: i64 = order.iter().map(|c| size.get(c).copied().unwrap_or(1)).product();
    if total > 1 << 24 {
        return Err("Einsum too large to expand".into());
    }
    let dt = val(ctx, n, 0)?.dtype;
    let mut prod: Option<Expr> = None;
    for (i, (v, s)) in idx.iter().zip(&shapes).enumerate() {
        let mut e = x(ctx, n, i)?;
        let mut v = v.clone();
        let mut s = s.clone();
        // diagonals of repeated indices
        while let Some((p, q)) = (0..v.len()).find_map(|p| (p + 1..v.len()).find(|&q| v[q] == v[p]).map(|q| (p, q))) {
            let d = s[p];
            let mut ms = vec![1i64; v.len()];
            ms[p] = d;
            ms[q] = d;
            let eye = crate::convert::constant(
                dt,
                ms,
                (0..d * d).map(|k| tensor::encode(dt, (k / d == k % d) as i64 as f64)),
            );
            e = emit(ctx, "multiply", vec![e, eye], &[])?;
            e = emit(
                ctx,
                "sum",
                vec![e],
                &[("axis", ints_attr(&[q as i64])), ("keepdims", AttrValue::Bool(false))],
            )?;
            v.remove(q);
            s.remove(q);
        }
        let mut perm: Vec<usize> = (0..v.len()).collect();
        perm.sort_by_key(|&a| order.iter().position(|&c| c == v[a]));
        if perm.iter().enumerate().any(|(k, &p)| k != p) {
            let axes: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
            e = emit(ctx, "permute_dims", vec![e], &[("axes", ints_attr(&axes))])?;
        }
        let full: Vec<i64> = order
            .iter()
            .map(|c| v.iter().position(|d| d == c).map(|a| s[a]).unwrap_or(1))
            .collect();
        if full.len() != v.len() {
            e = reshape_expr(ctx, e, ints(&full))?;
        }
        prod = Some(match prod {
            None => e,
            Some(p) => emit(ctx, "multiply", vec![p, e], &[])?,
        });
    }
    let mut y = prod.ok_or("no operands")?;
    let summed: Vec<i64> = (out.len()..order.len()).map(|a| a as i64).collect();
    if !summed.is_empty() {
        y = emit(
            ctx,
            "sum",
            vec![y],
            &[("axis", ints_attr(&summed)), ("keepdims", AttrValue::Bool(false))],
        )?;
    }
    // broadcast output indices of size 1 in every operand to their size
    let out_shape: Vec<i64> = out.iter().map(|c| size.get(c).copied().unwrap_or(1)).collect();
    y = emit(ctx, "broadcast_to", vec![y, Expr::shape(ints(&out_shape))], &[])?;
    out1(tval_leaf(ctx, y)?)
}

/// `LRN`: `x / (bias + alpha / size * sum of squares over the channel window)^beta`.
pub(crate) fn lrn(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let shape = xv.const_shape().ok_or("a static input shape is needed")?;
    if shape.len() < 3 {
        return Err("LRN needs (N, C, ...)".into());
    }
    let size = n.int("size", 0);
    if size <= 0 {
        return Err("size must be positive".into());
    }
    let (alpha, beta, bias) = (n.float("alpha", 1e-4), n.float("beta", 0.75), n.float("bias", 1.0));
    let dt = xv.dtype;
    let c = shape[1];
    let (lo, hi) = ((size - 1) / 2, size - 1 - (size - 1) / 2);
    let a = x(ctx, n, 0)?;
    let sq = emit(ctx, "multiply", vec![a.clone(), a.clone()], &[])?;
    let mut width = vec![0i64; 2 * shape.len()];
    width[2] = lo;
    width[3] = hi;
    let padded = emit(
        ctx,
        "nn.pad",
        vec![sq],
        &[
            ("pad_width", ints_attr(&width)),
            ("pad_value", AttrValue::Float(0.0)),
            ("pad_mode", AttrValue::Str("constant".into())),
        ],
    )?;
    let mut sum: Option<Expr> = None;
    for j in 0..size {
        let s = slice_axis(ctx, padded.clone(), 1, j, j + c, 1)?;
        sum = Some(match sum {
            None => s,
            Some(t) => emit(ctx, "add", vec![t, s], &[])?,
        });
    }
    let sum = sum.ok_or("empty window")?;
    let t = emit(ctx, "multiply", vec![sum, scalar(dt, alpha / size as f64)], &[])?;
    let t = emit(ctx, "add", vec![t, scalar(dt, bias)], &[])?;
    let t = emit(ctx, "power", vec![t, scalar(dt, beta)], &[])?;
    out1(ctx.op("divide", vec![a, t], &[])?)
}

/// `Det` of 1x1, 2x2 and 3x3 matrices (batched): the cofactor expansion.
pub(crate) fn det(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let shape = val(ctx, n, 0)?.const_shape().ok_or("a static input shape is needed")?;
    let r = shape.len();
    if r < 2 || shape[r - 1] != shape[r - 2] {
        return Err("Det needs square matrices".into());
    }
    let m = shape[r - 1];
    let a = x(ctx, n, 0)?;
    // element (i, j) of every matrix: (...)
    let el = |ctx: &mut Ctx, i: i64, j: i64| -> Result<Expr, ConvertError> {
        let row = slice_axis(ctx, a.clone(), r as i64 - 2, i, i + 1, 1)?;
        let e = slice_axis(ctx, row, r as i64 - 1, j, j + 1, 1)?;
        emit(
            ctx,
            "squeeze",
            vec![e],
            &[("axis", ints_attr(&[r as i64 - 2, r as i64 - 1]))],
        )
    };
    let mul = |ctx: &mut Ctx, p: Expr, q: Expr| emit(ctx, "multiply", vec![p, q], &[]);
    let d = match m {
        1 => el(ctx, 0, 0)?,
        2 => {
            let (a00, a01, a10, a11) = (el(ctx, 0, 0)?, el(ctx, 0, 1)?, el(ctx, 1, 0)?, el(ctx, 1, 1)?);
            let p = mul(ctx, a00, a11)?;
            let q = mul(ctx, a01, a10)?;
            emit(ctx, "subtract", vec![p, q], &[])?
        }
        3 => {
            let mut e = vec![];
            for i in 0..3 {
                for j in 0..3 {
                    e.push(el(ctx, i, j)?);
                }
            }
            let minor = |ctx: &mut Ctx, a: usize, b: usize, c: usize, d: usize| -> Result<Expr, ConvertError> {
                let p = mul(ctx, e[a].clone(), e[d].clone())?;
                let q = mul(ctx, e[b].clone(), e[c].clone())?;
                emit(ctx, "subtract", vec![p, q], &[])
            };
            let m0 = minor(ctx, 4, 5, 7, 8)?;
            let m1 = minor(ctx, 3, 5, 6, 8)?;
            let m2 = minor(ctx, 3, 4, 6, 7)?;
            let t0 = mul(ctx, e[0].clone(), m0)?;
            let t1 = mul(ctx, e[1].clone(), m1)?;
            let t2 = mul(ctx, e[2].clone(), m2)?;
            let s = emit(ctx, "subtract", vec![t0, t1], &[])?;
            emit(ctx, "add", vec![s, t2], &[])?
        }
        _ => return Err(convert_err!(Unsupported;"Det of {m}x{m} matrices is not supported (up to 3x3)")),
    };
    out1(tval_leaf(ctx, d)?)
}

/// The second output of a 2-D `MaxPool`: the flat index (over `N * C * H * W`, rows
/// first or with `storage_order = 1` columns first) of each window's first maximum.
/// Each window's taps are gathered by a constant index table (padding taps read as
/// -inf), their `argmax` picks the tap, and the table gives its index.
fn max_pool_indices(ctx: &mut Ctx, n: &Node, a: Expr, y: &TVal) -> Result<TVal, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let s = xv.const_shape().ok_or("static shapes are needed for the indices")?;
    let o = y.const_shape().ok_or("static shapes are needed for the indices")?;
    let (Ok([nb, c, h, w]), Ok([_, _, oh, ow])) =
        (<[i64; 4]>::try_from(s.as_slice()), <[i64; 4]>::try_from(o.as_slice()))
    else {
        return Err(ConvertError::unsupported(
            "indices of MaxPool are supported for 2-D pooling",
        ));
    };
    let kernel = n.ints("kernel_shape").ok_or("kernel_shape is required")?;
    let strides = n.ints("strides").unwrap_or_else(|| vec![1; 2]);
    let dil = n.ints("dilations").unwrap_or_else(|| vec![1; 2]);
    let pads = spatial_pads(n, Some(&[h, w]), &kernel, &strides, &dil)?;
    if kernel.len() != 2 || strides.len() != 2 || dil.len() != 2 {
        return Err("kernel_shape, strides and dilations must have 2 values".into());
    }
    let col_major = n.int("storage_order", 0) != 0;
    let taps = kernel[0] * kernel[1];
    let (mut table, mut valid) = (Vec::new(), Vec::new());
    for i in 0..oh {
        for j in 0..ow {
            for ki in 0..kernel[0] {
                for kj in 0..kernel[1] {
                    let r = i * strides[0] - pads[0] + ki * dil[0];
                    let q = j * strides[1] - pads[1] + kj * dil[1];
                    let ok = (0..h).contains(&r) && (0..w).contains(&q);
                    table.push(if ok { r * w + q } else { 0 });
                    valid.push(ok);
                }
            }
        }
    }
    let konst = |v: &[i64]| {
        crate::convert::constant(
            DataType::INT64,
            vec![v.len() as i64],
            v.iter().map(|x| x.to_le_bytes().to_vec()),
        )
    };
    let flat = reshape_expr(ctx, a, ints(&[nb, c, h * w]))?;
    let vals = emit(ctx, "take", vec![flat, konst(&table)], &[("axis", AttrValue::Int(2))])?;
    let mask = crate::convert::constant(
        DataType::BOOL,
        vec![valid.len() as i64],
        valid.iter().map(|&b| vec![b as u8]),
    );
    let vals = emit(ctx, "where", vec![mask, vals, scalar(xv.dtype, f64::NEG_INFINITY)], &[])?;
    let vals = reshape_expr(ctx, vals, ints(&[nb, c, oh * ow, taps]))?;
    let am = emit(
        ctx,
        "argmax",
        vec![vals],
        &[("axis", AttrValue::Int(3)), ("keepdims", AttrValue::Bool(false))],
    )?;
    let base: Vec<i64> = (0..oh * ow).map(|p| p * taps).collect();
    let lin = emit(ctx, "add", vec![am, konst(&base)], &[])?;
    // the index of each tap in the chosen storage order
    let stored: Vec<i64> = table
        .iter()
        .map(|&t| if col_major { (t % w) * h + t / w } else { t })
        .collect();
    let idx = emit(ctx, "take", vec![konst(&stored), lin], &[("axis", AttrValue::Int(0))])?;
    let off: Vec<i64> = (0..nb * c).map(|k| k * h * w).collect();
    let off = crate::convert::constant(
        DataType::INT64,
        vec![nb, c, 1],
        off.iter().map(|x| x.to_le_bytes().to_vec()),
    );
    let idx = emit(ctx, "add", vec![idx, off], &[])?;
    ctx.op("reshape", vec![idx, Expr::shape(ints(&[nb, c, oh, ow]))], &[])
}

/// `BatchNormalization` with `training_mode = 1`: normalized by the batch's mean and
/// (population) variance over every axis but 1; the running mean and variance updated
/// as `running * momentum + current * (1 - momentum)` (ONNX's reference).
fn batch_norm_training(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    if rank < 2 {
        return Err("the input must have a channel axis".into());
    }
    let dt = val(ctx, n, 0)?.dtype;
    let eps = n.float("epsilon", 1e-5);
    let momentum = n.float("momentum", 0.9);
    let a = x(ctx, n, 0)?;
    let axes: Vec<i64> = std::iter::once(0).chain(2..rank as i64).collect();
    let red = |keep: bool| [("axis", ints_attr(&axes)), ("keepdims", AttrValue::Bool(keep))];
    let m = emit(ctx, "mean", vec![a.clone()], &red(true))?;
    let d = emit(ctx, "subtract", vec![a, m.clone()], &[])?;
    let sq = emit(ctx, "multiply", vec![d.clone(), d.clone()], &[])?;
    let var = emit(ctx, "mean", vec![sq], &red(true))?;
    let ve = emit(ctx, "add", vec![var.clone(), scalar(dt, eps)], &[])?;
    let den = emit(ctx, "sqrt", vec![ve], &[])?;
    let norm = emit(ctx, "divide", vec![d, den], &[])?;
    let chan: Vec<i64> = (1..rank as i64 - 1).collect();
    let per_channel = |ctx: &mut Ctx, i: usize| -> Result<Expr, ConvertError> {
        let e = x(ctx, n, i)?;
        if chan.is_empty() {
            return Ok(e);
        }
        emit(ctx, "expand_dims", vec![e], &[("axis", ints_attr(&chan))])
    };
    let s = per_channel(ctx, 1)?;
    let b = per_channel(ctx, 2)?;
    let y = emit(ctx, "multiply", vec![norm, s], &[])?;
    let y = ctx.op("add", vec![y, b], &[])?;
    let mut outs = vec![y];
    for (i, cur) in [(3, m), (4, var)] {
        let flat = emit(ctx, "squeeze", vec![cur], &[("axis", ints_attr(&axes))])?;
        let old = x(ctx, n, i)?;
        let old = emit(ctx, "multiply", vec![old, scalar(dt, momentum)], &[])?;
        let new = emit(ctx, "multiply", vec![flat, scalar(dt, 1.0 - momentum)], &[])?;
        outs.push(ctx.op("add", vec![old, new], &[])?);
    }
    Ok(outs)
}
