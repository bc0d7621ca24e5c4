fn floormod_i64(a: i64, b: i64) -> i64 {
    let r = a % b;
    return select(r, r + b, r != 0li && ((r < 0li) != (b < 0li)));
}
