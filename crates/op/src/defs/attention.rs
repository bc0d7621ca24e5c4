//! `nn.attention(query, key, value, bias=None, scale=None, causal_mask=None,
//! window_size=None)`: multi-head attention on `(batch, seq, heads, dim)`
//! tensors. With a bias it is TVM's `relax.nn.attention_bias`.
//!
//! Legalized as TVM 0.27 does (`_te_attention` in
//! `legalize_ops/nn.py`): one PrimFunc (`attention`, or `attention_bias`)
//! of transposes, reshapes to `batch * heads` matrices, two batch matmuls and
//! a softmax; a causal mask zeroes the scores above the diagonal
//! (`topi.trilu`) before and after the exponential.
//!
//! The engine's optimizing pipeline computes it instead with one fused
//! online-softmax kernel (`fuse-attention` in `relax_transform::attention`),
//! which never materialises the `seq x seq` scores; `LegalizeOps` itself keeps
//! TVM's form.

use crate::error::infer_err;
use relax_ir::tir::{BinOp, Intrinsic};
use relax_ir::{AttrValue, Attrs, Buffer, Call, DataType, PrimExpr, StructInfo};

use crate::attrs::AttrReader;
use crate::common::*;
use crate::legalize::manipulate::{ravel, unravel};
use crate::legalize::te::{konst, min_value, Reduce, Te};
use crate::legalize::{Emitter, LegalizeCtx, Legalized, Lowered, OrSkip, Skip};
use crate::{InferCtx, OpDef};

/// StructInfo (TVM's `InferStructInfoAttention`): `(B, S, N, H_v)` with the
/// query's dtype, after checking that the batch sizes agree, that the
/// query's head count is a multiple of the key's and the value's (grouped
/// heads are accepted), that the query and key head dimensions and the key
/// and value sequence lengths agree, and that a bias broadcasts to
/// `(B, N, S, S_kv)`.
fn infer(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    if args.len() < 3 || args.len() > 4 {
        return Err(infer_err!(
            "{} expects 3 or 4 arguments, got {}",
            op_name(call),
            args.len()
        ));
    }
    let q = tensor_arg(call, args, 0)?;
    let k = tensor_arg(call, args, 1)?;
    let v = tensor_arg(call, args, 2)?;
    for (t, role) in [(q, "query"), (k, "key"), (v, "value")] {
        if t.ndim != 4 {
            return Err(infer_err!(
                "The {role} should have 4 dimension, namely [batch size, sequence length, number of heads, dimension of heads]."
            ));
        }
    }
    let vd = q.vdevice.clone();
    let (Some(qs), Some(ks), Some(vs)) = (shape_of(q), shape_of(k), shape_of(v)) else {
        return Ok(tensor_ndim(q.dtype, 4, vd));
    };
    let an = ctx.analyzer;
    let same = |a: &PrimExpr, b: &PrimExpr, m1: &str, m2: &str, dim: &str| {
        if prove_ne(an, a, b) {
            return Err(infer_err!(
                "The {m1} {dim} and the {m2} {dim} should be the same. However, the {dim} of {m1} is {} while the {dim} of {m2} is {}",
                show(a),
                show(b)
            ));
        }
        Ok(())
    };
    let multiple = |a: &PrimExpr, b: &PrimExpr, m1: &str, m2: &str, dim: &str| {
        let not_multiple = match (a.as_int(), b.as_int()) {
            (Some(x), Some(y)) => y != 0 && x % y != 0,
            (_, Some(0)) => false,
            _ => prove_ne(an, &floormod(a, b), &int(0)),
        };
        if not_multiple {
            return Err(infer_err!(
                "The {m1} {dim} should be a multiple of {m2} {dim}. However, the {dim} of {m1} is {} while the {dim} of {m2} is {}",
                show(a),
                show(b)
            ));
        }
        Ok(())
    };
    same(&qs[0], &ks[0], "query", "key", "batch size")?;
    same(&qs[0], &vs[0], "query", "value", "batch size")?;
    multiple(&qs[2], &ks[2], "query", "key", "number of heads")?;
    multiple(&qs[2], &vs[2], "query", "value", "number of heads")?;
    same(&ks[1], &vs[1], "key", "value", "sequence length")?;
    same(&qs[3], &ks[3], "query", "key", "dimension of heads")?;
    if args.len() == 4 {
        let b = tensor_arg(call, args, 3)?;
        if b.ndim != 4 {
            return Err(infer_err!(
                "The bias should have 4 dimensions.However, the bias input has {} dimensions.",
                b.ndim
            ));
        }
        if let Some(bs) = shape_of(b) {
            let bcast = |a: &PrimExpr, b: &PrimExpr, dim: &str| {
                if prove_ne(an, a, b) && b.as_int() != Some(1) {
                    return Err(infer_err!(
                        "The query {dim} and the bias {dim} should be the same or broadcastable. However, the {dim} of query is {} while the {dim} of bias is {}",
                        show(a),
                        show(b)
                    ));
                }
                Ok(())
            };
            bcast(&qs[0], &bs[0], "batch size")?;
            bcast(&qs[2], &bs[1], "number of heads")?;
            bcast(&qs[1], &bs[2], "sequence length")?;
            same(&ks[1], &bs[3], "key", "bias", "sequence length")?;
        }
    }
    Ok(tensor(
        vec![qs[0].clone(), qs[1].clone(), qs[2].clone(), vs[3].clone()],
        q.dtype,
        vd,
    ))
}

