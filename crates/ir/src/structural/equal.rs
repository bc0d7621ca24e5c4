//! The equality engine: one walk over both sides, mapping definitions to their
//! counterparts and reporting the first difference with its path.

use std::collections::HashMap;

use super::{fail, list, opt, same, At, R};
use crate::attrs::{AttrValue, Attrs};
use crate::module::{BaseFunc, GlobalInfo, IRModule};
use crate::relax::{Binding, BindingBlock, Expr, ExprKind, Function, StructInfo, Var};
use crate::tir::{Block, Buffer, BufferRegion, IterVar, PrimExpr, PrimExprKind, PrimFunc, Range, Stmt, TirVar};

#[derive(Default)]
struct VarMap {
    fwd: HashMap<u64, u64>,
    rev: HashMap<u64, u64>,
}

impl VarMap {
    fn clear(&mut self) {
        self.fwd.clear();
        self.rev.clear();
    }
    /// `Some(ok)` when either side is already mapped.
    fn check(&self, a: u64, b: u64) -> Option<bool> {
        if let Some(&m) = self.fwd.get(&a) {
            return Some(m == b);
        }
        if self.rev.contains_key(&b) {
            return Some(false);
        }
        None
    }
    fn insert(&mut self, a: u64, b: u64) {
        self.fwd.insert(a, b);
        self.rev.insert(b, a);
    }
}

pub(super) struct Eq {
    map_free: bool,
    /// Leave a `PrimFunc`'s `global_symbol` attribute out.
    pub(super) ignore_global_symbol: bool,
    /// Inside a definition (a parameter's or MatchCast's StructInfo, a buffer
    /// declaration): unmapped TIR variables are mapped.
    def_mode: bool,
    rvars: VarMap,
    tvars: VarMap,
    bufs: VarMap,
}

impl Eq {
    pub(super) fn new(map_free: bool) -> Eq {
        Eq {
            map_free,
            ignore_global_symbol: false,
            def_mode: false,
            rvars: VarMap::default(),
            tvars: VarMap::default(),
            bufs: VarMap::default(),
        }
    }

    pub(super) fn with_def<T>(&mut self, f: impl FnOnce(&mut Eq) -> T) -> T {
        let old = self.def_mode;
        self.def_mode = true;
        let r = f(self);
        self.def_mode = old;
        r
    }

    // ---- module ----

    pub(super) fn module(&mut self, a: &IRModule, b: &IRModule) -> R {
        if a.functions.len() != b.functions.len() {
            let names = |m: &IRModule| m.functions.keys().map(|g| g.name().to_string()).collect::<Vec<_>>();
            return fail(format!("functions: {:?} vs {:?}", names(a), names(b)));
        }
        for (gv, fa) in &a.functions {
            let Some(fb) = b.functions.get(gv) else {
                return fail(format!("functions: `{}` missing on the right", gv.name()));
            };
            self.rvars.clear();
            self.tvars.clear();
            self.bufs.clear();
            let seg = format!("functions[{}]", gv.name());
            match (fa, fb) {
                (BaseFunc::Relax(x), BaseFunc::Relax(y)) => self.function(x, y).at(&seg)?,
                (BaseFunc::Prim(x), BaseFunc::Prim(y)) => self.prim_func(x, y).at(&seg)?,
                _ => return fail("Relax function vs PrimFunc").at(&seg),
            }
        }
        self.rvars.clear();
        self.tvars.clear();
        self.bufs.clear();
        self.attrs(&a.attrs, &b.attrs).at("attrs")?;
        if a.global_infos.len() != b.global_infos.len() {
            return fail("global_infos: different keys");
        }
        for (k, la) in &a.global_infos {
            let Some(lb) = b.global_infos.get(k) else {
                return fail(format!("global_infos: `{k}` missing on the right"));
            };
            let seg = format!("global_infos[{k}]");
            list(la, lb, &seg, |x, y| match (x, y) {
                (GlobalInfo::VDevice(p), GlobalInfo::VDevice(q)) => same(p, q, "vdevice"),
                (GlobalInfo::Dummy, GlobalInfo::Dummy) => Ok(()),
                _ => fail("global info kind"),
            })?;
        }
        Ok(())
    }

    // ---- attributes ----

