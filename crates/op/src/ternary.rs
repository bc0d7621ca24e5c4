//! Ternary element-wise operators (`ewise_fma`).

use crate::error::infer_err;
use relax_ir::{Call, DataType, StructInfo};

use super::common::*;
use super::{pure_op, InferCtx, OpDef};
use crate::legalize as lg;

/// `ewise_fma(x1, x2, x3)`: all three of the same rank, dtype and shape.
fn ewise_fma(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let ts = tensor_args(call, args, 3)?;
    let mut ndim = -1;
    for t in &ts {
        if t.ndim != -1 {
            if ndim == -1 {
                ndim = t.ndim;
            } else if t.ndim != ndim {
                return Err("The 3 arguments of EwiseFMA must have the same number of dimensions".into());
            }
        }
    }
    let dtype = if ts.iter().any(|t| t.dtype.is_void()) {
        DataType::VOID
    } else if ts[0].dtype != ts[1].dtype || ts[1].dtype != ts[2].dtype {
        return Err(infer_err!(
            "Data types {}, {}, and {} must be equal for EwiseFMA",
            ts[0].dtype,
            ts[1].dtype,
            ts[2].dtype
        ));
    } else {
        ts[0].dtype
    };
    let vdev = merged_vdevice(ts.iter().copied());
    if let (Some(s1), Some(s2), Some(s3)) = (shape_of(ts[0]), shape_of(ts[1]), shape_of(ts[2])) {
        let mut out = Vec::new();
        for i in 0..ndim.max(0) as usize {
            if prove_eq(ctx.analyzer, &s1[i], &s2[i]) && prove_eq(ctx.analyzer, &s2[i], &s3[i]) {
                out.push(s1[i].clone());
            } else {
                return Err("The 3 arguments of EwiseFMA must have the same shape".into());
            }
        }
        return Ok(tensor(out, dtype, vdev));
    }
    if same_shape_expr(&ts[0].shape, &ts[1].shape) && same_shape_expr(&ts[0].shape, &ts[2].shape) {
        if let Some(s) = &ts[0].shape {
            return Ok(tensor_shape_expr(s.clone(), dtype, vdev, ndim));
        }
    }
    Ok(tensor_ndim(dtype, ndim, vdev))
}

/// The ternary operators.
pub static OPS: &[OpDef] = &[pure_op!("relax.ewise_fma", ewise_fma, lg::binary::lowered::ewise_fma)];
