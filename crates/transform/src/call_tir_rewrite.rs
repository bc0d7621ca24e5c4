//! `call-tir-rewrite` (TVM's CallTIRRewrite): destination-passing calls made explicit.
//!
//! `y = R.call_tir(f, (x,), out_sinfo)` becomes
//! ```text
//! alloc = R.builtin.alloc_tensor(R.shape([..]), R.dtype(..), 0, R.str("global"))
//! _ = f(x, alloc)
//! y = alloc
//! ```
//! and likewise for `call_tir_inplace` (outputs that alias an input are not
//! allocated) and `call_dps_packed` (the callee is a packed function). A tuple of
//! outputs becomes a tuple of allocations. A `call_tir` with the legacy trailing
//! `tir_vars` shape is left as it is.

use relax_ir::mutator::{walk_binding, ExprMutator};
use relax_ir::relax::TensorStructInfo;
use relax_ir::{
    AttrValue, Attrs, BaseFunc, Binding, Call, Diagnostic, Expr, ExprKind, IRModule, PrimExpr, Span, StructInfo, Var,
};

/// An error of the rewrite (no source location).
fn rewrite_error(message: impl Into<String>) -> Diagnostic {
    Diagnostic::error(message, Span::NONE)
}

/// Rewrite every `call_tir`, `call_tir_inplace` and `call_dps_packed` binding of the
/// module's Relax functions into explicit allocations and a call.
pub fn call_tir_rewrite(module: &IRModule) -> Result<IRModule, Diagnostic> {
    let mut out = module.clone();
    for f in out.functions.values_mut() {
        if let BaseFunc::Relax(func) = f {
            let mut m = Rewriter {
                module,
                in_dataflow: false,
                error: None,
            };
            let new = m.visit_function(func);
            if let Some(e) = m.error {
                return Err(e);
            }
            *func = new;
        }
    }
    Ok(out)
}

struct Rewriter<'a> {
    module: &'a IRModule,
    in_dataflow: bool,
    error: Option<Diagnostic>,
}

/// The module's index of `vdevice` (TVM's `GetDeviceIndex`), or of the first VDevice
/// with the `global` memory scope when the output has none; 0 without VDevices.
fn device_index(module: &IRModule, ts: &TensorStructInfo) -> (i64, String) {
    let list = module.vdevices();
    match &ts.vdevice {
        Some(v) => (
            list.iter().position(|d| *d == v).unwrap_or(0) as i64,
            v.memory_scope.clone(),
        ),
        None => (
            list.iter().position(|d| d.memory_scope == "global").unwrap_or(0) as i64,
            "global".to_string(),
        ),
    }
}

