//! Printing Relax modules, functions, bindings, expressions and StructInfo.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use super::consts::{decode, format_float, Scalar};
use super::prim_expr::{print_prim_expr, quote, ExprPrinter, Names, PrimContext};
use super::vdevice_spec;
use crate::attrs::{AttrValue, Attrs};
use crate::dtype::{DataType, TypeCode};
use crate::module::{BaseFunc, GlobalInfo, IRModule};
use crate::relax::{Binding, Call, Expr, ExprKind, Function, NDArray, StructInfo, Var};
use crate::text::ops;
use crate::tir::{Buffer, PrimExpr, PrimExprKind, TirVar};
use crate::visit::for_each_expr;

/// Print a `PrimExpr` in the Relax context.
fn prim(e: &PrimExpr) -> String {
    print_prim_expr(e, PrimContext::Relax)
}

/// Whether `text` uses the prefix `p.` (`"R"`, `"T"`) as a name.
fn uses_prefix(text: &str, p: &str) -> bool {
    let pat = format!("{p}.");
    let b = text.as_bytes();
    text.match_indices(&pat)
        .any(|(i, _)| i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'.'))
}

fn header(body: &str, module: bool, typevars: bool) -> String {
    let mut h = String::new();
    if typevars {
        h.push_str("# from typing import TypeVar\n");
    }
    if module {
        h.push_str("# from tvm.script import ir as I\n");
    }
    if uses_prefix(body, "T") {
        h.push_str("# from tvm.script import tirx as T\n# from tvm.tirx.layout import Axis\n");
    }
    if uses_prefix(body, "R") {
        h.push_str("# from tvm.script import relax as R\n");
    }
    h
}

fn typevar_lines(names: &[String]) -> String {
    names.iter().map(|n| format!("{n} = TypeVar({})\n", quote(n))).collect()
}

pub(crate) fn print_module(m: &IRModule) -> String {
    let p = Printer::new(Some(m));
    let mut body = String::new();
    body.push_str("@I.ir_module\nclass Module:\n");
    if !m.attrs.is_empty() {
        body.push_str(&format!("    I.module_attrs({})\n", p.dict(&m.attrs, true)));
    }
    if !m.global_infos.is_empty() {
        let items: Vec<String> = m
            .global_infos
            .iter()
            .map(|(k, infos)| {
                let l: Vec<String> = infos
                    .iter()
                    .map(|g| match g {
                        GlobalInfo::VDevice(v) => {
                            let target = if v.target.config.is_empty() {
                                quote(&v.target.kind)
                            } else {
                                p.dict(&v.target.config, true)
                            };
                            format!("I.vdevice({target}, {}, {})", v.vdevice_id, quote(&v.memory_scope))
                        }
                        GlobalInfo::Dummy => "I.dummy_global_info()".to_string(),
                    })
                    .collect();
                format!("{}: [{}]", quote(k), l.join(", "))
            })
            .collect();
        body.push_str(&format!("    I.module_global_infos({{{}}})\n", items.join(", ")));
    }
    // Module-level TypeVars: symbolic variables bound by Relax parameters and by the
    // parameter buffers of prim_funcs (only `int64` ones can be written as TypeVars).
    // TVM lists each function's names sorted, the functions in printing order, and a
    // name once (at its first function).
    let mut typevars: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for f in m.functions.values() {
        let mut names = match f {
            BaseFunc::Relax(func) => function_typevars(func),
            // The TIR printer decides which of its variables are TypeVars and how they
            // are named.
            BaseFunc::Prim(pf) => super::tir::prim_func_type_var_names(pf),
        };
        names.sort();
        typevars.extend(names.into_iter().filter(|n| seen.insert(n.clone())));
    }
    let module_typevars: HashSet<String> = typevars.iter().cloned().collect();
    let mut first = true;
    for (gv, f) in &m.functions {
        if !first {
            body.push('\n');
        }
        first = false;
        match f {
            BaseFunc::Relax(func) => {
                let mut fp = Printer::new(Some(m));
                fp.module_typevars = module_typevars.clone();
                fp.function(gv.name(), func, 4, true, &mut body);
            }
            BaseFunc::Prim(pf) => {
                let mut s = String::new();
                super::tir::print_prim_func_in(gv.name(), pf, 4, &module_typevars, &mut s);
                body.push_str(s.trim_end_matches('\n'));
                body.push('\n');
            }
        }
    }
    let body = body.trim_end_matches('\n').to_string();
    format!(
        "{}\n{}{}",
        header(&body, true, !typevars.is_empty()),
        typevar_lines(&typevars),
        body
    )
}

/// The `int64` shape variables of `func`'s signature, printed as `TypeVar`s: those its
/// parameters bind and those only its return annotation names (a signature can only
/// name module-level variables).
fn function_typevars(func: &Function) -> Vec<String> {
    let mut vars = TirVars::default();
    collect_function(func, &mut vars);
    let mut out: Vec<String> = vars
        .params
        .iter()
        .filter(|v| v.dtype() == DataType::INT64)
        .map(|v| v.name().to_string())
        .collect();
    if let Some(r) = func.ret_struct_info.as_ref() {
        let mut ret = TirVars::default();
        sinfo_vars(r, &mut ret, false);
        let bound: HashSet<u64> = vars.params.iter().chain(&vars.scalar_params).map(TirVar::id).collect();
        out.extend(
            ret.others
                .iter()
                .filter(|v| v.dtype() == DataType::INT64 && !bound.contains(&v.id()))
                .map(|v| v.name().to_string()),
        );
    }
    out
}

