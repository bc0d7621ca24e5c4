//! The [`Jit`] facade: compile-on-first-call caches for host and GPU programs,
//! keyed by the PrimFunc's structural hash, with counters.

use dashmap::DashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use relax_ir::structural::StructuralEqual;
use relax_ir::PrimFunc;

use crate::args::KernelArg;
use crate::disk_cache::{fnv64, DiskCache, EntryKind};
use crate::error::{JitError, Result};
use crate::host::HostKernel;
use crate::lower;
use crate::program::{emit_program, ProgramSource};
use crate::schedule::ScheduleOptions;
use crate::wgsl::DeviceCaps;

crate::counters! {
    /// The JIT's live counters.
    live Counters;
    /// Counters of the JIT (monotonic for the life of the [`Jit`]).
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

/// The JIT: lowers, schedules and compiles PrimFuncs on first use, and runs them
/// on the host or the GPU.
///
/// ```ignore
/// let jit = Jit::new(Some(Arc::new(GpuRuntime::shared_default()?)));
/// jit.run_host(&func, &mut [KernelArg::from(&a), KernelArg::from(&b), KernelArg::from(&mut c)])?;
/// jit.run_gpu(&func, &mut [KernelArg::from(&a), KernelArg::from(&b), KernelArg::from(&mut c)])?;
/// let src = jit.wgsl(&func)?;       // the WGSL of every kernel
/// let n = jit.counters().kernels_compiled;
/// ```
pub struct Jit {
    pub(crate) gpu: Option<Arc<relax_gpu_runtime::GpuRuntime>>,
    pub(crate) caps: DeviceCaps,
    pub(crate) options: ScheduleOptions,
    host_cache: KernelCache<HostKernel>,
    pub(crate) gpu_cache: KernelCache<crate::gpu::GpuProgram>,
    pub(crate) counters: Counters,
    pub(crate) resident: crate::gpu::resident::ResidentCache,
    pub(crate) profiler: crate::profile::Profiler,
    pub(crate) oob: crate::gpu::oob::OobState,
    /// The persistent kernel cache, if any (see [`Jit::with_disk_cache`]).
    pub(crate) disk: Option<Arc<DiskCache>>,
    /// Pipelines were created since the driver's pipeline cache was last saved.
    pub(crate) pipelines_unsaved: AtomicBool,
}

impl Jit {
    /// A JIT for `gpu` (or host only when `None`).
    pub fn new(gpu: Option<Arc<relax_gpu_runtime::GpuRuntime>>) -> Jit {
        let caps = match &gpu {
            Some(rt) => DeviceCaps {
                f16: rt.supports_f16(),
                f64: rt.supports_f64(),
                i64: rt.supports_i64(),
                max_binding_bytes: rt.max_binding_bytes(),
                binding_align: u64::from(rt.limits().min_storage_buffer_offset_alignment.max(4)),
            },
            None => DeviceCaps::ALL,
        };
        let options = gpu.as_ref().map_or_else(ScheduleOptions::default, |rt| {
            ScheduleOptions::for_adapter(rt.adapter_info())
        });
        Jit::with_options(gpu, caps, options)
    }

    /// A JIT with explicit device capabilities and schedule options.
    pub fn with_options(
        gpu: Option<Arc<relax_gpu_runtime::GpuRuntime>>,
        caps: DeviceCaps,
        options: ScheduleOptions,
    ) -> Jit {
        Jit {
            gpu,
            caps,
            options,
            host_cache: KernelCache::default(),
            gpu_cache: KernelCache::default(),
            counters: Counters::default(),
            resident: Default::default(),
            profiler: Default::default(),
            oob: Default::default(),
            disk: None,
            pipelines_unsaved: AtomicBool::new(false),
        }
    }

    /// Keep compiled GPU programs in `cache` across processes (`None`: in memory
    /// only, the default): a PrimFunc compiled by an earlier process with the same
    /// build, device capabilities and schedule options is lowered again but not
    /// scheduled, emitted or validated. With a GPU whose backend has a pipeline cache
    /// (Vulkan), the driver's compiled pipelines are kept there too: loaded now, and
    /// saved by [`Jit::save_pipeline_cache`] and when the JIT is dropped.
    pub fn with_disk_cache(mut self, cache: Option<Arc<DiskCache>>) -> Jit {
        if let (Some(rt), Some(c)) = (&self.gpu, &cache) {
            if let Some(name) = rt.pipeline_cache_key() {
                let key = pipeline_key(name);
                let data = c.get(EntryKind::Pipelines, name, &key);
                rt.enable_pipeline_cache(data.as_deref());
            }
        }
        self.disk = cache;
        self
    }

    /// The persistent kernel cache, if any.
    pub fn disk_cache(&self) -> Option<&Arc<DiskCache>> {
        self.disk.as_ref()
    }

    /// Store the driver's pipeline cache in the persistent kernel cache when
    /// pipelines were created since it was last stored (a no-op without either).
    /// I/O errors are ignored: the cache only saves time.
    pub fn save_pipeline_cache(&self) {
        let (Some(rt), Some(c)) = (&self.gpu, &self.disk) else {
            return;
        };
        if !self.pipelines_unsaved.swap(false, Ordering::AcqRel) {
            return;
        }
        let Some(name) = rt.pipeline_cache_key() else { return };
        if let Some(data) = rt.pipeline_cache_data() {
            let _ = c.put(EntryKind::Pipelines, name, &pipeline_key(name), &data);
        }
    }

    /// Compile the GPU programs of `funcs` now, in parallel on up to `threads`
    /// worker threads (0: one per available core): lowering, scheduling, WGSL
    /// emission, validation and pipeline creation, so that their first runs only
    /// dispatch. Functions with the same kernel hash are compiled once. `progress`
    /// is called after each function with (done, total). Returns the failures by
    /// index into `funcs` (the same error comes back from the function's first run),
    /// then saves the driver's pipeline cache.
    pub fn prewarm_gpu(
        &self,
        funcs: &[&PrimFunc],
        threads: usize,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Vec<(usize, JitError)> {
        if self.gpu.is_none() {
            return Vec::new();
        }
        let mut seen = std::collections::HashSet::new();
        let todo: Vec<usize> = (0..funcs.len())
            .filter(|&i| seen.insert(kernel_hash(funcs[i])))
            .collect();
        let total = todo.len();
        let threads = match threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
        .clamp(1, total.max(1));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::sync::atomic::AtomicUsize::new(0);
        let failures = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = todo.get(n) else { break };
                    if let Err(e) = self.gpu_program(funcs[i]) {
                        if let Ok(mut f) = failures.lock() {
                            f.push((i, e));
                        }
                    }
                    progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
                });
            }
        });
        self.save_pipeline_cache();
        let mut failures = failures.into_inner().unwrap_or_default();
        failures.sort_by_key(|(i, _)| *i);
        failures
    }

    /// The GPU runtime, if any.
    pub fn gpu(&self) -> Option<&Arc<relax_gpu_runtime::GpuRuntime>> {
        self.gpu.as_ref()
    }

    /// Current counters.
    pub fn counters(&self) -> JitCounters {
        self.counters.snapshot()
    }

    /// Lower, schedule and emit the WGSL of every kernel of `f` (validated by naga).
    pub fn wgsl(&self, f: &PrimFunc) -> Result<ProgramSource> {
        emit_program(f, &self.caps, &self.options)
    }

    /// The host program of `f`, compiled on first use.
    pub fn host_kernel(&self, f: &PrimFunc) -> Result<Arc<HostKernel>> {
        let (k, hit) = self.host_cache.get_or_build(f, || {
            let t = Instant::now();
            let lowered = Arc::new(lower::lower(f)?);
            let k = Arc::new(HostKernel::compile(lowered)?);
            self.counters
                .our_compile_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            self.counters.host_programs_compiled.fetch_add(1, Ordering::Relaxed);
            Ok(k)
        })?;
        if hit {
            self.counters.host_cache_hits.fetch_add(1, Ordering::Relaxed);
        }
        Ok(k)
    }

    /// Run `f` on the host. Tensor arguments are read and written in place.
    pub fn run_host(&self, f: &PrimFunc, args: &mut [KernelArg<'_>]) -> Result<()> {
        self.host_kernel(f)?.run(args)
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        self.save_pipeline_cache();
    }
}

