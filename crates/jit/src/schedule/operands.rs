//! Affine analysis of the index expressions of a kernel's operands: which part of a
//! load's flat index follows the output tile and which the reduction, conditions that
//! can be hoisted out of a tile loop, and four-element alignment. Used by the GEMM,
//! pooling and window-convolution schedules.

use relax_ir::tir::{BinOp, Buffer, Intrinsic, PrimExpr, Stmt, TirVar};
use relax_ir::DataType;

use super::{i32c, GpuOp};
use crate::expr::{self, bin, mul};

/// The buffer, row/column part and reduction part of a load's flat index
/// (`index = outer + inner`), when the index is a sum (through integer casts,
/// subtractions and multiplications by loop-invariant factors) of terms that each
/// read either `own` variables (or neither) or reduction variables, not both.
pub(super) fn split_load(operand: &PrimExpr, own: &[TirVar], red: &[TirVar]) -> Option<(Buffer, PrimExpr, PrimExpr)> {
    if load_count(operand) != 1 {
        return None;
    }
    let mut found = None;
    expr::visit_expr(operand, &mut |e| {
        if let relax_ir::tir::PrimExprKind::BufferLoad { .. } = e.kind() {
            found = Some(e.clone());
        }
    });
    let load = found?;
    let relax_ir::tir::PrimExprKind::BufferLoad { buffer, indices, .. } = load.kind() else {
        return None;
    };
    let [index] = indices.as_slice() else {
        return None;
    };
    let uses_any = |e: &PrimExpr, vs: &[TirVar]| vs.iter().any(|v| expr::uses_var(e, v));
    let (outer, inner) = split_affine(index, &|e| uses_any(e, own), &|e| uses_any(e, red))?;
    let zero = || expr::int_like(index, 0);
    let (outer, inner) = (outer.unwrap_or_else(zero), inner.unwrap_or_else(zero));
    // Only worth it when both parts are there and the rows/columns part is not free.
    (uses_any(&outer, own) && uses_any(&inner, red)).then(|| (buffer.clone(), outer, inner))
}

/// `e` as `outer + inner` (`None`: zero), `inner` holding every term that reads a
/// reduction variable, or `None` when a term reads both kinds.
pub(super) fn split_affine(
    e: &PrimExpr,
    own: &dyn Fn(&PrimExpr) -> bool,
    red: &dyn Fn(&PrimExpr) -> bool,
) -> Option<(Option<PrimExpr>, Option<PrimExpr>)> {
    use relax_ir::tir::PrimExprKind as K;
    if !red(e) {
        return Some((Some(e.clone()), None));
    }
    if !own(e) {
        return Some((None, Some(e.clone())));
    }
    let sum = |a: Option<PrimExpr>, b: Option<PrimExpr>, op: BinOp| match (a, b) {
        (a, None) => a,
        (None, Some(b)) if op == BinOp::Add => Some(b),
        (None, Some(b)) => Some(bin(BinOp::Sub, expr::int_like(&b, 0), b)),
        (Some(a), Some(b)) => Some(bin(op, a, b)),
    };
    match e.kind() {
        K::Binary {
            op: op @ (BinOp::Add | BinOp::Sub),
            a,
            b,
        } => {
            let (ao, ai) = split_affine(a, own, red)?;
            let (bo, bi) = split_affine(b, own, red)?;
            Some((sum(ao, bo, *op), sum(ai, bi, *op)))
        }
        K::Binary { op: BinOp::Mul, a, b } => {
            let (v, f) = if !own(b) && !red(b) {
                (a, b)
            } else if !own(a) && !red(a) {
                (b, a)
            } else {
                return None;
            };
            let (o, i) = split_affine(v, own, red)?;
            Some((o.map(|o| mul(o, f.clone())), i.map(|i| mul(i, f.clone()))))
        }
        K::Cast { dtype, value } if dtype.is_int() && value.dtype().is_int() => {
            let (o, i) = split_affine(value, own, red)?;
            Some((o.map(|o| expr::cast(o, *dtype)), i.map(|i| expr::cast(i, *dtype))))
        }
        _ => None,
    }
}

