//! Scalar math shared by the kernel library and the host JIT's native code, so
//! that both give the same bits.

/// `tanh` of a `float32` value in `f32` arithmetic: the odd Taylor series of `tanh`
/// to `x^17` below `|x| = 0.55` (where `1 - e` would cancel), `(1 - e) / (1 + e)`
/// with `e = exp(-2|x|)` ([`exp_nonpositive_f32`]) above, sign restored: within two
/// ulps of `tanh` computed in `f64` and rounded (tested over 400,000 values from
/// 1e-30 to 40). Branch free, so a loop over it vectorises ([`tanh_slice`], eight
/// lanes with AVX2) and four lanes run at once ([`tanh_f32x4`]). NaN stays NaN; the
/// sign of zero is kept. (An earlier form computed in `f64` within one ulp, at about
/// seven times the cost.)
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let a = x.abs();
    let z = a * a;
    let series = a + a * z * horner_f32(&TANH_SERIES, z);
    let e = exp_nonpositive_f32(-2.0 * a);
    let t = if a < 0.55 { series } else { (1.0 - e) / (1.0 + e) };
    t.copysign(x)
}

/// `-1/3, 2/15, -17/315, ..., 6404582/10854718875`: the odd series of `tanh` after
/// `x`, as coefficients of `x^3, x^5, ..., x^17` (in powers of `x^2`).
const TANH_SERIES: [f32; 8] = [
    -1.0 / 3.0,
    2.0 / 15.0,
    -17.0 / 315.0,
    62.0 / 2835.0,
    -1382.0 / 155_925.0,
    21844.0 / 6_081_075.0,
    -929_569.0 / 638_512_875.0,
    6_404_582.0 / 10_854_718_875.0,
];

/// `c[0] + z * (c[1] + z * (...))` in `f32`, separate multiplies and adds.
#[inline(always)]
fn horner_f32<const N: usize>(c: &[f32; N], z: f32) -> f32 {
    c.iter().rev().fold(0.0, |acc, &k| acc * z + k)
}

/// `erf` below this magnitude is `x + x * P(x^2)`; above it `1 - exp(Q)`.
const ERF_CUT: f32 = 0.921875;

/// `P(s)` with `erf(x) = x + x * P(x^2)` for `|x| < ERF_CUT` (a least-squares fit
/// of `erf(x) / x - 1` at Chebyshev nodes, coefficients rounded to `f32`).
const ERF_SMALL: [u32; 6] = [
    0x3e03_75d3,
    0xbec0_9376,
    0x3de7_0dad,
    0xbcdb_4bb6,
    0x3ba3_bdfe,
    0xba1d_83f8,
];

/// `G(u)` with `erfc(t) = exp(-t^2 + G(t - 2.5))` for `ERF_CUT <= t < 4` (a fit of
/// `ln(erfc(t)) + t^2` weighted by `erfc(t)`, coefficients rounded to `f32`).
const ERF_LARGE: [u32; 9] = [
    0xbfc7_45b9,
    0xbeb4_928c,
    0x3d65_d23e,
    0xbc31_cdc4,
    0x3b0e_0019,
    0xb9e3_1149,
    0x3877_2791,
    0xb7c2_43a4,
    0xb492_b722,
];

/// `c[0] + z * (c[1] + z * (...))` in `f32` (separate multiplies and adds: the same
/// bits with or without fused multiply-add hardware, scalar or vectorised).
#[inline(always)]
fn horner<const N: usize>(c: &[u32; N], z: f32) -> f32 {
    let mut r = f32::from_bits(c[N - 1]);
    let mut k = N - 1;
    while k > 0 {
        k -= 1;
        r = r * z + f32::from_bits(c[k]);
    }
    r
}

/// 1.5 * 2^23: adding it to a float of magnitude below 2^22 rounds to an integer.
const EXP_MAGIC: f32 = 12_582_912.0;
/// ln 2 in 16 bits (`k * EXP_LN2_HI` is exact for the `k` of [`exp_neg_f32`]).
const EXP_LN2_HI: f32 = 0.693_145_75;
/// ln 2 - `EXP_LN2_HI`.
const EXP_LN2_LO: f32 = 1.428_606_8e-6;
/// `1, 1, 1/2, 1/6, ..., 1/5040`: the degree-7 Taylor polynomial of `exp`.
const EXP_TAYLOR: [u32; 8] = [
    0x3f80_0000,
    0x3f80_0000,
    0x3f00_0000,
    0x3e2a_aaab,
    0x3d2a_aaab,
    0x3c08_8889,
    0x3ab6_0b61,
    0x3950_0d01,
];

