//! Conformance of the operator registry's StructInfo inference with TVM's verdicts
//! (`op_struct_info.jsonl` of the conformance corpus).
//!
//! For each faithful `check_inference` / `normalize_error` case: parse `input`,
//! take the `gv = <call>` binding of `main`, give the call's arguments the
//! StructInfo their definitions state (parameter annotations, `match_cast`
//! targets, leaf expressions), run the operator's inference and compare the
//! printed result with TVM's `expected` (or require an error).

use std::collections::BTreeMap;
use std::path::PathBuf;

use relax_checker::op::{family_of, lookup, InferCtx};
use relax_ir::arith::Analyzer;
use relax_ir::text::{parse, print_struct_info};
use relax_ir::{Binding, Call, Expr, ExprKind, FuncStructInfo, IRModule, PrimStructInfo, StructInfo};
use serde_json::Value;

/// The operators the registry is required to get right (≥ 95%).
const REQUIRED: &[&str] = &[
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "ceil",
    "cos",
    "cosh",
    "exp",
    "floor",
    "log",
    "negative",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "clip",
    "isfinite",
    "isinf",
    "isnan",
    "add",
    "subtract",
    "multiply",
    "divide",
    "floor_divide",
    "power",
    "atan2",
    "maximum",
    "minimum",
    "mod",
    "floor_mod",
    "equal",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "not_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "where",
    "ewise_fma",
    "astype",
    "matmul",
    "sum",
    "mean",
    "max",
    "min",
    "prod",
    "variance",
    "std",
    "argmax",
    "argmin",
    "cumsum",
    "cumprod",
    "reshape",
    "permute_dims",
    "expand_dims",
    "squeeze",
    "flatten",
    "concat",
    "split",
    "broadcast_to",
    "take",
    "strided_slice",
    "tile",
    "repeat",
    "flip",
    "collapse_sum_to",
    "collapse_sum_like",
    "zeros",
    "ones",
    "full",
    "zeros_like",
    "ones_like",
    "full_like",
    "arange",
    "tril",
    "triu",
    "eye",
    "eye_like",
    "nn.relu",
    "nn.gelu",
    "nn.silu",
    "nn.softmax",
    "nn.log_softmax",
    "nn.layer_norm",
    "nn.conv2d",
    "nn.max_pool2d",
    "nn.avg_pool2d",
    "nn.batch_norm",
    "nn.dropout",
    "nn.leakyrelu",
    "nn.softplus",
    "nn.pad",
    "call_tir",
    "call_tir_inplace",
    "call_dps_packed",
    "call_pure_packed",
    "call_inplace_packed",
    "shape_of",
    "null_value",
    "to_vdevice",
    "hint_on_device",
    "print",
    "assert_op",
];

fn corpus_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("RELAX_CORPUS_DIR") {
        return Some(PathBuf::from(d));
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/tvm");
    p.exists().then_some(p)
}

/// The StructInfo an argument expression has by its definition.
fn arg_sinfo(e: &Expr, module: &IRModule) -> StructInfo {
    match e.kind() {
        ExprKind::Var(v) => v.struct_info().cloned().unwrap_or(StructInfo::Object),
        ExprKind::ShapeExpr(v) => StructInfo::shape(v.clone()),
        ExprKind::PrimValue(p) => StructInfo::Prim(PrimStructInfo {
            dtype: p.dtype(),
            value: Some(p.clone()),
        }),
        ExprKind::Tuple(fields) => StructInfo::Tuple(fields.iter().map(|f| arg_sinfo(f, module)).collect()),
        ExprKind::Constant { data } => relax_checker::derive::constant_struct_info(data),
        ExprKind::ExternFunc { .. } => StructInfo::Func(FuncStructInfo {
            params: None,
            ret: Box::new(StructInfo::Object),
            purity: false,
            derive_func: Some("tvm.relax.struct_info.infer_by_sinfo_args".into()),
        }),
        ExprKind::GlobalVar(g) => match module.relax_function(g.name()) {
            Some(f) => StructInfo::Func(relax_checker::derive::function_signature(f)),
            None => StructInfo::Object,
        },
        // A nested call (un-normalized input): its inferred StructInfo, as the
        // normalizer would bind it to a variable first.
        ExprKind::Call(c) => {
            c.op.as_op()
                .and_then(lookup)
                .and_then(|def| {
                    let args: Vec<StructInfo> = c.args.iter().map(|a| arg_sinfo(a, module)).collect();
                    let analyzer = Analyzer::new();
                    (def.infer)(
                        c,
                        &args,
                        &InferCtx {
                            module: Some(module),
                            analyzer: &analyzer,
                        },
                    )
                    .ok()
                })
                .unwrap_or(StructInfo::Object)
        }
        _ => StructInfo::Object,
    }
}

