//! Bounds checks hoisted out of innermost loops: when every index of a buffer
//! access is affine in the loop variable (constant stride) and otherwise
//! loop-invariant, the index is checked once before the loop and, when that
//! passes, an unchecked copy of the loop runs; otherwise the checked loop runs and
//! reports the first failing access exactly as the interpreter does.
//!
//! Sound by construction: before the loop every node of each hoisted index (each
//! `+`, `-`, `*` by a constant and integer cast) is evaluated exactly (in `i128`)
//! at the loop's first and last iteration and must lie in its dtype's range at
//! both. An affine function takes on an interval only values between its values
//! at the ends, so no node can wrap at any iteration in between (by induction from
//! the leaves), every iteration computes the exact affine index, and that index
//! lies between the two checked ends. A narrowing cast or an `i * c + d` that
//! overflows its dtype anywhere in the range fails the check at an end and the loop
//! runs checked. Hoisting can be turned off (`HostOptions::hoist_bounds_checks`)
//! to compare both paths.

use std::collections::HashSet;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, Value};
use relax_ir::tir::{Buffer, PrimExpr, PrimExprKind, Stmt, TirVar};

use super::gen::Gen;
use super::Ty;
use crate::error::Result;
use crate::expr::{visit_expr, visit_stmt_exprs, visit_stmts};

/// An access whose bounds check can be hoisted: its buffer id, index (and the
/// index's identity in the tree).
pub(super) struct Site {
    buf: u64,
    index: PrimExpr,
    key: usize,
}

/// Identity of an index expression during one translation.
pub(super) fn key(e: &PrimExpr) -> usize {
    e as *const PrimExpr as usize
}

/// The coefficient of `v` in `e` when `e` is affine in `v` with a constant
/// coefficient, built from variables, constants, `+`, `-` and `*` by constants.
pub(super) fn stride_of(e: &PrimExpr, v: &TirVar) -> Option<i64> {
    use relax_ir::tir::BinOp;
    use PrimExprKind as K;
    match e.kind() {
        K::Var(w) => Some((w == v) as i64),
        K::IntImm { .. } => Some(0),
        K::Cast { value, dtype } if dtype.is_int() && value.dtype().is_int() => stride_of(value, v),
        K::Binary { op: BinOp::Add, a, b } => stride_of(a, v)?.checked_add(stride_of(b, v)?),
        K::Binary { op: BinOp::Sub, a, b } => stride_of(a, v)?.checked_sub(stride_of(b, v)?),
        K::Binary { op: BinOp::Mul, a, b } => match (a.as_int(), b.as_int()) {
            // The constant as generated code uses it (wrapped to its dtype).
            (Some(c), _) => stride_of(b, v)?.checked_mul(crate::expr::wrap_int(c, a.dtype())),
            (_, Some(c)) => stride_of(a, v)?.checked_mul(crate::expr::wrap_int(c, b.dtype())),
            _ if !crate::expr::uses_var(e, v) && pure_int(e) => Some(0),
            _ => None,
        },
        _ if !crate::expr::uses_var(e, v) && pure_int(e) => Some(0),
        _ => None,
    }
}

/// An integer dtype whose values the `i64` representation holds exactly (every
/// integer dtype but `uint64`).
fn exact_dtype(dt: relax_ir::DataType) -> bool {
    dt.lanes == 1 && dt.is_integer() && !(dt.is_uint() && dt.bits >= 64) && dt.bits <= 64
}

/// Whether [`Gen::exact`] can evaluate `e`: `+`, `-`, `*` by a constant and
/// integer casts over the loop variable and loop-invariant integer leaves, every
/// node of a dtype [`exact_dtype`] accepts.
fn exact_ok(e: &PrimExpr, v: &TirVar) -> bool {
    use relax_ir::tir::BinOp;
    use PrimExprKind as K;
    if !exact_dtype(e.dtype()) {
        return false;
    }
    if !crate::expr::uses_var(e, v) {
        return pure_int(e);
    }
    let same = |a: &PrimExpr, b: &PrimExpr| a.dtype() == e.dtype() && b.dtype() == e.dtype() && !e.dtype().is_bool();
    match e.kind() {
        K::Var(_) => true,
        K::Cast { value, dtype } => !dtype.is_bool() && exact_ok(value, v),
        K::Binary {
            op: BinOp::Add | BinOp::Sub,
            a,
            b,
        } => same(a, b) && exact_ok(a, v) && exact_ok(b, v),
        K::Binary { op: BinOp::Mul, a, b } => {
            same(a, b) && (a.as_int().is_some() || b.as_int().is_some()) && exact_ok(a, v) && exact_ok(b, v)
        }
        _ => false,
    }
}

/// An integer expression without loads or calls.
fn pure_int(e: &PrimExpr) -> bool {
    use PrimExprKind as K;
    match e.kind() {
        K::Var(_) | K::IntImm { .. } => true,
        K::Cast { value, .. } => value.dtype().is_int() && pure_int(value),
        K::Binary { a, b, .. } => a.dtype().is_int() && pure_int(a) && pure_int(b),
        _ => false,
    }
}

fn has_loop(s: &Stmt) -> bool {
    match s {
        Stmt::For(_) | Stmt::While { .. } | Stmt::LaunchThread { .. } | Stmt::Alloc { .. } => true,
        Stmt::Let { body, .. } | Stmt::Attr { body, .. } | Stmt::Assert { body, .. } => has_loop(body),
        Stmt::If {
            then_branch,
            else_branch,
            ..
        } => has_loop(then_branch) || else_branch.as_deref().is_some_and(has_loop),
        Stmt::Seq(v) => v.iter().any(has_loop),
        _ => false,
    }
}

