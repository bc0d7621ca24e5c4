//! `quantize(data, scale, zero_point, axis=-1, out_dtype="int8")` and
//! `dequantize(data, scale, zero_point, axis=-1, out_dtype="float32")`:
//! linear (de)quantization with a per-tensor or per-axis scale and zero point
//! (TVM's `relax.quantize`/`relax.dequantize`, `QuantizeAttrs`).
//!
//! - `quantize`: `clip(round(data / scale) + zero_point)` cast to `out_dtype`
//!   (no rounding for a float8 `out_dtype`), clipped to `out_dtype`'s range;
//! - `dequantize`: `(data - zero_point) * scale` computed in `int32` (`float32`
//!   for a float16/float32 input), clipped to float16's range for a float16
//!   `out_dtype`.

use relax_ir::tir::{BinOp, Intrinsic};
use relax_ir::{Call, DataType, PrimExpr, PrimExprKind, StructInfo, TypeCode};

use crate::attrs::{op_attrs, OpAttrs};
use crate::common::*;
use crate::error::infer_err;
use crate::legalize::te::{max_value, min_value, Operand, Te};
use crate::legalize::{Emitter, LegalizeCtx, Legalized, Lowered, OrSkip, Skip};
use crate::{InferCtx, OpDef};

op_attrs! {
    /// The attributes (TVM's `QuantizeAttrs`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct QuantizeAttrs {
        /// The output data type.
        pub out_dtype: DataType = dtype,
        /// The axis a per-axis scale or zero point runs along (negative counts
        /// from the end).
        pub axis: i64 = int,
    }
}

const F8E4M3: DataType = DataType::new(TypeCode::Float8E4M3FN, 8, 1);
const F8E5M2: DataType = DataType::new(TypeCode::Float8E5M2, 8, 1);
const UINT16: DataType = DataType::uint(16);

/// The zero point dtypes TVM 0.27 accepts.
const ZP_DTYPES: [DataType; 7] = [
    DataType::INT8,
    DataType::UINT8,
    DataType::INT16,
    UINT16,
    DataType::INT32,
    DataType::UINT32,
    DataType::FLOAT16,
];

/// Whether every dimension of `t` is known to be 1 (a rank-0 tensor too): such a
/// scale or zero point applies to every element (TVM's singleton check).
fn is_singleton(t: &relax_ir::TensorStructInfo) -> bool {
    match shape_of(t) {
        Some(dims) => dims.iter().all(|d| d.as_int() == Some(1)),
        None => t.ndim == 0,
    }
}

/// The checks both operators share (TVM's `InferStructInfoQuantize` /
/// `InferStructInfoDequantize`): the scale's and zero point's dtypes, the axis,
/// and the size of a per-axis scale or zero point.
fn infer_common(call: &Call, args: &[StructInfo], ctx: &InferCtx, name: &str, attrs: &QuantizeAttrs) -> Res {
    let ts = tensor_args(call, args, 3)?;
    let (data, scale, zp) = (ts[0], ts[1], ts[2]);
    if scale.dtype != DataType::FLOAT32 && scale.dtype != DataType::FLOAT16 {
        return Err(infer_err!(DType;
            "scale param datatype should be one of [float16, float32], but got {}",
            scale.dtype
        ));
    }
    if !ZP_DTYPES.contains(&zp.dtype) {
        return Err(infer_err!(DType;
            "zero_point param datatype should be one of ['int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'float16'], but got {}",
            zp.dtype
        ));
    }
    let nd = i64::from(data.ndim);
    let axis = if attrs.axis < 0 { nd + attrs.axis } else { attrs.axis };
    if data.ndim < 0 || axis < 0 || axis > nd - 1 {
        return Err(infer_err!(Axis; "relax.{name}: axis param is out of range ({})", attrs.axis));
    }
    for (param, pname) in [(scale, "scale"), (zp, "zero_point")] {
        if is_singleton(param) {
            continue;
        }
        let (Some(pdims), Some(ddims)) = (shape_of(param), shape_of(data)) else {
            return Err(infer_err!(Invalid;
                "relax.{name}: the shapes of the input and of the {pname} param must be known"
            ));
        };
        let (Some(pd), Some(dd)) = (pdims.first(), ddims.get(axis as usize)) else {
            return Err(infer_err!(Invalid; "relax.{name}: the {pname} param has no dimension"));
        };
        if !prove_eq(ctx.analyzer, pd, dd) {
            return Err(infer_err!(Invalid;
                "Size mismatch: relax.{name}: the input shape at dim {} is '{}', but size of {pname} param is '{}'",
                attrs.axis,
                show(dd),
                show(pd)
            ));
        }
    }
    Ok(tensor_as(data, attrs.out_dtype, data.vdevice.clone()))
}

