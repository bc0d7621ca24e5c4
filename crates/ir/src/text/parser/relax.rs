//! Relax functions: signatures, bindings, dataflow blocks, `if`, expressions,
//! operator calls and StructInfo annotations.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rustpython_parser::ast::{self, Ranged};
use rustpython_parser::Parse;

use super::limits::MAX_NDIM;
use super::prim_expr::{parse_prim_expr, PrimEnv};
use super::{dotted_name, ModuleCx};
use crate::attrs::{AttrValue, Attrs};
use crate::diagnostic::Diagnostic;
use crate::dtype::DataType;
use crate::relax::{
    Binding, BindingBlock, Call, Expr, ExprKind, FuncStructInfo, Function, GlobalVar, NDArray, PrimStructInfo, SeqExpr,
    ShapeStructInfo, StructInfo, TensorStructInfo, Var,
};
use crate::span::Span;
use crate::text::ops::{self, ArgKind, AttrKind, Default, ParamKind};
use crate::text::printer::consts::{encode, Scalar};
use crate::tir::{PrimExpr, PrimExprKind, TirVar};

type PResult<T> = Result<T, Diagnostic>;

/// Name resolution of shape variables for the PrimExpr parser.
struct TirEnv<'x>(&'x HashMap<String, TirVar>);

impl PrimEnv for TirEnv<'_> {
    fn lookup(&self, name: &str) -> Option<TirVar> {
        self.0.get(name).cloned()
    }
}

/// Per-function parsing state.
pub(crate) struct FnCx<'m, 'a> {
    m: &'m ModuleCx<'a>,
    scopes: Vec<HashMap<String, Var>>,
    tir: HashMap<String, TirVar>,
    func_attrs: Option<Attrs>,
    tmp_counter: usize,
}

/// What ends a statement list.
enum Tail {
    Return(Expr),
    /// The last binding of an `if` branch: its name, annotation and value.
    Branch {
        name: String,
        sinfo: Option<StructInfo>,
        value: Expr,
        span: Span,
    },
}

/// A Python value written as an operator attribute.
#[derive(Clone, Debug)]
enum PyVal {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<PyVal>),
    Prim(PrimExpr),
    Map(Attrs),
}

/// Parse an `@R.function` definition. `outer` is the enclosing function of a closure.
pub(crate) fn parse_function(m: &ModuleCx, f: &ast::StmtFunctionDef, outer: Option<&FnCx>) -> PResult<Function> {
    let mut cx = FnCx {
        m,
        scopes: outer.map(|o| o.scopes.clone()).unwrap_or_else(|| vec![HashMap::new()]),
        tir: outer.map(|o| o.tir.clone()).unwrap_or_default(),
        func_attrs: None,
        tmp_counter: 0,
    };
    if outer.is_none() {
        for tv in &m.typevars {
            cx.tir.insert(tv.clone(), TirVar::new(tv.clone(), DataType::INT64));
        }
    }
    cx.scopes.push(HashMap::new());
    let (mut is_pure, mut private) = (true, false);
    for d in &f.decorator_list {
        if let ast::Expr::Call(c) = d {
            if dotted_name(&c.func).as_deref() != Some("R.function") {
                continue;
            }
            if let Some(a) = c.args.first() {
                return Err(m.err(a, "@R.function takes keyword arguments only (pure=, private=)"));
            }
            for k in &c.keywords {
                let key = k.arg.as_ref().map(|a| a.to_string()).unwrap_or_default();
                let val = match &k.value {
                    ast::Expr::Constant(ast::ExprConstant {
                        value: ast::Constant::Bool(b),
                        ..
                    }) => *b,
                    other => return Err(m.err(other, format!("expected True or False for `{key}`"))),
                };
                match key.as_str() {
                    "pure" => is_pure = val,
                    "private" => private = val,
                    "check_well_formed" => {}
                    _ => return Err(m.err(&k.value, format!("unknown @R.function argument `{key}`"))),
                }
            }
        }
    }
    let args = &f.args;
    if args.vararg.is_some() || args.kwarg.is_some() || !args.kwonlyargs.is_empty() {
        return Err(m.err(f, "Relax functions take plain positional parameters only"));
    }
    let mut params = Vec::new();
    for a in args.posonlyargs.iter().chain(&args.args) {
        let ann = a.def.annotation.as_ref().ok_or_else(|| {
            m.err(
                &a.def,
                format!(
                    "parameter `{}` needs a StructInfo annotation like R.Tensor(...)",
                    a.def.arg.as_str()
                ),
            )
        })?;
        let mut sinfo = cx.sinfo(ann, true)?;
        // A scalar parameter `n: T.int64` also names the symbolic variable `n`.
        if let StructInfo::Prim(p) = &mut sinfo {
            if p.value.is_none() && p.dtype.is_integer() && !p.dtype.is_bool() {
                let name = a.def.arg.to_string();
                let tv = match cx.tir.get(&name) {
                    Some(t) if t.dtype() == p.dtype => t.clone(),
                    _ => TirVar::new(name.clone(), p.dtype),
                };
                cx.tir.insert(name, tv.clone());
                p.value = Some(tv.to_expr());
            }
        }
        let var = Var::with(a.def.arg.to_string(), Some(sinfo), false, m.span(&a.def));
        cx.define(var.clone());
        params.push(var);
    }
    let ret_struct_info = match &f.returns {
        Some(r) => Some(cx.sinfo(r, true)?),
        None => None,
    };
    let (blocks, tail) = cx.seq(&f.body, false)?;
    let Tail::Return(body_expr) = tail else {
        return Err(m.err(f, "a Relax function must end with a return statement"));
    };
    let mut attrs = cx.func_attrs.take().unwrap_or_default();
    if outer.is_none() && !private && attrs.get("global_symbol").is_none() {
        attrs.set("global_symbol", AttrValue::Str(f.name.to_string()));
    }
    let body = Expr::with_span(
        ExprKind::Seq(SeqExpr {
            blocks,
            body: body_expr,
        }),
        m.span(f),
    );
    Ok(Function {
        params,
        body,
        ret_struct_info,
        is_pure,
        attrs,
        private,
        span: m.span(f),
    })
}

fn const_str(e: &ast::Expr) -> Option<&str> {
    match e {
        ast::Expr::Constant(ast::ExprConstant {
            value: ast::Constant::Str(s),
            ..
        }) => Some(s),
        _ => None,
    }
}

fn const_bool(e: &ast::Expr) -> Option<bool> {
    match e {
        ast::Expr::Constant(ast::ExprConstant {
            value: ast::Constant::Bool(b),
            ..
        }) => Some(*b),
        _ => None,
    }
}

fn is_none_const(e: &ast::Expr) -> bool {
    matches!(
        e,
        ast::Expr::Constant(ast::ExprConstant {
            value: ast::Constant::None,
            ..
        })
    )
}

fn kw_name(k: &ast::Keyword) -> String {
    k.arg.as_ref().map(|a| a.to_string()).unwrap_or_default()
}

impl<'m, 'a> FnCx<'m, 'a> {
    fn err(&self, node: &impl Ranged, msg: impl Into<String>) -> Diagnostic {
        self.m.err(node, msg)
    }
    fn span(&self, node: &impl Ranged) -> Span {
        self.m.span(node)
    }

