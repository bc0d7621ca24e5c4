//! GPU runtime errors reach JIT callers typed: an out-of-memory failure is a
//! `JitError::Gpu(GpuError::OutOfMemory { .. })` with the sizes, and the GPU error
//! is the JIT error's `source()`.

use std::error::Error;
use std::sync::Arc;

use relax_gpu_runtime::{GpuError, GpuRuntime, RuntimeOptions};
use relax_ir::{BaseFunc, DataType};
use relax_jit::{HostTensor, Jit, JitError, KernelArg};

const SRC: &str = r#"
@I.ir_module
class Module:
    @T.prim_func
    def copy(a: T.Buffer((262144,), "float32"), b: T.Buffer((262144,), "float32")):
        for i in range(262144):
            b[i] = a[i]
"#;

#[test]
fn out_of_memory_is_a_typed_gpu_error() {
    let rt = match GpuRuntime::new(RuntimeOptions {
        memory_limit_bytes: Some(64 << 10),
        ..RuntimeOptions::default()
    }) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("no GPU adapter: not checked ({e})");
            return;
        }
    };
    let jit = Jit::new(Some(Arc::new(rt)));
    let module = relax_ir::text::parse(SRC).expect("parses").into_module();
    let Some(BaseFunc::Prim(f)) = module.functions.values().next().cloned() else {
        panic!("no PrimFunc")
    };
    let mut a = HostTensor::zeros(DataType::FLOAT32, &[262144]).expect("a");
    let mut b = HostTensor::zeros(DataType::FLOAT32, &[262144]).expect("b");
    let e = jit
        .run_gpu(&f, &mut [KernelArg::from(&mut a), KernelArg::from(&mut b)])
        .expect_err("1 MiB tensors exceed a 64 KiB device");
    match &e {
        JitError::Gpu(GpuError::OutOfMemory { requested, limit, .. }) => {
            assert!(*requested >= 1 << 20, "requested {requested}");
            assert_eq!(*limit, Some(64 << 10));
        }
        other => panic!("expected a typed out-of-memory error, got {other:?}"),
    }
    let source = e.source().expect("the GPU error is the source");
    assert!(source.to_string().contains("out of GPU memory"), "{source}");
}
