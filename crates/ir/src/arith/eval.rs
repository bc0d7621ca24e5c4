//! Evaluation of integer `PrimExpr`s for given variable values.

use super::simplify::floor_div_i128;
use crate::tir::{BinOp, Intrinsic, PrimExpr, PrimExprKind, TirVar};

/// Evaluate an integer (or boolean) expression with TVM's semantics (`//` and `%`
/// floor, `T.Div`/`T.truncmod` truncate), looking variables up with `env`.
/// `None` when a variable is unknown, on division by zero, on a result outside
/// `i64`, or for non-integer nodes.
pub fn eval_int(e: &PrimExpr, env: &dyn Fn(&TirVar) -> Option<i64>) -> Option<i64> {
    use PrimExprKind::*;
    let v: i128 = match e.kind() {
        IntImm { value, .. } => *value as i128,
        Var(v) => env(v)? as i128,
        Cast { dtype, value } if dtype.is_integer() && value.dtype().is_integer() => {
            let x = eval_int(value, env)? as i128;
            if dtype.is_bool() {
                (x != 0) as i128
            } else if dtype.bits < 64 {
                let bits = dtype.bits as u32;
                let m = x & ((1i128 << bits) - 1);
                if dtype.is_int() && m >= (1i128 << (bits - 1)) {
                    m - (1i128 << bits)
                } else {
                    m
                }
            } else {
                x
            }
        }
        Binary { op, a, b } => {
            if !a.dtype().is_integer() {
                return None;
            }
            let x = eval_int(a, env)?;
            if *op == BinOp::And && x == 0 {
                return Some(0);
            }
            if *op == BinOp::Or && x != 0 {
                return Some(1);
            }
            let y = eval_int(b, env)?;
            int_binop_exact(*op, x, y)?
        }
        Not(a) => (eval_int(a, env)? == 0) as i128,
        Select { cond, t, f } => {
            let c = eval_int(cond, env)?;
            let (tv, fv) = (eval_int(t, env), eval_int(f, env));
            (if c != 0 { tv? } else { fv? }) as i128
        }
        Call { args, .. } if e.as_intrinsic() == Some(Intrinsic::IfThenElse) && args.len() == 3 => {
            let c = eval_int(&args[0], env)?;
            eval_int(if c != 0 { &args[1] } else { &args[2] }, env)? as i128
        }
        Let { var, value, body } => {
            let x = eval_int(value, env)?;
            let id = var.id();
            let inner = move |v: &TirVar| if v.id() == id { Some(x) } else { env(v) };
            eval_int(body, &inner)? as i128
        }
        _ => return None,
    };
    i64::try_from(v).ok()
}

/// `op` on two integers with TVM's semantics, computed exactly (in `i128`, so a
/// result outside `i64` is kept for the caller to reject or wrap): `Div`/`Mod`
/// truncate, `FloorDiv`/`FloorMod` floor, comparisons and `and`/`or` give 0 or 1.
/// `None` on division by zero.
pub fn int_binop_exact(op: BinOp, x: i64, y: i64) -> Option<i128> {
    let (x, y) = (x as i128, y as i128);
    let division = matches!(op, BinOp::Div | BinOp::Mod | BinOp::FloorDiv | BinOp::FloorMod);
    if division && y == 0 {
        return None;
    }
    Some(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Mod => x % y,
        BinOp::FloorDiv => floor_div_i128(x, y),
        BinOp::FloorMod => x - y * floor_div_i128(x, y),
        BinOp::Min => x.min(y),
        BinOp::Max => x.max(y),
        BinOp::And => (x != 0 && y != 0) as i128,
        BinOp::Or => (x != 0 || y != 0) as i128,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => op.compare(x.cmp(&y))? as i128,
    })
}
