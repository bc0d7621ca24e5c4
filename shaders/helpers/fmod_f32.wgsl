fn fmod_f32(a: f32, b: f32) -> f32 {
    // Operands tested on their bits (drivers fold comparisons with NaN or inf).
    let ab = bitcast<u32>(a) & 0x7fffffffu;
    let bb = bitcast<u32>(b) & 0x7fffffffu;
    if (bb == 0u || ab >= 0x7f800000u || bb > 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
    // C's fmod: a finite x modulo an infinity is x.
    if (bb == 0x7f800000u) { return a; }
    return a % b;
}
