//! End-to-end tests of the `relax` binary.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::{stderr, stdout};

/// Panic unless `text` (a command's output) contains `fragment`.
fn has(text: &str, fragment: &str) {
    assert!(text.contains(fragment), "missing {fragment:?} in\n{text}");
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn relax(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relax"))
        .args(args)
        .output()
        .expect("the relax binary runs")
}

fn path_str(p: &std::path::Path) -> String {
    p.to_str().expect("utf-8 path").to_string()
}

#[test]
fn help_documents_subcommands_and_exit_codes() {
    let o = relax(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let s = stdout(&o);
    for cmd in ["check", "print", "wgsl", "run"] {
        assert!(s.contains(cmd), "--help lacks {cmd}: {s}");
    }
    has(&s, "Exit status");
}

#[test]
fn print_mlp_golden() {
    let mlp = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/relax/mlp.py");
    let o = relax(&["print", &path_str(&mlp)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let golden = std::fs::read_to_string(data("mlp.golden.py")).expect("golden file");
    assert_eq!(stdout(&o), golden);
}

#[test]
fn parse_error_has_location() {
    let f = data("parse_error.py");
    let o = relax(&["print", &path_str(&f)]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    has(&e, "parse_error.py:");
    // file:line:col
    let loc = e
        .split("parse_error.py:")
        .nth(1)
        .expect("location")
        .split(|c: char| !c.is_ascii_digit() && c != ':')
        .next()
        .expect("digits");
    let parts: Vec<_> = loc.split(':').filter(|s| !s.is_empty()).collect();
    assert!(parts.len() >= 2, "no line:col in {e}");
}

#[test]
fn missing_file_is_exit_2() {
    for cmd in ["print", "check", "wgsl", "run"] {
        let o = relax(&[cmd, "/nonexistent/dir/nothing.py"]);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stderr(&o));
        assert!(stderr(&o).contains("cannot read"), "{cmd}: {}", stderr(&o));
    }
}

#[test]
fn check_valid_and_invalid() {
    let o = relax(&["check", &path_str(&data("valid.py"))]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = relax(&["check", &path_str(&data("invalid.py"))]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn check_json_schema() {
    let o = relax(&["check", "--json", &path_str(&data("valid.py"))]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["well_formed"], true);
    assert_eq!(v["diagnostics"], serde_json::json!([]));
    let bindings = v["bindings"].as_array().expect("bindings");
    let z = bindings.iter().find(|b| b["var"] == "z").expect("binding z");
    assert_eq!(z["function"], "main");
    assert_eq!(z["struct_info"], "R.Tensor((2, 3), dtype=\"float32\")");

    let o = relax(&["check", "--json", &path_str(&data("invalid.py"))]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let d = &v["diagnostics"].as_array().expect("diagnostics")[0];
    assert_eq!(d["severity"], "error");
    assert!(d["line"].as_u64().is_some() && d["rule"].is_string(), "{d}");
}

#[test]
fn wgsl_of_a_primfunc() {
    let o = relax(&["wgsl", &path_str(&data("add_one.py"))]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = stdout(&o);
    has(&s, "@compute");
    has(&s, "// PrimFunc add_one");
    has(&s, "workgroup_size");
    let o = relax(&["wgsl", "--func", "nope", &path_str(&data("add_one.py"))]);
    assert_eq!(o.status.code(), Some(1));
}

/// The arguments of `relax run FILE --entry pair --device cpu` followed by `extra`.
fn pair_on_cpu<'a>(file: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    [&["run", file, "--entry", "pair", "--device", "cpu"][..], extra].concat()
}

fn run_json(args: &[&str]) -> serde_json::Value {
    let o = relax(args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("JSON")
}

#[test]
fn run_call_tir_json() {
    let f = path_str(&data("add_one.py"));
    let inputs = path_str(&data("add_one_inputs.json"));
    let v = run_json(&["run", &f, "--device", "cpu", "--inputs-json", &inputs, "--json"]);
    assert_eq!(
        v,
        serde_json::json!({
            "outputs": [{"dtype": "float32", "shape": [2, 3],
                         "data": [[1.5, 2.5, 3.5], [4.75, -2.5, 2.0]]}],
            "structure": "tensor",
            "device": "cpu",
        })
    );
    let v = run_json(&pair_on_cpu(&f, &["--inputs-json", &inputs, "--json"]));
    assert_eq!(v["structure"], serde_json::json!([0, [1, 2]]));
    assert_eq!(
        v["outputs"][0]["data"],
        serde_json::json!([[0.0, 1.0, 2.0], [3.25, -4.0, 0.5]])
    );
    assert_eq!(
        v["outputs"][2]["data"],
        serde_json::json!([[3.0, 4.0, 5.0], [6.25, -1.0, 3.5]])
    );
}

#[test]
fn run_wrong_input_shape() {
    let f = path_str(&data("add_one.py"));
    let inputs = path_str(&data("bad_shape_inputs.json"));
    let o = relax(&["run", &f, "--device", "cpu", "--inputs-json", &inputs]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("parameter `x`") && e.contains("expected shape (2, 3)") && e.contains("[3, 2]"),
        "{e}"
    );
    let o = relax(&["run", &f, "--device", "cpu"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("takes 1 input(s) (x), got 0"), "{}", stderr(&o));
}

#[test]
fn run_npy_round_trip() {
    use ndarray_npy::{ReadNpyExt, WriteNpyExt};
    let dir = std::env::temp_dir().join(format!("relax-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("x.npy");
    let a = ndarray::Array2::<f32>::from_shape_vec((2, 3), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]).expect("array");
    a.write_npy(std::fs::File::create(&input).expect("create"))
        .expect("write");
    let out = dir.join("y.npy");
    let f = path_str(&data("add_one.py"));
    let o = relax(&[
        "run",
        &f,
        "--device",
        "cpu",
        "--input",
        &path_str(&input),
        "--output",
        &path_str(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let y = ndarray::ArrayD::<f32>::read_npy(std::fs::File::open(&out).expect("open")).expect("read");
    assert_eq!(y.shape(), &[2, 3]);
    assert_eq!(
        y.iter().copied().collect::<Vec<_>>(),
        vec![1.5, 2.5, 3.5, 4.5, 5.5, 6.5]
    );
    // Several tensors go to an .npz.
    let npz = dir.join("y.npz");
    let o = relax(&pair_on_cpu(
        &f,
        &["--input", &path_str(&input), "--output", &path_str(&npz)],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut z = ndarray_npy::NpzReader::new(std::fs::File::open(&npz).expect("open")).expect("npz");
    let c: ndarray::ArrayD<f32> = z.by_name("arr_2").expect("arr_2");
    assert_eq!(
        c.iter().copied().collect::<Vec<_>>(),
        vec![3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether a wgpu adapter exists (lavapipe counts); GPU halves say so when not.
fn gpu_available() -> bool {
    match relax_gpu_runtime::GpuRuntime::shared_default() {
        Ok(_) => true,
        Err(e) => {
            eprintln!("no GPU adapter: GPU half not checked ({e})");
            false
        }
    }
}

#[test]
fn run_json_on_gpu_matches_cpu() {
    let f = path_str(&data("add_one.py"));
    let inputs = path_str(&data("add_one_inputs.json"));
    let args = |dev: &'static str| {
        vec![
            "run".to_string(),
            f.clone(),
            "--entry".into(),
            "pair".into(),
            "--device".into(),
            dev.into(),
            "--inputs-json".into(),
            inputs.clone(),
            "--json".into(),
        ]
    };
    let run = |dev: &'static str| {
        let a = args(dev);
        run_json(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let cpu = run("cpu");
    assert_eq!(cpu["device"], "cpu");
    assert_eq!(
        cpu["outputs"][2]["data"],
        serde_json::json!([[3.0, 4.0, 5.0], [6.25, -1.0, 3.5]])
    );
    if gpu_available() {
        let gpu = run("gpu");
        assert_eq!(gpu["device"], "gpu");
        assert_eq!(gpu["outputs"], cpu["outputs"]);
        assert_eq!(gpu["structure"], cpu["structure"]);
        // auto takes a real adapter and says which; a CPU-type adapter (lavapipe)
        // leaves unplaced work on the host, and says why.
        let a = args("auto");
        let o = relax(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        assert_eq!(v["outputs"], cpu["outputs"]);
        if stderr(&o).contains("is a CPU-type device") {
            assert_eq!(v["device"], "cpu");
        } else {
            assert!(stderr(&o).contains("GPU adapter"), "{}", stderr(&o));
            assert_eq!(v["device"], "gpu");
        }
    }
}

#[test]
fn run_stats_count_kernels_and_copies() {
    let f = path_str(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/e2e/vdevice_two.py"));
    let inputs = path_str(&data("vdevice_two_inputs.json"));
    let run = |dev: &str| {
        let o = relax(&[
            "run",
            &f,
            "--device",
            dev,
            "--inputs-json",
            &inputs,
            "--repeat",
            "3",
            "--stats",
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{dev}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        // d = (x + y) * y - x
        assert_eq!(
            v["outputs"][0]["data"],
            serde_json::json!([[-0.25, -3.0, 7.0], [-4.0, 1.0, -8.75]]),
            "{dev}"
        );
        stderr(&o)
    };
    // (device, kernels and packed calls, copies): three to_vdevice per run, host
    // copies of 24 bytes on the CPU. The addition and the subtraction (host VDevice)
    // run in the host kernel library (packed calls) on both; the multiplication (a
    // GPU VDevice, a label on the CPU) as a compiled PrimFunc.
    let mut expected = vec![(
        "cpu",
        "stats: runs 3, kernels run 3 (3 host, 0 gpu), packed calls 6",
        "copies 9, bytes moved 216 (uploads 0 / 0 bytes, readbacks 0 / 0 bytes",
    )];
    if gpu_available() {
        expected.push((
            "gpu",
            "kernels run 3 (0 host, 3 gpu), packed calls 6",
            "copies 9, bytes moved 216 (uploads 6 / 144 bytes, readbacks 3 / 72 bytes, device-to-device 0 / 0 bytes)",
        ));
    }
    for (dev, kernels, copies) in expected {
        let e = run(dev);
        has(&e, kernels);
        has(&e, "kernels compiled 1, kernel cache hits 2");
        has(&e, copies);
    }
}

#[test]
fn run_wrong_input_shape_on_every_device() {
    let f = path_str(&data("add_one.py"));
    let inputs = path_str(&data("bad_shape_inputs.json"));
    let mut devices = vec!["cpu", "auto"];
    if gpu_available() {
        devices.push("gpu");
    }
    for dev in devices {
        let o = relax(&["run", &f, "--device", dev, "--inputs-json", &inputs, "--json"]);
        assert_eq!(o.status.code(), Some(1), "{dev}");
        let e = stderr(&o);
        assert!(
            e.contains("error: input 0 (parameter `x`): expected shape (2, 3), got [3, 2]"),
            "{dev}: {e}"
        );
        assert!(o.stdout.is_empty(), "{dev}: nothing on stdout");
    }
}

/// `relax print --pass fuse-ops --pass fuse-tir` on a small MLP: operators are
/// legalized first (FuseOps requires it), then each matmul with its epilogue
/// becomes one fused PrimFunc called from `main`.
#[test]
fn print_fuse_ops_fuse_tir_shows_fused_functions() {
    let mlp = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../transform/tests/data/mlp.py");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_relax"))
        .args(["print", "--pass", "fuse-ops", "--pass", "fuse-tir", "--time-passes"])
        .arg(&mlp)
        .output()
        .expect("the relax binary runs");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    has(&out, "lv2 = R.call_tir(cls.fused_matmul_add_relu, (x, w0, b0)");
    has(&out, "def fused_matmul_add_relu(x: T.Buffer(");
    has(&out, "T.max(lv0[v_i0, v_i1] + b0[v_i1], T.float32(0.0))");
    has(&out, "def fused_matmul1_add1_tir_exp_multiply(");
    for pass in ["check", "legalize", "fuse-ops", "fuse-tir"] {
        has(&err, &format!("pass {pass} "));
    }
}

/// A legalization that declines a call is a `legalize/skipped` warning with
/// its reason, from `relax check` and from `relax print --pass legalize`.
#[test]
fn skipped_legalizations_are_warnings() {
    let file = path_str(&data("legalize_skipped.py"));
    let o = relax(&["check", &file]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    has(&e, "ok (2 warnings)");
    assert_eq!(e.matches("legalize/skipped").count(), 2, "{e}");
    assert!(
        e.contains("`relax.exp` is left as a call") && e.contains("the output shape is not known"),
        "{e}"
    );
    has(&e, "an output layout other than the data layout");
    let o = relax(&["print", &file, "--pass", "check", "--pass", "legalize"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o).matches("legalize/skipped").count(), 2, "{}", stderr(&o));
    assert!(stdout(&o).contains("R.exp(x)"), "{}", stdout(&o));
}

/// `relax run` runs `static-plan-block-memory` in the preparation pipeline (shown by
/// `--time-passes`) and gives the same result as with `--no-static-memory-plan`.
#[test]
fn run_static_memory_plan_same_result() {
    let f = path_str(&data("add_one.py"));
    let inputs = path_str(&data("add_one_inputs.json"));
    let base = ["run", &f, "--device", "cpu", "--inputs-json", &inputs, "--json"];
    let mut args = base.to_vec();
    args.push("--no-static-memory-plan");
    let plain = run_json(&args);
    let mut args = base.to_vec();
    args.push("--time-passes");
    let o = relax(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("pass static-plan-block-memory"), "{}", stderr(&o));
    let planned: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(planned, plain);
    let o = relax(&[
        "run",
        &f,
        "--device",
        "cpu",
        "--inputs-json",
        &inputs,
        "--time-passes",
        "--no-static-memory-plan",
    ]);
    assert!(!stderr(&o).contains("static-plan-block-memory"), "{}", stderr(&o));
}
