//! Inlining of elementwise producer stages into their consumers (TVM's
//! `compute_inline`), before lowering.
//!
//! A legalized or fused PrimFunc often computes a chain of elementwise steps as
//! separate root-level loop nests over intermediate buffers: `gelu` is five of them
//! (`x * 0.7071`, `erf`, `* 0.5`, `+ 0.5`, `x * ...`). Each becomes its own stage:
//! one GPU dispatch, or one pass over memory on the host. When a root-level nest
//! only writes every element of an intermediate buffer `B[v] = f(v)`, the later
//! loads `B[e]` can compute `f(e)` instead; the nest and the buffer disappear and the
//! chain becomes one stage.
//!
//! A producer is inlined only when all of the following hold, so that the result is
//! the same value computed in the same dtype:
//! - it is a nest of serial loops from 0 around one block whose iteration variables
//!   are spatial, bound to the loop variables in order, with the loop extents as
//!   domains, no predicate, no `T.init`, no allocation, and whose body is one store
//!   `B[v0, .., vn] = f` into an intermediate buffer of the root block of exactly
//!   those extents;
//! - `f` has `B`'s dtype, does not read `B`, and calls only pure math intrinsics;
//! - `B` is stored nowhere else, and no later root-level statement stores into a
//!   buffer `f` reads;
//! - every later load of `B` is inside a block without reduction axes, and `B` is
//!   loaded once (a producer without intrinsic calls may be loaded up to three
//!   times: duplicating a few multiplications costs less than a pass over memory).
//!
//! Functions that bind threads themselves are left alone.

use std::collections::HashSet;

use relax_ir::structural::structural_equal_prim_expr;
use relax_ir::tir::{
    Block, Buffer, BufferRegion, For, ForKind, Intrinsic, IterKind, PrimExpr, PrimExprKind, Range, Stmt,
};
use relax_ir::PrimFunc;

use crate::expr::{self, VarMap};

/// `f` with its elementwise producer stages inlined (unchanged when there are none).
pub fn inline_elementwise(f: &PrimFunc) -> PrimFunc {
    if binds_threads(&f.body) {
        return f.clone();
    }
    match rewrite_root(&f.body, &[]) {
        Some((body, _)) => {
            let mut out = f.clone();
            out.body = body;
            out
        }
        None => f.clone(),
    }
}

/// The root statement `s` (root block and `T.alloc_buffer` scopes around a sequence
/// of stages; `allocs`: the intermediate buffers allocated around it) with its
/// producers inlined, and the buffers that became unused; `None` when nothing
/// changed.
fn rewrite_root(s: &Stmt, allocs: &[Buffer]) -> Option<(Stmt, Vec<Buffer>)> {
    match s {
        Stmt::BlockRealize {
            iter_values,
            predicate,
            block,
        } if iter_values.is_empty() && block.init.is_none() && block.iter_vars.is_empty() => {
            let mut inner = allocs.to_vec();
            inner.extend(block.alloc_buffers.iter().cloned());
            let (body, removed) = rewrite_root(&block.body, &inner)?;
            let stmt = Stmt::BlockRealize {
                iter_values: iter_values.clone(),
                predicate: predicate.clone(),
                block: Box::new(Block {
                    alloc_buffers: block
                        .alloc_buffers
                        .iter()
                        .filter(|b| !removed.contains(b))
                        .cloned()
                        .collect(),
                    body: Box::new(body),
                    ..(**block).clone()
                }),
            };
            Some((stmt, removed))
        }
        Stmt::Alloc { buffer, body } => {
            let mut inner = allocs.to_vec();
            inner.push(buffer.clone());
            let (body, removed) = rewrite_root(body, &inner)?;
            let stmt = if removed.contains(buffer) {
                body
            } else {
                Stmt::Alloc {
                    buffer: buffer.clone(),
                    body: Box::new(body),
                }
            };
            Some((stmt, removed))
        }
        Stmt::Seq(stages) => {
            let mut stages: Vec<Stmt> = stages.clone();
            let mut removed = Vec::new();
            let mut k = 0;
            while k < stages.len() {
                match producer(&stages[k], allocs) {
                    Some(p) if !removed.contains(&p.buffer) && inlinable(&p, &stages[k + 1..]) => {
                        let later: Vec<Stmt> = stages[k + 1..].iter().map(|s| substitute(s, &p)).collect();
                        stages.truncate(k);
                        stages.extend(later);
                        removed.push(p.buffer);
                    }
                    _ => k += 1,
                }
            }
            if removed.is_empty() {
                return None;
            }
            let stmt = if stages.len() == 1 {
                stages.pop().unwrap_or(Stmt::Seq(Vec::new()))
            } else {
                Stmt::Seq(stages)
            };
            Some((stmt, removed))
        }
        _ => None,
    }
}

