//! One converter per ONNX operator ([`CONVERTERS`]), each following the ONNX
//! operator's definition for opsets 1 to the current one and the Relax operators
//! Apache TVM's ONNX front end maps it to.
//!
//! A converter reads its node's inputs (materializing initializers on first use),
//! emits Relax calls through `Ctx::op` and returns one value per output it
//! supports. Shape computations on values known at import time are folded
//! (symbolic dimensions included) instead of emitted.

use crate::error::{convert_err, ConvertError};
use std::collections::HashMap;

use relax_ir::tir::BinOp;
use relax_ir::{AttrValue, DataType, Expr, ExprKind, PrimExpr};

use crate::convert::{Ctx, Known, TVal};
use crate::proto::{attribute_type as at, AttributeProto, NodeProto};
use crate::tensor;

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
    ("Relu", unary),
    ("Sigmoid", unary),
    ("Tanh", unary),
    ("Exp", unary),
    ("Log", unary),
    ("Sqrt", unary),
    ("Neg", unary),
    ("Abs", unary),
    ("Erf", unary),
    ("Sin", unary),
    ("Cos", unary),
    ("Tan", unary),
    ("Asin", unary),
    ("Acos", unary),
    ("Atan", unary),
    ("Sinh", unary),
    ("Cosh", unary),
    ("Asinh", unary),
    ("Acosh", unary),
    ("Atanh", unary),
    ("Floor", unary),
    ("Ceil", unary),
    ("Round", unary),
    ("Sign", unary),
    ("Not", unary),
    ("IsNaN", unary),
    ("IsInf", is_inf),
    ("BitwiseNot", unary),
    ("Reciprocal", reciprocal),
    ("Softplus", softplus),
    ("Softsign", softsign),
    ("LeakyRelu", leaky_relu),
    ("Elu", elu),
    ("Selu", selu),
    ("Celu", celu),
    ("HardSigmoid", hard_sigmoid),
    ("HardSwish", hard_swish),
    ("PRelu", prelu),
    ("Gelu", gelu),
    ("Mish", mish),
    ("ThresholdedRelu", thresholded_relu),
    ("Identity", identity),
    ("Dropout", identity),
    ("Clip", clip),
    ("Cast", cast),
    ("CastLike", cast_like),
    // elementwise, two or more inputs
    ("Add", binary),
    ("Sub", binary),
    ("Mul", binary),
    ("Div", binary),
    ("Pow", binary),
    ("Mod", binary),
    ("Equal", binary),
    ("Less", binary),
    ("Greater", binary),
    ("LessOrEqual", binary),
    ("GreaterOrEqual", binary),
    ("And", binary),
    ("Or", binary),
    ("Xor", binary),
    ("BitwiseAnd", binary),
    ("BitwiseOr", binary),
    ("BitwiseXor", binary),
    ("Sum", variadic),
    ("Max", variadic),
    ("Min", variadic),
    ("Mean", variadic),
    ("Where", where_op),
    // linear algebra, neural network layers
    ("MatMul", matmul),
    ("Gemm", gemm),
    ("Einsum", crate::extra::einsum),
    ("Conv", conv),
    ("ConvTranspose", conv_transpose),
    ("MaxPool", pool),
    ("AveragePool", pool),
    ("GlobalAveragePool", global_pool),
    ("GlobalMaxPool", global_pool),
    ("BatchNormalization", batch_norm),
    ("InstanceNormalization", instance_norm),
    ("LayerNormalization", layer_norm),
    ("SimplifiedLayerNormalization", rms_norm),
    ("RMSNormalization", rms_norm),
    ("Softmax", softmax),
    ("LogSoftmax", softmax),
    // shapes and data movement
    ("Constant", constant_node),
    ("ConstantOfShape", constant_of_shape),
    ("Shape", shape),
    ("Size", size),
    ("Reshape", reshape),
    ("Flatten", flatten),
    ("Transpose", transpose),
    ("Unsqueeze", unsqueeze),
    ("Squeeze", squeeze),
    ("Concat", concat),
    ("Split", split),
    ("Slice", slice),
    ("Gather", gather),
    ("GatherElements", gather_elements),
    ("GatherND", gather_nd),
    ("ScatterElements", scatter_elements),
    ("ScatterND", scatter_nd),
    ("Expand", expand),
    ("Tile", tile),
    ("Range", range),
    ("Pad", pad),
    ("Trilu", trilu),
    ("CumSum", cumsum),
    // reductions
    ("ReduceMean", reduce),
    ("ReduceSum", reduce),
    ("ReduceMax", reduce),
    ("ReduceMin", reduce),
    ("ReduceProd", reduce),
    ("ReduceL2", reduce),
    ("ReduceL1", reduce),
    ("ReduceSumSquare", reduce),
    ("ReduceLogSumExp", reduce),
    ("ArgMax", arg_reduce),
    ("ArgMin", arg_reduce),
    ("BitShift", bit_shift),
    ("CumProd", cumsum),
    ("TopK", crate::extra::topk),
    ("NegativeLogLikelihoodLoss", nll_loss),
    ("Attention", crate::attention::attention),
    ("SoftmaxCrossEntropyLoss", crate::extra::softmax_cross_entropy),
    ("QuantizeLinear", crate::extra::quantize_linear),
    ("DequantizeLinear", crate::extra::dequantize_linear),
    ("DynamicQuantizeLinear", crate::extra::dynamic_quantize_linear),
    ("Swish", crate::extra::swish),
    ("Shrink", crate::extra::shrink),
    ("ReduceLogSum", reduce),
    ("Hardmax", crate::extra::hardmax),
    ("LpNormalization", crate::extra::lp_normalization),
    ("DepthToSpace", crate::extra::depth_to_space),
    ("SpaceToDepth", crate::extra::space_to_depth),
    ("EyeLike", crate::extra::eye_like),
    ("GroupNormalization", crate::extra::group_norm),
    ("MeanVarianceNormalization", crate::extra::mvn),
    ("OneHot", crate::extra::one_hot),
    ("ReverseSequence", crate::extra::reverse_sequence),
    ("LpPool", crate::extra::lp_pool),
    ("Resize", crate::resize::resize),
    ("Upsample", crate::resize::resize),
    ("HannWindow", crate::extra::window),
    ("HammingWindow", crate::extra::window),
    ("BlackmanWindow", crate::extra::window),
    ("CenterCropPad", crate::extra::center_crop_pad),
    ("SwiGLU", crate::extra::swiglu),
    ("RotaryEmbedding", crate::extra::rotary_embedding),
    ("MatMulInteger", crate::extra::matmul_integer),
    ("QLinearMatMul", crate::extra::qlinear_matmul),
    ("AffineGrid", crate::extra::affine_grid),
    ("DFT", crate::extra::dft),
    ("RNN", crate::rnn::rnn),
    ("GRU", crate::rnn::rnn),
    ("LSTM", crate::rnn::rnn),
    ("Col2Im", crate::extra::col2im),
    ("MaxUnpool", crate::extra::max_unpool),
    ("Adagrad", crate::extra::optimizer),
    ("Adam", crate::extra::optimizer),
    ("Momentum", crate::extra::optimizer),
    ("Binarizer", crate::extra::binarizer),
    ("ArrayFeatureExtractor", crate::extra::array_feature_extractor),
    ("TensorScatter", crate::extra::tensor_scatter),
    ("CausalConvWithState", crate::extra::causal_conv_with_state),
    ("LinearAttention", crate::extra::linear_attention),
    ("GridSample", crate::extra::grid_sample),
    ("BitCast", crate::extra::bit_cast),
    ("ConvInteger", conv),
    ("Scatter", scatter_elements),
    ("Compress", crate::extra::compress),
    ("LRN", crate::extra::lrn),
    ("OptionalHasElement", crate::extra::optional_has_element),
    ("OptionalGetElement", crate::extra::optional_get_element),
    ("Det", crate::extra::det),
    ("MelWeightMatrix", crate::extra::mel_weight_matrix),
    ("STFT", crate::extra::stft),
];

/// The converter of `op_type`.
pub fn lookup(op_type: &str) -> Option<Converter> {
    CONVERTERS.iter().find(|(n, _)| *n == op_type).map(|(_, c)| *c)
}

// ---------------------------------------------------------------------------
// helpers

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

// ---------------------------------------------------------------------------
// elementwise

fn unary(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let op = match n.op_type.as_str() {
        "Relu" => "nn.relu",
        "Sigmoid" => "sigmoid",
        "Tanh" => "tanh",
        "Exp" => "exp",
        "Log" => "log",
        "Sqrt" => "sqrt",
        "Neg" => "negative",
        "Abs" => "abs",
        "Erf" => "erf",
        "Sin" => "sin",
        "Cos" => "cos",
        "Tan" => "tan",
        "Asin" => "asin",
        "Acos" => "acos",
        "Atan" => "atan",
        "Sinh" => "sinh",
        "Cosh" => "cosh",
        "Asinh" => "asinh",
        "Acosh" => "acosh",
        "Atanh" => "atanh",
        "Floor" => "floor",
        "Ceil" => "ceil",
        "Round" => "round",
        "Sign" => "sign",
        "Not" => "logical_not",
        "IsNaN" => "isnan",
        "BitwiseNot" => "bitwise_not",
        other => return Err(convert_err!(Internal;"internal: {other} is not unary")),
    };
    let v = val(ctx, n, 0)?;
    if n.op_type == "Not" {
        if let Some(k) = v.const_ints() {
            let k = k.iter().map(|&b| PrimExpr::int((b == 0) as i64)).collect();
            return out1(TVal {
                known: Some(Known::Int(k)),
                expr: None,
                init: None,
                ..v
            });
        }
    }
    // small known float tensors (scalars of shape arithmetic) fold
    if let Some(Known::Float(k)) = &v.known {
        let f: Option<fn(f64) -> f64> = match n.op_type.as_str() {
            "Ceil" => Some(f64::ceil),
            "Floor" => Some(f64::floor),
            "Relu" => Some(|x: f64| x.max(0.0)),
            "Abs" => Some(f64::abs),
            "Neg" => Some(|x: f64| -x),
            "Round" => Some(f64::round_ties_even),
            _ => None,
        };
        if let Some(f) = f.filter(|_| k.len() <= 64) {
            return out1(TVal {
                known: Some(Known::Float(k.iter().map(|&x| f(x)).collect())),
                expr: None,
                init: None,
                ..v
            });
        }
    }
    if n.op_type == "Neg" {
        if let Some(Known::Int(k)) = &v.known {
            let k = k.iter().map(|e| ctx.bin(BinOp::Sub, &PrimExpr::int(0), e)).collect();
            return out1(TVal {
                known: Some(Known::Int(k)),
                expr: None,
                init: None,
                ..v
            });
        }
    }
    let a = x(ctx, n, 0)?;
    out1(ctx.op(op, vec![a], &[])?)
}

