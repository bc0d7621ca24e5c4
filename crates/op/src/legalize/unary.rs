//! Unary element-wise operators (`topi` math functions, `clip`, `astype`).

use relax_ir::tir::BinOp;
use relax_ir::tir::Intrinsic;
use relax_ir::{DataType, ExprKind, PrimExpr};

use super::te::{konst, Operand, Te};
use super::{LegalizeCtx, Lowered, OrSkip, Skip};

/// One input tensor (no inlined scalar): the builder and the operand.
pub(crate) fn one_input(ctx: &LegalizeCtx) -> Result<(Te, Operand, Vec<PrimExpr>), Skip> {
    let mut t = Te::new();
    let b = ctx.placeholder(&mut t, 0)?;
    let shape = b.shape().to_vec();
    Ok((t, Operand::Tensor(b), shape))
}

/// The output shape, then [`one_input`].
pub(crate) fn out_and_input(ctx: &LegalizeCtx) -> Result<(Vec<PrimExpr>, Te, Operand, Vec<PrimExpr>), Skip> {
    let (out_shape, _) = ctx.out_tensor()?;
    let (t, x, shape) = one_input(ctx)?;
    Ok((out_shape, t, x, shape))
}

/// The output shape, a builder and input 0 as a placeholder of it.
pub(crate) fn out_and_data(ctx: &LegalizeCtx) -> Result<(Vec<PrimExpr>, Te, relax_ir::Buffer), Skip> {
    let (out_shape, _) = ctx.out_tensor()?;
    let mut t = Te::new();
    let x = ctx.placeholder(&mut t, 0)?;
    Ok((out_shape, t, x))
}

/// `compute[i...] = f(x[i...])`, function `name`.
fn compute_unary(ctx: &LegalizeCtx, name: &str, f: impl FnOnce(PrimExpr) -> PrimExpr) -> Result<Lowered, Skip> {
    let (mut t, x, shape) = one_input(ctx)?;
    t.compute("compute", &shape, "i", |i| f(x.at(i)));
    Ok(Lowered::from_te(name, t, 1, ctx.out.clone()))
}

/// `compute[i...] = intr(x[i...])` on a float input, function `fname`: the
/// legalization of a unary float operator of one intrinsic
/// (`crate::unary::FLOAT_MATH`).
pub(crate) fn intrin(ctx: &LegalizeCtx, fname: &str, intr: Intrinsic) -> Result<Lowered, Skip> {
    let dt = ctx.arg_dtype_if(0, DataType::is_float)?;
    compute_unary(ctx, fname, |x| PrimExpr::call(intr, dt, vec![x]))
}

fn abs(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let dt = ctx.arg_dtype(0)?;
    if dt.is_float() {
        intrin(ctx, "tir_abs", Intrinsic::Fabs)
    } else if dt.is_uint() || dt.is_bool() {
        compute_unary(ctx, "tir_abs", |x| x)
    } else {
        compute_unary(ctx, "tir_abs", |x| {
            PrimExpr::select(
                PrimExpr::binary(BinOp::Ge, x.clone(), PrimExpr::int_of(0, dt)),
                x.clone(),
                PrimExpr::binary(BinOp::Mul, x, PrimExpr::int_of(-1, dt)),
            )
        })
    }
}

/// `ceil`/`floor`/`round`/`trunc`: a copy on integers (topi's identity compute).
fn rounding(ctx: &LegalizeCtx, fname: &str, intr: Intrinsic) -> Result<Lowered, Skip> {
    let dt = ctx.arg_dtype(0)?;
    if dt.is_float() {
        intrin(ctx, fname, intr)
    } else {
        compute_unary(ctx, fname, |x| x)
    }
}

super::by_intrinsic!(rounding:
    ceil "tir_ceil" Ceil, floor "tir_floor" Floor, round "tir_round" Nearbyint, trunc "tir_trunc" Trunc,
);

fn negative(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let dt = ctx.arg_dtype(0)?;
    compute_unary(ctx, "tir_negative", |x| {
        PrimExpr::binary(BinOp::Mul, x, konst(-1.0, dt))
    })
}

fn square(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, x, shape) = one_input(ctx)?;
    t.compute("T_multiply", &shape, "ax", |i| {
        PrimExpr::binary(BinOp::Mul, x.at(i), x.at(i))
    });
    Ok(Lowered::from_te("tir_square", t, 1, ctx.out.clone()))
}

fn sign(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let dt = ctx.arg_dtype(0)?;
    let (mut t, x, shape) = one_input(ctx)?;
    t.compute("T_sign", &shape, "ax", |i| {
        let mut v = x.at(i);
        // topi compares narrower integers in int64
        let mut cmp_dt = dt;
        if dt.is_int() && dt.bits < 64 {
            cmp_dt = DataType::INT64;
            v = v.cast(cmp_dt);
        }
        PrimExpr::select(
            PrimExpr::binary(BinOp::Lt, konst(0.0, cmp_dt), v.clone()),
            konst(1.0, dt),
            PrimExpr::select(
                PrimExpr::binary(BinOp::Lt, v, konst(0.0, cmp_dt)),
                konst(-1.0, dt),
                konst(0.0, dt),
            ),
        )
    });
    Ok(Lowered::from_te("tir_sign", t, 1, ctx.out.clone()))
}