    pub(super) fn attrs(&mut self, a: &Attrs, b: &Attrs) -> R {
        if a.len() != b.len() {
            let keys = |x: &Attrs| x.iter().map(|(k, _)| k.to_string()).collect::<Vec<_>>();
            return fail(format!("attribute keys {:?} vs {:?}", keys(a), keys(b)));
        }
        for (k, va) in a.iter() {
            let Some(vb) = b.get(k) else {
                return fail(format!("attribute `{k}` missing on the right"));
            };
            self.attr_value(va, vb).at(&format!("[{k:?}]"))?;
        }
        Ok(())
    }

    pub(super) fn attr_value(&mut self, a: &AttrValue, b: &AttrValue) -> R {
        use AttrValue as V;
        match (a, b) {
            (V::None, V::None) => Ok(()),
            (V::Bool(x), V::Bool(y)) => same(x, y, "bool"),
            (V::Int(x), V::Int(y)) => same(x, y, "int"),
            (V::Float(x), V::Float(y)) => same(&x.to_bits(), &y.to_bits(), "float bits"),
            (V::Str(x), V::Str(y)) => same(x, y, "string"),
            (V::DataType(x), V::DataType(y)) => same(x, y, "dtype"),
            (V::PrimExpr(x), V::PrimExpr(y)) => self.prim(x, y),
            (V::List(x), V::List(y)) => list(x, y, "", |p, q| self.attr_value(p, q)),
            (V::Map(x), V::Map(y)) => self.attrs(x, y),
            _ => fail(format!("attribute kind {a:?} vs {b:?}")),
        }
    }

    // ---- Relax ----

    pub(super) fn rvar_def(&mut self, a: &Var, b: &Var) -> R {
        match self.rvars.check(a.id(), b.id()) {
            Some(true) => return Ok(()),
            Some(false) => return fail(format!("variable {} defined against {}", a.name(), b.name())),
            None => {}
        }
        same(&a.is_dataflow(), &b.is_dataflow(), "is_dataflow")?;
        self.with_def(|e| opt(&a.0.struct_info, &b.0.struct_info, "struct_info", |x, y| e.sinfo(x, y)))?;
        self.rvars.insert(a.id(), b.id());
        Ok(())
    }

    pub(super) fn rvar_use(&mut self, a: &Var, b: &Var) -> R {
        match self.rvars.check(a.id(), b.id()) {
            Some(true) => Ok(()),
            Some(false) => fail(format!("variable {} vs {}", a.name(), b.name())),
            None if self.map_free => self.rvar_def(a, b),
            None if a.id() == b.id() => {
                self.rvars.insert(a.id(), b.id());
                Ok(())
            }
            None => fail(format!("free variables {} vs {}", a.name(), b.name())),
        }
    }

    pub(super) fn function(&mut self, a: &Function, b: &Function) -> R {
        list(&a.params, &b.params, "params", |x, y| self.rvar_def(x, y))?;
        self.expr(&a.body, &b.body).at("body")?;
        opt(&a.ret_struct_info, &b.ret_struct_info, "ret_struct_info", |x, y| {
            self.sinfo(x, y)
        })?;
        same(&a.is_pure, &b.is_pure, "is_pure")?;
        same(&a.private, &b.private, "private")?;
        self.attrs(&a.attrs, &b.attrs).at("attrs")
    }

