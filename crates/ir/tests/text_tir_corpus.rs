//! Corpus test: every `@T.prim_func` printed by TVM 0.27 in the conformance corpus
//! (`legalize.jsonl` inputs/outputs, `parser.jsonl` printed programs) parses, prints
//! back byte for byte, and printing is idempotent.

use std::collections::BTreeMap;
use std::path::PathBuf;

use relax_ir::span::LineIndex;
use relax_ir::text::parser::tir::parse_prim_func;
use relax_ir::text::printer::tir::print_prim_func;
use rustpython_parser::ast::{self, Ranged};
use rustpython_parser::Parse;

fn corpus_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("RELAX_CORPUS_DIR") {
        return Some(PathBuf::from(d));
    }
    let ws = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let d = ws.join("../shared/corpus/tvm");
    d.exists().then_some(d)
}

/// The source text of every `@T.prim_func` definition of `text` (dedented), with its name.
fn prim_funcs(text: &str) -> Vec<(String, String)> {
    let Ok(suite) = ast::Suite::parse(text, "<corpus>") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut defs: Vec<&ast::StmtFunctionDef> = Vec::new();
    for s in &suite {
        match s {
            ast::Stmt::ClassDef(c) => {
                for b in &c.body {
                    if let ast::Stmt::FunctionDef(f) = b {
                        defs.push(f);
                    }
                }
            }
            ast::Stmt::FunctionDef(f) => defs.push(f),
            _ => {}
        }
    }
    for f in defs {
        let is_prim = f.decorator_list.iter().any(|d| {
            let s = &text[d.start().to_usize()..d.end().to_usize()];
            s.starts_with("T.prim_func")
        });
        if !is_prim {
            continue;
        }
        let start = f
            .decorator_list
            .iter()
            .map(|d| d.start().to_usize())
            .min()
            .unwrap_or(f.start().to_usize());
        let line_start = text[..start].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let end = f.end().to_usize();
        let line_end = text[end..].find('\n').map(|i| end + i).unwrap_or(text.len());
        let seg = &text[line_start..line_end];
        let ind = seg.len() - seg.trim_start().len();
        let mut ded = String::new();
        for l in seg.lines() {
            ded.push_str(l.get(ind..).unwrap_or(l.trim_start()));
            ded.push('\n');
        }
        out.push((f.name.to_string(), ded));
    }
    out
}

/// Parse a standalone function text and print it again.
fn roundtrip(name: &str, text: &str) -> Result<String, String> {
    let suite = ast::Suite::parse(text, "<fn>").map_err(|e| format!("python syntax: {e}"))?;
    let Some(ast::Stmt::FunctionDef(def)) = suite.first() else {
        return Err("no function".into());
    };
    let lines = LineIndex::new(text);
    let f = parse_prim_func(def, &lines).map_err(|d| format!("parse: {d}"))?;
    let mut out = String::new();
    print_prim_func(name, &f, 0, &mut out);
    Ok(out)
}

/// `parse(text)` and `parse(print(parse(text)))` are structurally equal.
fn structurally_stable(text: &str, printed: &str) -> Result<(), String> {
    let parse = |t: &str| -> Result<relax_ir::tir::PrimFunc, String> {
        let suite = ast::Suite::parse(t, "<fn>").map_err(|e| e.to_string())?;
        let Some(ast::Stmt::FunctionDef(def)) = suite.first() else {
            return Err("no function".into());
        };
        parse_prim_func(def, &LineIndex::new(t)).map_err(|d| d.to_string())
    };
    let (a, b) = (parse(text)?, parse(printed)?);
    relax_ir::structural::StructuralEqual::new()
        .map_free_vars(true)
        .prim_func(&a, &b)
        .map_err(|m| format!("{m:?}").chars().take(300).collect())
}

fn first_diff(a: &str, b: &str) -> String {
    for (x, y) in a.lines().zip(b.lines()) {
        if x != y {
            return format!("\n  want: {x}\n  got:  {y}");
        }
    }
    format!(
        "\n  (length differs: {} vs {} lines)",
        a.lines().count(),
        b.lines().count()
    )
}

/// Round-trip outcomes: passes, and failures grouped by cause with their case ids.
#[derive(Default)]
struct Tally {
    ok: usize,
    total: usize,
    failures: BTreeMap<String, Vec<String>>,
}

impl Tally {
    fn record(&mut self, id: &str, outcome: Result<(), String>) {
        self.total += 1;
        match outcome {
            Ok(()) => self.ok += 1,
            Err(cause) => self.failures.entry(cause).or_default().push(id.to_string()),
        }
    }

