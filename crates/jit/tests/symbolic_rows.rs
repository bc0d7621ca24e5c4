//! GEMMs with a symbolic row count (a decoder's linear layers over a prompt of any
//! length): checked against the host for row counts on both sides of the few-row
//! bound, with the variant that ran.

mod common;

use common::*;
use relax_ir::PrimFunc;
use relax_jit::ScheduleOptions;

/// The `NT_matmul` (`transposed = true`: `x @ w.T`, `w` of `[n, k]`) or `matmul`
/// (`x @ w`, `w` of `[k, n]`) PrimFunc of `x: [1, rows, k]` with a symbolic row count.
fn linear(k: i64, n: i64, transposed: bool) -> PrimFunc {
    let (w, body, name) = if transposed {
        (
            format!("({n}, {k})"),
            "wt = R.permute_dims(w)\n        y = R.matmul(x, wt)",
            "NT_matmul",
        )
    } else {
        (format!("({k}, {n})"), "y = R.matmul(x, w)", "matmul")
    };
    let src = format!(
        "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((1, \"m\", {k}), \"float32\"), w: R.Tensor({w}, \"float32\")):\n        {body}\n        return y\n"
    );
    let module = relax_ir::text::parse(&src).expect("module parses").into_module();
    let normalized = relax_checker::normalize::normalize_module(&module).module;
    let fused = relax_transform::transpose_matmul::fuse_transpose_matmul(&normalized).expect("fuses");
    let legalized = relax_transform::legalize::legalize_module(&fused).expect("legalizes");
    match legalized.get(name) {
        Some(relax_ir::BaseFunc::Prim(f)) => f.clone(),
        _ => panic!("no {name}"),
    }
}

/// A symbolic-row `NT_matmul` and `matmul` on the GPU against the host and against
/// an element computed here, for row counts on both sides of the few-row bound:
/// each compiles to a many-row kernel and a few-row one, and exactly the few-row
/// one runs for at most `FEW_ROWS_MAX` rows.
#[test]
fn symbolic_rows_pick_the_few_row_kernel_at_run_time() {
    let Some(rt) = shared_runtime() else { return };
    let gpu = jit_with(rt.clone(), ScheduleOptions::for_adapter(rt.adapter_info()));
    for (k, n) in [(96, 200), (64, 37)] {
        for transposed in [true, false] {
            let f = linear(k, n, transposed);
            let src = gpu.wgsl(&f).expect("emits");
            let names: Vec<&str> = src.kernels.iter().map(|k| k.name.as_str()).collect();
            assert_eq!(names.len(), 2, "{names:?}");
            assert!(names[1].ends_with("_few_rows"), "{names:?}");
            let before = gpu.counters();
            for (t, rows) in [1i64, 3, 4, 17, 64, 130].into_iter().enumerate() {
                let ws = if transposed { vec![n, k] } else { vec![k, n] };
                let inputs = random_f32_inputs(&[vec![1, rows, k], ws], |i| 7 * t as u64 + i as u64, -1.0, 1.0);
                let was = gpu.counters().few_row_dispatches;
                let [host, on_gpu] = host_and_gpu(&gpu, &f, &inputs, &[1, rows, n]);
                let what = format!("{} {rows}x{k}x{n}", if transposed { "NT_matmul" } else { "matmul" });
                assert_close(&on_gpu, &host, 1e-4, 1e-4, &what);
                let few = gpu.counters().few_row_dispatches - was;
                assert_eq!(
                    few,
                    u64::from(rows <= relax_jit::FEW_ROWS_MAX),
                    "{what}: few-row dispatches"
                );
                // The last element, summed here in f64.
                let (x, w) = (inputs[0].to_f64_vec(), inputs[1].to_f64_vec());
                let (i, j) = (rows as usize - 1, n as usize - 1);
                let wv = |kk: usize| {
                    if transposed {
                        w[j * k as usize + kk]
                    } else {
                        w[kk * n as usize + j]
                    }
                };
                let want: f64 = (0..k as usize).map(|kk| x[i * k as usize + kk] * wv(kk)).sum();
                assert_close(&on_gpu[i * n as usize + j..][..1], &[want], 1e-4, 1e-4, &what);
            }
            // One program (two pipelines) for every row count.
            let after = gpu.counters();
            assert_eq!(after.gpu_programs_compiled - before.gpu_programs_compiled, 1);
            assert_eq!(after.kernels_compiled - before.kernels_compiled, 2);
        }
    }
}

/// Seconds per call (median) of `f` on device-resident inputs of `rows` rows.
fn time_rows(gpu: &relax_jit::Jit, f: &PrimFunc, rows: i64, k: i64, n: i64, transposed: bool) -> f64 {
    let rt = gpu.gpu().expect("gpu").clone();
    let x = rt.upload(&f32_bytes(&vec![0.5f32; (rows * k) as usize])).expect("x");
    let w = rt.upload(&f32_bytes(&vec![0.25f32; (k * n) as usize])).expect("w");
    let y = rt.alloc((rows * n * 4) as u64).expect("y");
    let ws: Vec<i64> = if transposed { vec![n, k] } else { vec![k, n] };
    time_resident(gpu, f, &[(&x, &[1, rows, k]), (&w, &ws), (&y, &[1, rows, n])], 5)
}

/// Timings (set `RELAX_BENCH_ROWS=1`): the `NT_matmul` of a 4096 x 768 weight
/// over 4 and 130 rows with a symbolic row count, as scheduled before the few-row
/// kernel (the options' 8 x 8 tiles for every row count) and now, alternating;
/// with `RELAX_BENCH_ROWS=sweep` also several tilings over more row counts (the
/// measurements the bound and the tiles were chosen from).
#[test]
fn symbolic_row_tilings_timed() {
    let Some(mode) = std::env::var_os("RELAX_BENCH_ROWS") else {
        return;
    };
    let Some(rt) = shared_runtime() else { return };
    let (k, n) = (768, 4096);
    let at = |few: u32, tile: (u32, u32), threads: (u32, u32)| {
        let opts = ScheduleOptions {
            matmul_tile: tile,
            matmul_threads: threads,
            few_rows_max: few,
            ..ScheduleOptions::for_adapter(rt.adapter_info())
        };
        jit_with(rt.clone(), opts)
    };
    let f = linear(k, n, true);
    let (before, now) = (
        at(0, (8, 8), (8, 8)),
        at(relax_jit::FEW_ROWS_MAX as u32, (8, 8), (8, 8)),
    );
    for rows in [4, 130] {
        for round in 0..2 {
            let b = time_rows(&before, &f, rows, k, n, true);
            let a = time_rows(&now, &f, rows, k, n, true);
            eprintln!(
                "NT_matmul {rows}x{k}x{n} (round {round}): before {:.1} ms, now {:.1} ms",
                b * 1e3,
                a * 1e3
            );
        }
    }
    if mode != "sweep" {
        return;
    }
    for transposed in [true, false] {
        let f = linear(k, n, transposed);
        for (tile, threads) in [
            ((8, 8), (8, 8)),
            ((8, 4), (2, 32)),
            ((8, 4), (4, 16)),
            ((4, 4), (1, 64)),
            ((4, 4), (4, 16)),
        ] {
            let gpu = at(0, tile, threads);
            let mut line = format!("transposed {transposed} tile {tile:?} threads {threads:?}:");
            for rows in [1, 4, 8, 12, 16, 32, 64, 130] {
                let t = time_rows(&gpu, &f, rows, k, n, transposed);
                line += &format!(" {rows}: {:.1}", t * 1e3);
            }
            eprintln!("{line} ms");
        }
    }
}
