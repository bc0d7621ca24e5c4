//! Evaluation of `PrimExpr`s (shape dimensions, `PrimValue`s) in the current
//! shape-variable context, with TIR's integer semantics.

use relax_ir::tir::{BinOp, Intrinsic, PrimExpr, PrimExprKind, TirVar};
use relax_ir::DataType;

use crate::error::{EngineError, Result};
use crate::value::{PrimValue, Scalar};

/// Values of the shape variables in scope.
/// Values of the shape variables in scope (hashed by identity with `FxHash`: the
/// interpreter looks them up on every binding).
pub(crate) type ShapeEnv = rustc_hash::FxHashMap<TirVar, PrimValue>;

/// Truncate `v` to the range of integer type `dtype` (two's complement wrap-around).
pub(crate) fn wrap_int(v: i64, dtype: DataType) -> i64 {
    if dtype.is_bool() {
        return (v != 0) as i64;
    }
    let bits = dtype.bits as u32;
    if bits >= 64 || bits == 0 {
        return v;
    }
    let shift = 64 - bits;
    if dtype.is_uint() {
        ((v as u64) << shift >> shift) as i64
    } else {
        (v << shift) >> shift
    }
}

/// Evaluate `e`; every variable must be bound in `env`.
pub(crate) fn eval_prim(e: &PrimExpr, env: &ShapeEnv) -> Result<PrimValue> {
    Evaluator { env, lets: Vec::new() }.eval(e)
}

/// Evaluate `e` to an integer (a shape dimension).
pub(crate) fn eval_int(e: &PrimExpr, env: &ShapeEnv) -> Result<i64> {
    let v = eval_prim(e, env)?;
    v.as_int()
        .ok_or_else(|| EngineError::Arith(format!("expected an integer, `{e:?}` evaluated to {v}")))
}

struct Evaluator<'a> {
    env: &'a ShapeEnv,
    lets: Vec<(TirVar, PrimValue)>,
}

fn arith(msg: impl Into<String>) -> EngineError {
    EngineError::Arith(msg.into())
}

fn int_of(dtype: DataType, v: i64) -> PrimValue {
    PrimValue {
        dtype,
        value: Scalar::Int(wrap_int(v, dtype)),
    }
}

fn cast(v: PrimValue, dtype: DataType) -> PrimValue {
    if dtype.is_float() {
        let f = v.as_f64();
        let f = if dtype.bits == 32 { f as f32 as f64 } else { f };
        return PrimValue::float(f, dtype);
    }
    if dtype.is_bool() {
        return PrimValue::bool(v.as_f64() != 0.0);
    }
    match v.value {
        Scalar::Int(i) => int_of(dtype, i),
        Scalar::Float(f) => int_of(dtype, f as i64),
    }
}

/// Floor division of non-zero `b`; `None` when the quotient overflows
/// (`i64::MIN / -1`).
fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    if (a.wrapping_rem(b) != 0) && ((a < 0) != (b < 0)) {
        Some(q - 1)
    } else {
        Some(q)
    }
}

/// Floor modulo of non-zero `b` (never overflows: `i64::MIN % -1` is 0).
fn floor_mod(a: i64, b: i64) -> i64 {
    let r = a.wrapping_rem(b);
    if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    }
}

