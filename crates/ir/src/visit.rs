//! Reusable read-only traversals: children of `PrimExpr`s, the TIR
//! [`StmtExprVisitor`] with default recursion, free TIR variables, substitution
//! of TIR variables in expressions and `StructInfo`, and a pre-order walk over
//! Relax expressions.

use std::collections::{HashMap, HashSet};

use crate::relax::{
    BindingBlock, Call, Expr, ExprKind, FuncStructInfo, Function, PrimStructInfo, SeqExpr, ShapeStructInfo, StructInfo,
    TensorStructInfo, Var,
};
use crate::tir::{Block, Buffer, BufferRegion, For, PrimExpr, PrimExprKind, Stmt, TirVar};

/// Call `f` on every direct child of `e`, in field order.
pub fn for_each_prim_child<'a>(e: &'a PrimExpr, f: &mut dyn FnMut(&'a PrimExpr)) {
    use PrimExprKind::*;
    match e.kind() {
        IntImm { .. } | FloatImm { .. } | StringImm(_) | Var(_) => {}
        Cast { value, .. } => f(value),
        Binary { a, b, .. } => {
            f(a);
            f(b);
        }
        Not(a) => f(a),
        Select { cond, t, f: fv } => {
            f(cond);
            f(t);
            f(fv);
        }
        Call { args, .. } => args.iter().for_each(f),
        BufferLoad { indices, .. } => indices.iter().for_each(f),
        Let { value, body, .. } => {
            f(value);
            f(body);
        }
        Ramp { base, stride, .. } => {
            f(base);
            f(stride);
        }
        Broadcast { value, .. } => f(value),
    }
}

/// Rebuild `e` with `f` applied to each direct child. When `f` returns every child
/// unchanged (the same node), `e` itself is returned (no allocation).
pub fn map_prim_children(e: &PrimExpr, f: &mut dyn FnMut(&PrimExpr) -> PrimExpr) -> PrimExpr {
    use PrimExprKind::*;
    let same = |x: &PrimExpr, y: &PrimExpr| x.same_as(y);
    match e.kind() {
        IntImm { .. } | FloatImm { .. } | StringImm(_) | Var(_) => e.clone(),
        Cast { dtype, value } => {
            let v = f(value);
            if same(&v, value) {
                e.clone()
            } else {
                PrimExpr::new(Cast {
                    dtype: *dtype,
                    value: v,
                })
            }
        }
        Binary { op, a, b } => {
            let (na, nb) = (f(a), f(b));
            if same(&na, a) && same(&nb, b) {
                e.clone()
            } else {
                PrimExpr::binary(*op, na, nb)
            }
        }
        Not(a) => {
            let na = f(a);
            if same(&na, a) {
                e.clone()
            } else {
                PrimExpr::new(Not(na))
            }
        }
        Select { cond, t, f: fv } => {
            let (nc, nt, nf) = (f(cond), f(t), f(fv));
            if same(&nc, cond) && same(&nt, t) && same(&nf, fv) {
                e.clone()
            } else {
                PrimExpr::select(nc, nt, nf)
            }
        }
        Call { op, dtype, args } => {
            let new: Vec<PrimExpr> = args.iter().map(&mut *f).collect();
            if new.iter().zip(args).all(|(x, y)| same(x, y)) {
                e.clone()
            } else {
                PrimExpr::new(Call {
                    op: op.clone(),
                    dtype: *dtype,
                    args: new,
                })
            }
        }
        BufferLoad { buffer, indices } => {
            let new: Vec<PrimExpr> = indices.iter().map(&mut *f).collect();
            if new.iter().zip(indices).all(|(x, y)| same(x, y)) {
                e.clone()
            } else {
                PrimExpr::new(BufferLoad {
                    buffer: buffer.clone(),
                    indices: new,
                })
            }
        }
        Let { var, value, body } => {
            let (nv, nb) = (f(value), f(body));
            if same(&nv, value) && same(&nb, body) {
                e.clone()
            } else {
                PrimExpr::new(Let {
                    var: var.clone(),
                    value: nv,
                    body: nb,
                })
            }
        }
        Ramp { base, stride, lanes } => {
            let (nb, ns) = (f(base), f(stride));
            if same(&nb, base) && same(&ns, stride) {
                e.clone()
            } else {
                PrimExpr::new(Ramp {
                    base: nb,
                    stride: ns,
                    lanes: *lanes,
                })
            }
        }
        Broadcast { value, lanes } => {
            let nv = f(value);
            if same(&nv, value) {
                e.clone()
            } else {
                PrimExpr::new(Broadcast {
                    value: nv,
                    lanes: *lanes,
                })
            }
        }
    }
}

