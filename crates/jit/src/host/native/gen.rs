//! Translation of lowered TIR statements into Cranelift IR.
//!
//! Values follow the interpreter's representation: integers and booleans are
//! `i64` wrapped to their dtype after every operation; `float32` stays `f32` and
//! `float64` is `f64`. Every buffer access is bounds-checked; a failed check (or
//! assertion, or allocation) leaves the function through one exit block that
//! stores the offending index and size and returns the failure's site number.

use relax_ir::tir::Intrinsic;
use std::collections::{HashMap, HashSet};

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, AbiParam, Block, BlockArg, InstBuilder, MemFlagsData, SigRef, Type, Value};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, Variable};
use relax_ir::tir::{Buffer, For, PrimExpr, PrimExprKind, Stmt, TirVar};
use relax_ir::{DataType, TypeCode};

use super::{Site, Ty};
use crate::error::{JitError, Result};
use crate::host::Env;
use crate::tensor::host_elem_bytes;

/// The state of one function's translation.
pub(super) struct Gen<'a, 'b> {
    pub(super) b: &'b mut FunctionBuilder<'a>,
    pub(super) env: &'b mut Env,
    pub(super) vars: HashMap<u64, (Value, Ty)>,
    /// Buffer id -> (pointer, length).
    pub(super) bufs: HashMap<u64, (Value, Value)>,
    pub(super) sites: Vec<Site>,
    /// The failure exit: `(site, index, size)`.
    pub(super) fail: Block,
    pub(super) arena: Value,
    pub(super) allocs: usize,
    pub(super) call_conv: CallConv,
    sigs: HashMap<&'static str, SigRef>,
    /// Accesses (by index identity) whose bounds were checked before the loop.
    pub(super) unchecked: HashSet<usize>,
    /// Buffer elements held in variables during an innermost loop (`promote`).
    pub(super) promoted: HashMap<u64, (Variable, Ty)>,
}

pub(super) fn flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// The native representation of `dt`.
pub(super) fn ty_of(dt: DataType) -> Option<Ty> {
    if dt.lanes > 1 {
        return None;
    }
    match (dt.code, dt.bits) {
        (TypeCode::Float, 32) => Some(Ty::F32),
        (TypeCode::Float, 64) => Some(Ty::F64),
        (TypeCode::Float, 16) => Some(Ty::F16),
        (TypeCode::BFloat, 16) => Some(Ty::BF16),
        (TypeCode::Int | TypeCode::UInt, 1..=64) => Some(Ty::I),
        _ => None,
    }
}

pub(super) fn clif(t: Ty) -> Type {
    match t {
        Ty::I => types::I64,
        Ty::F32 | Ty::F16 | Ty::BF16 => types::F32,
        Ty::F64 => types::F64,
    }
}

impl<'a, 'b> Gen<'a, 'b> {
    pub(super) fn new(
        b: &'b mut FunctionBuilder<'a>,
        env: &'b mut Env,
        fail: Block,
        arena: Value,
        call_conv: CallConv,
    ) -> Self {
        Gen {
            b,
            env,
            vars: HashMap::new(),
            bufs: HashMap::new(),
            sites: Vec::new(),
            fail,
            arena,
            allocs: 0,
            call_conv,
            sigs: HashMap::new(),
            unchecked: HashSet::new(),
            promoted: HashMap::new(),
        }
    }

    pub(super) fn unsupported(&self, msg: impl Into<String>) -> JitError {
        JitError::Unsupported {
            func: self.env.func.clone(),
            msg: msg.into(),
        }
    }

    fn ty(&self, dt: DataType) -> Result<Ty> {
        ty_of(dt).ok_or_else(|| self.unsupported(format!("dtype {dt} in native host code")))
    }

    pub(super) fn iconst(&mut self, v: i64) -> Value {
        self.b.ins().iconst(types::I64, v)
    }

    /// Branch to the failure exit for `site` unless `ok` (an `i8` condition) holds.
    fn check(&mut self, ok: Value, site: Site, idx: Value, len: Value) {
        let code = self.sites.len() as i64 + 1;
        self.sites.push(site);
        let code = self.iconst(code);
        let cont = self.b.create_block();
        let args = [BlockArg::Value(code), BlockArg::Value(idx), BlockArg::Value(len)];
        self.b.ins().brif(ok, cont, &[], self.fail, &args);
        self.b.switch_to_block(cont);
    }

