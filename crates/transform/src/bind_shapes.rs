//! `bind-symbolic-shapes`: give every operator call that LegalizeOps will lower
//! tensors of known shape, so that programs whose shapes the front end could not
//! derive (a rank without a shape, or broadcasting two symbolic dimensions that
//! cannot be proven compatible) still legalize.
//!
//! - A tensor argument whose rank is known but whose shape is not is
//!   `match_cast` to fresh symbolic dimensions (`R.Tensor((d0, d1), dtype)`).
//! - For a broadcasting element-wise operator whose result shape is still
//!   unknown, each aligned dimension pair `(a, b)` where neither is the constant
//!   1 and their equality cannot be proven is taken as equal: the second operand
//!   is `match_cast` to the first's dimension. At run time the cast checks it,
//!   so a pair that really broadcasts (`b = 1` only at run time) is an error,
//!   never a wrong result.
//!
//! The call's result variable is re-bound with the StructInfo derived for the
//! new arguments when that is more precise, and later uses see it. TVM 0.27's
//! LegalizeOps leaves such calls unlowered (so `tvm.compile` cannot run these
//! programs); this pass runs in the engine's pipeline before `legalize`.

use std::collections::HashMap;

use relax_ir::arith::Analyzer;
use relax_ir::mutator::{walk_binding, walk_block, ExprMutator};
use relax_ir::relax::{BindingBlock, Call};
use relax_ir::{Binding, DataType, Expr, ExprKind, IRModule, PrimExpr, StructInfo, TirVar, Var};
use relax_op::{InferCtx, OpId};

use crate::legalize::arg_struct_info;

/// Broadcasting element-wise operators (TVM's `InferStructInfoBroadcast`).
const BROADCAST_OPS: &[&str] = &[
    "relax.add",
    "relax.subtract",
    "relax.multiply",
    "relax.divide",
    "relax.floor_divide",
    "relax.power",
    "relax.maximum",
    "relax.minimum",
    "relax.mod",
    "relax.floor_mod",
    "relax.atan2",
    "relax.equal",
    "relax.not_equal",
    "relax.less",
    "relax.less_equal",
    "relax.greater",
    "relax.greater_equal",
    "relax.logical_and",
    "relax.logical_or",
    "relax.logical_xor",
    "relax.bitwise_and",
    "relax.bitwise_or",
    "relax.bitwise_xor",
    "relax.left_shift",
    "relax.right_shift",
];

/// Run the pass on every Relax function of a normalized module.
pub fn bind_symbolic_shapes(module: &IRModule) -> Result<IRModule, Vec<relax_ir::Diagnostic>> {
    crate::pass::rewrite_relax_functions(module, |f| {
        let mut pass = Binder::default();
        let out = pass.visit_function(f);
        pass.changed.then_some(out)
    })
}

#[derive(Default)]
struct Binder {
    /// Variables re-bound with a more precise StructInfo, by id.
    renamed: HashMap<u64, Var>,
    /// Variables of unknown shape already cast to fresh dimensions in the current
    /// binding block, by id (the cast variable).
    casts: HashMap<u64, Var>,
    dataflow: bool,
    changed: bool,
    /// Counter for fresh names.
    fresh: usize,
}

fn unknown_shape(si: &StructInfo) -> Option<(DataType, usize, Option<relax_ir::VDevice>)> {
    let t = si.as_tensor()?;
    (t.shape.is_none() && t.ndim >= 0 && !t.dtype.is_void()).then(|| (t.dtype, t.ndim as usize, t.vdevice.clone()))
}

fn is_one(e: &PrimExpr) -> bool {
    e.as_int() == Some(1)
}

impl Binder {
    fn new_var(&self, name: &str, si: StructInfo) -> Var {
        if self.dataflow {
            Var::new_dataflow(name, Some(si))
        } else {
            Var::new(name, Some(si))
        }
    }

    /// `name = R.match_cast(value, si)` appended to `out`; the new variable.
    fn cast(&mut self, out: &mut Vec<Binding>, name: &str, value: Expr, si: StructInfo) -> Expr {
        let var = self.new_var(name, si.clone());
        out.push(Binding::MatchCast {
            var: var.clone(),
            value,
            struct_info: si,
            span: relax_ir::Span::NONE,
        });
        self.changed = true;
        var.to_expr()
    }

