//! Fused attention against the unfused legalization, in the same run: for each
//! sequence length and device, `R.nn.attention(q, k, v)` on `(1, seq, heads, 64)`
//! float32 tensors (with and without a causal mask) is loaded twice, once with
//! `EngineConfig::fuse_attention` (one online-softmax kernel, see
//! `relax_transform::attention`) and once without (TVM's legalization: two batched
//! matmuls around a softmax over a materialised `seq x seq` score matrix); each is run
//! once to warm up, then timed at most `--repeat` times within `--budget-s` seconds.
//! The two results are compared (max |fused - unfused|). One line per cell:
//!
//! `RESULT <device> <mask> seq <S> fused <median ms> unfused <median ms> speedup <x> maxdiff <d>`
//!
//! Usage: `cargo run --release --example bench_attention -- [--device cpu|gpu|both]
//! [--seq 128,512,2048] [--heads 4] [--repeat 5] [--budget-s 20]`

use std::time::{Duration, Instant};

use relax_wgpu::engine::{DeviceChoice, Engine, EngineConfig, Tensor, Value};
use relax_wgpu::ir::DataType;

struct Options {
    devices: Vec<DeviceChoice>,
    seqs: Vec<i64>,
    heads: i64,
    repeat: usize,
    budget: Duration,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        devices: vec![DeviceChoice::Cpu, DeviceChoice::Gpu],
        seqs: vec![128, 512, 2048],
        heads: 4,
        repeat: 5,
        budget: Duration::from_secs(20),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--device" => {
                o.devices = match value("--device")?.as_str() {
                    "cpu" => vec![DeviceChoice::Cpu],
                    "gpu" => vec![DeviceChoice::Gpu],
                    "both" => vec![DeviceChoice::Cpu, DeviceChoice::Gpu],
                    d => return Err(format!("--device must be cpu, gpu or both, got {d}")),
                }
            }
            "--seq" => {
                o.seqs = value("--seq")?
                    .split(',')
                    .map(|s| s.trim().parse::<i64>().map_err(|e| format!("--seq: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "--heads" => o.heads = value("--heads")?.parse().map_err(|e| format!("--heads: {e}"))?,
            "--repeat" => o.repeat = value("--repeat")?.parse().map_err(|e| format!("--repeat: {e}"))?,
            "--budget-s" => {
                o.budget =
                    Duration::from_secs_f64(value("--budget-s")?.parse().map_err(|e| format!("--budget-s: {e}"))?)
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(o)
}

const DIM: i64 = 64;

fn program(causal: bool) -> String {
    let mask = if causal { ", causal_mask=\"TopLeft\"" } else { "" };
    format!(
        r#"@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((1, "n", "h", {DIM}), dtype="float32"), k: R.Tensor((1, "n", "h", {DIM}), dtype="float32"), v: R.Tensor((1, "n", "h", {DIM}), dtype="float32")):
        n = T.int64()
        h = T.int64()
        with R.dataflow():
            a = R.nn.attention(q, k, v{mask})
            R.output(a)
        return a
"#
    )
}

/// A float32 tensor of `shape` with values in [-1, 1) from a fixed LCG.
fn random(shape: &[i64], seed: u64) -> Result<Tensor, String> {
    let n: i64 = shape.iter().product();
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut bytes = Vec::with_capacity(n as usize * 4);
    for _ in 0..n {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let x = ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    Tensor::from_bytes(DataType::FLOAT32, shape, bytes).map_err(|e| e.to_string())
}

fn floats(v: &Value) -> Result<Vec<f32>, String> {
    let t = v.as_tensor().ok_or("not a tensor")?;
    let a = t.to_array::<f32>().map_err(|e| e.to_string())?;
    Ok(a.iter().copied().collect())
}

/// (median ms, result) of `module` with fusion on or off.
fn time(o: &Options, device: DeviceChoice, fuse: bool, src: &str, args: &[Value]) -> Result<(f64, Vec<f32>), String> {
    let module = relax_wgpu::ir::text::parse(src)
        .map_err(|e| format!("{e}"))?
        .into_module();
    let engine = Engine::new(EngineConfig {
        device,
        fuse_attention: fuse,
        fuse_attention_host: fuse,
        ..EngineConfig::default()
    });
    let loaded = engine.load(&module).map_err(|e| e.to_string())?;
    let first = loaded.run("main", args).map_err(|e| e.to_string())?;
    let out = floats(&first)?;
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < o.repeat.max(1) && (times.is_empty() || start.elapsed() < o.budget) {
        let t = Instant::now();
        loaded.run("main", args).map_err(|e| e.to_string())?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], out))
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    for &device in &o.devices {
        let dev = if device == DeviceChoice::Gpu { "gpu" } else { "cpu" };
        if device == DeviceChoice::Gpu {
            match relax_wgpu::gpu_runtime::GpuRuntime::shared_default() {
                Ok(rt) => println!("# gpu adapter: {}", rt.adapter_info().name),
                Err(e) => {
                    println!("# no GPU adapter ({e}): skipping the GPU");
                    continue;
                }
            }
        }
        for causal in [false, true] {
            let src = program(causal);
            let mask = if causal { "causal" } else { "none" };
            for &n in &o.seqs {
                let shape = [1, n, o.heads, DIM];
                let args: Result<Vec<Value>, String> = (0..3)
                    .map(|i| random(&shape, 7 + i as u64).map(Value::Tensor))
                    .collect();
                let args = match args {
                    Ok(a) => a,
                    Err(e) => {
                        println!("RESULT {dev} {mask} seq {n} error {e}");
                        continue;
                    }
                };
                let fused = time(&o, device, true, &src, &args);
                let unfused = time(&o, device, false, &src, &args);
                match (fused, unfused) {
                    (Ok((tf, a)), Ok((tu, b))) => {
                        let diff = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
                        println!(
                            "RESULT {dev} {mask} seq {n} fused {tf:.3} unfused {tu:.3} speedup {:.2} maxdiff {diff:.2e}",
                            tu / tf
                        );
                    }
                    (f, u) => println!(
                        "RESULT {dev} {mask} seq {n} error fused: {:?} unfused: {:?}",
                        f.err(),
                        u.err()
                    ),
                }
            }
        }
    }
}
