//! Steady-state latency of real networks on our engine: loads each model of a prep.py
//! directory once, runs `main` once to warm up (kernel compilation, weight upload),
//! then times `Loaded::run` at least once and at most `--repeat` times, stopping after
//! `--budget-s` seconds, and prints one line per model:
//!
//! `RESULT <model> <device> <median ms> <runs> <GFLOP per inference> <first-inference ms>`
//!
//! With `--device gpu`, right after each model's timed runs it times the
//! hand-written 8x8 register-tiled matmul (`shaders/matmul_8x8.wgsl`, 1024^3) on the
//! same adapter (twice, two network runs apart, keeping the better) and prints
//! `HAND <model> <GFLOP/s>` and
//! `RATIO <model> <achieved GFLOP/s> / hand <GFLOP/s> = <ratio>`: the network's
//! achieved GFLOP/s over the hand kernel's, measured back to back in this run.
//!
//! The work per inference is 2 x the multiply-adds of every `R.nn.conv2d` and
//! `R.matmul` in `main`, counted from their StructInfo.
//!
//! A model directory is either prep.py's (`prog.py` and `in*.npy`, entry `main`), an
//! ONNX model (`model.onnx` and no `prog.py`: imported here by `relax-onnx`, its weights
//! bound by name, `in*.npy` its graph inputs), or a transformer case of the transformer generator (`meta.json` listing the programs and,
//! per sequence length, the argument files): its first static program is timed at
//! `--seq` (default: its first run). `R.nn.attention` counts as its two products.
//! Where the directory holds `expected.npy` (a reference output), the first output
//! tensor is compared with it: `CHECK <model> <device> max|err| <e> max|ref| <m>`.
//!
//! Usage: `cargo run --release --example bench_models -- DIR [--device cpu|gpu]
//! [--model NAME] [--repeat N] [--budget-s S] [--seq L] [--hand-n N] [--profile]` (`--hand-n`: the
//! hand matmul's size, a multiple of 64, default 1024; `--profile`: GPU time
//! per PrimFunc too, each kernel waited for, as `PROFILE <model> <ms> ms/call <n> calls <name>`) (`scripts/bench_models.sh` runs it
//! for both devices next to ONNX Runtime and TVM).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use relax_wgpu::engine::params::{read_npy, read_npy_inputs};
use relax_wgpu::engine::{DeviceChoice, Engine, EngineConfig, Params, Value};
use relax_wgpu::ir::{Binding, ExprKind, IRModule, StructInfo};

const MODELS: [&str; 3] = ["squeezenet", "shufflenet", "resnet50"];

struct Options {
    dir: PathBuf,
    device: DeviceChoice,
    models: Vec<String>,
    repeat: usize,
    budget: Duration,
    seq: Option<u64>,
    profile: bool,
    hand_n: u32,
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut o = Options {
        dir: PathBuf::new(),
        device: DeviceChoice::Cpu,
        models: Vec::new(),
        repeat: 10,
        budget: Duration::from_secs(60),
        seq: None,
        profile: false,
        hand_n: 1024,
    };
    let mut dir = None;
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--device" => {
                o.device = match value("--device")?.as_str() {
                    "cpu" => DeviceChoice::Cpu,
                    "gpu" => DeviceChoice::Gpu,
                    d => return Err(format!("--device must be cpu or gpu, got {d}")),
                }
            }
            "--model" => o.models.push(value("--model")?),
            "--repeat" => {
                o.repeat = value("--repeat")?
                    .parse::<usize>()
                    .map_err(|e| format!("--repeat: {e}"))?
                    .max(1)
            }
            "--profile" => o.profile = true,
            "--budget-s" => {
                let s: f64 = value("--budget-s")?.parse().map_err(|e| format!("--budget-s: {e}"))?;
                o.budget = Duration::from_secs_f64(s.max(0.0));
            }
            "--hand-n" => {
                o.hand_n = value("--hand-n")?.parse().map_err(|e| format!("--hand-n: {e}"))?;
            }
            "--seq" => o.seq = Some(value("--seq")?.parse().map_err(|e| format!("--seq: {e}"))?),
            _ if a.starts_with("--") => return Err(format!("unknown option {a}")),
            _ => dir = Some(PathBuf::from(a)),
        }
    }
    o.dir = dir
        .or_else(|| std::env::var_os("RELAX_REALMODELS_DIR").map(PathBuf::from))
        .ok_or("give the prep.py directory as an argument or in RELAX_REALMODELS_DIR")?;
    if o.models.is_empty() {
        o.models = MODELS.iter().map(|m| m.to_string()).collect();
    }
    Ok(o)
}

/// What to time in a model directory: the program file, its entry and its arguments.
struct Case {
    /// The TVMScript program, or the ONNX model (`model.onnx`).
    prog: PathBuf,
    entry: String,
    args: Vec<Value>,
}

