//! Translation of TIR expressions, mirroring the interpreter's evaluation order
//! and semantics (`host/scalar.rs`): integer division by zero yields the dividend,
//! modulo by zero 0, `min`/`max` skip NaN, float-to-int casts saturate.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, BlockArg, InstBuilder, Value};
use relax_ir::tir::{BinOp, Intrinsic as I, PrimExpr, PrimExprKind};
use relax_ir::DataType;

use super::gen::{fcmp64, icmp64, nonzero, ty_of, Gen};
use super::shims;
use super::Ty;
use crate::error::{JitError, Result};
use crate::expr::wrap_int;
use crate::math;

fn fty(dt: DataType) -> Ty {
    ty_of(dt).filter(|t| *t != Ty::I).unwrap_or(Ty::F64)
}

impl Gen<'_, '_> {
    /// Evaluate `e`: its value and representation.
    pub(super) fn expr(&mut self, e: &PrimExpr) -> Result<(Value, Ty)> {
        use PrimExprKind as K;
        let dt = e.dtype();
        if dt.lanes > 1 {
            return Err(self.unsupported(format!("vector type {dt} on the host")));
        }
        if dt.mini_float().is_some() {
            // Rounded to the format by the closures (`round_to`), not in registers.
            return Err(self.unsupported(format!("{dt} values in native host code")));
        }
        Ok(match e.kind() {
            K::IntImm { value, dtype } => (self.iconst(wrap_int(*value, *dtype)), Ty::I),
            K::FloatImm { value, dtype } => self.fconst(*value, fty(*dtype)),
            K::StringImm(s) => return Err(self.unsupported(format!("string value \"{s}\" in an expression"))),
            K::Var(v) => match self.vars.get(&v.id()) {
                Some((v, ty)) => (*v, *ty),
                None => {
                    return Err(JitError::InvalidIr(format!(
                        "variable `{}` has no value here",
                        v.name()
                    )))
                }
            },
            K::Cast { dtype, value } => self.cast(*dtype, value)?,
            K::Binary { op, a, b } => {
                if a.dtype().is_float() || b.dtype().is_float() {
                    let t = if a.dtype().is_float() {
                        fty(a.dtype())
                    } else {
                        fty(b.dtype())
                    };
                    let x = self.float(a, t)?;
                    let y = self.float(b, t)?;
                    let x_const = matches!(a.kind(), K::FloatImm { value, .. } if !value.is_nan());
                    let (v, ty) = self.float_binop(*op, (x, x_const), y, t);
                    if dt.is_bool() && ty != Ty::I {
                        // A bool first operand with a float second: computed in the
                        // float, then a bool as `!= 0` (never truncated).
                        let (z, _) = self.fconst(0.0, ty);
                        (fcmp64(self.b, FloatCC::NotEqual, v, z), Ty::I)
                    } else {
                        (v, ty)
                    }
                } else {
                    let x = self.int(a)?;
                    let y = self.int(b)?;
                    // A bool first operand with an integer second: computed in the
                    // integer's dtype (unsigned order, wrap-around), then `!= 0`.
                    let (adt, bdt) = (a.dtype(), b.dtype());
                    let odt = if adt.is_bool() && !bdt.is_bool() { bdt } else { adt };
                    let v = self.int_binop(*op, x, y, b, odt);
                    let v = if odt != adt && !op.is_comparison() && !op.is_logical() {
                        self.wrap(v, adt)
                    } else {
                        v
                    };
                    (v, Ty::I)
                }
            }
            K::Not(a) => {
                let x = self.int(a)?;
                let z = self.zero();
                (icmp64(self.b, IntCC::Equal, x, z), Ty::I)
            }
            K::Select { cond, t, f } => {
                let ty = if dt.is_float() { fty(dt) } else { Ty::I };
                let x = self.typed_as(t, ty, dt)?;
                let y = self.typed_as(f, ty, dt)?;
                let c = self.int(cond)?;
                let c = nonzero(self.b, c);
                (self.b.ins().select(c, x, y), ty)
            }
            K::Call { op, dtype, args } => match op.intrinsic() {
                Some(op) => self.call(op, *dtype, args)?,
                None => return Err(self.unsupported(format!("intrinsic T.{op}"))),
            },
            K::BufferLoad { buffer, indices } => self.load(buffer, indices)?,
            K::Let { var, value, body } => self.let_expr(var, value, body)?,
            K::Ramp { .. } | K::Broadcast { .. } => return Err(self.unsupported("vector expressions on the host")),
        })
    }

