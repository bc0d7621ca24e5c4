//! Host <-> device transfers through reused, mapped staging buffers.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::buffer::{bucket_size, poisoned, round4, DeviceBuffer};
use crate::error::{GpuError, GpuResult};
use crate::runtime::{bump, error_text, Counters, GpuRuntime, Shared};

/// Transfers are split into chunks of at most this many bytes, each through one
/// staging buffer.
pub const STAGING_CHUNK: u64 = 16 << 20;

/// Upload staging memory kept for reuse; beyond it, uploads wait for in-flight
/// staging buffers instead of creating new ones.
const STAGING_CAP: u64 = 64 << 20;

const PENDING: u8 = 0;
const READY: u8 = 1;
const FAILED: u8 = 2;

/// A MAP_WRITE | COPY_SRC buffer; mapped when `state` is READY.
struct UploadStaging {
    buffer: wgpu::Buffer,
    size: u64,
    state: Arc<AtomicU8>,
}

#[derive(Default)]
pub(crate) struct StagingState {
    upload: Mutex<Vec<UploadStaging>>,
    upload_bytes: AtomicU64,
    /// MAP_READ | COPY_DST buffers, unmapped while idle.
    readback: Mutex<Vec<(wgpu::Buffer, u64)>>,
    readback_bytes: AtomicU64,
}

impl StagingState {
    pub fn clear(&self, counters: &Counters) {
        if let Ok(mut l) = self.upload.lock() {
            // Pending buffers are simply dropped: wgpu keeps them alive until
            // their copies finish.
            let freed: u64 = l.iter().map(|s| s.size).sum();
            l.clear();
            self.upload_bytes.fetch_sub(freed, Ordering::Relaxed);
            counters.staging_bytes.fetch_sub(freed, Ordering::Relaxed);
        }
        if let Ok(mut l) = self.readback.lock() {
            let freed: u64 = l.iter().map(|s| s.1).sum();
            l.clear();
            self.readback_bytes.fetch_sub(freed, Ordering::Relaxed);
            counters.staging_bytes.fetch_sub(freed, Ordering::Relaxed);
        }
    }
}

impl Shared {
    fn acquire_upload(&self, need: u64) -> GpuResult<UploadStaging> {
        let st = &self.staging;
        for attempt in 0..3 {
            let mut pending = false;
            {
                let mut list = st.upload.lock().map_err(|_| poisoned())?;
                let mut freed = 0;
                list.retain(|s| {
                    let failed = s.state.load(Ordering::Acquire) == FAILED;
                    if failed {
                        freed += s.size;
                    }
                    !failed
                });
                st.upload_bytes.fetch_sub(freed, Ordering::Relaxed);
                self.counters.staging_bytes.fetch_sub(freed, Ordering::Relaxed);
                let best = list
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.size >= need && s.state.load(Ordering::Acquire) == READY)
                    .min_by_key(|(_, s)| s.size)
                    .map(|(i, _)| i);
                if let Some(i) = best {
                    return Ok(list.swap_remove(i));
                }
                pending |= list.iter().any(|s| s.state.load(Ordering::Acquire) == PENDING);
            }
            match attempt {
                0 if pending => self.poll_nonblocking(),
                1 if pending && st.upload_bytes.load(Ordering::Relaxed) + bucket_size(need) > STAGING_CAP => {
                    self.wait(None)?
                }
                _ => break,
            }
        }
        let size = bucket_size(need);
        let usage = wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC;
        let buffer = self.create_aux_buffer("upload staging", "an upload staging buffer", size, usage, true)?;
        st.upload_bytes.fetch_add(size, Ordering::Relaxed);
        bump(&self.counters.staging_bytes, size);
        Ok(UploadStaging {
            buffer,
            size,
            state: Arc::new(AtomicU8::new(READY)),
        })
    }

    /// Starts re-mapping a used upload staging buffer and returns it to the list.
    fn release_upload(&self, s: UploadStaging) {
        let st = &self.staging;
        if st.upload_bytes.load(Ordering::Relaxed) > STAGING_CAP {
            st.upload_bytes.fetch_sub(s.size, Ordering::Relaxed);
            self.counters.staging_bytes.fetch_sub(s.size, Ordering::Relaxed);
            return;
        }
        s.state.store(PENDING, Ordering::Release);
        let state = s.state.clone();
        s.buffer.map_async(wgpu::MapMode::Write, .., move |r| {
            state.store(if r.is_ok() { READY } else { FAILED }, Ordering::Release);
        });
        if let Ok(mut l) = st.upload.lock() {
            l.push(s);
        }
    }

    fn acquire_readback(&self, need: u64) -> GpuResult<(wgpu::Buffer, u64)> {
        let st = &self.staging;
        {
            let mut list = st.readback.lock().map_err(|_| poisoned())?;
            let best = list
                .iter()
                .enumerate()
                .filter(|(_, s)| s.1 >= need)
                .min_by_key(|(_, s)| s.1)
                .map(|(i, _)| i);
            if let Some(i) = best {
                return Ok(list.swap_remove(i));
            }
        }
        let size = bucket_size(need);
        let usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        let buffer = self.create_aux_buffer("readback staging", "a readback staging buffer", size, usage, false)?;
        st.readback_bytes.fetch_add(size, Ordering::Relaxed);
        bump(&self.counters.staging_bytes, size);
        Ok((buffer, size))
    }

    fn release_readback(&self, b: (wgpu::Buffer, u64)) {
        let st = &self.staging;
        if st.readback_bytes.load(Ordering::Relaxed) > STAGING_CAP {
            st.readback_bytes.fetch_sub(b.1, Ordering::Relaxed);
            self.counters.staging_bytes.fetch_sub(b.1, Ordering::Relaxed);
            return;
        }
        if let Ok(mut l) = st.readback.lock() {
            l.push(b);
        }
    }

    /// Submits one encoder, after the held batches, inside error scopes.
    pub(crate) fn submit_encoder(&self, encoder: wgpu::CommandEncoder) -> GpuResult<wgpu::SubmissionIndex> {
        let buf = self.finish(encoder)?;
        self.submit_after_pending(buf)
    }

    /// The error a failed encoding or submission reports.
    pub(crate) fn submit_error(&self, e: &wgpu::Error) -> GpuError {
        match e {
            wgpu::Error::OutOfMemory { .. } => GpuError::OutOfMemory {
                requested: 0,
                allocated: self.pool.lock().map(|p| p.allocated_bytes).unwrap_or(0),
                limit: self.options.memory_limit_bytes,
                detail: error_text(e),
            },
            _ => GpuError::Validation(error_text(e)),
        }
    }

    /// Waits for a map_async callback delivered through `rx`.
    fn wait_map(
        &self,
        idx: wgpu::SubmissionIndex,
        rx: &mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
    ) -> GpuResult<()> {
        self.wait(Some(idx))?;
        let start = Instant::now();
        let limit = self.options.wait_timeout.unwrap_or(Duration::from_secs(600));
        loop {
            match rx.recv_timeout(Duration::from_millis(1)) {
                Ok(r) => return r.map_err(|e| GpuError::Map(e.to_string())),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    self.ensure_alive()?;
                    return Err(GpuError::Map("map callback dropped".into()));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.ensure_alive()?;
                    if start.elapsed() > limit {
                        return Err(GpuError::Timeout);
                    }
                    self.poll_nonblocking();
                }
            }
        }
    }
}

