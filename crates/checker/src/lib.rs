//! The static half of Relax: well-formedness, the normal form (ANF normalizer,
//! TVM's `BlockBuilder` normalization), `StructInfo` derivation with subtyping
//! and LUB, device consistency and the operator registry (purity +
//! `FInferStructInfo` + legalization, one place per operator).
//!
//! Module-to-module transforms (`LegalizeOps`, `RealizeVDevice`, ...) are in
//! `relax-transform`.

pub mod analysis;
pub mod check;
pub mod derive;
pub mod device;
pub mod normalize;
/// The operator library (the `relax-op` crate).
pub use relax_op as op;
pub mod well_formed;
