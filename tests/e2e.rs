//! End-to-end programs: every `tests/e2e/<name>.json` names a TVMScript program
//! (`tests/e2e/<name>.py`), its inputs and the outputs Apache TVM 0.27 computed for
//! them (`scripts/gen_e2e.py`). Each program is parsed with `relax_ir::text::parse`,
//! run with the engine configured for the CPU and for the GPU, and compared with the
//! expected outputs: float32 within `rtol * |expected| + atol` (the tolerances stored
//! in the data file: 1e-5 relative, 1e-4 for transcendental-heavy programs, 1e-6
//! absolute), integers and booleans exactly.
//!
//! The test prints a table of all programs with the reason of every failure, and fails
//! when a program listed in [`PASSING`] for a device does not pass there (a
//! regression). Programs that pass but are not listed are reported so the list can
//! grow.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use relax_engine::{DeviceChoice, Engine, EngineConfig, EngineError, Purity, Tensor, Value};
use relax_ir::DataType;
use serde::Deserialize;

/// Programs known to pass, with the configurations they pass on: a failure of any of
/// these is a regression and fails the test.
const PASSING: &[(&str, Device)] = &[
    ("arg_scan", Device::Cpu),
    ("arg_scan", Device::Gpu),
    ("attention", Device::Cpu),
    ("attention", Device::Gpu),
    ("attention_ops", Device::Cpu),
    ("attention_ops", Device::Gpu),
    ("batch_norm_pad", Device::Cpu),
    ("batch_norm_pad", Device::Gpu),
    ("binary_float", Device::Cpu),
    ("binary_float", Device::Gpu),
    ("binary_int", Device::Cpu),
    ("binary_int", Device::Gpu),
    ("bitwise_slice", Device::Cpu),
    ("bitwise_slice", Device::Gpu),
    ("builtins_misc", Device::Cpu),
    ("builtins_misc", Device::Gpu),
    ("call_tir_prim", Device::Cpu),
    ("call_tir_prim", Device::Gpu),
    ("closure", Device::Cpu),
    ("closure", Device::Gpu),
    ("collapse_sum", Device::Cpu),
    ("collapse_sum", Device::Gpu),
    ("compare_where", Device::Cpu),
    ("compare_where", Device::Gpu),
    ("concat_split", Device::Cpu),
    ("concat_split", Device::Gpu),
    ("conv2d", Device::Cpu),
    ("conv2d", Device::Gpu),
    ("conv_pool_extra", Device::Cpu),
    ("conv_pool_extra", Device::Gpu),
    ("convnet", Device::Cpu),
    ("convnet", Device::Gpu),
    ("creation", Device::Cpu),
    ("creation", Device::Gpu),
    ("fma_astype", Device::Cpu),
    ("fma_astype", Device::Gpu),
    ("gather_onehot", Device::Cpu),
    ("gather_onehot", Device::Gpu),
    ("if_cond", Device::Cpu),
    ("if_cond", Device::Gpu),
    ("index_ops", Device::Cpu),
    ("index_ops", Device::Gpu),
    ("index_tensor", Device::Cpu),
    ("index_tensor", Device::Gpu),
    ("int_bool", Device::Cpu),
    ("int_bool", Device::Gpu),
    ("layout_transform", Device::Cpu),
    ("layout_transform", Device::Gpu),
    ("losses", Device::Cpu),
    ("losses", Device::Gpu),
    ("match_cast_symbolic", Device::Cpu),
    ("match_cast_symbolic", Device::Gpu),
    ("matmul", Device::Cpu),
    ("matmul", Device::Gpu),
    ("matmul_int", Device::Cpu),
    ("matmul_int", Device::Gpu),
    ("mlp", Device::Cpu),
    ("mlp", Device::Gpu),
    ("nd_ops", Device::Cpu),
    ("nd_ops", Device::Gpu),
    ("nn_activations", Device::Cpu),
    ("nn_activations", Device::Gpu),
    ("nn_extra", Device::Cpu),
    ("nn_extra", Device::Gpu),
    ("norm_conv1d_extra", Device::Cpu),
    ("norm_conv1d_extra", Device::Gpu),
    ("packed_func", Device::Cpu),
    ("packed_func", Device::Gpu),
    ("pad_modes", Device::Cpu),
    ("pad_modes", Device::Gpu),
    ("pooling", Device::Cpu),
    ("pooling", Device::Gpu),
    ("prim_operand", Device::Cpu),
    ("prim_operand", Device::Gpu),
    ("recursion_local", Device::Cpu),
    ("recursion_local", Device::Gpu),
    ("recursion_mutual", Device::Cpu),
    ("recursion_mutual", Device::Gpu),
    ("reductions", Device::Cpu),
    ("reductions", Device::Gpu),
    ("reshape_family", Device::Cpu),
    ("reshape_family", Device::Gpu),
    ("scalar_prim", Device::Cpu),
    ("scalar_prim", Device::Gpu),
    ("scatter_slice", Device::Cpu),
    ("scatter_slice", Device::Gpu),
    ("softmax_norm", Device::Cpu),
    ("softmax_norm", Device::Gpu),
    ("transformer_ops", Device::Cpu),
    ("transformer_ops", Device::Gpu),
    ("tri_eye", Device::Cpu),
    ("tri_eye", Device::Gpu),
    ("tuple_nested", Device::Cpu),
    ("tuple_nested", Device::Gpu),
    ("unary_basic", Device::Cpu),
    ("unary_basic", Device::Gpu),
    ("unary_positive", Device::Cpu),
    ("unary_positive", Device::Gpu),
    ("unary_transcendental", Device::Cpu),
    ("unary_transcendental", Device::Gpu),
    ("unary_trig", Device::Cpu),
    ("unary_trig", Device::Gpu),
    ("vdevice_two", Device::Cpu),
    ("vdevice_two", Device::Gpu),
];

