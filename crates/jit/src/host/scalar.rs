//! Compiling TIR expressions into closures over a frame of scalar slots.

#[allow(unused_imports)]
use super::*;

/// Round an `f64` to the precision of `dtype`.
#[inline]
pub(super) fn round_to(dtype: DataType, v: f64) -> f64 {
    match (dtype.code, dtype.bits) {
        (TypeCode::Float, 32) => v as f32 as f64,
        (TypeCode::Float, 16) => half::f16::from_f64(v).to_f64(),
        (TypeCode::BFloat, 16) => bf16_from_f64(v).to_f64(),
        _ => match dtype.mini_float() {
            Some(f) => f.decode(f.encode(v)),
            None => v,
        },
    }
}

/// `v` rounded to `bfloat16` once (to nearest, ties to even; see
/// [`relax_ir::dtype::bf16_bits_from_f64`]).
pub(crate) fn bf16_from_f64(v: f64) -> half::bf16 {
    half::bf16::from_bits(relax_ir::dtype::bf16_bits_from_f64(v))
}

pub(super) fn unsupported(env: &Env, msg: impl Into<String>) -> JitError {
    JitError::Unsupported {
        func: env.func.clone(),
        msg: msg.into(),
    }
}

pub(crate) fn compile_i_pub(env: &mut Env, e: &PrimExpr) -> Result<IFn> {
    compile_i(env, e)
}
pub(crate) fn compile_f_pub(env: &mut Env, e: &PrimExpr) -> Result<FFn> {
    compile_f(env, e)
}

/// Compile an expression as an integer (ints and bools) closure.
pub(super) fn compile_i(env: &mut Env, e: &PrimExpr) -> Result<IFn> {
    match compile(env, e)? {
        CE::I(f) => Ok(f),
        CE::F(f) => Ok(Box::new(move |fr| f(fr) as i64)),
    }
}

/// [`compile_i`] for a value of dtype `dt`: a float becomes a `bool` as `!= 0`
/// (as `T.Cast("bool", x)`), not by truncation.
fn compile_as(env: &mut Env, e: &PrimExpr, dt: DataType) -> Result<IFn> {
    if dt.is_bool() && e.dtype().is_float() {
        let f = compile_f(env, e)?;
        return Ok(Box::new(move |fr| (f(fr) != 0.0) as i64));
    }
    compile_i(env, e)
}

pub(super) fn compile_f(env: &mut Env, e: &PrimExpr) -> Result<FFn> {
    match compile(env, e)? {
        CE::F(f) => Ok(f),
        CE::I(f) => {
            let unsigned64 = e.dtype().is_uint() && e.dtype().bits == 64;
            Ok(Box::new(
                move |fr| if unsigned64 { f(fr) as u64 as f64 } else { f(fr) as f64 },
            ))
        }
    }
}

macro_rules! fbin {
    ($fa:ident, $fb:ident, $dt:ident, |$x:ident, $y:ident| $body:expr) => {
        Box::new(move |fr: &mut Frame| {
            let $x = $fa(fr);
            let $y = $fb(fr);
            round_to($dt, $body)
        })
    };
}
macro_rules! fcmp {
    ($fa:ident, $fb:ident, |$x:ident, $y:ident| $body:expr) => {
        Box::new(move |fr: &mut Frame| {
            let $x = $fa(fr);
            let $y = $fb(fr);
            ($body) as i64
        })
    };
}

