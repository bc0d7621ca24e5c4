//! Pooling (`max_pool{1,2,3}d`, `avg_pool{1,2,3}d`) as `topi.nn.pool*` lower it:
//! an optional `pad_temp` stage, a reduction over the window (`pool_max` /
//! `pool_sum`) and, for averages, the division by the window size (`pool_avg`).

use relax_ir::tir::BinOp;
use relax_ir::tir::Intrinsic;
use relax_ir::{AttrValue, Attrs, Buffer, DataType, PrimExpr};

use super::te::{add, konst, min_value, scale, sub, Reduce, Te};
use super::{LegalizeCtx, Lowered, OrSkip, Skip};
use crate::common::{attr_bool, attr_ints, attr_str};

/// `a + b` with a constant `b` folded (`v + 0` is `v`).
fn add_const(a: PrimExpr, b: i64) -> PrimExpr {
    match (a.as_int(), b) {
        (Some(x), _) => PrimExpr::int(x + b),
        (None, 0) => a,
        (None, _) => add(a, PrimExpr::int(b)),
    }
}

/// The padded copy of `x` (the stage `name`, iteration variables named from
/// `prefix`): `pad_value` outside `[before, before + extent)` on the padded
/// dimensions. `None` when no dimension is padded, unless `always`.
pub(crate) fn pad_stage(
    t: &mut Te,
    x: &Buffer,
    before: &[i64],
    after: &[i64],
    pad_value: PrimExpr,
    (name, prefix): (&str, &str),
    always: bool,
) -> Option<Buffer> {
    let shape = x.shape().to_vec();
    if !always && before.iter().chain(after).all(|&p| p == 0) {
        return None;
    }
    let pshape: Vec<PrimExpr> = shape
        .iter()
        .enumerate()
        .map(|(d, e)| add_const(e.clone(), before[d] + after[d]))
        .collect();
    let xb = x.clone();
    Some(t.compute(name, &pshape, prefix, |i| {
        let mut conds: Vec<PrimExpr> = Vec::new();
        let idx: Vec<PrimExpr> = i
            .iter()
            .enumerate()
            .map(|(d, v)| {
                if before[d] != 0 {
                    conds.push(PrimExpr::binary(BinOp::Le, PrimExpr::int(before[d]), v.clone()));
                }
                if after[d] != 0 {
                    conds.push(PrimExpr::binary(
                        BinOp::Lt,
                        v.clone(),
                        add_const(shape[d].clone(), before[d]),
                    ));
                }
                if before[d] != 0 {
                    sub(v.clone(), PrimExpr::int(before[d]))
                } else {
                    v.clone()
                }
            })
            .collect();
        let load = PrimExpr::load(&xb, idx);
        let mut cond: Option<PrimExpr> = None;
        for c in conds {
            cond = Some(match cond {
                None => c,
                Some(a) => PrimExpr::binary(BinOp::And, a, c),
            });
        }
        match cond {
            None => load,
            Some(c) => PrimExpr::intrinsic_call(Intrinsic::IfThenElse, load.dtype(), vec![c, load, pad_value]),
        }
    }))
}

/// The window parameters of an `n`-d pooling call.
struct PoolNd {
    /// Positions of the spatial dimensions (`D`, `H`, `W`) in the layout.
    sp: Vec<usize>,
    kernel: Vec<i64>,
    stride: Vec<i64>,
    dilation: Vec<i64>,
    /// Padding before and after, per spatial dimension.
    pad: Vec<[i64; 2]>,
    ceil_mode: bool,
    count_include_pad: bool,
}

/// The spatial layout letters of an `n`-d operator.
fn spatial_letters(n: usize) -> &'static [char] {
    match n {
        1 => &['W'],
        2 => &['H', 'W'],
        _ => &['D', 'H', 'W'],
    }
}

/// The default layout of an `n`-d operator.
fn default_layout(n: usize) -> &'static str {
    match n {
        1 => "NCW",
        2 => "NCHW",
        _ => "NCDHW",
    }
}

