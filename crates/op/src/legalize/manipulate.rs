//! Layout and data-movement operators: `permute_dims`, `expand_dims`,
//! `squeeze`, `flip`, `reshape`/`flatten`/`nn.batch_flatten`, `concat`,
//! `split`, `stack`, `broadcast_to`, `tile`, `repeat`,
//! `collapse_sum_to`/`collapse_sum_like`, `nn.pad`, `reverse_sequence`,
//! `meshgrid`, `one_hot` and `layout_transform`.

use relax_ir::tir::Intrinsic;
use std::collections::HashSet;

use relax_ir::tir::BinOp;
use relax_ir::visit::free_tir_vars;
use relax_ir::{Expr, ExprKind, PrimExpr, PrimExprKind, StructInfo, TirVar};

use super::te::{konst, Reduce, Te};
use super::unary::{one_input, out_and_data, out_and_input};
use super::{norm_axis, LegalizeCtx, Lowered, OrSkip, Skip};
use crate::common::{add, attr_int, attr_opt_int, attr_opt_ints, attr_str, floordiv, floormod, int, mul, sub};

/// The axes in attribute `key` normalized against rank `nd`, `None` when absent.
fn opt_axes(ctx: &LegalizeCtx, key: &str, nd: usize) -> Result<Option<Vec<usize>>, Skip> {
    match attr_opt_ints(ctx.call, key)? {
        None => Ok(None),
        Some(v) => Ok(Some(v.iter().map(|&a| norm_axis(a, nd)).collect::<Result<_, _>>()?)),
    }
}

/// The shapes of a tuple result.
fn out_tuple_shapes(ctx: &LegalizeCtx) -> Result<Vec<Vec<PrimExpr>>, Skip> {
    let StructInfo::Tuple(outs) = &ctx.out else {
        return Err(Skip::new("the result is not a tuple"));
    };
    outs.iter()
        .map(|o| o.as_tensor().and_then(|t| t.shape_values()).map(|s| s.to_vec()))
        .collect::<Option<_>>()
        .or_skip("an output shape is not known")
}

fn permute_dims(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, mut t, x, shape) = out_and_input(ctx)?;
    let nd = shape.len();
    let axes = opt_axes(ctx, "axes", nd)?.unwrap_or_else(|| (0..nd).rev().collect());
    if axes.len() != nd {
        return Err(Skip::new("axes do not name every dimension"));
    }
    t.compute("T_transpose", &out_shape, "ax", |i| {
        let mut idx = vec![PrimExpr::int(0); nd];
        for (j, &d) in axes.iter().enumerate() {
            idx[d] = i[j].clone();
        }
        x.at(&idx)
    });
    Ok(Lowered::from_te("transpose", t, 1, ctx.out.clone()))
}

fn expand_dims(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, mut t, x, _) = out_and_input(ctx)?;
    let on = out_shape.len();
    let axes = opt_axes(ctx, "axis", on)?.or_skip("expand_dims has no axis")?;
    t.compute("expand_dims", &out_shape, "i", |i| {
        let idx: Vec<PrimExpr> = (0..on).filter(|d| !axes.contains(d)).map(|d| i[d].clone()).collect();
        x.at(&idx)
    });
    Ok(Lowered::from_te("expand_dims", t, 1, ctx.out.clone()))
}

fn squeeze(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, mut t, x, shape) = out_and_input(ctx)?;
    let nd = shape.len();
    let axes = opt_axes(ctx, "axis", nd)?;
    let axes = axes.unwrap_or_else(|| (0..nd).filter(|&d| shape[d].as_int() == Some(1)).collect());
    // The result's StructInfo may come from an annotation that disagrees with the
    // squeezed rank (a symbolic dimension that is not known to be 1): not legalized.
    let kept = (0..nd).filter(|d| !axes.contains(d)).count();
    if kept != out_shape.len() {
        return Err(Skip::new("the annotated output rank differs from the squeezed rank"));
    }
    t.compute("T_squeeze", &out_shape, "ax", |i| {
        let mut k = 0;
        let idx: Vec<PrimExpr> = (0..nd)
            .map(|d| {
                if axes.contains(&d) {
                    PrimExpr::int(0)
                } else {
                    k += 1;
                    i[k - 1].clone()
                }
            })
            .collect();
        x.at(&idx)
    });
    Ok(Lowered::from_te("squeeze", t, 1, ctx.out.clone()))
}

