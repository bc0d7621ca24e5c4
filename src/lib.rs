//! relax-wgpu: the Relax tensor IR with a JIT that runs it on GPUs through
//! WebGPU (wgpu) and on the host CPU.
//!
//! This facade crate re-exports the layers:
//! [`ir`] (IR, TVMScript parser and printer, arithmetic),
//! [`checker`] (well-formedness, normal form, StructInfo derivation),
//! [`jit`] (TIR lowering, WGSL emission, host executor),
//! [`gpu_runtime`] (wgpu device, buffers, pipelines) and
//! [`engine`] (`Engine::run`).

/// The `ndarray` version the engine's tensors convert to and from.
pub use ndarray;
pub use relax_checker as checker;
pub use relax_engine as engine;
pub use relax_gpu_runtime as gpu_runtime;
pub use relax_ir as ir;
pub use relax_jit as jit;
