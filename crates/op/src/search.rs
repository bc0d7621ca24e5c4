//! Search operators: `where`, `argmax`/`argmin`, `bucketize`.

use crate::error::infer_err;
use relax_ir::{Call, DataType, StructInfo};

use super::common::*;
use super::{pure_op, InferCtx, OpDef};
use crate::legalize as lg;

/// `where(cond, x1, x2)`: broadcast of the three shapes, dtype of `x1`/`x2`.
fn where_(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let ts = tensor_args(call, args, 3)?;
    let (c, x1, x2) = (ts[0], ts[1], ts[2]);
    let vdev = merged_vdevice(ts.iter().copied());
    if !c.dtype.is_void() && !c.dtype.is_bool() {
        return Err(infer_err!(
            "Where requires the input condition tensor to have boolean dtype. However, the given condition dtype is {}",
            c.dtype
        ));
    }
    let dtype = binary_dtype(call, &args[1], &args[2])?;
    let ndim = if ts.iter().any(|t| t.ndim == -1) {
        -1
    } else {
        c.ndim.max(x1.ndim).max(x2.ndim)
    };
    if let (Some(cs), Some(s1), Some(s2)) = (shape_of(c), shape_of(x1), shape_of(x2)) {
        let Some(b) = broadcast_or_err(call, ctx.analyzer, &s1, &s2)? else {
            return Ok(tensor_ndim(dtype, ndim, vdev));
        };
        let Some(b) = broadcast_or_err(call, ctx.analyzer, &cs, &b)? else {
            return Ok(tensor_ndim(dtype, ndim, vdev));
        };
        return Ok(tensor(b, dtype, vdev));
    }
    if same_shape_expr(&c.shape, &x1.shape) && same_shape_expr(&c.shape, &x2.shape) {
        if let Some(s) = &c.shape {
            return Ok(tensor_shape_expr(s.clone(), dtype, vdev, ndim));
        }
    }
    Ok(tensor_ndim(dtype, ndim, vdev))
}

/// `argmax`/`argmin(x, axis, keepdims)`: `int64` indices.
fn arg_reduce(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let axis_attr = attr_opt_int(call, "axis")?;
    let keepdims = attr_bool(call, "keepdims", false);
    let mut axis = None;
    if t.ndim != -1 {
        if let Some(a) = axis_attr {
            axis = Some(normalize_axis(call, t.ndim, a)?);
        }
    }
    let out_ndim = if keepdims {
        t.ndim
    } else if axis_attr.is_none() {
        0
    } else if t.ndim == -1 {
        -1
    } else {
        t.ndim - 1
    };
    let mut dtype = DataType::INT64;
    let Some(shape) = shape_of(t) else {
        if axis_attr.is_none() && keepdims && out_ndim != -1 {
            return Ok(tensor(vec![int(1); out_ndim as usize], dtype, t.vdevice.clone()));
        }
        if out_ndim == 0 {
            return Ok(tensor(vec![], dtype, t.vdevice.clone()));
        }
        return Ok(tensor_ndim(dtype, out_ndim, t.vdevice.clone()));
    };
    if let Some(d) = shape.first() {
        dtype = d.dtype();
    }
    let mut out = Vec::new();
    for (i, d) in shape.iter().enumerate() {
        if axis_attr.is_some() && Some(i) != axis {
            out.push(d.clone());
        } else if keepdims {
            out.push(relax_ir::PrimExpr::int_of(1, dtype));
        }
    }
    Ok(tensor(out, dtype, t.vdevice.clone()))
}

/// `bucketize(input, boundaries)`: indices of the input's shape.
fn bucketize(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let ts = tensor_args(call, args, 2)?;
    if ts[1].ndim != -1 && ts[1].ndim != 1 {
        return Err(infer_err!(
            "Bucketize requires boundary to be 1-D array but got {}",
            ts[1].ndim
        ));
    }
    let dtype = if attr_bool(call, "out_int32", false) {
        DataType::INT32
    } else {
        DataType::INT64
    };
    Ok(tensor_as(ts[0], dtype, ts[0].vdevice.clone()))
}

/// The search operators.
pub static OPS: &[OpDef] = &[
    pure_op!("relax.where", where_, lg::binary::lowered::where_),
    pure_op!("relax.argmax", arg_reduce, lg::search::lowered::argmax),
    pure_op!("relax.argmin", arg_reduce, lg::search::lowered::argmin),
    pure_op!("relax.bucketize", bucketize),
];