fn isnan(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    ctx.arg_dtype_if(0, DataType::is_float)?;
    compute_unary(ctx, "tir_isnan", |x| {
        PrimExpr::intrinsic_call(Intrinsic::Isnan, DataType::BOOL, vec![x])
    })
}

fn inf(dt: DataType) -> PrimExpr {
    PrimExpr::float_of(f64::INFINITY, dt)
}

fn isinf(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let dt = ctx.arg_dtype_if(0, DataType::is_float)?;
    compute_unary(ctx, "tir_isinf", |x| {
        let fabs = PrimExpr::intrinsic_call(Intrinsic::Fabs, dt, vec![x.clone()]);
        PrimExpr::binary(
            BinOp::And,
            PrimExpr::binary(BinOp::Eq, fabs, inf(dt)),
            PrimExpr::new(relax_ir::PrimExprKind::Not(PrimExpr::intrinsic_call(
                Intrinsic::Isnan,
                DataType::BOOL,
                vec![x],
            ))),
        )
    })
}

fn isfinite(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let dt = ctx.arg_dtype_if(0, DataType::is_float)?;
    compute_unary(ctx, "tir_isfinite", |x| {
        let fabs = PrimExpr::intrinsic_call(Intrinsic::Fabs, dt, vec![x.clone()]);
        let nan = PrimExpr::intrinsic_call(Intrinsic::Isnan, DataType::BOOL, vec![x]);
        PrimExpr::binary(
            BinOp::And,
            PrimExpr::binary(BinOp::Or, PrimExpr::binary(BinOp::Ne, fabs, inf(dt)), nan.clone()),
            PrimExpr::new(relax_ir::PrimExprKind::Not(nan)),
        )
    })
}

/// A scalar argument (`R.prim_value` or a scalar constant) converted to `dt`.
pub(crate) fn scalar_arg(e: &relax_ir::Expr, dt: DataType) -> Option<PrimExpr> {
    let v = match e.kind() {
        ExprKind::PrimValue(p) => p.clone(),
        _ => super::te::scalar_constant(e)?,
    };
    Some(match v.kind() {
        relax_ir::PrimExprKind::IntImm { value, .. } => konst(*value as f64, dt),
        relax_ir::PrimExprKind::FloatImm { value, .. } => konst(*value, dt),
        _ => v.cast(dt),
    })
}

fn clip(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let dt = ctx.arg_dtype(0)?;
    let bound = |i: usize| scalar_arg(ctx.arg(i)?, dt).or_skip("a clip bound is not a scalar constant");
    let (lo, hi) = (bound(1)?, bound(2)?);
    compute_unary(ctx, "tir_clip", |x| {
        PrimExpr::binary(BinOp::Max, PrimExpr::binary(BinOp::Min, x, hi), lo)
    })
}

/// `T_{name}[i...] = f(x[i...])` over `ax` loops, function `tir_{name}`.
fn topi_unary(ctx: &LegalizeCtx, name: &str, f: impl FnOnce(PrimExpr) -> PrimExpr) -> Result<Lowered, Skip> {
    let (mut t, x, shape) = one_input(ctx)?;
    t.compute(&format!("T_{name}"), &shape, "ax", |i| f(x.at(i)));
    Ok(Lowered::from_te(&format!("tir_{name}"), t, 1, ctx.out.clone()))
}

fn logical_not(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    topi_unary(ctx, "logical_not", |x| {
        let x = if x.dtype().is_bool() { x } else { x.cast(DataType::BOOL) };
        PrimExpr::new(relax_ir::PrimExprKind::Not(x))
    })
}

fn bitwise_not(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let dt = ctx.arg_dtype_if(0, |dt: &DataType| dt.is_integer() || dt.is_bool())?;
    topi_unary(ctx, "bitwise_not", |x| {
        PrimExpr::intrinsic_call(Intrinsic::BitwiseNot, dt, vec![x])
    })
}

/// `astype` of a constant folds into a constant.
pub(crate) fn fold_astype(ctx: &LegalizeCtx) -> Option<relax_ir::Expr> {
    let ExprKind::Constant { data } = ctx.call.args.first()?.kind() else {
        return None;
    };
    let (_, odt) = ctx.out_tensor().ok()?;
    let values = super::constant::decode(data)?;
    super::constant::constant(&values, data.shape.clone(), odt)
}

fn astype(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (_, odt) = ctx.out_tensor()?;
    compute_unary(ctx, "cast", |x| x.cast(odt))
}

/// The legalizations of this family's other operators (PrimFunc builders; see
/// [`super::lower_or_skip`]).
pub mod lowered {
    super::super::lowered_legalizations!(astype,);
}

/// The typed legalizations of this family's element-wise operators (no
/// attributes; a skip says which precondition failed).
pub mod typed {
    super::super::typed_legalizations!(
        abs,
        bitwise_not,
        ceil,
        clip,
        floor,
        isfinite,
        isinf,
        isnan,
        logical_not,
        negative,
        round,
        sign,
        square,
        trunc,
    );
}
