fn tanh_f32(x: f32) -> f32 {
    if (abs(x) < 0.5f) { return tanh(x); }
    let e = exp(-2.0f * abs(x));
    return sign(x) * (1.0f - e) / (1.0f + e);
}
