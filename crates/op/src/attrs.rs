//! Typed operator attributes.
//!
//! An operator with attributes has a struct here (or in its own file under
//! `defs/`) read from a call with [`OpAttrs::from_call`]. A field the call does
//! not carry takes the default the parser's schema declares for it
//! (`relax_ir::text::ops`), so each default is written once and the parser, the
//! printer (attribute order), inference and legalization all read the same one.

use crate::error::{infer_err, InferError};
use relax_ir::text::ops::{lookup_op, OpSig};
use relax_ir::{AttrValue, Call, DataType};

/// Reads the attributes of one call, with the schema's defaults.
pub struct AttrReader<'a> {
    call: &'a Call,
    sig: Option<&'static OpSig>,
}

impl<'a> AttrReader<'a> {
    /// A reader for `call`'s attributes.
    pub fn new(call: &'a Call) -> AttrReader<'a> {
        let sig = call.op.as_op().and_then(lookup_op);
        AttrReader { call, sig }
    }

    fn op(&self) -> &str {
        self.call.op.as_op().unwrap_or("the operator")
    }

    /// The value of `key`: the call's, else the schema default; `None` when
    /// unset.
    pub fn value(&self, key: &str) -> Result<AttrValue, InferError> {
        if let Some(v) = self.call.attrs.get(key) {
            return Ok(v.clone());
        }
        let get = |k: &str| self.call.attrs.get(k).cloned();
        match self.sig.and_then(|s| s.default_attr(key, &get)) {
            Some(v) => Ok(v),
            None => Err(infer_err!(Attr; "{} requires the attribute `{key}`", self.op())),
        }
    }

    fn bad(&self, key: &str, what: &str, v: &AttrValue) -> InferError {
        infer_err!(Attr; "{}: attribute `{key}` must be {what}, got {v:?}", self.op())
    }

    /// The value of `key` as `pick` reads it, else an error saying it must be `what`.
    fn read<T>(&self, key: &str, what: &str, pick: impl FnOnce(&AttrValue) -> Option<T>) -> Result<T, InferError> {
        let v = self.value(key)?;
        pick(&v).ok_or_else(|| self.bad(key, what, &v))
    }

    /// An integer.
    pub fn int(&self, key: &str) -> Result<i64, InferError> {
        self.read(key, "an integer", int_value)
    }

    /// A float (an integer is converted).
    pub fn float(&self, key: &str) -> Result<f64, InferError> {
        self.read(key, "a number", AttrValue::as_float)
    }

    /// An integer or unset.
    pub fn opt_int(&self, key: &str) -> Result<Option<i64>, InferError> {
        self.read(key, "an integer or None", |v| match v {
            AttrValue::None => Some(None),
            v => int_value(v).map(Some),
        })
    }

    /// A list of integers (a single integer is a one-item list).
    pub fn ints(&self, key: &str) -> Result<Vec<i64>, InferError> {
        let v = self.value(key)?;
        match &v {
            AttrValue::Int(i) => Ok(vec![*i]),
            AttrValue::List(items) => items
                .iter()
                .map(|x| match x {
                    AttrValue::Int(i) => Ok(*i),
                    _ => Err(self.bad(key, "a list of integers", &v)),
                })
                .collect(),
            _ => Err(self.bad(key, "a list of integers", &v)),
        }
    }

    /// A list of integers or unset.
    pub fn opt_ints(&self, key: &str) -> Result<Option<Vec<i64>>, InferError> {
        match self.value(key)? {
            AttrValue::None => Ok(None),
            _ => self.ints(key).map(Some),
        }
    }

    /// A boolean.
    pub fn bool(&self, key: &str) -> Result<bool, InferError> {
        self.read(key, "a boolean", |v| match v {
            AttrValue::Bool(b) => Some(*b),
            AttrValue::Int(i) => Some(*i != 0),
            _ => None,
        })
    }

    /// A string.
    pub fn str(&self, key: &str) -> Result<String, InferError> {
        self.read(key, "a string", |v| v.as_str().map(str::to_string))
    }

    /// A data type (required: unset or `void` is an error).
    pub fn dtype(&self, key: &str) -> Result<DataType, InferError> {
        match self.opt_dtype(key)? {
            Some(d) => Ok(d),
            None => Err(infer_err!(Attr; "{}: attribute `{key}` must be a data type", self.op())),
        }
    }

    /// A data type or unset (`void` counts as unset).
    pub fn opt_dtype(&self, key: &str) -> Result<Option<DataType>, InferError> {
        match self.value(key)? {
            AttrValue::None => Ok(None),
            AttrValue::DataType(d) if d.is_void() => Ok(None),
            AttrValue::DataType(d) => Ok(Some(d)),
            AttrValue::Str(s) if s.is_empty() || s == "void" => Ok(None),
            AttrValue::Str(s) => s
                .parse()
                .map(Some)
                .map_err(|_| infer_err!(Attr; "{}: bad dtype {s:?}", self.op())),
            v => Err(self.bad(key, "a data type", &v)),
        }
    }
}

/// An `AttrValue::Int`'s value.
fn int_value(v: &AttrValue) -> Option<i64> {
    match v {
        AttrValue::Int(i) => Some(*i),
        _ => None,
    }
}

/// A typed attribute struct.
pub trait OpAttrs: Sized {
    /// Read from a call (schema defaults for what it does not carry).
    fn from_call(call: &Call) -> Result<Self, InferError>;
}

/// A typed attribute struct and its [`OpAttrs`] reader: each field is the
/// attribute of the same name, read by the [`AttrReader`] method after `=`.
macro_rules! op_attrs {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$fmeta:meta])* pub $field:ident: $ty:ty = $read:ident,)*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl $crate::attrs::OpAttrs for $name {
            fn from_call(call: &relax_ir::Call) -> Result<$name, $crate::error::InferError> {
                let _r = $crate::attrs::AttrReader::new(call);
                Ok($name { $($field: _r.$read(stringify!($field))?,)* })
            }
        }
    };
}
pub(crate) use op_attrs;

