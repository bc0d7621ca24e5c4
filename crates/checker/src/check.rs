//! The checker's entry point: normalize a module, derive and check every
//! StructInfo, propagate VDevices and check well-formedness.

use relax_ir::{Diagnostic, IRModule, StructInfo};

use crate::normalize::{normalize_module, BindingInfo};
use crate::realize_vdevice::{check_device_consistency, realize_vdevice};
use crate::well_formed::{self, WfOptions};

/// The result of [`check_module`].
#[derive(Clone, Debug)]
pub struct CheckResult {
    /// The module in normal form with every bound variable's StructInfo filled
    /// (and VDevices propagated when the module declares some).
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
        .as_deref()
        .is_some_and(|r| r.starts_with("well-formed/") || r.starts_with("normal-form/"))
}

/// Check a module: the normal form, StructInfo derivation (errors for
/// definite mismatches, warnings where a match could not be proven), purity,
/// VDevice propagation and every well-formedness criterion.
///
/// A panic here is a bug (the fuzz targets in `crates/cli/tests/fuzz_pipeline.rs` look
/// for them); bad input is always a diagnostic.
pub fn check_module(module: &IRModule) -> CheckResult {
    check_module_inner(module)
}

fn check_module_inner(module: &IRModule) -> CheckResult {
    let mut diagnostics = well_formed::check_recursion_annotations(module);
    let norm = normalize_module(module);
    let (checked, bindings) = if module.vdevices().is_empty() {
        diagnostics.extend(norm.diagnostics);
        (norm.module, norm.bindings)
    } else {
        // Backward propagation, then the forward pass re-derives StructInfo.
        let realized = realize_vdevice(&norm.module);
        let renorm = normalize_module(&realized.module);
        diagnostics.extend(norm.diagnostics.into_iter().filter(|d| !d.is_error()));
        diagnostics.extend(
            realized
                .diagnostics
                .into_iter()
                .filter(|d| d.rule.as_deref().is_some_and(|r| r.starts_with("vdevice/"))),
        );
        diagnostics.extend(renorm.diagnostics);
        diagnostics.extend(check_device_consistency(&renorm.module));
        (renorm.module, renorm.bindings)
    };
    diagnostics.extend(well_formed::check_module(&checked, WfOptions { normal_form: true }));
    dedup(&mut diagnostics);
    diagnostics.sort_by_key(|d| (d.span.is_none(), d.span.line, d.span.col));
    let well_formed = !diagnostics.iter().any(|d| d.is_error() && is_wf_rule(d));
    CheckResult {
        module: checked,
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
            d.rule.clone(),
        ))
    });
}
