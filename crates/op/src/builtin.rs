//! Built-in operators: the calling conventions (`call_tir`, `call_dps_packed`,
//! `call_pure_packed`, ...), shapes, VDevices, printing/assertions and the
//! memory/VM operators.

use crate::error::{infer_err, InferError};
use relax_ir::{Call, DataType, ExprKind, StructInfo, Target, VDevice};

use super::common::*;
use super::unary::unary_any;
use super::{InferCtx, OpDef};
use crate::derive_func::{apply_derive_func, DEFAULT_DERIVE};

/// The empty tuple (the unit value).
fn void() -> StructInfo {
    StructInfo::unit()
}

fn ret_void(_call: &Call, _args: &[StructInfo], _ctx: &InferCtx) -> Res {
    Ok(void())
}

fn ret_object(_call: &Call, _args: &[StructInfo], _ctx: &InferCtx) -> Res {
    Ok(StructInfo::Object)
}

/// `call_tir(gv, args, out_sinfo)` (also `call_tir_inplace`, `call_tir_with_grad`).
fn call_tir(call: &Call, _args: &[StructInfo], _ctx: &InferCtx) -> Res {
    if call.sinfo_args.len() != 1 {
        return Err("sinfo_args should have exactly 1 output StructInfo.".into());
    }
    if !matches!(call.args.first().map(|e| e.kind()), Some(ExprKind::GlobalVar(_))) {
        return Err(infer_err!(
            "{} expects the first argument to be a GlobalVar referring to a TIR PrimFunc.",
            op_name(call)
        ));
    }
    // The optional third argument is the `tir_vars` shape of symbolic values the
    // PrimFunc takes after its tensors.
    if !matches!(call.args.len(), 2 | 3) {
        return Err(infer_err!(
            "Operation {} expects either two arguments [callee, arg_tuple], or three arguments \
             [callee, arg_tuple, tir_args], but has {} arguments.",
            op_name(call),
            call.args.len()
        ));
    }
    Ok(call.sinfo_args[0].clone())
}

/// `call_dps_packed(func, args, out_sinfo)`.
fn call_dps_packed(call: &Call, _args: &[StructInfo], _ctx: &InferCtx) -> Res {
    if call.sinfo_args.len() != 1 {
        return Err("sinfo_args should have exact 1 output StructInfo.".into());
    }
    Ok(call.sinfo_args[0].clone())
}

/// The StructInfo a call of an opaque function returns: its declared return, or
/// (with a derivation function, as extern functions have) the call's
/// `sinfo_args`.
fn opaque_call_result(call: &Call, callee: &StructInfo) -> Res {
    match call.args.first().map(|e| e.kind()) {
        Some(ExprKind::Op(_)) => return Err(infer_err!("{} cannot be used with an op node", op_name(call))),
        // An extern function's StructInfo is opaque with the default derivation
        // (`infer_by_sinfo_args`).
        Some(ExprKind::ExternFunc { .. }) => return Ok(apply_derive_func(DEFAULT_DERIVE, call)),
        _ => {}
    }
    match callee {
        StructInfo::Func(f) => {
            if f.params.is_some() {
                return Err(infer_err!("{} must be called with an opaque function", op_name(call)));
            }
            match &f.derive_func {
                Some(d) => Ok(apply_derive_func(d, call)),
                None => Ok((*f.ret).clone()),
            }
        }
        other => Err(infer_err!(
            "Callee must have a function type, but has {}",
            kind_name(other)
        )),
    }
}

/// `call_pure_packed(func, args..., sinfo_args)`.
fn call_pure_packed(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    if args.is_empty() {
        return Err("call_pure_packed must be called with at least one argument".into());
    }
    opaque_call_result(call, &args[0])
}

/// `call_inplace_packed(func, args..., inplace_indices, sinfo_args)`.
fn call_inplace_packed(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    if args.len() <= 1 {
        return Err("call_inplace_packed must be called with at least two arguments (the packed call and at least one argument to the packed call)".into());
    }
    let ret = opaque_call_result(call, &args[0])?;
    let indices = attr_ints(call, "inplace_indices", &[])?;
    let num_args = args.len() as i64 - 1;
    let mut seen = Vec::new();
    for (i, &idx) in indices.iter().enumerate() {
        if idx < -1 || idx >= num_args {
            return Err(infer_err!(
                "In-place index {} is out of range (must be between -1 and {}, inclusive, but is {})",
                i,
                num_args - 1,
                idx
            ));
        }
        if idx != -1 {
            if seen.contains(&idx) {
                return Err(infer_err!(
                    "All in-place indices must be unique, but index {idx} appears more than once."
                ));
            }
            seen.push(idx);
        }
    }
    if seen.is_empty() {
        return Err("At least one index must have a value other than -1 (or else simply use call_pure_packed)".into());
    }
    if indices.len() > 1 && !matches!(ret, StructInfo::Tuple(_)) {
        return Err("Multiple outputs given via the inplace indices but the derived StructInfo is not a tuple".into());
    }
    Ok(ret)
}

