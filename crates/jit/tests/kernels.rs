//! Hand-built PrimFuncs: host results against golden values, GPU results against
//! the host, and the cache counters.

mod common;

use common::*;
use relax_ir::tir::{BinOp, Buffer, PrimExpr, TirVar};
use relax_ir::{DataType, PrimFunc};
use relax_jit::{HostTensor, Jit, KernelArg};

const F32: DataType = DataType::FLOAT32;

fn run_both(f: &PrimFunc, inputs: &[HostTensor], out: HostTensor) -> (HostTensor, Option<HostTensor>) {
    let host_jit = Jit::new(None);
    let mut ins = inputs.to_vec();
    let mut o = out.clone();
    {
        let mut args: Vec<KernelArg> = ins.iter_mut().map(KernelArg::from).collect();
        args.push(KernelArg::from(&mut o));
        host_jit.run_host(f, &mut args).expect("host run");
    }
    let g = gpu_jit().map(|jit| {
        let mut ins = inputs.to_vec();
        let mut og = out.clone();
        let mut args: Vec<KernelArg> = ins.iter_mut().map(KernelArg::from).collect();
        args.push(KernelArg::from(&mut og));
        jit.run_gpu(f, &mut args).expect("gpu run");
        og
    });
    (o, g)
}

#[test]
fn elementwise_add() {
    let dims = [3, 5, 7];
    let f = add_func(&dims);
    let n = 105;
    let a = rand_vec(n, 1, -1.0, 1.0);
    let b = rand_vec(n, 2, -1.0, 1.0);
    let ta = HostTensor::from_f64s(F32, &dims, &a).unwrap();
    let tb = HostTensor::from_f64s(F32, &dims, &b).unwrap();
    let (h, g) = run_both(&f, &[ta, tb], HostTensor::zeros(F32, &dims).unwrap());
    let want: Vec<f64> = a.iter().zip(&b).map(|(x, y)| (*x as f32 + *y as f32) as f64).collect();
    assert_eq!(h.to_f64_vec(), want);
    if let Some(g) = g {
        assert_eq!(g.to_f64_vec(), want);
    }
    let src = Jit::new(None).wgsl(&f).unwrap();
    assert_eq!(src.kernels.len(), 1);
    assert!(src.kernels[0].wgsl.contains("@compute"));
}

#[test]
fn broadcast_add() {
    let (m, n) = (4i64, 6i64);
    let a = Buffer::new("A", F32, shape(&[m, n]));
    let b = Buffer::new("B", F32, shape(&[n]));
    let c = Buffer::new("C", F32, shape(&[m, n]));
    let body = grid_block("badd", &shape(&[m, n]), "SS", |v| {
        (None, store(&c, v, load(&a, v) + load(&b, &v[1..])))
    });
    let f = prim_func(&[a, b, c], &[], vec![], body);
    let av = rand_vec(24, 3, -2.0, 2.0);
    let bv = rand_vec(6, 4, -2.0, 2.0);
    let (h, g) = run_both(
        &f,
        &[
            HostTensor::from_f64s(F32, &[m, n], &av).unwrap(),
            HostTensor::from_f64s(F32, &[n], &bv).unwrap(),
        ],
        HostTensor::zeros(F32, &[m, n]).unwrap(),
    );
    let want: Vec<f64> = (0..24).map(|i| (av[i] as f32 + bv[i % 6] as f32) as f64).collect();
    assert_eq!(h.to_f64_vec(), want);
    if let Some(g) = g {
        assert_eq!(g.to_f64_vec(), want);
    }
}

fn matmul_ref(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0;
            for r in 0..k {
                s += a[i * k + r] * b[r * n + j];
            }
            c[i * n + j] = s;
        }
    }
    c
}