/// The `gv = <call>` binding of `main`.
fn find_call(module: &IRModule) -> Option<Call> {
    let f = module.relax_function("main")?;
    let ExprKind::Seq(seq) = f.body.kind() else { return None };
    for b in seq.blocks.iter().flat_map(|b| b.bindings.iter()) {
        if let Binding::VarBinding { var, value, .. } = b {
            if var.name() == "gv" {
                return value.as_call().cloned();
            }
        }
    }
    None
}

#[derive(Default)]
struct Tally {
    total: usize,
    agree: usize,
}

enum Outcome {
    Agree,
    Mismatch(String),
}

fn run_case(row: &Value) -> Outcome {
    let input = row["input"].as_str().unwrap_or_default();
    let expected = row["expected"].as_str().unwrap_or_default();
    let module = match parse(input) {
        Ok(p) => p.into_module(),
        Err(d) => return Outcome::Mismatch(format!("parse error: {}", d.message)),
    };
    let Some(call) = find_call(&module) else {
        return Outcome::Mismatch("no `gv = <call>` binding".into());
    };
    let Some(name) = call.op.as_op() else {
        return Outcome::Mismatch("callee is not an operator".into());
    };
    let Some(def) = lookup(name) else {
        return Outcome::Mismatch(format!("operator {name} not registered"));
    };
    let args: Vec<StructInfo> = call.args.iter().map(|a| arg_sinfo(a, &module)).collect();
    let analyzer = Analyzer::new();
    let ctx = InferCtx {
        module: Some(&module),
        analyzer: &analyzer,
    };
    match ((def.infer)(&call, &args, &ctx), expected) {
        (Err(_), "error") => Outcome::Agree,
        (Ok(s), "error") => Outcome::Mismatch(format!("accepted (inferred {})", print_struct_info(&s, Some(&module)))),
        (Err(e), _) => Outcome::Mismatch(format!("rejected: {e}")),
        (Ok(s), exp) => {
            let got = print_struct_info(&s, Some(&module));
            if got == exp {
                Outcome::Agree
            } else {
                Outcome::Mismatch(format!("got {got}, expected {exp}"))
            }
        }
    }
}

#[test]
fn op_struct_info_corpus() {
    let Some(dir) = corpus_dir() else {
        eprintln!("op_corpus: conformance corpus not found (set RELAX_CORPUS_DIR); nothing checked");
        return;
    };
    let path = dir.join("op_struct_info.jsonl");
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("op_corpus: {} not readable; nothing checked", path.display());
        return;
    };
    let mut by_family: BTreeMap<String, Tally> = BTreeMap::new();
    let mut required = Tally::default();
    let mut all = Tally::default();
    let mut failures: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let row: Value = serde_json::from_str(line).expect("corpus line is JSON");
        let kind = row["kind"].as_str().unwrap_or_default();
        if row["faithful"] != Value::Bool(true) || !(kind == "check_inference" || kind == "normalize_error") {
            continue;
        }
        let op = row["op"].as_str().unwrap_or_default().to_string();
        let short = op.strip_prefix("relax.").unwrap_or(&op).to_string();
        let outcome = run_case(&row);
        let ok = matches!(outcome, Outcome::Agree);
        let family = family_of(&op).unwrap_or("unregistered").to_string();
        for t in [by_family.entry(family).or_default(), &mut all] {
            t.total += 1;
            t.agree += ok as usize;
        }
        if REQUIRED.contains(&short.as_str()) {
            required.total += 1;
            required.agree += ok as usize;
        }
        if let Outcome::Mismatch(m) = outcome {
            failures.push(format!(
                "{} {} {}: {}",
                row["id"].as_str().unwrap_or("?"),
                op,
                row["call"].as_str().unwrap_or(""),
                m
            ));
        }
    }
    let pct = |t: &Tally| 100.0 * t.agree as f64 / t.total.max(1) as f64;
    eprintln!("op_corpus: per family (agree/total):");
    for (f, t) in &by_family {
        eprintln!("  {f:<16} {:>5}/{:<5} {:6.2}%", t.agree, t.total, pct(t));
    }
    eprintln!("op_corpus: all ops {}/{} ({:.2}%)", all.agree, all.total, pct(&all));
    eprintln!(
        "op_corpus: required ops {}/{} ({:.2}%)",
        required.agree,
        required.total,
        pct(&required)
    );
    if let Ok(out) = std::env::var("OP_CORPUS_FAILURES") {
        let _ = std::fs::write(out, failures.join("\n"));
    }
    for f in failures.iter().take(40) {
        eprintln!("  MISMATCH {f}");
    }
    assert!(
        required.total > 2000,
        "expected the corpus to hold the required cases, found {}",
        required.total
    );
    assert!(
        pct(&required) >= 95.0,
        "agreement on the required operators is {:.2}% (< 95%)",
        pct(&required)
    );
}
