//! Helpers for tests written as TVMScript text: parsing, engines per device, values.

use std::sync::{Arc, Mutex};

use ndarray::{ArrayD, IxDyn};
use relax_engine::{DeviceChoice, Engine, EngineConfig, Loaded, Value};
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
