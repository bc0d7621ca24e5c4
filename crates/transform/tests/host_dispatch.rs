//! `dispatch-host-library`: which calls become `relax_host.*` library calls, that the
//! result prints as TVMScript that re-parses, that GPU-placed work is left alone, and
//! that the engine computes the same values through the library as through
//! legalized TIR.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ndarray::{ArrayD, IxDyn};
use relax_engine::{DeviceChoice, Engine, EngineConfig, RunStats, Value};
use relax_ir::visit::for_each_expr;
use relax_ir::{BaseFunc, ExprKind, IRModule};
use relax_transform::host_dispatch::{dispatch_host_library_with, DispatchOptions, PREFIX};
use relax_transform::{lookup, Pipeline};

fn module() -> IRModule {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/host_cnn.py");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    relax_ir::text::parse(&text).expect("parses").into_module()
}

fn checked(m: IRModule) -> IRModule {
    Pipeline::new()
        .verify(true)
        .with(lookup("check").expect("check"))
        .run(m)
        .expect("checks")
}

/// How many times each operator and each library kernel is called in `main`.
fn calls(m: &IRModule) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let Some(BaseFunc::Relax(f)) = m.functions.iter().find(|(g, _)| g.name() == "main").map(|(_, f)| f) else {
        panic!("no main");
    };
    for_each_expr(&f.body, &mut |e| {
        if let ExprKind::Call(c) = e.kind() {
            if let Some(op) = c.op.as_op() {
                *out.entry(op.to_string()).or_default() += 1;
            }
        }
        if let ExprKind::ExternFunc { global_symbol } = e.kind() {
            *out.entry(global_symbol.clone()).or_default() += 1;
        }
    });
    out
}

#[test]
fn eligible_calls_become_library_calls() {
    let m = checked(module());
    let d = dispatch_host_library_with(&m, DispatchOptions::default()).expect("dispatches");
    let got = calls(&d);
    let want: BTreeMap<String, usize> = [
        ("relax.call_dps_packed", 15),
        ("relax.call_pure_packed", 2),
        ("conv2d_bias_relu", 1),
        ("conv2d_bias_bn_add_relu", 1),
        ("conv2d", 1),
        ("max_pool2d", 1),
        ("avg_pool2d", 1),
        ("mean", 1),
        ("vm.builtin.reshape", 2),
        ("add_relu", 1),
        ("concat", 2),
        ("permute_dims", 1),
        ("matmul_bt_bias_relu", 1),
        ("softmax", 1),
        ("divide", 1),
        ("multiply", 1),
        ("subtract", 1),
    ]
    .into_iter()
    .map(|(k, v)| {
        let k = if k.starts_with("relax.") || k.starts_with("vm.") {
            k.to_string()
        } else {
            format!("{PREFIX}{k}")
        };
        (k, v)
    })
    .collect();
    assert_eq!(got, want, "library calls after dispatch");

    // The result is TVMScript that re-parses (and checks) to the same program.
    let text = relax_ir::text::print_program(&relax_ir::text::Program::Module(d.clone()));
    let again = relax_ir::text::parse(&text)
        .expect("the dispatched module re-parses")
        .into_module();
    let again = checked(again);
    assert_eq!(calls(&again), got);
    let text2 = relax_ir::text::print_program(&relax_ir::text::Program::Module(again));
    assert_eq!(text, text2, "printing is stable across a round trip");
}

#[test]
fn unplaced_work_stays_when_it_runs_on_the_gpu() {
    let m = checked(module());
    let d = dispatch_host_library_with(
        &m,
        DispatchOptions {
            unplaced_on_host: false,
        },
    )
    .expect("dispatches");
    let got = calls(&d);
    assert!(
        !got.keys().any(|k| k.starts_with(PREFIX)),
        "nothing may be offloaded to the host library: {got:?}"
    );
    // Only the reshapes change: they become views on any device.
    let mut want = calls(&m);
    assert_eq!(want.remove("relax.reshape"), Some(2));
    want.insert("relax.call_pure_packed".into(), 2);
    want.insert("vm.builtin.reshape".into(), 2);
    assert_eq!(want, got);
}

/// Deterministic pseudo-random data in [-1, 1).
fn tensor(shape: &[usize], seed: u64, positive: bool) -> Value {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
            if positive {
                0.5 + u.abs()
            } else {
                u
            }
        })
        .collect();
    value(shape, v)
}

/// A tensor value of `shape` holding `v`.
fn value<T: relax_engine::Element>(shape: &[usize], v: Vec<T>) -> Value {
    Value::Tensor(relax_engine::Tensor::from_array(
        &ArrayD::from_shape_vec(IxDyn(shape), v).expect("shape"),
    ))
}

/// Run `main` of `m` on the host, through the library or through legalized TIR:
/// its result and the engine's counters.
fn run_main(m: &IRModule, args: &[Value], host_library: bool) -> (Value, RunStats) {
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        host_library,
        ..EngineConfig::default()
    });
    let loaded = engine.load(m).expect("loads");
    let out = loaded.run("main", args).expect("runs");
    (out, loaded.stats())
}

/// `main` of the module `text` run with `args` with the host library and without
/// (legalized TIR only): `(library result, TIR result, library run's stats)`.
fn library_and_tir(text: &str, args: &[Value]) -> (Value, Value, RunStats) {
    let m = relax_ir::text::parse(text).expect("parses").into_module();
    let (lib, stats) = run_main(&m, args, true);
    let (tir, _) = run_main(&m, args, false);
    (lib, tir, stats)
}

/// The shape and the elements (as `T`) of each field of a tuple result.
fn fields<T: relax_engine::Element>(out: &Value) -> Vec<(Vec<i64>, Vec<T>)> {
    let Value::Tuple(fields) = out else { panic!("a tuple") };
    fields
        .iter()
        .map(|f| {
            let t = f.as_tensor().expect("tensor");
            let a = t.to_array::<T>().expect("elements of the expected dtype");
            (t.shape().to_vec(), a.iter().copied().collect())
        })
        .collect()
}

/// Same shapes, and elements within `atol + rtol * |tir|`.
fn assert_fields_close(lib: &[(Vec<i64>, Vec<f32>)], tir: &[(Vec<i64>, Vec<f32>)], atol: f32, rtol: f32) {
    assert_eq!(lib.len(), tir.len());
    for (i, ((sa, a), (sb, b))) in lib.iter().zip(tir).enumerate() {
        assert_eq!(sa, sb, "output {i}: shape");
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x - y).abs() <= atol + rtol * y.abs(),
                "output {i}: library {x}, TIR {y}"
            );
        }
    }
}