pub(crate) fn check_range(what: &str, buf: &DeviceBuffer, offset: u64, len: u64) -> GpuResult<()> {
    if !offset.is_multiple_of(4) {
        return Err(GpuError::InvalidArgument(format!(
            "{what}: offset {offset} is not a multiple of 4"
        )));
    }
    if offset.checked_add(len).is_none_or(|end| end > buf.len()) {
        return Err(GpuError::InvalidArgument(format!(
            "{what}: range {offset}..{offset}+{len} is outside the buffer of {} bytes",
            buf.len()
        )));
    }
    if !len.is_multiple_of(4) && offset + len != buf.len() {
        return Err(GpuError::InvalidArgument(format!(
            "{what}: length {len} is not a multiple of 4 and does not end at the buffer's end"
        )));
    }
    Ok(())
}

impl GpuRuntime {
    fn check_owner(&self, buf: &DeviceBuffer) -> GpuResult<()> {
        if buf.same_runtime(&self.shared) {
            Ok(())
        } else {
            Err(GpuError::InvalidArgument(
                "buffer belongs to a different GpuRuntime".into(),
            ))
        }
    }

    /// Allocates a buffer and uploads `data` into it.
    pub fn upload(&self, data: &[u8]) -> GpuResult<DeviceBuffer> {
        let buf = self.alloc(data.len() as u64)?;
        self.write(&buf, 0, data)?;
        Ok(buf)
    }

    /// Allocates a buffer and uploads a slice of plain values into it.
    pub fn upload_pod<T: bytemuck::Pod>(&self, data: &[T]) -> GpuResult<DeviceBuffer> {
        self.upload(bytemuck::cast_slice(data))
    }

    /// Writes a slice of plain values at byte `offset` of `dst` (see [`GpuRuntime::write`]).
    pub fn write_pod<T: bytemuck::Pod>(&self, dst: &DeviceBuffer, offset: u64, data: &[T]) -> GpuResult<()> {
        self.write(dst, offset, bytemuck::cast_slice(data))
    }

    /// Allocates a buffer of `len` bytes filled with zeros.
    pub fn alloc_zeroed(&self, len: u64) -> GpuResult<DeviceBuffer> {
        let buf = self.alloc(len)?;
        let mut enc = self
            .shared
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        enc.clear_buffer(buf.raw(), 0, None);
        self.shared.submit_encoder(enc)?;
        Ok(buf)
    }