pub(crate) fn print_standalone(name: &str, f: &Function) -> String {
    let mut p = Printer::new(None);
    p.module_typevars = function_typevars(f).into_iter().collect();
    let mut body = String::new();
    p.function(name, f, 0, true, &mut body);
    let body = body.trim_end_matches('\n').to_string();
    let mut tv = p.typevars.clone();
    tv.extend(p.module_typevars.iter().cloned());
    tv.sort();
    tv.dedup();
    format!(
        "{}\n{}{}",
        header(&body, false, !tv.is_empty()),
        typevar_lines(&tv),
        body
    )
}

/// Symbolic variables' printed names: their own unless renamed.
struct SymNames<'a>(&'a HashMap<u64, String>);

impl Names for SymNames<'_> {
    fn var(&self, v: &TirVar) -> String {
        self.0.get(&v.id()).cloned().unwrap_or_else(|| v.name().to_string())
    }
    fn buffer(&self, b: &Buffer) -> String {
        b.name().to_string()
    }
}

/// Printing state for one top-level function.
pub(crate) struct Printer<'m> {
    module: Option<&'m IRModule>,
    /// Names of shape variables bound by parameters (printed as module-level TypeVars).
    pub(crate) typevars: Vec<String>,
    used: HashSet<u64>,
    defined: HashSet<u64>,
    /// Printing a function signature: compound dimensions are written as strings.
    in_sig: std::cell::Cell<bool>,
    /// Symbolic variables defined by scalar parameters (`n: T.int64`).
    scalar_params: HashSet<u64>,
    /// Names declared as module-level TypeVars (not re-declared inside functions).
    module_typevars: HashSet<String>,
    /// Printed (unique) name of each Relax variable defined so far.
    names: RefCell<HashMap<u64, String>>,
    /// Names taken in the scopes open now (`h`, `h_1`, `h_2`, ... as TVM's printer).
    taken: RefCell<HashSet<String>>,
    /// Names taken by each open nested scope (local function, `if` branch), freed when
    /// it closes.
    scopes: RefCell<Vec<Vec<String>>>,
    /// Printed names of the symbolic variables declared in the body that a parameter's
    /// name took first (`m_1 = T.int64()`).
    sym_names: RefCell<HashMap<u64, String>>,
}