    /// The bindings replacing `var = call` (casts first), or `None` to keep it.
    fn rebind(&mut self, var: &Var, call: &Call, span: relax_ir::Span) -> Option<Vec<Binding>> {
        let name = call.op.as_op()?;
        let op = OpId::of(name)?.get();
        op.legalize?;
        let mut args = call.args.clone();
        let mut out = Vec::new();
        // 1. Ranked tensors of unknown shape get fresh dimensions.
        for a in args.iter_mut() {
            if let Some(c) = a.as_var().and_then(|v| self.casts.get(&v.0.id)) {
                *a = c.to_expr();
                continue;
            }
            let Some((dtype, ndim, vdevice)) = arg_struct_info(a).as_ref().and_then(unknown_shape) else {
                continue;
            };
            let base = match a.kind() {
                ExprKind::Var(v) => v.name().to_string(),
                _ => "t".to_string(),
            };
            let dims: Vec<PrimExpr> = (0..ndim)
                .map(|k| {
                    self.fresh += 1;
                    TirVar::new(format!("{base}_d{k}_{}", self.fresh), DataType::int(64)).to_expr()
                })
                .collect();
            let mut si = StructInfo::tensor(dims, dtype);
            if let StructInfo::Tensor(t) = &mut si {
                t.vdevice = vdevice;
            }
            let cast = self.cast(&mut out, &format!("{base}_shaped"), a.clone(), si);
            if let (Some(v), Some(c)) = (a.as_var(), cast.as_var()) {
                self.casts.insert(v.0.id, c.clone());
            }
            *a = cast;
        }
        let analyzer = Analyzer::new();
        let ctx = InferCtx {
            module: None,
            analyzer: &analyzer,
        };
        let infer = |args: &[Expr]| -> Option<StructInfo> {
            let sis = args.iter().map(arg_struct_info).collect::<Option<Vec<_>>>()?;
            let c = Call {
                op: call.op.clone(),
                args: args.to_vec(),
                attrs: call.attrs.clone(),
                sinfo_args: call.sinfo_args.clone(),
            };
            (op.def.infer)(&c, &sis, &ctx).ok()
        };
        let known = |si: &StructInfo| si.as_tensor().is_some_and(|t| t.shape_values().is_some());
        let mut derived = infer(&args);
        // 2. Broadcasting: unprovable pairs of dimensions are taken as equal.
        if BROADCAST_OPS.contains(&name) && args.len() == 2 && !derived.as_ref().is_some_and(known) {
            let shapes: Option<Vec<(Vec<PrimExpr>, StructInfo)>> = args
                .iter()
                .map(|a| {
                    let si = arg_struct_info(a)?;
                    Some((si.as_tensor()?.shape_values()?.to_vec(), si))
                })
                .collect();
            if let Some(shapes) = shapes {
                let (a, _) = &shapes[0];
                let (b, bsi) = &shapes[1];
                let mut nb = b.clone();
                let (la, lb) = (a.len(), b.len());
                let mut changed = false;
                for k in 0..la.min(lb) {
                    let (da, db) = (&a[la - 1 - k], &mut nb[lb - 1 - k]);
                    if is_one(da) || is_one(db) || analyzer.can_prove_equal(da, db) {
                        continue;
                    }
                    *db = da.clone();
                    changed = true;
                }
                if changed {
                    let mut si = bsi.clone();
                    if let StructInfo::Tensor(t) = &mut si {
                        t.shape = Some(Expr::shape(nb));
                    }
                    let base = match args[1].kind() {
                        ExprKind::Var(v) => v.name().to_string(),
                        _ => "t".to_string(),
                    };
                    args[1] = self.cast(&mut out, &format!("{base}_bcast"), args[1].clone(), si);
                    derived = infer(&args);
                }
            }
        }
        let refined = derived.filter(|si| known(si) && !var.struct_info().is_some_and(known));
        if out.is_empty() && refined.is_none() {
            return None;
        }
        self.changed = true;
        let new_value = Expr::call(call.op.clone(), args, call.attrs.clone(), call.sinfo_args.clone());
        let new_var = match refined {
            Some(si) => {
                let nv = if var.0.is_dataflow {
                    Var::new_dataflow(var.name(), Some(si))
                } else {
                    Var::new(var.name(), Some(si))
                };
                self.renamed.insert(var.0.id, nv.clone());
                nv
            }
            _ => var.clone(),
        };
        out.push(Binding::VarBinding {
            var: new_var,
            value: new_value,
            span,
        });
        Some(out)
    }
}

impl ExprMutator for Binder {
    fn visit_var_use(&mut self, v: &Var, e: &Expr) -> Expr {
        match self.renamed.get(&v.0.id) {
            Some(nv) => nv.to_expr(),
            None => e.clone(),
        }
    }

    fn visit_block(&mut self, b: &BindingBlock) -> BindingBlock {
        let saved = std::mem::replace(&mut self.dataflow, b.is_dataflow);
        let saved_casts = std::mem::take(&mut self.casts);
        let out = walk_block(self, b);
        self.dataflow = saved;
        self.casts = saved_casts;
        out
    }

    fn visit_binding(&mut self, b: &Binding) -> Vec<Binding> {
        // Uses inside the value are renamed first.
        let b = walk_binding(self, b);
        let Binding::VarBinding { var, value, span } = &b else {
            return vec![b];
        };
        let Some(call) = value.as_call() else {
            return vec![b];
        };
        self.rebind(var, call, *span).unwrap_or_else(|| vec![b.clone()])
    }
}
