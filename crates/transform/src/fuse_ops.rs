//! `fuse-ops`: group `call_tir`s of dataflow blocks into private Relax functions
//! with the attribute `Primitive`, as TVM's FuseOps does after LegalizeOps.
//!
//! Each PrimFunc gets an [`OpPattern`] from its TIR. A binding joins the groups of
//! its producers (each producer's result used by it alone) when TVM's rules allow:
//! injective chains fuse with each other, a convolution or matmul
//! (`OutEWiseFusable`) takes its elementwise and broadcast consumers, and a reduction
//! takes its injective producers. A group holds at most one convolution, matmul or
//! reduction. Packed calls and any other binding are boundaries. Shape variables a
//! group uses that no tensor parameter defines are passed as a last parameter
//! `tir_vars: R.Shape([..])`, as TVM does.
//!
//! Three differences from TVM, all towards fewer kernels: an injective group also
//! joins a consumer group that already holds a convolution or matmul (the bias
//! `reshape` of an imported network joins its `conv2d` + `add` + `relu`); pooling
//! or softmax (`OutEWiseFusable` without a multiply-accumulate) takes its
//! injective producers as a reduction does; and a reduction (`CommReduce`) takes
//! its elementwise consumers as a convolution does.

use std::collections::{HashMap, HashSet};

use relax_ir::attrs::AttrValue;
use relax_ir::mutator::{walk_expr, ExprMutator};
use relax_ir::{
    Attrs, BaseFunc, Binding, BindingBlock, Expr, ExprKind, Function, GlobalVar, IRModule, SeqExpr, Span, StructInfo,
    Var,
};

use crate::pattern::{op_info, OpPattern};

/// Most bindings in one fused group.
const MAX_GROUP: usize = 64;

/// Most distinct inputs (variables and constants) of one fused group. Every tensor
/// input is a storage buffer of the fused kernel on a GPU, which may bind 32 per
/// shader stage on common adapters (lavapipe among them), and the output and the
/// kernel's own buffers (its out-of-bounds flag) take some too; TVM's `FuseOps`
/// likewise stops at the target's `max_function_args`. A group that would exceed it
/// does not take that producer.
pub const MAX_GROUP_INPUTS: usize = 28;

/// Fuse the `call_tir` chains of every Relax function of `module`.
pub fn fuse_ops(module: &IRModule) -> IRModule {
    let mut patterns: HashMap<String, (OpPattern, bool)> = HashMap::new();
    for (gv, f) in &module.functions {
        if let BaseFunc::Prim(p) = f {
            patterns.insert(gv.name().to_string(), op_info(p));
        }
    }
    let mut out = module.clone();
    let mut names: HashSet<String> = module.functions.keys().map(|g| g.name().to_string()).collect();
    let mut new_funcs = Vec::new();
    let keys: Vec<GlobalVar> = module.functions.keys().cloned().collect();
    for gv in keys {
        let Some(BaseFunc::Relax(f)) = module.functions.get(&gv) else {
            continue;
        };
        if f.attrs.get("Primitive").is_some() {
            continue;
        }
        let uses = relax_ir::visit::var_use_counts(&f.body);
        let mut fuser = Fuser {
            patterns: &patterns,
            uses,
            names: &mut names,
            new_funcs: &mut new_funcs,
        };
        let nf = fuser.visit_function(f);
        out.functions.insert(gv, BaseFunc::Relax(nf));
    }
    for (name, f) in new_funcs {
        out.add(&name, BaseFunc::Relax(f));
    }
    out
}

struct Fuser<'a> {
    patterns: &'a HashMap<String, (OpPattern, bool)>,
    uses: HashMap<u64, usize>,
    names: &'a mut HashSet<String>,
    new_funcs: &'a mut Vec<(String, Function)>,
}

/// A fusable `call_tir` binding: callee name, tensor arguments (variables or
/// constants), pattern.
struct Node {
    callee: String,
    args: Vec<Expr>,
    pattern: OpPattern,
    /// A multiply-accumulate (convolution, matmul).
    fma: bool,
}

struct Group {
    members: Vec<usize>,
    kind: OpPattern,
    tail: usize,
    /// Its inputs from outside the group (see `input_key`).
    inputs: HashSet<usize>,
}

