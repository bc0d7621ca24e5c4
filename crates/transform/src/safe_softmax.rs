//! torch's `_safe_softmax` as `torch.export` writes it out after every attention
//! softmax: rows whose scores are all `-inf` (fully masked) give zeros instead of
//! NaN, `where(guard, 0, softmax(x))` with the guard
//! `logical_not(astype(max(astype(logical_not(equal(x, -inf)), int8), [-1], keepdims), bool))`.
//! Recognised by `fuse-attention` (zero rows in the fused kernel) and
//! `dispatch-host-library` (`relax_host.safe_softmax`).

use std::borrow::Borrow;

use relax_ir::relax::Call;
use relax_ir::{Expr, Var};

/// The variables of the guard chain when `cond` is the guard of `x` (a tensor of
/// rank `rank`, reduced over its last axis), from `cond` back to `equal(x, -inf)`;
/// each step must be bound once and used only by the next. `bound(e, uses, op)` is
/// the pass's lookup: the call of `op` bound to the variable `e` when it has `uses`
/// uses.
pub(crate) fn guard_vars<C: Borrow<Call>>(
    cond: &Expr,
    x: &Var,
    rank: i64,
    bound: impl Fn(&Expr, usize, &str) -> Option<C>,
) -> Option<Vec<Var>> {
    let mut vars = vec![cond.as_var()?.clone()];
    let mut step = |e: &Expr, op: &str| -> Option<C> {
        let c = bound(e, 1, op)?;
        vars.push(c.borrow().args.first()?.as_var()?.clone());
        Some(c)
    };
    let g1 = step(cond, "relax.logical_not")?;
    let g2 = step(g1.borrow().args.first()?, "relax.astype")?;
    let g3 = step(g2.borrow().args.first()?, "relax.max")?;
    let axes = g3.borrow().attrs.get("axis")?.as_int_list()?;
    if axes.len() != 1 || (axes[0] != -1 && axes[0] != rank - 1) {
        return None;
    }
    let g4 = step(g3.borrow().args.first()?, "relax.astype")?;
    let g5 = step(g4.borrow().args.first()?, "relax.logical_not")?;
    // `vars` ends with the `equal`'s result, whose operands are `x` and `-inf`.
    let g6 = bound(g5.borrow().args.first()?, 1, "relax.equal")?;
    let [gx, ginf] = g6.borrow().args.as_slice() else {
        return None;
    };
    (gx.as_var()? == x && scalar_float(ginf) == Some(f64::NEG_INFINITY)).then_some(vars)
}

/// The zeros of `where(guard, zeros, p)`: `full_like(p, 0)` used only there (its
/// variable is returned, and `p` has two uses) or a scalar zero constant (`p` has
/// one use). `bound` as for [`guard_vars`].
pub(crate) fn zeros_of<C: Borrow<Call>>(
    zeros: &Expr,
    p: &Var,
    bound: impl Fn(&Expr, usize, &str) -> Option<C>,
) -> Option<(Option<Var>, usize)> {
    if let Some(f) = bound(zeros, 1, "relax.full_like") {
        let args = &f.borrow().args;
        if args.first().and_then(Expr::as_var) == Some(p) && args.get(1).is_some_and(is_zero) {
            return Some((Some(zeros.as_var()?.clone()), 2));
        }
    }
    is_zero(zeros).then_some((None, 1))
}

/// Whether `e` is a scalar constant zero.
pub(crate) fn is_zero(e: &Expr) -> bool {
    scalar_float(e) == Some(0.0)
}

/// The value of a scalar constant (a rank-0 tensor or a `PrimValue`).
pub(crate) fn scalar_float(e: &Expr) -> Option<f64> {
    let c = relax_op::legalize::te::scalar_constant(e)?;
    c.as_float().or_else(|| c.as_int().map(|i| i as f64))
}
