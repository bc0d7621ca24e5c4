//! Tensors larger than one storage binding: bound as aligned chunks, with GPU
//! results equal to the host's. Each test skips when there is no adapter.

mod common;

use std::sync::Arc;

use common::*;
use relax_gpu_runtime::{GpuRuntime, RuntimeOptions};

use relax_ir::{DataType, PrimFunc};
use relax_jit::{HostTensor, Jit, KernelArg};

const F32: DataType = DataType::FLOAT32;

/// A JIT on a runtime whose storage bindings are capped at `cap` bytes.
fn capped_jit(cap: u64) -> Option<Jit> {
    match GpuRuntime::new(RuntimeOptions {
        max_binding_bytes: Some(cap),
        ..Default::default()
    }) {
        Ok(rt) => {
            assert_eq!(
                rt.max_binding_bytes(),
                cap.min(rt.limits().max_storage_buffer_binding_size)
            );
            Some(Jit::new(Some(Arc::new(rt))))
        }
        Err(e) => {
            eprintln!("no GPU adapter ({e}); test skipped");
            None
        }
    }
}

fn f32_tensor(shape: &[i64], f: impl Fn(usize) -> f32) -> HostTensor {
    let n: i64 = shape.iter().product();
    let bytes: Vec<u8> = (0..n as usize).flat_map(|i| f(i).to_le_bytes()).collect();
    HostTensor::from_bytes(F32, shape, &bytes).unwrap()
}

fn weight(i: usize) -> f32 {
    ((i * 7 + i / 1000) % 17) as f32 / 17.0 - 0.5
}

/// `x @ W` in f64 from the tensors' f32 values.
fn matmul_ref(x: &HostTensor, w: &HostTensor, m: usize, k: usize, n: usize) -> Vec<f64> {
    let xs: &[f32] = bytemuck::cast_slice(x.bytes());
    let ws: &[f32] = bytemuck::cast_slice(w.bytes());
    let mut out = vec![0.0f64; m * n];
    for i in 0..m {
        for r in 0..k {
            let a = xs[i * k + r] as f64;
            let row = &ws[r * n..(r + 1) * n];
            for (o, &b) in out[i * n..(i + 1) * n].iter_mut().zip(row) {
                *o += a * b as f64;
            }
        }
    }
    out
}

fn run_gpu(jit: &Jit, f: &PrimFunc, inputs: &[HostTensor], out: HostTensor) -> HostTensor {
    let mut ins = inputs.to_vec();
    let mut o = out;
    let mut args: Vec<KernelArg> = ins.iter_mut().map(KernelArg::from).collect();
    args.push(KernelArg::from(&mut o));
    jit.run_gpu(f, &mut args).expect("gpu run");
    o
}

/// A JIT whose bindings hold at most `cap` bytes and an `m x k x n` matmul whose
/// weight (`k x n`) is larger than that.
fn capped_matmul(cap: u64, m: usize, k: usize, n: usize) -> Option<(Jit, PrimFunc)> {
    let jit = capped_jit(cap)?;
    assert!((k * n * 4) as u64 > cap);
    Some((jit, matmul_func(m as i64, k as i64, n as i64)))
}

#[test]
fn matmul_weight_over_small_binding_cap_matches_host() {
    let (m, k, n) = (5usize, 300usize, 1000usize);
    let Some((jit, f)) = capped_matmul(1 << 20, m, k, n) else {
        return;
    };
    let src = jit.wgsl(&f).unwrap();
    let chunks = src.kernels[0].bindings.iter().filter(|b| b.chunk.is_some()).count();
    assert_eq!(chunks, 2, "the 1.2 MB weight is bound as two chunks");
    let x = f32_tensor(&[m as i64, k as i64], |i| (i % 13) as f32 * 0.1 - 0.6);
    let w = f32_tensor(&[k as i64, n as i64], weight);
    let want = matmul_ref(&x, &w, m, k, n);
    let zeros = HostTensor::zeros(F32, &[m as i64, n as i64]).unwrap();
    let g = run_gpu(&jit, &f, &[x.clone(), w.clone()], zeros.clone());
    assert_close(&g.to_f64_vec(), &want, 1e-4, 1e-4, "gpu matmul, chunked weight");
    let mut host = zeros;
    let (mut xh, mut wh) = (x, w);
    Jit::new(None)
        .run_host(&f, &mut [&mut xh, &mut wh, &mut host].map(KernelArg::from))
        .unwrap();
    assert_close(&g.to_f64_vec(), &host.to_f64_vec(), 1e-5, 1e-5, "gpu against host");
}

