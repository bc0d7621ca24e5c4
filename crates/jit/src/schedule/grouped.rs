//! Grouped convolutions as per-group implicit GEMMs.
//!
//! A grouped convolution reads the output channel `ff` in both operands: the
//! weight at `W[ff, rc, ry, rx]` and the input at the first channel of `ff`'s group
//! (`X[n, ff // (Cout/G) * (Cin/G) + rc, ..]`), so the implicit GEMM, which needs a
//! row loop only the weight reads, does not take it. Splitting the channel loop
//! into the group `g = ff // C` and the channel within the group `f = ff % C`
//! (`C = Cout/G`, `ff = g*C + f`) makes it one: `f` is the rows (only the weight
//! reads it), the output pixels are the columns, and `g` is a batch loop, one GEMM
//! per group. The split reduction then goes to the register-tiled GEMM
//! ([`super::gemm::gemm_kernel`]), which declines groups of fewer than 16 output
//! channels (depthwise convolutions keep the direct schedules).

use relax_ir::tir::{BinOp, PrimExpr, PrimExprKind, TirVar};

use super::fused_reduction::Epilogue;
use super::gemm::gemm_kernel;
use super::{GpuKernel, ScheduleOptions};
use crate::expr::{self, add, mul};
use crate::lower::Reduction;

/// The per-group GEMM kernel of a grouped convolution (or any multiply-accumulate
/// reduction whose operands share a spatial loop that one of them reads only as
/// `v // C`), or `None`.
pub(super) fn grouped_gemm(
    r: &Reduction,
    epi: Option<&Epilogue>,
    name: &str,
    opts: &ScheduleOptions,
) -> Option<GpuKernel> {
    if !opts.implicit_gemm || r.matmul.is_some() || !r.out.dtype().is_float() || r.op != BinOp::Add {
        return None;
    }
    let (split, epi) = split_groups(r, epi)?;
    gemm_kernel(&split, epi.as_ref(), name, opts)
}

/// `(v, C)` when `e` is `v // C` (floor or truncating division of a loop variable,
/// through casts, by a constant `C > 1`).
fn div_of_var(e: &PrimExpr) -> Option<(TirVar, i64)> {
    let PrimExprKind::Binary {
        op: BinOp::FloorDiv | BinOp::Div,
        a,
        b,
    } = e.kind()
    else {
        return None;
    };
    let PrimExprKind::Var(v) = a.without_casts().kind() else {
        return None;
    };
    let c = expr::simplify(b.without_casts()).as_int().filter(|&c| c > 1)?;
    Some((v.clone(), c))
}

/// The two operands of a multiply-accumulate `rhs` (through casts).
fn operands(rhs: &PrimExpr) -> Option<(&PrimExpr, &PrimExpr)> {
    match rhs.without_casts().kind() {
        PrimExprKind::Binary { op: BinOp::Mul, a, b } => Some((a, b)),
        _ => None,
    }
}