#[test]
fn matmul_matches_reference_and_tails() {
    for &(m, k, n) in &[(37usize, 19usize, 45usize), (64, 64, 64), (1, 7, 3)] {
        let f = matmul_func(m as i64, k as i64, n as i64);
        let a = rand_vec(m * k, 5, -1.0, 1.0);
        let b = rand_vec(k * n, 6, -1.0, 1.0);
        let af: Vec<f64> = a.iter().map(|&x| x as f32 as f64).collect();
        let bf: Vec<f64> = b.iter().map(|&x| x as f32 as f64).collect();
        let (h, g) = run_both(
            &f,
            &[
                HostTensor::from_f64s(F32, &[m as i64, k as i64], &a).unwrap(),
                HostTensor::from_f64s(F32, &[k as i64, n as i64], &b).unwrap(),
            ],
            HostTensor::zeros(F32, &[m as i64, n as i64]).unwrap(),
        );
        let want = matmul_ref(&af, &bf, m, k, n);
        assert_close(&h.to_f64_vec(), &want, 1e-5, 1e-5, "host matmul");
        if let Some(g) = g {
            assert_close(&g.to_f64_vec(), &h.to_f64_vec(), 1e-5, 1e-5, "gpu matmul");
        }
    }
    let src = Jit::new(None).wgsl(&matmul_func(64, 64, 64)).unwrap();
    assert!(
        src.lowered.stages[0].reduction.as_ref().unwrap().matmul.is_some(),
        "matmul detected"
    );
}

fn sum_func(m: i64, k: i64) -> PrimFunc {
    let a = Buffer::new("A", F32, shape(&[m, k]));
    let b = Buffer::new("B", F32, shape(&[m]));
    let body = grid_block("sum", &shape(&[m, k]), "SR", |v| {
        let init = store(&b, &v[..1], PrimExpr::float_of(0.0, F32));
        (Some(init), store(&b, &v[..1], load(&b, &v[..1]) + load(&a, v)))
    });
    prim_func(&[a, b], &[], vec![], body)
}

#[test]
fn sum_reduction_small_and_cross_thread() {
    // 3 x 1000 uses the cross-thread schedule, 300 x 5 one thread per output.
    for &(m, k) in &[(3i64, 1000i64), (300, 5)] {
        let f = sum_func(m, k);
        let a = rand_vec((m * k) as usize, 7, -1.0, 1.0);
        let (h, g) = run_both(
            &f,
            &[HostTensor::from_f64s(F32, &[m, k], &a).unwrap()],
            HostTensor::zeros(F32, &[m]).unwrap(),
        );
        let want: Vec<f64> = (0..m as usize)
            .map(|i| (0..k as usize).map(|j| a[i * k as usize + j] as f32 as f64).sum())
            .collect();
        assert_close(&h.to_f64_vec(), &want, 1e-5, 1e-5, "host sum");
        if let Some(g) = g {
            assert_close(&g.to_f64_vec(), &h.to_f64_vec(), 1e-5, 1e-5, "gpu sum");
        }
    }
    let src = Jit::new(None).wgsl(&sum_func(3, 1000)).unwrap();
    assert!(
        src.kernels[0].wgsl.contains("workgroupBarrier"),
        "cross-thread reduction uses workgroup memory"
    );
}

/// softmax over the last axis: max, exp-sum, divide, with scratch buffers.
fn softmax_func(m: i64, n: i64) -> PrimFunc {
    let a = Buffer::new("A", F32, shape(&[m, n]));
    let out = Buffer::new("T_softmax", F32, shape(&[m, n]));
    let mx = Buffer::new("maxelem", F32, shape(&[m]));
    let ex = Buffer::new("exp", F32, shape(&[m, n]));
    let sm = Buffer::new("expsum", F32, shape(&[m]));
    let s1 = grid_block("maxelem", &shape(&[m, n]), "SR", |v| {
        let init = store(&mx, &v[..1], PrimExpr::call("min_value", F32, vec![]));
        (
            Some(init),
            store(&mx, &v[..1], bin(BinOp::Max, load(&mx, &v[..1]), load(&a, v))),
        )
    });
    let s2 = grid_block("exp", &shape(&[m, n]), "SS", |v| {
        (
            None,
            store(
                &ex,
                v,
                PrimExpr::call("exp", F32, vec![load(&a, v) - load(&mx, &v[..1])]),
            ),
        )
    });
    let s3 = grid_block("expsum", &shape(&[m, n]), "SR", |v| {
        let init = store(&sm, &v[..1], PrimExpr::float_of(0.0, F32));
        (Some(init), store(&sm, &v[..1], load(&sm, &v[..1]) + load(&ex, v)))
    });
    let s4 = grid_block("norm", &shape(&[m, n]), "SS", |v| {
        (None, store(&out, v, bin(BinOp::Div, load(&ex, v), load(&sm, &v[..1]))))
    });
    prim_func(
        &[a, out],
        &[],
        vec![mx, ex, sm],
        relax_ir::Stmt::Seq(vec![s1, s2, s3, s4]),
    )
}

