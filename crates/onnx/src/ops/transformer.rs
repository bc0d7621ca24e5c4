//! Transformer building blocks: rotary embeddings, causal convolutions, linear attention.

use super::*;

/// `RotaryEmbedding`: rotation of the first `rotary_embedding_dim` features of each
/// head by the cached cosines and sines (halves or interleaved pairs).
pub(crate) fn rotary_embedding(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let shape = xv.const_shape().ok_or("a static input shape is needed")?;
    let mut cur = x(ctx, n, 0)?;
    let (b, s, h, d) = match *shape.as_slice() {
        [b, h, s, d] => {
            cur = emit(ctx, "permute_dims", vec![cur], &[("axes", ints_attr(&[0, 2, 1, 3]))])?;
            (b, s, h, d)
        }
        [b, s, hidden] => {
            let h = n.int("num_heads", 0);
            if h <= 0 || hidden % h != 0 {
                return Err("num_heads must divide the hidden size of a 3-D input".into());
            }
            cur = reshape_expr(ctx, cur, ints(&[b, s, h, hidden / h]))?;
            (b, s, h, hidden / h)
        }
        _ => return Err("the input must be 3-D or 4-D".into()),
    };
    let rd = match n.int("rotary_embedding_dim", 0) {
        0 => d,
        v => v,
    };
    if rd > d || rd % 2 != 0 {
        return Err(convert_err!("rotary_embedding_dim {rd} does not fit head size {d}"));
    }
    let half = rd / 2;
    let (mut cos, mut sin) = (x(ctx, n, 1)?, x(ctx, n, 2)?);
    if n.has(3) {
        let p = x(ctx, n, 3)?;
        cos = emit(ctx, "take", vec![cos, p.clone()], &[("axis", AttrValue::Int(0))])?;
        sin = emit(ctx, "take", vec![sin, p], &[("axis", AttrValue::Int(0))])?;
    }
    cos = emit(ctx, "expand_dims", vec![cos], &[("axis", ints_attr(&[2]))])?;
    sin = emit(ctx, "expand_dims", vec![sin], &[("axis", ints_attr(&[2]))])?;
    let xr = if rd < d {
        slice_axis(ctx, cur.clone(), 3, 0, rd, 1)?
    } else {
        cur.clone()
    };
    let interleaved = n.int("interleaved", 0) != 0;
    let (x1, x2) = if interleaved {
        (
            slice_axis(ctx, xr.clone(), 3, 0, rd, 2)?,
            slice_axis(ctx, xr, 3, 1, rd, 2)?,
        )
    } else {
        (
            slice_axis(ctx, xr.clone(), 3, 0, half, 1)?,
            slice_axis(ctx, xr, 3, half, rd, 1)?,
        )
    };
    let c1 = emit(ctx, "multiply", vec![cos.clone(), x1.clone()], &[])?;
    let s2 = emit(ctx, "multiply", vec![sin.clone(), x2.clone()], &[])?;
    let real = emit(ctx, "subtract", vec![c1, s2], &[])?;
    let s1 = emit(ctx, "multiply", vec![sin, x1], &[])?;
    let c2 = emit(ctx, "multiply", vec![cos, x2], &[])?;
    let imag = emit(ctx, "add", vec![s1, c2], &[])?;
    let mut rot = if interleaved {
        let re = emit(ctx, "expand_dims", vec![real], &[("axis", ints_attr(&[4]))])?;
        let im = emit(ctx, "expand_dims", vec![imag], &[("axis", ints_attr(&[4]))])?;
        let c = concat_exprs(ctx, vec![re, im], 4)?;
        reshape_expr(ctx, c, ints(&[b, s, h, rd]))?
    } else {
        concat_exprs(ctx, vec![real, imag], 3)?
    };
    if rd < d {
        let rest = slice_axis(ctx, cur, 3, rd, d, 1)?;
        rot = concat_exprs(ctx, vec![rot, rest], 3)?;
    }
    let y = if shape.len() == 3 {
        reshape_expr(ctx, rot, ints(&shape))?
    } else {
        emit(ctx, "permute_dims", vec![rot], &[("axes", ints_attr(&[0, 2, 1, 3]))])?
    };
    out1(tval_leaf(ctx, y)?)
}