fn is_inf(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let (neg, pos) = (n.int("detect_negative", 1), n.int("detect_positive", 1));
    let a = x(ctx, n, 0)?;
    let dt = val(ctx, n, 0)?.dtype;
    let inf = ctx.op("isinf", vec![a.clone()], &[])?;
    if neg == 1 && pos == 1 {
        return out1(inf);
    }
    let zero = scalar(dt, 0.0);
    let side = ctx.op(if pos == 1 { "greater" } else { "less" }, vec![a, zero], &[])?;
    let (i, s) = (leaf(ctx, &inf)?, leaf(ctx, &side)?);
    out1(ctx.op("logical_and", vec![i, s], &[])?)
}

fn reciprocal(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    out1(emit2(ctx, "divide", scalar(dt, 1.0), a)?)
}

fn softplus(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = x(ctx, n, 0)?;
    out1(ctx.op("nn.softplus", vec![a], &[])?)
}

fn softsign(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    let abs = ctx.op("abs", vec![a.clone()], &[])?;
    let l = leaf(ctx, &abs)?;
    let d = emit2(ctx, "add", l, scalar(dt, 1.0))?;
    let l = leaf(ctx, &d)?;
    out1(emit2(ctx, "divide", a, l)?)
}

fn leaky_relu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = x(ctx, n, 0)?;
    out1(ctx.op(
        "nn.leakyrelu",
        vec![a],
        &[("alpha", AttrValue::Float(n.float("alpha", 0.01)))],
    )?)
}

/// `where(x > 0, pos(x), neg(x))` with `neg = scale * (exp(x) - 1) * alpha`-like forms.
fn elu_like(ctx: &mut Ctx, n: &Node, alpha: f64, gamma: f64, theta: f64) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    // neg = gamma * alpha * (exp(x / theta) - 1)
    let xs = if theta == 1.0 {
        a.clone()
    } else {
        let t = emit2(ctx, "divide", a.clone(), scalar(dt, theta))?;
        leaf(ctx, &t)?
    };
    let e = ctx.op("exp", vec![xs], &[])?;
    let e = leaf(ctx, &e)?;
    let m = emit2(ctx, "subtract", e, scalar(dt, 1.0))?;
    let m = leaf(ctx, &m)?;
    let neg = emit2(ctx, "multiply", m, scalar(dt, gamma * alpha))?;
    let neg = leaf(ctx, &neg)?;
    let pos = if gamma == 1.0 {
        a.clone()
    } else {
        let p = emit2(ctx, "multiply", a.clone(), scalar(dt, gamma))?;
        leaf(ctx, &p)?
    };
    let c = emit2(ctx, "greater", a, scalar(dt, 0.0))?;
    let c = leaf(ctx, &c)?;
    out1(ctx.op("where", vec![c, pos, neg], &[])?)
}

fn elu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    elu_like(ctx, n, n.float("alpha", 1.0), 1.0, 1.0)
}

fn selu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    elu_like(
        ctx,
        n,
        n.float("alpha", 1.673_263_192_176_818_8),
        n.float("gamma", 1.050_701_022_148_132_3),
        1.0,
    )
}

fn celu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let alpha = n.float("alpha", 1.0);
    elu_like(ctx, n, alpha, 1.0, alpha)
}

fn hard_sigmoid_expr(ctx: &mut Ctx, a: Expr, dt: DataType, alpha: f64, beta: f64) -> Result<Expr, ConvertError> {
    let m = emit2(ctx, "multiply", a, scalar(dt, alpha))?;
    let m = leaf(ctx, &m)?;
    let s = emit2(ctx, "add", m, scalar(dt, beta))?;
    let s = leaf(ctx, &s)?;
    let lo = emit2(ctx, "maximum", s, scalar(dt, 0.0))?;
    let lo = leaf(ctx, &lo)?;
    let hi = emit2(ctx, "minimum", lo, scalar(dt, 1.0))?;
    leaf(ctx, &hi)
}

fn hard_sigmoid(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    let e = hard_sigmoid_expr(ctx, a, dt, n.float("alpha", 0.2), n.float("beta", 0.5))?;
    out1(tval_leaf(ctx, e)?)
}

fn hard_swish(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    let e = hard_sigmoid_expr(ctx, a.clone(), dt, 1.0 / 6.0, 0.5)?;
    out1(emit2(ctx, "multiply", a, e)?)
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

fn prelu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    let slope = x(ctx, n, 1)?;
    let m = emit2(ctx, "multiply", a.clone(), slope)?;
    let m = leaf(ctx, &m)?;
    let c = emit2(ctx, "less", a.clone(), scalar(dt, 0.0))?;
    let c = leaf(ctx, &c)?;
    out1(ctx.op("where", vec![c, m, a], &[])?)
}

fn gelu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = x(ctx, n, 0)?;
    let op = match n.string("approximate").as_deref() {
        None | Some("none") => "nn.gelu",
        Some("tanh") => "nn.gelu_tanh",
        Some(o) => return Err(convert_err!(Unsupported;"approximate=`{o}` is not supported")),
    };
    out1(ctx.op(op, vec![a], &[])?)
}

fn mish(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = x(ctx, n, 0)?;
    let sp = ctx.op("nn.softplus", vec![a.clone()], &[])?;
    let sp = leaf(ctx, &sp)?;
    let t = ctx.op("tanh", vec![sp], &[])?;
    let t = leaf(ctx, &t)?;
    out1(emit2(ctx, "multiply", a, t)?)
}

fn thresholded_relu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    let c = emit2(ctx, "greater", a.clone(), scalar(dt, n.float("alpha", 1.0)))?;
    let c = leaf(ctx, &c)?;
    out1(ctx.op("where", vec![c, a, scalar(dt, 0.0)], &[])?)
}

fn identity(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    if n.op_type != "Dropout" {
        return out1(val(ctx, n, 0)?);
    }
    if n.has(2) {
        let training = val(ctx, n, 2)?
            .const_ints()
            .and_then(|v| v.first().copied())
            .ok_or_else(|| must_be_known(n, 2))?;
        // training with ratio 0 keeps every element, as inference does
        let ratio = if n.has(1) {
            val(ctx, n, 1)?
                .const_floats()
                .and_then(|v| v.first().copied())
                .ok_or_else(|| must_be_known(n, 1))?
        } else {
            0.5
        };
        if training != 0 && ratio != 0.0 {
            return Err(ConvertError::unsupported(
                "training_mode is not supported (only inference)",
            ));
        }
    }
    let v = val(ctx, n, 0)?;
    if n.outputs.get(1).is_none_or(|s| s.is_empty()) {
        return out1(v);
    }
    // the mask keeps every element
    let a = x(ctx, n, 0)?;
    let one = crate::convert::constant(DataType::BOOL, vec![], std::iter::once(vec![1u8]));
    let mask = ctx.op(
        "full_like",
        vec![a, one],
        &[("dtype", AttrValue::DataType(DataType::BOOL))],
    )?;
    Ok(vec![v, mask])
}

fn clip(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let mut cur = x(ctx, n, 0)?;
    let mut v = val(ctx, n, 0)?;
    let bounds: [(Option<Expr>, &str); 2] = if n.opset < 11 {
        [
            (n.attr("min").map(|a| scalar(dt, a.f as f64)), "maximum"),
            (n.attr("max").map(|a| scalar(dt, a.f as f64)), "minimum"),
        ]
    } else {
        let mut b = [(None, "maximum"), (None, "minimum")];
        for (k, slot) in b.iter_mut().enumerate() {
            if n.has(k + 1) {
                slot.0 = Some(x(ctx, n, k + 1)?);
            }
        }
        b
    };
    for (b, op) in bounds {
        if let Some(b) = b {
            v = emit2(ctx, op, cur, b)?;
            cur = leaf(ctx, &v)?;
        }
    }
    out1(v)
}

fn onnx_dtype(to: i64) -> Result<DataType, ConvertError> {
    let t = i32::try_from(to).map_err(|_| convert_err!("bad element type {to}"))?;
    tensor::dtype_of(t)
        .ok_or_else(|| convert_err!(Unsupported;"cast to {} is not supported", tensor::onnx_type_name(t)))
}

fn cast_to(ctx: &mut Ctx, n: &Node, to: DataType) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    if let Some(k) = &v.known {
        let folded = match (k, to.is_float()) {
            (Known::Int(vals), false) => Some(Known::Int(if to.is_bool() {
                vals.iter()
                    .map(|e| e.as_int().map(|i| PrimExpr::int((i != 0) as i64)))
                    .collect::<Option<Vec<_>>>()
                    .unwrap_or_default()
            } else {
                vals.clone()
            })),
            // integer values (possibly symbolic) stay integers in a float tensor
            (Known::Int(vals), true) => Some(
                vals.iter()
                    .map(|e| e.as_int().map(|i| Known::Float(vec![i as f64])))
                    .collect::<Option<Vec<_>>>()
                    .map(|_| Known::Float(vals.iter().filter_map(PrimExpr::as_int).map(|i| i as f64).collect()))
                    .unwrap_or_else(|| Known::Int(vals.clone())),
            ),
            (Known::Float(vals), false) => Some(Known::Int(
                vals.iter()
                    .map(|&f| PrimExpr::int(if to.is_bool() { (f != 0.0) as i64 } else { f as i64 }))
                    .collect(),
            )),
            (Known::Float(vals), true) => Some(Known::Float(vals.clone())),
        };
        if let Some(k2) = folded.filter(|k2| k2.len() == k.len()) {
            return out1(TVal {
                expr: None,
                dtype: to,
                known: Some(k2),
                init: None,
                ..v
            });
        }
    }
    if v.dtype == to {
        return out1(v);
    }
    let a = x(ctx, n, 0)?;
    out1(ctx.op("astype", vec![a], &[("dtype", AttrValue::DataType(to))])?)
}

