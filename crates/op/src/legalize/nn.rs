//! Neural-network operators: activations and the numerically stable softmax.

use relax_ir::tir::BinOp;
use relax_ir::tir::Intrinsic;
use relax_ir::{AttrValue, Attrs, DataType, PrimExpr};

use super::statistical::reduce_index;
use super::te::{add, konst, min_value, mul, Operand, Reduce, Te};
use super::unary::one_input;
use super::{norm_axes, norm_axis, LegalizeCtx, Lowered, OrSkip, Skip};
use crate::common::{attr, attr_int, attr_ints};

/// A builder with its inputs, and the first input's float dtype and shape.
type FloatInputs = (Te, Vec<relax_ir::Buffer>, DataType, Vec<PrimExpr>);

/// Arguments `0..n` as inputs of a new builder; the first must be a float tensor.
fn float_inputs(ctx: &LegalizeCtx, n: usize) -> Result<FloatInputs, Skip> {
    let mut t = Te::new();
    let bufs = (0..n)
        .map(|i| ctx.placeholder(&mut t, i))
        .collect::<Result<Vec<_>, _>>()?;
    let dt = ctx.arg_dtype_if(0, DataType::is_float)?;
    let shape = bufs[0].shape().to_vec();
    Ok((t, bufs, dt, shape))
}

/// [`one_input`] of a float tensor, with its dtype.
fn one_float_input(ctx: &LegalizeCtx) -> Result<(Te, Operand, Vec<PrimExpr>, DataType), Skip> {
    let dt = ctx.arg_dtype_if(0, DataType::is_float)?;
    let (t, x, shape) = one_input(ctx)?;
    Ok((t, x, shape, dt))
}

/// The shape left after reducing `shape` over the sorted `axes`, and the
/// reduction axes `k<d>` with their extents.
fn reduced(shape: &[PrimExpr], axes: &[usize]) -> (Vec<PrimExpr>, Vec<(String, PrimExpr)>) {
    let kept = (0..shape.len()).filter(|d| !axes.contains(d)).map(|d| shape[d].clone());
    let red_axes = axes.iter().map(|&d| (format!("k{d}"), shape[d].clone())).collect();
    (kept.collect(), red_axes)
}

/// The sum of every element of `src` into the 0-d stage `name` (reduction
/// axes `k<d>`).
fn sum_all(t: &mut Te, name: &str, src: &relax_ir::Buffer, dt: DataType) -> relax_ir::Buffer {
    let shape = src.shape().to_vec();
    let (_, red_axes) = reduced(&shape, &(0..shape.len()).collect::<Vec<_>>());
    let sb = src.clone();
    t.reduce(Reduce::sum(name, vec![], "ax", red_axes, dt), add, |_, r| {
        PrimExpr::load(&sb, r.to_vec())
    })
}

fn relu(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, x, shape) = one_input(ctx)?;
    let dt = x.dtype();
    t.compute("compute", &shape, "i", |i| {
        PrimExpr::binary(BinOp::Max, x.at(i), konst(0.0, dt))
    });
    Ok(Lowered::from_te("relu", t, 1, ctx.out.clone()))
}

fn leakyrelu(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let alpha = attr(ctx.call, "alpha").and_then(AttrValue::as_float).unwrap_or(0.01);
    let (mut t, x, shape) = one_input(ctx)?;
    let dt = x.dtype();
    t.compute("compute", &shape, "i", |i| {
        let v = x.at(i);
        PrimExpr::select(
            PrimExpr::binary(BinOp::Lt, konst(0.0, dt), v.clone()),
            v.clone(),
            PrimExpr::binary(BinOp::Mul, v, konst(alpha, dt)),
        )
    });
    Ok(Lowered::from_te("leaky_relu", t, 1, ctx.out.clone()))
}

fn silu(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, x, shape) = one_input(ctx)?;
    let dt = x.dtype();
    let s = t.compute("compute", &shape, "i", |i| {
        PrimExpr::intrinsic_call(Intrinsic::Sigmoid, dt, vec![x.at(i)])
    });
    t.compute("T_multiply", &shape, "ax", |i| {
        PrimExpr::binary(BinOp::Mul, x.at(i), PrimExpr::load(&s, i.to_vec()))
    });
    Ok(Lowered::from_te("silu", t, 1, ctx.out.clone()))
}

/// `i` with `k` inserted at position `ax`.
fn insert_at(i: &[PrimExpr], ax: usize, k: &PrimExpr) -> Vec<PrimExpr> {
    let mut v = i.to_vec();
    v.insert(ax, k.clone());
    v
}

/// `i` without position `ax`.
fn remove_at(i: &[PrimExpr], ax: usize) -> Vec<PrimExpr> {
    let mut v = i.to_vec();
    v.remove(ax);
    v
}

/// The normalized `axis` of a softmax-like call, the shape reduced over it and the
/// `T_softmax_maxelem` stage (the maximum of `x` along it), as topi starts both
/// `softmax` and `log_softmax`.
fn softmax_maxelem(
    ctx: &LegalizeCtx,
    t: &mut Te,
    x: &Operand,
    shape: &[PrimExpr],
) -> Result<(i64, Vec<PrimExpr>, relax_ir::Buffer), Skip> {
    let ax = norm_axis(attr_int(ctx.call, "axis", -1)?, shape.len())?;
    let axis = ax as i64;
    let mut red_shape = shape.to_vec();
    red_shape.remove(ax);
    let maxelem = t.reduce(
        Reduce {
            name: "T_softmax_maxelem",
            shape: red_shape.clone(),
            spatial_prefix: "i",
            red_axes: vec![("k".into(), shape[ax].clone())],
            init: min_value(x.dtype()),
        },
        |a, b| PrimExpr::binary(BinOp::Max, a, b),
        |s, r| x.at(&insert_at(s, ax, &r[0])),
    );
    Ok((axis, red_shape, maxelem))
}