/// `CausalConvWithState`: a depthwise causal 1-D convolution over the past state (or
/// zeros) followed by the input, with an optional bias and SiLU; the second output is
/// the last `k - 1` positions as the next state.
pub(crate) fn causal_conv_with_state(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let xv = val(ctx, n, 0)?;
    let [b, c, l] = <[i64; 3]>::try_from(xv.const_shape().ok_or("a static input shape is needed")?.as_slice())
        .map_err(|_| ConvertError::from("the input must be 3-D"))?;
    let w_shape = val(ctx, n, 1)?.const_shape().ok_or("a static weight shape is needed")?;
    let k = *w_shape.last().ok_or("the weight must be 3-D")?;
    if w_shape != [c, 1, k] || k < 1 {
        return Err("the weight must be (channels, 1, k)".into());
    }
    let dt = xv.dtype;
    let a = x(ctx, n, 0)?;
    let padded = if k == 1 {
        a
    } else {
        let past = if n.has(3) {
            x(ctx, n, 3)?
        } else {
            crate::convert::constant(
                dt,
                vec![b, c, k - 1],
                (0..b * c * (k - 1)).map(|_| tensor::encode(dt, 0.0)),
            )
        };
        concat_exprs(ctx, vec![past, a], 2)?
    };
    // float16 and bfloat16: the convolution accumulates in float32 and is rounded
    // once, the SiLU is computed in float32 from that rounded value and rounded
    // again, as ONNX's reference (rounding every step differs by an ulp or two)
    let narrow = dt.bits == 16 && matches!(dt.code, relax_ir::TypeCode::Float | relax_ir::TypeCode::BFloat);
    let ft = if narrow { DataType::FLOAT32 } else { dt };
    let w = x(ctx, n, 1)?;
    let w = reshape_expr(ctx, w, ints(&[c, k]))?;
    let w = astype(ctx, w, val(ctx, n, 1)?.dtype, ft)?;
    let padded_f = astype(ctx, padded.clone(), dt, ft)?;
    let mut acc: Option<Expr> = None;
    for j in 0..k {
        let xs = slice_axis(ctx, padded_f.clone(), 2, j, j + l, 1)?;
        let wj = slice_axis(ctx, w.clone(), 1, j, j + 1, 1)?;
        let t = emit(ctx, "multiply", vec![xs, wj], &[])?;
        acc = Some(match acc {
            None => t,
            Some(s) => emit(ctx, "add", vec![s, t], &[])?,
        });
    }
    let mut y = acc.ok_or("an empty kernel")?;
    if n.has(2) {
        let bias = x(ctx, n, 2)?;
        let bias = reshape_expr(ctx, bias, ints(&[c, 1]))?;
        let bias = astype(ctx, bias, val(ctx, n, 2)?.dtype, ft)?;
        y = emit(ctx, "add", vec![y, bias], &[])?;
    }
    y = astype(ctx, y, ft, dt)?;
    match n.string("activation").as_deref() {
        None | Some("none") => {}
        Some("silu" | "swish") => {
            let yf = astype(ctx, y, dt, ft)?;
            let s = emit(ctx, "sigmoid", vec![yf.clone()], &[])?;
            let v = emit(ctx, "multiply", vec![yf, s], &[])?;
            y = astype(ctx, v, ft, dt)?;
        }
        Some(o) => return Err(convert_err!(Unsupported;"activation `{o}` is not supported")),
    }
    let total = l + k - 1;
    let state = slice_axis(ctx, padded, 2, total - (k - 1), total, 1)?;
    Ok(vec![tval_leaf(ctx, y)?, tval_leaf(ctx, state)?])
}

/// `(B, T, H * D)` as `(B, H, T, D)`.
pub(crate) fn heads4(ctx: &mut Ctx, e: Expr, s: &[i64], heads: i64) -> Result<Expr, ConvertError> {
    if heads <= 0 || s[2] % heads != 0 {
        return Err(convert_err!("{} is not a multiple of {heads} heads", s[2]));
    }
    let r = reshape_expr(ctx, e, ints(&[s[0], s[1], heads, s[2] / heads]))?;
    emit(ctx, "permute_dims", vec![r], &[("axes", ints_attr(&[0, 2, 1, 3]))])
}

/// Step `t` of a `(B, H, T, D)` tensor: `(B, H, D)`.
pub(crate) fn step(ctx: &mut Ctx, e: Expr, t: i64) -> Result<Expr, ConvertError> {
    let s = slice_axis(ctx, e, 2, t, t + 1, 1)?;
    emit(ctx, "squeeze", vec![s], &[("axis", ints_attr(&[2]))])
}

