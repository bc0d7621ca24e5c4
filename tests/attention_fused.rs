//! Attention as one fused kernel (`fuse-attention`, see `relax_transform::attention`):
//! the programs of `tests/attention_fused/cases.json` (`R.nn.attention` with causal
//! masks, scale, bias, float16, wide heads and symbolic lengths; the explicit
//! matmul-softmax-matmul chains of TVM's `nn` module and of `from_onnx`) run with the
//! fused kernel and with the unfused legalization, on the host and on the GPU, and
//! both are compared with Apache TVM 0.27's outputs (`scripts/gen_attention_cases.py`)
//! and with each other. The micro transformers of `tests/transformers` must have their
//! attention fused (their values are checked against their references by
//! `tests/transformers.rs`, which runs the default, fused, pipeline).

use std::path::Path;

use relax_engine::{ArrayValue, DeviceChoice, Engine, EngineConfig, Tensor, Value};
use relax_ir::DataType;
use serde::Deserialize;

#[derive(Deserialize)]
struct Array {
    dtype: String,
    shape: Vec<usize>,
    data: Vec<Option<f64>>,
}

#[derive(Deserialize)]
struct Run {
    binding: serde_json::Value,
    inputs: Vec<Array>,
    outputs: Vec<Array>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    program: String,
    tol: f64,
    runs: Vec<Run>,
}

#[derive(Deserialize)]
struct Cases {
    cases: Vec<Case>,
}

