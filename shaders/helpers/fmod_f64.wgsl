fn fmod_f64(a: f64, b: f64) -> f64 {
    // C's fmod, exactly. NaN and infinities are told apart on the bits of the f32 of
    // the operand scaled by 2^-1000 (finite stays finite, inf inf, NaN NaN; WGSL has
    // no f64 bitcast, and drivers fold comparisons with NaN).
    let qa = bitcast<u32>(f32(a * 9.332636185032189e-302lf)) & 0x7fffffffu;
    let qb = bitcast<u32>(f32(b * 9.332636185032189e-302lf)) & 0x7fffffffu;
    if (b == 0.0lf || qa >= 0x7f800000u || qb > 0x7f800000u) { return f64(bitcast<f32>(0x7fc00000u)); }
    if (qb == 0x7f800000u) { return a; }
    let x = abs(a);
    let y = abs(b);
    if (x < y) { return a; }
    // long division in binary: d runs over y * 2^k from the largest not above x down
    // to y; each subtraction has d <= r < 2d, so it is exact (Sterbenz)
    var d = y;
    loop {
        if (d * 2.0lf > x) { break; }
        d = d * 2.0lf;
    }
    var r = x;
    loop {
        if (r >= d) { r = r - d; }
        if (d == y) { break; }
        d = d * 0.5lf;
    }
    return select(r, -r, a < 0.0lf);
}
