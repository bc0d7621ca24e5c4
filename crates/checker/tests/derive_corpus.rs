//! Derivation through the whole pipeline on `op_struct_info.jsonl` (the
//! StructInfo of `gv` in each synthesized module, or an error), and robustness:
//! `check_module` never fails internally on any parseable corpus text.

mod common;

use relax_checker::check::check_module;
use relax_ir::text::{parse, print_struct_info};

fn annotation_of_gv(module: &relax_ir::IRModule) -> Option<relax_ir::StructInfo> {
    let f = module.relax_function("main")?;
    let relax_ir::ExprKind::Seq(seq) = f.body.kind() else {
        return None;
    };
    seq.blocks
        .iter()
        .flat_map(|b| b.bindings.iter())
        .find(|b| b.var().name() == "gv")?
        .var()
        .struct_info()
        .cloned()
}

#[test]
fn op_struct_info_through_check_module() {
    let Some(cases) = common::corpus_lines("op_struct_info.jsonl") else {
        return;
    };
    let (mut total, mut agree) = (0, 0);
    let mut internal = Vec::new();
    let mut report = Vec::new();
    for case in &cases {
        if case["faithful"].as_bool() != Some(true) {
            continue;
        }
        let id = case["id"].as_str().unwrap_or("?");
        let Some(input) = case["input"].as_str() else { continue };
        let Ok(program) = parse(input) else { continue };
        let r = check_module(&program.into_module());
        if r.diagnostics
            .iter()
            .any(|d| d.rule.map(relax_ir::Rule::as_str) == Some("internal"))
        {
            internal.push(id.to_string());
        }
        let expected = case["expected"].as_str().unwrap_or("");
        total += 1;
        if expected == "error" {
            if !r.is_valid() {
                agree += 1;
            } else {
                report.push(format!("{id}: TVM rejects, we accept"));
            }
            continue;
        }
        // Compared as printed (shape variables by name), each inside its module.
        let want = case["expected_module"]
            .as_str()
            .and_then(|t| parse(t).ok())
            .and_then(|p| {
                let m = p.into_module();
                annotation_of_gv(&m).map(|s| print_struct_info(&s, Some(&m)))
            });
        let got = r
            .bindings
            .iter()
            .find(|b| b.function == "main" && b.var == "gv")
            .map(|b| print_struct_info(&b.struct_info, Some(&r.module)));
        match (want, got) {
            (Some(w), Some(g)) if r.is_valid() && w == g => agree += 1,
            (w, g) => report.push(format!(
                "{id}: want {w:?}, got {g:?}, errors {:?}",
                r.errors().map(|d| d.message.clone()).collect::<Vec<_>>()
            )),
        }
    }
    assert!(internal.is_empty(), "internal failures: {internal:?}");
    assert!(total > 2000, "expected the faithful cases, found {total}");
    common::assert_agreement("op_struct_info via check_module", agree, total, &report, 90);
}

#[test]
fn never_fails_internally_on_parser_corpus() {
    let Some(cases) = common::corpus_lines("parser.jsonl") else {
        return;
    };
    let mut checked = 0;
    let mut internal = Vec::new();
    for case in &cases {
        let Some(input) = case["input"].as_str() else { continue };
        let Ok(program) = parse(input) else { continue };
        let r = check_module(&program.into_module());
        checked += 1;
        if let Some(d) = r
            .diagnostics
            .iter()
            .find(|d| d.rule.map(relax_ir::Rule::as_str) == Some("internal"))
        {
            internal.push(format!("{}: {}", case["id"], d.message));
        }
    }
    eprintln!(
        "parser corpus: {checked} programs checked, {} internal failures",
        internal.len()
    );
    assert!(checked > 1000);
    assert!(internal.is_empty(), "{internal:#?}");
}
