fn isnan_f64(x: f64) -> bool {
    // the f32 of a NaN is a NaN, of a finite f64 never one
    return (bitcast<u32>(f32(x)) & 0x7fffffffu) > 0x7f800000u;
}
