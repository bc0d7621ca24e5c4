//! Rewriting traversals with default recursion: [`ExprMutator`] for Relax and
//! [`StmtExprMutator`] for TIR, after TVM's classes of the same names.
//!
//! A pass overrides the methods for the nodes it changes and calls the matching
//! `walk_*` function to recurse into the rest. Unchanged subtrees are shared.
//!
//! A mutator that returns a [`BlockBuilder`] from [`ExprMutator::builder`] can
//! emit bindings while it rewrites (TVM's `builder_`): one binding may become
//! several, a `SeqExpr` in binding position may be flattened into the enclosing
//! block, and a block may be split. The `*_emit` walks drive the builder:
//! [`walk_block_emit`] (a block through the builder), [`walk_seq_flatten`] (a
//! `SeqExpr` flattened into the open block) and [`walk_scope_emit`] (a new scope,
//! TVM's `VisitWithNewScope`).

use crate::relax::{Binding, BindingBlock, Call, Expr, ExprKind, Function, SeqExpr, StructInfo, Var};
use crate::span::Span;
use crate::tir::{Block, Buffer, BufferRegion, IterVar, MatchBufferRegion, PrimExpr, PrimExprKind, Range, Stmt};
use crate::visit::map_prim_children;

/// A Relax expression rewriter. Every method defaults to rebuilding its node from
/// the rewritten children (`walk_*`).
pub trait ExprMutator {
    /// Rewrite an expression.
    fn visit_expr(&mut self, e: &Expr) -> Expr {
        walk_expr(self, e)
    }
    /// Rewrite an operand: a tuple field, a call's operator or argument, the tuple
    /// of a `TupleGetItem`, the condition of an `If`. Defaults to
    /// [`ExprMutator::visit_expr`]; a normalizing mutator binds non-leaf results
    /// to fresh variables here.
    fn visit_arg(&mut self, e: &Expr) -> Expr {
        self.visit_expr(e)
    }
    /// Rewrite the body of a new scope (a branch of an `If`). Defaults to
    /// [`ExprMutator::visit_expr`]; see [`walk_scope_emit`].
    fn visit_scope(&mut self, e: &Expr) -> Expr {
        self.visit_expr(e)
    }
    /// Rewrite a use of a variable (not its definition).
    fn visit_var_use(&mut self, v: &Var, e: &Expr) -> Expr {
        let _ = v;
        e.clone()
    }
    /// Rewrite one binding into zero or more bindings.
    fn visit_binding(&mut self, b: &Binding) -> Vec<Binding> {
        vec![walk_binding(self, b)]
    }
    /// Rewrite a binding block.
    fn visit_block(&mut self, b: &BindingBlock) -> BindingBlock {
        walk_block(self, b)
    }
    /// Rewrite a binding block into zero or more blocks (how [`walk_seq`] visits
    /// blocks). Defaults to the one block of [`ExprMutator::visit_block`]; a
    /// mutator emitting through its builder may split a block (see
    /// [`walk_block_emit`]).
    fn visit_block_split(&mut self, b: &BindingBlock) -> Vec<BindingBlock> {
        vec![self.visit_block(b)]
    }
    /// Rewrite a `SeqExpr` (`span` is the expression's). Defaults to the rebuilt
    /// `SeqExpr` ([`walk_seq`]); see [`walk_seq_flatten`].
    fn visit_seq(&mut self, seq: &SeqExpr, span: Span) -> Expr {
        Expr::with_span(ExprKind::Seq(walk_seq(self, seq)), span)
    }
    /// Rewrite a function (local or global).
    fn visit_function(&mut self, f: &Function) -> Function {
        walk_function(self, f)
    }
    /// The builder this mutator emits bindings through, if it has one (the
    /// `*_emit` walks and [`walk_seq_flatten`] use it). Defaults to none: rewritten
    /// bindings are returned, not emitted.
    fn builder(&mut self) -> Option<&mut BlockBuilder> {
        None
    }
}

