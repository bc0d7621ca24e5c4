//! `static-plan-block-memory` and `call-tir-rewrite` against TVM 0.27
//! (`tests/data/static_plan_oracle.jsonl`, made by `scripts/static_plan_oracle.py`
//! from TVM's own tests of the two passes): each module TVM's pass was applied to is
//! parsed, run through our pass, and compared structurally with TVM's output. Where
//! TVM rejected the module, our pass must fail too. Cases our parser cannot read
//! are counted and listed.

mod common;

use relax_ir::structural::StructuralEqual;
use relax_ir::IRModule;
use relax_transform::{lookup, Pipeline};

struct Record {
    test: String,
    pass: String,
    input: String,
    output: Option<String>,
}

fn records() -> Vec<Record> {
    common::jsonl_records("static_plan_oracle.jsonl")
        .into_iter()
        .map(|v| {
            let s = |k: &str| v[k].as_str().map(str::to_string);
            Record {
                test: s("test").expect("test"),
                pass: s("pass").expect("pass"),
                input: s("input").expect("input"),
                output: s("output"),
            }
        })
        .collect()
}

fn parse(text: &str) -> Result<IRModule, String> {
    relax_ir::text::parse(text)
        .map(|p| p.into_module())
        .map_err(|e| format!("{e:?}").chars().take(200).collect())
}

fn run(pass: &str, m: IRModule) -> Result<IRModule, String> {
    Pipeline::new()
        .verify(false)
        .with(lookup(pass).expect("registered"))
        .run(m)
        .map_err(|e| e.to_string())
}

#[derive(Default)]
struct Tally {
    total: usize,
    agree: usize,
    unparsed: Vec<String>,
    differ: Vec<String>,
}

fn tally(pass: &str) -> Tally {
    let mut t = Tally::default();
    for r in records().into_iter().filter(|r| r.pass == pass) {
        t.total += 1;
        let input = match parse(&r.input) {
            Ok(m) => m,
            Err(e) => {
                t.unparsed.push(format!("{} (input): {e}", r.test));
                continue;
            }
        };
        let ours = run(pass, input);
        match (&r.output, ours) {
            (None, Err(_)) => t.agree += 1,
            (None, Ok(_)) => t.differ.push(format!("{}: TVM rejects it, we do not", r.test)),
            (Some(_), Err(e)) => t.differ.push(format!("{}: our pass fails: {e}", r.test)),
            (Some(expected), Ok(ours)) => {
                let expected = match parse(expected) {
                    Ok(m) => m,
                    Err(e) => {
                        t.unparsed.push(format!("{} (output): {e}", r.test));
                        continue;
                    }
                };
                // Both sides normalized where our normalizer accepts them (annotations
                // the printer adds are then filled in on ours too); as parsed otherwise.
                let (ours, expected) = match (run("normalize", ours.clone()), run("normalize", expected.clone())) {
                    (Ok(a), Ok(b)) => (a, b),
                    _ => (ours, expected),
                };
                match StructuralEqual::new().module(&ours, &expected) {
                    Ok(()) => t.agree += 1,
                    Err(m) => t.differ.push(format!(
                        "{}: {m:?}\n--- ours:\n{}",
                        r.test,
                        relax_ir::text::print_program(&relax_ir::text::Program::Module(ours.clone()))
                    )),
                }
            }
        }
    }
    eprintln!(
        "{pass}: {} of {} agree with TVM 0.27; unparsed {}: {:#?}; differ {}: {:#?}",
        t.agree,
        t.total,
        t.unparsed.len(),
        t.unparsed,
        t.differ.len(),
        t.differ
    );
    t
}

#[test]
fn static_plan_block_memory_agrees_with_tvm() {
    let t = tally("static-plan-block-memory");
    assert!(t.total >= 28, "oracle cases: {}", t.total);
    // `test_view` uses `R.memory.view`, which our parser does not know.
    assert!(t.unparsed.len() <= 1, "unparsed: {:?}", t.unparsed);
    assert!(t.agree >= 27, "{} of {} agree (measured: 27 of 28)", t.agree, t.total);
}

#[test]
fn call_tir_rewrite_agrees_with_tvm() {
    let t = tally("call-tir-rewrite");
    assert!(t.total >= 7, "oracle cases: {}", t.total);
    assert!(t.agree >= 7, "{} of {} agree (measured: 7 of 7)", t.agree, t.total);
}