    pub(super) fn expr(&mut self, a: &Expr, b: &Expr) -> R {
        use ExprKind as K;
        match (a.kind(), b.kind()) {
            (K::Constant { data: x }, K::Constant { data: y }) => {
                same(&x.dtype, &y.dtype, "constant dtype")?;
                same(&x.shape, &y.shape, "constant shape")?;
                if x.data != y.data {
                    return fail("constant data differs");
                }
                Ok(())
            }
            (K::Var(x), K::Var(y)) => self.rvar_use(x, y),
            (K::GlobalVar(x), K::GlobalVar(y)) => same(&x.name(), &y.name(), "global var"),
            (K::Tuple(x), K::Tuple(y)) => list(x, y, "fields", |p, q| self.expr(p, q)),
            (K::Seq(x), K::Seq(y)) => {
                list(&x.blocks, &y.blocks, "blocks", |p, q| self.block(p, q))?;
                self.expr(&x.body, &y.body).at("body")
            }
            (K::PrimValue(x), K::PrimValue(y)) => self.prim(x, y).at("value"),
            (K::StringImm(x), K::StringImm(y)) => same(x, y, "string"),
            (K::DataTypeImm(x), K::DataTypeImm(y)) => same(x, y, "dtype"),
            (K::Function(x), K::Function(y)) => self.function(x, y),
            (
                K::If {
                    cond: c1,
                    then_branch: t1,
                    else_branch: e1,
                },
                K::If {
                    cond: c2,
                    then_branch: t2,
                    else_branch: e2,
                },
            ) => {
                self.expr(c1, c2).at("cond")?;
                self.expr(t1, t2).at("then_branch")?;
                self.expr(e1, e2).at("else_branch")
            }
            (K::ExternFunc { global_symbol: x }, K::ExternFunc { global_symbol: y }) => same(x, y, "extern func"),
            (K::Call(x), K::Call(y)) => {
                self.expr(&x.op, &y.op).at("op")?;
                list(&x.args, &y.args, "args", |p, q| self.expr(p, q))?;
                self.attrs(&x.attrs, &y.attrs).at("attrs")?;
                list(&x.sinfo_args, &y.sinfo_args, "sinfo_args", |p, q| self.sinfo(p, q))
            }
            (K::ShapeExpr(x), K::ShapeExpr(y)) => list(x, y, "values", |p, q| self.prim(p, q)),
            (K::TupleGetItem { tuple: t1, index: i1 }, K::TupleGetItem { tuple: t2, index: i2 }) => {
                self.expr(t1, t2).at("tuple")?;
                same(i1, i2, "index")
            }
            (K::Op(x), K::Op(y)) => same(x, y, "op"),
            _ => fail(format!("node kind {} vs {}", expr_kind_name(a), expr_kind_name(b))),
        }
    }

    pub(super) fn block(&mut self, a: &BindingBlock, b: &BindingBlock) -> R {
        same(&a.is_dataflow, &b.is_dataflow, "is_dataflow")?;
        list(&a.bindings, &b.bindings, "bindings", |x, y| self.binding(x, y))
    }

    pub(super) fn binding(&mut self, a: &Binding, b: &Binding) -> R {
        match (a, b) {
            (Binding::VarBinding { var: v1, value: x1, .. }, Binding::VarBinding { var: v2, value: x2, .. }) => {
                self.rvar_def(v1, v2).at("var")?;
                self.expr(x1, x2).at("value")
            }
            (
                Binding::MatchCast {
                    var: v1,
                    value: x1,
                    struct_info: s1,
                    ..
                },
                Binding::MatchCast {
                    var: v2,
                    value: x2,
                    struct_info: s2,
                    ..
                },
            ) => {
                self.expr(x1, x2).at("value")?;
                self.with_def(|e| e.sinfo(s1, s2)).at("struct_info")?;
                self.rvar_def(v1, v2).at("var")
            }
            _ => fail("VarBinding vs MatchCast"),
        }
    }

    pub(super) fn sinfo(&mut self, a: &StructInfo, b: &StructInfo) -> R {
        use StructInfo as S;
        match (a, b) {
            (S::Object, S::Object) => Ok(()),
            (S::Prim(x), S::Prim(y)) => {
                same(&x.dtype, &y.dtype, "dtype")?;
                opt(&x.value, &y.value, "value", |p, q| self.prim(p, q))
            }
            (S::Shape(x), S::Shape(y)) => {
                same(&x.ndim, &y.ndim, "ndim")?;
                opt(&x.values, &y.values, "values", |p, q| {
                    list(p, q, "", |s, t| self.prim(s, t))
                })
            }
            (S::Tensor(x), S::Tensor(y)) => {
                same(&x.ndim, &y.ndim, "ndim")?;
                same(&x.dtype, &y.dtype, "dtype")?;
                same(&x.vdevice, &y.vdevice, "vdevice")?;
                opt(&x.shape, &y.shape, "shape", |p, q| self.expr(p, q))
            }
            (S::Tuple(x), S::Tuple(y)) => list(x, y, "fields", |p, q| self.sinfo(p, q)),
            (S::Func(x), S::Func(y)) => {
                self.with_def(|e| {
                    opt(&x.params, &y.params, "params", |p, q| {
                        list(p, q, "", |s, t| e.sinfo(s, t))
                    })
                })?;
                self.sinfo(&x.ret, &y.ret).at("ret")?;
                same(&x.purity, &y.purity, "purity")?;
                same(&x.derive_func, &y.derive_func, "derive_func")
            }
            _ => fail(format!(
                "StructInfo kind {} vs {}",
                sinfo_kind_name(a),
                sinfo_kind_name(b)
            )),
        }
    }

