//! StructInfo derivation for every expression (the spec's derivation rules),
//! purity checking, `MatchCast` rules and annotation checking.
//!
//! [`DeriveCtx`] holds the context `Γ`/`Σ` of the rules: Relax variables carry
//! their StructInfo themselves (after normalization every bound variable has
//! one), `GlobalVar`s are looked up in a table built from the module, and the
//! shape variables in scope are tracked in [`DeriveCtx::shape_scope`].

use std::collections::{HashMap, HashSet};

use relax_ir::arith::Analyzer;
use relax_ir::tir::TirVar;
use relax_ir::{
    BaseFunc, Call, DataType, Diagnostic, Expr, ExprKind, FuncStructInfo, Function, IRModule, PrimExpr, PrimFunc, Rule,
    Span, StructInfo, TensorStructInfo,
};

use crate::analysis::{
    self, check_compatibility, derive_call_ret_struct_info, display_struct_info, struct_info_base_check,
    BaseCheckResult, Compatibility, DEFAULT_DERIVE,
};
use crate::op::{self, InferCtx};

/// Rule names of StructInfo diagnostics.
pub mod rules {
    use relax_ir::{Rule, StructInfoRule};

    /// An impure call where only pure calls are allowed.
    pub const PURITY: Rule = Rule::StructInfo(StructInfoRule::Purity);
    /// An annotation that does not match the derived StructInfo.
    pub const ANNOTATION: Rule = Rule::StructInfo(StructInfoRule::Annotation);
    /// A call whose arguments do not match the callee.
    pub const CALL: Rule = Rule::StructInfo(StructInfoRule::Call);
    /// An operator's StructInfo inference failed.
    pub const OP: Rule = Rule::StructInfo(StructInfoRule::Op);
    /// Indexing a non-tuple or out of range.
    pub const TUPLE_GET_ITEM: Rule = Rule::StructInfo(StructInfoRule::TupleGetItem);
    /// A `MatchCast` that can never succeed or conflicts with its annotation.
    pub const MATCH_CAST: Rule = Rule::StructInfo(StructInfoRule::MatchCast);
    /// A function body that does not match the return annotation.
    pub const RETURN: Rule = Rule::StructInfo(StructInfoRule::Return);
    /// An `If` condition that is not a boolean scalar.
    pub const IF_COND: Rule = Rule::StructInfo(StructInfoRule::IfCondition);
    /// An operator without StructInfo inference.
    pub const UNKNOWN_OP: Rule = Rule::StructInfo(StructInfoRule::UnknownOp);
}

/// The purity requirements of the code being derived.
#[derive(Clone, Copy, Debug, Default)]
pub struct PurityCtx {
    /// Inside a `DataflowBlock`.
    pub in_dataflow: bool,
    /// Inside a function with `is_pure` and without `relax.force_pure`.
    pub pure_function: bool,
}

impl PurityCtx {
    /// Whether impure calls are forbidden here.
    pub fn requires_pure(&self) -> bool {
        self.in_dataflow || self.pure_function
    }
}

/// The context of StructInfo derivation.
pub struct DeriveCtx<'m> {
    /// The module (for `GlobalVar`s and VDevices).
    pub module: Option<&'m IRModule>,
    /// The arithmetic analyzer.
    pub ana: Analyzer,
    /// StructInfo of every module function by name.
    pub globals: HashMap<String, StructInfo>,
    /// Shape variables in scope (`Σ`).
    pub shape_scope: HashSet<TirVar>,
    /// Purity requirements.
    pub purity: PurityCtx,
    /// Diagnostics so far.
    pub diags: Vec<Diagnostic>,
}

/// Whether a function has `relax.force_pure` set to true.
pub fn is_force_pure(f: &Function) -> bool {
    f.attrs.get_bool("relax.force_pure").unwrap_or(false)
}

/// Rule 15: the StructInfo a function's signature declares (`Object` for missing
/// annotations).
pub fn function_signature(f: &Function) -> FuncStructInfo {
    FuncStructInfo {
        params: Some(
            f.params
                .iter()
                .map(|p| p.struct_info().cloned().unwrap_or(StructInfo::Object))
                .collect(),
        ),
        ret: Box::new(f.ret_struct_info.clone().unwrap_or(StructInfo::Object)),
        purity: f.is_pure,
        derive_func: None,
    }
}