#[test]
fn softmax_like_multi_stage() {
    let (m, n) = (5i64, 300i64);
    let f = softmax_func(m, n);
    let a = rand_vec((m * n) as usize, 9, -5.0, 5.0);
    let (h, g) = run_both(
        &f,
        &[HostTensor::from_f64s(F32, &[m, n], &a).unwrap()],
        HostTensor::zeros(F32, &[m, n]).unwrap(),
    );
    let mut want = vec![0.0; (m * n) as usize];
    for i in 0..m as usize {
        let row = &a[i * n as usize..(i + 1) * n as usize];
        let mx = row.iter().cloned().fold(f64::MIN, f64::max);
        let s: f64 = row.iter().map(|x| (x - mx).exp()).sum();
        for j in 0..n as usize {
            want[i * n as usize + j] = (row[j] - mx).exp() / s;
        }
    }
    assert_close(&h.to_f64_vec(), &want, 1e-4, 1e-6, "host softmax");
    let rows: Vec<f64> = (0..m as usize)
        .map(|i| h.to_f64_vec()[i * n as usize..(i + 1) * n as usize].iter().sum())
        .collect();
    assert_close(&rows, &vec![1.0; m as usize], 1e-4, 0.0, "rows sum to one");
    if let Some(g) = g {
        assert_close(&g.to_f64_vec(), &h.to_f64_vec(), 1e-4, 1e-6, "gpu softmax");
    }
    assert_eq!(Jit::new(None).wgsl(&f).unwrap().kernels.len(), 4);
}

#[test]
fn int_floordiv_floormod_on_negatives_and_zero() {
    let n = 12i64;
    let i32t = DataType::INT32;
    let [a, b, q, r, t] = buffers(["A", "B", "Q", "R", "T"], i32t, &[n]);
    let body = relax_ir::Stmt::Seq(vec![
        grid_block("q", &shape(&[n]), "S", |v| {
            (None, store(&q, v, bin(BinOp::FloorDiv, load(&a, v), load(&b, v))))
        }),
        grid_block("r", &shape(&[n]), "S", |v| {
            (None, store(&r, v, bin(BinOp::FloorMod, load(&a, v), load(&b, v))))
        }),
        grid_block("t", &shape(&[n]), "S", |v| {
            (None, store(&t, v, bin(BinOp::Div, load(&a, v), load(&b, v))))
        }),
    ]);
    let f = prim_func(&[a, b, q.clone(), r.clone(), t.clone()], &[], vec![], body);
    let av: Vec<i32> = vec![7, -7, 7, -7, 0, 5, -1, i32::MIN, 9, -9, 6, -6];
    let bv: Vec<i32> = vec![2, 2, -2, -2, 3, 0, 3, -1, 3, 3, -4, 4];
    let want_q: Vec<i32> = vec![3, -4, -4, 3, 0, 5, -1, i32::MIN, 3, -3, -2, -2];
    let want_r: Vec<i32> = vec![1, 1, -1, -1, 0, 0, 2, 0, 0, 0, -2, 2];
    let want_t: Vec<i32> = vec![3, -3, -3, 3, 0, 5, 0, i32::MIN, 3, -3, -1, -1];
    let mk = |v: &[i32]| HostTensor::from_slice(&[n], v).unwrap();
    let run = |jit: &Jit, gpu: bool| {
        let (mut ta, mut tb) = (mk(&av), mk(&bv));
        let (mut tq, mut tr, mut tt) = (mk(&[0; 12]), mk(&[0; 12]), mk(&[0; 12]));
        run_tensors(jit, gpu, &f, &mut [&mut ta, &mut tb, &mut tq, &mut tr, &mut tt]);
        (
            tq.as_slice::<i32>().unwrap().to_vec(),
            tr.as_slice::<i32>().unwrap().to_vec(),
            tt.as_slice::<i32>().unwrap().to_vec(),
        )
    };
    let (hq, hr, ht) = run(&Jit::new(None), false);
    assert_eq!(hq, want_q);
    assert_eq!(hr, want_r);
    assert_eq!(ht, want_t);
    if let Some(jit) = gpu_jit() {
        let (gq, gr, gt) = run(&jit, true);
        assert_eq!(gq, want_q, "gpu floordiv");
        assert_eq!(gr, want_r, "gpu floormod");
        assert_eq!(gt, want_t, "gpu truncdiv");
    }
}

