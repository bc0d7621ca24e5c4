//! The host's native code (Cranelift) against the closure interpreter on the same
//! PrimFuncs: integer results equal, float results within a few ulps (f32 math
//! runs in f32 natively, in f64 then rounded in the interpreter), the same errors,
//! and golden values for the edge cases of docs/semantics.md.

use std::sync::Arc;

use relax_ir::{BaseFunc, DataType, PrimFunc};
use relax_jit::internals::lower;
use relax_jit::internals::native_counters;
use relax_jit::{HostKernel, HostTensor, JitError, KernelArg};

mod common;
use common::{f32_bytes, f32_values, read, write};

const SRC: &str = r#"
@I.ir_module
class Module:
    @T.prim_func
    def int_ops(a: T.handle, b: T.handle, q: T.handle, r: T.handle, fq: T.handle, fr: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "int32")
        B = T.match_buffer(b, (n,), "int32")
        Q = T.match_buffer(q, (n,), "int32")
        R = T.match_buffer(r, (n,), "int32")
        FQ = T.match_buffer(fq, (n,), "int32")
        FR = T.match_buffer(fr, (n,), "int32")
        for i in T.parallel(n):
            Q[i] = T.truncdiv(A[i], B[i])
            R[i] = T.truncmod(A[i], B[i])
            FQ[i] = A[i] // B[i]
            FR[i] = A[i] % B[i]

    @T.prim_func
    def small_ints(a: T.Buffer((6,), "int8"), b: T.Buffer((6,), "int8"), c: T.Buffer((6,), "int8"), d: T.Buffer((6,), "uint8"), e: T.Buffer((6,), "int64")):
        for i in range(6):
            c[i] = a[i] * b[i] + T.shift_left(a[i], T.int8(3))
            d[i] = T.Cast("uint8", a[i]) + T.uint8(200)
            e[i] = T.Cast("int64", a[i]) * T.int64(4294967296) + T.bitwise_xor(T.Cast("int64", b[i]), T.int64(5)) // T.int64(4)

    @T.prim_func
    def casts(x: T.Buffer((7,), "float32"), i8: T.Buffer((7,), "int8"), u8: T.Buffer((7,), "uint8"), i32: T.Buffer((7,), "int32"), i64: T.Buffer((7,), "int64"), b: T.Buffer((7,), "bool"), f64: T.Buffer((7,), "float64")):
        for i in range(7):
            i8[i] = T.Cast("int8", x[i])
            u8[i] = T.Cast("uint8", x[i])
            i32[i] = T.Cast("int32", x[i])
            i64[i] = T.Cast("int64", x[i])
            b[i] = T.Cast("bool", x[i])
            f64[i] = T.Cast("float64", x[i]) * T.float64(0.1)

    @T.prim_func
    def floats(x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "float32"), mn: T.Buffer((8,), "float32"), mx: T.Buffer((8,), "float32"), sel: T.Buffer((8,), "float32"), cmp: T.Buffer((8,), "bool"), fm: T.Buffer((8,), "float32")):
        for i in range(8):
            mn[i] = T.min(x[i], y[i])
            mx[i] = T.max(x[i], y[i])
            sel[i] = T.Select(x[i] > y[i], x[i] - y[i], T.if_then_else(x[i] == y[i], T.float32(7), y[i] / x[i]))
            cmp[i] = x[i] <= y[i] or T.isnan(x[i])
            fm[i] = T.floormod(x[i], T.float32(0.75)) + T.floordiv(y[i], T.float32(0.5))

    @T.prim_func
    def math32(x: T.Buffer((64,), "float32"), o: T.Buffer((64, 8), "float32")):
        for i, j in T.grid(64, 8):
            o[i, j] = T.if_then_else(j == 0, T.cos(x[i]), T.if_then_else(j == 1, T.exp(x[i]), T.if_then_else(j == 2, T.tanh(x[i]), T.if_then_else(j == 3, T.sigmoid(x[i]), T.if_then_else(j == 4, T.erf(x[i]), T.if_then_else(j == 5, T.sqrt(T.fabs(x[i])), T.if_then_else(j == 6, T.pow(x[i], T.float32(2)), T.floor(x[i] * T.float32(3.5)))))))))

    @T.prim_func
    def pows(x: T.Buffer((4096,), "float32"), sq: T.Buffer((4096,), "float32"), cu: T.Buffer((4096,), "float32"), h: T.Buffer((4096,), "float16"), g: T.Buffer((4096,), "float32")):
        for i in range(4096):
            sq[i] = T.pow(x[i], T.float32(2))
            cu[i] = T.pow(x[i], T.float32(3))
            h[i] = T.pow(T.Cast("float16", x[i]), T.float16(3))
            g[i] = T.pow(T.fabs(x[i]), T.float32(1.5))

    @T.prim_func
    def pow_by_tensor(x: T.Buffer((4096,), "float32"), e: T.Buffer((), "float32"), o: T.Buffer((4096,), "float32")):
        for i in range(4096):
            o[i] = T.pow(x[i], e[()])

    @T.prim_func
    def tanh32(x: T.Buffer((20000,), "float32"), o: T.Buffer((20000,), "float32")):
        for i in range(20000):
            o[i] = T.tanh(x[i])

    @T.prim_func
    def math64(x: T.Buffer((16,), "float64"), o: T.Buffer((16,), "float64")):
        for i in range(16):
            o[i] = T.exp(x[i]) + T.sqrt(T.fabs(x[i])) + T.floor(x[i]) + T.log1p(T.fabs(x[i])) + T.atan2(x[i], T.float64(0.5))

    @T.prim_func
    def bools(x: T.Buffer((4,), "bool"), y: T.Buffer((4,), "bool"), o: T.Buffer((4,), "bool"), c: T.Buffer((4,), "int32")):
        for i in range(4):
            o[i] = x[i] and not y[i]
            c[i] = T.Cast("int32", x[i]) + T.Cast("int32", y[i]) * 2

    @T.prim_func
    def bcast(a: T.handle, b: T.handle, o: T.handle):
        n = T.int64()
        m = T.int64()
        A = T.match_buffer(a, (n, m), "float32")
        B = T.match_buffer(b, (m,), "float32")
        O = T.match_buffer(o, (n, m), "float32")
        for i in T.parallel(n):
            for j in T.parallel(m):
                O[i, j] = T.max(A[i, j] * B[j], T.float32(0)) + A[i, m - 1 - j]

    @T.prim_func
    def lanes(a: T.handle, b: T.handle, c: T.handle, o: T.handle):
        n = T.int64()
        m = T.int64()
        A = T.match_buffer(a, (n, m), "float32")
        B = T.match_buffer(b, (m,), "float32")
        C = T.match_buffer(c, (n,), "float32")
        O = T.match_buffer(o, (n, m), "float32")
        for i in T.parallel(n):
            for j in T.parallel(m):
                O[i, j] = T.min(T.max(A[i, j] + B[j], T.float32(-0.5)), C[i]) * T.float32(2) - A[i, j] / T.float32(3)

    @T.prim_func
    def half_lanes(a: T.handle, b: T.handle, x: T.handle, o: T.handle, p: T.handle, w: T.handle, v: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float16")
        B = T.match_buffer(b, (n,), "float16")
        X = T.match_buffer(x, (n,), "float32")
        O = T.match_buffer(o, (6, n), "float16")
        P = T.match_buffer(p, (6, n), "float16")
        W = T.match_buffer(w, (n,), "float32")
        V = T.match_buffer(v, (n,), "float32")
        for i in range(n):
            O[0, i] = A[i] * B[i] + T.float16(0.5)
        for i in range(n):
            O[1, i] = T.tanh(A[i]) - T.erf(B[i])
        for i in range(n):
            O[2, i] = T.Cast("float16", X[i])
        for i in range(n):
            O[3, i] = T.Select(A[i] > B[i], T.sqrt(T.fabs(A[i])) / B[i], T.max(A[i], B[i]))
        for i in range(n):
            O[4, i] = T.exp(T.Cast("float16", X[i]) - A[i])
        for i in range(n):
            O[5, i] = T.sigmoid(A[i]) * T.Cast("float16", T.Cast("bfloat16", B[i]))
        for i in range(n):
            W[i] = T.Cast("float32", A[i]) + T.Cast("float32", B[i]) * X[i]
        for i in range(n):
            P[0, n - 1 - i] = A[n - 1 - i] * B[n - 1 - i] + T.float16(0.5)
        for i in range(n):
            P[1, n - 1 - i] = T.tanh(A[n - 1 - i]) - T.erf(B[n - 1 - i])
        for i in range(n):
            P[2, n - 1 - i] = T.Cast("float16", X[n - 1 - i])
        for i in range(n):
            P[3, n - 1 - i] = T.Select(A[n - 1 - i] > B[n - 1 - i], T.sqrt(T.fabs(A[n - 1 - i])) / B[n - 1 - i], T.max(A[n - 1 - i], B[n - 1 - i]))
        for i in range(n):
            P[4, n - 1 - i] = T.exp(T.Cast("float16", X[n - 1 - i]) - A[n - 1 - i])
        for i in range(n):
            P[5, n - 1 - i] = T.sigmoid(A[n - 1 - i]) * T.Cast("float16", T.Cast("bfloat16", B[n - 1 - i]))
        for i in range(n):
            V[n - 1 - i] = T.Cast("float32", A[n - 1 - i]) + T.Cast("float32", B[n - 1 - i]) * X[n - 1 - i]

    @T.prim_func
    def bf16_lanes(a: T.handle, b: T.handle, x: T.handle, o: T.handle, p: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "bfloat16")
        B = T.match_buffer(b, (n,), "bfloat16")
        X = T.match_buffer(x, (n,), "float32")
        O = T.match_buffer(o, (3, n), "bfloat16")
        P = T.match_buffer(p, (3, n), "bfloat16")
        for i in range(n):
            O[0, i] = A[i] * B[i] - T.bfloat16(1)
        for i in range(n):
            O[1, i] = T.Cast("bfloat16", X[i])
        for i in range(n):
            O[2, i] = T.tanh(A[i]) / T.min(A[i], B[i])
        for i in range(n):
            P[0, n - 1 - i] = A[n - 1 - i] * B[n - 1 - i] - T.bfloat16(1)
        for i in range(n):
            P[1, n - 1 - i] = T.Cast("bfloat16", X[n - 1 - i])
        for i in range(n):
            P[2, n - 1 - i] = T.tanh(A[n - 1 - i]) / T.min(A[n - 1 - i], B[n - 1 - i])

    @T.prim_func
    def erf_gelu(x: T.handle, o: T.handle, p: T.handle):
        n = T.int64()
        X = T.match_buffer(x, (n,), "float32")
        O = T.match_buffer(o, (n,), "float32")
        P = T.match_buffer(p, (n,), "float32")
        for i in range(n):
            O[i] = X[i] * T.float32(0.5) * (T.float32(1) + T.erf(X[i] * T.float32(0.70710678118654757)))
        for i in range(n):
            P[n - 1 - i] = X[n - 1 - i] * T.float32(0.5) * (T.float32(1) + T.erf(X[n - 1 - i] * T.float32(0.70710678118654757)))

    @T.prim_func
    def masks(a: T.handle, b: T.handle, o: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        O = T.match_buffer(o, (n, 3), "float32")
        for i in T.parallel(n):
            for j in range(n):
                O[i, 0] = T.Select(T.int64(0) < T.Cast("int64", B[i] < A[i]), A[i], B[i])
        for i, j in T.grid(3, n):
            O[j, i] = T.if_then_else(i == 0, T.Select(T.int64(0) < T.Cast("int64", B[j] < A[j]), A[j], B[j]), T.if_then_else(i == 1, T.Select(A[j] >= T.float32(0) and not B[j] != B[j] or A[j] == B[j], A[j] * B[j], T.float32(-1)), T.Select(T.Cast("int8", A[j] <= B[j]) != T.int8(0), B[j] - A[j], A[j])))

    @T.prim_func
    def where_rows(a: T.handle, b: T.handle, o: T.handle):
        n = T.int64()
        m = T.int64()
        A = T.match_buffer(a, (n, m), "float32")
        B = T.match_buffer(b, (n, m), "float32")
        O = T.match_buffer(o, (n, m), "float32")
        for i in T.parallel(n):
            for j in range(m):
                O[i, j] = T.Select(T.int64(0) < T.Cast("int64", B[i, j] < A[i, j]), A[i, j], T.Select(A[i, j] != A[i, j] or B[i, j] >= T.float32(0.25), B[i, j], T.float32(0.5)))

    @T.prim_func(private=True)
    def argmax_rows(a: T.handle, o: T.handle):
        T.func_attr({"tirx.noalias": True})
        n = T.int64()
        m = T.int64()
        x = T.match_buffer(a, (n, m), "float32")
        x_red = T.match_buffer(o, (n,), "int64")
        x_red_temp_v0 = T.alloc_buffer((n,), "int64")
        x_red_temp_v1 = T.alloc_buffer((n,))
        for ax0, k1 in T.grid(n, m):
            with T.sblock("x_red_temp"):
                v_ax0, v_k1 = T.axis.remap("SR", [ax0, k1])
                T.reads(x[v_ax0, v_k1])
                T.writes(x_red_temp_v0[v_ax0], x_red_temp_v1[v_ax0])
                with T.init():
                    x_red_temp_v0[v_ax0] = T.int64(-1)
                    x_red_temp_v1[v_ax0] = T.float32(-3.4028234663852886e38)
                v_x_red_temp_v0: T.let[T.int64] = T.Select(x_red_temp_v1[v_ax0] > x[v_ax0, v_k1] or x_red_temp_v1[v_ax0] == x[v_ax0, v_k1] and x_red_temp_v0[v_ax0] < v_k1, x_red_temp_v0[v_ax0], v_k1)
                v_x_red_temp_v1: T.let[T.float32] = T.Select(x_red_temp_v1[v_ax0] > x[v_ax0, v_k1], x_red_temp_v1[v_ax0], x[v_ax0, v_k1])
                x_red_temp_v0[v_ax0] = v_x_red_temp_v0
                x_red_temp_v1[v_ax0] = v_x_red_temp_v1
        for ax0 in range(n):
            with T.sblock("x_red"):
                v_ax0 = T.axis.spatial(n, ax0)
                T.reads(x_red_temp_v0[v_ax0])
                T.writes(x_red[v_ax0])
                x_red[v_ax0] = x_red_temp_v0[v_ax0]

    @T.prim_func
    def sums(a: T.handle, s: T.handle, w: T.handle):
        T.func_attr({"tirx.noalias": True})
        n = T.int64()
        m = T.int64()
        A = T.match_buffer(a, (n, m), "int32")
        S = T.match_buffer(s, (n,), "int32")
        W = T.match_buffer(w, (n,), "int8")
        for i in T.parallel(n):
            S[i] = 0
            W[i] = T.int8(0)
            for k in range(m):
                S[i] = S[i] + A[i, k] * (k + 1)
                W[i] = W[i] + T.Cast("int8", A[i, k])
                if S[i] > 1000:
                    S[i] = S[i] - 1000

    @T.prim_func
    def gather(a: T.Buffer((4,), "float32"), idx: T.Buffer((3,), "int32"), o: T.Buffer((3,), "float32")):
        for i in range(3):
            o[i] = a[idx[i]]

    @T.prim_func
    def overrun(o: T.Buffer((4,), "float32")):
        for i in range(6):
            o[i] = T.float32(1)

    @T.prim_func
    def loop_state(a: T.Buffer((8,), "int32"), o: T.Buffer((2,), "int32"), n: T.int32):
        x: T.int32 = 0
        while x < n:
            x = x + 1
        acc: T.int32 = 0
        for i in range(8):
            acc = acc + a[i] * x
        o[0] = acc
        o[1] = x

    @T.prim_func
    def guarded(a: T.Buffer((4,), "float32"), n: T.int32):
        assert n > 100, "n is too small"
        a[0] = T.float32(1)
"#;

fn func(name: &str) -> PrimFunc {
    let module = relax_ir::text::parse(SRC)
        .unwrap_or_else(|d| panic!("{d}"))
        .into_module();
    for (gv, f) in &module.functions {
        if let (true, BaseFunc::Prim(f)) = (gv.name() == name, f) {
            return f.clone();
        }
    }
    panic!("no function {name}")
}

enum In {
    T(HostTensor),
    I(i64),
}

/// The kernel compiled natively (every stage must be native) and interpreted.
fn kernels(f: &PrimFunc) -> (HostKernel, HostKernel) {
    let lowered = Arc::new(lower(f).expect("lowers"));
    let native = HostKernel::compile_with(lowered.clone(), true).expect("native compile");
    assert_eq!(
        native.native_stages(),
        lowered.stages.len(),
        "every stage of `{}` compiles to native code",
        lowered.name
    );
    let interp = HostKernel::compile_with(lowered, false).expect("interpreter compile");
    assert_eq!(interp.native_stages(), 0);
    (native, interp)
}

fn run(k: &HostKernel, inputs: &[In]) -> Result<Vec<HostTensor>, String> {
    let mut ts: Vec<HostTensor> = inputs
        .iter()
        .filter_map(|a| match a {
            In::T(t) => Some(t.clone()),
            In::I(_) => None,
        })
        .collect();
    let mut slots = ts.iter_mut();
    let mut args: Vec<KernelArg> = Vec::new();
    for a in inputs {
        args.push(match a {
            In::T(_) => KernelArg::from(slots.next().expect("tensor")),
            In::I(v) => KernelArg::Int(*v),
        });
    }
    k.run(&mut args).map_err(|e| e.to_string())?;
    Ok(ts)
}

/// Run natively and interpreted; the outputs agree (ints exactly, floats within
/// `rel`); returns the native outputs.
fn both(name: &str, inputs: &[In], rel: f64) -> Vec<HostTensor> {
    let (native, interp) = kernels(&func(name));
    let a = run(&native, inputs).unwrap_or_else(|e| panic!("{name} native: {e}"));
    let b = run(&interp, inputs).unwrap_or_else(|e| panic!("{name} interpreted: {e}"));
    for (k, (x, y)) in a.iter().zip(&b).enumerate() {
        let (xv, yv) = (x.to_f64_vec(), y.to_f64_vec());
        for (i, (p, q)) in xv.iter().zip(&yv).enumerate() {
            let same = p == q || (p.is_nan() && q.is_nan());
            let close = x.dtype().is_float() && (p - q).abs() <= rel * q.abs().max(1e-30);
            assert!(
                same || close,
                "{name}: argument {k} element {i}: native {p}, interpreted {q}"
            );
        }
    }
    a
}

/// Both paths fail with the same message.
fn same_error(name: &str, inputs: &[In]) -> String {
    let (native, interp) = kernels(&func(name));
    let a = run(&native, inputs).expect_err("native run fails");
    let b = run(&interp, inputs).expect_err("interpreted run fails");
    assert_eq!(a, b, "{name}: the same error");
    a
}

fn t<T: relax_jit::internals::Element>(v: &[T]) -> In {
    In::T(HostTensor::from_slice(&[v.len() as i64], v).expect("tensor"))
}

fn z(dt: DataType, shape: &[i64]) -> In {
    In::T(HostTensor::zeros(dt, shape).expect("tensor"))
}

#[test]
fn integer_division_by_zero_and_signs() {
    let a = [7i32, -7, 7, -7, 5, i32::MIN, 0, -3];
    let b = [2i32, 2, -2, -2, 0, -1, 0, 4];
    let n = a.len() as i64;
    let i32t = DataType::INT32;
    let out = both(
        "int_ops",
        &[t(&a), t(&b), z(i32t, &[n]), z(i32t, &[n]), z(i32t, &[n]), z(i32t, &[n])],
        0.0,
    );
    let v = |k: usize| out[k].as_slice::<i32>().expect("i32").to_vec();
    assert_eq!(v(2), [3, -3, -3, 3, 5, i32::MIN, 0, 0], "truncdiv");
    assert_eq!(v(3), [1, -1, 1, -1, 0, 0, 0, -3], "truncmod");
    assert_eq!(v(4), [3, -4, -4, 3, 5, i32::MIN, 0, -1], "floordiv");
    assert_eq!(v(5), [1, 1, -1, -1, 0, 0, 0, 1], "floormod");
}

#[test]
fn narrow_and_wide_integers_wrap_like_the_interpreter() {
    let a = [100i8, -100, 5, 127, -128, 0];
    let b = [100i8, -3, -7, 1, -1, 9];
    let out = both(
        "small_ints",
        &[
            t(&a),
            t(&b),
            z(DataType::INT8, &[6]),
            z(DataType::UINT8, &[6]),
            z(DataType::INT64, &[6]),
        ],
        0.0,
    );
    assert_eq!(out[2].as_slice::<i8>().expect("i8"), &[48, 12, 5, 119, -128, 0]);
    assert_eq!(out[3].as_slice::<u8>().expect("u8"), &[44, 100, 205, 71, 72, 200]);
    assert_eq!(
        out[4].as_slice::<i64>().expect("i64")[0],
        100 * 4294967296 + (100 ^ 5) / 4
    );
}

#[test]
fn float_to_int_casts_saturate() {
    let x = [300.0f32, -5.5, f32::NAN, f32::INFINITY, -3e9, 2.75, 0.0];
    let outs = [
        z(DataType::INT8, &[7]),
        z(DataType::UINT8, &[7]),
        z(DataType::INT32, &[7]),
        z(DataType::INT64, &[7]),
        z(DataType::BOOL, &[7]),
        z(DataType::FLOAT64, &[7]),
    ];
    let mut inputs = vec![t(&x)];
    inputs.extend(outs);
    let out = both("casts", &inputs, 0.0);
    assert_eq!(out[1].as_slice::<i8>().expect("i8"), &[127, -5, 0, 127, -128, 2, 0]);
    assert_eq!(out[2].as_slice::<u8>().expect("u8"), &[255, 0, 0, 255, 0, 2, 0]);
    assert_eq!(
        out[3].as_slice::<i32>().expect("i32"),
        &[300, -5, 0, i32::MAX, i32::MIN, 2, 0]
    );
    assert_eq!(out[4].as_slice::<i64>().expect("i64")[3], i64::MAX);
    assert_eq!(out[5].to_f64_vec(), [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0]);
}

#[test]
fn nan_aware_min_max_select_and_float_floor_ops() {
    let x = [1.0f32, f32::NAN, -3.0, 2.0, 0.5, -0.0, 4.0, f32::INFINITY];
    let y = [f32::NAN, 0.0, -3.0, 5.0, -1.25, 0.0, 4.0, 1.0];
    let f32t = DataType::FLOAT32;
    let out = both(
        "floats",
        &[
            t(&x),
            t(&y),
            z(f32t, &[8]),
            z(f32t, &[8]),
            z(f32t, &[8]),
            z(DataType::BOOL, &[8]),
            z(f32t, &[8]),
        ],
        0.0,
    );
    assert_eq!(out[2].to_f64_vec()[..3], [1.0, 0.0, -3.0], "min skips NaN");
    assert_eq!(out[3].to_f64_vec()[..3], [1.0, 0.0, -3.0], "max skips NaN");
    assert_eq!(out[4].to_f64_vec()[2..5], [7.0, 2.5, 1.75]);
}

#[test]
fn f32_math_within_ulps_and_f64_math_exact() {
    let x: Vec<f32> = (0..64).map(|i| (i as f32 - 31.5) * 0.37).collect();
    both("math32", &[t(&x), z(DataType::FLOAT32, &[64, 8])], 4e-7);
    let x: Vec<f64> = (0..16).map(|i| (i as f64 - 7.5) * 0.61).collect();
    let out = both("math64", &[t(&x), z(DataType::FLOAT64, &[16])], 0.0);
    let want = x[3].exp() + x[3].abs().sqrt() + x[3].floor() + x[3].abs().ln_1p() + x[3].atan2(0.5);
    assert_eq!(out[1].to_f64_vec()[3], want);
}

/// Squares and cubes are multiplied out in `f64` by both paths (bit-equal, and the
/// square equal to `f32` multiplication: it is rounded once); other exponents call `pow`.
#[test]
fn squares_and_cubes_match_the_interpreter_bit_for_bit() {
    let x: Vec<f32> = (0..4096)
        .map(|i| {
            let u = (i as f32 * 0.618_034).fract();
            (u - 0.5) * 10f32.powi(i % 9 - 4)
        })
        .collect();
    let mut x = x;
    x[..6].copy_from_slice(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 1e30, -1e-30]);
    let out = both(
        "pows",
        &[
            t(&x),
            z(DataType::FLOAT32, &[4096]),
            z(DataType::FLOAT32, &[4096]),
            z(DataType::FLOAT16, &[4096]),
            z(DataType::FLOAT32, &[4096]),
        ],
        0.0,
    );
    let (sq, cu) = (out[1].to_f64_vec(), out[2].to_f64_vec());
    for (i, &v) in x.iter().enumerate() {
        let want = v * v;
        assert!(
            sq[i] == want as f64 || (want.is_nan() && sq[i].is_nan()),
            "square of {v}"
        );
        let c = (f64::from(v) * f64::from(v) * f64::from(v)) as f32;
        assert!(cu[i] == c as f64 || (c.is_nan() && cu[i].is_nan()), "cube of {v}");
    }
}

/// `T.pow` whose exponent is read from a buffer (known only at run time, as an
/// ONNX initializer kept as a parameter): a square is multiplied out inline and
/// anything else calls the shared `pow`, so for 2, 3, 0.5 and -1 the native code
/// gives the interpreter's bits, and a square is `x * x` rounded once.
#[test]
fn pow_with_a_run_time_exponent_matches_the_interpreter() {
    let mut x: Vec<f32> = (0..4096)
        .map(|i| ((i as f32 * 0.618_034).fract() - 0.5) * 10f32.powi(i % 7 - 3))
        .collect();
    x[..5].copy_from_slice(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, -3.0]);
    for e in [2.0f32, 3.0, 0.5, -1.0] {
        let exp = In::T(HostTensor::from_slice(&[], &[e]).expect("scalar"));
        let out = both("pow_by_tensor", &[t(&x), exp, z(DataType::FLOAT32, &[4096])], 0.0);
        if e == 2.0 {
            for (v, &got) in x.iter().zip(&out[2].to_f64_vec()) {
                let want = v * v;
                assert!(
                    got == f64::from(want) || (want.is_nan() && got.is_nan()),
                    "{v} ** 2: {got}"
                );
            }
        }
    }
}

