//! `scatter_nd(data, indices, updates, reduction="update")`: a copy of
//! `data` where, for every position `p` of `indices[..., :]` (the last axis
//! holds `m` coordinates), the slice of `data` at those coordinates is
//! combined with `updates[p]`.

use crate::error::infer_err;
use relax_ir::tir::ForKind;
use relax_ir::{Call, PrimExpr, StructInfo};

use crate::attrs::{op_attrs, OpAttrs};
use crate::common::*;
use crate::legalize::extern_kernel::*;
use crate::legalize::index::last_axis_first;
use crate::legalize::manipulate::finish;
use crate::legalize::{Emitter, LegalizeCtx, Legalized, OrSkip, Skip};
use crate::manipulate::gather::{check_scatter_dtypes, scatter_operands};
use crate::{InferCtx, OpDef};

op_attrs! {
    /// The attributes (TVM's `ScatterNDAttrs`).
    #[derive(Clone, Debug, PartialEq)]
    pub struct ScatterNdAttrs {
        /// `update`, `add`, `mul`, `min` or `max`.
        pub reduction: String = str,
    }
}

/// StructInfo: `data`'s (TVM's `InferStructInfoScatterND`).
fn infer(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let operands = scatter_operands(call, args, "ScatterND op")?;
    let [data, idx, upd] = operands;
    if data.dtype.is_void() || upd.dtype.is_void() {
        return Err(infer_err!(
            "ScatterND op requires the input data and updates to have known dtype. However, the given types are data: {}, updates: {}",
            data.dtype, upd.dtype
        ));
    }
    check_scatter_dtypes("ScatterND op", operands)?;
    let vd = data.vdevice.clone();
    if let (Some(ds), Some(is), Some(us)) = (shape_of(data), shape_of(idx), shape_of(upd)) {
        let Some(k) = is.last().and_then(|d| d.as_int()) else {
            return Err(infer_err!(
                "ScatterND needs a static shape for the last axis of indices, got {}",
                show_shape(&is)
            ));
        };
        if ds.len() as i64 + is.len() as i64 - k - 1 != us.len() as i64 {
            return Err(infer_err!(
                "ScatterND op requires the updates tensor to have the rank of `data tensor + indices tensor - last axis of indices tensor - 1`. However, the given shapes are data: {}, indices: {}, updates: {}",
                show_shape(&ds),
                show_shape(&is),
                show_shape(&us)
            ));
        }
        if k > ds.len() as i64 || k < 0 {
            return Err(infer_err!(
                "ScatterND op requires the last axis of indices tensor to be less than or equal to the rank of data tensor. However, the given shapes are data: {}, indices: {}",
                show_shape(&ds),
                show_shape(&is)
            ));
        }
        let mut expected: Vec<PrimExpr> = is[..is.len() - 1].to_vec();
        expected.extend(ds[k as usize..].iter().cloned());
        let ok = expected.len() == us.len() && expected.iter().zip(&us).all(|(a, b)| prove_eq(ctx.analyzer, a, b));
        if !ok {
            return Err(infer_err!(
                "ScatterND op requires the updates tensor to have the shape with constraint: `updates.shape = indices.shape[:-1] + data.shape[K:]`, but got updates.shape: {}, indices.shape: {}, data.shape: {}",
                show_shape(&us),
                show_shape(&is),
                show_shape(&ds)
            ));
        }
    }
    Ok(tensor_as(data, data.dtype, vd))
}

/// Legalization: TVM moves the last axis of `indices` to the front
/// (`T_transpose`), then runs topi's generic kernel (index positions in
/// order, the updated slice in parallel).
fn legalize(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    let attrs = ScatterNdAttrs::from_call(ctx.call).map_err(Skip::from)?;
    let (reduction, mut t, data) = scatter_start(ctx, &attrs.reduction, false)?;
    let ind = ctx.placeholder(&mut t, 1)?;
    let updates = tensor_input(&mut t, ctx, 2)?;
    if !is_int_or_uint(ind.dtype()) || updates.dtype() != data.dtype() {
        return Err(Skip::new(
            "indices are not integers, or updates differ from data in dtype",
        ));
    }
    let is = ind.shape().to_vec();
    let k = is.len();
    let m = is
        .last()
        .and_then(PrimExpr::as_int)
        .or_skip("the last axis of indices is not a constant")?;
    let shape = data.shape().to_vec();
    let m = usize::try_from(m)
        .ok()
        .filter(|&m| m <= shape.len())
        .or_skip("indices address more axes than data has")?;
    let tr = last_axis_first(&mut t, &ind);
    let tshape = tr.shape().to_vec();
    let fused_indices = fused(&tshape[1..]);
    let fused_updates = fused(updates.shape().get(k - 1..).or_skip("updates have too few axes")?);
    let out = extern_output(data.dtype(), shape.clone());
    let i = loop_var();
    let copy = loop_over(
        &i,
        &fused(&shape),
        ForKind::Serial,
        store_flat(&out, &i.to_expr(), load_flat(&data, &i.to_expr())),
    );
    let (iv, jv) = (loop_var(), loop_var());
    let (ie, je) = (iv.to_expr(), jv.to_expr());
    let mut offset = fused_updates.clone();
    let mut index = je.clone();
    for l in (0..m).rev() {
        let at = add(&ie, &mul(&PrimExpr::int(l as i64), &fused_indices));
        let mut coord = load_flat(&tr, &at);
        if coord.dtype() != index.dtype() {
            coord = coord.cast(index.dtype());
        }
        index = add(&index, &mul(&offset, &coord));
        offset = mul(&offset, &shape[l]);
    }
    let upd = load_flat(&updates, &add(&mul(&ie, &fused_updates), &je));
    let write = reduction.store(&out, &index, upd);
    let scatter = loop_over(
        &iv,
        &fused_indices,
        ForKind::Serial,
        loop_over(&jv, &fused_updates, ForKind::Parallel, write),
    );
    push_extern(&mut t, "scatter_nd.generic", vec![copy, scatter], &out);
    Ok(Legalized::call(finish("scatter_nd", t, 1, Vec::new(), ctx.out.clone())))
}

/// The operator.
pub const DEF: OpDef = OpDef {
    name: "relax.scatter_nd",
    pure: true,
    infer,
    legalize: Some(legalize),
};
