//! Device placement: where a kernel runs (host executor or WGSL on the GPU), where
//! tensors are allocated, and the copies `to_vdevice` and entry arguments make.
//!
//! Rules (the spec's VDevice semantics after `RealizeVDevice`):
//! - a tensor whose StructInfo carries a GPU VDevice (`webgpu`, `vulkan`, `cuda`,
//!   `metal`, `rocm`, `opencl`) lives in GPU memory, a host one (`llvm`, `c`, `cpu`)
//!   in host memory; without a GPU (or with [`DeviceChoice::Cpu`]) everything is on
//!   the host and VDevices are labels;
//! - a `call_tir` runs where its outputs' StructInfo says; without a VDevice there,
//!   where its tensor inputs are (a VDevice label first, device residence next);
//!   otherwise on the engine's default device ([`DeviceChoice::Gpu`]: the GPU);
//! - GPU kernels bind device buffers directly; tensors that cannot be bound (narrow
//!   integer or bool elements, views at an offset, aliased outputs) are staged
//!   through the host and every such copy is counted.

use std::sync::Arc;
use std::time::Instant;

use relax_gpu_runtime::GpuRuntime;
use relax_ir::relax::StructInfo;
use relax_ir::{BaseFunc, DataType, GlobalVar, Target, VDevice};
use relax_jit::{CompiledKernel, Jit, KernelArg, KernelDevice};

use crate::device::{is_gpu_kind, DeviceChoice, DeviceMemory};
use crate::engine::{CopyKind, Opened, Place};
use crate::error::{BackendError, EngineError, Result};
use crate::interp::Interp;
use crate::kernel::{scalar_arg, with_kernel_args, StagedArg, StagingStats};
use crate::value::{HostBytes, Storage, StorageData, Tensor, Value};

/// The VDevice label of GPU memory allocated for computation without a VDevice.
fn default_gpu_vdevice() -> VDevice {
    VDevice {
        target: Target::from_kind("webgpu"),
        vdevice_id: 0,
        memory_scope: "global".into(),
    }
}

/// The device buffer behind a tensor, if it lives in device memory.
pub(crate) fn device_buffer(t: &Tensor) -> Result<Option<Arc<dyn DeviceMemory>>> {
    Ok(match &*t.0.storage.read()? {
        StorageData::Device(b) => Some(b.clone()),
        StorageData::Host(_) => None,
    })
}

impl Interp {
    /// The opened GPU (runtime and JIT), unless the engine keeps everything on the host.
    pub(crate) fn gpu(&self) -> Result<Option<(GpuRuntime, Arc<Jit>)>> {
        Ok(self.prog.backend.get()?.and_then(|o| o.gpu))
    }

    fn opened(&self) -> Result<Option<Opened>> {
        self.prog.backend.get()
    }

    /// Whether a tensor on `vdevice` lives in device memory (of an opened backend).
    fn on_device(&self, vdevice: &VDevice) -> Result<Option<Opened>> {
        if !is_gpu_kind(&vdevice.target.kind) {
            return Ok(None);
        }
        Ok(self.opened()?.filter(|o| o.backend.accepts(vdevice)))
    }

    /// Where a kernel with outputs on `outputs` and arguments `args` runs.
    pub(crate) fn place_kernel(&self, outputs: &[Option<&VDevice>], args: &[StagedArg]) -> Result<Place> {
        if self.prog.device == DeviceChoice::Cpu {
            return Ok(Place::Host);
        }
        let by_kind = |v: &VDevice| is_gpu_kind(&v.target.kind);
        let mut want_gpu = None;
        if let Some(v) = outputs.iter().flatten().next() {
            want_gpu = Some(by_kind(v));
        }
        if want_gpu.is_none() {
            let tensors = args.iter().filter_map(|a| match a {
                StagedArg::Tensor(t, _) => Some(t),
                StagedArg::Scalar(_) => None,
            });
            for t in tensors.clone() {
                if let Some(v) = t.vdevice() {
                    want_gpu = Some(by_kind(v));
                    break;
                }
            }
            if want_gpu.is_none() {
                for t in tensors {
                    if device_buffer(t)?.is_some() {
                        want_gpu = Some(true);
                        break;
                    }
                }
            }
        }
        let want_gpu = want_gpu.unwrap_or(self.prog.default_gpu);
        Ok(if want_gpu && self.gpu()?.is_some() {
            Place::Gpu
        } else {
            Place::Host
        })
    }

