//! Constant folding and dtype promotion of TIR arithmetic as the parser builds it.

#[allow(unused_imports)]
use super::*;

#[derive(Clone, Copy)]
pub(super) enum Num {
    I(i64),
    F(f64),
}
impl Num {
    pub(super) fn f(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }
}

/// Whether `b` is a one-element, one-dimensional buffer (usable by name as a scalar).
pub(crate) fn is_unit_buffer(b: &Buffer) -> bool {
    b.shape().len() == 1 && b.shape()[0].as_int() == Some(1)
}

/// `b[0]`.
pub(crate) fn unit_load(b: &Buffer) -> PrimExpr {
    PrimExpr::load(b, vec![PrimExpr::int_of(0, DataType::INT32)])
}

/// A scalar local buffer read as its value.
pub(super) fn scalarize(v: Value) -> Value {
    match v {
        Value::Buffer(b) if is_unit_buffer(&b) => Value::Expr(unit_load(&b)),
        other => other,
    }
}

pub(super) fn num_f(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => *b as i64 as f64,
        _ => 0.0,
    }
}

/// A Python number converted to `dtype` (comparisons: `_auto_broadcast`).
pub(super) fn py_as(v: &Value, dtype: DataType) -> PrimExpr {
    let elem = dtype.element_of();
    match v {
        Value::Float(f) if elem.is_float() => PrimExpr::float_of(*f, elem),
        Value::Float(f) => PrimExpr::float_of(*f, DataType::FLOAT32),
        Value::Int(i) if elem.is_float() => PrimExpr::float_of(*i as f64, elem),
        Value::Int(i) if elem.is_integer() => const_of(*i, elem),
        Value::Int(i) => py_int(*i, DataType::INT32),
        Value::Bool(b) if elem.is_integer() => const_of(*b as i64, elem),
        Value::Bool(b) => PrimExpr::bool(*b),
        _ => PrimExpr::int_of(0, DataType::INT32),
    }
}

/// `hi - lo`, simplified when `hi` is `lo + c` (slices `A[i:i + 4]`).
pub(crate) fn extent_between(lo: &PrimExpr, hi: PrimExpr) -> PrimExpr {
    if let PrimExprKind::Binary { op: BinOp::Add, a, b } = hi.kind() {
        if same_expr(a, lo) {
            return b.clone();
        }
    }
    arith(BinOp::Sub, hi, lo.clone())
}

pub(super) fn same_expr(a: &PrimExpr, b: &PrimExpr) -> bool {
    crate::text::printer::tir::expr_equal(a, b)
}

/// A Python int as a `PrimExpr`: `int_dtype` when the value fits it, else `int64`.
pub(crate) fn py_int(i: i64, int_dtype: DataType) -> PrimExpr {
    if int_dtype == DataType::INT32 && (i < i32::MIN as i64 || i > i32::MAX as i64) {
        PrimExpr::int_of(i, DataType::INT64)
    } else {
        PrimExpr::int_of(i, int_dtype)
    }
}

pub(super) fn index_dtype(buf: &Buffer, i: usize) -> DataType {
    buf.shape().get(i).map(|s| s.dtype()).unwrap_or(DataType::INT32)
}

/// A constant of `dtype` (`FloatImm` for float types).
pub(crate) fn const_of(v: i64, dtype: DataType) -> PrimExpr {
    if dtype.is_float() {
        PrimExpr::float_of(v as f64, dtype)
    } else {
        PrimExpr::int_of(wrap_int(v, dtype), dtype)
    }
}

/// `v` wrapped to the bit width of an integer `dtype`.
pub(crate) fn wrap_int(v: i64, dtype: DataType) -> i64 {
    let bits = dtype.bits as u32;
    if dtype.is_bool() {
        return (v != 0) as i64;
    }
    if bits >= 64 || bits == 0 {
        return v;
    }
    let mask = (1u64 << bits) - 1;
    let u = (v as u64) & mask;
    if dtype.code == TypeCode::Int && u >> (bits - 1) == 1 {
        (u | !mask) as i64
    } else {
        u as i64
    }
}

pub(super) fn limit_value(dt: DataType, max: bool) -> Option<PrimExpr> {
    let e = dt.element_of();
    Some(match e.code {
        TypeCode::Int => {
            let b = e.bits as u32;
            if !(1..=64).contains(&b) {
                return None;
            }
            let v = if max {
                ((1u128 << (b - 1)) - 1) as i64
            } else {
                (-(1i128 << (b - 1))) as i64
            };
            PrimExpr::int_of(v, e)
        }
        TypeCode::UInt => {
            if e.is_bool() {
                return Some(PrimExpr::int_of(max as i64, e));
            }
            let b = e.bits as u32;
            if b >= 64 {
                return None;
            }
            PrimExpr::int_of(if max { ((1u64 << b) - 1) as i64 } else { 0 }, e)
        }
        TypeCode::Float => {
            let v = match e.bits {
                16 => 65504.0,
                32 => f32::MAX as f64,
                64 => f64::MAX,
                _ => return None,
            };
            PrimExpr::float_of(if max { v } else { -v }, e)
        }
        TypeCode::BFloat => {
            let v = 3.3895313892515355e38;
            PrimExpr::float_of(if max { v } else { -v }, e)
        }
        TypeCode::Handle => return None,
        _ => {
            let v = e.mini_float()?.max();
            PrimExpr::float_of(if max { v } else { -v }, e)
        }
    })
}

