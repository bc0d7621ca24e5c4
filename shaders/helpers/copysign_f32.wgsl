fn copysign_f32(a: f32, b: f32) -> f32 {
    return select(abs(a), -abs(a), (bitcast<u32>(b) & 0x80000000u) != 0u);
}
