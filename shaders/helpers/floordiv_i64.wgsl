fn floordiv_i64(a: i64, b: i64) -> i64 {
    let q = a / b;
    let r = a % b;
    return select(q, q - 1li, r != 0li && ((r < 0li) != (b < 0li)));
}
