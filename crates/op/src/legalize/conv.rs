//! `conv1d` / `conv2d` as `topi.nn.conv{1,2}d_nc{h}w` / `..._n{h}wc` / `group_conv..._nc{h}w`
//! lower it: a padded copy of the input (`pad_temp`, always present) and one
//! reduction block over input channels and the kernel window.

use relax_ir::tir::BinOp;
use relax_ir::tir::Intrinsic;
use relax_ir::{Attrs, PrimExpr};

use super::pool::{fit_n, n_ints, pad_stage, paddings, split_padding};
use super::te::{add, konst, mul, scale, Reduce, Te};
use super::{Emitter, LegalizeCtx, Legalized, Lowered, OrSkip, Skip};
use crate::attrs::{ConvAttrs, OpAttrs};
use crate::common::{attr_int, attr_str};

/// `e // g` folded when `e` is static.
fn div_const(e: &PrimExpr, g: i64) -> PrimExpr {
    match e.as_int() {
        Some(v) => PrimExpr::int(v / g),
        None => PrimExpr::binary(BinOp::FloorDiv, e.clone(), PrimExpr::int(g)),
    }
}

/// `conv1d` (`n == 1`), `conv2d` and `conv3d` in channel-first or
/// channel-last data layouts, `OI<spatial>` or `<spatial>IO` kernels, read
/// through their typed attributes.
fn conv_nd(ctx: &LegalizeCtx, n: usize) -> Result<Legalized, Skip> {
    let a = ConvAttrs::from_call(ctx.call).map_err(Skip::from)?;
    let (out_shape, odt) = ctx.out_tensor()?;
    let sp_letters: &[char] = match n {
        1 => &['W'],
        2 => &['H', 'W'],
        _ => &['D', 'H', 'W'],
    };
    let rank = n + 2;
    let (data_layout, kernel_layout) = (a.data_layout.as_str(), a.kernel_layout.as_str());
    if a.out_layout != a.data_layout {
        return Err(Skip::new("an output layout other than the data layout"));
    }
    // the positions of `first`, `second` and the spatial axes in a layout
    let axes = |layout: &str, first: char, second: char| {
        let pos = |c: char| layout.find(c).filter(|_| layout.len() == rank);
        let spatial: Option<Vec<usize>> = sp_letters.iter().map(|&c| pos(c)).collect();
        Some((pos(first)?, pos(second)?, spatial?))
    };
    let layout_err = || Skip::new(format!("layouts {data_layout}/{kernel_layout} are not supported"));
    let (n_ax, c_ax, sp_ax) = axes(data_layout, 'N', 'C').ok_or_else(layout_err)?;
    let (ko_ax, ki_ax, ksp_ax) = axes(kernel_layout, 'O', 'I').ok_or_else(layout_err)?;
    let channel_last = c_ax == rank - 1;
    if n_ax != 0 || !(c_ax == 1 || channel_last) {
        return Err(layout_err());
    }
    let groups = a.groups;
    if groups < 1 || (groups > 1 && channel_last) {
        return Err(Skip::new("groups with a channel-last layout"));
    }
    let stride = fit_n(&a.strides, n).or_skip("strides of the wrong length")?;
    let dil = fit_n(&a.dilation, n).or_skip("dilation of the wrong length")?;
    let (pb, pa) = split_padding(a.padding.clone(), n)?;
    if stride.iter().chain(&dil).any(|&v| v < 1) {
        return Err(Skip::new("a stride or dilation below 1"));
    }
    let mut t = Te::new();
    let x = ctx.placeholder(&mut t, 0)?;
    let w = ctx.placeholder(&mut t, 1)?;
    if x.shape().len() != rank || w.shape().len() != rank || out_shape.len() != rank {
        return Err(Skip::new("the data, weight and output ranks differ from the layout's"));
    }
    let mut before = vec![0i64; rank];
    let mut after = vec![0i64; rank];
    for k in 0..n {
        before[sp_ax[k]] = pb[k];
        after[sp_ax[k]] = pa[k];
    }
    let pad_value = konst(0.0, x.dtype());
    let padded = pad_stage(&mut t, &x, &before, &after, pad_value, ("pad_temp", "i"), true)
        .or_skip("the padding is not supported")?;
    let in_c = x.shape()[c_ax].clone();
    let out_c = w.shape()[ko_ax].clone();
    let rc_ext = if groups == 1 {
        in_c.clone()
    } else {
        div_const(&in_c, groups)
    };
    let sp_names = ["yy", "xx", "zz"];
    let red_names = ["ry", "rx", "rz"];
    // reduction axes: channels first for channel-first layouts, last otherwise
    let mut red_axes: Vec<(String, PrimExpr)> = (0..n)
        .map(|k| (red_names[k].to_string(), w.shape()[ksp_ax[k]].clone()))
        .collect();
    let rc = ("rc".to_string(), rc_ext.clone());
    if channel_last {
        red_axes.push(rc);
    } else {
        red_axes.insert(0, rc);
    }
    let mut snames = vec![String::new(); rank];
    snames[n_ax] = "nn".into();
    snames[c_ax] = "ff".into();
    for k in 0..n {
        snames[sp_ax[k]] = sp_names[k].into();
    }
    let lname = data_layout.to_lowercase();
    let name = if groups > 1 {
        format!("group_conv{n}d_{lname}")
    } else {
        format!("conv{n}d_{lname}")
    };
    let operands = (&padded, &w);
    conv_sum(
        &mut t,
        Reduce::sum(&name, out_shape, "", red_axes, odt),
        &snames,
        operands,
        |s, r| {
            let ff = &s[c_ax];
            let (rc, rsp) = if channel_last {
                (&r[n], &r[..n])
            } else {
                (&r[0], &r[1..])
            };
            let chan = if groups == 1 {
                rc.clone()
            } else {
                // the first input channel of the output channel's group
                let per_group_out = div_const(&out_c, groups);
                add(
                    mul(
                        PrimExpr::binary(BinOp::FloorDiv, ff.clone(), per_group_out),
                        rc_ext.clone(),
                    ),
                    rc.clone(),
                )
            };
            let mut pidx = vec![s[n_ax].clone(); rank];
            pidx[c_ax] = chan;
            let mut widx = vec![ff.clone(); rank];
            widx[ki_ax] = rc.clone();
            widx[ko_ax] = ff.clone();
            for k in 0..n {
                pidx[sp_ax[k]] = add(scale(s[sp_ax[k]].clone(), stride[k]), scale(rsp[k].clone(), dil[k]));
                widx[ksp_ax[k]] = rsp[k].clone();
            }
            (pidx, widx)
        },
    );
    Ok(Legalized::call(Lowered::from_te(
        &format!("conv{n}d"),
        t,
        1,
        ctx.out.clone(),
    )))
}

