//! Reductions with few outputs over long reductions: one workgroup per output,
//! its threads striding over the reduction and combining in workgroup memory
//! (a tree of barrier steps) or, with subgroups, with subgroup operations.

use relax_ir::tir::{BinOp, Buffer, ForKind, Intrinsic, PrimExpr, Stmt, TirVar};
use relax_ir::DataType;

use super::fused_reduction::Epilogue;
use super::{
    alloc_all, decompose, i32c, if_, int_vars, let_, steps_per_trip, store, to_i32, total_of, unrolled, Builtin,
    GpuKernel, GpuOp, Grid, ScheduleOptions, SubgroupReduce, MAX_LOOP_TRIPS,
};
use crate::expr::{self, add, bin, mul};
use crate::lower::{for_loop, Reduction};

fn const_prod(es: &[(TirVar, PrimExpr)]) -> Option<i64> {
    es.iter()
        .try_fold(1i64, |a, (_, e)| e.as_int().map(|v| a.saturating_mul(v)))
}

/// A matrix-vector-like product (a matmul or implicit GEMM with few outputs and a
/// long reduction, such as a classifier's batch-1 dense layer) with
/// [`ScheduleOptions::subgroup_matmul`]: each output's reduction is split over a workgroup's lanes and combined
/// with `subgroupAdd`, instead of one thread walking the whole reduction in the
/// register-tiled GEMM (its fallback without subgroups).
fn matmul_on_subgroups(r: &Reduction, opts: &ScheduleOptions) -> bool {
    opts.subgroups && opts.subgroup_matmul && cross_thread_worthwhile(r) && super::gemm::is_gemm(r)
}

/// Few outputs over long reductions, or any reduction longer than one thread's
/// loop may run on lavapipe ([`MAX_LOOP_TRIPS`]: a thread per output would
/// silently stop early there).
fn cross_thread_worthwhile(r: &Reduction) -> bool {
    let red = const_prod(&r.reduce);
    let sp = const_prod(&r.spatial);
    match (sp, red) {
        (_, Some(k)) if k > MAX_LOOP_TRIPS => true,
        (Some(s), Some(k)) => k >= 256 && s <= 4096,
        (Some(s), None) => s <= 4096,
        _ => false,
    }
}

/// Thread `tx` of `nt` visits reduction elements `tx, tx + nt, ...` of `r` (the
/// reduction loops decomposed from the flat index) and runs `body` at each.
fn strided_over_threads(r: &Reduction, tx: &TirVar, nt: i64, body: Stmt) -> Stmt {
    let [it, rl] = int_vars(["it", "rl"]);
    let total = total_of(&r.reduce);
    if let Some(n) = total.as_int() {
        let per_thread = (n + nt.max(1) - 1) / nt.max(1);
        let u = steps_per_trip(per_thread, 64);
        if u > 1 {
            // for it in 0..ceil(ceil(R / nt) / u): u unrolled steps
            // rl = tx + (it*u + k)*nt, guarded by rl < R.
            let k = TirVar::new("k", DataType::INT32);
            let step = add(mul(it.to_expr(), i32c(u)), k.to_expr());
            let at = add(tx.to_expr(), mul(step, i32c(nt)));
            let inner = unrolled(
                &k,
                u,
                let_(
                    &rl,
                    at,
                    if_(
                        bin(BinOp::Lt, rl.to_expr(), i32c(n)),
                        decompose(rl.to_expr(), &r.reduce, body),
                    ),
                ),
            );
            return for_loop(&it, i32c((per_thread + u - 1) / u), ForKind::Serial, inner);
        }
    }
    // for it in 0..ceil((R - tx) / nt): rl = tx + it*nt
    let trips = bin(
        BinOp::Div,
        add(
            bin(BinOp::Sub, to_i32(&total_of(&r.reduce)), tx.to_expr()),
            i32c(nt - 1),
        ),
        i32c(nt),
    );
    for_loop(
        &it,
        trips,
        ForKind::Serial,
        let_(
            &rl,
            add(tx.to_expr(), mul(it.to_expr(), i32c(nt))),
            decompose(rl.to_expr(), &r.reduce, body),
        ),
    )
}

