//! `well_formed.jsonl`: TVM's well-formedness verdicts on the faithful cases,
//! parsed from text and checked with `check_module`.

mod common;

use relax_checker::check::{check_module, CheckResult};
use relax_ir::text::parse;

/// The criteria a TVM error message corresponds to (rule prefixes of ours).
fn expected_rules(error: &str) -> Vec<&'static str> {
    if error.contains("is not defined") {
        vec!["well-formed/3:", "well-formed/4:", "well-formed/5:"]
    } else if error.contains("annotated as pure but contains an impure call") || error.contains("Impure function call")
    {
        vec!["struct-info/purity"]
    } else if error.contains("relax.force_pure") && error.contains("is_pure") {
        vec!["well-formed/21:"]
    } else if error.contains("FValidate") || error.contains("FNormalize") {
        vec!["well-formed/23:"]
    } else if error.contains("All information in Type annotations must be correct") {
        vec!["struct-info/annotation"]
    } else if error.contains("Name in GlobalVar is not equal to name in gsymbol") {
        vec!["well-formed/13:"]
    } else {
        vec![]
    }
}

fn verdict(r: &CheckResult, check_ty: bool) -> bool {
    if check_ty {
        r.is_valid()
    } else {
        r.well_formed
    }
}

#[test]
fn well_formed_corpus_agreement() {
    let Some(cases) = common::corpus_lines("well_formed.jsonl") else {
        return;
    };
    let mut total = 0;
    let mut agree = 0;
    let mut parse_failures = Vec::new();
    let mut disagreements = Vec::new();
    let mut false_total = 0;
    let mut false_right_rule = 0;
    let mut wrong_rule = Vec::new();
    for case in &cases {
        if case["faithful"].as_bool() != Some(true) {
            continue;
        }
        total += 1;
        let id = case["id"].as_str().unwrap_or("?");
        let input = case["input"].as_str().unwrap_or("");
        let expected = case["expected"].as_bool().unwrap_or(true);
        let check_ty = case["args"]["check_ty"].as_bool().unwrap_or(true);
        let module = match parse(input) {
            Ok(p) => p.into_module(),
            Err(d) => {
                parse_failures.push(format!("{id}: {d}"));
                continue;
            }
        };
        let r = check_module(&module);
        let got = verdict(&r, check_ty);
        if got == expected {
            agree += 1;
        } else {
            let first = r.errors().next().map(|d| d.to_string()).unwrap_or_default();
            disagreements.push(format!("{id}: expected {expected}, got {got}: {first}"));
        }
        if !expected {
            false_total += 1;
            let error = case["error"].as_str().unwrap_or("");
            let want = expected_rules(error);
            let ok = r.errors().any(|d| {
                let rule = d.rule.map(relax_ir::Rule::as_str).unwrap_or("");
                want.iter().any(|w| rule.starts_with(w))
            });
            if ok {
                false_right_rule += 1;
            } else {
                let rules: Vec<String> = r
                    .errors()
                    .map(|d| d.rule.map(|r| r.as_str().to_string()).unwrap_or_default())
                    .collect();
                wrong_rule.push(format!(
                    "{id}: TVM: {} | ours: {rules:?}",
                    error.lines().next().unwrap_or("")
                ));
            }
        }
    }
    eprintln!(
        "well_formed (faithful): {agree}/{total} verdicts agree, {} parse failures",
        parse_failures.len()
    );
    eprintln!("rejected cases with the right criterion: {false_right_rule}/{false_total}");
    for d in parse_failures.iter().chain(&disagreements).chain(&wrong_rule) {
        eprintln!("  {d}");
    }
    assert!(total >= 900, "expected the faithful cases, found {total}");
    assert!(agree * 100 >= total * 98, "verdict agreement {agree}/{total} below 98%");
    assert_eq!(
        false_right_rule, false_total,
        "every rejected case must name the right criterion"
    );
}
