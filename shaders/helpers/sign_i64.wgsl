// The sign of `d` (-1, 0 or 1), judged on its two 32-bit halves: lavapipe
// misjudges 64-bit comparisons of sign-extended 32-bit values (`i64(x) >= 0li`
// was true for `x = -1`, `i64(x) >= 16777216li` true for every `x`).
fn sign_i64(d: i64) -> i32 {
    let u = bitcast<u64>(d);
    let hi = bitcast<i32>(u32(u >> 32u));
    let lo = u32(u & 0xfffffffflu);
    return select(select(select(1i, 0i, lo == 0u), 1i, hi > 0i), -1i, hi < 0i);
}