/// StructInfo of `quantize`: the input's, with `out_dtype`.
fn infer_quantize(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let attrs = QuantizeAttrs::from_call(call)?;
    let od = attrs.out_dtype;
    if ![DataType::INT8, DataType::UINT8, DataType::INT16, UINT16, F8E4M3, F8E5M2].contains(&od) {
        return Err(infer_err!(DType; "Unsupported output datatype attribute for operation: '{od}"));
    }
    if let Some(StructInfo::Tensor(t)) = args.first() {
        if t.dtype != DataType::FLOAT16 && t.dtype != DataType::FLOAT32 {
            return Err(infer_err!(DType; "Unsupported input datatype for operation: {}", t.dtype));
        }
    }
    infer_common(call, args, ctx, "quantize", &attrs)
}

/// StructInfo of `dequantize`: the input's, with `out_dtype`.
fn infer_dequantize(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let attrs = QuantizeAttrs::from_call(call)?;
    let od = attrs.out_dtype;
    if od != DataType::FLOAT16 && od != DataType::FLOAT32 {
        return Err(infer_err!(DType; "Unsupported output datatype attribute for operation: {od}"));
    }
    if let Some(StructInfo::Tensor(t)) = args.first() {
        let ok = [
            DataType::INT8,
            DataType::UINT8,
            DataType::INT16,
            UINT16,
            DataType::INT32,
            F8E4M3,
            F8E5M2,
            DataType::FLOAT16,
            DataType::FLOAT32,
        ];
        if !ok.contains(&t.dtype) {
            // TVM's message names the output dtype here.
            return Err(infer_err!(DType; "Unsupported input datatype for operation: {od}"));
        }
    }
    infer_common(call, args, ctx, "dequantize", &attrs)
}

// ----------------------------------------------------------------------------
// Legalization: TE arithmetic with TVM's operand type matching and folding.

/// Whether `d` is an IEEE float of TVM's `kDLFloat` code (not bfloat16, not float8).
fn is_float_code(d: DataType) -> bool {
    d.code == TypeCode::Float
}

/// The common type of `a op b` (TVM's `BinaryOpMatchTypes` for the types these
/// operators meet).
fn promote(a: DataType, b: DataType) -> DataType {
    if a == b {
        return a;
    }
    match (is_float_code(a), is_float_code(b)) {
        (true, true) => {
            if a.bits < b.bits {
                b
            } else {
                a
            }
        }
        (true, false) => a,
        (false, true) => b,
        (false, false) if a.bits != b.bits => {
            if a.bits < b.bits {
                b
            } else {
                a
            }
        }
        // Same width, one signed and one unsigned: unsigned.
        (false, false) => DataType::uint(a.bits),
    }
}

/// `x` cast to `dt`, folding constants (`tvm::cast`).
fn cast(x: PrimExpr, dt: DataType) -> PrimExpr {
    if x.dtype() == dt {
        return x;
    }
    match x.kind() {
        PrimExprKind::IntImm { value, .. } if is_float_code(dt) => PrimExpr::float_of(*value as f64, dt),
        PrimExprKind::IntImm { value, .. } => PrimExpr::int_of(*value, dt),
        PrimExprKind::FloatImm { value, .. } if is_float_code(dt) => PrimExpr::float_of(*value, dt),
        _ => x.cast(dt),
    }
}

