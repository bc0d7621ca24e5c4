//! Convolution schedules on the GPU against the host: implicit GEMMs over all output
//! pixels (small spatial extents, batches, strides), 1x1, grouped and depthwise
//! convolutions, with edge tiles and odd sizes.

mod common;

use std::sync::Arc;
use std::time::Instant;

use common::*;
use relax_ir::tir::{Buffer, PrimExpr};
use relax_ir::{DataType, PrimFunc};
use relax_jit::{Arg, GpuArg, HostTensor, Jit};

const F32: DataType = DataType::FLOAT32;

/// `out[n, co, h, w] = sum(x[n, g*cig + ci, h*s + kh, w*s + kw] * wt[co, ci, kh, kw])`
/// with `g = co / (co_n / groups)`, `cig = ci_n / groups` (no padding: the input is
/// taken as already padded, as TVM's legalized conv2d reads its `pad_temp`).
fn conv_func(n: i64, ci: i64, hw: i64, co: i64, k: i64, s: i64, groups: i64) -> PrimFunc {
    let o = (hw - k) / s + 1;
    let cig = ci / groups;
    let cog = co / groups;
    let x = Buffer::new("X", F32, shape(&[n, ci, hw, hw]));
    let w = Buffer::new("Wt", F32, shape(&[co, cig, k, k]));
    let out = Buffer::new("Out", F32, shape(&[n, co, o, o]));
    let body = grid_block("conv", &shape(&[n, co, o, o, cig, k, k]), "SSSSRRR", |v| {
        let oi: Vec<PrimExpr> = v[..4].to_vec();
        let init = store(&out, &oi, PrimExpr::float_of(0.0, F32));
        let sc = i64c(s);
        let chan = if groups == 1 {
            v[4].clone()
        } else {
            bin(relax_ir::tir::BinOp::FloorDiv, v[1].clone(), i64c(cog)) * i64c(cig) + v[4].clone()
        };
        let xi = [
            v[0].clone(),
            chan,
            v[2].clone() * sc.clone() + v[5].clone(),
            v[3].clone() * sc + v[6].clone(),
        ];
        let wi = [v[1].clone(), v[4].clone(), v[5].clone(), v[6].clone()];
        let upd = store(&out, &oi, load(&out, &oi) + load(&x, &xi) * load(&w, &wi));
        (Some(init), upd)
    });
    prim_func(&[x, w, out], &[], vec![], body)
}

fn out_hw(hw: i64, k: i64, s: i64) -> i64 {
    (hw - k) / s + 1
}

/// Host and GPU results of one convolution on pseudo-random data.
/// `(n, ci, hw, co, k, s, groups)` as in [`conv_func`].
type Case = (i64, i64, i64, i64, i64, i64, i64);

fn check(&(n, ci, hw, co, k, s, groups): &Case, gpu: &Jit) {
    let f = conv_func(n, ci, hw, co, k, s, groups);
    let o = out_hw(hw, k, s);
    let xv = rand_vec((n * ci * hw * hw) as usize, 21, -1.0, 1.0);
    let wv = rand_vec((co * (ci / groups) * k * k) as usize, 22, -1.0, 1.0);
    let x = HostTensor::from_f64s(F32, &[n, ci, hw, hw], &xv).unwrap();
    let w = HostTensor::from_f64s(F32, &[co, ci / groups, k, k], &wv).unwrap();
    let mut results = Vec::new();
    for on_gpu in [false, true] {
        let (mut x, mut w) = (x.clone(), w.clone());
        let mut out = HostTensor::zeros(F32, &[n, co, o, o]).unwrap();
        let mut args = [Arg::Tensor(&mut x), Arg::Tensor(&mut w), Arg::Tensor(&mut out)];
        if on_gpu {
            gpu.run_gpu(&f, &mut args).expect("gpu run");
        } else {
            Jit::new(None).run_host(&f, &mut args).expect("host run");
        }
        results.push(out.to_f64_vec());
    }
    assert_close(
        &results[1],
        &results[0],
        1e-4,
        1e-4,
        &format!("conv n={n} ci={ci} hw={hw} co={co} k={k} s={s} groups={groups}"),
    );
}

