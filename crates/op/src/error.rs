//! The error of StructInfo inference ([`InferFn`](super::InferFn)) and of the
//! helpers it uses: what went wrong, as a [`InferErrorKind`] callers can
//! branch on, and TVM's message, which [`Display`](std::fmt::Display) prints
//! unchanged.

use std::fmt;

/// What kind of rule a call broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InferErrorKind {
    /// The wrong number of arguments.
    Arity,
    /// An argument of the wrong kind (not a tensor, not a shape, ...).
    ArgKind,
    /// An attribute that is missing or of the wrong type.
    Attr,
    /// An axis out of range or repeated.
    Axis,
    /// Shapes that cannot be broadcast together.
    Broadcast,
    /// Element types that do not agree or are not allowed.
    DType,
    /// Any other rule of the operator (dtypes, shapes, values).
    Invalid,
}

/// A failed StructInfo inference: its kind and the message (TVM's text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InferError {
    /// What kind of rule was broken.
    pub kind: InferErrorKind,
    /// The message, as TVM words it.
    pub message: String,
}

impl InferError {
    /// An error of `kind` with `message`.
    pub fn new(kind: InferErrorKind, message: impl Into<String>) -> InferError {
        InferError {
            kind,
            message: message.into(),
        }
    }

    /// An [`InferErrorKind::Invalid`] error.
    pub fn invalid(message: impl Into<String>) -> InferError {
        InferError::new(InferErrorKind::Invalid, message)
    }

    /// The same error with its message passed through `f` (to add context).
    pub fn map_message(self, f: impl FnOnce(String) -> String) -> InferError {
        InferError {
            kind: self.kind,
            message: f(self.message),
        }
    }
}

impl fmt::Display for InferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InferError {}

/// A message alone is an [`InferErrorKind::Invalid`] error.
impl From<String> for InferError {
    fn from(message: String) -> InferError {
        InferError::invalid(message)
    }
}

/// A message alone is an [`InferErrorKind::Invalid`] error.
impl From<&str> for InferError {
    fn from(message: &str) -> InferError {
        InferError::invalid(message)
    }
}

/// An [`InferError`] of kind `Invalid` (or of the kind named first, as in
/// `infer_err!(Attr; "...", ..)`) with a `format!` message.
macro_rules! infer_err {
    ($kind:ident; $($t:tt)*) => {
        $crate::error::InferError::new($crate::error::InferErrorKind::$kind, format!($($t)*))
    };
    ($($t:tt)*) => {
        $crate::error::InferError::invalid(format!($($t)*))
    };
}
pub(crate) use infer_err;
