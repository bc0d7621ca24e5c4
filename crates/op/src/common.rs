//! Helpers shared by the operator families: argument access, attribute access,
//! result construction, broadcasting, dtype rules, axis normalization, VDevice
//! merging and constant-folding `PrimExpr` arithmetic.

use crate::error::{infer_err, InferError, InferErrorKind};
use relax_ir::arith::Analyzer;
use relax_ir::tir::{expr_equal, BinOp};
use relax_ir::{
    AttrValue, Call, DataType, Expr, ExprKind, PrimExpr, PrimExprKind, StructInfo, TensorStructInfo, VDevice,
};

/// The result of an inference function.
pub(crate) type Res = Result<StructInfo, InferError>;

/// The operator's full name (`relax.add`), for messages.
pub(crate) fn op_name(call: &Call) -> &str {
    call.op.as_op().unwrap_or("<op>")
}

/// The kind of a StructInfo as TVM names it in messages.
pub(crate) fn kind_name(s: &StructInfo) -> &'static str {
    match s {
        StructInfo::Object => "relax.ObjectType",
        StructInfo::Prim(_) => "relax.PrimType",
        StructInfo::Shape(_) => "relax.ShapeType",
        StructInfo::Tensor(_) => "relax.TensorType",
        StructInfo::Tuple(_) => "relax.TupleType",
        StructInfo::Func(_) => "relax.FuncType",
    }
}

/// Checks the number of arguments.
pub(crate) fn check_nargs(call: &Call, args: &[StructInfo], n: usize) -> Result<(), InferError> {
    if args.len() != n || call.args.len() != n {
        return Err(infer_err!(Arity;
            "Operator {} expects {} arguments, but was called with {} arguments",
            op_name(call),
            n,
            args.len()
        ));
    }
    Ok(())
}

/// An arity check whose error is TVM's `"{expects}, but got {n} arguments"`.
pub(crate) fn nargs_is(args: &[StructInfo], n: usize, expects: &str) -> Result<(), InferError> {
    if args.len() == n {
        Ok(())
    } else {
        Err(infer_err!(Arity; "{expects}, but got {} arguments", args.len()))
    }
}

/// `s` as a tensor, else the error `msg` writes from the kind it has instead.
pub(crate) fn tensor_or(s: &StructInfo, msg: impl FnOnce(&str) -> String) -> Result<&TensorStructInfo, InferError> {
    match s {
        StructInfo::Tensor(t) => Ok(t),
        o => Err(InferError::new(InferErrorKind::ArgKind, msg(kind_name(o)))),
    }
}

/// Argument `i` as a tensor (the arity must have been checked).
pub(crate) fn tensor_arg<'a>(
    call: &Call,
    args: &'a [StructInfo],
    i: usize,
) -> Result<&'a TensorStructInfo, InferError> {
    match args.get(i) {
        Some(StructInfo::Tensor(t)) => Ok(t),
        Some(other) => Err(infer_err!(ArgKind;
            "Operator {} requires argument {} to be a tensor.  However, the argument is instead of type {}",
            op_name(call),
            i,
            kind_name(other)
        )),
        None => Err(infer_err!(Arity; "Operator {} is missing argument {}", op_name(call), i)),
    }
}

/// Checks the arity and that every argument is a tensor.
pub(crate) fn tensor_args<'a>(
    call: &Call,
    args: &'a [StructInfo],
    n: usize,
) -> Result<Vec<&'a TensorStructInfo>, InferError> {
    check_nargs(call, args, n)?;
    (0..n).map(|i| tensor_arg(call, args, i)).collect()
}

/// The value of argument `i` when it is a `PrimValue` or its StructInfo knows it
/// (`topk`'s `k`, `slice_scatter`'s bounds).
pub(crate) fn prim_of(call: &Call, args: &[StructInfo], i: usize) -> Option<PrimExpr> {
    if let Some(ExprKind::PrimValue(v)) = call.args.get(i).map(|e| e.kind()) {
        return Some(v.clone());
    }
    match args.get(i) {
        Some(StructInfo::Prim(p)) => p.value.clone(),
        _ => None,
    }
}

