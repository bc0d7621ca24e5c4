//! The edge cases of `docs/semantics.md`, on the host and (when an adapter exists) on
//! the GPU: both devices must give the values in the table.

mod common;

use common::text::{engines, loaded_everywhere, parse};
use ndarray::{ArrayD, IxDyn};
use relax_engine::Value;

fn f32s(shape: &[usize], v: Vec<f32>) -> Value {
    ArrayD::from_shape_vec(IxDyn(shape), v).expect("shape").into()
}

fn i32s(v: Vec<i32>) -> Value {
    ArrayD::from_shape_vec(IxDyn(&[v.len()]), v).expect("shape").into()
}

fn field(out: &Value, i: usize) -> &relax_engine::Tensor {
    out.as_tuple().expect("tuple")[i].as_tensor().expect("tensor")
}

fn ints(out: &Value, i: usize) -> Vec<i64> {
    use relax_engine::ArrayValue as A;
    fn all<T: Copy + TryInto<i64>>(a: &ArrayD<T>) -> Vec<i64> {
        a.iter().map(|&x| x.try_into().unwrap_or(i64::MAX)).collect()
    }
    match field(out, i).to_array_value().expect("array") {
        A::Bool(a) => a.iter().map(|&b| b as i64).collect(),
        A::I8(a) => all(&a),
        A::I16(a) => all(&a),
        A::I32(a) => all(&a),
        A::I64(a) => all(&a),
        A::U8(a) => all(&a),
        A::U16(a) => all(&a),
        A::U32(a) => all(&a),
        A::U64(a) => all(&a),
        other => panic!("not an integer array: {other:?}"),
    }
}

/// Float results as bit-exact strings (`NaN`, `inf`, `-inf`, numbers).
fn floats(out: &Value, i: usize) -> Vec<String> {
    let t = field(out, i).to_array::<f32>().expect("f32");
    t.iter().map(|x| format!("{x}")).collect()
}

const CASTS: &str = r#"
@R.function
def main(x: R.Tensor((9,), "float32")):
    a = R.astype(x, "uint8")
    b = R.astype(x, "int32")
    c = R.astype(x, "int8")
    d = R.astype(x, "uint32")
    e = R.astype(x, "int16")
    f = R.astype(x, "int64")
    return (a, b, c, d, e, f)
"#;

#[test]
fn float_to_int_casts_saturate_and_nan_is_zero() {
    let x = f32s(
        &[9],
        vec![300.0, -5.0, f32::NAN, 3e9, -3e9, f32::INFINITY, 2.7, -2.7, 70000.0],
    );
    for (dev, engine) in engines() {
        let out = engine.run(&parse(CASTS), "main", std::slice::from_ref(&x)).expect(dev);
        assert_eq!(ints(&out, 0), [255, 0, 0, 255, 0, 255, 2, 0, 255], "{dev} uint8");
        assert_eq!(
            ints(&out, 1),
            [300, -5, 0, 2147483647, -2147483648, 2147483647, 2, -2, 70000],
            "{dev} int32"
        );
        assert_eq!(ints(&out, 2), [127, -5, 0, 127, -128, 127, 2, -2, 127], "{dev} int8");
        assert_eq!(
            ints(&out, 3),
            [300, 0, 0, 3000000000, 0, 4294967295, 2, 0, 70000],
            "{dev} uint32"
        );
        assert_eq!(
            ints(&out, 4),
            [300, -5, 0, 32767, -32768, 32767, 2, -2, 32767],
            "{dev} int16"
        );
        assert_eq!(
            ints(&out, 5),
            [300, -5, 0, 3000000000, -3000000000, i64::MAX, 2, -2, 70000],
            "{dev} int64"
        );
    }
}

const NAN_AND_ZERO: &str = r#"
@R.function
def main(x: R.Tensor((2, 3), "float32"), i: R.Tensor((2,), "int32"), j: R.Tensor((2,), "int32")):
    a = R.max(x, axis=[1])
    b = R.min(x, axis=[1])
    c = R.sum(x, axis=[1])
    d = R.argmax(x, axis=1)
    e = R.argmin(x, axis=1)
    f = R.greater(x, R.const(0.0, "float32"))
    g = R.equal(x, x)
    h = R.divide(i, j)
    k = R.floor_divide(i, j)
    l = R.floor_mod(i, j)
    m = R.maximum(x, R.const(0.0, "float32"))
    n = R.divide(x, R.const(0.0, "float32"))
    return (a, b, c, d, e, f, g, h, k, l, m, n)
