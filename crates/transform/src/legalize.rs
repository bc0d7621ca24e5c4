//! `LegalizeOps`: every Relax operator call whose StructInfo is known enough is
//! replaced by its operator's legalization (TVM 0.27's
//! `relax.transform.LegalizeOps`), usually
//! `R.call_tir(cls.<prim_func>, (args...), out_ty=...)` calling a generated TIR
//! PrimFunc.
//!
//! The per-operator part (each `OpDef`'s fold and legalization) lives with the
//! operator definitions in `relax_op::legalize`; this pass walks the
//! module, asks each bound call's operator for its legalization, adds the
//! generated PrimFuncs under TVM's names (`add`, `add1`, ...), deduplicated
//! structurally, and reports every call whose legalization declined as a
//! `legalize/skipped` warning (the call is left unchanged).

use relax_ir::mutator::{walk_binding, walk_block, ExprMutator};
use relax_ir::relax::{BindingBlock, Call};
use relax_ir::structural::{structural_equal_prim_func, structural_hash_prim_func};
use relax_ir::{
    Attrs, BaseFunc, Binding, Diagnostic, Expr, ExprKind, GlobalVar, IRModule, PrimExpr, PrimFunc, StructInfo,
};
use relax_op::legalize::{Emitter, LegalizeCtx, Legalized, Lowered, Skip};
use relax_op::OpId;

struct PassEmitter<'a> {
    pass: &'a mut Pass,
    bindings: Vec<Binding>,
    dataflow: bool,
}

impl PassEmitter<'_> {
    fn fresh(&self, name: &str, sinfo: StructInfo) -> relax_ir::Var {
        if self.dataflow {
            relax_ir::Var::new_dataflow(name, Some(sinfo))
        } else {
            relax_ir::Var::new(name, Some(sinfo))
        }
    }
}

impl Emitter for PassEmitter<'_> {
    fn call_tir(&mut self, lowered: Lowered) -> Expr {
        self.pass.call_tir(lowered)
    }
    fn emit(&mut self, name: &str, value: Expr, sinfo: StructInfo) -> Expr {
        let var = self.fresh(name, sinfo);
        self.bindings.push(Binding::VarBinding {
            var: var.clone(),
            value,
            span: relax_ir::Span::NONE,
        });
        var.to_expr()
    }
    fn match_cast(&mut self, name: &str, value: Expr, sinfo: StructInfo) -> Expr {
        let var = self.fresh(name, sinfo.clone());
        self.bindings.push(Binding::MatchCast {
            var: var.clone(),
            value,
            struct_info: sinfo,
            span: relax_ir::Span::NONE,
        });
        var.to_expr()
    }
}

/// The StructInfo of a normalized argument (a variable or a constant).
pub fn arg_struct_info(e: &Expr) -> Option<StructInfo> {
    match e.kind() {
        ExprKind::Var(v) => v.struct_info().cloned(),
        ExprKind::Constant { data } => Some(StructInfo::tensor(
            data.shape.iter().map(|&d| PrimExpr::int(d)).collect(),
            data.dtype,
        )),
        ExprKind::PrimValue(p) => Some(StructInfo::prim_value(p.clone())),
        ExprKind::ShapeExpr(v) => Some(StructInfo::shape(v.clone())),
        ExprKind::Tuple(fields) => Some(StructInfo::Tuple(
            fields.iter().map(arg_struct_info).collect::<Option<Vec<_>>>()?,
        )),
        ExprKind::StringImm(_) | ExprKind::DataTypeImm(_) => Some(StructInfo::Object),
        _ => None,
    }
}

/// `R.call_tir(cls.<gname>, (args...), [tir_vars,] out_ty=...)` of a lowered call whose
/// PrimFunc is in the module as `gname`.
pub(crate) fn call_tir_of(gname: &str, lowered: Lowered) -> Expr {
    let mut cargs = vec![
        Expr::new(ExprKind::GlobalVar(GlobalVar::new(gname))),
        Expr::tuple(lowered.args),
    ];
    if !lowered.tir_vars.is_empty() {
        cargs.push(Expr::shape(lowered.tir_vars));
    }
    Expr::call(Expr::op("relax.call_tir"), cargs, Attrs::new(), vec![lowered.out])
}

