//! Data types, intrinsics, large grids and hand-bound kernels: host against
//! golden values, GPU against the host.

mod common;

use common::*;
use relax_ir::attrs::Attrs;
use relax_ir::tir::{BinOp, Buffer, For, ForKind, PrimExpr, Stmt, TirVar};
use relax_ir::{DataType, PrimFunc};
use relax_jit::{HostTensor, Jit};

/// `C[i] = f(A[i], B[i])` over `n` elements.
fn binary_func(n: i64, dt_in: DataType, dt_out: DataType, f: impl Fn(PrimExpr, PrimExpr) -> PrimExpr) -> PrimFunc {
    let a = Buffer::new("A", dt_in, shape(&[n]));
    let b = Buffer::new("B", dt_in, shape(&[n]));
    let c = Buffer::new("C", dt_out, shape(&[n]));
    let body = grid_block("f", &shape(&[n]), "S", |v| {
        (None, store(&c, v, f(load(&a, v), load(&b, v))))
    });
    prim_func(&[a, b, c], &[], vec![], body)
}

/// Run on the host and (when present) the GPU; returns (host, gpu) outputs.
fn run3(f: &PrimFunc, a: &HostTensor, b: &HostTensor, out: &HostTensor) -> (HostTensor, Option<HostTensor>) {
    let go = |jit: &Jit, gpu: bool| {
        let (mut x, mut y, mut z) = (a.clone(), b.clone(), out.clone());
        run_tensors(jit, gpu, f, &mut [&mut x, &mut y, &mut z]);
        z
    };
    (go(&Jit::new(None), false), gpu_jit().map(|j| go(&j, true)))
}

#[test]
fn int8_wraps_and_int64_is_exact() {
    let i8t = DataType::INT8;
    let f = binary_func(4, i8t, i8t, |x, y| x + y);
    let a = HostTensor::from_slice::<i8>(&[4], &[100, -100, 5, 127]).unwrap();
    let b = HostTensor::from_slice::<i8>(&[4], &[100, -100, -7, 1]).unwrap();
    let (h, g) = run3(&f, &a, &b, &HostTensor::zeros(i8t, &[4]).unwrap());
    assert_eq!(h.as_slice::<i8>().unwrap(), &[-56, 56, -2, -128]);
    if let Some(g) = g {
        assert_eq!(g.as_slice::<i8>().unwrap(), h.as_slice::<i8>().unwrap());
    }
    let i64t = DataType::INT64;
    let f = binary_func(3, i64t, i64t, |x, y| x * y);
    let a = HostTensor::from_slice::<i64>(&[3], &[1 << 33, -(1 << 40), 3]).unwrap();
    let b = HostTensor::from_slice::<i64>(&[3], &[5, 7, -(1 << 50)]).unwrap();
    let (h, g) = run3(&f, &a, &b, &HostTensor::zeros(i64t, &[3]).unwrap());
    assert_eq!(h.as_slice::<i64>().unwrap(), &[5 << 33, -(7 << 40), -(3 << 50)]);
    if let Some(g) = g {
        assert_eq!(
            g.as_slice::<i64>().unwrap(),
            h.as_slice::<i64>().unwrap(),
            "int64 data on the GPU"
        );
    }
}

#[test]
fn float16_and_float64() {
    for dt in [DataType::FLOAT16, DataType::FLOAT64] {
        let f = binary_func(64, dt, dt, |x, y| x * y.clone() + y);
        let a = HostTensor::from_f64s(dt, &[64], &rand_vec(64, 1, -2.0, 2.0)).unwrap();
        let b = HostTensor::from_f64s(dt, &[64], &rand_vec(64, 2, -2.0, 2.0)).unwrap();
        let (h, g) = run3(&f, &a, &b, &HostTensor::zeros(dt, &[64]).unwrap());
        let want: Vec<f64> = (0..64)
            .map(|i| {
                let (x, y) = (a.get_f64(i), b.get_f64(i));
                if dt == DataType::FLOAT16 {
                    let p = half::f16::from_f64(x * y).to_f64();
                    half::f16::from_f64(p + y).to_f64()
                } else {
                    x * y + y
                }
            })
            .collect();
        assert_eq!(h.to_f64_vec(), want, "{dt} host");
        if let Some(g) = g {
            assert_close(&g.to_f64_vec(), &want, 1e-3, 1e-3, &format!("{dt} gpu"));
        }
    }
}

