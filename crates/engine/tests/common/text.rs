//! Helpers for tests written as TVMScript text: parsing, engines per device, values.

use std::sync::{Arc, Mutex};

use ndarray::{ArrayD, IxDyn};
use relax_engine::{ArrayValue, DeviceChoice, Engine, EngineConfig, Loaded, Value};
use relax_ir::IRModule;

/// The module `src` holds; panics with the rendered diagnostic when it does not parse.
pub fn parse(src: &str) -> IRModule {
    match relax_ir::text::parse(src) {
        Ok(p) => p.into_module(),
        Err(d) => panic!("parse error: {}", d.render("test.py", src, false)),
    }
}

/// An engine with the default configuration on `device`.
pub fn engine(device: DeviceChoice) -> Engine {
    Engine::new(EngineConfig {
        device,
        ..EngineConfig::default()
    })
}

/// A GPU engine, or `None` when no adapter exists (saying so, and what is skipped).
pub fn gpu_engine(skipped: &str) -> Option<Engine> {
    match relax_gpu_runtime::GpuRuntime::shared_default() {
        Ok(_) => Some(engine(DeviceChoice::Gpu)),
        Err(e) => {
            eprintln!("no GPU adapter ({e}): {skipped}");
            None
        }
    }
}

/// The engines to check: the host, and the GPU when an adapter exists.
pub fn engines() -> Vec<(&'static str, Engine)> {
    let mut v = vec![("cpu", engine(DeviceChoice::Cpu))];
    v.extend(gpu_engine("GPU half not checked").map(|e| ("gpu", e)));
    v
}

/// A default engine whose `R.print` lines are collected in the returned list.
pub fn printing_engine() -> (Engine, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let engine = Engine::default().with_print_sink(move |s| sink.lock().unwrap().push(s.to_string()));
    (engine, lines)
}

/// The module `src` holds, loaded on each of [`engines`], with the device's name.
pub fn loaded_everywhere(src: &str) -> Vec<(&'static str, Loaded)> {
    let module = parse(src);
    engines()
        .into_iter()
        .map(|(dev, e)| match e.load(&module) {
            Ok(loaded) => (dev, loaded),
            Err(err) => panic!("{dev}: the module does not load: {err}"),
        })
        .collect()
}

/// A float32 tensor of `shape` whose element `i` (row-major) is `f(i)`.
pub fn f32_tensor(shape: &[usize], f: impl Fn(usize) -> f32) -> Value {
    let n: usize = shape.iter().product();
    ArrayD::from_shape_vec(IxDyn(shape), (0..n).map(f).collect())
        .expect("the shape holds the elements")
        .into()
}

/// The elements of a float32 tensor value, row-major.
pub fn f32_values(v: &Value) -> Vec<f32> {
    v.as_tensor()
        .expect("tensor")
        .to_array::<f32>()
        .expect("float32")
        .iter()
        .copied()
        .collect()
}

/// Run `src`'s `main` with `args` on each of `engines`; a failed run's error as text.
pub fn run_on(
    engines: Vec<(&'static str, Engine)>,
    src: &str,
    args: &[Value],
) -> Vec<(&'static str, Result<Value, String>)> {
    let module = parse(src);
    engines
        .into_iter()
        .map(|(dev, e)| (dev, e.run(&module, "main", args).map_err(|e| e.to_string())))
        .collect()
}

/// Output `i` of a tuple result (or the result itself when `i` is `None`), each
/// element written with `Display` (`NaN`, `inf`, `-inf`, numbers, `true`).
pub fn strings(out: &Value, i: Option<usize>) -> Vec<String> {
    let t = match i {
        Some(i) => out.as_tuple().expect("tuple")[i].as_tensor().expect("tensor"),
        None => out.as_tensor().expect("tensor"),
    };
    fn all<T: std::fmt::Display>(a: &ArrayD<T>) -> Vec<String> {
        a.iter().map(|x| x.to_string()).collect()
    }
    match t.to_array_value().expect("array") {
        ArrayValue::Bool(a) => all(&a),
        ArrayValue::I8(a) => all(&a),
        ArrayValue::I16(a) => all(&a),
        ArrayValue::I32(a) => all(&a),
        ArrayValue::I64(a) => all(&a),
        ArrayValue::U8(a) => all(&a),
        ArrayValue::U16(a) => all(&a),
        ArrayValue::U32(a) => all(&a),
        ArrayValue::U64(a) => all(&a),
        ArrayValue::F16(a) => all(&a),
        ArrayValue::F32(a) => all(&a),
        ArrayValue::F64(a) => all(&a),
    }
}

/// Owned copies of `v`.
pub fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}