/// The positions of the spatial letters of an `n`-d operator in the `layout`
/// attribute (default channel-first), which `out_layout` must repeat.
fn spatial_axes(ctx: &LegalizeCtx, n: usize) -> Result<Vec<usize>, Skip> {
    let layout = attr_str(ctx.call, "layout", default_layout(n));
    if attr_str(ctx.call, "out_layout", layout) != layout {
        return Err(Skip::new("an output layout other than the data layout"));
    }
    let sp: Option<Vec<usize>> = spatial_letters(n).iter().map(|&c| layout.find(c)).collect();
    sp.ok_or_else(|| Skip::new(format!("layout {layout} is not supported")))
}

/// The `n`-item integer attribute `key` (a single value repeats; `default`
/// for each item when absent).
pub(crate) fn n_ints(ctx: &LegalizeCtx, key: &str, n: usize, default: i64) -> Result<Vec<i64>, Skip> {
    let v = attr_ints(ctx.call, key, &vec![default; n])?;
    fit_n(&v, n).ok_or_else(|| Skip::new(format!("{key} of the wrong length")))
}

/// `v` as `n` items: one value repeats.
pub(crate) fn fit_n(v: &[i64], n: usize) -> Option<Vec<i64>> {
    match v.len() {
        1 => Some(vec![v[0]; n]),
        l if l == n => Some(v.to_vec()),
        _ => None,
    }
}

/// The `padding` attribute of an `n`-d window operator as the padding before
/// and after each spatial dimension (one value, one per dimension, or all
/// befores then all afters).
pub(crate) fn paddings(ctx: &LegalizeCtx, n: usize) -> Result<(Vec<i64>, Vec<i64>), Skip> {
    split_padding(attr_ints(ctx.call, "padding", &vec![0; 2 * n])?, n)
}

/// [`paddings`] of the attribute's value `p`.
pub(crate) fn split_padding(p: Vec<i64>, n: usize) -> Result<(Vec<i64>, Vec<i64>), Skip> {
    let (before, after) = match p.len() {
        1 => (vec![p[0]; n], vec![p[0]; n]),
        l if l == n => (p.clone(), p),
        l if l == 2 * n => (p[..n].to_vec(), p[n..].to_vec()),
        _ => return Err(Skip::new("padding of the wrong length")),
    };
    if before.iter().chain(&after).any(|&v| v < 0) {
        return Err(Skip::new("negative padding"));
    }
    Ok((before, after))
}

fn params(ctx: &LegalizeCtx, n: usize) -> Result<PoolNd, Skip> {
    let sp = spatial_axes(ctx, n)?;
    let kernel = n_ints(ctx, "pool_size", n, 1)?;
    let stride = n_ints(ctx, "strides", n, 1)?;
    let dilation = n_ints(ctx, "dilation", n, 1)?;
    let (before, after) = paddings(ctx, n)?;
    let pad: Vec<[i64; 2]> = before.into_iter().zip(after).map(|(b, a)| [b, a]).collect();
    if kernel.iter().chain(&stride).chain(&dilation).any(|&v| v < 1) {
        return Err(Skip::new("a pool size, stride or dilation below 1"));
    }
    Ok(PoolNd {
        sp,
        kernel,
        stride,
        dilation,
        pad,
        ceil_mode: attr_bool(ctx.call, "ceil_mode", false),
        // TVM's defaults: average pooling counts padding in 1-d and 3-d, not in 2-d
        count_include_pad: attr_bool(ctx.call, "count_include_pad", n != 2),
    })
}