fn run(host_library: bool) -> (Vec<f32>, u64, u64) {
    let args = vec![
        tensor(&[2, 4, 9, 9], 1, false),
        tensor(&[8, 4, 3, 3], 2, false),
        tensor(&[1, 8, 1, 1], 3, false),
        tensor(&[8, 2, 3, 3], 4, false),
        tensor(&[8], 5, false),
        tensor(&[8], 6, false),
        tensor(&[8], 7, false),
        tensor(&[8], 8, true),
        tensor(&[8, 1, 3, 3], 9, false),
        tensor(&[5, 104], 10, false),
        tensor(&[5], 11, false),
        tensor(&[5], 12, true),
    ];
    let (out, stats) = run_main(&module(), &args, host_library);
    let t = out.as_tensor().expect("a tensor").to_array::<f32>().expect("f32");
    (t.iter().copied().collect(), stats.kernels_run, stats.packed_calls)
}

#[test]
fn the_library_computes_what_legalized_tir_does() {
    let (lib, lib_kernels, lib_packed) = run(true);
    let (tir, tir_kernels, _) = run(false);
    assert_eq!(lib.len(), 10);
    for (i, (a, b)) in lib.iter().zip(&tir).enumerate() {
        assert!(
            (a - b).abs() <= 1e-5 + 1e-4 * b.abs(),
            "element {i}: library {a}, TIR {b}"
        );
    }
    assert!(
        lib.iter().any(|v| (v - 0.2).abs() > 1e-3),
        "a degenerate softmax proves nothing: {lib:?}"
    );
    assert_eq!(lib_kernels, 0, "every operator ran in the library");
    assert_eq!(lib_packed, 17);
    assert!(tir_kernels > 0);
}

const UNARY: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 7), "float32"), y: R.Tensor((3, 7), "float32")):
        with R.dataflow():
            a = R.exp(y)
            b = R.log(x)
            c = R.sqrt(x)
            d = R.rsqrt(x)
            e = R.sigmoid(y)
            f = R.tanh(y)
            g = R.negative(y)
            h = R.abs(y)
            k = R.square(y)
            out = (a, b, c, d, e, f, g, h, k)
            R.output(out)
        return out
"#;

#[test]
fn unary_operators_match_legalized_tir() {
    let args = [tensor(&[3, 7], 21, true), tensor(&[3, 7], 22, false)];
    let (lib, tir, stats) = library_and_tir(UNARY, &args);
    assert_eq!(stats.packed_calls, 9, "every unary operator ran in the library");
    assert_fields_close(&fields::<f32>(&lib), &fields::<f32>(&tir), 1e-6, 1e-5);
}

const NORMS: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4, 5), "float32"), g: R.Tensor((4, 5), "float32"), b: R.Tensor((4, 5), "float32"), g1: R.Tensor((5,), "float32"), b1: R.Tensor((5,), "float32"), gamma: R.Tensor((3,), "float32"), beta: R.Tensor((3,), "float32"), mean: R.Tensor((3,), "float32"), var: R.Tensor((3,), "float32")):
        with R.dataflow():
            ln2 = R.nn.layer_norm(x, g, b, axes=[-2, -1], epsilon=1e-05)
            ln1 = R.nn.layer_norm(x, g1, b1, axes=[3], epsilon=0.001)
            bn = R.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=1e-05, center=True, scale=True, momentum=0.9, training=False)
            y = bn[0]
            mv = bn[2]
            s = R.sum(x, axis=[2, 3], keepdims=True)
            mx = R.max(x, axis=[-1])
            mn = R.min(x, axis=[1, 2, 3])
            out = (ln2, ln1, y, mv, s, mx, mn)
            R.output(out)
        return out
"#;

#[test]
fn normalizations_and_reductions_match_legalized_tir() {
    let args = [
        tensor(&[2, 3, 4, 5], 31, false),
        tensor(&[4, 5], 32, false),
        tensor(&[4, 5], 33, false),
        tensor(&[5], 34, false),
        tensor(&[5], 35, false),
        tensor(&[3], 36, false),
        tensor(&[3], 37, false),
        tensor(&[3], 38, false),
        tensor(&[3], 39, true),
    ];
    let (lib, tir, stats) = library_and_tir(NORMS, &args);
    assert_eq!((stats.kernels_run, stats.packed_calls), (0, 6), "{stats:?}");
    assert_fields_close(&fields::<f32>(&lib), &fields::<f32>(&tir), 1e-5, 1e-4);
}

const ARG_SCANS: &str = r#"
@R.function
def main(x: R.Tensor((6, 37), "float32")):
    with R.dataflow():
        a = R.argmax(x, axis=1)
        b = R.argmin(x, axis=-1, keepdims=True)
        c = R.argmax(x)
        d = R.argmax(x, axis=0)
        R.output(a, b, c, d)
    return (a, b, c, d)
"#;

/// `argmax`/`argmin` over the last axis or all elements become library calls (over
/// another axis they stay TIR), with the values of legalized TIR, NaNs and ties
/// included.
#[test]
fn arg_scans_over_rows_match_legalized_tir() {
    let m = relax_ir::text::parse(ARG_SCANS).expect("parses").into_module();
    let dispatched = dispatch_host_library_with(&checked(m.clone()), DispatchOptions::default()).expect("dispatch");
    let c = calls(&dispatched);
    assert_eq!(c.get(&format!("{PREFIX}argmax")), Some(&2), "{c:?}");
    assert_eq!(c.get(&format!("{PREFIX}argmin")), Some(&1), "{c:?}");
    assert_eq!(c.get("relax.argmax"), Some(&1), "axis 0 stays: {c:?}");
    let mut v: Vec<f32> = (0..6 * 37).map(|i| ((i * 29) % 23) as f32 - 11.0).collect();
    v[40] = f32::NAN;
    v[100] = v[90];
    let x: Value = ArrayD::from_shape_vec(IxDyn(&[6, 37]), v).expect("shape").into();
    let (lib, tir, stats) = library_and_tir(ARG_SCANS, std::slice::from_ref(&x));
    assert_eq!(stats.packed_calls, 3, "three library calls");
    assert_eq!(fields::<i64>(&lib), fields::<i64>(&tir));
}

const PERMUTE_F16: &str = r#"
@I.ir_module
class Module:
  @R.function
  def main(x: R.Tensor((3, 5, 7), "float16"), w: R.Tensor((6, 9), "bfloat16")):
    with R.dataflow():
        a = R.permute_dims(x, axes=[2, 0, 1])
        b = R.permute_dims(w, axes=None)
        c = R.permute_dims(x, axes=[0, 2, 1])
        R.output(a, b, c)
    return (a, b, c)
