//! `EngineError`: every way a run can fail, as a value (never a panic).

use relax_ir::Diagnostic;

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
    #[error("kernel `{name}`: {message}")]
    Kernel {
        /// The PrimFunc's name.
        name: String,
        /// What happened.
        message: String,
    },
    /// A device (allocation, transfer) failed.
    #[error("device: {0}")]
    Device(String),
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
            EngineError::Kernel { name: k, message } if message.starts_with("host memory:") => {
                EngineError::HostMemory(format!("binding `{name}`: kernel `{k}`: {message}"))
            }
            EngineError::Device(m) if !m.starts_with("binding `") => {
                EngineError::Device(format!("binding `{name}`: {m}"))
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
