//! VDevice placement: `"kind:index:scope"` names resolve per target kind, tensors live
//! where their StructInfo says (GPU memory for GPU kinds, host memory for host kinds),
//! `to_vdevice` is an upload / readback / device-to-device copy, and the engine counts
//! each. GPU halves run on any wgpu adapter (lavapipe counts) and say so when none
//! exists.

mod common;

use common::text::{engine, f32_values as f32s, gpu_engine, parse};
use ndarray::{ArrayD, IxDyn};
use relax_engine::{DeviceChoice, Engine, RunStats, Tensor, Value};

fn input(seed: f32) -> Value {
    ArrayD::from_shape_fn(IxDyn(&[2, 3]), |i| seed + (i[0] * 3 + i[1]) as f32 * 0.5 - 1.0).into()
}

/// The end-to-end program `vdevice_two.py` plus `on_gpu`. The llvm VDevice comes
/// first: `webgpu:0` must still name the webgpu one.
const TWO_VDEVICES: &str = concat!(
    include_str!("../../../tests/e2e/vdevice_two.py"),
    r#"
    @R.function
    def on_gpu(x: R.Tensor((2, 3), dtype="float32", vdevice="llvm:0:global")) -> R.Tensor((2, 3), dtype="float32", vdevice="webgpu:0:global"):
        g: R.Tensor((2, 3), dtype="float32", vdevice="webgpu:0:global") = R.to_vdevice(x, dst_vdevice="webgpu:0:global")
        h: R.Tensor((2, 3), dtype="float32", vdevice="webgpu:0:global") = R.add(g, g)
        return h
"#
);

fn expected_two(x: &[f32], y: &[f32]) -> Vec<f32> {
    x.iter().zip(y).map(|(x, y)| (x + y) * y - x).collect()
}

/// Host kernels, GPU kernels and packed calls of a run's statistics.
fn kernels_run(s: &RunStats) -> (u64, u64, u64) {
    (s.host_kernels_run, s.gpu_kernels_run, s.packed_calls)
}

#[test]
fn two_vdevices_on_the_gpu_copy_and_count() {
    let Some(engine) = gpu_engine("GPU placement not checked") else {
        return;
    };
    let loaded = engine.load(&parse(TWO_VDEVICES)).unwrap();
    let (x, y) = (input(0.25), input(2.0));
    let out = loaded.run("main", &[x.clone(), y.clone()]).unwrap();
    assert_eq!(f32s(&out), expected_two(&f32s(&x), &f32s(&y)));
    let t = out.as_tensor().unwrap();
    assert!(!t.is_on_device(), "the result is on the llvm VDevice: host memory");
    assert_eq!(t.vdevice().map(|v| v.target.kind.as_str()), Some("llvm"));
    let s = loaded.stats();
    // to_vdevice(a), to_vdevice(y): uploads of 24 bytes; to_vdevice(b): one readback.
    assert_eq!((s.uploads, s.bytes_uploaded), (2, 48), "{s:?}");
    assert_eq!((s.downloads, s.bytes_downloaded), (1, 24), "{s:?}");
    assert_eq!((s.copies, s.bytes_copied, s.device_copies), (3, 72, 0), "{s:?}");
    // add and subtract on the host (in the host kernel library), multiply on the GPU.
    assert_eq!(kernels_run(&s), (0, 1, 2), "{s:?}");
    assert_eq!(s.device_allocations, 1, "the multiply output lives on the GPU: {s:?}");

    // A second run: same copies again, no new compilation.
    loaded.run("main", &[x.clone(), y]).unwrap();
    let s2 = loaded.stats();
    assert_eq!((s2.copies, s2.kernels_compiled), (6, 1), "{s2:?}");
    assert_eq!(s2.kernel_cache_hits, 1, "{s2:?}");

    // A result on the GPU VDevice stays in device memory.
    let g = loaded.run("on_gpu", std::slice::from_ref(&x)).unwrap();
    let gt = g.as_tensor().unwrap();
    assert!(gt.is_on_device());
    assert_eq!(gt.vdevice().map(|v| v.target.kind.as_str()), Some("webgpu"));
    assert_eq!(f32s(&g), f32s(&x).iter().map(|v| v * 2.0).collect::<Vec<_>>());
}

