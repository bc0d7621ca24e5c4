//! The register-tiled GEMM schedule: matmuls, and multiply-accumulate reductions
//! recognised as implicit GEMMs (convolutions), each thread computing a `TM x TN`
//! tile of outputs with the operands of one reduction step held in registers.
//!
//! An implicit GEMM's columns are all the output pixels (`N*OH*OW` for an NCHW
//! convolution) fused into one index, so 7x7 and 14x14 outputs fill the tiles as
//! well as 56x56 ones; the column coordinates of a thread's tile are computed once,
//! before the reduction loop, into registers.

use relax_ir::tir::{BinOp, Buffer, ForKind, PrimExpr, Stmt, TirVar};
use relax_ir::DataType;

use super::fused_reduction::Epilogue;
use super::operands::{
    affine, aligned, const_extent, contiguous, hoist_condition, load_count, numel_multiple_of_4, replace_load,
    split_load, vload4, Split,
};
use super::{
    alloc_all, decompose, i32c, if_, int_vars, let_, store, to_i32, total_of, unrolled, Builtin, GpuKernel, Grid,
    ScheduleOptions,
};
use crate::expr::{self, add, bin, mul};
use crate::lower::{for_loop, Matmul, Reduction};

/// Smallest row extent (output channels) and column extent (output pixels) for
/// which the implicit-GEMM schedule is used.
const MIN_GEMM_EXTENT: i64 = 16;

/// The most rows for which a matmul with a symbolic row count runs its few-row
/// kernel by default (`ScheduleOptions::few_rows_max`): register tiles of
/// `FEW_ROWS_TILE` in workgroups of one row of threads, consecutive threads on
/// consecutive columns. Above it, the register tiles of the options. Measured on
/// lavapipe (2 busy cores; `x @ w.T` with `w` of 4096 x 768, per call): few-row
/// kernel 24, 27, 43, 86, 172 ms for 1, 4, 8, 16, 32 rows; the options' 8 x 8 tiles
/// of 8 x 8 threads 200-240 ms for any count up to 64 (and `x @ w`: 20-74 ms for
/// 1-16 rows against 140-250 ms, 263 against 139 for 32).
pub const FEW_ROWS_MAX: i64 = 16;

/// (rows, columns) per thread of the few-row kernel of a matmul with a symbolic
/// row count, in workgroups of one row of threads.
const FEW_ROWS_TILE: (u32, u32) = (4, 4);

/// The suffix of the name of a matmul's few-row kernel (see [`FEW_ROWS_MAX`]).
pub const FEW_ROWS_SUFFIX: &str = "_few_rows";

/// `k` dispatched only where `cond` (an expression of the dispatch's variables) is
/// `when`: its grid is zero elsewhere.
fn guard_grid(k: &mut GpuKernel, cond: &PrimExpr, when: bool) {
    let guard = |e: PrimExpr| {
        let zero = expr::int_like(&e, 0);
        if when {
            PrimExpr::select(cond.clone(), e, zero)
        } else {
            PrimExpr::select(cond.clone(), zero, e)
        }
    };
    k.grid = match std::mem::replace(&mut k.grid, Grid::Linear(PrimExpr::int(0))) {
        Grid::Linear(e) => Grid::Linear(guard(e)),
        Grid::Dims([x, y, z]) => Grid::Dims([guard(x), y, z]),
    };
}

/// A GEMM over some loops of a reduction: rows `i`, columns `js` (one or more
/// spatial loops fused into one column index, outermost first), `x` the load
/// reading the rows, `y` the load reading the columns; every other spatial loop
/// is a batch.
#[derive(Clone, Debug)]
pub struct GemmPlan {
    /// Index in `spatial` of the row loop.
    pub i: usize,
    /// Indices in `spatial` of the column loops, outermost first.
    pub js: Vec<usize>,
    /// The load depending on the rows and the reduction.
    pub x: PrimExpr,
    /// The load depending on the columns and the reduction.
    pub y: PrimExpr,
}

impl GemmPlan {
    fn of_matmul(mm: &Matmul) -> GemmPlan {
        GemmPlan {
            i: mm.i,
            js: vec![mm.j],
            x: mm.x.clone(),
            y: mm.y.clone(),
        }
    }
}

/// Whether `r` is a matmul or a multiply-accumulate reduction recognised as an
/// implicit GEMM (what [`gemm_kernel`] schedules).
pub(crate) fn is_gemm(r: &Reduction) -> bool {
    r.out.dtype().is_float() && (r.matmul.is_some() || implicit_gemm(r).is_some())
}

