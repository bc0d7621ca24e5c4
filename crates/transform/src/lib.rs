//! Module-to-module passes over Relax programs and the pipeline that runs them.
//!
//! [`registry`] is the one definition of the passes ([`PassInfo`] rows) and of the
//! pipeline built from them for a [`PassContext`]; [`pass`] holds the
//! infrastructure (named passes, [`Pipeline`] with timings, instruments and
//! well-formedness checks); [`instrument`] has the IR dump; each other module is one pass ([`legalize`] is `LegalizeOps`, the
//! driver over the operators' legalizations in `relax_op::legalize`;
//! [`realize_vdevice`] is `RealizeVDevice`). [`check_and_realize`] is the front
//! end's check: the checker's, with VDevices propagated.

pub mod attention;
pub mod bind_shapes;
pub mod call_tir_rewrite;
pub mod check;
pub mod config;
pub mod dce;
pub mod decompose;
pub mod fold;
pub mod fuse_ops;
pub mod fuse_tir;
pub mod host_dispatch;
pub mod instrument;
pub mod legalize;
pub mod lenient;
pub mod pass;
pub mod pattern;
pub mod realize_vdevice;
pub mod registry;
mod safe_softmax;
pub mod simplify;
pub mod static_plan;
pub mod tir_verify;
pub mod transpose_matmul;

pub use check::check_and_realize;
pub use pass::{pass_fn, Pass, PassError, PassInstrument, PassTiming, Pipeline};
pub use registry::{
    build_pipeline, default_pipeline, lookup, lookup_in, named_pipeline, pass_info, registered_passes, PassContext,
    PassInfo,
};

/// Helpers of the passes' unit tests.
#[cfg(test)]
pub(crate) mod test_util {
    use relax_ir::{BaseFunc, Binding, ExprKind, IRModule};

    /// The bindings of `main`'s body, every block in order.
    pub fn main_bindings(m: &IRModule) -> Vec<Binding> {
        let Some(BaseFunc::Relax(f)) = m.get("main") else {
            panic!("no main")
        };
        let ExprKind::Seq(seq) = f.body.kind() else {
            panic!("not a sequence")
        };
        seq.blocks.iter().flat_map(|b| b.bindings.iter().cloned()).collect()
    }
}
