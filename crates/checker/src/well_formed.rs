//! Well-formedness: the 24 criteria of the spec, each reported with its own
//! diagnostic (`rule` = `"well-formed/<N>: <short name>"`), criterion 25 (TVM's
//! TIR well-formedness: a PrimFunc uses no undefined variable, such as a loop
//! extent that nothing binds), plus the normal-form criteria
//! (`"normal-form/<N>: ..."`) when asked for.
//!
//! The checker collects every violation (it does not stop at the first one).

use std::collections::{HashMap, HashSet};

use relax_ir::tir::{PrimExprKind, TirVar};
use relax_ir::{
    AttrValue, BaseFunc, Binding, BindingBlock, Call, DataType, Diagnostic, Expr, ExprKind, Function, IRModule,
    PrimExpr, Rule, SeqExpr, Span, StructInfo, TirRule, TypeCode, Var,
};

use crate::analysis::{self, can_prove_shape_equal, display_struct_info, is_base_of};
use crate::derive::{is_force_pure, prim_func_struct_info};
use crate::normalize::CALL_TIR_OPS;

/// The rule of well-formedness criterion `n`.
pub fn rule_name(n: usize) -> Rule {
    Rule::WellFormed(u8::try_from(n).unwrap_or(0))
}

/// The rule of normal-form criterion `n`.
pub fn normal_form_rule(n: usize) -> Rule {
    Rule::NormalForm(u8::try_from(n).unwrap_or(0))
}

/// What to check.
#[derive(Clone, Copy, Debug)]
pub struct WfOptions {
    /// Also check the normal form (nesting, `SeqExpr` placement).
    pub normal_form: bool,
}

impl Default for WfOptions {
    fn default() -> Self {
        WfOptions { normal_form: true }
    }
}

/// Check every well-formedness criterion on `module`; returns the violations
/// (errors, and a warning for criterion 12).
pub fn check_module(module: &IRModule, opts: WfOptions) -> Vec<Diagnostic> {
    let mut c = Checker::new(module, opts);
    c.run();
    c.diags
}

/// Whether `module` has no well-formedness error.
pub fn is_well_formed(module: &IRModule) -> bool {
    check_module(module, WfOptions::default()).iter().all(|d| !d.is_error())
}

/// Criterion 8 on an unnormalized module (normalization fills in return
/// annotations): recursive functions must have a return annotation.
pub fn check_recursion_annotations(module: &IRModule) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let cyclic = recursive_globals(module);
    for (gv, f) in &module.functions {
        if let BaseFunc::Relax(func) = f {
            if cyclic.contains(gv.name()) && func.ret_struct_info.is_none() {
                diags.push(
                    Diagnostic::error(
                        format!("function {} is recursive and needs a return annotation", gv.name()),
                        func.span,
                    )
                    .with_rule(rule_name(8)),
                );
            }
            local_recursion(&func.body, &mut diags);
        }
    }
    diags
}

fn local_recursion(e: &Expr, diags: &mut Vec<Diagnostic>) {
    relax_ir::visit::for_each_expr(e, &mut |x| {
        if let ExprKind::Seq(seq) = x.kind() {
            for b in seq.blocks.iter().flat_map(|b| b.bindings.iter()) {
                if let (Binding::VarBinding { var, value, span }, ExprKind::Function(f)) = (b, b.value().kind()) {
                    if f.ret_struct_info.is_none() && var.struct_info().is_none() && mentions_var(value, var) {
                        diags.push(
                            Diagnostic::error(
                                format!(
                                    "local function `{}` is recursive and needs a return annotation",
                                    var.name()
                                ),
                                *span,
                            )
                            .with_rule(rule_name(8)),
                        );
                    }
                }
            }
        }
    });
}

fn mentions_var(e: &Expr, v: &Var) -> bool {
    let mut found = false;
    relax_ir::visit::for_each_expr(e, &mut |x| {
        if let ExprKind::Var(u) = x.kind() {
            if u == v {
                found = true;
            }
        }
    });
    found
}

/// Names of the module functions that are (mutually) recursive.
pub fn recursive_globals(module: &IRModule) -> HashSet<String> {
    let names: Vec<String> = module.functions.keys().map(|g| g.name().to_string()).collect();
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
    for (i, f) in module.functions.values().enumerate() {
        if let BaseFunc::Relax(func) = f {
            relax_ir::visit::for_each_expr(&func.body, &mut |x| {
                if let ExprKind::GlobalVar(g) = x.kind() {
                    if let Some(&j) = index.get(g.name()) {
                        if !edges[i].contains(&j) {
                            edges[i].push(j);
                        }
                    }
                }
            });
        }
    }
    // f is recursive when f reaches itself.
    let mut out = HashSet::new();
    for s in 0..names.len() {
        let mut seen = vec![false; names.len()];
        let mut stack: Vec<usize> = edges[s].clone();
        while let Some(n) = stack.pop() {
            if n == s {
                out.insert(names[s].clone());
                break;
            }
            if !seen[n] {
                seen[n] = true;
                stack.extend(edges[n].iter().copied());
            }
        }
    }
    out
}

