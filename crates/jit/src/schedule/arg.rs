//! `argmax` / `argmin` reductions (TVM's two-buffer tuple reduction: an index and
//! a value accumulator updated together) split over a workgroup per output.
//!
//! The lowered form one thread would run serially is
//!
//! ```text
//! for k in 0..R:
//!     if k == 0: I[o] = i0; V[o] = v0
//!     ni = Select(V[o] > x || V[o] == x && I[o] < k, I[o], k)
//!     nv = Select(V[o] > x, V[o], x)
//!     I[o] = ni; V[o] = nv
//! ```
//!
//! (`<` for `argmin`). Over more elements than a shader loop may run (lavapipe ends
//! every loop of an invocation after 65,535 trips), one thread silently drops the
//! rest, so these reductions get one workgroup per output instead: each thread
//! folds a contiguous chunk of the reduction in order, and the chunks combine
//! pairwise, neighbours first, in a tree in workgroup memory.
//!
//! The serial fold is not associative when the values hold a NaN (every comparison
//! with it is false, so a NaN replaces the accumulator and the next element
//! replaces the NaN). Each partial result therefore carries whether its chunk held
//! a NaN: a later chunk that did decides the result alone, and an accumulator
//! holding a NaN is replaced by the next value, exactly as the serial loop does.
//! With no NaN the fold is the maximum (minimum) by value with the first index
//! among equals, which is associative. The update is only ever applied to non-NaN
//! values, so a driver that assumes no NaNs cannot change the result.

use relax_ir::tir::{BinOp, Buffer, For, ForKind, Intrinsic, PrimExpr, PrimExprKind, Stmt, TirVar};
use relax_ir::DataType;

use super::{
    alloc_all, decompose, i32c, if_, int_vars, let_, steps_per_trip, store, to_i32, total_of, unrolled, Builtin,
    GpuKernel, Grid, ScheduleOptions, MAX_LOOP_TRIPS,
};
use crate::expr::{self, add, bin, mul};
use crate::lower::{expr_eq, for_loop};

/// A detected `argmax` / `argmin` stage.
struct ArgReduce {
    /// `Let` / `Assert` statements around the loops (kept around the kernel).
    wrappers: Vec<Stmt>,
    spatial: Vec<(TirVar, PrimExpr)>,
    reduce: Vec<(TirVar, PrimExpr)>,
    /// The index accumulator and the value accumulator, both at `at`.
    idx: Buffer,
    val: Buffer,
    at: PrimExpr,
    idx_init: PrimExpr,
    val_init: PrimExpr,
    /// `Gt` for argmax, `Lt` for argmin.
    cmp: BinOp,
    /// The element's index and value (in the reduction and spatial variables).
    x_idx: PrimExpr,
    x_val: PrimExpr,
}

/// TVM's update of the index accumulator: keep `ai` when `av` beats `xv` or ties
/// it with a smaller index.
fn upd_idx(cmp: BinOp, ai: &PrimExpr, av: &PrimExpr, xi: &PrimExpr, xv: &PrimExpr) -> PrimExpr {
    PrimExpr::select(
        PrimExpr::binary(
            BinOp::Or,
            PrimExpr::binary(cmp, av.clone(), xv.clone()),
            PrimExpr::binary(
                BinOp::And,
                PrimExpr::binary(BinOp::Eq, av.clone(), xv.clone()),
                PrimExpr::binary(BinOp::Lt, ai.clone(), xi.clone()),
            ),
        ),
        ai.clone(),
        xi.clone(),
    )
}

/// TVM's update of the value accumulator.
fn upd_val(cmp: BinOp, av: &PrimExpr, xv: &PrimExpr) -> PrimExpr {
    PrimExpr::select(PrimExpr::binary(cmp, av.clone(), xv.clone()), av.clone(), xv.clone())
}

/// A load of `b` at `at`.
fn is_load_at(e: &PrimExpr, b: &Buffer, at: &PrimExpr) -> bool {
    matches!(e.kind(), PrimExprKind::BufferLoad { buffer, indices } if buffer == b && indices.len() == 1 && expr_eq(&indices[0], at))
}

/// The store `b[i] = v` as its parts.
fn as_store(s: &Stmt) -> Option<(&Buffer, &PrimExpr, &PrimExpr)> {
    match s {
        Stmt::BufferStore {
            buffer, value, indices, ..
        } if indices.len() == 1 => Some((buffer, &indices[0], value)),
        _ => None,
    }
}

