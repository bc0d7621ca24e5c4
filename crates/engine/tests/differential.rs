//! Differential testing of `run`: random well-formed Relax programs are checked, then
//! run by several executors and the results compared:
//!
//! - the reference path (`--no-optimize`: legalized TIR, one kernel per operator) on
//!   the host, with the native code's hoisted bounds checks on and off (bit-equal
//!   results, or the same error);
//! - the default pipeline on the host (fused TIR and the host kernel library);
//! - the default pipeline with fused TIR only (no host library), hoisting on and off;
//! - the GPU (when an adapter exists), for the dtypes it allows.
//!
//! The generator covers every dtype (`bool`, `int8` to `int64`, `uint8` to `uint64`,
//! `float16`, `bfloat16`, `float32`, `float64`), mixed `bool`/other binary operators,
//! `NaN`/`inf`/`-0.0`/denormals and the integer extremes in the data, attributes and
//! constants at `0`, `±1`, `2^31±1`, `2^63-1`, `int64` indices past `2^32`, hand-written
//! TIR whose indices go through narrowing casts, and (a few) tensors past `2^23`
//! elements. Float constants and float attributes (`clip` bounds) of every float dtype,
//! `float16` and `bfloat16` included, take special values (NaN, `±inf`, `-0.0`,
//! denormals, the largest finite value); a scalar constant that legalization inlines
//! into TIR also has a twin binding that reads the same value from an input, and the
//! twins must agree on every path (a constant decoded wrongly shows even where every
//! path shares the mistake). Integers and bools are compared exactly, floats with a
//! relative tolerance of their precision; errors must agree (both paths fail).
//!
//! Budgets: `RELAX_DIFF_PROGRAMS` programs (default 60), `RELAX_DIFF_LARGE` programs
//! over more than 8M elements (default 1), `RELAX_DIFF_SEED` picks the seed. A long run:
//! `RELAX_DIFF_PROGRAMS=5000 cargo test --release -p relax-engine --test differential -- --nocapture`,
//! or a time budget: `RELAX_DIFF_SECS=3600` generates programs for an hour.
//! Every disagreement is collected and printed with its program before the test fails;
//! `RELAX_DIFF_STRICT=1` also reports the GPU differences documented as the driver's
//! relaxed float math.
//! `RELAX_DIFF_ONLY=491,1851` replays only those cases of the seed's sequence.
//! `RELAX_DIFF_DUMP=DIR` also writes every program whose dtypes numpy files hold, its
//! inputs and the host's results for `scripts/compare_tvm.py DIR`, which runs them with
//! Apache TVM and compares. Without a GPU adapter the host paths are still compared.

mod common;
#[path = "differential/gen.rs"]
mod gen;

use std::sync::Arc;

use relax_engine::{ArrayValue, CompiledKernel, DeviceChoice, Engine, EngineConfig, JitError, KernelExecutor, Value};
use relax_ir::{DataType, PrimFunc};
use relax_jit::{HostKernel, HostOptions};

use common::rng::{env_or, Rng};
use gen::*;

/// Disagreements known to be reachable (bugs reported, not hidden): a substring of the
/// disagreement's text and the bug. They are counted and printed; any other fails.
const KNOWN: &[(&str, &str)] = &[];

/// Compiles host kernels with the native code's hoisted bounds checks off.
struct CheckedEveryAccess;

impl KernelExecutor for CheckedEveryAccess {
    fn compile(&self, name: &str, func: &PrimFunc) -> Result<Arc<dyn CompiledKernel>, JitError> {
        let lowered = Arc::new(relax_jit::internals::lower_named(func, name)?);
        let opts = HostOptions {
            hoist_bounds_checks: false,
            ..HostOptions::default()
        };
        Ok(Arc::new(HostKernel::compile_with_options(lowered, opts)?))
    }
}

/// One result tensor: dtype, shape, raw bytes and values as `f64`.
#[derive(Debug)]
struct Out {
    dtype: DataType,
    shape: Vec<i64>,
    bytes: Vec<u8>,
    values: Vec<f64>,
}

fn outputs(v: &Value, out: &mut Vec<Out>) {
    match v {
        Value::Tuple(fs) => fs.iter().for_each(|f| outputs(f, out)),
        Value::Tensor(t) => out.push(Out {
            dtype: t.dtype(),
            shape: t.shape().to_vec(),
            bytes: t.to_bytes().expect("readable"),
            values: t.to_f64_values().expect("numbers"),
        }),
        other => panic!("unexpected result: {other:?}"),
    }
}

/// Relative tolerance of a float dtype's results.
fn tolerance(dt: DataType) -> f64 {
    match (dt.bits, dt.code == relax_ir::TypeCode::BFloat) {
        (16, true) => 4e-2,
        (16, false) => 1e-2,
        (64, _) => 1e-6,
        _ => 1e-3,
    }
}

