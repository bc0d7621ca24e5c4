//! The default pipeline on the real networks with their weights bound as constants
//! (`bind_params`): batch norms fold into the convolutions and weight-only
//! computations into constants. Needs `RELAX_REALMODELS_DIR` (a directory holding
//! `squeezenet/`, `shufflenet/`, `resnet50/` made by the real-model preparation
//! script); slow, so ignored by default:
//! `cargo test --release -p relax-transform --test realmodels -- --ignored --nocapture`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use relax_engine::{DeviceChoice, Engine, EngineConfig, Tensor, Value};
use relax_ir::{BaseFunc, ExprKind, NDArray};

#[test]
#[ignore]
fn bound_networks_fold_and_match() {
    let Some(dir) = std::env::var_os("RELAX_REALMODELS_DIR") else {
        eprintln!("RELAX_REALMODELS_DIR is not set; nothing checked");
        return;
    };
    for net in ["squeezenet", "shufflenet", "resnet50"] {
        let d = PathBuf::from(&dir).join(net);
        let Ok(src) = std::fs::read_to_string(d.join("prog.py")) else {
            continue;
        };
        let m = relax_ir::text::parse(&src).expect("parses").into_module();
        let tensors: Vec<Tensor> = relax_engine::params::read_npy_inputs(&d).expect("in*.npy");
        let checked = relax_transform::lookup("check").expect("check").run(m).expect("checks");
        let Some(BaseFunc::Relax(main)) = checked.get("main") else {
            panic!("main")
        };
        let params: HashMap<String, Arc<NDArray>> = main.params[1..]
            .iter()
            .zip(&tensors[1..])
            .map(|(p, t)| {
                let nd = NDArray {
                    dtype: t.dtype(),
                    shape: t.shape().to_vec(),
                    data: t.to_bytes().expect("bytes"),
                };
                (p.name().to_string(), Arc::new(nd))
            })
            .collect();
        let bound = relax_transform::fold::bind_params(&checked, "main", &params).expect("binds");
        let (opt, timings) = relax_transform::build_pipeline(&relax_transform::PassContext {
            // TIR kernels only (no native host library), allocations not planned.
            host_library: false,
            static_memory_plan: false,
            ..Default::default()
        })
        .run_timed(bound.clone())
        .expect("pipeline");
        let total: f64 = timings.iter().map(|t| t.time.as_secs_f64()).sum();
        let Some(BaseFunc::Relax(main)) = opt.get("main") else {
            panic!("main")
        };
        let ExprKind::Seq(seq) = main.body.kind() else {
            panic!("seq")
        };
        // Kernel calls: `call_tir`, or (after call-tir-rewrite) a direct call of a
        // PrimFunc or of an external function in destination-passing style.
        let calls = seq.blocks.iter().flat_map(|b| &b.bindings).filter(|b| {
            b.value().as_call().is_some_and(|c| match c.op.kind() {
                ExprKind::GlobalVar(g) => matches!(opt.get(&g.0), Some(BaseFunc::Prim(_))),
                ExprKind::ExternFunc { .. } => true,
                _ => c.op.as_op() == Some("relax.call_tir"),
            })
        });
        let calls = calls.count();
        assert!(calls > 0, "{net}: no kernel call left in main");
        eprintln!(
            "{net}: weights bound: {calls} kernel calls per inference, default pipeline {:.1} ms",
            total * 1e3
        );
        for t in &timings {
            eprintln!("  {:<28} {:>8.2} ms", t.pass, t.time.as_secs_f64() * 1e3);
        }
        let engine = Engine::new(EngineConfig {
            device: DeviceChoice::Auto,
            ..EngineConfig::default()
        });
        let loaded = engine.load(&bound).expect("loads");
        let out = loaded.run("main", &[Value::Tensor(tensors[0].clone())]).expect("runs");
        let got = out.as_tensor().expect("tensor").to_array::<f32>().expect("f32");
        let want = relax_engine::params::read_npy(&d.join("expected.npy"))
            .expect("expected.npy")
            .to_array::<f32>()
            .expect("f32");
        let err = got
            .iter()
            .zip(want.iter())
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        eprintln!(
            "{net}: max abs error vs ONNX Runtime {err:e}; stats {:?}",
            loaded.stats().kernels_run
        );
        assert!(err <= 1e-3, "{net}: {err}");
    }
}