/// A read-only TIR traversal with default recursion (TVM's `StmtExprVisitor`).
/// References keep the lifetime `'a` of the visited tree, so a visitor may
/// collect them. A visitor overrides the methods for the nodes it inspects and
/// calls the matching `walk_*` function to recurse into the rest.
pub trait StmtExprVisitor<'a> {
    /// Visit a statement.
    fn visit_stmt(&mut self, s: &'a Stmt) {
        walk_stmt(self, s)
    }
    /// Visit an expression.
    fn visit_prim_expr(&mut self, e: &'a PrimExpr) {
        walk_prim_expr(self, e)
    }
    /// Visit a buffer reference (loads, stores, regions, allocations).
    fn visit_buffer(&mut self, b: &'a Buffer) {
        let _ = b;
    }
}

/// Visit the buffer of a load and every child of `e`.
pub fn walk_prim_expr<'a, V: StmtExprVisitor<'a> + ?Sized>(v: &mut V, e: &'a PrimExpr) {
    if let PrimExprKind::BufferLoad { buffer, .. } = e.kind() {
        v.visit_buffer(buffer);
    }
    for_each_prim_child(e, &mut |c| v.visit_prim_expr(c));
}

fn walk_region<'a, V: StmtExprVisitor<'a> + ?Sized>(v: &mut V, r: &'a BufferRegion) {
    v.visit_buffer(&r.buffer);
    for x in &r.region {
        v.visit_prim_expr(&x.min);
        v.visit_prim_expr(&x.extent);
    }
}

/// Visit every part of a block: iteration domains, read and write regions,
/// `T.init()`, allocations, matched buffers and the body, in that order.
pub fn walk_block<'a, V: StmtExprVisitor<'a> + ?Sized>(v: &mut V, b: &'a Block) {
    for iv in &b.iter_vars {
        v.visit_prim_expr(&iv.dom.min);
        v.visit_prim_expr(&iv.dom.extent);
    }
    b.reads.iter().chain(&b.writes).for_each(|r| walk_region(v, r));
    if let Some(init) = &b.init {
        v.visit_stmt(init);
    }
    b.alloc_buffers.iter().for_each(|x| v.visit_buffer(x));
    for mb in &b.match_buffers {
        v.visit_buffer(&mb.buffer);
        walk_region(v, &mb.source);
    }
    v.visit_stmt(&b.body);
}

/// Visit the expressions, buffers and sub-statements of `s`, in field order.
pub fn walk_stmt<'a, V: StmtExprVisitor<'a> + ?Sized>(v: &mut V, s: &'a Stmt) {
    match s {
        Stmt::BufferStore {
            buffer, value, indices, ..
        } => {
            v.visit_buffer(buffer);
            v.visit_prim_expr(value);
            indices.iter().for_each(|i| v.visit_prim_expr(i));
        }
        Stmt::Let { value, body, .. } | Stmt::Attr { value, body, .. } => {
            v.visit_prim_expr(value);
            v.visit_stmt(body);
        }
        Stmt::LaunchThread { extent: e, body, .. }
        | Stmt::Assert { cond: e, body, .. }
        | Stmt::While { cond: e, body } => {
            v.visit_prim_expr(e);
            v.visit_stmt(body);
        }
        Stmt::For(For { min, extent, body, .. }) => {
            v.visit_prim_expr(min);
            v.visit_prim_expr(extent);
            v.visit_stmt(body);
        }
        Stmt::If {
            cond,
            then_branch,
            else_branch,
        } => {
            v.visit_prim_expr(cond);
            v.visit_stmt(then_branch);
            if let Some(e) = else_branch {
                v.visit_stmt(e);
            }
        }
        Stmt::Seq(xs) => xs.iter().for_each(|x| v.visit_stmt(x)),
        Stmt::Evaluate(e) => v.visit_prim_expr(e),
        Stmt::Alloc { buffer, body } => {
            v.visit_buffer(buffer);
            v.visit_stmt(body);
        }
        Stmt::BlockRealize {
            iter_values,
            predicate,
            block,
        } => {
            walk_realize_values(v, iter_values, predicate.as_ref());
            walk_block(v, block);
        }
    }
}

