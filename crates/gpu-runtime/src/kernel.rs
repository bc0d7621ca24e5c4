//! WGSL compute kernels: validation, pipeline creation and the pipeline cache.

use std::borrow::Cow;
use std::hash::{Hash, Hasher};
use std::num::NonZeroU64;
use std::sync::Arc;

use crate::error::{GpuError, GpuResult};
use crate::runtime::{bump, error_text, GpuRuntime, Shared};

/// How a kernel accesses one storage buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// `var<storage, read>`
    Read,
    /// `var<storage, read_write>`
    ReadWrite,
}

/// The bindings of a kernel, all in `@group(0)`: storage buffer `i` is at
/// `@binding(i)`; when `uniform_bytes > 0` a `var<uniform>` of that many bytes
/// (scalar parameters) is at `@binding(storage.len())`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct KernelLayout {
    /// Access mode of each storage buffer, in binding order.
    pub storage: Vec<Access>,
    /// Size of the uniform parameter block in bytes (0: no uniform binding).
    pub uniform_bytes: u32,
}

impl KernelLayout {
    /// A layout with these storage buffers and a uniform block of `uniform_bytes`.
    pub fn new(storage: impl Into<Vec<Access>>, uniform_bytes: u32) -> Self {
        KernelLayout {
            storage: storage.into(),
            uniform_bytes,
        }
    }

    /// The binding index of the uniform block, if there is one.
    pub fn uniform_binding(&self) -> Option<u32> {
        (self.uniform_bytes > 0).then_some(self.storage.len() as u32)
    }

    /// Bytes bound for the uniform block (rounded up to 16 as WGSL requires).
    pub(crate) fn uniform_bind_size(&self) -> u64 {
        (self.uniform_bytes as u64).div_ceil(16) * 16
    }
}

/// Bind-group layout and pipeline layout shared by kernels with the same [`KernelLayout`].
pub(crate) struct LayoutObjects {
    pub id: u64,
    pub bgl: wgpu::BindGroupLayout,
    pub pipeline_layout: wgpu::PipelineLayout,
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct KernelKey {
    source: String,
    entry_point: String,
    layout: KernelLayout,
}

/// The cache slot of one kernel: filled once, under `lock`, by the first request.
#[derive(Default)]
pub(crate) struct SlotInner {
    kernel: std::sync::OnceLock<Arc<Kernel>>,
    lock: std::sync::Mutex<()>,
}

/// A shared [`SlotInner`].
pub(crate) type KernelSlot = Arc<SlotInner>;

impl SlotInner {
    fn get(&self) -> Option<&Arc<Kernel>> {
        self.kernel.get()
    }
}

/// A compiled compute pipeline. Get one from [`GpuRuntime::create_kernel`]; run it
/// with [`GpuRuntime::dispatch`] or [`crate::Batch::dispatch`].
pub struct Kernel {
    id: u64,
    entry_point: String,
    layout: KernelLayout,
    source_hash: u64,
    pub(crate) owner: usize,
    pub(crate) objects: Arc<LayoutObjects>,
    pub(crate) pipeline: wgpu::ComputePipeline,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("id", &self.id)
            .field("entry_point", &self.entry_point)
            .field("layout", &self.layout)
            .field("source_hash", &format_args!("{:016x}", self.source_hash))
            .finish()
    }
}

impl Kernel {
    /// Runtime-wide id of this kernel.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The WGSL entry point.
    pub fn entry_point(&self) -> &str {
        &self.entry_point
    }

    /// The binding layout.
    pub fn layout(&self) -> &KernelLayout {
        &self.layout
    }

    /// Hash of the WGSL source (for logs).
    pub fn source_hash(&self) -> u64 {
        self.source_hash
    }
}

