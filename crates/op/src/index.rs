//! Indexing: `take`, `strided_slice`.

use crate::error::{infer_err, InferError};
use relax_ir::tir::BinOp;
use relax_ir::tir::Intrinsic;
use relax_ir::{Call, DataType, Expr, ExprKind, PrimExpr, StructInfo};

use super::common::*;
use super::{pure_op, InferCtx, OpDef};
use crate::legalize as lg;

/// `take(x, indices, axis, mode)`.
fn take(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    check_nargs(call, args, 2)?;
    let data = tensor_arg(call, args, 0)?;
    let (idx_dtype, idx_ndim, idx_shape) = match &args[1] {
        StructInfo::Tensor(t) => (t.dtype, t.ndim, shape_of(t)),
        StructInfo::Prim(p) => (p.dtype, 0, Some(vec![])),
        other => {
            return Err(infer_err!(
                "Operator {} requires the indices argument to be either a tensor or a scalar value.  However, the argument has type {}",
                op_name(call),
                kind_name(other)
            ))
        }
    };
    if !idx_dtype.is_void() && !is_int_or_uint(idx_dtype) {
        return Err(infer_err!(
            "Take op requires the input indices to have integer dtype. However, the given indices dtype is {idx_dtype}"
        ));
    }
    let axis_attr = attr_opt_int(call, "axis")?;
    if axis_attr.is_none() && data.ndim != 1 {
        return Err(infer_err!(
            "Take op expects the input data to be 1-dimensional tensor when the axis is not specified. However, the given data tensor has ndim {}",
            data.ndim
        ));
    }
    let vd = data.vdevice.clone();
    if data.ndim == -1 || idx_ndim == -1 {
        return Ok(tensor_ndim(data.dtype, -1, vd));
    }
    let axis = match axis_attr {
        Some(a) => normalize_axis(call, data.ndim, a)?,
        None => 0,
    };
    let (Some(ds), Some(is)) = (shape_of(data), idx_shape) else {
        return Ok(tensor_ndim(data.dtype, idx_ndim + data.ndim - 1, vd));
    };
    let mut out = Vec::new();
    for (i, d) in ds.iter().enumerate() {
        if i == axis {
            out.extend(is.iter().cloned());
        } else {
            out.push(d.clone());
        }
    }
    Ok(tensor(out, data.dtype, vd))
}

