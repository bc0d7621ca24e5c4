//! Creation operators: `zeros`, `ones`, `full` and their `*_like` forms,
//! `arange`, `eye`, `eye_like`, `tril`, `triu`.

use relax_ir::tir::BinOp;
use relax_ir::tir::Intrinsic;
use relax_ir::{DataType, ExprKind, PrimExpr, PrimExprKind};

use super::manipulate::finish;
use super::te::{konst, scalar_constant, Operand, Te};
use super::unary::one_input;
use super::{LegalizeCtx, Lowered, OrSkip, Skip};
use crate::common::{add, mul, sub};

fn filled(ctx: &LegalizeCtx, name: &str, v: f64) -> Result<Lowered, Skip> {
    let (shape, dt) = ctx.out_tensor()?;
    let mut t = Te::new();
    t.compute("T_full", &shape, "ax", |_| konst(v, dt));
    Ok(finish(name, t, 1, Vec::new(), ctx.out.clone()))
}

/// A scalar constant converted to `dt` at compile time (`T.Cast` of an
/// immediate folds: a float truncates toward zero into an integer type).
fn fold_cast(c: &PrimExpr, dt: DataType) -> PrimExpr {
    match c.kind() {
        PrimExprKind::IntImm { value, .. } => konst(*value as f64, dt),
        PrimExprKind::FloatImm { value, .. } => konst(*value, dt),
        _ => c.clone().cast(dt),
    }
}

/// `full(shape, value)` and `full_like(x, value)`: a scalar constant is
/// inlined (converted to the output type), a 0-d tensor is read.
fn full(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (shape, dt) = ctx.out_tensor()?;
    let mut t = Te::new();
    let ve = ctx.arg(1)?;
    let v = match scalar_constant(ve) {
        Some(c) => Operand::Scalar(fold_cast(&c, dt)),
        None => Operand::Tensor(ctx.placeholder(&mut t, 1)?),
    };
    if v.ndim() != 0 {
        return Err(Skip::new("the fill value is not a scalar"));
    }
    t.compute("T_full", &shape, "ax", |_| {
        let x = v.at(&[]);
        if x.dtype() == dt {
            x
        } else {
            x.cast(dt)
        }
    });
    Ok(finish("full", t, 1, Vec::new(), ctx.out.clone()))
}

/// The value of a `PrimValue` argument.
fn prim_arg(ctx: &LegalizeCtx, i: usize) -> Result<PrimExpr, Skip> {
    match ctx.arg(i)?.kind() {
        ExprKind::PrimValue(p) => Ok(p.clone()),
        _ => Err(Skip::new(format!("argument {i} is not an R.prim_value"))),
    }
}

/// `arange(start, end, step)`: `T_arange[i] = start + i * step` in the
/// output type. An integer output with a float start or step follows
/// `numpy.arange` (which TVM folds constant ranges with): the first two values
/// are cast to the dtype and the rest continue their difference,
/// `T_arange[i] = int(start) + i * (int(start + step) - int(start))`, so
/// `arange(4, 8, 0.5, "int32")` is `[4, 4, 4, ...]`.
fn arange(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (shape, dt) = ctx.out_tensor()?;
    let (start, _end, step) = (prim_arg(ctx, 0)?, prim_arg(ctx, 1)?, prim_arg(ctx, 2)?);
    if shape.len() != 1 {
        return Err(Skip::new("the output is not 1-d"));
    }
    let float_bounds = start.dtype().is_float() || step.dtype().is_float();
    let int_steps = if !dt.is_float() && float_bounds {
        Some(numpy_int_steps(&start, &step, dt))
    } else {
        None
    };
    let mut t = Te::new();
    t.compute("T_arange", &shape, "ax", |i| {
        if let Some((first, delta)) = &int_steps {
            let idx = i[0].clone().cast(dt);
            PrimExpr::binary(
                BinOp::Add,
                first.clone(),
                PrimExpr::binary(BinOp::Mul, idx, delta.clone()),
            )
        } else if dt.is_float() || float_bounds {
            let conv = |e: &PrimExpr| fold_cast_float(e, dt);
            let idx = i[0].clone().cast(dt);
            PrimExpr::binary(BinOp::Add, conv(&start), PrimExpr::binary(BinOp::Mul, idx, conv(&step)))
        } else {
            let v = add(&mul(&i[0], &step), &start);
            if v.dtype() == dt {
                v
            } else {
                v.cast(dt)
            }
        }
    });
    Ok(finish("arange", t, 1, Vec::new(), ctx.out.clone()))
}

