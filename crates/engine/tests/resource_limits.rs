//! Resource limits are errors: an allocation whose size comes from the program and is
//! impossible (over the host memory limit, or overflowing) is an `Err` naming the
//! binding, its shape and dtype and the limit, on the host and on the GPU, and the
//! engine stays usable afterwards. A TIR scratch buffer whose byte size wraps around is
//! refused instead of being handed to the kernel (it used to be memory unsafety).

mod common;

use common::text::{engines, f32_tensor, f32_values, parse};
use relax_engine::{Engine, EngineError, Value};

const HUGE_ZEROS: &str = r#"
@R.function
def main():
    y = R.zeros(R.shape([100000, 100000, 100000]), "float32")
    return y
"#;

const SMALL: &str = r#"
@R.function
def main(x: R.Tensor((4,), "float32")):
    y = R.add(x, x)
    return y
"#;

const WRAPPING_SCRATCH: &str = r#"
@I.ir_module
class Module:
    @T.prim_func
    def k(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        C = T.alloc_buffer((4611686018427387904,), "float32")
        for i in range(4):
            with T.sblock("c"):
                vi = T.axis.spatial(4, i)
                C[vi * 1000000] = A[vi]
        for i in range(4):
            with T.sblock("b"):
                vi = T.axis.spatial(4, i)
                B[vi] = C[vi * 1000000]

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        cls = Module
        y = R.call_tir(cls.k, (x,), out_sinfo=R.Tensor((4,), "float32"))
        return y
"#;

/// The float32 input `[1, 2, 3, 4]`.
fn x4() -> Value {
    f32_tensor(&[4], |i| (i + 1) as f32)
}

/// The small program still runs on `engine` and gives the right values.
fn still_usable(engine: &Engine) {
    let out = engine
        .run(&parse(SMALL), "main", &[x4()])
        .expect("the engine stays usable");
    assert_eq!(f32_values(&out), vec![2.0, 4.0, 6.0, 8.0]);
}

#[test]
fn an_impossible_tensor_is_an_error_naming_binding_shape_dtype_and_limit() {
    for (dev, engine) in engines() {
        let err = engine
            .run(&parse(HUGE_ZEROS), "main", &[])
            .expect_err("cannot allocate 4e15 bytes");
        let msg = err.to_string();
        assert!(msg.contains("binding `y`"), "{dev}: {msg}");
        assert!(msg.contains("4000000000000000 bytes"), "{dev}: {msg}");
        if dev == "cpu" {
            assert!(matches!(err, EngineError::HostMemory(_)), "{dev}: {err:?}");
            assert!(
                msg.contains("float32 tensor of shape [100000, 100000, 100000]"),
                "{msg}"
            );
            assert!(msg.contains("is over the host memory limit of"), "{msg}");
        }
        still_usable(&engine);
    }
}

#[test]
fn a_wrapping_scratch_buffer_is_refused() {
    for (dev, engine) in engines() {
        let err = engine
            .run(&parse(WRAPPING_SCRATCH), "main", &[x4()])
            .expect_err("a 2^62-element scratch buffer cannot exist");
        let msg = err.to_string();
        assert!(msg.contains("4611686018427387904"), "{dev}: {msg}");
        if dev == "cpu" {
            assert!(msg.contains("binding `y`") && msg.contains("overflows"), "{msg}");
        }
        still_usable(&engine);
    }
}

#[test]
fn the_host_limit_is_configurable() {
    let (_, engine) = engines().remove(0);
    let src = r#"
@R.function
def main():
    y = R.zeros(R.shape([1024, 1024]), "float32")
    return y
"#;
    let before = relax_engine::host_memory_limit();
    relax_engine::set_host_memory_limit(1 << 20);
    let r = engine.run(&parse(src), "main", &[]);
    relax_engine::set_host_memory_limit(before);
    let msg = r.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        msg.contains("4194304 bytes is over the host memory limit of 1048576 bytes"),
        "{msg}"
    );
    let ok = engine.run(&parse(src), "main", &[]).expect("under the default limit");
    assert_eq!(ok.as_tensor().expect("tensor").shape(), &[1024, 1024]);
}
