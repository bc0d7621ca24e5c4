//! Neural network operators: activations, softmax, normalizations, dropout,
//! losses, padding, convolutions and pooling.

use crate::error::{infer_err, InferError};
use relax_ir::tir::BinOp;
use relax_ir::{Call, DataType, PrimExpr, StructInfo, TensorStructInfo};

use super::attrs::{ConvAttrs, OpAttrs};
use super::common::*;
use super::index::if_then_else;
use super::unary::{unary_any, unary_float};
use super::{pure_op, InferCtx, OpDef};
use crate::legalize as lg;

// ----------------------------------------------------------------------------
// Layouts

/// One axis of a data layout: a primal axis (`C`) or a split sub-axis (`16c`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Axis {
    Primal(char),
    Sub(char, i64),
}

/// A data layout such as `NCHW` or `NCHW16c`.
struct Layout(Vec<Axis>);

impl Layout {
    fn parse(s: &str) -> Result<Layout, InferError> {
        let mut axes = Vec::new();
        let mut factor: Option<i64> = None;
        for c in s.chars() {
            if let Some(d) = c.to_digit(10) {
                factor = Some(
                    factor
                        .unwrap_or(0)
                        .checked_mul(10)
                        .and_then(|f| f.checked_add(d as i64))
                        .ok_or_else(|| format!("invalid layout {s}: factor too large"))?,
                );
            } else if c.is_ascii_uppercase() {
                if factor.is_some() {
                    return Err(infer_err!("invalid layout {s}"));
                }
                axes.push(Axis::Primal(c));
            } else if c.is_ascii_lowercase() {
                let f = factor
                    .take()
                    .ok_or_else(|| format!("invalid layout {s}: sub-axis {c} without a factor"))?;
                axes.push(Axis::Sub(c.to_ascii_uppercase(), f));
            } else {
                return Err(infer_err!("invalid layout {s}"));
            }
        }
        Ok(Layout(axes))
    }
    fn ndim(&self) -> usize {
        self.0.len()
    }
    fn primals(&self) -> Vec<char> {
        let mut v: Vec<char> = self
            .0
            .iter()
            .filter_map(|a| if let Axis::Primal(c) = a { Some(*c) } else { None })
            .collect();
        v.sort();
        v
    }
    fn index_of_primal(&self, c: char) -> Option<usize> {
        self.0.iter().position(|a| *a == Axis::Primal(c))
    }
    fn sub_of(&self, c: char) -> Option<(usize, i64)> {
        self.0.iter().enumerate().find_map(|(i, a)| match a {
            Axis::Sub(p, f) if *p == c => Some((i, *f)),
            _ => None,
        })
    }
}

/// Converts `shape` given in `src` to the `dst` layout (same primal axes).
fn convert_shape(src: &Layout, dst: &Layout, shape: &[PrimExpr]) -> Vec<PrimExpr> {
    dst.0
        .iter()
        .map(|a| match *a {
            Axis::Sub(_, f) => int(f),
            Axis::Primal(c) => {
                let i = src.index_of_primal(c).unwrap_or(0);
                let mut full = shape[i].clone();
                if let Some((_, f)) = src.sub_of(c) {
                    full = mul(&full, &int(f));
                }
                match dst.sub_of(c) {
                    Some((_, f)) => floordiv(&full, &int(f)),
                    None => full,
                }
            }
        })
        .collect()
}

/// TVM's `CheckTensorLayout`: the layout, convertible from `tgt`.
fn check_layout(call: &Call, layout: &str, tgt: &str, name: &str) -> Result<Layout, InferError> {
    let l = Layout::parse(layout)?;
    let t = Layout::parse(tgt)?;
    if l.primals() != t.primals() {
        return Err(infer_err!(
            "{} requires the given {name} layout to be convertible from {tgt} layout. However, the given layout {layout} is not convertible.",
            op_name(call)
        ));
    }
    Ok(l)
}

/// TVM's `CheckNdimPerLayoutAndGetShape`.
fn ndim_per_layout(call: &Call, t: &TensorStructInfo, layout: &Layout) -> Result<Option<Vec<PrimExpr>>, InferError> {
    if t.ndim != -1 && t.ndim as usize != layout.ndim() {
        return Err(infer_err!(
            "In {}, layout requires the input to be {}-dim tensor. However, the given input has ndim {}",
            op_name(call),
            layout.ndim(),
            t.ndim
        ));
    }
    Ok(shape_of(t))
}

fn i32c(v: i64) -> PrimExpr {
    PrimExpr::int_of(v, DataType::INT32)
}

