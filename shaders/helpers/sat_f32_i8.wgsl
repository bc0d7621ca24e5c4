fn sat_f32_i8(x: f32) -> i32 {
    if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return 0i; }
    return i32(clamp(x, -128.0f, 127.0f));
}