fn cast(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let to = onnx_dtype(n.int("to", 0))?;
    cast_to(ctx, n, to)
}

fn cast_like(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let to = val(ctx, n, 1)?.dtype;
    cast_to(ctx, n, to)
}

/// Broadcast two constant shapes (numpy rules).
fn broadcast_shapes(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
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
fn bcast_index(mut k: usize, out: &[i64], inp: &[i64]) -> usize {
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

/// Fold a binary operator over known integer values.
fn fold_binary(ctx: &Ctx, op: &str, a: &TVal, b: &TVal) -> Option<TVal> {
    let (Some(Known::Int(ka)), Some(Known::Int(kb))) = (&a.known, &b.known) else {
        return None;
    };
    if a.dtype.is_float() || b.dtype.is_float() {
        return None;
    }
    let (sa, sb) = (a.const_shape()?, b.const_shape()?);
    let out = broadcast_shapes(&sa, &sb)?;
    let numel = const_product(&out) as usize;
    let mut vals = Vec::with_capacity(numel);
    let mut is_bool = false;
    for k in 0..numel {
        let x = &ka[bcast_index(k, &out, &sa)];
        let y = &kb[bcast_index(k, &out, &sb)];
        let cmp = |o: BinOp| -> Option<PrimExpr> {
            let e = ctx.simplify(&PrimExpr::binary(o, x.clone(), y.clone()));
            e.as_int().map(|v| PrimExpr::int((v != 0) as i64))
        };
        let v = match op {
            "Add" => ctx.bin(BinOp::Add, x, y),
            "Sub" => ctx.bin(BinOp::Sub, x, y),
            "Mul" => ctx.bin(BinOp::Mul, x, y),
            "Div" => match (x.as_int(), y.as_int()) {
                (Some(p), Some(q)) if q != 0 => PrimExpr::int(p / q),
                (_, Some(q)) if q > 0 => ctx.bin(BinOp::FloorDiv, x, y),
                _ => return None,
            },
            "Mod" => match (x.as_int(), y.as_int()) {
                (Some(p), Some(q)) if q != 0 => {
                    PrimExpr::int(p.rem_euclid(q) + if q < 0 && p.rem_euclid(q) != 0 { q } else { 0 })
                }
                _ => return None,
            },
            "Max" => ctx.bin(BinOp::Max, x, y),
            "Min" => ctx.bin(BinOp::Min, x, y),
            "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" => {
                is_bool = true;
                let o = match op {
                    "Equal" => BinOp::Eq,
                    "Less" => BinOp::Lt,
                    "Greater" => BinOp::Gt,
                    "LessOrEqual" => BinOp::Le,
                    _ => BinOp::Ge,
                };
                if o == BinOp::Eq && ctx.ana.can_prove_equal(x, y) {
                    PrimExpr::int(1)
                } else if o == BinOp::Eq && ctx.ana.can_prove_not_equal(x, y) {
                    PrimExpr::int(0)
                } else {
                    cmp(o)?
                }
            }
            "And" | "Or" | "Xor" => {
                is_bool = true;
                let (p, q) = (x.as_int()? != 0, y.as_int()? != 0);
                PrimExpr::int(match op {
                    "And" => p && q,
                    "Or" => p || q,
                    _ => p ^ q,
                } as i64)
            }
            _ => return None,
        };
        if v.as_int().is_none() && v.dtype() != DataType::INT64 && !v.dtype().is_int() {
            return None;
        }
        vals.push(v);
    }
    Some(TVal::known(
        if is_bool { DataType::BOOL } else { a.dtype },
        out,
        Known::Int(vals),
    ))
}

/// Fold a binary operator over known float values.
fn fold_binary_float(op: &str, a: &TVal, b: &TVal) -> Option<TVal> {
    if !a.dtype.is_float() || a.known.as_ref()?.len() > 64 {
        return None;
    }
    let (fa, fb) = (a.const_floats()?, b.const_floats()?);
    let (sa, sb) = (a.const_shape()?, b.const_shape()?);
    let out = broadcast_shapes(&sa, &sb)?;
    let numel = const_product(&out) as usize;
    let mut vals = Vec::with_capacity(numel);
    for k in 0..numel {
        let x = fa[bcast_index(k, &out, &sa)];
        let y = fb[bcast_index(k, &out, &sb)];
        vals.push(match op {
            "Add" => x + y,
            "Sub" => x - y,
            "Mul" => x * y,
            "Div" => x / y,
            _ => return None,
        });
    }
    // round through the dtype so the folded constant equals what a kernel computes
    let dt = a.dtype;
    let vals = vals
        .into_iter()
        .map(|v| {
            let bytes = tensor::encode(dt, v);
            let arr = relax_ir::NDArray {
                dtype: dt,
                shape: vec![],
                data: bytes,
            };
            tensor::elem_f64(&arr, 0).unwrap_or(v)
        })
        .collect();
    Some(TVal::known(dt, out, Known::Float(vals)))
}

fn binary_op_name(op_type: &str, fmod: i64, dtype: DataType) -> Result<&'static str, ConvertError> {
    Ok(match op_type {
        "Add" | "Sum" | "Mean" => "add",
        "Sub" => "subtract",
        "Mul" => "multiply",
        "Div" if dtype.is_float() => "divide",
        "Div" => "divide",
        "Pow" => "power",
        "Mod" if fmod == 1 => "mod",
        "Mod" => "floor_mod",
        "Equal" => "equal",
        "Less" => "less",
        "Greater" => "greater",
        "LessOrEqual" => "less_equal",
        "GreaterOrEqual" => "greater_equal",
        "And" => "logical_and",
        "Or" => "logical_or",
        "Xor" => "logical_xor",
        "BitwiseAnd" => "bitwise_and",
        "BitwiseOr" => "bitwise_or",
        "BitwiseXor" => "bitwise_xor",
        "Max" => "maximum",
        "Min" => "minimum",
        o => return Err(convert_err!(Internal;"internal: {o} is not binary")),
    })
}

/// `op(a, b)` for two ONNX values (folded when both are known).
fn binary_vals(ctx: &mut Ctx, n: &Node, op_type: &str, a: (&str, TVal), b: (&str, TVal)) -> Result<TVal, ConvertError> {
    if let Some(f) = fold_binary(ctx, op_type, &a.1, &b.1) {
        return Ok(f);
    }
    if let Some(f) = fold_binary_float(op_type, &a.1, &b.1) {
        return Ok(f);
    }
    let op = binary_op_name(op_type, n.int("fmod", 0), a.1.dtype)?;
    let ea = ctx.tensor(a.0)?;
    let mut eb = ctx.tensor(b.0)?;
    if op == "power" && b.1.dtype != a.1.dtype {
        let c = ctx.op("astype", vec![eb], &[("dtype", AttrValue::DataType(a.1.dtype))])?;
        eb = leaf(ctx, &c)?;
    }
    ctx.op(op, vec![ea, eb], &[])
}

fn binary(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let (a, b) = (val(ctx, n, 0)?, val(ctx, n, 1)?);
    let r = binary_vals(ctx, n, &n.op_type, (n.input(0)?, a), (n.input(1)?, b))?;
    out1(r)
}

fn variadic(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let names: Vec<String> = n.inputs.iter().filter(|s| !s.is_empty()).cloned().collect();
    let first = names.first().ok_or("no inputs")?;
    let mut acc = ctx.value(first)?.clone();
    let mut acc_name = first.clone();
    for (k, name) in names.iter().enumerate().skip(1) {
        let b = ctx.value(name)?.clone();
        acc = binary_vals(ctx, n, &n.op_type, (&acc_name, acc), (name, b))?;
        // name the intermediate so that the next step can read it
        acc_name = format!("\u{0}{}#{k}", n.name);
        ctx.set(&acc_name, acc.clone());
    }
    if n.op_type == "Mean" && names.len() > 1 {
        let e = ctx.tensor(&acc_name)?;
        acc = emit2(ctx, "divide", e, scalar(acc.dtype, names.len() as f64))?;
    }
    out1(acc)
}

fn where_op(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let (c, a, b) = (val(ctx, n, 0)?, val(ctx, n, 1)?, val(ctx, n, 2)?);
    if let (Some(Known::Int(kc)), Some(Known::Int(ka)), Some(Known::Int(kb))) = (&c.known, &a.known, &b.known) {
        let shapes = (c.const_shape(), a.const_shape(), b.const_shape());
        if let (Some(sc), Some(sa), Some(sb)) = shapes {
            if let Some(out) = broadcast_shapes(&sc, &sa).and_then(|s| broadcast_shapes(&s, &sb)) {
                let numel = const_product(&out) as usize;
                let mut vals = Vec::new();
                for k in 0..numel {
                    match kc[bcast_index(k, &out, &sc)].as_int() {
                        Some(cv) => vals.push(if cv != 0 {
                            ka[bcast_index(k, &out, &sa)].clone()
                        } else {
                            kb[bcast_index(k, &out, &sb)].clone()
                        }),
                        None => break,
                    }
                }
                if vals.len() == numel {
                    return out1(TVal::known(a.dtype, out, Known::Int(vals)));
                }
            }
        }
    }
    let (ec, ea, eb) = (x(ctx, n, 0)?, x(ctx, n, 1)?, x(ctx, n, 2)?);
    out1(ctx.op("where", vec![ec, ea, eb], &[])?)
}

// ---------------------------------------------------------------------------
// linear algebra and layers

fn matmul(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let (a, b) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    out1(ctx.op("matmul", vec![a, b], &[])?)
}

fn transpose_2d(ctx: &mut Ctx, e: Expr) -> Result<Expr, ConvertError> {
    let t = ctx.op("permute_dims", vec![e], &[("axes", ints_attr(&[1, 0]))])?;
    leaf(ctx, &t)
}

fn gemm(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let (alpha, beta) = (n.float("alpha", 1.0), n.float("beta", 1.0));
    let mut a = x(ctx, n, 0)?;
    let mut b = x(ctx, n, 1)?;
    if n.int("transA", 0) != 0 {
        a = transpose_2d(ctx, a)?;
    }
    if n.int("transB", 0) != 0 {
        b = transpose_2d(ctx, b)?;
    }
    let mut y = ctx.op("matmul", vec![a, b], &[])?;
    if alpha != 1.0 {
        let l = leaf(ctx, &y)?;
        y = emit2(ctx, "multiply", l, scalar(dt, alpha))?;
    }
    if n.has(2) && beta != 0.0 {
        let mut c = x(ctx, n, 2)?;
        if beta != 1.0 {
            let t = emit2(ctx, "multiply", c, scalar(dt, beta))?;
            c = leaf(ctx, &t)?;
        }
        let l = leaf(ctx, &y)?;
        y = emit2(ctx, "add", l, c)?;
    }
    out1(y)
}

/// Padding of `dims` spatial axes: explicit `pads` or `auto_pad`; ONNX's order
/// `[begin..., end...]`, which is also Relax's.
fn spatial_pads(
    n: &Node,
    in_dims: Option<&[i64]>,
    kernel: &[i64],
    strides: &[i64],
    dilations: &[i64],
) -> Result<Vec<i64>, ConvertError> {
    let k = kernel.len();
    let auto = n.string("auto_pad").unwrap_or_else(|| "NOTSET".into());
    match auto.as_str() {
        "NOTSET" | "" => {
            let p = n.ints("pads").unwrap_or_else(|| vec![0; 2 * k]);
            if p.len() != 2 * k {
                return Err(convert_err!("pads has {} values, expected {}", p.len(), 2 * k));
            }
            Ok(p)
        }
        "VALID" => Ok(vec![0; 2 * k]),
        "SAME_UPPER" | "SAME_LOWER" => {
            let dims = in_dims.ok_or("auto_pad SAME needs static spatial dimensions")?;
            let mut p = vec![0; 2 * k];
            for i in 0..k {
                let out = (dims[i] + strides[i] - 1) / strides[i];
                let eff = (kernel[i] - 1) * dilations[i] + 1;
                let total = ((out - 1) * strides[i] + eff - dims[i]).max(0);
                let (lo, hi) = if auto == "SAME_UPPER" {
                    (total / 2, total - total / 2)
                } else {
                    (total - total / 2, total / 2)
                };
                p[i] = lo;
                p[i + k] = hi;
            }
            Ok(p)
        }
        o => Err(convert_err!(Unsupported;"auto_pad `{o}` is not supported")),
    }
}

fn spatial_in_dims(v: &TVal) -> Option<Vec<i64>> {
    v.const_shape().map(|s| s[2..].to_vec())
}

fn conv(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let wv = val(ctx, n, 1)?;
    let rank = xv.rank().ok_or("input has unknown rank")?;
    let k = rank
        .checked_sub(2)
        .filter(|k| (1..=3).contains(k))
        .ok_or_else(|| ConvertError::unsupported("Conv supports 1 to 3 spatial axes"))?;
    let wshape = wv.const_shape().ok_or("the weight needs a static shape")?;
    let kernel = n.ints("kernel_shape").unwrap_or_else(|| wshape[2..].to_vec());
    let strides = n.ints("strides").unwrap_or_else(|| vec![1; k]);
    let dil = n.ints("dilations").unwrap_or_else(|| vec![1; k]);
    let pads = spatial_pads(n, spatial_in_dims(&xv).as_deref(), &kernel, &strides, &dil)?;
    let (a, w) = if n.op_type == "ConvInteger" {
        // exact in float32 for 8-bit operands: the int32 result is rounded back
        let a = crate::extra::centered_f32(ctx, n, 0, 2)?;
        let w = crate::extra::centered_f32(ctx, n, 1, 3)?;
        (a, w)
    } else {
        (x(ctx, n, 0)?, x(ctx, n, 1)?)
    };
    let op = ["nn.conv1d", "nn.conv2d", "nn.conv3d"][k - 1];
    let mut y = ctx.op(
        op,
        vec![a, w],
        &[
            ("strides", ints_attr(&strides)),
            ("padding", ints_attr(&pads)),
            ("dilation", ints_attr(&dil)),
            ("groups", AttrValue::Int(n.int("group", 1))),
        ],
    )?;
    if n.op_type == "ConvInteger" {
        let l = leaf(ctx, &y)?;
        let r = ctx.op("round", vec![l], &[])?;
        let l = leaf(ctx, &r)?;
        return out1(ctx.op("astype", vec![l], &[("dtype", AttrValue::DataType(DataType::INT32))])?);
    }
    if n.has(2) {
        y = add_channel_bias(ctx, n, y, k)?;
    }
    out1(y)
}

/// `y + reshape(bias, (1, C, 1, ...))`.
fn add_channel_bias(ctx: &mut Ctx, n: &Node, y: TVal, k: usize) -> Result<TVal, ConvertError> {
    let b = x(ctx, n, 2)?;
    let bshape = shape_of(ctx, n, 2)?;
    let mut target = vec![PrimExpr::int(1), bshape.first().cloned().ok_or("bias must be 1-D")?];
    target.extend((0..k).map(|_| PrimExpr::int(1)));
    let br = ctx.op("reshape", vec![b, Expr::shape(target)], &[])?;
    let (l, bl) = (leaf(ctx, &y)?, leaf(ctx, &br)?);
    emit2(ctx, "add", l, bl)
}

fn conv_transpose(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let wv = val(ctx, n, 1)?;
    let rank = xv.rank().ok_or("input has unknown rank")?;
    let k = rank
        .checked_sub(2)
        .filter(|k| (1..=3).contains(k))
        .ok_or_else(|| ConvertError::unsupported("ConvTranspose supports 1 to 3 spatial axes"))?;
    let wshape = wv.const_shape().ok_or("the weight needs a static shape")?;
    let kernel = n.ints("kernel_shape").unwrap_or_else(|| wshape[2..].to_vec());
    let strides = n.ints("strides").unwrap_or_else(|| vec![1; k]);
    let dil = n.ints("dilations").unwrap_or_else(|| vec![1; k]);
    let auto = n.string("auto_pad").unwrap_or_else(|| "NOTSET".into());
    if !matches!(auto.as_str(), "NOTSET" | "VALID" | "SAME_UPPER" | "SAME_LOWER") {
        return Err(convert_err!(Unsupported;"auto_pad `{auto}` is not supported"));
    }
    let mut pads = n.ints("pads").unwrap_or_else(|| vec![0; 2 * k]);
    let mut out_pad = n.ints("output_padding").unwrap_or_else(|| vec![0; k]);
    let in_dims = spatial_in_dims(&xv);
    // an explicit output shape (or SAME padding) fixes the pads: the total padding is
    // split between the two ends, the odd one at the end (the start for SAME_LOWER)
    let target: Option<Vec<i64>> = match n.ints("output_shape") {
        Some(o) if o.len() >= k => Some(o[o.len() - k..].to_vec()),
        Some(_) => return Err("output_shape does not match the spatial axes".into()),
        None if auto.starts_with("SAME") => in_dims
            .as_ref()
            .map(|d| d.iter().zip(&strides).map(|(a, s)| a * s).collect()),
        None => None,
    };
    if let Some(target) = target {
        let dims = in_dims.ok_or("output_shape needs static spatial dimensions")?;
        for i in 0..k {
            let total = strides[i] * (dims[i] - 1) + out_pad[i] + (kernel[i] - 1) * dil[i] + 1 - target[i];
            if total < 0 {
                out_pad[i] -= total;
                pads[i] = 0;
                pads[i + k] = 0;
            } else if auto == "SAME_UPPER" {
                pads[i] = total / 2;
                pads[i + k] = total - total / 2;
            } else {
                pads[i] = total - total / 2;
                pads[i + k] = total / 2;
            }
        }
    }
    let (a, w) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    let op = ["nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose"][k - 1];
    let mut y = ctx.op(
        op,
        vec![a, w],
        &[
            ("strides", ints_attr(&strides)),
            ("padding", ints_attr(&pads)),
            ("output_padding", ints_attr(&out_pad)),
            ("dilation", ints_attr(&dil)),
            ("groups", AttrValue::Int(n.int("group", 1))),
        ],
    )?;
    if n.has(2) {
        y = add_channel_bias(ctx, n, y, k)?;
    }
    out1(y)
}

fn pool(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = x(ctx, n, 0)?;
    let max = n.op_type == "MaxPool";
    let include_pad = n.int("count_include_pad", 0) != 0;
    pool_of(ctx, n, a, max, include_pad)
}

/// Max or average pooling of `a` (the node's input 0 or a function of it) with the
/// node's kernel, strides, dilations and pads.
pub(crate) fn pool_of(
    ctx: &mut Ctx,
    n: &Node,
    a: Expr,
    max: bool,
    include_pad: bool,
) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let rank = xv.rank().ok_or("input has unknown rank")?;
    let k = rank
        .checked_sub(2)
        .filter(|k| (1..=3).contains(k))
        .ok_or_else(|| ConvertError::unsupported("pooling supports 1 to 3 spatial axes"))?;
    let kernel = n.ints("kernel_shape").ok_or("kernel_shape is required")?;
    if kernel.len() != k {
        return Err("kernel_shape does not match the input's rank".into());
    }
    let strides = n.ints("strides").unwrap_or_else(|| vec![1; k]);
    let dil = n.ints("dilations").unwrap_or_else(|| vec![1; k]);
    let pads = spatial_pads(n, spatial_in_dims(&xv).as_deref(), &kernel, &strides, &dil)?;
    let op = if max {
        ["nn.max_pool1d", "nn.max_pool2d", "nn.max_pool3d"][k - 1]
    } else {
        ["nn.avg_pool1d", "nn.avg_pool2d", "nn.avg_pool3d"][k - 1]
    };
    let mut attrs = vec![
        ("pool_size", ints_attr(&kernel)),
        ("strides", ints_attr(&strides)),
        ("dilation", ints_attr(&dil)),
        ("padding", ints_attr(&pads)),
        ("ceil_mode", AttrValue::Bool(n.int("ceil_mode", 0) != 0)),
    ];
    if !max {
        attrs.push(("count_include_pad", AttrValue::Bool(include_pad)));
    }
    out1(ctx.op(op, vec![a], &attrs)?)
}