/// Expands a padding list to `2 * n` entries (begin..., end...).
fn complete_padding(call: &Call, p: &[i64], n: usize) -> Result<Vec<i64>, InferError> {
    if p.len() == 2 * n {
        return Ok(p.to_vec());
    }
    if p.len() == 1 {
        return Ok(vec![p[0]; 2 * n]);
    }
    if p.len() == n {
        let mut v = p.to_vec();
        v.extend_from_slice(p);
        return Ok(v);
    }
    Err(infer_err!(
        "{}: the padding length {} is invalid for {}-d spatial data",
        op_name(call),
        p.len(),
        n
    ))
}

/// `values` when every entry is positive (strides and dilations).
fn positive(call: &Call, key: &str, values: Vec<i64>) -> Result<Vec<i64>, InferError> {
    match values.iter().find(|&&v| v <= 0) {
        Some(v) => Err(infer_err!("{}: `{}` must be positive, got {}", op_name(call), key, v)),
        None => Ok(values),
    }
}

fn expand(call: &Call, key: &str, default: i64, n: usize) -> Result<Vec<i64>, InferError> {
    fit(call, key, attr_ints(call, key, &vec![default; n])?, n)
}

/// `n` values from a list of `n` or one.
fn fit(call: &Call, key: &str, v: Vec<i64>, n: usize) -> Result<Vec<i64>, InferError> {
    if v.len() == n {
        Ok(v)
    } else if v.len() == 1 {
        Ok(vec![v[0]; n])
    } else {
        Err(infer_err!(
            "{}: `{}` must have {} entries, got {}",
            op_name(call),
            key,
            n,
            v.len()
        ))
    }
}

// ----------------------------------------------------------------------------
// Convolutions

const SPATIAL: [&str; 3] = ["W", "HW", "DHW"];

fn conv_layouts(n: usize, transpose: bool) -> (String, String) {
    let sp = SPATIAL[n - 1];
    (
        format!("NC{sp}"),
        if transpose {
            format!("IO{sp}")
        } else {
            format!("OI{sp}")
        },
    )
}

/// `conv{1,2,3}d` and `conv{1,2,3}d_transpose`.
fn conv(call: &Call, args: &[StructInfo], ctx: &InferCtx, n: usize, transpose: bool) -> Res {
    let ts = tensor_args(call, args, 2)?;
    let (data, weight) = (ts[0], ts[1]);
    let (dl, kl) = conv_layouts(n, transpose);
    let a = ConvAttrs::from_call(call)?;
    let data_layout = check_layout(call, &a.data_layout, &dl, "data")?;
    let weight_layout = check_layout(call, &a.kernel_layout, &kl, "kernel")?;
    let out_layout = check_layout(call, &a.out_layout, &dl, "output")?;
    let ds = ndim_per_layout(call, data, &data_layout)?;
    let ws = ndim_per_layout(call, weight, &weight_layout)?;
    let dtype = match a.out_dtype {
        Some(d) => d,
        None => binary_dtype(call, &args[0], &args[1])?,
    };
    let vdev = binary_vdevice(call, &args[0], &args[1])?;
    let (Some(ds), Some(ws)) = (ds, ws) else {
        return Ok(tensor_ndim(dtype, out_layout.ndim() as i32, vdev));
    };
    let canon_d = Layout::parse(&dl)?;
    let canon_k = Layout::parse(&kl)?;
    let d = convert_shape(&data_layout, &canon_d, &ds);
    let w = convert_shape(&weight_layout, &canon_k, &ws);
    let an = ctx.analyzer;
    let groups = a.groups;
    let g = int(groups);
    let strides = positive(call, "strides", fit(call, "strides", a.strides, n)?)?;
    let dilation = positive(call, "dilation", fit(call, "dilation", a.dilation, n)?)?;
    let padding = complete_padding(call, &a.padding, n)?;
    let mut out = vec![d[0].clone(), int(0)];
    if !transpose {
        let cin_k = mul(&w[1], &g);
        if prove_ne(an, &d[1], &cin_k) {
            return Err(infer_err!(
                "The channel size of the data should equal to the product of input channel size of the weight and the number of groups. However, the data channel size is {} while the weight input channel size and number of groups are {} and {}",
                show(&d[1]),
                show(&w[1]),
                groups
            ));
        }
        let m = floormod(&w[0], &g);
        if prove_ne(an, &m, &int(0)) {
            return Err(infer_err!(
                "Conv{}d expects the number of output channels to be divisible by the number of groups. However, the number of output channels is {} while the number of groups is {}",
                n,
                show(&w[0]),
                groups
            ));
        }
        out[1] = w[0].clone();
        for i in 0..n {
            let pad = add(&i32c(padding[i]), &i32c(padding[i + n]));
            let num = sub(
                &sub(
                    &add(&d[2 + i], &pad),
                    &mul(&i32c(dilation[i]), &sub(&w[2 + i], &int(1))),
                ),
                &int(1),
            );
            let o = add(&floordiv(&num, &i32c(strides[i])), &int(1));
            out.push(simplify(an, &o));
        }
    } else {
        if prove_ne(an, &d[1], &w[0]) {
            return Err(infer_err!(
                "Conv{}dTranspose expects the channel size of the data should equal to the input channel size of the weight. However, the data channel size is {} while the weight input channel size is {}",
                n,
                show(&d[1]),
                show(&w[0])
            ));
        }
        let m = floormod(&w[0], &g);
        if prove_ne(an, &m, &int(0)) {
            return Err(infer_err!(
                "Conv{}dTranspose expects the number of input channels to be divisible by the number of groups. However, the number of input channels is {} while the number of groups is {}",
                n,
                show(&w[0]),
                groups
            ));
        }
        let out_pad = expand(call, "output_padding", 0, n)?;
        if out_pad.iter().zip(&strides).any(|(p, s)| p >= s) {
            return Err(infer_err!(
                "Conv{}dTranspose expects the output padding less than the strides, but the output padding is{:?} while the strides are{:?}",
                n, out_pad, strides
            ));
        }
        out[1] = mul(&w[1], &g);
        for i in 0..n {
            let pad = add(&i32c(padding[i]), &i32c(padding[i + n]));
            let o = add(
                &add(
                    &add(
                        &sub(&mul(&sub(&d[2 + i], &int(1)), &i32c(strides[i])), &pad),
                        &mul(&i32c(dilation[i]), &sub(&w[2 + i], &int(1))),
                    ),
                    &i32c(out_pad[i]),
                ),
                &int(1),
            );
            out.push(simplify(an, &o));
        }
    }
    let out = convert_shape(&canon_d, &out_layout, &out);
    Ok(tensor(out, dtype, vdev))
}

