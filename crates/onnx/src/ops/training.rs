//! Losses and the training domain's optimizers.

use super::*;

pub(crate) fn nll_loss(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    if n.attr("ignore_index").is_some() {
        // TVM's kernel reads the ignored target's class before selecting 0
        let dt = val(ctx, n, 0)?.dtype;
        let l = x(ctx, n, 0)?;
        return out1(nll(ctx, n, l, dt)?);
    }
    let reduction = n.string("reduction").unwrap_or_else(|| "mean".into());
    if !matches!(reduction.as_str(), "mean" | "sum" | "none") {
        return Err(convert_err!(Unsupported;"reduction `{reduction}` is not supported"));
    }
    let mut args = vec![x(ctx, n, 0)?, x(ctx, n, 1)?];
    if n.has(2) {
        args.push(x(ctx, n, 2)?);
    }
    out1(ctx.op(
        "nn.nll_loss",
        args,
        &[
            ("reduction", AttrValue::Str(reduction)),
            ("ignore_index", AttrValue::Int(n.int("ignore_index", -100))),
        ],
    )?)
}

/// `SoftmaxCrossEntropyLoss`: the negative log-likelihood loss of
/// `log_softmax(scores, axis=1)`; the second output is the log-probabilities.
pub(crate) fn softmax_cross_entropy(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let s = x(ctx, n, 0)?;
    let lp = ctx.op("nn.log_softmax", vec![s], &[("axis", AttrValue::Int(1))])?;
    let l = ctx.leaf(&lp)?;
    let loss = nll(ctx, n, l, lp.dtype)?;
    Ok(vec![loss, lp])
}

/// The negative log-likelihood loss of log-probabilities `logp` (N, C, d...) with the
/// node's targets (input 1), optional weights (input 2), `reduction` and
/// `ignore_index`: targets equal to `ignore_index` are read as class 0 and weigh 0, so
/// that no element outside the classes is read.
pub(crate) fn nll(ctx: &mut Ctx, n: &Node, logp: Expr, dt: DataType) -> Result<TVal, ConvertError> {
    let reduction = n.string("reduction").unwrap_or_else(|| "mean".into());
    if !matches!(reduction.as_str(), "mean" | "sum" | "none") {
        return Err(convert_err!(Unsupported;"reduction `{reduction}` is not supported"));
    }
    let tv = val(ctx, n, 1)?;
    let t = x(ctx, n, 1)?;
    let t = astype(ctx, t, tv.dtype, DataType::INT64)?;
    let ignored = match n.attr_i("ignore_index") {
        Some(ii) => Some(emit(
            ctx,
            "equal",
            vec![t.clone(), scalar(DataType::INT64, ii as f64)],
            &[],
        )?),
        None => None,
    };
    let safe = match &ignored {
        Some(c) => emit(ctx, "where", vec![c.clone(), scalar(DataType::INT64, 0.0), t], &[])?,
        None => t,
    };
    let idx = emit(ctx, "expand_dims", vec![safe.clone()], &[("axis", ints_attr(&[1]))])?;
    let picked = emit(ctx, "gather_elements", vec![logp, idx], &[("axis", AttrValue::Int(1))])?;
    let picked = emit(ctx, "squeeze", vec![picked], &[("axis", ints_attr(&[1]))])?;
    let mut w = if n.has(2) {
        let wt = x(ctx, n, 2)?;
        Some(emit(
            ctx,
            "take",
            vec![wt, safe.clone()],
            &[("axis", AttrValue::Int(0))],
        )?)
    } else {
        None
    };
    if let Some(c) = &ignored {
        let base = match w {
            Some(w) => w,
            None => emit(ctx, "ones_like", vec![picked.clone()], &[])?,
        };
        w = Some(emit(ctx, "where", vec![c.clone(), scalar(dt, 0.0), base], &[])?);
    }
    let neg = emit(ctx, "negative", vec![picked.clone()], &[])?;
    let loss = match &w {
        Some(w) => emit(ctx, "multiply", vec![neg, w.clone()], &[])?,
        None => neg,
    };
    match reduction.as_str() {
        "none" => Ok(tval_leaf(ctx, loss)?),
        "sum" => ctx.op("sum", vec![loss], &[]),
        _ => {
            let total = emit(ctx, "sum", vec![loss], &[])?;
            let count = match &w {
                Some(w) => emit(ctx, "sum", vec![w.clone()], &[])?,
                None => {
                    let numel = val(ctx, n, 1)?
                        .const_shape()
                        .map(|s| s.iter().product::<i64>())
                        .ok_or("mean reduction needs static target dimensions")?;
                    scalar(dt, numel as f64)
                }
            };
            ctx.op("divide", vec![total, count], &[])
        }
    }
}

