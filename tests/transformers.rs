//! Micro transformers from Apache TVM 0.27's three front-end routes, run on the host and on the
//! GPU and compared with the reference of their route:
//!
//! - `nn`: models written with `tvm.relax.frontend.nn` (Llama with grouped-query attention and a
//!   TE rotary kernel, GPT-2; float32 and one float16 case), symbolic `seq_len`; reference TVM's
//!   own `tvm.compile(target="llvm")`.
//! - `export`: Hugging Face GPT-2, BERT and Llama through `torch.export` +
//!   `from_exported_program`, static and symbolic sequence length; reference torch.
//! - `onnx`: the same models through `torch.onnx.export` + `from_onnx`, static (the importer
//!   cannot take a symbolic length for them); reference ONNX Runtime.
//! - decoders added after the engine was written, through `torch.export` (a transformer not
//!   tried before must work the first time): Qwen2 (biased q/k/v, grouped-query attention),
//!   Mistral (a sliding-window mask narrower than the sequence), Phi (partial rotary embedding).
//!
//! The data in `tests/transformers/<case>/` (`prog_<kind>.py`, `data.bin`, `case.json`) is made
//! by `scripts/gen_transformer_cases.py`. Symbolic programs run at two sequence lengths.
//! Tolerance `|ours - expected| <= atol + rtol * |expected|`: float32 cases rtol 1e-3,
//! atol 1e-4; float16 cases 1e-2 for both.
//!
//! Programs that cannot run yet for a known missing piece are listed in `PENDING` with the
//! reason; the test asserts that they still fail, so that whoever lands the piece moves the
//! case to the passing set. Every other program must pass on both devices (the GPU half is
//! skipped when no wgpu adapter exists).
//!
//! Some programs run on the host only by default (`HOST_ONLY`, for CI time);
//! `RELAX_TRANSFORMERS_ALL_GPU=1` runs every program on the GPU too.
//! `cargo test --release --test transformers -- --nocapture` prints one line per run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use relax_engine::{ArrayValue, DeviceChoice, Engine, EngineConfig, Tensor, Value};
use relax_ir::DataType;
use serde::Deserialize;

/// Programs expected to fail until a missing piece lands: (case, program, reason).
const PENDING: &[(&str, &str, &str)] = &[];

/// Programs run on the host only unless `RELAX_TRANSFORMERS_ALL_GPU=1`: with a cold shader
/// cache, lavapipe's first-run pipeline compilation costs about 15 s (ONNX cases) to 45 s
/// (nn cases) per program on 2 busy cores, so CI runs six programs on the GPU (the float16 nn
/// Llama, the lenient ONNX Llama, the three symbolic torch.export programs of GPT-2, BERT and
/// Llama, and the symbolic Mistral with its sliding window): (case, program, why).
const HOST_ONLY: &[(&str, &str, &str)] = &[
    ("nn_llama_f32", "prog_dyn.py", GPU_TIME),
    ("nn_gpt2_f32", "prog_dyn.py", GPU_TIME),
    ("hf_gpt2_onnx", "prog_static.py", GPU_TIME),
    ("hf_bert_onnx", "prog_static.py", GPU_TIME),
    ("hf_bert_export", "prog_static.py", GPU_TIME),
    ("hf_gpt2_export", "prog_static.py", GPU_TIME),
    ("hf_llama_export", "prog_static.py", GPU_TIME),
    ("hf_qwen2_export", "prog_static.py", GPU_TIME),
    ("hf_qwen2_export", "prog_dyn.py", GPU_TIME),
    ("hf_mistral_export", "prog_static.py", GPU_TIME),
    ("hf_phi_export", "prog_static.py", GPU_TIME),
    ("hf_phi_export", "prog_dyn.py", GPU_TIME),
];

/// Why a program is in `HOST_ONLY`.
const GPU_TIME: &str = "GPU first-run compile time on lavapipe in CI";

#[derive(Deserialize)]
struct ArrayMeta {
    dtype: String,
    shape: Vec<i64>,
    offset: usize,
    nbytes: usize,
}

