//! Legalized 1-d/3-d convolution and pooling, `prelu` and `instance_norm`
//! against the outputs Apache TVM 0.27 computed for `tests/legalize_nd/nd_ops.py`
//! (`tests/legalize_nd/nd_ops.json`, written like the e2e data files by
//! `scripts/gen_e2e.py`'s procedure).
//!
//! The TVMScript parser does not know these operators yet, so each call is
//! built through the IR API: a parsed skeleton function binds `gv` to a
//! placeholder call, which is replaced by the operator call with its
//! attributes; the engine then checks, normalizes, legalizes and runs it on the
//! CPU and on the GPU.

use relax_engine::{DeviceChoice, Engine, EngineConfig, Tensor, Value};
use relax_ir::relax::{BindingBlock, Function, SeqExpr};
use relax_ir::{AttrValue, Attrs, BaseFunc, Binding, DataType, Expr, ExprKind, IRModule};
use serde::Deserialize;

#[derive(Deserialize)]
struct TensorData {
    dtype: String,
    shape: Vec<i64>,
    data: Vec<f64>,
}

#[derive(Deserialize)]
struct Data {
    rtol: f64,
    atol: f64,
    inputs: Vec<TensorData>,
    outputs: Vec<TensorData>,
}

const SKELETON: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 5, 6), dtype="float32"), w: R.Tensor((3, 2, 2, 3, 2), dtype="float32"), wt: R.Tensor((2, 3, 2, 2, 3), dtype="float32"), y: R.Tensor((2, 3, 7), dtype="float32"), a: R.Tensor((3,), dtype="float32"), b: R.Tensor((3,), dtype="float32")):
        gv = R.add(x, x)
        return gv
"#;

const PARAMS: [&str; 6] = ["x", "w", "wt", "y", "a", "b"];

fn ints(v: &[i64]) -> AttrValue {
    AttrValue::List(v.iter().map(|&i| AttrValue::Int(i)).collect())
}

