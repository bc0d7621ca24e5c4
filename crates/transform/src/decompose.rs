//! `decompose-ops-for-inference`: inference batch norm (`training=False`) becomes
//! elementwise arithmetic, as TVM's `DecomposeOpsForInference` does, so that
//! `fuse-ops` can put it in the preceding convolution's epilogue:
//! `(x - mean) / sqrt(var + eps) * gamma + beta`, the statistics reshaped to
//! broadcast along `axis`. The call's tuple becomes `(out, moving_mean,
//! moving_var)`, and `t[i]` of it is replaced by the field.
//!
//! When the statistics, scale and shift are constants (after `bind_params`) and the
//! batch norm's input is an NCHW/OIHW `conv2d` with constant weights used by it
//! alone, the batch norm is folded into the convolution instead: the weights of
//! output channel `c` are scaled by `s[c] = gamma[c] / sqrt(var[c] + eps)`, and the
//! batch norm becomes the addition of the bias `beta[c] - mean[c] * s[c]`.

use std::collections::HashMap;
use std::sync::Arc;

use relax_ir::attrs::AttrValue;
use relax_ir::mutator::{walk_expr, ExprMutator};
use relax_ir::{
    Attrs, Binding, BindingBlock, DataType, Diagnostic, Expr, ExprKind, IRModule, NDArray, PrimExpr, StructInfo, Var,
};

/// Decompose inference batch norm in every Relax function, then re-normalize.
pub fn decompose_ops_for_inference(module: &IRModule) -> Result<IRModule, Vec<Diagnostic>> {
    crate::pass::rewrite_relax_functions(module, |func| {
        let mut d = Decompose {
            alias: HashMap::new(),
            tuples: HashMap::new(),
            changed: false,
        };
        let nf = d.visit_function(func);
        d.changed.then_some(nf)
    })
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
        let b = fold_into_conv(b, &mut self.tuples, &mut self.changed);
        relax_ir::mutator::walk_block(self, &b)
    }
}

/// The little-endian f32 values of a constant.
fn f32_values(e: &Expr) -> Option<(Vec<f32>, Vec<i64>)> {
    let ExprKind::Constant { data } = e.kind() else {
        return None;
    };
    if data.dtype != DataType::FLOAT32 {
        return None;
    }
    let v = data
        .data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Some((v, data.shape.clone()))
}

fn f32_constant(values: &[f32], shape: Vec<i64>) -> Expr {
    Expr::new(ExprKind::Constant {
        data: Arc::new(NDArray {
            dtype: DataType::FLOAT32,
            shape,
            data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }),
    })
}

/// Fold each constant inference batch norm of a block into the convolution
/// before it (see the module documentation); records the batch norms' fields.
fn fold_into_conv(b: &BindingBlock, tuples: &mut HashMap<u64, Vec<Expr>>, changed: &mut bool) -> BindingBlock {
    if !b.is_dataflow {
        return b.clone();
    }
    let mut uses: HashMap<u64, usize> = HashMap::new();
    for x in &b.bindings {
        for (id, n) in relax_ir::visit::var_use_counts(x.value()) {
            *uses.entry(id).or_default() += n;
        }
    }
    let def: HashMap<u64, usize> = b.bindings.iter().enumerate().map(|(i, x)| (x.var().id(), i)).collect();
    let mut bindings = b.bindings.clone();
    for i in 0..bindings.len() {
        let cur = bindings[i].clone();
        let Binding::VarBinding { var, value, span } = &cur else {
            continue;
        };
        let Some(c) = value.as_call() else { continue };
        if c.op.as_op() != Some("relax.nn.batch_norm")
            || c.args.len() != 5
            || c.attrs.get("training").and_then(AttrValue::as_bool) != Some(false)
            || c.attrs.get("axis").and_then(AttrValue::as_int) != Some(1)
        {
            continue;
        }
        let Some(x) = c.args[0].as_var() else { continue };
        let Some(&ci) = def.get(&x.id()) else { continue };
        if !x.is_dataflow() || uses.get(&x.id()) != Some(&1) {
            continue;
        }
        let conv_binding = bindings[ci].clone();
        let Binding::VarBinding { value: cv, .. } = &conv_binding else {
            continue;
        };
        let Some(conv) = cv.as_call() else { continue };
        let layout_ok = |k: &str, want: &str| conv.attrs.get(k).and_then(AttrValue::as_str).is_none_or(|v| v == want);
        if conv.op.as_op() != Some("relax.nn.conv2d")
            || conv.args.len() != 2
            || !layout_ok("data_layout", "NCHW")
            || !layout_ok("kernel_layout", "OIHW")
            || !layout_ok("out_layout", "NCHW")
        {
            continue;
        }
        let (Some((w, wshape)), Some((g, _)), Some((beta, _)), Some((mean, _)), Some((vr, _))) = (
            f32_values(&conv.args[1]),
            f32_values(&c.args[1]),
            f32_values(&c.args[2]),
            f32_values(&c.args[3]),
            f32_values(&c.args[4]),
        ) else {
            continue;
        };
        let oc = wshape.first().copied().unwrap_or(0).max(0) as usize;
        if oc == 0 || [g.len(), beta.len(), mean.len(), vr.len()].iter().any(|&n| n != oc) || w.len() % oc != 0 {
            continue;
        }
        let eps = c.attrs.get("epsilon").and_then(AttrValue::as_float).unwrap_or(1e-5) as f32;
        let center = c.attrs.get("center").and_then(AttrValue::as_bool).unwrap_or(true);
        let scale_on = c.attrs.get("scale").and_then(AttrValue::as_bool).unwrap_or(true);
        let s: Vec<f32> = (0..oc)
            .map(|k| if scale_on { g[k] } else { 1.0 } / (vr[k] + eps).sqrt())
            .collect();
        let per = w.len() / oc;
        let w2: Vec<f32> = w.iter().enumerate().map(|(j, v)| v * s[j / per]).collect();
        let bias: Vec<f32> = (0..oc)
            .map(|k| if center { beta[k] } else { 0.0 } - mean[k] * s[k])
            .collect();
        let mut nconv = conv.clone();
        nconv.args[1] = f32_constant(&w2, wshape.clone());
        let Binding::VarBinding {
            var: cvar, span: cspan, ..
        } = &conv_binding
        else {
            continue;
        };
        let (cvar, cspan) = (cvar.clone(), *cspan);
        bindings[ci] = Binding::VarBinding {
            var: cvar,
            value: Expr::new(ExprKind::Call(nconv)),
            span: cspan,
        };
        let out = Var::new_dataflow(format!("{}_biased", var.name()), None);
        let bias = f32_constant(&bias, vec![1, oc as i64, 1, 1]);
        let fields = vec![out.to_expr(), c.args[3].clone(), c.args[4].clone()];
        let (var, span) = (var.clone(), *span);
        bindings[i] = Binding::VarBinding {
            var: out,
            value: call("relax.add", vec![x.to_expr(), bias]),
            span,
        };
        bindings.insert(
            i + 1,
            Binding::VarBinding {
                var: var.clone(),
                value: Expr::tuple(fields.clone()),
                span,
            },
        );
        tuples.insert(var.id(), fields);
        *changed = true;
        // Indices after `i` moved by one: stop here and let the caller's walk handle
        // the rest (one fold per block pass keeps the bookkeeping simple).
        let rest = BindingBlock {
            bindings,
            is_dataflow: b.is_dataflow,
            span: b.span,
        };
        return fold_into_conv(&rest, tuples, changed);
    }
    BindingBlock {
        bindings,
        is_dataflow: b.is_dataflow,
        span: b.span,
    }
}