/// The register-tiled kernel for a reduction recognised as a matmul or an implicit
/// GEMM (float outputs only), or `None`. With an epilogue (a reduction fused with
/// its elementwise consumer), each tile element is stored through it.
pub fn gemm_kernel(r: &Reduction, epi: Option<&Epilogue>, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    if !r.out.dtype().is_float() {
        return None;
    }
    if let Some(mm) = &r.matmul {
        if let Some((folded, fepi)) = fold_batch_rows(r, mm, epi) {
            return gemm_kernel(&folded, fepi.as_ref(), name, opts);
        }
        let mut o = *opts;
        // Matmuls always take the row operand's four-element loads: a network has
        // few distinct ones, so their longer driver compile costs little.
        o.vec4_reduction = true;
        // Few rows (a matrix-vector product such as a classifier's batch-1 dense
        // layer): a row tile as tall as the rows and one column per thread, so
        // neighbouring threads read neighbouring columns and no work is wasted on
        // clamped rows.
        let (tm, _) = opts.matmul_tile;
        let threads = opts.matmul_threads.0 * opts.matmul_threads.1;
        let rows = const_extent(&r.spatial[mm.i].1);
        if let Some(m) = rows.filter(|&m| m < i64::from(tm)) {
            o.matmul_tile = ((m.max(1) as u32).next_power_of_two().min(tm), 1);
            o.matmul_threads = (1, threads);
        }
        let cols = const_extent(&r.spatial[mm.j].1);
        let batch = r
            .spatial
            .iter()
            .enumerate()
            .filter(|(n, _)| *n != mm.i && *n != mm.j)
            .try_fold(1i64, |a, (_, (_, e))| const_extent(e).map(|n| a.saturating_mul(n)));
        o.matmul_tile = fill_groups(rows, cols, batch, &o);
        let plan = GemmPlan::of_matmul(mm);
        let split = rows.is_none() && opts.few_rows_max > 0;
        let mut k = matmul_kernel(r, &plan, epi, name.to_string(), &o);
        if split {
            // A symbolic row count (a linear layer over a prompt of any length): the
            // register tiles above for many rows, and beside them the few-row tiling,
            // each dispatched only for the row counts it suits.
            let mut few = o;
            few.matmul_tile = FEW_ROWS_TILE;
            few.matmul_threads = (1, threads);
            let mut small = matmul_kernel(r, &plan, epi, format!("{name}{FEW_ROWS_SUFFIX}"), &few);
            let iext = expr::cast(r.spatial[mm.i].1.clone(), DataType::INT64);
            let cond = bin(BinOp::Le, iext, PrimExpr::int(i64::from(opts.few_rows_max)));
            guard_grid(&mut small, &cond, true);
            guard_grid(&mut k, &cond, false);
            k.alternatives.push(small);
        }
        return Some(k);
    }
    if !opts.implicit_gemm {
        return None;
    }
    let g = implicit_gemm(r)?;
    let cols =
        g.js.iter()
            .try_fold(1i64, |a, &j| const_extent(&r.spatial[j].1).map(|n| a.saturating_mul(n)));
    // Few rows or columns leave most of a register tile idle.
    let rows = const_extent(&r.spatial[g.i].1);
    if !(rows.is_some_and(|n| n >= MIN_GEMM_EXTENT) && cols.is_some_and(|n| n >= MIN_GEMM_EXTENT)) {
        return None;
    }
    let mut o = *opts;
    let batch = r
        .spatial
        .iter()
        .enumerate()
        .filter(|(n, _)| *n != g.i && !g.js.contains(n))
        .try_fold(1i64, |a, (_, (_, e))| const_extent(e).map(|n| a.saturating_mul(n)));
    o.matmul_threads = match (rows, cols, batch) {
        (Some(m), Some(n), Some(b)) if opts.parallel_groups > 0 => balanced_threads(m, n, b, opts),
        _ => gemm_threads(rows, cols, opts),
    };
    if o.min_gemm_groups > 0 {
        // Smaller register tiles for a small convolution, then threads for them.
        o.matmul_tile = fill_groups(rows, cols, batch, &o);
        let tiled = ScheduleOptions {
            matmul_tile: o.matmul_tile,
            ..*opts
        };
        o.matmul_threads = gemm_threads(rows, cols, &tiled);
    }
    // The largest convolutions (a classifier's 1x1 convolution, ResNet's
    // projections) take the four-element weight loads whatever the option: a few
    // kernels' longer driver compile buys a third off the network's biggest layers.
    let macs = [rows, cols, batch, const_extent(&total_of(&r.reduce))]
        .into_iter()
        .try_fold(1i64, |a, n| n.map(|n| a.saturating_mul(n)));
    if macs.is_some_and(|m| m >= VEC4_MIN_MACS) {
        o.vec4_reduction = true;
    }
    Some(matmul_kernel(r, &g, epi, name.to_string(), &o))
}

