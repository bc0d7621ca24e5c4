//! Host tensors kept resident in device memory across calls: a weight passed to
//! several kernels, or to every run, is uploaded once.
//!
//! An entry is keyed by the identity of the host memory's owner (held weakly, so a
//! freed owner can never be mistaken for a new one at the same address), the byte
//! range, and the owner's write version: the caller passes a number that moves on
//! whenever the bytes may have changed (the engine's storages count their write
//! locks), so a tensor written in place since its upload is uploaded again. A hit
//! needs no pass over the bytes (hashing them cost a pass over every weight on every
//! run).

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use relax_gpu_runtime::{DeviceBuffer, GpuRuntime};

use super::GpuJit;
use crate::error::{JitError, Result};
use crate::kernel_cache::lock;

/// Resident bytes kept before the cache drops every entry whose owner is gone
/// and, if still above, everything.
const MAX_RESIDENT_BYTES: u64 = 1 << 30;

struct Entry {
    owner: Weak<dyn Any + Send + Sync>,
    version: u64,
    buf: Arc<DeviceBuffer>,
}

/// The cache of [`Jit::resident_upload`].
#[derive(Default)]
pub(crate) struct ResidentCache {
    entries: Mutex<HashMap<(usize, usize, usize), Entry>>,
}

fn owner_addr(w: &Weak<dyn Any + Send + Sync>) -> usize {
    w.as_ptr() as *const () as usize
}

impl GpuJit {
    /// See `Jit::resident_upload`.
    pub(crate) fn resident_upload(
        &self,
        owner: &Arc<dyn Any + Send + Sync>,
        offset: usize,
        version: u64,
        bytes: &[u8],
    ) -> Result<(Arc<DeviceBuffer>, bool)> {
        let rt = &self.rt;
        let weak = Arc::downgrade(owner);
        let key = (owner_addr(&weak), offset, bytes.len());
        let cache = &self.resident;
        {
            let entries = lock(&cache.entries)?;
            if let Some(e) = entries.get(&key) {
                if e.version == version && e.owner.upgrade().is_some_and(|o| Arc::ptr_eq(&o, owner)) {
                    return Ok((e.buf.clone(), false));
                }
            }
        }
        let buf = Arc::new(upload_padded(rt, bytes)?);
        let mut entries = lock(&cache.entries)?;
        entries.insert(
            key,
            Entry {
                owner: weak,
                version,
                buf: buf.clone(),
            },
        );
        let total = |m: &HashMap<_, Entry>| m.values().map(|e| e.buf.len()).sum::<u64>();
        if total(&entries) > MAX_RESIDENT_BYTES {
            entries.retain(|_, e| e.owner.strong_count() > 0);
            if total(&entries) > MAX_RESIDENT_BYTES {
                entries.clear();
            }
        }
        Ok((buf, true))
    }

    /// See `Jit::clear_resident`.
    pub(crate) fn clear_resident(&self) {
        if let Ok(mut e) = self.resident.entries.lock() {
            e.clear();
        }
    }
}

fn upload_padded(rt: &GpuRuntime, bytes: &[u8]) -> Result<DeviceBuffer> {
    let gpu = |e: relax_gpu_runtime::GpuError| JitError::Gpu(e);
    if bytes.len().is_multiple_of(4) && !bytes.is_empty() {
        return rt.upload(bytes).map_err(gpu);
    }
    let mut v = bytes.to_vec();
    v.resize(bytes.len().div_ceil(4).max(1) * 4, 0);
    rt.upload(&v).map_err(gpu)
}
