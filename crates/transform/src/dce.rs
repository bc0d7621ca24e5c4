//! `dead-code-elimination`: unused bindings of pure values (in dataflow blocks and
//! outside them) and private functions no public function reaches.

use std::collections::HashSet;

use relax_ir::mutator::{walk_expr, walk_function, ExprMutator};
use relax_ir::visit::for_each_expr;
use relax_ir::{BaseFunc, Binding, BindingBlock, Expr, ExprKind, Function, IRModule};

/// Remove unused bindings of pure values from every Relax function, then every private
/// function that no public function reaches.
pub fn dead_code_elimination(module: &IRModule) -> IRModule {
    let mut out = module.clone();
    for f in out.functions.values_mut() {
        if let BaseFunc::Relax(func) = f {
            *func = RemoveUnused { module }.visit_function(func);
        }
    }
    remove_unreachable(&out)
}

/// Every variable id used in `e`.
fn used_vars(e: &Expr, used: &mut HashSet<u64>) {
    for_each_expr(e, &mut |x| {
        if let ExprKind::Var(v) = x.kind() {
            used.insert(v.id());
        }
    });
}

struct RemoveUnused<'a> {
    module: &'a IRModule,
}

impl RemoveUnused<'_> {
    /// Whether evaluating `e` has no effect: not a call, or a call of a pure operator
    /// or of a pure module function. Calls of packed functions are kept.
    fn is_pure(&self, e: &Expr) -> bool {
        let Some(c) = e.as_call() else { return true };
        match c.op.kind() {
            ExprKind::Op(name) => relax_checker::derive::op_is_pure(name) && name != "relax.call_packed",
            ExprKind::GlobalVar(g) => match self.module.get(g.name()) {
                Some(BaseFunc::Relax(f)) => f.is_pure,
                _ => false,
            },
            _ => false,
        }
    }
}

impl RemoveUnused<'_> {
    /// Whether evaluating `e` makes no impure call: a function value is pure whatever
    /// its body; otherwise every call in it (branches and nested sequences included)
    /// must be pure.
    fn has_no_impure_call(&self, e: &Expr) -> bool {
        if matches!(e.kind(), ExprKind::Function(_)) {
            return true;
        }
        let mut pure = true;
        for_each_expr(e, &mut |x| {
            if x.as_call().is_some() && !self.is_pure(x) {
                pure = false;
            }
        });
        pure
    }
}

impl ExprMutator for RemoveUnused<'_> {
    fn visit_expr(&mut self, e: &Expr) -> Expr {
        let ExprKind::Seq(seq) = e.kind() else {
            return walk_expr(self, e);
        };
        // Inner functions and branches first.
        let mut blocks: Vec<BindingBlock> = seq.blocks.iter().map(|b| self.visit_block(b)).collect();
        let body = self.visit_expr(&seq.body);
        // Liveness from the end: a dataflow binding whose variable nothing later uses goes.
        let mut used = HashSet::new();
        used_vars(&body, &mut used);
        for block in blocks.iter_mut().rev() {
            let mut kept = Vec::with_capacity(block.bindings.len());
            for b in block.bindings.iter().rev() {
                // Outside dataflow blocks too, as TVM's RemoveAllUnused: an unused
                // binding whose value calls nothing impure.
                let removable = matches!(b, Binding::VarBinding { .. }) && self.has_no_impure_call(b.value());
                if removable && !used.contains(&b.var().id()) {
                    continue;
                }
                used_vars(b.value(), &mut used);
                kept.push(b.clone());
            }
            kept.reverse();
            block.bindings = kept;
        }
        blocks.retain(|b| !b.bindings.is_empty());
        Expr::with_span(ExprKind::Seq(relax_ir::SeqExpr { blocks, body }), e.span())
    }
    fn visit_function(&mut self, f: &Function) -> Function {
        walk_function(self, f)
    }
}

/// Whether a module function is an entry point (kept even when nothing calls it).
fn is_public(f: &BaseFunc) -> bool {
    match f {
        BaseFunc::Relax(r) => !r.private,
        BaseFunc::Prim(p) => !p.private,
    }
}

/// The module without the private functions no public function reaches (all of
/// them when it has no public function).
pub(crate) fn remove_unreachable(module: &IRModule) -> IRModule {
    if !module.functions.values().any(is_public) {
        return module.clone();
    }
    let mut reached: HashSet<String> = HashSet::new();
    let mut stack: Vec<String> = module
        .functions
        .iter()
        .filter(|(_, f)| is_public(f))
        .map(|(g, _)| g.name().to_string())
        .collect();
    // PrimFuncs can also be reached through their `global_symbol` (`ExternFunc`).
    let by_symbol: std::collections::HashMap<String, String> = module
        .functions
        .iter()
        .filter_map(|(g, f)| match f {
            BaseFunc::Prim(p) => p
                .attrs
                .get_str("global_symbol")
                .map(|s| (s.to_string(), g.name().to_string())),
            BaseFunc::Relax(r) => r
                .attrs
                .get_str("global_symbol")
                .map(|s| (s.to_string(), g.name().to_string())),
        })
        .collect();
    while let Some(name) = stack.pop() {
        if !reached.insert(name.clone()) {
            continue;
        }
        let Some(BaseFunc::Relax(f)) = module.get(&name) else {
            continue;
        };
        for_each_expr(&f.body, &mut |x| match x.kind() {
            ExprKind::GlobalVar(g) => stack.push(g.name().to_string()),
            ExprKind::ExternFunc { global_symbol } => {
                if let Some(n) = by_symbol.get(global_symbol) {
                    stack.push(n.clone());
                }
            }
            _ => {}
        });
    }
    let mut out = module.clone();
    out.functions.retain(|g, _| reached.contains(g.name()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn main_bindings(m: &IRModule) -> Vec<String> {
        crate::test_util::main_bindings(m)
            .iter()
            .map(|b| b.var().name().to_string())
            .collect()
    }

    #[test]
    fn unused_pure_bindings_go_outside_dataflow_blocks_too() {
        let src = r#"
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        unused = R.add(x, x)
        printed = R.call_packed("test.tick", sinfo_args=R.Tuple())
        kept = R.multiply(x, x)
        return kept
"#;
        let m = relax_ir::text::parse(src).expect("parses").into_module();
        let m = relax_checker::check::check_module(&m).module;
        let out = dead_code_elimination(&m);
        // The unused add goes; the impure packed call stays although unused.
        assert_eq!(main_bindings(&out), ["printed", "kept"]);
    }
}
