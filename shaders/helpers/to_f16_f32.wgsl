fn to_f16_f32(x: f32) -> f32 {
    // `x` rounded to the nearest float16 value, kept in an f32 (adapters without
    // SHADER_F16 hold float16 tensors widened to f32 words). NaN stays NaN and
    // values past float16's range become infinities (tested on the bits: the
    // packing is undefined there).
    let b = bitcast<u32>(x) & 0x7fffffffu;
    if (b > 0x7f800000u) { return x; }
    if (b >= 0x477ff000u) { return bitcast<f32>((bitcast<u32>(x) & 0x80000000u) | 0x7f800000u); }
    return unpack2x16float(pack2x16float(vec2<f32>(x, 0.0f))).x;
}