/// `softmax` over `axis`: max, exp, sum, normalize.
fn softmax_impl(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, x, shape) = one_input(ctx)?;
    let dt = x.dtype();
    let (axis, red_shape, maxelem) = softmax_maxelem(ctx, &mut t, &x, &shape)?;
    let ax = axis as usize;
    let with_k = |s: &[PrimExpr], k: &PrimExpr| insert_at(s, ax, k);
    let drop_ax = |i: &[PrimExpr]| remove_at(i, ax);
    let exp = t.compute("T_softmax_exp", &shape, "i", |i| {
        PrimExpr::intrinsic_call(
            Intrinsic::Exp,
            dt,
            vec![PrimExpr::binary(
                BinOp::Sub,
                x.at(i),
                PrimExpr::load(&maxelem, drop_ax(i)),
            )],
        )
    });
    let expsum = t.reduce(
        Reduce::sum(
            "T_softmax_expsum",
            red_shape,
            "i",
            vec![("k".into(), shape[ax].clone())],
            dt,
        ),
        |a, b| PrimExpr::binary(BinOp::Add, a, b),
        |s, r| PrimExpr::load(&exp, with_k(s, &r[0])),
    );
    let mut ann = Attrs::new();
    ann.set("axis", AttrValue::Int(axis));
    let names: Vec<String> = (0..shape.len()).map(|i| format!("i{i}")).collect();
    t.compute_annotated("T_softmax_norm", &shape, &names, ann, |i| {
        PrimExpr::binary(
            BinOp::Div,
            PrimExpr::load(&exp, i.to_vec()),
            PrimExpr::load(&expsum, drop_ax(i)),
        )
    });
    Ok(Lowered::from_te("softmax", t, 1, ctx.out.clone()))
}

/// `prelu`: `x` where positive, else `x * alpha[channel]`.
fn prelu(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let mut t = Te::new();
    let x = ctx.placeholder(&mut t, 0)?;
    let alpha = ctx.placeholder(&mut t, 1)?;
    let dt = x.dtype();
    let shape = x.shape().to_vec();
    let axis = norm_axis(attr_int(ctx.call, "axis", 1)?, shape.len())?;
    if alpha.shape().len() != 1 {
        return Err(Skip::new("alpha is not 1-d"));
    }
    // a single slope is first broadcast over the channels
    let slope = if alpha.shape()[0].as_int() == Some(1) && shape[axis].as_int() != Some(1) {
        let a = alpha.clone();
        t.compute_named("slope_broadcasted", &[shape[axis].clone()], &["c".to_string()], |_| {
            PrimExpr::load(&a, vec![PrimExpr::int(0)])
        })
    } else {
        alpha
    };
    t.compute("compute", &shape, "i", |i| {
        let v = PrimExpr::load(&x, i.to_vec());
        PrimExpr::select(
            PrimExpr::binary(BinOp::Lt, konst(0.0, dt), v.clone()),
            v.clone(),
            mul(v, PrimExpr::load(&slope, vec![i[axis].clone()])),
        )
    });
    Ok(Lowered::from_te("prelu", t, 1, ctx.out.clone()))
}

/// `cross_entropy_with_logits`: `-sum(x * y)`, divided by the batch size
/// when the inputs have a batch axis.
fn cross_entropy_with_logits(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, ins, dt, shape) = float_inputs(ctx, 2)?;
    let (x, y) = (&ins[0], &ins[1]);
    if y.shape().len() != shape.len() {
        return Err(Skip::new("the predictions and labels differ in rank"));
    }
    let prod = t.compute("T_multiply", &shape, "ax", |i| {
        mul(PrimExpr::load(x, i.to_vec()), PrimExpr::load(y, i.to_vec()))
    });
    let sum = sum_all(&mut t, "T_multiply_red", &prod, dt);
    let neg = t.compute("T_multiply", &[], "ax", |_| {
        mul(PrimExpr::load(&sum, vec![]), konst(-1.0, dt))
    });
    if shape.len() > 1 {
        let batch = match shape[0].as_int() {
            Some(b) => konst(b as f64, dt),
            None => shape[0].clone().cast(dt),
        };
        t.compute("T_divide", &[], "ax", |_| {
            PrimExpr::binary(BinOp::Div, PrimExpr::load(&neg, vec![]), batch)
        });
    }
    Ok(Lowered::from_te("cross_entropy_with_logits", t, 1, ctx.out.clone()))
}