"#;

/// `permute_dims` of 16-bit floats (float16 weights and activations) moves bits in
/// the library, with exactly the values of legalized TIR.
#[test]
fn sixteen_bit_transposes_move_bits_like_legalized_tir() {
    let m = relax_ir::text::parse(PERMUTE_F16).expect("parses").into_module();
    let dispatched = dispatch_host_library_with(&checked(m), DispatchOptions::default()).expect("dispatch");
    let c = calls(&dispatched);
    assert_eq!(c.get(&format!("{PREFIX}permute_dims")), Some(&3), "{c:?}");
    let x: Vec<half::f16> = (0..105).map(|i| half::f16::from_f32(i as f32 * 0.37 - 19.0)).collect();
    let w: Vec<half::bf16> = (0..54).map(|i| half::bf16::from_f32(i as f32 * -1.3 + 2.0)).collect();
    let x = relax_engine::Tensor::from_bytes(
        relax_ir::DataType::FLOAT16,
        &[3, 5, 7],
        x.iter().flat_map(|v| v.to_le_bytes()).collect(),
    )
    .expect("x");
    let w = relax_engine::Tensor::from_bytes(
        "bfloat16".parse().expect("bfloat16"),
        &[6, 9],
        w.iter().flat_map(|v| v.to_le_bytes()).collect(),
    )
    .expect("w");
    let args = [Value::Tensor(x), Value::Tensor(w)];
    let (lib, tir, stats) = library_and_tir(PERMUTE_F16, &args);
    assert_eq!(stats.packed_calls, 3, "three library calls");
    let (Value::Tuple(l), Value::Tuple(t)) = (&lib, &tir) else {
        panic!("tuples")
    };
    for (a, b) in l.iter().zip(t.iter()) {
        let (a, b) = (a.as_tensor().expect("tensor"), b.as_tensor().expect("tensor"));
        assert_eq!(a.shape(), b.shape());
        assert_eq!(a.dtype(), b.dtype());
        assert_eq!(
            a.to_bytes().expect("bytes"),
            b.to_bytes().expect("bytes"),
            "the same bits"
        );
    }
    // And the values themselves: a[k, i, j] = x[i, j, k].
    let a = l[0].as_tensor().expect("a").to_bytes().expect("bytes");
    let bits = |i: usize| u16::from_le_bytes([a[2 * i], a[2 * i + 1]]);
    let (i, j, k) = (1usize, 2usize, 4usize);
    let want = half::f16::from_f32((i * 35 + j * 7 + k) as f32 * 0.37 - 19.0).to_bits();
    assert_eq!(bits(k * 15 + i * 5 + j), want);
}

const MATMUL_BT_WIDE: &str = r#"
@I.ir_module
class Module:
  @R.function
  def main(x: R.Tensor((1, "n", 40), "float16"), w: R.Tensor((24, 40), "float16"), y: R.Tensor(("n", 40), "float32"), v: R.Tensor((24, 40), "float32"), z: R.Tensor(("n", 40), "bfloat16"), u: R.Tensor((24, 40), "bfloat16")):
    with R.dataflow():
        wt = R.permute_dims(w, axes=None)
        a = R.matmul(x, wt, out_dtype=None)
        vt = R.permute_dims(v, axes=[1, 0])
        b = R.matmul(y, vt, out_dtype=None)
        ut = R.permute_dims(u, axes=None)
        c = R.matmul(z, ut, out_dtype=None)
        R.output(a, b, c)
    return (a, b, c)
"#;

/// 16-bit float tensor of `shape` (values exact in `bfloat16` and `float16`) and its
/// values as `f64`.
fn half_tensor(dtype: &str, shape: &[usize], seed: usize) -> (Value, Vec<f64>) {
    let n: usize = shape.iter().product();
    let vals: Vec<f32> = (0..n)
        .map(|i| ((i * 37 + seed * 11) % 61) as f32 / 32.0 - 0.9375)
        .collect();
    let bytes: Vec<u8> = vals
        .iter()
        .flat_map(|&v| match dtype {
            "float16" => half::f16::from_f32(v).to_le_bytes(),
            _ => half::bf16::from_f32(v).to_le_bytes(),
        })
        .collect();
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let t = relax_engine::Tensor::from_bytes(dtype.parse().expect("dtype"), &dims, bytes).expect("tensor");
    (Value::Tensor(t), vals.iter().map(|&v| v as f64).collect())
}

/// Elements of a float16, bfloat16 or float32 tensor as `f64`.
fn as_f64(t: &relax_engine::Tensor) -> Vec<f64> {
    let b = t.to_bytes().expect("bytes");
    match t.dtype().to_string().as_str() {
        "float32" => b
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect(),
        "float16" => b
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64())
            .collect(),
        _ => b
            .chunks_exact(2)
            .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f64())
            .collect(),
    }
}

