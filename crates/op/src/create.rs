//! Tensor creation: `full`, `ones`, `zeros`, `*_like`, `arange`, `eye`,
//! `eye_like`, `tril`, `triu`, `hamming_window`.

use crate::error::{infer_err, InferError};
use relax_ir::tir::Intrinsic;
use relax_ir::{Call, DataType, ExprKind, PrimExpr, StructInfo};

use super::common::*;
use super::{pure_op, InferCtx, OpDef};
use crate::legalize as lg;

fn shape_arg_ndim<'a>(
    call: &Call,
    args: &'a [StructInfo],
    what: &str,
) -> Result<&'a relax_ir::ShapeStructInfo, InferError> {
    match args.first() {
        Some(StructInfo::Shape(s)) => Ok(s),
        Some(o) => Err(infer_err!(
            "{what} requires the input shape to be a Shape. However, the given one is {}",
            kind_name(o)
        )),
        None => Err(infer_err!("{} is missing its shape argument", op_name(call))),
    }
}

/// `full(shape, fill_value, dtype)`.
fn full(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    if args.len() != 2 {
        return Err("Full op should have 2 arguments".into());
    }
    let shape = shape_arg_ndim(call, args, "Full")?;
    let fill = match &args[1] {
        StructInfo::Tensor(t) if t.ndim == 0 => t,
        other => {
            return Err(infer_err!(
                "Full requires the input fill value to be zero rank Tensor. However, the given one is {}",
                kind_name(other)
            ))
        }
    };
    let dtype = attr_opt_dtype(call, "dtype")?.unwrap_or(fill.dtype);
    Ok(tensor_shape_expr(
        call.args[0].clone(),
        dtype,
        fill.vdevice.clone(),
        shape.ndim,
    ))
}

/// `full_like(x, fill_value, dtype)`.
fn full_like(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let ts = tensor_args(call, args, 2)?;
    if ts[1].ndim != 0 {
        return Err(infer_err!(
            "FullLike requires the input fill value to be zero rank Tensor. However, the given one has ndim{}",
            ts[1].ndim
        ));
    }
    match attr_opt_dtype(call, "dtype")? {
        None => Ok(StructInfo::Tensor(ts[0].clone())),
        Some(d) => Ok(with_dtype(ts[0], d)),
    }
}

/// `ones(shape, dtype)` / `zeros(shape, dtype)`.
fn ones_zeros(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    if args.len() != 1 {
        return Err("Ones/Zeros should have 1 argument".into());
    }
    let shape = shape_arg_ndim(call, args, "Ones/Zeros")?;
    let dtype = attr_opt_dtype(call, "dtype")?.ok_or_else(|| format!("{} requires a dtype", op_name(call)))?;
    Ok(tensor_shape_expr(call.args[0].clone(), dtype, None, shape.ndim))
}

/// `ones_like(x, dtype)` / `zeros_like(x, dtype)`.
fn ones_zeros_like(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    match attr_opt_dtype(call, "dtype")? {
        None => Ok(StructInfo::Tensor(t.clone())),
        Some(d) => Ok(with_dtype(t, d)),
    }
}

/// The `PrimExpr` of a `PrimValue` argument (or one whose StructInfo knows it).
fn prim_arg(call: &Call, args: &[StructInfo], i: usize, what: &str, key: &str) -> Result<PrimExpr, InferError> {
    if let Some(ExprKind::PrimValue(v)) = call.args.get(i).map(|e| e.kind()) {
        return Ok(v.clone());
    }
    if let Some(StructInfo::Prim(p)) = args.get(i) {
        if let Some(v) = &p.value {
            return Ok(v.clone());
        }
        // A scalar variable stands for itself (a Relax `Var` of `R.Prim` type is a
        // `PrimExpr` in TVM's unified IR).
        if let Some(ExprKind::Var(v)) = call.args.get(i).map(|e| e.kind()) {
            return Ok(relax_ir::TirVar::new(v.name(), p.dtype).to_expr());
        }
    }
    Err(infer_err!(
        "{what} expects the `{key}` to be a PrimExpr, but got {}",
        args.get(i).map(kind_name).unwrap_or("nothing")
    ))
}

/// `eye(n, m, k, dtype)`.
fn eye(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    nargs_is(args, 3, "Eye op should have 3 arguments: n, m, and k")?;
    let n = prim_arg(call, args, 0, "Eye", "n")?;
    let m = prim_arg(call, args, 1, "Eye", "m")?;
    let dtype = attr_opt_dtype(call, "dtype")?.unwrap_or(DataType::FLOAT32);
    Ok(tensor(vec![n, m], dtype, None))
}

