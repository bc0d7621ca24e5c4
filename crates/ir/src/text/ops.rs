//! Operator signatures for the text format: for each `R.<op>` the order and names of
//! its parameters and which become call arguments, attributes or StructInfo arguments.
//!
//! The table is the single source of truth for the parser (which parameters of
//! `R.sum(x, axis=1)` become `Call::args` and which `Call::attrs`, with which
//! defaults and conversions) and for the printer (attribute order).
//!
//! Conventions for the attributes stored in [`crate::relax::Call::attrs`]:
//! - keys are TVM's attribute field names, stored in TVM's field order;
//! - optional attributes that are unset hold [`AttrValue::None`];
//! - integer lists are `AttrValue::List` of `AttrValue::Int`; dtypes are `AttrValue::DataType`;
//! - `layout_transform`'s `index_map` is an `AttrValue::Map` with keys `"params"`
//!   (a list of `AttrValue::PrimExpr` variables) and `"results"` (a list of `AttrValue::PrimExpr`);
//! - `to_vdevice`'s `dst_vdevice` is the VDevice spec string `"kind:index:scope"`
//!   (the index counts the module's VDevices of that kind);
//! - `hint_on_device` holds `device_type`, `index` and `memory_scope`.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::attrs::{AttrValue, Attrs};
use crate::{DataType, PrimExpr};

/// How a call argument written as a Python literal is converted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// Any Relax expression; Python `int`/`float` become `int32`/`float32` scalars
    /// (TVM's default FFI conversion).
    Expr,
    /// A scalar: Python `int`/`float`/`bool` become `int64`/`float64`/`bool` `PrimValue`s.
    Prim,
    /// A shape: a tuple or list of dimensions becomes a `ShapeExpr`.
    Shape,
    /// A tuple: a Python tuple or list becomes a Relax `Tuple` (an expression is kept).
    Tuple,
    /// A data type: a string becomes a `DataTypeImm`.
    DType,
    /// A string: a Python string becomes a `StringImm`.
    Str,
}

/// How an attribute value written in Python is converted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrKind {
    /// An integer.
    Int,
    /// An integer or `None`.
    OptInt,
    /// A list of integers (a single integer becomes a one-item list).
    Ints,
    /// A list of integers or `None`.
    OptInts,
    /// An integer or a list of integers, kept as written (`split`).
    IntOrInts,
    /// A list of `n` integers; a single integer is repeated `n` times (`None` allowed).
    Rep(u8),
    /// A padding list for `n` spatial axes: an integer is repeated `2n` times and a
    /// list of `n` values is written twice.
    Pad(u8),
    /// A float.
    Float,
    /// A list of `n` `float32` constants (TVM's `Array<FloatImm>`, `resize2d`'s
    /// `roi`): held as `AttrValue::PrimExpr` `FloatImm`s, a number is repeated `n`
    /// times and `None` gives `n` zeros.
    FloatImms(u8),
    /// A `float64` scalar `PrimExpr` or `None`.
    OptFloatImm,
    /// A scalar `PrimExpr` or `None`.
    OptPrim,
    /// A boolean.
    Bool,
    /// A string.
    Str,
    /// A string or `None`.
    OptStr,
    /// A data type.
    DType,
    /// A data type or `None`.
    OptDType,
    /// A `T.index_map(lambda ...: (...))` (or a bare lambda).
    IndexMap,
    /// A VDevice spec string.
    VDevice,
    /// A dictionary.
    Map,
}

/// Whether a parameter becomes an argument or an attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A call argument.
    Arg(ArgKind),
    /// An attribute.
    Attr(AttrKind),
}

/// A parameter's default value (as the Python signature writes it).
#[derive(Clone, Debug, PartialEq)]
pub enum Default {
    /// The parameter is required.
    Required,
    /// `None`: an argument is left out, an attribute is unset.
    None,
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A string.
    Str(String),
    /// A tuple of integers.
    Ints(Vec<i64>),
    /// The value of another parameter (`out_layout` defaults to `layout`).
    SameAs(String),
}

/// One parameter of an operator's Python signature.
#[derive(Clone, Debug)]
pub struct Param {
    /// The keyword name (also the attribute field name).
    pub name: String,
    /// Argument or attribute, and its conversion.
    pub kind: ParamKind,
    /// The default value.
    pub default: Default,
}

