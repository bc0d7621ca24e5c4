//! `relax run FILE`: evaluate a Relax function with the engine.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ndarray::ArrayD;
use relax_engine::params::{arg_mismatch, dims_text, ArgMismatch};
use relax_engine::{DeviceChoice, Engine, EngineConfig, Tensor, Value};
use relax_ir::{BaseFunc, DataType, GlobalVar, IRModule, StructInfo};
use serde_json::{json, Value as Json};

use crate::common::{parse_source, read_source, EXIT_OK, EXIT_REJECTED, EXIT_USAGE};

/// The device requested with `--device`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceArg {
    /// The first wgpu adapter if there is one, else the host.
    Auto,
    /// Require a GPU.
    Gpu,
    /// The host CPU.
    Cpu,
}

/// Options of `relax run`.
#[derive(clap::Args, Debug)]
pub struct RunOptions {
    /// The TVMScript file (`-` reads standard input), or an ONNX model (`.onnx`: imported
    /// first; its weights are bound by name, `--input` gives the graph inputs).
    pub file: PathBuf,
    /// For an ONNX model: fix a symbolic dimension, `--dim seq_len=128` (repeatable).
    #[arg(long = "dim", value_parser = crate::import::parse_dim)]
    pub dims: Vec<(String, i64)>,
    /// The Relax function to call.
    #[arg(long, default_value = "main")]
    pub entry: String,
    /// Where to run: `auto` takes the first wgpu adapter (software adapters such as lavapipe
    /// count) and says which on stderr, or falls back to the host with a note; `gpu` requires
    /// an adapter (kernels become WGSL); `cpu` runs everything on the host. Tensors on a
    /// module's VDevices follow their StructInfo in every mode except `cpu`.
    #[arg(long, value_enum, default_value = "auto")]
    pub device: DeviceArg,
    /// An input tensor as a `.npy` file (repeat, in parameter order).
    #[arg(long = "input")]
    pub inputs: Vec<PathBuf>,
    /// All inputs as a JSON file (see above).
    #[arg(long = "inputs-json")]
    pub inputs_json: Option<PathBuf>,
    /// An `.npz` or `.safetensors` file whose tensors bind to the parameters of the same
    /// name (the weights of a model; `m.transformer.wpe.weight` binds the parameter TVM
    /// prints as `m_transformer_wpe_weight`); the parameters left take
    /// `--input`/`--inputs-json` in order. A missing, extra or mis-shaped entry is an
    /// error naming the parameter.
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Run this many times (the last result is printed).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Print engine statistics on stderr (runs, kernels run per device, kernels compiled
    /// and cache hits, packed calls, copies and bytes moved by kind, allocations, time).
    #[arg(long)]
    pub stats: bool,
    /// Write the result: `.npy` for a single tensor, `.npz` (arr_0, arr_1, ...) for several.
    /// Stdout then shows a summary of each tensor (shape, dtype, first values, min, max,
    /// mean) instead of every value, unless `--json` is given.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Print each preparation pass's time on stderr.
    #[arg(long = "time-passes")]
    pub time_passes: bool,
    /// Write the module after every preparation pass into this directory (`NN-PASS.py`).
    #[arg(long = "dump-ir")]
    pub dump_ir: Option<PathBuf>,
    /// Skip the graph optimizations (operator fusion, dead-code elimination).
    #[arg(long = "no-optimize")]
    pub no_optimize: bool,
    /// Print the GPU time of each kernel on stderr, most first, with the PrimFunc
    /// (legalized operator or fused group) it runs and its GFLOP/s where the flop
    /// count is known (GPU timestamps when the adapter has them, else wall time
    /// per submission; every kernel then waits for completion); then the host's
    /// wall time per PrimFunc and per packed function (the host kernel library).
    #[arg(long)]
    pub profile: bool,
    /// Do not plan storage reuse at compile time (`static-plan-block-memory`, as TVM's
    /// StaticPlanBlockMemory, on by default): allocate each intermediate tensor when
    /// it is produced and release it after its last use instead.
    #[arg(long = "no-static-memory-plan")]
    pub no_static_memory_plan: bool,
    /// Let the host's worker threads sleep between kernels instead of spinning for
    /// work while a run lasts (spinning is faster when cores are free, slower on a
    /// machine busy with other work).
    #[arg(long = "no-spin")]
    pub no_spin: bool,
    /// Lenient mode, the default of `relax run`: `R.call_packed` of a packed function
    /// the engine knows to be pure (such as `vm.builtin.tensor_to_shape`), inside a
    /// dataflow block, runs as `R.call_pure_packed` with a warning instead of being
    /// rejected by the purity rule (TVM's importers write such calls; `tvm.compile`
    /// runs them without any flag). Kept for compatibility; see `--strict`.
    #[arg(long, conflicts_with = "strict")]
    pub lenient: bool,
    /// Strict mode: reject an `R.call_packed` of a pure packed function inside a
    /// dataflow block, as `relax check` and TVM's well-formedness check do.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub cache: crate::cache::CacheArgs,
}

/// A failure with its exit status.
struct Fail(u8, String);

fn rejected(msg: impl Into<String>) -> Fail {
    Fail(EXIT_REJECTED, msg.into())
}
fn usage(msg: impl Into<String>) -> Fail {
    Fail(EXIT_USAGE, msg.into())
}

/// Run `relax run`. Exit 0 on success, 1 when the program is rejected or the run
/// fails (including wrong inputs), 2 on usage or I/O errors.
pub fn run(opts: &RunOptions) -> u8 {
    match run_inner(opts) {
        Ok(()) => EXIT_OK,
        Err(Fail(code, msg)) => {
            if !msg.is_empty() {
                eprintln!("error: {msg}");
            }
            code
        }
    }
}

fn run_inner(opts: &RunOptions) -> Result<(), Fail> {
    let (source, mut module, onnx_weights) = if relax_onnx::is_onnx_path(&opts.file) {
        let imported = crate::import::import(&opts.file, &opts.dims, 16).map_err(rejected)?;
        let weights = relax_engine::onnx::weights_of(&imported).map_err(|e| rejected(e.to_string()))?;
        let source = crate::common::Source {
            name: opts.file.display().to_string(),
            text: String::new(),
        };
        (source, imported.module, Some(weights))
    } else {
        let source = read_source(&opts.file).map_err(|c| Fail(c, String::new()))?;
        let module = parse_source(&source).map_err(|c| Fail(c, String::new()))?.into_module();
        (source, module, None)
    };
    // `relax run` is lenient unless asked to be strict, as `tvm.compile` is.
    let lenient = opts.lenient || !opts.strict;
    if lenient {
        let (m, warnings) = crate::common::lenient(&module);
        for w in &warnings {
            crate::common::report(&source, w);
        }
        module = m;
    }
    if !opts.inputs.is_empty() && opts.inputs_json.is_some() {
        return Err(usage("give inputs either with --input or with --inputs-json, not both"));
    }
    let mut args = Vec::new();
    if let Some(path) = &opts.inputs_json {
        args = read_json_inputs(path)?;
    }
    for path in &opts.inputs {
        args.push(Value::Tensor(
            crate::npy::read_npy(path).map_err(|(code, m)| Fail(code, m))?,
        ));
    }
    match (&opts.params, &onnx_weights) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "--params is for TVMScript files; an ONNX model brings its weights",
            ))
        }
        (None, Some(w)) => {
            args = relax_engine::bind_args(&module, &opts.entry, &args, w).map_err(|e| rejected(e.to_string()))?
        }
        (Some(path), None) => args = bind_params(&module, &opts.entry, path, args)?,
        (None, None) => check_inputs(&module, &opts.entry, &args)?,
    }
    let (choice, device) = choose_device(opts.device)?;
    let config = EngineConfig {
        device: choice,
        optimize: !opts.no_optimize,
        profile: opts.profile,
        static_memory_plan: !opts.no_static_memory_plan,
        spin_threads: !opts.no_spin,
        lenient,
        dump_ir: opts.dump_ir.clone(),
        compile: opts.cache.compile_config(),
        ..EngineConfig::default()
    };
    let engine = Engine::new(config);
    if choice == DeviceChoice::Gpu {
        // Open the adapter now so that a failure is reported before the run.
        let summary = engine.device_summary();
        if engine.gpu_runtime().is_none() {
            return Err(rejected(format!("--device gpu: {summary}")));
        }
        if opts.stats && opts.device == DeviceArg::Gpu {
            eprintln!("note: {summary}");
        }
    }
    let loaded = engine
        .load(&module)
        .map_err(|e| rejected(format!("cannot load the module: {e}")))?;
    if opts.time_passes {
        crate::common::print_pass_timings(loaded.pass_timings());
    }
    let mut result = None;
    let mut times = Vec::new();
    let queue_before = loaded.gpu_runtime_stats().map(|g| (g.submits, g.dispatches));
    for _ in 0..opts.repeat.max(1) {
        let t = Instant::now();
        let r = loaded
            .run(&opts.entry, &args)
            .map_err(|e| rejected(format!("running `{}` failed: {e}", opts.entry)))?;
        times.push(t.elapsed());
        result = Some(r);
    }
    let result = result.ok_or_else(|| rejected("no run was made"))?;
    let queue_after = loaded.gpu_runtime_stats().map(|g| (g.submits, g.dispatches));

    let mut leaves = Vec::new();
    let structure = flatten(&result, &mut leaves, true)?;
    if opts.json {
        write_json(&leaves, &structure, &device)?;
    }
    if let Some(path) = &opts.output {
        crate::npy::write_output(path, &leaves).map_err(|(code, m)| Fail(code, m))?;
        if !opts.json {
            println!("wrote {}", path.display());
            for (i, t) in leaves.iter().enumerate() {
                println!("{}", crate::summary::summarize(i, t));
            }
        }
    } else if !opts.json {
        let text = result
            .render()
            .map_err(|e| rejected(format!("cannot print the result: {e}")))?;
        println!("{text}");
    }
    if opts.profile {
        print_profile("GPU", &loaded.gpu_profile());
        print_profile("host", &loaded.host_profile());
    }
    if opts.stats {
        let s = loaded.stats();
        let total: Duration = times.iter().sum();
        let min = times.iter().min().copied().unwrap_or_default();
        eprintln!("stats: device {device}");
        eprintln!(
            "stats: runs {}, kernels run {} ({} host, {} gpu), packed calls {}",
            s.runs, s.kernels_run, s.host_kernels_run, s.gpu_kernels_run, s.packed_calls
        );
        eprintln!(
            "stats: kernels compiled {}, kernel cache hits {}",
            s.kernels_compiled, s.kernel_cache_hits
        );
        eprintln!(
            "stats: copies {}, bytes moved {} (uploads {} / {} bytes, readbacks {} / {} bytes, device-to-device {} / {} bytes)",
            s.copies,
            s.bytes_copied,
            s.uploads,
            s.bytes_uploaded,
            s.downloads,
            s.bytes_downloaded,
            s.device_copies,
            s.bytes_device_copied
        );
        eprintln!(
            "stats: allocations {}, bytes allocated {}, device allocations {}",
            s.allocations, s.bytes_allocated, s.device_allocations
        );
        if let (Some((s0, d0)), Some((s1, d1))) = (queue_before, queue_after) {
            eprintln!(
                "stats: GPU queue submissions {}, dispatches {} (the runs, inputs' uploads included)",
                s1 - s0,
                d1 - d0
            );
        }
        // Peak memory: weights, inputs and the intermediates alive at once.
        let gpu_pool = loaded.gpu_runtime_stats().map(|g| g.allocated_bytes).unwrap_or(0);
        eprintln!(
            "stats: peak bytes: host tensors {}, GPU buffer pool {}",
            relax_engine::host_peak_bytes(),
            gpu_pool
        );
        // The steady-state figure: the median of the runs after the first (which
        // compiles the kernels), or the one run there is.
        let mut steady: Vec<Duration> = times.iter().skip(usize::from(times.len() > 1)).copied().collect();
        steady.sort();
        let median = steady.get(steady.len() / 2).copied().unwrap_or_default();
        eprintln!(
            "stats: time total {:.3} ms, per run mean {:.3} ms, min {:.3} ms, median after the first {:.3} ms",
            total.as_secs_f64() * 1e3,
            total.as_secs_f64() * 1e3 / times.len().max(1) as f64,
            min.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

/// The arguments of `entry`: the tensors of the `.npz` or `.safetensors` file at `path`
/// bound by parameter name (TVM's names with dots bind the parameters the printer
/// names with `_`), then `positional` for the parameters left, in order.
fn bind_params(module: &IRModule, entry: &str, path: &Path, positional: Vec<Value>) -> Result<Vec<Value>, Fail> {
    if !path.is_file() {
        return Err(usage(format!("cannot read {}: no such file", path.display())));
    }
    let params = relax_engine::Params::read(path).map_err(|e| rejected(e.to_string()))?;
    relax_engine::bind_args(module, entry, &positional, &params)
        .map_err(|e| rejected(format!("{e} (--params {})", path.display())))
}

/// The per-kernel GPU profile on stderr, most time first.
fn print_profile(device: &str, p: &[relax_jit::KernelProfile]) {
    if p.is_empty() {
        eprintln!("profile: no {device} kernels ran");
        return;
    }
    let total: f64 = p.iter().map(|k| k.time.as_secs_f64()).sum();
    let how = if p.iter().all(|k| k.timestamps) {
        "GPU timestamps"
    } else if device == "GPU" {
        "wall time per submission"
    } else {
        "wall time per call: PrimFuncs and packed functions"
    };
    eprintln!("profile: {device} time per kernel ({how}), total {:.3} ms", total * 1e3);
    eprintln!(
        "profile: {:>10} {:>6} {:>6} {:>9}  kernel",
        "ms", "%", "calls", "GFLOP/s"
    );
    for k in p {
        let ms = k.time.as_secs_f64() * 1e3;
        let share = 100.0 * k.time.as_secs_f64() / total.max(f64::MIN_POSITIVE);
        let gf = k.gflops().map(|g| format!("{g:.2}")).unwrap_or_else(|| "-".into());
        eprintln!("profile: {ms:>10.3} {share:>6.1} {:>6} {gf:>9}  {}", k.calls, k.name);
    }
}

/// Decide where kernels run and say so on stderr: `gpu` needs a wgpu adapter (lavapipe
/// counts), `auto` takes the first one or falls back to the host. Returns the engine's
/// device and the name printed in `--json` output (`"gpu"` or `"cpu"`).
fn choose_device(device: DeviceArg) -> Result<(DeviceChoice, String), Fail> {
    match device {
        DeviceArg::Cpu => Ok((DeviceChoice::Cpu, "cpu".to_string())),
        DeviceArg::Gpu => match relax_gpu_runtime::GpuRuntime::shared_default() {
            Ok(_) => Ok((DeviceChoice::Gpu, "gpu".to_string())),
            Err(e) => Err(rejected(format!("--device gpu: no usable wgpu adapter: {e}"))),
        },
        DeviceArg::Auto => {
            let (choice, why) = DeviceChoice::detect();
            eprintln!("note: {why}");
            let name = if choice == DeviceChoice::Gpu { "gpu" } else { "cpu" };
            Ok((choice, name.to_string()))
        }
    }
}

/// Check the number, dtype and static shape of `args` against the parameters of `entry`.
fn check_inputs(module: &IRModule, entry: &str, args: &[Value]) -> Result<(), Fail> {
    let func = match module.functions.get(&GlobalVar::new(entry)) {
        Some(BaseFunc::Relax(f)) => f,
        Some(BaseFunc::Prim(_)) => {
            return Err(rejected(format!(
                "`{entry}` is a TIR PrimFunc; the entry must be a Relax function"
            )))
        }
        None => return Err(rejected(format!("the module has no function `{entry}` (use --entry)"))),
    };
    if func.params.len() != args.len() {
        let names: Vec<_> = func.params.iter().map(|p| p.name()).collect();
        return Err(rejected(format!(
            "`{entry}` takes {} input(s) ({}), got {}",
            func.params.len(),
            names.join(", "),
            args.len()
        )));
    }
    for (i, (param, arg)) in func.params.iter().zip(args).enumerate() {
        let (Some(StructInfo::Tensor(t)), Some(tensor)) = (param.struct_info(), arg.as_tensor()) else {
            continue;
        };
        let place = format!("input {i} (parameter `{}`)", param.name());
        let message = match arg_mismatch(t, tensor) {
            None => continue,
            Some(ArgMismatch::Dtype) => format!("{place}: expected dtype {}, got {}", t.dtype, tensor.dtype()),
            Some(ArgMismatch::Rank) => format!(
                "{place}: expected {} dimension(s), got shape {:?}",
                t.ndim,
                tensor.shape()
            ),
            Some(ArgMismatch::Dims) => format!(
                "{place}: expected shape ({}), got {:?}",
                dims_text(t).unwrap_or_default().join(", "),
                tensor.shape()
            ),
        };
        return Err(rejected(message));
    }
    Ok(())
}

// ---------------------------------------------------------------- JSON inputs

fn read_json_inputs(path: &Path) -> Result<Vec<Value>, Fail> {
    let text = std::fs::read_to_string(path).map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
    let doc: Json =
        serde_json::from_str(&text).map_err(|e| rejected(format!("{}: invalid JSON: {e}", path.display())))?;
    let Json::Array(items) = doc else {
        return Err(rejected(format!(
            "{}: expected a JSON list of {{\"dtype\", \"shape\", \"data\"}} objects",
            path.display()
        )));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            json_tensor(item)
                .map(Value::Tensor)
                .map_err(|m| rejected(format!("{}: input {i}: {m}", path.display())))
        })
        .collect()
}

/// A tensor from `{"dtype": str, "shape": [int], "data": nested list}`.
fn json_tensor(item: &Json) -> Result<Tensor, String> {
    let dtype_str = item
        .get("dtype")
        .and_then(Json::as_str)
        .ok_or("missing string field \"dtype\"")?;
    let dtype: DataType = dtype_str.parse().map_err(|_| format!("unknown dtype {dtype_str:?}"))?;
    let shape: Vec<i64> = item
        .get("shape")
        .and_then(Json::as_array)
        .ok_or("missing list field \"shape\"")?
        .iter()
        .map(|d| d.as_i64().filter(|&v| v >= 0))
        .collect::<Option<_>>()
        .ok_or("\"shape\" must be a list of non-negative integers")?;
    let data = item.get("data").ok_or("missing field \"data\"")?;
    let mut flat = Vec::new();
    collect_nested(data, &shape, &mut flat, 0)?;
    let mut bytes = Vec::with_capacity(flat.len() * dtype.bytes().max(1));
    for v in flat {
        encode(v, dtype, &mut bytes)?;
    }
    Tensor::from_bytes(dtype, &shape, bytes).map_err(|e| e.to_string())
}

/// Flatten `data` checking that its nesting matches `shape`.
fn collect_nested<'a>(data: &'a Json, shape: &[i64], out: &mut Vec<&'a Json>, depth: usize) -> Result<(), String> {
    match shape.split_first() {
        None => {
            if data.is_array() {
                return Err(format!("\"data\" is nested deeper than the shape (level {depth})"));
            }
            out.push(data);
            Ok(())
        }
        Some((&n, rest)) => {
            let list = data
                .as_array()
                .ok_or_else(|| format!("\"data\" at level {depth} must be a list of {n}"))?;
            if list.len() as i64 != n {
                return Err(format!(
                    "\"data\" at level {depth} has {} element(s), the shape says {n}",
                    list.len()
                ));
            }
            list.iter().try_for_each(|d| collect_nested(d, rest, out, depth + 1))
        }
    }
}