#[derive(Deserialize)]
struct RunMeta {
    seq_len: i64,
    inputs: Vec<String>,
    expected: String,
}

#[derive(Deserialize)]
struct ProgMeta {
    prog: String,
    weights: Vec<String>,
    runs: Vec<RunMeta>,
}

#[derive(Deserialize)]
struct CaseMeta {
    route: String,
    dtype: String,
    entry: String,
    lenient: bool,
    arrays: BTreeMap<String, ArrayMeta>,
    progs: Vec<ProgMeta>,
}

/// One case directory: its manifest and its data blob.
struct Case {
    name: String,
    dir: PathBuf,
    meta: CaseMeta,
    data: Vec<u8>,
}

impl Case {
    fn read(dir: &Path) -> Case {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let json = std::fs::read_to_string(dir.join("case.json")).unwrap_or_else(|e| panic!("{name}: case.json: {e}"));
        let meta: CaseMeta = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{name}: case.json: {e}"));
        let data = std::fs::read(dir.join("data.bin")).unwrap_or_else(|e| panic!("{name}: data.bin: {e}"));
        Case {
            name,
            dir: dir.to_path_buf(),
            meta,
            data,
        }
    }

    /// The named array as a host tensor.
    fn tensor(&self, name: &str) -> Result<Tensor, String> {
        let a = self.meta.arrays.get(name).ok_or_else(|| format!("no array {name}"))?;
        let bytes = self
            .data
            .get(a.offset..a.offset + a.nbytes)
            .ok_or_else(|| format!("array {name} lies outside data.bin"))?;
        let dtype: DataType = a.dtype.parse().map_err(|e| format!("array {name}: dtype: {e:?}"))?;
        Tensor::from_bytes(dtype, &a.shape, bytes.to_vec()).map_err(|e| format!("array {name}: {e}"))
    }

    fn tolerances(&self) -> (f64, f64) {
        if self.meta.dtype == "float16" {
            (1e-2, 1e-2)
        } else {
            (1e-3, 1e-4)
        }
    }
}

/// The elements of a float tensor as f64.
fn float_values(t: &Tensor) -> Result<Vec<f64>, String> {
    match t.to_array_value().map_err(|e| e.to_string())? {
        ArrayValue::F32(a) => Ok(a.iter().map(|&x| x as f64).collect()),
        ArrayValue::F16(a) => Ok(a.iter().map(|x| x.to_f64()).collect()),
        ArrayValue::F64(a) => Ok(a.iter().copied().collect()),
        other => Err(format!("expected a float result, got {other:?}")),
    }
}

/// Max |ours - expected|, or why `got` does not match `expected` within (rtol, atol).
fn compare(got: &Value, expected: &Tensor, (rtol, atol): (f64, f64)) -> Result<f64, String> {
    let mut got = got;
    while let Some(fields) = got.as_tuple() {
        got = fields.first().ok_or("the result is an empty tuple")?;
    }
    let t = got
        .as_tensor()
        .ok_or_else(|| format!("the result is not a tensor: {}", got.describe()))?;
    if t.shape() != expected.shape() {
        return Err(format!("shape {:?}, expected {:?}", t.shape(), expected.shape()));
    }
    let (g, e) = (float_values(t)?, float_values(expected)?);
    let mut max_diff = 0.0f64;
    for (i, (&a, &b)) in g.iter().zip(&e).enumerate() {
        let d = (a - b).abs();
        if d.is_nan() || d > atol + rtol * b.abs() {
            return Err(format!("element {i}: got {a}, expected {b}"));
        }
        max_diff = max_diff.max(d);
    }
    Ok(max_diff)
}