/// An engine configuration the programs run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Device {
    Cpu,
    Gpu,
}

/// A tensor in a data file.
#[derive(Deserialize)]
struct TensorData {
    dtype: String,
    shape: Vec<i64>,
    data: Vec<serde_json::Value>,
    /// `"shape"` for a Relax shape value (stored as an int64 vector).
    #[serde(default)]
    kind: Option<String>,
}

/// One data file.
#[derive(Deserialize)]
struct Case {
    program: String,
    entry: String,
    inputs: Vec<TensorData>,
    outputs: Vec<TensorData>,
    /// `"tensor"`, `"shape"` or a (nested) list of those for a tuple.
    structure: serde_json::Value,
    rtol: f64,
    atol: f64,
    #[serde(default)]
    notes: String,
}

/// The outcome of one program on one configuration.
enum Outcome {
    Pass,
    Fail(String),
    Skip(String),
}

fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("e2e")
}

/// A JSON element as a float (NaN and infinities are spelled as strings).
fn as_f64(v: &serde_json::Value) -> Result<f64, String> {
    match v {
        serde_json::Value::Number(n) => n.as_f64().ok_or_else(|| format!("bad number {n}")),
        serde_json::Value::String(s) => match s.as_str() {
            "nan" => Ok(f64::NAN),
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            _ => Err(format!("bad float {s:?}")),
        },
        serde_json::Value::Bool(b) => Ok(f64::from(u8::from(*b))),
        _ => Err(format!("bad element {v}")),
    }
}

/// A JSON element as an integer (booleans as 0/1).
fn as_i64(v: &serde_json::Value) -> Result<i64, String> {
    match v {
        serde_json::Value::Number(n) => n.as_i64().ok_or_else(|| format!("bad integer {n}")),
        serde_json::Value::Bool(b) => Ok(i64::from(*b)),
        _ => Err(format!("bad integer element {v}")),
    }
}

/// Elements of a tensor, decoded from little-endian bytes.
enum Elems {
    Float(Vec<f64>),
    Int(Vec<i64>),
}

fn encode(t: &TensorData) -> Result<Tensor, String> {
    let dtype: DataType = t.dtype.parse().map_err(|e| format!("dtype {}: {e:?}", t.dtype))?;
    let mut bytes = Vec::new();
    for v in &t.data {
        match t.dtype.as_str() {
            "float32" => bytes.extend_from_slice(&(as_f64(v)? as f32).to_le_bytes()),
            "float64" => bytes.extend_from_slice(&as_f64(v)?.to_le_bytes()),
            "int8" => bytes.extend_from_slice(&(as_i64(v)? as i8).to_le_bytes()),
            "int32" => bytes.extend_from_slice(&(as_i64(v)? as i32).to_le_bytes()),
            "int64" => bytes.extend_from_slice(&as_i64(v)?.to_le_bytes()),
            "bool" => bytes.push(u8::from(as_i64(v)? != 0)),
            other => return Err(format!("unsupported input dtype {other}")),
        }
    }
    Tensor::from_bytes(dtype, &t.shape, bytes).map_err(|e| e.to_string())
}

