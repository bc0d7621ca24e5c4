//! Binary broadcasting operators: arithmetic, comparison, logical and bitwise.

use crate::error::infer_err;
use relax_ir::{Call, DataType, StructInfo};

use super::common::*;
use super::{ew_ops, InferCtx, OpDef};

/// TVM's `InferTypeBroadcast`.
fn broadcast(call: &Call, args: &[StructInfo], ctx: &InferCtx, cmp: bool) -> Res {
    if args.len() != 2 {
        return Err(infer_err!("{} op should have 2 arguments", op_name(call)));
    }
    let (lhs, rhs) = (&args[0], &args[1]);
    for (s, side, i) in [(lhs, "LHS", 0), (rhs, "RHS", 1)] {
        if !matches!(s, StructInfo::Prim(_) | StructInfo::Tensor(_)) {
            let _ = i;
            return Err(infer_err!(
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
pub static OPS: &[OpDef] = &ew_ops![binary;
    broadcast_arith: add, divide, floor_divide, log_add_exp, multiply, power, atan2, subtract,
        modulo = "relax.mod", floor_mod, minimum, maximum, logical_and, logical_or, logical_xor,
        bitwise_and, bitwise_or, bitwise_xor, left_shift, right_shift;
    broadcast_cmp: equal, greater, greater_equal, less, less_equal, not_equal;
];
