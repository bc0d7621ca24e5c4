//! `call-tir-rewrite` and `static-plan-block-memory` on a chain of operators: the
//! planned allocations (which storage each tensor gets), and the planned program
//! computing what the unplanned one does with fewer allocations, on the host and on
//! the GPU.

use relax_engine::{DeviceChoice, Engine, EngineConfig, Value};
use relax_ir::{BaseFunc, Binding, ExprKind, IRModule};

mod common;
use common::{assert_close, f32s, pipeline, random_tensor, tensor};

const CHAIN: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 8), "float32")) -> R.Tensor((4, 8), "float32"):
        with R.dataflow():
            a = R.matmul(x, w)
            b = R.exp(a)
            c = R.multiply(b, b)
            d = R.nn.relu(c)
            e = R.add(d, x)
            s = R.sum(e, axis=[1], keepdims=True)
            f = R.subtract(e, s)
            gv = R.tanh(f)
            R.output(gv)
        return gv
"#;

fn module() -> IRModule {
    relax_ir::text::parse(CHAIN).expect("parses").into_module()
}

/// `(op, first argument's variable name)` of each binding of `main`.
fn calls(m: &IRModule) -> Vec<(String, String, String)> {
    let Some(BaseFunc::Relax(f)) = m.get("main") else {
        panic!("no main")
    };
    let ExprKind::Seq(seq) = f.body.kind() else {
        panic!("body is not a SeqExpr")
    };
    let mut out = Vec::new();
    for b in seq.blocks.iter().flat_map(|b| &b.bindings) {
        let Binding::VarBinding { var, value, .. } = b else {
            continue;
        };
        if let Some(c) = value.as_call() {
            let op = c.op.as_op().unwrap_or("<call>").to_string();
            let first = c
                .args
                .first()
                .and_then(|a| a.as_var())
                .map(|v| v.name().to_string())
                .unwrap_or_default();
            out.push((var.name().to_string(), op, first));
        }
    }
    out
}

#[test]
fn call_tir_rewrite_makes_outputs_explicit() {
    let m = pipeline(&["check", "legalize", "call-tir-rewrite"])
        .run(module())
        .expect("pipeline");
    let c = calls(&m);
    let allocs = c.iter().filter(|(_, op, _)| op == "relax.builtin.alloc_tensor").count();
    let call_tir = c.iter().filter(|(_, op, _)| op == "relax.call_tir").count();
    assert_eq!(allocs, 8, "one allocation per operator: {c:?}");
    assert_eq!(call_tir, 0, "{c:?}");
}

#[test]
fn storages_are_reused_after_last_use() {
    let m = pipeline(&["check", "legalize", "call-tir-rewrite", "static-plan-block-memory"])
        .run(module())
        .expect("pipeline");
    let c = calls(&m);
    let storages: Vec<&(String, String, String)> = c
        .iter()
        .filter(|(_, op, _)| op == "relax.memory.alloc_storage")
        .collect();
    let tensors: Vec<&(String, String, String)> = c
        .iter()
        .filter(|(_, op, _)| op == "relax.memory.alloc_tensor")
        .collect();
    let unplanned = c.iter().filter(|(_, op, _)| op == "relax.builtin.alloc_tensor").count();
    // Seven intermediates (a..f and the row sum s), two live at a time at most,
    // except `x + d` whose result `e` lives past `s`: three (4, 8) float32 storages
    // and the row sum, smaller than a sixteenth of none of them, reuses one too.
    // The result `gv` leaves the function and keeps its own allocation.
    assert_eq!(unplanned, 1, "{c:?}");
    assert_eq!(tensors.len(), 7, "{c:?}");
    assert_eq!(storages.len(), 3, "{c:?}");
    // Each storage is first used by the allocation right after it.
    let text = relax_ir::text::print_program(&relax_ir::text::Program::Module(m.clone()));
    assert!(
        text.contains("R.memory.alloc_storage(R.shape([128]), 0, R.str(\"global\"), R.dtype(\"float32\"))"),
        "{text}"
    );
    // Planning twice changes nothing more: the planned allocations are not
    // `builtin.alloc_tensor`s any more.
    let again = pipeline(&["static-plan-block-memory"]).run(m.clone()).expect("again");
    relax_ir::structural::StructuralEqual::new()
        .module(&again, &m)
        .expect("idempotent");
}

