//! `relax wgsl` on a module with operator calls: LegalizeOps runs first, so the
//! PrimFuncs it generates are printed too.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn wgsl_includes_legalized_operators() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/matmul_op.py");
    let o = Command::new(env!("CARGO_BIN_EXE_relax"))
        .arg("wgsl")
        .arg(&path)
        .output()
        .expect("the relax binary runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("// PrimFunc matmul: kernel"), "{out}");
    assert!(out.contains("// PrimFunc relu: kernel"), "{out}");
    // Three storage bindings for the matmul: a and b read (four elements at a
    // time), the output written.
    assert!(out.contains("var<storage, read> b0_a_v4: array<vec4<f32>>;"), "{out}");
    assert!(out.contains("var<storage, read> b1_b_v4: array<vec4<f32>>;"), "{out}");
    assert!(out.contains("var<storage, read_write> b2_matmul: array<f32>;"), "{out}");
    assert_eq!(out.matches("@compute").count(), 2, "{out}");
    // Selecting the generated function by name works like any other PrimFunc.
    let o = Command::new(env!("CARGO_BIN_EXE_relax"))
        .args(["wgsl", "--func", "relu"])
        .arg(&path)
        .output()
        .expect("the relax binary runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(out.matches("@compute").count(), 1, "{out}");
}