/// `r` with its group loop split into `(g, f)` (see the module docs), and the
/// epilogue rewritten to match; `None` when no spatial loop of `r` is a group loop:
/// a loop of constant extent `E`, read by both operands and the output, that one
/// operand reads only as `v // C` for one constant `C` dividing `E` (with
/// `1 < C < E`).
fn split_groups(r: &Reduction, epi: Option<&Epilogue>) -> Option<(Reduction, Option<Epilogue>)> {
    let (a, b) = operands(&r.rhs)?;
    for (t, (v, ext)) in r.spatial.iter().enumerate() {
        let Some(e) = expr::simplify(ext).as_int() else {
            continue;
        };
        if !(expr::uses_var(a, v) && expr::uses_var(b, v) && expr::uses_var(&r.out_index, v)) {
            continue;
        }
        // The divisors `v` is divided by anywhere in the operands.
        let mut divisors = Vec::new();
        expr::visit_expr(&r.rhs, &mut |x| {
            if let Some((w, c)) = div_of_var(x) {
                if w == *v && !divisors.contains(&c) {
                    divisors.push(c);
                }
            }
        });
        let [c] = divisors.as_slice() else {
            continue;
        };
        let c = *c;
        if e % c != 0 || c >= e {
            continue;
        }
        let g = TirVar::new("g", v.dtype());
        let f = TirVar::new("f", v.dtype());
        // `v // C` -> `g`, `v % C` -> `f`, then any other `v` -> `g*C + f`.
        let quotients = |x: &PrimExpr| -> PrimExpr {
            expr::map_expr(x, &mut |y| {
                if let Some((w, cc)) = div_of_var(y) {
                    if w == *v && cc == c {
                        return Some(expr::cast(g.to_expr(), y.dtype()));
                    }
                }
                if let PrimExprKind::Binary {
                    op: BinOp::FloorMod | BinOp::Mod,
                    a,
                    b,
                } = y.kind()
                {
                    let is_v = matches!(a.without_casts().kind(), PrimExprKind::Var(w) if w == v);
                    if is_v && expr::simplify(b.without_casts()).as_int() == Some(c) {
                        return Some(expr::cast(f.to_expr(), y.dtype()));
                    }
                }
                None
            })
        };
        let mut map = expr::VarMap::new();
        map.insert(
            v.id(),
            add(mul(g.to_expr(), PrimExpr::int_of(c, v.dtype())), f.to_expr()),
        );
        let whole = |x: &PrimExpr| expr::subst(&quotients(x), &map);
        let rhs = whole(&r.rhs);
        // One operand must no longer read the channel within the group.
        let (na, nb) = operands(&rhs)?;
        if expr::uses_var(na, &f) == expr::uses_var(nb, &f) {
            continue;
        }
        let mut spatial = r.spatial.clone();
        spatial.splice(
            t..=t,
            [
                (g.clone(), PrimExpr::int_of(e / c, ext.dtype())),
                (f.clone(), PrimExpr::int_of(c, ext.dtype())),
            ],
        );
        let split = Reduction {
            spatial,
            reduce: r.reduce.clone(),
            out: r.out.clone(),
            out_index: whole(&r.out_index),
            init: whole(&r.init),
            op: r.op,
            rhs,
            matmul: None,
        };
        let epi = epi.map(|ep| Epilogue {
            acc: ep.acc.clone(),
            out: ep.out.clone(),
            index: whole(&ep.index),
            value: whole(&ep.value),
        });
        return Some((split, epi));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::bin;
    use relax_ir::tir::Buffer;
    use relax_ir::DataType;

    #[test]
    fn a_grouped_channel_loop_splits_into_group_and_channel() {
        let i64c = |v: i64| PrimExpr::int_of(v, DataType::INT64);
        let [ff, p, rc] = ["ff", "p", "rc"].map(|n| TirVar::new(n, DataType::INT64));
        let x = Buffer::new("x", DataType::FLOAT32, vec![i64c(8 * 10)]);
        let w = Buffer::new("w", DataType::FLOAT32, vec![i64c(8 * 2)]);
        let out = Buffer::new("y", DataType::FLOAT32, vec![i64c(8 * 10)]);
        // 8 output channels in 4 groups of 2, 2 input channels a group.
        let chan = add(mul(bin(BinOp::FloorDiv, ff.to_expr(), i64c(2)), i64c(2)), rc.to_expr());
        let xl = PrimExpr::load(&x, vec![add(mul(chan, i64c(10)), p.to_expr())]);
        let wl = PrimExpr::load(&w, vec![add(mul(ff.to_expr(), i64c(2)), rc.to_expr())]);
        let r = Reduction {
            spatial: vec![(ff.clone(), i64c(8)), (p.clone(), i64c(10))],
            reduce: vec![(rc.clone(), i64c(2))],
            out: out.clone(),
            out_index: add(mul(ff.to_expr(), i64c(10)), p.to_expr()),
            init: PrimExpr::float_of(0.0, DataType::FLOAT32),
            op: BinOp::Add,
            rhs: mul(xl, wl),
            matmul: None,
        };
        let (s, _) = split_groups(&r, None).expect("splits");
        let names: Vec<_> = s
            .spatial
            .iter()
            .map(|(v, e)| (v.name().to_string(), e.as_int()))
            .collect();
        assert_eq!(
            names,
            [("g".into(), Some(4)), ("f".into(), Some(2)), ("p".into(), Some(10))]
        );
        let (xa, wa) = operands(&s.rhs).unwrap();
        let f = &s.spatial[1].0;
        assert!(!expr::uses_var(xa, f) && expr::uses_var(wa, f));
        // A loop no operand divides does not split.
        let plain = Reduction {
            rhs: mul(
                PrimExpr::load(&x, vec![add(mul(ff.to_expr(), i64c(10)), p.to_expr())]),
                PrimExpr::load(&w, vec![add(mul(ff.to_expr(), i64c(2)), rc.to_expr())]),
            ),
            ..r
        };
        assert!(split_groups(&plain, None).is_none());
    }
}
