//! Reductions along axes: sums, extrema, arg extrema, cumulative sums, TopK.

use super::*;

pub(crate) fn cumsum(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let axis = norm_axis(*const_ints(ctx, n, 1)?.first().ok_or("axis must hold one value")?, rank)?;
    let mut a = x(ctx, n, 0)?;
    let reverse = n.int("reverse", 0) != 0;
    if reverse {
        let f = ctx.op("flip", vec![a], &[("axis", AttrValue::Int(axis as i64))])?;
        a = leaf(ctx, &f)?;
    }
    let op = if n.op_type == "CumProd" { "cumprod" } else { "cumsum" };
    let mut y = ctx.op(
        op,
        vec![a],
        &[
            ("axis", AttrValue::Int(axis as i64)),
            ("exclusive", AttrValue::Bool(n.int("exclusive", 0) != 0)),
        ],
    )?;
    if reverse {
        let l = leaf(ctx, &y)?;
        y = ctx.op("flip", vec![l], &[("axis", AttrValue::Int(axis as i64))])?;
    }
    out1(y)
}

pub(crate) fn reduce(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    // axes became an input in opset 13 for ReduceSum and in opset 18 for the others
    let since = if n.op_type == "ReduceSum" { 13 } else { 18 };
    let axes = axes_input_or_attr(ctx, n, since, 1)?;
    let keepdims = n.int("keepdims", 1) != 0;
    let axes: Option<Vec<i64>> = match axes {
        Some(a) if !a.is_empty() => Some(
            a.iter()
                .map(|&x| norm_axis(x, rank).map(|v| v as i64))
                .collect::<Result<_, _>>()?,
        ),
        _ if n.int("noop_with_empty_axes", 0) != 0 => return out1(val(ctx, n, 0)?),
        _ => None,
    };
    let ax = axes.map(|a| ints_attr(&a)).unwrap_or(AttrValue::None);
    let attrs = [("axis", ax), ("keepdims", AttrValue::Bool(keepdims))];
    let mut a = x(ctx, n, 0)?;
    let simple = match n.op_type.as_str() {
        "ReduceMean" => Some("mean"),
        "ReduceSum" => Some("sum"),
        "ReduceMax" => Some("max"),
        "ReduceMin" => Some("min"),
        "ReduceProd" => Some("prod"),
        _ => None,
    };
    if let Some(op) = simple {
        let y = ctx.op(op, vec![a], &attrs)?;
        let dt = y.dtype;
        return match (op, float_reduction_identity(dt)) {
            ("max" | "min", Some(big)) => {
                // Relax's max (min) starts from the lowest (highest) finite value, as
                // TVM's; ONNX's is -inf (+inf): a slice of -inf (+inf) only, or an
                // empty one, gives that finite value, which becomes the infinity.
                let (edge, inf) = if op == "max" {
                    (-big, f64::NEG_INFINITY)
                } else {
                    (big, f64::INFINITY)
                };
                let y = leaf(ctx, &y)?;
                let at_edge = emit(ctx, "equal", vec![y.clone(), scalar(dt, edge)], &[])?;
                out1(ctx.op("where", vec![at_edge, scalar(dt, inf), y], &[])?)
            }
            _ => out1(y),
        };
    }
    match n.op_type.as_str() {
        "ReduceL1" => {
            let t = ctx.op("abs", vec![a], &[])?;
            a = leaf(ctx, &t)?;
            out1(ctx.op("sum", vec![a], &attrs)?)
        }
        "ReduceLogSum" => {
            let s = ctx.op("sum", vec![a], &attrs)?;
            let l = leaf(ctx, &s)?;
            out1(ctx.op("log", vec![l], &[])?)
        }
        "ReduceL2" | "ReduceSumSquare" => {
            let t = emit2(ctx, "multiply", a.clone(), a)?;
            let l = leaf(ctx, &t)?;
            let s = ctx.op("sum", vec![l], &attrs)?;
            if n.op_type == "ReduceL2" {
                let l = leaf(ctx, &s)?;
                out1(ctx.op("sqrt", vec![l], &[])?)
            } else {
                out1(s)
            }
        }
        "ReduceLogSumExp" => {
            // log(sum(exp(x - max))) + max
            let m = ctx.op(
                "max",
                vec![a.clone()],
                &[attrs[0].clone(), ("keepdims", AttrValue::Bool(true))],
            )?;
            let ml = leaf(ctx, &m)?;
            let d = emit2(ctx, "subtract", a, ml.clone())?;
            let dl = leaf(ctx, &d)?;
            let e = ctx.op("exp", vec![dl], &[])?;
            let el = leaf(ctx, &e)?;
            let s = ctx.op("sum", vec![el], &attrs)?;
            let sl = leaf(ctx, &s)?;
            let lg = ctx.op("log", vec![sl], &[])?;
            let lgl = leaf(ctx, &lg)?;
            let mk = if keepdims {
                ml
            } else {
                let sq = ctx.op("squeeze", vec![ml], &[("axis", attrs[0].1.clone())])?;
                leaf(ctx, &sq)?
            };
            out1(emit2(ctx, "add", lgl, mk)?)
        }
        o => Err(convert_err!(Internal;"internal: {o} is not a reduction")),
    }
}

