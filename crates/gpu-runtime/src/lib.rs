//! Headless wgpu compute runtime: one device, a pooled buffer allocator, mapped
//! staging transfers, a WGSL pipeline cache and batched dispatch.
//!
//! # API in one screen
//!
//! ```no_run
//! use relax_gpu_runtime::{Access, GpuRuntime, KernelLayout, RuntimeOptions};
//! # fn main() -> Result<(), relax_gpu_runtime::GpuError> {
//! let rt = GpuRuntime::new(RuntimeOptions::default())?;      // Vulkan/Metal/DX12 first, GL last
//! println!("running on {}", rt.adapter_info());               // e.g. "#0 llvmpipe (...) (Vulkan, Cpu, ...)"
//!
//! let a = rt.upload_pod(&[1.0f32, 2.0, 3.0, 4.0])?;          // DeviceBuffer from the pool
//! let b = rt.upload_pod(&[10.0f32, 20.0, 30.0, 40.0])?;
//! let c = rt.alloc(16)?;                                      // contents unspecified
//!
//! let wgsl = r#"
//!     struct Params { n: u32 }
//!     @group(0) @binding(0) var<storage, read> a: array<f32>;
//!     @group(0) @binding(1) var<storage, read> b: array<f32>;
//!     @group(0) @binding(2) var<storage, read_write> c: array<f32>;
//!     @group(0) @binding(3) var<uniform> p: Params;
//!     @compute @workgroup_size(64)
//!     fn main(@builtin(global_invocation_id) g: vec3<u32>) {
//!         if (g.x < p.n) { c[g.x] = a[g.x] + b[g.x]; }
//!     }"#;
//! let layout = KernelLayout::new([Access::Read, Access::Read, Access::ReadWrite], 4);
//! let add = rt.create_kernel(wgsl, "main", &layout)?;        // compiled once, then cached
//! rt.dispatch(&add, &[&a, &b, &c], &4u32.to_le_bytes(), [1, 1, 1])?;
//! let out: Vec<f32> = rt.read_pod(&c)?;                       // waits for the dispatch
//!
//! let mut batch = rt.batch();                                 // many dispatches, one submit
//! batch.dispatch(&add, &[&a, &b, &c], &4u32.to_le_bytes(), [1, 1, 1])?;
//! batch.copy(&c, 0, &a, 0, 16)?;
//! let timing = batch.submit_timed()?;                         // or submit() / submit_and_wait()
//! # Ok(()) }
//! ```
//!
//! * [`GpuRuntime`] is `Send + Sync` and `Clone` (clones share everything); use it
//!   from any number of threads. [`GpuRuntime::shared_default`] gives a process-wide
//!   instance. Adapter choice: [`AdapterSelector`]; the device gets the adapter's
//!   real limits ([`GpuRuntime::limits`]) and the optional features it has among
//!   [`WANTED_FEATURES`] (f16, i64, f64, subgroups, timestamps).
//! * [`DeviceBuffer`]s come from a pool with 4 size buckets per power of two
//!   ([`bucket_size`]) and go back to it on drop. A buffer may exceed the max
//!   storage binding size (up to `max_buffer_size`, else [`GpuError::BufferTooLarge`]);
//!   binding it whole is refused with [`GpuError::BindingTooLarge`], but
//!   [`Batch::dispatch_ranges`] binds aligned ranges of it ([`BufferRange`]);
//!   [`RuntimeOptions::memory_limit_bytes`] simulates a small device for OOM tests.
//! * Transfers go through reused mapped staging buffers in chunks of [`STAGING_CHUNK`];
//!   `write`/`upload` return after submission, `read*` wait (readback is
//!   double-buffered; [`GpuRuntime::read_into`] reuses host memory). Copies between
//!   device buffers: [`GpuRuntime::copy`] or [`Batch::copy`]. All byte counts appear
//!   in [`RuntimeStats`].
//! * Timing: [`Batch::submit_timed`] returns wall-clock time and, with
//!   TIMESTAMP_QUERY, GPU time from timestamp queries.
//! * Kernels: group 0, storage buffer `i` at `@binding(i)`, the optional uniform
//!   parameter block after them (see [`KernelLayout`]). WGSL errors come back as
//!   [`GpuError::ShaderRejected`] carrying naga's diagnostic. Bind groups are cached
//!   per (layout, buffer ids).
//! * Work on the queue is ordered: a dispatch sees earlier writes, a read sees
//!   earlier dispatches; dropping a buffer after submitting work on it is safe.
//! * Few submissions: [`Batch::submit`] (and [`GpuRuntime::dispatch`] / `copy`) hold
//!   the encoded work back, and held batches reach the queue together in one
//!   `queue.submit` with the next write, read or wait, at [`GpuRuntime::flush`] /
//!   [`GpuRuntime::synchronize`], or once [`MAX_PENDING_BATCHES`] are held. Their
//!   parameter blocks share one uniform arena (dynamic offsets), so bind groups stay
//!   cached from run to run.
//! * Errors, not panics: every fallible call returns [`GpuError`]; after a device
//!   loss every call fails with [`GpuError::DeviceLost`].

mod batch;
mod buffer;
mod env;
mod error;
mod kernel;
pub mod reference;
mod runtime;
mod transfer;

pub use batch::{Batch, BufferRange, Timing, MAX_PENDING_BATCHES};
pub use buffer::{bucket_size, DeviceBuffer, DEVICE_BUFFER_USAGE, MIN_BUCKET};
pub use error::{GpuError, GpuResult};
pub use kernel::{Access, Kernel, KernelLayout};
pub use runtime::{AdapterSelector, AdapterSummary, GpuRuntime, RuntimeOptions, RuntimeStats, WANTED_FEATURES};
pub use transfer::STAGING_CHUNK;
/// The wgpu version this crate is built against.
pub use wgpu;

/// Compile-time check that the runtime can be shared between threads.
#[allow(dead_code)]
fn assert_send_sync() {
    fn check<T: Send + Sync>() {}
    check::<GpuRuntime>();
    check::<DeviceBuffer>();
    check::<Kernel>();
}