/// `LinearAttention`: the recurrent state `S += k v^T` (decayed by `exp(decay)` when
/// gated, with the delta rule's correction `beta (v - S^T k)`), read by each query,
/// unrolled over the (static) sequence in float32.
pub(crate) fn linear_attention(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rule = n.string("update_rule").unwrap_or_else(|| "gated_delta".into());
    let (gating, delta) = match rule.as_str() {
        "linear" => (false, false),
        "gated" => (true, false),
        "delta" => (false, true),
        "gated_delta" => (true, true),
        o => return Err(convert_err!(Unsupported;"update_rule `{o}` is not supported")),
    };
    let (hq, hkv) = (n.int("q_num_heads", 0), n.int("kv_num_heads", 0));
    if hq <= 0 || hkv <= 0 || hq % hkv != 0 {
        return Err("q_num_heads must be a positive multiple of kv_num_heads".into());
    }
    let shape_of = |ctx: &Ctx, i: usize| -> Result<Vec<i64>, ConvertError> {
        let s = val(ctx, n, i)?.const_shape().ok_or("static shapes are needed")?;
        if s.len() != 3 {
            return Err("query, key, value, decay and beta must be 3-D".into());
        }
        Ok(s)
    };
    let (qs, ks, vs) = (shape_of(ctx, 0)?, shape_of(ctx, 1)?, shape_of(ctx, 2)?);
    let (b, t) = (qs[0], qs[1]);
    let dk = qs[2] / hq;
    let dv = vs[2] / hkv;
    let out_dt = val(ctx, n, 0)?.dtype;
    let f = DataType::FLOAT32;
    let load = |ctx: &mut Ctx, i: usize| -> Result<Expr, ConvertError> {
        let e = x(ctx, n, i)?;
        astype(ctx, e, val(ctx, n, i)?.dtype, f)
    };
    let q = load(ctx, 0)?;
    let q = heads4(ctx, q, &qs, hq)?;
    let k = load(ctx, 1)?;
    let k = heads4(ctx, k, &ks, hkv)?;
    let v = load(ctx, 2)?;
    let v = heads4(ctx, v, &vs, hkv)?;
    let decay = if gating {
        if !n.has(4) {
            return Err(convert_err!("update_rule `{rule}` needs decay"));
        }
        let ds = shape_of(ctx, 4)?;
        let d = load(ctx, 4)?;
        Some(if ds[2] == hkv {
            let r = reshape_expr(ctx, d, ints(&[b, t, hkv, 1]))?;
            emit(ctx, "permute_dims", vec![r], &[("axes", ints_attr(&[0, 2, 1, 3]))])?
        } else {
            heads4(ctx, d, &ds, hkv)?
        })
    } else {
        None
    };
    let beta = if delta {
        if !n.has(5) {
            return Err(convert_err!("update_rule `{rule}` needs beta"));
        }
        let bs = shape_of(ctx, 5)?;
        let e = load(ctx, 5)?;
        let r = reshape_expr(ctx, e, ints(&[b, t, bs[2], 1]))?;
        Some(emit(
            ctx,
            "permute_dims",
            vec![r],
            &[("axes", ints_attr(&[0, 2, 1, 3]))],
        )?)
    } else {
        None
    };
    let (mut state, state_dt) = if n.has(3) {
        (load(ctx, 3)?, val(ctx, n, 3)?.dtype)
    } else {
        let numel = b * hkv * dk * dv;
        (
            crate::convert::constant(f, vec![b, hkv, dk, dv], (0..numel).map(|_| tensor::encode(f, 0.0))),
            out_dt,
        )
    };
    let scale = match n.attr_f("scale") {
        Some(s) if s != 0.0 => s,
        _ => 1.0 / (dk as f64).sqrt(),
    };
    let mut outs = Vec::new();
    for i in 0..t {
        let qt = step(ctx, q.clone(), i)?;
        let kt = step(ctx, k.clone(), i)?;
        let mut vt = step(ctx, v.clone(), i)?;
        if let Some(d) = &decay {
            let g = step(ctx, d.clone(), i)?;
            let g = emit(ctx, "exp", vec![g], &[])?;
            let g = emit(ctx, "expand_dims", vec![g], &[("axis", ints_attr(&[3]))])?;
            state = emit(ctx, "multiply", vec![state, g], &[])?;
        }
        if let Some(bt) = &beta {
            let k2 = emit(ctx, "expand_dims", vec![kt.clone()], &[("axis", ints_attr(&[2]))])?;
            let got = emit(ctx, "matmul", vec![k2, state.clone()], &[])?;
            let got = emit(ctx, "squeeze", vec![got], &[("axis", ints_attr(&[2]))])?;
            let diff = emit(ctx, "subtract", vec![vt, got], &[])?;
            let bi = step(ctx, bt.clone(), i)?;
            vt = emit(ctx, "multiply", vec![bi, diff], &[])?;
        }
        let kc = emit(ctx, "expand_dims", vec![kt], &[("axis", ints_attr(&[3]))])?;
        let vr = emit(ctx, "expand_dims", vec![vt], &[("axis", ints_attr(&[2]))])?;
        let outer = emit(ctx, "multiply", vec![kc, vr], &[])?;
        state = emit(ctx, "add", vec![state, outer], &[])?;
        let read = if hq == hkv {
            state.clone()
        } else {
            emit(
                ctx,
                "repeat",
                vec![state.clone()],
                &[("repeats", AttrValue::Int(hq / hkv)), ("axis", AttrValue::Int(1))],
            )?
        };
        let q2 = emit(ctx, "expand_dims", vec![qt], &[("axis", ints_attr(&[2]))])?;
        let o = emit(ctx, "matmul", vec![q2, read], &[])?;
        outs.push(emit(ctx, "multiply", vec![o, scalar(f, scale)], &[])?);
    }
    let y = if outs.len() == 1 {
        outs.remove(0)
    } else {
        concat_exprs(ctx, outs, 2)?
    };
    let y = emit(ctx, "permute_dims", vec![y], &[("axes", ints_attr(&[0, 2, 1, 3]))])?;
    let y = reshape_expr(ctx, y, ints(&[b, t, hq * dv]))?;
    let y = astype(ctx, y, f, out_dt)?;
    let st = astype(ctx, state, f, state_dt)?;
    Ok(vec![tval_leaf(ctx, y)?, tval_leaf(ctx, st)?])
}

