//! Tensor manipulation: reshape, permute, expand/squeeze, flatten, concat, split,
//! broadcast_to, collapse_sum, repeat, tile, flip, gather/scatter, ...

use crate::error::{infer_err, InferError, InferErrorKind};
use relax_ir::tir::expr_equal;
use relax_ir::{Call, DataType, ExprKind, PrimExpr, StructInfo, TensorStructInfo};

use super::common::*;
use super::{pure_op, InferCtx, OpDef};

pub(crate) mod gather;
use crate::legalize as lg;
#[allow(unused_imports)]
use gather::*;

fn tensor_of<'a>(call: &Call, s: &'a StructInfo, what: &str, role: &str) -> Result<&'a TensorStructInfo, InferError> {
    match s {
        StructInfo::Tensor(t) => Ok(t),
        other => Err(infer_err!(ArgKind;
            "{what} requires the input {role} to be Tensor. However, the given one is {}",
            kind_name(other)
        )
        .map_message(|e| {
            if what.is_empty() {
                format!("{}: {e}", op_name(call))
            } else {
                e
            }
        })),
    }
}

fn shape_sinfo<'a>(s: &'a StructInfo, what: &str, role: &str) -> Result<&'a relax_ir::ShapeStructInfo, InferError> {
    match s {
        StructInfo::Shape(t) => Ok(t),
        other => Err(infer_err!(
            "{what} requires the input {role} to be Shape. However, the given one is {}",
            kind_name(other)
        )),
    }
}

/// The values of a shape argument: the `ShapeExpr` itself or its StructInfo's.
fn shape_arg(call: &Call, args: &[StructInfo], i: usize) -> Option<Vec<PrimExpr>> {
    shape_arg_values(call, args, i)
}

/// `broadcast_to(x, shape)`.
fn broadcast_to(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    if args.len() != 2 {
        return Err("broadcast_to should take 2 arguments.".into());
    }
    let data = tensor_of(call, &args[0], "broadcast_to", "data")?;
    let tgt = shape_sinfo(&args[1], "broadcast_to", "new shape")?;
    if data.ndim != -1 && tgt.ndim != -1 && tgt.ndim < data.ndim {
        return Err(infer_err!(
            "broadcast_to expects the input shape to have the number of ndim at least as the input tensor's. However, the given tensor has ndim {} while the target shape has ndim {}",
            data.ndim, tgt.ndim
        ));
    }
    let result = tensor_shape_expr(call.args[1].clone(), data.dtype, data.vdevice.clone(), tgt.ndim);
    let (Some(old), Some(new)) = (deep_shape_values(data), shape_arg(call, args, 1)) else {
        return Ok(result);
    };
    let (on, tn) = (old.len(), new.len());
    for i in 0..on.min(tn) {
        let o = &old[on - i - 1];
        let t = &new[tn - i - 1];
        if o.as_int() == Some(1) {
            continue;
        }
        if prove_ne(ctx.analyzer, o, t) {
            return Err(infer_err!(
                "broadcast_to expects the input tensor shape is broadcastable to the target shape. The target shape at dim {} is {} while the input tensor shape at dim {} is {}, which are not equal.",
                tn - i - 1,
                show(t),
                on - i - 1,
                show(o)
            ));
        }
    }
    Ok(result)
}

/// The tensors of the one tuple argument of `concat`/`stack` (`what`), at least one.
fn tensors_of_tuple<'a>(
    call: &Call,
    args: &'a [StructInfo],
    what: &str,
) -> Result<Vec<&'a TensorStructInfo>, InferError> {
    if args.len() != 1 {
        return Err(infer_err!("{what} op should have 1 argument"));
    }
    let ts = tuple_of_tensors(call, &args[0])?;
    if ts.is_empty() {
        return Err(infer_err!(
            "{what} op expects at least one tensor in the input Tuple. However, the given input Tuple is empty."
        ));
    }
    Ok(ts)
}