fn flip(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (mut t, x, shape) = one_input(ctx)?;
    let nd = shape.len();
    let axis = norm_axis(attr_opt_int(ctx.call, "axis")?.or_skip("flip has no axis")?, nd)?;
    let ext = shape[axis].clone();
    t.compute("T_reverse_sequence", &shape, "ax", |i| {
        let mut idx = i.to_vec();
        idx[axis] = match ext.as_int() {
            Some(e) => PrimExpr::binary(BinOp::Sub, PrimExpr::int(e - 1), i[axis].clone()),
            // `b - i - 1`, as TVM simplifies `b - 1 - i`
            None => PrimExpr::binary(
                BinOp::Sub,
                PrimExpr::binary(BinOp::Sub, ext.clone(), i[axis].clone()),
                PrimExpr::int(1),
            ),
        };
        x.at(&idx)
    });
    Ok(Lowered::from_te("flip", t, 1, ctx.out.clone()))
}

/// `reverse_sequence(x, seq_lengths, seq_axis, batch_axis)`: along `seq_axis`,
/// the first `seq_lengths[b]` elements of batch `b` are reversed.
fn reverse_sequence(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let mut t = Te::new();
    let x = ctx.placeholder(&mut t, 0)?;
    let lens = ctx.placeholder(&mut t, 1)?;
    let shape = x.shape().to_vec();
    let nd = shape.len();
    let seq_axis = norm_axis(attr_int(ctx.call, "seq_axis", 1)?, nd)?;
    let batch_axis = norm_axis(attr_int(ctx.call, "batch_axis", 0)?, nd)?;
    let dim = shape[seq_axis].clone();
    t.compute("T_reverse_sequence", &shape, "ax", |i| {
        let mut len = PrimExpr::load(&lens, vec![i[batch_axis].clone()]);
        if len.dtype() != i[seq_axis].dtype() {
            len = len.cast(i[seq_axis].dtype());
        }
        let j = i[seq_axis].clone();
        let keep = PrimExpr::binary(
            BinOp::Or,
            PrimExpr::binary(BinOp::Le, len.clone(), int(1)),
            PrimExpr::binary(BinOp::Le, len.clone(), j.clone()),
        );
        let last = match dim.as_int() {
            Some(d) => PrimExpr::binary(BinOp::Sub, int(d - 1), j.clone()),
            None => PrimExpr::binary(BinOp::Sub, PrimExpr::binary(BinOp::Sub, dim.clone(), j.clone()), int(1)),
        };
        let within = PrimExpr::binary(BinOp::Sub, PrimExpr::binary(BinOp::Sub, len.clone(), j.clone()), int(1));
        let inner = PrimExpr::intrinsic_call(
            Intrinsic::IfThenElse,
            j.dtype(),
            vec![PrimExpr::binary(BinOp::Lt, dim.clone(), len), last, within],
        );
        let mut idx = i.to_vec();
        idx[seq_axis] = PrimExpr::intrinsic_call(Intrinsic::IfThenElse, j.dtype(), vec![keep, j, inner]);
        PrimExpr::load(&x, idx)
    });
    Ok(finish("reverse_sequence", t, 1, Vec::new(), ctx.out.clone()))
}

/// The tensors of a non-empty tuple argument (the first) as inputs of a new builder.
fn tuple_inputs(ctx: &LegalizeCtx) -> Result<(Te, Vec<relax_ir::Buffer>), Skip> {
    let si = ctx.args.first().or_skip("an argument is missing")?;
    let fields = tuple_fields(ctx.arg(0)?, si).or_skip("the first argument is not a tuple")?;
    if fields.is_empty() {
        return Err(Skip::new("the tuple of tensors is empty"));
    }
    let mut t = Te::new();
    let mut bufs = Vec::new();
    for (e, s) in &fields {
        bufs.push(t.placeholder(e, s.as_tensor().or_skip("a tuple field is not a tensor")?)?);
    }
    Ok((t, bufs))
}

