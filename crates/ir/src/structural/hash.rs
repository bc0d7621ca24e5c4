//! The hashing walk, consistent with the equality engine: variables and buffers
//! hash by the order in which they are first met.

use std::collections::HashMap;

use crate::attrs::{AttrValue, Attrs};
use crate::module::{BaseFunc, GlobalInfo, IRModule};
use crate::relax::{Binding, Expr, ExprKind, Function, StructInfo, Var};
use crate::tir::{Buffer, BufferRegion, PrimExpr, PrimExprKind, PrimFunc, Range, Stmt, TirVar};

#[derive(Default)]
pub(super) struct Hash {
    /// Leave a `PrimFunc`'s `global_symbol` attribute out.
    pub(super) ignore_global_symbol: bool,
    h: u64,
    rvars: HashMap<u64, u64>,
    tvars: HashMap<u64, u64>,
    bufs: HashMap<u64, u64>,
}

const K: u64 = 0x517c_c1b7_2722_0a95;

impl Hash {
    pub(super) fn u(&mut self, x: u64) {
        self.h = (self.h.rotate_left(5) ^ x).wrapping_mul(K);
    }
    pub(super) fn tag(&mut self, t: u8) {
        self.u(0xA5A5_0000 | t as u64);
    }
    pub(super) fn s(&mut self, s: &str) {
        let bytes = s.as_bytes();
        self.u(bytes.len() as u64);
        for chunk in bytes.chunks(8) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            self.u(u64::from_le_bytes(buf));
        }
    }
    pub(super) fn b(&mut self, x: bool) {
        self.u(x as u64);
    }
    pub(super) fn dt(&mut self, d: crate::dtype::DataType) {
        self.u(((d.code as u64) << 32) | ((d.bits as u64) << 16) | d.lanes as u64);
    }
    pub(super) fn len(&mut self, n: usize) {
        self.u(n as u64);
    }
    pub(super) fn finish(&self) -> u64 {
        // fmix64 avalanche.
        let mut x = self.h;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^ (x >> 33)
    }
    /// The encounter index of an identity (`None` when first seen, after assigning one).
    pub(super) fn index(map: &mut HashMap<u64, u64>, id: u64) -> Result<u64, u64> {
        let n = map.len() as u64;
        match map.get(&id) {
            Some(&i) => Ok(i),
            None => {
                map.insert(id, n);
                Err(n)
            }
        }
    }

    pub(super) fn module(&mut self, m: &IRModule) {
        let mut funcs: Vec<_> = m.functions.iter().collect();
        funcs.sort_by(|a, b| a.0.name().cmp(b.0.name()));
        self.len(funcs.len());
        for (gv, f) in funcs {
            self.rvars.clear();
            self.tvars.clear();
            self.bufs.clear();
            self.s(gv.name());
            match f {
                BaseFunc::Relax(f) => {
                    self.tag(1);
                    self.function(f)
                }
                BaseFunc::Prim(f) => {
                    self.tag(2);
                    self.prim_func(f)
                }
            }
        }
        self.rvars.clear();
        self.tvars.clear();
        self.bufs.clear();
        self.attrs(&m.attrs);
        let mut infos: Vec<_> = m.global_infos.iter().collect();
        infos.sort_by(|a, b| a.0.cmp(b.0));
        self.len(infos.len());
        for (k, l) in infos {
            self.s(k);
            self.len(l.len());
            for g in l {
                match g {
                    GlobalInfo::VDevice(v) => {
                        self.tag(1);
                        self.s(&v.target.kind);
                        self.attrs(&v.target.config);
                        self.u(v.vdevice_id as u64);
                        self.s(&v.memory_scope);
                    }
                    GlobalInfo::Dummy => self.tag(2),
                }
            }
        }
    }

    pub(super) fn attrs(&mut self, a: &Attrs) {
        let mut items: Vec<_> = a.iter().collect();
        items.sort_by(|x, y| x.0.cmp(y.0));
        self.len(items.len());
        for (k, v) in items {
            self.s(k);
            self.attr_value(v);
        }
    }

    pub(super) fn attr_value(&mut self, v: &AttrValue) {
        match v {
            AttrValue::None => self.tag(0),
            AttrValue::Bool(b) => {
                self.tag(1);
                self.b(*b)
            }
            AttrValue::Int(i) => {
                self.tag(2);
                self.u(*i as u64)
            }
            AttrValue::Float(f) => {
                self.tag(3);
                self.u(f.to_bits())
            }
            AttrValue::Str(s) => {
                self.tag(4);
                self.s(s)
            }
            AttrValue::DataType(d) => {
                self.tag(5);
                self.dt(*d)
            }
            AttrValue::PrimExpr(e) => {
                self.tag(6);
                self.prim(e)
            }
            AttrValue::List(l) => {
                self.tag(7);
                self.len(l.len());
                l.iter().for_each(|x| self.attr_value(x));
            }
            AttrValue::Map(m) => {
                self.tag(8);
                self.attrs(m)
            }
        }
    }

    pub(super) fn rvar(&mut self, v: &Var) {
        match Self::index(&mut self.rvars, v.id()) {
            Ok(i) => {
                self.tag(1);
                self.u(i)
            }
            Err(i) => {
                self.tag(2);
                self.u(i);
                self.b(v.is_dataflow());
                match v.struct_info() {
                    Some(s) => {
                        self.tag(1);
                        self.sinfo(s)
                    }
                    None => self.tag(0),
                }
            }
        }
    }

    pub(super) fn function(&mut self, f: &Function) {
        self.len(f.params.len());
        f.params.iter().for_each(|p| self.rvar(p));
        self.expr(&f.body);
        match &f.ret_struct_info {
            Some(s) => {
                self.tag(1);
                self.sinfo(s)
            }
            None => self.tag(0),
        }
        self.b(f.is_pure);
        self.b(f.private);
        self.attrs(&f.attrs);
    }

    pub(super) fn expr(&mut self, e: &Expr) {
        use ExprKind as K;
        match e.kind() {
            K::Constant { data } => {
                self.tag(10);
                self.dt(data.dtype);
                self.len(data.shape.len());
                data.shape.iter().for_each(|&d| self.u(d as u64));
                self.len(data.data.len());
                for chunk in data.data.chunks(8) {
                    let mut buf = [0u8; 8];
                    buf[..chunk.len()].copy_from_slice(chunk);
                    self.u(u64::from_le_bytes(buf));
                }
            }
            K::Var(v) => {
                self.tag(11);
                self.rvar(v)
            }
            K::GlobalVar(g) => {
                self.tag(12);
                self.s(g.name())
            }
            K::Tuple(f) => {
                self.tag(13);
                self.len(f.len());
                f.iter().for_each(|x| self.expr(x));
            }
            K::Seq(seq) => {
                self.tag(14);
                self.len(seq.blocks.len());
                for b in &seq.blocks {
                    self.b(b.is_dataflow);
                    self.len(b.bindings.len());
                    for bd in &b.bindings {
                        match bd {
                            Binding::VarBinding { var, value, .. } => {
                                self.tag(1);
                                self.rvar(var);
                                self.expr(value);
                            }
                            Binding::MatchCast {
                                var,
                                value,
                                struct_info,
                                ..
                            } => {
                                self.tag(2);
                                self.expr(value);
                                self.sinfo(struct_info);
                                self.rvar(var);
                            }
                        }
                    }
                }
                self.expr(&seq.body);
            }
            K::PrimValue(p) => {
                self.tag(15);
                self.prim(p)
            }
            K::StringImm(s) => {
                self.tag(16);
                self.s(s)
            }
            K::DataTypeImm(d) => {
                self.tag(17);
                self.dt(*d)
            }
            K::Function(f) => {
                self.tag(18);
                self.function(f)
            }
            K::If {
                cond,
                then_branch,
                else_branch,
            } => {
                self.tag(19);
                self.expr(cond);
                self.expr(then_branch);
                self.expr(else_branch);
            }
            K::ExternFunc { global_symbol } => {
                self.tag(20);
                self.s(global_symbol)
            }
            K::Call(c) => {
                self.tag(21);
                self.expr(&c.op);
                self.len(c.args.len());
                c.args.iter().for_each(|x| self.expr(x));
                self.attrs(&c.attrs);
                self.len(c.sinfo_args.len());
                c.sinfo_args.iter().for_each(|s| self.sinfo(s));
            }
            K::ShapeExpr(v) => {
                self.tag(22);
                self.len(v.len());
                v.iter().for_each(|x| self.prim(x));
            }
            K::TupleGetItem { tuple, index } => {
                self.tag(23);
                self.expr(tuple);
                self.len(*index);
            }
            K::Op(name) => {
                self.tag(24);
                self.s(name)
            }
        }
    }

    pub(super) fn sinfo(&mut self, s: &StructInfo) {
        match s {
            StructInfo::Object => self.tag(30),
            StructInfo::Prim(p) => {
                self.tag(31);
                self.dt(p.dtype);
                match &p.value {
                    Some(v) => {
                        self.tag(1);
                        self.prim(v)
                    }
                    None => self.tag(0),
                }
            }
            StructInfo::Shape(sh) => {
                self.tag(32);
                self.u(sh.ndim as u64);
                match &sh.values {
                    Some(v) => {
                        self.tag(1);
                        self.len(v.len());
                        v.iter().for_each(|x| self.prim(x));
                    }
                    None => self.tag(0),
                }
            }
            StructInfo::Tensor(t) => {
                self.tag(33);
                self.u(t.ndim as u64);
                self.dt(t.dtype);
                match &t.vdevice {
                    Some(v) => {
                        self.tag(1);
                        self.s(&v.target.kind);
                        self.u(v.vdevice_id as u64);
                        self.s(&v.memory_scope);
                    }
                    None => self.tag(0),
                }
                match &t.shape {
                    Some(e) => {
                        self.tag(1);
                        self.expr(e)
                    }
                    None => self.tag(0),
                }
            }
            StructInfo::Tuple(f) => {
                self.tag(34);
                self.len(f.len());
                f.iter().for_each(|x| self.sinfo(x));
            }
            StructInfo::Func(f) => {
                self.tag(35);
                match &f.params {
                    Some(p) => {
                        self.tag(1);
                        self.len(p.len());
                        p.iter().for_each(|x| self.sinfo(x));
                    }
                    None => self.tag(0),
                }
                self.sinfo(&f.ret);
                self.b(f.purity);
                match &f.derive_func {
                    Some(d) => self.s(d),
                    None => self.tag(0),
                }
            }
        }
    }

    pub(super) fn tvar(&mut self, v: &TirVar) {
        self.tvar_typed(v, true)
    }

    /// Hash `v`; with `pointer_type` false a definition leaves out the pointee type and
    /// storage scope (buffer-map parameters, as in structural equality).
    fn tvar_typed(&mut self, v: &TirVar, pointer_type: bool) {
        match Self::index(&mut self.tvars, v.id()) {
            Ok(i) => {
                self.tag(1);
                self.u(i)
            }
            Err(i) => {
                self.tag(2);
                self.u(i);
                self.dt(v.dtype());
                if !pointer_type {
                    return;
                }
                if let Some(p) = v.0.pointee {
                    self.dt(p);
                }
                if let Some(s) = &v.0.storage_scope {
                    self.s(s);
                }
            }
        }
    }

    pub(super) fn buffer(&mut self, b: &Buffer) {
        match Self::index(&mut self.bufs, b.id()) {
            Ok(i) => {
                self.tag(1);
                self.u(i)
            }
            Err(i) => {
                self.tag(2);
                self.u(i);
                let x = &b.0;
                self.tvar(&x.data);
                self.dt(x.dtype);
                self.len(x.shape.len());
                x.shape.iter().for_each(|e| self.prim(e));
                self.len(x.strides.len());
                x.strides.iter().for_each(|e| self.prim(e));
                match &x.elem_offset {
                    Some(e) => self.prim(e),
                    None => self.prim(&PrimExpr::int(0)),
                }
                self.s(&x.scope);
                self.u(x.align as u64);
                self.u(x.offset_factor as u64);
                self.len(x.axis_separators.len());
                x.axis_separators.iter().for_each(|&a| self.u(a as u64));
            }
        }
    }

    pub(super) fn prim(&mut self, e: &PrimExpr) {
        use PrimExprKind as P;
        match e.kind() {
            P::IntImm { value, dtype } => {
                self.tag(40);
                self.dt(*dtype);
                self.u(*value as u64);
            }
            P::FloatImm { value, dtype } => {
                self.tag(41);
                self.dt(*dtype);
                self.u(value.to_bits());
            }
            P::StringImm(s) => {
                self.tag(42);
                self.s(s)
            }
            P::Var(v) => {
                self.tag(43);
                self.tvar(v)
            }
            P::Cast { dtype, value } => {
                self.tag(44);
                self.dt(*dtype);
                self.prim(value);
            }
            P::Binary { op, a, b } => {
                self.tag(45);
                self.u(*op as u64);
                self.prim(a);
                self.prim(b);
            }
            P::Not(a) => {
                self.tag(46);
                self.prim(a)
            }
            P::Select { cond, t, f } => {
                self.tag(47);
                self.prim(cond);
                self.prim(t);
                self.prim(f);
            }
            P::Call { op, dtype, args } => {
                self.tag(48);
                self.s(op);
                self.dt(*dtype);
                self.len(args.len());
                args.iter().for_each(|x| self.prim(x));
            }
            P::BufferLoad { buffer, indices } => {
                self.tag(49);
                self.buffer(buffer);
                self.len(indices.len());
                indices.iter().for_each(|x| self.prim(x));
            }
            P::Let { var, value, body } => {
                self.tag(50);
                self.prim(value);
                self.tvar(var);
                self.prim(body);
            }
            P::Ramp { base, stride, lanes } => {
                self.tag(51);
                self.u(*lanes as u64);
                self.prim(base);
                self.prim(stride);
            }
            P::Broadcast { value, lanes } => {
                self.tag(52);
                self.u(*lanes as u64);
                self.prim(value);
            }
        }
    }

    pub(super) fn range(&mut self, r: &Range) {
        self.prim(&r.min);
        self.prim(&r.extent);
    }

    pub(super) fn region(&mut self, r: &BufferRegion) {
        self.buffer(&r.buffer);
        self.len(r.region.len());
        r.region.iter().for_each(|x| self.range(x));
    }

    pub(super) fn prim_func(&mut self, f: &PrimFunc) {
        self.len(f.params.len());
        for p in &f.params {
            self.tvar_typed(p, !f.buffer_map.iter().any(|(q, _)| q.id() == p.id()));
        }
        self.len(f.buffer_map.len());
        for (p, b) in &f.buffer_map {
            self.tvar(p);
            self.buffer(b);
        }
        match f.ret_type {
            Some(d) => self.dt(d),
            None => self.tag(0),
        }
        self.stmt(&f.body);
        if self.ignore_global_symbol {
            self.attrs(&super::without_global_symbol(&f.attrs));
        } else {
            self.b(f.private);
            self.attrs(&f.attrs);
        }
    }

    pub(super) fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::BufferStore {
                buffer, value, indices, ..
            } => {
                self.tag(60);
                self.buffer(buffer);
                self.len(indices.len());
                indices.iter().for_each(|x| self.prim(x));
                self.prim(value);
            }
            Stmt::Let { var, value, body } => {
                self.tag(61);
                self.prim(value);
                self.tvar(var);
                self.stmt(body);
            }
            Stmt::Attr { node, key, value, body } => {
                self.tag(62);
                match node {
                    Some(v) => self.tvar(v),
                    None => self.tag(0),
                }
                self.s(key);
                self.prim(value);
                self.stmt(body);
            }
            Stmt::LaunchThread { var, tag, extent, body } => {
                self.tag(63);
                self.s(tag);
                self.prim(extent);
                self.tvar(var);
                self.stmt(body);
            }
            Stmt::Assert { cond, message, body } => {
                self.tag(64);
                self.prim(cond);
                self.s(message);
                self.stmt(body);
            }
            Stmt::For {
                var,
                min,
                extent,
                kind,
                thread_tag,
                annotations,
                body,
            } => {
                self.tag(65);
                self.prim(min);
                self.prim(extent);
                self.u(*kind as u64);
                match thread_tag {
                    Some(t) => self.s(t),
                    None => self.tag(0),
                }
                self.attrs(annotations);
                self.tvar(var);
                self.stmt(body);
            }
            Stmt::While { cond, body } => {
                self.tag(66);
                self.prim(cond);
                self.stmt(body);
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
            } => {
                self.tag(67);
                self.prim(cond);
                self.stmt(then_branch);
                match else_branch {
                    Some(e) => self.stmt(e),
                    None => self.tag(0),
                }
            }
            Stmt::Seq(v) => {
                self.tag(68);
                self.len(v.len());
                v.iter().for_each(|x| self.stmt(x));
            }
            Stmt::Evaluate(e) => {
                self.tag(69);
                self.prim(e)
            }
            Stmt::Alloc { buffer, body } => {
                self.tag(70);
                self.buffer(buffer);
                self.stmt(body);
            }
            Stmt::BlockRealize {
                iter_values,
                predicate,
                block,
            } => {
                self.tag(71);
                self.len(iter_values.len());
                iter_values.iter().for_each(|x| self.prim(x));
                match predicate {
                    Some(p) => self.prim(p),
                    None => self.prim(&PrimExpr::bool(true)),
                }
                let b = block;
                self.len(b.iter_vars.len());
                for iv in &b.iter_vars {
                    self.range(&iv.dom);
                    self.u(iv.kind as u64);
                    self.tvar(&iv.var);
                }
                self.s(&b.name);
                self.len(b.alloc_buffers.len());
                b.alloc_buffers.iter().for_each(|x| self.buffer(x));
                self.len(b.match_buffers.len());
                for m in &b.match_buffers {
                    self.region(&m.source);
                    self.buffer(&m.buffer);
                }
                self.len(b.reads.len());
                b.reads.iter().for_each(|r| self.region(r));
                self.len(b.writes.len());
                b.writes.iter().for_each(|r| self.region(r));
                match &b.init {
                    Some(i) => self.stmt(i),
                    None => self.tag(0),
                }
                self.attrs(&b.annotations);
                self.stmt(&b.body);
            }
        }
    }
}