/// One workgroup per output; threads stride over the reduction and combine in
/// workgroup memory. Partial results carry a validity flag so no identity element
/// is needed.
fn cross_thread_kernel(r: &Reduction, name: String, opts: &ScheduleOptions) -> GpuKernel {
    let nt = opts.reduce_threads as i64;
    let [bx, tx] = int_vars(["bx", "tx"]);
    let dt = r.out.dtype();
    let red = Buffer::with_scope("red", dt, vec![PrimExpr::int(nt)], "shared");
    let ok = Buffer::with_scope("red_ok", DataType::INT32, vec![PrimExpr::int(nt)], "shared");
    let acc = Buffer::with_scope("acc", dt, vec![PrimExpr::int(1)], "local");
    let okl = Buffer::with_scope("acc_ok", DataType::INT32, vec![PrimExpr::int(1)], "local");
    let z = PrimExpr::int(0);
    let ld = |b: &Buffer, i: PrimExpr| PrimExpr::load(b, vec![i]);
    let combine = Stmt::Seq(vec![
        if_(
            bin(BinOp::Ne, ld(&okl, z.clone()), i32c(0)),
            store(
                &acc,
                z.clone(),
                PrimExpr::binary(r.op, ld(&acc, z.clone()), r.rhs.clone()),
            ),
        ),
        if_(
            bin(BinOp::Eq, ld(&okl, z.clone()), i32c(0)),
            Stmt::Seq(vec![
                store(&acc, z.clone(), r.rhs.clone()),
                store(&okl, z.clone(), i32c(1)),
            ]),
        ),
    ]);
    let strided = strided_over_threads(r, &tx, nt, combine);
    let mut seq = vec![
        store(&okl, z.clone(), i32c(0)),
        store(&acc, z.clone(), r.init.clone()),
        strided,
        store(&red, tx.to_expr(), ld(&acc, z.clone())),
        store(&ok, tx.to_expr(), ld(&okl, z.clone())),
    ];
    let sync = Stmt::Evaluate(PrimExpr::intrinsic_call(
        Intrinsic::TvmStorageSync,
        DataType::INT32,
        vec![],
    ));
    let mut stride = nt / 2;
    while stride >= 1 {
        let other = add(tx.to_expr(), i32c(stride));
        let merge = if_(
            bin(
                BinOp::And,
                bin(BinOp::Lt, tx.to_expr(), i32c(stride)),
                bin(BinOp::Ne, ld(&ok, other.clone()), i32c(0)),
            ),
            Stmt::Seq(vec![
                if_(
                    bin(BinOp::Ne, ld(&ok, tx.to_expr()), i32c(0)),
                    store(
                        &red,
                        tx.to_expr(),
                        PrimExpr::binary(r.op, ld(&red, tx.to_expr()), ld(&red, other.clone())),
                    ),
                ),
                if_(
                    bin(BinOp::Eq, ld(&ok, tx.to_expr()), i32c(0)),
                    store(&red, tx.to_expr(), ld(&red, other.clone())),
                ),
                store(&ok, tx.to_expr(), i32c(1)),
            ]),
        );
        seq.push(sync.clone());
        seq.push(merge);
        stride /= 2;
    }
    seq.push(sync);
    let fin = PrimExpr::select(
        bin(BinOp::Ne, ld(&ok, z.clone()), i32c(0)),
        PrimExpr::binary(r.op, r.init.clone(), ld(&red, z.clone())),
        r.init.clone(),
    );
    seq.push(if_(
        bin(BinOp::Eq, tx.to_expr(), i32c(0)),
        store(&r.out, r.out_index.clone(), fin),
    ));
    let body = alloc_all([red, ok, acc, okl], Stmt::Seq(seq));
    let stotal = total_of(&r.spatial);
    // Workgroups beyond the output count return early (uniformly per workgroup).
    let body = if_(
        bin(BinOp::Lt, bx.to_expr(), to_i32(&stotal)),
        decompose(bx.to_expr(), &r.spatial, body),
    );
    GpuKernel {
        name,
        body,
        workgroup_size: [nt as u32, 1, 1],
        grid: Grid::Linear(stotal),
        builtins: vec![(bx, Builtin::GroupLinear), (tx, Builtin::Local(0))],
        alternatives: Vec::new(),
        schedule: "",
    }
}

