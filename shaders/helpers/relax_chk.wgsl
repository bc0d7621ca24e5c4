fn relax_chk(i: i32, n: i32, site: u32) -> i32 {
    if (i >= 0i && i < n) { return i; }
    let s = relax_oob_base + site;
    atomicMax(&relax_oob[0], s);
    if (atomicCompareExchangeWeak(&relax_oob[1], 0u, s).exchanged) {
        atomicStore(&relax_oob[2], bitcast<u32>(i));
        atomicStore(&relax_oob[3], bitcast<u32>(n));
        atomicStore(&relax_oob[4], select(0u, 0xffffffffu, i < 0i));
    }
    return -1i;
}