    fn define(&mut self, v: Var) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(v.name().to_string(), v);
        }
    }

    fn lookup(&self, name: &str) -> Option<&Var> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    // ----- statements -------------------------------------------------------------

    fn seq(&mut self, stmts: &[ast::Stmt], is_branch: bool) -> PResult<(Vec<BindingBlock>, Tail)> {
        let mut blocks = Vec::new();
        let mut cur: Vec<Binding> = Vec::new();
        let flush = |cur: &mut Vec<Binding>, blocks: &mut Vec<BindingBlock>| {
            if !cur.is_empty() {
                blocks.push(BindingBlock {
                    bindings: std::mem::take(cur),
                    is_dataflow: false,
                    span: Span::NONE,
                });
            }
        };
        let n = stmts.len();
        for (i, stmt) in stmts.iter().enumerate() {
            let last = i + 1 == n;
            match stmt {
                ast::Stmt::Return(r) => {
                    if is_branch {
                        return Err(self.err(
                            stmt,
                            "a return inside an if branch is not supported; bind the branch result to a variable",
                        ));
                    }
                    if !last {
                        return Err(self.err(stmt, "the return statement must be the last statement of the function"));
                    }
                    let value = match &r.value {
                        Some(v) => self.expr(v)?,
                        None => Expr::with_span(ExprKind::Tuple(Vec::new()), self.span(stmt)),
                    };
                    flush(&mut cur, &mut blocks);
                    return Ok((blocks, Tail::Return(value)));
                }
                ast::Stmt::Assign(a) if last && is_branch => {
                    let [ast::Expr::Name(name)] = a.targets.as_slice() else {
                        return Err(self.err(stmt, "an if branch must end by binding one variable"));
                    };
                    let value = self.expr(&a.value)?;
                    flush(&mut cur, &mut blocks);
                    return Ok((
                        blocks,
                        Tail::Branch {
                            name: name.id.to_string(),
                            sinfo: None,
                            value,
                            span: self.span(stmt),
                        },
                    ));
                }
                ast::Stmt::AnnAssign(a) if last && is_branch && a.value.is_some() => {
                    let ast::Expr::Name(name) = &*a.target else {
                        return Err(self.err(stmt, "an if branch must end by binding one variable"));
                    };
                    let sinfo = self.sinfo(&a.annotation, false)?;
                    let value = match &a.value {
                        Some(v) => self.expr(v)?,
                        None => return Err(self.err(stmt, "expected a value")),
                    };
                    flush(&mut cur, &mut blocks);
                    return Ok((
                        blocks,
                        Tail::Branch {
                            name: name.id.to_string(),
                            sinfo: Some(sinfo),
                            value,
                            span: self.span(stmt),
                        },
                    ));
                }
                ast::Stmt::With(w) => {
                    let is_df = w.items.len() == 1
                        && matches!(&w.items[0].context_expr, ast::Expr::Call(c) if dotted_name(&c.func).as_deref() == Some("R.dataflow"));
                    if !is_df {
                        return Err(self.err(stmt, "expected `with R.dataflow():`"));
                    }
                    flush(&mut cur, &mut blocks);
                    let (block, ret) = self.dataflow(&w.body, self.span(stmt))?;
                    blocks.push(block);
                    if let Some(ret) = ret {
                        if is_branch || !last {
                            return Err(self.err(stmt, "a return inside a dataflow block must end the function"));
                        }
                        return Ok((blocks, Tail::Return(ret)));
                    }
                }
                _ => self.stmt(stmt, &mut cur, None)?,
            }
        }
        if is_branch {
            // A branch ending with an expression statement yields the empty tuple, bound to `_`.
            if let Some(last @ ast::Stmt::Expr(_)) = stmts.last() {
                let value = Expr::with_span(ExprKind::Tuple(Vec::new()), self.span(last));
                flush(&mut cur, &mut blocks);
                return Ok((
                    blocks,
                    Tail::Branch {
                        name: "_".to_string(),
                        sinfo: Some(StructInfo::unit()),
                        value,
                        span: self.span(last),
                    },
                ));
            }
            let at = stmts.last().map(|s| self.span(s)).unwrap_or(Span::NONE);
            return Err(
                Diagnostic::error("an if branch must end by binding a variable (`y = ...`)", at).with_rule("parse"),
            );
        }
        let at = stmts.last().map(|s| self.span(s)).unwrap_or(Span::NONE);
        Err(Diagnostic::error("a Relax function must end with a return statement", at).with_rule("parse"))
    }

    /// One statement that adds bindings to `cur`. `dataflow_outputs` is `Some` inside a
    /// dataflow block: the names whose binding at this statement index is an output.
    fn stmt(&mut self, stmt: &ast::Stmt, cur: &mut Vec<Binding>, df: Option<bool>) -> PResult<()> {
        let is_df_var = df.unwrap_or(false);
        match stmt {
            ast::Stmt::Pass(_) => Ok(()),
            ast::Stmt::Expr(e) => {
                if let ast::Expr::Call(c) = &*e.value {
                    if dotted_name(&c.func).as_deref() == Some("R.func_attr") {
                        let [arg] = c.args.as_slice() else {
                            return Err(self.err(stmt, "R.func_attr expects one dictionary"));
                        };
                        let attrs = self.m.attrs_dict(arg)?;
                        self.func_attrs.get_or_insert_with(Attrs::new).0.extend(attrs.0);
                        return Ok(());
                    }
                }
                if let ast::Expr::Constant(_) = &*e.value {
                    return Ok(()); // docstring
                }
                let value = self.expr(&e.value)?;
                let var = Var::with("_", None, is_df_var, self.span(stmt));
                cur.push(Binding::VarBinding {
                    var: var.clone(),
                    value,
                    span: self.span(stmt),
                });
                self.define(var);
                Ok(())
            }
            ast::Stmt::Assign(a) => {
                let [target] = a.targets.as_slice() else {
                    return Err(self.err(stmt, "chained assignment is not supported"));
                };
                match target {
                    ast::Expr::Name(name) => {
                        let name = name.id.to_string();
                        // `cls = Module`
                        if let ast::Expr::Name(v) = &*a.value {
                            if Some(v.id.as_str()) == self.m.class_name.as_deref() {
                                return Ok(());
                            }
                        }
                        // `n = T.int64()`
                        if let ast::Expr::Call(c) = &*a.value {
                            if let Some(dt) =
                                dotted_name(&c.func).and_then(|n| n.strip_prefix("T.").map(str::to_string))
                            {
                                if c.args.is_empty() && c.keywords.is_empty() {
                                    if let Ok(dtype) = dt.parse::<DataType>() {
                                        return self.declare_sym(name, dtype, stmt);
                                    }
                                }
                            }
                        }
                        self.bind(&name, None, &a.value, stmt, cur, is_df_var)
                    }
                    ast::Expr::Tuple(t) => {
                        // `m, n = T.int64(), T.int64()`
                        if let ast::Expr::Tuple(vals) = &*a.value {
                            let decls: Option<Vec<(String, DataType)>> = t
                                .elts
                                .iter()
                                .zip(&vals.elts)
                                .map(|(n, v)| match (n, v) {
                                    (ast::Expr::Name(n), ast::Expr::Call(c))
                                        if c.args.is_empty() && c.keywords.is_empty() =>
                                    {
                                        let dt = dotted_name(&c.func)?.strip_prefix("T.")?.parse::<DataType>().ok()?;
                                        Some((n.id.to_string(), dt))
                                    }
                                    _ => None,
                                })
                                .collect();
                            if let Some(decls) =
                                decls.filter(|d| d.len() == t.elts.len() && t.elts.len() == vals.elts.len())
                            {
                                for (n, dt) in decls {
                                    self.declare_sym(n, dt, stmt)?;
                                }
                                return Ok(());
                            }
                        }
                        let value = self.expr(&a.value)?;
                        let tuple = if value.as_var().is_some() {
                            value
                        } else {
                            self.tmp_counter += 1;
                            let var =
                                Var::with(format!("tuple_{}", self.tmp_counter), None, is_df_var, self.span(stmt));
                            cur.push(Binding::VarBinding {
                                var: var.clone(),
                                value,
                                span: self.span(stmt),
                            });
                            var.to_expr()
                        };
                        for (i, elt) in t.elts.iter().enumerate() {
                            let ast::Expr::Name(n) = elt else {
                                return Err(self.err(elt, "expected a variable name"));
                            };
                            let var = Var::with(n.id.to_string(), None, is_df_var, self.span(elt));
                            let value = Expr::with_span(
                                ExprKind::TupleGetItem {
                                    tuple: tuple.clone(),
                                    index: i,
                                },
                                self.span(elt),
                            );
                            cur.push(Binding::VarBinding {
                                var: var.clone(),
                                value,
                                span: self.span(stmt),
                            });
                            self.define(var);
                        }
                        Ok(())
                    }
                    _ => Err(self.err(target, "expected a variable name on the left of `=`")),
                }
            }
            ast::Stmt::AnnAssign(a) => {
                let ast::Expr::Name(name) = &*a.target else {
                    return Err(self.err(&*a.target, "expected a variable name"));
                };
                let mut sinfo = self.sinfo(&a.annotation, false)?;
                // `extent: T.int64 = source` binds a scalar that also names the symbolic
                // variable `extent` (TVM 0.27 unifies the two), as a parameter `n: T.int64` does.
                if let (StructInfo::Prim(p), Some(_)) = (&mut sinfo, &a.value) {
                    let t_form = dotted_name(&a.annotation).is_some_and(|n| n.starts_with("T."));
                    if t_form && p.value.is_none() && p.dtype.is_integer() && !p.dtype.is_bool() {
                        let tv = TirVar::new(name.id.to_string(), p.dtype);
                        self.tir.insert(name.id.to_string(), tv.clone());
                        p.value = Some(tv.to_expr());
                    }
                }
                match &a.value {
                    Some(v) => self.bind(name.id.as_str(), Some(sinfo), v, stmt, cur, is_df_var),
                    None => {
                        // A declaration of a variable that is never bound (printed by TVM for
                        // undefined variables): referencing it is reported by the checker.
                        let var = Var::with(name.id.to_string(), Some(sinfo), is_df_var, self.span(stmt));
                        self.define(var);
                        Ok(())
                    }
                }
            }
            ast::Stmt::If(s) => {
                if s.orelse.is_empty() {
                    return Err(self.err(stmt, "an if statement needs an else branch in Relax"));
                }
                let cond = self.expr(&s.test)?;
                self.scopes.push(HashMap::new());
                let then = self.seq(&s.body, true);
                self.scopes.pop();
                let (then_blocks, then_tail) = then?;
                self.scopes.push(HashMap::new());
                let els = self.seq(&s.orelse, true);
                self.scopes.pop();
                let (else_blocks, else_tail) = els?;
                let (
                    Tail::Branch {
                        name: n1,
                        sinfo: s1,
                        value: v1,
                        ..
                    },
                    Tail::Branch {
                        name: n2,
                        sinfo: s2,
                        value: v2,
                        span: sp2,
                    },
                ) = (then_tail, else_tail)
                else {
                    return Err(self.err(stmt, "both branches of an if must end by binding a variable"));
                };
                if n1 != n2 {
                    return Err(Diagnostic::error(
                        format!("both branches of an if must bind the same variable, found `{n1}` and `{n2}`"),
                        sp2,
                    )
                    .with_rule("parse"));
                }
                let then_branch = Expr::new(ExprKind::Seq(SeqExpr {
                    blocks: then_blocks,
                    body: v1,
                }));
                let else_branch = Expr::new(ExprKind::Seq(SeqExpr {
                    blocks: else_blocks,
                    body: v2,
                }));
                let value = Expr::with_span(
                    ExprKind::If {
                        cond,
                        then_branch,
                        else_branch,
                    },
                    self.span(stmt),
                );
                let var = Var::with(n1, s1.or(s2), is_df_var, self.span(stmt));
                cur.push(Binding::VarBinding {
                    var: var.clone(),
                    value,
                    span: self.span(stmt),
                });
                self.define(var);
                Ok(())
            }
            ast::Stmt::FunctionDef(f) => {
                if super::decorator_kind(f) != Some(super::DecoKind::Relax) {
                    return Err(self.err(stmt, "a local function must be decorated with @R.function"));
                }
                // The function's own name is visible in its body (recursion).
                let var = Var::with(f.name.to_string(), None, is_df_var, self.span(stmt));
                self.define(var.clone());
                let func = parse_function(self.m, f, Some(self))?;
                let value = Expr::with_span(ExprKind::Function(func), self.span(stmt));
                cur.push(Binding::VarBinding {
                    var: var.clone(),
                    value,
                    span: self.span(stmt),
                });
                self.define(var);
                Ok(())
            }
            ast::Stmt::With(_) => Err(self.err(stmt, "nested dataflow blocks are not allowed")),
            _ => Err(self.err(
                stmt,
                "expected a binding (`x = ...`), `with R.dataflow():`, `if`/`else` or `return`",
            )),
        }
    }

    /// `n = T.int64()` in a Relax function: declares the symbolic variable `n`, or,
    /// as TVM's parser does, names the one already in scope (from a parameter's
    /// StructInfo or an earlier declaration) when it has the same dtype.
    fn declare_sym(&mut self, name: String, dtype: DataType, node: &impl Ranged) -> Result<(), Diagnostic> {
        if let Some(prev) = self.tir.get(&name) {
            if prev.dtype() != dtype {
                return Err(self.err(
                    node,
                    format!(
                        "Expected the same dtype for PrimType values but got {dtype} vs {}",
                        prev.dtype()
                    ),
                ));
            }
            return Ok(());
        }
        self.tir.insert(name.clone(), TirVar::new(name, dtype));
        Ok(())
    }

    fn bind(
        &mut self,
        name: &str,
        ann: Option<StructInfo>,
        value: &ast::Expr,
        stmt: &ast::Stmt,
        cur: &mut Vec<Binding>,
        is_df_var: bool,
    ) -> PResult<()> {
        let span = self.span(stmt);
        if let ast::Expr::Call(c) = value {
            if dotted_name(&c.func).as_deref() == Some("R.match_cast") {
                let (v, s) = match (c.args.as_slice(), c.keywords.as_slice()) {
                    ([v, s], []) => (v, s),
                    ([v], [k]) if kw_name(k) == "ty" || kw_name(k) == "struct_info" => (v, &k.value),
                    _ => return Err(self.err(value, "R.match_cast expects a value and a StructInfo")),
                };
                let value = self.expr(v)?;
                let sinfo = self.sinfo(s, true)?;
                let var = Var::with(name, Some(ann.unwrap_or_else(|| sinfo.clone())), is_df_var, span);
                cur.push(Binding::MatchCast {
                    var: var.clone(),
                    value,
                    struct_info: sinfo,
                    span,
                });
                self.define(var);
                return Ok(());
            }
        }
        let value = self.expr(value)?;
        let var = Var::with(name, ann, is_df_var, span);
        cur.push(Binding::VarBinding {
            var: var.clone(),
            value,
            span,
        });
        self.define(var);
        Ok(())
    }

    /// A dataflow block; also returns the value of a `return` ending the block (its
    /// variables become outputs, as TVM does).
    fn dataflow(&mut self, body: &[ast::Stmt], span: Span) -> PResult<(BindingBlock, Option<Expr>)> {
        // The names listed in R.output(...) stay visible after the block: their last
        // binding in the block is a Var, every other binding a DataflowVar.
        let mut outputs: HashSet<String> = HashSet::new();
        let mut output_stmt = None;
        let mut ret_stmt: Option<(usize, &ast::Expr)> = None;
        if let Some(ast::Stmt::Return(r)) = body.last() {
            if let Some(v) = &r.value {
                let mut names = Vec::new();
                collect_names(v, &mut names);
                outputs.extend(names);
                ret_stmt = Some((body.len() - 1, v));
            }
        }
        for (i, s) in body.iter().enumerate() {
            if let ast::Stmt::Expr(e) = s {
                if let ast::Expr::Call(c) = &*e.value {
                    if dotted_name(&c.func).as_deref() == Some("R.output") {
                        if i + 1 != body.len() {
                            return Err(self.err(s, "R.output(...) must be the last statement of a dataflow block"));
                        }
                        for a in &c.args {
                            let ast::Expr::Name(n) = a else {
                                return Err(self.err(a, "R.output takes variable names"));
                            };
                            outputs.insert(n.id.to_string());
                        }
                        output_stmt = Some(i);
                    }
                }
            }
        }
        let mut last_binding: HashMap<String, usize> = HashMap::new();
        for (i, s) in body.iter().enumerate() {
            for n in bound_names(s) {
                last_binding.insert(n, i);
            }
        }
        let mut bindings = Vec::new();
        for (i, s) in body.iter().enumerate() {
            if Some(i) == output_stmt {
                for name in &outputs {
                    if self.lookup(name).is_none() {
                        return Err(self.err(s, format!("R.output names `{name}`, which is not defined")));
                    }
                }
                continue;
            }
            if ret_stmt.is_some_and(|(r, _)| r == i) {
                continue;
            }
            if matches!(s, ast::Stmt::If(_) | ast::Stmt::FunctionDef(_) | ast::Stmt::Return(_)) {
                if let ast::Stmt::Return(_) = s {
                    return Err(self.err(s, "a return statement cannot be inside a dataflow block"));
                }
            }
            let names = bound_names(s);
            let is_output = names
                .iter()
                .any(|n| outputs.contains(n) && last_binding.get(n) == Some(&i));
            self.stmt(s, &mut bindings, Some(!is_output))?;
        }
        let ret = match ret_stmt {
            Some((_, v)) => Some(self.expr(v)?),
            None => None,
        };
        Ok((
            BindingBlock {
                bindings,
                is_dataflow: true,
                span,
            },
            ret,
        ))
    }

    // ----- StructInfo -------------------------------------------------------------

    /// Parse a StructInfo annotation. `define`: string dimensions (`R.Tensor(("n", 4))`)
    /// may introduce new shape variables.
    pub(crate) fn sinfo(&mut self, e: &ast::Expr, define: bool) -> PResult<StructInfo> {
        let (name, call) = match e {
            ast::Expr::Call(c) => (dotted_name(&c.func), Some(c)),
            ast::Expr::Constant(ast::ExprConstant {
                value: ast::Constant::None,
                ..
            }) => {
                return Ok(StructInfo::unit());
            }
            other => (dotted_name(other), None),
        };
        let Some(name) = name else {
            return Err(self.err(e, "expected a StructInfo annotation like R.Tensor(...)"));
        };
        if let Some((base, field)) = name.rsplit_once('.') {
            if matches!(field, "ty" | "struct_info") && call.is_none() {
                if let Some(v) = self.lookup(base) {
                    return v
                        .struct_info()
                        .cloned()
                        .ok_or_else(|| self.err(e, format!("`{base}` has no StructInfo annotation")));
                }
            }
        }
        let no_args = |cx: &Self| -> PResult<()> {
            match call {
                Some(c) if !c.args.is_empty() || !c.keywords.is_empty() => {
                    Err(cx.err(e, format!("{name} takes no arguments")))
                }
                _ => Ok(()),
            }
        };
        match name.as_str() {
            "R.Object" | "R.Any" => {
                no_args(self)?;
                Ok(StructInfo::Object)
            }
            "I.StringType" => {
                no_args(self)?;
                Ok(StructInfo::Object)
            }
            "R.Tensor" => match call {
                None => Ok(StructInfo::tensor_ndim(DataType::VOID, -1)),
                Some(c) => self.tensor_sinfo(c, define),
            },
            "R.Shape" => match call {
                None => Ok(StructInfo::Shape(ShapeStructInfo { values: None, ndim: -1 })),
                Some(c) => {
                    let mut values = None;
                    let mut ndim = -1i32;
                    let mut set = |cx: &mut Self, key: &str, v: &ast::Expr| -> PResult<()> {
                        match key {
                            "values" => {
                                if !is_none_const(v) {
                                    let (ast::Expr::List(ast::ExprList { elts, .. })
                                    | ast::Expr::Tuple(ast::ExprTuple { elts, .. })) = v
                                    else {
                                        return Err(cx.err(v, "expected a list of dimensions like [n, 4]"));
                                    };
                                    let dims = elts.iter().map(|d| cx.dim(d, define)).collect::<PResult<Vec<_>>>()?;
                                    values = Some(dims);
                                }
                            }
                            "ndim" => ndim = cx.ndim_literal(v)?,
                            _ => return Err(cx.err(v, format!("unexpected argument `{key}` of R.Shape"))),
                        }
                        Ok(())
                    };
                    for (i, a) in c.args.iter().enumerate() {
                        let key = ["values", "ndim"]
                            .get(i)
                            .copied()
                            .ok_or_else(|| self.err(a, "R.Shape takes at most 2 arguments"))?;
                        set(self, key, a)?;
                    }
                    for k in &c.keywords {
                        set(self, &kw_name(k), &k.value)?;
                    }
                    if let Some(v) = &values {
                        if ndim != -1 && ndim != v.len() as i32 {
                            return Err(self.err(e, "R.Shape: ndim does not match the number of values"));
                        }
                        ndim = v.len() as i32;
                    }
                    Ok(StructInfo::Shape(ShapeStructInfo { values, ndim }))
                }
            },
            "R.Prim" => {
                let c = call.ok_or_else(|| self.err(e, "R.Prim needs a dtype, like R.Prim(\"int64\")"))?;
                let mut dtype = None;
                let mut value = None;
                for (i, a) in c.args.iter().enumerate() {
                    if i > 0 {
                        return Err(self.err(a, "R.Prim takes one dtype argument"));
                    }
                    dtype = Some(self.dtype_literal(a)?);
                }
                for k in &c.keywords {
                    match kw_name(k).as_str() {
                        "dtype" => dtype = Some(self.dtype_literal(&k.value)?),
                        "value" => value = Some(self.prim(&k.value)?),
                        other => return Err(self.err(&k.value, format!("unexpected argument `{other}` of R.Prim"))),
                    }
                }
                match (dtype, value) {
                    (Some(d), v) => Ok(StructInfo::Prim(PrimStructInfo { dtype: d, value: v })),
                    (None, Some(v)) => Ok(StructInfo::prim_value(v)),
                    (None, None) => Err(self.err(e, "R.Prim needs a dtype, like R.Prim(\"int64\")")),
                }
            }
            "R.Tuple" => match call {
                None => Ok(StructInfo::unit()),
                Some(c) => {
                    if !c.keywords.is_empty() {
                        return Err(self.err(e, "R.Tuple takes its fields as positional arguments"));
                    }
                    let fields: Vec<&ast::Expr> = match c.args.as_slice() {
                        [ast::Expr::List(l)] => l.elts.iter().collect(),
                        [ast::Expr::Tuple(t)] => t.elts.iter().collect(),
                        args => args.iter().collect(),
                    };
                    Ok(StructInfo::Tuple(
                        fields
                            .into_iter()
                            .map(|f| self.sinfo(f, define))
                            .collect::<PResult<_>>()?,
                    ))
                }
            },
            "R.Callable" => match call {
                None => Ok(StructInfo::Func(FuncStructInfo {
                    params: None,
                    ret: Box::new(StructInfo::Object),
                    purity: false,
                    derive_func: None,
                })),
                Some(c) => {
                    let mut params: Option<Vec<StructInfo>> = None;
                    let mut ret = StructInfo::Object;
                    let mut purity = None;
                    let mut derive = None;
                    let mut set = |cx: &mut Self, key: &str, v: &ast::Expr| -> PResult<()> {
                        match key {
                            "params" => {
                                if !is_none_const(v) {
                                    params = Some(match v {
                                        ast::Expr::List(ast::ExprList { elts, .. })
                                        | ast::Expr::Tuple(ast::ExprTuple { elts, .. }) => {
                                            elts.iter().map(|p| cx.sinfo(p, define)).collect::<PResult<_>>()?
                                        }
                                        single => vec![cx.sinfo(single, define)?],
                                    })
                                }
                            }
                            "ret" => {
                                if !is_none_const(v) {
                                    ret = cx.sinfo(v, define)?
                                }
                            }
                            "purity" => {
                                purity = Some(const_bool(v).ok_or_else(|| cx.err(v, "expected True or False"))?)
                            }
                            "derive_func" => {
                                derive = Some(const_str(v).ok_or_else(|| cx.err(v, "expected a string"))?.to_string())
                            }
                            _ => return Err(cx.err(v, format!("unexpected argument `{key}` of R.Callable"))),
                        }
                        Ok(())
                    };
                    for (i, a) in c.args.iter().enumerate() {
                        let key = ["params", "ret", "purity", "derive_func"]
                            .get(i)
                            .copied()
                            .ok_or_else(|| self.err(a, "R.Callable takes at most 4 arguments"))?;
                        set(self, key, a)?;
                    }
                    for k in &c.keywords {
                        set(self, &kw_name(k), &k.value)?;
                    }
                    let purity = purity.unwrap_or(params.is_some());
                    Ok(StructInfo::Func(FuncStructInfo {
                        params,
                        ret: Box::new(ret),
                        purity,
                        derive_func: derive,
                    }))
                }
            },
            "R.DTensor" | "R.dist.DTensor" => Err(self.err(e, "distributed tensors (R.DTensor) are not supported")),
            n if n.starts_with("T.") && call.is_none() => {
                let dt: DataType = n[2..].parse().map_err(|_| {
                    self.err(
                        e,
                        format!("expected a StructInfo annotation like R.Tensor(...), found `{n}`"),
                    )
                })?;
                Ok(StructInfo::prim(dt))
            }
            other => Err(self.err(
                e,
                format!("expected a StructInfo annotation like R.Tensor(...), found `{other}`"),
            )),
        }
    }

    fn tensor_sinfo(&mut self, c: &ast::ExprCall, define: bool) -> PResult<StructInfo> {
        let mut shape_e: Option<&ast::Expr> = None;
        let mut dtype_e: Option<&ast::Expr> = None;
        let mut vdev_e: Option<&ast::Expr> = None;
        let mut ndim_e: Option<&ast::Expr> = None;
        for (i, a) in c.args.iter().enumerate() {
            match i {
                0 => shape_e = Some(a),
                1 => dtype_e = Some(a),
                2 => vdev_e = Some(a),
                3 => ndim_e = Some(a),
                _ => return Err(self.err(a, "R.Tensor takes at most 4 arguments")),
            }
        }
        for k in &c.keywords {
            let slot = match kw_name(k).as_str() {
                "shape" => &mut shape_e,
                "dtype" => &mut dtype_e,
                "vdevice" => &mut vdev_e,
                "ndim" => &mut ndim_e,
                other => return Err(self.err(&k.value, format!("unexpected argument `{other}` of R.Tensor"))),
            };
            *slot = Some(&k.value);
        }
        // R.Tensor("float32"): a string shape is the dtype.
        if let (Some(s), None) = (shape_e, dtype_e) {
            if const_str(s).is_some() {
                dtype_e = Some(s);
                shape_e = None;
            }
        }
        let dtype = match dtype_e {
            Some(d) if !is_none_const(d) => self.dtype_literal(d)?,
            _ => DataType::VOID,
        };
        let mut ndim = match ndim_e {
            Some(n) => self.ndim_literal(n)?,
            None => -1,
        };
        let shape = match shape_e {
            None => None,
            Some(s) if is_none_const(s) => None,
            Some(s @ (ast::Expr::Tuple(_) | ast::Expr::List(_))) => {
                let (ast::Expr::Tuple(ast::ExprTuple { elts, .. }) | ast::Expr::List(ast::ExprList { elts, .. })) = s
                else {
                    unreachable!()
                };
                let dims = elts.iter().map(|d| self.dim(d, define)).collect::<PResult<Vec<_>>>()?;
                if ndim != -1 && ndim != dims.len() as i32 {
                    return Err(self.err(s, "R.Tensor: ndim does not match the shape"));
                }
                ndim = dims.len() as i32;
                Some(Expr::with_span(ExprKind::ShapeExpr(dims), self.span(s)))
            }
            Some(s @ ast::Expr::Name(n)) => {
                let var = self
                    .lookup(n.id.as_str())
                    .cloned()
                    .ok_or_else(|| self.err(s, format!("undefined shape variable `{}` in R.Tensor", n.id.as_str())))?;
                if let Some(StructInfo::Shape(sh)) = var.struct_info() {
                    if ndim == -1 {
                        ndim = sh.ndim;
                    }
                }
                Some(var.to_expr())
            }
            Some(s) => match self.expr(s)? {
                e @ Expr(_) if matches!(e.kind(), ExprKind::ShapeExpr(_)) => {
                    if let ExprKind::ShapeExpr(d) = e.kind() {
                        ndim = d.len() as i32;
                    }
                    Some(e)
                }
                _ => return Err(self.err(s, "expected a shape like (n, 4) or a shape variable")),
            },
        };
        let vdevice = match vdev_e {
            Some(v) if !is_none_const(v) => {
                let spec =
                    const_str(v).ok_or_else(|| self.err(v, "expected a vdevice string like \"llvm:0:global\""))?;
                Some(self.m.resolve_vdevice(spec, v)?)
            }
            _ => None,
        };
        Ok(StructInfo::Tensor(TensorStructInfo {
            shape,
            dtype,
            vdevice,
            ndim,
        }))
    }

    fn dtype_literal(&self, e: &ast::Expr) -> PResult<DataType> {
        let s = match e {
            ast::Expr::Constant(ast::ExprConstant {
                value: ast::Constant::Str(s),
                ..
            }) => s.clone(),
            other => match dotted_name(other) {
                Some(n) if n.starts_with("T.") => n[2..].to_string(),
                _ => return Err(self.err(e, "expected a dtype string like \"float32\"")),
            },
        };
        s.parse().map_err(|_| self.err(e, format!("unknown dtype \"{s}\"")))
    }

    fn int_literal(&self, e: &ast::Expr) -> PResult<i64> {
        match self.m.attr_value(e) {
            Ok(AttrValue::Int(i)) => Ok(i),
            _ => Err(self.err(e, "expected an integer")),
        }
    }

    /// An `ndim=` value: -1 (unknown) or a rank up to [`MAX_NDIM`].
    fn ndim_literal(&self, e: &ast::Expr) -> PResult<i32> {
        let n = self.int_literal(e)?;
        if !(-1..=MAX_NDIM).contains(&n) {
            return Err(self.err(
                e,
                format!("ndim must be -1 (unknown) or a rank between 0 and {MAX_NDIM}, got {n}"),
            ));
        }
        Ok(n as i32)
    }

    /// A shape dimension: an integer, a shape variable, an expression or a string.
    fn dim(&mut self, e: &ast::Expr, define: bool) -> PResult<PrimExpr> {
        if let Some(s) = const_str(e) {
            let parsed = ast::Expr::parse(s, "<dim>").map_err(|_| {
                self.err(
                    e,
                    format!("invalid dimension \"{s}\": expected an expression like \"n\""),
                )
            })?;
            let mut names = Vec::new();
            collect_names(&parsed, &mut names);
            for n in names {
                if !self.tir.contains_key(&n) {
                    if !define {
                        return Err(self.err(e, format!("undefined symbolic variable `{n}`")));
                    }
                    self.tir.insert(n.clone(), TirVar::new(n, DataType::INT64));
                }
            }
            let at = self.span(e);
            let sub = LineShift {
                inner: crate::span::LineIndex::new(s),
            };
            return self
                .prim_with(&parsed, &sub.inner)
                .map(to_i64)
                .map_err(|d| Diagnostic { span: at, ..d });
        }
        Ok(to_i64(self.prim(e)?))
    }

    pub(crate) fn prim(&self, e: &ast::Expr) -> PResult<PrimExpr> {
        self.prim_with(e, self.m.lines)
    }

    fn prim_with(&self, e: &ast::Expr, lines: &crate::span::LineIndex) -> PResult<PrimExpr> {
        parse_prim_expr(e, &TirEnv(&self.tir), lines)
    }

    // ----- expressions ------------------------------------------------------------

    pub(crate) fn expr(&mut self, e: &ast::Expr) -> PResult<Expr> {
        let span = self.span(e);
        match e {
            ast::Expr::Name(n) => {
                let name = n.id.as_str();
                if let Some(v) = self.lookup(name) {
                    return Ok(Expr::with_span(ExprKind::Var(v.clone()), span));
                }
                if let Some(t) = self.tir.get(name) {
                    return Ok(Expr::with_span(ExprKind::PrimValue(t.to_expr()), span));
                }
                if self.m.globals.contains(name) {
                    return Ok(Expr::with_span(ExprKind::GlobalVar(GlobalVar::new(name)), span));
                }
                Err(self.err(e, format!("undefined variable `{name}`")))
            }
            ast::Expr::Attribute(a) => {
                let base = dotted_name(&a.value).unwrap_or_default();
                let attr = a.attr.as_str();
                if base == "cls" || Some(base.as_str()) == self.m.class_name.as_deref() {
                    if !self.m.globals.contains(attr) {
                        return Err(self.err(e, format!("the module has no function `{attr}`")));
                    }
                    return Ok(Expr::with_span(ExprKind::GlobalVar(GlobalVar::new(attr)), span));
                }
                Err(self.err(
                    e,
                    format!("unexpected `{base}.{attr}` here: expected a Relax expression"),
                ))
            }
            ast::Expr::Tuple(t) => {
                let fields = t.elts.iter().map(|x| self.expr(x)).collect::<PResult<Vec<_>>>()?;
                Ok(Expr::with_span(ExprKind::Tuple(fields), span))
            }
            ast::Expr::List(t) => {
                let fields = t.elts.iter().map(|x| self.expr(x)).collect::<PResult<Vec<_>>>()?;
                Ok(Expr::with_span(ExprKind::Tuple(fields), span))
            }
            ast::Expr::Constant(_) => self.literal(e, ArgKind::Prim),
            ast::Expr::Subscript(s) => {
                if let ast::Expr::Subscript(inner) = &*s.value {
                    if dotted_name(&inner.value).as_deref() == Some("metadata") {
                        let key = const_str(&inner.slice);
                        let idx = match self.m.attr_value(&s.slice) {
                            Ok(AttrValue::Int(i)) if i >= 0 => Some(i as usize),
                            _ => None,
                        };
                        let (Some(key), Some(idx)) = (key, idx) else {
                            return Err(self.err(e, "expected metadata[\"relax.expr.Constant\"][index]"));
                        };
                        let Some(meta) = &self.m.metadata else {
                            return Err(self.err(
                                e,
                                "metadata[...] constants need the metadata section, which this text does not contain",
                            ));
                        };
                        let data =
                            meta.get(key).and_then(|l| l.get(idx)).cloned().ok_or_else(|| {
                                self.err(e, format!("the metadata section has no constant {key}[{idx}]"))
                            })?;
                        return Ok(Expr::with_span(ExprKind::Constant { data }, span));
                    }
                }
                let tuple = self.expr(&s.value)?;
                let index = match self.m.attr_value(&s.slice) {
                    Ok(AttrValue::Int(i)) if i >= 0 => i as usize,
                    _ => return Err(self.err(&*s.slice, "expected a non-negative integer tuple index")),
                };
                Ok(Expr::with_span(ExprKind::TupleGetItem { tuple, index }, span))
            }
            ast::Expr::Call(c) => self.call(c, e),
            ast::Expr::BinOp(_) | ast::Expr::Compare(_) | ast::Expr::UnaryOp(_) | ast::Expr::BoolOp(_) => {
                if let ast::Expr::UnaryOp(u) = e {
                    if matches!(u.op, ast::UnaryOp::USub) && matches!(&*u.operand, ast::Expr::Constant(_)) {
                        return self.literal(e, ArgKind::Prim);
                    }
                }
                match self.prim(e) {
                    Ok(p) => Ok(Expr::with_span(ExprKind::PrimValue(p), span)),
                    Err(d) => match self.relax_operator(e)? {
                        Some(x) => Ok(x),
                        None => Err(d),
                    },
                }
            }
            _ => Err(self.err(e, "expected a Relax expression")),
        }
    }

    /// `a + b`, `a * b`, `-a`, `a < b` on Relax values: the matching operator call.
    fn relax_operator(&mut self, e: &ast::Expr) -> PResult<Option<Expr>> {
        let span = self.span(e);
        let (op, operands): (&str, Vec<&ast::Expr>) = match e {
            ast::Expr::BinOp(b) => (
                match b.op {
                    ast::Operator::Add => "relax.add",
                    ast::Operator::Sub => "relax.subtract",
                    ast::Operator::Mult => "relax.multiply",
                    ast::Operator::Div => "relax.divide",
                    ast::Operator::FloorDiv => "relax.floor_divide",
                    ast::Operator::Mod => "relax.floor_mod",
                    ast::Operator::Pow => "relax.power",
                    _ => return Ok(None),
                },
                vec![&*b.left, &*b.right],
            ),
            ast::Expr::Compare(c) if c.ops.len() == 1 => (
                match c.ops[0] {
                    ast::CmpOp::Eq => "relax.equal",
                    ast::CmpOp::NotEq => "relax.not_equal",
                    ast::CmpOp::Lt => "relax.less",
                    ast::CmpOp::LtE => "relax.less_equal",
                    ast::CmpOp::Gt => "relax.greater",
                    ast::CmpOp::GtE => "relax.greater_equal",
                    _ => return Ok(None),
                },
                vec![&*c.left, &c.comparators[0]],
            ),
            ast::Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::USub) => ("relax.negative", vec![&*u.operand]),
            _ => return Ok(None),
        };
        let mut any_relax = false;
        let mut args = Vec::new();
        for o in operands {
            let x = self.arg(o, ArgKind::Expr)?;
            if !matches!(x.kind(), ExprKind::PrimValue(_)) {
                any_relax = true;
            }
            args.push(x);
        }
        if !any_relax {
            return Ok(None);
        }
        Ok(Some(Expr::with_span(
            ExprKind::Call(Call {
                op: Expr::op(op),
                args,
                attrs: Attrs::new(),
                sinfo_args: Vec::new(),
            }),
            span,
        )))
    }

    /// A Python literal as an expression of `kind`.
    fn literal(&mut self, e: &ast::Expr, kind: ArgKind) -> PResult<Expr> {
        let span = self.span(e);
        let v = self.m.attr_value(e)?;
        let (int_t, float_t) = match kind {
            ArgKind::Expr => (DataType::INT32, DataType::FLOAT32),
            _ => (DataType::INT64, DataType::FLOAT64),
        };
        Ok(Expr::with_span(
            match v {
                AttrValue::Bool(b) => ExprKind::PrimValue(PrimExpr::bool(b)),
                AttrValue::Int(i) => ExprKind::PrimValue(PrimExpr::int_of(i, int_t)),
                AttrValue::Float(f) => ExprKind::PrimValue(PrimExpr::float_of(f, float_t)),
                AttrValue::Str(s) => ExprKind::StringImm(s),
                _ => return Err(self.err(e, "expected a Relax expression")),
            },
            span,
        ))
    }

    /// An argument of an operator call.
    fn arg(&mut self, e: &ast::Expr, kind: ArgKind) -> PResult<Expr> {
        let span = self.span(e);
        match (kind, e) {
            (
                ArgKind::Shape,
                ast::Expr::Tuple(ast::ExprTuple { elts, .. }) | ast::Expr::List(ast::ExprList { elts, .. }),
            ) => {
                let dims = elts.iter().map(|d| self.dim(d, false)).collect::<PResult<Vec<_>>>()?;
                Ok(Expr::with_span(ExprKind::ShapeExpr(dims), span))
            }
            (
                ArgKind::Tuple,
                ast::Expr::Tuple(ast::ExprTuple { elts, .. }) | ast::Expr::List(ast::ExprList { elts, .. }),
            ) => {
                let fields = elts
                    .iter()
                    .map(|x| self.arg(x, ArgKind::Prim))
                    .collect::<PResult<Vec<_>>>()?;
                Ok(Expr::with_span(ExprKind::Tuple(fields), span))
            }
            (ArgKind::DType, _) if const_str(e).is_some() => {
                Ok(Expr::with_span(ExprKind::DataTypeImm(self.dtype_literal(e)?), span))
            }
            (_, ast::Expr::Constant(_)) => self.literal(e, kind),
            (_, ast::Expr::UnaryOp(u))
                if matches!(u.op, ast::UnaryOp::USub) && matches!(&*u.operand, ast::Expr::Constant(_)) =>
            {
                self.literal(e, kind)
            }
            _ => self.expr(e),
        }
    }

    fn sinfo_list(&mut self, e: &ast::Expr) -> PResult<Vec<StructInfo>> {
        match e {
            ast::Expr::Tuple(ast::ExprTuple { elts, .. }) | ast::Expr::List(ast::ExprList { elts, .. }) => {
                elts.iter().map(|x| self.sinfo(x, false)).collect()
            }
            other => Ok(vec![self.sinfo(other, false)?]),
        }
    }

    /// `out_ty=`: a single StructInfo, or a list of them (a tuple result).
    fn out_ty(&mut self, e: &ast::Expr) -> PResult<StructInfo> {
        match e {
            ast::Expr::List(ast::ExprList { elts, .. }) | ast::Expr::Tuple(ast::ExprTuple { elts, .. }) => Ok(
                StructInfo::Tuple(elts.iter().map(|x| self.sinfo(x, false)).collect::<PResult<_>>()?),
            ),
            other => self.sinfo(other, false),
        }
    }

    /// The argument tuple of `call_tir`-like calls: a tuple, or an expression (a tensor
    /// variable is wrapped into a one-element tuple).
    fn args_tuple(&mut self, e: &ast::Expr) -> PResult<Expr> {
        let x = self.arg(e, ArgKind::Tuple)?;
        let wrap = match x.kind() {
            ExprKind::Tuple(_) => false,
            ExprKind::Var(v) => !matches!(v.struct_info(), Some(StructInfo::Tuple(_)) | None),
            _ => true,
        };
        Ok(if wrap {
            Expr::with_span(ExprKind::Tuple(vec![x.clone()]), x.span())
        } else {
            x
        })
    }

    fn extern_func(&mut self, e: &ast::Expr) -> PResult<Expr> {
        match const_str(e) {
            Some(s) => Ok(Expr::with_span(
                ExprKind::ExternFunc {
                    global_symbol: s.to_string(),
                },
                self.span(e),
            )),
            None => self.expr(e),
        }
    }

    fn call(&mut self, c: &ast::ExprCall, whole: &ast::Expr) -> PResult<Expr> {
        let span = self.span(whole);
        let name = dotted_name(&c.func);
        if let Some(n) = name.as_deref() {
            if let Some(op) = n.strip_prefix("R.").or_else(|| n.strip_prefix("relax.")) {
                return self.relax_call(op, c, whole);
            }
            if n.starts_with("T.") {
                return Ok(Expr::with_span(ExprKind::PrimValue(self.prim(whole)?), span));
            }
        }
        let callee = self.expr(&c.func)?;
        let mut args = Vec::new();
        for a in &c.args {
            args.push(self.arg(a, ArgKind::Prim)?);
        }
        let mut sinfo_args = Vec::new();
        for k in &c.keywords {
            match kw_name(k).as_str() {
                "ty_args" | "sinfo_args" => sinfo_args = self.sinfo_list(&k.value)?,
                other => return Err(self.err(&k.value, format!("unexpected keyword argument `{other}` in a call"))),
            }
        }
        Ok(Expr::with_span(
            ExprKind::Call(Call {
                op: callee,
                args,
                attrs: Attrs::new(),
                sinfo_args,
            }),
            span,
        ))
    }

    /// Gather positional and keyword arguments by parameter name.
    fn bind_args<'e>(
        &self,
        c: &'e ast::ExprCall,
        names: &[&str],
        fname: &str,
    ) -> PResult<(Vec<Option<&'e ast::Expr>>, Vec<&'e ast::Keyword>)> {
        let mut vals: Vec<Option<&ast::Expr>> = vec![None; names.len()];
        for (i, a) in c.args.iter().enumerate() {
            if i >= names.len() {
                return Err(self.err(a, format!("too many arguments for R.{fname}")));
            }
            vals[i] = Some(a);
        }
        let mut extra = Vec::new();
        for k in &c.keywords {
            let key = kw_name(k);
            match names.iter().position(|n| *n == key) {
                Some(i) => {
                    if vals[i].is_some() {
                        return Err(self.err(&k.value, format!("argument `{key}` of R.{fname} given twice")));
                    }
                    vals[i] = Some(&k.value);
                }
                None => extra.push(k),
            }
        }
        Ok((vals, extra))
    }

    fn relax_call(&mut self, op: &str, c: &ast::ExprCall, whole: &ast::Expr) -> PResult<Expr> {
        let span = self.span(whole);
        let mk = |kind: ExprKind| Expr::with_span(kind, span);
        let call = |op_name: &str, args: Vec<Expr>, attrs: Attrs, sinfo_args: Vec<StructInfo>| {
            Expr::with_span(
                ExprKind::Call(Call {
                    op: Expr::op(op_name),
                    args,
                    attrs,
                    sinfo_args,
                }),
                span,
            )
        };
        let one_arg = |cx: &Self| -> PResult<&ast::Expr> {
            match (c.args.as_slice(), c.keywords.as_slice()) {
                ([a], []) => Ok(a),
                _ => Err(cx.err(whole, format!("R.{op} expects one argument"))),
            }
        };
        match op {
            "const" => self.constant(c, whole),
            "shape" | "ShapeExpr" => {
                let a = one_arg(self)?;
                let (ast::Expr::List(ast::ExprList { elts, .. }) | ast::Expr::Tuple(ast::ExprTuple { elts, .. })) = a
                else {
                    return Err(self.err(a, "R.shape expects a list of dimensions like [n, 4]"));
                };
                let dims = elts.iter().map(|d| self.dim(d, false)).collect::<PResult<Vec<_>>>()?;
                Ok(mk(ExprKind::ShapeExpr(dims)))
            }
            "emit_with_ty" => match c.args.as_slice() {
                [name, args, tys] => {
                    let op_name = const_str(name).ok_or_else(|| self.err(name, "expected an operator name string"))?;
                    let (ast::Expr::Tuple(ast::ExprTuple { elts, .. }) | ast::Expr::List(ast::ExprList { elts, .. })) =
                        args
                    else {
                        return Err(self.err(args, "expected a tuple of arguments"));
                    };
                    let args = elts
                        .iter()
                        .map(|a| self.arg(a, ArgKind::Prim))
                        .collect::<PResult<Vec<_>>>()?;
                    let sinfo_args = self.sinfo_list(tys)?;
                    Ok(call(op_name, args, Attrs::new(), sinfo_args))
                }
                _ => Err(self.err(
                    whole,
                    "R.emit_with_ty expects an operator name, an argument tuple and StructInfo",
                )),
            },
            "TupleGetItem" => match c.args.as_slice() {
                [t, i] => {
                    let tuple = self.expr(t)?;
                    let index = match self.m.attr_value(i) {
                        Ok(AttrValue::Int(i)) if i >= 0 => i as usize,
                        _ => return Err(self.err(i, "expected a non-negative integer tuple index")),
                    };
                    Ok(mk(ExprKind::TupleGetItem { tuple, index }))
                }
                _ => Err(self.err(whole, "R.TupleGetItem expects a tuple and an index")),
            },
            "str" => {
                let a = one_arg(self)?;
                let s = const_str(a).ok_or_else(|| self.err(a, "R.str expects a string"))?;
                Ok(mk(ExprKind::StringImm(s.to_string())))
            }
            "dtype" => {
                let a = one_arg(self)?;
                Ok(mk(ExprKind::DataTypeImm(self.dtype_literal(a)?)))
            }
            "prim_value" => {
                let a = one_arg(self)?;
                match self.arg(a, ArgKind::Prim)? {
                    x if matches!(x.kind(), ExprKind::PrimValue(_)) => Ok(x),
                    _ => Err(self.err(a, "R.prim_value expects a scalar PrimExpr")),
                }
            }
            "tuple" => {
                if !c.keywords.is_empty() {
                    return Err(self.err(whole, "R.tuple takes positional arguments only"));
                }
                let fields = c
                    .args
                    .iter()
                    .map(|a| self.arg(a, ArgKind::Prim))
                    .collect::<PResult<Vec<_>>>()?;
                Ok(mk(ExprKind::Tuple(fields)))
            }
            "ExternFunc" => {
                let a = c
                    .args
                    .first()
                    .ok_or_else(|| self.err(whole, "R.ExternFunc expects a symbol name"))?;
                let s = const_str(a).ok_or_else(|| self.err(a, "R.ExternFunc expects a string"))?;
                Ok(mk(ExprKind::ExternFunc {
                    global_symbol: s.to_string(),
                }))
            }
            "call_packed" | "call_pure_packed" | "call_inplace_packed" => {
                let first = c
                    .args
                    .first()
                    .ok_or_else(|| self.err(whole, format!("R.{op} expects a function name")))?;
                let func = self.extern_func(first)?;
                let mut args = Vec::new();
                for a in &c.args[1..] {
                    args.push(self.arg(a, ArgKind::Prim)?);
                }
                let mut sinfo_args = Vec::new();
                let mut attrs = Attrs::new();
                for k in &c.keywords {
                    match kw_name(k).as_str() {
                        "ty_args" | "sinfo_args" => sinfo_args = self.sinfo_list(&k.value)?,
                        "inplace_indices" if op == "call_inplace_packed" => {
                            attrs.set("inplace_indices", self.attr_conv(AttrKind::Ints, &k.value)?);
                        }
                        other => {
                            return Err(self.err(&k.value, format!("unexpected keyword argument `{other}` of R.{op}")))
                        }
                    }
                }
                if op == "call_packed" {
                    Ok(mk(ExprKind::Call(Call {
                        op: func,
                        args,
                        attrs: Attrs::new(),
                        sinfo_args,
                    })))
                } else {
                    let mut all = vec![func];
                    all.extend(args);
                    Ok(call(&format!("relax.{op}"), all, attrs, sinfo_args))
                }
            }
            "call_tir" | "dist.call_tir" | "call_dps_packed" | "call_tir_inplace" | "call_tir_with_grad" => {
                let names: &[&str] = match op {
                    "call_tir_inplace" => &["gvar", "args", "inplace_indices", "out_ty", "tir_vars"],
                    "call_tir_with_grad" => &["gvar", "args", "out_ty", "te_grad_name", "te_grad_kwargs", "tir_vars"],
                    "call_dps_packed" => &["func", "args", "out_ty"],
                    _ => &["gvar", "args", "out_ty", "tir_vars"],
                };
                let (vals, extra) = self.bind_args(c, names, op)?;
                let mut out_e = vals[names.iter().position(|n| *n == "out_ty").unwrap_or(2)];
                for k in extra {
                    match kw_name(k).as_str() {
                        "out_sinfo" | "out_ty" | "out_struct_info" if out_e.is_none() => out_e = Some(&k.value),
                        other => {
                            return Err(self.err(&k.value, format!("unexpected keyword argument `{other}` of R.{op}")))
                        }
                    }
                }
                let func_e = vals[0].ok_or_else(|| self.err(whole, format!("R.{op} expects a function")))?;
                let func = self.extern_func(func_e)?;
                let args_e = vals[1].ok_or_else(|| self.err(whole, format!("R.{op} expects an argument tuple")))?;
                let args = self.args_tuple(args_e)?;
                let out = out_e.ok_or_else(|| self.err(whole, format!("R.{op} expects out_ty=")))?;
                let out = self.out_ty(out)?;
                let mut all = vec![func, args];
                if let Some(tv) = names.iter().position(|n| *n == "tir_vars").and_then(|i| vals[i]) {
                    if !is_none_const(tv) {
                        all.push(self.arg(tv, ArgKind::Shape)?);
                    }
                }
                let mut attrs = Attrs::new();
                if op == "call_tir_inplace" {
                    let ii = vals[2].ok_or_else(|| self.err(whole, "R.call_tir_inplace expects inplace_indices"))?;
                    attrs.set("inplace_indices", self.attr_conv(AttrKind::Ints, ii)?);
                }
                if op == "call_tir_with_grad" {
                    let name_e = vals[3].ok_or_else(|| self.err(whole, "R.call_tir_with_grad expects te_grad_name"))?;
                    attrs.set("te_grad_name", self.attr_conv(AttrKind::Str, name_e)?);
                    let kw = match vals[4] {
                        Some(k) if !is_none_const(k) => self.attr_conv(AttrKind::Map, k)?,
                        _ => AttrValue::Map(Attrs::new()),
                    };
                    attrs.set("te_grad_kwargs", kw);
                }
                let op_name = match op {
                    "dist.call_tir" => "relax.dist.call_tir",
                    _ => &format!("relax.{op}"),
                };
                Ok(call(op_name, all, attrs, vec![out]))
            }
            "invoke_closure" | "invoke_pure_closure" => {
                let (vals, extra) = self.bind_args(c, &["closure", "args", "ty_args"], op)?;
                let mut ty = vals[2];
                for k in extra {
                    match kw_name(k).as_str() {
                        "sinfo_args" if ty.is_none() => ty = Some(&k.value),
                        other => {
                            return Err(self.err(&k.value, format!("unexpected keyword argument `{other}` of R.{op}")))
                        }
                    }
                }
                let clo = self.expr(vals[0].ok_or_else(|| self.err(whole, "expected a closure"))?)?;
                let args = self.args_tuple(vals[1].ok_or_else(|| self.err(whole, "expected an argument tuple"))?)?;
                let sinfo_args = match ty {
                    Some(t) => self.sinfo_list(t)?,
                    None => return Err(self.err(whole, format!("R.{op} expects ty_args="))),
                };
                Ok(call(&format!("relax.{op}"), vec![clo, args], Attrs::new(), sinfo_args))
            }
            "print" => {
                let mut format = mk(ExprKind::StringImm(String::new()));
                for k in &c.keywords {
                    match kw_name(k).as_str() {
                        "format" => format = self.arg(&k.value, ArgKind::Str)?,
                        other => {
                            return Err(self.err(&k.value, format!("unexpected keyword argument `{other}` of R.print")))
                        }
                    }
                }
                let mut args = vec![format];
                for a in &c.args {
                    args.push(self.arg(a, ArgKind::Expr)?);
                }
                Ok(call("relax.print", args, Attrs::new(), Vec::new()))
            }
            "assert_op" => {
                let (vals, extra) = self.bind_args(c, &["condition", "format_args", "format"], op)?;
                if let Some(k) = extra.first() {
                    return Err(self.err(
                        &k.value,
                        format!("unexpected keyword argument `{}` of R.assert_op", kw_name(k)),
                    ));
                }
                let cond = self.arg(
                    vals[0].ok_or_else(|| self.err(whole, "R.assert_op expects a condition"))?,
                    ArgKind::Expr,
                )?;
                let format = match vals[2] {
                    Some(f) => self.arg(f, ArgKind::Str)?,
                    None => mk(ExprKind::StringImm(String::new())),
                };
                let mut args = vec![cond, format];
                match vals[1] {
                    None => {}
                    Some(f) if is_none_const(f) => {}
                    Some(
                        ast::Expr::List(ast::ExprList { elts, .. }) | ast::Expr::Tuple(ast::ExprTuple { elts, .. }),
                    ) => {
                        for x in elts {
                            args.push(self.arg(x, ArgKind::Expr)?);
                        }
                    }
                    Some(f) => args.push(self.arg(f, ArgKind::Expr)?),
                }
                Ok(call("relax.assert_op", args, Attrs::new(), Vec::new()))
            }
            "hint_on_device" => {
                let (vals, extra) = self.bind_args(c, &["data", "dst_vdevice", "memory_scope"], op)?;
                if let Some(k) = extra.first() {
                    return Err(self.err(
                        &k.value,
                        format!("unexpected keyword argument `{}` of R.hint_on_device", kw_name(k)),
                    ));
                }
                let data = self.expr(vals[0].ok_or_else(|| self.err(whole, "R.hint_on_device expects a value"))?)?;
                let dev = vals[1].ok_or_else(|| self.err(whole, "R.hint_on_device expects a device"))?;
                let (dt, idx) = self.device(dev)?;
                let scope = match vals[2] {
                    Some(s) => const_str(s)
                        .ok_or_else(|| self.err(s, "expected a memory scope string"))?
                        .to_string(),
                    None => "global".to_string(),
                };
                let mut attrs = Attrs::new();
                attrs.set("device_type", AttrValue::Int(dt));
                attrs.set("index", AttrValue::Int(idx));
                attrs.set("memory_scope", AttrValue::Str(scope));
                Ok(call("relax.hint_on_device", vec![data], attrs, Vec::new()))
            }
            "linear" => {
                // TVMScript's `R.linear` is sugar, expanded at parse time as TVM does:
                // `matmul(data, permute_dims(weight), out_dtype)` plus `bias` when given.
                let (vals, extra) = self.bind_args(c, &["data", "weight", "bias", "out_dtype"], op)?;
                if let Some(k) = extra.first() {
                    return Err(self.err(&k.value, format!("R.linear has no parameter `{}`", kw_name(k))));
                }
                let data = self.expr(vals[0].ok_or_else(|| self.err(whole, "R.linear expects data"))?)?;
                let weight = self.expr(vals[1].ok_or_else(|| self.err(whole, "R.linear expects a weight"))?)?;
                let bias = match vals[2] {
                    Some(b) if !is_none_const(b) => Some(self.expr(b)?),
                    _ => None,
                };
                let out_dtype = match vals[3] {
                    Some(d) => self.attr_conv(AttrKind::OptDType, d)?,
                    None => AttrValue::None,
                };
                let mut pattrs = Attrs::new();
                pattrs.set("axes", AttrValue::None);
                let wt = call("relax.permute_dims", vec![weight], pattrs, Vec::new());
                let mut mattrs = Attrs::new();
                mattrs.set("out_dtype", out_dtype);
                let mm = call("relax.matmul", vec![data, wt], mattrs, Vec::new());
                Ok(match bias {
                    Some(b) => call("relax.add", vec![mm, b], Attrs::new(), Vec::new()),
                    None => mm,
                })
            }
            "match_cast" => Err(self.err(whole, "R.match_cast must be the whole right-hand side of a binding")),
            "output" => Err(self.err(whole, "R.output(...) must be the last statement of a dataflow block")),
            "func_attr" => Err(self.err(whole, "R.func_attr(...) must be a statement at the start of a function")),
            "dataflow" => Err(self.err(whole, "R.dataflow() must be used as `with R.dataflow():`")),
            _ => self.op_call(op, c, whole),
        }
    }

    fn device(&self, e: &ast::Expr) -> PResult<(i64, i64)> {
        let ast::Expr::Call(c) = e else {
            return Err(self.err(e, "expected R.device(device_type=..., index=...)"));
        };
        let fname = dotted_name(&c.func).unwrap_or_default();
        let by_name = match fname.as_str() {
            "tvm.cpu" | "R.cpu" => Some(1),
            "tvm.cuda" | "tvm.gpu" | "R.cuda" => Some(2),
            "tvm.opencl" | "tvm.cl" | "R.opencl" => Some(4),
            "tvm.vulkan" | "R.vulkan" => Some(7),
            "tvm.metal" | "R.metal" => Some(8),
            "tvm.rocm" | "R.rocm" => Some(10),
            "tvm.webgpu" | "R.webgpu" => Some(15),
            _ => None,
        };
        if let Some(dt) = by_name {
            let idx = match c.args.first() {
                Some(a) => self.int_literal(a)?,
                None => 0,
            };
            return Ok((dt, idx));
        }
        if fname != "R.device" {
            return Err(self.err(e, "expected R.device(device_type=..., index=...)"));
        }
        let (vals, extra) = self.bind_args(c, &["device_type", "index"], "device")?;
        if let Some(k) = extra.first() {
            return Err(self.err(
                &k.value,
                format!("unexpected keyword argument `{}` of R.device", kw_name(k)),
            ));
        }
        let dt = match vals[0] {
            Some(v) => self.int_literal(v)?,
            None => return Err(self.err(e, "R.device expects device_type")),
        };
        let idx = match vals[1] {
            Some(v) => self.int_literal(v)?,
            None => 0,
        };
        Ok((dt, idx))
    }

    fn op_call(&mut self, op: &str, c: &ast::ExprCall, whole: &ast::Expr) -> PResult<Expr> {
        let span = self.span(whole);
        let sig = ops::lookup(op).ok_or_else(|| self.err(&*c.func, format!("unknown Relax operator `R.{op}`")))?;
        let names: Vec<&str> = sig.params.iter().map(|p| p.name.as_str()).collect();
        let (vals, extra) = self.bind_args(c, &names, op)?;
        let mut sinfo_args = Vec::new();
        for k in extra {
            match kw_name(k).as_str() {
                "ty_args" | "sinfo_args" => sinfo_args = self.sinfo_list(&k.value)?,
                other => return Err(self.err(&k.value, format!("R.{op} has no parameter `{other}`"))),
            }
        }
        let mut args = Vec::new();
        let mut attr_vals: HashMap<&str, AttrValue> = HashMap::new();
        let mut arg_vals: HashMap<&str, Expr> = HashMap::new();
        for (p, v) in sig.params.iter().zip(&vals) {
            match p.kind {
                ParamKind::Arg(kind) => {
                    let x = match v {
                        Some(e) if is_none_const(e) => None,
                        Some(e) => Some(self.arg(e, kind)?),
                        None => match &p.default {
                            Default::Required => {
                                return Err(self.err(whole, format!("R.{op} is missing the argument `{}`", p.name)))
                            }
                            Default::None => None,
                            d => Some(default_arg(kind, d, span)),
                        },
                    };
                    let x = match (op, p.name.as_str(), x) {
                        // R.eye(n): m defaults to n
                        ("eye", "m", None) => arg_vals.get("n").cloned(),
                        (_, _, x) => x,
                    };
                    if let Some(x) = x {
                        arg_vals.insert(p.name.as_str(), x.clone());
                        args.push(x);
                    }
                }
                ParamKind::Attr(kind) => {
                    let val = match v {
                        Some(e) => self.attr_conv(kind, e)?,
                        None => match &p.default {
                            Default::Required => {
                                return Err(self.err(whole, format!("R.{op} is missing the argument `{}`", p.name)))
                            }
                            Default::SameAs(other) => attr_vals.get(other.as_str()).cloned().unwrap_or(AttrValue::None),
                            d => default_attr(kind, d),
                        },
                    };
                    attr_vals.insert(p.name.as_str(), val);
                }
            }
        }
        // R.arange(end): start defaults to 0
        if op == "arange" && !arg_vals.contains_key("end") && !args.is_empty() {
            let end = args.remove(0);
            args.insert(0, Expr::with_span(ExprKind::PrimValue(PrimExpr::int(0)), span));
            args.insert(1, end);
        }
        let mut attrs = Attrs::new();
        for a in &sig.attr_order {
            attrs.set(a.clone(), attr_vals.remove(a.as_str()).unwrap_or(AttrValue::None));
        }
        Ok(Expr::with_span(
            ExprKind::Call(Call {
                op: Expr::op(&sig.op_name()),
                args,
                attrs,
                sinfo_args,
            }),
            span,
        ))
    }

    fn pyval(&self, e: &ast::Expr) -> PResult<PyVal> {
        Ok(match e {
            ast::Expr::Constant(_) | ast::Expr::UnaryOp(_) if self.m.attr_value(e).is_ok() => {
                match self.m.attr_value(e)? {
                    AttrValue::None => PyVal::None,
                    AttrValue::Bool(b) => PyVal::Bool(b),
                    AttrValue::Int(i) => PyVal::Int(i),
                    AttrValue::Float(f) => PyVal::Float(f),
                    AttrValue::Str(s) => PyVal::Str(s),
                    _ => return Err(self.err(e, "unexpected attribute value")),
                }
            }
            ast::Expr::List(ast::ExprList { elts, .. }) | ast::Expr::Tuple(ast::ExprTuple { elts, .. }) => {
                PyVal::List(elts.iter().map(|x| self.pyval(x)).collect::<PResult<_>>()?)
            }
            ast::Expr::Dict(_) => PyVal::Map(self.m.attrs_dict(e)?),
            ast::Expr::Call(c) if matches!(dotted_name(&c.func).as_deref(), Some("R.str")) => match c.args.as_slice() {
                [a] => PyVal::Str(
                    const_str(a)
                        .ok_or_else(|| self.err(a, "R.str expects a string"))?
                        .to_string(),
                ),
                _ => return Err(self.err(e, "R.str expects one string")),
            },
            ast::Expr::Call(c) if matches!(dotted_name(&c.func).as_deref(), Some("R.dtype")) => {
                match c.args.as_slice() {
                    [a] => PyVal::Str(self.dtype_literal(a)?.to_string()),
                    _ => return Err(self.err(e, "R.dtype expects one string")),
                }
            }
            _ => PyVal::Prim(self.prim(e)?),
        })
    }

    fn attr_conv(&mut self, kind: AttrKind, e: &ast::Expr) -> PResult<AttrValue> {
        if kind == AttrKind::IndexMap {
            return self.index_map(e);
        }
        let v = self.pyval(e)?;
        let bad = |cx: &Self, what: &str| Err(cx.err(e, format!("expected {what}")));
        let int_of = |v: &PyVal| -> Option<i64> {
            match v {
                PyVal::Int(i) => Some(*i),
                PyVal::Bool(b) => Some(*b as i64),
                PyVal::Prim(p) => p.as_int(),
                _ => None,
            }
        };
        let ints_of = |v: &PyVal| -> Option<Vec<i64>> {
            match v {
                PyVal::List(l) => l.iter().map(int_of).collect(),
                other => int_of(other).map(|i| vec![i]),
            }
        };
        let list = |l: Vec<i64>| AttrValue::List(l.into_iter().map(AttrValue::Int).collect());
        Ok(match kind {
            AttrKind::Int => match int_of(&v) {
                Some(i) => AttrValue::Int(i),
                None => return bad(self, "an integer"),
            },
            AttrKind::OptInt => match (&v, int_of(&v)) {
                (PyVal::None, _) => AttrValue::None,
                (_, Some(i)) => AttrValue::Int(i),
                _ => return bad(self, "an integer or None"),
            },
            AttrKind::Ints | AttrKind::OptInts => match (&v, ints_of(&v)) {
                (PyVal::None, _) if kind == AttrKind::OptInts => AttrValue::None,
                (_, Some(l)) => list(l),
                _ => return bad(self, "a list of integers"),
            },
            AttrKind::IntOrInts => match (&v, int_of(&v), ints_of(&v)) {
                (PyVal::List(_), _, Some(l)) => list(l),
                (_, Some(i), _) => AttrValue::Int(i),
                _ => return bad(self, "an integer or a list of integers"),
            },
            AttrKind::Rep(n) => match (&v, ints_of(&v)) {
                (PyVal::None, _) => AttrValue::None,
                (PyVal::List(_), Some(l)) => list(l),
                (_, Some(l)) => list(vec![l[0]; n as usize]),
                _ => return bad(self, "an integer or a list of integers"),
            },
            AttrKind::Pad(n) => match (&v, ints_of(&v)) {
                (PyVal::List(_), Some(l)) if l.len() == n as usize => list([l.clone(), l].concat()),
                (PyVal::List(_), Some(l)) => list(l),
                (_, Some(l)) => list(vec![l[0]; 2 * n as usize]),
                _ => return bad(self, "an integer or a list of integers"),
            },
            AttrKind::Float => match v {
                PyVal::Int(i) => AttrValue::Float(i as f64),
                PyVal::Float(f) => AttrValue::Float(f),
                PyVal::Prim(p) => match p.kind() {
                    PrimExprKind::FloatImm { value, .. } => AttrValue::Float(*value),
                    PrimExprKind::IntImm { value, .. } => AttrValue::Float(*value as f64),
                    _ => return bad(self, "a number"),
                },
                _ => return bad(self, "a number"),
            },
            AttrKind::OptFloatImm | AttrKind::OptPrim => match v {
                PyVal::None => AttrValue::None,
                PyVal::Int(i) if kind == AttrKind::OptPrim => AttrValue::PrimExpr(PrimExpr::int(i)),
                PyVal::Int(i) => AttrValue::PrimExpr(PrimExpr::float_of(i as f64, DataType::FLOAT64)),
                PyVal::Float(f) => AttrValue::PrimExpr(PrimExpr::float_of(f, DataType::FLOAT64)),
                PyVal::Bool(b) => AttrValue::PrimExpr(PrimExpr::bool(b)),
                PyVal::Prim(p) => AttrValue::PrimExpr(p),
                _ => return bad(self, "a number or None"),
            },
            AttrKind::Bool => match v {
                PyVal::Bool(b) => AttrValue::Bool(b),
                PyVal::Int(i) => AttrValue::Bool(i != 0),
                PyVal::Prim(p) if p.as_int().is_some() => AttrValue::Bool(p.as_int() != Some(0)),
                _ => return bad(self, "True or False"),
            },
            AttrKind::Str | AttrKind::OptStr => match v {
                PyVal::None if kind == AttrKind::OptStr => AttrValue::None,
                PyVal::Str(s) => AttrValue::Str(s),
                _ => return bad(self, "a string"),
            },
            AttrKind::DType | AttrKind::OptDType => match v {
                PyVal::None if kind == AttrKind::OptDType => AttrValue::None,
                PyVal::Str(s) => {
                    AttrValue::DataType(s.parse().map_err(|_| self.err(e, format!("unknown dtype \"{s}\"")))?)
                }
                _ => match dotted_name(e)
                    .as_deref()
                    .and_then(|n| n.strip_prefix("T."))
                    .and_then(|n| n.parse().ok())
                {
                    Some(d) => AttrValue::DataType(d),
                    None => return bad(self, "a dtype string like \"float32\""),
                },
            },
            AttrKind::VDevice => match v {
                PyVal::Str(s) => {
                    let vd = self.m.resolve_vdevice(&s, e)?;
                    AttrValue::Str(crate::text::printer::vdevice_spec(&vd, Some(&self.m.module)))
                }
                _ => return bad(self, "a vdevice string like \"cuda:0:global\""),
            },
            AttrKind::Map => match v {
                PyVal::Map(m) => AttrValue::Map(m),
                PyVal::None => AttrValue::Map(Attrs::new()),
                _ => return bad(self, "a dictionary"),
            },
            AttrKind::IndexMap => unreachable!("handled above"),
        })
    }

    /// `T.index_map(lambda i, j: (j, i))` or a bare lambda.
    fn index_map(&mut self, e: &ast::Expr) -> PResult<AttrValue> {
        let lam = match e {
            ast::Expr::Lambda(l) => l,
            ast::Expr::Call(c) if dotted_name(&c.func).as_deref() == Some("T.index_map") => match c.args.first() {
                Some(ast::Expr::Lambda(l)) => l,
                _ => return Err(self.err(e, "expected T.index_map(lambda ...: (...))")),
            },
            _ => return Err(self.err(e, "expected an index map like T.index_map(lambda i, j: (j, i))")),
        };
        let saved = self.tir.clone();
        let mut params = Vec::new();
        for a in lam.args.posonlyargs.iter().chain(&lam.args.args) {
            let v = TirVar::new(a.def.arg.to_string(), DataType::INT64);
            self.tir.insert(a.def.arg.to_string(), v.clone());
            params.push(AttrValue::PrimExpr(v.to_expr()));
        }
        let results: PResult<Vec<AttrValue>> = match &*lam.body {
            ast::Expr::Tuple(t) => t
                .elts
                .iter()
                .map(|x| self.prim(x).map(|p| AttrValue::PrimExpr(to_i64(p))))
                .collect(),
            other => self.prim(other).map(|p| vec![AttrValue::PrimExpr(to_i64(p))]),
        };
        self.tir = saved;
        let mut m = Attrs::new();
        m.set("params", AttrValue::List(params));
        m.set("results", AttrValue::List(results?));
        Ok(AttrValue::Map(m))
    }

    /// `R.const(value, dtype)`.
    fn constant(&mut self, c: &ast::ExprCall, whole: &ast::Expr) -> PResult<Expr> {
        let (vals, extra) = self.bind_args(c, &["value", "dtype"], "const")?;
        if let Some(k) = extra.first() {
            return Err(self.err(
                &k.value,
                format!("unexpected keyword argument `{}` of R.const", kw_name(k)),
            ));
        }
        let value = vals[0].ok_or_else(|| self.err(whole, "R.const expects a value"))?;
        let mut shape = Vec::new();
        let mut elems = Vec::new();
        self.flatten_const(value, 0, &mut shape, &mut elems)?;
        let dtype = match vals[1] {
            Some(d) if !is_none_const(d) => self.dtype_literal(d)?,
            _ => {
                if elems.iter().all(|(_, s)| matches!(s, ConstElem::Bool(_))) && !elems.is_empty() {
                    DataType::BOOL
                } else if elems.iter().any(|(_, s)| matches!(s, ConstElem::Float(_))) {
                    DataType::FLOAT32
                } else {
                    DataType::INT32
                }
            }
        };
        let mut data = Vec::new();
        for (node, el) in &elems {
            let s = match el {
                ConstElem::Bool(b) => Scalar::Int(*b as i64),
                ConstElem::Int(i) => Scalar::Int(*i),
                ConstElem::Float(f) => Scalar::Float(*f),
            };
            let bytes = encode(dtype, s).ok_or_else(|| {
                Diagnostic::error(format!("unsupported constant dtype {dtype}"), *node).with_rule("parse")
            })?;
            data.extend(bytes);
        }
        let arr = NDArray { dtype, shape, data };
        Ok(Expr::with_span(
            ExprKind::Constant { data: Arc::new(arr) },
            self.span(whole),
        ))
    }

    fn flatten_const(
        &self,
        e: &ast::Expr,
        depth: usize,
        shape: &mut Vec<i64>,
        out: &mut Vec<(Span, ConstElem)>,
    ) -> PResult<()> {
        match e {
            ast::Expr::List(ast::ExprList { elts, .. }) | ast::Expr::Tuple(ast::ExprTuple { elts, .. }) => {
                if shape.len() == depth {
                    shape.push(elts.len() as i64);
                } else if shape.get(depth) != Some(&(elts.len() as i64)) {
                    return Err(self.err(e, "R.const: nested lists must be rectangular"));
                }
                for x in elts {
                    self.flatten_const(x, depth + 1, shape, out)?;
                }
                Ok(())
            }
            _ => {
                if depth != shape.len() {
                    return Err(self.err(e, "R.const: nested lists must be rectangular"));
                }
                let el = match self.m.attr_value(e) {
                    Ok(AttrValue::Bool(b)) => ConstElem::Bool(b),
                    Ok(AttrValue::Int(i)) => ConstElem::Int(i),
                    Ok(AttrValue::Float(f)) => ConstElem::Float(f),
                    Ok(AttrValue::Str(s)) if matches!(s.as_str(), "inf" | "-inf" | "nan") => {
                        ConstElem::Float(s.parse().unwrap_or(f64::NAN))
                    }
                    _ => return Err(self.err(e, "R.const expects a number, a boolean or a nested list of them")),
                };
                out.push((self.span(e), el));
                Ok(())
            }
        }
    }
}