/// Rebuild `e` from its rewritten children.
pub fn walk_expr<M: ExprMutator + ?Sized>(m: &mut M, e: &Expr) -> Expr {
    let rebuild = |k: ExprKind| Expr::with_span(k, e.span());
    match e.kind() {
        ExprKind::Var(v) => m.visit_var_use(v, e),
        ExprKind::Constant { .. }
        | ExprKind::GlobalVar(_)
        | ExprKind::PrimValue(_)
        | ExprKind::StringImm(_)
        | ExprKind::DataTypeImm(_)
        | ExprKind::ExternFunc { .. }
        | ExprKind::ShapeExpr(_)
        | ExprKind::Op(_) => e.clone(),
        ExprKind::Tuple(fields) => {
            let new: Vec<Expr> = fields.iter().map(|f| m.visit_arg(f)).collect();
            if new.iter().zip(fields).all(|(a, b)| a.same_as(b)) {
                e.clone()
            } else {
                rebuild(ExprKind::Tuple(new))
            }
        }
        ExprKind::Seq(seq) => m.visit_seq(seq, e.span()),
        ExprKind::Function(f) => rebuild(ExprKind::Function(m.visit_function(f))),
        ExprKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            let c = m.visit_arg(cond);
            let (t, f) = (m.visit_scope(then_branch), m.visit_scope(else_branch));
            if c.same_as(cond) && t.same_as(then_branch) && f.same_as(else_branch) {
                e.clone()
            } else {
                rebuild(ExprKind::If {
                    cond: c,
                    then_branch: t,
                    else_branch: f,
                })
            }
        }
        ExprKind::Call(call) => {
            let op = m.visit_arg(&call.op);
            let args: Vec<Expr> = call.args.iter().map(|a| m.visit_arg(a)).collect();
            if op.same_as(&call.op) && args.iter().zip(&call.args).all(|(a, b)| a.same_as(b)) {
                e.clone()
            } else {
                rebuild(ExprKind::Call(Call {
                    op,
                    args,
                    attrs: call.attrs.clone(),
                    sinfo_args: call.sinfo_args.clone(),
                }))
            }
        }
        ExprKind::TupleGetItem { tuple, index } => {
            let t = m.visit_arg(tuple);
            if t.same_as(tuple) {
                e.clone()
            } else {
                rebuild(ExprKind::TupleGetItem {
                    tuple: t,
                    index: *index,
                })
            }
        }
    }
}

/// Rebuild a `SeqExpr` from its rewritten blocks and result.
pub fn walk_seq<M: ExprMutator + ?Sized>(m: &mut M, seq: &SeqExpr) -> SeqExpr {
    let blocks = seq.blocks.iter().flat_map(|b| m.visit_block_split(b)).collect();
    let body = m.visit_expr(&seq.body);
    SeqExpr { blocks, body }
}

/// Rewrite a block through the mutator's builder: a block of `b`'s kind is
/// opened, each rewritten binding is emitted into it (after the bindings the
/// mutator emitted itself while rewriting it) and the block is closed; the result
/// has one block more for each block of the other kind appended meanwhile. Without
/// a builder, the one block of [`walk_block`].
pub fn walk_block_emit<M: ExprMutator + ?Sized>(m: &mut M, b: &BindingBlock) -> Vec<BindingBlock> {
    let Some(bb) = m.builder() else {
        return vec![walk_block(m, b)];
    };
    bb.begin_block(b.is_dataflow, b.span);
    for x in &b.bindings {
        let out = m.visit_binding(x);
        if let Some(bb) = m.builder() {
            out.into_iter().for_each(|nb| bb.emit(nb));
        }
    }
    m.builder().map(BlockBuilder::end_block).unwrap_or_default()
}