/// `concat(tensors, axis)`.
fn concat(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let ts = tensors_of_tuple(call, args, "Concat")?;
    let axis_attr = attr_opt_int(call, "axis")?;
    let mut ndim = if axis_attr.is_some() { -1 } else { 1 };
    let Gathered {
        dtype,
        shapes,
        shape_unknown,
    } = gather_inputs(
        &ts,
        |d, e| {
            format!("Concat expects all input tensors to have the same dtype. However, the input contains tensors with dtype {d} and {e}")
        },
        |t| {
            if ndim == -1 {
                ndim = t.ndim;
            } else if t.ndim != -1 && t.ndim != ndim {
                return Err(infer_err!(
                    "Concat expects all input tensors to have same ndim. However, the input contains tensors with ndim {} and {}",
                    ndim, t.ndim
                ));
            }
            Ok(())
        },
    )?;
    let vdev = merged_vdevice(ts.iter().copied());
    if ndim == -1 {
        return Ok(if ts.len() == 1 {
            args[0].as_tuple_field(0)
        } else {
            tensor_ndim(dtype, ndim, vdev)
        });
    }
    let axis = match axis_attr {
        Some(a) => normalize_axis(call, ndim, a)?,
        None => 0,
    };
    if ts.len() == 1 {
        return Ok(StructInfo::Tensor(ts[0].clone()));
    }
    if shapes.is_empty() {
        return Ok(tensor_ndim(dtype, ndim, vdev));
    }
    // CheckConcatOutputShape
    let first = &shapes[0];
    let all_same = shapes.iter().all(|s| expr_equal(&s[axis], &first[axis]));
    let sum = if all_same {
        mul(&first[axis], &int(shapes.len() as i64))
    } else {
        let mut acc = int(0);
        for s in &shapes {
            acc = add(&acc, &s[axis]);
        }
        acc
    };
    let mut unknown = false;
    for d in 0..first.len() {
        if d == axis {
            continue;
        }
        for s in &shapes[1..] {
            if prove_ne(ctx.analyzer, &s[d], &first[d]) {
                return Err(infer_err!(
                    "Concat expects the input tensors to have the same shape on every dimension except the one indicated by the input axis. However, the input contains tensors whose shapes on dimension {} is {} and {}",
                    d,
                    show(&first[d]),
                    show(&s[d])
                ));
            } else if !prove_eq(ctx.analyzer, &s[d], &first[d]) {
                unknown = true;
            }
        }
    }
    if shape_unknown || unknown {
        return Ok(tensor_ndim(dtype, ndim, vdev));
    }
    let mut out = first.clone();
    out[axis] = simplify(ctx.analyzer, &sum);
    Ok(tensor(out, dtype, vdev))
}

trait TupleField {
    fn as_tuple_field(&self, i: usize) -> StructInfo;
}
impl TupleField for StructInfo {
    fn as_tuple_field(&self, i: usize) -> StructInfo {
        match self {
            StructInfo::Tuple(f) => f.get(i).cloned().unwrap_or(StructInfo::Object),
            _ => StructInfo::Object,
        }
    }
}

/// `expand_dims(x, axis)`.
fn expand_dims(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let axes = attr_ints(call, "axis", &[])?;
    if axes.is_empty() {
        return Ok(StructInfo::Tensor(t.clone()));
    }
    if t.ndim == -1 {
        return Ok(tensor_ndim(t.dtype, -1, t.vdevice.clone()));
    }
    let out_ndim = t.ndim + axes.len() as i32;
    let axes = normalize_axes(call, out_ndim, &axes)?;
    let Some(shape) = shape_of(t) else {
        return Ok(tensor_ndim(t.dtype, out_ndim, t.vdevice.clone()));
    };
    let mut out: Vec<Option<PrimExpr>> = vec![None; out_ndim as usize];
    for &a in &axes {
        out[a] = Some(int(1));
    }
    let mut it = shape.into_iter();
    let out: Vec<PrimExpr> = out
        .into_iter()
        .map(|d| d.unwrap_or_else(|| it.next().unwrap_or_else(|| int(1))))
        .collect();
    Ok(tensor(out, t.dtype, t.vdevice.clone()))
}

/// `flatten(x)`.
fn flatten(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let vd = t.vdevice.clone();
    if t.ndim == -1 {
        return Ok(tensor_ndim(t.dtype, 1, vd));
    } else if t.ndim == 0 {
        return Ok(tensor(vec![int(1)], t.dtype, vd));
    } else if t.ndim == 1 {
        return Ok(StructInfo::Tensor(t.clone()));
    }
    match shape_of(t) {
        None => Ok(tensor_ndim(t.dtype, 1, vd)),
        Some(s) => Ok(tensor(vec![product(&s)], t.dtype, vd)),
    }
}

/// `permute_dims(x, axes)`.
fn permute_dims(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let axes_attr = attr_opt_ints(call, "axes")?;
    if axes_attr.is_none() && t.ndim == -1 {
        return Ok(tensor_ndim(t.dtype, -1, t.vdevice.clone()));
    }
    if let Some(a) = &axes_attr {
        if t.ndim != -1 && a.len() as i32 != t.ndim {
            return Err(infer_err!(
                "PermuteDims expects the number of input axes to equal the ndim of the input tensor. However, the tensor ndim is {} while the given number of axes is {}",
                t.ndim,
                a.len()
            ));
        }
        if t.ndim == -1 {
            return Err(
                "Check failed: ndim != kUnknownNDim: The ndim is required to be known for this function.".into(),
            );
        }
    }
    let axes: Vec<usize> = match &axes_attr {
        Some(a) => normalize_axes(call, t.ndim, a)?,
        None => (0..t.ndim as usize).rev().collect(),
    };
    if axes.iter().enumerate().all(|(i, &a)| i == a) {
        return Ok(StructInfo::Tensor(t.clone()));
    }
    match shape_of(t) {
        None => Ok(tensor_ndim(t.dtype, t.ndim, t.vdevice.clone())),
        Some(s) => Ok(tensor(
            axes.iter().map(|&a| s[a].clone()).collect(),
            t.dtype,
            t.vdevice.clone(),
        )),
    }
}