/// The result and the allocations of one run, with the optimizing pipeline (which
/// plans memory) or without it.
fn run(device: DeviceChoice, optimize: bool) -> Option<(Vec<f32>, u64)> {
    let engine = Engine::new(EngineConfig {
        device,
        optimize,
        host_library: false,
        static_memory_plan: true,
        ..EngineConfig::default()
    });
    if device == DeviceChoice::Gpu && engine.gpu_runtime().is_none() {
        eprintln!("no GPU adapter: the GPU comparison is skipped");
        return None;
    }
    let loaded = engine.load(&module()).expect("loads");
    if optimize {
        let names: Vec<String> = loaded.pass_timings().iter().map(|t| t.pass.clone()).collect();
        assert!(names.iter().any(|n| n == "static-plan-block-memory"), "{names:?}");
    }
    let out = loaded
        .run("main", &[random_tensor(&[4, 8], 1), random_tensor(&[8, 8], 2)])
        .expect("runs");
    let stats = loaded.stats();
    if device == DeviceChoice::Gpu {
        // Storages and tensors live in device memory: nothing staged through the host.
        assert_eq!(stats.device_allocations, stats.allocations, "{stats:?}");
        assert_eq!(
            (stats.uploads, stats.downloads),
            (2, 0),
            "the two inputs are uploaded, nothing else moves: {stats:?}"
        );
    }
    Some((f32s(&out), stats.allocations))
}

fn reference() -> Vec<f32> {
    let x = random_tensor(&[4, 8], 1)
        .as_tensor()
        .expect("t")
        .to_array::<f32>()
        .expect("f32");
    let w = random_tensor(&[8, 8], 2)
        .as_tensor()
        .expect("t")
        .to_array::<f32>()
        .expect("f32");
    let mut out = Vec::new();
    for i in 0..4 {
        let e: Vec<f32> = (0..8)
            .map(|j| {
                let a: f32 = (0..8).map(|k| x[[i, k]] * w[[k, j]]).sum();
                let b = a.exp();
                (b * b).max(0.0) + x[[i, j]]
            })
            .collect();
        let s: f32 = e.iter().sum();
        out.extend(e.iter().map(|v| (v - s).tanh()));
    }
    out
}

#[test]
fn planned_program_matches_on_host_and_gpu() {
    let want = reference();
    for device in [DeviceChoice::Cpu, DeviceChoice::Gpu] {
        let Some((plain, plain_allocs)) = run(device, false) else {
            continue;
        };
        let (planned, planned_allocs) = run(device, true).expect("same device");
        assert_close(&plain, &want);
        assert_close(&planned, &want);
        assert!(
            planned_allocs < plain_allocs,
            "{device:?}: {planned_allocs} allocations planned vs {plain_allocs}"
        );
    }
}

const BOUNDED: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        R.func_attr({"tir_var_upper_bound": {"n": 16}})
        with R.dataflow():
            a = R.exp(x)
            b = R.multiply(a, a)
            c = R.add(b, x)
            gv = R.nn.relu(c)
            R.output(gv)
        return gv
"#;

#[test]
fn symbolic_shapes_get_storage_of_their_upper_bound() {
    let m = relax_ir::text::parse(BOUNDED).expect("parses").into_module();
    let planned = pipeline(&["check", "legalize", "call-tir-rewrite", "static-plan-block-memory"])
        .run(m)
        .expect("pipeline");
    let text = relax_ir::text::print_program(&relax_ir::text::Program::Module(planned.clone()));
    // a, b and c: `a` is dead after `b`, so `c` reuses its storage; 16 float32s each.
    assert_eq!(
        text.matches("R.memory.alloc_storage(R.shape([64])").count(),
        2,
        "{text}"
    );
    assert_eq!(text.matches("R.memory.alloc_tensor(").count(), 3, "{text}");
    // Run the planned module as it is (no further passes) for several sizes.
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        check: false,
        legalize: false,
        optimize: false,
        ..EngineConfig::default()
    });
    let loaded = engine.load(&planned).expect("loads");
    for n in [1usize, 5, 16] {
        let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 1.0).collect();
        let arg = tensor(&[n], x.clone());
        let out = loaded.run("main", &[arg]).expect("runs");
        let got = f32s(&out);
        let want: Vec<f32> = x.iter().map(|v| (v.exp() * v.exp() + v).max(0.0)).collect();
        assert_close(&got, &want);
    }
}

