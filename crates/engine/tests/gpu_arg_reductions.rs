//! `argmax` / `argmin` past a shader's loop limit and with TVM's tie and NaN rules:
//! each runs on the host and, when a wgpu adapter exists (Mesa's lavapipe counts),
//! on the GPU, and both must give the values of TVM 0.27's serial loop (the first
//! index of the extreme value; a NaN replaces the accumulator and the next element
//! replaces the NaN; the init value (-1, lowest value) wins ties with itself).

mod common;

use common::text::{engines, parse};
use ndarray::{ArrayD, IxDyn};
use relax_engine::{ArrayValue, Value};

fn tensor<T: relax_engine::Element>(shape: &[usize], v: Vec<T>) -> Value {
    relax_engine::Tensor::from_array(&ArrayD::from_shape_vec(IxDyn(shape), v).expect("shape")).into()
}

/// Output `i` of a tuple result as int64 values.
fn indices(out: &Value, i: usize) -> Vec<i64> {
    let t = out.as_tuple().expect("tuple")[i].as_tensor().expect("tensor");
    match t.to_array_value().expect("array") {
        ArrayValue::I64(a) => a.iter().copied().collect(),
        other => panic!("not int64: {other:?}"),
    }
}

/// Run `src`'s `main` on every device.
fn run_all(src: &str, args: &[Value]) -> Vec<(&'static str, Value)> {
    let module = parse(src);
    engines()
        .into_iter()
        .map(|(dev, e)| {
            let out = e.run(&module, "main", args).unwrap_or_else(|e| panic!("{dev}: {e}"));
            (dev, out)
        })
        .collect()
}

const ARANGE: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main():
        a = R.arange(0, 8388481, 1, "float32")
        b = R.arange(0, 8388481, 1, "int32")
        return (R.argmax(a), R.argmin(a), R.argmax(b), R.argmin(b))
"#;

/// More elements than 65,535 loop trips x 128 threads: every element is read.
#[test]
fn argmax_and_argmin_past_two_to_the_23() {
    for (dev, out) in run_all(ARANGE, &[]) {
        // TVM: 8388480, 0, 8388480, 0
        for (i, want) in [8388480, 0, 8388480, 0].into_iter().enumerate() {
            assert_eq!(indices(&out, i), [want], "{dev} output {i}");
        }
    }
}

const LONG: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((9000001,), "float32")):
        return (R.argmax(x), R.argmin(x))
"#;

/// Ties go to the first index, also across the chunks threads take; a NaN is
/// taken and then replaced by the next element, so the result comes from the
/// elements after the last NaN.
#[test]
fn long_argmax_ties_and_nans_follow_the_serial_loop() {
    let n = 9_000_001usize;
    let mut v = vec![0.0f32; n];
    // Ties far apart: the first wins.
    for p in [70_001, 4_000_000, 8_999_999] {
        v[p] = 7.0;
        v[p + 1] = -7.0;
    }
    for (dev, out) in run_all(LONG, &[tensor(&[n], v.clone())]) {
        // TVM: 70001, 70002
        assert_eq!(indices(&out, 0), [70_001], "{dev} argmax");
        assert_eq!(indices(&out, 1), [70_002], "{dev} argmin");
    }
    // A NaN in the middle: the extremes before it no longer count.
    v[5_000_000] = f32::NAN;
    for (dev, out) in run_all(LONG, &[tensor(&[n], v.clone())]) {
        // TVM's loop: 8999999, 9000000
        assert_eq!(indices(&out, 0), [8_999_999], "{dev} argmax after a NaN");
        assert_eq!(indices(&out, 1), [9_000_000], "{dev} argmin after a NaN");
    }
    // A NaN last: it is the result.
    v[n - 1] = f32::NAN;
    for (dev, out) in run_all(LONG, &[tensor(&[n], v)]) {
        assert_eq!(indices(&out, 0), [9_000_000], "{dev} argmax, NaN last");
        assert_eq!(indices(&out, 1), [9_000_000], "{dev} argmin, NaN last");
    }
}

const ROWS: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 1000), "float32"), y: R.Tensor((4, 300), "int32")):
        return (R.argmax(x, axis=1), R.argmin(x, axis=1), R.argmax(y, axis=1), R.argmin(y, axis=1, keepdims=True))
"#;

/// Few outputs over many elements (one workgroup per output): NaN patterns in
/// every chunk position, ties, and integers at the init value.
#[test]
fn argmax_rows_with_nans_ties_and_the_init_value() {
    let mut x = vec![0.0f32; 3000];
    // Row 0: NaN early, then a maximum and a minimum.
    x[5] = f32::NAN;
    x[600] = 3.0;
    x[601] = -3.0;
    // Row 1: a maximum, then NaNs, the last at 1998, then equal values.
    x[1000 + 10] = 9.0;
    x[1000 + 500] = f32::NAN;
    x[1000 + 998] = f32::NAN;
    x[1000 + 999] = 1.0;
    // Row 2: -inf everywhere but one +inf, ties of +inf.
    for e in &mut x[2000..3000] {
        *e = f32::NEG_INFINITY;
    }
    x[2000 + 100] = f32::INFINITY;
    x[2000 + 900] = f32::INFINITY;
    let mut y = vec![0i32; 1200];
    // Row 0: all int32 min (ties with the init keep -1 for argmax).
    for e in &mut y[0..300] {
        *e = i32::MIN;
    }
    // Row 1: ascending; row 2: descending; row 3: max at both ends.
    for i in 0..300 {
        y[300 + i] = i as i32;
        y[600 + i] = -(i as i32);
    }
    y[900] = i32::MAX;
    y[1199] = i32::MAX;
    let args = [tensor(&[3, 1000], x), tensor(&[4, 300], y)];
    for (dev, out) in run_all(ROWS, &args) {
        // TVM 0.27 (the serial loop): [600, 999, 100], [601, 999, 0]
        assert_eq!(indices(&out, 0), [600, 999, 100], "{dev} argmax rows");
        assert_eq!(indices(&out, 1), [601, 999, 0], "{dev} argmin rows");
        // TVM: [-1, 299, 0, 0] and [[0], [0], [299], [1]]
        assert_eq!(indices(&out, 2), [-1, 299, 0, 0], "{dev} int argmax");
        assert_eq!(indices(&out, 3), [0, 0, 299, 1], "{dev} int argmin");
    }
}
