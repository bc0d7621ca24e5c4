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
        // Per buffer, in first-access order: the element and whether every access
        // is at that one (hoisted) index.
        let mut seen: Vec<(Promoted<'s>, bool)> = Vec::new();
        let mut unflat: Vec<u64> = Vec::new();
        accesses(body, &mut |buffer, idx, write| {
            let [i] = idx else {
                unflat.push(buffer.id());
                return;
            };
            let hoisted = self.unchecked.contains(&key(i));
            match seen.iter_mut().find(|(p, _)| p.buffer.id() == buffer.id()) {
                Some((p, same)) => {
                    *same &= hoisted && structural_equal_prim_expr(p.index, i);
                    p.written |= write;
                }
                None => seen.push((
                    Promoted {
                        buffer: buffer.clone(),
                        index: i,
                        written: write,
                    },
                    hoisted,
                )),
            }
        });
        seen.into_iter()
            .filter(|(p, same)| {
                *same
                    && !unflat.contains(&p.buffer.id())
                    && stride_of(p.index, var) == Some(0)
                    && !uses_var(p.index, var)
                    && ty_of(p.buffer.dtype()).is_some()
                    && (self.env.noalias || !self.env.params.contains(&p.buffer.id()))
            })
            .map(|(p, _)| p)
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