/// A batched matmul whose batch loop only re-indexes the rows (`[B, M, K] x [K, N]`,
/// as a linear layer over a sequence is written): the batch loop folded into the
/// rows, so the GEMM has `B*M` rows and its row tiles are not padded per batch
/// (`M = 32` rows in 64-row tiles would leave half the threads idle). Folds the
/// loop just outside the rows while it is one the column operand does not read,
/// the extents are constant and the row operand's and the output's flat indices
/// are affine with the batch stride `M` times the row stride (so `idx(b, i) =
/// idx(0, M*b + i)`); any other use (the epilogue's operands) reads the batch and
/// row back as `f / M` and `f % M`. `None` when nothing folds.
fn fold_batch_rows(r: &Reduction, mm: &Matmul, epi: Option<&Epilogue>) -> Option<(Reduction, Option<Epilogue>)> {
    if mm.i == 0 || mm.j <= mm.i {
        return None;
    }
    let (bv, bext) = r.spatial[mm.i - 1].clone();
    let (iv, iext) = r.spatial[mm.i].clone();
    let nb = const_extent(&bext)?;
    if nb == 1 && const_extent(&iext).is_none() {
        return drop_unit_batch(r, mm, epi);
    }
    let m = const_extent(&iext)?;
    // A batch of one folds too: its loop index, always 0, would otherwise stay in
    // every row address (a `[1, M, K] x [K, N]` linear layer ran 2-3x slower on lavapipe).
    if nb < 1 || m <= 0 || expr::uses_var(&mm.y, &bv) || nb.checked_mul(m)? > i64::from(i32::MAX) {
        return None;
    }
    let vars = |extra: &[(TirVar, PrimExpr)]| -> Vec<TirVar> {
        r.spatial.iter().chain(extra).map(|(v, _)| v.clone()).collect()
    };
    // `(coef of b, coef of i)` of a load's (or an index's) flat index over every loop.
    let strides = |idx: &PrimExpr, all: &[TirVar]| -> Option<(i64, i64)> {
        let (c, _) = affine(idx, all)?;
        let at = |v: &TirVar| all.iter().position(|x| x.id() == v.id()).map(|t| c[t]);
        Some((at(&bv)?, at(&iv)?))
    };
    let folds = |(cb, ci): (i64, i64)| ci.checked_mul(m) == Some(cb);
    let all = vars(&r.reduce);
    let relax_ir::tir::PrimExprKind::BufferLoad { indices, .. } = mm.x.without_casts().kind() else {
        return None;
    };
    let [xidx] = indices.as_slice() else {
        return None;
    };
    if !folds(strides(xidx, &all)?) || !folds(strides(&r.out_index, &vars(&[]))?) {
        return None;
    }
    let f = TirVar::new("bi", iv.dtype());
    // Exact for indices affine as checked: idx(0, f) = ci*(M*b + i) + rest.
    let mut at_f = expr::VarMap::new();
    at_f.insert(bv.id(), PrimExpr::int_of(0, bv.dtype()));
    at_f.insert(iv.id(), f.to_expr());
    // Any expression: b = f / M, i = f % M.
    let mut split = expr::VarMap::new();
    let mc = PrimExpr::int_of(m, f.dtype());
    split.insert(
        bv.id(),
        expr::cast(bin(BinOp::Div, f.to_expr(), mc.clone()), bv.dtype()),
    );
    split.insert(iv.id(), expr::cast(bin(BinOp::Mod, f.to_expr(), mc), iv.dtype()));
    let x = expr::subst(&mm.x, &at_f);
    let rhs = expr::map_expr(&r.rhs, &mut |e| crate::lower::expr_eq(e, &mm.x).then(|| x.clone()));
    let mut spatial = r.spatial.clone();
    spatial[mm.i] = (f, PrimExpr::int_of(nb * m, iext.dtype()));
    spatial.remove(mm.i - 1);
    let folded = Reduction {
        spatial,
        reduce: r.reduce.clone(),
        out: r.out.clone(),
        out_index: expr::subst(&r.out_index, &at_f),
        init: expr::subst(&r.init, &split),
        op: r.op,
        rhs: expr::subst(&rhs, &split),
        matmul: Some(Matmul {
            i: mm.i - 1,
            j: mm.j - 1,
            x,
            y: mm.y.clone(),
        }),
    };
    let epi = epi.map(|e| Epilogue {
        acc: e.acc.clone(),
        out: e.out.clone(),
        index: expr::subst(&e.index, &split),
        value: expr::subst(&e.value, &split),
    });
    // Fold any further batch loop into the new rows.
    match fold_batch_rows(&folded, folded.matmul.as_ref()?, epi.as_ref()) {
        Some(more) => Some(more),
        None => Some((folded, epi)),
    }
}

/// A batch loop of extent 1 just outside symbolic rows (`[1, m, K] x [K, N]`):
/// removed, its index replaced by 0 everywhere, so the row operand's address is
/// the row's alone (`i * K + k`, whose alignment the four-element loads need).
fn drop_unit_batch(r: &Reduction, mm: &Matmul, epi: Option<&Epilogue>) -> Option<(Reduction, Option<Epilogue>)> {
    let bv = r.spatial[mm.i - 1].0.clone();
    let mut zero = expr::VarMap::new();
    zero.insert(bv.id(), PrimExpr::int_of(0, bv.dtype()));
    let at = |e: &PrimExpr| expr::simplify(&expr::subst(e, &zero));
    let x = at(&mm.x);
    let y = at(&mm.y);
    let rhs = replace_operands(&r.rhs, (&mm.x, &mm.y), (&x, &y));
    let mut spatial = r.spatial.clone();
    spatial.remove(mm.i - 1);
    let folded = Reduction {
        spatial,
        reduce: r.reduce.clone(),
        out: r.out.clone(),
        out_index: at(&r.out_index),
        init: at(&r.init),
        op: r.op,
        rhs: expr::subst(&rhs, &zero),
        matmul: Some(Matmul {
            i: mm.i - 1,
            j: mm.j - 1,
            x,
            y,
        }),
    };
    let epi = epi.map(|e| Epilogue {
        acc: e.acc.clone(),
        out: e.out.clone(),
        index: at(&e.index),
        value: at(&e.value),
    });
    Some((folded, epi))
}

/// `e` with every occurrence of the operand loads `from` (row, column) replaced by
/// `to` (the same order).
fn replace_operands(e: &PrimExpr, from: (&PrimExpr, &PrimExpr), to: (&PrimExpr, &PrimExpr)) -> PrimExpr {
    expr::map_expr(e, &mut |x| {
        if crate::lower::expr_eq(x, from.0) {
            Some(to.0.clone())
        } else if crate::lower::expr_eq(x, from.1) {
            Some(to.1.clone())
        } else {
            None
        }
    })
}

/// Multiply-adds from which an implicit GEMM always reads its row operand four
/// reduction steps at a time (see `ScheduleOptions::vec4_reduction`).
const VEC4_MIN_MACS: i64 = 64 << 20;

/// Invocations a software adapter runs together (one SIMD vector: lavapipe's
/// 256-bit vectors hold 8 lanes); a workgroup costs its size rounded up to it.
const SIMD_LANES: i64 = 8;

/// Fixed cost of one workgroup, in invocation-tiles (launch and tile setup).
const GROUP_OVERHEAD: i64 = 4;

/// The register tile (rows, cols per thread) for a GEMM of `rows x cols` outputs
/// (times `batch`) in workgroups of `opts.matmul_threads`: `opts.matmul_tile`, or,
/// while that makes fewer than `opts.min_gemm_groups` workgroups, smaller tiles
/// (each side halved, the longer first, down to one output per thread). Unknown
/// extents keep the tile.
fn fill_groups(rows: Option<i64>, cols: Option<i64>, batch: Option<i64>, opts: &ScheduleOptions) -> (u32, u32) {
    let (mut tm, mut tn) = opts.matmul_tile;
    let (Some(m), Some(n), Some(b)) = (rows, cols, batch) else {
        return (tm, tn);
    };
    let (ty, tx) = (
        i64::from(opts.matmul_threads.0.max(1)),
        i64::from(opts.matmul_threads.1.max(1)),
    );
    let groups = |tm: u32, tn: u32| {
        let ceil = |a: i64, d: i64| (a + d - 1) / d.max(1);
        b.max(1)
            .saturating_mul(ceil(m, ty * i64::from(tm)))
            .saturating_mul(ceil(n, tx * i64::from(tn)))
    };
    while groups(tm, tn) < i64::from(opts.min_gemm_groups) && (tm > 1 || tn > 1) {
        if tm >= tn && tm > 1 {
            tm /= 2;
        } else {
            tn /= 2;
        }
    }
    (tm.max(1), tn.max(1))
}

