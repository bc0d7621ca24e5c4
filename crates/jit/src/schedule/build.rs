//! Builders of the TIR that schedules emit: scoped allocations, `let`s, guards,
//! stores, unrolled loops, and linear indices decomposed into loop variables.

use relax_ir::tir::{BinOp, Buffer, ForKind, PrimExpr, Stmt, TirVar};
use relax_ir::{DataType, Span};

use crate::expr::{self, bin, mul};
use crate::lower::for_loop;

/// `body` in the scope of `buffers` (the first outermost).
pub(crate) fn alloc_all(buffers: impl IntoIterator<Item = Buffer, IntoIter: DoubleEndedIterator>, body: Stmt) -> Stmt {
    buffers.into_iter().rev().fold(body, |body, buffer| Stmt::Alloc {
        buffer,
        body: Box::new(body),
    })
}

/// Fresh `int32` variables named `names`.
pub(crate) fn int_vars<const N: usize>(names: [&str; N]) -> [TirVar; N] {
    names.map(|n| TirVar::new(n, DataType::INT32))
}

pub(crate) fn i32c(v: i64) -> PrimExpr {
    PrimExpr::int_of(v, DataType::INT32)
}

pub(crate) fn to_i32(e: &PrimExpr) -> PrimExpr {
    expr::cast(e.clone(), DataType::INT32)
}

pub(crate) fn let_(v: &TirVar, value: PrimExpr, body: Stmt) -> Stmt {
    Stmt::Let {
        var: v.clone(),
        value,
        body: Box::new(body),
    }
}

pub(crate) fn if_(c: PrimExpr, t: Stmt) -> Stmt {
    match c.as_int() {
        Some(0) => Stmt::Seq(vec![]),
        Some(_) => t,
        None => Stmt::If {
            cond: c,
            then_branch: Box::new(t),
            else_branch: None,
        },
    }
}

pub(crate) fn store(b: &Buffer, idx: PrimExpr, v: PrimExpr) -> Stmt {
    Stmt::BufferStore {
        buffer: b.clone(),
        value: v,
        indices: vec![idx],
        span: Span::NONE,
    }
}

pub(crate) fn unrolled(v: &TirVar, n: i64, body: Stmt) -> Stmt {
    for_loop(v, i32c(n), ForKind::Unrolled, body)
}

/// Decompose a linear index into the given loops' variables (innermost fastest)
/// as `let` bindings around `body`.
pub(crate) fn decompose(idx: PrimExpr, loops: &[(TirVar, PrimExpr)], body: Stmt) -> Stmt {
    let mut rem = idx;
    let mut lets = Vec::new();
    for (i, (v, e)) in loops.iter().enumerate().rev() {
        let e32 = to_i32(e);
        let val = if i == 0 {
            rem.clone()
        } else {
            bin(BinOp::Mod, rem.clone(), e32.clone())
        };
        lets.push((v.clone(), expr::cast(val, v.dtype())));
        if i > 0 {
            rem = bin(BinOp::Div, rem, e32);
        }
    }
    let mut out = body;
    for (v, val) in lets {
        out = let_(&v, val, out);
    }
    out
}

pub(crate) fn total_of(loops: &[(TirVar, PrimExpr)]) -> PrimExpr {
    expr::simplify(&loops.iter().fold(PrimExpr::int(1), |a, (_, e)| {
        mul(a, expr::cast(e.clone(), DataType::INT64))
    }))
}

/// Loop trips a kernel keeps below: Mesa's llvmpipe (lavapipe) ends every loop of a
/// shader invocation after 65,535 trips in all (`LP_MAX_TGSI_LOOP_ITERATIONS`,
/// shared between its loops), silently dropping the rest of the work; longer loops
/// run several unrolled steps a trip.
pub(crate) const MAX_LOOP_TRIPS: i64 = 16384;

/// Steps per trip (a power of two, at most `most`) that keep a loop of `trips`
/// steps within [`MAX_LOOP_TRIPS`] trips; 1 when it already is.
pub(crate) fn steps_per_trip(trips: i64, most: i64) -> i64 {
    if trips <= MAX_LOOP_TRIPS {
        return 1;
    }
    (((trips + MAX_LOOP_TRIPS - 1) / MAX_LOOP_TRIPS) as u64)
        .next_power_of_two()
        .min(most.max(1) as u64) as i64
}
