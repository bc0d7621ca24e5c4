//! One converter per ONNX operator ([`CONVERTERS`]), each following the ONNX
//! operator's definition for opsets 1 to the current one and the Relax operators
//! Apache TVM's ONNX front end maps it to.
//!
//! A converter reads its node's inputs (materializing initializers on first use),
//! emits Relax calls through `Ctx::op` and returns one value per output it
//! supports. Shape computations on values known at import time are folded
//! (symbolic dimensions included) instead of emitted.
//!
//! The converters are grouped by operator family (`elementwise`, `nn`, `shape`,
//! `reduce`, `quant`, `image`, `signal`, `training`, `transformer`, `attention`,
//! `resize`, `rnn`); [`CONVERTERS`] is the one table of them all, and the helpers
//! they share are here.

use crate::error::{convert_err, ConvertError};
use std::collections::HashMap;

use relax_ir::tir::BinOp;
use relax_ir::{AttrValue, DataType, Expr, ExprKind, NDArray, PrimExpr};

use crate::convert::{Ctx, Known, TVal};
use crate::proto::{attribute_type as at, AttributeProto, NodeProto};
use crate::tensor;

mod attention;
mod dynamic;
mod elementwise;
mod image;
mod nn;
mod quant;
mod reduce;
mod resize;
mod rnn;
mod shape;
mod signal;
mod text;
mod training;
mod transformer;

/// A converter: the node's output values, in order, or an error message.
pub type Converter = fn(&mut Ctx, &Node) -> Result<Vec<TVal>, ConvertError>;

/// A node being converted.
pub struct Node<'p> {
    /// Its name (or `#index` when the model gives none).
    pub name: String,
    /// Op type.
    pub op_type: String,
    /// Domain (`""` for the default).
    pub domain: String,
    /// Input names (`""` for an absent optional input).
    pub inputs: Vec<String>,
    /// Output names.
    pub outputs: Vec<String>,
    attrs: HashMap<&'p str, &'p AttributeProto>,
    /// The model's default-domain opset.
    pub opset: i64,
}

impl<'p> Node<'p> {
    /// Wrap node `n` (the `index`-th of the graph).
    pub fn new(n: &'p NodeProto, index: usize, opset: i64) -> Node<'p> {
        Node {
            name: if n.name.is_empty() {
                format!("#{index}")
            } else {
                n.name.clone()
            },
            op_type: n.op_type.clone(),
            domain: n.domain.clone(),
            inputs: n.input.clone(),
            outputs: n.output.clone(),
            attrs: n.attribute.iter().map(|a| (a.name.as_str(), a)).collect(),
            opset,
        }
    }
    pub(crate) fn attr(&self, name: &str) -> Option<&'p AttributeProto> {
        self.attrs.get(name).copied()
    }
    /// A float attribute, if given.
    pub(crate) fn attr_f(&self, name: &str) -> Option<f64> {
        self.attr(name).map(|a| a.f as f64)
    }
    /// An int attribute, if given.
    pub(crate) fn attr_i(&self, name: &str) -> Option<i64> {
        self.attr(name).map(|a| a.i)
    }
    pub(crate) fn int(&self, name: &str, default: i64) -> i64 {
        self.attr(name).map(|a| a.i).unwrap_or(default)
    }
    pub(crate) fn float(&self, name: &str, default: f64) -> f64 {
        self.attr(name).map(|a| a.f as f64).unwrap_or(default)
    }
    pub(crate) fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.attr(name).map(|a| a.ints.clone())
    }
    pub(crate) fn string(&self, name: &str) -> Option<String> {
        self.attr(name).map(|a| String::from_utf8_lossy(&a.s).into_owned())
    }
    /// Whether input `i` is given.
    pub(crate) fn has(&self, i: usize) -> bool {
        self.inputs.get(i).is_some_and(|s| !s.is_empty())
    }
    pub(crate) fn input(&self, i: usize) -> Result<&str, ConvertError> {
        match self.inputs.get(i) {
            Some(s) if !s.is_empty() => Ok(s),
            _ => Err(convert_err!("input {i} is missing")),
        }
    }
}

