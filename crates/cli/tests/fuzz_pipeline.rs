//! A time-bounded mutation fuzzer over the corpus (a small driver of our own, stable
//! Rust) with three targets on every mutated text:
//!
//! - `roundtrip`: parse, print, parse again, and compare the two modules structurally;
//!   printing the re-parsed program must give the same text (a fixed point), and a
//!   program whose entry function takes tensors is run on the host from the original
//!   and from the printed text on the same inputs, which must give the same results
//!   (printing must keep the meaning, not only the structure);
//! - `check`: parse then check;
//! - `wgsl`: normalize, legalize and emit WGSL (validated by naga) for every PrimFunc.
//!
//! A panic anywhere fails the test with the input. Round-trip mismatches and WGSL
//! errors of mutated texts are counted and reported, not failures (they are
//! diagnostics); the unmutated seeds must round-trip to a fixed point and run the
//! same from their printed text (`print_keeps_the_meaning_of_the_seeds`). The budget is
//! `RELAX_FUZZ_SECS` seconds per target (default 8); `RELAX_FUZZ_SEED` picks the seed.
//! A long run: `RELAX_FUZZ_SECS=600 cargo test --release -p relax-cli --test fuzz_pipeline -- --nocapture`.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use std::sync::atomic::Ordering;

use relax_checker::normalize::normalize_module;
use relax_engine::{DeviceChoice, Engine, EngineConfig, Tensor, Value};
use relax_ir::dtype::TypeCode;
use relax_ir::structural::StructuralEqual;
use relax_ir::text::{parse, print_program, Program};
use relax_ir::{BaseFunc, ExprKind, IRModule, StructInfo};
use relax_jit::emit_program;
use relax_jit::{DeviceCaps, ScheduleOptions};
use relax_transform::check_and_realize;
use relax_transform::legalize::legalize_module;

#[path = "../../engine/tests/common/rng.rs"]
mod rng;
use rng::{env_or, Rng};

/// Fragments inserted by the mutator: numbers at the edges, operators, brackets.
const FRAGMENTS: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "-0.0",
    "1.5",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "1e400",
    "\"n\"",
    "n",
    "x",
    "(",
    ")",
    "[",
    "]",
    ",",
    " + ",
    " * ",
    " // ",
    " % ",
    "-",
    "R.add(",
    "R.reshape(",
    "R.shape([",
    "T.int64(",
    "\"float64\"",
    "\"bfloat16\"",
    "\"int8\"",
    "\"bool\"",
    "axis=-7",
    "ndim=3",
    "keepdims=True",
    "\n",
    "\n    ",
    "'",
    "\"",
    "\\",
    "None",
];

/// Programs whose printing once changed their meaning or did not re-parse: a PrimFunc's
/// own `n` next to a Relax function's `n` (printed, the PrimFunc's was taken for the
/// module's TypeVar and its loop ran zero times), TVM's `TestVMCompileE2E2`, and a
/// Relax parameter named like its shape variable.
const PRINT_SEEDS: &[&str] = &[
    r#"
@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def add_one(x: T.handle, y: T.handle):
        n = T.int32()
        X = T.match_buffer(x, (n,), "float32")
        Y = T.match_buffer(y, (n,), "float32")
        for i in range(n):
            with T.sblock("b"):
                vi = T.axis.spatial(n, i)
                Y[vi] = X[vi] + T.float32(1)

    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        cls = Module
        y = R.call_tir(cls.add_one, (x,), R.Tensor((n,), "float32"))
        return y
"#,
    r#"
@I.ir_module
class TestVMCompileE2E2:
    @T.prim_func(s_tir=True)
    def tir_matmul(x: T.handle, y: T.handle, z: T.handle) -> None:
        m = T.int32()
        n = T.int32()
        k = T.int32()
        A = T.match_buffer(x, (m, n))
        B = T.match_buffer(y, (n, k))
        C = T.match_buffer(z, (m, k))

        for i, j, k in T.grid(m, k, n):
            with T.sblock("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @R.function
    def func(
        x: R.Tensor(("m", "n"), "float32"), w: R.Tensor(("n", "k"), "float32")
    ) -> R.Tensor:
        m, k = T.int64(), T.int64()
        cls = TestVMCompileE2E2
        gv0 = R.call_tir(cls.tir_matmul, (x, w), R.Tensor((m, k), dtype="float32"))
        return gv0
"#,
    r#"
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("a",), "float32"), y: R.Tensor(("a",), "float32")) -> R.Tensor(("a",), "float32"):
        gv = R.add(a, y)
        lv = R.match_cast(R.multiply(gv, y), R.Tensor(ndim=1, dtype="float32"))
        return lv
