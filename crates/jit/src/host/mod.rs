//! The host executor: each lowered TIR stage compiled once to native code
//! (`native`, Cranelift) or, where the code generator does not support it, into
//! closures (no AST walk per element); outer parallel loops run with rayon, and
//! matmul-like reductions are dispatched to `matrixmultiply`'s GEMM kernels.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use relax_ir::tir::{BinOp, Buffer, For, ForKind, Intrinsic as I, PrimExpr, PrimExprKind, Stmt};
use relax_ir::{DataType, TypeCode};

use crate::args::{check_args, KernelArg};
use crate::error::{JitError, Result};
use crate::expr::{int_binop, wrap_int};
use crate::lower::{LoweredFunc, ParamSlot, Reduction, Stage};
use crate::math;
use crate::tensor::{host_elem_bytes, HostTensor};

mod native;
mod ordered;
mod scalar;
pub use native::native_counters;
#[allow(unused_imports)]
pub(crate) use scalar::*;

pub(crate) type IFn = Box<dyn Fn(&mut Frame) -> i64 + Send + Sync>;
pub(crate) type FFn = Box<dyn Fn(&mut Frame) -> f64 + Send + Sync>;
type SFn = Box<dyn Fn(&mut Frame) + Send + Sync>;

enum CE {
    I(IFn),
    F(FFn),
}

#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct BufPtr {
    pub(crate) ptr: *mut u8,
    pub(crate) len: usize,
}

struct Status {
    failed: AtomicBool,
    error: Mutex<Option<JitError>>,
}

impl Status {
    fn fail(&self, e: JitError) {
        if !self.failed.swap(true, Ordering::Relaxed) {
            if let Ok(mut g) = self.error.lock() {
                *g = Some(e);
            }
        }
    }
}

/// Per-thread execution state.
pub(crate) struct Frame {
    pub(crate) ints: Vec<i64>,
    floats: Vec<f64>,
    pub(crate) bufs: Vec<BufPtr>,
    locals: Vec<Vec<u64>>,
    status: Arc<Status>,
}

// SAFETY: the raw pointers in `bufs` point into tensors that outlive the call;
// parallel loops only run iterations of spatial loops, which write disjoint elements.
unsafe impl Send for Frame {}
unsafe impl Sync for Frame {}

impl Clone for Frame {
    fn clone(&self) -> Frame {
        Frame {
            ints: self.ints.clone(),
            floats: self.floats.clone(),
            bufs: self.bufs.clone(),
            locals: vec![Vec::new(); self.locals.len()],
            status: self.status.clone(),
        }
    }
}

pub(crate) struct Env {
    ivars: HashMap<u64, usize>,
    fvars: HashMap<u64, usize>,
    bufs: HashMap<u64, usize>,
    nbufs: usize,
    nlocals: usize,
    in_parallel: bool,
    func: String,
    /// Flat buffers of the parameters (caller storage, which may overlap unless
    /// `noalias`).
    params: HashSet<u64>,
    noalias: bool,
    /// Whether native code may hoist bounds checks out of innermost loops.
    hoist: bool,
}

/// How [`HostKernel::compile_with_options`] compiles a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostOptions {
    /// Compile stages to native code where the generator supports them (else the
    /// closure interpreter runs every stage).
    pub native: bool,
    /// Let native code check the bounds of an innermost loop's affine accesses
    /// once before the loop (when provably in range for the whole loop) instead of
    /// at every access. Off, every access is checked where it happens. On by
    /// default; `RELAX_HOST_HOIST=0` makes the default off.
    pub hoist_bounds_checks: bool,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            native: native::enabled_by_default(),
            hoist_bounds_checks: native::hoist_by_default(),
        }
    }
}

impl Env {
    fn var_slot(&mut self, v: &relax_ir::TirVar) -> (bool, usize) {
        if v.dtype().is_float() {
            let n = self.fvars.len();
            (true, *self.fvars.entry(v.id()).or_insert(n))
        } else {
            let n = self.ivars.len();
            (false, *self.ivars.entry(v.id()).or_insert(n))
        }
    }
    pub(crate) fn buf_slot(&mut self, b: &Buffer) -> usize {
        let n = self.nbufs;
        let s = *self.bufs.entry(b.id()).or_insert(n);
        if s == n {
            self.nbufs += 1;
        }
        s
    }
}