fn decode(dtype: &str, bytes: &[u8]) -> Result<Elems, String> {
    fn chunks<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
        bytes.chunks_exact(N).map(|c| {
            let mut a = [0u8; N];
            a.copy_from_slice(c);
            a
        })
    }
    Ok(match dtype {
        "float32" => Elems::Float(chunks::<4>(bytes).map(|b| f64::from(f32::from_le_bytes(b))).collect()),
        "float64" => Elems::Float(chunks::<8>(bytes).map(f64::from_le_bytes).collect()),
        "int8" => Elems::Int(bytes.iter().map(|&b| i64::from(b as i8)).collect()),
        "int32" => Elems::Int(chunks::<4>(bytes).map(|b| i64::from(i32::from_le_bytes(b))).collect()),
        "int64" => Elems::Int(chunks::<8>(bytes).map(i64::from_le_bytes).collect()),
        "bool" => Elems::Int(bytes.iter().map(|&b| i64::from(b != 0)).collect()),
        other => return Err(format!("unsupported output dtype {other}")),
    })
}

/// Walk `value` along `structure`, collecting `(path, value)` leaves in order.
fn flatten<'a>(
    value: &'a Value,
    structure: &serde_json::Value,
    path: String,
    out: &mut Vec<(String, &'a Value)>,
) -> Result<(), String> {
    match structure {
        serde_json::Value::String(_) => {
            out.push((path, value));
            Ok(())
        }
        serde_json::Value::Array(items) => {
            let fields = value.as_tuple().ok_or_else(|| {
                format!(
                    "result{path}: expected a tuple of {}, got {}",
                    items.len(),
                    value.describe()
                )
            })?;
            if fields.len() != items.len() {
                return Err(format!(
                    "result{path}: expected a tuple of {} fields, got {}",
                    items.len(),
                    fields.len()
                ));
            }
            for (i, (f, s)) in fields.iter().zip(items).enumerate() {
                flatten(f, s, format!("{path}[{i}]"), out)?;
            }
            Ok(())
        }
        other => Err(format!("bad structure {other} in the data file")),
    }
}

/// Compare one result leaf with its expected tensor.
fn compare(path: &str, got: &Value, want: &TensorData, rtol: f64, atol: f64) -> Result<(), String> {
    let (dtype, shape, elems) = if want.kind.as_deref() == Some("shape") {
        let dims = got
            .as_shape()
            .ok_or_else(|| format!("result{path}: expected a shape, got {}", got.describe()))?;
        ("int64".to_string(), vec![dims.len() as i64], Elems::Int(dims.to_vec()))
    } else {
        let t = got
            .as_tensor()
            .ok_or_else(|| format!("result{path}: expected a tensor, got {}", got.describe()))?;
        let bytes = t
            .to_bytes()
            .map_err(|e| format!("result{path}: reading the tensor: {e}"))?;
        let dtype = t.dtype().to_string();
        let elems = decode(&dtype, &bytes).map_err(|e| format!("result{path}: {e}"))?;
        (dtype, t.shape().to_vec(), elems)
    };
    if dtype != want.dtype || shape != want.shape {
        return Err(format!(
            "result{path}: got {dtype}{shape:?}, expected {}{:?}",
            want.dtype, want.shape
        ));
    }
    let count = match &elems {
        Elems::Float(v) => v.len(),
        Elems::Int(v) => v.len(),
    };
    if count != want.data.len() {
        return Err(format!("result{path}: {count} elements, expected {}", want.data.len()));
    }
    match elems {
        Elems::Float(values) => {
            for (i, (g, w)) in values.iter().zip(&want.data).enumerate() {
                let w = as_f64(w)?;
                let ok = if w.is_nan() {
                    g.is_nan()
                } else if w.is_infinite() {
                    *g == w
                } else {
                    (g - w).abs() <= atol + rtol * w.abs()
                };
                if !ok {
                    return Err(format!(
                        "result{path}[{i}] = {g}, expected {w} (rtol {rtol:e}, atol {atol:e})"
                    ));
                }
            }
        }
        Elems::Int(values) => {
            for (i, (g, w)) in values.iter().zip(&want.data).enumerate() {
                let w = as_i64(w)?;
                if *g != w {
                    return Err(format!("result{path}[{i}] = {g}, expected {w} (exact)"));
                }
            }
        }
    }
    Ok(())
}

