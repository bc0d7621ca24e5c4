//! ONNX `Attention` (opsets 23 to 26): scaled dot-product attention with an optional
//! mask, a key/value cache, grouped-query heads, soft-capping, causal and sliding-window
//! masks and per-batch key lengths, written as Relax matmul / softmax calls following
//! the operator's function body (the `_expanded` form of ONNX's own tests).

use crate::error::{convert_err, ConvertError};
use relax_ir::{AttrValue, DataType, Expr, PrimExpr};

use crate::convert::{Ctx, TVal};
use crate::ops::{ints_attr, scalar, val, x, Node};

fn emit(ctx: &mut Ctx, op: &str, args: Vec<Expr>, attrs: &[(&str, AttrValue)]) -> Result<Expr, ConvertError> {
    let v = ctx.op(op, args, attrs)?;
    ctx.leaf(&v)
}

fn permute(ctx: &mut Ctx, e: Expr, axes: &[i64]) -> Result<Expr, ConvertError> {
    emit(ctx, "permute_dims", vec![e], &[("axes", ints_attr(axes))])
}

/// `bfloat16`.
const BF16: DataType = DataType::new(relax_ir::TypeCode::BFloat, 16, 1);

fn reshape(ctx: &mut Ctx, e: Expr, dims: Vec<PrimExpr>) -> Result<Expr, ConvertError> {
    emit(ctx, "reshape", vec![e, Expr::shape(dims)], &[])
}

fn astype(ctx: &mut Ctx, e: Expr, from: DataType, to: DataType) -> Result<Expr, ConvertError> {
    if from == to {
        return Ok(e);
    }
    emit(ctx, "astype", vec![e], &[("dtype", AttrValue::DataType(to))])
}

/// `e` (`float32`) rounded to `bfloat16` and back when `bf16`: ONNX's reference
/// computes `bfloat16` attention one numpy step at a time, each result rounded.
fn round_bf16(ctx: &mut Ctx, e: Expr, bf16: bool) -> Result<Expr, ConvertError> {
    if !bf16 {
        return Ok(e);
    }
    let b = astype(ctx, e, DataType::FLOAT32, BF16)?;
    astype(ctx, b, BF16, DataType::FLOAT32)
}

/// `R.arange(start, end)` as int64.
fn arange(ctx: &mut Ctx, start: PrimExpr, end: PrimExpr) -> Result<Expr, ConvertError> {
    let p = |e: PrimExpr| {
        let e = if e.dtype() == DataType::INT64 {
            e
        } else {
            e.cast(DataType::INT64)
        };
        Expr::new(relax_ir::ExprKind::PrimValue(e))
    };
    emit(
        ctx,
        "arange",
        vec![p(start), p(end), p(PrimExpr::int(1))],
        &[("dtype", AttrValue::DataType(DataType::INT64))],
    )
}

/// `where(allowed, 0, -inf)` of dtype `dt`.
fn bias_of(ctx: &mut Ctx, allowed: Expr, dt: DataType) -> Result<Expr, ConvertError> {
    emit(
        ctx,
        "where",
        vec![allowed, scalar(dt, 0.0), scalar(dt, f64::NEG_INFINITY)],
        &[],
    )
}

/// Input `(B, S, heads * H)` as `(B, heads, S, H)`.
fn split_heads(ctx: &mut Ctx, e: Expr, shape: &[PrimExpr], heads: i64) -> Result<Expr, ConvertError> {
    let h = shape[2].as_int().ok_or("a 3-D input needs a static hidden size")?;
    if heads <= 0 || h % heads != 0 {
        return Err(convert_err!("hidden size {h} is not a multiple of {heads} heads"));
    }
    let r = reshape(
        ctx,
        e,
        vec![
            shape[0].clone(),
            shape[1].clone(),
            PrimExpr::int(heads),
            PrimExpr::int(h / heads),
        ],
    )?;
    permute(ctx, r, &[0, 2, 1, 3])
}