/// Whether two module functions call each other (directly or through others).
fn same_cycle(module: &IRModule, a: &str, b: &str) -> bool {
    reaches(module, a, b) && reaches(module, b, a)
}

fn reaches(module: &IRModule, from: &str, to: &str) -> bool {
    let mut seen = HashSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(n) = stack.pop() {
        if !seen.insert(n.clone()) {
            continue;
        }
        if let Some(BaseFunc::Relax(f)) = module.get(&n) {
            let mut found = false;
            relax_ir::visit::for_each_expr(&f.body, &mut |x| {
                if let ExprKind::GlobalVar(g) = x.kind() {
                    if g.name() == to {
                        found = true;
                    }
                    stack.push(g.name().to_string());
                }
            });
            if found {
                return true;
            }
        }
    }
    false
}

/// Where a StructInfo appears (decides which criterion a problem violates and
/// whether new shape variables may be bound).
#[derive(Clone, Copy, PartialEq, Eq)]
enum SinfoSite {
    /// A function parameter annotation (binding positions define variables).
    Param,
    /// The `struct_info` of a `MatchCast` (binding positions define variables).
    MatchCast,
    /// Any other annotation (every variable must be in scope).
    Use,
    /// A return annotation.
    Return,
}

struct Checker<'m> {
    module: &'m IRModule,
    opts: WfOptions,
    diags: Vec<Diagnostic>,
    vars: HashSet<Var>,
    ever_defined: HashSet<Var>,
    dataflow_vars: HashSet<Var>,
    /// Dataflow variables of the enclosing dataflow block, when inside a function
    /// nested in it.
    outer_dataflow_vars: HashSet<Var>,
    recur_vars: HashSet<Var>,
    shape_vars: HashSet<TirVar>,
    in_dataflow: bool,
    param_owner: HashMap<Var, usize>,
    func_counter: usize,
    cur_func: usize,
    cur_global: String,
    span: Span,
    vdevices: Vec<relax_ir::VDevice>,
    reported_undefined: HashSet<(u64, u32)>,
}