impl<'m> Printer<'m> {
    pub(crate) fn new(module: Option<&'m IRModule>) -> Printer<'m> {
        Printer {
            module,
            typevars: Vec::new(),
            used: HashSet::new(),
            defined: HashSet::new(),
            in_sig: std::cell::Cell::new(false),
            scalar_params: HashSet::new(),
            module_typevars: HashSet::new(),
            names: RefCell::new(HashMap::new()),
            taken: RefCell::new(HashSet::new()),
            scopes: RefCell::new(Vec::new()),
            sym_names: RefCell::new(HashMap::new()),
        }
    }

    /// `base` if still free in the function, else the first free `base_<k>`; taken.
    fn take_free(&self, base: &str) -> String {
        let mut taken = self.taken.borrow_mut();
        let mut name = base.to_string();
        let mut k = 1;
        while taken.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        taken.insert(name.clone());
        name
    }

    /// Give `v` its printed name at its definition: its own name if still free in the
    /// function, else the first free `name_<k>` (as TVM's printer renames rebindings).
    fn define(&self, v: &Var) -> String {
        if let Some(n) = self.names.borrow().get(&v.id()) {
            return n.clone();
        }
        let name = self.take_free(v.name());
        if let Some(scope) = self.scopes.borrow_mut().last_mut() {
            scope.push(name.clone());
        }
        self.names.borrow_mut().insert(v.id(), name.clone());
        name
    }

    /// Print a `PrimExpr` in the Relax context, with the function's symbolic names.
    fn prim(&self, e: &PrimExpr) -> String {
        let names = self.sym_names.borrow();
        ExprPrinter {
            names: &SymNames(&names),
            ctx: PrimContext::Relax,
            scalar_sugar: false,
        }
        .print(e)
    }

    /// Give the symbolic variable `v`, declared in the body, a name free in the function.
    fn define_sym(&self, v: &TirVar) -> String {
        let base = v.name();
        let name = self.take_free(base);
        if name != base {
            self.sym_names.borrow_mut().insert(v.id(), name.clone());
        }
        name
    }

    /// Open a nested naming scope.
    fn push_scope(&self) {
        self.scopes.borrow_mut().push(Vec::new());
    }

    /// Close the innermost naming scope: its names become free again.
    fn pop_scope(&self) {
        if let Some(names) = self.scopes.borrow_mut().pop() {
            let mut taken = self.taken.borrow_mut();
            for n in names {
                taken.remove(&n);
            }
        }
    }

    /// The printed name of a variable (its definition's name; undefined variables keep
    /// their own name).
    fn name_of(&self, v: &Var) -> String {
        self.names
            .borrow()
            .get(&v.id())
            .cloned()
            .unwrap_or_else(|| v.name().to_string())
    }

    // ----- functions ------------------------------------------------------------

    fn function(&mut self, name: &str, f: &Function, ind: usize, top: bool, out: &mut String) {
        let pad = " ".repeat(ind);
        let inner = " ".repeat(ind + 4);
        if top {
            let mut vars = TirVars::default();
            collect_function(f, &mut vars);
            self.typevars.extend(vars.params.iter().map(|v| v.name().to_string()));
            self.scalar_params = vars.scalar_params.iter().map(TirVar::id).collect();
            collect_uses(f, &mut self.used);
            // Symbolic variables share the function's namespace with the Relax
            // variables. As in TVM's printer, those the signature binds (TypeVars) are
            // named first, a parameter of the same name is renamed (`n_1`); those
            // declared in the body (`n = T.int64()`) are named after the parameters and
            // before the bindings. Variables a scalar parameter defines are named by it.
            let mut taken = self.taken.borrow_mut();
            for v in &vars.params {
                taken.insert(v.name().to_string());
            }
        }
        let mut deco = Vec::new();
        if !f.is_pure {
            deco.push("pure=False");
        }
        if top && f.private {
            deco.push("private=True");
        }
        out.push_str(&pad);
        out.push_str("@R.function");
        if !deco.is_empty() {
            out.push_str(&format!("({})", deco.join(", ")));
        }
        out.push('\n');
        self.in_sig.set(true);
        let params: Vec<String> = f
            .params
            .iter()
            .map(|p| {
                self.defined.insert(p.id());
                let n = self.define(p);
                match p.struct_info() {
                    Some(s) => format!("{n}: {}", self.sinfo(s)),
                    None => n,
                }
            })
            .collect();
        out.push_str(&format!("{pad}def {name}({})", params.join(", ")));
        if let Some(r) = &f.ret_struct_info {
            out.push_str(&format!(" -> {}", self.sinfo(r)));
        }
        self.in_sig.set(false);
        out.push_str(":\n");
        let attrs: Vec<(String, AttrValue)> = f
            .attrs
            .iter()
            .filter(|(k, v)| !(*k == "global_symbol" && v.as_str() == Some(name) && top && !f.private))
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        if !attrs.is_empty() {
            out.push_str(&format!("{inner}R.func_attr({})\n", self.dict(&Attrs(attrs), true)));
        }
        if top {
            if self.module.is_some() && uses_global(f) {
                out.push_str(&format!("{inner}cls = Module\n"));
            }
            let mut vars = TirVars::default();
            collect_function(f, &mut vars);
            let params: HashSet<u64> = vars.params.iter().map(TirVar::id).collect();
            for v in &vars.others {
                if !params.contains(&v.id()) && !self.module_typevars.contains(v.name()) {
                    let n = self.define_sym(v);
                    out.push_str(&format!("{inner}{n} = T.{}()\n", v.dtype()));
                }
            }
        }
        let (blocks, body) = match f.body.kind() {
            ExprKind::Seq(s) => (s.blocks.as_slice(), &s.body),
            _ => (&[][..], &f.body),
        };
        for b in blocks {
            if b.is_dataflow {
                out.push_str(&format!("{inner}with R.dataflow():\n"));
                let ind2 = ind + 8;
                for bind in &b.bindings {
                    self.binding(bind, ind2, out);
                }
                let outs: Vec<String> = b
                    .bindings
                    .iter()
                    .map(Binding::var)
                    .filter(|v| !v.is_dataflow())
                    .map(|v| self.name_of(v))
                    .collect();
                out.push_str(&format!("{}R.output({})\n", " ".repeat(ind2), outs.join(", ")));
            } else {
                for bind in &b.bindings {
                    self.binding(bind, ind + 4, out);
                }
            }
        }
        self.declare_undefined(body, ind + 4, out);
        out.push_str(&format!("{inner}return {}\n", self.expr(body)));
    }

    /// Print declarations of variables used by `e` but never bound.
    fn declare_undefined(&mut self, e: &Expr, ind: usize, out: &mut String) {
        let mut vars = Vec::new();
        free_vars(e, &mut vars);
        for v in vars {
            if self.defined.insert(v.id()) {
                let name = self.define(&v);
                let s = v
                    .struct_info()
                    .map(|s| self.sinfo(s))
                    .unwrap_or_else(|| "R.Any".to_string());
                out.push_str(&format!("{}{name}: {s}\n", " ".repeat(ind)));
            }
        }
    }

    /// `: <StructInfo>` for an annotated variable, empty otherwise.
    fn annotation(&self, var: &Var) -> String {
        var.struct_info()
            .map(|s| format!(": {}", self.sinfo(s)))
            .unwrap_or_default()
    }

    fn binding(&mut self, b: &Binding, ind: usize, out: &mut String) {
        let pad = " ".repeat(ind);
        let var = b.var();
        match b {
            Binding::MatchCast { value, struct_info, .. } => {
                self.declare_undefined(value, ind, out);
                let ann = self.annotation(var);
                let value = self.expr(value);
                out.push_str(&format!(
                    "{pad}{}{ann} = R.match_cast({value}, {})\n",
                    self.define(var),
                    self.sinfo(struct_info)
                ));
            }
            Binding::VarBinding { value, .. } => match value.kind() {
                ExprKind::Function(f) => {
                    // A local function may call itself.
                    self.defined.insert(var.id());
                    let name = self.define(var);
                    let mut nested = String::new();
                    self.push_scope();
                    self.function(&name, f, ind, false, &mut nested);
                    self.pop_scope();
                    let h = header(&nested, false, false);
                    for line in h.lines() {
                        out.push_str(&format!("{pad}{line}\n"));
                    }
                    out.push_str(&format!("{pad}\n"));
                    out.push_str(&nested);
                    out.push('\n');
                }
                ExprKind::If {
                    cond,
                    then_branch,
                    else_branch,
                } => {
                    self.declare_undefined(cond, ind, out);
                    out.push_str(&format!("{pad}if {}:\n", self.expr(cond)));
                    self.define(var);
                    self.push_scope();
                    self.branch(var, then_branch, ind + 4, out);
                    self.pop_scope();
                    out.push_str(&format!("{pad}else:\n"));
                    self.push_scope();
                    self.branch(var, else_branch, ind + 4, out);
                    self.pop_scope();
                }
                _ => {
                    self.declare_undefined(value, ind, out);
                    // An unused, unannotated `_` prints as an expression statement, the way
                    // TVM prints a unit-valued call; an annotated variable keeps its
                    // annotation so that the text parses back to the same binding.
                    let bare = (value.as_call().is_some()
                        || matches!(value.kind(), ExprKind::Tuple(f) if f.is_empty()))
                        && !self.used.contains(&var.id())
                        && var.struct_info().is_none()
                        && var.name() == "_";
                    if bare {
                        out.push_str(&format!("{pad}{}\n", self.expr(value)));
                    } else {
                        let hide = matches!(
                            value.as_call().and_then(|c| c.op.as_op()),
                            Some("relax.call_tir" | "relax.call_dps_packed" | "relax.dist.call_tir")
                        );
                        let ann = match var.struct_info() {
                            Some(s) if !hide => format!(": {}", self.sinfo(s)),
                            _ => String::new(),
                        };
                        let v = match value.kind() {
                            ExprKind::Tuple(f) if f.len() >= 2 => {
                                f.iter().map(|x| self.expr(x)).collect::<Vec<_>>().join(", ")
                            }
                            _ => self.expr(value),
                        };
                        out.push_str(&format!("{pad}{}{ann} = {v}\n", self.define(var)));
                    }
                }
            },
        }
        self.defined.insert(var.id());
    }

    fn branch(&mut self, var: &Var, e: &Expr, ind: usize, out: &mut String) {
        let (blocks, body) = match e.kind() {
            ExprKind::Seq(s) => (s.blocks.as_slice(), &s.body),
            _ => (&[][..], e),
        };
        for b in blocks {
            for bind in &b.bindings {
                self.binding(bind, ind, out);
            }
        }
        self.declare_undefined(body, ind, out);
        let ann = self.annotation(var);
        let value = self.expr(body);
        out.push_str(&format!("{}{}{ann} = {value}\n", " ".repeat(ind), self.define(var)));
    }

    // ----- expressions ----------------------------------------------------------

    pub(crate) fn expr(&self, e: &Expr) -> String {
        match e.kind() {
            ExprKind::Var(v) => self.name_of(v),
            ExprKind::GlobalVar(g) => {
                if self.module.is_some() {
                    format!("cls.{}", g.name())
                } else {
                    g.name().to_string()
                }
            }
            ExprKind::Constant { data } => self.constant(data),
            ExprKind::Tuple(f) => match f.len() {
                0 => "R.tuple()".to_string(),
                1 => format!("({},)", self.expr(&f[0])),
                _ => format!("({})", f.iter().map(|x| self.expr(x)).collect::<Vec<_>>().join(", ")),
            },
            ExprKind::Seq(s) => self.expr(&s.body),
            ExprKind::PrimValue(p) => self.prim(p),
            ExprKind::StringImm(s) => format!("R.str({})", quote(s)),
            ExprKind::DataTypeImm(d) => format!("R.dtype({})", quote(&d.to_string())),
            ExprKind::Function(_) => "R.function_expression_not_printable()".to_string(),
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                format!(
                    "R.If({}, {}, {})",
                    self.expr(cond),
                    self.expr(then_branch),
                    self.expr(else_branch)
                )
            }
            ExprKind::ExternFunc { global_symbol } => {
                format!("R.ExternFunc({})", quote(global_symbol))
            }
            ExprKind::Call(c) => self.call(c),
            ExprKind::ShapeExpr(d) => format!("R.shape([{}])", d.iter().map(prim).collect::<Vec<_>>().join(", ")),
            ExprKind::TupleGetItem { tuple, index } => format!("{}[{index}]", self.expr(tuple)),
            ExprKind::Op(name) => format!("R.{}", name.strip_prefix("relax.").unwrap_or(name)),
        }
    }