fn cases() -> Cases {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/attention_fused/cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The float16 bits nearest to `x` (round to nearest even; values in float16's range).
fn f16_bits(x: f64) -> u16 {
    let f = x as f32;
    let b = f.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let a = f.abs();
    if a.is_nan() {
        return sign | 0x7e00;
    }
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    if a < 6.103_515_6e-5 {
        // Subnormal: units of 2^-24.
        let q = (a as f64 * 16_777_216.0).round_ties_even() as u16;
        return sign | q;
    }
    let e = ((a.to_bits() >> 23) & 0xff) as i32 - 127;
    let m = a.to_bits() & 0x7f_ffff;
    let mut h = (((e + 15) as u32) << 10) | (m >> 13);
    let rest = m & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        h += 1;
    }
    sign | h as u16
}

fn tensor(a: &Array) -> Tensor {
    let vals = a.data.iter().map(|x| x.unwrap_or(f64::NAN));
    let (dtype, bytes): (DataType, Vec<u8>) = match a.dtype.as_str() {
        "float32" => (DataType::FLOAT32, vals.flat_map(|x| (x as f32).to_le_bytes()).collect()),
        "float16" => (
            DataType::FLOAT16,
            vals.flat_map(|x| f16_bits(x).to_le_bytes()).collect(),
        ),
        "bool" => (DataType::BOOL, vals.map(|x| u8::from(x != 0.0)).collect()),
        d => panic!("dtype {d}"),
    };
    let shape: Vec<i64> = a.shape.iter().map(|&d| d as i64).collect();
    Tensor::from_bytes(dtype, &shape, bytes).expect("tensor")
}

fn floats(t: &Tensor) -> Vec<f64> {
    match t.to_array_value().expect("readable") {
        ArrayValue::F32(a) => a.iter().map(|&x| x as f64).collect(),
        ArrayValue::F16(a) => a.iter().map(|x| x.to_f64()).collect(),
        other => panic!("expected a float result, got {other:?}"),
    }
}

fn outputs(v: &Value) -> Vec<Tensor> {
    match v.as_tuple() {
        Some(fields) => fields.iter().flat_map(outputs).collect(),
        None => vec![v.as_tensor().expect("a tensor result").clone()],
    }
}

/// `Err` naming the first element of `got` off `want` by more than `tol * (1 + |want|)`.
fn close(got: &[f64], want: &[f64], tol: f64) -> Result<f64, String> {
    if got.len() != want.len() {
        return Err(format!("{} elements, expected {}", got.len(), want.len()));
    }
    let mut worst = 0.0f64;
    for (i, (&a, &b)) in got.iter().zip(want).enumerate() {
        let d = (a - b).abs();
        if d.is_nan() || d > tol * (1.0 + b.abs()) {
            return Err(format!("element {i}: got {a}, expected {b}"));
        }
        worst = worst.max(d);
    }
    Ok(worst)
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

/// Calls rewritten by `fuse-attention` in `src`: (`R.nn.attention`, chains).
fn fused_sites(src: &str, lenient: bool) -> (usize, usize) {
    let module = relax_ir::text::parse(src).expect("parses").into_module();
    let module = if lenient {
        relax_transform::lenient::pure_packed_calls(&module, &|_: &str| true).0
    } else {
        module
    };
    let checked = relax_transform::check_and_realize(&module);
    assert!(
        !checked.diagnostics.iter().any(|d| d.is_error()),
        "check: {:?}",
        checked.diagnostics
    );
    let options = relax_transform::attention::FuseOptions::default();
    let (_, a, b) =
        relax_transform::attention::fuse_attention_report(&checked.module, options).expect("fuse-attention");
    (a, b)
}

#[test]
fn fused_attention_matches_tvm_and_the_unfused_legalization() {
    let expected_sites = [
        ("op_f32", (6, 0)),
        ("op_f16", (2, 0)),
        ("op_wide", (1, 0)),
        ("chain_nn", (0, 1)),
        ("chain_nn_gqa_decode", (0, 1)),
        ("chain_nn_gqa_f16", (0, 1)),
        ("chain_onnx", (0, 1)),
    ];
    let mut devices = vec![DeviceChoice::Cpu];
    if gpu_available() {
        devices.push(DeviceChoice::Gpu);
    }
    let mut failures = Vec::new();
    for case in cases().cases {
        let sites = fused_sites(&case.program, false);
        let want = expected_sites.iter().find(|(n, _)| *n == case.name).map(|(_, s)| *s);
        assert_eq!(Some(sites), want, "{}: rewritten sites", case.name);
        let module = relax_ir::text::parse(&case.program).expect("parses").into_module();
        for &device in &devices {
            let mut results: Vec<Vec<Vec<f64>>> = Vec::new();
            // The fused PrimFunc; on the host also the library's kernel
            // (`relax_host.attention`, the default there), and the separate
            // operators (with the library off: no fused attention of any kind).
            let variants: &[&str] = if device == DeviceChoice::Cpu {
                &["fused", "library", "unfused"]
            } else {
                &["fused", "unfused"]
            };
            for &variant in variants {
                let fuse = variant == "fused";
                let engine = Engine::new(EngineConfig {
                    device,
                    fuse_attention: fuse,
                    fuse_attention_host: fuse,
                    host_library: variant != "unfused",
                    ..EngineConfig::default()
                });
                let loaded = engine
                    .load(&module)
                    .unwrap_or_else(|e| panic!("{}: load: {e}", case.name));
                for (ri, run) in case.runs.iter().enumerate() {
                    let args: Vec<Value> = run.inputs.iter().map(|a| Value::Tensor(tensor(a))).collect();
                    let what = format!("{} {} {device:?} {variant}", case.name, run.binding);
                    let out = match loaded.run("main", &args) {
                        Ok(o) => outputs(&o),
                        Err(e) => {
                            failures.push(format!("{what}: run: {e}"));
                            continue;
                        }
                    };
                    assert_eq!(out.len(), run.outputs.len(), "{what}: outputs");
                    for (k, (o, w)) in out.iter().zip(&run.outputs).enumerate() {
                        let got = floats(o);
                        let want: Vec<f64> = w.data.iter().map(|x| x.unwrap_or(f64::NAN)).collect();
                        match close(&got, &want, case.tol) {
                            Ok(d) => println!("{what} output {k}: max |diff| vs TVM {d:.2e}"),
                            Err(e) => failures.push(format!("{what} output {k} vs TVM: {e}")),
                        }
                        if fuse {
                            if results.len() <= ri {
                                results.push(Vec::new());
                            }
                            results[ri].push(got);
                        } else if let Some(f) = results.get(ri).and_then(|r| r.get(k)) {
                            if let Err(e) = close(f, &got, case.tol) {
                                failures.push(format!("{what} output {k}: against fused: {e}"));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The attention of every micro transformer of the three routes (TVM's `nn` module,
/// `from_onnx`, `torch.export` + `from_exported_program`) is fused: one site per layer.
#[test]
fn transformer_programs_have_their_attention_fused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transformers");
    let expect = [
        ("nn_gpt2_f32", "prog_dyn.py", false),
        ("nn_llama_f32", "prog_dyn.py", false),
        ("nn_llama_f16", "prog_dyn.py", false),
        ("hf_gpt2_onnx", "prog_static.py", false),
        ("hf_bert_onnx", "prog_static.py", false),
        ("hf_llama_onnx", "prog_static.py", true),
        ("hf_gpt2_export", "prog_static.py", false),
        ("hf_gpt2_export", "prog_dyn.py", false),
        ("hf_bert_export", "prog_static.py", false),
        ("hf_bert_export", "prog_dyn.py", false),
        ("hf_llama_export", "prog_static.py", false),
        ("hf_llama_export", "prog_dyn.py", false),
    ];
    for (case, prog, lenient) in expect {
        let path = root.join(case).join(prog);
        let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let layers = src.matches("R.nn.softmax(").count();
        let (ops, chains) = fused_sites(&src, lenient);
        println!("{case} {prog}: {layers} softmax, {ops} R.nn.attention and {chains} chains fused");
        assert!(layers > 0, "{case}: no attention");
        assert_eq!(ops + chains, layers, "{case} {prog}: every attention fused");
    }
}

/// A decoding step (one query row) is fused on the host by default, with its
/// grouped heads read through `repeat` and its mask PrimFunc applied per score: no
/// `repeat`, `matmul` or mask kernel is left; prompts of several rows are not.
#[test]
fn decoding_steps_are_fused_on_the_host_by_default() {
    let cases = cases();
    let case = |name: &str| {
        let c = cases.cases.iter().find(|c| c.name == name).expect("case");
        relax_ir::text::parse(&c.program).expect("parses").into_module()
    };
    let prepared = |module: &relax_ir::IRModule| {
        let engine = Engine::new(EngineConfig {
            device: DeviceChoice::Cpu,
            ..EngineConfig::default()
        });
        let loaded = engine.load(module).expect("loads");
        loaded
            .module()
            .functions
            .keys()
            .map(|g| g.name().to_string())
            .collect::<Vec<String>>()
    };
    let decode = prepared(&case("chain_nn_gqa_decode"));
    assert!(decode.iter().any(|n| n.starts_with("fused_attention")), "{decode:?}");
    for gone in ["repeat", "matmul", "mask"] {
        assert!(!decode.iter().any(|n| n == gone), "{gone} left in {decode:?}");
    }
    let prompt = prepared(&case("chain_nn_gqa_f16"));
    assert!(!prompt.iter().any(|n| n.starts_with("fused_attention")), "{prompt:?}");
}

#[test]
fn unsupported_attention_is_left_for_legalization() {
    // Grouped heads (key heads differ from the query heads), a symbolic head dimension.
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((1, 4, 4, 8), dtype="float32"), k: R.Tensor((1, 4, 2, 8), dtype="float32"), x: R.Tensor((1, 2, 4, "d"), dtype="float32"), y: R.Tensor((1, 2, "d", 4), dtype="float32")):
        d = T.int64()
        with R.dataflow():
            a = R.nn.attention(q, k, k)
            s = R.matmul(x, y)
            p = R.nn.softmax(s, axis=-1)
            o = R.matmul(p, x)
            p2 = R.nn.softmax(s, axis=1)
            o2 = R.matmul(p2, x)
            R.output(a, o, o2)
        return (a, o, o2)
"#;
    assert_eq!(fused_sites(src, false), (0, 0));
    // A PrimFunc between the scores and the softmax that reads a neighbouring score
    // is not an elementwise map of the scores.
    let shifted = r#"
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def shift(x: T.handle, y: T.handle):
        n = T.int64()
        A = T.match_buffer(x, (T.int64(2), n, n))
        B = T.match_buffer(y, (T.int64(2), n, n))
        for h, i, j in T.grid(T.int64(2), n, n):
            with T.sblock("shift"):
                v_h, v_i, v_j = T.axis.remap("SSS", [h, i, j])
                B[v_h, v_i, v_j] = A[v_h, v_i, (v_j + T.int64(1)) % n]

    @R.function
    def main(q: R.Tensor((2, "n", 8), dtype="float32"), kt: R.Tensor((2, 8, "n"), dtype="float32")):
        n = T.int64()
        cls = Module
        with R.dataflow():
            s = R.matmul(q, kt)
            a = R.call_tir(cls.shift, (s,), out_ty=R.Tensor((2, n, n), dtype="float32"))
            p = R.nn.softmax(a, axis=-1)
            o = R.matmul(p, q)
            R.output(o)
        return o
"#;
    assert_eq!(fused_sites(shifted, false), (0, 0));
}

/// On the host, the float32 and float16 attention of every route runs as one call
/// of the kernel library per layer (`relax_host.attention`, reading the heads
/// through their transposes and scalar factors), with no softmax or batched
/// product left for it.
#[test]
fn host_attention_runs_in_the_kernel_library() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transformers");
    let expect = [
        ("nn_gpt2_f32", "prog_dyn.py", false, true),
        ("nn_llama_f32", "prog_dyn.py", false, true),
        ("nn_llama_f16", "prog_dyn.py", false, true),
        ("hf_gpt2_onnx", "prog_static.py", false, true),
        ("hf_bert_onnx", "prog_static.py", false, true),
        ("hf_llama_onnx", "prog_static.py", true, true),
        ("hf_gpt2_export", "prog_static.py", false, true),
        ("hf_gpt2_export", "prog_dyn.py", false, true),
        ("hf_bert_export", "prog_static.py", false, true),
        ("hf_llama_export", "prog_static.py", false, true),
    ];
    for (case, prog, lenient, library) in expect {
        let path = root.join(case).join(prog);
        let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let layers = src.matches("R.nn.softmax(").count();
        let engine = Engine::new(EngineConfig {
            device: DeviceChoice::Cpu,
            lenient,
            ..EngineConfig::default()
        });
        let module = relax_ir::text::parse(&src).expect("parses").into_module();
        let loaded = engine.load(&module).unwrap_or_else(|e| panic!("{case}: load: {e}"));
        let text = relax_ir::text::print_program(&relax_ir::text::Program::Module(loaded.module().clone()));
        let calls = text.matches("\"relax_host.attention\"").count();
        let softmax = text.matches("softmax").count();
        println!("{case} {prog}: {layers} layers, {calls} library attention calls, {softmax} softmax left");
        if library {
            assert_eq!(calls, layers, "{case} {prog}: one library call per attention");
            assert_eq!(softmax, 0, "{case} {prog}: no softmax left");
            if (case, prog) == ("hf_gpt2_export", "prog_static.py") {
                // Queries, keys and values are read from the projection's output
                // where `split` cut them: no split is left.
                assert!(!text.contains("split"), "{case} {prog}: a split is left");
            }
        } else {
            assert_eq!(calls, 0, "{case} {prog}: left unfused");
        }
    }
}