/// `k - 1 - v` with a static `k` folded.
fn flip_index(k: &PrimExpr, v: PrimExpr) -> PrimExpr {
    match k.as_int() {
        Some(k) => PrimExpr::binary(BinOp::Sub, PrimExpr::int(k - 1), v),
        None => PrimExpr::binary(BinOp::Sub, PrimExpr::binary(BinOp::Sub, k.clone(), v), PrimExpr::int(1)),
    }
}

/// The convolution stage `r`: the sum of `data[pidx] * weight[widx]` (both cast to
/// the accumulator's dtype), `index` giving `(pidx, widx)` from the spatial and
/// reduction indices.
fn conv_sum(
    t: &mut Te,
    r: Reduce<'_>,
    snames: &[String],
    (data, weight): (&relax_ir::Buffer, &relax_ir::Buffer),
    index: impl FnOnce(&[PrimExpr], &[PrimExpr]) -> (Vec<PrimExpr>, Vec<PrimExpr>),
) -> relax_ir::Buffer {
    let odt = r.init.dtype();
    let cast = |v: PrimExpr| if v.dtype() == odt { v } else { v.cast(odt) };
    t.reduce_named(r, snames, Attrs::new(), add, |s, rr| {
        let (pidx, widx) = index(s, rr);
        mul(cast(PrimExpr::load(data, pidx)), cast(PrimExpr::load(weight, widx)))
    })
}

