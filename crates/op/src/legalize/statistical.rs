//! Reductions (`sum`, `prod`, `max`, `min`, `mean`) as `topi` lowers them:
//! spatial loops first, then one reduction loop `k{axis}` per reduced axis.

use relax_ir::span::Span;
use relax_ir::tir::Intrinsic;
use relax_ir::tir::{BinOp, Buffer, ForKind, Stmt, TirVar};
use relax_ir::PrimExpr;

use super::extern_kernel::{loop_var, push_extern};
use super::te::{konst, loop_over, max_value, min_value, Operand, Reduce, Te};
use super::{norm_axes, norm_axis, LegalizeCtx, Lowered, Skip};
use crate::attrs::{OpAttrs, StatisticalAttrs};
use crate::common::{attr_bool, attr_opt_int};

/// The reduced axes (normalized, sorted) and `keepdims`.
fn reduce_axes(ctx: &LegalizeCtx, ndim: usize) -> Result<(Vec<usize>, bool), Skip> {
    let StatisticalAttrs { axis, keepdims: keep } = StatisticalAttrs::from_call(ctx.call)?;
    let axes = match axis {
        None => (0..ndim).collect(),
        Some(v) => norm_axes(&v, ndim)?,
    };
    Ok((axes, keep))
}

/// The output shape of reducing `shape` over `axes`.
fn reduced_shape(shape: &[PrimExpr], axes: &[usize], keep: bool) -> Vec<PrimExpr> {
    let mut out = Vec::new();
    for (d, e) in shape.iter().enumerate() {
        if !axes.contains(&d) {
            out.push(e.clone());
        } else if keep {
            out.push(PrimExpr::int(1));
        }
    }
    out
}

/// The index into the reduced tensor for spatial indices `s` and reduction
/// indices `r` (one per reduced axis).
pub(crate) fn reduce_index(nd: usize, axes: &[usize], keep: bool, s: &[PrimExpr], r: &[PrimExpr]) -> Vec<PrimExpr> {
    let mut si = 0;
    let mut ri = 0;
    (0..nd)
        .map(|d| {
            if axes.contains(&d) {
                ri += 1;
                if keep {
                    si += 1;
                }
                r[ri - 1].clone()
            } else {
                si += 1;
                s[si - 1].clone()
            }
        })
        .collect()
}

/// The number of reduced elements (`d0 * d1 * ...`).
fn reduced_count(shape: &[PrimExpr], axes: &[usize]) -> PrimExpr {
    let mut count: Option<PrimExpr> = None;
    for &d in axes {
        count = Some(match count {
            None => shape[d].clone(),
            Some(c) => match (c.as_int(), shape[d].as_int()) {
                (Some(a), Some(b)) => PrimExpr::int(a * b),
                _ => PrimExpr::binary(BinOp::Mul, c, shape[d].clone()),
            },
        });
    }
    count.unwrap_or_else(|| PrimExpr::int(1))
}

/// The count as a value of float type `dt` (`T.float32(20.0)` or a cast).
fn count_as(count: &PrimExpr, dt: relax_ir::DataType) -> PrimExpr {
    match count.as_int() {
        Some(c) => konst(c as f64, dt),
        None => count.clone().cast(dt),
    }
}

/// A commutative reduction of `x` over `axes` into a stage `{x}_red`
/// (`topi.sum` and friends).
fn reduce_buffer(
    t: &mut Te,
    x: &relax_ir::Buffer,
    axes: &[usize],
    keep: bool,
    init: PrimExpr,
    combine: impl FnOnce(PrimExpr, PrimExpr) -> PrimExpr,
) -> relax_ir::Buffer {
    let shape = x.shape().to_vec();
    let red_axes: Vec<(String, PrimExpr)> = axes.iter().map(|&d| (format!("k{d}"), shape[d].clone())).collect();
    let name = format!("{}_red", x.name());
    let xb = x.clone();
    let nd = shape.len();
    t.reduce(
        Reduce {
            name: &name,
            shape: reduced_shape(&shape, axes, keep),
            spatial_prefix: "ax",
            red_axes,
            init,
        },
        combine,
        |s, r| PrimExpr::load(&xb, reduce_index(nd, axes, keep, s, r)),
    )
}