    // ---- TIR ----

    pub(super) fn tvar_def(&mut self, a: &TirVar, b: &TirVar) -> R {
        self.tvar_def_typed(a, b, true)
    }

    /// Define `a` against `b`; with `pointer_type` false the handles' pointee type and
    /// storage scope are not compared (a parameter bound in the buffer map has the
    /// buffer's type, as in TVM, whether it was written `T.handle` or `T.Buffer`).
    fn tvar_def_typed(&mut self, a: &TirVar, b: &TirVar, pointer_type: bool) -> R {
        match self.tvars.check(a.id(), b.id()) {
            Some(true) => return Ok(()),
            Some(false) => return fail(format!("TIR variable {} defined against {}", a.name(), b.name())),
            None => {}
        }
        same(&a.dtype(), &b.dtype(), "dtype")?;
        if pointer_type {
            same(&a.0.pointee, &b.0.pointee, "pointee type")?;
            same(&a.0.storage_scope, &b.0.storage_scope, "storage scope")?;
        }
        self.tvars.insert(a.id(), b.id());
        Ok(())
    }

    pub(super) fn tvar_use(&mut self, a: &TirVar, b: &TirVar) -> R {
        match self.tvars.check(a.id(), b.id()) {
            Some(true) => Ok(()),
            Some(false) => fail(format!("TIR variable {} vs {}", a.name(), b.name())),
            None if self.map_free || self.def_mode => self.tvar_def(a, b),
            None if a.id() == b.id() => {
                self.tvars.insert(a.id(), b.id());
                Ok(())
            }
            None => fail(format!("free TIR variables {} vs {}", a.name(), b.name())),
        }
    }

    pub(super) fn buffer_def(&mut self, a: &Buffer, b: &Buffer) -> R {
        match self.bufs.check(a.id(), b.id()) {
            Some(true) => return Ok(()),
            Some(false) => return fail(format!("buffer {} defined against {}", a.name(), b.name())),
            None => {}
        }
        let (x, y) = (&a.0, &b.0);
        self.with_def(|e| -> R {
            e.tvar_def(&x.data, &y.data).at("data")?;
            same(&x.dtype, &y.dtype, "dtype")?;
            list(&x.shape, &y.shape, "shape", |p, q| e.prim(p, q))?;
            list(&x.strides, &y.strides, "strides", |p, q| e.prim(p, q))?;
            let zero = PrimExpr::int(0);
            let (oa, ob) = (
                x.elem_offset.as_ref().unwrap_or(&zero),
                y.elem_offset.as_ref().unwrap_or(&zero),
            );
            e.prim(oa, ob).at("elem_offset")?;
            same(&x.scope, &y.scope, "scope")?;
            same(&x.align, &y.align, "align")?;
            same(&x.offset_factor, &y.offset_factor, "offset_factor")?;
            same(&x.axis_separators, &y.axis_separators, "axis_separators")
        })?;
        self.bufs.insert(a.id(), b.id());
        Ok(())
    }

    pub(super) fn buffer_use(&mut self, a: &Buffer, b: &Buffer) -> R {
        match self.bufs.check(a.id(), b.id()) {
            Some(true) => Ok(()),
            Some(false) => fail(format!("buffer {} vs {}", a.name(), b.name())),
            None if self.map_free => self.buffer_def(a, b),
            None if a.id() == b.id() => {
                self.bufs.insert(a.id(), b.id());
                Ok(())
            }
            None => fail(format!("free buffers {} vs {}", a.name(), b.name())),
        }
    }

