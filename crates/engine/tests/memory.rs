//! Memory reaches a steady state: running the same program 10,000 times neither grows
//! host tensor memory (the process-wide live-bytes counter of host tensors) nor the
//! GPU buffer pool (the runtime's allocated-bytes statistic). One test per binary so
//! that nothing else allocates tensors meanwhile.

mod common;

use common::text::{engine, parse};
use ndarray::{ArrayD, IxDyn};
use relax_engine::{host_live_bytes, DeviceChoice, Value};

const PROGRAM: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4), dtype="float32"), y: R.Tensor((4, 2), dtype="float32")) -> R.Tensor((2, 2), dtype="float32"):
        with R.dataflow():
            a = R.multiply(x, x)
            b = R.matmul(a, y)
            c = R.add(b, b)
            R.output(c)
        return c
"#;

fn run_many(device: DeviceChoice, runs: usize) {
    let loaded = engine(device).load(&parse(PROGRAM)).unwrap();
    let x: Value = ArrayD::from_shape_fn(IxDyn(&[2, 4]), |i| (i[0] * 4 + i[1]) as f32 * 0.5).into();
    let y: Value = ArrayD::from_shape_fn(IxDyn(&[4, 2]), |i| 1.0 - i[1] as f32).into();
    let check = |v: &Value| {
        let got = v.as_tensor().unwrap().to_array::<f32>().unwrap();
        // row 0: a = [0, .25, 1, 2.25] -> b = [3.5, 0] -> c = [7, 0]
        assert_eq!(got[[0, 0]], 7.0);
        assert_eq!(got[[0, 1]], 0.0);
    };
    // Warm up: compile kernels, fill the GPU pool and staging buffers.
    for _ in 0..50 {
        check(&loaded.run("main", &[x.clone(), y.clone()]).unwrap());
    }
    let host0 = host_live_bytes();
    let gpu0 = loaded.gpu_runtime_stats();
    let t0 = std::time::Instant::now();
    for i in 0..runs {
        let out = loaded.run("main", &[x.clone(), y.clone()]).unwrap();
        if i % 1000 == 0 {
            check(&out);
        }
    }
    eprintln!("{device:?}: {runs} runs in {:.2} s", t0.elapsed().as_secs_f64());
    let host1 = host_live_bytes();
    assert_eq!(
        host1, host0,
        "{device:?}: host tensor bytes grew from {host0} to {host1}"
    );
    let s = loaded.stats();
    assert_eq!(s.runs as usize, runs + 50);
    // multiply, then matmul + add fused into one PrimFunc by the default pipeline (on
    // the host, both run in the host kernel library instead).
    let want = if device == DeviceChoice::Cpu { 0 } else { 2 };
    assert_eq!(s.kernels_compiled, want, "{s:?}");
    if let (Some(g0), Some(g1)) = (gpu0, loaded.gpu_runtime_stats()) {
        assert_eq!(
            g1.allocated_bytes, g0.allocated_bytes,
            "GPU pool grew: {g0:?} -> {g1:?}"
        );
        assert_eq!(g1.buffer_creations, g0.buffer_creations, "no new buffers once warm");
        assert!(g1.pool_reuse_hits >= g0.pool_reuse_hits + runs as u64);
        assert_eq!(g1.live_buffers, g0.live_buffers, "{g0:?} -> {g1:?}");
    }
}

#[test]
fn ten_thousand_runs_do_not_grow_memory() {
    run_many(DeviceChoice::Cpu, 10_000);
    match relax_gpu_runtime::GpuRuntime::shared_default() {
        Ok(_) => run_many(DeviceChoice::Gpu, 10_000),
        Err(e) => eprintln!("no GPU adapter: GPU memory not checked ({e})"),
    }
}
