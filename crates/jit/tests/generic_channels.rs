//! Layers that differ only in a channel count share one GPU program (and pipeline):
//! compiled generic in that count, they compute what the host does for each.

mod common;

use std::sync::Arc;

use common::*;
use relax_ir::PrimFunc;
use relax_jit::{Jit, ScheduleOptions};

/// The single PrimFunc `LegalizeOps` makes of `body` over `params`.
fn one(params: &str, body: &str) -> PrimFunc {
    let mut fs = legalized(params, body);
    assert_eq!(fs.len(), 1, "one PrimFunc");
    fs.remove(0)
}

/// A GPU JIT with generic channel counts (reductions included) on or off; `None`
/// without an adapter.
fn jit(generic: bool) -> Option<Jit> {
    let rt = shared_runtime()?;
    let opts = ScheduleOptions {
        generic_channels: generic,
        generic_reductions: generic,
        ..ScheduleOptions::for_adapter(rt.adapter_info())
    };
    Some(jit_with(rt, opts))
}

/// Two 1x1 convolutions and two 3x3 ones (padded) that differ only in their input
/// channels, and two ReLUs that differ in their channels: each pair runs one program
/// (the same pipelines), and every function matches the host.
#[test]
fn convolutions_differing_in_channels_share_one_pipeline() {
    let Some(gpu) = jit(true) else { return };
    let Some(fixed) = jit(false) else { return };
    let conv = |ci: i64, k: i64| {
        one(
            &format!(r#"x: R.Tensor((1, {ci}, 14, 14), "float32"), w: R.Tensor((32, {ci}, {k}, {k}), "float32")"#),
            &format!("y = R.nn.conv2d(x, w, padding=[{p}, {p}, {p}, {p}])", p = k / 2),
        )
    };
    let relu = |c: i64| {
        one(
            &format!(r#"x: R.Tensor((1, {c}, 7, 7), "float32")"#),
            "y = R.nn.relu(x)",
        )
    };
    let pairs = [
        ("1x1 convolution", conv(64, 1), conv(96, 1)),
        ("3x3 convolution", conv(40, 3), conv(72, 3)),
        ("relu", relu(16), relu(48)),
    ];
    for (what, a, b) in &pairs {
        assert_ne!(
            relax_jit::internals::kernel_hash(a),
            relax_jit::internals::kernel_hash(b),
            "{what}: different functions"
        );
        let before = gpu.counters();
        let pa = gpu.gpu_program(a).expect("compiles");
        let pb = gpu.gpu_program(b).expect("compiles");
        assert!(Arc::ptr_eq(&pa, &pb), "{what}: one program for both");
        let after = gpu.counters();
        assert_eq!(after.gpu_programs_compiled - before.gpu_programs_compiled, 1, "{what}");
        // Without generic channels: one program each.
        let before = fixed.counters();
        let (qa, qb) = (
            fixed.gpu_program(a).expect("compiles"),
            fixed.gpu_program(b).expect("compiles"),
        );
        assert!(!Arc::ptr_eq(&qa, &qb), "{what}: one program each");
        assert_eq!(fixed.counters().gpu_programs_compiled - before.gpu_programs_compiled, 2);
        for (t, f) in [a, b].into_iter().enumerate() {
            assert_gpu_matches_host_on_random(&gpu, f, 40 + t as u64, what);
            // The same values as the kernels compiled for the constant channels.
            let mut params = buffer_params(f);
            let (_, out) = params.pop().expect("an output");
            let shapes: Vec<Vec<i64>> = params.into_iter().map(|(_, s)| s).collect();
            let inputs = random_f32_inputs(&shapes, |i| 60 + i as u64, -1.0, 1.0);
            let [_, generic] = host_and_gpu(&gpu, f, &inputs, &out);
            let [_, specific] = host_and_gpu(&fixed, f, &inputs, &out);
            assert_eq!(generic, specific, "{what}: generic and specific kernels agree");
        }
    }
}

/// With `generic_channels` alone, only elementwise and injective functions are
/// made generic: two ReLUs and two concatenations differing in channels share a program
/// each, two 1x1 convolutions (a reduction over the channels) keep one each.
#[test]
fn without_generic_reductions_only_elementwise_functions_are_generic() {
    let Some(rt) = shared_runtime() else { return };
    let opts = ScheduleOptions {
        generic_channels: true,
        generic_reductions: false,
        ..ScheduleOptions::for_adapter(rt.adapter_info())
    };
    let gpu = jit_with(rt, opts);
    let relu = |c: i64| {
        one(
            &format!(r#"x: R.Tensor((1, {c}, 7, 7), "float32")"#),
            "y = R.nn.relu(x)",
        )
    };
    let concat = |c: i64| {
        one(
            &format!(r#"a: R.Tensor((1, {c}, 5, 5), "float32"), b: R.Tensor((1, 32, 5, 5), "float32")"#),
            "y = R.concat((a, b), axis=1)",
        )
    };
    let conv = |ci: i64| {
        one(
            &format!(r#"x: R.Tensor((1, {ci}, 14, 14), "float32"), w: R.Tensor((32, {ci}, 1, 1), "float32")"#),
            "y = R.nn.conv2d(x, w)",
        )
    };
    for (what, a, b, shared) in [
        ("relu", relu(16), relu(48), true),
        ("concatenation", concat(64), concat(96), true),
        ("1x1 convolution", conv(64), conv(96), false),
    ] {
        let pa = gpu.gpu_program(&a).expect("compiles");
        let pb = gpu.gpu_program(&b).expect("compiles");
        assert_eq!(Arc::ptr_eq(&pa, &pb), shared, "{what}");
        for (t, f) in [a, b].iter().enumerate() {
            assert_gpu_matches_host_on_random(&gpu, f, 80 + t as u64, what);
        }
    }
}

/// Timings (set `RELAX_BENCH_GENERIC=1`): an elementwise function (`x + b`
/// over `[1, C, 28, 28]`) compiled generic in its channels and with them constant,
/// on device-resident tensors, alternating.
#[test]
fn generic_elementwise_timed() {
    if std::env::var_os("RELAX_BENCH_GENERIC").is_none() {
        return;
    }
    let (Some(gpu), Some(fixed)) = (jit(true), jit(false)) else {
        return;
    };
    let rt = gpu.gpu().expect("gpu").clone();
    for c in [128i64, 480] {
        let f = one(
            &format!(r#"x: R.Tensor((1, {c}, 28, 28), "float32"), b: R.Tensor((1, {c}, 1, 1), "float32")"#),
            "y = R.add(x, b)",
        );
        let n = (c * 28 * 28) as usize;
        let x = rt.upload(&f32_bytes(&vec![0.5f32; n])).expect("x");
        let b = rt.upload(&f32_bytes(&vec![0.25f32; c as usize])).expect("b");
        let y = rt.alloc((n * 4) as u64).expect("y");
        let (sx, sb) = ([1, c, 28, 28], [1, c, 1, 1]);
        for round in 0..2 {
            let t = |j: &Jit| time_resident(j, &f, &[(&x, &sx), (&b, &sb), (&y, &sx)], 9) * 1e3;
            let (g, s) = (t(&gpu), t(&fixed));
            eprintln!("x + b C={c} (round {round}): generic {g:.3} ms, constant {s:.3} ms");
        }
    }
}