/// The signature of one `R.<name>` operator.
#[derive(Clone, Debug)]
pub struct OpSig {
    /// The name after `R.` (`"nn.conv2d"`); the operator is `relax.<name>`.
    pub name: String,
    /// Parameters in Python signature order.
    pub params: Vec<Param>,
    /// Attribute field names in TVM's order (the printing order).
    pub attr_order: Vec<String>,
}

impl OpSig {
    /// The full operator name, `relax.<name>`.
    pub fn op_name(&self) -> String {
        format!("relax.{}", self.name)
    }
    /// The parameter named `name`.
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }
    /// The value attribute `name` takes when a call does not give it
    /// (`SameAs` defaults read the other attribute through `get`); `None` when
    /// `name` is not an attribute with a default.
    pub fn default_attr(&self, name: &str, get: &dyn Fn(&str) -> Option<AttrValue>) -> Option<AttrValue> {
        let p = self.param(name)?;
        let ParamKind::Attr(kind) = p.kind else { return None };
        match &p.default {
            Default::Required => None,
            Default::SameAs(other) => get(other).or_else(|| self.default_attr(other, get)),
            d => Some(default_attr(kind, d)),
        }
    }
    /// Whether this operator has attributes.
    pub fn has_attrs(&self) -> bool {
        !self.attr_order.is_empty()
    }
}