fn conv1d(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    conv(c, a, x, 1, false)
}
fn conv2d(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    conv(c, a, x, 2, false)
}
fn conv3d(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    conv(c, a, x, 3, false)
}
fn conv1d_t(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    conv(c, a, x, 1, true)
}
fn conv2d_t(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    conv(c, a, x, 2, true)
}
fn conv3d_t(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    conv(c, a, x, 3, true)
}

// ----------------------------------------------------------------------------
// Pooling

/// `max_pool{1,2,3}d` / `avg_pool{1,2,3}d`.
fn pool(call: &Call, args: &[StructInfo], ctx: &InferCtx, n: usize) -> Res {
    let t = unary_tensor(call, args)?;
    let canon = format!("NC{}", SPATIAL[n - 1]);
    let layout_s = attr_str(call, "layout", &canon);
    let layout = check_layout(call, layout_s, &canon, "data")?;
    let out_layout = check_layout(
        call,
        attr(call, "out_layout").and_then(|v| v.as_str()).unwrap_or(layout_s),
        &canon,
        "output",
    )?;
    let Some(ds) = ndim_per_layout(call, t, &layout)? else {
        return Ok(tensor_ndim(t.dtype, out_layout.ndim() as i32, t.vdevice.clone()));
    };
    let canon_l = Layout::parse(&canon)?;
    let d = convert_shape(&layout, &canon_l, &ds);
    let pool_size = expand(call, "pool_size", 1, n)?;
    let strides = positive(call, "strides", expand(call, "strides", 1, n)?)?;
    let dilation = positive(call, "dilation", expand(call, "dilation", 1, n)?)?;
    let padding = complete_padding(call, &attr_ints(call, "padding", &vec![0; 2 * n])?, n)?;
    let ceil_mode = attr_bool(call, "ceil_mode", false);
    let an = ctx.analyzer;
    let mut out = vec![d[0].clone(), d[1].clone()];
    for i in 0..n {
        let input = &d[2 + i];
        let pad = add(&i32c(padding[i]), &i32c(padding[i + n]));
        let mut num = sub(
            &sub(
                &add(input, &pad),
                &mul(&i32c(dilation[i]), &sub(&i32c(pool_size[i]), &int(1))),
            ),
            &int(1),
        );
        if ceil_mode {
            num = add(&num, &sub(&i32c(strides[i]), &int(1)));
        }
        let raw = add(&floordiv(&num, &i32c(strides[i])), &int(1));
        let o = if ceil_mode {
            let lhs = mul(&sub(&raw, &int(1)), &i32c(strides[i]));
            let rhs = add(input, &i32c(padding[i]));
            let invalid = match (lhs.as_int(), rhs.as_int()) {
                (Some(a), Some(b)) => PrimExpr::bool(a >= b),
                _ => PrimExpr::binary(BinOp::Ge, lhs, rhs),
            };
            if_then_else(invalid, sub(&raw, &int(1)), raw)
        } else {
            raw
        };
        out.push(simplify(an, &o));
    }
    let out = convert_shape(&canon_l, &out_layout, &out);
    Ok(tensor(out, t.dtype, t.vdevice.clone()))
}