    /// Writes `data` at byte `offset` of `dst` through mapped staging buffers.
    /// Returns once the copy is submitted (later work on the queue sees the data).
    /// `offset` must be a multiple of 4, and so must `data.len()` unless the write
    /// ends at the buffer's end.
    pub fn write(&self, dst: &DeviceBuffer, offset: u64, data: &[u8]) -> GpuResult<()> {
        let s = &self.shared;
        s.ensure_alive()?;
        self.check_owner(dst)?;
        check_range("write", dst, offset, data.len() as u64)?;
        for (i, chunk) in data.chunks(STAGING_CHUNK as usize).enumerate() {
            let n = chunk.len();
            let n4 = round4(n as u64);
            let staging = s.acquire_upload(n4)?;
            {
                let mut view = staging
                    .buffer
                    .get_mapped_range_mut(0..n4)
                    .map_err(|e| GpuError::Map(e.to_string()))?;
                view.slice(..n).copy_from_slice(chunk);
                if n4 as usize > n {
                    view.slice(n..).copy_from_slice(&[0u8; 3][..n4 as usize - n]);
                }
            }
            staging.buffer.unmap();
            let mut enc = s
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
            let dst_off = offset + i as u64 * STAGING_CHUNK;
            enc.copy_buffer_to_buffer(&staging.buffer, 0, dst.raw(), dst_off, n4);
            let r = s.submit_encoder(enc);
            s.release_upload(staging);
            r?;
        }
        bump(&s.counters.bytes_uploaded, data.len() as u64);
        Ok(())
    }

    /// Reads the whole logical contents of `src` (waits for pending work).
    pub fn read(&self, src: &DeviceBuffer) -> GpuResult<Vec<u8>> {
        self.read_range(src, 0, src.len())
    }

    /// Reads `src` as a vector of plain values; its length must be a multiple of
    /// the value size.
    pub fn read_pod<T: bytemuck::Pod>(&self, src: &DeviceBuffer) -> GpuResult<Vec<T>> {
        let size = std::mem::size_of::<T>() as u64;
        if size == 0 || !src.len().is_multiple_of(size) {
            return Err(GpuError::InvalidArgument(format!(
                "buffer of {} bytes is not a whole number of {size}-byte values",
                src.len()
            )));
        }
        let bytes = self.read(src)?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// Reads `len` bytes at `offset` of `src` (waits for pending work). `offset`
    /// must be a multiple of 4, and so must `len` unless the range ends at the
    /// buffer's end.
    pub fn read_range(&self, src: &DeviceBuffer, offset: u64, len: u64) -> GpuResult<Vec<u8>> {
        let mut out = vec![0u8; len as usize];
        self.read_into(src, offset, &mut out)?;
        Ok(out)
    }

    /// Reads `out.len()` bytes at `offset` of `src` into `out` (waits for pending
    /// work); lets callers reuse host memory. Chunks are double-buffered: the copy
    /// of chunk i+1 runs while chunk i is copied out.
    pub fn read_into(&self, src: &DeviceBuffer, offset: u64, out: &mut [u8]) -> GpuResult<()> {
        let s = &self.shared;
        s.ensure_alive()?;
        self.check_owner(src)?;
        let len = out.len() as u64;
        check_range("read", src, offset, len)?;
        type InFlight = (
            (wgpu::Buffer, u64),
            usize,
            usize,
            wgpu::SubmissionIndex,
            mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
        );
        let finish = |(staging, pos, n, idx, rx): InFlight, out: &mut [u8]| -> GpuResult<()> {
            s.wait_map(idx, &rx)?;
            {
                let view = staging
                    .0
                    .get_mapped_range(0..round4(n as u64))
                    .map_err(|e| GpuError::Map(e.to_string()))?;
                out[pos..pos + n].copy_from_slice(&view[..n]);
            }
            staging.0.unmap();
            s.release_readback(staging);
            Ok(())
        };
        let mut in_flight: std::collections::VecDeque<InFlight> = Default::default();
        let mut pos = 0u64;
        while pos < len {
            let n = (len - pos).min(STAGING_CHUNK);
            let n4 = round4(n);
            let staging = s.acquire_readback(n4)?;
            let mut enc = s
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
            enc.copy_buffer_to_buffer(src.raw(), offset + pos, &staging.0, 0, n4);
            let idx = s.submit_encoder(enc)?;
            let (tx, rx) = mpsc::channel();
            staging.0.map_async(wgpu::MapMode::Read, 0..n4, move |r| {
                let _ = tx.send(r);
            });
            in_flight.push_back((staging, pos as usize, n as usize, idx, rx));
            if in_flight.len() >= 2 {
                if let Some(f) = in_flight.pop_front() {
                    finish(f, out)?;
                }
            }
            pos += n;
        }
        while let Some(f) = in_flight.pop_front() {
            finish(f, out)?;
        }
        bump(&s.counters.bytes_downloaded, len);
        Ok(())
    }
}
