//! Disagreements the differential harness (`tests/differential.rs`) found in a long
//! run, each reduced to a small program: every host path (the reference path without
//! optimizations, the default pipeline with the host kernel library) and the GPU
//! (when a wgpu adapter exists; Mesa's lavapipe counts) must give the same values, or
//! the same error. Values are TVM 0.27's where it defines them (quoted), else the
//! rule `docs/semantics.md` states.

mod common;

use common::text::{gpu_engine, run_on, strings, strs};
use half::f16;
use ndarray::{ArrayD, IxDyn};
use relax_engine::{DeviceChoice, Engine, EngineConfig, Value};

fn tensor<T: Clone>(shape: &[usize], v: Vec<T>) -> Value
where
    Value: From<ArrayD<T>>,
{
    ArrayD::from_shape_vec(IxDyn(shape), v).expect("shape").into()
}

/// The reference path (no optimizations: one legalized kernel per operator), the
/// default host pipeline (fused kernels and the host kernel library), and the GPU.
fn engines() -> Vec<(&'static str, Engine)> {
    let cpu = |optimize| {
        Engine::new(EngineConfig {
            device: DeviceChoice::Cpu,
            optimize,
            ..EngineConfig::default()
        })
    };
    let mut v = vec![("reference", cpu(false)), ("host", cpu(true))];
    v.extend(gpu_engine("GPU not checked").map(|e| ("gpu", e)));
    v
}

fn run_all(src: &str, args: &[Value]) -> Vec<(&'static str, Result<Value, String>)> {
    run_on(engines(), src, args)
}

const TAKE: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 2), "float32"), i: R.Tensor((2,), "int32"), y: R.Tensor(("n", 3), "int64")):
        n = T.int64()
        a = R.take(x, i, axis=0)
        b = R.take(y, i, axis=0)
        return (a, b)
"#;

/// An int32 index of -2^31 times a row stride of 2 is -2^32: the GPU computed it in
/// 32 bits, where it wraps to 0, and read row 0. The index of a checked access is
/// computed in 64 bits, so it fails on every device.
#[test]
fn take_index_times_stride_does_not_wrap() {
    let x = tensor(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0]);
    let y = tensor(&[3, 3], (0..9i64).collect());
    let i = tensor(&[2], vec![i32::MIN, 1]);
    for (dev, out) in run_all(TAKE, &[x.clone(), i, y.clone()]) {
        let e = out.expect_err(dev);
        // The legalized kernel's checked read, or the host library's row copy
        // (`relax_host.take_rows`) naming the index: never a read of a wrapped one.
        assert!(
            (e.contains("out-of-bounds read of `") && e.contains("` at -4294967296 (size 4)"))
                || e.contains("index -2147483648 is outside [0, 2)"),
            "{dev}: {e}"
        );
    }
    let i = tensor(&[2], vec![1i32, 0]);
    for (dev, out) in run_all(TAKE, &[x.clone(), i, y.clone()]) {
        let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(strings(&out, Some(0)), strs(&["3", "4", "1", "2"]), "{dev}");
        assert_eq!(strings(&out, Some(1)), strs(&["3", "4", "5", "0", "1", "2"]), "{dev}");
    }
}

const NAN_COMPARE: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32"), h: R.Tensor((4,), "float16")):
        ne = R.not_equal(x, y)
        nx = R.not_equal(x, x)
        eq = R.equal(x, x)
        le = R.less_equal(x, x)
        lt = R.less(x, y)
        hn = R.not_equal(h, h)
        return (ne, nx, eq, le, lt, hn)
"#;