/// An elementwise producer: `buffer[vars] = value` over the whole buffer.
struct Producer {
    buffer: Buffer,
    /// The block's iteration variables, in index order.
    vars: Vec<relax_ir::tir::TirVar>,
    value: PrimExpr,
    /// The block's reads.
    reads: Vec<BufferRegion>,
}

/// Whether two extents are the same (constants by value, whatever their dtype).
fn same_extent(a: &PrimExpr, b: &PrimExpr) -> bool {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) => x == y,
        _ => structural_equal_prim_expr(a, b),
    }
}

fn binds_threads(s: &Stmt) -> bool {
    let mut found = false;
    expr::visit_stmts(s, &mut |x| match x {
        Stmt::For(For {
            kind: ForKind::ThreadBinding,
            ..
        })
        | Stmt::LaunchThread { .. } => found = true,
        Stmt::Attr { key, .. } if key == "thread_extent" => found = true,
        _ => {}
    });
    found
}

fn producer(s: &Stmt, allocs: &[Buffer]) -> Option<Producer> {
    let mut loops: Vec<&For> = Vec::new();
    let mut cur = s;
    while let Stmt::For(l) = cur {
        if l.min.as_int() != Some(0) || !matches!(l.kind, ForKind::Serial | ForKind::Parallel) || l.thread_tag.is_some()
        {
            return None;
        }
        loops.push(l);
        cur = &l.body;
    }
    let Stmt::BlockRealize {
        iter_values,
        predicate,
        block,
    } = cur
    else {
        return None;
    };
    if predicate.as_ref().is_some_and(|p| p.as_int() != Some(1))
        || block.init.is_some()
        || !block.alloc_buffers.is_empty()
        || !block.match_buffers.is_empty()
        || block.iter_vars.len() != loops.len()
        || iter_values.len() != loops.len()
    {
        return None;
    }
    for ((iv, value), l) in block.iter_vars.iter().zip(iter_values).zip(&loops) {
        let bound_to_loop = value.as_var() == Some(&l.var);
        let full = iv.dom.min.as_int() == Some(0) && same_extent(&iv.dom.extent, &l.extent);
        if iv.kind != IterKind::DataPar || !bound_to_loop || !full {
            return None;
        }
    }
    let Stmt::BufferStore {
        buffer, value, indices, ..
    } = &*block.body
    else {
        return None;
    };
    if !allocs.contains(buffer) || value.dtype() != buffer.dtype() || indices.len() != block.iter_vars.len() {
        return None;
    }
    let in_order = indices
        .iter()
        .zip(&block.iter_vars)
        .all(|(i, iv)| i.as_var() == Some(&iv.var));
    let covers = buffer.shape().len() == loops.len()
        && buffer
            .shape()
            .iter()
            .zip(&loops)
            .all(|(d, l)| same_extent(d, &l.extent));
    if !in_order || !covers || expr::loads_buffer(value, buffer) || !pure_calls(value) {
        return None;
    }
    Some(Producer {
        buffer: buffer.clone(),
        vars: block.iter_vars.iter().map(|iv| iv.var.clone()).collect(),
        value: value.clone(),
        reads: block.reads.clone(),
    })
}

/// Whether every call in `e` is a pure math intrinsic.
fn pure_calls(e: &PrimExpr) -> bool {
    let mut ok = true;
    expr::visit_expr(e, &mut |x| {
        if let PrimExprKind::Call { op, .. } = x.kind() {
            ok &= op.intrinsic().is_some_and(is_pure_math);
        }
    });
    ok
}

fn is_pure_math(i: Intrinsic) -> bool {
    use Intrinsic as I;
    !matches!(
        i,
        I::Assume
            | I::Ret
            | I::TvmThreadInvariant
            | I::TvmStorageSync
            | I::TvmStructGet
            | I::TvmStructSet
            | I::CallExtern
            | I::CallPureExtern
            | I::CallIntrin
            | I::CallLlvmIntrin
            | I::CallLlvmPureIntrin
            | I::CallPacked
            | I::CallCpacked
            | I::TvmStackMakeShape
            | I::TvmStackMakeArray
            | I::TvmStackAlloca
            | I::AddressOf
    )
}

fn has_calls(e: &PrimExpr) -> bool {
    let mut found = false;
    expr::visit_expr(e, &mut |x| found |= matches!(x.kind(), PrimExprKind::Call { .. }));
    found
}