/// The case of a model directory: prep.py's layout (`prog.py`, `in*.npy` in name order)
/// or a transformer case (`meta.json`: its first static program, the run at `seq` or the
/// first run).
fn case(dir: &Path, seq: Option<u64>) -> Result<Case, String> {
    let meta_path = dir.join("meta.json");
    // prep.py writes a meta.json of its own (the argument list, ONNX Runtime's time):
    // only one listing programs is a transformer case.
    let transformer = std::fs::read_to_string(&meta_path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|m| m.get("progs").is_some());
    if !transformer {
        let tensors = read_npy_inputs(dir).map_err(|e| e.to_string())?;
        let onnx = dir.join("model.onnx");
        let prog = if dir.join("prog.py").is_file() || !onnx.is_file() {
            dir.join("prog.py")
        } else {
            onnx
        };
        return Ok(Case {
            prog,
            entry: "main".into(),
            args: tensors.into_iter().map(Value::Tensor).collect(),
        });
    }
    let text = std::fs::read_to_string(&meta_path).map_err(|e| format!("{}: {e}", meta_path.display()))?;
    let meta: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", meta_path.display()))?;
    let prog = meta["progs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p.get("error").is_none() && p["symbolic"] != serde_json::Value::Bool(true))
        .ok_or_else(|| format!("{}: no static program", meta_path.display()))?;
    let runs = prog["runs"].as_array().cloned().unwrap_or_default();
    let run = match seq {
        Some(l) => runs.iter().find(|r| r["seq_len"].as_u64() == Some(l)),
        None => runs.first(),
    }
    .ok_or_else(|| format!("{}: no run at sequence length {seq:?}", meta_path.display()))?;
    let mut args = Vec::new();
    for a in run["args"].as_array().into_iter().flatten() {
        let file = a
            .as_str()
            .ok_or_else(|| format!("{}: an argument is not a file name", meta_path.display()))?;
        args.push(Value::Tensor(
            read_npy(&dir.join(file)).map_err(|e| format!("{file}: {e}"))?,
        ));
    }
    let file = prog["prog"]
        .as_str()
        .ok_or_else(|| format!("{}: a program has no file", meta_path.display()))?;
    Ok(Case {
        prog: dir.join(file),
        entry: meta["entry"].as_str().unwrap_or("main").to_string(),
        args,
    })
}

/// Static dimensions of a tensor StructInfo.
fn dims(s: Option<&StructInfo>) -> Option<Vec<i64>> {
    match s? {
        StructInfo::Tensor(t) => t.shape_values()?.iter().map(|d| d.as_int()).collect(),
        _ => None,
    }
}

/// 2 x multiply-adds of the conv2d, matmul and attention bindings of `entry`, in GFLOP.
fn gflop(module: &IRModule, entry: &str) -> f64 {
    let Some(relax_wgpu::ir::BaseFunc::Relax(main)) = module.functions.get(&relax_wgpu::ir::GlobalVar::new(entry))
    else {
        return 0.0;
    };
    let ExprKind::Seq(seq) = main.body.kind() else {
        return 0.0;
    };
    let mut macs = 0i64;
    for binding in seq.blocks.iter().flat_map(|b| &b.bindings) {
        let Binding::VarBinding { var, value, .. } = binding else {
            continue;
        };
        let ExprKind::Call(call) = value.kind() else {
            continue;
        };
        let ExprKind::Op(op) = call.op.kind() else {
            continue;
        };
        let arg = |i: usize| match call.args.get(i).map(|a| a.kind()) {
            Some(ExprKind::Var(v)) => dims(v.struct_info()),
            _ => None,
        };
        let Some(out) = dims(var.struct_info()) else {
            continue;
        };
        let outputs = out.iter().product::<i64>();
        macs += match op.as_str() {
            "relax.nn.conv2d" => arg(1).map_or(0, |w| outputs * w[1..].iter().product::<i64>()),
            "relax.matmul" => arg(0).and_then(|a| a.last().copied()).map_or(0, |k| outputs * k),
            // out (B, S, H, Dv) from q (B, S, H, D), k (B, Skv, H, D), v (B, Skv, H, Dv):
            // B x H x S x Skv x (D + Dv) multiply-adds.
            "relax.nn.attention" => match (arg(0), arg(1), arg(2)) {
                (Some(q), Some(k), Some(v)) if q.len() == 4 && k.len() == 4 && v.len() == 4 && v[3] > 0 => {
                    outputs / v[3] * k[1] * (q[3] + v[3])
                }
                _ => 0,
            },
            _ => 0,
        };
    }
    2.0 * macs as f64 / 1e9
}

/// GFLOP/s of the hand 8x8 matmul on the engine's adapter, or `None` (with a note)
/// when there is no adapter.
fn hand_gflops(n: u32) -> Option<f64> {
    use relax_wgpu::gpu_runtime::{reference, GpuRuntime};
    let rt = match GpuRuntime::shared_default() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("no GPU adapter for the hand matmul reference: {e}");
            return None;
        }
    };
    match reference::hand_matmul_gflops(&rt, n, 5) {
        Ok(g) => {
            eprintln!("hand 8x8 matmul {n}^3 on {}: {g:.2} GFLOP/s", rt.adapter_info());
            Some(g)
        }
        Err(e) => {
            eprintln!("hand matmul reference failed: {e}");
            None
        }
    }
}

