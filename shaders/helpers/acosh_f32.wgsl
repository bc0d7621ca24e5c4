fn acosh_f32(x: f32) -> f32 {
    // NaN below 1 (tested on the bits for a NaN x, which a driver may fold).
    if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u || x < 1.0f) { return bitcast<f32>(0x7fc00000u); }
    // log(x + sqrt(x * x - 1)) overflows in x * x: for large x it is log(2x).
    if (x >= 4096.0f) { return log(x) + 0.6931471805599453f; }
    return acosh(x);
}
