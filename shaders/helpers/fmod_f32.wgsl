fn fmod_f32(a: f32, b: f32) -> f32 {
    if (b == 0.0f) { return bitcast<f32>(0x7fc00000u); }
    return a % b;
}
