//! The default GPU schedule: turns each [`Stage`] of a lowered function into one
//! [`GpuKernel`] with explicit thread indices.
//!
//! * Functions that bind threads themselves are kept as written (one kernel).
//! * Spatial loop nests: the outer parallel loops are fused and bound to a linear
//!   grid of 1-D workgroups (split over two grid dimensions beyond 65,535
//!   workgroups), with a guard for the tail.
//! * Reductions: one thread per output with a register accumulator, or, when few
//!   outputs reduce many elements, one workgroup per output with a tree reduction
//!   in workgroup memory.
//! * `argmax` / `argmin` (an index and a value accumulator updated together): see
//!   [`crate::arg_schedule`].
//! * Pooling-shaped reductions (global average pooling, small windows): see
//!   [`crate::pool_schedule`].
//! * Matmul-like reductions: register blocking, each thread computing a
//!   `TM x TN` tile of outputs with the operands of one `k` step held in registers.

use relax_ir::tir::Intrinsic;
use relax_ir::tir::{BinOp, Buffer, For, ForKind, PrimExpr, Stmt, TirVar};
use relax_ir::{DataType, Span};

use crate::error::{JitError, Result};
use crate::expr::{self, add, bin, mul};
use crate::lower::{for_loop, LoweredFunc, Reduction, Stage};

/// A thread-index builtin of a compute shader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// `local_invocation_id.{x,y,z}`
    Local(u8),
    /// `workgroup_id.{x,y,z}`
    Group(u8),
    /// The linear workgroup index over a split grid.
    GroupLinear,
    /// `subgroup_invocation_id`: the lane within its subgroup.
    SubgroupInvocation,
    /// `subgroup_size`: lanes per subgroup.
    SubgroupSize,
    /// `subgroup_id`: the subgroup's index within its workgroup.
    SubgroupId,
    /// `num_subgroups`: subgroups per workgroup.
    NumSubgroups,
}

/// The number of workgroups to launch, as expressions of the function's
/// parameters and shape variables.
#[derive(Clone, Debug)]
pub enum Grid {
    /// A linear count, split over x and y when it exceeds the per-dimension limit.
    Linear(PrimExpr),
    /// Explicit x, y, z counts.
    Dims([PrimExpr; 3]),
}

/// One compute kernel in TIR form (block-free, flat buffers, thread builtins).
#[derive(Clone, Debug)]
pub struct GpuKernel {
    /// Kernel name.
    pub name: String,
    /// The per-invocation body.
    pub body: Stmt,
    /// Workgroup size.
    pub workgroup_size: [u32; 3],
    /// Launch grid.
    pub grid: Grid,
    /// Variables standing for thread builtins.
    pub builtins: Vec<(TirVar, Builtin)>,
}

/// Tuning knobs of the default schedule.
#[derive(Clone, Copy, Debug)]
pub struct ScheduleOptions {
    /// Threads per workgroup for elementwise kernels.
    pub elementwise_threads: u32,
    /// Outputs per thread of an elementwise (loop-free) kernel over enough
    /// elements: `n` consecutive elements along the innermost loop, sharing the
    /// outer indices, with a guard for the tail. 1: one per thread.
    pub elementwise_per_thread: u32,
    /// Threads per workgroup of the cross-thread reduction.
    pub reduce_threads: u32,
    /// Register tile of the matmul schedule (rows, cols per thread).
    pub matmul_tile: (u32, u32),
    /// Threads of a matmul workgroup (rows, cols).
    pub matmul_threads: (u32, u32),
    /// Disable the matmul, cross-thread, pooling and several-elements-per-thread
    /// schedules (one thread per output).
    pub naive: bool,
    /// Schedule convolution-like multiply-accumulate reductions as implicit GEMMs
    /// (see `implicit_gemm`).
    pub implicit_gemm: bool,
    /// In implicit-GEMM kernels (convolutions), load the row operand four
    /// reduction steps at a time where it is contiguous along the reduction, with
    /// those four steps unrolled: on lavapipe about 1.3x faster steady state, but
    /// each kernel takes about twice as long for the driver to compile (the first
    /// inference of a network grows), so off by default. Matmuls always do it.
    pub vec4_reduction: bool,
    /// Workgroups the adapter runs at once when known (a software adapter's worker
    /// threads, each running one workgroup at a time), 0 when unknown. With it,
    /// implicit-GEMM workgroups are shaped so that their rounds over those workers
    /// waste least (small convolutions then get more, smaller workgroups).
    pub parallel_groups: u32,
    /// The device has subgroup operations (wgpu's `SUBGROUP` feature): cross-thread
    /// reductions combine within each subgroup with `subgroupAdd` / `subgroupMax` /
    /// `subgroupMin` / `subgroupMul` and across subgroups through workgroup memory,
    /// instead of a tree of workgroup-memory steps with a barrier each.
    pub subgroups: bool,
    /// The smallest subgroup size the adapter reports (0 when unknown): with
    /// subgroups, pooling-shaped reductions give each output that many lanes (at
    /// most 16), combined by shuffles (see `crate::pool_schedule`).
    pub subgroup_min_size: u32,
    /// With `subgroups`: matrix-vector-like products (few outputs, a long reduction)
    /// split each output's reduction over a workgroup's lanes and combine it with
    /// `subgroupAdd`. On by default on hardware adapters; off on a software one,
    /// where one thread per output in the register-tiled GEMM measured faster
    /// (ResNet-50's classifier on lavapipe: 3.9 ms vs 7-14 ms).
    pub subgroup_matmul: bool,
}

