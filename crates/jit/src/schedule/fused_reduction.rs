//! Recognises a reduction fused with its elementwise epilogue in one loop nest (what
//! the TIR fusion makes of `conv2d` + bias / batch norm / ReLU):
//!
//! ```text
//! for spatial.. (parallel):
//!     acc: local[1]
//!     acc[0] = init
//!     for reduce.. (serial): acc[0] = acc[0] op rhs
//!     out[index] = epilogue(acc[0])
//! ```
//!
//! as a [`Reduction`] (into `acc`) plus an [`Epilogue`], so the GEMM schedule can
//! give it register tiles and apply the epilogue to each tile element.

use relax_ir::tir::{BinOp, Buffer, For, ForKind, PrimExpr, PrimExprKind, Stmt, TirVar};

use crate::expr;
use crate::lower::Reduction;

/// The store that follows a fused reduction: `out[index] = value`, `value` reading
/// the accumulator as `acc[0]`.
#[derive(Clone, Debug)]
pub struct Epilogue {
    /// The accumulator (local, one element).
    pub acc: Buffer,
    /// The output buffer (flat).
    pub out: Buffer,
    /// The flat output index (spatial variables only).
    pub index: PrimExpr,
    /// The stored value.
    pub value: PrimExpr,
}

fn is_acc0(e: &PrimExpr, acc: &Buffer) -> bool {
    matches!(e.kind(), PrimExprKind::BufferLoad { buffer, indices, .. }
        if buffer == acc && indices.len() == 1 && indices[0].as_int() == Some(0))
}

/// The reduction and epilogue of a fused stage body, or `None` for any other shape.
pub fn detect(body: &Stmt) -> Option<(Reduction, Epilogue)> {
    let mut spatial = Vec::new();
    let mut cur = body;
    while let Stmt::For(For {
        var,
        extent,
        kind: ForKind::Parallel,
        body,
        min,
        ..
    }) = cur
    {
        if min.as_int() != Some(0) {
            return None;
        }
        spatial.push((var.clone(), extent.clone()));
        cur = body;
    }
    let Stmt::Alloc { buffer: acc, body } = cur else {
        return None;
    };
    if spatial.is_empty() || acc.scope() != "local" || acc.shape().len() != 1 || acc.shape()[0].as_int() != Some(1) {
        return None;
    }
    let Stmt::Seq(steps) = &**body else {
        return None;
    };
    let [Stmt::BufferStore {
        buffer: b0,
        value: init,
        indices: i0,
        ..
    }, red_nest, Stmt::BufferStore {
        buffer: out,
        value,
        indices: oi,
        ..
    }] = steps.as_slice()
    else {
        return None;
    };
    if b0 != acc || i0.len() != 1 || i0[0].as_int() != Some(0) || oi.len() != 1 || out == acc {
        return None;
    }
    let mut reduce = Vec::new();
    let mut cur = red_nest;
    while let Stmt::For(For {
        var,
        extent,
        kind: ForKind::Serial | ForKind::Unrolled,
        body,
        min,
        ..
    }) = cur
    {
        if min.as_int() != Some(0) {
            return None;
        }
        reduce.push((var.clone(), extent.clone()));
        cur = body;
    }
    let Stmt::BufferStore {
        buffer: b1,
        value: upd,
        indices: i1,
        ..
    } = cur
    else {
        return None;
    };
    if reduce.is_empty() || b1 != acc || i1.len() != 1 || i1[0].as_int() != Some(0) {
        return None;
    }
    let PrimExprKind::Binary { op, a, b } = upd.kind() else {
        return None;
    };
    let rhs = if is_acc0(a, acc) {
        b
    } else if is_acc0(b, acc) && matches!(op, BinOp::Add | BinOp::Mul | BinOp::Min | BinOp::Max) {
        a
    } else {
        return None;
    };
    let reads_acc = |e: &PrimExpr| expr::loads_buffer(e, acc);
    let red_vars: Vec<&TirVar> = reduce.iter().map(|(v, _)| v).collect();
    let sp_vars: Vec<&TirVar> = spatial.iter().map(|(v, _)| v).collect();
    let uses_any = |e: &PrimExpr, vs: &[&TirVar]| vs.iter().any(|v| expr::uses_var(e, v));
    // Extents of the reduction may not depend on the spatial loops; the epilogue
    // reads the accumulator and spatial variables only.
    if reads_acc(rhs)
        || reads_acc(init)
        || uses_any(init, &red_vars)
        || reads_acc(&oi[0])
        || uses_any(&oi[0], &red_vars)
        || uses_any(value, &red_vars)
        || reduce.iter().any(|(_, e)| uses_any(e, &sp_vars))
        || expr::loads_buffer(rhs, out)
    {
        return None;
    }
    let r = Reduction {
        spatial,
        reduce,
        out: acc.clone(),
        out_index: oi[0].clone(),
        init: init.clone(),
        op: *op,
        rhs: rhs.clone(),
        matmul: None,
    };
    let epi = Epilogue {
        acc: acc.clone(),
        out: out.clone(),
        index: oi[0].clone(),
        value: value.clone(),
    };
    Some((r, epi))
}