/// The identity of `op` over `dt` (the value of a lane with nothing to combine),
/// for the types and combiners subgroup operations support.
fn reduce_identity(op: BinOp, dt: DataType) -> Option<PrimExpr> {
    if dt.lanes != 1 {
        return None;
    }
    let f32_ = dt == DataType::FLOAT32;
    let i32_ = dt == DataType::INT32;
    let u32_ = dt == DataType::UINT32;
    if !(f32_ || i32_ || u32_) {
        return None;
    }
    let int = |v: i64| Some(PrimExpr::int_of(v, dt));
    match op {
        BinOp::Add if f32_ => Some(PrimExpr::float_of(0.0, dt)),
        BinOp::Mul if f32_ => Some(PrimExpr::float_of(1.0, dt)),
        BinOp::Max if f32_ => Some(PrimExpr::float_of(f64::NEG_INFINITY, dt)),
        BinOp::Min if f32_ => Some(PrimExpr::float_of(f64::INFINITY, dt)),
        BinOp::Add => int(0),
        BinOp::Mul => int(1),
        BinOp::Max if i32_ => int(i32::MIN as i64),
        BinOp::Max => int(0),
        BinOp::Min if i32_ => int(i32::MAX as i64),
        BinOp::Min => int(u32::MAX as i64),
        _ => None,
    }
}

/// `op` of `v` over the active lanes of the calling subgroup
/// ([`GpuOp::SubgroupReduce`]); `None` for a combiner without one.
fn subgroup_reduce(op: BinOp, v: PrimExpr) -> Option<PrimExpr> {
    let dt = v.dtype();
    Some(GpuOp::SubgroupReduce(SubgroupReduce::of(op)?).call(dt, vec![v]))
}