#[test]
fn elementwise_output_over_small_binding_cap_matches_host() {
    let cap = 1 << 18;
    let Some(jit) = capped_jit(cap) else { return };
    let n = 200_003usize; // 800 KB: four chunks of 256 KiB, the last one partial
    let f = add_func(&[n as i64]);
    let src = jit.wgsl(&f).unwrap();
    let chunked: Vec<_> = src.kernels[0].bindings.iter().filter_map(|b| b.chunk).collect();
    assert_eq!(chunked.len(), 12, "inputs and output bound as 4 chunks each");
    let a = f32_tensor(&[n as i64], |i| i as f32);
    let b = f32_tensor(&[n as i64], |i| 0.25 * (i % 1000) as f32);
    let g = run_gpu(&jit, &f, &[a, b], HostTensor::zeros(F32, &[n as i64]).unwrap());
    let got = g.to_f64_vec();
    for (i, v) in got.iter().enumerate() {
        assert_eq!(*v, (i as f32 + 0.25 * (i % 1000) as f32) as f64, "element {i}");
    }
}

/// A layer whose weight is just over WebGPU's default 128 MiB binding limit.
#[test]
fn matvec_weight_over_128_mib_matches_reference() {
    let (m, k, n) = (1usize, 8200usize, 4096usize);
    let Some((jit, f)) = capped_matmul(128 << 20, m, k, n) else {
        return;
    };
    let x = f32_tensor(&[m as i64, k as i64], |i| ((i % 11) as f32 - 5.0) * 0.01);
    let w = f32_tensor(&[k as i64, n as i64], weight);
    let want = matmul_ref(&x, &w, m, k, n);
    let g = run_gpu(
        &jit,
        &f,
        &[x, w],
        HostTensor::zeros(F32, &[m as i64, n as i64]).unwrap(),
    );
    assert_close(&g.to_f64_vec(), &want, 1e-4, 1e-4, "gpu matvec, 134 MB weight");
}

/// A matmul of symbolic size (`R.matmul` of `(m, 300)` and `(300, n)` legalized)
/// whose weight turns out larger than one binding only at run time: the call is
/// compiled for its sizes and binds the weight in chunks (the generic kernel cannot),
/// matching the host at two sizes; a small call still runs the generic kernel.
#[test]
fn symbolic_matmul_weight_over_the_binding_cap_matches_host() {
    let Some(jit) = capped_jit(1 << 20) else { return };
    let f = legalized(
        r#"x: R.Tensor(("m", 300), "float32"), w: R.Tensor((300, "n"), "float32")"#,
        "y = R.matmul(x, w)",
    )
    .remove(0);
    let generic = jit.wgsl(&f).unwrap();
    assert!(
        generic
            .kernels
            .iter()
            .flat_map(|k| &k.bindings)
            .all(|b| b.chunk.is_none()),
        "sizes unknown when compiled: no chunks"
    );
    for (m, n) in [(5usize, 1000usize), (3, 1100), (4, 100)] {
        let k = 300usize;
        let x = f32_tensor(&[m as i64, k as i64], |i| (i % 13) as f32 * 0.1 - 0.6);
        let w = f32_tensor(&[k as i64, n as i64], weight);
        let want = matmul_ref(&x, &w, m, k, n);
        let zeros = HostTensor::zeros(F32, &[m as i64, n as i64]).unwrap();
        let g = run_gpu(&jit, &f, &[x.clone(), w.clone()], zeros.clone());
        assert_close(&g.to_f64_vec(), &want, 1e-4, 1e-4, &format!("gpu matmul {m}x{k}x{n}"));
        let mut host = zeros;
        let (mut xh, mut wh) = (x, w);
        Jit::new(None)
            .run_host(&f, &mut [&mut xh, &mut wh, &mut host].map(KernelArg::from))
            .unwrap();
        assert_close(&g.to_f64_vec(), &host.to_f64_vec(), 1e-5, 1e-5, "gpu against host");
    }
}
