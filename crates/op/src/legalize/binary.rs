//! Binary element-wise operators with broadcasting (`topi.add`, ...), `where`
//! and `ewise_fma`.

use relax_ir::tir::BinOp;
use relax_ir::tir::Intrinsic;
use relax_ir::{DataType, Expr, ExprKind, PrimExpr, StructInfo, TirVar};

use super::manipulate::ScalarParams;
use super::te::{Operand, Te};
use super::{LegalizeCtx, Lowered, OrSkip, Skip};

/// Bind the first `n` arguments (tensors or inlined scalar constants).
pub(crate) fn operands(ctx: &LegalizeCtx, n: usize) -> Result<(Te, Vec<Operand>), Skip> {
    let mut t = Te::new();
    let mut ops = Vec::new();
    for i in 0..n {
        let si = ctx.args.get(i).or_skip("an argument is missing")?;
        ops.push(t.input(ctx.arg(i)?, si)?);
    }
    Ok((t, ops))
}

/// [`operands`], where an argument may also be a scalar: a `PrimValue` is
/// inlined, a variable of `R.Prim` type becomes a scalar parameter of the
/// PrimFunc (returned with the argument that carries it).
fn operands_with_scalars(ctx: &LegalizeCtx, n: usize) -> Result<(Te, Vec<Operand>, ScalarParams), Skip> {
    let mut t = Te::new();
    let mut ops = Vec::new();
    let mut prims = Vec::new();
    for i in 0..n {
        let e = ctx.arg(i)?;
        let si = ctx.args.get(i).or_skip("an argument is missing")?;
        match (e.kind(), si) {
            (ExprKind::PrimValue(p), _) => {
                for v in relax_ir::visit::free_tir_vars(p) {
                    let arg = Expr::new(ExprKind::PrimValue(v.to_expr()));
                    prims.push((v, arg));
                }
                ops.push(Operand::Scalar(p.clone()));
            }
            (ExprKind::Var(v), StructInfo::Prim(p)) => {
                let tv = match p.value.as_ref().and_then(|e| e.as_var()) {
                    Some(tv) => tv.clone(),
                    None => TirVar::new(v.name(), p.dtype),
                };
                prims.push((tv.clone(), e.clone()));
                ops.push(Operand::Scalar(tv.to_expr()));
            }
            _ => ops.push(t.input(e, si)?),
        }
    }
    Ok((t, ops, prims))
}

fn binary(
    ctx: &LegalizeCtx,
    name: &str,
    f: impl FnOnce(PrimExpr, PrimExpr, DataType) -> PrimExpr,
) -> Result<Lowered, Skip> {
    let (out_shape, _) = ctx.out_tensor()?;
    let (mut t, ops, prims) = operands_with_scalars(ctx, 2)?;
    let dt = ops[0].dtype();
    t.compute(&format!("T_{name}"), &out_shape, "ax", |i| {
        f(ops[0].bcast(i, &out_shape), ops[1].bcast(i, &out_shape), dt)
    });
    if prims.is_empty() {
        Ok(Lowered::from_te(name, t, 1, ctx.out.clone()))
    } else {
        Ok(super::manipulate::finish(name, t, 1, prims, ctx.out.clone()))
    }
}

macro_rules! simple {
    ($($f:ident $name:literal $op:ident $swap:literal),* $(,)?) => {$(
        fn $f(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
            binary(ctx, $name, |a, b, _| if $swap { PrimExpr::binary(BinOp::$op, b, a) } else { PrimExpr::binary(BinOp::$op, a, b) })
        }
    )*};
}

simple!(
    add "add" Add false, subtract "subtract" Sub false, multiply "multiply" Mul false,
    maximum "maximum" Max false, minimum "minimum" Min false,
    equal "equal" Eq false, not_equal "not_equal" Ne false, less "less" Lt false, less_equal "less_equal" Le false,
    greater "greater" Lt true, greater_equal "greater_equal" Le true,
    logical_and "logical_and" And false, logical_or "logical_or" Or false,
);

fn divide(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    binary(ctx, "divide", |a, b, _| PrimExpr::binary(BinOp::Div, a, b))
}

fn floor_divide(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    binary(ctx, "floor_divide", |a, b, dt| {
        if dt.is_float() {
            PrimExpr::intrinsic_call(Intrinsic::Floor, dt, vec![PrimExpr::binary(BinOp::Div, a, b)])
        } else {
            PrimExpr::binary(BinOp::FloorDiv, a, b)
        }
    })
}

fn modulo(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    binary(ctx, "mod", |a, b, dt| {
        if dt.is_float() {
            PrimExpr::intrinsic_call(Intrinsic::Fmod, dt, vec![a, b])
        } else {
            PrimExpr::binary(BinOp::Mod, a, b)
        }
    })
}