/// The `PrimExpr`s of a tuple argument: a tuple of `PrimValue`s, or a tuple whose
/// StructInfo knows every value.
pub(crate) fn unpack_prims(e: &Expr, s: &StructInfo) -> Option<Vec<PrimExpr>> {
    if let ExprKind::Tuple(fields) = e.kind() {
        let direct: Option<Vec<PrimExpr>> = fields
            .iter()
            .map(|f| match f.kind() {
                ExprKind::PrimValue(v) => Some(v.clone()),
                _ => None,
            })
            .collect();
        if direct.is_some() {
            return direct;
        }
    }
    match s {
        StructInfo::Tuple(fields) => fields
            .iter()
            .map(|f| match f {
                StructInfo::Prim(p) => p.value.clone(),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

pub(crate) fn lt0(e: &PrimExpr) -> PrimExpr {
    match e.as_int() {
        Some(v) => PrimExpr::bool(v < 0),
        None => PrimExpr::binary(BinOp::Lt, e.clone(), PrimExpr::int_of(0, e.dtype())),
    }
}

/// `T.if_then_else(c, a, b)`, folded for constant conditions.
pub(crate) fn if_then_else(c: PrimExpr, a: PrimExpr, b: PrimExpr) -> PrimExpr {
    match c.as_int() {
        Some(0) => b,
        Some(_) => a,
        None => {
            let dtype = a.dtype();
            PrimExpr::intrinsic_call(Intrinsic::IfThenElse, dtype, vec![c, a, b])
        }
    }
}

fn canonicalize_index(index: &PrimExpr, extent: &PrimExpr, stride: &PrimExpr) -> PrimExpr {
    if let (Some(i), Some(e), Some(s)) = (index.as_int(), extent.as_int(), stride.as_int()) {
        let (lo, hi) = if s < 0 { (-1, e - 1) } else { (0, e) };
        let i = if i < 0 { i.saturating_add(e) } else { i };
        return int(i.max(lo).min(hi));
    }
    if let (Some(a), Some(b)) = (index.as_var(), extent.as_var()) {
        if a.name() == b.name() {
            return index.clone();
        }
    }
    let neg = lt0(stride);
    let lo = if_then_else(neg.clone(), int(-1), int(0));
    let hi = if_then_else(neg, sub(extent, &int(1)), extent.clone());
    let index = if matches!(index.as_int(), Some(v) if v >= 0) {
        index.clone()
    } else {
        if_then_else(lt0(index), add(index, extent), index.clone())
    };
    min(&max(&index, &lo), &hi)
}

fn ceildiv(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
        if y != 0 {
            return int(floor_div_i64(x.wrapping_add(y).wrapping_sub(1), y));
        }
    }
    floordiv(&sub(&add(a, b), &int(1)), b)
}

fn neg(e: &PrimExpr) -> PrimExpr {
    match e.as_int() {
        Some(v) => PrimExpr::int_of(-v, e.dtype()),
        None => sub(&PrimExpr::int_of(0, e.dtype()), e),
    }
}

/// topi's `GetLength`.
fn slice_length(begin: &PrimExpr, end: &PrimExpr, stride: &PrimExpr, extent: &PrimExpr, inbound: bool) -> PrimExpr {
    if inbound {
        return ceildiv(&sub(end, begin), stride);
    }
    let b = canonicalize_index(begin, extent, stride);
    let e = canonicalize_index(end, extent, stride);
    if_then_else(
        lt0(stride),
        ceildiv(&sub(&b, &e), &neg(stride)),
        ceildiv(&sub(&e, &b), stride),
    )
}

/// `strided_slice(x, axes, begin, end, strides, assume_inbound)`.
fn strided_slice(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let n = args.len();
    if !(4..=5).contains(&n) || call.args.len() != n {
        return Err(infer_err!(
            "Operator {} accepts either three arguments (data, axes, begin, end) or four arguments (data, axes, begin, end, strides), but received {}",
            op_name(call),
            n
        ));
    }
    let data = match &args[0] {
        StructInfo::Tensor(t) => t,
        other => {
            return Err(infer_err!(
                "Operator {} requires the first argument to be a tensor.  However, the first argument has type {}",
                op_name(call),
                kind_name(other)
            ))
        }
    };
    for (i, name) in [(1, "axes"), (2, "begin"), (3, "end"), (4, "strides")] {
        if i >= n {
            continue;
        }
        let ok = match &args[i] {
            StructInfo::Object => true,
            StructInfo::Tuple(fields) => fields
                .iter()
                .all(|f| matches!(f, StructInfo::Prim(p) if p.dtype == DataType::INT64)),
            _ => false,
        };
        if !ok {
            return Err(infer_err!(
                "Operator {} requires the {} argument to be a tuple of int64 PrimExpr values.  However, the {} argument has type {}",
                op_name(call),
                name,
                name,
                kind_name(&args[i])
            ));
        }
    }
    let vd = data.vdevice.clone();
    let fallback = || Ok(tensor_ndim(data.dtype, data.ndim, vd.clone()));
    let Some(shape_expr) = &data.shape else {
        return fallback();
    };
    let Some(axes) = unpack_prims(&call.args[1], &args[1]) else {
        return fallback();
    };
    let Some(axes) = axes.iter().map(|a| a.as_int()).collect::<Option<Vec<i64>>>() else {
        return fallback();
    };
    // One index per axis from argument `i` (`Ok(None)`: not known statically).
    let indices = |i: usize, what: &str| -> Result<Option<Vec<PrimExpr>>, InferError> {
        let Some(v) = unpack_prims(&call.args[i], &args[i]) else {
            return Ok(None);
        };
        if v.len() != axes.len() {
            let what = format!("'{what}' indices");
            return Err(axes_count_error(call, "", &what, "", axes.len(), v.len()));
        }
        Ok(Some(v))
    };
    let Some(begin) = indices(2, "begin")? else {
        return fallback();
    };
    let Some(end) = indices(3, "end")? else {
        return fallback();
    };
    let strides = if n > 4 {
        let Some(s) = unpack_prims(&call.args[4], &args[4]) else {
            return fallback();
        };
        s
    } else {
        vec![int(1); axes.len()]
    };
    if strides.iter().any(|s| s.as_int() == Some(0)) {
        return Err(infer_err!("{}: a stride is zero", op_name(call)));
    }
    if strides.len() != axes.len() {
        let when = "when the optional 'strides' argument is provided, ";
        return Err(axes_count_error(
            call,
            when,
            "strides",
            " provided",
            axes.len(),
            strides.len(),
        ));
    }
    let Some(mut out) = deep_shape_values(data) else {
        if axes.is_empty() {
            return Ok(tensor_shape_expr(shape_expr.clone(), data.dtype, vd, data.ndim));
        }
        return fallback();
    };
    let axes = normalize_axes(call, data.ndim, &axes)?;
    let inbound = attr_bool(call, "assume_inbound", false);
    for (i, &axis) in axes.iter().enumerate() {
        let len = slice_length(&begin[i], &end[i], &strides[i], &out[axis], inbound);
        out[axis] = simplify(ctx.analyzer, &len);
    }
    Ok(tensor(out, data.dtype, vd))
}

/// The indexing operators.
pub static OPS: &[OpDef] = &[
    pure_op!("relax.take", take, lg::index::lowered::take),
    pure_op!("relax.strided_slice", strided_slice, lg::index::lowered::strided_slice),
];

/// TVM's error for `n` values of `what` given for `n_axes` axes (`when`
/// prefixes the condition, `provided` follows `what` in the first clause).
fn axes_count_error(call: &Call, when: &str, what: &str, provided: &str, n_axes: usize, n: usize) -> InferError {
    infer_err!(Arity;
        "For operator {}, {when}the number of axes provided must match the number of {what}{provided}.  However, there are {n_axes} axes specified and {n} {what} specified",
        op_name(call)
    )
}