/// The single tensor input of a unary operator.
pub(crate) fn unary_tensor<'a>(call: &Call, args: &'a [StructInfo]) -> Result<&'a TensorStructInfo, InferError> {
    Ok(tensor_args(call, args, 1)?[0])
}

/// The tensors of a tuple argument (`concat((x, y))`).
pub(crate) fn tuple_of_tensors<'a>(call: &Call, s: &'a StructInfo) -> Result<Vec<&'a TensorStructInfo>, InferError> {
    match s {
        StructInfo::Tuple(fields) => fields
            .iter()
            .map(|f| match f {
                StructInfo::Tensor(t) => Ok(t),
                _ => Err(infer_err!(ArgKind;
                    "{} expects the input to be a Tuple of Tensors. However, the given input is a tuple with a {}",
                    op_name(call),
                    kind_name(f)
                )),
            })
            .collect(),
        other => Err(infer_err!(ArgKind;
            "{} expects the input to be a Tuple of Tensors. However, the given input is {}",
            op_name(call),
            kind_name(other)
        )),
    }
}

// ----------------------------------------------------------------------------
// Attributes

/// An attribute that is present and not `None`.
pub(crate) fn attr<'a>(call: &'a Call, key: &str) -> Option<&'a AttrValue> {
    match call.attrs.get(key) {
        None | Some(AttrValue::None) => None,
        Some(v) => Some(v),
    }
}

/// An optional integer attribute.
pub(crate) fn attr_opt_int(call: &Call, key: &str) -> Result<Option<i64>, InferError> {
    match attr(call, key) {
        None => Ok(None),
        Some(v) => match v.as_int() {
            Some(i) => Ok(Some(i)),
            None => match v.as_int_list() {
                Some(l) if l.len() == 1 => Ok(Some(l[0])),
                _ => Err(infer_err!(Attr;"{}: attribute `{}` must be an integer", op_name(call), key)),
            },
        },
    }
}

/// An integer attribute with a default.
pub(crate) fn attr_int(call: &Call, key: &str, default: i64) -> Result<i64, InferError> {
    Ok(attr_opt_int(call, key)?.unwrap_or(default))
}

/// A boolean attribute with a default.
pub(crate) fn attr_bool(call: &Call, key: &str, default: bool) -> bool {
    attr(call, key).and_then(AttrValue::as_bool).unwrap_or(default)
}

/// A string attribute with a default.
pub(crate) fn attr_str<'a>(call: &'a Call, key: &str, default: &'a str) -> &'a str {
    attr(call, key).and_then(AttrValue::as_str).unwrap_or(default)
}

/// An optional list of integers (a single integer counts as a one-item list).
pub(crate) fn attr_opt_ints(call: &Call, key: &str) -> Result<Option<Vec<i64>>, InferError> {
    match attr(call, key) {
        None => Ok(None),
        Some(v) => match v.as_int_list() {
            Some(l) => Ok(Some(l)),
            None => Err(infer_err!(Attr;
                "{}: attribute `{}` must be a list of integers",
                op_name(call),
                key
            )),
        },
    }
}

/// A list of integers with a default.
pub(crate) fn attr_ints(call: &Call, key: &str, default: &[i64]) -> Result<Vec<i64>, InferError> {
    Ok(attr_opt_ints(call, key)?.unwrap_or_else(|| default.to_vec()))
}

/// An optional list of `PrimExpr`s (integers become `int64` constants).
pub(crate) fn attr_opt_prims(call: &Call, key: &str) -> Result<Option<Vec<PrimExpr>>, InferError> {
    fn one(v: &AttrValue) -> Option<PrimExpr> {
        match v {
            AttrValue::Int(i) => Some(PrimExpr::int(*i)),
            AttrValue::Bool(b) => Some(PrimExpr::int(*b as i64)),
            AttrValue::PrimExpr(e) => Some(e.clone()),
            _ => None,
        }
    }
    match attr(call, key) {
        None => Ok(None),
        Some(AttrValue::List(l)) => match l.iter().map(one).collect::<Option<Vec<_>>>() {
            Some(v) => Ok(Some(v)),
            None => Err(infer_err!(Attr;
                "{}: attribute `{}` must be a list of integers",
                op_name(call),
                key
            )),
        },
        Some(v) => match one(v) {
            Some(e) => Ok(Some(vec![e])),
            None => Err(infer_err!(Attr;
                "{}: attribute `{}` must be a list of integers",
                op_name(call),
                key
            )),
        },
    }
}

