//! Out-of-bounds reports from GPU kernels. Kernels with run-time bounds checks
//! (`wgsl::bounds`) bind a small flag buffer; each thread that runs kernels has its
//! own (the engine runs a call's kernels from one thread), and
//! [`Jit::check_gpu_bounds`] reads it back once the work is done, so a violation
//! fails the run that caused it, as the host executor does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use dashmap::DashMap;
use relax_gpu_runtime::{DeviceBuffer, GpuRuntime};
use relax_ir::tir::{BinOp, Buffer, For, PrimExpr, PrimExprKind, Stmt};

use super::GpuJit;
use crate::error::{JitError, Result};
use crate::wgsl::{FLAG_WORDS, SITE_BASE_DECL};

/// Site descriptions across every kernel compiled, and the per-thread flags.
#[derive(Default)]
pub(crate) struct OobState {
    /// `sites[s - 1]`: what site `s` reports, and its kernel.
    sites: Mutex<Vec<(String, String)>>,
    /// Per thread: its flag buffer and whether a checked kernel ran since the last look.
    flags: DashMap<ThreadId, (Arc<DeviceBuffer>, bool)>,
}

impl OobState {
    /// Number the sites of one kernel (`kernel`'s `sites`, numbered from 1 in its
    /// WGSL) after every site so far, and return the WGSL with its base set.
    pub(crate) fn register(&self, kernel: &str, sites: &[String], wgsl: &str) -> String {
        if sites.is_empty() {
            return wgsl.to_string();
        }
        let mut all = self.sites.lock().unwrap_or_else(|p| p.into_inner());
        let base = all.len() as u32;
        all.extend(sites.iter().map(|s| (s.clone(), kernel.to_string())));
        wgsl.replacen(SITE_BASE_DECL, &format!("const relax_oob_base: u32 = {base}u;"), 1)
    }

    /// This thread's flag buffer (zeroed on creation), marked as in use.
    pub(crate) fn flag(&self, rt: &GpuRuntime) -> Result<Arc<DeviceBuffer>> {
        let id = std::thread::current().id();
        if let Some(mut e) = self.flags.get_mut(&id) {
            e.1 = true;
            return Ok(e.0.clone());
        }
        let buf = Arc::new(rt.alloc_zeroed(4 * FLAG_WORDS as u64)?);
        self.flags.insert(id, (buf.clone(), true));
        Ok(buf)
    }

    /// What `site` reports, with ` at` + `tail` and its kernel.
    fn describe(&self, site: u32, tail: &str) -> String {
        let all = self.sites.lock().unwrap_or_else(|p| p.into_inner());
        match site.checked_sub(1).and_then(|i| all.get(i as usize)) {
            Some((s, k)) => format!("{s}{tail} on the GPU (kernel `{k}`)"),
            None => format!("out-of-bounds access{tail} on the GPU"),
        }
    }
}

impl GpuJit {
    /// See `Jit::check_gpu_bounds`.
    pub(crate) fn check_bounds(&self) -> Result<()> {
        let rt = &self.rt;
        let id = std::thread::current().id();
        let buf = match self.oob.flags.get_mut(&id) {
            Some(mut e) if e.1 => {
                e.1 = false;
                e.0.clone()
            }
            _ => return Ok(()),
        };
        let words: Vec<u32> = rt.read_pod(&buf)?;
        if words.first().copied().unwrap_or(0) == 0 {
            return Ok(());
        }
        rt.write_pod(&buf, 0, &[0u32; FLAG_WORDS])?;
        let msg = match words.as_slice() {
            [_, first, lo, len, hi, ..] if *first != 0 => {
                let index = ((u64::from(*hi) << 32) | u64::from(*lo)) as i64;
                self.oob
                    .describe(*first, &format!(" at {index} (size {})", *len as i32))
            }
            [max, ..] => self.oob.describe(*max, ""),
            [] => "out-of-bounds access on the GPU".to_string(),
        };
        Err(JitError::OutOfBounds(msg))
    }
}

/// Accesses that a GPU kernel would certainly make out of bounds, found before it
/// runs: an index affine in loop variables with constant ranges (and nothing else),
/// reached unconditionally, whose range leaves its buffer of constant length. The
/// host executor reports the same accesses when it reaches them; the GPU's run-time
/// checks cover only indices read from data (`wgsl::bounds`).
pub(crate) fn static_check(lf: &crate::lower::LoweredFunc) -> Result<()> {
    let mut loops = HashMap::new();
    for st in &lf.stages {
        walk(&st.body, &mut loops, &lf.name)?;
    }
    Ok(())
}