pub(crate) fn floordiv_i64(a: i64, b: i64) -> i64 {
    let q = a.wrapping_div(b);
    if (a.wrapping_rem(b) != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

pub(crate) fn floormod_i64(a: i64, b: i64) -> i64 {
    a.wrapping_sub(floordiv_i64(a, b).wrapping_mul(b))
}

pub(super) fn is_float_t(d: DataType) -> bool {
    d.code == TypeCode::Float
}

/// The common type of a binary operation (TVM's `PromoteBinaryOpType`), if any.
pub(crate) fn promote(a: DataType, b: DataType) -> Option<DataType> {
    if a == b {
        return Some(a);
    }
    if a.lanes != b.lanes {
        return None;
    }
    if is_float_t(a) && is_float_t(b) {
        return Some(if a.bits < b.bits { b } else { a });
    }
    if !is_float_t(a) && is_float_t(b) {
        return Some(b);
    }
    if is_float_t(a) && !is_float_t(b) {
        return Some(a);
    }
    if a.code == TypeCode::BFloat || b.code == TypeCode::BFloat {
        return Some(if a.code == TypeCode::BFloat { a } else { b });
    }
    if a.is_bool() && b.is_integer() {
        return Some(b);
    }
    if a.is_integer() && b.is_bool() {
        return Some(a);
    }
    if a.code == b.code && a.is_integer() {
        return Some(if a.bits < b.bits { b } else { a });
    }
    if a.is_integer() && b.is_integer() {
        if a.bits < b.bits {
            return Some(b);
        } else if a.bits > b.bits {
            return Some(a);
        }
        return Some(if a.code == TypeCode::UInt {
            a
        } else {
            DataType::new(TypeCode::UInt, a.bits, a.lanes)
        });
    }
    None
}

/// `cast` with constant folding (TVM's `tvm::cast`).
pub(crate) fn cast_fold(x: PrimExpr, dt: DataType) -> PrimExpr {
    if x.dtype() == dt {
        return x;
    }
    match x.kind() {
        PrimExprKind::IntImm { value, .. } if dt.lanes == 1 => const_of(*value, dt),
        PrimExprKind::FloatImm { value, .. } if dt.lanes == 1 => {
            if dt.is_float() {
                PrimExpr::float_of(*value, dt)
            } else {
                const_of(*value as i64, dt)
            }
        }
        _ => PrimExpr::new(PrimExprKind::Cast { dtype: dt, value: x }),
    }
}

/// Bring both operands to their common type (TVM's `BinaryOpMatchTypes`).
pub(crate) fn match_types(a: PrimExpr, b: PrimExpr) -> (PrimExpr, PrimExpr) {
    let (da, db) = (a.dtype(), b.dtype());
    if da == db {
        return (a, b);
    }
    match promote(da, db) {
        Some(t) => (cast_fold(a, t), cast_fold(b, t)),
        None => (a, b),
    }
}

/// `a op b` as TVM's operator functions build it: types matched, constants folded.
pub(crate) fn arith(op: BinOp, a: PrimExpr, b: PrimExpr) -> PrimExpr {
    let (a, b) = match_types(a, b);
    match try_fold(op, &a, &b) {
        Some(x) => x,
        None => PrimExpr::binary(op, a, b),
    }
}

pub(super) fn fold_float(dt: DataType, f: impl Fn(f64, f64) -> f64, x: f64, y: f64) -> Option<PrimExpr> {
    match dt.bits {
        32 => Some(PrimExpr::float_of(
            f(x as f32 as f64, y as f32 as f64) as f32 as f64,
            dt,
        )),
        64 => Some(PrimExpr::float_of(f(x, y), dt)),
        _ => None,
    }
}

/// Constant folding of `a op b` (TVM's `TryConstFold`); `None` when nothing folds.
/// Operands must already have matching types.
pub(crate) fn try_fold(op: BinOp, a: &PrimExpr, b: &PrimExpr) -> Option<PrimExpr> {
    let (pa, pb) = (a.as_int(), b.as_int());
    let (fa, fb) = (a.as_float(), b.as_float());
    let rt = a.dtype();
    let int = |v: i64| Some(PrimExpr::int_of(wrap_int(v, rt), rt));
    let boolv = |v: bool| Some(PrimExpr::bool(v));
    match op {
        BinOp::Add | BinOp::Sub => {
            let add = op == BinOp::Add;
            if let (Some(x), Some(y)) = (pa, pb) {
                return int(if add { x.wrapping_add(y) } else { x.wrapping_sub(y) });
            }
            if add && pa == Some(0) {
                return Some(b.clone());
            }
            if pb == Some(0) {
                return Some(a.clone());
            }
            if let (Some(x), Some(y)) = (fa, fb) {
                if let Some(r) = fold_float(rt, |p, q| if add { p + q } else { p - q }, x, y) {
                    return Some(r);
                }
            }
            if add && fa == Some(0.0) {
                return Some(b.clone());
            }
            if fb == Some(0.0) {
                return Some(a.clone());
            }
            None
        }
        BinOp::Mul => {
            // `1 * b` is `b`, `0 * b` is `0`, and the same with the constant on the right.
            let by_constant = |[one_a, zero_a, one_b, zero_b]: [bool; 4]| {
                if one_a {
                    Some(b.clone())
                } else if zero_a || one_b {
                    Some(a.clone())
                } else if zero_b {
                    Some(b.clone())
                } else {
                    None
                }
            };
            if let (Some(x), Some(y)) = (pa, pb) {
                return int(x.wrapping_mul(y));
            }
            if let Some(r) = by_constant([pa == Some(1), pa == Some(0), pb == Some(1), pb == Some(0)]) {
                return Some(r);
            }
            if let (Some(x), Some(y)) = (fa, fb) {
                if let Some(r) = fold_float(rt, |p, q| p * q, x, y) {
                    return Some(r);
                }
            }
            by_constant([fa == Some(1.0), fa == Some(0.0), fb == Some(1.0), fb == Some(0.0)])
        }
        BinOp::Div | BinOp::FloorDiv => {
            let floor = op == BinOp::FloorDiv;
            if let (Some(x), Some(y)) = (pa, pb) {
                if y != 0 {
                    return int(if floor { floordiv_i64(x, y) } else { x.wrapping_div(y) });
                }
                return None;
            }
            if pa == Some(0) || pb == Some(1) {
                return Some(a.clone());
            }
            if let (Some(x), Some(y)) = (fa, fb) {
                if y != 0.0 {
                    let div = |p: f64, q: f64| if floor { (p / q).floor() } else { p / q };
                    if let Some(r) = fold_float(rt, div, x, y) {
                        return Some(r);
                    }
                }
            }
            if fa == Some(0.0) || fb == Some(1.0) {
                return Some(a.clone());
            }
            None
        }
        BinOp::Mod | BinOp::FloorMod => {
            if !rt.is_integer() {
                return None;
            }
            if let (Some(x), Some(y)) = (pa, pb) {
                if y != 0 {
                    return int(if op == BinOp::Mod {
                        x.wrapping_rem(y)
                    } else {
                        floormod_i64(x, y)
                    });
                }
                return None;
            }
            if pa == Some(0) {
                return Some(a.clone());
            }
            if pb == Some(1) {
                return int(0);
            }
            None
        }
        BinOp::Min | BinOp::Max => {
            let mx = op == BinOp::Max;
            if let (Some(x), Some(y)) = (pa, pb) {
                return int(if mx { x.max(y) } else { x.min(y) });
            }
            if let (Some(x), Some(y)) = (fa, fb) {
                return Some(PrimExpr::float_of(if mx { x.max(y) } else { x.min(y) }, rt));
            }
            if a.same_as(b) {
                return Some(a.clone());
            }
            None
        }
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            let cmp = |o: std::cmp::Ordering| match op {
                BinOp::Eq => o.is_eq(),
                BinOp::Ne => o.is_ne(),
                BinOp::Lt => o.is_lt(),
                BinOp::Le => o.is_le(),
                BinOp::Gt => o.is_gt(),
                _ => o.is_ge(),
            };
            if let (Some(x), Some(y)) = (pa, pb) {
                return boolv(cmp(x.cmp(&y)));
            }
            if let (Some(x), Some(y)) = (fa, fb) {
                return x.partial_cmp(&y).map(|o| PrimExpr::bool(cmp(o)));
            }
            None
        }
        BinOp::And | BinOp::Or => {
            // `true and b` is `b` and `false and b` is `false`; `or` the other way round.
            let and = op == BinOp::And;
            if let Some(x) = pa {
                return Some(if (x != 0) == and { b.clone() } else { a.clone() });
            }
            if let Some(y) = pb {
                return Some(if (y != 0) == and { a.clone() } else { b.clone() });
            }
            None
        }
    }
}