    /// A new variable holding `v`.
    pub(super) fn var(&mut self, ty: Type, v: Value) -> Variable {
        let var = self.b.declare_var(ty);
        self.b.def_var(var, v);
        var
    }

    // ---- statements ----

    pub(super) fn stmt(&mut self, s: &Stmt) -> Result<()> {
        match s {
            Stmt::BufferStore {
                buffer, value, indices, ..
            } => self.store(buffer, value, indices),
            Stmt::Let { var, value, body } => {
                let v = self.expr(value)?;
                self.scoped(var, v, value.dtype(), |g| g.stmt(body))
            }
            Stmt::Attr { body, .. } => self.stmt(body),
            Stmt::LaunchThread { var, extent, body, .. } | Stmt::For(For { var, extent, body, .. }) => {
                let n = self.int(extent)?;
                let zero = self.iconst(0);
                match peel_first(var, body) {
                    Some((init, rest)) => {
                        // `for v { if v == 0 { init }; rest }` (a reduction's init):
                        // the init runs once before the loop when there is an iteration.
                        let (t, join) = (self.b.create_block(), self.b.create_block());
                        let some = self.b.ins().icmp(IntCC::SignedGreaterThan, n, zero);
                        self.b.ins().brif(some, t, &[], join, &[]);
                        self.b.switch_to_block(t);
                        let prev = self.vars.insert(var.id(), (zero, Ty::I));
                        let r = self.stmt(init);
                        restore(&mut self.vars, var.id(), prev);
                        r?;
                        self.b.ins().jump(join, &[]);
                        self.b.switch_to_block(join);
                        self.counted_loop(var, zero, n, &rest)
                    }
                    None => self.counted_loop(var, zero, n, body),
                }
            }
            Stmt::Assert { cond, message, body } => {
                let c = self.int(cond)?;
                let zero = self.iconst(0);
                self.check(c, Site::Assert(message.clone()), zero, zero);
                self.stmt(body)
            }
            Stmt::While { cond, body } => {
                let (head, inner, exit) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(head);
                let c = self.int(cond)?;
                self.b.ins().brif(c, inner, &[], exit, &[]);
                self.b.switch_to_block(inner);
                self.stmt(body)?;
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(exit);
                Ok(())
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let c = self.int(cond)?;
                let (t, e, join) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
                self.b.ins().brif(c, t, &[], e, &[]);
                self.b.switch_to_block(t);
                self.stmt(then_branch)?;
                self.b.ins().jump(join, &[]);
                self.b.switch_to_block(e);
                if let Some(eb) = else_branch {
                    self.stmt(eb)?;
                }
                self.b.ins().jump(join, &[]);
                self.b.switch_to_block(join);
                Ok(())
            }
            Stmt::Seq(v) => v.iter().try_for_each(|x| self.stmt(x)),
            Stmt::Evaluate(e) => {
                if e.as_intrinsic() == Some(Intrinsic::TvmStorageSync) {
                    return Err(self.unsupported("thread barriers (T.tvm_storage_sync) on the host"));
                }
                if !matches!(e.kind(), PrimExprKind::IntImm { .. }) {
                    self.expr(e)?;
                }
                Ok(())
            }
            Stmt::Alloc { buffer, body } => self.alloc(buffer, body),
            Stmt::BlockRealize { .. } => Err(JitError::InvalidIr("block left after lowering".into())),
        }
    }

    /// `for var in lo..hi { body }` (`hi` exclusive, signed compare), with the
    /// bounds checks of an innermost loop hoisted when they can be.
    pub(super) fn counted_loop(&mut self, var: &TirVar, lo: Value, hi: Value, body: &Stmt) -> Result<()> {
        let sites = self.hoistable(var, body);
        if sites.is_empty() || !self.unchecked.is_empty() || !self.env.hoist {
            return self.plain_loop(var, lo, hi, body);
        }
        let ok = self.range_ok(var, &sites, lo, hi)?;
        let (fast, slow, join) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.ins().brif(ok, fast, &[], slow, &[]);
        self.b.switch_to_block(fast);
        self.unchecked = super::hoist::keys(&sites);
        let promoted = self.promotable(var, body);
        let r = self
            .promote(&promoted)
            .and_then(|()| match self.lane_loop(var, lo, hi, body) {
                Ok(true) => Ok(()),
                Ok(false) => self.plain_loop(var, lo, hi, body),
                Err(e) => Err(e),
            });
        let r = r.and_then(|()| self.demote(&promoted));
        self.promoted.clear();
        self.unchecked.clear();
        r?;
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(slow);
        self.plain_loop(var, lo, hi, body)?;
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
        Ok(())
    }

