//! Converters written as compositions of Relax operators: losses, quantization,
//! normalizations and data movement (each following the ONNX operator's definition,
//! and TVM's ONNX front end where it has one).

use crate::error::{convert_err, ConvertError};
use relax_ir::{AttrValue, DataType, Expr, ExprKind, NDArray, PrimExpr};

use crate::convert::{Ctx, Known, TVal};
use crate::ops::{
    array_value, ints_attr, norm_axis, out1, pool_of, rank_of, scalar, shape_of, tval_leaf, val, x, Node,
};
use crate::tensor;

pub(crate) fn emit(
    ctx: &mut Ctx,
    op: &str,
    args: Vec<Expr>,
    attrs: &[(&str, AttrValue)],
) -> Result<Expr, ConvertError> {
    let v = ctx.op(op, args, attrs)?;
    ctx.leaf(&v)
}

fn astype(ctx: &mut Ctx, e: Expr, from: DataType, to: DataType) -> Result<Expr, ConvertError> {
    if from == to {
        return Ok(e);
    }
    emit(ctx, "astype", vec![e], &[("dtype", AttrValue::DataType(to))])
}

fn reshape(ctx: &mut Ctx, e: Expr, dims: Vec<PrimExpr>) -> Result<Expr, ConvertError> {
    emit(ctx, "reshape", vec![e, Expr::shape(dims)], &[])
}

fn ints(v: &[i64]) -> Vec<PrimExpr> {
    v.iter().map(|&d| PrimExpr::int(d)).collect()
}

/// `SoftmaxCrossEntropyLoss`: the negative log-likelihood loss of
/// `log_softmax(scores, axis=1)`; the second output is the log-probabilities.
pub fn softmax_cross_entropy(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let s = x(ctx, n, 0)?;
    let lp = ctx.op("nn.log_softmax", vec![s], &[("axis", AttrValue::Int(1))])?;
    let l = ctx.leaf(&lp)?;
    let loss = nll(ctx, n, l, lp.dtype)?;
    Ok(vec![loss, lp])
}

/// The negative log-likelihood loss of log-probabilities `logp` (N, C, d...) with the
/// node's targets (input 1), optional weights (input 2), `reduction` and
/// `ignore_index`: targets equal to `ignore_index` are read as class 0 and weigh 0, so
/// that no element outside the classes is read.
pub fn nll(ctx: &mut Ctx, n: &Node, logp: Expr, dt: DataType) -> Result<TVal, ConvertError> {
    let reduction = n.string("reduction").unwrap_or_else(|| "mean".into());
    if !matches!(reduction.as_str(), "mean" | "sum" | "none") {
        return Err(convert_err!(Unsupported;"reduction `{reduction}` is not supported"));
    }
    let tv = val(ctx, n, 1)?;
    let t = x(ctx, n, 1)?;
    let t = astype(ctx, t, tv.dtype, DataType::INT64)?;
    let ignored = match n.attr_i("ignore_index") {
        Some(ii) => Some(emit(
            ctx,
            "equal",
            vec![t.clone(), scalar(DataType::INT64, ii as f64)],
            &[],
        )?),
        None => None,
    };
    let safe = match &ignored {
        Some(c) => emit(ctx, "where", vec![c.clone(), scalar(DataType::INT64, 0.0), t], &[])?,
        None => t,
    };
    let idx = emit(ctx, "expand_dims", vec![safe.clone()], &[("axis", ints_attr(&[1]))])?;
    let picked = emit(ctx, "gather_elements", vec![logp, idx], &[("axis", AttrValue::Int(1))])?;
    let picked = emit(ctx, "squeeze", vec![picked], &[("axis", ints_attr(&[1]))])?;
    let mut w = if n.has(2) {
        let wt = x(ctx, n, 2)?;
        Some(emit(
            ctx,
            "take",
            vec![wt, safe.clone()],
            &[("axis", AttrValue::Int(0))],
        )?)
    } else {
        None
    };
    if let Some(c) = &ignored {
        let base = match w {
            Some(w) => w,
            None => emit(ctx, "ones_like", vec![picked.clone()], &[])?,
        };
        w = Some(emit(ctx, "where", vec![c.clone(), scalar(dt, 0.0), base], &[])?);
    }
    let neg = emit(ctx, "negative", vec![picked.clone()], &[])?;
    let loss = match &w {
        Some(w) => emit(ctx, "multiply", vec![neg, w.clone()], &[])?,
        None => neg,
    };
    match reduction.as_str() {
        "none" => Ok(tval_leaf(ctx, loss)?),
        "sum" => ctx.op("sum", vec![loss], &[]),
        _ => {
            let total = emit(ctx, "sum", vec![loss], &[])?;
            let count = match &w {
                Some(w) => emit(ctx, "sum", vec![w.clone()], &[])?,
                None => {
                    let numel = val(ctx, n, 1)?
                        .const_shape()
                        .map(|s| s.iter().product::<i64>())
                        .ok_or("mean reduction needs static target dimensions")?;
                    scalar(dt, numel as f64)
                }
            };
            ctx.op("divide", vec![total, count], &[])
        }
    }
}

/// Saturation bounds of a quantized integer type.
fn int_range(dt: DataType) -> Result<(f64, f64), ConvertError> {
    if !dt.is_integer() || dt.is_bool() || dt.bits > 32 {
        return Err(convert_err!(Unsupported;"quantization to {dt} is not supported"));
    }
    let b = dt.bits as i32;
    Ok(if dt.is_int() {
        (-(2f64.powi(b - 1)), 2f64.powi(b - 1) - 1.0)
    } else {
        (0.0, 2f64.powi(b) - 1.0)
    })
}

/// The scale or zero point `e` (input `i`) shaped to broadcast against the input of
/// rank `rank`: a scalar as is, a 1-D tensor along `axis`, a blocked one repeated
/// `block` times along `axis` and cut to the input's length.
fn per_axis(ctx: &mut Ctx, n: &Node, i: usize, rank: usize, axis: usize, dim: &PrimExpr) -> Result<Expr, ConvertError> {
    let v = val(ctx, n, i)?;
    let e = x(ctx, n, i)?;
    let r = v.rank().ok_or("a scale of unknown rank")?;
    let block = n.int("block_size", 0);
    if r == 0 || (r == 1 && v.const_shape() == Some(vec![1]) && block == 0) {
        return Ok(e);
    }
    if block > 0 {
        if r != rank {
            return Err("a blocked scale must have the input's rank".into());
        }
        let rep = emit(
            ctx,
            "repeat",
            vec![e],
            &[
                ("repeats", AttrValue::Int(block)),
                ("axis", AttrValue::Int(axis as i64)),
            ],
        )?;
        let d = dim.as_int().ok_or("blocked quantization needs a static axis")?;
        let t = |v: i64| Expr::tuple(vec![Expr::new(ExprKind::PrimValue(PrimExpr::int(v)))]);
        return emit(ctx, "strided_slice", vec![rep, t(axis as i64), t(0), t(d), t(1)], &[]);
    }
    if r != 1 {
        return Err("the scale must be a scalar or 1-D".into());
    }
    let len = v.shape.as_ref().map(|s| s[0].clone()).ok_or("scale shape")?;
    let mut dims = vec![PrimExpr::int(1); rank];
    dims[axis] = len;
    reshape(ctx, e, dims)
}

fn quant_axis(n: &Node, rank: usize) -> Result<usize, ConvertError> {
    if rank == 0 {
        return Ok(0);
    }
    norm_axis(n.int("axis", 1), rank).or_else(|_| if rank <= 1 { Ok(0) } else { Err("bad axis".into()) })
}