    /// Where `builtin.alloc_tensor` / `memory.alloc_storage` with the runtime device
    /// index `index` allocate: on the module's VDevice of that index when it has
    /// VDevices (device memory for a GPU one when a backend accepts it), otherwise
    /// where kernels without a placement run (the GPU under `DeviceChoice::Gpu`, or
    /// `Auto` with a hardware adapter; the host otherwise).
    pub(crate) fn alloc_place(&self, index: Option<i64>) -> Result<(Place, Option<VDevice>)> {
        let vdevices = self.prog.module.vdevices();
        if !vdevices.is_empty() {
            let vd = usize::try_from(index.unwrap_or(0))
                .ok()
                .and_then(|i| vdevices.get(i))
                .map(|v| (*v).clone());
            if let Some(vd) = vd {
                // On the CPU the VDevice is a label on host memory.
                let place =
                    if self.prog.device != DeviceChoice::Cpu && self.on_device(&vd)?.is_some() && self.gpu()?.is_some()
                    {
                        Place::Gpu
                    } else {
                        Place::Host
                    };
                return Ok((place, Some(vd)));
            }
        }
        Ok(
            if self.prog.device != DeviceChoice::Cpu && self.prog.default_gpu && self.gpu()?.is_some() {
                (Place::Gpu, None)
            } else {
                (Place::Host, None)
            },
        )
    }

