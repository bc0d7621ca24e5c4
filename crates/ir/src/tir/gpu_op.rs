//! GPU-specific operations that the JIT's schedules emit into a kernel's TIR and
//! its WGSL emitter renders (TVM has its own, `tvm_warp_shuffle_xor` and the like).
//! A TIR call holds one as [`CallOp::Gpu`](super::CallOp::Gpu); the text format
//! writes it by [`GpuOp::name`].

use super::{BinOp, PrimExpr};
use crate::DataType;

/// The combiner of a subgroup reduction ([`GpuOp::SubgroupReduce`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubgroupReduce {
    /// Sum.
    Add,
    /// Product.
    Mul,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
}

impl SubgroupReduce {
    /// The subgroup reduction combining with `op`, when there is one.
    pub fn of(op: BinOp) -> Option<SubgroupReduce> {
        Some(match op {
            BinOp::Add => SubgroupReduce::Add,
            BinOp::Mul => SubgroupReduce::Mul,
            BinOp::Max => SubgroupReduce::Max,
            BinOp::Min => SubgroupReduce::Min,
            _ => return None,
        })
    }
}

/// A GPU-specific operation of a scheduled kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuOp {
    /// The statement `Evaluate(call(VLoad4, int32, [dst[off], src[i4]]))`:
    /// `dst[off + l] = src[4 * i4 + l]` for `l` in 0..4, one `vec4` load from a
    /// float32 tensor whose element count is a multiple of 4 (`dst` a local buffer).
    VLoad4,
    /// `call(SubgroupReduce(c), dtype, [value])`: the combination of `value` over
    /// the active lanes of the calling subgroup (`float32`, `int32`, `uint32`).
    SubgroupReduce(SubgroupReduce),
    /// `call(SubgroupShuffleXor, dtype, [value, mask])` (`mask` a constant): `value`
    /// of the lane whose subgroup invocation id is the caller's xor `mask`.
    SubgroupShuffleXor,
}

/// Every operation, for reading names back.
const ALL: [GpuOp; 6] = [
    GpuOp::VLoad4,
    GpuOp::SubgroupReduce(SubgroupReduce::Add),
    GpuOp::SubgroupReduce(SubgroupReduce::Mul),
    GpuOp::SubgroupReduce(SubgroupReduce::Max),
    GpuOp::SubgroupReduce(SubgroupReduce::Min),
    GpuOp::SubgroupShuffleXor,
];

impl GpuOp {
    /// The name of its TIR call in the text format (outside TVM's intrinsic names).
    pub fn name(self) -> &'static str {
        match self {
            GpuOp::VLoad4 => "relax.vload4",
            GpuOp::SubgroupReduce(SubgroupReduce::Add) => "relax.subgroup_add",
            GpuOp::SubgroupReduce(SubgroupReduce::Mul) => "relax.subgroup_mul",
            GpuOp::SubgroupReduce(SubgroupReduce::Max) => "relax.subgroup_max",
            GpuOp::SubgroupReduce(SubgroupReduce::Min) => "relax.subgroup_min",
            GpuOp::SubgroupShuffleXor => "relax.subgroup_shuffle_xor",
        }
    }

    /// The operation a TIR call named `name` stands for, if any.
    pub fn from_name(name: &str) -> Option<GpuOp> {
        ALL.into_iter().find(|o| o.name() == name)
    }

    /// The TIR call of this operation.
    pub fn call(self, dtype: DataType, args: Vec<PrimExpr>) -> PrimExpr {
        PrimExpr::call(super::CallOp::Gpu(self), dtype, args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for op in ALL {
            assert_eq!(GpuOp::from_name(op.name()), Some(op));
        }
        assert_eq!(GpuOp::from_name("exp"), None);
    }
}
