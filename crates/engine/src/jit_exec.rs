//! The JIT as the engine's [`KernelExecutor`]: PrimFuncs run on the host, on their
//! buffer arguments in place where the kernel allows it, else on copies. (GPU kernels
//! are run by the engine itself on device-resident buffers: see `place.rs`.)

use std::sync::Arc;

use relax_ir::PrimFunc;
use relax_jit::{Arg, BorrowedArg, HostKernel, HostTensor};

use crate::error::BackendError;
use crate::kernel::{BufferData, CompiledKernel, KernelArg, KernelExecutor};
use crate::value::{PrimValue, Scalar};

/// Runs PrimFuncs with `relax_jit`'s host executor.
#[derive(Clone, Copy, Debug, Default)]
pub struct JitHostExecutor;

struct JitHostKernel(HostKernel);

impl KernelExecutor for JitHostExecutor {
    fn compile(&self, name: &str, func: &PrimFunc) -> Result<Arc<dyn CompiledKernel>, BackendError> {
        let kernel = HostKernel::for_prim_func(func, name).map_err(BackendError::from)?;
        Ok(Arc::new(JitHostKernel(kernel)))
    }
}

impl CompiledKernel for JitHostKernel {
    fn run(&self, args: &mut [KernelArg<'_>]) -> Result<Option<PrimValue>, BackendError> {
        // In place when the kernel allows it; else on copies.
        let mut borrowed: Vec<BorrowedArg<'_>> = args
            .iter_mut()
            .map(|a| match a {
                KernelArg::Buffer(b) => match &mut b.data {
                    BufferData::Read(bytes) => BorrowedArg::Read {
                        dtype: b.dtype,
                        shape: b.shape,
                        bytes,
                    },
                    BufferData::Write(bytes) => BorrowedArg::Write {
                        dtype: b.dtype,
                        shape: b.shape,
                        bytes,
                    },
                },
                KernelArg::Scalar(PrimValue {
                    value: Scalar::Int(i), ..
                }) => BorrowedArg::Int(*i),
                KernelArg::Scalar(PrimValue {
                    value: Scalar::Float(f),
                    ..
                }) => BorrowedArg::Float(*f),
            })
            .collect();
        if self.0.run_borrowed(&mut borrowed).map_err(BackendError::from)? {
            return Ok(None);
        }
        drop(borrowed);
        with_host_tensors(args, |jargs| self.0.run(jargs).map_err(BackendError::from))
    }
}

/// Copy the buffer arguments into `HostTensor`s, call `f`, copy written ones back.
pub(crate) fn with_host_tensors(
    args: &mut [KernelArg<'_>],
    f: impl FnOnce(&mut [Arg<'_>]) -> Result<(), BackendError>,
) -> Result<Option<PrimValue>, BackendError> {
    let mut tensors = args
        .iter()
        .filter_map(|a| match a {
            KernelArg::Buffer(b) => Some(HostTensor::from_bytes(b.dtype, b.shape, b.data.bytes())),
            KernelArg::Scalar(_) => None,
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(BackendError::from)?;
    {
        let mut slots = tensors.iter_mut();
        let mut jargs = Vec::with_capacity(args.len());
        for a in args.iter() {
            jargs.push(match a {
                KernelArg::Buffer(_) => Arg::Tensor(slots.next().ok_or("argument staging mismatch")?),
                KernelArg::Scalar(PrimValue {
                    value: Scalar::Int(i), ..
                }) => Arg::Int(*i),
                KernelArg::Scalar(PrimValue {
                    value: Scalar::Float(f),
                    ..
                }) => Arg::Float(*f),
            });
        }
        f(&mut jargs)?;
    }
    let mut results = tensors.iter();
    for a in args.iter_mut() {
        if let KernelArg::Buffer(b) = a {
            let t = results.next().ok_or("argument staging mismatch")?;
            if let BufferData::Write(out) = &mut b.data {
                out.copy_from_slice(t.bytes());
            }
        }
    }
    Ok(None)
}
