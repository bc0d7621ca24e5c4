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

mod expr;
#[allow(unused_imports)]
use expr::*;

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

    /// Bind `var` to `value` at the end of `cur` and make it visible by name.
    fn push_binding(&mut self, cur: &mut Vec<Binding>, var: Var, value: Expr, span: Span) {
        cur.push(Binding::VarBinding {
            var: var.clone(),
            value,
            span,
        });
        self.define(var);
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
                Diagnostic::error("an if branch must end by binding a variable (`y = ...`)", at)
                    .with_rule(crate::diagnostic::Rule::Parse),
            );
        }
        let at = stmts.last().map(|s| self.span(s)).unwrap_or(Span::NONE);
        Err(
            Diagnostic::error("a Relax function must end with a return statement", at)
                .with_rule(crate::diagnostic::Rule::Parse),
        )
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
                self.push_binding(cur, var, value, self.span(stmt));
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
                            self.push_binding(cur, var, value, self.span(stmt));
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
                    .with_rule(crate::diagnostic::Rule::Parse));
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
                self.push_binding(cur, var, value, self.span(stmt));
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
                self.push_binding(cur, var, value, self.span(stmt));
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
        self.push_binding(cur, var, value, span);
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
                    self.each_arg(c, "R.Shape", &["values", "ndim"], &mut set)?;
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
                    self.each_arg(c, "R.Callable", &["params", "ret", "purity", "derive_func"], &mut set)?;
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

    /// Feed the arguments of `c` to `set` by name: the positional ones named after
    /// `names`, then the keywords.
    fn each_arg(
        &mut self,
        c: &ast::ExprCall,
        callee: &str,
        names: &[&str],
        set: &mut dyn FnMut(&mut Self, &str, &ast::Expr) -> PResult<()>,
    ) -> PResult<()> {
        for (i, a) in c.args.iter().enumerate() {
            let Some(key) = names.get(i) else {
                return Err(self.err(a, format!("{callee} takes at most {} arguments", names.len())));
            };
            set(self, key, a)?;
        }
        for k in &c.keywords {
            set(self, &kw_name(k), &k.value)?;
        }
        Ok(())
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
        let d = self.prim(e)?;
        if !(d.dtype().is_int() || d.dtype().is_uint()) {
            return Err(self.err(
                e,
                format!("a shape dimension must be an integer expression, not a {}", d.dtype()),
            ));
        }
        Ok(to_i64(d))
    }

    pub(crate) fn prim(&self, e: &ast::Expr) -> PResult<PrimExpr> {
        self.prim_with(e, self.m.lines)
    }

    fn prim_with(&self, e: &ast::Expr, lines: &crate::span::LineIndex) -> PResult<PrimExpr> {
        parse_prim_expr(e, &TirEnv(&self.tir), lines)
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