fn pool1d(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    pool(c, a, x, 1)
}
fn pool2d(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    pool(c, a, x, 2)
}
fn pool3d(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    pool(c, a, x, 3)
}

/// `adaptive_avg_pool{1,2,3}d`.
fn adaptive_pool(call: &Call, args: &[StructInfo], _ctx: &InferCtx, n: usize) -> Res {
    let t = unary_tensor(call, args)?;
    let canon = format!("NC{}", SPATIAL[n - 1]);
    let layout_s = attr_str(call, "layout", &canon).to_string();
    let layout = check_layout(call, &layout_s, &canon, "data")?;
    let out_layout_s = attr(call, "out_layout")
        .and_then(|v| v.as_str())
        .unwrap_or(&layout_s)
        .to_string();
    let out_layout = check_layout(call, &out_layout_s, &canon, "output")?;
    let output_size = attr_opt_ints(call, "output_size")?;
    let Some(ds) = ndim_per_layout(call, t, &layout)? else {
        if t.shape.is_some() && out_layout_s == layout_s && output_size.is_none() {
            return Ok(StructInfo::Tensor(t.clone()));
        }
        return Ok(tensor_ndim(t.dtype, out_layout.ndim() as i32, t.vdevice.clone()));
    };
    let canon_l = Layout::parse(&canon)?;
    let mut d = convert_shape(&layout, &canon_l, &ds);
    if let Some(os) = output_size {
        let os: Vec<i64> = if os.len() == 1 { vec![os[0]; n] } else { os };
        for i in 0..n {
            d[2 + i] = i32c(
                *os.get(i)
                    .ok_or_else(|| format!("{}: output_size has too few entries", op_name(call)))?,
            );
        }
    }
    let out = convert_shape(&canon_l, &out_layout, &d);
    Ok(tensor(out, t.dtype, t.vdevice.clone()))
}

fn adaptive1d(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    adaptive_pool(c, a, x, 1)
}
fn adaptive2d(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    adaptive_pool(c, a, x, 2)
}
fn adaptive3d(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    adaptive_pool(c, a, x, 3)
}

// ----------------------------------------------------------------------------
// Activations, softmax, normalization, losses

/// `softmax`/`log_softmax(x, axis)`.
fn softmax(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    if t.ndim == -1 {
        return Ok(StructInfo::Tensor(t.clone()));
    }
    if is_known_non_float(t.dtype) {
        return Err(infer_err!(
            "Softmax requires the input tensor to have float dtype. However, the given input dtype is {}",
            t.dtype
        ));
    }
    normalize_axis(call, t.ndim, attr_int(call, "axis", -1)?)?;
    Ok(StructInfo::Tensor(t.clone()))
}

/// `prelu(x, alpha, axis)`.
fn prelu(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = tensor_arg(call, args, 0)?;
    if t.ndim == -1 {
        return Ok(StructInfo::Tensor(t.clone()));
    }
    if !t.dtype.is_void() && t.dtype.code != relax_ir::TypeCode::Float {
        return Err(infer_err!(
            "Prelu requires the input tensor to have float dtype. However, the given input dtype is {}",
            t.dtype
        ));
    }
    normalize_axis(call, t.ndim, attr_int(call, "axis", 1)?)?;
    Ok(StructInfo::Tensor(t.clone()))
}

/// `pad(x, pad_width, pad_value, pad_mode)`.
fn pad(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let pw = attr_ints(call, "pad_width", &[])?;
    if t.ndim == -1 || pw.len() != 2 * t.ndim as usize {
        return Err(infer_err!("{}: Illegal pad_width", op_name(call)));
    }
    match shape_of(t) {
        None => Ok(tensor_ndim(t.dtype, t.ndim, None)),
        Some(s) => {
            let out = s
                .iter()
                .enumerate()
                .map(|(i, d)| add(d, &int(pw[2 * i].wrapping_add(pw[2 * i + 1]))))
                .collect();
            Ok(tensor(out, t.dtype, None))
        }
    }
}

