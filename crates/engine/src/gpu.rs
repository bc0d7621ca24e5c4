//! The wgpu device as a [`DeviceBackend`]: tensors placed on a GPU VDevice live in
//! `relax_gpu_runtime` buffers.

use std::sync::Arc;

use relax_gpu_runtime::{AdapterSelector, GpuError, GpuRuntime, RuntimeOptions};
use relax_ir::VDevice;

use crate::device::{is_gpu_kind, DeviceBackend, DeviceMemory};
use crate::error::BackendError;

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