/// `QuantizeLinear`: `saturate(round(x / scale) + zero_point)`, per tensor, per axis or
/// blocked; the output type is the zero point's (`output_dtype`, else uint8).
pub fn quantize_linear(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let shape = xv.shape.clone().ok_or("input has unknown shape")?;
    let rank = shape.len();
    let axis = quant_axis(n, rank)?;
    let dim = shape.get(axis).cloned().unwrap_or(PrimExpr::int(1));
    let out_dt = if n.has(2) {
        val(ctx, n, 2)?.dtype
    } else {
        match n.int("output_dtype", 0) {
            0 => DataType::UINT8,
            t => tensor::dtype_of(t as i32)
                .ok_or_else(|| convert_err!(Unsupported;"output_dtype {t} is not supported"))?,
        }
    };
    let (lo, hi) = int_range(out_dt)?;
    let f = DataType::FLOAT32;
    let a = x(ctx, n, 0)?;
    let a = astype(ctx, a, xv.dtype, f)?;
    let s = per_axis(ctx, n, 1, rank, axis, &dim)?;
    let s = astype(ctx, s, val(ctx, n, 1)?.dtype, f)?;
    let q = emit(ctx, "divide", vec![a, s], &[])?;
    let mut q = emit(ctx, "round", vec![q], &[])?;
    if n.has(2) {
        let z = per_axis(ctx, n, 2, rank, axis, &dim)?;
        let z = astype(ctx, z, out_dt, f)?;
        q = emit(ctx, "add", vec![q, z], &[])?;
    }
    let q = emit(ctx, "maximum", vec![q, scalar(f, lo)], &[])?;
    let q = emit(ctx, "minimum", vec![q, scalar(f, hi)], &[])?;
    out1(ctx.op("astype", vec![q], &[("dtype", AttrValue::DataType(out_dt))])?)
}

/// `DequantizeLinear`: `(x - zero_point) * scale` in the scale's type (`output_dtype`
/// when given).
pub fn dequantize_linear(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let shape = xv.shape.clone().ok_or("input has unknown shape")?;
    let rank = shape.len();
    let axis = quant_axis(n, rank)?;
    let dim = shape.get(axis).cloned().unwrap_or(PrimExpr::int(1));
    let sdt = val(ctx, n, 1)?.dtype;
    let out_dt = match n.int("output_dtype", 0) {
        0 => sdt,
        t => tensor::dtype_of(t as i32).ok_or_else(|| convert_err!(Unsupported;"output_dtype {t} is not supported"))?,
    };
    let f = DataType::FLOAT32;
    let a = x(ctx, n, 0)?;
    let mut a = astype(ctx, a, xv.dtype, f)?;
    if n.has(2) {
        let z = per_axis(ctx, n, 2, rank, axis, &dim)?;
        let z = astype(ctx, z, val(ctx, n, 2)?.dtype, f)?;
        a = emit(ctx, "subtract", vec![a, z], &[])?;
    }
    let s = per_axis(ctx, n, 1, rank, axis, &dim)?;
    let s = astype(ctx, s, sdt, f)?;
    let y = emit(ctx, "multiply", vec![a, s], &[])?;
    if out_dt == f {
        return out1(tval_leaf(ctx, y)?);
    }
    out1(ctx.op("astype", vec![y], &[("dtype", AttrValue::DataType(out_dt))])?)
}

/// `DynamicQuantizeLinear`: uint8 quantization with the scale and zero point of the
/// input's range (widened to include 0).
pub fn dynamic_quantize_linear(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let f = DataType::FLOAT32;
    let a = x(ctx, n, 0)?;
    let mx = emit(ctx, "max", vec![a.clone()], &[])?;
    let mn = emit(ctx, "min", vec![a.clone()], &[])?;
    let mx = emit(ctx, "maximum", vec![mx, scalar(f, 0.0)], &[])?;
    let mn = emit(ctx, "minimum", vec![mn, scalar(f, 0.0)], &[])?;
    let range = emit(ctx, "subtract", vec![mx, mn.clone()], &[])?;
    let scale = ctx.op("divide", vec![range, scalar(f, 255.0)], &[])?;
    let sl = ctx.leaf(&scale)?;
    let z = emit(ctx, "divide", vec![mn, sl.clone()], &[])?;
    let z = emit(ctx, "subtract", vec![scalar(f, 0.0), z], &[])?;
    let z = emit(ctx, "round", vec![z], &[])?;
    let z = emit(ctx, "maximum", vec![z, scalar(f, 0.0)], &[])?;
    let z = emit(ctx, "minimum", vec![z, scalar(f, 255.0)], &[])?;
    let q = emit(ctx, "divide", vec![a, sl], &[])?;
    let q = emit(ctx, "round", vec![q], &[])?;
    let q = emit(ctx, "add", vec![q, z.clone()], &[])?;
    let q = emit(ctx, "maximum", vec![q, scalar(f, 0.0)], &[])?;
    let q = emit(ctx, "minimum", vec![q, scalar(f, 255.0)], &[])?;
    let u8a = [("dtype", AttrValue::DataType(DataType::UINT8))];
    let y = ctx.op("astype", vec![q], &u8a)?;
    let zp = ctx.op("astype", vec![z], &u8a)?;
    Ok(vec![y, scale, zp])
}

/// `Swish`: `x * sigmoid(alpha * x)`.
pub fn swish(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    let alpha = n.float("alpha", 1.0);
    let s = if alpha == 1.0 {
        a.clone()
    } else {
        emit(ctx, "multiply", vec![a.clone(), scalar(dt, alpha)], &[])?
    };
    let s = emit(ctx, "sigmoid", vec![s], &[])?;
    out1(ctx.op("multiply", vec![a, s], &[])?)
}

/// `Shrink`: `x + bias` below `-lambd`, `x - bias` above `lambd`, else 0.
pub fn shrink(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let (lambd, bias) = (n.float("lambd", 0.5), n.float("bias", 0.0));
    let a = x(ctx, n, 0)?;
    let lo = emit(ctx, "less", vec![a.clone(), scalar(dt, -lambd)], &[])?;
    let hi = emit(ctx, "greater", vec![a.clone(), scalar(dt, lambd)], &[])?;
    let plus = emit(ctx, "add", vec![a.clone(), scalar(dt, bias)], &[])?;
    let minus = emit(ctx, "subtract", vec![a, scalar(dt, bias)], &[])?;
    let inner = emit(ctx, "where", vec![hi, minus, scalar(dt, 0.0)], &[])?;
    out1(ctx.op("where", vec![lo, plus, inner], &[])?)
}