#[test]
fn bool_compare_and_select() {
    let n = 10i64;
    let a = Buffer::new("A", F32, shape(&[n]));
    let b = Buffer::new("B", F32, shape(&[n]));
    let m = Buffer::new("M", DataType::BOOL, shape(&[n]));
    let c = Buffer::new("C", F32, shape(&[n]));
    let body = relax_ir::Stmt::Seq(vec![
        grid_block("lt", &shape(&[n]), "S", |v| {
            (None, store(&m, v, bin(BinOp::Lt, load(&a, v), load(&b, v))))
        }),
        grid_block("sel", &shape(&[n]), "S", |v| {
            (
                None,
                store(&c, v, PrimExpr::select(load(&m, v), load(&a, v), load(&b, v))),
            )
        }),
    ]);
    let f = prim_func(&[a, b, m, c], &[], vec![], body);
    let av = rand_vec(10, 11, -1.0, 1.0);
    let bv = rand_vec(10, 12, -1.0, 1.0);
    let run = |jit: &Jit, gpu: bool| {
        let mut ta = HostTensor::from_f64s(F32, &[n], &av).unwrap();
        let mut tb = HostTensor::from_f64s(F32, &[n], &bv).unwrap();
        let mut tm = HostTensor::zeros(DataType::BOOL, &[n]).unwrap();
        let mut tc = HostTensor::zeros(F32, &[n]).unwrap();
        run_tensors(jit, gpu, &f, &mut [&mut ta, &mut tb, &mut tm, &mut tc]);
        (tm.bytes().to_vec(), tc.to_f64_vec())
    };
    let want_m: Vec<u8> = av
        .iter()
        .zip(&bv)
        .map(|(x, y)| ((*x as f32) < (*y as f32)) as u8)
        .collect();
    let want_c: Vec<f64> = av
        .iter()
        .zip(&bv)
        .map(|(x, y)| (*x as f32).min(*y as f32) as f64)
        .collect();
    let (hm, hc) = run(&Jit::new(None), false);
    assert_eq!(hm, want_m);
    assert_eq!(hc, want_c);
    if let Some(jit) = gpu_jit() {
        let (gm, gc) = run(&jit, true);
        assert_eq!(gm, want_m);
        assert_eq!(gc, want_c);
    }
}

#[test]
fn symbolic_n_compiles_one_pipeline() {
    let nv = TirVar::new("n", DataType::INT64);
    let a = Buffer::new("A", F32, vec![nv.to_expr()]);
    let b = Buffer::new("B", F32, vec![nv.to_expr()]);
    let body = grid_block("affine", &[nv.to_expr()], "S", |v| {
        (
            None,
            store(
                &b,
                v,
                load(&a, v) * PrimExpr::float_of(2.0, F32) + PrimExpr::float_of(1.0, F32),
            ),
        )
    });
    let f = prim_func(&[a, b], &[], vec![], body);
    let check = |jit: &Jit, gpu: bool| {
        for &n in &[1i64, 100, 70_000] {
            let av = rand_vec(n as usize, n as u64, -3.0, 3.0);
            let mut ta = HostTensor::from_f64s(F32, &[n], &av).unwrap();
            let mut tb = HostTensor::zeros(F32, &[n]).unwrap();
            run_tensors(jit, gpu, &f, &mut [&mut ta, &mut tb]);
            let want: Vec<f64> = av.iter().map(|&x| ((x as f32) * 2.0 + 1.0) as f64).collect();
            assert_eq!(tb.to_f64_vec(), want, "n = {n}");
        }
    };
    let host = Jit::new(None);
    check(&host, false);
    assert_eq!(host.counters().host_programs_compiled, 1);
    assert_eq!(host.counters().host_cache_hits, 2);
    if let Some(jit) = gpu_jit() {
        check(&jit, true);
        let c = jit.counters();
        assert_eq!(c.kernels_compiled, 1, "one pipeline for every n");
        assert_eq!(c.gpu_programs_compiled, 1);
        assert_eq!(c.gpu_cache_hits, 2);
    }
    // The shape variable lives in the uniform block.
    let src = host.wgsl(&f).unwrap();
    assert_eq!(src.kernels[0].uniforms.len(), 1);
    assert!(src.kernels[0].wgsl.contains("var<uniform>"));
}

