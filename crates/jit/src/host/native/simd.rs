//! Innermost `float32` loops of the form `out[i] = f(loads...)` (unit-stride store,
//! unit-stride or invariant loads, arithmetic, `min`/`max`), whose bounds were all
//! checked before the loop, run four lanes at a time, the remainder one at a time.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, Endianness, InstBuilder, MemFlagsData, Value};
use relax_ir::tir::{BinOp, Buffer, Intrinsic, PrimExpr, PrimExprKind, Stmt, TirVar};
use relax_ir::DataType;

use super::gen::{flags, restore, Gen};
use super::hoist::{key, stride_of};
use super::Ty;
use crate::error::Result;
use crate::expr::{loads_buffer, uses_var};

const LANES: i64 = 4;

impl Gen<'_, '_> {
    /// Whether `e` can be evaluated four iterations of `var` at a time.
    fn lanes_ok(&self, e: &PrimExpr, var: &TirVar) -> bool {
        use PrimExprKind as K;
        if e.dtype() != DataType::FLOAT32 {
            return false;
        }
        if !uses_var(e, var) {
            return true;
        }
        match e.kind() {
            K::BufferLoad { indices, .. } => {
                indices.len() == 1 && stride_of(&indices[0], var) == Some(1) && self.is_unchecked(&indices[0])
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
                a.dtype() == DataType::FLOAT32
                    && b.dtype() == DataType::FLOAT32
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
                let (x, y) = (self.lanes(a, var)?, self.lanes(b, var)?);
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
    fn lane_select(&mut self, cond: &PrimExpr, t: &PrimExpr, f: &PrimExpr, var: &TirVar) -> Result<Value> {
        let m = self.mask(cond, var)?;
        let (x, y) = (self.lanes(t, var)?, self.lanes(f, var)?);
        let bits = MemFlagsData::new().with_endianness(Endianness::Little);
        let m = self.b.ins().bitcast(types::F32X4, bits, m);
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
        let ok = buffer.dtype() == DataType::FLOAT32
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
        let v = self.lanes(value, var)?;
        let a = self.lane_addr(buffer, index)?;
        self.b.ins().store(flags(), v, a, 0);
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
        let off = self.b.ins().imul_imm_s(i, 4);
        Ok(self.b.ins().iadd(p, off))
    }

    /// Four lanes of `e` (checked by `lanes_ok`) for `var` .. `var + 3`.
    fn lanes(&mut self, e: &PrimExpr, var: &TirVar) -> Result<Value> {
        use PrimExprKind as K;
        if !uses_var(e, var) {
            let s = self.float(e, Ty::F32)?;
            return Ok(self.b.ins().splat(types::F32X4, s));
        }
        Ok(match e.kind() {
            K::BufferLoad { buffer, indices } => {
                let a = self.lane_addr(buffer, &indices[0])?;
                self.b.ins().load(types::F32X4, flags(), a, 0)
            }
            K::Cast { value, .. } => self.lanes(value, var)?,
            K::Select { cond, t, f } => self.lane_select(cond, t, f, var)?,
            K::Call { args, .. } => self.lane_select(&args[0], &args[1], &args[2], var)?,
            K::Binary { op, a, b } => {
                let (x, y) = (self.lanes(a, var)?, self.lanes(b, var)?);
                let ins = self.b.ins();
                match op {
                    BinOp::Add => ins.fadd(x, y),
                    BinOp::Sub => ins.fsub(x, y),
                    BinOp::Mul => ins.fmul(x, y),
                    BinOp::Div => ins.fdiv(x, y),
                    _ => self.lane_minmax(*op == BinOp::Max, x, y),
                }
            }
            _ => unreachable!("checked by lanes_ok"),
        })
    }

    /// NaN-ignoring `min`/`max` per lane (as `fminmax`).
    fn lane_minmax(&mut self, max: bool, x: Value, y: Value) -> Value {
        let cc = if max { FloatCC::GreaterThan } else { FloatCC::LessThan };
        let bits = MemFlagsData::new().with_endianness(Endianness::Little);
        let better = self.b.ins().fcmp(cc, y, x);
        let better = self.b.ins().bitcast(types::F32X4, bits, better);
        let r = self.b.ins().bitselect(better, y, x);
        let xn = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        let xn = self.b.ins().bitcast(types::F32X4, bits, xn);
        self.b.ins().bitselect(xn, y, r)
    }

    fn is_unchecked(&self, index: &PrimExpr) -> bool {
        self.unchecked.contains(&key(index))
    }
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
