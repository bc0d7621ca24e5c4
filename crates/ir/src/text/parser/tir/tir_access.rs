//! Read/write region completion for blocks written without `T.reads`/`T.writes`
//! (what TVM's script completer fills in): only in `s_tir` functions, never for the
//! outermost (root) block. Accesses inside loops of the block are relaxed over the
//! loop ranges; several accesses to one buffer are merged into their hull when the
//! bounds are constants, and cover the whole dimension otherwise.

use super::super::prim_expr::{arith, const_of};
use crate::arith::Analyzer;
use crate::attrs::AttrValue;
use crate::tir::{BinOp, Block, Buffer, BufferRegion, PrimExpr, PrimExprKind, Range, Stmt, TirVar};

/// The annotation the parser leaves on a block whose regions must be detected
/// (bit 1: reads, bit 2: writes); removed by [`complete`].
pub(super) const DETECT_KEY: &str = "__script_parsing_detect_access";

/// Fill the regions of the blocks marked by the parser and drop the marks.
pub(super) fn complete(body: &mut Stmt, s_tir: bool) {
    let mut is_root = true;
    visit(body, s_tir, &mut is_root);
}

fn visit(s: &mut Stmt, s_tir: bool, is_root: &mut bool) {
    match s {
        Stmt::BlockRealize { block, .. } => {
            let root = std::mem::replace(is_root, false);
            if let Some(init) = block.init.as_mut() {
                visit(init, s_tir, is_root);
            }
            visit(&mut block.body, s_tir, is_root);
            let mask = match block.annotations.remove(DETECT_KEY) {
                Some(AttrValue::Int(m)) => m,
                _ => 0,
            };
            if mask != 0 && s_tir && !root {
                let (reads, writes) = detect(block);
                if mask & 1 != 0 {
                    block.reads = reads;
                }
                if mask & 2 != 0 {
                    block.writes = writes;
                }
            }
        }
        Stmt::Seq(v) => v.iter_mut().for_each(|x| visit(x, s_tir, is_root)),
        Stmt::Let { body, .. }
        | Stmt::Attr { body, .. }
        | Stmt::LaunchThread { body, .. }
        | Stmt::Assert { body, .. }
        | Stmt::For { body, .. }
        | Stmt::While { body, .. }
        | Stmt::Alloc { body, .. } => visit(body, s_tir, is_root),
        Stmt::If {
            then_branch,
            else_branch,
            ..
        } => {
            visit(then_branch, s_tir, is_root);
            if let Some(e) = else_branch {
                visit(e, s_tir, is_root);
            }
        }
        Stmt::BufferStore { .. } | Stmt::Evaluate(_) => {}
    }
}

/// A buffer with inclusive bounds per dimension (`None`: the whole dimension).
type Access = (Buffer, Vec<Option<(PrimExpr, PrimExpr)>>);

/// The regions read and written by a block.
fn detect(block: &Block) -> (Vec<BufferRegion>, Vec<BufferRegion>) {
    let mut c = Collector {
        reads: Vec::new(),
        writes: Vec::new(),
        local: block
            .alloc_buffers
            .iter()
            .chain(block.match_buffers.iter().map(|m| &m.buffer))
            .cloned()
            .collect(),
        relax: Vec::new(),
    };
    if let Some(i) = &block.init {
        c.stmt(i);
    }
    c.stmt(&block.body);
    let Collector { mut reads, writes, .. } = c;
    // A reduction block (with `T.init()`) does not list its output among its reads.
    if block.init.is_some() {
        reads.retain(|(b, _)| !writes.iter().any(|(w, _)| w == b));
    }
    (finish(reads), finish(writes))
}

fn finish(list: Vec<Access>) -> Vec<BufferRegion> {
    let an = Analyzer::new();
    list.into_iter()
        .map(|(buffer, dims)| {
            let region = dims
                .into_iter()
                .enumerate()
                .map(|(i, d)| match d {
                    Some((lo, hi)) if same(&lo, &hi) => {
                        let one = const_of(1, lo.dtype());
                        Range::new(lo, one)
                    }
                    Some((lo, hi)) => {
                        let one = const_of(1, hi.dtype());
                        let ext = an.simplify(&arith(BinOp::Add, arith(BinOp::Sub, hi, lo.clone()), one));
                        Range::new(lo, ext)
                    }
                    None => {
                        let ext = buffer.shape().get(i).cloned().unwrap_or_else(|| PrimExpr::int(1));
                        Range::from_extent(ext)
                    }
                })
                .collect();
            BufferRegion { buffer, region }
        })
        .collect()
}