/// Whether `x` and `y` (of dtype `dt`) agree: exactly for integers, within the
/// dtype's tolerance (at least `floor`) for floats (NaN equals NaN, infinities exactly).
fn agree(x: f64, y: f64, dt: DataType, floor: f64) -> bool {
    if !dt.is_float() {
        return x == y;
    }
    if x.is_nan() || y.is_nan() {
        return x.is_nan() && y.is_nan();
    }
    if x.is_infinite() || y.is_infinite() {
        return x == y;
    }
    (x - y).abs() <= tolerance(dt).max(floor) * x.abs().max(y.abs()).max(1.0)
}

/// How two executors' results must match.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Match {
    /// Bit-equal, or the same error text.
    Exact,
    /// Within tolerance, or both fail.
    Close,
}

/// The first difference between `a` and `b`, if any; floats within their dtype's
/// tolerance, at least `floor` (the tolerance of the least precise float the program
/// computes with: an f32 result of f16 values differs as they do, e.g. a square of a
/// float16 mean whose sum the GPU adds as a tree).
fn compare(a: &Result<Vec<Out>, String>, b: &Result<Vec<Out>, String>, how: Match, floor: f64) -> Option<String> {
    match (a, b) {
        (Err(x), Err(y)) => (how == Match::Exact && x != y).then(|| format!("errors differ: {x:?} / {y:?}")),
        (Ok(_), Err(y)) => Some(format!("fails only here: {y}")),
        (Err(x), Ok(_)) => Some(format!("fails only on the reference: {x}")),
        (Ok(xs), Ok(ys)) => {
            if xs.len() != ys.len() {
                return Some(format!("{} results / {}", xs.len(), ys.len()));
            }
            for (k, (x, y)) in xs.iter().zip(ys).enumerate() {
                if x.dtype != y.dtype || x.shape != y.shape {
                    return Some(format!(
                        "result {k}: {} {:?} / {} {:?}",
                        x.dtype, x.shape, y.dtype, y.shape
                    ));
                }
                if how == Match::Exact {
                    if x.bytes != y.bytes {
                        let i = x
                            .values
                            .iter()
                            .zip(&y.values)
                            .position(|(p, q)| p.to_bits() != q.to_bits());
                        return Some(format!("result {k}: bytes differ (element {i:?})"));
                    }
                    continue;
                }
                let wide = x.dtype.bits == 64 && x.dtype.is_integer();
                let elem = x.dtype.bytes();
                for (i, (p, q)) in x.values.iter().zip(&y.values).enumerate() {
                    // 64-bit integers compare on their bytes (f64 rounds them).
                    let same = if wide {
                        x.bytes[i * elem..(i + 1) * elem] == y.bytes[i * elem..(i + 1) * elem]
                    } else {
                        agree(*p, *q, x.dtype, floor)
                    };
                    if !same {
                        return Some(format!("result {k}[{i}] ({}): {p} / {q}", x.dtype));
                    }
                }
            }
            None
        }
    }
}

/// The first pair of twin results (see [`Program::twins`]) that disagree, if any; with
/// `finite_only`, only where both values are finite (the GPU driver's relaxed float
/// math may fold one twin's NaN or infinity and not the other's).
fn twin_difference(outs: &Result<Vec<Out>, String>, twins: &[(usize, usize)], finite_only: bool) -> Option<String> {
    let outs = outs.as_ref().ok()?;
    for &(x, y) in twins {
        let (Some(p), Some(q)) = (outs.get(x), outs.get(y)) else {
            continue;
        };
        for (i, (u, v)) in p.values.iter().zip(&q.values).enumerate() {
            if !agree(*u, *v, p.dtype, 0.0) && !(finite_only && !(u.is_finite() && v.is_finite())) {
                return Some(format!(
                    "results {x} and {y} (a constant written in the program / the same value as an input) differ at [{i}] ({}): {u} / {v}",
                    p.dtype
                ));
            }
        }
    }
    None
}

/// Run `text` on `engine` with `inputs`: the results, or the error's text.
fn run(engine: &Engine, module: &relax_ir::IRModule, inputs: &[Value]) -> Result<Vec<Out>, String> {
    let v = engine.run(module, "main", inputs).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    outputs(&v, &mut out);
    Ok(out)
}