/// Comparisons with a NaN operand are IEEE's on every device: `!=` is true, every
/// other comparison false (the GPU driver folded `x != x` to false and `x == x` to
/// true). TVM's LLVM build compares `!=` ordered (`[False, False, False, False]` for
/// the first output); `docs/semantics.md` keeps IEEE.
#[test]
fn comparisons_with_nan_are_ieee_on_every_device() {
    let nan = f32::NAN;
    let x = tensor(&[4], vec![nan, 1.0, nan, f32::INFINITY]);
    let y = tensor(&[4], vec![1.0f32, nan, nan, f32::INFINITY]);
    let h = tensor(&[4], vec![f16::NAN, f16::ONE, f16::INFINITY, f16::ZERO]);
    for (dev, out) in run_all(NAN_COMPARE, &[x.clone(), y.clone(), h.clone()]) {
        let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(
            strings(&out, Some(0)),
            strs(&["true", "true", "true", "false"]),
            "{dev} x != y"
        );
        assert_eq!(
            strings(&out, Some(1)),
            strs(&["true", "false", "true", "false"]),
            "{dev} x != x"
        );
        assert_eq!(
            strings(&out, Some(2)),
            strs(&["false", "true", "false", "true"]),
            "{dev} x == x"
        );
        assert_eq!(
            strings(&out, Some(3)),
            strs(&["false", "true", "false", "true"]),
            "{dev} x <= x"
        );
        assert_eq!(
            strings(&out, Some(4)),
            strs(&["false", "false", "false", "false"]),
            "{dev} x < y"
        );
        assert_eq!(
            strings(&out, Some(5)),
            strs(&["true", "false", "false", "false"]),
            "{dev} f16 h != h"
        );
    }
}

const MIXED_BOOL: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(m: R.Tensor((3,), "bool"), h: R.Tensor((3,), "float16"), u: R.Tensor((3,), "uint64"), b8: R.Tensor((3,), "uint8")):
        a = R.minimum(m, h)
        b = R.add(m, h)
        c = R.multiply(m, h)
        d = R.minimum(m, u)
        e = R.subtract(m, u)
        f = R.add(m, b8)
        return (a, b, c, d, e, f)
"#;

/// A bool first operand with a float16 or uint64 second: the operation runs in the
/// second operand's dtype and the result becomes a bool as `!= 0` (TVM computes
/// `min(float16(False), -0.0625)` = -0.0625, true). The host truncated the float16
/// result and ordered uint64 as signed (`min(False, 2^64 - 1)` was true); a uint8
/// sum wraps at 8 bits (`True + 255` is 0, false; TVM computes it in uint8).
#[test]
fn bool_with_float16_and_uint64_operands() {
    let m = tensor(&[3], vec![false, true, false]);
    let h = tensor(
        &[3],
        vec![f16::from_f32(-0.0625), f16::from_f32(0.5), f16::from_f32(0.351)],
    );
    let u = tensor(&[3], vec![u64::MAX, 0, 5]);
    let b8 = tensor(&[3], vec![255u8, 255, 3]);
    for (dev, out) in run_all(MIXED_BOOL, &[m.clone(), h.clone(), u.clone(), b8.clone()]) {
        let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(
            strings(&out, Some(0)),
            strs(&["true", "true", "false"]),
            "{dev} minimum(m, h)"
        );
        assert_eq!(
            strings(&out, Some(1)),
            strs(&["true", "true", "true"]),
            "{dev} add(m, h)"
        );
        assert_eq!(
            strings(&out, Some(2)),
            strs(&["false", "true", "false"]),
            "{dev} multiply(m, h)"
        );
        assert_eq!(
            strings(&out, Some(3)),
            strs(&["false", "false", "false"]),
            "{dev} minimum(m, u)"
        );
        assert_eq!(
            strings(&out, Some(4)),
            strs(&["true", "true", "true"]),
            "{dev} subtract(m, u)"
        );
        assert_eq!(
            strings(&out, Some(5)),
            strs(&["true", "false", "true"]),
            "{dev} add(m, b8)"
        );
    }
}

const WIDE_SHIFTS: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "int64"), u: R.Tensor((3,), "uint64")):
        l = R.left_shift(x, x)
        r = R.right_shift(x, x)
        v = R.right_shift(u, u)
        w = R.left_shift(u, u)
        return (l, r, v, w)
"#;

/// A 64-bit shift count is judged at its full width: -2^63 and 2^64 - 1 shift every
/// bit out (numpy's rule). The GPU narrowed the count to 32 bits first (-2^63 became
/// 0, which shifted nothing).
#[test]
fn shifts_by_64_bit_counts_are_judged_at_full_width() {
    let x = tensor(&[4], vec![i64::MIN, 3, -8, 70]);
    let u = tensor(&[3], vec![u64::MAX, 2, 1 << 40]);
    for (dev, out) in run_all(WIDE_SHIFTS, &[x.clone(), u.clone()]) {
        let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(strings(&out, Some(0)), strs(&["0", "24", "0", "0"]), "{dev} x << x");
        assert_eq!(strings(&out, Some(1)), strs(&["-1", "0", "-1", "0"]), "{dev} x >> x");
        assert_eq!(strings(&out, Some(2)), strs(&["0", "0", "0"]), "{dev} u >> u");
        assert_eq!(strings(&out, Some(3)), strs(&["0", "8", "0"]), "{dev} u << u");
    }
}

