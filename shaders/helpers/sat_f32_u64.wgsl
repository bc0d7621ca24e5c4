fn sat_f32_u64(x: f32) -> u64 {
    if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return 0lu; }
    if (x >= 18446744073709551616.0f) { return 18446744073709551615lu; }
    if (x <= 0.0f) { return 0lu; }
    return u64(x);
}
