//! Cold start of real networks on the GPU: the time from loading a module to the end
//! of its first inference (kernel compilation, pipeline creation and weight upload
//! included), then one steady inference, with the JIT's counters.
//!
//! Usage: `cold_start DIR [--model NAME]... [--cache-dir D] [--no-prewarm] [--threads N]`
//! where DIR holds `<name>/{prog.py,in*.npy}` (made by the real-model preparation
//! script). Without `--cache-dir` kernels are cached in memory only; run it twice
//! with the same `--cache-dir` to time a second process. Prints one line per model:
//!
//! `COLD <model> load_ms <ms> first_ms <ms> total_ms <ms> steady_ms <ms> programs <n>
//!  kernels <n> pipelines <n> disk_hits <n> ours_ms <ms> driver_ms <ms> max_abs_err <x>`
//!
//! (`pipelines`: distinct pipelines the runtime created; `max_abs_err` against the
//! directory's `expected.npy` when there is one.)

use std::path::{Path, PathBuf};
use std::time::Instant;

use relax_wgpu::engine::params::{read_npy, read_npy_inputs};
use relax_wgpu::engine::{CompileConfig, DeviceChoice, Engine, EngineConfig, Value};

struct Options {
    dir: PathBuf,
    models: Vec<String>,
    cache_dir: Option<PathBuf>,
    prewarm: bool,
    threads: usize,
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut o = Options {
        dir: PathBuf::new(),
        models: Vec::new(),
        cache_dir: None,
        prewarm: true,
        threads: 0,
    };
    let mut dir = None;
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--model" => o.models.push(value("--model")?),
            "--cache-dir" => o.cache_dir = Some(PathBuf::from(value("--cache-dir")?)),
            "--no-prewarm" => o.prewarm = false,
            "--threads" => o.threads = value("--threads")?.parse().map_err(|e| format!("--threads: {e}"))?,
            _ if a.starts_with("--") => return Err(format!("unknown option {a}")),
            _ => dir = Some(PathBuf::from(a)),
        }
    }
    o.dir = dir.ok_or("give the models' directory")?;
    if o.models.is_empty() {
        o.models = ["squeezenet", "shufflenet", "resnet50"].map(String::from).to_vec();
    }
    Ok(o)
}

fn max_abs_err(dir: &Path, out: &Value) -> Option<f64> {
    let want = read_npy(&dir.join("expected.npy")).ok()?;
    let Value::Tensor(got) = out else { return None };
    let got = got.to_f64_values().ok()?;
    let want = want.to_f64_values().ok()?;
    if got.len() != want.len() {
        return Some(f64::INFINITY);
    }
    Some(got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max))
}

fn cold(o: &Options, name: &str) -> Result<(), String> {
    let dir = o.dir.join(name);
    let src =
        std::fs::read_to_string(dir.join("prog.py")).map_err(|e| format!("{}: {e}", dir.join("prog.py").display()))?;
    let module = relax_wgpu::ir::text::parse(&src)
        .map_err(|d| format!("{name}: {d}"))?
        .into_module();
    let args: Vec<Value> = read_npy_inputs(&dir)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(Value::Tensor)
        .collect();
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Gpu,
        compile: CompileConfig {
            disk_cache: o.cache_dir.clone(),
            prewarm: o.prewarm,
            threads: o.threads,
            progress: true,
        },
        ..EngineConfig::default()
    });
    let t0 = Instant::now();
    let loaded = engine.load(&module).map_err(|e| format!("{name}: {e}"))?;
    let load = t0.elapsed().as_secs_f64() * 1e3;
    let t1 = Instant::now();
    let out = loaded.run("main", &args).map_err(|e| format!("{name}: {e}"))?;
    let first = t1.elapsed().as_secs_f64() * 1e3;
    let t2 = Instant::now();
    loaded.run("main", &args).map_err(|e| format!("{name}: {e}"))?;
    let steady = t2.elapsed().as_secs_f64() * 1e3;
    let c = loaded.jit_counters().unwrap_or_default();
    let pipelines = engine.gpu_runtime().map_or(0, |rt| rt.cached_kernels());
    let err = max_abs_err(&dir, &out).map_or("n/a".to_string(), |e| format!("{e:.3e}"));
    println!(
        "COLD {name} load_ms {load:.0} first_ms {first:.0} total_ms {:.0} steady_ms {steady:.0} programs {} \
         kernels {} pipelines {pipelines} disk_hits {} ours_ms {:.0} driver_ms {:.0} max_abs_err {err}",
        load + first,
        c.gpu_programs_compiled,
        c.kernels_compiled,
        c.disk_cache_hits,
        c.our_compile_ns as f64 / 1e6,
        c.driver_compile_ns as f64 / 1e6,
    );
    Ok(())
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let mut failed = false;
    for m in &o.models {
        if let Err(e) = cold(&o, m) {
            eprintln!("error: {e}");
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
}
