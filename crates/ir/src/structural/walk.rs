//! The one structural walk: each IR node's fields are listed here once, in a fixed
//! order, and reported to a [`Reducer`]. Hashing reduces one walk; equality checks
//! the walk of the right side against the recorded walk of the left.
//!
//! Variables are met in definition or use positions. Each side numbers the variables
//! of a space in the order it first meets them, so two aligned walks agree on every
//! index exactly when their definitions correspond one to one. A definition met for
//! the first time reports its own fields (type, StructInfo, buffer layout); a free
//! use compared by identity reports its identity instead.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use super::reduce::{Atom, Device, Event, Ident, Note, Reducer, Seen, Seg, Space, VarNote, R};
use crate::attrs::{AttrValue, Attrs};
use crate::module::{BaseFunc, GlobalInfo, IRModule};
use crate::relax::{Binding, BindingBlock, Expr, ExprKind, Function, StructInfo, Var};
use crate::tir::{Block, Buffer, BufferRegion, IterVar, PrimExpr, PrimExprKind, PrimFunc, Range, Stmt, TirVar};

/// A walk reporting to `S`.
pub(super) struct Walk<S> {
    /// Where the events go.
    pub(super) sink: S,
    /// Free variables are mapped on first use (reported as definitions).
    map_free: bool,
    /// A `PrimFunc`'s `global_symbol` attribute and privacy are left out.
    ignore_global_symbol: bool,
    /// Inside a definition (a parameter's or MatchCast's StructInfo, a buffer
    /// declaration): TIR variables met for the first time are defined.
    def_mode: bool,
    /// Per [`Space`]: identity to encounter index.
    seen: [HashMap<u64, u64>; 3],
}

/// The implicit value of an absent `elem_offset`.
fn zero() -> &'static PrimExpr {
    static ZERO: OnceLock<PrimExpr> = OnceLock::new();
    ZERO.get_or_init(|| PrimExpr::int(0))
}

/// The implicit value of an absent block predicate.
fn always() -> &'static PrimExpr {
    static TRUE: OnceLock<PrimExpr> = OnceLock::new();
    TRUE.get_or_init(|| PrimExpr::bool(true))
}

impl<'a, S: Reducer<'a>> Walk<S> {
    pub(super) fn new(sink: S, map_free: bool, ignore_global_symbol: bool) -> Self {
        Walk {
            sink,
            map_free,
            ignore_global_symbol,
            def_mode: false,
            seen: Default::default(),
        }
    }

    // ---- reporting helpers ----

