//! `type_analysis.jsonl`: TVM's verdicts for `type_lca` (LUB), `type_base_check`
//! (subtyping levels), `erase_to_well_defined` and `get_static_type`.

mod common;

use std::collections::HashMap;

use common::type_text::{read_prim_expr, read_shape_expr, read_struct_info, Env};
use relax_checker::analysis::{
    erase_with_maps, get_static_struct_info, struct_info_base_check, struct_info_equal, unify_struct_info,
};
use relax_ir::arith::Analyzer;

/// The JSON object `m` (absent: empty) as a map, its keys through `key` and its
/// string values through `value`.
fn read_map<K: std::hash::Hash + Eq, V>(
    m: Option<&serde_json::Value>,
    env: &mut Env,
    key: impl Fn(&mut Env, &str) -> K,
    value: impl Fn(&str, &mut Env) -> Result<V, String>,
) -> Result<HashMap<K, V>, String> {
    let mut map = HashMap::new();
    if let Some(m) = m.and_then(|v| v.as_object()) {
        for (k, v) in m {
            let var = key(env, k);
            let val = value(v.as_str().ok_or("bad map")?, env)?;
            map.insert(var, val);
        }
    }
    Ok(map)
}

fn run_case(case: &serde_json::Value) -> Result<bool, String> {
    let kind = case["kind"].as_str().unwrap_or("");
    let inputs = case["input"].as_array().ok_or("no input")?;
    let expected = case["expected"].as_str().ok_or("no expected")?;
    let ana = Analyzer::new();
    let mut env = Env::default();
    let text = |i: usize| {
        inputs
            .get(i)
            .and_then(|v| v.as_str())
            .ok_or_else(|| format!("input {i} missing"))
    };
    match kind {
        "type_base_check" => {
            let base = read_struct_info(text(0)?, &mut env)?;
            let derived = read_struct_info(text(1)?, &mut env)?;
            Ok(struct_info_base_check(&base, &derived, &ana).name() == expected)
        }
        "type_lca" => {
            let a = read_struct_info(text(0)?, &mut env)?;
            let b = read_struct_info(text(1)?, &mut env)?;
            let want = read_struct_info(expected, &mut env)?;
            Ok(struct_info_equal(&unify_struct_info(&a, &b, &ana), &want))
        }
        "get_static_type" => {
            let a = read_struct_info(text(0)?, &mut env)?;
            let want = read_struct_info(expected, &mut env)?;
            Ok(struct_info_equal(&get_static_struct_info(&a), &want))
        }
        "erase_to_well_defined" => {
            let a = read_struct_info(text(0)?, &mut env)?;
            let shape_map = read_map(inputs.get(1), &mut env, Env::tir_var, read_prim_expr)?;
            let var_map = read_map(inputs.get(2), &mut env, Env::relax_var, read_shape_expr)?;
            let want = read_struct_info(expected, &mut env)?;
            let got = erase_with_maps(&a, &shape_map, &var_map, &ana);
            Ok(struct_info_equal(&got, &want))
        }
        other => Err(format!("unknown kind {other}")),
    }
}

#[test]
fn type_analysis_corpus_agreement() {
    let Some(cases) = common::corpus_lines("type_analysis.jsonl") else {
        return;
    };
    let disagree: Vec<String> = cases
        .iter()
        .filter_map(|case| match run_case(case) {
            Ok(true) => None,
            Ok(false) => Some(format!("{} {} {}", case["id"], case["kind"], case["input"])),
            Err(e) => Some(format!("{} unreadable: {e}", case["id"])),
        })
        .collect();
    let total = cases.len();
    let agree = total - disagree.len();
    assert!(total > 200, "corpus has {total} cases");
    common::assert_agreement("type_analysis", agree, total, &disagree, 95);
}
