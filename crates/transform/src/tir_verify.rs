//! The TIR verifier the pipeline runs after each pass (with the Relax
//! well-formedness check); see [`relax_ir::tir::verify`] for its rules (the
//! well-formedness check runs its undefined-variable rule too).

pub use relax_ir::tir::verify::{verify_module, verify_prim_func};