#[test]
fn two_vdevices_on_the_host_are_host_copies() {
    let loaded = engine(DeviceChoice::Cpu).load(&parse(TWO_VDEVICES)).unwrap();
    let (x, y) = (input(-1.0), input(0.5));
    let out = loaded.run("main", &[x.clone(), y.clone()]).unwrap();
    assert_eq!(f32s(&out), expected_two(&f32s(&x), &f32s(&y)));
    let s: RunStats = loaded.stats();
    assert_eq!((s.copies, s.bytes_copied), (3, 72), "{s:?}");
    assert_eq!((s.uploads, s.downloads, s.device_copies), (0, 0, 0), "{s:?}");
    // add and subtract in the host kernel library, multiply (a GPU VDevice, here a
    // label) as a PrimFunc.
    assert_eq!(kernels_run(&s), (1, 0, 2), "{s:?}");
    // The label still follows the StructInfo.
    let g = loaded.run("on_gpu", &[x]).unwrap();
    let gt = g.as_tensor().unwrap();
    assert!(!gt.is_on_device());
    assert_eq!(gt.vdevice().map(|v| v.target.kind.as_str()), Some("webgpu"));
}

/// Two GPU VDevices of the same adapter: `to_vdevice` between them stays on the device.
const GPU_TO_GPU: &str = r#"
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "tag": ""}, 0, "global"), I.vdevice({"keys": ["webgpu", "gpu"], "kind": "webgpu", "tag": ""}, 0, "global"), I.vdevice({"keys": ["webgpu", "gpu"], "kind": "webgpu", "tag": ""}, 1, "global")]})
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32", vdevice="webgpu:0:global")) -> R.Tensor((2, 3), dtype="float32", vdevice="webgpu:1:global"):
        y: R.Tensor((2, 3), dtype="float32", vdevice="webgpu:1:global") = R.to_vdevice(x, dst_vdevice="webgpu:1:global")
        return y
"#;

#[test]
fn gpu_to_gpu_copy_stays_on_the_device() {
    let module = parse(GPU_TO_GPU);
    let Some(engine) = gpu_engine("GPU placement not checked") else {
        return;
    };
    let loaded = engine.load(&module).unwrap();
    let x = input(3.0);
    let out = loaded.run("main", std::slice::from_ref(&x)).unwrap();
    assert_eq!(f32s(&out), f32s(&x));
    let t = out.as_tensor().unwrap();
    assert!(t.is_on_device());
    assert_eq!(
        t.vdevice().map(|v| v.vdevice_id),
        Some(1),
        "webgpu:1 is the second webgpu VDevice"
    );
    let s = loaded.stats();
    // The host input is uploaded to webgpu:0 at entry, then copied on the device.
    assert_eq!((s.uploads, s.bytes_uploaded), (1, 24), "{s:?}");
    assert_eq!((s.device_copies, s.bytes_device_copied), (1, 24), "{s:?}");
    assert_eq!(s.downloads, 0, "{s:?}");
}

#[test]
fn vdevice_names_resolve_per_kind() {
    let module = parse(GPU_TO_GPU);
    let v = relax_engine::resolve_vdevice(&module, "webgpu:1:global").unwrap();
    assert_eq!((v.target.kind.as_str(), v.vdevice_id), ("webgpu", 1));
    let v = relax_engine::resolve_vdevice(&module, "llvm:0").unwrap();
    assert_eq!(v.target.kind, "llvm");
    let e = relax_engine::resolve_vdevice(&module, "webgpu:2:global").unwrap_err();
    assert!(e.contains("has 2 webgpu VDevice(s)"), "{e}");
    let e = relax_engine::resolve_vdevice(&module, "cuda:0").unwrap_err();
    assert!(e.contains("has 0 cuda VDevice(s)"), "{e}");
}

#[test]
fn wrong_vdevice_index_is_a_clear_error() {
    // One webgpu VDevice: "webgpu:1" names none (the parser says so already).
    let src = r#"
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "tag": ""}, 0, "global"), I.vdevice({"keys": ["webgpu", "gpu"], "kind": "webgpu", "tag": ""}, 0, "global")]})
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")):
        y = R.to_vdevice(x, dst_vdevice="webgpu:1:global")
        return y
