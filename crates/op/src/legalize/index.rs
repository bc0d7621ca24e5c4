//! Indexing operators: `take`, `strided_slice`, `gather_elements`, `gather_nd`.

use relax_ir::tir::{BinOp, Block, For};
use relax_ir::visit::free_tir_vars;
use relax_ir::{Expr, ExprKind, PrimExpr, Stmt, StructInfo, TirVar};

use super::manipulate::finish;
use super::te::Te;
use super::unary::out_and_data;
use super::{norm_axis, LegalizeCtx, Lowered, OrSkip, Skip};
use crate::common::{add, attr_bool, attr_opt_int, attr_str, int, max, min, mul, sub};

/// The scalar variables of `e` with the Relax argument carrying each (a
/// `PrimValue` of the variable).
fn prim_params(e: &PrimExpr) -> Vec<(TirVar, Expr)> {
    free_tir_vars(e)
        .into_iter()
        .map(|v| {
            let arg = Expr::new(ExprKind::PrimValue(v.to_expr()));
            (v, arg)
        })
        .collect()
}

/// `take(x, indices, axis, mode)`.
fn take(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, mut t, x) = out_and_data(ctx)?;
    let shape = x.shape().to_vec();
    let nd = shape.len();
    let axis = match attr_opt_int(ctx.call, "axis")? {
        Some(a) => norm_axis(a, nd)?,
        None if nd == 1 => 0,
        None => return Err(Skip::new("take without an axis needs 1-d data")),
    };
    let mode = attr_str(ctx.call, "mode", "fast").to_string();
    let ie = ctx.arg(1)?;
    // the indices: a tensor, an inlined scalar expression, or a scalar parameter
    enum Idx {
        Tensor(relax_ir::Buffer),
        Scalar(PrimExpr),
    }
    let mut prims = Vec::new();
    let idx = match (ie.kind(), ctx.args.get(1).or_skip("an argument is missing")?) {
        (ExprKind::PrimValue(p), _) => {
            prims.extend(prim_params(p));
            Idx::Scalar(p.clone())
        }
        (ExprKind::Var(v), StructInfo::Prim(p)) => {
            // the scalar variable itself is passed; its value names the parameter
            let tv = match p.value.as_ref().and_then(|e| e.as_var()) {
                Some(tv) => tv.clone(),
                None => TirVar::new(v.name(), p.dtype),
            };
            prims.push((tv.clone(), ie.clone()));
            Idx::Scalar(tv.to_expr())
        }
        (_, StructInfo::Tensor(ts)) => Idx::Tensor(t.placeholder(ie, ts)?),
        _ => return Err(Skip::new("the indices are neither a tensor nor a scalar")),
    };
    let ni = match &idx {
        Idx::Tensor(b) => b.shape().len(),
        Idx::Scalar(_) => 0,
    };
    if out_shape.len() + 1 != nd + ni {
        return Err(Skip::new("the output rank does not match the data and indices"));
    }
    let dim = shape[axis].clone();
    t.compute("T_take", &out_shape, "ax", |i| {
        let raw = match &idx {
            Idx::Tensor(b) => PrimExpr::load(b, i[axis..axis + ni].to_vec()),
            Idx::Scalar(e) => e.clone(),
        };
        let at = match mode.as_str() {
            "clip" => min(&max(&PrimExpr::int_of(0, raw.dtype()), &raw), &sub(&dim, &int(1))),
            "wrap" => {
                let m = PrimExpr::binary(BinOp::Mod, raw, dim.clone());
                PrimExpr::binary(BinOp::Mod, add(&m, &dim), dim.clone())
            }
            _ => raw,
        };
        let mut full = Vec::with_capacity(nd);
        full.extend(i[..axis].iter().cloned());
        full.push(at);
        full.extend(i[axis + ni..].iter().cloned());
        PrimExpr::load(&x, full)
    });
    let mut lowered = finish("take", t, 1, prims, ctx.out.clone());
    data_read_first(&mut lowered.func, &x);
    Ok(lowered)
}

/// Visit every block of a statement.
pub(crate) fn for_each_block(s: &mut Stmt, f: &mut dyn FnMut(&mut Block)) {
    match s {
        Stmt::For(For { body, .. }) => for_each_block(body, f),
        Stmt::Seq(v) => v.iter_mut().for_each(|x| for_each_block(x, f)),
        Stmt::BlockRealize { block, .. } => {
            f(block);
            for_each_block(&mut block.body, f);
        }
        _ => {}
    }
}