fn encode(v: &Json, dtype: DataType, out: &mut Vec<u8>) -> Result<(), String> {
    let bad = || format!("value {v} does not fit dtype {dtype}");
    if dtype.is_bool() {
        let b = match v {
            Json::Bool(b) => *b,
            Json::Number(n) => n.as_f64().ok_or_else(bad)? != 0.0,
            _ => return Err(bad()),
        };
        out.push(b as u8);
    } else if dtype.is_float() {
        let x = match v {
            Json::Number(n) => n.as_f64().ok_or_else(bad)?,
            Json::String(s) => match s.as_str() {
                "nan" | "NaN" => f64::NAN,
                "inf" | "Infinity" => f64::INFINITY,
                "-inf" | "-Infinity" => f64::NEG_INFINITY,
                _ => return Err(bad()),
            },
            _ => return Err(bad()),
        };
        if let Some(m) = dtype.mini_float().filter(|_| dtype.lanes == 1) {
            // float8 and float4 values: one byte per element, rounded to the nearest.
            out.push(m.encode(x));
            return Ok(());
        }
        match dtype.bits {
            16 if dtype.code == relax_ir::TypeCode::BFloat => {
                out.extend(relax_ir::dtype::bf16_bits_from_f64(x).to_le_bytes())
            }
            16 => out.extend(half::f16::from_f64(x).to_le_bytes()),
            32 => out.extend((x as f32).to_le_bytes()),
            64 => out.extend(x.to_le_bytes()),
            _ => return Err(format!("unsupported dtype {dtype}")),
        }
    } else if dtype.is_int() || dtype.is_uint() {
        let x: i128 = match v {
            Json::Number(n) => n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))
                .ok_or_else(bad)?,
            Json::Bool(b) => *b as i128,
            _ => return Err(bad()),
        };
        // Sub-byte integers (int4, uint4, int2, ...) are held one per byte, sign- or
        // zero-extended.
        let bits = dtype.bits as u32;
        let width = dtype.bytes();
        if !(1..=64).contains(&bits) || dtype.lanes != 1 || !matches!(width, 1 | 2 | 4 | 8) {
            return Err(format!("unsupported dtype {dtype}"));
        }
        let (lo, hi) = if dtype.is_int() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        };
        if x < lo || x > hi {
            return Err(bad());
        }
        out.extend_from_slice(&x.to_le_bytes()[..width]);
    } else {
        return Err(format!("unsupported dtype {dtype}"));
    }
    Ok(())
}