impl<'m> Checker<'m> {
    fn new(module: &'m IRModule, opts: WfOptions) -> Checker<'m> {
        Checker {
            module,
            opts,
            diags: Vec::new(),
            vars: HashSet::new(),
            ever_defined: HashSet::new(),
            dataflow_vars: HashSet::new(),
            outer_dataflow_vars: HashSet::new(),
            recur_vars: HashSet::new(),
            shape_vars: HashSet::new(),
            in_dataflow: false,
            param_owner: HashMap::new(),
            func_counter: 0,
            cur_func: 0,
            cur_global: String::new(),
            span: Span::NONE,
            vdevices: module.vdevices().into_iter().cloned().collect(),
            reported_undefined: HashSet::new(),
        }
    }

    fn err(&mut self, n: usize, msg: impl Into<String>) {
        let d = Diagnostic::error(msg, self.span).with_rule(rule_name(n));
        self.diags.push(d);
    }

    /// Rule `n`: a shape dimension must have an integer dtype.
    fn check_integer_dim(&mut self, v: &PrimExpr, n: usize) {
        if !v.dtype().is_integer() {
            let msg = format!(
                "shape dimensions must be integers, but a dimension has type {}",
                v.dtype()
            );
            self.err(n, msg);
        }
    }

    fn nf_err(&mut self, n: usize, msg: impl Into<String>) {
        if self.opts.normal_form {
            let d = Diagnostic::error(msg, self.span).with_rule(normal_form_rule(n));
            self.diags.push(d);
        }
    }

    fn run(&mut self) {
        let mut any_public = false;
        let mut any_relax = false;
        for (gv, f) in &self.module.functions {
            if let BaseFunc::Prim(pf) = f {
                for d in relax_ir::tir::verify::verify_prim_func(gv.name(), pf) {
                    if d.rule == Some(Rule::Tir(TirRule::UndefinedVar)) {
                        self.diags.push(d.with_rule(rule_name(25)));
                    }
                }
            }
            let BaseFunc::Relax(func) = f else { continue };
            any_relax = true;
            self.cur_global = gv.name().to_string();
            self.span = func.span;
            let gsym = func.attrs.get_str("global_symbol");
            if !func.private || gsym.is_some() {
                any_public = true;
            }
            if let Some(sym) = gsym {
                if sym != gv.name() {
                    self.err(
                        13,
                        format!(
                            "the global_symbol \"{sym}\" of function {} differs from its name",
                            gv.name()
                        ),
                    );
                }
            }
            self.vars.clear();
            self.shape_vars.clear();
            self.dataflow_vars.clear();
            self.in_dataflow = false;
            self.visit_function(func);
        }
        if any_relax && !any_public {
            let span = self.module.functions.values().find_map(|f| match f {
                BaseFunc::Relax(f) => Some(f.span),
                _ => None,
            });
            self.diags.push(
                Diagnostic::warning(
                    "no function of the module is externally linked (all are private): the program has no entry point",
                    span.unwrap_or_default(),
                )
                .with_rule(rule_name(12)),
            );
        }
    }

    // ------------------------------------------------------------------
    // Functions
    // ------------------------------------------------------------------

    fn visit_function(&mut self, f: &Function) {
        let saved_vars = self.vars.clone();
        let saved_shape = self.shape_vars.clone();
        let saved_df = self.dataflow_vars.clone();
        let saved_outer = self.outer_dataflow_vars.clone();
        let saved_in_df = self.in_dataflow;
        let saved_func = self.cur_func;
        let saved_span = self.span;
        if self.in_dataflow {
            self.outer_dataflow_vars.extend(self.dataflow_vars.iter().cloned());
        }
        self.in_dataflow = false;
        self.dataflow_vars.clear();
        self.func_counter += 1;
        self.cur_func = self.func_counter;
        self.span = f.span;

        if is_force_pure(f) && !f.is_pure {
            self.err(21, "the function sets relax.force_pure but is not pure (`pure=False`)");
        }
        // Signature: binding positions first (in any order), then every use.
        for p in &f.params {
            if let Some(s) = p.struct_info() {
                let mut defs = Vec::new();
                analysis::definable_tir_vars(s, &mut defs);
                self.shape_vars.extend(defs);
            }
        }
        for p in &f.params {
            if p.is_dataflow() {
                self.span = p.span().max_or(f.span);
                self.err(1, format!("dataflow variable `{}` is a function parameter", p.name()));
            }
            if let Some(owner) = self.param_owner.get(p) {
                if *owner != self.cur_func {
                    self.err(2, format!("variable `{}` is a parameter of two functions", p.name()));
                }
            }
            self.param_owner.insert(p.clone(), self.cur_func);
            if !self.vars.insert(p.clone()) || !self.ever_defined.insert(p.clone()) {
                self.err(2, format!("variable `{}` is bound more than once", p.name()));
            }
        }
        for p in &f.params {
            self.span = if p.span().is_none() { f.span } else { p.span() };
            if let Some(s) = p.struct_info() {
                self.check_sinfo(s, SinfoSite::Param, true);
            }
        }
        self.span = f.span;
        if let Some(r) = &f.ret_struct_info {
            self.check_sinfo(r, SinfoSite::Return, false);
        }
        match f.body.kind() {
            ExprKind::Seq(seq) => self.visit_seq(seq),
            _ => {
                self.nf_err(3, "a function body must be a SeqExpr");
                self.visit_expr(&f.body, true);
            }
        }
        self.vars = saved_vars;
        self.shape_vars = saved_shape;
        self.dataflow_vars = saved_df;
        self.outer_dataflow_vars = saved_outer;
        self.in_dataflow = saved_in_df;
        self.cur_func = saved_func;
        self.span = saved_span;
    }

    fn visit_seq(&mut self, seq: &SeqExpr) {
        let saved_vars = self.vars.clone();
        let saved_shape = self.shape_vars.clone();
        for (i, b) in seq.blocks.iter().enumerate() {
            if b.bindings.is_empty() {
                self.nf_err(4, "empty binding blocks must be dropped");
            } else if i > 0 && seq.blocks[i - 1].is_dataflow == b.is_dataflow {
                self.nf_err(4, "consecutive blocks of the same kind must be merged");
            }
        }
        for b in &seq.blocks {
            self.visit_block(b);
        }
        if !self.is_leaf_or_tuple(&seq.body) {
            self.nf_err(1, "the body of a SeqExpr must be a leaf expression");
        }
        self.visit_expr(&seq.body, false);
        self.vars = saved_vars;
        self.shape_vars = saved_shape;
    }

    fn visit_block(&mut self, b: &BindingBlock) {
        let saved = self.in_dataflow;
        self.in_dataflow = b.is_dataflow;
        for binding in &b.bindings {
            self.visit_binding(binding);
        }
        self.in_dataflow = saved;
        if b.is_dataflow {
            self.dataflow_vars.clear();
        }
    }

    fn visit_binding(&mut self, b: &Binding) {
        self.span = b.span();
        let var = b.var();
        match b {
            Binding::VarBinding { value, .. } => {
                let is_fn = matches!(value.kind(), ExprKind::Function(_));
                if is_fn {
                    self.recur_vars.insert(var.clone());
                } else if mentions_var_shallow(value, var) && !self.is_defined(var) {
                    self.err(2, format!("variable `{}` is used in its own binding", var.name()));
                }
                self.visit_value(value);
                self.span = b.span();
                if is_fn {
                    self.recur_vars.remove(var);
                }
            }
            Binding::MatchCast { value, struct_info, .. } => {
                self.visit_value(value);
                self.span = b.span();
                self.check_sinfo(struct_info, SinfoSite::MatchCast, false);
            }
        }
        self.span = b.span();
        self.define_var(var);
        // `extent: T.int64 = source`: a scalar binding annotated with its own
        // symbolic variable defines that variable (as a `n: T.int64` parameter does).
        if let (Binding::VarBinding { .. }, Some(StructInfo::Prim(p))) = (b, var.struct_info()) {
            if let Some(tv) = p.value.as_ref().and_then(PrimExpr::as_var) {
                if tv.name() == var.name() {
                    self.shape_vars.insert(tv.clone());
                }
            }
        }
        if let Some(s) = var.struct_info() {
            self.check_sinfo(s, SinfoSite::Use, true);
        }
    }

    fn is_defined(&self, v: &Var) -> bool {
        if v.is_dataflow() {
            self.dataflow_vars.contains(v)
        } else {
            self.vars.contains(v)
        }
    }

    fn define_var(&mut self, v: &Var) {
        if v.is_dataflow() {
            if !self.in_dataflow {
                self.err(
                    1,
                    format!("dataflow variable `{}` is bound outside a dataflow block", v.name()),
                );
            }
            if !self.dataflow_vars.insert(v.clone()) || !self.ever_defined.insert(v.clone()) {
                self.err(2, format!("dataflow variable `{}` is bound more than once", v.name()));
            }
        } else if !self.vars.insert(v.clone()) || !self.ever_defined.insert(v.clone()) {
            self.err(2, format!("variable `{}` is bound more than once", v.name()));
        }
    }

    // ------------------------------------------------------------------
    // Expressions
    // ------------------------------------------------------------------

    fn is_leaf_or_tuple(&self, e: &Expr) -> bool {
        match e.kind() {
            ExprKind::Tuple(fields) => fields.iter().all(|f| self.is_leaf_or_tuple(f)),
            _ => e.is_leaf(),
        }
    }

    /// A binding's right-hand side: may be a non-leaf whose children are leaves.
    fn visit_value(&mut self, e: &Expr) {
        if let ExprKind::Seq(_) = e.kind() {
            self.nf_err(2, "a SeqExpr may only be a function body or an If branch");
        }
        if let ExprKind::Op(name) = e.kind() {
            self.err(
                9,
                format!("operator {name} used as a value; operators may only be called"),
            );
            return;
        }
        self.visit_expr(e, true);
    }

    /// Visit an expression; `top` when it sits in binding position.
    fn visit_expr(&mut self, e: &Expr, top: bool) {
        match e.kind() {
            ExprKind::Var(v) => self.use_var(v),
            ExprKind::GlobalVar(g) => {
                if self.module.get(g.name()).is_none() {
                    self.err(
                        3,
                        format!("global function `{}` is not defined in the module", g.name()),
                    );
                }
            }
            ExprKind::Constant { data } => {
                if data.data.len() != data.numel() * data.dtype.bytes() && data.dtype.bits >= 8 {
                    self.err(
                        20,
                        format!(
                            "constant data of {} bytes does not match its shape and dtype",
                            data.data.len()
                        ),
                    );
                }
            }
            ExprKind::Tuple(fields) => {
                for f in fields {
                    if !self.is_leaf_or_tuple(f) {
                        self.nf_err(1, "a tuple field must be a leaf expression");
                    }
                    self.check_not_op(f);
                    self.visit_expr(f, false);
                }
            }
            ExprKind::Seq(seq) => {
                if !top {
                    self.nf_err(2, "a SeqExpr may only be a function body or an If branch");
                }
                self.visit_seq(seq);
            }
            ExprKind::PrimValue(v) => {
                self.check_prim_value(v);
                self.check_prim_vars(v, 5);
            }
            ExprKind::StringImm(_) | ExprKind::ExternFunc { .. } => {}
            ExprKind::DataTypeImm(dt) => self.check_dtype(*dt, "DataTypeImm"),
            ExprKind::ShapeExpr(vals) => {
                for v in vals {
                    self.check_integer_dim(v, 15);
                    self.check_prim_vars(v, 5);
                }
            }
            ExprKind::Function(f) => self.visit_function(f),
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                if !top {
                    self.nf_err(1, "an If must be bound to a variable");
                }
                if self.in_dataflow {
                    self.err(7, "If nodes are not allowed in dataflow blocks");
                }
                if !self.is_leaf_or_tuple(cond) {
                    self.nf_err(1, "the condition of an If must be a leaf expression");
                }
                self.visit_expr(cond, false);
                for br in [then_branch, else_branch] {
                    let saved = self.vars.clone();
                    let saved_shape = self.shape_vars.clone();
                    match br.kind() {
                        ExprKind::Seq(seq) => self.visit_seq(seq),
                        _ => {
                            self.nf_err(3, "an If branch must be a SeqExpr");
                            self.visit_expr(br, true);
                        }
                    }
                    self.vars = saved;
                    self.shape_vars = saved_shape;
                }
            }
            ExprKind::Call(call) => {
                if !top {
                    self.nf_err(1, "a call nested in another expression must be bound to a variable");
                }
                self.visit_call(call);
            }
            ExprKind::TupleGetItem { tuple, .. } => {
                if !top {
                    self.nf_err(
                        1,
                        "a tuple access nested in another expression must be bound to a variable",
                    );
                }
                if !self.is_leaf_or_tuple(tuple) {
                    self.nf_err(1, "the tuple of a TupleGetItem must be a leaf expression");
                }
                self.check_not_op(tuple);
                self.visit_expr(tuple, false);
            }
            ExprKind::Op(name) => {
                self.err(
                    9,
                    format!("operator {name} used as a value; operators may only be called"),
                );
            }
        }
    }

