fn asinh_f32(x: f32) -> f32 {
    // log(|x| + sqrt(x * x + 1)) overflows in x * x: for large |x| it is log(2|x|).
    if (abs(x) >= 4096.0f) { return sign(x) * (log(abs(x)) + 0.6931471805599453f); }
    return asinh(x);
}
