//! Our passes against TVM 0.27's on the modules of TVM's own tests of those passes
//! (`tests/data/pass_oracle.jsonl`, made by `scripts/pass_oracle.py`: every time one of
//! TVM's tests of FoldConstant, DeadCodeElimination, FuseOps or FuseTIR applies the
//! pass, the module it is given and the module TVM returns).
//!
//! Each case is judged by the first comparison that decides it:
//! - **structural**: our pass's output is structurally equal to TVM's (free variables
//!   mapped, as TVM's `assert_structural_equal`), either the pass alone on the checked
//!   input or the pass as our pipeline registers it (`fold-constant` after
//!   legalization; `fuse-tir` followed by `dead-code-elimination`, as TVM's FuseTIR
//!   ends with DeadCodeElimination). `Primitive` attributes compare as booleans;
//! - **running**: otherwise every public Relax function of TVM's output and of ours runs
//!   on the host engine on the same pseudo-random arguments, and the results must be
//!   equal (tolerance 1e-5 relative, 1e-2 for float16). A case that agrees this way but where our pass
//!   did less than TVM's (more calls left in the public functions) is also counted
//!   as **weaker**;
//! - **differ**: different results (the input then runs too, to say whether it
//!   computes what ours or what TVM's output computes), our pass failing where TVM's
//!   succeeds, or an output that cannot be run to decide (listed with the reason);
//! - **cannot parse**: the input or TVM's output does not parse.
//!
//! A case where TVM's pass raised counts as a structural agreement only when ours
//! fails too (the recorded data has none).
//!
//! The table per pass is printed; floors at the measured figures make regressions
//! fail, and every case that is not an agreement is printed with its reason.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use relax_engine::{DeviceChoice, Engine, EngineConfig, Value};
use relax_ir::structural::StructuralEqual;
use relax_ir::visit::for_each_expr;
use relax_ir::{AttrValue, BaseFunc, DataType, ExprKind, IRModule, PrimExpr, StructInfo};
use relax_transform::{lookup, Pipeline};

/// One recorded application of a TVM pass.
struct Case {
    test: String,
    pass: String,
    /// The pass's arguments as TVM's test gave them (DeadCodeElimination's
    /// `entry_functions`); ours takes none, and the note of a case says so.
    args: serde_json::Value,
    input: String,
    output: Option<String>,
    error: Option<String>,
}

fn cases() -> Vec<Case> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/pass_oracle.jsonl");
    let text = std::fs::read_to_string(&path).expect("the oracle data is committed");
    let mut seen: HashMap<String, usize> = HashMap::new();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let s = |k: &str| v[k].as_str().map(str::to_string);
            let test = s("test").unwrap_or_default();
            // Several cases of one test: number them.
            let n = seen.entry(test.clone()).or_default();
            *n += 1;
            let test = if *n == 1 { test } else { format!("{test}#{n}") };
            Case {
                test,
                pass: s("pass").expect("pass"),
                args: v["args"].clone(),
                input: s("input").expect("input"),
                output: s("output"),
                error: s("error"),
            }
        })
        .collect()
}

/// How a case was decided.
enum Verdict {
    Structural,
    Running { weaker: bool, note: String },
    Differ(String),
    CannotParse(String),
}

/// A pipeline of registered passes.
fn pipeline(m: &IRModule, names: &[&str]) -> Result<IRModule, String> {
    let mut p = Pipeline::new();
    for n in names {
        p.push(lookup(n).ok_or_else(|| format!("pass {n} not registered"))?);
    }
    p.run(m.clone()).map_err(|e| e.to_string())
}

/// Our `check` (normalization and StructInfo derivation, which TVM's parser does
/// while parsing), or the module as parsed when it fails.
fn checked(m: &IRModule) -> IRModule {
    pipeline(m, &["check"]).unwrap_or_else(|_| m.clone())
}

