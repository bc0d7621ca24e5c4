fn sat_f32_i64(x: f32) -> i64 {
    if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return 0li; }
    if (x >= 9223372036854775808.0f) { return 9223372036854775807li; }
    if (x <= -9223372036854775808.0f) { return -9223372036854775807li - 1li; }
    return i64(x);
}