/// Native `float32` tanh (computed in `f64` from `exp`) is within one ulp of
/// `tanh(x as f64)` rounded, over 20,000 values from 1e-30 to 40 of both signs, and
/// keeps NaN, the infinities' limits and the sign of zero.
#[test]
fn tanh_f32_within_an_ulp() {
    let mut x: Vec<f32> = (0..20000)
        .map(|i| {
            let m = 10f32.powf(-30.0 + 31.6 * (i / 2) as f32 / 10000.0);
            if i % 2 == 0 {
                m
            } else {
                -m
            }
        })
        .collect();
    x[..5].copy_from_slice(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0]);
    let out = both("tanh32", &[t(&x), z(DataType::FLOAT32, &[20000])], 1.2e-7);
    let o = out[1].to_f64_vec();
    assert!(o[0].is_nan());
    assert_eq!((o[1], o[2]), (1.0, -1.0));
    assert!(o[3] == 0.0 && o[3].is_sign_negative() && o[4].is_sign_positive());
    for (i, &v) in x.iter().enumerate().skip(5) {
        let want = f64::from(v).tanh() as f32;
        let got = o[i] as f32;
        let ulps = (got.to_bits() as i64 - want.to_bits() as i64).abs();
        assert!(ulps <= 1, "tanh({v}) = {got}, want {want} ({ulps} ulps)");
    }
}

