//! Native code for host stages: a lowered stage is compiled with Cranelift into
//! one function `(ints, floats, bufs, lo, hi, err, arena) -> site`, which reads
//! the frame's scalar slots and buffers and runs iterations `lo..hi` of the
//! stage's outer parallel loop nest (flattened; the driver splits that range
//! across the rayon pool). What the generator does not support makes the stage
//! fall back to the closure interpreter; [`native_counters`] counts both and
//! `RELAX_HOST_JIT_LOG=1` prints which stages were compiled or interpreted and why
//! (`=ir` also prints the Cranelift IR, `=asm` the machine code); `RELAX_HOST_JIT=0` interprets every stage.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use cranelift_codegen::ir::{types, AbiParam, InstBuilder, UserFuncName};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use rayon::prelude::*;
use relax_ir::tir::{For, ForKind, PrimExpr, Stmt, TirVar};

use super::{compile_i, Env, Frame, IFn};
use crate::error::{JitError, Result};

mod expr;
mod gen;
mod half;
mod hoist;
mod promote;
mod shims;
mod simd;

use gen::{ty_of, Gen};

/// The representation of a value in generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ty {
    /// Integers and booleans, as `i64` wrapped to their dtype.
    I,
    /// `float32`.
    F32,
    /// `float64`.
    F64,
    /// `float16`, as an `f32` that always holds a `float16` value.
    F16,
    /// `bfloat16`, as an `f32` that always holds a `bfloat16` value.
    BF16,
}

/// A place where generated code can fail.
#[derive(Clone, Debug)]
pub(super) enum Site {
    Read(String),
    Write(String),
    Assert(String),
    Alloc(String),
}

static NATIVE: AtomicU64 = AtomicU64::new(0);
static INTERPRETED: AtomicU64 = AtomicU64::new(0);

/// Host stages compiled to native code and stages left to the interpreter, since
/// the process started.
pub fn native_counters() -> (u64, u64) {
    (NATIVE.load(Ordering::Relaxed), INTERPRETED.load(Ordering::Relaxed))
}

/// Whether host stages are compiled to native code (`RELAX_HOST_JIT=0` turns it off).
pub(super) fn enabled_by_default() -> bool {
    crate::config::host_jit()
}

/// Whether native code hoists bounds checks out of innermost loops by default
/// (`RELAX_HOST_HOIST=0` turns it off: every access is checked where it happens, a
/// mode for comparing whole test runs with and without hoisting).
pub(super) fn hoist_by_default() -> bool {
    crate::config::host_hoist()
}

fn log_enabled() -> bool {
    crate::config::host_jit_log() != crate::config::JitLog::Off
}

/// Record that a stage of `func` runs on the interpreter, and why.
pub(super) fn note_fallback(func: &str, stage: usize, why: &JitError) {
    INTERPRETED.fetch_add(1, Ordering::Relaxed);
    if log_enabled() {
        eprintln!("relax host jit: `{func}` stage {stage} interpreted: {why}");
    }
}

fn isa() -> Result<OwnedTargetIsa> {
    static ISA: OnceLock<std::result::Result<OwnedTargetIsa, String>> = OnceLock::new();
    ISA.get_or_init(|| {
        let mut fb = settings::builder();
        for (k, v) in [
            ("use_colocated_libcalls", "false"),
            ("is_pic", "false"),
            ("opt_level", "speed"),
        ] {
            fb.set(k, v).map_err(|e| e.to_string())?;
        }
        let ib = cranelift_native::builder().map_err(|e| e.to_string())?;
        ib.finish(settings::Flags::new(fb)).map_err(|e| e.to_string())
    })
    .clone()
    .map_err(|e| JitError::Unsupported {
        func: String::new(),
        msg: format!("no native code generator for this machine: {e}"),
    })
}

type Entry = unsafe extern "C" fn(*const i64, *const f64, *const u8, i64, i64, *mut i64, *mut shims::Arena) -> i64;

/// The JIT module owning a stage's code; never used after finalisation except
/// to free the code.
struct Code(Option<JITModule>);

// SAFETY: the module is only touched again when dropped; the code it owns is
// immutable and callable from any thread.
unsafe impl Send for Code {}
unsafe impl Sync for Code {}

impl Drop for Code {
    fn drop(&mut self) {
        if let Some(m) = self.0.take() {
            // SAFETY: the stage owning this code is being dropped, so no function
            // pointer into it survives.
            unsafe { m.free_memory() }
        }
    }
}