/// Outcome of one program on one device: (seq_len, max diff or error) per run.
fn run_prog(case: &Case, prog: &ProgMeta, device: DeviceChoice) -> Vec<(i64, Result<f64, String>)> {
    let fail_all = |e: String| prog.runs.iter().map(|r| (r.seq_len, Err(e.clone()))).collect();
    let src = match std::fs::read_to_string(case.dir.join(&prog.prog)) {
        Ok(s) => s,
        Err(e) => return fail_all(format!("cannot read {}: {e}", prog.prog)),
    };
    let module = match relax_ir::text::parse(&src) {
        Ok(p) => p.into_module(),
        Err(d) => return fail_all(format!("parse: {d}")),
    };
    let engine = Engine::new(EngineConfig {
        device,
        lenient: case.meta.lenient,
        ..EngineConfig::default()
    });
    let loaded = match engine.load(&module) {
        Ok(l) => l,
        Err(e) => return fail_all(format!("load: {e}")),
    };
    let weights: Result<Vec<Value>, String> = prog.weights.iter().map(|w| case.tensor(w).map(Value::Tensor)).collect();
    let weights = match weights {
        Ok(w) => w,
        Err(e) => return fail_all(e),
    };
    prog.runs
        .iter()
        .map(|run| {
            let result = (|| {
                let mut args = run
                    .inputs
                    .iter()
                    .map(|n| case.tensor(n).map(Value::Tensor))
                    .collect::<Result<Vec<_>, _>>()?;
                args.extend(weights.iter().cloned());
                let expected = case.tensor(&run.expected)?;
                let out = loaded.run(&case.meta.entry, &args).map_err(|e| format!("run: {e}"))?;
                compare(&out, &expected, case.tolerances())
            })();
            (run.seq_len, result)
        })
        .collect()
}

fn gpu_available() -> bool {
    match relax_gpu_runtime::GpuRuntime::shared_default() {
        Ok(_) => true,
        Err(e) => {
            println!("no wgpu adapter ({e}): skipping the GPU half");
            false
        }
    }
}

fn short(e: &str) -> String {
    let line = e.lines().next().unwrap_or("");
    line.chars().take(160).collect()
}

#[test]
fn transformers_match_their_references() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transformers");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("case.json").is_file())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no case in {}", root.display());
    let mut devices = vec![DeviceChoice::Cpu];
    if gpu_available() {
        devices.push(DeviceChoice::Gpu);
    }
    let all_gpu = std::env::var("RELAX_TRANSFORMERS_ALL_GPU").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    let mut pending_seen = Vec::new();
    println!(
        "{:<18} {:<7} {:<15} {:>4} {:<4} {:>9}  result",
        "case", "route", "program", "seq", "dev", "ms"
    );
    for dir in &dirs {
        let case = Case::read(dir);
        for prog in &case.meta.progs {
            let pending = PENDING.iter().find(|(c, p, _)| *c == case.name && *p == prog.prog);
            let mut any_failed = false;
            let host_only = !all_gpu && HOST_ONLY.iter().any(|(c, p, _)| *c == case.name && *p == prog.prog);
            for &device in &devices {
                if host_only && device == DeviceChoice::Gpu {
                    continue;
                }
                let t = Instant::now();
                let results = run_prog(&case, prog, device);
                let ms = t.elapsed().as_secs_f64() * 1e3;
                let dev = if device == DeviceChoice::Gpu { "gpu" } else { "host" };
                for (seq, r) in results {
                    let what = match &r {
                        Ok(d) => format!("ok, max |diff| {d:.2e}"),
                        Err(e) => format!("FAILED: {}", short(e)),
                    };
                    println!(
                        "{:<18} {:<7} {:<15} {seq:>4} {dev:<4} {ms:>9.0}  {what}",
                        case.name, case.meta.route, prog.prog
                    );
                    if let Err(e) = r {
                        any_failed = true;
                        if pending.is_none() {
                            failures.push(format!("{} {} seq {seq} {dev}: {e}", case.name, prog.prog));
                        }
                    }
                }
            }
            if let Some((c, p, reason)) = pending {
                pending_seen.push((*c, *p));
                if !any_failed {
                    failures.push(format!(
                        "{c} {p} passes now: move it out of PENDING (it was pending for: {reason})"
                    ));
                }
            }
        }
    }
    for (c, p, _) in PENDING {
        if !pending_seen.contains(&(*c, *p)) {
            failures.push(format!(
                "PENDING names {c} {p}, which is not a program in tests/transformers"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