/// Every converter, by ONNX op type.
pub static CONVERTERS: &[(&str, Converter)] = &[
    // elementwise, one input
    ("Relu", elementwise::unary),
    ("Sigmoid", elementwise::unary),
    ("Tanh", elementwise::unary),
    ("Exp", elementwise::unary),
    ("Log", elementwise::unary),
    ("Sqrt", elementwise::unary),
    ("Neg", elementwise::unary),
    ("Abs", elementwise::unary),
    ("Erf", elementwise::unary),
    ("Sin", elementwise::unary),
    ("Cos", elementwise::unary),
    ("Tan", elementwise::unary),
    ("Asin", elementwise::unary),
    ("Acos", elementwise::unary),
    ("Atan", elementwise::unary),
    ("Sinh", elementwise::unary),
    ("Cosh", elementwise::unary),
    ("Asinh", elementwise::unary),
    ("Acosh", elementwise::unary),
    ("Atanh", elementwise::unary),
    ("Floor", elementwise::unary),
    ("Ceil", elementwise::unary),
    ("Round", elementwise::unary),
    ("Sign", elementwise::unary),
    ("Not", elementwise::unary),
    ("IsNaN", elementwise::unary),
    ("IsInf", elementwise::is_inf),
    ("BitwiseNot", elementwise::unary),
    ("Reciprocal", elementwise::reciprocal),
    ("Softplus", elementwise::softplus),
    ("Softsign", elementwise::softsign),
    ("LeakyRelu", elementwise::leaky_relu),
    ("Elu", elementwise::elu),
    ("Selu", elementwise::selu),
    ("Celu", elementwise::celu),
    ("HardSigmoid", elementwise::hard_sigmoid),
    ("HardSwish", elementwise::hard_swish),
    ("PRelu", elementwise::prelu),
    ("Gelu", elementwise::gelu),
    ("Mish", elementwise::mish),
    ("ThresholdedRelu", elementwise::thresholded_relu),
    ("Identity", elementwise::identity),
    ("Dropout", elementwise::identity),
    ("Clip", elementwise::clip),
    ("Cast", elementwise::cast),
    ("CastLike", elementwise::cast_like),
    // elementwise, two or more inputs
    ("Add", elementwise::binary),
    ("Sub", elementwise::binary),
    ("Mul", elementwise::binary),
    ("Div", elementwise::binary),
    ("Pow", elementwise::binary),
    ("Mod", elementwise::binary),
    ("Equal", elementwise::binary),
    ("Less", elementwise::binary),
    ("Greater", elementwise::binary),
    ("LessOrEqual", elementwise::binary),
    ("GreaterOrEqual", elementwise::binary),
    ("And", elementwise::binary),
    ("Or", elementwise::binary),
    ("Xor", elementwise::binary),
    ("BitwiseAnd", elementwise::binary),
    ("BitwiseOr", elementwise::binary),
    ("BitwiseXor", elementwise::binary),
    ("Sum", elementwise::variadic),
    ("Max", elementwise::variadic),
    ("Min", elementwise::variadic),
    ("Mean", elementwise::variadic),
    ("Where", elementwise::where_op),
    // linear algebra, neural network layers
    ("MatMul", nn::matmul),
    ("Gemm", nn::gemm),
    ("Einsum", nn::einsum),
    ("Conv", nn::conv),
    ("ConvTranspose", nn::conv_transpose),
    ("MaxPool", nn::pool),
    ("AveragePool", nn::pool),
    ("GlobalAveragePool", nn::global_pool),
    ("GlobalMaxPool", nn::global_pool),
    ("BatchNormalization", nn::batch_norm),
    ("InstanceNormalization", nn::instance_norm),
    ("LayerNormalization", nn::layer_norm),
    ("SimplifiedLayerNormalization", nn::rms_norm),
    ("RMSNormalization", nn::rms_norm),
    ("Softmax", nn::softmax),
    ("LogSoftmax", nn::softmax),
    // shapes and data movement
    ("Constant", shape::constant_node),
    ("ConstantOfShape", shape::constant_of_shape),
    ("Shape", shape::shape),
    ("Size", shape::size),
    ("Reshape", shape::reshape),
    ("Flatten", shape::flatten),
    ("Transpose", shape::transpose),
    ("Unsqueeze", shape::unsqueeze),
    ("Squeeze", shape::squeeze),
    ("Concat", shape::concat),
    ("Split", shape::split),
    ("Slice", shape::slice),
    ("Gather", shape::gather),
    ("GatherElements", shape::gather_elements),
    ("GatherND", shape::gather_nd),
    ("ScatterElements", shape::scatter_elements),
    ("ScatterND", shape::scatter_nd),
    ("Expand", shape::expand),
    ("Tile", shape::tile),
    ("Range", shape::range),
    ("Pad", shape::pad),
    ("Trilu", shape::trilu),
    ("CumSum", reduce::cumsum),
    // reductions
    ("ReduceMean", reduce::reduce),
    ("ReduceSum", reduce::reduce),
    ("ReduceMax", reduce::reduce),
    ("ReduceMin", reduce::reduce),
    ("ReduceProd", reduce::reduce),
    ("ReduceL2", reduce::reduce),
    ("ReduceL1", reduce::reduce),
    ("ReduceSumSquare", reduce::reduce),
    ("ReduceLogSumExp", reduce::reduce),
    ("ArgMax", reduce::arg_reduce),
    ("ArgMin", reduce::arg_reduce),
    ("BitShift", elementwise::bit_shift),
    ("CumProd", reduce::cumsum),
    ("TopK", reduce::topk),
    ("NegativeLogLikelihoodLoss", training::nll_loss),
    ("Attention", attention::attention),
    ("SoftmaxCrossEntropyLoss", training::softmax_cross_entropy),
    ("QuantizeLinear", quant::quantize_linear),
    ("DequantizeLinear", quant::dequantize_linear),
    ("DynamicQuantizeLinear", quant::dynamic_quantize_linear),
    ("Swish", elementwise::swish),
    ("Shrink", elementwise::shrink),
    ("ReduceLogSum", reduce::reduce),
    ("Hardmax", nn::hardmax),
    ("LpNormalization", nn::lp_normalization),
    ("DepthToSpace", image::depth_to_space),
    ("SpaceToDepth", image::space_to_depth),
    ("EyeLike", shape::eye_like),
    ("GroupNormalization", nn::group_norm),
    ("MeanVarianceNormalization", nn::mvn),
    ("OneHot", shape::one_hot),
    ("ReverseSequence", shape::reverse_sequence),
    ("LpPool", nn::lp_pool),
    ("Resize", resize::resize),
    ("Upsample", resize::resize),
    ("HannWindow", signal::window),
    ("HammingWindow", signal::window),
    ("BlackmanWindow", signal::window),
    ("CenterCropPad", shape::center_crop_pad),
    ("SwiGLU", elementwise::swiglu),
    ("RotaryEmbedding", transformer::rotary_embedding),
    ("MatMulInteger", quant::matmul_integer),
    ("QLinearMatMul", quant::qlinear_matmul),
    ("AffineGrid", image::affine_grid),
    ("DFT", signal::dft),
    ("RNN", rnn::rnn),
    ("GRU", rnn::rnn),
    ("LSTM", rnn::rnn),
    ("Col2Im", image::col2im),
    ("MaxUnpool", image::max_unpool),
    ("Adagrad", training::optimizer),
    ("Adam", training::optimizer),
    ("Momentum", training::optimizer),
    ("Binarizer", elementwise::binarizer),
    ("ArrayFeatureExtractor", shape::array_feature_extractor),
    ("TensorScatter", shape::tensor_scatter),
    ("CausalConvWithState", transformer::causal_conv_with_state),
    ("LinearAttention", transformer::linear_attention),
    ("GridSample", image::grid_sample),
    ("DeformConv", image::deform_conv),
    ("RoiAlign", image::roi_align),
    ("BitCast", quant::bit_cast),
    ("ConvInteger", nn::conv),
    ("Scatter", shape::scatter_elements),
    ("Compress", shape::compress),
    ("LRN", nn::lrn),
    ("OptionalHasElement", shape::optional_has_element),
    ("OptionalGetElement", shape::optional_get_element),
    ("Det", nn::det),
    ("MelWeightMatrix", signal::mel_weight_matrix),
    ("STFT", signal::stft),
    ("NonZero", dynamic::nonzero),
    ("Unique", dynamic::unique),
    ("NonMaxSuppression", dynamic::non_max_suppression),
    ("FlexAttention", transformer::flex_attention),
    ("TfIdfVectorizer", text::tfidf_vectorizer),
    ("QLinearConv", quant::qlinear_conv),
];