/// `a op b` with the operands brought to their common type; the identities TVM
/// folds (`x - 0`, `x + 0`, `x * 1`, `x / 1`) and `min`/`max` of two constants
/// are folded.
fn arith(op: BinOp, a: PrimExpr, b: PrimExpr) -> PrimExpr {
    let t = promote(a.dtype(), b.dtype());
    let (a, b) = (cast(a, t), cast(b, t));
    let val = |e: &PrimExpr| e.as_int().map(|v| v as f64).or_else(|| e.as_float());
    match (op, val(&a), val(&b)) {
        (BinOp::Add | BinOp::Sub, _, Some(0.0)) => a,
        (BinOp::Add, Some(0.0), _) => b,
        (BinOp::Mul | BinOp::Div, _, Some(1.0)) => a,
        (BinOp::Min, Some(x), Some(y)) => {
            if x <= y {
                a
            } else {
                b
            }
        }
        (BinOp::Max, Some(x), Some(y)) => {
            if x >= y {
                a
            } else {
                b
            }
        }
        _ => PrimExpr::binary(op, a, b),
    }
}

/// `clip_cast(val, dtype)`: `val` clipped to `dtype`'s range, cast to `dtype`.
fn clip_cast(val: PrimExpr, dtype: DataType) -> PrimExpr {
    let hi = dtype_extreme(dtype, true);
    let lo = dtype_extreme(dtype, false);
    cast(arith(BinOp::Max, arith(BinOp::Min, val, hi), lo), dtype)
}

/// `T.max_value`/`T.min_value` of `dtype`, with float8's largest finite value.
fn dtype_extreme(dtype: DataType, highest: bool) -> PrimExpr {
    match dtype.mini_float() {
        Some(m) => {
            let v = m.max();
            PrimExpr::float_of(if highest { v } else { -v }, dtype)
        }
        None if highest => max_value(dtype),
        None => min_value(dtype),
    }
}

/// A scale or zero point inside the compute body: an inlined scalar constant,
/// element 0 of a singleton tensor, or the element at the index along `axis`.
fn qparam(p: &Operand, idx: &[PrimExpr], axis: usize) -> Result<PrimExpr, Skip> {
    match p {
        Operand::Scalar(c) => Ok(c.clone()),
        Operand::Tensor(b) => {
            let shape = b.shape();
            if shape.iter().all(|d| d.as_int() == Some(1)) {
                let zeros = shape.iter().map(|d| PrimExpr::int_of(0, d.dtype())).collect();
                return Ok(PrimExpr::load(b, zeros));
            }
            if shape.len() != 1 {
                return Err(Skip::new(
                    "a per-axis scale or zero point must be 1-d or have only dimensions of extent 1",
                ));
            }
            let i = idx.get(axis).or_skip("the axis is out of range")?;
            Ok(PrimExpr::load(b, vec![i.clone()]))
        }
    }
}

/// What both legalizations start from.
struct Parts {
    /// The builder.
    t: Te,
    /// The data placeholder.
    data: relax_ir::Buffer,
    /// The scale.
    scale: Operand,
    /// The zero point.
    zp: Operand,
    /// The axis, normalized.
    axis: usize,
    /// The attributes.
    attrs: QuantizeAttrs,
    /// The data's shape.
    shape: Vec<PrimExpr>,
    /// The names of the compute stage's axes.
    names: Vec<String>,
}

/// The builder, the data placeholder, the scale and zero point operands and the
/// normalized axis, the parameters checked (the compute closures cannot fail).
fn operands(ctx: &LegalizeCtx) -> Result<Parts, Skip> {
    let attrs = QuantizeAttrs::from_call(ctx.call).map_err(Skip::from)?;
    let mut t = Te::new();
    let data = ctx.placeholder(&mut t, 0)?;
    let scale = t.input(ctx.arg(1)?, ctx.args.get(1).or_skip("an argument is missing")?)?;
    let zp = t.input(ctx.arg(2)?, ctx.args.get(2).or_skip("an argument is missing")?)?;
    let nd = data.shape().len() as i64;
    let axis = if attrs.axis < 0 { attrs.axis + nd } else { attrs.axis };
    let axis = usize::try_from(axis).ok().or_skip("the axis is out of range")?;
    let shape = data.shape().to_vec();
    let names: Vec<String> = (0..shape.len()).map(|i| format!("i{i}")).collect();
    let idx_probe: Vec<PrimExpr> = shape.iter().map(|d| PrimExpr::int_of(0, d.dtype())).collect();
    qparam(&scale, &idx_probe, axis)?;
    qparam(&zp, &idx_probe, axis)?;
    Ok(Parts {
        t,
        data,
        scale,
        zp,
        axis,
        attrs,
        shape,
        names,
    })
}

