//! float16 on an adapter without `SHADER_F16`: tensors are held widened to f32
//! words and computed in f32, rounded to float16 at every operation, cast and
//! store, so the GPU gives the host's float16 results (within float16 rounding of
//! the transcendental functions). The adapter's missing feature is simulated by
//! giving the JIT capabilities without it; the kernels run on the real adapter.

use std::sync::Arc;

use relax_ir::{BaseFunc, DataType, PrimFunc};
use relax_jit::{DeviceCaps, HostTensor, Jit, KernelArg, ScheduleOptions};

fn prim(src: &str) -> PrimFunc {
    let module = match relax_ir::text::parse(src) {
        Ok(p) => p.into_module(),
        Err(d) => panic!("parse error: {}", d.render("test.py", src, false)),
    };
    match module.functions.values().next().cloned() {
        Some(BaseFunc::Prim(f)) => f,
        _ => panic!("no PrimFunc"),
    }
}

const F16_OPS: &str = r#"
@T.prim_func
def f16_ops(A: T.Buffer((64, 64), "float16"), W: T.Buffer((64, 64), "float16"), B: T.Buffer((64, 64), "float16"), C: T.Buffer((64, 64), "float16")):
    for i, j in T.grid(64, 64):
        with T.block("elementwise"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = T.exp(A[vi, vj]) * A[vi, vj] + T.Cast("float16", T.Cast("float32", A[vi, vj]) * T.float32(3.0)) + T.float16(1000.0)
    for i, j, k in T.grid(64, 64, 64):
        with T.block("matmul"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float16(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * W[vk, vj]
"#;

#[test]
fn float16_without_shader_f16_matches_the_host() {
    let f = prim(F16_OPS);
    let no_f16 = DeviceCaps {
        f16: false,
        ..DeviceCaps::ALL
    };
    // The WGSL needs no f16 extension and rounds through the float16 helper.
    let src = Jit::with_options(None, no_f16, ScheduleOptions::default())
        .wgsl(&f)
        .expect("wgsl without SHADER_F16");
    for k in &src.kernels {
        assert!(!k.wgsl.contains("enable f16"), "{}", k.wgsl);
        assert!(k.wgsl.contains("to_f16_f32("), "{}", k.wgsl);
    }
    let rt = match relax_gpu_runtime::GpuRuntime::shared_default() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("skipped the run: no GPU adapter ({e})");
            return;
        }
    };
    let caps = DeviceCaps {
        f16: false,
        max_binding_bytes: rt.max_binding_bytes(),
        ..DeviceCaps::ALL
    };
    let options = ScheduleOptions::for_adapter(rt.adapter_info());
    let native = rt.supports_f16().then(|| Jit::new(Some(Arc::new(rt.clone()))));
    let gpu = Jit::with_options(Some(Arc::new(rt)), caps, options);
    let host = Jit::new(None);
    let f16 = DataType::FLOAT16;
    // Values in [-4, 4) on a grid float16 holds exactly, plus a few that overflow
    // float16 once multiplied (exp(11) * 11 > 65504).
    let a: Vec<f64> = (0..64 * 64)
        .map(|i| {
            if i % 97 == 0 {
                11.0
            } else {
                ((i * 37) % 256) as f64 / 32.0 - 4.0
            }
        })
        .collect();
    let w: Vec<f64> = (0..64 * 64).map(|i| ((i * 11) % 64) as f64 / 64.0 - 0.5).collect();
    let run = |jit: &Jit, on_gpu: bool| -> (HostTensor, HostTensor) {
        let mut ta = HostTensor::from_f64s(f16, &[64, 64], &a).expect("a");
        let mut tw = HostTensor::from_f64s(f16, &[64, 64], &w).expect("w");
        let mut tb = HostTensor::zeros(f16, &[64, 64]).expect("b");
        let mut tc = HostTensor::zeros(f16, &[64, 64]).expect("c");
        let mut args = vec![
            KernelArg::from(&mut ta),
            KernelArg::from(&mut tw),
            KernelArg::from(&mut tb),
            KernelArg::from(&mut tc),
        ];
        if on_gpu {
            jit.run_gpu(&f, &mut args).expect("gpu run");
        } else {
            jit.run_host(&f, &mut args).expect("host run");
        }
        drop(args);
        (tb, tc)
    };
    let (hb, hc) = run(&host, false);
    let (gb, gc) = run(&gpu, true);
    // With SHADER_F16 the same kernels compute in f16 registers: the same
    // float16 roundings, so the same values.
    if let Some(native) = native {
        let (nb, nc) = run(&native, true);
        for (what, n, g) in [("elementwise", &nb, &gb), ("matmul", &nc, &gc)] {
            let (nv, gv) = (n.to_f64_vec(), g.to_f64_vec());
            for (i, (x, y)) in nv.iter().zip(&gv).enumerate() {
                // The matmul rounds the same way; `exp` in f16 registers is looser.
                let tol = if what == "matmul" { 0.0 } else { 1e-2 * x.abs().max(1.0) };
                assert!(
                    x == y || (x - y).abs() <= tol,
                    "{what} element {i}: SHADER_F16 {x}, without {y}"
                );
            }
        }
    }
    // The host accumulates a float16 matmul in f32 and rounds once; the GPU
    // kernel rounds every step to float16, as the TIR says (and as it does with
    // SHADER_F16): 64 steps of float16 rounding apart.
    for (what, h, g, tol) in [("elementwise", &hb, &gb, 1e-2), ("matmul", &hc, &gc, 8e-2)] {
        let (hv, gv) = (h.to_f64_vec(), g.to_f64_vec());
        let mut infinite = 0;
        for (i, (x, y)) in hv.iter().zip(&gv).enumerate() {
            if x.is_infinite() {
                infinite += 1;
                assert_eq!(x, y, "{what} element {i}: host {x}, gpu {y}");
            } else {
                assert!(
                    (x - y).abs() <= tol * x.abs().max(1.0),
                    "{what} element {i}: host {x}, gpu {y}"
                );
            }
        }
        if what == "elementwise" {
            assert!(infinite > 0, "the overflowing elements are infinite on both devices");
        }
    }
}