/// `nll_loss`: `-predictions[n, target, ...] * weights[target]` where the
/// target is not `ignore_index`; summed (`sum`), or divided by the sum of the
/// used weights (`mean`), or per element (`none`).
fn nll_loss(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, ins, dt, pshape) = float_inputs(ctx, 2)?;
    let (p, tg) = (ins[0].clone(), ins[1].clone());
    let w = match ctx.args.get(2) {
        Some(si) if si.as_tensor().is_some() => Some(ctx.placeholder(&mut t, 2)?),
        _ => None,
    };
    let reduction = attr(ctx.call, "reduction")
        .and_then(AttrValue::as_str)
        .unwrap_or("mean")
        .to_string();
    let ignore = attr_int(ctx.call, "ignore_index", -100)?;
    let tshape = tg.shape().to_vec();
    // predictions (C,) with a 0-d target, or (N, C, d...) with targets (N, d...)
    if tshape.len() + 1 != pshape.len() {
        return Err(Skip::new("the targets' rank is not one less than the predictions'"));
    }
    let tdt = tg.dtype();
    let target = |i: &[PrimExpr]| PrimExpr::load(&tg, i.to_vec());
    let pred_at = |i: &[PrimExpr], c: PrimExpr| -> PrimExpr {
        let mut idx = i.to_vec();
        idx.insert(if pshape.len() == 1 { 0 } else { 1 }, c);
        PrimExpr::load(&p, idx)
    };
    // without weights TVM weighs every class by a `T_full` of ones
    let fname = if w.is_some() {
        "nll_loss"
    } else {
        "nll_loss_without_weight"
    };
    let classes = pshape[if pshape.len() == 1 { 0 } else { 1 }].clone();
    let w = match w {
        Some(w) => w,
        None => t.compute("T_full", &[classes], "ax", |_| konst(1.0, dt)),
    };
    let weight_at = |c: PrimExpr| PrimExpr::load(&w, vec![c]);
    let used = |i: &[PrimExpr]| PrimExpr::binary(BinOp::Ne, target(i), PrimExpr::int_of(ignore, tdt));
    let loss = t.compute("nll_loss", &tshape, "ax", |i| {
        let c = target(i);
        let v = mul(
            PrimExpr::binary(BinOp::Sub, konst(0.0, dt), pred_at(i, c.clone())),
            weight_at(c),
        );
        PrimExpr::select(used(i), v, konst(0.0, dt))
    });
    if reduction == "none" {
        return Ok(Lowered::from_te(fname, t, 1, ctx.out.clone()));
    }
    // a sum over no axes (0-d targets) is the value itself
    let total = |t: &mut Te, src: &relax_ir::Buffer| -> relax_ir::Buffer {
        if tshape.is_empty() {
            return src.clone();
        }
        sum_all(t, "nll_loss_red", src, dt)
    };
    let lsum = total(&mut t, &loss);
    match reduction.as_str() {
        "sum" => {}
        "mean" => {
            let wsel = t.compute("nll_loss", &tshape, "ax", |i| {
                PrimExpr::select(used(i), weight_at(target(i)), konst(0.0, dt))
            });
            let wsum = total(&mut t, &wsel);
            t.compute("T_divide", &[], "ax", |_| {
                PrimExpr::binary(BinOp::Div, PrimExpr::load(&lsum, vec![]), PrimExpr::load(&wsum, vec![]))
            });
        }
        other => return Err(Skip::new(format!("reduction {other:?} is not supported"))),
    }
    Ok(Lowered::from_te(fname, t, 1, ctx.out.clone()))
}

/// `log_softmax` over `axis`: max, sum of `exp(x - max)`, then
/// `x - max - log(sum)`.
fn log_softmax(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, x, shape, dt) = one_float_input(ctx)?;
    let (axis, red_shape, maxelem) = softmax_maxelem(ctx, &mut t, &x, &shape)?;
    let ax = axis as usize;
    let with_k = |s: &[PrimExpr], k: &PrimExpr| insert_at(s, ax, k);
    let drop_ax = |i: &[PrimExpr]| remove_at(i, ax);
    let expsum = t.reduce(
        Reduce::sum("compute", red_shape, "i", vec![("k".into(), shape[ax].clone())], dt),
        |a, b| PrimExpr::binary(BinOp::Add, a, b),
        |s, r| {
            let d = PrimExpr::binary(
                BinOp::Sub,
                x.at(&with_k(s, &r[0])),
                PrimExpr::load(&maxelem, s.to_vec()),
            );
            PrimExpr::intrinsic_call(Intrinsic::Exp, dt, vec![d])
        },
    );
    let mut ann = Attrs::new();
    ann.set("axis", AttrValue::Int(axis));
    let names: Vec<String> = (0..shape.len()).map(|i| format!("i{i}")).collect();
    t.compute_annotated("compute", &shape, &names, ann, |i| {
        let d = PrimExpr::binary(BinOp::Sub, x.at(i), PrimExpr::load(&maxelem, drop_ax(i)));
        PrimExpr::binary(
            BinOp::Sub,
            d,
            PrimExpr::intrinsic_call(Intrinsic::Log, dt, vec![PrimExpr::load(&expsum, drop_ax(i))]),
        )
    });
    Ok(Lowered::from_te("log_softmax", t, 1, ctx.out.clone()))
}