impl Default for ScheduleOptions {
    fn default() -> Self {
        ScheduleOptions {
            elementwise_threads: 64,
            elementwise_per_thread: 4,
            reduce_threads: 128,
            matmul_tile: (8, 8),
            matmul_threads: (8, 8),
            naive: false,
            implicit_gemm: true,
            vec4_reduction: false,
            parallel_groups: 0,
            subgroups: false,
            subgroup_min_size: 0,
            subgroup_matmul: false,
        }
    }
}

/// The most worker threads a software adapter is assumed to run (Mesa's
/// llvmpipe caps its pool at 16 in the releases this targets).
pub const MAX_SOFTWARE_WORKERS: u32 = 16;

impl ScheduleOptions {
    /// The default options tuned for `adapter`: on a software adapter (lavapipe),
    /// whose worker threads each run whole workgroups, the number of workers is
    /// known (`LP_NUM_THREADS` when set, else one per CPU, at most
    /// `MAX_SOFTWARE_WORKERS`) and workgroups are shaped for it.
    /// Subgroup reductions are used when the adapter offers subgroups.
    pub fn for_adapter(adapter: &relax_gpu_runtime::AdapterSummary) -> ScheduleOptions {
        let mut o = ScheduleOptions {
            subgroups: adapter.subgroups,
            subgroup_min_size: adapter.subgroup_sizes.0,
            subgroup_matmul: adapter.subgroups && !adapter.is_software(),
            ..ScheduleOptions::default()
        };
        if adapter.is_software() {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
            o.parallel_groups = crate::config::lavapipe_threads()
                .unwrap_or(cpus)
                .clamp(1, MAX_SOFTWARE_WORKERS);
        }
        o
    }
}

/// `body` in the scope of `buffers` (the first outermost).
pub(crate) fn alloc_all(buffers: impl IntoIterator<Item = Buffer, IntoIter: DoubleEndedIterator>, body: Stmt) -> Stmt {
    buffers.into_iter().rev().fold(body, |body, buffer| Stmt::Alloc {
        buffer,
        body: Box::new(body),
    })
}

/// Fresh `int32` variables named `names`.
pub(crate) fn int_vars<const N: usize>(names: [&str; N]) -> [TirVar; N] {
    names.map(|n| TirVar::new(n, DataType::INT32))
}

pub(crate) fn i32c(v: i64) -> PrimExpr {
    PrimExpr::int_of(v, DataType::INT32)
}

pub(crate) fn to_i32(e: &PrimExpr) -> PrimExpr {
    expr::cast(e.clone(), DataType::INT32)
}

pub(crate) fn let_(v: &TirVar, value: PrimExpr, body: Stmt) -> Stmt {
    Stmt::Let {
        var: v.clone(),
        value,
        body: Box::new(body),
    }
}

pub(crate) fn if_(c: PrimExpr, t: Stmt) -> Stmt {
    match c.as_int() {
        Some(0) => Stmt::Seq(vec![]),
        Some(_) => t,
        None => Stmt::If {
            cond: c,
            then_branch: Box::new(t),
            else_branch: None,
        },
    }
}