/// A stage compiled to native code.
pub(super) struct NativeStage {
    entry: Entry,
    _code: Code,
    sites: Vec<Site>,
    allocs: usize,
    /// Extents of the flattened parallel loop nest (empty: run once).
    par: Vec<IFn>,
    /// Minimum iterations per parallel task.
    grain: i64,
}

/// The perfectly nested parallel loops at the top of `body` whose extents do not
/// depend on each other's variables, and the statement inside them.
fn parallel_nest(body: &Stmt) -> (Vec<(&TirVar, &PrimExpr)>, &Stmt) {
    let mut nest: Vec<(&TirVar, &PrimExpr)> = Vec::new();
    let mut s = body;
    loop {
        match s {
            Stmt::Attr { body, .. } if !nest.is_empty() => s = body,
            Stmt::For(For {
                var,
                extent,
                kind: ForKind::Parallel,
                body,
                ..
            }) if nest.iter().all(|(v, _)| !crate::expr::uses_var(extent, v)) => {
                nest.push((var, extent));
                s = body;
            }
            _ => return (nest, s),
        }
    }
}

/// A rough count of the innermost iterations per iteration of the parallel nest.
fn work(s: &Stmt) -> i64 {
    match s {
        Stmt::For(For { extent, body, .. }) | Stmt::LaunchThread { extent, body, .. } => extent
            .as_int()
            .unwrap_or(64)
            .clamp(1, 1 << 20)
            .saturating_mul(work(body)),
        Stmt::Seq(v) => v.iter().map(work).fold(0i64, |a, b| a.saturating_add(b)).max(1),
        Stmt::Let { body, .. }
        | Stmt::Attr { body, .. }
        | Stmt::Assert { body, .. }
        | Stmt::Alloc { body, .. }
        | Stmt::While { body, .. } => work(body),
        Stmt::If {
            then_branch,
            else_branch,
            ..
        } => work(then_branch).max(else_branch.as_deref().map_or(1, work)),
        _ => 1,
    }
}

/// Emit the stage function: bind the frame's values, run the loop nest, return 0;
/// the failure exit stores `(index, size)` and returns the site number. Returns
/// the failure sites and the number of allocation sites.
fn translate(
    b: &mut FunctionBuilder<'_>,
    env: &mut Env,
    call_conv: cranelift_codegen::isa::CallConv,
    body: &Stmt,
    nest: &[(&TirVar, &PrimExpr)],
    inner: &Stmt,
) -> Result<(Vec<Site>, usize)> {
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    let fail = b.create_block();
    for _ in 0..3 {
        b.append_block_param(fail, types::I64);
    }
    b.switch_to_block(entry);
    let p = b.block_params(entry).to_vec();
    let mut g = Gen::new(b, env, fail, p[6], call_conv);
    g.bind_externals(body, p[0], p[1], p[2])?;
    g.nest(nest, inner, p[3], p[4])?;
    let zero = g.iconst(0);
    g.b.ins().return_(&[zero]);
    let out = (std::mem::take(&mut g.sites), g.allocs);
    b.switch_to_block(fail);
    let fp = b.block_params(fail).to_vec();
    let fl = gen::flags();
    b.ins().store(fl, fp[1], p[5], 0);
    b.ins().store(fl, fp[2], p[5], 8);
    b.ins().return_(&[fp[0]]);
    b.seal_all_blocks();
    Ok(out)
}

/// Compile the function in `ctx` and return its entry point.
fn finish(module: &mut JITModule, ctx: &mut cranelift_codegen::Context) -> std::result::Result<Entry, String> {
    let id = module
        .declare_function("stage", Linkage::Export, &ctx.func.signature)
        .map_err(|e| e.to_string())?;
    let asm = crate::config::host_jit_log() == crate::config::JitLog::Asm;
    ctx.set_disasm(asm);
    module.define_function(id, ctx).map_err(|e| format!("{e:?}"))?;
    if let Some(code) = ctx.compiled_code().and_then(|c| c.vcode.as_ref()).filter(|_| asm) {
        eprintln!("{code}");
    }
    module.clear_context(ctx);
    module.finalize_definitions().map_err(|e| e.to_string())?;
    let ptr = module.get_finalized_function(id);
    // SAFETY: the function was generated with exactly this signature.
    Ok(unsafe { std::mem::transmute::<*const u8, Entry>(ptr) })
}

