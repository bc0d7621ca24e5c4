//! One program with a symbolic batch size `n`, run for n = 1, 7, 64, 256: each kernel
//! is compiled once (the engine's kernel counters are printed after every run).
//!
//! `cargo run --release --example symbolic_batch`

mod common;

fn main() {
    println!("symbolic_batch: the hetero_mlp program (x: R.Tensor((\"n\", 32))) run for several batch sizes.");
    match common::symbolic_batch::run(&[1, 7, 64, 256], true, true) {
        Ok(steps) => {
            let last = steps.last().map(|s| s.kernels_compiled).unwrap_or(0);
            println!(
                "OK: {} batch sizes, {last} PrimFuncs compiled in total (once each), results match the host.",
                steps.len()
            );
        }
        Err(e) => {
            eprintln!("symbolic_batch FAILED: {e}");
            std::process::exit(1);
        }
    }
}