/// An optional dtype attribute; `None`, absent and `void` all mean "not given".
pub(crate) fn attr_opt_dtype(call: &Call, key: &str) -> Result<Option<DataType>, InferError> {
    match attr(call, key) {
        None => Ok(None),
        Some(v) => match v.as_dtype() {
            Some(d) if d.is_void() => Ok(None),
            Some(d) => Ok(Some(d)),
            None => Err(infer_err!(Attr;"{}: attribute `{}` must be a data type", op_name(call), key)),
        },
    }
}

// ----------------------------------------------------------------------------
// Results

/// A tensor with known shape values.
pub(crate) fn tensor(shape: Vec<PrimExpr>, dtype: DataType, vdevice: Option<VDevice>) -> StructInfo {
    let ndim = shape.len() as i32;
    // `ShapeExpr` stores integer constants as int64.
    let shape = shape
        .into_iter()
        .map(|d| match d.kind() {
            PrimExprKind::IntImm { value, dtype } if *dtype != DataType::INT64 => PrimExpr::int(*value),
            _ => d,
        })
        .collect();
    StructInfo::Tensor(TensorStructInfo {
        shape: Some(Expr::shape(shape)),
        dtype,
        vdevice,
        ndim,
    })
}

/// A tensor of `t`'s shape (or rank, when the shape is unknown) with `dtype`
/// and `vdevice`.
pub(crate) fn tensor_as(t: &TensorStructInfo, dtype: DataType, vdevice: Option<VDevice>) -> StructInfo {
    match shape_of(t) {
        Some(s) => tensor(s, dtype, vdevice),
        None => tensor_ndim(dtype, t.ndim, vdevice),
    }
}

/// A tensor of known rank (or `-1`) but unknown shape.
pub(crate) fn tensor_ndim(dtype: DataType, ndim: i32, vdevice: Option<VDevice>) -> StructInfo {
    StructInfo::Tensor(TensorStructInfo {
        shape: None,
        dtype,
        vdevice,
        ndim,
    })
}

/// A tensor whose shape is the given expression (a `ShapeExpr` or a shape variable).
pub(crate) fn tensor_shape_expr(shape: Expr, dtype: DataType, vdevice: Option<VDevice>, ndim: i32) -> StructInfo {
    let ndim = match shape.kind() {
        ExprKind::ShapeExpr(v) => v.len() as i32,
        _ => ndim,
    };
    StructInfo::Tensor(TensorStructInfo {
        shape: Some(shape),
        dtype,
        vdevice,
        ndim,
    })
}

/// A copy of `t` with another dtype.
pub(crate) fn with_dtype(t: &TensorStructInfo, dtype: DataType) -> StructInfo {
    StructInfo::Tensor(TensorStructInfo { dtype, ..t.clone() })
}

/// The shape values of a tensor, when its shape is a `ShapeExpr` (and agrees
/// with the tensor's rank).
pub(crate) fn shape_of(t: &TensorStructInfo) -> Option<Vec<PrimExpr>> {
    t.shape_values()
        .filter(|v| t.ndim == -1 || v.len() == t.ndim as usize)
        .map(|v| v.to_vec())
}

/// Whether two shape expressions are the same object (same node or the same shape
/// variable).
pub(crate) fn same_shape_expr(a: &Option<Expr>, b: &Option<Expr>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.same_as(b) || matches!((a.as_var(), b.as_var()), (Some(x), Some(y)) if x == y),
        _ => false,
    }
}

/// The values of a shape argument: a `ShapeExpr` argument or a shape whose
/// StructInfo knows its values.
pub(crate) fn shape_arg_values(call: &Call, args: &[StructInfo], i: usize) -> Option<Vec<PrimExpr>> {
    if let Some(ExprKind::ShapeExpr(v)) = call.args.get(i).map(|e| e.kind()) {
        return Some(v.clone());
    }
    match args.get(i) {
        Some(StructInfo::Shape(s)) => s.values.clone(),
        _ => None,
    }
}

// ----------------------------------------------------------------------------
// PrimExpr arithmetic with TVM's constant folding

