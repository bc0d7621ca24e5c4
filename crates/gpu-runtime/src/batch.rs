//! Recording several dispatches and copies into one submission; bind-group cache;
//! timing.

use std::num::NonZeroU64;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::buffer::{bucket_size, poisoned, round4, DeviceBuffer};
use crate::error::{GpuError, GpuResult};
use crate::runtime::{bump, error_text, Counters, GpuRuntime, Shared};
use crate::transfer::check_range;
use crate::{Access, Kernel};

/// Bind groups kept before the cache is flushed.
const MAX_CACHED_BIND_GROUPS: usize = 4096;

#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct BindGroupKey {
    layout_id: u64,
    /// (buffer id, offset, size) of each storage binding.
    buffers: Vec<(u64, u64, u64)>,
    uniform: Option<(u64, u64)>,
}

impl BindGroupKey {
    pub fn references_any(&self, ids: &[u64]) -> bool {
        self.buffers.iter().any(|(id, _, _)| ids.contains(id)) || self.uniform.is_some_and(|(id, _)| ids.contains(&id))
    }
}

/// A UNIFORM | COPY_DST buffer holding the parameter blocks of one batch.
#[derive(Clone)]
struct UniformBuf {
    id: u64,
    buffer: wgpu::Buffer,
    size: u64,
}

/// The most batches [`Batch::submit`] holds back before it submits them together.
pub const MAX_PENDING_BATCHES: usize = 64;

/// Uniform bytes the arena starts with.
const ARENA_BYTES: u64 = 64 << 10;

/// Batches encoded but not yet on the queue, and the uniform arena their parameter
/// blocks live in: each batch appends its blocks at `cursor` (bound with dynamic
/// offsets), so no held batch's parameters are overwritten, and since the arena stays
/// the same buffer, bind groups stay cached from run to run. The cursor returns to 0
/// at each submission (later writes are ordered after it on the queue).
#[derive(Default)]
pub(crate) struct Pending {
    buffers: Vec<wgpu::CommandBuffer>,
    arena: Option<UniformBuf>,
    cursor: u64,
}

impl Pending {
    /// Drops the uniform arena (batches already recorded keep it alive until they ran).
    pub fn clear_arena(&mut self, counters: &Counters) {
        if let Some(u) = self.arena.take() {
            counters
                .staging_bytes
                .fetch_sub(u.size, std::sync::atomic::Ordering::Relaxed);
        }
        self.cursor = 0;
    }
}

impl Shared {
    /// Submits the held command buffers followed by `extra` in one `queue.submit`
    /// (nothing when both are empty). Called with the pending lock held, so that the
    /// queue sees batches in the order they were recorded.
    fn submit_locked(
        &self,
        p: &mut Pending,
        extra: Option<wgpu::CommandBuffer>,
    ) -> GpuResult<Option<wgpu::SubmissionIndex>> {
        let mut buffers = std::mem::take(&mut p.buffers);
        buffers.extend(extra);
        if buffers.is_empty() {
            return Ok(None);
        }
        p.cursor = 0;
        let (idx, err) = self.scoped(|| self.queue.submit(buffers));
        bump(&self.counters.submits, 1);
        match err {
            Some(e) => {
                self.ensure_alive()?;
                Err(self.submit_error(&e))
            }
            None => Ok(Some(idx)),
        }
    }

    /// Submits `buf` after the held batches.
    pub(crate) fn submit_after_pending(&self, buf: wgpu::CommandBuffer) -> GpuResult<wgpu::SubmissionIndex> {
        let mut p = self.pending.lock().map_err(|_| poisoned())?;
        match self.submit_locked(&mut p, Some(buf))? {
            Some(idx) => Ok(idx),
            None => Err(GpuError::Internal("an empty submission".into())),
        }
    }

    /// Submits the held batches, if any.
    pub(crate) fn flush(&self) -> GpuResult<()> {
        let mut p = self.pending.lock().map_err(|_| poisoned())?;
        self.submit_locked(&mut p, None).map(|_| ())
    }

