//! Device consistency: the tensor arguments of an operator call must be on one
//! virtual device (moving a tensor takes an explicit `R.to_vdevice`).
//!
//! An analysis, not a transform: it reads the devices in the StructInfo as they
//! stand. The check runs it on a module's annotated devices; after
//! `RealizeVDevice` (in `relax-transform`) has propagated them, it runs again on
//! every variable's device.

use relax_ir::{BaseFunc, Diagnostic, Expr, ExprKind, IRModule, StructInfo, VDevice};

/// Rule of the error for operator arguments on different devices.
pub const MISMATCH: relax_ir::Rule = relax_ir::Rule::VDevice(relax_ir::VDeviceRule::Mismatch);

/// Errors for operator calls whose tensor arguments are on different devices.
pub fn check_device_consistency(module: &IRModule) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    for f in module.functions.values() {
        let BaseFunc::Relax(func) = f else { continue };
        relax_ir::visit::for_each_expr(&func.body, &mut |e| {
            let ExprKind::Call(call) = e.kind() else { return };
            let ExprKind::Op(name) = call.op.kind() else { return };
            if matches!(name.as_str(), "relax.to_vdevice" | "relax.hint_on_device") {
                return;
            }
            let mut devs: Vec<VDevice> = Vec::new();
            for a in &call.args {
                collect_devices(a, &mut devs);
            }
            if let Some(first) = devs.first() {
                if let Some(other) = devs.iter().find(|d| *d != first) {
                    diags.push(
                        Diagnostic::error(
                            format!(
                                "{name} has tensor arguments on different devices ({}:{} and {}:{}); insert R.to_vdevice",
                                first.target.kind, first.vdevice_id, other.target.kind, other.vdevice_id
                            ),
                            e.span(),
                        )
                        .with_rule(MISMATCH),
                    );
                }
            }
        });
    }
    diags
}

fn collect_devices(e: &Expr, out: &mut Vec<VDevice>) {
    match e.kind() {
        ExprKind::Var(v) => {
            if let Some(StructInfo::Tensor(t)) = v.struct_info() {
                if let Some(d) = &t.vdevice {
                    out.push(d.clone());
                }
            }
        }
        ExprKind::Tuple(f) => f.iter().for_each(|x| collect_devices(x, out)),
        _ => {}
    }
}