/// The operator table, one line per operator:
/// `name: param[=default][:kind], ...` with kinds `e p shape tuple dtype str` for
/// arguments and `@int @optint @ints @optints @intorints @repN @padN @float
/// @floatimmsN @optfloatimm @optprim @bool @str @optstr @dtype @optdtype @indexmap
/// @vdevice @map`
/// for attributes (no kind: `e`); `| order: a b c` gives the attribute order when it
/// differs from the parameter order.
const TABLE: &[&str] = &[
    // unary
    "abs: x", "acos: x", "acosh: x", "asin: x", "asinh: x", "atan: x", "atanh: x", "ceil: x", "cos: x",
    "cosh: x", "exp: x", "floor: x", "log: x", "negative: x", "round: x", "rsqrt: x", "sigmoid: x",
    "sign: x", "sin: x", "sinh: x", "sqrt: x", "square: x", "tan: x", "tanh: x", "isfinite: x", "isinf: x",
    "isnan: x", "nonzero: x", "flatten: x", "shape_of: expr", "shape_to_tensor: expr", "tensor_to_shape: expr",
    "builtin.stop_lift_params: x", "memory.kill_storage: storage", "memory.kill_tensor: tensor",
    "vm.kill_object: obj", "nn.relu: data", "nn.selu: data", "nn.gelu: data", "nn.gelu_tanh: data", "nn.silu: data",
    "nn.batch_flatten: data", "erf: x", "bitwise_not: x", "logical_not: x", "trunc: x",
    // binary
    "add: x1, x2", "log_add_exp: x1, x2", "atan2: x1, x2", "divide: x1, x2", "equal: x1, x2", "floor_divide: x1, x2",
    "floor_mod: x1, x2", "greater: x1, x2", "greater_equal: x1, x2", "less: x1, x2", "less_equal: x1, x2",
    "maximum: x1, x2", "minimum: x1, x2", "mod: x1, x2", "multiply: x1, x2", "not_equal: x1, x2",
    "power: x1, x2", "subtract: x1, x2", "logical_and: x1, x2", "logical_or: x1, x2", "logical_xor: x1, x2",
    "bitwise_and: x1, x2", "bitwise_or: x1, x2", "bitwise_xor: x1, x2", "left_shift: x1, x2",
    "right_shift: x1, x2", "nn.cross_entropy_with_logits: predictions, labels",
    "collapse_sum_like: data, collapse_target", "ewise_fma: x1, x2, x3", "where: condition, x1, x2",
    // creation
    "arange: start:p, end=None:p, step=1:p, dtype=None:@optdtype",
    "eye: n:p, m=None:p, k=0:p, dtype='float32':@optdtype",
    "eye_like: x, k=0:p, dtype=None:@optdtype",
    "full: shape:shape, fill_value, dtype=None:@optdtype",
    "full_like: x, fill_value, dtype=None:@optdtype",
    "ones: shape:shape, dtype:@optdtype", "zeros: shape:shape, dtype:@optdtype",
    "ones_like: x, dtype=None:@optdtype", "zeros_like: x, dtype=None:@optdtype",
    "tril: x, k=0:p", "triu: x, k=0:p",
    // datatype
    "astype: x, dtype:@dtype", "wrap_param: data, dtype='float32':@dtype",
    // quantization
    "quantize: data, scale, zero_point, axis=-1:@int, out_dtype='int8':@dtype | order: out_dtype axis",
    "dequantize: data, scale, zero_point, axis=-1:@int, out_dtype='float32':@dtype | order: out_dtype axis",
    // image
    "image.grid_sample: data, grid, method='bilinear':@str, layout='NCHW':@str, padding_mode='zeros':@str, align_corners=False:@bool",
    "image.resize2d: data, size:shape, roi=None:@floatimms4, layout='NCHW':@str, method='linear':@str, coordinate_transformation_mode='half_pixel':@str, rounding_method='round':@str, cubic_alpha=-0.75:@float, cubic_exclude=0:@int, extrapolation_value=0.0:@float, out_dtype=None:@optdtype",
    // vision
    "vision.roi_align: data, rois, pooled_size:@rep2, spatial_scale:@float, sample_ratio=-1:@int, aligned=False:@bool, layout='NCHW':@str, mode='avg':@str",
    // manipulation
    "broadcast_to: x, shape:shape", "collapse_sum_to: data, shape:shape", "reshape: x, shape:shape",
    "concat: tensors:tuple, axis=0:@optint", "stack: tensors:tuple, axis=0:@optint", "expand_dims: x, axis:@ints", "flip: data, axis:@int",
    "permute_dims: x, axes=None:@optints", "squeeze: x, axis=None:@optints",
    "split: x, indices_or_sections:@intorints, axis=0:@int", "tile: data, repeats:@ints",
    "repeat: data, repeats:@int, axis=None:@optint",
    "layout_transform: x, index_map:@indexmap, pad_value=None:@optprim",
    "einsum: operands:tuple, subscripts:@str", "meshgrid: tensors:tuple, indexing='ij':@optstr",
    "scatter_elements: data, indices, updates, axis=0:@int, reduction='update':@str",
    "scatter_nd: data, indices, updates, reduction='update':@str",
    "gather_elements: data, indices, axis=0:@int", "gather_nd: data, indices, batch_dims=0:@int",
    "one_hot: indices, on_value:p, off_value:p, depth:@int, axis=-1:@int",
    "slice_scatter: input_tensor, src, start:p, end:p, step:p, axis=0:@int",
    "reverse_sequence: data, seq_lengths, seq_axis=1:@int, batch_axis=0:@int",
    "cumsum: data, axis=None:@optint, dtype=None:@optdtype, exclusive=False:@bool",
    "cumprod: data, axis=None:@optint, dtype=None:@optdtype, exclusive=False:@bool",
    "index_tensor: data, indices:tuple",
    // index
    "take: x, indices, axis=None:@optint, mode='fast':@str",
    "strided_slice: x, axes:tuple, begin:tuple, end:tuple, strides=None:tuple, assume_inbound=False:@bool",
    "dynamic_strided_slice: x, begin, end, strides",
    // linear algebra
    "matmul: x1, x2, out_dtype=None:@optdtype", "outer: x1, x2",
    // statistical / search / sort / set
    "sum: x, axis=None:@optints, keepdims=False:@bool", "mean: x, axis=None:@optints, keepdims=False:@bool",
    "max: x, axis=None:@optints, keepdims=False:@bool", "min: x, axis=None:@optints, keepdims=False:@bool",
    "prod: x, axis=None:@optints, keepdims=False:@bool", "std: x, axis=None:@optints, keepdims=False:@bool",
    "variance: x, axis=None:@optints, keepdims=False:@bool",
    "median: x, axis=None:@optints, keepdims=False:@bool",
    "argmax: x, axis=None:@optint, keepdims=False:@bool", "argmin: x, axis=None:@optint, keepdims=False:@bool",
    "argsort: data, axis=-1:@int, descending=False:@bool, dtype='int32':@optdtype",
    "sort: x, axis=-1:@int, descending=False:@bool",
    "topk: data, k=1:@int, axis=-1:@int, ret_type='both':@str, largest=True:@bool, dtype='int32':@optdtype",
    "unique: x, sorted=True:p, return_index=False:p, return_inverse=False:p, return_counts=False:p, axis=None:p",
    "clip: x, min:p, max:p",
    "bucketize: input_tensor, boundaries, out_int32=False:@bool, right=False:@bool",
    "hamming_window: window_size:p, periodic:p, alpha:p, beta:p, dtype:@optdtype",
    // nn
    "nn.softmax: data, axis=-1:@int", "nn.log_softmax: data, axis=-1:@int",
    "nn.leakyrelu: data, alpha=0.01:@float", "nn.dropout: data, rate=0.5:@float",
    "nn.softplus: data, beta=1.0:@float, threshold=20.0:@float",
    "nn.prelu: data, alpha, axis=1:@int", "nn.pixel_shuffle: data, upscale_factor:@int",
    "nn.batch_norm: data, gamma, beta, moving_mean, moving_var, axis:@int, epsilon=1e-05:@float, center=True:@bool, scale=True:@bool, momentum=0.1:@float, training=True:@bool",
    "nn.layer_norm: data, gamma, beta, axes:@ints, epsilon=1e-05:@float, center=True:@bool, scale=True:@bool",
    "nn.group_norm: data, gamma, beta, num_groups:@int, channel_axis:@int, axes:@ints, epsilon=1e-05:@float, center=True:@bool, scale=True:@bool",
    "nn.rms_norm: data, weight, axes=-1:@ints, epsilon=1e-05:@float",
    "nn.instance_norm: data, gamma, beta, channel_axis:@int, axes:@ints, epsilon=1e-05:@float, center=True:@bool, scale=True:@bool",
    "nn.nll_loss: predictions, targets, weights=None, reduction='mean':@str, ignore_index=-100:@int",
    "nn.pad: data, pad_width:@ints, pad_mode='constant':@str, pad_value=0.0:@float | order: pad_width pad_value pad_mode",
    "nn.attention: query, key, value, bias=None, scale=None:@optfloatimm, causal_mask=None:@optstr, window_size=None:@optint",
    "nn.conv1d: data, weight, strides=1:@rep1, padding=0:@pad1, dilation=1:@rep1, groups=1:@int, data_layout='NCW':@str, kernel_layout='OIW':@str, out_layout=data_layout:@str, out_dtype=None:@optdtype",
    "nn.conv2d: data, weight, strides=(1, 1):@rep2, padding=(0, 0):@pad2, dilation=(1, 1):@rep2, groups=1:@int, data_layout='NCHW':@str, kernel_layout='OIHW':@str, out_layout=data_layout:@str, out_dtype=None:@optdtype",
    "nn.conv3d: data, weight, strides=(1, 1, 1):@rep3, padding=(0, 0, 0):@pad3, dilation=(1, 1, 1):@rep3, groups=1:@int, data_layout='NCDHW':@str, kernel_layout='OIDHW':@str, out_layout=data_layout:@str, out_dtype=None:@optdtype",
    "nn.conv1d_transpose: data, weight, strides=1:@rep1, padding=0:@pad1, output_padding=0:@rep1, dilation=1:@rep1, groups=1:@int, data_layout='NCW':@str, kernel_layout='IOW':@str, out_layout=data_layout:@str, out_dtype=None:@optdtype",
    "nn.conv2d_transpose: data, weight, strides=(1, 1):@rep2, padding=(0, 0):@pad2, output_padding=(0, 0):@rep2, dilation=(1, 1):@rep2, groups=1:@int, data_layout='NCHW':@str, kernel_layout='IOHW':@str, out_layout=data_layout:@str, out_dtype=None:@optdtype",
    "nn.conv3d_transpose: data, weight, strides=(1, 1, 1):@rep3, padding=(0, 0, 0):@pad3, output_padding=(0, 0, 0):@rep3, dilation=(1, 1, 1):@rep3, groups=1:@int, data_layout='NCDHW':@str, kernel_layout='IODHW':@str, out_layout=data_layout:@str, out_dtype=None:@optdtype",
    "nn.max_pool1d: data, pool_size=(1,):@rep1, strides=(1,):@rep1, padding=(0, 0):@pad1, dilation=(1,):@rep1, ceil_mode=False:@bool, count_include_pad=False:@bool, layout='NCW':@str, out_layout=layout:@str | order: pool_size strides dilation padding ceil_mode count_include_pad layout out_layout",
    "nn.max_pool2d: data, pool_size=(1, 1):@rep2, strides=(1, 1):@rep2, padding=(0, 0):@pad2, dilation=(1, 1):@rep2, ceil_mode=False:@bool, count_include_pad=False:@bool, layout='NCHW':@str, out_layout=layout:@str | order: pool_size strides dilation padding ceil_mode count_include_pad layout out_layout",
    "nn.max_pool3d: data, pool_size=(1, 1, 1):@rep3, strides=(1, 1, 1):@rep3, padding=(0, 0, 0):@pad3, dilation=(1, 1, 1):@rep3, ceil_mode=False:@bool, count_include_pad=False:@bool, layout='NCDHW':@str, out_layout=layout:@str | order: pool_size strides dilation padding ceil_mode count_include_pad layout out_layout",
    "nn.avg_pool1d: data, pool_size=(1,):@rep1, strides=(1,):@rep1, padding=(0, 0):@pad1, dilation=(1,):@rep1, ceil_mode=False:@bool, count_include_pad=True:@bool, layout='NCW':@str, out_layout=layout:@str | order: pool_size strides dilation padding ceil_mode count_include_pad layout out_layout",
    "nn.avg_pool2d: data, pool_size=(1, 1):@rep2, strides=(1, 1):@rep2, padding=(0, 0):@pad2, dilation=(1, 1):@rep2, ceil_mode=False:@bool, count_include_pad=False:@bool, layout='NCHW':@str, out_layout=layout:@str | order: pool_size strides dilation padding ceil_mode count_include_pad layout out_layout",
    "nn.avg_pool3d: data, pool_size=(1, 1, 1):@rep3, strides=(1, 1, 1):@rep3, padding=(0, 0, 0):@pad3, dilation=(1, 1, 1):@rep3, ceil_mode=False:@bool, count_include_pad=True:@bool, layout='NCDHW':@str, out_layout=layout:@str | order: pool_size strides dilation padding ceil_mode count_include_pad layout out_layout",
    "nn.adaptive_avg_pool1d: data, output_size=None:@rep1, layout='NCW':@str, out_layout=layout:@str",
    "nn.adaptive_avg_pool2d: data, output_size=None:@rep2, layout='NCHW':@str, out_layout=layout:@str",
    "nn.adaptive_avg_pool3d: data, output_size=None:@rep3, layout='NCDHW':@str, out_layout=layout:@str",
    // memory / vm / builtin
    "builtin.alloc_tensor: shape:shape, dtype:dtype, runtime_device_index:p, storage_scope='global':str",
    "memory.alloc_storage: size:tuple, virtual_device_index:p, storage_scope:str, dtype:dtype",
    "memory.alloc_tensor: storage, offset:p, shape:shape, dtype:dtype, runtime_device_ind=0:p",
    "vm.alloc_storage: shape:shape, runtime_device_index:p, dtype:dtype, storage_scope='global':str",
    "vm.alloc_tensor: storage, offset:p, shape:shape, dtype:dtype, runtime_device_ind=0:p",
    "vm.call_tir_dyn: func, args:tuple",
    "make_closure: func, args:tuple",
    "null_value:", "size: x",
    "call_builtin_with_ctx: func, args:tuple",
    "to_vdevice: data, dst_vdevice:@vdevice",
    // call_tir family: the StructInfo arguments are handled by the parser
    "call_tir_inplace: gvar, args:tuple, inplace_indices:@ints",
    "call_tir_with_grad: gvar, args:tuple, te_grad_name:@str, te_grad_kwargs=None:@map",
];