"#;
    let err = relax_ir::text::parse(src).map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("webgpu:1:global"), "{err}");
    let module = parse(&src.replace("webgpu:1:global", "webgpu:0:global"));
    let e = relax_engine::resolve_vdevice(&module, "webgpu:1:global").unwrap_err();
    assert!(
        e.contains("has 1 webgpu VDevice(s)") && e.contains("llvm:0:global"),
        "{e}"
    );
}

#[test]
fn unannotated_programs_run_on_the_default_device() {
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        a = R.add(x, y)
        b = R.multiply(a, y)
        return b
"#;
    let module = parse(src);
    let (x, y) = (input(1.0), input(-0.5));
    let want: Vec<f32> = f32s(&x).iter().zip(f32s(&y)).map(|(x, y)| (x + y) * y).collect();
    let cpu = engine(DeviceChoice::Cpu).load(&module).unwrap();
    assert_eq!(f32s(&cpu.run("main", &[x.clone(), y.clone()]).unwrap()), want);
    assert_eq!(cpu.stats().gpu_kernels_run, 0);
    let Some(gpu) = gpu_engine("GPU placement not checked") else {
        return;
    };
    let loaded = gpu.load(&module).unwrap();
    let out = loaded.run("main", &[x.clone(), y.clone()]).unwrap();
    assert!(
        out.as_tensor().unwrap().is_on_device(),
        "the intermediate and result stay on the GPU"
    );
    assert_eq!(f32s(&out), want);
    let s = loaded.stats();
    assert_eq!((s.gpu_kernels_run, s.host_kernels_run), (2, 0), "{s:?}");
    // x and y are uploaded once for `add` (y stays resident for `multiply`); `a`
    // never leaves the GPU.
    assert_eq!((s.uploads, s.downloads), (2, 0), "{s:?}");
    // A second run with the same host tensors uploads nothing.
    assert_eq!(f32s(&loaded.run("main", &[x.clone(), y.clone()]).unwrap()), want);
    assert_eq!(loaded.stats().uploads, 2);
    // Changed contents are uploaded again.
    let y2 = input(0.25);
    let want2: Vec<f32> = f32s(&x).iter().zip(f32s(&y2)).map(|(x, y)| (x + y) * y).collect();
    assert_eq!(f32s(&loaded.run("main", &[x.clone(), y2]).unwrap()), want2);
    assert_eq!(loaded.stats().uploads, 3);
    // So are contents written in place into a tensor that is resident already (same
    // storage, same length: only its write version tells them apart).
    assert_eq!(f32s(&loaded.run("main", &[x.clone(), y.clone()]).unwrap()), want);
    let uploads = loaded.stats().uploads;
    let y_new = input(0.75);
    let y_new_values = y_new.as_tensor().unwrap().to_array::<f32>().unwrap();
    y.as_tensor().unwrap().assign(&y_new_values).unwrap();
    let want3: Vec<f32> = f32s(&x).iter().zip(f32s(&y_new)).map(|(x, y)| (x + y) * y).collect();
    assert_eq!(f32s(&loaded.run("main", &[x.clone(), y.clone()]).unwrap()), want3);
    assert_eq!(loaded.stats().uploads, uploads + 1);
    // `Auto` (the default) takes a real adapter too; with a CPU-type adapter
    // (lavapipe) unplaced work stays on the host: add and multiply in the host
    // kernel library.
    let auto = Engine::default().load(&module).unwrap();
    assert_eq!(f32s(&auto.run("main", &[x, y]).unwrap()), want3);
    let s = auto.stats();
    let software = relax_gpu_runtime::GpuRuntime::shared_default().is_ok_and(|rt| rt.adapter_info().is_software());
    if software {
        assert_eq!(
            (s.gpu_kernels_run, s.host_kernels_run, s.packed_calls),
            (0, 0, 2),
            "{s:?}"
        );
    } else {
        assert_eq!((s.gpu_kernels_run, s.host_kernels_run), (2, 0), "{s:?}");
    }
    let _ = Tensor::scalar(0.0f32);
}