/// `gelu`: `x * (0.5 + erf(x / sqrt(2)) * 0.5)` in `topi`'s stage order.
fn gelu(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, x, shape, dt) = one_float_input(ctx)?;
    let scaled = t.compute("T_multiply", &shape, "ax", |i| {
        mul(x.at(i), konst(std::f64::consts::FRAC_1_SQRT_2, dt))
    });
    let erf = t.compute("compute", &shape, "i", |i| {
        PrimExpr::intrinsic_call(Intrinsic::Erf, dt, vec![PrimExpr::load(&scaled, i.to_vec())])
    });
    let half = t.compute("T_multiply", &shape, "ax", |i| {
        mul(PrimExpr::load(&erf, i.to_vec()), konst(0.5, dt))
    });
    let sum = t.compute("T_add", &shape, "ax", |i| {
        add(konst(0.5, dt), PrimExpr::load(&half, i.to_vec()))
    });
    t.compute("T_multiply", &shape, "ax", |i| {
        mul(x.at(i), PrimExpr::load(&sum, i.to_vec()))
    });
    Ok(Lowered::from_te("gelu", t, 1, ctx.out.clone()))
}

/// `selu`: `scale * (max(x, 0) + min(0, alpha * (exp(x) - 1)))`, in topi's stages.
fn selu(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, x, shape, dt) = one_float_input(ctx)?;
    let ld = |b: &relax_ir::Buffer, i: &[PrimExpr]| PrimExpr::load(b, i.to_vec());
    let bin = |op, a, b| PrimExpr::binary(op, a, b);
    let pos = t.compute("T_maximum", &shape, "ax", |i| bin(BinOp::Max, x.at(i), konst(0.0, dt)));
    let exp = t.compute("compute", &shape, "i", |i| {
        PrimExpr::intrinsic_call(Intrinsic::Exp, dt, vec![x.at(i)])
    });
    let em1 = t.compute("T_subtract", &shape, "ax", |i| {
        bin(BinOp::Sub, ld(&exp, i), konst(1.0, dt))
    });
    let scaled = t.compute("T_multiply", &shape, "ax", |i| {
        mul(konst(1.673_263_242_354_377_2, dt), ld(&em1, i))
    });
    let neg = t.compute("T_minimum", &shape, "ax", |i| {
        bin(BinOp::Min, konst(0.0, dt), ld(&scaled, i))
    });
    let sum = t.compute("T_add", &shape, "ax", |i| add(ld(&pos, i), ld(&neg, i)));
    t.compute("T_multiply", &shape, "ax", |i| {
        mul(konst(1.050_700_987_355_480_5, dt), ld(&sum, i))
    });
    Ok(Lowered::from_te("selu", t, 1, ctx.out.clone()))
}

/// `gelu_tanh`: `0.5 * x * (1 + tanh(sqrt(2 / pi) * x * (1 + 0.044715 * x * x)))`.
fn gelu_tanh(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, x, shape, dt) = one_float_input(ctx)?;
    let ld = |b: &relax_ir::Buffer, i: &[PrimExpr]| PrimExpr::load(b, i.to_vec());
    let half_x = t.compute("T_multiply", &shape, "ax", |i| mul(konst(0.5, dt), x.at(i)));
    let sqrt_2_pi = (2.0 / std::f64::consts::PI).sqrt();
    let a = t.compute("T_multiply", &shape, "ax", |i| mul(konst(sqrt_2_pi, dt), x.at(i)));
    let b = t.compute("T_multiply", &shape, "ax", |i| mul(konst(0.044715, dt), x.at(i)));
    let bx = t.compute("T_multiply", &shape, "ax", |i| mul(ld(&b, i), x.at(i)));
    let one_p = t.compute("T_add", &shape, "ax", |i| add(konst(1.0, dt), ld(&bx, i)));
    let inner = t.compute("T_multiply", &shape, "ax", |i| mul(ld(&a, i), ld(&one_p, i)));
    let th = t.compute("compute", &shape, "i", |i| {
        PrimExpr::intrinsic_call(Intrinsic::Tanh, dt, vec![ld(&inner, i)])
    });
    let one_t = t.compute("T_add", &shape, "ax", |i| add(konst(1.0, dt), ld(&th, i)));
    t.compute("T_multiply", &shape, "ax", |i| mul(ld(&half_x, i), ld(&one_t, i)));
    Ok(Lowered::from_te("gelu_tanh", t, 1, ctx.out.clone()))
}

/// `softplus`: `x` above the threshold, else `log(1 + exp(beta * x)) / beta`
/// (`1 / beta` folded in the element type, as TVM does).
fn softplus(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let beta = attr(ctx.call, "beta").and_then(AttrValue::as_float).unwrap_or(1.0);
    let threshold = attr(ctx.call, "threshold")
        .and_then(AttrValue::as_float)
        .unwrap_or(20.0);
    let (mut t, x, shape, dt) = one_float_input(ctx)?;
    let inv = if dt.bits == 32 {
        (1.0f32 / beta as f32) as f64
    } else {
        1.0 / beta
    };
    t.compute("compute", &shape, "i", |i| {
        let bx = mul(konst(beta, dt), x.at(i));
        let soft = mul(
            konst(inv, dt),
            PrimExpr::intrinsic_call(
                Intrinsic::Log,
                dt,
                vec![add(
                    konst(1.0, dt),
                    PrimExpr::intrinsic_call(Intrinsic::Exp, dt, vec![bx.clone()]),
                )],
            ),
        );
        PrimExpr::select(PrimExpr::binary(BinOp::Lt, konst(threshold, dt), bx), x.at(i), soft)
    });
    Ok(Lowered::from_te("softplus", t, 1, ctx.out.clone()))
}