    /// Print the rate and each cause with up to three examples; returns the rate.
    fn report(&self, what: &str) -> f64 {
        let rate = self.ok as f64 / self.total.max(1) as f64;
        eprintln!("{what}: {}/{} = {:.2}%", self.ok, self.total, rate * 100.0);
        for (cause, ids) in &self.failures {
            eprintln!("[{}] {cause}\n  e.g. {}", ids.len(), ids[..ids.len().min(3)].join(", "));
        }
        rate
    }
}

/// The lines of corpus file `file` as JSON values (`None`, said on stderr, when absent).
fn corpus_lines(file: &str) -> Option<Vec<serde_json::Value>> {
    let Some(dir) = corpus_dir() else {
        eprintln!("corpus not found (set RELAX_CORPUS_DIR); {file} not checked");
        return None;
    };
    let Ok(data) = std::fs::read_to_string(dir.join(file)) else {
        eprintln!("{file} missing; not checked");
        return None;
    };
    Some(data.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}

/// `printed` parses, prints back as itself, and the re-parse is structurally equal.
fn stable_round_trip(name: &str, text: &str) -> Result<(), String> {
    let printed = roundtrip(name, text).map_err(|e| format!("error: {e}"))?;
    if printed != text {
        return Err(format!("differs:{}", first_diff(text, &printed)));
    }
    let again = roundtrip(name, &printed).map_err(|e| format!("reparse error: {e}"))?;
    if again != printed {
        return Err(format!("not idempotent:{}", first_diff(&printed, &again)));
    }
    structurally_stable(text, &printed).map_err(|e| format!("re-parse not structurally equal: {e}"))
}

#[test]
fn corpus_prim_funcs_roundtrip() {
    let mut funcs: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (file, keys) in [
        ("legalize.jsonl", &["input", "expected"][..]),
        ("parser.jsonl", &["input", "expected_printed"][..]),
    ] {
        for v in corpus_lines(file).unwrap_or_default() {
            let id = v["id"].as_str().unwrap_or("?").to_string();
            let kind = v["kind"].as_str().unwrap_or("");
            for k in keys {
                // Hand-written sources are not TVM's printed text.
                if file == "parser.jsonl" && *k == "input" && kind != "printed" {
                    continue;
                }
                if let Some(t) = v[*k].as_str() {
                    for (name, f) in prim_funcs(t) {
                        funcs.entry(f.clone()).or_insert((format!("{id}:{k}"), name));
                    }
                }
            }
        }
    }
    if funcs.is_empty() && corpus_dir().is_none() {
        return;
    }
    let mut tally = Tally::default();
    for (text, (id, name)) in &funcs {
        tally.record(id, stable_round_trip(name, text));
    }
    let rate = tally.report("T.prim_func corpus round trip");
    assert!(tally.total > 0, "no T.prim_func found in the corpus");
    assert!(rate >= 0.98, "round-trip rate {:.2}% below 98%", rate * 100.0);
}

/// Hand-written `@T.prim_func` sources of `parser.jsonl` (`kind: source`): parsing
/// and printing reproduces TVM's printed form of the same function.
#[test]
fn corpus_prim_func_sources_print_like_tvm() {
    let Some(lines) = corpus_lines("parser.jsonl") else {
        return;
    };
    let mut seen = std::collections::HashSet::new();
    let mut tally = Tally::default();
    for v in lines {
        if v["kind"].as_str() != Some("source") {
            continue;
        }
        let (Some(src), Some(printed)) = (v["input"].as_str(), v["expected_printed"].as_str()) else {
            continue;
        };
        let id = v["id"].as_str().unwrap_or("?");
        let want: BTreeMap<String, String> = prim_funcs(printed).into_iter().collect();
        for (name, text) in prim_funcs(src) {
            let Some(expected) = want.get(&name) else { continue };
            if !seen.insert(text.clone()) {
                continue;
            }
            let outcome = match roundtrip(&name, &text) {
                Ok(p) if p == *expected => Ok(()),
                Ok(p) => Err(format!("differs:{}", first_diff(expected, &p))),
                Err(e) => Err(format!("error: {e}")),
            };
            tally.record(id, outcome);
        }
    }
    let rate = tally.report("T.prim_func sources printed like TVM");
    assert!(tally.total > 0, "no hand-written T.prim_func found");
    assert!(rate >= 0.95, "source printing rate {:.2}% below 95%", rate * 100.0);
}
