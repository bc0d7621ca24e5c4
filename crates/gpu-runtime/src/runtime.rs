//! Instance, adapter and device set-up; the shared state behind [`GpuRuntime`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use dashmap::DashMap;

use crate::batch::{BindGroupKey, Pending, TimestampState};
use crate::buffer::PoolState;
use crate::error::{GpuError, GpuResult};
use crate::kernel::{KernelKey, KernelSlot, LayoutObjects};
use crate::transfer::StagingState;
use crate::KernelLayout;

/// Which adapter [`GpuRuntime::new`] picks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AdapterSelector {
    /// The best adapter: Vulkan/Metal/DX12 before GL, then discrete, integrated,
    /// virtual, CPU. GL is only used when nothing else exists.
    #[default]
    Auto,
    /// The adapter at this index of [`GpuRuntime::list_adapters`].
    Index(usize),
    /// The first adapter (in [`GpuRuntime::list_adapters`] order) whose name
    /// contains this substring (case-insensitive).
    NameContains(String),
}

/// Options for [`GpuRuntime::new`].
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// Which adapter to use.
    pub adapter: AdapterSelector,
    /// Backends to enumerate (default: Vulkan, Metal, DX12 and browser WebGPU; GL,
    /// whose probing is noisy and whose compute support is limited, only on request).
    pub backends: wgpu::Backends,
    /// Simulated device-memory limit enforced by the buffer pool (live plus cached
    /// buffers). `None`: only the driver's limit applies.
    pub memory_limit_bytes: Option<u64>,
    /// Cap the requested `max_storage_buffer_binding_size` below the adapter's
    /// value (useful to test the binding-size error). `None`: the adapter's value.
    pub max_binding_bytes: Option<u64>,
    /// Timeout for waits on the GPU. `None`: wait indefinitely.
    pub wait_timeout: Option<Duration>,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            adapter: AdapterSelector::Auto,
            backends: wgpu::Backends::PRIMARY,
            memory_limit_bytes: None,
            max_binding_bytes: None,
            wait_timeout: None,
        }
    }
}

/// Description of one adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterSummary {
    /// Index usable with [`AdapterSelector::Index`].
    pub index: usize,
    /// Adapter name, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)".
    pub name: String,
    /// Backend (Vulkan, Metal, Dx12, Gl).
    pub backend: wgpu::Backend,
    /// Discrete, integrated, virtual, CPU or other.
    pub device_type: wgpu::DeviceType,
    /// Driver name and version as reported by the backend.
    pub driver: String,
    /// Whether the adapter offers subgroup operations (`wgpu::Features::SUBGROUP`,
    /// which the runtime then enables).
    pub subgroups: bool,
    /// (min, max) subgroup size the adapter reports (0 when unknown).
    pub subgroup_sizes: (u32, u32),
}

impl AdapterSummary {
    /// True for software rasterizers (lavapipe/llvmpipe, SwiftShader, WARP).
    pub fn is_software(&self) -> bool {
        self.device_type == wgpu::DeviceType::Cpu
    }
}

impl std::fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "#{} {} ({:?}, {:?}, driver {})",
            self.index, self.name, self.backend, self.device_type, self.driver
        )
    }
}

