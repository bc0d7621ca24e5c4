fn pow_f32(a: f32, b: f32) -> f32 {
    // C's pow: x^0 is 1 and 1^y is 1 even for NaN.
    if (b == 0.0f || a == 1.0f) { return 1.0f; }
    if (a > 0.0f) { return pow(a, b); }
    if (a == 0.0f) { return select(select(0.0f, 1.0f, b == 0.0f), bitcast<f32>(0x7f800000u), b < 0.0f); }
    if (b != trunc(b)) { return bitcast<f32>(0x7fc00000u); }
    let r = pow(-a, b);
    return select(r, -r, (abs(b) % 2.0f) == 1.0f);
}
