//! Direct window convolutions with register tiles: the convolutions the implicit
//! GEMM does not take (depthwise ones, and grouped ones with few channels a group),
//! possibly fused with their epilogue (batch norm, activation).
//!
//! Each thread computes `TW` consecutive outputs along the innermost output axis
//! `x`. The input operand reads `x` and the innermost window loop `rx` only through
//! `s*x + rx` (checked on its index and bounds expressions), so the `TW` outputs'
//! windows along that axis overlap: for each step of the outer reduction loops the
//! thread loads the `(TW-1)*s + KW` input elements they cover once into registers,
//! and the `KW` weights once, then does the `TW x KW` multiply-adds from
//! registers. A 3x3 depthwise convolution with stride 1 and `TW = 7` loads 9 input
//! elements per window row instead of 21. Each output's accumulation keeps the
//! serial loop's order.

use relax_ir::tir::{BinOp, Buffer, PrimExpr, PrimExprKind, Stmt, TirVar};
use relax_ir::DataType;

use super::fused_reduction::Epilogue;
use super::operands::affine;
use super::ScheduleOptions;
use super::{decompose, i32c, if_, int_vars, let_, store, to_i32, total_of, unrolled, Builtin, GpuKernel, Grid};
use crate::expr::{self, add, bin, mul};
use crate::lower::{expr_eq, for_loop, Reduction};

/// Threads of a workgroup.
const THREADS: i64 = 64;

/// The widest window along `x` handled (a larger one gains little from sharing).
const MAX_KW: i64 = 11;

/// Most input registers a thread holds for one window row.
const MAX_SPAN: i64 = 40;

