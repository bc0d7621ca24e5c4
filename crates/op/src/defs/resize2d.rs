//! `image.resize2d(data, size, roi=None, layout="NCHW", method="linear",
//! coordinate_transformation_mode="half_pixel", rounding_method="round",
//! cubic_alpha=-0.75, cubic_exclude=0, extrapolation_value=0.0,
//! out_dtype=None)`: resizes the two spatial axes of `data` to `size`
//! (`R.shape([height, width])`), as TVM's `relax.image.resize2d` and topi's
//! `image.resize2d`.
//!
//! Each output pixel maps back to a source coordinate (the coordinate
//! transformation: `half_pixel`, `align_corners`, `asymmetric`,
//! `pytorch_half_pixel`, `tf_half_pixel_for_nn`, or `tf_crop_and_resize` inside
//! `roi = [start_h, start_w, end_h, end_w]`, `extrapolation_value` outside the
//! image), then takes the nearest pixel (by `rounding_method`), interpolates the
//! two by two neighbours (`linear`), or the four by four (`cubic`: Keys' spline
//! with `cubic_alpha`; `cubic_exclude` drops the neighbours outside the image and
//! renormalizes the weights). Neighbours outside the image read the border pixel.

use relax_ir::tir::{BinOp, Intrinsic};
use relax_ir::{AttrValue, Call, DataType, ExprKind, PrimExpr, StructInfo, TypeCode};

use crate::attrs::{AttrReader, OpAttrs};
use crate::common::{self, kind_name, op_name, shape_of, tensor, tensor_ndim, Res};
use crate::error::{infer_err, InferError};
use crate::legalize::te::Te;
use crate::legalize::{Emitter, LegalizeCtx, Legalized, Lowered, Skip};
use crate::{InferCtx, OpDef};

/// The attributes (TVM's `Resize2DAttrs`).
#[derive(Clone, Debug, PartialEq)]
pub struct Resize2DAttrs {
    /// The region of interest `[start_h, start_w, end_h, end_w]` (fractions of the
    /// image), used by `tf_crop_and_resize` only. TVM holds `float32` constants
    /// with the values as written (`0.1`, not its `float32` rounding).
    pub roi: Vec<f64>,
    /// The data layout: any order of `N`, `C`, `H`, `W` (with split sub-axes)
    /// for inference; `NCHW` or `NHWC` for the legalization.
    pub layout: String,
    /// `"nearest_neighbor"`, `"linear"` or `"cubic"`.
    pub method: String,
    /// How an output coordinate maps to the input.
    pub coordinate_transformation_mode: String,
    /// How `nearest_neighbor` picks a pixel: `"round"`, `"round_prefer_floor"`,
    /// `"round_prefer_ceil"`, `"floor"`, `"ceil"` (`""`: `round` with
    /// `align_corners`, else `floor`).
    pub rounding_method: String,
    /// The cubic spline's coefficient.
    pub cubic_alpha: f64,
    /// Non-zero: cubic weights of neighbours outside the image are dropped.
    pub cubic_exclude: i64,
    /// The value of `tf_crop_and_resize` outside the image.
    pub extrapolation_value: f64,
    /// The output dtype (unset: the data's).
    pub out_dtype: Option<DataType>,
}

impl OpAttrs for Resize2DAttrs {
    fn from_call(call: &Call) -> Result<Self, InferError> {
        let r = AttrReader::new(call);
        let number = |v: &AttrValue| match v {
            AttrValue::PrimExpr(p) => p.as_float().or_else(|| p.as_int().map(|i| i as f64)),
            AttrValue::Float(f) => Some(*f),
            AttrValue::Int(i) => Some(*i as f64),
            _ => None,
        };
        let roi = match r.value("roi")? {
            AttrValue::List(items) => items.iter().map(number).collect::<Option<Vec<f64>>>(),
            AttrValue::None => Some(vec![0.0; 4]),
            v => number(&v).map(|x| vec![x; 4]),
        }
        .ok_or_else(|| infer_err!(Attr; "{}: attribute `roi` must be a list of numbers", op_name(call)))?;
        Ok(Resize2DAttrs {
            roi,
            layout: r.str("layout")?,
            method: r.str("method")?,
            coordinate_transformation_mode: r.str("coordinate_transformation_mode")?,
            rounding_method: r.str("rounding_method")?,
            cubic_alpha: r.float("cubic_alpha")?,
            cubic_exclude: r.int("cubic_exclude")?,
            extrapolation_value: r.float("extrapolation_value")?,
            out_dtype: r.opt_dtype("out_dtype")?,
        })
    }
}