    fn check_not_op(&mut self, e: &Expr) {
        if let ExprKind::Op(name) = e.kind() {
            self.err(
                9,
                format!("operator {name} used as a value; operators may only be called"),
            );
        }
    }

    fn use_var(&mut self, v: &Var) {
        if v.is_dataflow() {
            if !self.dataflow_vars.contains(v) {
                if self.outer_dataflow_vars.contains(v) {
                    self.err(
                        11,
                        format!(
                            "the function uses dataflow variable `{}` of the enclosing dataflow block",
                            v.name()
                        ),
                    );
                } else if !self.in_dataflow && self.ever_defined.contains(v) {
                    self.err(
                        1,
                        format!("dataflow variable `{}` is used outside its dataflow block", v.name()),
                    );
                } else {
                    self.undefined(v);
                }
            }
        } else if !self.vars.contains(v) && !self.recur_vars.contains(v) {
            self.undefined(v);
        }
    }

    fn undefined(&mut self, v: &Var) {
        if self.reported_undefined.insert((v.id(), self.span.line)) {
            self.err(3, format!("variable `{}` is used before it is bound", v.name()));
        }
    }

    fn visit_call(&mut self, call: &Call) {
        match call.op.kind() {
            ExprKind::Op(_) => {}
            _ => {
                if !self.is_leaf_or_tuple(&call.op) {
                    self.nf_err(1, "the callee must be a leaf expression");
                }
                self.visit_expr(&call.op, false);
            }
        }
        if self.in_dataflow {
            match call.op.kind() {
                ExprKind::GlobalVar(g) => {
                    if g.name() == self.cur_global {
                        self.err(7, format!("recursive call of {} in a dataflow block", g.name()));
                    } else if g.name() != self.cur_global && same_cycle(self.module, &self.cur_global, g.name()) {
                        self.err(
                            7,
                            format!("call of mutually recursive function {} in a dataflow block", g.name()),
                        );
                    }
                }
                ExprKind::Var(v) if self.recur_vars.contains(v) => {
                    self.err(7, format!("recursive call of `{}` in a dataflow block", v.name()));
                }
                _ => {}
            }
        }
        for a in &call.args {
            if !self.is_leaf_or_tuple(a) {
                self.nf_err(1, "call arguments must be leaf expressions");
            }
            self.check_not_op(a);
            self.visit_expr(a, false);
        }
        for s in &call.sinfo_args {
            self.check_sinfo(s, SinfoSite::Use, false);
        }
        if let ExprKind::Op(name) = call.op.kind() {
            if CALL_TIR_OPS.contains(&name.as_str()) {
                self.check_call_tir(name, call);
            }
        }
    }

