//! `relax run` takes an `R.call_packed` of a pure builtin inside a dataflow block
//! (as TVM's ONNX importer writes `Expand`) as `tvm.compile` does: it runs, with a
//! warning. `relax run --strict` and `relax check` reject it, as TVM's
//! well-formedness check does.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

fn relax() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_relax"));
    c.env("NODEVICE_SELECT", "1");
    c
}

/// `test_expand_dim_unchanged` of ONNX's node tests, as `from_onnx` prints it.
const EXPAND: &str = r#"# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(data: R.Tensor((3, 1), dtype="float32"), new_shape: R.Tensor((2,), dtype="int64")) -> R.Tensor(dtype="float32", ndim=2):
        R.func_attr({"num_input": 2})
        x_0 = T.int64()
        x_1 = T.int64()
        with R.dataflow():
            lv: R.Shape(ndim=2) = R.call_packed("vm.builtin.tensor_to_shape", new_shape, ty_args=(R.Shape(ndim=2),))
            lv1: R.Shape([x_0, x_1]) = R.match_cast(lv, R.Shape([x_0, x_1]))
            gv: R.Tensor((x_0, x_1), dtype="float32") = R.broadcast_to(data, R.shape([x_0, x_1]))
            R.output(gv)
        return gv
"#;

const INPUTS: &str = r#"[{"dtype": "float32", "shape": [3, 1], "data": [[1.0], [2.0], [3.0]]},
 {"dtype": "int64", "shape": [2], "data": [3, 4]}]"#;

fn files(name: &str) -> (common::Scratch, PathBuf, PathBuf) {
    let dir = common::Scratch::new("run-lenient", name);
    let (prog, inputs) = (dir.join("prog.py"), dir.join("inputs.json"));
    std::fs::write(&prog, EXPAND).expect("write");
    std::fs::write(&inputs, INPUTS).expect("write");
    (dir, prog, inputs)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(name: &str, extra: &[&str]) -> Output {
    let (_dir, prog, inputs) = files(name);
    relax()
        .arg("run")
        .arg(&prog)
        .args(["--device", "cpu", "--json", "--inputs-json"])
        .arg(&inputs)
        .args(extra)
        .output()
        .expect("relax runs")
}

#[test]
fn run_accepts_a_pure_builtin_call_packed_in_a_dataflow_block_with_a_warning() {
    for extra in [&[][..], &["--lenient"][..]] {
        let out = run("default", extra);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {stderr}");
        assert!(stderr.contains("lenient/pure-packed"), "{extra:?}: {stderr}");
        let v: serde_json::Value = serde_json::from_str(&stdout).expect("json");
        let got = &v["outputs"][0];
        assert_eq!(got["shape"], serde_json::json!([3, 4]), "{stdout}");
        assert_eq!(
            got["data"],
            serde_json::json!([[1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0], [3.0, 3.0, 3.0, 3.0]]),
            "{stdout}"
        );
    }
}

#[test]
fn strict_run_and_check_reject_it() {
    let out = run("strict", &["--strict"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("purity"), "{}", text(&out.stderr));
    let out = run("strict", &["--strict", "--lenient"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let (_dir, prog, _) = files("strict");
    let out = relax().arg("check").arg(&prog).output().expect("relax runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("purity"), "{}", text(&out.stderr));
}