/// A `SeqExpr` in binding position flattened into the builder's open block: the
/// rewritten blocks are appended to it ([`BlockBuilder::append_blocks`]) and the
/// rewritten body is returned. Without a builder, the rebuilt `SeqExpr`.
pub fn walk_seq_flatten<M: ExprMutator + ?Sized>(m: &mut M, seq: &SeqExpr, span: Span) -> Expr {
    if m.builder().is_none() {
        return Expr::with_span(ExprKind::Seq(walk_seq(m, seq)), span);
    }
    for b in &seq.blocks {
        let blocks = m.visit_block_split(b);
        if let Some(bb) = m.builder() {
            bb.append_blocks(blocks);
        }
    }
    m.visit_expr(&seq.body)
}

/// Rewrite `e` as the body of a new scope through the builder (TVM's
/// `VisitWithNewScope`): the result is a `SeqExpr` of `e`'s own rewritten blocks
/// (when it is a `SeqExpr`) and of the bindings emitted while its body is
/// rewritten as an operand ([`ExprMutator::visit_arg`]) in a new non-dataflow
/// block, consolidated ([`consolidate_blocks`]). Without a builder,
/// [`ExprMutator::visit_expr`].
pub fn walk_scope_emit<M: ExprMutator + ?Sized>(m: &mut M, e: &Expr) -> Expr {
    if m.builder().is_none() {
        return m.visit_expr(e);
    }
    let (mut blocks, body) = match e.kind() {
        ExprKind::Seq(seq) => (
            seq.blocks.iter().flat_map(|b| m.visit_block_split(b)).collect(),
            &seq.body,
        ),
        _ => (Vec::new(), e),
    };
    if let Some(bb) = m.builder() {
        bb.begin_block(false, e.span());
    }
    let body = m.visit_arg(body);
    blocks.extend(m.builder().map(BlockBuilder::end_block).unwrap_or_default());
    let blocks = consolidate_blocks(blocks);
    Expr::with_span(ExprKind::Seq(SeqExpr { blocks, body }), e.span())
}

/// Consolidate blocks: drop empty ones and merge neighbours of the same kind.
pub fn consolidate_blocks(blocks: Vec<BindingBlock>) -> Vec<BindingBlock> {
    let mut out: Vec<BindingBlock> = Vec::with_capacity(blocks.len());
    for b in blocks {
        if b.bindings.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.is_dataflow == b.is_dataflow => last.bindings.extend(b.bindings),
            _ => out.push(b),
        }
    }
    out
}

/// Rebuild a block from its rewritten bindings.
pub fn walk_block<M: ExprMutator + ?Sized>(m: &mut M, b: &BindingBlock) -> BindingBlock {
    let bindings = b.bindings.iter().flat_map(|x| m.visit_binding(x)).collect();
    BindingBlock {
        bindings,
        is_dataflow: b.is_dataflow,
        span: b.span,
    }
}

/// Rebuild a binding with its rewritten value.
pub fn walk_binding<M: ExprMutator + ?Sized>(m: &mut M, b: &Binding) -> Binding {
    b.rebuild(b.var().clone(), m.visit_expr(b.value()), StructInfo::clone)
}

/// Rebuild a function with its rewritten body.
pub fn walk_function<M: ExprMutator + ?Sized>(m: &mut M, f: &Function) -> Function {
    Function {
        body: m.visit_expr(&f.body),
        ..f.clone()
    }
}

/// A TIR statement and expression rewriter. Every method defaults to rebuilding its
/// node from the rewritten children (`walk_*`).
pub trait StmtExprMutator {
    /// Rewrite a statement.
    fn visit_stmt(&mut self, s: &Stmt) -> Stmt {
        walk_stmt(self, s)
    }
    /// Rewrite an expression.
    fn visit_prim_expr(&mut self, e: &PrimExpr) -> PrimExpr {
        walk_prim_expr(self, e)
    }
    /// Rewrite a buffer reference (loads, stores, regions, allocations).
    fn visit_buffer(&mut self, b: &Buffer) -> Buffer {
        b.clone()
    }
}