/// The register-tiled direct kernel for `r` (and its epilogue), or `None` when `r`
/// is not a window convolution of that shape.
pub(super) fn window_conv_kernel(
    r: &Reduction,
    epi: Option<&Epilogue>,
    name: &str,
    _opts: &ScheduleOptions,
) -> Option<GpuKernel> {
    if r.op != BinOp::Add || r.matmul.is_some() || !r.out.dtype().is_float() {
        return None;
    }
    let (x, xext) = r.spatial.last()?.clone();
    let (rx, kext) = r.reduce.last()?.clone();
    let wo = expr::simplify(&xext).as_int().filter(|&n| n >= 2)?;
    let kw = expr::simplify(&kext).as_int().filter(|&n| (2..=MAX_KW).contains(&n))?;
    let (a, b) = operands(&r.rhs)?;
    // The input operand reads `x`; the weight operand must not.
    let (p, q) = if expr::uses_var(a, &x) { (a, b) } else { (b, a) };
    if expr::uses_var(q, &x)
        || !expr::uses_var(p, &rx)
        || load_count(p) == 0
        || !p.dtype().is_float()
        || !q.dtype().is_float()
    {
        return None;
    }
    if expr::uses_var(&r.init, &rx) {
        return None;
    }
    let vars: Vec<TirVar> = r.spatial.iter().chain(&r.reduce).map(|(v, _)| v.clone()).collect();
    let mut stride = None;
    if !coupled(p, &x, &rx, &vars, &mut stride) {
        return None;
    }
    // Windows that overlap or abut (`s <= KW`): the registers hold only values some
    // output reads.
    let s = stride.filter(|&s| s <= kw)?;
    let tw = tile_width(wo, s, kw)?;
    let span = (tw - 1) * s + kw;
    let exact = wo % tw == 0;

    let [bx, tx, qv, x0] = int_vars(["bx", "tx", "q", "x0"]);
    let dt = r.out.dtype();
    let acc = Buffer::with_scope("acc", dt, vec![PrimExpr::int(tw)], "local");
    let patch = Buffer::with_scope("xw", p.dtype(), vec![PrimExpr::int(span)], "local");
    let wreg = Buffer::with_scope("ww", q.dtype(), vec![PrimExpr::int(kw)], "local");
    let ld = |b: &Buffer, i: PrimExpr| PrimExpr::load(b, vec![i]);
    let [j, m, d] = int_vars(["j", "m", "d"]);
    let at = |v: &TirVar, e: PrimExpr| {
        let mut map = expr::VarMap::new();
        map.insert(v.id(), e);
        map
    };
    // x = x0 + j for each of the thread's outputs.
    let xj = add(x0.to_expr(), j.to_expr());
    let each = |body: Stmt, guard: bool| {
        let body = let_(&x, expr::cast(xj.clone(), x.dtype()), body);
        let body = if guard && !exact {
            if_(bin(BinOp::Lt, xj.clone(), i32c(wo)), body)
        } else {
            body
        };
        unrolled(&j, tw, body)
    };
    // The input registers: xw[d] = P at x = x0, rx = d (equal to P at any
    // x0 + j, rx = m with s*j + m = d); positions no valid output covers are 0.
    let mut pmap = at(&x, expr::cast(x0.to_expr(), x.dtype()));
    pmap.insert(rx.id(), expr::cast(d.to_expr(), rx.dtype()));
    let p_d = expr::subst(p, &pmap);
    let zero = PrimExpr::float_of(0.0, p.dtype());
    let load_patch = if exact {
        store(&patch, d.to_expr(), p_d)
    } else {
        // Covered when x0*s + d < (wo - 1)*s + kw.
        let covered = bin(
            BinOp::Lt,
            d.to_expr(),
            add(mul(bin(BinOp::Sub, i32c(wo - 1), x0.to_expr()), i32c(s)), i32c(kw)),
        );
        Stmt::Seq(vec![
            store(&patch, d.to_expr(), zero),
            if_(covered, store(&patch, d.to_expr(), p_d)),
        ])
    };
    let load_weights = store(
        &wreg,
        m.to_expr(),
        expr::subst(q, &at(&rx, expr::cast(m.to_expr(), rx.dtype()))),
    );
    let (pr, qr) = (
        ld(&patch, add(mul(j.to_expr(), i32c(s)), m.to_expr())),
        ld(&wreg, m.to_expr()),
    );
    let rhs = expr::map_expr(&r.rhs, &mut |e| {
        if expr_eq(e, p) {
            Some(pr.clone())
        } else if expr_eq(e, q) {
            Some(qr.clone())
        } else {
            None
        }
    });
    if expr::uses_var(&rhs, &rx) || expr::uses_var(&rhs, &x) {
        return None;
    }
    let acc_j = ld(&acc, j.to_expr());
    let update = unrolled(
        &j,
        tw,
        unrolled(
            &m,
            kw,
            store(&acc, j.to_expr(), PrimExpr::binary(r.op, acc_j.clone(), rhs)),
        ),
    );
    let mut nest = Stmt::Seq(vec![
        unrolled(&d, span, load_patch),
        unrolled(&m, kw, load_weights),
        update,
    ]);
    for (v, ext) in r.reduce[..r.reduce.len() - 1].iter().rev() {
        nest = for_loop(v, ext.clone(), relax_ir::tir::ForKind::Serial, nest);
    }
    // The epilogue's loads and calls that do not depend on `x` or the accumulator
    // (a batch norm's per-channel statistics) are computed once for the thread's
    // outputs, before them.
    let mut invariants = Vec::new();
    let write = each(
        match epi {
            None => store(&r.out, r.out_index.clone(), acc_j.clone()),
            Some(ep) => {
                let value = expr::map_expr(&ep.value, &mut |e| {
                    let reads_acc = expr::loads_buffer(e, &ep.acc);
                    if matches!(e.kind(), PrimExprKind::BufferLoad { buffer, .. } if *buffer == ep.acc) {
                        return Some(acc_j.clone());
                    }
                    if reads_acc || expr::uses_var(e, &x) || !e.dtype().is_float() || load_count(e) == 0 {
                        return None;
                    }
                    let v = TirVar::new(format!("ep{}", invariants.len()), e.dtype());
                    invariants.push((v.clone(), e.clone()));
                    Some(v.to_expr())
                });
                store(&ep.out, ep.index.clone(), value)
            }
        },
        true,
    );
    let write = invariants
        .into_iter()
        .rev()
        .fold(write, |body, (v, value)| let_(&v, value, body));
    let body = Stmt::Seq(vec![each(store(&acc, j.to_expr(), r.init.clone()), false), nest, write]);
    let body = [acc, patch, wreg]
        .into_iter()
        .rev()
        .fold(body, |body, buffer| Stmt::Alloc {
            buffer,
            body: Box::new(body),
        });
    let mut loops = r.spatial.clone();
    let last = loops.len() - 1;
    loops[last] = (qv.clone(), PrimExpr::int((wo + tw - 1) / tw));
    let total = total_of(&loops);
    let gid = TirVar::new("gid", DataType::INT32);
    let body = let_(
        &gid,
        add(mul(bx.to_expr(), i32c(THREADS)), tx.to_expr()),
        if_(
            bin(BinOp::Lt, gid.to_expr(), to_i32(&total)),
            decompose(gid.to_expr(), &loops, let_(&x0, mul(qv.to_expr(), i32c(tw)), body)),
        ),
    );
    let groups = expr::simplify(&bin(
        BinOp::FloorDiv,
        add(total, PrimExpr::int(THREADS - 1)),
        PrimExpr::int(THREADS),
    ));
    Some(GpuKernel {
        name: name.to_string(),
        body,
        workgroup_size: [THREADS as u32, 1, 1],
        grid: Grid::Linear(groups),
        builtins: vec![(bx, Builtin::GroupLinear), (tx, Builtin::Local(0))],
        alternatives: Vec::new(),
        schedule: "",
    })
}

