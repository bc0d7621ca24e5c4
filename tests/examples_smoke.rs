//! Runs the core of every demo under `examples/` at small sizes, on the host and (when
//! an adapter exists) on the GPU, so that a broken demo fails the test suite.

#[path = "../examples/common/mod.rs"]
mod common;

fn gpu_available() -> bool {
    match relax_wgpu::gpu_runtime::GpuRuntime::shared_default() {
        Ok(_) => true,
        Err(e) => {
            eprintln!("no GPU adapter: GPU half not checked ({e})");
            false
        }
    }
}

#[test]
fn hetero_mlp_host() {
    let r = common::hetero_mlp::run(5, false, false).unwrap();
    assert!(!r.used_gpu);
    // Two to_vdevice copies per run: normalised activations to the vulkan VDevice, the
    // result back to llvm (host copies without a GPU).
    assert_eq!(r.copies, 2);
    assert_eq!(r.bytes_copied, (5 * 32 + 5 * 10) * 4);
    assert_eq!((r.run.uploads, r.run.downloads), (0, 0));
    assert_eq!((r.run.host_kernels_run, r.run.gpu_kernels_run), (3, 0));
    assert!(r.max_diff < 1e-3);
}

#[test]
fn hetero_mlp_gpu_if_available() {
    let r = common::hetero_mlp::run(9, true, false).unwrap();
    assert!(r.max_diff < 1e-3);
    if gpu_available() {
        assert!(r.used_gpu);
        // normalize on the host, both dense layers on the GPU.
        assert_eq!((r.run.host_kernels_run, r.run.gpu_kernels_run), (1, 2));
        assert_eq!((r.run.uploads, r.run.bytes_uploaded), (1, 9 * 32 * 4));
        assert_eq!((r.run.downloads, r.run.bytes_downloaded), (1, 9 * 10 * 4));
        assert_eq!(r.run.kernels_compiled, 0, "compiled in the first run only");
    }
}

#[test]
fn symbolic_batch_compiles_once() {
    for gpu in [false, true] {
        let steps = common::symbolic_batch::run(&[1, 3, 8], gpu, false).unwrap();
        assert_eq!(steps.len(), 3);
        assert_eq!(steps[0].kernels_compiled, 3, "normalize, dense_relu, dense");
        assert_eq!(steps[2].kernels_compiled, 3);
        assert_eq!(steps[0].kernel_cache_hits, 0);
        assert_eq!(steps[2].kernel_cache_hits, 6, "batches 3 and 8 reuse all three kernels");
        if gpu && gpu_available() {
            let pipes = steps[0].gpu_pipelines.unwrap();
            assert!(pipes >= 2);
            assert_eq!(steps[2].gpu_pipelines, Some(pipes));
        }
    }
}

#[test]
fn attention_matches_reference() {
    let (_, diff) = common::attention::run(6, false, false).unwrap();
    assert!(diff < 1e-4);
    let (gpu, diff) = common::attention::run(5, true, false).unwrap();
    assert!(diff < 1e-4);
    assert_eq!(gpu, gpu_available());
}
