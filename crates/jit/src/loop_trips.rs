//! Loop trips of one GPU kernel invocation, for software adapters that end a
//! shader's loops early.
//!
//! Mesa's llvmpipe (lavapipe) keeps one loop limiter per shader invocation,
//! shared by all its loops (`LP_MAX_TGSI_LOOP_ITERATIONS`): after 65,535 loop
//! trips in all it breaks out of the loop running then and silently skips the
//! rest of that loop's work. The schedules keep their own loops below it (see
//! [`crate::schedule::MAX_LOOP_TRIPS`]); a kernel whose loops still need more
//! (a scan along a long axis, hand-written TIR walking a long axis in one
//! thread) is refused on such an adapter rather than run to a wrong answer.

use std::collections::HashMap;

use relax_ir::tir::{BinOp, For, ForKind, Intrinsic, PrimExpr, PrimExprKind, Stmt};
use relax_ir::DataType;

use crate::expr;

/// The loop trips lavapipe allows one shader invocation.
pub(crate) const SOFTWARE_LOOP_TRIP_LIMIT: i64 = 65_535;

/// An upper bound on the loop trips (back edges) one invocation of `body` runs,
/// as an int64 expression of the kernel's variables; `None` when the kernel has
/// a `while` loop (no bound is known). An `if` counts its longer branch; an
/// unrolled loop (emitted without a loop) counts only its body's loops.
pub(crate) fn loop_trips(body: &Stmt) -> Option<PrimExpr> {
    Some(expr::simplify(&trips(body)?))
}

fn zero() -> PrimExpr {
    PrimExpr::int(0)
}

fn trips(s: &Stmt) -> Option<PrimExpr> {
    match s {
        Stmt::For(For {
            min,
            extent,
            kind,
            body,
            ..
        }) => {
            let inner = trips(body)?;
            let e = expr::cast(extent.clone(), DataType::INT64);
            let per_step = if straight_line(*kind, min, extent).is_some() {
                inner
            } else {
                expr::add(PrimExpr::int(1), inner)
            };
            Some(expr::mul(e, per_step))
        }
        Stmt::While { .. } => None,
        // The helpers the emitter calls loop too (counted per call).
        Stmt::BufferStore { value, indices, .. } => {
            let calls = std::iter::once(value).chain(indices).map(fmod_f64_calls).sum::<i64>();
            Some(PrimExpr::int(calls * FMOD_F64_TRIPS))
        }
        Stmt::If {
            then_branch,
            else_branch,
            ..
        } => {
            let a = trips(then_branch)?;
            let b = match else_branch {
                Some(e) => trips(e)?,
                None => zero(),
            };
            Some(expr::bin(BinOp::Max, a, b))
        }
        _ => s.children().try_fold(zero(), |acc, c| Some(expr::add(acc, trips(c)?))),
    }
}

/// Loop trips of one call of `shaders/helpers/fmod_f64.wgsl` at most: its binary
/// long division doubles and then halves the divisor across the float64 exponent
/// range (2,098 steps each way, subnormals included).
const FMOD_F64_TRIPS: i64 = 2 * 2_098;

/// The float64 truncated remainders in `e` (`%`, `T.truncmod`, `T.fmod`), each a
/// call of the looping helper.
fn fmod_f64_calls(e: &PrimExpr) -> i64 {
    let mut n = 0;
    expr::visit_expr(e, &mut |x| {
        let is_mod = match x.kind() {
            PrimExprKind::Binary { op: BinOp::Mod, .. } => true,
            PrimExprKind::Call { .. } => matches!(x.as_intrinsic(), Some(Intrinsic::Fmod | Intrinsic::Truncmod)),
            _ => false,
        };
        if is_mod && x.dtype() == DataType::FLOAT64 {
            n += 1;
        }
    });
    n
}

/// The steps of a loop the WGSL emitter writes as straight-line code (no loop):
/// an unrolled loop from 0 of at most 64 constant steps.
pub(crate) fn straight_line(kind: ForKind, min: &PrimExpr, extent: &PrimExpr) -> Option<i64> {
    match (kind, min.as_int(), extent.as_int()) {
        (ForKind::Unrolled, Some(0), Some(n)) if n <= 64 => Some(n),
        _ => None,
    }
}

/// Check an invocation's trip bound against the software adapter's limit, with
/// the values of the kernel's variables at dispatch. A bound that depends on
/// something unknown at dispatch (a thread index, an outer loop's variable) is
/// not checked.
pub(crate) fn check_software_limit(
    bound: Option<&PrimExpr>,
    vars: &HashMap<u64, i64>,
    func: &str,
    kernel: &str,
    adapter: &str,
) -> crate::error::Result<()> {
    let Some(b) = bound else { return Ok(()) };
    let Ok(t) = crate::args::eval_int(b, vars) else {
        return Ok(());
    };
    if t > SOFTWARE_LOOP_TRIP_LIMIT {
        return Err(crate::error::JitError::Unsupported {
            func: func.to_string(),
            msg: format!(
                "kernel {kernel} runs {t} loop trips in one GPU invocation; the software adapter \
             {adapter} silently ends an invocation's loops after {SOFTWARE_LOOP_TRIP_LIMIT} trips, \
             so the kernel is not run there (run the program on the host: `--device cpu`)"
            ),
        });
    }
    Ok(())
}