/// `x @ permute_dims(W)` with a symbolic row count, and with float16 or bfloat16
/// operands, runs as one `matmul_bt` call reading `W` untransposed (no transposed
/// copy of the weight, no lone `permute_dims`), and gives the values of legalized TIR
/// and of exact arithmetic (rounded once to the output dtype) for one row (the
/// decoding case) and for many.
#[test]
fn symbolic_and_sixteen_bit_matmuls_read_the_weight_untransposed() {
    let m = relax_ir::text::parse(MATMUL_BT_WIDE).expect("parses").into_module();
    let dispatched = dispatch_host_library_with(&checked(m), DispatchOptions::default()).expect("dispatch");
    let c = calls(&dispatched);
    assert_eq!(c.get(&format!("{PREFIX}matmul_bt")), Some(&3), "{c:?}");
    for op in ["relax.permute_dims", "relax.matmul"] {
        assert!(!c.contains_key(op), "{op} left: {c:?}");
    }
    assert!(!c.contains_key(&format!("{PREFIX}permute_dims")), "{c:?}");
    // The result re-parses.
    let text = relax_ir::text::print_program(&relax_ir::text::Program::Module(dispatched));
    relax_ir::text::parse(&text).expect("re-parses");

    for rows in [1usize, 3, 9] {
        let (x, xv) = half_tensor("float16", &[1, rows, 40], 1);
        let (w, wv) = half_tensor("float16", &[24, 40], 2);
        let (z, zv) = half_tensor("bfloat16", &[rows, 40], 3);
        let (u, uv) = half_tensor("bfloat16", &[24, 40], 4);
        let y = tensor(&[rows, 40], 5, false);
        let v = tensor(&[24, 40], 6, false);
        let yv = as_f64(y.as_tensor().expect("y"));
        let vv = as_f64(v.as_tensor().expect("v"));
        let args = [x, w, y, v, z, u];
        let (lib, tir, stats) = library_and_tir(MATMUL_BT_WIDE, &args);
        assert_eq!(stats.packed_calls, 3, "three library calls");
        let (Value::Tuple(l), Value::Tuple(t)) = (&lib, &tir) else {
            panic!("tuples")
        };
        let exact = |a: &[f64], b: &[f64]| -> Vec<f64> {
            let mut out = vec![0.0; rows * 24];
            for i in 0..rows {
                for j in 0..24 {
                    out[i * 24 + j] = (0..40).map(|k| a[i * 40 + k] * b[j * 40 + k]).sum();
                }
            }
            out
        };
        // Library: exact up to one rounding to the output dtype (f32 accumulation);
        // legalized TIR: within the 16-bit dtype's accumulated rounding.
        let cases = [
            (exact(&xv, &wv), 2e-3, 3e-2),
            (exact(&yv, &vv), 1e-5, 1e-5),
            (exact(&zv, &uv), 8e-3, 1e-1),
        ];
        for (i, (want, lib_tol, tir_tol)) in cases.iter().enumerate() {
            let (a, b) = (l[i].as_tensor().expect("tensor"), t[i].as_tensor().expect("tensor"));
            assert_eq!(a.shape(), b.shape(), "output {i}");
            assert_eq!(a.dtype(), b.dtype(), "output {i}");
            let (a, b) = (as_f64(a), as_f64(b));
            assert_eq!(a.len(), want.len());
            for ((x, y), e) in a.iter().zip(&b).zip(want) {
                assert!(
                    (x - e).abs() <= lib_tol * e.abs().max(1.0),
                    "output {i} ({rows} rows): library {x}, exact {e}"
                );
                assert!(
                    (x - y).abs() <= tir_tol * y.abs().max(1.0),
                    "output {i} ({rows} rows): library {x}, TIR {y}"
                );
            }
        }
    }
}

const GELU: &str = r#"
@I.ir_module
class Module:
  @R.function
  def main(x: R.Tensor((3, 37), "float32"), y: R.Tensor(("n", 19), "float32"), h: R.Tensor((2, "n", 19), "float16")):
    with R.dataflow():
        a = R.nn.gelu(x)
        b = R.nn.gelu_tanh(x)
        c = R.nn.gelu(y)
        d = R.nn.gelu_tanh(y)
        e = R.nn.gelu(h)
        f = R.nn.gelu_tanh(h)
        R.output(a, b, c, d, e, f)
    return (a, b, c, d, e, f)
"#;

/// `gelu` and `gelu_tanh` (static and symbolic shapes, float32 and float16) run in
/// the library with exactly the bits of legalized TIR: the same steps in the same
/// order, float16 rounded after every step.
#[test]
fn gelu_forms_give_the_bits_of_legalized_tir() {
    let m = relax_ir::text::parse(GELU).expect("parses").into_module();
    let dispatched = dispatch_host_library_with(&checked(m), DispatchOptions::default()).expect("dispatch");
    let c = calls(&dispatched);
    assert_eq!(c.get(&format!("{PREFIX}gelu")), Some(&3), "{c:?}");
    assert_eq!(c.get(&format!("{PREFIX}gelu_tanh")), Some(&3), "{c:?}");
    // Values across [-6, 6] (both formulas' curved range and their flat tails).
    let f32_tensor = |shape: &[usize], seed: usize| {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n)
            .map(|i| ((i * 37 + seed * 11) % 487) as f32 / 40.5 - 6.0)
            .collect();
        value(shape, v)
    };
    let n = 5;
    let hv: Vec<u8> = (0..2 * n * 19)
        .flat_map(|i| half::f16::from_f32((i * 53 % 190) as f32 / 15.7 - 6.0).to_le_bytes())
        .collect();
    let h = relax_engine::Tensor::from_bytes(relax_ir::DataType::FLOAT16, &[2, n as i64, 19], hv).expect("h");
    let args = [f32_tensor(&[3, 37], 1), f32_tensor(&[n, 19], 2), Value::Tensor(h)];
    let (lib, tir, stats) = library_and_tir(GELU, &args);
    assert_eq!(stats.packed_calls, 6, "six library calls");
    let (Value::Tuple(l), Value::Tuple(t)) = (&lib, &tir) else {
        panic!("tuples")
    };
    for (i, (a, b)) in l.iter().zip(t.iter()).enumerate() {
        let (a, b) = (a.as_tensor().expect("tensor"), b.as_tensor().expect("tensor"));
        assert_eq!(a.shape(), b.shape(), "output {i}");
        assert_eq!(a.dtype(), b.dtype(), "output {i}");
        assert_eq!(
            a.to_bytes().expect("bytes"),
            b.to_bytes().expect("bytes"),
            "output {i}: the same bits"
        );
    }
}

const VIEWS: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 1, 6), "float32"), n: R.Tensor(("n", 1, 3), "float32")):
        with R.dataflow():
            a = R.squeeze(x, axis=[0, 2])
            b = R.expand_dims(a, axis=[1])
            c = R.squeeze(x)
            d = R.squeeze(n, axis=[1])
            e = R.add(b, R.const(1.0, "float32"))
            out = (a, b, c, d, e)
            R.output(out)
        return out
"#;

/// `squeeze` (static and symbolic shapes) becomes a view (`vm.builtin.reshape`) on
/// every device, with the values of its legalized copy; `expand_dims` too on the
/// host, and is left to fusion on the GPU.
#[test]
fn squeezes_are_views() {
    let m = checked(relax_ir::text::parse(VIEWS).expect("parses").into_module());
    for unplaced_on_host in [true, false] {
        let d = dispatch_host_library_with(&m, DispatchOptions { unplaced_on_host }).expect("dispatches");
        let got = calls(&d);
        let expand_views = usize::from(unplaced_on_host);
        assert_eq!(got.get("vm.builtin.reshape"), Some(&(3 + expand_views)), "{got:?}");
        assert!(!got.contains_key("relax.squeeze"), "{got:?}");
        assert_eq!(
            got.get("relax.expand_dims").copied().unwrap_or(0),
            1 - expand_views,
            "{got:?}"
        );
    }
    let args = [tensor(&[1, 4, 1, 6], 31, false), tensor(&[5, 1, 3], 32, false)];
    let (lib, tir, stats) = library_and_tir(VIEWS, &args);
    assert!(stats.packed_calls >= 3, "{stats:?}");
    let (lib, tir) = (fields::<f32>(&lib), fields::<f32>(&tir));
    assert_eq!(lib, tir, "views hold the copies' values");
    assert_eq!(
        lib.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>(),
        vec![vec![4, 6], vec![4, 1, 6], vec![4, 6], vec![5, 3], vec![4, 1, 6]]
    );
}