/// The converter of `Attention`.
pub fn attention(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let qv = val(ctx, n, 0)?;
    // 16-bit inputs are computed in float32 and the results rounded once
    let io_dt = qv.dtype;
    let dt = if io_dt.bits == 16 { DataType::FLOAT32 } else { io_dt };
    let qshape = qv.shape.clone().ok_or("Q has unknown shape")?;
    let kshape = val(ctx, n, 1)?.shape.ok_or("K has unknown shape")?;
    let vshape = val(ctx, n, 2)?.shape.ok_or("V has unknown shape")?;
    let rank3 = qshape.len() == 3;
    if !(rank3 || qshape.len() == 4) || kshape.len() != qshape.len() || vshape.len() != qshape.len() {
        return Err("Q, K and V must all be 3-D or all 4-D".into());
    }
    let (mut q, mut k, mut v) = (x(ctx, n, 0)?, x(ctx, n, 1)?, x(ctx, n, 2)?);
    q = astype(ctx, q, io_dt, dt)?;
    k = astype(ctx, k, io_dt, dt)?;
    v = astype(ctx, v, io_dt, dt)?;
    let qh = n.int("q_num_heads", 0);
    let kvh = n.int("kv_num_heads", 0);
    let (qh, kvh) = if rank3 {
        q = split_heads(ctx, q, &qshape, qh)?;
        k = split_heads(ctx, k, &kshape, kvh)?;
        v = split_heads(ctx, v, &vshape, kvh)?;
        (qh, kvh)
    } else {
        let qh = qshape[1].as_int().ok_or("Q needs a static number of heads")?;
        let kvh = kshape[1].as_int().ok_or("K needs a static number of heads")?;
        (qh, kvh)
    };
    let batch = qshape[0].clone();
    let seq_q = if rank3 { qshape[1].clone() } else { qshape[2].clone() };
    let head = if rank3 {
        qshape[2].as_int().map(|h| h / qh)
    } else {
        qshape[3].as_int()
    }
    .ok_or("the head size must be static")?;
    let head_v = if rank3 {
        vshape[2].as_int().map(|h| h / kvh)
    } else {
        vshape[3].as_int()
    }
    .ok_or("the value head size must be static")?;
    let seq_kv_new = if rank3 { kshape[1].clone() } else { kshape[2].clone() };

    // key/value cache
    let mut past_len = PrimExpr::int(0);
    let has_past = n.has(4) && n.has(5);
    if has_past {
        let pk = val(ctx, n, 4)?;
        past_len = pk
            .shape
            .as_ref()
            .and_then(|s| s.get(2).cloned())
            .ok_or("past_key must be 4-D")?;
        let (pk, pv) = (x(ctx, n, 4)?, x(ctx, n, 5)?);
        let pk = astype(ctx, pk, io_dt, dt)?;
        let pv = astype(ctx, pv, io_dt, dt)?;
        k = emit(
            ctx,
            "concat",
            vec![Expr::tuple(vec![pk, k])],
            &[("axis", AttrValue::Int(2))],
        )?;
        v = emit(
            ctx,
            "concat",
            vec![Expr::tuple(vec![pv, v])],
            &[("axis", AttrValue::Int(2))],
        )?;
    }
    let (present_k, present_v) = (k.clone(), v.clone());
    let seq_kv = ctx.bin(relax_ir::tir::BinOp::Add, &past_len, &seq_kv_new);

    // scale: sqrt(scale) on both Q and K, as the function body does
    let scale = match n.attr_f("scale") {
        Some(s) => s,
        None => 1.0 / (head as f64).sqrt(),
    };
    let bf16 = io_dt == BF16;
    let sq = if bf16 {
        // the reference's scale is a bfloat16 scalar
        f32::from_bits(u32::from(relax_ir::dtype::bf16_bits_from_f64(scale.sqrt())) << 16) as f64
    } else {
        (scale.sqrt() as f32) as f64
    };
    let qs = emit(ctx, "multiply", vec![q, scalar(dt, sq)], &[])?;
    let qs = round_bf16(ctx, qs, bf16)?;
    let kt = permute(ctx, k, &[0, 1, 3, 2])?;
    let ks = emit(ctx, "multiply", vec![kt, scalar(dt, sq)], &[])?;
    let ks = round_bf16(ctx, ks, bf16)?;

    // grouped-query attention: each key/value head serves qh / kvh query heads
    let (mut ks, mut v) = (ks, v);
    if qh != kvh {
        if kvh <= 0 || qh % kvh != 0 {
            return Err(convert_err!(
                "{qh} query heads are not a multiple of {kvh} key/value heads"
            ));
        }
        let reps = AttrValue::Int(qh / kvh);
        ks = emit(
            ctx,
            "repeat",
            vec![ks],
            &[("repeats", reps.clone()), ("axis", AttrValue::Int(1))],
        )?;
        v = emit(
            ctx,
            "repeat",
            vec![v],
            &[("repeats", reps), ("axis", AttrValue::Int(1))],
        )?;
    }
    let qk = emit(ctx, "matmul", vec![qs, ks], &[])?;
    let mut qk = round_bf16(ctx, qk, bf16)?;

    let softcap = n.float("softcap", 0.0);
    if softcap > 0.0 {
        let d = emit(ctx, "divide", vec![qk, scalar(dt, softcap)], &[])?;
        let d = round_bf16(ctx, d, bf16)?;
        let t = emit(ctx, "tanh", vec![d], &[])?;
        let t = round_bf16(ctx, t, bf16)?;
        qk = emit(ctx, "multiply", vec![t, scalar(dt, softcap)], &[])?;
        qk = round_bf16(ctx, qk, bf16)?;
    }

    // the additive bias: mask, causal, window and padding terms
    let mut bias: Option<Expr> = None;
    if n.has(3) {
        let mv = val(ctx, n, 3)?;
        let mut m = x(ctx, n, 3)?;
        if mv.dtype.is_bool() {
            m = bias_of(ctx, m, dt)?;
        } else {
            m = astype(ctx, m, mv.dtype, dt)?;
        }
        let mshape = mv.shape.clone().ok_or("attn_mask has unknown shape")?;
        let last = mshape.last().cloned().ok_or("attn_mask must have a rank")?;
        let pad = ctx.bin(relax_ir::tir::BinOp::Sub, &seq_kv, &last);
        match pad.as_int() {
            Some(0) => {}
            Some(p) if p > 0 => {
                let mut width = vec![0; 2 * mshape.len()];
                width[2 * mshape.len() - 1] = p;
                m = emit(
                    ctx,
                    "nn.pad",
                    vec![m],
                    &[
                        ("pad_width", ints_attr(&width)),
                        ("pad_value", AttrValue::Float(f64::NEG_INFINITY)),
                        ("pad_mode", AttrValue::Str("constant".into())),
                    ],
                )?;
            }
            Some(_) => return Err("attn_mask is longer than the keys".into()),
            None => return Err("attn_mask of a symbolic length shorter than the keys".into()),
        }
        bias = Some(m);
    }
    let is_causal = n.int("is_causal", 0) != 0;
    let (left, right) = (n.int("left_window_size", -1), n.int("right_window_size", -1));
    let nonpad = if n.has(6) { Some(x(ctx, n, 6)?) } else { None };
    if has_past && nonpad.is_some() {
        return Err("nonpad_kv_seqlen cannot be combined with past_key".into());
    }
    if is_causal || left >= 0 || right >= 0 {
        // diff[i, j] = i + offset - j, per batch with nonpad_kv_seqlen
        let j = arange(ctx, PrimExpr::int(0), seq_kv.clone())?;
        let i = match &nonpad {
            None => {
                let end = ctx.bin(relax_ir::tir::BinOp::Add, &past_len, &seq_q);
                let i = arange(ctx, past_len.clone(), end)?;
                emit(ctx, "expand_dims", vec![i], &[("axis", ints_attr(&[1]))])?
            }
            Some(np) => {
                let i = arange(ctx, PrimExpr::int(0), seq_q.clone())?;
                let i = emit(ctx, "expand_dims", vec![i], &[("axis", ints_attr(&[1]))])?;
                let np = astype(ctx, np.clone(), val(ctx, n, 6)?.dtype, DataType::INT64)?;
                let np = reshape(ctx, np, vec![batch.clone(), PrimExpr::int(1), PrimExpr::int(1)])?;
                let off = emit(
                    ctx,
                    "subtract",
                    vec![
                        np,
                        Expr::new(relax_ir::ExprKind::Constant {
                            data: std::sync::Arc::new(relax_ir::NDArray {
                                dtype: DataType::INT64,
                                shape: vec![],
                                data: seq_q
                                    .as_int()
                                    .ok_or("a symbolic query length with nonpad_kv_seqlen")?
                                    .to_le_bytes()
                                    .to_vec(),
                            }),
                        }),
                    ],
                    &[],
                )?;
                emit(ctx, "add", vec![i, off], &[])?
            }
        };
        let diff = emit(ctx, "subtract", vec![i, j], &[])?;
        let i64c = |v: i64| scalar(DataType::INT64, v as f64);
        let mut terms = Vec::new();
        if is_causal {
            terms.push(emit(ctx, "greater_equal", vec![diff.clone(), i64c(0)], &[])?);
        }
        if left >= 0 {
            terms.push(emit(ctx, "less_equal", vec![diff.clone(), i64c(left)], &[])?);
        }
        if right >= 0 {
            terms.push(emit(ctx, "greater_equal", vec![diff.clone(), i64c(-right)], &[])?);
        }
        let mut allowed = terms.remove(0);
        for t in terms {
            allowed = emit(ctx, "logical_and", vec![allowed, t], &[])?;
        }
        let mut b = bias_of(ctx, allowed, dt)?;
        if nonpad.is_some() {
            // (B, S, L) -> (B, 1, S, L): the mask keeps its right-aligned broadcasting
            b = emit(ctx, "expand_dims", vec![b], &[("axis", ints_attr(&[1]))])?;
        }
        bias = Some(match bias {
            None => b,
            Some(m) => emit(ctx, "add", vec![m, b], &[])?,
        });
    }
    if let Some(np) = &nonpad {
        let j = arange(ctx, PrimExpr::int(0), seq_kv.clone())?;
        let np = astype(ctx, np.clone(), val(ctx, n, 6)?.dtype, DataType::INT64)?;
        let np = reshape(
            ctx,
            np,
            vec![batch.clone(), PrimExpr::int(1), PrimExpr::int(1), PrimExpr::int(1)],
        )?;
        let allowed = emit(ctx, "less", vec![j, np], &[])?;
        let b = bias_of(ctx, allowed, dt)?;
        bias = Some(match bias {
            None => b,
            Some(m) => emit(ctx, "add", vec![m, b], &[])?,
        });
    }

    let qk_biased = match &bias {
        None => qk.clone(),
        Some(b) => {
            let b = round_bf16(ctx, b.clone(), bf16)?;
            let s = emit(ctx, "add", vec![qk.clone(), b], &[])?;
            round_bf16(ctx, s, bf16)?
        }
    };
    let mode = n.int("qk_matmul_output_mode", 0);
    let mut qk_out = if mode == 2 { qk_biased.clone() } else { qk };

    let sm_dt = match n.attr_i("softmax_precision") {
        Some(p) => crate::tensor::dtype_of(p as i32).ok_or("bad softmax_precision")?,
        None => dt,
    };
    let stepwise = bf16 && (n.attr_i("softmax_precision").is_none() || sm_dt == BF16);
    let sm_dt = if sm_dt.bits == 16 { DataType::FLOAT32 } else { sm_dt };
    let logits = astype(ctx, qk_biased, dt, sm_dt)?;
    let mut p = if stepwise {
        // bfloat16 softmax as the reference's numpy steps, each rounded to bfloat16
        // (the sum too: Relax's bfloat16 `sum` rounds after every addition, as numpy)
        let x = astype(ctx, logits, sm_dt, BF16)?;
        let m = emit(
            ctx,
            "max",
            vec![x.clone()],
            &[("axis", ints_attr(&[-1])), ("keepdims", AttrValue::Bool(true))],
        )?;
        let d = emit(ctx, "subtract", vec![x, m], &[])?;
        let e = emit(ctx, "exp", vec![d], &[])?;
        let s = emit(
            ctx,
            "sum",
            vec![e.clone()],
            &[("axis", ints_attr(&[-1])), ("keepdims", AttrValue::Bool(true))],
        )?;
        let p = emit(ctx, "divide", vec![e, s], &[])?;
        astype(ctx, p, BF16, sm_dt)?
    } else {
        emit(ctx, "nn.softmax", vec![logits], &[("axis", AttrValue::Int(-1))])?
    };
    if let Some(b) = &bias {
        // a row whose bias is -inf everywhere attends nothing: its probabilities are 0
        let m = emit(
            ctx,
            "max",
            vec![b.clone()],
            &[("axis", ints_attr(&[-1])), ("keepdims", AttrValue::Bool(true))],
        )?;
        // -inf, or the lowest finite value where a device cannot hold infinities
        let lowest = if dt == DataType::FLOAT64 {
            f64::MIN
        } else {
            f32::MIN as f64
        };
        let masked = emit(ctx, "less_equal", vec![m, scalar(dt, lowest)], &[])?;
        p = emit(ctx, "where", vec![masked, scalar(sm_dt, 0.0), p], &[])?;
    }
    if mode == 3 {
        qk_out = astype(ctx, p.clone(), sm_dt, dt)?;
    }
    let p = astype(ctx, p, sm_dt, dt)?;
    let p = round_bf16(ctx, p, bf16)?;
    let mut y = emit(ctx, "matmul", vec![p, v], &[])?;
    if rank3 {
        y = permute(ctx, y, &[0, 2, 1, 3])?;
        y = reshape(ctx, y, vec![batch, seq_q, PrimExpr::int(qh * head_v)])?;
    }
    let tv = |ctx: &mut Ctx, e: Expr| {
        let e = astype(ctx, e, dt, io_dt)?;
        crate::ops::tval_leaf(ctx, e)
    };
    Ok(vec![
        tv(ctx, y)?,
        tv(ctx, present_k)?,
        tv(ctx, present_v)?,
        tv(ctx, qk_out)?,
    ])
}