pub(crate) fn store(b: &Buffer, idx: PrimExpr, v: PrimExpr) -> Stmt {
    Stmt::BufferStore {
        buffer: b.clone(),
        value: v,
        indices: vec![idx],
        span: Span::NONE,
    }
}

pub(crate) fn unrolled(v: &TirVar, n: i64, body: Stmt) -> Stmt {
    for_loop(v, i32c(n), ForKind::Unrolled, body)
}

/// Schedule every stage of a lowered function.
pub fn schedule(lf: &LoweredFunc, opts: &ScheduleOptions) -> Result<Vec<GpuKernel>> {
    if lf.has_thread_bindings {
        let mut out = Vec::new();
        for (n, st) in lf.stages.iter().enumerate() {
            out.push(bound_kernel(lf, &st.body, n)?);
        }
        return Ok(out);
    }
    let mut out = Vec::new();
    for (n, st) in lf.stages.iter().enumerate() {
        let name = format!("{}_{}", sanitize(&lf.name), n);
        out.push(schedule_stage(st, name, opts)?);
    }
    Ok(out)
}

/// An identifier-safe version of `s`.
pub fn sanitize(s: &str) -> String {
    let mut o: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if o.is_empty() || o.starts_with(|c: char| c.is_ascii_digit()) {
        o.insert(0, 'k');
    }
    o
}

fn schedule_stage(st: &Stage, name: String, opts: &ScheduleOptions) -> Result<GpuKernel> {
    if !opts.naive {
        if st.reduction.is_none() {
            if let Some(k) = crate::arg_schedule::arg_kernel(&st.body, &name, opts) {
                return Ok(k);
            }
        }
        if let Some(r) = &st.reduction {
            if matmul_on_subgroups(r, opts) {
                if let Some(k) = subgroup_kernel(r, None, &name, opts) {
                    return Ok(k);
                }
            }
            if let Some(k) = crate::gemm_schedule::gemm_kernel(r, None, &name, opts) {
                return Ok(k);
            }
            if let Some(k) = crate::pool_schedule::pool_kernel(r, &name, opts) {
                return Ok(k);
            }
            if cross_thread_worthwhile(r) {
                if opts.subgroups {
                    if let Some(k) = subgroup_kernel(r, None, &name, opts) {
                        return Ok(k);
                    }
                }
                return Ok(cross_thread_kernel(r, name, opts));
            }
        }
        if let Some((r, epi)) = crate::fused_reduction::detect(&st.body) {
            if matmul_on_subgroups(&r, opts) {
                if let Some(k) = subgroup_kernel(&r, Some(&epi), &name, opts) {
                    return Ok(k);
                }
            }
            if let Some(k) = crate::gemm_schedule::gemm_kernel(&r, Some(&epi), &name, opts) {
                return Ok(k);
            }
            if let Some(k) = crate::pool_schedule::fused_window_kernel(&r, &epi, &name, opts) {
                return Ok(k);
            }
        }
    }
    Ok(spatial_kernel(&st.body, name, opts))
}

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
    opts.subgroups && opts.subgroup_matmul && cross_thread_worthwhile(r) && crate::gemm_schedule::is_gemm(r)
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