fn floor_mod(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    binary(ctx, "floor_mod", |a, b, dt| {
        if dt.is_float() {
            // a - floor(a / b) * b
            let q = PrimExpr::intrinsic_call(
                Intrinsic::Floor,
                dt,
                vec![PrimExpr::binary(BinOp::Div, a.clone(), b.clone())],
            );
            PrimExpr::binary(BinOp::Sub, a, PrimExpr::binary(BinOp::Mul, q, b))
        } else {
            PrimExpr::binary(BinOp::FloorMod, a, b)
        }
    })
}

fn power(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    binary(ctx, "power", |a, b, dt| {
        PrimExpr::intrinsic_call(Intrinsic::Pow, dt, vec![a, b])
    })
}

fn atan2(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    binary(ctx, "atan2", |a, b, dt| {
        PrimExpr::intrinsic_call(Intrinsic::Atan2, dt, vec![a, b])
    })
}

/// A bitwise operator (`bitwise_and`, `shift_left`, ...) on integers (and
/// `bitwise_xor` on booleans for `logical_xor`).
fn bitwise(ctx: &LegalizeCtx, name: &str, intr: Intrinsic) -> Result<Lowered, Skip> {
    let dt = ctx.out_tensor()?.1;
    if !dt.is_integer() && !dt.is_bool() {
        return Err(ctx.unsupported_dtype(dt));
    }
    binary(ctx, name, |a, b, _| PrimExpr::call(intr, dt, vec![a, b]))
}

super::by_intrinsic!(bitwise:
    bitwise_and "bitwise_and" BitwiseAnd, bitwise_or "bitwise_or" BitwiseOr,
    bitwise_xor "bitwise_xor" BitwiseXor, logical_xor "logical_xor" BitwiseXor,
    left_shift "left_shift" ShiftLeft, right_shift "right_shift" ShiftRight,
);

/// `log_add_exp(a, b)`: `log(exp(a) + exp(b))`, as topi writes it.
fn log_add_exp(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    binary(ctx, "log_add_exp", |a, b, dt| {
        let e = |x| PrimExpr::intrinsic_call(Intrinsic::Exp, dt, vec![x]);
        PrimExpr::intrinsic_call(Intrinsic::Log, dt, vec![PrimExpr::binary(BinOp::Add, e(a), e(b))])
    })
}

/// `where(cond, x, y)`: `T.Select(0 < int64(cond), x, y)` with broadcasting.
fn where_(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, _) = ctx.out_tensor()?;
    let (mut t, ops) = operands(ctx, 3)?;
    t.compute("T_where", &out_shape, "ax", |i| {
        let c = ops[0].bcast(i, &out_shape);
        let c = if c.dtype().is_bool() {
            PrimExpr::binary(BinOp::Lt, PrimExpr::int(0), c.cast(DataType::INT64))
        } else {
            PrimExpr::binary(BinOp::Ne, c.clone(), PrimExpr::int_of(0, c.dtype()))
        };
        PrimExpr::select(c, ops[1].bcast(i, &out_shape), ops[2].bcast(i, &out_shape))
    });
    Ok(Lowered::from_te("where", t, 1, ctx.out.clone()))
}

/// `ewise_fma(a, b, c)`: `a * b + c`.
fn ewise_fma(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, _) = ctx.out_tensor()?;
    let (mut t, ops) = operands(ctx, 3)?;
    t.compute("T_ewise_fma", &out_shape, "ax", |i| {
        PrimExpr::binary(
            BinOp::Add,
            PrimExpr::binary(BinOp::Mul, ops[0].bcast(i, &out_shape), ops[1].bcast(i, &out_shape)),
            ops[2].bcast(i, &out_shape),
        )
    });
    Ok(Lowered::from_te("ewise_fma", t, 1, ctx.out.clone()))
}

/// The legalizations of this family's other operators (PrimFunc builders; see
/// [`super::lower_or_skip`]).
pub mod lowered {
    super::super::lowered_legalizations!(where_, ewise_fma,);
}

/// The typed legalizations of this family's element-wise operators (no
/// attributes; a skip says which precondition failed).
pub mod typed {
    super::super::typed_legalizations!(
        add,
        atan2,
        bitwise_and,
        bitwise_or,
        bitwise_xor,
        divide,
        equal,
        floor_divide,
        floor_mod,
        greater,
        greater_equal,
        left_shift,
        less,
        less_equal,
        log_add_exp,
        logical_and,
        logical_or,
        logical_xor,
        maximum,
        minimum,
        modulo,
        multiply,
        not_equal,
        power,
        right_shift,
        subtract
    );
}
