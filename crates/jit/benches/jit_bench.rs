//! JIT benchmarks (run with `cargo bench -p relax-jit`): GPU matmul schedule vs a
//! naive one-thread-per-output schedule, host matmul vs ndarray, host elementwise
//! add vs a plain loop, JIT compile cost per kernel, cached-call overhead vs the
//! raw runtime.

#[path = "../../gpu-runtime/benches/common/bench.rs"]
mod bench;
#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use relax_ir::{DataType, PrimFunc};
use relax_jit::{DeviceCaps, HostTensor, Jit, KernelArg, ScheduleOptions};

const F32: DataType = DataType::FLOAT32;

/// The median time of `reps` runs of `f` after one warm-up run.
fn time(reps: usize, f: impl FnMut()) -> Duration {
    bench::median_time(1, reps, f)
}

/// Prints a warning when the float32 values in `got` are not `want` (`who`
/// computed them).
fn warn_if_differs(got: &[u8], want: &[f32], who: &str) {
    let got: &[f32] = bytemuck::cast_slice(got);
    if got != want {
        println!("warning: {who} computed different values");
    }
}

/// Prints the JIT's time `ours` against raw wgpu's `raw` for `what`, then `note`.
fn print_vs_raw(what: &str, ours: Duration, raw: Duration, note: &str) {
    println!(
        "{what}: JIT {:.1} us, raw wgpu {:.1} us, ratio {:.2}{note}",
        ours.as_secs_f64() * 1e6,
        raw.as_secs_f64() * 1e6,
        ours.as_secs_f64() / raw.as_secs_f64()
    );
}

/// A GPU JIT on `rt` with the naive schedules (one thread per output element).
fn naive_jit(rt: &Arc<relax_gpu_runtime::GpuRuntime>) -> Jit {
    let opts = ScheduleOptions {
        naive: true,
        ..Default::default()
    };
    jit_with(Arc::clone(rt), opts)
}

