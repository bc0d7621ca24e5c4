//! Schedules for pooling-shaped reductions, chosen from the TIR pattern (as TVM's
//! dlight rules do), so a hand-written PrimFunc of the same shape gets them too:
//!
//! * **Plane reductions** (global average pooling, `mean` over `H x W`, sums over a
//!   short last axis): every output reduces a *contiguous* run of a few dozen to a
//!   few hundred elements. With subgroups, `T` lanes of one subgroup share an
//!   output (neighbouring lanes read neighbouring elements), many outputs a
//!   workgroup, and the `T` partial values are combined by subgroup shuffles.
//!   Without subgroups they keep the generic schedule.
//! * **Window reductions** (max / average pooling, small windows over many
//!   outputs): each thread computes several consecutive outputs along the
//!   innermost output axis, one register each, walking the window once for all of
//!   them (the outer indices and the window loop shared); a guard covers the tail.
//!
//! Window reductions keep the combination order of each output's serial loop;
//! plane reductions combine partial values in a butterfly.

use relax_ir::tir::{BinOp, Buffer, ForKind, PrimExpr, PrimExprKind, Stmt, TirVar};
use relax_ir::DataType;

use super::fused_reduction::Epilogue;
use super::operands::affine;
use super::{
    decompose, i32c, if_, int_vars, let_, store, to_i32, total_of, unrolled, Builtin, GpuKernel, GpuOp, Grid,
    ScheduleOptions,
};
use crate::expr::{self, add, bin, mul};
use crate::lower::{for_loop, Reduction};

/// Threads of a pooling workgroup.
const THREADS: i64 = 64;

/// Threads of a plane-reduction workgroup with subgroup shuffles (several outputs
/// each; fewer, larger workgroups cost a software adapter less to launch).
const PLANE_THREADS: i64 = 256;

/// The fewest elements (outputs x reduction) a plane reduction needs for the
/// subgroup schedule.
const MIN_PLANE_ELEMENTS: i64 = 1 << 16;

/// A pooling schedule for `r` when it has one of the shapes above.
pub fn pool_kernel(r: &Reduction, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    if r.matmul.is_some() || !matches!(r.op, BinOp::Add | BinOp::Max | BinOp::Min) || r.spatial.is_empty() {
        return None;
    }
    let k = const_total(&r.reduce)?;
    let s = const_total(&r.spatial)?;
    if (16..=512).contains(&k) && contiguous_reads(r) {
        let sg = opts.subgroup_min_size.min(16) as i64;
        // Plane reductions over fewer elements in all (544 x 49 in ShuffleNet) ran
        // slower this way on lavapipe than with one thread per output; without
        // subgroups, a tree in workgroup memory measured no faster either: the
        // generic schedule stays.
        if opts.subgroups && sg >= 4 && (sg as u32).is_power_of_two() && s.saturating_mul(k) >= MIN_PLANE_ELEMENTS {
            return plane_subgroup_kernel(r, name, sg);
        }
        return None;
    }
    if (2..=64).contains(&k) {
        return window_kernel(r, None, name, s, opts);
    }
    None
}

/// A reduction fused with its elementwise epilogue (a convolution the implicit
/// GEMM does not take, such as a grouped or depthwise one, followed by batch norm
/// or an activation) over at most 512 elements an output: several consecutive
/// outputs a thread along the innermost output axis, operands that do not depend
/// on it loaded once for all of them.
pub fn fused_window_kernel(r: &Reduction, epi: &Epilogue, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    if !matches!(r.op, BinOp::Add | BinOp::Max | BinOp::Min) || r.spatial.is_empty() {
        return None;
    }
    let k = const_total(&r.reduce)?;
    let s = const_total(&r.spatial)?;
    if !(2..=512).contains(&k) {
        return None;
    }
    window_kernel(r, Some(epi), name, s, opts)
}

fn const_total(loops: &[(TirVar, PrimExpr)]) -> Option<i64> {
    loops.iter().try_fold(1i64, |a, (_, e)| {
        expr::simplify(e)
            .as_int()
            .filter(|&n| n > 0)
            .and_then(|n| a.checked_mul(n))
    })
}

