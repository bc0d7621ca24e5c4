//! Read/write region completion for blocks written without `T.reads`/`T.writes`
//! (what TVM's script completer fills in): only in `s_tir` functions, never for the
//! outermost (root) block. Accesses inside loops of the block are relaxed over the
//! loop ranges; several accesses to one buffer are merged into their hull when the
//! bounds are constants, and cover the whole dimension otherwise.

use super::super::prim_expr::{arith, const_of};
use crate::arith::Analyzer;
use crate::attrs::AttrValue;
use crate::tir::{BinOp, Block, Buffer, BufferRegion, For, PrimExpr, PrimExprKind, Range, Stmt, TirVar};
use crate::visit::{walk_prim_expr, walk_realize_values, walk_stmt, StmtExprVisitor};

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
        _ => s.children_mut().for_each(|x| visit(x, s_tir, is_root)),
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
        c.visit_stmt(i);
    }
    c.visit_stmt(&block.body);
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

    fn list(&mut self, write: bool) -> &mut Vec<Access> {
        if write {
            &mut self.writes
        } else {
            &mut self.reads
        }
    }

    /// Add an access to the reads or the writes.
    fn record(&mut self, write: bool, buffer: &Buffer, indices: &[PrimExpr]) {
        let mut list = std::mem::take(self.list(write));
        self.add(&mut list, buffer, indices);
        *self.list(write) = list;
    }
}

/// The collector is a [`StmtExprVisitor`]: loads and stores are recorded after
/// their operands are visited; loops relax their variable; nested blocks add
/// their declared regions without being entered; the rest is default recursion.
impl<'a> StmtExprVisitor<'a> for Collector {
    fn visit_prim_expr(&mut self, e: &'a PrimExpr) {
        walk_prim_expr(self, e);
        if let PrimExprKind::BufferLoad { buffer, indices } = e.kind() {
            self.record(false, buffer, indices);
        }
    }

    fn visit_stmt(&mut self, s: &'a Stmt) {
        match s {
            Stmt::BufferStore { buffer, indices, .. } => {
                walk_stmt(self, s);
                self.record(true, buffer, indices);
            }
            Stmt::For(For {
                var, min, extent, body, ..
            }) => {
                self.visit_prim_expr(min);
                self.visit_prim_expr(extent);
                let (lo, hi) = match (self.bounds(min), self.bounds(extent)) {
                    (Some((lo, _)), Some((_, ehi))) => {
                        let one = const_of(1, ehi.dtype());
                        let hi = arith(BinOp::Sub, arith(BinOp::Add, min.clone(), ehi), one);
                        (lo, hi)
                    }
                    _ => (min.clone(), arith(BinOp::Add, min.clone(), extent.clone())),
                };
                self.relax.push((var.clone(), lo, hi));
                self.visit_stmt(body);
                self.relax.pop();
            }
            Stmt::Alloc { buffer, body } => {
                self.local.push(buffer.clone());
                self.visit_stmt(body);
            }
            Stmt::BlockRealize {
                iter_values,
                predicate,
                block,
            } => {
                walk_realize_values(self, iter_values, predicate.as_ref());
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
                let regions = block
                    .reads
                    .iter()
                    .map(|r| (false, r))
                    .chain(block.writes.iter().map(|w| (true, w)));
                for (write, r) in regions {
                    let idx: Vec<PrimExpr> = r.region.iter().map(|x| x.min.clone()).collect();
                    self.record(write, &r.buffer, &idx);
                }
                self.local.truncate(local_before);
                for _ in 0..n {
                    self.relax.pop();
                }
            }
            _ => walk_stmt(self, s),
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