/// Whether a GPU-only difference is one docs/semantics.md documents: the driver's
/// relaxed float math ("Relaxed float semantics of the GPU driver": a NaN or infinity
/// flowing into algebraic identities may be folded) shows as a non-finite value on
/// one side only.
fn relaxed_float(reference: &[Out], gpu: &[Out]) -> bool {
    reference.iter().zip(gpu).all(|(r, g)| {
        r.dtype != g.dtype
            || r.shape != g.shape
            || r.values
                .iter()
                .zip(&g.values)
                .all(|(p, q)| agree(*p, *q, r.dtype, 0.0) || !p.is_finite() || !q.is_finite() || !r.dtype.is_float())
    }) && reference.iter().zip(gpu).any(|(r, g)| {
        r.values
            .iter()
            .zip(&g.values)
            .any(|(p, q)| !p.is_finite() || !q.is_finite())
    })
}

/// Write case `case`: `caseN.py`, its inputs `caseN_inI.npy` and the reference's
/// results `caseN_outK.npy` (float64, with a `caseN_outK.int` marker for integer
/// results). Programs with dtypes numpy files here do not hold are skipped.
fn dump_case(dir: &std::path::Path, case: usize, p: &Program, host: &[Out]) {
    use ndarray_npy::WriteNpyExt;
    let file = |name: String| std::fs::File::create(dir.join(name)).expect("a dump file");
    let mut inputs = Vec::new();
    for v in &p.inputs {
        match v.as_tensor().expect("inputs are tensors").to_array_value() {
            Ok(a @ (ArrayValue::F32(_) | ArrayValue::F64(_) | ArrayValue::I32(_) | ArrayValue::I64(_))) => {
                inputs.push(a)
            }
            _ => return,
        }
    }
    std::fs::write(dir.join(format!("case{case}.py")), &p.text).expect("program written");
    for (i, a) in inputs.into_iter().enumerate() {
        let w = file(format!("case{case}_in{i}.npy"));
        match a {
            ArrayValue::F32(a) => a.write_npy(w),
            ArrayValue::F64(a) => a.write_npy(w),
            ArrayValue::I32(a) => a.write_npy(w),
            ArrayValue::I64(a) => a.write_npy(w),
            _ => unreachable!("filtered above"),
        }
        .expect("input written");
    }
    for (k, o) in host.iter().enumerate() {
        let shape: Vec<usize> = o.shape.iter().map(|&d| d as usize).collect();
        let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), o.values.clone()).expect("shape");
        a.write_npy(file(format!("case{case}_out{k}.npy")))
            .expect("result written");
        if !o.dtype.is_float() {
            std::fs::write(dir.join(format!("case{case}_out{k}.int")), "").expect("marker written");
        }
    }
}

fn cpu_engine(optimize: bool, host_library: bool) -> Engine {
    Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        optimize,
        host_library,
        ..EngineConfig::default()
    })
}