/// One operator call: operator, argument names, attributes.
type Case = (&'static str, Vec<&'static str>, Vec<(&'static str, AttrValue)>);

/// The cases of `nd_ops.py`, in output order.
fn cases() -> Vec<Case> {
    let s = |v: &str| AttrValue::Str(v.to_string());
    vec![
        (
            "relax.nn.conv3d",
            vec!["x", "w"],
            vec![("strides", ints(&[1, 2, 1])), ("padding", ints(&[1, 0, 1, 1, 0, 1]))],
        ),
        (
            "relax.nn.conv3d_transpose",
            vec!["x", "wt"],
            vec![
                ("strides", ints(&[2, 1, 2])),
                ("padding", ints(&[0, 1, 1, 1, 0, 0])),
                ("output_padding", ints(&[1, 0, 1])),
            ],
        ),
        (
            "relax.nn.max_pool1d",
            vec!["y"],
            vec![
                ("pool_size", ints(&[3])),
                ("strides", ints(&[2])),
                ("padding", ints(&[1, 1])),
                ("ceil_mode", AttrValue::Bool(true)),
            ],
        ),
        (
            "relax.nn.avg_pool1d",
            vec!["y"],
            vec![
                ("pool_size", ints(&[2])),
                ("strides", ints(&[2])),
                ("padding", ints(&[1, 0])),
                ("count_include_pad", AttrValue::Bool(true)),
            ],
        ),
        (
            "relax.nn.max_pool3d",
            vec!["x"],
            vec![
                ("pool_size", ints(&[2, 2, 2])),
                ("strides", ints(&[2, 2, 2])),
                ("padding", ints(&[0, 1, 0, 1, 0, 1])),
            ],
        ),
        (
            "relax.nn.avg_pool3d",
            vec!["x"],
            vec![
                ("pool_size", ints(&[2, 3, 2])),
                ("strides", ints(&[2, 2, 2])),
                ("padding", ints(&[1, 1, 0, 0, 1, 1])),
                ("count_include_pad", AttrValue::Bool(true)),
            ],
        ),
        (
            "relax.nn.adaptive_avg_pool1d",
            vec!["y"],
            vec![("output_size", ints(&[3])), ("layout", s("NCW"))],
        ),
        (
            "relax.nn.adaptive_avg_pool3d",
            vec!["x"],
            vec![("output_size", ints(&[2, 2, 3])), ("layout", s("NCDHW"))],
        ),
        ("relax.nn.prelu", vec!["y", "a"], vec![("axis", AttrValue::Int(1))]),
        (
            "relax.nn.instance_norm",
            vec!["y", "a", "b"],
            vec![
                ("channel_axis", AttrValue::Int(1)),
                ("axes", ints(&[2])),
                ("epsilon", AttrValue::Float(1e-5)),
            ],
        ),
    ]
}

/// The skeleton with `gv` bound to `op(args...)`.
fn module_with(skeleton: &IRModule, op: &str, args: &[&str], attrs: &[(&str, AttrValue)]) -> IRModule {
    let mut m = skeleton.clone();
    let (gv, f) = m
        .functions
        .iter()
        .find_map(|(g, f)| match f {
            BaseFunc::Relax(f) => Some((g.clone(), f.clone())),
            _ => None,
        })
        .expect("skeleton has main");
    let ExprKind::Seq(seq) = f.body.kind() else {
        panic!("skeleton body is a SeqExpr")
    };
    let arg = |n: &str| -> Expr {
        let i = PARAMS.iter().position(|p| *p == n).expect("known parameter");
        Expr::new(ExprKind::Var(f.params[i].clone()))
    };
    let mut a = Attrs::new();
    for (k, v) in attrs {
        a.set(*k, v.clone());
    }
    let call = Expr::call(Expr::op(op), args.iter().map(|n| arg(n)).collect(), a, vec![]);
    let blocks: Vec<BindingBlock> = seq
        .blocks
        .iter()
        .map(|b| BindingBlock {
            bindings: b
                .bindings
                .iter()
                .map(|bd| match bd {
                    Binding::VarBinding { var, span, .. } => Binding::VarBinding {
                        var: var.clone(),
                        value: call.clone(),
                        span: *span,
                    },
                    other => other.clone(),
                })
                .collect(),
            is_dataflow: b.is_dataflow,
            span: b.span,
        })
        .collect();
    let body = Expr::new(ExprKind::Seq(SeqExpr {
        blocks,
        body: seq.body.clone(),
    }));
    m.functions.insert(
        gv,
        BaseFunc::Relax(Function {
            body,
            ret_struct_info: None,
            ..f
        }),
    );
    m
}

fn tensor(t: &TensorData) -> Tensor {
    assert_eq!(t.dtype, "float32");
    let bytes: Vec<u8> = t.data.iter().flat_map(|v| (*v as f32).to_le_bytes()).collect();
    Tensor::from_bytes(DataType::FLOAT32, &t.shape, bytes).expect("input tensor")
}

#[test]
fn nd_ops_match_tvm() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/legalize_nd/nd_ops.json");
    let data: Data = serde_json::from_str(&std::fs::read_to_string(&path).expect("data file")).expect("data json");
    let skeleton = relax_ir::text::parse(SKELETON).expect("skeleton parses").into_module();
    let args: Vec<Value> = data.inputs.iter().map(|t| Value::Tensor(tensor(t))).collect();
    let cases = cases();
    assert_eq!(cases.len(), data.outputs.len());
    let mut failures = Vec::new();
    for device in [DeviceChoice::Cpu, DeviceChoice::Gpu] {
        let engine = Engine::new(EngineConfig {
            device,
            ..EngineConfig::default()
        });
        for ((op, a, attrs), want) in cases.iter().zip(&data.outputs) {
            let m = module_with(&skeleton, op, a, attrs);
            let got = match engine.load(&m).and_then(|l| l.run("main", &args)) {
                Ok(v) => v,
                Err(e) => {
                    failures.push(format!("{device:?} {op}: {e}"));
                    continue;
                }
            };
            let Some(t) = got.as_tensor() else {
                failures.push(format!("{device:?} {op}: not a tensor"));
                continue;
            };
            if t.shape() != want.shape.as_slice() {
                failures.push(format!("{device:?} {op}: shape {:?} vs {:?}", t.shape(), want.shape));
                continue;
            }
            let vals: Vec<f32> = t.to_array::<f32>().expect("f32 result").iter().copied().collect();
            let bad = vals
                .iter()
                .zip(&want.data)
                .filter(|(g, w)| ((**g as f64) - **w).abs() > data.atol + data.rtol * w.abs())
                .count();
            if bad > 0 {
                failures.push(format!("{device:?} {op}: {bad} of {} elements differ", vals.len()));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
