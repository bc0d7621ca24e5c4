//! Parsing `@T.prim_func` definitions into [`PrimFunc`]s.
//!
//! How TVM 0.27 constructs map onto the IR (the printer relies on the same
//! conventions):
//! - `A: T.Buffer(...)` parameters and `T.handle` parameters bound by
//!   `T.match_buffer` become a handle parameter plus an entry of `buffer_map`.
//! - `x: T.let[T.int32] = v` (TVM's flat `Bind`) is a [`Stmt::Let`] whose body is the
//!   rest of the statement list.
//! - `x: T.int32 = v` and `x = v` declare a mutable scalar: a zero-dimensional
//!   `"local"` buffer allocated by [`Stmt::Alloc`] over the rest of the statement list,
//!   with loads/stores without indices.
//! - `x = T.alloc_buffer(...)` outside blocks is a [`Stmt::Alloc`] over the rest of
//!   the statement list; `T.sblock_alloc_buffer` goes to the enclosing block (the
//!   implicit root block at function level).
//! - `T.attr({"key": value})` / `T.attr(0, "key", value)` is [`Stmt::Attr`] without a
//!   node over the rest of the statement list.
//! - `return v` is `T.evaluate(T.ret(v))`: an [`Stmt::Evaluate`] of the intrinsic `ret`.
//! - A buffer given as an attribute value (`T.sblock_attr({"k": [A]})`) is stored as
//!   its data variable (`AttrValue::PrimExpr` of `A.data`).
//! - In schedulable functions (`s_tir=True`) the body is wrapped in a root block when
//!   it allocates buffers at function level or contains blocks, as TVM does.

mod tir_access;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use rustpython_parser::ast::{self, Ranged};

use super::prim_expr::{
    arith, cast_fold, const_of, dtype_name, err_at, is_unit_buffer, match_types, span_of, t_attr, t_attr2, Evaluator,
    Resolver, Value,
};
use crate::attrs::{AttrValue, Attrs};
use crate::diagnostic::Diagnostic;
use crate::dtype::DataType;
use crate::span::LineIndex;
use crate::tir::{
    BinOp, Block, Buffer, BufferNode, BufferRegion, For, ForKind, IterKind, IterVar, MatchBufferRegion, PrimExpr,
    PrimExprKind, PrimFunc, Range, Stmt, TirVar,
};

mod stmt;
#[allow(unused_imports)]
use stmt::*;

/// Parse one `@T.prim_func` function definition (decorator included in `def`).
///
/// Names used in buffer shapes of the signature that are neither parameters nor
/// quoted (`"n"`) are taken as module-level `TypeVar`s: fresh `int64` variables.
pub fn parse_prim_func(def: &ast::StmtFunctionDef, lines: &LineIndex) -> Result<PrimFunc, Diagnostic> {
    parse_prim_func_with(def, lines, &HashSet::new())
}

/// [`parse_prim_func`] inside a module whose text declares the `TypeVar`s `typevars`: such a
/// name inside a quoted dimension (`"a * T.int64(-1)"`) is an `int64` variable, as in TVM.
pub(crate) fn parse_prim_func_with(
    def: &ast::StmtFunctionDef,
    lines: &LineIndex,
    typevars: &HashSet<String>,
) -> Result<PrimFunc, Diagnostic> {
    let mut p = TirParser::new(lines);
    p.typevars = typevars.clone();
    p.function(def)
}

#[derive(Clone, Debug)]
enum Binding {
    Var(TirVar),
    Buffer(Buffer),
    Const(Value),
    /// A thread variable from `T.env_thread("threadIdx.x")`.
    Thread(TirVar, String),
}

#[derive(Default)]
struct BlockFrame {
    name: String,
    iter_vars: Vec<IterVar>,
    iter_values: Vec<PrimExpr>,
    predicate: Option<PrimExpr>,
    reads: Option<Vec<BufferRegion>>,
    writes: Option<Vec<BufferRegion>>,
    init: Option<Stmt>,
    alloc_buffers: Vec<Buffer>,
    match_buffers: Vec<MatchBufferRegion>,
    annotations: Attrs,
}