/// Threads (rows, cols) of an implicit-GEMM workgroup when the adapter runs
/// `opts.parallel_groups` workgroups at once: of every shape up to the default
/// workgroup size, the one whose rounds of workgroups over the workers cost least
/// (each workgroup costs its threads, in whole SIMD vectors, plus a fixed
/// overhead), larger workgroups on ties. A 13x13 output with 48 channels then runs
/// as six 24-thread workgroups (three rounds on two workers) instead of three
/// 64-thread ones (two rounds, with a quarter of the rows and an eighth of the
/// columns padding).
fn balanced_threads(rows: i64, cols: i64, batch: i64, opts: &ScheduleOptions) -> (u32, u32) {
    let total = i64::from((opts.matmul_threads.0 * opts.matmul_threads.1).max(1));
    let (tm, tn) = (
        i64::from(opts.matmul_tile.0.max(1)),
        i64::from(opts.matmul_tile.1.max(1)),
    );
    let workers = i64::from(opts.parallel_groups.max(1));
    let ceil = |a: i64, b: i64| (a + b - 1) / b;
    let (rmax, cmax) = (ceil(rows, tm).clamp(1, total), ceil(cols, tn).clamp(1, total));
    // (cost, threads, rows, cols) of every shape.
    let mut shapes = Vec::new();
    for r in 1..=rmax {
        for c in 1..=cmax.min(total / r) {
            let t = r * c;
            if t % SIMD_LANES != 0 && !(r == rmax && c == cmax) {
                continue;
            }
            let groups = batch
                .max(1)
                .saturating_mul(ceil(rows, r * tm))
                .saturating_mul(ceil(cols, c * tn));
            let lanes = ceil(t, SIMD_LANES) * SIMD_LANES;
            shapes.push((ceil(groups, workers).saturating_mul(lanes + GROUP_OVERHEAD), t, r, c));
        }
    }
    // Within 3% of the cheapest: the largest workgroup, then the squarest.
    let cheapest = shapes.iter().map(|s| s.0).min().unwrap_or(0);
    shapes
        .into_iter()
        .filter(|s| s.0.saturating_mul(100) <= cheapest.saturating_mul(103))
        .min_by_key(|&(cost, t, r, c)| (-t, (r - c).abs(), cost))
        .map_or((1, 1), |(_, _, r, c)| (r as u32, c as u32))
}

/// A multiply-accumulate reduction that is a GEMM over some of its loops, such as
/// a convolution (`out[n, co, h, w] += pad[n, ci, h + kh, w + kw] * W[co, ci, kh, kw]`)
/// as an implicit GEMM: rows `i` are a spatial loop only `x` reads (output
/// channels), columns every spatial loop only `y` reads (all output pixels:
/// `n`, `h`, `w`), the reduction is every reduction loop (input channels x window,
/// decomposed from one fused index), and the other spatial loops are a batch.
/// Depthwise and grouped convolutions (both operands read the channel) do not
/// match and keep the generic schedule.
fn implicit_gemm(r: &Reduction) -> Option<GemmPlan> {
    if r.op != BinOp::Add || r.reduce.is_empty() || r.spatial.len() < 2 {
        return None;
    }
    let relax_ir::tir::PrimExprKind::Binary { op: BinOp::Mul, a, b } = r.rhs.without_casts().kind() else {
        return None;
    };
    if load_count(a) == 0 || load_count(b) == 0 {
        return None;
    }
    let uses = |e: &PrimExpr, v: &TirVar| expr::uses_var(e, v);
    let reads_reduction = |e: &PrimExpr| r.reduce.iter().any(|(v, _)| uses(e, v));
    if !reads_reduction(a) || !reads_reduction(b) {
        return None;
    }
    let only = |p: &PrimExpr, q: &PrimExpr| -> Vec<usize> {
        r.spatial
            .iter()
            .enumerate()
            .filter(|(_, (v, _))| uses(p, v) && !uses(q, v) && uses(&r.out_index, v))
            .map(|(n, _)| n)
            .collect()
    };
    // Rows: the operand with one loop of its own (a convolution's weight: the output
    // channel) if there is one; columns: all of the other operand's own loops.
    let mut plans: Vec<(usize, GemmPlan)> = Vec::new();
    for (x, y) in [(a, b), (b, a)] {
        let (xs, js) = (only(x, y), only(y, x));
        if let (Some(&i), false) = (xs.last(), js.is_empty()) {
            plans.push((
                xs.len(),
                GemmPlan {
                    i,
                    js,
                    x: x.clone(),
                    y: y.clone(),
                },
            ));
        }
    }
    let best = plans.iter().position(|(n, _)| *n == 1).unwrap_or(0);
    (best < plans.len()).then(|| plans.swap_remove(best).1)
}