    pub(super) fn plain_loop(&mut self, var: &TirVar, lo: Value, hi: Value, body: &Stmt) -> Result<()> {
        let iv = self.var(types::I64, lo);
        let (head, inner, exit) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let i = self.b.use_var(iv);
        let c = self.b.ins().icmp(IntCC::SignedLessThan, i, hi);
        self.b.ins().brif(c, inner, &[], exit, &[]);
        self.b.switch_to_block(inner);
        let cur = self.b.use_var(iv);
        let prev = self.vars.insert(var.id(), (cur, Ty::I));
        self.stmt(body)?;
        restore(&mut self.vars, var.id(), prev);
        let next = self.b.ins().iadd_imm_s(cur, 1);
        self.b.def_var(iv, next);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// Bind `var` to `v` (converted to the variable's type) while `f` runs.
    fn scoped<T>(
        &mut self,
        var: &TirVar,
        v: (Value, Ty),
        src: DataType,
        f: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let ty = self.ty(var.dtype())?;
        let v = self.conv_to(v, ty, src, var.dtype());
        let prev = self.vars.insert(var.id(), (v, ty));
        let r = f(self);
        restore(&mut self.vars, var.id(), prev);
        r
    }

    fn alloc(&mut self, buffer: &Buffer, body: &Stmt) -> Result<()> {
        let eb = host_elem_bytes(buffer.dtype())? as i64;
        let n = self.int(&buffer.shape()[0])?;
        let zero = self.iconst(0);
        let n = self.b.ins().smax(n, zero);
        let site = self.allocs as i64;
        self.allocs += 1;
        let (site, eb) = (self.iconst(site), self.iconst(eb));
        let f = self.iconst(super::shims::arena_alloc as *const () as usize as i64);
        let sig = self.sig("alloc", &[types::I64; 4], types::I64);
        let call = self.b.ins().call_indirect(sig, f, &[self.arena, site, n, eb]);
        let p = self.b.inst_results(call)[0];
        self.check(p, Site::Alloc(buffer.name().to_string()), n, zero);
        let prev = self.bufs.insert(buffer.id(), (p, n));
        let r = self.stmt(body);
        restore(&mut self.bufs, buffer.id(), prev);
        r
    }

    /// The element address of `buffer[idx]` after a bounds check.
    fn addr(&mut self, buffer: &Buffer, index: &PrimExpr, write: bool) -> Result<Value> {
        let idx = self.int(index)?;
        let (p, len) = match self.bufs.get(&buffer.id()) {
            Some(x) => *x,
            None => return Err(JitError::InvalidIr(format!("buffer `{}` is not bound", buffer.name()))),
        };
        if !self.unchecked.contains(&super::hoist::key(index)) {
            let ok = self.b.ins().icmp(IntCC::UnsignedLessThan, idx, len);
            let name = buffer.name().to_string();
            self.check(ok, if write { Site::Write(name) } else { Site::Read(name) }, idx, len);
        }
        let eb = host_elem_bytes(buffer.dtype())? as i64;
        let off = self.b.ins().imul_imm_s(idx, eb);
        Ok(self.b.ins().iadd(p, off))
    }

    fn store(&mut self, buffer: &Buffer, value: &PrimExpr, indices: &[PrimExpr]) -> Result<()> {
        if indices.len() != 1 {
            return Err(JitError::InvalidIr(format!("unflattened store to `{}`", buffer.name())));
        }
        let v = self.expr(value)?;
        self.store_value(buffer, &indices[0], v, value.dtype())
    }

    /// Store `v` (of dtype `src`) to `buffer[index]`.
    pub(super) fn store_value(
        &mut self,
        buffer: &Buffer,
        index: &PrimExpr,
        v: (Value, Ty),
        src: DataType,
    ) -> Result<()> {
        let bdt = buffer.dtype();
        let ty = self.ty(bdt)?;
        let v = self.conv_to(v, ty, src, bdt);
        if let Some((var, _)) = self.promoted.get(&buffer.id()).copied() {
            // What a store then a load would give: wrapped to the element type.
            let v = if ty == Ty::I { self.wrap(v, bdt) } else { v };
            self.b.def_var(var, v);
            return Ok(());
        }
        let a = self.addr(buffer, index, true)?;
        let fl = flags();
        match (ty, bdt.bits) {
            (Ty::I, 1) => {
                let nz = self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0);
                self.b.ins().store(fl, nz, a, 0)
            }
            (Ty::I, 8) => self.b.ins().istore8(fl, v, a, 0),
            (Ty::I, 16) => self.b.ins().istore16(fl, v, a, 0),
            (Ty::I, 32) => self.b.ins().istore32(fl, v, a, 0),
            (Ty::I, 64) | (Ty::F32, _) | (Ty::F64, _) => self.b.ins().store(fl, v, a, 0),
            (Ty::F16 | Ty::BF16, _) => {
                let h = self.half_to_bits(v, ty);
                self.b.ins().istore16(fl, h, a, 0)
            }
            _ => return Err(self.unsupported(format!("stores of {bdt}"))),
        };
        Ok(())
    }