struct Pass {
    module: IRModule,
    /// Generated functions (name, structural hash) for deduplication.
    generated: Vec<(String, u64)>,
    /// One warning per call whose legalization declined.
    skipped: Vec<Diagnostic>,
    /// Whether the binding block being rewritten is a dataflow block.
    dataflow: bool,
}

impl Pass {
    fn add_prim_func(&mut self, name_hint: &str, func: PrimFunc) -> String {
        let h = structural_hash_prim_func(&func);
        for (name, hash) in &self.generated {
            if *hash == h {
                if let Some(existing) = self.module.prim_func(name) {
                    if structural_equal_prim_func(existing, &func) {
                        return name.clone();
                    }
                }
            }
        }
        let mut name = name_hint.to_string();
        let mut k = 1;
        while self.module.get(&name).is_some() {
            name = format!("{name_hint}{k}");
            k += 1;
        }
        self.module.add(&name, BaseFunc::Prim(func));
        self.generated.push((name.clone(), h));
        name
    }

    /// `R.call_tir` of a lowered call (its PrimFunc added to the module).
    fn call_tir(&mut self, lowered: Lowered) -> Expr {
        let gname = self.add_prim_func(&lowered.name, lowered.func.clone());
        call_tir_of(&gname, lowered)
    }

    /// The replacement of `var = call`: bindings to emit first, and the new
    /// value; `None` leaves the call (a skipped legalization is reported).
    fn lower_call(
        &mut self,
        var: &relax_ir::Var,
        call: &Call,
        dataflow: bool,
        span: relax_ir::Span,
    ) -> Option<(Vec<Binding>, Expr)> {
        let op = OpId::of(call.op.as_op()?)?.get();
        if op.fold.is_none() && op.legalize.is_none() {
            return None;
        }
        let skip = |pass: &mut Pass, reason: String| {
            let mut d = Diagnostic::warning(
                format!(
                    "`{}` is left as a call (not lowered to a PrimFunc): {reason}",
                    op.def.name
                ),
                span,
            );
            d.rule = Some(relax_ir::Rule::LegalizeSkipped);
            pass.skipped.push(d);
            None
        };
        let Some(args) = call.args.iter().map(arg_struct_info).collect::<Option<Vec<_>>>() else {
            return skip(self, "an argument has no StructInfo".into());
        };
        let Some(out) = var.struct_info().cloned() else {
            return skip(self, "the result has no StructInfo".into());
        };
        let ctx = LegalizeCtx { call, args, out };
        if let Some(folded) = op.fold.and_then(|g| g(&ctx)) {
            return Some((Vec::new(), folded));
        }
        let f = op.legalize?;
        let mut em = PassEmitter {
            pass: self,
            bindings: Vec::new(),
            dataflow,
        };
        match f(&ctx, &mut em) {
            Ok(Legalized::Call(lowered)) => {
                let bindings = em.bindings;
                Some((bindings, self.call_tir(*lowered)))
            }
            Ok(Legalized::Expr(e)) => Some((em.bindings, e)),
            Err(Skip { reason }) => skip(self, reason),
        }
    }
}

/// The driver is an [`ExprMutator`]: calls bound to variables are lowered, every
/// other node is rebuilt by the default recursion (nested functions, `If`
/// branches, `SeqExpr`s).
impl ExprMutator for Pass {
    fn visit_block(&mut self, b: &BindingBlock) -> BindingBlock {
        let saved = std::mem::replace(&mut self.dataflow, b.is_dataflow);
        let out = walk_block(self, b);
        self.dataflow = saved;
        out
    }

