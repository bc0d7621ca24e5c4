//! GPU execution: pipelines created on first call through the GPU runtime, then
//! cached dispatch of every kernel of a PrimFunc in one submission.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use relax_gpu_runtime::{BufferRange, DeviceBuffer, GpuRuntime, Kernel, KernelLayout};
use relax_ir::{DataType, PrimFunc, TypeCode};

use crate::error::{JitError, Result};
use crate::host::{check_args, eval_int, Arg};
use crate::jit::{emit_program, Jit, ProgramSource};
use crate::lower::ParamSlot;
use crate::schedule::Grid;
use crate::tensor::{read_i64, write_i64, HostTensor};
use crate::wgsl::{Access, BufRef, StorageTy, UniformTy};

/// A PrimFunc compiled for the GPU: its kernels' sources and pipelines.
pub struct GpuProgram {
    /// Sources and binding information.
    pub source: ProgramSource,
    pipelines: Vec<Arc<Kernel>>,
}

fn gpu_err(e: relax_gpu_runtime::GpuError) -> JitError {
    JitError::Gpu(e)
}

impl Jit {
    /// The GPU program of `f`, compiled on first use (per structural hash).
    pub fn gpu_program(&self, f: &PrimFunc) -> Result<Arc<GpuProgram>> {
        let rt = self.gpu.as_ref().ok_or(JitError::NoGpu)?;
        let (p, hit) = self.gpu_cache.get_or_build(f, || {
            let t0 = Instant::now();
            let source = emit_program(f, &self.caps, &self.options)?;
            crate::oob::static_check(&source.lowered)?;
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
            let c = &self.counters;
            c.ours_ns.fetch_add(ours.as_nanos() as u64, Ordering::Relaxed);
            c.driver_ns.fetch_add(t1.elapsed().as_nanos() as u64, Ordering::Relaxed);
            c.gpu_programs.fetch_add(1, Ordering::Relaxed);
            c.kernels.fetch_add(pipelines.len() as u64, Ordering::Relaxed);
            Ok(Arc::new(GpuProgram { source, pipelines }))
        })?;
        if hit {
            self.counters.gpu_hits.fetch_add(1, Ordering::Relaxed);
        }
        Ok(p)
    }