/// `pixel_shuffle(x, upscale_factor)`.
fn pixel_shuffle(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let r = attr_int(call, "upscale_factor", 1)?;
    if r <= 0 {
        return Err("Upscale factor must be positive".into());
    }
    if t.ndim < 3 {
        return Err("PixelShuffle requires at least 3D input tensor".into());
    }
    let Some(s) = shape_of(t) else {
        return Ok(tensor_ndim(t.dtype, t.ndim, None));
    };
    let nd = s.len();
    let c = s[nd - 3]
        .as_int()
        .ok_or("PixelShuffle requires a constant channel count")?;
    if c % (r * r) != 0 {
        return Err("Number of input channels must be divisible by the square of the upscale factor".into());
    }
    let mut out = s.clone();
    out[nd - 3] = int(c / (r * r));
    out[nd - 2] = mul(&s[nd - 2], &i32c(r));
    out[nd - 1] = mul(&s[nd - 1], &i32c(r));
    Ok(tensor(out, t.dtype, None))
}

/// TVM's `NormCheckDtypeAndShape`: true when the shapes cannot be proven equal.
fn norm_check(call: &Call, ts: &[&TensorStructInfo], axes: &[i64], ctx: &InferCtx) -> Result<bool, InferError> {
    let data = ts[0];
    let mut nonneg = Vec::new();
    if data.ndim != -1 {
        nonneg = normalize_axes(call, data.ndim, axes)?;
    }
    let n_axis = axes.len() as i32;
    if is_known_non_float(data.dtype) {
        return Err(infer_err!(
            "{} requires the input data to have float dtype. However, the given data dtype is {}",
            op_name(call),
            data.dtype
        ));
    }
    for (i, t) in ts.iter().enumerate().skip(1) {
        if t.dtype != data.dtype {
            return Err(infer_err!(
                "{} requires all the input tensors to have the same dtype. However, the input {} has dtype {} which is other than the input data's dtype {}",
                op_name(call),
                i,
                t.dtype,
                data.dtype
            ));
        } else if t.ndim != n_axis {
            return Err(infer_err!(
                "{} requires the input {} to have as many dimensions as the length of input axes. However, the given one has ndim {}, which is other than the length of axes {}",
                op_name(call),
                i,
                t.ndim,
                n_axis
            ));
        }
    }
    let mut lens: Vec<Vec<PrimExpr>> = Vec::new();
    if let Some(s) = data.shape_values() {
        lens.push(nonneg.iter().map(|&a| s[a].clone()).collect());
    }
    for t in &ts[1..] {
        if let Some(s) = t.shape_values() {
            lens.push(s.to_vec());
        }
    }
    for l in lens.iter().skip(1) {
        for d in 0..n_axis as usize {
            if prove_ne(ctx.analyzer, &lens[0][d], &l[d]) {
                return Err(infer_err!(
                    "{} requires the input gamma, beta, etc., to have size same as the lengths of the data on the given axes. However, there exists {} and {} that are unequal.",
                    op_name(call),
                    show_shape(&lens[0]),
                    show_shape(l)
                ));
            } else if !prove_eq(ctx.analyzer, &lens[0][d], &l[d]) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// `batch_norm(data, gamma, beta, moving_mean, moving_var, axis, ...)`.
fn batch_norm(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let ts = tensor_args(call, args, 5)?;
    let axis = attr_int(call, "axis", 1)?;
    let unknown = norm_check(call, &ts, &[axis], ctx)?;
    if unknown {
        let (d, vd) = (ts[0].dtype, ts[0].vdevice.clone());
        return Ok(StructInfo::Tuple(vec![
            tensor_ndim(d, ts[0].ndim, vd.clone()),
            tensor_ndim(d, 1, vd.clone()),
            tensor_ndim(d, 1, vd),
        ]));
    }
    Ok(StructInfo::Tuple(vec![
        args[0].clone(),
        args[3].clone(),
        args[4].clone(),
    ]))
}

/// `layer_norm(data, gamma, beta, axes, ...)` / `rms_norm(data, weight, axes, ...)`.
fn layer_norm_like(call: &Call, args: &[StructInfo], ctx: &InferCtx, n: usize) -> Res {
    let ts = tensor_args(call, args, n)?;
    let axes = attr_ints(call, "axes", &[-1])?;
    if norm_check(call, &ts, &axes, ctx)? {
        return Ok(tensor_ndim(ts[0].dtype, ts[0].ndim, ts[0].vdevice.clone()));
    }
    Ok(args[0].clone())
}

fn layer_norm(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    layer_norm_like(c, a, x, 3)
}
fn rms_norm(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    layer_norm_like(c, a, x, 2)
}

/// `group_norm` / `instance_norm`: the data's StructInfo after checks.
fn group_norm_like(call: &Call, args: &[StructInfo], ctx: &InferCtx, group: bool) -> Res {
    let ts = tensor_args(call, args, 3)?;
    let data = ts[0];
    let an = ctx.analyzer;
    let mut channel_axis: Option<usize> = None;
    if data.ndim != -1 {
        let ca = normalize_axis(call, data.ndim, attr_int(call, "channel_axis", 1)?)?;
        let axes = normalize_axes(call, data.ndim, &attr_ints(call, "axes", &[])?)?;
        if axes.contains(&ca) {
            return Err(infer_err!(
                "{} expects that channel_axis must not be in axes, but got channel_axis: {}, axes: {:?}",
                op_name(call),
                ca,
                axes
            ));
        }
        channel_axis = Some(ca);
    }
    let ds = shape_of(data);
    if group {
        if !data.dtype.is_void() && data.dtype.code != relax_ir::TypeCode::Float {
            return Err(infer_err!(
                "{} expects that data must be float, but got {}",
                op_name(call),
                data.dtype
            ));
        }
        let groups = attr_int(call, "num_groups", 1)?;
        if let (Some(s), Some(ca)) = (&ds, channel_axis) {
            if prove_ne(an, &floormod(&s[ca], &int(groups)), &int(0)) {
                return Err(infer_err!(
                    "{} expects that the size of channel_axis must be divisible by {}, but got {}",
                    op_name(call),
                    groups,
                    show(&s[ca])
                ));
            }
        }
    }
    for (i, t) in ts.iter().enumerate().skip(1) {
        if t.dtype != data.dtype {
            return Err(infer_err!(
                "{} expects that all inputs must have the same dtype, but got {} and {}",
                op_name(call),
                t.dtype,
                data.dtype
            ));
        } else if t.ndim != 1 {
            return Err(infer_err!(
                "{} expects that all inputs must have ndim=1, but got {}",
                op_name(call),
                t.ndim
            ));
        }
        if let (Some(ca), Some(s), Some(ws)) = (channel_axis, &ds, shape_of(t)) {
            if prove_ne(an, &s[ca], &ws[0]) {
                return Err(infer_err!(
                    "{} expects that the size of input {} must be equal to the size of channel_axis, but got {} and {}",
                    op_name(call),
                    i,
                    show(&ws[0]),
                    show(&s[ca])
                ));
            }
        }
    }
    Ok(args[0].clone())
}

fn group_norm(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    group_norm_like(c, a, x, true)
}
fn instance_norm(c: &Call, a: &[StructInfo], x: &InferCtx) -> Res {
    group_norm_like(c, a, x, false)
}

/// `dropout(x, rate)`: (output, mask).
fn dropout(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    Ok(StructInfo::Tuple(vec![args[0].clone(), StructInfo::Tensor(t.clone())]))
}

/// `cross_entropy_with_logits(predictions, labels)`: a scalar.
fn cross_entropy(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let ts = tensor_args(call, args, 2)?;
    let (p, l) = (ts[0], ts[1]);
    let dtype = binary_dtype(call, &args[0], &args[1])?;
    let vdev = binary_vdevice(call, &args[0], &args[1])?;
    if p.ndim != -1 && l.ndim != -1 && p.ndim != l.ndim {
        return Err(infer_err!(
            "CrossEntropy requires predictions and labels to have the same ndim. However, the ndim of predictions is {} while the ndim of labels is {}",
            p.ndim, l.ndim
        ));
    }
    if let (Some(ps), Some(ls)) = (deep_shape_values(p), deep_shape_values(l)) {
        for (i, (a, b)) in ps.iter().zip(&ls).enumerate() {
            if prove_ne(ctx.analyzer, a, b) {
                return Err(infer_err!(
                    "CrossEntropy requires the predictions and labels to have the same shape. However, the shape of predictions at dim {} is{} while the shape of labels at this dim is {}",
                    i,
                    show(a),
                    show(b)
                ));
            }
        }
    }
    Ok(tensor(vec![], dtype, vdev))
}

fn kind_err(which: &str, s: &StructInfo) -> InferError {
    infer_err!(ArgKind;
        "NLLLoss requires the argument {which} to be Tensor. However, the given one is {}",
        kind_name(s)
    )
}

/// `nll_loss(predictions, targets, weights, reduction, ignore_index)`.
fn nll_loss(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    if args.len() < 2 || args.len() > 3 {
        return Err("NLLLoss op should take 2 or 3 arguments".into());
    }
    let wgt = match args.get(2) {
        None => None,
        Some(StructInfo::Tensor(t)) => Some(t),
        Some(o) => return Err(kind_err("weights", o)),
    };
    let pred = match &args[0] {
        StructInfo::Tensor(t) => t,
        o => return Err(kind_err("preditions", o)),
    };
    let tgt = match &args[1] {
        StructInfo::Tensor(t) => t,
        o => return Err(kind_err("targets", o)),
    };
    let (dtype, vdev) = match wgt {
        Some(_) => (
            binary_dtype(call, &args[0], &args[2])?,
            binary_vdevice(call, &args[0], &args[2])?,
        ),
        None => (pred.dtype, pred.vdevice.clone()),
    };
    if !tgt.dtype.is_void() && !is_int_or_uint(tgt.dtype) {
        return Err(infer_err!(
            "NLLLoss expects the dtype of targets to be int/uint. However, the dtype of targets is {}",
            tgt.dtype
        ));
    }
    let mut k = -1;
    if pred.ndim != -1 {
        if pred.ndim < 1 {
            return Err(infer_err!(
                "NLLLoss expects the ndim of predictions >= 1. However, the ndim of predictions is {}",
                pred.ndim
            ));
        }
        k = if pred.ndim <= 2 { 0 } else { pred.ndim - 2 };
    }
    if tgt.ndim != -1 {
        let kt = if tgt.ndim <= 1 { 0 } else { tgt.ndim - 1 };
        if k != -1 && k != kt {
            return Err(infer_err!(
                "NLLLoss expects number of dimensions K inferred from different arguments to be equal. However, K from predictions is {k} while K from targets is {kt}"
            ));
        }
    }
    if let Some(w) = wgt {
        if w.ndim != -1 && w.ndim != 1 {
            return Err(infer_err!(
                "NLLLoss expects the ndim of weights == 1. However, the ndim of weights is {}",
                w.ndim
            ));
        }
    }
    let an = ctx.analyzer;
    let mut n_dim: Option<PrimExpr> = None;
    let mut c_dim: Option<PrimExpr> = None;
    let mut out_shape: Vec<PrimExpr> = Vec::new();
    let ps = deep_shape_values(pred);
    if let Some(ps) = &ps {
        if ps.len() == 1 {
            c_dim = Some(ps[0].clone());
        } else if ps.len() >= 2 {
            n_dim = Some(ps[0].clone());
            c_dim = Some(ps[1].clone());
            out_shape.push(ps[0].clone());
            out_shape.extend(ps[2..].iter().cloned());
        }
    }
    if let Some(ts) = deep_shape_values(tgt) {
        if ts.is_empty() {
            if n_dim.is_some() {
                return Err(
                    "Shape mismatch for NLLLoss. Predictions shape is (N, C, ...) while targets is a scalar".into(),
                );
            }
        } else {
            if let Some(nv) = &n_dim {
                if prove_ne(an, nv, &ts[0]) {
                    return Err(infer_err!(
                        "NLLLoss expects minibatch size N inferred from different arguments to be equal. However, N from predictions is {} while N from targets is {}",
                        show(nv),
                        show(&ts[0])
                    ));
                }
            }
            if n_dim.is_none() && c_dim.is_some() {
                return Err(
                    "Shape mismatch for NLLLoss. Predictions shape is (C,) while targets is not a scalar".into(),
                );
            }
            if ts.len() >= 2 && ps.is_some() {
                for (i, td) in ts.iter().enumerate().skip(1) {
                    if let Some(o) = out_shape.get(i) {
                        if prove_ne(an, o, td) {
                            return Err(infer_err!(
                                "Shape mismatch for NLLLoss. The prediction shape at this dim is {} while the target shape at this dim is {}",
                                show(o),
                                show(td)
                            ));
                        }
                    }
                }
            }
        }
    }
    if let Some(w) = wgt {
        if let Some(ws) = deep_shape_values(w) {
            if let (Some(cv), Some(cw)) = (&c_dim, ws.first()) {
                if prove_ne(an, cv, cw) {
                    return Err(infer_err!(
                        "NLLLoss expects number of classes C inferred from different arguments to be equal. However, C from predictions is {} while C from weights is {}",
                        show(cv),
                        show(cw)
                    ));
                }
            }
        }
    }
    if attr_str(call, "reduction", "mean") == "none" {
        if pred.shape_values().is_some() {
            return Ok(tensor(out_shape, dtype, vdev));
        }
        let nd = if pred.ndim == -1 { -1 } else { pred.ndim - 1 };
        return Ok(tensor_ndim(dtype, nd, vdev));
    }
    Ok(tensor(vec![], dtype, vdev))
}

/// `batch_flatten(x)`.
fn batch_flatten(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let t = unary_tensor(call, args)?;
    let vd = t.vdevice.clone();
    if t.ndim == -1 {
        return Ok(tensor_ndim(t.dtype, 2, vd));
    }
    if t.ndim < 2 {
        return Err(infer_err!(
            "batch_flatten expects input tensor to have at least 2 dimensions, but got {}",
            t.ndim
        ));
    }
    if t.ndim == 2 {
        return Ok(StructInfo::Tensor(t.clone()));
    }
    match shape_of(t) {
        None => Ok(tensor_ndim(t.dtype, 2, vd)),
        Some(s) => {
            let mut flat = int(1);
            for d in &s[1..] {
                flat = mul(&flat, d);
            }
            Ok(tensor(vec![s[0].clone(), flat], t.dtype, vd))
        }
    }
}

/// The neural network operators.
pub static OPS: &[OpDef] = &[
    pure_op!("relax.nn.relu", unary_any, lg::nn::lowered::relu),
    pure_op!("relax.nn.gelu", unary_float, lg::nn::lowered::gelu),
    pure_op!("relax.nn.gelu_tanh", unary_float, lg::nn::lowered::gelu_tanh),
    pure_op!("relax.nn.selu", unary_float, lg::nn::lowered::selu),
    pure_op!("relax.nn.silu", unary_float, lg::nn::lowered::silu),
    pure_op!("relax.nn.leakyrelu", unary_float, lg::nn::lowered::leakyrelu),
    pure_op!("relax.nn.softplus", unary_float, lg::nn::lowered::softplus),
    pure_op!("relax.nn.prelu", prelu, lg::nn::lowered::prelu),
    pure_op!("relax.nn.softmax", softmax, lg::nn::lowered::softmax_impl),
    pure_op!("relax.nn.log_softmax", softmax, lg::nn::lowered::log_softmax),
    pure_op!("relax.nn.pad", pad, lg::manipulate::lowered::pad),
    pure_op!("relax.nn.pixel_shuffle", pixel_shuffle),
    pure_op!("relax.nn.batch_norm", batch_norm, lg::nn::lowered::batch_norm),
    pure_op!("relax.nn.layer_norm", layer_norm, lg::nn::lowered::layer_norm),
    pure_op!("relax.nn.group_norm", group_norm, lg::nn::lowered::group_norm),
    pure_op!("relax.nn.instance_norm", instance_norm, lg::nn::lowered::instance_norm),
    pure_op!("relax.nn.rms_norm", rms_norm, lg::nn::lowered::rms_norm),
    pure_op!("relax.nn.dropout", dropout, lg::nn::lowered::dropout),
    pure_op!(
        "relax.nn.cross_entropy_with_logits",
        cross_entropy,
        lg::nn::lowered::cross_entropy_with_logits
    ),
    pure_op!("relax.nn.nll_loss", nll_loss, lg::nn::lowered::nll_loss),
    pure_op!(
        "relax.nn.batch_flatten",
        batch_flatten,
        lg::manipulate::lowered::reshape
    ),
    pure_op!("relax.nn.conv1d", conv1d, super::legalize::conv::conv1d),
    pure_op!("relax.nn.conv2d", conv2d, super::legalize::conv::conv2d),
    pure_op!("relax.nn.conv3d", conv3d, super::legalize::conv::conv3d),
    pure_op!(
        "relax.nn.conv1d_transpose",
        conv1d_t,
        lg::conv::lowered::conv1d_transpose
    ),
    pure_op!(
        "relax.nn.conv2d_transpose",
        conv2d_t,
        lg::conv::lowered::conv2d_transpose
    ),
    pure_op!(
        "relax.nn.conv3d_transpose",
        conv3d_t,
        lg::conv::lowered::conv3d_transpose
    ),
    pure_op!("relax.nn.max_pool1d", pool1d, lg::pool::lowered::max_pool1d),
    pure_op!("relax.nn.max_pool2d", pool2d, lg::pool::lowered::max_pool2d),
    pure_op!("relax.nn.max_pool3d", pool3d, lg::pool::lowered::max_pool3d),
    pure_op!("relax.nn.avg_pool1d", pool1d, lg::pool::lowered::avg_pool1d),
    pure_op!("relax.nn.avg_pool2d", pool2d, lg::pool::lowered::avg_pool2d),
    pure_op!("relax.nn.avg_pool3d", pool3d, lg::pool::lowered::avg_pool3d),
    pure_op!(
        "relax.nn.adaptive_avg_pool1d",
        adaptive1d,
        lg::pool::lowered::adaptive_avg_pool1d
    ),
    pure_op!(
        "relax.nn.adaptive_avg_pool2d",
        adaptive2d,
        lg::pool::lowered::adaptive_avg_pool2d
    ),
    pure_op!(
        "relax.nn.adaptive_avg_pool3d",
        adaptive3d,
        lg::pool::lowered::adaptive_avg_pool3d
    ),
];
