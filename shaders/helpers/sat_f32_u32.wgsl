fn sat_f32_u32(x: f32) -> u32 {
    if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return 0u; }
    if (x >= 4294967296.0f) { return 4294967295u; }
    if (x <= 0.0f) { return 0u; }
    return u32(x);
}
