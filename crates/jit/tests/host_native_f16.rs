//! `float16` and `bfloat16` in the host's native code against the closure
//! interpreter: every stage compiles natively and the results are bit-equal
//! (arithmetic is rounded to the dtype after each operation on both paths), and
//! the host GEMM on `float16` operands (docs/semantics.md: accumulates in `f32`).

use std::sync::Arc;

use half::{bf16, f16};
use relax_ir::{BaseFunc, DataType, PrimFunc};
use relax_jit::internals::lower;
use relax_jit::{HostKernel, HostTensor, KernelArg};

const BF16: DataType = DataType::new(relax_ir::TypeCode::BFloat, 16, 1);

const SRC: &str = r#"
@I.ir_module
class Module:
    @T.prim_func
    def elementwise(x: T.Buffer((64,), "float16"), y: T.Buffer((64,), "float16"), o: T.Buffer((64, 8), "float16")):
        for i, j in T.grid(64, 8):
            o[i, j] = T.if_then_else(j == 0, x[i] * y[i] + x[i] / y[i] - x[i], T.if_then_else(j == 1, T.sqrt(T.fabs(x[i])) * T.float16(0.3), T.if_then_else(j == 2, T.exp(x[i]), T.if_then_else(j == 3, T.tanh(x[i]) + T.sigmoid(y[i]), T.if_then_else(j == 4, T.max(x[i], y[i]) - T.min(x[i], y[i]), T.if_then_else(j == 5, T.floor(x[i] * T.float16(3.5)), T.if_then_else(j == 6, T.floormod(x[i], T.float16(0.75)), T.rsqrt(T.fabs(y[i]) + T.float16(1)))))))))

    @T.prim_func
    def bf16_ops(x: T.Buffer((64,), "bfloat16"), y: T.Buffer((64,), "bfloat16"), o: T.Buffer((64, 3), "bfloat16")):
        for i, j in T.grid(64, 3):
            o[i, j] = T.if_then_else(j == 0, x[i] * y[i] + x[i] / y[i], T.if_then_else(j == 1, T.exp(x[i]), T.sqrt(T.fabs(x[i]))))

    @T.prim_func
    def reduce(x: T.Buffer((16, 64), "float16"), s: T.Buffer((16,), "float16"), m: T.Buffer((16,), "float16")):
        for i, k in T.grid(16, 64):
            with T.block("s"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    s[vi] = T.float16(0)
                s[vi] = s[vi] + x[vi, vk]
        for i, k in T.grid(16, 64):
            with T.block("m"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    m[vi] = T.min_value("float16")
                m[vi] = T.max(m[vi], x[vi, vk])

    @T.prim_func
    def transpose(x: T.Buffer((16, 64), "float16"), o: T.Buffer((64, 16), "float16")):
        for i, j in T.grid(64, 16):
            o[i, j] = x[j, i]

    @T.prim_func
    def gather(x: T.Buffer((16, 64), "float16"), idx: T.Buffer((5,), "int32"), o: T.Buffer((5, 64), "float16")):
        for i, j in T.grid(5, 64):
            o[i, j] = x[idx[i], j]

    @T.prim_func
    def casts(x: T.Buffer((64,), "float16"), f: T.Buffer((64,), "float32"), h: T.Buffer((64,), "float32"), d: T.Buffer((64,), "float64"), i: T.Buffer((64,), "int32"), u: T.Buffer((64,), "uint8"), b: T.Buffer((64,), "bfloat16"), back: T.Buffer((64, 4), "float16")):
        for k in range(64):
            f[k] = T.Cast("float32", x[k]) * T.float32(1.0001)
            h[k] = T.Cast("float32", x[k])
            d[k] = T.Cast("float64", x[k]) * T.float64(0.1)
            i[k] = T.Cast("int32", x[k])
            u[k] = T.Cast("uint8", x[k])
            b[k] = T.Cast("bfloat16", x[k])
        for k, c in T.grid(64, 4):
            back[k, c] = T.if_then_else(c == 0, T.Cast("float16", f[k]), T.if_then_else(c == 1, T.Cast("float16", d[k]), T.if_then_else(c == 2, T.Cast("float16", i[k] * 1000), T.Cast("float16", b[k]))))

    @T.prim_func
    def matmul(x: T.Buffer((T.int64(12), T.int64(40)), "float16"), y: T.Buffer((T.int64(40), T.int64(9)), "float16"), o: T.Buffer((T.int64(12), T.int64(9)), "float16")):
        for i0, i1, k in T.grid(T.int64(12), T.int64(9), T.int64(40)):
            with T.block("matmul"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
                with T.init():
                    o[v_i0, v_i1] = T.float16(0.0)
                o[v_i0, v_i1] = o[v_i0, v_i1] + x[v_i0, v_k] * y[v_k, v_i1]

    @T.prim_func
    def matmul_widening(x: T.Buffer((T.int64(12), T.int64(40)), "float16"), y: T.Buffer((T.int64(40), T.int64(9)), "float16"), o: T.Buffer((T.int64(12), T.int64(9)), "float32")):
        for i0, i1, k in T.grid(T.int64(12), T.int64(9), T.int64(40)):
            with T.block("matmul"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
                with T.init():
                    o[v_i0, v_i1] = T.float32(0.0)
                o[v_i0, v_i1] = o[v_i0, v_i1] + T.Cast("float32", x[v_i0, v_k]) * T.Cast("float32", y[v_k, v_i1])
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

/// The kernel compiled natively (every stage native) and interpreted.
fn kernels(name: &str) -> (HostKernel, HostKernel) {
    let lowered = Arc::new(lower(&func(name)).expect("lowers"));
    let native = HostKernel::compile_with(lowered.clone(), true).expect("native compile");
    assert_eq!(
        native.native_stages(),
        lowered.stages.len(),
        "every stage of `{name}` compiles to native code"
    );
    let interp = HostKernel::compile_with(lowered, false).expect("interpreter compile");
    assert_eq!(interp.native_stages(), 0);
    (native, interp)
}

fn run(k: &HostKernel, inputs: &[HostTensor]) -> Vec<HostTensor> {
    let mut ts = inputs.to_vec();
    let mut args: Vec<KernelArg> = ts.iter_mut().map(KernelArg::from).collect();
    k.run(&mut args).expect("runs");
    ts
}

/// Native and interpreted outputs, bit for bit (any NaN equals any NaN).
fn bit_equal(name: &str, inputs: &[HostTensor]) -> Vec<HostTensor> {
    let (native, interp) = kernels(name);
    let a = run(&native, inputs);
    let b = run(&interp, inputs);
    for (k, (x, y)) in a.iter().zip(&b).enumerate() {
        for (i, (p, q)) in x.to_f64_vec().iter().zip(y.to_f64_vec()).enumerate() {
            let same = p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan());
            assert!(
                same,
                "{name}: argument {k} element {i}: native {p:e}, interpreted {q:e}"
            );
        }
    }
    a
}

fn h(v: &[f32]) -> HostTensor {
    let v: Vec<f16> = v.iter().map(|x| f16::from_f32(*x)).collect();
    HostTensor::from_slice(&[v.len() as i64], &v).expect("tensor")
}

fn h2(rows: i64, v: &[f32]) -> HostTensor {
    let v: Vec<f16> = v.iter().map(|x| f16::from_f32(*x)).collect();
    HostTensor::from_slice(&[rows, v.len() as i64 / rows], &v).expect("tensor")
}

fn bf(v: &[f32]) -> HostTensor {
    let bits: Vec<u8> = v.iter().flat_map(|x| bf16::from_f32(*x).to_le_bytes()).collect();
    HostTensor::from_bytes(BF16, &[v.len() as i64], &bits).expect("tensor")
}

fn z(dt: DataType, shape: &[i64]) -> HostTensor {
    HostTensor::zeros(dt, shape).expect("tensor")
}

/// Awkward values: signs, ties, subnormals, large magnitudes, infinities, NaN.
fn values(n: usize, seed: u32) -> Vec<f32> {
    let special = [
        0.0,
        -0.0,
        1.0,
        -2.5,
        65504.0,
        -65504.0,
        6.0e-8,
        -3.0e-5,
        1.0e-4,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        0.333,
        1000.7,
        -7.77,
        2049.0,
    ];
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(12345);
    (0..n)
        .map(|i| {
            if i < special.len() && seed == 1 {
                return special[i];
            }
            s = s.wrapping_mul(1664525).wrapping_add(1013904223);
            let u = (s >> 8) as f32 / (1u32 << 24) as f32;
            (u - 0.5) * [2.0, 20.0, 300.0, 0.01][i % 4]
        })
        .collect()
}

#[test]
fn f16_arithmetic_and_math_bit_equal_to_the_interpreter() {
    let (x, y) = (values(64, 1), values(64, 2));
    bit_equal("elementwise", &[h(&x), h(&y), z(DataType::FLOAT16, &[64, 8])]);
    // Sums of f16 values round to f16 after each operation.
    let out = bit_equal(
        "elementwise",
        &[h(&[1.0; 64]), h(&[2048.0; 64]), z(DataType::FLOAT16, &[64, 8])],
    );
    let o = out[2].to_f64_vec();
    assert_eq!(
        o[0], 2047.0,
        "1 * 2048 + 1 / 2048 - 1 in f16 (2048 + 1/2048 rounds to 2048)"
    );
}

#[test]
fn bf16_arithmetic_bit_equal_to_the_interpreter() {
    let (x, y) = (values(64, 1), values(64, 3));
    bit_equal("bf16_ops", &[bf(&x), bf(&y), z(BF16, &[64, 3])]);
}

#[test]
fn f16_reductions_transpose_and_gather() {
    let x = values(16 * 64, 4);
    let f16t = DataType::FLOAT16;
    let out = bit_equal("reduce", &[h2(16, &x), z(f16t, &[16]), z(f16t, &[16])]);
    // The max is exact.
    let xr: Vec<f64> = h2(16, &x).to_f64_vec();
    for r in 0..16 {
        let m = xr[r * 64..r * 64 + 64].iter().cloned().fold(f64::MIN, f64::max);
        assert_eq!(out[2].to_f64_vec()[r], m);
    }
    let out = bit_equal("transpose", &[h2(16, &x), z(f16t, &[64, 16])]);
    assert_eq!(out[1].to_f64_vec()[3 * 16 + 5], xr[5 * 64 + 3]);
    let idx = HostTensor::from_slice(&[5], &[3i32, 0, 15, 3, 7]).expect("tensor");
    let out = bit_equal("gather", &[h2(16, &x), idx, z(f16t, &[5, 64])]);
    assert_eq!(out[2].to_f64_vec()[2 * 64 + 9], xr[15 * 64 + 9]);
}

#[test]
fn f16_casts_bit_equal_to_the_interpreter() {
    let x = values(64, 1);
    let out = bit_equal(
        "casts",
        &[
            h(&x),
            z(DataType::FLOAT32, &[64]),
            z(DataType::FLOAT32, &[64]),
            z(DataType::FLOAT64, &[64]),
            z(DataType::INT32, &[64]),
            z(DataType::UINT8, &[64]),
            z(BF16, &[64]),
            z(DataType::FLOAT16, &[64, 4]),
        ],
    );
    // f16 -> f32 is exact; f16 subnormals survive.
    let (src, wide) = (h(&x).to_f64_vec(), out[2].to_f64_vec());
    for (a, b) in src.iter().zip(&wide) {
        assert!(a == b || (a.is_nan() && b.is_nan()));
    }
    assert_eq!(wide[6], f16::from_f32(6.0e-8).to_f64());
    assert!(wide[6] > 0.0);
}

#[test]
fn f16_matmul_accumulates_in_f32_within_tolerance() {
    let (m, k, n) = (12usize, 40usize, 9usize);
    let x: Vec<f32> = values(m * k, 5);
    let y: Vec<f32> = values(k * n, 6);
    let (xt, yt) = (h2(m as i64, &x), h2(k as i64, &y));
    let (xv, yv) = (xt.to_f64_vec(), yt.to_f64_vec());
    // The matmul stage runs on the GEMM path (not Cranelift) either way.
    let lowered = Arc::new(lower(&func("matmul")).expect("lowers"));
    let native = HostKernel::compile_with(lowered.clone(), true).expect("native compile");
    let interp = HostKernel::compile_with(lowered, false).expect("interpreter compile");
    let ins = [xt, yt, z(DataType::FLOAT16, &[m as i64, n as i64])];
    let a = run(&native, &ins);
    let b = run(&interp, &ins);
    let (a, b) = (a[2].to_f64_vec(), b[2].to_f64_vec());
    assert_eq!(a, b, "the GEMM path is the same with or without native code");
    for i in 0..m {
        for j in 0..n {
            // Accumulated in f32, rounded to f16 once.
            let mut acc = 0f32;
            for kk in 0..k {
                acc += xv[i * k + kk] as f32 * yv[kk * n + j] as f32;
            }
            let want = f16::from_f32(acc).to_f64();
            let got = a[i * n + j];
            assert!(
                (got - want).abs() <= 1e-2 * want.abs().max(1.0),
                "[{i},{j}]: {got} vs {want}"
            );
        }
    }
}

/// `R.matmul(a, b, out_dtype="float32")` of `float16` tensors (the ONNX importer's
/// `float16` MatMul): the widening loads do not keep the stage off the GEMM path
/// (as scalar loops it was 30 times slower), and the `f32` output is the product
/// accumulated in `f32`, not rounded to `float16`.
#[test]
fn widening_f16_matmul_runs_as_one_gemm_in_f32() {
    let (m, k, n) = (12usize, 40usize, 9usize);
    let (xt, yt) = (h2(m as i64, &values(m * k, 7)), h2(k as i64, &values(k * n, 8)));
    let (xv, yv) = (xt.to_f64_vec(), yt.to_f64_vec());
    let lowered = Arc::new(lower(&func("matmul_widening")).expect("lowers"));
    let kernel = HostKernel::compile_with(lowered, true).expect("compiles");
    assert_eq!(kernel.gemm_stages(), 1, "the product is one GEMM call");
    let out = run(&kernel, &[xt, yt, z(DataType::FLOAT32, &[m as i64, n as i64])]);
    let got = out[2].to_f64_vec();
    let mut rounded_somewhere = false;
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k).map(|kk| xv[i * k + kk] * yv[kk * n + j]).sum();
            let g = got[i * n + j];
            assert!(
                (g - want).abs() <= 1e-5 * want.abs().max(1.0),
                "[{i},{j}]: {g} vs {want}"
            );
            rounded_somewhere |= f64::from(f16::from_f64(g).to_f32()) != g;
        }
    }
    assert!(rounded_somewhere, "the output keeps f32 precision, not float16's");
}