const TRIANGLES: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        n = T.int64()
        a = R.tril(x, k=-2147483647)
        b = R.triu(x, k=2147483647)
        c = R.tril(x, k=2147483647)
        return (a, b, c)
"#;

/// A diagonal offset beyond a matrix of symbolic rows: the mask compares widened
/// 32-bit indices with 2^30, which lavapipe judged true for every element
/// (`i64(x) >= 16777216li` is true for every `x` there). TVM: zeros, zeros, `x`.
#[test]
fn triangles_of_symbolic_matrices_with_extreme_diagonals() {
    let x = tensor(&[2, 4], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    for (dev, out) in run_all(TRIANGLES, std::slice::from_ref(&x)) {
        let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(strings(&out, Some(0)), strs(&["0"; 8]), "{dev} tril");
        assert_eq!(strings(&out, Some(1)), strs(&["0"; 8]), "{dev} triu");
        assert_eq!(
            strings(&out, Some(2)),
            strs(&["1", "2", "3", "4", "5", "6", "7", "8"]),
            "{dev} tril"
        );
    }
}

const WIDENED_COMPARE: &str = r#"
@I.ir_module
class Module:
    @T.prim_func
    def k(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32"), C: T.Buffer((4,), "int32")):
        for i in range(4):
            with T.block("b"):
                vi = T.axis.spatial(4, i)
                B[vi] = T.Select(T.Cast("int64", A[vi]) >= T.int64(16777216), 1, 0)
                C[vi] = T.Select(T.Cast("int64", A[vi]) <= T.int64(1073741824), 1, 0)

    @R.function
    def main(a: R.Tensor((4,), "int32")):
        cls = Module
        r = R.call_tir(cls.k, (a,), out_sinfo=[R.Tensor((4,), "int32"), R.Tensor((4,), "int32")])
        return r
"#;

/// The comparison above in a hand-written kernel.
#[test]
fn widened_index_compared_with_a_large_constant() {
    let a = tensor(&[4], vec![0i32, 16777216, 1073741825, -5]);
    for (dev, out) in run_all(WIDENED_COMPARE, std::slice::from_ref(&a)) {
        let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(strings(&out, Some(0)), strs(&["0", "1", "1", "0"]), "{dev} >= 2^24");
        assert_eq!(strings(&out, Some(1)), strs(&["1", "1", "0", "1"]), "{dev} <= 2^30");
    }
}

const CONV_OVERFLOW: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 3, 2), "float32"), w: R.Tensor((3, 1, 5, 2), "float32")):
        y = R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 0, 1, 0])
        return y
"#;

/// `conv2d` whose products overflow: TVM multiplies and adds in order, so `inf +
/// -inf` is NaN in the third channel (TVM: `[inf, inf, nan]`); the host library's
/// fused multiply-adds gave `inf`. Such data takes the library's exact loop.
#[test]
fn conv2d_overflowing_products_sum_as_tvm() {
    let big = 3.4028235e38f32;
    let x = tensor(&[1, 1, 3, 2], vec![3.9375f32, 1.5625, big, 3.4375, 1.4375, big]);
    #[rustfmt::skip]
    let w = tensor(&[3, 1, 5, 2], vec![
        2.0625f32, 0.75, 2.4375, -3.6875, 4.0625, -0.875, -0.5, big, big, 2.1875,
        -4.8125, -0.5625, 3.375, 0.5, -0.125, 2.6875, -4.75, 4.8125, -1.4375, -0.0,
        4.6875, 4.0625, -2.375, -1.6875, 4.5, 1.8125, -5.0, -3.9375, 2.8125, -2.1875,
    ]);
    for (dev, out) in run_all(CONV_OVERFLOW, &[x.clone(), w.clone()]) {
        let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(strings(&out, None), strs(&["inf", "inf", "NaN"]), "{dev}");
    }
}

const MIN_MAX: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 2), "float32")):
        a = R.min(x, axis=[1], keepdims=False)
        b = R.max(x, axis=[1], keepdims=False)
        return (a, b)