/// `exp(r)` for `-20 <= r <= 0` in `f32` arithmetic: `2^k * p(f)` with `k` the
/// nearest integer to `r / ln 2` and `p` the degree-7 Taylor polynomial of `exp` on
/// `|f| <= ln(2) / 2` (within about an ulp); branch free, so it vectorises.
#[inline(always)]
fn exp_neg_f32(r: f32) -> f32 {
    let j = r * std::f32::consts::LOG2_E + EXP_MAGIC;
    let k = j - EXP_MAGIC;
    let ki = j.to_bits() as i32 - EXP_MAGIC.to_bits() as i32;
    let f = (r - k * EXP_LN2_HI) - k * EXP_LN2_LO;
    horner(&EXP_TAYLOR, f) * f32::from_bits(((ki + 127) as u32) << 23)
}

/// `exp(r)` for `r <= 0` (and NaN) in `f32` arithmetic, as softmax needs it after
/// subtracting the row's maximum: `2^k * p(f)` (the polynomial of the erf helpers) with `r` clamped
/// at -104 (where `exp` rounds to zero) and `2^k` applied as two factors, so that
/// results in the subnormal range are right too. Within about an ulp of the
/// correctly rounded `exp`; NaN stays NaN, `-inf` gives 0. Branch free.
#[inline(always)]
pub fn exp_nonpositive_f32(r: f32) -> f32 {
    // `max` keeps a NaN `r` NaN only if it is the first operand: `f32::max`
    // returns the other operand for NaN, so select explicitly.
    let c = if r.is_nan() { r } else { r.max(-104.0) };
    let j = c * std::f32::consts::LOG2_E + EXP_MAGIC;
    let k = j - EXP_MAGIC;
    let ki = j.to_bits() as i32 - EXP_MAGIC.to_bits() as i32;
    let f = (c - k * EXP_LN2_HI) - k * EXP_LN2_LO;
    // k in [-151, 0]: 2^(k/2) and 2^(k - k/2) are both normal.
    let h = ki >> 1;
    let s1 = f32::from_bits((h.wrapping_add(127) as u32) << 23);
    let s2 = f32::from_bits((ki.wrapping_sub(h).wrapping_add(127) as u32) << 23);
    // At -104 and below `exp` rounds to 0: a zero factor gives it without an
    // underflowing product (a subnormal result costs a microcode assist per lane on
    // some CPUs; the masked scores of an attention, `-inf` or `-3.4e38`, all land
    // here). A NaN `c` compares false too and stays NaN (`NaN * 0`).
    let s2 = if c > -104.0 { s2 } else { 0.0 };
    horner(&EXP_TAYLOR, f) * s1 * s2
}

/// The logistic sigmoid `1 / (1 + e^-x)` of a `float32` value, in `f32` arithmetic:
/// with `e = exp(-|x|)` ([`exp_nonpositive_f32`], never overflowing), `1 / (1 + e)`
/// for `x >= 0` and `e / (1 + e)` below. Within two ulps of the sigmoid computed in
/// `f64` and rounded (tested over every 7th `float32` in `[-105, 105]`); `NaN` stays
/// `NaN`, `±inf` give 1 and 0. Branch free, so a loop over it vectorises
/// ([`sigmoid_slice`]); the host JIT's `T.sigmoid` calls it too (the same bits in
/// native code, the interpreter and the kernel library).
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    let e = exp_nonpositive_f32(-x.abs());
    let n = if x < 0.0 { e } else { 1.0 };
    n / (1.0 + e)
}

/// The error function of a `float32` value, in `f32` arithmetic: `x + x * P(x^2)`
/// below `|x| = 0.921875`, `1 - exp(-x^2 + G(|x|))` (sign restored) up to 4, and
/// `±1` beyond (where `erf` rounds to 1). Within one ulp of `erf` computed in `f64`
/// and rounded (tested over every 5th `f32` below 4.5); `NaN` stays `NaN`,
/// `erf(-0.0)` is `-0.0`. Branch free, so a loop over it vectorises
/// ([`erf_f32x4`]).
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    let a = x.abs();
    let small = x + x * horner(&ERF_SMALL, x * x);
    // Clamped so that the large form stays finite where it is not selected.
    let t = a.clamp(ERF_CUT, 4.0);
    let r = -(t * t) + horner(&ERF_LARGE, t - 2.5);
    let large = (1.0 - exp_neg_f32(r)).copysign(x);
    if a < ERF_CUT {
        small
    } else if a < 4.0 {
        large
    } else if a.is_nan() {
        x
    } else {
        1f32.copysign(x)
    }
}