    /// A storage of `nbytes` in device memory when `place` is the GPU (counted in the
    /// statistics); `None` for the host.
    pub(crate) fn alloc_device_storage(
        &self,
        nbytes: usize,
        vdevice: Option<VDevice>,
        place: Place,
    ) -> Result<Option<(Arc<Storage>, Option<VDevice>)>> {
        let backend = match (place, self.opened()?) {
            (Place::Gpu, Some(o)) => o.backend,
            _ => return Ok(None),
        };
        let vd = vdevice.clone().unwrap_or_else(default_gpu_vdevice);
        let buf = backend.alloc_uninit(&vd, nbytes).map_err(|e| oom(nbytes, e))?;
        self.prog.stats.record_alloc(nbytes);
        self.prog
            .stats
            .device_allocations
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Some((Storage::device(buf), vdevice)))
    }

    /// An uninitialized tensor for a kernel output running at `place`: in GPU memory when the
    /// kernel runs on the GPU, host memory otherwise (counted in the statistics).
    pub(crate) fn alloc_tensor(
        &self,
        dtype: DataType,
        shape: &[i64],
        vdevice: Option<VDevice>,
        place: Place,
    ) -> Result<Tensor> {
        let host = Tensor::zeros(dtype, &[])?;
        let numel = shape
            .iter()
            .try_fold(1usize, |a, &d| usize::try_from(d).ok().and_then(|d| a.checked_mul(d)));
        let nbytes = numel
            .and_then(|n| n.checked_mul(host.nbytes()))
            .ok_or_else(|| EngineError::Invalid(format!("invalid tensor shape {shape:?}")))?;
        self.prog.stats.record_alloc(nbytes);
        let backend = match (place, self.opened()?) {
            (Place::Gpu, Some(o)) => Some(o.backend),
            _ => None,
        };
        match backend {
            Some(b) => {
                let vd = vdevice.clone().unwrap_or_else(default_gpu_vdevice);
                // Kernel outputs are written by the kernel (call_tir outputs start
                // uninitialized, as in TVM).
                let buf = b.alloc_uninit(&vd, nbytes).map_err(|e| oom(nbytes, e))?;
                self.prog
                    .stats
                    .device_allocations
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(Tensor::from_storage(
                    dtype,
                    shape.to_vec(),
                    vdevice,
                    Storage::device(buf),
                    0,
                ))
            }
            None => {
                // Kernel outputs start uninitialized here too: recycled host memory.
                let t = Tensor::for_output(dtype, shape)?;
                Ok(if vdevice.is_some() { t.relabel(vdevice) } else { t })
            }
        }
    }

    /// `to_vdevice`: a new tensor on `dst` with the same contents (upload, readback,
    /// device-to-device or host copy, each counted).
    pub(crate) fn copy_to_vdevice(&self, t: &Tensor, dst: VDevice) -> Result<Tensor> {
        let n = t.nbytes();
        let src_buf = device_buffer(t)?;
        let dst_backend = self.on_device(&dst)?;
        let stats = &self.prog.stats;
        let storage = match (src_buf, dst_backend) {
            (Some(src), Some(o)) => {
                let buf = o.backend.alloc_uninit(&dst, n).map_err(|e| oom(n, e))?;
                let direct = match (&o.gpu, src.gpu_buffer(), buf.gpu_buffer()) {
                    (Some((rt, _)), Some(s), Some(d)) if t.0.offset.is_multiple_of(4) && n > 0 => {
                        let len = (n as u64).div_ceil(4) * 4;
                        rt.copy(s, t.0.offset as u64, d, 0, len.min(s.len() - t.0.offset as u64))
                            .map_err(|e| EngineError::Device(e.into()))?;
                        true
                    }
                    _ => false,
                };
                if !direct {
                    let mut tmp = crate::value::alloc_host(n, || t.describe())?;
                    src.read(t.0.offset, &mut tmp).map_err(EngineError::Device)?;
                    buf.write(0, &tmp).map_err(EngineError::Device)?;
                }
                stats.record_copy(CopyKind::Device, n as u64);
                Storage::device(buf)
            }
            (None, Some(o)) => {
                let bytes = t.to_bytes()?;
                let buf = o.backend.alloc_uninit(&dst, n).map_err(|e| oom(n, e))?;
                buf.write(0, &bytes).map_err(EngineError::Device)?;
                stats.record_copy(CopyKind::Upload, n as u64);
                Storage::device(buf)
            }
            (Some(src), None) => {
                let mut bytes = crate::value::alloc_host(n, || t.describe())?;
                src.read(t.0.offset, &mut bytes).map_err(EngineError::Device)?;
                stats.record_copy(CopyKind::Download, n as u64);
                Storage::host(HostBytes::Owned(bytes))
            }
            (None, None) => {
                stats.record_copy(CopyKind::Host, n as u64);
                Storage::host(HostBytes::Owned(t.to_bytes()?))
            }
        };
        stats.record_alloc(n);
        Ok(Tensor::from_storage(
            t.dtype(),
            t.shape().to_vec(),
            Some(dst),
            storage,
            0,
        ))
    }

    /// Arguments of the entry function placed where its parameters' StructInfo says:
    /// a host tensor passed for a parameter on a GPU VDevice is uploaded, a device
    /// tensor passed for a host one read back (both counted); an unlabelled tensor
    /// already in the right memory is only labelled.
    pub(crate) fn place_entry_args(&self, gv: &GlobalVar, args: Vec<Value>) -> Result<Vec<Value>> {
        let prog = self.prog.clone();
        let Some(BaseFunc::Relax(f)) = prog.module.functions.get(gv) else {
            return Ok(args);
        };
        if f.params.len() != args.len() {
            return Ok(args); // the arity error comes from the call itself
        }
        let mut out = Vec::with_capacity(args.len());
        for (p, a) in f.params.iter().zip(args) {
            let want = match (p.struct_info(), &a) {
                (Some(StructInfo::Tensor(ts)), Value::Tensor(_)) => ts.vdevice.clone(),
                _ => None,
            };
            let (Some(want), Value::Tensor(t)) = (want, &a) else {
                out.push(a);
                continue;
            };
            let resident = device_buffer(t)?.is_some();
            let should_be_on_device = self.on_device(&want)?.is_some();
            if t.vdevice().is_some_and(|v| *v != want) {
                // A tensor explicitly on another VDevice: the entry check reports it.
                out.push(a);
            } else if resident == should_be_on_device {
                out.push(if t.vdevice().is_none() {
                    Value::Tensor(t.relabel(Some(want)))
                } else {
                    a
                });
            } else {
                out.push(Value::Tensor(self.copy_to_vdevice(t, want)?));
            }
        }
        Ok(out)
    }

    /// Run the PrimFunc `gv` on staged arguments at `place`.
    pub(crate) fn run_kernel_at(&mut self, gv: &GlobalVar, args: &[StagedArg], place: Place) -> Result<()> {
        let prog = self.prog.clone();
        let name = gv.name();
        let func = match prog.module.functions.get(gv) {
            Some(BaseFunc::Prim(f)) => f,
            Some(BaseFunc::Relax(_)) => {
                return Err(EngineError::Type(format!(
                    "`{name}` is a Relax function, not a TIR PrimFunc"
                )))
            }
            None => return Err(EngineError::UnknownFunction(name.to_string())),
        };
        let gpu = match place {
            Place::Gpu => self.gpu()?,
            Place::Host => None,
        };
        let compiled = prog.kernel(gv, func, place, gpu.as_ref().map(|(_, j)| j))?;
        let kernel_err = |source: BackendError| EngineError::Kernel {
            name: name.to_string(),
            source,
        };
        let t0 = Instant::now();
        let mut st = StagingStats::default();
        if compiled.device() == KernelDevice::Gpu {
            let (rt, jit) = gpu.as_ref().ok_or_else(|| kernel_err("no GPU is available".into()))?;
            if prog.profile && !jit.profiling() {
                jit.set_profiling(true);
            }
            if !run_resident(self, jit, &*compiled, args).map_err(kernel_err)? {
                // Staged through host copies, which the kernel uploads.
                let r = with_kernel_args(args, &mut st, |kargs| compiled.run(kargs))?;
                r.map_err(|e| kernel_err(e.into()))?;
            }
            if prog.profile {
                rt.synchronize().map_err(|e| EngineError::Device(e.into()))?;
            }
        } else {
            let r = with_kernel_args(args, &mut st, |kargs| compiled.run(kargs))?;
            r.map_err(|e| kernel_err(e.into()))?;
        }
        let ns = t0.elapsed().as_nanos() as u64;
        if prog.profile && place == Place::Host {
            prog.host_profile.record_wall(name, t0.elapsed(), None);
        }
        st.record(&prog.stats);
        use std::sync::atomic::Ordering::Relaxed;
        prog.stats.kernels_run.fetch_add(1, Relaxed);
        match place {
            Place::Host => {
                prog.stats.host_kernels_run.fetch_add(1, Relaxed);
                prog.stats.host_kernel_ns.fetch_add(ns, Relaxed);
            }
            Place::Gpu => {
                prog.stats.gpu_kernels_run.fetch_add(1, Relaxed);
                prog.stats.gpu_kernel_ns.fetch_add(ns, Relaxed);
            }
        }
        Ok(())
    }
}