/// The attributes the legalization reads.
struct Attn {
    /// The score scale (`None`: divide by `sqrt(head_dim)`).
    scale: Option<f64>,
    /// `"TopLeft"`, `"BottomRight"` or none.
    causal_mask: Option<String>,
}

fn read_attrs(call: &Call) -> Result<Attn, Skip> {
    let r = AttrReader::new(call);
    let scale = match r.value("scale")? {
        AttrValue::None => None,
        AttrValue::Float(f) => Some(f),
        AttrValue::Int(i) => Some(i as f64),
        AttrValue::PrimExpr(p) => Some(
            p.as_float()
                .or_else(|| p.as_int().map(|i| i as f64))
                .or_skip("the scale is not a constant")?,
        ),
        _ => return Err(Skip::new("the scale is not a number")),
    };
    let causal_mask = match r.value("causal_mask")? {
        AttrValue::None => None,
        AttrValue::Str(s) => Some(s),
        _ => return Err(Skip::new("the causal mask is not a string")),
    };
    if !matches!(r.value("window_size")?, AttrValue::None) {
        return Err(Skip::new("sliding-window attention (TVM does not legalize it either)"));
    }
    Ok(Attn { scale, causal_mask })
}

/// `topi.transpose(x, [0, 2, 1, 3])`.
fn swap12(t: &mut Te, x: &Buffer) -> Buffer {
    let s = x.shape();
    let shape = vec![s[0].clone(), s[2].clone(), s[1].clone(), s[3].clone()];
    t.compute("T_transpose", &shape, "ax", |i| {
        PrimExpr::load(x, vec![i[0].clone(), i[2].clone(), i[1].clone(), i[3].clone()])
    })
}

/// `topi.reshape(x, shape)`.
fn reshape(t: &mut Te, x: &Buffer, shape: &[PrimExpr]) -> Buffer {
    let in_shape = x.shape().to_vec();
    t.compute("T_reshape", shape, "ax", |i| {
        PrimExpr::load(x, unravel(&ravel(i, shape), &in_shape))
    })
}