/// Threads (rows, cols) of an implicit-GEMM workgroup: as many column threads as
/// the columns need up to the default, as many row threads as the rows need (few
/// output channels leave no idle rows), then any threads left to the columns.
fn gemm_threads(rows: Option<i64>, cols: Option<i64>, opts: &ScheduleOptions) -> (u32, u32) {
    let total = (opts.matmul_threads.0 * opts.matmul_threads.1).max(1);
    let need = |n: Option<i64>, per: u32| {
        n.map_or(total, |n| {
            let per = i64::from(per.max(1));
            (((n + per - 1) / per).clamp(1, i64::from(total)) as u32).next_power_of_two()
        })
    };
    let (rn, cn) = (need(rows, opts.matmul_tile.0), need(cols, opts.matmul_tile.1));
    let c = cn.min(opts.matmul_threads.1.max(1)).min(total);
    let r = rn.min(total / c).max(1);
    let c = cn.max(c).min(total / r).max(1);
    (r, fit_columns(c, cols, opts.matmul_tile.1))
}

/// Column threads for `cols` output columns of `tn` each: of `c` and the counts
/// down to just over half of it, the one whose column blocks pad the columns
/// least (the largest on ties). 14x14 and 7x7 outputs (196 and 49 columns) then
/// pad 2% and 14% instead of 31% each with 64-column blocks; the workgroup is not
/// a power of two.
fn fit_columns(c: u32, cols: Option<i64>, tn: u32) -> u32 {
    let (Some(n), tn) = (cols.filter(|&n| n > 0), i64::from(tn.max(1))) else {
        return c;
    };
    let padded = |c: u32| {
        let block = i64::from(c) * tn;
        (n + block - 1) / block * block
    };
    let mut best = c;
    for k in (c / 2 + 1..c).rev() {
        if padded(k) < padded(best) {
            best = k;
        }
    }
    best
}

