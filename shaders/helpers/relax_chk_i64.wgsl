fn relax_chk_i64(i: i64, n: i32, site: u32) -> i32 {
    if (i >= 0li && i < i64(n)) { return i32(i); }
    let s = relax_oob_base + site;
    atomicMax(&relax_oob[0], s);
    if (atomicCompareExchangeWeak(&relax_oob[1], 0u, s).exchanged) {
        let u = bitcast<u64>(i);
        atomicStore(&relax_oob[2], u32(u & 0xfffffffflu));
        atomicStore(&relax_oob[3], bitcast<u32>(n));
        atomicStore(&relax_oob[4], u32(u >> 32u));
    }
    return -1i;
}
