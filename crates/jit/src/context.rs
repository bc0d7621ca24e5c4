//! What the JIT's host and GPU halves share: device capabilities, schedule
//! options, counters, the profiler and the persistent kernel cache.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::disk_cache::DiskCache;
use crate::profile::Profiler;
use crate::schedule::ScheduleOptions;
use crate::wgsl::DeviceCaps;

crate::counters! {
    /// The JIT's live counters.
    live Counters;
    /// Counters of the JIT (monotonic for the life of the [`Jit`](crate::Jit)).
    snapshot JitCounters;
    {
    /// GPU programs compiled (one per distinct PrimFunc and device).
    gpu_programs_compiled,
    /// GPU kernels (pipelines) created.
    kernels_compiled,
    /// GPU calls served from the cache.
    gpu_cache_hits,
    /// Host programs compiled.
    host_programs_compiled,
    /// Host calls served from the cache.
    host_cache_hits,
    /// Nanoseconds spent in our part of compilation (lowering, scheduling, WGSL,
    /// naga validation, host closure building).
    our_compile_ns,
    /// Nanoseconds spent in the driver creating pipelines.
    driver_compile_ns,
    /// GPU programs taken from the persistent kernel cache (lowered again, but not
    /// scheduled, emitted or validated).
    disk_cache_hits,
    /// GPU programs looked up in the persistent kernel cache and not found there.
    disk_cache_misses,
    /// GPU programs written to the persistent kernel cache.
    disk_cache_writes,
    /// Dispatches of the few-row kernel of a matmul with a symbolic row count (the
    /// row count at run time was small; see `FEW_ROWS_MAX`).
    few_row_dispatches,
    }
}

/// The settings and state every part of the [`Jit`](crate::Jit) reads.
pub(crate) struct JitContext {
    /// What the GPU (or, host only, every back end) supports.
    pub(crate) caps: DeviceCaps,
    /// How kernels are scheduled for the GPU.
    pub(crate) options: ScheduleOptions,
    /// Live counters.
    pub(crate) counters: Counters,
    /// Per-kernel times, when profiling is on.
    pub(crate) profiler: Profiler,
    /// The persistent kernel cache, if any.
    pub(crate) disk: Option<Arc<DiskCache>>,
}

impl JitContext {
    /// Whether profiling is on.
    pub(crate) fn profiling(&self) -> bool {
        self.profiler.enabled.load(Ordering::Relaxed)
    }
}