/// A `squeeze` whose input a later call writes in place stays a copy (TVM copies: the
/// squeezed value keeps the values from before the write); a reshape is a view
/// whatever follows, as TVM's VM makes it.
#[test]
fn squeeze_of_a_tensor_written_in_place_stays_a_copy() {
    let text = r#"
@I.ir_module
class Module:
    @T.prim_func
    def double(x: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("d"):
                vi = T.axis.spatial(4, i)
                x[vi] = x[vi] * T.float32(2)

    @R.function
    def main(a: R.Tensor((1, 4), "float32")):
        x = R.add(a, R.const(0.0, "float32"))
        s = R.squeeze(x, axis=[0])
        r = R.reshape(x, R.shape([4]))
        y = R.call_tir_inplace(Module.double, (s,), out_sinfo=R.Tensor((4,), "float32"), inplace_indices=[0])
        return (s, r, y)
"#;
    let m = checked(relax_ir::text::parse(text).expect("parses").into_module());
    let d = dispatch_host_library_with(&m, DispatchOptions::default()).expect("dispatches");
    let got = calls(&d);
    assert_eq!(got.get("relax.squeeze"), Some(&1), "{got:?}");
    assert_eq!(got.get("vm.builtin.reshape"), Some(&1), "{got:?}");
}

/// torch's `_safe_softmax` as `torch.export` + `from_exported_program` print it
/// after an attention softmax, and the constant powers of RMSNorm and GPT-2's GELU.
const SAFE_SOFTMAX_AND_POWERS: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 3, 4), "float32"), y: R.Tensor((3, 5), "float32")):
        with R.dataflow():
            lv74 = R.nn.softmax(x, axis=-1)
            lv75 = R.equal(x, R.const(float("-inf"), "float32"))
            lv76 = R.logical_not(lv75)
            lv77 = R.astype(lv76, dtype="int8")
            lv78 = R.max(lv77, axis=[-1], keepdims=True)
            lv79 = R.astype(lv78, dtype="bool")
            lv80 = R.logical_not(lv79)
            lv81 = R.full_like(lv74, R.const(0.0, "float32"), dtype=None)
            lv82 = R.where(lv80, lv81, lv74)
            sq = R.power(y, R.const(2.0, "float32"))
            cu = R.power(y, R.const(3.0, "float32"))
            out = (lv82, sq, cu)
            R.output(out)
        return out
"#;

#[test]
fn safe_softmax_and_constant_powers_give_what_legalized_tir_does() {
    // Rows 1 and 4 are fully masked (all -inf), row 2 partly.
    let mut v: Vec<f32> = (0..24).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.37).collect();
    v[4..8].fill(f32::NEG_INFINITY);
    v[9] = f32::NEG_INFINITY;
    v[16..20].fill(f32::NEG_INFINITY);
    let x = value(&[1, 2, 3, 4], v);
    let args = [x, tensor(&[3, 5], 31, false)];
    let (lib, tir, stats) = library_and_tir(SAFE_SOFTMAX_AND_POWERS, &args);
    // The guard chain is absorbed: three library calls and no TIR kernel.
    assert_eq!((stats.packed_calls, stats.kernels_run), (3, 0));
    let (lib, tir) = (fields::<f32>(&lib), fields::<f32>(&tir));
    let sm = &lib[0].1;
    assert!(sm[4..8].iter().chain(&sm[16..20]).all(|&p| p == 0.0), "{sm:?}");
    assert!(sm[..4].iter().all(|&p| p > 0.0) && sm[9] == 0.0 && sm[8] > 0.0);
    assert_fields_close(&lib[..1], &tir[..1], 1e-6, 1e-5);
    // The powers to the bit.
    for k in 1..3 {
        let bits = |f: &[f32]| f.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&lib[k].1), bits(&tir[k].1), "power {}", k + 1);
    }
}

/// ONNX `Pow` keeps its exponent as a weight: a one-element tensor read at run time.
const RUN_TIME_POWER: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 6), "float32"), e: R.Tensor((), "float32")):
        with R.dataflow():
            out = R.power(x, e)
            R.output(out)
        return out
"#;

#[test]
fn powers_with_a_run_time_exponent_give_the_bits_of_legalized_tir() {
    let m = relax_ir::text::parse(RUN_TIME_POWER).expect("parses").into_module();
    let x = tensor(&[4, 6], 41, true);
    for y in [2.0f32, 3.0, 0.5, -1.25, 2.5] {
        let e = value(&[], vec![y]);
        let args = [x.clone(), e];
        let (lib, stats) = run_main(&m, &args, true);
        let (tir, _) = run_main(&m, &args, false);
        assert_eq!(
            (stats.packed_calls, stats.kernels_run),
            (1, 0),
            "x ** {y} ran in the library"
        );
        let bits = |v: &Value| -> Vec<u32> {
            let t = v.as_tensor().expect("tensor").to_array::<f32>().expect("f32");
            t.iter().map(|v| v.to_bits()).collect()
        };
        assert_eq!(bits(&lib), bits(&tir), "x ** {y}");
    }
}

/// ONNX exports' guard after an attention softmax, `fill` a weight (TVM's
/// `from_onnx` keeps the 0 as a parameter).
const SOFTMAX_NAN_FILL: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 3, 4), "float32"), fill: R.Tensor((), "float32")):
        with R.dataflow():
            p = R.nn.softmax(x, axis=-1)
            c = R.isnan(p)
            out = R.where(c, fill, p)
            R.output(out)
        return out
"#;