    pub(super) fn prim(&mut self, a: &PrimExpr, b: &PrimExpr) -> R {
        use PrimExprKind as P;
        match (a.kind(), b.kind()) {
            (P::IntImm { value: x, dtype: dx }, P::IntImm { value: y, dtype: dy }) => {
                same(dx, dy, "dtype")?;
                same(x, y, "integer")
            }
            (P::FloatImm { value: x, dtype: dx }, P::FloatImm { value: y, dtype: dy }) => {
                same(dx, dy, "dtype")?;
                if x.to_bits() == y.to_bits() {
                    Ok(())
                } else {
                    fail(format!("float {x} vs {y}"))
                }
            }
            (P::StringImm(x), P::StringImm(y)) => same(x, y, "string"),
            (P::Var(x), P::Var(y)) => self.tvar_use(x, y),
            (P::Cast { dtype: dx, value: x }, P::Cast { dtype: dy, value: y }) => {
                same(dx, dy, "cast dtype")?;
                self.prim(x, y).at("value")
            }
            (P::Binary { op: ox, a: ax, b: bx }, P::Binary { op: oy, a: ay, b: by }) => {
                same(ox, oy, "operator")?;
                self.prim(ax, ay).at("a")?;
                self.prim(bx, by).at("b")
            }
            (P::Not(x), P::Not(y)) => self.prim(x, y).at("a"),
            (P::Select { cond: c1, t: t1, f: f1 }, P::Select { cond: c2, t: t2, f: f2 }) => {
                self.prim(c1, c2).at("cond")?;
                self.prim(t1, t2).at("true_value")?;
                self.prim(f1, f2).at("false_value")
            }
            (
                P::Call {
                    op: o1,
                    dtype: d1,
                    args: a1,
                },
                P::Call {
                    op: o2,
                    dtype: d2,
                    args: a2,
                },
            ) => {
                same(o1, o2, "intrinsic")?;
                same(d1, d2, "dtype")?;
                list(a1, a2, "args", |p, q| self.prim(p, q))
            }
            (
                P::BufferLoad {
                    buffer: b1,
                    indices: i1,
                },
                P::BufferLoad {
                    buffer: b2,
                    indices: i2,
                },
            ) => {
                self.buffer_use(b1, b2).at("buffer")?;
                list(i1, i2, "indices", |p, q| self.prim(p, q))
            }
            (
                P::Let {
                    var: v1,
                    value: x1,
                    body: b1,
                },
                P::Let {
                    var: v2,
                    value: x2,
                    body: b2,
                },
            ) => {
                self.prim(x1, x2).at("value")?;
                self.tvar_def(v1, v2).at("var")?;
                self.prim(b1, b2).at("body")
            }
            (
                P::Ramp {
                    base: b1,
                    stride: s1,
                    lanes: l1,
                },
                P::Ramp {
                    base: b2,
                    stride: s2,
                    lanes: l2,
                },
            ) => {
                same(l1, l2, "lanes")?;
                self.prim(b1, b2).at("base")?;
                self.prim(s1, s2).at("stride")
            }
            (P::Broadcast { value: x, lanes: l1 }, P::Broadcast { value: y, lanes: l2 }) => {
                same(l1, l2, "lanes")?;
                self.prim(x, y).at("value")
            }
            _ => fail(format!("PrimExpr kind {} vs {}", prim_kind_name(a), prim_kind_name(b))),
        }
    }

    pub(super) fn range(&mut self, a: &Range, b: &Range) -> R {
        self.prim(&a.min, &b.min).at("min")?;
        self.prim(&a.extent, &b.extent).at("extent")
    }

    pub(super) fn region(&mut self, a: &BufferRegion, b: &BufferRegion) -> R {
        self.buffer_use(&a.buffer, &b.buffer).at("buffer")?;
        list(&a.region, &b.region, "region", |p, q| self.range(p, q))
    }

    pub(super) fn iter_var(&mut self, a: &IterVar, b: &IterVar) -> R {
        self.range(&a.dom, &b.dom).at("dom")?;
        same(&a.kind, &b.kind, "iter kind")?;
        self.tvar_def(&a.var, &b.var).at("var")
    }

    pub(super) fn prim_func(&mut self, a: &PrimFunc, b: &PrimFunc) -> R {
        list(&a.params, &b.params, "params", |x, y| {
            let typed = !a.buffer_map.iter().any(|(p, _)| p.id() == x.id());
            self.tvar_def_typed(x, y, typed)
        })?;
        list(&a.buffer_map, &b.buffer_map, "buffer_map", |(p1, b1), (p2, b2)| {
            self.tvar_use(p1, p2)?;
            self.buffer_def(b1, b2)
        })?;
        same(&a.ret_type, &b.ret_type, "ret_type")?;
        self.stmt(&a.body, &b.body).at("body")?;
        if self.ignore_global_symbol {
            let (x, y) = (
                super::without_global_symbol(&a.attrs),
                super::without_global_symbol(&b.attrs),
            );
            return self.attrs(&x, &y).at("attrs");
        }
        same(&a.private, &b.private, "private")?;
        self.attrs(&a.attrs, &b.attrs).at("attrs")
    }

