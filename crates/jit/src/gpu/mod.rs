//! GPU execution: pipelines created on first call through the GPU runtime, then
//! cached dispatch of every kernel of a PrimFunc in one submission.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use relax_gpu_runtime::{BufferRange, DeviceBuffer, GpuRuntime, Kernel, KernelLayout};
use relax_ir::{DataType, PrimFunc, TypeCode};

use crate::args::{check_args, eval_int, KernelArg};
use crate::context::JitContext;
use crate::disk_cache::{fnv64, EntryKind};
use crate::error::{JitError, Result};
use crate::kernel_cache::{kernel_hash, KernelCache};
use crate::lower;
use crate::lower::ParamSlot;
use crate::program::{emit_program, ProgramSource};
use crate::schedule::Grid;
use crate::tensor::{host_elem_bytes, read_i64, write_i64};
use crate::wgsl::{Access, BufRef, DeviceCaps, StorageTy, UniformTy};

pub(crate) mod oob;
pub(crate) mod resident;

/// A PrimFunc compiled for the GPU: its kernels' sources and pipelines.
pub struct GpuProgram {
    /// Sources and binding information.
    pub source: ProgramSource,
    pipelines: Vec<Arc<Kernel>>,
}

fn gpu_err(e: relax_gpu_runtime::GpuError) -> JitError {
    JitError::Gpu(e)
}

/// The [`Jit`](crate::Jit)'s GPU half: the runtime, the programs compiled for it,
/// resident uploads and the out-of-bounds flags.
pub(crate) struct GpuJit {
    /// The device.
    pub(crate) rt: Arc<GpuRuntime>,
    cache: KernelCache<GpuProgram>,
    resident: resident::ResidentCache,
    oob: oob::OobState,
    /// Pipelines were created since the driver's pipeline cache was last saved.
    pub(crate) pipelines_unsaved: AtomicBool,
}

/// Whether tensors of `dtype` can be bound from device memory holding their host
/// bytes (see `Jit::resident_compatible`).
pub(crate) fn resident_compatible(caps: &DeviceCaps, dtype: DataType) -> bool {
    StorageTy::of(dtype, caps).is_ok_and(|st| host_matches(dtype, st))
}

impl GpuJit {
    /// The GPU half for `rt`, with empty caches.
    pub(crate) fn new(rt: Arc<GpuRuntime>) -> GpuJit {
        GpuJit {
            rt,
            cache: KernelCache::default(),
            resident: Default::default(),
            oob: Default::default(),
            pipelines_unsaved: AtomicBool::new(false),
        }
    }

    /// The program of `f`, compiled on first use (see `Jit::gpu_program`).
    pub(crate) fn program(&self, cx: &JitContext, f: &PrimFunc) -> Result<Arc<GpuProgram>> {
        let (p, hit) = self.cache.get_or_build(f, || {
            if cx.options.generic_channels && params_fit(f, cx.caps.max_binding_bytes) {
                if let Some(g) = crate::specialize::generic_version(f, &cx.options) {
                    // A generic version that fails to compile leaves `f` to compile as it is.
                    if let Ok((p, _)) = self.cache.get_or_build(&g, || self.build_program(cx, &g)) {
                        return Ok(p);
                    }
                }
            }
            self.build_program(cx, f)
        })?;
        if hit {
            cx.counters.gpu_cache_hits.fetch_add(1, Ordering::Relaxed);
        }
        Ok(p)
    }

    /// Compile `f`'s program: its source (see `program_source`) and pipelines.
    fn build_program(&self, cx: &JitContext, f: &PrimFunc) -> Result<Arc<GpuProgram>> {
        let rt = &self.rt;
        let t0 = Instant::now();
        let source = Self::program_source(cx, f)?;
        let ours = t0.elapsed();
        let t1 = Instant::now();
        let mut pipelines = Vec::new();
        for k in &source.kernels {
            let storage: Vec<relax_gpu_runtime::Access> = k
                .bindings
                .iter()
                .map(|b| match b.access {
                    Access::Read => relax_gpu_runtime::Access::Read,
                    Access::ReadWrite => relax_gpu_runtime::Access::ReadWrite,
                })
                .collect();
            let layout = KernelLayout::new(storage, 4 * k.uniforms.len() as u32);
            let wgsl = self.oob.register(&k.name, &k.oob_sites, &k.wgsl);
            pipelines.push(rt.create_kernel(&wgsl, "main", &layout).map_err(gpu_err)?);
        }
        let c = &cx.counters;
        c.our_compile_ns.fetch_add(ours.as_nanos() as u64, Ordering::Relaxed);
        c.driver_compile_ns
            .fetch_add(t1.elapsed().as_nanos() as u64, Ordering::Relaxed);
        c.gpu_programs_compiled.fetch_add(1, Ordering::Relaxed);
        c.kernels_compiled.fetch_add(pipelines.len() as u64, Ordering::Relaxed);
        self.pipelines_unsaved.store(true, Ordering::Release);
        Ok(Arc::new(GpuProgram { source, pipelines }))
    }