/// `where(isnan(softmax(x)), fill, softmax(x))` runs as one library call whose
/// rows that give NaN (all `-inf`, a NaN, a `+inf`) are `fill`, where the legalized
/// PrimFuncs give it too, and whose other values are the softmax's.
#[test]
fn softmax_with_a_nan_fill_gives_what_legalized_tir_does() {
    let mut v: Vec<f32> = (0..24).map(|i| ((i * 5 % 13) as f32 - 6.0) * 0.41).collect();
    v[4..8].fill(f32::NEG_INFINITY); // row 1: fully masked
    v[9] = f32::NEG_INFINITY; // row 2: partly
    v[13] = f32::NAN; // row 3
    v[18] = f32::INFINITY; // row 4
    let x = value(&[1, 2, 3, 4], v);
    let fill = value(&[], vec![0.25f32]);
    let (lib, tir, stats) = library_and_tir(SOFTMAX_NAN_FILL, &[x, fill]);
    assert_eq!((stats.packed_calls, stats.kernels_run), (1, 0), "one library call");
    let values = |v: &Value| -> Vec<f32> {
        let t = v.as_tensor().expect("tensor").to_array::<f32>().expect("f32");
        t.iter().copied().collect()
    };
    let (lib, tir) = (values(&lib), values(&tir));
    for row in [1, 3, 4] {
        assert!(
            lib[row * 4..row * 4 + 4].iter().all(|&p| p == 0.25),
            "row {row}: {lib:?}"
        );
    }
    assert!(lib[8] > 0.0 && lib[9] == 0.0);
    for (i, (a, b)) in lib.iter().zip(&tir).enumerate() {
        assert!(
            !a.is_nan() && (a - b).abs() <= 1e-6 + 1e-5 * b.abs(),
            "[{i}]: {a} vs {b}"
        );
    }
}

/// Embedding lookups as the front ends write them.
const TAKE_ROWS: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(w: R.Tensor((7, 5), "float32"), ids: R.Tensor((2, 3), "int64"), j: R.Tensor((4,), "int32")):
        with R.dataflow():
            a = R.take(w, ids, axis=0)
            b = R.take(w, j, axis=0, mode="clip")
            c = R.take(w, j, axis=0, mode="wrap")
            out = (a, b, c)
            R.output(out)
        return out
"#;

/// `take` along axis 0 runs as library row copies with the legalized PrimFuncs'
/// values (every mode; negative and too large indices clipped or wrapped), and an
/// index outside the rows in `fast` mode is an error on both paths.
#[test]
fn take_rows_gives_what_legalized_tir_does() {
    let m = relax_ir::text::parse(TAKE_ROWS).expect("parses").into_module();
    let w = tensor(&[7, 5], 51, false);
    let ids = value(&[2, 3], vec![0i64, 6, 3, 3, 1, 5]);
    let j = value(&[4], vec![-1i32, 9, 2, -9]);
    let args = [w.clone(), ids, j.clone()];
    let (lib, stats) = run_main(&m, &args, true);
    let (tir, _) = run_main(&m, &args, false);
    assert_eq!((stats.packed_calls, stats.kernels_run), (3, 0), "three library calls");
    let (lib, tir) = (fields::<f32>(&lib), fields::<f32>(&tir));
    let bits = |f: &[f32]| f.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    for k in 0..3 {
        assert_eq!(lib[k].0, tir[k].0, "output {k}: shape");
        assert_eq!(bits(&lib[k].1), bits(&tir[k].1), "output {k}");
    }
    let wv = w.as_tensor().expect("tensor").to_array::<f32>().expect("f32");
    let row = |r: usize| wv.iter().skip(r * 5).take(5).copied().collect::<Vec<_>>();
    assert_eq!(lib[1].1[..5], row(0)[..], "clip: -1 -> 0");
    assert_eq!(lib[2].1[..5], row(6)[..], "wrap: -1 -> 6");
    assert_eq!(lib[2].1[15..], row(5)[..], "wrap: -9 -> 5");
    // Out of range in fast mode: an error, not a read past the rows.
    let bad = value(&[2, 3], vec![0i64, 7, 3, 3, 1, 5]);
    for host_library in [true, false] {
        let engine = Engine::new(EngineConfig {
            device: DeviceChoice::Cpu,
            host_library,
            ..EngineConfig::default()
        });
        let loaded = engine.load(&m).expect("loads");
        let err = loaded.run("main", &[w.clone(), bad.clone(), j.clone()]);
        assert!(
            err.is_err(),
            "host library {host_library}: index 7 of 7 rows is an error"
        );
    }
}

/// GELU's tanh form as `torch.export` spells it (constant scalars, `h` first) and as
/// ONNX exports do (the scalars are weights, `h` after `tanh`), and a chain whose
/// `tanh` is used twice (left to the separate operators).
const GELU_TANH_CHAINS: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 70), "float32"), e: R.Tensor((), "float32"), c1: R.Tensor((), "float32"), c2: R.Tensor((1,), "float32"), half: R.Tensor((), "float32"), one: R.Tensor((), "float32")):
        with R.dataflow():
            h = R.multiply(x, R.const(0.5, "float32"))
            p = R.power(x, R.const(3.0, "float32"))
            a = R.multiply(p, R.const(0.044714998453855515, "float32"))
            b = R.add(x, a)
            c = R.multiply(b, R.const(0.79788458347320557, "float32"))
            t = R.tanh(c)
            d = R.add(t, R.const(1.0, "float32"))
            y = R.multiply(h, d)
            p2 = R.power(x, e)
            a2 = R.multiply(c1, p2)
            b2 = R.add(a2, x)
            c2_ = R.multiply(b2, c2)
            t2 = R.tanh(c2_)
            h2 = R.multiply(half, x)
            d2 = R.add(one, t2)
            y2 = R.multiply(d2, h2)
            p3 = R.power(x, R.const(3.0, "float32"))
            a3 = R.multiply(p3, R.const(0.044714998453855515, "float32"))
            b3 = R.add(x, a3)
            c3 = R.multiply(b3, R.const(0.79788458347320557, "float32"))
            t3 = R.tanh(c3)
            d3 = R.add(t3, R.const(1.0, "float32"))
            h3 = R.multiply(x, t3)
            y3 = R.multiply(h3, d3)
            out = (y, y2, y3)
            R.output(out)
        return out
"#;

/// The two spelled-out GELUs run as one library call each, with the bits of the
/// legalized PrimFuncs (every step rounded to `f32` as they round it); the third
/// chain, whose `tanh` has two users, stays as its operators.
#[test]
fn spelled_out_gelu_tanh_is_one_call_with_the_bits_of_legalized_tir() {
    let m = relax_ir::text::parse(GELU_TANH_CHAINS).expect("parses").into_module();
    let mut xs: Vec<f32> = (0..210).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.11).collect();
    xs[..4].copy_from_slice(&[0.0, -0.0, 9.5, -9.5]);
    let x = value(&[3, 70], xs);
    let scalar = |v: f32| value(&[], vec![v]);
    let args = [
        x,
        scalar(3.0),
        scalar(0.044715),
        value(&[1], vec![0.797_884_6f32]),
        scalar(0.5),
        scalar(1.0),
    ];
    let (lib, stats) = run_main(&m, &args, true);
    let (tir, _) = run_main(&m, &args, false);
    let dispatched = relax_transform::host_dispatch::dispatch_host_library(&checked(m)).expect("dispatches");
    let n = calls(&dispatched);
    let count = |k: &str| n.get(&format!("{PREFIX}{k}")).copied().unwrap_or(0);
    assert_eq!(count("gelu_tanh_chain"), 2, "{n:?}");
    assert_eq!(count("tanh"), 1, "the third chain keeps its tanh: {n:?}");
    assert!(stats.packed_calls >= 2, "{stats:?}");
    assert_same_bits(&lib, &tir);
}

