fn isinf_f64(x: f64) -> bool {
    // scaled by 2^-1000 first: the f32 of a finite f64 past f32's range is not inf
    return (bitcast<u32>(f32(x * 9.332636185032189e-302lf)) & 0x7fffffffu) == 0x7f800000u;
}
