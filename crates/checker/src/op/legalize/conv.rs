//! `conv2d` as `topi.nn.conv2d_nchw` / `conv2d_nhwc` / `group_conv2d_nchw`
//! lower it: a padded copy of the input (`pad_temp`, always present) and one
//! reduction block over input channels and the kernel window.

use relax_ir::tir::BinOp;
use relax_ir::{Attrs, PrimExpr};

use super::pool::pad_stage;
use super::te::{konst, Reduce, Te};
use super::{LegalizeCtx, LegalizeFn, Lowered};
use crate::op::common::{attr_int, attr_ints, attr_str};

fn add(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    PrimExpr::binary(BinOp::Add, a, b)
}

fn mul(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    PrimExpr::binary(BinOp::Mul, a, b)
}

/// `v * c`, or `v` when `c` is 1.
fn scale(v: PrimExpr, c: i64) -> PrimExpr {
    if c == 1 {
        v
    } else {
        mul(v, PrimExpr::int(c))
    }
}

/// `e // g` folded when `e` is static.
fn div_const(e: &PrimExpr, g: i64) -> PrimExpr {
    match e.as_int() {
        Some(v) => PrimExpr::int(v / g),
        None => PrimExpr::binary(BinOp::FloorDiv, e.clone(), PrimExpr::int(g)),
    }
}

fn two(ctx: &LegalizeCtx, key: &str) -> Option<[i64; 2]> {
    let v = attr_ints(ctx.call, key, &[1, 1]).ok()?;
    match v.as_slice() {
        [a] => Some([*a, *a]),
        [a, b] => Some([*a, *b]),
        _ => None,
    }
}

fn conv2d(ctx: &LegalizeCtx) -> Option<Lowered> {
    let (out_shape, odt) = ctx.out_tensor()?;
    let data_layout = attr_str(ctx.call, "data_layout", "NCHW");
    let kernel_layout = attr_str(ctx.call, "kernel_layout", "OIHW");
    let out_layout = attr_str(ctx.call, "out_layout", data_layout);
    let nhwc = match data_layout {
        "NCHW" => false,
        "NHWC" => true,
        _ => return None,
    };
    if out_layout != data_layout || !matches!(kernel_layout, "OIHW" | "HWIO") {
        return None;
    }
    let groups = attr_int(ctx.call, "groups", 1).ok()?;
    if groups < 1 || (groups > 1 && (nhwc || kernel_layout != "OIHW")) {
        return None;
    }
    let stride = two(ctx, "strides")?;
    let dil = two(ctx, "dilation")?;
    let p = attr_ints(ctx.call, "padding", &[0, 0, 0, 0]).ok()?;
    let pad = match p.as_slice() {
        [a] => [[*a, *a], [*a, *a]],
        [a, b] => [[*a, *a], [*b, *b]],
        [t, l, b, r] => [[*t, *b], [*l, *r]],
        _ => return None,
    };
    if stride.iter().chain(&dil).any(|&v| v < 1) || pad.iter().flatten().any(|&v| v < 0) {
        return None;
    }
    let mut t = Te::new();
    let x = t.placeholder(ctx.call.args.first()?, ctx.args.first()?.as_tensor()?)?;
    let w = t.placeholder(ctx.call.args.get(1)?, ctx.args.get(1)?.as_tensor()?)?;
    if x.shape().len() != 4 || w.shape().len() != 4 || out_shape.len() != 4 {
        return None;
    }
    let (c_ax, h_ax, w_ax) = if nhwc { (3, 1, 2) } else { (1, 2, 3) };
    let (kh_ax, kw_ax, ki_ax, ko_ax) = if kernel_layout == "OIHW" {
        (2, 3, 1, 0)
    } else {
        (0, 1, 2, 3)
    };
    let mut before = vec![0i64; 4];
    let mut after = vec![0i64; 4];
    before[h_ax] = pad[0][0];
    after[h_ax] = pad[0][1];
    before[w_ax] = pad[1][0];
    after[w_ax] = pad[1][1];
    let pad_value = konst(0.0, x.dtype());
    let padded = pad_stage(&mut t, &x, &before, &after, pad_value, "i", true)?;
    let in_c = x.shape()[c_ax].clone();
    let out_c = w.shape()[ko_ax].clone();
    let rc_ext = if groups == 1 {
        in_c.clone()
    } else {
        div_const(&in_c, groups)
    };
    let red_axes = {
        let rc = ("rc".to_string(), rc_ext.clone());
        let ry = ("ry".to_string(), w.shape()[kh_ax].clone());
        let rx = ("rx".to_string(), w.shape()[kw_ax].clone());
        if nhwc {
            vec![ry, rx, rc]
        } else {
            vec![rc, ry, rx]
        }
    };
    let snames: Vec<String> = if nhwc {
        ["nn", "yy", "xx", "ff"]
    } else {
        ["nn", "ff", "yy", "xx"]
    }
    .iter()
    .map(|s| s.to_string())
    .collect();
    let name = match (nhwc, groups > 1) {
        (false, false) => "conv2d_nchw",
        (false, true) => "group_conv2d_nchw",
        (true, _) => "conv2d_nhwc",
    };
    let cast = |v: PrimExpr| if v.dtype() == odt { v } else { v.cast(odt) };
    t.reduce_named(
        Reduce {
            name,
            shape: out_shape,
            spatial_prefix: "",
            red_axes,
            init: konst(0.0, odt),
        },
        &snames,
        Attrs::new(),
        add,
        |s, r| {
            let (nn, ff, yy, xx) = if nhwc {
                (&s[0], &s[3], &s[1], &s[2])
            } else {
                (&s[0], &s[1], &s[2], &s[3])
            };
            let (rc, ry, rx) = if nhwc {
                (&r[2], &r[0], &r[1])
            } else {
                (&r[0], &r[1], &r[2])
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
            let yi = add(scale(yy.clone(), stride[0]), scale(ry.clone(), dil[0]));
            let xi = add(scale(xx.clone(), stride[1]), scale(rx.clone(), dil[1]));
            let mut pidx = vec![nn.clone(); 4];
            pidx[c_ax] = chan;
            pidx[h_ax] = yi;
            pidx[w_ax] = xi;
            let mut widx = vec![ff.clone(); 4];
            widx[ki_ax] = rc.clone();
            widx[kh_ax] = ry.clone();
            widx[kw_ax] = rx.clone();
            widx[ko_ax] = ff.clone();
            mul(cast(PrimExpr::load(&padded, pidx)), cast(PrimExpr::load(&w, widx)))
        },
    );
    Some(Lowered::from_te("conv2d", t, 1, ctx.out.clone()))
}

/// The convolution operators.
pub static OPS: &[(&str, LegalizeFn)] = &[("relax.nn.conv2d", conv2d)];