/// `Hardmax`: the one-hot of the first maximum along `axis`.
pub fn hardmax(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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
pub fn lp_normalization(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

fn static4(ctx: &Ctx, n: &Node) -> Result<[i64; 4], ConvertError> {
    let s = val(ctx, n, 0)?.const_shape().ok_or("a static 4-D input is needed")?;
    <[i64; 4]>::try_from(s.as_slice()).map_err(|_| ConvertError::from("the input must be 4-D"))
}

/// `DepthToSpace` (DCR and CRD modes): reshape, transpose, reshape.
pub fn depth_to_space(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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
    let r = reshape(ctx, a, ints(&dims))?;
    let t = emit(ctx, "permute_dims", vec![r], &[("axes", ints_attr(&perm))])?;
    out1(ctx.op("reshape", vec![t, Expr::shape(ints(&[b, c2, h * bs, w * bs]))], &[])?)
}

/// `SpaceToDepth` (DCR and CRD modes): reshape, transpose, reshape.
pub fn space_to_depth(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let [b, c, h, w] = static4(ctx, n)?;
    let bs = n.int("blocksize", 0);
    if bs <= 0 || h % bs != 0 || w % bs != 0 {
        return Err(convert_err!("blocksize {bs} does not divide the spatial dimensions"));
    }
    let a = x(ctx, n, 0)?;
    let r = reshape(ctx, a, ints(&[b, c, h / bs, bs, w / bs, bs]))?;
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

/// `EyeLike`: ones on the `k`-th diagonal of a 2-D tensor of the input's shape, a
/// constant.
pub fn eye_like(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let s = v.const_shape().ok_or("EyeLike needs a static shape")?;
    if s.len() != 2 {
        return Err("the input must be 2-D".into());
    }
    let dt = match n.attr_i("dtype") {
        Some(t) => tensor::dtype_of(t as i32).ok_or_else(|| convert_err!(Unsupported;"dtype {t} is not supported"))?,
        None => v.dtype,
    };
    let k = n.int("k", 0);
    let mut data = Vec::new();
    for i in 0..s[0] {
        for j in 0..s[1] {
            data.extend(tensor::encode(dt, (j - i == k) as i64 as f64));
        }
    }
    let out = n.outputs.first().cloned().unwrap_or_default();
    out1(array_value(
        &out,
        NDArray {
            dtype: dt,
            shape: s,
            data,
        },
    ))
}

/// `GroupNormalization`: `R.nn.group_norm` over the channel axis 1 (a per-group
/// scale and bias of opset 18 are repeated per channel).
pub fn group_norm(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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
pub fn mvn(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

/// `OneHot`: `values[1]` where the (wrapped) index equals the position along `axis`,
/// else `values[0]`; the depth must be known when importing.
pub fn one_hot(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let iv = val(ctx, n, 0)?;
    let rank = iv.rank().ok_or("indices of unknown rank")?;
    let depth = match val(ctx, n, 1)?.known {
        Some(Known::Int(v)) if v.len() == 1 => v[0].as_int().ok_or("a symbolic depth")?,
        Some(Known::Float(v)) if v.len() == 1 => v[0] as i64,
        _ => return Err(crate::ops::must_be_known(n, 1)),
    };
    let axis = norm_axis(n.int("axis", -1), rank + 1)?;
    let i = x(ctx, n, 0)?;
    let i = astype(ctx, i, iv.dtype, DataType::INT64)?;
    let neg = emit(ctx, "less", vec![i.clone(), scalar(DataType::INT64, 0.0)], &[])?;
    let wrapped = emit(ctx, "add", vec![i.clone(), scalar(DataType::INT64, depth as f64)], &[])?;
    let i = emit(ctx, "where", vec![neg, wrapped, i], &[])?;
    let p = |v: i64| Expr::new(ExprKind::PrimValue(PrimExpr::int(v)));
    let oh = emit(
        ctx,
        "one_hot",
        vec![i, p(1), p(0)],
        &[("depth", AttrValue::Int(depth)), ("axis", AttrValue::Int(axis as i64))],
    )?;
    let cond = emit(
        ctx,
        "astype",
        vec![oh],
        &[("dtype", AttrValue::DataType(DataType::BOOL))],
    )?;
    let values = x(ctx, n, 2)?;
    let take = |ctx: &mut Ctx, k: i64| -> Result<Expr, ConvertError> {
        let idx = crate::convert::constant(DataType::INT64, vec![], std::iter::once(k.to_le_bytes().to_vec()));
        emit(ctx, "take", vec![values.clone(), idx], &[("axis", AttrValue::Int(0))])
    };
    let (off, on) = (take(ctx, 0)?, take(ctx, 1)?);
    out1(ctx.op("where", vec![cond, on, off], &[])?)
}

/// `ReverseSequence`: `R.reverse_sequence`.
pub fn reverse_sequence(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let (a, l) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    out1(ctx.op(
        "reverse_sequence",
        vec![a, l],
        &[
            ("seq_axis", AttrValue::Int(n.int("time_axis", 0))),
            ("batch_axis", AttrValue::Int(n.int("batch_axis", 1))),
        ],
    )?)
}

/// `LpPool`: `(sum over the window of |x|^p)^(1/p)`, the sum an average pool with
/// padding counted, times the window size.
pub fn lp_pool(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

/// `strided_slice` of one axis.
pub(crate) fn slice_axis(
    ctx: &mut Ctx,
    e: Expr,
    axis: i64,
    begin: i64,
    end: i64,
    stride: i64,
) -> Result<Expr, ConvertError> {
    let t = |v: i64| Expr::tuple(vec![Expr::new(ExprKind::PrimValue(PrimExpr::int(v)))]);
    emit(ctx, "strided_slice", vec![e, t(axis), t(begin), t(end), t(stride)], &[])
}

pub(crate) fn concat(ctx: &mut Ctx, parts: Vec<Expr>, axis: i64) -> Result<Expr, ConvertError> {
    emit(
        ctx,
        "concat",
        vec![Expr::tuple(parts)],
        &[("axis", AttrValue::Int(axis))],
    )
}

/// A known scalar input as an integer.
pub(crate) fn known_scalar(ctx: &Ctx, n: &Node, i: usize) -> Result<i64, ConvertError> {
    match val(ctx, n, i)?.known {
        Some(Known::Int(v)) if v.len() == 1 => v[0].as_int().ok_or_else(|| ConvertError::from("a symbolic size")),
        Some(Known::Float(v)) if v.len() == 1 => Ok(v[0] as i64),
        _ => Err(crate::ops::must_be_known(n, i)),
    }
}

/// `HannWindow`, `HammingWindow`, `BlackmanWindow`: a constant of the known size.
pub fn window(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

/// `CenterCropPad`: a centered slice where the target is smaller, a centered zero pad
/// where it is larger.
pub fn center_crop_pad(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let shape = val(ctx, n, 0)?.const_shape().ok_or("a static input shape is needed")?;
    let r = shape.len();
    let target: Vec<i64> = match val(ctx, n, 1)?.const_ints() {
        Some(t) => t,
        None => return Err(crate::ops::must_be_known(n, 1)),
    };
    let axes: Vec<usize> = match n.ints("axes") {
        Some(a) => a.iter().map(|&v| norm_axis(v, r)).collect::<Result<_, _>>()?,
        None => (0..r).collect(),
    };
    if target.len() != axes.len() {
        return Err("shape does not match the axes".into());
    }
    let mut cur = x(ctx, n, 0)?;
    let mut width = vec![0i64; 2 * r];
    for (&a, &sh) in axes.iter().zip(&target) {
        let dim = shape[a];
        if sh < dim {
            let d = (dim - sh) / 2;
            cur = slice_axis(ctx, cur, a as i64, d, d + sh, 1)?;
        } else if sh > dim {
            let d = (sh - dim) / 2;
            width[2 * a] = d;
            width[2 * a + 1] = sh - dim - d;
        }
    }
    if width.iter().any(|&w| w != 0) {
        cur = emit(
            ctx,
            "nn.pad",
            vec![cur],
            &[
                ("pad_width", ints_attr(&width)),
                ("pad_value", AttrValue::Float(0.0)),
                ("pad_mode", AttrValue::Str("constant".into())),
            ],
        )?;
    }
    out1(tval_leaf(ctx, cur).or_else(|_| val(ctx, n, 0))?)
}

/// `SwiGLU`: `a * sigmoid(alpha * a) * b`.
pub fn swiglu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let (a, b) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    let alpha = n.float("alpha", 1.0);
    let s = if alpha == 1.0 {
        a.clone()
    } else {
        emit(ctx, "multiply", vec![a.clone(), scalar(dt, alpha)], &[])?
    };
    let s = emit(ctx, "sigmoid", vec![s], &[])?;
    let sw = emit(ctx, "multiply", vec![a, s], &[])?;
    out1(ctx.op("multiply", vec![sw, b], &[])?)
}

/// `RotaryEmbedding`: rotation of the first `rotary_embedding_dim` features of each
/// head by the cached cosines and sines (halves or interleaved pairs).
pub fn rotary_embedding(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let shape = xv.const_shape().ok_or("a static input shape is needed")?;
    let mut cur = x(ctx, n, 0)?;
    let (b, s, h, d) = match *shape.as_slice() {
        [b, h, s, d] => {
            cur = emit(ctx, "permute_dims", vec![cur], &[("axes", ints_attr(&[0, 2, 1, 3]))])?;
            (b, s, h, d)
        }
        [b, s, hidden] => {
            let h = n.int("num_heads", 0);
            if h <= 0 || hidden % h != 0 {
                return Err("num_heads must divide the hidden size of a 3-D input".into());
            }
            cur = reshape(ctx, cur, ints(&[b, s, h, hidden / h]))?;
            (b, s, h, hidden / h)
        }
        _ => return Err("the input must be 3-D or 4-D".into()),
    };
    let rd = match n.int("rotary_embedding_dim", 0) {
        0 => d,
        v => v,
    };
    if rd > d || rd % 2 != 0 {
        return Err(convert_err!("rotary_embedding_dim {rd} does not fit head size {d}"));
    }
    let half = rd / 2;
    let (mut cos, mut sin) = (x(ctx, n, 1)?, x(ctx, n, 2)?);
    if n.has(3) {
        let p = x(ctx, n, 3)?;
        cos = emit(ctx, "take", vec![cos, p.clone()], &[("axis", AttrValue::Int(0))])?;
        sin = emit(ctx, "take", vec![sin, p], &[("axis", AttrValue::Int(0))])?;
    }
    cos = emit(ctx, "expand_dims", vec![cos], &[("axis", ints_attr(&[2]))])?;
    sin = emit(ctx, "expand_dims", vec![sin], &[("axis", ints_attr(&[2]))])?;
    let xr = if rd < d {
        slice_axis(ctx, cur.clone(), 3, 0, rd, 1)?
    } else {
        cur.clone()
    };
    let interleaved = n.int("interleaved", 0) != 0;
    let (x1, x2) = if interleaved {
        (
            slice_axis(ctx, xr.clone(), 3, 0, rd, 2)?,
            slice_axis(ctx, xr, 3, 1, rd, 2)?,
        )
    } else {
        (
            slice_axis(ctx, xr.clone(), 3, 0, half, 1)?,
            slice_axis(ctx, xr, 3, half, rd, 1)?,
        )
    };
    let c1 = emit(ctx, "multiply", vec![cos.clone(), x1.clone()], &[])?;
    let s2 = emit(ctx, "multiply", vec![sin.clone(), x2.clone()], &[])?;
    let real = emit(ctx, "subtract", vec![c1, s2], &[])?;
    let s1 = emit(ctx, "multiply", vec![sin, x1], &[])?;
    let c2 = emit(ctx, "multiply", vec![cos, x2], &[])?;
    let imag = emit(ctx, "add", vec![s1, c2], &[])?;
    let mut rot = if interleaved {
        let re = emit(ctx, "expand_dims", vec![real], &[("axis", ints_attr(&[4]))])?;
        let im = emit(ctx, "expand_dims", vec![imag], &[("axis", ints_attr(&[4]))])?;
        let c = concat(ctx, vec![re, im], 4)?;
        reshape(ctx, c, ints(&[b, s, h, rd]))?
    } else {
        concat(ctx, vec![real, imag], 3)?
    };
    if rd < d {
        let rest = slice_axis(ctx, cur, 3, rd, d, 1)?;
        rot = concat(ctx, vec![rot, rest], 3)?;
    }
    let y = if shape.len() == 3 {
        reshape(ctx, rot, ints(&shape))?
    } else {
        emit(ctx, "permute_dims", vec![rot], &[("axes", ints_attr(&[0, 2, 1, 3]))])?
    };
    out1(tval_leaf(ctx, y)?)
}

/// Input `i` as int32 minus the zero point of input `z` (when given).
fn centered_i32(ctx: &mut Ctx, n: &Node, i: usize, z: usize) -> Result<Expr, ConvertError> {
    let a = x(ctx, n, i)?;
    let a = astype(ctx, a, val(ctx, n, i)?.dtype, DataType::INT32)?;
    if !n.has(z) {
        return Ok(a);
    }
    let zp = x(ctx, n, z)?;
    let zp = astype(ctx, zp, val(ctx, n, z)?.dtype, DataType::INT32)?;
    emit(ctx, "subtract", vec![a, zp], &[])
}

/// `MatMulInteger`: the int32 product of the inputs less their zero points.
pub fn matmul_integer(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = centered_i32(ctx, n, 0, 2)?;
    let b = centered_i32(ctx, n, 1, 3)?;
    out1(ctx.op("matmul", vec![a, b], &[])?)
}

/// `QLinearMatMul`: the int32 product, rescaled by `a_scale * b_scale / y_scale`,
/// rounded, offset by the output zero point and saturated.
pub fn qlinear_matmul(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = centered_i32(ctx, n, 0, 2)?;
    let b = centered_i32(ctx, n, 3, 5)?;
    let c = emit(ctx, "matmul", vec![a, b], &[])?;
    let f = DataType::FLOAT32;
    let c = astype(ctx, c, DataType::INT32, f)?;
    let scale = |ctx: &mut Ctx, i: usize| -> Result<Expr, ConvertError> {
        let s = x(ctx, n, i)?;
        astype(ctx, s, val(ctx, n, i)?.dtype, f)
    };
    let (sa, sb, sy) = (scale(ctx, 1)?, scale(ctx, 4)?, scale(ctx, 6)?);
    let s = emit(ctx, "multiply", vec![sa, sb], &[])?;
    let s = emit(ctx, "divide", vec![s, sy], &[])?;
    let mut d = emit(ctx, "multiply", vec![c, s], &[])?;
    let out_dt = if n.has(7) {
        let z = x(ctx, n, 7)?;
        let zdt = val(ctx, n, 7)?.dtype;
        let z = astype(ctx, z, zdt, f)?;
        d = emit(ctx, "add", vec![d, z], &[])?;
        zdt
    } else {
        val(ctx, n, 0)?.dtype
    };
    let (lo, hi) = int_range(out_dt)?;
    let d = emit(ctx, "round", vec![d], &[])?;
    let d = emit(ctx, "maximum", vec![d, scalar(f, lo)], &[])?;
    let d = emit(ctx, "minimum", vec![d, scalar(f, hi)], &[])?;
    out1(ctx.op("astype", vec![d], &[("dtype", AttrValue::DataType(out_dt))])?)
}

/// `AffineGrid`: `theta` applied to the homogeneous coordinates of the output grid
/// (a constant of the known size), `(N, H, W, 2)` or `(N, D, H, W, 3)`.
pub fn affine_grid(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let size = val(ctx, n, 1)?
        .const_ints()
        .ok_or_else(|| crate::ops::must_be_known(n, 1))?;
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

/// `DFT` (opsets 17 to 20): the transform along `axis` as matrix products with
/// constant cosine and sine matrices (forward, inverse, one-sided forward and the
/// one-sided inverse of a Hermitian spectrum), `dft_length` zero-padding or truncating.
pub fn dft(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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
            concat(ctx, vec![re, im], r as i64 - 1)?
        }
        _ => re,
    };
    out1(tval_leaf(ctx, y)?)
}

/// `Col2Im`: the sum of the sliding blocks back into the image, as the product with
/// a constant `(K * L, H * W)` placement matrix.
pub fn col2im(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let shape = xv.const_shape().ok_or("a static input shape is needed")?;
    let img = val(ctx, n, 1)?
        .const_ints()
        .ok_or_else(|| crate::ops::must_be_known(n, 1))?;
    let blk = val(ctx, n, 2)?
        .const_ints()
        .ok_or_else(|| crate::ops::must_be_known(n, 2))?;
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
    let a = reshape(ctx, a, ints(&[shape[0], c, kk * l]))?;
    let y = emit(ctx, "matmul", vec![a, mat], &[])?;
    let mut dims = vec![shape[0], c];
    dims.extend_from_slice(&img);
    out1(ctx.op("reshape", vec![y, Expr::shape(ints(&dims))], &[])?)
}

/// `MaxUnpool`: the values scattered to their flat indices in a zero tensor of the
/// output shape.
pub fn max_unpool(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let shape = xv.const_shape().ok_or("a static input shape is needed")?;
    let k = shape.len().checked_sub(2).ok_or("the input must have spatial axes")?;
    let out: Vec<i64> = if n.has(2) {
        val(ctx, n, 2)?
            .const_ints()
            .ok_or_else(|| crate::ops::must_be_known(n, 2))?
    } else {
        let kernel = n.ints("kernel_shape").ok_or("kernel_shape is required")?;
        let strides = n.ints("strides").unwrap_or_else(|| vec![1; k]);
        let pads = n.ints("pads").unwrap_or_else(|| vec![0; 2 * k]);
        let mut o = shape[..2].to_vec();
        for d in 0..k {
            o.push((shape[d + 2] - 1) * strides[d] - pads[d] - pads[d + k] + kernel[d]);
        }
        o
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
    let a = reshape(ctx, a, ints(&[numel]))?;
    let i = x(ctx, n, 1)?;
    let i = reshape(ctx, i, ints(&[numel]))?;
    let s = emit(
        ctx,
        "scatter_elements",
        vec![zeros, i, a],
        &[
            ("axis", AttrValue::Int(0)),
            ("reduction", AttrValue::Str("update".into())),
        ],
    )?;
    out1(ctx.op("reshape", vec![s, Expr::shape(ints(&out))], &[])?)
}

/// `Adagrad`, `Adam` and `Momentum` (domain `ai.onnx.preview.training`): one update of
/// every optimized tensor; the iteration count `T` must be known when importing.
pub fn optimizer(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let per = match n.op_type.as_str() {
        "Adam" => 4,
        _ => 3,
    };
    let inputs = n.inputs.len();
    if inputs < 2 + per || !(inputs - 2).is_multiple_of(per) {
        return Err("unexpected number of inputs".into());
    }
    let count = (inputs - 2) / per;
    let t = known_scalar(ctx, n, 1)?;
    let dt = val(ctx, n, 2)?.dtype;
    let rv = val(ctx, n, 0)?;
    let r = x(ctx, n, 0)?;
    let r = astype(ctx, r, rv.dtype, dt)?;
    let s = |v: f64| scalar(dt, v);
    let norm = n.float("norm_coefficient", 0.0);
    let mut outs: Vec<Vec<TVal>> = vec![Vec::new(); per - 1];
    for i in 0..count {
        let xe = x(ctx, n, 2 + i)?;
        let g = x(ctx, n, 2 + count + i)?;
        let nx = emit(ctx, "multiply", vec![xe.clone(), s(norm)], &[])?;
        let gr = emit(ctx, "add", vec![nx, g], &[])?;
        let new: Vec<Expr> = match n.op_type.as_str() {
            "Adagrad" => {
                let h = x(ctx, n, 2 + 2 * count + i)?;
                let decay = n.float("decay_factor", 0.0);
                let lr = emit(ctx, "divide", vec![r.clone(), s(1.0 + t as f64 * decay)], &[])?;
                let g2 = emit(ctx, "multiply", vec![gr.clone(), gr.clone()], &[])?;
                let h_new = emit(ctx, "add", vec![h, g2], &[])?;
                let hs = emit(ctx, "sqrt", vec![h_new.clone()], &[])?;
                let hs = emit(ctx, "add", vec![hs, s(n.float("epsilon", 0.0))], &[])?;
                let step = emit(ctx, "multiply", vec![lr, gr], &[])?;
                let step = emit(ctx, "divide", vec![step, hs], &[])?;
                vec![emit(ctx, "subtract", vec![xe, step], &[])?, h_new]
            }
            "Adam" => {
                let v = x(ctx, n, 2 + 2 * count + i)?;
                let h = x(ctx, n, 2 + 3 * count + i)?;
                let (alpha, beta) = (n.float("alpha", 0.9), n.float("beta", 0.999));
                let av = emit(ctx, "multiply", vec![v, s(alpha)], &[])?;
                let bg = emit(ctx, "multiply", vec![gr.clone(), s(1.0 - alpha)], &[])?;
                let v_new = emit(ctx, "add", vec![av, bg], &[])?;
                let bh = emit(ctx, "multiply", vec![h, s(beta)], &[])?;
                let g2 = emit(ctx, "multiply", vec![gr.clone(), gr], &[])?;
                let g2 = emit(ctx, "multiply", vec![g2, s(1.0 - beta)], &[])?;
                let h_new = emit(ctx, "add", vec![bh, g2], &[])?;
                let hs = emit(ctx, "sqrt", vec![h_new.clone()], &[])?;
                let hs = emit(ctx, "add", vec![hs, s(n.float("epsilon", 0.0))], &[])?;
                let factor = if t > 0 {
                    (1.0 - beta.powi(t as i32)).sqrt() / (1.0 - alpha.powi(t as i32))
                } else {
                    1.0
                };
                let lr = emit(ctx, "multiply", vec![r.clone(), s(factor)], &[])?;
                let q = emit(ctx, "divide", vec![v_new.clone(), hs], &[])?;
                let step = emit(ctx, "multiply", vec![lr, q], &[])?;
                let x_new = emit(ctx, "subtract", vec![xe, step], &[])?;
                let post = n.float("norm_coefficient_post", 0.0);
                let x_new = emit(ctx, "multiply", vec![x_new, s(1.0 - post)], &[])?;
                vec![x_new, v_new, h_new]
            }
            _ => {
                let v = x(ctx, n, 2 + 2 * count + i)?;
                let (alpha, beta) = (n.float("alpha", 0.0), n.float("beta", 0.0));
                let beta = if t > 0 { beta } else { 1.0 };
                let av = emit(ctx, "multiply", vec![v, s(alpha)], &[])?;
                let bg = emit(ctx, "multiply", vec![gr.clone(), s(beta)], &[])?;
                let v_new = emit(ctx, "add", vec![av, bg], &[])?;
                let dir = match n.string("mode").as_deref() {
                    Some("nesterov") => {
                        let av = emit(ctx, "multiply", vec![v_new.clone(), s(alpha)], &[])?;
                        emit(ctx, "add", vec![gr, av], &[])?
                    }
                    _ => v_new.clone(),
                };
                let step = emit(ctx, "multiply", vec![r.clone(), dir], &[])?;
                vec![emit(ctx, "subtract", vec![xe, step], &[])?, v_new]
            }
        };
        for (k, e) in new.into_iter().enumerate() {
            outs[k].push(tval_leaf(ctx, e)?);
        }
    }
    Ok(outs.into_iter().flatten().collect())
}

/// `TensorScatter`: the update written into the cache along `axis` from each batch
/// entry's write index (wrapping around in `circular` mode), a `scatter_elements`.
pub fn tensor_scatter(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let cache = val(ctx, n, 0)?.const_shape().ok_or("a static cache shape is needed")?;
    let upd = val(ctx, n, 1)?.const_shape().ok_or("a static update shape is needed")?;
    let r = cache.len();
    if upd.len() != r || r < 2 {
        return Err("the cache and the update must have the same rank (at least 2)".into());
    }
    let axis = norm_axis(n.int("axis", -2), r)?;
    if axis == 0 {
        return Err("the axis cannot be the batch axis".into());
    }
    let i64t = DataType::INT64;
    let mut pos_shape = vec![1i64; r];
    pos_shape[axis] = upd[axis];
    let pos = crate::convert::constant(i64t, pos_shape, (0..upd[axis]).map(|v| v.to_le_bytes().to_vec()));
    let idx = if n.has(2) {
        let wv = val(ctx, n, 2)?;
        let w = x(ctx, n, 2)?;
        let w = astype(ctx, w, wv.dtype, i64t)?;
        let mut ws = vec![1i64; r];
        ws[0] = cache[0];
        let w = reshape(ctx, w, ints(&ws))?;
        emit(ctx, "add", vec![w, pos], &[])?
    } else {
        pos
    };
    let idx = match n.string("mode").as_deref() {
        None | Some("linear") => idx,
        Some("circular") => emit(ctx, "floor_mod", vec![idx, scalar(i64t, cache[axis] as f64)], &[])?,
        Some(o) => return Err(convert_err!(Unsupported;"mode `{o}` is not supported")),
    };
    let idx = emit(ctx, "broadcast_to", vec![idx, Expr::shape(ints(&upd))], &[])?;
    let (c, u) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    out1(ctx.op(
        "scatter_elements",
        vec![c, idx, u],
        &[
            ("axis", AttrValue::Int(axis as i64)),
            ("reduction", AttrValue::Str("update".into())),
        ],
    )?)
}

/// `CausalConvWithState`: a depthwise causal 1-D convolution over the past state (or
/// zeros) followed by the input, with an optional bias and SiLU; the second output is
/// the last `k - 1` positions as the next state.
pub fn causal_conv_with_state(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let [b, c, l] = <[i64; 3]>::try_from(xv.const_shape().ok_or("a static input shape is needed")?.as_slice())
        .map_err(|_| ConvertError::from("the input must be 3-D"))?;
    let w_shape = val(ctx, n, 1)?.const_shape().ok_or("a static weight shape is needed")?;
    let k = *w_shape.last().ok_or("the weight must be 3-D")?;
    if w_shape != [c, 1, k] || k < 1 {
        return Err("the weight must be (channels, 1, k)".into());
    }
    let dt = xv.dtype;
    let a = x(ctx, n, 0)?;
    let padded = if k == 1 {
        a
    } else {
        let past = if n.has(3) {
            x(ctx, n, 3)?
        } else {
            crate::convert::constant(
                dt,
                vec![b, c, k - 1],
                (0..b * c * (k - 1)).map(|_| tensor::encode(dt, 0.0)),
            )
        };
        concat(ctx, vec![past, a], 2)?
    };
    let w = x(ctx, n, 1)?;
    let w = reshape(ctx, w, ints(&[c, k]))?;
    let mut acc: Option<Expr> = None;
    for j in 0..k {
        let xs = slice_axis(ctx, padded.clone(), 2, j, j + l, 1)?;
        let wj = slice_axis(ctx, w.clone(), 1, j, j + 1, 1)?;
        let t = emit(ctx, "multiply", vec![xs, wj], &[])?;
        acc = Some(match acc {
            None => t,
            Some(s) => emit(ctx, "add", vec![s, t], &[])?,
        });
    }
    let mut y = acc.ok_or("an empty kernel")?;
    if n.has(2) {
        let bias = x(ctx, n, 2)?;
        let bias = reshape(ctx, bias, ints(&[c, 1]))?;
        y = emit(ctx, "add", vec![y, bias], &[])?;
    }
    match n.string("activation").as_deref() {
        None | Some("none") => {}
        Some("silu" | "swish") => {
            let s = emit(ctx, "sigmoid", vec![y.clone()], &[])?;
            y = emit(ctx, "multiply", vec![y, s], &[])?;
        }
        Some(o) => return Err(convert_err!(Unsupported;"activation `{o}` is not supported")),
    }
    let total = l + k - 1;
    let state = slice_axis(ctx, padded, 2, total - (k - 1), total, 1)?;
    Ok(vec![tval_leaf(ctx, y)?, tval_leaf(ctx, state)?])
}

/// `(B, T, H * D)` as `(B, H, T, D)`.
fn heads4(ctx: &mut Ctx, e: Expr, s: &[i64], heads: i64) -> Result<Expr, ConvertError> {
    if heads <= 0 || s[2] % heads != 0 {
        return Err(convert_err!("{} is not a multiple of {heads} heads", s[2]));
    }
    let r = reshape(ctx, e, ints(&[s[0], s[1], heads, s[2] / heads]))?;
    emit(ctx, "permute_dims", vec![r], &[("axes", ints_attr(&[0, 2, 1, 3]))])
}

/// Step `t` of a `(B, H, T, D)` tensor: `(B, H, D)`.
fn step(ctx: &mut Ctx, e: Expr, t: i64) -> Result<Expr, ConvertError> {
    let s = slice_axis(ctx, e, 2, t, t + 1, 1)?;
    emit(ctx, "squeeze", vec![s], &[("axis", ints_attr(&[2]))])
}

/// `LinearAttention`: the recurrent state `S += k v^T` (decayed by `exp(decay)` when
/// gated, with the delta rule's correction `beta (v - S^T k)`), read by each query,
/// unrolled over the (static) sequence in float32.
pub fn linear_attention(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rule = n.string("update_rule").unwrap_or_else(|| "gated_delta".into());
    let (gating, delta) = match rule.as_str() {
        "linear" => (false, false),
        "gated" => (true, false),
        "delta" => (false, true),
        "gated_delta" => (true, true),
        o => return Err(convert_err!(Unsupported;"update_rule `{o}` is not supported")),
    };
    let (hq, hkv) = (n.int("q_num_heads", 0), n.int("kv_num_heads", 0));
    if hq <= 0 || hkv <= 0 || hq % hkv != 0 {
        return Err("q_num_heads must be a positive multiple of kv_num_heads".into());
    }
    let shape_of = |ctx: &Ctx, i: usize| -> Result<Vec<i64>, ConvertError> {
        let s = val(ctx, n, i)?.const_shape().ok_or("static shapes are needed")?;
        if s.len() != 3 {
            return Err("query, key, value, decay and beta must be 3-D".into());
        }
        Ok(s)
    };
    let (qs, ks, vs) = (shape_of(ctx, 0)?, shape_of(ctx, 1)?, shape_of(ctx, 2)?);
    let (b, t) = (qs[0], qs[1]);
    let dk = qs[2] / hq;
    let dv = vs[2] / hkv;
    let out_dt = val(ctx, n, 0)?.dtype;
    let f = DataType::FLOAT32;
    let load = |ctx: &mut Ctx, i: usize| -> Result<Expr, ConvertError> {
        let e = x(ctx, n, i)?;
        astype(ctx, e, val(ctx, n, i)?.dtype, f)
    };
    let q = load(ctx, 0)?;
    let q = heads4(ctx, q, &qs, hq)?;
    let k = load(ctx, 1)?;
    let k = heads4(ctx, k, &ks, hkv)?;
    let v = load(ctx, 2)?;
    let v = heads4(ctx, v, &vs, hkv)?;
    let decay = if gating {
        if !n.has(4) {
            return Err(convert_err!("update_rule `{rule}` needs decay"));
        }
        let ds = shape_of(ctx, 4)?;
        let d = load(ctx, 4)?;
        Some(if ds[2] == hkv {
            let r = reshape(ctx, d, ints(&[b, t, hkv, 1]))?;
            emit(ctx, "permute_dims", vec![r], &[("axes", ints_attr(&[0, 2, 1, 3]))])?
        } else {
            heads4(ctx, d, &ds, hkv)?
        })
    } else {
        None
    };
    let beta = if delta {
        if !n.has(5) {
            return Err(convert_err!("update_rule `{rule}` needs beta"));
        }
        let bs = shape_of(ctx, 5)?;
        let e = load(ctx, 5)?;
        let r = reshape(ctx, e, ints(&[b, t, bs[2], 1]))?;
        Some(emit(
            ctx,
            "permute_dims",
            vec![r],
            &[("axes", ints_attr(&[0, 2, 1, 3]))],
        )?)
    } else {
        None
    };
    let (mut state, state_dt) = if n.has(3) {
        (load(ctx, 3)?, val(ctx, n, 3)?.dtype)
    } else {
        let numel = b * hkv * dk * dv;
        (
            crate::convert::constant(f, vec![b, hkv, dk, dv], (0..numel).map(|_| tensor::encode(f, 0.0))),
            out_dt,
        )
    };
    let scale = match n.attr_f("scale") {
        Some(s) if s != 0.0 => s,
        _ => 1.0 / (dk as f64).sqrt(),
    };
    let mut outs = Vec::new();
    for i in 0..t {
        let qt = step(ctx, q.clone(), i)?;
        let kt = step(ctx, k.clone(), i)?;
        let mut vt = step(ctx, v.clone(), i)?;
        if let Some(d) = &decay {
            let g = step(ctx, d.clone(), i)?;
            let g = emit(ctx, "exp", vec![g], &[])?;
            let g = emit(ctx, "expand_dims", vec![g], &[("axis", ints_attr(&[3]))])?;
            state = emit(ctx, "multiply", vec![state, g], &[])?;
        }
        if let Some(bt) = &beta {
            let k2 = emit(ctx, "expand_dims", vec![kt.clone()], &[("axis", ints_attr(&[2]))])?;
            let got = emit(ctx, "matmul", vec![k2, state.clone()], &[])?;
            let got = emit(ctx, "squeeze", vec![got], &[("axis", ints_attr(&[2]))])?;
            let diff = emit(ctx, "subtract", vec![vt, got], &[])?;
            let bi = step(ctx, bt.clone(), i)?;
            vt = emit(ctx, "multiply", vec![bi, diff], &[])?;
        }
        let kc = emit(ctx, "expand_dims", vec![kt], &[("axis", ints_attr(&[3]))])?;
        let vr = emit(ctx, "expand_dims", vec![vt], &[("axis", ints_attr(&[2]))])?;
        let outer = emit(ctx, "multiply", vec![kc, vr], &[])?;
        state = emit(ctx, "add", vec![state, outer], &[])?;
        let read = if hq == hkv {
            state.clone()
        } else {
            emit(
                ctx,
                "repeat",
                vec![state.clone()],
                &[("repeats", AttrValue::Int(hq / hkv)), ("axis", AttrValue::Int(1))],
            )?
        };
        let q2 = emit(ctx, "expand_dims", vec![qt], &[("axis", ints_attr(&[2]))])?;
        let o = emit(ctx, "matmul", vec![q2, read], &[])?;
        outs.push(emit(ctx, "multiply", vec![o, scalar(f, scale)], &[])?);
    }
    let y = if outs.len() == 1 {
        outs.remove(0)
    } else {
        concat(ctx, outs, 2)?
    };
    let y = emit(ctx, "permute_dims", vec![y], &[("axes", ints_attr(&[0, 2, 1, 3]))])?;
    let y = reshape(ctx, y, ints(&[b, t, hq * dv]))?;
    let y = astype(ctx, y, f, out_dt)?;
    let st = astype(ctx, state, f, state_dt)?;
    Ok(vec![tval_leaf(ctx, y)?, tval_leaf(ctx, st)?])
}

/// `Einsum` as broadcasting products and sums: each operand's repeated indices are
/// reduced to their diagonal, its axes ordered and padded to every index of the
/// equation, the operands multiplied, and the indices absent from the output summed.
pub fn einsum(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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
            e = reshape(ctx, e, ints(&full))?;
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

/// `TopK` without a sort: each element's rank along the axis is the number of
/// elements before it in the order (greater, or equal at a smaller index, for the
/// largest), and the k first ranks are picked out by comparison.
pub fn topk(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let shape = xv.const_shape().ok_or("TopK needs a static shape")?;
    let r = shape.len();
    let axis = norm_axis(n.int("axis", -1), r)?;
    let k = if n.opset >= 10 {
        known_scalar(ctx, n, 1)?
    } else {
        n.int("k", 1)
    };
    let len = shape[axis];
    if k < 0 || k > len {
        return Err(convert_err!("k = {k} is out of range for an axis of {len}"));
    }
    if len > 4096 || shape.iter().product::<i64>() * len > 1 << 26 {
        return Err("TopK axis too long for the comparison form".into());
    }
    let largest = n.int("largest", 1) != 0;
    let mut a = x(ctx, n, 0)?;
    let mut perm: Vec<i64> = (0..r as i64).collect();
    perm.swap(axis, r - 1);
    if axis != r - 1 {
        a = emit(ctx, "permute_dims", vec![a], &[("axes", ints_attr(&perm))])?;
    }
    let xi = emit(ctx, "expand_dims", vec![a.clone()], &[("axis", ints_attr(&[r as i64]))])?;
    let xj = emit(ctx, "expand_dims", vec![a], &[("axis", ints_attr(&[r as i64 - 1]))])?;
    // before[i, j]: element j comes before element i
    let better = emit(
        ctx,
        if largest { "greater" } else { "less" },
        vec![xj.clone(), xi.clone()],
        &[],
    )?;
    let same = emit(ctx, "equal", vec![xj, xi.clone()], &[])?;
    let lower = crate::convert::constant(
        DataType::BOOL,
        vec![len, len],
        (0..len * len).map(|q| vec![((q % len) < (q / len)) as u8]),
    );
    let tie = emit(ctx, "logical_and", vec![same, lower], &[])?;
    let before = emit(ctx, "logical_or", vec![better, tie], &[])?;
    let before = astype(ctx, before, DataType::BOOL, DataType::INT64)?;
    let rank = emit(
        ctx,
        "sum",
        vec![before],
        &[("axis", ints_attr(&[r as i64])), ("keepdims", AttrValue::Bool(true))],
    )?;
    let slots = crate::convert::constant(DataType::INT64, vec![k], (0..k).map(|v| v.to_le_bytes().to_vec()));
    let pick = emit(ctx, "equal", vec![rank, slots], &[])?; // (..., len, k)
    let dt = xv.dtype;
    let vals = emit(ctx, "where", vec![pick.clone(), xi, scalar(dt, 0.0)], &[])?;
    let mut vals = emit(
        ctx,
        "sum",
        vec![vals],
        &[
            ("axis", ints_attr(&[r as i64 - 1])),
            ("keepdims", AttrValue::Bool(false)),
        ],
    )?;
    let pos = crate::convert::constant(
        DataType::INT64,
        vec![len, 1],
        (0..len).map(|v| v.to_le_bytes().to_vec()),
    );
    let ids = emit(ctx, "where", vec![pick, pos, scalar(DataType::INT64, 0.0)], &[])?;
    let mut ids = emit(
        ctx,
        "sum",
        vec![ids],
        &[
            ("axis", ints_attr(&[r as i64 - 1])),
            ("keepdims", AttrValue::Bool(false)),
        ],
    )?;
    if axis != r - 1 {
        vals = emit(ctx, "permute_dims", vec![vals], &[("axes", ints_attr(&perm))])?;
        ids = emit(ctx, "permute_dims", vec![ids], &[("axes", ints_attr(&perm))])?;
    }
    Ok(vec![tval_leaf(ctx, vals)?, tval_leaf(ctx, ids)?])
}

/// `v` reflected into `[lo, hi]` (repeatedly, by the nearer border), elementwise.
fn reflect(ctx: &mut Ctx, v: Expr, lo: f64, hi: f64) -> Result<Expr, ConvertError> {
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
pub fn grid_sample(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let xs = xv.const_shape().ok_or("a static input shape is needed")?;
    let gs = val(ctx, n, 1)?.const_shape().ok_or("a static grid shape is needed")?;
    let k = xs.len().checked_sub(2).ok_or("the input must have spatial axes")?;
    if !(1..=3).contains(&k) || gs.len() != k + 2 || gs[k + 1] != k as i64 || gs[0] != xs[0] {
        return Err("the grid must be (N, out..., k) for k spatial axes".into());
    }
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
    let f = DataType::FLOAT32;
    let i64t = DataType::INT64;
    let s = |v: f64| scalar(f, v);
    let (nb, c) = (xs[0], xs[1]);
    let dims = &xs[2..];
    let q: i64 = gs[1..=k].iter().product();
    let p: i64 = dims.iter().product();
    let g = x(ctx, n, 1)?;
    let g = astype(ctx, g, val(ctx, n, 1)?.dtype, f)?;
    let g = reshape(ctx, g, ints(&[nb, q, k as i64]))?;
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
        match pad.as_str() {
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
            let (pos, valid) = match pad.as_str() {
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
    let a = x(ctx, n, 0)?;
    let a = astype(ctx, a, xv.dtype, f)?;
    let a = reshape(ctx, a, ints(&[nb, c, p]))?;
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
    let y = reshape(ctx, y, ints(&out))?;
    let y = astype(ctx, y, f, xv.dtype)?;
    out1(tval_leaf(ctx, y)?)
}

/// `Binarizer` (domain `ai.onnx.ml`): 1 where the input exceeds `threshold`, else 0.
pub fn binarizer(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    let c = emit(ctx, "greater", vec![a, scalar(dt, n.float("threshold", 0.0))], &[])?;
    out1(ctx.op("where", vec![c, scalar(dt, 1.0), scalar(dt, 0.0)], &[])?)
}

/// `ArrayFeatureExtractor` (domain `ai.onnx.ml`): the elements at the given indices of
/// the last axis.
pub fn array_feature_extractor(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let (a, i) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    let iv = val(ctx, n, 1)?;
    let i = astype(ctx, i, iv.dtype, DataType::INT64)?;
    let count: i64 = iv
        .const_shape()
        .ok_or("the indices need a static shape")?
        .iter()
        .product();
    let i = reshape(ctx, i, ints(&[count]))?;
    out1(ctx.op("take", vec![a, i], &[("axis", AttrValue::Int(rank as i64 - 1))])?)
}

/// `BitCast` between integer types of one width (and bool to uint8): a conversion
/// that keeps the bits (two's complement wrap-around); bit casts that change the
/// kind of number (float to int) are not supported.
pub fn bit_cast(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let from = val(ctx, n, 0)?.dtype;
    let to_code = n.int("to", 0) as i32;
    let to = tensor::dtype_of(to_code)
        .ok_or_else(|| convert_err!(Unsupported;"bit cast to {} is not supported", tensor::onnx_type_name(to_code)))?;
    let same_width_ints = from.is_integer() && to.is_integer() && from.bytes() == to.bytes() && !to.is_bool();
    if !same_width_ints {
        return Err(convert_err!(Unsupported;"bit cast from {from} to {to} is not supported"));
    }
    let a = x(ctx, n, 0)?;
    if from == to {
        return out1(val(ctx, n, 0)?);
    }
    out1(ctx.op("astype", vec![a], &[("dtype", AttrValue::DataType(to))])?)
}

/// Input `i` as float32 minus the zero point of input `z` (when given).
pub(crate) fn centered_f32(ctx: &mut Ctx, n: &Node, i: usize, z: usize) -> Result<Expr, ConvertError> {
    let f = DataType::FLOAT32;
    let a = x(ctx, n, i)?;
    let a = astype(ctx, a, val(ctx, n, i)?.dtype, f)?;
    if !n.has(z) {
        return Ok(a);
    }
    let zp = x(ctx, n, z)?;
    let zp = astype(ctx, zp, val(ctx, n, z)?.dtype, f)?;
    // a per-channel zero point of the weight: (M,) as (M, 1, ...)
    let zr = val(ctx, n, z)?.rank().unwrap_or(0);
    let rank = val(ctx, n, i)?.rank().unwrap_or(0);
    let zp = if zr == 1 && i == 1 && rank > 1 {
        let m = val(ctx, n, z)?.const_shape().ok_or("zero point shape")?[0];
        let mut dims = vec![1i64; rank];
        dims[0] = m;
        reshape(ctx, zp, ints(&dims))?
    } else {
        zp
    };
    emit(ctx, "subtract", vec![a, zp], &[])
}

/// Edge or wrap padding of `a` (static `shape`) by ONNX-ordered `width`
/// (`[begin_0, end_0, begin_1, ...]` in Relax's order), built from slices and concats.
pub(crate) fn pad_by_slices(
    ctx: &mut Ctx,
    a: Expr,
    shape: &[i64],
    width: &[i64],
    wrap: bool,
) -> Result<TVal, ConvertError> {
    let mut cur = a;
    for (ax, &d) in shape.iter().enumerate() {
        let (lo, hi) = (width[2 * ax], width[2 * ax + 1]);
        if lo < 0 || hi < 0 {
            return Err(ConvertError::unsupported(
                "negative pads are not supported with edge or wrap",
            ));
        }
        if lo == 0 && hi == 0 {
            continue;
        }
        if d == 0 || (wrap && (lo > d || hi > d)) {
            return Err("the padding exceeds the axis".into());
        }
        let ax = ax as i64;
        let mut parts = Vec::new();
        if lo > 0 {
            parts.push(if wrap {
                slice_axis(ctx, cur.clone(), ax, d - lo, d, 1)?
            } else {
                let s = slice_axis(ctx, cur.clone(), ax, 0, 1, 1)?;
                emit(
                    ctx,
                    "repeat",
                    vec![s],
                    &[("repeats", AttrValue::Int(lo)), ("axis", AttrValue::Int(ax))],
                )?
            });
        }
        parts.push(cur.clone());
        if hi > 0 {
            parts.push(if wrap {
                slice_axis(ctx, cur.clone(), ax, 0, hi, 1)?
            } else {
                let s = slice_axis(ctx, cur.clone(), ax, d - 1, d, 1)?;
                emit(
                    ctx,
                    "repeat",
                    vec![s],
                    &[("repeats", AttrValue::Int(hi)), ("axis", AttrValue::Int(ax))],
                )?
            });
        }
        cur = concat(ctx, parts, ax)?;
    }
    tval_leaf(ctx, cur)
}

/// `Compress`: the slices along `axis` (the flattened input without one) whose
/// condition is true; the condition must be known when importing.
pub fn compress(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let cond = val(ctx, n, 1)?
        .const_ints()
        .ok_or_else(|| crate::ops::must_be_known(n, 1))?;
    let shape = val(ctx, n, 0)?.const_shape().ok_or("a static input shape is needed")?;
    let mut a = x(ctx, n, 0)?;
    let (axis, len) = match n.attr_i("axis") {
        Some(ax) => {
            let axis = norm_axis(ax, shape.len())?;
            (axis, shape[axis])
        }
        None => {
            let numel: i64 = shape.iter().product();
            a = reshape(ctx, a, ints(&[numel]))?;
            (0, numel)
        }
    };
    let keep: Vec<i64> = cond
        .iter()
        .take(len as usize)
        .enumerate()
        .filter(|(_, &c)| c != 0)
        .map(|(i, _)| i as i64)
        .collect();
    let idx = crate::convert::constant(
        DataType::INT64,
        vec![keep.len() as i64],
        keep.iter().map(|v| v.to_le_bytes().to_vec()),
    );
    out1(ctx.op("take", vec![a, idx], &[("axis", AttrValue::Int(axis as i64))])?)
}

/// `LRN`: `x / (bias + alpha / size * sum of squares over the channel window)^beta`.
pub fn lrn(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

/// `OptionalHasElement`: whether the (tensor) input is given, a constant.
pub fn optional_has_element(_ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let out = n.outputs.first().cloned().unwrap_or_default();
    let has = n.has(0) as u8;
    out1(array_value(
        &out,
        NDArray {
            dtype: DataType::BOOL,
            shape: vec![],
            data: vec![has],
        },
    ))
}

/// `OptionalGetElement` of a tensor: the tensor.
pub fn optional_get_element(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    out1(val(ctx, n, 0)?)
}

/// `Det` of 1x1, 2x2 and 3x3 matrices (batched): the cofactor expansion.
pub fn det(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

fn known_f64(ctx: &Ctx, n: &Node, i: usize) -> Result<f64, ConvertError> {
    val(ctx, n, i)?
        .const_floats()
        .and_then(|v| v.first().copied())
        .ok_or_else(|| crate::ops::must_be_known(n, i))
}

/// `MelWeightMatrix`: a constant of the known arguments (triangular filters on the
/// mel scale, as the operator's reference computes them).
pub fn mel_weight_matrix(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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
pub fn stft(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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
    let a = reshape(ctx, a, ints(&[b, len]))?;
    let idx = crate::convert::constant(
        DataType::INT64,
        vec![frames * flen],
        (0..frames * flen).map(|k| ((k / flen) * step + k % flen).to_le_bytes().to_vec()),
    );
    let fr = emit(ctx, "take", vec![a, idx], &[("axis", AttrValue::Int(1))])?;
    let mut fr = reshape(ctx, fr, ints(&[b, frames, flen]))?;
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
    let y = concat(ctx, vec![re, im], 3)?;
    out1(tval_leaf(ctx, y)?)
}