impl NativeStage {
    /// Compile one stage body.
    pub(super) fn compile(env: &mut Env, body: &Stmt) -> Result<NativeStage> {
        let (nest, inner) = parallel_nest(body);
        let isa = isa()?;
        let call_conv = isa.default_call_conv();
        let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
        let mut ctx = module.make_context();
        ctx.func.signature.params.extend([AbiParam::new(types::I64); 7]);
        ctx.func.signature.returns.push(AbiParam::new(types::I64));
        ctx.func.name = UserFuncName::user(0, 0);
        let mut fbc = FunctionBuilderContext::new();
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
        let (sites, allocs) = translate(&mut b, env, call_conv, body, &nest, inner)?;
        b.finalize(module.target_config());
        if crate::config::host_jit_log() == crate::config::JitLog::Ir {
            eprintln!("{}", ctx.func.display());
        }
        let entry = finish(&mut module, &mut ctx).map_err(|e| JitError::Unsupported {
            func: env.func.clone(),
            msg: format!("native code generation failed: {e}"),
        })?;
        let par = nest
            .iter()
            .map(|(_, e)| compile_i(env, e))
            .collect::<Result<Vec<_>>>()?;
        NATIVE.fetch_add(1, Ordering::Relaxed);
        if log_enabled() {
            eprintln!(
                "relax host jit: `{}` stage compiled: {} parallel loop(s), {} check site(s)",
                env.func,
                nest.len(),
                sites.len()
            );
        }
        Ok(NativeStage {
            entry,
            _code: Code(Some(module)),
            sites,
            allocs,
            par,
            grain: (16384 / work(inner).max(1)).max(1),
        })
    }

    /// Run the stage on frame `fr`; failures go to the frame's status.
    pub(super) fn run(&self, fr: &mut Frame) {
        if self.par.is_empty() {
            self.call(fr, 0, 1, &mut shims::Arena::new(self.allocs));
            return;
        }
        let mut total: i64 = 1;
        for e in &self.par {
            total = total.saturating_mul(e(fr).max(0));
        }
        let threads = rayon::current_num_threads() as i64;
        let block = self.grain.max((total + threads * 8 - 1) / (threads * 8)).max(1);
        let nblocks = (total + block - 1) / block;
        if nblocks <= 1 || threads <= 1 {
            if total > 0 {
                self.call(fr, 0, total, &mut shims::Arena::new(self.allocs));
            }
            return;
        }
        let fr: &Frame = fr;
        (0..nblocks).into_par_iter().for_each_init(
            || shims::Arena::new(self.allocs),
            |arena, b| {
                if fr.status.failed.load(Ordering::Relaxed) {
                    return;
                }
                let lo = b * block;
                self.call(fr, lo, (lo + block).min(total), arena);
            },
        );
    }

    fn call(&self, fr: &Frame, lo: i64, hi: i64, arena: &mut shims::Arena) {
        let mut err = [0i64; 2];
        // SAFETY: the frame's slots and buffer table outlive the call and match the
        // layout the code was generated for; buffer contents are bounds-checked by
        // the generated code, and parallel ranges write disjoint elements.
        let code = unsafe {
            (self.entry)(
                fr.ints.as_ptr(),
                fr.floats.as_ptr(),
                fr.bufs.as_ptr() as *const u8,
                lo,
                hi,
                err.as_mut_ptr(),
                arena,
            )
        };
        if code != 0 {
            fr.status.fail(self.error(code, err));
        }
    }

    fn error(&self, code: i64, [idx, len]: [i64; 2]) -> JitError {
        match self.sites.get((code - 1) as usize) {
            Some(Site::Read(n)) => JitError::InvalidIr(format!("out-of-bounds read of `{n}` at {idx} (size {len})")),
            Some(Site::Write(n)) => JitError::InvalidIr(format!("out-of-bounds write of `{n}` at {idx} (size {len})")),
            Some(Site::Assert(m)) => JitError::AssertFailed(m.clone()),
            Some(Site::Alloc(n)) => JitError::HostMemory(format!("local buffer `{n}` ({idx} elements)")),
            None => JitError::InvalidIr(format!("native host code failed with code {code}")),
        }
    }
}

