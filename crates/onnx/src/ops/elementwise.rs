//! Elementwise converters: activations, casts, arithmetic and comparisons.

use super::*;

pub(crate) fn unary(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

pub(crate) fn is_inf(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

pub(crate) fn reciprocal(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    out1(emit2(ctx, "divide", scalar(dt, 1.0), a)?)
}

pub(crate) fn softplus(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = x(ctx, n, 0)?;
    out1(ctx.op("nn.softplus", vec![a], &[])?)
}

pub(crate) fn softsign(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    let abs = ctx.op("abs", vec![a.clone()], &[])?;
    let l = leaf(ctx, &abs)?;
    let d = emit2(ctx, "add", l, scalar(dt, 1.0))?;
    let l = leaf(ctx, &d)?;
    out1(emit2(ctx, "divide", a, l)?)
}

pub(crate) fn leaky_relu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = x(ctx, n, 0)?;
    out1(ctx.op(
        "nn.leakyrelu",
        vec![a],
        &[("alpha", AttrValue::Float(n.float("alpha", 0.01)))],
    )?)
}

/// `where(x > 0, pos(x), neg(x))` with `neg = scale * (exp(x) - 1) * alpha`-like forms.
pub(crate) fn elu_like(ctx: &mut Ctx, n: &Node, alpha: f64, gamma: f64, theta: f64) -> Result<Vec<TVal>, ConvertError> {
    let dt0 = val(ctx, n, 0)?.dtype;
    // float16 and bfloat16 are computed in float32 and rounded once at the end, as
    // ONNX's reference does (rounding each step differs by an ulp or two)
    let narrow = dt0.bits == 16 && matches!(dt0.code, relax_ir::TypeCode::Float | relax_ir::TypeCode::BFloat);
    let dt = if narrow { DataType::FLOAT32 } else { dt0 };
    let a = x(ctx, n, 0)?;
    let a = astype(ctx, a, dt0, dt)?;
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
    if !narrow {
        return out1(ctx.op("where", vec![c, pos, neg], &[])?);
    }
    let y = emit(ctx, "where", vec![c, pos, neg], &[])?;
    out1(ctx.op("astype", vec![y], &[("dtype", AttrValue::DataType(dt0))])?)
}

pub(crate) fn elu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    elu_like(ctx, n, n.float("alpha", 1.0), 1.0, 1.0)
}

pub(crate) fn selu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    elu_like(
        ctx,
        n,
        n.float("alpha", 1.673_263_192_176_818_8),
        n.float("gamma", 1.050_701_022_148_132_3),
        1.0,
    )
}

pub(crate) fn celu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let alpha = n.float("alpha", 1.0);
    elu_like(ctx, n, alpha, 1.0, alpha)
}

pub(crate) fn hard_sigmoid_expr(
    ctx: &mut Ctx,
    a: Expr,
    dt: DataType,
    alpha: f64,
    beta: f64,
) -> Result<Expr, ConvertError> {
    let m = emit2(ctx, "multiply", a, scalar(dt, alpha))?;
    let m = leaf(ctx, &m)?;
    let s = emit2(ctx, "add", m, scalar(dt, beta))?;
    let s = leaf(ctx, &s)?;
    let lo = emit2(ctx, "maximum", s, scalar(dt, 0.0))?;
    let lo = leaf(ctx, &lo)?;
    let hi = emit2(ctx, "minimum", lo, scalar(dt, 1.0))?;
    leaf(ctx, &hi)
}

pub(crate) fn hard_sigmoid(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    let e = hard_sigmoid_expr(ctx, a, dt, n.float("alpha", 0.2), n.float("beta", 0.5))?;
    out1(tval_leaf(ctx, e)?)
}

pub(crate) fn hard_swish(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    let e = hard_sigmoid_expr(ctx, a.clone(), dt, 1.0 / 6.0, 0.5)?;
    out1(emit2(ctx, "multiply", a, e)?)
}

pub(crate) fn prelu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    let slope = x(ctx, n, 1)?;
    let m = emit2(ctx, "multiply", a.clone(), slope)?;
    let m = leaf(ctx, &m)?;
    let c = emit2(ctx, "less", a.clone(), scalar(dt, 0.0))?;
    let c = leaf(ctx, &c)?;
    out1(ctx.op("where", vec![c, m, a], &[])?)
}

pub(crate) fn gelu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = x(ctx, n, 0)?;
    let op = match n.string("approximate").as_deref() {
        None | Some("none") => "nn.gelu",
        Some("tanh") => "nn.gelu_tanh",
        Some(o) => return Err(convert_err!(Unsupported;"approximate=`{o}` is not supported")),
    };
    out1(ctx.op(op, vec![a], &[])?)
}