/// `dropout` at inference: the input unchanged and a mask of ones.
fn dropout(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, x, shape) = one_input(ctx)?;
    let dt = x.dtype();
    t.compute("compute", &shape, "i", |i| x.at(i));
    t.compute("T_full_like", &shape, "ax", |_| konst(1.0, dt));
    Ok(Lowered::from_te("dropout", t, 2, ctx.out.clone()))
}

/// A product of extents as a float of type `dt`: folded when static, else
/// the product of the cast extents.
fn float_count(dims: &[PrimExpr], dt: DataType) -> PrimExpr {
    let statics: Option<Vec<i64>> = dims.iter().map(|d| d.as_int()).collect();
    if let Some(v) = statics {
        return konst(v.iter().product::<i64>() as f64, dt);
    }
    let mut acc: Option<PrimExpr> = None;
    for d in dims {
        let f = match d.as_int() {
            Some(c) => konst(c as f64, dt),
            None => d.clone().cast(dt),
        };
        acc = Some(match acc {
            None => f,
            Some(a) => mul(a, f),
        });
    }
    acc.unwrap_or_else(|| konst(1.0, dt))
}

/// `layer_norm` as `topi`: sum, mean, sum of squared deviations, then
/// `(x - mean) * rsqrt(var + eps) * gamma + beta` (float16 computes in float32).
fn layer_norm(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, ins, dt, shape) = float_inputs(ctx, 3)?;
    let (x, gamma, beta) = (&ins[0], &ins[1], &ins[2]);
    let nd = shape.len();
    let axes = norm_axes(&attr_ints(ctx.call, "axes", &[-1])?, nd)?;
    let eps = attr(ctx.call, "epsilon").and_then(AttrValue::as_float).unwrap_or(1e-5);
    let acc = if dt.bits < 32 { DataType::FLOAT32 } else { dt };
    let up = |v: PrimExpr| if acc == dt { v } else { v.cast(acc) };
    let (red_shape, red_axes) = reduced(&shape, &axes);
    let full = |s: &[PrimExpr], r: &[PrimExpr]| reduce_index(nd, &axes, false, s, r);
    let outer =
        |i: &[PrimExpr]| -> Vec<PrimExpr> { (0..nd).filter(|d| !axes.contains(d)).map(|d| i[d].clone()).collect() };
    let inner = |i: &[PrimExpr]| -> Vec<PrimExpr> { axes.iter().map(|&d| i[d].clone()).collect() };
    let xname = x.name().to_string();
    let sum = t.reduce(
        Reduce::sum(&format!("{xname}_sum"), red_shape.clone(), "ax", red_axes.clone(), acc),
        add,
        |s, r| up(PrimExpr::load(x, full(s, r))),
    );
    let count = float_count(&axes.iter().map(|&d| shape[d].clone()).collect::<Vec<_>>(), acc);
    let mean = t.compute(&format!("{xname}_mean"), &red_shape, "ax", |i| {
        PrimExpr::binary(BinOp::Div, PrimExpr::load(&sum, i.to_vec()), count.clone())
    });
    let var_sum = t.reduce(
        Reduce::sum(&format!("{xname}_var_sum"), red_shape, "ax", red_axes, acc),
        add,
        |s, r| {
            let d = PrimExpr::binary(
                BinOp::Sub,
                up(PrimExpr::load(x, full(s, r))),
                PrimExpr::load(&mean, s.to_vec()),
            );
            mul(d.clone(), d)
        },
    );
    t.compute("T_layer_norm", &shape, "ax", |i| {
        let d = PrimExpr::binary(
            BinOp::Sub,
            up(PrimExpr::load(x, i.to_vec())),
            PrimExpr::load(&mean, outer(i)),
        );
        let var = PrimExpr::binary(BinOp::Div, PrimExpr::load(&var_sum, outer(i)), count.clone());
        let r = PrimExpr::intrinsic_call(Intrinsic::Rsqrt, acc, vec![add(var, konst(eps, acc))]);
        let normed = mul(d, r);
        let normed = if acc == dt { normed } else { normed.cast(dt) };
        add(
            mul(normed, PrimExpr::load(gamma, inner(i))),
            PrimExpr::load(beta, inner(i)),
        )
    });
    Ok(Lowered::from_te("layer_norm", t, 1, ctx.out.clone()))
}