/// `numpy.arange`'s first value and step in the integer dtype `dt` for a float
/// `start` or `step`: `(int(start), int(start + step) - int(start))`, folded when
/// both are constants.
fn numpy_int_steps(start: &PrimExpr, step: &PrimExpr, dt: DataType) -> (PrimExpr, PrimExpr) {
    let num = |e: &PrimExpr| match e.kind() {
        PrimExprKind::IntImm { value, .. } => Some(*value as f64),
        PrimExprKind::FloatImm { value, .. } => Some(*value),
        _ => None,
    };
    if let (Some(a), Some(b)) = (num(start), num(step)) {
        let (first, delta) = numpy_first_delta(a, b);
        return (PrimExpr::int_of(first, dt), PrimExpr::int_of(delta, dt));
    }
    let f64t = DataType::FLOAT64;
    let as_f64 = |e: &PrimExpr| {
        if e.dtype() == f64t {
            e.clone()
        } else {
            e.clone().cast(f64t)
        }
    };
    let first = as_f64(start).cast(dt);
    let second = PrimExpr::binary(BinOp::Add, as_f64(start), as_f64(step)).cast(dt);
    (first.clone(), PrimExpr::binary(BinOp::Sub, second, first))
}

/// `(int(start), int(start + step) - int(start))` in double precision, casts
/// truncating toward zero (saturating).
fn numpy_first_delta(start: f64, step: f64) -> (i64, i64) {
    let first = start as i64;
    (first, ((start + step) as i64).wrapping_sub(first))
}

/// The most elements a constant-folded `arange` may have.
const MAX_FOLDED_ARANGE: usize = 1 << 16;

/// `arange` with constant bounds folds into a constant, as TVM's legalization
/// does (`numpy.arange`: `start + i * step` in double precision for a float
/// output; for an integer one the first two values cast, then their difference).
pub(crate) fn fold_arange(ctx: &LegalizeCtx) -> Option<relax_ir::Expr> {
    let (shape, dt) = ctx.out_tensor().ok()?;
    let n = match shape.as_slice() {
        [d] => usize::try_from(d.as_int()?).ok()?,
        _ => return None,
    };
    // A large range stays a kernel: folding would build the whole constant here.
    if n > MAX_FOLDED_ARANGE {
        return None;
    }
    let num = |e: &PrimExpr| match e.kind() {
        PrimExprKind::IntImm { value, .. } => Some(*value as f64),
        PrimExprKind::FloatImm { value, .. } => Some(*value),
        _ => None,
    };
    let bound = |i: usize| num(&prim_arg(ctx, i).ok()?);
    let (start, step) = (bound(0)?, bound(2)?);
    bound(1)?;
    let values: Vec<f64> = if dt.is_float() {
        (0..n).map(|i| start + i as f64 * step).collect()
    } else {
        let (first, delta) = numpy_first_delta(start, step);
        (0..n as i64)
            .map(|i| first.wrapping_add(i.wrapping_mul(delta)) as f64)
            .collect()
    };
    super::constant::constant(&values, vec![n as i64], dt)
}

fn fold_cast_float(e: &PrimExpr, dt: DataType) -> PrimExpr {
    match e.kind() {
        PrimExprKind::IntImm { value, .. } => PrimExpr::float_of(*value as f64, dt),
        PrimExprKind::FloatImm { value, .. } => PrimExpr::float_of(*value, dt),
        _ if e.dtype() == dt => e.clone(),
        _ => e.clone().cast(dt),
    }
}

