fn relax_chk_i64(i: i64, n: i32, site: u32) -> i32 {
    // Judged on the two 32-bit halves: lavapipe misjudges 64-bit comparisons of
    // sign-extended 32-bit values (`i64(x) >= 0li` was true for `x = -1`).
    let u = bitcast<u64>(i);
    let lo = u32(u & 0xfffffffflu);
    if (u32(u >> 32u) == 0u && lo < bitcast<u32>(n)) { return bitcast<i32>(lo); }
    let s = relax_oob_base + site;
    atomicMax(&relax_oob[0], s);
    if (atomicCompareExchangeWeak(&relax_oob[1], 0u, s).exchanged) {
        atomicStore(&relax_oob[2], lo);
        atomicStore(&relax_oob[3], bitcast<u32>(n));
        atomicStore(&relax_oob[4], u32(u >> 32u));
    }
    return -1i;
}
