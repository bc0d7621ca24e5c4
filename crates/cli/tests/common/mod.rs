//! Helpers shared by the tests (the fuzz tests' corpus, `.npy` bytes).
#![allow(dead_code)]

use std::path::PathBuf;

/// The TVM corpus: `RELAX_CORPUS_DIR`, else the shared corpus next to the repository
/// when it is there.
pub fn corpus_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("RELAX_CORPUS_DIR") {
        return Some(PathBuf::from(d));
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/tvm");
    p.exists().then_some(p)
}

/// The `input` programs of every `step`-th record (at most `take`) of each corpus
/// file in `files`; `None` when the corpus is absent.
pub fn corpus_inputs(files: &[&str], step: usize, take: usize) -> Option<Vec<String>> {
    let dir = corpus_dir()?;
    let mut out = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(dir.join(file)) else {
            continue;
        };
        for line in text.lines().step_by(step).take(take) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                if let Some(s) = v.get("input").and_then(|i| i.as_str()) {
                    out.push(s.to_string());
                }
            }
        }
    }
    Some(out)
}

/// The standard output of a finished command, as text.
pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The standard error of a finished command, as text.
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[path = "files.rs"]
mod files;
#[path = "../../../ir/tests/common/texts.rs"]
pub mod texts;
#[allow(unused_imports)]
pub use files::{header, npy_bytes, zip_bytes};
#[path = "scratch.rs"]
mod scratch;
#[allow(unused_imports)]
pub use scratch::Scratch;
