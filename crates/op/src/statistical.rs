//! Reductions (`sum`, `mean`, `max`, `min`, `prod`, `std`, `variance`, `median`)
//! and scans (`cumsum`, `cumprod`).

use crate::error::InferError;
use relax_ir::{Call, DataType, PrimExpr, StructInfo};

use super::attrs::{OpAttrs, StatisticalAttrs};
use super::common::*;
use super::{ew, pure_op, InferCtx, OpDef};
use crate::legalize as lg;

/// The output shape of a reduction (`None` shape when the input's is unknown).
struct Reduced {
    ndim: i32,
    shape: Option<Vec<PrimExpr>>,
    axes: Vec<usize>,
    has_axis: bool,
    keepdims: bool,
}

fn reduced(call: &Call, t: &relax_ir::TensorStructInfo) -> Result<Reduced, InferError> {
    let StatisticalAttrs {
        axis: axis_attr,
        keepdims,
    } = StatisticalAttrs::from_call(call)?;
    let mut axes = Vec::new();
    if t.ndim != -1 {
        if let Some(a) = &axis_attr {
            axes = normalize_axes(call, t.ndim, a)?;
        }
    }
    let ndim = if keepdims {
        t.ndim
    } else if axis_attr.is_none() {
        0
    } else if t.ndim == -1 {
        -1
    } else {
        t.ndim - axes.len() as i32
    };
    let shape = shape_of(t).map(|s| {
        let mut out = Vec::new();
        for (i, d) in s.iter().enumerate() {
            if axis_attr.is_some() && !axes.contains(&i) {
                out.push(d.clone());
            } else if keepdims {
                out.push(int(1));
            }
        }
        out
    });
    Ok(Reduced {
        ndim,
        shape,
        axes,
        has_axis: axis_attr.is_some(),
        keepdims,
    })
}

/// TVM's `InferTypeStatistical`.
fn statistical(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let r = reduced(call, t)?;
    let vdev = t.vdevice.clone();
    match r.shape {
        Some(s) => Ok(tensor(s, t.dtype, vdev)),
        None => {
            if !r.has_axis && r.keepdims && r.ndim != -1 {
                Ok(tensor(vec![int(1); r.ndim as usize], t.dtype, vdev))
            } else if r.ndim == 0 {
                Ok(tensor(vec![], t.dtype, vdev))
            } else {
                Ok(tensor_ndim(t.dtype, r.ndim, vdev))
            }
        }
    }
}

/// `median`: a (values, indices) tuple when reducing over exactly one axis.
fn median(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let r = reduced(call, t)?;
    let vdev = t.vdevice.clone();
    match r.shape {
        None => {
            if !r.has_axis && r.keepdims && r.ndim != -1 {
                return Ok(tensor(vec![int(1); r.ndim as usize], t.dtype, vdev));
            }
            if r.ndim == 0 {
                return Ok(tensor(vec![], t.dtype, vdev));
            }
            Ok(StructInfo::Tuple(vec![
                tensor_ndim(t.dtype, r.ndim, vdev.clone()),
                tensor_ndim(DataType::INT64, r.ndim, vdev),
            ]))
        }
        Some(s) => {
            if !r.has_axis || r.axes.len() > 1 {
                Ok(tensor(s, t.dtype, vdev))
            } else {
                Ok(StructInfo::Tuple(vec![
                    tensor(s.clone(), t.dtype, vdev.clone()),
                    tensor(s, DataType::INT64, vdev),
                ]))
            }
        }
    }
}

/// `cumsum`/`cumprod(x, axis, dtype, exclusive)`: flattened without an axis.
fn scan(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let dtype = attr_opt_dtype(call, "dtype")?.unwrap_or(t.dtype);
    let vdev = t.vdevice.clone();
    if attr_opt_int(call, "axis")?.is_none() {
        return match shape_of(t) {
            None => Ok(tensor_ndim(dtype, t.ndim, vdev)),
            Some(s) => Ok(tensor(vec![product(&s)], dtype, vdev)),
        };
    }
    match &t.shape {
        Some(s) => Ok(tensor_shape_expr(s.clone(), dtype, vdev, t.ndim)),
        None => Ok(tensor_ndim(dtype, t.ndim, vdev)),
    }
}

/// The statistical operators.
pub static OPS: &[OpDef] = &[
    ew!(statistical, max, statistical),
    ew!(statistical, mean, statistical),
    ew!(statistical, min, statistical),
    ew!(statistical, prod, statistical),
    ew!(statistical, std, statistical),
    ew!(statistical, sum, statistical),
    ew!(statistical, variance, statistical),
    pure_op!("relax.median", median),
    pure_op!("relax.cumsum", scan, lg::statistical::lowered::cumsum),
    pure_op!("relax.cumprod", scan, lg::statistical::lowered::cumprod),
];