/// The `PrimExpr`s of a tuple-of-`PrimValue` argument.
fn prims_of(ctx: &LegalizeCtx, i: usize) -> Result<Vec<PrimExpr>, Skip> {
    let s = ctx.args.get(i).or_skip("an argument is missing")?;
    crate::index::unpack_prims(ctx.arg(i)?, s).or_skip("axes, begin, end or strides are not a tuple of integers")
}

/// topi's canonical begin of a slice along an axis of extent `dim`.
fn canonical_begin(b: &PrimExpr, dim: &PrimExpr, stride: i64) -> PrimExpr {
    let (lo, hi) = if stride < 0 {
        (int(-1), sub(dim, &int(1)))
    } else {
        (int(0), dim.clone())
    };
    if let (Some(v), Some(d)) = (b.as_int(), dim.as_int()) {
        let v = if v < 0 { v.saturating_add(d) } else { v };
        let (l, h) = (lo.as_int().unwrap_or(0), hi.as_int().unwrap_or(d));
        return int(v.max(l).min(h));
    }
    let wrapped = match b.as_int() {
        Some(v) if v >= 0 => b.clone(),
        _ => crate::index::if_then_else(crate::index::lt0(b), add(b, dim), b.clone()),
    };
    min(&max(&wrapped, &lo), &hi)
}

/// `strided_slice(x, axes, begin, end, strides, assume_inbound)`.
fn strided_slice(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, mut t, x) = out_and_data(ctx)?;
    let shape = x.shape().to_vec();
    let nd = shape.len();
    let axes = prims_of(ctx, 1)?;
    let begin = prims_of(ctx, 2)?;
    let strides = match ctx.call.args.len() > 4 {
        true => prims_of(ctx, 4)?,
        false => vec![int(1); axes.len()],
    };
    if begin.len() != axes.len() || strides.len() != axes.len() {
        return Err(Skip::new("axes, begin and strides differ in length"));
    }
    if out_shape.len() != nd {
        return Err(Skip::new("the output rank differs from the data's"));
    }
    let inbound = attr_bool(ctx.call, "assume_inbound", false);
    // per input axis: (begin, stride)
    let mut per_axis: Vec<Option<(PrimExpr, i64)>> = vec![None; nd];
    let mut prims = Vec::new();
    for k in 0..axes.len() {
        let a = norm_axis(axes[k].as_int().or_skip("an axis is symbolic")?, nd)?;
        let s = strides[k].as_int().or_skip("a stride is symbolic")?;
        if s == 0 {
            return Err(Skip::new("a stride is 0"));
        }
        let b = if inbound {
            begin[k].clone()
        } else {
            canonical_begin(&begin[k], &shape[a], s)
        };
        prims.extend(prim_params(&b));
        per_axis[a] = Some((b, s));
    }
    let dynamic = shape.iter().chain(begin.iter()).any(|d| d.as_int().is_none());
    let name = if dynamic {
        "T_dynamic_strided_slice_with_axes"
    } else {
        "T_strided_slice_with_axes"
    };
    t.compute(name, &out_shape, "ax", |i| {
        let idx: Vec<PrimExpr> = (0..nd)
            .map(|d| match &per_axis[d] {
                None => i[d].clone(),
                Some((b, s)) => {
                    let step = if *s == 1 {
                        i[d].clone()
                    } else {
                        mul(&i[d], &int(s.abs()))
                    };
                    if *s < 0 {
                        sub(b, &step)
                    } else if b.as_int().is_some() || inbound {
                        add(&step, b)
                    } else {
                        add(b, &step)
                    }
                }
            })
            .collect();
        PrimExpr::load(&x, idx)
    });
    Ok(finish("strided_slice", t, 1, prims, ctx.out.clone()))
}

/// Move the reads of `first` to the front of every block's read list (topi
/// lists the data read before the index read nested in its subscript).
pub(crate) fn data_read_first(f: &mut relax_ir::PrimFunc, first: &relax_ir::Buffer) {
    for_each_block(&mut f.body, &mut |b| {
        if let Some(k) = b.reads.iter().position(|r| &r.buffer == first) {
            let r = b.reads.remove(k);
            b.reads.insert(0, r);
        }
    });
}