#[test]
fn transcendentals_match_host() {
    let f32t = DataType::FLOAT32;
    let n = 200;
    // Inputs with large magnitudes to exercise overflow handling.
    let av: Vec<f64> = rand_vec(n, 3, -100.0, 100.0);
    let bv: Vec<f64> = rand_vec(n, 4, 0.1, 3.0);
    let a = HostTensor::from_f64s(f32t, &[n as i64], &av).unwrap();
    let b = HostTensor::from_f64s(f32t, &[n as i64], &bv).unwrap();
    let call = |op: &'static str| move |x: PrimExpr, _y: PrimExpr| PrimExpr::call(op, f32t, vec![x]);
    type Build<'a> = Box<dyn Fn(PrimExpr, PrimExpr) -> PrimExpr + 'a>;
    type Case<'a> = (&'static str, Build<'a>, fn(f64, f64) -> f64);
    let cases: Vec<Case<'_>> = vec![
        ("tanh", Box::new(call("tanh")), |x, _| x.tanh()),
        ("sigmoid", Box::new(call("sigmoid")), |x, _| 1.0 / (1.0 + (-x).exp())),
        (
            "erf",
            Box::new(|x, _| PrimExpr::call("erf", f32t, vec![x * PrimExpr::float_of(0.02, f32t)])),
            |x, _| relax_jit::internals::erf((x as f32 * 0.02f32) as f64),
        ),
        (
            "exp",
            Box::new(|x, _| PrimExpr::call("exp", f32t, vec![x * PrimExpr::float_of(0.1, f32t)])),
            |x, _| ((x as f32 * 0.1f32) as f64).exp(),
        ),
        (
            "rsqrt",
            Box::new(|_, y| PrimExpr::call("rsqrt", f32t, vec![y])),
            |_, y| 1.0 / y.sqrt(),
        ),
        (
            "pow",
            Box::new(|x, y| PrimExpr::call("pow", f32t, vec![y, x * PrimExpr::float_of(0.05, f32t)])),
            |x, y| y.powf((x as f32 * 0.05f32) as f64),
        ),
        (
            "pow_neg_base",
            Box::new(|_, y| {
                PrimExpr::call(
                    "pow",
                    f32t,
                    vec![PrimExpr::float_of(0.0, f32t) - y, PrimExpr::float_of(3.0, f32t)],
                )
            }),
            |_, y| (-y).powi(3),
        ),
        ("floor", Box::new(call("floor")), |x, _| x.floor()),
    ];
    for (name, build, reference) in cases {
        let f = binary_func(n as i64, f32t, f32t, build);
        let (h, g) = run3(&f, &a, &b, &HostTensor::zeros(f32t, &[n as i64]).unwrap());
        let want: Vec<f64> = (0..n).map(|i| reference(a.get_f64(i), b.get_f64(i))).collect();
        assert_close(&h.to_f64_vec(), &want, 1e-5, 1e-6, &format!("{name} host"));
        if let Some(g) = g {
            assert_close(&g.to_f64_vec(), &h.to_f64_vec(), 1e-4, 1e-6, &format!("{name} gpu"));
        }
    }
    // isnan / max_value
    let f = binary_func(n as i64, f32t, DataType::BOOL, |x, y| {
        PrimExpr::call("isnan", DataType::BOOL, vec![PrimExpr::call("sqrt", f32t, vec![x - y])])
    });
    let (h, g) = run3(&f, &a, &b, &HostTensor::zeros(DataType::BOOL, &[n as i64]).unwrap());
    let want: Vec<u8> = (0..n)
        .map(|i| ((a.get_f64(i) as f32 - b.get_f64(i) as f32) < 0.0) as u8)
        .collect();
    assert_eq!(h.bytes(), &want[..]);
    if let Some(g) = g {
        assert_eq!(g.bytes(), &want[..], "isnan gpu");
    }
    let f = binary_func(4, f32t, f32t, |x, _| {
        bin(BinOp::Min, x, PrimExpr::call("max_value", f32t, vec![]))
    });
    let a4 = HostTensor::from_f64s(f32t, &[4], &[1.0, f64::INFINITY, -3.0, 1e38]).unwrap();
    let (h, g) = run3(&f, &a4, &a4, &HostTensor::zeros(f32t, &[4]).unwrap());
    let want = vec![1.0, f32::MAX as f64, -3.0, 1e38f32 as f64];
    assert_eq!(h.to_f64_vec(), want);
    if let Some(g) = g {
        assert_eq!(g.to_f64_vec(), want, "max_value gpu");
    }
}

