//! `fuse-tir`: each `Primitive` function made by `fuse-ops` becomes one PrimFunc, as
//! TVM's FuseTIR does: the callees' bodies are inlined one after the other, the
//! tensors passed between them become buffers allocated in the root block, and
//! then every intermediate produced by a spatial block is computed inline where it
//! is read (TVM's `compute_inline`), so that an elementwise chain is one loop nest.
//! A call is replaced by `call_tir` of the new PrimFunc.

use std::collections::{HashMap, HashSet};

use relax_ir::attrs::AttrValue;
use relax_ir::mutator::{walk_prim_expr, walk_stmt, StmtExprMutator};
use relax_ir::tir::{
    Block, Buffer, BufferNode, BufferRegion, For, ForKind, IterKind, PrimExpr, PrimExprKind, Range, Stmt, TirVar,
};
use relax_ir::visit::substitute_prim_expr;
use relax_ir::{
    Attrs, BaseFunc, Binding, Diagnostic, Expr, ExprKind, Function, GlobalVar, IRModule, PrimFunc, StructInfo,
};
use relax_op::legalize::te::{loop_over, root_prim_func};

/// Replace every call of a `Primitive` function by `call_tir` of one fused PrimFunc.
/// A callee's symbolic sizes take the static sizes it is called with. A group
/// whose callees have a form this pass does not handle (symbolic group shapes,
/// scalar parameters, thread bindings) is left as a call of its Relax function.
pub fn fuse_tir(module: &IRModule) -> Result<IRModule, Diagnostic> {
    let mut fused: HashMap<String, PrimFunc> = HashMap::new();
    for (gv, f) in &module.functions {
        if let BaseFunc::Relax(func) = f {
            if func.attrs.get("Primitive").is_some() {
                if let Some(pf) = fuse_function(module, func) {
                    fused.insert(gv.name().to_string(), pf);
                }
            }
        }
    }
    if fused.is_empty() {
        return Ok(module.clone());
    }
    let mut out = IRModule {
        functions: Default::default(),
        attrs: module.attrs.clone(),
        global_infos: module.global_infos.clone(),
    };
    for (gv, f) in &module.functions {
        match f {
            BaseFunc::Relax(func) if fused.contains_key(gv.name()) => {
                let _ = func;
            }
            BaseFunc::Relax(func) => {
                let mut r = Redirect { fused: &fused };
                let nf = relax_ir::mutator::ExprMutator::visit_function(&mut r, func);
                out.functions.insert(gv.clone(), BaseFunc::Relax(nf));
            }
            BaseFunc::Prim(_) => {
                out.functions.insert(gv.clone(), f.clone());
            }
        }
    }
    for (name, pf) in fused {
        out.functions.insert(GlobalVar::new(&name), BaseFunc::Prim(pf));
    }
    // The PrimFuncs only the groups called are gone with them.
    Ok(crate::dce::remove_unreachable(&out))
}

/// Rewrites calls of fused functions into `call_tir`.
struct Redirect<'a> {
    fused: &'a HashMap<String, PrimFunc>,
}

impl relax_ir::mutator::ExprMutator for Redirect<'_> {
    fn visit_binding(&mut self, b: &Binding) -> Vec<Binding> {
        if let Binding::VarBinding { var, value, span } = b {
            if let Some(call) = value.as_call() {
                if let ExprKind::GlobalVar(g) = call.op.kind() {
                    if self.fused.contains_key(g.name()) {
                        if let Some(si) = var.struct_info() {
                            let value = Expr::call(
                                Expr::op("relax.call_tir"),
                                vec![
                                    Expr::new(ExprKind::GlobalVar(g.clone())),
                                    Expr::tuple(call.args.clone()),
                                ],
                                Attrs::new(),
                                vec![si.clone()],
                            );
                            return vec![Binding::VarBinding {
                                var: var.clone(),
                                value,
                                span: *span,
                            }];
                        }
                    }
                }
            }
        }
        vec![relax_ir::mutator::walk_binding(self, b)]
    }
}

/// A static tensor shape and dtype.
fn static_tensor(si: Option<&StructInfo>) -> Option<(relax_ir::DataType, Vec<PrimExpr>)> {
    let StructInfo::Tensor(t) = si? else { return None };
    let shape = t.shape_values()?;
    if shape.iter().any(|d| d.as_int().is_none()) {
        return None;
    }
    Some((t.dtype, shape.to_vec()))
}