/// A commutative reduction of input 0 into `{x}_red`; returns the output
/// buffer and the number of reduced elements.
fn reduction(
    ctx: &LegalizeCtx,
    t: &mut Te,
    init: impl FnOnce(relax_ir::DataType) -> PrimExpr,
    combine: impl FnOnce(PrimExpr, PrimExpr) -> PrimExpr,
) -> Result<(relax_ir::Buffer, PrimExpr), Skip> {
    let x = ctx.placeholder(t, 0)?;
    let shape = x.shape().to_vec();
    let (axes, keep) = reduce_axes(ctx, shape.len())?;
    let out = reduce_buffer(t, &x, &axes, keep, init(x.dtype()), combine);
    Ok((out, reduced_count(&shape, &axes)))
}

/// The reduction `name` of input 0 alone, from `init` with `op`.
fn reduce_op(
    ctx: &LegalizeCtx,
    name: &str,
    init: impl FnOnce(relax_ir::DataType) -> PrimExpr,
    op: BinOp,
) -> Result<Lowered, Skip> {
    let mut t = Te::new();
    reduction(ctx, &mut t, init, |a, b| PrimExpr::binary(op, a, b))?;
    Ok(Lowered::from_te(name, t, 1, ctx.out.clone()))
}

fn sum(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    reduce_op(ctx, "sum", |dt| konst(0.0, dt), BinOp::Add)
}

fn prod(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    reduce_op(ctx, "prod", |dt| konst(1.0, dt), BinOp::Mul)
}

fn max(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    reduce_op(ctx, "max", min_value, BinOp::Max)
}

fn min(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    reduce_op(ctx, "min", max_value, BinOp::Min)
}

/// `mean`: the sum divided by the element count (`T_divide`).
fn mean(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let mut t = Te::new();
    let (red, count) = reduction(
        ctx,
        &mut t,
        |dt| konst(0.0, dt),
        |a, b| PrimExpr::binary(BinOp::Add, a, b),
    )?;
    let divisor = count_as(&count, red.dtype());
    let shape = red.shape().to_vec();
    t.compute("T_divide", &shape, "ax", |i| {
        PrimExpr::binary(BinOp::Div, PrimExpr::load(&red, i.to_vec()), divisor)
    });
    Ok(Lowered::from_te("mean", t, 1, ctx.out.clone()))
}

/// `variance` as `topi`: mean with kept dimensions, squared deviation, mean of
/// that; `std` adds the square root.
fn variance_impl(ctx: &LegalizeCtx, t: &mut Te) -> Result<relax_ir::Buffer, Skip> {
    let x = ctx.placeholder(t, 0)?;
    let dt = ctx.arg_dtype_if(0, relax_ir::DataType::is_float)?;
    let shape = x.shape().to_vec();
    let (axes, keep) = reduce_axes(ctx, shape.len())?;
    let count = count_as(&reduced_count(&shape, &axes), dt);
    let add = |a, b| PrimExpr::binary(BinOp::Add, a, b);
    let sum = reduce_buffer(t, &x, &axes, true, konst(0.0, dt), add);
    let kshape = sum.shape().to_vec();
    let mean = t.compute("T_divide", &kshape, "ax", |i| {
        PrimExpr::binary(BinOp::Div, PrimExpr::load(&sum, i.to_vec()), count.clone())
    });
    let mean_op = Operand::Tensor(mean);
    let dev = t.compute("T_subtract", &shape, "ax", |i| {
        PrimExpr::binary(BinOp::Sub, PrimExpr::load(&x, i.to_vec()), mean_op.bcast(i, &shape))
    });
    let sq = t.compute("T_multiply", &shape, "ax", |i| {
        PrimExpr::binary(
            BinOp::Mul,
            PrimExpr::load(&dev, i.to_vec()),
            PrimExpr::load(&dev, i.to_vec()),
        )
    });
    let sqsum = reduce_buffer(t, &sq, &axes, keep, konst(0.0, dt), add);
    let oshape = sqsum.shape().to_vec();
    Ok(t.compute("T_divide", &oshape, "ax", |i| {
        PrimExpr::binary(BinOp::Div, PrimExpr::load(&sqsum, i.to_vec()), count.clone())
    }))
}

fn variance(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let mut t = Te::new();
    variance_impl(ctx, &mut t)?;
    Ok(Lowered::from_te("variance", t, 1, ctx.out.clone()))
}

fn std(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let mut t = Te::new();
    let var = variance_impl(ctx, &mut t)?;
    let shape = var.shape().to_vec();
    let dt = var.dtype();
    t.compute("compute", &shape, "i", |i| {
        PrimExpr::intrinsic_call(Intrinsic::Sqrt, dt, vec![PrimExpr::load(&var, i.to_vec())])
    });
    Ok(Lowered::from_te("std", t, 1, ctx.out.clone()))
}