/// Operators whose calls are written specially (not through [`lookup`]'s generic
/// signature). `R.call_packed` is not among them: it calls an external
/// function, not an operator.
pub const SPECIAL_OPS: &[&str] = &[
    "call_tir",
    "call_dps_packed",
    "call_pure_packed",
    "call_inplace_packed",
    "invoke_closure",
    "invoke_pure_closure",
    "print",
    "assert_op",
    "hint_on_device",
    "dist.call_tir",
];

fn parse_default(s: &str) -> Default {
    let s = s.trim();
    if s == "None" {
        return Default::None;
    }
    if s == "True" || s == "False" {
        return Default::Bool(s == "True");
    }
    if let Some(inner) = s.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        return Default::Str(inner.to_string());
    }
    if let Some(inner) = s.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        return Default::Ints(inner.split(',').filter_map(|x| x.trim().parse().ok()).collect());
    }
    if let Ok(i) = s.parse::<i64>() {
        return Default::Int(i);
    }
    if let Ok(f) = s.parse::<f64>() {
        return Default::Float(f);
    }
    Default::SameAs(s.to_string())
}

fn parse_kind(k: &str) -> ParamKind {
    use ArgKind as A;
    use AttrKind as T;
    match k {
        "" | "e" => ParamKind::Arg(A::Expr),
        "p" => ParamKind::Arg(A::Prim),
        "shape" => ParamKind::Arg(A::Shape),
        "tuple" => ParamKind::Arg(A::Tuple),
        "dtype" => ParamKind::Arg(A::DType),
        "str" => ParamKind::Arg(A::Str),
        "@int" => ParamKind::Attr(T::Int),
        "@optint" => ParamKind::Attr(T::OptInt),
        "@ints" => ParamKind::Attr(T::Ints),
        "@optints" => ParamKind::Attr(T::OptInts),
        "@intorints" => ParamKind::Attr(T::IntOrInts),
        "@rep1" => ParamKind::Attr(T::Rep(1)),
        "@rep2" => ParamKind::Attr(T::Rep(2)),
        "@rep3" => ParamKind::Attr(T::Rep(3)),
        "@pad1" => ParamKind::Attr(T::Pad(1)),
        "@pad2" => ParamKind::Attr(T::Pad(2)),
        "@pad3" => ParamKind::Attr(T::Pad(3)),
        "@float" => ParamKind::Attr(T::Float),
        "@floatimms4" => ParamKind::Attr(T::FloatImms(4)),
        "@optfloatimm" => ParamKind::Attr(T::OptFloatImm),
        "@optprim" => ParamKind::Attr(T::OptPrim),
        "@bool" => ParamKind::Attr(T::Bool),
        "@str" => ParamKind::Attr(T::Str),
        "@optstr" => ParamKind::Attr(T::OptStr),
        "@dtype" => ParamKind::Attr(T::DType),
        "@optdtype" => ParamKind::Attr(T::OptDType),
        "@indexmap" => ParamKind::Attr(T::IndexMap),
        "@vdevice" => ParamKind::Attr(T::VDevice),
        "@map" => ParamKind::Attr(T::Map),
        other => panic!("bad kind {other} in the operator table"),
    }
}