/// [`erf_f32`] of four values in place (the host JIT's vector lanes call it): the
/// same operations on four lanes at once, so the same bits.
#[inline]
pub fn erf_f32x4(v: &mut [f32; 4]) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of the x86_64 baseline; the loads and stores are
        // unaligned ones of the four floats `v` holds.
        unsafe { erf_sse2(v) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    for x in v.iter_mut() {
        *x = erf_f32(*x);
    }
}

/// [`erf_f32`] on SSE2 lanes: every arithmetic step as in the scalar function, the
/// branches as masks.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn erf_sse2(v: &mut [f32; 4]) {
    use std::arch::x86_64::*;
    let c = |bits: u32| _mm_set1_ps(f32::from_bits(bits));
    let horner = |cs: &[u32], z: __m128| {
        let (last, rest) = cs.split_last().unwrap_or((&0, &[]));
        let mut r = c(*last);
        for &ck in rest.iter().rev() {
            r = _mm_add_ps(_mm_mul_ps(r, z), c(ck));
        }
        r
    };
    let sel = |m: __m128, a: __m128, b: __m128| _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b));
    let x = _mm_loadu_ps(v.as_ptr());
    let sign_mask = _mm_set1_ps(-0.0);
    let sign = _mm_and_ps(x, sign_mask);
    let a = _mm_andnot_ps(sign_mask, x);
    let small = _mm_add_ps(x, _mm_mul_ps(x, horner(&ERF_SMALL, _mm_mul_ps(x, x))));
    let t = _mm_min_ps(_mm_max_ps(a, _mm_set1_ps(ERF_CUT)), _mm_set1_ps(4.0));
    let r = _mm_add_ps(
        _mm_xor_ps(_mm_mul_ps(t, t), sign_mask),
        horner(&ERF_LARGE, _mm_sub_ps(t, _mm_set1_ps(2.5))),
    );
    // exp_neg_f32(r)
    let magic = _mm_set1_ps(EXP_MAGIC);
    let j = _mm_add_ps(_mm_mul_ps(r, _mm_set1_ps(std::f32::consts::LOG2_E)), magic);
    let k = _mm_sub_ps(j, magic);
    let ki = _mm_sub_epi32(_mm_castps_si128(j), _mm_castps_si128(magic));
    let f = _mm_sub_ps(
        _mm_sub_ps(r, _mm_mul_ps(k, _mm_set1_ps(EXP_LN2_HI))),
        _mm_mul_ps(k, _mm_set1_ps(EXP_LN2_LO)),
    );
    let scale = _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(ki, _mm_set1_epi32(127)), 23));
    let e = _mm_mul_ps(horner(&EXP_TAYLOR, f), scale);
    let large = _mm_or_ps(_mm_andnot_ps(sign_mask, _mm_sub_ps(_mm_set1_ps(1.0), e)), sign);
    let one = _mm_or_ps(_mm_set1_ps(1.0), sign);
    let out = sel(_mm_cmpunord_ps(x, x), x, one);
    let out = sel(_mm_cmplt_ps(a, _mm_set1_ps(4.0)), large, out);
    let out = sel(_mm_cmplt_ps(a, _mm_set1_ps(ERF_CUT)), small, out);
    _mm_storeu_ps(v.as_mut_ptr(), out);
}

/// [`tanh_f32`] of four values in place (the host JIT's vector lanes call it): the
/// same function per lane, so the same bits.
#[inline]
pub fn tanh_f32x4(v: &mut [f32; 4]) {
    for x in v.iter_mut() {
        *x = tanh_f32(*x);
    }
}

/// `gelu(x) = x * (0.5 + erf(x * 0.70710678) * 0.5)` in `f32`, the steps and
/// their order of TVM's legalization of `R.nn.gelu` (so the same bits as the
/// host JIT computes for the legalized PrimFunc).
#[inline(always)]
pub fn gelu_f32(x: f32) -> f32 {
    x * (0.5 + erf_f32(x * std::f32::consts::FRAC_1_SQRT_2) * 0.5)
}

/// `sqrt(2 / pi)` rounded to `f32` (TVM's `T.float32(0.79788456080286541)`).
const SQRT_2_OVER_PI: f32 = 0.797_884_6;
/// `T.float32(0.044714999999999998)`.
const GELU_TANH_CUBIC: f32 = 0.044_715;

/// `gelu_tanh(x) = (0.5 x) * (1 + tanh((sqrt(2/pi) x) * (1 + (0.044715 x) x)))` in
/// `f32`, the steps and their order of TVM's legalization of `R.nn.gelu_tanh`.
#[inline(always)]
pub fn gelu_tanh_f32(x: f32) -> f32 {
    let inner = (SQRT_2_OVER_PI * x) * (1.0 + (GELU_TANH_CUBIC * x) * x);
    (0.5 * x) * (1.0 + tanh_f32(inner))
}