    pub(super) fn tir_block(&mut self, a: &Block, b: &Block) -> R {
        list(&a.iter_vars, &b.iter_vars, "iter_vars", |x, y| self.iter_var(x, y))?;
        same(&a.name, &b.name, "block name")?;
        list(&a.alloc_buffers, &b.alloc_buffers, "alloc_buffers", |x, y| {
            self.buffer_def(x, y)
        })?;
        list(&a.match_buffers, &b.match_buffers, "match_buffers", |x, y| {
            self.region(&x.source, &y.source).at("source")?;
            self.buffer_def(&x.buffer, &y.buffer).at("buffer")
        })?;
        list(&a.reads, &b.reads, "reads", |x, y| self.region(x, y))?;
        list(&a.writes, &b.writes, "writes", |x, y| self.region(x, y))?;
        opt(&a.init, &b.init, "init", |x, y| self.stmt(x, y))?;
        self.attrs(&a.annotations, &b.annotations).at("annotations")?;
        self.stmt(&a.body, &b.body).at("body")
    }

    pub(super) fn stmt(&mut self, a: &Stmt, b: &Stmt) -> R {
        use Stmt as S;
        match (a, b) {
            (
                S::BufferStore {
                    buffer: b1,
                    value: v1,
                    indices: i1,
                    ..
                },
                S::BufferStore {
                    buffer: b2,
                    value: v2,
                    indices: i2,
                    ..
                },
            ) => {
                self.buffer_use(b1, b2).at("buffer")?;
                list(i1, i2, "indices", |p, q| self.prim(p, q))?;
                self.prim(v1, v2).at("value")
            }
            (
                S::Let {
                    var: v1,
                    value: x1,
                    body: b1,
                },
                S::Let {
                    var: v2,
                    value: x2,
                    body: b2,
                },
            ) => {
                self.prim(x1, x2).at("value")?;
                self.tvar_def(v1, v2).at("var")?;
                self.stmt(b1, b2).at("body")
            }
            (
                S::Attr {
                    node: n1,
                    key: k1,
                    value: v1,
                    body: b1,
                },
                S::Attr {
                    node: n2,
                    key: k2,
                    value: v2,
                    body: b2,
                },
            ) => {
                opt(n1, n2, "node", |p, q| self.tvar_use(p, q))?;
                same(k1, k2, "attr key")?;
                self.prim(v1, v2).at("value")?;
                self.stmt(b1, b2).at("body")
            }
            (
                S::LaunchThread {
                    var: v1,
                    tag: t1,
                    extent: e1,
                    body: b1,
                },
                S::LaunchThread {
                    var: v2,
                    tag: t2,
                    extent: e2,
                    body: b2,
                },
            ) => {
                same(t1, t2, "thread tag")?;
                self.prim(e1, e2).at("extent")?;
                self.tvar_def(v1, v2).at("var")?;
                self.stmt(b1, b2).at("body")
            }
            (
                S::Assert {
                    cond: c1,
                    message: m1,
                    body: b1,
                },
                S::Assert {
                    cond: c2,
                    message: m2,
                    body: b2,
                },
            ) => {
                self.prim(c1, c2).at("cond")?;
                same(m1, m2, "message")?;
                self.stmt(b1, b2).at("body")
            }
            (
                S::For {
                    var: v1,
                    min: n1,
                    extent: e1,
                    kind: k1,
                    thread_tag: t1,
                    annotations: a1,
                    body: b1,
                },
                S::For {
                    var: v2,
                    min: n2,
                    extent: e2,
                    kind: k2,
                    thread_tag: t2,
                    annotations: a2,
                    body: b2,
                },
            ) => {
                self.prim(n1, n2).at("min")?;
                self.prim(e1, e2).at("extent")?;
                same(k1, k2, "loop kind")?;
                same(t1, t2, "thread tag")?;
                self.attrs(a1, a2).at("annotations")?;
                self.tvar_def(v1, v2).at("var")?;
                self.stmt(b1, b2).at("body")
            }
            (S::While { cond: c1, body: b1 }, S::While { cond: c2, body: b2 }) => {
                self.prim(c1, c2).at("cond")?;
                self.stmt(b1, b2).at("body")
            }
            (
                S::If {
                    cond: c1,
                    then_branch: t1,
                    else_branch: e1,
                },
                S::If {
                    cond: c2,
                    then_branch: t2,
                    else_branch: e2,
                },
            ) => {
                self.prim(c1, c2).at("cond")?;
                self.stmt(t1, t2).at("then_branch")?;
                opt(e1, e2, "else_branch", |p, q| self.stmt(p, q))
            }
            (S::Seq(x), S::Seq(y)) => list(x, y, "seq", |p, q| self.stmt(p, q)),
            (S::Evaluate(x), S::Evaluate(y)) => self.prim(x, y).at("value"),
            (S::Alloc { buffer: b1, body: s1 }, S::Alloc { buffer: b2, body: s2 }) => {
                self.buffer_def(b1, b2).at("buffer")?;
                self.stmt(s1, s2).at("body")
            }
            (
                S::BlockRealize {
                    iter_values: i1,
                    predicate: p1,
                    block: k1,
                },
                S::BlockRealize {
                    iter_values: i2,
                    predicate: p2,
                    block: k2,
                },
            ) => {
                list(i1, i2, "iter_values", |p, q| self.prim(p, q))?;
                let t = PrimExpr::bool(true);
                self.prim(p1.as_ref().unwrap_or(&t), p2.as_ref().unwrap_or(&t))
                    .at("predicate")?;
                self.tir_block(k1, k2).at("block")
            }
            _ => fail(format!("statement kind {} vs {}", stmt_kind_name(a), stmt_kind_name(b))),
        }
    }
}