/// The number of buffer loads in `e`.
pub(super) fn load_count(e: &PrimExpr) -> usize {
    let mut n = 0;
    expr::visit_expr(e, &mut |x| {
        if let relax_ir::tir::PrimExprKind::BufferLoad { .. } = x.kind() {
            n += 1;
        }
    });
    n
}

/// `load` (an operand with one buffer load) with the load replaced by `new`.
pub(super) fn replace_load(load: &PrimExpr, new: &PrimExpr) -> PrimExpr {
    expr::map_expr(load, &mut |e| {
        matches!(e.kind(), relax_ir::tir::PrimExprKind::BufferLoad { .. }).then(|| new.clone())
    })
}

/// A column operand's bounds condition evaluated in an outer reduction loop.
pub(super) struct Hoisted {
    /// The operand reading the condition from `mask[jj]`.
    pub(super) operand: PrimExpr,
    /// Per-column condition registers (`i32`, 0 or 1).
    pub(super) mask: Buffer,
    /// The condition's value for column `jj` (0 or 1).
    pub(super) cond: PrimExpr,
    /// Reduction loops the condition reads (outer loop).
    pub(super) outer: Vec<(TirVar, PrimExpr)>,
    /// The other reduction loops (inner loop).
    pub(super) inner: Vec<(TirVar, PrimExpr)>,
}

/// For an operand `if_then_else(cond, value, other)` whose `cond` reads some but
/// not all reduction loops (and `value`/`other` may read any), the rewrite that
/// tests a precomputed `mask[jj]` instead.
pub(super) fn hoist_condition(
    operand: &PrimExpr,
    reduce: &[(TirVar, PrimExpr)],
    jj: &TirVar,
    tn: i64,
) -> Option<Hoisted> {
    use relax_ir::tir::PrimExprKind as K;
    let mut conds = Vec::new();
    expr::visit_expr(operand, &mut |e| {
        if let K::Call { args, .. } = e.kind() {
            if e.as_intrinsic() == Some(Intrinsic::IfThenElse) && args.len() == 3 {
                conds.push(args[0].clone());
            }
        }
    });
    let [cond] = conds.as_slice() else {
        return None;
    };
    let (outer, inner): (Vec<_>, Vec<_>) = reduce.iter().cloned().partition(|(v, _)| expr::uses_var(cond, v));
    if outer.is_empty() || inner.is_empty() {
        return None;
    }
    let mask = Buffer::with_scope("ym", DataType::INT32, vec![PrimExpr::int(tn)], "local");
    let test = bin(BinOp::Ne, PrimExpr::load(&mask, vec![jj.to_expr()]), i32c(0));
    let rewritten = expr::map_expr(operand, &mut |e| match e.kind() {
        K::Call { args, dtype, .. } if e.as_intrinsic() == Some(Intrinsic::IfThenElse) && args.len() == 3 => {
            Some(PrimExpr::intrinsic_call(
                Intrinsic::IfThenElse,
                *dtype,
                vec![test.clone(), args[1].clone(), args[2].clone()],
            ))
        }
        _ => None,
    });
    Some(Hoisted {
        operand: rewritten,
        cond: PrimExpr::select(cond.clone(), i32c(1), i32c(0)),
        mask,
        outer,
        inner,
    })
}

/// An operand's flat index split into a row (column) part computed once per
/// thread into `base` and a reduction part.
pub(super) struct Split {
    pub(super) buf: Buffer,
    pub(super) outer: PrimExpr,
    pub(super) inner: PrimExpr,
    pub(super) base: Buffer,
}

/// `dst[off + l] = src[4 * i4 + l]` for `l` in 0..4 (one vec4 load).
pub(super) fn vload4(dst: &Buffer, off: PrimExpr, src: &Buffer, i4: PrimExpr) -> Stmt {
    Stmt::Evaluate(GpuOp::VLoad4.call(
        DataType::INT32,
        vec![PrimExpr::load(dst, vec![off]), PrimExpr::load(src, vec![i4])],
    ))
}

