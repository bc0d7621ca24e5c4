//! The ANF normalizer producing the spec's normal form, deriving the StructInfo
//! of every bound variable on the way (the semantics of TVM's `BlockBuilder`
//! normalization).
//!
//! The procedure follows the spec: function bodies and `If` branches become
//! `SeqExpr`s; nested non-leaf expressions are bound to fresh variables in
//! evaluation order (left to right, innermost first); `SeqExpr`s bound in
//! bindings are flattened into the enclosing block; blocks are consolidated;
//! `call_tir`-family calls get their arguments as a tuple literal. Every bound
//! variable receives its StructInfo: its annotation when it has one (checked
//! against the derived StructInfo) or the derived StructInfo.
//!
//! The normalizer is an [`ExprMutator`] emitting through a [`BlockBuilder`]
//! (TVM's model: mutators emit through the builder): the trait's default
//! recursion visits the children; the overrides bind non-leaf operands
//! (`visit_arg`), flatten `SeqExpr`s in binding position (`visit_seq`), open
//! scopes (`visit_scope`, [`walk_scope_emit`]) and derive each rewritten node's
//! StructInfo from its already normalized children.

use std::collections::{HashMap, HashSet};

use relax_ir::tir::TirVar;
use relax_ir::{
    BaseFunc, Binding, BindingBlock, Call, Diagnostic, Expr, ExprKind, FuncStructInfo, Function, IRModule, SeqExpr,
    Span, StructInfo, TensorStructInfo, Var,
};

use relax_ir::mutator::{walk_block_emit, walk_expr, walk_scope_emit, walk_seq_flatten, BlockBuilder, ExprMutator};

use crate::analysis::{self, erase_in_scope, unify_struct_info};
use crate::derive::{function_signature, is_force_pure, DeriveCtx, PurityCtx};

/// One bound variable and its StructInfo, in program order.
#[derive(Clone, Debug)]
pub struct BindingInfo {
    /// The module function (global name) containing the binding.
    pub function: String,
    /// The variable's name.
    pub var: String,
    /// Its StructInfo after checking.
    pub struct_info: StructInfo,
    /// Where the binding is.
    pub span: Span,
}

/// The result of normalizing a module.
#[derive(Clone, Debug)]
pub struct Normalized {
    /// The module in normal form with every bound variable's StructInfo filled.
    pub module: IRModule,
    /// Errors and warnings of StructInfo derivation.
    pub diagnostics: Vec<Diagnostic>,
    /// Every binding with its StructInfo, in order.
    pub bindings: Vec<BindingInfo>,
}

/// The operators whose arguments must be given as `(callee, tuple literal)`.
pub const CALL_TIR_OPS: &[&str] = &["relax.call_tir", "relax.call_tir_with_grad", "relax.call_tir_inplace"];

/// Normalize every Relax function of `module` and derive its StructInfo.
pub fn normalize_module(module: &IRModule) -> Normalized {
    let mut n = Normalizer::new(module);
    let mut out = module.clone();
    // Callees first, so that a call sees its callee's derived return StructInfo
    // (recursive functions use their annotations).
    let mut per_fn: HashMap<String, Vec<BindingInfo>> = HashMap::new();
    for name in callee_first_order(module) {
        let Some((gv, BaseFunc::Relax(func))) = module.functions.get_key_value(&relax_ir::GlobalVar::new(&name)) else {
            continue;
        };
        n.cur_fn = name.clone();
        n.begin_function_names(func);
        let start = n.bindings.len();
        let new_func = n.normalize_function(func, gv.name());
        let sinfo = StructInfo::Func(function_signature(&new_func));
        n.ctx.globals.insert(name.clone(), sinfo);
        out.functions.insert(gv.clone(), BaseFunc::Relax(new_func));
        per_fn.insert(name, n.bindings.split_off(start));
    }
    let mut bindings = Vec::new();
    for gv in module.functions.keys() {
        if let Some(b) = per_fn.remove(gv.name()) {
            bindings.extend(b);
        }
    }
    Normalized {
        module: out,
        diagnostics: n.ctx.diags,
        bindings,
    }
}