pub(super) fn compile(env: &mut Env, e: &PrimExpr) -> Result<CE> {
    use PrimExprKind as K;
    let dt = e.dtype();
    if dt.lanes > 1 {
        return Err(unsupported(env, format!("vector type {dt} on the host")));
    }
    Ok(match e.kind() {
        K::IntImm { value, dtype } => {
            let v = wrap_int(*value, *dtype);
            CE::I(Box::new(move |_| v))
        }
        K::FloatImm { value, dtype } => {
            let v = round_to(*dtype, *value);
            CE::F(Box::new(move |_| v))
        }
        K::StringImm(s) => return Err(unsupported(env, format!("string value \"{s}\" in an expression"))),
        K::Var(v) => {
            let (is_f, slot) = env.var_slot(v);
            if is_f {
                CE::F(Box::new(move |fr| fr.floats[slot]))
            } else {
                CE::I(Box::new(move |fr| fr.ints[slot]))
            }
        }
        K::Cast { dtype, value } => {
            let to = *dtype;
            let from = value.dtype();
            if to.is_float() {
                let f = compile_f(env, value)?;
                CE::F(Box::new(move |fr| round_to(to, f(fr))))
            } else if to.is_bool() {
                if from.is_float() {
                    let f = compile_f(env, value)?;
                    CE::I(Box::new(move |fr| (f(fr) != 0.0) as i64))
                } else {
                    let f = compile_i(env, value)?;
                    CE::I(Box::new(move |fr| (f(fr) != 0) as i64))
                }
            } else if from.is_float() {
                let f = compile_f(env, value)?;
                CE::I(Box::new(move |fr| float_to_int(f(fr), to)))
            } else {
                let f = compile_i(env, value)?;
                CE::I(Box::new(move |fr| wrap_int(f(fr), to)))
            }
        }
        K::Binary { op, a, b } => {
            let adt = a.dtype();
            if adt.is_float() || b.dtype().is_float() {
                let fa = compile_f(env, a)?;
                let fb = compile_f(env, b)?;
                // A bool first operand with a float second: computed (and rounded)
                // in the float's dtype, then a bool as `!= 0` (never truncated).
                let bool_of = !adt.is_float();
                let d = if bool_of { b.dtype() } else { adt };
                let ce = match op {
                    BinOp::Add => CE::F(fbin!(fa, fb, d, |x, y| x + y)),
                    BinOp::Sub => CE::F(fbin!(fa, fb, d, |x, y| x - y)),
                    BinOp::Mul => CE::F(fbin!(fa, fb, d, |x, y| x * y)),
                    BinOp::Div => CE::F(fbin!(fa, fb, d, |x, y| x / y)),
                    BinOp::Mod => CE::F(fbin!(fa, fb, d, |x, y| x % y)),
                    BinOp::FloorDiv => CE::F(fbin!(fa, fb, d, |x, y| (x / y).floor())),
                    BinOp::FloorMod => CE::F(fbin!(fa, fb, d, |x, y| x - (x / y).floor() * y)),
                    BinOp::Min => CE::F(fbin!(fa, fb, d, |x, y| math::fmin(x, y))),
                    BinOp::Max => CE::F(fbin!(fa, fb, d, |x, y| math::fmax(x, y))),
                    BinOp::Eq => CE::I(fcmp!(fa, fb, |x, y| x == y)),
                    BinOp::Ne => CE::I(fcmp!(fa, fb, |x, y| x != y)),
                    BinOp::Lt => CE::I(fcmp!(fa, fb, |x, y| x < y)),
                    BinOp::Le => CE::I(fcmp!(fa, fb, |x, y| x <= y)),
                    BinOp::Gt => CE::I(fcmp!(fa, fb, |x, y| x > y)),
                    BinOp::Ge => CE::I(fcmp!(fa, fb, |x, y| x >= y)),
                    BinOp::And => CE::I(fcmp!(fa, fb, |x, y| x != 0.0 && y != 0.0)),
                    BinOp::Or => CE::I(fcmp!(fa, fb, |x, y| x != 0.0 || y != 0.0)),
                };
                match ce {
                    CE::F(f) if bool_of && adt.is_bool() => CE::I(Box::new(move |fr| (f(fr) != 0.0) as i64)),
                    ce => ce,
                }
            } else {
                let fa = compile_i(env, a)?;
                let fb = compile_i(env, b)?;
                let op = *op;
                // A bool first operand with an integer second: computed in the
                // integer's dtype (unsigned order, wrap-around), then `!= 0`.
                let bool_of = adt.is_bool() && !b.dtype().is_bool();
                let adt = if bool_of { b.dtype() } else { adt };
                let rdt = if op.is_comparison() || op.is_logical() {
                    DataType::BOOL
                } else {
                    adt
                };
                let unsigned = adt.is_uint() && !adt.is_bool();
                let ce = match op {
                    BinOp::Add => CE::I(Box::new(move |fr| wrap_int(fa(fr).wrapping_add(fb(fr)), rdt))),
                    BinOp::Sub => CE::I(Box::new(move |fr| wrap_int(fa(fr).wrapping_sub(fb(fr)), rdt))),
                    BinOp::Mul => CE::I(Box::new(move |fr| wrap_int(fa(fr).wrapping_mul(fb(fr)), rdt))),
                    BinOp::Lt if !unsigned => CE::I(Box::new(move |fr| (fa(fr) < fb(fr)) as i64)),
                    BinOp::Ge if !unsigned => CE::I(Box::new(move |fr| (fa(fr) >= fb(fr)) as i64)),
                    _ if unsigned && adt.bits == 64 => CE::I(Box::new(move |fr| {
                        let (x, y) = (fa(fr) as u64, fb(fr) as u64);
                        u64_binop(op, x, y) as i64
                    })),
                    _ => CE::I(Box::new(move |fr| {
                        let (x, y) = (fa(fr), fb(fr));
                        wrap_int(int_binop(op, x, y).unwrap_or(0), rdt)
                    })),
                };
                match ce {
                    CE::I(f) if bool_of && rdt != DataType::BOOL => CE::I(Box::new(move |fr| (f(fr) != 0) as i64)),
                    ce => ce,
                }
            }
        }
        K::Not(a) => {
            let f = compile_i(env, a)?;
            CE::I(Box::new(move |fr| (f(fr) == 0) as i64))
        }
        K::Select { cond, t, f } => {
            let c = compile_i(env, cond)?;
            if dt.is_float() {
                let (ft, ff) = (compile_f(env, t)?, compile_f(env, f)?);
                CE::F(Box::new(move |fr| {
                    let (x, y) = (ft(fr), ff(fr));
                    if c(fr) != 0 {
                        x
                    } else {
                        y
                    }
                }))
            } else {
                let (ft, ff) = (compile_as(env, t, dt)?, compile_as(env, f, dt)?);
                CE::I(Box::new(move |fr| {
                    let (x, y) = (ft(fr), ff(fr));
                    if c(fr) != 0 {
                        x
                    } else {
                        y
                    }
                }))
            }
        }
        K::Call { op, dtype, args } => match op.intrinsic() {
            Some(op) => compile_call(env, op, *dtype, args)?,
            None => return Err(unsupported(env, format!("intrinsic T.{op}"))),
        },
        K::BufferLoad { buffer, indices } => {
            if indices.len() != 1 {
                return Err(JitError::InvalidIr(format!(
                    "unflattened load from `{}`",
                    buffer.name()
                )));
            }
            let slot = env.buf_slot(buffer);
            let idx = compile_i(env, &indices[0])?;
            let bdt = buffer.dtype();
            let name = buffer.name().to_string();
            let oob = move |fr: &mut Frame, i: i64| {
                fr.status.fail(JitError::InvalidIr(format!(
                    "out-of-bounds read of `{name}` at {i} (size {})",
                    fr.bufs[slot].len
                )));
            };
            macro_rules! ld {
                ($t:ty, $conv:expr, $kind:ident) => {
                    CE::$kind(Box::new(move |fr| {
                        let i = idx(fr);
                        let b = fr.bufs[slot];
                        if i < 0 || i as usize >= b.len {
                            oob(fr, i);
                            return Default::default();
                        }
                        // SAFETY: bounds checked above; storage is 8-byte aligned.
                        let v = unsafe { *(b.ptr as *const $t).add(i as usize) };
                        $conv(v)
                    }))
                };
            }
            match (bdt.code, bdt.bits) {
                (TypeCode::Float, 32) => ld!(f32, |v: f32| v as f64, F),
                (TypeCode::Float, 64) => ld!(f64, |v: f64| v, F),
                (TypeCode::Float, 16) => ld!(u16, |v: u16| half::f16::from_bits(v).to_f64(), F),
                (TypeCode::BFloat, 16) => ld!(u16, |v: u16| half::bf16::from_bits(v).to_f64(), F),
                (TypeCode::UInt, 1) => ld!(u8, |v: u8| (v != 0) as i64, I),
                (TypeCode::Int, 8) => ld!(i8, |v: i8| v as i64, I),
                (TypeCode::UInt, 8) => ld!(u8, |v: u8| v as i64, I),
                // One element per byte, sign- or zero-extended (wrapped again: the
                // bytes may come from outside).
                (TypeCode::Int | TypeCode::UInt, 2 | 4) => {
                    ld!(u8, move |v: u8| crate::expr::wrap_int(v as i8 as i64, bdt), I)
                }
                _ if bdt.mini_float().is_some() => {
                    let Some(f) = bdt.mini_float() else {
                        return Err(unsupported(env, "a float format"));
                    };
                    ld!(u8, move |v: u8| f.decode(v), F)
                }
                (TypeCode::Int, 16) => ld!(i16, |v: i16| v as i64, I),
                (TypeCode::UInt, 16) => ld!(u16, |v: u16| v as i64, I),
                (TypeCode::Int, 32) => ld!(i32, |v: i32| v as i64, I),
                (TypeCode::UInt, 32) => ld!(u32, |v: u32| v as i64, I),
                (TypeCode::Int | TypeCode::UInt, 64) => ld!(i64, |v: i64| v, I),
                _ => {
                    return Err(JitError::UnsupportedDtype {
                        dtype: bdt,
                        context: "on the host".into(),
                    })
                }
            }
        }
        K::Let { var, value, body } => {
            let (is_f, slot) = env.var_slot(var);
            let body = compile(env, body)?;
            let set: SFn = if is_f {
                let v = compile_f(env, value)?;
                Box::new(move |fr| fr.floats[slot] = v(fr))
            } else {
                let v = compile_i(env, value)?;
                Box::new(move |fr| fr.ints[slot] = v(fr))
            };
            match body {
                CE::I(b) => CE::I(Box::new(move |fr| {
                    set(fr);
                    b(fr)
                })),
                CE::F(b) => CE::F(Box::new(move |fr| {
                    set(fr);
                    b(fr)
                })),
            }
        }
        K::Ramp { .. } | K::Broadcast { .. } => return Err(unsupported(env, "vector expressions on the host")),
    })
}