/// The full key of the driver's pipeline cache data for the adapter key `name`.
fn pipeline_key(name: &str) -> Vec<u8> {
    format!("wgpu pipeline cache\0{}\0{name}", crate::program_record::BUILD_ID).into_bytes()
}

impl Jit {
    /// The program source of `f`: from the persistent cache when it holds it, else
    /// lowered, scheduled, emitted and checked (and then stored there).
    pub(crate) fn program_source(&self, f: &PrimFunc) -> Result<ProgramSource> {
        let Some(disk) = &self.disk else {
            let source = emit_program(f, &self.caps, &self.options)?;
            crate::gpu::oob::static_check(&source.lowered)?;
            return Ok(source);
        };
        let key = crate::program_record::program_key(f, &self.caps, &self.options);
        let name = format!("{:016x}{:016x}", kernel_hash(f), fnv64(&[&key]));
        if let Some(bytes) = disk.get(EntryKind::Kernels, &name, &key) {
            let lowered = Arc::new(lower::lower(f)?);
            if let Some(source) = crate::program_record::decode(&bytes, lowered) {
                self.counters.disk_cache_hits.fetch_add(1, Ordering::Relaxed);
                return Ok(source);
            }
        }
        self.counters.disk_cache_misses.fetch_add(1, Ordering::Relaxed);
        let source = emit_program(f, &self.caps, &self.options)?;
        crate::gpu::oob::static_check(&source.lowered)?;
        if let Some(record) = crate::program_record::encode(&source) {
            if disk.put(EntryKind::Kernels, &name, &key, &record).is_ok() {
                self.counters.disk_cache_writes.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(source)
    }
}

/// One cached program: the function it was built from and its slot.
type Entry<T> = (PrimFunc, Arc<Mutex<Option<Arc<T>>>>);

/// Compiled programs by structure. A lookup hashes the function (names of the
/// function, variables and buffers aside) and confirms a hash hit with structural
/// equality, so a hash collision builds a second program instead of running the
/// wrong one. Each function is built exactly once, even when several threads ask for
/// it at the same time (they wait for the first); different functions build
/// concurrently. A failed build leaves the slot empty.
pub(crate) struct KernelCache<T>(DashMap<u64, Vec<Entry<T>>>);

impl<T> Default for KernelCache<T> {
    fn default() -> Self {
        KernelCache(DashMap::new())
    }
}

/// The kernel identity: structure up to renaming, the function's name aside.
fn kernel_equality() -> StructuralEqual {
    StructuralEqual::new().ignore_global_symbol(true)
}

impl<T> KernelCache<T> {
    /// The program for `f`, built by `build` if absent; `true` when it was cached.
    pub(crate) fn get_or_build(&self, f: &PrimFunc, build: impl FnOnce() -> Result<Arc<T>>) -> Result<(Arc<T>, bool)> {
        let eq = kernel_equality();
        let slot = {
            let mut bucket = self.0.entry(eq.hash_prim_func(f)).or_default();
            match bucket.iter().find(|(g, _)| eq.prim_func(g, f).is_ok()) {
                Some((_, slot)) => slot.clone(),
                None => {
                    let slot = Arc::new(Mutex::new(None));
                    bucket.push((f.clone(), slot.clone()));
                    slot
                }
            }
        };
        let mut guard = lock(&slot)?;
        if let Some(v) = guard.as_ref() {
            return Ok((v.clone(), true));
        }
        let v = build()?;
        *guard = Some(v.clone());
        Ok((v, false))
    }
}

/// The kernel-cache hash of `f`: equal for functions the JIT compiles to the same
/// program (the same structure up to renaming of the function, its variables and
/// buffers). Tests and benchmarks use it to count distinct kernels.
pub fn kernel_hash(f: &PrimFunc) -> u64 {
    kernel_equality().hash_prim_func(f)
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> Result<std::sync::MutexGuard<'_, T>> {
    m.lock().map_err(|_| JitError::Poisoned)
}