/// The PrimFunc `LegalizeOps` generates for `R.matmul` of two `n x n` float32 tensors.
fn legalized_matmul(n: i64) -> PrimFunc {
    let params = format!(r#"a: R.Tensor(({n}, {n}), "float32"), b: R.Tensor(({n}, {n}), "float32")"#);
    legalized(&params, "y = R.matmul(a, b)")
        .into_iter()
        .next()
        .expect("R.matmul legalizes to a PrimFunc")
}

/// Our JIT cost for one PrimFunc: (total, lower, schedule, naga alone) and the number of
/// WGSL kernels it produces.
fn jit_cost(f: &PrimFunc, reps: usize) -> Option<([Duration; 4], usize)> {
    let lowered = relax_jit::internals::lower(f).ok()?;
    let kernels = relax_jit::internals::schedule(&lowered, &ScheduleOptions::default()).ok()?;
    let sources: Vec<String> = kernels
        .iter()
        .map(|k| relax_jit::internals::emit_kernel(&lowered, k, &DeviceCaps::ALL).map(|s| s.wgsl))
        .collect::<Result<_, _>>()
        .ok()?;
    let total = time(reps, || {
        std::hint::black_box(relax_jit::emit_program(f, &DeviceCaps::ALL, &ScheduleOptions::default()).unwrap());
    });
    let t_lower = time(reps, || {
        std::hint::black_box(relax_jit::internals::lower(f).unwrap());
    });
    let t_sched = time(reps, || {
        std::hint::black_box(relax_jit::internals::schedule(&lowered, &ScheduleOptions::default()).unwrap());
    });
    let t_naga = time(reps, || {
        for s in &sources {
            relax_jit::internals::validate(s, &DeviceCaps::ALL).unwrap();
        }
    });
    Some(([total, t_lower, t_sched, t_naga], sources.len()))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// JIT cost over every distinct PrimFunc of the corpus's legalized modules.
fn corpus_jit_cost() {
    let dir = std::env::var("RELAX_CORPUS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/tvm"));
    let Ok(text) = std::fs::read_to_string(dir.join("legalize.jsonl")) else {
        println!("JIT cost over the corpus: legalize.jsonl not found (set RELAX_CORPUS_DIR); not measured");
        return;
    };
    let mut seen = std::collections::HashSet::new();
    let mut costs: Vec<(Duration, String, [Duration; 4])> = Vec::new();
    let mut per_kernel: Vec<Duration> = Vec::new();
    for line in text.lines() {
        let Ok(case) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(expected) = case["expected"].as_str() else {
            continue;
        };
        let Ok(parsed) = relax_ir::text::parse(expected) else {
            continue;
        };
        let module = parsed.into_module();
        for (gv, func) in &module.functions {
            let relax_ir::BaseFunc::Prim(f) = func else { continue };
            if !seen.insert(relax_jit::internals::kernel_hash(f)) {
                continue;
            }
            let id = case["id"].as_str().unwrap_or("?");
            if std::env::var("JIT_COST_FILTER").is_ok_and(|flt| !id.contains(&flt)) {
                continue;
            }
            if let Some((c, nk)) = jit_cost(f, 5) {
                per_kernel.push(c[0] / nk.max(1) as u32);
                costs.push((c[0], format!("{}/{}", case["id"].as_str().unwrap_or("?"), gv.name()), c));
            }
        }
    }
    if costs.is_empty() {
        return;
    }
    costs.sort_by_key(|c| c.0);
    let n = costs.len();
    let over = costs.iter().filter(|c| c.0 > Duration::from_millis(2)).count();
    let (worst_t, worst_name, w) = &costs[n - 1];
    if std::env::var_os("JIT_COST_VERBOSE").is_some() {
        for (t, name, c) in costs.iter().filter(|c| c.0 > Duration::from_millis(2)) {
            println!(
                "  {name}: {:.3} ms (lower {:.3}, schedule {:.3}, naga {:.3})",
                ms(*t),
                ms(c[1]),
                ms(c[2]),
                ms(c[3])
            );
        }
    }
    println!(
        "JIT cost over {n} corpus kernels (lower+schedule+WGSL+naga): median {:.3} ms, p90 {:.3} ms, max {:.3} ms ({worst_name}: lower {:.3}, schedule {:.3}, naga {:.3}); {over} over 2 ms (target: none)",
        ms(costs[n / 2].0),
        ms(costs[n * 9 / 10].0),
        ms(*worst_t),
        ms(w[1]),
        ms(w[2]),
        ms(w[3]),
    );
    per_kernel.sort();
    println!(
        "JIT cost per WGSL kernel (a PrimFunc with several blocks gives several): median {:.3} ms, max {:.3} ms; {} over 2 ms",
        ms(per_kernel[per_kernel.len() / 2]),
        ms(per_kernel[per_kernel.len() - 1]),
        per_kernel.iter().filter(|d| **d > Duration::from_millis(2)).count()
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    if std::env::args().any(|a| a == "--jit-only") {
        for f in [add_func(&[1000]), legalized_matmul(64)] {
            if let Some((c, _)) = jit_cost(&f, 20) {
                println!(
                    "JIT cost {}: {:.3} ms (lower {:.3}, schedule {:.3}, naga {:.3})",
                    f.buffer_map.len(),
                    ms(c[0]),
                    ms(c[1]),
                    ms(c[2]),
                    ms(c[3])
                );
            }
        }
        corpus_jit_cost();
        return;
    }
    let n = 1024i64;
    let flops = 2.0 * (n * n * n) as f64;
    let mm = legalized_matmul(n);
    let av = rand_vec((n * n) as usize, 1, -1.0, 1.0);
    let bv = rand_vec((n * n) as usize, 2, -1.0, 1.0);
    let ta = HostTensor::from_f64s(F32, &[n, n], &av).unwrap();
    let tb = HostTensor::from_f64s(F32, &[n, n], &bv).unwrap();
    let tc = HostTensor::zeros(F32, &[n, n]).unwrap();

    if std::env::args().any(|a| a == "--hand") {
        // Only the GPU matmul against the hand-written kernel.
        let Some(rt) = relax_gpu_runtime::GpuRuntime::shared_default().ok().map(Arc::new) else {
            println!("no GPU adapter: GPU benchmarks skipped");
            return;
        };
        let gpu = Jit::new(Some(rt.clone()));
        let naive = naive_jit(&rt);
        hand_matmul_reference(&rt, &gpu, &naive, &ta, &tb, n, quick);
        return;
    }

    // Host matmul vs ndarray.
    let host = Jit::new(None);
    let (mut a, mut b, mut c) = (ta.clone(), tb.clone(), tc.clone());
    let t_host = time(5, || run_tensors(&host, false, &mm, &mut [&mut a, &mut b, &mut c]));
    let na = ndarray::Array2::from_shape_vec((n as usize, n as usize), ta.as_slice::<f32>().unwrap().to_vec()).unwrap();
    let nb = ndarray::Array2::from_shape_vec((n as usize, n as usize), tb.as_slice::<f32>().unwrap().to_vec()).unwrap();
    let t_nd = time(5, || {
        std::hint::black_box(na.dot(&nb));
    });
    println!(
        "host matmul 1024^3: {:.1} GFLOP/s, ndarray .dot(): {:.1} GFLOP/s, ratio {:.2} (target >= 0.8)",
        flops / t_host.as_secs_f64() / 1e9,
        flops / t_nd.as_secs_f64() / 1e9,
        t_nd.as_secs_f64() / t_host.as_secs_f64()
    );

    // Host 16M add vs a plain loop.
    let m = 16 * 1024 * 1024;
    let addf = add_func(&[m]);
    let xa = HostTensor::from_f64s(F32, &[m], &rand_vec(m as usize, 3, -1.0, 1.0)).unwrap();
    let xb = HostTensor::from_f64s(F32, &[m], &rand_vec(m as usize, 4, -1.0, 1.0)).unwrap();
    let (mut a2, mut b2, mut c2) = (xa.clone(), xb.clone(), HostTensor::zeros(F32, &[m]).unwrap());
    let t_add = time(5, || {
        host.run_host(
            &addf,
            &mut [
                KernelArg::from(&mut a2),
                KernelArg::from(&mut b2),
                KernelArg::from(&mut c2),
            ],
        )
        .unwrap()
    });
    let (pa, pb) = (
        xa.as_slice::<f32>().unwrap().to_vec(),
        xb.as_slice::<f32>().unwrap().to_vec(),
    );
    let mut pc = vec![0f32; m as usize];
    let t_loop = time(5, || {
        for i in 0..pa.len() {
            pc[i] = pa[i] + pb[i];
        }
        std::hint::black_box(&pc);
    });
    println!(
        "host add 16M: {:.2} ms ({:.1} GB/s), plain loop {:.2} ms, ratio {:.2} (target >= 0.5)",
        t_add.as_secs_f64() * 1e3,
        12.0 * m as f64 / t_add.as_secs_f64() / 1e9,
        t_loop.as_secs_f64() * 1e3,
        t_loop.as_secs_f64() / t_add.as_secs_f64()
    );

    // JIT cost per kernel (our part: lower + schedule + WGSL + naga).
    for (what, f) in [("add 1000", add_func(&[1000])), ("matmul 64^3", legalized_matmul(64))] {
        if let Some((c, _)) = jit_cost(&f, 20) {
            println!(
                "JIT cost {what}: {:.3} ms (lower {:.3}, schedule {:.3}, naga {:.3}) (target < 2 ms)",
                ms(c[0]),
                ms(c[1]),
                ms(c[2]),
                ms(c[3])
            );
        }
    }
    corpus_jit_cost();

    let Some(rt) = relax_gpu_runtime::GpuRuntime::shared_default().ok().map(Arc::new) else {
        println!("no GPU adapter: GPU benchmarks skipped");
        return;
    };
    let gpu = Jit::new(Some(rt.clone()));
    let naive = naive_jit(&rt);
    let (mut a, mut b, mut c) = (ta.clone(), tb.clone(), tc.clone());
    let t_sched = time(if quick { 1 } else { 3 }, || {
        run_tensors(&gpu, true, &mm, &mut [&mut a, &mut b, &mut c])
    });
    let (mut a, mut b, mut c) = (ta.clone(), tb.clone(), tc.clone());
    let t_naive = time(if quick { 1 } else { 3 }, || {
        run_tensors(&naive, true, &mm, &mut [&mut a, &mut b, &mut c])
    });
    println!(
        "GPU matmul 1024^3 (incl. transfers): default schedule {:.2} GFLOP/s, naive {:.2} GFLOP/s, speed-up {:.1}x (target >= 6x)",
        flops / t_sched.as_secs_f64() / 1e9,
        flops / t_naive.as_secs_f64() / 1e9,
        t_naive.as_secs_f64() / t_sched.as_secs_f64()
    );
    hand_matmul_reference(&rt, &gpu, &naive, &ta, &tb, n, quick);
    let c0 = gpu.counters();
    println!(
        "counters: {} programs, {} kernels, {} hits, ours {:.2} ms, driver {:.2} ms",
        c0.gpu_programs_compiled,
        c0.kernels_compiled,
        c0.gpu_cache_hits,
        c0.our_compile_ns as f64 / 1e6,
        c0.driver_compile_ns as f64 / 1e6
    );

    // Cached-call overhead vs the raw runtime (same WGSL, same transfers).
    let small = add_func(&[256]);
    let sa = HostTensor::from_f64s(F32, &[256], &rand_vec(256, 5, -1.0, 1.0)).unwrap();
    let (mut x, mut y, mut z) = (sa.clone(), sa.clone(), sa.clone());
    let t_jit = time(200, || run_tensors(&gpu, true, &small, &mut [&mut x, &mut y, &mut z]));
    // The same WGSL through raw wgpu: pipeline, buffers and bind group made once;
    // each call writes the inputs, dispatches, copies out, maps and waits.
    let src = gpu.wgsl(&small).unwrap();
    let k = &src.kernels[0];
    let device = rt.device();
    let queue = rt.queue();
    let pipeline = bench::raw_pipeline(device, &k.wgsl);
    let bytes = sa.bytes().to_vec();
    let storage = |usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: bytes.len() as u64,
            usage,
            mapped_at_creation: false,
        })
    };
    let io = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
    let (ba, bb, bc) = (storage(io), storage(io), storage(io));
    let readback = storage(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
    let bind_group = bench::raw_bind_group(device, &pipeline, &[&ba, &bb, &bc]);
    let groups = 256u32.div_ceil(k.workgroup_size[0].max(1));
    let mut out = vec![0u8; bytes.len()];
    let t_raw = time(200, || {
        queue.write_buffer(&ba, 0, &bytes);
        queue.write_buffer(&bb, 0, &bytes);
        queue.write_buffer(&bc, 0, &bytes);
        let mut enc = device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(groups, 1, 1);
        }
        enc.copy_buffer_to_buffer(&bc, 0, &readback, 0, bytes.len() as u64);
        queue.submit([enc.finish()]);
        let slice = readback.slice(..);
        slice.map_async(wgpu::MapMode::Read, |_| {});
        let _ = device.poll(wgpu::PollType::wait_indefinitely());
        out.copy_from_slice(&slice.get_mapped_range().expect("mapped"));
        readback.unmap();
    });
    let want: Vec<f32> = sa.as_slice::<f32>().unwrap().iter().map(|v| v + v).collect();
    warn_if_differs(&out, &want, "the raw wgpu baseline");
    print_vs_raw(
        "call with host tensors (256-element add: upload + dispatch + read back)",
        t_jit,
        t_raw,
        "",
    );

    // Cached-call overhead: the same compiled kernel on tensors already in device
    // memory, through the JIT (cache lookup, bind group, uniforms, submit) and through
    // raw wgpu (a recorded pipeline and bind group), each followed by a wait.
    let (da, db, dc) = (
        rt.upload(&bytes).unwrap(),
        rt.upload(&bytes).unwrap(),
        rt.upload(&bytes).unwrap(),
    );
    let shape = [256i64];
    let t_resident = time(500, || {
        gpu.run_gpu(
            &small,
            &mut [
                KernelArg::Device {
                    buf: &da,
                    dtype: F32,
                    shape: &shape,
                },
                KernelArg::Device {
                    buf: &db,
                    dtype: F32,
                    shape: &shape,
                },
                KernelArg::Device {
                    buf: &dc,
                    dtype: F32,
                    shape: &shape,
                },
            ],
        )
        .unwrap();
        rt.synchronize().unwrap();
    });
    let t_raw_dispatch = time(500, || {
        let mut enc = device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(groups, 1, 1);
        }
        queue.submit([enc.finish()]);
        let _ = device.poll(wgpu::PollType::wait_indefinitely());
    });
    let check = rt.read(&dc).unwrap();
    warn_if_differs(&check, &want, "the resident JIT call");
    print_vs_raw(
        "cached call (256-element add on device tensors, dispatch + submit + wait)",
        t_resident,
        t_raw_dispatch,
        " (target <= 1.3)",
    );
}

