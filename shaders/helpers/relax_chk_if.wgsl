// `relax_chk` for an access in an arm of a `select`: WGSL evaluates both arms, so the
// index is checked only where the arm is the one taken (`g`); elsewhere it passes
// unchanged (robust buffer access keeps the discarded read inside the buffer).
fn relax_chk_if(g: bool, i: i32, n: i32, site: u32) -> i32 {
    if (g) { return relax_chk(i, n, site); }
    return i;
}
