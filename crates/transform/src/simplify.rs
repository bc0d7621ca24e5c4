//! `simplify-stack-sum`: `R.sum(R.stack((a, b, ...), axis=k), axis=[k])` whose
//! stacked tensor is used only by the sum becomes `a + b + ...`. ONNX importers
//! write a residual `Sum` this way; as additions it is an elementwise epilogue
//! that `fuse-ops` puts in the preceding convolution's group, and it no longer
//! materialises the stacked copy.

use std::collections::HashMap;

use relax_ir::attrs::AttrValue;
use relax_ir::mutator::ExprMutator;
use relax_ir::{Attrs, Binding, BindingBlock, Diagnostic, Expr, ExprKind, IRModule, StructInfo, Var};

/// Rewrite every stack-then-sum of the module's Relax functions, then re-normalize.
pub fn simplify_stack_sum(module: &IRModule) -> Result<IRModule, Vec<Diagnostic>> {
    crate::pass::rewrite_relax_functions(module, |func| {
        let uses = relax_ir::visit::var_use_counts(&func.body);
        let mut s = StackSum { uses, changed: false };
        let nf = s.visit_function(func);
        s.changed.then_some(nf)
    })
}

struct StackSum {
    uses: HashMap<u64, usize>,
    changed: bool,
}

fn norm_axis(a: i64, rank: i64) -> Option<i64> {
    let a = if a < 0 { a + rank } else { a };
    (0..rank).contains(&a).then_some(a)
}

fn tensor_rank(v: &Var) -> Option<i64> {
    match v.struct_info()? {
        StructInfo::Tensor(t) if t.ndim >= 0 => Some(t.ndim as i64),
        _ => None,
    }
}

impl StackSum {
    /// The stacked fields, when `value` is `sum(s, axis=[k])` of a single-use `s = stack(.., axis=k)`.
    fn fields(&self, stacks: &HashMap<u64, (Vec<Expr>, i64)>, value: &Expr) -> Option<Vec<Expr>> {
        let c = value.as_call()?;
        if c.op.as_op() != Some("relax.sum") || c.args.len() != 1 {
            return None;
        }
        let s = c.args[0].as_var()?;
        if self.uses.get(&s.id()) != Some(&1) || c.attrs.get("keepdims").and_then(AttrValue::as_bool) == Some(true) {
            return None;
        }
        let (fields, k) = stacks.get(&s.id())?;
        let rank = tensor_rank(s)?;
        let axes = c.attrs.get("axis")?.as_list()?;
        let [a] = axes else { return None };
        (norm_axis(a.as_int()?, rank)? == *k).then(|| fields.clone())
    }

    fn block(&mut self, b: &BindingBlock) -> BindingBlock {
        let mut stacks: HashMap<u64, (Vec<Expr>, i64)> = HashMap::new();
        let mut bindings = Vec::with_capacity(b.bindings.len());
        for binding in &b.bindings {
            let Binding::VarBinding { var, value, span } = binding else {
                bindings.push(binding.clone());
                continue;
            };
            if let Some(c) = value.as_call() {
                if c.op.as_op() == Some("relax.stack") && c.args.len() == 1 {
                    if let (ExprKind::Tuple(fields), Some(rank)) = (c.args[0].kind(), tensor_rank(var)) {
                        let k = c.attrs.get("axis").and_then(AttrValue::as_int).unwrap_or(0);
                        if let (Some(k), true) = (norm_axis(k, rank), !fields.is_empty()) {
                            stacks.insert(var.id(), (fields.clone(), k));
                        }
                    }
                }
            }
            match self.fields(&stacks, value) {
                Some(fields) => {
                    self.changed = true;
                    let mut acc = fields[0].clone();
                    for (i, f) in fields[1..].iter().enumerate() {
                        let add = Expr::call(Expr::op("relax.add"), vec![acc, f.clone()], Attrs::new(), Vec::new());
                        if i + 2 == fields.len() {
                            acc = add;
                        } else {
                            let v = Var::new_dataflow(format!("{}_part{i}", var.name()), None);
                            bindings.push(Binding::VarBinding {
                                var: v.clone(),
                                value: add,
                                span: *span,
                            });
                            acc = v.to_expr();
                        }
                    }
                    bindings.push(Binding::VarBinding {
                        var: var.clone(),
                        value: acc,
                        span: *span,
                    });
                }
                None => bindings.push(binding.clone()),
            }
        }
        BindingBlock {
            bindings,
            is_dataflow: b.is_dataflow,
            span: b.span,
        }
    }
}

impl ExprMutator for StackSum {
    fn visit_block(&mut self, b: &BindingBlock) -> BindingBlock {
        let b = relax_ir::mutator::walk_block(self, b);
        if b.is_dataflow {
            self.block(&b)
        } else {
            b
        }
    }
}