const DPS_PACKED: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
        with R.dataflow():
            a = R.call_dps_packed("test.twice", (x,), out_sinfo=R.Tensor((3,), "float32"))
            b = R.call_dps_packed("test.twice", (a,), out_sinfo=R.Tensor((3,), "float32"))
            gv = R.add(b, x)
            R.output(gv)
        return gv
"#;

#[test]
fn call_dps_packed_stays_a_pure_call_after_the_rewrite() {
    // An impure packed function is still callable through `call_dps_packed` in a
    // dataflow block once `call-tir-rewrite` has made the call explicit.
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        ..EngineConfig::default()
    });
    engine.register_packed("test.twice", relax_engine::Purity::Impure, |args| {
        let [x, out] = args else {
            return Err(relax_engine::EngineError::msg("expects an input and an output"));
        };
        let x = x.expect_tensor("x")?.to_array::<f32>()?;
        out.expect_tensor("out")?.assign(&x.mapv(|v| v * 2.0))?;
        Ok(Value::unit())
    });
    let loaded = engine
        .load(&relax_ir::text::parse(DPS_PACKED).expect("parses").into_module())
        .expect("loads");
    let x = tensor(&[3], vec![1.0f32, -2.0, 0.5]);
    let out = loaded.run("main", &[x]).expect("runs");
    let got = f32s(&out);
    assert_close(&got, &[5.0, -10.0, 2.5]);
    // `a` and `b` each get a planned storage (both are live during the second
    // call); the result keeps its own allocation.
    assert!(loaded.stats().allocations <= 3, "{:?}", loaded.stats());
}

/// A view (`R.reshape`, run by the host library as `vm.builtin.reshape`) matched by
/// `R.match_cast`, then read: the storage under the view stays live until the
/// match_cast's variable is last used (the planner once released it after the
/// view, and the `add` wrote its result over its own second operand).
const MATCH_CAST_VIEW: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32"), y: R.Tensor(("n", 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32")):
        R.func_attr({"tir_var_upper_bound": {"n": 16}})
        n = T.int64()
        with R.dataflow():
            a: R.Tensor((n, 8), dtype="float32") = R.exp(x)
            b: R.Tensor((1, n, 8), dtype="float32") = R.reshape(a, R.shape([1, n, 8]))
            c: R.Tensor((n, 8), dtype="float32") = R.negative(y)
            d: R.Tensor((1, n, 8), dtype="float32") = R.reshape(c, R.shape([1, n, 8]))
            e: R.Tensor((1, n, 8), dtype="float32") = R.match_cast(d, R.Tensor((1, n, 8), dtype="float32"))
            f: R.Tensor((1, n, 8), dtype="float32") = R.add(b, e)
            g: R.Tensor((1, n, 8), dtype="float32") = R.matmul(f, w)
            R.output(g)
        return g
"#;

#[test]
fn a_match_cast_keeps_the_storage_under_its_value_live() {
    let m = relax_ir::text::parse(MATCH_CAST_VIEW).expect("parses").into_module();
    let (n, k) = (5usize, 8usize);
    let x: Vec<f32> = (0..n * k).map(|i| (i % 7) as f32 * 0.1).collect();
    let y: Vec<f32> = (0..n * k).map(|i| (i % 5) as f32 * 0.3).collect();
    let w: Vec<f32> = (0..k * k).map(|i| (i % 9) as f32 * 0.1 - 0.4).collect();
    let mut want = vec![0f32; n * k];
    for i in 0..n {
        for j in 0..k {
            want[i * k + j] = (0..k).map(|r| (x[i * k + r].exp() - y[i * k + r]) * w[r * k + j]).sum();
        }
    }
    for (plan, library) in [(true, true), (true, false), (false, true)] {
        let engine = Engine::new(EngineConfig {
            device: DeviceChoice::Cpu,
            static_memory_plan: plan,
            host_library: library,
            ..EngineConfig::default()
        });
        let loaded = engine.load(&m).expect("loads");
        let args = [
            tensor(&[n, k], x.clone()),
            tensor(&[n, k], y.clone()),
            tensor(&[k, k], w.clone()),
        ];
        let out = loaded.run("main", &args).expect("runs");
        assert_close(&f32s(&out), &want);
    }
}