"#,
];

/// Seeds: the repository's examples and test fixtures, plus corpus inputs when present.
fn seeds() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for dir in ["examples/relax", "crates/cli/tests/data"] {
        if let Ok(rd) = std::fs::read_dir(root.join(dir)) {
            for e in rd.flatten() {
                if e.path().extension().is_some_and(|x| x == "py") {
                    if let Ok(s) = std::fs::read_to_string(e.path()) {
                        out.push(s);
                    }
                }
            }
        }
    }
    out.extend(PRINT_SEEDS.iter().map(|s| s.to_string()));
    // The two-VDevice program the end-to-end tests run.
    if let Ok(s) = std::fs::read_to_string(root.join("tests/e2e/vdevice_two.py")) {
        out.push(s);
    }
    let files = [
        "legalize.jsonl",
        "op_struct_info.jsonl",
        "well_formed.jsonl",
        "parser.jsonl",
    ];
    if let Some(inputs) = common::corpus_inputs(&files, 7, 150) {
        out.extend(inputs);
    } else {
        eprintln!("fuzz_pipeline: corpus not found (set RELAX_CORPUS_DIR); fuzzing the examples only");
    }
    out
}

fn boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// One to three random edits of `s`.
fn mutate(rng: &mut Rng, s: &str) -> String {
    let mut s = s.to_string();
    for _ in 0..1 + rng.below(3) {
        let a = boundary(&s, rng.below(s.len() + 1));
        let b = boundary(&s, a + rng.below(24));
        match rng.below(5) {
            0 => s.replace_range(a..b.max(a), ""),
            1 => {
                let piece = s[a..b.max(a)].to_string();
                s.insert_str(b.max(a), &piece);
            }
            2 | 3 => s.insert_str(a, FRAGMENTS[rng.below(FRAGMENTS.len())]),
            _ => {
                // Replace a number-like token with an edge value.
                let f = FRAGMENTS[rng.below(10)];
                s.replace_range(a..b.max(a), f);
            }
        }
    }
    s
}

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "<non-string panic>".into())
}

#[derive(Default, Debug)]
struct Counts {
    execs: usize,
    parsed: usize,
    interesting: usize,
}

/// Run `target` on the mutated seeds that parse (the text and its program) for the
/// budget; panics fail with the input. Some inputs must have run and parsed.
fn fuzz(name: &str, salt: u64, target: &(dyn Fn(&str, Program, &mut Counts) + Sync)) {
    let secs: u64 = env_or("RELAX_FUZZ_SECS", 8);
    let seed: u64 = env_or("RELAX_FUZZ_SEED", 0x00f0_2217);
    let seeds = seeds();
    assert!(!seeds.is_empty(), "no seeds");
    // The loop runs on a thread of its own: a panic ends it and comes back from
    // `join`, and the input being run is the one last recorded in `current`.
    let current = std::sync::Mutex::new(String::new());
    let run = || {
        let mut rng = Rng((seed ^ salt) | 1);
        let mut counts = Counts::default();
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            let base = &seeds[rng.below(seeds.len())];
            let text = if counts.execs % 8 == 0 {
                base.clone()
            } else {
                mutate(&mut rng, base)
            };
            if let Ok(mut c) = current.lock() {
                c.clone_from(&text);
            }
            if let Ok(p) = parse(&text) {
                counts.parsed += 1;
                target(&text, p, &mut counts);
            }
            counts.execs += 1;
        }
        counts
    };
    let counts = match std::thread::scope(|s| s.spawn(run).join()) {
        Ok(counts) => counts,
        Err(e) => {
            let text = current.lock().map(|t| t.clone()).unwrap_or_default();
            panic!(
                "fuzz target `{name}` panicked: {}\n--- input ---\n{text}\n---",
                panic_message(e)
            );
        }
    };
    eprintln!("fuzz {name}: {counts:?}");
    assert!(counts.execs > 0 && counts.parsed > 0);
}