struct TirParser<'a> {
    lines: &'a LineIndex,
    scopes: RefCell<Vec<HashMap<String, Binding>>>,
    blocks: Vec<BlockFrame>,
    loops: Vec<(TirVar, PrimExpr, PrimExpr)>,
    attrs: Attrs,
    params: Vec<TirVar>,
    buffer_map: Vec<(TirVar, Buffer)>,
    /// The module's `TypeVar` names (`int64` even inside quoted dimensions).
    typevars: HashSet<String>,
    /// Depth of the statement tree being built (bounded by `MAX_STMT_DEPTH`).
    depth: usize,
    /// The variables the signature's buffer shapes define (`"n"`), which a
    /// declaration `n = T.int32()` in the body names again rather than redefines.
    signature_vars: HashSet<u64>,
}

enum Item {
    Stmt(Stmt),
    Nothing,
    /// A statement scoping over the rest of the list.
    Scoped(Box<dyn FnOnce(Stmt) -> Stmt>),
}

impl Resolver for TirParser<'_> {
    fn resolve(&self, name: &str) -> Option<Value> {
        let scopes = self.scopes.borrow();
        for s in scopes.iter().rev() {
            if let Some(b) = s.get(name) {
                return Some(match b {
                    Binding::Var(v) | Binding::Thread(v, _) => Value::Expr(v.to_expr()),
                    Binding::Buffer(b) => Value::Buffer(b.clone()),
                    Binding::Const(c) => c.clone(),
                });
            }
        }
        None
    }
    fn resolve_attr(&self, base: &Value, attr: &str) -> Option<Value> {
        match (base, attr) {
            (Value::Buffer(b), "data") => Some(Value::Expr(b.0.data.to_expr())),
            (Value::Buffer(b), "shape") => Some(Value::Tuple(b.shape().iter().cloned().map(Value::Expr).collect())),
            (Value::Buffer(b), "dtype") => Some(Value::Str(b.dtype().to_string())),
            _ => None,
        }
    }
}

fn is_dtype_call(e: &ast::Expr) -> Option<DataType> {
    if let ast::Expr::Call(c) = e {
        if c.args.is_empty() && c.keywords.is_empty() {
            return t_attr(&c.func).and_then(dtype_name);
        }
    }
    None
}

fn kwarg<'e>(c: &'e ast::ExprCall, k: &str) -> Option<&'e ast::Expr> {
    c.keywords
        .iter()
        .find(|x| x.arg.as_ref().map(|a| a.as_str()) == Some(k))
        .map(|x| &x.value)
}

impl<'a> TirParser<'a> {
    fn new(lines: &'a LineIndex) -> TirParser<'a> {
        TirParser {
            lines,
            scopes: RefCell::new(vec![HashMap::new()]),
            blocks: Vec::new(),
            loops: Vec::new(),
            attrs: Attrs::new(),
            params: Vec::new(),
            buffer_map: Vec::new(),
            typevars: HashSet::new(),
            depth: 0,
            signature_vars: HashSet::new(),
        }
    }

    fn ev(&self) -> Evaluator<'_> {
        Evaluator {
            res: self,
            lines: self.lines,
        }
    }

    fn err(&self, node: &impl Ranged, msg: impl Into<String>) -> Diagnostic {
        err_at(self.lines, node, msg)
    }

    fn bind(&self, name: &str, b: Binding) {
        if let Some(s) = self.scopes.borrow_mut().last_mut() {
            s.insert(name.to_string(), b);
        }
    }

    fn push_scope(&self) {
        self.scopes.borrow_mut().push(HashMap::new());
    }
    fn pop_scope(&self) {
        self.scopes.borrow_mut().pop();
    }

    fn eval(&self, e: &ast::Expr) -> Result<Value, Diagnostic> {
        self.ev().eval(e)
    }
    fn prim(&self, e: &ast::Expr) -> Result<PrimExpr, Diagnostic> {
        let v = self.eval(e)?;
        self.ev().to_prim(v, e)
    }