"#;

/// `min` starts from the highest float32 and `max` from the lowest, TVM's initial
/// values (as the legalized reduction), and NaN is skipped: `min([inf, NaN])` is
/// 3.4028235e38 on every path (the host library started from `inf`).
#[test]
fn min_and_max_start_from_the_float_range() {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let x = tensor(&[3, 2], vec![inf, nan, -inf, -inf, 1.0, 2.0]);
    for (dev, out) in run_all(MIN_MAX, std::slice::from_ref(&x)) {
        let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(
            strings(&out, Some(0)),
            strs(&["340282350000000000000000000000000000000", "-inf", "1"]),
            "{dev} min"
        );
        assert_eq!(
            strings(&out, Some(1)),
            strs(&["inf", "-340282350000000000000000000000000000000", "2"]),
            "{dev} max"
        );
    }
}

const TIMES_ZERO: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((5,), "float32")):
        a = R.multiply(x, R.const(0, "float32"))
        b = R.multiply(R.const(-0.0, "float32"), x)
        return (a, b)
"#;

/// `x * 0.0` is NaN for an infinite or NaN `x` on every device, with IEEE's sign
/// of zero otherwise (drivers fold `x * 0.0` to `0`).
#[test]
fn times_a_zero_constant_is_ieee_on_every_device() {
    let x = tensor(&[5], vec![f32::INFINITY, f32::NAN, -2.0, 3.0, f32::NEG_INFINITY]);
    for (dev, out) in run_all(TIMES_ZERO, std::slice::from_ref(&x)) {
        let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(
            strings(&out, Some(0)),
            strs(&["NaN", "NaN", "-0", "0", "NaN"]),
            "{dev} x * 0"
        );
        assert_eq!(
            strings(&out, Some(1)),
            strs(&["NaN", "NaN", "0", "-0", "NaN"]),
            "{dev} -0 * x"
        );
    }
}

const TAKE_NEGATIVE: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 1), "float32"), i: R.Tensor((3,), "int32")):
        n = T.int64()
        y = R.take(x, i, axis=0)
        return y
"#;

/// An index of -1 into rows of one element: the GPU's 64-bit check `i >= 0` of the
/// widened index was true for -1 on lavapipe (64-bit comparisons of sign-extended
/// 32-bit values are judged on 32-bit halves instead), so the read went unreported.
#[test]
fn negative_take_index_into_single_element_rows_fails() {
    let x = tensor(&[1, 1], vec![1.5f32]);
    let i = tensor(&[3], vec![0i32, -1, 0]);
    for (dev, out) in run_all(TAKE_NEGATIVE, &[x.clone(), i]) {
        let e = out.expect_err(dev);
        assert!(
            e.contains("out-of-bounds read of `") && e.contains("` at -1 (size 1)"),
            "{dev}: {e}"
        );
    }
    let i = tensor(&[3], vec![0i32, 0, 0]);
    for (dev, out) in run_all(TAKE_NEGATIVE, &[x.clone(), i]) {
        let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(strings(&out, None), strs(&["1.5", "1.5", "1.5"]), "{dev}");
    }
}

const UINT32_TO_INT64: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3,), "uint32")):
        a = R.astype(x, "int64")
        b = R.add(a, R.const(2, "int64"))
        return (a, b)
"#;

/// `uint32` to `int64` zero-extends (TVM: 4294967295 stays 4294967295): the GPU kept
/// the value in 32-bit index arithmetic, and WGSL's `i64(u32)` sign-extended on
/// lavapipe, giving -1.
#[test]
fn uint32_to_int64_zero_extends() {
    let x = tensor(&[3], vec![u32::MAX, 2147483654, 7]);
    for (dev, out) in run_all(UINT32_TO_INT64, std::slice::from_ref(&x)) {
        let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(
            strings(&out, Some(0)),
            strs(&["4294967295", "2147483654", "7"]),
            "{dev}"
        );
        assert_eq!(
            strings(&out, Some(1)),
            strs(&["4294967297", "2147483656", "9"]),
            "{dev}"
        );
    }
}

const EXP_TINY: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((6,), "float32")):
        e = R.exp(x)
        u = R.astype(e, "uint8")
        return (e, u)
"#;

