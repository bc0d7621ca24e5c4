fn sat_f32_i16(x: f32) -> i32 {
    if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return 0i; }
    return i32(clamp(x, -32768.0f, 32767.0f));
}
