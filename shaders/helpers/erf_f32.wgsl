fn erf_f32(x: f32) -> f32 {
    let a = abs(x);
    let t = 1.0f / (1.0f + 0.3275911f * a);
    let y = 1.0f - (((((1.061405429f * t - 1.453152027f) * t) + 1.421413741f) * t - 0.284496736f) * t + 0.254829592f) * t * exp(-a * a);
    return select(y, -y, x < 0.0f);
}