/// The fused PrimFunc of a `Primitive` function, when every callee can be inlined.
fn fuse_function(module: &IRModule, func: &Function) -> Option<PrimFunc> {
    let ExprKind::Seq(seq) = func.body.kind() else {
        return None;
    };
    let [block] = seq.blocks.as_slice() else { return None };
    let out_var = seq.body.as_var()?;
    let mut params = Vec::new();
    let mut buffer_map = Vec::new();
    let mut env: HashMap<u64, Buffer> = HashMap::new();
    for p in &func.params {
        let (dt, shape) = static_tensor(p.struct_info())?;
        let b = Buffer::new(p.name(), dt, shape);
        let h = TirVar::new_handle(p.name(), Some(dt), Some("global".into()));
        params.push(h.clone());
        buffer_map.push((h, b.clone()));
        env.insert(p.id(), b);
    }
    let (odt, oshape) = static_tensor(out_var.struct_info())?;
    let out_buf = Buffer::new(out_var.name(), odt, oshape);
    let mut allocs: Vec<Buffer> = Vec::new();
    let mut intermediates: Vec<Buffer> = Vec::new();
    let mut stages: Vec<Stmt> = Vec::new();
    let mut attrs = Attrs::new();
    for b in &block.bindings {
        let (var, callee, args) = crate::fuse_ops::call_tir_binding(b)?;
        let cf = module.prim_func(callee.name())?;
        if cf.params.len() != args.len() + 1 || cf.buffer_map.len() != cf.params.len() {
            return None;
        }
        if attrs.is_empty() {
            attrs = cf.attrs.clone();
            attrs.remove("global_symbol");
        }
        let dst = if var == out_var {
            out_buf.clone()
        } else {
            let (dt, shape) = static_tensor(var.struct_info())?;
            let t = Buffer::new(var.name(), dt, shape);
            intermediates.push(t.clone());
            env.insert(var.id(), t.clone());
            t
        };
        let mut map: HashMap<u64, Buffer> = HashMap::new();
        let mut pairs: Vec<(Buffer, Buffer)> = Vec::new();
        for (i, p) in cf.params.iter().enumerate() {
            let cb = cf.buffer_of(p)?;
            let ours = if i < args.len() {
                env.get(&args[i].as_var()?.id())?.clone()
            } else {
                dst.clone()
            };
            if cb.dtype() != ours.dtype() || cb.shape().len() != ours.shape().len() {
                return None;
            }
            map.insert(cb.id(), ours.clone());
            pairs.push((cb.clone(), ours));
        }
        // The callee's symbolic sizes take the values of the shapes it is called with.
        let vars = bind_shape_vars(&pairs)?;
        // Peel the callee's root block.
        let mut body = cf.body.clone();
        if let Stmt::BlockRealize {
            block: root,
            iter_values,
            ..
        } = &body
        {
            if root.iter_vars.is_empty() && iter_values.is_empty() {
                if root.init.is_some() || !root.match_buffers.is_empty() {
                    return None;
                }
                let mut own = Vec::new();
                for a in &root.alloc_buffers {
                    let fresh = fresh_buffer(a, &vars);
                    map.insert(a.id(), fresh.clone());
                    own.push(fresh);
                }
                allocs.extend(own);
                body = (*root.body).clone();
            }
        }
        let mut sub = BufferSubst { map, vars };
        let body = sub.visit_stmt(&body);
        let parts = match body {
            Stmt::Seq(v) => v,
            s => vec![s],
        };
        for part in parts {
            if !is_loop_nest_of_blocks(&part) {
                return None;
            }
            stages.push(part);
        }
    }
    // Compute every spatial intermediate inline where it is read.
    // Intermediates between callees are not recomputed inside reductions; the
    // callees' own scratch (padding) is, as TVM's GPU schedules inline it.
    let mut kept: Vec<Buffer> = Vec::new();
    for t in intermediates {
        if !inline_buffer(&mut stages, &t, false) {
            kept.push(t);
        }
    }
    for t in allocs {
        if !inline_buffer(&mut stages, &t, true) {
            kept.push(t);
        }
    }
    // A convolution's or pooling's elementwise epilogue joins its loop nest.
    kept.retain(|t| !epilogue_into_reduction(&mut stages, t));
    attrs.set("tirx.noalias", AttrValue::Bool(true));
    params.push(TirVar::new_handle(out_buf.name(), Some(odt), Some("global".into())));
    let oh = params.last()?.clone();
    buffer_map.push((oh, out_buf));
    Some(root_prim_func(params, buffer_map, kept, stages, attrs))
}