pub(crate) fn arg_reduce(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let shape = shape_of(ctx, n, 0)?;
    let axis = norm_axis(n.int("axis", 0), shape.len())?;
    let mut a = x(ctx, n, 0)?;
    let last = n.int("select_last_index", 0) != 0;
    if last {
        // the last extreme is the first one of the flipped axis: index = dim - 1 - i
        let f = ctx.op("flip", vec![a], &[("axis", AttrValue::Int(axis as i64))])?;
        a = leaf(ctx, &f)?;
    }
    let op = if n.op_type == "ArgMax" { "argmax" } else { "argmin" };
    let r = ctx.op(
        op,
        vec![a],
        &[
            ("axis", AttrValue::Int(axis as i64)),
            ("keepdims", AttrValue::Bool(n.int("keepdims", 1) != 0)),
        ],
    )?;
    if !last {
        return out1(r);
    }
    let dim = shape[axis]
        .as_int()
        .ok_or("select_last_index needs a static axis length")?;
    let l = leaf(ctx, &r)?;
    let d = emit2(ctx, "subtract", scalar(r.dtype, (dim - 1) as f64), l)?;
    out1(d)
}

/// `TopK` without a sort: each element's rank along the axis is the number of
/// elements before it in the order (greater, or equal at a smaller index, for the
/// largest), and the k first ranks are picked out by comparison.
pub(crate) fn topk(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let shape = xv.const_shape().ok_or("TopK needs a static shape")?;
    let r = shape.len();
    let axis = norm_axis(n.int("axis", -1), r)?;
    let k = if n.opset >= 10 {
        known_scalar(ctx, n, 1)?
    } else {
        n.int("k", 1)
    };
    let len = shape[axis];
    if k < 0 || k > len {
        return Err(convert_err!("k = {k} is out of range for an axis of {len}"));
    }
    if len > 4096 || shape.iter().product::<i64>() * len > 1 << 26 {
        return Err("TopK axis too long for the comparison form".into());
    }
    let largest = n.int("largest", 1) != 0;
    let mut a = x(ctx, n, 0)?;
    let mut perm: Vec<i64> = (0..r as i64).collect();
    perm.swap(axis, r - 1);
    if axis != r - 1 {
        a = emit(ctx, "permute_dims", vec![a], &[("axes", ints_attr(&perm))])?;
    }
    let xi = emit(ctx, "expand_dims", vec![a.clone()], &[("axis", ints_attr(&[r as i64]))])?;
    let xj = emit(ctx, "expand_dims", vec![a], &[("axis", ints_attr(&[r as i64 - 1]))])?;
    // before[i, j]: element j comes before element i
    let better = emit(
        ctx,
        if largest { "greater" } else { "less" },
        vec![xj.clone(), xi.clone()],
        &[],
    )?;
    let same = emit(ctx, "equal", vec![xj, xi.clone()], &[])?;
    let lower = crate::convert::constant(
        DataType::BOOL,
        vec![len, len],
        (0..len * len).map(|q| vec![((q % len) < (q / len)) as u8]),
    );
    let tie = emit(ctx, "logical_and", vec![same, lower], &[])?;
    let before = emit(ctx, "logical_or", vec![better, tie], &[])?;
    let before = astype(ctx, before, DataType::BOOL, DataType::INT64)?;
    let rank = emit(
        ctx,
        "sum",
        vec![before],
        &[("axis", ints_attr(&[r as i64])), ("keepdims", AttrValue::Bool(true))],
    )?;
    let slots = crate::convert::constant(DataType::INT64, vec![k], (0..k).map(|v| v.to_le_bytes().to_vec()));
    let pick = emit(ctx, "equal", vec![rank, slots], &[])?; // (..., len, k)
    let dt = xv.dtype;
    let vals = emit(ctx, "where", vec![pick.clone(), xi, scalar(dt, 0.0)], &[])?;
    let mut vals = emit(
        ctx,
        "sum",
        vec![vals],
        &[
            ("axis", ints_attr(&[r as i64 - 1])),
            ("keepdims", AttrValue::Bool(false)),
        ],
    )?;
    let pos = crate::convert::constant(
        DataType::INT64,
        vec![len, 1],
        (0..len).map(|v| v.to_le_bytes().to_vec()),
    );
    let ids = emit(ctx, "where", vec![pick, pos, scalar(DataType::INT64, 0.0)], &[])?;
    let mut ids = emit(
        ctx,
        "sum",
        vec![ids],
        &[
            ("axis", ints_attr(&[r as i64 - 1])),
            ("keepdims", AttrValue::Bool(false)),
        ],
    )?;
    if axis != r - 1 {
        vals = emit(ctx, "permute_dims", vec![vals], &[("axes", ints_attr(&perm))])?;
        ids = emit(ctx, "permute_dims", vec![ids], &[("axes", ints_attr(&perm))])?;
    }
    Ok(vec![tval_leaf(ctx, vals)?, tval_leaf(ctx, ids)?])
}

/// The largest finite value a Relax `max`/`min` reduction of `dt` starts from (the
/// legalization's `min_value`/`max_value`), for the float types it applies to.
fn float_reduction_identity(dt: DataType) -> Option<f64> {
    match (dt.code, dt.bits) {
        // bfloat16's starts from -inf (+inf) already, as TVM's
        (relax_ir::TypeCode::Float, 16) => Some(65504.0),
        (relax_ir::TypeCode::Float, 32) => Some(f32::MAX as f64),
        (relax_ir::TypeCode::Float, 64) => Some(f64::MAX),
        _ => None,
    }
}