/// `cumsum` / `cumprod`, as TVM's `topi.cumsum` / `topi.cumprod` scan: every
/// line along the axis (the outer positions in parallel) is walked once in
/// increasing order, `out[0] = x[0]` and `out[k] = out[k - 1] op x[k]`
/// (`exclusive`: `out[0]` is the identity and `out[k] = out[k - 1] op x[k - 1]`),
/// linear in the axis length. With no axis the input is flattened first.
fn scan(ctx: &LegalizeCtx, name: &str, is_sum: bool) -> Result<Lowered, Skip> {
    let (out_shape, odt) = ctx.out_tensor()?;
    let mut t = Te::new();
    let x = ctx.placeholder(&mut t, 0)?;
    let shape = x.shape().to_vec();
    let exclusive = attr_bool(ctx.call, "exclusive", false);
    let (axis, flat) = match attr_opt_int(ctx.call, "axis")? {
        None => (0usize, true),
        Some(a) => (norm_axis(a, shape.len())?, false),
    };
    if (flat && out_shape.len() != 1) || (!flat && out_shape.len() != shape.len()) {
        return Err(Skip::new("the output rank does not match the axis"));
    }
    let ext = out_shape[axis].clone();
    let identity = konst(if is_sum { 0.0 } else { 1.0 }, odt);
    let read = |idx: Vec<PrimExpr>| -> PrimExpr {
        let v = if flat {
            // unravel the flat position into the input's indices
            let mut rest = idx[0].clone();
            let mut out = vec![PrimExpr::int(0); shape.len()];
            for d in (0..shape.len()).rev() {
                if d == 0 {
                    out[d] = rest.clone();
                } else {
                    out[d] = PrimExpr::binary(BinOp::FloorMod, rest.clone(), shape[d].clone());
                    rest = PrimExpr::binary(BinOp::FloorDiv, rest, shape[d].clone());
                }
            }
            PrimExpr::load(&x, out)
        } else {
            PrimExpr::load(&x, idx)
        };
        if v.dtype() == odt {
            v
        } else {
            v.cast(odt)
        }
    };
    // A bool scan (TVM infers a bool result for a bool input without a dtype)
    // is the running `or` (`cumsum`: "any so far", the nonzero test of the
    // count) or `and` (`cumprod`), not a 1-bit sum that would wrap.
    let op = match (is_sum, odt.is_bool()) {
        (true, false) => BinOp::Add,
        (false, false) => BinOp::Mul,
        (true, true) => BinOp::Or,
        (false, true) => BinOp::And,
    };
    let out = Buffer::new(name, odt, out_shape.clone());
    let outer: Vec<TirVar> = (0..out_shape.len()).map(|_| loop_var()).collect();
    let k = loop_var();
    let at = |pos: PrimExpr| -> Vec<PrimExpr> {
        let mut idx: Vec<PrimExpr> = outer.iter().map(|v| v.to_expr()).collect();
        idx[axis] = pos;
        idx
    };
    let kx = k.to_expr();
    let prev = PrimExpr::binary(BinOp::Sub, kx.clone(), PrimExpr::int(1));
    let first = if exclusive {
        identity
    } else {
        read(at(PrimExpr::int(0)))
    };
    let next = PrimExpr::binary(
        op,
        PrimExpr::load(&out, at(prev.clone())),
        read(at(if exclusive { prev } else { kx.clone() })),
    );
    let store = |value: PrimExpr| Stmt::BufferStore {
        buffer: out.clone(),
        value,
        indices: at(kx.clone()),
        span: Span::NONE,
    };
    let step = Stmt::If {
        cond: PrimExpr::binary(BinOp::Eq, kx.clone(), PrimExpr::int(0)),
        then_branch: Box::new(store(first)),
        else_branch: Some(Box::new(store(next))),
    };
    let mut body = loop_over(&k, &ext, ForKind::Serial, step);
    for (d, v) in outer.iter().enumerate().rev() {
        if d != axis {
            body = loop_over(v, &out_shape[d], ForKind::Parallel, body);
        }
    }
    push_extern(&mut t, name, vec![body], &out);
    Ok(Lowered::from_te(name, t, 1, ctx.out.clone()))
}

/// The legalizations of this family's other operators (PrimFunc builders; see
/// [`super::lower_or_skip`]).
pub mod lowered {
    super::super::lowered_legalizations!(
        cumsum => |ctx| super::scan(ctx, "cumsum", true),
        cumprod => |ctx| super::scan(ctx, "cumprod", false),
    );
}

/// The typed legalizations of the reductions (attributes: [`StatisticalAttrs`]).
pub mod typed {
    super::super::typed_legalizations!(max, mean, min, prod, std, sum, variance);
}
