//! `relax import` and `relax run model.onnx` on the small models of the repository's
//! `tests/onnx/`.

use std::path::PathBuf;
use std::process::{Command, Output};

fn onnx_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/onnx")
}

fn relax(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relax"))
        .args(args)
        .env("NODEVICE_SELECT", "1")
        .output()
        .expect("runs the relax binary")
}

fn path(name: &str) -> String {
    onnx_dir().join(name).display().to_string()
}

#[test]
fn import_prints_a_program_that_checks() {
    let o = relax(&["import", &path("cnn.onnx")]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("R.nn.conv2d(") && text.contains("with R.dataflow():"),
        "{text}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("15 nodes") && err.contains("weight parameters"), "{err}");
    let dir = std::env::temp_dir().join(format!("relax_import_cli_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let prog = dir.join("prog.py").display().to_string();
    let weights = dir.join("w.npz").display().to_string();
    let o = relax(&["import", &path("attn_dyn.onnx"), "-o", &prog, "--params-out", &weights]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let o = relax(&["check", &prog]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    // the printed program runs with the written weights and gives the model's result
    let out = dir.join("out.npy").display().to_string();
    let o = relax(&[
        "run",
        &prog,
        "--params",
        &weights,
        "--input",
        &path("attn_dyn.case1.in0.npy"),
        "--device",
        "cpu",
        "--output",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let o = relax(&["import", &path("attn_dyn.onnx"), "--dim", "N=2", "--dim", "seq=3"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("ids: R.Tensor((2, 3), dtype=\"int64\")"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_takes_an_onnx_model() {
    let o = relax(&[
        "run",
        &path("cnn.onnx"),
        "--input",
        &path("cnn.case0.in0.npy"),
        "--device",
        "cpu",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(j["outputs"][0]["shape"], serde_json::json!([1, 10]));
}

#[test]
fn list_ops_and_errors() {
    let o = relax(&["import", "--list-ops"]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines().any(|l| l == "Conv") && text.lines().any(|l| l == "Gather"),
        "{text}"
    );
    let o = relax(&["import", "/nonexistent/model.onnx"]);
    assert_eq!(o.status.code(), Some(2));
    let o = relax(&["import", &path("cnn.case0.in0.npy")]);
    assert_eq!(o.status.code(), Some(1), "a .npy file is not an ONNX model");
    let o = relax(&["import", &path("cnn.onnx"), "--dim", "N"]);
    assert_eq!(o.status.code(), Some(2), "--dim needs NAME=VALUE");
}
