fn sat_f32_u8(x: f32) -> u32 {
    if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return 0u; }
    return u32(clamp(x, 0.0f, 255.0f));
}