/// Legalization of `quantize` (TVM's `_quantize`: one `quantized` compute stage).
fn legalize_quantize(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    let Parts {
        mut t,
        data,
        scale,
        zp,
        axis,
        attrs,
        shape,
        names,
    } = operands(ctx)?;
    let od = attrs.out_dtype;
    // TVM builds the clip bounds in the computation's type: a bound float16 cannot
    // hold (uint16's 65535) fails its legalization.
    let vt = promote(promote(data.dtype(), scale.dtype()), zp.dtype());
    let hi = dtype_extreme(od, true)
        .as_float()
        .or_else(|| dtype_extreme(od, true).as_int().map(|v| v as f64));
    if vt == DataType::FLOAT16 && hi.is_some_and(|h| h > 65504.0) {
        return Err(Skip::new(format!(
            "the bound of {od} does not fit float16, the computation's type"
        )));
    }
    let rounds = od.is_integer();
    t.compute_named("quantized", &shape, &names, |i| {
        let s = qparam(&scale, i, axis).unwrap_or_else(|_| PrimExpr::float_of(1.0, DataType::FLOAT32));
        let z = qparam(&zp, i, axis).unwrap_or_else(|_| PrimExpr::int_of(0, DataType::INT32));
        let scaled = arith(BinOp::Div, PrimExpr::load(&data, i.to_vec()), s);
        let rounded = if rounds {
            // TVM writes `te.round` (`T.round`: half to even, on both devices).
            let dt = scaled.dtype();
            PrimExpr::intrinsic_call(Intrinsic::Round, dt, vec![scaled])
        } else {
            scaled
        };
        clip_cast(arith(BinOp::Add, rounded, z), od)
    });
    Ok(Legalized::call(Lowered::from_te("quantize", t, 1, ctx.out.clone())))
}

/// Legalization of `dequantize` (TVM's `_dequantize`: one `dequantized` stage).
fn legalize_dequantize(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    let Parts {
        mut t,
        data,
        scale,
        zp,
        axis,
        attrs,
        shape,
        names,
    } = operands(ctx)?;
    let od = attrs.out_dtype;
    // TVM computes in float32 for a float or bfloat input, in int32 otherwise
    // (float8 inputs included).
    let dd = data.dtype();
    let compute_dt = if dd.code == TypeCode::Float || dd.code == TypeCode::BFloat {
        DataType::FLOAT32
    } else {
        DataType::INT32
    };
    t.compute_named("dequantized", &shape, &names, |i| {
        let s = qparam(&scale, i, axis).unwrap_or_else(|_| PrimExpr::float_of(1.0, DataType::FLOAT32));
        let z = qparam(&zp, i, axis).unwrap_or_else(|_| PrimExpr::int_of(0, DataType::INT32));
        let sub = arith(BinOp::Sub, cast(PrimExpr::load(&data, i.to_vec()), compute_dt), z);
        let out = arith(BinOp::Mul, sub, cast(s, DataType::FLOAT32));
        if od == DataType::FLOAT32 {
            out
        } else {
            clip_cast(out, od)
        }
    });
    Ok(Legalized::call(Lowered::from_te("dequantize", t, 1, ctx.out.clone())))
}

/// `relax.quantize`.
pub const QUANTIZE: OpDef = OpDef {
    name: "relax.quantize",
    pure: true,
    infer: infer_quantize,
    legalize: Some(legalize_quantize),
};

/// `relax.dequantize`.
pub const DEQUANTIZE: OpDef = OpDef {
    name: "relax.dequantize",
    pure: true,
    infer: infer_dequantize,
    legalize: Some(legalize_dequantize),
};
