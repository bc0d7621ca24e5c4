//! Bounded fuzzing of the parser and the checker: mutated corpus programs and random
//! token soups go through `parse` + `check_and_realize` in-process, which must never panic.
//!
//! The case count is fixed so the test takes a few seconds. A panic is reported with
//! the input that caused it (proptest then shrinks it). Known panics, if any, are
//! listed in `KNOWN_PANICS` (message substrings) and reported instead of failing.

mod common;

use std::path::PathBuf;

use proptest::prelude::*;
use relax_ir::text::parse;
use relax_transform::check_and_realize;

/// Panic messages known to be reachable (bugs reported, not hidden): (substring, note).
const KNOWN_PANICS: &[(&str, &str)] = &[];

/// Tokens that random soups and insertions draw from.
const TOKENS: &[&str] = &[
    "@R.function",
    "@T.prim_func",
    "@I.ir_module",
    "class Module:",
    "def main(",
    "def f(",
    "x",
    "y",
    ": R.Tensor((2, 3), \"float32\")",
    "R.Tensor(",
    "R.Tuple(",
    "R.Shape(",
    "R.Prim(",
    "R.Object",
    "\"float32\"",
    "\"int64\"",
    "(",
    ")",
    "[",
    "]",
    ",",
    ":",
    "=",
    "->",
    "return",
    "with R.dataflow():",
    "R.output(",
    "R.add(",
    "R.matmul(",
    "R.call_tir(",
    "R.match_cast(",
    "R.shape(",
    "if",
    "else:",
    "T.int64(",
    "T.Buffer(",
    "T.grid(",
    "for i in",
    "T.sblock(",
    "B[i] = A[i]",
    "n",
    "\"n\"",
    "-1",
    "0",
    "3",
    "4294967296",
    "9223372036854775807",
    "1e400",
    "\n",
    "\n    ",
    "\n        ",
    "    ",
    "#",
    "\\",
    "'",
    "\"",
    "cls.",
    "metadata[\"relax.expr.Constant\"][0]",
    "R.const(",
    "dtype=",
    "axis=",
    "...",
];

/// Seed programs: the test fixtures, plus up to 200 corpus inputs when the corpus is present.
fn seeds() -> Vec<String> {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut out: Vec<String> = ["add_one.py", "valid.py", "invalid.py", "parse_error.py"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(data.join(f)).ok())
        .collect();
    match common::corpus_inputs(&["well_formed.jsonl", "normalize.jsonl", "parser.jsonl"], 3, 70) {
        Some(inputs) => out.extend(inputs),
        None => eprintln!("fuzz_parse_check: corpus not found (set RELAX_CORPUS_DIR); fuzzing fixtures only"),
    }
    out
}

/// Parse and check `text` on a thread of its own; `Err(message)` if either panicked.
fn parse_and_check(text: &str) -> Result<(), String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Ok(p) = parse(text) {
                let _ = check_and_realize(&p.into_module());
            }
        })
        .join()
    })
    .map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "<non-string panic>".into())
    })
}

fn assert_no_panic(text: &str) -> Result<(), TestCaseError> {
    match parse_and_check(text) {
        Ok(()) => Ok(()),
        Err(msg) => {
            if let Some((_, note)) = KNOWN_PANICS.iter().find(|(k, _)| msg.contains(k)) {
                eprintln!("KNOWN PANIC ({note}): {msg}\ninput:\n{text}");
                return Ok(());
            }
            Err(TestCaseError::fail(format!(
                "parse+check panicked: {msg}\n--- input ---\n{text}\n---"
            )))
        }
    }
}

/// A mutation of a text at a relative position.
#[derive(Debug, Clone)]
enum Mutation {
    Delete(f64, usize),
    Duplicate(f64, usize),
    Insert(f64, usize),
    Truncate(f64),
    SwapLines(f64, f64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0.0..1.0f64, 1..40usize).prop_map(|(p, n)| Mutation::Delete(p, n)),
        (0.0..1.0f64, 1..40usize).prop_map(|(p, n)| Mutation::Duplicate(p, n)),
        (0.0..1.0f64, 0..TOKENS.len()).prop_map(|(p, t)| Mutation::Insert(p, t)),
        (0.0..1.0f64).prop_map(Mutation::Truncate),
        (0.0..1.0f64, 0.0..1.0f64).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
    ]
}

/// The char boundary nearest below `p * len`.
fn at(s: &str, p: f64) -> usize {
    let mut i = ((s.len() as f64) * p) as usize;
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i.min(s.len())
}

fn end_at(s: &str, start: usize, n: usize) -> usize {
    let mut e = (start + n).min(s.len());
    while e < s.len() && !s.is_char_boundary(e) {
        e += 1;
    }
    e
}

fn apply(mut s: String, m: &Mutation) -> String {
    match *m {
        Mutation::Delete(p, n) => {
            let a = at(&s, p);
            let b = end_at(&s, a, n);
            s.replace_range(a..b, "");
        }
        Mutation::Duplicate(p, n) => {
            let a = at(&s, p);
            let b = end_at(&s, a, n);
            let piece = s[a..b].to_string();
            s.insert_str(b, &piece);
        }
        Mutation::Insert(p, t) => {
            let a = at(&s, p);
            s.insert_str(a, TOKENS[t]);
        }
        Mutation::Truncate(p) => {
            let a = at(&s, p);
            s.truncate(a);
        }
        Mutation::SwapLines(a, b) => {
            let mut lines: Vec<&str> = s.lines().collect();
            if !lines.is_empty() {
                let n = lines.len();
                let (i, j) = (((n as f64) * a) as usize % n, ((n as f64) * b) as usize % n);
                lines.swap(i, j);
            }
            s = lines.join("\n");
        }
    }
    s
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        max_shrink_iters: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

#[test]
fn seeds_do_not_panic() {
    let seeds = seeds();
    assert!(!seeds.is_empty());
    let failures: Vec<String> = seeds
        .iter()
        .filter_map(|s| parse_and_check(s).err().map(|m| format!("{m}\n--- input ---\n{s}")))
        .collect();
    assert!(
        failures.is_empty(),
        "panics on seed programs:\n{}",
        failures.join("\n\n")
    );
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn mutated_programs_do_not_panic(seed in any::<prop::sample::Index>(), muts in prop::collection::vec(mutation(), 1..6)) {
        let seeds = SEEDS.with(|s| s.clone());
        let base = seeds[seed.index(seeds.len())].clone();
        let text = muts.iter().fold(base, apply);
        assert_no_panic(&text)?;
    }

    #[test]
    fn token_soups_do_not_panic(tokens in prop::collection::vec(0..TOKENS.len(), 0..60)) {
        let text: String = tokens.iter().map(|&t| TOKENS[t]).collect::<Vec<_>>().join(" ");
        assert_no_panic(&text)?;
    }
}

thread_local! {
    static SEEDS: std::rc::Rc<Vec<String>> = std::rc::Rc::new(seeds());
}