/// `gather_elements(x, indices, axis)`: `out[i] = x[i with i[axis] = indices[i]]`.
fn gather_elements(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, mut t, x) = out_and_data(ctx)?;
    let ind = ctx.placeholder(&mut t, 1)?;
    let nd = x.shape().len();
    let axis = norm_axis(crate::common::attr_int(ctx.call, "axis", 0)?, nd)?;
    if out_shape.len() != nd || ind.shape().len() != nd {
        return Err(Skip::new("the data, indices and output ranks differ"));
    }
    t.compute("T_gather", &out_shape, "ax", |i| {
        let mut idx = i.to_vec();
        let mut at = PrimExpr::load(&ind, i.to_vec());
        if at.dtype() != i[axis].dtype() {
            at = at.cast(i[axis].dtype());
        }
        idx[axis] = at;
        PrimExpr::load(&x, idx)
    });
    let mut lowered = finish("gather", t, 1, Vec::new(), ctx.out.clone());
    data_read_first(&mut lowered.func, &x);
    Ok(lowered)
}

/// `gather_nd(x, indices, batch_dims)`: the last axis of `indices` holds `m`
/// coordinates into the axes of `x` after its `batch_dims` leading (batch) axes,
/// which the output's leading axes index; TVM first moves that axis of `indices`
/// to the front (`T_transpose`), as topi's `gather_nd`.
fn gather_nd(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    let (out_shape, _) = ctx.out_tensor()?;
    let b = crate::common::attr_int(ctx.call, "batch_dims", 0)?;
    let b = usize::try_from(b).ok().or_skip("a negative batch_dims")?;
    let mut t = Te::new();
    let x = ctx.placeholder(&mut t, 0)?;
    let ind = ctx.placeholder(&mut t, 1)?;
    let is = ind.shape().to_vec();
    let k = is.len();
    if k == 0 {
        return Err(Skip::new("0-d indices"));
    }
    let m = is[k - 1].as_int().and_then(|m| usize::try_from(m).ok());
    let m = m.or_skip("the last dimension of the indices is symbolic")?;
    let xr = x.shape().len();
    if m + b > xr || b > k - 1 || out_shape.len() != k - 1 + xr - m - b {
        return Err(Skip::new(
            "the indices' last dimension and batch_dims do not fit the data's rank",
        ));
    }
    let tr = last_axis_first(&mut t, &ind);
    let outer = k - 1;
    t.compute("T_gather_nd", &out_shape, "ax", |i| {
        let mut idx: Vec<PrimExpr> = i[..b].to_vec();
        for j in 0..m {
            let mut ti = vec![PrimExpr::int(j as i64)];
            ti.extend(i[..outer].iter().cloned());
            let mut v = PrimExpr::load(&tr, ti);
            if v.dtype() != i[0].dtype() {
                v = v.cast(i[0].dtype());
            }
            idx.push(v);
        }
        idx.extend(i[outer..].iter().cloned());
        PrimExpr::load(&x, idx)
    });
    let mut lowered = finish("te_gather_nd", t, 1, Vec::new(), ctx.out.clone());
    data_read_first(&mut lowered.func, &x);
    Ok(lowered)
}

/// `T_transpose` of `ind` with axes `(k-1, 0, 1, ..., k-2)`: the coordinates
/// held along the last axis move to the front (as TVM's `gather_nd` and
/// `scatter_nd` legalizations write it).
pub(crate) fn last_axis_first(t: &mut Te, ind: &relax_ir::Buffer) -> relax_ir::Buffer {
    let is = ind.shape();
    let k = is.len();
    let mut tshape = is[k.saturating_sub(1)..].to_vec();
    tshape.extend(is[..k.saturating_sub(1)].iter().cloned());
    t.compute("T_transpose", &tshape, "ax", |i| {
        let mut idx: Vec<PrimExpr> = i.get(1..).map(<[PrimExpr]>::to_vec).unwrap_or_default();
        idx.extend(i.first().cloned());
        PrimExpr::load(ind, idx)
    })
}

/// The legalizations of this family's other operators (PrimFunc builders; see
/// [`super::lower_or_skip`]).
pub mod lowered {
    super::super::lowered_legalizations!(take, strided_slice, gather_elements, gather_nd,);
}