    fn constant(&self, a: &NDArray) -> String {
        let inline = matches!(
            (a.dtype.code, a.dtype.bits),
            (TypeCode::Int, 8 | 16 | 32 | 64) | (TypeCode::Float, 16 | 32 | 64) | (TypeCode::UInt, 1)
        );
        let elem = |i: usize| -> String {
            match decode(a, i) {
                Some(Scalar::Int(v)) if a.dtype.is_bool() => if v != 0 { "True" } else { "False" }.to_string(),
                Some(Scalar::Int(v)) => v.to_string(),
                Some(Scalar::Float(f)) if f.is_finite() => format_float(f),
                Some(Scalar::Float(f)) => quote(&format_float(f)),
                None => "0".to_string(),
            }
        };
        if a.shape.is_empty() && inline {
            return format!("R.const({}, {})", elem(0), quote(&a.dtype.to_string()));
        }
        // Non-scalar (or unusual dtype) constants: a nested list, which TVM's parser accepts.
        fn nest(shape: &[i64], offset: &mut usize, elem: &dyn Fn(usize) -> String) -> String {
            match shape.split_first() {
                None => {
                    let s = elem(*offset);
                    *offset += 1;
                    s
                }
                Some((&n, rest)) => {
                    let items: Vec<String> = (0..n.max(0)).map(|_| nest(rest, offset, elem)).collect();
                    format!("[{}]", items.join(", "))
                }
            }
        }
        let mut off = 0;
        format!(
            "R.const({}, {})",
            nest(&a.shape, &mut off, &elem),
            quote(&a.dtype.to_string())
        )
    }