"#;

#[test]
fn nan_infinity_and_integer_division_by_zero() {
    let x = f32s(
        &[2, 3],
        vec![1.0, f32::NAN, -3.0, f32::NEG_INFINITY, f32::INFINITY, 0.0],
    );
    let i = i32s(vec![7, -7]);
    let j = i32s(vec![0, 0]);
    for (dev, engine) in engines() {
        let out = engine
            .run(&parse(NAN_AND_ZERO), "main", &[x.clone(), i.clone(), j.clone()])
            .expect(dev);
        // Reductions: max/min skip NaN, sum propagates it; argmax/argmin restart after a
        // NaN (no comparison with NaN holds), so [1, NaN, -3] has argmax 2.
        assert_eq!(floats(&out, 0), ["1", "inf"], "{dev} max");
        assert_eq!(floats(&out, 1), ["-3", "-inf"], "{dev} min");
        assert_eq!(floats(&out, 2), ["NaN", "NaN"], "{dev} sum");
        assert_eq!(ints(&out, 3), [2, 1], "{dev} argmax");
        assert_eq!(ints(&out, 4), [2, 0], "{dev} argmin");
        // Comparisons with NaN are false (NaN != NaN).
        assert_eq!(ints(&out, 5), [1, 0, 0, 0, 1, 0], "{dev} greater");
        assert_eq!(ints(&out, 6), [1, 0, 1, 1, 1, 1], "{dev} equal");
        // Integer division by zero gives the dividend, modulo by zero gives 0 (WGSL's rule).
        assert_eq!(ints(&out, 7), [7, -7], "{dev} divide");
        assert_eq!(ints(&out, 8), [7, -7], "{dev} floor_divide");
        assert_eq!(ints(&out, 9), [0, 0], "{dev} floor_mod");
        // maximum(NaN, 0) is 0.
        assert_eq!(floats(&out, 10), ["1", "0", "0", "0", "inf", "0"], "{dev} maximum");
        // Float division by zero is IEEE: ±inf, and NaN for 0/0 and NaN/0.
        assert_eq!(
            floats(&out, 11),
            ["inf", "NaN", "-inf", "-inf", "inf", "NaN"],
            "{dev} x / 0"
        );
    }
}

#[test]
fn the_mean_of_an_empty_axis_is_nan() {
    let src = r#"
@R.function
def main(x: R.Tensor((0, 3), "float32")):
    a = R.mean(x, axis=[0])
    b = R.sum(x, axis=[0])
    return (a, b)
"#;
    let x = f32s(&[0, 3], vec![]);
    for (dev, engine) in engines() {
        let out = engine.run(&parse(src), "main", std::slice::from_ref(&x)).expect(dev);
        assert_eq!(floats(&out, 0), ["NaN", "NaN", "NaN"], "{dev} mean");
        assert_eq!(floats(&out, 1), ["0", "0", "0"], "{dev} sum");
    }
}

#[test]
fn float64_math_is_never_narrowed_to_f32() {
    let src = r#"
@R.function
def main(x: R.Tensor((2,), "float64")):
    y = R.exp(x)
    return y
"#;
    let x: Value = ArrayD::from_shape_vec(IxDyn(&[2]), vec![700.0f64, 1.0000000001])
        .expect("shape")
        .into();
    for (dev, engine) in engines() {
        match engine.run(&parse(src), "main", std::slice::from_ref(&x)) {
            Ok(out) => {
                let y = out.as_tensor().expect("tensor").to_array::<f64>().expect("f64");
                assert_eq!(y[[0]], 700f64.exp(), "{dev}");
                assert_eq!(y[[1]], 1.0000000001f64.exp(), "{dev}");
            }
            Err(e) => {
                // The GPU refuses instead of computing in f32.
                assert_eq!(dev, "gpu", "{e}");
                // The message names the kernel and the intrinsic.
                let msg = e.to_string();
                assert!(
                    msg.contains("kernel `") && msg.contains("float64 is not supported for `T.exp` on the GPU"),
                    "{e}"
                );
            }
        }
    }
}