fn hash_source(s: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

impl Shared {
    fn layout_objects(&self, layout: &KernelLayout) -> Arc<LayoutObjects> {
        if let Some(o) = self.layouts.get(layout) {
            return o.clone();
        }
        self.layouts
            .entry(layout.clone())
            .or_insert_with(|| {
                let mut entries: Vec<wgpu::BindGroupLayoutEntry> = layout
                    .storage
                    .iter()
                    .enumerate()
                    .map(|(i, a)| wgpu::BindGroupLayoutEntry {
                        binding: i as u32,
                        visibility: wgpu::ShaderStages::COMPUTE,
                        ty: wgpu::BindingType::Buffer {
                            ty: wgpu::BufferBindingType::Storage {
                                read_only: *a == Access::Read,
                            },
                            has_dynamic_offset: false,
                            min_binding_size: None,
                        },
                        count: None,
                    })
                    .collect();
                if let Some(b) = layout.uniform_binding() {
                    entries.push(wgpu::BindGroupLayoutEntry {
                        binding: b,
                        visibility: wgpu::ShaderStages::COMPUTE,
                        ty: wgpu::BindingType::Buffer {
                            ty: wgpu::BufferBindingType::Uniform,
                            has_dynamic_offset: true,
                            min_binding_size: NonZeroU64::new(layout.uniform_bind_size()),
                        },
                        count: None,
                    });
                }
                let bgl = self.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: None,
                    entries: &entries,
                });
                let pipeline_layout = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: None,
                    bind_group_layouts: &[Some(&bgl)],
                    immediate_size: 0,
                });
                Arc::new(LayoutObjects {
                    id: self.new_id(),
                    bgl,
                    pipeline_layout,
                })
            })
            .clone()
    }
}

impl GpuRuntime {
    /// Compiles `wgsl` (entry point `entry_point`, bindings as in `layout`) into a
    /// compute pipeline. Identical (source, entry point, layout) triples are compiled
    /// once and the same `Arc<Kernel>` is returned afterwards.
    ///
    /// Errors: [`GpuError::ShaderRejected`] with naga's diagnostic when the WGSL does
    /// not parse or validate (including use of features the device lacks),
    /// [`GpuError::PipelineRejected`] when the entry point is missing or the shader's
    /// bindings do not match `layout`, [`GpuError::InvalidArgument`] when the layout
    /// exceeds device limits.
    pub fn create_kernel(&self, wgsl: &str, entry_point: &str, layout: &KernelLayout) -> GpuResult<Arc<Kernel>> {
        let s = &self.shared;
        s.ensure_alive()?;
        let lim = &s.limits;
        if layout.storage.len() as u64 > lim.max_storage_buffers_per_shader_stage as u64 {
            return Err(GpuError::InvalidArgument(format!(
                "kernel '{entry_point}' binds {} storage buffers; the device allows {} per stage",
                layout.storage.len(),
                lim.max_storage_buffers_per_shader_stage
            )));
        }
        if layout.uniform_bind_size() > lim.max_uniform_buffer_binding_size {
            return Err(GpuError::InvalidArgument(format!(
                "kernel '{entry_point}' has a {}-byte uniform block; the device allows {}",
                layout.uniform_bytes, lim.max_uniform_buffer_binding_size
            )));
        }
        let key = KernelKey {
            source: wgsl.to_owned(),
            entry_point: entry_point.to_owned(),
            layout: layout.clone(),
        };
        // One slot per kernel: concurrent requests for the same kernel compile it once
        // (the others wait on the slot), while different kernels compile in parallel
        // (the map's shard lock is held only to find the slot).
        let slot = match s.kernels.get(&key) {
            Some(slot) => slot.clone(),
            None => s.kernels.entry(key).or_default().clone(),
        };
        if let Some(k) = slot.get() {
            bump(&s.counters.kernel_cache_hits, 1);
            return Ok(k.clone());
        }
        let mut fresh = false;
        let mut failure = None;
        let guard = slot
            .lock
            .lock()
            .map_err(|_| GpuError::Validation("kernel cache lock poisoned".into()))?;
        if slot.get().is_none() {
            match self.compile(wgsl, entry_point, layout) {
                Ok(k) => {
                    let _ = slot.kernel.set(Arc::new(k));
                    fresh = true;
                }
                Err(e) => failure = Some(e),
            }
        }
        drop(guard);
        if let Some(e) = failure {
            return Err(e);
        }
        if !fresh {
            bump(&s.counters.kernel_cache_hits, 1);
        }
        slot.get()
            .cloned()
            .ok_or_else(|| GpuError::Validation("kernel slot left empty".into()))
    }