    fn callee_str(&self, e: &Expr) -> String {
        match e.kind() {
            ExprKind::ExternFunc { global_symbol } => quote(global_symbol),
            _ => self.expr(e),
        }
    }

    fn ty_args(&self, c: &Call) -> Option<String> {
        if c.sinfo_args.is_empty() {
            return None;
        }
        let l: Vec<String> = c.sinfo_args.iter().map(|s| self.sinfo(s)).collect();
        Some(if l.len() == 1 {
            format!("ty_args=({},)", l[0])
        } else {
            format!("ty_args=({})", l.join(", "))
        })
    }

    fn out_ty(&self, c: &Call) -> String {
        match c.sinfo_args.first() {
            Some(StructInfo::Tuple(f)) => {
                format!(
                    "out_ty=[{}]",
                    f.iter().map(|s| self.sinfo(s)).collect::<Vec<_>>().join(", ")
                )
            }
            Some(s) => format!("out_ty={}", self.sinfo(s)),
            None => "out_ty=R.Tuple".to_string(),
        }
    }

    fn call(&self, c: &Call) -> String {
        let op = match c.op.kind() {
            ExprKind::Op(name) => name.as_str(),
            ExprKind::ExternFunc { global_symbol } => {
                let mut parts = vec![quote(global_symbol)];
                parts.extend(c.args.iter().map(|a| self.expr(a)));
                parts.extend(self.ty_args(c));
                return format!("R.call_packed({})", parts.join(", "));
            }
            _ => {
                let mut parts: Vec<String> = c.args.iter().map(|a| self.expr(a)).collect();
                parts.extend(self.ty_args(c));
                // A callee that prints as a bare value (a PrimValue) keeps its
                // constructor, or it would read back as a different expression.
                let callee = match c.op.kind() {
                    ExprKind::PrimValue(p) => format!("R.prim_value({})", self.prim(p)),
                    _ => self.expr(&c.op),
                };
                return format!("{callee}({})", parts.join(", "));
            }
        };
        let short = op.strip_prefix("relax.").unwrap_or(op);
        // `R.nn.attention` with a bias argument prints as `R.nn.attention_bias`.
        let short = if short == "nn.attention" && c.args.len() == 4 {
            "nn.attention_bias"
        } else {
            short
        };
        let mut parts: Vec<String> = Vec::new();
        match short {
            "call_tir" | "dist.call_tir" | "call_dps_packed" | "call_tir_inplace" | "call_tir_with_grad" => {
                if let Some(f) = c.args.first() {
                    parts.push(self.callee_str(f));
                }
                if let Some(a) = c.args.get(1) {
                    parts.push(self.expr(a));
                }
                parts.push(self.out_ty(c));
                for (k, v) in c.attrs.iter() {
                    if k == "te_grad_kwargs" && matches!(v, AttrValue::Map(m) if m.is_empty()) {
                        continue;
                    }
                    parts.push(format!("{k}={}", self.attr(v)));
                }
                if let Some(tv) = c.args.get(2) {
                    parts.push(format!("tir_vars={}", self.expr(tv)));
                }
            }
            "call_pure_packed" | "call_inplace_packed" => {
                if let Some(f) = c.args.first() {
                    parts.push(self.callee_str(f));
                }
                parts.extend(c.args.iter().skip(1).map(|a| self.expr(a)));
                if let Some(v) = c.attrs.get("inplace_indices") {
                    parts.push(format!("inplace_indices={}", self.attr(v)));
                }
                parts.extend(self.ty_args(c));
            }
            "print" => {
                parts.extend(c.args.iter().skip(1).map(|a| self.expr(a)));
                if let Some(f) = c.args.first() {
                    parts.push(format!("format={}", self.expr(f)));
                }
            }
            "assert_op" => {
                if let Some(x) = c.args.first() {
                    parts.push(self.expr(x));
                }
                parts.extend(c.args.iter().skip(2).map(|a| self.expr(a)));
                if let Some(f) = c.args.get(1) {
                    parts.push(format!("format={}", self.expr(f)));
                }
            }
            "hint_on_device" => {
                parts.extend(c.args.iter().map(|a| self.expr(a)));
                parts.push(format!(
                    "R.device(device_type={}, index={})",
                    c.attrs.get_int("device_type").unwrap_or(1),
                    c.attrs.get_int("index").unwrap_or(0)
                ));
                parts.push(quote(c.attrs.get_str("memory_scope").unwrap_or("global")));
            }
            _ => {
                parts.extend(c.args.iter().map(|a| self.expr(a)));
                let sig = ops::lookup_op(op);
                for (k, v) in c.attrs.iter() {
                    let is_index_map = k == "index_map" && sig.is_some_and(|s| s.name == "layout_transform");
                    if is_index_map {
                        parts.push(format!("{k}={}", index_map(v)));
                    } else {
                        parts.push(format!("{k}={}", self.attr(v)));
                    }
                }
                parts.extend(self.ty_args(c));
            }
        }
        format!("R.{short}({})", parts.join(", "))
    }

