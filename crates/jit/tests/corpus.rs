//! Corpus test: every PrimFunc of the LegalizeOps `expected` modules compiles to
//! naga-valid WGSL, runs on the host, and (with a GPU) gives the host's results.
//!
//! The corpus directory is `$RELAX_CORPUS_DIR`, else `<workspace>/../shared/corpus/tvm`.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use relax_ir::tir::{For, TirVar};
use relax_ir::{BaseFunc, DataType, PrimFunc, Stmt};
use relax_jit::internals::eval_int;
use relax_jit::internals::{lower, ParamSlot};
use relax_jit::{HostTensor, Jit, KernelArg};

fn corpus_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("RELAX_CORPUS_DIR") {
        return Some(PathBuf::from(d));
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/tvm");
    p.join("legalize.jsonl").exists().then_some(p)
}

/// Random arguments for `f`: symbolic extents 8, integer scalars 0, float scalars 0.5;
/// floats in [-1, 1), integers in [0, 3), bools random.
fn make_args(f: &PrimFunc, seed: u64) -> Result<Vec<Option<HostTensor>>, String> {
    let lf = lower(f).map_err(|e| e.to_string())?;
    let mut vars: HashMap<u64, i64> = HashMap::new();
    let mut scalars: Vec<Option<TirVar>> = Vec::new();
    for p in &lf.params {
        if let ParamSlot::Scalar(v) = p {
            vars.insert(v.id(), 0);
            scalars.push(Some(v.clone()));
        }
    }
    for b in &lf.shape_binds {
        vars.entry(b.var.id()).or_insert(8);
    }
    let mut out = Vec::new();
    for (i, p) in lf.params.iter().enumerate() {
        match p {
            ParamSlot::Scalar(_) => out.push(None),
            ParamSlot::Buffer { orig, .. } => {
                let shape: Vec<i64> = orig
                    .shape()
                    .iter()
                    .map(|e| eval_int(e, &vars).map_err(|e| e.to_string()))
                    .collect::<Result<_, _>>()?;
                let n: i64 = shape.iter().product();
                let dt = orig.dtype();
                let vals = if dt.is_float() {
                    common::rand_vec(n as usize, seed + i as u64, -1.0, 1.0)
                } else if dt.is_bool() {
                    common::rand_vec(n as usize, seed + i as u64, 0.0, 2.0)
                        .iter()
                        .map(|x| x.floor())
                        .collect()
                } else {
                    common::rand_vec(n as usize, seed + i as u64, 0.0, 3.0)
                        .iter()
                        .map(|x| x.floor())
                        .collect()
                };
                out.push(Some(
                    HostTensor::from_f64s(dt, &shape, &vals).map_err(|e| e.to_string())?,
                ));
            }
        }
    }
    Ok(out)
}

