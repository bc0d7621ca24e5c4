fn isfinite_f64(x: f64) -> bool {
    return (bitcast<u32>(f32(x * 9.332636185032189e-302lf)) & 0x7fffffffu) < 0x7f800000u;
}
