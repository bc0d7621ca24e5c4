//! `slice_scatter(input, src, start, end, step, axis=0)`: `input` with the slice
//! `start:end:step` along `axis` replaced by `src` (torch's `aten.slice_scatter`, which
//! Hugging Face BEiT's relative position index uses).

use crate::error::infer_err;
use relax_ir::tir::BinOp;
use relax_ir::{Call, PrimExpr, StructInfo};

use crate::attrs::{op_attrs, OpAttrs};
use crate::common::*;
use crate::legalize::te::Te;
use crate::legalize::{norm_axis, Emitter, LegalizeCtx, Legalized, Lowered, Skip};
use crate::{InferCtx, OpDef};

op_attrs! {
    /// The attributes (TVM's `SliceScatterAttrs`).
    #[derive(Clone, Debug, PartialEq)]
    pub struct SliceScatterAttrs {
        /// The axis the slice runs along.
        pub axis: i64 = int,
    }
}

/// StructInfo: `input`'s (TVM's `InferStructInfoSliceScatter`, with its messages).
fn infer(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    check_nargs(call, args, 5)?;
    let data = tensor_arg(call, args, 0)?;
    let src = tensor_arg(call, args, 1)?;
    let attrs = SliceScatterAttrs::from_call(call)?;
    if data.ndim != -1 && src.ndim != -1 && data.ndim != src.ndim {
        return Err(infer_err!(
            "SliceScatter op requires the data tensor to have the same rank as the src tensor. However, the given dimensions are src: {}, data: {}",
            src.ndim,
            data.ndim
        ));
    }
    if !data.dtype.is_void() && !src.dtype.is_void() && data.dtype != src.dtype {
        return Err(infer_err!(
            "SliceScatter op requires the input data to have the same type as src. However, the given types are data: {}, src: {}",
            format!("T.{}", data.dtype),
            format!("T.{}", src.dtype)
        ));
    }
    if data.ndim == -1 {
        return Ok(tensor_as(data, data.dtype, data.vdevice.clone()));
    }
    let nd = data.ndim as i64;
    if attrs.axis < -nd || attrs.axis >= nd {
        return Err(infer_err!(
            "SliceScatter requires the input axis to be in the range [{}, {}]. However, the input axis is {}, while ndim is {}",
            -nd,
            nd - 1,
            attrs.axis,
            nd
        ));
    }
    let axis = attrs.axis.rem_euclid(nd) as usize;
    if let (Some(ds), Some(ss)) = (shape_of(data), shape_of(src)) {
        let an = ctx.analyzer;
        if let (Some(start), Some(end), Some(step)) =
            (prim_of(call, args, 2), prim_of(call, args, 3), prim_of(call, args, 4))
        {
            // `ceil((end - start) / step)` elements.
            let num = floordiv(&add(&sub(&end, &start), &sub(&step, &int(1))), &step);
            let num = simplify(an, &num);
            if !prove_eq(an, &ss[axis], &num) && prove_ne(an, &ss[axis], &num) {
                return Err(infer_err!(
                    "SliceScatter op requires the src tensor's dimension at scatter axis ({axis}) to match the number of elements in the slice. Actual src dimension at axis {axis}: {}, Expected elements in slice (num_elem): {}",
                    show(&ss[axis]),
                    show(&num)
                ));
            }
        }
        for (d, (a, b)) in ds.iter().zip(&ss).enumerate() {
            if d != axis && prove_ne(an, a, b) {
                return Err(infer_err!(
                    "SliceScatter op requires the data tensor to have the same shape as the src tensor except at the scatter axis ({axis}). Mismatch at dimension {d}. data shape: {}, src shape: {}",
                    tvm_shape(&ds),
                    tvm_shape(&ss)
                ));
            }
        }
    }
    Ok(tensor_as(data, data.dtype, data.vdevice.clone()))
}

/// A shape as TVM's messages print it: `(T.int64(4), T.int64(5))`.
fn tvm_shape(dims: &[PrimExpr]) -> String {
    let parts: Vec<String> = dims.iter().map(show).collect();
    format!("({})", parts.join(", "))
}

/// Legalization, as topi's `slice_scatter`: each output element is the `src`
/// element `ceil((i - start) / step)` (clipped to `src`'s extent, as topi's `take`)
/// where `i` lies in the slice (`start <= i < end`, `(i - start) % step == 0`), else
/// `input`'s. The slice bounds and the axis extent must be constants, as topi needs.
fn legalize(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    let attrs = SliceScatterAttrs::from_call(ctx.call).map_err(Skip::from)?;
    let konst = |i: usize| {
        prim_of(ctx.call, &ctx.args, i)
            .and_then(|p| p.as_int())
            .ok_or_else(|| Skip::new("start, end and step must be constants (topi's slice_scatter)"))
    };
    let (start, end, step) = (konst(2)?, konst(3)?, konst(4)?);
    if step <= 0 {
        return Err(Skip::new("the step must be positive"));
    }
    let mut t = Te::new();
    let data = ctx.placeholder(&mut t, 0)?;
    let src = ctx.placeholder(&mut t, 1)?;
    let shape = data.shape().to_vec();
    let axis = norm_axis(attrs.axis, shape.len())?;
    if src.shape().len() != shape.len() || src.dtype() != data.dtype() {
        return Err(Skip::new("input and src differ in rank or dtype"));
    }
    let dim = shape[axis]
        .as_int()
        .ok_or_else(|| Skip::new("the extent along the axis must be a constant (topi's slice_scatter)"))?;
    let src_dim = src.shape()[axis].clone();
    t.compute("T_where", &shape, "ax", |i| {
        let x = i[axis].clone();
        let it = x.dtype();
        let c = |v: i64| PrimExpr::int_of(v, it);
        let mut cond = PrimExpr::bool(true);
        let mut and = |e: PrimExpr| cond = PrimExpr::binary(BinOp::And, cond.clone(), e);
        if start != 0 {
            and(PrimExpr::binary(BinOp::Ge, x.clone(), c(start)));
        }
        if end != dim {
            and(PrimExpr::binary(BinOp::Lt, x.clone(), c(end)));
        }
        if step != 1 {
            let r = PrimExpr::binary(
                BinOp::FloorMod,
                PrimExpr::binary(BinOp::Sub, x.clone(), c(start)),
                c(step),
            );
            and(PrimExpr::binary(BinOp::Eq, r, c(0)));
        }
        // topi: clip(floor_divide(i - start + step - 1, step), 0, dim - 1), then
        // `take`'s clip to src's extent.
        let j = PrimExpr::binary(
            BinOp::FloorDiv,
            PrimExpr::binary(
                BinOp::Add,
                PrimExpr::binary(BinOp::Sub, x.clone(), c(start)),
                c(step - 1),
            ),
            c(step),
        );
        let j = PrimExpr::binary(BinOp::Min, PrimExpr::binary(BinOp::Max, j, c(0)), c(dim - 1));
        let last = PrimExpr::binary(BinOp::Sub, src_dim.clone().cast(it), c(1));
        let j = PrimExpr::binary(BinOp::Min, PrimExpr::binary(BinOp::Max, j, c(0)), last);
        let mut at = i.to_vec();
        at[axis] = j;
        PrimExpr::select(cond, PrimExpr::load(&src, at), PrimExpr::load(&data, i.to_vec()))
    });
    Ok(Legalized::call(Lowered::from_te(
        "slice_scatter",
        t,
        1,
        ctx.out.clone(),
    )))
}

/// The operator.
pub const DEF: OpDef = OpDef {
    name: "relax.slice_scatter",
    pure: true,
    infer,
    legalize: Some(legalize),
};