/// A consistent snapshot of the runtime's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Bytes of device buffers held by the pool (live plus cached free buffers).
    pub allocated_bytes: u64,
    /// Bytes of buffers currently handed out as [`crate::DeviceBuffer`]s.
    pub live_bytes: u64,
    /// Number of live [`crate::DeviceBuffer`]s.
    pub live_buffers: u64,
    /// Number of free buffers cached in the pool.
    pub free_buffers: u64,
    /// Device buffers created from scratch.
    pub buffer_creations: u64,
    /// Allocations served from the pool.
    pub pool_reuse_hits: u64,
    /// Cached buffers destroyed to make room under the memory limit or by `trim`.
    pub pool_evictions: u64,
    /// Bytes of staging buffers (upload, readback, uniforms) held.
    pub staging_bytes: u64,
    /// Bytes uploaded host -> device.
    pub bytes_uploaded: u64,
    /// Bytes read back device -> host.
    pub bytes_downloaded: u64,
    /// Bytes copied buffer -> buffer on the device.
    pub bytes_copied: u64,
    /// Kernels compiled (shader module + pipeline created).
    pub kernels_compiled: u64,
    /// `create_kernel` calls answered from the cache.
    pub kernel_cache_hits: u64,
    /// Bind groups created.
    pub bind_groups_created: u64,
    /// Dispatches that reused a cached bind group.
    pub bind_group_cache_hits: u64,
    /// Dispatches recorded and submitted.
    pub dispatches: u64,
    /// Queue submissions.
    pub submits: u64,
    /// wgpu errors that happened outside any error scope (logged, not raised).
    pub uncaptured_errors: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub buffer_creations: AtomicU64,
    pub pool_reuse_hits: AtomicU64,
    pub pool_evictions: AtomicU64,
    pub staging_bytes: AtomicU64,
    pub bytes_uploaded: AtomicU64,
    pub bytes_downloaded: AtomicU64,
    pub bytes_copied: AtomicU64,
    pub kernels_compiled: AtomicU64,
    pub kernel_cache_hits: AtomicU64,
    pub bind_groups_created: AtomicU64,
    pub bind_group_cache_hits: AtomicU64,
    pub dispatches: AtomicU64,
    pub submits: AtomicU64,
    pub uncaptured_errors: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// State shared by the runtime, its buffers and kernels.
pub(crate) struct Shared {
    pub _instance: wgpu::Instance,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: AdapterSummary,
    pub subgroup_sizes: (u32, u32),
    pub limits: wgpu::Limits,
    pub features: wgpu::Features,
    pub options: RuntimeOptions,
    pub lost: AtomicBool,
    pub lost_reason: Mutex<Option<String>>,
    pub last_uncaptured: Mutex<Option<String>>,
    pub counters: Counters,
    pub next_id: AtomicU64,
    pub pool: Mutex<PoolState>,
    pub staging: StagingState,
    pub kernels: DashMap<KernelKey, KernelSlot>,
    /// The driver's pipeline cache (`Features::PIPELINE_CACHE`), once enabled with
    /// [`GpuRuntime::enable_pipeline_cache`]; `None` inside when the device has none.
    pub pipeline_cache: OnceLock<Option<wgpu::PipelineCache>>,
    /// The adapter's [`wgpu::util::pipeline_cache_key`].
    pub pipeline_cache_key: Option<String>,
    pub layouts: DashMap<KernelLayout, Arc<LayoutObjects>>,
    pub bind_groups: DashMap<BindGroupKey, wgpu::BindGroup>,
    pub timestamps: Mutex<Option<TimestampState>>,
    /// Batches encoded but not yet submitted (see [`GpuRuntime::flush`]).
    pub pending: Mutex<Pending>,
}

impl Shared {
    pub fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn ensure_alive(&self) -> GpuResult<()> {
        if self.lost.load(Ordering::Acquire) {
            let reason = self
                .lost_reason
                .lock()
                .map(|r| r.clone().unwrap_or_default())
                .unwrap_or_default();
            return Err(GpuError::DeviceLost(reason));
        }
        Ok(())
    }

    /// Blocks until the given submission (or all work) is complete.
    pub fn wait(&self, index: Option<wgpu::SubmissionIndex>) -> GpuResult<()> {
        self.ensure_alive()?;
        if index.is_none() {
            self.flush()?;
        }
        let r = self.device.poll(wgpu::PollType::Wait {
            submission_index: index,
            timeout: self.options.wait_timeout,
        });
        self.ensure_alive()?;
        match r {
            Ok(_) => Ok(()),
            Err(wgpu::PollError::Timeout) => Err(GpuError::Timeout),
            Err(e) => Err(GpuError::Validation(e.to_string())),
        }
    }

    /// Non-blocking poll that runs pending callbacks.
    pub fn poll_nonblocking(&self) {
        let _ = self.device.poll(wgpu::PollType::Poll);
    }

    /// Creates a buffer outside the device pool (staging, uniforms) labelled
    /// `label`; a refusal is an out-of-memory error saying it was creating `what`.
    pub fn create_aux_buffer(
        &self,
        label: &'static str,
        what: &str,
        size: u64,
        usage: wgpu::BufferUsages,
        mapped_at_creation: bool,
    ) -> GpuResult<wgpu::Buffer> {
        let (buffer, err) = self.scoped(|| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation,
            })
        });
        if let Some(e) = err {
            self.ensure_alive()?;
            return Err(GpuError::OutOfMemory {
                requested: size,
                allocated: self.pool.lock().map(|p| p.allocated_bytes).unwrap_or(0),
                limit: self.options.memory_limit_bytes,
                detail: format!("creating {what}: {}", error_text(&e)),
            });
        }
        Ok(buffer)
    }

    /// Runs `f` inside validation and out-of-memory error scopes and returns
    /// the first captured error.
    pub fn scoped<T>(&self, f: impl FnOnce() -> T) -> (T, Option<wgpu::Error>) {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let val = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        let v = pollster::block_on(val.pop());
        let o = pollster::block_on(oom.pop());
        (out, v.or(o))
    }
}