/// `stack(tensors, axis)`: `T_stack[..., k, ...] = tensors[k][...]`.
fn stack(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, _) = ctx.out_tensor()?;
    let (mut t, bufs) = tuple_inputs(ctx)?;
    if bufs.iter().any(|b| b.shape().len() + 1 != out_shape.len()) {
        return Err(Skip::new("an input rank is not one less than the output's"));
    }
    let axis = norm_axis(attr_int(ctx.call, "axis", 0)?, out_shape.len())?;
    t.compute("T_stack", &out_shape, "ax", |i| {
        let mut idx = i.to_vec();
        idx.remove(axis);
        let mut e = PrimExpr::load(&bufs[0], idx.clone());
        for (k, b) in bufs.iter().enumerate().skip(1) {
            let v = PrimExpr::load(b, idx.clone());
            let cond = PrimExpr::binary(BinOp::Eq, i[axis].clone(), PrimExpr::int_of(k as i64, i[axis].dtype()));
            e = PrimExpr::intrinsic_call(Intrinsic::IfThenElse, v.dtype(), vec![cond, v, e]);
        }
        e
    });
    Ok(finish("stack", t, 1, Vec::new(), ctx.out.clone()))
}

/// `meshgrid(tensors, indexing)`: output `k` repeats input `k` along its
/// axis (`"xy"` swaps the first two axes).
fn meshgrid(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let shapes = out_tuple_shapes(ctx)?;
    let shape = shapes.first().or_skip("the result tuple is empty")?.clone();
    let xy = attr_str(ctx.call, "indexing", "ij") == "xy";
    let (mut t, bufs) = tuple_inputs(ctx)?;
    let n = bufs.len();
    if shape.len() != n || bufs.iter().any(|b| b.shape().len() != 1) {
        return Err(Skip::new(
            "the inputs are not 1-d or the output rank is not their count",
        ));
    }
    for (k, b) in bufs.iter().enumerate() {
        let name = if k == 0 {
            "T_meshgrid".to_string()
        } else {
            format!("T_meshgrid_{k}")
        };
        let axis = if xy && n >= 2 && k < 2 { 1 - k } else { k };
        t.compute(&name, &shape, "ax", |i| PrimExpr::load(b, vec![i[axis].clone()]));
    }
    Ok(finish("meshgrid", t, n, Vec::new(), ctx.out.clone()))
}

/// `one_hot(indices, on_value, off_value, depth, axis)`.
fn one_hot(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, dt) = ctx.out_tensor()?;
    let prim = |i: usize| match ctx.call.args.get(i).map(|e| e.kind()) {
        Some(ExprKind::PrimValue(p)) => Ok(p.clone()),
        _ => Err(Skip::new("the on/off values are not R.prim_value")),
    };
    let (on, off) = (prim(1)?, prim(2)?);
    let (mut t, x, shape) = one_input(ctx)?;
    let axis = norm_axis(attr_int(ctx.call, "axis", -1)?, shape.len() + 1)?;
    if out_shape.len() != shape.len() + 1 {
        return Err(Skip::new("the output rank is not one more than the indices'"));
    }
    t.compute("T_one_hot", &out_shape, "ax", |i| {
        let mut idx = i.to_vec();
        let pos = idx.remove(axis);
        let v = x.at(&idx);
        let v = if v.dtype() == pos.dtype() {
            v
        } else {
            v.cast(pos.dtype())
        };
        let conv = |e: &PrimExpr| if e.dtype() == dt { e.clone() } else { e.clone().cast(dt) };
        PrimExpr::select(PrimExpr::binary(BinOp::Eq, v, pos), conv(&on), conv(&off))
    });
    Ok(finish("one_hot", t, 1, Vec::new(), ctx.out.clone()))
}

/// How an input axis of `layout_transform` is recovered from the output
/// indices: one output axis, or `out[div] * c + out[rem]` for an axis the
/// index map splits into `v // c` and `v % c`.
enum Source {
    Axis(usize),
    Split(usize, usize, i64),
}

