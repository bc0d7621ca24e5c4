//! Bounds checks hoisted out of innermost loops: when every index of a buffer
//! access is affine in the loop variable (constant stride) and otherwise
//! loop-invariant, both ends of the index range are checked once before the loop
//! and, when they pass, an unchecked copy of the loop runs; otherwise the checked
//! loop runs and reports the first failing access exactly as the interpreter does.

use std::collections::HashSet;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value};
use relax_ir::tir::{Buffer, PrimExpr, PrimExprKind, Stmt, TirVar};

use super::gen::Gen;
use super::Ty;
use crate::error::Result;
use crate::expr::{visit_expr, visit_stmt_exprs, visit_stmts};

/// An access whose bounds check can be hoisted: its buffer id, index (and the
/// index's identity in the tree), stride.
pub(super) struct Site {
    buf: u64,
    index: PrimExpr,
    key: usize,
    stride: i64,
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
            (Some(c), _) => stride_of(b, v)?.checked_mul(c),
            (_, Some(c)) => stride_of(a, v)?.checked_mul(c),
            _ if !crate::expr::uses_var(e, v) => Some(0),
            _ => None,
        },
        _ if !crate::expr::uses_var(e, v) && pure_int(e) => Some(0),
        _ => None,
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
        let bound = |e: &PrimExpr| {
            let mut ok = true;
            visit_expr(e, &mut |x| {
                if let PrimExprKind::Var(w) = x.kind() {
                    ok &= w == var || self.vars.contains_key(&w.id());
                }
            });
            ok
        };
        accesses(body, &mut |buf, idx, _| {
            let buf = buf.id();
            if let [i] = idx {
                if let Some(stride) = stride_of(i, var).filter(|_| bound(i) && self.bufs.contains_key(&buf)) {
                    out.push(Site {
                        buf,
                        index: i.clone(),
                        key: key(i),
                        stride,
                    });
                }
            }
        });
        out
    }

    /// Whether every site's index stays in its buffer for `var` in `lo..hi`.
    pub(super) fn range_ok(&mut self, var: &TirVar, sites: &[Site], lo: Value, hi: Value) -> Result<Value> {
        let last = self.b.ins().iadd_imm_s(hi, -1);
        let mut ok = self.b.ins().icmp(IntCC::SignedLessThan, lo, hi);
        let max_stride = sites.iter().map(|s| s.stride.unsigned_abs()).max().unwrap_or(1).max(1);
        // Short enough that the index arithmetic cannot wrap inside the range.
        let n = self.b.ins().isub(hi, lo);
        let short = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedLessThanOrEqual, n, ((1u64 << 30) / max_stride) as i64);
        ok = self.b.ins().band(ok, short);
        let prev = self.vars.get(&var.id()).copied();
        for s in sites {
            let len = self.bufs[&s.buf].1;
            let small = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThanOrEqual, len, 1i64 << 31);
            ok = self.b.ins().band(ok, small);
            for at in [lo, last] {
                self.vars.insert(var.id(), (at, Ty::I));
                let i = self.int(&s.index)?;
                let inb = self.b.ins().icmp(IntCC::UnsignedLessThan, i, len);
                ok = self.b.ins().band(ok, inb);
            }
        }
        super::gen::restore(&mut self.vars, var.id(), prev);
        Ok(ok)
    }
}

/// The unchecked access keys of `sites`.
pub(super) fn keys(sites: &[Site]) -> HashSet<usize> {
    sites.iter().map(|s| s.key).collect()
}