    fn zero(&mut self) -> Value {
        self.iconst(0)
    }

    fn fconst(&mut self, v: f64, t: Ty) -> (Value, Ty) {
        match t {
            Ty::F32 => (self.b.ins().f32const(v as f32), t),
            Ty::F16 => (self.b.ins().f32const(half::f16::from_f64(v).to_f32()), t),
            Ty::BF16 => (self.b.ins().f32const(crate::host::scalar::bf16_from_f64(v).to_f32()), t),
            _ => (self.b.ins().f64const(v), Ty::F64),
        }
    }

    /// [`Gen::typed`] for a value of dtype `dt`: a float becomes a `bool` as `!= 0`.
    fn typed_as(&mut self, e: &PrimExpr, ty: Ty, dt: DataType) -> Result<Value> {
        if ty == Ty::I && dt.is_bool() && e.dtype().is_float() {
            let v = self.expr(e)?;
            return Ok(self.conv_to(v, ty, e.dtype(), dt));
        }
        self.typed(e, ty)
    }

    /// `e` converted to `ty` (integers as `int`, floats as `float`).
    fn typed(&mut self, e: &PrimExpr, ty: Ty) -> Result<Value> {
        if ty == Ty::I {
            self.int(e)
        } else {
            self.float(e, ty)
        }
    }

    fn cast(&mut self, to: DataType, value: &PrimExpr) -> Result<(Value, Ty)> {
        let from = value.dtype();
        if to.is_float() {
            let t = fty(to);
            return Ok((self.float(value, t)?, t));
        }
        if to.is_bool() {
            let v = if from.is_float() {
                let t = fty(from);
                let x = self.float(value, t)?;
                let (z, _) = self.fconst(0.0, t);
                fcmp64(self.b, FloatCC::NotEqual, x, z)
            } else {
                let x = self.int(value)?;
                let z = self.zero();
                icmp64(self.b, IntCC::NotEqual, x, z)
            };
            return Ok((v, Ty::I));
        }
        if !from.is_float() {
            let x = self.int(value)?;
            return Ok((self.wrap(x, to), Ty::I));
        }
        let x = self.float(value, fty(from))?;
        let bits = to.bits.min(64) as u32;
        let v = if to.is_uint() {
            let v = self.b.ins().fcvt_to_uint_sat(types::I64, x);
            if bits < 64 {
                let max = self.iconst(((1u128 << bits) - 1) as i64);
                self.b.ins().umin(v, max)
            } else {
                v
            }
        } else {
            let v = self.b.ins().fcvt_to_sint_sat(types::I64, x);
            if bits < 64 {
                let max = ((1u128 << (bits - 1)) - 1) as i64;
                let (hi, lo) = (self.iconst(max), self.iconst(-max - 1));
                let v = self.b.ins().smin(v, hi);
                self.b.ins().smax(v, lo)
            } else {
                v
            }
        };
        Ok((v, Ty::I))
    }

