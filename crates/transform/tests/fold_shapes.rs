//! `fold-constant` of a data-dependent shape: once the shape is folded to a
//! constant, the bindings using it get the static StructInfo it implies, so the
//! `reshape` can be legalized and run (its result is compared with the input data).

use relax_engine::{DeviceChoice, Engine, EngineConfig, Value};
use relax_ir::{BaseFunc, ExprKind, IRModule, StructInfo};
use relax_transform::{lookup, Pipeline};

const RESHAPE_BY_COMPUTED_SHAPE: &str = r#"
from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(data: R.Tensor((128,), dtype="float32")) -> R.Tensor(dtype="float32", ndim=2):
        with R.dataflow():
            t: R.Tensor((2,), dtype="int64") = R.add(R.const([4, 8], "int64"), R.const([4, 8], "int64"))
            s: R.Shape(ndim=2) = R.tensor_to_shape(t)
            gv: R.Tensor(dtype="float32", ndim=2) = R.reshape(data, s)
            R.output(gv)
        return gv
"#;

fn passes(m: &IRModule, names: &[&str]) -> IRModule {
    let mut p = Pipeline::new().verify(true);
    for n in names {
        p.push(lookup(n).unwrap_or_else(|| panic!("pass {n} is registered")));
    }
    p.run(m.clone()).expect("the passes run and their output verifies")
}

#[test]
fn reshape_by_a_folded_shape_gets_a_static_shape_and_runs() {
    let input = relax_ir::text::parse(RESHAPE_BY_COMPUTED_SHAPE)
        .expect("parses")
        .into_module();
    let folded = passes(&input, &["check", "legalize", "fold-constant"]);
    let Some(BaseFunc::Relax(main)) = folded.get("main") else {
        panic!("main")
    };
    let ExprKind::Seq(seq) = main.body.kind() else {
        panic!("a sequence")
    };
    let gv = seq.body.as_var().expect("a variable result");
    let Some(StructInfo::Tensor(t)) = gv.struct_info() else {
        panic!("a tensor result")
    };
    let dims: Vec<Option<i64>> = t
        .shape_values()
        .expect("a known shape")
        .iter()
        .map(|d| d.as_int())
        .collect();
    assert_eq!(dims, vec![Some(8), Some(16)]);

    let lowered = passes(&folded, &["legalize"]);
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        optimize: false,
        host_library: false,
        ..EngineConfig::default()
    });
    let data: Vec<f32> = (0..128).map(|i| i as f32 * 0.5 - 7.0).collect();
    let arg = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[128]), data.clone()).expect("shape");
    let out = engine
        .load(&lowered)
        .expect("loads")
        .run("main", &[Value::Tensor(relax_engine::Tensor::from_array(&arg))])
        .expect("runs");
    let t = out.as_tensor().expect("a tensor").to_array::<f32>().expect("f32");
    assert_eq!(t.shape(), &[8, 16]);
    assert_eq!(t.iter().copied().collect::<Vec<f32>>(), data);
}

/// A mask computed from constants only, as `torch.export` spells a causal mask
/// (`arange`, `+ 0`, `expand_dims` and `reshape` made host views, a field of a tuple
/// written out, a comparison, `where`): after `fold-constant` it is one constant,
/// and only the addition of the input is left to run.
const CONSTANT_MASK: &str = r#"
from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((4,), dtype="int64") = R.arange(0, 4, 1, dtype="int64")
            b: R.Tensor((4,), dtype="int64") = R.add(a, R.const(0, "int64"))
            r: R.Tensor((1, 4), dtype="int64") = R.expand_dims(b, axis=[0])
            c: R.Tensor((4, 1), dtype="int64") = R.reshape(b, R.shape([4, 1]))
            f: R.Tensor((1, 4), dtype="int64") = (r, c)[0]
            m: R.Tensor((4, 4), dtype="bool") = R.less_equal(f, c)
            z: R.Tensor((4, 4), dtype="float32") = R.where(m, R.const(0.0, "float32"), R.const(-1.0, "float32"))
            gv: R.Tensor((4, 4), dtype="float32") = R.add(z, x)
            R.output(gv)
        return gv
"#;

#[test]
fn a_mask_of_constants_folds_to_one_constant() {
    let input = relax_ir::text::parse(CONSTANT_MASK).expect("parses").into_module();
    let folded = passes(&input, &["check", "dispatch-host-library", "legalize", "fold-constant"]);
    let Some(BaseFunc::Relax(main)) = folded.get("main") else {
        panic!("main")
    };
    let mut calls = Vec::new();
    relax_ir::visit::for_each_expr(&main.body, &mut |e| {
        if let ExprKind::Call(c) = e.kind() {
            calls.push(c.op.as_op().unwrap_or("?").to_string());
        }
    });
    assert_eq!(calls, vec!["relax.call_dps_packed".to_string()], "only the add is left");
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        ..EngineConfig::default()
    });
    let data: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let arg = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[4, 4]), data.clone()).expect("shape");
    let out = engine
        .load(&input)
        .expect("loads")
        .run("main", &[Value::Tensor(relax_engine::Tensor::from_array(&arg))])
        .expect("runs");
    let t = out.as_tensor().expect("a tensor").to_array::<f32>().expect("f32");
    // m[i, j] = j <= i: 0 there, -1 above the diagonal.
    let want: Vec<f32> = (0..16)
        .map(|k| data[k] - if k % 4 <= k / 4 { 0.0 } else { 1.0 })
        .collect();
    assert_eq!(t.iter().copied().collect::<Vec<f32>>(), want);
}