/// Values of the callee's shape variables, from the `(callee buffer, fused buffer)`
/// pairs of one call: a dimension that is a variable binds it to the fused
/// buffer's (static) size; every dimension must then evaluate to that size (a
/// dimension `m * n` is checked once `m` and `n` are bound). `None` when a
/// dimension disagrees or cannot be evaluated, or when a stride or offset is
/// symbolic: the group is then not fused.
fn bind_shape_vars(pairs: &[(Buffer, Buffer)]) -> Option<HashMap<u64, PrimExpr>> {
    let mut vars: HashMap<u64, PrimExpr> = HashMap::new();
    let mut values: HashMap<u64, i64> = HashMap::new();
    for (cb, ours) in pairs {
        for (d, o) in cb.shape().iter().zip(ours.shape()) {
            if let (Some(v), Some(size)) = (d.as_var(), o.as_int()) {
                if let std::collections::hash_map::Entry::Vacant(e) = values.entry(v.id()) {
                    e.insert(size);
                    vars.insert(v.id(), PrimExpr::int_of(size, v.dtype()));
                }
            }
        }
    }
    let env = |v: &TirVar| values.get(&v.id()).copied();
    for (cb, ours) in pairs {
        for (d, o) in cb.shape().iter().zip(ours.shape()) {
            if relax_ir::arith::eval_int(d, &env)? != o.as_int()? {
                return None;
            }
        }
        let node = &cb.0;
        let static_layout = node
            .strides
            .iter()
            .chain(&node.elem_offset)
            .all(|e| relax_ir::visit::free_tir_vars(e).is_empty());
        if !static_layout {
            return None;
        }
    }
    Some(vars)
}

/// `e` with the shape variables of `vars` replaced; an integer expression that
/// they make constant is folded (`m * n` becomes `512`).
fn subst_shape_vars(e: &PrimExpr, vars: &HashMap<u64, PrimExpr>) -> PrimExpr {
    if vars.is_empty() {
        return e.clone();
    }
    let r = substitute_prim_expr(e, &|v| vars.get(&v.id()).cloned());
    if r.same_as(e) {
        return r;
    }
    fold_int(&r)
}

/// `e` folded to a constant when it is an integer expression of constants, else
/// `e` with its foldable integer parts folded.
fn fold_int(e: &PrimExpr) -> PrimExpr {
    if e.dtype().is_int() {
        if let Some(c) = relax_ir::arith::eval_int(e, &|_| None) {
            return PrimExpr::int_of(c, e.dtype());
        }
    }
    relax_ir::visit::map_prim_children(e, &mut fold_int)
}

/// A copy of `b` with a fresh identity and data variable, its shape variables
/// replaced by `vars`.
fn fresh_buffer(b: &Buffer, vars: &HashMap<u64, PrimExpr>) -> Buffer {
    let n = &b.0;
    Buffer::from_node(BufferNode {
        id: 0,
        name: n.name.clone(),
        data: TirVar::new_handle(n.name.clone(), Some(n.dtype), Some(n.scope.clone())),
        dtype: n.dtype,
        shape: n.shape.iter().map(|d| subst_shape_vars(d, vars)).collect(),
        strides: n.strides.clone(),
        elem_offset: n.elem_offset.clone(),
        scope: n.scope.clone(),
        align: n.align,
        offset_factor: n.offset_factor,
        axis_separators: n.axis_separators.clone(),
    })
}

/// Maps the callee's buffers to the fused function's, its shape variables to
/// their values and its loop and block variables to fresh ones; buffers allocated inside blocks get fresh copies (a callee may be
/// inlined twice).
struct BufferSubst {
    map: HashMap<u64, Buffer>,
    vars: HashMap<u64, PrimExpr>,
}