/// Whether a flat buffer's element count is a multiple of 4: a positive constant
/// one, or a symbolic one affine in its variables with every coefficient a multiple
/// of 4 (`m * 768` elements of a prompt's activations).
pub(super) fn numel_multiple_of_4(b: &Buffer) -> bool {
    let Some(e) = b.shape().first() else {
        return false;
    };
    if let Some(n) = const_extent(e) {
        return n > 0 && n % 4 == 0;
    }
    let mut vars: Vec<TirVar> = Vec::new();
    expr::visit_expr(e, &mut |x| {
        if let relax_ir::tir::PrimExprKind::Var(v) = x.kind() {
            if !vars.iter().any(|w| w.id() == v.id()) {
                vars.push(v.clone());
            }
        }
    });
    !vars.is_empty() && aligned(e, &vars)
}

/// `e` as `sum(c[t] * vars[t]) + k` with constant coefficients, when it is one.
pub(crate) fn affine(e: &PrimExpr, vars: &[TirVar]) -> Option<(Vec<i64>, i64)> {
    use relax_ir::tir::PrimExprKind as K;
    let n = vars.len();
    match e.kind() {
        K::Var(v) => {
            let t = vars.iter().position(|x| x.id() == v.id())?;
            let mut c = vec![0; n];
            c[t] = 1;
            Some((c, 0))
        }
        K::Cast { dtype, value } if dtype.is_int() && value.dtype().is_int() => affine(value, vars),
        K::Binary {
            op: op @ (BinOp::Add | BinOp::Sub),
            a,
            b,
        } => {
            let (ca, ka) = affine(a, vars)?;
            let (cb, kb) = affine(b, vars)?;
            let s: i64 = if *op == BinOp::Add { 1 } else { -1 };
            let c = ca
                .iter()
                .zip(&cb)
                .map(|(x, y)| x.checked_add(y.checked_mul(s)?))
                .collect::<Option<Vec<_>>>()?;
            Some((c, ka.checked_add(kb.checked_mul(s)?)?))
        }
        K::Binary { op: BinOp::Mul, a, b } => {
            let (ca, ka) = affine(a, vars)?;
            let (cb, kb) = affine(b, vars)?;
            let (c, k, f) = if cb.iter().all(|&x| x == 0) {
                (ca, ka, kb)
            } else if ca.iter().all(|&x| x == 0) {
                (cb, kb, ka)
            } else {
                return None;
            };
            let c = c.iter().map(|x| x.checked_mul(f)).collect::<Option<Vec<_>>>()?;
            Some((c, k.checked_mul(f)?))
        }
        _ => {
            let k = expr::simplify(e).as_int()?;
            Some((vec![0; n], k))
        }
    }
}

/// Whether `e` is exactly the fused index of `loops` (row-major, outermost
/// first) plus a multiple of 4: loops of extent 1 may have any coefficient.
pub(super) fn contiguous(e: &PrimExpr, loops: &[(TirVar, PrimExpr)]) -> bool {
    let vars: Vec<TirVar> = loops.iter().map(|(v, _)| v.clone()).collect();
    // A loop of extent 1 is always 0 (its coefficient may be symbolic: a batch of
    // one over a symbolic channel count).
    let mut unit = expr::VarMap::new();
    for (v, ext) in loops {
        if const_extent(ext) == Some(1) {
            unit.insert(v.id(), PrimExpr::int_of(0, v.dtype()));
        }
    }
    let e = expr::simplify(&expr::subst(e, &unit));
    let Some((c, k)) = affine(&e, &vars) else {
        return false;
    };
    let mut stride = 1i64;
    for (t, (_, ext)) in loops.iter().enumerate().rev() {
        let Some(n) = const_extent(ext) else {
            return false;
        };
        if n > 1 && c[t] != stride {
            return false;
        }
        stride = stride.saturating_mul(n);
    }
    k % 4 == 0
}

/// Whether `e` is affine in `vars` with every coefficient and the constant
/// multiples of 4.
pub(super) fn aligned(e: &PrimExpr, vars: &[TirVar]) -> bool {
    affine(e, vars).is_some_and(|(c, k)| k % 4 == 0 && c.iter().all(|c| c % 4 == 0))
}

/// The value of a constant loop extent (through casts and folding).
pub(super) fn const_extent(e: &PrimExpr) -> Option<i64> {
    expr::simplify(e.without_casts()).as_int()
}