pub(super) fn u64_binop(op: BinOp, x: u64, y: u64) -> u64 {
    if let Some(c) = op.compare(x.cmp(&y)) {
        return c as u64;
    }
    match op {
        BinOp::Div | BinOp::FloorDiv => x.checked_div(y).unwrap_or(x),
        BinOp::Mod | BinOp::FloorMod => x.checked_rem(y).unwrap_or(0),
        BinOp::Min => x.min(y),
        BinOp::Max => x.max(y),
        _ => int_binop(op, x as i64, y as i64).unwrap_or(0) as u64,
    }
}

/// Float to integer conversion: saturating, NaN to 0 (as WGSL does for 32-bit).
pub(super) fn float_to_int(v: f64, to: DataType) -> i64 {
    let bits = to.bits.min(64) as u32;
    if to.is_uint() {
        let max = if bits >= 64 {
            u64::MAX as f64
        } else {
            ((1u128 << bits) - 1) as f64
        };
        if v.is_nan() || v <= 0.0 {
            0
        } else if v >= max {
            if bits >= 64 {
                -1
            } else {
                ((1u128 << bits) - 1) as i64
            }
        } else {
            v as u64 as i64
        }
    } else {
        let max = ((1u128 << (bits - 1)) - 1) as i64;
        let min = -max - 1;
        if v.is_nan() {
            0
        } else {
            (v as i64).clamp(min, max)
        }
    }
}