/// `exp` of an argument within `2^-25` of zero is `1.0`, as the correctly rounded
/// `expf` of the host gives (TVM: `exp(-1e-40)` is `1.0`, cast to `uint8` `1`); the
/// GPU's exp gave `0.99999994` for tiny negative arguments, which the cast truncated
/// to `0`.
#[test]
fn exp_of_a_tiny_argument_is_one_on_every_device() {
    let t = 2.0f32.powi(-25);
    let x = tensor(&[6], vec![-1e-40f32, -t, t, -0.0, 1e-30, -1e-20]);
    for (dev, out) in run_all(EXP_TINY, std::slice::from_ref(&x)) {
        let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(strings(&out, Some(0)), strs(&["1"; 6]), "{dev} exp");
        assert_eq!(strings(&out, Some(1)), strs(&["1"; 6]), "{dev} uint8");
    }
}

const MATMUL_OVERFLOW: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), "float32"), y: R.Tensor((3, "n"), "float32")):
        n = T.int64()
        a = R.matmul(x, R.permute_dims(x, axes=[1, 0]))
        b = R.matmul(x, y)
        return (a, b)
"#;

/// `m x k` times `k x n`, both row-major, as TVM's legalized loop sums it: in order of
/// `k`, each product rounded before it is added, from 0.
fn matmul_in_order(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f32;
            for kk in 0..k {
                let p = a[i * k + kk] * b[kk * n + j];
                acc += p;
            }
            out[i * n + j] = acc;
        }
    }
    out
}

/// `matmul` whose products overflow (case 1707 of seed 20261130): `0.6875 * inf +
/// -3.375 * 3.4e38` is `inf + -inf = NaN` in TVM's order. The reference path's GEMM
/// (`matrixmultiply`'s fused multiply-adds) gave `inf`, and so did the kernel
/// library's matrix-vector product of `x @ y`; with more rows (the library's GEMM)
/// too. Both recompute such outputs in order.
#[test]
fn matmul_overflowing_products_sum_as_tvm() {
    let (inf, big) = (f32::INFINITY, 3.4028235e38f32);
    #[rustfmt::skip]
    let rows: Vec<f32> = vec![
        0.6875, -3.375, 1.0, -3.625, -1.5625, inf, -1.9375, -3.75, -2.1875, inf, big, 4.625,
        2.0, -big, 0.5, -0.0, 1.5, -inf,
    ];
    // TVM 0.27 (`tvm.compile(mod, "llvm")`) for the first four rows.
    #[rustfmt::skip]
    let tvm: Vec<f32> = vec![
        12.863281, inf, 9.136719, f32::NAN, inf, inf, -inf, f32::NAN,
        9.136719, -inf, 22.601562, -inf, f32::NAN, f32::NAN, -inf, inf,
    ];
    let want4: Vec<String> = tvm.iter().map(|v| v.to_string()).collect();
    for n in [4usize, 6] {
        let a = &rows[..n * 3];
        let at: Vec<f32> = (0..3 * n).map(|q| a[(q % n) * 3 + q / n]).collect();
        let want: Vec<String> = matmul_in_order(a, &at, n, 3, n).iter().map(|v| v.to_string()).collect();
        if n == 4 {
            assert_eq!(want, want4, "the in-order loop is TVM's");
        }
        let (x, y) = (tensor(&[n, 3], a.to_vec()), tensor(&[3, n], at));
        for (dev, out) in run_all(MATMUL_OVERFLOW, &[x.clone(), y.clone()]) {
            let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
            assert_eq!(strings(&out, Some(0)), want, "{dev} x @ x^T, {n} rows");
            assert_eq!(strings(&out, Some(1)), want, "{dev} x @ y, {n} rows");
        }
    }
}