/// Visit the values bound to a realized block's iteration variables, then its
/// predicate (the expressions of a `BlockRealize` outside the block).
pub fn walk_realize_values<'a, V: StmtExprVisitor<'a> + ?Sized>(
    v: &mut V,
    iter_values: &'a [PrimExpr],
    predicate: Option<&'a PrimExpr>,
) {
    iter_values.iter().for_each(|x| v.visit_prim_expr(x));
    if let Some(p) = predicate {
        v.visit_prim_expr(p);
    }
}

/// A visitor calling closures: `stmt` on every statement (pre-order), `expr` on
/// every expression met, descending into expressions only when `deep`.
struct Each<'f, 'a> {
    stmt: &'f mut dyn FnMut(&'a Stmt),
    expr: &'f mut dyn FnMut(&'a PrimExpr),
    deep: bool,
}

impl<'f, 'a> Each<'f, 'a> {
    fn new(stmt: &'f mut dyn FnMut(&'a Stmt), expr: &'f mut dyn FnMut(&'a PrimExpr), deep: bool) -> Self {
        Each { stmt, expr, deep }
    }
}

impl<'a> StmtExprVisitor<'a> for Each<'_, 'a> {
    fn visit_stmt(&mut self, s: &'a Stmt) {
        (self.stmt)(s);
        walk_stmt(self, s)
    }
    fn visit_prim_expr(&mut self, e: &'a PrimExpr) {
        (self.expr)(e);
        if self.deep {
            walk_prim_expr(self, e)
        }
    }
}

/// Call `f` on `s` and every statement nested in it (pre-order).
pub fn for_each_stmt<'a>(s: &'a Stmt, f: &mut dyn FnMut(&'a Stmt)) {
    Each::new(f, &mut |_| {}, false).visit_stmt(s)
}

/// Call `f` on every expression held by a statement of `s` (the outermost ones:
/// combine with [`for_each_prim_expr`] to reach their sub-expressions).
pub fn for_each_stmt_expr<'a>(s: &'a Stmt, f: &mut dyn FnMut(&'a PrimExpr)) {
    Each::new(&mut |_| {}, f, false).visit_stmt(s)
}

/// Call `f` on `e` and every sub-expression of it (pre-order).
pub fn for_each_prim_expr<'a>(e: &'a PrimExpr, f: &mut dyn FnMut(&'a PrimExpr)) {
    Each::new(&mut |_| {}, f, true).visit_prim_expr(e)
}

/// The free TIR variables of `e` (variables bound by a `T.let` inside `e` excluded),
/// each once, in order of first occurrence.
pub fn free_tir_vars(e: &PrimExpr) -> Vec<TirVar> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    collect_free(e, &mut Vec::new(), &mut seen, &mut out);
    out
}

fn collect_free(e: &PrimExpr, bound: &mut Vec<u64>, seen: &mut HashSet<u64>, out: &mut Vec<TirVar>) {
    match e.kind() {
        PrimExprKind::Var(v) => {
            if !bound.contains(&v.id()) && seen.insert(v.id()) {
                out.push(v.clone());
            }
        }
        PrimExprKind::Let { var, value, body } => {
            collect_free(value, bound, seen, out);
            bound.push(var.id());
            collect_free(body, bound, seen, out);
            bound.pop();
        }
        _ => for_each_prim_child(e, &mut |c| collect_free(c, bound, seen, out)),
    }
}