fn vdevice_of(v: &Var) -> Option<Option<relax_ir::VDevice>> {
    match v.struct_info()? {
        StructInfo::Tensor(t) => Some(t.vdevice.clone()),
        _ => None,
    }
}

/// The variable, callee and arguments of a binding `var = R.call_tir(callee, (args..), ..)`.
pub(crate) fn call_tir_binding(b: &Binding) -> Option<(&Var, &GlobalVar, &[Expr])> {
    let Binding::VarBinding { var, value, .. } = b else {
        return None;
    };
    let call = value.as_call()?;
    if call.op.as_op() != Some("relax.call_tir") || call.args.len() != 2 {
        return None;
    }
    let ExprKind::GlobalVar(callee) = call.args[0].kind() else {
        return None;
    };
    let ExprKind::Tuple(args) = call.args[1].kind() else {
        return None;
    };
    Some((var, callee, args))
}

impl Fuser<'_> {
    /// The call_tir a binding makes, when it can take part in fusion.
    fn node(&self, b: &Binding) -> Option<Node> {
        let (var, callee, fields) = call_tir_binding(b)?;
        let (pattern, fma) = *self.patterns.get(callee.name())?;
        if pattern == OpPattern::Opaque {
            return None;
        }
        // One tensor output of known rank; tensor variable arguments.
        if !matches!(var.struct_info(), Some(StructInfo::Tensor(_))) {
            return None;
        }
        let args = fields.to_vec();
        let dev = vdevice_of(var)?;
        for a in &args {
            match a.kind() {
                ExprKind::Var(v) if vdevice_of(v).as_ref() == Some(&dev) => {}
                ExprKind::Constant { .. } if dev.is_none() => {}
                _ => return None,
            }
        }
        Some(Node {
            callee: callee.name().to_string(),
            args,
            pattern,
            fma,
        })
    }

    fn fuse_block(&mut self, block: &BindingBlock) -> BindingBlock {
        let nodes: Vec<Option<Node>> = block.bindings.iter().map(|b| self.node(b)).collect();
        let def: HashMap<u64, usize> = block
            .bindings
            .iter()
            .enumerate()
            .map(|(i, b)| (b.var().id(), i))
            .collect();
        let mut group_of: Vec<Option<usize>> = vec![None; nodes.len()];
        let mut groups: Vec<Group> = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            let Some(n) = n else { continue };
            let mut kind = n.pattern;
            let mut size = 1;
            let mut anchor = n.pattern >= OpPattern::CommReduce;
            let mut take: Vec<usize> = Vec::new();
            let mut inputs: HashSet<usize> = n.args.iter().map(input_key).collect();
            for a in n.args.iter().filter_map(Expr::as_var) {
                let Some(&j) = def.get(&a.id()) else { continue };
                let Some(g) = group_of[j] else { continue };
                if groups[g].tail != j || self.uses.get(&a.id()) != Some(&1) || take.contains(&g) {
                    continue;
                }
                let gk = groups[g].kind;
                let ok = if gk <= OpPattern::Injective {
                    n.pattern <= OpPattern::Injective
                        || n.pattern == OpPattern::CommReduce
                        || (n.pattern == OpPattern::OutEWiseFusable && !n.fma)
                } else {
                    // A convolution, matmul or reduction takes its elementwise epilogue.
                    n.pattern <= OpPattern::Broadcast && !anchor
                };
                if !ok || size + groups[g].members.len() > MAX_GROUP {
                    continue;
                }
                // The producer's value becomes internal; its group's inputs join.
                let mut joined = inputs.clone();
                joined.remove(&(a.id() as usize));
                joined.extend(groups[g].inputs.iter().copied());
                if joined.len() > MAX_GROUP_INPUTS {
                    continue;
                }
                inputs = joined;
                anchor |= gk >= OpPattern::CommReduce;
                kind = kind.max(gk);
                size += groups[g].members.len();
                take.push(g);
            }
            let mut members = vec![i];
            for g in take {
                members.append(&mut groups[g].members);
            }
            members.sort_unstable();
            let gid = groups.len();
            for &m in &members {
                group_of[m] = Some(gid);
            }
            groups.push(Group {
                members,
                kind,
                tail: i,
                inputs,
            });
        }
        // Rewrite: each group of two or more becomes a call at its tail.
        let mut replace: HashMap<usize, Binding> = HashMap::new();
        let mut drop: HashSet<usize> = HashSet::new();
        for g in groups.iter().filter(|g| g.members.len() >= 2) {
            let call = self.make_function(block, &nodes, g);
            for &m in &g.members {
                drop.insert(m);
            }
            replace.insert(g.tail, call);
        }
        let bindings = block
            .bindings
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match replace.remove(&i) {
                Some(nb) => Some(nb),
                None if drop.contains(&i) => None,
                None => Some(b.clone()),
            })
            .collect();
        BindingBlock {
            bindings,
            is_dataflow: block.is_dataflow,
            span: block.span,
        }
    }

    /// The private `Primitive` function of group `g`, added to the module; returns
    /// the binding that calls it in place of the group's tail.
    fn make_function(&mut self, block: &BindingBlock, nodes: &[Option<Node>], g: &Group) -> Binding {
        let member_vars: HashSet<u64> = g.members.iter().map(|&m| block.bindings[m].var().id()).collect();
        // Inputs: variables from outside the group and constants, each once.
        let mut inputs: Vec<Expr> = Vec::new();
        for &m in &g.members {
            if let Some(n) = &nodes[m] {
                for a in &n.args {
                    let inside = a.as_var().is_some_and(|v| member_vars.contains(&v.id()));
                    if !inside && !inputs.iter().any(|i| input_key(i) == input_key(a)) {
                        inputs.push(a.clone());
                    }
                }
            }
        }
        let params: Vec<Var> = inputs
            .iter()
            .enumerate()
            .map(|(i, e)| match e.kind() {
                ExprKind::Var(v) => Var::new(v.name(), v.struct_info().cloned()),
                _ => Var::new(format!("param_{i}"), constant_struct_info(e)),
            })
            .collect();
        let subst: HashMap<usize, Var> = inputs.iter().map(input_key).zip(params.iter().cloned()).collect();
        let tail_var = block.bindings[g.tail].var().clone();
        let out_var = Var::new("gv", tail_var.struct_info().cloned());
        let mut rename = Rename { subst };
        let mut inner = Vec::new();
        for &m in &g.members {
            let b = &block.bindings[m];
            let value = rename.visit_expr(b.value());
            let var = if m == g.tail { out_var.clone() } else { b.var().clone() };
            inner.push(Binding::VarBinding {
                var,
                value,
                span: b.span(),
            });
        }
        // Shape variables the group uses but its tensor parameters do not define
        // come in through one more parameter, `tir_vars: R.Shape([..])`, as TVM's
        // FuseOps does.
        let mut params = params;
        let missing = undefined_shape_vars(&params, &inner, tail_var.struct_info());
        if !missing.is_empty() {
            let values: Vec<relax_ir::PrimExpr> = missing.iter().map(|v| v.to_expr()).collect();
            let si = StructInfo::Shape(relax_ir::ShapeStructInfo {
                ndim: values.len() as i32,
                values: Some(values.clone()),
            });
            params.push(Var::new("tir_vars", Some(si)));
            inputs.push(Expr::shape(values));
        }
        let mut attrs = Attrs::new();
        attrs.set("Primitive", AttrValue::Int(1));
        let func = Function {
            params,
            body: Expr::new(ExprKind::Seq(SeqExpr {
                blocks: vec![BindingBlock {
                    bindings: inner,
                    is_dataflow: true,
                    span: Span::NONE,
                }],
                body: out_var.to_expr(),
            })),
            ret_struct_info: tail_var.struct_info().cloned(),
            is_pure: true,
            attrs,
            private: true,
            span: Span::NONE,
        };
        let base: Vec<&str> = g
            .members
            .iter()
            .filter_map(|&m| nodes[m].as_ref().map(|n| n.callee.as_str()))
            .collect();
        let mut name = format!("fused_{}", base.join("_"));
        if name.len() > 80 {
            name.truncate(80);
        }
        let mut unique = name.clone();
        let mut k = 1;
        while self.names.contains(&unique) {
            unique = format!("{name}{k}");
            k += 1;
        }
        self.names.insert(unique.clone());
        self.new_funcs.push((unique.clone(), func));
        Binding::VarBinding {
            var: tail_var,
            value: Expr::call(
                Expr::new(ExprKind::GlobalVar(GlobalVar::new(&unique))),
                inputs,
                Attrs::new(),
                Vec::new(),
            ),
            span: block.bindings[g.tail].span(),
        }
    }
}