    fn kind(&mut self, what: &'static str, name: &'static str) -> R {
        self.sink.event(Event::Kind { what: Note(what), name })
    }
    fn atom(&mut self, what: &'static str, atom: Atom<'a>) -> R {
        self.sink.event(Event::Atom { what: Note(what), atom })
    }
    /// The variant `name` of the sum type `what`, then its fields.
    fn variant(&mut self, what: &'static str, name: &'static str, fields: impl FnOnce(&mut Self) -> R) -> R {
        self.kind(what, name)?;
        fields(self)
    }
    /// The variant `name` of the sum type `what`, holding one leaf value.
    fn leaf(&mut self, what: &'static str, name: &'static str, field: &'static str, atom: Atom<'a>) -> R {
        self.kind(what, name)?;
        self.atom(field, atom)
    }
    fn code(&mut self, what: &'static str, code: u64, shown: &'a dyn fmt::Debug) -> R {
        self.atom(what, Atom::Code(code, Note(shown)))
    }
    fn at(&mut self, seg: Seg<'a>, f: impl FnOnce(&mut Self) -> R) -> R {
        self.sink.enter(seg);
        let r = f(self);
        self.sink.leave();
        r
    }
    fn field(&mut self, name: &'static str, f: impl FnOnce(&mut Self) -> R) -> R {
        self.at(Seg::Field(name), f)
    }
    fn list<T>(&mut self, seg: &'static str, xs: &'a [T], mut f: impl FnMut(&mut Self, &'a T) -> R) -> R {
        self.sink.event(Event::Len {
            seg: Note(seg),
            n: xs.len(),
        })?;
        for (i, x) in xs.iter().enumerate() {
            self.at(Seg::Index(seg, i), |w| f(w, x))?;
        }
        Ok(())
    }
    fn opt<T: ?Sized>(&mut self, seg: &'static str, x: Option<&'a T>, f: impl FnOnce(&mut Self, &'a T) -> R) -> R {
        self.sink.event(Event::Present {
            seg: Note(seg),
            some: x.is_some(),
        })?;
        match x {
            Some(x) => self.field(seg, |w| f(w, x)),
            None => Ok(()),
        }
    }
    /// Entries of a map in key order, after the sorted keys.
    fn map<T: ?Sized>(
        &mut self,
        what: &'static str,
        prefix: &'static str,
        mut items: Vec<(&'a str, &'a T)>,
        mut f: impl FnMut(&mut Self, &'a T) -> R,
    ) -> R {
        items.sort_by(|x, y| x.0.cmp(y.0));
        let keys = items.iter().map(|(k, _)| *k).collect();
        self.sink.event(Event::Keys { what: Note(what), keys })?;
        for (k, v) in items {
            self.at(Seg::Entry(prefix, k), |w| f(w, v))?;
        }
        Ok(())
    }
    /// Run `f` in definition mode.
    fn def(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let old = std::mem::replace(&mut self.def_mode, true);
        let r = f(self);
        self.def_mode = old;
        r
    }
    /// Forget all variables (each module function is compared on its own).
    fn reset(&mut self) {
        self.seen.iter_mut().for_each(HashMap::clear);
    }
    /// Meet a variable of `space` in a definition (`def`) or use position. Met for
    /// the first time, a definition reports its fields with `fields`; so does a use,
    /// unless it is free and compared by identity.
    fn var(&mut self, space: Space, id: u64, name: &'a str, def: bool, fields: impl FnOnce(&mut Self) -> R) -> R {
        // A use compares by identity unless free variables are mapped or it is a TIR
        // variable inside a definition.
        let mapped = def || self.map_free || (matches!(space, Space::Tir) && self.def_mode);
        let map = &mut self.seen[space as usize];
        let next = map.len() as u64;
        let seen = match map.entry(id) {
            Entry::Occupied(e) => Seen::Before(*e.get()),
            Entry::Vacant(e) => {
                e.insert(next);
                if mapped {
                    Seen::First(next)
                } else {
                    Seen::Free(next, Ident(id))
                }
            }
        };
        let note = Note(VarNote { space, def, name });
        self.sink.event(Event::Var { seen, note })?;
        match seen {
            Seen::First(_) => fields(self),
            _ => Ok(()),
        }
    }

    // ---- module and attributes ----

    pub(super) fn module(&mut self, m: &'a IRModule) -> R {
        let funcs = m.functions.iter().map(|(g, f)| (g.name(), f)).collect();
        self.map("functions", "functions", funcs, |w, f| {
            w.reset();
            match f {
                BaseFunc::Relax(f) => {
                    w.kind("function kind", "Relax function")?;
                    w.function(f)
                }
                BaseFunc::Prim(f) => {
                    w.kind("function kind", "PrimFunc")?;
                    w.prim_func(f)
                }
            }
        })?;
        self.reset();
        self.field("attrs", |w| w.attrs(&m.attrs))?;
        let infos = m.global_infos.iter().map(|(k, l)| (k.as_str(), l.as_slice())).collect();
        self.map("global_infos", "global_infos", infos, |w, l| {
            w.list("", l, |w, g| match g {
                GlobalInfo::VDevice(v) => {
                    w.kind("global info kind", "VDevice")?;
                    w.atom("vdevice", Atom::VDevice(Device(Some(v))))
                }
                GlobalInfo::Dummy => w.kind("global info kind", "Dummy"),
            })
        })
    }

    pub(super) fn attrs(&mut self, a: &'a Attrs) -> R {
        self.attrs_except(a, None)
    }

    fn attrs_except(&mut self, a: &'a Attrs, skip: Option<&str>) -> R {
        let items = a.iter().filter(|(k, _)| Some(*k) != skip).collect();
        self.map("attribute keys", "", items, Self::attr_value)
    }

    pub(super) fn attr_value(&mut self, v: &'a AttrValue) -> R {
        const W: &str = "attribute kind";
        match v {
            AttrValue::None => self.kind(W, "None"),
            AttrValue::Bool(x) => self.leaf(W, "Bool", "bool", Atom::Bool(*x)),
            AttrValue::Int(x) => self.leaf(W, "Int", "int", Atom::Int(*x)),
            AttrValue::Float(x) => self.leaf(W, "Float", "float bits", Atom::FloatBits(x.to_bits())),
            AttrValue::Str(x) => self.leaf(W, "Str", "string", Atom::Str(x)),
            AttrValue::DataType(x) => self.leaf(W, "DataType", "dtype", Atom::DType(*x)),
            AttrValue::PrimExpr(x) => self.variant(W, "PrimExpr", |w| w.prim(x)),
            AttrValue::List(x) => self.variant(W, "List", |w| w.list("", x, Self::attr_value)),
            AttrValue::Map(x) => self.variant(W, "Map", |w| w.attrs(x)),
        }
    }

    // ---- Relax ----

    fn rvar(&mut self, v: &'a Var, def: bool) -> R {
        self.var(Space::Relax, v.id(), v.name(), def, |w| {
            w.atom("is_dataflow", Atom::Bool(v.is_dataflow()))?;
            w.def(|w| w.opt("struct_info", v.0.struct_info.as_ref(), Self::sinfo))
        })
    }

    pub(super) fn function(&mut self, f: &'a Function) -> R {
        self.list("params", &f.params, |w, p| w.rvar(p, true))?;
        self.field("body", |w| w.expr(&f.body))?;
        self.opt("ret_struct_info", f.ret_struct_info.as_ref(), Self::sinfo)?;
        self.atom("is_pure", Atom::Bool(f.is_pure))?;
        self.atom("private", Atom::Bool(f.private))?;
        self.field("attrs", |w| w.attrs(&f.attrs))
    }

    pub(super) fn expr(&mut self, e: &'a Expr) -> R {
        use ExprKind as K;
        const W: &str = "node kind";
        match e.kind() {
            K::Constant { data } => {
                self.kind(W, "Constant")?;
                self.atom("constant dtype", Atom::DType(data.dtype))?;
                self.atom("constant shape", Atom::Ints(&data.shape))?;
                self.atom("constant data", Atom::Bytes(&data.data))
            }
            K::Var(v) => self.variant(W, "Var", |w| w.rvar(v, false)),
            K::GlobalVar(g) => self.leaf(W, "GlobalVar", "global var", Atom::Str(g.name())),
            K::Tuple(x) => self.variant(W, "Tuple", |w| w.list("fields", x, Self::expr)),
            K::Seq(x) => {
                self.kind(W, "SeqExpr")?;
                self.list("blocks", &x.blocks, Self::block)?;
                self.field("body", |w| w.expr(&x.body))
            }
            K::PrimValue(x) => self.variant(W, "PrimValue", |w| w.field("value", |w| w.prim(x))),
            K::StringImm(x) => self.leaf(W, "StringImm", "string", Atom::Str(x)),
            K::DataTypeImm(x) => self.leaf(W, "DataTypeImm", "dtype", Atom::DType(*x)),
            K::Function(f) => self.variant(W, "Function", |w| w.function(f)),
            K::If {
                cond,
                then_branch,
                else_branch,
            } => {
                self.kind(W, "If")?;
                self.field("cond", |w| w.expr(cond))?;
                self.field("then_branch", |w| w.expr(then_branch))?;
                self.field("else_branch", |w| w.expr(else_branch))
            }
            K::ExternFunc { global_symbol } => self.leaf(W, "ExternFunc", "extern func", Atom::Str(global_symbol)),
            K::Call(c) => {
                self.kind(W, "Call")?;
                self.field("op", |w| w.expr(&c.op))?;
                self.list("args", &c.args, Self::expr)?;
                self.field("attrs", |w| w.attrs(&c.attrs))?;
                self.list("sinfo_args", &c.sinfo_args, Self::sinfo)
            }
            K::ShapeExpr(x) => self.variant(W, "ShapeExpr", |w| w.list("values", x, Self::prim)),
            K::TupleGetItem { tuple, index } => {
                self.kind(W, "TupleGetItem")?;
                self.field("tuple", |w| w.expr(tuple))?;
                self.atom("index", Atom::Int(*index as i64))
            }
            K::Op(x) => self.leaf(W, "Op", "op", Atom::Str(x)),
        }
    }

    fn block(&mut self, b: &'a BindingBlock) -> R {
        self.atom("is_dataflow", Atom::Bool(b.is_dataflow))?;
        self.list("bindings", &b.bindings, Self::binding)
    }

    fn binding(&mut self, b: &'a Binding) -> R {
        match b {
            Binding::VarBinding { var, value, .. } => {
                self.kind("binding kind", "VarBinding")?;
                self.field("var", |w| w.rvar(var, true))?;
                self.field("value", |w| w.expr(value))
            }
            Binding::MatchCast {
                var,
                value,
                struct_info,
                ..
            } => {
                self.kind("binding kind", "MatchCast")?;
                self.field("value", |w| w.expr(value))?;
                self.field("struct_info", |w| w.def(|w| w.sinfo(struct_info)))?;
                self.field("var", |w| w.rvar(var, true))
            }
        }
    }

    pub(super) fn sinfo(&mut self, s: &'a StructInfo) -> R {
        const W: &str = "StructInfo kind";
        match s {
            StructInfo::Object => self.kind(W, "Object"),
            StructInfo::Prim(x) => {
                self.kind(W, "Prim")?;
                self.atom("dtype", Atom::DType(x.dtype))?;
                self.opt("value", x.value.as_ref(), Self::prim)
            }
            StructInfo::Shape(x) => {
                self.kind(W, "Shape")?;
                self.atom("ndim", Atom::Int(x.ndim as i64))?;
                self.opt("values", x.values.as_deref(), |w, v| w.list("", v, Self::prim))
            }
            StructInfo::Tensor(x) => {
                self.kind(W, "Tensor")?;
                self.atom("ndim", Atom::Int(x.ndim as i64))?;
                self.atom("dtype", Atom::DType(x.dtype))?;
                self.atom("vdevice", Atom::VDevice(Device(x.vdevice.as_ref())))?;
                self.opt("shape", x.shape.as_ref(), Self::expr)
            }
            StructInfo::Tuple(x) => self.variant(W, "Tuple", |w| w.list("fields", x, Self::sinfo)),
            StructInfo::Func(x) => {
                self.kind(W, "Func")?;
                self.def(|w| w.opt("params", x.params.as_deref(), |w, p| w.list("", p, Self::sinfo)))?;
                self.field("ret", |w| w.sinfo(&x.ret))?;
                self.atom("purity", Atom::Bool(x.purity))?;
                self.atom("derive_func", Atom::OptStr(x.derive_func.as_deref()))
            }
        }
    }

    // ---- TIR ----

    /// A TIR variable; with `pointer_type` false a handle's pointee type and storage
    /// scope are left out (a parameter bound in the buffer map has the buffer's type,
    /// as in TVM, whether it was written `T.handle` or `T.Buffer`).
    fn tvar(&mut self, v: &'a TirVar, def: bool, pointer_type: bool) -> R {
        self.var(Space::Tir, v.id(), v.name(), def, |w| {
            w.atom("dtype", Atom::DType(v.dtype()))?;
            if pointer_type {
                w.atom("pointee type", Atom::OptDType(v.0.pointee))?;
                w.atom("storage scope", Atom::OptStr(v.0.storage_scope.as_deref()))?;
            }
            Ok(())
        })
    }
    fn tvar_def(&mut self, v: &'a TirVar) -> R {
        self.tvar(v, true, true)
    }
    fn tvar_use(&mut self, v: &'a TirVar) -> R {
        self.tvar(v, false, true)
    }

    fn buffer(&mut self, b: &'a Buffer, def: bool) -> R {
        let x = &b.0;
        self.var(Space::Buffer, b.id(), b.name(), def, |w| {
            w.def(|w| {
                w.field("data", |w| w.tvar_def(&x.data))?;
                w.atom("dtype", Atom::DType(x.dtype))?;
                w.list("shape", &x.shape, Self::prim)?;
                w.list("strides", &x.strides, Self::prim)?;
                w.field("elem_offset", |w| w.prim(x.elem_offset.as_ref().unwrap_or(zero())))?;
                w.atom("scope", Atom::Str(&x.scope))?;
                w.atom("align", Atom::Int(x.align))?;
                w.atom("offset_factor", Atom::Int(x.offset_factor))?;
                w.atom("axis_separators", Atom::Ints(&x.axis_separators))
            })
        })
    }
    fn buffer_def(&mut self, b: &'a Buffer) -> R {
        self.buffer(b, true)
    }
    fn buffer_use(&mut self, b: &'a Buffer) -> R {
        self.buffer(b, false)
    }

    pub(super) fn prim(&mut self, e: &'a PrimExpr) -> R {
        use PrimExprKind as P;
        const W: &str = "PrimExpr kind";
        match e.kind() {
            P::IntImm { value, dtype } => {
                self.kind(W, "IntImm")?;
                self.atom("dtype", Atom::DType(*dtype))?;
                self.atom("integer", Atom::Int(*value))
            }
            P::FloatImm { value, dtype } => {
                self.kind(W, "FloatImm")?;
                self.atom("dtype", Atom::DType(*dtype))?;
                self.atom("float", Atom::FloatBits(value.to_bits()))
            }
            P::StringImm(x) => self.leaf(W, "StringImm", "string", Atom::Str(x)),
            P::Var(v) => self.variant(W, "Var", |w| w.tvar_use(v)),
            P::Cast { dtype, value } => {
                self.kind(W, "Cast")?;
                self.atom("cast dtype", Atom::DType(*dtype))?;
                self.field("value", |w| w.prim(value))
            }
            P::Binary { op, a, b } => {
                self.kind(W, "Binary")?;
                self.code("operator", *op as u64, op)?;
                self.field("a", |w| w.prim(a))?;
                self.field("b", |w| w.prim(b))
            }
            P::Not(a) => self.variant(W, "Not", |w| w.field("a", |w| w.prim(a))),
            P::Select { cond, t, f } => {
                self.kind(W, "Select")?;
                self.field("cond", |w| w.prim(cond))?;
                self.field("true_value", |w| w.prim(t))?;
                self.field("false_value", |w| w.prim(f))
            }
            P::Call { op, dtype, args } => {
                self.kind(W, "Call")?;
                self.atom("intrinsic", Atom::Str(op.name()))?;
                self.atom("dtype", Atom::DType(*dtype))?;
                self.list("args", args, Self::prim)
            }
            P::BufferLoad { buffer, indices } => {
                self.kind(W, "BufferLoad")?;
                self.field("buffer", |w| w.buffer_use(buffer))?;
                self.list("indices", indices, Self::prim)
            }
            P::Let { var, value, body } => {
                self.kind(W, "Let")?;
                self.field("value", |w| w.prim(value))?;
                self.field("var", |w| w.tvar_def(var))?;
                self.field("body", |w| w.prim(body))
            }
            P::Ramp { base, stride, lanes } => {
                self.kind(W, "Ramp")?;
                self.atom("lanes", Atom::Int(*lanes as i64))?;
                self.field("base", |w| w.prim(base))?;
                self.field("stride", |w| w.prim(stride))
            }
            P::Broadcast { value, lanes } => {
                self.kind(W, "Broadcast")?;
                self.atom("lanes", Atom::Int(*lanes as i64))?;
                self.field("value", |w| w.prim(value))
            }
        }
    }

    fn range(&mut self, r: &'a Range) -> R {
        self.field("min", |w| w.prim(&r.min))?;
        self.field("extent", |w| w.prim(&r.extent))
    }

    fn region(&mut self, r: &'a BufferRegion) -> R {
        self.field("buffer", |w| w.buffer_use(&r.buffer))?;
        self.list("region", &r.region, Self::range)
    }

    fn iter_var(&mut self, v: &'a IterVar) -> R {
        self.field("dom", |w| w.range(&v.dom))?;
        self.code("iter kind", v.kind as u64, &v.kind)?;
        self.field("var", |w| w.tvar_def(&v.var))
    }

    pub(super) fn prim_func(&mut self, f: &'a PrimFunc) -> R {
        self.list("params", &f.params, |w, p| {
            let typed = !f.buffer_map.iter().any(|(q, _)| q.id() == p.id());
            w.tvar(p, true, typed)
        })?;
        self.list("buffer_map", &f.buffer_map, |w, (p, b)| {
            w.tvar_use(p)?;
            w.buffer_def(b)
        })?;
        self.atom("ret_type", Atom::OptDType(f.ret_type))?;
        self.field("body", |w| w.stmt(&f.body))?;
        if self.ignore_global_symbol {
            return self.field("attrs", |w| w.attrs_except(&f.attrs, Some("global_symbol")));
        }
        self.atom("private", Atom::Bool(f.private))?;
        self.field("attrs", |w| w.attrs(&f.attrs))
    }

    fn tir_block(&mut self, b: &'a Block) -> R {
        self.list("iter_vars", &b.iter_vars, Self::iter_var)?;
        self.atom("block name", Atom::Str(&b.name))?;
        self.list("alloc_buffers", &b.alloc_buffers, Self::buffer_def)?;
        self.list("match_buffers", &b.match_buffers, |w, m| {
            w.field("source", |w| w.region(&m.source))?;
            w.field("buffer", |w| w.buffer_def(&m.buffer))
        })?;
        self.list("reads", &b.reads, Self::region)?;
        self.list("writes", &b.writes, Self::region)?;
        self.opt("init", b.init.as_deref(), Self::stmt)?;
        self.field("annotations", |w| w.attrs(&b.annotations))?;
        self.field("body", |w| w.stmt(&b.body))
    }

    pub(super) fn stmt(&mut self, s: &'a Stmt) -> R {
        const W: &str = "statement kind";
        match s {
            Stmt::BufferStore {
                buffer, value, indices, ..
            } => {
                self.kind(W, "BufferStore")?;
                self.field("buffer", |w| w.buffer_use(buffer))?;
                self.list("indices", indices, Self::prim)?;
                self.field("value", |w| w.prim(value))
            }
            Stmt::Let { var, value, body } => {
                self.kind(W, "LetStmt")?;
                self.field("value", |w| w.prim(value))?;
                self.field("var", |w| w.tvar_def(var))?;
                self.field("body", |w| w.stmt(body))
            }
            Stmt::Attr { node, key, value, body } => {
                self.kind(W, "AttrStmt")?;
                self.opt("node", node.as_ref(), Self::tvar_use)?;
                self.atom("attr key", Atom::Str(key))?;
                self.field("value", |w| w.prim(value))?;
                self.field("body", |w| w.stmt(body))
            }
            Stmt::LaunchThread { var, tag, extent, body } => {
                self.kind(W, "LaunchThread")?;
                self.atom("thread tag", Atom::Str(tag))?;
                self.field("extent", |w| w.prim(extent))?;
                self.field("var", |w| w.tvar_def(var))?;
                self.field("body", |w| w.stmt(body))
            }
            Stmt::Assert { cond, message, body } => {
                self.kind(W, "Assert")?;
                self.field("cond", |w| w.prim(cond))?;
                self.atom("message", Atom::Str(message))?;
                self.field("body", |w| w.stmt(body))
            }
            Stmt::For(f) => {
                self.kind(W, "For")?;
                self.field("min", |w| w.prim(&f.min))?;
                self.field("extent", |w| w.prim(&f.extent))?;
                self.code("loop kind", f.kind as u64, &f.kind)?;
                self.atom("thread tag", Atom::OptStr(f.thread_tag.as_deref()))?;
                self.field("annotations", |w| w.attrs(&f.annotations))?;
                self.field("var", |w| w.tvar_def(&f.var))?;
                self.field("body", |w| w.stmt(&f.body))
            }
            Stmt::While { cond, body } => {
                self.kind(W, "While")?;
                self.field("cond", |w| w.prim(cond))?;
                self.field("body", |w| w.stmt(body))
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
            } => {
                self.kind(W, "IfThenElse")?;
                self.field("cond", |w| w.prim(cond))?;
                self.field("then_branch", |w| w.stmt(then_branch))?;
                self.opt("else_branch", else_branch.as_deref(), Self::stmt)
            }
            Stmt::Seq(x) => self.variant(W, "SeqStmt", |w| w.list("seq", x, Self::stmt)),
            Stmt::Evaluate(x) => self.variant(W, "Evaluate", |w| w.field("value", |w| w.prim(x))),
            Stmt::Alloc { buffer, body } => {
                self.kind(W, "Allocate")?;
                self.field("buffer", |w| w.buffer_def(buffer))?;
                self.field("body", |w| w.stmt(body))
            }
            Stmt::BlockRealize {
                iter_values,
                predicate,
                block,
            } => {
                self.kind(W, "BlockRealize")?;
                self.list("iter_values", iter_values, Self::prim)?;
                self.field("predicate", |w| w.prim(predicate.as_ref().unwrap_or(always())))?;
                self.field("block", |w| w.tir_block(block))
            }
        }
    }
}
