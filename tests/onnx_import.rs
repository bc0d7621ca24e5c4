//! ONNX import (`relax-onnx`): small models checked into `tests/onnx/` imported and run
//! end to end on the host and the GPU, compared with ONNX Runtime's outputs
//! (`|ours - expected| <= 1e-4 + 1e-3 * |expected|`); symbolic dimensions run at two
//! sizes with one loaded module; malformed files give errors, never panics.
//!
//! The models and ONNX Runtime's outputs were made by `scripts/gen_onnx_tests.py`.
//! `real_onnx_models_from_dir` (ignored by default) imports the nine ImageNet networks of
//! a directory made by `scripts/prep_light_models.py` (or the three of `prep.py`:
//! `<dir>/<name>/{model.onnx, in0000.npy, expected.npy, meta.json}`), runs them on the
//! host (and the GPU with `RELAX_ONNX_GPU=1`) and prints a table against ONNX Runtime:
//! `RELAX_REALMODELS_DIR=DIR cargo test --release --test onnx_import -- --ignored --nocapture`.

use std::path::{Path, PathBuf};

use relax_engine::params::read_npy;
use relax_engine::{ArrayValue, DeviceChoice, Engine, EngineConfig, Tensor, Value};
use relax_ir::text::{print_program, Program};
use relax_onnx::prost::Message;
use relax_onnx::proto::{self, ModelProto};
use relax_onnx::{import_bytes, import_file, ImportOptions};

const RTOL: f64 = 1e-3;
const ATOL: f64 = 1e-4;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/onnx")
}