/// The tensor argument of the one-tensor packed function `name`.
fn first_tensor<'a>(args: &'a [Value], name: &str) -> relax_engine::Result<&'a Tensor> {
    args.first()
        .ok_or_else(|| EngineError::msg(format!("{name} takes one tensor")))?
        .expect_tensor(&format!("{name} argument"))
}

/// `test.add_one(x) = x + 1` for float32 tensors, the same function the generator
/// registers in TVM.
fn add_one(args: &[Value]) -> relax_engine::Result<Value> {
    let x = first_tensor(args, "test.add_one")?;
    let a = x.to_array::<f32>()?;
    Ok(Value::Tensor(Tensor::from_array(&a.mapv(|v| v + 1.0))))
}

/// `test.add_one_dps(x, out)`: `out = x + 1`, written in place (destination-passing style).
fn add_one_dps(args: &[Value]) -> relax_engine::Result<Value> {
    let [x, out] = args else {
        return Err(EngineError::msg("test.add_one_dps takes an input and an output tensor"));
    };
    let a = x.expect_tensor("test.add_one_dps input")?.to_array::<f32>()?;
    out.expect_tensor("test.add_one_dps output")?
        .assign(&a.mapv(|v| v + 1.0))?;
    Ok(Value::unit())
}

/// `test.double_inplace(x)`: `x *= 2` in place, returning `x`.
fn double_inplace(args: &[Value]) -> relax_engine::Result<Value> {
    let x = first_tensor(args, "test.double_inplace")?;
    let a = x.to_array::<f32>()?;
    x.assign(&a.mapv(|v| v * 2.0))?;
    Ok(Value::Tensor(x.clone()))
}

fn engine(device: Device) -> Engine {
    let config = EngineConfig {
        device: match device {
            Device::Cpu => DeviceChoice::Cpu,
            Device::Gpu => DeviceChoice::Gpu,
        },
        ..EngineConfig::default()
    };
    let engine = Engine::new(config).with_print_sink(|_| {});
    engine.register_packed("test.add_one", Purity::Pure, add_one);
    engine.register_packed("test.add_one_dps", Purity::Pure, add_one_dps);
    engine.register_packed("test.double_inplace", Purity::Pure, double_inplace);
    engine
}

/// Parse, run and compare one program on one engine.
fn run_case(case: &Case, source: &str, engine: &Engine) -> Outcome {
    let program = match relax_ir::text::parse(source) {
        Ok(p) => p,
        Err(d) => return Outcome::Fail(format!("parse: {}", one_line(&d.to_string()))),
    };
    let module = program.into_module();
    let mut args = Vec::new();
    for (i, t) in case.inputs.iter().enumerate() {
        match encode(t) {
            Ok(t) => args.push(Value::Tensor(t)),
            Err(e) => return Outcome::Fail(format!("input {i}: {e}")),
        }
    }
    let loaded = match engine.load(&module) {
        Ok(l) => l,
        Err(e) => return Outcome::Fail(format!("load: {}", one_line(&e.to_string()))),
    };
    let result = match loaded.run(&case.entry, &args) {
        Ok(v) => v,
        Err(e) => return Outcome::Fail(format!("run: {}", one_line(&e.to_string()))),
    };
    let mut leaves = Vec::new();
    if let Err(e) = flatten(&result, &case.structure, String::new(), &mut leaves) {
        return Outcome::Fail(e);
    }
    if leaves.len() != case.outputs.len() {
        return Outcome::Fail(format!("{} results, expected {}", leaves.len(), case.outputs.len()));
    }
    for ((path, got), want) in leaves.iter().zip(&case.outputs) {
        if let Err(e) = compare(path, got, want, case.rtol, case.atol) {
            return Outcome::Fail(e);
        }
    }
    Outcome::Pass
}

/// The first line of a message, shortened for the table.
fn one_line(s: &str) -> String {
    let line = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let mut out: String = line.chars().take(160).collect();
    if line.chars().count() > 160 {
        out.push('…');
    }
    out
}

/// Run `f` on a thread of its own, turning a panic into a failure.
fn guarded(f: impl FnOnce() -> Outcome + Send) -> Outcome {
    std::thread::scope(|s| s.spawn(f).join()).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        Outcome::Fail(format!("panic: {}", one_line(&msg)))
    })
}