/// `layout_transform(x, index_map, pad_value)` for index maps made of the
/// input variables and their `// c`, `% c` splits: every output element reads
/// the input at the inverse map, or `pad_value` past the input's end.
fn layout_transform(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, dt) = ctx.out_tensor()?;
    let Some(relax_ir::AttrValue::Map(map)) = crate::common::attr(ctx.call, "index_map") else {
        return Err(Skip::new("index_map is not a map"));
    };
    let exprs = |key: &str| -> Option<Vec<PrimExpr>> {
        map.get(key)?
            .as_list()?
            .iter()
            .map(|x| match x {
                relax_ir::AttrValue::PrimExpr(e) => Some(e.clone()),
                relax_ir::AttrValue::Int(i) => Some(int(*i)),
                _ => None,
            })
            .collect()
    };
    let params: Option<Vec<TirVar>> = exprs("params").and_then(|ps| ps.iter().map(|e| e.as_var().cloned()).collect());
    let params = params.or_skip("the index map's parameters are not variables")?;
    let results = exprs("results").or_skip("the index map has no results")?;
    let (mut t, x, shape) = one_input(ctx)?;
    if params.len() != shape.len() || results.len() != out_shape.len() {
        return Err(Skip::new("the index map's arity does not match the ranks"));
    }
    let unsupported = || Skip::new("an index map other than axes and their // c, % c splits");
    // every result must be `p`, `p // c` or `p % c`
    let split_of = |r: &PrimExpr, want: BinOp| -> Option<(TirVar, i64)> {
        match r.kind() {
            PrimExprKind::Binary { op, a, b } if *op == want => {
                Some((a.as_var()?.clone(), b.as_int().filter(|&c| c > 0)?))
            }
            _ => None,
        }
    };
    for r in &results {
        if r.as_var().is_none() && split_of(r, BinOp::FloorDiv).is_none() && split_of(r, BinOp::FloorMod).is_none() {
            return Err(unsupported());
        }
    }
    let mut sources = Vec::with_capacity(params.len());
    for p in &params {
        if let Some(k) = results.iter().position(|r| r.as_var() == Some(p)) {
            sources.push(Source::Axis(k));
            continue;
        }
        let find = |op: BinOp| {
            let k = results
                .iter()
                .position(|r| matches!(split_of(r, op), Some((v, _)) if &v == p));
            k.and_then(|k| Some((k, split_of(&results[k], op)?.1)))
                .ok_or_else(unsupported)
        };
        let ((div, c), (rem, c2)) = (find(BinOp::FloorDiv)?, find(BinOp::FloorMod)?);
        if c2 != c {
            return Err(unsupported());
        }
        sources.push(Source::Split(div, rem, c));
    }
    // padding: a split axis whose extent is not a multiple of its factor
    let mut padded = false;
    for (src, d) in sources.iter().zip(&shape) {
        if let Source::Split(_, _, c) = src {
            match d.as_int() {
                Some(e) if e % c == 0 => {}
                Some(_) => padded = true,
                None => return Err(Skip::new("a split axis has a symbolic extent")),
            }
        }
    }
    let pad_value = match crate::common::attr(ctx.call, "pad_value") {
        Some(relax_ir::AttrValue::PrimExpr(p)) => p.clone(),
        Some(relax_ir::AttrValue::Float(f)) => konst(*f, dt),
        Some(relax_ir::AttrValue::Int(i)) => konst(*i as f64, dt),
        _ => konst(0.0, dt),
    };
    let name = if padded {
        "te_layout_transform_with_pad"
    } else {
        "te_layout_transform"
    };
    t.compute(name, &out_shape, "ax", |i| {
        let mut conds = Vec::new();
        let idx: Vec<PrimExpr> = sources
            .iter()
            .zip(&shape)
            .map(|(src, d)| match src {
                Source::Axis(k) => i[*k].clone(),
                Source::Split(a, b, c) => {
                    let v = add(&mul(&i[*a], &int(*c)), &i[*b]);
                    if d.as_int().is_some_and(|e| e % c != 0) {
                        conds.push(PrimExpr::binary(BinOp::Le, d.clone(), v.clone()));
                    }
                    v
                }
            })
            .collect();
        let v = x.at(&idx);
        match conds.into_iter().reduce(|a, b| PrimExpr::binary(BinOp::Or, a, b)) {
            Some(c) => PrimExpr::intrinsic_call(Intrinsic::IfThenElse, dt, vec![c, pad_value.clone(), v]),
            None => v,
        }
    });
    Ok(finish(name, t, 1, Vec::new(), ctx.out.clone()))
}

