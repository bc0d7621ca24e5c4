//! Printing [`PrimFunc`]s as `@T.prim_func` definitions, as TVM 0.27 prints them
//! (see the parser module for how TIR constructs map onto the IR).

use std::collections::{HashMap, HashSet};

use super::prim_expr::{is_scalar_buffer, quote, ExprPrinter, Names, PrimContext};
use crate::attrs::{AttrValue, Attrs};
use crate::dtype::DataType;
use crate::text::parser::prim_expr::arith;
use crate::tir::{
    BinOp, Block, Buffer, BufferRegion, For, ForKind, IterKind, PrimExpr, PrimExprKind, PrimFunc, Range, Stmt, TirVar,
};

mod stmt;
#[allow(unused_imports)]
use stmt::*;

/// Append `@T.prim_func ... def name(...): ...` to `out`, every line indented by
/// `indent` spaces.
pub fn print_prim_func(name: &str, func: &PrimFunc, indent: usize, out: &mut String) {
    print_prim_func_in(name, func, indent, &HashSet::new(), out)
}

/// [`print_prim_func`] inside a module that declares the `TypeVar`s `module_type_vars`:
/// those names are taken in the whole module text, so the function's other variables
/// of the same name print as `n_1`, ... (read back, `n` would be the module's
/// `TypeVar`, an `int64` variable, not the function's own).
pub fn print_prim_func_in(
    name: &str,
    func: &PrimFunc,
    indent: usize,
    module_type_vars: &HashSet<String>,
    out: &mut String,
) {
    let mut p = Printer::new();
    p.reserved = module_type_vars.clone();
    let lines = p.function(name, func);
    for (level, text) in lines {
        if text.is_empty() {
            out.push('\n');
            continue;
        }
        out.push_str(&" ".repeat(indent + 4 * level));
        out.push_str(&text);
        out.push('\n');
    }
}

/// The variables a module printer declares before the module as
/// `name = TypeVar("name")` for this function: `int64` scalars used in the shapes of
/// buffer parameters that are not parameters themselves, sorted by name.
pub fn prim_func_type_vars(func: &PrimFunc) -> Vec<TirVar> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (_, b) in &func.buffer_map {
        let mut exprs: Vec<&PrimExpr> = b.shape().iter().collect();
        exprs.extend(b.0.strides.iter());
        if let Some(e) = &b.0.elem_offset {
            exprs.push(e);
        }
        for e in exprs {
            collect_vars(e, &mut |v| {
                if v.dtype() == DataType::INT64 && !func.params.contains(v) && seen.insert(v.id()) {
                    out.push(v.clone());
                }
            });
        }
    }
    out.sort_by(|a, b| a.name().cmp(b.name()));
    out
}

/// The names [`print_prim_func`] gives to [`prim_func_type_vars`] (distinct variables
/// sharing a name are told apart as `n`, `n_1`, ...): what a module printer should
/// declare as `TypeVar`s for this function.
pub fn prim_func_type_var_names(func: &PrimFunc) -> Vec<String> {
    let mut p = Printer::new();
    prim_func_type_vars(func).iter().map(|v| p.define_var(v)).collect()
}

/// Visit every variable of `e` (pre-order, repeats included; a `T.let` binder
/// before its value).
pub(crate) fn collect_vars(e: &PrimExpr, f: &mut dyn FnMut(&TirVar)) {
    crate::visit::for_each_prim_expr(e, &mut |x| match x.kind() {
        PrimExprKind::Var(v) | PrimExprKind::Let { var: v, .. } => f(v),
        _ => {}
    });
}

fn uses_buffer(e: &PrimExpr, b: &Buffer) -> bool {
    let mut found = false;
    crate::visit::for_each_prim_expr(e, &mut |x| {
        found |= matches!(x.kind(), PrimExprKind::BufferLoad { buffer, .. } if buffer == b);
    });
    found
}

pub(crate) use crate::tir::expr_equal;

fn is_zero_index(indices: &[PrimExpr]) -> bool {
    indices.len() == 1 && indices[0].as_int() == Some(0)
}

fn is_zero(e: &PrimExpr) -> bool {
    match e.kind() {
        PrimExprKind::IntImm { value, .. } => *value == 0,
        PrimExprKind::FloatImm { value, .. } => *value == 0.0,
        _ => false,
    }
}

fn is_one(e: &PrimExpr) -> bool {
    match e.kind() {
        PrimExprKind::IntImm { value, .. } => *value == 1,
        PrimExprKind::FloatImm { value, .. } => *value == 1.0,
        _ => false,
    }
}