#[test]
fn bools_load_and_store_as_bytes() {
    let out = both(
        "bools",
        &[
            In::T(HostTensor::from_f64s(DataType::BOOL, &[4], &[1.0, 1.0, 0.0, 0.0]).expect("x")),
            In::T(HostTensor::from_f64s(DataType::BOOL, &[4], &[1.0, 0.0, 1.0, 0.0]).expect("y")),
            z(DataType::BOOL, &[4]),
            z(DataType::INT32, &[4]),
        ],
        0.0,
    );
    assert_eq!(out[2].to_f64_vec(), [0.0, 1.0, 0.0, 0.0]);
    assert_eq!(out[3].as_slice::<i32>().expect("i32"), &[3, 1, 2, 0]);
}

#[test]
fn symbolic_shapes_and_parallel_nests() {
    for (n, m) in [(1i64, 1i64), (3, 1000), (257, 33), (0, 5)] {
        let a: Vec<f32> = (0..n * m).map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0).collect();
        let b: Vec<f32> = (0..m).map(|j| (j % 7) as f32 - 3.0).collect();
        let out = both(
            "bcast",
            &[
                In::T(HostTensor::from_slice(&[n, m], &a).expect("a")),
                t(&b),
                z(DataType::FLOAT32, &[n, m]),
            ],
            0.0,
        );
        for i in 0..n as usize {
            for j in 0..m as usize {
                let m = m as usize;
                let want = (a[i * m + j] * b[j]).max(0.0) + a[i * m + m - 1 - j];
                assert_eq!(out[2].as_slice::<f32>().expect("f32")[i * m + j], want);
            }
        }
    }
}

