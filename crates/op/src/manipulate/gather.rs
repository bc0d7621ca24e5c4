//! Index-driven manipulation: gather, scatter, meshgrid and one_hot.

use super::*;
#[allow(unused_imports)]
use crate::error::{infer_err, InferError};

pub(crate) fn tensor_role<'a>(s: &'a StructInfo, what: &str, role: &str) -> Result<&'a TensorStructInfo, InferError> {
    match s {
        StructInfo::Tensor(t) => Ok(t),
        o => Err(infer_err!(
            "{what} requires the input {role} to be a Tensor. However, the given one is {}",
            kind_name(o)
        )),
    }
}

/// The `data`, `indices` and `updates` tensors of a scatter operator `what`
/// (`"ScatterND op"`).
pub(crate) fn scatter_operands<'a>(
    call: &Call,
    args: &'a [StructInfo],
    what: &str,
) -> Result<[&'a TensorStructInfo; 3], InferError> {
    check_nargs(call, args, 3)?;
    let role = |i: usize, name: &str| tensor_role(&args[i], what, name);
    Ok([role(0, "data")?, role(1, "indices")?, role(2, "updates")?])
}

/// A scatter operator's dtype rules: `updates` has `data`'s dtype and the
/// indices are integers (unknown dtypes pass).
pub(crate) fn check_scatter_dtypes(what: &str, [data, idx, upd]: [&TensorStructInfo; 3]) -> Result<(), InferError> {
    if !data.dtype.is_void() && !upd.dtype.is_void() && data.dtype != upd.dtype {
        return Err(infer_err!(
            "{what} requires the input data to have same type with updates. However, the given types are data: {}, updates: {}",
            data.dtype, upd.dtype
        ));
    }
    if !idx.dtype.is_void() && !is_int_or_uint(idx.dtype) {
        return Err(infer_err!(
            "{what} requires the input indices to have integer dtype. However, the given indices dtype is {}",
            idx.dtype
        ));
    }
    Ok(())
}

/// `gather_elements(data, indices, axis)`.
pub(super) fn gather_elements(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    check_nargs(call, args, 2)?;
    let data = tensor_role(&args[0], "GatherElements", "data")?;
    let idx = tensor_role(&args[1], "GatherElements", "indices")?;
    if !idx.dtype.is_void() && !idx.dtype.is_int() {
        return Err(infer_err!(
            "GatherElements requires the input indices to have int64 dtype. However, the given indices dtype is {}",
            idx.dtype
        ));
    }
    if data.ndim == -1 || idx.ndim == -1 {
        return Ok(tensor_ndim(data.dtype, -1, data.vdevice.clone()));
    }
    let axis = attr_int(call, "axis", 0)?;
    if axis < -(data.ndim as i64) || axis >= data.ndim as i64 {
        return Err(infer_err!(
            "GatherElements requires axis to be within the input dimension range [{}, {}]. However, the given axis is {}",
            -data.ndim,
            data.ndim - 1,
            axis
        ));
    }
    if data.ndim != idx.ndim {
        return Err(infer_err!(
            "GatherElements requires data and indices to have the same rank. However, data rank is {} while indices rank is {}",
            data.ndim, idx.ndim
        ));
    }
    match &idx.shape {
        Some(s) => Ok(tensor_shape_expr(s.clone(), data.dtype, data.vdevice.clone(), idx.ndim)),
        None => Ok(tensor_ndim(data.dtype, idx.ndim, data.vdevice.clone())),
    }
}

/// `gather_nd(data, indices, batch_dims)`.
pub(super) fn gather_nd(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    check_nargs(call, args, 2)?;
    let data = tensor_role(&args[0], "GatherND", "data")?;
    let idx = tensor_role(&args[1], "GatherND", "indices")?;
    let batch_dims = attr_int(call, "batch_dims", 0)?;
    if batch_dims < 0 {
        return Err(infer_err!("GatherND batch_dims must be non-negative, got {batch_dims}"));
    }
    if !idx.dtype.is_void() && idx.dtype != DataType::INT64 {
        return Err(infer_err!(
            "GatherND requires the input indices to have int64 dtype. However, the given indices dtype is {}",
            idx.dtype
        ));
    }
    let vd = data.vdevice.clone();
    if data.ndim == -1 || idx.ndim == -1 {
        return Ok(tensor_ndim(data.dtype, -1, vd));
    }
    let bd = batch_dims as i32;
    if bd > data.ndim {
        return Err(infer_err!(
            "GatherND batch_dims must be in range [0, data.ndim]. However, got batch_dims={}, data.ndim={}",
            bd,
            data.ndim
        ));
    }
    if bd > idx.ndim - 1 {
        return Err(infer_err!(
            "GatherND batch_dims cannot exceed indices.ndim-1. However, got batch_dims={}, indices.ndim={}",
            bd,
            idx.ndim
        ));
    }
    let Some(is) = shape_of(idx) else {
        return Ok(tensor_ndim(data.dtype, -1, vd));
    };
    let Some(l) = is.last().and_then(|d| d.as_int()) else {
        return Ok(tensor_ndim(data.dtype, -1, vd));
    };
    if l < 0 || l > i64::from(data.ndim) {
        return Err(infer_err!(
            "GatherND requires the last dimension of indices to be in [0, {}], got {}",
            data.ndim,
            l
        ));
    }
    let l = l as i32;
    let out_ndim = idx.ndim + data.ndim - l - 1 - bd;
    let Some(ds) = shape_of(data) else {
        return Ok(tensor_ndim(data.dtype, out_ndim, vd));
    };
    if l > data.ndim - bd {
        return Err(infer_err!(
            "GatherND requires the last dimension of indices to be less than or equal to the rank of data minus batch_dims. However, the given shapes are indices: {}, data: {}, with batch_dims={}",
            show_shape(&is),
            show_shape(&ds),
            bd
        ));
    }
    let mut out: Vec<PrimExpr> = is[..is.len() - 1].to_vec();
    out.extend(ds[(bd + l) as usize..].iter().cloned());
    Ok(tensor(out, data.dtype, vd))
}

