//! A time-bounded mutation fuzzer over the corpus (a small driver of our own, stable
//! Rust) with three targets on every mutated text:
//!
//! - `roundtrip`: parse, print, parse again, and compare the two modules structurally;
//! - `check`: parse then check;
//! - `wgsl`: normalize, legalize and emit WGSL (validated by naga) for every PrimFunc.
//!
//! A panic anywhere fails the test with the input. Round-trip mismatches and WGSL
//! errors are counted and reported, not failures (they are diagnostics). The budget is
//! `RELAX_FUZZ_SECS` seconds per target (default 8); `RELAX_FUZZ_SEED` picks the seed.
//! A long run: `RELAX_FUZZ_SECS=600 cargo test --release -p relax-cli --test fuzz_pipeline -- --nocapture`.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use relax_checker::normalize::normalize_module;
use relax_ir::structural::StructuralEqual;
use relax_ir::text::{parse, print_program, Program};
use relax_ir::BaseFunc;
use relax_jit::emit_program;
use relax_jit::{DeviceCaps, ScheduleOptions};
use relax_transform::check_and_realize;
use relax_transform::legalize::legalize_module;

#[path = "../../engine/tests/common/rng.rs"]
mod rng;
use rng::{env_or, Rng};

/// Fragments inserted by the mutator: numbers at the edges, operators, brackets.
const FRAGMENTS: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "-0.0",
    "1.5",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "1e400",
    "\"n\"",
    "n",
    "x",
    "(",
    ")",
    "[",
    "]",
    ",",
    " + ",
    " * ",
    " // ",
    " % ",
    "-",
    "R.add(",
    "R.reshape(",
    "R.shape([",
    "T.int64(",
    "\"float64\"",
    "\"bfloat16\"",
    "\"int8\"",
    "\"bool\"",
    "axis=-7",
    "ndim=3",
    "keepdims=True",
    "\n",
    "\n    ",
    "'",
    "\"",
    "\\",
    "None",
];

/// Seeds: the repository's examples and test fixtures, plus corpus inputs when present.
fn seeds() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for dir in ["examples/relax", "crates/cli/tests/data"] {
        if let Ok(rd) = std::fs::read_dir(root.join(dir)) {
            for e in rd.flatten() {
                if e.path().extension().is_some_and(|x| x == "py") {
                    if let Ok(s) = std::fs::read_to_string(e.path()) {
                        out.push(s);
                    }
                }
            }
        }
    }
    // The two-VDevice program the end-to-end tests run.
    if let Ok(s) = std::fs::read_to_string(root.join("tests/e2e/vdevice_two.py")) {
        out.push(s);
    }
    let files = [
        "legalize.jsonl",
        "op_struct_info.jsonl",
        "well_formed.jsonl",
        "parser.jsonl",
    ];
    if let Some(inputs) = common::corpus_inputs(&files, 7, 150) {
        out.extend(inputs);
    } else {
        eprintln!("fuzz_pipeline: corpus not found (set RELAX_CORPUS_DIR); fuzzing the examples only");
    }
    out
}

fn boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// One to three random edits of `s`.
fn mutate(rng: &mut Rng, s: &str) -> String {
    let mut s = s.to_string();
    for _ in 0..1 + rng.below(3) {
        let a = boundary(&s, rng.below(s.len() + 1));
        let b = boundary(&s, a + rng.below(24));
        match rng.below(5) {
            0 => s.replace_range(a..b.max(a), ""),
            1 => {
                let piece = s[a..b.max(a)].to_string();
                s.insert_str(b.max(a), &piece);
            }
            2 | 3 => s.insert_str(a, FRAGMENTS[rng.below(FRAGMENTS.len())]),
            _ => {
                // Replace a number-like token with an edge value.
                let f = FRAGMENTS[rng.below(10)];
                s.replace_range(a..b.max(a), f);
            }
        }
    }
    s
}

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "<non-string panic>".into())
}

