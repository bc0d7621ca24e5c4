//! Weight bytes per second of the matrix-vector products of a decoding step (one row
//! times `Wᵀ`, the weight stored `[n, k]` as `nn.Linear` keeps it), in float32
//! (`gemm::gemv`) and float16 (`gemv::gemv_bt_half`), against a STREAM-like triad
//! measured in the same run. The weights of all layers together exceed the caches,
//! as in a decoder: each timing walks `copies` distinct matrices of a shape.
//!
//! Usage: `cargo run --release -p relax-host-kernels --example gemv_bench [-- REPEAT]`

use std::time::Instant;

use rayon::prelude::*;
use relax_host_kernels::gemm::gemv;
use relax_host_kernels::gemv::{gemv_bt_half, Half};

/// Bytes per second of `a[i] = b[i] + 3 * c[i]` over 32 Mi floats per array, in
/// parallel (the best of `repeat`).
fn triad(repeat: usize) -> f64 {
    let n = 32 << 20;
    let b = vec![1f32; n];
    let c = vec![2f32; n];
    let mut a = vec![0f32; n];
    let mut best = f64::MAX;
    for _ in 0..repeat {
        let t = Instant::now();
        a.par_chunks_mut(1 << 16).enumerate().for_each(|(i, out)| {
            let o = i << 16;
            for (j, x) in out.iter_mut().enumerate() {
                *x = b[o + j] + 3.0 * c[o + j];
            }
        });
        best = best.min(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(&a);
    3.0 * 4.0 * n as f64 / best
}

fn main() {
    let repeat: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let tr = triad(repeat);
    println!("triad: {:.1} GB/s ({} threads)", tr / 1e9, rayon::current_num_threads());
    println!(
        "{:>6} {:>6} {:>8} {:>10} {:>10} {:>9} {:>9}",
        "n", "k", "copies", "f32 GB/s", "f16 GB/s", "f32/triad", "f16/triad"
    );
    for (n, k) in [
        (1280usize, 768usize),
        (768, 768),
        (4096, 768),
        (768, 2048),
        (16384, 768),
    ] {
        // About 256 MiB of float32 weights per shape, so that no timing reads from cache.
        let copies = ((256usize << 20) / (4 * n * k)).max(2);
        let a: Vec<f32> = (0..k).map(|i| ((i * 7) % 13) as f32 * 0.1 - 0.6).collect();
        let w32: Vec<Vec<f32>> = (0..copies)
            .map(|c| (0..n * k).map(|i| (((i + c) * 5) % 11) as f32 * 0.05 - 0.25).collect())
            .collect();
        let w16: Vec<Vec<u8>> = w32
            .iter()
            .map(|w| w.iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect())
            .collect();
        let mut c = vec![0f32; n];
        let mut time = |f: &mut dyn FnMut(usize, &mut [f32])| {
            let mut best = f64::MAX;
            for _ in 0..repeat {
                let t = Instant::now();
                for i in 0..copies {
                    f(i, &mut c);
                }
                best = best.min(t.elapsed().as_secs_f64() / copies as f64);
            }
            best
        };
        let t32 = time(&mut |i, c| gemv(1, k, n, &a, &w32[i], true, c).expect("valid shapes"));
        let t16 = time(&mut |i, c| gemv_bt_half(Half::F16, 1, k, n, &a, &w16[i], c).expect("valid shapes"));
        let (b32, b16) = ((4 * n * k) as f64 / t32, (2 * n * k) as f64 / t16);
        println!(
            "{n:>6} {k:>6} {copies:>8} {:>10.1} {:>10.1} {:>9.2} {:>9.2}",
            b32 / 1e9,
            b16 / 1e9,
            b32 / tr,
            b16 / tr
        );
    }
}