/// A layout's axes: the primal letter and, for a split sub-axis (`4c`), its factor.
fn parse_layout(s: &str) -> Option<Vec<(char, Option<i64>)>> {
    let mut axes = Vec::new();
    let mut factor: Option<i64> = None;
    for c in s.chars() {
        if let Some(d) = c.to_digit(10) {
            factor = Some(factor.unwrap_or(0).checked_mul(10)?.checked_add(d as i64)?);
        } else if c.is_ascii_uppercase() && factor.is_none() {
            axes.push((c, None));
        } else if c.is_ascii_lowercase() {
            let f = factor.take().filter(|&f| f > 0)?;
            axes.push((c.to_ascii_uppercase(), Some(f)));
        } else {
            return None;
        }
    }
    factor.is_none().then_some(axes)
}

/// TVM's type key of an argument expression, as `GetTypeKey` names it in messages.
fn type_key(call: &Call, i: usize, sinfo: &StructInfo) -> String {
    match call.args.get(i).map(|e| e.kind()) {
        Some(ExprKind::Var(v)) if v.is_dataflow() => "relax.expr.DataflowVar".into(),
        Some(ExprKind::Var(_)) => "ir.Var".into(),
        Some(ExprKind::Tuple(_)) => "ir.Tuple".into(),
        Some(ExprKind::ShapeExpr(_)) => "relax.expr.ShapeExpr".into(),
        Some(ExprKind::Constant { .. }) => "ir.GenericConst".into(),
        _ => kind_name(sinfo).into(),
    }
}