fn npy(name: &str) -> Tensor {
    read_npy(&dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn f32_values(t: &Tensor) -> Vec<f32> {
    match t.to_array_value().expect("readable result") {
        ArrayValue::F32(a) => a.iter().copied().collect(),
        other => panic!("expected a float32 result, got {other:?}"),
    }
}

fn compare(what: &str, got: &Value, expected: &Tensor) {
    let t = got
        .as_tensor()
        .unwrap_or_else(|| panic!("{what}: the result is not a tensor"));
    assert_eq!(t.shape(), expected.shape(), "{what}: shape");
    let (g, e) = (f32_values(t), f32_values(expected));
    for (i, (&a, &b)) in g.iter().zip(&e).enumerate() {
        assert!(
            a == b || (b.is_finite() && (a as f64 - b as f64).abs() <= ATOL + RTOL * (b as f64).abs()),
            "{what}: element {i}: got {a}, expected {b}"
        );
    }
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

fn devices() -> Vec<DeviceChoice> {
    let mut d = vec![DeviceChoice::Cpu];
    if gpu_available() {
        d.push(DeviceChoice::Gpu);
    }
    d
}

fn engine(device: DeviceChoice) -> Engine {
    Engine::new(EngineConfig {
        device,
        ..EngineConfig::default()
    })
}

/// Import `model`, run each `(inputs, expected)` case on every device, compare.
fn check_model(model: &str, cases: &[(Vec<&str>, &str)], opts: &ImportOptions) {
    for device in devices() {
        let e = engine(device);
        let m = e
            .load_onnx(&dir().join(model), opts)
            .unwrap_or_else(|err| panic!("{model}: {err}"));
        for (inputs, expected) in cases {
            let args: Vec<Value> = inputs.iter().map(|n| Value::Tensor(npy(n))).collect();
            let out = m.run(&args).unwrap_or_else(|err| panic!("{model} {device:?}: {err}"));
            compare(&format!("{model} {expected} {device:?}"), &out, &npy(expected));
        }
    }
}

#[test]
fn cnn_matches_onnx_runtime() {
    check_model(
        "cnn.onnx",
        &[(vec!["cnn.case0.in0.npy"], "cnn.case0.out0.npy")],
        &ImportOptions::default(),
    );
}

#[test]
fn symbolic_batch_and_length_run_at_two_sizes() {
    let imported = import_file(&dir().join("attn_dyn.onnx"), &ImportOptions::default()).expect("imports");
    assert_eq!(imported.summary.symbolic_dims, vec!["N".to_string(), "seq".to_string()]);
    let text = print_program(&Program::Module(imported.module.clone()));
    assert!(text.contains("ids: R.Tensor((N, seq), dtype=\"int64\")"), "{text}");
    assert!(text.contains("R.Tensor((N, seq, 16), dtype=\"float32\")"), "{text}");
    assert!(text.contains("with R.dataflow():"), "{text}");
    // one loaded module serves both sizes: (1, 5) and (3, 9)
    check_model(
        "attn_dyn.onnx",
        &[
            (vec!["attn_dyn.case0.in0.npy"], "attn_dyn.case0.out0.npy"),
            (vec!["attn_dyn.case1.in0.npy"], "attn_dyn.case1.out0.npy"),
        ],
        &ImportOptions::default(),
    );
}

#[test]
fn dim_option_fixes_symbolic_dims() {
    let opts = ImportOptions {
        dims: vec![("N".into(), 1), ("seq".into(), 5)],
        ..ImportOptions::default()
    };
    let imported = import_file(&dir().join("attn_dyn.onnx"), &opts).expect("imports");
    assert!(imported.summary.symbolic_dims.is_empty());
    let text = print_program(&Program::Module(imported.module));
    assert!(text.contains("ids: R.Tensor((1, 5), dtype=\"int64\")"), "{text}");
    check_model(
        "attn_dyn.onnx",
        &[(vec!["attn_dyn.case0.in0.npy"], "attn_dyn.case0.out0.npy")],
        &opts,
    );
}

#[test]
fn external_data_is_read_from_beside_the_model() {
    check_model(
        "ext.onnx",
        &[(vec!["ext.case0.in0.npy"], "ext.case0.out0.npy")],
        &ImportOptions::default(),
    );
}

/// The printed program parses again, checks, and computes the same result with the
/// weights bound by name.
#[test]
fn printed_program_reparses_and_runs() {
    for model in ["cnn.onnx", "attn_dyn.onnx", "ext.onnx"] {
        let imported = import_file(&dir().join(model), &ImportOptions::default()).expect("imports");
        let text = print_program(&Program::Module(imported.module.clone()));
        let reparsed = relax_ir::text::parse(&text)
            .unwrap_or_else(|d| panic!("{model}: the printed program does not parse: {d}\n{text}"))
            .into_module();
        let check = relax_checker::check::check_module(&reparsed);
        assert!(check.is_valid(), "{model}: {:?}", check.errors().collect::<Vec<_>>());
        let again = print_program(&Program::Module(reparsed));
        assert_eq!(text, again, "{model}: print(parse(print(m))) differs");
    }
    let imported = import_file(&dir().join("cnn.onnx"), &ImportOptions::default()).expect("imports");
    let weights = relax_engine::onnx::weights_of(&imported).expect("weights");
    let text = print_program(&Program::Module(imported.module));
    let module = relax_ir::text::parse(&text).expect("parses").into_module();
    let loaded = engine(DeviceChoice::Cpu).load(&module).expect("loads");
    let out = loaded
        .run_named("main", &[Value::Tensor(npy("cnn.case0.in0.npy"))], &weights)
        .expect("runs");
    compare("cnn reparsed", &out, &npy("cnn.case0.out0.npy"));
}

#[test]
fn supported_ops_are_listed() {
    let ops = relax_onnx::supported_ops();
    for op in [
        "Conv",
        "Gemm",
        "MatMul",
        "Reshape",
        "Shape",
        "Gather",
        "LayerNormalization",
        "Softmax",
    ] {
        assert!(ops.contains(&op), "{op} missing from {ops:?}");
    }
}

fn model_with_node(op_type: &str, name: &str) -> ModelProto {
    let tensor_type = |elem: i32| proto::TypeProto {
        denotation: String::new(),
        value: Some(proto::type_proto::Value::TensorType(proto::type_proto::Tensor {
            elem_type: elem,
            shape: Some(proto::TensorShapeProto {
                dim: vec![proto::tensor_shape_proto::Dimension {
                    denotation: String::new(),
                    value: Some(proto::tensor_shape_proto::dimension::Value::DimValue(4)),
                }],
            }),
        })),
    };
    let vi = |n: &str| proto::ValueInfoProto {
        name: n.into(),
        r#type: Some(tensor_type(proto::data_type::FLOAT)),
        doc_string: String::new(),
    };
    ModelProto {
        ir_version: 8,
        opset_import: vec![proto::OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(proto::GraphProto {
            node: vec![proto::NodeProto {
                input: vec!["x".into()],
                output: vec!["y".into()],
                name: name.into(),
                op_type: op_type.into(),
                ..Default::default()
            }],
            name: "g".into(),
            input: vec![vi("x")],
            output: vec![vi("y")],
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn unsupported_operator_is_an_error_naming_node_op_and_opset() {
    let bytes = model_with_node("FancyOp", "my_node").encode_to_vec();
    let err = import_bytes(&bytes, None, &ImportOptions::default()).expect_err("FancyOp is not supported");
    let m = err.to_string();
    assert!(
        m.contains("my_node") && m.contains("FancyOp") && m.contains("opset 17"),
        "{m}"
    );
    // a supported one imports
    let bytes = model_with_node("Relu", "r").encode_to_vec();
    import_bytes(&bytes, None, &ImportOptions::default()).expect("Relu imports");
}

/// `NonZero` and `Unique` (output shapes that depend on the values) of a graph input
/// computed at run time: an import error naming the node and the input, not a panic.
#[test]
fn value_dependent_shapes_of_run_time_inputs_are_errors() {
    for op in ["NonZero", "Unique"] {
        let bytes = model_with_node(op, "dd").encode_to_vec();
        let err = import_bytes(&bytes, None, &ImportOptions::default()).expect_err("x is known only at run time");
        let m = err.to_string();
        assert!(
            m.contains("dd") && m.contains(op) && m.contains("(`x`) must be known"),
            "{m}"
        );
    }
}

/// ONNX `RoiAlign` max mode with adaptive sampling (`sampling_ratio` 0: a sample
/// count per bin that depends on each region at run time) is an import error naming
/// the node and the attribute, not a panic; with a positive ratio it imports (and
/// `checked_in_node_tests_pass` runs it).
#[test]
fn roialign_max_with_adaptive_sampling_is_an_error() {
    let path = dir().join("node/test_roialign_mode_max/model.onnx");
    let bytes = std::fs::read(&path).expect("test_roialign_mode_max");
    let mut model = ModelProto::decode(bytes.as_slice()).expect("model");
    import_bytes(&model.encode_to_vec(), None, &ImportOptions::default()).expect("sampling_ratio 2 imports");
    let node = &mut model.graph.as_mut().expect("graph").node[0];
    node.name = "roi".into();
    let a = node
        .attribute
        .iter_mut()
        .find(|a| a.name == "sampling_ratio")
        .expect("sampling_ratio");
    a.i = 0;
    let err = import_bytes(&model.encode_to_vec(), None, &ImportOptions::default()).expect_err("adaptive max mode");
    let m = err.to_string();
    assert!(
        m.contains("roi") && m.contains("RoiAlign") && m.contains("sampling_ratio"),
        "{m}"
    );
}

#[test]
fn truncated_and_corrupted_files_give_errors_not_panics() {
    for model in ["cnn.onnx", "attn_dyn.onnx"] {
        let bytes = std::fs::read(dir().join(model)).expect("model file");
        // every truncation point (a stride keeps the test fast)
        let mut errors = 0;
        for len in (0..bytes.len()).step_by(7) {
            if import_bytes(&bytes[..len], None, &ImportOptions::default()).is_err() {
                errors += 1;
            }
        }
        assert!(errors > 0, "{model}: no truncation was rejected");
        // deterministic byte flips
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..300 {
            let mut b = bytes.clone();
            for _ in 0..4 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let i = (state >> 33) as usize % b.len();
                b[i] ^= (state >> 13) as u8 | 1;
            }
            let _ = import_bytes(&b, None, &ImportOptions::default());
        }
    }
    let err = import_bytes(b"not a model at all", None, &ImportOptions::default()).expect_err("garbage");
    assert!(!err.to_string().is_empty());
}

/// `ext.onnx` with its external-data entry rewritten by `edit`, written into a fresh
/// directory beside a copy of `ext.bin` of `bin_len` bytes; the import's result.
fn import_edited_ext(
    tag: &str,
    bin_len: usize,
    edit: impl Fn(&mut proto::TensorProto),
) -> Result<relax_onnx::Imported, relax_onnx::ImportError> {
    let bytes = std::fs::read(dir().join("ext.onnx")).expect("ext.onnx");
    let mut model = ModelProto::decode(bytes.as_slice()).expect("decodes");
    let graph = model.graph.as_mut().expect("graph");
    edit(&mut graph.initializer[0]);
    let out = std::env::temp_dir().join(format!("relax_onnx_ext_{}_{tag}", std::process::id()));
    std::fs::create_dir_all(&out).expect("temp dir");
    let bin = std::fs::read(dir().join("ext.bin")).expect("ext.bin");
    std::fs::write(out.join("ext.bin"), &bin[..bin_len.min(bin.len())]).expect("write");
    std::fs::write(out.join("m.onnx"), model.encode_to_vec()).expect("write");
    let r = import_file(&out.join("m.onnx"), &ImportOptions::default());
    let _ = std::fs::remove_dir_all(&out);
    r
}

fn set_ext(t: &mut proto::TensorProto, key: &str, value: &str) {
    t.external_data.retain(|e| e.key != key);
    t.external_data.push(proto::StringStringEntryProto {
        key: key.into(),
        value: value.into(),
    });
}

/// An edit of a tensor.
type Edit = Box<dyn Fn(&mut proto::TensorProto)>;

#[test]
fn bad_external_data_gives_errors() {
    import_edited_ext("ok", 64, |_| {}).expect("the unedited model imports");
    let cases: Vec<(&str, usize, Edit, &str)> = vec![
        ("short", 32, Box::new(|_| {}), "beyond the end"),
        ("offset", 64, Box::new(|t| set_ext(t, "offset", "48")), "beyond the end"),
        ("length", 64, Box::new(|t| set_ext(t, "length", "60")), "length 60"),
        ("badnum", 64, Box::new(|t| set_ext(t, "offset", "-3")), "bad offset"),
        (
            "parent",
            64,
            Box::new(|t| set_ext(t, "location", "../ext.bin")),
            "relative path",
        ),
        (
            "absolute",
            64,
            Box::new(|t| set_ext(t, "location", "/etc/hostname")),
            "relative path",
        ),
        (
            "missing",
            64,
            Box::new(|t| set_ext(t, "location", "nothere.bin")),
            "cannot open",
        ),
        ("huge", 64, Box::new(|t| t.dims = vec![1 << 40, 1 << 40]), "overflows"),
        ("toolarge", 64, Box::new(|t| t.dims = vec![1 << 30, 1 << 10]), "limit"),
        ("negative", 64, Box::new(|t| t.dims = vec![-4, 4]), "negative dimension"),
        ("dtype", 64, Box::new(|t| t.data_type = 8), "STRING"),
    ];
    for (tag, len, edit, want) in cases {
        let err = import_edited_ext(tag, len, edit).expect_err(tag);
        assert!(err.to_string().contains(want), "{tag}: {err}");
    }
}

#[test]
fn raw_data_of_the_wrong_size_is_an_error() {
    let bytes = std::fs::read(dir().join("cnn.onnx")).expect("model");
    let mut model = ModelProto::decode(bytes.as_slice()).expect("decodes");
    let t = &mut model.graph.as_mut().expect("graph").initializer[0];
    let keep = t.raw_data.len() / 2;
    t.raw_data.truncate(keep);
    let err = import_bytes(&model.encode_to_vec(), None, &ImportOptions::default()).expect_err("short raw_data");
    assert!(err.to_string().contains("raw_data holds"), "{err}");
}

/// The ImageNet networks of a `prep.py` directory, imported by this importer and run
/// on the host (and the GPU with `RELAX_ONNX_GPU=1`), against ONNX Runtime.
#[test]
#[ignore]
fn real_onnx_models_from_dir() {
    let Some(root) = std::env::var_os("RELAX_REALMODELS_DIR") else {
        println!("RELAX_REALMODELS_DIR is not set: nothing to run");
        return;
    };
    let root = PathBuf::from(root);
    let mut devs = vec![DeviceChoice::Cpu];
    if std::env::var_os("RELAX_ONNX_GPU").is_some() && gpu_available() {
        devs.push(DeviceChoice::Gpu);
    }
    let runs: usize = std::env::var("RELAX_REALMODELS_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    println!(
        "| model | device | import+load s | first run s | median run ms | ONNX Runtime ms | ratio | max abs err |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().join("model.onnx").is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for name in &names {
        let d = root.join(name);
        let input = read_npy(&d.join("in0000.npy")).expect("input");
        let expected = read_npy(&d.join("expected.npy")).expect("expected");
        let ort_ms = std::fs::read_to_string(d.join("meta.json"))
            .ok()
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
            .and_then(|v| v["ort_ms"].as_f64());
        for &dev in &devs {
            let t = std::time::Instant::now();
            let m = engine(dev)
                .load_onnx(&d.join("model.onnx"), &ImportOptions::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let load = t.elapsed().as_secs_f64();
            let args = [Value::Tensor(input.clone())];
            let t = std::time::Instant::now();
            let out = m.run(&args).unwrap_or_else(|e| panic!("{name} {dev:?}: {e}"));
            let first = t.elapsed().as_secs_f64();
            compare(&format!("{name} {dev:?}"), &out, &expected);
            let mut times: Vec<f64> = (0..runs)
                .map(|_| {
                    let t = std::time::Instant::now();
                    m.run(&args).unwrap_or_else(|e| panic!("{name} {dev:?}: {e}"));
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            let got = f32_values(out.as_tensor().expect("tensor"));
            let err = got
                .iter()
                .zip(&f32_values(&expected))
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            let (ort, ratio) = match ort_ms {
                Some(o) => (format!("{o:.1}"), format!("{:.2}x", median / o)),
                None => ("-".into(), "-".into()),
            };
            println!("| {name} | {dev:?} | {load:.2} | {first:.2} | {median:.1} | {ort} | {ratio} | {err:.1e} |");
        }
    }
    println!("{} networks (directories with a model.onnx)", names.len());
}

/// The values `low_precision_casts_match_ml_dtypes` casts (as `float32`).
const CAST_VALUES: [f32; 35] = [
    0.0,
    -0.0,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    1.0,
    -1.0,
    448.0,
    464.0,
    465.0,
    240.0,
    248.0,
    57344.0,
    61440.0,
    61439.0,
    6.0,
    7.0,
    1e6,
    -1e6,
    1e-7,
    -1e-7,
    0.001953125,
    0.0009765625,
    0.0029296875,
    7.629_394_5e-6,
    3.814_697_3e-6,
    1.144_409_2e-5,
    0.25,
    0.75,
    1.25,
    0.4765625,
    0.1,
    -3.5,
    3.0,
    5.0,
];

/// `np.array(CAST_VALUES, np.float32).astype(ml_dtypes.<dtype>).view(np.uint8)`
/// (ml_dtypes 0.6.0).
const CAST_BITS: [(&str, [u8; 35]); 6] = [
    (
        "float8_e4m3fn",
        [
            0x00, 0x80, 0x7f, 0x7f, 0xff, 0x38, 0xb8, 0x7e, 0x7e, 0x7f, 0x77, 0x78, 0x7f, 0x7f, 0x7f, 0x4c, 0x4e, 0x7f,
            0xff, 0x00, 0x80, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x28, 0x34, 0x3a, 0x2f, 0x1d, 0xc6, 0x44, 0x4a,
        ],
    ),
    (
        "float8_e4m3fnuz",
        [
            0x00, 0x00, 0x80, 0x80, 0x80, 0x40, 0xc0, 0x80, 0x80, 0x80, 0x7f, 0x80, 0x80, 0x80, 0x80, 0x54, 0x56, 0x80,
            0x80, 0x00, 0x00, 0x02, 0x01, 0x03, 0x00, 0x00, 0x00, 0x30, 0x3c, 0x42, 0x37, 0x25, 0xce, 0x4c, 0x52,
        ],
    ),
    (
        "float8_e5m2",
        [
            0x00, 0x80, 0x7e, 0x7c, 0xfc, 0x3c, 0xbc, 0x5f, 0x5f, 0x5f, 0x5c, 0x5c, 0x7b, 0x7c, 0x7b, 0x46, 0x47, 0x7c,
            0xfc, 0x00, 0x80, 0x18, 0x14, 0x1a, 0x00, 0x00, 0x01, 0x34, 0x3a, 0x3d, 0x38, 0x2e, 0xc3, 0x42, 0x45,
        ],
    ),
    (
        "float8_e5m2fnuz",
        [
            0x00, 0x00, 0x80, 0x80, 0x80, 0x40, 0xc0, 0x63, 0x63, 0x63, 0x60, 0x60, 0x7f, 0x80, 0x7f, 0x4a, 0x4b, 0x80,
            0x80, 0x00, 0x00, 0x1c, 0x18, 0x1e, 0x01, 0x00, 0x02, 0x38, 0x3e, 0x41, 0x3c, 0x32, 0xc7, 0x46, 0x49,
        ],
    ),
    (
        "float4_e2m1fn",
        [
            0x00, 0x08, 0x08, 0x07, 0x0f, 0x02, 0x0a, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07,
            0x0f, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x01, 0x00, 0x0e, 0x05, 0x06,
        ],
    ),
    (
        "float8_e8m0fnu",
        [
            0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0x88, 0x88, 0x88, 0x87, 0x87, 0x8f, 0x8f, 0x8f, 0x82, 0x82, 0x93,
            0xff, 0x68, 0xff, 0x76, 0x75, 0x77, 0x6e, 0x6d, 0x6f, 0x7d, 0x7f, 0x7f, 0x7e, 0x7c, 0xff, 0x81, 0x81,
        ],
    ),
];

/// `R.astype` from `float32` to each float8 type, `float4_e2m1fn` and `float8_e8m0fnu`
/// gives `ml_dtypes`' bits on the host and the GPU (special values, overflow, ties,
/// subnormals); casting back to `float32` and the sub-byte integer casts (wrapping
/// from `int32`, saturating from `float32`) agree on both devices.
#[test]
fn low_precision_casts_match_ml_dtypes() {
    let n = CAST_VALUES.len();
    let mut outs = Vec::new();
    let mut body = String::new();
    for (k, (dt, _)) in CAST_BITS.iter().enumerate() {
        body += &format!("            c{k} = R.astype(x, \"{dt}\")\n");
        body += &format!("            b{k} = R.astype(c{k}, \"float32\")\n");
        outs.push(format!("c{k}"));
        outs.push(format!("b{k}"));
    }
    for (k, dt) in ["int4", "uint4", "int2", "uint2"].iter().enumerate() {
        body += &format!("            i{k} = R.astype(y, \"{dt}\")\n");
        body += &format!("            f{k} = R.astype(x, \"{dt}\")\n");
        body += &format!("            w{k} = R.astype(i{k}, \"int32\")\n");
        outs.extend([format!("i{k}"), format!("f{k}"), format!("w{k}")]);
    }
    let src = format!(
        "# from tvm.script import relax as R\n@R.function\ndef main(x: R.Tensor(({n},), dtype=\"float32\"), y: R.Tensor(({n},), dtype=\"int32\")):\n        with R.dataflow():\n{body}            t = ({},)\n            R.output(t)\n        return t\n",
        outs.join(", ")
    );
    let module = relax_ir::text::parse(&src)
        .unwrap_or_else(|d| panic!("{d}\n{src}"))
        .into_module();
    let xs: Vec<u8> = CAST_VALUES.iter().flat_map(|v| v.to_le_bytes()).collect();
    let ys: Vec<i32> = (0..n as i32).map(|i| i - 17).collect();
    let yb: Vec<u8> = ys.iter().flat_map(|v| v.to_le_bytes()).collect();
    let args = [
        Value::Tensor(Tensor::from_bytes(relax_ir::DataType::FLOAT32, &[n as i64], xs).expect("x")),
        Value::Tensor(Tensor::from_bytes(relax_ir::DataType::INT32, &[n as i64], yb).expect("y")),
    ];
    let mut results: Vec<Vec<Vec<u8>>> = Vec::new();
    for device in devices() {
        let out = engine(device)
            .load(&module)
            .unwrap_or_else(|e| panic!("{device:?}: {e}"))
            .run("main", &args)
            .unwrap_or_else(|e| panic!("{device:?}: {e}"));
        let fields = out.as_tuple().expect("a tuple").to_vec();
        let bytes: Vec<Vec<u8>> = fields
            .iter()
            .map(|f| f.as_tensor().expect("tensor").to_bytes().expect("bytes"))
            .collect();
        for (k, (dt, want)) in CAST_BITS.iter().enumerate() {
            assert_eq!(bytes[2 * k], want.to_vec(), "{dt} {device:?}");
            // back to float32: the format's value of each code
            let f = dt.parse::<relax_ir::DataType>().unwrap().mini_float().unwrap();
            for (i, c) in bytes[2 * k + 1].chunks_exact(4).enumerate() {
                let got = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                let want = f.decode(want[i]) as f32;
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{dt} -> float32 {device:?}: element {i}: {got} != {want}"
                );
            }
        }
        // int4 (wrap from int32, saturate from float32) and the others
        let base = 2 * CAST_BITS.len();
        for (k, bits) in [(0, 4u32), (1, 4), (2, 2), (3, 2)] {
            let signed = k % 2 == 0;
            let wrap = |v: i64| -> i64 {
                let m = v & ((1 << bits) - 1);
                if signed && m >> (bits - 1) == 1 {
                    m - (1 << bits)
                } else {
                    m
                }
            };
            let (lo, hi) = if signed {
                (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
            } else {
                (0, (1i64 << bits) - 1)
            };
            let i_bytes = &bytes[base + 3 * k];
            let f_bytes = &bytes[base + 3 * k + 1];
            for i in 0..n {
                let w = wrap(ys[i] as i64);
                let stored = if signed {
                    i_bytes[i] as i8 as i64
                } else {
                    i_bytes[i] as i64
                };
                assert_eq!(stored, w, "int {bits} {signed} {device:?} element {i}");
                let v = CAST_VALUES[i];
                let sat = if v.is_nan() { 0 } else { (v as i64).clamp(lo, hi) };
                let stored = if signed {
                    f_bytes[i] as i8 as i64
                } else {
                    f_bytes[i] as i64
                };
                assert_eq!(stored, sat, "float -> int {bits} {signed} {device:?} element {i} ({v})");
            }
            let back: Vec<i32> = bytes[base + 3 * k + 2]
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            assert_eq!(back, ys.iter().map(|&y| wrap(y as i64) as i32).collect::<Vec<_>>());
        }
        results.push(bytes);
    }
    if results.len() == 2 {
        assert_eq!(results[0], results[1], "host and GPU differ");
    }
}

/// Sub-byte ONNX tensors are read packed (low bits first) from `raw_data` and from
/// `int32_data` (one packed byte per value, as `onnx.helper.make_tensor` writes them)
/// and held one per byte; float8 ones from `int32_data` (one per value).
#[test]
fn packed_low_precision_tensors_are_read() {
    let tensor = |data_type: i32, dims: Vec<i64>, int32_data: Vec<i32>, raw: Vec<u8>| proto::TensorProto {
        data_type,
        dims,
        int32_data,
        raw_data: raw,
        name: "t".into(),
        ..Default::default()
    };
    let read = |t: &proto::TensorProto| relax_onnx::tensor::to_ndarray(t, None).expect("reads");
    // make_tensor('a', INT4, [5], [-8, 7, 1, 2, -1]).int32_data == [120, 33, 15]
    let a = read(&tensor(proto::data_type::INT4, vec![5], vec![120, 33, 15], vec![]));
    assert_eq!(a.dtype.to_string(), "int4");
    assert_eq!(a.data, [-8i8, 7, 1, 2, -1].map(|v| v as u8));
    let a = read(&tensor(proto::data_type::INT4, vec![5], vec![], vec![0x78, 0x21, 0x0f]));
    assert_eq!(a.data, [-8i8, 7, 1, 2, -1].map(|v| v as u8));
    // make_tensor('a', INT2, [5], [-2, 1, 1, 0, -1]).int32_data == [22, 3]
    let a = read(&tensor(proto::data_type::INT2, vec![5], vec![22, 3], vec![]));
    assert_eq!(a.data, [-2i8, 1, 1, 0, -1].map(|v| v as u8));
    let a = read(&tensor(proto::data_type::UINT2, vec![5], vec![22, 3], vec![]));
    assert_eq!(a.data, [2, 1, 1, 0, 3]);
    let a = read(&tensor(proto::data_type::UINT4, vec![3], vec![], vec![0xf1, 0x07]));
    assert_eq!(a.data, [1, 15, 7]);
    // make_tensor('a', FLOAT4E2M1, [3], [1.0, 2.0, 6.0]).int32_data == [66, 7]
    let a = read(&tensor(proto::data_type::FLOAT4E2M1, vec![3], vec![66, 7], vec![]));
    assert_eq!(a.dtype.to_string(), "float4_e2m1fn");
    let vals: Vec<f64> = (0..3).map(|i| relax_onnx::tensor::elem_f64(&a, i).unwrap()).collect();
    assert_eq!(vals, [1.0, 2.0, 6.0]);
    // make_tensor('a', FLOAT8E4M3FN, [3], [1.0, 2.0, 448.0]).int32_data == [56, 64, 126]
    let a = read(&tensor(
        proto::data_type::FLOAT8E4M3FN,
        vec![3],
        vec![56, 64, 126],
        vec![],
    ));
    assert_eq!(a.dtype.to_string(), "float8_e4m3fn");
    let vals: Vec<f64> = (0..3).map(|i| relax_onnx::tensor::elem_f64(&a, i).unwrap()).collect();
    assert_eq!(vals, [1.0, 2.0, 448.0]);
    // packing is the inverse of unpacking
    let d: relax_ir::DataType = "int4".parse().unwrap();
    let held = [-8i8, 7, 1, 2, -1].map(|v| v as u8);
    assert_eq!(relax_onnx::tensor::pack(d, &held), [0x78, 0x21, 0x0f]);
    // sizes are checked in packed bytes
    let err = relax_onnx::tensor::to_ndarray(&tensor(proto::data_type::INT4, vec![5], vec![], vec![0x78, 0x21]), None)
        .expect_err("two bytes hold four int4 values");
    assert!(err.to_string().contains("needs 3"), "{err}");
    let err = relax_onnx::tensor::to_ndarray(&tensor(proto::data_type::INT4, vec![5], vec![120, 33], vec![]), None)
        .expect_err("two packed values");
    assert!(err.to_string().contains("int32_data"), "{err}");
}

/// TVM 0.27's `LegalizeOps()(mod).script()` of casts to `float8_e4m3fn`, `int4` and
/// `float4_e2m1fn`.
const TVM_LOW_PRECISION_CASTS: &str = r#"# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def cast(x: T.Buffer((T.int64(4),), "float32"), compute: T.Buffer((T.int64(4),), "float8_e4m3fn")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0 in range(T.int64(4)):
            with T.sblock("compute"):
                v_i0 = T.axis.spatial(T.int64(4), i0)
                T.reads(x[v_i0])
                T.writes(compute[v_i0])
                compute[v_i0] = T.Cast("float8_e4m3fn", x[v_i0])

    @T.prim_func(private=True, s_tir=True)
    def cast1(y: T.Buffer((T.int64(4),), "float8_e4m3fn"), compute: T.Buffer((T.int64(4),), "int4")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0 in range(T.int64(4)):
            with T.sblock("compute"):
                v_i0 = T.axis.spatial(T.int64(4), i0)
                T.reads(y[v_i0])
                T.writes(compute[v_i0])
                compute[v_i0] = T.Cast("int4", y[v_i0])

    @T.prim_func(private=True, s_tir=True)
    def cast2(x: T.Buffer((T.int64(4),), "float32"), compute: T.Buffer((T.int64(4),), "float4_e2m1fn")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0 in range(T.int64(4)):
            with T.sblock("compute"):
                v_i0 = T.axis.spatial(T.int64(4), i0)
                T.reads(x[v_i0])
                T.writes(compute[v_i0])
                compute[v_i0] = T.Cast("float4_e2m1fn", x[v_i0])

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tuple(R.Tensor((4,), dtype="float8_e4m3fn"), R.Tensor((4,), dtype="int4"), R.Tensor((4,), dtype="float4_e2m1fn")):
        cls = Module
        y = R.call_tir(cls.cast, (x,), out_ty=R.Tensor((4,), dtype="float8_e4m3fn"))
        z = R.call_tir(cls.cast1, (y,), out_ty=R.Tensor((4,), dtype="int4"))
        w = R.call_tir(cls.cast2, (x,), out_ty=R.Tensor((4,), dtype="float4_e2m1fn"))
        return (y, z, w)
"#;

/// The low-precision dtypes parse and print under TVM's names: TVM's legalized
/// program parses, prints as it parses again, and runs.
#[test]
fn low_precision_dtypes_parse_and_print_as_tvm() {
    let module = relax_ir::text::parse(TVM_LOW_PRECISION_CASTS)
        .unwrap_or_else(|d| panic!("{d}"))
        .into_module();
    let text = print_program(&Program::Module(module.clone()));
    for s in [
        r#"T.Buffer((T.int64(4),), "float8_e4m3fn")"#,
        r#"T.Cast("int4", y[v_i0])"#,
        r#"R.Tensor((4,), dtype="float4_e2m1fn")"#,
    ] {
        assert!(text.contains(s), "{s} missing from\n{text}");
    }
    let again = relax_ir::text::parse(&text).expect("reparses").into_module();
    assert_eq!(print_program(&Program::Module(again)), text);
    let x: Vec<u8> = [0.3f32, -465.0, 1e-3, 7.5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let x = Tensor::from_bytes(relax_ir::DataType::FLOAT32, &[4], x).expect("x");
    let out = engine(DeviceChoice::Cpu)
        .load(&module)
        .expect("loads")
        .run("main", &[Value::Tensor(x)])
        .expect("runs");
    let f = out.as_tuple().expect("tuple");
    let bytes = |i: usize| f[i].as_tensor().expect("tensor").to_bytes().expect("bytes");
    // ml_dtypes: [0.3, -465, 1e-3, 7.5] as float8_e4m3fn, that as int4, x as float4_e2m1fn
    assert_eq!(bytes(0), [0x2a, 0xff, 0x01, 0x4f]);
    assert_eq!(bytes(1), [0, 0, 0, 7]);
    assert_eq!(bytes(2), [0x01, 0x0f, 0x00, 0x07]);
    // constants of these dtypes print as their values and parse back to the same bits
    let src = r#"# from tvm.script import relax as R
@R.function
def main() -> R.Tuple(R.Tensor((3,), dtype="float8_e5m2"), R.Tensor((3,), dtype="int4")):
    return (R.const([0.5, -57344.0, 1.52587890625e-05], "float8_e5m2"), R.const([-8, 7, -1], "int4"))
"#;
    let module = relax_ir::text::parse(src)
        .unwrap_or_else(|d| panic!("{d}"))
        .into_module();
    let text = print_program(&Program::Module(module));
    assert!(text.contains("-57344.0"), "{text}");
    let again = relax_ir::text::parse(&text).expect("reparses").into_module();
    assert_eq!(print_program(&Program::Module(again.clone())), text);
    let out = engine(DeviceChoice::Cpu)
        .load(&again)
        .expect("loads")
        .run("main", &[])
        .expect("runs");
    let f = out.as_tuple().expect("tuple");
    let bytes = |i: usize| f[i].as_tensor().expect("tensor").to_bytes().expect("bytes");
    assert_eq!(bytes(0), [0x38, 0xfb, 0x01]);
    assert_eq!(bytes(1), [0xf8, 0x07, 0xff]);
}

/// One node test: import `dir/model.onnx`, run it on `device` with
/// `test_data_set_0/input_*.pb`, compare with `output_*.pb`. `Ok(())` when it passes,
/// else the reason (prefixed `import:` when the importer refused the model).
fn run_node_test(case: &Path, device: DeviceChoice) -> Result<(), String> {
    let data = case.join("test_data_set_0");
    // Shapes, axes, sizes and scales given as graph inputs must be known when
    // importing: bind the test's value of each input the importer names as an
    // initializer (a constant) and import again.
    let bytes = std::fs::read(case.join("model.onnx")).map_err(|e| e.to_string())?;
    let mut model = ModelProto::decode(bytes.as_slice()).map_err(|e| e.to_string())?;
    let mut imported = None;
    for _ in 0..8 {
        let e = match import_bytes(&model.encode_to_vec(), Some(case), &ImportOptions::default()) {
            Ok(i) => {
                imported = Some(i);
                break;
            }
            Err(e) => e,
        };
        let graph = model.graph.as_mut().ok_or("no graph")?;
        let named = graph
            .input
            .iter()
            .position(|vi| e.message.contains(&format!("(`{}`) must be known", vi.name)));
        // a value computed from graph inputs: bind the first integer or scalar input left
        let int_input = || {
            graph.input.iter().position(|vi| {
                matches!(
                    vi.r#type.as_ref().and_then(|t| t.value.as_ref()),
                    Some(proto::type_proto::Value::TensorType(t))
                        if t.elem_type == proto::data_type::INT64
                            || t.elem_type == proto::data_type::INT32
                            || t.shape.as_ref().is_some_and(|s| s.dim.is_empty())
                )
            })
        };
        let k = match named {
            Some(k) => k,
            None if e.message.contains("must be known") => match int_input() {
                Some(k) => k,
                None => return Err(format!("import: {e}")),
            },
            None => return Err(format!("import: {e}")),
        };
        // the .pb files are numbered by the position among the original inputs
        let bytes = std::fs::read(case.join("model.onnx")).map_err(|e| e.to_string())?;
        let original = ModelProto::decode(bytes.as_slice()).map_err(|e| e.to_string())?;
        let name = graph.input[k].name.clone();
        let i = original
            .graph
            .as_ref()
            .and_then(|g| g.input.iter().position(|vi| vi.name == name))
            .ok_or("input not found")?;
        let pb = data.join(format!("input_{i}.pb"));
        let b = std::fs::read(&pb).map_err(|e| format!("import: {e}"))?;
        let mut t = proto::TensorProto::decode(b.as_slice()).map_err(|e| e.to_string())?;
        t.name = name;
        graph.input.remove(k);
        graph.initializer.push(t);
    }
    let imported = imported.ok_or("import: too many inputs must be known")?;
    let read = |name: String| -> Result<Option<relax_ir::NDArray>, String> {
        let p = data.join(&name);
        if !p.is_file() {
            return Ok(None);
        }
        let bytes = std::fs::read(&p).map_err(|e| e.to_string())?;
        let t = proto::TensorProto::decode(bytes.as_slice()).map_err(|e| format!("{name}: {e}"))?;
        relax_onnx::tensor::to_ndarray(&t, None)
            .map(Some)
            .map_err(|e| format!("{name}: {e}"))
    };
    let to_tensor =
        |a: &relax_ir::NDArray| Tensor::from_bytes(a.dtype, &a.shape, a.data.clone()).map_err(|e| e.to_string());
    // the graph inputs still inputs of `main`, matched by name with the .pb files
    let mut by_name = std::collections::HashMap::new();
    for i in 0.. {
        let Ok(bytes) = std::fs::read(data.join(format!("input_{i}.pb"))) else {
            break;
        };
        let t = proto::TensorProto::decode(bytes.as_slice()).map_err(|e| e.to_string())?;
        by_name.insert(t.name.clone(), i);
    }
    let main = imported.module.relax_function("main").ok_or("no main")?;
    let mut args = Vec::new();
    for (k, p) in main.params.iter().take(imported.num_inputs).enumerate() {
        let i = by_name.get(p.name()).copied().unwrap_or(k);
        let a = read(format!("input_{i}.pb"))?.ok_or_else(|| format!("input_{i}.pb missing"))?;
        args.push(Value::Tensor(to_tensor(&a)?));
    }
    let mut expected = Vec::new();
    while let Some(a) = read(format!("output_{}.pb", expected.len()))? {
        expected.push(a);
    }
    let weights = relax_engine::onnx::weights_of(&imported).map_err(|e| e.to_string())?;
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<Value, String> {
        let loaded = engine(device)
            .load(&imported.module)
            .map_err(|e| format!("load: {e}"))?;
        loaded
            .run_named("main", &args, &weights)
            .map_err(|e| format!("run: {e}"))
    }))
    .map_err(|_| "panic".to_string())??;
    let got: Vec<Value> = match out.as_tuple() {
        Some(f) => f.to_vec(),
        None => vec![out],
    };
    if got.len() != expected.len() {
        return Err(format!("{} outputs, expected {}", got.len(), expected.len()));
    }
    for (k, (g, e)) in got.iter().zip(&expected).enumerate() {
        let g = g.as_tensor().ok_or_else(|| format!("output {k} is not a tensor"))?;
        if g.dtype() != e.dtype || g.shape() != e.shape.as_slice() {
            return Err(format!(
                "output {k}: {} {:?}, expected {} {:?}",
                g.dtype(),
                g.shape(),
                e.dtype,
                e.shape
            ));
        }
        let gv = g.to_f64_values().map_err(|e| e.to_string())?;
        for (i, &a) in gv.iter().enumerate() {
            let b = relax_onnx::tensor::elem_f64(e, i).ok_or("bad expected data")?;
            let ok = if e.dtype.is_float() {
                // an infinity must be met exactly (the tolerance of one is infinite)
                (a.is_nan() && b.is_nan()) || a == b || (b.is_finite() && (a - b).abs() <= 1e-5 + 1e-3 * b.abs())
            } else {
                a == b
            };
            if !ok {
                return Err(format!("output {k} element {i}: got {a}, expected {b}"));
            }
        }
    }
    Ok(())
}

/// ONNX's backend node tests (a directory made by the onnx_node generator, `node/test_*`)
/// imported by this importer and run on the host (and the GPU with `RELAX_ONNX_GPU=1`):
/// prints the pass rate per operator. Skips when `RELAX_ONNX_NODE_DIR` is not set;
/// `RELAX_ONNX_NODE_FILTER` keeps the tests whose names contain it.
#[test]
fn onnx_node_tests() {
    let Some(root) = std::env::var_os("RELAX_ONNX_NODE_DIR") else {
        println!("RELAX_ONNX_NODE_DIR is not set: the ONNX node tests are skipped");
        return;
    };
    let root = PathBuf::from(root);
    let node = if root.join("node").is_dir() {
        root.join("node")
    } else {
        root
    };
    let filter = std::env::var("RELAX_ONNX_NODE_FILTER").unwrap_or_default();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&node)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    cases.retain(|p| p.join("model.onnx").is_file() && p.to_string_lossy().contains(&filter));
    cases.sort();
    let mut devs = vec![DeviceChoice::Cpu];
    if std::env::var_os("RELAX_ONNX_GPU").is_some() && gpu_available() {
        devs.push(DeviceChoice::Gpu);
    }
    // per operator: (tests, imported, passed per device)
    let mut table: std::collections::BTreeMap<String, (usize, usize, Vec<usize>)> = Default::default();
    let verbose = std::env::var_os("RELAX_ONNX_NODE_VERBOSE").is_some();
    for case in &cases {
        let op = std::fs::read(case.join("model.onnx"))
            .ok()
            .and_then(|b| ModelProto::decode(b.as_slice()).ok())
            .and_then(|m| m.graph)
            .and_then(|g| g.node.first().map(|n| n.op_type.clone()))
            .unwrap_or_else(|| "?".into());
        let row = table.entry(op).or_insert((0, 0, vec![0; devs.len()]));
        row.0 += 1;
        let mut imported = true;
        for (k, &dev) in devs.iter().enumerate() {
            match run_node_test(case, dev) {
                Ok(()) => row.2[k] += 1,
                Err(e) => {
                    imported &= !e.starts_with("import:");
                    if verbose {
                        println!(
                            "{} {dev:?}: {}",
                            case.display(),
                            e.chars().take(200).collect::<String>()
                        );
                    }
                }
            }
        }
        if imported {
            row.1 += 1;
        }
    }
    let total: usize = table.values().map(|r| r.0).sum();
    let imported: usize = table.values().map(|r| r.1).sum();
    println!(
        "{:<28} {:>5} {:>8} {}",
        "operator",
        "tests",
        "imported",
        devs.iter().map(|d| format!("{d:?} pass")).collect::<Vec<_>>().join(" ")
    );
    for (op, (n, i, p)) in &table {
        println!(
            "{op:<28} {n:>5} {i:>8} {}",
            p.iter().map(|v| format!("{v:>8}")).collect::<Vec<_>>().join(" ")
        );
    }
    for (k, d) in devs.iter().enumerate() {
        let passed: usize = table.values().map(|r| r.2[k]).sum();
        println!(
            "{d:?}: {passed} of {total} node tests pass ({:.1}%); {imported} imported",
            100.0 * passed as f64 / total.max(1) as f64
        );
    }
}

/// A few of ONNX's backend node tests checked in (`tests/onnx/node`, one directory per
/// case as ONNX ships them: `model.onnx` and `test_data_set_0/{input,output}_*.pb`),
/// one or more per operator family the importer composes from Relax operators
/// (Attention, Resize, losses, quantization, normalizations, windows, ...): each
/// imports and gives ONNX's expected outputs on the host and the GPU.
#[test]
fn checked_in_node_tests_pass() {
    let root = dir().join("node");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/onnx/node")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("model.onnx").is_file())
        .collect();
    cases.sort();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let mut failures = Vec::new();
    for device in devices() {
        for case in &cases {
            if let Err(e) = run_node_test(case, device) {
                failures.push(format!("{} {device:?}: {e}", case.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