/// One workgroup per output, combined with subgroup operations: each thread folds a
/// strided slice of the reduction into a register, each subgroup combines its
/// lanes (`subgroupAdd` etc.), lane 0 of each subgroup writes the subgroup's value
/// to workgroup memory, and after one barrier every subgroup combines those values
/// again (lanes striding over them), thread 0 storing the result. Lanes with
/// nothing to combine hold the combiner's identity. `None` when the combiner or
/// type has no subgroup operation.
fn subgroup_kernel(r: &Reduction, epi: Option<&Epilogue>, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    let dt = r.out.dtype();
    let identity = reduce_identity(r.op, dt)?;
    if r.rhs.dtype() != dt {
        return None;
    }
    let nt = opts.reduce_threads as i64;
    let [bx, tx, lane, width, sgid, nsg] = int_vars(["bx", "tx", "sg_lane", "sg_width", "sg_index", "sg_count"]);
    let red = Buffer::with_scope("red", dt, vec![PrimExpr::int(nt)], "shared");
    let acc = Buffer::with_scope("acc", dt, vec![PrimExpr::int(1)], "local");
    let z = PrimExpr::int(0);
    let ld = |b: &Buffer, i: PrimExpr| PrimExpr::load(b, vec![i]);
    let fold = |v: PrimExpr| store(&acc, z.clone(), PrimExpr::binary(r.op, ld(&acc, z.clone()), v));
    let strided = strided_over_threads(r, &tx, nt, fold(r.rhs.clone()));
    let sync = Stmt::Evaluate(PrimExpr::intrinsic_call(
        Intrinsic::TvmStorageSync,
        DataType::INT32,
        vec![],
    ));
    let part = TirVar::new("sg_part", dt);
    let total = TirVar::new("sg_total", dt);
    let j = TirVar::new("j", DataType::INT32);
    // Stage 2: lanes stride over the subgroups' values (ceil((nsg - lane) / width)
    // of them each), then the subgroup combines them.
    let trips2 = bin(
        BinOp::Div,
        add(
            bin(BinOp::Sub, nsg.to_expr(), lane.to_expr()),
            bin(BinOp::Sub, width.to_expr(), i32c(1)),
        ),
        width.to_expr(),
    );
    let gather = for_loop(
        &j,
        trips2,
        ForKind::Serial,
        fold(ld(&red, add(lane.to_expr(), mul(j.to_expr(), width.to_expr())))),
    );
    let fin = PrimExpr::binary(r.op, r.init.clone(), total.to_expr());
    let seq = Stmt::Seq(vec![
        store(&acc, z.clone(), identity.clone()),
        strided,
        let_(
            &part,
            subgroup_reduce(r.op, ld(&acc, z.clone()))?,
            Stmt::Seq(vec![
                if_(
                    bin(BinOp::Eq, lane.to_expr(), i32c(0)),
                    store(&red, sgid.to_expr(), part.to_expr()),
                ),
                sync,
                store(&acc, z.clone(), identity),
                gather,
                let_(
                    &total,
                    subgroup_reduce(r.op, ld(&acc, z.clone()))?,
                    if_(bin(BinOp::Eq, tx.to_expr(), i32c(0)), write_result(r, epi, fin)),
                ),
            ]),
        ),
    ]);
    let body = alloc_all([red, acc], seq);
    let stotal = total_of(&r.spatial);
    // Workgroups beyond the output count return early (uniformly per workgroup).
    let body = if_(
        bin(BinOp::Lt, bx.to_expr(), to_i32(&stotal)),
        decompose(bx.to_expr(), &r.spatial, body),
    );
    Some(GpuKernel {
        name: name.to_string(),
        body,
        workgroup_size: [nt as u32, 1, 1],
        grid: Grid::Linear(stotal),
        builtins: vec![
            (bx, Builtin::GroupLinear),
            (tx, Builtin::Local(0)),
            (lane, Builtin::SubgroupInvocation),
            (width, Builtin::SubgroupSize),
            (sgid, Builtin::SubgroupId),
            (nsg, Builtin::NumSubgroups),
        ],
        alternatives: Vec::new(),
        schedule: "",
    })
}

/// The store of a reduction's result `value`: to its output, or through the epilogue
/// of a fused reduction (its accumulator read replaced by `value`).
fn write_result(r: &Reduction, epi: Option<&Epilogue>, value: PrimExpr) -> Stmt {
    match epi {
        None => store(&r.out, r.out_index.clone(), value),
        Some(e) => {
            let v = expr::map_expr(&e.value, &mut |x| {
                matches!(x.kind(), relax_ir::tir::PrimExprKind::BufferLoad { buffer, .. } if *buffer == e.acc)
                    .then(|| value.clone())
            });
            store(&e.out, e.index.clone(), v)
        }
    }
}

/// A matrix-vector-like product on subgroups ([`matmul_on_subgroups`]).
pub(super) fn matvec_on_subgroups(r: &Reduction, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    matmul_on_subgroups(r, opts)
        .then(|| subgroup_kernel(r, None, name, opts))
        .flatten()
}

/// [`matvec_on_subgroups`] of a reduction fused with its epilogue.
pub(super) fn fused_matvec_on_subgroups(
    r: &Reduction,
    epi: &Epilogue,
    name: &str,
    opts: &ScheduleOptions,
) -> Option<GpuKernel> {
    matmul_on_subgroups(r, opts)
        .then(|| subgroup_kernel(r, Some(epi), name, opts))
        .flatten()
}

/// A reduction worth a workgroup per output ([`cross_thread_worthwhile`]),
/// combined with subgroup operations when the device has them.
pub(super) fn reduction_on_subgroups(r: &Reduction, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    (opts.subgroups && cross_thread_worthwhile(r))
        .then(|| subgroup_kernel(r, None, name, opts))
        .flatten()
}

/// A reduction worth a workgroup per output ([`cross_thread_worthwhile`]),
/// combined in workgroup memory.
pub(super) fn reduction_cross_thread(r: &Reduction, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    cross_thread_worthwhile(r).then(|| cross_thread_kernel(r, name.to_string(), opts))
}