fn global_pool(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let axes: Vec<i64> = (2..rank as i64).collect();
    let a = x(ctx, n, 0)?;
    let op = if n.op_type == "GlobalMaxPool" { "max" } else { "mean" };
    out1(ctx.op(
        op,
        vec![a],
        &[("axis", ints_attr(&axes)), ("keepdims", AttrValue::Bool(true))],
    )?)
}

fn batch_norm(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    if n.int("training_mode", 0) != 0 {
        return Err(ConvertError::unsupported("training_mode=1 is not supported"));
    }
    let mut args = Vec::new();
    for i in 0..5 {
        args.push(x(ctx, n, i)?);
    }
    let t = ctx.op_tuple(
        "nn.batch_norm",
        args,
        &[
            ("axis", AttrValue::Int(1)),
            ("epsilon", AttrValue::Float(n.float("epsilon", 1e-5))),
            ("momentum", AttrValue::Float(n.float("momentum", 0.9))),
            ("training", AttrValue::Bool(false)),
        ],
    )?;
    out1(ctx.item(&t, 0)?)
}

fn instance_norm(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let axes: Vec<i64> = (2..rank as i64).collect();
    let (a, g, b) = (x(ctx, n, 0)?, x(ctx, n, 1)?, x(ctx, n, 2)?);
    out1(ctx.op(
        "nn.instance_norm",
        vec![a, g, b],
        &[
            ("channel_axis", AttrValue::Int(1)),
            ("axes", ints_attr(&axes)),
            ("epsilon", AttrValue::Float(n.float("epsilon", 1e-5))),
        ],
    )?)
}