    // ------------------------------------------------------------------
    // call_tir family (criterion 23)
    // ------------------------------------------------------------------

    fn check_call_tir(&mut self, name: &str, call: &Call) {
        // An optional third argument: the shape of symbolic values (`packed_ints`,
        // TVM's `tir_vars`) passed after the tensors.
        if !matches!(call.args.len(), 2 | 3) {
            self.err(
                23,
                format!(
                    "{name} expects two arguments (callee, argument tuple) or three (callee, argument tuple, \
                     packed_ints), but has {}",
                    call.args.len()
                ),
            );
            return;
        }
        if let Some(ints) = call.args.get(2) {
            let sinfo = crate::derive::DeriveCtx::new(Some(self.module)).leaf_struct_info(ints);
            if !matches!(sinfo, StructInfo::Shape(_)) {
                self.err(
                    23,
                    format!("the third argument of {name} (packed_ints) must be a shape"),
                );
                return;
            }
        }
        let ExprKind::Tuple(fields) = call.args[1].kind() else {
            self.err(23, format!("the arguments of {name} must be given as a tuple literal"));
            return;
        };
        if call.sinfo_args.len() != 1 {
            self.err(23, format!("{name} needs exactly one output StructInfo (`out_ty`)"));
            return;
        }
        let leaf = |e: &Expr| crate::derive::DeriveCtx::new(Some(self.module)).leaf_struct_info(e);
        let arg_sinfo: Vec<StructInfo> = fields.iter().map(leaf).collect();
        // The packed ints, as the PrimFunc's scalar parameters after the tensors see
        // them (a value each when the shape's dimensions are known).
        let ints: Vec<StructInfo> = match call.args.get(2).map(leaf) {
            Some(StructInfo::Shape(s)) => match s.values {
                Some(v) => v
                    .into_iter()
                    .map(|d| {
                        StructInfo::Prim(relax_ir::PrimStructInfo {
                            dtype: d.dtype(),
                            value: Some(d),
                        })
                    })
                    .collect(),
                None => (0..s.ndim.max(0))
                    .map(|_| {
                        StructInfo::Prim(relax_ir::PrimStructInfo {
                            dtype: relax_ir::DataType::INT64,
                            value: None,
                        })
                    })
                    .collect(),
            },
            _ => Vec::new(),
        };
        let out = &call.sinfo_args[0];
        let outputs: Vec<StructInfo> = match out {
            StructInfo::Tuple(f) => f.clone(),
            s => vec![s.clone()],
        };
        let mut inplace: Option<Vec<i64>> = None;
        if name == "relax.call_tir_inplace" {
            let idx = call
                .attrs
                .get("inplace_indices")
                .and_then(AttrValue::as_int_list)
                .unwrap_or_default();
            if idx.len() != outputs.len() {
                self.err(
                    23,
                    "there must be an in-place index for each output of call_tir_inplace",
                );
                return;
            }
            let mut seen = HashSet::new();
            for (i, &k) in idx.iter().enumerate() {
                if k < -1 || k >= fields.len() as i64 {
                    self.err(
                        23,
                        format!(
                            "in-place index {i} is out of range (must be between -1 and {}, but is {k})",
                            fields.len() as i64 - 1
                        ),
                    );
                    return;
                }
                if k != -1 && !seen.insert(k) {
                    self.err(
                        23,
                        format!("all in-place indices must be unique, but index {k} appears more than once"),
                    );
                    return;
                }
            }
            if seen.is_empty() {
                self.err(
                    23,
                    "at least one in-place index must be other than -1 (or else use call_tir)",
                );
                return;
            }
            let ana = relax_ir::arith::Analyzer::new();
            for (o, &k) in idx.iter().enumerate() {
                if k < 0 {
                    continue;
                }
                let out_t = match &outputs[o] {
                    StructInfo::Tensor(t) if t.shape.is_some() && !t.dtype.is_void() => t.clone(),
                    s => {
                        self.err(23, format!("the output of an in-place mutation must be a tensor with known shape and dtype, but output {o} is {}", display_struct_info(s)));
                        return;
                    }
                };
                let ok = match &arg_sinfo[k as usize] {
                    StructInfo::Tensor(t) => {
                        t.dtype == out_t.dtype
                            && match (&t.shape, &out_t.shape) {
                                (Some(a), Some(b)) => can_prove_shape_equal(&ana, a, b),
                                _ => false,
                            }
                    }
                    _ => false,
                };
                if !ok {
                    self.err(
                        23,
                        format!(
                            "the input used for an in-place mutation must be a tensor with the same shape and dtype as the output, but output {o} ({}) mutates input {k} ({})",
                            display_struct_info(&outputs[o]),
                            display_struct_info(&arg_sinfo[k as usize])
                        ),
                    );
                    return;
                }
            }
            inplace = Some(idx);
        }
        // Validation against the PrimFunc's signature.
        let callee = match call.args[0].kind() {
            ExprKind::GlobalVar(g) => match self.module.get(g.name()) {
                Some(BaseFunc::Prim(pf)) => prim_func_struct_info(pf),
                Some(BaseFunc::Relax(_)) => return,
                None => return,
            },
            _ => return,
        };
        let StructInfo::Func(finfo) = callee else { return };
        let Some(params) = &finfo.params else { return };
        if fields.len() + ints.len() > params.len() {
            self.err(
                23,
                format!(
                    "{name} passes {} arguments, but the PrimFunc only accepts {} in total",
                    fields.len() + ints.len(),
                    params.len()
                ),
            );
            return;
        }
        let n_in = fields.len() + ints.len();
        let arg_sinfo: Vec<StructInfo> = arg_sinfo.into_iter().chain(ints).collect();
        let mut ret: Vec<StructInfo> = params[n_in..].to_vec();
        if let Some(idx) = &inplace {
            for (i, &k) in idx.iter().enumerate() {
                if k >= 0 {
                    ret.insert(i.min(ret.len()), params[k as usize].clone());
                }
            }
        }
        let dummy_ret = if ret.len() == 1 {
            ret[0].clone()
        } else {
            StructInfo::Tuple(ret)
        };
        let dummy = relax_ir::FuncStructInfo {
            params: Some(params[..n_in].to_vec()),
            ret: Box::new(dummy_ret),
            purity: true,
            derive_func: None,
        };
        let ana = relax_ir::arith::Analyzer::new();
        match analysis::derive_call_ret_struct_info(&dummy, call, &arg_sinfo, &ana) {
            Err(msg) => self.err(23, format!("{name}: the arguments do not match the PrimFunc: {msg}")),
            Ok(d) => {
                if !is_base_of(&d.ret, out, &ana) {
                    self.err(
                        23,
                        format!(
                            "the `out_ty` of {name} must be compatible with the PrimFunc: its signature implies {}, but `out_ty` is {}",
                            display_struct_info(&d.ret),
                            display_struct_info(out)
                        ),
                    );
                }
            }
        }
    }