fn expr_kind_name(e: &Expr) -> &'static str {
    use ExprKind as K;
    match e.kind() {
        K::Constant { .. } => "Constant",
        K::Var(_) => "Var",
        K::GlobalVar(_) => "GlobalVar",
        K::Tuple(_) => "Tuple",
        K::Seq(_) => "SeqExpr",
        K::PrimValue(_) => "PrimValue",
        K::StringImm(_) => "StringImm",
        K::DataTypeImm(_) => "DataTypeImm",
        K::Function(_) => "Function",
        K::If { .. } => "If",
        K::ExternFunc { .. } => "ExternFunc",
        K::Call(_) => "Call",
        K::ShapeExpr(_) => "ShapeExpr",
        K::TupleGetItem { .. } => "TupleGetItem",
        K::Op(_) => "Op",
    }
}

fn sinfo_kind_name(s: &StructInfo) -> &'static str {
    match s {
        StructInfo::Object => "Object",
        StructInfo::Prim(_) => "Prim",
        StructInfo::Shape(_) => "Shape",
        StructInfo::Tensor(_) => "Tensor",
        StructInfo::Tuple(_) => "Tuple",
        StructInfo::Func(_) => "Func",
    }
}

fn prim_kind_name(e: &PrimExpr) -> &'static str {
    use PrimExprKind as P;
    match e.kind() {
        P::IntImm { .. } => "IntImm",
        P::FloatImm { .. } => "FloatImm",
        P::StringImm(_) => "StringImm",
        P::Var(_) => "Var",
        P::Cast { .. } => "Cast",
        P::Binary { .. } => "Binary",
        P::Not(_) => "Not",
        P::Select { .. } => "Select",
        P::Call { .. } => "Call",
        P::BufferLoad { .. } => "BufferLoad",
        P::Let { .. } => "Let",
        P::Ramp { .. } => "Ramp",
        P::Broadcast { .. } => "Broadcast",
    }
}

fn stmt_kind_name(s: &Stmt) -> &'static str {
    match s {
        Stmt::BufferStore { .. } => "BufferStore",
        Stmt::Let { .. } => "LetStmt",
        Stmt::Attr { .. } => "AttrStmt",
        Stmt::LaunchThread { .. } => "LaunchThread",
        Stmt::Assert { .. } => "Assert",
        Stmt::For { .. } => "For",
        Stmt::While { .. } => "While",
        Stmt::If { .. } => "IfThenElse",
        Stmt::Seq(_) => "SeqStmt",
        Stmt::Evaluate(_) => "Evaluate",
        Stmt::Alloc { .. } => "Allocate",
        Stmt::BlockRealize { .. } => "BlockRealize",
    }
}