/// `op(a, b)` on 64-bit integers (`unsigned`: the bits of `uint64`; narrower
/// unsigned values are non-negative `i64`s), `None` on overflow. Narrower dtypes
/// do not overflow an `i64` here and wrap to their dtype afterwards.
fn int_op(op: BinOp, a: i64, b: i64, unsigned: bool) -> Option<i64> {
    let (ua, ub) = (a as u64, b as u64);
    Some(match op {
        BinOp::Add if unsigned => ua.checked_add(ub)? as i64,
        BinOp::Sub if unsigned => ua.checked_sub(ub)? as i64,
        BinOp::Mul if unsigned => ua.checked_mul(ub)? as i64,
        BinOp::Add => a.checked_add(b)?,
        BinOp::Sub => a.checked_sub(b)?,
        BinOp::Mul => a.checked_mul(b)?,
        BinOp::Div | BinOp::FloorDiv if unsigned => (ua / ub) as i64,
        BinOp::Mod | BinOp::FloorMod if unsigned => (ua % ub) as i64,
        BinOp::Div => a.checked_div(b)?,
        BinOp::Mod => a.checked_rem(b)?,
        BinOp::FloorDiv => floor_div(a, b)?,
        BinOp::FloorMod => floor_mod(a, b),
        BinOp::Min if unsigned => ua.min(ub) as i64,
        BinOp::Max if unsigned => ua.max(ub) as i64,
        BinOp::Min => a.min(b),
        BinOp::Max => a.max(b),
        _ => return None,
    })
}

impl Evaluator<'_> {
    fn lookup(&self, v: &TirVar) -> Result<PrimValue> {
        if let Some((_, val)) = self.lets.iter().rev().find(|(k, _)| k == v) {
            return Ok(*val);
        }
        self.env
            .get(v)
            .copied()
            .ok_or_else(|| EngineError::UnboundShapeVar(v.name().to_string()))
    }

    fn eval(&mut self, e: &PrimExpr) -> Result<PrimValue> {
        match e.kind() {
            PrimExprKind::IntImm { value, dtype } => Ok(int_of(*dtype, *value)),
            PrimExprKind::FloatImm { value, dtype } => Ok(PrimValue::float(*value, *dtype)),
            PrimExprKind::Var(v) => self.lookup(v),
            PrimExprKind::Cast { dtype, value } => Ok(cast(self.eval(value)?, *dtype)),
            PrimExprKind::Binary { op, a, b } => {
                let x = self.eval(a)?;
                let y = self.eval(b)?;
                binary(*op, x, y, e.dtype())
            }
            PrimExprKind::Not(a) => {
                let x = self.eval(a)?;
                Ok(PrimValue::bool(x.as_f64() == 0.0))
            }
            PrimExprKind::Select { cond, t, f } => {
                // TIR's Select evaluates both sides.
                let c = self.eval(cond)?;
                let tv = self.eval(t)?;
                let fv = self.eval(f)?;
                Ok(if c.as_f64() != 0.0 { tv } else { fv })
            }
            PrimExprKind::Let { var, value, body } => {
                let v = self.eval(value)?;
                self.lets.push((var.clone(), v));
                let r = self.eval(body);
                self.lets.pop();
                r
            }
            PrimExprKind::Call { op, dtype, args } => self.call(op.name(), *dtype, args),
            PrimExprKind::StringImm(_)
            | PrimExprKind::BufferLoad { .. }
            | PrimExprKind::Ramp { .. }
            | PrimExprKind::Broadcast { .. } => Err(arith(format!("`{e:?}` cannot be evaluated as a scalar"))),
        }
    }

    fn call(&mut self, op: &str, dtype: DataType, args: &[PrimExpr]) -> Result<PrimValue> {
        let op = op.strip_prefix("tir.").unwrap_or(op);
        let arity = |n: usize| -> Result<()> {
            if args.len() == n {
                Ok(())
            } else {
                Err(arith(format!("`{op}` takes {n} argument(s), got {}", args.len())))
            }
        };
        // `min`/`max` written as calls are the binary operators.
        let bop = match op {
            "min" => Some(BinOp::Min),
            "max" => Some(BinOp::Max),
            _ => None,
        };
        if let Some(bop) = bop {
            arity(2)?;
            let x = self.eval(&args[0])?;
            let y = self.eval(&args[1])?;
            return binary(bop, x, y, dtype);
        }
        match Intrinsic::from_name(op) {
            Some(Intrinsic::IfThenElse) => {
                arity(3)?;
                let c = self.eval(&args[0])?;
                self.eval(&args[if c.as_f64() != 0.0 { 1 } else { 2 }])
            }
            Some(Intrinsic::Abs) => {
                arity(1)?;
                let v = self.eval(&args[0])?;
                Ok(match v.value {
                    Scalar::Int(i) if v.dtype.is_uint() => int_of(v.dtype, i),
                    Scalar::Int(i) => int_of(
                        v.dtype,
                        i.checked_abs()
                            .ok_or_else(|| arith(format!("integer overflow in abs({i}) of {}", v.dtype)))?,
                    ),
                    Scalar::Float(f) => PrimValue::float(f.abs(), v.dtype),
                })
            }
            Some(
                i @ (Intrinsic::Truncdiv
                | Intrinsic::Truncmod
                | Intrinsic::Floordiv
                | Intrinsic::Floormod
                | Intrinsic::ShiftLeft
                | Intrinsic::ShiftRight
                | Intrinsic::BitwiseAnd
                | Intrinsic::BitwiseOr
                | Intrinsic::BitwiseXor),
            ) => {
                arity(2)?;
                let x = self.eval(&args[0])?;
                let y = self.eval(&args[1])?;
                let bop = match i {
                    Intrinsic::Truncdiv => BinOp::Div,
                    Intrinsic::Truncmod => BinOp::Mod,
                    Intrinsic::Floordiv => BinOp::FloorDiv,
                    Intrinsic::Floormod => BinOp::FloorMod,
                    _ => return bitwise(i, x, y, dtype),
                };
                binary(bop, x, y, dtype)
            }
            Some(Intrinsic::BitwiseNot) => {
                arity(1)?;
                let x = self.eval(&args[0])?;
                match x.value {
                    Scalar::Int(i) => Ok(int_of(x.dtype, !i)),
                    Scalar::Float(_) => Err(arith("bitwise_not of a float")),
                }
            }
            Some(Intrinsic::MaxValue) => limit(true, dtype),
            Some(Intrinsic::MinValue) => limit(false, dtype),
            _ => Err(arith(format!(
                "intrinsic `T.{op}` is not supported in shape expressions"
            ))),
        }
    }
}