#[test]
fn small_spatial_and_batched_convolutions_match_host() {
    let Some(gpu) = gpu_jit() else { return };
    // (n, ci, hw, co, k, s, groups): 7x7 and 14x14 outputs, 1x1 with stride, odd
    // channel counts (edge tiles on both axes), batches, a 3x3 over padded input.
    for &(n, ci, hw, co, k, s, g) in &[
        (1i64, 32i64, 7i64, 64i64, 1i64, 1i64, 1i64),
        (1, 24, 9, 40, 3, 1, 1),
        (1, 16, 16, 48, 3, 1, 1),
        (2, 8, 15, 20, 1, 2, 1),
        (3, 5, 8, 17, 3, 2, 1),
        (1, 64, 14, 100, 1, 1, 1),
        (1, 3, 5, 1, 1, 1, 1),
    ] {
        check(&(n, ci, hw, co, k, s, g), &gpu);
    }
}

#[test]
fn grouped_and_depthwise_convolutions_match_host() {
    let Some(gpu) = gpu_jit() else { return };
    for &(n, ci, hw, co, k, s, g) in &[
        (1i64, 16i64, 9i64, 16i64, 3i64, 1i64, 16i64),
        (2, 24, 16, 24, 3, 2, 24),
        (1, 12, 10, 24, 3, 1, 3),
        (1, 8, 7, 8, 1, 1, 2),
    ] {
        check(&(n, ci, hw, co, k, s, g), &gpu);
    }
}

