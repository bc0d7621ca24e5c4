//! `argmax` / `argmin` as `topi` lowers them: one reduction block with a
//! two-value (index, value) accumulator (`{x}_red_temp`), then a copy of the
//! index into the output (`{x}_red`).

use relax_ir::tir::{BinOp, Block, IterKind};
use relax_ir::{Attrs, Buffer, PrimExpr, Span, Stmt, TirVar};

use super::te::{collect_reads, make_iters, max_value, min_value, nest, point_region, regions, Te};
use super::{norm_axis, LegalizeCtx, Lowered, Skip};
use crate::common::{attr_bool, attr_opt_int};

/// The flat index of the reduction position: the reduced axis' variable for
/// one axis; for all axes the row-major offset (constant strides folded when
/// the shape is static, Horner form otherwise).
fn flat_index(r: &[PrimExpr], extents: &[PrimExpr]) -> PrimExpr {
    if r.len() == 1 {
        return r[0].clone();
    }
    let statics: Option<Vec<i64>> = extents.iter().map(|e| e.as_int()).collect();
    match statics {
        Some(ext) => {
            let mut acc: Option<PrimExpr> = None;
            for (i, v) in r.iter().enumerate() {
                let stride: i64 = ext[i + 1..].iter().product();
                let term = if stride == 1 {
                    v.clone()
                } else {
                    PrimExpr::binary(BinOp::Mul, v.clone(), PrimExpr::int(stride))
                };
                acc = Some(match acc {
                    None => term,
                    Some(a) => PrimExpr::binary(BinOp::Add, a, term),
                });
            }
            acc.unwrap_or_else(|| PrimExpr::int(0))
        }
        None => {
            let mut acc = r[0].clone();
            for (v, e) in r.iter().zip(extents).skip(1) {
                acc = PrimExpr::binary(BinOp::Add, PrimExpr::binary(BinOp::Mul, acc, e.clone()), v.clone());
            }
            acc
        }
    }
}

fn arg_reduce(ctx: &LegalizeCtx, name: &str, is_max: bool) -> Result<Lowered, Skip> {
    let (out_shape, idt) = ctx.out_tensor()?;
    let mut t = Te::new();
    let x = ctx.placeholder(&mut t, 0)?;
    let shape = x.shape().to_vec();
    let nd = shape.len();
    let keep = attr_bool(ctx.call, "keepdims", false);
    let axes: Vec<usize> = match attr_opt_int(ctx.call, "axis")? {
        None => (0..nd).collect(),
        Some(a) => vec![norm_axis(a, nd)?],
    };
    let expected_rank = if keep { nd } else { nd - axes.len() };
    if out_shape.len() != expected_rank {
        return Err(Skip::new("the output rank does not match axis and keepdims"));
    }
    let dt = x.dtype();
    let temp = t.unique_name(&format!("{}_red_temp", x.name()));
    let idx_buf = Buffer::new(format!("{temp}_v0"), idt, out_shape.clone());
    let val_buf = Buffer::new(format!("{temp}_v1"), dt, out_shape.clone());

    let snames: Vec<String> = (0..out_shape.len()).map(|i| format!("ax{i}")).collect();
    let (mut loops, mut ivs) = make_iters(&out_shape, &snames, IterKind::DataPar);
    let rnames: Vec<String> = axes.iter().map(|d| format!("k{d}")).collect();
    let rext: Vec<PrimExpr> = axes.iter().map(|&d| shape[d].clone()).collect();
    let (rloops, rivs) = make_iters(&rext, &rnames, IterKind::CommReduce);
    let s: Vec<PrimExpr> = ivs.iter().map(|iv| iv.var.to_expr()).collect();
    let r: Vec<PrimExpr> = rivs.iter().map(|iv| iv.var.to_expr()).collect();
    let xidx = super::statistical::reduce_index(nd, &axes, keep, &s, &r);
    let xv = PrimExpr::load(&x, xidx);
    let k = flat_index(&r, &rext);
    let k = if k.dtype() == idt { k } else { k.cast(idt) };
    let acc_i = PrimExpr::load(&idx_buf, s.clone());
    let acc_v = PrimExpr::load(&val_buf, s.clone());
    let better = |a: PrimExpr, b: PrimExpr| {
        if is_max {
            PrimExpr::binary(BinOp::Gt, a, b)
        } else {
            PrimExpr::binary(BinOp::Lt, a, b)
        }
    };
    // keep the accumulator when it is strictly better, or equal with a smaller index
    let keep_idx = PrimExpr::binary(
        BinOp::Or,
        better(acc_v.clone(), xv.clone()),
        PrimExpr::binary(
            BinOp::And,
            PrimExpr::binary(BinOp::Eq, acc_v.clone(), xv.clone()),
            PrimExpr::binary(BinOp::Lt, acc_i.clone(), k.clone()),
        ),
    );
    let new_i = PrimExpr::select(keep_idx, acc_i, k);
    let new_v = PrimExpr::select(better(acc_v.clone(), xv.clone()), acc_v, xv.clone());
    let li = TirVar::new(format!("v_{temp}_v0"), idt);
    let lv = TirVar::new(format!("v_{temp}_v1"), dt);
    let store = |b: &Buffer, v: PrimExpr| Stmt::BufferStore {
        buffer: b.clone(),
        value: v,
        indices: s.clone(),
        span: Span::NONE,
    };
    let body = Stmt::Let {
        var: li.clone(),
        value: new_i,
        body: Box::new(Stmt::Let {
            var: lv.clone(),
            value: new_v,
            body: Box::new(Stmt::seq(vec![
                store(&idx_buf, li.to_expr()),
                store(&val_buf, lv.to_expr()),
            ])),
        }),
    };
    let init_v = if is_max { min_value(dt) } else { max_value(dt) };
    let init = Stmt::seq(vec![
        store(&idx_buf, PrimExpr::int_of(-1, idt)),
        store(&val_buf, init_v),
    ]);
    let mut reads = Vec::new();
    collect_reads(&xv, &idx_buf, &mut reads);
    loops.extend(rloops);
    ivs.extend(rivs);
    let block = Block {
        name: temp,
        iter_vars: ivs,
        reads: regions(reads),
        writes: vec![point_region(&idx_buf, &s), point_region(&val_buf, &s)],
        init: Some(Box::new(init)),
        alloc_buffers: Vec::new(),
        match_buffers: Vec::new(),
        annotations: Attrs::new(),
        body: Box::new(body),
    };
    t.push_stage(nest(loops, block), vec![idx_buf.clone(), val_buf]);
    t.compute(&format!("{}_red", x.name()), &out_shape, "ax", |i| {
        PrimExpr::load(&idx_buf, i.to_vec())
    });
    Ok(Lowered::from_te(name, t, 1, ctx.out.clone()))
}

/// The legalizations of this family's other operators (PrimFunc builders; see
/// [`super::lower_or_skip`]).
pub mod lowered {
    super::super::lowered_legalizations!(
        argmax => |ctx| super::arg_reduce(ctx, "argmax", true),
        argmin => |ctx| super::arg_reduce(ctx, "argmin", false),
    );
}
