//! The GPU schedules: each [`Stage`] of a lowered function becomes one
//! [`GpuKernel`] with explicit thread indices, by the first row of the selection
//! table [`SCHEDULES`] whose pattern matches the stage and whose builder accepts
//! it. One file per schedule family:
//!
//! * [`bound`]: functions that bind threads themselves are kept as written (one
//!   kernel), before the table.
//! * [`arg`]: `argmax` / `argmin` (an index and a value accumulator updated
//!   together).
//! * [`gemm`]: matmul-like reductions and implicit GEMMs (convolutions), register
//!   blocking, each thread computing a `TM x TN` tile of outputs with the operands
//!   of one `k` step held in registers.
//! * [`grouped`]: grouped convolutions as one implicit GEMM per group (the
//!   output-channel loop split into group and channel within the group), built by
//!   the [`gemm`] schedule.
//! * [`window_conv`]: convolutions the GEMMs decline (depthwise) as direct
//!   kernels, each thread a row of outputs whose overlapping input windows are
//!   loaded once into registers.
//! * [`pool`]: pooling-shaped reductions (global average pooling, small windows).
//! * [`reduce`]: few outputs reducing many elements, one workgroup per output with
//!   a tree reduction in workgroup memory or subgroup operations.
//! * [`spatial`]: everything else; the outer parallel loops are fused and bound to
//!   a linear grid of 1-D workgroups (split over two grid dimensions beyond 65,535
//!   workgroups), with a guard for the tail (a reduction keeps one thread per
//!   output with a register accumulator).
//!
//! [`fused_reduction`] recognises a reduction fused with its epilogue, the pattern
//! of the fused rows; [`build`] holds the TIR builders the schedules share. The
//! GPU-specific operations they may emit are typed TIR calls ([`GpuOp`], a
//! `CallOp` variant), which the WGSL emitter renders. Schedules know nothing of WGSL.

use std::cell::OnceCell;

use relax_ir::tir::{PrimExpr, Stmt, TirVar};

use crate::error::Result;
use crate::lower::{LoweredFunc, Reduction, Stage};

mod arg;
mod bound;
mod build;
pub(crate) mod fused_reduction;
mod gemm;
mod operands;
pub use gemm::{FEW_ROWS_MAX, FEW_ROWS_SUFFIX};
mod grouped;
pub(crate) mod pool;
mod reduce;
mod spatial;
mod window_conv;

pub(crate) use build::{
    alloc_all, decompose, i32c, if_, int_vars, let_, steps_per_trip, store, to_i32, total_of, unrolled, MAX_LOOP_TRIPS,
};
use fused_reduction::Epilogue;
pub use relax_ir::tir::{GpuOp, SubgroupReduce};

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
    /// Other kernels computing the same stage, each for a range of the run-time
    /// extents (a GEMM with a symbolic row count: one for few rows, one for many).
    /// Every grid, this kernel's included, is zero outside its range, and the
    /// ranges do not overlap, so exactly one of them dispatches. [`schedule`] lists
    /// them after this kernel.
    pub alternatives: Vec<GpuKernel>,
    /// The name of the row of [`SCHEDULES`] that built it (empty for a kernel
    /// that binds its threads itself).
    pub schedule: &'static str,
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
    /// most 16), combined by shuffles (see `pool`).
    pub subgroup_min_size: u32,
    /// With `subgroups`: matrix-vector-like products (few outputs, a long reduction)
    /// split each output's reduction over a workgroup's lanes and combine it with
    /// `subgroupAdd`. On by default on hardware adapters; off on a software one,
    /// where one thread per output in the register-tiled GEMM measured faster
    /// (ResNet-50's classifier on lavapipe: 3.9 ms vs 7-14 ms).
    pub subgroup_matmul: bool,
    /// A matmul whose row count is symbolic also gets a few-row kernel, dispatched
    /// instead of the register-tiled one when the rows at run time are at most this
    /// many (0: never). See `FEW_ROWS_MAX`, the default; `for_adapter` takes
    /// `RELAX_GPU_FEW_ROWS` when set.
    pub few_rows_max: u32,
    /// Compile a function whose channel counts (dimension 1 of its 4-D buffers) can
    /// be symbolic without changing its schedule (elementwise and injective ones
    /// unless `generic_reductions`) as that generic version, shared by every
    /// function that differs from it only in those counts (layers of different
    /// widths then share one pipeline). Off by default: DenseNet-121 on lavapipe
    /// went from 200 pipelines to 96 but its steady inference from 2.7 s to 4.8 s
    /// and its first one did not get faster. `for_adapter` takes
    /// `RELAX_GPU_GENERIC=1` to turn it on.
    pub generic_channels: bool,
    /// With `generic_channels`, also functions with other schedules than the
    /// spatial one (a convolution over a symbolic count of input channels). Off by
    /// default: on lavapipe SqueezeNet's generic 1x1 convolutions, scheduled and
    /// emitted as the constant ones but for the reduction's bound (a uniform), ran
    /// 3-10x slower.
    pub generic_reductions: bool,
    /// Write the register tile's row loops (accumulator initialisation, update and
    /// write-back) as straight-line code, so every private array is indexed by
    /// constants. A hardware GPU's compiler keeps a dynamically indexed private array
    /// in local memory instead of registers: on an NVIDIA H200 (Vulkan) the 4096^3
    /// matmul ran at 1.6 TFLOP/s with the loops and the hand kernel's 16.7 beside it.
    /// On by default on hardware adapters; off on a software one, where the driver
    /// unrolls them itself and the longer WGSL only costs compile time.
    pub unroll_tiles: bool,
    /// Workgroups a register-tiled GEMM should have at least to fill the adapter
    /// (0: no minimum). A GEMM with fewer output tiles than this takes smaller
    /// register tiles (halved per side, down to one output per thread), so a small
    /// convolution or a linear layer over a short sequence runs on many multiprocessors
    /// instead of a handful (ResNet-50's 7x7 layers made 8 workgroups of 64 threads
    /// on an H200). Set for hardware adapters; 0 on a software one, whose
    /// workgroups `parallel_groups` shapes.
    pub min_gemm_groups: u32,
}