impl ExprMutator for Fuser<'_> {
    fn visit_block(&mut self, b: &BindingBlock) -> BindingBlock {
        let b = relax_ir::mutator::walk_block(self, b);
        if b.is_dataflow {
            self.fuse_block(&b)
        } else {
            b
        }
    }
}

/// The shape variables used by the group's bindings (their StructInfo and
/// `out_ty`s) and its result that no parameter defines (a parameter defines the
/// variables that are whole dimensions of its StructInfo), in order of first use.
fn undefined_shape_vars(params: &[Var], inner: &[Binding], ret: Option<&StructInfo>) -> Vec<relax_ir::tir::TirVar> {
    let mut defined: HashSet<u64> = HashSet::new();
    for p in params {
        if let Some(si) = p.struct_info() {
            defined_by(si, &mut defined);
        }
    }
    let mut used: Vec<StructInfo> = Vec::new();
    for b in inner {
        used.extend(b.var().struct_info().cloned());
        if let Some(c) = b.value().as_call() {
            used.extend(c.sinfo_args.iter().cloned());
        }
    }
    used.extend(ret.cloned());
    let mut out: Vec<relax_ir::tir::TirVar> = Vec::new();
    for si in &used {
        for v in relax_ir::visit::struct_info_tir_vars(si) {
            if !defined.contains(&v.id()) && !out.iter().any(|o| o.id() == v.id()) {
                out.push(v);
            }
        }
    }
    out
}