/// `nn.pad` in `"reflect"` mode: per padded axis with `before = b` and extent
/// `n`, `t = |i - b|` and the source index is `(n-1) - |(n-1) - t|`.
fn reflect_pad(ctx: &LegalizeCtx, out_shape: &[PrimExpr], widths: &[i64]) -> Result<Lowered, Skip> {
    let (mut t, x, shape) = one_input(ctx)?;
    let nd = shape.len();
    if widths.len() != 2 * nd || out_shape.len() != nd {
        return Err(Skip::new("pad_width does not have two entries per dimension"));
    }
    let last: Option<Vec<i64>> = shape.iter().map(|d| d.as_int().map(|e| e - 1)).collect();
    let last = last.or_skip("reflect padding of a symbolic dimension")?;
    if widths
        .iter()
        .zip(last.iter().flat_map(|l| [l, l]))
        .any(|(w, l)| *w > *l)
    {
        return Err(Skip::new("a reflect padding as wide as its dimension"));
    }
    t.compute("ReflectPadInput", out_shape, "i", |i| {
        let idx: Vec<PrimExpr> = (0..nd)
            .map(|d| {
                let (b, a) = (widths[2 * d], widths[2 * d + 1]);
                if b == 0 && a == 0 {
                    return i[d].clone();
                }
                let dist = PrimExpr::select(
                    PrimExpr::binary(BinOp::Le, int(b), i[d].clone()),
                    sub(&i[d], &int(b)),
                    PrimExpr::binary(BinOp::Sub, int(b), i[d].clone()),
                );
                let l = int(last[d]);
                let folded = PrimExpr::select(
                    PrimExpr::binary(BinOp::Le, dist.clone(), l.clone()),
                    PrimExpr::binary(BinOp::Sub, l.clone(), dist.clone()),
                    PrimExpr::binary(BinOp::Sub, dist, l.clone()),
                );
                PrimExpr::binary(BinOp::Sub, l, folded)
            })
            .collect();
        x.at(&idx)
    });
    Ok(finish("reflect_pad", t, 1, Vec::new(), ctx.out.clone()))
}

/// The legalizations of this family's other operators (PrimFunc builders; see
/// [`super::lower_or_skip`]).
pub mod lowered {
    super::super::lowered_legalizations!(
        permute_dims,
        expand_dims,
        squeeze,
        flip,
        reshape,
        concat,
        split,
        broadcast_to,
        tile,
        repeat,
        collapse_sum,
        pad,
        reverse_sequence,
        stack,
        meshgrid,
        one_hot,
        layout_transform,
    );
}

// ---------------------------------------------------------------------------
// reshape family, concat/split, broadcast_to, tile/repeat, collapse_sum, pad
// ---------------------------------------------------------------------------

/// Scalar parameters of a PrimFunc with the Relax argument carrying each.
pub(crate) type ScalarParams = Vec<(TirVar, Expr)>;

/// Finish a builder the way `bb.call_te` lays out the PrimFunc: scalar
/// parameters come after the tensor inputs and before the outputs, and are
/// passed in the argument tuple. `prims` are the scalar variables the body
/// uses with the Relax argument that carries each; those a buffer dimension
/// defines by itself are dropped. Symbolic variables used in a buffer shape
/// that no buffer dimension defines are appended to them.
pub(crate) fn finish(name: &str, t: Te, n_out: usize, prims: ScalarParams, out: StructInfo) -> Lowered {
    let mut args = t.args.clone();
    let n_in = args.len();
    let mut func = t.build(n_out);
    let mut defined: HashSet<u64> = HashSet::new();
    for (_, b) in &func.buffer_map {
        for d in b.shape() {
            if let Some(v) = d.as_var() {
                defined.insert(v.id());
            }
        }
    }
    let mut scalars: ScalarParams = prims.into_iter().filter(|(v, _)| defined.insert(v.id())).collect();
    for (_, b) in &func.buffer_map {
        for d in b.shape() {
            for v in free_tir_vars(d) {
                if defined.insert(v.id()) {
                    let e = Expr::new(ExprKind::PrimValue(v.to_expr()));
                    scalars.push((v, e));
                }
            }
        }
    }
    for (k, (v, e)) in scalars.into_iter().enumerate() {
        func.params.insert(n_in + k, v);
        args.push(e);
    }
    Lowered {
        name: name.to_string(),
        func,
        args,
        out,
        tir_vars: Vec::new(),
    }
}

/// `a * b` with `b = p * q` re-associated to `(a * p) * q`, as TVM's
/// canonical form prints a row-major stride.
fn mul_assoc(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    if let PrimExprKind::Binary {
        op: BinOp::Mul,
        a: p,
        b: q,
    } = b.kind()
    {
        if a.as_int().is_none() {
            return mul(&mul_assoc(a, p), q);
        }
    }
    mul(a, b)
}

/// The row-major flat index of `indices` in `shape` (topi's `RavelIndex`).
pub(crate) fn ravel(indices: &[PrimExpr], shape: &[PrimExpr]) -> PrimExpr {
    let mut idx = match indices.first() {
        Some(i) => i.clone(),
        None => return int(0),
    };
    for (i, d) in indices.iter().zip(shape).skip(1) {
        idx = add(&mul_assoc(&idx, d), i);
    }
    idx
}