/// Module function names with callees before callers (module order otherwise).
fn callee_first_order(module: &IRModule) -> Vec<String> {
    let names: Vec<String> = module.functions.keys().map(|g| g.name().to_string()).collect();
    let mut deps: HashMap<&str, Vec<String>> = HashMap::new();
    for (gv, f) in &module.functions {
        let mut d = Vec::new();
        if let BaseFunc::Relax(func) = f {
            relax_ir::visit::for_each_expr(&func.body, &mut |x| {
                if let ExprKind::GlobalVar(g) = x.kind() {
                    if !d.iter().any(|n: &String| n == g.name()) {
                        d.push(g.name().to_string());
                    }
                }
            });
        }
        deps.insert(gv.name(), d);
    }
    let mut order = Vec::with_capacity(names.len());
    let mut state: HashMap<String, u8> = HashMap::new();
    for root in &names {
        // Iterative DFS, post-order; back edges (recursion) are ignored.
        let mut stack: Vec<(String, usize)> = vec![(root.clone(), 0)];
        if state.contains_key(root) {
            continue;
        }
        state.insert(root.clone(), 1);
        while let Some((node, i)) = stack.pop() {
            let next = deps.get(node.as_str()).and_then(|d| d.get(i)).cloned();
            match next {
                Some(child) => {
                    stack.push((node, i + 1));
                    if !state.contains_key(&child) && deps.contains_key(child.as_str()) {
                        state.insert(child.clone(), 1);
                        stack.push((child, 0));
                    }
                }
                None => {
                    state.insert(node.clone(), 2);
                    order.push(node);
                }
            }
        }
    }
    order
}

/// Normalize one expression (a function body or a standalone expression) in
/// the context of `module`: returns the normalized expression (a `SeqExpr` when
/// bindings were needed) and its StructInfo.
pub fn normalize_expr(expr: &Expr, module: Option<&IRModule>) -> (Expr, StructInfo, Vec<Diagnostic>) {
    let empty = IRModule::new();
    let mut n = Normalizer::new(module.unwrap_or(&empty));
    if module.is_none() {
        n.ctx.module = None;
    }
    let (e, s) = n.scope_body(expr);
    (e, s, n.ctx.diags)
}

struct Normalizer<'m> {
    ctx: DeriveCtx<'m>,
    remap: HashMap<Var, Var>,
    /// The open blocks bindings are emitted into.
    bb: BlockBuilder,
    /// Relax variables in scope (new identities).
    var_scope: HashSet<Var>,
    var_log: Vec<Var>,
    /// Values of variables bound to tuple literals (for `call_tir` arguments).
    tuple_bindings: HashMap<Var, Expr>,
    ever_bound: HashSet<Var>,
    used_names: HashSet<String>,
    next_name: usize,
    cur_fn: String,
    bindings: Vec<BindingInfo>,
    /// The StructInfo of the expressions `visit_expr` and `visit_scope` returned,
    /// by node identity, until their callers read it (a few entries at most: each
    /// is read right after the rewrite, or after an `If`'s other branch).
    derived: Vec<(usize, StructInfo)>,
    /// One entry per `If` being rewritten: the number of diagnostics once its
    /// condition was rewritten (where the condition's warning goes).
    cond_marks: Vec<Option<usize>>,
}

fn is_leaf_or_tuple(e: &Expr) -> bool {
    matches!(e.kind(), ExprKind::Tuple(_)) || e.is_leaf()
}

/// The names of the variables bound or taken as parameters anywhere in `e`.
fn collect_names(e: &Expr, out: &mut HashSet<String>) {
    relax_ir::visit::for_each_expr(e, &mut |x| match x.kind() {
        ExprKind::Seq(seq) => {
            let vars = seq.blocks.iter().flat_map(|b| b.bindings.iter().map(Binding::var));
            out.extend(vars.map(|v| v.name().to_string()));
        }
        ExprKind::Function(f) => out.extend(f.params.iter().map(|p| p.name().to_string())),
        _ => {}
    });
}