/// An out-of-memory (or other allocation) error from a device backend.
fn oom(nbytes: usize, e: BackendError) -> EngineError {
    EngineError::Device(e.context(format!("cannot allocate {nbytes} bytes of device memory")))
}

/// Run a GPU kernel on device buffers directly. Host-resident inputs are uploaded
/// to temporaries (counted); returns `false` (nothing done) when some argument
/// cannot be bound directly and the call must be staged through the host.
fn run_resident(
    it: &Interp,
    jit: &Jit,
    kernel: &dyn CompiledKernel,
    args: &[StagedArg],
) -> std::result::Result<bool, BackendError> {
    // Every tensor must be device-resident (or a read-only host input), bindable,
    // at offset 0, and no written storage may appear twice.
    let mut seen: Vec<(*const Storage, bool)> = Vec::new();
    let mut bufs: Vec<Option<Arc<dyn DeviceMemory>>> = Vec::with_capacity(args.len());
    for a in args {
        let StagedArg::Tensor(t, w) = a else {
            bufs.push(None);
            continue;
        };
        if !jit.resident_compatible(t.dtype()) || t.0.offset != 0 {
            return Ok(false);
        }
        let p = Arc::as_ptr(&t.0.storage);
        if let Some(e) = seen.iter_mut().find(|(q, _)| *q == p) {
            if e.1 || *w {
                return Ok(false);
            }
        } else {
            seen.push((p, *w));
        }
        let buf = device_buffer(t).map_err(|e| BackendError::from(e.to_string()))?;
        match &buf {
            Some(b) if b.gpu_buffer().is_some() => {}
            Some(_) => return Ok(false),
            None if *w => return Ok(false),
            None => {}
        }
        bufs.push(buf);
    }
    // Upload host inputs, once while the same unchanged host memory is passed again
    // (the JIT keeps them resident, keyed by the storage's identity and write version:
    // every write lock of a storage moves its version on, read here under the lock).
    let mut temps: Vec<Option<Arc<relax_gpu_runtime::DeviceBuffer>>> = Vec::with_capacity(args.len());
    for (a, b) in args.iter().zip(&bufs) {
        let temp = match (a, b) {
            (StagedArg::Tensor(t, _), None) => {
                let owner: Arc<dyn std::any::Any + Send + Sync> = t.0.storage.clone();
                let guard = t.0.storage.read().map_err(|e| BackendError::from(e.to_string()))?;
                let StorageData::Host(h) = &*guard else {
                    return Err("argument staging mismatch".into());
                };
                let range = t.0.offset..t.0.offset + t.nbytes();
                let bytes = h
                    .bytes()
                    .get(range)
                    .ok_or_else(|| BackendError::from("tensor view exceeds its storage"))?;
                let version = t.0.storage.version.load(std::sync::atomic::Ordering::Acquire);
                let (buf, uploaded) = jit.resident_upload(&owner, t.0.offset, version, bytes)?;
                if uploaded {
                    it.prog.stats.record_copy(CopyKind::Upload, bytes.len() as u64);
                }
                Some(buf)
            }
            _ => None,
        };
        temps.push(temp);
    }
    let mut kargs = Vec::with_capacity(args.len());
    for ((a, b), temp) in args.iter().zip(&bufs).zip(&temps) {
        kargs.push(match a {
            StagedArg::Tensor(t, _) => {
                let buf = match (b, temp) {
                    (Some(b), _) => b.gpu_buffer().ok_or_else(|| BackendError::from("not a GPU buffer"))?,
                    (None, Some(tmp)) => &**tmp,
                    (None, None) => return Err("argument staging mismatch".into()),
                };
                KernelArg::Device {
                    buf,
                    dtype: t.dtype(),
                    shape: t.shape(),
                }
            }
            StagedArg::Scalar(p) => scalar_arg(p),
        });
    }
    kernel.run(&mut kargs)?;
    Ok(true)
}