fn compile_stmt(env: &mut Env, s: &Stmt) -> Result<SFn> {
    Ok(match s {
        Stmt::BufferStore {
            buffer, value, indices, ..
        } => {
            if indices.len() != 1 {
                return Err(JitError::InvalidIr(format!("unflattened store to `{}`", buffer.name())));
            }
            let slot = env.buf_slot(buffer);
            let idx = compile_i(env, &indices[0])?;
            let bdt = buffer.dtype();
            let name = buffer.name().to_string();
            let check = move |fr: &mut Frame, i: i64| -> bool {
                if i < 0 || i as usize >= fr.bufs[slot].len {
                    fr.status.fail(JitError::InvalidIr(format!(
                        "out-of-bounds write of `{name}` at {i} (size {})",
                        fr.bufs[slot].len
                    )));
                    false
                } else {
                    true
                }
            };
            macro_rules! st {
                ($t:ty, $val:ident, $conv:expr) => {{
                    Box::new(move |fr: &mut Frame| {
                        let v = $val(fr);
                        let i = idx(fr);
                        if check(fr, i) {
                            // SAFETY: bounds checked; aligned storage.
                            unsafe { *(fr.bufs[slot].ptr as *mut $t).add(i as usize) = $conv(v) }
                        }
                    })
                }};
            }
            match (bdt.code, bdt.bits) {
                (TypeCode::Float, _) | (TypeCode::BFloat, _) => {
                    let val = compile_f(env, value)?;
                    match (bdt.code, bdt.bits) {
                        (TypeCode::Float, 32) => st!(f32, val, |v: f64| v as f32),
                        (TypeCode::Float, 64) => st!(f64, val, |v: f64| v),
                        (TypeCode::Float, 16) => st!(u16, val, |v: f64| half::f16::from_f64(v).to_bits()),
                        (TypeCode::BFloat, 16) => st!(u16, val, relax_ir::dtype::bf16_bits_from_f64),
                        _ => {
                            return Err(JitError::UnsupportedDtype {
                                dtype: bdt,
                                context: "on the host".into(),
                            })
                        }
                    }
                }
                _ if bdt.mini_float().is_some() => {
                    let val = compile_f(env, value)?;
                    match bdt.mini_float() {
                        Some(f) => st!(u8, val, move |v: f64| f.encode(v)),
                        None => {
                            return Err(JitError::UnsupportedDtype {
                                dtype: bdt,
                                context: "on the host".into(),
                            })
                        }
                    }
                }
                _ if bdt.is_bool() && value.dtype().is_float() => {
                    // A float stored as a bool is `!= 0`, as `T.Cast("bool", x)`.
                    let val = compile_f(env, value)?;
                    st!(u8, val, |v: f64| (v != 0.0) as u8)
                }
                _ => {
                    host_elem_bytes(bdt)?;
                    let val = compile_i(env, value)?;
                    match bdt.bits {
                        1 => st!(u8, val, |v: i64| (v != 0) as u8),
                        2 | 4 => st!(u8, val, move |v: i64| wrap_int(v, bdt) as u8),
                        8 => st!(u8, val, |v: i64| v as u8),
                        16 => st!(u16, val, |v: i64| v as u16),
                        32 => st!(u32, val, |v: i64| v as u32),
                        _ => st!(i64, val, |v: i64| v),
                    }
                }
            }
        }
        Stmt::Let { var, value, body } => {
            let (is_f, slot) = env.var_slot(var);
            let body = compile_stmt(env, body)?;
            if is_f {
                let v = compile_f(env, value)?;
                Box::new(move |fr| {
                    fr.floats[slot] = v(fr);
                    body(fr)
                })
            } else {
                let v = compile_i(env, value)?;
                Box::new(move |fr| {
                    fr.ints[slot] = v(fr);
                    body(fr)
                })
            }
        }
        Stmt::Attr { body, .. } => compile_stmt(env, body)?,
        Stmt::LaunchThread { var, extent, body, .. } => compile_loop(env, var, extent, ForKind::Serial, body)?,
        Stmt::Assert { cond, message, body } => {
            let c = compile_i(env, cond)?;
            let body = compile_stmt(env, body)?;
            let msg = message.clone();
            Box::new(move |fr| {
                if c(fr) == 0 {
                    fr.status.fail(JitError::AssertFailed(msg.clone()));
                    return;
                }
                body(fr)
            })
        }
        Stmt::For(For {
            var,
            extent,
            kind,
            body,
            ..
        }) => compile_loop(env, var, extent, *kind, body)?,
        Stmt::While { cond, body } => {
            let c = compile_i(env, cond)?;
            let body = compile_stmt(env, body)?;
            Box::new(move |fr| {
                while c(fr) != 0 && !fr.status.failed.load(Ordering::Relaxed) {
                    body(fr)
                }
            })
        }
        Stmt::If {
            cond,
            then_branch,
            else_branch,
        } => {
            let c = compile_i(env, cond)?;
            let t = compile_stmt(env, then_branch)?;
            match else_branch {
                Some(e) => {
                    let e = compile_stmt(env, e)?;
                    Box::new(move |fr| if c(fr) != 0 { t(fr) } else { e(fr) })
                }
                None => Box::new(move |fr| {
                    if c(fr) != 0 {
                        t(fr)
                    }
                }),
            }
        }
        Stmt::Seq(v) => {
            let fs: Vec<SFn> = v.iter().map(|x| compile_stmt(env, x)).collect::<Result<_>>()?;
            Box::new(move |fr| {
                for f in &fs {
                    f(fr)
                }
            })
        }
        Stmt::Evaluate(e) => {
            if e.as_intrinsic() == Some(I::TvmStorageSync) {
                return Err(unsupported(env, "thread barriers (T.tvm_storage_sync) on the host"));
            }
            if matches!(e.kind(), PrimExprKind::IntImm { .. }) {
                return Ok(Box::new(|_| {}));
            }
            let f = compile(env, e)?;
            match f {
                CE::I(f) => Box::new(move |fr| {
                    f(fr);
                }),
                CE::F(f) => Box::new(move |fr| {
                    f(fr);
                }),
            }
        }
        Stmt::Alloc { buffer, body } => {
            let slot = env.buf_slot(buffer);
            let local = env.nlocals;
            env.nlocals += 1;
            let size = compile_i(env, &buffer.shape()[0])?;
            let eb = host_elem_bytes(buffer.dtype())?;
            let body = compile_stmt(env, body)?;
            Box::new(move |fr| {
                let n = size(fr).max(0) as usize;
                let words = (n * eb).div_ceil(8).max(1);
                let mut store = std::mem::take(&mut fr.locals[local]);
                store.clear();
                store.resize(words, 0);
                let saved = fr.bufs[slot];
                fr.bufs[slot] = BufPtr {
                    ptr: store.as_mut_ptr() as *mut u8,
                    len: n,
                };
                body(fr);
                fr.bufs[slot] = saved;
                fr.locals[local] = store;
            })
        }
        Stmt::BlockRealize { .. } => return Err(JitError::InvalidIr("block left after lowering".into())),
    })
}