/// The graph attribute `name` applied to `input`: its one output.
fn apply_mod(ctx: &mut Ctx, n: &Node, name: &str, input: Expr) -> Result<Expr, ConvertError> {
    let Some(g) = n.attr(name).and_then(|a| a.g.as_deref()) else {
        return Ok(input);
    };
    let v = tval_leaf(ctx, input)?;
    let outs = crate::convert::apply_graph(ctx, n, g, vec![v])?;
    let [o] = <[TVal; 1]>::try_from(outs).map_err(|_| convert_err!("`{name}` must have one output"))?;
    ctx.leaf(&o)
}

/// `FlexAttention` (domain `ai.onnx.preview`): `softmax(score_mod(Q K^T * scale))`,
/// through `prob_mod`, times `V`, with grouped-query heads repeated; the scores and
/// probabilities in float32 for 16-bit inputs (`softmax_precision` when given), the
/// scale split as `sqrt(scale)` on each of `Q` and `K`, as the operator's reference.
pub(crate) fn flex_attention(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let qv = val(ctx, n, 0)?;
    let dt = qv.dtype;
    let qs = qv.const_shape().ok_or("static shapes are needed")?;
    let kshape = val(ctx, n, 1)?.const_shape().ok_or("static shapes are needed")?;
    let vdt = val(ctx, n, 2)?.dtype;
    if qs.len() != 4 || kshape.len() != 4 {
        return Err("Q, K and V must be 4-D".into());
    }
    let (qh, kvh, e) = (qs[1], kshape[1], qs[3]);
    let scale = n.attr_f("scale").unwrap_or(1.0 / (e as f64).sqrt());
    let sq = ((scale as f32).sqrt()) as f64;
    let q = x(ctx, n, 0)?;
    let mut k = x(ctx, n, 1)?;
    let mut v = x(ctx, n, 2)?;
    if qh != kvh {
        if kvh <= 0 || qh % kvh != 0 {
            return Err(convert_err!(
                "{qh} query heads are not a multiple of {kvh} key/value heads"
            ));
        }
        let reps = AttrValue::Int(qh / kvh);
        let axis = ("axis", AttrValue::Int(1));
        k = emit(ctx, "repeat", vec![k], &[("repeats", reps.clone()), axis.clone()])?;
        v = emit(ctx, "repeat", vec![v], &[("repeats", reps), axis])?;
    }
    let q = emit(ctx, "multiply", vec![q, scalar(dt, sq)], &[])?;
    let k = emit(ctx, "multiply", vec![k, scalar(dt, sq)], &[])?;
    let kt = emit(ctx, "permute_dims", vec![k], &[("axes", ints_attr(&[0, 1, 3, 2]))])?;
    let s = emit(ctx, "matmul", vec![q, kt], &[])?;
    let cd = match n.attr_i("softmax_precision") {
        Some(p) => tensor::dtype_of(p as i32).ok_or("bad softmax_precision")?,
        None if dt.bits < 32 => DataType::FLOAT32,
        None => dt,
    };
    let s = astype(ctx, s, dt, cd)?;
    let s = apply_mod(ctx, n, "score_mod", s)?;
    let p = emit(ctx, "nn.softmax", vec![s], &[("axis", AttrValue::Int(-1))])?;
    let p = apply_mod(ctx, n, "prob_mod", p)?;
    let v = astype(ctx, v, vdt, cd)?;
    let o = emit(ctx, "matmul", vec![p, v], &[])?;
    let o = astype(ctx, o, cd, vdt)?;
    out1(tval_leaf(ctx, o)?)
}
