fn to_mini_f32(x: f32, mbits: i32, emin: i32, maxv: f32, kind: u32) -> f32 {
    // `x` rounded to the nearest value (ties to even) of a float format narrower
    // than 16 bits, kept in an f32 (such tensors are held widened to f32 words):
    // `mbits` mantissa bits, smallest normal exponent `emin`, largest value `maxv`.
    // `kind`: 0 IEEE (overflow gives an infinity), 1 `fn` (overflow gives NaN),
    // 2 `fnuz` (NaN, and no negative zero), 3 no NaN or infinity (`float4_e2m1fn`:
    // overflow gives the largest value, NaN the zero of the opposite sign), 4 `e8m0fnu`
    // (powers of two, ties up; zero, negatives and overflow give NaN). Decided on the
    // bits and with exact scalings (`ldexp`), never a division.
    let b = bitcast<u32>(x);
    let s = b & 0x80000000u;
    let a = b & 0x7fffffffu;
    let nan = bitcast<f32>(0x7fc00000u);
    if (a > 0x7f800000u) {
        if (kind == 3u) { return bitcast<f32>(s ^ 0x80000000u); }
        return x;
    }
    if (kind == 4u) {
        if (s != 0u || a == 0u || a >= 0x7f800000u) { return nan; }
        var e = i32(a >> 23u) - 127;
        if ((a & 0x7fffffu) >= 0x400000u) { e = e + 1; }
        if (e > 127) { return nan; }
        return ldexp(1.0f, max(e, -127));
    }
    var over = a == 0x7f800000u;
    var r = 0.0f;
    if (!over) {
        let e = max(i32(a >> 23u) - 127, emin);
        r = ldexp(round(ldexp(bitcast<f32>(a), mbits - e)), e - mbits);
        over = bitcast<u32>(r) > bitcast<u32>(maxv);
    }
    if (over) {
        if (kind == 0u) { return bitcast<f32>(s | 0x7f800000u); }
        if (kind == 3u) { return bitcast<f32>(s | bitcast<u32>(maxv)); }
        return bitcast<f32>(s | 0x7fc00000u);
    }
    if (kind == 2u && bitcast<u32>(r) == 0u) { return 0.0f; }
    return bitcast<f32>(s | bitcast<u32>(r));
}