/// Statements of `s` (a sequence's items, or `s` itself), with empty sequences dropped.
fn items(s: &Stmt) -> Vec<&Stmt> {
    match s {
        Stmt::Seq(v) => v.iter().flat_map(items).collect(),
        s => vec![s],
    }
}

/// `cond` is `k0 == 0 && k1 == 0 && ...` over exactly the reduction variables.
fn is_first_iteration(cond: &PrimExpr, reduce: &[(TirVar, PrimExpr)]) -> bool {
    let mut terms = Vec::new();
    let mut stack = vec![cond];
    while let Some(e) = stack.pop() {
        match e.kind() {
            PrimExprKind::Binary { op: BinOp::And, a, b } => {
                stack.push(a);
                stack.push(b);
            }
            _ => terms.push(e),
        }
    }
    terms.len() == reduce.len()
        && reduce.iter().all(|(v, _)| {
            terms.iter().any(|t| match t.kind() {
                PrimExprKind::Binary { op: BinOp::Eq, a, b } => {
                    matches!(a.without_casts().kind(), PrimExprKind::Var(w) if w == v) && b.as_int() == Some(0)
                }
                _ => false,
            })
        })
}

fn detect(body: &Stmt) -> Option<ArgReduce> {
    let mut wrappers = Vec::new();
    let mut cur = body;
    loop {
        match cur {
            Stmt::Let { var, value, body } => {
                wrappers.push(let_(var, value.clone(), Stmt::Seq(vec![])));
                cur = body;
            }
            Stmt::Assert { cond, message, body } => {
                wrappers.push(Stmt::Assert {
                    cond: cond.clone(),
                    message: message.clone(),
                    body: Box::new(Stmt::Seq(vec![])),
                });
                cur = body;
            }
            _ => break,
        }
    }
    let mut spatial = Vec::new();
    let mut reduce = Vec::new();
    while let Stmt::For(For {
        var,
        min,
        extent,
        kind,
        body,
        ..
    }) = cur
    {
        if min.as_int() != Some(0) {
            return None;
        }
        match kind {
            ForKind::Parallel if reduce.is_empty() => spatial.push((var.clone(), extent.clone())),
            ForKind::Serial => reduce.push((var.clone(), extent.clone())),
            _ => return None,
        }
        cur = body;
    }
    if reduce.is_empty() {
        return None;
    }
    // if first: I[o] = i0; V[o] = v0
    let parts = items(cur);
    let [Stmt::If {
        cond,
        then_branch,
        else_branch: None,
    }, update] = parts[..]
    else {
        return None;
    };
    if !is_first_iteration(cond, &reduce) {
        return None;
    }
    let inits = items(then_branch);
    let [i1, i2] = inits[..] else {
        return None;
    };
    let ((b1, at1, v1), (b2, at2, v2)) = (as_store(i1)?, as_store(i2)?);
    // let ni = ...; let nv = ...; I[o] = ni; V[o] = nv (in either order).
    let Stmt::Let {
        var: l1,
        value: e1,
        body,
    } = update
    else {
        return None;
    };
    let Stmt::Let {
        var: l2,
        value: e2,
        body,
    } = &**body
    else {
        return None;
    };
    let stores = items(body);
    let [s1, s2] = stores[..] else {
        return None;
    };
    let ((c1, cat1, cv1), (c2, cat2, cv2)) = (as_store(s1)?, as_store(s2)?);
    let is_var = |e: &PrimExpr, v: &TirVar| matches!(e.kind(), PrimExprKind::Var(w) if w == v);
    // Which let goes to which buffer.
    let stored = |b: &Buffer| -> Option<&TirVar> {
        if c1 == b {
            [l1, l2].into_iter().find(|&l| is_var(cv1, l))
        } else if c2 == b {
            [l1, l2].into_iter().find(|&l| is_var(cv2, l))
        } else {
            None
        }
    };
    if !expr_eq(at1, at2) || !expr_eq(at1, cat1) || !expr_eq(at1, cat2) || b1 == b2 || c1 == c2 {
        return None;
    }
    let at = at1.clone();
    // Which accumulator holds the index: the one whose update checks out.
    let attempt = |idx: &Buffer, val: &Buffer, idx_init: &PrimExpr, val_init: &PrimExpr| {
        if !idx.dtype().is_integer() || idx.dtype().lanes != 1 || val.dtype().lanes != 1 {
            return None;
        }
        let (li, lv) = (stored(idx)?, stored(val)?);
        if li == lv {
            return None;
        }
        let (ei, ev) = if li == l1 { (e1, e2) } else { (e2, e1) };
        // ei = Select(cmp(V[o], x) || V[o] == x && I[o] < xi, I[o], xi)
        let PrimExprKind::Select { cond, f: xi, .. } = ei.kind() else {
            return None;
        };
        let PrimExprKind::Binary { op: BinOp::Or, a, .. } = cond.kind() else {
            return None;
        };
        let PrimExprKind::Binary { op: cmp, a: acc, b: xv } = a.kind() else {
            return None;
        };
        if !matches!(cmp, BinOp::Gt | BinOp::Lt) || !is_load_at(acc, val, &at) {
            return None;
        }
        let (ai, av) = (
            PrimExpr::load(idx, vec![at.clone()]),
            PrimExpr::load(val, vec![at.clone()]),
        );
        if !expr_eq(ei, &upd_idx(*cmp, &ai, &av, xi, xv)) || !expr_eq(ev, &upd_val(*cmp, &av, xv)) {
            return None;
        }
        // The element must not read the accumulators, nor the inits anything.
        for e in [xi, xv, idx_init, val_init, &at] {
            if expr::loads_buffer(e, idx) || expr::loads_buffer(e, val) {
                return None;
            }
        }
        if [idx_init, val_init, &at]
            .iter()
            .any(|e| reduce.iter().any(|(r, _)| expr::uses_var(e, r)))
        {
            return None;
        }
        // The element's index must grow with the serial order (the first index
        // wins a tie): the reduction variable itself, or the flat index over several.
        if !index_in_serial_order(xi, &reduce) {
            return None;
        }
        Some((*cmp, xi.clone(), xv.clone()))
    };
    let ((cmp, x_idx, x_val), idx, val, idx_init, val_init) = match attempt(b1, b2, v1, v2) {
        Some(found) => (found, b1, b2, v1, v2),
        None => (attempt(b2, b1, v2, v1)?, b2, b1, v2, v1),
    };
    Some(ArgReduce {
        wrappers,
        spatial,
        reduce,
        idx: idx.clone(),
        val: val.clone(),
        at,
        idx_init: idx_init.clone(),
        val_init: val_init.clone(),
        cmp,
        x_idx,
        x_val,
    })
}