op_attrs! {
    /// No attributes (the element-wise operators).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct NoAttrs {}
}

op_attrs! {
    /// `nn.conv1d`/`conv2d`/`conv3d` (TVM's `Conv{1,2,3}DAttrs`).
    #[derive(Clone, Debug, PartialEq)]
    pub struct ConvAttrs {
        /// One stride per spatial axis.
        pub strides: Vec<i64> = ints,
        /// Padding: the begins of the spatial axes, then their ends (as written
        /// by the parser; a shorter list is completed by inference).
        pub padding: Vec<i64> = ints,
        /// One dilation per spatial axis.
        pub dilation: Vec<i64> = ints,
        /// Number of groups.
        pub groups: i64 = int,
        /// Data layout (`"NCHW"`).
        pub data_layout: String = str,
        /// Kernel layout (`"OIHW"`).
        pub kernel_layout: String = str,
        /// Output layout (defaults to the data layout).
        pub out_layout: String = str,
        /// Output dtype (unset: the input's).
        pub out_dtype: Option<DataType> = opt_dtype,
    }
}

op_attrs! {
    /// `matmul` (TVM's `MatmulAttrs`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct MatmulAttrs {
        /// Output dtype (unset: the operands' common dtype).
        pub out_dtype: Option<DataType> = opt_dtype,
    }
}

op_attrs! {
    /// The reductions `sum`, `mean`, `max`, ... and `argmax`/`argmin` (TVM's
    /// `StatisticalAttrs`, `ArgReduceAttrs`).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct StatisticalAttrs {
        /// The reduced axes (unset: all).
        pub axis: Option<Vec<i64>> = opt_ints,
        /// Whether reduced axes stay, with extent 1.
        pub keepdims: bool = bool,
    }
}
