//! Running TIR `PrimFunc`s: the staging of a call's tensors as the JIT's
//! [`KernelArg`]s (host byte slices: read-only inputs, writable outputs), for
//! kernels of any [`relax_jit::KernelExecutor`].

use std::sync::Arc;

use relax_jit::KernelArg;
use smallvec::SmallVec;

use crate::engine::{CopyKind, Stats};
use crate::error::{EngineError, Result};
use crate::value::{PrimValue, Scalar, Storage, StorageData, Tensor};

/// A value of a kernel call before its storage is locked (see [`with_kernel_args`]).
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
    // Small vectors: a kernel call takes a handful of arguments, and these live
    // only for the call (no heap allocation per call).
    let mut storages: SmallVec<[(*const Storage, &Arc<Storage>, bool); 8]> = SmallVec::new();
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
    let mut locks: SmallVec<[Lock<'_>; 8]> = SmallVec::with_capacity(storages.len());
    for (_, s, w) in &storages {
        locks.push(if *w {
            Lock::Write(s.write()?)
        } else {
            Lock::Read(s.read()?)
        });
    }
    let index_of = |t: &Tensor| storages.iter().position(|(p, _, _)| *p == Arc::as_ptr(&t.0.storage));

    // Host copies: inputs aliasing a written storage, and device-resident tensors.
    let mut temps: SmallVec<[Option<Vec<u8>>; 8]> = SmallVec::with_capacity(args.len());
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
    let mut wholes: SmallVec<[Whole<'_>; 8]> = locks
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
    let mut kargs: SmallVec<[KernelArg<'_>; 8]> = SmallVec::with_capacity(args.len());
    let mut temp_iter = temps.iter_mut();
    for a in args {
        let temp = temp_iter.next().and_then(|t| t.as_mut()).map(|t| t.as_mut_slice());
        match a {
            StagedArg::Scalar(p) => kargs.push(scalar_arg(p)),
            StagedArg::Tensor(t, w) => {
                let range = t.0.offset..t.0.offset + t.nbytes();
                let (dtype, shape) = (t.dtype(), t.shape());
                kargs.push(match temp {
                    Some(bytes) if *w => KernelArg::Write { dtype, shape, bytes },
                    Some(bytes) => KernelArg::Read { dtype, shape, bytes },
                    None => {
                        let i = index_of(t).ok_or_else(|| EngineError::Internal("unstaged tensor".into()))?;
                        match &mut wholes[i] {
                            Whole::R(b) => KernelArg::Read {
                                dtype,
                                shape,
                                bytes: b.get(range).ok_or_else(view_error)?,
                            },
                            Whole::W(slot) => {
                                let b = slot
                                    .take()
                                    .ok_or_else(|| EngineError::Internal("storage staged twice".into()))?;
                                KernelArg::Write {
                                    dtype,
                                    shape,
                                    bytes: b.get_mut(range).ok_or_else(view_error)?,
                                }
                            }
                            Whole::Device => return Err(EngineError::Internal("device tensor not staged".into())),
                        }
                    }
                });
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

/// A scalar argument of a kernel.
pub(crate) fn scalar_arg(p: &PrimValue) -> KernelArg<'static> {
    match p.value {
        Scalar::Int(i) => KernelArg::Int(i),
        Scalar::Float(f) => KernelArg::Float(f),
    }
}
