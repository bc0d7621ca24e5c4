//! Lenient mode: `R.call_packed` of a packed function that the runtime knows to be
//! pure, written inside a dataflow block, runs as `R.call_pure_packed`.
//!
//! TVM's importers sometimes write such calls (`from_onnx` emits
//! `R.call_packed("vm.builtin.tensor_to_shape", ...)` inside `R.dataflow()` for
//! grouped-query attention). TVM's well-formedness check rejects them, as the
//! strict check here does (`struct-info/purity`), yet `tvm.compile` runs them.
//! This rewrite, run before the check (by `relax run` unless it is given
//! `--strict`, as `tvm.compile` accepts these programs; by `relax check
//! --lenient`; with `EngineConfig::lenient` in the library), makes the purity
//! explicit where the runtime vouches for it, with one `lenient/pure-packed`
//! warning per call. A call of a packed function not known to be pure is left
//! alone: the check still rejects it.

use relax_ir::mutator::{walk_binding, walk_block, ExprMutator};
use relax_ir::relax::BindingBlock;
use relax_ir::{BaseFunc, Binding, Diagnostic, Expr, ExprKind, IRModule, Rule};

/// The rule of the warning given for each rewritten call.
pub const RULE: Rule = Rule::LenientPurePacked;

/// `module` with every `R.call_packed(name, ...)` inside a dataflow block whose
/// `name` satisfies `is_pure` written as `R.call_pure_packed(name, ...)`, and a
/// warning for each.
pub fn pure_packed_calls(module: &IRModule, is_pure: &dyn Fn(&str) -> bool) -> (IRModule, Vec<Diagnostic>) {
    let mut out = module.clone();
    let mut r = Rewriter {
        is_pure,
        dataflow: false,
        warnings: Vec::new(),
    };
    for f in out.functions.values_mut() {
        if let BaseFunc::Relax(func) = f {
            *func = r.visit_function(func);
        }
    }
    (out, r.warnings)
}

struct Rewriter<'a> {
    is_pure: &'a dyn Fn(&str) -> bool,
    dataflow: bool,
    warnings: Vec<Diagnostic>,
}

impl ExprMutator for Rewriter<'_> {
    fn visit_block(&mut self, b: &BindingBlock) -> BindingBlock {
        let saved = std::mem::replace(&mut self.dataflow, b.is_dataflow);
        let out = walk_block(self, b);
        self.dataflow = saved;
        out
    }

    fn visit_binding(&mut self, b: &Binding) -> Vec<Binding> {
        let b = walk_binding(self, b);
        if !self.dataflow {
            return vec![b];
        }
        let Some(call) = b.value().as_call() else {
            return vec![b];
        };
        let ExprKind::ExternFunc { global_symbol } = call.op.kind() else {
            return vec![b];
        };
        if !(self.is_pure)(global_symbol) {
            return vec![b];
        }
        let mut d = Diagnostic::warning(
            format!(
                "R.call_packed(\"{global_symbol}\") inside a dataflow block runs as R.call_pure_packed \
                 (lenient mode: the runtime knows this packed function is pure)"
            ),
            b.span(),
        );
        d.rule = Some(RULE);
        self.warnings.push(d);
        let mut args = Vec::with_capacity(call.args.len() + 1);
        args.push(call.op.clone());
        args.extend(call.args.iter().cloned());
        let value = Expr::call(
            Expr::op("relax.call_pure_packed"),
            args,
            call.attrs.clone(),
            call.sinfo_args.clone(),
        );
        vec![match b {
            Binding::VarBinding { var, span, .. } => Binding::VarBinding { var, value, span },
            Binding::MatchCast {
                var, struct_info, span, ..
            } => Binding::MatchCast {
                var,
                value,
                struct_info,
                span,
            },
        }]
    }
}
