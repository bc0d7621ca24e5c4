//! Device buffers and the size-bucketed pool they come from.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{GpuError, GpuResult};
use crate::runtime::{bump, error_text, GpuRuntime, Shared};

/// Smallest bucket in bytes.
pub const MIN_BUCKET: u64 = 256;

/// Usage of every pooled device buffer.
pub const DEVICE_BUFFER_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// The bucket (physical buffer size) used for a request of `len` bytes: at least
/// [`MIN_BUCKET`], otherwise `len` rounded up to a quarter of the power of two
/// below it (4 buckets per octave, at most 25% waste).
pub fn bucket_size(len: u64) -> u64 {
    if len <= MIN_BUCKET {
        return MIN_BUCKET;
    }
    let p = 63 - (len - 1).leading_zeros();
    let step = (1u64 << p) / 4;
    len.div_ceil(step) * step
}

pub(crate) fn round4(n: u64) -> u64 {
    n.div_ceil(4) * 4
}

/// A wgpu buffer with the runtime-wide id that keys bind-group caches.
pub(crate) struct RawBuffer {
    pub id: u64,
    pub buffer: wgpu::Buffer,
    pub size: u64,
}

#[derive(Default)]
pub(crate) struct PoolState {
    pub free: BTreeMap<u64, Vec<RawBuffer>>,
    pub allocated_bytes: u64,
    pub live_bytes: u64,
    pub live_buffers: u64,
}

impl PoolState {
    pub fn free_count(&self) -> u64 {
        self.free.values().map(|v| v.len() as u64).sum()
    }

    /// Removes free buffers, largest first, until `need` more bytes fit under
    /// `limit` (or everything when `limit` is `None`).
    fn evict(&mut self, need: u64, limit: Option<u64>, out: &mut Vec<RawBuffer>) {
        loop {
            if let Some(l) = limit {
                if self.allocated_bytes + need <= l {
                    return;
                }
            }
            let Some(mut entry) = self.free.last_entry() else {
                return;
            };
            let Some(raw) = entry.get_mut().pop() else {
                entry.remove();
                continue;
            };
            if entry.get().is_empty() {
                entry.remove();
            }
            self.allocated_bytes -= raw.size;
            out.push(raw);
        }
    }
}

/// A device buffer (usage STORAGE | COPY_SRC | COPY_DST) from the runtime's pool.
/// Its logical length is what was asked for; the physical buffer may be larger
/// (see [`bucket_size`]). Dropping it returns the memory to the pool; work already
/// submitted that uses it stays valid (the queue orders later reuse after it).
pub struct DeviceBuffer {
    raw: Option<RawBuffer>,
    len: u64,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("id", &self.id())
            .field("len", &self.len)
            .field("capacity", &self.capacity())
            .finish()
    }
}

impl DeviceBuffer {
    /// Logical size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the logical size is 0.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Physical size of the underlying buffer in bytes.
    pub fn capacity(&self) -> u64 {
        self.raw.as_ref().map(|r| r.size).unwrap_or(0)
    }

    /// Runtime-wide id of the underlying wgpu buffer (stable across pool reuse).
    pub fn id(&self) -> u64 {
        self.raw.as_ref().map(|r| r.id).unwrap_or(0)
    }

    /// Bytes bound to a kernel: the logical length rounded up to 4 (at least 4),
    /// so WGSL's `arrayLength` sees the logical element count.
    pub fn binding_size(&self) -> u64 {
        round4(self.len).clamp(4, self.capacity().max(4))
    }

    /// The underlying wgpu buffer.
    pub fn raw(&self) -> &wgpu::Buffer {
        // `raw` is only `None` inside `drop`.
        &self.raw.as_ref().expect("DeviceBuffer used after drop").buffer
    }

    /// True if both handles share the runtime (buffers of different runtimes cannot mix).
    pub(crate) fn same_runtime(&self, shared: &Arc<Shared>) -> bool {
        Arc::ptr_eq(&self.shared, shared)
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let Some(raw) = self.raw.take() else { return };
        if let Ok(mut pool) = self.shared.pool.lock() {
            pool.live_bytes -= raw.size;
            pool.live_buffers -= 1;
            if self.shared.lost.load(std::sync::atomic::Ordering::Relaxed) {
                pool.allocated_bytes -= raw.size;
                return;
            }
            pool.free.entry(raw.size).or_default().push(raw);
        }
    }
}

impl Shared {
    /// Destroys evicted buffers and forgets bind groups that reference them.
    pub(crate) fn destroy_evicted(&self, evicted: Vec<RawBuffer>) {
        if evicted.is_empty() {
            return;
        }
        // Held batches may use them: they must reach the queue before the buffers go.
        let _ = self.flush();
        bump(&self.counters.pool_evictions, evicted.len() as u64);
        let ids: Vec<u64> = evicted.iter().map(|r| r.id).collect();
        self.bind_groups.retain(|k, _| !k.references_any(&ids));
        for r in evicted {
            r.buffer.destroy();
        }
    }
}

