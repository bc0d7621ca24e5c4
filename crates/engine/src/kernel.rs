//! Running TIR `PrimFunc`s: the [`KernelExecutor`] trait and the staging of tensor
//! arguments as byte slices (read-only inputs, writable outputs).

use std::sync::Arc;

use relax_ir::{DataType, PrimFunc};

use crate::engine::{CopyKind, Stats};
use crate::error::{BackendError, EngineError, Result};
use crate::value::{PrimValue, Storage, StorageData, Tensor};

/// Element bytes of one buffer argument.
pub enum BufferData<'a> {
    /// An input the kernel must not write.
    Read(&'a [u8]),
    /// An output (or an in-place argument) the kernel writes.
    Write(&'a mut [u8]),
}

impl BufferData<'_> {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            BufferData::Read(b) => b,
            BufferData::Write(b) => b,
        }
    }
}

/// One buffer argument of a kernel call.
pub struct BufferArg<'a> {
    /// Element type.
    pub dtype: DataType,
    /// Shape.
    pub shape: &'a [i64],
    /// Little-endian row-major element bytes.
    pub data: BufferData<'a>,
}

/// One argument of a kernel call, in the PrimFunc's parameter order.
pub enum KernelArg<'a> {
    /// A tensor, bound to a buffer parameter.
    Buffer(BufferArg<'a>),
    /// A scalar (symbolic `tir_vars` of `call_tir`, or a `PrimValue` argument).
    Scalar(PrimValue),
}

/// Compiles TIR `PrimFunc`s into [`CompiledKernel`]s that run on host buffers. The JIT's host
/// executor implements it; tests may mock it.
pub trait KernelExecutor: Send + Sync {
    /// Prepare `func` (named `name` in its module) for execution. Called once per
    /// PrimFunc of a loaded module, on first use; the kernel is then reused.
    fn compile(&self, name: &str, func: &PrimFunc) -> Result<Arc<dyn CompiledKernel>, BackendError>;
}