    /// The program source of `f`: from the persistent cache when it holds it, else
    /// lowered, scheduled, emitted and checked (and then stored there).
    fn program_source(cx: &JitContext, f: &PrimFunc) -> Result<ProgramSource> {
        let Some(disk) = &cx.disk else {
            let source = emit_program(f, &cx.caps, &cx.options)?;
            oob::static_check(&source.lowered)?;
            return Ok(source);
        };
        let key = crate::program_record::program_key(f, &cx.caps, &cx.options);
        let name = format!("{:016x}{:016x}", kernel_hash(f), fnv64(&[&key]));
        if let Some(bytes) = disk.get(EntryKind::Kernels, &name, &key) {
            let lowered = Arc::new(lower::lower(f)?);
            if let Some(source) = crate::program_record::decode(&bytes, lowered) {
                cx.counters.disk_cache_hits.fetch_add(1, Ordering::Relaxed);
                return Ok(source);
            }
        }
        cx.counters.disk_cache_misses.fetch_add(1, Ordering::Relaxed);
        let source = emit_program(f, &cx.caps, &cx.options)?;
        oob::static_check(&source.lowered)?;
        if let Some(record) = crate::program_record::encode(&source) {
            if disk.put(EntryKind::Kernels, &name, &key, &record).is_ok() {
                cx.counters.disk_cache_writes.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(source)
    }

    /// Run `f`, whose program `prog` is (see `Jit::run_gpu`): a compiled kernel
    /// keeps its program, so a call does not look it up again (a structural hash and
    /// comparison of the whole PrimFunc per dispatch was most of the host's time per
    /// GPU kernel call).
    pub(crate) fn run_program(
        &self,
        cx: &JitContext,
        name: &str,
        f: &PrimFunc,
        prog: &Arc<GpuProgram>,
        args: &mut [KernelArg<'_>],
    ) -> Result<()> {
        let rt = self.rt.clone();
        let lf = &prog.source.lowered;
        let shapes = check_args(lf, args)?;
        // A tensor of symbolic size past one storage binding: the kernels compiled for
        // these sizes (cached per size), whose emitter binds it in chunks.
        if !lf.shape_binds.is_empty() && oversized_unchunked(&rt, prog, args, &shapes) {
            let values = lf
                .shape_binds
                .iter()
                .filter_map(|b| Some((b.var.id(), *shapes.get(b.param)?.get(b.dim)?)))
                .collect();
            let g = crate::specialize::specialize(f, &values);
            let prog = self.program(cx, &g)?;
            return self.run_program(cx, name, &g, &prog, args);
        }
        let (read, written) = buffer_use(prog, args.len());
        // Temporaries for the host tensors the kernels bind.
        let mut temps: HashMap<usize, (DeviceBuffer, StorageTy)> = HashMap::new();
        let mut scalars = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            scalars.push(match a {
                KernelArg::Int(x) => ScalarArg::Int(*x),
                KernelArg::Float(x) => ScalarArg::Float(*x),
                KernelArg::Device { buf, dtype, .. } => {
                    if !resident_compatible(&cx.caps, *dtype) {
                        return Err(JitError::UnsupportedDtype {
                            dtype: *dtype,
                            context: "in device memory without widening (stage it through the host)".into(),
                        });
                    }
                    let numel: i64 = shapes[i].iter().product();
                    check_extent(numel, || format!("argument {i} of `{}`", lf.name))?;
                    let need = numel.max(0) as u64 * u64::from(dtype.bits / 8);
                    if buf.len() < need {
                        return Err(JitError::BadArgs(format!(
                            "argument {i} of `{}`: device buffer of {} bytes for {need} bytes of data",
                            lf.name,
                            buf.len()
                        )));
                    }
                    ScalarArg::None
                }
                KernelArg::Read { dtype, .. } | KernelArg::Write { dtype, .. } => {
                    let bytes = a.host_bytes().unwrap_or_default();
                    let n = crate::tensor::numel(&shapes[i])?;
                    if n.checked_mul(host_elem_bytes(*dtype)?) != Some(bytes.len()) {
                        return Err(JitError::BadArgs(format!(
                            "argument {i} of `{}` has {} bytes, expected {n} elements of {dtype}",
                            lf.name,
                            bytes.len()
                        )));
                    }
                    if read[i] {
                        let st = StorageTy::of(*dtype, &cx.caps)?;
                        check_extent(n as i64, || format!("argument {i} of `{}`", lf.name))?;
                        let staged = to_storage(*dtype, bytes, st);
                        let buf = upload(&rt, &staged).map_err(|e| too_large(&rt, lf, i, e))?;
                        temps.insert(i, (buf, st));
                    }
                    ScalarArg::None
                }
            });
        }
        let mut bound: HashMap<usize, &DeviceBuffer> = temps.iter().map(|(i, (b, _))| (*i, b)).collect();
        for (i, a) in args.iter().enumerate() {
            if let KernelArg::Device { buf, .. } = a {
                bound.insert(i, *buf);
            }
        }
        self.dispatch_program(cx, prog, &scalars, &shapes, &bound, name)?;
        if temps.is_empty() {
            return Ok(());
        }
        for (i, a) in args.iter_mut().enumerate() {
            if let (true, KernelArg::Write { dtype, bytes, .. }, Some((buf, st))) = (written[i], a, temps.get(&i)) {
                let data = rt.read(buf).map_err(gpu_err)?;
                from_storage(*dtype, bytes, *st, &data)?;
            }
        }
        self.check_bounds()
    }

    /// Dispatch every kernel of `prog` in one submission on the bound parameter buffers.
    fn dispatch_program(
        &self,
        cx: &JitContext,
        prog: &GpuProgram,
        scalars: &[ScalarArg],
        shapes: &[Vec<i64>],
        bufs: &HashMap<usize, &DeviceBuffer>,
        name: &str,
    ) -> Result<()> {
        let rt = &self.rt;
        let lf = &prog.source.lowered;
        let vars = var_values(lf, scalars, shapes)?;
        let floats = float_vars(lf, scalars);
        let mut scratch = Vec::new();
        for b in &lf.scratch {
            let n = eval_int(&b.shape()[0], &vars)?;
            check_extent(n, || format!("scratch buffer `{}`", b.name()))?;
            let st = StorageTy::of(b.dtype(), &cx.caps)?;
            let len = (n.max(1) as u64) * st.bytes() as u64;
            scratch.push(rt.alloc(len.div_ceil(4) * 4).map_err(gpu_err)?);
        }
        let flag = match prog.source.kernels.iter().any(|k| !k.oob_sites.is_empty()) {
            true => Some(self.oob.flag(rt)?),
            false => None,
        };
        let limit = rt.limits().max_compute_workgroups_per_dimension as i64;
        let software = rt.adapter_info().is_software();
        let mut batch = rt.batch();
        for (k, pipe) in prog.source.kernels.iter().zip(&prog.pipelines) {
            if software {
                let adapter = &rt.adapter_info().name;
                crate::loop_trips::check_software_limit(k.loop_trips.as_ref(), &vars, name, &k.name, adapter)?;
            }
            let groups = match &k.grid {
                Grid::Linear(e) => {
                    let n = eval_int(e, &vars)?;
                    if n <= 0 {
                        continue;
                    }
                    let y = (n + limit - 1) / limit;
                    if y > limit {
                        return Err(JitError::TooLarge(format!("{n} workgroups in kernel {}", k.name)));
                    }
                    [n.min(limit) as u32, y as u32, 1]
                }
                Grid::Dims(d) => {
                    let mut g = [1u32; 3];
                    for (n, e) in d.iter().enumerate() {
                        let v = eval_int(e, &vars)?;
                        if v <= 0 {
                            g[n] = 0;
                        } else if v > limit {
                            return Err(JitError::TooLarge(format!(
                                "{v} workgroups in one grid dimension of kernel {}",
                                k.name
                            )));
                        } else {
                            g[n] = v as u32;
                        }
                    }
                    if g.contains(&0) {
                        continue;
                    }
                    g
                }
            };
            if k.name.ends_with(crate::schedule::FEW_ROWS_SUFFIX) {
                cx.counters.few_row_dispatches.fetch_add(1, Ordering::Relaxed);
            }
            let mut ubytes = Vec::with_capacity(4 * k.uniforms.len());
            for u in &k.uniforms {
                let v = vars.get(&u.var.id());
                let fv = floats.get(&u.var.id()).copied();
                match u.ty {
                    UniformTy::F32 => {
                        let x = fv.or(v.map(|&i| i as f64)).unwrap_or(0.0);
                        ubytes.extend_from_slice(&(x as f32).to_le_bytes());
                    }
                    UniformTy::I32 | UniformTy::U32 => {
                        let x = *v.ok_or_else(|| {
                            JitError::InvalidIr(format!(
                                "kernel {} uses `{}`, which has no value",
                                k.name,
                                u.var.name()
                            ))
                        })?;
                        let ok = if u.ty == UniformTy::I32 {
                            i32::try_from(x).is_ok()
                        } else {
                            u32::try_from(x).is_ok()
                        };
                        if !ok && !u.var.dtype().is_bool() {
                            return Err(JitError::TooLarge(format!(
                                "value {x} of `{}` does not fit in 32 bits",
                                u.var.name()
                            )));
                        }
                        ubytes.extend_from_slice(&(x as u32).to_le_bytes());
                    }
                }
            }
            let mut bound: Vec<BufferRange<'_>> = Vec::new();
            for b in &k.bindings {
                let buf = match b.buf {
                    BufRef::Param(i) => bufs.get(&i).copied(),
                    BufRef::Scratch(i) => scratch.get(i),
                    BufRef::Bounds => flag.as_deref(),
                }
                .ok_or_else(|| JitError::InvalidIr(format!("kernel {} binds a missing buffer", k.name)))?;
                bound.push(binding_range(rt, lf, b, buf)?);
            }
            batch.dispatch_ranges(pipe, &bound, &ubytes, groups).map_err(gpu_err)?;
        }
        if cx.profiling() {
            let timing = batch.submit_timed().map_err(gpu_err)?;
            let flops = crate::profile::flops_of(lf, &vars);
            let time = timing.gpu.unwrap_or(timing.wall);
            let name = if name.is_empty() { &lf.name } else { name };
            cx.profiler.record(name, time, flops, timing.gpu.is_some());
            return Ok(());
        }
        batch.submit().map_err(gpu_err)
    }
}

/// Whether every buffer parameter of `f` has a constant shape whose elements fit in
/// one storage binding of `max_bytes` (at 8 bytes an element): a generic version
/// of `f` is bound whole, as a function of symbolic shape is.
fn params_fit(f: &PrimFunc, max_bytes: u64) -> bool {
    f.buffer_map.iter().all(|(_, b)| {
        b.shape()
            .iter()
            .try_fold(8u64, |n, d| n.checked_mul(u64::try_from(d.as_int()?).ok()?))
            .is_some_and(|n| n <= max_bytes)
    })
}

/// Whether a kernel of `prog` binds whole a tensor argument larger than one storage
/// binding may hold (its size was not known when the kernel was compiled).
fn oversized_unchunked(rt: &GpuRuntime, prog: &GpuProgram, args: &[KernelArg<'_>], shapes: &[Vec<i64>]) -> bool {
    let max = rt.max_binding_bytes();
    prog.source
        .kernels
        .iter()
        .flat_map(|k| &k.bindings)
        .any(|b| match (b.buf, b.chunk) {
            (BufRef::Param(i), None) => {
                let numel = shapes.get(i).map_or(0, |s| s.iter().product::<i64>()).max(0) as u64;
                let elem = match args.get(i) {
                    Some(KernelArg::Device { dtype, .. }) => u64::from(dtype.bits / 8).max(1),
                    _ => b.storage.bytes() as u64,
                };
                numel.saturating_mul(elem) > max
            }
            _ => false,
        })
}

/// The scalar value of one argument (tensors have none).
#[derive(Clone, Copy)]
enum ScalarArg {
    Int(i64),
    Float(f64),
    None,
}

/// Which parameters the kernels of `prog` bind, and which they write.
fn buffer_use(prog: &GpuProgram, n: usize) -> (Vec<bool>, Vec<bool>) {
    let mut read = vec![false; n];
    let mut written = vec![false; n];
    for k in &prog.source.kernels {
        for b in &k.bindings {
            if let BufRef::Param(i) = b.buf {
                if i < n {
                    read[i] = true;
                    if b.access == Access::ReadWrite {
                        written[i] = true;
                    }
                }
            }
        }
    }
    (read, written)
}

fn upload(rt: &GpuRuntime, bytes: &[u8]) -> Result<DeviceBuffer> {
    if bytes.is_empty() {
        return rt.upload(&[0u8; 4]).map_err(gpu_err);
    }
    if !bytes.len().is_multiple_of(4) {
        let mut v = bytes.to_vec();
        v.resize(bytes.len().div_ceil(4) * 4, 0);
        return rt.upload(&v).map_err(gpu_err);
    }
    rt.upload(bytes).map_err(gpu_err)
}

/// The range of `buf` bound for binding `b`: the whole buffer, or one aligned chunk
/// of a tensor larger than one storage binding may hold.
fn binding_range<'a>(
    rt: &GpuRuntime,
    lf: &crate::lower::LoweredFunc,
    b: &crate::wgsl::BindingInfo,
    buf: &'a DeviceBuffer,
) -> Result<BufferRange<'a>> {
    let max = rt.max_binding_bytes();
    match b.chunk {
        Some((first, count)) => {
            let eb = b.storage.bytes() as u64;
            let offset = first * eb;
            let size = (count * eb).div_ceil(4) * 4;
            if offset + size > buf.capacity().max(4) {
                return Err(JitError::BadArgs(format!(
                    "tensor `{}` of `{}`: a buffer of {} bytes for a chunk ending at byte {}",
                    b.name,
                    lf.name,
                    buf.len(),
                    offset + size
                )));
            }
            Ok(BufferRange { buf, offset, size })
        }
        None if buf.binding_size() > max => Err(JitError::TooLarge(format!(
            "tensor `{}` of `{}` needs {} bytes, more than one storage binding may hold ({max} bytes) on adapter {}; \
             its size is not known when the kernel is compiled, so it cannot be bound in chunks",
            b.name,
            lf.name,
            buf.binding_size(),
            rt.adapter_info().name
        ))),
        None => Ok(BufferRange::whole(buf)),
    }
}

/// An upload error, naming the argument and the adapter when the tensor is too large.
fn too_large(rt: &GpuRuntime, lf: &crate::lower::LoweredFunc, i: usize, e: JitError) -> JitError {
    match e {
        JitError::Gpu(m @ relax_gpu_runtime::GpuError::BufferTooLarge { .. }) => JitError::TooLarge(format!(
            "argument {i} of `{}` does not fit in one buffer on adapter {}: {m}",
            lf.name,
            rt.adapter_info().name
        )),
        e => e,
    }
}

/// Refuse `n` elements past 32-bit indexing; `what` names the tensor (worked out only
/// for the error: this runs for every argument of every dispatch).
fn check_extent(n: i64, what: impl FnOnce() -> String) -> Result<()> {
    if n > i32::MAX as i64 {
        return Err(JitError::TooLarge(format!(
            "{} has {n} elements (GPU kernels index with 32 bits)",
            what()
        )));
    }
    Ok(())
}

fn float_vars(lf: &crate::lower::LoweredFunc, args: &[ScalarArg]) -> HashMap<u64, f64> {
    let mut m = HashMap::new();
    for (p, a) in lf.params.iter().zip(args) {
        if let (ParamSlot::Scalar(v), ScalarArg::Float(x)) = (p, a) {
            m.insert(v.id(), *x);
        }
    }
    m
}

fn var_values(lf: &crate::lower::LoweredFunc, args: &[ScalarArg], shapes: &[Vec<i64>]) -> Result<HashMap<u64, i64>> {
    let mut vars = HashMap::new();
    for (p, a) in lf.params.iter().zip(args) {
        if let ParamSlot::Scalar(v) = p {
            match a {
                ScalarArg::Int(x) => vars.insert(v.id(), *x),
                ScalarArg::Float(x) => vars.insert(v.id(), *x as i64),
                ScalarArg::None => None,
            };
        }
    }
    for b in &lf.shape_binds {
        vars.insert(b.var.id(), shapes[b.param][b.dim]);
    }
    for (e, p, d) in &lf.shape_checks {
        let want = eval_int(e, &vars)?;
        if want != shapes[*p][*d] {
            return Err(JitError::BadArgs(format!(
                "argument {p} of `{}` has extent {} in dimension {d}, expected {want}",
                lf.name, shapes[*p][*d]
            )));
        }
    }
    Ok(vars)
}

/// Host tensor bytes to the shader's storage layout (narrow ints widened to words).
fn to_storage(dt: DataType, bytes: &[u8], st: StorageTy) -> Vec<u8> {
    if host_matches(dt, st) {
        return bytes.to_vec();
    }
    let n = bytes.len() / (dt.bits as usize).div_ceil(8).max(1);
    let mut out = vec![0u8; n * 4];
    if let (Some(f), StorageTy::F32) = (dt.mini_float(), st) {
        for (i, &b) in bytes.iter().enumerate().take(n) {
            let v = f.decode(b) as f32;
            out[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        return out;
    }
    if (dt.code, dt.bits, st) == (TypeCode::BFloat, 16, StorageTy::F32) {
        for (i, h) in bytes.chunks_exact(2).enumerate() {
            let v = half::bf16::from_le_bytes([h[0], h[1]]).to_f32();
            out[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        return out;
    }
    if (dt.code, dt.bits, st) == (TypeCode::Float, 16, StorageTy::F32) {
        for (i, h) in bytes.chunks_exact(2).enumerate() {
            let v = half::f16::from_le_bytes([h[0], h[1]]).to_f32();
            out[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        return out;
    }
    for i in 0..n {
        let v = read_i64(dt, bytes, i);
        out[i * 4..i * 4 + 4].copy_from_slice(&(v as u32).to_le_bytes());
    }
    out
}

/// Read-back storage words into host tensor bytes `out` of `dt`.
fn from_storage(dt: DataType, out: &mut [u8], st: StorageTy, bytes: &[u8]) -> Result<()> {
    let short = |want: usize| JitError::Readback(format!("read back {} bytes, expected {want}", bytes.len()));
    if host_matches(dt, st) {
        let nb = out.len();
        out.copy_from_slice(bytes.get(..nb).ok_or_else(|| short(nb))?);
        return Ok(());
    }
    let n = out.len() / (dt.bits as usize).div_ceil(8).max(1);
    let words = bytes.get(..n * 4).ok_or_else(|| short(n * 4))?;
    if let (Some(f), StorageTy::F32) = (dt.mini_float(), st) {
        for (i, w) in words.chunks_exact(4).enumerate() {
            out[i] = f.encode(f64::from(f32::from_le_bytes([w[0], w[1], w[2], w[3]])));
        }
        return Ok(());
    }
    if (dt.code, dt.bits, st) == (TypeCode::BFloat, 16, StorageTy::F32) {
        for (i, w) in words.chunks_exact(4).enumerate() {
            let h = half::bf16::from_f32(f32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            out[i * 2..i * 2 + 2].copy_from_slice(&h.to_le_bytes());
        }
        return Ok(());
    }
    if (dt.code, dt.bits, st) == (TypeCode::Float, 16, StorageTy::F32) {
        for (i, w) in words.chunks_exact(4).enumerate() {
            let h = half::f16::from_f32(f32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            out[i * 2..i * 2 + 2].copy_from_slice(&h.to_le_bytes());
        }
        return Ok(());
    }
    let signed = dt.code == TypeCode::Int;
    for (i, w) in words.chunks_exact(4).enumerate() {
        let w = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        let v = if signed { w as i32 as i64 } else { w as i64 };
        write_i64(dt, out, i, v);
    }
    Ok(())
}

fn host_matches(dt: DataType, st: StorageTy) -> bool {
    matches!(
        (dt.code, dt.bits, st),
        (TypeCode::Float, 16, StorageTy::F16)
            | (TypeCode::Float, 32, StorageTy::F32)
            | (TypeCode::Float, 64, StorageTy::F64)
            | (TypeCode::Int, 32, StorageTy::I32)
            | (TypeCode::UInt, 32, StorageTy::U32)
            | (TypeCode::Int, 64, StorageTy::I64)
            | (TypeCode::UInt, 64, StorageTy::U64)
    )
}