impl<'m> Normalizer<'m> {
    fn new(module: &'m IRModule) -> Normalizer<'m> {
        Normalizer {
            ctx: DeriveCtx::new(Some(module)),
            remap: HashMap::new(),
            bb: BlockBuilder::new(),
            var_scope: HashSet::new(),
            var_log: Vec::new(),
            tuple_bindings: HashMap::new(),
            ever_bound: HashSet::new(),
            used_names: HashSet::new(),
            next_name: 0,
            cur_fn: String::new(),
            bindings: Vec::new(),
            derived: Vec::new(),
            cond_marks: Vec::new(),
        }
    }

    fn begin_function_names(&mut self, f: &Function) {
        self.used_names.clear();
        self.next_name = 0;
        f.params.iter().for_each(|p| {
            self.used_names.insert(p.name().to_string());
        });
        collect_names(&f.body, &mut self.used_names);
    }

    fn fresh_name(&mut self, dataflow: bool) -> String {
        let base = if dataflow { "lv" } else { "gv" };
        loop {
            let name = if self.next_name == 0 {
                base.to_string()
            } else {
                format!("{base}{}", self.next_name)
            };
            self.next_name += 1;
            if self.used_names.insert(name.clone()) {
                return name;
            }
        }
    }

    fn define_var(&mut self, v: &Var) {
        if self.var_scope.insert(v.clone()) {
            self.var_log.push(v.clone());
        }
    }

    fn scope_mark(&self) -> (usize, HashSet<TirVar>) {
        (self.var_log.len(), self.ctx.shape_scope.clone())
    }

    fn restore_scope(&mut self, mark: (usize, HashSet<TirVar>)) {
        while self.var_log.len() > mark.0 {
            if let Some(v) = self.var_log.pop() {
                self.var_scope.remove(&v);
            }
        }
        self.ctx.shape_scope = mark.1;
    }

    fn erase(&self, s: &StructInfo) -> StructInfo {
        let vs = &self.var_scope;
        erase_in_scope(s, &self.ctx.shape_scope, &|v| vs.contains(v), &self.ctx.ana)
    }

    /// Replace shape `Var`s of a StructInfo by their new identities.
    fn remap_sinfo(&self, s: &StructInfo) -> StructInfo {
        if self.remap.is_empty() {
            return s.clone();
        }
        match s {
            StructInfo::Tensor(t) => {
                let shape = t.shape.as_ref().map(|e| match e.kind() {
                    ExprKind::Var(v) => match self.remap.get(v) {
                        Some(n) if n != v => Expr::with_span(ExprKind::Var(n.clone()), e.span()),
                        _ => e.clone(),
                    },
                    _ => e.clone(),
                });
                StructInfo::Tensor(TensorStructInfo {
                    shape,
                    dtype: t.dtype,
                    vdevice: t.vdevice.clone(),
                    ndim: t.ndim,
                })
            }
            StructInfo::Tuple(f) => StructInfo::Tuple(f.iter().map(|x| self.remap_sinfo(x)).collect()),
            StructInfo::Func(f) => StructInfo::Func(FuncStructInfo {
                params: f
                    .params
                    .as_ref()
                    .map(|p| p.iter().map(|x| self.remap_sinfo(x)).collect()),
                ret: Box::new(self.remap_sinfo(&f.ret)),
                purity: f.purity,
                derive_func: f.derive_func.clone(),
            }),
            _ => s.clone(),
        }
    }

    /// The variable with its StructInfo set to `s` (the same variable when unchanged).
    fn with_sinfo(v: &Var, s: StructInfo) -> Var {
        match v.struct_info() {
            Some(old) if analysis::struct_info_equal(old, &s) => v.clone(),
            _ => v.renew_with_struct_info(Some(s)),
        }
    }

    // ---------------------------------------------------------------------
    // Functions and scopes
    // ---------------------------------------------------------------------

    fn normalize_function(&mut self, f: &Function, name: &str) -> Function {
        let mark = self.scope_mark();
        let saved_purity = self.ctx.purity;
        let mut params = Vec::with_capacity(f.params.len());
        for p in &f.params {
            let s = p
                .struct_info()
                .map(|s| self.remap_sinfo(s))
                .unwrap_or(StructInfo::Object);
            let np = Self::with_sinfo(p, s);
            if np != *p {
                self.remap.insert(p.clone(), np.clone());
            }
            self.define_var(&np);
            params.push(np);
        }
        for p in &params {
            let mut defs = Vec::new();
            analysis::definable_tir_vars(p.struct_info().unwrap_or(&StructInfo::Object), &mut defs);
            self.ctx.shape_scope.extend(defs);
        }
        // The ranges the function's attributes declare for its symbolic variables
        // (`tir_var_lower_bound`: a sequence length of at least 2), so that derived
        // shapes simplify as TVM's (`T.min(0, n)` is 0). Malformed attributes are the
        // passes' concern, not derivation's.
        let saved_ana = self.ctx.ana.clone();
        let sinfos = params.iter().filter_map(|p| p.struct_info());
        for b in relax_ir::relax::bounds::bounds_of(&f.attrs, sinfos).unwrap_or_default() {
            let lo = b.lower.unwrap_or(if b.non_negative { 0 } else { i64::MIN });
            self.ctx.ana.bind(&b.var, lo, b.upper.unwrap_or(i64::MAX));
        }
        let ret_ann = f.ret_struct_info.as_ref().map(|r| self.remap_sinfo(r));
        self.ctx.purity = PurityCtx {
            in_dataflow: false,
            pure_function: f.is_pure && !is_force_pure(f),
        };
        let (body, body_sinfo) = self.scope_body(&f.body);
        let ret = match &ret_ann {
            Some(r) => {
                self.ctx
                    .check_return(&format!("function {name}"), r, &body_sinfo, f.span);
                r.clone()
            }
            None => self.erase(&body_sinfo),
        };
        self.ctx.purity = saved_purity;
        self.ctx.ana = saved_ana;
        self.restore_scope(mark);
        Function {
            params,
            body,
            ret_struct_info: Some(ret),
            is_pure: f.is_pure,
            attrs: f.attrs.clone(),
            private: f.private,
            span: f.span,
        }
    }

    /// A new scope (function body, `If` branch): the result is a `SeqExpr`
    /// ([`walk_scope_emit`]) and its StructInfo, erased to the enclosing scope.
    fn scope_body(&mut self, e: &Expr) -> (Expr, StructInfo) {
        let mark = self.scope_mark();
        let out = walk_scope_emit(self, e);
        let body = match out.kind() {
            ExprKind::Seq(seq) => &seq.body,
            _ => &out,
        };
        // The body is a leaf: its StructInfo is read off it.
        let s = self.ctx.leaf_struct_info(body);
        let s = self.erase_blocks_scope(&s, mark.clone());
        self.restore_scope(mark);
        (out, s)
    }

    /// Erase `s` to the scope at `mark` (variables introduced since are out of scope).
    fn erase_blocks_scope(&self, s: &StructInfo, mark: (usize, HashSet<TirVar>)) -> StructInfo {
        let inner: HashSet<&Var> = self.var_log[mark.0..].iter().collect();
        let vs = &self.var_scope;
        erase_in_scope(s, &mark.1, &|v| vs.contains(v) && !inner.contains(v), &self.ctx.ana)
    }

    // ---------------------------------------------------------------------
    // Bindings
    // ---------------------------------------------------------------------

    /// Record the new variable of a binding (its identity, scope, StructInfo and,
    /// for a tuple literal, its value) and build the binding.
    fn finish_binding(
        &mut self,
        old: &Var,
        new_var: Var,
        value: Expr,
        cast: Option<StructInfo>,
        span: Span,
    ) -> Binding {
        // A variable bound a second time keeps its first identity, so that the
        // well-formedness check sees the double binding.
        let new_var = match self.remap.get(old) {
            Some(first) if self.ever_bound.contains(old) => first.clone(),
            _ => new_var,
        };
        self.ever_bound.insert(old.clone());
        if new_var != *old {
            self.remap.insert(old.clone(), new_var.clone());
        }
        self.define_var(&new_var);
        if matches!(value.kind(), ExprKind::Tuple(_)) {
            self.tuple_bindings.insert(new_var.clone(), value.clone());
        }
        self.bindings.push(BindingInfo {
            function: self.cur_fn.clone(),
            var: new_var.name().to_string(),
            struct_info: new_var.struct_info().cloned().unwrap_or(StructInfo::Object),
            span,
        });
        match cast {
            Some(struct_info) => Binding::MatchCast {
                var: new_var,
                value,
                struct_info,
                span,
            },
            None => Binding::VarBinding {
                var: new_var,
                value,
                span,
            },
        }
    }

    fn function_binding(&mut self, var: &Var, func: &Function, fspan: Span, span: Span) -> Binding {
        // Recursion is permitted: the variable is in scope inside the function.
        let sig = match var.struct_info() {
            Some(ann) => self.remap_sinfo(ann),
            None => StructInfo::Func(function_signature(func)),
        };
        let pre = Self::with_sinfo(var, sig.clone());
        if pre != *var {
            self.remap.insert(var.clone(), pre.clone());
        }
        let new_func = self.normalize_function(func, var.name());
        let derived = StructInfo::Func(function_signature(&new_func));
        let final_var = if var.struct_info().is_some() {
            self.ctx.check_annotation(var.name(), &sig, &derived, span);
            pre
        } else if func.ret_struct_info.is_some() {
            pre
        } else {
            Self::with_sinfo(&pre, derived)
        };
        let value = Expr::with_span(ExprKind::Function(new_func), fspan);
        self.finish_binding(var, final_var, value, None, span)
    }

    // ---------------------------------------------------------------------
    // StructInfo of rewritten expressions
    // ---------------------------------------------------------------------

    /// Keep `s` as the StructInfo of `e`, just returned by a `visit_*` method.
    fn record(&mut self, e: &Expr, s: StructInfo) {
        self.derived.push((node_key(e), s));
    }

    /// The StructInfo kept for `e` (read once), else the StructInfo of a leaf.
    fn take_derived(&mut self, e: &Expr) -> StructInfo {
        let key = node_key(e);
        match self.derived.iter().rposition(|(k, _)| *k == key) {
            Some(i) => self.derived.remove(i).1,
            None => self.ctx.leaf_struct_info(e),
        }
    }

    /// The StructInfo of `new`, the rewrite of `e` with normalized children
    /// ([`walk_expr`]); a call's `sinfo_args` are remapped and a `call_tir`-family
    /// call gets its arguments as a tuple literal.
    fn derive(&mut self, e: &Expr, new: Expr) -> (Expr, StructInfo) {
        let span = e.span();
        match new.kind() {
            _ if matches!(e.kind(), ExprKind::Seq(_)) => {
                // Flattened: the value is the body's, its StructInfo kept already.
                let s = self.take_derived(&new);
                (new, s)
            }
            ExprKind::Call(call) if call.sinfo_args.is_empty() && !is_call_tir(call) => {
                // Nothing to remap or retuple: the rewritten call stays.
                let s = self.ctx.derive_call(call, span);
                (new, s)
            }
            ExprKind::Call(call) => {
                let sinfo_args: Vec<StructInfo> = call.sinfo_args.iter().map(|s| self.remap_sinfo(s)).collect();
                let mut args = call.args.clone();
                if is_call_tir(call) {
                    if let Some(t) = self.call_tir_tuple(&args[1]) {
                        args[1] = t;
                    }
                }
                let new_call = Call {
                    op: call.op.clone(),
                    args,
                    attrs: call.attrs.clone(),
                    sinfo_args,
                };
                let s = self.ctx.derive_call(&new_call, span);
                (Expr::with_span(ExprKind::Call(new_call), span), s)
            }
            ExprKind::TupleGetItem { tuple, index } => {
                let s = self.ctx.derive_tuple_get_item(tuple, *index, span);
                (new, s)
            }
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                // The condition's warning goes after the condition's own
                // diagnostics, before the branches'.
                let at = self.cond_marks.pop().flatten().unwrap_or(self.ctx.diags.len());
                let later = self.ctx.diags.split_off(at.min(self.ctx.diags.len()));
                self.ctx.check_if_condition(cond, span);
                self.ctx.diags.extend(later);
                let (ts, fs) = (self.take_derived(then_branch), self.take_derived(else_branch));
                let s = unify_struct_info(&self.erase(&ts), &self.erase(&fs), &self.ctx.ana);
                (new, s)
            }
            ExprKind::Function(f) => {
                let s = StructInfo::Func(function_signature(f));
                (new, s)
            }
            // Variables, tuples of leaves and the other leaves: global variables,
            // constants, shapes, prim values, strings, dtypes, extern functions and
            // operators.
            _ => {
                let s = self.ctx.leaf_struct_info(&new);
                (new, s)
            }
        }
    }