    // ------------------------------------------------------------------
    // StructInfo annotations (criteria 4-6, 10, 14-17, 19, 20, 22, 24)
    // ------------------------------------------------------------------

    fn check_sinfo(&mut self, s: &StructInfo, site: SinfoSite, on_var: bool) {
        match s {
            StructInfo::Object => {}
            StructInfo::Prim(p) => {
                self.check_dtype(p.dtype, "PrimStructInfo");
                if !(p.dtype.is_integer() || p.dtype.is_float()) {
                    self.err(
                        19,
                        format!("PrimStructInfo must have an integer or float dtype, not {}", p.dtype),
                    );
                }
                if let Some(v) = &p.value {
                    if v.dtype() != p.dtype {
                        self.err(
                            22,
                            format!(
                                "the value of PrimStructInfo has dtype {}, but the annotation says {}",
                                v.dtype(),
                                p.dtype
                            ),
                        );
                    }
                    self.check_dim(v, site, 16);
                }
            }
            StructInfo::Shape(sh) => {
                if let Some(vals) = &sh.values {
                    if sh.ndim != vals.len() as i32 {
                        self.err(
                            if on_var { 10 } else { 15 },
                            format!("ShapeStructInfo has ndim {} but {} values", sh.ndim, vals.len()),
                        );
                    }
                    for v in vals {
                        if !v.dtype().is_integer() {
                            self.err(
                                15,
                                format!("shape values must be integers, but a value has type {}", v.dtype()),
                            );
                        }
                        self.check_dim(v, site, 15);
                    }
                } else if sh.ndim < -1 {
                    self.err(15, format!("invalid ndim {}", sh.ndim));
                }
            }
            StructInfo::Tensor(t) => {
                if !t.dtype.is_void() {
                    self.check_dtype(t.dtype, "TensorStructInfo");
                }
                if t.ndim < -1 {
                    self.err(14, format!("invalid ndim {}", t.ndim));
                }
                if let Some(vd) = &t.vdevice {
                    if !self.vdevices.iter().any(|d| d == vd) {
                        self.err(
                            24,
                            format!(
                                "VDevice {}:{}:{} is not declared in the module's global_infos",
                                vd.target.kind, vd.vdevice_id, vd.memory_scope
                            ),
                        );
                    }
                }
                if let Some(shape) = &t.shape {
                    match shape.kind() {
                        ExprKind::ShapeExpr(vals) => {
                            if t.ndim != vals.len() as i32 {
                                self.err(
                                    if on_var { 10 } else { 14 },
                                    format!(
                                        "TensorStructInfo has ndim {} but its shape has {} dimensions",
                                        t.ndim,
                                        vals.len()
                                    ),
                                );
                            }
                            for v in vals {
                                self.check_integer_dim(v, 14);
                                self.check_dim(v, site, 14);
                            }
                        }
                        ExprKind::Var(v) => {
                            if v.is_dataflow() {
                                self.err(
                                    14,
                                    format!("dataflow variable `{}` cannot be used as a tensor shape", v.name()),
                                );
                            } else if !self.vars.contains(v) && !self.recur_vars.contains(v) {
                                self.err(
                                    14,
                                    format!("shape variable `{}` of a tensor annotation is not in scope", v.name()),
                                );
                            }
                            match v.struct_info() {
                                Some(StructInfo::Shape(sh)) => {
                                    if sh.ndim != -1 && t.ndim != -1 && sh.ndim != t.ndim {
                                        self.err(
                                            if on_var { 10 } else { 14 },
                                            format!(
                                                "tensor shape `{}` has ndim {} but the tensor has ndim {}",
                                                v.name(),
                                                sh.ndim,
                                                t.ndim
                                            ),
                                        );
                                    }
                                }
                                Some(StructInfo::Object) | None => {}
                                Some(other) => self.err(
                                    14,
                                    format!(
                                        "tensor shape `{}` is not a shape: it has StructInfo {}",
                                        v.name(),
                                        display_struct_info(other)
                                    ),
                                ),
                            }
                        }
                        _ => self.err(14, "the shape of a TensorStructInfo must be a ShapeExpr or a variable"),
                    }
                }
            }
            StructInfo::Tuple(fields) => fields.iter().for_each(|f| self.check_sinfo(f, site, on_var)),
            StructInfo::Func(f) => {
                if f.params.is_some() && f.derive_func.is_some() {
                    self.err(17, "a FuncStructInfo may not have both params and derive_func");
                }
                let saved = self.shape_vars.clone();
                if let Some(ps) = &f.params {
                    for p in ps {
                        let mut defs = Vec::new();
                        analysis::definable_tir_vars(p, &mut defs);
                        self.shape_vars.extend(defs);
                    }
                    for p in ps {
                        self.check_sinfo(p, SinfoSite::Use, on_var);
                    }
                }
                self.check_sinfo(&f.ret, SinfoSite::Use, on_var);
                self.shape_vars = saved;
            }
        }
    }

