//! `relax run --params` (arguments by parameter name from an `.npz`), `--output`'s
//! summary, and GPU runs on a machine without `XDG_RUNTIME_DIR`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{stderr, stdout};
use ndarray::{ArrayD, IxDyn};
use ndarray_npy::{NpzWriter, WriteNpyExt};

const PROG: &str = r#"# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((2, 3), dtype="float32"), w: R.Tensor((3,), dtype="float32"), b: R.Tensor((3,), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
    y = R.multiply(x, w)
    z = R.add(y, b)
    return z
"#;

/// A fresh directory holding the program and `x.npy`.
fn setup(name: &str) -> common::Scratch {
    let dir = common::Scratch::new("run-params", name);
    std::fs::write(dir.join("prog.py"), PROG).expect("write prog");
    let x = ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).expect("x");
    x.write_npy(std::fs::File::create(dir.join("x.npy")).expect("x.npy"))
        .expect("write x");
    dir
}

/// An `.npz` entry: name, shape, values.
type Entry<'a> = (&'a str, &'a [usize], Vec<f32>);

/// Write `entries` to `dir/name`.
fn npz(dir: &Path, name: &str, entries: &[Entry]) -> PathBuf {
    let path = dir.join(name);
    let mut z = NpzWriter::new(std::fs::File::create(&path).expect("npz"));
    for (n, shape, v) in entries {
        let a = ArrayD::from_shape_vec(IxDyn(shape), v.clone()).expect("shape");
        z.add_array(*n, &a).expect("add");
    }
    z.finish().expect("finish");
    path
}

fn relax(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relax"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the relax binary runs")
}

/// `relax run prog.py --device cpu --params w.npz --input x.npy`, then `extra`.
fn run_with_weights(dir: &Path, extra: &[&str]) -> Output {
    let base = [
        "run", "prog.py", "--device", "cpu", "--params", "w.npz", "--input", "x.npy",
    ];
    relax(dir, &[&base[..], extra].concat())
}

/// The weight `w = [10, 20, 30]` as an `.npz` entry.
fn w_entry() -> Entry<'static> {
    ("w", &[3], vec![10.0, 20.0, 30.0])
}

/// The bias `b = [0.5, 0.5, 0.5]` as an `.npz` entry.
fn b_entry() -> Entry<'static> {
    ("b", &[3], vec![0.5; 3])
}

