//! The error of converting one node (or one value) to Relax: what kind of
//! problem it is, and the message the importer prints after naming the node.

use std::fmt;

use relax_op::{InferError, InferErrorKind};

/// What kind of problem stopped a conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvertErrorKind {
    /// An operator, attribute value, element type or form the importer does
    /// not handle (the model may be valid).
    Unsupported,
    /// The model breaks a rule of ONNX (a missing input, a bad attribute,
    /// shapes that do not agree) or needs a value the importer cannot know.
    Invalid,
    /// StructInfo inference of an emitted Relax call failed.
    Infer(InferErrorKind),
    /// An inconsistency inside the importer.
    Internal,
}

/// A failed conversion: its kind and its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvertError {
    /// What kind of problem it is.
    pub kind: ConvertErrorKind,
    /// The message (without the node, which the importer adds).
    pub message: String,
}

impl ConvertError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ConvertErrorKind, message: impl Into<String>) -> ConvertError {
        ConvertError {
            kind,
            message: message.into(),
        }
    }

    /// A [`ConvertErrorKind::Unsupported`] error.
    pub fn unsupported(message: impl Into<String>) -> ConvertError {
        ConvertError::new(ConvertErrorKind::Unsupported, message)
    }

    /// A [`ConvertErrorKind::Invalid`] error.
    pub fn invalid(message: impl Into<String>) -> ConvertError {
        ConvertError::new(ConvertErrorKind::Invalid, message)
    }

    /// A [`ConvertErrorKind::Internal`] error.
    pub fn internal(message: impl Into<String>) -> ConvertError {
        ConvertError::new(ConvertErrorKind::Internal, message)
    }

    /// The inference error `e` of operator `op`, as `"{op}: {e}"`.
    pub fn infer(op: &str, e: InferError) -> ConvertError {
        ConvertError::new(ConvertErrorKind::Infer(e.kind), format!("{op}: {}", e.message))
    }

    /// The same error with its message passed through `f` (to add context).
    pub fn map_message(self, f: impl FnOnce(String) -> String) -> ConvertError {
        ConvertError {
            kind: self.kind,
            message: f(self.message),
        }
    }
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConvertError {}

/// A message alone is an [`ConvertErrorKind::Invalid`] error.
impl From<String> for ConvertError {
    fn from(message: String) -> ConvertError {
        ConvertError::invalid(message)
    }
}

/// A message alone is an [`ConvertErrorKind::Invalid`] error.
impl From<&str> for ConvertError {
    fn from(message: &str) -> ConvertError {
        ConvertError::invalid(message)
    }
}

/// A [`ConvertError`] of kind `Invalid` (or of the kind named first, as in
/// `convert_err!(Unsupported; "...", ..)`) with a `format!` message.
macro_rules! convert_err {
    ($kind:ident; $($t:tt)*) => {
        $crate::error::ConvertError::new($crate::error::ConvertErrorKind::$kind, format!($($t)*))
    };
    ($($t:tt)*) => {
        $crate::error::ConvertError::invalid(format!($($t)*))
    };
}
pub(crate) use convert_err;