fn pool_nd(ctx: &LegalizeCtx, n: usize, is_max: bool) -> Result<Lowered, Skip> {
    let (out_shape, _) = ctx.out_tensor()?;
    let p = params(ctx, n)?;
    let mut t = Te::new();
    let x = ctx.placeholder(&mut t, 0)?;
    let dt = x.dtype();
    let nd = x.shape().len();
    if out_shape.len() != nd || p.sp.iter().any(|&d| d >= nd) {
        return Err(Skip::new("the data rank differs from the layout's"));
    }
    let mut before = vec![0i64; nd];
    let mut after = vec![0i64; nd];
    for k in 0..n {
        before[p.sp[k]] = p.pad[k][0];
        after[p.sp[k]] = p.pad[k][1] + if p.ceil_mode { p.stride[k] - 1 } else { 0 };
    }
    let pad_value = if is_max { min_value(dt) } else { konst(0.0, dt) };
    let src = pad_stage(&mut t, &x, &before, &after, pad_value, ("pad_temp", "ax"), false).unwrap_or_else(|| x.clone());
    let window = |s: &[PrimExpr], r: &[PrimExpr]| -> Vec<PrimExpr> {
        let mut idx = s.to_vec();
        for (k, rk) in r.iter().enumerate() {
            let d = p.sp[k];
            idx[d] = add(scale(s[d].clone(), p.stride[k]), scale(rk.clone(), p.dilation[k]));
        }
        idx
    };
    let red_axes: Vec<(String, PrimExpr)> = (0..n).map(|k| (format!("rv{k}"), PrimExpr::int(p.kernel[k]))).collect();
    let name = format!("{}_pool{n}d", if is_max { "max" } else { "avg" });
    if is_max {
        let mut ann = Attrs::new();
        ann.set("schedule_rule", AttrValue::Str("meta_schedule.pool_max".into()));
        t.reduce_annotated(
            Reduce {
                name: "pool_max",
                shape: out_shape,
                spatial_prefix: "ax",
                red_axes,
                init: min_value(dt),
            },
            ann,
            |a, b| PrimExpr::binary(BinOp::Max, a, b),
            |s, r| PrimExpr::load(&src, window(s, r)),
        );
        return Ok(Lowered::from_te(&name, t, 1, ctx.out.clone()));
    }
    let sum = t.reduce(
        Reduce::sum("pool_sum", out_shape.clone(), "ax", red_axes, dt),
        add,
        |s, r| PrimExpr::load(&src, window(s, r)),
    );
    let mut ann = Attrs::new();
    ann.set("schedule_rule", AttrValue::Str("meta_schedule.pool_avg".into()));
    let names: Vec<String> = (0..nd).map(|i| format!("ax{i}")).collect();
    let in_shape = x.shape().to_vec();
    t.compute_annotated("pool_avg", &out_shape, &names, ann, |i| {
        let count = if p.count_include_pad {
            // window positions inside the padded input (a ceil-mode window can
            // reach past it): r in [0, hi] with o * stride + r * dilation < padded extent
            let mut prod: Option<PrimExpr> = None;
            for k in 0..n {
                let d = p.sp[k];
                let padded = add(in_shape[d].clone(), PrimExpr::int(p.pad[k][0] + p.pad[k][1] - 1));
                let room = sub(padded, scale(i[d].clone(), p.stride[k]));
                let room = if p.dilation[k] == 1 {
                    room
                } else {
                    PrimExpr::binary(BinOp::FloorDiv, room, PrimExpr::int(p.dilation[k]))
                };
                let cnt = add(
                    PrimExpr::binary(BinOp::Min, PrimExpr::int(p.kernel[k] - 1), room),
                    PrimExpr::int(1),
                );
                prod = Some(match prod {
                    None => cnt,
                    Some(a) => PrimExpr::binary(BinOp::Mul, a, cnt),
                });
            }
            prod.unwrap_or_else(|| PrimExpr::int(1))
        } else {
            // valid window positions per dimension: r in [lo, hi] with
            // 0 <= o * stride - pad + r * dilation < extent
            let mut prod: Option<PrimExpr> = None;
            for k in 0..n {
                let d = p.sp[k];
                let start = sub(scale(i[d].clone(), p.stride[k]), PrimExpr::int(p.pad[k][0]));
                let last = sub(sub(in_shape[d].clone(), PrimExpr::int(1)), start.clone());
                let neg = sub(PrimExpr::int(0), start);
                let dil = p.dilation[k];
                let (lo, hi) = if dil == 1 {
                    (neg, last)
                } else {
                    (
                        PrimExpr::binary(BinOp::FloorDiv, add(neg, PrimExpr::int(dil - 1)), PrimExpr::int(dil)),
                        PrimExpr::binary(BinOp::FloorDiv, last, PrimExpr::int(dil)),
                    )
                };
                let hi = PrimExpr::binary(BinOp::Min, PrimExpr::int(p.kernel[k] - 1), hi);
                let lo = PrimExpr::binary(BinOp::Max, lo, PrimExpr::int(0));
                let cnt = sub(add(hi, PrimExpr::int(1)), lo);
                prod = Some(match prod {
                    None => cnt,
                    Some(a) => PrimExpr::binary(BinOp::Mul, a, cnt),
                });
            }
            PrimExpr::binary(BinOp::Max, prod.unwrap_or_else(|| PrimExpr::int(1)), PrimExpr::int(1))
        };
        PrimExpr::binary(BinOp::Div, PrimExpr::load(&sum, i.to_vec()), count.cast(dt))
    });
    Ok(Lowered::from_te(&name, t, 1, ctx.out.clone()))
}