/// The hand-written 8x8 register-tiled WGSL matmul (`shaders/matmul_8x8.wgsl`)
/// against the JIT's default and naive schedules on the same device-resident
/// operands, in the same run: kernel time including completion, no transfers.
fn hand_matmul_reference(
    rt: &Arc<relax_gpu_runtime::GpuRuntime>,
    gpu: &Jit,
    naive: &Jit,
    ta: &HostTensor,
    tb: &HostTensor,
    n: i64,
    quick: bool,
) {
    use relax_gpu_runtime::{Access, KernelLayout};
    let flops = 2.0 * (n * n * n) as f64;
    let a = rt.upload(ta.bytes()).unwrap();
    let b = rt.upload(tb.bytes()).unwrap();
    let c_hand = rt.alloc((n * n * 4) as u64).unwrap();
    let c_jit = rt.alloc((n * n * 4) as u64).unwrap();
    let layout = KernelLayout::new([Access::Read, Access::Read, Access::ReadWrite], 4);
    let hand = rt
        .create_kernel(include_str!("../../../shaders/matmul_8x8.wgsl"), "main", &layout)
        .unwrap();
    let groups = (n / 64) as u32;
    let reps = if quick { 1 } else { 3 };
    let t_hand = time(reps, || {
        rt.dispatch(
            &hand,
            &[&a, &b, &c_hand],
            &(n as u32).to_le_bytes(),
            [groups, groups, 1],
        )
        .unwrap();
        rt.synchronize().unwrap();
    });
    let mm = legalized_matmul(n);
    let shape = [n, n];
    let run = |jit: &Jit| {
        let mut args = [
            KernelArg::Device {
                buf: &a,
                dtype: F32,
                shape: &shape,
            },
            KernelArg::Device {
                buf: &b,
                dtype: F32,
                shape: &shape,
            },
            KernelArg::Device {
                buf: &c_jit,
                dtype: F32,
                shape: &shape,
            },
        ];
        jit.run_gpu(&mm, &mut args).unwrap();
        rt.synchronize().unwrap();
    };
    let t_ours = time(reps, || run(gpu));
    let hv: Vec<f32> = bytemuck::cast_slice(&rt.read(&c_hand).unwrap()).to_vec();
    let ov: Vec<f32> = bytemuck::cast_slice(&rt.read(&c_jit).unwrap()).to_vec();
    let diff = hv.iter().zip(&ov).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
    assert!(diff < 1e-2, "hand kernel and JIT disagree by {diff}");
    let t_naive = time(1, || run(naive));
    let g = |t: Duration| flops / t.as_secs_f64() / 1e9;
    println!(
        "GPU matmul {n}^3 on device buffers: hand 8x8 WGSL {:.2} GFLOP/s, default schedule {:.2} GFLOP/s (ratio {:.2}, target >= 1), naive {:.2} GFLOP/s (default/naive {:.1}x)",
        g(t_hand),
        g(t_ours),
        t_hand.as_secs_f64() / t_ours.as_secs_f64(),
        g(t_naive),
        t_naive.as_secs_f64() / t_ours.as_secs_f64()
    );
    println!("HAND_MATMUL_GFLOPS {:.4}", g(t_hand));
}