/// `reshape(x, shape)`.
fn reshape(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    if args.len() != 2 {
        return Err("Reshape op should take 2 arguments".into());
    }
    let data = tensor_of(call, &args[0], "Reshape", "data")?;
    let new = shape_sinfo(&args[1], "Reshape", "new shape")?;
    if let Some(converted) = special_new_shape(call, data, ctx)? {
        let ov = deep_shape_values(data).unwrap_or_default();
        let (np, op) = (product(&converted), product(&ov));
        if prove_ne(ctx.analyzer, &op, &np) {
            return Err(infer_err!(
                "Reshape expects the new shape to be convertible from the old shape. However, the old shape is {}, with product {}, while the new shape is {}, with product {}",
                show_shape(&ov),
                show(&op),
                show_shape(&converted),
                show(&np)
            ));
        }
        return Ok(tensor(converted, data.dtype, data.vdevice.clone()));
    }
    let new_values = shape_arg(call, args, 1);
    if let (Some(nv), Some(ov)) = (&new_values, deep_shape_values(data)) {
        let np = product(nv);
        let op = product(&ov);
        if prove_ne(ctx.analyzer, &op, &np) {
            return Err(infer_err!(
                "Reshape expects the new shape to be convertible from the old shape. However, the old shape is {}, with product {}, while the new shape is {}, with product {}",
                show_shape(&ov),
                show(&op),
                show_shape(nv),
                show(&np)
            ));
        }
    }
    let target = &call.args[1];
    if matches!(target.kind(), ExprKind::Var(_)) {
        if let Some(v) = &new.values {
            return Ok(tensor(v.clone(), data.dtype, data.vdevice.clone()));
        }
    }
    Ok(tensor_shape_expr(
        target.clone(),
        data.dtype,
        data.vdevice.clone(),
        new.ndim,
    ))
}

/// A literal new shape with special values, converted as TVM's `R.reshape`
/// does when it builds the call: `-1` (at most one) is inferred from the
/// element count, `0` copies the input's dimension. `None` when the shape is
/// not a literal or has no special value.
fn special_new_shape(
    call: &Call,
    data: &TensorStructInfo,
    ctx: &InferCtx,
) -> Result<Option<Vec<PrimExpr>>, InferError> {
    let ExprKind::ShapeExpr(values) = call.args[1].kind() else {
        return Ok(None);
    };
    if !values.iter().any(|v| matches!(v.as_int(), Some(k) if k <= 0)) {
        return Ok(None);
    }
    let shown = || {
        let parts: Vec<String> = values.iter().map(show).collect();
        if parts.len() == 1 {
            format!("({},)", parts[0])
        } else {
            format!("({})", parts.join(", "))
        }
    };
    let old = deep_shape_values(data);
    let mut out = Vec::with_capacity(values.len());
    let mut infer: Option<usize> = None;
    for (i, v) in values.iter().enumerate() {
        match v.as_int() {
            Some(-1) => {
                if infer.is_some() {
                    return Err(infer_err!(
                        "Reshape accepts at most one \"-1\" in the new shape. However, there are multiple \"-1\" in the given new shape  {}",
                        shown()
                    ));
                }
                infer = Some(i);
                out.push(int(-1));
            }
            Some(0) => {
                let o = old.as_ref().ok_or_else(|| {
                    "Reshape expects the input tensor to have known shape when there is some dimension length to infer. However, the given input has no shape.".to_string()
                })?;
                let d = o
                    .get(i)
                    .ok_or_else(|| format!("Index {i} out of bounds {}", o.len()))?;
                out.push(d.clone());
            }
            Some(k) if k < 0 => {
                return Err(infer_err!(
                    "Reshape requires all values in the new shape to be positive except a single \"-1\". However, the given new shape is {}",
                    shown()
                ))
            }
            _ => out.push(v.clone()),
        }
    }
    if let Some(i) = infer {
        let o = old.ok_or_else(|| {
            "Reshape expects the input tensor to have known shape when there is some dimension length to infer. However, the given input has no shape.".to_string()
        })?;
        let rest: Vec<PrimExpr> = out
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, d)| d.clone())
            .collect();
        out[i] = simplify(ctx.analyzer, &floordiv(&product(&o), &product(&rest)));
    }
    Ok(Some(out))
}

/// The most sections `split` may produce: each becomes a field of the result tuple.
const MAX_SECTIONS: i64 = 1 << 16;

