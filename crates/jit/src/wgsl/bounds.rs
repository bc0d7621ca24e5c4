//! Out-of-bounds detection in kernels: an access whose index depends on data the
//! kernel reads (`R.take`, `R.gather_elements`, hand-written gathers and scatters)
//! is checked against the buffer's length at run time (in an arm of a `select`, which
//! WGSL evaluates even where the program does not take it, only where the arm is
//! taken: `relax_chk_if`). A violation skips the store
//! (a read yields an out-of-range index, which WGSL's robust buffer access keeps
//! inside the buffer) and records itself in a small flag buffer that the run reads
//! back at its end (see `Jit::check_gpu_bounds`), so the run fails as it does on the host.
//!
//! Accesses through indices affine in loop and thread variables are not checked:
//! the schedules derive them from the buffers' own shapes (and `oob::static_check`
//! refuses hand-written ones that certainly leave their buffer). An index that is
//! not affine in them (`A[i * i]`, a division or remainder by a loop variable, a
//! cast to fewer than 32 bits, varying or not) is checked like one read from data.

use relax_ir::tir::{Buffer, PrimExpr, PrimExprKind};

use super::{Em, W};
use crate::error::Result;
use crate::expr::visit_expr;

/// Name of the flag buffer's binding in the shader.
pub(super) const FLAG: &str = "relax_oob";

/// The constant holding the first site number of a kernel: emitted as 0 and
/// replaced when the pipeline is created (see `Jit::check_gpu_bounds`), so that sites are
/// numbered across every kernel the JIT compiles.
pub const SITE_BASE_DECL: &str = "const relax_oob_base: u32 = 0u;";

/// Words of the flag buffer: `[0]` the largest site violated (0: none), `[1]` the
/// site of the first recorded violation, `[2]`, `[3]` its index (low 32 bits) and
/// buffer length, `[4]` the index's high 32 bits.
pub const FLAG_WORDS: usize = 5;

// The check itself, `relax_chk(i, n, site)` (`i` when `0 <= i < n`, else `-1` after
// recording the violation), is `shaders/helpers/relax_chk.wgsl`; `relax_chk_i64`
// checks a 64-bit index at its full width before narrowing it.

impl Em<'_> {
    /// Whether an access through `index` is checked: the index reads a tensor (not a
    /// schedule's own local or workgroup array) or is not affine in loop variables.
    pub(super) fn needs_check(&self, index: &PrimExpr) -> bool {
        let mut found = false;
        visit_expr(index, &mut |x| {
            use relax_ir::tir::BinOp as B;
            match x.kind() {
                PrimExprKind::BufferLoad { buffer, .. } => found |= self.bufs.contains_key(&buffer.id()),
                PrimExprKind::Binary { op: B::Mul, a, b } => found |= self.varies(a) && self.varies(b),
                PrimExprKind::Binary {
                    op: B::Div | B::Mod | B::FloorDiv | B::FloorMod,
                    b,
                    ..
                } => found |= self.varies(b),
                // A cast to fewer than 32 bits wraps, varying or not: the index is
                // checked unless the static check proved it in range (a uniform
                // `T.Cast("uint16", 32767 + 257 * vi)` once went unchecked).
                PrimExprKind::Cast { dtype, value } => {
                    found |= dtype.is_integer() && dtype.bits < 32 && value.dtype().is_integer()
                }
                _ => {}
            }
        });
        found
    }

    /// Whether `e` varies across threads or loop iterations: it uses a thread
    /// builtin, a loop variable or a `let` bound to such a value (not only constants,
    /// uniform parameters and shape variables).
    pub(super) fn varies(&self, e: &PrimExpr) -> bool {
        let mut v = false;
        visit_expr(e, &mut |x| match x.kind() {
            PrimExprKind::Var(var) => v |= self.varying.contains(&var.id()),
            PrimExprKind::BufferLoad { .. } => v = true,
            _ => {}
        });
        v
    }

    /// The flat index of an access of `buffer`, emitted. An `int64` index that is
    /// checked at run time (it reads data: `x[i64(idx[j]) * 4]`) is computed in `i64`
    /// where the device has it, so that a data value near 2^31 times a stride cannot
    /// wrap in 32 bits into the buffer (`take` with index -2^31 read `x[0]`); the
    /// check then sees the full index. Other index arithmetic runs in `i32`.
    pub(super) fn index_expr(&mut self, buffer: &Buffer, index: &PrimExpr) -> Result<(String, W)> {
        let dt = index.dtype();
        let widen = self.caps.i64
            && dt.is_integer()
            && dt.bits == 64
            && !self.locals.contains_key(&buffer.id())
            && self.needs_check(index);
        self.wide += usize::from(widen);
        let r = self.expr(index);
        self.wide -= usize::from(widen);
        r
    }

    /// The checked form of `idx` (WGSL `i32`) for an access of the global buffer
    /// `buffer`: `relax_chk(idx, len, site)`, registering the site.
    pub(super) fn checked_index(&mut self, buffer: &Buffer, idx: &str, iw: W, write: bool) -> Result<String> {
        let len = match buffer.shape().first() {
            Some(e) => {
                let (s, w) = self.expr(e)?;
                self.conv(&s, w, W::I32)?
            }
            None => "1i".to_string(),
        };
        let what = if write { "write" } else { "read" };
        self.oob_sites
            .push(format!("out-of-bounds {what} of `{}`", buffer.name()));
        let site = self.oob_sites.len();
        // Inside `select` arms: checked where every enclosing arm is taken.
        let (suffix, guard) = match self.guards.as_slice() {
            [] => ("", String::new()),
            gs => (
                "_if",
                format!(
                    "{}, ",
                    gs.iter().map(|g| format!("({g})")).collect::<Vec<_>>().join(" && ")
                ),
            ),
        };
        if matches!(iw, W::I64 | W::U64) {
            // A 64-bit index is checked before it is narrowed to `i32`.
            let wide = self.conv(idx, iw, W::I64)?;
            let wide = if iw == W::U64 {
                format!("bitcast<i64>({idx})")
            } else {
                wide
            };
            self.helpers.insert("relax_chk_i64");
            if !suffix.is_empty() {
                self.helpers.insert("relax_chk_i64_if");
            }
            return Ok(format!("relax_chk_i64{suffix}({guard}{wide}, {len}, {site}u)"));
        }
        self.helpers.insert("relax_chk");
        if !suffix.is_empty() {
            self.helpers.insert("relax_chk_if");
        }
        Ok(format!("relax_chk{suffix}({guard}{idx}, {len}, {site}u)"))
    }
}