    fn attr(&self, v: &AttrValue) -> String {
        super::attr_value(v, &prim, &|m| self.dict(m, false))
    }

    /// `{"key": value, ...}`; keys sorted when `sorted`.
    fn dict(&self, m: &Attrs, sorted: bool) -> String {
        let mut items: Vec<(&str, &AttrValue)> = m.iter().collect();
        if sorted {
            items.sort_by(|a, b| a.0.cmp(b.0));
        }
        let s: Vec<String> = items
            .iter()
            .map(|(k, v)| format!("{}: {}", quote(k), self.attr(v)))
            .collect();
        format!("{{{}}}", s.join(", "))
    }

    // ----- StructInfo -----------------------------------------------------------

    /// A shape dimension; in a signature, compound expressions are quoted.
    fn dim(&self, d: &PrimExpr) -> String {
        let s = self.prim(d);
        let typevar_used = || {
            let mut v = TirVars::default();
            prim_vars(d, &mut v, false);
            v.others.iter().any(|x| !self.scalar_params.contains(&x.id()))
        };
        if self.in_sig.get() && d.as_var().is_none() && d.as_int().is_none() && typevar_used() {
            quote(&s)
        } else {
            s
        }
    }

    pub(crate) fn sinfo(&self, s: &StructInfo) -> String {
        match s {
            StructInfo::Object => "R.Any".to_string(),
            StructInfo::Prim(p) => match &p.value {
                None => format!("T.{}", p.dtype),
                Some(v) if v.as_var().is_some() => format!("T.{}", p.dtype),
                Some(v) => format!("R.Prim(value={})", self.prim(v)),
            },
            StructInfo::Shape(sh) => match &sh.values {
                Some(v) => format!(
                    "R.Shape([{}])",
                    v.iter().map(|x| self.dim(x)).collect::<Vec<_>>().join(", ")
                ),
                None => format!("R.Shape(ndim={})", sh.ndim),
            },
            StructInfo::Tensor(t) => {
                let mut parts = Vec::new();
                let mut has_shape = false;
                if let Some(shape) = &t.shape {
                    has_shape = true;
                    match shape.kind() {
                        ExprKind::ShapeExpr(d) => {
                            let dims: Vec<String> = d.iter().map(|x| self.dim(x)).collect();
                            parts.push(if dims.len() == 1 {
                                format!("({},)", dims[0])
                            } else {
                                format!("({})", dims.join(", "))
                            });
                        }
                        _ => parts.push(self.expr(shape)),
                    }
                }
                if !t.dtype.is_void() {
                    parts.push(format!("dtype={}", quote(&t.dtype.to_string())));
                }
                if !has_shape && t.ndim != -1 {
                    parts.push(format!("ndim={}", t.ndim));
                }
                if let Some(vd) = &t.vdevice {
                    parts.push(format!("vdevice={}", quote(&vdevice_spec(vd, self.module))));
                }
                if parts.is_empty() {
                    "R.Tensor".to_string()
                } else {
                    format!("R.Tensor({})", parts.join(", "))
                }
            }
            StructInfo::Tuple(f) => {
                if f.is_empty() {
                    "R.Tuple".to_string()
                } else {
                    format!(
                        "R.Tuple({})",
                        f.iter().map(|x| self.sinfo(x)).collect::<Vec<_>>().join(", ")
                    )
                }
            }
            StructInfo::Func(f) => match &f.params {
                Some(params) => {
                    let ps: Vec<String> = params.iter().map(|x| self.sinfo(x)).collect();
                    let tuple = if ps.len() == 1 {
                        format!("({},)", ps[0])
                    } else {
                        format!("({})", ps.join(", "))
                    };
                    format!(
                        "R.Callable({tuple}, {}, {})",
                        self.sinfo(&f.ret),
                        if f.purity { "True" } else { "False" }
                    )
                }
                None => {
                    let mut parts = Vec::new();
                    if !matches!(*f.ret, StructInfo::Object) {
                        parts.push(format!("ret={}", self.sinfo(&f.ret)));
                    }
                    if f.purity {
                        parts.push("purity=True".to_string());
                    }
                    if let Some(d) = &f.derive_func {
                        parts.push(format!("derive_func={}", quote(d)));
                    }
                    if parts.is_empty() {
                        "R.Callable".to_string()
                    } else {
                        format!("R.Callable({})", parts.join(", "))
                    }
                }
            },
        }
    }
}