pub(super) fn compile_call(env: &mut Env, op: I, dtype: DataType, args: &[PrimExpr]) -> Result<CE> {
    let arity = |n: usize| crate::error::check_arity(op, args, n);
    let half = dtype.bits == 16 && matches!(dtype.code, TypeCode::Float | TypeCode::BFloat);
    // `float32` `erf` is the `f32` function native code calls (within an ulp of the
    // exact value; the `f64` formula is only within 1.5e-7).
    let erf32 = op == I::Erf && dtype == DataType::FLOAT32;
    if let (true, Some(g)) = (half || erf32, math::unary_f32(op)) {
        // Half-precision math in `f32`, rounded once (as native code, and as TVM's LLVM
        // code promotes it); the argument is a value of the dtype, exact in `f32`.
        arity(1)?;
        let a = compile_f(env, &args[0])?;
        let d = dtype;
        return Ok(CE::F(Box::new(move |fr| round_to(d, f64::from(g(a(fr) as f32))))));
    }
    if let Some(f) = math::unary_f64(op) {
        arity(1)?;
        let a = compile_f(env, &args[0])?;
        let d = dtype;
        return Ok(CE::F(Box::new(move |fr| round_to(d, f(a(fr))))));
    }
    Ok(match op {
        I::IfThenElse => {
            arity(3)?;
            let c = compile_i(env, &args[0])?;
            if dtype.is_float() {
                let (t, f) = (compile_f(env, &args[1])?, compile_f(env, &args[2])?);
                CE::F(Box::new(move |fr| if c(fr) != 0 { t(fr) } else { f(fr) }))
            } else {
                let (t, f) = (compile_as(env, &args[1], dtype)?, compile_as(env, &args[2], dtype)?);
                CE::I(Box::new(move |fr| if c(fr) != 0 { t(fr) } else { f(fr) }))
            }
        }
        I::Likely | I::TvmThreadInvariant | I::Assume => {
            arity(1)?;
            compile(env, &args[0])?
        }
        I::Abs | I::Fabs if !dtype.is_float() => {
            arity(1)?;
            let a = compile_i(env, &args[0])?;
            CE::I(Box::new(move |fr| wrap_int(a(fr).wrapping_abs(), dtype)))
        }
        I::Isnan | I::Isinf | I::Isfinite => {
            arity(1)?;
            if !args[0].dtype().is_float() {
                let v = (op == I::Isfinite) as i64;
                return Ok(CE::I(Box::new(move |_| v)));
            }
            let a = compile_f(env, &args[0])?;
            match op {
                I::Isnan => CE::I(Box::new(move |fr| a(fr).is_nan() as i64)),
                I::Isinf => CE::I(Box::new(move |fr| a(fr).is_infinite() as i64)),
                _ => CE::I(Box::new(move |fr| a(fr).is_finite() as i64)),
            }
        }
        I::Pow | I::Powf | I::Atan2 | I::Fmod | I::Copysign | I::Hypot | I::Nextafter | I::Ldexp => {
            arity(2)?;
            let (a, b) = (compile_f(env, &args[0])?, compile_f(env, &args[1])?);
            let Some(f) = binary_f64(op) else {
                return Err(unsupported(env, format!("intrinsic T.{op}")));
            };
            CE::F(Box::new(move |fr| round_to(dtype, f(a(fr), b(fr)))))
        }
        I::Truncdiv | I::Truncmod | I::Floordiv | I::Floormod => {
            arity(2)?;
            compile(env, &division_call(op, args))?
        }
        I::MaxValue | I::MinValue => {
            let v = math::limit(dtype, op == I::MaxValue).ok_or_else(|| JitError::UnsupportedDtype {
                dtype,
                context: format!("for T.{op}"),
            })?;
            match v {
                math::Scalar::I(i) => CE::I(Box::new(move |_| i)),
                math::Scalar::F(f) => CE::F(Box::new(move |_| f)),
            }
        }
        I::Infinity => CE::F(Box::new(|_| f64::INFINITY)),
        I::BitwiseAnd | I::BitwiseOr | I::BitwiseXor | I::ShiftLeft | I::ShiftRight => {
            arity(2)?;
            let (a, b) = (compile_i(env, &args[0])?, compile_i(env, &args[1])?);
            let o = op;
            let unsigned = dtype.is_uint();
            let bits = dtype.bits as u32;
            CE::I(Box::new(move |fr| {
                let (x, y) = (a(fr), b(fr));
                let r = match o {
                    I::BitwiseAnd => x & y,
                    I::BitwiseOr => x | y,
                    I::BitwiseXor => x ^ y,
                    // A shift by the bit width or more (or negative) shifts every
                    // bit out: 0, or the sign for a signed right shift.
                    I::ShiftLeft if y as u64 >= bits as u64 => 0,
                    I::ShiftLeft => x.wrapping_shl(y as u32),
                    _ if unsigned && y as u64 >= bits as u64 => 0,
                    _ if unsigned => ((x as u64 & mask(bits)) >> (y as u32)) as i64,
                    _ => x >> (y as u64).min(63),
                };
                wrap_int(r, dtype)
            }))
        }
        I::BitwiseNot => {
            arity(1)?;
            let a = compile_i(env, &args[0])?;
            if dtype.is_bool() {
                // The logical not (TVM and the GPU), not `!x != 0`.
                CE::I(Box::new(move |fr| (a(fr) == 0) as i64))
            } else {
                CE::I(Box::new(move |fr| wrap_int(!a(fr), dtype)))
            }
        }
        I::Reinterpret => {
            arity(1)?;
            let from = args[0].dtype();
            let a = compile(env, &args[0])?;
            match (a, from.bits, dtype.bits) {
                (CE::F(f), 32, 32) if dtype.is_integer() => {
                    CE::I(Box::new(move |fr| wrap_int((f(fr) as f32).to_bits() as i64, dtype)))
                }
                (CE::I(f), 32, 32) if dtype.is_float() => {
                    CE::F(Box::new(move |fr| f32::from_bits(f(fr) as u32) as f64))
                }
                _ => return Err(unsupported(env, format!("T.reinterpret from {from} to {dtype}"))),
            }
        }
        _ => return Err(unsupported(env, format!("intrinsic T.{op}"))),
    })
}

/// `T.truncdiv(a, b)` (and `truncmod`, `floordiv`, `floormod`) as a binary
/// expression.
pub(super) fn division_call(op: I, args: &[PrimExpr]) -> PrimExpr {
    let bop = op.division_op().unwrap_or(BinOp::FloorMod);
    PrimExpr::binary(bop, args[0].clone(), args[1].clone())
}

/// The binary float intrinsics (computed in `f64`).
pub(super) fn binary_f64(op: I) -> Option<fn(f64, f64) -> f64> {
    Some(match op {
        I::Pow | I::Powf => math::pow,
        I::Atan2 => f64::atan2,
        I::Fmod => |x, y| x % y,
        I::Copysign => f64::copysign,
        I::Hypot => f64::hypot,
        I::Ldexp => |x, y| x * (2f64).powf(y),
        I::Nextafter => |x: f64, y: f64| if x == y { y } else { x },
        _ => return None,
    })
}

pub(super) fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}
