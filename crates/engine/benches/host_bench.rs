//! Host speed against named baselines, measured in one run (medians):
//! - a 1024 x 1024 x 1024 `R.matmul` through `Engine` on the CPU against
//!   ndarray's `.dot()` (goal: at least 0.9x);
//! - elementwise `R.add`, `R.nn.relu`, `R.sigmoid` (host kernel library) and `R.cos`
//!   (legalized TIR on the JIT's host executor) on 4M elements against a plain Rust
//!   loop (goal: at least 0.5x);
//! - other operators that stay legalized TIR (a broadcast `maximum` + `clip` chain,
//!   `where`, a strided slice) and a row `argmax` (host kernel library) against
//!   plain Rust loops (goal: at least 0.5x).
//!
//! `cargo bench -p relax-engine --bench host_bench` (`-- --quick` for fewer runs,
//! `-- --only NAME` for the rows whose name contains NAME).

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

/// Whether the row `what` is selected by `--only NAME`.
fn selected(what: &str) -> bool {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--only") {
        Some(i) => args.get(i + 1).is_none_or(|n| what.contains(n.as_str())),
        None => true,
    }
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
    if selected("matmul 1024") {
        matmul(runs);
    }
    library_elementwise(runs);
    tir_rows(runs);
}

fn matmul(runs: usize) {
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
}

/// Time `main` of the program `src` on `args` against `baseline` (a plain Rust
/// loop computing the same values) and report the row `what`.
fn row(what: &str, runs: usize, src: &str, args: &[Value], baseline: impl FnMut()) {
    if !selected(what) {
        return;
    }
    let m = load(src);
    let ours = time(runs, || {
        m.run("main", args).expect("the benchmark program runs");
    });
    let base = time(runs, baseline);
    report(what, ours, base, "Rust loop", 0.5, None);
}

/// A program `main(x[, y]) = body` over float32 tensors of shape `xs` (and `ys`), in a
/// dataflow block (as importers write them, so that chains of operators fuse)
/// returning a tensor of shape `out` and dtype `odt`.
fn program(params: &[(&str, &str)], out: &str, odt: &str, body: &str) -> String {
    let ps: Vec<String> = params
        .iter()
        .map(|(n, s)| format!("{n}: R.Tensor({s}, \"float32\")"))
        .collect();
    format!(
        "@I.ir_module\nclass Module:\n    @R.function\n    def main({}) -> R.Tensor({out}, \"{odt}\"):\n        with R.dataflow():\n            z = {body}\n            R.output(z)\n        return z\n",
        ps.join(", ")
    )
}

/// Elementwise operators: 4M elements, the library's (`add`, `relu`, `sigmoid`) and
/// legalized TIR (`cos`).
fn library_elementwise(runs: usize) {
    let len = 1 << 22;
    let (xv, yv) = (data(len, 3), data(len, 4));
    let (x, y) = (tensor(&[len], xv.clone()), tensor(&[len], yv.clone()));
    let v = "(4194304,)";
    let unary = |op: &str| program(&[("x", v)], v, "float32", &format!("{op}(x)"));
    row(
        "add 4M",
        runs,
        &program(&[("x", v), ("y", v)], v, "float32", "R.add(x, y)"),
        &[x.clone(), y.clone()],
        || {
            let out: Vec<f32> = xv.iter().zip(&yv).map(|(a, b)| a + b).collect();
            std::hint::black_box(out);
        },
    );
    row("relu 4M", runs, &unary("R.nn.relu"), std::slice::from_ref(&x), || {
        let out: Vec<f32> = xv.iter().map(|a| a.max(0.0)).collect();
        std::hint::black_box(out);
    });
    row(
        "sigmoid 4M",
        runs,
        &unary("R.sigmoid"),
        std::slice::from_ref(&x),
        || {
            let out: Vec<f32> = xv.iter().map(|a| 1.0 / (1.0 + (-a).exp())).collect();
            std::hint::black_box(out);
        },
    );
    // An operator outside the host library: legalized TIR on the JIT's host executor.
    row("cos 4M (TIR)", runs, &unary("R.cos"), std::slice::from_ref(&x), || {
        let out: Vec<f32> = xv.iter().map(|a| a.cos()).collect();
        std::hint::black_box(out);
    });
}

/// Operators that stay legalized TIR (injective ops with broadcasting and striding)
/// and a row reduction, on 2048 x 2048 float32 tensors.
fn tir_rows(runs: usize) {
    let n = 2048;
    let (xv, yv, bv) = (data(n * n, 5), data(n * n, 6), data(n, 7));
    let (x, y, b) = (
        tensor(&[n, n], xv.clone()),
        tensor(&[n, n], yv.clone()),
        tensor(&[n], bv.clone()),
    );
    let m = "(2048, 2048)";
    row(
        "max+clip bcast (TIR)",
        runs,
        &program(
            &[("x", m), ("b", "(2048,)")],
            m,
            "float32",
            "R.clip(R.maximum(x, b), -0.25, 0.25)",
        ),
        &[x.clone(), b],
        || {
            let mut out = vec![0f32; n * n];
            for (o, r) in out.chunks_mut(n).zip(xv.chunks(n)) {
                for ((o, a), c) in o.iter_mut().zip(r).zip(&bv) {
                    *o = a.max(*c).clamp(-0.25, 0.25);
                }
            }
            std::hint::black_box(out);
        },
    );
    row(
        "where (TIR)",
        runs,
        &program(&[("x", m), ("y", m)], m, "float32", "R.where(R.greater(x, y), x, y)"),
        &[x.clone(), y],
        || {
            let out: Vec<f32> = xv.iter().zip(&yv).map(|(a, b)| if a > b { *a } else { *b }).collect();
            std::hint::black_box(out);
        },
    );
    row(
        "strided_slice (TIR)",
        runs,
        &program(
            &[("x", m)],
            "(2048, 1024)",
            "float32",
            "R.strided_slice(x, (1,), (0,), (2048,), (2,))",
        ),
        std::slice::from_ref(&x),
        || {
            let out: Vec<f32> = xv.iter().step_by(2).copied().collect();
            std::hint::black_box(out);
        },
    );
    row(
        "argmax rows (library)",
        runs,
        &program(&[("x", m)], "(2048,)", "int64", "R.argmax(x, axis=1)"),
        std::slice::from_ref(&x),
        || {
            let out: Vec<i64> = xv
                .chunks(n)
                .map(|r| {
                    let mut best = 0;
                    for (i, v) in r.iter().enumerate() {
                        if *v > r[best] {
                            best = i;
                        }
                    }
                    best as i64
                })
                .collect();
            std::hint::black_box(out);
        },
    );
}