fn compile_loop(env: &mut Env, var: &relax_ir::TirVar, extent: &PrimExpr, kind: ForKind, body: &Stmt) -> Result<SFn> {
    let (_, slot) = env.var_slot(var);
    let ext = compile_i(env, extent)?;
    let parallel = kind == ForKind::Parallel && !env.in_parallel;
    if parallel {
        env.in_parallel = true;
    }
    let vec = crate::host_vec::try_vector_loop(env, var, slot, body).map(Arc::new);
    let body = compile_stmt(env, body);
    if parallel {
        env.in_parallel = false;
    }
    let body = Arc::new(body?);
    let serial = {
        let body = body.clone();
        let vec = vec.clone();
        move |fr: &mut Frame, lo: i64, hi: i64| {
            if let Some(v) = &vec {
                if v(fr, lo, hi) {
                    return;
                }
            }
            for i in lo..hi {
                fr.ints[slot] = i;
                body(fr);
                if fr.status.failed.load(Ordering::Relaxed) {
                    return;
                }
            }
        }
    };
    if parallel {
        Ok(Box::new(move |fr: &mut Frame| {
            let n = ext(fr);
            let threads = rayon::current_num_threads() as i64;
            if n <= 1 || threads <= 1 {
                serial(fr, 0, n.max(0));
                return;
            }
            // Blocks of iterations; chunked (vector) bodies want long blocks.
            let block = if vec.is_some() {
                (n / (threads * 4)).max(4096)
            } else {
                (n / (threads * 8)).max(1)
            };
            let nblocks = (n + block - 1) / block;
            let base: &Frame = fr;
            (0..nblocks as usize).into_par_iter().for_each_init(
                || base.clone(),
                |f, b| {
                    let lo = b as i64 * block;
                    serial(f, lo, (lo + block).min(n))
                },
            );
        }))
    } else {
        Ok(Box::new(move |fr: &mut Frame| {
            let n = ext(fr);
            serial(fr, 0, n.max(0))
        }))
    }
}

/// A PrimFunc compiled for the host.
pub struct HostKernel {
    lowered: Arc<LoweredFunc>,
    stages: Vec<HostStage>,
    env_ints: usize,
    env_floats: usize,
    nbufs: usize,
    nlocals: usize,
    param_slots: Vec<Option<(bool, usize)>>,
    param_bufs: Vec<Option<usize>>,
    shape_slots: Vec<usize>,
    scratch_slots: Vec<(usize, IFn, usize)>,
    /// Storage of the scratch buffers of finished calls, reused (zero-filled again)
    /// by later ones: a call of a small kernel then allocates nothing.
    scratch_pool: Mutex<Vec<Vec<Vec<u64>>>>,
    shape_checks: Vec<(IFn, usize, usize)>,
    /// Per parameter: whether the function stores to it.
    written: Vec<bool>,
}

/// Scratch storage kept in a kernel's pool per buffer, at most (larger buffers are
/// freed after the call).
const SCRATCH_KEEP_BYTES: usize = 4 << 20;

enum HostStage {
    Generic(SFn),
    Native(Box<native::NativeStage>),
    Gemm(Box<GemmPlan>),
}

