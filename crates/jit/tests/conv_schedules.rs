//! Convolution schedules on the GPU against the host: implicit GEMMs over all output
//! pixels (small spatial extents, batches, strides), 1x1, grouped and depthwise
//! convolutions, with edge tiles and odd sizes.

mod common;

use std::sync::Arc;

use common::*;

use relax_ir::PrimFunc;
use relax_jit::Jit;

fn out_hw(hw: i64, k: i64, s: i64) -> i64 {
    (hw - k) / s + 1
}

/// Host and GPU results of one convolution on pseudo-random data.
/// `(n, ci, hw, co, k, s, groups)` as in [`conv_func`].
type Case = (i64, i64, i64, i64, i64, i64, i64);

fn check(&(n, ci, hw, co, k, s, groups): &Case, gpu: &Jit) {
    let f = conv_func(n, ci, hw, co, k, s, groups);
    let what = format!("conv n={n} ci={ci} hw={hw} co={co} k={k} s={s} groups={groups}");
    assert_gpu_matches_host_on_random(gpu, &f, 21, &what);
}

/// Small spatial extents, batches, grouped and depthwise convolutions match the host.
#[test]
fn small_spatial_batched_grouped_and_depthwise_convolutions_match_host() {
    let Some(gpu) = gpu_jit() else { return };
    let cases: [Case; 11] = [
        // 7x7 and 14x14 outputs, 1x1 with stride, odd channel counts (edge tiles on
        // both axes), batches, a 3x3 over padded input.
        (1, 32, 7, 64, 1, 1, 1),
        (1, 24, 9, 40, 3, 1, 1),
        (1, 16, 16, 48, 3, 1, 1),
        (2, 8, 15, 20, 1, 2, 1),
        (3, 5, 8, 17, 3, 2, 1),
        (1, 64, 14, 100, 1, 1, 1),
        (1, 3, 5, 1, 1, 1, 1),
        // Grouped and depthwise.
        (1, 16, 9, 16, 3, 1, 16),
        (2, 24, 16, 24, 3, 2, 24),
        (1, 12, 10, 24, 3, 1, 3),
        (1, 8, 7, 8, 1, 1, 2),
    ];
    for case in &cases {
        check(case, &gpu);
    }
}

/// Print the median time of `f` (after `reps` runs) on device-resident float32
/// tensors of its buffer parameters' shapes (its inputs, the first filled with 0.5
/// and the others with 0.25, then its output) and the GFLOP/s for `flop`
/// operations, labelled `what`; its WGSL too when `CONV_WGSL` is set.
fn report_timing(gpu: &Jit, f: &PrimFunc, reps: usize, flop: f64, what: &str) {
    let rt = Arc::clone(gpu.gpu().unwrap());
    let shapes: Vec<Vec<i64>> = buffer_params(f).into_iter().map(|(_, s)| s).collect();
    let (out_shape, in_shapes) = shapes.split_last().unwrap();
    let numel = |s: &[i64]| s.iter().product::<i64>() as usize;
    let mut bufs: Vec<_> = in_shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            rt.upload_pod(&vec![if i == 0 { 0.5f32 } else { 0.25 }; numel(s)])
                .unwrap()
        })
        .collect();
    bufs.push(rt.alloc((numel(out_shape) * 4) as u64).unwrap());
    let tensors: Vec<_> = bufs.iter().zip(&shapes).map(|(b, s)| (b, &s[..])).collect();
    let t = time_resident(gpu, f, &tensors, reps);
    println!("{what}: {:.3} ms, {:.2} GFLOP/s", t * 1e3, flop / t / 1e9);
    if std::env::var_os("CONV_WGSL").is_some() {
        println!("{}", gpu.wgsl(f).unwrap());
    }
}

/// GFLOP/s of a few ResNet-50 convolutions on device-resident buffers (ignored: a
/// measurement, run with `--ignored --nocapture`).
#[test]
#[ignore]
fn conv_timing() {
    let Some(gpu) = gpu_jit() else { return };
    for &(n, ci, hw, co, k, s) in &[
        (1i64, 64i64, 56i64, 256i64, 1i64, 1i64),
        (1, 64, 58, 64, 3, 1),
        (1, 256, 16, 256, 3, 1),
        (1, 1024, 14, 256, 1, 1),
        (1, 512, 9, 512, 3, 1),
        (1, 512, 7, 2048, 1, 1),
    ] {
        let o = out_hw(hw, k, s);
        let flop = 2.0 * (n * co * o * o * ci * k * k) as f64;
        let what = format!("conv n={n} ci={ci} hw={hw} co={co} k={k} s={s}");
        report_timing(&gpu, &conv_func(n, ci, hw, co, k, s, 1), 5, flop, &what);
    }
}