fn layer_norm(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let rank = xv.rank().ok_or("input has unknown rank")?;
    let axis = norm_axis(n.int("axis", -1), rank)?;
    let axes: Vec<i64> = (axis as i64..rank as i64).collect();
    let a = x(ctx, n, 0)?;
    let g = x(ctx, n, 1)?;
    let b = if n.has(2) {
        x(ctx, n, 2)?
    } else {
        let gs = val(ctx, n, 1)?.const_shape().ok_or("scale needs a static shape")?;
        let numel = const_product(&gs) as usize;
        crate::convert::constant(xv.dtype, gs, (0..numel).map(|_| tensor::encode(xv.dtype, 0.0)))
    };
    let eps = n.float("epsilon", 1e-5);
    let y = ctx.op(
        "nn.layer_norm",
        vec![a.clone(), g, b],
        &[("axes", ints_attr(&axes)), ("epsilon", AttrValue::Float(eps))],
    )?;
    if n.outputs.iter().skip(1).all(|s| s.is_empty()) {
        return out1(y);
    }
    // Mean and InvStdDev, reduced with keepdims
    let red = [("axis", ints_attr(&axes)), ("keepdims", AttrValue::Bool(true))];
    let mean = ctx.op("mean", vec![a.clone()], &red)?;
    let ml = leaf(ctx, &mean)?;
    let d = emit2(ctx, "subtract", a, ml)?;
    let dl = leaf(ctx, &d)?;
    let sq = emit2(ctx, "multiply", dl.clone(), dl)?;
    let sql = leaf(ctx, &sq)?;
    let var = ctx.op("mean", vec![sql], &red)?;
    let vl = leaf(ctx, &var)?;
    let ve = emit2(ctx, "add", vl, scalar(xv.dtype, eps))?;
    let vel = leaf(ctx, &ve)?;
    let inv = ctx.op("rsqrt", vec![vel], &[])?;
    Ok(vec![y, mean, inv])
}

fn rms_norm(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let axis = norm_axis(n.int("axis", -1), rank)?;
    let axes: Vec<i64> = (axis as i64..rank as i64).collect();
    let (a, g) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    out1(ctx.op(
        "nn.rms_norm",
        vec![a, g],
        &[
            ("axes", ints_attr(&axes)),
            ("epsilon", AttrValue::Float(n.float("epsilon", 1e-5))),
        ],
    )?)
}

pub(crate) fn softmax(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let shape = shape_of(ctx, n, 0)?;
    let rank = shape.len();
    let axis = norm_axis(n.int("axis", if n.opset < 13 { 1 } else { -1 }), rank)?;
    let op = if n.op_type == "Softmax" {
        "nn.softmax"
    } else {
        "nn.log_softmax"
    };
    let a = x(ctx, n, 0)?;
    if n.opset >= 13 || axis + 1 == rank {
        return out1(ctx.op(op, vec![a], &[("axis", AttrValue::Int(axis as i64))])?);
    }
    // opsets before 13: the input is coerced to 2-D at `axis`
    let (lo, hi) = (product(ctx, &shape[..axis]), product(ctx, &shape[axis..]));
    let r = ctx.op("reshape", vec![a, Expr::shape(vec![lo, hi])], &[])?;
    let l = leaf(ctx, &r)?;
    let s = ctx.op(op, vec![l], &[("axis", AttrValue::Int(1))])?;
    let l = leaf(ctx, &s)?;
    out1(ctx.op("reshape", vec![l, Expr::shape(shape)], &[])?)
}

// ---------------------------------------------------------------------------
// shapes and data movement