/// `adaptive_avg_pool{1,2,3}d`: output position `o` of an extent-`n` axis pooling
/// `n_in` inputs averages `[floor(o * n_in / n), ceil((o + 1) * n_in / n))`.
/// Evenly dividing windows are fixed-size reductions (TVM's form); others
/// reduce over the largest window with the positions past its end masked.
fn adaptive_avg_pool_nd(ctx: &LegalizeCtx, n: usize) -> Result<Lowered, Skip> {
    let (out_shape, _) = ctx.out_tensor()?;
    let hw = spatial_axes(ctx, n)?;
    let mut t = Te::new();
    let x = ctx.placeholder(&mut t, 0)?;
    let dt = ctx.arg_dtype_if(0, DataType::is_float)?;
    let in_shape = x.shape().to_vec();
    let nd = in_shape.len();
    if out_shape.len() != nd || hw.iter().any(|&d| d >= nd) {
        return Err(Skip::new("the data rank differs from the layout's"));
    }
    // per spatial dimension: (input extent, output extent), both static
    let mut dims = Vec::new();
    for &d in &hw {
        let (i, o) = in_shape[d]
            .as_int()
            .zip(out_shape[d].as_int())
            .or_skip("a spatial extent is symbolic")?;
        if i < 1 || o < 1 {
            return Err(Skip::new("an empty spatial dimension"));
        }
        dims.push((i, o));
    }
    let even = dims.iter().all(|&(i, o)| i % o == 0);
    let start = |o: PrimExpr, (i, n): (i64, i64)| -> PrimExpr {
        PrimExpr::binary(
            BinOp::FloorDiv,
            PrimExpr::binary(BinOp::Mul, o, PrimExpr::int(i)),
            PrimExpr::int(n),
        )
    };
    let end = |o: PrimExpr, (i, n): (i64, i64)| -> PrimExpr {
        let next = add(
            PrimExpr::binary(BinOp::Mul, add(o, PrimExpr::int(1)), PrimExpr::int(i)),
            PrimExpr::int(n - 1),
        );
        PrimExpr::binary(BinOp::FloorDiv, next, PrimExpr::int(n))
    };
    let windows: Vec<i64> = dims
        .iter()
        .map(|&(i, n)| {
            if i % n == 0 {
                i / n
            } else if n <= 1 << 16 {
                let (i, n) = (i as i128, n as i128);
                (0..n)
                    .map(|o| ((o + 1) * i + n - 1) / n - (o * i) / n)
                    .max()
                    .map_or(1, |w| w as i64)
            } else {
                // An upper bound on every window (positions past a window's end are masked).
                (i / n).saturating_add(2)
            }
        })
        .collect();
    let red_axes: Vec<(String, PrimExpr)> = windows
        .iter()
        .enumerate()
        .map(|(k, &w)| (format!("rv{k}"), PrimExpr::int(w)))
        .collect();
    let xb = x.clone();
    let sum = t.reduce(
        Reduce::sum("adaptive_pool_sum", out_shape.clone(), "ax", red_axes, dt),
        add,
        |s, r| {
            let mut idx = s.to_vec();
            let mut mask: Option<PrimExpr> = None;
            for (k, rk) in r.iter().enumerate() {
                let d = hw[k];
                if even {
                    idx[d] = add(scale(s[d].clone(), windows[k]), rk.clone());
                } else {
                    let st = start(s[d].clone(), dims[k]);
                    let len = sub(end(s[d].clone(), dims[k]), st.clone());
                    let c = PrimExpr::binary(BinOp::Lt, rk.clone(), len);
                    mask = Some(match mask {
                        None => c,
                        Some(m) => PrimExpr::binary(BinOp::And, m, c),
                    });
                    // clamp so that masked positions still read in bounds
                    idx[d] = PrimExpr::binary(BinOp::Min, add(st, rk.clone()), PrimExpr::int(dims[k].0 - 1));
                }
            }
            let v = PrimExpr::load(&xb, idx);
            match mask {
                None => v,
                Some(m) => PrimExpr::select(m, v, konst(0.0, dt)),
            }
        },
    );
    let mut ann = Attrs::new();
    ann.set(
        "schedule_rule",
        AttrValue::Str("meta_schedule.adaptive_pool_avg".into()),
    );
    let names: Vec<String> = (0..nd).map(|i| format!("ax{i}")).collect();
    t.compute_annotated("adaptive_pool_avg", &out_shape, &names, ann, |i| {
        let v = PrimExpr::load(&sum, i.to_vec());
        if even {
            let size: i64 = windows.iter().fold(1i64, |a, &w| a.saturating_mul(w));
            if size == 1 {
                v
            } else {
                PrimExpr::binary(BinOp::Div, v, konst(size as f64, dt))
            }
        } else {
            let mut count: Option<PrimExpr> = None;
            for (k, &d) in hw.iter().enumerate() {
                let len = sub(end(i[d].clone(), dims[k]), start(i[d].clone(), dims[k]));
                count = Some(match count {
                    None => len,
                    Some(c) => PrimExpr::binary(BinOp::Mul, c, len),
                });
            }
            PrimExpr::binary(BinOp::Div, v, count.unwrap_or_else(|| PrimExpr::int(1)).cast(dt))
        }
    });
    Ok(Lowered::from_te(
        &format!("adaptive_avg_pool{n}d"),
        t,
        1,
        ctx.out.clone(),
    ))
}

/// The legalizations of this family's other operators (PrimFunc builders; see
/// [`super::lower_or_skip`]).
pub mod lowered {
    super::super::lowered_legalizations!(
        max_pool1d => |ctx| super::pool_nd(ctx, 1, true),
        max_pool2d => |ctx| super::pool_nd(ctx, 2, true),
        max_pool3d => |ctx| super::pool_nd(ctx, 3, true),
        avg_pool1d => |ctx| super::pool_nd(ctx, 1, false),
        avg_pool2d => |ctx| super::pool_nd(ctx, 2, false),
        avg_pool3d => |ctx| super::pool_nd(ctx, 3, false),
        adaptive_avg_pool1d => |ctx| super::adaptive_avg_pool_nd(ctx, 1),
        adaptive_avg_pool2d => |ctx| super::adaptive_avg_pool_nd(ctx, 2),
        adaptive_avg_pool3d => |ctx| super::adaptive_avg_pool_nd(ctx, 3),
    );
}