#[test]
fn wrong_arguments_are_errors() {
    let f = add_func(&[4]);
    let jit = Jit::new(None);
    let mut a = HostTensor::zeros(F32, &[4]).unwrap();
    let mut b = HostTensor::zeros(F32, &[5]).unwrap();
    let mut c = HostTensor::zeros(F32, &[4]).unwrap();
    let err = jit
        .run_host(&f, &mut [&mut a, &mut b, &mut c].map(KernelArg::from))
        .unwrap_err();
    assert!(err.to_string().contains("extent 5"), "{err}");
    let mut d = HostTensor::zeros(DataType::INT32, &[4]).unwrap();
    let err = jit
        .run_host(&f, &mut [&mut a, &mut d, &mut c].map(KernelArg::from))
        .unwrap_err();
    assert!(err.to_string().contains("int32"), "{err}");
}

#[test]
#[ignore]
fn dump_matmul_wgsl() {
    println!("{}", Jit::new(None).wgsl(&matmul_func(64, 64, 64)).unwrap());
    println!("{}", Jit::new(None).wgsl(&sum_func(3, 1000)).unwrap());
}

/// Eight threads asking for the same PrimFunc at once compile it exactly once, on the
/// host and on the GPU; every other call is a cache hit.
#[test]
fn concurrent_first_calls_compile_once() {
    let f = add_func(&[64]);
    let a = HostTensor::from_f64s(F32, &[64], &rand_vec(64, 11, -1.0, 1.0)).unwrap();
    let want: Vec<f64> = a.to_f64_vec().iter().map(|v| v + v).collect();
    let jits = std::iter::once(Jit::new(None)).chain(gpu_jit());
    for (which, jit) in jits.enumerate() {
        let gpu = which == 1;
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..5 {
                        let (mut x, mut y) = (a.clone(), a.clone());
                        let mut z = HostTensor::zeros(F32, &[64]).unwrap();
                        run_tensors(&jit, gpu, &f, &mut [&mut x, &mut y, &mut z]);
                        assert_close(&z.to_f64_vec(), &want, 0.0, 0.0, "x + x");
                    }
                });
            }
        });
        let c = jit.counters();
        if gpu {
            assert_eq!((c.gpu_programs_compiled, c.gpu_cache_hits), (1, 39), "{c:?}");
        } else {
            assert_eq!((c.host_programs_compiled, c.host_cache_hits), (1, 39), "{c:?}");
        }
    }
}

#[test]
fn convolution_runs_as_implicit_gemm_and_matches_host() {
    let cases = [
        (1i64, 3i64, 33i64, 24i64, 3i64, 2i64),
        (1, 3, 33, 10, 3, 2),
        (2, 16, 20, 20, 1, 1),
        (1, 5, 18, 70, 3, 1),
        (1, 4, 9, 6, 3, 1),
    ];
    for &(n, ci, hw, co, k, s) in &cases {
        let f = conv_func(n, ci, hw, co, k, s, 1);
        let o = (hw - k) / s + 1;
        let src = Jit::new(None).wgsl(&f).unwrap();
        // 16 or more output pixels (all of them, batch included) and 16 or more
        // channels take the implicit GEMM (fused reduction index); smaller ones one
        // thread per output.
        assert_eq!(
            src.kernels.iter().any(|kk| kk.wgsl.contains("kf_")),
            n * o * o >= 16 && co >= 16,
            "schedule of a {o}-wide convolution:\n{src}"
        );
        let xv = rand_vec((n * ci * hw * hw) as usize, 11, -1.0, 1.0);
        let wv = rand_vec((co * ci * k * k) as usize, 12, -1.0, 1.0);
        let (h, g) = run_both(
            &f,
            &[
                HostTensor::from_f64s(F32, &[n, ci, hw, hw], &xv).unwrap(),
                HostTensor::from_f64s(F32, &[co, ci, k, k], &wv).unwrap(),
            ],
            HostTensor::zeros(F32, &[n, co, o, o]).unwrap(),
        );
        if let Some(g) = g {
            assert_close(&g.to_f64_vec(), &h.to_f64_vec(), 1e-5, 1e-5, "gpu conv");
        }
    }
}