    // ----- function -----

    fn function(&mut self, def: &ast::StmtFunctionDef) -> Result<PrimFunc, Diagnostic> {
        let mut private = false;
        let mut s_tir = false;
        let mut found = false;
        for d in &def.decorator_list {
            match d {
                ast::Expr::Attribute(_) if t_attr(d) == Some("prim_func") => found = true,
                ast::Expr::Call(c) if t_attr(&c.func) == Some("prim_func") => {
                    found = true;
                    for k in &c.keywords {
                        let key = k.arg.as_ref().map(|a| a.as_str()).unwrap_or("");
                        let v = self.eval(&k.value)?;
                        let b = match v {
                            Value::Bool(b) => b,
                            _ => return Err(self.err(&k.value, format!("`{key}` expects True or False"))),
                        };
                        match key {
                            "private" => private = b,
                            "s_tir" => s_tir = b,
                            "check_well_formed" | "persistent" => {}
                            _ => return Err(self.err(&k.value, format!("unknown T.prim_func argument `{key}`"))),
                        }
                    }
                }
                _ => {}
            }
        }
        if !found {
            return Err(self.err(def, "expected a function decorated with @T.prim_func"));
        }
        let args = &def.args;
        if !args.posonlyargs.is_empty() || args.vararg.is_some() || !args.kwonlyargs.is_empty() || args.kwarg.is_some()
        {
            return Err(self.err(def, "T.prim_func parameters must be plain positional parameters"));
        }
        // Scalar parameters are defined up front so buffer shapes can use them.
        let mut scalar_params: HashMap<String, TirVar> = HashMap::new();
        for a in &args.args {
            let Some(ann) = &a.def.annotation else {
                return Err(self.err(
                    &a.def,
                    format!("parameter `{}` needs a type annotation", a.def.arg.as_str()),
                ));
            };
            let dt = match ann.as_ref() {
                ast::Expr::Attribute(_) => t_attr(ann).and_then(dtype_name),
                e => is_dtype_call(e),
            };
            if let Some(dt) = dt {
                let name = a.def.arg.as_str();
                let v = if dt.is_handle() {
                    TirVar::new_handle(name, None, None)
                } else {
                    TirVar::new(name, dt)
                };
                scalar_params.insert(name.to_string(), v);
            }
        }
        let mut bound: HashMap<String, TirVar> = HashMap::new();
        for a in &args.args {
            let name = a.def.arg.as_str();
            let ann = a
                .def
                .annotation
                .as_deref()
                .ok_or_else(|| self.err(&a.def, "missing annotation"))?;
            if let Some(v) = scalar_params.get(name) {
                self.params.push(v.clone());
                self.bind(name, Binding::Var(v.clone()));
                bound.insert(name.to_string(), v.clone());
                continue;
            }
            let ast::Expr::Call(c) = ann else {
                return Err(self.err(ann, "expected T.Buffer(...), T.handle or a scalar type"));
            };
            if t_attr(&c.func) != Some("Buffer") {
                return Err(self.err(ann, "expected T.Buffer(...), T.handle or a scalar type"));
            }
            let buf = self.signature_buffer(name, c, &scalar_params, &mut bound)?;
            let h = TirVar::new_handle(name, Some(buf.dtype()), Some(buf.scope().to_string()));
            self.params.push(h.clone());
            self.buffer_map.push((h, buf.clone()));
            self.bind(name, Binding::Buffer(buf));
        }
        self.signature_vars = bound
            .values()
            .filter(|v| !self.params.contains(v))
            .map(TirVar::id)
            .collect();
        let ret_type = match &def.returns {
            None => None,
            Some(r) => {
                let dt = match r.as_ref() {
                    ast::Expr::Attribute(_) => t_attr(r).and_then(dtype_name),
                    ast::Expr::Constant(c) if matches!(c.value, ast::Constant::None) => None,
                    e => is_dtype_call(e),
                };
                match dt {
                    Some(d) => Some(d),
                    None if matches!(r.as_ref(), ast::Expr::Constant(_)) => None,
                    None => return Err(self.err(r.as_ref(), "expected a return type such as T.bool")),
                }
            }
        };
        // The function frame doubles as the implicit root block.
        self.blocks.push(BlockFrame {
            name: "root".into(),
            ..Default::default()
        });
        let body = self.body(&def.body)?;
        let root = self.blocks.pop().unwrap_or_default();
        let mut body = if !root.alloc_buffers.is_empty() || (s_tir && crate::text::needs_root_block(&body)) {
            Stmt::root_block(root.alloc_buffers, body)
        } else {
            body
        };
        tir_access::complete(&mut body, s_tir);
        Ok(PrimFunc {
            params: std::mem::take(&mut self.params),
            buffer_map: std::mem::take(&mut self.buffer_map),
            ret_type,
            body,
            attrs: std::mem::take(&mut self.attrs),
            private,
            s_tir,
            span: span_of(self.lines, def),
        })
    }