// ---------------------------------------------------------------- outputs

/// Collect the tensors of `v` in order; returns its "structure": `"tensor"` for a
/// top-level tensor, otherwise nested lists of flat output indices.
fn flatten(v: &Value, leaves: &mut Vec<Tensor>, top: bool) -> Result<Json, Fail> {
    let leaf = |t: Tensor, leaves: &mut Vec<Tensor>| {
        leaves.push(t);
        if top {
            json!("tensor")
        } else {
            json!(leaves.len() - 1)
        }
    };
    Ok(match v {
        Value::Tensor(t) => leaf(t.clone(), leaves),
        Value::Tuple(fields) => Json::Array(
            fields
                .iter()
                .map(|f| flatten(f, leaves, false))
                .collect::<Result<_, _>>()?,
        ),
        Value::Prim(p) => {
            let t = prim_tensor(p)?;
            leaf(t, leaves)
        }
        Value::Shape(s) => leaf(
            Tensor::from_array(
                &ArrayD::from_shape_vec(vec![s.len()], s.to_vec()).map_err(|e| rejected(e.to_string()))?,
            ),
            leaves,
        ),
        other => {
            return Err(rejected(format!(
                "the result contains a {} which cannot be output as a tensor",
                other.describe()
            )))
        }
    })
}

