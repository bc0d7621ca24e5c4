//! `relax run` inputs that used to crash, hang or mis-encode: `.npy` headers whose
//! shape overflows, claims more data than the file has, or nests braces; bfloat16
//! values in `--inputs-json`; and an impossible allocation on the host.

mod common;

use std::path::Path;
use std::process::Command;

fn relax() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_relax"));
    c.env("NODEVICE_SELECT", "1");
    c
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> common::Scratch {
    common::Scratch::new("run-inputs", name)
}

const IDENTITY: &str = "@R.function\ndef main(x: R.Tensor((4,), \"float32\")):\n    return x\n";

/// Run `src` on the host with `args`; (exit code, stdout, stderr).
fn run(dir: &Path, src: &str, args: &[&str]) -> (i32, String, String) {
    let prog = dir.join("prog.py");
    std::fs::write(&prog, src).expect("write");
    let out = relax()
        .arg("run")
        .arg(&prog)
        .args(["--device", "cpu"])
        .args(args)
        .output()
        .expect("relax runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`run`], which must succeed: its stdout.
fn run_ok(dir: &Path, src: &str, args: &[&str]) -> String {
    let (code, out, err) = run(dir, src, args);
    assert_eq!(code, 0, "{err}");
    out
}

#[test]
fn bad_npy_headers_are_errors() {
    let dir = scratch("npy");
    let cases: [(&str, Vec<u8>, &str); 3] = [
        (
            "overflow.npy",
            common::npy_bytes(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
                &[],
            ),
            "has an element count that overflows",
        ),
        (
            "huge.npy",
            common::npy_bytes(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000, 100000), }",
                &[0; 16],
            ),
            "needs 4000000000000000 bytes of data, the file has 16",
        ),
        (
            "nested.npy",
            {
                let mut b = b"\x93NUMPY\x01\x00".to_vec();
                b.extend(60000u16.to_le_bytes());
                b.extend("{".repeat(30000).as_bytes());
                b.extend("}".repeat(30000).as_bytes());
                b
            },
            "is not a flat dict",
        ),
    ];
    for (name, bytes, want) in cases {
        let p = dir.join(name);
        std::fs::write(&p, bytes).expect("write");
        let (code, _, err) = run(&dir, IDENTITY, &["--input", p.to_str().expect("utf-8 path")]);
        assert_eq!(code, 1, "{name}: {err}");
        assert!(err.contains(want), "{name}: {err}");
    }
    // A well-formed file still works.
    let data: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let p = dir.join("ok.npy");
    std::fs::write(
        &p,
        common::npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", &data),
    )
    .expect("write");
    let out = run_ok(&dir, IDENTITY, &["--input", p.to_str().expect("utf-8 path")]);
    assert_eq!(out.trim(), "[1. 2. 3. 4.]");
}

#[test]
fn bfloat16_json_inputs_are_encoded_as_bfloat16() {
    let dir = scratch("bf16");
    let json = dir.join("in.json");
    std::fs::write(&json, r#"[{"dtype":"bfloat16","shape":[3],"data":[0.1, 3.5, -2.0]}]"#).expect("write");
    let src =
        "@R.function\ndef main(x: R.Tensor((3,), \"bfloat16\")):\n    y = R.astype(x, \"float32\")\n    return y\n";
    let out = run_ok(&dir, src, &["--inputs-json", json.to_str().expect("utf-8 path")]);
    // 0.1 rounds to the bfloat16 0.10009765625 (it was read as float16 bits: 5.2e-11).
    assert_eq!(out.trim(), "[0.10009765625 3.5 -2.]");
}

#[test]
fn an_impossible_host_allocation_is_an_error() {
    let dir = scratch("oom");
    let src =
        "@R.function\ndef main():\n    y = R.zeros(R.shape([100000, 100000, 100000]), \"float32\")\n    return y\n";
    let (code, _, err) = run(&dir, src, &[]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("binding `y`: cannot allocate a float32 tensor of shape [100000, 100000, 100000] on the host"),
        "{err}"
    );
    assert!(err.contains("is over the host memory limit of"), "{err}");
}