impl StmtExprMutator for BufferSubst {
    fn visit_prim_expr(&mut self, e: &PrimExpr) -> PrimExpr {
        if self.vars.is_empty() {
            return walk_prim_expr(self, e);
        }
        if let Some(v) = e.as_var().and_then(|v| self.vars.get(&v.id())) {
            return v.clone();
        }
        let w = walk_prim_expr(self, e);
        if w.same_as(e) {
            w
        } else {
            fold_int(&w)
        }
    }
    /// Loop and block iteration variables are renamed to fresh ones: a callee
    /// inlined twice must not define the same variable twice.
    fn visit_stmt(&mut self, s: &Stmt) -> Stmt {
        match s {
            Stmt::For(For { var, .. }) => {
                let nv = TirVar::new(var.name(), var.dtype());
                self.vars.insert(var.id(), nv.to_expr());
                let mut r = walk_stmt(self, s);
                if let Stmt::For(For { var, .. }) = &mut r {
                    *var = nv;
                }
                r
            }
            Stmt::BlockRealize { block, .. } => {
                let fresh: Vec<TirVar> = block
                    .iter_vars
                    .iter()
                    .map(|iv| {
                        let nv = TirVar::new(iv.var.name(), iv.var.dtype());
                        self.vars.insert(iv.var.id(), nv.to_expr());
                        nv
                    })
                    .collect();
                let mut r = walk_stmt(self, s);
                if let Stmt::BlockRealize { block, .. } = &mut r {
                    for (iv, nv) in block.iter_vars.iter_mut().zip(fresh) {
                        iv.var = nv;
                    }
                }
                r
            }
            _ => walk_stmt(self, s),
        }
    }
    fn visit_buffer(&mut self, b: &Buffer) -> Buffer {
        if let Some(n) = self.map.get(&b.id()) {
            return n.clone();
        }
        let fresh = fresh_buffer(b, &self.vars);
        self.map.insert(b.id(), fresh.clone());
        fresh
    }
}

/// Loops (possibly none) around blocks, nothing else at the top.
fn is_loop_nest_of_blocks(s: &Stmt) -> bool {
    match s {
        Stmt::For(For { kind, body, .. }) => *kind != ForKind::ThreadBinding && is_loop_nest_of_blocks(body),
        Stmt::BlockRealize { .. } => true,
        Stmt::Seq(v) => v.iter().all(is_loop_nest_of_blocks),
        _ => false,
    }
}

/// A spatial producer stage: `for i..: block(v = i): T[v] = value`.
struct Producer {
    iter_vars: Vec<TirVar>,
    value: PrimExpr,
    reads: Vec<BufferRegion>,
}

fn as_producer(s: &Stmt, t: &Buffer) -> Option<Producer> {
    let (loops, iter_values, block) = loop_nest(s)?;
    if block.init.is_some()
        || !block.alloc_buffers.is_empty()
        || !block.match_buffers.is_empty()
        || iter_values.len() != loops.len()
        || block.iter_vars.len() != loops.len()
    {
        return None;
    }
    let Stmt::BufferStore {
        buffer, value, indices, ..
    } = &*block.body
    else {
        return None;
    };
    if buffer != t || indices.len() != t.shape().len() || indices.len() != block.iter_vars.len() {
        return None;
    }
    for (k, iv) in block.iter_vars.iter().enumerate() {
        if iv.kind != IterKind::DataPar || indices[k].as_var() != Some(&iv.var) {
            return None;
        }
        // The loops cover the buffer exactly, each driving its block axis.
        if iter_values[k].as_var() != Some(&loops[k].0)
            || loops[k].1.as_int().is_none()
            || loops[k].1.as_int() != t.shape()[k].as_int()
            || iv.dom.min.as_int() != Some(0)
            || iv.dom.extent.as_int() != t.shape()[k].as_int()
        {
            return None;
        }
    }
    if reads_buffer(value, t) {
        return None;
    }
    Some(Producer {
        iter_vars: block.iter_vars.iter().map(|iv| iv.var.clone()).collect(),
        value: value.clone(),
        reads: block.reads.clone(),
    })
}

fn reads_buffer(e: &PrimExpr, t: &Buffer) -> bool {
    if let PrimExprKind::BufferLoad { buffer, .. } = e.kind() {
        if buffer == t {
            return true;
        }
    }
    let mut found = false;
    relax_ir::visit::for_each_prim_child(e, &mut |c| found |= reads_buffer(c, t));
    found
}

/// Whether `s` writes `t` or (unless `reductions_ok`) reads it inside a reduction block.
fn uses_in_reduction_or_writes(s: &Stmt, t: &Buffer, reductions_ok: bool) -> bool {
    let mut bad = false;
    let mut check = CheckUses {
        t,
        bad: &mut bad,
        in_reduce: false,
        reductions_ok,
    };
    check.visit_stmt(s);
    bad
}