/// The workgroups a hardware adapter's GEMMs aim for (see
/// `ScheduleOptions::min_gemm_groups`): a few per multiprocessor of a large GPU.
pub const HARDWARE_MIN_GEMM_GROUPS: u32 = 512;

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
            few_rows_max: FEW_ROWS_MAX as u32,
            generic_channels: false,
            generic_reductions: false,
            unroll_tiles: false,
            min_gemm_groups: 0,
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
        if let Some(n) = crate::config::gpu_few_rows() {
            o.few_rows_max = n;
        }
        o.generic_channels = crate::config::gpu_generic();
        if !adapter.is_software() {
            o.unroll_tiles = true;
            o.min_gemm_groups = HARDWARE_MIN_GEMM_GROUPS;
        }
        if let Some(n) = crate::config::gpu_min_gemm_groups() {
            o.min_gemm_groups = n;
        }
        if let Some(t) = crate::config::gpu_gemm_threads() {
            o.matmul_threads = t;
        }
        if adapter.is_software() {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
            o.parallel_groups = crate::config::lavapipe_threads()
                .unwrap_or(cpus)
                .clamp(1, MAX_SOFTWARE_WORKERS);
        }
        o
    }
}

/// Schedule every stage of a lowered function.
pub fn schedule(lf: &LoweredFunc, opts: &ScheduleOptions) -> Result<Vec<GpuKernel>> {
    if lf.has_thread_bindings {
        let mut out = Vec::new();
        for (n, st) in lf.stages.iter().enumerate() {
            out.push(bound::bound_kernel(lf, &st.body, n)?);
        }
        return Ok(out);
    }
    let mut out = Vec::new();
    for (n, st) in lf.stages.iter().enumerate() {
        let name = format!("{}_{}", sanitize(&lf.name), n);
        let mut k = schedule_stage(st, name, opts)?;
        let alternatives = std::mem::take(&mut k.alternatives);
        out.push(k);
        out.extend(alternatives);
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

/// The stages a schedule applies to, with the function that builds its kernel
/// (`None` when the schedule declines the stage). Builders take the kernel name
/// and the options.
#[derive(Clone, Copy)]
pub enum Pattern {
    /// A stage lowering found no reduction in: its body.
    Plain(fn(&Stmt, &str, &ScheduleOptions) -> Option<GpuKernel>),
    /// A stage lowering found a reduction in (its `reduction`).
    Reduction(fn(&Reduction, &str, &ScheduleOptions) -> Option<GpuKernel>),
    /// A stage whose body is a reduction fused with its elementwise epilogue in one
    /// loop nest ([`fused_reduction::detect`]).
    Fused(fn(&Reduction, &Epilogue, &str, &ScheduleOptions) -> Option<GpuKernel>),
    /// Any stage: its body.
    Any(fn(&Stmt, &str, &ScheduleOptions) -> Option<GpuKernel>),
}

/// One row of the selection table [`SCHEDULES`].
pub struct Rule {
    /// The schedule, in words.
    pub name: &'static str,
    /// Also tried with [`ScheduleOptions::naive`] (which keeps one thread per output).
    pub naive: bool,
    /// The stages it applies to and its builder.
    pub pattern: Pattern,
}

/// The selection table: the schedules tried on each stage, in order; the first
/// whose pattern matches and whose builder gives a kernel schedules the stage. The
/// last row takes any stage.
pub const SCHEDULES: &[Rule] = &[
    Rule {
        name: "argmax / argmin over a workgroup",
        naive: false,
        pattern: Pattern::Plain(arg::arg_kernel),
    },
    Rule {
        name: "matrix-vector product on subgroups",
        naive: false,
        pattern: Pattern::Reduction(reduce::matvec_on_subgroups),
    },
    Rule {
        name: "register-tiled GEMM",
        naive: false,
        pattern: Pattern::Reduction(gemm_plain),
    },
    Rule {
        name: "per-group GEMM (grouped convolution)",
        naive: false,
        pattern: Pattern::Reduction(grouped_plain),
    },
    Rule {
        name: "register-tiled direct window convolution (depthwise)",
        naive: false,
        pattern: Pattern::Reduction(window_conv_plain),
    },
    Rule {
        name: "pooling",
        naive: false,
        pattern: Pattern::Reduction(pool::pool_kernel),
    },
    Rule {
        name: "cross-thread reduction on subgroups",
        naive: false,
        pattern: Pattern::Reduction(reduce::reduction_on_subgroups),
    },
    Rule {
        name: "cross-thread reduction in workgroup memory",
        naive: false,
        pattern: Pattern::Reduction(reduce::reduction_cross_thread),
    },
    Rule {
        name: "fused matrix-vector product on subgroups",
        naive: false,
        pattern: Pattern::Fused(reduce::fused_matvec_on_subgroups),
    },
    Rule {
        name: "fused register-tiled GEMM",
        naive: false,
        pattern: Pattern::Fused(gemm_fused),
    },
    Rule {
        name: "fused per-group GEMM (grouped convolution)",
        naive: false,
        pattern: Pattern::Fused(grouped_fused),
    },
    Rule {
        name: "fused register-tiled direct window convolution (depthwise)",
        naive: false,
        pattern: Pattern::Fused(window_conv_fused),
    },
    Rule {
        name: "fused pooling window",
        naive: false,
        pattern: Pattern::Fused(pool::fused_window_kernel),
    },
    Rule {
        name: "spatial (one thread per output or per few elements)",
        naive: true,
        pattern: Pattern::Any(spatial_any),
    },
];

fn gemm_plain(r: &Reduction, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    gemm::gemm_kernel(r, None, name, opts)
}

fn gemm_fused(r: &Reduction, epi: &Epilogue, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    gemm::gemm_kernel(r, Some(epi), name, opts)
}

fn grouped_plain(r: &Reduction, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    grouped::grouped_gemm(r, None, name, opts)
}

fn grouped_fused(r: &Reduction, epi: &Epilogue, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    grouped::grouped_gemm(r, Some(epi), name, opts)
}

fn window_conv_plain(r: &Reduction, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    window_conv::window_conv_kernel(r, None, name, opts)
}

fn window_conv_fused(r: &Reduction, epi: &Epilogue, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    window_conv::window_conv_kernel(r, Some(epi), name, opts)
}

fn spatial_any(body: &Stmt, name: &str, opts: &ScheduleOptions) -> Option<GpuKernel> {
    Some(spatial::spatial_kernel(body, name.to_string(), opts))
}

/// The kernel of `st` from the first row of [`SCHEDULES`] that gives one.
fn schedule_stage(st: &Stage, name: String, opts: &ScheduleOptions) -> Result<GpuKernel> {
    let fused = OnceCell::new();
    for rule in SCHEDULES {
        if opts.naive && !rule.naive {
            continue;
        }
        let kernel = match rule.pattern {
            Pattern::Plain(f) if st.reduction.is_none() => f(&st.body, &name, opts),
            Pattern::Reduction(f) => st.reduction.as_ref().and_then(|r| f(r, &name, opts)),
            Pattern::Fused(f) => fused
                .get_or_init(|| fused_reduction::detect(&st.body))
                .as_ref()
                .and_then(|(r, epi)| f(r, epi, &name, opts)),
            Pattern::Any(f) => f(&st.body, &name, opts),
            Pattern::Plain(_) => None,
        };
        if let Some(mut k) = kernel {
            k.schedule = rule.name;
            for a in &mut k.alternatives {
                a.schedule = rule.name;
            }
            return Ok(k);
        }
    }
    Err(crate::error::JitError::InvalidIr(format!(
        "no schedule for stage `{name}`"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_schedule_takes_every_stage() {
        let last = SCHEDULES.last().map(|r| (r.naive, r.pattern));
        assert!(matches!(last, Some((true, Pattern::Any(_)))));
        let mut names: Vec<_> = SCHEDULES.iter().map(|r| r.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), SCHEDULES.len());
    }
}
