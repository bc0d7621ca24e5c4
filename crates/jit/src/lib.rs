//! JIT for TIR `PrimFunc`s: lowering, a default GPU schedule, WGSL emission
//! (validated by naga), a kernel cache, and a host executor.
//!
//! # API
//!
//! * [`Jit::new`]`(Option<Arc<GpuRuntime>>)` creates a JIT (host only without a runtime).
//! * [`Jit::run_host`]`(&PrimFunc, &mut [KernelArg])` runs a function on the CPU:
//!   native code (Cranelift) compiled once per function, interpreter closures for
//!   what it does not support, outer spatial loops in parallel (rayon), matmul-like
//!   blocks through `matrixmultiply`'s GEMM.
//! * [`Jit::run_gpu`]`(&PrimFunc, &mut [KernelArg])` runs it on the GPU: compiled on the
//!   first call (keyed by structural hash), then only dispatched. Device buffers are
//!   bound in place (the call returns after submission); host bytes are uploaded
//!   and the ones the kernels write read back. All scalar parameters and
//!   shape variables live in one uniform block, so one pipeline serves every shape.
//! * [`Jit::wgsl`]`(&PrimFunc)` returns the [`ProgramSource`]: WGSL, workgroup size,
//!   bindings, uniform fields and launch grid of every kernel.
//! * [`Jit::counters`] reports programs and kernels compiled, cache hits and the
//!   compile time split into our part and the driver's.
//!
//! Arguments are [`KernelArg`]s in parameter order (host bytes, read-only or
//! written in place, device buffers, scalars; a [`HostTensor`] converts with
//! `KernelArg::from`), outputs written in place (destination passing). The same
//! arguments serve the [`KernelExecutor`] / [`CompiledKernel`] interface, which
//! [`HostExecutor`] and [`GpuExecutor`] implement.
//! Errors are [`JitError`]s, never panics.

mod args;
pub mod config;
mod context;
mod counters;
pub mod disk_cache;
mod error;
mod expr;
mod gpu;
mod host;
mod host_vec;
mod inline;
mod jit;
mod kernel;
mod kernel_cache;
mod loop_trips;
mod lower;
mod math;
pub mod memory;
mod profile;
mod program;
mod program_record;
mod schedule;
mod specialize;
mod tensor;
mod wgsl;

pub use context::JitCounters;
pub use error::{JitError, Result};
pub use gpu::GpuProgram;
pub use host::{HostKernel, HostOptions};
pub use jit::Jit;
pub use kernel::{CompiledKernel, GpuExecutor, HostExecutor, KernelArg, KernelDevice, KernelExecutor};
pub use profile::{KernelProfile, Profiler};
pub use program::{emit_program, ProgramSource};
pub use schedule::{Grid, ScheduleOptions, FEW_ROWS_MAX, HARDWARE_MIN_GEMM_GROUPS};
pub use tensor::HostTensor;
pub use wgsl::{Access, BindingInfo, BufRef, DeviceCaps, KernelSource, UniformField};

/// The stages behind [`Jit`] (lowering, scheduling, WGSL emission, the host
/// interpreter's integer evaluation), for this crate's tests and benchmarks. Not a
/// stable interface.
#[doc(hidden)]
pub mod internals {
    pub use crate::args::eval_int;
    pub use crate::host::native_counters;
    pub use crate::kernel_cache::kernel_hash;
    pub use crate::lower::{lower, lower_named, LoweredFunc, ParamSlot};
    pub use crate::math::erf;
    pub use crate::schedule::fused_reduction::detect as detect_fused_reduction;
    pub use crate::schedule::pool::{fused_window_kernel, pool_kernel};
    pub use crate::schedule::{schedule, Pattern, Rule, SCHEDULES};
    pub use crate::tensor::Element;
    pub use crate::wgsl::{emit_kernel, validate, HELPERS};
}
