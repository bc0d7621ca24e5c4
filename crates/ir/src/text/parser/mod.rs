//! TVMScript parser: Python syntax (via rustpython-parser) mapped to Relax and TIR.

mod limits;
mod metadata;
pub mod prim_expr;
mod relax;
pub mod tir;

pub use limits::{MAX_BLOCK_DEPTH, MAX_EXPR_DEPTH, MAX_NDIM};

use std::collections::HashSet;

use indexmap::IndexMap;
use rustpython_parser::ast::{self, Ranged};
use rustpython_parser::Parse;

use super::Program;
use crate::attrs::{AttrValue, Attrs};
use crate::diagnostic::Diagnostic;
use crate::module::{BaseFunc, GlobalInfo, IRModule, Target, VDevice};
use crate::span::{LineIndex, Span};

/// Parse a TVMScript text: an `@I.ir_module` class, or a standalone `@R.function`
/// or `@T.prim_func`.
pub fn parse(source: &str) -> Result<Program, Diagnostic> {
    let lines = LineIndex::new(source);
    limits::check_nesting(source)
        .map_err(|(at, msg)| Diagnostic::error(msg, lines.span(at)).with_rule(crate::diagnostic::Rule::Parse))?;
    let suite = ast::Suite::parse(source, "<tvmscript>").map_err(|e| {
        Diagnostic::error(
            format!("invalid Python syntax: {}", e.error),
            lines.span(e.offset.to_usize()),
        )
        .with_rule(crate::diagnostic::Rule::Parse)
    })?;
    let mut meta = None;
    for stmt in &suite {
        if let ast::Stmt::Assign(a) = stmt {
            if is_metadata_assign(a) {
                let text = match &*a.value {
                    ast::Expr::Call(c) => c.args.first(),
                    other => Some(other),
                };
                let Some(ast::Expr::Constant(ast::ExprConstant {
                    value: ast::Constant::Str(json),
                    ..
                })) = text
                else {
                    return Err(Diagnostic::error(
                        "expected `metadata = tvm.ir.load_json(\"\"\"...\"\"\")`",
                        lines.span(stmt.range().start().to_usize()),
                    )
                    .with_rule(crate::diagnostic::Rule::Parse));
                };
                meta = Some(metadata::decode(json).map_err(|m| {
                    Diagnostic::error(m.message, lines.span(stmt.range().start().to_usize()))
                        .with_rule(crate::diagnostic::Rule::Parse)
                })?);
            }
        }
    }
    let mut cx = ModuleCx {
        lines: &lines,
        typevars: HashSet::new(),
        globals: HashSet::new(),
        class_name: None,
        module: IRModule::new(),
        metadata: meta,
    };
    let mut program: Option<Program> = None;
    for stmt in &suite {
        match stmt {
            ast::Stmt::Import(_) | ast::Stmt::ImportFrom(_) | ast::Stmt::Pass(_) => {}
            ast::Stmt::Expr(e) if matches!(&*e.value, ast::Expr::Constant(_)) => {}
            ast::Stmt::Assign(a) if is_typevar_decl(a) => {
                if let Some(ast::Expr::Name(n)) = a.targets.first() {
                    cx.typevars.insert(n.id.to_string());
                }
            }
            ast::Stmt::ClassDef(c) => {
                if program.is_some() {
                    return Err(cx.err(stmt, "expected a single module or function in the text"));
                }
                if !c.decorator_list.iter().any(|d| {
                    let d = if let ast::Expr::Call(c) = d { &*c.func } else { d };
                    dotted_name(d).as_deref() == Some("I.ir_module")
                }) {
                    return Err(cx.err(stmt, "expected the class to be decorated with @I.ir_module"));
                }
                program = Some(Program::Module(cx.parse_class(c)?));
            }
            ast::Stmt::FunctionDef(f) => {
                if program.is_some() {
                    return Err(cx.err(stmt, "expected a single module or function in the text"));
                }
                match decorator_kind(f) {
                    Some(DecoKind::Relax) => {
                        let func = relax::parse_function(&cx, f, None)?;
                        program = Some(Program::Function { name: f.name.to_string(), func });
                    }
                    Some(DecoKind::Prim) => {
                        let func = tir::parse_prim_func_with(f, &lines, &cx.typevars)?;
                        program = Some(Program::PrimFunc { name: f.name.to_string(), func });
                    }
                    None => {
                        return Err(cx.err(stmt, "expected a function decorated with @R.function or @T.prim_func"))
                    }
                }
            }
            ast::Stmt::Assign(a) if is_metadata_assign(a) => {}
            _ => {
                return Err(cx.err(
                    stmt,
                    "expected `@I.ir_module class ...`, `@R.function def ...`, `@T.prim_func def ...` or `name = TypeVar(\"name\")`",
                ))
            }
        }
    }
    program.ok_or_else(|| {
        Diagnostic::error(
            "expected an @I.ir_module class or an @R.function / @T.prim_func definition",
            Span::new(1, 1),
        )
        .with_rule(crate::diagnostic::Rule::Parse)
    })
}

