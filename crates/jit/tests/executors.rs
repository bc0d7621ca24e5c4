//! The one kernel interface: `HostExecutor` and `GpuExecutor` compile the same
//! PrimFunc into `CompiledKernel`s that run on the same `KernelArg`s. A GPU kernel
//! given host bytes uploads them (and reads written ones back); a host kernel given
//! a device buffer is a typed error.

use std::sync::Arc;

use relax_ir::{BaseFunc, DataType, PrimFunc};
mod common;
use common::{f32_bytes as bytes, f32_values as floats, read, write};
use relax_jit::{CompiledKernel, GpuExecutor, HostExecutor, Jit, JitError, KernelArg, KernelDevice, KernelExecutor};

const SRC: &str = r#"
@I.ir_module
class Module:
    @T.prim_func
    def axpy(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32"), k: T.int32, c: T.Buffer((8,), "float32")):
        for i in range(8):
            c[i] = a[i] * T.Cast("float32", k) + b[i]
"#;

fn axpy() -> PrimFunc {
    let module = relax_ir::text::parse(SRC)
        .unwrap_or_else(|d| panic!("{d}"))
        .into_module();
    match module.functions.values().next() {
        Some(BaseFunc::Prim(f)) => f.clone(),
        _ => panic!("no PrimFunc"),
    }
}

const A: [f32; 8] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
const B: [f32; 8] = [0.5; 8];

/// `a * 3 + b`, the expected result.
fn expected() -> Vec<f32> {
    A.iter().zip(B).map(|(a, b)| a * 3.0 + b).collect()
}

/// Run `k` on host bytes.
fn run_on_host_bytes(k: &dyn CompiledKernel) -> Vec<f32> {
    let (a, b) = (bytes(&A), bytes(&B));
    let mut c = vec![0u8; 32];
    let shape = [8i64];
    let f32 = DataType::FLOAT32;
    let mut args = [
        read(f32, &shape, &a),
        read(f32, &shape, &b),
        KernelArg::Int(3),
        write(f32, &shape, &mut c),
    ];
    k.run(&mut args).expect("runs");
    floats(&c)
}

#[test]
fn host_executor_runs_host_bytes() {
    let k = HostExecutor.compile("axpy", &axpy()).expect("compiles");
    assert_eq!(k.device(), KernelDevice::Host);
    assert_eq!(run_on_host_bytes(&*k), expected());
}

#[test]
fn gpu_executor_needs_a_gpu() {
    let jit = Arc::new(Jit::new(None));
    let e = GpuExecutor::new(jit).compile("axpy", &axpy()).err().expect("no GPU");
    assert!(matches!(e, JitError::NoGpu), "{e}");
}

#[test]
fn gpu_kernels_take_host_bytes_and_device_buffers_host_kernels_refuse_device_buffers() {
    let Some(rt) = common::shared_runtime() else { return };
    let jit = Arc::new(Jit::new(Some(rt.clone())));
    let k = GpuExecutor::new(jit).compile("axpy", &axpy()).expect("compiles");
    assert_eq!(k.device(), KernelDevice::Gpu);
    // Host bytes: uploaded, the output read back.
    assert_eq!(run_on_host_bytes(&*k), expected());

    // Device buffers: bound in place, the output stays in device memory.
    let da = rt.upload(&bytes(&A)).expect("upload");
    let db = rt.upload(&bytes(&B)).expect("upload");
    let dc = rt.alloc(32).expect("alloc");
    let shape = [8i64];
    let device = |buf| KernelArg::Device {
        buf,
        dtype: DataType::FLOAT32,
        shape: &shape,
    };
    k.run(&mut [device(&da), device(&db), KernelArg::Int(3), device(&dc)])
        .expect("runs on device buffers");
    assert_eq!(floats(&rt.read(&dc).expect("read back")), expected());

    // Mixed: a device input, a host input and a host output.
    let b = bytes(&B);
    let mut c = vec![0u8; 32];
    let f32 = DataType::FLOAT32;
    k.run(&mut [
        device(&da),
        read(f32, &shape, &b),
        KernelArg::Int(3),
        write(f32, &shape, &mut c),
    ])
    .expect("runs on mixed arguments");
    assert_eq!(floats(&c), expected());

    // A host kernel given a device buffer: a typed error naming the argument.
    let host = HostExecutor.compile("axpy", &axpy()).expect("compiles");
    let e = host
        .run(&mut [device(&da), device(&db), KernelArg::Int(3), device(&dc)])
        .expect_err("device memory on the host");
    assert!(matches!(e, JitError::DeviceArg { index: 0, .. }), "{e}");
}
