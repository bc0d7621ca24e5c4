//! `vision.roi_align(data, rois, pooled_size, spatial_scale, sample_ratio=-1,
//! aligned=False, layout="NCHW", mode="avg")`: for each region of interest
//! (`rois[i] = [batch_index, x1, y1, x2, y2]`, image coordinates scaled by
//! `spatial_scale`) a `pooled_size` grid of bins, each the average (or the
//! maximum) of bilinear samples of `data` on a regular grid in the bin, as TVM's
//! `relax.vision.roi_align` and topi's `vision.roi_align`.

use relax_ir::tir::{BinOp, Block, For, ForKind, Intrinsic, IterKind};
use relax_ir::{Buffer, Call, DataType, PrimExpr, Span, Stmt, StructInfo, TirVar};

use crate::attrs::{op_attrs, OpAttrs};
use crate::common::*;
use crate::error::infer_err;
use crate::legalize::te::{add, konst, make_iters, min_value, mul, nest, point_region, sub, whole_region, Te};
use crate::legalize::{Emitter, LegalizeCtx, Legalized, Lowered, Skip};
use crate::{InferCtx, OpDef};

op_attrs! {
    /// The attributes (TVM's `ROIAlignAttrs`).
    #[derive(Clone, Debug, PartialEq)]
    pub struct RoiAlignAttrs {
        /// Output bins per region: `[height, width]`.
        pub pooled_size: Vec<i64> = ints,
        /// Image coordinates to feature-map coordinates.
        pub spatial_scale: f64 = float,
        /// Samples per bin and axis; non-positive: `ceil(region / pooled)`.
        pub sample_ratio: i64 = int,
        /// Without the legacy clamp of a region to at least one pixel.
        pub aligned: bool = bool,
        /// `"NCHW"` or `"NHWC"`.
        pub layout: String = str,
        /// `"avg"` or `"max"`.
        pub mode: String = str,
    }
}

/// StructInfo: `data`'s dtype, shape `(num_roi, C, ph, pw)` (`NCHW`) or
/// `(num_roi, ph, pw, C)` (`NHWC`); TVM's checks of ranks, the rois' last
/// extent, the layout and the mode.
fn infer(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let ts = tensor_args(call, args, 2)?;
    let (data, rois) = (ts[0], ts[1]);
    let attrs = RoiAlignAttrs::from_call(call)?;
    if attrs.pooled_size.len() != 2 {
        return Err(infer_err!(
            "ROIAlign expects pooled_size of two values, got {:?}",
            attrs.pooled_size
        ));
    }
    let nhwc = match attrs.layout.as_str() {
        "NCHW" => false,
        "NHWC" => true,
        other => {
            return Err(infer_err!(
                "ROIAlign only supports NCHW and NHWC layout, but got {other}"
            ))
        }
    };
    if !matches!(attrs.mode.as_str(), "avg" | "max") {
        return Err(infer_err!(
            "ROIAlign only supports avg and max mode, but got {}",
            attrs.mode
        ));
    }
    if data.ndim != -1 && data.ndim != 4 {
        return Err(infer_err!(
            "ROIAlign expects the input data to be 4-D, while the given data has ndim {}",
            data.ndim
        ));
    }
    if rois.ndim != -1 && rois.ndim != 2 {
        return Err(infer_err!(
            "ROIAlign expects the rois tensor to be 2-D, while the given rois has ndim {}",
            rois.ndim
        ));
    }
    let rshape = shape_of(rois);
    if let Some(last) = rshape.as_ref().and_then(|s| s.get(1)).and_then(|d| d.as_int()) {
        if last != 5 {
            return Err(infer_err!(
                "ROIAlign expects rois to have shape (num_roi, 5), but got last dimension {last}"
            ));
        }
    }
    let vd = data.vdevice.clone();
    let (Some(ds), Some(rs)) = (shape_of(data), rshape) else {
        return Ok(tensor_ndim(data.dtype, 4, vd));
    };
    let (ph, pw) = (int(attrs.pooled_size[0]), int(attrs.pooled_size[1]));
    let channels = ds[if nhwc { 3 } else { 1 }].clone();
    let out = if nhwc {
        vec![rs[0].clone(), ph, pw, channels]
    } else {
        vec![rs[0].clone(), channels, ph, pw]
    };
    Ok(tensor(out, data.dtype, vd))
}

/// `op(a, b)`.
fn bin(op: BinOp, a: PrimExpr, b: PrimExpr) -> PrimExpr {
    PrimExpr::binary(op, a, b)
}

/// `cast(int32, f(x))` for `floor`/`ceil` computed in `dt`.
fn to_i32(f: Intrinsic, dt: DataType, x: PrimExpr) -> PrimExpr {
    PrimExpr::intrinsic_call(f, dt, vec![x]).cast(DataType::INT32)
}

/// `a && b`.
fn and(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    PrimExpr::binary(BinOp::And, a, b)
}