/// StructInfo as TVM's `InferStructInfoResize2D`: `data` a tensor of the layout's
/// rank (or unknown rank), `size` a shape of two values; the result has the
/// data's shape with the `H` and `W` axes (by the layout) set to `size`, of
/// `out_dtype` (default the data's). A `size` that is not a `ShapeExpr` (a
/// shape variable) gives the rank only, as TVM.
fn infer(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    if args.len() != 2 || call.args.len() != 2 {
        return Err(infer_err!(Arity;
            "Resize2D expects 2 arguments, while the given number of arguments is {}",
            args.len()
        ));
    }
    let StructInfo::Tensor(data) = &args[0] else {
        return Err(infer_err!(ArgKind;
            "Resize2D expects the input data to be a Tensor, while the given data is {}",
            type_key(call, 0, &args[0])
        ));
    };
    let StructInfo::Shape(size) = &args[1] else {
        return Err(infer_err!(ArgKind;
            "Resize2D expects the given output image size to be a Shape, while the given one is {}",
            type_key(call, 1, &args[1])
        ));
    };
    if size.ndim != 2 {
        return Err(infer_err!(
            "Resize2D expects the given output image size to be a 2-dim shape, while the given one has ndim {}",
            size.ndim
        ));
    }
    let attrs = Resize2DAttrs::from_call(call)?;
    let layout = attrs.layout.as_str();
    let axes = parse_layout(layout).ok_or_else(|| infer_err!("Invalid layout {layout}"))?;
    let mut primals: Vec<char> = axes.iter().filter(|a| a.1.is_none()).map(|a| a.0).collect();
    primals.sort_unstable();
    let subs_ok = axes.iter().filter(|a| a.1.is_some()).all(|a| primals.contains(&a.0));
    if primals != ['C', 'H', 'N', 'W'] || !subs_ok {
        return Err(infer_err!(
            "{} requires the given data layout to be convertible from NCHW layout. However, the given layout {layout} is not convertible.",
            op_name(call)
        ));
    }
    let out_dtype = attrs.out_dtype.unwrap_or(data.dtype);
    let nd = axes.len();
    if data.ndim != -1 && data.ndim as usize != nd {
        return Err(infer_err!(
            "In {}, layout {layout} requires the input to be {nd}-dim tensor. However, the given input has ndim {}",
            op_name(call),
            data.ndim
        ));
    }
    let vd = data.vdevice.clone();
    let size_values = match call.args[1].kind() {
        ExprKind::ShapeExpr(v) if v.len() == 2 => Some(v.clone()),
        _ => None,
    };
    let (Some(ds), Some(sv)) = (shape_of(data), size_values) else {
        return Ok(tensor_ndim(out_dtype, nd as i32, vd));
    };
    let factor = |p: char| axes.iter().find(|a| a.0 == p && a.1.is_some()).and_then(|a| a.1);
    let out = axes
        .iter()
        .zip(&ds)
        .map(|(&(c, sub), d)| {
            let target = match c {
                'H' => &sv[0],
                'W' => &sv[1],
                _ => return d.clone(),
            };
            match (sub, factor(c)) {
                (None, None) => target.clone(),
                // The outer part of a split spatial axis: `ceil(size / factor)`.
                (None, Some(f)) => common::floordiv(&common::add(target, &common::int(f - 1)), &common::int(f)),
                (Some(_), _) => d.clone(),
            }
        })
        .collect();
    Ok(tensor(out, out_dtype, vd))
}

// ----------------------------------------------------------------------------
// Legalization

const F32: DataType = DataType::FLOAT32;

/// A `float32` constant.
fn c(v: f64) -> PrimExpr {
    PrimExpr::float_of(v, F32)
}

/// `x` as `float32`: an integer constant folds, an expression is cast.
fn fl(x: &PrimExpr) -> PrimExpr {
    match x.as_int() {
        Some(i) => c(i as f64),
        None => x.clone().cast(F32),
    }
}

/// `a op b` on `float32` values with TVM's constant folding (`arith::TryConstFold`):
/// two constants combine in `float32` arithmetic, `0 + x` and `x + 0` are `x`,
/// `x * 1` and `1 * x` are `x`.
fn f(op: BinOp, a: PrimExpr, b: PrimExpr) -> PrimExpr {
    if let (Some(x), Some(y)) = (a.as_float(), b.as_float()) {
        let (x, y) = (x as f32, y as f32);
        let folded = match op {
            BinOp::Add => Some(x + y),
            BinOp::Sub => Some(x - y),
            BinOp::Mul => Some(x * y),
            BinOp::Div if y != 0.0 => Some(x / y),
            _ => None,
        };
        if let Some(v) = folded {
            return c(v as f64);
        }
    }
    match (op, a.as_float(), b.as_float()) {
        (BinOp::Add, Some(0.0), _) => b,
        (BinOp::Add | BinOp::Sub, _, Some(0.0)) => a,
        (BinOp::Mul, Some(1.0), _) => b,
        (BinOp::Mul | BinOp::Div, _, Some(1.0)) => a,
        _ => PrimExpr::binary(op, a, b),
    }
}

fn add(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    f(BinOp::Add, a, b)
}
fn sub(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    f(BinOp::Sub, a, b)
}
fn mul(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    f(BinOp::Mul, a, b)
}
fn div(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    f(BinOp::Div, a, b)
}

/// A comparison (`Lt`, `Gt`) of `float32` values.
fn cmp(op: BinOp, a: PrimExpr, b: PrimExpr) -> PrimExpr {
    PrimExpr::binary(op, a, b)
}

