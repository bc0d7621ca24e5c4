//! Grouped convolutions on the per-group GEMM schedule and depthwise convolutions on
//! the register-tiled direct window schedule, against the host: groups of one,
//! channel counts that are not multiples of the tiles, strides, padding, output
//! widths that leave partial thread tiles, and each fused with a batch-norm-like
//! epilogue the way the TIR fusion writes it.

mod common;

use common::*;

use relax_ir::PrimFunc;
use relax_jit::Jit;

/// A (grouped) convolution fused with a per-channel scale and shift, as the TIR
/// fusion writes `conv2d` + batch norm: padding as `if_then_else` in the reduction,
/// a local accumulator, then `acc * a[ff] + b[ff]` stored per output.
#[allow(clippy::too_many_arguments)]
fn fused_group_conv(n: i64, c: i64, h: i64, co: i64, k: i64, s: i64, p: i64, groups: i64) -> PrimFunc {
    let o = (h + 2 * p - k) / s + 1;
    let i = |v: i64| format!("T.int64({v})");
    let (cig, cog) = (c / groups, co / groups);
    let (yi, xi) = (format!("yy * {} + ry", i(s)), format!("xx * {} + rx", i(s)));
    // As the legalization writes it: the group's first input channel only with groups.
    let chan = if groups == 1 {
        "rc".to_string()
    } else {
        format!("ff // {} * {} + rc", i(cog), i(cig))
    };
    let src = format!(
        r#"from tvm.script import ir as I
from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def f(x: T.Buffer(({n}, {c}, {h}, {h}), "float32"), w: T.Buffer(({co}, {cig}, {k}, {k}), "float32"), a: T.Buffer(({co},), "float32"), b: T.Buffer(({co},), "float32"), y: T.Buffer(({n}, {co}, {o}, {o}), "float32")):
        T.func_attr({{"tirx.noalias": True}})
        with T.sblock("root"):
            T.reads()
            T.writes()
            for nn in T.parallel({n}):
                for ff in T.parallel({co}):
                    for yy in T.parallel({o}):
                        for xx in T.parallel({o}):
                            acc: T.float32 = T.float32(0.0)
                            for rc, ry, rx in T.grid({cig}, {k}, {k}):
                                acc = acc + T.if_then_else({p} <= {yi} and {yi} < {hp} and {p} <= {xi} and {xi} < {hp}, x[nn, {chan}, {yi} - {p}, {xi} - {p}], T.float32(0.0)) * w[ff, rc, ry, rx]
                            y[nn, ff, yy, xx] = acc * a[ff] + b[ff]
"#,
        n = i(n),
        c = i(c),
        h = i(h),
        co = i(co),
        cig = i(cig),
        k = i(k),
        o = i(o),
        p = i(p),
        hp = i(h + p),
    );
    let prog = relax_ir::text::parse(&src).unwrap_or_else(|d| panic!("{d}\n{src}"));
    let module = prog.into_module();
    match module.functions.values().next() {
        Some(relax_ir::BaseFunc::Prim(f)) => f.clone(),
        _ => panic!("no PrimFunc"),
    }
}