    /// `T.Buffer(shape, dtype, ...)` in a parameter annotation.
    fn signature_buffer(
        &self,
        name: &str,
        c: &ast::ExprCall,
        scalar_params: &HashMap<String, TirVar>,
        bound: &mut HashMap<String, TirVar>,
    ) -> Result<Buffer, Diagnostic> {
        let Some(shape_e) = c.args.first().or_else(|| kwarg(c, "shape")) else {
            return Err(self.err(c, "T.Buffer needs a shape"));
        };
        let dims: Vec<&ast::Expr> = match shape_e {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            ast::Expr::List(t) => t.elts.iter().collect(),
            other => vec![other],
        };
        let mut shape = Vec::new();
        for d in dims {
            shape.push(self.signature_dim(d, scalar_params, bound)?);
        }
        for k in &c.keywords {
            if matches!(k.arg.as_ref().map(|a| a.as_str()), Some("elem_offset" | "strides")) {
                self.define_names(&k.value, DataType::INT64, scalar_params, bound);
            }
        }
        self.buffer_from_call(name, c, shape, 1)
    }

    fn signature_dim(
        &self,
        d: &ast::Expr,
        scalar_params: &HashMap<String, TirVar>,
        bound: &mut HashMap<String, TirVar>,
    ) -> Result<PrimExpr, Diagnostic> {
        // A quoted dimension defines int32 variables (`"n"`), or is an expression over them.
        if let ast::Expr::Constant(ast::ExprConstant {
            value: ast::Constant::Str(s),
            ..
        }) = d
        {
            let src = s.trim();
            let parsed = <ast::Expr as rustpython_parser::Parse>::parse(src, "<shape>")
                .map_err(|_| self.err(d, format!("invalid shape expression \"{src}\"")))?;
            self.define_names(&parsed, DataType::INT32, scalar_params, bound);
            return self.prim_i64_env(&parsed).map_err(|mut e| {
                e.span = span_of(self.lines, d);
                e
            });
        }
        self.define_names(d, DataType::INT64, scalar_params, bound);
        self.prim(d)
    }

    fn prim_i64_env(&self, e: &ast::Expr) -> Result<PrimExpr, Diagnostic> {
        self.prim(e)
    }

    /// Define the unknown names of a signature expression as fresh variables.
    fn define_names(
        &self,
        e: &ast::Expr,
        dtype: DataType,
        scalar_params: &HashMap<String, TirVar>,
        bound: &mut HashMap<String, TirVar>,
    ) {
        match e {
            ast::Expr::Name(n) => {
                let name = n.id.as_str();
                if self.resolve(name).is_some() {
                    return;
                }
                let v = match scalar_params.get(name) {
                    Some(v) => v.clone(),
                    None if self.typevars.contains(name) => TirVar::new(name, DataType::INT64),
                    None => TirVar::new(name, dtype),
                };
                bound.insert(name.to_string(), v.clone());
                self.bind(name, Binding::Var(v));
            }
            ast::Expr::BinOp(b) => {
                self.define_names(&b.left, dtype, scalar_params, bound);
                self.define_names(&b.right, dtype, scalar_params, bound);
            }
            ast::Expr::UnaryOp(u) => self.define_names(&u.operand, dtype, scalar_params, bound),
            ast::Expr::Call(c) => {
                for a in &c.args {
                    self.define_names(a, dtype, scalar_params, bound);
                }
            }
            _ => {}
        }
    }