/// `split(x, indices_or_sections, axis)`.
fn split(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let axis_attr = attr_int(call, "axis", 0)?;
    let axis = if t.ndim == -1 {
        None
    } else {
        Some(normalize_axis(call, t.ndim, axis_attr)?)
    };
    let shape = shape_of(t);
    let same = |n: usize| StructInfo::Tuple(vec![tensor_ndim(t.dtype, t.ndim, t.vdevice.clone()); n]);
    let ios =
        attr(call, "indices_or_sections").ok_or_else(|| format!("{}: missing indices_or_sections", op_name(call)))?;
    if let relax_ir::AttrValue::List(_) = ios {
        let idx = attr_opt_prims(call, "indices_or_sections")?.unwrap_or_default();
        if idx.is_empty() {
            return Ok(StructInfo::Tensor(t.clone()));
        }
        let (Some(shape), Some(axis)) = (shape, axis) else {
            return Ok(same(idx.len() + 1));
        };
        let dim = &shape[axis];
        let zero = int(0);
        let mut out = Vec::new();
        for i in 0..=idx.len() {
            let left = if i == 0 { zero.clone() } else { idx[i - 1].clone() };
            let right = if i < idx.len() { idx[i].clone() } else { dim.clone() };
            let left = min(&max(&left, &zero), dim);
            let right = min(&max(&right, &zero), dim);
            let d = max(&sub(&right, &left), &zero);
            let d = simplify(ctx.analyzer, &d);
            let mut s = shape.clone();
            s[axis] = d;
            out.push(tensor(s, t.dtype, t.vdevice.clone()));
        }
        return Ok(StructInfo::Tuple(out));
    }
    let n = ios
        .as_int()
        .ok_or_else(|| format!("{}: indices_or_sections must be an integer or a list", op_name(call)))?;
    if n <= 0 {
        return Err(infer_err!(
            "{}: the number of sections must be positive, got {}",
            op_name(call),
            n
        ));
    }
    if n > MAX_SECTIONS {
        return Err(infer_err!(
            "{}: {} sections is more than the supported {}",
            op_name(call),
            n,
            MAX_SECTIONS
        ));
    }
    if n == 1 {
        return Ok(StructInfo::Tensor(t.clone()));
    }
    let (Some(shape), Some(axis)) = (shape, axis) else {
        return Ok(same(n as usize));
    };
    let dim = &shape[axis];
    let nn = int(n);
    // ceildiv(dim, n) = floordiv(dim + n - 1, n)
    let len = simplify(ctx.analyzer, &floordiv(&sub(&add(dim, &nn), &int(1)), &nn));
    let mut s = shape.clone();
    s[axis] = len.clone();
    let mut out = vec![tensor(s.clone(), t.dtype, t.vdevice.clone()); n as usize - 1];
    let last = simplify(ctx.analyzer, &sub(dim, &mul(&len, &int(n - 1))));
    s[axis] = last;
    out.push(tensor(s, t.dtype, t.vdevice.clone()));
    Ok(StructInfo::Tuple(out))
}

/// `squeeze(x, axis)`.
fn squeeze(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let axis_attr = attr_opt_ints(call, "axis")?;
    if matches!(&axis_attr, Some(a) if a.is_empty()) {
        return Ok(StructInfo::Tensor(t.clone()));
    }
    let vd = t.vdevice.clone();
    if t.ndim == -1 {
        return Ok(tensor_ndim(t.dtype, -1, vd));
    }
    let values = deep_shape_values(t);
    let mut remove = vec![false; t.ndim as usize];
    if let Some(a) = &axis_attr {
        let axes = normalize_axes(call, t.ndim, a)?;
        let Some(v) = &values else {
            return Ok(tensor_ndim(t.dtype, t.ndim - axes.len() as i32, vd));
        };
        for &ax in &axes {
            match v[ax].as_int() {
                Some(1) | None => remove[ax] = true,
                Some(_) => {}
            }
        }
    } else {
        let Some(v) = &values else {
            return Ok(tensor_ndim(t.dtype, -1, vd));
        };
        for (i, d) in v.iter().enumerate() {
            match d.as_int() {
                None => return Ok(tensor_ndim(t.dtype, -1, vd)),
                Some(1) => remove[i] = true,
                _ => {}
            }
        }
    }
    let v = values.unwrap_or_default();
    let out: Vec<PrimExpr> = v
        .iter()
        .zip(&remove)
        .filter(|(_, r)| !**r)
        .map(|(d, _)| d.clone())
        .collect();
    let shape_is_var = matches!(t.shape.as_ref().map(|s| s.kind()), Some(ExprKind::Var(_)));
    if shape_is_var {
        if out.len() as i32 == t.ndim {
            Ok(StructInfo::Tensor(t.clone()))
        } else if axis_attr.is_some() {
            Ok(tensor_ndim(t.dtype, out.len() as i32, vd))
        } else {
            Ok(tensor_ndim(t.dtype, -1, vd))
        }
    } else {
        Ok(tensor(out, t.dtype, vd))
    }
}

/// What `concat` and `stack` need of their inputs.
struct Gathered {
    /// The common dtype (void when one input's is unknown).
    dtype: DataType,
    /// The inputs' shapes (deep shapes where only those are known).
    shapes: Vec<Vec<PrimExpr>>,
    /// Whether some input's shape is not a literal shape.
    shape_unknown: bool,
}