/// `loops`: loop variable id -> (first, last) value, for loops with constant bounds.
fn walk(s: &Stmt, loops: &mut HashMap<u64, (i64, i64)>, func: &str) -> Result<()> {
    match s {
        Stmt::For(For {
            var, min, extent, body, ..
        }) => match (min.as_int(), extent.as_int()) {
            (_, Some(n)) if n <= 0 => Ok(()),
            (Some(lo), Some(n)) => {
                loops.insert(var.id(), (lo, lo.saturating_add(n - 1)));
                let r = walk(body, loops, func);
                loops.remove(&var.id());
                r
            }
            _ => walk(body, loops, func),
        },
        Stmt::BufferStore {
            buffer, value, indices, ..
        } => {
            if let [i] = indices.as_slice() {
                check(buffer, i, true, loops, func)?;
                loads(i, loops, func)?;
            }
            loads(value, loops, func)
        }
        Stmt::Let { value, body, .. } => {
            loads(value, loops, func)?;
            walk(body, loops, func)
        }
        Stmt::Attr { body, .. } | Stmt::Alloc { body, .. } | Stmt::LaunchThread { body, .. } => walk(body, loops, func),
        Stmt::Seq(v) => v.iter().try_for_each(|x| walk(x, loops, func)),
        Stmt::Evaluate(e) => loads(e, loops, func),
        // Conditional code may never run: no claim about it.
        Stmt::If { cond, .. } | Stmt::While { cond, .. } => loads(cond, loops, func),
        Stmt::Assert { .. } | Stmt::BlockRealize { .. } => Ok(()),
    }
}

/// Check the loads evaluated unconditionally in `e` (not under a select).
fn loads(e: &PrimExpr, loops: &HashMap<u64, (i64, i64)>, func: &str) -> Result<()> {
    use PrimExprKind as K;
    match e.kind() {
        K::BufferLoad { buffer, indices } => {
            if let [i] = indices.as_slice() {
                loads(i, loops, func)?;
                check(buffer, i, false, loops, func)?;
            }
            Ok(())
        }
        K::Cast { value, .. } | K::Not(value) => loads(value, loops, func),
        K::Binary { op, a, b } if !op.is_logical() => {
            loads(a, loops, func)?;
            loads(b, loops, func)
        }
        _ => Ok(()),
    }
}

fn check(buffer: &Buffer, index: &PrimExpr, write: bool, loops: &HashMap<u64, (i64, i64)>, func: &str) -> Result<()> {
    let (Some(len), Some((lo, hi))) = (buffer.shape().first().and_then(PrimExpr::as_int), range(index, loops)) else {
        return Ok(());
    };
    let bad = if lo < 0 {
        lo
    } else if hi >= len as i128 {
        hi
    } else {
        return Ok(());
    };
    let what = if write { "write" } else { "read" };
    Err(JitError::OutOfBounds(format!(
        "out-of-bounds {what} of `{}` at {bad} (size {len}), found before running `{func}` on the GPU",
        buffer.name()
    )))
}

/// The exact range of an affine integer expression over the loop variables.
fn range(e: &PrimExpr, loops: &HashMap<u64, (i64, i64)>) -> Option<(i128, i128)> {
    use PrimExprKind as K;
    Some(match e.kind() {
        K::IntImm { value, .. } => (*value as i128, *value as i128),
        K::Var(v) => {
            let (a, b) = loops.get(&v.id())?;
            (*a as i128, *b as i128)
        }
        K::Cast { value, dtype } if dtype.is_integer() && !dtype.is_bool() && value.dtype().is_integer() => {
            // A narrowing cast wraps: the range carries over only when it fits the
            // target type, signed or unsigned (else no claim is made).
            let (lo, hi) = range(value, loops)?;
            let bits = u32::from(dtype.bits).clamp(1, 64);
            let (min, max) = if dtype.is_uint() {
                (0, (1i128 << bits) - 1)
            } else {
                (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
            };
            if lo < min || hi > max {
                return None;
            }
            (lo, hi)
        }
        K::Binary { op: BinOp::Add, a, b } => {
            // Exact only when the two sides share no variable.
            if shares_var(a, b) {
                return None;
            }
            let (x, y) = (range(a, loops)?, range(b, loops)?);
            (x.0 + y.0, x.1 + y.1)
        }
        K::Binary { op: BinOp::Sub, a, b } => {
            if shares_var(a, b) {
                return None;
            }
            let (x, y) = (range(a, loops)?, range(b, loops)?);
            (x.0 - y.1, x.1 - y.0)
        }
        K::Binary { op: BinOp::Mul, a, b } => {
            let (c, x) = match (a.as_int(), b.as_int()) {
                (Some(c), _) => (c as i128, range(b, loops)?),
                (_, Some(c)) => (c as i128, range(a, loops)?),
                _ => return None,
            };
            let (p, q) = (x.0 * c, x.1 * c);
            (p.min(q), p.max(q))
        }
        _ => return None,
    })
}

fn shares_var(a: &PrimExpr, b: &PrimExpr) -> bool {
    let mut vars = Vec::new();
    crate::expr::free_vars_expr(a, &mut vars);
    vars.iter().any(|v| crate::expr::uses_var(b, v))
}