fn prim_tensor(p: &relax_engine::PrimValue) -> Result<Tensor, Fail> {
    let json_v = if p.dtype.is_float() {
        json!(p.as_f64())
    } else if p.dtype.is_bool() {
        json!(p.as_int().unwrap_or(0) != 0)
    } else {
        json!(p.as_int().unwrap_or(0))
    };
    let mut bytes = Vec::new();
    encode(&json_v, p.dtype, &mut bytes).map_err(rejected)?;
    Tensor::from_bytes(p.dtype, &[], bytes).map_err(|e| rejected(e.to_string()))
}

/// The most JSON values (nested lists and elements, all outputs together) that `--json`
/// prints: a bigger result is an error that suggests `--output`, found before anything
/// is printed. It bounds the time and output of huge results, and of empty ones whose
/// leading dimensions would still need billions of empty lists.
pub const MAX_JSON_VALUES: u64 = 1 << 27;

/// The number of JSON values (lists and elements) of a tensor of `shape` written as
/// nested lists: `1 + d0 + d0*d1 + ...` lists and `d0*d1*...` elements (saturating).
fn json_values(shape: &[i64]) -> u64 {
    let mut total: u64 = 0;
    let mut prefix: u64 = 1;
    for &d in shape {
        total = total.saturating_add(prefix);
        prefix = prefix.saturating_mul(d.max(0) as u64);
    }
    total.saturating_add(prefix)
}