struct GemmPlan {
    generic: SFn,
    r: Reduction,
    out: usize,
    x: usize,
    y: usize,
    /// Flat index closures with the loop variables in int slots.
    out_idx: IFn,
    x_idx: IFn,
    y_idx: IFn,
    spatial_slots: Vec<usize>,
    spatial_ext: Vec<IFn>,
    k_slot: usize,
    k_ext: IFn,
    f64: bool,
    /// `float16` operands: widened to `f32`, multiplied by `sgemm` (accumulating
    /// in `f32`), and the result rounded to `float16` once.
    f16: bool,
    /// `float16` operands widened to a `float32` output (no rounding at the end).
    f16_in: bool,
}

impl HostKernel {
    /// Compile PrimFunc `f`, named `name` in its module (errors name it).
    pub fn for_prim_func(f: &relax_ir::PrimFunc, name: &str) -> Result<HostKernel> {
        HostKernel::compile(Arc::new(crate::lower::lower_named(f, name)?))
    }

    /// Compile a lowered function: stages to native code where the code generator
    /// supports them (unless `RELAX_HOST_JIT=0`), the rest to interpreter closures.
    pub fn compile(lowered: Arc<LoweredFunc>) -> Result<HostKernel> {
        HostKernel::compile_with(lowered, native::enabled_by_default())
    }

    /// Compile a lowered function, with native stages when `native` is set (bounds
    /// checks hoisted unless `RELAX_HOST_HOIST=0`).
    pub fn compile_with(lowered: Arc<LoweredFunc>, native: bool) -> Result<HostKernel> {
        HostKernel::compile_with_options(
            lowered,
            HostOptions {
                native,
                hoist_bounds_checks: native::hoist_by_default(),
            },
        )
    }

    /// Compile a lowered function as `opts` says.
    pub fn compile_with_options(lowered: Arc<LoweredFunc>, opts: HostOptions) -> Result<HostKernel> {
        let native = opts.native;
        let mut env = Env {
            ivars: HashMap::new(),
            fvars: HashMap::new(),
            bufs: HashMap::new(),
            nbufs: 0,
            nlocals: 0,
            in_parallel: false,
            func: lowered.name.clone(),
            params: lowered.param_buffers().map(|(_, b)| b.id()).collect(),
            noalias: lowered.noalias,
            hoist: opts.hoist_bounds_checks,
        };
        if lowered.has_barriers {
            return Err(unsupported(&env, "thread barriers (T.tvm_storage_sync) on the host"));
        }
        let mut param_slots = Vec::new();
        let mut param_bufs = Vec::new();
        for p in &lowered.params {
            match p {
                ParamSlot::Scalar(v) => {
                    param_slots.push(Some(env.var_slot(v)));
                    param_bufs.push(None);
                }
                ParamSlot::Buffer { flat, .. } => {
                    param_slots.push(None);
                    param_bufs.push(Some(env.buf_slot(flat)));
                }
            }
        }
        let shape_slots = lowered.shape_binds.iter().map(|b| env.var_slot(&b.var).1).collect();
        let mut scratch_slots = Vec::new();
        for b in &lowered.scratch {
            let slot = env.buf_slot(b);
            let size = compile_i(&mut env, &b.shape()[0])?;
            let eb = host_elem_bytes(b.dtype())?;
            scratch_slots.push((slot, size, eb));
        }
        let mut shape_checks = Vec::new();
        for (e, p, d) in &lowered.shape_checks {
            shape_checks.push((compile_i(&mut env, e)?, *p, *d));
        }
        let mut stages = Vec::new();
        for (i, st) in lowered.stages.iter().enumerate() {
            stages.push(compile_stage(&mut env, st, native, i)?);
        }
        Ok(HostKernel {
            env_ints: env.ivars.len(),
            env_floats: env.fvars.len(),
            nbufs: env.nbufs,
            nlocals: env.nlocals,
            written: written_params(&lowered),
            lowered,
            stages,
            param_slots,
            param_bufs,
            shape_slots,
            scratch_slots,
            scratch_pool: Mutex::new(Vec::new()),
            shape_checks,
        })
    }

    /// The lowered function.
    pub fn lowered(&self) -> &LoweredFunc {
        &self.lowered
    }

    /// How many stages run as native code (the others are interpreted or GEMM calls).
    pub fn native_stages(&self) -> usize {
        self.stages.iter().filter(|s| matches!(s, HostStage::Native(_))).count()
    }

    /// How many stages run as one matrix-product call (a GEMM kernel) rather than as
    /// compiled loops.
    pub fn gemm_stages(&self) -> usize {
        self.stages.iter().filter(|s| matches!(s, HostStage::Gemm(_))).count()
    }