#[derive(Clone, Copy)]
enum ConstElem {
    Bool(bool),
    Int(i64),
    Float(f64),
}

struct LineShift {
    inner: crate::span::LineIndex,
}

fn to_i64(p: PrimExpr) -> PrimExpr {
    match p.kind() {
        PrimExprKind::IntImm { value, dtype } if dtype.is_int() && *dtype != DataType::INT64 => PrimExpr::int(*value),
        _ => p,
    }
}

fn default_arg(kind: ArgKind, d: &Default, span: Span) -> Expr {
    let k = match (kind, d) {
        (ArgKind::Str, Default::Str(s)) => ExprKind::StringImm(s.clone()),
        (ArgKind::DType, Default::Str(s)) => ExprKind::DataTypeImm(s.parse().unwrap_or(DataType::VOID)),
        (_, Default::Bool(b)) => ExprKind::PrimValue(PrimExpr::bool(*b)),
        (_, Default::Int(i)) => ExprKind::PrimValue(PrimExpr::int(*i)),
        (_, Default::Float(f)) => ExprKind::PrimValue(PrimExpr::float_of(*f, DataType::FLOAT64)),
        (ArgKind::Shape, Default::Ints(l)) => ExprKind::ShapeExpr(l.iter().map(|i| PrimExpr::int(*i)).collect()),
        (_, Default::Ints(l)) => ExprKind::Tuple(
            l.iter()
                .map(|i| Expr::new(ExprKind::PrimValue(PrimExpr::int(*i))))
                .collect(),
        ),
        (_, Default::Str(s)) => ExprKind::StringImm(s.clone()),
        _ => ExprKind::Tuple(Vec::new()),
    };
    Expr::with_span(k, span)
}