    /// The remaining arguments of a buffer declaration call (`dtype`, `scope`, ...).
    fn buffer_from_call(
        &self,
        name: &str,
        c: &ast::ExprCall,
        shape: Vec<PrimExpr>,
        first_pos: usize,
    ) -> Result<Buffer, Diagnostic> {
        let pos = |i: usize| c.args.get(first_pos + i);
        let dtype = match pos(0).or_else(|| kwarg(c, "dtype")) {
            Some(e) => self.ev().to_dtype(&self.eval(e)?, e)?,
            None => DataType::FLOAT32,
        };
        let scope = match kwarg(c, "scope") {
            Some(e) => self.ev().to_str(&self.eval(e)?, e)?,
            None => "global".to_string(),
        };
        let mut node = BufferNode {
            id: 0,
            name: name.to_string(),
            data: TirVar::new_handle(name, Some(dtype), Some(scope.clone())),
            dtype,
            shape,
            strides: Vec::new(),
            elem_offset: None,
            scope,
            align: -1,
            offset_factor: 0,
            axis_separators: Vec::new(),
        };
        for k in &c.keywords {
            let key = k.arg.as_ref().map(|a| a.as_str()).unwrap_or("");
            match key {
                "dtype" | "scope" | "shape" => {}
                "align" => node.align = self.ev().to_int(&self.eval(&k.value)?, &k.value)?,
                "offset_factor" => node.offset_factor = self.ev().to_int(&self.eval(&k.value)?, &k.value)?,
                "elem_offset" => node.elem_offset = Some(self.prim(&k.value)?),
                "strides" => {
                    let v = self.eval(&k.value)?;
                    let items = match v {
                        Value::Tuple(t) | Value::List(t) => t,
                        other => vec![other],
                    };
                    for it in items {
                        node.strides.push(self.ev().to_prim(it, &k.value)?);
                    }
                }
                "axis_separators" => {
                    let v = self.eval(&k.value)?;
                    if let Value::Tuple(t) | Value::List(t) = v {
                        for it in t {
                            node.axis_separators.push(self.ev().to_int(&it, &k.value)?);
                        }
                    }
                }
                "data" | "buffer_type" | "layout" => {
                    let v = self.eval(&k.value)?;
                    if !matches!(v, Value::None) {
                        return Err(self.err(&k.value, format!("`{key}=` is not supported")));
                    }
                }
                _ => return Err(self.err(&k.value, format!("unknown buffer argument `{key}`"))),
            }
        }
        if node.offset_factor != 0 && node.elem_offset.is_none() {
            let index_t = node.shape.first().map(|s| s.dtype()).unwrap_or(DataType::INT32);
            let mut name = "elem_offset".to_string();
            let mut k = 1;
            while self.resolve(&name).is_some() {
                name = format!("elem_offset_{k}");
                k += 1;
            }
            let v = TirVar::new(name.clone(), index_t);
            self.bind(&name, Binding::Var(v.clone()));
            node.elem_offset = Some(v.to_expr());
        }
        if c.args.len() > first_pos + 1 {
            return Err(self.err(&c.args[first_pos + 1], "unexpected positional argument"));
        }
        Ok(Buffer::from_node(node))
    }

    fn shape_of(&self, e: &ast::Expr) -> Result<Vec<PrimExpr>, Diagnostic> {
        let v = self.eval(e)?;
        let items = match v {
            Value::Tuple(t) | Value::List(t) => t,
            other => vec![other],
        };
        items.into_iter().map(|x| self.ev().to_prim(x, e)).collect()
    }
}