/// Check the inputs' dtypes agree (`dtype_err` otherwise) and each passes
/// `ndim_check`, and collect their shapes.
fn gather_inputs(
    ts: &[&TensorStructInfo],
    dtype_err: impl Fn(DataType, DataType) -> String,
    mut ndim_check: impl FnMut(&TensorStructInfo) -> Result<(), InferError>,
) -> Result<Gathered, InferError> {
    let mut dtype: Option<DataType> = None;
    let mut void = false;
    let mut shape_unknown = false;
    let mut shapes = Vec::new();
    for t in ts {
        if t.dtype.is_void() {
            void = true;
        } else if let Some(d) = dtype {
            if d != t.dtype {
                return Err(InferError::new(InferErrorKind::DType, dtype_err(d, t.dtype)));
            }
        } else {
            dtype = Some(t.dtype);
        }
        ndim_check(t)?;
        if let Some(v) = t.shape_values() {
            shapes.push(v.to_vec());
            continue;
        }
        shape_unknown = true;
        if let Some(v) = deep_shape_values(t) {
            shapes.push(v);
        }
    }
    let dtype = if void {
        DataType::VOID
    } else {
        dtype.unwrap_or(DataType::VOID)
    };
    Ok(Gathered {
        dtype,
        shapes,
        shape_unknown,
    })
}

/// `stack(tensors, axis)`.
fn stack(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let ts = tensors_of_tuple(call, args, "Stack")?;
    let out_ndim = if ts[0].ndim == -1 { -1 } else { ts[0].ndim + 1 };
    let Gathered {
        dtype,
        shapes,
        shape_unknown,
    } = gather_inputs(
        &ts,
        |d, e| format!("Stack expects all input tensors to have the same dtype. Found {d} and {e}"),
        |t| {
            if t.ndim != -1 && t.ndim != ts[0].ndim {
                return Err(infer_err!(
                    "Stack expects all input tensors to have same ndim. Found {} and {}",
                    ts[0].ndim,
                    t.ndim
                ));
            }
            Ok(())
        },
    )?;
    let vdev = merged_vdevice(ts.iter().copied());
    let axis = match attr_opt_int(call, "axis")? {
        Some(a) if out_ndim != -1 => normalize_axis(call, out_ndim, a)?,
        _ => 0,
    };
    let build = |s: &[PrimExpr], n: usize| {
        let mut out: Vec<PrimExpr> = s[..axis.min(s.len())].to_vec();
        out.push(int(n as i64));
        out.extend(s[axis.min(s.len())..].iter().cloned());
        out
    };
    if shapes.is_empty() {
        return Ok(tensor_ndim(dtype, out_ndim, vdev));
    }
    if ts.len() == 1 {
        return Ok(tensor(build(&shapes[0], 1), dtype, vdev));
    }
    let mut unknown = false;
    for d in 0..shapes[0].len() {
        for s in &shapes[1..] {
            if prove_ne(ctx.analyzer, &s[d], &shapes[0][d]) {
                return Err(infer_err!(
                    "Stack expects all input tensors to have identical shapes. Dimension {} differs between tensors: {} vs {}",
                    d,
                    show(&shapes[0][d]),
                    show(&s[d])
                ));
            } else if !prove_eq(ctx.analyzer, &s[d], &shapes[0][d]) {
                unknown = true;
            }
        }
    }
    if shape_unknown || unknown {
        return Ok(tensor_ndim(dtype, out_ndim, vdev));
    }
    Ok(tensor(build(&shapes[0], shapes.len()), dtype, vdev))
}

/// TVM's `CheckCollapseShape`.
fn check_collapse(call: &Call, ctx: &InferCtx, data: &[PrimExpr], target: &[PrimExpr]) -> Result<(), InferError> {
    let mut t_ax = target.len() as i64 - 1;
    for d_ax in (0..data.len()).rev() {
        if t_ax < 0 {
            continue;
        }
        let d0 = &data[d_ax];
        let d1 = &target[t_ax as usize];
        if prove_eq(ctx.analyzer, d0, d1) || d1.as_int() == Some(1) {
            t_ax -= 1;
        } else if let (Some(a), Some(b)) = (d0.as_int(), d1.as_int()) {
            debug_assert!(a != b);
            return Err(infer_err!(
                "In {}, the data shape at dim {} is {} and the target shape at dim {} is {}, which do not match the rule of collapse sum.",
                op_name(call),
                d_ax,
                show(d0),
                t_ax,
                show(d1)
            ));
        } else {
            return Err(infer_err!(
                "{} fails to match the axes because of unknown dim or symbolic shape. In this position the dim of data shape is {} while the dim of collapse shape is {}. If it is symbolic, consider use MatchCast first.",
                op_name(call),
                show(d0),
                show(d1)
            ));
        }
    }
    Ok(())
}