/// Split at commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_line(line: &str) -> OpSig {
    let (head, order) = match line.split_once('|') {
        Some((h, o)) => (h, Some(o.trim().trim_start_matches("order:").trim())),
        None => (line, None),
    };
    let (name, params_s) = head.split_once(':').expect("operator table line has a name");
    let mut params = Vec::new();
    for p in split_top(params_s) {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        // kind is after the last ':' that is outside quotes
        let (decl, kind) = match p.rfind(':') {
            Some(i) if !p[i..].contains('\'') => (&p[..i], &p[i + 1..]),
            _ => (p, ""),
        };
        let (pname, default) = match decl.split_once('=') {
            Some((n, d)) => (n.trim(), parse_default(d)),
            None => (decl.trim(), Default::Required),
        };
        params.push(Param {
            name: pname.to_string(),
            kind: parse_kind(kind.trim()),
            default,
        });
    }
    let attr_order = match order {
        Some(o) => o.split_whitespace().map(str::to_string).collect(),
        None => params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Attr(_)))
            .map(|p| p.name.clone())
            .collect(),
    };
    OpSig {
        name: name.trim().to_string(),
        params,
        attr_order,
    }
}

fn table() -> &'static HashMap<String, OpSig> {
    static TABLE_MAP: OnceLock<HashMap<String, OpSig>> = OnceLock::new();
    TABLE_MAP.get_or_init(|| {
        let mut m = HashMap::new();
        for line in TABLE {
            let sig = parse_line(line);
            m.insert(sig.name.clone(), sig);
        }
        // `R.nn.attention_bias` builds the same operator as `R.nn.attention`.
        if let Some(att) = m.get("nn.attention").cloned() {
            m.insert(
                "nn.attention_bias".to_string(),
                OpSig {
                    name: "nn.attention".to_string(),
                    ..att
                },
            );
        }
        m
    })
}