/// Insert the variables a parameter's StructInfo defines: those that are a whole
/// dimension of a tensor or shape, or the value of a scalar.
fn defined_by(si: &StructInfo, out: &mut HashSet<u64>) {
    let mut add = |e: &relax_ir::PrimExpr| {
        if let Some(v) = e.as_var() {
            out.insert(v.id());
        }
    };
    match si {
        StructInfo::Tensor(t) => t.shape_values().unwrap_or(&[]).iter().for_each(&mut add),
        StructInfo::Shape(s) => s.values.iter().flatten().for_each(&mut add),
        StructInfo::Prim(p) => p.value.iter().for_each(&mut add),
        StructInfo::Tuple(fields) => fields.iter().for_each(|f| defined_by(f, out)),
        StructInfo::Object | StructInfo::Func(_) => {}
    }
}

/// Identity of a group input: a variable's id, or a constant's node address.
fn input_key(e: &Expr) -> usize {
    match e.kind() {
        ExprKind::Var(v) => v.id() as usize,
        ExprKind::Constant { data } => std::sync::Arc::as_ptr(data) as usize,
        _ => std::sync::Arc::as_ptr(&e.0) as usize,
    }
}

/// The StructInfo of a constant tensor.
fn constant_struct_info(e: &Expr) -> Option<StructInfo> {
    let ExprKind::Constant { data } = e.kind() else {
        return None;
    };
    Some(StructInfo::Tensor(relax_ir::TensorStructInfo {
        shape: Some(Expr::shape(
            data.shape.iter().map(|&d| relax_ir::PrimExpr::int(d)).collect(),
        )),
        dtype: data.dtype,
        vdevice: None,
        ndim: data.shape.len() as i32,
    }))
}

/// Replace group inputs (variables and constants) by the function's parameters.
struct Rename {
    subst: HashMap<usize, Var>,
}

impl ExprMutator for Rename {
    fn visit_expr(&mut self, e: &Expr) -> Expr {
        if matches!(e.kind(), ExprKind::Var(_) | ExprKind::Constant { .. }) {
            if let Some(p) = self.subst.get(&input_key(e)) {
                return p.to_expr();
            }
            return e.clone();
        }
        walk_expr(self, e)
    }
}