/// `eye_like(x, k, dtype)`.
fn eye_like(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    nargs_is(args, 2, "Eye_like op should have 2 arguments: x and k")?;
    let x = tensor_or(&args[0], |k| {
        format!("Eye_like expects the input `x` to be a Tensor, but got {k}")
    })?;
    if x.ndim != 2 && x.ndim != -1 {
        return Err(infer_err!(
            "Eye_like expects the input tensor to be 2-dimensional, but got {} dimensions",
            x.ndim
        ));
    }
    let dtype = attr_opt_dtype(call, "dtype")?.unwrap_or(x.dtype);
    match &x.shape {
        Some(s) => Ok(tensor_shape_expr(s.clone(), dtype, x.vdevice.clone(), x.ndim)),
        None => Ok(tensor_ndim(dtype, x.ndim, x.vdevice.clone())),
    }
}

/// `arange(start, end, step, dtype)`.
fn arange(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    nargs_is(
        args,
        3,
        "Arange should have 3 arguments, which are `start`, `end` and `step`",
    )?;
    let start = prim_arg(call, args, 0, "Arange", "start")?;
    let end = prim_arg(call, args, 1, "Arange", "end")?;
    let step = prim_arg(call, args, 2, "Arange", "step")?;
    let dtype = attr_opt_dtype(call, "dtype")?.unwrap_or(DataType::INT64);
    let all_int = [&start, &end, &step].iter().all(|e| e.dtype().is_int());
    let num = if all_int {
        floordiv(
            &sub(&add(&sub(&end, &start), &step), &PrimExpr::int_of(1, step.dtype())),
            &step,
        )
    } else {
        let as_f = |e: &PrimExpr| -> Option<f64> {
            match e.kind() {
                relax_ir::PrimExprKind::IntImm { value, .. } => Some(*value as f64),
                relax_ir::PrimExprKind::FloatImm { value, .. } => Some(*value),
                _ => None,
            }
        };
        match (as_f(&start), as_f(&end), as_f(&step)) {
            (Some(s), Some(e), Some(st)) if st != 0.0 => {
                // cast(int64, ceil(cast(float32, end - start) / step))
                let diff = (e - s) as f32;
                int(((diff / st as f32) as f64).ceil() as i64)
            }
            _ => {
                let diff = fsub(&end, &start).cast(DataType::FLOAT32);
                let q = fdiv(&diff, &step);
                PrimExpr::intrinsic_call(Intrinsic::Ceil, q.dtype(), vec![q]).cast(DataType::INT64)
            }
        }
    };
    Ok(tensor(vec![simplify(ctx.analyzer, &num)], dtype, None))
}

/// `hamming_window(window_size, periodic, alpha, beta, dtype)`.
fn hamming_window(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let dtype = attr_opt_dtype(call, "dtype")?.unwrap_or(DataType::FLOAT32);
    if dtype.is_integer() {
        return Err(infer_err!(
            "Hamming Window expects the datatype to be float but got {dtype}"
        ));
    }
    let w = prim_arg(call, args, 0, "Hamming_window", "window_size")?;
    if let Some(v) = w.as_int() {
        if v < 1 {
            return Err(infer_err!(
                "Hamming_window expects the window_size must be greater than zero but got {v}"
            ));
        }
    }
    Ok(tensor(vec![simplify(ctx.analyzer, &w)], dtype, None))
}

/// `tril(x, k)` / `triu(x, k)`: the input's StructInfo.
fn tril_triu(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    check_nargs(call, args, 2)?;
    let t = tensor_arg(call, args, 0)?;
    if !matches!(args[1], StructInfo::Prim(_)) {
        return Err(infer_err!(
            "{} requires that args[1] be a PrimType, but was instead {}",
            op_name(call),
            kind_name(&args[1])
        ));
    }
    if t.ndim != -1 && t.ndim < 2 {
        return Err(infer_err!(
            "{} requires the input tensor to have at least two dimensions. However, the given input has {} dimension(s).",
            op_name(call),
            t.ndim
        ));
    }
    Ok(StructInfo::Tensor(t.clone()))
}

/// The creation operators.
pub static OPS: &[OpDef] = &[
    pure_op!("relax.full", full, lg::create::lowered::full),
    pure_op!("relax.full_like", full_like, lg::create::lowered::full),
    pure_op!("relax.ones", ones_zeros, lg::create::lowered::ones),
    pure_op!("relax.zeros", ones_zeros, lg::create::lowered::zeros),
    pure_op!("relax.ones_like", ones_zeros_like, lg::create::lowered::ones_like),
    pure_op!("relax.zeros_like", ones_zeros_like, lg::create::lowered::zeros_like),
    pure_op!("relax.eye", eye, lg::create::lowered::eye),
    pure_op!("relax.eye_like", eye_like, lg::create::lowered::eye_like),
    pure_op!("relax.arange", arange, lg::create::lowered::arange),
    pure_op!("relax.hamming_window", hamming_window),
    pure_op!("relax.tril", tril_triu, lg::create::lowered::tril),
    pure_op!("relax.triu", tril_triu, lg::create::lowered::triu),
];