/// The converter of `op_type`.
pub fn lookup(op_type: &str) -> Option<Converter> {
    CONVERTERS.iter().find(|(n, _)| *n == op_type).map(|(_, c)| *c)
}

pub(crate) fn ints_attr(v: &[i64]) -> AttrValue {
    AttrValue::List(v.iter().map(|&i| AttrValue::Int(i)).collect())
}

pub(crate) fn prim_int(v: PrimExpr) -> Expr {
    let v = if v.dtype() == DataType::INT64 {
        v
    } else {
        v.cast(DataType::INT64)
    };
    Expr::new(ExprKind::PrimValue(v))
}

pub(crate) fn norm_axis(a: i64, rank: usize) -> Result<usize, ConvertError> {
    let r = rank as i64;
    let x = if a < 0 { a + r } else { a };
    if (0..r).contains(&x) {
        Ok(x as usize)
    } else {
        Err(convert_err!("axis {a} is out of range for rank {rank}"))
    }
}

pub(crate) fn val(ctx: &Ctx, n: &Node, i: usize) -> Result<TVal, ConvertError> {
    ctx.value(n.input(i)?).cloned()
}

pub(crate) fn x(ctx: &mut Ctx, n: &Node, i: usize) -> Result<Expr, ConvertError> {
    let name = n.input(i)?.to_string();
    ctx.tensor(&name)
}