/// Rebuild `e` from its rewritten children (and buffer, for loads).
pub fn walk_prim_expr<M: StmtExprMutator + ?Sized>(m: &mut M, e: &PrimExpr) -> PrimExpr {
    if let PrimExprKind::BufferLoad { buffer, indices } = e.kind() {
        let nb = m.visit_buffer(buffer);
        let ni: Vec<PrimExpr> = indices.iter().map(|i| m.visit_prim_expr(i)).collect();
        if nb == *buffer && ni.iter().zip(indices).all(|(a, b)| a.same_as(b)) {
            return e.clone();
        }
        return PrimExpr::new(PrimExprKind::BufferLoad {
            buffer: nb,
            indices: ni,
        });
    }
    map_prim_children(e, &mut |c| m.visit_prim_expr(c))
}

fn walk_range<M: StmtExprMutator + ?Sized>(m: &mut M, r: &Range) -> Range {
    Range {
        min: m.visit_prim_expr(&r.min),
        extent: m.visit_prim_expr(&r.extent),
    }
}

fn walk_region<M: StmtExprMutator + ?Sized>(m: &mut M, r: &BufferRegion) -> BufferRegion {
    BufferRegion {
        buffer: m.visit_buffer(&r.buffer),
        region: r.region.iter().map(|x| walk_range(m, x)).collect(),
    }
}

/// Rebuild a block from its rewritten parts.
pub fn walk_block_stmt<M: StmtExprMutator + ?Sized>(m: &mut M, b: &Block) -> Block {
    Block {
        name: b.name.clone(),
        iter_vars: b
            .iter_vars
            .iter()
            .map(|iv| IterVar {
                var: iv.var.clone(),
                dom: walk_range(m, &iv.dom),
                kind: iv.kind,
            })
            .collect(),
        reads: b.reads.iter().map(|r| walk_region(m, r)).collect(),
        writes: b.writes.iter().map(|r| walk_region(m, r)).collect(),
        init: b.init.as_ref().map(|s| Box::new(m.visit_stmt(s))),
        alloc_buffers: b.alloc_buffers.iter().map(|x| m.visit_buffer(x)).collect(),
        match_buffers: b
            .match_buffers
            .iter()
            .map(|mb| MatchBufferRegion {
                buffer: m.visit_buffer(&mb.buffer),
                source: walk_region(m, &mb.source),
            })
            .collect(),
        annotations: b.annotations.clone(),
        body: Box::new(m.visit_stmt(&b.body)),
    }
}

