//! `relax generate`: greedy generation with the tiny KV-cache decoder of `tests/generate/`
//! (exported by Apache TVM 0.27); the tokens are TVM's (`reference.json`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/generate")
}

fn tvm_tokens() -> Vec<i64> {
    let text = std::fs::read_to_string(data().join("reference.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_i64().unwrap())
        .collect()
}

fn generate(extra: &[&str]) -> std::process::Output {
    let d = data();
    Command::new(env!("CARGO_BIN_EXE_relax"))
        .arg("generate")
        .arg(d.join("prog.py"))
        .arg("--params")
        .arg(d.join("params.npz"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn generate_json_prints_tvms_tokens() {
    let o = generate(&[
        "--prompt-ids",
        "1,2,3,4",
        "--max-new-tokens",
        "17",
        "--device",
        "cpu",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let tokens: Vec<i64> = v["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_i64().unwrap())
        .collect();
    assert_eq!(tokens, tvm_tokens());
    assert!(v["prefill_ms"].as_f64().unwrap() > 0.0);
    assert!(v["decode_ms_per_token"].as_f64().unwrap() > 0.0);
}

#[test]
fn generate_prints_tokens_and_times() {
    let o = generate(&["--prompt-ids", "1,2,3,4", "--max-new-tokens", "5", "--device", "cpu"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let first: Vec<i64> = out
        .lines()
        .next()
        .unwrap()
        .split(' ')
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(first, tvm_tokens()[..5]);
    assert!(out.contains("ms/token"), "{out}");
}

#[test]
fn generate_rejects_a_bad_prompt_and_missing_weights() {
    let o = generate(&["--prompt-ids", "1,x", "--device", "cpu"]);
    assert_eq!(o.status.code(), Some(2));
    let d = data();
    let o = Command::new(env!("CARGO_BIN_EXE_relax"))
        .arg("generate")
        .arg(d.join("prog.py"))
        .arg("--params")
        .arg(d.join("missing.npz"))
        .args(["--prompt-ids", "1", "--device", "cpu"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.npz"));
}
