//! The types describing a generated kernel to its dispatcher: the device features
//! it may use, its storage bindings and uniform fields, and the kernel source.

use relax_ir::tir::TirVar;
use relax_ir::{DataType, TypeCode};

use super::W;
use crate::error::{JitError, Result};
use crate::schedule::Grid;

/// Optional shader features of the target device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceCaps {
    /// `SHADER_F16`.
    pub f16: bool,
    /// `SHADER_F64`.
    pub f64: bool,
    /// `SHADER_INT64`.
    pub i64: bool,
    /// `max_storage_buffer_binding_size`: a tensor of known size above it is bound
    /// as several chunks (see `BindingInfo::chunk`).
    pub max_binding_bytes: u64,
    /// `min_storage_buffer_offset_alignment` (chunks start at multiples of it).
    pub binding_align: u64,
}

/// The most storage bindings one tensor may be split into.
pub(super) const MAX_CHUNKS: u64 = 8;

impl DeviceCaps {
    /// Every optional feature and no binding-size limit (for emitting WGSL without
    /// a device).
    pub const ALL: DeviceCaps = DeviceCaps {
        f16: true,
        f64: true,
        i64: true,
        max_binding_bytes: u64::MAX,
        binding_align: 256,
    };

    /// Elements of `st` per chunk when a tensor of `numel` elements exceeds the
    /// binding size; `None` when it can be bound whole.
    pub fn chunk_elems(&self, numel: u64, st: StorageTy) -> Option<u64> {
        let bytes = st.bytes() as u64;
        if numel.saturating_mul(bytes) <= self.max_binding_bytes {
            return None;
        }
        let align = self.binding_align.max(bytes);
        Some((self.max_binding_bytes / align * align / bytes).max(1))
    }
}

/// Where a storage binding's buffer comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufRef {
    /// The tensor passed as parameter `i`.
    Param(usize),
    /// Function-level scratch buffer `i` ([`crate::lower::LoweredFunc::scratch`]).
    Scratch(usize),
    /// The out-of-bounds flag buffer (see `Jit::check_gpu_bounds`).
    Bounds,
}

/// WGSL storage element types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StorageTy {
    /// `f16`
    F16,
    /// `f32` (also widened float16 without `SHADER_F16`, float8 and float4 variants)
    F32,
    /// `f64`
    F64,
    /// `i32` (also widened bool / int2 / int4 / int8 / int16)
    I32,
    /// `u32` (also widened uint2 / uint4 / uint8 / uint16)
    U32,
    /// `i64`
    I64,
    /// `u64`
    U64,
}

impl StorageTy {
    /// The storage type of tensor elements of `dt`.
    pub fn of(dt: DataType, caps: &DeviceCaps) -> Result<StorageTy> {
        let bad = |why: &str| JitError::UnsupportedDtype {
            dtype: dt,
            context: why.to_string(),
        };
        if dt.lanes != 1 {
            return Err(bad("on the GPU (vector lanes)"));
        }
        Ok(match (dt.code, dt.bits) {
            (TypeCode::UInt, 1) | (TypeCode::Int, 2 | 4 | 8 | 16 | 32) => StorageTy::I32,
            (TypeCode::UInt, 2 | 4 | 8 | 16 | 32) => StorageTy::U32,
            // Floats narrower than 16 bits: widened to f32 words (decoded on upload,
            // encoded on read-back), computed in f32 and rounded to the format at
            // casts and stores (`to_mini_f32`).
            _ if dt.mini_float().is_some() => StorageTy::F32,
            (TypeCode::Int, 64) if caps.i64 => StorageTy::I64,
            (TypeCode::UInt, 64) if caps.i64 => StorageTy::U64,
            (TypeCode::Float, 16) if caps.f16 => StorageTy::F16,
            // Without SHADER_F16: widened to f32 words (converted on upload and
            // read-back, computed in f32 and rounded to float16 at stores).
            (TypeCode::Float, 16) => StorageTy::F32,
            // bfloat16: widened to f32 words likewise (exactly: it is an f32's top
            // half), computed in f32 and rounded to bfloat16 at casts and stores
            // (`to_bf16_f32`).
            (TypeCode::BFloat, 16) => StorageTy::F32,
            (TypeCode::Float, 32) => StorageTy::F32,
            (TypeCode::Float, 64) if caps.f64 => StorageTy::F64,
            (TypeCode::Int | TypeCode::UInt, 64) => return Err(bad("on this GPU (it lacks SHADER_INT64)")),
            (TypeCode::Float, 64) => return Err(bad("on this GPU (it lacks SHADER_F64)")),
            _ => return Err(bad("on the GPU")),
        })
    }
    /// Bytes per stored element.
    pub fn bytes(self) -> usize {
        match self {
            StorageTy::F16 => 2,
            StorageTy::F32 | StorageTy::I32 | StorageTy::U32 => 4,
            _ => 8,
        }
    }
    pub(super) fn wty(self) -> W {
        match self {
            StorageTy::F16 => W::F16,
            StorageTy::F32 => W::F32,
            StorageTy::F64 => W::F64,
            StorageTy::I32 => W::I32,
            StorageTy::U32 => W::U32,
            StorageTy::I64 => W::I64,
            StorageTy::U64 => W::U64,
        }
    }
}

/// Storage buffer access mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// `var<storage, read>`
    Read,
    /// `var<storage, read_write>`
    ReadWrite,
}

/// One storage binding of a kernel.
#[derive(Clone, Debug)]
pub struct BindingInfo {
    /// The buffer bound.
    pub buf: BufRef,
    /// WGSL variable name.
    pub name: String,
    /// Tensor element type.
    pub dtype: DataType,
    /// Element type in the shader.
    pub storage: StorageTy,
    /// Access mode.
    pub access: Access,
    /// For a tensor bound in chunks: (first element, element count) of the part
    /// bound here. `None`: the whole tensor.
    pub chunk: Option<(u64, u64)>,
    /// Declared `array<vec4<...>>`: a second binding of a float32 tensor whose
    /// element count is a multiple of 4, read four elements at a time
    /// (`GpuOp::VLoad4`).
    pub vec4: bool,
}

/// Scalar types of uniform fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UniformTy {
    /// `i32` (int64 values are narrowed with a checked bound)
    I32,
    /// `u32`
    U32,
    /// `f32`
    F32,
}

/// One field of the uniform parameter struct (4 bytes each, in order).
#[derive(Clone, Debug)]
pub struct UniformField {
    /// The variable (scalar parameter or shape variable).
    pub var: TirVar,
    /// WGSL field name.
    pub name: String,
    /// Field type.
    pub ty: UniformTy,
}

/// A generated compute shader with everything needed to dispatch it.
#[derive(Clone, Debug)]
pub struct KernelSource {
    /// Kernel name.
    pub name: String,
    /// The WGSL text (entry point `main`).
    pub wgsl: String,
    /// `@workgroup_size`.
    pub workgroup_size: [u32; 3],
    /// Storage bindings in binding order.
    pub bindings: Vec<BindingInfo>,
    /// Uniform fields (binding index `bindings.len()` when non-empty).
    pub uniforms: Vec<UniformField>,
    /// Launch grid.
    pub grid: Grid,
    /// What each run-time bounds check reports (site `i + 1`); empty when the kernel
    /// checks nothing and binds no flag buffer.
    pub oob_sites: Vec<String>,
    /// An upper bound on the loop trips of one invocation (`None`: unbounded, a
    /// `while` loop), checked against software adapters' loop limit at dispatch.
    pub loop_trips: Option<relax_ir::tir::PrimExpr>,
}
