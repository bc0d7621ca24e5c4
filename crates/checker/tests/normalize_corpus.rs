//! `normalize.jsonl`: TVM's `Normalize` outputs. The input is parsed (without
//! normalization), normalized, printed, and compared with the printed parse of
//! TVM's output.

mod common;

use relax_checker::normalize::normalize_module;

#[test]
fn normalize_corpus_agreement() {
    common::assert_pass_agrees("normalize.jsonl", 20, |m| normalize_module(m).module);
}