fn load_cases() -> Vec<(String, Case, String)> {
    let dir = e2e_dir();
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|p| {
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
            let case: Case = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let src_path = dir.join(&case.program);
            let source =
                std::fs::read_to_string(&src_path).unwrap_or_else(|e| panic!("reading {}: {e}", src_path.display()));
            (name, case, source)
        })
        .collect()
}

fn cell(o: &Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail(_) => "FAIL",
        Outcome::Skip(_) => "skip",
    }
}

#[test]
fn e2e_programs_match_tvm() {
    let cases = load_cases();
    assert!(
        cases.len() >= 30,
        "expected at least 30 end-to-end programs, found {}",
        cases.len()
    );
    for (name, _) in PASSING {
        assert!(
            cases.iter().any(|(n, _, _)| n == name),
            "PASSING lists {name}, which has no data file"
        );
    }

    let cpu = engine(Device::Cpu);
    // The GPU half needs an adapter (lavapipe counts); without one it is skipped.
    let gpu_adapter = relax_gpu_runtime::GpuRuntime::shared_default().map_err(|e| e.to_string());
    let gpu = gpu_adapter.as_ref().ok().map(|_| engine(Device::Gpu));
    if let Err(e) = &gpu_adapter {
        println!("GPU half SKIPPED: no GPU adapter ({})", one_line(e));
    }

    let mut table = String::new();
    let _ = writeln!(table, "{:<22} {:<5} {:<5} reason", "program", "cpu", "gpu");
    let mut regressions = Vec::new();
    let mut new_passes = Vec::new();
    let (mut cpu_pass, mut gpu_pass) = (0, 0);
    for (name, case, source) in &cases {
        let c = guarded(|| run_case(case, source, &cpu));
        let g = match (&gpu, &gpu_adapter) {
            (Some(gpu), _) => guarded(|| run_case(case, source, gpu)),
            (None, Err(e)) => Outcome::Skip(format!("no GPU adapter: {}", one_line(e))),
            (None, Ok(_)) => Outcome::Skip("no GPU engine".into()),
        };
        let mut reasons = Vec::new();
        for (dev, o) in [(Device::Cpu, &c), (Device::Gpu, &g)] {
            let listed = PASSING.contains(&(name.as_str(), dev));
            match o {
                Outcome::Pass => {
                    match dev {
                        Device::Cpu => cpu_pass += 1,
                        Device::Gpu => gpu_pass += 1,
                    }
                    if !listed {
                        new_passes.push(format!("(\"{name}\", Device::{dev:?})"));
                    }
                }
                Outcome::Fail(r) => {
                    reasons.push(format!("{dev:?}: {r}"));
                    if listed {
                        regressions.push(format!("{name} on {dev:?}: {r}"));
                    }
                }
                Outcome::Skip(r) => {
                    if dev == Device::Gpu && gpu_adapter.is_err() {
                        // Reported once above.
                    } else {
                        reasons.push(format!("{dev:?} skipped: {r}"));
                    }
                }
            }
        }
        let _ = writeln!(
            table,
            "{:<22} {:<5} {:<5} {}",
            name,
            cell(&c),
            cell(&g),
            reasons.join(" | ")
        );
        if !case.notes.is_empty() && std::env::var_os("E2E_NOTES").is_some() {
            let _ = writeln!(table, "{:<22} note: {}", "", case.notes);
        }
    }
    println!("{table}");
    println!(
        "e2e: {} programs; cpu {cpu_pass} pass; gpu {}",
        cases.len(),
        if gpu.is_some() {
            format!("{gpu_pass} pass")
        } else {
            "skipped".to_string()
        }
    );
    if !new_passes.is_empty() {
        println!("passing but not yet listed in PASSING: {}", new_passes.join(", "));
    }
    assert!(
        regressions.is_empty(),
        "regressions (programs listed in PASSING that fail):\n{}",
        regressions.join("\n")
    );
}

/// Every program parses with our TVMScript parser.
#[test]
fn e2e_programs_parse() {
    let mut failures = Vec::new();
    for (name, _, source) in load_cases() {
        if let Err(d) = relax_ir::text::parse(&source) {
            failures.push(format!("{name}: {}", one_line(&d.to_string())));
        }
    }
    assert!(
        failures.is_empty(),
        "programs that do not parse:\n{}",
        failures.join("\n")
    );
}
