//! Innermost `float32`, `float16` and `bfloat16` loops of the form
//! `out[i] = f(loads...)` (unit-stride store, unit-stride or invariant loads,
//! arithmetic, `min`/`max`, selects, unary math), whose bounds were all checked
//! before the loop, run four lanes at a time, the remainder one at a time.
//!
//! Every lane computes the bits the scalar code computes: half-precision lanes
//! are widened to `f32` exactly, every arithmetic result is rounded to the dtype
//! (round to nearest, ties to even, as `half.rs` does one value at a time) and
//! narrowed exactly on the store; math functions run through four-lane versions of
//! the same `f32` functions (`shims::unary_f32x4_addr`).

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, Endianness, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value};
use relax_ir::tir::{BinOp, Buffer, Intrinsic, PrimExpr, PrimExprKind, Stmt, TirVar};
use relax_ir::DataType;

use super::gen::{flags, restore, ty_of, Gen};
use super::hoist::{key, stride_of};
use super::{shims, Ty};
use crate::error::Result;
use crate::expr::{loads_buffer, uses_var};

const LANES: i64 = 4;

/// The representation of a dtype whose values can run in `F32X4` lanes.
fn lane_ty(dt: DataType) -> Option<Ty> {
    ty_of(dt).filter(|t| matches!(t, Ty::F32 | Ty::F16 | Ty::BF16))
}

/// Whether the unary intrinsic `op` of a `t` value runs in lanes (as `call_unary`
/// computes it one value at a time).
fn unary_lanes_ok(op: Intrinsic, t: Ty) -> bool {
    use Intrinsic as I;
    matches!(op, I::Fabs | I::Abs | I::Sqrt)
        || (op == I::Rsqrt && t == Ty::F32)
        || shims::unary_f32x4_addr(op).is_some()
}

