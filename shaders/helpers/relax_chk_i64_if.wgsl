// `relax_chk_i64` for an access in an arm of a `select` (see `relax_chk_if`).
fn relax_chk_i64_if(g: bool, i: i64, n: i32, site: u32) -> i32 {
    if (g) { return relax_chk_i64(i, n, site); }
    return i32(i);
}
