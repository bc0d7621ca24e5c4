//! `EngineError`: every way a run can fail, as a value (never a panic).

use std::sync::Arc;

use relax_gpu_runtime::GpuError;
use relax_ir::Diagnostic;
use relax_jit::JitError;

/// The typed cause of a kernel or device failure, as the layer below reported it:
/// [`std::error::Error::source`] leads from here to the JIT's and the GPU runtime's
/// own errors (out of memory with its sizes, device lost, ...).
#[derive(Debug, Clone, thiserror::Error)]
pub enum BackendError {
    /// From the JIT: lowering, WGSL emission, host or GPU execution.
    #[error("{0}")]
    Jit(#[source] Arc<JitError>),
    /// From the GPU runtime.
    #[error("{0}")]
    Gpu(#[from] GpuError),
    /// From a backend without a typed error (custom executors and device backends).
    #[error("{0}")]
    Message(String),
    /// A cause, with what was being done when it happened.
    #[error("{context}: {source}")]
    Context {
        /// What was being done.
        context: String,
        /// What went wrong.
        #[source]
        source: Box<BackendError>,
    },
}

impl BackendError {
    /// This error, saying what was being done when it happened.
    pub fn context(self, context: impl Into<String>) -> BackendError {
        BackendError::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }
    /// The GPU runtime's error at the root of this one, if that is where it came from.
    pub fn gpu_error(&self) -> Option<&GpuError> {
        match self {
            BackendError::Gpu(g) => Some(g),
            BackendError::Jit(j) => match &**j {
                JitError::Gpu(g) => Some(g),
                _ => None,
            },
            BackendError::Context { source, .. } => source.gpu_error(),
            BackendError::Message(_) => None,
        }
    }
    /// The JIT's error at the root of this one, if that is where it came from.
    pub fn jit_error(&self) -> Option<&JitError> {
        match self {
            BackendError::Jit(j) => Some(j),
            BackendError::Context { source, .. } => source.jit_error(),
            _ => None,
        }
    }
}

impl From<JitError> for BackendError {
    fn from(e: JitError) -> BackendError {
        BackendError::Jit(Arc::new(e))
    }
}

impl From<String> for BackendError {
    fn from(m: String) -> BackendError {
        BackendError::Message(m)
    }
}

impl From<&str> for BackendError {
    fn from(m: &str) -> BackendError {
        BackendError::Message(m.to_string())
    }
}

/// An error raised while loading or running a Relax program.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EngineError {
    /// The entry function does not exist in the module.
    #[error("function `{0}` is not defined in the module")]
    UnknownFunction(String),
    /// The function exists but cannot be called from outside the module.
    #[error("function `{0}` is private (no global_symbol) and cannot be used as an entry point")]
    NotAnEntryPoint(String),
    /// A value does not have the structure its StructInfo demands
    /// (function arguments, return values, `MatchCast`).
    #[error("{place}: expected {expected}, got {actual}")]
    StructMismatch {
        /// Where: for example "dimension 0 of argument `x` of function `main`".
        place: String,
        /// What the StructInfo requires.
        expected: String,
        /// What the value is.
        actual: String,
    },
    /// A call received the wrong number of arguments.
    #[error("{callee} expects {expected} argument(s), got {actual}")]
    Arity {
        /// The function called.
        callee: String,
        /// Number of parameters.
        expected: usize,
        /// Number of arguments.
        actual: usize,
    },
    /// A Relax variable was used where it has no value.
    #[error("variable `{0}` is not bound in the current scope")]
    UnboundVar(String),
    /// A shape variable was used where it has no value.
    #[error("shape variable `{0}` is not bound in the current scope")]
    UnboundShapeVar(String),
    /// `ExternFunc` / `call_packed` named a symbol nobody registered.
    #[error("no packed function is registered under the symbol `{0}`")]
    UnknownPackedFunc(String),
    /// A packed function reported an error.
    #[error("packed function `{name}` failed: {message}")]
    PackedFunc {
        /// The symbol.
        name: String,
        /// Its message.
        message: String,
    },
    /// `R.assert_op` failed.
    #[error("assertion failed: {0}")]
    AssertionFailed(String),
    /// A value of the wrong kind was used (for example a non-bool `If` condition).
    #[error("{0}")]
    Type(String),
    /// Arithmetic on shape values failed (division by zero, unsupported expression).
    #[error("shape arithmetic: {0}")]
    Arith(String),
    /// An operator has no run-time implementation.
    #[error(
        "operator `{0}` has no run-time implementation (high-level operators must be legalized to call_tir first)"
    )]
    UnsupportedOp(String),
    /// A TIR kernel failed or no kernel executor is configured.
    #[error("kernel `{name}`: {source}")]
    Kernel {
        /// The PrimFunc's name.
        name: String,
        /// What happened.
        #[source]
        source: BackendError,
    },
    /// A device (allocation, transfer, synchronisation) failed.
    #[error("device: {0}")]
    Device(#[source] BackendError),
    /// A host allocation was refused: its size overflows, is over the host memory
    /// limit ([`crate::set_host_memory_limit`]) or the allocator failed. The engine
    /// stays usable.
    #[error("{0}")]
    HostMemory(String),
    /// Calls nested deeper than the configured limit.
    #[error("call depth limit of {0} exceeded (unbounded recursion?)")]
    RecursionLimit(usize),
    /// The module was rejected while being prepared for execution.
    #[error("module rejected: {}", .0.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("; "))]
    Prepare(Vec<Diagnostic>),
    /// Invalid input from the caller (for example tensor data of the wrong size).
    #[error("{0}")]
    Invalid(String),
    /// A bug or a panic caught at the run boundary.
    #[error("internal error: {0}")]
    Internal(String),
}

impl EngineError {
    /// The error, naming the binding whose value was being computed when a host
    /// allocation was refused (other errors are returned as they are).
    pub(crate) fn in_binding(self, name: &str) -> EngineError {
        match self {
            EngineError::HostMemory(m) if !m.starts_with("binding `") => {
                EngineError::HostMemory(format!("binding `{name}`: {m}"))
            }
            EngineError::Kernel { name: k, source } if matches!(source.jit_error(), Some(JitError::HostMemory(_))) => {
                EngineError::HostMemory(format!("binding `{name}`: kernel `{k}`: {source}"))
            }
            EngineError::Device(e) if !matches!(&e, BackendError::Context { context, .. } if context.starts_with("binding `")) => {
                EngineError::Device(e.context(format!("binding `{name}`")))
            }
            EngineError::PackedFunc { name: f, message } if !message.starts_with("binding `") => {
                EngineError::PackedFunc {
                    name: f,
                    message: format!("binding `{name}`: {message}"),
                }
            }
            e => e,
        }
    }

    /// A free-form error (for use in packed functions).
    pub fn msg(message: impl Into<String>) -> EngineError {
        EngineError::Invalid(message.into())
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;