/// `rms_norm` as `topi`: cast to float32 (a copy for float32), squares, their
/// sum, `rsqrt(mean + eps)`, times the weight, cast back.
fn rms_norm(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, ins, dt, shape) = float_inputs(ctx, 2)?;
    let (x, weight) = (&ins[0], &ins[1]);
    let nd = shape.len();
    let axes = norm_axes(&attr_ints(ctx.call, "axes", &[-1])?, nd)?;
    let eps = attr(ctx.call, "epsilon").and_then(AttrValue::as_float).unwrap_or(1e-5);
    let acc = DataType::FLOAT32;
    let to = |v: PrimExpr, d: DataType| if v.dtype() == d { v } else { v.cast(d) };
    let ld = |b: &relax_ir::Buffer, i: &[PrimExpr]| PrimExpr::load(b, i.to_vec());
    let xc = t.compute("T_cast", &shape, "ax", |i| to(ld(x, i), acc));
    let sq = t.compute("T_multiply", &shape, "ax", |i| mul(ld(&xc, i), ld(&xc, i)));
    let (red_shape, red_axes) = reduced(&shape, &axes);
    let sqb = sq.clone();
    let sum = t.reduce(
        Reduce::sum("T_multiply_red", red_shape.clone(), "ax", red_axes, acc),
        add,
        |s, r| PrimExpr::load(&sqb, reduce_index(nd, &axes, false, s, r)),
    );
    let count = float_count(&axes.iter().map(|&d| shape[d].clone()).collect::<Vec<_>>(), acc);
    let rs = t.compute("rsqrt", &red_shape, "ax", |i| {
        let mean = PrimExpr::binary(BinOp::Div, ld(&sum, i), count.clone());
        PrimExpr::intrinsic_call(Intrinsic::Rsqrt, acc, vec![add(mean, konst(eps, acc))])
    });
    let wshape = weight.shape().to_vec();
    let wc = t.compute("T_cast", &wshape, "ax", |i| to(ld(weight, i), acc));
    let normed = t.compute("T_rms_norm", &shape, "ax", |i| {
        let outer: Vec<PrimExpr> = (0..nd).filter(|d| !axes.contains(d)).map(|d| i[d].clone()).collect();
        let inner: Vec<PrimExpr> = axes.iter().map(|&d| i[d].clone()).collect();
        mul(mul(ld(&rs, &outer), ld(&xc, i)), ld(&wc, &inner))
    });
    t.compute("T_cast", &shape, "ax", |i| to(ld(&normed, i), dt));
    Ok(Lowered::from_te("rms_norm", t, 1, ctx.out.clone()))
}

/// `group_norm`: the channels split into `num_groups` groups; each group's
/// sum and sum of squares over its channels and `axes`, then
/// `(x - mean) * rsqrt(E[x^2] - mean^2 + eps) * gamma + beta` (TVM's
/// one-pass formula; float16 accumulates in float32).
fn group_norm(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let groups = attr_int(ctx.call, "num_groups", 1)?;
    grouped_norm(ctx, Some(groups), "group_norm")
}

/// `instance_norm`: `group_norm` with one group per channel.
fn instance_norm(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    grouped_norm(ctx, None, "instance_norm")
}

/// The shared body of `group_norm` (`groups` given) and `instance_norm`
/// (one group per channel).
fn grouped_norm(ctx: &LegalizeCtx, groups: Option<i64>, name: &str) -> Result<Lowered, Skip> {
    let (mut t, ins, dt, shape) = float_inputs(ctx, 3)?;
    let (x, gamma, beta) = (&ins[0], &ins[1], &ins[2]);
    if gamma.shape().len() != 1 || beta.shape().len() != 1 {
        return Err(Skip::new("gamma or beta is not 1-d"));
    }
    let nd = shape.len();
    let ch = norm_axis(attr_int(ctx.call, "channel_axis", 1)?, nd)?;
    let groups = match groups {
        Some(g) => g,
        None => shape[ch].as_int().or_skip("the channel count is symbolic")?,
    };
    let axes = norm_axes(&attr_ints(ctx.call, "axes", &[])?, nd)?;
    if groups < 1 {
        return Err(Skip::new("num_groups is below 1"));
    }
    if axes.contains(&ch) {
        return Err(Skip::new("the channel axis is among the reduced axes"));
    }
    let eps = attr(ctx.call, "epsilon").and_then(AttrValue::as_float).unwrap_or(1e-5);
    let acc = if dt.bits < 32 { DataType::FLOAT32 } else { dt };
    let up = |v: PrimExpr| if v.dtype() == acc { v } else { v.cast(acc) };
    let c = shape[ch].clone();
    let cpg = match c.as_int() {
        Some(v) if v % groups == 0 => PrimExpr::int(v / groups),
        Some(_) => return Err(Skip::new("the channel count is not a multiple of num_groups")),
        None => PrimExpr::binary(BinOp::FloorDiv, c.clone(), PrimExpr::int(groups)),
    };
    // reduced shape: the channel axis becomes the group axis, `axes` go away
    let red_shape: Vec<PrimExpr> = (0..nd)
        .filter(|d| !axes.contains(d))
        .map(|d| {
            if d == ch {
                PrimExpr::int(groups)
            } else {
                shape[d].clone()
            }
        })
        .collect();
    let mut red_axes: Vec<(String, PrimExpr)> = Vec::new();
    for (d, e) in shape.iter().enumerate() {
        if d == ch {
            red_axes.push(("kc".into(), cpg.clone()));
        } else if axes.contains(&d) {
            red_axes.push((format!("k{d}"), e.clone()));
        }
    }
    let xidx = |s: &[PrimExpr], r: &[PrimExpr]| -> Vec<PrimExpr> {
        let (mut si, mut ri) = (0, 0);
        let mut out = Vec::new();
        for d in 0..nd {
            if d == ch {
                out.push(add(mul(s[si].clone(), cpg.clone()), r[ri].clone()));
                si += 1;
                ri += 1;
            } else if axes.contains(&d) {
                out.push(r[ri].clone());
                ri += 1;
            } else {
                out.push(s[si].clone());
                si += 1;
            }
        }
        out
    };
    let mut sums = Vec::new();
    for (name, square) in [("x_red_temp_v0", false), ("x_red_temp_v1", true)] {
        sums.push(t.reduce(
            Reduce {
                name,
                shape: red_shape.clone(),
                spatial_prefix: "ax",
                red_axes: red_axes.clone(),
                init: konst(0.0, acc),
            },
            add,
            |s, r| {
                let v = up(PrimExpr::load(x, xidx(s, r)));
                if square {
                    mul(v.clone(), v)
                } else {
                    v
                }
            },
        ));
    }
    let mut count_dims = vec![cpg.clone()];
    count_dims.extend(axes.iter().map(|&d| shape[d].clone()));
    let count = float_count(&count_dims, acc);
    t.compute(&format!("T_{name}"), &shape, "ax", |i| {
        let ridx: Vec<PrimExpr> = (0..nd)
            .filter(|d| !axes.contains(d))
            .map(|d| {
                if d == ch {
                    PrimExpr::binary(BinOp::FloorDiv, i[d].clone(), cpg.clone())
                } else {
                    i[d].clone()
                }
            })
            .collect();
        let mean = || PrimExpr::binary(BinOp::Div, PrimExpr::load(&sums[0], ridx.clone()), count.clone());
        let sq = PrimExpr::binary(BinOp::Div, PrimExpr::load(&sums[1], ridx.clone()), count.clone());
        let var = PrimExpr::binary(BinOp::Sub, sq, mul(mean(), mean()));
        let r = PrimExpr::intrinsic_call(Intrinsic::Rsqrt, acc, vec![add(var, konst(eps, acc))]);
        let d = PrimExpr::binary(BinOp::Sub, up(PrimExpr::load(x, i.to_vec())), mean());
        let mut v = mul(d, r);
        if v.dtype() != dt {
            v = v.cast(dt);
        }
        // TVM applies gamma and beta whatever `center` and `scale` say
        add(
            mul(v, PrimExpr::load(gamma, vec![i[ch].clone()])),
            PrimExpr::load(beta, vec![i[ch].clone()]),
        )
    });
    Ok(Lowered::from_te(name, t, 1, ctx.out.clone()))
}

