//! What both executors check and evaluate before running a lowered function: the
//! argument type ([`KernelArg`]), argument checking against the parameters
//! ([`check_args`]) and integer evaluation of shapes and grids ([`eval_int`]).

use std::collections::HashMap;

use relax_gpu_runtime::DeviceBuffer;
use relax_ir::tir::{PrimExpr, PrimExprKind};
use relax_ir::DataType;

use crate::error::{JitError, Result};
use crate::lower::{LoweredFunc, ParamSlot};

/// One argument of a kernel call, in the PrimFunc's parameter order.
#[derive(Debug)]
pub enum KernelArg<'a> {
    /// A tensor in host memory the kernel only reads (little-endian, row-major).
    Read {
        /// Element type.
        dtype: DataType,
        /// Shape.
        shape: &'a [i64],
        /// The elements.
        bytes: &'a [u8],
    },
    /// A tensor in host memory the kernel may write (an output, or in place).
    Write {
        /// Element type.
        dtype: DataType,
        /// Shape.
        shape: &'a [i64],
        /// The elements, written in place.
        bytes: &'a mut [u8],
    },
    /// A tensor in device memory: a buffer of the [`crate::Jit`]'s GPU runtime holding
    /// little-endian host bytes (see [`crate::Jit::resident_compatible`]).
    Device {
        /// The buffer (at least as long as the tensor's data).
        buf: &'a DeviceBuffer,
        /// Element type.
        dtype: DataType,
        /// Shape.
        shape: &'a [i64],
    },
    /// An integer scalar (also `bool`).
    Int(i64),
    /// A float scalar.
    Float(f64),
}

impl KernelArg<'_> {
    /// Element type and shape of a tensor argument; `None` for a scalar.
    pub fn tensor_meta(&self) -> Option<(DataType, &[i64])> {
        match self {
            KernelArg::Read { dtype, shape, .. }
            | KernelArg::Write { dtype, shape, .. }
            | KernelArg::Device { dtype, shape, .. } => Some((*dtype, shape)),
            KernelArg::Int(_) | KernelArg::Float(_) => None,
        }
    }

    /// The bytes of a tensor in host memory; `None` for device tensors and scalars.
    pub fn host_bytes(&self) -> Option<&[u8]> {
        match self {
            KernelArg::Read { bytes, .. } => Some(bytes),
            KernelArg::Write { bytes, .. } => Some(bytes),
            _ => None,
        }
    }
}

/// Check the argument count, kinds, dtypes and ranks; return each tensor argument's
/// shape (empty for scalars).
pub(crate) fn check_args(lf: &LoweredFunc, args: &[KernelArg<'_>]) -> Result<Vec<Vec<i64>>> {
    if args.len() != lf.params.len() {
        return Err(JitError::BadArgs(format!(
            "`{}` takes {} arguments, {} given",
            lf.name,
            lf.params.len(),
            args.len()
        )));
    }
    let mut shapes = Vec::new();
    for (i, (p, a)) in lf.params.iter().zip(args.iter()).enumerate() {
        match (p, a.tensor_meta()) {
            (ParamSlot::Buffer { orig, .. }, Some((dtype, shape))) => {
                if dtype != orig.dtype() || shape.len() != orig.shape().len() {
                    return Err(JitError::BadArgs(format!(
                        "argument {i} (`{}`) of `{}` is a {dtype} tensor of rank {}, expected {} of rank {}",
                        orig.name(),
                        lf.name,
                        shape.len(),
                        orig.dtype(),
                        orig.shape().len()
                    )));
                }
                shapes.push(shape.to_vec());
            }
            (ParamSlot::Scalar(_), None) => shapes.push(vec![]),
            _ => {
                return Err(JitError::BadArgs(format!(
                    "argument {i} of `{}` has the wrong kind",
                    lf.name
                )))
            }
        }
    }
    Ok(shapes)
}

/// Evaluate an integer expression with the given variable values (shapes, grids), with
/// TVM's semantics ([`relax_ir::arith::eval_int`]: the one integer evaluator).
pub fn eval_int(e: &PrimExpr, vars: &HashMap<u64, i64>) -> Result<i64> {
    relax_ir::arith::eval_int(e, &|v| vars.get(&v.id()).copied()).ok_or_else(|| {
        let mut unbound = Vec::new();
        relax_ir::visit::for_each_prim_expr(e, &mut |x| {
            if let PrimExprKind::Var(v) = x.kind() {
                if !vars.contains_key(&v.id()) {
                    unbound.push(v.name().to_string());
                }
            }
        });
        match unbound.first() {
            Some(name) => JitError::InvalidIr(format!("variable `{name}` has no value here")),
            None => JitError::InvalidIr(format!(
                "cannot evaluate {e:?} on the host as an integer (a non-integer node, a division by zero or an overflow)"
            )),
        }
    })
}
