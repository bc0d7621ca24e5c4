//! Expression utilities shared by lowering, scheduling and code generation:
//! substitution, free variables and a constant-folding simplifier.

use std::collections::{HashMap, HashSet};

use relax_ir::tir::{BinOp, Buffer, For, PrimExpr, PrimExprKind, Stmt, TirVar};
use relax_ir::DataType;

pub use relax_ir::mutator::map_prim_expr as map_expr;
pub use relax_ir::mutator::map_stmt_exprs as map_stmt;
pub use relax_ir::visit::for_each_prim_expr as visit_expr;
pub use relax_ir::visit::for_each_stmt as visit_stmts;
pub use relax_ir::visit::for_each_stmt_expr as visit_stmt_exprs;

/// Variable substitution map (variable id -> replacement).
pub type VarMap = HashMap<u64, PrimExpr>;

/// Replace variables in `e` according to `map`.
pub fn subst(e: &PrimExpr, map: &VarMap) -> PrimExpr {
    if map.is_empty() {
        return e.clone();
    }
    map_expr(e, &mut |x| match x.kind() {
        PrimExprKind::Var(v) => map.get(&v.id()).cloned(),
        _ => None,
    })
}

/// Whether `e` mentions variable `v`.
pub fn uses_var(e: &PrimExpr, v: &TirVar) -> bool {
    let mut found = false;
    visit_expr(e, &mut |x| {
        if let PrimExprKind::Var(w) = x.kind() {
            if w == v {
                found = true;
            }
        }
    });
    found
}

/// Whether `e` loads from `buf`.
pub fn loads_buffer(e: &PrimExpr, buf: &Buffer) -> bool {
    let mut found = false;
    visit_expr(e, &mut |x| {
        if let PrimExprKind::BufferLoad { buffer, .. } = x.kind() {
            if buffer == buf {
                found = true;
            }
        }
    });
    found
}

/// Free variables of a statement: variables used but not bound inside it (loop,
/// let, thread and block iteration variables are bound), in first-use order.
pub fn free_vars_stmt(s: &Stmt) -> Vec<TirVar> {
    let mut bound: HashSet<u64> = HashSet::new();
    visit_stmts(s, &mut |x| match x {
        Stmt::Let { var, .. } | Stmt::For(For { var, .. }) | Stmt::LaunchThread { var, .. } => {
            bound.insert(var.id());
        }
        Stmt::BlockRealize { block, .. } => {
            for iv in &block.iter_vars {
                bound.insert(iv.var.id());
            }
        }
        _ => {}
    });
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    visit_stmt_exprs(s, &mut |e| {
        visit_expr(e, &mut |x| match x.kind() {
            PrimExprKind::Let { var, .. } => {
                bound.insert(var.id());
            }
            PrimExprKind::Var(v) if !bound.contains(&v.id()) && seen.insert(v.id()) && !v.dtype().is_handle() => {
                out.push(v.clone());
            }
            _ => {}
        })
    });
    out.retain(|v| !bound.contains(&v.id()));
    out
}

/// Free variables of an expression.
pub fn free_vars_expr(e: &PrimExpr, out: &mut Vec<TirVar>) {
    let mut bound = HashSet::new();
    visit_expr(e, &mut |x| match x.kind() {
        PrimExprKind::Let { var, .. } => {
            bound.insert(var.id());
        }
        PrimExprKind::Var(v) if !bound.contains(&v.id()) && !out.contains(v) => out.push(v.clone()),
        _ => {}
    });
}

fn int_of(e: &PrimExpr) -> Option<i64> {
    match e.kind() {
        PrimExprKind::IntImm { value, .. } => Some(*value),
        _ => None,
    }
}

/// Wrap an integer result to the width of `dtype` (two's complement).
pub fn wrap_int(v: i64, dtype: DataType) -> i64 {
    let bits = dtype.bits as u32;
    if dtype.is_bool() {
        return (v != 0) as i64;
    }
    if bits >= 64 {
        return v;
    }
    let shift = 64 - bits;
    if dtype.is_int() {
        (v << shift) >> shift
    } else {
        ((v as u64) << shift >> shift) as i64
    }
}

/// Integer division semantics shared by the host evaluator and the folding here.
/// Division by zero yields the dividend (as in WGSL), `MIN / -1` wraps.
pub fn int_binop(op: BinOp, a: i64, b: i64) -> Option<i64> {
    Some(match (op, b) {
        (BinOp::Div | BinOp::FloorDiv, 0) => a,
        (BinOp::Mod | BinOp::FloorMod, 0) => 0,
        // The exact result wrapped to 64 bits.
        _ => relax_ir::arith::int_binop_exact(op, a, b)? as i64,
    })
}