/// The signature of `R.<name>` (`name` without the `R.` prefix, e.g. `"nn.conv2d"`).
pub fn lookup(name: &str) -> Option<&'static OpSig> {
    table().get(name)
}

/// The signature of the operator `relax.<name>` (`op_name` with the prefix).
pub fn lookup_op(op_name: &str) -> Option<&'static OpSig> {
    let short = op_name.strip_prefix("relax.")?;
    table().get(short).filter(|s| s.name == short)
}

/// All operator names in the table (without the `R.` prefix).
pub fn names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = table().keys().map(String::as_str).collect();
    v.sort_unstable();
    v
}

/// The attribute value a default stands for (as the parser stores it): lists
/// repeated to their arity, dtypes parsed, `None` unset.
pub fn default_attr(kind: AttrKind, d: &Default) -> AttrValue {
    let list = |l: Vec<i64>| AttrValue::List(l.into_iter().map(AttrValue::Int).collect());
    let f32s = |v: f64, n: u8| {
        AttrValue::List(vec![
            AttrValue::PrimExpr(PrimExpr::float_of(v, DataType::FLOAT32));
            n as usize
        ])
    };
    match (kind, d) {
        (AttrKind::Map, Default::None) => AttrValue::Map(Attrs::new()),
        (AttrKind::FloatImms(n), Default::None) => f32s(0.0, n),
        (AttrKind::FloatImms(n), Default::Float(f)) => f32s(*f, n),
        (AttrKind::FloatImms(n), Default::Int(i)) => f32s(*i as f64, n),
        (_, Default::None) => AttrValue::None,
        (AttrKind::Ints | AttrKind::OptInts, Default::Int(i)) => list(vec![*i]),
        (AttrKind::Rep(n), Default::Int(i)) => list(vec![*i; n as usize]),
        (AttrKind::Pad(n), Default::Int(i)) => list(vec![*i; 2 * n as usize]),
        (AttrKind::Pad(n), Default::Ints(l)) if l.len() == n as usize => list([l.clone(), l.clone()].concat()),
        (_, Default::Ints(l)) => list(l.clone()),
        (AttrKind::Float, Default::Int(i)) => AttrValue::Float(*i as f64),
        (_, Default::Int(i)) => AttrValue::Int(*i),
        (_, Default::Float(f)) => AttrValue::Float(*f),
        (_, Default::Bool(b)) => AttrValue::Bool(*b),
        (AttrKind::DType | AttrKind::OptDType, Default::Str(s)) => {
            s.parse().map(AttrValue::DataType).unwrap_or(AttrValue::None)
        }
        (_, Default::Str(s)) => AttrValue::Str(s.clone()),
        _ => AttrValue::None,
    }
}