    /// The tuple literal to use as the arguments of a `call_tir`-family call.
    fn call_tir_tuple(&mut self, arg: &Expr) -> Option<Expr> {
        let ExprKind::Var(v) = arg.kind() else { return None };
        if let Some(t) = self.tuple_bindings.get(v) {
            return Some(t.clone());
        }
        let StructInfo::Tuple(fields) = v.struct_info()? else {
            return None;
        };
        let n = fields.len();
        let items: Vec<Expr> = (0..n)
            .map(|i| {
                let tgi = Expr::with_span(
                    ExprKind::TupleGetItem {
                        tuple: arg.clone(),
                        index: i,
                    },
                    arg.span(),
                );
                self.visit_arg(&tgi)
            })
            .collect();
        Some(Expr::with_span(ExprKind::Tuple(items), arg.span()))
    }
}

/// Whether `call` is a `call_tir`-family call with its two arguments.
fn is_call_tir(call: &Call) -> bool {
    call.args.len() == 2 && call.op.as_op().is_some_and(|n| CALL_TIR_OPS.contains(&n))
}

/// The identity of an expression node (the key of the kept StructInfo).
fn node_key(e: &Expr) -> usize {
    std::sync::Arc::as_ptr(&e.0) as usize
}

/// The normalizer is an [`ExprMutator`] emitting through its [`BlockBuilder`]:
/// the default recursion rewrites the children, the overrides bind non-leaf
/// operands to fresh variables, flatten `SeqExpr`s in binding position, open
/// scopes for `If` branches and derive the StructInfo of every rewritten node
/// (kept beside the expression until its caller reads it).
impl ExprMutator for Normalizer<'_> {
    fn builder(&mut self) -> Option<&mut BlockBuilder> {
        Some(&mut self.bb)
    }

    /// An expression in binding position: its children become leaves.
    fn visit_expr(&mut self, e: &Expr) -> Expr {
        if matches!(e.kind(), ExprKind::If { .. }) {
            self.cond_marks.push(None);
        }
        let new = walk_expr(self, e);
        let (out, s) = self.derive(e, new);
        self.record(&out, s);
        out
    }

    /// An operand: a non-leaf value is bound to a fresh variable.
    fn visit_arg(&mut self, e: &Expr) -> Expr {
        let v = self.visit_expr(e);
        let s = self.take_derived(&v);
        if is_leaf_or_tuple(&v) {
            return v;
        }
        let df = self.bb.in_dataflow();
        let name = self.fresh_name(df);
        let var = Var::with(name, Some(s), df, e.span());
        let b = self.finish_binding(&var, var.clone(), v, None, e.span());
        self.bb.emit(b);
        var.to_expr()
    }

    fn visit_scope(&mut self, e: &Expr) -> Expr {
        if let Some(m @ None) = self.cond_marks.last_mut() {
            *m = Some(self.ctx.diags.len());
        }
        let (out, s) = self.scope_body(e);
        self.record(&out, s);
        out
    }

    fn visit_var_use(&mut self, v: &Var, e: &Expr) -> Expr {
        let nv = self.remap.get(v).cloned().unwrap_or_else(|| v.clone());
        if !nv.is_dataflow() && matches!(nv.struct_info(), Some(StructInfo::Tuple(f)) if f.is_empty()) {
            return Expr::with_span(ExprKind::Tuple(Vec::new()), e.span());
        }
        if nv == *v && nv.struct_info().is_some() {
            e.clone()
        } else {
            Expr::with_span(ExprKind::Var(nv), e.span())
        }
    }

    fn visit_binding(&mut self, b: &Binding) -> Vec<Binding> {
        let out = match b {
            Binding::VarBinding { var, value, span } => {
                if let ExprKind::Function(func) = value.kind() {
                    return vec![self.function_binding(var, func, value.span(), *span)];
                }
                let new_value = self.visit_expr(value);
                let derived = self.take_derived(&new_value);
                let new_var = match var.struct_info() {
                    Some(ann) => {
                        let ann = self.remap_sinfo(ann);
                        self.ctx.check_annotation(var.name(), &ann, &derived, *span);
                        Self::with_sinfo(var, ann)
                    }
                    None => var.renew_with_struct_info(Some(derived)),
                };
                self.finish_binding(var, new_var, new_value, None, *span)
            }
            Binding::MatchCast {
                var,
                value,
                struct_info,
                span,
            } => {
                let new_value = self.visit_expr(value);
                let derived = self.take_derived(&new_value);
                let target = self.remap_sinfo(struct_info);
                let ann = var.struct_info().map(|a| self.remap_sinfo(a));
                let differs = ann.as_ref().is_some_and(|a| !analysis::struct_info_equal(a, &target));
                self.ctx.match_cast(
                    var.name(),
                    &derived,
                    &target,
                    if differs { ann.as_ref() } else { None },
                    *span,
                );
                let new_var = match &ann {
                    Some(a) => Self::with_sinfo(var, a.clone()),
                    None => var.renew_with_struct_info(Some(target.clone())),
                };
                self.finish_binding(var, new_var, new_value, Some(target), *span)
            }
        };
        vec![out]
    }

    /// A block through the builder (a flattened `SeqExpr` of the other kind
    /// splits it), with the purity context of its kind.
    fn visit_block_split(&mut self, b: &BindingBlock) -> Vec<BindingBlock> {
        let saved = self.ctx.purity;
        self.ctx.purity.in_dataflow = b.is_dataflow;
        let out = walk_block_emit(self, b);
        self.ctx.purity = saved;
        out
    }

    /// A `SeqExpr` in binding position: its blocks join the current block, its
    /// body becomes the value.
    fn visit_seq(&mut self, seq: &SeqExpr, span: Span) -> Expr {
        walk_seq_flatten(self, seq, span)
    }

    fn visit_function(&mut self, f: &Function) -> Function {
        self.normalize_function(f, "(anonymous function)")
    }
}

