//! Greedy generation with a decoder exported by Apache TVM's `tvm.relax.frontend.nn` with a
//! KV cache per layer (`scripts/gen_decoder.py` writes one: `prog.py`, `params.npz` and
//! TVM's own run of the same loop in `reference.json`).
//!
//! Runs `_initialize_effect`, `prefill` on the prompt and greedy `decode` steps (once to
//! compile the kernels, then timed), checks the tokens against TVM's, and reports the
//! decode speed against the memory-bandwidth floor: a decode step reads every weight once,
//! so it cannot beat `bandwidth / weight bytes` tokens per second; the bandwidth is
//! measured here: on the host with a STREAM-like triad (`a[i] = b[i] + s * c[i]`, all
//! threads), on the GPU with device-to-device copies of 256 MiB (eight per submission).
//!
//! ```sh
//! cargo run --release --example generate                       # the tiny decoder of the tests
//! python scripts/gen_decoder.py dec100m --preset 100m --forward  # ~100M parameters (needs TVM)
//! cargo run --release --example generate -- dec100m --device cpu
//! ```
//!
//! The timed generation runs `--runs` times (3 by default) and the best is reported, as the
//! triad's best pass is: other work on the machine only ever slows either down.
//!
//! With a `forward` function (`gen_decoder.py --forward`: prefill's computation without the
//! caches), prefill of `--prefill-tokens` tokens (128 by default) is timed against `forward`
//! on the same tokens (the best of `--runs` each) and their logits compared: the caches
//! should add next to nothing to the full-sequence forward pass.
//!
//! Options: `[DIR] [--device cpu|gpu|auto] [--tokens N] [--runs N] [--prefill-tokens N]
//! [--unfused-decode] [--profile]` (`--unfused-decode` runs a decoding step's attention as
//! legalized on the host, `EngineConfig::fuse_attention_decode` off, for a same-machine
//! comparison; `--profile` prints the GPU time per kernel, each kernel waited for).

use std::path::PathBuf;
use std::time::Instant;

use relax_wgpu::engine::generate::{Decoder, DecoderFunctions};
use relax_wgpu::engine::params::Params;
use relax_wgpu::engine::{DeviceChoice, Engine, EngineConfig};