/// Print `{"outputs": [{"dtype", "shape", "data"}...], "structure", "device"}` on
/// stdout, streaming each tensor's nested lists (nothing is built in memory beyond the
/// tensor's bytes); more than [`MAX_JSON_VALUES`] values in all is an error.
fn write_json(leaves: &[Tensor], structure: &Json, device: &str) -> Result<(), Fail> {
    use std::io::Write;
    let mut total: u64 = 0;
    for (i, t) in leaves.iter().enumerate() {
        total = total.saturating_add(json_values(t.shape()));
        if total > MAX_JSON_VALUES {
            return Err(rejected(format!(
                "the result is too large for --json: with output {i} ({}) it needs more than {MAX_JSON_VALUES} \
                 JSON values (nested lists and elements); write it with --output FILE.npy (or .npz)",
                t.describe()
            )));
        }
    }
    let broken = |e: std::io::Error| usage(format!("cannot write the JSON result: {e}"));
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    w.write_all(b"{\"outputs\":[").map_err(broken)?;
    for (i, t) in leaves.iter().enumerate() {
        if i > 0 {
            w.write_all(b",").map_err(broken)?;
        }
        write!(
            w,
            "{{\"dtype\":{},\"shape\":{},\"data\":",
            json!(t.dtype().to_string()),
            json!(t.shape())
        )
        .map_err(broken)?;
        let bytes = t
            .to_bytes()
            .map_err(|e| rejected(format!("cannot read the result: {e}")))?;
        let element = json_element(t.dtype()).map_err(rejected)?;
        let size = t.dtype().bytes();
        let dims: Vec<usize> = t.shape().iter().map(|&d| d.max(0) as usize).collect();
        let mut at = 0usize;
        write_nested(&mut w, &dims, &bytes, size, &mut at, element).map_err(broken)?;
        w.write_all(b"}").map_err(broken)?;
    }
    write!(w, "],\"structure\":{structure},\"device\":{}}}", json!(device)).map_err(broken)?;
    w.write_all(b"\n").and_then(|_| w.flush()).map_err(broken)
}

