//! `scatter_elements(data, indices, updates, axis=0, reduction="update")`:
//! a copy of `data` where, for every position `p` of `indices`, the element at
//! `p` with its `axis` coordinate replaced by `indices[p]` (negative counts
//! from the end) is combined with `updates[p]`.

use crate::error::infer_err;
use relax_ir::tir::{BinOp, ForKind};
use relax_ir::{Call, PrimExpr, StructInfo};

use crate::attrs::{op_attrs, OpAttrs};
use crate::common::*;
use crate::legalize::extern_kernel::*;
use crate::legalize::manipulate::finish;
use crate::legalize::{norm_axis, Emitter, LegalizeCtx, Legalized, Skip};
use crate::manipulate::gather::{check_scatter_dtypes, scatter_operands};
use crate::{InferCtx, OpDef};

op_attrs! {
    /// The attributes (TVM's `ScatterElementsAttrs`).
    #[derive(Clone, Debug, PartialEq)]
    pub struct ScatterElementsAttrs {
        /// The axis the indices run along.
        pub axis: i64 = int,
        /// `update`, `add`, `mul`, `mean`, `min` or `max`.
        pub reduction: String = str,
    }
}

/// StructInfo: `data`'s (TVM's `InferStructInfoScatterElements`).
fn infer(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let operands = scatter_operands(call, args, "ScatterElements")?;
    let [data, idx, upd] = operands;
    let vd = data.vdevice.clone();
    if data.ndim == -1 {
        return Ok(tensor_ndim(data.dtype, -1, vd));
    }
    if idx.ndim != -1 && upd.ndim != -1 {
        if data.ndim != idx.ndim {
            return Err(infer_err!(
                "ScatterElements op requires the data tensor to have the same rank with indices tensor. However, the given dimensions are indices: {}, data: {}",
                idx.ndim, data.ndim
            ));
        }
        if idx.ndim != upd.ndim {
            return Err(infer_err!(
                "ScatterElements op requires the indices tensor to have the same rank with updates tensor. However, the given dimensions are indices: {}, updates: {}",
                idx.ndim, upd.ndim
            ));
        }
    }
    check_scatter_dtypes("ScatterElements op", operands)?;
    if let (Some(is), Some(us)) = (shape_of(idx), shape_of(upd)) {
        for (a, b) in is.iter().zip(&us) {
            if prove_ne(ctx.analyzer, a, b) {
                return Err(infer_err!(
                    "ScatterElements op requires the indices tensor to have the same shape with updates tensor. However, the given shapes are indices: {}, updates: {}",
                    show_shape(&is),
                    show_shape(&us)
                ));
            }
        }
    }
    Ok(tensor_as(data, data.dtype, vd))
}

/// Legalization, as topi's generic kernel: copy `data`, then for every
/// index position (outer positions in parallel, the `axis` positions in
/// order) write the combined update.
fn legalize(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    let attrs = ScatterElementsAttrs::from_call(ctx.call).map_err(Skip::from)?;
    let (reduction, mut t, data) = scatter_start(ctx, &attrs.reduction, true)?;
    let indices = tensor_input(&mut t, ctx, 1)?;
    let updates = tensor_input(&mut t, ctx, 2)?;
    let shape = data.shape().to_vec();
    let ishape = indices.shape().to_vec();
    let nd = shape.len();
    if ishape.len() != nd || updates.shape().len() != nd || updates.dtype() != data.dtype() {
        return Err(Skip::new("data, indices and updates differ in rank or dtype"));
    }
    let axis = norm_axis(attrs.axis, nd)?;
    let idt = indices.dtype();
    let axis_range = shape[axis].clone();
    let after = fused(&shape[axis + 1..]);
    let full = fused(&shape);
    let before_stride = mul(&axis_range, &after);
    let ind_axis = ishape[axis].clone();
    let ind_before = fused(&ishape[..axis]);
    let ind_after = fused(&ishape[axis + 1..]);
    let ind_before_stride = mul(&ind_axis, &ind_after);

    let out = extern_output(data.dtype(), shape.clone());
    let i = loop_var();
    let copy = loop_over(
        &i,
        &full,
        ForKind::Parallel,
        store_flat(&out, &i.to_expr(), load_flat(&data, &i.to_expr())),
    );
    let f = loop_var();
    let k = loop_var();
    let fe = f.to_expr();
    let (oi, oj) = (floordiv(&fe, &ind_after), floormod(&fe, &ind_after));
    let pre1 = add(&mul(&oi, &ind_before_stride), &oj);
    let pre2 = add(&mul(&oi, &before_stride), &oj);
    let index1 = add(&pre1, &mul(&k.to_expr(), &ind_after));
    let k_new = load_flat(&indices, &index1);
    let negative = PrimExpr::binary(BinOp::Lt, k_new.clone(), PrimExpr::int_of(0, idt));
    // narrower indices are widened to the shape's type (TVM's operand matching)
    let wide = axis_range.dtype();
    let k_wide = if idt == wide { k_new } else { k_new.cast(wide) };
    let shifted = add(&k_wide, &mul(&negative.cast(wide), &axis_range));
    let index2 = add(&pre2, &mul(&shifted, &after));
    let write = reduction.store(&out, &index2, load_flat(&updates, &index1));
    let scatter = loop_over(
        &f,
        &mul(&ind_before, &ind_after),
        ForKind::Parallel,
        loop_over(&k, &ind_axis, ForKind::Serial, write),
    );
    push_extern(&mut t, "scatter_elements.generic", vec![copy, scatter], &out);
    let mut lowered = finish("scatter_elements", t, 1, Vec::new(), ctx.out.clone());
    drop_trivial_root(&mut lowered.func);
    Ok(Legalized::call(lowered))
}

/// The operator.
pub const DEF: OpDef = OpDef {
    name: "relax.scatter_elements",
    pure: true,
    infer,
    legalize: Some(legalize),
};