/// Rebuild `s` from its rewritten children.
pub fn walk_stmt<M: StmtExprMutator + ?Sized>(m: &mut M, s: &Stmt) -> Stmt {
    let bx = |m: &mut M, s: &Stmt| Box::new(m.visit_stmt(s));
    match s {
        Stmt::BufferStore {
            buffer,
            value,
            indices,
            span,
        } => Stmt::BufferStore {
            buffer: m.visit_buffer(buffer),
            value: m.visit_prim_expr(value),
            indices: indices.iter().map(|i| m.visit_prim_expr(i)).collect(),
            span: *span,
        },
        Stmt::Let { var, value, body } => Stmt::Let {
            var: var.clone(),
            value: m.visit_prim_expr(value),
            body: bx(m, body),
        },
        Stmt::Attr { node, key, value, body } => Stmt::Attr {
            node: node.clone(),
            key: key.clone(),
            value: m.visit_prim_expr(value),
            body: bx(m, body),
        },
        Stmt::LaunchThread { var, tag, extent, body } => Stmt::LaunchThread {
            var: var.clone(),
            tag: tag.clone(),
            extent: m.visit_prim_expr(extent),
            body: bx(m, body),
        },
        Stmt::Assert { cond, message, body } => Stmt::Assert {
            cond: m.visit_prim_expr(cond),
            message: message.clone(),
            body: bx(m, body),
        },
        Stmt::For(f) => Stmt::For(f.rebuild(
            m.visit_prim_expr(&f.min),
            m.visit_prim_expr(&f.extent),
            m.visit_stmt(&f.body),
        )),
        Stmt::While { cond, body } => Stmt::While {
            cond: m.visit_prim_expr(cond),
            body: bx(m, body),
        },
        Stmt::If {
            cond,
            then_branch,
            else_branch,
        } => Stmt::If {
            cond: m.visit_prim_expr(cond),
            then_branch: bx(m, then_branch),
            else_branch: else_branch.as_ref().map(|e| bx(m, e)),
        },
        Stmt::Seq(v) => Stmt::Seq(v.iter().map(|x| m.visit_stmt(x)).collect()),
        Stmt::Evaluate(e) => Stmt::Evaluate(m.visit_prim_expr(e)),
        Stmt::Alloc { buffer, body } => Stmt::Alloc {
            buffer: m.visit_buffer(buffer),
            body: bx(m, body),
        },
        Stmt::BlockRealize {
            iter_values,
            predicate,
            block,
        } => Stmt::BlockRealize {
            iter_values: iter_values.iter().map(|v| m.visit_prim_expr(v)).collect(),
            predicate: predicate.as_ref().map(|p| m.visit_prim_expr(p)),
            block: Box::new(walk_block_stmt(m, block)),
        },
    }
}

/// Bindings being emitted into blocks, one frame per open block (after TVM's
/// `BlockBuilder`): a rewrite that needs new bindings before the expression it
/// returns emits them into the innermost open block.
#[derive(Default)]
pub struct BlockBuilder {
    frames: Vec<BlockFrame>,
}

struct BlockFrame {
    done: Vec<BindingBlock>,
    cur: Vec<Binding>,
    is_dataflow: bool,
    span: Span,
}

impl BlockFrame {
    fn flush(&mut self) {
        if !self.cur.is_empty() {
            self.done.push(BindingBlock {
                bindings: std::mem::take(&mut self.cur),
                is_dataflow: self.is_dataflow,
                span: self.span,
            });
        }
    }
}

impl BlockBuilder {
    /// A builder with no open block.
    pub fn new() -> BlockBuilder {
        BlockBuilder::default()
    }

    /// Open a block (a dataflow block when `is_dataflow`).
    pub fn begin_block(&mut self, is_dataflow: bool, span: Span) {
        self.frames.push(BlockFrame {
            done: Vec::new(),
            cur: Vec::new(),
            is_dataflow,
            span,
        });
    }

    /// Close the innermost block: its bindings, in blocks (one more per block of
    /// the other kind appended with [`BlockBuilder::append_blocks`]).
    pub fn end_block(&mut self) -> Vec<BindingBlock> {
        let Some(mut f) = self.frames.pop() else {
            return Vec::new();
        };
        f.flush();
        f.done
    }

    fn top(&mut self) -> &mut BlockFrame {
        if self.frames.is_empty() {
            self.begin_block(false, Span::NONE);
        }
        let last = self.frames.len() - 1;
        &mut self.frames[last]
    }

    /// Emit a binding into the innermost block (a non-dataflow block is opened
    /// when none is).
    pub fn emit(&mut self, b: Binding) {
        self.top().cur.push(b);
    }

    /// Append built blocks: the bindings of a block of the innermost block's kind
    /// join it, a block of the other kind stays a block of its own.
    pub fn append_blocks(&mut self, blocks: Vec<BindingBlock>) {
        let f = self.top();
        for blk in blocks {
            if blk.is_dataflow == f.is_dataflow {
                f.cur.extend(blk.bindings);
            } else {
                f.flush();
                f.done.push(blk);
            }
        }
    }