/// The tuple results `lib` and `tir` hold the same shapes and bits (any NaN equal
/// to any NaN: its sign bit is not specified).
fn assert_same_bits(lib: &Value, tir: &Value) {
    let bits = |v: &Value| -> Vec<(Vec<i64>, Vec<u32>)> {
        let nan = |x: &f32| if x.is_nan() { 0x7fc0_0000 } else { x.to_bits() };
        fields::<f32>(v)
            .into_iter()
            .map(|(s, f)| (s, f.iter().map(nan).collect()))
            .collect()
    };
    for (k, (l, t)) in bits(lib).iter().zip(&bits(tir)).enumerate() {
        assert_eq!(l, t, "field {k}");
    }
}

/// `out_dtype="void"` (TVM's unset dtype, as its printer writes a default
/// `R.matmul`) is the operands' own: the product runs in the library.
#[test]
fn a_matmul_with_a_void_out_dtype_runs_in_the_library() {
    let text = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 32, 128), "float32"), w: R.Tensor((128, 64), "float32")):
        with R.dataflow():
            y = R.matmul(x, w, out_dtype="void")
            out = (y,)
            R.output(out)
        return out
"#;
    let x = tensor(&[1, 32, 128], 61, false);
    let w = tensor(&[128, 64], 62, false);
    let (lib, tir, stats) = library_and_tir(text, &[x, w]);
    assert_eq!((stats.packed_calls, stats.kernels_run), (1, 0), "one library call");
    assert_fields_close(&fields::<f32>(&lib), &fields::<f32>(&tir), 1e-5, 1e-5);
}

/// `rotate_half` as the Llama programs spell it (the end bound `2^63 - 1`, axis
/// `3` or `-1`), and a look-alike that is not one (its second slice stops early).
const ROTATE_HALF: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 8), "float32")):
        with R.dataflow():
            s1 = R.strided_slice(x, (2,), (4,), (9223372036854775807,), (1,), assume_inbound=False)
            n = R.negative(s1)
            s0 = R.strided_slice(x, (2,), (0,), (4,), (1,), assume_inbound=False)
            r = R.concat((n, s0), axis=-1)
            t1 = R.strided_slice(x, (-1,), (4,), (8,))
            m = R.negative(t1)
            t0 = R.strided_slice(x, (-1,), (0,), (4,))
            q = R.concat((m, t0), axis=2)
            u1 = R.strided_slice(x, (2,), (4,), (8,), (1,))
            k = R.negative(u1)
            u0 = R.strided_slice(x, (2,), (1,), (5,), (1,))
            w = R.concat((k, u0), axis=-1)
            out = (r, q, w)
            R.output(out)
        return out
"#;

/// Each spelled-out `rotate_half` is one library call with the legalized
/// PrimFuncs' bits (signed zeros included; a NaN is a NaN, its sign bit not
/// specified); the look-alike keeps its slices.
#[test]
fn rotate_half_is_one_call_with_the_bits_of_legalized_tir() {
    let m = relax_ir::text::parse(ROTATE_HALF).expect("parses").into_module();
    let mut xs: Vec<f32> = (0..48).map(|i| (i as f32 - 20.0) * 0.37).collect();
    xs[..3].copy_from_slice(&[0.0, -0.0, f32::NAN]);
    xs[44] = -0.0;
    xs[5] = f32::NAN;
    let args = [value(&[2, 3, 8], xs)];
    let (lib, _) = run_main(&m, &args, true);
    let (tir, _) = run_main(&m, &args, false);
    let dispatched = relax_transform::host_dispatch::dispatch_host_library(&checked(m)).expect("dispatches");
    let n = calls(&dispatched);
    assert_eq!(n.get(&format!("{PREFIX}rotate_half")).copied(), Some(2), "{n:?}");
    assert_eq!(
        n.get("relax.strided_slice").copied(),
        Some(2),
        "the look-alike keeps its slices: {n:?}"
    );
    assert_same_bits(&lib, &tir);
}

/// `broadcast_to` to a shape with symbolic extents (ONNX's `Expand` of a shape read
/// at run time, the grouped-query attention of Llama) runs in the library, which
/// reads the shapes at run time, with the legalized PrimFunc's values.
#[test]
fn broadcast_to_a_symbolic_shape_runs_in_the_library() {
    let text = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 1, "n", 3), "float32")):
        n = T.int64()
        with R.dataflow():
            y = R.broadcast_to(x, R.shape([1, 2, 2, n, 3]))
            out = (y,)
            R.output(out)
        return out
"#;
    let d = dispatch_host_library_with(
        &checked(relax_ir::text::parse(text).expect("parses").into_module()),
        DispatchOptions { unplaced_on_host: true },
    )
    .expect("dispatches");
    assert_eq!(
        calls(&d).get(&format!("{PREFIX}broadcast_to")),
        Some(&1),
        "{:?}",
        calls(&d)
    );
    let (lib, tir, stats) = library_and_tir(text, &[tensor(&[1, 2, 1, 5, 3], 71, false)]);
    assert_eq!((stats.packed_calls, stats.kernels_run), (1, 0), "one library call");
    assert_eq!(fields::<f32>(&lib), fields::<f32>(&tir));
}