/// Full text of a wgpu error including its source chain (naga's diagnostic
/// lives in the sources of shader errors).
pub(crate) fn error_text(e: &wgpu::Error) -> String {
    use std::error::Error as _;
    let mut text = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !text.contains(&t) {
            text.push_str("\n  caused by: ");
            text.push_str(&t);
        }
        src = s.source();
    }
    text
}

/// Headless compute runtime on one wgpu device. `Send + Sync`; clone it or put it in
/// an `Arc` to share (clones share the same device, pools and caches).
#[derive(Clone)]
pub struct GpuRuntime {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for GpuRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuRuntime")
            .field("adapter", &self.shared.info)
            .finish_non_exhaustive()
    }
}

fn backend_rank(b: wgpu::Backend) -> u32 {
    match b {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 0,
        wgpu::Backend::BrowserWebGpu => 1,
        wgpu::Backend::Gl => 2,
        _ => 3,
    }
}

fn type_rank(t: wgpu::DeviceType) -> u32 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

fn summary(index: usize, adapter: &wgpu::Adapter) -> AdapterSummary {
    let info = adapter.get_info();
    let driver = if info.driver_info.is_empty() {
        info.driver.clone()
    } else {
        format!("{} {}", info.driver, info.driver_info)
    };
    AdapterSummary {
        index,
        name: info.name.clone(),
        backend: info.backend,
        device_type: info.device_type,
        driver,
        subgroups: adapter.features().contains(wgpu::Features::SUBGROUP),
        subgroup_sizes: (info.subgroup_min_size, info.subgroup_max_size),
    }
}

fn make_instance(backends: wgpu::Backends) -> wgpu::Instance {
    crate::env::ensure_xdg_runtime_dir();
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    wgpu::Instance::new(desc)
}

/// Enumerates adapters of `backends`, best first.
fn ranked_adapters(instance: &wgpu::Instance, backends: wgpu::Backends) -> Vec<wgpu::Adapter> {
    let mut adapters = pollster::block_on(instance.enumerate_adapters(backends));
    adapters.sort_by_key(|a| {
        let i = a.get_info();
        (backend_rank(i.backend), type_rank(i.device_type))
    });
    adapters
}

/// The optional features this runtime enables when the adapter has them.
pub const WANTED_FEATURES: wgpu::Features = wgpu::Features::SHADER_F16
    .union(wgpu::Features::SHADER_INT64)
    .union(wgpu::Features::SHADER_F64)
    .union(wgpu::Features::SUBGROUP)
    .union(wgpu::Features::TIMESTAMP_QUERY)
    .union(wgpu::Features::PIPELINE_CACHE);

static SHARED_DEFAULT: OnceLock<Result<GpuRuntime, GpuError>> = OnceLock::new();

impl GpuRuntime {
    /// Lists the adapters visible with `backends`, best first (the order used by
    /// [`AdapterSelector::Index`]).
    pub fn list_adapters(backends: wgpu::Backends) -> Vec<AdapterSummary> {
        let instance = make_instance(backends);
        ranked_adapters(&instance, backends)
            .iter()
            .enumerate()
            .map(|(i, a)| summary(i, a))
            .collect()
    }

    /// A process-wide runtime with default options, created on first use.
    /// Convenient for tests and tools; errors are remembered too.
    pub fn shared_default() -> GpuResult<GpuRuntime> {
        SHARED_DEFAULT
            .get_or_init(|| GpuRuntime::new(RuntimeOptions::default()))
            .clone()
    }