/// `topi.nn.batch_matmul(a, b, transpose_b)` into `(bs, m, n)`: the sum over
/// `k` of `a[b, i, k] * b[b, j, k]` (`NT`) or `b[b, k, j]` (`NN`).
fn batch_matmul(t: &mut Te, a: &Buffer, b: &Buffer, transpose_b: bool, shape: Vec<PrimExpr>) -> Buffer {
    let kext = a.shape()[2].clone();
    let name = if transpose_b {
        "T_batch_matmul_NT"
    } else {
        "T_batch_matmul_NN"
    };
    let mut ann = Attrs::new();
    ann.set(
        "layout_free_placeholders",
        AttrValue::List(vec![AttrValue::PrimExpr(b.0.data.to_expr())]),
    );
    let names = ["b".to_string(), "i".to_string(), "j".to_string()];
    t.reduce_named(
        Reduce::sum(name, shape, "", vec![("k".into(), kext)], a.dtype()),
        &names,
        ann,
        |acc, v| PrimExpr::binary(BinOp::Add, acc, v),
        |s, r| {
            let x = PrimExpr::load(a, vec![s[0].clone(), s[1].clone(), r[0].clone()]);
            let y = if transpose_b {
                PrimExpr::load(b, vec![s[0].clone(), s[2].clone(), r[0].clone()])
            } else {
                PrimExpr::load(b, vec![s[0].clone(), r[0].clone(), s[2].clone()])
            };
            PrimExpr::binary(BinOp::Mul, x, y)
        },
    )
}

/// `topi.trilu(x, k, upper=False)`: `x` where `col <= row + k`, else 0.
fn tril(t: &mut Te, x: &Buffer, offset: &PrimExpr) -> Buffer {
    let dt = x.dtype();
    t.compute("trilu", x.shape(), "i", |i| {
        let (row, col) = (i[1].clone(), i[2].clone());
        // TVM's simplified forms of `col <= row + k`
        let cond = match offset.as_int() {
            Some(0) => PrimExpr::binary(BinOp::Le, col, row),
            Some(k) => PrimExpr::binary(BinOp::Le, col, PrimExpr::binary(BinOp::Add, row, PrimExpr::int(k))),
            None => PrimExpr::binary(BinOp::Le, PrimExpr::binary(BinOp::Sub, col, offset.clone()), row),
        };
        PrimExpr::select(cond, PrimExpr::load(x, i.to_vec()), konst(0.0, dt))
    })
}

/// A reduction over the last axis of a 3-d `x` keeping it (extent 1), as
/// `topi.max` / `topi.sum` with `keepdims=True`.
fn reduce_last(t: &mut Te, x: &Buffer, name: &str, init: PrimExpr, op: BinOp) -> Buffer {
    let s = x.shape();
    let shape = vec![s[0].clone(), s[1].clone(), int(1)];
    let names = ["ax0".to_string(), "ax1".to_string(), "ax2".to_string()];
    t.reduce_named(
        Reduce {
            name,
            shape,
            spatial_prefix: "ax",
            red_axes: vec![("k2".into(), s[2].clone())],
            init,
        },
        &names,
        Attrs::new(),
        |acc, v| PrimExpr::binary(op, acc, v),
        |s, r| PrimExpr::load(x, vec![s[0].clone(), s[1].clone(), r[0].clone()]),
    )
}

/// `name[i] = f(a[i], kept[i0, i1, 0])` over `a`'s shape (a broadcast
/// binary operator against a reduction that kept its last axis).
fn with_kept(t: &mut Te, name: &str, a: &Buffer, kept: &Buffer, op: BinOp) -> Buffer {
    t.compute(name, a.shape(), "ax", |i| {
        PrimExpr::binary(
            op,
            PrimExpr::load(a, i.to_vec()),
            PrimExpr::load(kept, vec![i[0].clone(), i[1].clone(), PrimExpr::int(0)]),
        )
    })
}