/// The common integer type of two operands (TVM's `BinaryOpMatchTypes` for the
/// cases shapes meet: the wider integer type).
fn common_dtype(a: &PrimExpr, b: &PrimExpr) -> DataType {
    let (da, db) = (a.dtype(), b.dtype());
    if da == db {
        da
    } else if da.is_integer() && db.is_integer() {
        if da.bits >= db.bits {
            da
        } else {
            db
        }
    } else if da.is_float() {
        da
    } else {
        db
    }
}

/// Re-types an integer constant to `dtype` (other expressions unchanged).
fn retype(e: &PrimExpr, dtype: DataType) -> PrimExpr {
    match e.kind() {
        PrimExprKind::IntImm { value, dtype: d } if *d != dtype && dtype.is_integer() => {
            PrimExpr::int_of(*value, dtype)
        }
        _ if e.dtype() != dtype => e.clone().cast(dtype),
        _ => e.clone(),
    }
}

fn bin(op: BinOp, a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    let d = common_dtype(a, b);
    PrimExpr::binary(op, retype(a, d), retype(b, d))
}

/// The float value of a constant.
fn as_f64(e: &PrimExpr) -> Option<f64> {
    match e.kind() {
        PrimExprKind::IntImm { value, .. } => Some(*value as f64),
        PrimExprKind::FloatImm { value, .. } => Some(*value),
        _ => None,
    }
}

/// `a - b` for float operands (folded like TVM: `x - 0`, constants).
pub(crate) fn fsub(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    let d = common_dtype(a, b);
    if !d.is_float() {
        return sub(a, b);
    }
    match (as_f64(a), as_f64(b)) {
        (Some(x), Some(y)) => PrimExpr::float_of(x - y, d),
        (_, Some(0.0)) => retype(a, d),
        _ => bin(BinOp::Sub, a, b),
    }
}

/// `a / b` for float operands (folded: constants, `x / 1`).
pub(crate) fn fdiv(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    let d = common_dtype(a, b);
    match (as_f64(a), as_f64(b)) {
        (Some(x), Some(y)) if y != 0.0 && d.is_float() => PrimExpr::float_of(x / y, d),
        (_, Some(1.0)) => retype(a, d),
        _ => bin(BinOp::Div, a, b),
    }
}

/// Whether `v` is representable in the integer dtype `d` (constants that overflow are
/// not folded: the expression stays as written).
fn fits(v: i64, d: DataType) -> bool {
    let bits = d.bits as u32;
    if !d.is_int() && !d.is_uint() || bits >= 64 {
        return true;
    }
    let (lo, hi) = if d.is_uint() {
        (0, (1i64 << bits) - 1)
    } else {
        (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
    };
    (lo..=hi).contains(&v)
}

/// `a op b` of two integer constants as a constant of dtype `d`, when `op`
/// does not overflow and the result fits `d`.
fn fold_ints(a: &PrimExpr, b: &PrimExpr, d: DataType, op: fn(i64, i64) -> Option<i64>) -> Option<PrimExpr> {
    let v = op(a.as_int()?, b.as_int()?).filter(|&v| fits(v, d))?;
    Some(PrimExpr::int_of(v, d))
}

/// `a op b` for a commutative `op` with `identity`, folded: two constants
/// combine, the identity on either side drops. `None` when neither applies.
fn fold_commutative(a: &PrimExpr, b: &PrimExpr, op: fn(i64, i64) -> Option<i64>, identity: i64) -> Option<PrimExpr> {
    let d = common_dtype(a, b);
    if let Some(c) = fold_ints(a, b, d, op) {
        return Some(c);
    }
    match (a.as_int(), b.as_int()) {
        (Some(v), _) if v == identity => Some(retype(b, d)),
        (_, Some(v)) if v == identity => Some(retype(a, d)),
        _ => None,
    }
}

/// `a + b`, folded.
pub(crate) fn add(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    fold_commutative(a, b, i64::checked_add, 0).unwrap_or_else(|| bin(BinOp::Add, a, b))
}

/// `a - b`, folded.
pub(crate) fn sub(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    let d = common_dtype(a, b);
    match fold_ints(a, b, d, i64::checked_sub) {
        Some(c) => c,
        None if b.as_int() == Some(0) => retype(a, d),
        None => bin(BinOp::Sub, a, b),
    }
}

/// `a * b`, folded (a constant 0 on either side absorbs).
pub(crate) fn mul(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    if let Some(e) = fold_commutative(a, b, i64::checked_mul, 1) {
        return e;
    }
    if a.as_int() == Some(0) || b.as_int() == Some(0) {
        return PrimExpr::int_of(0, common_dtype(a, b));
    }
    bin(BinOp::Mul, a, b)
}

/// `a // b` (floor division), folded.
pub(crate) fn floordiv(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    let d = common_dtype(a, b);
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) if y != 0 => PrimExpr::int_of(floor_div_i64(x, y), d),
        (_, Some(1)) => retype(a, d),
        (Some(0), _) => PrimExpr::int_of(0, d),
        _ => bin(BinOp::FloorDiv, a, b),
    }
}

