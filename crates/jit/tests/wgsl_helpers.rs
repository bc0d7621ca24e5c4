//! The WGSL helpers kept as files in `shaders/helpers/` are each valid WGSL (naga
//! parses and validates them, with the declarations they rely on) and each defines
//! the function it is named after.

use relax_jit::internals::{validate, HELPERS};
use relax_jit::DeviceCaps;

#[test]
fn every_wgsl_helper_is_valid_and_defines_its_function() {
    assert!(HELPERS.len() >= 20, "{} helpers", HELPERS.len());
    for (name, src) in HELPERS {
        assert!(src.contains(&format!("fn {name}(")), "{name} does not define `{name}`");
        // The bounds check writes the kernel's flag buffer, declared by the kernel.
        let mut prelude = if name.starts_with("relax_chk") {
            "@group(0) @binding(0) var<storage, read_write> relax_oob: array<atomic<u32>, 5>;\nconst relax_oob_base: u32 = 0u;\n"
                .to_string()
        } else {
            String::new()
        };
        // A guarded check (`relax_chk_if`) calls the check it guards.
        if let Some(base) = name.strip_suffix("_if") {
            let (_, dep) = HELPERS.iter().find(|(n, _)| *n == base).expect("the guarded check");
            prelude.push_str(dep);
        }
        let caps = if name.contains("_i64") || name.ends_with("_u64") || name.ends_with("_f64") {
            DeviceCaps::ALL
        } else {
            DeviceCaps {
                i64: false,
                f64: false,
                ..DeviceCaps::ALL
            }
        };
        let module = format!("{prelude}{src}\n@compute @workgroup_size(1)\nfn main() {{}}\n");
        validate(&module, &caps).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
