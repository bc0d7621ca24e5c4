//! Times `relax_host_kernels::attention::attention` on a head layout as GPT-2's
//! `torch.export` program reads it (`[batch, seq, heads, dim]` tensors, queries
//! and keys scaled as they are read), against the separate steps it replaces
//! (two batched products and a softmax on materialised tensors).
//!
//! `cargo run --release -p relax-host-kernels --example attention_bench -- SEQ HEADS DIM`

use std::time::Instant;

use relax_host_kernels::attention::{attention, AttentionShape, Operand, Output, SoftmaxGuard};
use relax_host_kernels::elementwise::softmax;
use relax_host_kernels::matmul;

fn main() {
    let a: Vec<usize> = std::env::args().skip(1).filter_map(|x| x.parse().ok()).collect();
    let (s, h, d) = (
        a.first().copied().unwrap_or(32),
        a.get(1).copied().unwrap_or(4),
        a.get(2).copied().unwrap_or(32),
    );
    let n = s * h * d;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5).collect();
    let mut out = vec![0f32; n];
    // Rows (head, query); q[i, hh, x] at i*h*d + hh*d + x.
    let rows_q = [(d, 1), (h * d, 1)];
    let rows_kv = [(d, 1), (0, 1)];
    let shape = AttentionShape {
        rows: vec![h, s],
        query_axis: 1,
        keys: s,
        head_dim: d,
        value_dim: d,
        scale: 1.0,
        causal: Some(0),
        guard: SoftmaxGuard::None,
    };
    let op = |rows: &'static [(usize, usize)], f: f32| Operand {
        data: &x,
        rows_at: rows,
        key_stride: h * d,
        inner_stride: 1,
        factor: f,
        offset: 0,
    };
    let rows_q: &'static [(usize, usize)] = Box::leak(Box::new(rows_q));
    let rows_kv: &'static [(usize, usize)] = Box::leak(Box::new(rows_kv));
    let (q, k, v) = (op(rows_q, 0.42), op(rows_kv, 0.42), op(rows_kv, 1.0));
    let reps = 2000;
    let time = |f: &mut dyn FnMut()| {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            for _ in 0..reps {
                f();
            }
            best = best.min(t.elapsed().as_secs_f64() / reps as f64 * 1e6);
        }
        best
    };
    let fused = time(&mut || {
        let o = Output {
            data: &mut out,
            rows_at: &[s * d, d],
            inner_stride: 1,
        };
        attention(&shape, &q, &k, &v, None, o).unwrap();
    });
    // The separate steps on materialised [h, s, d] tensors.
    let qt = x.clone();
    let kt = x.clone();
    let mut sc = vec![0f32; h * s * s];
    let mut p = vec![0f32; h * s * s];
    let mut o2 = vec![0f32; n];
    let steps = time(&mut || {
        matmul(h, s, d, s, &qt, true, &kt, true, &mut sc).unwrap();
        softmax(&sc, h * s, s, &mut p).unwrap();
        matmul(h, s, s, d, &p, true, &x, true, &mut o2).unwrap();
    });
    println!("seq {s} heads {h} dim {d}: fused {fused:.2} us, products + softmax alone {steps:.2} us");
}
