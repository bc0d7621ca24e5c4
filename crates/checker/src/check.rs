//! The checker's entry point: normalize a module, derive and check every
//! StructInfo and check well-formedness.

use relax_ir::{Diagnostic, IRModule, RuleCategory, StructInfo};

use crate::device::check_device_consistency;
use crate::normalize::{normalize_module, BindingInfo};
use crate::well_formed::{self, WfOptions};

/// The result of [`check_module`].
#[derive(Clone, Debug)]
pub struct CheckResult {
    /// The module in normal form with every bound variable's StructInfo filled.
    pub module: IRModule,
    /// Errors and warnings, ordered by location.
    pub diagnostics: Vec<Diagnostic>,
    /// Whether no well-formedness (or normal-form) criterion is violated.
    pub well_formed: bool,
    /// Every binding with its StructInfo, in program order.
    pub bindings: Vec<BindingInfo>,
}

impl CheckResult {
    /// Whether the program is valid: no error (warnings are allowed).
    pub fn is_valid(&self) -> bool {
        self.diagnostics.iter().all(|d| !d.is_error())
    }
    /// The errors.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.is_error())
    }
    /// `(function, variable, StructInfo)` of every binding, in order.
    pub fn binding_struct_infos(&self) -> Vec<(String, String, StructInfo)> {
        self.bindings
            .iter()
            .map(|b| (b.function.clone(), b.var.clone(), b.struct_info.clone()))
            .collect()
    }
}

fn is_wf_rule(d: &Diagnostic) -> bool {
    d.rule
        .is_some_and(|r| matches!(r.category(), RuleCategory::WellFormed | RuleCategory::NormalForm))
}

/// Check a module: the normal form, StructInfo derivation (errors for
/// definite mismatches, warnings where a match could not be proven), purity,
/// the consistency of annotated VDevices and every well-formedness criterion.
///
/// VDevices are not propagated here: `RealizeVDevice` is a transform
/// (`relax_transform::check_and_realize` checks with it).
///
/// A panic here is a bug (the fuzz targets in `crates/cli/tests/fuzz_pipeline.rs` look
/// for them); bad input is always a diagnostic.
pub fn check_module(module: &IRModule) -> CheckResult {
    let mut diagnostics = well_formed::check_recursion_annotations(module);
    let norm = normalize_module(module);
    diagnostics.extend(norm.diagnostics);
    if !module.vdevices().is_empty() {
        diagnostics.extend(check_device_consistency(&norm.module));
    }
    conclude(diagnostics, norm.module, norm.bindings)
}

/// The end of a check: `diagnostics` found so far on the way to `module` (a
/// normalized module whose bindings are `bindings`), with the well-formedness
/// diagnostics of `module` added, duplicates removed and ordered by location.
pub fn conclude(mut diagnostics: Vec<Diagnostic>, module: IRModule, bindings: Vec<BindingInfo>) -> CheckResult {
    diagnostics.extend(well_formed::check_module(&module, WfOptions { normal_form: true }));
    dedup(&mut diagnostics);
    diagnostics.sort_by_key(|d| (d.span.is_none(), d.span.line, d.span.col));
    let well_formed = !diagnostics.iter().any(|d| d.is_error() && is_wf_rule(d));
    CheckResult {
        module,
        diagnostics,
        well_formed,
        bindings,
    }
}

fn dedup(diags: &mut Vec<Diagnostic>) {
    let mut seen = std::collections::HashSet::new();
    diags.retain(|d| {
        seen.insert((
            d.severity == relax_ir::Severity::Error,
            d.message.clone(),
            d.span,
            d.rule,
        ))
    });
}