/// `collapse_sum_like(data, target)`.
fn collapse_sum_like(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let ts = tensor_args(call, args, 2)?;
    let (data, tgt) = (ts[0], ts[1]);
    if let (Some(d), Some(t)) = (deep_shape_values(data), deep_shape_values(tgt)) {
        check_collapse(call, ctx, &d, &t)?;
    }
    match &tgt.shape {
        Some(s) => Ok(tensor_shape_expr(s.clone(), data.dtype, tgt.vdevice.clone(), tgt.ndim)),
        None => Ok(tensor_ndim(data.dtype, tgt.ndim, tgt.vdevice.clone())),
    }
}

/// `collapse_sum_to(data, shape)`.
fn collapse_sum_to(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    if args.len() != 2 {
        return Err("CollapseSumTo should have 2 arguments".into());
    }
    let data = tensor_role(&args[0], "CollapseSumTo", "data")?;
    let shape = match &args[1] {
        StructInfo::Shape(s) => s,
        o => {
            return Err(infer_err!(
                "CollapseSumTo requires the input shape to be a Shape. However, the given one is {}",
                kind_name(o)
            ))
        }
    };
    if let (Some(d), Some(t)) = (deep_shape_values(data), shape_arg(call, args, 1)) {
        check_collapse(call, ctx, &d, &t)?;
    }
    Ok(tensor_shape_expr(
        call.args[1].clone(),
        data.dtype,
        data.vdevice.clone(),
        shape.ndim,
    ))
}

/// `repeat(x, repeats, axis)`.
fn repeat(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let repeats = attr_int(call, "repeats", 1)?;
    let axis_attr = attr_opt_int(call, "axis")?;
    if let Some(a) = axis_attr {
        if t.ndim != -1 && (a < -(t.ndim as i64) || a >= t.ndim as i64) {
            return Err(infer_err!(
                "Repeat requires the input axis belongs range [-data.ty.ndim, data.ty.ndim - 1]. However, the input axis is {}, while ndim is {}",
                a, t.ndim
            ));
        }
    }
    let vd = t.vdevice.clone();
    let Some(shape) = shape_of(t) else {
        if axis_attr.is_some() {
            if repeats == 1 {
                return Ok(StructInfo::Tensor(t.clone()));
            }
            return Ok(tensor_ndim(t.dtype, t.ndim, vd));
        }
        return Ok(tensor_ndim(t.dtype, 1, vd));
    };
    let r = int(repeats);
    match axis_attr {
        None => Ok(tensor(
            vec![simplify(ctx.analyzer, &mul(&product(&shape), &r))],
            t.dtype,
            vd,
        )),
        Some(a) => {
            let axis = normalize_axis(call, t.ndim, a)?;
            let mut s = shape;
            s[axis] = simplify(ctx.analyzer, &mul(&s[axis], &r));
            Ok(tensor(s, t.dtype, vd))
        }
    }
}

/// `tile(x, repeats)`.
fn tile(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let reps = attr_ints(call, "repeats", &[])?;
    let l = reps.len() as i32;
    let nd = t.ndim;
    let vd = t.vdevice.clone();
    let Some(shape) = shape_of(t) else {
        if nd == -1 {
            return Ok(tensor_ndim(t.dtype, -1, vd));
        }
        if l > nd {
            return Ok(tensor_ndim(t.dtype, l, vd));
        }
        if reps.iter().any(|&r| r != 1) {
            return Ok(tensor_ndim(t.dtype, nd, vd));
        }
        return Ok(StructInfo::Tensor(t.clone()));
    };
    let out_ndim = l.max(nd);
    let l_delta = out_ndim - l;
    let nd_delta = out_ndim - nd;
    let mut out = Vec::new();
    for i in 0..out_ndim {
        if i < l_delta {
            out.push(shape[(i - nd_delta) as usize].clone());
        } else if i < nd_delta {
            out.push(int(reps[(i - l_delta) as usize]));
        } else {
            let (dim, rep) = (&shape[(i - nd_delta) as usize], reps[(i - l_delta) as usize]);
            if let Some(v) = dim.as_int() {
                if v.checked_mul(rep).is_none() {
                    return Err(infer_err!(
                        "{}: dimension {i} of the result, {v} * {rep}, overflows int64",
                        op_name(call)
                    ));
                }
            }
            let d = mul(dim, &int(rep));
            out.push(simplify(ctx.analyzer, &d));
        }
    }
    Ok(tensor(out, t.dtype, vd))
}

/// `flip(x, axis)`.
fn flip(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let axis = attr_int(call, "axis", 0)?;
    if t.ndim != -1 && (axis < -(t.ndim as i64) || axis >= t.ndim as i64) {
        return Err(infer_err!(
            "Flip requires the input axis belongs range [-ndim, ndim - 1]. However, the input axis is {}, while ndim is {}",
            axis, t.ndim
        ));
    }
    Ok(StructInfo::Tensor(t.clone()))
}