/// `a % b` (floor modulo), folded.
pub(crate) fn floormod(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    let d = common_dtype(a, b);
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) if y != 0 => PrimExpr::int_of(x.wrapping_sub(floor_div_i64(x, y).wrapping_mul(y)), d),
        (_, Some(1)) | (Some(0), _) => PrimExpr::int_of(0, d),
        _ => bin(BinOp::FloorMod, a, b),
    }
}

/// Floor division of integers (`y != 0`; wraps on overflow instead of panicking).
pub(crate) fn floor_div_i64(x: i64, y: i64) -> i64 {
    if y == 0 {
        return 0;
    }
    let q = x.wrapping_div(y);
    if (x.wrapping_rem(y) != 0) && ((x < 0) != (y < 0)) {
        q.wrapping_sub(1)
    } else {
        q
    }
}

/// `min(a, b)`, folded.
pub(crate) fn min(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    fold_select(a, b, BinOp::Min, i64::min)
}

/// `max(a, b)`, folded.
pub(crate) fn max(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    fold_select(a, b, BinOp::Max, i64::max)
}

/// `op(a, b)` for `min`/`max` (`pick` on constants), folded: equal operands
/// are the operand itself, two constants combine.
fn fold_select(a: &PrimExpr, b: &PrimExpr, op: BinOp, pick: fn(i64, i64) -> i64) -> PrimExpr {
    if expr_equal(a, b) {
        return a.clone();
    }
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) => PrimExpr::int_of(pick(x, y), common_dtype(a, b)),
        _ => bin(op, a, b),
    }
}

/// An `int64` constant.
pub(crate) fn int(v: i64) -> PrimExpr {
    PrimExpr::int(v)
}

/// The product of the dimensions (1 for none), folded.
pub(crate) fn product(dims: &[PrimExpr]) -> PrimExpr {
    let mut acc = int(1);
    for d in dims {
        acc = mul(&acc, d);
    }
    acc
}

/// Simplify with the analyzer.
pub(crate) fn simplify(an: &Analyzer, e: &PrimExpr) -> PrimExpr {
    if e.as_int().is_some() || e.as_var().is_some() {
        return e.clone();
    }
    an.simplify(e)
}

/// Whether `a == b` is provable.
pub(crate) fn prove_eq(an: &Analyzer, a: &PrimExpr, b: &PrimExpr) -> bool {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) => x == y,
        _ => an.can_prove_equal(a, b),
    }
}

/// Whether `a != b` is provable (both constants and different, or the analyzer
/// proves the difference non-zero).
pub(crate) fn prove_ne(an: &Analyzer, a: &PrimExpr, b: &PrimExpr) -> bool {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) => x != y,
        _ => {
            let ne = PrimExpr::binary(BinOp::Ne, a.clone(), b.clone());
            an.can_prove(&ne)
        }
    }
}

/// Render a `PrimExpr` in messages (TVM style: `T.int64(3)` for constants).
pub(crate) fn show(e: &PrimExpr) -> String {
    match e.kind() {
        PrimExprKind::IntImm { value, dtype } => format!("T.{dtype}({value})"),
        PrimExprKind::Var(v) => v.name().to_string(),
        _ => format!("{e:?}"),
    }
}

/// Render a shape in messages.
pub(crate) fn show_shape(dims: &[PrimExpr]) -> String {
    let parts: Vec<String> = dims
        .iter()
        .map(|d| match d.as_int() {
            Some(v) => v.to_string(),
            None => show(d),
        })
        .collect();
    format!("R.shape([{}])", parts.join(", "))
}