#[test]
fn grid_split_beyond_65535_workgroups() {
    // 64 threads per workgroup: 65535 * 64 + 100 elements need 65,537 workgroups.
    let n = 65_535 * 64 + 100;
    let f32t = DataType::FLOAT32;
    let f = binary_func(n, f32t, f32t, |x, y| x - y);
    let av = rand_vec(n as usize, 5, -1.0, 1.0);
    let a = HostTensor::from_f64s(f32t, &[n], &av).unwrap();
    let b = HostTensor::from_f64s(f32t, &[n], &rand_vec(n as usize, 6, -1.0, 1.0)).unwrap();
    let (h, g) = run3(&f, &a, &b, &HostTensor::zeros(f32t, &[n]).unwrap());
    let want: Vec<f64> = (0..n as usize)
        .map(|i| (a.get_f64(i) as f32 - b.get_f64(i) as f32) as f64)
        .collect();
    assert!(h.to_f64_vec() == want, "host");
    if let Some(g) = g {
        assert!(g.to_f64_vec() == want, "gpu result over a split grid");
    }
}

/// A hand-scheduled kernel: `for bx in T.thread_binding(n / 32, "blockIdx.x")`,
/// `for tx in T.thread_binding(32, "threadIdx.x")`, plus a second statement bound to
/// a smaller `threadIdx.x` extent (guarded).
#[test]
fn hand_bound_threads() {
    let n = 96i64;
    let f32t = DataType::FLOAT32;
    let [a, c] = buffers(["A", "C"], f32t, &[n]);
    let bx = TirVar::new("bx", DataType::INT64);
    let tx = TirVar::new("tx", DataType::INT64);
    let tx2 = TirVar::new("tx2", DataType::INT64);
    let idx = bx.to_expr() * i64c(32) + tx.to_expr();
    let tb = |v: &TirVar, ext: i64, tag: &str, body: Stmt| {
        Stmt::For(For {
            var: v.clone(),
            min: i64c(0),
            extent: i64c(ext),
            kind: ForKind::ThreadBinding,
            thread_tag: Some(tag.into()),
            annotations: Attrs::new(),
            body: Box::new(body),
        })
    };
    let idx2 = bx.to_expr() * i64c(32) + tx2.to_expr();
    let body = tb(
        &bx,
        n / 32,
        "blockIdx.x",
        Stmt::Seq(vec![
            tb(
                &tx,
                32,
                "threadIdx.x",
                store(
                    &c,
                    std::slice::from_ref(&idx),
                    load(&a, std::slice::from_ref(&idx)) * PrimExpr::float_of(3.0, f32t),
                ),
            ),
            tb(
                &tx2,
                8,
                "threadIdx.x",
                store(&c, std::slice::from_ref(&idx2), PrimExpr::float_of(-1.0, f32t)),
            ),
        ]),
    );
    let mut f = prim_func(&[a, c], &[], vec![], body);
    f.s_tir = false;
    let av = rand_vec(n as usize, 7, -1.0, 1.0);
    let want: Vec<f64> = (0..n as usize)
        .map(|i| if i % 32 < 8 { -1.0 } else { (av[i] as f32 * 3.0) as f64 })
        .collect();
    let go = |jit: &Jit, gpu: bool| {
        let mut x = HostTensor::from_f64s(f32t, &[n], &av).unwrap();
        let mut y = HostTensor::zeros(f32t, &[n]).unwrap();
        run_tensors(jit, gpu, &f, &mut [&mut x, &mut y]);
        y.to_f64_vec()
    };
    assert_eq!(go(&Jit::new(None), false), want);
    let src = Jit::new(None).wgsl(&f).unwrap();
    assert_eq!(src.kernels[0].workgroup_size, [32, 1, 1]);
    if let Some(j) = gpu_jit() {
        assert_eq!(go(&j, true), want);
    }
}