/// Module-level parsing state shared with the function parser.
pub(crate) struct ModuleCx<'a> {
    pub(crate) lines: &'a LineIndex,
    /// Names declared with `n = TypeVar("n")` before the module.
    pub(crate) typevars: HashSet<String>,
    /// Names of the module's functions.
    pub(crate) globals: HashSet<String>,
    /// The class name (`Module` in `Module.func`).
    pub(crate) class_name: Option<String>,
    /// The module being built (its global infos resolve `vdevice=` strings).
    pub(crate) module: IRModule,
    /// Constants of the metadata section, if the text has one.
    pub(crate) metadata: Option<metadata::Metadata>,
}

impl ModuleCx<'_> {
    pub(crate) fn span(&self, node: &impl Ranged) -> Span {
        self.lines.span(node.range().start().to_usize())
    }
    pub(crate) fn err(&self, node: &impl Ranged, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(msg, self.span(node)).with_rule(crate::diagnostic::Rule::Parse)
    }

    fn parse_class(&mut self, c: &ast::StmtClassDef) -> Result<IRModule, Diagnostic> {
        self.class_name = Some(c.name.to_string());
        for s in &c.body {
            if let ast::Stmt::FunctionDef(f) = s {
                self.globals.insert(f.name.to_string());
            }
        }
        // Module attributes and global infos first: VDevice strings resolve against them.
        for s in &c.body {
            if let ast::Stmt::Expr(e) = s {
                if let ast::Expr::Call(call) = &*e.value {
                    match dotted_name(&call.func).as_deref() {
                        Some("I.module_attrs") => {
                            let [arg] = call.args.as_slice() else {
                                return Err(self.err(e, "I.module_attrs expects one dictionary"));
                            };
                            self.module.attrs = self.attrs_dict(arg)?;
                        }
                        Some("I.module_global_infos") => {
                            let [arg] = call.args.as_slice() else {
                                return Err(self.err(e, "I.module_global_infos expects one dictionary"));
                            };
                            self.module.global_infos = self.global_infos(arg)?;
                        }
                        _ => {
                            return Err(self.err(
                                e,
                                "expected I.module_attrs(...), I.module_global_infos(...) or a function definition",
                            ))
                        }
                    }
                    continue;
                }
            }
        }
        let mut functions: IndexMap<String, BaseFunc> = IndexMap::new();
        for s in &c.body {
            match s {
                ast::Stmt::FunctionDef(f) => {
                    let name = f.name.to_string();
                    if functions.contains_key(&name) {
                        return Err(self.err(s, format!("function `{name}` is defined twice in the module")));
                    }
                    let func = match decorator_kind(f) {
                        Some(DecoKind::Relax) => BaseFunc::Relax(relax::parse_function(self, f, None)?),
                        Some(DecoKind::Prim) => {
                            BaseFunc::Prim(tir::parse_prim_func_with(f, self.lines, &self.typevars)?)
                        }
                        None => return Err(self.err(s, "expected @R.function or @T.prim_func on a module function")),
                    };
                    functions.insert(name, func);
                }
                ast::Stmt::Expr(e) if matches!(&*e.value, ast::Expr::Call(_)) => {}
                ast::Stmt::Expr(e) if matches!(&*e.value, ast::Expr::Constant(_)) => {}
                ast::Stmt::Pass(_) => {}
                _ => return Err(self.err(s, "expected a function definition in the module")),
            }
        }
        let mut m = std::mem::take(&mut self.module);
        for (name, f) in functions {
            m.add(&name, f);
        }
        Ok(m)
    }

    /// The entries of a dictionary with string keys, in order; `expected` is the
    /// error when `e` is not a dictionary.
    fn str_dict<'e>(
        &'e self,
        e: &'e ast::Expr,
        expected: &str,
    ) -> Result<impl Iterator<Item = Result<(&'e str, &'e ast::Expr), Diagnostic>> + 'e, Diagnostic> {
        let ast::Expr::Dict(d) = e else {
            return Err(self.err(e, expected));
        };
        Ok(d.keys.iter().zip(&d.values).map(|(k, v)| match k {
            Some(ast::Expr::Constant(ast::ExprConstant {
                value: ast::Constant::Str(key),
                ..
            })) => Ok((key.as_str(), v)),
            _ => Err(self.err(v, "expected a string key")),
        }))
    }

    /// A `{"key": value}` dictionary of attribute values.
    pub(crate) fn attrs_dict(&self, e: &ast::Expr) -> Result<Attrs, Diagnostic> {
        let mut attrs = Attrs::new();
        for entry in self.str_dict(e, "expected a dictionary like {\"key\": value}")? {
            let (key, v) = entry?;
            attrs.set(key, self.attr_value(v)?);
        }
        Ok(attrs)
    }

    /// A literal attribute value: `None`, booleans, numbers, strings, lists, dicts.
    pub(crate) fn attr_value(&self, e: &ast::Expr) -> Result<AttrValue, Diagnostic> {
        Ok(match e {
            ast::Expr::Constant(c) => match &c.value {
                ast::Constant::None => AttrValue::None,
                ast::Constant::Bool(b) => AttrValue::Bool(*b),
                ast::Constant::Int(i) => {
                    AttrValue::Int(i64::try_from(i).map_err(|_| self.err(e, "integer out of the 64-bit range"))?)
                }
                ast::Constant::Float(f) => AttrValue::Float(*f),
                ast::Constant::Str(s) => AttrValue::Str(s.clone()),
                _ => return Err(self.err(e, "expected an attribute value (number, string, list or dict)")),
            },
            ast::Expr::UnaryOp(u)
                if matches!(u.op, ast::UnaryOp::USub) && prim_expr::is_int64_min_magnitude(&u.operand) =>
            {
                AttrValue::Int(i64::MIN)
            }
            ast::Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::USub) => match self.attr_value(&u.operand)? {
                AttrValue::Int(i) => AttrValue::Int(i.checked_neg().ok_or_else(|| self.err(e, "integer overflow"))?),
                AttrValue::Float(f) => AttrValue::Float(-f),
                _ => return Err(self.err(e, "expected a number after `-`")),
            },
            ast::Expr::List(l) => AttrValue::List(l.elts.iter().map(|x| self.attr_value(x)).collect::<Result<_, _>>()?),
            ast::Expr::Tuple(l) => {
                AttrValue::List(l.elts.iter().map(|x| self.attr_value(x)).collect::<Result<_, _>>()?)
            }
            ast::Expr::Dict(_) => AttrValue::Map(self.attrs_dict(e)?),
            ast::Expr::Call(c) => {
                let name = dotted_name(&c.func).unwrap_or_default();
                match name.as_str() {
                    "T.bool" | "T.int8" | "T.int16" | "T.int32" | "T.int64" | "T.uint8" | "T.uint32" | "T.float16"
                    | "T.float32" | "T.float64" => {
                        let [a] = c.args.as_slice() else {
                            return Err(self.err(e, format!("{name} expects one argument")));
                        };
                        self.attr_value(a)?
                    }
                    _ => return Err(self.err(e, format!("unsupported attribute value `{name}(...)`"))),
                }
            }
            _ => return Err(self.err(e, "expected an attribute value (number, string, list or dict)")),
        })
    }

    fn global_infos(&self, e: &ast::Expr) -> Result<IndexMap<String, Vec<GlobalInfo>>, Diagnostic> {
        let mut out = IndexMap::new();
        for entry in self.str_dict(e, "expected a dictionary like {\"vdevice\": [I.vdevice(...)]}")? {
            let (key, v) = entry?;
            let ast::Expr::List(l) = v else {
                return Err(self.err(v, "expected a list of global infos"));
            };
            let mut infos = Vec::new();
            for item in &l.elts {
                infos.push(self.global_info(item)?);
            }
            out.insert(key.to_string(), infos);
        }
        Ok(out)
    }

    fn global_info(&self, e: &ast::Expr) -> Result<GlobalInfo, Diagnostic> {
        let ast::Expr::Call(c) = e else {
            return Err(self.err(e, "expected I.vdevice(...) or I.dummy_global_info()"));
        };
        match dotted_name(&c.func).as_deref() {
            Some("I.dummy_global_info") => Ok(GlobalInfo::Dummy),
            Some("I.vdevice") | Some("R.vdevice") => {
                let mut target = None;
                let mut id = 0i64;
                let mut scope = "global".to_string();
                let mut set = |key: &str, v: &ast::Expr| -> Result<(), Diagnostic> {
                    match key {
                        "target" => {
                            target = Some(match self.attr_value(v)? {
                                AttrValue::Str(s) => Target {
                                    kind: s.split_whitespace().next().unwrap_or("").to_string(),
                                    config: Attrs::new(),
                                },
                                AttrValue::Map(m) => Target {
                                    kind: m.get_str("kind").unwrap_or("").to_string(),
                                    config: m,
                                },
                                _ => return Err(self.err(v, "expected a target string or dictionary")),
                            })
                        }
                        "vdevice_id" => {
                            id = self
                                .attr_value(v)?
                                .as_int()
                                .ok_or_else(|| self.err(v, "expected an integer device id"))?
                        }
                        "memory_scope" => {
                            scope = self
                                .attr_value(v)?
                                .as_str()
                                .ok_or_else(|| self.err(v, "expected a memory scope string"))?
                                .to_string()
                        }
                        _ => return Err(self.err(v, format!("unexpected argument `{key}` of I.vdevice"))),
                    }
                    Ok(())
                };
                const POS: [&str; 3] = ["target", "vdevice_id", "memory_scope"];
                if c.args.len() > 3 {
                    return Err(self.err(e, "I.vdevice takes at most 3 arguments"));
                }
                for (i, a) in c.args.iter().enumerate() {
                    set(POS[i], a)?;
                }
                for k in &c.keywords {
                    let key = k.arg.as_ref().map(|a| a.to_string()).unwrap_or_default();
                    set(&key, &k.value)?;
                }
                let target = target.ok_or_else(|| self.err(e, "I.vdevice needs a target"))?;
                Ok(GlobalInfo::VDevice(VDevice {
                    target,
                    vdevice_id: id,
                    memory_scope: scope,
                }))
            }
            _ => Err(self.err(
                e,
                "unsupported global info: expected I.vdevice(...) or I.dummy_global_info()",
            )),
        }
    }

    /// Resolve a `vdevice="kind:index:scope"` string (`"kind"`, `"kind:index"` too).
    pub(crate) fn resolve_vdevice(&self, spec: &str, node: &impl Ranged) -> Result<VDevice, Diagnostic> {
        let mut parts = spec.split(':');
        let kind = parts.next().unwrap_or("").to_string();
        let index: i64 = match parts.next() {
            Some(s) => s
                .trim()
                .parse()
                .map_err(|_| self.err(node, format!("invalid vdevice index in \"{spec}\"")))?,
            None => 0,
        };
        let scope = parts.next().map(str::to_string);
        if kind.is_empty() {
            return Err(self.err(
                node,
                format!("invalid vdevice \"{spec}\": expected \"kind:index:scope\""),
            ));
        }
        if index >= 0 {
            let found = self
                .module
                .vdevices()
                .into_iter()
                .filter(|v| v.target.kind == kind)
                .nth(index as usize)
                .cloned();
            if let Some(mut v) = found {
                if let Some(s) = scope {
                    v.memory_scope = s;
                }
                return Ok(v);
            }
            if !self.module.vdevices().is_empty() || index > 0 {
                return Err(self.err(
                    node,
                    format!("vdevice \"{spec}\" does not name a VDevice of the module (I.module_global_infos)"),
                ));
            }
        }
        Ok(VDevice {
            target: Target::from_kind(&kind),
            vdevice_id: 0,
            memory_scope: scope.unwrap_or_else(|| "global".to_string()),
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecoKind {
    Relax,
    Prim,
}

pub(crate) fn decorator_kind(f: &ast::StmtFunctionDef) -> Option<DecoKind> {
    for d in &f.decorator_list {
        let name = match d {
            ast::Expr::Call(c) => dotted_name(&c.func),
            other => dotted_name(other),
        };
        match name.as_deref() {
            Some("R.function") => return Some(DecoKind::Relax),
            Some("T.prim_func") => return Some(DecoKind::Prim),
            _ => {}
        }
    }
    None
}

fn is_typevar_decl(a: &ast::StmtAssign) -> bool {
    matches!(a.targets.as_slice(), [ast::Expr::Name(_)])
        && matches!(&*a.value, ast::Expr::Call(c) if dotted_name(&c.func).as_deref() == Some("TypeVar"))
}

fn is_metadata_assign(a: &ast::StmtAssign) -> bool {
    matches!(a.targets.as_slice(), [ast::Expr::Name(n)] if n.id.as_str() == "metadata")
}

/// `a.b.c` as a string, for names and attribute chains.
pub(crate) fn dotted_name(e: &ast::Expr) -> Option<String> {
    match e {
        ast::Expr::Name(n) => Some(n.id.to_string()),
        ast::Expr::Attribute(a) => Some(format!("{}.{}", dotted_name(&a.value)?, a.attr.as_str())),
        _ => None,
    }
}
