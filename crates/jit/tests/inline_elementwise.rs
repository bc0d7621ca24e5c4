//! Elementwise producer stages are inlined into their consumers before lowering
//! (one stage, one GPU kernel), and only when the value stays the same: a producer
//! whose input is overwritten later, one read by a reduction, or one with a math
//! call read twice keeps its own stage. Every case runs on the host and the GPU and
//! is compared with values computed here.

mod common;

use common::*;
use relax_ir::text::Program;
use relax_ir::{DataType, PrimFunc};
use relax_jit::internals::lower;
use relax_jit::HostTensor;

fn prim(src: &str) -> PrimFunc {
    match relax_ir::text::parse(src).expect("parses") {
        Program::PrimFunc { func, .. } => func,
        _ => panic!("a PrimFunc"),
    }
}

fn stages(f: &PrimFunc) -> usize {
    lower(f).expect("lowers").stages.len()
}

/// `f` on `a` (8 floats) writing `c` (8 floats), on the host and on the GPU when
/// there is one; `a` is an argument too, so a stage that writes it is visible.
fn run8(f: &PrimFunc, a: &[f64], want: &[f64]) {
    let mut runs = vec![None];
    if let Some(g) = gpu_jit() {
        runs.push(Some(g));
    }
    for gpu in &runs {
        let mut ta = HostTensor::from_f64s(DataType::FLOAT32, &[8], a).expect("a");
        let mut tc = HostTensor::zeros(DataType::FLOAT32, &[8]).expect("c");
        let mut args = vec![relax_jit::KernelArg::from(&mut ta), relax_jit::KernelArg::from(&mut tc)];
        match gpu {
            Some(g) => g.run_gpu(f, &mut args).expect("gpu run"),
            None => relax_jit::Jit::new(None).run_host(f, &mut args).expect("host run"),
        }
        drop(args);
        let got = tc.to_f64_vec();
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                "gpu {}: {got:?} != {want:?}",
                gpu.is_some()
            );
        }
    }
}

fn inputs() -> Vec<f64> {
    (0..8).map(|i| f64::from(i) * 0.37 - 1.1).collect()
}

#[test]
fn gelu_is_one_stage_and_one_kernel() {
    let fs = legalized(r#"x: R.Tensor((4, 37), "float32")"#, "y = R.nn.gelu(x)");
    let f = &fs[0];
    assert_eq!(stages(f), 1, "the five elementwise nests are one stage");
    let src =
        relax_jit::emit_program(f, &relax_jit::DeviceCaps::ALL, &relax_jit::ScheduleOptions::default()).expect("emits");
    assert_eq!(src.kernels.len(), 1);
    let x = random_f32_inputs(&[[4, 37]], |_| 7, -4.0, 4.0);
    let want: Vec<f64> = x[0]
        .to_f64_vec()
        .iter()
        .map(|&v| {
            let v = f64::from(v as f32);
            v * 0.5 * (1.0 + erf(v / std::f64::consts::SQRT_2))
        })
        .collect();
    let host = run_output(None, f, &x, DataType::FLOAT32, &[4, 37]);
    for (h, w) in host.iter().zip(&want) {
        assert!((h - w).abs() < 1e-5, "{h} vs {w}");
    }
    if let Some(g) = gpu_jit() {
        let gpu = run_output(Some(&g), f, &x, DataType::FLOAT32, &[4, 37]);
        for (a, b) in gpu.iter().zip(&host) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }
}

/// `erf` in f64 (Abramowitz-Stegun 7.1.26 is too coarse; this is the series /
/// continued fraction to 1e-12).
fn erf(x: f64) -> f64 {
    if x.abs() < 3.0 {
        // Maclaurin series.
        let mut sum = x;
        let mut term = x;
        for n in 1..200 {
            term *= -x * x / f64::from(n);
            let add = term / f64::from(2 * n + 1);
            sum += add;
            if add.abs() < 1e-17 {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        x.signum() * (1.0 - (-x * x).exp() / (x.abs() * std::f64::consts::PI.sqrt()))
    }
}

const OVERWRITTEN: &str = r#"
@T.prim_func
def f(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.sblock("b"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.sblock("a"):
            vi = T.axis.spatial(8, i)
            A[vi] = T.float32(0)
    for i in range(8):
        with T.sblock("c"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)
"#;

#[test]
fn a_producer_whose_input_is_overwritten_keeps_its_stage() {
    let f = prim(OVERWRITTEN);
    assert_eq!(stages(&f), 3);
    let a = inputs();
    let want: Vec<f64> = a.iter().map(|v| f64::from(*v as f32) * 2.0 + 1.0).collect();
    run8(&f, &a, &want);
}

const CHAIN: &str = r#"
@T.prim_func
def f(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    D = T.alloc_buffer((8,))
    for i in range(8):
        with T.sblock("b"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.sblock("d"):
            vi = T.axis.spatial(8, i)
            D[vi] = B[vi] + T.float32(1)
    for i in range(8):
        with T.sblock("c"):
            vi = T.axis.spatial(8, i)
            C[vi] = D[vi] * D[7 - vi]
"#;

#[test]
fn cheap_producers_inline_even_when_read_twice() {
    let f = prim(CHAIN);
    assert_eq!(stages(&f), 1);
    let a = inputs();
    let d: Vec<f64> = a.iter().map(|v| f64::from(*v as f32) * 2.0 + 1.0).collect();
    let want: Vec<f64> = (0..8).map(|i| d[i] * d[7 - i]).collect();
    run8(&f, &a, &want);
}

const CALL_TWICE: &str = r#"
@T.prim_func
def f(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.sblock("b"):
            vi = T.axis.spatial(8, i)
            B[vi] = T.exp(A[vi])
    for i in range(8):
        with T.sblock("c"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] * B[vi]
"#;

#[test]
fn a_math_call_read_twice_is_not_duplicated() {
    let f = prim(CALL_TWICE);
    assert_eq!(stages(&f), 2);
    let a = inputs();
    let want: Vec<f64> = a.iter().map(|v| (f64::from(*v as f32) * 2.0).exp()).collect();
    run8(&f, &a, &want);
}

const INTO_REDUCTION: &str = r#"
@T.prim_func
def f(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    S = T.alloc_buffer((1,))
    for i in range(8):
        with T.sblock("b"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(3)
    for k in range(8):
        with T.sblock("s"):
            vk = T.axis.reduce(8, k)
            with T.init():
                S[0] = T.float32(0)
            S[0] = S[0] + B[vk]
    for i in range(8):
        with T.sblock("c"):
            vi = T.axis.spatial(8, i)
            C[vi] = S[0]
"#;

#[test]
fn a_producer_read_by_a_reduction_keeps_its_stage() {
    let f = prim(INTO_REDUCTION);
    assert_eq!(stages(&f), 3);
    let a = inputs();
    let s: f64 = a.iter().map(|v| f64::from(*v as f32) * 3.0).sum();
    run8(&f, &a, &[s; 8]);
}
