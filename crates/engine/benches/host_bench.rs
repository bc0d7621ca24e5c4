//! Host speed against named baselines, measured in one run (medians):
//! - a 1024 x 1024 x 1024 `R.matmul` through `Engine` on the CPU against
//!   ndarray's `.dot()` (goal: at least 0.9x);
//! - elementwise `R.add`, `R.nn.relu`, `R.sigmoid` (host kernel library) and `R.cos`
//!   (legalized TIR on the JIT's host executor) on 4M elements against a plain Rust
//!   loop (goal: at least 0.5x).
//!
//! `cargo bench -p relax-engine --bench host_bench` (`-- --quick` for fewer runs).

use std::time::{Duration, Instant};

use ndarray::{Array2, ArrayD, IxDyn};
use relax_engine::{DeviceChoice, Engine, EngineConfig, Loaded, Tensor, Value};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Median time of `f` over `runs` runs after one warm-up.
fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8) as f32 / 16777216.0 - 0.5)
        .collect()
}

fn load(src: &str) -> Loaded {
    let module = relax_ir::text::parse(src)
        .expect("the benchmark program parses")
        .into_module();
    Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        ..EngineConfig::default()
    })
    .load(&module)
    .expect("the benchmark program loads")
}

fn tensor(shape: &[usize], v: Vec<f32>) -> Value {
    Value::Tensor(Tensor::from_array(
        &ArrayD::from_shape_vec(IxDyn(shape), v).expect("shape"),
    ))
}

fn report(what: &str, ours: Duration, base: Duration, baseline: &str, goal: f64, work: Option<f64>) {
    let ratio = base.as_secs_f64() / ours.as_secs_f64();
    let rate = work.map_or(String::new(), |w| {
        format!(
            ", {:.1} vs {:.1} GFLOP/s",
            w / ours.as_secs_f64() / 1e9,
            w / base.as_secs_f64() / 1e9
        )
    });
    println!(
        "{what:<22} ours {:>9.3} ms  {baseline} {:>9.3} ms  ratio {ratio:.2}x (goal >= {goal}x: {}){rate}",
        ours.as_secs_f64() * 1e3,
        base.as_secs_f64() * 1e3,
        if ratio >= goal { "met" } else { "NOT met" }
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runs = if quick { 5 } else { 21 };
    println!(
        "host benchmark: {} rayon threads, medians of {runs} runs (ratio = baseline time / ours)",
        rayon::current_num_threads()
    );

    // 1024 matmul.
    let n = 1024;
    let mm = load(
        r#"
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((1024, 1024), "float32"), b: R.Tensor((1024, 1024), "float32")) -> R.Tensor((1024, 1024), "float32"):
        c = R.matmul(a, b)
        return c
"#,
    );
    let (av, bv) = (data(n * n, 1), data(n * n, 2));
    let args = [tensor(&[n, n], av.clone()), tensor(&[n, n], bv.clone())];
    let ours = time(runs, || {
        mm.run("main", &args).expect("matmul runs");
    });
    let (a2, b2) = (
        Array2::from_shape_vec((n, n), av).expect("shape"),
        Array2::from_shape_vec((n, n), bv).expect("shape"),
    );
    let base = time(runs, || {
        std::hint::black_box(a2.dot(&b2));
    });
    report(
        "matmul 1024",
        ours,
        base,
        "ndarray .dot()",
        0.9,
        Some(2.0 * (n * n * n) as f64),
    );

    // Elementwise on 4M elements.
    let len = 1 << 22;
    let add = load(
        r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4194304,), "float32"), y: R.Tensor((4194304,), "float32")) -> R.Tensor((4194304,), "float32"):
        z = R.add(x, y)
        return z
"#,
    );
    let relu = load(
        r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4194304,), "float32")) -> R.Tensor((4194304,), "float32"):
        z = R.nn.relu(x)
        return z
"#,
    );
    let (xv, yv) = (data(len, 3), data(len, 4));
    let (x, y) = (tensor(&[len], xv.clone()), tensor(&[len], yv.clone()));
    let ours = time(runs, || {
        add.run("main", &[x.clone(), y.clone()]).expect("add runs");
    });
    let base = time(runs, || {
        let out: Vec<f32> = xv.iter().zip(&yv).map(|(a, b)| a + b).collect();
        std::hint::black_box(out);
    });
    report("add 4M", ours, base, "Rust loop", 0.5, None);
    let ours = time(runs, || {
        relu.run("main", std::slice::from_ref(&x)).expect("relu runs");
    });
    let base = time(runs, || {
        let out: Vec<f32> = xv.iter().map(|a| a.max(0.0)).collect();
        std::hint::black_box(out);
    });
    report("relu 4M", ours, base, "Rust loop", 0.5, None);

    let sigmoid = load(
        r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4194304,), "float32")) -> R.Tensor((4194304,), "float32"):
        z = R.sigmoid(x)
        return z
"#,
    );
    let ours = time(runs, || {
        sigmoid.run("main", std::slice::from_ref(&x)).expect("sigmoid runs");
    });
    let base = time(runs, || {
        let out: Vec<f32> = xv.iter().map(|a| 1.0 / (1.0 + (-a).exp())).collect();
        std::hint::black_box(out);
    });
    report("sigmoid 4M", ours, base, "Rust loop", 0.5, None);

    // An operator outside the host library: legalized TIR on the JIT's host executor.
    let cos = load(
        r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4194304,), "float32")) -> R.Tensor((4194304,), "float32"):
        z = R.cos(x)
        return z
"#,
    );
    let ours = time(runs, || {
        cos.run("main", std::slice::from_ref(&x)).expect("cos runs");
    });
    let base = time(runs, || {
        let out: Vec<f32> = xv.iter().map(|a| a.cos()).collect();
        std::hint::black_box(out);
    });
    report("cos 4M (TIR)", ours, base, "Rust loop", 0.5, None);
}