/// With `RELAX_FUZZ_DUMP=DIR`, write a round-trip mismatch (the input, the printed
/// text and why they differ) into DIR, for finding its class.
fn dump_mismatch(k: usize, text: &str, printed: &str, why: &str) {
    if let Some(dir) = std::env::var_os("RELAX_FUZZ_DUMP").map(PathBuf::from) {
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(
            dir.join(format!("rt{k}.txt")),
            format!("{why}\n=== input ===\n{text}\n=== printed ===\n{printed}"),
        );
    }
}

/// What printing did to one program.
#[derive(Debug, PartialEq)]
enum PrintOutcome {
    /// The printed text does not parse.
    NoReparse(String),
    /// It parses to a structurally different module.
    Structure(String),
    /// Printing the re-parsed program gives other text.
    NotFixedPoint(String),
    /// The entry function gives other results from the printed text.
    Meaning(String),
    /// Faithful; `ran` says whether the program was run.
    Same { ran: bool },
}

/// Parse-print checks of one program (see the module documentation).
fn check_print(p: Program) -> (String, PrintOutcome) {
    let printed = print_program(&p);
    let again = match parse(&printed) {
        Ok(a) => a,
        Err(d) => return (printed, PrintOutcome::NoReparse(d.message)),
    };
    let reprinted = print_program(&again);
    let (m1, m2) = (p.into_module(), again.into_module());
    if let Err(e) = StructuralEqual::new().map_free_vars(true).module(&m1, &m2) {
        return (printed, PrintOutcome::Structure(format!("{e:?}")));
    }
    if reprinted != printed {
        let line = printed
            .lines()
            .zip(reprinted.lines())
            .find(|(a, b)| a != b)
            .map(|(a, b)| format!("first difference:\n  {a}\n  {b}"))
            .unwrap_or_else(|| "different lengths".into());
        return (printed, PrintOutcome::NotFixedPoint(line));
    }
    let outcome = match run_both(&m1, &m2) {
        None => PrintOutcome::Same { ran: false },
        Some(Ok(())) => PrintOutcome::Same { ran: true },
        Some(Err(e)) => PrintOutcome::Meaning(e),
    };
    (printed, outcome)
}

/// The Relax function to run: `main`, else the first public one, if every parameter
/// is a tensor of known rank and dtype.
fn entry(m: &IRModule) -> Option<(String, &relax_ir::Function)> {
    let public = |f: &relax_ir::Function| !f.private;
    let f = match m.get("main") {
        Some(BaseFunc::Relax(f)) if public(f) => ("main".to_string(), f),
        _ => m.functions.iter().find_map(|(gv, f)| match f {
            BaseFunc::Relax(f) if public(f) => Some((gv.name().to_string(), f)),
            _ => None,
        })?,
    };
    f.1.params
        .iter()
        .all(|p| matches!(p.struct_info(), Some(StructInfo::Tensor(_))))
        .then_some(f)
}

