//! The JIT as the engine's [`KernelExecutor`]: PrimFuncs run on the host (the default)
//! (on their buffer arguments in place where it can) or as WGSL kernels on the GPU
//! (on copies of their buffer arguments).

use std::sync::Arc;

use relax_gpu_runtime::GpuRuntime;
use relax_ir::PrimFunc;
use relax_jit::host::{Arg, BorrowedArg, HostKernel};
use relax_jit::jit::Jit;
use relax_jit::lower::lower_named;
use relax_jit::HostTensor;

use crate::kernel::{BufferData, Kernel, KernelArg, KernelExecutor};
use crate::value::{PrimValue, Scalar};

/// Runs PrimFuncs with `relax_jit`'s host executor.
#[derive(Clone, Copy, Debug, Default)]
pub struct JitHostExecutor;

struct JitHostKernel(HostKernel);

impl KernelExecutor for JitHostExecutor {
    fn compile(&self, name: &str, func: &PrimFunc) -> Result<Arc<dyn Kernel>, String> {
        let lowered = lower_named(func, name).map_err(|e| e.to_string())?;
        let kernel = HostKernel::compile(Arc::new(lowered)).map_err(|e| e.to_string())?;
        Ok(Arc::new(JitHostKernel(kernel)))
    }
}

impl Kernel for JitHostKernel {
    fn run(&self, args: &mut [KernelArg<'_>]) -> Result<Option<PrimValue>, String> {
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
        if self.0.run_borrowed(&mut borrowed).map_err(|e| e.to_string())? {
            return Ok(None);
        }
        drop(borrowed);
        with_host_tensors(args, |jargs| self.0.run(jargs).map_err(|e| e.to_string()))
    }
}

/// Runs PrimFuncs as WGSL compute kernels through `relax_jit` on a GPU runtime.
pub struct JitGpuExecutor {
    jit: Arc<Jit>,
}

impl JitGpuExecutor {
    /// Kernels for the GPU of `rt`.
    pub fn new(rt: GpuRuntime) -> JitGpuExecutor {
        JitGpuExecutor {
            jit: Arc::new(Jit::new(Some(Arc::new(rt)))),
        }
    }
}

struct JitGpuKernel {
    jit: Arc<Jit>,
    func: PrimFunc,
}

impl KernelExecutor for JitGpuExecutor {
    fn compile(&self, _name: &str, func: &PrimFunc) -> Result<Arc<dyn Kernel>, String> {
        // WGSL emission and pipeline creation happen on the first run (cached by the JIT).
        self.jit.wgsl(func).map_err(|e| e.to_string())?;
        Ok(Arc::new(JitGpuKernel {
            jit: self.jit.clone(),
            func: func.clone(),
        }))
    }
}

impl Kernel for JitGpuKernel {
    fn run(&self, args: &mut [KernelArg<'_>]) -> Result<Option<PrimValue>, String> {
        with_host_tensors(args, |jargs| {
            self.jit.run_gpu(&self.func, jargs).map_err(|e| e.to_string())
        })
    }
}

/// Copy the buffer arguments into `HostTensor`s, call `f`, copy written ones back.
pub(crate) fn with_host_tensors(
    args: &mut [KernelArg<'_>],
    f: impl FnOnce(&mut [Arg<'_>]) -> Result<(), String>,
) -> Result<Option<PrimValue>, String> {
    let mut tensors = args
        .iter()
        .filter_map(|a| match a {
            KernelArg::Buffer(b) => Some(HostTensor::from_bytes(b.dtype, b.shape, b.data.bytes())),
            KernelArg::Scalar(_) => None,
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
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