/// `meshgrid(tensors, indexing)`.
pub(super) fn meshgrid(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    if args.len() != 1 {
        return Err("meshgrid op expects 1 Tuple input argument.".into());
    }
    let ts = tuple_of_tensors(call, &args[0])?;
    if ts.is_empty() {
        return Err("meshgrid expects at least one 1D tensor in the input Tuple.".into());
    }
    let mut lengths = Vec::new();
    let mut dtype: Option<DataType> = None;
    let mut unknown = false;
    let mut vdev = None;
    let mut vdev_unknown = false;
    for (i, t) in ts.iter().enumerate() {
        if t.ndim != 1 {
            return Err(infer_err!(
                "meshgrid expects each input tensor to be 1D. Got ndim = {} at index {}",
                t.ndim,
                i
            ));
        }
        if t.dtype.is_void() {
            continue;
        }
        match dtype {
            None => dtype = Some(t.dtype),
            Some(d) if d != t.dtype => {
                return Err(infer_err!(
                    "meshgrid expects all input tensors to have the same dtype. Found {} and {}",
                    t.dtype,
                    d
                ))
            }
            _ => {}
        }
        match t.shape_values() {
            Some(v) if v.len() == 1 => lengths.push(v[0].clone()),
            _ => unknown = true,
        }
        if !vdev_unknown {
            if let Some(v) = &t.vdevice {
                match &vdev {
                    None => vdev = Some(v.clone()),
                    Some(o) if o != v => vdev_unknown = true,
                    _ => {}
                }
            }
        }
    }
    if vdev_unknown {
        vdev = None;
    }
    let dtype = dtype.unwrap_or(DataType::VOID);
    let n = ts.len();
    let field = if !unknown && lengths.len() == n {
        tensor(lengths, dtype, vdev)
    } else {
        tensor_ndim(dtype, n as i32, vdev)
    };
    Ok(StructInfo::Tuple(vec![field; n]))
}

/// `one_hot(indices, on_value, off_value, depth, axis)`.
pub(super) fn one_hot(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    check_nargs(call, args, 3)?;
    let idx = tensor_arg(call, args, 0)?;
    let prim_dtype = |i: usize| -> Result<DataType, InferError> {
        match (call.args[i].kind(), &args[i]) {
            (ExprKind::PrimValue(e), _) => Ok(e.dtype()),
            (_, StructInfo::Prim(p)) => Ok(p.dtype),
            _ => Err(infer_err!(
                "{}: on_value and off_value must be PrimValues",
                op_name(call)
            )),
        }
    };
    let (on, off) = (prim_dtype(1)?, prim_dtype(2)?);
    if on != off {
        return Err(infer_err!(
            "one_hot: on_value and off_value must have the same dtype, but got {on} and {off}"
        ));
    }
    if !idx.dtype.is_void() && !is_int_or_uint(idx.dtype) {
        return Err(infer_err!(
            "one_hot op requires the input indices to have integer dtype. However, the given indices dtype is {}",
            idx.dtype
        ));
    }
    let vd = idx.vdevice.clone();
    if idx.ndim == -1 {
        return Ok(tensor_ndim(on, -1, vd));
    }
    let Some(mut s) = shape_of(idx) else {
        return Ok(tensor_ndim(on, idx.ndim + 1, vd));
    };
    let depth = attr_int(call, "depth", 0)?;
    let mut axis = attr_int(call, "axis", -1)?;
    if axis < 0 {
        axis += s.len() as i64 + 1;
    }
    if axis < 0 || axis > s.len() as i64 {
        return Err(infer_err!(
            "one_hot: axis must be in the range of [0, {}], but got {}",
            s.len(),
            axis
        ));
    }
    s.insert(axis as usize, PrimExpr::int_of(depth, DataType::INT32));
    Ok(tensor(s, on, vd))
}
