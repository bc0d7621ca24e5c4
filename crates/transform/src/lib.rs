//! Module-to-module passes over Relax programs and the pipeline that runs them.
//!
//! [`pass`] holds the infrastructure (named passes, [`Pipeline`] with timings and
//! well-formedness checks, the registry of passes by name and the default
//! pipeline); each other module is one pass ([`legalize`] is `LegalizeOps`, the
//! driver over the operators' legalizations in `relax_checker::op::legalize`;
//! [`realize_vdevice`] is `RealizeVDevice`). [`check_and_realize`] is the front
//! end's check: the checker's, with VDevices propagated.

pub mod attention;
pub mod bind_shapes;
pub mod call_tir_rewrite;
pub mod check;
pub mod dce;
pub mod decompose;
pub mod fold;
pub mod fuse_ops;
pub mod fuse_tir;
pub mod host_dispatch;
pub mod legalize;
pub mod lenient;
pub mod pass;
pub mod pattern;
pub mod realize_vdevice;
pub mod simplify;
pub mod static_plan;
pub mod tir_verify;

pub use check::check_and_realize;
pub use pass::{default_pipeline, lookup, pass_fn, registered_passes, Pass, PassError, PassTiming, Pipeline};