    fn float_binop(&mut self, op: BinOp, (x, x_const): (Value, bool), y: Value, t: Ty) -> (Value, Ty) {
        let ins = self.b.ins();
        let v = match op {
            BinOp::Add => ins.fadd(x, y),
            BinOp::Sub => ins.fsub(x, y),
            BinOp::Mul => ins.fmul(x, y),
            BinOp::Div => ins.fdiv(x, y),
            BinOp::Min | BinOp::Max => self.fminmax(op == BinOp::Max, x, y, x_const),
            BinOp::Mod | BinOp::FloorDiv | BinOp::FloorMod => {
                // In f64, then rounded, as the interpreter does.
                let (x, y) = (self.widen(x, t), self.widen(y, t));
                let r = match op {
                    BinOp::Mod => {
                        let f = shims::binary_f64_addr(I::Fmod).unwrap_or(0);
                        self.call_f64x2(f, x, y)
                    }
                    BinOp::FloorDiv => {
                        let q = self.b.ins().fdiv(x, y);
                        self.b.ins().floor(q)
                    }
                    _ => {
                        let q = self.b.ins().fdiv(x, y);
                        let q = self.b.ins().floor(q);
                        let p = self.b.ins().fmul(q, y);
                        self.b.ins().fsub(x, p)
                    }
                };
                return (self.narrow(r, t), t);
            }
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                return (fcmp64(self.b, float_cc(op), x, y), Ty::I);
            }
            BinOp::And | BinOp::Or => {
                let (z, _) = self.fconst(0.0, t);
                let a = self.b.ins().fcmp(FloatCC::NotEqual, x, z);
                let b = self.b.ins().fcmp(FloatCC::NotEqual, y, z);
                let c = if op == BinOp::And {
                    self.b.ins().band(a, b)
                } else {
                    self.b.ins().bor(a, b)
                };
                return (self.b.ins().uextend(types::I64, c), Ty::I);
            }
        };
        // `float16`/`bfloat16`: the `f32` result rounded once more is the
        // correctly rounded result (the `f32` significand is over twice as wide).
        let v = if matches!(op, BinOp::Min | BinOp::Max) {
            v
        } else {
            self.round_half(v, t)
        };
        (v, t)
    }

    /// `min`/`max` ignoring a NaN operand (Rust's `f64::min`/`max`), as compares
    /// and selects; the NaN test of `x` is left out when `x` is a constant.
    fn fminmax(&mut self, max: bool, x: Value, y: Value, x_const: bool) -> Value {
        let cc = if max { FloatCC::GreaterThan } else { FloatCC::LessThan };
        // y wins when strictly better; a NaN y never wins.
        let better = self.b.ins().fcmp(cc, y, x);
        let r = self.b.ins().select(better, y, x);
        if x_const {
            return r;
        }
        let xn = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        self.b.ins().select(xn, y, r)
    }

    pub(super) fn widen(&mut self, v: Value, t: Ty) -> Value {
        if t == Ty::F64 {
            v
        } else {
            self.b.ins().fpromote(types::F64, v)
        }
    }

    /// The `f64` `v` rounded to the representation `t` (once, as the interpreter
    /// rounds: `float16`/`bfloat16` through a shim, since rounding through `f32`
    /// could round twice).
    pub(super) fn narrow(&mut self, v: Value, t: Ty) -> Value {
        let f = match t {
            Ty::F32 => return self.b.ins().fdemote(types::F32, v),
            Ty::F16 => shims::f64_to_f16 as *const () as usize,
            Ty::BF16 => shims::f64_to_bf16 as *const () as usize,
            _ => return v,
        };
        let sig = self.sig("f64->f32", &[types::F64], types::F32);
        let fv = self.iconst(f as i64);
        let call = self.b.ins().call_indirect(sig, fv, &[v]);
        self.b.inst_results(call)[0]
    }

    fn int_binop(&mut self, op: BinOp, x: Value, y: Value, b: &PrimExpr, adt: DataType) -> Value {
        let u64 = adt.is_uint() && !adt.is_bool() && adt.bits == 64;
        let signed = |cc_s, cc_u| if u64 { cc_u } else { cc_s };
        let ins = self.b.ins();
        let v = match op {
            BinOp::Add => ins.iadd(x, y),
            BinOp::Sub => ins.isub(x, y),
            BinOp::Mul => ins.imul(x, y),
            BinOp::Min if u64 => ins.umin(x, y),
            BinOp::Max if u64 => ins.umax(x, y),
            BinOp::Min => ins.smin(x, y),
            BinOp::Max => ins.smax(x, y),
            BinOp::Div | BinOp::Mod | BinOp::FloorDiv | BinOp::FloorMod => {
                let v = match (u64, b.as_int()) {
                    (true, _) => self.udivmod(op, x, y),
                    (false, Some(c)) if c > 0 => self.divmod_const(op, x, c),
                    _ => self.divmod(op, x, y),
                };
                return self.wrap(v, adt);
            }
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                let cc = match op {
                    BinOp::Eq => IntCC::Equal,
                    BinOp::Ne => IntCC::NotEqual,
                    BinOp::Lt => signed(IntCC::SignedLessThan, IntCC::UnsignedLessThan),
                    BinOp::Le => signed(IntCC::SignedLessThanOrEqual, IntCC::UnsignedLessThanOrEqual),
                    BinOp::Gt => signed(IntCC::SignedGreaterThan, IntCC::UnsignedGreaterThan),
                    _ => signed(IntCC::SignedGreaterThanOrEqual, IntCC::UnsignedGreaterThanOrEqual),
                };
                return icmp64(self.b, cc, x, y);
            }
            BinOp::And | BinOp::Or => {
                let (a, c) = (nonzero(self.b, x), nonzero(self.b, y));
                let r = if op == BinOp::And {
                    self.b.ins().band(a, c)
                } else {
                    self.b.ins().bor(a, c)
                };
                return self.b.ins().uextend(types::I64, r);
            }
        };
        self.wrap(v, adt)
    }

    /// Unsigned 64-bit division: by zero gives the dividend (div) or 0 (mod).
    fn udivmod(&mut self, op: BinOp, x: Value, y: Value) -> Value {
        let z = self.b.ins().icmp_imm_s(IntCC::Equal, y, 0);
        let one = self.iconst(1);
        let d = self.b.ins().select(z, one, y);
        match op {
            BinOp::Div | BinOp::FloorDiv => self.b.ins().udiv(x, d),
            _ => self.b.ins().urem(x, d),
        }
    }

    /// Signed division by a positive constant `c`.
    fn divmod_const(&mut self, op: BinOp, x: Value, c: i64) -> Value {
        let pow2 = c & (c - 1) == 0;
        match op {
            BinOp::FloorDiv if pow2 => self.b.ins().sshr_imm_u(x, c.trailing_zeros() as i64),
            BinOp::FloorMod if pow2 => self.b.ins().band_imm_s(x, c - 1),
            _ => {
                let d = self.iconst(c);
                let (q, r) = (self.b.ins().sdiv(x, d), self.b.ins().srem(x, d));
                let neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, r, 0);
                match op {
                    BinOp::Div => q,
                    BinOp::Mod => r,
                    BinOp::FloorDiv => {
                        let adj = self.b.ins().uextend(types::I64, neg);
                        self.b.ins().isub(q, adj)
                    }
                    _ => {
                        let rc = self.b.ins().iadd_imm_s(r, c);
                        self.b.ins().select(neg, rc, r)
                    }
                }
            }
        }
    }

    /// Signed division (`int_binop`): by zero gives the dividend (div) or 0 (mod),
    /// `MIN / -1` wraps.
    fn divmod(&mut self, op: BinOp, x: Value, y: Value) -> Value {
        let z = self.b.ins().icmp_imm_s(IntCC::Equal, y, 0);
        let m1 = self.b.ins().icmp_imm_s(IntCC::Equal, y, -1);
        let bad = self.b.ins().bor(z, m1);
        let one = self.iconst(1);
        let d = self.b.ins().select(bad, one, y);
        let q = self.b.ins().sdiv(x, d);
        let nx = self.b.ins().ineg(x);
        let q = self.b.ins().select(m1, nx, q);
        let r = self.b.ins().srem(x, d);
        if matches!(op, BinOp::Div | BinOp::Mod) {
            return if op == BinOp::Div { q } else { r };
        }
        // Floor: adjust when the remainder is nonzero and its sign differs from y's.
        let rnz = self.b.ins().icmp_imm_s(IntCC::NotEqual, r, 0);
        let s = self.b.ins().bxor(r, y);
        let sd = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, s, 0);
        let adj = self.b.ins().band(rnz, sd);
        if op == BinOp::FloorDiv {
            let a = self.b.ins().uextend(types::I64, adj);
            self.b.ins().isub(q, a)
        } else {
            let ry = self.b.ins().iadd(r, y);
            self.b.ins().select(adj, ry, r)
        }
    }

    pub(super) fn call_f64x2(&mut self, f: usize, x: Value, y: Value) -> Value {
        let sig = self.sig("f64x2", &[types::I64, types::F64, types::F64], types::F64);
        let (tramp, fv) = (
            self.iconst(shims::call_f64x2 as *const () as usize as i64),
            self.iconst(f as i64),
        );
        let call = self.b.ins().call_indirect(sig, tramp, &[fv, x, y]);
        self.b.inst_results(call)[0]
    }

    /// `op` of the `f32` value `x` through its single-precision function.
    fn call_f32(&mut self, op: I, x: Value) -> Result<Value> {
        let f = shims::unary_f32_addr(op).ok_or_else(|| self.unsupported(format!("intrinsic T.{op}")))?;
        let sig = self.sig("f32t", &[types::I64, types::F32], types::F32);
        let (tramp, fv) = (
            self.iconst(shims::call_f32 as *const () as usize as i64),
            self.iconst(f as i64),
        );
        let call = self.b.ins().call_indirect(sig, tramp, &[fv, x]);
        Ok(self.b.inst_results(call)[0])
    }

    /// `op` of `x` (of type `t`) computed in `f64` by the shim, narrowed back to `t`.
    fn call_f64(&mut self, op: I, x: Value, t: Ty) -> Result<Value> {
        let f = shims::unary_f64_addr(op).ok_or_else(|| self.unsupported(format!("intrinsic T.{op}")))?;
        let x = self.widen(x, t);
        let sig = self.sig("f64", &[types::I64, types::F64], types::F64);
        let (tramp, fv) = (
            self.iconst(shims::call_f64 as *const () as usize as i64),
            self.iconst(f as i64),
        );
        let call = self.b.ins().call_indirect(sig, tramp, &[fv, x]);
        let r = self.b.inst_results(call)[0];
        Ok(self.narrow(r, t))
    }

    fn call_unary(&mut self, op: I, x: Value, t: Ty) -> Result<Value> {
        if matches!(t, Ty::F16 | Ty::BF16) {
            let ins = self.b.ins();
            // Exact on values of the dtype, or (sqrt) correctly rounded after
            // rounding the `f32` result again; the rest in `f64`, rounded once.
            let v = match op {
                I::Fabs | I::Abs => return Ok(ins.fabs(x)),
                I::Floor => return Ok(ins.floor(x)),
                I::Ceil => return Ok(ins.ceil(x)),
                I::Trunc => return Ok(ins.trunc(x)),
                I::Nearbyint => return Ok(ins.nearest(x)),
                I::Sqrt => ins.sqrt(x),
                _ if shims::unary_f32_addr(op).is_some() => {
                    // In `f32`, as TVM's LLVM code computes half-precision math, then
                    // rounded once (the interpreter does the same).
                    let r = self.call_f32(op, x)?;
                    return Ok(self.round_half(r, t));
                }
                _ => return self.call_f64(op, x, t),
            };
            return Ok(self.round_half(v, t));
        }
        if t == Ty::F32 && shims::unary_f32_addr(op).is_some() {
            return self.call_f32(op, x);
        }
        let ins = self.b.ins();
        Ok(match op {
            I::Sqrt => ins.sqrt(x),
            I::Fabs | I::Abs => ins.fabs(x),
            I::Floor => ins.floor(x),
            I::Ceil => ins.ceil(x),
            I::Trunc => ins.trunc(x),
            I::Nearbyint => ins.nearest(x),
            I::Rsqrt => {
                let s = ins.sqrt(x);
                let (one, _) = self.fconst(1.0, t);
                self.b.ins().fdiv(one, s)
            }
            _ => return self.call_f64(op, x, t),
        })
    }

    fn call(&mut self, op: I, dtype: DataType, args: &[PrimExpr]) -> Result<(Value, Ty)> {
        let arity = |n: usize| crate::error::check_arity(op, args, n);
        if math::unary_f64(op).is_some() {
            arity(1)?;
            let t = fty(dtype);
            let x = self.float(&args[0], t)?;
            return Ok((self.call_unary(op, x, t)?, t));
        }
        Ok(match op {
            I::IfThenElse => {
                arity(3)?;
                self.if_then_else(dtype, args)?
            }
            I::Likely | I::TvmThreadInvariant | I::Assume => {
                arity(1)?;
                self.expr(&args[0])?
            }
            I::Isnan | I::Isinf | I::Isfinite => {
                arity(1)?;
                if !args[0].dtype().is_float() {
                    return Ok((self.iconst((op == I::Isfinite) as i64), Ty::I));
                }
                let t = fty(args[0].dtype());
                let x = self.float(&args[0], t)?;
                let v = match op {
                    I::Isnan => fcmp64(self.b, FloatCC::Unordered, x, x),
                    _ => {
                        let a = self.b.ins().fabs(x);
                        let (inf, _) = self.fconst(f64::INFINITY, t);
                        let cc = if op == I::Isinf {
                            FloatCC::Equal
                        } else {
                            FloatCC::LessThan
                        };
                        fcmp64(self.b, cc, a, inf)
                    }
                };
                (v, Ty::I)
            }
            I::Truncdiv | I::Truncmod | I::Floordiv | I::Floormod => {
                arity(2)?;
                self.expr(&crate::host::division_call(op, args))?
            }
            I::MaxValue | I::MinValue => match math::limit(dtype, op == I::MaxValue) {
                Some(math::Scalar::I(i)) => (self.iconst(i), Ty::I),
                Some(math::Scalar::F(f)) => self.fconst(f, fty(dtype)),
                None => return Err(self.unsupported(format!("T.{op} of {dtype}"))),
            },
            I::Infinity => self.fconst(f64::INFINITY, fty(dtype)),
            I::BitwiseAnd | I::BitwiseOr | I::BitwiseXor | I::ShiftLeft | I::ShiftRight => {
                arity(2)?;
                let (x, y) = (self.int(&args[0])?, self.int(&args[1])?);
                (self.bitwise(op, dtype, x, y), Ty::I)
            }
            I::BitwiseNot => {
                arity(1)?;
                let x = self.int(&args[0])?;
                if dtype.is_bool() {
                    // The logical not (TVM and the GPU), not `!x != 0`.
                    let z = self.zero();
                    (icmp64(self.b, IntCC::Equal, x, z), Ty::I)
                } else {
                    let n = self.b.ins().bnot(x);
                    (self.wrap(n, dtype), Ty::I)
                }
            }
            I::Reinterpret => {
                arity(1)?;
                self.reinterpret(dtype, &args[0])?
            }
            I::Pow | I::Powf if args.len() == 2 && matches!(float_const(&args[1]), Some(2.0 | 3.0)) => {
                // A square or a cube, multiplied out in `f64` as `math::pow` does.
                let t = fty(dtype);
                let x = self.float(&args[0], Ty::F64)?;
                let sq = self.b.ins().fmul(x, x);
                let r = if float_const(&args[1]) == Some(3.0) {
                    self.b.ins().fmul(sq, x)
                } else {
                    sq
                };
                (self.narrow(r, t), t)
            }
            I::Pow | I::Powf if args.len() == 2 => {
                // An exponent read at run time (an ONNX initializer kept as a
                // parameter: RMSNorm's `x ** 2`): a square is multiplied out inline,
                // as `math::pow` would return it; any other exponent calls it.
                let Some(f) = shims::binary_f64_addr(op) else {
                    return Err(self.unsupported(format!("intrinsic T.{op}")));
                };
                let t = fty(dtype);
                let x = self.float(&args[0], Ty::F64)?;
                let y = self.float(&args[1], Ty::F64)?;
                let two = self.b.ins().f64const(2.0);
                let square = self.b.ins().fcmp(FloatCC::Equal, y, two);
                let (sq, call, join) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
                let r = self.b.append_block_param(join, types::F64);
                self.b.ins().brif(square, sq, &[], call, &[]);
                self.b.switch_to_block(sq);
                let m = self.b.ins().fmul(x, x);
                self.b.ins().jump(join, &[BlockArg::Value(m)]);
                self.b.switch_to_block(call);
                let c = self.call_f64x2(f, x, y);
                self.b.ins().jump(join, &[BlockArg::Value(c)]);
                self.b.switch_to_block(join);
                (self.narrow(r, t), t)
            }
            _ => {
                let Some(f) = shims::binary_f64_addr(op) else {
                    return Err(self.unsupported(format!("intrinsic T.{op}")));
                };
                arity(2)?;
                let t = fty(dtype);
                let x = self.float(&args[0], Ty::F64)?;
                let y = self.float(&args[1], Ty::F64)?;
                let r = self.call_f64x2(f, x, y);
                (self.narrow(r, t), t)
            }
        })
    }

    fn if_then_else(&mut self, dtype: DataType, args: &[PrimExpr]) -> Result<(Value, Ty)> {
        let ty = if dtype.is_float() { fty(dtype) } else { Ty::I };
        let c = self.int(&args[0])?;
        let (t, f, join) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        let clty = super::gen::clif(ty);
        let r = self.b.append_block_param(join, clty);
        self.b.ins().brif(c, t, &[], f, &[]);
        for (blk, e) in [(t, &args[1]), (f, &args[2])] {
            self.b.switch_to_block(blk);
            let v = self.typed_as(e, ty, dtype)?;
            self.b.ins().jump(join, &[BlockArg::Value(v)]);
        }
        self.b.switch_to_block(join);
        Ok((r, ty))
    }

    /// Bitwise operators; a shift by the bit width or more (or by a negative
    /// amount) shifts every bit out: 0, or the sign for a signed right shift.
    fn bitwise(&mut self, op: I, dtype: DataType, x: Value, y: Value) -> Value {
        let bits = (dtype.bits as i64).clamp(1, 64);
        let big = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, y, bits);
        let zero = self.zero();
        let r = match op {
            I::BitwiseAnd => self.b.ins().band(x, y),
            I::BitwiseOr => self.b.ins().bor(x, y),
            I::BitwiseXor => self.b.ins().bxor(x, y),
            I::ShiftLeft => {
                let v = self.b.ins().ishl(x, y);
                self.b.ins().select(big, zero, v)
            }
            _ if dtype.is_uint() => {
                let m = self.iconst(super::super::scalar::mask(bits as u32) as i64);
                let xm = self.b.ins().band(x, m);
                let v = self.b.ins().ushr(xm, y);
                self.b.ins().select(big, zero, v)
            }
            _ => {
                let top = self.iconst(63);
                let s = self.b.ins().select(big, top, y);
                self.b.ins().sshr(x, s)
            }
        };
        self.wrap(r, dtype)
    }

    fn reinterpret(&mut self, dtype: DataType, arg: &PrimExpr) -> Result<(Value, Ty)> {
        let from = arg.dtype();
        let (v, t) = self.expr(arg)?;
        let fl = super::gen::flags();
        match (t, from.bits, dtype.bits) {
            (Ty::F32, 32, 32) if dtype.is_integer() => {
                let i = self.b.ins().bitcast(types::I32, fl, v);
                let i = self.b.ins().uextend(types::I64, i);
                Ok((self.wrap(i, dtype), Ty::I))
            }
            (Ty::I, 32, 32) if dtype.is_float() => {
                let i = self.b.ins().ireduce(types::I32, v);
                Ok((self.b.ins().bitcast(types::F32, fl, i), Ty::F32))
            }
            _ => Err(self.unsupported(format!("T.reinterpret from {from} to {dtype}"))),
        }
    }
}

/// The IEEE comparison of a TIR comparison operator (ordered, except `!=`).
pub(super) fn float_cc(op: BinOp) -> FloatCC {
    match op {
        BinOp::Eq => FloatCC::Equal,
        BinOp::Ne => FloatCC::NotEqual,
        BinOp::Lt => FloatCC::LessThan,
        BinOp::Le => FloatCC::LessThanOrEqual,
        BinOp::Gt => FloatCC::GreaterThan,
        _ => FloatCC::GreaterThanOrEqual,
    }
}

/// The value of a float constant (through casts of constants), if `e` is one.
fn float_const(e: &PrimExpr) -> Option<f64> {
    match e.kind() {
        PrimExprKind::FloatImm { value, .. } => Some(*value),
        PrimExprKind::IntImm { value, .. } => Some(*value as f64),
        PrimExprKind::Cast { dtype, value } if dtype.is_float() => float_const(value),
        _ => None,
    }
}
