//! Math intrinsics shared by the host executor (reference semantics) and the WGSL
//! emitter (which mirrors them).

use relax_ir::tir::{Intrinsic, Intrinsic as I};
use relax_ir::{DataType, TypeCode};

/// A constant scalar.
#[derive(Clone, Copy, Debug)]
pub enum Scalar {
    /// Integer (and bool).
    I(i64),
    /// Float.
    F(f64),
}

/// `min` with the NaN-ignoring semantics of `fmin`.
#[inline]
pub fn fmin(a: f64, b: f64) -> f64 {
    a.min(b)
}
/// `max` with the NaN-ignoring semantics of `fmax`.
#[inline]
pub fn fmax(a: f64, b: f64) -> f64 {
    a.max(b)
}

/// `pow` (C semantics). A square or a cube (the exponents of a variance and of
/// GELU's tanh form) is multiplied out: one rounding, as the correctly rounded
/// `pow` gives for a square, and a product the host's native code computes inline.
pub fn pow(a: f64, b: f64) -> f64 {
    if b == 2.0 {
        a * a
    } else if b == 3.0 {
        a * a * a
    } else {
        a.powf(b)
    }
}

/// `tanh` of a `float32` value, as the host kernel library computes it (within two
/// ulps of the `f64` result; see [`relax_host_kernels::math::tanh_f32`]).
pub fn tanh_f32(x: f32) -> f32 {
    relax_host_kernels::math::tanh_f32(x)
}

/// The error function (Abramowitz & Stegun 7.1.26 refined: |error| < 1.5e-7;
/// the WGSL emitter uses the same formula).
pub fn erf(x: f64) -> f64 {
    let s = if x < 0.0 { -1.0 } else { 1.0 };
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.3275911 * a);
    let y = 1.0
        - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592)
            * t
            * (-a * a).exp();
    s * y
}

/// Overflow-safe `tanh`.
pub fn tanh(x: f64) -> f64 {
    x.tanh()
}

/// The unary float intrinsics in single precision (libm's `f32` functions, and
/// formulas within an ulp of the `f64` result): the host's `float32` native code and
/// its `float16`/`bfloat16` math (which TVM's LLVM code also computes in `f32`, then
/// rounds), in native code and in the interpreter alike.
pub fn unary_f32(op: Intrinsic) -> Option<fn(f32) -> f32> {
    Some(match op {
        I::Tanh => tanh_f32,
        I::Sigmoid => relax_host_kernels::math::sigmoid_f32,
        I::Erf => relax_host_kernels::math::erf_f32,
        _ => return op.float_math()?.f32,
    })
}

/// Overflow-safe logistic sigmoid.
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// The unary float intrinsics: those the intrinsic table does not define
/// ([`Intrinsic::float_math`]) here, the others from it.
pub fn unary_f64(op: Intrinsic) -> Option<fn(f64) -> f64> {
    Some(match op {
        I::Tanh => tanh,
        I::Erf => erf,
        I::Sigmoid => sigmoid,
        _ => return op.float_math().map(|m| m.f64),
    })
}

/// `T.max_value(dtype)` / `T.min_value(dtype)`.
pub fn limit(dtype: DataType, max: bool) -> Option<Scalar> {
    Some(match (dtype.code, dtype.bits) {
        (TypeCode::UInt, 1) => Scalar::I(max as i64),
        (TypeCode::Int, b @ 2..=64) => {
            let m = ((1u128 << (b - 1)) - 1) as i64;
            Scalar::I(if max { m } else { -m - 1 })
        }
        (TypeCode::UInt, b @ 2..=63) => Scalar::I(if max { ((1u128 << b) - 1) as i64 } else { 0 }),
        (TypeCode::UInt, 64) => Scalar::I(if max { -1 } else { 0 }),
        (TypeCode::Float, 16) => Scalar::F(if max { 65504.0 } else { -65504.0 }),
        (TypeCode::Float, 32) => Scalar::F(if max { f32::MAX as f64 } else { f32::MIN as f64 }),
        (TypeCode::Float, 64) => Scalar::F(if max { f64::MAX } else { f64::MIN }),
        (TypeCode::BFloat, 16) => {
            let v = half::bf16::MAX.to_f64();
            Scalar::F(if max { v } else { -v })
        }
        _ => {
            let v = dtype.mini_float()?.max();
            Scalar::F(if max { v } else { -v })
        }
    })
}