fn default_attr(kind: AttrKind, d: &Default) -> AttrValue {
    let list = |l: Vec<i64>| AttrValue::List(l.into_iter().map(AttrValue::Int).collect());
    match (kind, d) {
        (AttrKind::Map, Default::None) => AttrValue::Map(Attrs::new()),
        (_, Default::None) => AttrValue::None,
        (AttrKind::Ints | AttrKind::OptInts, Default::Int(i)) => list(vec![*i]),
        (AttrKind::Rep(n), Default::Int(i)) => list(vec![*i; n as usize]),
        (AttrKind::Pad(n), Default::Int(i)) => list(vec![*i; 2 * n as usize]),
        (AttrKind::Pad(n), Default::Ints(l)) if l.len() == n as usize => list([l.clone(), l.clone()].concat()),
        (_, Default::Ints(l)) => list(l.clone()),
        (AttrKind::Float, Default::Int(i)) => AttrValue::Float(*i as f64),
        (_, Default::Int(i)) => AttrValue::Int(*i),
        (_, Default::Float(f)) => AttrValue::Float(*f),
        (_, Default::Bool(b)) => AttrValue::Bool(*b),
        (AttrKind::DType | AttrKind::OptDType, Default::Str(s)) => {
            s.parse().map(AttrValue::DataType).unwrap_or(AttrValue::None)
        }
        (_, Default::Str(s)) => AttrValue::Str(s.clone()),
        _ => AttrValue::None,
    }
}

