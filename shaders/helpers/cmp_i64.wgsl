// The order of two i64 values (-1, 0 or 1), judged on their 32-bit halves (the
// high halves signed, then the low halves unsigned), exact for every value:
// lavapipe misjudges 64-bit comparisons of sign-extended 32-bit values
// (`i64(x) >= 0li` was true for `x = -1`, `0li < i64(select(0i, 1i, c))` true
// for a false `c`).
fn cmp_i64(a: i64, b: i64) -> i32 {
    let ua = bitcast<u64>(a);
    let ub = bitcast<u64>(b);
    let ha = bitcast<i32>(u32(ua >> 32u));
    let hb = bitcast<i32>(u32(ub >> 32u));
    let la = u32(ua & 0xfffffffflu);
    let lb = u32(ub & 0xfffffffflu);
    let low = select(select(0i, 1i, la > lb), -1i, la < lb);
    return select(select(low, 1i, ha > hb), -1i, ha < hb);
}