/// Rule 16: the StructInfo of a `PrimFunc` bound in a module.
pub fn prim_func_struct_info(pf: &PrimFunc) -> StructInfo {
    let params = pf
        .params
        .iter()
        .map(|p| match pf.buffer_of(p) {
            Some(b) => StructInfo::tensor(b.0.shape.clone(), b.0.dtype),
            None => StructInfo::prim(p.dtype()),
        })
        .collect();
    StructInfo::Func(FuncStructInfo {
        params: Some(params),
        ret: Box::new(StructInfo::unit()),
        purity: false,
        derive_func: None,
    })
}

/// Rule 13: the StructInfo of an `ExternFunc`.
pub fn extern_func_struct_info() -> StructInfo {
    StructInfo::Func(FuncStructInfo {
        params: None,
        ret: Box::new(StructInfo::Object),
        purity: false,
        derive_func: Some(DEFAULT_DERIVE.to_string()),
    })
}

/// Rule 3: the StructInfo of a constant.
pub fn constant_struct_info(data: &relax_ir::NDArray) -> StructInfo {
    StructInfo::tensor(data.shape.iter().map(|&d| PrimExpr::int(d)).collect(), data.dtype)
}

/// Rule 1 (prepopulation): the declared StructInfo of every function of `module`.
pub fn module_globals(module: &IRModule) -> HashMap<String, StructInfo> {
    module
        .functions
        .iter()
        .map(|(gv, f)| {
            let s = match f {
                BaseFunc::Relax(f) => StructInfo::Func(function_signature(f)),
                BaseFunc::Prim(pf) => prim_func_struct_info(pf),
            };
            (gv.name().to_string(), s)
        })
        .collect()
}

/// Operators whose result is given by `sinfo_args` (used when the operator
/// registry has no entry for them).
const SINFO_ARG_OPS: &[&str] = &[
    "relax.call_tir",
    "relax.call_tir_with_grad",
    "relax.call_tir_inplace",
    "relax.call_dps_packed",
    "relax.call_pure_packed",
    "relax.call_inplace_packed",
    "relax.call_builtin_with_ctx",
];

/// Operators known to be impure (used when the operator registry has no entry).
const IMPURE_OPS: &[&str] = &[
    "relax.print",
    "relax.assert_op",
    "relax.call_builtin_with_ctx",
    "relax.call_inplace_packed",
];

/// Whether operator `name` is pure.
pub fn op_is_pure(name: &str) -> bool {
    match op::lookup(name) {
        Some(d) => d.pure,
        None => !IMPURE_OPS.contains(&name),
    }
}

