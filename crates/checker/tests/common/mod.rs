//! Shared helpers of the checker's integration tests.

#![allow(dead_code)]

pub mod type_text;

use std::path::PathBuf;

/// The corpus directory: `RELAX_CORPUS_DIR`, else `shared/corpus/tvm` next to the
/// repository. `None` (with a message) when absent.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("RELAX_CORPUS_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/tvm"),
    };
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "corpus not found at {} (set RELAX_CORPUS_DIR): corpus test skipped, nothing checked",
            dir.display()
        );
        None
    }
}

/// The JSON lines of corpus file `name`.
pub fn corpus_lines(name: &str) -> Option<Vec<serde_json::Value>> {
    let dir = corpus_dir()?;
    let text = match std::fs::read_to_string(dir.join(name)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot read {name}: {e}: corpus test skipped, nothing checked");
            return None;
        }
    };
    Some(
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
    )
}
/// Prints `{label}: {agree}/{total} agree` with the first 30 disagreements,
/// then asserts that at least `min_percent` percent of the cases agree.
pub fn assert_agreement(label: &str, agree: usize, total: usize, disagreements: &[String], min_percent: usize) {
    eprintln!("{label}: {agree}/{total} agree");
    for d in disagreements.iter().take(30) {
        eprintln!("  disagree: {d}");
    }
    assert!(
        agree * 100 >= total * min_percent,
        "{label}: agreement {agree}/{total} below {min_percent}%"
    );
}

pub mod build;
#[path = "../../../ir/tests/common/relax_build.rs"]
pub mod relax_build;

/// Agreement of a module pass with TVM's outputs in a pass corpus file
/// (`normalize.jsonl`, `realize_vdevice.jsonl`): each input is parsed, run through
/// `pass`, printed, and compared with the printed parse of TVM's `expected`.
pub struct PassAgreement {
    /// Cases with a non-error expected output.
    pub total: usize,
    /// Of those, how many agree.
    pub agree: usize,
    /// Faithful cases.
    pub faithful: usize,
    /// Faithful cases that agree.
    pub faithful_agree: usize,
}

/// Asserts that `pass` agrees with TVM on every faithful case of corpus `file`,
/// which holds at least `min_cases` cases (nothing is checked without the corpus).
pub fn assert_pass_agrees(file: &str, min_cases: usize, pass: impl Fn(&relax_ir::IRModule) -> relax_ir::IRModule) {
    let Some(r) = pass_agreement(file, pass) else {
        return;
    };
    let what = file.trim_end_matches(".jsonl");
    assert!(r.total >= min_cases, "expected the {what} cases, found {}", r.total);
    assert_eq!(r.faithful_agree, r.faithful, "every faithful case must agree");
}

/// Run `pass` over every case of `file` and print the per-case report; `None`
/// when the corpus is absent.
pub fn pass_agreement(file: &str, pass: impl Fn(&relax_ir::IRModule) -> relax_ir::IRModule) -> Option<PassAgreement> {
    use relax_ir::text::{parse, print_program, Program};
    let canonical = |text: &str| -> Result<String, String> {
        let m = parse(text).map_err(|d| d.to_string())?.into_module();
        Ok(print_program(&Program::Module(m)))
    };
    let cases = corpus_lines(file)?;
    let mut r = PassAgreement {
        total: 0,
        agree: 0,
        faithful: 0,
        faithful_agree: 0,
    };
    let mut report = Vec::new();
    for case in &cases {
        let id = case["id"].as_str().unwrap_or("?");
        let (Some(input), Some(expected)) = (case["input"].as_str(), case["expected"].as_str()) else {
            continue;
        };
        if expected == "error" {
            continue;
        }
        r.total += 1;
        let is_faithful = case["faithful"].as_bool() == Some(true);
        r.faithful += is_faithful as usize;
        let module = match parse(input) {
            Ok(p) => p.into_module(),
            Err(d) => {
                report.push(format!("{id}: input does not parse: {d}"));
                continue;
            }
        };
        let got = print_program(&Program::Module(pass(&module)));
        match canonical(expected) {
            Ok(want) if want == got => {
                r.agree += 1;
                r.faithful_agree += is_faithful as usize;
            }
            Ok(want) => report.push(format!("{id}: differs\n--- want\n{want}\n--- got\n{got}")),
            Err(e) => report.push(format!("{id}: expected output does not parse: {e}")),
        }
    }
    eprintln!(
        "{file}: {}/{} outputs agree ({}/{} faithful)",
        r.agree, r.total, r.faithful_agree, r.faithful
    );
    for line in &report {
        eprintln!("  {line}");
    }
    Some(r)
}