/// `T.max_value(dtype)` (`max`) or `T.min_value(dtype)`.
fn limit(max: bool, dtype: DataType) -> Result<PrimValue> {
    if dtype.is_float() {
        let v = match dtype.bits {
            16 => 65504.0,
            32 => f32::MAX as f64,
            _ => f64::MAX,
        };
        return Ok(PrimValue::float(if max { v } else { -v }, dtype));
    }
    if dtype.is_bool() {
        return Ok(PrimValue::bool(max));
    }
    let bits = dtype.bits as u32;
    if bits == 0 || bits > 64 {
        return Err(arith(format!(
            "`T.{}_value` of {dtype}",
            if max { "max" } else { "min" }
        )));
    }
    let v = match (dtype.is_uint(), max) {
        (true, true) if bits >= 64 => -1i64,
        (true, true) => ((1u64 << bits) - 1) as i64,
        (true, false) => 0,
        (false, true) => (((1u128 << (bits - 1)) - 1) as u64) as i64,
        (false, false) => -(((1u128 << (bits - 1)) - 1) as i64) - 1,
    };
    Ok(PrimValue::int(v, dtype))
}

fn bitwise(op: Intrinsic, x: PrimValue, y: PrimValue, dtype: DataType) -> Result<PrimValue> {
    let (Scalar::Int(a), Scalar::Int(b)) = (x.value, y.value) else {
        return Err(arith(format!("`{}` of a float", op.name())));
    };
    // A shift by the bit width or more (or by a negative amount) shifts every bit
    // out: 0, or the sign for a signed right shift (the host and GPU rule).
    let bits = (dtype.bits as u64).clamp(1, 64);
    let big = b as u64 >= bits;
    let r = match op {
        Intrinsic::ShiftLeft if big => 0,
        Intrinsic::ShiftLeft => a.wrapping_shl(b as u32),
        Intrinsic::ShiftRight if dtype.is_uint() && big => 0,
        Intrinsic::ShiftRight if dtype.is_uint() => ((a as u64) >> (b as u32)) as i64,
        Intrinsic::ShiftRight => a >> (b as u64).min(63),
        Intrinsic::BitwiseAnd => a & b,
        Intrinsic::BitwiseOr => a | b,
        _ => a ^ b,
    };
    Ok(int_of(dtype, r))
}

