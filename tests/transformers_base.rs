//! Base-size transformers (BERT-base, GPT-2 small, ...) as Apache TVM 0.27's front ends print
//! them, run on the host (and the GPU with `RELAX_TRANSFORMERS_BASE_GPU=1`) and compared with
//! the reference of their route (torch for `torch.export`, ONNX Runtime for ONNX; float32 rtol
//! 1e-3, atol 1e-4 — the same bound as the micro cases of `tests/transformers.rs`).
//!
//! The cases are too large for the repository: make them with the transformer generator
//! (`gen_hf.py OUT --model bert|gpt2|llama --preset base --static-seq 128 --seq 128`: one
//! directory `hf_<model>_<preset>_<route>/` per route, with `meta.json`, `prog_*.py`, the
//! arguments as `.npy` and the reference) and run
//! `RELAX_TRANSFORMERS_BASE_DIR=OUT cargo test --release --test transformers_base -- --ignored --nocapture`.
//! Without the variable the test says so and checks nothing; it is ignored by default (minutes
//! per case on two cores).

use std::path::{Path, PathBuf};
use std::time::Instant;

use relax_engine::params::read_npy;
use relax_engine::{ArrayValue, DeviceChoice, Engine, EngineConfig, Tensor, Value};
use serde::Deserialize;

#[derive(Deserialize)]
struct Run {
    seq_len: i64,
    args: Vec<String>,
    expected: String,
}

#[derive(Deserialize)]
struct Prog {
    prog: String,
    #[serde(default)]
    runs: Vec<Run>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Meta {
    route: String,
    #[serde(default)]
    progs: Vec<Prog>,
}

/// The elements of a float tensor as f64.
fn floats(t: &Tensor) -> Result<Vec<f64>, String> {
    match t.to_array_value().map_err(|e| e.to_string())? {
        ArrayValue::F32(a) => Ok(a.iter().map(|&x| x as f64).collect()),
        ArrayValue::F16(a) => Ok(a.iter().map(|x| x.to_f64()).collect()),
        ArrayValue::F64(a) => Ok(a.iter().copied().collect()),
        other => Err(format!("expected a float result, got {other:?}")),
    }
}

/// Max |ours - expected|, or the first element outside `atol + rtol * |expected|`.
fn compare(got: &Value, want: &Tensor) -> Result<f64, String> {
    let mut got = got;
    while let Some(f) = got.as_tuple() {
        got = f.first().ok_or("the result is an empty tuple")?;
    }
    let t = got.as_tensor().ok_or("the result is not a tensor")?;
    if t.shape() != want.shape() {
        return Err(format!("shape {:?}, expected {:?}", t.shape(), want.shape()));
    }
    let (g, e) = (floats(t)?, floats(want)?);
    let mut max = 0.0f64;
    for (i, (a, b)) in g.iter().zip(&e).enumerate() {
        let d = (a - b).abs();
        if d.is_nan() || d > 1e-4 + 1e-3 * b.abs() {
            return Err(format!("element {i}: got {a}, expected {b}"));
        }
        max = max.max(d);
    }
    Ok(max)
}

fn run_case(dir: &Path, device: DeviceChoice) -> Vec<String> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut failures = Vec::new();
    let meta: Meta = match std::fs::read_to_string(dir.join("meta.json"))
        .map_err(|e| e.to_string())
        .and_then(|s| serde_json::from_str(&s).map_err(|e| e.to_string()))
    {
        Ok(m) => m,
        Err(e) => return vec![format!("{name}: meta.json: {e}")],
    };
    if meta.progs.is_empty() {
        println!("{name:<24} no programs in meta.json (not a gen_hf.py case directory): skipped");
    }
    for prog in &meta.progs {
        if let Some(e) = &prog.error {
            // The front end could not make this program (TVM's importer failed): nothing to run.
            println!(
                "{name:<24} {:<15} skipped: TVM's front end failed: {}",
                prog.prog,
                e.lines().next().unwrap_or("")
            );
            continue;
        }
        let result = (|| -> Result<Vec<(i64, f64, f64)>, String> {
            let src = std::fs::read_to_string(dir.join(&prog.prog)).map_err(|e| e.to_string())?;
            let module = relax_ir::text::parse(&src)
                .map_err(|d| format!("parse: {d}"))?
                .into_module();
            let engine = Engine::new(EngineConfig {
                device,
                // The ONNX route's Llama calls vm.builtin.tensor_to_shape in a dataflow block.
                lenient: meta.route == "onnx",
                ..EngineConfig::default()
            });
            let loaded = engine.load(&module).map_err(|e| format!("load: {e}"))?;
            let mut out = Vec::new();
            for run in &prog.runs {
                let args = run
                    .args
                    .iter()
                    .map(|a| {
                        read_npy(&dir.join(a))
                            .map(Value::Tensor)
                            .map_err(|e| format!("{a}: {e}"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let want = read_npy(&dir.join(&run.expected)).map_err(|e| format!("{}: {e}", run.expected))?;
                let t = Instant::now();
                let got = loaded.run("main", &args).map_err(|e| format!("run: {e}"))?;
                let ms = t.elapsed().as_secs_f64() * 1e3;
                let d = compare(&got, &want).map_err(|e| format!("seq {}: {e}", run.seq_len))?;
                out.push((run.seq_len, ms, d));
            }
            Ok(out)
        })();
        match result {
            Ok(runs) => {
                for (seq, ms, d) in runs {
                    println!(
                        "{name:<24} {:<15} seq {seq:>4} {device:?}: ok, first run {ms:.0} ms, max |diff| {d:.2e}",
                        prog.prog
                    );
                }
            }
            Err(e) => {
                println!("{name:<24} {:<15} {device:?}: FAILED: {e}", prog.prog);
                failures.push(format!("{name} {} {device:?}: {e}", prog.prog));
            }
        }
    }
    failures
}

#[test]
#[ignore = "reads generated base-size cases (RELAX_TRANSFORMERS_BASE_DIR); minutes per case"]
fn base_transformers_match_their_references() {
    let Some(root) = std::env::var_os("RELAX_TRANSFORMERS_BASE_DIR").map(PathBuf::from) else {
        println!("RELAX_TRANSFORMERS_BASE_DIR is not set: no base-size case checked");
        return;
    };
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("meta.json").is_file())
        .collect();
    dirs.sort();
    assert!(
        !dirs.is_empty(),
        "no case directory (with meta.json) in {}",
        root.display()
    );
    let mut devices = vec![DeviceChoice::Cpu];
    if std::env::var("RELAX_TRANSFORMERS_BASE_GPU").is_ok_and(|v| v == "1") {
        devices.push(DeviceChoice::Gpu);
    }
    let mut failures = Vec::new();
    for dir in &dirs {
        for &d in &devices {
            failures.extend(run_case(dir, d));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