/// Register-blocked matmul: a workgroup of `TY x TX` threads computes a
/// `(TY*TM) x (TX*TN)` block of outputs; each thread a `TM x TN` tile.
fn matmul_kernel(
    r: &Reduction,
    mm: &GemmPlan,
    epi: Option<&Epilogue>,
    name: String,
    opts: &ScheduleOptions,
) -> GpuKernel {
    let (tm, tn) = (opts.matmul_tile.0 as i64, opts.matmul_tile.1 as i64);
    let (ty, tx_n) = (opts.matmul_threads.0 as i64, opts.matmul_threads.1 as i64);
    let (bm, bn) = (ty * tm, tx_n * tn);
    let [bx, tx] = int_vars(["bx", "tx"]);
    let (iv, iext) = r.spatial[mm.i].clone();
    let cols: Vec<(TirVar, PrimExpr)> = mm.js.iter().map(|&j| r.spatial[j].clone()).collect();
    let jext = if cols.len() == 1 {
        cols[0].1.clone()
    } else {
        total_of(&cols)
    };
    // One reduction loop, or several fused into one index (decomposed in the loop).
    let (kv, kext) = if r.reduce.len() == 1 {
        r.reduce[0].clone()
    } else {
        (TirVar::new("kf", DataType::INT32), to_i32(&total_of(&r.reduce)))
    };
    let dt = r.out.dtype();
    let xdt = mm.x.dtype();
    let ydt = mm.y.dtype();
    let acc = Buffer::with_scope("acc", dt, vec![PrimExpr::int(tm * tn)], "local");
    let xs = Buffer::with_scope("xr", xdt, vec![PrimExpr::int(tm)], "local");
    let ys = Buffer::with_scope("yr", ydt, vec![PrimExpr::int(tn)], "local");
    let [ii, jj, i0, j0, nbm, nbn] = int_vars(["ii", "jj", "i0", "j0", "nbm", "nbn"]);
    let m32 = to_i32(&iext);
    let n32 = to_i32(&jext);
    let ld = |b: &Buffer, i: PrimExpr| PrimExpr::load(b, vec![i]);
    let acc_idx = add(mul(ii.to_expr(), i32c(tn)), jj.to_expr());
    // Row / column of this tile element; loads use clamped indices so every read is
    // in bounds, stores are guarded.
    let irow = add(i0.to_expr(), ii.to_expr());
    let jcol = add(j0.to_expr(), jj.to_expr());
    let clamp = |e: PrimExpr, ext: &PrimExpr| {
        bin(
            BinOp::Max,
            bin(BinOp::Min, e, bin(BinOp::Sub, ext.clone(), i32c(1))),
            i32c(0),
        )
    };
    let mut xmap = expr::VarMap::new();
    xmap.insert(iv.id(), expr::cast(clamp(irow.clone(), &m32), iv.dtype()));
    // The column loops' values at this thread's columns: one column loop is the
    // (clamped) column itself; several are decomposed from it once, before the
    // reduction, into per-column registers `cj<t>[jj]`.
    let mut ymap = expr::VarMap::new();
    let mut elem_map = expr::VarMap::new();
    let mut col_regs = Vec::new();
    let mut col_init = Vec::new();
    if let [(jv, _)] = cols.as_slice() {
        ymap.insert(jv.id(), expr::cast(clamp(jcol.clone(), &n32), jv.dtype()));
        elem_map.insert(jv.id(), expr::cast(jcol.clone(), jv.dtype()));
    } else {
        let jc = clamp(jcol.clone(), &n32);
        let mut stride = i32c(1);
        let mut vals = Vec::new();
        for (t, (v, e)) in cols.iter().enumerate().rev() {
            let q = bin(BinOp::Div, jc.clone(), stride.clone());
            let val = if t == 0 { q } else { bin(BinOp::Mod, q, to_i32(e)) };
            vals.push((t, v.clone(), val));
            stride = mul(stride, to_i32(e));
        }
        vals.reverse();
        for (t, v, val) in vals {
            let b = Buffer::with_scope(format!("cj{t}"), DataType::INT32, vec![PrimExpr::int(tn)], "local");
            col_init.push(store(&b, jj.to_expr(), val));
            let reg = expr::cast(ld(&b, jj.to_expr()), v.dtype());
            ymap.insert(v.id(), reg.clone());
            elem_map.insert(v.id(), reg);
            col_regs.push(b);
        }
    }
    // Each operand's flat index split into a part of the rows (columns) and a part
    // of the reduction: the first is computed once per thread into `xb` (`yb`), so
    // a reduction step adds one term per load.
    let red_vars: Vec<TirVar> = r.reduce.iter().map(|(v, _)| v.clone()).collect();
    let mut bases = Vec::new();
    let mut base_init = Vec::new();
    let mut operand =
        |load: &PrimExpr, own: &[TirVar], map: &expr::VarMap, name: &str, lane: &TirVar, n: i64| match split_load(
            load, own, &red_vars,
        ) {
            Some((buf, outer, inner)) => {
                let b = Buffer::with_scope(name, DataType::INT32, vec![PrimExpr::int(n)], "local");
                let split = Split {
                    buf: buf.clone(),
                    outer: outer.clone(),
                    inner: inner.clone(),
                    base: b.clone(),
                };
                let dt = outer.dtype();
                base_init.push(unrolled(
                    lane,
                    n,
                    store(
                        &b,
                        lane.to_expr(),
                        expr::cast(expr::subst(&outer, map), DataType::INT32),
                    ),
                ));
                let idx = add(expr::cast(ld(&b, lane.to_expr()), dt), expr::cast(inner, dt));
                bases.push(b);
                (
                    expr::subst(&replace_load(load, &PrimExpr::load(&buf, vec![idx])), map),
                    Some(split),
                )
            }
            None => (expr::subst(load, map), None),
        };
    let (x_at, x_split) = operand(&mm.x, std::slice::from_ref(&iv), &xmap, "xb", &ii, tm);
    let col_vars: Vec<TirVar> = cols.iter().map(|(v, _)| v.clone()).collect();
    let (y_at, y_split) = operand(&mm.y, &col_vars, &ymap, "yb", &jj, tn);
    // rhs with the loads replaced by the register copies.
    let xr = ld(&xs, ii.to_expr());
    let yr = ld(&ys, jj.to_expr());
    let rhs = replace_operands(&r.rhs, (&mm.x, &mm.y), (&xr, &yr));
    elem_map.insert(iv.id(), expr::cast(irow.clone(), iv.dtype()));
    let init_at = expr::subst(&r.init, &elem_map);
    let out_at = expr::subst(&r.out_index, &elem_map);
    // The accumulator's initialisation, update and write-back loop over rows (the
    // driver unrolls these short constant loops) and unroll over columns: fully
    // unrolled, they make the WGSL large enough for naga's front end (superlinear in
    // a function's expressions) to cost milliseconds per kernel, with no measurable
    // gain at run time on lavapipe.
    let row_loop = if opts.unroll_tiles {
        ForKind::Unrolled
    } else {
        ForKind::Serial
    };
    let init = for_loop(
        &ii,
        i32c(tm),
        row_loop,
        unrolled(&jj, tn, store(&acc, acc_idx.clone(), init_at)),
    );
    let kstep = |body: Stmt| {
        if r.reduce.len() == 1 {
            body
        } else {
            decompose(kv.to_expr(), &r.reduce, body)
        }
    };
    // A bounds condition of the column operand (a convolution's padding) that reads
    // only some reduction loops (the window) is evaluated once per column in an
    // outer loop over those, the other reduction loops (input channels) inner.
    let hoisted = hoist_condition(&y_at, &r.reduce, &jj, tn);
    let y_at = hoisted.as_ref().map_or(y_at, |h| h.operand.clone());
    // Four-element loads: the column operand along the columns when four
    // neighbouring columns are four neighbouring elements at an aligned offset (a
    // matmul's or a 1x1 convolution's input); with `vec4_reduction`, also the row
    // operand along the reduction when it is contiguous there (a weight's input
    // channels x window), four reduction steps unrolled per iteration.
    let kconst = const_extent(&kext);
    let plain_f32 = |e: &PrimExpr| {
        e.dtype() == DataType::FLOAT32
            && load_count(e) == 1
            && matches!(e.kind(), relax_ir::tir::PrimExprKind::BufferLoad { .. })
    };
    let x_vec = x_split.as_ref().filter(|sp| {
        opts.vec4_reduction
            && hoisted.is_none()
            && plain_f32(&mm.x)
            && kconst.is_some_and(|k| k % 4 == 0)
            && numel_multiple_of_4(&sp.buf)
            && contiguous(&sp.inner, &r.reduce)
            && aligned(&sp.outer, std::slice::from_ref(&iv))
    });
    let y_vec = y_split.as_ref().filter(|sp| {
        hoisted.is_none()
            && plain_f32(&mm.y)
            && tn % 4 == 0
            && const_extent(&jext).is_some_and(|n| n % 4 == 0)
            && numel_multiple_of_4(&sp.buf)
            && affine(&sp.inner, &red_vars).is_some_and(|(c, k)| {
                // Loops of extent 1 (a 1x1 window) are always 0.
                k % 4 == 0
                    && c.iter()
                        .zip(&r.reduce)
                        .all(|(c, (_, e))| c % 4 == 0 || const_extent(e) == Some(1))
            })
            && contiguous(&sp.outer, &cols)
    });
    let v4 = TirVar::new("v4", DataType::INT32);
    let y_loads = match y_vec {
        Some(sp) => unrolled(
            &v4,
            tn / 4,
            vload4(
                &ys,
                mul(v4.to_expr(), i32c(4)),
                &sp.buf,
                bin(
                    BinOp::Div,
                    add(
                        ld(&sp.base, mul(v4.to_expr(), i32c(4))),
                        expr::cast(sp.inner.clone(), DataType::INT32),
                    ),
                    i32c(4),
                ),
            ),
        ),
        None => unrolled(&jj, tn, store(&ys, jj.to_expr(), y_at)),
    };
    let update_with = |x: PrimExpr, y: PrimExpr| {
        let rhs = replace_operands(&rhs, (&xr, &yr), (&x, &y));
        for_loop(
            &ii,
            i32c(tm),
            row_loop,
            unrolled(
                &jj,
                tn,
                store(
                    &acc,
                    acc_idx.clone(),
                    PrimExpr::binary(r.op, ld(&acc, acc_idx.clone()), rhs),
                ),
            ),
        )
    };
    let update = |x: PrimExpr| update_with(x, yr.clone());
    // With four-element row loads along the reduction, the column operand is loaded
    // four reduction steps at a time too when it is contiguous there (a weight read
    // untransposed, `NT_matmul`'s `w[j, k]`): `yr4[jj * 4 + kk]`.
    let y_vec_k = y_split.as_ref().filter(|sp| {
        y_vec.is_none()
            && hoisted.is_none()
            && plain_f32(&mm.y)
            && kconst.is_some_and(|k| k % 4 == 0)
            && numel_multiple_of_4(&sp.buf)
            && contiguous(&sp.inner, &r.reduce)
            && aligned(&sp.outer, &col_vars)
    });
    let x_loads = unrolled(&ii, tm, store(&xs, ii.to_expr(), x_at));
    let step = Stmt::Seq(vec![x_loads.clone(), y_loads.clone(), update(xr.clone())]);
    let kloop = match &hoisted {
        None if (x_vec.is_some() || y_vec_k.is_some()) && kconst.is_some() => {
            // Four reduction steps per iteration: each row's four weights in one load
            // into `xr4[ii * 4 + kk]` (`x_vec`), and each column's four elements into
            // `yr4[jj * 4 + kk]` (`y_vec_k`); an operand without its four-element
            // load is read one step at a time.
            let [k4, kk] = int_vars(["k4", "kk"]);
            let xs4 = Buffer::with_scope("xr4", xdt, vec![PrimExpr::int(tm * 4)], "local");
            let ys4 = Buffer::with_scope("yr4", ydt, vec![PrimExpr::int(tn * 4)], "local");
            let kbase = mul(k4.to_expr(), i32c(4));
            let load4 = |dst: &Buffer, lane: &TirVar, n: i64, sp: &Split| {
                unrolled(
                    lane,
                    n,
                    vload4(
                        dst,
                        mul(lane.to_expr(), i32c(4)),
                        &sp.buf,
                        bin(BinOp::Div, add(ld(&sp.base, lane.to_expr()), kbase.clone()), i32c(4)),
                    ),
                )
            };
            let mut loads = Vec::new();
            let mut per_step = Vec::new();
            let x = match x_vec {
                Some(sp) => {
                    loads.push(load4(&xs4, &ii, tm, sp));
                    ld(&xs4, add(mul(ii.to_expr(), i32c(4)), kk.to_expr()))
                }
                None => {
                    per_step.push(x_loads.clone());
                    xr.clone()
                }
            };
            let y = match y_vec_k {
                Some(sp) => {
                    loads.push(load4(&ys4, &jj, tn, sp));
                    ld(&ys4, add(mul(jj.to_expr(), i32c(4)), kk.to_expr()))
                }
                None => {
                    per_step.push(y_loads.clone());
                    yr.clone()
                }
            };
            per_step.push(update_with(x, y));
            let sub = unrolled(
                &kk,
                4,
                let_(
                    &kv,
                    expr::cast(add(kbase.clone(), kk.to_expr()), kv.dtype()),
                    kstep(Stmt::Seq(per_step)),
                ),
            );
            loads.push(sub);
            let used: Vec<Buffer> = [(x_vec.is_some(), xs4), (y_vec_k.is_some(), ys4)]
                .into_iter()
                .filter_map(|(used, b)| used.then_some(b))
                .collect();
            alloc_all(
                used,
                for_loop(&k4, i32c(kconst.unwrap_or(0) / 4), ForKind::Serial, Stmt::Seq(loads)),
            )
        }
        None => for_loop(&kv, kext.clone(), ForKind::Serial, kstep(step)),
        Some(h) => {
            let nest = |name: &str, loops: &[(TirVar, PrimExpr)], body: Stmt| {
                let v = TirVar::new(name, DataType::INT32);
                for_loop(
                    &v,
                    to_i32(&total_of(loops)),
                    ForKind::Serial,
                    decompose(v.to_expr(), loops, body),
                )
            };
            let inner = nest("kf", &h.inner, step);
            let mask = unrolled(&jj, tn, store(&h.mask, jj.to_expr(), h.cond.clone()));
            let outer = nest("kw", &h.outer, Stmt::Seq(vec![mask, inner]));
            Stmt::Alloc {
                buffer: h.mask.clone(),
                body: Box::new(outer),
            }
        }
    };
    // With an epilogue the write-back body is large: a loop the driver might not
    // unroll would index the accumulator dynamically and keep it out of registers
    // for the whole kernel, so it is unrolled here.
    // The epilogue's loads and calls that read neither the accumulator nor a column
    // loop (a batch norm's per-channel statistics) are computed once per tile row,
    // at the row's clamped index, before its columns.
    let mut row_invariants: Vec<(TirVar, PrimExpr)> = Vec::new();
    let stored = match epi {
        None => store(&r.out, out_at, ld(&acc, acc_idx.clone())),
        Some(e) => {
            let tile_acc = ld(&acc, acc_idx.clone());
            let value = expr::map_expr(&e.value, &mut |x| {
                if matches!(x.kind(), relax_ir::tir::PrimExprKind::BufferLoad { buffer, .. } if *buffer == e.acc) {
                    return Some(tile_acc.clone());
                }
                if expr::loads_buffer(x, &e.acc)
                    || col_vars.iter().any(|v| expr::uses_var(x, v))
                    || !x.dtype().is_float()
                    || load_count(x) == 0
                {
                    return None;
                }
                let v = TirVar::new(format!("ep{}", row_invariants.len()), x.dtype());
                row_invariants.push((v.clone(), expr::subst(x, &xmap)));
                Some(v.to_expr())
            });
            store(&e.out, expr::subst(&e.index, &elem_map), expr::subst(&value, &elem_map))
        }
    };
    let row = unrolled(
        &jj,
        tn,
        if_(
            bin(
                BinOp::And,
                bin(BinOp::Lt, irow.clone(), m32.clone()),
                bin(BinOp::Lt, jcol.clone(), n32.clone()),
            ),
            stored,
        ),
    );
    let row = row_invariants
        .into_iter()
        .rev()
        .fold(row, |body, (v, value)| let_(&v, value, body));
    // With an epilogue the write-back body is large: a loop the driver might not
    // unroll would index the accumulator dynamically and keep it out of registers
    // for the whole kernel, so it is unrolled here.
    let write = for_loop(
        &ii,
        i32c(tm),
        if epi.is_some() { ForKind::Unrolled } else { row_loop },
        row,
    );
    let mut steps = Vec::new();
    if !col_init.is_empty() {
        steps.push(unrolled(&jj, tn, Stmt::Seq(col_init)));
    }
    steps.extend(base_init);
    steps.extend([init, kloop, write]);
    // The column registers and bases outermost (the last first), then the tiles.
    let mut scope: Vec<Buffer> = col_regs.into_iter().chain(bases).collect();
    scope.reverse();
    scope.extend([acc, xs, ys]);
    let tile = alloc_all(scope, Stmt::Seq(steps));
    // Workgroup -> (batch, block row, block col); thread -> tile.
    let batch: Vec<(TirVar, PrimExpr)> = r
        .spatial
        .iter()
        .enumerate()
        .filter(|(n, _)| *n != mm.i && !mm.js.contains(n))
        .map(|(_, x)| x.clone())
        .collect();
    let blk = TirVar::new("blk", DataType::INT32);
    let per_batch = mul(nbm.to_expr(), nbn.to_expr());
    let body = let_(
        &i0,
        add(
            mul(
                bin(
                    BinOp::Div,
                    bin(BinOp::Mod, bx.to_expr(), per_batch.clone()),
                    nbn.to_expr(),
                ),
                i32c(bm),
            ),
            if ty == 1 {
                i32c(0)
            } else {
                mul(bin(BinOp::Div, tx.to_expr(), i32c(tx_n)), i32c(tm))
            },
        ),
        let_(
            &j0,
            add(
                mul(bin(BinOp::Mod, bx.to_expr(), nbn.to_expr()), i32c(bn)),
                if ty == 1 {
                    mul(tx.to_expr(), i32c(tn))
                } else {
                    mul(bin(BinOp::Mod, tx.to_expr(), i32c(tx_n)), i32c(tn))
                },
            ),
            tile,
        ),
    );
    let body = let_(
        &blk,
        bin(BinOp::Div, bx.to_expr(), per_batch.clone()),
        decompose(blk.to_expr(), &batch, body),
    );
    let ceil = |e: &PrimExpr, b: i64| bin(BinOp::Div, add(e.clone(), i32c(b - 1)), i32c(b));
    let nbatch = total_of(&batch);
    let total = mul(mul(to_i32(&nbatch), per_batch), i32c(1));
    let body = let_(
        &nbm,
        ceil(&m32, bm),
        let_(&nbn, ceil(&n32, bn), if_(bin(BinOp::Lt, bx.to_expr(), total), body)),
    );
    let grid_m = bin(
        BinOp::FloorDiv,
        add(expr::cast(iext, DataType::INT64), PrimExpr::int(bm - 1)),
        PrimExpr::int(bm),
    );
    let grid_n = bin(
        BinOp::FloorDiv,
        add(expr::cast(jext, DataType::INT64), PrimExpr::int(bn - 1)),
        PrimExpr::int(bn),
    );
    let grid = expr::simplify(&mul(mul(nbatch, grid_m), grid_n));
    GpuKernel {
        name,
        body,
        workgroup_size: [(ty * tx_n) as u32, 1, 1],
        grid: Grid::Linear(grid),
        builtins: vec![(bx, Builtin::GroupLinear), (tx, Builtin::Local(0))],
        alternatives: Vec::new(),
        schedule: "",
    }
}

