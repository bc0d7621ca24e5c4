//! GPU kernel compilation at load and the persistent kernel cache through the
//! engine: a module's kernels are compiled when it is loaded (its first run compiles
//! nothing), and a second engine sharing the cache folder (as a second process
//! would) takes every program from it and computes the same values, equal to the
//! host's. Skipped when there is no wgpu adapter (Mesa's lavapipe counts).

mod common;

use ndarray::{ArrayD, IxDyn};
use relax_engine::{CompileConfig, DeviceChoice, Engine, EngineConfig, Value};

const SRC: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 16), "float32"), w: R.Tensor((16, 8), "float32"), b: R.Tensor((8,), "float32")) -> R.Tensor((4, 8), "float32"):
        with R.dataflow():
            h = R.matmul(x, w)
            h1 = R.add(h, b)
            h2 = R.nn.relu(h1)
            y = R.nn.softmax(h2, axis=-1)
            s = R.sum(y, axis=[0])
            z = R.multiply(y, s)
            R.output(z)
        return z
"#;

fn tensor(shape: &[usize], f: impl Fn(usize) -> f32) -> Value {
    let n: usize = shape.iter().product();
    let a = ArrayD::from_shape_vec(IxDyn(shape), (0..n).map(f).collect()).expect("shape");
    relax_engine::Tensor::from_array(&a).into()
}

fn args() -> Vec<Value> {
    vec![
        tensor(&[4, 16], |i| ((i * 7) % 13) as f32 / 13.0 - 0.5),
        tensor(&[16, 8], |i| ((i * 5) % 11) as f32 / 11.0 - 0.4),
        tensor(&[8], |i| i as f32 / 8.0 - 0.3),
    ]
}

fn values(v: &Value) -> Vec<f64> {
    v.as_tensor().expect("tensor").to_f64_values().expect("values")
}

fn gpu_engine(compile: CompileConfig) -> Engine {
    Engine::new(EngineConfig {
        device: DeviceChoice::Gpu,
        compile,
        ..EngineConfig::default()
    })
}

fn module() -> relax_ir::IRModule {
    relax_ir::text::parse(SRC).expect("parses").into_module()
}

fn host_values() -> Vec<f64> {
    let host = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        ..EngineConfig::default()
    });
    values(&host.run(&module(), "main", &args()).expect("host run"))
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-5 + 1e-5 * w.abs(), "element {i}: {g} vs {w}");
    }
}

#[test]
fn kernels_compile_at_load_and_a_second_engine_reuses_the_cache() {
    let dir = common::Scratch::new("kernel-cache", "engines");
    let config = CompileConfig {
        disk_cache: Some(dir.to_path_buf()),
        ..CompileConfig::default()
    };
    let first = gpu_engine(config.clone());
    let loaded = match first.load(&module()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("no GPU ({e}); test skipped");
            return;
        }
    };
    let at_load = loaded.jit_counters().expect("a GPU JIT");
    assert!(at_load.gpu_programs_compiled >= 3, "compiled at load: {at_load:?}");
    let out1 = values(&loaded.run("main", &args()).expect("first engine's run"));
    let after_run = loaded.jit_counters().expect("a GPU JIT");
    assert_eq!(
        after_run.gpu_programs_compiled, at_load.gpu_programs_compiled,
        "the first run compiles nothing"
    );
    assert_eq!(after_run.disk_cache_hits, 0);
    assert_eq!(after_run.disk_cache_writes, after_run.gpu_programs_compiled);
    assert_close(&out1, &host_values());

    // A second engine on the same folder: every program from the cache.
    let second = gpu_engine(config);
    let loaded2 = second.load(&module()).expect("loads");
    let out2 = values(&loaded2.run("main", &args()).expect("second engine's run"));
    let c = loaded2.jit_counters().expect("a GPU JIT");
    assert_eq!(c.disk_cache_hits, after_run.gpu_programs_compiled, "{c:?}");
    assert_eq!((c.disk_cache_misses, c.disk_cache_writes), (0, 0), "{c:?}");
    assert_eq!(out2, out1, "the cached kernels compute the same values");
}

#[test]
fn without_prewarm_or_cache_kernels_compile_on_first_call_in_memory() {
    let dir = common::Scratch::new("kernel-cache", "default");
    let engine = gpu_engine(CompileConfig {
        prewarm: false,
        ..CompileConfig::default()
    });
    let loaded = match engine.load(&module()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("no GPU ({e}); test skipped");
            return;
        }
    };
    assert_eq!(loaded.jit_counters().expect("a GPU JIT").gpu_programs_compiled, 0);
    let out = values(&loaded.run("main", &args()).expect("run"));
    let c = loaded.jit_counters().expect("a GPU JIT");
    assert!(c.gpu_programs_compiled >= 3);
    assert_eq!((c.disk_cache_hits, c.disk_cache_misses, c.disk_cache_writes), (0, 0, 0));
    assert_close(&out, &host_values());
    // The default configuration writes nothing to disk.
    assert_eq!(EngineConfig::default().compile.disk_cache, None);
    assert_eq!(std::fs::read_dir(&*dir).expect("dir").count(), 0);
}
