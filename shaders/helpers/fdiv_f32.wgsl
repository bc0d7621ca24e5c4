fn fdiv_f32(a: f32, b: f32) -> f32 {
    // Tested on the bits: a driver that assumes no NaNs folds `b != 0.0` for a NaN b.
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u || (bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
    if ((bitcast<u32>(b) & 0x7fffffffu) != 0u) { return a / b; }
    if ((bitcast<u32>(a) & 0x7fffffffu) == 0u) { return bitcast<f32>(0x7fc00000u); }
    let neg = ((bitcast<u32>(a) ^ bitcast<u32>(b)) & 0x80000000u) != 0u;
    return select(bitcast<f32>(0x7f800000u), bitcast<f32>(0xff800000u), neg);
}