/// A compiled PrimFunc.
pub trait CompiledKernel: Send + Sync {
    /// Run on `args` (one per PrimFunc parameter, destination-passing style); returns
    /// the function's scalar result if it has one. The engine adds the kernel's name
    /// to an error.
    fn run(&self, args: &mut [KernelArg<'_>]) -> Result<Option<PrimValue>, BackendError>;
}

/// A value passed to a kernel.
pub(crate) enum StagedArg {
    /// A tensor, read-only or written.
    Tensor(Tensor, bool),
    /// A scalar.
    Scalar(PrimValue),
}

/// What [`with_kernel_args`] copied because of aliasing or device residence.
#[derive(Default)]
pub(crate) struct StagingStats {
    copies: Vec<(CopyKind, u64)>,
}

impl StagingStats {
    fn add(&mut self, kind: CopyKind, bytes: u64) {
        self.copies.push((kind, bytes));
    }
    /// Add the copies to a program's statistics.
    pub(crate) fn record(&self, stats: &Stats) {
        for (k, b) in &self.copies {
            stats.record_copy(*k, *b);
        }
    }
}

enum Lock<'g> {
    Read(std::sync::RwLockReadGuard<'g, StorageData>),
    Write(std::sync::RwLockWriteGuard<'g, StorageData>),
}

/// Lock the storages of `args` (each once, in a fixed order), present them as
/// [`KernelArg`]s and call `f`. Inputs that alias a written storage, and tensors in
/// device memory, are staged through host copies (written ones are copied back).
pub(crate) fn with_kernel_args<R>(
    args: &[StagedArg],
    stats: &mut StagingStats,
    f: impl FnOnce(&mut [KernelArg<'_>]) -> R,
) -> Result<R> {
    // Distinct storages, sorted by address (a global lock order), with write intent.
    let mut storages: Vec<(*const Storage, &Arc<Storage>, bool)> = Vec::new();
    for a in args {
        if let StagedArg::Tensor(t, w) = a {
            let p = Arc::as_ptr(&t.0.storage);
            match storages.iter_mut().find(|(q, _, _)| *q == p) {
                Some(entry) => {
                    if *w && entry.2 {
                        return Err(EngineError::Invalid(
                            "the same tensor memory is passed as two outputs of one kernel".into(),
                        ));
                    }
                    entry.2 |= *w;
                }
                None => storages.push((p, &t.0.storage, *w)),
            }
        }
    }
    storages.sort_by_key(|(p, _, _)| *p as usize);
    let mut locks = Vec::with_capacity(storages.len());
    for (_, s, w) in &storages {
        locks.push(if *w {
            Lock::Write(s.write()?)
        } else {
            Lock::Read(s.read()?)
        });
    }
    let index_of = |t: &Tensor| storages.iter().position(|(p, _, _)| *p == Arc::as_ptr(&t.0.storage));

    // Host copies: inputs aliasing a written storage, and device-resident tensors.
    let mut temps: Vec<Option<Vec<u8>>> = Vec::with_capacity(args.len());
    for a in args {
        let mut temp = None;
        if let StagedArg::Tensor(t, w) = a {
            let i = index_of(t).ok_or_else(|| EngineError::Internal("unstaged tensor".into()))?;
            let range = t.0.offset..t.0.offset + t.nbytes();
            let n = t.nbytes() as u64;
            match &locks[i] {
                Lock::Write(g) => match &**g {
                    StorageData::Host(h) if !*w => {
                        temp = Some(h.bytes().get(range).ok_or_else(view_error)?.to_vec());
                        stats.add(CopyKind::Host, n);
                    }
                    StorageData::Device(buf) => {
                        temp = Some(download(&**buf, t)?);
                        stats.add(CopyKind::Download, n);
                    }
                    StorageData::Host(_) => {}
                },
                Lock::Read(g) => {
                    if let StorageData::Device(buf) = &**g {
                        temp = Some(download(&**buf, t)?);
                        stats.add(CopyKind::Download, n);
                    }
                }
            }
        }
        temps.push(temp);
    }

    // Whole-storage slices, then one sub-slice per argument.
    enum Whole<'a> {
        R(&'a [u8]),
        W(Option<&'a mut [u8]>),
        Device,
    }
    let mut wholes: Vec<Whole<'_>> = locks
        .iter_mut()
        .map(|l| match l {
            Lock::Read(g) => match &**g {
                StorageData::Host(h) => Whole::R(h.bytes()),
                StorageData::Device(_) => Whole::Device,
            },
            Lock::Write(g) => match &mut **g {
                StorageData::Host(h) => Whole::W(Some(h.bytes_mut())),
                StorageData::Device(_) => Whole::Device,
            },
        })
        .collect();
    let mut kargs: Vec<KernelArg<'_>> = Vec::with_capacity(args.len());
    let mut temp_iter = temps.iter_mut();
    for a in args {
        let temp = temp_iter.next().and_then(|t| t.as_mut());
        match a {
            StagedArg::Scalar(p) => kargs.push(KernelArg::Scalar(*p)),
            StagedArg::Tensor(t, w) => {
                let range = t.0.offset..t.0.offset + t.nbytes();
                let data = match temp {
                    Some(tmp) if *w => BufferData::Write(tmp.as_mut_slice()),
                    Some(tmp) => BufferData::Read(tmp.as_slice()),
                    None => {
                        let i = index_of(t).ok_or_else(|| EngineError::Internal("unstaged tensor".into()))?;
                        match &mut wholes[i] {
                            Whole::R(b) => BufferData::Read(b.get(range).ok_or_else(view_error)?),
                            Whole::W(slot) => {
                                let b = slot
                                    .take()
                                    .ok_or_else(|| EngineError::Internal("storage staged twice".into()))?;
                                BufferData::Write(b.get_mut(range).ok_or_else(view_error)?)
                            }
                            Whole::Device => return Err(EngineError::Internal("device tensor not staged".into())),
                        }
                    }
                };
                kargs.push(KernelArg::Buffer(BufferArg {
                    dtype: t.dtype(),
                    shape: t.shape(),
                    data,
                }));
            }
        }
    }
    let result = f(&mut kargs);
    drop(kargs);
    drop(wholes);

    // Copy written device tensors back.
    for (a, temp) in args.iter().zip(&temps) {
        if let (StagedArg::Tensor(t, true), Some(tmp)) = (a, temp) {
            let i = index_of(t).ok_or_else(|| EngineError::Internal("unstaged tensor".into()))?;
            if let Lock::Write(g) = &locks[i] {
                if let StorageData::Device(buf) = &**g {
                    buf.write(t.0.offset, tmp).map_err(EngineError::Device)?;
                    stats.add(CopyKind::Upload, tmp.len() as u64);
                }
            }
        }
    }
    Ok(result)
}

fn download(buf: &dyn crate::device::DeviceMemory, t: &Tensor) -> Result<Vec<u8>> {
    let mut v = crate::value::alloc_host(t.nbytes(), || t.describe())?;
    buf.read(t.0.offset, &mut v).map_err(EngineError::Device)?;
    Ok(v)
}

fn view_error() -> EngineError {
    EngineError::Internal("tensor view exceeds its storage".into())
}