/// Whether every load of the combined value reads, for fixed spatial indices, a
/// contiguous run over the reduction (row-major in the reduction loops), or does
/// not depend on the reduction; and at least one load depends on it.
fn contiguous_reads(r: &Reduction) -> bool {
    let sp: Vec<TirVar> = r.spatial.iter().map(|(v, _)| v.clone()).collect();
    let red: Vec<TirVar> = r.reduce.iter().map(|(v, _)| v.clone()).collect();
    let vars: Vec<TirVar> = sp.iter().chain(&red).cloned().collect();
    let mut ok = true;
    let mut reads_reduction = false;
    expr::visit_expr(&r.rhs, &mut |e| {
        let PrimExprKind::BufferLoad { indices, .. } = e.kind() else {
            return;
        };
        let [idx] = indices.as_slice() else {
            ok = false;
            return;
        };
        let Some((c, _)) = affine(idx, &vars) else {
            ok = false;
            return;
        };
        let rc = &c[sp.len()..];
        if rc.iter().all(|&x| x == 0) {
            return;
        }
        reads_reduction = true;
        let mut stride = 1i64;
        for (t, (_, ext)) in r.reduce.iter().enumerate().rev() {
            let n = expr::simplify(ext).as_int().unwrap_or(0);
            if n > 1 && rc[t] != stride {
                ok = false;
            }
            stride = stride.saturating_mul(n);
        }
    });
    ok && reads_reduction
}

/// A plane reduction with `lanes` lanes of one subgroup per output (`lanes` a power
/// of two no larger than any subgroup, so each subgroup holds whole outputs):
/// lane `l` folds elements `l, l + lanes, ...`, then `log2(lanes)` butterfly steps
/// of `subgroupShuffleXor` combine the lanes without workgroup memory or barriers.
/// Outputs are numbered by subgroup (`subgroup_id * subgroup_size +
/// subgroup_invocation_id`), so a segment never spans two subgroups.
fn plane_subgroup_kernel(r: &Reduction, name: &str, lanes: i64) -> Option<GpuKernel> {
    let dt = r.out.dtype();
    if !(dt == DataType::FLOAT32 || dt == DataType::INT32 || dt == DataType::UINT32) || r.rhs.dtype() != dt {
        return None;
    }
    let k = const_total(&r.reduce)?;
    if k < lanes {
        return None;
    }
    let per_group = PLANE_THREADS / lanes;
    let [bx, sgi, sgs, sgid, v, lane, o] = int_vars(["bx", "sg_lane", "sg_width", "sg_index", "v", "lane", "o"]);
    let acc = Buffer::with_scope("acc", dt, vec![PrimExpr::int(1)], "local");
    let z = PrimExpr::int(0);
    let ld = |b: &Buffer, i: PrimExpr| PrimExpr::load(b, vec![i]);
    let s = total_of(&r.spatial);
    let [j, rl] = int_vars(["j", "rl"]);
    let at = |rl_val: PrimExpr, body: Stmt| let_(&rl, rl_val, decompose(rl.to_expr(), &r.reduce, body));
    let trips = bin(
        BinOp::Div,
        add(bin(BinOp::Sub, i32c(k), lane.to_expr()), i32c(lanes - 1)),
        i32c(lanes),
    );
    let fold = Stmt::Seq(vec![
        at(lane.to_expr(), store(&acc, z.clone(), r.rhs.clone())),
        for_loop(
            &j,
            bin(BinOp::Sub, trips, i32c(1)),
            ForKind::Serial,
            at(
                add(lane.to_expr(), mul(add(j.to_expr(), i32c(1)), i32c(lanes))),
                store(
                    &acc,
                    z.clone(),
                    PrimExpr::binary(r.op, ld(&acc, z.clone()), r.rhs.clone()),
                ),
            ),
        ),
    ]);
    let in_range = bin(BinOp::Lt, o.to_expr(), to_i32(&s));
    // Lanes of outputs past the end keep the init value and take part in the shuffles.
    let mut seq = vec![
        store(&acc, z.clone(), r.init.clone()),
        if_(in_range.clone(), decompose(o.to_expr(), &r.spatial, fold)),
    ];
    let mut mask = lanes / 2;
    while mask >= 1 {
        let other =
            GpuOp::SubgroupShuffleXor.call(dt, vec![ld(&acc, z.clone()), PrimExpr::int_of(mask, DataType::INT32)]);
        seq.push(store(
            &acc,
            z.clone(),
            PrimExpr::binary(r.op, ld(&acc, z.clone()), other),
        ));
        mask /= 2;
    }
    let fin = PrimExpr::binary(r.op, r.init.clone(), ld(&acc, z.clone()));
    seq.push(if_(
        expr::and(bin(BinOp::Eq, lane.to_expr(), i32c(0)), in_range),
        decompose(o.to_expr(), &r.spatial, store(&r.out, r.out_index.clone(), fin)),
    ));
    let body = Stmt::Alloc {
        buffer: acc,
        body: Box::new(Stmt::Seq(seq)),
    };
    let body = let_(
        &v,
        add(mul(sgid.to_expr(), sgs.to_expr()), sgi.to_expr()),
        let_(
            &lane,
            bin(BinOp::Mod, v.to_expr(), i32c(lanes)),
            let_(
                &o,
                add(
                    mul(bx.to_expr(), i32c(per_group)),
                    bin(BinOp::Div, v.to_expr(), i32c(lanes)),
                ),
                body,
            ),
        ),
    );
    let builtins = vec![
        (bx, Builtin::GroupLinear),
        (sgi, Builtin::SubgroupInvocation),
        (sgs, Builtin::SubgroupSize),
        (sgid, Builtin::SubgroupId),
    ];
    Some(linear_kernel(name, body, PLANE_THREADS, s, per_group, builtins))
}

