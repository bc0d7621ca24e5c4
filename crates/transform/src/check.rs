//! The front end's check: the checker's [`check_module`] with VDevices
//! propagated by [`realize_vdevice`] when the module declares some. `relax
//! check`, `relax print`, `relax run` and the engine's `check` pass run it.

use relax_checker::check::{check_module, conclude, CheckResult};
use relax_checker::device::check_device_consistency;
use relax_checker::normalize::normalize_module;
use relax_checker::well_formed::check_recursion_annotations;
use relax_ir::IRModule;

use crate::realize_vdevice::realize_vdevice;

/// Check a module ([`check_module`]: normal form, StructInfo, purity,
/// well-formedness); a module with VDevices is checked after RealizeVDevice
/// (backward propagation, then the forward pass re-derives StructInfo), so its
/// result carries every variable's device and a call whose arguments end on
/// different devices is an error.
pub fn check_and_realize(module: &IRModule) -> CheckResult {
    if module.vdevices().is_empty() {
        return check_module(module);
    }
    let mut diagnostics = check_recursion_annotations(module);
    let norm = normalize_module(module);
    let realized = realize_vdevice(&norm.module);
    let renorm = normalize_module(&realized.module);
    // The errors of the first normalization are found again on the realized module.
    diagnostics.extend(norm.diagnostics.into_iter().filter(|d| !d.is_error()));
    diagnostics.extend(
        realized
            .diagnostics
            .into_iter()
            .filter(|d| d.rule.is_some_and(|r| r.category() == relax_ir::RuleCategory::VDevice)),
    );
    diagnostics.extend(renorm.diagnostics);
    diagnostics.extend(check_device_consistency(&renorm.module));
    conclude(diagnostics, renorm.module, renorm.bindings)
}