    /// Finishes `enc` inside error scopes.
    pub(crate) fn finish(&self, enc: wgpu::CommandEncoder) -> GpuResult<wgpu::CommandBuffer> {
        let (buf, err) = self.scoped(|| enc.finish());
        if let Some(e) = err {
            self.ensure_alive()?;
            return Err(self.submit_error(&e));
        }
        Ok(buf)
    }
}

/// Query set and buffers for GPU timestamps around a batch.
pub(crate) struct TimestampState {
    query_set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
}

/// Timing of one submission from [`Batch::submit_timed`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Wall-clock time from the start of encoding to the end of the wait.
    pub wall: Duration,
    /// GPU time from the start of the first compute pass to the end of the last,
    /// from timestamp queries; `None` without TIMESTAMP_QUERY or without dispatches.
    pub gpu: Option<Duration>,
}

/// A byte range of a device buffer bound to one storage binding
/// ([`Batch::dispatch_ranges`]).
#[derive(Clone, Copy, Debug)]
pub struct BufferRange<'a> {
    /// The buffer.
    pub buf: &'a DeviceBuffer,
    /// Start in bytes: a multiple of `min_storage_buffer_offset_alignment`.
    pub offset: u64,
    /// Length in bytes (a multiple of 4, at most `max_storage_buffer_binding_size`).
    pub size: u64,
}

impl<'a> BufferRange<'a> {
    /// The whole buffer (its [`DeviceBuffer::binding_size`]).
    pub fn whole(buf: &'a DeviceBuffer) -> BufferRange<'a> {
        BufferRange {
            buf,
            offset: 0,
            size: buf.binding_size(),
        }
    }
}

enum Cmd<'a> {
    Dispatch {
        kernel: Arc<Kernel>,
        buffers: Vec<BufferRange<'a>>,
        uniform_offset: Option<u32>,
        workgroups: [u32; 3],
    },
    Copy {
        src: &'a DeviceBuffer,
        src_offset: u64,
        dst: &'a DeviceBuffer,
        dst_offset: u64,
        len: u64,
    },
    Clear {
        buf: &'a DeviceBuffer,
    },
}

/// Dispatches and copies recorded in order and submitted together with one
/// `queue.submit` (consecutive dispatches share one compute pass). Buffers are
/// borrowed until the batch is submitted or dropped.
pub struct Batch<'a> {
    rt: &'a GpuRuntime,
    cmds: Vec<Cmd<'a>>,
    uniform_data: Vec<u8>,
}

impl std::fmt::Debug for Batch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("commands", &self.cmds.len())
            .field("uniform_bytes", &self.uniform_data.len())
            .finish()
    }
}

impl GpuRuntime {
    /// Starts an empty batch.
    pub fn batch(&self) -> Batch<'_> {
        Batch {
            rt: self,
            cmds: Vec::new(),
            uniform_data: Vec::new(),
        }
    }

    /// Submits one dispatch (does not wait; see [`GpuRuntime::synchronize`]).
    /// Arguments as in [`Batch::dispatch`].
    pub fn dispatch(
        &self,
        kernel: &Arc<Kernel>,
        buffers: &[&DeviceBuffer],
        uniforms: &[u8],
        workgroups: [u32; 3],
    ) -> GpuResult<()> {
        let mut b = self.batch();
        b.dispatch(kernel, buffers, uniforms, workgroups)?;
        b.submit()
    }

    /// Submits a copy of `len` bytes from `src` at `src_offset` to `dst` at `dst_offset`.
    pub fn copy(
        &self,
        src: &DeviceBuffer,
        src_offset: u64,
        dst: &DeviceBuffer,
        dst_offset: u64,
        len: u64,
    ) -> GpuResult<()> {
        let mut b = self.batch();
        b.copy(src, src_offset, dst, dst_offset, len)?;
        b.submit()
    }

    /// Allocates a new buffer with the same contents as `src`.
    pub fn duplicate(&self, src: &DeviceBuffer) -> GpuResult<DeviceBuffer> {
        let dst = self.alloc(src.len())?;
        self.copy(src, 0, &dst, 0, src.len())?;
        Ok(dst)
    }
}

