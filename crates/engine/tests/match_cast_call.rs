//! A call nested in `R.match_cast` (`lv = R.match_cast(R.where(...), R.Tensor(...))`),
//! as TVM's ONNX importer writes Unsqueeze and Range, is legalized like a bound call
//! and runs on the host and on the GPU. The programs are what TVM 0.27's
//! `relax.frontend.onnx.from_onnx` makes of a one-node ONNX graph (opset 13); the
//! expected values are TVM's (`tvm.compile(mod, "llvm")`, run on its VM).

use relax_engine::{DeviceChoice, Engine, EngineConfig, Tensor, Value};

/// ONNX `Range(s, l, d)`: `lv7 = R.match_cast(R.reshape(...), ...)`.
const RANGE: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(s: R.Tensor((), dtype="float32"), l: R.Tensor((), dtype="float32"), d: R.Tensor((), dtype="float32")) -> R.Tensor(dtype="float32", ndim=1):
        R.func_attr({"num_input": 3})
        range_len_0 = T.int64()
        with R.dataflow():
            lv: R.Tensor((), dtype="float32") = R.subtract(l, s)
            lv1: R.Tensor((), dtype="float64") = R.astype(lv, dtype="float64")
            lv2: R.Tensor((), dtype="float64") = R.astype(d, dtype="float64")
            lv3: R.Tensor((), dtype="float64") = R.divide(lv1, lv2)
            lv4: R.Tensor((), dtype="float64") = R.ceil(lv3)
            lv5: R.Tensor((), dtype="float64") = R.maximum(lv4, R.const(0.0, "float64"))
            lv6: R.Tensor((), dtype="int64") = R.astype(lv5, dtype="int64")
            lv7: R.Tensor((1,), dtype="int64") = R.match_cast(R.reshape(lv6, R.shape([1])), R.Tensor((1,), dtype="int64"))
            lv8: R.Shape(ndim=1) = R.tensor_to_shape(lv7)
            lv9: R.Shape([range_len_0]) = R.match_cast(lv8, R.Shape([range_len_0]))
            lv10: R.Tensor((range_len_0,), dtype="int64") = R.arange(0, range_len_0, 1, dtype="int64")
            lv11: R.Tensor((range_len_0,), dtype="float32") = R.astype(lv10, dtype="float32")
            lv12: R.Tensor((range_len_0,), dtype="float32") = R.multiply(lv11, d)
            gv: R.Tensor((range_len_0,), dtype="float32") = R.add(lv12, s)
            R.output(gv)
        return gv
"#;

/// ONNX `Unsqueeze(x, axes)` with run-time axes: `lv18 = R.match_cast(R.where(...), ...)`.
const UNSQUEEZE: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4), dtype="float32"), a: R.Tensor((1,), dtype="int64")) -> R.Tensor(dtype="float32", ndim=3):
        R.func_attr({"num_input": 2})
        unsqueeze_dim_0 = T.int64()
        unsqueeze_dim_1 = T.int64()
        unsqueeze_dim_2 = T.int64()
        with R.dataflow():
            lv: R.Shape([3, 4]) = R.shape_of(x)
            lv1: R.Tensor((1,), dtype="bool") = R.less(a, R.const(0, "int64"))
            lv2: R.Tensor((1,), dtype="int64") = R.add(a, R.const(3, "int64"))
            lv3: R.Tensor((3,), dtype="int64") = R.arange(0, 3, 1, dtype="int64")
            lv4: R.Tensor((1,), dtype="int64") = R.where(lv1, lv2, a)
            lv5: R.Tensor((3, 1), dtype="int64") = R.expand_dims(lv3, axis=[1])
            lv6: R.Tensor((1, 1), dtype="int64") = R.expand_dims(lv4, axis=[0])
            lv7: R.Tensor((3, 1), dtype="bool") = R.equal(lv5, lv6)
            lv8: R.Tensor((3, 1), dtype="int64") = R.astype(lv7, dtype="int64")
            lv9: R.Tensor((3,), dtype="int64") = R.sum(lv8, axis=[1], keepdims=False)
            lv10: R.Tensor((3,), dtype="int64") = R.subtract(R.const(1, "int64"), lv9)
            lv11: R.Tensor((3,), dtype="int64") = R.cumsum(lv10, axis=0, dtype=None, exclusive=False)
            lv12: R.Tensor((3,), dtype="int64") = R.subtract(lv11, R.const(1, "int64"))
            lv13: R.Tensor((3,), dtype="bool") = R.less(lv12, R.const(0, "int64"))
            lv14: R.Tensor((2,), dtype="int64") = R.shape_to_tensor(lv)
            lv15: R.Tensor((3,), dtype="int64") = R.where(lv13, R.const(0, "int64"), lv12)
            lv16: R.Tensor((3,), dtype="bool") = R.greater(lv9, R.const(0, "int64"))
            lv17: R.Tensor((3,), dtype="int64") = R.take(lv14, lv15, axis=0, mode="fast")
            lv18: R.Tensor((3,), dtype="int64") = R.match_cast(R.where(lv16, R.const(1, "int64"), lv17), R.Tensor((3,), dtype="int64"))
            lv19: R.Shape(ndim=3) = R.tensor_to_shape(lv18)
            lv20: R.Shape([unsqueeze_dim_0, unsqueeze_dim_1, unsqueeze_dim_2]) = R.match_cast(lv19, R.Shape([unsqueeze_dim_0, unsqueeze_dim_1, unsqueeze_dim_2]))
            gv: R.Tensor((unsqueeze_dim_0, unsqueeze_dim_1, unsqueeze_dim_2), dtype="float32") = R.reshape(x, R.shape([unsqueeze_dim_0, unsqueeze_dim_1, unsqueeze_dim_2]))
            R.output(gv)
        return gv
