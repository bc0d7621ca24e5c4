//! The wgpu device as a [`DeviceBackend`]: tensors placed on a GPU VDevice live in
//! `relax_gpu_runtime` buffers.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use relax_gpu_runtime::{AdapterSelector, GpuError, GpuRuntime, RuntimeOptions};
use relax_ir::{BaseFunc, IRModule, PrimFunc, VDevice};
use relax_jit::disk_cache::DiskCache;
use relax_jit::Jit;

use crate::device::{is_gpu_kind, DeviceBackend, DeviceMemory};
use crate::error::BackendError;

/// How the engine compiles GPU kernels (see [`crate::EngineConfig::compile`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileConfig {
    /// The persistent kernel cache folder (compiled GPU programs and the driver's
    /// pipeline cache, shared by processes); `None`, the default: kernels are cached
    /// in memory only. [`CompileConfig::user_cache`] gives the user's cache folder
    /// (`$RELAX_CACHE_DIR`, else the platform's).
    pub disk_cache: Option<PathBuf>,
    /// Compile every GPU kernel of a module in parallel when it is loaded (when its
    /// unplaced work runs on the GPU), instead of each on its first call. On by default.
    pub prewarm: bool,
    /// Worker threads of that compilation (0, the default: one per core).
    pub threads: usize,
    /// While a module of many kernels compiles, show `compiling GPU kernels: done/total`
    /// on stderr when stderr is a terminal. Off by default.
    pub progress: bool,
}

impl Default for CompileConfig {
    fn default() -> CompileConfig {
        CompileConfig {
            disk_cache: None,
            prewarm: true,
            threads: 0,
            progress: false,
        }
    }
}

impl CompileConfig {
    /// The default configuration with the persistent kernel cache in the user's
    /// cache folder ([`relax_jit::disk_cache::default_dir`]), when there is one.
    pub fn user_cache() -> CompileConfig {
        CompileConfig {
            disk_cache: relax_jit::disk_cache::default_dir(),
            ..CompileConfig::default()
        }
    }

    /// A JIT for `rt` with this configuration's persistent cache.
    pub(crate) fn jit(&self, rt: GpuRuntime) -> Jit {
        let disk = self.disk_cache.as_ref().map(|d| Arc::new(DiskCache::new(d.clone())));
        Jit::new(Some(Arc::new(rt))).with_disk_cache(disk)
    }
}

/// Fewest kernels for which the progress line is shown.
const PROGRESS_MIN: usize = 8;

/// Compile the GPU programs of every PrimFunc of `module` on `jit` in parallel (see
/// [`Jit::prewarm_gpu`]). Failures are left for the functions' first calls to report.
pub(crate) fn prewarm(jit: &Jit, module: &IRModule, config: &CompileConfig) {
    let funcs: Vec<&PrimFunc> = module
        .functions
        .values()
        .filter_map(|f| match f {
            BaseFunc::Prim(p) => Some(p),
            BaseFunc::Relax(_) => None,
        })
        .collect();
    if funcs.is_empty() {
        return;
    }
    let show = config.progress && std::io::stderr().is_terminal();
    let progress = |done: usize, total: usize| {
        if show && total >= PROGRESS_MIN {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\rcompiling GPU kernels: {done}/{total}");
            if done == total {
                let _ = write!(e, "\r\x1b[K");
            }
            let _ = e.flush();
        }
    };
    let _ = jit.prewarm_gpu(&funcs, config.threads, &progress);
}

/// A [`GpuRuntime`] serving every GPU VDevice.
#[derive(Clone)]
pub struct GpuBackend {
    rt: GpuRuntime,
}

impl GpuBackend {
    /// Open a GPU, preferring an adapter whose name contains `adapter` when given.
    pub fn open(adapter: Option<&str>) -> Result<GpuBackend, GpuError> {
        GpuBackend::open_with_limit(adapter, None)
    }
    /// Open a GPU whose buffer pool refuses to hold more than `memory_limit_bytes`
    /// (a simulated small device; `None`: the driver's limit).
    pub fn open_with_limit(adapter: Option<&str>, memory_limit_bytes: Option<u64>) -> Result<GpuBackend, GpuError> {
        let adapter = match adapter {
            Some(name) => AdapterSelector::NameContains(name.to_string()),
            None => AdapterSelector::Auto,
        };
        let rt = GpuRuntime::new(RuntimeOptions {
            adapter,
            memory_limit_bytes,
            ..RuntimeOptions::default()
        })?;
        Ok(GpuBackend { rt })
    }
    /// Serve VDevices with an existing runtime.
    pub fn from_runtime(rt: GpuRuntime) -> GpuBackend {
        GpuBackend { rt }
    }
    /// The runtime.
    pub fn runtime(&self) -> &GpuRuntime {
        &self.rt
    }
}

