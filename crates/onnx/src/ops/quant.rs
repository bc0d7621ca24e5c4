//! Quantization: quantize and dequantize, integer products and convolutions.

use super::*;

/// Saturation bounds of a quantized integer type.
pub(crate) fn int_range(dt: DataType) -> Result<(f64, f64), ConvertError> {
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
pub(crate) fn per_axis(
    ctx: &mut Ctx,
    n: &Node,
    i: usize,
    rank: usize,
    axis: usize,
    dim: &PrimExpr,
) -> Result<Expr, ConvertError> {
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
    reshape_expr(ctx, e, dims)
}

pub(crate) fn quant_axis(n: &Node, rank: usize) -> Result<usize, ConvertError> {
    if rank == 0 {
        return Ok(0);
    }
    norm_axis(n.int("axis", 1), rank).or_else(|_| if rank <= 1 { Ok(0) } else { Err("bad axis".into()) })
}

/// `QuantizeLinear`: `saturate(round(x / scale) + zero_point)`, per tensor, per axis or
/// blocked; the output type is the zero point's (`output_dtype`, else uint8).
pub(crate) fn quantize_linear(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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
    let f = DataType::FLOAT32;
    if out_dt.mini_float().is_some() {
        // Float targets: `x / scale + zero_point` cast to the format (rounded to
        // nearest even; saturated unless `saturate` is 0).
        let a = x(ctx, n, 0)?;
        let a = astype(ctx, a, xv.dtype, f)?;
        let s = per_axis(ctx, n, 1, rank, axis, &dim)?;
        let s = astype(ctx, s, val(ctx, n, 1)?.dtype, f)?;
        let mut q = emit(ctx, "divide", vec![a, s], &[])?;
        if n.has(2) {
            let z = per_axis(ctx, n, 2, rank, axis, &dim)?;
            let z = astype(ctx, z, out_dt, f)?;
            q = emit(ctx, "add", vec![q, z], &[])?;
        }
        let sat = n.int("saturate", 1) != 0;
        return out1(super::elementwise::low_precision_cast(ctx, q, f, out_dt, sat)?);
    }
    let (lo, hi) = int_range(out_dt)?;
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
pub(crate) fn dequantize_linear(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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
pub(crate) fn dynamic_quantize_linear(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

/// Input `i` as int32 minus the zero point of input `z` (when given).
pub(crate) fn centered_i32(ctx: &mut Ctx, n: &Node, i: usize, z: usize) -> Result<Expr, ConvertError> {
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
pub(crate) fn matmul_integer(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = centered_i32(ctx, n, 0, 2)?;
    let b = centered_i32(ctx, n, 1, 3)?;
    out1(ctx.op("matmul", vec![a, b], &[])?)
}

/// `QLinearMatMul`: the int32 product, rescaled by `a_scale * b_scale / y_scale`,
/// rounded, offset by the output zero point and saturated.
pub(crate) fn qlinear_matmul(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

/// `BitCast` between integer types of one width (and bool to uint8): a conversion
/// that keeps the bits (two's complement wrap-around); bit casts that change the
/// kind of number (float to int) are not supported.
pub(crate) fn bit_cast(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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
    let zp = if zr == 1 && i > 0 && rank > 1 {
        let m = val(ctx, n, z)?.const_shape().ok_or("zero point shape")?[0];
        let mut dims = vec![1i64; rank];
        dims[0] = m;
        reshape_expr(ctx, zp, ints(&dims))?
    } else {
        zp
    };
    emit(ctx, "subtract", vec![a, zp], &[])
}

/// Input `i` (a scale or zero point) as float32, a 1-D one of several values shaped
/// `(1, M, 1, ...)` to scale the output channels of a rank-`rank` result.
fn per_channel_f32(ctx: &mut Ctx, n: &Node, i: usize, rank: usize) -> Result<Expr, ConvertError> {
    let v = val(ctx, n, i)?;
    let e = x(ctx, n, i)?;
    let e = astype(ctx, e, v.dtype, DataType::FLOAT32)?;
    match v.const_shape().as_deref() {
        Some([m]) if *m > 1 => {
            let mut dims = vec![1i64; rank];
            dims[1] = *m;
            reshape_expr(ctx, e, ints(&dims))
        }
        _ => Ok(e),
    }
}

/// `QLinearConv`: the convolution of the centered operands (exact in float32 for
/// 8-bit values) plus the int32 bias, rescaled by `x_scale * w_scale / y_scale` (per
/// output channel for a 1-D `w_scale`), rounded, offset by the output zero point and
/// saturated to its type.
pub(crate) fn qlinear_conv(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let rank = xv.rank().ok_or("input has unknown rank")?;
    let wshape = val(ctx, n, 3)?.const_shape().ok_or("the weight needs a static shape")?;
    let a = centered_f32(ctx, n, 0, 2)?;
    let w = centered_f32(ctx, n, 3, 5)?;
    let y = super::nn::conv_expr(ctx, n, a, w, &xv, &wshape)?;
    let mut y = ctx.leaf(&y)?;
    let f = DataType::FLOAT32;
    if n.has(8) {
        let b = per_channel_f32(ctx, n, 8, rank)?;
        y = emit(ctx, "add", vec![y, b], &[])?;
    }
    let xs = per_channel_f32(ctx, n, 1, rank)?;
    let ws = per_channel_f32(ctx, n, 4, rank)?;
    let ys = per_channel_f32(ctx, n, 6, rank)?;
    let s = emit(ctx, "multiply", vec![xs, ws], &[])?;
    let s = emit(ctx, "divide", vec![s, ys], &[])?;
    let mut d = emit(ctx, "multiply", vec![y, s], &[])?;
    d = emit(ctx, "round", vec![d], &[])?;
    let out_dt = if n.has(7) {
        let z = per_channel_f32(ctx, n, 7, rank)?;
        d = emit(ctx, "add", vec![d, z], &[])?;
        val(ctx, n, 7)?.dtype
    } else {
        xv.dtype
    };
    let (lo, hi) = int_range(out_dt)?;
    let d = emit(ctx, "maximum", vec![d, scalar(f, lo)], &[])?;
    let d = emit(ctx, "minimum", vec![d, scalar(f, hi)], &[])?;
    out1(ctx.op("astype", vec![d], &[("dtype", AttrValue::DataType(out_dt))])?)
}