/// A "dilation" stage: `src` spread out by `factors` along its last `n`
/// dimensions, zeros in between (`topi.nn.dilate`). A copy when no factor
/// exceeds 1.
fn dilate_stage(t: &mut Te, name: &str, src: &relax_ir::Buffer, factors: &[i64]) -> relax_ir::Buffer {
    let shape = src.shape().to_vec();
    let off = shape.len() - factors.len();
    let out_shape: Vec<PrimExpr> = shape
        .iter()
        .enumerate()
        .map(|(d, e)| {
            if d < off || factors[d - off] == 1 {
                e.clone()
            } else {
                let f = factors[d - off];
                match e.as_int() {
                    Some(v) => PrimExpr::int((v - 1) * f + 1),
                    None => PrimExpr::binary(BinOp::Sub, mul(e.clone(), PrimExpr::int(f)), PrimExpr::int(f - 1)),
                }
            }
        })
        .collect();
    let srcb = src.clone();
    t.compute(name, &out_shape, "i", |i| {
        let mut cond: Option<PrimExpr> = None;
        let idx: Vec<PrimExpr> = i
            .iter()
            .enumerate()
            .map(|(d, v)| {
                if d < off || factors[d - off] == 1 {
                    return v.clone();
                }
                let f = PrimExpr::int(factors[d - off]);
                let c = PrimExpr::binary(
                    BinOp::Eq,
                    PrimExpr::binary(BinOp::FloorMod, v.clone(), f.clone()),
                    PrimExpr::int(0),
                );
                cond = Some(match cond.take() {
                    None => c,
                    Some(a) => PrimExpr::binary(BinOp::And, a, c),
                });
                PrimExpr::binary(BinOp::FloorDiv, v.clone(), f)
            })
            .collect();
        let load = PrimExpr::load(&srcb, idx);
        match cond {
            None => load,
            Some(c) => {
                let zero = konst(0.0, load.dtype());
                PrimExpr::intrinsic_call(Intrinsic::IfThenElse, load.dtype(), vec![c, load, zero])
            }
        }
    })
}