/// `eye[i, j] = if_then_else(i == j - k, 1, 0)`.
fn eye_of(ctx: &LegalizeCtx, name: &str, k: PrimExpr) -> Result<Lowered, Skip> {
    let (shape, dt) = ctx.out_tensor()?;
    if shape.len() != 2 {
        return Err(Skip::new("the output is not 2-d"));
    }
    let k = k.as_int().or_skip("the diagonal offset k is symbolic")?;
    let mut t = Te::new();
    let names = ["i".to_string(), "j".to_string()];
    t.compute_named("eye", &shape, &names, |i| {
        let rhs = if k >= 0 {
            sub(&i[1], &PrimExpr::int(k))
        } else {
            add(&i[1], &PrimExpr::int(-k))
        };
        PrimExpr::intrinsic_call(
            Intrinsic::IfThenElse,
            dt,
            vec![
                PrimExpr::binary(BinOp::Eq, i[0].clone(), rhs),
                konst(1.0, dt),
                konst(0.0, dt),
            ],
        )
    });
    Ok(finish(name, t, 1, Vec::new(), ctx.out.clone()))
}

fn trilu(ctx: &LegalizeCtx, upper: bool) -> Result<Lowered, Skip> {
    let k = match ctx.call.args.get(1) {
        Some(e) => super::unary::scalar_arg(e, DataType::INT64)
            .and_then(|k| k.as_int())
            .or_skip("the diagonal offset k is not a constant")?,
        None => 0,
    };
    let (mut t, x, shape) = one_input(ctx)?;
    let nd = shape.len();
    if nd < 2 {
        return Err(Skip::new("the input has fewer than 2 dimensions"));
    }
    let dt = x.dtype();
    // A diagonal beyond the matrix selects everything or nothing: clamped to the
    // matrix (or to 2^30 when its extents are symbolic), `row + k` cannot overflow
    // the 32-bit index arithmetic of the GPU.
    let k = match (shape[nd - 2].as_int(), shape[nd - 1].as_int()) {
        (Some(rows), Some(cols)) => k.clamp(-rows.max(0), cols.max(0)),
        _ => k.clamp(-(1 << 30), 1 << 30),
    };
    t.compute("trilu", &shape, "i", |i| {
        let (row, col) = (i[nd - 2].clone(), i[nd - 1].clone());
        // TVM's simplified forms of `col <= row + k` and `row + k <= col`
        let shift = |e: PrimExpr, by: i64| {
            if by == 0 {
                e
            } else {
                PrimExpr::binary(BinOp::Add, e, PrimExpr::int(by))
            }
        };
        let cond = if upper {
            if k == 1 {
                PrimExpr::binary(BinOp::Lt, row, col)
            } else if k >= 0 {
                PrimExpr::binary(BinOp::Le, shift(row, k), col)
            } else {
                PrimExpr::binary(BinOp::Le, row, shift(col, -k))
            }
        } else if k >= 0 {
            PrimExpr::binary(BinOp::Le, col, shift(row, k))
        } else {
            PrimExpr::binary(BinOp::Le, shift(col, -k), row)
        };
        PrimExpr::select(cond, x.at(i), konst(0.0, dt))
    });
    Ok(Lowered::from_te(
        if upper { "triu" } else { "tril" },
        t,
        1,
        ctx.out.clone(),
    ))
}

/// The legalizations of this family's other operators (PrimFunc builders; see
/// [`super::lower_or_skip`]).
pub mod lowered {
    super::super::lowered_legalizations!(
        zeros => |ctx| super::filled(ctx, "zeros", 0.0),
        ones => |ctx| super::filled(ctx, "ones", 1.0),
        zeros_like => |ctx| super::filled(ctx, "zeros", 0.0),
        ones_like => |ctx| super::filled(ctx, "ones", 1.0),
        full,
        arange,
        eye => |ctx| super::eye_of(ctx, "eye", super::prim_arg(ctx, 2)?),
        eye_like => |ctx| super::eye_of(ctx, "eye_like", super::prim_arg(ctx, 1)?),
        tril => |ctx| super::trilu(ctx, false),
        triu => |ctx| super::trilu(ctx, true),
    );
}