/// A kernel of `threads`-wide workgroups on a linear grid: one group per
/// `per_group` of the `items`.
fn linear_kernel(
    name: &str,
    body: Stmt,
    threads: i64,
    items: PrimExpr,
    per_group: i64,
    builtins: Vec<(TirVar, Builtin)>,
) -> GpuKernel {
    let groups = expr::simplify(&bin(
        BinOp::FloorDiv,
        add(items, PrimExpr::int(per_group - 1)),
        PrimExpr::int(per_group),
    ));
    GpuKernel {
        name: name.to_string(),
        body,
        workgroup_size: [threads as u32, 1, 1],
        grid: Grid::Linear(groups),
        builtins,
        alternatives: Vec::new(),
        schedule: "",
    }
}

/// Several consecutive outputs along the innermost spatial loop per thread (see the
/// module docs); `None` when the innermost extent is too short for it or there are
/// too few outputs to keep the adapter's workers busy.
fn window_kernel(
    r: &Reduction,
    epi: Option<&Epilogue>,
    name: &str,
    s: i64,
    opts: &ScheduleOptions,
) -> Option<GpuKernel> {
    let per = opts.elementwise_per_thread.clamp(1, 16) as i64;
    let last = r.spatial.len() - 1;
    let (iv, n_e) = r.spatial[last].clone();
    let n = expr::simplify(&n_e).as_int()?;
    let min_groups = 2 * i64::from(if opts.parallel_groups > 0 {
        opts.parallel_groups
    } else {
        8
    });
    if per < 2 || (n % per != 0 && n < 2 * per) || s < THREADS * per * min_groups {
        return None;
    }
    let dt = r.out.dtype();
    let [bx, tx, q, e] = int_vars(["bx", "tx", "q", "e"]);
    let acc = Buffer::with_scope("acc", dt, vec![PrimExpr::int(per)], "local");
    let at = add(mul(q.to_expr(), i32c(per)), e.to_expr());
    let exact = n % per == 0;
    // For each of the thread's outputs: bind the innermost variable, guard the tail.
    let each = |body: Stmt| {
        let body = if exact {
            body
        } else {
            if_(bin(BinOp::Lt, at.clone(), i32c(n)), body)
        };
        unrolled(&e, per, let_(&iv, expr::cast(at.clone(), iv.dtype()), body))
    };
    let ld_acc = PrimExpr::load(&acc, vec![e.to_expr()]);
    let mut nest = each(store(
        &acc,
        e.to_expr(),
        PrimExpr::binary(r.op, ld_acc.clone(), r.rhs.clone()),
    ));
    for (v, ext) in r.reduce.iter().rev() {
        nest = for_loop(v, ext.clone(), ForKind::Serial, nest);
    }
    let body = Stmt::Alloc {
        buffer: acc.clone(),
        body: Box::new(Stmt::Seq(vec![
            each(store(&acc, e.to_expr(), r.init.clone())),
            nest,
            each(match epi {
                None => store(&r.out, r.out_index.clone(), ld_acc),
                Some(ep) => {
                    let value = expr::map_expr(&ep.value, &mut |x| {
                        matches!(x.kind(), PrimExprKind::BufferLoad { buffer, .. } if *buffer == ep.acc)
                            .then(|| ld_acc.clone())
                    });
                    store(&ep.out, ep.index.clone(), value)
                }
            }),
        ])),
    };
    let mut loops = r.spatial.clone();
    loops[last] = (q, PrimExpr::int((n + per - 1) / per));
    let total = total_of(&loops);
    let gid = TirVar::new("gid", DataType::INT32);
    let body = let_(
        &gid,
        add(mul(bx.to_expr(), i32c(THREADS)), tx.to_expr()),
        if_(
            bin(BinOp::Lt, gid.to_expr(), to_i32(&total)),
            decompose(gid.to_expr(), &loops, body),
        ),
    );
    let builtins = vec![(bx, Builtin::GroupLinear), (tx, Builtin::Local(0))];
    Some(linear_kernel(name, body, THREADS, total, THREADS, builtins))
}
