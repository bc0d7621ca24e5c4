//! Operators defined one file each: attributes, StructInfo inference,
//! legalization and the [`OpDef`](super::OpDef) registering them (see
//! `docs/operators.md`).

pub mod attention;
pub mod dynamic_strided_slice;
pub mod grid_sample;
pub mod index_tensor;
pub mod qdq;
pub mod resize2d;
pub mod roi_align;
pub mod scatter_elements;
pub mod scatter_nd;
pub mod slice_scatter;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_attention;