fn index_map(v: &AttrValue) -> String {
    let AttrValue::Map(m) = v else {
        return "None".to_string();
    };
    let list = |k: &str| -> Vec<String> {
        m.get(k)
            .and_then(AttrValue::as_list)
            .map(|l| {
                l.iter()
                    .map(|x| {
                        if let AttrValue::PrimExpr(p) = x {
                            prim(p)
                        } else {
                            "None".to_string()
                        }
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let params = list("params");
    let results = list("results");
    let body = if results.len() == 1 {
        format!("({},)", results[0])
    } else {
        format!("({})", results.join(", "))
    };
    format!("T.index_map(lambda {}: {body})", params.join(", "))
}

// ----- analyses used by the printer ------------------------------------------------

/// TIR variables of a function: those in parameter annotations, and all others in
/// order of first occurrence.
#[derive(Default)]
struct TirVars {
    params: Vec<TirVar>,
    scalar_params: Vec<TirVar>,
    others: Vec<TirVar>,
    seen: HashSet<u64>,
}

impl TirVars {
    fn add(&mut self, v: &TirVar, param: bool) {
        if self.seen.insert(v.id()) {
            if param {
                self.params.push(v.clone());
            } else {
                self.others.push(v.clone());
            }
        }
    }
}

fn prim_vars(e: &PrimExpr, out: &mut TirVars, param: bool) {
    match e.kind() {
        PrimExprKind::Var(v) => out.add(v, param),
        PrimExprKind::Cast { value, .. } | PrimExprKind::Not(value) => prim_vars(value, out, param),
        PrimExprKind::Binary { a, b, .. } => {
            prim_vars(a, out, param);
            prim_vars(b, out, param);
        }
        PrimExprKind::Select { cond, t, f } => {
            prim_vars(cond, out, param);
            prim_vars(t, out, param);
            prim_vars(f, out, param);
        }
        PrimExprKind::Call { args, .. } => args.iter().for_each(|a| prim_vars(a, out, param)),
        PrimExprKind::BufferLoad { indices, .. } => indices.iter().for_each(|a| prim_vars(a, out, param)),
        PrimExprKind::Let { value, body, .. } => {
            prim_vars(value, out, param);
            prim_vars(body, out, param);
        }
        PrimExprKind::Ramp { base, stride, .. } => {
            prim_vars(base, out, param);
            prim_vars(stride, out, param);
        }
        PrimExprKind::Broadcast { value, .. } => prim_vars(value, out, param),
        PrimExprKind::IntImm { .. } | PrimExprKind::FloatImm { .. } | PrimExprKind::StringImm(_) => {}
    }
}

fn sinfo_vars(s: &StructInfo, out: &mut TirVars, param: bool) {
    match s {
        StructInfo::Object => {}
        StructInfo::Prim(p) => {
            if let Some(v) = &p.value {
                prim_vars(v, out, param)
            }
        }
        StructInfo::Shape(sh) => sh.values.iter().flatten().for_each(|v| prim_vars(v, out, param)),
        StructInfo::Tensor(t) => {
            if let Some(sh) = &t.shape {
                if let ExprKind::ShapeExpr(d) = sh.kind() {
                    d.iter().for_each(|v| prim_vars(v, out, param));
                }
            }
        }
        StructInfo::Tuple(f) => f.iter().for_each(|x| sinfo_vars(x, out, param)),
        StructInfo::Func(f) => {
            f.params.iter().flatten().for_each(|x| sinfo_vars(x, out, param));
            sinfo_vars(&f.ret, out, param);
        }
    }
}

fn collect_params(f: &Function, out: &mut TirVars) {
    // The function's own parameters, then those of every function nested in it, in
    // pre-order (one walk: walking each nested function's body again was exponential).
    function_params(f, out);
    walk_functions(&f.body, &mut |g| function_params(g, out));
}

fn function_params(f: &Function, out: &mut TirVars) {
    // Scalar parameters (`n: T.int64`) define their symbolic variable themselves.
    for p in &f.params {
        if let Some(StructInfo::Prim(ps)) = p.struct_info() {
            if let Some(v) = ps.value.as_ref().and_then(PrimExpr::as_var) {
                if out.seen.insert(v.id()) {
                    out.scalar_params.push(v.clone());
                }
            }
        }
    }
    for p in &f.params {
        if let Some(s) = p.struct_info() {
            sinfo_vars(s, out, true);
        }
    }
}

fn walk_functions(e: &Expr, cb: &mut dyn FnMut(&Function)) {
    for_each_expr(e, &mut |x| {
        if let ExprKind::Function(g) = x.kind() {
            cb(g);
        }
    });
}

fn collect_function(f: &Function, out: &mut TirVars) {
    collect_params(f, out);
    if let Some(r) = &f.ret_struct_info {
        sinfo_vars(r, out, false);
    }
    collect_body(&f.body, out);
}

fn collect_body(e: &Expr, out: &mut TirVars) {
    visit_bindings_and_exprs(e, out);
}

fn visit_bindings_and_exprs(e: &Expr, out: &mut TirVars) {
    match e.kind() {
        ExprKind::Seq(s) => {
            for b in &s.blocks {
                for bind in &b.bindings {
                    // `extent: T.int64 = source` defines the symbolic variable `extent`.
                    if let (Binding::VarBinding { var, .. }, Some(StructInfo::Prim(p))) =
                        (bind, bind.var().struct_info())
                    {
                        if let Some(v) = p.value.as_ref().and_then(PrimExpr::as_var) {
                            if v.name() == var.name() && out.seen.insert(v.id()) {
                                out.scalar_params.push(v.clone());
                            }
                        }
                    }
                    if let Some(si) = bind.var().struct_info() {
                        sinfo_vars(si, out, false);
                    }
                    if let Binding::MatchCast { struct_info, .. } = bind {
                        sinfo_vars(struct_info, out, false);
                    }
                    visit_bindings_and_exprs(bind.value(), out);
                }
            }
            visit_bindings_and_exprs(&s.body, out);
        }
        ExprKind::Function(f) => {
            if let Some(r) = &f.ret_struct_info {
                sinfo_vars(r, out, false);
            }
            visit_bindings_and_exprs(&f.body, out);
        }
        ExprKind::PrimValue(p) => prim_vars(p, out, false),
        ExprKind::ShapeExpr(d) => d.iter().for_each(|v| prim_vars(v, out, false)),
        ExprKind::Call(c) => {
            visit_bindings_and_exprs(&c.op, out);
            c.args.iter().for_each(|a| visit_bindings_and_exprs(a, out));
            c.sinfo_args.iter().for_each(|s| sinfo_vars(s, out, false));
        }
        ExprKind::Tuple(f) => f.iter().for_each(|a| visit_bindings_and_exprs(a, out)),
        ExprKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            visit_bindings_and_exprs(cond, out);
            visit_bindings_and_exprs(then_branch, out);
            visit_bindings_and_exprs(else_branch, out);
        }
        ExprKind::TupleGetItem { tuple, .. } => visit_bindings_and_exprs(tuple, out),
        _ => {}
    }
}

fn uses_global(f: &Function) -> bool {
    let mut found = false;
    for_each_expr(&f.body, &mut |e| {
        if matches!(e.kind(), ExprKind::GlobalVar(_)) {
            found = true;
        }
    });
    found
}

/// Ids of all variables referenced anywhere in `f` (including in StructInfo shapes).
fn collect_uses(f: &Function, out: &mut HashSet<u64>) {
    let add_sinfo = |s: &StructInfo, out: &mut HashSet<u64>| {
        fn go(s: &StructInfo, out: &mut HashSet<u64>) {
            match s {
                StructInfo::Tensor(t) => {
                    if let Some(v) = t.shape.as_ref().and_then(Expr::as_var) {
                        out.insert(v.id());
                    }
                }
                StructInfo::Tuple(f) => f.iter().for_each(|x| go(x, out)),
                StructInfo::Func(f) => {
                    f.params.iter().flatten().for_each(|x| go(x, out));
                    go(&f.ret, out);
                }
                _ => {}
            }
        }
        go(s, out)
    };
    for_each_expr(&f.body, &mut |e| {
        if let ExprKind::Var(v) = e.kind() {
            out.insert(v.id());
        }
    });
    let mut sinfos: Vec<StructInfo> = Vec::new();
    for_each_expr(&f.body, &mut |e| {
        if let ExprKind::Seq(s) = e.kind() {
            for b in &s.blocks {
                for bind in &b.bindings {
                    if let Some(si) = bind.var().struct_info() {
                        sinfos.push(si.clone());
                    }
                }
            }
        }
        if let ExprKind::Call(c) = e.kind() {
            sinfos.extend(c.sinfo_args.iter().cloned());
        }
    });
    for s in &sinfos {
        add_sinfo(s, out);
    }
}

/// Variables referenced by `e` (not inside nested functions), in order.
fn free_vars(e: &Expr, out: &mut Vec<Var>) {
    match e.kind() {
        ExprKind::Var(v) if !out.contains(v) => out.push(v.clone()),
        ExprKind::Call(c) => {
            free_vars(&c.op, out);
            c.args.iter().for_each(|a| free_vars(a, out));
        }
        ExprKind::Tuple(f) => f.iter().for_each(|a| free_vars(a, out)),
        ExprKind::TupleGetItem { tuple, .. } => free_vars(tuple, out),
        _ => {}
    }
}