    /// Run `f` on the GPU: tensors are uploaded, every kernel dispatched in one
    /// submission, and the tensors the kernels write are read back in place.
    pub fn run_gpu(&self, f: &PrimFunc, args: &mut [Arg<'_>]) -> Result<()> {
        let rt = self.gpu.as_ref().ok_or(JitError::NoGpu)?.clone();
        let prog = self.gpu_program(f)?;
        let lf = &prog.source.lowered;
        check_arity(lf, args.len())?;
        let shapes = check_args(lf, args)?;
        let (read, written) = buffer_use(&prog, args.len());
        // Device buffers for tensor parameters.
        let mut bufs: HashMap<usize, DeviceBuffer> = HashMap::new();
        let mut storage_of: HashMap<usize, StorageTy> = HashMap::new();
        for (i, a) in args.iter().enumerate() {
            if let (Arg::Tensor(t), ParamSlot::Buffer { .. }) = (a, &lf.params[i]) {
                if !read[i] {
                    continue;
                }
                let st = StorageTy::of(t.dtype(), &self.caps)?;
                storage_of.insert(i, st);
                check_extent(t.numel() as i64, &format!("argument {i} of `{}`", lf.name))?;
                let bytes = to_storage(t, st);
                let buf = upload(&rt, &bytes).map_err(|e| too_large(&rt, lf, i, e))?;
                bufs.insert(i, buf);
            }
        }
        let scalars: Vec<ScalarArg> = args
            .iter()
            .map(|a| match a {
                Arg::Int(x) => ScalarArg::Int(*x),
                Arg::Float(x) => ScalarArg::Float(*x),
                Arg::Tensor(_) => ScalarArg::None,
            })
            .collect();
        let bound: HashMap<usize, &DeviceBuffer> = bufs.iter().map(|(i, b)| (*i, b)).collect();
        self.dispatch_program(&rt, &prog, &scalars, &shapes, &bound, "")?;
        for (i, a) in args.iter_mut().enumerate() {
            if !written[i] {
                continue;
            }
            if let (Arg::Tensor(t), Some(buf), Some(st)) = (a, bufs.get(&i), storage_of.get(&i)) {
                let bytes = rt.read(buf).map_err(gpu_err)?;
                from_storage(t, *st, &bytes)?;
            }
        }
        self.check_gpu_bounds()
    }

    /// Whether tensors of `dtype` can be bound directly from device memory holding
    /// their little-endian host bytes (no widening to 32-bit words needed), which is
    /// what [`Jit::run_gpu_resident`] requires.
    pub fn resident_compatible(&self, dtype: DataType) -> bool {
        StorageTy::of(dtype, &self.caps).is_ok_and(|st| host_matches(dtype, st))
    }

    /// Run `f` on the GPU on tensors that already live in device memory (buffers of
    /// this JIT's runtime holding little-endian host bytes, see
    /// [`Jit::resident_compatible`]). Nothing is copied: outputs are written in place
    /// and the call returns after submission (later reads wait for it).
    pub fn run_gpu_resident(&self, f: &PrimFunc, args: &[GpuArg<'_>]) -> Result<()> {
        self.run_gpu_resident_named("", f, args)
    }

    /// [`Jit::run_gpu_resident`] with the name the caller knows `f` by (its global
    /// name in a module), used by the profile; empty: the PrimFunc's own name.
    pub fn run_gpu_resident_named(&self, name: &str, f: &PrimFunc, args: &[GpuArg<'_>]) -> Result<()> {
        let rt = self.gpu.as_ref().ok_or(JitError::NoGpu)?.clone();
        let prog = self.gpu_program(f)?;
        let lf = &prog.source.lowered;
        check_arity(lf, args.len())?;
        let mut shapes = Vec::with_capacity(args.len());
        let mut scalars = Vec::with_capacity(args.len());
        let mut bound: HashMap<usize, &DeviceBuffer> = HashMap::new();
        for (i, (p, a)) in lf.params.iter().zip(args).enumerate() {
            match (p, a) {
                (ParamSlot::Buffer { orig, .. }, GpuArg::Buffer { buf, dtype, shape }) => {
                    if *dtype != orig.dtype() || shape.len() != orig.shape().len() {
                        return Err(JitError::BadArgs(format!(
                            "argument {i} (`{}`) of `{}` is a {dtype} tensor of rank {}, expected {} of rank {}",
                            orig.name(),
                            lf.name,
                            shape.len(),
                            orig.dtype(),
                            orig.shape().len()
                        )));
                    }
                    if !self.resident_compatible(*dtype) {
                        return Err(JitError::UnsupportedDtype {
                            dtype: *dtype,
                            context: "in device memory without widening (stage it through the host)".into(),
                        });
                    }
                    let numel: i64 = shape.iter().product();
                    check_extent(numel, &format!("argument {i} of `{}`", lf.name))?;
                    let need = numel.max(0) as u64 * u64::from(dtype.bits / 8);
                    if buf.len() < need {
                        return Err(JitError::BadArgs(format!(
                            "argument {i} of `{}`: device buffer of {} bytes for {need} bytes of data",
                            lf.name,
                            buf.len()
                        )));
                    }
                    shapes.push(shape.to_vec());
                    scalars.push(ScalarArg::None);
                    bound.insert(i, *buf);
                }
                (ParamSlot::Scalar(_), GpuArg::Int(x)) => {
                    shapes.push(vec![]);
                    scalars.push(ScalarArg::Int(*x));
                }
                (ParamSlot::Scalar(_), GpuArg::Float(x)) => {
                    shapes.push(vec![]);
                    scalars.push(ScalarArg::Float(*x));
                }
                _ => {
                    return Err(JitError::BadArgs(format!(
                        "argument {i} of `{}` has the wrong kind",
                        lf.name
                    )))
                }
            }
        }
        self.dispatch_program(&rt, &prog, &scalars, &shapes, &bound, name)
    }

    /// Dispatch every kernel of `prog` in one submission on the bound parameter buffers.
    fn dispatch_program(
        &self,
        rt: &GpuRuntime,
        prog: &GpuProgram,
        scalars: &[ScalarArg],
        shapes: &[Vec<i64>],
        bufs: &HashMap<usize, &DeviceBuffer>,
        name: &str,
    ) -> Result<()> {
        let lf = &prog.source.lowered;
        let vars = var_values(lf, scalars, shapes)?;
        let floats = float_vars(lf, scalars);
        let mut scratch = Vec::new();
        for b in &lf.scratch {
            let n = eval_int(&b.shape()[0], &vars)?;
            check_extent(n, &format!("scratch buffer `{}`", b.name()))?;
            let st = StorageTy::of(b.dtype(), &self.caps)?;
            let len = (n.max(1) as u64) * st.bytes() as u64;
            scratch.push(rt.alloc(len.div_ceil(4) * 4).map_err(gpu_err)?);
        }
        let flag = match prog.source.kernels.iter().any(|k| !k.oob_sites.is_empty()) {
            true => Some(self.oob.flag(rt)?),
            false => None,
        };
        let limit = rt.limits().max_compute_workgroups_per_dimension as i64;
        let mut batch = rt.batch();
        for (k, pipe) in prog.source.kernels.iter().zip(&prog.pipelines) {
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
        if self.profiling() {
            let timing = batch.submit_timed().map_err(gpu_err)?;
            let flops = crate::profile::flops_of(lf, &vars);
            let time = timing.gpu.unwrap_or(timing.wall);
            let name = if name.is_empty() { &lf.name } else { name };
            self.profiler.record(name, time, flops, timing.gpu.is_some());
            return Ok(());
        }
        batch.submit().map_err(gpu_err)
    }
}

/// One argument of [`Jit::run_gpu_resident`], in the PrimFunc's parameter order.
pub enum GpuArg<'a> {
    /// A tensor in device memory (little-endian host bytes, row-major).
    Buffer {
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

/// The scalar value of one argument (tensors have none).
#[derive(Clone, Copy)]
enum ScalarArg {
    Int(i64),
    Float(f64),
    None,
}

fn check_arity(lf: &crate::lower::LoweredFunc, n: usize) -> Result<()> {
    if n != lf.params.len() {
        return Err(JitError::BadArgs(format!(
            "`{}` takes {} arguments, {} given",
            lf.name,
            lf.params.len(),
            n
        )));
    }
    Ok(())
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

fn check_extent(n: i64, what: &str) -> Result<()> {
    if n > i32::MAX as i64 {
        return Err(JitError::TooLarge(format!(
            "{what} has {n} elements (GPU kernels index with 32 bits)"
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
fn to_storage(t: &HostTensor, st: StorageTy) -> Vec<u8> {
    let dt = t.dtype();
    if host_matches(dt, st) {
        return t.bytes().to_vec();
    }
    let n = t.numel();
    let mut out = vec![0u8; n * 4];
    for i in 0..n {
        let v = read_i64(dt, t.bytes(), i);
        out[i * 4..i * 4 + 4].copy_from_slice(&(v as u32).to_le_bytes());
    }
    out
}

fn from_storage(t: &mut HostTensor, st: StorageTy, bytes: &[u8]) -> Result<()> {
    let dt = t.dtype();
    let n = t.numel();
    if host_matches(dt, st) {
        let nb = t.bytes().len();
        if bytes.len() < nb {
            return Err(JitError::Readback(format!(
                "read back {} bytes, expected {nb}",
                bytes.len()
            )));
        }
        t.bytes_mut().copy_from_slice(&bytes[..nb]);
        return Ok(());
    }
    if bytes.len() < n * 4 {
        return Err(JitError::Readback(format!(
            "read back {} bytes, expected {}",
            bytes.len(),
            n * 4
        )));
    }
    let signed = dt.code == TypeCode::Int;
    for i in 0..n {
        let w = u32::from_le_bytes([bytes[i * 4], bytes[i * 4 + 1], bytes[i * 4 + 2], bytes[i * 4 + 3]]);
        let v = if signed { w as i32 as i64 } else { w as i64 };
        write_i64(dt, t.bytes_mut(), i, v);
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