#[derive(Default, Debug)]
struct Counts {
    execs: usize,
    parsed: usize,
    interesting: usize,
}

/// Run `target` on the mutated seeds that parse (the text and its program) for the
/// budget; panics fail with the input. Some inputs must have run and parsed.
fn fuzz(name: &str, salt: u64, target: &(dyn Fn(&str, Program, &mut Counts) + Sync)) {
    let secs: u64 = env_or("RELAX_FUZZ_SECS", 8);
    let seed: u64 = env_or("RELAX_FUZZ_SEED", 0x00f0_2217);
    let seeds = seeds();
    assert!(!seeds.is_empty(), "no seeds");
    // The loop runs on a thread of its own: a panic ends it and comes back from
    // `join`, and the input being run is the one last recorded in `current`.
    let current = std::sync::Mutex::new(String::new());
    let run = || {
        let mut rng = Rng((seed ^ salt) | 1);
        let mut counts = Counts::default();
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            let base = &seeds[rng.below(seeds.len())];
            let text = if counts.execs % 8 == 0 {
                base.clone()
            } else {
                mutate(&mut rng, base)
            };
            if let Ok(mut c) = current.lock() {
                c.clone_from(&text);
            }
            if let Ok(p) = parse(&text) {
                counts.parsed += 1;
                target(&text, p, &mut counts);
            }
            counts.execs += 1;
        }
        counts
    };
    let counts = match std::thread::scope(|s| s.spawn(run).join()) {
        Ok(counts) => counts,
        Err(e) => {
            let text = current.lock().map(|t| t.clone()).unwrap_or_default();
            panic!(
                "fuzz target `{name}` panicked: {}\n--- input ---\n{text}\n---",
                panic_message(e)
            );
        }
    };
    eprintln!("fuzz {name}: {counts:?}");
    assert!(counts.execs > 0 && counts.parsed > 0);
}

/// With `RELAX_FUZZ_DUMP=DIR`, write a round-trip mismatch (the input, the printed
/// text and why they differ) into DIR, for finding its class.
fn dump_mismatch(k: usize, text: &str, printed: &str, why: &str) {
    if let Some(dir) = std::env::var_os("RELAX_FUZZ_DUMP").map(PathBuf::from) {
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(
            dir.join(format!("rt{k}.txt")),
            format!("{why}\n=== input ===\n{text}\n=== printed ===\n{printed}"),
        );
    }
}

#[test]
fn fuzz_parse_print_parse_roundtrip() {
    fuzz("roundtrip", 1, &|text, p, c| {
        let printed = print_program(&p);
        let again = match parse(&printed) {
            Ok(a) => a,
            Err(d) => {
                c.interesting += 1; // printed text that does not re-parse
                dump_mismatch(c.interesting, text, &printed, &d.message);
                return;
            }
        };
        if let Err(e) = StructuralEqual::new()
            .map_free_vars(true)
            .module(&p.into_module(), &again.into_module())
        {
            c.interesting += 1;
            dump_mismatch(c.interesting, text, &printed, &format!("{e:?}"));
        }
    });
}

#[test]
fn fuzz_parse_check() {
    fuzz("check", 2, &|_, p, c| {
        let r = check_and_realize(&p.into_module());
        if r.is_valid() {
            c.interesting += 1;
        }
    });
}

#[test]
fn fuzz_legalize_wgsl() {
    fuzz("wgsl", 3, &|_, p, c| {
        let n = normalize_module(&p.into_module());
        if n.diagnostics.iter().any(|d| d.is_error()) {
            return;
        }
        let Ok(m) = legalize_module(&n.module) else { return };
        for (_, f) in m.functions.iter() {
            if let BaseFunc::Prim(pf) = f {
                if emit_program(pf, &DeviceCaps::ALL, &ScheduleOptions::default()).is_ok() {
                    c.interesting += 1;
                }
            }
        }
    });
}