    pub(super) fn load(&mut self, buffer: &Buffer, indices: &[PrimExpr]) -> Result<(Value, Ty)> {
        if indices.len() != 1 {
            return Err(JitError::InvalidIr(format!(
                "unflattened load from `{}`",
                buffer.name()
            )));
        }
        if let Some((var, ty)) = self.promoted.get(&buffer.id()).copied() {
            return Ok((self.b.use_var(var), ty));
        }
        let bdt = buffer.dtype();
        let ty = self.ty(bdt)?;
        let a = self.addr(buffer, &indices[0], false)?;
        let (fl, i64t) = (flags(), types::I64);
        let ins = self.b.ins();
        let v = match (bdt.code, bdt.bits) {
            (TypeCode::UInt, 1) => {
                let x = ins.uload8(i64t, fl, a, 0);
                let nz = self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0);
                self.b.ins().uextend(i64t, nz)
            }
            (TypeCode::Int, 8) => ins.sload8(i64t, fl, a, 0),
            (TypeCode::UInt, 8) => ins.uload8(i64t, fl, a, 0),
            (TypeCode::Int, 16) => ins.sload16(i64t, fl, a, 0),
            (TypeCode::UInt, 16) => ins.uload16(i64t, fl, a, 0),
            (TypeCode::Int, 32) => ins.sload32(fl, a, 0),
            (TypeCode::UInt, 32) => ins.uload32(fl, a, 0),
            (TypeCode::Float | TypeCode::BFloat, 16) => {
                let h = ins.uload16(types::I32, fl, a, 0);
                self.half_from_bits(h, ty)
            }
            (TypeCode::Int | TypeCode::UInt, 64) | (TypeCode::Float, _) => ins.load(clif(ty), fl, a, 0),
            _ => return Err(self.unsupported(format!("loads of {bdt}"))),
        };
        Ok((v, ty))
    }

    /// A signature for calls through `call_indirect`, imported once per name.
    pub(super) fn sig(&mut self, name: &'static str, params: &[Type], ret: Type) -> SigRef {
        if let Some(s) = self.sigs.get(name) {
            return *s;
        }
        let mut sig = cranelift_codegen::ir::Signature::new(self.call_conv);
        sig.params.extend(params.iter().map(|t| AbiParam::new(*t)));
        sig.returns.push(AbiParam::new(ret));
        let s = self.b.import_signature(sig);
        self.sigs.insert(name, s);
        s
    }

    /// Convert `v` to representation `to` the way the interpreter reads it:
    /// ints to floats through `f64` (unsigned 64-bit as unsigned), floats to ints
    /// truncating and saturating.
    pub(super) fn conv(&mut self, (v, from): (Value, Ty), to: Ty, src: DataType) -> Value {
        let ins = self.b.ins();
        match (from, to) {
            (a, b) if a == b => v,
            (Ty::I, _) => {
                let u64 = src.is_uint() && src.bits == 64;
                let f = if u64 {
                    ins.fcvt_from_uint(types::F64, v)
                } else {
                    ins.fcvt_from_sint(types::F64, v)
                };
                self.narrow(f, to)
            }
            (_, Ty::I) => ins.fcvt_to_sint_sat(types::I64, v),
            (Ty::F64, _) => self.narrow(v, to),
            (_, Ty::F64) => ins.fpromote(types::F64, v),
            // Between `f32` representations: exact widening, or one rounding.
            (_, Ty::F32) => v,
            (_, t) => self.round_half(v, t),
        }
    }

    /// [`Gen::conv`] for a value stored as dtype `dst`: a float becomes a `bool`
    /// as `!= 0` (as `T.Cast("bool", x)` does), not by truncation.
    pub(super) fn conv_to(&mut self, (v, from): (Value, Ty), to: Ty, src: DataType, dst: DataType) -> Value {
        if dst.is_bool() && from != Ty::I {
            // `float16`/`bfloat16` live in `f32` registers.
            let z = match from {
                Ty::F64 => self.b.ins().f64const(0.0),
                _ => self.b.ins().f32const(0.0),
            };
            return fcmp64(self.b, FloatCC::NotEqual, v, z);
        }
        self.conv((v, from), to, src)
    }

    /// Wrap an `i64` to the range of the integer dtype `dt` (as `wrap_int`).
    pub(super) fn wrap(&mut self, v: Value, dt: DataType) -> Value {
        if dt.is_bool() {
            let nz = self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0);
            return self.b.ins().uextend(types::I64, nz);
        }
        let bits = dt.bits as i64;
        if bits >= 64 {
            return v;
        }
        let s = self.b.ins().ishl_imm_u(v, 64 - bits);
        if dt.is_int() {
            self.b.ins().sshr_imm_u(s, 64 - bits)
        } else {
            self.b.ins().ushr_imm_u(s, 64 - bits)
        }
    }

    /// Evaluate `e` as an integer (the interpreter's `compile_i`).
    pub(super) fn int(&mut self, e: &PrimExpr) -> Result<Value> {
        let v = self.expr(e)?;
        Ok(self.conv(v, Ty::I, e.dtype()))
    }

    /// Evaluate `e` as a float of representation `to`.
    pub(super) fn float(&mut self, e: &PrimExpr, to: Ty) -> Result<Value> {
        let v = self.expr(e)?;
        Ok(self.conv(v, to, e.dtype()))
    }

    /// Bind `var` to `v` while evaluating `body`.
    pub(super) fn let_expr(&mut self, var: &TirVar, value: &PrimExpr, body: &PrimExpr) -> Result<(Value, Ty)> {
        let v = self.expr(value)?;
        self.scoped(var, v, value.dtype(), |g| g.expr(body))
    }
}