fn known_from_array(a: &relax_ir::NDArray) -> Option<Known> {
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

fn constant_node(_ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let out = n.outputs.first().cloned().unwrap_or_default();
    let arr = |dtype: DataType, shape: Vec<i64>, elems: Vec<Vec<u8>>| relax_ir::NDArray {
        dtype,
        shape,
        data: elems.concat(),
    };
    let a = if let Some(t) = n.attr("value").and_then(|a| a.t.as_ref()) {
        tensor::to_ndarray(t, None).map_err(|e| e.message)?
    } else if let Some(a) = n.attr("value_float") {
        arr(
            DataType::FLOAT32,
            vec![],
            vec![tensor::encode(DataType::FLOAT32, a.f as f64)],
        )
    } else if let Some(a) = n.attr("value_floats") {
        let v: Vec<_> = a
            .floats
            .iter()
            .map(|&f| tensor::encode(DataType::FLOAT32, f as f64))
            .collect();
        arr(DataType::FLOAT32, vec![v.len() as i64], v)
    } else if let Some(a) = n.attr("value_int") {
        arr(DataType::INT64, vec![], vec![a.i.to_le_bytes().to_vec()])
    } else if let Some(a) = n.attr("value_ints") {
        let v: Vec<_> = a.ints.iter().map(|i| i.to_le_bytes().to_vec()).collect();
        arr(DataType::INT64, vec![v.len() as i64], v)
    } else {
        return Err(ConvertError::unsupported(
            "only tensor, float(s) and int(s) values are supported",
        ));
    };
    let _ = at::TENSOR;
    out1(array_value(&out, a))
}

fn constant_of_shape(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dims = known_ints(ctx, n, 0)?;
    let (dtype, fill) = match n.attr("value").and_then(|a| a.t.as_ref()) {
        Some(t) => {
            let a = tensor::to_ndarray(t, None).map_err(|e| e.message)?;
            if a.numel() != 1 {
                return Err("value must hold one element".into());
            }
            (a.dtype, tensor::elem_f64(&a, 0).ok_or("bad value")?)
        }
        None => (DataType::FLOAT32, 0.0),
    };
    let consts: Option<Vec<i64>> = dims.iter().map(PrimExpr::as_int).collect();
    if let Some(c) = &consts {
        let numel = const_product(c);
        if (0..=4096).contains(&numel) {
            let k = if dtype.is_float() {
                Known::Float(vec![fill; numel as usize])
            } else {
                Known::Int(vec![PrimExpr::int(fill as i64); numel as usize])
            };
            return out1(TVal::known(dtype, c.clone(), k));
        }
    }
    out1(ctx.op(
        "full",
        vec![Expr::shape(dims), scalar(dtype, fill)],
        &[("dtype", AttrValue::DataType(dtype))],
    )?)
}

fn shape(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dims = shape_of(ctx, n, 0)?;
    let r = dims.len() as i64;
    let clampi = |v: i64| -> usize { (if v < 0 { v + r } else { v }).clamp(0, r) as usize };
    let start = clampi(n.int("start", 0));
    let end = clampi(n.int("end", r));
    let d: Vec<PrimExpr> = if start < end { dims[start..end].to_vec() } else { vec![] };
    let len = d.len() as i64;
    out1(TVal::known(DataType::INT64, vec![len], Known::Int(d)))
}

fn size(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dims = shape_of(ctx, n, 0)?;
    let p = product(ctx, &dims);
    out1(TVal::known(DataType::INT64, vec![], Known::Int(vec![p])))
}

/// ONNX reshape semantics: `0` copies the input dimension (unless `allowzero`),
/// `-1` is inferred.
fn reshape_dims(
    ctx: &Ctx,
    input: &[PrimExpr],
    target: &[PrimExpr],
    allowzero: bool,
) -> Result<Vec<PrimExpr>, ConvertError> {
    let mut out: Vec<Option<PrimExpr>> = Vec::new();
    let mut infer = None;
    for (i, t) in target.iter().enumerate() {
        match t.as_int() {
            Some(0) if !allowzero => out.push(Some(
                input.get(i).cloned().ok_or("0 in the shape beyond the input's rank")?,
            )),
            Some(-1) => {
                if infer.is_some() {
                    return Err("more than one -1 in the shape".into());
                }
                infer = Some(i);
                out.push(None);
            }
            Some(v) if v < -1 => return Err(convert_err!("bad dimension {v} in the shape")),
            _ => out.push(Some(t.clone())),
        }
    }
    if let Some(i) = infer {
        let known: Vec<PrimExpr> = out.iter().flatten().cloned().collect();
        let total = product(ctx, input);
        let part = product(ctx, &known);
        out[i] = Some(ctx.bin(BinOp::FloorDiv, &total, &part));
    }
    Ok(out.into_iter().flatten().collect())
}

fn reshape(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let target = if n.opset < 5 {
        n.ints("shape")
            .ok_or("no shape")?
            .into_iter()
            .map(PrimExpr::int)
            .collect()
    } else {
        known_ints(ctx, n, 1)?
    };
    let input = v.shape.clone().ok_or("input has unknown shape")?;
    let dims = reshape_dims(ctx, &input, &target, n.int("allowzero", 0) != 0)?;
    reshape_to(ctx, n, v, dims)
}

/// Reshape input 0 to `dims` (folded for known values).
fn reshape_to(ctx: &mut Ctx, n: &Node, v: TVal, dims: Vec<PrimExpr>) -> Result<Vec<TVal>, ConvertError> {
    if let (Some(k), Some(c)) = (
        &v.known,
        dims.iter().map(PrimExpr::as_int).collect::<Option<Vec<i64>>>(),
    ) {
        if const_product(&c) as usize == k.len() {
            return out1(TVal::known(v.dtype, c, k.clone()));
        }
    }
    if v.shape
        .as_ref()
        .is_some_and(|s| s.len() == dims.len() && s.iter().zip(&dims).all(|(a, b)| ctx.ana.can_prove_equal(a, b)))
    {
        return out1(v);
    }
    let a = x(ctx, n, 0)?;
    out1(ctx.op("reshape", vec![a, Expr::shape(dims)], &[])?)
}

fn flatten(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let s = v.shape.clone().ok_or("input has unknown shape")?;
    let r = s.len() as i64;
    let a = n.int("axis", 1);
    let axis = if a < 0 { a + r } else { a };
    if !(0..=r).contains(&axis) {
        return Err(convert_err!("axis {a} is out of range"));
    }
    let axis = axis as usize;
    let dims = vec![product(ctx, &s[..axis]), product(ctx, &s[axis..])];
    reshape_to(ctx, n, v, dims)
}

fn transpose(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let perm = n.ints("perm").unwrap_or_else(|| (0..rank as i64).rev().collect());
    if perm.len() != rank {
        return Err("perm does not match the input's rank".into());
    }
    let a = x(ctx, n, 0)?;
    out1(ctx.op("permute_dims", vec![a], &[("axes", ints_attr(&perm))])?)
}

fn axes_input_or_attr(ctx: &Ctx, n: &Node, since: i64, idx: usize) -> Result<Option<Vec<i64>>, ConvertError> {
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

fn unsqueeze(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let axes = axes_input_or_attr(ctx, n, 13, 1)?.ok_or("axes are required")?;
    let s = v.shape.clone().ok_or("input has unknown shape")?;
    let out_rank = s.len() + axes.len();
    let mut norm: Vec<usize> = axes.iter().map(|&a| norm_axis(a, out_rank)).collect::<Result<_, _>>()?;
    norm.sort_unstable();
    norm.dedup();
    if norm.len() != axes.len() {
        return Err("repeated axes".into());
    }
    let mut dims = Vec::with_capacity(out_rank);
    let mut src = s.iter();
    for i in 0..out_rank {
        if norm.contains(&i) {
            dims.push(PrimExpr::int(1));
        } else {
            dims.push(src.next().cloned().ok_or("bad axes")?);
        }
    }
    if v.known.is_some() {
        return reshape_to(ctx, n, v, dims);
    }
    let a = x(ctx, n, 0)?;
    let ax: Vec<i64> = norm.iter().map(|&a| a as i64).collect();
    out1(ctx.op("expand_dims", vec![a], &[("axis", ints_attr(&ax))])?)
}

fn squeeze(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let s = v.shape.clone().ok_or("input has unknown shape")?;
    let axes = axes_input_or_attr(ctx, n, 13, 1)?;
    let norm: Vec<usize> = match &axes {
        Some(a) => a.iter().map(|&a| norm_axis(a, s.len())).collect::<Result<_, _>>()?,
        None => s
            .iter()
            .enumerate()
            .filter(|(_, d)| d.as_int() == Some(1))
            .map(|(i, _)| i)
            .collect(),
    };
    let dims: Vec<PrimExpr> = s
        .iter()
        .enumerate()
        .filter(|(i, _)| !norm.contains(i))
        .map(|(_, d)| d.clone())
        .collect();
    if v.known.is_some() {
        return reshape_to(ctx, n, v, dims);
    }
    let a = x(ctx, n, 0)?;
    let ax: Vec<i64> = norm.iter().map(|&a| a as i64).collect();
    out1(ctx.op("squeeze", vec![a], &[("axis", ints_attr(&ax))])?)
}

fn concat(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let names: Vec<String> = n.inputs.iter().filter(|s| !s.is_empty()).cloned().collect();
    let vals: Vec<TVal> = names.iter().map(|s| ctx.value(s).cloned()).collect::<Result<_, _>>()?;
    let first = vals.first().ok_or("no inputs")?;
    let rank = first.rank().ok_or("input has unknown rank")?;
    let axis = norm_axis(n.int("axis", 0), rank)?;
    // fold 1-D known values (shapes)
    if rank == 1
        && vals
            .iter()
            .all(|v| matches!(v.known, Some(Known::Int(_))) && v.const_shape().is_some())
    {
        let mut all = Vec::new();
        for v in &vals {
            if let Some(Known::Int(k)) = &v.known {
                all.extend(k.iter().cloned());
            }
        }
        let len = all.len() as i64;
        return out1(TVal::known(first.dtype, vec![len], Known::Int(all)));
    }
    let mut args = Vec::new();
    for name in &names {
        // skip empty inputs (shape 0 along the axis)
        let v = ctx.value(name)?;
        if v.shape.as_ref().and_then(|s| s.get(axis)).and_then(PrimExpr::as_int) == Some(0) && names.len() > 1 {
            continue;
        }
        args.push(ctx.tensor(name)?);
    }
    out1(ctx.op(
        "concat",
        vec![Expr::tuple(args)],
        &[("axis", AttrValue::Int(axis as i64))],
    )?)
}

fn split(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let s = shape_of(ctx, n, 0)?;
    let axis = norm_axis(n.int("axis", 0), s.len())?;
    let nout = n.outputs.len();
    let sizes = if n.opset >= 13 {
        if n.has(1) {
            Some(const_ints(ctx, n, 1)?)
        } else {
            None
        }
    } else {
        n.ints("split")
    };
    // a known 1-D tensor (a shape) splits into known parts
    let v = val(ctx, n, 0)?;
    if let (Some(Known::Int(k)), 1, Some(d)) = (&v.known, s.len(), s[0].as_int()) {
        let parts = if n.opset >= 18 {
            n.int("num_outputs", nout as i64)
        } else {
            nout as i64
        };
        let lens: Vec<i64> = match &sizes {
            Some(sz) => sz.clone(),
            None if parts > 0 => {
                let chunk = (d + parts - 1) / parts;
                (0..parts).map(|i| (d - i * chunk).clamp(0, chunk)).collect()
            }
            None => vec![],
        };
        if lens.len() == nout && lens.iter().sum::<i64>() == d && lens.iter().all(|&l| l >= 0) {
            let mut start = 0usize;
            let mut outs = Vec::new();
            for &l in &lens {
                let part = k[start..start + l as usize].to_vec();
                start += l as usize;
                outs.push(TVal::known(v.dtype, vec![l], Known::Int(part)));
            }
            return Ok(outs);
        }
    }
    let a = x(ctx, n, 0)?;
    let ios = match sizes {
        Some(sz) => {
            if sz.len() != nout {
                return Err(convert_err!("split has {} sizes for {nout} outputs", sz.len()));
            }
            let mut idx = Vec::new();
            let mut acc = 0;
            for v in &sz[..sz.len() - 1] {
                acc += v;
                idx.push(acc);
            }
            ints_attr(&idx)
        }
        None => {
            let parts = if n.opset >= 18 {
                n.int("num_outputs", nout as i64)
            } else {
                nout as i64
            };
            if let Some(d) = s[axis].as_int() {
                if d % parts != 0 {
                    // uneven: the last part is smaller (opset 18)
                    let chunk = (d + parts - 1) / parts;
                    let idx: Vec<i64> = (1..parts).map(|i| (i * chunk).min(d)).collect();
                    ints_attr(&idx)
                } else {
                    AttrValue::Int(parts)
                }
            } else {
                AttrValue::Int(parts)
            }
        }
    };
    let t = ctx.op_tuple(
        "split",
        vec![a],
        &[("indices_or_sections", ios), ("axis", AttrValue::Int(axis as i64))],
    )?;
    let mut outs = Vec::new();
    for i in 0..nout {
        outs.push(ctx.item(&t, i)?);
    }
    Ok(outs)
}

/// `Slice`'s starts, ends, axes and steps.
type SliceSpec = (Vec<PrimExpr>, Vec<PrimExpr>, Option<Vec<i64>>, Option<Vec<i64>>);

fn slice(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let s = v.shape.clone().ok_or("input has unknown shape")?;
    let rank = s.len();
    let (starts, ends, axes, steps): SliceSpec = if n.opset < 10 {
        (
            n.ints("starts")
                .ok_or("no starts")?
                .into_iter()
                .map(PrimExpr::int)
                .collect(),
            n.ints("ends")
                .ok_or("no ends")?
                .into_iter()
                .map(PrimExpr::int)
                .collect(),
            n.ints("axes"),
            None,
        )
    } else {
        (
            known_ints(ctx, n, 1)?,
            known_ints(ctx, n, 2)?,
            if n.has(3) { Some(const_ints(ctx, n, 3)?) } else { None },
            if n.has(4) { Some(const_ints(ctx, n, 4)?) } else { None },
        )
    };
    if starts.len() != ends.len() {
        return Err("starts and ends differ in length".into());
    }
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if axes.len() != starts.len() || steps.len() != starts.len() {
        return Err("axes or steps differ in length from starts".into());
    }
    let mut ax = Vec::new();
    let mut b = Vec::new();
    let mut e = Vec::new();
    // normalized (begin, end, step) per axis, for folding
    let mut per_axis: Vec<(usize, PrimExpr, PrimExpr, i64)> = Vec::new();
    for i in 0..starts.len() {
        let a = norm_axis(axes[i], rank)?;
        let st = steps[i];
        if st == 0 {
            return Err("step 0".into());
        }
        let dim = &s[a];
        let norm = |p: &PrimExpr, is_end: bool| -> PrimExpr {
            match p.as_int() {
                Some(c) if c >= i64::MAX / 2 => {
                    if st > 0 {
                        dim.clone()
                    } else {
                        ctx.bin(BinOp::Sub, dim, &PrimExpr::int(1))
                    }
                }
                Some(c) if c <= i64::MIN / 2 => {
                    if st > 0 {
                        PrimExpr::int(0)
                    } else {
                        PrimExpr::int(-1)
                    }
                }
                Some(c) if c < 0 && st > 0 => {
                    let r = ctx.bin(BinOp::Add, dim, &PrimExpr::int(c));
                    ctx.bin(BinOp::Max, &r, &PrimExpr::int(0))
                }
                Some(c) if st > 0 => match dim.as_int() {
                    Some(d) => PrimExpr::int(c.min(d)),
                    None => {
                        let _ = is_end;
                        ctx.bin(BinOp::Min, &PrimExpr::int(c), dim)
                    }
                },
                _ => p.clone(),
            }
        };
        let (bb, ee) = (norm(&starts[i], false), norm(&ends[i], true));
        ax.push(a);
        b.push(bb.clone());
        e.push(ee.clone());
        per_axis.push((a, bb, ee, st));
    }
    // fold 1-D known values
    if let (Some(Known::Int(k)), Some(cs)) = (&v.known, v.const_shape()) {
        if cs.len() == 1 && per_axis.len() == 1 {
            let (_, bb, ee, st) = &per_axis[0];
            if let (Some(bi), Some(ei)) = (bb.as_int(), ee.as_int()) {
                let d = cs[0];
                let mut out = Vec::new();
                let mut i = bi;
                if *st > 0 {
                    let (lo, hi) = (bi.clamp(0, d), ei.clamp(0, d));
                    i = lo;
                    while i < hi {
                        out.push(k[i as usize].clone());
                        i += st;
                    }
                } else {
                    let (hi, lo) = (bi.clamp(-1, d - 1), ei.clamp(-1, d - 1));
                    i = i.min(hi);
                    while i > lo {
                        out.push(k[i as usize].clone());
                        i += st;
                    }
                }
                let len = out.len() as i64;
                return out1(TVal::known(v.dtype, vec![len], Known::Int(out)));
            }
        }
    }
    let a = x(ctx, n, 0)?;
    let tuple = |v: Vec<Expr>| Expr::tuple(v);
    out1(ctx.op(
        "strided_slice",
        vec![
            a,
            tuple(ax.iter().map(|&i| prim_int(PrimExpr::int(i as i64))).collect()),
            tuple(b.into_iter().map(prim_int).collect()),
            tuple(e.into_iter().map(prim_int).collect()),
            tuple(steps.iter().map(|&i| prim_int(PrimExpr::int(i))).collect()),
        ],
        &[],
    )?)
}

fn gather(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let data = val(ctx, n, 0)?;
    let idx = val(ctx, n, 1)?;
    let s = data.shape.clone().ok_or("data has unknown shape")?;
    let axis = norm_axis(n.int("axis", 0), s.len())?;
    let dim = s[axis].as_int();
    // fold: gather from a known 1-D value with constant indices
    if let (Some(Known::Int(k)), Some(ci), Some(ishape)) = (&data.known, idx.const_ints(), idx.const_shape()) {
        if s.len() == 1 {
            let d = k.len() as i64;
            let picked: Option<Vec<PrimExpr>> = ci
                .iter()
                .map(|&i| {
                    let j = if i < 0 { i + d } else { i };
                    (0..d).contains(&j).then(|| k[j as usize].clone())
                })
                .collect();
            if let Some(p) = picked {
                return out1(TVal::known(data.dtype, ishape, Known::Int(p)));
            }
        }
    }
    let a = x(ctx, n, 0)?;
    // constant negative indices are normalized here
    let ie = match (idx.const_ints(), dim, idx.const_shape()) {
        (Some(ci), Some(d), Some(ishape)) if ci.iter().any(|&i| i < 0) => {
            let fixed: Vec<Vec<u8>> = ci
                .iter()
                .map(|&i| tensor::encode_int(DataType::INT64, if i < 0 { i + d } else { i }))
                .collect();
            crate::convert::constant(DataType::INT64, ishape, fixed.into_iter())
        }
        (None, Some(d), _) => {
            let i = x(ctx, n, 1)?;
            wrap_negative(ctx, i, idx.dtype, d)?
        }
        _ => x(ctx, n, 1)?,
    };
    out1(ctx.op("take", vec![a, ie], &[("axis", AttrValue::Int(axis as i64))])?)
}

/// `where(i < 0, i + dim, i)`: ONNX's negative indices count from the end.
fn wrap_negative(ctx: &mut Ctx, i: Expr, dtype: DataType, dim: i64) -> Result<Expr, ConvertError> {
    if dtype.is_uint() {
        return Ok(i);
    }
    let c = emit2(ctx, "less", i.clone(), scalar(dtype, 0.0))?;
    let cl = leaf(ctx, &c)?;
    let s = emit2(ctx, "add", i.clone(), scalar(dtype, dim as f64))?;
    let sl = leaf(ctx, &s)?;
    let w = ctx.op("where", vec![cl, sl, i], &[])?;
    leaf(ctx, &w)
}

fn gather_elements(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let shape = shape_of(ctx, n, 0)?;
    let axis = norm_axis(n.int("axis", 0), shape.len())?;
    let a = x(ctx, n, 0)?;
    let i = x(ctx, n, 1)?;
    let it = val(ctx, n, 1)?;
    let i = match (it.const_ints(), shape[axis].as_int()) {
        (None, Some(d)) => wrap_negative(ctx, i, it.dtype, d)?,
        _ => i,
    };
    out1(ctx.op("gather_elements", vec![a, i], &[("axis", AttrValue::Int(axis as i64))])?)
}

fn gather_nd(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let (a, i) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    out1(ctx.op(
        "gather_nd",
        vec![a, i],
        &[("batch_dims", AttrValue::Int(n.int("batch_dims", 0)))],
    )?)
}

fn reduction_attr(n: &Node) -> Result<AttrValue, ConvertError> {
    Ok(AttrValue::Str(match n.string("reduction").as_deref() {
        None | Some("none") => "update".into(),
        Some("add") => "add".into(),
        Some("mul") => "mul".into(),
        Some("max") => "max".into(),
        Some("min") => "min".into(),
        Some(o) => return Err(convert_err!(Unsupported;"reduction `{o}` is not supported")),
    }))
}

fn scatter_elements(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let axis = norm_axis(n.int("axis", 0), rank)?;
    let (a, i, u) = (x(ctx, n, 0)?, x(ctx, n, 1)?, x(ctx, n, 2)?);
    out1(ctx.op(
        "scatter_elements",
        vec![a, i, u],
        &[("axis", AttrValue::Int(axis as i64)), ("reduction", reduction_attr(n)?)],
    )?)
}

fn scatter_nd(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let (a, i, u) = (x(ctx, n, 0)?, x(ctx, n, 1)?, x(ctx, n, 2)?);
    out1(ctx.op("scatter_nd", vec![a, i, u], &[("reduction", reduction_attr(n)?)])?)
}

fn expand(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let s = v.shape.clone().ok_or("input has unknown shape")?;
    let target = known_ints(ctx, n, 1)?;
    let r = s.len().max(target.len());
    let mut dims = Vec::with_capacity(r);
    for i in 0..r {
        let di = (i + s.len()).checked_sub(r).map(|j| s[j].clone());
        let dt = (i + target.len()).checked_sub(r).map(|j| target[j].clone());
        dims.push(match (di, dt) {
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (Some(a), Some(b)) => {
                if b.as_int() == Some(1) {
                    a
                } else if a.as_int() == Some(1) {
                    b
                } else if ctx.ana.can_prove_equal(&a, &b) {
                    a
                } else {
                    // -1 or a symbolic target: keep the input's dimension
                    if b.as_int().is_some_and(|x| x < 0) {
                        a
                    } else {
                        b
                    }
                }
            }
            (None, None) => unreachable_dim()?,
        });
    }
    if v.shape
        .as_ref()
        .is_some_and(|s| s.len() == dims.len() && s.iter().zip(&dims).all(|(a, b)| ctx.ana.can_prove_equal(a, b)))
    {
        return out1(v);
    }
    // fold known values broadcast to constant shapes
    if let (Some(Known::Int(k)), Some(cs)) = (&v.known, v.const_shape()) {
        if let Some(cd) = dims.iter().map(PrimExpr::as_int).collect::<Option<Vec<i64>>>() {
            let numel = const_product(&cd);
            if (0..=4096).contains(&numel) {
                let vals = (0..numel as usize)
                    .map(|j| k[bcast_index(j, &cd, &cs)].clone())
                    .collect();
                return out1(TVal::known(v.dtype, cd, Known::Int(vals)));
            }
        }
    }
    let a = x(ctx, n, 0)?;
    out1(ctx.op("broadcast_to", vec![a, Expr::shape(dims)], &[])?)
}

fn unreachable_dim() -> Result<PrimExpr, ConvertError> {
    Err(ConvertError::internal("internal: broadcast dimension"))
}

fn tile(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let reps = const_ints(ctx, n, 1)?;
    let a = x(ctx, n, 0)?;
    out1(ctx.op("tile", vec![a], &[("repeats", ints_attr(&reps))])?)
}

fn range(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let scalar_of = |ctx: &Ctx, i: usize| -> Result<PrimExpr, ConvertError> {
        let v = val(ctx, n, i)?;
        match &v.known {
            Some(Known::Int(k)) if k.len() == 1 => Ok(k[0].clone()),
            // integral float bounds count in integers, so the length stays exact
            Some(Known::Float(k)) if k.len() == 1 && k[0].fract() == 0.0 && k[0].abs() < 1e15 => {
                Ok(PrimExpr::int(k[0] as i64))
            }
            Some(Known::Float(k)) if k.len() == 1 => Ok(PrimExpr::float_of(k[0], DataType::FLOAT64)),
            _ => Err(must_be_known(n, i)),
        }
    };
    let (start, limit, delta) = (scalar_of(ctx, 0)?, scalar_of(ctx, 1)?, scalar_of(ctx, 2)?);
    if let (Some(s), Some(l), Some(d)) = (start.as_int(), limit.as_int(), delta.as_int()) {
        if d != 0 {
            let count = ((l - s) as f64 / d as f64).ceil().max(0.0) as i64;
            if count <= 4096 {
                let vals = (0..count).map(|i| PrimExpr::int(s + i * d)).collect();
                return out1(TVal::known(dt, vec![count], Known::Int(vals)));
            }
        }
    }
    let p = |e: PrimExpr| {
        if e.dtype().is_int() {
            prim_int(e)
        } else {
            Expr::new(ExprKind::PrimValue(e))
        }
    };
    out1(ctx.op(
        "arange",
        vec![p(start), p(limit), p(delta)],
        &[("dtype", AttrValue::DataType(dt))],
    )?)
}

fn pad(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let rank = v.rank().ok_or("input has unknown rank")?;
    let (pads, value) = if n.opset < 11 {
        (n.ints("pads").ok_or("no pads")?, n.float("value", 0.0))
    } else {
        let pads = const_ints(ctx, n, 1)?;
        let value = if n.has(2) {
            val(ctx, n, 2)?
                .const_floats()
                .and_then(|v| v.first().copied())
                .ok_or_else(|| must_be_known(n, 2))?
        } else {
            0.0
        };
        (pads, value)
    };
    let axes: Vec<usize> = if n.opset >= 18 && n.has(3) {
        const_ints(ctx, n, 3)?
            .iter()
            .map(|&a| norm_axis(a, rank))
            .collect::<Result<_, _>>()?
    } else {
        (0..rank).collect()
    };
    if pads.len() != 2 * axes.len() {
        return Err("pads do not match the axes".into());
    }
    let mut width = vec![0i64; 2 * rank];
    for (i, &a) in axes.iter().enumerate() {
        width[2 * a] = pads[i];
        width[2 * a + 1] = pads[i + axes.len()];
    }
    let mode = match n.string("mode").as_deref() {
        None | Some("constant") => "constant",
        Some("reflect") => "reflect",
        Some(m @ ("edge" | "wrap")) => {
            let shape = v.const_shape().ok_or("edge and wrap padding need a static shape")?;
            let a = x(ctx, n, 0)?;
            return out1(crate::extra::pad_by_slices(ctx, a, &shape, &width, m == "wrap")?);
        }
        Some(o) => return Err(convert_err!(Unsupported;"mode `{o}` is not supported")),
    };
    let a = x(ctx, n, 0)?;
    out1(ctx.op(
        "nn.pad",
        vec![a],
        &[
            ("pad_width", ints_attr(&width)),
            ("pad_value", AttrValue::Float(value)),
            ("pad_mode", AttrValue::Str(mode.into())),
        ],
    )?)
}

fn trilu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let k = if n.has(1) {
        known_ints(ctx, n, 1)?.first().cloned().ok_or("k must hold one value")?
    } else {
        PrimExpr::int(0)
    };
    let a = x(ctx, n, 0)?;
    let op = if n.int("upper", 1) != 0 { "triu" } else { "tril" };
    out1(ctx.op(op, vec![a, prim_int(k)], &[])?)
}

fn cumsum(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let axis = norm_axis(*const_ints(ctx, n, 1)?.first().ok_or("axis must hold one value")?, rank)?;
    let mut a = x(ctx, n, 0)?;
    let reverse = n.int("reverse", 0) != 0;
    if reverse {
        let f = ctx.op("flip", vec![a], &[("axis", AttrValue::Int(axis as i64))])?;
        a = leaf(ctx, &f)?;
    }
    let op = if n.op_type == "CumProd" { "cumprod" } else { "cumsum" };
    let mut y = ctx.op(
        op,
        vec![a],
        &[
            ("axis", AttrValue::Int(axis as i64)),
            ("exclusive", AttrValue::Bool(n.int("exclusive", 0) != 0)),
        ],
    )?;
    if reverse {
        let l = leaf(ctx, &y)?;
        y = ctx.op("flip", vec![l], &[("axis", AttrValue::Int(axis as i64))])?;
    }
    out1(y)
}

// ---------------------------------------------------------------------------
// reductions

fn reduce(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    // axes became an input in opset 13 for ReduceSum and in opset 18 for the others
    let since = if n.op_type == "ReduceSum" { 13 } else { 18 };
    let axes = axes_input_or_attr(ctx, n, since, 1)?;
    let keepdims = n.int("keepdims", 1) != 0;
    let axes: Option<Vec<i64>> = match axes {
        Some(a) if !a.is_empty() => Some(
            a.iter()
                .map(|&x| norm_axis(x, rank).map(|v| v as i64))
                .collect::<Result<_, _>>()?,
        ),
        _ if n.int("noop_with_empty_axes", 0) != 0 => return out1(val(ctx, n, 0)?),
        _ => None,
    };
    let ax = axes.map(|a| ints_attr(&a)).unwrap_or(AttrValue::None);
    let attrs = [("axis", ax), ("keepdims", AttrValue::Bool(keepdims))];
    let mut a = x(ctx, n, 0)?;
    let simple = match n.op_type.as_str() {
        "ReduceMean" => Some("mean"),
        "ReduceSum" => Some("sum"),
        "ReduceMax" => Some("max"),
        "ReduceMin" => Some("min"),
        "ReduceProd" => Some("prod"),
        _ => None,
    };
    if let Some(op) = simple {
        return out1(ctx.op(op, vec![a], &attrs)?);
    }
    match n.op_type.as_str() {
        "ReduceL1" => {
            let t = ctx.op("abs", vec![a], &[])?;
            a = leaf(ctx, &t)?;
            out1(ctx.op("sum", vec![a], &attrs)?)
        }
        "ReduceLogSum" => {
            let s = ctx.op("sum", vec![a], &attrs)?;
            let l = leaf(ctx, &s)?;
            out1(ctx.op("log", vec![l], &[])?)
        }
        "ReduceL2" | "ReduceSumSquare" => {
            let t = emit2(ctx, "multiply", a.clone(), a)?;
            let l = leaf(ctx, &t)?;
            let s = ctx.op("sum", vec![l], &attrs)?;
            if n.op_type == "ReduceL2" {
                let l = leaf(ctx, &s)?;
                out1(ctx.op("sqrt", vec![l], &[])?)
            } else {
                out1(s)
            }
        }
        "ReduceLogSumExp" => {
            // log(sum(exp(x - max))) + max
            let m = ctx.op(
                "max",
                vec![a.clone()],
                &[attrs[0].clone(), ("keepdims", AttrValue::Bool(true))],
            )?;
            let ml = leaf(ctx, &m)?;
            let d = emit2(ctx, "subtract", a, ml.clone())?;
            let dl = leaf(ctx, &d)?;
            let e = ctx.op("exp", vec![dl], &[])?;
            let el = leaf(ctx, &e)?;
            let s = ctx.op("sum", vec![el], &attrs)?;
            let sl = leaf(ctx, &s)?;
            let lg = ctx.op("log", vec![sl], &[])?;
            let lgl = leaf(ctx, &lg)?;
            let mk = if keepdims {
                ml
            } else {
                let sq = ctx.op("squeeze", vec![ml], &[("axis", attrs[0].1.clone())])?;
                leaf(ctx, &sq)?
            };
            out1(emit2(ctx, "add", lgl, mk)?)
        }
        o => Err(convert_err!(Internal;"internal: {o} is not a reduction")),
    }
}

fn arg_reduce(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let shape = shape_of(ctx, n, 0)?;
    let axis = norm_axis(n.int("axis", 0), shape.len())?;
    let mut a = x(ctx, n, 0)?;
    let last = n.int("select_last_index", 0) != 0;
    if last {
        // the last extreme is the first one of the flipped axis: index = dim - 1 - i
        let f = ctx.op("flip", vec![a], &[("axis", AttrValue::Int(axis as i64))])?;
        a = leaf(ctx, &f)?;
    }
    let op = if n.op_type == "ArgMax" { "argmax" } else { "argmin" };
    let r = ctx.op(
        op,
        vec![a],
        &[
            ("axis", AttrValue::Int(axis as i64)),
            ("keepdims", AttrValue::Bool(n.int("keepdims", 1) != 0)),
        ],
    )?;
    if !last {
        return out1(r);
    }
    let dim = shape[axis]
        .as_int()
        .ok_or("select_last_index needs a static axis length")?;
    let l = leaf(ctx, &r)?;
    let d = emit2(ctx, "subtract", scalar(r.dtype, (dim - 1) as f64), l)?;
    out1(d)
}

fn bit_shift(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let op = match n.string("direction").as_deref() {
        Some("LEFT") => "left_shift",
        Some("RIGHT") => "right_shift",
        o => return Err(convert_err!(Unsupported;"direction {o:?} is not supported")),
    };
    let (a, b) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    out1(emit2(ctx, op, a, b)?)
}

fn nll_loss(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    if n.attr("ignore_index").is_some() {
        // TVM's kernel reads the ignored target's class before selecting 0
        let dt = val(ctx, n, 0)?.dtype;
        let l = x(ctx, n, 0)?;
        return out1(crate::extra::nll(ctx, n, l, dt)?);
    }
    let reduction = n.string("reduction").unwrap_or_else(|| "mean".into());
    if !matches!(reduction.as_str(), "mean" | "sum" | "none") {
        return Err(convert_err!(Unsupported;"reduction `{reduction}` is not supported"));
    }
    let mut args = vec![x(ctx, n, 0)?, x(ctx, n, 1)?];
    if n.has(2) {
        args.push(x(ctx, n, 2)?);
    }
    out1(ctx.op(
        "nn.nll_loss",
        args,
        &[
            ("reduction", AttrValue::Str(reduction)),
            ("ignore_index", AttrValue::Int(n.int("ignore_index", -100))),
        ],
    )?)
}