/// Our counterpart of TVM's pass for the structural comparison: the pass alone on
/// the checked module. TVM's FuseTIR is a sequence ending with DeadCodeElimination;
/// so is ours.
fn our_pass(name: &str, m: &IRModule) -> Result<IRModule, String> {
    let m = checked(m);
    match name {
        "FoldConstant" => relax_transform::fold::fold_constant(&m).map_err(|d| d.to_string()),
        "DeadCodeElimination" => Ok(relax_transform::dce::dead_code_elimination(&m)),
        "FuseOps" => Ok(relax_transform::fuse_ops::fuse_ops(&m)),
        "FuseTIR" => pipeline(&m, &["fuse-tir", "dead-code-elimination"]),
        other => Err(format!("no pass of ours for TVM's {other}")),
    }
}

/// Our pass as the pipeline runs it (with the passes it needs before it), for the
/// comparison by running. For `fold-constant` that includes legalization, which TVM's
/// FoldConstant does internally for operators of constants.
fn our_registered_pass(name: &str, m: &IRModule) -> Result<IRModule, String> {
    match name {
        "FoldConstant" => pipeline(m, &["fold-constant"]),
        "DeadCodeElimination" => pipeline(m, &["check", "dead-code-elimination"]),
        "FuseOps" => pipeline(m, &["fuse-ops"]),
        "FuseTIR" => pipeline(m, &["check", "fuse-tir", "dead-code-elimination"]),
        other => Err(format!("no pass of ours for TVM's {other}")),
    }
}

/// Calls left in the public Relax functions (what the pass did not fold, fuse or
/// remove).
fn public_calls(m: &IRModule) -> usize {
    let mut n = 0;
    for f in m.functions.values() {
        let BaseFunc::Relax(f) = f else { continue };
        if f.private {
            continue;
        }
        for_each_expr(&f.body, &mut |e| {
            n += usize::from(matches!(e.kind(), ExprKind::Call(_)))
        });
    }
    n
}

/// Deterministic pseudo-random arguments for `params`; every symbolic variable takes
/// the value 4 (dimensions that are expressions are evaluated with it).
struct ArgGen {
    state: u64,
}

/// The IEEE half-precision bits of `v`, a multiple of 1/8 in [-1, 1) (exact).
fn f16_bits(v: f32) -> u16 {
    if v == 0.0 {
        return 0;
    }
    let b = v.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
    let frac = ((b >> 13) & 0x3ff) as u16;
    sign | ((exp as u16) << 10) | frac
}