pub(crate) fn mish(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = x(ctx, n, 0)?;
    let sp = ctx.op("nn.softplus", vec![a.clone()], &[])?;
    let sp = leaf(ctx, &sp)?;
    let t = ctx.op("tanh", vec![sp], &[])?;
    let t = leaf(ctx, &t)?;
    out1(emit2(ctx, "multiply", a, t)?)
}

pub(crate) fn thresholded_relu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    let c = emit2(ctx, "greater", a.clone(), scalar(dt, n.float("alpha", 1.0)))?;
    let c = leaf(ctx, &c)?;
    out1(ctx.op("where", vec![c, a, scalar(dt, 0.0)], &[])?)
}

pub(crate) fn identity(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

pub(crate) fn clip(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

pub(crate) fn onnx_dtype(to: i64) -> Result<DataType, ConvertError> {
    let t = i32::try_from(to).map_err(|_| convert_err!("bad element type {to}"))?;
    tensor::dtype_of(t)
        .ok_or_else(|| convert_err!(Unsupported;"cast to {} is not supported", tensor::onnx_type_name(t)))
}

/// Whether `dt` is one of the low-precision types (a float narrower than 16 bits or an
/// integer narrower than 8), whose casts the importer spells out.
pub(crate) fn low_precision(dt: DataType) -> bool {
    dt.mini_float().is_some() || dt.is_sub_byte_int()
}

/// `e` (of dtype `from`) as `to`, one of the [`low_precision`] types, with ONNX's
/// rules: a float8 target with `saturate` clips to its largest finite value first
/// (NaN kept: `where(isnan(x), x, clip(x))`), without it values past the range become
/// infinity or NaN as the format has them (the plain `astype`, rounding to nearest
/// even); `float4e2m1` always saturates (its `astype` does); an integer target
/// takes the value truncated to `int32` and wrapped to its bits (`-9.0 -> int4` is
/// `7`, as ONNX's reference).
pub(crate) fn low_precision_cast(
    ctx: &mut Ctx,
    e: Expr,
    from: DataType,
    to: DataType,
    saturate: bool,
) -> Result<TVal, ConvertError> {
    let dtype = [("dtype", AttrValue::DataType(to))];
    if to
        .mini_float()
        .is_some_and(|f| f.specials == relax_ir::MiniSpecials::E8M0)
    {
        // ONNX rounds on the exponent bits (`round_mode`, `0 -> 2^-127`); `astype`
        // rounds to the nearest power of two and makes 0 NaN, as ml_dtypes.
        return Err(
            convert_err!(Unsupported;"conversion to FLOAT8E8M0 is not supported (ONNX's round_mode differs from the nearest power of two)"),
        );
    }
    if let Some(f) = to.mini_float() {
        let (mut e, mut dt) = (e, from);
        if !dt.is_float() {
            e = astype(ctx, e, dt, DataType::FLOAT32)?;
            dt = DataType::FLOAT32;
        }
        let float8 = to.bits == 8 && f.specials != relax_ir::MiniSpecials::E8M0;
        if saturate && float8 {
            let m = f.max();
            let lo = emit(ctx, "maximum", vec![e.clone(), scalar(dt, -m)], &[])?;
            let c = emit(ctx, "minimum", vec![lo, scalar(dt, m)], &[])?;
            let nan = emit(ctx, "isnan", vec![e.clone()], &[])?;
            e = emit(ctx, "where", vec![nan, e, c], &[])?;
        }
        return ctx.op("astype", vec![e], &dtype);
    }
    let e = if from.is_float() {
        astype(ctx, e, from, DataType::INT32)?
    } else {
        e
    };
    ctx.op("astype", vec![e], &dtype)
}

pub(crate) fn cast_to(ctx: &mut Ctx, n: &Node, to: DataType) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    if low_precision(to) && v.dtype != to {
        let a = x(ctx, n, 0)?;
        let from = v.dtype;
        return out1(low_precision_cast(ctx, a, from, to, n.int("saturate", 1) != 0)?);
    }
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

pub(crate) fn cast(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let to = onnx_dtype(n.int("to", 0))?;
    cast_to(ctx, n, to)
}

pub(crate) fn cast_like(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let to = val(ctx, n, 1)?.dtype;
    cast_to(ctx, n, to)
}

/// Fold a binary operator over known integer values.
pub(crate) fn fold_binary(ctx: &Ctx, op: &str, a: &TVal, b: &TVal) -> Option<TVal> {
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
pub(crate) fn fold_binary_float(op: &str, a: &TVal, b: &TVal) -> Option<TVal> {
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

pub(crate) fn binary_op_name(op_type: &str, fmod: i64, dtype: DataType) -> Result<&'static str, ConvertError> {
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
pub(crate) fn binary_vals(
    ctx: &mut Ctx,
    n: &Node,
    op_type: &str,
    a: (&str, TVal),
    b: (&str, TVal),
) -> Result<TVal, ConvertError> {
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
    if op == "floor_mod" && a.1.dtype.is_float() {
        return float_floor_mod(ctx, ea, eb, a.1.dtype);
    }
    ctx.op(op, vec![ea, eb], &[])
}

pub(crate) fn binary(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let (a, b) = (val(ctx, n, 0)?, val(ctx, n, 1)?);
    let r = binary_vals(ctx, n, &n.op_type, (n.input(0)?, a), (n.input(1)?, b))?;
    out1(r)
}

pub(crate) fn variadic(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

pub(crate) fn where_op(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
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

pub(crate) fn bit_shift(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let op = match n.string("direction").as_deref() {
        Some("LEFT") => "left_shift",
        Some("RIGHT") => "right_shift",
        o => return Err(convert_err!(Unsupported;"direction {o:?} is not supported")),
    };
    let (a, b) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    out1(emit2(ctx, op, a, b)?)
}

/// `sigmoid(alpha * a)` of input 0 (`a`), `alpha` the node's attribute (1 by default).
fn sigmoid_scaled(ctx: &mut Ctx, n: &Node, a: &Expr) -> Result<Expr, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let alpha = n.float("alpha", 1.0);
    let s = if alpha == 1.0 {
        a.clone()
    } else {
        emit(ctx, "multiply", vec![a.clone(), scalar(dt, alpha)], &[])?
    };
    emit(ctx, "sigmoid", vec![s], &[])
}

/// `Swish`: `x * sigmoid(alpha * x)`.
pub(crate) fn swish(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = x(ctx, n, 0)?;
    let s = sigmoid_scaled(ctx, n, &a)?;
    out1(ctx.op("multiply", vec![a, s], &[])?)
}

/// `Shrink`: `x + bias` below `-lambd`, `x - bias` above `lambd`, else 0.
pub(crate) fn shrink(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let (lambd, bias) = (n.float("lambd", 0.5), n.float("bias", 0.0));
    let a = x(ctx, n, 0)?;
    let lo = emit(ctx, "less", vec![a.clone(), scalar(dt, -lambd)], &[])?;
    let hi = emit(ctx, "greater", vec![a.clone(), scalar(dt, lambd)], &[])?;
    let plus = emit(ctx, "add", vec![a.clone(), scalar(dt, bias)], &[])?;
    let minus = emit(ctx, "subtract", vec![a, scalar(dt, bias)], &[])?;
    let inner = emit(ctx, "where", vec![hi, minus, scalar(dt, 0.0)], &[])?;
    out1(ctx.op("where", vec![lo, plus, inner], &[])?)
}

/// `SwiGLU`: `a * sigmoid(alpha * a) * b`.
pub(crate) fn swiglu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let (a, b) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    let s = sigmoid_scaled(ctx, n, &a)?;
    let sw = emit(ctx, "multiply", vec![a, s], &[])?;
    out1(ctx.op("multiply", vec![sw, b], &[])?)
}

/// `Binarizer` (domain `ai.onnx.ml`): 1 where the input exceeds `threshold`, else 0.
pub(crate) fn binarizer(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let a = x(ctx, n, 0)?;
    let c = emit(ctx, "greater", vec![a, scalar(dt, n.float("threshold", 0.0))], &[])?;
    out1(ctx.op("where", vec![c, scalar(dt, 1.0), scalar(dt, 0.0)], &[])?)
}

/// Float `Mod` with `fmod = 0` (the divisor's sign, as NumPy's `mod`): the truncated
/// remainder `r = fmod(a, b)`, plus `b` where `r` is nonzero and its sign differs from
/// `b`'s (so that `-3 mod inf` is `inf`, where `a - floor(a / b) * b` is NaN).
fn float_floor_mod(ctx: &mut Ctx, a: Expr, b: Expr, dt: DataType) -> Result<TVal, ConvertError> {
    let r = emit(ctx, "mod", vec![a, b.clone()], &[])?;
    let nz = emit(ctx, "not_equal", vec![r.clone(), scalar(dt, 0.0)], &[])?;
    let rn = emit(ctx, "less", vec![r.clone(), scalar(dt, 0.0)], &[])?;
    let bn = emit(ctx, "less", vec![b.clone(), scalar(dt, 0.0)], &[])?;
    let differ = emit(ctx, "not_equal", vec![rn, bn], &[])?;
    let fix = emit(ctx, "logical_and", vec![nz, differ], &[])?;
    let shifted = emit(ctx, "add", vec![r.clone(), b], &[])?;
    ctx.op("where", vec![fix, shifted, r], &[])
}