/// `reverse_sequence(data, seq_lengths, seq_axis, batch_axis)`.
fn reverse_sequence(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let ts = tensor_args(call, args, 2)?;
    let (data, sl) = (ts[0], ts[1]);
    if sl.ndim != -1 && sl.ndim != 1 {
        return Err(infer_err!(
            "ReverseSequence requires seq_lengths to be 1-D. However, seq_lengths has ndim {}",
            sl.ndim
        ));
    }
    if !sl.dtype.is_void() && (!sl.dtype.is_int() || (sl.dtype.bits != 32 && sl.dtype.bits != 64)) {
        return Err(infer_err!(
            "ReverseSequence requires seq_lengths to have dtype int32 or int64. However, seq_lengths has dtype {}",
            sl.dtype
        ));
    }
    let seq_axis = attr_int(call, "seq_axis", 1)?;
    let mut batch_axis = attr_int(call, "batch_axis", 0)?;
    if data.ndim != -1 {
        let nd = data.ndim as i64;
        for (a, name) in [(seq_axis, "seq_axis"), (batch_axis, "batch_axis")] {
            if a < -nd || a >= nd {
                return Err(infer_err!(
                    "ReverseSequence requires {name} to belong to range [-ndim, ndim). However, the axis is {a}, while ndim is {nd}"
                ));
            }
        }
        if batch_axis < 0 {
            batch_axis += nd;
        }
        if let (Some(d), Some(s)) = (deep_shape_values(data), deep_shape_values(sl)) {
            let be = &d[batch_axis as usize];
            if let Some(se) = s.first() {
                if prove_ne(ctx.analyzer, se, be) {
                    return Err(infer_err!(
                        "ReverseSequence requires seq_lengths.shape[0] to equal the batch axis extent. However, seq_lengths.shape[0] is {}, while data.shape[{}] is {}",
                        show(se),
                        batch_axis,
                        show(be)
                    ));
                }
            }
        }
    }
    Ok(StructInfo::Tensor(data.clone()))
}

/// The manipulation operators.
pub static OPS: &[OpDef] = &[
    pure_op!(
        "relax.broadcast_to",
        broadcast_to,
        lg::manipulate::lowered::broadcast_to
    ),
    pure_op!("relax.concat", concat, lg::manipulate::lowered::concat),
    pure_op!("relax.expand_dims", expand_dims, lg::manipulate::lowered::expand_dims),
    pure_op!("relax.flatten", flatten, lg::manipulate::lowered::reshape),
    pure_op!(
        "relax.permute_dims",
        permute_dims,
        lg::manipulate::lowered::permute_dims
    ),
    pure_op!("relax.reshape", reshape, lg::manipulate::lowered::reshape),
    pure_op!("relax.split", split, lg::manipulate::lowered::split),
    pure_op!("relax.squeeze", squeeze, lg::manipulate::lowered::squeeze),
    pure_op!("relax.stack", stack, lg::manipulate::lowered::stack),
    pure_op!(
        "relax.collapse_sum_like",
        collapse_sum_like,
        lg::manipulate::lowered::collapse_sum
    ),
    pure_op!(
        "relax.collapse_sum_to",
        collapse_sum_to,
        lg::manipulate::lowered::collapse_sum
    ),
    pure_op!("relax.repeat", repeat, lg::manipulate::lowered::repeat),
    pure_op!("relax.tile", tile, lg::manipulate::lowered::tile),
    pure_op!("relax.flip", flip, lg::manipulate::lowered::flip),
    pure_op!(
        "relax.reverse_sequence",
        reverse_sequence,
        lg::manipulate::lowered::reverse_sequence
    ),
    pure_op!(
        "relax.gather_elements",
        gather_elements,
        lg::index::lowered::gather_elements
    ),
    pure_op!("relax.gather_nd", gather_nd, lg::index::lowered::gather_nd),
    pure_op!("relax.meshgrid", meshgrid, lg::manipulate::lowered::meshgrid),
    pure_op!("relax.one_hot", one_hot, lg::manipulate::lowered::one_hot),
    pure_op!(
        "relax.layout_transform",
        layout_transform,
        lg::manipulate::lowered::layout_transform
    ),
];

/// An inclusive integer interval.
type Interval = (i64, i64);