struct CheckUses<'a> {
    t: &'a Buffer,
    bad: &'a mut bool,
    in_reduce: bool,
    reductions_ok: bool,
}

impl StmtExprMutator for CheckUses<'_> {
    fn visit_stmt(&mut self, s: &Stmt) -> Stmt {
        match s {
            Stmt::BlockRealize { block, .. } => {
                let saved = self.in_reduce;
                self.in_reduce |= block.init.is_some() || block.iter_vars.iter().any(|iv| iv.kind != IterKind::DataPar);
                let r = walk_stmt(self, s);
                self.in_reduce = saved;
                r
            }
            Stmt::BufferStore { buffer, .. } if buffer == self.t => {
                *self.bad = true;
                s.clone()
            }
            _ => walk_stmt(self, s),
        }
    }
    fn visit_prim_expr(&mut self, e: &PrimExpr) -> PrimExpr {
        if let PrimExprKind::BufferLoad { buffer, .. } = e.kind() {
            if buffer == self.t && self.in_reduce && !self.reductions_ok {
                *self.bad = true;
            }
        }
        walk_prim_expr(self, e)
    }
}

/// Replace loads of the producer's buffer by its value at the load's indices.
struct Inline<'a> {
    t: &'a Buffer,
    p: &'a Producer,
}

impl StmtExprMutator for Inline<'_> {
    fn visit_prim_expr(&mut self, e: &PrimExpr) -> PrimExpr {
        let e = walk_prim_expr(self, e);
        if let PrimExprKind::BufferLoad { buffer, indices } = e.kind() {
            if buffer == self.t {
                let m: HashMap<u64, PrimExpr> = self
                    .p
                    .iter_vars
                    .iter()
                    .map(|v| v.id())
                    .zip(indices.iter().cloned())
                    .collect();
                return substitute_prim_expr(&self.p.value, &|v| m.get(&v.id()).cloned());
            }
        }
        e
    }
    fn visit_stmt(&mut self, s: &Stmt) -> Stmt {
        let s = walk_stmt(self, s);
        if let Stmt::BlockRealize {
            iter_values,
            predicate,
            block,
        } = &s
        {
            if block.reads.iter().any(|r| r.buffer == *self.t) {
                let mut b = (**block).clone();
                b.reads.retain(|r| r.buffer != *self.t);
                let have: HashSet<u64> = b.reads.iter().map(|r| r.buffer.id()).collect();
                for r in &self.p.reads {
                    if !have.contains(&r.buffer.id()) {
                        b.reads.push(BufferRegion {
                            buffer: r.buffer.clone(),
                            region: r.buffer.shape().iter().map(|d| Range::from_extent(d.clone())).collect(),
                        });
                    }
                }
                return Stmt::BlockRealize {
                    iter_values: iter_values.clone(),
                    predicate: predicate.clone(),
                    block: Box::new(b),
                };
            }
        }
        s
    }
}

/// Inline the producer stage of `t` into its readers; false (nothing changed) when
/// `t` is not produced by one spatial block or is read by a reduction.
fn inline_buffer(stages: &mut Vec<Stmt>, t: &Buffer, into_reductions: bool) -> bool {
    let Some(pi) = stages.iter().position(|s| as_producer(s, t).is_some()) else {
        return false;
    };
    let Some(p) = as_producer(&stages[pi], t) else {
        return false;
    };
    if stages
        .iter()
        .enumerate()
        .any(|(i, s)| i != pi && uses_in_reduction_or_writes(s, t, into_reductions))
    {
        return false;
    }
    // Recomputing a costly value at several reads would cost more than storing it.
    let reads: usize = stages.iter().map(|s| count_loads(s, t)).sum();
    let size = expr_size(&p.value);
    if (reads > 1 && size > MAX_DUPLICATED_NODES) || (into_reductions && size > MAX_REDUCTION_INLINE_NODES) {
        return false;
    }
    let mut inl = Inline { t, p: &p };
    let new: Vec<Stmt> = stages
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != pi)
        .map(|(_, s)| inl.visit_stmt(s))
        .collect();
    *stages = new;
    true
}

/// Largest producer expression (in nodes) inlined into a reduction (a padding
/// condition is about 30).
const MAX_REDUCTION_INLINE_NODES: usize = 64;

