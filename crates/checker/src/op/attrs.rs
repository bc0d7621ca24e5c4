//! Typed operator attributes.
//!
//! An operator with attributes has a struct here (or in its own file under
//! `defs/`) read from a call with [`OpAttrs::from_call`]. A field the call does
//! not carry takes the default the parser's schema declares for it
//! (`relax_ir::text::ops`), so each default is written once and the parser, the
//! printer (attribute order), inference and legalization all read the same one.

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
    pub fn value(&self, key: &str) -> Result<AttrValue, String> {
        if let Some(v) = self.call.attrs.get(key) {
            return Ok(v.clone());
        }
        let get = |k: &str| self.call.attrs.get(k).cloned();
        match self.sig.and_then(|s| s.default_attr(key, &get)) {
            Some(v) => Ok(v),
            None => Err(format!("{} requires the attribute `{key}`", self.op())),
        }
    }

    fn bad(&self, key: &str, what: &str, v: &AttrValue) -> String {
        format!("{}: attribute `{key}` must be {what}, got {v:?}", self.op())
    }

    /// An integer.
    pub fn int(&self, key: &str) -> Result<i64, String> {
        match self.value(key)? {
            AttrValue::Int(i) => Ok(i),
            v => Err(self.bad(key, "an integer", &v)),
        }
    }

    /// An integer or unset.
    pub fn opt_int(&self, key: &str) -> Result<Option<i64>, String> {
        match self.value(key)? {
            AttrValue::None => Ok(None),
            AttrValue::Int(i) => Ok(Some(i)),
            v => Err(self.bad(key, "an integer or None", &v)),
        }
    }

    /// A list of integers (a single integer is a one-item list).
    pub fn ints(&self, key: &str) -> Result<Vec<i64>, String> {
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
    pub fn opt_ints(&self, key: &str) -> Result<Option<Vec<i64>>, String> {
        match self.value(key)? {
            AttrValue::None => Ok(None),
            _ => self.ints(key).map(Some),
        }
    }

    /// A boolean.
    pub fn bool(&self, key: &str) -> Result<bool, String> {
        match self.value(key)? {
            AttrValue::Bool(b) => Ok(b),
            AttrValue::Int(i) => Ok(i != 0),
            v => Err(self.bad(key, "a boolean", &v)),
        }
    }

    /// A string.
    pub fn str(&self, key: &str) -> Result<String, String> {
        match self.value(key)? {
            AttrValue::Str(s) => Ok(s),
            v => Err(self.bad(key, "a string", &v)),
        }
    }

    /// A data type or unset (`void` counts as unset).
    pub fn opt_dtype(&self, key: &str) -> Result<Option<DataType>, String> {
        match self.value(key)? {
            AttrValue::None => Ok(None),
            AttrValue::DataType(d) if d.is_void() => Ok(None),
            AttrValue::DataType(d) => Ok(Some(d)),
            AttrValue::Str(s) if s.is_empty() || s == "void" => Ok(None),
            AttrValue::Str(s) => s
                .parse()
                .map(Some)
                .map_err(|_| format!("{}: bad dtype {s:?}", self.op())),
            v => Err(self.bad(key, "a data type", &v)),
        }
    }
}

/// A typed attribute struct.
pub trait OpAttrs: Sized {
    /// Read from a call (schema defaults for what it does not carry).
    fn from_call(call: &Call) -> Result<Self, String>;
}

/// No attributes (the element-wise operators).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoAttrs;

impl OpAttrs for NoAttrs {
    fn from_call(_call: &Call) -> Result<NoAttrs, String> {
        Ok(NoAttrs)
    }
}

/// `nn.conv1d`/`conv2d`/`conv3d` (TVM's `Conv{1,2,3}DAttrs`).
#[derive(Clone, Debug, PartialEq)]
pub struct ConvAttrs {
    /// One stride per spatial axis.
    pub strides: Vec<i64>,
    /// Padding: the begins of the spatial axes, then their ends (as written
    /// by the parser; a shorter list is completed by inference).
    pub padding: Vec<i64>,
    /// One dilation per spatial axis.
    pub dilation: Vec<i64>,
    /// Number of groups.
    pub groups: i64,
    /// Data layout (`"NCHW"`).
    pub data_layout: String,
    /// Kernel layout (`"OIHW"`).
    pub kernel_layout: String,
    /// Output layout (defaults to the data layout).
    pub out_layout: String,
    /// Output dtype (unset: the input's).
    pub out_dtype: Option<DataType>,
}

impl OpAttrs for ConvAttrs {
    fn from_call(call: &Call) -> Result<ConvAttrs, String> {
        let r = AttrReader::new(call);
        Ok(ConvAttrs {
            strides: r.ints("strides")?,
            padding: r.ints("padding")?,
            dilation: r.ints("dilation")?,
            groups: r.int("groups")?,
            data_layout: r.str("data_layout")?,
            kernel_layout: r.str("kernel_layout")?,
            out_layout: r.str("out_layout")?,
            out_dtype: r.opt_dtype("out_dtype")?,
        })
    }
}

/// `matmul` (TVM's `MatmulAttrs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulAttrs {
    /// Output dtype (unset: the operands' common dtype).
    pub out_dtype: Option<DataType>,
}

impl OpAttrs for MatmulAttrs {
    fn from_call(call: &Call) -> Result<MatmulAttrs, String> {
        Ok(MatmulAttrs {
            out_dtype: AttrReader::new(call).opt_dtype("out_dtype")?,
        })
    }
}

/// The reductions `sum`, `mean`, `max`, ... and `argmax`/`argmin` (TVM's
/// `StatisticalAttrs`, `ArgReduceAttrs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatisticalAttrs {
    /// The reduced axes (unset: all).
    pub axis: Option<Vec<i64>>,
    /// Whether reduced axes stay, with extent 1.
    pub keepdims: bool,
}

impl OpAttrs for StatisticalAttrs {
    fn from_call(call: &Call) -> Result<StatisticalAttrs, String> {
        let r = AttrReader::new(call);
        Ok(StatisticalAttrs {
            axis: r.opt_ints("axis")?,
            keepdims: r.bool("keepdims")?,
        })
    }
}