    /// The number of open blocks.
    pub fn depth(&self) -> usize {
        self.frames.len()
    }

    /// Whether the innermost open block is a dataflow block.
    pub fn in_dataflow(&self) -> bool {
        self.frames.last().is_some_and(|f| f.is_dataflow)
    }
}

/// A mutator calling a closure: with `deep`, `f` may replace any expression
/// (pre-order; `None` recurses into the children); without it, `f` rewrites each
/// outermost expression of the statements.
struct MapExprs<'f> {
    f: &'f mut dyn FnMut(&PrimExpr) -> Option<PrimExpr>,
    deep: bool,
}

impl StmtExprMutator for MapExprs<'_> {
    fn visit_prim_expr(&mut self, e: &PrimExpr) -> PrimExpr {
        match (self.f)(e) {
            Some(r) => r,
            None if self.deep => walk_prim_expr(self, e),
            None => e.clone(),
        }
    }
}

/// Rebuild `e`, letting `f` replace any node (pre-order: when `f` returns `Some`,
/// the node is replaced and not visited further). Unchanged subtrees are shared.
pub fn map_prim_expr(e: &PrimExpr, f: &mut dyn FnMut(&PrimExpr) -> Option<PrimExpr>) -> PrimExpr {
    MapExprs { f, deep: true }.visit_prim_expr(e)
}