    /// Run on `args` (one per PrimFunc parameter), on the callers' bytes in place.
    /// An input the function writes, and bytes not aligned to their element type,
    /// are worked on in aligned copies (written ones copied back); a tensor in
    /// device memory is a [`JitError::DeviceArg`].
    pub fn run(&self, args: &mut [KernelArg<'_>]) -> Result<()> {
        let shapes = check_args(&self.lowered, args)?;
        let mut temps: Vec<Option<HostTensor>> = Vec::with_capacity(args.len());
        let mut bound = Vec::with_capacity(args.len());
        for (i, a) in args.iter_mut().enumerate() {
            let (dtype, ptr, nbytes, writable) = match a {
                KernelArg::Int(v) => {
                    bound.push(Bound::Int(*v));
                    temps.push(None);
                    continue;
                }
                KernelArg::Float(v) => {
                    bound.push(Bound::Float(*v));
                    temps.push(None);
                    continue;
                }
                KernelArg::Device { .. } => {
                    return Err(JitError::DeviceArg {
                        index: i,
                        func: self.lowered.name.clone(),
                    })
                }
                KernelArg::Read { dtype, bytes, .. } => (*dtype, bytes.as_ptr() as *mut u8, bytes.len(), false),
                KernelArg::Write { dtype, bytes, .. } => (*dtype, bytes.as_mut_ptr(), bytes.len(), true),
            };
            let eb = host_elem_bytes(dtype)?;
            let n = crate::tensor::numel(&shapes[i])?;
            if n.checked_mul(eb) != Some(nbytes) {
                return Err(JitError::BadArgs(format!(
                    "argument {i} of `{}` has {nbytes} bytes, expected {n} elements of {dtype}",
                    self.lowered.name
                )));
            }
            if (writable || !self.written[i]) && (ptr as usize).is_multiple_of(eb) {
                bound.push(Bound::Buf(BufPtr { ptr, len: n }));
                temps.push(None);
                continue;
            }
            let bytes = a
                .host_bytes()
                .ok_or_else(|| JitError::BadArgs(format!("argument {i} has no bytes")))?;
            let mut t = HostTensor::from_bytes(dtype, &shapes[i], bytes)?;
            bound.push(Bound::Buf(BufPtr {
                ptr: t.as_mut_ptr(),
                len: n,
            }));
            temps.push(Some(t));
        }
        self.run_bound(&bound, &shapes)?;
        for (a, t) in args.iter_mut().zip(&temps) {
            if let (KernelArg::Write { bytes, .. }, Some(t)) = (a, t) {
                bytes.copy_from_slice(t.bytes());
            }
        }
        Ok(())
    }

    fn run_bound(&self, args: &[Bound], shapes: &[Vec<i64>]) -> Result<()> {
        let lf = &self.lowered;
        let status = Arc::new(Status {
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
        });
        let mut fr = Frame {
            ints: vec![0; self.env_ints],
            floats: vec![0.0; self.env_floats],
            bufs: vec![
                BufPtr {
                    ptr: std::ptr::null_mut(),
                    len: 0
                };
                self.nbufs
            ],
            locals: vec![Vec::new(); self.nlocals],
            status: status.clone(),
        };
        for (i, a) in args.iter().enumerate() {
            match (a, self.param_slots[i], self.param_bufs[i]) {
                (Bound::Buf(b), None, Some(slot)) => fr.bufs[slot] = *b,
                (Bound::Int(v), Some((false, s)), _) => fr.ints[s] = *v,
                (Bound::Int(v), Some((true, s)), _) => fr.floats[s] = *v as f64,
                (Bound::Float(v), Some((true, s)), _) => fr.floats[s] = *v,
                (Bound::Float(v), Some((false, s)), _) => fr.ints[s] = *v as i64,
                _ => {
                    return Err(JitError::BadArgs(format!(
                        "argument {i} of `{}` has the wrong kind",
                        lf.name
                    )))
                }
            }
        }
        for (b, slot) in lf.shape_binds.iter().zip(&self.shape_slots) {
            fr.ints[*slot] = shapes[b.param][b.dim];
        }
        for (e, p, d) in &self.shape_checks {
            let want = e(&mut fr);
            if want != shapes[*p][*d] {
                return Err(JitError::BadArgs(format!(
                    "argument {p} of `{}` has extent {} in dimension {d}, expected {want}",
                    lf.name, shapes[*p][*d]
                )));
            }
        }
        let mut scratch: Vec<Vec<u64>> = match self.scratch_pool.lock() {
            Ok(mut pool) => pool.pop().unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        scratch.resize_with(self.scratch_slots.len(), Vec::new);
        for ((slot, size, eb), v) in self.scratch_slots.iter().zip(scratch.iter_mut()) {
            let n = size(&mut fr).max(0) as usize;
            let words = n.checked_mul(*eb).map(|b| b.div_ceil(8).max(1));
            match words {
                // Reused storage: zero-filled as a new buffer would be.
                Some(w) if w <= v.capacity() => {
                    v.clear();
                    v.resize(w, 0);
                }
                _ => {
                    *v = crate::memory::try_zeroed_words(n, *eb).map_err(|e| {
                        JitError::HostMemory(format!("scratch buffer #{slot} of `{}` ({n} elements): {e}", lf.name))
                    })?;
                }
            }
            fr.bufs[*slot] = BufPtr {
                ptr: v.as_mut_ptr() as *mut u8,
                len: n,
            };
        }
        for st in &self.stages {
            match st {
                HostStage::Generic(f) => f(&mut fr),
                HostStage::Native(n) => n.run(&mut fr),
                HostStage::Gemm(g) => run_gemm(g, &mut fr),
            }
            if status.failed.load(Ordering::Relaxed) {
                break;
            }
        }
        if scratch.iter().all(|v| v.capacity() * 8 <= SCRATCH_KEEP_BYTES) {
            if let Ok(mut pool) = self.scratch_pool.lock() {
                pool.push(scratch);
            }
        }
        if status.failed.load(Ordering::Relaxed) {
            let e = status.error.lock().ok().and_then(|mut g| g.take());
            return Err(e.unwrap_or_else(|| JitError::InvalidIr("host execution failed".into())));
        }
        Ok(())
    }
}

/// A kernel argument bound to the frame.
enum Bound {
    Buf(BufPtr),
    Int(i64),
    Float(f64),
}

/// Which parameters the stages of `lf` store to.
fn written_params(lf: &LoweredFunc) -> Vec<bool> {
    let mut ids = std::collections::HashSet::new();
    for st in &lf.stages {
        crate::expr::visit_stmts(&st.body, &mut |s| {
            if let Stmt::BufferStore { buffer, .. } = s {
                ids.insert(buffer.id());
            }
        });
    }
    lf.params
        .iter()
        .map(|p| matches!(p, ParamSlot::Buffer { flat, .. } if ids.contains(&flat.id())))
        .collect()
}

fn compile_stage(env: &mut Env, st: &Stage, native: bool, index: usize) -> Result<HostStage> {
    let generic_stage = |env: &mut Env| -> Result<HostStage> {
        if native {
            match native::NativeStage::compile(env, &st.body) {
                Ok(n) => return Ok(HostStage::Native(Box::new(n))),
                Err(e) => native::note_fallback(&env.func, index, &e),
            }
        }
        Ok(HostStage::Generic(compile_stmt(env, &st.body)?))
    };
    let Some(mm) = st.reduction.as_ref().and_then(|r| r.matmul.as_ref()) else {
        return generic_stage(env);
    };
    let Some(r) = &st.reduction else {
        return generic_stage(env);
    };
    let dt = r.out.dtype();
    let zero_init = matches!(r.init.kind(), PrimExprKind::FloatImm { value, .. } if *value == 0.0);
    let plain = |e: &PrimExpr| matches!(e.kind(), PrimExprKind::BufferLoad { buffer, .. } if buffer.dtype() == dt);
    // `float16` operands widened to a `float32` product (`R.matmul(a, b,
    // out_dtype="float32")` of `float16` tensors, as the ONNX importer writes a
    // `float16` MatMul): the loads are `T.Cast("float32", x[...])`.
    let widened = |e: &PrimExpr| match e.kind() {
        PrimExprKind::Cast { dtype, value } if *dtype == DataType::FLOAT32 => {
            matches!(value.kind(), PrimExprKind::BufferLoad { buffer, .. } if buffer.dtype() == DataType::FLOAT16)
        }
        _ => false,
    };
    let f16_in = dt == DataType::FLOAT32 && widened(&mm.x) && widened(&mm.y);
    if !(dt == DataType::FLOAT32 || dt == DataType::FLOAT64 || dt == DataType::FLOAT16)
        || !zero_init
        || !(f16_in || (plain(&mm.x) && plain(&mm.y)))
    {
        return generic_stage(env);
    }
    let load_parts = |e: &PrimExpr| match e.kind() {
        PrimExprKind::BufferLoad { buffer, indices } => Some((buffer.clone(), indices[0].clone())),
        PrimExprKind::Cast { value, .. } => match value.kind() {
            PrimExprKind::BufferLoad { buffer, indices } => Some((buffer.clone(), indices[0].clone())),
            _ => None,
        },
        _ => None,
    };
    let (Some((xb, xi)), Some((yb, yi))) = (load_parts(&mm.x), load_parts(&mm.y)) else {
        return generic_stage(env);
    };
    let plan = GemmPlan {
        generic: compile_stmt(env, &st.body)?,
        out: env.buf_slot(&r.out),
        x: env.buf_slot(&xb),
        y: env.buf_slot(&yb),
        out_idx: compile_i(env, &r.out_index)?,
        x_idx: compile_i(env, &xi)?,
        y_idx: compile_i(env, &yi)?,
        spatial_slots: r.spatial.iter().map(|(v, _)| env.var_slot(v).1).collect(),
        spatial_ext: r
            .spatial
            .iter()
            .map(|(_, e)| compile_i(env, e))
            .collect::<Result<_>>()?,
        k_slot: env.var_slot(&r.reduce[0].0).1,
        k_ext: compile_i(env, &r.reduce[0].1)?,
        f64: dt == DataType::FLOAT64,
        f16: dt == DataType::FLOAT16,
        f16_in,
        r: r.clone(),
    };
    Ok(HostStage::Gemm(Box::new(plan)))
}

/// Evaluate the affine coefficients of `f` in the int slots `vars` at the current
/// frame; `None` when `f` is not affine in them (checked at a probe point).
fn affine(fr: &mut Frame, f: &IFn, vars: &[usize]) -> Option<(i64, Vec<i64>)> {
    let saved: Vec<i64> = vars.iter().map(|&s| fr.ints[s]).collect();
    for &s in vars {
        fr.ints[s] = 0;
    }
    let base = f(fr);
    let mut coef = Vec::new();
    for &s in vars {
        fr.ints[s] = 1;
        coef.push(f(fr) - base);
        fr.ints[s] = 0;
    }
    let probe = [3i64, 5, 7];
    let mut want = base;
    for (n, &s) in vars.iter().enumerate() {
        fr.ints[s] = probe[n % 3];
        want += coef[n] * probe[n % 3];
    }
    let ok = f(fr) == want;
    for (&s, v) in vars.iter().zip(saved) {
        fr.ints[s] = v;
    }
    ok.then_some((base, coef))
}

fn run_gemm(g: &GemmPlan, fr: &mut Frame) {
    let exts: Vec<i64> = g.spatial_ext.iter().map(|e| e(fr)).collect();
    let kext = g.k_ext(fr);
    let (mi, mj) = g.r.matmul.as_ref().map(|m| (m.i, m.j)).unwrap_or((0, 1));
    let (m, n) = (exts[mi], exts[mj]);
    if m <= 0 || n <= 0 {
        return;
    }
    let batch_dims: Vec<usize> = (0..exts.len()).filter(|&d| d != mi && d != mj).collect();
    let nbatch: i64 = batch_dims.iter().map(|&d| exts[d]).product();
    let (si, sj, sk) = (g.spatial_slots[mi], g.spatial_slots[mj], g.k_slot);
    let mut plans = Vec::new();
    for b in 0..nbatch.max(0) {
        let mut rem = b;
        for &d in batch_dims.iter().rev() {
            fr.ints[g.spatial_slots[d]] = rem % exts[d];
            rem /= exts[d];
        }
        let (Some((ob, oc)), Some((xb, xc)), Some((yb, yc))) = (
            affine(fr, &g.out_idx, &[si, sj]),
            affine(fr, &g.x_idx, &[si, sk]),
            affine(fr, &g.y_idx, &[sk, sj]),
        ) else {
            return (g.generic)(fr);
        };
        plans.push((ob, oc, xb, xc, yb, yc));
    }
    // Bounds: the extreme elements must lie in the buffers.
    let (out, x, y) = (fr.bufs[g.out], fr.bufs[g.x], fr.bufs[g.y]);
    let in_bounds = |base: i64, c: &[i64], e0: i64, e1: i64, len: usize| {
        let mut lo = base;
        let mut hi = base;
        for (cf, e) in c.iter().zip([e0, e1]) {
            let span = cf * (e - 1).max(0);
            if span < 0 {
                lo += span
            } else {
                hi += span
            }
        }
        lo >= 0 && (hi as usize) < len
    };
    for (ob, oc, xb, xc, yb, yc) in &plans {
        if !in_bounds(*ob, oc, m, n, out.len)
            || (kext > 0 && (!in_bounds(*xb, xc, m, kext, x.len) || !in_bounds(*yb, yc, kext, n, y.len)))
        {
            return (g.generic)(fr);
        }
    }
    // Data near the float range is summed in the TIR's order (`ordered`).
    // (`float16` operands cannot reach the `f32` range: no ordering needed.)
    let ordered = !g.f16 && !g.f16_in && g.out != g.x && g.out != g.y;
    // SAFETY: every element the plans address was bounds-checked above.
    if ordered && unsafe { ordered::operands_may_overflow(g.f64, &x, &y, &plans, (m, n, kext)) } {
        return (g.generic)(fr);
    }
    let kept = if ordered { plans.clone() } else { Vec::new() };
    // Output elements must not alias across batches (e.g. broadcast outputs).
    for (ob, oc, xb, xc, yb, yc) in plans {
        // SAFETY: all accessed elements were bounds-checked above.
        unsafe {
            if kext <= 0 {
                for i in 0..m {
                    for j in 0..n {
                        let o = (ob + i * oc[0] + j * oc[1]) as usize;
                        if g.f16 {
                            *(out.ptr as *mut u16).add(o) = 0;
                        } else if g.f16_in {
                            *(out.ptr as *mut f32).add(o) = 0.0;
                        } else if g.f64 {
                            *(out.ptr as *mut f64).add(o) = 0.0;
                        } else {
                            *(out.ptr as *mut f32).add(o) = 0.0;
                        }
                    }
                }
                continue;
            }
            // One GEMM call on strided operands; the element type picks the kernel.
            macro_rules! gemm {
                ($f:path, $t:ty) => {
                    $f(
                        m as usize,
                        kext as usize,
                        n as usize,
                        1.0,
                        (x.ptr as *const $t).offset(xb as isize),
                        xc[0] as isize,
                        xc[1] as isize,
                        (y.ptr as *const $t).offset(yb as isize),
                        yc[0] as isize,
                        yc[1] as isize,
                        0.0,
                        (out.ptr as *mut $t).offset(ob as isize),
                        oc[0] as isize,
                        oc[1] as isize,
                    )
                };
            }
            if g.f16 || g.f16_in {
                let (xs, ys) = (
                    widen_f16(x.ptr as *const u16, xb, &xc, m, kext),
                    widen_f16(y.ptr as *const u16, yb, &yc, kext, n),
                );
                let mut o = vec![0f32; (m * n) as usize];
                matrixmultiply::sgemm(
                    m as usize,
                    kext as usize,
                    n as usize,
                    1.0,
                    xs.as_ptr(),
                    kext as isize,
                    1,
                    ys.as_ptr(),
                    n as isize,
                    1,
                    0.0,
                    o.as_mut_ptr(),
                    n as isize,
                    1,
                );
                for i in 0..m {
                    let row = &o[(i * n) as usize..((i + 1) * n) as usize];
                    if g.f16_in {
                        // A `float32` output: stored as computed.
                        for (j, v) in row.iter().enumerate() {
                            *(out.ptr as *mut f32).add((ob + i * oc[0] + j as i64 * oc[1]) as usize) = *v;
                        }
                        continue;
                    }
                    if oc[1] == 1 {
                        // SAFETY: the output row `ob + i * oc[0] ..+ n` is in bounds (checked
                        // above with the GEMM's extents), and `half::f16` is a `u16`.
                        let dst = std::slice::from_raw_parts_mut(
                            (out.ptr as *mut half::f16).offset((ob + i * oc[0]) as isize),
                            n as usize,
                        );
                        half::slice::HalfFloatSliceExt::convert_from_f32_slice(dst, row);
                        continue;
                    }
                    for (j, v) in row.iter().enumerate() {
                        let at = (ob + i * oc[0] + j as i64 * oc[1]) as usize;
                        *(out.ptr as *mut u16).add(at) = half::f16::from_f32(*v).to_bits();
                    }
                }
            } else if g.f64 {
                gemm!(matrixmultiply::dgemm, f64);
            } else {
                gemm!(matrixmultiply::sgemm, f32);
            }
        }
    }
    // SAFETY: every output element the plans address was bounds-checked above.
    if ordered && unsafe { ordered::any_non_finite(g.f64, &out, &kept, m, n) } {
        (g.generic)(fr);
    }
}

/// The `rows x cols` `float16` matrix at `p[base + r * c[0] + q * c[1]]`, widened
/// to a row-major `f32` matrix.
///
/// # Safety
/// Every element addressed must lie in the buffer at `p` (bounds-checked by the caller).
unsafe fn widen_f16(p: *const u16, base: i64, c: &[i64], rows: i64, cols: i64) -> Vec<f32> {
    let mut v = Vec::with_capacity((rows * cols) as usize);
    if c[1] == 1 {
        // Contiguous rows: the vector conversion (F16C where the CPU has it).
        v.resize((rows * cols) as usize, 0.0);
        for (r, dst) in v.chunks_exact_mut(cols.max(1) as usize).enumerate() {
            // SAFETY: row `r` (`cols` elements from `base + r * c[0]`) is in the buffer by
            // the caller's contract; `half::f16` is a `u16`.
            let src = unsafe {
                std::slice::from_raw_parts(
                    p.offset((base + r as i64 * c[0]) as isize) as *const half::f16,
                    dst.len(),
                )
            };
            half::slice::HalfFloatSliceExt::convert_to_f32_slice(src, dst);
        }
        return v;
    }
    for r in 0..rows {
        for q in 0..cols {
            // SAFETY: in bounds by the caller's contract.
            let bits = unsafe { *p.offset((base + r * c[0] + q * c[1]) as isize) };
            v.push(half::f16::from_bits(bits).to_f32());
        }
    }
    v
}

impl GemmPlan {
    fn k_ext(&self, fr: &mut Frame) -> i64 {
        (self.k_ext)(fr)
    }
}