/// `if_then_else(cond, a, b)` of `dt`.
fn select(dt: DataType, cond: PrimExpr, a: PrimExpr, b: PrimExpr) -> PrimExpr {
    PrimExpr::intrinsic_call(Intrinsic::IfThenElse, dt, vec![cond, a, b])
}

/// Legalization, as topi's `roi_align_nchw`/`roi_align_nhwc`: per output
/// element, a reduction over the bin's sample grid, whose extent is computed from
/// the region (data-dependent when `sample_ratio <= 0`), so the reduction loops
/// sit inside the element's block.
fn legalize(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    let attrs = RoiAlignAttrs::from_call(ctx.call).map_err(Skip::from)?;
    let nhwc = attrs.layout == "NHWC";
    let avg = attrs.mode == "avg";
    let (out_shape, out_dt) = ctx.out_tensor()?;
    let mut t = Te::new();
    let data = ctx.placeholder(&mut t, 0)?;
    let rois = ctx.placeholder(&mut t, 1)?;
    let dt = rois.dtype();
    if !(dt.code == relax_ir::TypeCode::Float && dt.bits >= 16) || data.dtype() != dt {
        return Err(Skip::new("data and rois must be of the same float dtype"));
    }
    if data.shape().len() != 4 || rois.shape().len() != 2 || out_shape.len() != 4 {
        return Err(Skip::new("data must be 4-D and rois 2-D"));
    }
    let ds = data.shape();
    let (height, width) = if nhwc {
        (ds[1].clone(), ds[2].clone())
    } else {
        (ds[2].clone(), ds[3].clone())
    };
    let f = |v: f64| konst(v, dt);
    let float = |x: PrimExpr| x.cast(dt);
    let div = |a: PrimExpr, b: PrimExpr| bin(BinOp::Div, a, b);
    let (pooled_h, pooled_w) = (attrs.pooled_size[0] as f64, attrs.pooled_size[1] as f64);
    let names: Vec<String> = if nhwc {
        ["i", "ph", "pw", "c"]
    } else {
        ["i", "c", "ph", "pw"]
    }
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (loops, ivs) = make_iters(&out_shape, &names, IterKind::DataPar);
    let v: Vec<PrimExpr> = ivs.iter().map(|iv| iv.var.to_expr()).collect();
    let (i, c, ph, pw) = if nhwc {
        (v[0].clone(), v[3].clone(), v[1].clone(), v[2].clone())
    } else {
        (v[0].clone(), v[1].clone(), v[2].clone(), v[3].clone())
    };
    let roi = |k: i64| PrimExpr::load(&rois, vec![i.clone(), PrimExpr::int_of(k, DataType::INT64)]);
    let scaled = |k: i64| mul(roi(k), f(attrs.spatial_scale));
    let batch = roi(0).cast(DataType::INT32);
    let (start_w, start_h, end_w, end_h) = (scaled(1), scaled(2), scaled(3), scaled(4));
    let extent = |end: PrimExpr, start: PrimExpr| {
        let d = sub(end, start);
        if attrs.aligned {
            d
        } else {
            bin(BinOp::Max, d, f(1.0))
        }
    };
    let roi_h = extent(end_h.clone(), start_h.clone());
    let roi_w = extent(end_w.clone(), start_w.clone());
    let bin_h = div(roi_h.clone(), f(pooled_h));
    let bin_w = div(roi_w.clone(), f(pooled_w));
    let grid = |r: PrimExpr, pooled: f64| {
        if attrs.sample_ratio > 0 {
            PrimExpr::int_of(attrs.sample_ratio, DataType::INT32)
        } else {
            to_i32(Intrinsic::Ceil, dt, div(r, f(pooled)))
        }
    };
    // A region with a coordinate or batch index that is not finite has no samples
    // and gives NaN (TVM's result is undefined there: LLVM's `fptosi` of the sample
    // count; one rule for every device instead).
    let finite = [roi(0), start_w.clone(), start_h.clone(), end_w.clone(), end_h.clone()]
        .into_iter()
        .map(|c| PrimExpr::intrinsic_call(Intrinsic::Isfinite, DataType::BOOL, vec![c]))
        .reduce(and)
        .unwrap_or_else(|| PrimExpr::bool(true));
    let no_samples = |g: PrimExpr| select(DataType::INT32, finite.clone(), g, PrimExpr::int_of(0, DataType::INT32));
    let grid_h = no_samples(grid(roi_h, pooled_h));
    let grid_w = no_samples(grid(roi_w, pooled_w));
    let count = PrimExpr::binary(BinOp::Mul, grid_h.clone(), grid_w.clone());
    let start_h = add(start_h, mul(float(ph), bin_h.clone()));
    let start_w = add(start_w, mul(float(pw), bin_w.clone()));
    let (rh, rw) = (TirVar::new("rh", DataType::INT32), TirVar::new("rw", DataType::INT32));
    let sample = |start: PrimExpr, r: &TirVar, bin: PrimExpr, g: &PrimExpr| {
        let off = mul(add(float(r.to_expr()), f(0.5)), bin);
        add(start, div(off, float(g.clone())))
    };
    let y = sample(start_h, &rh, bin_h, &grid_h);
    let x = sample(start_w, &rw, bin_w, &grid_w);
    let (height_f, width_f) = (float(height.clone()), float(width.clone()));
    let outside = [
        bin(BinOp::Lt, y.clone(), f(-1.0)),
        bin(BinOp::Lt, x.clone(), f(-1.0)),
        bin(BinOp::Gt, y.clone(), height_f.clone()),
        bin(BinOp::Gt, x.clone(), width_f.clone()),
    ]
    .into_iter()
    .reduce(|a, b| PrimExpr::binary(BinOp::Or, a, b))
    .unwrap_or_else(|| PrimExpr::bool(false));
    let one_i64 = PrimExpr::int_of(1, DataType::INT64);
    let max_y = PrimExpr::binary(BinOp::Sub, height.clone(), one_i64.clone());
    let max_x = PrimExpr::binary(BinOp::Sub, width.clone(), one_i64);
    let clamp = |p: PrimExpr, max: &PrimExpr| bin(BinOp::Min, bin(BinOp::Max, p, f(0.0)), float(max.clone()));
    let (yc, xc) = (clamp(y, &max_y), clamp(x, &max_x));
    // topi's `bilinear_sample_nchw`: four guarded corner terms, x outer, y inner.
    let (y_low, x_low) = (
        to_i32(Intrinsic::Floor, dt, yc.clone()),
        to_i32(Intrinsic::Floor, dt, xc.clone()),
    );
    let one_i32 = PrimExpr::int_of(1, DataType::INT32);
    let y_high = PrimExpr::binary(BinOp::Add, y_low.clone(), one_i32.clone());
    let x_high = PrimExpr::binary(BinOp::Add, x_low.clone(), one_i32);
    let wy_h = sub(yc, float(y_low.clone()));
    let wx_h = sub(xc, float(x_low.clone()));
    let wy_l = sub(f(1.0), wy_h.clone());
    let wx_l = sub(f(1.0), wx_h.clone());
    let within = |p: &PrimExpr, max: &PrimExpr| {
        let p = p.clone().cast(DataType::INT64);
        and(
            PrimExpr::binary(BinOp::Le, PrimExpr::int_of(0, DataType::INT64), p.clone()),
            PrimExpr::binary(BinOp::Le, p, max.clone()),
        )
    };
    let n64 = batch.cast(DataType::INT64);
    let mut val: Option<PrimExpr> = None;
    for (wx, xp) in [(wx_l, x_low), (wx_h, x_high)] {
        for (wy, yp) in [(wy_l.clone(), y_low.clone()), (wy_h.clone(), y_high.clone())] {
            let (yi, xi) = (yp.clone().cast(DataType::INT64), xp.clone().cast(DataType::INT64));
            let at = if nhwc {
                vec![n64.clone(), yi, xi, c.clone()]
            } else {
                vec![n64.clone(), c.clone(), yi, xi]
            };
            let term = select(
                dt,
                and(within(&yp, &max_y), within(&xp, &max_x)),
                mul(mul(wx.clone(), wy), PrimExpr::load(&data, at)),
                f(0.0),
            );
            val = Some(match val {
                None => term,
                Some(s) => add(s, term),
            });
        }
    }
    let val = select(dt, outside, f(0.0), val.unwrap_or_else(|| f(0.0)));
    let out = Buffer::new(t.unique_name("compute"), out_dt, out_shape.clone());
    let acc = PrimExpr::load(&out, v.clone());
    let (init, update) = if avg {
        (f(0.0), add(acc, div(val, float(count))))
    } else {
        (min_value(dt), bin(BinOp::Max, acc, val))
    };
    let init = select(dt, finite, init, f(f64::NAN));
    let store = |value: PrimExpr| Stmt::BufferStore {
        buffer: out.clone(),
        value,
        indices: v.clone(),
        span: Span::NONE,
    };
    let inner = Stmt::For(For::from_zero(rw.clone(), grid_w, ForKind::Serial, store(update)));
    let body = Stmt::seq(vec![
        store(init),
        Stmt::For(For::from_zero(rh.clone(), grid_h, ForKind::Serial, inner)),
    ]);
    let block = Block {
        name: out.name().to_string(),
        iter_vars: ivs,
        reads: vec![whole_region(&rois), whole_region(&data)],
        writes: vec![point_region(&out, &v)],
        init: None,
        alloc_buffers: Vec::new(),
        match_buffers: Vec::new(),
        annotations: Default::default(),
        body: Box::new(body),
    };
    t.push_stage(nest(loops, block), vec![out]);
    Ok(Legalized::call(Lowered::from_te("roi_align", t, 1, ctx.out.clone())))
}

/// The operator.
pub const DEF: OpDef = OpDef {
    name: "relax.vision.roi_align",
    pure: true,
    infer,
    legalize: Some(legalize),
};