pub(crate) fn rank_of(ctx: &Ctx, n: &Node, i: usize) -> Result<usize, ConvertError> {
    val(ctx, n, i)?
        .rank()
        .ok_or_else(|| convert_err!("input {i} has unknown rank"))
}

pub(crate) fn shape_of(ctx: &Ctx, n: &Node, i: usize) -> Result<Vec<PrimExpr>, ConvertError> {
    val(ctx, n, i)?
        .shape
        .ok_or_else(|| convert_err!("input {i} has unknown shape"))
}

/// Known integer contents of input `i` (symbolic elements allowed).
pub(crate) fn known_ints(ctx: &Ctx, n: &Node, i: usize) -> Result<Vec<PrimExpr>, ConvertError> {
    match val(ctx, n, i)?.known {
        Some(Known::Int(v)) => Ok(v),
        Some(Known::Float(v)) => Ok(v.into_iter().map(|f| PrimExpr::int(f as i64)).collect()),
        None => Err(must_be_known(n, i)),
    }
}

/// The error of an input that must be known when importing but is computed at run time.
pub(crate) fn must_be_known(n: &Node, i: usize) -> ConvertError {
    convert_err!(Unsupported;
        "input {i} (`{}`) must be known when the model is imported (it is computed at run time)",
        n.inputs.get(i).map(String::as_str).unwrap_or("")
    )
}

/// Constant integer contents of input `i`.
pub(crate) fn const_ints(ctx: &Ctx, n: &Node, i: usize) -> Result<Vec<i64>, ConvertError> {
    known_ints(ctx, n, i)?
        .iter()
        .map(|e| {
            e.as_int()
                .ok_or_else(|| convert_err!("input {i} must be constant, it is symbolic ({e:?})"))
        })
        .collect()
}

/// A scalar constant of `dtype`.
pub(crate) fn scalar(dtype: DataType, v: f64) -> Expr {
    crate::convert::constant(dtype, vec![], std::iter::once(tensor::encode(dtype, v)))
}

pub(crate) fn out1(v: TVal) -> Result<Vec<TVal>, ConvertError> {
    Ok(vec![v])
}

/// Emit `R.<op>(a, b)`.
pub(crate) fn emit2(ctx: &mut Ctx, op: &str, a: Expr, b: Expr) -> Result<TVal, ConvertError> {
    ctx.op(op, vec![a, b], &[])
}

pub(crate) fn leaf(ctx: &Ctx, v: &TVal) -> Result<Expr, ConvertError> {
    ctx.leaf(v)
}

pub(crate) fn product(ctx: &Ctx, dims: &[PrimExpr]) -> PrimExpr {
    dims.iter()
        .fold(PrimExpr::int(1), |acc, d| ctx.bin(BinOp::Mul, &acc, d))
}

pub(crate) fn const_product(v: &[i64]) -> i64 {
    v.iter().product()
}

/// A value for an already emitted leaf.
pub(crate) fn tval_leaf(ctx: &Ctx, e: Expr) -> Result<TVal, ConvertError> {
    let _ = ctx;
    let s = match e.kind() {
        ExprKind::Var(v) => v.struct_info().cloned(),
        _ => None,
    }
    .ok_or_else(|| ConvertError::internal("internal: not a variable"))?;
    let t = s
        .as_tensor()
        .ok_or_else(|| ConvertError::internal("internal: not a tensor"))?;
    Ok(TVal {
        expr: Some(e.clone()),
        dtype: t.dtype,
        shape: t.shape_values().map(<[PrimExpr]>::to_vec),
        known: None,
        init: None,
    })
}