/// Consolidating blocks (dropping empty ones, merging neighbours of the same
/// kind) lives with the traversal in `relax_ir::mutator`.
pub use relax_ir::mutator::consolidate_blocks;

#[cfg(test)]
mod tests {
    use super::*;
    use relax_ir::{Attrs, DataType, PrimExpr};

    fn tensor(dims: &[i64]) -> StructInfo {
        StructInfo::tensor(dims.iter().map(|&d| PrimExpr::int(d)).collect(), DataType::FLOAT32)
    }

    fn if_expr(cond: Expr, then_branch: Expr, else_branch: Expr, line: u32) -> Expr {
        let kind = ExprKind::If {
            cond,
            then_branch,
            else_branch,
        };
        Expr::with_span(kind, Span::new(line, 1))
    }

    #[test]
    fn operands_are_bound_in_order_and_if_warnings_follow_their_condition() {
        let x = Var::new("x", Some(tensor(&[2, 3])));
        let y = Var::new("y", Some(tensor(&[2, 4])));
        // if (if x then y else y) then add(x, y) else y: both conditions are
        // tensors (warnings); the add's shapes do not match (an error).
        let inner = if_expr(x.to_expr(), y.to_expr(), y.to_expr(), 1);
        let add = Expr::call(
            Expr::op("relax.add"),
            vec![x.to_expr(), y.to_expr()],
            Attrs::new(),
            vec![],
        );
        let outer = if_expr(inner, add, y.to_expr(), 2);
        let (out, sinfo, diags) = normalize_expr(&outer, None);
        let order: Vec<(bool, u32)> = diags.iter().map(|d| (d.is_error(), d.span.line)).collect();
        assert_eq!(order, [(false, 1), (false, 2), (true, 0)], "{diags:?}");
        assert!(diags[..2].iter().all(|d| d.rule == Some(crate::derive::rules::IF_COND)));
        // The inner `If` is bound to `gv`, the add of the then branch to `gv1`,
        // the outer `If` to `gv2`, which is the body.
        let ExprKind::Seq(seq) = out.kind() else {
            panic!("not a SeqExpr")
        };
        let names: Vec<&str> = seq.blocks[0].bindings.iter().map(|b| b.var().name()).collect();
        assert_eq!(names, ["gv", "gv2"]);
        assert_eq!(seq.body.as_var().map(Var::name), Some("gv2"));
        // The failed add gives Object; the outer If unifies it with y's tensor.
        assert!(matches!(sinfo, StructInfo::Object), "{sinfo:?}");
        // The then branch is a SeqExpr binding the add to a fresh variable.
        let ExprKind::If { then_branch, .. } = seq.blocks[0].bindings[1].value().kind() else {
            panic!("not an If")
        };
        let ExprKind::Seq(then_seq) = then_branch.kind() else {
            panic!("branch not a SeqExpr")
        };
        assert_eq!(then_seq.blocks.len(), 1);
        assert_eq!(then_seq.body.as_var().map(Var::name), Some("gv1"));
    }
}
