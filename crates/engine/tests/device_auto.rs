//! Cost-aware `DeviceChoice::Auto`: unplaced work goes to the GPU only when the
//! adapter is not a CPU-type device (lavapipe, llvmpipe, SwiftShader), whose
//! kernels are slower than the host library on the same CPU.

use relax_engine::{DeviceChoice, Engine, EngineConfig};

#[test]
fn auto_sends_unplaced_work_to_a_real_gpu_only() {
    let engine = Engine::new(EngineConfig::default());
    let (choice, why) = DeviceChoice::detect();
    match relax_gpu_runtime::GpuRuntime::shared_default() {
        Ok(rt) if rt.adapter_info().is_software() => {
            assert!(
                !engine.unplaced_on_gpu(),
                "a software adapter must not take unplaced work"
            );
            assert_eq!(choice, DeviceChoice::Auto);
            assert!(why.contains("CPU-type"), "{why}");
            let summary = engine.device_summary();
            assert!(summary.starts_with("host for unplaced work"), "{summary}");
        }
        Ok(_) => {
            assert!(engine.unplaced_on_gpu());
            assert_eq!(choice, DeviceChoice::Gpu);
        }
        Err(_) => {
            assert!(!engine.unplaced_on_gpu());
            assert_eq!(choice, DeviceChoice::Cpu);
        }
    }
    // Explicit choices are obeyed whatever the adapter.
    let cpu = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        ..EngineConfig::default()
    });
    assert!(!cpu.unplaced_on_gpu());
    let gpu = Engine::new(EngineConfig {
        device: DeviceChoice::Gpu,
        ..EngineConfig::default()
    });
    assert!(gpu.unplaced_on_gpu());
}