const PERMUTE_CHAIN: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 3, 2), dtype="float32")) -> R.Tensor((1, 3, 4, 2), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((3, 1, 4, 2), dtype="float32") = R.permute_dims(x, axes=[2, 0, 1, 3])
            b: R.Tensor((1, 4, 3, 2), dtype="float32") = R.permute_dims(a, axes=[1, 2, 0, 3])
            gv: R.Tensor((1, 3, 4, 2), dtype="float32") = R.permute_dims(b, axes=[0, 2, 1, 3])
            R.output(gv)
        return gv
"#;

/// A chain of transposes (GPT-2's attention output through `torch.export`) is one
/// library transpose by the composed axes, with the chain's result.
#[test]
fn transposes_of_transposes_are_one_call() {
    let m = checked(relax_ir::text::parse(PERMUTE_CHAIN).expect("parses").into_module());
    let d = dispatch_host_library_with(&m, DispatchOptions::default()).expect("dispatches");
    let got = calls(&d);
    assert_eq!(got.get(&format!("{PREFIX}permute_dims")), Some(&1), "{got:?}");
    let x: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let (lib, tir, _) = library_and_tir(PERMUTE_CHAIN, &[value(&[1, 4, 3, 2], x.clone())]);
    let lib = lib.as_tensor().expect("tensor").to_array::<f32>().expect("f32");
    let tir = tir.as_tensor().expect("tensor").to_array::<f32>().expect("f32");
    assert_eq!(lib, tir);
    // gv[0, c, b, d] = x[0, b, c, d].
    assert_eq!(lib[[0, 2, 1, 1]], x[(3 + 2) * 2 + 1]);
}

const RMS_NORM_CHAINS: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 70), dtype="float32"), w: R.Tensor((70,), dtype="float32"), e: R.Tensor((), dtype="float32"), eps: R.Tensor((), dtype="float32")):
        with R.dataflow():
            p = R.power(x, e)
            m = R.mean(p, axis=[-1], keepdims=True)
            a = R.add(m, eps)
            r = R.sqrt(a)
            i = R.divide(R.const(1.0, "float32"), r)
            y = R.multiply(x, i)
            out = R.multiply(w, y)
            p2 = R.power(x, R.const(2.0, "float32"))
            m2 = R.mean(p2, axis=[-1], keepdims=True)
            a2 = R.add(m2, R.const(9.9999999747524271e-07, "float32"))
            i2 = R.rsqrt(a2)
            y2 = R.multiply(x, i2)
            out2 = R.multiply(w, y2)
            p3 = R.power(x, R.const(2.0, "float32"))
            m3 = R.mean(p3, axis=[-1], keepdims=True)
            a3 = R.add(m3, R.const(9.9999999747524271e-07, "float32"))
            i3 = R.rsqrt(a3)
            y3 = R.multiply(x, i3)
            out3 = R.multiply(w, y3)
            res = (out, out2, out3, y3)
            R.output(res)
        return res
"#;

/// Llama's RMS normalization spelled out (ONNX's `1 / sqrt` with its exponent and
/// epsilon as weights; `torch.export`'s `rsqrt` with constants) runs as one library
/// call each, with the bits of the library's separate operators (the third chain,
/// whose `y3` has two users, stays as them), within float rounding of legalized TIR
/// (whose mean sums in another order).
#[test]
fn spelled_out_rms_norm_is_one_call_with_the_bits_of_the_separate_kernels() {
    let m = relax_ir::text::parse(RMS_NORM_CHAINS).expect("parses").into_module();
    let mut xs: Vec<f32> = (0..210).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.11).collect();
    xs[..4].copy_from_slice(&[0.0, -0.0, 9.5, -9.5]);
    let w: Vec<f32> = (0..70).map(|i| 0.5 + i as f32 * 0.01).collect();
    let args = [
        value(&[3, 70], xs),
        value(&[70], w),
        value(&[], vec![2.0f32]),
        value(&[], vec![1e-6f32]),
    ];
    let (lib, _) = run_main(&m, &args, true);
    let (tir, _) = run_main(&m, &args, false);
    let dispatched = relax_transform::host_dispatch::dispatch_host_library(&checked(m)).expect("dispatches");
    let n = calls(&dispatched);
    let count = |k: &str| n.get(&format!("{PREFIX}{k}")).copied().unwrap_or(0);
    assert_eq!(count("rms_norm_chain"), 1, "{n:?}");
    assert_eq!(count("rms_norm_chain_rsqrt"), 1, "{n:?}");
    assert_eq!(count("rsqrt"), 1, "the third chain keeps its operators: {n:?}");
    let lib = fields::<f32>(&lib);
    let tir = fields::<f32>(&tir);
    assert_fields_close(&lib, &tir, 1e-6, 1e-6);
    let (fused, separate) = (&lib[1].1, &lib[2].1);
    assert!(
        fused.iter().zip(separate).all(|(a, b)| a.to_bits() == b.to_bits()),
        "the fused chain differs from the separate kernels"
    );
}

const ROTARY_CHAIN: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 3, 4), dtype="float32"), cos: R.Tensor((1, 1, 3, 4), dtype="float32"), sin: R.Tensor((1, 1, 3, 4), dtype="float32")):
        with R.dataflow():
            a = R.multiply(x, cos)
            s0 = R.strided_slice(x, (3,), (0,), (2,), (1,), assume_inbound=False)
            s1 = R.strided_slice(x, (3,), (2,), (9223372036854775807,), (1,), assume_inbound=False)
            n = R.negative(s1)
            r = R.concat((n, s0), axis=-1)
            b = R.multiply(r, sin)
            y = R.add(a, b)
            R.output(y)
        return y
"#;

/// Hugging Face's `apply_rotary_pos_emb` for one tensor (`x * cos +
/// rotate_half(x) * sin`, cos and sin shared by the heads) is one library call
/// with the bits of legalized TIR.
#[test]
fn rotary_embedding_is_one_call_with_the_bits_of_legalized_tir() {
    let m = relax_ir::text::parse(ROTARY_CHAIN).expect("parses").into_module();
    let xs: Vec<f32> = (0..24).map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.37).collect();
    let cs: Vec<f32> = (0..12).map(|i| (i as f32 * 0.3).cos()).collect();
    let ss: Vec<f32> = (0..12).map(|i| (i as f32 * 0.3).sin()).collect();
    let args = [
        value(&[1, 2, 3, 4], xs.clone()),
        value(&[1, 1, 3, 4], cs.clone()),
        value(&[1, 1, 3, 4], ss.clone()),
    ];
    let (lib, _) = run_main(&m, &args, true);
    let (tir, _) = run_main(&m, &args, false);
    let dispatched = relax_transform::host_dispatch::dispatch_host_library(&checked(m)).expect("dispatches");
    let n = calls(&dispatched);
    assert_eq!(n.get(&format!("{PREFIX}rotary_chain")), Some(&1), "{n:?}");
    assert_eq!(n.get("relax.call_dps_packed"), Some(&1), "one call in all: {n:?}");
    let lib = lib.as_tensor().expect("tensor").to_array::<f32>().expect("f32");
    let tir = tir.as_tensor().expect("tensor").to_array::<f32>().expect("f32");
    assert!(
        lib.iter().zip(tir.iter()).all(|(a, b)| a.to_bits() == b.to_bits()),
        "{lib:?} vs {tir:?}"
    );
    // y[0, 1, 2, 0] = x * cos - x[.., 2] * sin (head 1, position 2).
    let at = 12 + 8;
    assert_eq!(lib[[0, 1, 2, 0]], xs[at] * cs[8] + (-xs[at + 2]) * ss[8]);
}