/// Whether `AttrValue` `v` is the unset value.
pub fn is_unset(v: &AttrValue) -> bool {
    matches!(v, AttrValue::None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_parses_and_is_consistent() {
        assert!(names().len() > 150, "{}", names().len());
        let conv = lookup("nn.conv2d").unwrap();
        assert_eq!(conv.params.len(), 10);
        assert_eq!(conv.params[2].kind, ParamKind::Attr(AttrKind::Rep(2)));
        assert_eq!(conv.params[8].default, Default::SameAs("data_layout".into()));
        assert_eq!(conv.attr_order[0], "strides");
        let pad = lookup("nn.pad").unwrap();
        assert_eq!(pad.attr_order, vec!["pad_width", "pad_value", "pad_mode"]);
        let pool = lookup("nn.max_pool2d").unwrap();
        assert_eq!(pool.attr_order[2], "dilation");
        assert_eq!(
            lookup("argsort").unwrap().params[3].default,
            Default::Str("int32".into())
        );
        assert_eq!(lookup("nn.attention_bias").unwrap().op_name(), "relax.nn.attention");
        assert!(lookup_op("relax.nn.attention").is_some());
        for n in names() {
            let s = lookup(n).unwrap();
            for a in &s.attr_order {
                assert!(s.param(a).is_some(), "{n}: {a}");
            }
        }
    }
}