/// Names bound by a statement (for dataflow output detection).
fn bound_names(s: &ast::Stmt) -> Vec<String> {
    match s {
        ast::Stmt::Assign(a) => a
            .targets
            .iter()
            .flat_map(|t| match t {
                ast::Expr::Name(n) => vec![n.id.to_string()],
                ast::Expr::Tuple(t) => t
                    .elts
                    .iter()
                    .filter_map(|e| {
                        if let ast::Expr::Name(n) = e {
                            Some(n.id.to_string())
                        } else {
                            None
                        }
                    })
                    .collect(),
                _ => vec![],
            })
            .collect(),
        ast::Stmt::AnnAssign(a) => match &*a.target {
            ast::Expr::Name(n) if a.value.is_some() => vec![n.id.to_string()],
            _ => vec![],
        },
        ast::Stmt::If(i) => {
            let mut v = Vec::new();
            if let Some(last) = i.body.last() {
                v.extend(bound_names(last));
            }
            v
        }
        ast::Stmt::FunctionDef(f) => vec![f.name.to_string()],
        ast::Stmt::Expr(_) => vec!["_".to_string()],
        _ => vec![],
    }
}

fn collect_names(e: &ast::Expr, out: &mut Vec<String>) {
    match e {
        ast::Expr::Name(n) if !out.iter().any(|x| x == n.id.as_str()) => out.push(n.id.to_string()),
        ast::Expr::BinOp(b) => {
            collect_names(&b.left, out);
            collect_names(&b.right, out);
        }
        ast::Expr::UnaryOp(u) => collect_names(&u.operand, out),
        ast::Expr::Call(c) => {
            for a in &c.args {
                collect_names(a, out);
            }
        }
        ast::Expr::Compare(c) => {
            collect_names(&c.left, out);
            for x in &c.comparators {
                collect_names(x, out);
            }
        }
        _ => {}
    }
}