/// Generic kernel: fuse the outer parallel loops into one thread index. A
/// loop-free (elementwise) body over enough elements gives each thread `n`
/// consecutive elements along the innermost loop (see
/// [`ScheduleOptions::elementwise_per_thread`]), the outer indices computed once for
/// all of them, with a guard for the tail when the innermost extent is not a
/// multiple of `n`.
fn spatial_kernel(body: &Stmt, name: String, opts: &ScheduleOptions) -> GpuKernel {
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
        let guarded = if_(
            bin(BinOp::Lt, gid.to_expr(), to_i32(&total)),
            decompose(gid.to_expr(), &loops, inner),
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

/// Decompose a linear index into the given loops' variables (innermost fastest)
/// as `let` bindings around `body`.
pub(crate) fn decompose(idx: PrimExpr, loops: &[(TirVar, PrimExpr)], body: Stmt) -> Stmt {
    let mut rem = idx;
    let mut lets = Vec::new();
    for (i, (v, e)) in loops.iter().enumerate().rev() {
        let e32 = to_i32(e);
        let val = if i == 0 {
            rem.clone()
        } else {
            bin(BinOp::Mod, rem.clone(), e32.clone())
        };
        lets.push((v.clone(), expr::cast(val, v.dtype())));
        if i > 0 {
            rem = bin(BinOp::Div, rem, e32);
        }
    }
    let mut out = body;
    for (v, val) in lets {
        out = let_(&v, val, out);
    }
    out
}

pub(crate) fn total_of(loops: &[(TirVar, PrimExpr)]) -> PrimExpr {
    expr::simplify(&loops.iter().fold(PrimExpr::int(1), |a, (_, e)| {
        mul(a, expr::cast(e.clone(), DataType::INT64))
    }))
}

/// Loop trips a kernel keeps below: Mesa's llvmpipe (lavapipe) ends every loop of a
/// shader invocation after 65,535 trips in all (`LP_MAX_TGSI_LOOP_ITERATIONS`,
/// shared between its loops), silently dropping the rest of the work; longer loops
/// run several unrolled steps a trip.
pub(crate) const MAX_LOOP_TRIPS: i64 = 16384;

/// Steps per trip (a power of two, at most `most`) that keep a loop of `trips`
/// steps within [`MAX_LOOP_TRIPS`] trips; 1 when it already is.
pub(crate) fn steps_per_trip(trips: i64, most: i64) -> i64 {
    if trips <= MAX_LOOP_TRIPS {
        return 1;
    }
    (((trips + MAX_LOOP_TRIPS - 1) / MAX_LOOP_TRIPS) as u64)
        .next_power_of_two()
        .min(most.max(1) as u64) as i64
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

/// `subgroupOp(v)` over the active lanes of the calling subgroup (see
/// [`crate::wgsl::SUBGROUP_OPS`]).
fn subgroup_reduce(op: BinOp, v: PrimExpr) -> Option<PrimExpr> {
    let name = crate::wgsl::SUBGROUP_OPS.iter().find(|(o, _, _)| *o == op)?.1;
    let dt = v.dtype();
    Some(PrimExpr::call(name, dt, vec![v]))
}

/// One workgroup per output, combined with subgroup operations: each thread folds a
/// strided slice of the reduction into a register, each subgroup combines its
/// lanes (`subgroupAdd` etc.), lane 0 of each subgroup writes the subgroup's value
/// to workgroup memory, and after one barrier every subgroup combines those values
/// again (lanes striding over them), thread 0 storing the result. Lanes with
/// nothing to combine hold the combiner's identity. `None` when the combiner or
/// type has no subgroup operation.
fn subgroup_kernel(
    r: &Reduction,
    epi: Option<&crate::fused_reduction::Epilogue>,
    name: &str,
    opts: &ScheduleOptions,
) -> Option<GpuKernel> {
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
    })
}

/// The store of a reduction's result `value`: to its output, or through the epilogue
/// of a fused reduction (its accumulator read replaced by `value`).
fn write_result(r: &Reduction, epi: Option<&crate::fused_reduction::Epilogue>, value: PrimExpr) -> Stmt {
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

/// A kernel for a function that binds its own threads: thread-binding loops and
/// `launch_thread` become reads of the builtins (with guards where a loop's extent
/// is smaller than the launched size).
fn bound_kernel(lf: &LoweredFunc, body: &Stmt, n: usize) -> Result<GpuKernel> {
    // Collect extents per tag.
    let mut extents: Vec<(String, PrimExpr)> = Vec::new();
    let mut bad = None;
    expr::visit_stmts(body, &mut |s| {
        let (tag, ext) = match s {
            Stmt::For(For {
                kind: ForKind::ThreadBinding,
                thread_tag: Some(t),
                extent,
                ..
            }) => (t.clone(), extent.clone()),
            Stmt::LaunchThread { tag, extent, .. } => (tag.clone(), extent.clone()),
            _ => return,
        };
        if tag_builtin(&tag).is_none() {
            bad = Some(tag.clone());
            return;
        }
        match extents.iter_mut().find(|(t, _)| *t == tag) {
            Some((_, e)) => {
                if let (Some(a), Some(b)) = (e.as_int(), ext.as_int()) {
                    if b > a {
                        *e = ext;
                    }
                }
            }
            None => extents.push((tag, ext)),
        }
    });
    if let Some(t) = bad {
        return Err(JitError::Unsupported {
            func: lf.name.clone(),
            msg: format!("thread tag \"{t}\""),
        });
    }
    let mut wg = [1u32; 3];
    let mut grid = [i32c(1), i32c(1), i32c(1)];
    let mut builtins = Vec::new();
    let mut tag_vars: Vec<(String, TirVar, PrimExpr)> = Vec::new();
    for (tag, ext) in &extents {
        let Some(b) = tag_builtin(tag) else { continue };
        let v = TirVar::new(sanitize(tag), DataType::INT32);
        match b {
            Builtin::Local(d) => {
                let c = ext.as_int().ok_or_else(|| JitError::Unsupported {
                    func: lf.name.clone(),
                    msg: format!("non-constant extent of {tag}"),
                })?;
                if c <= 0 || c > 1024 {
                    return Err(JitError::Unsupported {
                        func: lf.name.clone(),
                        msg: format!("{tag} extent {c}"),
                    });
                }
                wg[d as usize] = c as u32;
            }
            Builtin::Group(d) => grid[d as usize] = ext.clone(),
            _ => {}
        }
        builtins.push((v.clone(), b));
        tag_vars.push((tag.clone(), v, ext.clone()));
    }
    if wg.iter().map(|&x| x as u64).product::<u64>() > 1024 {
        return Err(JitError::Unsupported {
            func: lf.name.clone(),
            msg: format!("workgroup size {wg:?} exceeds 1024"),
        });
    }
    let body = rewrite_bindings(body, &tag_vars);
    Ok(GpuKernel {
        name: format!("{}_{}", sanitize(&lf.name), n),
        body,
        workgroup_size: wg,
        grid: Grid::Dims(grid),
        builtins,
    })
}

fn tag_builtin(tag: &str) -> Option<Builtin> {
    let d = match tag.rsplit('.').next()? {
        "x" => 0,
        "y" => 1,
        "z" => 2,
        _ => return None,
    };
    if tag.starts_with("threadIdx") {
        Some(Builtin::Local(d))
    } else if tag.starts_with("blockIdx") {
        Some(Builtin::Group(d))
    } else {
        None
    }
}

fn rewrite_bindings(s: &Stmt, tags: &[(String, TirVar, PrimExpr)]) -> Stmt {
    let bind = |var: &TirVar, tag: &str, extent: &PrimExpr, body: Stmt| -> Stmt {
        let Some((_, tv, full)) = tags.iter().find(|(t, _, _)| t == tag) else {
            return body;
        };
        let guarded = match (extent.as_int(), full.as_int()) {
            (Some(a), Some(b)) if a == b => body,
            _ => if_(bin(BinOp::Lt, tv.to_expr(), to_i32(extent)), body),
        };
        let_(var, expr::cast(tv.to_expr(), var.dtype()), guarded)
    };
    match s {
        Stmt::For(For {
            var,
            extent,
            kind: ForKind::ThreadBinding,
            thread_tag: Some(tag),
            body,
            ..
        }) => bind(var, tag, extent, rewrite_bindings(body, tags)),
        Stmt::LaunchThread { var, tag, extent, body } => bind(var, tag, extent, rewrite_bindings(body, tags)),
        Stmt::For(f) => Stmt::For(For {
            kind: if f.kind == ForKind::Parallel {
                ForKind::Serial
            } else {
                f.kind
            },
            ..f.with_body(rewrite_bindings(&f.body, tags))
        }),
        Stmt::Let { var, value, body } => let_(var, value.clone(), rewrite_bindings(body, tags)),
        Stmt::Attr { body, .. } => rewrite_bindings(body, tags),
        Stmt::Assert { cond, message, body } => Stmt::Assert {
            cond: cond.clone(),
            message: message.clone(),
            body: Box::new(rewrite_bindings(body, tags)),
        },
        Stmt::While { cond, body } => Stmt::While {
            cond: cond.clone(),
            body: Box::new(rewrite_bindings(body, tags)),
        },
        Stmt::If {
            cond,
            then_branch,
            else_branch,
        } => Stmt::If {
            cond: cond.clone(),
            then_branch: Box::new(rewrite_bindings(then_branch, tags)),
            else_branch: else_branch.as_ref().map(|e| Box::new(rewrite_bindings(e, tags))),
        },
        Stmt::Seq(v) => Stmt::Seq(v.iter().map(|x| rewrite_bindings(x, tags)).collect()),
        Stmt::Alloc { buffer, body } => Stmt::Alloc {
            buffer: buffer.clone(),
            body: Box::new(rewrite_bindings(body, tags)),
        },
        other => other.clone(),
    }
}