/// `call_builtin_with_ctx(func, args, sinfo_args)`.
fn call_builtin_with_ctx(call: &Call, _args: &[StructInfo], _ctx: &InferCtx) -> Res {
    match call.sinfo_args.len() {
        0 => Ok(void()),
        1 => Ok(call.sinfo_args[0].clone()),
        _ => Err(infer_err!("{} takes at most one StructInfo argument", op_name(call))),
    }
}

/// `invoke_closure` / `invoke_pure_closure`.
fn invoke_closure(call: &Call, _args: &[StructInfo], _ctx: &InferCtx) -> Res {
    Ok(match call.sinfo_args.len() {
        0 => StructInfo::Object,
        1 => call.sinfo_args[0].clone(),
        _ => StructInfo::Tuple(call.sinfo_args.clone()),
    })
}

/// `shape_of(x)`.
fn shape_of_op(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = match args.first() {
        Some(StructInfo::Tensor(t)) => t,
        _ => return Err("shape_of expects a tensor input; use MatchCast if necessary".into()),
    };
    let _ = call;
    if t.ndim == -1 {
        return Ok(StructInfo::Shape(relax_ir::ShapeStructInfo { values: None, ndim: -1 }));
    }
    match t.shape_values() {
        Some(v) => Ok(StructInfo::shape(v.to_vec())),
        None => Ok(StructInfo::Shape(relax_ir::ShapeStructInfo {
            values: None,
            ndim: t.ndim,
        })),
    }
}

/// `size(x)`: an `int64` scalar tensor.
fn size(_call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    match args.first() {
        Some(StructInfo::Tensor(_)) => Ok(tensor(vec![], DataType::INT64, None)),
        _ => Err("size expects a tensor input; use MatchCast if necessary".into()),
    }
}

/// `tensor_to_shape(x)` of a 1-D tensor.
fn tensor_to_shape(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    if t.ndim != 1 {
        return Err(infer_err!(
            "relax.tensor_to_shape expected argument to be 1-d, but has ndim {}",
            t.ndim
        ));
    }
    let ndim = t
        .shape_values()
        .and_then(|v| v[0].as_int())
        .map(|n| n as i32)
        .unwrap_or(-1);
    Ok(StructInfo::Shape(relax_ir::ShapeStructInfo { values: None, ndim }))
}

/// `shape_to_tensor(shape)`.
fn shape_to_tensor(_call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    match args.first() {
        Some(StructInfo::Shape(s)) => Ok(tensor(vec![int(s.ndim as i64)], DataType::INT64, None)),
        _ => Err("shape_to_tensor expects a shape argument".into()),
    }
}

/// The module's VDevice at `index` (of `global_infos["vdevice"]`).
fn global_vdevice(ctx: &InferCtx, index: i64) -> Option<VDevice> {
    let m = ctx.module?;
    let list = m.vdevices();
    usize::try_from(index)
        .ok()
        .and_then(|i| list.get(i).map(|v| (*v).clone()))
}

fn prim_int_arg(call: &Call, i: usize) -> Option<i64> {
    match call.args.get(i).map(|e| e.kind()) {
        Some(ExprKind::PrimValue(v)) => v.as_int(),
        _ => None,
    }
}

fn dtype_arg(call: &Call, i: usize) -> DataType {
    match call.args.get(i).map(|e| e.kind()) {
        Some(ExprKind::DataTypeImm(d)) => *d,
        _ => DataType::VOID,
    }
}

/// `builtin.alloc_tensor(shape, dtype, runtime_device_index)`.
fn builtin_alloc_tensor(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let shape = call.args.first().ok_or("alloc_tensor expects a shape")?;
    if !matches!(shape.kind(), ExprKind::ShapeExpr(_)) {
        return Err("must be ShapeExpr".into());
    }
    let ndim = match args.first() {
        Some(StructInfo::Shape(s)) => s.ndim,
        _ => -1,
    };
    let vd = prim_int_arg(call, 2).and_then(|i| global_vdevice(ctx, i));
    Ok(tensor_shape_expr(shape.clone(), dtype_arg(call, 1), vd, ndim))
}

/// `memory.alloc_tensor(storage, offset, shape, dtype[, vdevice_index])`.
fn memory_alloc_tensor(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let ndim = match args.get(2) {
        Some(StructInfo::Shape(s)) => s.ndim,
        _ => return Err("must be a Expr of ShapeStructInfo".into()),
    };
    let vd = if call.args.len() == 5 {
        prim_int_arg(call, 4).and_then(|i| global_vdevice(ctx, i))
    } else {
        None
    };
    Ok(tensor_shape_expr(call.args[2].clone(), dtype_arg(call, 3), vd, ndim))
}

