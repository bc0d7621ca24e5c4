//! `decompose-ops-for-inference`: inference batch norm (`training=False`) becomes
//! elementwise arithmetic, as TVM's `DecomposeOpsForInference` does, so that
//! `fuse-ops` can put it in the preceding convolution's epilogue:
//! `(x - mean) / sqrt(var + eps) * gamma + beta`, the statistics reshaped to
//! broadcast along `axis`. The call's tuple becomes `(out, moving_mean,
//! moving_var)`, and `t[i]` of it is replaced by the field.

use std::collections::HashMap;
use std::sync::Arc;

use relax_ir::attrs::AttrValue;
use relax_ir::mutator::{walk_expr, ExprMutator};
use relax_ir::{
    Attrs, BaseFunc, Binding, BindingBlock, DataType, Diagnostic, Expr, ExprKind, IRModule, NDArray, PrimExpr,
    StructInfo, Var,
};

/// Decompose inference batch norm in every Relax function, then re-normalize.
pub fn decompose_ops_for_inference(module: &IRModule) -> Result<IRModule, Vec<Diagnostic>> {
    let mut out = module.clone();
    let mut changed = false;
    for f in out.functions.values_mut() {
        if let BaseFunc::Relax(func) = f {
            let mut d = Decompose {
                alias: HashMap::new(),
                tuples: HashMap::new(),
                changed: false,
            };
            let nf = d.visit_function(func);
            if d.changed {
                *func = nf;
                changed = true;
            }
        }
    }
    if !changed {
        return Ok(out);
    }
    let n = relax_checker::normalize::normalize_module(&out);
    let errors: Vec<Diagnostic> = n.diagnostics.into_iter().filter(|d| d.is_error()).collect();
    if errors.is_empty() {
        Ok(n.module)
    } else {
        Err(errors)
    }
}

struct Decompose {
    /// Variables replaced by another expression (`t[0]` of a decomposed batch norm).
    alias: HashMap<u64, Expr>,
    /// Decomposed batch norms: their fields.
    tuples: HashMap<u64, Vec<Expr>>,
    changed: bool,
}

fn call(op: &str, args: Vec<Expr>) -> Expr {
    Expr::call(Expr::op(op), args, Attrs::new(), Vec::new())
}

fn scalar(value: f64, dtype: DataType) -> Option<Expr> {
    let bytes = match (dtype.bits, dtype.is_float()) {
        (32, true) => (value as f32).to_le_bytes().to_vec(),
        (64, true) => value.to_le_bytes().to_vec(),
        _ => return None,
    };
    Some(Expr::new(ExprKind::Constant {
        data: Arc::new(NDArray::scalar(dtype, bytes)),
    }))
}

impl Decompose {
    /// The bindings replacing `var = R.nn.batch_norm(...)`, when it is an inference one
    /// on a tensor of known shape.
    fn batch_norm(&mut self, var: &Var, value: &Expr) -> Option<Vec<Binding>> {
        let c = value.as_call()?;
        if c.op.as_op() != Some("relax.nn.batch_norm") || c.args.len() != 5 {
            return None;
        }
        if c.attrs.get("training").and_then(AttrValue::as_bool) != Some(false) {
            return None;
        }
        let x = c.args[0].as_var()?;
        let StructInfo::Tensor(t) = x.struct_info()? else {
            return None;
        };
        let shape = t.shape_values()?;
        let nd = shape.len() as i64;
        let axis = c.attrs.get("axis").and_then(AttrValue::as_int).unwrap_or(1);
        let axis = if axis < 0 { axis + nd } else { axis };
        if !(0..nd).contains(&axis) {
            return None;
        }
        let eps = c.attrs.get("epsilon").and_then(AttrValue::as_float).unwrap_or(1e-5);
        let center = c.attrs.get("center").and_then(AttrValue::as_bool).unwrap_or(true);
        let scale = c.attrs.get("scale").and_then(AttrValue::as_bool).unwrap_or(true);
        let eps = scalar(eps, t.dtype)?;
        let mut rs: Vec<PrimExpr> = vec![PrimExpr::int(1); shape.len()];
        rs[axis as usize] = shape[axis as usize].clone();
        let mut out = Vec::new();
        let name = var.name().to_string();
        let mut bind = |suffix: &str, value: Expr| -> Expr {
            let v = Var::new_dataflow(format!("{name}_{suffix}"), None);
            out.push(Binding::VarBinding {
                var: v.clone(),
                value,
                span: relax_ir::Span::NONE,
            });
            v.to_expr()
        };
        let a = |i: usize| c.args[i].clone();
        let mean = bind("mean", call("relax.reshape", vec![a(3), Expr::shape(rs.clone())]));
        let var_r = bind("var", call("relax.reshape", vec![a(4), Expr::shape(rs.clone())]));
        let centered = bind("centered", call("relax.subtract", vec![a(0), mean]));
        let veps = bind("var_eps", call("relax.add", vec![var_r, eps]));
        let sd = bind("std", call("relax.sqrt", vec![veps]));
        let mut o = bind("norm", call("relax.divide", vec![centered, sd]));
        if scale {
            let g = bind("gamma", call("relax.reshape", vec![a(1), Expr::shape(rs.clone())]));
            o = bind("scaled", call("relax.multiply", vec![o, g]));
        }
        if center {
            let b = bind("beta", call("relax.reshape", vec![a(2), Expr::shape(rs.clone())]));
            o = bind("shifted", call("relax.add", vec![o, b]));
        }
        let fields = vec![o, a(3), a(4)];
        out.push(Binding::VarBinding {
            var: var.clone(),
            value: Expr::tuple(fields.clone()),
            span: relax_ir::Span::NONE,
        });
        self.tuples.insert(var.id(), fields);
        Some(out)
    }
}

impl ExprMutator for Decompose {
    fn visit_var_use(&mut self, v: &Var, e: &Expr) -> Expr {
        self.alias.get(&v.id()).cloned().unwrap_or_else(|| e.clone())
    }
    fn visit_expr(&mut self, e: &Expr) -> Expr {
        walk_expr(self, e)
    }
    fn visit_binding(&mut self, b: &Binding) -> Vec<Binding> {
        let nb = relax_ir::mutator::walk_binding(self, b);
        if let Binding::VarBinding { var, value, span } = &nb {
            if let Some(bs) = self.batch_norm(var, value) {
                self.changed = true;
                return bs;
            }
            if let ExprKind::TupleGetItem { tuple, index } = value.kind() {
                if let Some(field) = tuple
                    .as_var()
                    .and_then(|t| self.tuples.get(&t.id()))
                    .and_then(|f| f.get(*index))
                    .cloned()
                {
                    if var.is_dataflow() {
                        self.alias.insert(var.id(), field);
                        return Vec::new();
                    }
                    return vec![Binding::VarBinding {
                        var: var.clone(),
                        value: field,
                        span: *span,
                    }];
                }
            }
        }
        vec![nb]
    }
    fn visit_block(&mut self, b: &BindingBlock) -> BindingBlock {
        relax_ir::mutator::walk_block(self, b)
    }
}