/// Replace the free TIR variables of `e` for which `f` returns a value. Variables bound
/// by a `T.let` inside `e` are not replaced in its body. Unchanged subtrees are shared.
pub fn substitute_prim_expr(e: &PrimExpr, f: &dyn Fn(&TirVar) -> Option<PrimExpr>) -> PrimExpr {
    subst_rec(e, f, &mut Vec::new())
}

fn subst_rec(e: &PrimExpr, f: &dyn Fn(&TirVar) -> Option<PrimExpr>, bound: &mut Vec<u64>) -> PrimExpr {
    match e.kind() {
        PrimExprKind::IntImm { .. } | PrimExprKind::FloatImm { .. } | PrimExprKind::StringImm(_) => e.clone(),
        PrimExprKind::Var(v) => {
            if bound.contains(&v.id()) {
                e.clone()
            } else {
                f(v).unwrap_or_else(|| e.clone())
            }
        }
        PrimExprKind::Let { var, value, body } => {
            let nv = subst_rec(value, f, bound);
            bound.push(var.id());
            let nb = subst_rec(body, f, bound);
            bound.pop();
            if nv.same_as(value) && nb.same_as(body) {
                e.clone()
            } else {
                PrimExpr::new(PrimExprKind::Let {
                    var: var.clone(),
                    value: nv,
                    body: nb,
                })
            }
        }
        _ => map_prim_children(e, &mut |c| subst_rec(c, f, bound)),
    }
}

/// Replace TIR variables in every `PrimExpr` of a StructInfo (tensor shapes given
/// as `ShapeExpr`, shape values, prim values, nested tuples and functions).
pub fn substitute_struct_info(si: &StructInfo, f: &dyn Fn(&TirVar) -> Option<PrimExpr>) -> StructInfo {
    match si {
        StructInfo::Object => StructInfo::Object,
        StructInfo::Prim(p) => StructInfo::Prim(PrimStructInfo {
            dtype: p.dtype,
            value: p.value.as_ref().map(|v| substitute_prim_expr(v, f)),
        }),
        StructInfo::Shape(s) => StructInfo::Shape(ShapeStructInfo {
            values: s
                .values
                .as_ref()
                .map(|vs| vs.iter().map(|v| substitute_prim_expr(v, f)).collect()),
            ndim: s.ndim,
        }),
        StructInfo::Tensor(t) => StructInfo::Tensor(TensorStructInfo {
            shape: t.shape.as_ref().map(|s| subst_shape_expr(s, f)),
            dtype: t.dtype,
            vdevice: t.vdevice.clone(),
            ndim: t.ndim,
        }),
        StructInfo::Tuple(fields) => StructInfo::Tuple(fields.iter().map(|s| substitute_struct_info(s, f)).collect()),
        StructInfo::Func(func) => StructInfo::Func(FuncStructInfo {
            params: func
                .params
                .as_ref()
                .map(|ps| ps.iter().map(|p| substitute_struct_info(p, f)).collect()),
            ret: Box::new(substitute_struct_info(&func.ret, f)),
            purity: func.purity,
            derive_func: func.derive_func.clone(),
        }),
    }
}

fn subst_shape_expr(shape: &Expr, f: &dyn Fn(&TirVar) -> Option<PrimExpr>) -> Expr {
    match shape.kind() {
        ExprKind::ShapeExpr(vals) => {
            let new: Vec<PrimExpr> = vals.iter().map(|v| substitute_prim_expr(v, f)).collect();
            if new.iter().zip(vals).all(|(x, y)| x.same_as(y)) {
                shape.clone()
            } else {
                Expr::with_span(ExprKind::ShapeExpr(new), shape.span())
            }
        }
        _ => shape.clone(),
    }
}

/// All TIR variables used in a StructInfo (free variables of its `PrimExpr`s), each
/// once, in order of first occurrence.
pub fn struct_info_tir_vars(si: &StructInfo) -> Vec<TirVar> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    si_vars(si, &mut seen, &mut out);
    out
}