/// The value of IEEE half-precision bits.
fn f16_value(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    sign * match exp {
        0 => frac * 2f64.powi(-24),
        31 => f64::INFINITY,
        e => (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

impl ArgGen {
    fn next(&mut self) -> u64 {
        self.state = self
            .state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.state >> 33
    }
    fn dim(&mut self, e: &PrimExpr) -> Result<i64, String> {
        relax_ir::arith::eval_int(e, &|_| Some(4))
            .ok_or_else(|| format!("a dimension that cannot be evaluated ({e:?})"))
    }
    fn value(&mut self, si: &StructInfo) -> Result<Value, String> {
        match si {
            StructInfo::Tensor(t) => {
                let shape = t.shape_values().ok_or("a tensor parameter of unknown shape")?;
                let shape: Vec<i64> = shape.iter().map(|d| self.dim(d)).collect::<Result<_, _>>()?;
                let n = shape.iter().product::<i64>().max(0) as usize;
                let dt = t.dtype;
                let mut bytes = Vec::with_capacity(n * dt.bytes());
                for _ in 0..n {
                    let r = self.next();
                    // Floats: multiples of 1/8 in [-1, 1); integers: 0..4; bool: 0 or 1.
                    let f = (r % 16) as f32 / 8.0 - 1.0;
                    let i = (r % 4) as i64;
                    if dt == DataType::FLOAT32 {
                        bytes.extend(f.to_le_bytes());
                    } else if dt == DataType::FLOAT64 {
                        bytes.extend(f64::from(f).to_le_bytes());
                    } else if dt.is_float() && dt.bits == 16 {
                        bytes.extend(f16_bits(f).to_le_bytes());
                    } else if dt.is_bool() {
                        bytes.push((r % 2) as u8);
                    } else if dt.is_int() || dt.is_uint() {
                        bytes.extend(&i.to_le_bytes()[..dt.bytes()]);
                    } else {
                        return Err(format!("no random data for dtype {dt}"));
                    }
                }
                relax_engine::Tensor::from_bytes(dt, &shape, bytes)
                    .map(Value::Tensor)
                    .map_err(|e| e.to_string())
            }
            StructInfo::Tuple(fields) => Ok(Value::tuple(
                fields.iter().map(|f| self.value(f)).collect::<Result<_, _>>()?,
            )),
            StructInfo::Prim(p) if p.dtype.is_int() => {
                let v = match &p.value {
                    Some(e) => self.dim(e)?,
                    None => 4,
                };
                Ok(Value::Prim(relax_engine::PrimValue::int(v, p.dtype)))
            }
            StructInfo::Shape(s) => {
                let values = s.values.as_ref().ok_or("a shape parameter of unknown values")?;
                let dims: Vec<i64> = values.iter().map(|d| self.dim(d)).collect::<Result<_, _>>()?;
                Ok(Value::shape(&dims))
            }
            other => Err(format!("no random value for a parameter of {other:?}")),
        }
    }
}

/// The elements of a tensor as f64, by dtype.
fn elements(t: &relax_engine::Tensor) -> Result<Vec<f64>, String> {
    let bytes = t.to_bytes().map_err(|e| e.to_string())?;
    let dt = t.dtype();
    let chunks = |w: usize| bytes.chunks_exact(w);
    Ok(if dt == DataType::FLOAT32 {
        chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect()
    } else if dt == DataType::INT32 {
        chunks(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect()
    } else if dt == DataType::INT64 {
        chunks(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f64)
            .collect()
    } else if dt.is_float() && dt.bits == 16 {
        chunks(2).map(|c| f16_value(u16::from_le_bytes([c[0], c[1]]))).collect()
    } else if dt.bytes() == 1 {
        bytes
            .iter()
            .map(|&b| if dt.is_int() { b as i8 as f64 } else { b as f64 })
            .collect()
    } else {
        return Err(format!("results of dtype {dt} are not compared"));
    })
}

/// Whether two run results are equal (tensors within 1e-5 relative).
fn same_value(a: &Value, b: &Value) -> Result<(), String> {
    match (a, b) {
        (Value::Tensor(x), Value::Tensor(y)) => {
            if x.dtype() != y.dtype() || x.shape() != y.shape() {
                return Err(format!("{} vs {}", x.describe(), y.describe()));
            }
            let (ex, ey) = (elements(x)?, elements(y)?);
            // Half precision rounds each intermediate: a looser bound.
            let tol = if x.dtype().bits == 16 { 1e-2 } else { 1e-5 };
            for (i, (p, q)) in ex.iter().zip(&ey).enumerate() {
                if (p - q).abs() > tol * (1.0 + q.abs()) {
                    return Err(format!("element {i}: {p} vs {q}"));
                }
            }
            Ok(())
        }
        (Value::Tuple(x), Value::Tuple(y)) if x.len() == y.len() => {
            x.iter().zip(y.iter()).try_for_each(|(p, q)| same_value(p, q))
        }
        (Value::Prim(x), Value::Prim(y)) if x.numerically_equal(y) => Ok(()),
        (Value::Shape(x), Value::Shape(y)) if x == y => Ok(()),
        _ => Err(format!("{} vs {}", a.describe(), b.describe())),
    }
}

/// Run every public Relax function of `want` (TVM's output) in both modules on the
/// same arguments and compare. `Err` says why they differ or could not be run; where
/// the results differ, the pass's input runs too, to say which side it agrees with.
fn agree_by_running(input: &IRModule, ours: &IRModule, want: &IRModule) -> Result<usize, String> {
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        optimize: false,
        host_library: false,
        ..EngineConfig::default()
    });
    let load = |m: &IRModule, who: &str| engine.load(m).map_err(|e| format!("{who} does not load: {e}"));
    let (lw, lo) = (load(want, "TVM's output")?, load(ours, "ours")?);
    let mut ran = 0;
    for (g, f) in &want.functions {
        let BaseFunc::Relax(f) = f else { continue };
        if f.private {
            continue;
        }
        let mut gen = ArgGen { state: 17 };
        let args: Vec<Value> = f
            .params
            .iter()
            .map(|p| {
                p.struct_info()
                    .ok_or("a parameter without StructInfo".to_string())
                    .and_then(|s| gen.value(s))
            })
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{}: {e}", g.name()))?;
        // Arguments are passed by reference: give each run its own copies.
        let copy = |v: &[Value]| -> Vec<Value> { v.iter().map(deep_copy).collect() };
        let a = lw
            .run(g.name(), &copy(&args))
            .map_err(|e| format!("{}: TVM's output does not run: {e}", g.name()))?;
        let b = lo
            .run(g.name(), &copy(&args))
            .map_err(|e| format!("{}: ours does not run: {e}", g.name()))?;
        if let Err(e) = same_value(&b, &a) {
            let before = engine
                .load(input)
                .and_then(|l| l.run(g.name(), &copy(&args)))
                .map_err(|e| e.to_string());
            let side = match before {
                Ok(c) => match (same_value(&c, &b).is_ok(), same_value(&c, &a).is_ok()) {
                    (true, false) => "the input computes what ours does",
                    (false, true) => "the input computes what TVM's output does",
                    (true, true) => "the input agrees with both",
                    (false, false) => "the input agrees with neither",
                },
                Err(_) => "the input does not run",
            };
            return Err(format!("{}: results differ ({side}): {e}", g.name()));
        }
        ran += 1;
    }
    if ran == 0 {
        return Err("no public Relax function to run".to_string());
    }
    Ok(ran)
}

fn deep_copy(v: &Value) -> Value {
    match v {
        Value::Tensor(t) => match t.to_bytes() {
            Ok(b) => relax_engine::Tensor::from_bytes(t.dtype(), t.shape(), b)
                .map(Value::Tensor)
                .unwrap_or_else(|_| v.clone()),
            Err(_) => v.clone(),
        },
        Value::Tuple(f) => Value::tuple(f.iter().map(deep_copy).collect()),
        other => other.clone(),
    }
}

/// The module with `Primitive` attributes spelled as TVM 0.27 prints them (`True`;
/// our `fuse-ops` writes the integer 1, as older TVM did): a difference of spelling
/// that the structural comparison is not meant to count.
fn primitive_as_bool(m: &IRModule) -> IRModule {
    let mut m = m.clone();
    for f in m.functions.values_mut() {
        if let BaseFunc::Relax(f) = f {
            if f.attrs.get("Primitive").and_then(|v| v.as_int()) == Some(1) {
                f.attrs.set("Primitive", AttrValue::Bool(true));
            }
        }
    }
    m
}

fn parse(text: &str) -> Result<IRModule, String> {
    relax_ir::text::parse(text)
        .map(|p| p.into_module())
        .map_err(|d| d.to_string())
}

fn judge(case: &Case) -> Verdict {
    let input = match parse(&case.input) {
        Ok(m) => m,
        Err(e) => return Verdict::CannotParse(format!("input: {e}")),
    };
    let Some(out) = &case.output else {
        // TVM rejected the module: ours must too.
        return match our_pass(&case.pass, &input) {
            Err(_) => Verdict::Structural,
            Ok(_) => Verdict::Differ(format!(
                "TVM fails ({}), ours succeeds",
                case.error.as_deref().unwrap_or("?")
            )),
        };
    };
    let want = match parse(out) {
        Ok(m) => checked(&m),
        Err(e) => return Verdict::CannotParse(format!("TVM's output: {e}")),
    };
    let options = case.args["kwargs"].as_object().filter(|o| !o.is_empty());
    let same = |m: &IRModule| {
        StructuralEqual::new()
            .map_free_vars(true)
            .module(&primitive_as_bool(m), &want)
            .map_err(|e| e.to_string())
    };
    let structural = match our_pass(&case.pass, &input) {
        Ok(m) => same(&m),
        Err(e) => Err(format!("our pass fails: {e}")),
    };
    let registered = our_registered_pass(&case.pass, &input);
    // Either form of our pass may match TVM's text: the pass alone, or as the
    // pipeline runs it (for fold-constant, legalized operators folded away).
    if structural.is_ok() || registered.as_ref().is_ok_and(|m| same(m).is_ok()) {
        return Verdict::Structural;
    }
    let why_not = structural.err().unwrap_or_default();
    // Not the same text: the registered pass (with the passes it needs) must compute
    // what TVM's output computes.
    let ours = match registered {
        Ok(m) => m,
        Err(e) => return Verdict::Differ(format!("our registered pass fails: {e}")),
    };
    match agree_by_running(&checked(&input), &ours, &want) {
        Ok(n) => {
            let (o, w) = (public_calls(&ours), public_calls(&want));
            let mut note = format!("{n} function(s) ran; not structurally equal: {why_not}");
            if let Some(opts) = options {
                note.push_str(&format!("; TVM's pass had options {opts:?}, ours has none"));
            }
            Verdict::Running {
                weaker: o > w,
                note: format!("{note}; calls left in public functions: ours {o}, TVM {w}"),
            }
        }
        Err(e) => Verdict::Differ(e),
    }
}

#[derive(Default)]
struct Row {
    cases: usize,
    parsed: usize,
    structural: usize,
    running: usize,
    weaker: usize,
    differ: usize,
    cannot_parse: usize,
}

#[test]
fn passes_agree_with_tvm_on_tvms_own_tests() {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut report = Vec::new();
    for case in cases() {
        let row = rows.entry(case.pass.clone()).or_default();
        row.cases += 1;
        // On a thread of its own: a panic comes back from `join` as a difference.
        let v = std::thread::scope(|s| s.spawn(|| judge(&case)).join())
            .unwrap_or_else(|_| Verdict::Differ("panicked".to_string()));
        match v {
            Verdict::Structural => {
                row.parsed += 1;
                row.structural += 1;
            }
            Verdict::Running { weaker, note } => {
                row.parsed += 1;
                row.running += 1;
                row.weaker += usize::from(weaker);
                let tag = if weaker { "running, weaker" } else { "running" };
                report.push(format!("{} {}: {tag}: {note}", case.pass, case.test));
            }
            Verdict::Differ(why) => {
                row.parsed += 1;
                row.differ += 1;
                report.push(format!("{} {}: DIFFER: {why}", case.pass, case.test));
            }
            Verdict::CannotParse(why) => {
                row.cannot_parse += 1;
                report.push(format!("{} {}: CANNOT PARSE: {why}", case.pass, case.test));
            }
        }
    }
    eprintln!("pass                 cases parsed structural running (weaker) differ cannot-parse");
    for (pass, r) in &rows {
        eprintln!(
            "{pass:<20} {:>5} {:>6} {:>10} {:>7} {:>8} {:>6} {:>12}",
            r.cases, r.parsed, r.structural, r.running, r.weaker, r.differ, r.cannot_parse
        );
    }
    for line in &report {
        eprintln!("  {}", line.lines().next().unwrap_or(""));
    }
    let total: usize = rows.values().map(|r| r.cases).sum();
    assert_eq!(total, cases_recorded(), "every recorded case is judged");
    // Floors at the measured figures: (pass, structural, agree by running, differ at
    // most, cannot parse at most).
    let floors = [
        ("DeadCodeElimination", 13, 0, 0, 2),
        ("FoldConstant", 16, 1, 1, 0),
        ("FuseOps", 14, 13, 0, 0),
        ("FuseTIR", 3, 31, 0, 1),
    ];
    for (pass, structural, running, differ, cannot_parse) in floors {
        let r = rows.get(pass).unwrap_or_else(|| panic!("no case of {pass}"));
        assert!(
            r.structural >= structural,
            "{pass}: {} structural agreements, were {structural}",
            r.structural
        );
        assert!(
            r.structural + r.running >= structural + running,
            "{pass}: {} agreements, were {}",
            r.structural + r.running,
            structural + running
        );
        assert!(r.differ <= differ, "{pass}: {} cases differ, were {differ}", r.differ);
        assert!(
            r.cannot_parse <= cannot_parse,
            "{pass}: {} cases do not parse, were {cannot_parse}",
            r.cannot_parse
        );
    }
}

/// The number of lines of the oracle data.
fn cases_recorded() -> usize {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/pass_oracle.jsonl");
    std::fs::read_to_string(path)
        .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count())
        .unwrap_or(0)
}