/// `if_then_else(cond, a, b)` of `float32`; a constant condition picks its branch.
fn select(cond: PrimExpr, a: PrimExpr, b: PrimExpr) -> PrimExpr {
    match cond.as_int() {
        Some(0) => b,
        Some(_) => a,
        None => PrimExpr::intrinsic_call(Intrinsic::IfThenElse, F32, vec![cond, a, b]),
    }
}

/// `target > 1` on an extent (folded when it is constant).
fn above_one(target: &PrimExpr) -> PrimExpr {
    match target.as_int() {
        Some(t) => PrimExpr::bool(t > 1),
        None => PrimExpr::binary(BinOp::Gt, target.clone(), PrimExpr::int_of(1, target.dtype())),
    }
}

/// `fn(x)` of a `float32` value, as `float32`.
fn call(op: Intrinsic, x: PrimExpr) -> PrimExpr {
    PrimExpr::intrinsic_call(op, F32, vec![x])
}

/// `floor(x)` as an `int32` index.
fn floor_i32(x: PrimExpr) -> PrimExpr {
    call(Intrinsic::Floor, x).cast(DataType::INT32)
}

/// One spatial axis: the input extent, the output extent, the `roi` bounds.
struct Axis {
    image: PrimExpr,
    target: PrimExpr,
    start: f64,
    end: f64,
    /// topi's `can_convert_multiply_to_intdiv`: nearest `asymmetric` sampling by
    /// an integer upscale factor reads `x / factor` in integers.
    int_div: Option<i64>,
}

impl Axis {
    /// topi's `get_inx`: the source coordinate of output index `x` (a `float32`,
    /// or an `int64` quotient when `int_div` is set).
    fn source(&self, x: &PrimExpr, mode: &str) -> PrimExpr {
        if let Some(k) = self.int_div {
            return PrimExpr::binary(BinOp::Div, x.clone(), PrimExpr::int_of(k, x.dtype()));
        }
        let xf = fl(x);
        let scale = div(fl(&self.image), fl(&self.target));
        let one = PrimExpr::int_of(1, self.image.dtype());
        let image_m1 = common::sub(&self.image, &one);
        let target_m1 = common::sub(&self.target, &one);
        let half_pixel = || sub(mul(add(xf.clone(), c(0.5)), scale.clone()), c(0.5));
        match mode {
            "half_pixel" => half_pixel(),
            "align_corners" => mul(div(fl(&image_m1), fl(&target_m1)), xf),
            "asymmetric" => mul(scale, xf),
            "pytorch_half_pixel" => select(above_one(&self.target), half_pixel(), c(0.0)),
            "tf_half_pixel_for_nn" => mul(add(xf, c(0.5)), scale),
            _ => {
                // tf_crop_and_resize
                let (start, end) = (c(self.start), c(self.end));
                let gt1 = above_one(&self.target);
                let inside = || {
                    let offset = mul(start.clone(), fl(&image_m1));
                    let step = div(
                        mul(mul(xf.clone(), sub(end.clone(), start.clone())), fl(&image_m1)),
                        fl(&target_m1),
                    );
                    add(offset, step)
                };
                let centre = || mul(mul(c(0.5), add(start.clone(), end.clone())), fl(&image_m1));
                // A constant extent of 1 takes the centre without building the
                // other branch (TVM folds `x / 0.0` there and fails).
                match gt1.as_int() {
                    Some(0) => centre(),
                    Some(_) => inside(),
                    None => select(gt1, inside(), centre()),
                }
            }
        }
    }
}