#[cfg(test)]
mod tests {
    use super::{balanced_threads, fit_columns};
    use crate::schedule::ScheduleOptions;

    #[test]
    fn balanced_workgroups_fill_the_workers() {
        let opts = ScheduleOptions {
            parallel_groups: 2,
            ..ScheduleOptions::default()
        };
        // (rows, cols) -> (row threads, column threads): SqueezeNet's 13x13 squeeze
        // (48 channels) and expand (192) layers, a 55x55 one (64 channels).
        for (m, n, want) in [
            (48, 169, (6, 4)),
            (64, 169, (8, 6)),
            (64, 3025, (8, 8)),
            (128, 729, (8, 8)),
        ] {
            let (r, c) = balanced_threads(m, n, 1, &opts);
            assert_eq!((r, c), want, "{m}x{n}");
            assert_eq!((r * c) % 8, 0);
        }
        // Tiny GEMMs take one workgroup covering everything.
        assert_eq!(balanced_threads(16, 9, 1, &opts), (2, 2));
    }

    #[test]
    fn column_threads_pad_the_columns_least() {
        // (threads, columns) -> threads: 14x14, 7x7, 56x56, 13x13, 28x28, 27x27 outputs.
        for (c, n, want) in [
            (8, 196, 5),
            (8, 49, 7),
            (8, 3136, 8),
            (8, 169, 8),
            (8, 784, 7),
            (8, 729, 5),
            (4, 9, 3),
        ] {
            assert_eq!(fit_columns(c, Some(n), 8), want, "{n} columns");
        }
        assert_eq!(fit_columns(8, None, 8), 8);
    }
}