/// `out[i] = f(x[i])` over the common length with `f` inlined into a loop that is
/// compiled for AVX-512 or AVX2 when the CPU has them (chosen at run time), else
/// for the baseline: the same IEEE operations in the same order per element (no
/// fused multiply-adds, no reassociation), so every lane gives the scalar bits.
macro_rules! lanes_of {
    ($(#[$m:meta])* $name:ident, $f:path) => {
        lanes_of!($(#[$m])* $name, $f, f32);
    };
    ($(#[$m:meta])* $name:ident, $f:path, $out:ty) => {
        $(#[$m])*
        pub fn $name(x: &[f32], out: &mut [$out]) {
            #[inline(always)]
            fn body(x: &[f32], out: &mut [$out]) {
                for (o, v) in out.iter_mut().zip(x) {
                    *o = $f(*v);
                }
            }
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512(x: &[f32], out: &mut [$out]) {
                    body(x, out)
                }
                #[target_feature(enable = "avx2")]
                unsafe fn avx2(x: &[f32], out: &mut [$out]) {
                    body(x, out)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has the feature the function is compiled for.
                    return unsafe { avx512(x, out) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: as above.
                    return unsafe { avx2(x, out) };
                }
            }
            body(x, out)
        }
    };
}

lanes_of!(
    /// [`gelu_f32`] of every element of `x` into `out`, in vector lanes.
    gelu_slice,
    gelu_f32
);
lanes_of!(
    /// [`gelu_tanh_f32`] of every element of `x` into `out`, in vector lanes.
    gelu_tanh_slice,
    gelu_tanh_f32
);
lanes_of!(
    /// [`erf_f32`] of every element of `x` into `out`, in vector lanes.
    erf_slice,
    erf_f32
);
lanes_of!(
    /// [`tanh_f32`] of every element of `x` into `out`, in vector lanes.
    tanh_slice,
    tanh_f32
);
lanes_of!(
    /// [`sigmoid_f32`] of every element of `x` into `out`, in vector lanes.
    sigmoid_slice,
    sigmoid_f32
);

/// [`exp_nonpositive_f32`] of every element of `v`, in place, in AVX-512 or AVX2
/// lanes when the CPU has them (chosen at run time): the same bits as the scalar
/// function.
pub fn exp_nonpositive_slice_in_place(v: &mut [f32]) {
    #[inline(always)]
    fn body(v: &mut [f32]) {
        for x in v.iter_mut() {
            *x = exp_nonpositive_f32(*x);
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f")]
        unsafe fn avx512(v: &mut [f32]) {
            body(v)
        }
        #[target_feature(enable = "avx2")]
        unsafe fn avx2(v: &mut [f32]) {
            body(v)
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the feature the function is compiled for.
            return unsafe { avx512(v) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { avx2(v) };
        }
    }
    body(v)
}

/// The `f32` value of the `float16` bit pattern `h` (exact), branch free.
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    let (e, m) = ((h >> 10) & 0x1f, h & 0x3ff);
    let normal = ((e + 112) << 23) | (m << 13);
    let special = 0x7f80_0000 | (m << 13);
    // Subnormal (and zero): m * 2^-24, exact in f32.
    let sub = (m as f32 * f32::from_bits(0x3380_0000)).to_bits();
    let v = if e == 0 {
        sub
    } else if e == 0x1f {
        special
    } else {
        normal
    };
    f32::from_bits(sign | v)
}

/// `2^-14`, the least normal `float16` magnitude.
const F16_MIN_NORMAL: f32 = 6.103_515_6e-5;

/// `v` rounded to the nearest `float16` value (ties to even; beyond the largest
/// finite `float16` to infinity; NaN stays NaN), as an `f32`: the rounding the
/// host JIT applies to every `float16` arithmetic result. Branch free.
#[inline(always)]
pub fn round_f16(v: f32) -> f32 {
    let a = v.abs();
    let b = a.to_bits();
    // Normal range: round the significand to 10 bits, ties to even (a carry moves
    // into the exponent as it should).
    let normal = f32::from_bits((b + 0xfff + ((b >> 13) & 1)) & !0x1fff);
    // Subnormal range: to a multiple of 2^-24 (the ulp of f32 values in [0.5, 1)).
    let sub = (a + 0.5) - 0.5;
    let r = if a < F16_MIN_NORMAL {
        sub
    } else if normal > 65504.0 {
        f32::INFINITY
    } else {
        normal
    };
    if v.is_nan() {
        v
    } else {
        r.copysign(v)
    }
}

/// The `float16` bit pattern of `v`, a value [`round_f16`] returned (exact).
#[inline(always)]
pub fn f32_to_f16_exact(v: f32) -> u16 {
    let b = v.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let a = v.abs();
    let normal = ((b & 0x7fff_ffff).wrapping_sub(112 << 23) >> 13) as u16;
    let sub = (a * 16_777_216.0) as u16;
    let bits = if v.is_nan() {
        0x7e00
    } else if a == f32::INFINITY {
        0x7c00
    } else if a < F16_MIN_NORMAL {
        sub
    } else {
        normal
    };
    sign | bits
}

/// `T.float16(0.70710678118654757)`: `1/sqrt(2)` rounded once to `float16`.
const F16_FRAC_1_SQRT_2: f32 = 0.707_031_25;
/// `T.float16(0.79788456080286541)`: `sqrt(2/pi)` rounded once to `float16`.
const F16_SQRT_2_OVER_PI: f32 = 0.797_851_56;
/// `T.float16(0.044714999999999998)` rounded once to `float16`.
const F16_GELU_TANH_CUBIC: f32 = 0.044_708_252;

/// `gelu` of `float16` values as TVM legalizes it for that dtype: every step
/// rounded to `float16`, `erf` computed in `f32` (as the host JIT runs the
/// legalized PrimFunc).
#[inline(always)]
fn gelu_f16_steps(x: f32, c: &[f32; 3]) -> f32 {
    let m = round_f16(x * c[0]);
    let e = round_f16(erf_f32(m));
    let h = round_f16(e * c[1]);
    let s = round_f16(c[1] + h);
    round_f16(x * s)
}

/// `gelu_tanh` of a `float16` value as TVM legalizes it for that dtype, every
/// step rounded to `float16` (`tanh` computed in `f32`).
#[inline(always)]
fn gelu_tanh_f16_steps(x: f32, c: &[f32; 3]) -> f32 {
    let m0 = round_f16(0.5 * x);
    let m1 = round_f16(c[0] * x);
    let m2 = round_f16(c[1] * x);
    let m3 = round_f16(m2 * x);
    let a = round_f16(1.0 + m3);
    let m4 = round_f16(m1 * a);
    let t = round_f16(tanh_f32(m4));
    let a1 = round_f16(1.0 + t);
    round_f16(m0 * a1)
}

/// `out[i] = f(widen(x[i]))` narrowed, for `float16` bit patterns, compiled for
/// AVX-512 / AVX2 when the CPU has them (as [`lanes_of`]: the same bits per lane).
macro_rules! f16_lanes_of {
    ($(#[$m:meta])* $name:ident, $f:path, $consts:expr) => {
        $(#[$m])*
        pub fn $name(x: &[u16], out: &mut [u16]) {
            #[inline(always)]
            fn body(x: &[u16], out: &mut [u16], c: &[f32; 3]) {
                for (o, v) in out.iter_mut().zip(x) {
                    *o = f32_to_f16_exact($f(f16_to_f32(*v), c));
                }
            }
            let c: [f32; 3] = $consts;
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512(x: &[u16], out: &mut [u16], c: &[f32; 3]) {
                    body(x, out, c)
                }
                #[target_feature(enable = "avx2")]
                unsafe fn avx2(x: &[u16], out: &mut [u16], c: &[f32; 3]) {
                    body(x, out, c)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has the feature the function is compiled for.
                    return unsafe { avx512(x, out, &c) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: as above.
                    return unsafe { avx2(x, out, &c) };
                }
            }
            body(x, out, &c)
        }
    };
}

f16_lanes_of!(
    /// `gelu` of `float16` values (bit patterns), every legalized step rounded to
    /// `float16` as the host JIT computes it.
    gelu_f16_slice,
    gelu_f16_steps,
    [F16_FRAC_1_SQRT_2, 0.5, 0.0]
);
f16_lanes_of!(
    /// `gelu_tanh` of `float16` values (bit patterns), every legalized step rounded
    /// to `float16` as the host JIT computes it.
    gelu_tanh_f16_slice,
    gelu_tanh_f16_steps,
    [F16_SQRT_2_OVER_PI, F16_GELU_TANH_CUBIC, 0.0]
);

/// The `float16` bits of `v` rounded to nearest, ties to even.
#[inline(always)]
fn narrow_f16(v: f32) -> u16 {
    f32_to_f16_exact(round_f16(v))
}

lanes_of!(
    /// The `float16` bit patterns of `x` (each rounded to nearest, ties to even, as
    /// `half::f16::from_f32`) into `out`, over the common length; in vector lanes
    /// (AVX-512 / AVX2, chosen at run time).
    narrow_f16_slice,
    narrow_f16,
    u16
);

#[cfg(test)]
mod tests {
    use super::{erf_f32, erf_f32x4, tanh_f32, tanh_f32x4};
    use super::{erf_slice, gelu_f32, gelu_slice, gelu_tanh_f32, gelu_tanh_slice, tanh_slice};
    use super::{f16_to_f32, f32_to_f16_exact, gelu_f16_slice, gelu_tanh_f16_slice, narrow_f16_slice, round_f16};
    use super::{F16_FRAC_1_SQRT_2, F16_GELU_TANH_CUBIC, F16_SQRT_2_OVER_PI};

    /// Units in the last place between two `f32` values (sign-magnitude order).
    fn ulps(a: f32, b: f32) -> i64 {
        let key = |v: f32| {
            let b = v.to_bits() as i32 as i64;
            if b < 0 {
                i64::from(i32::MIN) - b
            } else {
                b
            }
        };
        (key(a) - key(b)).abs()
    }

    #[test]
    fn erf_within_an_ulp_of_the_f64_result() {
        // Every 5th float from 0 to 4.5 (both signs), plus tiny and huge magnitudes.
        let end = 4.5f32.to_bits();
        let mut worst = (0, 0.0f32);
        let mut bits = 0u32;
        while bits <= end {
            let m = f32::from_bits(bits);
            for x in [m, -m] {
                let want = libm::erf(f64::from(x)) as f32;
                let u = ulps(erf_f32(x), want);
                if u > worst.0 {
                    worst = (u, x);
                }
            }
            bits += 5;
        }
        assert!(worst.0 <= 1, "erf({}) is {} ulps off", worst.1, worst.0);
        for x in [4.0f32, 4.5, 5.0, 10.0, 1e10, f32::MAX, f32::INFINITY] {
            assert_eq!(erf_f32(x), 1.0);
            assert_eq!(erf_f32(-x), -1.0);
        }
        for x in [f32::MIN_POSITIVE, 1e-40, f32::from_bits(1), 1e-20] {
            assert!(ulps(erf_f32(x), libm::erf(f64::from(x)) as f32) <= 1, "erf({x})");
        }
        assert!(erf_f32(f32::NAN).is_nan());
        assert!(erf_f32(-f32::NAN).is_nan());
        assert_eq!(erf_f32(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(erf_f32(-0.0).to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn sigmoid_within_two_ulps_and_lanes_bit_equal() {
        use super::{sigmoid_f32, sigmoid_slice};
        // Every 7th float of [-105, 105] (results down to subnormal and up to 1).
        let mut xs = Vec::new();
        for sign in [0u32, 0x8000_0000] {
            let mut bits = 0u32;
            while f32::from_bits(bits) <= 105.0 {
                xs.push(f32::from_bits(bits | sign));
                bits += 7;
            }
        }
        xs.extend([f32::INFINITY, f32::NEG_INFINITY, f32::MAX, f32::MIN, 1e30, -1e30]);
        let mut worst = (0, 0.0f32);
        for &x in &xs {
            let want = (1.0 / (1.0 + (-f64::from(x)).exp())) as f32;
            let u = ulps(sigmoid_f32(x), want);
            if u > worst.0 {
                worst = (u, x);
            }
        }
        assert!(worst.0 <= 2, "sigmoid({}) is {} ulps off", worst.1, worst.0);
        assert_eq!(sigmoid_f32(0.0), 0.5);
        assert_eq!(sigmoid_f32(f32::INFINITY), 1.0);
        assert_eq!(sigmoid_f32(f32::NEG_INFINITY), 0.0);
        assert!(sigmoid_f32(f32::NAN).is_nan());
        let mut lanes = vec![0.0; xs.len()];
        sigmoid_slice(&xs, &mut lanes);
        for (x, l) in xs.iter().zip(&lanes) {
            assert_eq!(l.to_bits(), sigmoid_f32(*x).to_bits(), "lane of sigmoid({x})");
        }
    }

    #[test]
    fn exp_of_nonpositive_values_within_an_ulp_and_lanes_bit_equal() {
        use super::{exp_nonpositive_f32, exp_nonpositive_slice_in_place};
        // Every 3rd float from -0.0 down to -110 (normal and subnormal results).
        let mut xs = Vec::new();
        let mut bits = (-0.0f32).to_bits();
        while f32::from_bits(bits) >= -110.0 {
            xs.push(f32::from_bits(bits));
            bits += 3;
        }
        xs.extend([0.0, f32::NEG_INFINITY, -1e30, f32::MIN, f32::NAN, -f32::NAN]);
        let mut worst = (0, 0.0f32);
        for &x in &xs {
            let got = exp_nonpositive_f32(x);
            if x.is_nan() {
                assert!(got.is_nan(), "exp({x})");
                continue;
            }
            let u = ulps(got, libm::exp(f64::from(x)) as f32);
            if u > worst.0 {
                worst = (u, x);
            }
        }
        assert!(worst.0 <= 1, "exp({}) is {} ulps off", worst.1, worst.0);
        assert_eq!(exp_nonpositive_f32(0.0), 1.0);
        assert_eq!(exp_nonpositive_f32(-0.0), 1.0);
        assert_eq!(exp_nonpositive_f32(f32::NEG_INFINITY), 0.0);
        let mut lanes = xs.clone();
        exp_nonpositive_slice_in_place(&mut lanes);
        for (x, l) in xs.iter().zip(&lanes) {
            assert_eq!(
                l.to_bits(),
                exp_nonpositive_f32(*x).to_bits(),
                "lanes differ at exp({x})"
            );
        }
    }

    /// A dense run over the range where the functions are not constant, every 251st
    /// `f32` bit pattern (both signs, subnormals, infinities, NaNs) and the specials.
    fn sample_inputs() -> Vec<f32> {
        let dense = (0..400_000u32).map(|i| (i as f32 - 200_000.0) * 5e-5);
        let stride = (0..=u32::MAX).step_by(251).map(f32::from_bits);
        let specials = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            f32::MIN_POSITIVE,
        ];
        dense.chain(stride).chain(specials).collect()
    }

    /// Four-lane functions against their scalar forms, bit for bit: a stride through
    /// every `f32` bit pattern (both signs, subnormals, infinities, NaNs), and a dense
    /// run over the range where the functions are not constant.
    fn lanes_match(f4: fn(&mut [f32; 4]), f: fn(f32) -> f32) {
        let xs = sample_inputs();
        for c in xs.chunks(4) {
            let mut v = [0.0f32; 4];
            v[..c.len()].copy_from_slice(c);
            let orig = v;
            f4(&mut v);
            for (got, x) in v.iter().zip(orig) {
                assert_eq!(got.to_bits(), f(x).to_bits(), "{x}");
            }
        }
    }

    #[test]
    fn erf_lanes_match_the_scalar_function() {
        lanes_match(erf_f32x4, erf_f32);
    }

    #[test]
    fn tanh_lanes_match_the_scalar_function() {
        lanes_match(tanh_f32x4, tanh_f32);
    }

    #[test]
    fn tanh_within_two_ulps_of_the_f64_result() {
        for i in 0..200_000 {
            let m = 10f32.powf(-30.0 + 31.6 * i as f32 / 200_000.0);
            for x in [m, -m] {
                let (got, want) = (tanh_f32(x), f64::from(x).tanh() as f32);
                let ulps = (got.to_bits() as i64 - want.to_bits() as i64).abs();
                assert!(ulps <= 2, "tanh({x}) = {got}, want {want}");
            }
        }
        // Around the switch from the series to the exponential form.
        let mut x = 0.5f32;
        while x < 0.6 {
            let ulps = (tanh_f32(x).to_bits() as i64 - (f64::from(x).tanh() as f32).to_bits() as i64).abs();
            assert!(ulps <= 2, "tanh({x})");
            x = f32::from_bits(x.to_bits() + 1);
        }
        assert!(tanh_f32(f32::NAN).is_nan());
        assert_eq!((tanh_f32(f32::INFINITY), tanh_f32(f32::NEG_INFINITY)), (1.0, -1.0));
        assert!(tanh_f32(-0.0).is_sign_negative());
    }

    /// The slice forms (vector lanes for this CPU) against their scalar functions:
    /// the same bits for every value (NaN stays NaN).
    #[test]
    fn slice_lanes_match_the_scalar_functions() {
        let xs = sample_inputs();
        type Pair = (fn(&[f32], &mut [f32]), fn(f32) -> f32, &'static str);
        let fs: [Pair; 4] = [
            (gelu_slice, gelu_f32, "gelu"),
            (gelu_tanh_slice, gelu_tanh_f32, "gelu_tanh"),
            (erf_slice, erf_f32, "erf"),
            (tanh_slice, tanh_f32, "tanh"),
        ];
        for (slice, f, name) in fs {
            // Lengths that leave every remainder of a vector.
            for n in [xs.len(), 1, 7, 15, 17, 33] {
                let mut out = vec![0.0f32; n];
                slice(&xs[..n], &mut out);
                for (got, &x) in out.iter().zip(&xs[..n]) {
                    let want = f(x);
                    assert!(
                        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                        "{name}({x}) = {got}, scalar {want}"
                    );
                }
            }
        }
        // The formulas against f64 references (within the documented tolerance).
        for i in 0..20_000 {
            let x = (i as f32 - 10_000.0) * 1e-3;
            let xd = f64::from(x);
            let g = xd * 0.5 * (1.0 + libm::erf(xd / std::f64::consts::SQRT_2));
            assert!(
                (f64::from(gelu_f32(x)) - g).abs() <= 1e-6 * (1.0 + g.abs()),
                "gelu({x})"
            );
            let t = 0.5 * xd * (1.0 + (0.797_884_560_802_865_4 * (xd + 0.044715 * xd * xd * xd)).tanh());
            assert!(
                (f64::from(gelu_tanh_f32(x)) - t).abs() <= 1e-6 * (1.0 + t.abs()),
                "gelu_tanh({x})"
            );
        }
    }

    /// `round_f16` against the `half` crate's conversion (round to nearest even)
    /// over a stride through every f32 and dense runs near the subnormal boundary,
    /// the largest finite values and the ties; the narrowing and widening exact.
    #[test]
    fn float16_rounding_matches_the_half_crate() {
        let stride = (0..=u32::MAX).step_by(97).map(f32::from_bits);
        let near = |c: f32| (0..20_000u32).map(move |i| f32::from_bits(c.to_bits() - 10_000 + i));
        let xs = stride
            .chain(near(6.103_515_6e-5))
            .chain(near(65504.0))
            .chain(near(65520.0))
            .chain(near(1.0))
            .chain(near(5.960_464_5e-8));
        for x in xs {
            for v in [x, -x] {
                let want = half::f16::from_f32(v);
                let got = round_f16(v);
                if v.is_nan() {
                    assert!(got.is_nan());
                    continue;
                }
                assert_eq!(got.to_bits(), want.to_f32().to_bits(), "round_f16({v:e})");
                assert_eq!(f32_to_f16_exact(got), want.to_bits(), "narrow {v:e}");
            }
        }
        // The slice form (vector lanes) against the crate, on values around every
        // float16 and between neighbours.
        let xs: Vec<f32> = (0..=u16::MAX)
            .flat_map(|h| {
                let v = half::f16::from_bits(h).to_f32();
                [
                    v,
                    f32::from_bits(v.to_bits().wrapping_add(0x1000)),
                    f32::from_bits(v.to_bits() | 0xfff),
                ]
            })
            .collect();
        let mut bits = vec![0u16; xs.len()];
        narrow_f16_slice(&xs, &mut bits);
        for (&v, &b) in xs.iter().zip(&bits) {
            let want = half::f16::from_f32(v);
            assert!(
                b == want.to_bits() || (v.is_nan() && want.is_nan()),
                "narrow {v:e}: {b:#x}"
            );
        }
        for h in 0..=u16::MAX {
            let want = half::f16::from_bits(h).to_f32();
            let got = f16_to_f32(h);
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "widen {h:#x}"
            );
        }
    }

    /// The `float16` gelu forms: every `float16` input, in lanes, against the same
    /// steps computed one value at a time with the `half` crate's rounding.
    #[test]
    fn float16_gelu_lanes_match_stepwise_rounding() {
        let r = |v: f32| half::f16::from_f32(v).to_f32();
        let c = |v: f64| half::f16::from_f64(v).to_f32();
        assert_eq!(F16_FRAC_1_SQRT_2, c(std::f64::consts::FRAC_1_SQRT_2));
        assert_eq!(F16_SQRT_2_OVER_PI, c(0.797_884_560_802_865_4));
        assert_eq!(F16_GELU_TANH_CUBIC, c(0.044_715));
        let xs: Vec<u16> = (0..=u16::MAX).collect();
        let mut out = vec![0u16; xs.len()];
        gelu_f16_slice(&xs, &mut out);
        for (&h, &got) in xs.iter().zip(&out) {
            let x = half::f16::from_bits(h).to_f32();
            let m = r(x * c(std::f64::consts::FRAC_1_SQRT_2));
            let want = r(x * r(0.5 + r(r(erf_f32(m)) * 0.5)));
            let g = half::f16::from_bits(got).to_f32();
            assert!(
                g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                "gelu f16 {x}: {g} vs {want}"
            );
        }
        gelu_tanh_f16_slice(&xs, &mut out);
        for (&h, &got) in xs.iter().zip(&out) {
            let x = half::f16::from_bits(h).to_f32();
            let inner = r(r(c(0.797_884_560_802_865_4) * x) * r(1.0 + r(r(c(0.044_715) * x) * x)));
            let want = r(r(0.5 * x) * r(1.0 + r(tanh_f32(inner))));
            let g = half::f16::from_bits(got).to_f32();
            assert!(
                g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                "gelu_tanh f16 {x}: {g} vs {want}"
            );
        }
    }
}