fn same(a: &PrimExpr, b: &PrimExpr) -> bool {
    crate::text::printer::tir::expr_equal(a, b)
}

struct Collector {
    reads: Vec<Access>,
    writes: Vec<Access>,
    local: Vec<Buffer>,
    /// Variables bound inside the block, with their inclusive bounds.
    relax: Vec<(TirVar, PrimExpr, PrimExpr)>,
}

impl Collector {
    fn bounds(&self, e: &PrimExpr) -> Option<(PrimExpr, PrimExpr)> {
        use PrimExprKind as K;
        let mut uses = false;
        crate::text::printer::tir::collect_vars(e, &mut |v| uses |= self.relax.iter().any(|(r, _, _)| r == v));
        if !uses {
            return Some((e.clone(), e.clone()));
        }
        match e.kind() {
            K::Var(v) => self
                .relax
                .iter()
                .rev()
                .find(|(r, _, _)| r == v)
                .map(|(_, lo, hi)| (lo.clone(), hi.clone())),
            K::Binary { op, a, b } => {
                let (alo, ahi) = self.bounds(a)?;
                match op {
                    BinOp::Add => {
                        let (blo, bhi) = self.bounds(b)?;
                        Some((arith(BinOp::Add, alo, blo), arith(BinOp::Add, ahi, bhi)))
                    }
                    BinOp::Sub => {
                        let (blo, bhi) = self.bounds(b)?;
                        Some((arith(BinOp::Sub, alo, bhi), arith(BinOp::Sub, ahi, blo)))
                    }
                    BinOp::Mul => {
                        let c = b.as_int()?;
                        if c >= 0 {
                            Some((arith(BinOp::Mul, alo, b.clone()), arith(BinOp::Mul, ahi, b.clone())))
                        } else {
                            Some((arith(BinOp::Mul, ahi, b.clone()), arith(BinOp::Mul, alo, b.clone())))
                        }
                    }
                    BinOp::FloorDiv if b.as_int().is_some_and(|c| c > 0) => Some((
                        arith(BinOp::FloorDiv, alo, b.clone()),
                        arith(BinOp::FloorDiv, ahi, b.clone()),
                    )),
                    BinOp::FloorMod if b.as_int().is_some_and(|c| c > 0) => {
                        let c = b.as_int().unwrap_or(1);
                        Some((const_of(0, b.dtype()), const_of(c - 1, b.dtype())))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn add(&self, list: &mut Vec<Access>, buffer: &Buffer, indices: &[PrimExpr]) {
        if self.local.contains(buffer) {
            return;
        }
        let dims: Vec<Option<(PrimExpr, PrimExpr)>> = indices.iter().map(|i| self.bounds(i)).collect();
        match list.iter_mut().find(|(b, _)| b == buffer) {
            None => list.push((buffer.clone(), dims)),
            Some((_, old)) => {
                for (o, n) in old.iter_mut().zip(dims) {
                    *o = hull(o.take(), n);
                }
            }
        }
    }

    fn expr(&mut self, e: &PrimExpr) {
        match e.kind() {
            PrimExprKind::BufferLoad { buffer, indices } => {
                for i in indices {
                    self.expr(i);
                }
                let mut reads = std::mem::take(&mut self.reads);
                self.add(&mut reads, buffer, indices);
                self.reads = reads;
            }
            PrimExprKind::Cast { value, .. } | PrimExprKind::Not(value) | PrimExprKind::Broadcast { value, .. } => {
                self.expr(value)
            }
            PrimExprKind::Binary { a, b, .. } => {
                self.expr(a);
                self.expr(b);
            }
            PrimExprKind::Select { cond, t, f } => {
                self.expr(cond);
                self.expr(t);
                self.expr(f);
            }
            PrimExprKind::Call { args, .. } => args.iter().for_each(|a| self.expr(a)),
            PrimExprKind::Let { value, body, .. } => {
                self.expr(value);
                self.expr(body);
            }
            PrimExprKind::Ramp { base, stride, .. } => {
                self.expr(base);
                self.expr(stride);
            }
            PrimExprKind::IntImm { .. }
            | PrimExprKind::FloatImm { .. }
            | PrimExprKind::StringImm(_)
            | PrimExprKind::Var(_) => {}
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::BufferStore {
                buffer, value, indices, ..
            } => {
                self.expr(value);
                for i in indices {
                    self.expr(i);
                }
                let mut writes = std::mem::take(&mut self.writes);
                self.add(&mut writes, buffer, indices);
                self.writes = writes;
            }
            Stmt::Let { value, body, .. } => {
                self.expr(value);
                self.stmt(body);
            }
            Stmt::Attr { value, body, .. } => {
                self.expr(value);
                self.stmt(body);
            }
            Stmt::LaunchThread { extent, body, .. } => {
                self.expr(extent);
                self.stmt(body);
            }
            Stmt::Assert { cond, body, .. } => {
                self.expr(cond);
                self.stmt(body);
            }
            Stmt::For {
                var, min, extent, body, ..
            } => {
                self.expr(min);
                self.expr(extent);
                let (lo, hi) = match (self.bounds(min), self.bounds(extent)) {
                    (Some((lo, _)), Some((_, ehi))) => {
                        let one = const_of(1, ehi.dtype());
                        let hi = arith(BinOp::Sub, arith(BinOp::Add, min.clone(), ehi), one);
                        (lo, hi)
                    }
                    _ => (min.clone(), arith(BinOp::Add, min.clone(), extent.clone())),
                };
                self.relax.push((var.clone(), lo, hi));
                self.stmt(body);
                self.relax.pop();
            }
            Stmt::While { cond, body } => {
                self.expr(cond);
                self.stmt(body);
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
            } => {
                self.expr(cond);
                self.stmt(then_branch);
                if let Some(e) = else_branch {
                    self.stmt(e);
                }
            }
            Stmt::Seq(v) => v.iter().for_each(|x| self.stmt(x)),
            Stmt::Evaluate(e) => self.expr(e),
            Stmt::Alloc { buffer, body } => {
                self.local.push(buffer.clone());
                self.stmt(body);
            }
            Stmt::BlockRealize {
                iter_values,
                predicate,
                block,
            } => {
                iter_values.iter().for_each(|v| self.expr(v));
                if let Some(p) = predicate {
                    self.expr(p);
                }
                let n = block.iter_vars.len();
                for iv in &block.iter_vars {
                    let one = const_of(1, iv.dom.extent.dtype());
                    let hi = arith(
                        BinOp::Sub,
                        arith(BinOp::Add, iv.dom.min.clone(), iv.dom.extent.clone()),
                        one,
                    );
                    self.relax.push((iv.var.clone(), iv.dom.min.clone(), hi));
                }
                let local_before = self.local.len();
                self.local.extend(block.alloc_buffers.iter().cloned());
                for r in &block.reads {
                    let idx: Vec<PrimExpr> = r.region.iter().map(|x| x.min.clone()).collect();
                    let mut reads = std::mem::take(&mut self.reads);
                    self.add(&mut reads, &r.buffer, &idx);
                    self.reads = reads;
                }
                for w in &block.writes {
                    let idx: Vec<PrimExpr> = w.region.iter().map(|x| x.min.clone()).collect();
                    let mut writes = std::mem::take(&mut self.writes);
                    self.add(&mut writes, &w.buffer, &idx);
                    self.writes = writes;
                }
                self.local.truncate(local_before);
                for _ in 0..n {
                    self.relax.pop();
                }
            }
        }
    }
}

fn hull(a: Option<(PrimExpr, PrimExpr)>, b: Option<(PrimExpr, PrimExpr)>) -> Option<(PrimExpr, PrimExpr)> {
    let ((alo, ahi), (blo, bhi)) = (a?, b?);
    if same(&alo, &blo) && same(&ahi, &bhi) {
        return Some((alo, ahi));
    }
    match (alo.as_int(), ahi.as_int(), blo.as_int(), bhi.as_int()) {
        (Some(w), Some(x), Some(y), Some(z)) => {
            Some((const_of(w.min(y), alo.dtype()), const_of(x.max(z), ahi.dtype())))
        }
        _ => None,
    }
}