/// Every buffer access of `s`: its buffer, indices and whether it is a store.
pub(super) fn accesses<'s>(s: &'s Stmt, f: &mut dyn FnMut(&'s Buffer, &'s [PrimExpr], bool)) {
    visit_stmts(s, &mut |x| {
        if let Stmt::BufferStore { buffer, indices, .. } = x {
            f(buffer, indices, true)
        }
    });
    visit_stmt_exprs(s, &mut |e| {
        visit_expr(e, &mut |x| {
            if let PrimExprKind::BufferLoad { buffer, indices } = x.kind() {
                f(buffer, indices, false)
            }
        })
    });
}

impl Gen<'_, '_> {
    /// The hoistable accesses of the innermost loop body `body` over `var`.
    pub(super) fn hoistable(&self, var: &TirVar, body: &Stmt) -> Vec<Site> {
        let mut out = Vec::new();
        if has_loop(body) {
            return out;
        }
        // Variables the body binds: an index using one is not loop-invariant.
        let mut inner: HashSet<u64> = HashSet::new();
        visit_stmts(body, &mut |x| {
            if let Stmt::Let { var, .. } = x {
                inner.insert(var.id());
            }
        });
        visit_stmt_exprs(body, &mut |e| {
            visit_expr(e, &mut |x| {
                if let PrimExprKind::Let { var, .. } = x.kind() {
                    inner.insert(var.id());
                }
            })
        });
        let bound = |e: &PrimExpr| {
            let mut ok = true;
            visit_expr(e, &mut |x| {
                if let PrimExprKind::Var(w) = x.kind() {
                    ok &= w == var || (self.vars.contains_key(&w.id()) && !inner.contains(&w.id()));
                }
            });
            ok
        };
        accesses(body, &mut |buf, idx, _| {
            let buf = buf.id();
            if let [i] = idx {
                if stride_of(i, var).is_some() && exact_ok(i, var) && bound(i) && self.bufs.contains_key(&buf) {
                    out.push(Site {
                        buf,
                        index: i.clone(),
                        key: key(i),
                    });
                }
            }
        });
        out
    }

    /// Whether every site's index stays in its buffer for `var` in `lo..hi`: the
    /// range is non-empty and, at its first and last iteration, every node of every
    /// index evaluates exactly within its dtype and the index within the buffer.
    pub(super) fn range_ok(&mut self, var: &TirVar, sites: &[Site], lo: Value, hi: Value) -> Result<Value> {
        let last = self.b.ins().iadd_imm_s(hi, -1);
        let ok = self.b.ins().icmp(IntCC::SignedLessThan, lo, hi);
        let prev = self.vars.get(&var.id()).copied();
        let r = self.sites_ok(var, sites, [lo, last], ok);
        super::gen::restore(&mut self.vars, var.id(), prev);
        r
    }

    /// `ok` and, for `var` at each of `ends`, every site's exact index in range.
    fn sites_ok(&mut self, var: &TirVar, sites: &[Site], ends: [Value; 2], mut ok: Value) -> Result<Value> {
        for s in sites {
            let len = self.bufs[&s.buf].1;
            for at in ends {
                self.vars.insert(var.id(), (at, Ty::I));
                let (i, fits) = self.exact(&s.index, var, at)?;
                ok = self.b.ins().band(ok, fits);
                // In its dtype's range (checked), so it fits an i64.
                let i = self.b.ins().ireduce(types::I64, i);
                let inb = self.b.ins().icmp(IntCC::UnsignedLessThan, i, len);
                ok = self.b.ins().band(ok, inb);
            }
        }
        Ok(ok)
    }

    /// The exact value (`i128`) of `e` (accepted by [`exact_ok`]) with `var` at
    /// `at`, and whether every node of `e` lies within its dtype's range there.
    fn exact(&mut self, e: &PrimExpr, var: &TirVar, at: Value) -> Result<(Value, Value)> {
        use relax_ir::tir::BinOp;
        use PrimExprKind as K;
        let yes = self.b.ins().iconst(types::I8, 1);
        let (v, ok) = match e.kind() {
            K::Var(w) if w == var => (self.b.ins().sextend(types::I128, at), yes),
            K::Cast { value, .. } if crate::expr::uses_var(e, var) => self.exact(value, var, at)?,
            K::Binary { op, a, b } if crate::expr::uses_var(e, var) => {
                let (x, ox) = self.exact(a, var, at)?;
                let (y, oy) = self.exact(b, var, at)?;
                let v = match op {
                    BinOp::Add => self.b.ins().iadd(x, y),
                    BinOp::Sub => self.b.ins().isub(x, y),
                    _ => self.b.ins().imul(x, y),
                };
                (v, self.b.ins().band(ox, oy))
            }
            // A loop-invariant leaf, as every iteration computes it.
            _ => {
                let v = self.int(e)?;
                return Ok((self.b.ins().sextend(types::I128, v), yes));
            }
        };
        let dt = e.dtype();
        let (min, max) = if dt.is_int() {
            (-(1i128 << (dt.bits - 1)), (1i128 << (dt.bits - 1)) - 1)
        } else {
            (0, (1i128 << dt.bits) - 1)
        };
        let min = self.b.ins().iconst(types::I64, min as i64);
        let min = self.b.ins().sextend(types::I128, min);
        let max = self.b.ins().iconst(types::I64, max as i64);
        let max = self.b.ins().sextend(types::I128, max);
        let ge = self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, v, min);
        let le = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, v, max);
        let inr = self.b.ins().band(ge, le);
        Ok((v, self.b.ins().band(ok, inr)))
    }
}

/// The unchecked access keys of `sites`.
pub(super) fn keys(sites: &[Site]) -> HashSet<usize> {
    sites.iter().map(|s| s.key).collect()
}