/// `topi.nn.softmax(p)` over the last axis of a 3-d `p`.
fn softmax(t: &mut Te, p: &Buffer) -> Buffer {
    let dt = p.dtype();
    let s = p.shape().to_vec();
    let red = vec![s[0].clone(), s[1].clone()];
    let maxelem = t.reduce(
        Reduce {
            name: "T_softmax_maxelem",
            shape: red.clone(),
            spatial_prefix: "i",
            red_axes: vec![("k".into(), s[2].clone())],
            init: min_value(dt),
        },
        |a, b| PrimExpr::binary(BinOp::Max, a, b),
        |s, r| PrimExpr::load(p, vec![s[0].clone(), s[1].clone(), r[0].clone()]),
    );
    let exp = t.compute("T_softmax_exp", &s, "i", |i| {
        let d = PrimExpr::binary(
            BinOp::Sub,
            PrimExpr::load(p, i.to_vec()),
            PrimExpr::load(&maxelem, i[..2].to_vec()),
        );
        PrimExpr::intrinsic_call(Intrinsic::Exp, dt, vec![d])
    });
    let expsum = t.reduce(
        Reduce::sum("T_softmax_expsum", red, "i", vec![("k".into(), s[2].clone())], dt),
        |a, b| PrimExpr::binary(BinOp::Add, a, b),
        |s, r| PrimExpr::load(&exp, vec![s[0].clone(), s[1].clone(), r[0].clone()]),
    );
    let mut ann = Attrs::new();
    ann.set("axis", AttrValue::Int(2));
    let names: Vec<String> = (0..3).map(|i| format!("i{i}")).collect();
    t.compute_annotated("T_softmax_norm", &s, &names, ann, |i| {
        PrimExpr::binary(
            BinOp::Div,
            PrimExpr::load(&exp, i.to_vec()),
            PrimExpr::load(&expsum, i[..2].to_vec()),
        )
    })
}

/// `|a - b|` as TVM's `tirx.abs` of an integer difference:
/// `Select(0 <= a - b, a - b, b - a)`, folded when both are constants.
fn abs_diff(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
        return PrimExpr::int((x - y).abs());
    }
    let d = sub(a, b);
    PrimExpr::select(
        PrimExpr::binary(BinOp::Le, PrimExpr::int_of(0, d.dtype()), d.clone()),
        d,
        sub(b, a),
    )
}