/// `conv1d_transpose` / `conv2d_transpose` (`NC[H]W` data, `IO[H]W` kernel)
/// as `topi.nn.group_conv{1,2}d_transpose_nc[h]w`: dilate the input by the
/// strides, pad it by `kernel - 1 - padding` (plus `output_padding` after),
/// flip and transpose the (dilated) kernel, then a direct convolution.
fn conv_transpose_nd(ctx: &LegalizeCtx, n: usize) -> Result<Lowered, Skip> {
    let (out_shape, odt) = ctx.out_tensor()?;
    let (dl, kl) = match n {
        1 => ("NCW", "IOW"),
        2 => ("NCHW", "IOHW"),
        _ => ("NCDHW", "IODHW"),
    };
    let (data_layout, kernel_layout) = (
        attr_str(ctx.call, "data_layout", dl),
        attr_str(ctx.call, "kernel_layout", kl),
    );
    if data_layout != dl || kernel_layout != kl {
        return Err(Skip::new(format!(
            "layouts {data_layout}/{kernel_layout} are not supported (only {dl}/{kl})"
        )));
    }
    if attr_str(ctx.call, "out_layout", dl) != dl {
        return Err(Skip::new("an output layout other than the data layout"));
    }
    let groups = attr_int(ctx.call, "groups", 1)?;
    let stride = n_ints(ctx, "strides", n, 1)?;
    let dil = n_ints(ctx, "dilation", n, 1)?;
    let out_pad = n_ints(ctx, "output_padding", n, 0)?;
    let (pb, pa) = paddings(ctx, n)?;
    if groups < 1 || stride.iter().chain(&dil).any(|&v| v < 1) || out_pad.iter().any(|&v| v < 0) {
        return Err(Skip::new(
            "groups, strides or dilation below 1, or a negative output padding",
        ));
    }
    let mut t = Te::new();
    let x = ctx.placeholder(&mut t, 0)?;
    let w = ctx.placeholder(&mut t, 1)?;
    let rank = n + 2;
    if x.shape().len() != rank || w.shape().len() != rank || out_shape.len() != rank {
        return Err(Skip::new("the data, weight and output ranks differ from the layout's"));
    }
    // the effective (dilated) kernel extents must be static to size the padding
    let kext: Option<Vec<i64>> = (0..n).map(|k| w.shape()[2 + k].as_int()).collect();
    let kext = kext.or_skip("a kernel extent is symbolic")?;
    let keff: Vec<i64> = (0..n).map(|k| (kext[k] - 1) * dil[k] + 1).collect();
    let dilated = dilate_stage(&mut t, "data_dilate", &x, &stride);
    let mut before = vec![0i64; rank];
    let mut after = vec![0i64; rank];
    for k in 0..n {
        before[2 + k] = keff[k] - 1 - pb[k];
        after[2 + k] = keff[k] - 1 - pa[k] + out_pad[k];
        if before[2 + k] < 0 || after[2 + k] < 0 {
            return Err(Skip::new("a padding wider than the dilated kernel"));
        }
    }
    let zero = konst(0.0, dilated.dtype());
    let padded = pad_stage(&mut t, &dilated, &before, &after, zero, ("data_pad", "i"), true)
        .or_skip("the padding is not supported")?;
    let kern = if dil.iter().any(|&d| d > 1) {
        dilate_stage(&mut t, "kernel_dilate", &w, &dil)
    } else {
        w.clone()
    };
    let kshape = kern.shape().to_vec();
    let mut tshape = kshape.clone();
    tshape.swap(0, 1);
    let kb = kern.clone();
    let sp: &[&str] = match n {
        1 => &["w"],
        2 => &["h", "w"],
        _ => &["d", "h", "w"],
    };
    let knames: Vec<String> = ["o", "i"].iter().chain(sp).map(|s| s.to_string()).collect();
    let kt = t.compute_named(
        if n == 1 { "kernel" } else { "kernel_transform" },
        &tshape,
        &knames,
        |i| {
            let mut idx = vec![i[1].clone(), i[0].clone()];
            for k in 0..n {
                idx.push(flip_index(&kshape[2 + k], i[2 + k].clone()));
            }
            PrimExpr::load(&kb, idx)
        },
    );
    let in_c = x.shape()[1].clone();
    let ipg = if groups == 1 { in_c } else { div_const(&in_c, groups) };
    let opg = kshape[1].clone();
    let mut snames: Vec<String> = vec!["b".into(), "c".into()];
    snames.extend(sp.iter().map(|s| s.to_string()));
    let mut red_axes: Vec<(String, PrimExpr)> = vec![("dc".into(), ipg.clone())];
    for k in 0..n {
        red_axes.push((format!("d{}", sp[k]), PrimExpr::int(keff[k])));
    }
    let operands = (&padded, &kt);
    conv_sum(
        &mut t,
        Reduce::sum("compute", out_shape, "", red_axes, odt),
        &snames,
        operands,
        |s, r| {
            let c = &s[1];
            let (chan, kc) = if groups == 1 {
                (r[0].clone(), c.clone())
            } else {
                let g0 = mul(PrimExpr::binary(BinOp::FloorDiv, c.clone(), opg.clone()), ipg.clone());
                (
                    add(g0, r[0].clone()),
                    PrimExpr::binary(BinOp::FloorMod, c.clone(), opg.clone()),
                )
            };
            let mut pidx = vec![s[0].clone(), chan.clone()];
            let mut kidx = vec![kc, chan];
            for k in 0..n {
                pidx.push(add(s[2 + k].clone(), r[1 + k].clone()));
                kidx.push(r[1 + k].clone());
            }
            (pidx, kidx)
        },
    );
    Ok(Lowered::from_te(&format!("conv{n}d_transpose"), t, 1, ctx.out.clone()))
}

/// `nn.conv1d`.
pub(crate) fn conv1d(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    conv_nd(ctx, 1)
}

/// `nn.conv2d`.
pub(crate) fn conv2d(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    conv_nd(ctx, 2)
}

/// `nn.conv3d`.
pub(crate) fn conv3d(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    conv_nd(ctx, 3)
}

/// The legalizations of this family's other operators (PrimFunc builders; see
/// [`super::lower_or_skip`]).
pub mod lowered {
    super::super::lowered_legalizations!(
        conv1d_transpose => |ctx| super::conv_transpose_nd(ctx, 1),
        conv2d_transpose => |ctx| super::conv_transpose_nd(ctx, 2),
        conv3d_transpose => |ctx| super::conv_transpose_nd(ctx, 3),
    );
}