/// The JSON that [`run_with_weights`] with `extra` and `--json` prints, asserting
/// that the run succeeds.
fn run_json(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let o = run_with_weights(dir, &[extra, &["--json"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("json")
}

#[test]
fn params_bind_by_name_and_inputs_fill_the_rest() {
    let dir = setup("ok");
    // Entries in a different order than the parameters: binding is by name.
    npz(&dir, "w.npz", &[b_entry(), w_entry()]);
    let j = run_json(&dir, &[]);
    assert_eq!(
        j["outputs"][0]["data"],
        serde_json::json!([[10.5, 40.5, 90.5], [40.5, 100.5, 180.5]])
    );
}

#[test]
fn params_errors_name_the_parameter() {
    let dir = setup("errors");
    let cases: Vec<(&str, Vec<Entry>, Vec<&str>)> = vec![
        // `b` is neither in the file nor given with --input.
        (
            "missing.npz",
            vec![("w", &[3], vec![1.0; 3])],
            vec!["parameter `b`", "no argument"],
        ),
        // `bias` is no parameter of main.
        (
            "extra.npz",
            vec![
                ("w", &[3], vec![1.0; 3]),
                ("b", &[3], vec![1.0; 3]),
                ("bias", &[3], vec![1.0; 3]),
            ],
            vec!["no parameter `bias`"],
        ),
        // `w` has the wrong shape.
        (
            "shape.npz",
            vec![("w", &[4], vec![1.0; 4]), ("b", &[3], vec![1.0; 3])],
            vec!["parameter `w`", "expected shape (3,)", "got shape (4,)"],
        ),
    ];
    for (file, entries, wanted) in cases {
        npz(&dir, file, &entries);
        let o = relax(
            &dir,
            &[
                "run", "prog.py", "--device", "cpu", "--params", file, "--input", "x.npy",
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{file}: {}", stderr(&o));
        let e = stderr(&o);
        for w in wanted {
            assert!(e.contains(w), "{file}: stderr lacks {w:?}: {e}");
        }
    }
    // A wrong dtype: `w` as float64.
    let path = dir.join("dtype.npz");
    let mut z = NpzWriter::new(std::fs::File::create(&path).expect("npz"));
    z.add_array("w", &ArrayD::<f64>::zeros(IxDyn(&[3]))).expect("add");
    z.add_array("b", &ArrayD::<f32>::zeros(IxDyn(&[3]))).expect("add");
    z.finish().expect("finish");
    let o = relax(
        &dir,
        &[
            "run",
            "prog.py",
            "--device",
            "cpu",
            "--params",
            "dtype.npz",
            "--input",
            "x.npy",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("parameter `w`") && e.contains("expected dtype float32, got float64"),
        "{e}"
    );
    // Too many positional inputs.
    npz(&dir, "all.npz", &[("w", &[3], vec![1.0; 3]), ("b", &[3], vec![1.0; 3])]);
    let o = relax(
        &dir,
        &[
            "run", "prog.py", "--device", "cpu", "--params", "all.npz", "--input", "x.npy", "--input", "x.npy",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("too many"), "{}", stderr(&o));
    // A file that does not exist is a usage error.
    let o = relax(&dir, &["run", "prog.py", "--params", "nope.npz", "--input", "x.npy"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nope.npz"), "{}", stderr(&o));
}

#[test]
fn output_prints_a_summary_and_json_everything() {
    let dir = setup("output");
    npz(&dir, "w.npz", &[w_entry(), b_entry()]);
    let o = run_with_weights(&dir, &["--output", "out.npy"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("shape (2, 3), float32"), "{s}");
    assert!(s.contains("min 10.500000, max 180.500000, mean 77.166667"), "{s}");
    assert!(s.lines().count() <= 3, "a summary, not every value: {s}");
    let written = std::fs::read(dir.join("out.npy")).expect("out.npy written");
    let a = <ArrayD<f32> as ndarray_npy::ReadNpyExt>::read_npy(written.as_slice()).expect("npy");
    assert_eq!(
        a.iter().copied().collect::<Vec<_>>(),
        vec![10.5, 40.5, 90.5, 40.5, 100.5, 180.5]
    );
    // --json still prints every value.
    let j = run_json(&dir, &["--output", "out2.npy"]);
    assert_eq!(j["outputs"][0]["data"][1][2], serde_json::json!(180.5));
}

#[test]
fn gpu_run_without_xdg_runtime_dir_is_quiet() {
    if let Err(e) = relax_gpu_runtime::GpuRuntime::shared_default() {
        println!("no wgpu adapter ({e}): skipped");
        return;
    }
    let dir = setup("xdg");
    npz(&dir, "w.npz", &[("w", &[3], vec![1.0; 3]), ("b", &[3], vec![0.0; 3])]);
    let o = Command::new(env!("CARGO_BIN_EXE_relax"))
        .current_dir(&dir)
        .env_remove("XDG_RUNTIME_DIR")
        .args([
            "run", "prog.py", "--device", "gpu", "--params", "w.npz", "--input", "x.npy",
        ])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("XDG_RUNTIME_DIR"), "{}", stderr(&o));
}

#[test]
fn many_inputs_positionally_and_by_name() {
    // 270 parameters, like ResNet-50's weights: all as --input files, then all but the
    // first by name from one .npz.
    const N: usize = 270;
    let dir = setup("many");
    let params: Vec<String> = (0..N)
        .map(|i| format!("p{i}: R.Tensor((1,), dtype=\"float32\")"))
        .collect();
    let mut body = String::from("    s0 = R.add(p0, p1)\n");
    for i in 2..N {
        body += &format!("    s{} = R.add(s{}, p{i})\n", i - 1, i - 2);
    }
    body += &format!("    return s{}\n", N - 2);
    let prog = format!(
        "# from tvm.script import relax as R\n@R.function\ndef main({}) -> R.Tensor((1,), dtype=\"float32\"):\n{body}",
        params.join(", ")
    );
    std::fs::write(dir.join("many.py"), prog).expect("write");
    let mut args = vec![
        "run".to_string(),
        "many.py".into(),
        "--device".into(),
        "cpu".into(),
        "--json".into(),
    ];
    let mut entries = Vec::new();
    for i in 0..N {
        let name = format!("in{i:04}.npy");
        ArrayD::from_shape_vec(IxDyn(&[1]), vec![i as f32])
            .expect("a")
            .write_npy(std::fs::File::create(dir.join(&name)).expect("create"))
            .expect("write");
        args.push("--input".into());
        args.push(name);
        entries.push((format!("p{i}"), vec![i as f32]));
    }
    let want = serde_json::json!([(N * (N - 1) / 2) as f64]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = relax(&dir, &argv);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(j["outputs"][0]["data"], want);

    let named: Vec<Entry> = entries[1..]
        .iter()
        .map(|(n, v)| (n.as_str(), &[1usize][..], v.clone()))
        .collect();
    npz(&dir, "many.npz", &named);
    let o = relax(
        &dir,
        &[
            "run",
            "many.py",
            "--device",
            "cpu",
            "--json",
            "--params",
            "many.npz",
            "--input",
            "in0000.npy",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(j["outputs"][0]["data"], want);
}