/// `float64` rounding to integers runs on the GPU too, exactly (WGSL's `floor`,
/// `ceil`, `trunc`, `round` take `f64`; only the transcendental builtins are f32):
/// values whose fraction f32 cannot hold, halves (to even) and `floor_mod`, equal to
/// the host's. TVM's ONNX `Range` (a `ceil` of a `float64` length) and float64 `Mod`
/// ran on the host only before.
#[test]
fn float64_rounding_runs_exactly_on_every_device() {
    let src = r#"
@R.function
def main(x: R.Tensor((9,), "float64"), y: R.Tensor((9,), "float64")):
    a = R.floor(x)
    b = R.ceil(x)
    c = R.trunc(x)
    d = R.round(x)
    e = R.floor_mod(x, y)
    return (a, b, c, d, e)
"#;
    let big = 1099511627776.5f64; // 2^40 + 0.5
    let xs = vec![
        big,
        -2.5,
        3.5,
        -1e300,
        0.1 + 0.2,
        7.000000000000001,
        0.49999999999999994,
        -3.5,
        -0.5,
    ];
    let ys = vec![3.0, 2.0, -1.5, 7.0, 0.1, 2.0, 1.0, 2.0, 2.0];
    let x: Value = ArrayD::from_shape_vec(IxDyn(&[9]), xs.clone()).expect("shape").into();
    let y: Value = ArrayD::from_shape_vec(IxDyn(&[9]), ys.clone()).expect("shape").into();
    let want: [Vec<f64>; 5] = [
        xs.iter().map(|v| v.floor()).collect(),
        xs.iter().map(|v| v.ceil()).collect(),
        xs.iter().map(|v| v.trunc()).collect(),
        xs.iter().map(|v| v.round_ties_even()).collect(),
        xs.iter().zip(&ys).map(|(a, b)| a - (a / b).floor() * b).collect(),
    ];
    assert_eq!(want[3][0], 1099511627776.0);
    assert_eq!(want[2][4], 0.0);
    assert_eq!((want[3][6], want[3][7]), (0.0, -4.0));
    assert_eq!(
        (want[2][8].to_bits(), want[3][8].to_bits()),
        ((-0.0f64).to_bits(), (-0.0f64).to_bits())
    );
    for (dev, engine) in engines() {
        let out = engine.run(&parse(src), "main", &[x.clone(), y.clone()]).expect(dev);
        let fields = out.as_tuple().expect("tuple");
        for (k, w) in want.iter().enumerate() {
            let got = fields[k].as_tensor().expect("tensor").to_array::<f64>().expect("f64");
            // bit for bit, so that -0 and 0 differ
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let got: Vec<f64> = got.iter().copied().collect();
            assert_eq!(bits(&got), bits(w), "{dev} output {k}: {got:?} for {w:?}");
        }
    }
}