// ----------------------------------------------------------------------------
// Broadcasting, dtypes, axes, VDevices

/// The outcome of broadcasting two shapes.
pub(crate) enum Broadcast {
    /// The broadcast shape.
    Shape(Vec<PrimExpr>),
    /// Possibly broadcastable, not provable.
    Unknown,
    /// Not broadcastable.
    Conflict(String),
}

/// NumPy broadcasting of two shapes (TVM's `InferBinaryBroadcastShape`).
pub(crate) fn broadcast_shapes(an: &Analyzer, x1: &[PrimExpr], x2: &[PrimExpr]) -> Broadcast {
    let (n1, n2) = (x1.len(), x2.len());
    let nmax = n1.max(n2);
    let mut out: Vec<PrimExpr> = Vec::with_capacity(nmax);
    let mut i = 1;
    while i <= n1.min(n2) {
        let d0 = &x1[n1 - i];
        let d1 = &x2[n2 - i];
        let (c0, c1) = (d0.as_int(), d1.as_int());
        if c0 == Some(1) {
            out.push(d1.clone());
        } else if c1 == Some(1) || prove_eq(an, d0, d1) {
            out.push(d0.clone());
        } else if let (Some(a), Some(b)) = (c0, c1) {
            debug_assert!(a != b);
            return Broadcast::Conflict(format!(
                "the first input shape at dim {} is {} and the second input shape at dim {} is {}, which are not broadcastable.",
                n1 - i,
                show(d0),
                n2 - i,
                show(d1)
            ));
        } else {
            return Broadcast::Unknown;
        }
        i += 1;
    }
    let longer = if n1 > n2 { x1 } else { x2 };
    while i <= nmax {
        out.push(longer[nmax - i].clone());
        i += 1;
    }
    out.reverse();
    Broadcast::Shape(out)
}

/// Broadcasting with an error for conflicts; `None` when unknown.
pub(crate) fn broadcast_or_err(
    call: &Call,
    an: &Analyzer,
    x1: &[PrimExpr],
    x2: &[PrimExpr],
) -> Result<Option<Vec<PrimExpr>>, InferError> {
    match broadcast_shapes(an, x1, x2) {
        Broadcast::Shape(s) => Ok(Some(s)),
        Broadcast::Unknown => Ok(None),
        Broadcast::Conflict(m) => Err(infer_err!(Broadcast; "In {}, {}", op_name(call), m)),
    }
}

/// The element dtype of a tensor or scalar argument (`None` when the tensor's
/// dtype is unknown); an error for other kinds.
fn element_dtype(call: &Call, s: &StructInfo, side: &str) -> Result<Option<DataType>, InferError> {
    match s {
        StructInfo::Prim(p) => Ok(Some(p.dtype)),
        StructInfo::Tensor(t) if t.dtype.is_void() => Ok(None),
        StructInfo::Tensor(t) => Ok(Some(t.dtype)),
        other => Err(infer_err!(DType;
            "Binary operators must have the same datatype for both operands.  However, {} has an argument on the {}, with type {}, which does not have a datatype.",
            op_name(call),
            side,
            kind_name(other)
        )),
    }
}

/// TVM's `InferBinaryArithOpOutDtype`: both dtypes must agree unless one is
/// `bool`; unknown (`void`) when either is unknown. Returns the LHS dtype.
pub(crate) fn binary_dtype(call: &Call, lhs: &StructInfo, rhs: &StructInfo) -> Result<DataType, InferError> {
    let Some(l) = element_dtype(call, lhs, "LHS")? else {
        return Ok(DataType::VOID);
    };
    let Some(r) = element_dtype(call, rhs, "RHS")? else {
        return Ok(DataType::VOID);
    };
    if l != r && !l.is_bool() && !r.is_bool() {
        return Err(infer_err!(DType;
            "Binary operators must have the same datatype for both operands.  However, {} uses datatype {} on the LHS, and datatype {} on the RHS.",
            op_name(call),
            l,
            r
        ));
    }
    Ok(l)
}