#[test]
fn unit_stride_float_loops_in_lanes_match_scalar() {
    for (n, m) in [(2i64, 1003i64), (5, 3), (1, 4), (3, 64)] {
        let mut a: Vec<f32> = (0..n * m).map(|i| ((i * 29) % 97) as f32 / 40.0 - 1.2).collect();
        a[0] = f32::NAN;
        let mut b: Vec<f32> = (0..m).map(|j| (j % 5) as f32 * 0.3 - 0.6).collect();
        b[(m - 1) as usize] = f32::NAN;
        let c: Vec<f32> = (0..n).map(|i| 0.25 * i as f32 + 0.1).collect();
        let out = both(
            "lanes",
            &[
                In::T(HostTensor::from_slice(&[n, m], &a).expect("a")),
                t(&b),
                t(&c),
                z(DataType::FLOAT32, &[n, m]),
            ],
            0.0,
        );
        let o = out[3].as_slice::<f32>().expect("f32");
        for i in 0..n as usize {
            for j in 0..m as usize {
                let x = a[i * m as usize + j];
                let want = (x + b[j]).max(-0.5).min(c[i]) * 2.0 - x / 3.0;
                let got = o[i * m as usize + j];
                assert!(
                    got == want || (got.is_nan() && want.is_nan()),
                    "({i}, {j}): {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn float_masks_select_in_lanes() {
    let (n, m) = (7i64, 1001i64);
    let mut a: Vec<f32> = (0..n * m).map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0).collect();
    let mut b: Vec<f32> = (0..n * m).map(|i| ((i * 53) % 89) as f32 / 45.0 - 1.0).collect();
    a[3] = f32::NAN;
    b[10] = f32::NAN;
    a[20] = b[20];
    let out = both(
        "where_rows",
        &[
            In::T(HostTensor::from_slice(&[n, m], &a).expect("a")),
            In::T(HostTensor::from_slice(&[n, m], &b).expect("b")),
            z(DataType::FLOAT32, &[n, m]),
        ],
        0.0,
    );
    let o = out[2].as_slice::<f32>().expect("f32");
    for (i, ((x, y), got)) in a.iter().zip(&b).zip(o).enumerate() {
        let want = if y < x {
            *x
        } else if x.is_nan() || *y >= 0.25 {
            *y
        } else {
            0.5
        };
        assert!(got == &want || (got.is_nan() && want.is_nan()), "{i}: {got} vs {want}");
    }
    let k = 13usize;
    let out = both(
        "masks",
        &[t(&a[..k]), t(&b[..k]), z(DataType::FLOAT32, &[k as i64, 3])],
        0.0,
    );
    let o = out[2].as_slice::<f32>().expect("f32");
    for j in 0..k {
        let (x, y) = (a[j], b[j]);
        let want = [
            if y < x { x } else { y },
            if (x >= 0.0 && !y.is_nan()) || x == y {
                x * y
            } else {
                -1.0
            },
            if x <= y { y - x } else { x },
        ];
        for (c, w) in want.iter().enumerate() {
            let g = o[j * 3 + c];
            assert!(g == *w || (g.is_nan() && w.is_nan()), "({j}, {c}): {g} vs {w}");
        }
    }
}

#[test]
fn reduction_accumulators_in_registers_match_memory() {
    for (n, m) in [(3i64, 17i64), (4, 1), (2, 130)] {
        let mut x: Vec<f32> = (0..n * m).map(|i| ((i * 29) % 31) as f32 - 15.0).collect();
        x[(m / 2) as usize] = f32::NAN;
        x[(m + m - 1) as usize] = 1e30;
        let out = both(
            "argmax_rows",
            &[
                In::T(HostTensor::from_slice(&[n, m], &x).expect("x")),
                z(DataType::INT64, &[n]),
            ],
            0.0,
        );
        let got = out[1].as_slice::<i64>().expect("i64");
        for (r, row) in x.chunks(m as usize).enumerate() {
            // TVM's argmax: a NaN restarts the running comparison (docs/semantics.md).
            let (mut bi, mut bv) = (-1i64, -f32::MAX);
            for (k, v) in row.iter().enumerate() {
                let keep = bv > *v || (bv == *v && bi < k as i64);
                if !keep {
                    bi = k as i64;
                }
                if bv.partial_cmp(v) != Some(std::cmp::Ordering::Greater) {
                    bv = *v;
                }
            }
            assert_eq!(got[r], bi, "row {r} of {n}x{m}");
        }
        let a: Vec<i32> = (0..n * m).map(|i| (i as i32 * 7) % 300 - 40).collect();
        let out = both(
            "sums",
            &[
                In::T(HostTensor::from_slice(&[n, m], &a).expect("a")),
                z(DataType::INT32, &[n]),
                z(DataType::INT8, &[n]),
            ],
            0.0,
        );
        for (r, row) in a.chunks(m as usize).enumerate() {
            let (mut s, mut w) = (0i32, 0i8);
            for (k, v) in row.iter().enumerate() {
                s += v * (k as i32 + 1);
                w = w.wrapping_add(*v as i8);
                if s > 1000 {
                    s -= 1000;
                }
            }
            assert_eq!(out[1].as_slice::<i32>().expect("i32")[r], s, "sum row {r}");
            assert_eq!(out[2].as_slice::<i8>().expect("i8")[r], w, "int8 sum row {r}");
        }
    }
}

#[test]
fn out_of_bounds_accesses_fail_the_same_way() {
    let e = same_error(
        "gather",
        &[
            t(&[1.0f32, 2.0, 3.0, 4.0]),
            t(&[1i32, 7, 0]),
            z(DataType::FLOAT32, &[3]),
        ],
    );
    assert!(e.contains("out-of-bounds read of `a` at 7 (size 4)"), "{e}");
    let e = same_error(
        "gather",
        &[t(&[1.0f32; 4]), t(&[-1i32, 0, 0]), z(DataType::FLOAT32, &[3])],
    );
    assert!(e.contains("at -1 (size 4)"), "{e}");
    let e = same_error("overrun", &[z(DataType::FLOAT32, &[4])]);
    assert!(e.contains("out-of-bounds write of `o` at 4 (size 4)"), "{e}");
    let e = same_error("guarded", &[z(DataType::FLOAT32, &[4]), In::I(3)]);
    assert!(e.contains("n is too small"), "{e}");
}

#[test]
fn loops_with_state_and_scalar_params() {
    let a: Vec<i32> = (1..=8).collect();
    let out = both("loop_state", &[t(&a), z(DataType::INT32, &[2]), In::I(5)], 0.0);
    assert_eq!(out[1].as_slice::<i32>().expect("i32"), &[36 * 5, 5]);
}

#[test]
fn counters_record_native_stages() {
    let before = native_counters().0;
    kernels(&func("bcast"));
    assert!(native_counters().0 > before);
}

#[test]
fn borrowed_buffers_run_in_place_or_on_copies() {
    let (native, _) = kernels(&func("gather"));
    let (f32, i32) = (DataType::FLOAT32, DataType::INT32);
    let a = f32_bytes(&[1.0, 2.0, 3.0, 4.0]);
    let idx: Vec<u8> = [3i32, 0, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
    // A copy in 8-byte words keeps the f32 data aligned.
    let mut out_words = [0u64; 2];
    let out: &mut [u8] = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut out_words)[..12];
    let mut args = [read(f32, &[4], &a), read(i32, &[3], &idx), write(f32, &[3], out)];
    native.run(&mut args).expect("runs");
    assert_eq!(f32_values(args[2].host_bytes().expect("bytes")), [4.0, 1.0, 3.0]);

    // Bytes not aligned to their element type run on aligned copies, the written
    // one copied back.
    // 8-byte words, viewed from their second byte: misaligned for f32 and i32.
    let (mut a_words, mut out_words) = ([0u64; 3], [0u64; 2]);
    let shifted_a = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut a_words)[1..17];
    shifted_a.copy_from_slice(&a);
    let shifted_out = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut out_words)[1..13];
    let mut args = [
        read(f32, &[4], shifted_a),
        read(i32, &[3], &idx),
        write(f32, &[3], &mut *shifted_out),
    ];
    native.run(&mut args).expect("runs on copies");
    assert_eq!(f32_values(shifted_out), [4.0, 1.0, 3.0]);

    // An output passed read-only is written in a copy: the caller's bytes stay.
    let zeros = [0u8; 12];
    let mut args = [read(f32, &[4], &a), read(i32, &[3], &idx), read(f32, &[3], &zeros)];
    native.run(&mut args).expect("runs on a copy");
    assert_eq!(zeros, [0u8; 12]);

    // The wrong number of bytes, or a scalar for a tensor, is an error.
    let mut bad = [read(f32, &[4], &a[..8]), read(i32, &[3], &idx), KernelArg::Int(0)];
    let e = native.run(&mut bad).expect_err("wrong arguments");
    assert!(matches!(e, JitError::BadArgs(_)), "{e}");
}

/// The bytes of a tensor's row `r` of `len` 16-bit elements.
fn row16(t: &HostTensor, r: usize, len: usize) -> &[u8] {
    &t.bytes()[r * len * 2..(r + 1) * len * 2]
}

/// Every `float16` bit pattern (and three more, so that the loop has a remainder
/// after its four-lane steps) through arithmetic, math functions, casts from `f32`
/// (ties, subnormals, overflow, NaN payloads), selects and `min`/`max`: the
/// four-lane loops give the bits of the scalar loops (the same expressions with
/// reversed indices, which run one element at a time), and agree with the
/// interpreter and with the `half` crate's rounding.
#[test]
fn half_precision_loops_in_lanes_match_scalar_bit_for_bit() {
    let n = 65539usize;
    let a: Vec<u16> = (0..n).map(|i| i as u16).collect();
    let b: Vec<u16> = (0..n).map(|i| (i as u32).wrapping_mul(7919) as u16 ^ 0x3c00).collect();
    let mut x: Vec<f32> = (0..n)
        .map(|i| {
            // f32 values around f16 rounding points: a f16 value plus a fraction of
            // its ulp (ties included), over the whole f16 range and beyond.
            let h = half::f16::from_bits(i as u16).to_f32();
            let frac = [0.0f32, 0.5, 0.25, 0.75, 0.5000001, 0.4999999][i % 6];
            h + frac * h.abs() * (2f32).powi(-10)
        })
        .collect();
    x[..6].copy_from_slice(&[
        65520.0,
        65519.99,
        1e-8,
        2.98e-8,
        f32::from_bits(0x7fc3_e000),
        -f32::from_bits(0x7f80_0001),
    ]);
    let f16t =
        |v: &[u16]| In::T(HostTensor::from_bytes(DataType::FLOAT16, &[v.len() as i64], &bytes16(v)).expect("f16"));
    let out = both(
        "half_lanes",
        &[
            f16t(&a),
            f16t(&b),
            t(&x),
            z(DataType::FLOAT16, &[6, n as i64]),
            z(DataType::FLOAT16, &[6, n as i64]),
            z(DataType::FLOAT32, &[n as i64]),
            z(DataType::FLOAT32, &[n as i64]),
        ],
        0.0,
    );
    for r in 0..6 {
        assert!(
            row16(&out[3], r, n) == row16(&out[4], r, n),
            "row {r}: lanes and scalar loops differ"
        );
    }
    assert_eq!(out[5].bytes(), out[6].bytes(), "widened f32 lanes");
    let o = |r: usize, i: usize| {
        let b = row16(&out[3], r, n);
        half::f16::from_bits(u16::from_le_bytes([b[2 * i], b[2 * i + 1]]))
    };
    let h = |v: u16| half::f16::from_bits(v).to_f32();
    for i in 0..n {
        let prod = half::f16::from_f32(h(a[i]) * h(b[i])).to_f32();
        let want = half::f16::from_f32(prod + 0.5);
        let got = o(0, i);
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "{i}: {got} vs {want}"
        );
        let want = half::f16::from_f32(x[i]);
        let got = o(2, i);
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "cast {}: {got} vs {want}",
            x[i]
        );
    }
    // A NaN keeps its sign and the top of its payload, quiet.
    assert_eq!(o(2, 4).to_bits(), 0x7e1f);
    assert_eq!(o(2, 5).to_bits(), 0xfe00);
}

