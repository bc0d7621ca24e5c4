//! `Engine::run`: the Relax runtime.
//!
//! Evaluates Relax programs (`IRModule`s) with the semantics of the specification's
//! "Detailed Semantics": values ([`Value`]), scoping of Relax and shape variables,
//! closures and recursion, `MatchCast` and the structural checks at function entry
//! and exit, and the built-in operators (`call_tir` through a [`KernelExecutor`],
//! packed calls through a registry of Rust closures, `shape_of`, `print`,
//! `assert_op`, `to_vdevice`, ...).
//!
//! PrimFuncs run on the JIT's host executor by default, or as WGSL kernels on a GPU
//! with [`Engine::with_gpu`]; tensors moved to a GPU `VDevice` live in device memory
//! ([`gpu::GpuBackend`]). Modules are checked and normalized by `relax_checker` when
//! loaded ([`EngineConfig::check`]); a [`Loaded`] module runs from many threads.
//!
//! ```
//! use relax_engine::{Engine, Value};
//! # fn main() -> Result<(), relax_engine::EngineError> {
//! let engine = Engine::default();
//! engine.register_packed("my.double", relax_engine::Purity::Pure, |args| {
//!     let x = args[0].as_int().ok_or_else(|| relax_engine::EngineError::msg("need an int"))?;
//!     Ok(Value::int(2 * x))
//! });
//! let f = engine.packed("my.double")?;
//! assert_eq!(f.call(&[Value::int(21)])?.as_int(), Some(42));
//! # Ok(()) }
//! ```

mod builtins;
pub mod device;
mod engine;
mod error;
pub mod generate;
pub mod gpu;
mod host_lib;
mod host_pool;
mod interp;
mod kernel;
pub mod kv_cache;
mod matching;
pub mod onnx;
pub mod packed;
pub mod params;
mod place;
mod prim;
mod stats;
pub mod value;
mod weight_cache;

pub use device::{describe_vdevice, is_gpu_kind, resolve_vdevice, DeviceBackend, DeviceChoice, DeviceMemory};
pub use engine::{Engine, EngineConfig, Loaded, PreparePass, PrintSink, RunStats};
pub use error::{BackendError, EngineError, Result};
pub use gpu::CompileConfig;
pub use packed::{PackedFunc, PackedRegistry, Purity};
pub use params::{bind_args, Params};
/// The host memory limit: the largest host buffer one allocation may have (process-wide;
/// the default is three quarters of the machine's memory).
pub use relax_jit::memory::{default_host_memory_limit, host_memory_limit, set_host_memory_limit};
/// The kernel interface, shared with the JIT: kernels of host and GPU executors
/// (and of custom ones, see [`Engine::with_kernel_executor`]) run on [`KernelArg`]s.
pub use relax_jit::{CompiledKernel, HostExecutor, JitError, KernelArg, KernelDevice, KernelExecutor};
pub use value::{
    host_live_bytes, host_peak_bytes, reset_host_peak_bytes, ArrayValue, Closure, Element, Object, PrimFuncValue,
    PrimValue, Scalar, StorageObject, Tensor, Value,
};
