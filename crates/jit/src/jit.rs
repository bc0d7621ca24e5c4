//! The [`Jit`] facade: compile-on-first-call caches for host and GPU programs,
//! keyed by the PrimFunc's structural hash, with counters. The GPU half lives in
//! `gpu/` ([`GpuJit`]); what both halves share in `context.rs`.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use relax_gpu_runtime::{DeviceBuffer, GpuRuntime};
use relax_ir::{DataType, PrimFunc};

use crate::args::KernelArg;
use crate::context::{JitContext, JitCounters};
use crate::disk_cache::{DiskCache, EntryKind};
use crate::error::{JitError, Result};
use crate::gpu::{GpuJit, GpuProgram};
use crate::host::HostKernel;
use crate::kernel_cache::{kernel_hash, KernelCache};
use crate::lower;
use crate::program::{emit_program, ProgramSource};
use crate::schedule::ScheduleOptions;
use crate::wgsl::DeviceCaps;

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
    cx: JitContext,
    gpu: Option<GpuJit>,
    host_cache: KernelCache<HostKernel>,
}

impl Jit {
    /// A JIT for `gpu` (or host only when `None`).
    pub fn new(gpu: Option<Arc<GpuRuntime>>) -> Jit {
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
    pub fn with_options(gpu: Option<Arc<GpuRuntime>>, caps: DeviceCaps, options: ScheduleOptions) -> Jit {
        Jit {
            cx: JitContext {
                caps,
                options,
                counters: Default::default(),
                profiler: Default::default(),
                disk: None,
            },
            gpu: gpu.map(GpuJit::new),
            host_cache: KernelCache::default(),
        }
    }

    /// Keep compiled GPU programs in `cache` across processes (`None`: in memory
    /// only, the default): a PrimFunc compiled by an earlier process with the same
    /// build, device capabilities and schedule options is lowered again but not
    /// scheduled, emitted or validated. With a GPU whose backend has a pipeline cache
    /// (Vulkan), the driver's compiled pipelines are kept there too: loaded now, and
    /// saved by [`Jit::save_pipeline_cache`] and when the JIT is dropped.
    pub fn with_disk_cache(mut self, cache: Option<Arc<DiskCache>>) -> Jit {
        if let (Some(g), Some(c)) = (&self.gpu, &cache) {
            if let Some(name) = g.rt.pipeline_cache_key() {
                let key = pipeline_key(name);
                let data = c.get(EntryKind::Pipelines, name, &key);
                g.rt.enable_pipeline_cache(data.as_deref());
            }
        }
        self.cx.disk = cache;
        self
    }

    /// The persistent kernel cache, if any.
    pub fn disk_cache(&self) -> Option<&Arc<DiskCache>> {
        self.cx.disk.as_ref()
    }

    /// Store the driver's pipeline cache in the persistent kernel cache when
    /// pipelines were created since it was last stored (a no-op without either).
    /// I/O errors are ignored: the cache only saves time.
    pub fn save_pipeline_cache(&self) {
        let (Some(g), Some(c)) = (&self.gpu, &self.cx.disk) else {
            return;
        };
        let rt = &g.rt;
        if !g.pipelines_unsaved.swap(false, Ordering::AcqRel) {
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
    pub fn gpu(&self) -> Option<&Arc<GpuRuntime>> {
        self.gpu.as_ref().map(|g| &g.rt)
    }

    /// Current counters.
    pub fn counters(&self) -> JitCounters {
        self.cx.counters.snapshot()
    }

    /// Lower, schedule and emit the WGSL of every kernel of `f` (validated by naga).
    pub fn wgsl(&self, f: &PrimFunc) -> Result<ProgramSource> {
        emit_program(f, &self.cx.caps, &self.cx.options)
    }

    /// The host program of `f`, compiled on first use.
    pub fn host_kernel(&self, f: &PrimFunc) -> Result<Arc<HostKernel>> {
        let (k, hit) = self.host_cache.get_or_build(f, || {
            let t = Instant::now();
            let lowered = Arc::new(lower::lower(f)?);
            let k = Arc::new(HostKernel::compile(lowered)?);
            self.cx
                .counters
                .our_compile_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            self.cx.counters.host_programs_compiled.fetch_add(1, Ordering::Relaxed);
            Ok(k)
        })?;
        if hit {
            self.cx.counters.host_cache_hits.fetch_add(1, Ordering::Relaxed);
        }
        Ok(k)
    }

    /// Run `f` on the host. Tensor arguments are read and written in place.
    pub fn run_host(&self, f: &PrimFunc, args: &mut [KernelArg<'_>]) -> Result<()> {
        self.host_kernel(f)?.run(args)
    }
}

impl Jit {
    /// Turn per-kernel profiling on or off (on: every GPU call waits for completion).
    pub fn set_profiling(&self, on: bool) {
        self.cx.profiler.enabled.store(on, Ordering::Relaxed);
    }

    /// Whether profiling is on.
    pub fn profiling(&self) -> bool {
        self.cx.profiling()
    }

    /// The profile so far, most time first.
    pub fn profile(&self) -> Vec<crate::profile::KernelProfile> {
        self.cx.profiler.snapshot()
    }
    /// The GPU half, or [`JitError::NoGpu`].
    fn gpu_half(&self) -> Result<&GpuJit> {
        self.gpu.as_ref().ok_or(JitError::NoGpu)
    }

    /// The GPU program of `f`, compiled on first use (per structural hash). With
    /// `ScheduleOptions::generic_channels`, a function whose channel counts can be
    /// symbolic without changing its schedule (see `specialize::generic_version`)
    /// runs the program of that generic version, which every function differing
    /// from it only in those counts shares (one pipeline for all of them).
    pub fn gpu_program(&self, f: &PrimFunc) -> Result<Arc<GpuProgram>> {
        self.gpu_half()?.program(&self.cx, f)
    }

    /// Run `f` on the GPU, every kernel dispatched in one submission.
    /// [`KernelArg::Device`] buffers (see [`Jit::resident_compatible`]) are bound in
    /// place; host bytes are uploaded to temporaries, and the ones the kernels write
    /// read back into [`KernelArg::Write`] bytes. A call on device buffers only
    /// returns after submission (later reads wait for it).
    pub fn run_gpu(&self, f: &PrimFunc, args: &mut [KernelArg<'_>]) -> Result<()> {
        self.run_gpu_named("", f, args)
    }

    /// [`Jit::run_gpu`] with the name the caller knows `f` by (its global name in a
    /// module), used by the profile; empty: the PrimFunc's own name.
    pub fn run_gpu_named(&self, name: &str, f: &PrimFunc, args: &mut [KernelArg<'_>]) -> Result<()> {
        let g = self.gpu_half()?;
        let prog = g.program(&self.cx, f)?;
        g.run_program(&self.cx, name, f, &prog, args)
    }

    /// [`Jit::run_gpu_named`] with `f`'s program already at hand (from
    /// [`Jit::gpu_program`]): a compiled kernel keeps it, so a call does not look it
    /// up again.
    pub(crate) fn run_gpu_program(
        &self,
        name: &str,
        f: &PrimFunc,
        prog: &Arc<GpuProgram>,
        args: &mut [KernelArg<'_>],
    ) -> Result<()> {
        self.gpu_half()?.run_program(&self.cx, name, f, prog, args)
    }

    /// Whether tensors of `dtype` can be bound directly from device memory holding
    /// their little-endian host bytes (no widening to 32-bit words needed), which is
    /// what a [`KernelArg::Device`] argument requires.
    pub fn resident_compatible(&self, dtype: DataType) -> bool {
        crate::gpu::resident_compatible(&self.cx.caps, dtype)
    }

    /// Fail with [`JitError::OutOfBounds`] when a GPU kernel run from this thread
    /// since the last call accessed a buffer out of its bounds (clearing the
    /// record). Waits for the thread's submitted work; free when no kernel with
    /// run-time checks ran.
    pub fn check_gpu_bounds(&self) -> Result<()> {
        match &self.gpu {
            Some(g) => g.check_bounds(),
            None => Ok(()),
        }
    }

    /// A device buffer holding `bytes` (host memory owned by `owner`, starting at
    /// byte `offset` of it), padded to a multiple of 4 bytes. The buffer is reused
    /// while `owner` is alive and its write `version` is the one of the upload; the
    /// caller must change `version` whenever the bytes may have changed (it is the
    /// only check: the bytes are not compared). Returns the buffer and whether it was
    /// uploaded now.
    pub fn resident_upload(
        &self,
        owner: &Arc<dyn std::any::Any + Send + Sync>,
        offset: usize,
        version: u64,
        bytes: &[u8],
    ) -> Result<(Arc<DeviceBuffer>, bool)> {
        self.gpu_half()?.resident_upload(owner, offset, version, bytes)
    }

    /// Forget every resident upload (their device memory returns to the pool once
    /// no kernel call holds it).
    pub fn clear_resident(&self) {
        if let Some(g) = &self.gpu {
            g.clear_resident();
        }
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