/// `xi` is the reduction's position in its serial order (`k`, or the flat index
/// `(k0 * n1 + k1) * n2 + k2 ...` over several reduction loops), up to casts.
fn index_in_serial_order(xi: &PrimExpr, reduce: &[(TirVar, PrimExpr)]) -> bool {
    let Some(((last, _), outer)) = reduce.split_last() else {
        return false;
    };
    let e = xi.without_casts();
    if outer.is_empty() {
        return matches!(e.kind(), PrimExprKind::Var(v) if v == last);
    }
    // (flat of outer) * n_last + k_last
    let PrimExprKind::Binary { op: BinOp::Add, a, b } = e.kind() else {
        return false;
    };
    if !matches!(b.without_casts().kind(), PrimExprKind::Var(v) if v == last) {
        return false;
    }
    let PrimExprKind::Binary {
        op: BinOp::Mul,
        a: hi,
        b: n,
    } = a.without_casts().kind()
    else {
        return false;
    };
    let n_last = &reduce[reduce.len() - 1].1;
    ((n.as_int().is_some() && n.as_int() == n_last.as_int()) || expr_eq(n.without_casts(), n_last.without_casts()))
        && index_in_serial_order(hi, outer)
}

/// One workgroup per output for an `argmax` / `argmin` stage (see the module
/// documentation), or `None` when `body` is not one or the serial loop is short
/// and the outputs many (one thread per output is then faster).
pub(crate) fn arg_kernel(body: &Stmt, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    let a = detect(body)?;
    let red = a
        .reduce
        .iter()
        .try_fold(1i64, |p, (_, e)| e.as_int().map(|v| p.saturating_mul(v)));
    let outs = a
        .spatial
        .iter()
        .try_fold(1i64, |p, (_, e)| e.as_int().map(|v| p.saturating_mul(v)));
    let worthwhile = match (red, outs) {
        (Some(r), _) if r > MAX_LOOP_TRIPS => true,
        (Some(r), Some(s)) => r >= 256 && s <= 4096,
        (None, Some(s)) => s <= 4096,
        (Some(r), None) => r >= 256,
        (None, None) => false,
    };
    if !worthwhile || red == Some(0) {
        return None;
    }
    Some(build(a, name, opts))
}