/// Write the elements of `bytes` from element `*at` on as nested lists of `dims`.
fn write_nested(
    w: &mut dyn std::io::Write,
    dims: &[usize],
    bytes: &[u8],
    size: usize,
    at: &mut usize,
    element: fn(&[u8]) -> Json,
) -> std::io::Result<()> {
    match dims.split_first() {
        None => {
            let e = bytes.get(*at * size..(*at + 1) * size).unwrap_or(&[]);
            *at += 1;
            serde_json::to_writer(&mut *w, &element(e)).map_err(std::io::Error::other)
        }
        Some((&n, rest)) => {
            w.write_all(b"[")?;
            for i in 0..n {
                if i > 0 {
                    w.write_all(b",")?;
                }
                write_nested(w, rest, bytes, size, at, element)?;
            }
            w.write_all(b"]")
        }
    }
}

/// How one element's little-endian bytes of `dtype` become JSON: booleans, integers
/// (sub-byte ones, held one per byte, included), floats as the shortest decimal that
/// reads back to the same value of their own type (`"nan"`, `"inf"`, `"-inf"` for
/// non-finite ones).
fn json_element(dtype: DataType) -> Result<fn(&[u8]) -> Json, String> {
    use relax_ir::TypeCode;
    fn le<const N: usize>(b: &[u8]) -> [u8; N] {
        let mut a = [0u8; N];
        let n = b.len().min(N);
        a[..n].copy_from_slice(&b[..n]);
        a
    }
    let f: fn(&[u8]) -> Json = match (dtype.code, dtype.bits) {
        _ if dtype.lanes != 1 => return Err(format!("a {dtype} result cannot be printed as JSON")),
        _ if dtype.is_bool() => |b| json!(b.first().is_some_and(|&x| x != 0)),
        (TypeCode::Int, 1..=8) => |b| json!(i8::from_le_bytes(le(b))),
        (TypeCode::Int, 16) => |b| json!(i16::from_le_bytes(le(b))),
        (TypeCode::Int, 32) => |b| json!(i32::from_le_bytes(le(b))),
        (TypeCode::Int, 64) => |b| json!(i64::from_le_bytes(le(b))),
        (TypeCode::UInt, 2..=8) => |b| json!(u8::from_le_bytes(le(b))),
        (TypeCode::UInt, 16) => |b| json!(u16::from_le_bytes(le(b))),
        (TypeCode::UInt, 32) => |b| json!(u32::from_le_bytes(le(b))),
        (TypeCode::UInt, 64) => |b| json!(u64::from_le_bytes(le(b))),
        (TypeCode::Float, 16) => |b| {
            let x = half::f16::from_le_bytes(le(b));
            float_json(x.to_string(), x.to_f64())
        },
        (TypeCode::BFloat, 16) => |b| {
            let x = half::bf16::from_le_bytes(le(b));
            float_json(x.to_string(), x.to_f64())
        },
        (TypeCode::Float, 32) => |b| {
            let x = f32::from_le_bytes(le(b));
            float_json(x.to_string(), x as f64)
        },
        (TypeCode::Float, 64) => |b| {
            let x = f64::from_le_bytes(le(b));
            float_json(x.to_string(), x)
        },
        (TypeCode::Float8E4M3FN, 8) => |b| mini_json(TypeCode::Float8E4M3FN, 8, b),
        (TypeCode::Float8E4M3FNUZ, 8) => |b| mini_json(TypeCode::Float8E4M3FNUZ, 8, b),
        (TypeCode::Float8E5M2, 8) => |b| mini_json(TypeCode::Float8E5M2, 8, b),
        (TypeCode::Float8E5M2FNUZ, 8) => |b| mini_json(TypeCode::Float8E5M2FNUZ, 8, b),
        (TypeCode::Float8E8M0FNU, 8) => |b| mini_json(TypeCode::Float8E8M0FNU, 8, b),
        (TypeCode::Float4E2M1FN, 4) => |b| mini_json(TypeCode::Float4E2M1FN, 4, b),
        _ => return Err(format!("a {dtype} result cannot be printed as JSON")),
    };
    Ok(f)
}

/// A float as JSON: the shortest decimal that reads back to the same value of its
/// own type; `"nan"`, `"inf"`, `"-inf"` for non-finite values.
/// A float8 or float4 element (one byte) as JSON: its exact value.
fn mini_json(code: relax_ir::TypeCode, bits: u8, b: &[u8]) -> Json {
    let dt = DataType { code, bits, lanes: 1 };
    match (dt.mini_float(), b.first()) {
        (Some(m), Some(&byte)) => {
            let x = m.decode(byte);
            float_json(x.to_string(), x)
        }
        _ => Json::Null,
    }
}

fn float_json(shortest: String, x: f64) -> Json {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        shortest
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Json::Null, Json::Number)
    }
}