    /// A dimension in an annotation: binding positions define new variables at
    /// parameters and `MatchCast`s; other variables must be in scope.
    fn check_dim(&mut self, v: &PrimExpr, site: SinfoSite, rule: usize) {
        if matches!(site, SinfoSite::MatchCast | SinfoSite::Param) {
            if let Some(tv) = v.as_var() {
                self.shape_vars.insert(tv.clone());
                return;
            }
        }
        // An unbound shape variable is criterion 5 in the body, 4 in a return
        // annotation and 6 in a signature (16 for a PrimStructInfo value).
        let n = match site {
            SinfoSite::Param => 6,
            SinfoSite::Return => 4,
            SinfoSite::MatchCast | SinfoSite::Use if rule == 16 => 16,
            SinfoSite::MatchCast | SinfoSite::Use => 5,
        };
        self.check_prim_vars(v, n);
    }

    fn check_prim_vars(&mut self, v: &PrimExpr, rule: usize) {
        for tv in relax_ir::visit::free_tir_vars(v) {
            if !self.shape_vars.contains(&tv) {
                let what = match rule {
                    4 => "the return annotation uses shape variable",
                    6 => "the signature uses shape variable",
                    _ => "shape variable",
                };
                let tail = match rule {
                    6 => "which never appears alone in a parameter dimension",
                    4 => "which is not bound by the parameters",
                    _ => "before it is bound",
                };
                self.err(rule, format!("{what} `{}` {tail}", tv.name()));
            }
        }
    }

