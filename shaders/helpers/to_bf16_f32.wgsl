fn to_bf16_f32(x: f32) -> f32 {
    // `x` rounded to the nearest bfloat16 value (ties to even), kept in an f32:
    // bfloat16 tensors are held widened to f32 words. bfloat16 is the top half of
    // an f32, so the rounding is integer arithmetic on the bits; NaN stays a (quiet)
    // NaN and values past bfloat16's range become infinities.
    let b = bitcast<u32>(x);
    if ((b & 0x7fffffffu) > 0x7f800000u) { return bitcast<f32>((b | 0x00400000u) & 0xffff0000u); }
    return bitcast<f32>((b + 0x7fffu + ((b >> 16u) & 1u)) & 0xffff0000u);
}