/// `Adagrad`, `Adam` and `Momentum` (domain `ai.onnx.preview.training`): one update of
/// every optimized tensor; the iteration count `T` must be known when importing.
pub(crate) fn optimizer(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let per = match n.op_type.as_str() {
        "Adam" => 4,
        _ => 3,
    };
    let inputs = n.inputs.len();
    if inputs < 2 + per || !(inputs - 2).is_multiple_of(per) {
        return Err("unexpected number of inputs".into());
    }
    let count = (inputs - 2) / per;
    let t = known_scalar(ctx, n, 1)?;
    let dt = val(ctx, n, 2)?.dtype;
    let rv = val(ctx, n, 0)?;
    let r = x(ctx, n, 0)?;
    let r = astype(ctx, r, rv.dtype, dt)?;
    let s = |v: f64| scalar(dt, v);
    let norm = n.float("norm_coefficient", 0.0);
    let mut outs: Vec<Vec<TVal>> = vec![Vec::new(); per - 1];
    for i in 0..count {
        let xe = x(ctx, n, 2 + i)?;
        let g = x(ctx, n, 2 + count + i)?;
        let nx = emit(ctx, "multiply", vec![xe.clone(), s(norm)], &[])?;
        let gr = emit(ctx, "add", vec![nx, g], &[])?;
        let new: Vec<Expr> = match n.op_type.as_str() {
            "Adagrad" => {
                let h = x(ctx, n, 2 + 2 * count + i)?;
                let decay = n.float("decay_factor", 0.0);
                let lr = emit(ctx, "divide", vec![r.clone(), s(1.0 + t as f64 * decay)], &[])?;
                let g2 = emit(ctx, "multiply", vec![gr.clone(), gr.clone()], &[])?;
                let h_new = emit(ctx, "add", vec![h, g2], &[])?;
                let hs = emit(ctx, "sqrt", vec![h_new.clone()], &[])?;
                let hs = emit(ctx, "add", vec![hs, s(n.float("epsilon", 0.0))], &[])?;
                let step = emit(ctx, "multiply", vec![lr, gr], &[])?;
                let step = emit(ctx, "divide", vec![step, hs], &[])?;
                vec![emit(ctx, "subtract", vec![xe, step], &[])?, h_new]
            }
            "Adam" => {
                let v = x(ctx, n, 2 + 2 * count + i)?;
                let h = x(ctx, n, 2 + 3 * count + i)?;
                let (alpha, beta) = (n.float("alpha", 0.9), n.float("beta", 0.999));
                let av = emit(ctx, "multiply", vec![v, s(alpha)], &[])?;
                let bg = emit(ctx, "multiply", vec![gr.clone(), s(1.0 - alpha)], &[])?;
                let v_new = emit(ctx, "add", vec![av, bg], &[])?;
                let bh = emit(ctx, "multiply", vec![h, s(beta)], &[])?;
                let g2 = emit(ctx, "multiply", vec![gr.clone(), gr], &[])?;
                let g2 = emit(ctx, "multiply", vec![g2, s(1.0 - beta)], &[])?;
                let h_new = emit(ctx, "add", vec![bh, g2], &[])?;
                let hs = emit(ctx, "sqrt", vec![h_new.clone()], &[])?;
                let hs = emit(ctx, "add", vec![hs, s(n.float("epsilon", 0.0))], &[])?;
                let factor = if t > 0 {
                    (1.0 - beta.powi(t as i32)).sqrt() / (1.0 - alpha.powi(t as i32))
                } else {
                    1.0
                };
                let lr = emit(ctx, "multiply", vec![r.clone(), s(factor)], &[])?;
                let q = emit(ctx, "divide", vec![v_new.clone(), hs], &[])?;
                let step = emit(ctx, "multiply", vec![lr, q], &[])?;
                let x_new = emit(ctx, "subtract", vec![xe, step], &[])?;
                let post = n.float("norm_coefficient_post", 0.0);
                let x_new = emit(ctx, "multiply", vec![x_new, s(1.0 - post)], &[])?;
                vec![x_new, v_new, h_new]
            }
            _ => {
                let v = x(ctx, n, 2 + 2 * count + i)?;
                let (alpha, beta) = (n.float("alpha", 0.0), n.float("beta", 0.0));
                let beta = if t > 0 { beta } else { 1.0 };
                let av = emit(ctx, "multiply", vec![v, s(alpha)], &[])?;
                let bg = emit(ctx, "multiply", vec![gr.clone(), s(beta)], &[])?;
                let v_new = emit(ctx, "add", vec![av, bg], &[])?;
                let dir = match n.string("mode").as_deref() {
                    Some("nesterov") => {
                        let av = emit(ctx, "multiply", vec![v_new.clone(), s(alpha)], &[])?;
                        emit(ctx, "add", vec![gr, av], &[])?
                    }
                    _ => v_new.clone(),
                };
                let step = emit(ctx, "multiply", vec![r.clone(), dir], &[])?;
                vec![emit(ctx, "subtract", vec![xe, step], &[])?, v_new]
            }
        };
        for (k, e) in new.into_iter().enumerate() {
            outs[k].push(tval_leaf(ctx, e)?);
        }
    }
    Ok(outs.into_iter().flatten().collect())
}