/// WGSL has no f64 math builtins: a float64 math intrinsic refuses the kernel for the
/// GPU with an error naming the intrinsic (the host computes it).
#[test]
fn float64_math_refused_on_the_gpu_names_the_intrinsic() {
    /// The intrinsic, its call, and its float64 value.
    type Case = (&'static str, &'static str, fn(f64) -> f64);
    // (`T.fmod` of float64 runs on the GPU, exactly: `shaders/helpers/fmod_f64.wgsl`.)
    let cases: [Case; 7] = [
        ("exp", "T.exp(a[i])", f64::exp),
        ("exp10", "T.exp10(a[i])", |x| 10f64.powf(x)),
        ("log1p", "T.log1p(a[i])", f64::ln_1p),
        ("asin", "T.asin(a[i])", f64::asin),
        ("tanh", "T.tanh(a[i])", f64::tanh),
        ("pow", "T.pow(a[i], a[i])", |x| x.powf(x)),
        ("hypot", "T.hypot(a[i], a[i])", |x| x.hypot(x)),
    ];
    for (op, call, want) in cases {
        let src = format!(
            "@T.prim_func\ndef k_{op}(a: T.Buffer((4,), \"float64\"), b: T.Buffer((4,), \"float64\")):\n    for i in range(4):\n        b[i] = {call}\n"
        );
        let f = match relax_ir::text::parse(&src).expect("parses") {
            relax_ir::text::Program::PrimFunc { func, .. } => func,
            _ => panic!("a PrimFunc"),
        };
        let options = relax_jit::ScheduleOptions::default();
        let err = relax_jit::emit_program(&f, &relax_jit::DeviceCaps::ALL, &options)
            .expect_err("float64 math is refused for the GPU");
        let msg = err.to_string();
        assert!(
            matches!(err, relax_jit::JitError::UnsupportedDtype { dtype, .. } if dtype == DataType::FLOAT64),
            "{op}: {msg}"
        );
        assert!(
            msg.contains(&format!("`T.{op}`")),
            "{op}: the intrinsic is named: {msg}"
        );
        // The host computes it in float64.
        let a = HostTensor::from_f64s(DataType::FLOAT64, &[4], &[0.1, 0.2, 0.3, 0.4]).expect("a");
        let mut x = a.clone();
        let mut y = HostTensor::zeros(DataType::FLOAT64, &[4]).expect("b");
        run_tensors(&Jit::new(None), false, &f, &mut [&mut x, &mut y]);
        let want: Vec<f64> = a.to_f64_vec().into_iter().map(want).collect();
        assert_close(&y.to_f64_vec(), &want, 1e-12, 1e-12, &format!("{op} on the host"));
    }
}