impl Rewriter<'_> {
    fn fresh(&self, name: &str, sinfo: StructInfo) -> Var {
        Var::with(name, Some(sinfo), self.in_dataflow, Span::NONE)
    }

    /// `alloc = R.builtin.alloc_tensor(shape, dtype, device_index, scope)`.
    fn alloc(&self, ts: &TensorStructInfo, out: &mut Vec<Binding>) -> Result<Expr, Diagnostic> {
        let shape = match ts.shape.as_ref().map(|s| s.kind()) {
            Some(ExprKind::ShapeExpr(_)) => ts.shape.clone().unwrap_or_else(|| Expr::shape(Vec::new())),
            _ => {
                return Err(rewrite_error(
                    "call_tir outputs must have a known shape (a ShapeExpr) to be allocated",
                ))
            }
        };
        if ts.dtype.is_void() {
            return Err(rewrite_error(
                "call_tir outputs must have a known dtype to be allocated",
            ));
        }
        let (index, scope) = device_index(self.module, ts);
        let vdevice = self.module.vdevices().get(index as usize).map(|v| (*v).clone());
        let call = Expr::call(
            Expr::op("relax.builtin.alloc_tensor"),
            vec![
                shape.clone(),
                Expr::new(ExprKind::DataTypeImm(ts.dtype)),
                Expr::new(ExprKind::PrimValue(PrimExpr::int(index))),
                Expr::new(ExprKind::StringImm(scope)),
            ],
            Attrs::new(),
            vec![StructInfo::Tensor(ts.clone())],
        );
        let var = self.fresh(
            "alloc",
            StructInfo::Tensor(TensorStructInfo {
                shape: Some(shape),
                dtype: ts.dtype,
                vdevice,
                ndim: ts.ndim,
            }),
        );
        out.push(Binding::VarBinding {
            var: var.clone(),
            value: call,
            span: Span::NONE,
        });
        Ok(var.to_expr())
    }

    /// The bindings replacing `var = call` (a DPS call), or `None` for other calls.
    fn rewrite(&self, var: &Var, call: &Call, span: Span) -> Result<Option<Vec<Binding>>, Diagnostic> {
        let op = match call.op.as_op() {
            Some(o @ ("relax.call_tir" | "relax.call_tir_inplace" | "relax.call_dps_packed")) => o,
            _ => return Ok(None),
        };
        let inplace: Option<Vec<i64>> = (op == "relax.call_tir_inplace")
            .then(|| {
                call.attrs
                    .get("inplace_indices")
                    .and_then(AttrValue::as_int_list)
                    .ok_or_else(|| rewrite_error("call_tir_inplace needs `inplace_indices`"))
            })
            .transpose()?;
        let (callee, args) = match call.args.as_slice() {
            [f, a] => (f.clone(), a.clone()),
            // The legacy trailing `tir_vars` shape (the engine passes its values
            // between inputs and outputs): left to the run-time `call_tir`.
            [_, _, _] => return Ok(None),
            _ => return Err(rewrite_error(format!("{op} expects a callee and a tuple of arguments"))),
        };
        let out_sinfo = match call.sinfo_args.as_slice() {
            [one] => one.clone(),
            many => StructInfo::Tuple(many.to_vec()),
        };
        let mut infos = Vec::new();
        flatten_outputs(&out_sinfo, &mut infos)?;
        let nested = matches!(&out_sinfo, StructInfo::Tuple(f) if f.iter().any(|x| matches!(x, StructInfo::Tuple(_))));
        if nested && inplace.is_some() {
            return Err(rewrite_error("call_tir_inplace does not support nested tuple outputs"));
        }
        let mut bindings = Vec::new();
        // An in-place argument that is not a variable (a constant) is bound to one
        // first, so that the output is the very tensor the call writes.
        let args = match (args.kind(), &inplace) {
            (ExprKind::Tuple(fields), Some(idx))
                if idx
                    .iter()
                    .any(|&i| i >= 0 && fields.get(i as usize).is_some_and(|f| f.as_var().is_none())) =>
            {
                let mut fields = fields.clone();
                for &i in idx.iter().filter(|&&i| i >= 0) {
                    let Some(f) = fields.get_mut(i as usize) else { continue };
                    if f.as_var().is_none() {
                        let sinfo = infos
                            .iter()
                            .zip(idx)
                            .find(|(_, &j)| j == i)
                            .map(|(t, _)| StructInfo::Tensor((*t).clone()))
                            .unwrap_or(StructInfo::Object);
                        let v = self.fresh("lv", sinfo);
                        bindings.push(Binding::VarBinding {
                            var: v.clone(),
                            value: f.clone(),
                            span,
                        });
                        *f = v.to_expr();
                    }
                }
                Expr::tuple(fields)
            }
            _ => args,
        };
        let arg_fields: Option<&Vec<Expr>> = match args.kind() {
            ExprKind::Tuple(f) => Some(f),
            _ => None,
        };
        let mut outs = Vec::with_capacity(infos.len());
        let mut new_outs = Vec::new();
        for (k, ts) in infos.iter().enumerate() {
            let target = inplace.as_ref().and_then(|idx| idx.get(k).copied()).unwrap_or(-1);
            if target < 0 {
                let e = self.alloc(ts, &mut bindings)?;
                new_outs.push(e.clone());
                outs.push(e);
            } else {
                let e = arg_fields
                    .and_then(|f| f.get(target as usize))
                    .ok_or_else(|| rewrite_error(format!("{op}: inplace index {target} does not name an argument")))?;
                outs.push(e.clone());
            }
        }
        let mut call_args: Vec<Expr> = match arg_fields {
            Some(f) => f.clone(),
            None => vec![args.clone()],
        };
        call_args.extend(new_outs);
        let value = Expr::call(callee, call_args, Attrs::new(), Vec::new());
        let call_sinfo = match value.as_call().map(|c| c.op.kind()) {
            Some(ExprKind::GlobalVar(_)) | Some(ExprKind::Op(_)) => StructInfo::Tuple(Vec::new()),
            _ => StructInfo::Object,
        };
        bindings.push(Binding::VarBinding {
            var: self.fresh("_", call_sinfo),
            value,
            span,
        });
        let mut next = outs.into_iter();
        let result = rebuild_outputs(&out_sinfo, &mut next);
        bindings.push(Binding::VarBinding {
            var: var.clone(),
            value: result,
            span,
        });
        Ok(Some(bindings))
    }
}

/// The tensors of an output StructInfo (a tensor or nested tuples of tensors), in order.
fn flatten_outputs<'s>(s: &'s StructInfo, out: &mut Vec<&'s TensorStructInfo>) -> Result<(), Diagnostic> {
    match s {
        StructInfo::Tensor(t) => out.push(t),
        StructInfo::Tuple(fields) => {
            for f in fields {
                flatten_outputs(f, out)?;
            }
        }
        _ => {
            return Err(rewrite_error(
                "call_tir outputs must be tensors or (nested) tuples of tensors",
            ))
        }
    }
    Ok(())
}

/// The output value shaped like `s` from the flat outputs.
fn rebuild_outputs(s: &StructInfo, next: &mut impl Iterator<Item = Expr>) -> Expr {
    match s {
        StructInfo::Tuple(fields) => Expr::tuple(fields.iter().map(|f| rebuild_outputs(f, next)).collect()),
        _ => next.next().unwrap_or_else(|| Expr::tuple(Vec::new())),
    }
}

impl ExprMutator for Rewriter<'_> {
    fn visit_block(&mut self, b: &relax_ir::BindingBlock) -> relax_ir::BindingBlock {
        let saved = std::mem::replace(&mut self.in_dataflow, b.is_dataflow);
        let out = relax_ir::mutator::walk_block(self, b);
        self.in_dataflow = saved;
        out
    }
    fn visit_binding(&mut self, b: &Binding) -> Vec<Binding> {
        let b = walk_binding(self, b);
        if let Binding::VarBinding { var, value, span } = &b {
            if let Some(call) = value.as_call() {
                match self.rewrite(var, call, *span) {
                    Ok(Some(v)) => return v,
                    Ok(None) => {}
                    Err(e) => {
                        self.error.get_or_insert(e);
                    }
                }
            }
        }
        vec![b]
    }
}