/// float64 `R.mod` (TVM's truncated modulo, C's `fmod`) is exact on the GPU too (a
/// binary long division in WGSL, since WGSL's `%` rounds): mixed signs, quotients up
/// to 2^1000, subnormals, zeros keeping the dividend's sign, NaN for a zero divisor
/// or an infinite dividend, the dividend for an infinite divisor. `R.isinf` /
/// `R.isfinite` of a float64 past float32's range is not an infinity. ONNX's
/// `test_mod_mixed_sign_float64` (`Mod` with `fmod=1`) ran on the host only before.
#[test]
fn float64_fmod_and_infinity_tests_are_exact_on_every_device() {
    let src = r#"
@R.function
def main(x: R.Tensor((12,), "float64"), y: R.Tensor((12,), "float64")):
    a = R.mod(x, y)
    b = R.isinf(x)
    c = R.isfinite(x)
    d = R.isnan(a)
    return (a, b, c, d)
"#;
    let tiny = f64::from_bits(3); // a subnormal
    let xs = vec![
        -4.3,
        7.5,
        1e300,
        -1e300,
        0.1,
        -0.0,
        -4.0,
        5e-310,
        f64::INFINITY,
        3.0,
        f64::MAX,
        2.5,
    ];
    let ys = vec![
        2.1,
        -2.0,
        3.0,
        7.0,
        1e-300,
        1.0,
        2.0,
        tiny,
        2.0,
        0.0,
        0.3,
        f64::NEG_INFINITY,
    ];
    let x: Value = ArrayD::from_shape_vec(IxDyn(&[12]), xs.clone()).expect("shape").into();
    let y: Value = ArrayD::from_shape_vec(IxDyn(&[12]), ys.clone()).expect("shape").into();
    let fmod: Vec<f64> = xs.iter().zip(&ys).map(|(a, b)| a % b).collect(); // Rust's % is C's fmod
    assert_eq!(fmod[6].to_bits(), (-0.0f64).to_bits());
    assert!(fmod[8].is_nan() && fmod[9].is_nan());
    assert_eq!(fmod[11], 2.5);
    let bits = |v: &[f64]| {
        v.iter()
            .map(|x| if x.is_nan() { u64::MAX } else { x.to_bits() })
            .collect::<Vec<_>>()
    };
    for (dev, engine) in engines() {
        let out = engine.run(&parse(src), "main", &[x.clone(), y.clone()]).expect(dev);
        let fields = out.as_tuple().expect("tuple");
        let got: Vec<f64> = fields[0]
            .as_tensor()
            .expect("tensor")
            .to_array::<f64>()
            .expect("f64")
            .iter()
            .copied()
            .collect();
        assert_eq!(bits(&got), bits(&fmod), "{dev} fmod: {got:?} for {fmod:?}");
        let bools = |k: usize| -> Vec<bool> {
            let t = fields[k].as_tensor().expect("tensor").to_array::<bool>().expect("bool");
            t.iter().copied().collect()
        };
        for (k, f) in [(1, f64::is_infinite as fn(f64) -> bool), (2, f64::is_finite)] {
            let want: Vec<bool> = xs.iter().map(|v| f(*v)).collect();
            assert_eq!(bools(k), want, "{dev} output {k}");
        }
        let got = bools(3);
        assert_eq!(got, fmod.iter().map(|v| v.is_nan()).collect::<Vec<_>>(), "{dev} isnan");
    }
}

/// `R.max` / `R.min` of `bfloat16` start from TVM's `min_value` / `max_value`
/// (`-f32::MAX` / `f32::MAX`, infinities in `bfloat16`), so values beyond
/// `+-65504` and rows of infinities reduce as TVM 0.27 gives (`[-99840, -inf]` for
/// the max of these rows, checked with `tvm.compile`).
#[test]
fn bfloat16_max_and_min_start_from_infinities() {
    let src = r#"
@R.function
def main(x: R.Tensor((3, 3), "bfloat16")):
    a = R.max(x, axis=[1])
    b = R.min(x, axis=[1])
    return (a, b)
"#;
    let inf = f64::INFINITY;
    let rows = [-1e5, -2e5, -3e5, -inf, -inf, -inf, 1e5, 2e5, inf];
    let bytes: Vec<u8> = rows
        .iter()
        .flat_map(|&v| relax_ir::dtype::bf16_bits_from_f64(v).to_le_bytes())
        .collect();
    let bf16 = relax_ir::DataType::new(relax_ir::TypeCode::BFloat, 16, 1);
    let x = Value::Tensor(relax_engine::Tensor::from_bytes(bf16, &[3, 3], bytes).expect("tensor"));
    for (dev, engine) in engines() {
        let out = engine.run(&parse(src), "main", std::slice::from_ref(&x)).expect(dev);
        let fields = out.as_tuple().expect("tuple");
        let get = |k: usize| fields[k].as_tensor().expect("tensor").to_f64_values().expect("values");
        assert_eq!(get(0), [-99840.0, -inf, inf], "{dev} max");
        assert_eq!(get(1), [-299008.0, -inf, 99840.0], "{dev} min");
    }
}

