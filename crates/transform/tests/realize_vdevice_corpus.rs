//! `realize_vdevice.jsonl`: TVM's `RealizeVDevice` outputs. The input is parsed (without
//! normalization), run through RealizeVDevice, printed, and compared with the printed parse of
//! TVM's output.

#[path = "../../checker/tests/common/mod.rs"]
mod common;

use relax_transform::realize_vdevice::realize_vdevice;

#[test]
fn realize_vdevice_corpus_agreement() {
    common::assert_pass_agrees("realize_vdevice.jsonl", 15, |m| realize_vdevice(m).module);
}
