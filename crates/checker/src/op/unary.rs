//! Unary element-wise operators: math functions, `clip` and the `isfinite`
//! family.

use relax_ir::{Call, DataType, StructInfo};

use super::common::*;
use super::{pure_op, InferCtx, OpDef};

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
    pure_op!("relax.abs", unary_any, super::legalize::unary::typed::abs),
    pure_op!("relax.acos", unary_float, super::legalize::unary::typed::acos),
    pure_op!("relax.acosh", unary_float, super::legalize::unary::typed::acosh),
    pure_op!("relax.asin", unary_float, super::legalize::unary::typed::asin),
    pure_op!("relax.asinh", unary_float, super::legalize::unary::typed::asinh),
    pure_op!("relax.atan", unary_float, super::legalize::unary::typed::atan),
    pure_op!("relax.atanh", unary_float, super::legalize::unary::typed::atanh),
    pure_op!(
        "relax.bitwise_not",
        unary_any,
        super::legalize::unary::typed::bitwise_not
    ),
    pure_op!("relax.ceil", unary_any, super::legalize::unary::typed::ceil),
    pure_op!("relax.cos", unary_float, super::legalize::unary::typed::cos),
    pure_op!("relax.cosh", unary_float, super::legalize::unary::typed::cosh),
    pure_op!("relax.exp", unary_float, super::legalize::unary::typed::exp),
    pure_op!("relax.floor", unary_any, super::legalize::unary::typed::floor),
    pure_op!("relax.log", unary_float, super::legalize::unary::typed::log),
    pure_op!(
        "relax.logical_not",
        unary_any,
        super::legalize::unary::typed::logical_not
    ),
    pure_op!("relax.negative", unary_any, super::legalize::unary::typed::negative),
    pure_op!("relax.round", unary_any, super::legalize::unary::typed::round),
    pure_op!("relax.rsqrt", unary_float, super::legalize::unary::typed::rsqrt),
    pure_op!("relax.sigmoid", unary_float, super::legalize::unary::typed::sigmoid),
    pure_op!("relax.sign", unary_any, super::legalize::unary::typed::sign),
    pure_op!("relax.sin", unary_float, super::legalize::unary::typed::sin),
    pure_op!("relax.sinh", unary_float, super::legalize::unary::typed::sinh),
    pure_op!("relax.square", unary_any, super::legalize::unary::typed::square),
    pure_op!("relax.sqrt", unary_float, super::legalize::unary::typed::sqrt),
    pure_op!("relax.tan", unary_float, super::legalize::unary::typed::tan),
    pure_op!("relax.tanh", unary_float, super::legalize::unary::typed::tanh),
    pure_op!("relax.trunc", unary_any, super::legalize::unary::typed::trunc),
    pure_op!("relax.erf", unary_float, super::legalize::unary::typed::erf),
    pure_op!("relax.clip", clip, super::legalize::unary::typed::clip),
    pure_op!("relax.isfinite", unary_check, super::legalize::unary::typed::isfinite),
    pure_op!("relax.isinf", unary_check, super::legalize::unary::typed::isinf),
    pure_op!("relax.isnan", unary_check, super::legalize::unary::typed::isnan),
];
