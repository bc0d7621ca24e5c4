//! Host results that must agree with the GPU and TVM (docs/semantics.md): mixed
//! bool/float arithmetic, `bitwise_not` on bool, max pooling's padding value, empty
//! convolutions, `arange` with a fractional step into integers, shifts by the bit
//! width or more; and clean errors instead of crashes: shape arithmetic that
//! overflows, recursion whose calls stay under the call limit but whose nesting
//! does not fit the stack.

mod common;

use common::text::{engines, parse};
use ndarray::{ArrayD, IxDyn};
use relax_engine::{ArrayValue as A, Value};

fn field(out: &Value, i: usize) -> &relax_engine::Tensor {
    match out.as_tuple() {
        Some(t) => t[i].as_tensor().expect("tensor"),
        None => out.as_tensor().expect("tensor"),
    }
}

/// Any numeric result as `f64`s.
fn nums(out: &Value, i: usize) -> Vec<f64> {
    fn all<T: Copy + Into<f64>>(a: &ArrayD<T>) -> Vec<f64> {
        a.iter().map(|&x| x.into()).collect()
    }
    match field(out, i).to_array_value().expect("array") {
        A::Bool(a) => a.iter().map(|&b| b as i64 as f64).collect(),
        A::F32(a) => all(&a),
        A::F64(a) => all(&a),
        A::I8(a) => all(&a),
        A::I16(a) => all(&a),
        A::I32(a) => all(&a),
        A::I64(a) => a.iter().map(|&x| x as f64).collect(),
        A::U8(a) => all(&a),
        A::U16(a) => all(&a),
        A::U32(a) => all(&a),
        other => panic!("unexpected array {other:?}"),
    }
}

fn tensor<T: Clone>(shape: &[usize], v: Vec<T>) -> Value
where
    Value: From<ArrayD<T>>,
{
    ArrayD::from_shape_vec(IxDyn(shape), v).expect("shape").into()
}

#[test]
fn mixed_bool_float_arithmetic_keeps_the_float_value_until_the_bool_result() {
    // TVM infers the first operand's dtype (bool): the float result converts to bool
    // as `!= 0` (0.351 is True), not by truncation.
    let src = r#"
@R.function
def main(x: R.Tensor((3,), "bool"), y: R.Tensor((3,), "float32")):
    a = R.add(x, y)
    b = R.multiply(x, y)
    c = R.maximum(x, y)
    return (a, b, c)
"#;
    let x = tensor(&[3], vec![false, true, false]);
    let y = tensor(&[3], vec![0.351f32, -2.5, 0.0]);
    for (dev, e) in engines() {
        let out = e.run(&parse(src), "main", &[x.clone(), y.clone()]).expect(dev);
        assert_eq!(field(&out, 0).dtype(), relax_ir::DataType::BOOL, "{dev}");
        assert_eq!(nums(&out, 0), [1.0, 1.0, 0.0], "{dev} add");
        assert_eq!(nums(&out, 1), [0.0, 1.0, 0.0], "{dev} multiply");
        assert_eq!(nums(&out, 2), [1.0, 1.0, 0.0], "{dev} maximum");
    }
}

#[test]
fn bitwise_not_of_bool_is_logical_not() {
    let src = r#"
@R.function
def main(x: R.Tensor((4,), "bool")):
    return R.bitwise_not(x)
"#;
    let x = tensor(&[4], vec![false, true, true, false]);
    for (dev, e) in engines() {
        let out = e.run(&parse(src), "main", std::slice::from_ref(&x)).expect(dev);
        assert_eq!(nums(&out, 0), [1.0, 0.0, 0.0, 1.0], "{dev}");
    }
}

#[test]
fn max_pool2d_pads_with_the_lowest_float() {
    // TVM 0.27: windows of padding or -inf give -3.4028235e38.
    let src = r#"
@R.function
def main(x: R.Tensor((1, 1, 2, 2), "float32")):
    return R.nn.max_pool2d(x, pool_size=(2, 2), strides=(1, 1), padding=(1, 1, 1, 1))
"#;
    let inf = f32::NEG_INFINITY;
    let x = tensor(&[1, 1, 2, 2], vec![inf, inf, inf, 2.0]);
    let m = f32::MIN as f64;
    for (dev, e) in engines() {
        let out = e.run(&parse(src), "main", std::slice::from_ref(&x)).expect(dev);
        assert_eq!(nums(&out, 0), [m, m, m, m, 2.0, 2.0, m, 2.0, 2.0], "{dev}");
    }
}

#[test]
fn conv2d_with_an_empty_output_returns_the_empty_tensor() {
    // A 3x1 window over 2 padded rows: no output row.
    let src = r#"
@R.function
def main(x: R.Tensor((1, 1, 2, 1), "float32"), w: R.Tensor((1, 1, 3, 1), "float32")):
    return R.nn.conv2d(x, w)
"#;
    let x = tensor(&[1, 1, 2, 1], vec![1.0f32, 2.0]);
    let w = tensor(&[1, 1, 3, 1], vec![1.0f32, 1.0, 1.0]);
    for (dev, e) in engines() {
        let out = e.run(&parse(src), "main", &[x.clone(), w.clone()]).expect(dev);
        assert_eq!(field(&out, 0).shape(), [1, 1, 0, 1], "{dev}");
    }
}

