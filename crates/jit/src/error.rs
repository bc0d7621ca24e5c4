//! The error type of the JIT.

use relax_ir::DataType;

/// Errors of lowering, scheduling, code generation and execution.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// The TIR uses a construct the JIT does not support.
    #[error("unsupported TIR in `{func}`: {msg}")]
    Unsupported {
        /// The PrimFunc's name (or `<prim_func>`).
        func: String,
        /// What is unsupported.
        msg: String,
    },
    /// A data type the target cannot handle.
    #[error("data type {dtype} is not supported {context}")]
    UnsupportedDtype {
        /// The data type.
        dtype: DataType,
        /// Where it appeared / why.
        context: String,
    },
    /// The TIR is malformed (undefined variable, wrong index count, ...).
    #[error("invalid TIR: {0}")]
    InvalidIr(String),
    /// The arguments do not match the PrimFunc's parameters.
    #[error("bad arguments: {0}")]
    BadArgs(String),
    /// A tensor or index range exceeds what 32-bit GPU indexing can address.
    #[error("tensor too large for 32-bit GPU indexing: {0}")]
    TooLarge(String),
    /// The generated WGSL failed naga validation (a JIT bug).
    #[error("generated WGSL failed validation: {msg}\n--- WGSL ---\n{wgsl}")]
    Naga {
        /// The naga error.
        msg: String,
        /// The generated shader.
        wgsl: String,
    },
    /// A TIR assertion failed at run time.
    #[error("assertion failed: {0}")]
    AssertFailed(String),
    /// A host buffer could not be allocated (size overflow, over the host memory
    /// limit, or refused by the allocator).
    #[error("host memory: {0}")]
    HostMemory(String),
    /// No GPU runtime was given to the JIT.
    #[error("no GPU runtime available")]
    NoGpu,
    /// An error from the GPU runtime (kept typed: out of memory, device lost, ...).
    #[error("GPU runtime error: {0}")]
    Gpu(#[from] relax_gpu_runtime::GpuError),
    /// A GPU readback returned data of the wrong size.
    #[error("GPU readback: {0}")]
    Readback(String),
    /// A cache lock was poisoned by a panic on another thread.
    #[error("a JIT cache lock was poisoned by a panic")]
    Poisoned,
    /// A GPU kernel accessed a buffer outside its bounds (index computed from data).
    #[error("{0}")]
    OutOfBounds(String),
    /// A host kernel was given a tensor in device memory.
    #[error("argument {index} of `{func}` is in GPU memory, but the kernel runs on the host (read it back first)")]
    DeviceArg {
        /// The argument's position.
        index: usize,
        /// The PrimFunc's name.
        func: String,
    },
    /// The failure of a kernel executor outside this crate (a user's or a test's).
    #[error("{0}")]
    Custom(String),
}

/// Result alias.
pub type Result<T> = std::result::Result<T, JitError>;

/// An error unless the call `T.{op}(args)` has `n` arguments.
pub(crate) fn check_arity(op: relax_ir::tir::Intrinsic, args: &[relax_ir::tir::PrimExpr], n: usize) -> Result<()> {
    if args.len() == n {
        Ok(())
    } else {
        Err(JitError::InvalidIr(format!(
            "T.{op} takes {n} arguments, {} given",
            args.len()
        )))
    }
}