/// Case 1306 of seed 20261202: a store through `T.Cast("uint16", ...)` of a value that
/// does not vary across threads went unchecked on the GPU (the write at 32767 was
/// dropped and the run succeeded) while the host refused it. The static check now
/// follows unsigned narrowing casts, and an index with a narrowing cast is checked at
/// run time whether it varies or not (here through the shape variable `n`).
#[test]
fn uniform_narrowing_cast_index_is_checked_on_every_device() {
    let fixed = r#"
@I.ir_module
class Module:
    @T.prim_func
    def k(A: T.Buffer((151,), "float32"), B: T.Buffer((191,), "float32")):
        for j in range(191):
            with T.block("z"):
                vj = T.axis.spatial(191, j)
                B[vj] = A[0] * T.float32(0)
        for i in range(1):
            with T.block("b"):
                vi = T.axis.spatial(1, i)
                B[T.Cast("int32", T.Cast("uint16", vi * 257 + 32767))] = A[0]
    @R.function
    def main(x: R.Tensor((151,), "float32")):
        cls = Module
        y = R.call_tir(cls.k, (x,), out_sinfo=R.Tensor((191,), "float32"))
        return y
"#;
    let x = tensor(&[151], vec![1.0f32; 151]);
    for (dev, out) in run_all(fixed, std::slice::from_ref(&x)) {
        let e = out.expect_err(dev);
        assert!(
            e.contains("out-of-bounds write of `B` at 32767 (size 191)"),
            "{dev}: {e}"
        );
    }
    let symbolic = r#"
@I.ir_module
class Module:
    @T.prim_func
    def k(a: T.handle, B: T.Buffer((191,), "float32")):
        n = T.int32()
        A = T.match_buffer(a, (n,), "float32")
        for j in range(191):
            with T.block("z"):
                vj = T.axis.spatial(191, j)
                B[vj] = T.float32(0)
        for i in range(1):
            with T.block("b"):
                vi = T.axis.spatial(1, i)
                B[T.Cast("int32", T.Cast("uint16", vi + n + 32766))] = A[0]
    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        cls = Module
        y = R.call_tir(cls.k, (x,), out_sinfo=R.Tensor((191,), "float32"))
        return y
"#;
    for (n, at) in [(1usize, 32767), (2, 32768)] {
        let x = tensor(&[n], vec![1.0f32; n]);
        for (dev, out) in run_all(symbolic, std::slice::from_ref(&x)) {
            let e = out.expect_err(dev);
            assert!(
                e.contains(&format!("out-of-bounds write of `B` at {at} (size 191)")),
                "{dev} n={n}: {e}"
            );
        }
    }
    // n = 32771: 32771 + 32766 = 65537 wraps to 1 in uint16, in range: B[1] = 1.
    let x = tensor(&[32771], vec![1.0f32; 32771]);
    for (dev, out) in run_all(symbolic, std::slice::from_ref(&x)) {
        let v = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        let t = v.as_tensor().expect("tensor").to_f64_values().expect("values");
        assert_eq!(t[..3], [0.0, 1.0, 0.0], "{dev}");
    }
}

/// A read at a position read from data inside `T.if_then_else` (`roi_align`'s batch
/// index; gathers guarded by a mask) is checked on the GPU where its arm is taken:
/// WGSL's `select` evaluates both arms, so such reads went unchecked and an index past
/// the buffer read robust-access zeros silently while the host failed. Where the
/// arm is not taken (the guard is false), an out-of-range index is no error on any
/// device, as TVM's lazy `if_then_else`.
#[test]
fn reads_in_taken_select_arms_are_checked_on_every_device() {
    let src = r#"
@I.ir_module
class Module:
    @T.prim_func
    def k(A: T.Buffer((8,), "float32"), I: T.Buffer((4,), "int32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("b"):
                vi = T.axis.spatial(4, i)
                B[vi] = T.if_then_else(I[vi] >= 0, A[I[vi] * 2], T.float32(-1))
    @R.function
    def main(a: R.Tensor((8,), "float32"), idx: R.Tensor((4,), "int32")):
        cls = Module
        y = R.call_tir(cls.k, (a, idx), out_sinfo=R.Tensor((4,), "float32"))
        return y
"#;
    let a = tensor(&[8], (0..8).map(|v| v as f32).collect::<Vec<_>>());
    // In range, and a negative index whose arm is not taken (`I[vi] * 2 = -10`).
    for (dev, out) in run_all(src, &[a.clone(), tensor(&[4], vec![0i32, 3, -5, 1])]) {
        let out = out.unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(strings(&out, None), strs(&["0", "6", "-1", "2"]), "{dev}");
    }
    // Taken arm past the end: `A[7 * 2]`.
    for (dev, out) in run_all(src, &[a, tensor(&[4], vec![0i32, 7, 1, 2])]) {
        let e = out.expect_err(dev);
        assert!(e.contains("out-of-bounds read of `A` at 14 (size 8)"), "{dev}: {e}");
    }
}
