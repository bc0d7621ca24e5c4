//! The generic schedule: the outer parallel loops of a stage fused into one thread
//! index over a linear grid of 1-D workgroups, with a guard for the tail.

use relax_ir::tir::{BinOp, For, ForKind, PrimExpr, Stmt, TirVar};
use relax_ir::DataType;

use super::{
    decompose, i32c, if_, int_vars, let_, to_i32, total_of, unrolled, Builtin, GpuKernel, Grid, ScheduleOptions,
};
use crate::expr::{self, add, bin, mul};

/// Generic kernel: fuse the outer parallel loops into one thread index. A
/// loop-free (elementwise) body over enough elements gives each thread `n`
/// consecutive elements along the innermost loop (see
/// [`ScheduleOptions::elementwise_per_thread`]), the outer indices computed once for
/// all of them, with a guard for the tail when the innermost extent is not a
/// multiple of `n`.
pub(super) fn spatial_kernel(body: &Stmt, name: String, opts: &ScheduleOptions) -> GpuKernel {
    let threads = opts.elementwise_threads.max(1);
    // Peel Let / Assert wrappers.
    let mut wrappers = Vec::new();
    let mut cur = body.clone();
    loop {
        match cur {
            Stmt::Let { var, value, body } => {
                wrappers.push((var, value));
                cur = *body;
            }
            Stmt::Assert { body, .. } => cur = *body,
            _ => break,
        }
    }
    let mut loops = Vec::new();
    while let Stmt::For(For {
        var,
        extent,
        kind: ForKind::Parallel,
        body,
        ..
    }) = cur
    {
        loops.push((var, extent));
        cur = *body;
    }
    let [bx, tx] = int_vars(["bx", "tx"]);
    let builtins = vec![(bx.clone(), Builtin::GroupLinear), (tx.clone(), Builtin::Local(0))];
    let (mut kbody, grid, wg) = if loops.is_empty() {
        (cur, Grid::Linear(i32c(1)), [1, 1, 1])
    } else {
        let per = elements_per_thread(&cur, &loops, threads, opts);
        let mut inner = cur;
        if per > 1 {
            // The innermost loop runs `per` elements a thread: variable q * per + e.
            let last = loops.len() - 1;
            let (iv, n) = loops[last].clone();
            let [q, e] = int_vars(["q", "e"]);
            let at = add(mul(q.to_expr(), i32c(per)), e.to_expr());
            let exact = n.as_int().is_some_and(|c| c % per == 0);
            let body = if exact {
                inner
            } else {
                if_(bin(BinOp::Lt, at.clone(), to_i32(&n)), inner)
            };
            inner = unrolled(&e, per, let_(&iv, expr::cast(at, iv.dtype()), body));
            let blocks = expr::simplify(&bin(
                BinOp::FloorDiv,
                add(expr::cast(n, DataType::INT64), PrimExpr::int(per - 1)),
                PrimExpr::int(per),
            ));
            loops[last] = (q, blocks);
        }
        let total = total_of(&loops);
        let gid = TirVar::new("gid", DataType::INT32);
        // Loops of extent 1 (a batch of one) are 0: the outermost loop left takes
        // the quotient undivided, so a symbolic extent outside the innermost loops
        // (a generic channel count) costs no division by a uniform.
        let (units, rest): (Vec<_>, Vec<_>) = loops
            .iter()
            .cloned()
            .partition(|(_, e)| expr::simplify(e).as_int() == Some(1));
        let inner = units
            .iter()
            .rev()
            .fold(inner, |body, (v, _)| let_(v, PrimExpr::int_of(0, v.dtype()), body));
        let guarded = if_(
            bin(BinOp::Lt, gid.to_expr(), to_i32(&total)),
            decompose(gid.to_expr(), &rest, inner),
        );
        let b = let_(
            &gid,
            add(mul(bx.to_expr(), i32c(threads as i64)), tx.to_expr()),
            guarded,
        );
        let groups = expr::simplify(&bin(
            BinOp::FloorDiv,
            add(total.clone(), PrimExpr::int(threads as i64 - 1)),
            PrimExpr::int(threads as i64),
        ));
        (b, Grid::Linear(groups), [threads, 1, 1])
    };
    for (v, val) in wrappers.into_iter().rev() {
        kbody = let_(&v, val, kbody);
    }
    GpuKernel {
        name,
        body: kbody,
        workgroup_size: wg,
        grid,
        builtins,
        alternatives: Vec::new(),
        schedule: "",
    }
}

/// Elements per thread of a spatial kernel with `body` inside `loops`:
/// [`ScheduleOptions::elementwise_per_thread`] for a loop-free body whose innermost
/// extent is a multiple of it or at least twice it (or not known), when the
/// workgroups left still keep the adapter's workers busy (at least two rounds of
/// `parallel_groups`, or 16 workgroups when unknown); else 1.
fn elements_per_thread(body: &Stmt, loops: &[(TirVar, PrimExpr)], threads: u32, opts: &ScheduleOptions) -> i64 {
    let per = opts.elementwise_per_thread.clamp(1, 16) as i64;
    if per == 1 || opts.naive {
        return 1;
    }
    let mut has_loops = false;
    expr::visit_stmts(body, &mut |s| {
        has_loops |= matches!(s, Stmt::For(_) | Stmt::While { .. })
    });
    if has_loops {
        return 1;
    }
    if let Some(n) = loops.last().and_then(|(_, e)| e.as_int()) {
        if n % per != 0 && n < 2 * per {
            return 1;
        }
    }
    let min_groups = 2 * i64::from(if opts.parallel_groups > 0 {
        opts.parallel_groups
    } else {
        8
    });
    match total_of(loops).as_int() {
        Some(n) if n < threads as i64 * per * min_groups => 1,
        _ => per,
    }
}