#[test]
fn random_programs_agree_on_every_path() {
    // `RELAX_DIFF_SECS=S` generates programs until S seconds have passed instead
    // (long runs); the large programs still come last.
    let secs: u64 = env_or("RELAX_DIFF_SECS", 0);
    let count: usize = if secs > 0 {
        usize::MAX / 2
    } else {
        env_or("RELAX_DIFF_PROGRAMS", 60)
    };
    let started = std::time::Instant::now();
    let large: usize = env_or("RELAX_DIFF_LARGE", 1);
    let seed: u64 = env_or("RELAX_DIFF_SEED", 0x5eed_1234);
    // `RELAX_DIFF_STRICT=1` reports the documented relaxed-float differences too.
    let strict = env_or("RELAX_DIFF_STRICT", 0u8) == 1;
    // `RELAX_DIFF_ONLY=491,1851` runs only those cases of the seed's sequence (the
    // others are generated, to reach them, but not run): replaying a long run's finds.
    let only: Vec<usize> = std::env::var("RELAX_DIFF_ONLY")
        .ok()
        .map(|v| v.split(',').filter_map(|c| c.trim().parse().ok()).collect())
        .unwrap_or_default();
    let reference = cpu_engine(false, false);
    let paths: Vec<(&str, Engine, Match)> = vec![
        (
            "reference, hoisting off",
            cpu_engine(false, false).with_kernel_executor(Arc::new(CheckedEveryAccess)),
            Match::Exact,
        ),
        ("host library", cpu_engine(true, true), Match::Close),
        ("fused TIR", cpu_engine(true, false), Match::Close),
        (
            "fused TIR, hoisting off",
            cpu_engine(true, false).with_kernel_executor(Arc::new(CheckedEveryAccess)),
            Match::Close,
        ),
    ];
    let gpu = common::text::gpu_engine("host paths only");
    // `RELAX_DIFF_DUMP=DIR` writes every program with its inputs and host results,
    // for `scripts/compare_tvm.py DIR` (never in CI).
    let dump = std::env::var("RELAX_DIFF_DUMP").ok().map(std::path::PathBuf::from);
    if let Some(dir) = &dump {
        std::fs::create_dir_all(dir).expect("the dump directory can be created");
    }
    let mut rng = Rng(seed | 1);
    let (mut compared, mut values, mut refused, mut relaxed) = (0usize, 0usize, 0usize, 0usize);
    // Errors of the reference path (every path must fail too), by kind.
    let mut failed_runs = std::collections::BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    let mut generated = 0usize;
    let mut large_from = count;
    for case in 0..count + large {
        if secs > 0 && case < large_from && started.elapsed().as_secs() >= secs {
            large_from = case;
        }
        if case >= large_from + large {
            break;
        }
        let p = if case >= large_from {
            generate_large(&mut rng)
        } else if rng.below(8) == 0 {
            generate_tir(&mut rng)
        } else if rng.below(8) == 0 {
            generate_nn(&mut rng)
        } else {
            generate(&mut rng)
        };
        if !only.is_empty() && !only.contains(&case) {
            continue;
        }
        generated += 1;
        let module = match relax_ir::text::parse(&p.text) {
            Ok(m) => m.into_module(),
            Err(d) => panic!("case {case}: generated text does not parse: {}\n{}", d.message, p.text),
        };
        let checked = relax_checker::check::check_module(&module);
        let errors: Vec<_> = checked.errors().map(|d| d.message.clone()).collect();
        assert!(
            errors.is_empty(),
            "case {case}: generated program rejected: {errors:?}\n{}",
            p.text
        );
        let want = run(&reference, &module, &p.inputs);
        if let Err(e) = &want {
            let kind: String = e.chars().filter(|c| !c.is_ascii_digit()).take(90).collect();
            *failed_runs.entry(kind).or_insert(0usize) += 1;
        }
        if let (Some(dir), Ok(w)) = (&dump, &want) {
            dump_case(dir, case, &p, w);
        }
        let mut report = |what: &str, why: String| {
            let inputs: Vec<String> = p
                .inputs
                .iter()
                .map(|v| match v.as_tensor().map(|t| t.to_f64_values()) {
                    Some(Ok(x)) if x.len() <= 64 => format!("{x:?}"),
                    _ => "(large)".to_string(),
                })
                .collect();
            failures.push(format!(
                "case {case} ({what}): {why}\n{}inputs: {}\n",
                p.text,
                inputs.join(" ")
            ));
        };
        if let Some(why) = twin_difference(&want, &p.twins, false) {
            report("reference", why);
        }
        for (what, engine, how) in &paths {
            let got = run(engine, &module, &p.inputs);
            if let Some(why) = compare(&want, &got, *how, p.float_floor) {
                report(what, why);
            } else if let Some(why) = twin_difference(&got, &p.twins, false) {
                report(what, why);
            }
        }
        if let Some(gpu) = &gpu {
            let got = run(gpu, &module, &p.inputs);
            if let Some(why) = twin_difference(&got, &p.twins, !strict) {
                report("GPU", why);
            }
            match (&want, &got) {
                // docs/semantics.md: float64 math is refused on the GPU by name.
                (_, Err(e)) if p.gpu_may_refuse && e.contains("not supported") && e.contains("on the GPU") => {
                    refused += 1
                }
                (Ok(w), Ok(g))
                    if !strict
                        && compare(&want, &got, Match::Close, p.float_floor).is_some()
                        && relaxed_float(w, g) =>
                {
                    relaxed += 1
                }
                _ => {
                    if let Some(why) = compare(&want, &got, Match::Close, p.float_floor) {
                        report("GPU", why);
                    } else if let Ok(w) = &want {
                        values += w.iter().map(|o| o.values.len()).sum::<usize>();
                        compared += 1;
                    }
                }
            }
        }
    }
    eprintln!(
        "differential: {generated} programs ({large} large) in {:.0} s checked and run on {} host paths ({} fail on every path), {compared} compared with the GPU ({values} values), {refused} refused by the GPU for float64, {relaxed} GPU differences from relaxed float math on NaN/inf (documented), {} disagreements",
        started.elapsed().as_secs_f64(),
        paths.len() + 1,
        failed_runs.values().sum::<usize>(),
        failures.len()
    );
    for (kind, n) in &failed_runs {
        eprintln!("  {n} x {kind}");
    }
    let (known, unknown): (Vec<&String>, Vec<&String>) = failures.iter().partition(|f| {
        KNOWN
            .iter()
            .any(|(k, _)| f.lines().next().is_some_and(|l| l.contains(k)))
    });
    for (k, bug) in KNOWN {
        let n = known.iter().filter(|f| f.contains(k)).count();
        if n > 0 {
            eprintln!("known ({n} programs): {bug}");
        }
    }
    for f in &unknown {
        eprintln!("{f}");
    }
    assert!(unknown.is_empty(), "{} disagreements (printed above)", unknown.len());
}