/// Legalization: TVM's `_te_attention`.
fn legalize(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    let attrs = read_attrs(ctx.call)?;
    let mut t = Te::new();
    let q = ctx.placeholder(&mut t, 0)?;
    let k = ctx.placeholder(&mut t, 1)?;
    let v = ctx.placeholder(&mut t, 2)?;
    let bias = if ctx.args.len() == 4 {
        Some(ctx.placeholder(&mut t, 3)?)
    } else {
        None
    };
    let (qs, ks, vs) = (q.shape().to_vec(), k.shape().to_vec(), v.shape().to_vec());
    if qs.len() != 4 || ks.len() != 4 || vs.len() != 4 {
        return Err(Skip::new("query, key and value must have 4 dimensions"));
    }
    let dt = q.dtype();
    if !dt.is_float() || k.dtype() != dt || v.dtype() != dt || bias.as_ref().is_some_and(|b| b.dtype() != dt) {
        return Err(Skip::new("query, key, value (and bias) must share one float dtype"));
    }
    if !prove_eq_const(&qs[2], &ks[2]) || !prove_eq_const(&qs[2], &vs[2]) {
        // TVM's reshape to `batch * heads` pairs query head `h` with key head
        // `h mod heads_kv`, not the grouped `h / (heads / heads_kv)`.
        return Err(Skip::new(
            "key or value heads differ from the query heads (grouped-query attention)",
        ));
    }
    if attrs.scale.is_some() && dt != DataType::FLOAT32 {
        // TVM multiplies by a float32 scale, which changes the result's dtype.
        return Err(Skip::new("an explicit scale with a non-float32 dtype"));
    }
    let offset = match attrs.causal_mask.as_deref() {
        None => None,
        Some("TopLeft") => Some(PrimExpr::int_of(0, DataType::INT32)),
        Some("BottomRight") => Some(abs_diff(&qs[1], &ks[1])),
        Some(m) => return Err(Skip::new(format!("causal mask {m:?}"))),
    };
    let (batch, seq, heads, head_dim) = (&qs[0], &qs[1], &qs[2], &qs[3]);
    let (seq_kv, head_dim_v) = (&vs[1], &vs[3]);
    let bs = mul(batch, heads);
    let qt = swap12(&mut t, &q);
    let qr = reshape(&mut t, &qt, &[bs.clone(), seq.clone(), head_dim.clone()]);
    let kt = swap12(&mut t, &k);
    let kr = reshape(&mut t, &kt, &[bs.clone(), seq_kv.clone(), head_dim.clone()]);
    let scores = vec![bs.clone(), seq.clone(), seq_kv.clone()];
    let p = batch_matmul(&mut t, &qr, &kr, true, scores.clone());
    let p = match attrs.scale {
        Some(s) => t.compute("T_multiply", &scores, "ax", |i| {
            PrimExpr::binary(BinOp::Mul, PrimExpr::load(&p, i.to_vec()), konst(s, DataType::FLOAT32))
        }),
        None => {
            let d = match head_dim.as_int() {
                Some(c) => konst(c as f64, dt),
                None => head_dim.clone().cast(dt),
            };
            let sqrt = PrimExpr::intrinsic_call(Intrinsic::Sqrt, dt, vec![d]);
            t.compute("T_divide", &scores, "ax", |i| {
                PrimExpr::binary(BinOp::Div, PrimExpr::load(&p, i.to_vec()), sqrt.clone())
            })
        }
    };
    let p = match &bias {
        Some(b) => {
            let full = vec![batch.clone(), heads.clone(), seq.clone(), seq_kv.clone()];
            let p4 = reshape(&mut t, &p, &full);
            let bshape = b.shape().to_vec();
            let added = t.compute("T_add", &full, "ax", |i| {
                let bi: Vec<PrimExpr> = (0..4)
                    .map(|d| {
                        if bshape[d].as_int() == Some(1) && full[d].as_int() != Some(1) {
                            PrimExpr::int(0)
                        } else {
                            i[d].clone()
                        }
                    })
                    .collect();
                PrimExpr::binary(BinOp::Add, PrimExpr::load(&p4, i.to_vec()), PrimExpr::load(b, bi))
            });
            reshape(&mut t, &added, &scores)
        }
        None => p,
    };
    let s = match &offset {
        None => softmax(&mut t, &p),
        Some(off) => {
            let masked = tril(&mut t, &p, off);
            let mx = reduce_last(&mut t, &masked, "trilu_red", min_value(dt), BinOp::Max);
            let d = with_kept(&mut t, "T_subtract", &masked, &mx, BinOp::Sub);
            let e = t.compute("compute", d.shape(), "i", |i| {
                PrimExpr::intrinsic_call(Intrinsic::Exp, dt, vec![PrimExpr::load(&d, i.to_vec())])
            });
            let e = tril(&mut t, &e, off);
            let sum = reduce_last(&mut t, &e, "trilu_red", konst(0.0, dt), BinOp::Add);
            with_kept(&mut t, "T_divide", &e, &sum, BinOp::Div)
        }
    };
    let vt = swap12(&mut t, &v);
    let vr = reshape(&mut t, &vt, &[bs.clone(), seq_kv.clone(), head_dim_v.clone()]);
    let o = batch_matmul(&mut t, &s, &vr, false, vec![bs, seq.clone(), head_dim_v.clone()]);
    let o = reshape(
        &mut t,
        &o,
        &[batch.clone(), heads.clone(), seq.clone(), head_dim_v.clone()],
    );
    swap12(&mut t, &o);
    let name = if bias.is_some() { "attention_bias" } else { "attention" };
    Ok(Legalized::call(Lowered::from_te(name, t, 1, ctx.out.clone())))
}

/// Whether two extents are the same constant or the same expression.
fn prove_eq_const(a: &PrimExpr, b: &PrimExpr) -> bool {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) => x == y,
        _ => relax_ir::tir::expr_equal(a, b),
    }
}

/// The operator.
pub const DEF: OpDef = OpDef {
    name: "relax.nn.attention",
    pure: true,
    infer,
    legalize: Some(legalize),
};