    fn visit_binding(&mut self, b: &Binding) -> Vec<Binding> {
        if let Binding::MatchCast {
            var,
            value,
            struct_info,
            span,
        } = b
        {
            if let Some(call) = value.as_call() {
                if let Some(mut out) = self.lower_nested_call(call, *span) {
                    let Some(Binding::VarBinding { var: gv, .. }) = out.last() else {
                        return out;
                    };
                    let value = gv.to_expr();
                    out.push(Binding::MatchCast {
                        var: var.clone(),
                        value,
                        struct_info: struct_info.clone(),
                        span: *span,
                    });
                    return out;
                }
            }
            return vec![walk_binding(self, b)];
        }
        let Binding::VarBinding { var, value, span } = b else {
            return vec![walk_binding(self, b)];
        };
        let Some(call) = value.as_call() else {
            return vec![walk_binding(self, b)];
        };
        let (mut out, new_value) = self
            .lower_call(var, call, self.dataflow, *span)
            .unwrap_or_else(|| (Vec::new(), value.clone()));
        // An emitted result more precise than the binding's annotation
        // (a symbolic shape bound by `match_cast`) refines the variable.
        let var = match (out.is_empty(), new_value.as_call()) {
            (false, Some(c)) if c.op.as_op() == Some("relax.call_tir") => match c.sinfo_args.first() {
                Some(si) => refine(var, si),
                None => var.clone(),
            },
            _ => var.clone(),
        };
        out.push(Binding::VarBinding {
            var,
            value: new_value,
            span: *span,
        });
        out
    }
}

impl Pass {
    /// Lower a call nested in a binding that is not a plain variable binding
    /// (`lv = R.match_cast(R.where(c, x, y), R.Tensor(...))`, as TVM's ONNX importer
    /// writes): its legalization is bound to a fresh variable `gv` first, the last of
    /// the returned bindings, as TVM's `LegalizeOps` emits it through its block
    /// builder. `None` when the call is left as it is.
    fn lower_nested_call(&mut self, call: &Call, span: relax_ir::Span) -> Option<Vec<Binding>> {
        OpId::of(call.op.as_op()?)?;
        // The call's own StructInfo (the binding's variable has the cast's).
        let sinfo = relax_checker::derive::DeriveCtx::new(Some(&self.module)).derive_call(call, span);
        if matches!(sinfo, StructInfo::Object) {
            return None;
        }
        let gv = if self.dataflow {
            relax_ir::Var::new_dataflow("gv", Some(sinfo))
        } else {
            relax_ir::Var::new("gv", Some(sinfo))
        };
        let (mut out, value) = self.lower_call(&gv, call, self.dataflow, span)?;
        let gv = match value.as_call() {
            Some(c) if c.op.as_op() == Some("relax.call_tir") => match c.sinfo_args.first() {
                Some(si) => refine(&gv, si),
                None => gv,
            },
            _ => gv,
        };
        out.push(Binding::VarBinding { var: gv, value, span });
        Some(out)
    }
}

/// `var` (same identity) with the StructInfo `si`.
fn refine(var: &relax_ir::Var, si: &StructInfo) -> relax_ir::Var {
    relax_ir::Var(std::sync::Arc::new(relax_ir::relax::VarNode {
        id: var.0.id,
        name: var.0.name.clone(),
        struct_info: Some(si.clone()),
        is_dataflow: var.0.is_dataflow,
        span: var.0.span,
    }))
}

/// Run `LegalizeOps` on a normalized module (every bound variable carries its
/// StructInfo, e.g. the output of `normalize_module`).
pub fn legalize_module(module: &IRModule) -> Result<IRModule, Diagnostic> {
    Ok(legalize_module_report(module).0)
}

/// [`legalize_module`], with a `legalize/skipped` warning for every call whose
/// operator has a legalization that declined it (saying why).
pub fn legalize_module_report(module: &IRModule) -> (IRModule, Vec<Diagnostic>) {
    let mut pass = Pass {
        module: module.clone(),
        generated: Vec::new(),
        skipped: Vec::new(),
        dataflow: false,
    };
    let names: Vec<GlobalVar> = module.functions.keys().cloned().collect();
    for gv in names {
        let Some(BaseFunc::Relax(f)) = module.functions.get(&gv) else {
            continue;
        };
        let nf = pass.visit_function(f);
        pass.module.functions.insert(gv, BaseFunc::Relax(nf));
    }
    (pass.module, pass.skipped)
}