/// Build a binary operation, folding constants and trivial identities.
pub fn bin(op: BinOp, a: PrimExpr, b: PrimExpr) -> PrimExpr {
    let dt = a.dtype();
    if dt.is_integer() && dt.lanes <= 1 {
        if let (Some(x), Some(y)) = (int_of(&a), int_of(&b)) {
            if let Some(v) = int_binop(op, x, y) {
                let rdt = if op.is_comparison() || op.is_logical() {
                    DataType::BOOL
                } else {
                    dt
                };
                return PrimExpr::int_of(wrap_int(v, rdt), rdt);
            }
        }
        let (ca, cb) = (int_of(&a), int_of(&b));
        match op {
            BinOp::Add if ca == Some(0) => return b,
            BinOp::Add | BinOp::Sub if cb == Some(0) => return a,
            BinOp::Mul if ca == Some(1) => return b,
            BinOp::Mul | BinOp::Div | BinOp::FloorDiv if cb == Some(1) => return a,
            BinOp::Mul if ca == Some(0) || cb == Some(0) => return PrimExpr::int_of(0, dt),
            BinOp::Mod | BinOp::FloorMod if cb == Some(1) => return PrimExpr::int_of(0, dt),
            BinOp::And if ca == Some(1) => return b,
            BinOp::And if cb == Some(1) => return a,
            BinOp::And if ca == Some(0) || cb == Some(0) => return PrimExpr::bool(false),
            BinOp::Or if ca == Some(0) => return b,
            BinOp::Or if cb == Some(0) => return a,
            _ => {}
        }
        // (x * c) // c  and  (x + y*c) // c patterns are left to the general case.
    }
    PrimExpr::binary(op, a, b)
}

/// `a + b` with folding.
pub fn add(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    bin(BinOp::Add, a, b)
}
/// `a * b` with folding.
pub fn mul(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    bin(BinOp::Mul, a, b)
}
/// `a && b` with folding.
pub fn and(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    bin(BinOp::And, a, b)
}

/// An integer constant of `e`'s type.
pub fn int_like(e: &PrimExpr, v: i64) -> PrimExpr {
    let dt = e.dtype();
    PrimExpr::int_of(v, if dt.is_integer() { dt } else { DataType::INT64 })
}

/// Cast `e` to `dtype` with folding of integer constants.
pub fn cast(e: PrimExpr, dtype: DataType) -> PrimExpr {
    if e.dtype() == dtype {
        return e;
    }
    if let Some(v) = int_of(&e) {
        if dtype.is_integer() {
            return PrimExpr::int_of(wrap_int(v, dtype), dtype);
        }
        if dtype.is_float() {
            return PrimExpr::float_of(v as f64, dtype);
        }
    }
    PrimExpr::new(PrimExprKind::Cast { dtype, value: e })
}

/// Constant folding and algebraic cleanup of an expression (bottom-up).
pub fn simplify(e: &PrimExpr) -> PrimExpr {
    use PrimExprKind as K;
    match e.kind() {
        K::Binary { op, a, b } => {
            let (a2, b2) = (simplify(a), simplify(b));
            // Unify widths of integer constants with the other operand.
            let (a2, b2) = match (int_of(&a2), int_of(&b2)) {
                (Some(_), None) if a2.dtype() != b2.dtype() && b2.dtype().is_integer() => (cast(a2, b2.dtype()), b2),
                (None, Some(_)) if a2.dtype() != b2.dtype() && a2.dtype().is_integer() => {
                    let d = a2.dtype();
                    (a2, cast(b2, d))
                }
                _ => (a2, b2),
            };
            bin(*op, a2, b2)
        }
        K::Cast { dtype, value } => cast(simplify(value), *dtype),
        K::Not(a) => {
            let a2 = simplify(a);
            match int_of(&a2) {
                Some(v) => PrimExpr::bool(v == 0),
                None => PrimExpr::new(K::Not(a2)),
            }
        }
        K::Select { cond, t, f } => {
            let c = simplify(cond);
            match int_of(&c) {
                Some(0) => simplify(f),
                Some(_) => simplify(t),
                None => PrimExpr::select(c, simplify(t), simplify(f)),
            }
        }
        _ => map_expr(e, &mut |x| match x.kind() {
            K::Binary { .. } | K::Cast { .. } | K::Not(_) | K::Select { .. } if !x.same_as(e) => Some(simplify(x)),
            _ => None,
        }),
    }
}