    fn check_prim_value(&mut self, v: &PrimExpr) {
        let dt = v.dtype();
        if dt.lanes != 1 || !(dt.is_integer() || dt.is_float()) {
            self.err(18, format!("a PrimValue must be a scalar integer or float, not {dt}"));
            return;
        }
        match v.kind() {
            PrimExprKind::IntImm { .. } | PrimExprKind::FloatImm { .. } => {}
            _ if dt.is_integer() => {}
            _ => self.err(
                18,
                "a PrimValue must be an integer or float constant (or an integer shape expression)",
            ),
        }
        self.check_dtype(dt, "PrimValue");
    }

    fn check_dtype(&mut self, dt: DataType, what: &str) {
        let ok = match dt.code {
            TypeCode::Int | TypeCode::UInt => dt.lanes == 1 && matches!(dt.bits, 1 | 2 | 4 | 8 | 16 | 32 | 64),
            TypeCode::Float => dt.lanes == 1 && matches!(dt.bits, 8 | 16 | 32 | 64),
            TypeCode::BFloat => dt.lanes == 1 && dt.bits == 16,
            TypeCode::Handle => dt.is_void(),
            _ => dt.lanes == 1 && dt.mini_float().is_some(),
        };
        if !ok {
            self.err(
                20,
                format!("{what} uses unsupported data type {dt} (scalars only: int/uint of 1-64 bits, float16/32/64, bfloat16, float8/float4 variants)"),
            );
        }
    }
}

fn mentions_var_shallow(e: &Expr, v: &Var) -> bool {
    match e.kind() {
        ExprKind::Var(u) => u == v,
        ExprKind::Tuple(f) => f.iter().any(|x| mentions_var_shallow(x, v)),
        ExprKind::Call(c) => mentions_var_shallow(&c.op, v) || c.args.iter().any(|x| mentions_var_shallow(x, v)),
        ExprKind::TupleGetItem { tuple, .. } => mentions_var_shallow(tuple, v),
        _ => false,
    }
}

trait SpanExt {
    fn max_or(self, other: Span) -> Span;
}

impl SpanExt for Span {
    fn max_or(self, other: Span) -> Span {
        if self.is_none() {
            other
        } else {
            self
        }
    }
}