fn build(a: ArgReduce, name: &str, opts: &ScheduleOptions) -> GpuKernel {
    let nt = i64::from(opts.reduce_threads.max(2).next_power_of_two());
    let [bx, tx] = int_vars(["bx", "tx"]);
    let (idt, vdt) = (a.idx.dtype(), a.val.dtype());
    let float = vdt.is_float();
    let z = PrimExpr::int(0);
    let ld = |b: &Buffer, i: PrimExpr| PrimExpr::load(b, vec![i]);
    let local = |n: &str, dt| Buffer::with_scope(n, dt, vec![PrimExpr::int(1)], "local");
    let shared = |n: &str, dt| Buffer::with_scope(n, dt, vec![PrimExpr::int(nt)], "shared");
    // This thread's partial result: has (0/1), nan (0/1), index, value.
    let (has, nan, si, sv) = (
        local("arg_has", DataType::INT32),
        local("arg_nan", DataType::INT32),
        local("arg_i", idt),
        local("arg_v", vdt),
    );
    let (w_has, w_nan, w_i, w_v) = (
        shared("red_has", DataType::INT32),
        shared("red_nan", DataType::INT32),
        shared("red_i", idt),
        shared("red_v", vdt),
    );
    let isnan = |e: PrimExpr| -> PrimExpr {
        if float {
            PrimExpr::intrinsic_call(Intrinsic::Isnan, DataType::BOOL, vec![e])
        } else {
            PrimExpr::bool(false)
        }
    };
    let nonzero = |e: PrimExpr| bin(BinOp::Ne, e, i32c(0));
    let or = |x: PrimExpr, y: PrimExpr| bin(BinOp::Or, x, y);
    // Fold (xi, xv) into (ai, av) held in `ib[ii]`, `vb[vi]` with flags in
    // `hb`/`nb`: a fresh accumulator (none yet, or holding a NaN) or a NaN
    // element takes the element; else TVM's update.
    let fold = |hb: &Buffer,
                nb: &Buffer,
                ib: &Buffer,
                vb: &Buffer,
                at: PrimExpr,
                xi: PrimExpr,
                xv: PrimExpr,
                x_nan: PrimExpr| {
        let (ai, av) = (ld(ib, at.clone()), ld(vb, at.clone()));
        let [ni, nv] = [TirVar::new("arg_ni", idt), TirVar::new("arg_nv", vdt)];
        let take = or(
            or(bin(BinOp::Eq, ld(hb, at.clone()), i32c(0)), x_nan.clone()),
            isnan(av.clone()),
        );
        let updated = let_(
            &ni,
            upd_idx(a.cmp, &ai, &av, &xi, &xv),
            let_(
                &nv,
                upd_val(a.cmp, &av, &xv),
                Stmt::Seq(vec![
                    store(ib, at.clone(), ni.to_expr()),
                    store(vb, at.clone(), nv.to_expr()),
                ]),
            ),
        );
        Stmt::Seq(vec![
            Stmt::If {
                cond: take,
                then_branch: Box::new(Stmt::Seq(vec![store(ib, at.clone(), xi), store(vb, at.clone(), xv)])),
                else_branch: Some(Box::new(updated)),
            },
            store(hb, at.clone(), i32c(1)),
            if_(x_nan, store(nb, at, i32c(1))),
        ])
    };
    // Each thread folds elements [tx * c, min(tx * c + c, R)) in order.
    let total = to_i32(&total_of(&a.reduce));
    let (chunk, u) = match total.as_int() {
        Some(r) => {
            let c = (r + nt - 1) / nt;
            (i32c(c), steps_per_trip(c, 64))
        }
        None => (bin(BinOp::Div, add(total.clone(), i32c(nt - 1)), i32c(nt)), 8),
    };
    let [it, k, j, rl] = int_vars(["it", "k", "j", "rl"]);
    let [xi, xv] = [TirVar::new("arg_xi", idt), TirVar::new("arg_xv", vdt)];
    let element = let_(
        &xi,
        expr::cast(a.x_idx.clone(), idt),
        let_(
            &xv,
            a.x_val.clone(),
            fold(
                &has,
                &nan,
                &si,
                &sv,
                z.clone(),
                xi.to_expr(),
                xv.to_expr(),
                isnan(xv.to_expr()),
            ),
        ),
    );
    let step = add(mul(it.to_expr(), i32c(u)), k.to_expr());
    let inner = let_(
        &j,
        step,
        let_(
            &rl,
            add(mul(tx.to_expr(), chunk.clone()), j.to_expr()),
            if_(
                bin(
                    BinOp::And,
                    bin(BinOp::Lt, j.to_expr(), chunk.clone()),
                    bin(BinOp::Lt, rl.to_expr(), total.clone()),
                ),
                decompose(rl.to_expr(), &a.reduce, element),
            ),
        ),
    );
    let trips = expr::simplify(&bin(BinOp::Div, add(chunk, i32c(u - 1)), i32c(u)));
    let per_thread = for_loop(&it, trips, ForKind::Serial, unrolled(&k, u, inner));
    let first = bin(BinOp::Eq, tx.to_expr(), i32c(0));
    let mut seq = vec![
        store(&has, z.clone(), i32c(0)),
        store(&nan, z.clone(), i32c(0)),
        // Thread 0 starts from the init value (the element before all others).
        if_(
            first.clone(),
            Stmt::Seq(vec![
                store(&has, z.clone(), i32c(1)),
                store(&si, z.clone(), expr::cast(a.idx_init.clone(), idt)),
                store(&sv, z.clone(), a.val_init.clone()),
            ]),
        ),
        per_thread,
        store(&w_has, tx.to_expr(), ld(&has, z.clone())),
        store(&w_nan, tx.to_expr(), ld(&nan, z.clone())),
        store(&w_i, tx.to_expr(), ld(&si, z.clone())),
        store(&w_v, tx.to_expr(), ld(&sv, z.clone())),
    ];
    let sync = Stmt::Evaluate(PrimExpr::intrinsic_call(
        Intrinsic::TvmStorageSync,
        DataType::INT32,
        vec![],
    ));
    // Neighbouring chunks combine first: slot tx takes slot tx + s when tx is a
    // multiple of 2s, so every slot always covers one contiguous run of chunks.
    let mut s = 1;
    while s < nt {
        let other = add(tx.to_expr(), i32c(s));
        let merge = if_(
            bin(
                BinOp::And,
                bin(BinOp::Eq, bin(BinOp::Mod, tx.to_expr(), i32c(2 * s)), i32c(0)),
                nonzero(ld(&w_has, other.clone())),
            ),
            fold(
                &w_has,
                &w_nan,
                &w_i,
                &w_v,
                tx.to_expr(),
                ld(&w_i, other.clone()),
                ld(&w_v, other.clone()),
                nonzero(ld(&w_nan, other)),
            ),
        );
        seq.push(sync.clone());
        seq.push(merge);
        s *= 2;
    }
    seq.push(sync);
    seq.push(if_(
        first,
        Stmt::Seq(vec![
            store(&a.idx, a.at.clone(), ld(&w_i, z.clone())),
            store(&a.val, a.at.clone(), ld(&w_v, z.clone())),
        ]),
    ));
    let kbody = alloc_all([w_has, w_nan, w_i, w_v, has, nan, si, sv], Stmt::Seq(seq));
    let stotal = total_of(&a.spatial);
    let mut kbody = if_(
        bin(BinOp::Lt, bx.to_expr(), to_i32(&stotal)),
        decompose(bx.to_expr(), &a.spatial, kbody),
    );
    for w in a.wrappers.iter().rev() {
        kbody = match w {
            Stmt::Let { var, value, .. } => let_(var, value.clone(), kbody),
            Stmt::Assert { cond, message, .. } => Stmt::Assert {
                cond: cond.clone(),
                message: message.clone(),
                body: Box::new(kbody),
            },
            _ => kbody,
        };
    }
    GpuKernel {
        name: name.to_string(),
        body: kbody,
        workgroup_size: [nt as u32, 1, 1],
        grid: Grid::Linear(stotal),
        builtins: vec![(bx, Builtin::GroupLinear), (tx, Builtin::Local(0))],
        alternatives: Vec::new(),
        schedule: "",
    }
}
