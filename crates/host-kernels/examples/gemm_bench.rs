//! GFLOP/s of the matrix products at the shapes of transformer layers: `x @ Wᵀ` with
//! the weight stored `[n, k]` (`bt`, as `nn.Linear` keeps it) and `x @ W` with the
//! weight stored `[k, n]` (`nn`, as ONNX `MatMul` initializers are), on one thread
//! and on rayon's whole pool.
//!
//! On one thread it also reports GFLOP/s per second of the thread's own CPU time
//! (`cpu`), which a machine busy with other work disturbs less than the wall clock.
//!
//! Each shape is timed three ways, interleaved: `unpacked` (`sgemm_parallel`, which
//! packs per call), `prepacked` (the weight packed once, [`gemm_prepacked`]) and, on
//! the first repetition only, `pack` (packing the weight once).
//!
//! Usage: `cargo run --release -p relax-host-kernels --example gemm_bench [-- REPEAT]`

use std::time::Instant;

use relax_host_kernels::gemm::MatRef;
use relax_host_kernels::prepacked::{gemm_prepacked, PackedB};
use relax_host_kernels::{sgemm_parallel, Epilogue};

/// Seconds of CPU time the calling thread has used.
fn thread_cpu_s() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

fn main() {
    let repeat: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    let shapes = [
        (128usize, 768usize, 768usize),
        (128, 768, 2304),
        (128, 768, 3072),
        (128, 3072, 768),
        (32, 128, 128),
        (32, 128, 512),
        (32, 512, 128),
    ];
    let all = rayon::current_num_threads();
    for threads in [1, all] {
        let pool = match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
            Ok(p) => p,
            Err(e) => {
                eprintln!("thread pool: {e}");
                return;
            }
        };
        for (&(m, k, n), bt) in shapes.iter().flat_map(|s| [(s, true), (s, false)]) {
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 * 0.1 - 0.6).collect();
            let w: Vec<f32> = (0..n * k).map(|i| ((i * 5) % 11) as f32 * 0.05 - 0.25).collect();
            let mut c = vec![0f32; m * n];
            let bm = if bt {
                MatRef { data: &w, rs: 1, cs: k }
            } else {
                MatRef::row_major(&w, n)
            };
            let packed = PackedB::pack(k, n, bm).expect("valid shapes");
            let unpacked = |c: &mut [f32]| {
                sgemm_parallel(m, k, n, MatRef::row_major(&a, k), bm, c, &Epilogue::default(), 0).expect("valid shapes")
            };
            let prepacked = |c: &mut [f32]| match &packed {
                Some(p) => gemm_prepacked(m, &a, k, p, c, true).expect("valid shapes"),
                None => unpacked(c),
            };
            // Small products repeat more, so that each timing is well above the clock.
            let inner = (50_000_000 / (m * n * k)).max(1);
            let mut stats = [(Vec::new(), Vec::new()), (Vec::new(), Vec::new())];
            pool.install(|| {
                unpacked(&mut c);
                prepacked(&mut c);
                for _ in 0..repeat {
                    for (v, (times, cpu)) in stats.iter_mut().enumerate() {
                        let (t, t_cpu) = (Instant::now(), thread_cpu_s());
                        for _ in 0..inner {
                            if v == 0 {
                                unpacked(&mut c)
                            } else {
                                prepacked(&mut c)
                            }
                        }
                        cpu.push((thread_cpu_s() - t_cpu) / inner as f64);
                        times.push(t.elapsed().as_secs_f64() / inner as f64);
                    }
                }
            });
            let t_pack = {
                let t = Instant::now();
                let _ = PackedB::pack(k, n, bm);
                t.elapsed().as_secs_f64()
            };
            let flop = 2.0 * (m * n * k) as f64;
            for (v, (times, cpu)) in stats.iter_mut().enumerate() {
                times.sort_by(|x, y| x.total_cmp(y));
                cpu.sort_by(|x, y| x.total_cmp(y));
                let med = times[times.len() / 2];
                let per_cpu = if threads == 1 {
                    format!("  cpu {:6.1} GFLOP/s", flop / cpu[cpu.len() / 2] / 1e9)
                } else {
                    String::new()
                };
                let pack = if v == 1 {
                    format!("  (pack once {:.1} us)", t_pack * 1e6)
                } else {
                    String::new()
                };
                println!(
                    "threads {threads} {} {:9} m {m:4} k {k:4} n {n:4}: median {:9.1} us {:6.1} GFLOP/s (min {:9.1} us {:6.1} GFLOP/s){per_cpu}{pack}",
                    if bt { "bt" } else { "nn" },
                    if v == 0 { "unpacked" } else { "prepacked" },
                    med * 1e6,
                    flop / med / 1e9,
                    times[0] * 1e6,
                    flop / times[0] / 1e9
                );
            }
        }
    }
}
