//! Sorting and set operators: `sort`, `argsort`, `topk`, `unique`, `nonzero`.

use crate::error::{infer_err, InferError};
use relax_ir::{Call, DataType, StructInfo};

use super::common::*;
use super::{pure_op, InferCtx, OpDef};

/// `sort(x, axis, descending)`: the input's StructInfo.
fn sort(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    Ok(StructInfo::Tensor(unary_tensor(call, args)?.clone()))
}

/// `argsort(x, axis, descending, dtype)`.
fn argsort(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let dtype = attr_opt_dtype(call, "dtype")?.unwrap_or(t.dtype);
    match &t.shape {
        Some(s) => Ok(tensor_shape_expr(s.clone(), dtype, t.vdevice.clone(), t.ndim)),
        None => Ok(tensor_ndim(dtype, t.ndim, t.vdevice.clone())),
    }
}

/// `topk(x, k, axis, ret_type, largest, dtype)`.
fn topk(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let idx_dtype = attr_opt_dtype(call, "dtype")?.unwrap_or(t.dtype);
    let k = attr_int(call, "k", 1)?;
    let mut axis = attr_int(call, "axis", -1)?;
    if axis < 0 && t.ndim > 0 {
        axis += t.ndim as i64;
    }
    let vd = t.vdevice.clone();
    let (values, indices) = match shape_of(t) {
        None => (
            tensor_ndim(t.dtype, t.ndim, vd.clone()),
            tensor_ndim(idx_dtype, t.ndim, vd),
        ),
        Some(mut s) => {
            let a = usize::try_from(axis)
                .ok()
                .filter(|&a| a < s.len())
                .ok_or_else(|| format!("{}: axis {} is out of range", op_name(call), axis))?;
            let dim = s[a].as_int();
            if k > 0 && dim.is_none_or(|d| k < d) {
                s[a] = int(k);
            }
            (tensor(s.clone(), t.dtype, vd.clone()), tensor(s, idx_dtype, vd))
        }
    };
    match attr_str(call, "ret_type", "both") {
        "both" => Ok(StructInfo::Tuple(vec![values, indices])),
        "values" => Ok(values),
        "indices" => Ok(indices),
        other => Err(infer_err!("Unsupported ret type: {other}")),
    }
}

/// `unique(x, sorted, return_index, return_inverse, return_counts, axis)`.
fn unique(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = match args.first() {
        Some(StructInfo::Tensor(t)) => t,
        Some(o) => {
            return Err(infer_err!(
                "Cannot treat type `{}` as type `relax.TensorType`",
                kind_name(o)
            ))
        }
        None => return Err(infer_err!("{} expects arguments", op_name(call))),
    };
    if args.len() < 5 {
        return Err(infer_err!("{} expects at least 5 arguments", op_name(call)));
    }
    let axis = if args.len() == 6 { prim_of(call, args, 5) } else { None };
    if t.ndim != -1 {
        if let Some(a) = axis.as_ref().and_then(|a| a.as_int()) {
            normalize_axis(call, t.ndim, a)?;
        }
    }
    let flag = |i: usize| -> Result<bool, InferError> {
        prim_of(call, args, i)
            .and_then(|e| e.as_int())
            .map(|v| v != 0)
            .ok_or_else(|| infer_err!(ArgKind; "{}: argument {} expects to be IntImm", op_name(call), i))
    };
    let n_int = [flag(2)?, flag(3)?, flag(4)?];
    let vd = t.vdevice.clone();
    let mut out = vec![if t.ndim == 0 {
        tensor(vec![int(1)], t.dtype, vd.clone())
    } else if axis.is_some() {
        tensor_ndim(t.dtype, t.ndim, vd.clone())
    } else {
        tensor_ndim(t.dtype, 1, vd.clone())
    }];
    for f in n_int {
        if f {
            out.push(if t.ndim == 0 {
                tensor(vec![int(1)], DataType::INT64, vd.clone())
            } else {
                tensor_ndim(DataType::INT64, 1, vd.clone())
            });
        }
    }
    if out.len() == 1 {
        return Ok(out.remove(0));
    }
    Ok(StructInfo::Tuple(out))
}

/// `nonzero(x)`: a 2-D `int64` index tensor.
fn nonzero(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    Ok(tensor_ndim(DataType::INT64, 2, t.vdevice.clone()))
}

/// The sorting and set operators.
pub static OPS: &[OpDef] = &[
    pure_op!("relax.sort", sort),
    pure_op!("relax.argsort", argsort),
    pure_op!("relax.topk", topk),
    pure_op!("relax.unique", unique),
    pure_op!("relax.nonzero", nonzero),
];