fn si_vars(si: &StructInfo, seen: &mut HashSet<u64>, out: &mut Vec<TirVar>) {
    let add = |e: &PrimExpr, seen: &mut HashSet<u64>, out: &mut Vec<TirVar>| {
        collect_free(e, &mut Vec::new(), seen, out);
    };
    match si {
        StructInfo::Object => {}
        StructInfo::Prim(p) => {
            if let Some(v) = &p.value {
                add(v, seen, out)
            }
        }
        StructInfo::Shape(s) => {
            for v in s.values.iter().flatten() {
                add(v, seen, out)
            }
        }
        StructInfo::Tensor(t) => {
            for v in t.shape_values().unwrap_or(&[]) {
                add(v, seen, out)
            }
        }
        StructInfo::Tuple(fields) => fields.iter().for_each(|s| si_vars(s, seen, out)),
        StructInfo::Func(func) => {
            for p in func.params.iter().flatten() {
                si_vars(p, seen, out);
            }
            si_vars(&func.ret, seen, out);
        }
    }
}

/// How many times each variable (by id) is referenced in `e` (as [`for_each_expr`]
/// visits it: a binding's own variable is not a reference).
pub fn var_use_counts(e: &Expr) -> std::collections::HashMap<u64, usize> {
    let mut uses = std::collections::HashMap::new();
    for_each_expr(e, &mut |x| {
        if let ExprKind::Var(v) = x.kind() {
            *uses.entry(v.id()).or_default() += 1;
        }
    });
    uses
}

/// Pre-order walk over a Relax expression: `f` is called on `e`, then on every
/// sub-expression (call operators and arguments, tuple fields, binding values and
/// SeqExpr results, function bodies, branches, shapes of StructInfo are not visited).
pub fn for_each_expr(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    e.for_each_child(|c| for_each_expr(c, f));
}

/// Replace TIR variables everywhere in a Relax expression: in shapes, prim values,
/// call StructInfo arguments, MatchCast patterns, function return annotations and the
/// StructInfo annotations of variables. A variable whose annotation changes is
/// replaced by a fresh variable (same name and kind) at its definition and at every use.
pub fn substitute_expr_tir_vars(e: &Expr, f: &dyn Fn(&TirVar) -> Option<PrimExpr>) -> Expr {
    ExprSubst {
        f,
        vars: HashMap::new(),
    }
    .expr(e)
}

struct ExprSubst<'a> {
    f: &'a dyn Fn(&TirVar) -> Option<PrimExpr>,
    vars: HashMap<u64, Var>,
}

impl ExprSubst<'_> {
    fn si(&self, si: &StructInfo) -> StructInfo {
        substitute_struct_info(si, self.f)
    }

    /// A definition: renew the variable when its annotation mentions a replaced variable.
    fn def_var(&mut self, v: &Var) -> Var {
        let Some(si) = v.struct_info() else { return v.clone() };
        let changed = struct_info_tir_vars(si).iter().any(|tv| (self.f)(tv).is_some());
        if !changed {
            return v.clone();
        }
        let nv = v.renew_with_struct_info(Some(self.si(si)));
        self.vars.insert(v.id(), nv.clone());
        nv
    }

    fn expr(&mut self, e: &Expr) -> Expr {
        let kind = match e.kind() {
            ExprKind::Constant { .. }
            | ExprKind::GlobalVar(_)
            | ExprKind::StringImm(_)
            | ExprKind::DataTypeImm(_)
            | ExprKind::ExternFunc { .. }
            | ExprKind::Op(_) => return e.clone(),
            ExprKind::Var(v) => match self.vars.get(&v.id()) {
                Some(nv) => ExprKind::Var(nv.clone()),
                None => return e.clone(),
            },
            ExprKind::PrimValue(p) => ExprKind::PrimValue(substitute_prim_expr(p, self.f)),
            ExprKind::ShapeExpr(vals) => {
                ExprKind::ShapeExpr(vals.iter().map(|v| substitute_prim_expr(v, self.f)).collect())
            }
            ExprKind::Tuple(fields) => ExprKind::Tuple(fields.iter().map(|x| self.expr(x)).collect()),
            ExprKind::Seq(seq) => ExprKind::Seq(self.seq(seq)),
            ExprKind::Function(func) => ExprKind::Function(self.function(func)),
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => ExprKind::If {
                cond: self.expr(cond),
                then_branch: self.expr(then_branch),
                else_branch: self.expr(else_branch),
            },
            ExprKind::Call(call) => ExprKind::Call(Call {
                op: self.expr(&call.op),
                args: call.args.iter().map(|x| self.expr(x)).collect(),
                attrs: call.attrs.clone(),
                sinfo_args: call.sinfo_args.iter().map(|s| self.si(s)).collect(),
            }),
            ExprKind::TupleGetItem { tuple, index } => ExprKind::TupleGetItem {
                tuple: self.expr(tuple),
                index: *index,
            },
        };
        Expr::with_span(kind, e.span())
    }

    fn seq(&mut self, seq: &SeqExpr) -> SeqExpr {
        let blocks = seq
            .blocks
            .iter()
            .map(|block| BindingBlock {
                bindings: block
                    .bindings
                    .iter()
                    .map(|b| {
                        let value = self.expr(b.value());
                        let var = self.def_var(b.var());
                        b.rebuild(var, value, |si| self.si(si))
                    })
                    .collect(),
                is_dataflow: block.is_dataflow,
                span: block.span,
            })
            .collect();
        SeqExpr {
            blocks,
            body: self.expr(&seq.body),
        }
    }

    fn function(&mut self, func: &Function) -> Function {
        let params = func.params.iter().map(|p| self.def_var(p)).collect();
        Function {
            params,
            body: self.expr(&func.body),
            ret_struct_info: func.ret_struct_info.as_ref().map(|s| self.si(s)),
            is_pure: func.is_pure,
            attrs: func.attrs.clone(),
            private: func.private,
            span: func.span,
        }
    }
}