/// Deterministic inputs for `f`'s parameters (every symbolic dimension is 3), or
/// `None` when a parameter's shape or dtype is not one this check makes.
fn inputs(f: &relax_ir::Function) -> Option<Vec<Value>> {
    let mut args = Vec::new();
    let mut total = 0i64;
    for (k, p) in f.params.iter().enumerate() {
        let Some(StructInfo::Tensor(t)) = p.struct_info() else {
            return None;
        };
        let dims = match t.shape.as_ref()?.kind() {
            ExprKind::ShapeExpr(d) => d.clone(),
            _ => return None,
        };
        let shape: Vec<i64> = dims
            .iter()
            .map(|d| match (d.as_int(), d.as_var()) {
                (Some(i), _) if (0..=64).contains(&i) => Some(i),
                (_, Some(_)) => Some(3),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let n: i64 = shape.iter().product();
        total += n;
        if total > 1 << 16 {
            return None;
        }
        let dt = t.dtype;
        if dt.lanes != 1 {
            return None;
        }
        let mut bytes = Vec::new();
        for i in 0..n {
            // Small values of both signs; distinct per parameter.
            let v = ((i * 7 + 3 * k as i64 + 1) % 11) - 5;
            match (dt.code, dt.bits) {
                (TypeCode::Float, 32) => bytes.extend((v as f32 / 4.0).to_le_bytes()),
                (TypeCode::Float, 64) => bytes.extend((v as f64 / 4.0).to_le_bytes()),
                (TypeCode::Int, 32) => bytes.extend((v as i32).to_le_bytes()),
                (TypeCode::Int, 64) => bytes.extend(v.to_le_bytes()),
                (TypeCode::UInt, 1) => bytes.push((v > 0) as u8),
                _ => return None,
            }
        }
        args.push(Value::Tensor(Tensor::from_bytes(dt, &shape, bytes).ok()?));
    }
    Some(args)
}

/// A result's tensors as (dtype, shape, values), in order; other values as text.
fn flatten(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Tuple(fs) => fs.iter().for_each(|f| flatten(f, out)),
        Value::Tensor(t) => out.push(format!(
            "{} {:?} {:?}",
            t.dtype(),
            t.shape(),
            t.to_array_value().map(|a| format!("{a:?}")).unwrap_or_default()
        )),
        other => out.push(format!("{other:?}")),
    }
}

/// Run the entry function of `original` and of `printed` on the host with the same
/// inputs: `None` when there is nothing to run (no entry, inputs it cannot make, or
/// the original fails), `Some(Err)` when the results differ.
fn run_both(original: &IRModule, printed: &IRModule) -> Option<Result<(), String>> {
    let (name, f) = entry(original)?;
    let args = inputs(f)?;
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        ..EngineConfig::default()
    });
    let want = engine.run(original, &name, &args).ok()?;
    let got = match engine.run(printed, &name, &args) {
        Ok(v) => v,
        Err(e) => return Some(Err(format!("the printed program fails: {e}"))),
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    flatten(&want, &mut a);
    flatten(&got, &mut b);
    Some(if a == b {
        Ok(())
    } else {
        Err(format!("`{name}` gives\n  {a:?}\nbut from the printed text\n  {b:?}"))
    })
}

#[test]
fn fuzz_parse_print_parse_roundtrip() {
    let ran = std::sync::atomic::AtomicUsize::new(0);
    let not_fixed = std::sync::atomic::AtomicUsize::new(0);
    let meaning = std::sync::atomic::AtomicUsize::new(0);
    fuzz("roundtrip", 1, &|text, p, c| {
        let (printed, outcome) = check_print(p);
        let why = match outcome {
            PrintOutcome::Same { ran: r } => {
                if r {
                    ran.fetch_add(1, Ordering::Relaxed);
                }
                return;
            }
            PrintOutcome::NoReparse(e) | PrintOutcome::Structure(e) => e,
            PrintOutcome::NotFixedPoint(e) => {
                not_fixed.fetch_add(1, Ordering::Relaxed);
                format!("not a fixed point: {e}")
            }
            PrintOutcome::Meaning(e) => {
                meaning.fetch_add(1, Ordering::Relaxed);
                format!("meaning changed: {e}")
            }
        };
        c.interesting += 1;
        dump_mismatch(c.interesting, text, &printed, &why);
    });
    eprintln!(
        "fuzz roundtrip: {} programs run from both texts, {} printed texts not a fixed point, {} changed meaning",
        ran.into_inner(),
        not_fixed.into_inner(),
        meaning.into_inner()
    );
}

