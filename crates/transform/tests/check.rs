//! The front end's check (`check_and_realize`) against the checker's own
//! (`check_module`): the same verdicts on modules without VDevices; on modules
//! with VDevices, only the front end's propagates them, and both reject a call
//! whose arguments are annotated on different devices.

use relax_checker::check::{check_module, CheckResult};
use relax_ir::text::{parse, print_struct_info};
use relax_transform::check_and_realize;

const DEVICES: &str = r#"    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "tag": ""}, 0, "global"), I.vdevice({"keys": ["vulkan", "gpu"], "kind": "vulkan", "tag": ""}, 0, "global")]})
"#;

fn module(globals: &str, params: &str, body: &str) -> relax_ir::IRModule {
    let src = format!("@I.ir_module\nclass Module:\n{globals}\n    @R.function\n    def main({params}):\n{body}");
    parse(&src).expect("test input parses").into_module()
}

fn sinfo_of(r: &CheckResult, var: &str) -> String {
    let b = r.bindings.iter().find(|b| b.var == var).expect("binding");
    print_struct_info(&b.struct_info, Some(&r.module))
}

fn rules(r: &CheckResult) -> Vec<String> {
    r.errors()
        .filter_map(|d| d.rule.map(|r| r.as_str().to_string()))
        .collect()
}

#[test]
fn without_vdevices_both_checks_agree() {
    let m = module(
        "",
        r#"x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((3,), dtype="int32")"#,
        "        a = R.add(x, x)\n        b = R.add(a, y)\n        return b\n",
    );
    let (ours, front) = (check_module(&m), check_and_realize(&m));
    assert!(!ours.is_valid());
    let msgs = |r: &CheckResult| r.diagnostics.iter().map(|d| d.to_string()).collect::<Vec<_>>();
    assert_eq!(msgs(&ours), msgs(&front));
    let sinfos = |r: &CheckResult| {
        r.bindings
            .iter()
            .map(|b| format!("{} {}", b.var, print_struct_info(&b.struct_info, None)))
            .collect::<Vec<_>>()
    };
    assert_eq!(sinfos(&ours), sinfos(&front));
}

#[test]
fn only_the_front_end_check_propagates_devices() {
    // `a`'s annotation puts `c` (and `x`) on the GPU by backward propagation.
    let m = module(
        DEVICES,
        r#"x: R.Tensor((2, 3), dtype="float32")"#,
        "        c = R.exp(x)\n        a: R.Tensor((2, 3), dtype=\"float32\", vdevice=\"vulkan:0:global\") = R.exp(c)\n        return a\n",
    );
    let front = check_and_realize(&m);
    assert!(front.is_valid(), "{:?}", front.diagnostics);
    assert_eq!(
        sinfo_of(&front, "c"),
        r#"R.Tensor((2, 3), dtype="float32", vdevice="vulkan:0:global")"#
    );
    let ours = check_module(&m);
    assert!(ours.is_valid(), "{:?}", ours.diagnostics);
    assert_eq!(sinfo_of(&ours, "c"), r#"R.Tensor((2, 3), dtype="float32")"#);
}

#[test]
fn arguments_annotated_on_different_devices_are_rejected_by_both() {
    let m = module(
        DEVICES,
        r#"x: R.Tensor((2, 3), dtype="float32", vdevice="llvm:0:global"), y: R.Tensor((2, 3), dtype="float32", vdevice="vulkan:0:global")"#,
        "        a = R.add(x, y)\n        return a\n",
    );
    let mismatch = relax_checker::device::MISMATCH.to_string();
    assert!(
        rules(&check_module(&m)).contains(&mismatch),
        "{:?}",
        check_module(&m).diagnostics
    );
    let front = check_and_realize(&m);
    assert!(rules(&front).contains(&mismatch), "{:?}", front.diagnostics);
}