/// Largest producer expression (in nodes) inlined at more than one read.
const MAX_DUPLICATED_NODES: usize = 16;

fn expr_size(e: &PrimExpr) -> usize {
    let mut n = 1;
    relax_ir::visit::for_each_prim_child(e, &mut |c| n += expr_size(c));
    n
}

/// How many loads of `t` there are in `s`.
fn count_loads(s: &Stmt, t: &Buffer) -> usize {
    let mut c = Loads { t, with: None, n: 0 };
    c.visit_stmt(s);
    c.n
}

/// Loops `(var, extent)` outermost first, the block's iteration values, the block.
type LoopNest<'a> = (Vec<(TirVar, PrimExpr)>, &'a [PrimExpr], &'a Block);

/// The loops of a stage down to its single block: `(loop var, extent)` outermost
/// first, the block's iteration values and the block.
fn loop_nest(s: &Stmt) -> Option<LoopNest<'_>> {
    let mut loops = Vec::new();
    let mut cur = s;
    while let Stmt::For(For {
        var,
        min,
        extent,
        kind,
        body,
        ..
    }) = cur
    {
        if min.as_int() != Some(0) || *kind == ForKind::ThreadBinding {
            return None;
        }
        loops.push((var.clone(), extent.clone()));
        cur = body;
    }
    match cur {
        Stmt::BlockRealize {
            iter_values,
            predicate: None,
            block,
        } => Some((loops, iter_values, block)),
        _ => None,
    }
}

/// Counts the loads of `t` (`n`), replacing each by `with` when it is set.
struct Loads<'a> {
    t: &'a Buffer,
    with: Option<PrimExpr>,
    n: usize,
}

impl StmtExprMutator for Loads<'_> {
    fn visit_prim_expr(&mut self, e: &PrimExpr) -> PrimExpr {
        if let PrimExprKind::BufferLoad { buffer, .. } = e.kind() {
            if buffer == self.t {
                self.n += 1;
                if let Some(w) = &self.with {
                    return w.clone();
                }
            }
        }
        walk_prim_expr(self, e)
    }
}

/// Whether a load in `e` has an index that is not a plain variable (a convolution
/// window or padding, as opposed to a matmul, which keeps its own GPU schedule).
fn has_computed_index(e: &PrimExpr) -> bool {
    if let PrimExprKind::BufferLoad { indices, .. } = e.kind() {
        if indices.iter().any(|i| i.as_var().is_none()) {
            return true;
        }
    }
    let mut found = false;
    relax_ir::visit::for_each_prim_child(e, &mut |c| found |= has_computed_index(c));
    found
}

