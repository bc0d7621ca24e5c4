//! `relax wgsl` on TVM 0.27's legalized modules (`legalize.jsonl` of the corpus,
//! the `expected` side): the WGSL of what a GPU run dispatches (the engine's
//! pipeline for the GPU, then the default schedule), or, for a module whose every
//! PrimFunc the pipeline folds away (called only with constants), of its PrimFuncs
//! as written, as `relax wgsl --func NAME` shows them. At least 98% of the modules
//! must give a compute shader. Skips with a message when the corpus is absent.

use std::path::PathBuf;

use relax_engine::{DeviceChoice, Engine, EngineConfig};
use relax_ir::text::parse;
use relax_ir::{BaseFunc, IRModule, PrimFunc};
use relax_jit::{DeviceCaps, Jit, ScheduleOptions};

fn corpus_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("RELAX_CORPUS_DIR") {
        return Some(PathBuf::from(d));
    }
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/tvm");
    d.exists().then_some(d)
}

fn prim_funcs(m: &IRModule) -> Vec<PrimFunc> {
    m.functions
        .iter()
        .filter_map(|(_, f)| match f {
            BaseFunc::Prim(p) => Some(p.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn legalized_modules_print_compute_shaders() {
    let Some(dir) = corpus_dir() else {
        eprintln!("corpus not found (set RELAX_CORPUS_DIR); nothing checked");
        return;
    };
    let Ok(text) = std::fs::read_to_string(dir.join("legalize.jsonl")) else {
        eprintln!("legalize.jsonl not found in {}; nothing checked", dir.display());
        return;
    };
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Gpu,
        ..EngineConfig::default()
    });
    let jit = Jit::with_options(None, DeviceCaps::ALL, ScheduleOptions::default());
    let (mut modules, mut with_shader, mut as_written, mut pipeline_failed) = (0, 0, 0, 0);
    let mut missing = Vec::new();
    for line in text.lines() {
        let Ok(case) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(expected) = case["expected"].as_str().filter(|e| *e != "error") else {
            continue;
        };
        let Ok(written) = parse(expected).map(|p| p.into_module()) else {
            continue;
        };
        if prim_funcs(&written).is_empty() {
            continue;
        }
        modules += 1;
        let funcs = match engine.pipeline().run(written.clone()) {
            Ok(m) if !prim_funcs(&m).is_empty() => prim_funcs(&m),
            Ok(_) => {
                as_written += 1;
                prim_funcs(&written)
            }
            Err(_) => {
                pipeline_failed += 1;
                prim_funcs(&written)
            }
        };
        let shader = funcs.iter().any(|f| {
            jit.wgsl(f)
                .is_ok_and(|p| p.kernels.iter().any(|k| k.wgsl.contains("@compute")))
        });
        if shader {
            with_shader += 1;
        } else {
            missing.push(case["id"].as_str().unwrap_or("?").to_string());
        }
    }
    if modules == 0 {
        eprintln!("no legalized module in the corpus; nothing checked");
        return;
    }
    let rate = with_shader as f64 / modules as f64;
    eprintln!(
        "wgsl corpus: {with_shader}/{modules} legalized modules give a compute shader ({:.1}%); \
         {as_written} folded away by the pipeline and shown as written, {pipeline_failed} where the pipeline fails; \
         without one: {missing:?}",
        100.0 * rate
    );
    assert!(rate >= 0.98, "{with_shader}/{modules} below the 98% floor: {missing:?}");
}