/// Rebuild `s` with `f` applied to every outermost expression of its statements
/// (loop bounds, values, indices, conditions, block bindings and regions).
pub fn map_stmt_exprs(s: &Stmt, f: &mut dyn FnMut(&PrimExpr) -> PrimExpr) -> Stmt {
    let mut g = |e: &PrimExpr| Some(f(e));
    MapExprs { f: &mut g, deep: false }.visit_stmt(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::Attrs;
    use crate::dtype::DataType;
    use crate::tir::{For, TirVar};

    struct RenameOp;
    impl ExprMutator for RenameOp {
        fn visit_expr(&mut self, e: &Expr) -> Expr {
            match e.kind() {
                ExprKind::Op(n) if n == "relax.add" => Expr::op("relax.multiply"),
                _ => walk_expr(self, e),
            }
        }
    }

    #[test]
    fn expr_mutator_rewrites_nested_and_shares_the_rest() {
        let x = Var::new("x", None);
        let call = Expr::call(
            Expr::op("relax.add"),
            vec![x.to_expr(), x.to_expr()],
            Attrs::new(),
            vec![],
        );
        let other = Expr::call(Expr::op("relax.exp"), vec![x.to_expr()], Attrs::new(), vec![]);
        let t = Expr::tuple(vec![call, other.clone()]);
        let out = RenameOp.visit_expr(&t);
        let ExprKind::Tuple(f) = out.kind() else {
            panic!("not a tuple")
        };
        assert_eq!(f[0].as_call().and_then(|c| c.op.as_op()), Some("relax.multiply"));
        assert!(f[1].same_as(&other));
    }

    struct SwapBuf(Buffer, Buffer);
    impl StmtExprMutator for SwapBuf {
        fn visit_buffer(&mut self, b: &Buffer) -> Buffer {
            if *b == self.0 {
                self.1.clone()
            } else {
                b.clone()
            }
        }
    }

    #[test]
    fn stmt_mutator_replaces_buffers_in_loads_and_stores() {
        let a = Buffer::new("A", DataType::FLOAT32, vec![PrimExpr::int(4)]);
        let b = Buffer::new("B", DataType::FLOAT32, vec![PrimExpr::int(4)]);
        let i = TirVar::new("i", DataType::INT32);
        let s = Stmt::BufferStore {
            buffer: a.clone(),
            value: PrimExpr::load(&a, vec![i.to_expr()]),
            indices: vec![i.to_expr()],
            span: crate::span::Span::NONE,
        };
        let out = SwapBuf(a, b.clone()).visit_stmt(&s);
        let Stmt::BufferStore { buffer, value, .. } = out else {
            panic!("not a store")
        };
        assert_eq!(buffer, b);
        assert!(matches!(value.kind(), PrimExprKind::BufferLoad { buffer, .. } if *buffer == b));
    }
    #[test]
    fn map_helpers_replace_pre_order_and_outermost() {
        let a = Buffer::new("A", DataType::INT64, vec![PrimExpr::int(4)]);
        let (i, n) = (TirVar::new("i", DataType::INT64), TirVar::new("n", DataType::INT64));
        let s = crate::visit::tests::loop_over_store(&a, &i, &n);
        // Deep: every `n` becomes 7, loads are left whole when replaced first.
        let seven = |e: &PrimExpr| match e.kind() {
            PrimExprKind::Var(v) if *v == n => Some(PrimExpr::int(7)),
            _ => None,
        };
        let out = map_stmt_exprs(&s, &mut |e| map_prim_expr(e, &mut |x| seven(x)));
        let Stmt::For(For { extent, body, .. }) = &out else {
            panic!("not a loop")
        };
        assert_eq!(extent.as_int(), Some(7));
        let Stmt::Seq(body) = body.as_ref() else {
            panic!("not a sequence")
        };
        let Stmt::BufferStore { value, .. } = &body[0] else {
            panic!("not a store")
        };
        assert!(crate::visit::free_tir_vars(value).iter().all(|v| *v != n));
        // An unchanged expression is shared.
        let e = &i.to_expr() * &PrimExpr::int(2);
        assert!(map_prim_expr(&e, &mut |_| None).same_as(&e));
        // Outermost only: `f` sees the loop bounds, the value, the index and the
        // evaluated constant.
        let mut seen = 0;
        map_stmt_exprs(&s, &mut |e| {
            seen += 1;
            e.clone()
        });
        assert_eq!(seen, 5);
    }

    /// Turns every `y = exp(x)` into `y_t = exp(x); y = exp(y_t)` through the
    /// builder and flattens `SeqExpr`s bound in bindings.
    struct SplitExp {
        bb: BlockBuilder,
    }

    fn exp(x: Expr) -> Expr {
        Expr::call(Expr::op("relax.exp"), vec![x], Attrs::new(), vec![])
    }

    impl ExprMutator for SplitExp {
        fn builder(&mut self) -> Option<&mut BlockBuilder> {
            Some(&mut self.bb)
        }
        fn visit_block_split(&mut self, b: &BindingBlock) -> Vec<BindingBlock> {
            walk_block_emit(self, b)
        }
        fn visit_seq(&mut self, seq: &SeqExpr, span: Span) -> Expr {
            walk_seq_flatten(self, seq, span)
        }
        fn visit_binding(&mut self, b: &Binding) -> Vec<Binding> {
            let b = walk_binding(self, b);
            let Binding::VarBinding { var, value, span } = &b else {
                return vec![b];
            };
            let Some(call) = value.as_call().filter(|c| c.op.as_op() == Some("relax.exp")) else {
                return vec![b];
            };
            let t = Var::new(format!("{}_t", var.name()), None);
            self.bb.emit(Binding::VarBinding {
                var: t.clone(),
                value: exp(call.args[0].clone()),
                span: *span,
            });
            vec![Binding::VarBinding {
                var: var.clone(),
                value: exp(t.to_expr()),
                span: *span,
            }]
        }
    }

    #[test]
    fn emitting_mutator_splits_bindings_and_blocks() {
        let v = |n: &str| Var::new(n, None);
        let (x, a, b, c, d, e) = (v("x"), v("a"), v("b"), v("c"), v("d"), v("e"));
        let bind = |var: &Var, value: Expr| Binding::VarBinding {
            var: var.clone(),
            value,
            span: Span::NONE,
        };
        let block = |bindings: Vec<Binding>, is_dataflow: bool| BindingBlock {
            bindings,
            is_dataflow,
            span: Span::NONE,
        };
        // b = { dataflow { c = exp(a) }; c }: a SeqExpr in binding position.
        let inner = Expr::new(ExprKind::Seq(SeqExpr {
            blocks: vec![block(vec![bind(&c, exp(a.to_expr()))], true)],
            body: c.to_expr(),
        }));
        let add = Expr::call(
            Expr::op("relax.add"),
            vec![b.to_expr(), b.to_expr()],
            Attrs::new(),
            vec![],
        );
        let body = Expr::new(ExprKind::Seq(SeqExpr {
            blocks: vec![
                block(vec![bind(&a, exp(x.to_expr())), bind(&b, inner), bind(&d, add)], false),
                block(vec![bind(&e, exp(d.to_expr()))], false),
            ],
            body: e.to_expr(),
        }));
        let mut m = SplitExp {
            bb: BlockBuilder::new(),
        };
        let out = walk_scope_emit(&mut m, &body);
        assert_eq!(m.bb.depth(), 0);
        let ExprKind::Seq(seq) = out.kind() else {
            panic!("not a SeqExpr")
        };
        let names: Vec<Vec<String>> = seq
            .blocks
            .iter()
            .map(|b| b.bindings.iter().map(|x| x.var().name().to_string()).collect())
            .collect();
        // The dataflow block of the flattened SeqExpr splits the first block; the
        // rest of it merges with the second block.
        assert_eq!(names, [vec!["a_t", "a"], vec!["c_t", "c"], vec!["b", "d", "e_t", "e"]]);
        let kinds: Vec<bool> = seq.blocks.iter().map(|b| b.is_dataflow).collect();
        assert_eq!(kinds, [false, true, false]);
        // The second binding of a split uses the first's variable; the flattened
        // SeqExpr's body became `b`'s value.
        let first = &seq.blocks[0].bindings;
        let arg = first[1].value().as_call().map(|c| c.args[0].clone());
        assert_eq!(arg.as_ref().and_then(Expr::as_var), Some(first[0].var()));
        assert_eq!(seq.blocks[2].bindings[0].value().as_var(), Some(&c));
        assert_eq!(seq.body.as_var(), Some(&e));
        // Without a builder the same walks rebuild: one block per block.
        let mut plain = RenameOp;
        let rebuilt = walk_scope_emit(&mut plain, &body);
        let ExprKind::Seq(seq) = rebuilt.kind() else {
            panic!("not a SeqExpr")
        };
        assert_eq!(seq.blocks.iter().map(|b| b.bindings.len()).collect::<Vec<_>>(), [3, 1]);
    }

    #[test]
    fn block_builder_merges_blocks_of_the_same_kind() {
        let bind = |name: &str| Binding::VarBinding {
            var: Var::new(name, None),
            value: Expr::op("relax.exp"),
            span: Span::NONE,
        };
        let mut bb = BlockBuilder::new();
        bb.begin_block(true, Span::NONE);
        assert!(bb.in_dataflow());
        bb.emit(bind("a"));
        let inner = vec![
            BindingBlock {
                bindings: vec![bind("b")],
                is_dataflow: true,
                span: Span::NONE,
            },
            BindingBlock {
                bindings: vec![bind("c")],
                is_dataflow: false,
                span: Span::NONE,
            },
        ];
        bb.append_blocks(inner);
        bb.emit(bind("d"));
        let blocks = bb.end_block();
        assert_eq!(bb.depth(), 0);
        let names: Vec<Vec<String>> = blocks
            .iter()
            .map(|b| b.bindings.iter().map(|x| x.var().name().to_string()).collect())
            .collect();
        assert_eq!(names, [vec!["a", "b"], vec!["c"], vec!["d"]]);
        assert_eq!(
            blocks.iter().map(|b| b.is_dataflow).collect::<Vec<_>>(),
            [true, false, true]
        );
    }
}
