//! The error type of the runtime.

use thiserror::Error;

/// Everything that can go wrong in the runtime. Every public operation returns
/// `Result<_, GpuError>`; nothing in this crate panics on a caller's input.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum GpuError {
    /// No usable adapter (GPU or software rasterizer) was found.
    #[error(
        "no GPU adapter found ({detail}); a Vulkan, Metal or DX12 driver is needed \
         (on Debian/Ubuntu the software driver lavapipe works: \
         `apt-get install mesa-vulkan-drivers libvulkan1`)"
    )]
    NoAdapter {
        /// What was tried.
        detail: String,
    },
    /// An adapter was requested by index or name, but none matched.
    #[error("no adapter matches {selector}; available adapters: [{}]", available.join(", "))]
    AdapterNotFound {
        /// The selector as text.
        selector: String,
        /// One line per available adapter.
        available: Vec<String>,
    },
    /// The adapter refused to create a device.
    #[error("request_device failed on adapter '{adapter}': {message}")]
    RequestDevice {
        /// Adapter name.
        adapter: String,
        /// wgpu's message.
        message: String,
    },
    /// Allocation failed: the simulated memory limit or the driver ran out of memory.
    #[error(
        "out of GPU memory: requested {requested} bytes with {allocated} bytes already allocated{}: {detail}",
        limit.map(|l| format!(" (limit {l} bytes)")).unwrap_or_default()
    )]
    OutOfMemory {
        /// Bytes requested by the failed allocation.
        requested: u64,
        /// Bytes held by the pool (live and cached) at the time.
        allocated: u64,
        /// The configured `memory_limit_bytes`, if any.
        limit: Option<u64>,
        /// Where the failure came from.
        detail: String,
    },
    /// The device was lost (driver reset, `destroy`, ...); the runtime is unusable.
    #[error("GPU device lost: {0}")]
    DeviceLost(String),
    /// A buffer is larger than the device's maximum storage-buffer binding size.
    #[error("buffer of {requested} bytes exceeds the device's max storage buffer binding size of {limit} bytes")]
    BindingTooLarge {
        /// Requested size in bytes.
        requested: u64,
        /// `max_storage_buffer_binding_size`.
        limit: u64,
    },
    /// A buffer is larger than the device's maximum buffer size (`max_buffer_size`).
    #[error("buffer of {requested} bytes exceeds the device's max buffer size of {limit} bytes")]
    BufferTooLarge {
        /// Requested size in bytes.
        requested: u64,
        /// `max_buffer_size`.
        limit: u64,
    },
    /// The WGSL source was rejected by naga (parse or validation error).
    #[error("shader rejected (entry point '{entry_point}'): {message}")]
    ShaderRejected {
        /// Entry point that was being compiled.
        entry_point: String,
        /// naga's formatted diagnostic.
        message: String,
    },
    /// The compute pipeline could not be created (missing entry point, layout mismatch...).
    #[error("compute pipeline rejected (entry point '{entry_point}'): {message}")]
    PipelineRejected {
        /// Entry point that was being compiled.
        entry_point: String,
        /// wgpu's message.
        message: String,
    },
    /// Mapping a staging buffer failed.
    #[error("buffer mapping failed: {0}")]
    Map(String),
    /// wgpu reported a validation error while encoding or submitting work.
    #[error("wgpu validation error: {0}")]
    Validation(String),
    /// The caller passed inconsistent arguments (wrong buffer count, bad range, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A dispatch asked for more workgroups than the device allows in one dimension.
    #[error("dispatch of {requested:?} workgroups exceeds the device's limit of {limit} per dimension")]
    TooManyWorkgroups {
        /// Requested workgroup counts.
        requested: [u32; 3],
        /// `max_compute_workgroups_per_dimension`.
        limit: u32,
    },
    /// An internal invariant failed (for example a lock poisoned by a panic elsewhere).
    #[error("internal runtime error: {0}")]
    Internal(String),
    /// Waiting for the device timed out.
    #[error("timed out waiting for the GPU")]
    Timeout,
}

/// Shorthand result type.
pub type GpuResult<T> = Result<T, GpuError>;