/// Whether `p` may be inlined into `later`, the root-level statements after it.
fn inlinable(p: &Producer, later: &[Stmt]) -> bool {
    let mut read: HashSet<u64> = HashSet::new();
    expr::visit_expr(&p.value, &mut |x| {
        if let PrimExprKind::BufferLoad { buffer, .. } = x.kind() {
            read.insert(buffer.id());
        }
    });
    let mut loads = 0usize;
    let mut ok = true;
    for s in later {
        expr::visit_stmts(s, &mut |x| match x {
            Stmt::BufferStore { buffer, .. } if buffer == &p.buffer || read.contains(&buffer.id()) => ok = false,
            Stmt::BlockRealize { block, .. } => {
                let reduces = block.init.is_some() || block.iter_vars.iter().any(|iv| iv.kind != IterKind::DataPar);
                let here = block_loads(block, &p.buffer);
                if reduces && here > 0 {
                    ok = false;
                }
                loads += here;
            }
            _ => {}
        });
        // Loads outside any block (plain loops) are counted too.
        let all = stmt_loads(s, &p.buffer);
        if all != block_loads_total(s, &p.buffer) {
            ok = false;
        }
    }
    let most = if has_calls(&p.value) { 1 } else { 3 };
    ok && loads >= 1 && loads <= most
}

/// Loads of `b` in `block`'s own body (not in nested blocks).
fn block_loads(block: &Block, b: &Buffer) -> usize {
    let mut n = 0;
    let mut stack: Vec<&Stmt> = vec![&block.body];
    while let Some(s) = stack.pop() {
        if let Stmt::BlockRealize { .. } = s {
            continue;
        }
        count_in_stmt_exprs(s, b, &mut n);
        stack.extend(s.children());
    }
    n
}

fn block_loads_total(s: &Stmt, b: &Buffer) -> usize {
    let mut n = 0;
    expr::visit_stmts(s, &mut |x| {
        if let Stmt::BlockRealize { block, .. } = x {
            n += block_loads(block, b);
        }
    });
    n
}

fn stmt_loads(s: &Stmt, b: &Buffer) -> usize {
    let mut n = 0;
    expr::visit_stmt_exprs(s, &mut |e| {
        expr::visit_expr(e, &mut |x| {
            if let PrimExprKind::BufferLoad { buffer, .. } = x.kind() {
                if buffer == b {
                    n += 1;
                }
            }
        })
    });
    n
}

/// Loads of `b` in the expressions of `s` itself (not its children).
fn count_in_stmt_exprs(s: &Stmt, b: &Buffer, n: &mut usize) {
    let mut count = |e: &PrimExpr| {
        expr::visit_expr(e, &mut |x| {
            if let PrimExprKind::BufferLoad { buffer, .. } = x.kind() {
                if buffer == b {
                    *n += 1;
                }
            }
        })
    };
    match s {
        Stmt::BufferStore { value, indices, .. } => {
            count(value);
            indices.iter().for_each(&mut count);
        }
        Stmt::Let { value, .. } | Stmt::Attr { value, .. } => count(value),
        Stmt::Assert { cond, .. } | Stmt::While { cond, .. } | Stmt::If { cond, .. } => count(cond),
        Stmt::For(l) => {
            count(&l.min);
            count(&l.extent);
        }
        Stmt::Evaluate(e) => count(e),
        Stmt::LaunchThread { extent, .. } => count(extent),
        Stmt::Seq(_) | Stmt::Alloc { .. } | Stmt::BlockRealize { .. } => {}
    }
}

/// `s` with every load `p.buffer[e]` replaced by `p.value[vars := e]`, and the
/// buffer's read regions replaced by whole-buffer regions of what `p` reads.
fn substitute(s: &Stmt, p: &Producer) -> Stmt {
    let replaced = expr::map_stmt(s, &mut |e: &PrimExpr| {
        expr::map_expr(e, &mut |x| match x.kind() {
            PrimExprKind::BufferLoad { buffer, indices } if buffer == &p.buffer => {
                let map: VarMap = p.vars.iter().map(|v| v.id()).zip(indices.iter().cloned()).collect();
                Some(expr::subst(&p.value, &map))
            }
            _ => None,
        })
    });
    fix_reads(replaced, p)
}

fn whole(b: &Buffer) -> BufferRegion {
    BufferRegion {
        buffer: b.clone(),
        region: b
            .shape()
            .iter()
            .map(|d| Range {
                min: PrimExpr::int_of(0, d.dtype()),
                extent: d.clone(),
            })
            .collect(),
    }
}

fn fix_reads(mut s: Stmt, p: &Producer) -> Stmt {
    let mut stack: Vec<&mut Stmt> = vec![&mut s];
    while let Some(x) = stack.pop() {
        if let Stmt::BlockRealize { block, .. } = x {
            if block.reads.iter().any(|r| r.buffer == p.buffer) {
                block.reads.retain(|r| r.buffer != p.buffer);
                for r in &p.reads {
                    if !block.reads.iter().any(|q| q.buffer == r.buffer) {
                        block.reads.push(whole(&r.buffer));
                    }
                }
            }
        }
        stack.extend(x.children_mut());
    }
    s
}