/// A convolution fused with its epilogue the way the TIR fusion writes it: padding
/// as `if_then_else` in the reduction, a local accumulator, then
/// `relu(acc + bias)` stored per output.
fn fused_conv_func(n: i64, c: i64, h: i64, co: i64, k: i64, s: i64, p: i64) -> PrimFunc {
    let o = (h + 2 * p - k) / s + 1;
    let i = |v: i64| format!("T.int64({v})");
    let (yi, xi) = (format!("yy * {} + ry", i(s)), format!("xx * {} + rx", i(s)));
    let src = format!(
        r#"from tvm.script import ir as I
from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def f(x: T.Buffer(({n}, {c}, {h}, {h}), "float32"), w: T.Buffer(({co}, {c}, {k}, {k}), "float32"), b: T.Buffer(({co},), "float32"), y: T.Buffer(({n}, {co}, {o}, {o}), "float32")):
        T.func_attr({{"tirx.noalias": True}})
        with T.sblock("root"):
            T.reads()
            T.writes()
            for nn in T.parallel({n}):
                for ff in T.parallel({co}):
                    for yy in T.parallel({o}):
                        for xx in T.parallel({o}):
                            acc: T.float32 = T.float32(0.0)
                            for rc, ry, rx in T.grid({c}, {k}, {k}):
                                acc = acc + T.if_then_else({p} <= {yi} and {yi} < {hp} and {p} <= {xi} and {xi} < {hp}, x[nn, rc, {yi} - {p}, {xi} - {p}], T.float32(0.0)) * w[ff, rc, ry, rx]
                            y[nn, ff, yy, xx] = T.max(acc + b[ff], T.float32(0.0))
"#,
        n = i(n),
        c = i(c),
        h = i(h),
        co = i(co),
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

#[test]
#[ignore]
fn fused_conv_timing() {
    let Some(gpu) = gpu_jit() else { return };
    for &(n, c, h, co, k, s, p) in &[
        (1i64, 64i64, 56i64, 64i64, 3i64, 1i64, 1i64),
        (1, 128, 55, 16, 1, 1, 0),
        (1, 1024, 14, 256, 1, 1, 0),
    ] {
        let o = (h + 2 * p - k) / s + 1;
        let flop = 2.0 * (n * co * o * o * c * k * k) as f64;
        let what = format!("fused conv c={c} h={h} co={co} k={k}");
        report_timing(&gpu, &fused_conv_func(n, c, h, co, k, s, p), 3, flop, &what);
    }
}

/// Convolutions fused with a bias + ReLU epilogue (padding inside the reduction)
/// take the register-tiled schedule and match the host: padding, strides, a batch,
/// odd channel counts and pixel counts that leave partial tiles.
#[test]
fn fused_convolutions_with_epilogue_match_host() {
    let Some(gpu) = gpu_jit() else { return };
    for &(n, c, h, co, k, s, p) in &[
        (1i64, 16i64, 14i64, 32i64, 3i64, 1i64, 1i64),
        (2, 5, 9, 17, 3, 2, 1),
        (1, 24, 7, 40, 1, 1, 0),
        (1, 3, 15, 20, 7, 2, 3),
        (3, 8, 6, 16, 3, 1, 2),
    ] {
        let f = fused_conv_func(n, c, h, co, k, s, p);
        let src = gpu.wgsl(&f).unwrap();
        assert!(
            src.kernels.iter().any(|kk| kk.wgsl.contains("xb")),
            "fused convolution not register-tiled:\n{src}"
        );
        let o = (h + 2 * p - k) / s + 1;
        let mut inputs = random_f32_inputs(&[[n, c, h, h], [co, c, k, k]], |i| 31 + i as u64, -1.0, 1.0);
        inputs.extend(random_f32_inputs(&[[co]], |_| 33, -0.5, 0.5));
        assert_gpu_matches_host(
            &gpu,
            &f,
            &inputs,
            &[n, co, o, o],
            &format!("fused conv n={n} c={c} h={h} co={co} k={k} s={s} p={p}"),
        );
    }
}

/// Matrix-vector products (1 to 5 rows) take the short-row GEMM tile and match the
/// host, including a column count that leaves a partial workgroup.
#[test]
fn short_row_matmuls_match_host() {
    let Some(gpu) = gpu_jit() else { return };
    for &(m, k, n) in &[(1i64, 300i64, 100i64), (3, 64, 129), (5, 17, 1000)] {
        let f = matmul_func_named("mm", m, k, n);
        assert_gpu_matches_host_on_random(&gpu, &f, 41, &format!("matmul {m}x{k}x{n}"));
    }
}

/// The number of `vec4` storage bindings of `f`'s kernels.
fn vec4_bindings(gpu: &Jit, f: &PrimFunc) -> usize {
    let src = gpu.wgsl(f).expect("wgsl");
    src.kernels
        .iter()
        .map(|k| k.bindings.iter().filter(|b| b.vec4).count())
        .sum()
}

/// A JIT on the shared adapter with the row operand's four-element loads on.
fn vec4_reduction_jit() -> Option<Jit> {
    gpu_jit_with(relax_jit::ScheduleOptions {
        vec4_reduction: true,
        ..Default::default()
    })
}

/// Four-element operand loads: inputs contiguous along the output pixels (1x1,
/// stride 1, batch 1, pixels a multiple of 4), a matmul's left operand along the
/// reduction and, with `vec4_reduction` or in convolutions of at least 64M
/// multiply-adds, weights contiguous along the reduction (input channels x window
/// a multiple of 4), with
/// edge tiles on both axes; other shapes keep scalar loads. All match the host.
#[test]
fn vec4_operand_loads_match_host() {
    let Some(plain) = gpu_jit() else { return };
    let Some(unrolled) = vec4_reduction_jit() else { return };
    // (case, vec4 bindings by default, with vec4_reduction)
    for &((n, ci, hw, co, k, s, g), want, want_red) in &[
        ((1i64, 32i64, 8i64, 40i64, 1i64, 1i64, 1i64), 1usize, 2usize),
        ((1, 12, 6, 20, 3, 1, 1), 0, 1),
        ((2, 16, 4, 24, 1, 1, 1), 0, 1),
        ((1, 16, 10, 24, 1, 2, 1), 0, 1),
        ((1, 3, 9, 20, 3, 1, 1), 0, 0),
        // 64M multiply-adds: four-element weight loads whatever the option.
        ((1, 256, 32, 256, 1, 1, 1), 2, 2),
    ] {
        let f = conv_func(n, ci, hw, co, k, s, g);
        for (gpu, want) in [(&plain, want), (&unrolled, want_red)] {
            assert_eq!(
                vec4_bindings(gpu, &f),
                want,
                "vec4 bindings of conv n={n} ci={ci} hw={hw} co={co} k={k} s={s}"
            );
            check(&(n, ci, hw, co, k, s, g), gpu);
        }
    }
    for &(m, k, n, want, want_red) in &[
        (64i64, 36i64, 20i64, 2usize, 2usize),
        (30, 40, 13, 1, 1),
        (33, 18, 24, 1, 1),
        (20, 7, 9, 0, 0),
    ] {
        let f = matmul_func_named("mm", m, k, n);
        for (gpu, want) in [(&plain, want), (&unrolled, want_red)] {
            assert_eq!(vec4_bindings(gpu, &f), want, "vec4 bindings of matmul {m}x{k}x{n}");
            assert_gpu_matches_host_on_random(gpu, &f, 51, &format!("matmul {m}x{k}x{n}"));
        }
    }
}

/// A JIT on the shared adapter whose implicit-GEMM workgroups are shaped for
/// `workers` workgroups running at once.
fn balanced_jit(workers: u32) -> Option<Jit> {
    gpu_jit_with(relax_jit::ScheduleOptions {
        parallel_groups: workers,
        ..Default::default()
    })
}

/// Workgroups shaped for a known number of workers (a software adapter's
/// threads): row and column thread counts that are not powers of two (48 output
/// channels over 13x13 pixels take 6 x 4 threads on two workers), edge tiles on
/// both axes, batches; all match the host.
#[test]
fn workgroups_balanced_over_workers_match_host() {
    for workers in [2u32, 3, 16] {
        let Some(gpu) = balanced_jit(workers) else { return };
        for &case in &[
            (1i64, 24i64, 13i64, 48i64, 1i64, 1i64, 1i64),
            (1, 16, 15, 40, 3, 1, 1),
            (2, 8, 11, 36, 1, 1, 1),
            (1, 12, 29, 20, 3, 2, 1),
        ] {
            check(&case, &gpu);
        }
    }
    // The 13x13, 48-channel case on two workers: six 24-thread workgroups.
    let Some(gpu) = balanced_jit(2) else { return };
    let src = gpu.wgsl(&conv_func(1, 24, 13, 48, 1, 1, 1)).expect("wgsl");
    assert_eq!(src.kernels[0].workgroup_size, [24, 1, 1]);
}
