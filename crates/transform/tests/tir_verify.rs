//! The TIR verifier: it accepts every PrimFunc TVM itself printed in the corpus
//! (legalization outputs, faithful parser cases), and rejects broken PrimFuncs with
//! the rule violated.

use std::path::PathBuf;

use relax_ir::IRModule;
use relax_transform::tir_verify::verify_module;

fn parse(src: &str) -> Option<IRModule> {
    relax_ir::text::parse(src).ok().map(|p| p.into_module())
}

fn corpus_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/tvm");
    dir.join("legalize.jsonl").exists().then_some(dir)
}

#[test]
fn tvm_printed_prim_funcs_verify() {
    let Some(dir) = corpus_dir() else {
        eprintln!("corpus not found: skipped (needs ../shared/corpus/tvm)");
        return;
    };
    let mut funcs = 0;
    let mut failures = Vec::new();
    for (file, field) in [("legalize.jsonl", "expected"), ("parser.jsonl", "input")] {
        let text = std::fs::read_to_string(dir.join(file)).expect("read corpus");
        for line in text.lines() {
            let case: serde_json::Value = serde_json::from_str(line).expect("json");
            // Cases whose printing TVM cannot read back (a name clash) say nothing.
            if case.get("faithful").and_then(|v| v.as_bool()) == Some(false) {
                continue;
            }
            let Some(src) = case.get(field).and_then(|v| v.as_str()) else {
                continue;
            };
            let Some(m) = parse(src) else { continue };
            funcs += m
                .functions
                .values()
                .filter(|f| matches!(f, relax_ir::BaseFunc::Prim(_)))
                .count();
            let errors = verify_module(&m);
            if !errors.is_empty() {
                failures.push(format!("{}: {}", case["id"], errors[0].message));
            }
        }
    }
    eprintln!(
        "TIR verifier: {funcs} PrimFuncs from the corpus, {} modules rejected",
        failures.len()
    );
    assert!(funcs > 300, "only {funcs} PrimFuncs");
    assert!(
        failures.is_empty(),
        "{} rejected, e.g. {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

fn rules(src: &str) -> Vec<String> {
    let m = parse(src).unwrap_or_else(|| panic!("parse\n{src}"));
    verify_module(&m)
        .into_iter()
        .map(|d| {
            format!(
                "{}: {}",
                d.rule.map(relax_ir::Rule::as_str).unwrap_or_default(),
                d.message
            )
        })
        .collect()
}

#[test]
fn broken_prim_funcs_are_rejected() {
    // A loop variable used after its loop.
    let e = rules(
        "@I.ir_module\nclass Module:\n    @T.prim_func\n    def f(a: T.Buffer((4,), \"float32\")):\n        for i in range(4):\n            a[i] = T.float32(0)\n        for j in range(4):\n            a[j] = T.float32(1)\n",
    );
    assert!(e.is_empty(), "{e:?}");
    let m = parse("@I.ir_module\nclass Module:\n    @T.prim_func\n    def f(a: T.Buffer((4, 4), \"float32\")):\n        for i, j in T.grid(4, 4):\n            a[i, j] = T.float32(0)\n")
        .expect("parse");
    // Break it: drop the inner loop (its variable is then undefined) and an index.
    let relax_ir::BaseFunc::Prim(f) = m.functions.values().next().expect("func").clone() else {
        panic!("not a PrimFunc")
    };
    let relax_ir::tir::Stmt::For(relax_ir::tir::For { body: outer_body, .. }) = &f.body else {
        panic!("{:?}", f.body)
    };
    let relax_ir::tir::Stmt::For(relax_ir::tir::For { body: inner, .. }) = &**outer_body else {
        panic!("inner")
    };
    let mut g = f.clone();
    g.body = (**inner).clone();
    let e = relax_transform::tir_verify::verify_prim_func("f", &g);
    assert!(
        e.iter()
            .any(|d| d.rule.map(relax_ir::Rule::as_str) == Some("tir/undefined-var") && d.message.contains("`i`")),
        "{e:?}"
    );
    let mut h = f.clone();
    h.body = (**inner).clone();
    let relax_ir::tir::Stmt::BufferStore { indices, .. } = &mut h.body else {
        panic!("store")
    };
    *indices = vec![relax_ir::PrimExpr::int(0)];
    let e = relax_transform::tir_verify::verify_prim_func("f", &h);
    assert!(
        e.iter()
            .any(|d| d.rule.map(relax_ir::Rule::as_str) == Some("tir/index-arity")),
        "{e:?}"
    );
    // The same loop variable defined twice.
    let relax_ir::tir::Stmt::For(outer) = &f.body else {
        panic!("outer")
    };
    let twice = relax_ir::tir::Stmt::For(outer.with_body(f.body.clone()));
    let mut t = f.clone();
    t.body = twice;
    let e = relax_transform::tir_verify::verify_prim_func("f", &t);
    assert!(
        e.iter()
            .any(|d| d.rule.map(relax_ir::Rule::as_str) == Some("tir/loop-var-redefined")),
        "{e:?}"
    );
}
