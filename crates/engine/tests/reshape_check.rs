//! A reshape whose symbolic target shape does not keep the element count passes
//! `check` (the counts are not provably different) but fails at run time, on the
//! host and on the GPU, with an error naming the binding and both shapes; a
//! well-formed one runs as a view.

use relax_engine::{DeviceChoice, Engine, EngineConfig, Tensor, Value};

const SRC: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", "m"), "float32")) -> R.Tensor(("n", 4), "float32"):
        n = T.int64()
        m = T.int64()
        with R.dataflow():
            y = R.reshape(x, R.shape([n, 4]))
            R.output(y)
        return y
"#;

fn input(rows: usize, cols: usize) -> Value {
    let v: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    Value::Tensor(Tensor::from_array(
        &ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[rows, cols]), v).expect("shape"),
    ))
}

#[test]
fn symbolic_reshape_checks_the_element_count_on_every_device() {
    let module = relax_ir::text::parse(SRC).expect("parses").into_module();
    let checked = relax_checker::check::check_module(&module);
    assert_eq!(checked.errors().count(), 0, "the counts are not provably different");
    let mut devices = vec![DeviceChoice::Cpu];
    if relax_gpu_runtime::GpuRuntime::shared_default().is_ok() {
        devices.push(DeviceChoice::Gpu);
    } else {
        eprintln!("no GPU adapter: the GPU half is not checked");
    }
    for device in devices {
        let engine = Engine::new(EngineConfig {
            device,
            ..EngineConfig::default()
        });
        let loaded = engine.load(&module).expect("loads");
        let ok = loaded.run("main", &[input(2, 4)]).expect("2x4 is 2x4");
        let got = ok.as_tensor().expect("tensor").to_array::<f32>().expect("f32");
        assert_eq!(got.shape(), &[2, 4]);
        assert_eq!(
            got.iter().copied().collect::<Vec<_>>(),
            (0..8).map(|i| i as f32).collect::<Vec<_>>()
        );
        let err = loaded
            .run("main", &[input(2, 3)])
            .expect_err("6 elements cannot be viewed as 8")
            .to_string();
        assert!(
            err.contains("binding `y`") && err.contains("[2, 3]") && err.contains("[2, 4]"),
            "{device:?}: {err}"
        );
    }
}