/// One printed line: indentation level and text.
type Line = (usize, String);

enum Doc {
    Line(String),
    Scope(String, Vec<Doc>),
}

#[derive(Default)]
struct NameTable {
    vars: HashMap<u64, String>,
    bufs: HashMap<u64, String>,
    data: HashMap<u64, String>,
}

impl Names for NameTable {
    fn var(&self, v: &TirVar) -> String {
        if let Some(n) = self.vars.get(&v.id()) {
            return n.clone();
        }
        if let Some(n) = self.data.get(&v.id()) {
            return format!("{n}.data");
        }
        v.name().to_string()
    }
    fn buffer(&self, b: &Buffer) -> String {
        self.bufs.get(&b.id()).cloned().unwrap_or_else(|| b.name().to_string())
    }
}

struct Printer {
    names: NameTable,
    /// Names defined per frame (to free them when the frame ends).
    frames: Vec<Vec<String>>,
    live: HashMap<String, usize>,
    loops: Vec<(TirVar, PrimExpr, PrimExpr)>,
    scalar_sugar: bool,
    /// Names the function's own variables must not take (the module's `TypeVar`s).
    reserved: HashSet<String>,
}

fn sanitize(hint: &str, fallback: &str) -> String {
    if hint.is_empty() {
        return fallback.to_string();
    }
    hint.chars()
        .map(|c| if c == '_' || c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

impl Printer {
    fn new() -> Printer {
        Printer {
            names: NameTable::default(),
            frames: vec![Vec::new()],
            live: HashMap::new(),
            loops: Vec::new(),
            scalar_sugar: false,
            reserved: HashSet::new(),
        }
    }

    fn ep(&self) -> ExprPrinter<'_> {
        ExprPrinter {
            names: &self.names,
            ctx: PrimContext::Tir,
            scalar_sugar: self.scalar_sugar,
        }
    }

    fn e(&self, x: &PrimExpr) -> String {
        self.ep().print(x)
    }

    fn unique(&mut self, hint: &str, fallback: &str) -> String {
        let base = sanitize(hint, fallback);
        let mut name = base.clone();
        let mut i = 1;
        while self.live.get(&name).copied().unwrap_or(0) > 0 {
            name = format!("{base}_{i}");
            i += 1;
        }
        *self.live.entry(name.clone()).or_insert(0) += 1;
        if let Some(f) = self.frames.last_mut() {
            f.push(name.clone());
        }
        name
    }

    fn define_var(&mut self, v: &TirVar) -> String {
        if let Some(n) = self.names.vars.get(&v.id()) {
            return n.clone();
        }
        let n = self.unique(v.name(), "v");
        self.names.vars.insert(v.id(), n.clone());
        n
    }

    fn define_buffer(&mut self, b: &Buffer) -> String {
        let n = self.unique(b.name(), "buffer");
        self.names.bufs.insert(b.id(), n.clone());
        self.names.data.insert(b.0.data.id(), n.clone());
        n
    }

    fn is_defined(&self, v: &TirVar) -> bool {
        self.names.vars.contains_key(&v.id())
    }

    fn push_frame(&mut self) {
        self.frames.push(Vec::new());
    }

    fn pop_frame(&mut self) {
        if let Some(names) = self.frames.pop() {
            for n in names {
                if let Some(c) = self.live.get_mut(&n) {
                    *c = c.saturating_sub(1);
                }
            }
        }
    }

    fn function(&mut self, name: &str, f: &PrimFunc) -> Vec<Line> {
        let mut docs: Vec<Doc> = Vec::new();
        // One-element local buffers print as scalars (`x: T.int32 = v`). TVM also keeps
        // `T.alloc_local((1,))` of `s_tir` functions as a buffer; the IR does not
        // record that distinction.
        self.scalar_sugar = true;
        // Type variables and scalar parameters are defined first.
        let type_vars = prim_func_type_vars(f);
        let tv_ids: HashSet<u64> = type_vars.iter().map(|v| v.id()).collect();
        for v in &type_vars {
            self.define_var(v);
        }
        let buffers: HashMap<u64, &Buffer> = f.buffer_map.iter().map(|(p, b)| (p.id(), b)).collect();
        for p in &f.params {
            if !buffers.contains_key(&p.id()) {
                self.define_var(p);
            }
        }
        // The module's other `TypeVar` names are taken while the variables the
        // signature's buffer shapes and the top-level declarations define are named:
        // read back, such a name would be the TypeVar. A scalar parameter (`n: T.int64`)
        // defines its name itself, and nested binders (loops, blocks) shadow it, so
        // both keep their names, as in TVM's text.
        let mut reserved = Vec::new();
        for n in std::mem::take(&mut self.reserved) {
            let live = self.live.entry(n.clone()).or_insert(0);
            if *live == 0 {
                *live = 1;
                reserved.push(n);
            }
        }
        // Shape variables that must be declared in the body: those of other dtypes
        // than int32 and int64, and every variable shared with a buffer over them.
        let mut odd_vars: HashSet<u64> = HashSet::new();
        let shape_vars: Vec<Vec<TirVar>> = buffers
            .values()
            .map(|b| {
                let mut vs = Vec::new();
                for s in b.shape() {
                    collect_vars(s, &mut |v| {
                        if !tv_ids.contains(&v.id()) && !self.is_defined(v) {
                            vs.push(v.clone());
                        }
                    });
                }
                vs
            })
            .collect();
        for vs in &shape_vars {
            for v in vs {
                if v.dtype() != DataType::INT32 && v.dtype() != DataType::INT64 {
                    odd_vars.insert(v.id());
                }
            }
        }
        let mut grew = !odd_vars.is_empty();
        while grew {
            grew = false;
            for vs in &shape_vars {
                if vs.iter().any(|v| odd_vars.contains(&v.id())) {
                    for v in vs {
                        grew |= odd_vars.insert(v.id());
                    }
                }
            }
        }
        let is_odd = |b: &Buffer| {
            let mut odd = false;
            for s in b.shape() {
                collect_vars(s, &mut |v| odd |= odd_vars.contains(&v.id()));
            }
            odd
        };
        // The `int64` shape variables (bare names) that a buffer of the signature
        // defines; one that only buffers matched in the body use is declared there
        // (`c = T.int64()`): a bare name in the body is not a signature's TypeVar.
        let mut in_signature: HashSet<u64> = HashSet::new();
        for b in buffers.values().filter(|b| !is_odd(b)) {
            for s in b.shape() {
                collect_vars(s, &mut |v| {
                    in_signature.insert(v.id());
                });
            }
        }
        let mut declared: HashSet<u64> = HashSet::new();
        let mut bound: HashSet<u64> = HashSet::new();
        let mut params = Vec::new();
        for p in &f.params {
            if let Some(b) = buffers.get(&p.id()) {
                // A shape variable of a dtype the signature cannot spell (a quoted name
                // is int32, a bare one int64) is declared in the body, where every
                // buffer over it is matched (`T.match_buffer`).
                if is_odd(b) {
                    let mut exprs: Vec<&PrimExpr> = b.shape().iter().collect();
                    exprs.extend(b.0.strides.iter());
                    exprs.extend(b.0.elem_offset.iter());
                    for e in exprs {
                        collect_vars(e, &mut |v| {
                            if tv_ids.contains(&v.id()) && !in_signature.contains(&v.id()) && declared.insert(v.id()) {
                                docs.push(Doc::Line(format!("{} = {}()", self.names.var(v), type_ann_call(v))));
                            }
                        });
                    }
                    let h = self.define_var(p);
                    let bname = self.define_buffer(b);
                    let mut none = HashSet::new();
                    let call = self.buffer_call(
                        b,
                        "match_buffer",
                        std::slice::from_ref(&h),
                        false,
                        &mut none,
                        &tv_ids,
                        &mut docs,
                    );
                    docs.push(Doc::Line(format!("{bname} = {call}")));
                    params.push(format!("{h}: T.handle"));
                    for s in b.shape() {
                        collect_vars(s, &mut |v| {
                            bound.insert(v.id());
                        });
                    }
                    continue;
                }
                let mut stringify: HashSet<u64> = HashSet::new();
                let mut shape_vars = Vec::new();
                for s in b.shape() {
                    collect_vars(s, &mut |v| {
                        shape_vars.push(v.clone());
                        if !bound.contains(&v.id()) && !tv_ids.contains(&v.id()) {
                            stringify.insert(v.id());
                        }
                    });
                }
                let bname = self.define_buffer(b);
                let ann = self.buffer_call(b, "Buffer", &[], true, &mut stringify, &tv_ids, &mut docs);
                params.push(format!("{bname}: {ann}"));
                for v in shape_vars {
                    bound.insert(v.id());
                }
            } else {
                let n = self.names.var(p);
                params.push(format!("{n}: {}", type_ann(p)));
                bound.insert(p.id());
            }
        }
        // Attributes.
        let mut attrs = f.attrs.clone();
        if attrs.get_str("global_symbol") == Some(name) {
            attrs.remove("global_symbol");
        }
        if !attrs.is_empty() {
            let d = self.attrs_dict(&attrs, true);
            docs.push(Doc::Line(format!("T.func_attr({d})")));
        }
        // Variables used but bound nowhere are declared up front (`n = T.int32()`).
        let mut binders = HashSet::new();
        let mut used = Vec::new();
        stmt_vars(&f.body, &mut binders, &mut used);
        let mut seen = HashSet::new();
        for v in used {
            if binders.contains(&v.id()) || self.is_defined(&v) || self.names.data.contains_key(&v.id()) {
                continue;
            }
            if seen.insert(v.id()) {
                let n = self.define_var(&v);
                docs.push(Doc::Line(format!("{n} = {}()", type_ann_call(&v))));
            }
        }
        for n in reserved {
            if let Some(c) = self.live.get_mut(&n) {
                *c = c.saturating_sub(1);
            }
        }
        // Body, with the implicit root block.
        match implicit_root(&f.body) {
            Some(root) => {
                docs.push(Doc::Line("# with T.sblock(\"root\"):".into()));
                for b in &root.alloc_buffers {
                    self.alloc_buffer(b, &mut docs);
                }
                self.body(&root.body, &mut docs);
            }
            None => self.body(&f.body, &mut docs),
        }
        let mut deco = String::from("@T.prim_func");
        let mut kws = Vec::new();
        if f.private {
            kws.push("private=True");
        }
        if f.s_tir {
            kws.push("s_tir=True");
        }
        if !kws.is_empty() {
            deco = format!("{deco}({})", kws.join(", "));
        }
        let ret = match f.ret_type {
            Some(t) => format!(" -> T.{t}"),
            None => String::new(),
        };
        let mut lines = vec![(0, deco), (0, format!("def {name}({}){ret}:", params.join(", ")))];
        if docs.is_empty() {
            docs.push(Doc::Line("pass".into()));
        }
        flatten(&docs, 1, &mut lines);
        lines
    }

    /// `name = T.sblock_alloc_buffer(...)` for a buffer a block allocates, after the
    /// lines its printing needs.
    fn alloc_buffer(&mut self, b: &Buffer, docs: &mut Vec<Doc>) {
        let n = self.define_buffer(b);
        let rhs = self.buffer_call(
            b,
            "sblock_alloc_buffer",
            &[],
            false,
            &mut HashSet::new(),
            &HashSet::new(),
            docs,
        );
        docs.push(Doc::Line(format!("{n} = {rhs}")));
    }

    /// `T.<method>(shape, dtype, ...)` for a buffer declaration.
    #[allow(clippy::too_many_arguments)]
    fn buffer_call(
        &mut self,
        b: &Buffer,
        method: &str,
        prefix_args: &[String],
        signature: bool,
        stringify: &mut HashSet<u64>,
        type_vars: &HashSet<u64>,
        docs: &mut Vec<Doc>,
    ) -> String {
        let mut decls: Vec<TirVar> = Vec::new();
        let mut dims = Vec::new();
        for s in b.shape() {
            let mut vars = Vec::new();
            collect_vars(s, &mut |v| vars.push(v.clone()));
            let contains_new = vars.iter().any(|v| !self.is_defined(v) || stringify.contains(&v.id()));
            let compound_tv = vars.iter().any(|v| type_vars.contains(&v.id())) && s.as_var().is_none();
            for v in &vars {
                if !self.is_defined(v) {
                    self.define_var(v);
                    decls.push(v.clone());
                }
            }
            let text = self.e(s);
            dims.push(if (signature && contains_new) || compound_tv {
                format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
            } else {
                text
            });
            for v in &vars {
                stringify.remove(&v.id());
            }
        }
        let shape = if dims.len() == 1 {
            format!("({},)", dims[0])
        } else {
            format!("({})", dims.join(", "))
        };
        let mut args: Vec<String> = prefix_args.to_vec();
        args.push(shape);
        if signature || b.dtype() != DataType::FLOAT32 {
            args.push(quote(&b.dtype().to_string()));
        }
        let mut method = method.to_string();
        let mut scope = b.scope().to_string();
        if method == "alloc_buffer" {
            if scope == "shared" {
                method = "alloc_shared".into();
                scope = "global".into();
            } else if scope == "local" {
                method = "alloc_local".into();
                scope = "global".into();
            }
        }
        if !b.0.strides.is_empty() {
            let s: Vec<String> = b.0.strides.iter().map(|x| self.e(x)).collect();
            let t = if s.len() == 1 {
                format!("({},)", s[0])
            } else {
                format!("({})", s.join(", "))
            };
            args.push(format!("strides={t}"));
        }
        let mut print_factor = false;
        if let Some(off) = &b.0.elem_offset {
            let index_t = b.shape().first().map(|s| s.dtype()).unwrap_or(DataType::INT32);
            let default = off.as_int() == Some(0) && off.dtype() == index_t;
            match off.as_var() {
                // A fresh offset variable is defined by the buffer itself (`A.elem_offset`).
                Some(v) if !self.is_defined(v) => {
                    let n = format!("{}.elem_offset", self.names.buffer(b));
                    self.names.vars.insert(v.id(), n);
                    print_factor = true;
                }
                _ if !default => args.push(format!("elem_offset={}", self.e(off))),
                _ => {}
            }
        }
        if scope != "global" {
            args.push(format!("scope={}", quote(&scope)));
        }
        if !matches!(b.0.align, -1 | 0 | 64) {
            args.push(format!("align={}", b.0.align));
        }
        if print_factor || !matches!(b.0.offset_factor, 0 | 1) {
            args.push(format!("offset_factor={}", b.0.offset_factor));
        }
        if !decls.is_empty() {
            let lhs: Vec<String> = decls.iter().map(|v| self.names.var(v)).collect();
            let rhs: Vec<String> = decls.iter().map(|v| format!("T.{}()", v.dtype())).collect();
            docs.push(Doc::Line(format!("{} = {}", lhs.join(", "), rhs.join(", "))));
        }
        format!("T.{method}({})", args.join(", "))
    }

    fn attr_value(&self, v: &AttrValue) -> String {
        let prim = |e: &PrimExpr| match e.as_var().and_then(|v| self.names.data.get(&v.id())) {
            Some(n) => n.clone(),
            None => self.e(e),
        };
        super::attr_value(v, &prim, &|m| self.attrs_dict(m, false))
    }

    fn attrs_dict(&self, a: &Attrs, top: bool) -> String {
        let mut items: Vec<(&str, &AttrValue)> = a.iter().collect();
        items.sort_by(|x, y| x.0.cmp(y.0));
        let parts: Vec<String> = items
            .iter()
            .map(|(k, v)| {
                let val = match v {
                    AttrValue::Map(m) if top && *k == "target" => format!("T.target({})", self.attrs_dict(m, false)),
                    _ => self.attr_value(v),
                };
                format!("{}: {val}", quote(k))
            })
            .collect();
        format!("{{{}}}", parts.join(", "))
    }

    fn region(&self, r: &BufferRegion) -> String {
        let name = self.names.buffer(&r.buffer);
        if r.region.is_empty() {
            return format!("{name}[()]");
        }
        let parts: Vec<String> = r
            .region
            .iter()
            .map(|Range { min, extent }| {
                if is_one(extent) && extent.as_int().is_some() {
                    self.e(min)
                } else {
                    let stop = arith(BinOp::Add, min.clone(), extent.clone());
                    format!("{}:{}", self.e(min), self.e(&stop))
                }
            })
            .collect();
        format!("{name}[{}]", parts.join(", "))
    }
}

fn type_ann(v: &TirVar) -> String {
    let d = v.dtype();
    if d.is_handle() {
        match v.0.pointee {
            Some(p) if v.0.storage_scope.as_deref().is_some_and(|s| s != "global") => {
                format!(
                    "T.handle({}, {})",
                    quote(&p.to_string()),
                    quote(v.0.storage_scope.as_deref().unwrap_or(""))
                )
            }
            _ => "T.handle".into(),
        }
    } else {
        format!("T.{d}")
    }
}

/// `T.int32` / `T.handle` as a call that creates a variable of `v`'s type.
fn type_ann_call(v: &TirVar) -> String {
    if v.dtype().is_handle() {
        "T.handle".into()
    } else {
        format!("T.{}", v.dtype())
    }
}

/// Collect the variables bound by statements (`binders`) and every variable used in
/// expressions, buffer shapes and regions (`used`, in order of appearance).
fn stmt_vars(s: &Stmt, binders: &mut HashSet<u64>, used: &mut Vec<TirVar>) {
    let e = |x: &PrimExpr, used: &mut Vec<TirVar>| collect_vars(x, &mut |v| used.push(v.clone()));
    let buffer = |b: &Buffer, binders: &mut HashSet<u64>, used: &mut Vec<TirVar>| {
        binders.insert(b.0.data.id());
        for x in b.shape().iter().chain(b.0.strides.iter()).chain(b.0.elem_offset.iter()) {
            collect_vars(x, &mut |v| used.push(v.clone()));
        }
    };
    match s {
        Stmt::BufferStore { value, indices, .. } => {
            e(value, used);
            indices.iter().for_each(|i| e(i, used));
        }
        Stmt::Let { var, value, body } => {
            e(value, used);
            binders.insert(var.id());
            stmt_vars(body, binders, used);
        }
        Stmt::Attr { node, value, body, .. } => {
            if let Some(n) = node {
                used.push(n.clone());
            }
            e(value, used);
            stmt_vars(body, binders, used);
        }
        Stmt::LaunchThread { var, extent, body, .. } => {
            e(extent, used);
            binders.insert(var.id());
            stmt_vars(body, binders, used);
        }
        Stmt::Assert { cond, body, .. } => {
            e(cond, used);
            stmt_vars(body, binders, used);
        }
        Stmt::For(For {
            var, min, extent, body, ..
        }) => {
            e(min, used);
            e(extent, used);
            binders.insert(var.id());
            stmt_vars(body, binders, used);
        }
        Stmt::While { cond, body } => {
            e(cond, used);
            stmt_vars(body, binders, used);
        }
        Stmt::If {
            cond,
            then_branch,
            else_branch,
        } => {
            e(cond, used);
            stmt_vars(then_branch, binders, used);
            if let Some(b) = else_branch {
                stmt_vars(b, binders, used);
            }
        }
        Stmt::Seq(v) => v.iter().for_each(|x| stmt_vars(x, binders, used)),
        Stmt::Evaluate(x) => e(x, used),
        Stmt::Alloc { buffer: b, body } => {
            buffer(b, binders, used);
            stmt_vars(body, binders, used);
        }
        Stmt::BlockRealize {
            iter_values,
            predicate,
            block,
        } => {
            iter_values.iter().for_each(|x| e(x, used));
            if let Some(p) = predicate {
                e(p, used);
            }
            for iv in &block.iter_vars {
                e(&iv.dom.min, used);
                e(&iv.dom.extent, used);
                binders.insert(iv.var.id());
            }
            for b in &block.alloc_buffers {
                buffer(b, binders, used);
            }
            for m in &block.match_buffers {
                buffer(&m.buffer, binders, used);
                m.source.region.iter().for_each(|r| {
                    e(&r.min, used);
                    e(&r.extent, used);
                });
            }
            for r in block.reads.iter().chain(block.writes.iter()) {
                r.region.iter().for_each(|x| {
                    e(&x.min, used);
                    e(&x.extent, used);
                });
            }
            if let Some(i) = &block.init {
                stmt_vars(i, binders, used);
            }
            stmt_vars(&block.body, binders, used);
        }
    }
}

/// The root block printed as `# with T.sblock("root"):`, if the body has one.
fn implicit_root(body: &Stmt) -> Option<&Block> {
    let Stmt::BlockRealize {
        iter_values,
        predicate,
        block,
    } = body
    else {
        return None;
    };
    if !iter_values.is_empty() || predicate.as_ref().is_some_and(|p| !(is_one(p) && p.as_int().is_some())) {
        return None;
    }
    if !block.annotations.is_empty()
        || !block.match_buffers.is_empty()
        || !block.reads.is_empty()
        || !block.writes.is_empty()
        || block.init.is_some()
    {
        return None;
    }
    let ok = !block.alloc_buffers.is_empty() || crate::text::needs_root_block(&block.body);
    ok.then_some(block.as_ref())
}

fn flatten(docs: &[Doc], level: usize, out: &mut Vec<Line>) {
    for d in docs {
        match d {
            Doc::Line(s) => out.push((level, s.clone())),
            Doc::Scope(h, body) => {
                out.push((level, h.clone()));
                if body.is_empty() {
                    out.push((level + 1, "pass".into()));
                } else {
                    flatten(body, level + 1, out);
                }
            }
        }
    }
}
