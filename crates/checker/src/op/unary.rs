//! Unary element-wise operators: math functions, `clip` and the `isfinite`
//! family.

use relax_ir::{Call, DataType, StructInfo};

use super::common::*;
use super::{ew, InferCtx, OpDef};

/// TVM's `InferTypeUnary`: the input's StructInfo with the result dtype.
fn unary(call: &Call, args: &[StructInfo], require_float: bool, out: Option<DataType>) -> Res {
    let t = unary_tensor(call, args)?;
    if require_float && is_known_non_float(t.dtype) {
        return Err(format!(
            "{} requires the input tensor to have float dtype. However, the given input dtype is {}",
            op_name(call),
            t.dtype
        ));
    }
    Ok(with_dtype(t, out.unwrap_or(t.dtype)))
}

/// Unary arithmetic accepting any dtype.
pub(crate) fn unary_any(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    unary(call, args, false, None)
}

/// Unary arithmetic requiring a float dtype.
pub(crate) fn unary_float(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    unary(call, args, true, None)
}

/// `isfinite`/`isinf`/`isnan`: bool result.
fn unary_check(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    unary(call, args, false, Some(DataType::BOOL))
}

/// `clip(x, min, max)`: the StructInfo of `x`.
fn clip(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    check_nargs(call, args, 3)?;
    Ok(args[0].clone())
}

/// The unary operators.
pub static OPS: &[OpDef] = &[
    ew!(unary, abs, unary_any),
    ew!(unary, acos, unary_float),
    ew!(unary, acosh, unary_float),
    ew!(unary, asin, unary_float),
    ew!(unary, asinh, unary_float),
    ew!(unary, atan, unary_float),
    ew!(unary, atanh, unary_float),
    ew!(unary, bitwise_not, unary_any),
    ew!(unary, ceil, unary_any),
    ew!(unary, cos, unary_float),
    ew!(unary, cosh, unary_float),
    ew!(unary, exp, unary_float),
    ew!(unary, floor, unary_any),
    ew!(unary, log, unary_float),
    ew!(unary, logical_not, unary_any),
    ew!(unary, negative, unary_any),
    ew!(unary, round, unary_any),
    ew!(unary, rsqrt, unary_float),
    ew!(unary, sigmoid, unary_float),
    ew!(unary, sign, unary_any),
    ew!(unary, sin, unary_float),
    ew!(unary, sinh, unary_float),
    ew!(unary, square, unary_any),
    ew!(unary, sqrt, unary_float),
    ew!(unary, tan, unary_float),
    ew!(unary, tanh, unary_float),
    ew!(unary, trunc, unary_any),
    ew!(unary, erf, unary_float),
    ew!(unary, clip, clip),
    ew!(unary, isfinite, unary_check),
    ew!(unary, isinf, unary_check),
    ew!(unary, isnan, unary_check),
];
