//! Real ImageNet networks, imported from ONNX by Apache TVM 0.27 and run end to end on
//! the host and on the GPU, compared with ONNX Runtime's output (`|ours - expected| <=
//! 1e-4 + 1e-3 * |expected|` everywhere, and the same argmax).
//!
//! - `squeezenet_matches_onnx_runtime` uses the data in `tests/models/squeezenet/`
//!   (see its README; the program is written by its `program.rs`) and runs in CI.
//! - `real_models_from_dir` (ignored by default) runs every model found in the directory
//!   named by `RELAX_REALMODELS_DIR`, laid out as `<dir>/<name>/{prog.py, in0000.npy, ...,
//!   expected.npy}` (squeezenet, shufflenet, resnet50):
//!   `RELAX_REALMODELS_DIR=DIR cargo test --release --test real_models -- --ignored --nocapture`

#[path = "models/squeezenet/program.rs"]
mod squeezenet;

use std::path::{Path, PathBuf};
use std::time::Instant;

use relax_engine::params::{read_npy, read_npy_inputs, Params};
use relax_engine::{ArrayValue, DeviceChoice, Engine, EngineConfig, Tensor, Value};
use relax_ir::IRModule;

const RTOL: f64 = 1e-3;
const ATOL: f64 = 1e-4;

fn parse(path: &Path) -> IRModule {
    let src = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    relax_ir::text::parse(&src)
        .unwrap_or_else(|d| panic!("{}: {d}", path.display()))
        .into_module()
}

fn f32_values(t: &Tensor) -> Vec<f32> {
    match t.to_array_value().expect("readable result") {
        ArrayValue::F32(a) => a.iter().copied().collect(),
        other => panic!("expected a float32 result, got {other:?}"),
    }
}

fn argmax(v: &[f32]) -> usize {
    v.iter()
        .enumerate()
        .fold(
            (0, f32::NEG_INFINITY),
            |(bi, bv), (i, &x)| if x > bv { (i, x) } else { (bi, bv) },
        )
        .0
}

/// Panic unless `got` matches `expected` within the tolerances and has its argmax.
fn compare(what: &str, got: &Value, expected: &Tensor) {
    let t = got
        .as_tensor()
        .unwrap_or_else(|| panic!("{what}: the result is not a tensor"));
    assert_eq!(t.shape(), expected.shape(), "{what}: shape");
    let (g, e) = (f32_values(t), f32_values(expected));
    for (i, (&a, &b)) in g.iter().zip(&e).enumerate() {
        assert!(
            (a as f64 - b as f64).abs() <= ATOL + RTOL * (b as f64).abs(),
            "{what}: element {i}: got {a}, expected {b}"
        );
    }
    let max_diff = g.iter().zip(&e).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert_eq!(argmax(&g), argmax(&e), "{what}: argmax");
    println!("{what}: ok (max |diff| {max_diff:e}, argmax {})", argmax(&e));
}

/// Run `main` of `module` on `device` with `positional` then `named` arguments.
fn run(module: &IRModule, device: DeviceChoice, positional: &[Value], named: &Params) -> Value {
    let engine = Engine::new(EngineConfig {
        device,
        ..EngineConfig::default()
    });
    let loaded = engine.load(module).expect("the model loads");
    let t = Instant::now();
    let out = loaded.run_named("main", positional, named).expect("the model runs");
    println!("  {device:?}: {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    out
}

/// True when a wgpu adapter exists; otherwise prints why the GPU half is skipped.
fn gpu_available() -> bool {
    match relax_gpu_runtime::GpuRuntime::shared_default() {
        Ok(_) => true,
        Err(e) => {
            println!("no wgpu adapter ({e}): skipping the GPU half");
            false
        }
    }
}

#[test]
fn squeezenet_matches_onnx_runtime() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models/squeezenet");
    let module = relax_ir::text::parse(&squeezenet::squeezenet_program())
        .unwrap_or_else(|d| panic!("the SqueezeNet program: {d}"))
        .into_module();
    let params = Params::read_npz(&dir.join("params.npz")).expect("params.npz");
    let expected = read_npy(&dir.join("expected.npy")).expect("expected.npy");
    let out = run(&module, DeviceChoice::Cpu, &[], &params);
    compare("squeezenet host", &out, &expected);
    if gpu_available() {
        let out = run(&module, DeviceChoice::Gpu, &[], &params);
        compare("squeezenet gpu", &out, &expected);
    }
}

/// The `in*.npy` files of a prep.py directory, in parameter order.
fn positional_args(dir: &Path) -> Vec<Value> {
    read_npy_inputs(dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(Value::Tensor)
        .collect()
}

#[test]
#[ignore = "needs RELAX_REALMODELS_DIR (a directory made by prep.py); ResNet-50 on the host takes minutes"]
fn real_models_from_dir() {
    let Some(root) = std::env::var_os("RELAX_REALMODELS_DIR").map(PathBuf::from) else {
        panic!("set RELAX_REALMODELS_DIR to a directory holding squeezenet/, shufflenet/, resnet50/ made by prep.py");
    };
    let gpu = gpu_available();
    let mut ran = 0;
    for name in ["squeezenet", "shufflenet", "resnet50"] {
        let dir = root.join(name);
        if !dir.join("prog.py").is_file() {
            println!("{name}: not in {}, skipped", root.display());
            continue;
        }
        println!("{name}:");
        let module = parse(&dir.join("prog.py"));
        let args = positional_args(&dir);
        let expected = read_npy(&dir.join("expected.npy")).expect("expected.npy");
        let none = Params::new();
        compare(
            &format!("{name} host"),
            &run(&module, DeviceChoice::Cpu, &args, &none),
            &expected,
        );
        if gpu {
            compare(
                &format!("{name} gpu"),
                &run(&module, DeviceChoice::Gpu, &args, &none),
                &expected,
            );
        }
        ran += 1;
    }
    assert!(ran > 0, "no model found in {}", root.display());
}