/// `vm.alloc_tensor(storage, offset, shape, dtype, runtime_device_index)`.
fn vm_alloc_tensor(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let dtype = dtype_arg(call, 3);
    let vd = prim_int_arg(call, 4).and_then(|i| global_vdevice(ctx, i));
    if let Some(ExprKind::ShapeExpr(v)) = call.args.get(2).map(|e| e.kind()) {
        return Ok(tensor(v.clone(), dtype, vd));
    }
    match args.get(2) {
        Some(StructInfo::Shape(s)) => match &s.values {
            Some(v) => Ok(tensor(v.clone(), dtype, vd)),
            None => Ok(tensor_ndim(dtype, s.ndim, vd)),
        },
        _ => Ok(tensor_ndim(dtype, -1, vd)),
    }
}

/// Resolves a VDevice attribute: a `"kind:index:scope"` string names the module's
/// `index`-th VDevice of that target kind.
fn vdevice_attr(call: &Call, ctx: &InferCtx, key: &str) -> Result<VDevice, InferError> {
    let s = attr(call, key)
        .and_then(|v| v.as_str())
        .ok_or_else(|| format!("{} requires the `{}` attribute", op_name(call), key))?;
    let parts: Vec<&str> = s.split(':').collect();
    let kind = parts.first().copied().unwrap_or("");
    let index = parts.get(1).and_then(|p| p.parse::<usize>().ok()).unwrap_or(0);
    if let Some(m) = ctx.module {
        if let Some(v) = m.vdevices().into_iter().filter(|v| v.target.kind == kind).nth(index) {
            return Ok(v.clone());
        }
    }
    Ok(VDevice {
        target: Target::from_kind(kind),
        vdevice_id: 0,
        memory_scope: parts.get(2).copied().unwrap_or("global").to_string(),
    })
}

/// `to_vdevice(x, dst_vdevice)`.
fn to_vdevice(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let vd = vdevice_attr(call, ctx, "dst_vdevice")?;
    match &t.shape {
        Some(s) => Ok(tensor_shape_expr(s.clone(), t.dtype, Some(vd), t.ndim)),
        None => Ok(tensor_ndim(t.dtype, t.ndim, Some(vd))),
    }
}

/// `hint_on_device(x, device)`: the input's StructInfo.
fn hint_on_device(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    Ok(StructInfo::Tensor(unary_tensor(call, args)?.clone()))
}

/// `assert_op(cond, format_args..., format)`: the condition must be a boolean
/// scalar.
fn assert_op(_call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let Some(cond) = args.first() else {
        return Err("Assert must have at least one argument (the condition).".into());
    };
    let ok = match cond {
        StructInfo::Prim(p) => p.dtype.is_bool(),
        StructInfo::Tensor(t) => (t.dtype.is_bool() || t.dtype.is_void()) && (t.ndim == 0 || t.ndim == -1),
        _ => false,
    };
    if !ok {
        return Err(infer_err!(
            "The argument to assert must be a boolean scalar, but received {}",
            kind_name(cond)
        ));
    }
    Ok(void())
}

macro_rules! op {
    ($name:literal, $pure:expr, $f:expr) => {
        OpDef {
            name: $name,
            pure: $pure,
            infer: $f,
            legalize: None,
        }
    };
}

/// The built-in operators.
pub static OPS: &[OpDef] = &[
    op!("relax.call_tir", true, call_tir),
    op!("relax.call_tir_with_grad", true, call_tir),
    op!("relax.call_tir_inplace", true, call_tir),
    op!("relax.dist.call_tir", true, call_tir),
    op!("relax.call_dps_packed", true, call_dps_packed),
    op!("relax.call_pure_packed", true, call_pure_packed),
    op!("relax.call_inplace_packed", true, call_inplace_packed),
    op!("relax.call_builtin_with_ctx", false, call_builtin_with_ctx),
    op!("relax.null_value", true, ret_object),
    op!("relax.print", false, ret_void),
    op!("relax.assert_op", false, assert_op),
    op!("relax.make_closure", true, ret_object),
    op!("relax.invoke_closure", false, invoke_closure),
    op!("relax.invoke_pure_closure", true, invoke_closure),
    op!("relax.shape_of", true, shape_of_op),
    op!("relax.size", true, size),
    op!("relax.tensor_to_shape", true, tensor_to_shape),
    op!("relax.shape_to_tensor", true, shape_to_tensor),
    op!("relax.builtin.alloc_tensor", true, builtin_alloc_tensor),
    op!("relax.builtin.stop_lift_params", true, unary_any),
    op!("relax.memory.alloc_storage", true, ret_object),
    op!("relax.memory.alloc_tensor", true, memory_alloc_tensor),
    op!("relax.memory.kill_storage", false, ret_void),
    op!("relax.memory.kill_tensor", false, ret_void),
    op!("relax.vm.alloc_storage", true, ret_object),
    op!("relax.vm.alloc_tensor", true, vm_alloc_tensor),
    op!("relax.vm.kill_object", false, ret_void),
    op!("relax.vm.call_tir_dyn", false, ret_void),
    op!("relax.to_vdevice", true, to_vdevice),
    op!("relax.hint_on_device", true, hint_on_device),
];