"#;

/// Small programs with the nested call in a non-dataflow block and a symbolic target.
const SYMBOLIC: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor(("n",), "bool"), x: R.Tensor(("n",), "float32"), y: R.Tensor(("n",), "float32")) -> R.Tensor(ndim=1, dtype="float32"):
        m = T.int64()
        lv = R.match_cast(R.where(c, x, y), R.Tensor((m,), "float32"))
        return lv
"#;

const RESHAPE: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor(ndim=1, dtype="float32"):
        m = T.int64()
        with R.dataflow():
            lv = R.match_cast(R.reshape(x, R.shape([6])), R.Tensor((m,), "float32"))
            gv = R.add(lv, lv)
            R.output(gv)
        return gv
"#;

fn devices() -> Vec<DeviceChoice> {
    let mut d = vec![DeviceChoice::Cpu];
    if relax_gpu_runtime::GpuRuntime::shared_default().is_ok() {
        d.push(DeviceChoice::Gpu);
    } else {
        eprintln!("no GPU adapter: the GPU half is not checked");
    }
    d
}

fn tensor<T: relax_engine::Element>(shape: &[usize], data: Vec<T>) -> Value {
    Value::Tensor(Tensor::from_array(
        &ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(shape), data).expect("shape"),
    ))
}

/// Run `src`'s `main` on every device; the result's shape and values.
fn run_everywhere(src: &str, args: &[Value]) -> Vec<(DeviceChoice, Vec<usize>, Vec<f32>)> {
    run_on(src, args, devices())
}

/// Run `src`'s `main` on `devices`; the result's shape and values.
fn run_on(src: &str, args: &[Value], devices: Vec<DeviceChoice>) -> Vec<(DeviceChoice, Vec<usize>, Vec<f32>)> {
    let module = relax_ir::text::parse(src).expect("parses").into_module();
    devices
        .into_iter()
        .map(|device| {
            let engine = Engine::new(EngineConfig {
                device,
                ..EngineConfig::default()
            });
            let out = engine
                .run(&module, "main", args)
                .unwrap_or_else(|e| panic!("{device:?}: {e}"));
            let a = out.as_tensor().expect("a tensor").to_array::<f32>().expect("float32");
            (device, a.shape().to_vec(), a.iter().copied().collect())
        })
        .collect()
}

#[test]
fn onnx_range_runs_with_reshape_in_match_cast() {
    let args = [
        tensor::<f32>(&[], vec![1.0]),
        tensor::<f32>(&[], vec![7.0]),
        tensor::<f32>(&[], vec![2.0]),
    ];
    // Host only: the importer computes the length in float64, which WGSL has no
    // `ceil` for (the GPU half of a reshape in `match_cast` is `reshape_in_match_cast`).
    for (device, shape, data) in run_on(RANGE, &args, vec![DeviceChoice::Cpu]) {
        // TVM: shape (3,), [1.0, 3.0, 5.0]
        assert_eq!(shape, vec![3], "{device:?}");
        assert_eq!(data, vec![1.0, 3.0, 5.0], "{device:?}");
    }
}

#[test]
fn onnx_unsqueeze_runs_with_where_in_match_cast() {
    let x: Vec<f32> = (0..12).map(|i| i as f32).collect();
    // TVM: axes [1] gives (3, 1, 4), axes [-1] gives (3, 4, 1); the data is x's.
    for (axis, want) in [(1i64, vec![3, 1, 4]), (-1, vec![3, 4, 1])] {
        let args = [tensor(&[3, 4], x.clone()), tensor(&[1], vec![axis])];
        for (device, shape, data) in run_everywhere(UNSQUEEZE, &args) {
            assert_eq!(shape, want, "{device:?}, axes [{axis}]");
            assert_eq!(data, x, "{device:?}, axes [{axis}]");
        }
    }
}

#[test]
fn symbolic_where_in_match_cast_outside_dataflow() {
    let c = tensor(&[4], vec![true, false, true, false]);
    let x = tensor(&[4], vec![1.0f32, 2.0, 3.0, 4.0]);
    let y = tensor(&[4], vec![-1.0f32, -2.0, -3.0, -4.0]);
    for (device, shape, data) in run_everywhere(SYMBOLIC, &[c, x, y]) {
        assert_eq!(shape, vec![4], "{device:?}");
        assert_eq!(data, vec![1.0, -2.0, 3.0, -4.0], "{device:?}");
    }
}

#[test]
fn reshape_in_match_cast_runs_everywhere() {
    let x: Vec<f32> = (0..6).map(|i| i as f32 - 2.5).collect();
    for (device, shape, data) in run_everywhere(RESHAPE, &[tensor(&[2, 3], x.clone())]) {
        assert_eq!(shape, vec![6], "{device:?}");
        assert_eq!(data, x.iter().map(|v| v + v).collect::<Vec<_>>(), "{device:?}");
    }
}