/// When `t` is produced by a reduction stage (spatial loops outside, reduction loops
/// inside) and read only by the next stage, an elementwise one at the same index,
/// merge both into one loop nest: the reduction accumulates in a local scalar and
/// the epilogue stores from it (TVM's schedules do the same with
/// `reverse_compute_inline`). Returns whether `stages` changed.
fn epilogue_into_reduction(stages: &mut Vec<Stmt>, t: &Buffer) -> bool {
    let Some(ri) = stages.iter().position(|s| {
        loop_nest(s).is_some_and(|(_, _, b)| {
            matches!(&*b.body, Stmt::BufferStore { buffer, .. } if buffer == t) && b.init.is_some()
        })
    }) else {
        return false;
    };
    let ci = ri + 1;
    if ci >= stages.len()
        || stages
            .iter()
            .enumerate()
            .any(|(i, s)| i != ci && i != ri && count_loads(s, t) > 0)
    {
        return false;
    }
    let Some((loops, values, red)) = loop_nest(&stages[ri]) else {
        return false;
    };
    let Some(cons) = as_producer_any(&stages[ci]) else {
        return false;
    };
    let (
        Stmt::BufferStore {
            value: upd,
            indices: sidx,
            ..
        },
        Some(init),
    ) = (&*red.body, red.init.as_deref())
    else {
        return false;
    };
    let Stmt::BufferStore { value: init_v, .. } = init else {
        return false;
    };
    if !red.alloc_buffers.is_empty() || !red.match_buffers.is_empty() || values.len() != red.iter_vars.len() {
        return false;
    }
    // Spatial iteration variables first, each bound to its own loop, in `t`'s order.
    let n_sp = red
        .iter_vars
        .iter()
        .take_while(|iv| iv.kind == IterKind::DataPar)
        .count();
    if n_sp != t.shape().len()
        || n_sp > loops.len()
        || red.iter_vars[n_sp..].iter().any(|iv| iv.kind != IterKind::CommReduce)
        || !has_computed_index(upd)
    {
        return false;
    }
    let mut vmap: HashMap<u64, PrimExpr> = HashMap::new();
    for (k, iv) in red.iter_vars.iter().enumerate() {
        let Some(lv) = values[k].as_var() else { return false };
        let pos = loops.iter().position(|(v, _)| v == lv);
        match pos {
            Some(p) if (k < n_sp) == (p < n_sp) && (k >= n_sp || p == k) => {}
            _ => return false,
        }
        if k < n_sp && sidx[k].as_var() != Some(&iv.var) {
            return false;
        }
        vmap.insert(iv.var.id(), lv.to_expr());
    }
    if sidx.len() != n_sp || loops.len() != red.iter_vars.len() {
        return false;
    }
    // The epilogue reads `t` only at its own index, over the same extents.
    if cons.iter_vars.len() != n_sp || !reads_only_at(&cons.value, t, &cons.iter_vars) {
        return false;
    }
    let same = |a: &PrimExpr, b: &PrimExpr| a.as_int().is_some() && a.as_int() == b.as_int();
    if cons.out.shape().len() != n_sp
        || (0..n_sp).any(|k| !same(&cons.out.shape()[k], &t.shape()[k]) || !same(&loops[k].1, &t.shape()[k]))
    {
        return false;
    }
    for (k, v) in cons.iter_vars.iter().enumerate() {
        vmap.insert(v.id(), loops[k].0.to_expr());
    }
    let acc = Buffer::with_scope("acc", t.dtype(), vec![PrimExpr::int(1)], "local");
    let zero = PrimExpr::int(0);
    let acc_load = PrimExpr::load(&acc, vec![zero.clone()]);
    let sub = |e: &PrimExpr| substitute_prim_expr(e, &|v| vmap.get(&v.id()).cloned());
    let mut rep = Loads {
        t,
        with: Some(acc_load.clone()),
        n: 0,
    };
    let store_acc = |v: PrimExpr| Stmt::BufferStore {
        buffer: acc.clone(),
        value: v,
        indices: vec![zero.clone()],
        span: relax_ir::Span::NONE,
    };
    let mut inner = store_acc(sub(&rep.visit_prim_expr(upd)));
    for (v, ext) in loops[n_sp..].iter().rev() {
        inner = loop_over(v, ext, ForKind::Serial, inner);
    }
    let epi = Stmt::BufferStore {
        buffer: cons.out.clone(),
        value: sub(&rep.visit_prim_expr(&cons.value)),
        indices: loops[..n_sp].iter().map(|(v, _)| v.to_expr()).collect(),
        span: relax_ir::Span::NONE,
    };
    let mut nest = Stmt::Alloc {
        buffer: acc.clone(),
        body: Box::new(Stmt::Seq(vec![store_acc(sub(init_v)), inner, epi])),
    };
    for (v, ext) in loops[..n_sp].iter().rev() {
        nest = loop_over(v, ext, ForKind::Parallel, nest);
    }
    stages[ri] = nest;
    stages.remove(ci);
    true
}

/// A spatial stage `for i..: block(v = i): out[v] = value` writing any buffer.
struct Consumer {
    iter_vars: Vec<TirVar>,
    value: PrimExpr,
    out: Buffer,
}

fn as_producer_any(s: &Stmt) -> Option<Consumer> {
    let (_, _, block) = loop_nest(s)?;
    let Stmt::BufferStore { buffer, .. } = &*block.body else {
        return None;
    };
    let p = as_producer(s, buffer)?;
    Some(Consumer {
        iter_vars: p.iter_vars,
        value: p.value,
        out: buffer.clone(),
    })
}

/// Every load of `t` in `e` is at exactly `vars`.
fn reads_only_at(e: &PrimExpr, t: &Buffer, vars: &[TirVar]) -> bool {
    if let PrimExprKind::BufferLoad { buffer, indices } = e.kind() {
        if buffer == t && (indices.len() != vars.len() || indices.iter().zip(vars).any(|(i, v)| i.as_var() != Some(v)))
        {
            return false;
        }
    }
    let mut ok = true;
    relax_ir::visit::for_each_prim_child(e, &mut |c| ok &= reads_only_at(c, t, vars));
    ok
}