/// The indices of flat index `idx` in `shape` (topi's `UnravelIndex`), with
/// the rewrites TVM's simplifier applies to constant strides:
/// `(i // c1) % c2` becomes `i % (c1 * c2) // c1` and chained constant
/// divisions merge.
pub(crate) fn unravel(idx: &PrimExpr, shape: &[PrimExpr]) -> Vec<PrimExpr> {
    let n = shape.len();
    let mut out = vec![int(0); n];
    // `divs`: the divisors applied so far (innermost first), constants merged.
    let mut divs: Vec<PrimExpr> = Vec::new();
    let mut const_stride: Option<i64> = Some(1);
    for j in (0..n).rev() {
        let d = &shape[j];
        out[j] = if d.as_int() == Some(1) {
            int(0)
        } else if let (Some(s), Some(e)) = (const_stride, d.as_int()) {
            if s == 1 {
                floormod(idx, d)
            } else {
                floordiv(&floormod(idx, &int(s * e)), &int(s))
            }
        } else {
            let mut q = idx.clone();
            for v in &divs {
                q = floordiv(&q, v);
            }
            floormod(&q, d)
        };
        const_stride = match (const_stride, d.as_int()) {
            (Some(s), Some(e)) => Some(s * e),
            _ => None,
        };
        match (divs.last().and_then(|l| l.as_int()), d.as_int()) {
            (Some(l), Some(e)) => {
                let k = divs.len() - 1;
                divs[k] = int(l * e);
            }
            _ => divs.push(d.clone()),
        }
    }
    out
}

/// `reshape` / `flatten`: `T_reshape[i...] = x[unravel(ravel(i))]`.
fn reshape(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, mut t, x, in_shape) = out_and_input(ctx)?;
    t.compute("T_reshape", &out_shape, "ax", |i| {
        let flat = ravel(i, &out_shape);
        x.at(&unravel(&flat, &in_shape))
    });
    Ok(finish("reshape", t, 1, Vec::new(), ctx.out.clone()))
}

/// The tensors of a tuple argument: the fields of a tuple literal, or
/// `t[i]` of a tuple-valued variable.
fn tuple_fields(e: &Expr, s: &StructInfo) -> Option<Vec<(Expr, StructInfo)>> {
    let StructInfo::Tuple(fs) = s else { return None };
    match e.kind() {
        ExprKind::Tuple(es) if es.len() == fs.len() => Some(es.iter().cloned().zip(fs.iter().cloned()).collect()),
        _ => Some(
            fs.iter()
                .enumerate()
                .map(|(i, f)| {
                    (
                        Expr::new(ExprKind::TupleGetItem {
                            tuple: e.clone(),
                            index: i,
                        }),
                        f.clone(),
                    )
                })
                .collect(),
        ),
    }
}

fn concat(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, _) = ctx.out_tensor()?;
    let (mut t, bufs) = tuple_inputs(ctx)?;
    let nd = out_shape.len();
    if bufs.iter().any(|b| b.shape().len() != nd) {
        return Err(Skip::new("an input rank differs from the output's"));
    }
    let axis = match attr_opt_int(ctx.call, "axis")? {
        Some(a) => norm_axis(a, nd)?,
        None => 0,
    };
    if bufs.len() > LINEAR_CONCAT
        && bufs
            .iter()
            .any(|b| b.shape().get(axis).and_then(|d| d.as_int()).is_none())
    {
        // Symbolic offsets of many inputs would be sums as deep as the input count.
        return Err(Skip::new(format!(
            "concat of more than {LINEAR_CONCAT} inputs with symbolic extents"
        )));
    }
    // offsets[k]: the start of input k along the axis
    let mut offsets = vec![int(0)];
    for b in &bufs[..bufs.len() - 1] {
        let last = offsets.last().cloned().unwrap_or_else(|| int(0));
        offsets.push(add(&last, &b.shape()[axis]));
    }
    t.compute("T_concat", &out_shape, "ax", |i| {
        let load = |k: usize| {
            let mut idx = i.to_vec();
            idx[axis] = sub_chain(&i[axis], &offsets[k]);
            PrimExpr::load(&bufs[k], idx)
        };
        if bufs.len() > LINEAR_CONCAT {
            // Many inputs: a balanced tree of selects (depth log2 n) instead of TVM's
            // chain, whose depth n overflows every pass that recurses over expressions.
            return balanced(&load, &offsets, &i[axis], 0, bufs.len());
        }
        let mut e = load(0);
        for (k, off) in offsets.iter().enumerate().skip(1) {
            let cond = match off.as_int() {
                Some(_) => PrimExpr::binary(BinOp::Le, off.clone(), i[axis].clone()),
                None => PrimExpr::binary(BinOp::Le, int(0), sub_chain(&i[axis], off)),
            };
            let v = load(k);
            let dt = v.dtype();
            e = PrimExpr::intrinsic_call(Intrinsic::IfThenElse, dt, vec![cond, v, e]);
        }
        e
    });
    Ok(finish("concatenate", t, 1, Vec::new(), ctx.out.clone()))
}