#[test]
fn arange_into_integers_follows_numpy_at_every_size() {
    // numpy (and TVM's folding): the first two values cast, then their difference.
    for (end, n) in [(8, 8usize), (65536, 131064)] {
        let src = format!(
            r#"
@R.function
def main():
    return R.arange(4, {end}, 0.5, "int32")
"#
        );
        for (dev, e) in engines() {
            let out = e.run(&parse(&src), "main", &[]).expect(dev);
            let v = nums(&out, 0);
            assert_eq!(v.len(), n, "{dev} {end}");
            assert!(v.iter().all(|&x| x == 4.0), "{dev} {end}: {:?}", &v[..8]);
        }
    }
    let src = r#"
@R.function
def main():
    return (R.arange(-1.5, 3, 0.7, "int32"), R.arange(4.7, 10, 0.5, "int64"))
"#;
    for (dev, e) in engines() {
        let out = e.run(&parse(src), "main", &[]).expect(dev);
        assert_eq!(nums(&out, 0), [-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "{dev}");
        let want: Vec<f64> = (4..15).map(|x| x as f64).collect();
        assert_eq!(nums(&out, 1), want, "{dev}");
    }
}

#[test]
fn shifts_by_the_bit_width_or_more_shift_every_bit_out() {
    let src = r#"
@R.function
def main(x: R.Tensor((4,), "int8"), s: R.Tensor((4,), "int8")):
    return (R.left_shift(x, s), R.right_shift(x, s))
"#;
    let x = tensor(&[4], vec![-8i8, 8, -8, 3]);
    let s = tensor(&[4], vec![8i8, 8, 9, 1]);
    for (dev, e) in engines() {
        let out = e.run(&parse(src), "main", &[x.clone(), s.clone()]).expect(dev);
        assert_eq!(nums(&out, 0), [0.0, 0.0, 0.0, 6.0], "{dev} left_shift");
        assert_eq!(nums(&out, 1), [-1.0, 0.0, -1.0, 1.0], "{dev} right_shift");
    }
}

#[test]
fn shape_arithmetic_overflow_is_an_error() {
    // `T.floordiv(-2**63, n - 3)` with n = 2 (`x` binds n).
    let src = r#"
n = TypeVar("n")
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((n,), "float32"), y: R.Tensor((T.floordiv(T.int64(-9223372036854775807) - T.int64(1), n - T.int64(3)),), "float32")):
        return x
"#;
    let x = tensor(&[2], vec![1.0f32, 2.0]);
    let y = tensor(&[1], vec![1.0f32]);
    for (dev, e) in engines() {
        let r = e.run(&parse(src), "main", &[x.clone(), y.clone()]);
        let err = r.expect_err(dev).to_string();
        assert!(err.contains("overflow"), "{dev}: {err}");
    }
}

#[test]
fn recursion_inside_nested_ifs_fails_cleanly_when_the_stack_runs_out() {
    // Under the call limit (10,000 calls) but 15 nested `if`s per call.
    let text = common::texts::recursion_in_nested_ifs("f", 15);
    let module = match relax_ir::text::parse(&text) {
        Ok(p) => p.into_module(),
        Err(d) => panic!("{}\n{text}", d.render("t.py", &text, false)),
    };
    for depth in [3i64, 9_900] {
        let n = tensor(&[], vec![depth]);
        for (dev, e) in engines() {
            match e.run(&module, "f", std::slice::from_ref(&n)) {
                Ok(v) => assert_eq!(nums(&v, 0), [0.0], "{dev}"),
                Err(err) => {
                    let err = err.to_string();
                    assert!(depth > 3 && err.contains("nested too deeply"), "{dev}: {err}");
                }
            }
        }
    }
    // On a small run stack the same recursion cannot fit: a clean error.
    let small = relax_engine::Engine::new(relax_engine::EngineConfig {
        device: relax_engine::DeviceChoice::Cpu,
        stack_size: 8 << 20,
        ..relax_engine::EngineConfig::default()
    });
    let err = small
        .run(&module, "f", &[tensor(&[], vec![9_900i64])])
        .expect_err("does not fit in 8 MiB")
        .to_string();
    assert!(err.contains("nested too deeply"), "{err}");
}

/// A PrimFunc whose loop runs to a variable nothing binds (`n = T.int64()` that no
/// buffer shape defines) is refused on every device with TVM's message; the host once
/// ran it zero times and returned the output's uninitialised memory.
#[test]
fn a_loop_over_an_unbound_variable_is_refused_on_every_device() {
    let src = r#"
@I.ir_module
class Module:
    @T.prim_func
    def fill(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
        n = T.int64()
        for i in range(n):
            b[i] = a[i] + T.float32(1)

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        cls = Module
        y = R.call_tir(cls.fill, (x,), out_sinfo=R.Tensor((4,), "float32"))
        return y
"#;
    let x = tensor(&[4], vec![1.0f32, 2.0, 3.0, 4.0]);
    for (dev, e) in engines() {
        let err = e
            .run(&parse(src), "main", std::slice::from_ref(&x))
            .expect_err(dev)
            .to_string();
        assert!(err.contains("undefined variable `n`"), "{dev}: {err}");
    }
}
