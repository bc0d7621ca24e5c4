//! `relax run FILE`: evaluate a Relax function with the engine.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ndarray::ArrayD;
use ndarray_npy::{NpzWriter, WritableElement, WriteNpyExt};
use relax_engine::params::{arg_mismatch, dims_text, ArgMismatch};
use relax_engine::{ArrayValue, DeviceChoice, Engine, EngineConfig, Tensor, Value};
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
    /// The TVMScript file (`-` reads standard input).
    pub file: PathBuf,
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
    /// An `.npz` file whose entries bind to the parameters of the same name (the weights of
    /// a model); the parameters left take `--input`/`--inputs-json` in order. A missing,
    /// extra or mis-shaped entry is an error naming the parameter.
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
    /// Skip the graph optimizations (operator fusion, dead-code elimination).
    #[arg(long = "no-optimize")]
    pub no_optimize: bool,
    /// Print the GPU time of each kernel on stderr, most first, with the PrimFunc
    /// (legalized operator or fused group) it runs and its GFLOP/s where the flop
    /// count is known (GPU timestamps when the adapter has them, else wall time
    /// per submission; every kernel then waits for completion).
    #[arg(long)]
    pub profile: bool,
    /// Do not plan storage reuse at compile time (`static-plan-block-memory`, as TVM's
    /// StaticPlanBlockMemory, on by default): allocate each intermediate tensor when
    /// it is produced and release it after its last use instead.
    #[arg(long = "no-static-memory-plan")]
    pub no_static_memory_plan: bool,
    /// Lenient mode: `R.call_packed` of a packed function the engine knows to be pure
    /// (such as `vm.builtin.tensor_to_shape`), inside a dataflow block, runs as
    /// `R.call_pure_packed` with a warning instead of being rejected by the purity rule
    /// (TVM's importers write such calls; `tvm.compile` runs them).
    #[arg(long)]
    pub lenient: bool,
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
    let source = read_source(&opts.file).map_err(|c| Fail(c, String::new()))?;
    let mut module = parse_source(&source).map_err(|c| Fail(c, String::new()))?.into_module();
    if opts.lenient {
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
        args.push(Value::Tensor(read_npy(path)?));
    }
    match &opts.params {
        Some(path) => args = bind_params(&module, &opts.entry, path, args)?,
        None => check_inputs(&module, &opts.entry, &args)?,
    }
    let (choice, device) = choose_device(opts.device)?;
    let config = EngineConfig {
        device: choice,
        optimize: !opts.no_optimize,
        profile: opts.profile,
        static_memory_plan: !opts.no_static_memory_plan,
        lenient: opts.lenient,
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
        let outputs = leaves.iter().map(tensor_json).collect::<Result<Vec<_>, _>>()?;
        let out = json!({"outputs": outputs, "structure": structure, "device": device});
        println!("{out}");
    }
    if let Some(path) = &opts.output {
        write_output(path, &leaves)?;
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
        print_profile(&loaded.gpu_profile());
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
        eprintln!(
            "stats: time total {:.3} ms, per run mean {:.3} ms, min {:.3} ms",
            total.as_secs_f64() * 1e3,
            total.as_secs_f64() * 1e3 / times.len().max(1) as f64,
            min.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

/// The arguments of `entry`: the entries of the `.npz` file at `path` bound by
/// parameter name, then `positional` for the parameters left, in order.
fn bind_params(module: &IRModule, entry: &str, path: &Path, positional: Vec<Value>) -> Result<Vec<Value>, Fail> {
    if !path.is_file() {
        return Err(usage(format!("cannot read {}: no such file", path.display())));
    }
    let params = relax_engine::Params::read_npz(path).map_err(|e| rejected(e.to_string()))?;
    relax_engine::bind_args(module, entry, &positional, &params)
        .map_err(|e| rejected(format!("{e} (--params {})", path.display())))
}

/// The per-kernel GPU profile on stderr, most time first.
fn print_profile(p: &[relax_jit::KernelProfile]) {
    if p.is_empty() {
        eprintln!("profile: no GPU kernels ran");
        return;
    }
    let total: f64 = p.iter().map(|k| k.time.as_secs_f64()).sum();
    let how = if p.iter().all(|k| k.timestamps) {
        "GPU timestamps"
    } else {
        "wall time per submission"
    };
    eprintln!("profile: GPU time per kernel ({how}), total {:.3} ms", total * 1e3);
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
        match dtype.bits {
            16 if dtype.code == relax_ir::TypeCode::BFloat => out.extend(half::bf16::from_f64(x).to_le_bytes()),
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
        let bits = dtype.bits as u32;
        let (lo, hi) = if dtype.is_int() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        };
        if x < lo || x > hi || !(bits == 8 || bits == 16 || bits == 32 || bits == 64) {
            return Err(bad());
        }
        out.extend_from_slice(&x.to_le_bytes()[..(bits / 8) as usize]);
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

fn tensor_json(t: &Tensor) -> Result<Json, Fail> {
    let a = t
        .to_array_value()
        .map_err(|e| rejected(format!("cannot read the result: {e}")))?;
    fn nest<T>(a: &ArrayD<T>, f: impl Fn(&T) -> Json) -> Json {
        let flat: Vec<Json> = a.iter().map(f).collect();
        nest_flat(&flat, a.shape())
    }
    let data = match &a {
        ArrayValue::Bool(a) => nest(a, |&x| json!(x)),
        ArrayValue::I8(a) => nest(a, |&x| json!(x)),
        ArrayValue::I16(a) => nest(a, |&x| json!(x)),
        ArrayValue::I32(a) => nest(a, |&x| json!(x)),
        ArrayValue::I64(a) => nest(a, |&x| json!(x)),
        ArrayValue::U8(a) => nest(a, |&x| json!(x)),
        ArrayValue::U16(a) => nest(a, |&x| json!(x)),
        ArrayValue::U32(a) => nest(a, |&x| json!(x)),
        ArrayValue::U64(a) => nest(a, |&x| json!(x)),
        ArrayValue::F16(a) => nest(a, |&x| float_json(x.to_string(), x.to_f64())),
        ArrayValue::F32(a) => nest(a, |&x| float_json(x.to_string(), x as f64)),
        ArrayValue::F64(a) => nest(a, |&x| float_json(x.to_string(), x)),
    };
    Ok(json!({"dtype": t.dtype().to_string(), "shape": t.shape(), "data": data}))
}

/// A float as JSON: the shortest decimal that reads back to the same value of its
/// own type; `"nan"`, `"inf"`, `"-inf"` for non-finite values.
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

fn nest_flat(flat: &[Json], shape: &[usize]) -> Json {
    match shape.split_first() {
        None => flat.first().cloned().unwrap_or(Json::Null),
        Some((&n, rest)) => {
            let step: usize = rest.iter().product();
            Json::Array(
                (0..n)
                    .map(|i| nest_flat(&flat[i * step..(i + 1) * step], rest))
                    .collect(),
            )
        }
    }
}

// ---------------------------------------------------------------- .npy / .npz

fn read_npy(path: &Path) -> Result<Tensor, Fail> {
    let bytes = std::fs::read(path).map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
    crate::npy::validate_header(&bytes).map_err(|m| rejected(format!("{}: {m}", path.display())))?;
    relax_engine::params::parse_npy(&bytes).ok_or_else(|| {
        rejected(format!(
            "{}: not a .npy file of a supported dtype (bool, int8..int64, uint8..uint64, \
             float32, float64; C order)",
            path.display()
        ))
    })
}

fn with_array<R>(t: &Tensor, f: &mut dyn FnMut(&dyn NpyWrite) -> Result<R, String>) -> Result<R, Fail> {
    let a = t
        .to_array_value()
        .map_err(|e| rejected(format!("cannot read the result: {e}")))?;
    let r = match &a {
        ArrayValue::Bool(a) => f(a),
        ArrayValue::I8(a) => f(a),
        ArrayValue::I16(a) => f(a),
        ArrayValue::I32(a) => f(a),
        ArrayValue::I64(a) => f(a),
        ArrayValue::U8(a) => f(a),
        ArrayValue::U16(a) => f(a),
        ArrayValue::U32(a) => f(a),
        ArrayValue::U64(a) => f(a),
        ArrayValue::F32(a) => f(a),
        ArrayValue::F64(a) => f(a),
        ArrayValue::F16(_) => Err("float16 results cannot be written as .npy".to_string()),
    };
    r.map_err(rejected)
}

/// An array that can be written as `.npy` or into an `.npz`.
trait NpyWrite {
    fn npy(&self, w: &mut dyn std::io::Write) -> Result<(), String>;
    fn npz(&self, z: &mut NpzWriter<std::fs::File>, name: &str) -> Result<(), String>;
}

impl<T: WritableElement> NpyWrite for ArrayD<T> {
    fn npy(&self, w: &mut dyn std::io::Write) -> Result<(), String> {
        self.write_npy(w).map_err(|e| e.to_string())
    }
    fn npz(&self, z: &mut NpzWriter<std::fs::File>, name: &str) -> Result<(), String> {
        z.add_array(name, self).map_err(|e| e.to_string())
    }
}

fn write_output(path: &Path, leaves: &[Tensor]) -> Result<(), Fail> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let file = std::fs::File::create(path).map_err(|e| usage(format!("cannot create {}: {e}", path.display())))?;
    match ext {
        "npy" => {
            let [t] = leaves else {
                return Err(rejected(format!(
                    "the result has {} tensors; write them to a .npz file",
                    leaves.len()
                )));
            };
            let mut w = std::io::BufWriter::new(file);
            with_array(t, &mut |a| a.npy(&mut w))
        }
        "npz" => {
            let mut z = NpzWriter::new(file);
            for (i, t) in leaves.iter().enumerate() {
                with_array(t, &mut |a| a.npz(&mut z, &format!("arr_{i}")))?;
            }
            z.finish().map(|_| ()).map_err(|e| usage(e.to_string()))
        }
        _ => Err(usage(format!("{}: --output must end in .npy or .npz", path.display()))),
    }
}
