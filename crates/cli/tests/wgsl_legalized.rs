//! `relax wgsl` on a module with operator calls: LegalizeOps runs first, so the
//! PrimFuncs it generates are printed too.

mod common;

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

fn relax(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_relax"))
        .args(args)
        .output()
        .expect("the relax binary runs");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `relax wgsl` goes through the same pipeline as `relax run --device gpu`: the
/// PrimFuncs it prints kernels for are exactly those whose kernels a GPU run of a
/// small network dispatches (fused convolutions included).
#[test]
fn wgsl_prints_the_kernels_a_gpu_run_dispatches() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tiny_cnn.py");
    let path = path.to_str().expect("utf-8 path");
    let (code, out, err) = relax(&["wgsl", path]);
    assert_eq!(code, Some(0), "{err}");
    let mut printed: Vec<String> = out
        .lines()
        .filter_map(|l| l.strip_prefix("// PrimFunc "))
        .filter_map(|l| l.split(':').next())
        .map(str::to_string)
        .collect();
    printed.sort();
    printed.dedup();
    assert!(printed.iter().any(|f| f.starts_with("fused_conv2d")), "{printed:?}");
    // Inputs: deterministic values in [-1, 1).
    let shapes: [&[usize]; 5] = [&[1, 3, 16, 16], &[8, 3, 3, 3], &[1, 8, 1, 1], &[16, 8, 1, 1], &[16, 10]];
    let mut seed = 12345u64;
    let inputs: Vec<String> = shapes
        .iter()
        .map(|s| {
            let n: usize = s.iter().product();
            let data: Vec<String> = (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    format!("{:.4}", (seed >> 40) as f64 / (1u64 << 23) as f64 - 1.0)
                })
                .collect();
            let dims: Vec<String> = s.iter().map(|d| d.to_string()).collect();
            format!(
                r#"{{"dtype": "float32", "shape": [{}], "data": {}}}"#,
                dims.join(", "),
                nested(&data, s)
            )
        })
        .collect();
    let scratch = common::Scratch::new("tiny-cnn", "inputs");
    let json = scratch.join("inputs.json");
    std::fs::write(&json, format!("[{}]", inputs.join(", "))).expect("inputs written");
    let json = json.to_str().expect("utf-8 path").to_string();
    let (code, _, err) = relax(&["run", path, "--device", "gpu", "--inputs-json", &json, "--profile"]);
    if code != Some(0) && err.contains("GPU") && err.contains("could not be opened") {
        eprintln!("skipped: no GPU adapter ({err})");
        return;
    }
    assert_eq!(code, Some(0), "{err}");
    // `profile:  ms  %  calls  GFLOP/s  kernel` rows of the GPU table.
    let mut ran: Vec<String> = err
        .lines()
        .skip_while(|l| !l.starts_with("profile: GPU time per kernel"))
        .skip(2)
        .take_while(|l| l.starts_with("profile: ") && !l.starts_with("profile: no ") && !l.contains("host time"))
        .filter_map(|l| l.split_whitespace().last())
        .map(str::to_string)
        .collect();
    ran.sort();
    ran.dedup();
    assert_eq!(printed, ran, "printed by `relax wgsl` vs dispatched by the run:\n{err}");
}

/// A PrimFunc called only with constants is folded away when the module is
/// prepared: nothing runs on the GPU and `relax wgsl` says so; `--func` still
/// shows the PrimFunc as written.
#[test]
fn wgsl_func_shows_a_prim_func_the_pipeline_folds_away() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/folded_call.py");
    let path = path.to_str().expect("utf-8 path");
    let (code, out, err) = relax(&["wgsl", path]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.matches("@compute").count(), 0, "{out}");
    assert!(out.contains("no kernel runs on the GPU"), "{out}");
    let (code, out, err) = relax(&["wgsl", "--func", "add_one", path]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("showing it as written"), "{err}");
    assert!(out.contains("// PrimFunc add_one: kernel"), "{out}");
    assert_eq!(out.matches("@compute").count(), 1, "{out}");
    let (code, _, err) = relax(&["wgsl", "--func", "nothing_here", path]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no PrimFunc named `nothing_here`"), "{err}");
}

/// `data` (row-major) as nested JSON lists of shape `shape`.
fn nested(data: &[String], shape: &[usize]) -> String {
    match shape.split_first() {
        None => data[0].clone(),
        Some((&n, rest)) => {
            let step: usize = rest.iter().product();
            let parts: Vec<String> = (0..n).map(|i| nested(&data[i * step..(i + 1) * step], rest)).collect();
            format!("[{}]", parts.join(", "))
        }
    }
}
