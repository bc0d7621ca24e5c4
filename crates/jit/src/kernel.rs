//! One argument type and one executor interface for host and GPU kernels.
//!
//! A [`KernelExecutor`] compiles a PrimFunc into a [`CompiledKernel`]; the kernel
//! runs on [`KernelArg`]s, one per PrimFunc parameter, destination-passing style.
//! [`HostExecutor`] compiles for the CPU, [`GpuExecutor`] for the GPU of a [`Jit`].
//!
//! Where an argument lives and where the kernel runs need not agree in one way
//! only: a GPU kernel given host bytes uploads them to temporaries (and reads the
//! ones it writes back into [`KernelArg::Write`] bytes), while a host kernel given
//! a [`KernelArg::Device`] buffer fails with [`crate::JitError::DeviceArg`] (reading
//! device memory back is the caller's decision, since it waits for the GPU).

use std::sync::Arc;

use relax_ir::PrimFunc;

pub use crate::args::KernelArg;
use crate::error::Result;
use crate::host::HostKernel;
use crate::jit::Jit;

/// Where a compiled kernel runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelDevice {
    /// The host CPU.
    Host,
    /// The GPU of a [`Jit`].
    Gpu,
}

/// Compiles TIR `PrimFunc`s into [`CompiledKernel`]s. Implemented by
/// [`HostExecutor`] and [`GpuExecutor`]; users (and tests) may supply their own.
pub trait KernelExecutor: Send + Sync {
    /// Prepare `func` (named `name` in its module: errors and profiles use it).
    fn compile(&self, name: &str, func: &PrimFunc) -> Result<Arc<dyn CompiledKernel>>;
}

/// A compiled PrimFunc.
pub trait CompiledKernel: Send + Sync {
    /// Run on `args` (one per PrimFunc parameter, destination-passing style).
    fn run(&self, args: &mut [KernelArg<'_>]) -> Result<()>;
    /// Where the kernel runs: the memory its tensor arguments are best given in.
    fn device(&self) -> KernelDevice {
        KernelDevice::Host
    }
}

/// Compiles PrimFuncs for the host ([`HostKernel`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct HostExecutor;

impl KernelExecutor for HostExecutor {
    fn compile(&self, name: &str, func: &PrimFunc) -> Result<Arc<dyn CompiledKernel>> {
        Ok(Arc::new(HostKernel::for_prim_func(func, name)?))
    }
}

impl CompiledKernel for HostKernel {
    fn run(&self, args: &mut [KernelArg<'_>]) -> Result<()> {
        HostKernel::run(self, args)
    }
}

/// Compiles PrimFuncs for the GPU of a [`Jit`] (pipelines cached by the JIT).
#[derive(Clone)]
pub struct GpuExecutor(Arc<Jit>);

impl GpuExecutor {
    /// An executor for `jit`'s GPU (compiling fails with [`crate::JitError::NoGpu`] without one).
    pub fn new(jit: Arc<Jit>) -> GpuExecutor {
        GpuExecutor(jit)
    }
}

/// A PrimFunc and its GPU program (from the JIT's cache, held here so that a call
/// does not look it up again).
struct GpuKernel {
    jit: Arc<Jit>,
    name: String,
    func: PrimFunc,
    program: Arc<crate::gpu::GpuProgram>,
}

impl KernelExecutor for GpuExecutor {
    fn compile(&self, name: &str, func: &PrimFunc) -> Result<Arc<dyn CompiledKernel>> {
        let program = self.0.gpu_program(func)?;
        Ok(Arc::new(GpuKernel {
            jit: self.0.clone(),
            name: name.to_string(),
            func: func.clone(),
            program,
        }))
    }
}

impl CompiledKernel for GpuKernel {
    fn run(&self, args: &mut [KernelArg<'_>]) -> Result<()> {
        self.jit.run_gpu_program(&self.name, &self.func, &self.program, args)
    }
    fn device(&self) -> KernelDevice {
        KernelDevice::Gpu
    }
}