/// `topi.reshape` of a 1-d buffer `src` of length `len` into `shape`: the
/// row-major offset of the output position modulo `len` (terms whose stride
/// is a known multiple of `len` dropped, as TVM's simplifier does).
fn reshape_1d(t: &mut Te, src: &relax_ir::Buffer, shape: &[PrimExpr]) -> relax_ir::Buffer {
    let len = src.shape().first().cloned().unwrap_or_else(|| PrimExpr::int(1));
    let src = src.clone();
    t.compute("T_reshape", shape, "ax", |i| {
        let mut acc: Option<PrimExpr> = None;
        for (d, v) in i.iter().enumerate() {
            let mut stride: Option<PrimExpr> = None;
            let mut static_stride = Some(1i64);
            for e in &shape[d + 1..] {
                match e.as_int() {
                    Some(1) => {}
                    _ => {
                        static_stride = static_stride.and_then(|s| e.as_int().map(|c| s * c));
                        stride = Some(match stride {
                            None => e.clone(),
                            Some(s) => mul(s, e.clone()),
                        });
                    }
                }
            }
            if let (Some(s), Some(l)) = (static_stride, len.as_int()) {
                if s % l == 0 && stride.is_some() {
                    continue;
                }
            }
            let term = match stride {
                None => v.clone(),
                Some(s) => mul(v.clone(), s),
            };
            acc = Some(match acc {
                None => term,
                Some(a) => add(a, term),
            });
        }
        let flat = acc.unwrap_or_else(|| PrimExpr::int(0));
        PrimExpr::load(&src, vec![PrimExpr::binary(BinOp::FloorMod, flat, len.clone())])
    })
}