/// `(init, rest)` when the loop body over `var` (from 0) is
/// `if var == 0 { init } rest...` with no else branch.
fn peel_first<'s>(var: &TirVar, body: &'s Stmt) -> Option<(&'s Stmt, Stmt)> {
    let Stmt::Seq(v) = body else { return None };
    let (
        Stmt::If {
            cond,
            then_branch,
            else_branch: None,
        },
        rest,
    ) = v.split_first()?
    else {
        return None;
    };
    let PrimExprKind::Binary {
        op: relax_ir::tir::BinOp::Eq,
        a,
        b,
    } = cond.kind()
    else {
        return None;
    };
    let first = matches!(a.kind(), PrimExprKind::Var(w) if w == var) && b.as_int() == Some(0);
    (first && !rest.is_empty()).then(|| (&**then_branch, Stmt::seq(rest.to_vec())))
}

pub(super) fn restore<K: std::hash::Hash + Eq, V>(m: &mut HashMap<K, V>, k: K, prev: Option<V>) {
    match prev {
        Some(p) => m.insert(k, p),
        None => m.remove(&k),
    };
}

/// An `i8` condition `v != 0` for an `i64`.
pub(super) fn nonzero(b: &mut FunctionBuilder<'_>, v: Value) -> Value {
    b.ins().icmp_imm_s(IntCC::NotEqual, v, 0)
}

/// `fcmp` returning an `i64` 0/1.
pub(super) fn fcmp64(b: &mut FunctionBuilder<'_>, cc: FloatCC, x: Value, y: Value) -> Value {
    let c = b.ins().fcmp(cc, x, y);
    b.ins().uextend(types::I64, c)
}

/// `icmp` returning an `i64` 0/1.
pub(super) fn icmp64(b: &mut FunctionBuilder<'_>, cc: IntCC, x: Value, y: Value) -> Value {
    let c = b.ins().icmp(cc, x, y);
    b.ins().uextend(types::I64, c)
}