impl Gen<'_, '_> {
    /// Whether `e` can be evaluated four iterations of `var` at a time.
    fn lanes_ok(&self, e: &PrimExpr, var: &TirVar) -> bool {
        use PrimExprKind as K;
        let Some(t) = lane_ty(e.dtype()) else {
            return false;
        };
        if !uses_var(e, var) {
            return true;
        }
        match e.kind() {
            K::BufferLoad { indices, buffer } => {
                lane_ty(buffer.dtype()).is_some()
                    && indices.len() == 1
                    && stride_of(&indices[0], var) == Some(1)
                    && self.is_unchecked(&indices[0])
            }
            K::Binary { op, a, b } => {
                matches!(
                    op,
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Min | BinOp::Max
                ) && self.lanes_ok(a, var)
                    && self.lanes_ok(b, var)
            }
            K::Cast { value, .. } => self.lanes_ok(value, var),
            K::Select { cond, t, f } => self.mask_ok(cond, var) && self.lanes_ok(t, var) && self.lanes_ok(f, var),
            K::Call { args, .. } if e.as_intrinsic() == Some(Intrinsic::IfThenElse) && args.len() == 3 => {
                self.mask_ok(&args[0], var) && self.lanes_ok(&args[1], var) && self.lanes_ok(&args[2], var)
            }
            K::Call { args, .. } => match (e.as_intrinsic(), args.as_slice()) {
                (Some(op), [x]) => {
                    crate::math::unary_f64(op).is_some() && unary_lanes_ok(op, t) && self.lanes_ok(x, var)
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether the condition `e` can be evaluated as a four-lane mask: comparisons
    /// of `float32` lane expressions, combined with `and`/`or`/`not`, possibly as the
    /// legalized `0 < T.Cast("int64", cond)` (or `!= 0`, `> 0`).
    fn mask_ok(&self, e: &PrimExpr, var: &TirVar) -> bool {
        use PrimExprKind as K;
        match e.kind() {
            K::Binary { op, a, b } if op.is_comparison() => {
                if let Some(m) = cast_nonzero(*op, a, b) {
                    return self.mask_ok(m, var);
                }
                lane_ty(a.dtype()).is_some()
                    && lane_ty(b.dtype()).is_some()
                    && (uses_var(a, var) || uses_var(b, var))
                    && self.lanes_ok(a, var)
                    && self.lanes_ok(b, var)
            }
            K::Binary { op, a, b } if op.is_logical() => self.mask_ok(a, var) && self.mask_ok(b, var),
            K::Not(a) => self.mask_ok(a, var),
            _ => false,
        }
    }

    /// The lane mask (all ones where true) of a condition checked by `mask_ok`.
    fn mask(&mut self, e: &PrimExpr, var: &TirVar) -> Result<Value> {
        use PrimExprKind as K;
        Ok(match e.kind() {
            K::Binary { op, a, b } if op.is_comparison() => {
                if let Some(m) = cast_nonzero(*op, a, b) {
                    return self.mask(m, var);
                }
                let t = lane_ty(a.dtype()).unwrap_or(Ty::F32);
                let (x, y) = (self.lanes_as(a, var, t)?, self.lanes_as(b, var, t)?);
                self.b.ins().fcmp(super::expr::float_cc(*op), x, y)
            }
            K::Binary { op, a, b } => {
                let (x, y) = (self.mask(a, var)?, self.mask(b, var)?);
                if *op == BinOp::And {
                    self.b.ins().band(x, y)
                } else {
                    self.b.ins().bor(x, y)
                }
            }
            K::Not(a) => {
                let x = self.mask(a, var)?;
                self.b.ins().bnot(x)
            }
            _ => unreachable!("checked by mask_ok"),
        })
    }

    /// `cond ? t : f` per lane.
    fn lane_select(&mut self, cond: &PrimExpr, t: &PrimExpr, f: &PrimExpr, var: &TirVar, ty: Ty) -> Result<Value> {
        let m = self.mask(cond, var)?;
        let (x, y) = (self.lanes_as(t, var, ty)?, self.lanes_as(f, var, ty)?);
        let m = self.b.ins().bitcast(types::F32X4, bits(), m);
        Ok(self.b.ins().bitselect(m, x, y))
    }

    /// The store `buf[index] = value` when the loop over `var` can run in lanes.
    fn lane_store<'s>(&self, body: &'s Stmt, var: &TirVar) -> Option<(&'s Buffer, &'s PrimExpr, &'s PrimExpr)> {
        let Stmt::BufferStore {
            buffer, value, indices, ..
        } = body
        else {
            return None;
        };
        let [index] = indices.as_slice() else { return None };
        let ok = lane_ty(buffer.dtype()).is_some()
            && stride_of(index, var) == Some(1)
            && self.is_unchecked(index)
            && !loads_buffer(value, buffer)
            && uses_var(value, var)
            && self.lanes_ok(value, var);
        ok.then_some((buffer, index, value))
    }

    /// Run `for var in lo..hi { body }` in lanes when it can; `false` (nothing
    /// emitted) when it cannot.
    pub(super) fn lane_loop(&mut self, var: &TirVar, lo: Value, hi: Value, body: &Stmt) -> Result<bool> {
        let Some((buffer, index, value)) = self.lane_store(body, var) else {
            return Ok(false);
        };
        let iv = self.var(types::I64, lo);
        let (head, inner, tail) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let i = self.b.use_var(iv);
        let end = self.b.ins().iadd_imm_s(i, LANES);
        let c = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, end, hi);
        self.b.ins().brif(c, inner, &[], tail, &[]);
        self.b.switch_to_block(inner);
        let prev = self.vars.insert(var.id(), (i, Ty::I));
        let t = lane_ty(buffer.dtype()).unwrap_or(Ty::F32);
        if t == Ty::F32 {
            let v = self.lanes_as(value, var, t)?;
            let a = self.lane_addr(buffer, index)?;
            self.b.ins().store(flags(), v, a, 0);
        } else {
            // Four 16-bit patterns: packed into the low 64 bits, stored at once.
            let h = if t == Ty::F16 {
                let u = self.lanes_unrounded(value, var, t)?;
                self.f16_bits_rne_x4(u)
            } else {
                let v = self.lanes_as(value, var, t)?;
                self.half_to_bits_x4(v, t)
            };
            let a = self.lane_addr(buffer, index)?;
            let h = self.b.ins().unarrow(h, h);
            let h = self.b.ins().bitcast(types::I64X2, bits(), h);
            let h = self.b.ins().extractlane(h, 0);
            self.b.ins().store(flags(), h, a, 0);
        }
        restore(&mut self.vars, var.id(), prev);
        let next = self.b.ins().iadd_imm_s(i, LANES);
        self.b.def_var(iv, next);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(tail);
        let rest = self.b.use_var(iv);
        self.plain_loop(var, rest, hi, body)?;
        Ok(true)
    }

    fn lane_addr(&mut self, buffer: &Buffer, index: &PrimExpr) -> Result<Value> {
        let p = self.bufs[&buffer.id()].0;
        let i = self.int(index)?;
        let off = self.b.ins().imul_imm_s(i, i64::from(buffer.dtype().bits / 8));
        Ok(self.b.ins().iadd(p, off))
    }

    /// Four lanes of `e` (checked by `lanes_ok`) converted to the representation
    /// `to` (as `Gen::conv` converts one value).
    fn lanes_as(&mut self, e: &PrimExpr, var: &TirVar, to: Ty) -> Result<Value> {
        let from = lane_ty(e.dtype()).unwrap_or(Ty::F32);
        let v = self.lanes(e, var)?;
        Ok(if from == to || to == Ty::F32 {
            v
        } else {
            self.round_half_x4(v, to)
        })
    }

    /// Four `f32` lanes whose rounding to `to` (`F16` or `BF16`) is
    /// `lanes_as(e, var, to)`: an arithmetic result, cast or math function of `to`
    /// before its final rounding (which the store then does with the narrowing).
    fn lanes_unrounded(&mut self, e: &PrimExpr, var: &TirVar, to: Ty) -> Result<Value> {
        use PrimExprKind as K;
        if lane_ty(e.dtype()) != Some(to) || !uses_var(e, var) {
            return self.lanes_as(e, var, to);
        }
        match e.kind() {
            K::Binary { op, a, b }
                if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div)
                    && lane_ty(a.dtype()) == Some(to) =>
            {
                let (x, y) = (self.lanes_as(a, var, to)?, self.lanes_as(b, var, to)?);
                let ins = self.b.ins();
                Ok(match op {
                    BinOp::Add => ins.fadd(x, y),
                    BinOp::Sub => ins.fsub(x, y),
                    BinOp::Mul => ins.fmul(x, y),
                    _ => ins.fdiv(x, y),
                })
            }
            K::Cast { value, .. } => self.lanes(value, var),
            K::Call { args, .. } if args.len() == 1 => {
                let op = e
                    .as_intrinsic()
                    .ok_or_else(|| self.unsupported("a call in a vector loop"))?;
                let x = self.lanes_as(&args[0], var, to)?;
                self.lane_unary(op, x, to, false)
            }
            _ => self.lanes_as(e, var, to),
        }
    }

    /// Four lanes of `e` (checked by `lanes_ok`) for `var` .. `var + 3`, each an
    /// `f32` holding a value of `e`'s dtype.
    fn lanes(&mut self, e: &PrimExpr, var: &TirVar) -> Result<Value> {
        use PrimExprKind as K;
        let t = lane_ty(e.dtype()).unwrap_or(Ty::F32);
        if !uses_var(e, var) {
            let s = self.float(e, t)?;
            return Ok(self.b.ins().splat(types::F32X4, s));
        }
        Ok(match e.kind() {
            K::BufferLoad { buffer, indices } => {
                let a = self.lane_addr(buffer, &indices[0])?;
                if t == Ty::F32 {
                    self.b.ins().load(types::F32X4, flags(), a, 0)
                } else {
                    let h = self.b.ins().uload16x4(flags(), a, 0);
                    self.half_from_bits_x4(h, t)
                }
            }
            K::Cast { value, .. } => self.lanes_as(value, var, t)?,
            K::Select { cond, t: x, f } => self.lane_select(cond, x, f, var, t)?,
            K::Call { args, .. } if args.len() == 3 => self.lane_select(&args[0], &args[1], &args[2], var, t)?,
            K::Call { args, .. } => {
                let op = e
                    .as_intrinsic()
                    .ok_or_else(|| self.unsupported("a call in a vector loop"))?;
                let x = self.lanes_as(&args[0], var, t)?;
                self.lane_unary(op, x, t, true)?
            }
            K::Binary { op, a, b } => {
                let t = lane_ty(a.dtype()).unwrap_or(Ty::F32);
                let (x, y) = (self.lanes_as(a, var, t)?, self.lanes_as(b, var, t)?);
                let ins = self.b.ins();
                let v = match op {
                    BinOp::Add => ins.fadd(x, y),
                    BinOp::Sub => ins.fsub(x, y),
                    BinOp::Mul => ins.fmul(x, y),
                    BinOp::Div => ins.fdiv(x, y),
                    _ => return Ok(self.lane_minmax(*op == BinOp::Max, x, y)),
                };
                self.round_half_x4(v, t)
            }
            _ => unreachable!("checked by lanes_ok"),
        })
    }

    /// The unary intrinsic `op` (checked by `unary_lanes_ok`) of four `t` lanes;
    /// with `round` false, before the rounding of its `f32` result to `t`.
    fn lane_unary(&mut self, op: Intrinsic, x: Value, t: Ty, round: bool) -> Result<Value> {
        use Intrinsic as I;
        let t = if round { t } else { Ty::F32 };
        match op {
            I::Fabs | I::Abs => return Ok(self.b.ins().fabs(x)),
            I::Sqrt => {
                let r = self.b.ins().sqrt(x);
                return Ok(self.round_half_x4(r, t));
            }
            I::Rsqrt => {
                let s = self.b.ins().sqrt(x);
                let one = self.b.ins().f32const(1.0);
                let one = self.b.ins().splat(types::F32X4, one);
                return Ok(self.b.ins().fdiv(one, s));
            }
            _ => {}
        }
        let (tramp, f) = shims::unary_f32x4_addr(op).ok_or_else(|| self.unsupported(format!("intrinsic T.{op}")))?;
        let slot = self
            .b
            .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 4));
        let p = self.b.ins().stack_addr(types::I64, slot, 0);
        self.b.ins().store(flags(), x, p, 0);
        let sig = self.sig("f32x4", &[types::I64, types::I64], types::I64);
        let (tv, fv) = (self.iconst(tramp as i64), self.iconst(f as i64));
        self.b.ins().call_indirect(sig, tv, &[fv, p]);
        let r = self.b.ins().load(types::F32X4, flags(), p, 0);
        Ok(self.round_half_x4(r, t))
    }

    /// NaN-ignoring `min`/`max` per lane (as `fminmax`).
    fn lane_minmax(&mut self, max: bool, x: Value, y: Value) -> Value {
        let cc = if max { FloatCC::GreaterThan } else { FloatCC::LessThan };
        let better = self.b.ins().fcmp(cc, y, x);
        let better = self.b.ins().bitcast(types::F32X4, bits(), better);
        let r = self.b.ins().bitselect(better, y, x);
        let xn = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        let xn = self.b.ins().bitcast(types::F32X4, bits(), xn);
        self.b.ins().bitselect(xn, y, r)
    }

    fn is_unchecked(&self, index: &PrimExpr) -> bool {
        self.unchecked.contains(&key(index))
    }
}

/// The flags of a register `bitcast` (it takes only an endianness).
fn bits() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

/// The boolean `m` when `a op b` is `0 < T.Cast(int, m)`, `T.Cast(int, m) > 0` or
/// `T.Cast(int, m) != 0` (either side) for a `bool` `m`: how legalization turns a
/// boolean tensor into a condition.
fn cast_nonzero<'e>(op: BinOp, a: &'e PrimExpr, b: &'e PrimExpr) -> Option<&'e PrimExpr> {
    use PrimExprKind as K;
    let zero = |e: &PrimExpr| matches!(e.kind(), K::IntImm { value: 0, .. });
    let bool_of = |e: &'e PrimExpr| match e.kind() {
        K::Cast { value, dtype } if dtype.is_integer() && value.dtype() == DataType::BOOL => Some(value),
        _ => None,
    };
    match op {
        BinOp::Lt if zero(a) => bool_of(b),
        BinOp::Gt if zero(b) => bool_of(a),
        BinOp::Ne if zero(a) => bool_of(b),
        BinOp::Ne if zero(b) => bool_of(a),
        _ => None,
    }
}
