//! `relax generate PROG --params W --prompt-ids 1,2,3 --max-new-tokens N`: greedy
//! generation with a decoder exported by `tvm.relax.frontend.nn` with KV caches.

use std::path::PathBuf;

use relax_engine::generate::{Decoder, DecoderFunctions};
use relax_engine::params::Params;
use relax_engine::{DeviceChoice, Engine, EngineConfig};
use serde_json::json;

use crate::common::{parse_source, read_source, EXIT_OK, EXIT_REJECTED, EXIT_USAGE};
use crate::run::DeviceArg;

/// Options of `relax generate`.
#[derive(clap::Args, Debug)]
pub struct GenerateOptions {
    /// The TVMScript file of the decoder (`_initialize_effect`, `prefill`, `decode`).
    pub file: PathBuf,
    /// The weights: an `.npz` or `.safetensors` file whose tensors bind to the parameters
    /// of the same name.
    #[arg(long)]
    pub params: PathBuf,
    /// The prompt's token ids, comma separated.
    #[arg(long = "prompt-ids", value_delimiter = ',', required = true)]
    pub prompt_ids: Vec<i64>,
    /// How many tokens to generate (the first comes from `prefill`, each further one
    /// from a `decode` step).
    #[arg(long = "max-new-tokens", default_value_t = 16)]
    pub max_new_tokens: usize,
    /// Where to run: `auto` takes a hardware wgpu adapter when there is one (the host
    /// otherwise, with a note on stderr), `gpu` requires an adapter (lavapipe counts),
    /// `cpu` runs on the host.
    #[arg(long, value_enum, default_value = "auto")]
    pub device: DeviceArg,
    /// Print `{"tokens": [...], "prefill_ms", "decode_ms_per_token", "tokens_per_second",
    /// "device"}` on stdout.
    #[arg(long)]
    pub json: bool,
    /// Generations to run before the timed one (the first compiles the kernels).
    #[arg(long, default_value_t = 0)]
    pub warmup: u32,
    /// Print the time of each kernel over the whole run on stderr, most first (host wall
    /// time per PrimFunc and packed function; GPU time per kernel).
    #[arg(long)]
    pub profile: bool,
    /// The function that makes the caches.
    #[arg(long = "init-func", default_value = "_initialize_effect")]
    pub init_func: String,
    /// The function that runs the prompt.
    #[arg(long = "prefill-func", default_value = "prefill")]
    pub prefill_func: String,
    /// The function that runs one token.
    #[arg(long = "decode-func", default_value = "decode")]
    pub decode_func: String,
    #[command(flatten)]
    pub cache: crate::cache::CacheArgs,
}

/// Run `relax generate`. Exit 0 on success, 1 when the program is rejected or the run
/// fails, 2 on usage or I/O errors.
pub fn run(opts: &GenerateOptions) -> u8 {
    match run_inner(opts) {
        Ok(()) => EXIT_OK,
        Err((code, msg)) => {
            if !msg.is_empty() {
                eprintln!("error: {msg}");
            }
            code
        }
    }
}

fn run_inner(opts: &GenerateOptions) -> Result<(), (u8, String)> {
    let rejected = |m: String| (EXIT_REJECTED, m);
    let source = read_source(&opts.file).map_err(|c| (c, String::new()))?;
    let module = parse_source(&source).map_err(|c| (c, String::new()))?.into_module();
    if opts.prompt_ids.is_empty() {
        return Err((EXIT_USAGE, "--prompt-ids needs at least one token id".into()));
    }
    let params = Params::read(&opts.params).map_err(|e| (EXIT_USAGE, format!("{}: {e}", opts.params.display())))?;
    let (choice, device) = match opts.device {
        DeviceArg::Cpu => (DeviceChoice::Cpu, "cpu"),
        DeviceArg::Gpu => match relax_gpu_runtime::GpuRuntime::shared_default() {
            Ok(_) => (DeviceChoice::Gpu, "gpu"),
            Err(e) => return Err(rejected(format!("--device gpu: no usable wgpu adapter: {e}"))),
        },
        DeviceArg::Auto => {
            let (choice, why) = DeviceChoice::detect();
            eprintln!("note: {why}");
            (choice, if choice == DeviceChoice::Gpu { "gpu" } else { "cpu" })
        }
    };
    let engine = Engine::new(EngineConfig {
        device: choice,
        profile: opts.profile,
        compile: opts.cache.compile_config(),
        ..EngineConfig::default()
    });
    let loaded = engine
        .load(&module)
        .map_err(|e| rejected(format!("cannot load the module: {e}")))?;
    let funcs = DecoderFunctions {
        init: (!opts.init_func.is_empty()).then(|| opts.init_func.clone()),
        prefill: opts.prefill_func.clone(),
        decode: opts.decode_func.clone(),
    };
    let mut decoder = Decoder::new(&loaded, &params, funcs).map_err(|e| rejected(e.to_string()))?;
    if choice == DeviceChoice::Gpu {
        // Weights stay in GPU memory for every step.
        decoder
            .weights_to_vdevice("webgpu")
            .map_err(|e| rejected(format!("weights to the GPU: {e}")))?;
    }
    for _ in 0..opts.warmup {
        decoder
            .generate(&opts.prompt_ids, opts.max_new_tokens)
            .map_err(|e| rejected(format!("generation failed: {e}")))?;
    }
    let g = decoder
        .generate(&opts.prompt_ids, opts.max_new_tokens)
        .map_err(|e| rejected(format!("generation failed: {e}")))?;
    if opts.profile {
        for (device, p) in [("host", loaded.host_profile()), ("GPU", loaded.gpu_profile())] {
            print_profile(device, &p);
        }
    }
    if opts.json {
        let out = json!({
            "tokens": g.tokens,
            "prefill_ms": g.prefill_ms,
            "decode_ms_per_token": g.decode_ms_per_token,
            "tokens_per_second": g.tokens_per_second(),
            "device": device,
        });
        println!("{out}");
    } else {
        let ids: Vec<String> = g.tokens.iter().map(i64::to_string).collect();
        println!("{}", ids.join(" "));
        println!(
            "prefill: {} tokens in {:.2} ms; decode: {} steps, {:.3} ms/token, {:.1} tokens/s ({device})",
            opts.prompt_ids.len(),
            g.prefill_ms,
            g.decode_steps,
            g.decode_ms_per_token,
            g.tokens_per_second()
        );
    }
    Ok(())
}

/// The kernels of `p`, most time first (at most 20).
fn print_profile(device: &str, p: &[relax_jit::KernelProfile]) {
    if p.is_empty() {
        return;
    }
    let mut p: Vec<&relax_jit::KernelProfile> = p.iter().collect();
    p.sort_by_key(|k| std::cmp::Reverse(k.time));
    let total: f64 = p.iter().map(|k| k.time.as_secs_f64()).sum();
    eprintln!("profile: {device} time per kernel, total {:.3} ms", total * 1e3);
    for k in p.iter().take(20) {
        let ms = k.time.as_secs_f64() * 1e3;
        let share = 100.0 * k.time.as_secs_f64() / total.max(f64::MIN_POSITIVE);
        eprintln!("profile: {ms:>10.3} ms {share:>5.1}% {:>6} calls  {}", k.calls, k.name);
    }
}
