//! A total structural order on `PrimExpr`s (variables by identity), used to sort
//! the atoms and terms of the canonical form.

use std::cmp::Ordering;

use crate::tir::{BinOp, PrimExpr, PrimExprKind};

fn kind_rank(e: &PrimExpr) -> u8 {
    use PrimExprKind::*;
    match e.kind() {
        Var(_) => 0,
        IntImm { .. } => 1,
        FloatImm { .. } => 2,
        StringImm(_) => 3,
        Cast { .. } => 4,
        Binary { .. } => 5,
        Not(_) => 6,
        Select { .. } => 7,
        Call { .. } => 8,
        BufferLoad { .. } => 9,
        Let { .. } => 10,
        Ramp { .. } => 11,
        Broadcast { .. } => 12,
    }
}

fn op_rank(op: BinOp) -> u8 {
    op as u8
}

fn cmp_list(a: &[PrimExpr], b: &[PrimExpr]) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| {
        for (x, y) in a.iter().zip(b) {
            let o = cmp_expr(x, y);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    })
}

/// Compare two expressions structurally. `Equal` exactly when they are the same tree
/// with the same variables (by identity) and buffers.
pub fn cmp_expr(a: &PrimExpr, b: &PrimExpr) -> Ordering {
    use PrimExprKind::*;
    if a.same_as(b) {
        return Ordering::Equal;
    }
    match (a.kind(), b.kind()) {
        (Var(x), Var(y)) => x.id().cmp(&y.id()),
        (IntImm { value: x, dtype: dx }, IntImm { value: y, dtype: dy }) => x.cmp(y).then(dx.cmp(dy)),
        (FloatImm { value: x, dtype: dx }, FloatImm { value: y, dtype: dy }) => {
            x.to_bits().cmp(&y.to_bits()).then(dx.cmp(dy))
        }
        (StringImm(x), StringImm(y)) => x.cmp(y),
        (Cast { dtype: dx, value: x }, Cast { dtype: dy, value: y }) => dx.cmp(dy).then_with(|| cmp_expr(x, y)),
        (Binary { op: ox, a: ax, b: bx }, Binary { op: oy, a: ay, b: by }) => op_rank(*ox)
            .cmp(&op_rank(*oy))
            .then_with(|| cmp_expr(ax, ay))
            .then_with(|| cmp_expr(bx, by)),
        (Not(x), Not(y)) => cmp_expr(x, y),
        (Select { cond: cx, t: tx, f: fx }, Select { cond: cy, t: ty, f: fy }) => cmp_expr(cx, cy)
            .then_with(|| cmp_expr(tx, ty))
            .then_with(|| cmp_expr(fx, fy)),
        (
            Call {
                op: ox,
                dtype: dx,
                args: ax,
            },
            Call {
                op: oy,
                dtype: dy,
                args: ay,
            },
        ) => ox.name().cmp(oy.name()).then(dx.cmp(dy)).then_with(|| cmp_list(ax, ay)),
        (
            BufferLoad {
                buffer: bx,
                indices: ix,
            },
            BufferLoad {
                buffer: by,
                indices: iy,
            },
        ) => bx.id().cmp(&by.id()).then_with(|| cmp_list(ix, iy)),
        (
            Let {
                var: vx,
                value: x,
                body: bx,
            },
            Let {
                var: vy,
                value: y,
                body: by,
            },
        ) => vx
            .id()
            .cmp(&vy.id())
            .then_with(|| cmp_expr(x, y))
            .then_with(|| cmp_expr(bx, by)),
        (
            Ramp {
                base: bx,
                stride: sx,
                lanes: lx,
            },
            Ramp {
                base: by,
                stride: sy,
                lanes: ly,
            },
        ) => lx.cmp(ly).then_with(|| cmp_expr(bx, by)).then_with(|| cmp_expr(sx, sy)),
        (Broadcast { value: x, lanes: lx }, Broadcast { value: y, lanes: ly }) => {
            lx.cmp(ly).then_with(|| cmp_expr(x, y))
        }
        _ => kind_rank(a).cmp(&kind_rank(b)),
    }
}

/// Whether two expressions are the same tree (variables by identity).
pub fn expr_identical(a: &PrimExpr, b: &PrimExpr) -> bool {
    cmp_expr(a, b) == Ordering::Equal
}
