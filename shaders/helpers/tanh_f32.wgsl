fn tanh_f32(x: f32) -> f32 {
    // Below 1/16 an odd series (the builtin `tanh` of llvmpipe is off by up to 3e-8
    // in absolute terms, which made tanh(1e-8) = 3e-8), below 0.5 the builtin, above
    // it through `exp` (the builtin overflows to NaN for large |x| on some drivers).
    let a = abs(x);
    if (a < 0.0625f) {
        let x2 = x * x;
        return x + x * x2 * (-0.33333334f + x2 * (0.13333334f + x2 * (-0.05396825f + x2 * 0.021869488f)));
    }
    if (a < 0.5f) { return tanh(x); }
    let e = exp(-2.0f * a);
    return sign(x) * (1.0f - e) / (1.0f + e);
}