fn binary(op: BinOp, x: PrimValue, y: PrimValue, result: DataType) -> Result<PrimValue> {
    if op.is_logical() {
        let (a, b) = (x.as_f64() != 0.0, y.as_f64() != 0.0);
        return Ok(PrimValue::bool(if op == BinOp::And { a && b } else { a || b }));
    }
    match (x.value, y.value) {
        (Scalar::Int(a), Scalar::Int(b)) if !x.dtype.is_float() && !y.dtype.is_float() => {
            let dt = x.dtype;
            let unsigned = dt.is_uint() && !dt.is_bool();
            let cmp = |o: std::cmp::Ordering| -> PrimValue {
                use std::cmp::Ordering::*;
                PrimValue::bool(match op {
                    BinOp::Eq => o == Equal,
                    BinOp::Ne => o != Equal,
                    BinOp::Lt => o == Less,
                    BinOp::Le => o != Greater,
                    BinOp::Gt => o == Greater,
                    _ => o != Less,
                })
            };
            if op.is_comparison() {
                return Ok(cmp(if unsigned {
                    (a as u64).cmp(&(b as u64))
                } else {
                    a.cmp(&b)
                }));
            }
            let needs_nonzero = matches!(op, BinOp::Div | BinOp::Mod | BinOp::FloorDiv | BinOp::FloorMod);
            if needs_nonzero && b == 0 {
                return Err(arith(format!("division by zero in {op:?}({a}, {b})")));
            }
            if !op.is_arith() {
                return Err(arith(format!("unsupported operator {op:?}")));
            }
            // 64-bit results that do not fit are errors (a wrapped shape would be
            // silently wrong); narrower dtypes wrap as TIR's arithmetic does.
            let u64s = unsigned && dt.bits >= 64;
            let r = int_op(op, a, b, u64s).ok_or_else(|| {
                arith(format!(
                    "integer overflow in {op:?}({}, {}) of {dt}",
                    if u64s { (a as u64).to_string() } else { a.to_string() },
                    if u64s { (b as u64).to_string() } else { b.to_string() }
                ))
            })?;
            Ok(int_of(dt, r))
        }
        _ => {
            let (a, b) = (x.as_f64(), y.as_f64());
            let dt = if x.dtype.is_float() { x.dtype } else { y.dtype };
            if let Some(r) = op.compare_floats(a, b) {
                return Ok(PrimValue::bool(r));
            }
            let r = match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div => a / b,
                BinOp::Mod => a % b,
                BinOp::FloorDiv => (a / b).floor(),
                BinOp::FloorMod => a - (a / b).floor() * b,
                BinOp::Min => a.min(b),
                BinOp::Max => a.max(b),
                _ => return Err(arith(format!("unsupported operator {op:?}"))),
            };
            let _ = result;
            Ok(cast(PrimValue::float(r, dt), dt))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(v: i64) -> PrimExpr {
        PrimExpr::int(v)
    }

    #[test]
    fn integer_division_semantics() {
        let env = ShapeEnv::default();
        let b = |op, a, c| eval_int(&PrimExpr::binary(op, i(a), i(c)), &env).unwrap();
        assert_eq!(b(BinOp::FloorDiv, -7, 2), -4);
        assert_eq!(b(BinOp::FloorMod, -7, 2), 1);
        assert_eq!(b(BinOp::FloorMod, 7, -2), -1);
        assert_eq!(b(BinOp::Div, -7, 2), -3);
        assert_eq!(b(BinOp::Mod, -7, 2), -1);
        assert_eq!(b(BinOp::Min, 3, -2), -2);
        assert_eq!(b(BinOp::Max, 3, -2), 3);
        assert!(matches!(
            eval_prim(&PrimExpr::binary(BinOp::FloorDiv, i(1), i(0)), &env),
            Err(EngineError::Arith(_))
        ));
    }

    #[test]
    fn variables_select_and_wrapping() {
        let n = TirVar::new("n", DataType::INT64);
        let mut env = ShapeEnv::default();
        let e = PrimExpr::select(
            PrimExpr::binary(BinOp::Lt, n.to_expr(), i(4)),
            n.to_expr() * i(10),
            n.to_expr() - i(1),
        );
        assert!(matches!(eval_prim(&e, &env), Err(EngineError::UnboundShapeVar(name)) if name == "n"));
        env.insert(n.clone(), PrimValue::int64(3));
        assert_eq!(eval_int(&e, &env).unwrap(), 30);
        env.insert(n, PrimValue::int64(9));
        assert_eq!(eval_int(&e, &env).unwrap(), 8);
        let wrapped = PrimExpr::int_of(127, DataType::INT8) + PrimExpr::int_of(1, DataType::INT8);
        assert_eq!(eval_int(&wrapped, &env).unwrap(), -128);
        let c = PrimExpr::float_of(2.7, DataType::FLOAT32).cast(DataType::INT64);
        assert_eq!(eval_int(&c, &env).unwrap(), 2);
    }

    #[test]
    fn intrinsic_calls() {
        let env = ShapeEnv::default();
        let call = |op: Intrinsic, args: Vec<PrimExpr>| {
            let dt = args.first().map_or(DataType::INT64, PrimExpr::dtype);
            eval_prim(&PrimExpr::intrinsic_call(op, dt, args), &env)
        };
        let int = |op, args| call(op, args).unwrap().as_f64() as i64;
        assert_eq!(int(Intrinsic::IfThenElse, vec![i(0), i(5), i(7)]), 7);
        assert_eq!(int(Intrinsic::IfThenElse, vec![i(1), i(5), i(7)]), 5);
        assert_eq!(int(Intrinsic::Abs, vec![i(-4)]), 4);
        assert_eq!(int(Intrinsic::Truncdiv, vec![i(-7), i(2)]), -3);
        assert_eq!(int(Intrinsic::Floormod, vec![i(-7), i(2)]), 1);
        assert_eq!(int(Intrinsic::ShiftLeft, vec![i(3), i(2)]), 12);
        assert_eq!(int(Intrinsic::ShiftRight, vec![i(-8), i(1)]), -4);
        assert_eq!(int(Intrinsic::BitwiseAnd, vec![i(6), i(3)]), 2);
        assert_eq!(int(Intrinsic::BitwiseOr, vec![i(6), i(3)]), 7);
        assert_eq!(int(Intrinsic::BitwiseXor, vec![i(6), i(3)]), 5);
        assert_eq!(int(Intrinsic::BitwiseNot, vec![i(0)]), -1);
        let lim = |op| eval_prim(&PrimExpr::intrinsic_call(op, DataType::INT8, vec![]), &env).unwrap();
        assert_eq!(lim(Intrinsic::MaxValue).as_f64(), 127.0);
        assert_eq!(lim(Intrinsic::MinValue).as_f64(), -128.0);
        // `min`/`max` spelled as calls.
        let mn = PrimExpr::call("min", DataType::INT64, vec![i(3), i(-2)]);
        assert_eq!(eval_int(&mn, &env).unwrap(), -2);
        // Arity and unsupported intrinsics are errors, not panics.
        assert!(matches!(call(Intrinsic::Abs, vec![]), Err(EngineError::Arith(_))));
        assert!(matches!(call(Intrinsic::Exp2, vec![i(1)]), Err(EngineError::Arith(_))));
        // Float comparisons follow IEEE (NaN compares unequal).
        let nan = PrimExpr::float_of(f64::NAN, DataType::FLOAT32);
        let ne = PrimExpr::binary(BinOp::Ne, nan.clone(), nan.clone());
        let eq = PrimExpr::binary(BinOp::Eq, nan.clone(), nan);
        assert_eq!(eval_int(&ne, &env).unwrap(), 1);
        assert_eq!(eval_int(&eq, &env).unwrap(), 0);
    }

    #[test]
    fn integer_overflow_is_an_error_not_a_panic() {
        let n = TirVar::new("n", DataType::INT64);
        let mut env = ShapeEnv::default();
        env.insert(n.clone(), PrimValue::int64(2));
        let min = || i(i64::MIN);
        let minus_one = n.to_expr() - i(3);
        let overflow = |e: PrimExpr| {
            let r = eval_prim(&e, &env);
            assert!(
                matches!(&r, Err(EngineError::Arith(m)) if m.contains("overflow")),
                "{e:?}: {r:?}"
            );
        };
        // `T.floordiv(-2**63, n - 3)` with n = 2.
        overflow(PrimExpr::binary(BinOp::FloorDiv, min(), minus_one.clone()));
        overflow(PrimExpr::binary(BinOp::Div, min(), minus_one.clone()));
        overflow(PrimExpr::binary(BinOp::Mod, min(), minus_one.clone()));
        overflow(PrimExpr::intrinsic_call(
            Intrinsic::Floordiv,
            DataType::INT64,
            vec![min(), minus_one.clone()],
        ));
        overflow(min() - i(1));
        overflow(i(i64::MAX) + n.to_expr());
        overflow(i(i64::MAX / 2 + 1) * n.to_expr());
        overflow(PrimExpr::intrinsic_call(Intrinsic::Abs, DataType::INT64, vec![min()]));
        let u = |v: i64| PrimExpr::int_of(v, DataType::new(relax_ir::TypeCode::UInt, 64, 1));
        overflow(u(1) - u(2));
        overflow(u(-1) + u(1));
        // floormod(-2**63, -1) is 0; narrow dtypes wrap.
        let fm = PrimExpr::binary(BinOp::FloorMod, min(), minus_one);
        assert_eq!(eval_int(&fm, &env).unwrap(), 0);
        let u32s = PrimExpr::int_of(3, DataType::UINT32) - PrimExpr::int_of(5, DataType::UINT32);
        assert_eq!(eval_int(&u32s, &env).unwrap(), 4294967294);
        assert_eq!(
            eval_int(&(u(-1) - u(1)), &env).unwrap(),
            -2,
            "uint64 max - 1 (as i64 bits)"
        );
    }

    #[test]
    fn shifts_by_the_width_or_more_shift_every_bit_out() {
        let env = ShapeEnv::default();
        let sh = |op, v: i64, s: i64, dt: DataType| {
            let e = PrimExpr::intrinsic_call(op, dt, vec![PrimExpr::int_of(v, dt), PrimExpr::int_of(s, dt)]);
            eval_int(&e, &env).unwrap()
        };
        let (l, r) = (Intrinsic::ShiftLeft, Intrinsic::ShiftRight);
        assert_eq!(sh(l, -8, 8, DataType::INT8), 0);
        assert_eq!(sh(l, -8, 9, DataType::INT8), 0);
        assert_eq!(sh(l, -8, 1, DataType::INT8), -16);
        assert_eq!(sh(r, -8, 8, DataType::INT8), -1);
        assert_eq!(sh(r, 8, 100, DataType::INT8), 0);
        assert_eq!(sh(r, -8, 2, DataType::INT8), -2);
        assert_eq!(sh(r, 200, 8, DataType::UINT8), 0);
        assert_eq!(sh(r, 200, 3, DataType::UINT8), 25);
        assert_eq!(sh(l, 1, 64, DataType::INT64), 0);
        assert_eq!(sh(l, 1, -1, DataType::INT64), 0);
        assert_eq!(sh(r, -5, 64, DataType::INT64), -1);
    }
}
