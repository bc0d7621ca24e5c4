//! Scalar replacement in innermost loops: a buffer element that every access in
//! the loop body reads or writes at the same loop-invariant index (a reduction's
//! accumulator, such as `argmax`'s running value and index) lives in a register for
//! the loop, loaded before it and stored after it, instead of going through memory
//! on every iteration.
//!
//! Only on the fast path of a loop whose bounds checks were hoisted (so the range is
//! non-empty and the index in bounds), and only for buffers that nothing else in the
//! body can reach: the function's own allocations, or parameters of a function that
//! declares them non-overlapping (`tirx.noalias`).

use std::collections::HashMap;

use relax_ir::structural::structural_equal_prim_expr;
use relax_ir::tir::{Buffer, PrimExpr, PrimExprKind, Stmt, TirVar};

use super::gen::{clif, ty_of, Gen};
use super::hoist::{accesses, key, stride_of};
use crate::error::Result;
use crate::expr::{uses_var, visit_stmts};

/// A promoted element: the buffer, the access (in the body) whose index names it,
/// and whether the body writes it.
pub(super) struct Promoted<'s> {
    buffer: Buffer,
    index: &'s PrimExpr,
    written: bool,
}

impl Gen<'_, '_> {
    /// The elements of `body` (an innermost loop over `var`) that can live in registers.
    pub(super) fn promotable<'s>(&self, var: &TirVar, body: &'s Stmt) -> Vec<Promoted<'s>> {
        let mut calls = false;
        visit_stmts(body, &mut |s| {
            calls |= matches!(s, Stmt::Evaluate(e) if !matches!(e.kind(), PrimExprKind::IntImm { .. }));
        });
        if calls {
            return Vec::new();
        }
        // Per buffer: its first access index, whether all accesses agree, written.
        let mut seen: HashMap<u64, (Buffer, &'s PrimExpr, bool, bool)> = HashMap::new();
        let mut order = Vec::new();
        let mut note = |buffer: &Buffer, idx: &'s [PrimExpr], write: bool| {
            let e = seen.entry(buffer.id()).or_insert_with(|| {
                order.push(buffer.id());
                (buffer.clone(), &idx[0], true, false)
            });
            e.2 &= idx.len() == 1 && structural_equal_prim_expr(e.1, &idx[0]);
            e.3 |= write;
        };
        stores_and_loads(body, &mut note);
        order
            .into_iter()
            .filter_map(|id| {
                let (buffer, index, same, written) = seen.remove(&id)?;
                let mut all_hoisted = true;
                accesses(body, &mut |b, idx| {
                    if b == id {
                        all_hoisted &= idx.len() == 1 && self.unchecked.contains(&key(&idx[0]));
                    }
                });
                let ok = same
                    && all_hoisted
                    && stride_of(index, var) == Some(0)
                    && !uses_var(index, var)
                    && ty_of(buffer.dtype()).is_some()
                    && (self.env.noalias || !self.env.params.contains(&id));
                ok.then_some(Promoted { buffer, index, written })
            })
            .collect()
    }

    /// Load each promoted element into a variable (before the loop).
    pub(super) fn promote(&mut self, ps: &[Promoted<'_>]) -> Result<()> {
        for p in ps {
            let (v, ty) = self.load(&p.buffer, std::slice::from_ref(p.index))?;
            let var = self.var(clif(ty), v);
            self.promoted.insert(p.buffer.id(), (var, ty));
        }
        Ok(())
    }

    /// Store the written elements back (after the loop) and forget the variables.
    pub(super) fn demote(&mut self, ps: &[Promoted<'_>]) -> Result<()> {
        for p in ps {
            let Some((var, ty)) = self.promoted.remove(&p.buffer.id()) else {
                continue;
            };
            if p.written {
                let v = self.b.use_var(var);
                self.store_value(&p.buffer, p.index, (v, ty), p.buffer.dtype())?;
            }
        }
        Ok(())
    }
}

/// Every store and load of `s` with its buffer and indices.
fn stores_and_loads<'s>(s: &'s Stmt, f: &mut dyn FnMut(&Buffer, &'s [PrimExpr], bool)) {
    match s {
        Stmt::BufferStore {
            buffer, value, indices, ..
        } => {
            loads(value, f);
            indices.iter().for_each(|i| loads(i, f));
            f(buffer, indices, true);
        }
        Stmt::Let { value, body, .. } => {
            loads(value, f);
            stores_and_loads(body, f);
        }
        Stmt::Attr { body, .. } => stores_and_loads(body, f),
        Stmt::Assert { cond, body, .. } => {
            loads(cond, f);
            stores_and_loads(body, f);
        }
        Stmt::If {
            cond,
            then_branch,
            else_branch,
        } => {
            loads(cond, f);
            stores_and_loads(then_branch, f);
            if let Some(e) = else_branch {
                stores_and_loads(e, f);
            }
        }
        Stmt::Seq(v) => v.iter().for_each(|x| stores_and_loads(x, f)),
        Stmt::Evaluate(e) => loads(e, f),
        // Innermost loop bodies have no loops, allocations or blocks (`hoistable`).
        Stmt::For { body, .. } | Stmt::LaunchThread { body, .. } | Stmt::Alloc { body, .. } => {
            stores_and_loads(body, f)
        }
        Stmt::While { cond, body } => {
            loads(cond, f);
            stores_and_loads(body, f);
        }
        Stmt::BlockRealize { .. } => {}
    }
}

fn loads<'s>(e: &'s PrimExpr, f: &mut dyn FnMut(&Buffer, &'s [PrimExpr], bool)) {
    use PrimExprKind as K;
    match e.kind() {
        K::BufferLoad { buffer, indices } => {
            indices.iter().for_each(|i| loads(i, f));
            f(buffer, indices, false);
        }
        K::Cast { value, .. } | K::Not(value) | K::Broadcast { value, .. } => loads(value, f),
        K::Ramp { base, stride, .. } => {
            loads(base, f);
            loads(stride, f);
        }
        K::Binary { a, b, .. } => {
            loads(a, f);
            loads(b, f);
        }
        K::Select { cond, t, f: x } => {
            loads(cond, f);
            loads(t, f);
            loads(x, f);
        }
        K::Call { args, .. } => args.iter().for_each(|a| loads(a, f)),
        K::Let { value, body, .. } => {
            loads(value, f);
            loads(body, f);
        }
        _ => {}
    }
}