#[test]
fn a_concat_of_many_inputs_selects_the_right_input() {
    // Past 64 inputs concat legalizes to a balanced tree of selects.
    let n = 301;
    let names: Vec<&str> = (0..n).map(|k| if k % 2 == 0 { "x" } else { "y" }).collect();
    let src = format!(
        "@R.function\ndef main(x: R.Tensor((2,), \"float32\"), y: R.Tensor((3,), \"float32\")):\n    z = R.concat([{}], axis=0)\n    return z\n",
        names.join(", ")
    );
    let x = f32s(&[2], vec![1.0, 2.0]);
    let y = f32s(&[3], vec![3.0, 4.0, 5.0]);
    let mut want = Vec::new();
    for k in 0..n {
        if k % 2 == 0 {
            want.extend([1.0f32, 2.0]);
        } else {
            want.extend([3.0f32, 4.0, 5.0]);
        }
    }
    for (dev, engine) in engines() {
        let out = engine.run(&parse(&src), "main", &[x.clone(), y.clone()]).expect(dev);
        let got = out.as_tensor().expect("tensor").to_array::<f32>().expect("f32");
        assert_eq!(got.iter().copied().collect::<Vec<_>>(), want, "{dev}");
    }
}

#[test]
fn empty_softmax_and_division_by_a_constant_zero_compile_on_both_devices() {
    let src = r#"
@R.function
def main(x: R.Tensor((2, 0), "float32"), i: R.Tensor((2,), "int32")):
    a = R.nn.softmax(x, axis=1)
    b = R.floor_divide(i, R.const(0, "int32"))
    c = R.floor_mod(i, R.const(0, "int32"))
    return (a, b, c)
"#;
    let x = f32s(&[2, 0], vec![]);
    let i = i32s(vec![7, -7]);
    for (dev, engine) in engines() {
        let out = engine.run(&parse(src), "main", &[x.clone(), i.clone()]).expect(dev);
        assert_eq!(field(&out, 0).shape(), &[2, 0], "{dev}");
        assert_eq!(ints(&out, 1), [7, -7], "{dev}");
        assert_eq!(ints(&out, 2), [0, 0], "{dev}");
    }
}

#[test]
fn data_dependent_out_of_bounds_accesses_fail_the_run_on_both_devices() {
    let src = r#"
@I.ir_module
class Module:
    @T.prim_func
    def scatter(i: T.Buffer((3,), "int32"), v: T.Buffer((3,), "float32"), o: T.Buffer((4,), "float32")):
        for k in range(4):
            o[k] = T.float32(0)
        for k in range(3):
            o[i[k]] = v[k]

    @R.function
    def main(x: R.Tensor((4,), "float32"), i: R.Tensor((3,), "int32"), v: R.Tensor((3,), "float32")):
        cls = Module
        a = R.take(x, i, axis=0)
        b = R.gather_elements(x, i, axis=0)
        c = R.call_tir(cls.scatter, (i, v), out_sinfo=R.Tensor((4,), "float32"))
        return (a, b, c)
"#;
    let x = f32s(&[4], vec![1.0, 2.0, 3.0, 4.0]);
    let v = f32s(&[3], vec![7.0, 8.0, 9.0]);
    for (dev, loaded) in loaded_everywhere(src) {
        // An index past the end and a negative one: an error naming the buffer.
        for bad in [vec![1, 7, 0], vec![2, -1, 3]] {
            let e = loaded
                .run("main", &[x.clone(), i32s(bad.clone()), v.clone()])
                .expect_err(dev)
                .to_string();
            assert!(e.contains("out-of-bounds"), "{dev} {bad:?}: {e}");
            assert!(
                e.contains("of `x`") || e.contains("of `o`") || e.contains("of `i`"),
                "{dev}: {e}"
            );
            let at = if bad[1] == 7 { "at 7 (size 4)" } else { "at -1 (size 4)" };
            assert!(e.contains(at), "{dev} {bad:?}: {e}");
        }
        // The module stays usable and the next (valid) run reports nothing stale.
        let out = loaded
            .run("main", &[x.clone(), i32s(vec![3, 0, 1]), v.clone()])
            .expect(dev);
        assert_eq!(floats(&out, 0), ["4", "1", "2"], "{dev} take");
        assert_eq!(floats(&out, 1), ["4", "1", "2"], "{dev} gather_elements");
        assert_eq!(floats(&out, 2), ["8", "9", "0", "7"], "{dev} scatter");
    }
}