/// The WGSL of `f`'s kernels, joined.
fn wgsl_of(gpu: &Jit, f: &PrimFunc) -> String {
    let src = gpu.wgsl(f).unwrap();
    src.kernels
        .iter()
        .map(|k| k.wgsl.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Check a fused convolution against the host, and that its kernel has the
/// schedule whose register name `marker` is given.
#[allow(clippy::too_many_arguments)]
fn check_fused(gpu: &Jit, (n, c, h, co, k, s, p, groups): (i64, i64, i64, i64, i64, i64, i64, i64), marker: &str) {
    let f = fused_group_conv(n, c, h, co, k, s, p, groups);
    let what = format!("fused conv n={n} c={c} h={h} co={co} k={k} s={s} p={p} groups={groups}");
    let src = wgsl_of(gpu, &f);
    assert!(
        src.contains(marker),
        "{what}: not on the schedule with `{marker}`:\n{src}"
    );
    let o = (h + 2 * p - k) / s + 1;
    let mut inputs = random_f32_inputs(&[[n, c, h, h], [co, c / groups, k, k]], |i| 51 + i as u64, -1.0, 1.0);
    inputs.extend(random_f32_inputs(&[[co], [co]], |i| 53 + i as u64, -0.5, 0.5));
    assert_gpu_matches_host(gpu, &f, &inputs, &[n, co, o, o], &what);
}

/// Grouped convolutions with at least 16 output channels a group take the
/// per-group GEMM (register tiles, `xb` row bases) and match the host, fused with
/// the epilogue or not: ShuffleNet's 1x1 layers (4 groups of 28 and 34 channels),
/// channel counts that leave partial tiles, a 3x3 with padding and stride 2, a
/// batch, and 2 groups of 17 channels reading 3 input channels each.
#[test]
fn grouped_convolutions_take_the_per_group_gemm_and_match_host() {
    let Some(gpu) = gpu_jit() else { return };
    for case in [
        (1, 112, 9, 112, 1, 1, 0, 4),
        (1, 136, 7, 136, 1, 1, 0, 4),
        (1, 24, 10, 68, 3, 2, 1, 2),
        (2, 6, 9, 34, 3, 1, 1, 2),
        (1, 40, 11, 80, 1, 2, 0, 5),
    ] {
        check_fused(&gpu, case, "xb");
    }
    // Not fused: the legalized `group_conv2d_nchw` (padding in its own stage).
    for (n, ci, hw, co, k, s, g) in [(1i64, 112i64, 9i64, 112i64, 1i64, 1i64, 4i64), (2, 12, 11, 48, 3, 2, 3)] {
        let f = conv_func(n, ci, hw, co, k, s, g);
        let what = format!("conv n={n} ci={ci} hw={hw} co={co} k={k} s={s} groups={g}");
        let src = wgsl_of(&gpu, &f);
        assert!(src.contains("xb"), "{what}: not register-tiled:\n{src}");
        assert_gpu_matches_host_on_random(&gpu, &f, 61, &what);
    }
    // One group is a plain convolution: the implicit GEMM takes it as before.
    check_fused(&gpu, (1, 16, 9, 24, 3, 1, 1, 1), "xb");
}

/// Depthwise convolutions (and grouped ones with few channels a group) take the
/// direct window schedule (`xw` input registers) and match the host: 3x3 with
/// stride 1 and 2 and padding 1 (ShuffleNet's), output widths that are and are not
/// multiples of the thread tile, a 5x5 window, a channel multiplier of 2, a batch.
#[test]
fn depthwise_convolutions_take_the_window_schedule_and_match_host() {
    let Some(gpu) = gpu_jit() else { return };
    for case in [
        (1, 136, 28, 136, 3, 1, 1, 136),
        (1, 112, 56, 112, 3, 2, 1, 112),
        (1, 40, 7, 40, 3, 1, 1, 40),
        (2, 9, 13, 9, 3, 2, 1, 9),
        (1, 8, 17, 8, 5, 1, 2, 8),
        (1, 6, 10, 12, 3, 1, 0, 6),
        (1, 12, 9, 24, 3, 1, 1, 4),
    ] {
        check_fused(&gpu, case, "xw");
    }
    for (n, ci, hw, co, k, s, g) in [
        (1i64, 24i64, 15i64, 24i64, 3i64, 1i64, 24i64),
        (2, 10, 12, 10, 3, 2, 10),
    ] {
        let f = conv_func(n, ci, hw, co, k, s, g);
        let what = format!("conv n={n} ci={ci} hw={hw} co={co} k={k} s={s} groups={g}");
        let src = wgsl_of(&gpu, &f);
        assert!(src.contains("xw"), "{what}: not on the window schedule:\n{src}");
        assert_gpu_matches_host_on_random(&gpu, &f, 67, &what);
    }
}