/// The most inputs `concat` legalizes to TVM's chain of `if_then_else`.
const LINEAR_CONCAT: usize = 64;

/// `if_then_else` over inputs `lo..hi` of a concat, split at the middle offset.
fn balanced(load: &dyn Fn(usize) -> PrimExpr, offsets: &[PrimExpr], at: &PrimExpr, lo: usize, hi: usize) -> PrimExpr {
    if hi - lo <= 1 {
        return load(lo);
    }
    let mid = lo + (hi - lo) / 2;
    let cond = PrimExpr::binary(BinOp::Le, offsets[mid].clone(), at.clone());
    let (upper, lower) = (
        balanced(load, offsets, at, mid, hi),
        balanced(load, offsets, at, lo, mid),
    );
    let dt = upper.dtype();
    PrimExpr::intrinsic_call(Intrinsic::IfThenElse, dt, vec![cond, upper, lower])
}

/// `x - (a + b + c)` written as `x - a - b - c` (TVM's form of a symbolic offset).
fn sub_chain(x: &PrimExpr, off: &PrimExpr) -> PrimExpr {
    if let PrimExprKind::Binary { op: BinOp::Add, a, b } = off.kind() {
        return sub(&sub_chain(x, a), b);
    }
    sub(x, off)
}

fn split(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let shapes = out_tuple_shapes(ctx)?;
    let (mut t, x, shape) = one_input(ctx)?;
    let nd = shape.len();
    let axis = norm_axis(attr_int(ctx.call, "axis", 0)?, nd)?;
    if shapes.iter().any(|s| s.len() != nd) {
        return Err(Skip::new("an output rank differs from the input's"));
    }
    let sections = matches!(
        crate::common::attr(ctx.call, "indices_or_sections"),
        Some(relax_ir::AttrValue::Int(_))
    );
    let base = if sections { "T_split_sections" } else { "T_split" };
    let mut start = int(0);
    for (k, s) in shapes.iter().enumerate() {
        let name = if k == 0 {
            base.to_string()
        } else {
            format!("{base}_{k}")
        };
        let off = start.clone();
        t.compute(&name, s, "ax", |i| {
            let mut idx = i.to_vec();
            idx[axis] = add(&i[axis], &off);
            x.at(&idx)
        });
        start = add(&start, &s[axis]);
    }
    Ok(finish("split", t, shapes.len(), Vec::new(), ctx.out.clone()))
}

fn broadcast_to(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, mut t, x, _) = out_and_input(ctx)?;
    t.compute("T_broadcast_to", &out_shape, "ax", |i| x.bcast(i, &out_shape));
    Ok(finish("broadcast_to", t, 1, Vec::new(), ctx.out.clone()))
}

fn tile(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, mut t, x, shape) = out_and_input(ctx)?;
    let (on, nd) = (out_shape.len(), shape.len());
    if on < nd {
        return Err(Skip::new("the output rank is below the input's"));
    }
    t.compute("T_tile", &out_shape, "ax", |i| {
        let idx: Vec<PrimExpr> = (0..nd).map(|d| floormod(&i[on - nd + d], &shape[d])).collect();
        x.at(&idx)
    });
    Ok(finish("tile", t, 1, Vec::new(), ctx.out.clone()))
}