#[test]
fn a_loop_index_past_the_end_fails_on_both_devices() {
    let src = r#"
@I.ir_module
class Module:
    @T.prim_func
    def overrun(x: T.Buffer((4,), "float32"), o: T.Buffer((4,), "float32")):
        for i in range(6):
            o[i] = x[T.min(i, 3)]

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        cls = Module
        y = R.call_tir(cls.overrun, (x,), out_sinfo=R.Tensor((4,), "float32"))
        return y
"#;
    let x = f32s(&[4], vec![1.0, 2.0, 3.0, 4.0]);
    for (dev, engine) in engines() {
        let e = engine
            .run(&parse(src), "main", std::slice::from_ref(&x))
            .expect_err(dev)
            .to_string();
        assert!(e.contains("out-of-bounds write of `o` at"), "{dev}: {e}");
        assert!(e.contains("(size 4)"), "{dev}: {e}");
    }
}

/// Scalar bfloat16 constants keep their values through legalization (their bits
/// were once read as IEEE half: `1.0` became `1.875`, `0.5` became `1.75`).
#[test]
fn bfloat16_scalar_constants_keep_their_values() {
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3,), "float32")):
        b = R.astype(x, "bfloat16")
        y = R.subtract(b, R.const(1.0, "bfloat16"))
        z = R.add(y, R.const(0.5, "bfloat16"))
        out = R.astype(z, "float32")
        return out
"#;
    let module = parse(src);
    for optimize in [false, true] {
        let e = relax_engine::Engine::new(relax_engine::EngineConfig {
            device: relax_engine::DeviceChoice::Cpu,
            optimize,
            ..relax_engine::EngineConfig::default()
        });
        let out = e
            .run(&module, "main", &[f32s(&[3], vec![2.0, 0.0, -3.0])])
            .unwrap_or_else(|e| panic!("optimize {optimize}: {e}"));
        let got: Vec<f32> = field_or_self(&out)
            .to_array::<f32>()
            .expect("f32")
            .iter()
            .copied()
            .collect();
        assert_eq!(got, [1.5, -0.5, -3.5], "optimize {optimize}");
    }
}

fn field_or_self(v: &Value) -> &relax_engine::Tensor {
    v.as_tensor().expect("tensor")
}

const ROUND: &str = r#"
@R.function
def main(x: R.Tensor((8,), "float32"), h: R.Tensor((8,), "float16")):
    a = R.round(x)
    b = R.round(h)
    c = R.astype(R.round(R.astype(x, "float64")), "float32")
    return (a, b, c)
"#;

/// `R.round` / `T.round` round half to even on every device and dtype, as TVM 0.27
/// (`llvm.nearbyint` on the host; checked with TVM: `[2.5, -2.5, 0.5, 1.5, -0.5, 3.7]`
/// give `[2, -2, 0, 2, -0, 4]` in `float32`, `float64` and `float16`).
#[test]
fn round_is_half_to_even_as_tvm() {
    let v = vec![2.5f32, -2.5, 0.5, 1.5, -0.5, 3.7, -3.5, 1e30];
    let x = f32s(&[8], v.clone());
    let h: Value = ArrayD::from_shape_vec(IxDyn(&[8]), v.iter().map(|&f| half::f16::from_f32(f)).collect())
        .expect("shape")
        .into();
    let want = ["2", "-2", "0", "2", "-0", "4", "-4", "1000000000000000000000000000000"];
    for (dev, engine) in engines() {
        let Ok(out) = engine.run(&parse(ROUND), "main", &[x.clone(), h.clone()]) else {
            // float64 is refused on a GPU without it: check the 32- and 16-bit forms alone.
            let f32_only = ROUND.replace(
                "    c = R.astype(R.round(R.astype(x, \"float64\")), \"float32\")\n",
                "    c = a\n",
            );
            let out = engine
                .run(&parse(&f32_only), "main", &[x.clone(), h.clone()])
                .expect(dev);
            assert_eq!(floats(&out, 0), want, "{dev} float32");
            continue;
        };
        assert_eq!(floats(&out, 0), want, "{dev} float32");
        let f16: Vec<String> = field(&out, 1)
            .to_array::<half::f16>()
            .expect("f16")
            .iter()
            .map(|x| format!("{}", x.to_f32()))
            .collect();
        assert_eq!(f16[..7], want[..7], "{dev} float16");
        assert_eq!(floats(&out, 2), want, "{dev} float64");
    }
}