impl GpuRuntime {
    /// Allocates a device buffer of `len` bytes from the pool. The contents are
    /// unspecified (a reused buffer keeps old data); see [`GpuRuntime::alloc_zeroed`].
    ///
    /// A buffer may exceed the max storage binding size (up to `max_buffer_size`);
    /// such a buffer can only be bound in ranges ([`crate::Batch::dispatch_ranges`]).
    ///
    /// Errors: [`GpuError::BufferTooLarge`] when `len` exceeds the max buffer
    /// size, [`GpuError::OutOfMemory`] when the memory limit or the
    /// driver refuses, [`GpuError::DeviceLost`].
    pub fn alloc(&self, len: u64) -> GpuResult<DeviceBuffer> {
        let s = &self.shared;
        s.ensure_alive()?;
        let max_size = s.limits.max_buffer_size;
        if len > max_size {
            return Err(GpuError::BufferTooLarge {
                requested: len,
                limit: max_size,
            });
        }
        let mut size = bucket_size(len);
        if size > s.limits.max_buffer_size {
            size = round4(len).max(MIN_BUCKET);
        }
        let limit = s.options.memory_limit_bytes;
        let mut evicted = Vec::new();
        {
            let mut pool = s.pool.lock().map_err(|_| poisoned())?;
            if let Some(list) = pool.free.get_mut(&size) {
                if let Some(raw) = list.pop() {
                    pool.live_bytes += size;
                    pool.live_buffers += 1;
                    drop(pool);
                    bump(&s.counters.pool_reuse_hits, 1);
                    return Ok(DeviceBuffer {
                        raw: Some(raw),
                        len,
                        shared: s.clone(),
                    });
                }
            }
            if let Some(l) = limit {
                pool.evict(size, Some(l), &mut evicted);
                if pool.allocated_bytes + size > l {
                    let allocated = pool.allocated_bytes;
                    drop(pool);
                    s.destroy_evicted(evicted);
                    return Err(GpuError::OutOfMemory {
                        requested: size,
                        allocated,
                        limit,
                        detail: "simulated memory limit reached".into(),
                    });
                }
            }
            // Reserve before creating so concurrent allocations respect the limit.
            pool.allocated_bytes += size;
            pool.live_bytes += size;
            pool.live_buffers += 1;
        }
        s.destroy_evicted(evicted);
        let id = s.new_id();
        let (buffer, err) = s.scoped(|| {
            s.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size,
                usage: DEVICE_BUFFER_USAGE,
                mapped_at_creation: false,
            })
        });
        if let Some(e) = err {
            let allocated = {
                let mut pool = s.pool.lock().map_err(|_| poisoned())?;
                pool.allocated_bytes -= size;
                pool.live_bytes -= size;
                pool.live_buffers -= 1;
                pool.allocated_bytes
            };
            s.ensure_alive()?;
            return Err(GpuError::OutOfMemory {
                requested: size,
                allocated,
                limit,
                detail: error_text(&e),
            });
        }
        bump(&s.counters.buffer_creations, 1);
        Ok(DeviceBuffer {
            raw: Some(RawBuffer { id, buffer, size }),
            len,
            shared: s.clone(),
        })
    }

    /// Frees every cached (unused) buffer and staging buffer.
    pub fn trim(&self) {
        let s = &self.shared;
        let _ = s.flush();
        let mut evicted = Vec::new();
        if let Ok(mut pool) = s.pool.lock() {
            pool.evict(0, None, &mut evicted);
        }
        s.destroy_evicted(evicted);
        s.staging.clear(&s.counters);
        if let Ok(mut p) = s.pending.lock() {
            p.clear_arena(&s.counters);
        }
        s.bind_groups.clear();
    }
}

pub(crate) fn poisoned() -> GpuError {
    GpuError::Internal("lock poisoned by a panic in another thread".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets() {
        assert_eq!(bucket_size(0), 256);
        assert_eq!(bucket_size(256), 256);
        assert_eq!(bucket_size(257), 320);
        assert_eq!(bucket_size(1024), 1024);
        assert_eq!(bucket_size(1025), 1280);
        assert_eq!(bucket_size(4 << 20), 4 << 20);
        assert_eq!(bucket_size((4 << 20) + 1), 5 << 20);
        for len in [1u64, 300, 999, 12345, 1 << 20, 3_000_001] {
            let b = bucket_size(len);
            assert!(b >= len && b.is_multiple_of(4), "{len} -> {b}");
            assert!(b <= (len * 5 / 4).max(256), "{len} -> {b}");
        }
    }
}