/// Loop iterations of the lowered function (symbolic extents 8).
fn work(f: &PrimFunc) -> i64 {
    fn w(s: &Stmt, vars: &HashMap<u64, i64>) -> i64 {
        match s {
            Stmt::For(For { extent, body, .. }) => eval_int(extent, vars).unwrap_or(8).saturating_mul(w(body, vars)),
            Stmt::Seq(v) => v.iter().map(|x| w(x, vars)).fold(0i64, |a, b| a.saturating_add(b)),
            Stmt::Let { body, .. } | Stmt::Alloc { body, .. } | Stmt::Assert { body, .. } | Stmt::Attr { body, .. } => {
                w(body, vars)
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => w(then_branch, vars).max(else_branch.as_ref().map(|e| w(e, vars)).unwrap_or(0)),
            _ => 1,
        }
    }
    let Ok(lf) = lower(f) else { return 0 };
    let mut vars = HashMap::new();
    for b in &lf.shape_binds {
        vars.insert(b.var.id(), 8);
    }
    for p in &lf.params {
        if let ParamSlot::Scalar(v) = p {
            vars.insert(v.id(), 0);
        }
    }
    lf.stages
        .iter()
        .map(|s| w(&s.body, &vars))
        .fold(0i64, |a, b| a.saturating_add(b))
}

fn run(jit: &Jit, f: &PrimFunc, tensors: &mut [Option<HostTensor>], gpu: bool) -> Result<(), String> {
    let lf = lower(f).map_err(|e| e.to_string())?;
    let mut args: Vec<KernelArg> = Vec::new();
    for (p, t) in lf.params.iter().zip(tensors.iter_mut()) {
        match (p, t) {
            (ParamSlot::Scalar(v), _) => args.push(if v.dtype().is_float() {
                KernelArg::Float(0.5)
            } else {
                KernelArg::Int(0)
            }),
            (_, Some(t)) => args.push(KernelArg::from(t)),
            _ => return Err("missing tensor".into()),
        }
    }
    if gpu {
        jit.run_gpu(f, &mut args).map_err(|e| e.to_string())
    } else {
        jit.run_host(f, &mut args).map_err(|e| e.to_string())
    }
}

fn compare(h: &HostTensor, g: &HostTensor) -> Result<(), String> {
    let (hv, gv) = (h.to_f64_vec(), g.to_f64_vec());
    let float = h.dtype().is_float();
    let (rel, abs) = if h.dtype() == DataType::FLOAT16 {
        (2e-3, 2e-3)
    } else {
        (1e-4, 1e-5)
    };
    for (i, (a, b)) in hv.iter().zip(&gv).enumerate() {
        let ok = if float {
            (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= abs + rel * a.abs()
        } else {
            a == b
        };
        if !ok {
            return Err(format!("element {i}: host {a}, gpu {b}"));
        }
    }
    Ok(())
}

/// Run `f` on the closure interpreter and compare with `native` (the default
/// host run): integers equal, floats within 1e-5 (absolute and relative: f32 math
/// runs in f32 natively, in f64 then rounded in the interpreter). Returns the
/// number of native stages.
fn interpreted_matches(
    f: &PrimFunc,
    inputs: &[Option<HostTensor>],
    native: &[Option<HostTensor>],
) -> Result<usize, String> {
    let lowered = std::sync::Arc::new(lower(f).map_err(|e| e.to_string())?);
    let nk = relax_jit::HostKernel::compile_with(lowered.clone(), true).map_err(|e| e.to_string())?;
    let ik = relax_jit::HostKernel::compile_with(lowered, false).map_err(|e| e.to_string())?;
    let mut t = inputs.to_vec();
    let mut args: Vec<KernelArg> = Vec::new();
    for (p, t) in ik.lowered().params.iter().zip(t.iter_mut()) {
        args.push(match (p, t) {
            (ParamSlot::Scalar(v), _) if v.dtype().is_float() => KernelArg::Float(0.5),
            (ParamSlot::Scalar(_), _) => KernelArg::Int(0),
            (_, Some(t)) => KernelArg::from(t),
            _ => return Err("missing tensor".into()),
        });
    }
    ik.run(&mut args).map_err(|e| format!("interpreter: {e}"))?;
    for (k, (a, b)) in native.iter().zip(&t).enumerate() {
        if let (Some(a), Some(b)) = (a, b) {
            for (i, (x, y)) in a.to_f64_vec().iter().zip(b.to_f64_vec()).enumerate() {
                let close = a.dtype().is_float() && (x - y).abs() <= 1e-5 * (1.0 + y.abs());
                if !(*x == y || (x.is_nan() && y.is_nan()) || close) {
                    return Err(format!("argument {k} element {i}: native {x}, interpreter {y}"));
                }
            }
        }
    }
    Ok(nk.native_stages())
}

#[test]
fn corpus_legalize_prim_funcs() {
    let Some(dir) = corpus_dir() else {
        eprintln!("corpus not found (set RELAX_CORPUS_DIR): corpus test not run");
        return;
    };
    let text = match std::fs::read_to_string(dir.join("legalize.jsonl")) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot read legalize.jsonl ({e}): corpus test not run");
            return;
        }
    };
    let host = Jit::new(None);
    let gpu = common::gpu_jit();
    // Pipeline creation dominates on software GPUs: by default every 4th distinct
    // PrimFunc is compared on the GPU; RELAX_JIT_CORPUS_GPU=all compares all.
    let gpu_every = if std::env::var("RELAX_JIT_CORPUS_GPU").as_deref() == Ok("all") {
        1
    } else {
        4
    };
    let mut gpu_checked = 0usize;
    // Unoptimised (debug) builds execute large convolutions slowly: functions above
    // this many loop iterations are only compiled (WGSL + naga) unless
    // RELAX_JIT_CORPUS_FULL=1 or the build is optimised. They are reported as not run.
    let full = std::env::var("RELAX_JIT_CORPUS_FULL").as_deref() == Ok("1") || !cfg!(debug_assertions);
    let work_limit: i64 = if full { i64::MAX } else { 4_000_000 };
    let mut not_run: Vec<String> = Vec::new();
    let mut native_stages = 0usize;
    let start = std::time::Instant::now();
    let mut seen = HashSet::new();
    let (mut total, mut passed, mut parse_fail) = (0usize, 0usize, 0usize);
    let mut failures: Vec<String> = Vec::new();
    for line in text.lines() {
        let Ok(case) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let id = case["id"].as_str().unwrap_or("?").to_string();
        let Some(expected) = case["expected"].as_str() else {
            continue;
        };
        if expected == "error" {
            continue;
        }
        let module = match relax_ir::text::parse(expected) {
            Ok(p) => p.into_module(),
            Err(_) => {
                parse_fail += 1;
                continue;
            }
        };
        for (gv, func) in &module.functions {
            let BaseFunc::Prim(f) = func else { continue };
            if !seen.insert(relax_jit::internals::kernel_hash(f)) {
                continue;
            }
            total += 1;
            let name = format!("{id}/{}", gv.name());
            let result = (|| -> Result<(), String> {
                let src = host.wgsl(f).map_err(|e| format!("wgsl: {e}"))?;
                if src.kernels.is_empty() {
                    return Err("no kernels".into());
                }
                if work(f) > work_limit {
                    not_run.push(format!("{name} ({} iterations)", work(f)));
                    return Ok(());
                }
                let inputs = make_args(f, 17).map_err(|e| format!("inputs: {e}"))?;
                let mut h = inputs.clone();
                run(&host, f, &mut h, false).map_err(|e| format!("host: {e}"))?;
                // The interpreter is slow on the largest kernels: compare the rest.
                if work(f) <= 2_000_000 {
                    native_stages += interpreted_matches(f, &inputs, &h)?;
                }
                if let Some(gpu) = gpu.as_ref().filter(|_| total % gpu_every == 0) {
                    gpu_checked += 1;
                    let mut g = inputs.clone();
                    run(gpu, f, &mut g, true).map_err(|e| format!("gpu: {e}"))?;
                    for (k, (a, b)) in h.iter().zip(&g).enumerate() {
                        if let (Some(a), Some(b)) = (a, b) {
                            compare(a, b).map_err(|e| format!("gpu != host in argument {k}: {e}"))?;
                        }
                    }
                }
                Ok(())
            })();
            match result {
                Ok(()) => passed += 1,
                Err(e) => failures.push(format!("{name}: {}", e.lines().next().unwrap_or(""))),
            }
        }
    }
    println!(
        "legalize corpus: {passed}/{total} distinct PrimFuncs pass (naga-valid WGSL, host runs, GPU == host on {gpu_checked} compared); {parse_fail} expected modules did not parse; {:.1} s",
        start.elapsed().as_secs_f64()
    );
    println!("  host native code: {native_stages} stages compiled natively agree with the interpreter");
    for f in &failures {
        println!("  FAIL {f}");
    }
    if let Some(g) = &gpu {
        let c = g.counters();
        let per = |ns: u64| ns as f64 / 1e6 / c.kernels_compiled.max(1) as f64;
        println!(
            "  GPU compile cost: {} programs, {} kernels; ours (lower+schedule+WGSL+naga) {:.3} ms/kernel, driver (pipeline creation) {:.3} ms/kernel",
            c.gpu_programs_compiled,
            c.kernels_compiled,
            per(c.our_compile_ns),
            per(c.driver_compile_ns)
        );
    }
    if !not_run.is_empty() {
        println!(
            "  {} of the passing functions were only compiled, not executed (debug build; set RELAX_JIT_CORPUS_FULL=1): {}",
            not_run.len(),
            not_run.join(", ")
        );
    }
    if total == 0 {
        eprintln!("no PrimFunc could be parsed from the corpus: nothing checked");
        return;
    }
    let rate = passed as f64 / total as f64;
    assert!(rate >= 0.95, "pass rate {:.1}% below 95%", rate * 100.0);
}