/// topi's `get_closest_index`: the nearest pixel of source coordinate `x` (an
/// `int32` index).
fn closest(x: PrimExpr, rounding: &str, int_div: bool) -> PrimExpr {
    if int_div {
        return x.cast(DataType::INT32);
    }
    let r = match rounding {
        // `T.round` rounds half to even, as TVM's LLVM target lowers it.
        "round" => call(Intrinsic::Round, x),
        "round_prefer_floor" => call(Intrinsic::Ceil, sub(x, c(0.5))),
        "round_prefer_ceil" => call(Intrinsic::Floor, add(x, c(0.5))),
        // topi's epsilon against rounding errors.
        "floor" => call(Intrinsic::Floor, add(x, c(1e-5))),
        _ => call(Intrinsic::Ceil, sub(x, c(1e-5))),
    };
    r.cast(DataType::INT32)
}

/// topi's `_cubic_spline_weights`: the four weights of fraction `t`.
fn cubic_weights(t: &PrimExpr, alpha: f64) -> [PrimExpr; 4] {
    let t2 = mul(t.clone(), t.clone());
    let t3 = mul(mul(t.clone(), t.clone()), t.clone());
    [
        mul(c(alpha), add(sub(t3.clone(), mul(c(2.0), t2.clone())), t.clone())),
        add(
            sub(mul(c(alpha + 2.0), t3.clone()), mul(c(3.0 + alpha), t2.clone())),
            c(1.0),
        ),
        sub(
            add(
                mul(c(-(alpha + 2.0)), t3.clone()),
                mul(c(3.0 + 2.0 * alpha), t2.clone()),
            ),
            mul(c(alpha), t.clone()),
        ),
        add(mul(c(-alpha), t3), mul(c(alpha), t2)),
    ]
}

/// `sum(a_i * w_i)` in topi's order (`_cubic_kernel`).
fn kernel(p: [PrimExpr; 4], w: &[PrimExpr; 4]) -> PrimExpr {
    let [p0, p1, p2, p3] = p;
    let s = add(mul(p0, w[0].clone()), mul(p1, w[1].clone()));
    add(add(s, mul(p2, w[2].clone())), mul(p3, w[3].clone()))
}

/// `a * (1 - t) + b * t` (`_lerp`).
fn lerp(a: PrimExpr, b: PrimExpr, t: PrimExpr) -> PrimExpr {
    add(mul(a, sub(c(1.0), t.clone())), mul(b, t))
}

/// Whether the resize handles data or output of dtype `dt`: integers and floats
/// of at least 16 bits (not `bool`, not the 8- and 4-bit floats).
fn supported(dt: DataType) -> bool {
    match dt.code {
        TypeCode::Int | TypeCode::UInt => dt.bits >= 8 && dt.lanes == 1,
        TypeCode::Float | TypeCode::BFloat => dt.bits >= 16 && dt.lanes == 1,
        _ => false,
    }
}

/// topi's `can_convert_multiply_to_intdiv`: the integer factor `target / image`
/// when both extents are constants and the ratio (folded in `float32`, as TVM) is
/// whole and below `1 / (1e-5 * image + 1e-5)`. A symbolic input extent takes the
/// float path (TVM's check fails there: its ratio is not a constant).
fn int_factor(image: &PrimExpr, target: &PrimExpr) -> Option<i64> {
    let (w, t) = (image.as_int()?, target.as_int()?);
    if w <= 0 {
        return None;
    }
    let ratio = t as f32 / w as f32;
    let eps = 1e-5f32;
    let check = 1.0 / (eps * w as f32 + eps);
    if ratio.fract() != 0.0 || ratio > check {
        return None;
    }
    (t / w > 0).then_some(t / w)
}

