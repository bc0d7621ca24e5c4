//! Data type conversion (`astype`, `wrap_param`).

use relax_ir::{Call, StructInfo};

use super::common::*;
use super::{pure_op, InferCtx, OpDef};
use crate::legalize as lg;

/// `astype(x, dtype)` / `wrap_param(x, dtype)`: the input with the new dtype.
fn astype(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let dtype = attr_opt_dtype(call, "dtype")?.unwrap_or(relax_ir::DataType::VOID);
    Ok(with_dtype(t, dtype))
}

/// The data type operators.
pub static OPS: &[OpDef] = &[
    pure_op!("relax.astype", astype, lg::unary::lowered::astype),
    pure_op!("relax.wrap_param", astype),
];