/// Whether a dtype is known and a float (or bfloat).
pub(crate) fn is_known_non_float(d: DataType) -> bool {
    !d.is_void() && !d.is_float()
}

/// Normalizes axes against `ndim` (negative from the end), rejecting out-of-range
/// and repeated axes.
pub(crate) fn normalize_axes(call: &Call, ndim: i32, axes: &[i64]) -> Result<Vec<usize>, InferError> {
    let mut seen = vec![false; ndim.max(0) as usize];
    let mut out = Vec::with_capacity(axes.len());
    for &axis in axes {
        let nd = ndim as i64;
        if axis < -nd || axis >= nd {
            return Err(infer_err!(Axis;
                "In {}, the input axis {} is out of range. The input tensor has {} dimensions, so axis should be in range [{}, {}).",
                op_name(call),
                axis,
                ndim,
                -nd,
                nd
            ));
        }
        let a = if axis < 0 { axis + nd } else { axis } as usize;
        if seen[a] {
            return Err(infer_err!(Axis;
                "In {}, the input axes is required to be non-repetitive. However, there are multiple given axes referring to axis {}",
                op_name(call),
                a
            ));
        }
        seen[a] = true;
        out.push(a);
    }
    Ok(out)
}

/// Normalizes one axis.
pub(crate) fn normalize_axis(call: &Call, ndim: i32, axis: i64) -> Result<usize, InferError> {
    Ok(normalize_axes(call, ndim, &[axis])?[0])
}

/// The VDevice of a binary op (TVM's `InferBinaryArithOpOutVDevice`): one side's
/// device when the other has none; an error when both differ.
pub(crate) fn binary_vdevice(call: &Call, lhs: &StructInfo, rhs: &StructInfo) -> Result<Option<VDevice>, InferError> {
    if let Some(StructInfo::Tensor(t)) = call.sinfo_args.first() {
        return Ok(t.vdevice.clone());
    }
    let get = |s: &StructInfo| match s {
        StructInfo::Tensor(t) => t.vdevice.clone(),
        _ => None,
    };
    let (l, r) = (get(lhs), get(rhs));
    match (l, r) {
        (None, r) => Ok(r),
        (l, None) => Ok(l),
        (Some(l), Some(r)) => {
            if l != r {
                return Err(infer_err!(
                    "Binary operators with Tensor arguments must have the same VDevice for both operands.  However, {} has a LHS on VDevice {}:{}:{} and a RHS on VDevice {}:{}:{}",
                    op_name(call),
                    l.target.kind,
                    l.vdevice_id,
                    l.memory_scope,
                    r.target.kind,
                    r.vdevice_id,
                    r.memory_scope
                ));
            }
            Ok(Some(l))
        }
    }
}

/// The VDevice of several tensors: the first one given, or none when two differ
/// (as `where`, `ewise_fma`, `concat` do).
pub(crate) fn merged_vdevice<'a>(tensors: impl IntoIterator<Item = &'a TensorStructInfo>) -> Option<VDevice> {
    let mut out: Option<VDevice> = None;
    for t in tensors {
        if let Some(v) = &t.vdevice {
            match &out {
                None => out = Some(v.clone()),
                Some(o) if o != v => return None,
                _ => {}
            }
        }
    }
    out
}

/// The values of a tensor's shape expression as its StructInfo knows them: the
/// values of a `ShapeExpr`, or those of a shape variable's StructInfo.
pub(crate) fn deep_shape_values(t: &TensorStructInfo) -> Option<Vec<PrimExpr>> {
    expr_shape_values(t.shape.as_ref()?).filter(|v| t.ndim == -1 || v.len() == t.ndim as usize)
}

/// The values of a shape-valued expression (`ShapeExpr`, or a variable whose
/// StructInfo is a shape with known values).
pub(crate) fn expr_shape_values(e: &Expr) -> Option<Vec<PrimExpr>> {
    match e.kind() {
        ExprKind::ShapeExpr(v) => Some(v.clone()),
        ExprKind::Var(v) => match v.struct_info() {
            Some(StructInfo::Shape(s)) => s.values.clone(),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a dtype is a known signed or unsigned integer (bool excluded).
pub(crate) fn is_int_or_uint(d: DataType) -> bool {
    d.is_int() || (d.is_uint() && !d.is_bool())
}
