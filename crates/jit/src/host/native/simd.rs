//! Innermost `float32` loops of the form `out[i] = f(loads...)` (unit-stride store,
//! unit-stride or invariant loads, arithmetic, `min`/`max`), whose bounds were all
//! checked before the loop, run four lanes at a time, the remainder one at a time.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, Endianness, InstBuilder, MemFlagsData, Value};
use relax_ir::tir::{BinOp, Buffer, PrimExpr, PrimExprKind, Stmt, TirVar};
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
            _ => false,
        }
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