/// Legalization, as topi's `resize2d` (`NCHW` and `NHWC`): one `compute`
/// stage over the output. As topi, every pixel is read as `float32` and
/// coordinates, weights and sums are `float32` (for `float16`, `float64` and
/// integer data too); the result is cast to the output dtype (an integer one
/// truncates). Where the two differ, the result has `out_dtype`, which TVM's
/// legalization does not pass to topi (TVM's run gives the data's dtype under a
/// StructInfo that says `out_dtype`).
fn legalize(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    let attrs = Resize2DAttrs::from_call(ctx.call).map_err(Skip::from)?;
    let nhwc = match attrs.layout.as_str() {
        "NCHW" => false,
        "NHWC" => true,
        other => return Err(Skip::new(format!("layout {other} (only NCHW and NHWC)"))),
    };
    let method = attrs.method.as_str();
    if !matches!(method, "nearest_neighbor" | "linear" | "cubic") {
        return Err(Skip::new(format!("method {method:?}")));
    }
    let mode = attrs.coordinate_transformation_mode.as_str();
    if !matches!(
        mode,
        "half_pixel"
            | "align_corners"
            | "asymmetric"
            | "pytorch_half_pixel"
            | "tf_half_pixel_for_nn"
            | "tf_crop_and_resize"
    ) {
        return Err(Skip::new(format!("coordinate transformation mode {mode:?}")));
    }
    let rounding = match attrs.rounding_method.as_str() {
        "" if mode == "align_corners" => "round",
        "" => "floor",
        r => r,
    };
    if method == "nearest_neighbor"
        && !matches!(
            rounding,
            "round" | "round_prefer_floor" | "round_prefer_ceil" | "floor" | "ceil"
        )
    {
        return Err(Skip::new(format!("rounding method {rounding:?}")));
    }
    if attrs.roi.len() != 4 {
        return Err(Skip::new(format!("a roi of {} values (4 expected)", attrs.roi.len())));
    }
    let (out_shape, out_dt) = ctx.out_tensor()?;
    let mut t = Te::new();
    let data = ctx.placeholder(&mut t, 0)?;
    let dt = data.dtype();
    if !supported(dt) {
        return Err(ctx.unsupported_dtype(dt));
    }
    if !supported(out_dt) {
        return Err(ctx.unsupported_dtype(out_dt));
    }
    let ds = data.shape().to_vec();
    if ds.len() != 4 || out_shape.len() != 4 {
        return Err(Skip::new("data and result must be 4-D"));
    }
    let (hi, wi) = if nhwc { (1, 2) } else { (2, 3) };
    let int_div = method == "nearest_neighbor" && mode == "asymmetric" && rounding == "floor";
    let axis = |i: usize, start: f64, end: f64| Axis {
        image: ds[i].clone(),
        target: out_shape[i].clone(),
        start,
        end,
        int_div: if int_div {
            int_factor(&ds[i], &out_shape[i])
        } else {
            None
        },
    };
    let (ay, ax) = (
        axis(hi, attrs.roi[0], attrs.roi[2]),
        axis(wi, attrs.roi[1], attrs.roi[3]),
    );
    if mode == "align_corners" && [&ay, &ax].iter().any(|a| a.target.as_int() == Some(1)) {
        return Err(Skip::new("align_corners to an extent of 1 (TVM divides by zero)"));
    }
    let alpha = attrs.cubic_alpha;
    let exclude = attrs.cubic_exclude != 0;
    let ev = c(attrs.extrapolation_value);
    t.compute("resize", &out_shape, "i", |i| {
        let (n, ch) = if nhwc { (&i[0], &i[3]) } else { (&i[0], &i[1]) };
        let (y, x) = (&i[hi], &i[wi]);
        let in_y = ay.source(y, mode);
        let in_x = ax.source(x, mode);
        // topi's `get_2d_pixel`: the index clamped into the image, read as float32.
        let pixel = |yy: PrimExpr, xx: PrimExpr| {
            let clamp = |v: PrimExpr, extent: &PrimExpr| {
                let v = v.cast(DataType::INT64);
                let last = common::sub(extent, &PrimExpr::int(1));
                common::max(&common::min(&v, &last), &PrimExpr::int(0))
            };
            let (yy, xx) = (clamp(yy, &ay.image), clamp(xx, &ax.image));
            let at = if nhwc {
                vec![n.clone(), yy, xx, ch.clone()]
            } else {
                vec![n.clone(), ch.clone(), yy, xx]
            };
            PrimExpr::load(&data, at).cast(F32)
        };
        let shift = |v: &PrimExpr, k: i64| {
            if k == 0 {
                v.clone()
            } else {
                PrimExpr::binary(BinOp::Add, v.clone(), PrimExpr::int_of(k, DataType::INT32))
            }
        };
        let value = match method {
            "nearest_neighbor" => pixel(
                closest(in_y.clone(), rounding, ay.int_div.is_some()),
                closest(in_x.clone(), rounding, ax.int_div.is_some()),
            ),
            "linear" => {
                let (y0, x0) = (floor_i32(in_y.clone()), floor_i32(in_x.clone()));
                let y_lerp = sub(in_y.clone(), fl(&y0));
                let x_lerp = sub(in_x.clone(), fl(&x0));
                let row = |j: i64| {
                    lerp(
                        pixel(shift(&y0, j), x0.clone()),
                        pixel(shift(&y0, j), shift(&x0, 1)),
                        x_lerp.clone(),
                    )
                };
                lerp(row(0), row(1), y_lerp)
            }
            _ => {
                // cubic
                let (x0, y0) = (floor_i32(in_x.clone()), floor_i32(in_y.clone()));
                let x_frac = sub(in_x.clone(), call(Intrinsic::Floor, in_x.clone()));
                let y_frac = sub(in_y.clone(), call(Intrinsic::Floor, in_y.clone()));
                let mut wx = cubic_weights(&x_frac, alpha);
                let mut wy = cubic_weights(&y_frac, alpha);
                if exclude {
                    // Neighbour `k` (at `floor + k - 1`) outside the image weighs 0;
                    // the others are renormalized.
                    let drop = |w: &mut [PrimExpr; 4], base: &PrimExpr, extent: &PrimExpr| {
                        for (k, wk) in w.iter_mut().enumerate() {
                            let b = base.clone().cast(DataType::INT64);
                            let lo = PrimExpr::binary(
                                BinOp::Lt,
                                common::add(&b, &PrimExpr::int(k as i64 - 1)),
                                PrimExpr::int(0),
                            );
                            let hi =
                                PrimExpr::binary(BinOp::Gt, common::add(&b, &PrimExpr::int(k as i64)), extent.clone());
                            *wk = select(PrimExpr::binary(BinOp::Or, lo, hi), c(0.0), wk.clone());
                        }
                        let total = add(add(add(w[0].clone(), w[1].clone()), w[2].clone()), w[3].clone());
                        for wk in w.iter_mut() {
                            *wk = div(wk.clone(), total.clone());
                        }
                    };
                    drop(&mut wx, &x0, &ax.image);
                    drop(&mut wy, &y0, &ay.image);
                }
                let col = |j: i64| {
                    let yy = shift(&y0, j - 1);
                    let p = [0, 1, 2, 3].map(|k| pixel(yy.clone(), shift(&x0, k - 1)));
                    kernel(p, &wx)
                };
                kernel([col(0), col(1), col(2), col(3)], &wy)
            }
        };
        let value = if mode == "tf_crop_and_resize" {
            // Outside the image: the extrapolation value (rows, then columns).
            let outside = |coord: &PrimExpr, extent: &PrimExpr, inner: PrimExpr| {
                let last = fl(&common::sub(extent, &PrimExpr::int(1)));
                select(
                    cmp(BinOp::Lt, coord.clone(), c(0.0)),
                    ev.clone(),
                    select(cmp(BinOp::Gt, coord.clone(), last), ev.clone(), inner),
                )
            };
            outside(&in_x, &ax.image, outside(&in_y, &ay.image, value))
        } else {
            value
        };
        value.cast(out_dt)
    });
    Ok(Legalized::call(Lowered::from_te("resize2d", t, 1, ctx.out.clone())))
}

/// The operator.
pub const DEF: OpDef = OpDef {
    name: "relax.image.resize2d",
    pure: true,
    infer,
    legalize: Some(legalize),
};