    /// Creates the instance, picks an adapter and requests a device with the
    /// adapter's real limits and the [`WANTED_FEATURES`] it supports.
    pub fn new(options: RuntimeOptions) -> GpuResult<GpuRuntime> {
        // Enumerate non-GL backends first: GL (EGL) is slow and lacks features.
        let primary = options.backends & !wgpu::Backends::GL;
        let (instance, all) = if options.adapter == AdapterSelector::Auto && !primary.is_empty() {
            let inst = make_instance(primary);
            let found = ranked_adapters(&inst, primary);
            if found.is_empty() && options.backends.contains(wgpu::Backends::GL) {
                let inst = make_instance(options.backends);
                let found = ranked_adapters(&inst, options.backends);
                (inst, found)
            } else {
                (inst, found)
            }
        } else {
            let inst = make_instance(options.backends);
            let found = ranked_adapters(&inst, options.backends);
            (inst, found)
        };
        let (adapter, index) = {
            let listing = || {
                all.iter()
                    .enumerate()
                    .map(|(i, a)| summary(i, a).to_string())
                    .collect::<Vec<_>>()
            };
            if all.is_empty() {
                return Err(GpuError::NoAdapter {
                    detail: format!("no adapter for backends {:?}", options.backends),
                });
            }
            match &options.adapter {
                AdapterSelector::Auto => (all[0].clone(), 0),
                AdapterSelector::Index(i) => match all.get(*i) {
                    Some(a) => (a.clone(), *i),
                    None => {
                        return Err(GpuError::AdapterNotFound {
                            selector: format!("index {i}"),
                            available: listing(),
                        })
                    }
                },
                AdapterSelector::NameContains(s) => {
                    let needle = s.to_lowercase();
                    match all
                        .iter()
                        .position(|a| a.get_info().name.to_lowercase().contains(&needle))
                    {
                        Some(i) => (all[i].clone(), i),
                        None => {
                            return Err(GpuError::AdapterNotFound {
                                selector: format!("name containing '{s}'"),
                                available: listing(),
                            })
                        }
                    }
                }
            }
        };
        let ainfo = adapter.get_info();
        let info = summary(index, &adapter);
        let features = adapter.features() & WANTED_FEATURES;
        let mut limits = adapter.limits();
        if let Some(cap) = options.max_binding_bytes {
            limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(cap);
        }
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("relax-gpu-runtime"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| GpuError::RequestDevice {
            adapter: info.name.clone(),
            message: e.to_string(),
        })?;
        let shared = Arc::new(Shared {
            _instance: instance,
            limits: device.limits(),
            features: device.features(),
            device,
            queue,
            info,
            subgroup_sizes: (ainfo.subgroup_min_size, ainfo.subgroup_max_size),
            options,
            lost: AtomicBool::new(false),
            lost_reason: Mutex::new(None),
            last_uncaptured: Mutex::new(None),
            counters: Counters::default(),
            next_id: AtomicU64::new(1),
            pool: Mutex::new(PoolState::default()),
            staging: StagingState::default(),
            kernels: DashMap::new(),
            pipeline_cache: OnceLock::new(),
            pipeline_cache_key: wgpu::util::pipeline_cache_key(&ainfo),
            layouts: DashMap::new(),
            bind_groups: DashMap::new(),
            timestamps: Mutex::new(None),
            pending: Mutex::new(Pending::default()),
        });
        // Device-lost and uncaptured-error callbacks hold a weak reference so
        // that they do not keep the shared state alive.
        let weak = Arc::downgrade(&shared);
        shared.device.set_device_lost_callback(move |reason, message| {
            if let Some(s) = weak.upgrade() {
                if let Ok(mut r) = s.lost_reason.lock() {
                    *r = Some(format!("{reason:?}: {message}"));
                }
                s.lost.store(true, Ordering::Release);
            }
        });
        let weak = Arc::downgrade(&shared);
        shared.device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Some(s) = weak.upgrade() {
                bump(&s.counters.uncaptured_errors, 1);
                if let Ok(mut last) = s.last_uncaptured.lock() {
                    *last = Some(error_text(&e));
                }
            }
        }));
        Ok(GpuRuntime { shared })
    }

    /// The adapter this runtime runs on.
    pub fn adapter_info(&self) -> &AdapterSummary {
        &self.shared.info
    }

    /// The device limits in effect (the adapter's real limits, not wgpu's defaults).
    pub fn limits(&self) -> &wgpu::Limits {
        &self.shared.limits
    }

    /// The enabled optional features (a subset of [`WANTED_FEATURES`]).
    pub fn features(&self) -> wgpu::Features {
        self.shared.features
    }

    /// `f16` in WGSL (`enable f16;`).
    pub fn supports_f16(&self) -> bool {
        self.shared.features.contains(wgpu::Features::SHADER_F16)
    }

    /// `i64`/`u64` in WGSL.
    pub fn supports_i64(&self) -> bool {
        self.shared.features.contains(wgpu::Features::SHADER_INT64)
    }

    /// `f64` in WGSL.
    pub fn supports_f64(&self) -> bool {
        self.shared.features.contains(wgpu::Features::SHADER_F64)
    }

    /// Subgroup operations in WGSL.
    pub fn supports_subgroups(&self) -> bool {
        self.shared.features.contains(wgpu::Features::SUBGROUP)
    }

    /// GPU timestamps in [`crate::Timing::gpu`].
    pub fn supports_timestamps(&self) -> bool {
        self.shared.features.contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// (min, max) subgroup size reported by the adapter (0 when unknown).
    pub fn subgroup_sizes(&self) -> (u32, u32) {
        self.shared.subgroup_sizes
    }

    /// Largest buffer that can be bound to a kernel.
    pub fn max_binding_bytes(&self) -> u64 {
        self.shared.limits.max_storage_buffer_binding_size
    }

    /// The raw wgpu device, for callers that need something this API lacks.
    pub fn device(&self) -> &wgpu::Device {
        &self.shared.device
    }

    /// The raw wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.shared.queue
    }

    /// Submits the batches held back by [`crate::Batch::submit`] (a run's kernels go to
    /// the queue in as few submissions as possible: held batches are submitted together
    /// with the next operation that needs the queue — a write, a read, a wait — or once
    /// [`MAX_PENDING_BATCHES`](crate::MAX_PENDING_BATCHES) are held).
    pub fn flush(&self) -> GpuResult<()> {
        self.shared.flush()
    }

    /// Waits until all submitted work has finished (held batches are submitted first).
    pub fn synchronize(&self) -> GpuResult<()> {
        self.shared.wait(None)
    }

    /// True once the device-lost callback fired.
    pub fn is_lost(&self) -> bool {
        self.shared.lost.load(Ordering::Acquire)
    }

    /// Destroys the device to exercise the device-lost path; every later call
    /// fails with [`GpuError::DeviceLost`].
    /// Returns once the device-lost callback has run (or after one second).
    pub fn simulate_device_loss(&self) {
        self.shared.device.destroy();
        // wgpu reports the loss from `poll` once the queue is empty.
        let _ = self.shared.device.poll(wgpu::PollType::wait_indefinitely());
        let start = std::time::Instant::now();
        while !self.is_lost() && start.elapsed() < Duration::from_secs(1) {
            self.shared.poll_nonblocking();
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The last wgpu error that happened outside this crate's error scopes, if any
    /// (for example from raw use of [`GpuRuntime::device`]); taking it clears it.
    pub fn take_uncaptured_error(&self) -> Option<String> {
        self.shared.last_uncaptured.lock().ok().and_then(|mut e| e.take())
    }

    /// A snapshot of all counters.
    pub fn stats(&self) -> RuntimeStats {
        let c = &self.shared.counters;
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (allocated_bytes, live_bytes, live_buffers, free_buffers) = self
            .shared
            .pool
            .lock()
            .map(|p| (p.allocated_bytes, p.live_bytes, p.live_buffers, p.free_count()))
            .unwrap_or_default();
        RuntimeStats {
            allocated_bytes,
            live_bytes,
            live_buffers,
            free_buffers,
            buffer_creations: r(&c.buffer_creations),
            pool_reuse_hits: r(&c.pool_reuse_hits),
            pool_evictions: r(&c.pool_evictions),
            staging_bytes: r(&c.staging_bytes),
            bytes_uploaded: r(&c.bytes_uploaded),
            bytes_downloaded: r(&c.bytes_downloaded),
            bytes_copied: r(&c.bytes_copied),
            kernels_compiled: r(&c.kernels_compiled),
            kernel_cache_hits: r(&c.kernel_cache_hits),
            bind_groups_created: r(&c.bind_groups_created),
            bind_group_cache_hits: r(&c.bind_group_cache_hits),
            dispatches: r(&c.dispatches),
            submits: r(&c.submits),
            uncaptured_errors: r(&c.uncaptured_errors),
        }
    }
}