fn repeat(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, mut t, x, shape) = out_and_input(ctx)?;
    let reps = attr_opt_int(ctx.call, "repeats")?.or_skip("repeats is not a constant")?;
    let r = int(reps);
    let axis_attr = attr_opt_int(ctx.call, "axis")?;
    if out_shape.len() != if axis_attr.is_some() { shape.len() } else { 1 } {
        return Err(Skip::new("the output rank does not match the axis"));
    }
    match axis_attr {
        Some(a) => {
            let axis = norm_axis(a, shape.len())?;
            t.compute("T_repeat", &out_shape, "ax", |i| {
                let mut idx = i.to_vec();
                idx[axis] = floordiv(&i[axis], &r);
                x.at(&idx)
            });
        }
        None => {
            // flatten first, then repeat along the only axis
            let flat = vec![crate::common::product(&shape)];
            let fs = flat.clone();
            let reshaped = t.compute("T_reshape", &flat, "ax", |i| {
                let f = ravel(i, &fs);
                x.at(&unravel(&f, &shape))
            });
            t.compute("T_repeat", &out_shape, "ax", |i| {
                PrimExpr::load(&reshaped, vec![floordiv(&i[0], &r)])
            });
        }
    }
    Ok(finish("repeat", t, 1, Vec::new(), ctx.out.clone()))
}

/// `collapse_sum_to` / `collapse_sum_like`: sum over the leading axes the
/// target lacks and over the axes where the target has extent 1.
fn collapse_sum(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (target, mut t, x) = out_and_data(ctx)?;
    // the sum accumulates in the output's dtype
    let dt = ctx.out_tensor()?.1;
    let shape = x.shape().to_vec();
    let (nd, tn) = (shape.len(), target.len());
    if tn > nd {
        return Err(Skip::new("the target rank exceeds the input's"));
    }
    let lead = nd - tn;
    let mut red: Vec<usize> = (0..lead).collect();
    for (j, d) in target.iter().enumerate() {
        if d.as_int() == Some(1) && shape[lead + j].as_int() != Some(1) {
            red.push(lead + j);
        }
    }
    let red_axes: Vec<(String, PrimExpr)> = red.iter().map(|&d| (format!("k{d}"), shape[d].clone())).collect();
    let name = format!("{}_red", x.name());
    t.reduce(
        Reduce::sum(&name, target.clone(), "ax", red_axes, dt),
        |acc, v| PrimExpr::binary(BinOp::Add, acc, v),
        |s, r| {
            let idx: Vec<PrimExpr> = (0..nd)
                .map(|d| match red.iter().position(|&a| a == d) {
                    Some(k) => r[k].clone(),
                    None if shape[d].as_int() == Some(1) => int(0),
                    None => s[d - lead].clone(),
                })
                .collect();
            PrimExpr::load(&x, idx)
        },
    );
    Ok(finish("collapse_sum", t, 1, Vec::new(), ctx.out.clone()))
}

/// `nn.pad` in constant mode: `PadInput[i...] = if_then_else(inside, x[i - before], pad_value)`.
fn pad(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, dt) = ctx.out_tensor()?;
    let widths = attr_opt_ints(ctx.call, "pad_width")?.or_skip("pad_width is missing")?;
    // TVM lowers "reflect" with topi's reflect_pad and every other mode as
    // constant padding
    if attr_str(ctx.call, "pad_mode", "constant") == "reflect" {
        return reflect_pad(ctx, &out_shape, &widths);
    }
    let value = match crate::common::attr(ctx.call, "pad_value") {
        Some(relax_ir::AttrValue::Float(f)) => *f,
        Some(relax_ir::AttrValue::Int(i)) => *i as f64,
        None => 0.0,
        _ => return Err(Skip::new("pad_value is not a number")),
    };
    let (mut t, x, shape) = one_input(ctx)?;
    let nd = shape.len();
    if widths.len() != 2 * nd || out_shape.len() != nd {
        return Err(Skip::new("pad_width does not have two entries per dimension"));
    }
    t.compute("PadInput", &out_shape, "i", |i| {
        let mut conds: Vec<PrimExpr> = Vec::new();
        let mut idx = Vec::new();
        for d in 0..nd {
            let (before, after) = (widths[2 * d], widths[2 * d + 1]);
            // a padded axis gets both bounds (topi), an unpadded one none
            if before != 0 || after != 0 {
                conds.push(PrimExpr::binary(BinOp::Le, int(before), i[d].clone()));
                conds.push(PrimExpr::binary(BinOp::Lt, i[d].clone(), add(&shape[d], &int(before))));
            }
            idx.push(sub(&i[d], &int(before)));
        }
        let v = x.at(&idx);
        match conds.into_iter().reduce(|a, b| PrimExpr::binary(BinOp::And, a, b)) {
            Some(c) => PrimExpr::intrinsic_call(Intrinsic::IfThenElse, dt, vec![c, v, konst(value, dt)]),
            None => v,
        }
    });
    Ok(finish("pad", t, 1, Vec::new(), ctx.out.clone()))
}