/// Every seed program (the examples, the test fixtures and the corpus sample) prints to
/// a fixed point, and those with a runnable entry function compute the same from the
/// printed text. Bounded by `RELAX_FUZZ_SECS` like the fuzz targets.
#[test]
fn print_keeps_the_meaning_of_the_seeds() {
    let secs: u64 = env_or("RELAX_FUZZ_SECS", 8);
    let end = Instant::now() + Duration::from_secs(secs);
    let (mut checked, mut ran) = (0, 0);
    let mut bad = Vec::new();
    for text in seeds() {
        if Instant::now() > end {
            break;
        }
        let Ok(p) = parse(&text) else { continue };
        checked += 1;
        match check_print(p) {
            (_, PrintOutcome::Same { ran: r }) => ran += r as usize,
            // Structural mismatches of seeds are the round-trip tests' business (the
            // corpus has texts TVM itself does not print faithfully).
            (_, PrintOutcome::Structure(_)) => {}
            (printed, other) => bad.push(format!("{other:?}\n--- input ---\n{text}\n--- printed ---\n{printed}")),
        }
    }
    eprintln!("print_keeps_the_meaning_of_the_seeds: {checked} programs printed, {ran} run from both texts");
    assert!(checked > 0);
    assert!(bad.is_empty(), "{} seed programs:\n{}", bad.len(), bad.join("\n\n"));
}

/// A buffer shape over a variable of a dtype a signature cannot spell (`int16`,
/// `int6`: a quoted name is `int32`, a bare one `int64`) printed as a quoted name and a
/// conflicting `s = T.int16()`, which does not parse (found by `roundtrip` from a
/// seed whose `T.int64()` was mutated into `T.int6()`). Such a buffer is matched in
/// the body instead.
#[test]
fn shape_variables_of_other_dtypes_print_to_text_that_reparses() {
    let src = r#"
@I.ir_module
class Module:
    @T.prim_func
    def f(var_x: T.handle, var_y: T.handle, var_z: T.handle):
        s = T.int16()
        t = T.int6()
        x = T.match_buffer(var_x, (s,))
        y = T.match_buffer(var_y, (s, t))
        z = T.match_buffer(var_z, ("m", s))
        for i in range(s):
            x[i] = y[i, 0] + z[0, i] + T.float32(1)
"#;
    let p = parse(src).expect("the program parses");
    let (printed, outcome) = check_print(p);
    assert_eq!(outcome, PrintOutcome::Same { ran: false }, "printed:\n{printed}");
    assert!(printed.contains("T.match_buffer("), "{printed}");
}

#[test]
fn fuzz_parse_check() {
    fuzz("check", 2, &|_, p, c| {
        let r = check_and_realize(&p.into_module());
        if r.is_valid() {
            c.interesting += 1;
        }
    });
}

#[test]
fn fuzz_legalize_wgsl() {
    fuzz("wgsl", 3, &|_, p, c| {
        let n = normalize_module(&p.into_module());
        if n.diagnostics.iter().any(|d| d.is_error()) {
            return;
        }
        let Ok(m) = legalize_module(&n.module) else { return };
        for (_, f) in m.functions.iter() {
            if let BaseFunc::Prim(pf) = f {
                if emit_program(pf, &DeviceCaps::ALL, &ScheduleOptions::default()).is_ok() {
                    c.interesting += 1;
                }
            }
        }
    });
}
