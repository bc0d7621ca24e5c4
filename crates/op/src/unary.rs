//! Unary element-wise operators: math functions, `clip` and the `isfinite`
//! family.

use crate::error::infer_err;
use relax_ir::{Call, DataType, StructInfo};

use super::common::*;
use super::{ew_ops, InferCtx, OpDef};

/// TVM's `InferTypeUnary`: the input's StructInfo with the result dtype.
fn unary(call: &Call, args: &[StructInfo], require_float: bool, out: Option<DataType>) -> Res {
    let t = unary_tensor(call, args)?;
    if require_float && is_known_non_float(t.dtype) {
        return Err(infer_err!(
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

/// The unary operators with a legalization of their own (`legalize::unary`).
pub static OPS: &[OpDef] = &ew_ops![unary;
    unary_any: abs, bitwise_not, ceil, floor, logical_not, negative, round, sign, square, trunc;
    clip: clip;
    unary_check: isfinite, isinf, isnan;
];

/// Declares unary float operators that one TIR intrinsic computes: `name =>
/// Intrinsic` is the whole operator, TVM's `InferTypeUnary` with a float input and
/// topi's `compute[i...] = T.<intrinsic>(x[i...])` in a PrimFunc `tir_<name>`.
macro_rules! float_math_ops {
    ($($name:ident => $intr:ident,)*) => {
        /// The legalizations of [`FLOAT_MATH`].
        mod float_math {
            use crate::legalize::{unary::intrin, with_known_shapes, Emitter, LegalizeCtx, Legalized, Skip};
            use relax_ir::tir::Intrinsic;
            $(
                pub(super) fn $name(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
                    with_known_shapes(ctx, |ctx| intrin(ctx, concat!("tir_", stringify!($name)), Intrinsic::$intr))
                }
            )*
        }

        /// Unary float operators of one intrinsic each.
        pub static FLOAT_MATH: &[OpDef] = &[$(
            crate::pure_op!(concat!("relax.", stringify!($name)), unary_float, float_math::$name),
        )*];
    };
}

float_math_ops! {
    acos => Acos,
    acosh => Acosh,
    asin => Asin,
    asinh => Asinh,
    atan => Atan,
    atanh => Atanh,
    cos => Cos,
    cosh => Cosh,
    exp => Exp,
    log => Log,
    rsqrt => Rsqrt,
    sigmoid => Sigmoid,
    sin => Sin,
    sinh => Sinh,
    sqrt => Sqrt,
    tan => Tan,
    tanh => Tanh,
    erf => Erf,
}