/// Outputs per thread along `x` for `wo` outputs: of 4 to 8 (all of them when
/// fewer), the one padding `wo` least (the largest on ties), within the register
/// budget; `None` when even 2 would not fit.
fn tile_width(wo: i64, s: i64, kw: i64) -> Option<i64> {
    let fits = |t: i64| (t - 1) * s + kw <= MAX_SPAN;
    let pad = |t: i64| (wo + t - 1) / t * t - wo;
    let best = (4..=8.min(wo.max(4)))
        .map(|t| t.min(wo))
        .filter(|&t| fits(t))
        .min_by_key(|&t| (pad(t), -t));
    best.or_else(|| fits(2).then_some(2))
}

/// The two operands of a product `rhs` (through casts).
fn operands(rhs: &PrimExpr) -> Option<(&PrimExpr, &PrimExpr)> {
    match rhs.without_casts().kind() {
        PrimExprKind::Binary { op: BinOp::Mul, a, b } => Some((a, b)),
        _ => None,
    }
}

/// The number of buffer loads in `e`.
fn load_count(e: &PrimExpr) -> usize {
    let mut n = 0;
    expr::visit_expr(e, &mut |y| {
        if let PrimExprKind::BufferLoad { .. } = y.kind() {
            n += 1;
        }
    });
    n
}

/// Whether `e` depends on `x` and `rx` only through `s*x + rx` for one constant
/// stride `s >= 1` (recorded in `stride`): every integer subexpression reading
/// either is affine in `vars` with `x`'s coefficient `s` times `rx`'s (a nonzero
/// one), or is built from such subexpressions.
fn coupled(e: &PrimExpr, x: &TirVar, rx: &TirVar, vars: &[TirVar], stride: &mut Option<i64>) -> bool {
    if !expr::uses_var(e, x) && !expr::uses_var(e, rx) {
        return true;
    }
    let dt = e.dtype();
    if dt.is_int() && dt.lanes <= 1 {
        if let Some((c, _)) = affine(e, vars) {
            let pos = |v: &TirVar| vars.iter().position(|w| w.id() == v.id());
            let (Some(ix), Some(ir)) = (pos(x), pos(rx)) else {
                return false;
            };
            let (cx, cr) = (c[ix], c[ir]);
            if cr == 0 || cx % cr != 0 || cx / cr < 1 {
                return false;
            }
            let s = cx / cr;
            return match stride {
                None => {
                    *stride = Some(s);
                    true
                }
                Some(t) => *t == s,
            };
        }
    }
    if let PrimExprKind::Var(_) = e.kind() {
        return false;
    }
    let mut ok = true;
    expr::map_expr(e, &mut |y| {
        if y.same_as(e) {
            return None;
        }
        ok &= coupled(y, x, rx, vars, stride);
        Some(y.clone())
    });
    ok
}

#[cfg(test)]
mod tests {
    use super::tile_width;

    #[test]
    fn tile_widths_pad_least() {
        // 28, 14 and 7 outputs take 7; 56 takes 8; 3 takes 3; a wide stride-4 11x11
        // window fits.
        for (wo, s, kw, want) in [
            (28, 1, 3, 7),
            (14, 2, 3, 7),
            (7, 1, 3, 7),
            (56, 1, 3, 8),
            (3, 1, 3, 3),
            (55, 4, 11, 5),
        ] {
            assert_eq!(tile_width(wo, s, kw), Some(want), "{wo} {s} {kw}");
        }
    }
}
