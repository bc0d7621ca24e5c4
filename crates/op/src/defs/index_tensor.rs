//! `index_tensor(data, indices)`: NumPy advanced indexing `data[I0, ..., Ik-1]`
//! with a tuple of `k` integer index tensors, broadcast together to a common
//! shape `B`; the result has shape `B + data.shape[k:]`.
//!
//! As in TVM (`topi.adv_index`), indices are not wrapped or clamped: a negative
//! or too large index reads outside `data`, which the run reports as an
//! out-of-bounds read when the flat position leaves the buffer.

use crate::error::{infer_err, InferError, InferErrorKind};
use relax_ir::{Call, Expr, ExprKind, PrimExpr, StructInfo};

use crate::common::*;
use crate::legalize::te::{Operand, Te};
use crate::legalize::{Emitter, LegalizeCtx, Legalized, Lowered, OrSkip, Skip};
use crate::{InferCtx, OpDef};

/// StructInfo (TVM's `InferStructInfoIndexTensor`): the index shapes broadcast
/// from the right (an extent 1 yields to the other; extents not provably
/// equal make the result's shape, and its rank, unknown), followed by the
/// data's axes that are not indexed.
fn infer(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    if args.len() != 2 {
        return Err(InferError::new(
            InferErrorKind::Arity,
            "Index.Tensor op should have 2 arguments",
        ));
    }
    let data = tensor_arg(call, args, 0)?;
    let indices = tuple_of_tensors(call, &args[1])?;
    if indices.is_empty() {
        return Err(InferError::new(
            InferErrorKind::ArgKind,
            "index_tensor expects a non\u{2011}empty tuple of index tensors",
        ));
    }
    let vd = data.vdevice.clone();
    for (i, t) in indices.iter().enumerate() {
        if !t.dtype.is_void() && !t.dtype.is_int() {
            return Err(infer_err!(
                "index_tensor requires every index tensor to have an integer dtype; index {i} has dtype T.{}",
                t.dtype
            ));
        }
    }
    let k = indices.len();
    if data.ndim != -1 && k > data.ndim as usize {
        return Err(infer_err!(
            "index_tensor received {k} index tensors, but data has only {} dimensions",
            data.ndim
        ));
    }
    let mut shapes = Vec::new();
    let mut all_known = true;
    let mut max_ndim = 0usize;
    for t in &indices {
        match shape_of(t) {
            Some(s) => {
                max_ndim = max_ndim.max(s.len());
                shapes.push(s);
            }
            None => all_known = false,
        }
        if t.ndim != -1 {
            max_ndim = max_ndim.max(t.ndim as usize);
        }
    }
    let mut unknown = !all_known;
    let mut bshape = None;
    if all_known {
        let mut out = vec![int(1); max_ndim];
        'shapes: for s in &shapes {
            for axis in 0..max_ndim {
                let Some(r) = s.len().checked_sub(axis + 1) else { break };
                let l = max_ndim - 1 - axis;
                let (lhs, rhs) = (&out[l], &s[r]);
                if lhs.as_int() == Some(1) {
                    out[l] = rhs.clone();
                    continue;
                }
                if rhs.as_int() == Some(1) {
                    continue;
                }
                if let (Some(a), Some(b)) = (lhs.as_int(), rhs.as_int()) {
                    if a != b {
                        return Err(infer_err!(
                            "index_tensor: cannot broadcast index shapes. Mismatch at axis {l}: {} vs {}",
                            show(lhs),
                            show(rhs)
                        ));
                    }
                }
                if !prove_eq(ctx.analyzer, lhs, rhs) {
                    unknown = true;
                    break 'shapes;
                }
            }
        }
        if !unknown {
            bshape = Some(out);
        }
    }
    let mut out_ndim = -1;
    if data.ndim != -1 {
        let tail = data.ndim - k as i32;
        if let Some(b) = &bshape {
            out_ndim = b.len() as i32 + tail;
        } else if !unknown {
            out_ndim = max_ndim as i32 + tail;
        }
    }
    if let (Some(mut b), Some(ds)) = (bshape, shape_of(data)) {
        b.extend(ds[k..].iter().cloned());
        return Ok(tensor(b, data.dtype, vd));
    }
    Ok(tensor_ndim(data.dtype, out_ndim, vd))
}

/// Legalization (TVM: each index bound with `TupleGetItem`, then
/// `topi.index_tensor`, i.e. `topi.adv_index`): with several indices each is
/// broadcast to the common shape in a `T_broadcast_to` stage, then
/// `advanced_index[b..., r...] = data[I0[b...], ..., Ik-1[b...], r...]`.
fn legalize(ctx: &LegalizeCtx, em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    let data_e = ctx.arg(0)?;
    let data_s = ctx
        .args
        .first()
        .and_then(StructInfo::as_tensor)
        .or_skip("the data is not a tensor")?;
    let tuple = ctx.arg(1)?;
    let Some(StructInfo::Tuple(fields)) = ctx.args.get(1) else {
        return Err(Skip::new("the indices are not a tuple"));
    };
    let (out_shape, _) = ctx.out_tensor()?;
    let data_shape = data_s.shape_values().or_skip("the data's shape is not known")?.to_vec();
    let k = fields.len();
    if k == 0 || k > data_shape.len() || out_shape.len() < data_shape.len() - k {
        return Err(Skip::new("the index count does not fit the data's rank"));
    }
    for f in fields {
        let t = f.as_tensor().or_skip("an index is not a tensor")?;
        t.shape_values().or_skip("an index's shape is not known")?;
        if !t.dtype.is_int() {
            return Err(Skip::new("an index's dtype is not a known integer type"));
        }
    }
    let mut t = Te::new();
    let data = t.placeholder(data_e, data_s)?;
    let mut idx = Vec::with_capacity(k);
    for (i, f) in fields.iter().enumerate() {
        let item = Expr::new(ExprKind::TupleGetItem {
            tuple: tuple.clone(),
            index: i,
        });
        let name = if i == 0 { "gv".to_string() } else { format!("gv{i}") };
        let v = em.emit(&name, item, f.clone());
        let ts = f.as_tensor().or_skip("an index is not a tensor")?;
        idx.push(t.placeholder(&v, ts)?);
    }
    let nb = out_shape.len() - (data_shape.len() - k);
    let bshape = out_shape[..nb].to_vec();
    let bidx: Vec<relax_ir::Buffer> = if k == 1 {
        idx
    } else {
        idx.iter()
            .map(|b| {
                let op = Operand::Tensor(b.clone());
                t.compute("T_broadcast_to", &bshape, "ax", |i| op.bcast(i, &bshape))
            })
            .collect()
    };
    t.compute("advanced_index", &out_shape, "ax", |i| {
        let mut at: Vec<PrimExpr> = bidx.iter().map(|b| PrimExpr::load(b, i[..nb].to_vec())).collect();
        at.extend(i[nb..].iter().cloned());
        PrimExpr::load(&data, at)
    });
    let mut lowered = Lowered::from_te("index_tensor", t, 1, ctx.out.clone());
    crate::legalize::index::data_read_first(&mut lowered.func, &data);
    Ok(Legalized::call(lowered))
}

/// The operator.
pub const DEF: OpDef = OpDef {
    name: "relax.index_tensor",
    pure: true,
    infer,
    legalize: Some(legalize),
};
