fn sat_f32_i32(x: f32) -> i32 {
    if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return 0i; }
    if (x >= 2147483648.0f) { return 2147483647i; }
    if (x <= -2147483648.0f) { return -2147483647i - 1i; }
    return i32(x);
}