impl<'m> DeriveCtx<'m> {
    /// A context for `module`.
    pub fn new(module: Option<&'m IRModule>) -> DeriveCtx<'m> {
        DeriveCtx {
            module,
            ana: Analyzer::new(),
            globals: module.map(module_globals).unwrap_or_default(),
            shape_scope: HashSet::new(),
            purity: PurityCtx::default(),
            diags: Vec::new(),
        }
    }

    fn error(&mut self, msg: impl Into<String>, span: Span, rule: Rule) {
        self.diags.push(Diagnostic::error(msg, span).with_rule(rule));
    }

    fn warning(&mut self, msg: impl Into<String>, span: Span, rule: Rule) {
        self.diags.push(Diagnostic::warning(msg, span).with_rule(rule));
    }

    /// The StructInfo of a normalized leaf expression (variables, constants,
    /// shapes, prim values, strings, dtypes, extern functions and tuples of
    /// leaves); `Object` for anything else.
    pub fn leaf_struct_info(&self, e: &Expr) -> StructInfo {
        match e.kind() {
            ExprKind::Var(v) => v.struct_info().cloned().unwrap_or(StructInfo::Object),
            ExprKind::GlobalVar(gv) => self.globals.get(gv.name()).cloned().unwrap_or(StructInfo::Object),
            ExprKind::Constant { data } => constant_struct_info(data),
            ExprKind::Tuple(fields) => StructInfo::Tuple(fields.iter().map(|f| self.leaf_struct_info(f)).collect()),
            ExprKind::ShapeExpr(values) => StructInfo::shape(values.clone()),
            ExprKind::PrimValue(v) => StructInfo::prim(v.dtype()),
            ExprKind::StringImm(_) | ExprKind::DataTypeImm(_) => StructInfo::Object,
            ExprKind::ExternFunc { .. } => extern_func_struct_info(),
            ExprKind::Function(f) => StructInfo::Func(function_signature(f)),
            ExprKind::Op(_) | ExprKind::Seq(_) | ExprKind::If { .. } | ExprKind::Call(_) => StructInfo::Object,
            ExprKind::TupleGetItem { tuple, index } => match self.leaf_struct_info(tuple) {
                StructInfo::Tuple(f) => f.get(*index).cloned().unwrap_or(StructInfo::Object),
                _ => StructInfo::Object,
            },
        }
    }

    fn check_purity(&mut self, pure: bool, what: &str, span: Span) {
        if !pure && self.purity.requires_pure() {
            let place = if self.purity.in_dataflow {
                "inside a dataflow block"
            } else {
                "inside a pure function"
            };
            self.error(
                format!(
                    "impure call {what} {place}; mark the function `pure=False`, set `relax.force_pure`, or use `R.call_pure_packed`"
                ),
                span,
                rules::PURITY,
            );
        }
    }

    /// Rule 14: the StructInfo of a (normalized) call. Reports errors and
    /// warnings; a failed derivation gives `Object`.
    pub fn derive_call(&mut self, call: &Call, span: Span) -> StructInfo {
        let args: Vec<StructInfo> = call.args.iter().map(|a| self.leaf_struct_info(a)).collect();
        if let ExprKind::Op(name) = call.op.kind() {
            self.check_purity(op_is_pure(name), &format!("of operator {name}"), span);
            return match op::lookup(name) {
                Some(def) => {
                    let ctx = InferCtx {
                        module: self.module,
                        analyzer: &self.ana,
                    };
                    match (def.infer)(call, &args, &ctx) {
                        Ok(s) => s,
                        Err(msg) => {
                            self.error(format!("{name}: {msg}"), span, rules::OP);
                            StructInfo::Object
                        }
                    }
                }
                None if SINFO_ARG_OPS.contains(&name.as_str()) => analysis::apply_derive_func(DEFAULT_DERIVE, call),
                None => {
                    self.warning(
                        format!("operator {name} has no StructInfo inference; its result is R.Any"),
                        span,
                        rules::UNKNOWN_OP,
                    );
                    StructInfo::Object
                }
            };
        }
        let callee = self.leaf_struct_info(&call.op);
        let StructInfo::Func(finfo) = callee else {
            self.error(
                format!(
                    "the callee is not a function: it has StructInfo {}",
                    display_struct_info(&callee)
                ),
                span,
                rules::CALL,
            );
            return StructInfo::Object;
        };
        let what = match call.op.kind() {
            ExprKind::ExternFunc { global_symbol } => format!("of packed function \"{global_symbol}\""),
            ExprKind::GlobalVar(gv) => format!("of function {}", gv.name()),
            ExprKind::Var(v) => format!("of {}", v.name()),
            _ => "of a function".to_string(),
        };
        let pure = finfo.params.is_some() && finfo.purity
            || finfo.params.is_none() && finfo.derive_func.is_none() && finfo.purity;
        self.check_purity(pure, &what, span);
        match derive_call_ret_struct_info(&finfo, call, &args, &self.ana) {
            Ok(d) => {
                for w in d.warnings {
                    self.warning(w, span, rules::CALL);
                }
                d.ret
            }
            Err(msg) => {
                self.error(format!("call {what}: {msg}"), span, rules::CALL);
                StructInfo::Object
            }
        }
    }

    /// Rule 12: the StructInfo of `tuple[index]`.
    pub fn derive_tuple_get_item(&mut self, tuple: &Expr, index: usize, span: Span) -> StructInfo {
        match self.leaf_struct_info(tuple) {
            StructInfo::Tuple(fields) => match fields.get(index) {
                Some(s) => s.clone(),
                None => {
                    self.error(
                        format!(
                            "tuple index {index} out of range: the tuple has {} fields",
                            fields.len()
                        ),
                        span,
                        rules::TUPLE_GET_ITEM,
                    );
                    StructInfo::Object
                }
            },
            other => {
                self.error(
                    format!(
                        "indexing a value that is not a tuple: it has StructInfo {}",
                        display_struct_info(&other)
                    ),
                    span,
                    rules::TUPLE_GET_ITEM,
                );
                StructInfo::Object
            }
        }
    }

    /// The condition of an `If` must be a boolean scalar (a bool `PrimValue` or a
    /// 0-d bool tensor); an unknown type is accepted.
    pub fn check_if_condition(&mut self, cond: &Expr, span: Span) {
        let s = self.leaf_struct_info(cond);
        let ok = match &s {
            StructInfo::Object => true,
            StructInfo::Prim(p) => p.dtype.is_bool(),
            StructInfo::Tensor(t) => (t.dtype.is_void() || t.dtype.is_bool()) && (t.ndim == 0 || t.ndim == -1),
            _ => false,
        };
        if !ok {
            // Only evaluation requires a boolean: a warning, not an error.
            self.warning(
                format!(
                    "the condition of an If should be a boolean scalar, but it has StructInfo {}",
                    display_struct_info(&s)
                ),
                span,
                rules::IF_COND,
            );
        }
    }

    /// Rule 11.2.3: check an annotation `ann` of a binding against the derived
    /// `derived`: an error when incompatible, a warning when only possibly compatible.
    pub fn check_annotation(&mut self, var_name: &str, ann: &StructInfo, derived: &StructInfo, span: Span) {
        // `extent: T.int64 = source` names a new symbolic variable: any integer scalar of
        // that dtype fits it.
        if let (StructInfo::Prim(a), StructInfo::Prim(d)) = (ann, derived) {
            if a.dtype == d.dtype
                && a.value
                    .as_ref()
                    .and_then(PrimExpr::as_var)
                    .is_some_and(|v| v.name() == var_name)
            {
                return;
            }
        }
        let (a, d) = (|| display_struct_info(ann), || display_struct_info(derived));
        self.report_compatibility(
            check_compatibility(derived, ann, &self.ana),
            || format!("the annotation of `{var_name}` ({}) is more specific than what can be derived ({}); consider R.match_cast", a(), d()),
            || format!("`{var_name}` is annotated as {}, but its value has StructInfo {}", a(), d()),
            span,
            rules::ANNOTATION,
        );
    }

    /// A warning (`possibly`) or an error (`incompatible`) for a compatibility
    /// check's outcome under `rule`; nothing when compatible.
    fn report_compatibility(
        &mut self,
        c: Compatibility,
        possibly: impl FnOnce() -> String,
        incompatible: impl FnOnce() -> String,
        span: Span,
        rule: Rule,
    ) {
        match c {
            Compatibility::Compatible => {}
            Compatibility::PossiblyCompatible => self.warning(possibly(), span, rule),
            Compatibility::Incompatible => self.error(incompatible(), span, rule),
        }
    }

    /// Rule 15.5: the body of a function against its return annotation.
    pub fn check_return(&mut self, fname: &str, ret: &StructInfo, body: &StructInfo, span: Span) {
        let (b, r) = (|| display_struct_info(body), || display_struct_info(ret));
        self.report_compatibility(
            check_compatibility(body, ret, &self.ana),
            || {
                format!(
                    "the return value of {fname} ({}) may not match the return annotation {}",
                    b(),
                    r()
                )
            },
            || {
                format!(
                    "{fname} returns {}, which does not match its return annotation {}",
                    b(),
                    r()
                )
            },
            span,
            rules::RETURN,
        );
    }

    /// Rule 11.3: a `MatchCast` of a value with StructInfo `value` to `target`, with
    /// the variable's own annotation `ann` (if it differs from `target`). Binds the
    /// new shape variables of `target`.
    pub fn match_cast(
        &mut self,
        var_name: &str,
        value: &StructInfo,
        target: &StructInfo,
        ann: Option<&StructInfo>,
        span: Span,
    ) {
        let down = struct_info_base_check(target, value, &self.ana);
        let up = struct_info_base_check(value, target, &self.ana);
        if down == BaseCheckResult::FailL0 && up == BaseCheckResult::FailL0 {
            self.warning(
                format!(
                    "R.match_cast of `{var_name}` will always fail: the value has StructInfo {} and can never match {}",
                    display_struct_info(value),
                    display_struct_info(target)
                ),
                span,
                rules::MATCH_CAST,
            );
        }
        let mut defs = Vec::new();
        analysis::definable_tir_vars(target, &mut defs);
        self.shape_scope.extend(defs);
        if let Some(ann) = ann {
            match struct_info_base_check(ann, target, &self.ana) {
                BaseCheckResult::Pass => {}
                BaseCheckResult::FailL2 => self.warning(
                    format!(
                        "the annotation of `{var_name}` ({}) may not hold for the cast StructInfo {}",
                        display_struct_info(ann),
                        display_struct_info(target)
                    ),
                    span,
                    rules::MATCH_CAST,
                ),
                _ => self.error(
                    format!(
                        "`{var_name}` is annotated as {}, but R.match_cast gives {}",
                        display_struct_info(ann),
                        display_struct_info(target)
                    ),
                    span,
                    rules::MATCH_CAST,
                ),
            }
        }
    }
}

/// A `TensorStructInfo` value, for callers building StructInfo.
pub fn tensor(shape: Option<Expr>, dtype: DataType, ndim: i32) -> StructInfo {
    StructInfo::Tensor(TensorStructInfo {
        shape,
        dtype,
        vdevice: None,
        ndim,
    })
}
