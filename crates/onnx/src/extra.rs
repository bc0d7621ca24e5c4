//! Converters written as compositions of Relax operators: losses, quantization,
//! normalizations and data movement (each following the ONNX operator's definition,
//! and TVM's ONNX front end where it has one).

use relax_ir::{AttrValue, DataType, Expr, ExprKind, NDArray, PrimExpr};

use crate::convert::{Ctx, Known, TVal};
use crate::ops::{
    array_value, ints_attr, norm_axis, out1, pool_of, rank_of, scalar, shape_of, tval_leaf, val, x, Node,
};
use crate::tensor;

fn emit(ctx: &mut Ctx, op: &str, args: Vec<Expr>, attrs: &[(&str, AttrValue)]) -> Result<Expr, String> {
    let v = ctx.op(op, args, attrs)?;
    ctx.leaf(&v)
}

fn astype(ctx: &mut Ctx, e: Expr, from: DataType, to: DataType) -> Result<Expr, String> {
    if from == to {
        return Ok(e);
    }
    emit(ctx, "astype", vec![e], &[("dtype", AttrValue::DataType(to))])
}

fn reshape(ctx: &mut Ctx, e: Expr, dims: Vec<PrimExpr>) -> Result<Expr, String> {
    emit(ctx, "reshape", vec![e, Expr::shape(dims)], &[])
}

fn ints(v: &[i64]) -> Vec<PrimExpr> {
    v.iter().map(|&d| PrimExpr::int(d)).collect()
}

/// `SoftmaxCrossEntropyLoss`: the negative log-likelihood loss of
/// `log_softmax(scores, axis=1)`; the second output is the log-probabilities.
pub fn softmax_cross_entropy(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
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
pub fn nll(ctx: &mut Ctx, n: &Node, logp: Expr, dt: DataType) -> Result<TVal, String> {
    let reduction = n.string("reduction").unwrap_or_else(|| "mean".into());
    if !matches!(reduction.as_str(), "mean" | "sum" | "none") {
        return Err(format!("reduction `{reduction}` is not supported"));
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
fn int_range(dt: DataType) -> Result<(f64, f64), String> {
    if !dt.is_integer() || dt.is_bool() || dt.bits > 32 {
        return Err(format!("quantization to {dt} is not supported"));
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
fn per_axis(ctx: &mut Ctx, n: &Node, i: usize, rank: usize, axis: usize, dim: &PrimExpr) -> Result<Expr, String> {
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

fn quant_axis(n: &Node, rank: usize) -> Result<usize, String> {
    if rank == 0 {
        return Ok(0);
    }
    norm_axis(n.int("axis", 1), rank).or_else(|_| if rank <= 1 { Ok(0) } else { Err("bad axis".into()) })
}

/// `QuantizeLinear`: `saturate(round(x / scale) + zero_point)`, per tensor, per axis or
/// blocked; the output type is the zero point's (`output_dtype`, else uint8).
pub fn quantize_linear(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
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
            t => tensor::dtype_of(t as i32).ok_or_else(|| format!("output_dtype {t} is not supported"))?,
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
pub fn dequantize_linear(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
    let xv = val(ctx, n, 0)?;
    let shape = xv.shape.clone().ok_or("input has unknown shape")?;
    let rank = shape.len();
    let axis = quant_axis(n, rank)?;
    let dim = shape.get(axis).cloned().unwrap_or(PrimExpr::int(1));
    let sdt = val(ctx, n, 1)?.dtype;
    let out_dt = match n.int("output_dtype", 0) {
        0 => sdt,
        t => tensor::dtype_of(t as i32).ok_or_else(|| format!("output_dtype {t} is not supported"))?,
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
pub fn dynamic_quantize_linear(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
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
pub fn swish(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
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
pub fn shrink(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
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
pub fn hardmax(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
    let v = val(ctx, n, 0)?;
    let shape = v.shape.clone().ok_or("input has unknown shape")?;
    if n.opset < 13 {
        return Err("Hardmax before opset 13 is not supported".into());
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
pub fn lp_normalization(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
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
        p => return Err(format!("p = {p} is not supported (1 or 2)")),
    };
    out1(ctx.op("divide", vec![a, norm], &[])?)
}

fn static4(ctx: &Ctx, n: &Node) -> Result<[i64; 4], String> {
    let s = val(ctx, n, 0)?.const_shape().ok_or("a static 4-D input is needed")?;
    <[i64; 4]>::try_from(s.as_slice()).map_err(|_| "the input must be 4-D".to_string())
}

/// `DepthToSpace` (DCR and CRD modes): reshape, transpose, reshape.
pub fn depth_to_space(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
    let [b, c, h, w] = static4(ctx, n)?;
    let bs = n.int("blocksize", 0);
    if bs <= 0 || c % (bs * bs) != 0 {
        return Err(format!("blocksize {bs} does not divide the channels"));
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
pub fn space_to_depth(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
    let [b, c, h, w] = static4(ctx, n)?;
    let bs = n.int("blocksize", 0);
    if bs <= 0 || h % bs != 0 || w % bs != 0 {
        return Err(format!("blocksize {bs} does not divide the spatial dimensions"));
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
pub fn eye_like(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
    let v = val(ctx, n, 0)?;
    let s = v.const_shape().ok_or("EyeLike needs a static shape")?;
    if s.len() != 2 {
        return Err("the input must be 2-D".into());
    }
    let dt = match n.attr_i("dtype") {
        Some(t) => tensor::dtype_of(t as i32).ok_or_else(|| format!("dtype {t} is not supported"))?,
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
pub fn group_norm(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
    let shape = shape_of(ctx, n, 0)?;
    let rank = shape.len();
    let groups = n.int("num_groups", 0);
    let c = shape
        .get(1)
        .and_then(PrimExpr::as_int)
        .ok_or("static channels needed")?;
    if groups <= 0 || c % groups != 0 {
        return Err(format!("{groups} groups do not divide {c} channels"));
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
pub fn mvn(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
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
pub fn one_hot(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
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
    let take = |ctx: &mut Ctx, k: i64| -> Result<Expr, String> {
        let idx = crate::convert::constant(DataType::INT64, vec![], std::iter::once(k.to_le_bytes().to_vec()));
        emit(ctx, "take", vec![values.clone(), idx], &[("axis", AttrValue::Int(0))])
    };
    let (off, on) = (take(ctx, 0)?, take(ctx, 1)?);
    out1(ctx.op("where", vec![cond, on, off], &[])?)
}

/// `ReverseSequence`: `R.reverse_sequence`.
pub fn reverse_sequence(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
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
pub fn lp_pool(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, String> {
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