impl Gen<'_, '_> {
    /// Load the frame's values of the variables and buffers `body` uses from outside.
    fn bind_externals(
        &mut self,
        body: &Stmt,
        ints: cranelift_codegen::ir::Value,
        floats: cranelift_codegen::ir::Value,
        bufs_ptr: cranelift_codegen::ir::Value,
    ) -> Result<()> {
        let fl = gen::flags().with_readonly();
        for v in crate::expr::free_vars_stmt(body) {
            let ty = ty_of(v.dtype()).ok_or_else(|| self.unsupported(format!("variable of type {}", v.dtype())))?;
            let (is_f, slot) = self.env.var_slot(&v);
            let off = (slot * 8) as i32;
            let x = match (is_f, ty) {
                (false, Ty::I) => self.b.ins().load(types::I64, fl, ints, off),
                (true, Ty::F64) => self.b.ins().load(types::F64, fl, floats, off),
                (true, Ty::F32 | Ty::F16 | Ty::BF16) => {
                    let x = self.b.ins().load(types::F64, fl, floats, off);
                    self.narrow(x, ty)
                }
                _ => return Err(self.unsupported(format!("variable `{}` of type {}", v.name(), v.dtype()))),
            };
            self.vars.insert(v.id(), (x, ty));
        }
        let mut local = HashSet::new();
        let mut bufs = Vec::new();
        crate::expr::visit_stmts(body, &mut |s| {
            if let Stmt::Alloc { buffer, .. } = s {
                local.insert(buffer.id());
            }
        });
        let mut seen = HashSet::new();
        hoist::accesses(body, &mut |b, _, _| {
            let b = b.id();
            if !local.contains(&b) && seen.insert(b) {
                bufs.push(b);
            }
        });
        for b in bufs {
            let Some(slot) = self.env.bufs.get(&b).copied() else {
                // Never bound by the caller: empty, like the interpreter's.
                let z = self.iconst(0);
                self.bufs.insert(b, (z, z));
                continue;
            };
            let off = (slot * std::mem::size_of::<super::BufPtr>()) as i32;
            let p = self.b.ins().load(types::I64, fl, bufs_ptr, off);
            let n = self.b.ins().load(types::I64, fl, bufs_ptr, off + 8);
            self.bufs.insert(b, (p, n));
        }
        Ok(())
    }
    /// Run `inner` for the flat iterations `lo..hi` of the loop nest `nest`: each
    /// segment decomposes its first index once, then runs the innermost loop.
    fn nest(
        &mut self,
        nest: &[(&TirVar, &PrimExpr)],
        inner: &Stmt,
        lo: cranelift_codegen::ir::Value,
        hi: cranelift_codegen::ir::Value,
    ) -> Result<()> {
        let Some(((last, _), outer)) = nest.split_last() else {
            return self.stmt(inner);
        };
        let mut exts = Vec::new();
        for (_, e) in nest {
            exts.push(self.int(e)?);
        }
        let iv = self.var(types::I64, lo);
        let (head, body, exit) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let idx = self.b.use_var(iv);
        let c = self
            .b
            .ins()
            .icmp(cranelift_codegen::ir::condcodes::IntCC::SignedLessThan, idx, hi);
        self.b.ins().brif(c, body, &[], exit, &[]);
        self.b.switch_to_block(body);
        // Decompose idx into the nest's indices (innermost fastest).
        let mut rem = idx;
        let mut starts = vec![rem; nest.len()];
        for k in (0..nest.len()).rev() {
            if k == 0 {
                starts[0] = rem;
            } else {
                starts[k] = self.b.ins().urem(rem, exts[k]);
                rem = self.b.ins().udiv(rem, exts[k]);
            }
        }
        let mut saved = Vec::new();
        for (k, (v, _)) in outer.iter().enumerate() {
            saved.push((v.id(), self.vars.insert(v.id(), (starts[k], Ty::I))));
        }
        let start = starts[nest.len() - 1];
        let left = self.b.ins().isub(hi, idx);
        let end = self.b.ins().iadd(start, left);
        let end = self.b.ins().smin(end, exts[nest.len() - 1]);
        self.counted_loop(last, start, end, inner)?;
        for (id, prev) in saved {
            gen::restore(&mut self.vars, id, prev);
        }
        let idx = self.b.use_var(iv);
        let done = self.b.ins().isub(end, start);
        let next = self.b.ins().iadd(idx, done);
        self.b.def_var(iv, next);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }
}