fn bench(o: &Options, name: &str) -> Result<(), String> {
    let dir = o.dir.join(name);
    let Case { prog, entry, args } = case(&dir, o.seq)?;
    let engine = Engine::new(EngineConfig {
        device: o.device,
        profile: o.profile,
        ..EngineConfig::default()
    });
    let warm = Instant::now();
    let (loaded, weights, work) = if prog.extension().is_some_and(|e| e == "onnx") {
        let model = engine
            .load_onnx(&prog, &relax_onnx::ImportOptions::default())
            .map_err(|e| format!("{name}: {e}"))?;
        let work = gflop(&model.imported.module, &entry);
        (model.loaded, model.weights, work)
    } else {
        let src = std::fs::read_to_string(&prog).map_err(|e| format!("{}: {e}", prog.display()))?;
        let module = relax_wgpu::ir::text::parse(&src)
            .map_err(|d| format!("{name}: {d}"))?
            .into_module();
        let work = gflop(&module, &entry);
        let loaded = engine.load(&module).map_err(|e| format!("{name}: {e}"))?;
        (loaded, Params::new(), work)
    };
    let run = || loaded.run_named(&entry, &args, &weights);
    let out = run().map_err(|e| format!("{name}: {e}"))?;
    let first = warm.elapsed().as_secs_f64() * 1e3;
    let device = if o.device == DeviceChoice::Gpu { "gpu" } else { "cpu" };
    let expected = dir.join("expected.npy");
    if expected.is_file() {
        check_output(name, device, &out, &expected)?;
    }
    eprintln!("{name} {:?}: first inference {first:.0} ms", o.device);
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < o.repeat && (times.is_empty() || start.elapsed() < o.budget) {
        let t = Instant::now();
        run().map_err(|e| format!("{name}: {e}"))?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!("STATS {name} {device} {:?}", loaded.stats());
    if let Some(g) = loaded.gpu_runtime_stats() {
        println!("GPUSTATS {name} {g:?}");
    }
    if o.profile {
        for k in loaded.gpu_profile() {
            let per = k.time.as_secs_f64() * 1e3 / k.calls.max(1) as f64;
            println!("PROFILE {name} {per:.3} ms/call {} calls {}", k.calls, k.name);
        }
    }
    println!(
        "RESULT {name} {device} {median:.3} {} {work:.4} {first:.1}",
        times.len()
    );
    // The hand kernel right after the network's timed runs and again after two more
    // network runs; the better of the two (the conservative choice for the ratio on
    // a machine whose load varies).
    let hand = if o.device == DeviceChoice::Gpu {
        let first = hand_gflops(o.hand_n);
        for _ in 0..2 {
            run().map_err(|e| format!("{name}: {e}"))?;
        }
        match (first, hand_gflops(o.hand_n)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    } else {
        None
    };
    if let Some(hand) = hand {
        println!("HAND {name} {hand:.4}");
        let achieved = work / (median / 1e3);
        println!("RATIO {name} {achieved:.4} / hand {hand:.4} = {:.3}", achieved / hand);
    }
    Ok(())
}

/// Compare the first output tensor of `out` with the reference in `expected` and print
/// `CHECK <model> <device> max|err| <e> max|ref| <m>`.
fn check_output(name: &str, device: &str, out: &Value, expected: &Path) -> Result<(), String> {
    let first = match out {
        Value::Tuple(items) => items.first().cloned().ok_or(format!("{name}: empty result"))?,
        v => v.clone(),
    };
    let got = first
        .as_tensor()
        .ok_or(format!("{name}: the first output is not a tensor"))?
        .to_f64_values()
        .map_err(|e| format!("{name}: {e}"))?;
    let want = read_npy(expected)
        .map_err(|e| format!("{}: {e}", expected.display()))?
        .to_f64_values()
        .map_err(|e| format!("{name}: {e}"))?;
    if got.len() != want.len() {
        return Err(format!(
            "{name}: {} output elements, the reference has {}",
            got.len(),
            want.len()
        ));
    }
    let err = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0, f64::max);
    let scale = want.iter().map(|w| w.abs()).fold(0.0, f64::max);
    let err = if got.iter().any(|g| g.is_nan()) { f64::NAN } else { err };
    println!("CHECK {name} {device} max|err| {err:.3e} max|ref| {scale:.3e}");
    Ok(())
}

fn main() -> std::process::ExitCode {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let mut failed = false;
    for name in &o.models {
        let dir = o.dir.join(name);
        if !["prog.py", "meta.json", "model.onnx"]
            .iter()
            .any(|f| dir.join(f).is_file())
        {
            eprintln!("{name}: not in {}, skipped", o.dir.display());
            continue;
        }
        if let Err(e) = bench(&o, name) {
            eprintln!("error: {e}");
            println!("FAILED {name}");
            failed = true;
        }
    }
    std::process::ExitCode::from(u8::from(failed))
}
