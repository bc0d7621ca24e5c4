fn pow_f32(a: f32, b: f32) -> f32 {
    if (a > 0.0f) { return pow(a, b); }
    if (a == 0.0f) { return select(select(0.0f, 1.0f, b == 0.0f), bitcast<f32>(0x7f800000u), b < 0.0f); }
    if (b != trunc(b)) { return bitcast<f32>(0x7fc00000u); }
    let r = pow(-a, b);
    return select(r, -r, (abs(b) % 2.0f) == 1.0f);
}
