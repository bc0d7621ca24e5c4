//! The engine masks no panic: a panic in user code (here a packed function) reaches
//! the caller of `Loaded::run` as a panic, with its message, and the loaded module
//! keeps working afterwards.

mod common;

use common::text::{f32_tensor, parse};
use relax_engine::{Engine, Purity, Value};

const SRC: &str = r#"
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        y = R.call_dps_packed("test.maybe_panic", (x,), out_sinfo=R.Tensor((2,), "float32"))
        return y
"#;

#[test]
fn a_panic_in_a_packed_function_reaches_the_caller() {
    let engine = Engine::default();
    engine.register_packed("test.maybe_panic", Purity::Impure, |args| {
        let x = args[0].as_tensor().expect("a tensor").to_array::<f32>().expect("f32");
        if x.iter().any(|v| *v < 0.0) {
            panic!("negative input reached test.maybe_panic");
        }
        Ok(Value::unit())
    });
    let loaded = engine.load(&parse(SRC)).expect("loads");
    let bad = f32_tensor(&[2], |i| [1.0, -1.0][i]);
    let good = f32_tensor(&[2], |i| [1.0, 2.0][i]);
    // On a thread of its own: the panic ends it and comes back from `join`.
    let caught = std::thread::scope(|s| s.spawn(|| loaded.run("main", &[bad])).join());
    let payload = caught.expect_err("the panic propagates instead of becoming an error");
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(msg.contains("negative input"), "{msg}");
    // The module still runs.
    assert!(loaded.run("main", &[good]).is_ok());
}
