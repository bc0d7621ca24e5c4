fn sigmoid_f32(x: f32) -> f32 {
    if (x >= 0.0f) { return 1.0f / (1.0f + exp(-x)); }
    let e = exp(x);
    return e / (1.0f + e);
}