    /// Use the driver's pipeline cache (wgpu's `PipelineCache`, Vulkan only) for the
    /// pipelines created from now on, seeded with `data` from an earlier
    /// [`GpuRuntime::pipeline_cache_data`] (on this adapter and driver; data the
    /// driver does not accept is ignored and the cache starts empty). Only the first
    /// call has an effect. Returns whether a pipeline cache is in use: false when the
    /// device lacks `Features::PIPELINE_CACHE`.
    pub fn enable_pipeline_cache(&self, data: Option<&[u8]>) -> bool {
        let s = &self.shared;
        s.pipeline_cache
            .get_or_init(|| {
                if !s.features.contains(wgpu::Features::PIPELINE_CACHE) || s.ensure_alive().is_err() {
                    return None;
                }
                let (cache, err) = s.scoped(|| {
                    // SAFETY: wgpu requires `data` to come from `PipelineCache::get_data`
                    // on a compatible adapter. Callers pass what this method's sibling
                    // returned, read back from a file whose checksum they verified; wgpu
                    // checks its own header (wgpu version, backend, adapter, driver
                    // version) and with `fallback` starts empty on a mismatch, and the
                    // Vulkan driver validates its header in turn.
                    unsafe {
                        s.device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                            label: Some("relax-gpu-runtime"),
                            data,
                            fallback: true,
                        })
                    }
                });
                err.is_none().then_some(cache)
            })
            .is_some()
    }

    /// The contents of the pipeline cache enabled with
    /// [`GpuRuntime::enable_pipeline_cache`], to be stored for a later process
    /// (`None` when there is none or the driver gives nothing).
    pub fn pipeline_cache_data(&self) -> Option<Vec<u8>> {
        self.shared.pipeline_cache.get()?.as_ref()?.get_data()
    }

    /// A name for this adapter's pipeline cache data, unique per adapter and driver
    /// family ([`wgpu::util::pipeline_cache_key`]); `None` on backends without
    /// pipeline caches (all but Vulkan).
    pub fn pipeline_cache_key(&self) -> Option<&str> {
        self.shared.pipeline_cache_key.as_deref()
    }

    fn compile(&self, wgsl: &str, entry_point: &str, layout: &KernelLayout) -> GpuResult<Kernel> {
        let s = &self.shared;
        let objects = s.layout_objects(layout);
        let (module, err) = s.scoped(|| {
            s.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(entry_point),
                source: wgpu::ShaderSource::Wgsl(Cow::Borrowed(wgsl)),
            })
        });
        if let Some(e) = err {
            s.ensure_alive()?;
            return Err(GpuError::ShaderRejected {
                entry_point: entry_point.to_owned(),
                message: error_text(&e),
            });
        }
        let (pipeline, err) = s.scoped(|| {
            s.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry_point),
                layout: Some(&objects.pipeline_layout),
                module: &module,
                entry_point: Some(entry_point),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                cache: s.pipeline_cache.get().and_then(|c| c.as_ref()),
            })
        });
        if let Some(e) = err {
            s.ensure_alive()?;
            return Err(GpuError::PipelineRejected {
                entry_point: entry_point.to_owned(),
                message: error_text(&e),
            });
        }
        bump(&s.counters.kernels_compiled, 1);
        Ok(Kernel {
            id: s.new_id(),
            entry_point: entry_point.to_owned(),
            layout: layout.clone(),
            source_hash: hash_source(wgsl),
            owner: Arc::as_ptr(s) as usize,
            objects,
            pipeline,
        })
    }

    /// Number of kernels in the pipeline cache.
    pub fn cached_kernels(&self) -> usize {
        self.shared.kernels.iter().filter(|e| e.value().get().is_some()).count()
    }
}