/// `batch_norm` as `topi`: training mode normalizes with the batch statistics
/// and returns the updated moving mean/variance; inference normalizes with the
/// moving statistics and returns them unchanged.
fn batch_norm(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, ins, dt, shape) = float_inputs(ctx, 5)?;
    let (x, gamma, beta, mmean, mvar) = (&ins[0], &ins[1], &ins[2], &ins[3], &ins[4]);
    if [gamma, beta, mmean, mvar].iter().any(|b| b.shape().len() != 1) {
        return Err(Skip::new("gamma, beta or a moving statistic is not 1-d"));
    }
    let nd = shape.len();
    let axis = norm_axis(attr_int(ctx.call, "axis", 1)?, nd)?;
    let eps = attr(ctx.call, "epsilon").and_then(AttrValue::as_float).unwrap_or(1e-5);
    let center = attr(ctx.call, "center").and_then(AttrValue::as_bool).unwrap_or(true);
    let scale = attr(ctx.call, "scale").and_then(AttrValue::as_bool).unwrap_or(true);
    let training = attr(ctx.call, "training").and_then(AttrValue::as_bool).unwrap_or(true);
    let momentum = attr(ctx.call, "momentum").and_then(AttrValue::as_float).unwrap_or(0.1);
    let mut rs_shape = vec![PrimExpr::int(1); nd];
    rs_shape[axis] = shape[axis].clone();
    let ld = |b: &relax_ir::Buffer, i: &[PrimExpr]| PrimExpr::load(b, i.to_vec());
    let bc = |b: &relax_ir::Buffer, i: &[PrimExpr]| Operand::Tensor(b.clone()).bcast(i, &shape);
    let sub = |a, b| PrimExpr::binary(BinOp::Sub, a, b);
    let div = |a, b| PrimExpr::binary(BinOp::Div, a, b);
    let red_axes: Vec<usize> = (0..nd).filter(|&d| d != axis).collect();
    let count = {
        let dims: Vec<PrimExpr> = red_axes.iter().map(|&d| shape[d].clone()).collect();
        let statics: Option<Vec<i64>> = dims.iter().map(|d| d.as_int()).collect();
        match statics {
            Some(v) => konst(v.iter().product::<i64>() as f64, dt),
            None => {
                let mut p = dims[0].clone();
                for d in &dims[1..] {
                    p = mul(p, d.clone());
                }
                p.cast(dt)
            }
        }
    };
    let red_shape = vec![shape[axis].clone()];
    let reduce_sum = |t: &mut Te, src: &relax_ir::Buffer| -> relax_ir::Buffer {
        let srcb = src.clone();
        let red: Vec<(String, PrimExpr)> = red_axes.iter().map(|&d| (format!("k{d}"), shape[d].clone())).collect();
        t.reduce(
            Reduce::sum(&format!("{}_red", src.name()), red_shape.clone(), "ax", red, dt),
            add,
            |s, r| {
                let mut idx = r.to_vec();
                idx.insert(axis, s[0].clone());
                PrimExpr::load(&srcb, idx)
            },
        )
    };
    let (centered, var_rs, stats) = if training {
        let xsum = reduce_sum(&mut t, x);
        let mean = t.compute("T_divide", &red_shape, "ax", |i| div(ld(&xsum, i), count.clone()));
        let mean_rs = reshape_1d(&mut t, &mean, &rs_shape);
        let centered = t.compute("T_subtract", &shape, "ax", |i| sub(ld(x, i), bc(&mean_rs, i)));
        let d1 = t.compute("T_subtract", &shape, "ax", |i| sub(ld(x, i), bc(&mean_rs, i)));
        let d2 = t.compute("T_subtract", &shape, "ax", |i| sub(ld(x, i), bc(&mean_rs, i)));
        let sq = t.compute("T_multiply", &shape, "ax", |i| mul(ld(&d1, i), ld(&d2, i)));
        let sqsum = reduce_sum(&mut t, &sq);
        let var = t.compute("T_divide", &red_shape, "ax", |i| div(ld(&sqsum, i), count.clone()));
        let var_rs = reshape_1d(&mut t, &var, &rs_shape);
        (centered, var_rs, Some((mean, var)))
    } else {
        let mean_rs = reshape_1d(&mut t, mmean, &rs_shape);
        let centered = t.compute("T_subtract", &shape, "ax", |i| sub(ld(x, i), bc(&mean_rs, i)));
        let var_rs = reshape_1d(&mut t, mvar, &rs_shape);
        (centered, var_rs, None)
    };
    let veps = t.compute("T_add", &rs_shape, "ax", |i| add(ld(&var_rs, i), konst(eps, dt)));
    let sd = t.compute("compute", &rs_shape, "i", |i| {
        PrimExpr::intrinsic_call(Intrinsic::Sqrt, dt, vec![ld(&veps, i)])
    });
    let mut out = t.compute("T_divide", &shape, "ax", |i| div(ld(&centered, i), bc(&sd, i)));
    if scale {
        let g = reshape_1d(&mut t, gamma, &rs_shape);
        let prev = out.clone();
        out = t.compute("T_multiply", &shape, "ax", |i| mul(ld(&prev, i), bc(&g, i)));
    }
    if center {
        let b = reshape_1d(&mut t, beta, &rs_shape);
        let prev = out.clone();
        out = t.compute("T_add", &shape, "ax", |i| add(ld(&prev, i), bc(&b, i)));
    }
    let (o_mean, o_var) = match stats {
        Some((mean, var)) => {
            let keep = konst(1.0 - momentum, dt);
            let m = konst(momentum, dt);
            let mut update = |moving: &relax_ir::Buffer, batch: &relax_ir::Buffer| {
                let s = moving.shape().to_vec();
                let a = t.compute("T_multiply", &s, "ax", |i| mul(keep.clone(), ld(moving, i)));
                let bs = batch.shape().to_vec();
                let b = t.compute("T_multiply", &bs, "ax", |i| mul(m.clone(), ld(batch, i)));
                t.compute("T_add", &s, "ax", |i| add(ld(&a, i), ld(&b, i)))
            };
            let om = update(mmean, &mean);
            let ov = update(mvar, &var);
            (om, ov)
        }
        None => {
            // `moving * 1`, which TVM's simplifier reduces to a copy
            let s = mmean.shape().to_vec();
            let om = t.compute("T_multiply", &s, "ax", |i| ld(mmean, i));
            let s = mvar.shape().to_vec();
            let ov = t.compute("T_multiply", &s, "ax", |i| ld(mvar, i));
            (om, ov)
        }
    };
    t.mark_outputs(&[out, o_mean, o_var]);
    Ok(Lowered::from_te("batch_norm", t, 3, ctx.out.clone()))
}

/// The legalizations of this family's other operators (PrimFunc builders; see
/// [`super::lower_or_skip`]).
pub mod lowered {
    super::super::lowered_legalizations!(
        relu,
        leakyrelu,
        silu,
        softmax_impl,
        log_softmax,
        gelu,
        gelu_tanh,
        selu,
        softplus,
        dropout,
        layer_norm,
        batch_norm,
        rms_norm,
        group_norm,
        instance_norm,
        prelu,
        cross_entropy_with_logits,
        nll_loss,
    );
}