/// Replace TIR variables in a Relax function (see [`substitute_expr_tir_vars`]).
pub fn substitute_function_tir_vars(func: &Function, f: &dyn Fn(&TirVar) -> Option<PrimExpr>) -> Function {
    ExprSubst {
        f,
        vars: HashMap::new(),
    }
    .function(func)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::attrs::Attrs;
    use crate::dtype::DataType;
    use crate::relax::Binding;
    use crate::span::Span;

    fn v(name: &str) -> TirVar {
        TirVar::new(name, DataType::INT64)
    }

    #[test]
    fn free_vars_skip_let_bound() {
        let (n, m, t) = (v("n"), v("m"), v("t"));
        let body = &t.to_expr() + &n.to_expr();
        let e = PrimExpr::new(PrimExprKind::Let {
            var: t.clone(),
            value: m.to_expr(),
            body,
        });
        let e = &e * &n.to_expr();
        let names: Vec<_> = free_tir_vars(&e).iter().map(|x| x.name().to_string()).collect();
        assert_eq!(names, ["m", "n"]);
    }

    #[test]
    fn substitution_replaces_and_shares() {
        let (n, m) = (v("n"), v("m"));
        let e = &(&n.to_expr() * &PrimExpr::int(2)) + &m.to_expr();
        let keep = substitute_prim_expr(&e, &|_| None);
        assert!(keep.same_as(&e));
        let r = substitute_prim_expr(&e, &|x| (x == &n).then(|| PrimExpr::int(3)));
        assert_eq!(crate::arith::eval_int(&r, &|x| (x == &m).then_some(10)), Some(16));
        assert_eq!(free_tir_vars(&r), vec![m.clone()]);
        // Bound variables are not replaced.
        let body = &n.to_expr() + &PrimExpr::int(1);
        let l = PrimExpr::new(PrimExprKind::Let {
            var: n.clone(),
            value: m.to_expr(),
            body,
        });
        let r = substitute_prim_expr(&l, &|x| (x == &n).then(|| PrimExpr::int(3)));
        assert!(r.same_as(&l));
    }

    #[test]
    fn struct_info_vars_and_substitution() {
        let (n, m) = (v("n"), v("m"));
        let t = StructInfo::tensor(vec![n.to_expr(), &m.to_expr() + &n.to_expr()], DataType::FLOAT32);
        let si = StructInfo::Tuple(vec![
            t,
            StructInfo::prim_value(m.to_expr()),
            StructInfo::shape(vec![PrimExpr::int(2)]),
        ]);
        assert_eq!(struct_info_tir_vars(&si), vec![n.clone(), m.clone()]);
        let out = substitute_struct_info(&si, &|x| (x == &n).then(|| PrimExpr::int(5)));
        assert_eq!(struct_info_tir_vars(&out), vec![m.clone()]);
        let StructInfo::Tuple(fields) = &out else {
            panic!("not a tuple")
        };
        let dims = fields[0]
            .as_tensor()
            .and_then(|t| t.shape_values())
            .map(|d| d.to_vec())
            .unwrap_or_default();
        assert_eq!(dims[0].as_int(), Some(5));
    }

    fn sample_function(n: &TirVar) -> (Function, Var, Var) {
        let ty = StructInfo::tensor(vec![n.to_expr()], DataType::FLOAT32);
        let x = Var::new("x", Some(ty.clone()));
        let y = Var::new("y", Some(ty.clone()));
        let call = Expr::call(Expr::op("relax.exp"), vec![x.to_expr()], Attrs::new(), vec![ty.clone()]);
        let body = Expr::new(ExprKind::Seq(SeqExpr {
            blocks: vec![BindingBlock {
                bindings: vec![Binding::VarBinding {
                    var: y.clone(),
                    value: call,
                    span: Span::NONE,
                }],
                is_dataflow: false,
                span: Span::NONE,
            }],
            body: Expr::tuple(vec![y.to_expr(), Expr::shape(vec![n.to_expr()])]),
        }));
        let f = Function {
            params: vec![x.clone()],
            body,
            ret_struct_info: None,
            is_pure: true,
            attrs: Attrs::new(),
            private: false,
            span: Span::NONE,
        };
        (f, x, y)
    }

    #[test]
    fn pre_order_walk_visits_every_expression() {
        let n = v("n");
        let (f, _, _) = sample_function(&n);
        let e = Expr::new(ExprKind::Function(f));
        let mut kinds = Vec::new();
        for_each_expr(&e, &mut |x| {
            kinds.push(match x.kind() {
                ExprKind::Function(_) => "fn",
                ExprKind::Seq(_) => "seq",
                ExprKind::Call(_) => "call",
                ExprKind::Op(_) => "op",
                ExprKind::Var(_) => "var",
                ExprKind::Tuple(_) => "tuple",
                ExprKind::ShapeExpr(_) => "shape",
                _ => "other",
            })
        });
        assert_eq!(kinds, ["fn", "seq", "call", "op", "var", "tuple", "var", "shape"]);
    }

    #[test]
    fn expression_substitution_renews_annotated_vars() {
        let n = v("n");
        let (f, x, y) = sample_function(&n);
        let g = substitute_function_tir_vars(&f, &|t| (t == &n).then(|| PrimExpr::int(8)));
        assert_ne!(g.params[0], x);
        let dims = |var: &Var| {
            var.struct_info()
                .and_then(|s| s.as_tensor())
                .and_then(|t| t.shape_values())
                .map(|d| d[0].as_int())
        };
        assert_eq!(dims(&g.params[0]), Some(Some(8)));
        let ExprKind::Seq(seq) = g.body.kind() else {
            panic!("not a seq")
        };
        let Binding::VarBinding { var, value, .. } = &seq.blocks[0].bindings[0] else {
            panic!("not a binding")
        };
        assert_ne!(var, &y);
        assert_eq!(dims(var), Some(Some(8)));
        let call = value.as_call().expect("call");
        assert_eq!(call.args[0].as_var(), Some(&g.params[0]));
        assert_eq!(
            call.sinfo_args[0]
                .as_tensor()
                .and_then(|t| t.shape_values())
                .map(|d| d[0].as_int()),
            Some(Some(8))
        );
        let ExprKind::Tuple(fields) = seq.body.kind() else {
            panic!("not a tuple")
        };
        assert_eq!(fields[0].as_var(), Some(var));
        // Nothing to replace: variables are kept.
        let same = substitute_function_tir_vars(&f, &|_| None);
        assert_eq!(same.params[0], x);
    }
    /// `for i in range(n): A[i] = A[i] + n; T.evaluate(1)`.
    pub(crate) fn loop_over_store(a: &crate::tir::Buffer, i: &TirVar, n: &TirVar) -> crate::tir::Stmt {
        use crate::tir::{For, ForKind, Stmt};
        let store = Stmt::BufferStore {
            buffer: a.clone(),
            value: &PrimExpr::load(a, vec![i.to_expr()]) + &n.to_expr(),
            indices: vec![i.to_expr()],
            span: Span::NONE,
        };
        let body = Stmt::Seq(vec![store, Stmt::Evaluate(PrimExpr::int(1))]);
        Stmt::For(For::from_zero(i.clone(), n.to_expr(), ForKind::Serial, body))
    }

    #[test]
    fn statement_children_are_the_nested_statements_in_field_order() {
        use crate::tir::{Buffer, Stmt};
        let a = Buffer::new("A", DataType::INT64, vec![PrimExpr::int(4)]);
        let (i, n) = (v("i"), v("n"));
        let mut s = loop_over_store(&a, &i, &n);
        let body: Vec<&Stmt> = s.children().collect();
        assert!(matches!(body[..], [Stmt::Seq(_)]));
        let items: Vec<&Stmt> = body[0].children().collect();
        assert!(matches!(items[..], [Stmt::BufferStore { .. }, Stmt::Evaluate(_)]));
        assert_eq!(items[0].children().count(), 0);
        let cond = Stmt::If {
            cond: PrimExpr::bool(true),
            then_branch: Box::new(Stmt::Evaluate(PrimExpr::int(1))),
            else_branch: Some(Box::new(Stmt::Evaluate(PrimExpr::int(2)))),
        };
        let branches: Vec<i64> = cond
            .children()
            .filter_map(|c| match c {
                Stmt::Evaluate(e) => e.as_int(),
                _ => None,
            })
            .collect();
        assert_eq!(branches, [1, 2]);
        // Rewriting through `children_mut` reaches the sequence's items.
        for c in s.children_mut().flat_map(|seq| seq.children_mut()) {
            *c = Stmt::Evaluate(PrimExpr::int(0));
        }
        let mut evals = 0;
        for_each_stmt(&s, &mut |x| evals += matches!(x, Stmt::Evaluate(_)) as usize);
        assert_eq!(evals, 2);
    }

    #[test]
    fn tir_visitor_walks_statements_and_expressions_in_order() {
        use crate::tir::{Buffer, Stmt};
        let a = Buffer::new("A", DataType::INT64, vec![PrimExpr::int(4)]);
        let (i, n) = (v("i"), v("n"));
        let s = loop_over_store(&a, &i, &n);
        let mut stmts = Vec::new();
        for_each_stmt(&s, &mut |x| {
            stmts.push(match x {
                Stmt::For(_) => "for",
                Stmt::Seq(_) => "seq",
                Stmt::BufferStore { .. } => "store",
                Stmt::Evaluate(_) => "eval",
                _ => "other",
            })
        });
        assert_eq!(stmts, ["for", "seq", "store", "eval"]);
        let mut outer = Vec::new();
        for_each_stmt_expr(&s, &mut |e| outer.push(e));
        // min, extent, the stored value, its index, the evaluated constant.
        assert_eq!(outer.len(), 5);
        assert_eq!(outer[1].as_var(), Some(&n));
        let mut all = Vec::new();
        for_each_prim_expr(outer[2], &mut |e| all.push(e.clone()));
        // add(load(A, i), n): the add, the load, its index, n.
        assert_eq!(all.len(), 4);
        // Buffers are seen by `visit_buffer`: the store's and the load's.
        struct Buffers<'a>(Vec<&'a Buffer>);
        impl<'a> StmtExprVisitor<'a> for Buffers<'a> {
            fn visit_buffer(&mut self, b: &'a Buffer) {
                self.0.push(b);
            }
        }
        let mut bufs = Buffers(Vec::new());
        bufs.visit_stmt(&s);
        assert_eq!(bufs.0, [&a, &a]);
    }
}
