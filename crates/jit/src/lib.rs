//! JIT for TIR `PrimFunc`s: lowering, a default GPU schedule, WGSL emission
//! (validated by naga), a kernel cache, and a host executor.
//!
//! # API
//!
//! * [`Jit::new`]`(Option<Arc<GpuRuntime>>)` creates a JIT (host only without a runtime).
//! * [`Jit::run_host`]`(&PrimFunc, &mut [Arg])` runs a function on the CPU:
//!   native code (Cranelift) compiled once per function, interpreter closures for
//!   what it does not support, outer spatial loops in parallel (rayon), matmul-like
//!   blocks through `matrixmultiply`'s GEMM.
//! * [`Jit::run_gpu`]`(&PrimFunc, &mut [Arg])` runs it on the GPU: compiled on the first
//!   call (keyed by structural hash), then only dispatched. All scalar parameters and
//!   shape variables live in one uniform block, so one pipeline serves every shape.
//! * [`Jit::wgsl`]`(&PrimFunc)` returns the [`ProgramSource`]: WGSL, workgroup size,
//!   bindings, uniform fields and launch grid of every kernel.
//! * [`Jit::counters`] reports programs and kernels compiled, cache hits and the
//!   compile time split into our part and the driver's.
//!
//! Tensors are [`HostTensor`]s (dtype, shape, little-endian bytes); arguments are
//! [`Arg`]s in parameter order, outputs written in place (destination passing).
//! Errors are [`JitError`]s, never panics.

pub mod error;
pub mod expr;
pub mod fused_reduction;
pub mod gemm_schedule;
pub mod gpu;
pub mod host;
mod host_vec;
pub mod jit;
pub mod lower;
pub mod math;
pub mod memory;
mod oob;
pub mod pool_schedule;
pub mod profile;
mod resident;
pub mod schedule;
pub mod tensor;
pub mod wgsl;

pub use error::{JitError, Result};
pub use gpu::{GpuArg, GpuProgram};
pub use host::Arg;
pub use jit::{Jit, JitCounters, ProgramSource};
pub use profile::KernelProfile;
pub use schedule::ScheduleOptions;
pub use tensor::HostTensor;
pub use wgsl::{DeviceCaps, KernelSource};