/// Bytes per second of a STREAM-like triad over arrays much larger than the caches,
/// counting two reads and one write per element (the best of a few passes).
fn triad_bandwidth() -> f64 {
    const N: usize = 1 << 24; // 16M f32 per array: 192 MiB in all
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut a = vec![0.0f32; N];
    let b = vec![1.0f32; N];
    let c = vec![2.0f32; N];
    let chunk = N.div_ceil(threads);
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        std::thread::scope(|s| {
            for ((a, b), c) in a.chunks_mut(chunk).zip(b.chunks(chunk)).zip(c.chunks(chunk)) {
                s.spawn(move || {
                    for ((a, &b), &c) in a.iter_mut().zip(b).zip(c) {
                        *a = b + 3.0 * c;
                    }
                });
            }
        });
        best = best.min(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(&a);
    (3 * N * 4) as f64 / best
}

fn main() {
    if let Err(e) = run() {
        eprintln!("generate FAILED: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/generate");
    let mut device = "auto".to_string();
    let mut tokens: Option<usize> = None;
    let mut runs = 3usize;
    let mut prefill_tokens = 128usize;
    let mut fuse_decode = true;
    let mut profile = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--device" => device = args.next().ok_or("--device needs a value")?,
            "--tokens" => tokens = Some(args.next().ok_or("--tokens needs a value")?.parse()?),
            "--unfused-decode" => fuse_decode = false,
            "--profile" => profile = true,
            "--runs" => runs = args.next().ok_or("--runs needs a value")?.parse::<usize>()?.max(1),
            "--prefill-tokens" => {
                prefill_tokens = args
                    .next()
                    .ok_or("--prefill-tokens needs a value")?
                    .parse::<usize>()?
                    .max(1)
            }
            _ => dir = PathBuf::from(a),
        }
    }
    let choice: DeviceChoice = device.parse()?;
    let choice = match choice {
        DeviceChoice::Auto => DeviceChoice::detect().0,
        c => c,
    };
    let src = std::fs::read_to_string(dir.join("prog.py"))?;
    let module = relax_wgpu::ir::text::parse(&src)?.into_module();
    let params = Params::read(&dir.join("params.npz"))?;
    let weight_bytes: usize = params
        .iter()
        .filter_map(|(_, v)| v.as_tensor().map(|t| t.nbytes()))
        .sum();
    let reference: Option<serde_json::Value> = std::fs::read_to_string(dir.join("reference.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let prompt: Vec<i64> = reference
        .as_ref()
        .and_then(|r| r["prompt"].as_array().cloned())
        .map(|p| p.iter().filter_map(|t| t.as_i64()).collect())
        .unwrap_or_else(|| vec![1, 2, 3, 4]);
    let tvm_tokens: Option<Vec<i64>> = reference
        .as_ref()
        .and_then(|r| r["tokens"].as_array().cloned())
        .map(|p| p.iter().filter_map(|t| t.as_i64()).collect());
    let n = tokens.or(tvm_tokens.as_ref().map(Vec::len)).unwrap_or(17);

    let engine = Engine::new(EngineConfig {
        device: choice,
        fuse_attention_decode: fuse_decode,
        profile,
        ..EngineConfig::default()
    });
    println!("device: {}", engine.device_summary());
    let loaded = engine.load(&module)?;
    let mut dec = Decoder::new(&loaded, &params, DecoderFunctions::default())?;
    if choice == DeviceChoice::Gpu {
        dec.weights_to_vdevice("webgpu")?;
    }
    let t = Instant::now();
    dec.generate(&prompt, n)?;
    println!(
        "first generation (compiles {} kernels): {:.1} ms",
        loaded.stats().kernels_compiled,
        t.elapsed().as_secs_f64() * 1e3
    );
    let compiled = loaded.stats().kernels_compiled;
    let (before, gpu_before) = (loaded.stats(), loaded.gpu_runtime_stats());
    let mut g = dec.generate(&prompt, n)?;
    // What one generation does (prefill and `n - 1` decode steps): kernels, packed
    // calls, copies, and on the GPU its dispatches and queue submissions.
    let after = loaded.stats();
    println!(
        "per generation: {} kernels ({} on the GPU), {} packed calls, {} uploads, {} downloads",
        after.kernels_run - before.kernels_run,
        after.gpu_kernels_run - before.gpu_kernels_run,
        after.packed_calls - before.packed_calls,
        after.uploads - before.uploads,
        after.downloads - before.downloads
    );
    if profile {
        // GPU time per kernel over every run so far (each kernel waited for), most first.
        let mut p = loaded.gpu_profile();
        p.sort_by_key(|k| std::cmp::Reverse(k.time));
        for k in p.iter().take(20) {
            let ms = k.time.as_secs_f64() * 1e3;
            println!("profile: {ms:9.3} ms {:6} calls {}", k.calls, k.name);
        }
    }
    if let (Some(a), Some(b)) = (loaded.gpu_runtime_stats(), gpu_before) {
        println!(
            "per generation on the GPU: {} dispatches, {} submissions",
            a.dispatches - b.dispatches,
            a.submits - b.submits
        );
    }
    for _ in 1..runs {
        let again = dec.generate(&prompt, n)?;
        if again.tokens != g.tokens {
            return Err("two generations gave different tokens".into());
        }
        g.prefill_ms = g.prefill_ms.min(again.prefill_ms);
        g.decode_ms_per_token = g.decode_ms_per_token.min(again.decode_ms_per_token);
    }
    if loaded.stats().kernels_compiled != compiled {
        return Err("a later generation compiled kernels again".into());
    }
    println!("prompt {prompt:?} -> tokens {:?}", g.tokens);
    if let Some(tvm) = &tvm_tokens {
        // A step where TVM's logit for our token is within float16 precision of its best
        // is a tie (either token is right); the comparison stops there.
        let tvm_logits = reference.as_ref().and_then(|r| r["logits"].as_array().cloned());
        let k = tvm.len().min(g.tokens.len());
        match (0..k).find(|&i| tvm[i] != g.tokens[i]) {
            None => println!("tokens match TVM's"),
            Some(i) => {
                let row = tvm_logits.as_ref().and_then(|l| l.get(i)).and_then(|r| r.as_array());
                let logit = |t: i64| row.and_then(|r| r.get(t as usize)).and_then(|v| v.as_f64());
                match (logit(tvm[i]), logit(g.tokens[i])) {
                    (Some(best), Some(ours)) if best - ours <= 1e-2 * (1.0 + best.abs()) => println!(
                        "tokens match TVM's up to step {i}, a tie at float16 precision (TVM's logits {best:.4} for \
                         its {} and {ours:.4} for our {})",
                        tvm[i], g.tokens[i]
                    ),
                    _ => return Err(format!("tokens differ from TVM's {tvm:?} at step {i}").into()),
                }
            }
        }
    }
    let has_forward = module.functions.keys().any(|gv| gv.name() == "forward");
    let prefill_vs_forward = if has_forward {
        // Token ids 1, 2, ... within the vocabulary (the logits' last dimension).
        let vocab = g.logits.first().map_or(1, Vec::len).max(1) as i64;
        let ids: Vec<i64> = (0..prefill_tokens as i64).map(|i| 1 + i % (vocab - 1).max(1)).collect();
        let (mut pre_ms, mut fwd_ms) = (f64::INFINITY, f64::INFINITY);
        let (mut pre_logits, mut fwd_logits) = (Vec::new(), Vec::new());
        // One untimed call of each first: `forward`'s kernels compile on its first call.
        for i in 0..=runs {
            let (l, ms) = dec.run_once("prefill", &ids)?;
            let (lf, msf) = dec.run_once("forward", &ids)?;
            if i > 0 {
                pre_ms = pre_ms.min(ms);
                fwd_ms = fwd_ms.min(msf);
            }
            (pre_logits, fwd_logits) = (l, lf);
        }
        let diff = pre_logits
            .iter()
            .zip(&fwd_logits)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        if pre_logits.len() != fwd_logits.len() || diff > 1e-2 {
            return Err(format!("prefill's and forward's logits differ (max |diff| {diff})").into());
        }
        Some((pre_ms, fwd_ms, diff))
    } else {
        None
    };
    // The floor of the device that ran: the GPU's memory bandwidth (a device-to-device
    // copy) for a GPU run, the host's (a triad) otherwise.
    let gpu_bw = match choice {
        DeviceChoice::Gpu => {
            let rt = relax_wgpu::gpu_runtime::GpuRuntime::shared_default()?;
            Some(relax_wgpu::gpu_runtime::reference::copy_bandwidth(&rt, 1 << 28, 5)?)
        }
        _ => None,
    };
    let (bw, what) = match gpu_bw {
        Some(b) => (b, "GPU memory bandwidth (device copy)"),
        None => (triad_bandwidth(), "host memory bandwidth (triad)"),
    };
    let floor = bw / weight_bytes as f64;
    println!(
        "{what}: {:.2} GB/s; weights {:.1} MB -> floor {:.1} tokens/s",
        bw / 1e9,
        weight_bytes as f64 / 1e6,
        floor
    );
    let dev = if choice == DeviceChoice::Gpu {
        "ours GPU"
    } else {
        "ours host"
    };
    println!(
        "| run | prefill ms ({} tokens) | decode ms/token | tokens/s | of floor |",
        prompt.len()
    );
    println!("|---|---|---|---|---|");
    println!(
        "| {dev} | {:.2} | {:.3} | {:.1} | {:.2}x |",
        g.prefill_ms,
        g.decode_ms_per_token,
        g.tokens_per_second(),
        g.tokens_per_second() / floor
    );
    if let Some(r) = &reference {
        if let (Some(p), Some(d)) = (r["prefill_ms"].as_f64(), r["decode_ms_per_token"].as_f64()) {
            println!(
                "| TVM llvm (reference.json) | {p:.2} | {d:.3} | {:.1} | {:.2}x |",
                1e3 / d,
                1e3 / d / floor
            );
        }
    }
    println!(
        "| floor (bandwidth / weight bytes) | | {:.3} | {floor:.1} | 1.00x |",
        1e3 / floor
    );
    if let Some((pre, fwd, diff)) = prefill_vs_forward {
        println!(
            "prefill of {prefill_tokens} tokens: {pre:.2} ms; forward without the caches: {fwd:.2} ms; \
             ratio {:.2}x (logits max |diff| {diff:.2e})",
            pre / fwd
        );
    }
    Ok(())
}
