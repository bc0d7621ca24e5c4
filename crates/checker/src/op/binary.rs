//! Binary broadcasting operators: arithmetic, comparison, logical and bitwise.

use relax_ir::{Call, DataType, StructInfo};

use super::common::*;
use super::{ew, pure_op, InferCtx, OpDef};

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
    ew!(binary, add, broadcast_arith),
    ew!(binary, divide, broadcast_arith),
    ew!(binary, floor_divide, broadcast_arith),
    ew!(binary, log_add_exp, broadcast_arith),
    ew!(binary, multiply, broadcast_arith),
    ew!(binary, power, broadcast_arith),
    ew!(binary, atan2, broadcast_arith),
    ew!(binary, subtract, broadcast_arith),
    pure_op!("relax.mod", broadcast_arith, super::legalize::binary::typed::modulo),
    ew!(binary, floor_mod, broadcast_arith),
    ew!(binary, equal, broadcast_cmp),
    ew!(binary, greater, broadcast_cmp),
    ew!(binary, greater_equal, broadcast_cmp),
    ew!(binary, less, broadcast_cmp),
    ew!(binary, less_equal, broadcast_cmp),
    ew!(binary, not_equal, broadcast_cmp),
    ew!(binary, minimum, broadcast_arith),
    ew!(binary, maximum, broadcast_arith),
    ew!(binary, logical_and, broadcast_arith),
    ew!(binary, logical_or, broadcast_arith),
    ew!(binary, logical_xor, broadcast_arith),
    ew!(binary, bitwise_and, broadcast_arith),
    ew!(binary, bitwise_or, broadcast_arith),
    ew!(binary, bitwise_xor, broadcast_arith),
    ew!(binary, left_shift, broadcast_arith),
    ew!(binary, right_shift, broadcast_arith),
];