/// Broadcast two constant shapes (numpy rules).
pub(crate) fn broadcast_shapes(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let r = a.len().max(b.len());
    let mut out = vec![0; r];
    for i in 0..r {
        let da = if i + a.len() >= r { a[i + a.len() - r] } else { 1 };
        let db = if i + b.len() >= r { b[i + b.len() - r] } else { 1 };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

/// The flat index into a tensor of shape `inp` broadcast to `out` at flat index `k`.
pub(crate) fn bcast_index(mut k: usize, out: &[i64], inp: &[i64]) -> usize {
    let mut idx = 0usize;
    let mut stride = 1usize;
    for (i, &d) in out.iter().enumerate().rev() {
        let coord = k % d.max(1) as usize;
        k /= d.max(1) as usize;
        let j = i as isize - (out.len() as isize - inp.len() as isize);
        if j >= 0 {
            let di = inp[j as usize] as usize;
            if di != 1 {
                idx += coord * stride;
            }
            stride *= di.max(1);
        }
    }
    idx
}

pub(crate) fn known_from_array(a: &relax_ir::NDArray) -> Option<Known> {
    let n = a.numel();
    if a.dtype.is_float() {
        (0..n)
            .map(|i| tensor::elem_f64(a, i))
            .collect::<Option<Vec<_>>>()
            .map(Known::Float)
    } else {
        (0..n)
            .map(|i| tensor::elem_i64(a, i).map(PrimExpr::int))
            .collect::<Option<Vec<_>>>()
            .map(Known::Int)
    }
}

pub(crate) fn array_value(name: &str, a: relax_ir::NDArray) -> TVal {
    let known = if a.numel() <= 4096 { known_from_array(&a) } else { None };
    TVal {
        expr: None,
        dtype: a.dtype,
        shape: Some(a.shape.iter().map(|&d| PrimExpr::int(d)).collect()),
        known,
        init: Some((name.to_string(), std::sync::Arc::new(a))),
    }
}

pub(crate) fn axes_input_or_attr(
    ctx: &Ctx,
    n: &Node,
    since: i64,
    idx: usize,
) -> Result<Option<Vec<i64>>, ConvertError> {
    if n.opset >= since {
        if n.has(idx) {
            Ok(Some(const_ints(ctx, n, idx)?))
        } else {
            Ok(None)
        }
    } else {
        Ok(n.ints("axes"))
    }
}

pub(crate) fn emit(
    ctx: &mut Ctx,
    op: &str,
    args: Vec<Expr>,
    attrs: &[(&str, AttrValue)],
) -> Result<Expr, ConvertError> {
    let v = ctx.op(op, args, attrs)?;
    ctx.leaf(&v)
}

pub(crate) fn astype(ctx: &mut Ctx, e: Expr, from: DataType, to: DataType) -> Result<Expr, ConvertError> {
    if from == to {
        return Ok(e);
    }
    emit(ctx, "astype", vec![e], &[("dtype", AttrValue::DataType(to))])
}

pub(crate) fn reshape_expr(ctx: &mut Ctx, e: Expr, dims: Vec<PrimExpr>) -> Result<Expr, ConvertError> {
    emit(ctx, "reshape", vec![e, Expr::shape(dims)], &[])
}

pub(crate) fn ints(v: &[i64]) -> Vec<PrimExpr> {
    v.iter().map(|&d| PrimExpr::int(d)).collect()
}

/// `strided_slice` of one axis.
pub(crate) fn slice_axis(
    ctx: &mut Ctx,
    e: Expr,
    axis: i64,
    begin: i64,
    end: i64,
    stride: i64,
) -> Result<Expr, ConvertError> {
    let t = |v: i64| Expr::tuple(vec![Expr::new(ExprKind::PrimValue(PrimExpr::int(v)))]);
    emit(ctx, "strided_slice", vec![e, t(axis), t(begin), t(end), t(stride)], &[])
}

pub(crate) fn concat_exprs(ctx: &mut Ctx, parts: Vec<Expr>, axis: i64) -> Result<Expr, ConvertError> {
    emit(
        ctx,
        "concat",
        vec![Expr::tuple(parts)],
        &[("axis", AttrValue::Int(axis))],
    )
}

/// A known scalar input as an integer.
pub(crate) fn known_scalar(ctx: &Ctx, n: &Node, i: usize) -> Result<i64, ConvertError> {
    match val(ctx, n, i)?.known {
        Some(Known::Int(v)) if v.len() == 1 => v[0].as_int().ok_or_else(|| ConvertError::from("a symbolic size")),
        Some(Known::Float(v)) if v.len() == 1 => Ok(v[0] as i64),
        _ => Err(must_be_known(n, i)),
    }
}

pub(crate) fn known_f64(ctx: &Ctx, n: &Node, i: usize) -> Result<f64, ConvertError> {
    val(ctx, n, i)?
        .const_floats()
        .and_then(|v| v.first().copied())
        .ok_or_else(|| must_be_known(n, i))
}