impl GpuBackend {
    /// `nbytes` of device memory from `alloc` (zeroed or not). The runtime works in
    /// 4-byte words: the allocation is rounded up.
    fn alloc_words(
        &self,
        nbytes: usize,
        alloc: impl Fn(&GpuRuntime, u64) -> Result<relax_gpu_runtime::DeviceBuffer, GpuError>,
    ) -> Result<Arc<dyn DeviceMemory>, BackendError> {
        let buf = alloc(&self.rt, nbytes.div_ceil(4).max(1) as u64 * 4)?;
        Ok(Arc::new(GpuBuffer {
            rt: self.rt.clone(),
            buf,
            len: nbytes,
        }))
    }
}

impl DeviceBackend for GpuBackend {
    fn name(&self) -> String {
        self.rt.adapter_info().to_string()
    }
    fn accepts(&self, vdevice: &VDevice) -> bool {
        is_gpu_kind(&vdevice.target.kind)
    }
    fn gpu_runtime(&self) -> Option<GpuRuntime> {
        Some(self.rt.clone())
    }
    fn alloc(&self, _vdevice: &VDevice, nbytes: usize) -> Result<Arc<dyn DeviceMemory>, BackendError> {
        self.alloc_words(nbytes, GpuRuntime::alloc_zeroed)
    }
    fn alloc_uninit(&self, _vdevice: &VDevice, nbytes: usize) -> Result<Arc<dyn DeviceMemory>, BackendError> {
        self.alloc_words(nbytes, GpuRuntime::alloc)
    }
}

struct GpuBuffer {
    rt: GpuRuntime,
    buf: relax_gpu_runtime::DeviceBuffer,
    len: usize,
}

impl GpuBuffer {
    /// The 4-byte aligned range covering `offset..offset + len`.
    fn aligned(&self, offset: usize, len: usize) -> Result<(usize, usize), BackendError> {
        let end = offset
            .checked_add(len)
            .filter(|&e| e <= self.len)
            .ok_or_else(|| BackendError::from("access beyond the end of a device buffer"))?;
        let start = offset / 4 * 4;
        let end = end.div_ceil(4) * 4;
        Ok((start, end))
    }
}

impl DeviceMemory for GpuBuffer {
    fn len(&self) -> usize {
        self.len
    }
    fn gpu_buffer(&self) -> Option<&relax_gpu_runtime::DeviceBuffer> {
        Some(&self.buf)
    }
    fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), BackendError> {
        if out.is_empty() {
            return Ok(());
        }
        let (start, end) = self.aligned(offset, out.len())?;
        let bytes = self
            .rt
            .read_range(&self.buf, start as u64, (end - start) as u64)
            .map_err(BackendError::from)?;
        let skip = offset - start;
        out.copy_from_slice(
            bytes
                .get(skip..skip + out.len())
                .ok_or_else(|| BackendError::from("short device read"))?,
        );
        Ok(())
    }
    fn write(&self, offset: usize, data: &[u8]) -> Result<(), BackendError> {
        if data.is_empty() {
            return Ok(());
        }
        let (start, end) = self.aligned(offset, data.len())?;
        if start == offset && end == offset + data.len() {
            return self
                .rt
                .write(&self.buf, offset as u64, data)
                .map_err(BackendError::from);
        }
        // Unaligned: read the covering words, patch them, write them back.
        let mut words = self
            .rt
            .read_range(&self.buf, start as u64, (end - start) as u64)
            .map_err(BackendError::from)?;
        let skip = offset - start;
        words
            .get_mut(skip..skip + data.len())
            .ok_or_else(|| BackendError::from("short device read"))?
            .copy_from_slice(data);
        self.rt
            .write(&self.buf, start as u64, &words)
            .map_err(BackendError::from)
    }
}
