//! Binary broadcasting operators: arithmetic, comparison, logical and bitwise.

use relax_ir::{Call, DataType, StructInfo};

use super::common::*;
use super::{pure_op, InferCtx, OpDef};

/// TVM's `InferTypeBroadcast`.
fn broadcast(call: &Call, args: &[StructInfo], ctx: &InferCtx, cmp: bool) -> Res {
    if args.len() != 2 {
        return Err(format!("{} op should have 2 arguments", op_name(call)));
    }
    let (lhs, rhs) = (&args[0], &args[1]);
    for (s, side, i) in [(lhs, "LHS", 0), (rhs, "RHS", 1)] {
        if !matches!(s, StructInfo::Prim(_) | StructInfo::Tensor(_)) {
            let _ = i;
            return Err(format!(
                "Arguments to binary operators must be either R.Tensor or R.Prim types, but {} has {} of type {}",
                op_name(call),
                side,
                kind_name(s)
            ));
        }
    }
    let dtype = if cmp {
        // The operands' element types are not compared for comparisons.
        DataType::BOOL
    } else {
        binary_dtype(call, lhs, rhs)?
    };
    if matches!(lhs, StructInfo::Prim(_)) && matches!(rhs, StructInfo::Prim(_)) {
        return Ok(StructInfo::prim(dtype));
    }
    let vdevice = binary_vdevice(call, lhs, rhs)?;
    let ndim_of = |s: &StructInfo| match s {
        StructInfo::Prim(_) => 1,
        StructInfo::Tensor(t) => t.ndim,
        _ => -1,
    };
    let (ln, rn) = (ndim_of(lhs), ndim_of(rhs));
    let out_ndim = if ln == -1 || rn == -1 { -1 } else { ln.max(rn) };
    let shape_of_arg = |s: &StructInfo| match s {
        StructInfo::Prim(_) => Some(vec![int(1)]),
        StructInfo::Tensor(t) => deep_shape_values(t),
        _ => None,
    };
    if let (Some(ls), Some(rs)) = (shape_of_arg(lhs), shape_of_arg(rhs)) {
        if let Some(out) = broadcast_or_err(call, ctx.analyzer, &ls, &rs)? {
            return Ok(tensor(out, dtype, vdevice));
        }
    }
    if let (StructInfo::Tensor(l), StructInfo::Tensor(r)) = (lhs, rhs) {
        if same_shape_expr(&l.shape, &r.shape) {
            if let Some(shape) = &l.shape {
                return Ok(tensor_shape_expr(shape.clone(), dtype, vdevice, l.ndim));
            }
        }
    }
    Ok(tensor_ndim(dtype, out_ndim, vdevice))
}

/// Arithmetic broadcasting: the operands' common dtype.
pub(crate) fn broadcast_arith(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    broadcast(call, args, ctx, false)
}

/// Comparison broadcasting: `bool` result.
pub(crate) fn broadcast_cmp(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    broadcast(call, args, ctx, true)
}

/// The binary operators.
pub static OPS: &[OpDef] = &[
    pure_op!("relax.add", broadcast_arith, super::legalize::binary::typed::add),
    pure_op!("relax.divide", broadcast_arith, super::legalize::binary::typed::divide),
    pure_op!(
        "relax.floor_divide",
        broadcast_arith,
        super::legalize::binary::typed::floor_divide
    ),
    pure_op!(
        "relax.log_add_exp",
        broadcast_arith,
        super::legalize::binary::typed::log_add_exp
    ),
    pure_op!(
        "relax.multiply",
        broadcast_arith,
        super::legalize::binary::typed::multiply
    ),
    pure_op!("relax.power", broadcast_arith, super::legalize::binary::typed::power),
    pure_op!("relax.atan2", broadcast_arith, super::legalize::binary::typed::atan2),
    pure_op!(
        "relax.subtract",
        broadcast_arith,
        super::legalize::binary::typed::subtract
    ),
    pure_op!("relax.mod", broadcast_arith, super::legalize::binary::typed::modulo),
    pure_op!(
        "relax.floor_mod",
        broadcast_arith,
        super::legalize::binary::typed::floor_mod
    ),
    pure_op!("relax.equal", broadcast_cmp, super::legalize::binary::typed::equal),
    pure_op!("relax.greater", broadcast_cmp, super::legalize::binary::typed::greater),
    pure_op!(
        "relax.greater_equal",
        broadcast_cmp,
        super::legalize::binary::typed::greater_equal
    ),
    pure_op!("relax.less", broadcast_cmp, super::legalize::binary::typed::less),
    pure_op!(
        "relax.less_equal",
        broadcast_cmp,
        super::legalize::binary::typed::less_equal
    ),
    pure_op!(
        "relax.not_equal",
        broadcast_cmp,
        super::legalize::binary::typed::not_equal
    ),
    pure_op!(
        "relax.minimum",
        broadcast_arith,
        super::legalize::binary::typed::minimum
    ),
    pure_op!(
        "relax.maximum",
        broadcast_arith,
        super::legalize::binary::typed::maximum
    ),
    pure_op!(
        "relax.logical_and",
        broadcast_arith,
        super::legalize::binary::typed::logical_and
    ),
    pure_op!(
        "relax.logical_or",
        broadcast_arith,
        super::legalize::binary::typed::logical_or
    ),
    pure_op!(
        "relax.logical_xor",
        broadcast_arith,
        super::legalize::binary::typed::logical_xor
    ),
    pure_op!(
        "relax.bitwise_and",
        broadcast_arith,
        super::legalize::binary::typed::bitwise_and
    ),
    pure_op!(
        "relax.bitwise_or",
        broadcast_arith,
        super::legalize::binary::typed::bitwise_or
    ),
    pure_op!(
        "relax.bitwise_xor",
        broadcast_arith,
        super::legalize::binary::typed::bitwise_xor
    ),
    pure_op!(
        "relax.left_shift",
        broadcast_arith,
        super::legalize::binary::typed::left_shift
    ),
    pure_op!(
        "relax.right_shift",
        broadcast_arith,
        super::legalize::binary::typed::right_shift
    ),
];
