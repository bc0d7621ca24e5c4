//! `Loaded::run` returns once its GPU work has completed, so that the wall time of a
//! run (as `relax run --stats` reports it) is its time to completion.

use relax_engine::{DeviceChoice, Engine, EngineConfig, Tensor, Value};
use relax_gpu_runtime::{wgpu, GpuRuntime};

const MATMUL: &str = r#"
# from tvm.script import relax as R
@R.function
def main(a: R.Tensor((512, 512), dtype="float32"), b: R.Tensor((512, 512), dtype="float32")) -> R.Tensor((512, 512), dtype="float32"):
    c = R.matmul(a, b)
    d = R.matmul(c, b)
    return d
"#;

#[test]
fn gpu_queue_is_empty_when_run_returns() {
    let rt = match GpuRuntime::shared_default() {
        Ok(rt) => rt,
        Err(e) => {
            println!("no wgpu adapter ({e}): skipped");
            return;
        }
    };
    let module = relax_ir::text::parse(MATMUL).expect("parses").into_module();
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Gpu,
        ..EngineConfig::default()
    });
    let loaded = engine.load(&module).expect("loads");
    let a = Value::Tensor(Tensor::from_array(&ndarray::ArrayD::<f32>::ones(vec![512, 512])));
    for _ in 0..3 {
        let out = loaded.run("main", &[a.clone(), a.clone()]).expect("runs");
        // Two 512^3 matmuls take far longer on any adapter than returning from a call;
        // without waiting for completion they would still be in flight here.
        let status = rt.device().poll(wgpu::PollType::Poll).expect("poll");
        assert!(status.is_queue_empty(), "GPU work still pending after run returned");
        let t = out.as_tensor().expect("a tensor");
        assert_eq!(t.shape(), &[512, 512]);
    }
}