impl<'a> Batch<'a> {
    fn check_owner(&self, b: &DeviceBuffer) -> GpuResult<()> {
        if b.same_runtime(&self.rt.shared) {
            Ok(())
        } else {
            Err(GpuError::InvalidArgument(
                "buffer belongs to a different GpuRuntime".into(),
            ))
        }
    }

    /// Records a dispatch of `kernel` over `workgroups` with `buffers` bound in
    /// layout order and `uniforms` as the parameter block (at most the layout's
    /// `uniform_bytes`; shorter blocks are zero-padded; must be empty when the layout
    /// has no uniform block). A buffer bound read-write may not be bound twice.
    pub fn dispatch(
        &mut self,
        kernel: &Arc<Kernel>,
        buffers: &[&'a DeviceBuffer],
        uniforms: &[u8],
        workgroups: [u32; 3],
    ) -> GpuResult<&mut Self> {
        let ranges: Vec<BufferRange<'a>> = buffers.iter().map(|b| BufferRange::whole(b)).collect();
        self.dispatch_ranges(kernel, &ranges, uniforms, workgroups)
    }

    /// Like [`Batch::dispatch`] with each storage binding a byte range of a buffer,
    /// so a buffer larger than `max_storage_buffer_binding_size` can be bound in
    /// pieces (offsets aligned to `min_storage_buffer_offset_alignment`). A range
    /// bound read-write may not overlap another range of the same buffer.
    pub fn dispatch_ranges(
        &mut self,
        kernel: &Arc<Kernel>,
        buffers: &[BufferRange<'a>],
        uniforms: &[u8],
        workgroups: [u32; 3],
    ) -> GpuResult<&mut Self> {
        let s = &self.rt.shared;
        let layout = kernel.layout();
        if kernel.owner != Arc::as_ptr(s) as usize {
            return Err(GpuError::InvalidArgument(
                "kernel belongs to a different GpuRuntime".into(),
            ));
        }
        if buffers.len() != layout.storage.len() {
            return Err(GpuError::InvalidArgument(format!(
                "kernel '{}' takes {} storage buffers, got {}",
                kernel.entry_point(),
                layout.storage.len(),
                buffers.len()
            )));
        }
        let max_bind = s.limits.max_storage_buffer_binding_size;
        let align = u64::from(s.limits.min_storage_buffer_offset_alignment.max(1));
        for (i, r) in buffers.iter().enumerate() {
            self.check_owner(r.buf)?;
            if r.size > max_bind {
                return Err(GpuError::BindingTooLarge {
                    requested: r.size,
                    limit: max_bind,
                });
            }
            if !r.offset.is_multiple_of(align)
                || r.size == 0
                || r.offset.checked_add(r.size).is_none_or(|e| e > r.buf.capacity().max(4))
            {
                return Err(GpuError::InvalidArgument(format!(
                    "kernel '{}': binding {i} range {}..+{} is not {align}-byte aligned or exceeds its buffer of {} bytes",
                    kernel.entry_point(),
                    r.offset,
                    r.size,
                    r.buf.capacity()
                )));
            }
            for (j, o) in buffers.iter().enumerate().skip(i + 1) {
                let overlap = r.offset < o.offset + o.size && o.offset < r.offset + r.size;
                if r.buf.id() == o.buf.id()
                    && overlap
                    && (layout.storage[i] == Access::ReadWrite || layout.storage[j] == Access::ReadWrite)
                {
                    return Err(GpuError::InvalidArgument(format!(
                        "kernel '{}': the same buffer is bound at bindings {i} and {j} and one is read_write",
                        kernel.entry_point()
                    )));
                }
            }
        }
        if uniforms.len() as u64 > layout.uniform_bytes as u64 {
            return Err(GpuError::InvalidArgument(format!(
                "kernel '{}' has a {}-byte uniform block, got {} bytes",
                kernel.entry_point(),
                layout.uniform_bytes,
                uniforms.len()
            )));
        }
        let limit = s.limits.max_compute_workgroups_per_dimension;
        if workgroups.iter().any(|&w| w > limit) {
            return Err(GpuError::TooManyWorkgroups {
                requested: workgroups,
                limit,
            });
        }
        let uniform_offset = if layout.uniform_bytes > 0 {
            let align = s.limits.min_uniform_buffer_offset_alignment.max(16) as u64;
            let stride = layout.uniform_bind_size().div_ceil(align) * align;
            let off = self.uniform_data.len();
            let off32 = u32::try_from(off)
                .map_err(|_| GpuError::InvalidArgument("too many uniform blocks in one batch".into()))?;
            self.uniform_data.resize(off + stride as usize, 0);
            self.uniform_data[off..off + uniforms.len()].copy_from_slice(uniforms);
            Some(off32)
        } else {
            None
        };
        self.cmds.push(Cmd::Dispatch {
            kernel: kernel.clone(),
            buffers: buffers.to_vec(),
            uniform_offset,
            workgroups,
        });
        Ok(self)
    }

    /// Records a copy of `len` bytes (offsets multiple of 4; `len` a multiple of 4
    /// unless the range ends at the buffer's end). `src` and `dst` must differ.
    pub fn copy(
        &mut self,
        src: &'a DeviceBuffer,
        src_offset: u64,
        dst: &'a DeviceBuffer,
        dst_offset: u64,
        len: u64,
    ) -> GpuResult<&mut Self> {
        self.check_owner(src)?;
        self.check_owner(dst)?;
        if src.id() == dst.id() {
            return Err(GpuError::InvalidArgument(
                "copy source and destination are the same buffer".into(),
            ));
        }
        check_range("copy source", src, src_offset, len)?;
        check_range("copy destination", dst, dst_offset, len)?;
        if round4(len) != len && (src_offset + len != src.len() || dst_offset + len != dst.len()) {
            return Err(GpuError::InvalidArgument(format!(
                "copy: length {len} is not a multiple of 4; it must end both buffers"
            )));
        }
        if len > 0 {
            self.cmds.push(Cmd::Copy {
                src,
                src_offset,
                dst,
                dst_offset,
                len,
            });
        }
        Ok(self)
    }

    /// Records filling the whole buffer with zeros.
    pub fn clear(&mut self, buf: &'a DeviceBuffer) -> GpuResult<&mut Self> {
        self.check_owner(buf)?;
        self.cmds.push(Cmd::Clear { buf });
        Ok(self)
    }

    /// Number of recorded commands.
    pub fn len(&self) -> usize {
        self.cmds.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    /// Submits the batch without waiting.
    /// The work may be held back and submitted together with later batches: before
    /// the next write, read or wait on this runtime, at [`GpuRuntime::flush`], or once
    /// [`MAX_PENDING_BATCHES`] are held (the queue's order is kept in every case).
    pub fn submit(self) -> GpuResult<()> {
        let s = self.rt.shared.clone();
        s.ensure_alive()?;
        if self.cmds.is_empty() {
            return Ok(());
        }
        let mut p = s.pending.lock().map_err(|_| poisoned())?;
        let uniform = self.uniform_range(&s, &mut p)?;
        let buf = s.finish(self.encode(&s, uniform.as_ref(), None)?)?;
        p.buffers.push(buf);
        if p.buffers.len() >= MAX_PENDING_BATCHES {
            s.submit_locked(&mut p, None)?;
        }
        Ok(())
    }

    /// Submits the batch and waits for it to finish.
    pub fn submit_and_wait(self) -> GpuResult<()> {
        let s = self.rt.shared.clone();
        let idx = self.submit_inner(None)?;
        s.wait(idx)
    }

    /// Submits, waits and reports wall-clock and (when supported) GPU time.
    pub fn submit_timed(self) -> GpuResult<Timing> {
        let start = Instant::now();
        let s = self.rt.shared.clone();
        let has_dispatch = self.cmds.iter().any(|c| matches!(c, Cmd::Dispatch { .. }));
        if !self.rt.supports_timestamps() || !has_dispatch {
            let idx = self.submit_inner(None)?;
            s.wait(idx)?;
            return Ok(Timing {
                wall: start.elapsed(),
                gpu: None,
            });
        }
        let mut guard = s.timestamps.lock().map_err(|_| poisoned())?;
        let ts = guard.get_or_insert_with(|| TimestampState {
            query_set: s.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("batch timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            }),
            resolve: s.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamp resolve"),
                size: 256,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            read: s.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamp read"),
                size: 256,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
        });
        let idx = self.submit_inner(Some(ts))?;
        s.wait(idx)?;
        let wall = start.elapsed();
        let (tx, rx) = mpsc::channel();
        ts.read.map_async(wgpu::MapMode::Read, 0..16, move |r| {
            let _ = tx.send(r);
        });
        s.wait(None)?;
        let r = rx
            .recv_timeout(Duration::from_secs(60))
            .map_err(|_| GpuError::Map("timestamp map callback did not run".into()))?;
        r.map_err(|e| GpuError::Map(e.to_string()))?;
        let ticks: [u64; 2] = {
            let view = ts
                .read
                .get_mapped_range(0..16)
                .map_err(|e| GpuError::Map(e.to_string()))?;
            bytemuck::pod_read_unaligned(&view[..16])
        };
        ts.read.unmap();
        let period = s.queue.get_timestamp_period() as f64;
        let gpu = (ticks[1] > ticks[0]).then(|| Duration::from_nanos(((ticks[1] - ticks[0]) as f64 * period) as u64));
        Ok(Timing { wall, gpu })
    }

    fn bind_group(
        &self,
        s: &Shared,
        kernel: &Kernel,
        buffers: &[BufferRange<'_>],
        uniform: Option<&UniformBuf>,
    ) -> GpuResult<wgpu::BindGroup> {
        let layout = kernel.layout();
        let key = BindGroupKey {
            layout_id: kernel.objects.id,
            buffers: buffers.iter().map(|r| (r.buf.id(), r.offset, r.size)).collect(),
            uniform: uniform
                .filter(|_| layout.uniform_bytes > 0)
                .map(|u| (u.id, layout.uniform_bind_size())),
        };
        if let Some(bg) = s.bind_groups.get(&key) {
            bump(&s.counters.bind_group_cache_hits, 1);
            return Ok(bg.clone());
        }
        let mut entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, r)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: r.buf.raw(),
                    offset: r.offset,
                    size: NonZeroU64::new(r.size),
                }),
            })
            .collect();
        if let (Some(binding), Some(u)) = (layout.uniform_binding(), uniform) {
            entries.push(wgpu::BindGroupEntry {
                binding,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &u.buffer,
                    offset: 0,
                    size: NonZeroU64::new(layout.uniform_bind_size()),
                }),
            });
        }
        let (bg, err) = s.scoped(|| {
            s.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &kernel.objects.bgl,
                entries: &entries,
            })
        });
        if let Some(e) = err {
            s.ensure_alive()?;
            return Err(GpuError::Validation(error_text(&e)));
        }
        bump(&s.counters.bind_groups_created, 1);
        if s.bind_groups.len() >= MAX_CACHED_BIND_GROUPS {
            s.bind_groups.clear();
        }
        s.bind_groups.insert(key, bg.clone());
        Ok(bg)
    }

    /// Writes this batch's parameter blocks at the arena's cursor and returns the arena
    /// with their base offset (`None` when the batch has none). Submits the held
    /// batches first when the arena is full; a batch that needs more than the whole
    /// arena gets a larger one.
    fn uniform_range(&self, s: &Shared, p: &mut Pending) -> GpuResult<Option<(UniformBuf, u32)>> {
        if self.uniform_data.is_empty() {
            return Ok(None);
        }
        let need = self.uniform_data.len() as u64;
        let size = p.arena.as_ref().map_or(0, |u| u.size);
        if need <= size && p.cursor + need > size {
            s.submit_locked(p, None)?;
        }
        if need > size {
            // Held batches keep the old arena (and its staged writes) alive.
            let size = bucket_size(need.max(ARENA_BYTES).max(2 * size));
            let usage = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
            let buffer = s.create_aux_buffer("uniform parameters", "a uniform buffer", size, usage, false)?;
            bump(&s.counters.staging_bytes, size);
            p.clear_arena(&s.counters);
            p.arena = Some(UniformBuf {
                id: s.new_id(),
                buffer,
                size,
            });
        }
        let Some(u) = p.arena.clone() else {
            return Err(GpuError::Internal("no uniform arena".into()));
        };
        let base = p.cursor;
        let base32 = u32::try_from(base).map_err(|_| GpuError::Internal("uniform arena offset overflows".into()))?;
        // Applied at the next submission, before every command buffer in it.
        s.queue.write_buffer(&u.buffer, base, &self.uniform_data);
        p.cursor += need;
        Ok(Some((u, base32)))
    }

    fn submit_inner(self, timestamps: Option<&TimestampState>) -> GpuResult<Option<wgpu::SubmissionIndex>> {
        let s = self.rt.shared.clone();
        s.ensure_alive()?;
        if self.cmds.is_empty() {
            return Ok(None);
        }
        let mut p = s.pending.lock().map_err(|_| poisoned())?;
        let uniform = self.uniform_range(&s, &mut p)?;
        let buf = s.finish(self.encode(&s, uniform.as_ref(), timestamps)?)?;
        s.submit_locked(&mut p, Some(buf))
    }

    /// Records the batch's commands into a new encoder.
    fn encode(
        &self,
        s: &Shared,
        uniform: Option<&(UniformBuf, u32)>,
        timestamps: Option<&TimestampState>,
    ) -> GpuResult<wgpu::CommandEncoder> {
        let (uniform, base) = match uniform {
            Some((u, base)) => (Some(u), *base),
            None => (None, 0),
        };
        // Bind groups first (they must outlive the passes that use them).
        let mut groups = Vec::new();
        for c in &self.cmds {
            if let Cmd::Dispatch { kernel, buffers, .. } = c {
                groups.push(self.bind_group(s, kernel, buffers, uniform)?);
            }
        }
        // Number of compute passes (runs of consecutive dispatches).
        let mut passes = 0;
        let mut prev_dispatch = false;
        for c in &self.cmds {
            let d = matches!(c, Cmd::Dispatch { .. });
            if d && !prev_dispatch {
                passes += 1;
            }
            prev_dispatch = d;
        }
        let mut enc = s
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        let mut i = 0;
        let mut group_i = 0;
        let mut pass_i = 0;
        let (mut dispatches, mut copied) = (0u64, 0u64);
        while i < self.cmds.len() {
            match &self.cmds[i] {
                Cmd::Copy {
                    src,
                    src_offset,
                    dst,
                    dst_offset,
                    len,
                } => {
                    enc.copy_buffer_to_buffer(src.raw(), *src_offset, dst.raw(), *dst_offset, round4(*len));
                    copied += len;
                    i += 1;
                }
                Cmd::Clear { buf } => {
                    enc.clear_buffer(buf.raw(), 0, None);
                    i += 1;
                }
                Cmd::Dispatch { .. } => {
                    let timestamp_writes = timestamps.map(|ts| wgpu::ComputePassTimestampWrites {
                        query_set: &ts.query_set,
                        beginning_of_pass_write_index: (pass_i == 0).then_some(0),
                        end_of_pass_write_index: (pass_i + 1 == passes).then_some(1),
                    });
                    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: None,
                        timestamp_writes,
                    });
                    let mut current: Option<u64> = None;
                    while let Some(Cmd::Dispatch {
                        kernel,
                        uniform_offset,
                        workgroups,
                        ..
                    }) = self.cmds.get(i)
                    {
                        if current != Some(kernel.id()) {
                            pass.set_pipeline(&kernel.pipeline);
                            current = Some(kernel.id());
                        }
                        let offset = uniform_offset.map(|o| base + o);
                        let offsets: &[u32] = offset.as_slice();
                        pass.set_bind_group(0, &groups[group_i], offsets);
                        pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
                        dispatches += 1;
                        group_i += 1;
                        i += 1;
                    }
                    pass_i += 1;
                }
            }
        }
        if let Some(ts) = timestamps {
            enc.resolve_query_set(&ts.query_set, 0..2, &ts.resolve, 0);
            enc.copy_buffer_to_buffer(&ts.resolve, 0, &ts.read, 0, 16);
        }
        bump(&s.counters.dispatches, dispatches);
        bump(&s.counters.bytes_copied, copied);
        Ok(enc)
    }
}