/// The range of `e` when each variable ranges over its interval (affine index
/// expressions: `+`, `-`, `*`, `//` and `%` by positive constants).
fn eval_range(e: &PrimExpr, env: &[(relax_ir::TirVar, Interval)]) -> Option<Interval> {
    use relax_ir::tir::BinOp;
    use relax_ir::PrimExprKind as K;
    match e.kind() {
        K::IntImm { value, .. } => Some((*value, *value)),
        K::Var(v) => env.iter().find(|(x, _)| x == v).map(|(_, r)| *r),
        K::Cast { value, .. } => eval_range(value, env),
        K::Binary { op, a, b } => {
            let (al, ah) = eval_range(a, env)?;
            let (bl, bh) = eval_range(b, env)?;
            match op {
                BinOp::Add => Some((al.checked_add(bl)?, ah.checked_add(bh)?)),
                BinOp::Sub => Some((al.checked_sub(bh)?, ah.checked_sub(bl)?)),
                BinOp::Mul => {
                    let c = [
                        al.checked_mul(bl)?,
                        al.checked_mul(bh)?,
                        ah.checked_mul(bl)?,
                        ah.checked_mul(bh)?,
                    ];
                    Some((*c.iter().min()?, *c.iter().max()?))
                }
                BinOp::FloorDiv if bl == bh && bl > 0 => Some((floor_div_i64(al, bl), floor_div_i64(ah, bl))),
                BinOp::FloorMod if bl == bh && bl > 0 => {
                    if floor_div_i64(al, bl) == floor_div_i64(ah, bl) {
                        Some((al - floor_div_i64(al, bl) * bl, ah - floor_div_i64(ah, bl) * bl))
                    } else {
                        Some((0, bl - 1))
                    }
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// TVM's `IndexMap::MapShape`: the extent of each result index over the input
/// shape (constant shapes by range analysis; symbolic shapes for the patterns
/// `v`, `v // k` and `v % k`).
fn map_shape(params: &[relax_ir::TirVar], results: &[PrimExpr], shape: &[PrimExpr]) -> Option<Vec<PrimExpr>> {
    use relax_ir::tir::BinOp;
    use relax_ir::PrimExprKind as K;
    let consts: Option<Vec<i64>> = shape.iter().map(|d| d.as_int()).collect();
    if let Some(c) = consts {
        let env: Vec<(relax_ir::TirVar, Interval)> = params
            .iter()
            .cloned()
            .zip(c.iter().map(|&d| (0, d.saturating_sub(1))))
            .collect();
        return results
            .iter()
            .map(|r| eval_range(r, &env).map(|(lo, hi)| int(hi.saturating_sub(lo).saturating_add(1))))
            .collect();
    }
    let dim_of = |v: &relax_ir::TirVar| params.iter().position(|p| p == v).map(|i| shape[i].clone());
    results
        .iter()
        .map(|r| match r.kind() {
            K::Var(v) => dim_of(v),
            K::Binary {
                op: BinOp::FloorDiv,
                a,
                b,
            } => {
                let d = dim_of(a.as_var()?)?;
                let k = b.as_int().filter(|&k| k > 0)?;
                // ceil(d / k), in the form TVM's iterator analysis produces:
                // (d - d % -k) // k
                match d.as_int() {
                    Some(c) => Some(int(floor_div_i64(c.saturating_add(k - 1), k))),
                    None => Some(PrimExpr::binary(
                        BinOp::FloorDiv,
                        PrimExpr::binary(BinOp::Sub, d.clone(), PrimExpr::binary(BinOp::FloorMod, d, int(-k))),
                        int(k),
                    )),
                }
            }
            K::Binary {
                op: BinOp::FloorMod,
                a,
                b,
            } => {
                a.as_var()?;
                Some(int(b.as_int().filter(|&k| k > 0)?))
            }
            _ => None,
        })
        .collect()
}

/// `layout_transform(x, index_map, pad_value)`.
fn layout_transform(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let map = match attr(call, "index_map") {
        Some(relax_ir::AttrValue::Map(m)) => m,
        _ => return Err(infer_err!("{} requires an index_map", op_name(call))),
    };
    let exprs = |key: &str| -> Vec<PrimExpr> {
        map.get(key)
            .and_then(|v| v.as_list())
            .map(|l| {
                l.iter()
                    .filter_map(|x| match x {
                        relax_ir::AttrValue::PrimExpr(e) => Some(e.clone()),
                        relax_ir::AttrValue::Int(i) => Some(int(*i)),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let params: Vec<relax_ir::TirVar> = exprs("params").iter().filter_map(|e| e.as_var().cloned()).collect();
    let results = exprs("results");
    if let Some(relax_ir::AttrValue::PrimExpr(p)) = attr(call, "pad_value") {
        if p.dtype() != t.dtype {
            return Err(infer_err!(
                "layout_transform pad_value dtype ({}) and input dtype ({}) must be the same",
                p.dtype(),
                t.dtype
            ));
        }
    }
    let out_ndim = results.len() as i32;
    let vd = t.vdevice.clone();
    if t.ndim == -1 {
        return Ok(tensor_ndim(t.dtype, out_ndim, vd));
    }
    if params.len() != t.ndim as usize {
        return Err(infer_err!(
            "number of dimensions in input must match the number of source dimensions in index map, but got {} != {}",
            t.ndim,
            params.len()
        ));
    }
    let Some(shape) = deep_shape_values(t) else {
        return Ok(tensor_ndim(t.dtype, out_ndim, vd));
    };
    match map_shape(&params, &results, &shape) {
        Some(out) => Ok(tensor(out, t.dtype, vd)),
        None => Ok(tensor_ndim(t.dtype, out_ndim, vd)),
    }
}