/// GFLOP/s of a few ResNet-50 convolutions on device-resident buffers (ignored: a
/// measurement, run with `--ignored --nocapture`).
#[test]
#[ignore]
fn conv_timing() {
    let Some(gpu) = gpu_jit() else { return };
    let rt = Arc::clone(gpu.gpu().unwrap());
    for &(n, ci, hw, co, k, s) in &[
        (1i64, 64i64, 56i64, 256i64, 1i64, 1i64),
        (1, 64, 58, 64, 3, 1),
        (1, 256, 16, 256, 3, 1),
        (1, 1024, 14, 256, 1, 1),
        (1, 512, 9, 512, 3, 1),
        (1, 512, 7, 2048, 1, 1),
    ] {
        let f = conv_func(n, ci, hw, co, k, s, 1);
        let o = out_hw(hw, k, s);
        let xs = [n, ci, hw, hw];
        let ws = [co, ci, k, k];
        let os = [n, co, o, o];
        let xb = rt.upload_pod(&vec![0.5f32; (n * ci * hw * hw) as usize]).unwrap();
        let wb = rt.upload_pod(&vec![0.25f32; (co * ci * k * k) as usize]).unwrap();
        let ob = rt.alloc((n * co * o * o * 4) as u64).unwrap();
        let args = [
            GpuArg::Buffer {
                buf: &xb,
                dtype: F32,
                shape: &xs,
            },
            GpuArg::Buffer {
                buf: &wb,
                dtype: F32,
                shape: &ws,
            },
            GpuArg::Buffer {
                buf: &ob,
                dtype: F32,
                shape: &os,
            },
        ];
        gpu.run_gpu_resident(&f, &args).unwrap();
        rt.synchronize().unwrap();
        let mut ts = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            gpu.run_gpu_resident(&f, &args).unwrap();
            rt.synchronize().unwrap();
            ts.push(t.elapsed().as_secs_f64());
        }
        ts.sort_by(f64::total_cmp);
        let flop = 2.0 * (n * co * o * o * ci * k * k) as f64;
        println!(
            "conv n={n} ci={ci} hw={hw} co={co} k={k} s={s}: {:.3} ms, {:.2} GFLOP/s",
            ts[2] * 1e3,
            flop / ts[2] / 1e9
        );
        if std::env::var_os("CONV_WGSL").is_some() {
            println!("{}", gpu.wgsl(&f).unwrap());
        }
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
    let rt = Arc::clone(gpu.gpu().unwrap());
    for &(n, c, h, co, k, s, p) in &[
        (1i64, 64i64, 56i64, 64i64, 3i64, 1i64, 1i64),
        (1, 128, 55, 16, 1, 1, 0),
        (1, 1024, 14, 256, 1, 1, 0),
    ] {
        let f = fused_conv_func(n, c, h, co, k, s, p);
        let o = (h + 2 * p - k) / s + 1;
        let (xs, ws, bs, os) = ([n, c, h, h], [co, c, k, k], [co], [n, co, o, o]);
        let xb = rt.upload_pod(&vec![0.5f32; (n * c * h * h) as usize]).unwrap();
        let wb = rt.upload_pod(&vec![0.25f32; (co * c * k * k) as usize]).unwrap();
        let bb = rt.upload_pod(&vec![0.25f32; co as usize]).unwrap();
        let ob = rt.alloc((n * co * o * o * 4) as u64).unwrap();
        let args = [
            GpuArg::Buffer {
                buf: &xb,
                dtype: F32,
                shape: &xs,
            },
            GpuArg::Buffer {
                buf: &wb,
                dtype: F32,
                shape: &ws,
            },
            GpuArg::Buffer {
                buf: &bb,
                dtype: F32,
                shape: &bs,
            },
            GpuArg::Buffer {
                buf: &ob,
                dtype: F32,
                shape: &os,
            },
        ];
        gpu.run_gpu_resident(&f, &args).unwrap();
        rt.synchronize().unwrap();
        let mut ts = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            gpu.run_gpu_resident(&f, &args).unwrap();
            rt.synchronize().unwrap();
            ts.push(t.elapsed().as_secs_f64());
        }
        ts.sort_by(f64::total_cmp);
        let flop = 2.0 * (n * co * o * o * c * k * k) as f64;
        println!(
            "fused conv c={c} h={h} co={co} k={k}: {:.3} ms, {:.2} GFLOP/s",
            ts[1] * 1e3,
            flop / ts[1] / 1e9
        );
        if std::env::var_os("CONV_WGSL").is_some() {
            println!("{}", gpu.wgsl(&f).unwrap());
        }
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
        let inputs = [
            HostTensor::from_f64s(F32, &[n, c, h, h], &rand_vec((n * c * h * h) as usize, 31, -1.0, 1.0)).unwrap(),
            HostTensor::from_f64s(F32, &[co, c, k, k], &rand_vec((co * c * k * k) as usize, 32, -1.0, 1.0)).unwrap(),
            HostTensor::from_f64s(F32, &[co], &rand_vec(co as usize, 33, -0.5, 0.5)).unwrap(),
        ];
        let mut results = Vec::new();
        for on_gpu in [false, true] {
            let mut ins = inputs.to_vec();
            let mut out = HostTensor::zeros(F32, &[n, co, o, o]).unwrap();
            let mut args: Vec<Arg> = ins.iter_mut().map(Arg::Tensor).collect();
            args.push(Arg::Tensor(&mut out));
            if on_gpu {
                gpu.run_gpu(&f, &mut args).expect("gpu run");
            } else {
                Jit::new(None).run_host(&f, &mut args).expect("host run");
            }
            results.push(out.to_f64_vec());
        }
        assert_close(
            &results[1],
            &results[0],
            1e-4,
            1e-4,
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
        let a = Buffer::new("A", F32, shape(&[m, k]));
        let b = Buffer::new("B", F32, shape(&[k, n]));
        let c = Buffer::new("C", F32, shape(&[m, n]));
        let body = grid_block("mm", &shape(&[m, n, k]), "SSR", |v| {
            let ci = [v[0].clone(), v[1].clone()];
            let init = store(&c, &ci, PrimExpr::float_of(0.0, F32));
            let upd = store(
                &c,
                &ci,
                load(&c, &ci) + load(&a, &[v[0].clone(), v[2].clone()]) * load(&b, &[v[2].clone(), v[1].clone()]),
            );
            (Some(init), upd)
        });
        let f = prim_func(&[a, b, c], &[], vec![], body);
        let inputs = [
            HostTensor::from_f64s(F32, &[m, k], &rand_vec((m * k) as usize, 41, -1.0, 1.0)).unwrap(),
            HostTensor::from_f64s(F32, &[k, n], &rand_vec((k * n) as usize, 42, -1.0, 1.0)).unwrap(),
        ];
        let mut results = Vec::new();
        for on_gpu in [false, true] {
            let mut ins = inputs.to_vec();
            let mut out = HostTensor::zeros(F32, &[m, n]).unwrap();
            let mut args: Vec<Arg> = ins.iter_mut().map(Arg::Tensor).collect();
            args.push(Arg::Tensor(&mut out));
            if on_gpu {
                gpu.run_gpu(&f, &mut args).expect("gpu run");
            } else {
                Jit::new(None).run_host(&f, &mut args).expect("host run");
            }
            results.push(out.to_f64_vec());
        }
        assert_close(&results[1], &results[0], 1e-4, 1e-4, &format!("matmul {m}x{k}x{n}"));
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
    let rt = Arc::new(relax_gpu_runtime::GpuRuntime::shared_default().ok()?);
    let caps = relax_jit::DeviceCaps {
        f16: rt.supports_f16(),
        f64: rt.supports_f64(),
        i64: rt.supports_i64(),
        max_binding_bytes: rt.max_binding_bytes(),
        binding_align: u64::from(rt.limits().min_storage_buffer_offset_alignment),
    };
    let opts = relax_jit::ScheduleOptions {
        vec4_reduction: true,
        ..Default::default()
    };
    Some(Jit::with_options(Some(rt), caps, opts))
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
        let a = Buffer::new("A", F32, shape(&[m, k]));
        let b = Buffer::new("B", F32, shape(&[k, n]));
        let c = Buffer::new("C", F32, shape(&[m, n]));
        let body = grid_block("mm", &shape(&[m, n, k]), "SSR", |v| {
            let ci = [v[0].clone(), v[1].clone()];
            let init = store(&c, &ci, PrimExpr::float_of(0.0, F32));
            let upd = store(
                &c,
                &ci,
                load(&c, &ci) + load(&a, &[v[0].clone(), v[2].clone()]) * load(&b, &[v[2].clone(), v[1].clone()]),
            );
            (Some(init), upd)
        });
        let f = prim_func(&[a, b, c], &[], vec![], body);
        let inputs = [
            HostTensor::from_f64s(F32, &[m, k], &rand_vec((m * k) as usize, 51, -1.0, 1.0)).unwrap(),
            HostTensor::from_f64s(F32, &[k, n], &rand_vec((k * n) as usize, 52, -1.0, 1.0)).unwrap(),
        ];
        for (gpu, want) in [(&plain, want), (&unrolled, want_red)] {
            assert_eq!(vec4_bindings(gpu, &f), want, "vec4 bindings of matmul {m}x{k}x{n}");
            let mut results = Vec::new();
            for on_gpu in [false, true] {
                let mut ins = inputs.to_vec();
                let mut out = HostTensor::zeros(F32, &[m, n]).unwrap();
                let mut args: Vec<Arg> = ins.iter_mut().map(Arg::Tensor).collect();
                args.push(Arg::Tensor(&mut out));
                if on_gpu {
                    gpu.run_gpu(&f, &mut args).expect("gpu run");
                } else {
                    Jit::new(None).run_host(&f, &mut args).expect("host run");
                }
                results.push(out.to_f64_vec());
            }
            assert_close(&results[1], &results[0], 1e-4, 1e-4, &format!("matmul {m}x{k}x{n}"));
        }
    }
}

/// A JIT on the shared adapter whose implicit-GEMM workgroups are shaped for
/// `workers` workgroups running at once.
fn balanced_jit(workers: u32) -> Option<Jit> {
    let rt = Arc::new(relax_gpu_runtime::GpuRuntime::shared_default().ok()?);
    let caps = relax_jit::DeviceCaps {
        f16: rt.supports_f16(),
        f64: rt.supports_f64(),
        i64: rt.supports_i64(),
        max_binding_bytes: rt.max_binding_bytes(),
        binding_align: u64::from(rt.limits().min_storage_buffer_offset_alignment),
    };
    let opts = relax_jit::ScheduleOptions {
        parallel_groups: workers,
        ..Default::default()
    };
    Some(Jit::with_options(Some(rt), caps, opts))
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