/// The same for `bfloat16` lanes.
#[test]
fn bfloat16_loops_in_lanes_match_scalar_bit_for_bit() {
    let n = 65539usize;
    let a: Vec<u16> = (0..n).map(|i| i as u16).collect();
    let b: Vec<u16> = (0..n).map(|i| (i as u32).wrapping_mul(40503) as u16 ^ 0x3f80).collect();
    // Normal f32 values at and around bfloat16 ties (the interpreter's `f64` rounding
    // of `f32` subnormals to `bfloat16` is not the subject here).
    let x: Vec<f32> = (0..n)
        .map(|i| {
            let hi = (i as u32 % 0x7e00 + 0x100) | ((i as u32 & 1) << 15);
            f32::from_bits((hi << 16) | [0u32, 0x8000, 0x7fff, 0x8001, 0x4000][i % 5])
        })
        .collect();
    let bf = |v: &[u16]| In::T(HostTensor::from_bytes(BF16, &[v.len() as i64], &bytes16(v)).expect("bf16"));
    let out = both(
        "bf16_lanes",
        &[bf(&a), bf(&b), t(&x), z(BF16, &[3, n as i64]), z(BF16, &[3, n as i64])],
        0.0,
    );
    for r in 0..3 {
        assert!(
            row16(&out[3], r, n) == row16(&out[4], r, n),
            "row {r}: lanes and scalar loops differ"
        );
    }
    let b1 = row16(&out[3], 1, n);
    for (i, v) in x.iter().enumerate() {
        let want = half::bf16::from_f32(*v);
        let got = half::bf16::from_bits(u16::from_le_bytes([b1[2 * i], b1[2 * i + 1]]));
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "cast {v}: {got} vs {want}"
        );
    }
}

/// The erf form of GELU over a dense range in lanes and one element at a time, and
/// interpreted: the same bits (`float32` `erf` is one function on every host path).
#[test]
fn erf_gelu_in_lanes_matches_scalar() {
    let n = 100_003usize;
    let mut x: Vec<f32> = (0..n).map(|i| (i as f32 - 50_000.0) * 1.3e-4).collect();
    x[..5].copy_from_slice(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 1e-30]);
    let out = both(
        "erf_gelu",
        &[
            t(&x),
            z(DataType::FLOAT32, &[n as i64]),
            z(DataType::FLOAT32, &[n as i64]),
        ],
        0.0,
    );
    assert_eq!(out[1].bytes(), out[2].bytes());
}

const BF16: DataType = DataType::new(relax_ir::TypeCode::BFloat, 16, 1);

fn bytes16(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|h| h.to_le_bytes()).collect()
}
