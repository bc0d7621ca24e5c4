fn pow_f32(a: f32, b: f32) -> f32 {
    // C's pow: x^0 is 1 and 1^y is 1 even for NaN; any other NaN operand gives NaN.
    // Tested on the bits: a driver that assumes no NaNs folds comparisons with one.
    if ((bitcast<u32>(b) & 0x7fffffffu) == 0u || bitcast<u32>(a) == 0x3f800000u) { return 1.0f; }
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u || (bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
    if (a > 0.0f) { return pow(a, b); }
    if (a == 0.0f) { return select(select(0.0f, 1.0f, b == 0.0f), bitcast<f32>(0x7f800000u), b < 0.0f); }
    if (b != trunc(b)) { return bitcast<f32>(0x7fc00000u); }
    let r = pow(-a, b);
    return select(r, -r, (abs(b) % 2.0f) == 1.0f);
}
