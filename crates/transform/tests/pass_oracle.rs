//! Our passes against TVM 0.27's on the modules of TVM's own tests of those passes
//! (`tests/data/pass_oracle.jsonl`, made by `scripts/pass_oracle.py`: every time one of
//! TVM's tests of FoldConstant, DeadCodeElimination, FuseOps or FuseTIR applies the
//! pass, the module it is given and the module TVM returns).
//!
//! Each case is judged by the first comparison that decides it:
//! - **structural**: our pass's output is structurally equal to TVM's (free variables
//!   mapped, as TVM's `assert_structural_equal`);
//! - **running**: otherwise every public Relax function of TVM's output and of ours runs
//!   on the host engine on the same pseudo-random arguments, and the results must be
//!   equal (tolerance 1e-5 relative). A case that agrees this way but where our pass
//!   did less than TVM's (more calls left in the public functions) is also counted
//!   as **weaker**;
//! - **differ**: different results, our pass failing where TVM's succeeds, or an
//!   output that cannot be run to decide (listed with the reason);
//! - **cannot parse**: the input or TVM's output does not parse.
//!
//! The table per pass is printed; floors at the measured figures make regressions
//! fail, and every case that is not an agreement is printed with its reason.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use ndarray::{ArrayD, IxDyn};
use relax_engine::{DeviceChoice, Engine, EngineConfig, Value};
use relax_ir::structural::StructuralEqual;
use relax_ir::visit::for_each_expr;
use relax_ir::{BaseFunc, DataType, ExprKind, IRModule, PrimExpr, StructInfo};
use relax_transform::{lookup, Pipeline};

/// One recorded application of a TVM pass.
struct Case {
    test: String,
    pass: String,
    /// Whether the pass was given arguments (DeadCodeElimination's `entry_functions`).
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

/// Our pass named as TVM names it, applied alone (the module is given as TVM's pass
/// gets it).
fn our_pass(name: &str, m: &IRModule) -> Result<IRModule, String> {
    match name {
        "FoldConstant" => relax_transform::fold::fold_constant(m).map_err(|d| d.to_string()),
        "DeadCodeElimination" => Ok(relax_transform::dce::dead_code_elimination(m)),
        "FuseOps" => Ok(relax_transform::fuse_ops::fuse_ops(m)),
        "FuseTIR" => relax_transform::fuse_tir::fuse_tir(m).map_err(|d| d.to_string()),
        other => Err(format!("no pass of ours for TVM's {other}")),
    }
}

/// Our pass as registered (with the passes it needs before it): what the pipeline
/// runs. For `fold-constant` that includes legalization, which TVM's FoldConstant
/// does internally for operators of constants.
fn our_registered_pass(name: &str, m: &IRModule) -> Result<IRModule, String> {
    let ours = match name {
        "FoldConstant" => "fold-constant",
        "DeadCodeElimination" => "dead-code-elimination",
        "FuseOps" => "fuse-ops",
        "FuseTIR" => "fuse-tir",
        other => return Err(format!("no pass of ours for TVM's {other}")),
    };
    let mut p = Pipeline::new();
    p.push(lookup(ours).ok_or("not registered")?);
    p.run(m.clone()).map_err(|e| e.to_string())
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

/// Deterministic pseudo-random arguments for `params`; symbolic dimensions take the
/// value 4 (the same variable name, the same value).
struct ArgGen {
    state: u64,
    dims: HashMap<String, i64>,
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
        if let Some(v) = e.as_int() {
            return Ok(v);
        }
        match e.as_var() {
            Some(v) => Ok(*self.dims.entry(v.name().to_string()).or_insert(4)),
            None => Err(format!("a parameter's dimension is an expression ({e:?})")),
        }
    }
    fn value(&mut self, si: &StructInfo) -> Result<Value, String> {
        match si {
            StructInfo::Tensor(t) => {
                let shape = t.shape_values().ok_or("a tensor parameter of unknown shape")?;
                let shape: Vec<usize> = shape
                    .iter()
                    .map(|d| self.dim(d).map(|v| v as usize))
                    .collect::<Result<_, _>>()?;
                let n: usize = shape.iter().product();
                let dt = t.dtype;
                let tensor = if dt == DataType::FLOAT32 {
                    let v = (0..n).map(|_| (self.next() % 2000) as f32 / 1000.0 - 1.0).collect();
                    relax_engine::Tensor::from_array(
                        &ArrayD::from_shape_vec(IxDyn(&shape), v).map_err(|e| e.to_string())?,
                    )
                } else if dt == DataType::INT64 || dt == DataType::INT32 {
                    let v: Vec<i64> = (0..n).map(|_| (self.next() % 4) as i64).collect();
                    if dt == DataType::INT64 {
                        relax_engine::Tensor::from_array(
                            &ArrayD::from_shape_vec(IxDyn(&shape), v).map_err(|e| e.to_string())?,
                        )
                    } else {
                        let v: Vec<i32> = v.into_iter().map(|x| x as i32).collect();
                        relax_engine::Tensor::from_array(
                            &ArrayD::from_shape_vec(IxDyn(&shape), v).map_err(|e| e.to_string())?,
                        )
                    }
                } else {
                    return Err(format!("no random data for dtype {dt}"));
                };
                Ok(Value::Tensor(tensor))
            }
            StructInfo::Tuple(fields) => Ok(Value::tuple(
                fields.iter().map(|f| self.value(f)).collect::<Result<_, _>>()?,
            )),
            StructInfo::Prim(p) if p.dtype.is_int() => {
                let v = match &p.value {
                    Some(e) => self.dim(e)?,
                    None => (self.next() % 4) as i64 + 1,
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
    } else if dt.bytes() == 1 {
        bytes.iter().map(|&b| b as f64).collect()
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
            for (i, (p, q)) in ex.iter().zip(&ey).enumerate() {
                if (p - q).abs() > 1e-5 * (1.0 + q.abs()) {
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
/// same arguments and compare. `Err` says why they differ or could not be run.
fn agree_by_running(ours: &IRModule, want: &IRModule) -> Result<usize, String> {
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
        let mut gen = ArgGen {
            state: 17,
            dims: HashMap::new(),
        };
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
        same_value(&b, &a).map_err(|e| format!("{}: results differ: {e}", g.name()))?;
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
        Ok(m) => m,
        Err(e) => return Verdict::CannotParse(format!("TVM's output: {e}")),
    };
    let options = case.args["kwargs"].as_object().filter(|o| !o.is_empty());
    let ours = our_pass(&case.pass, &input);
    let structural = match &ours {
        Ok(m) => StructuralEqual::new()
            .map_free_vars(true)
            .module(m, &want)
            .map_err(|e| e.to_string()),
        Err(e) => Err(format!("our pass fails: {e}")),
    };
    if structural.is_ok() {
        return Verdict::Structural;
    }
    let why_not = structural.err().unwrap_or_default();
    // Not the same text: the registered pass (with the passes it needs) must compute
    // what TVM's output computes.
    let ours = match our_registered_pass(&case.pass, &input) {
        Ok(m) => m,
        Err(e) => return Verdict::Differ(format!("our registered pass fails: {e}")),
    };
    match agree_by_running(&ours, &want) {
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
        let v = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| judge(&case)))
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
    assert!(total >= 95, "the recorded cases are all read ({total})");
}
