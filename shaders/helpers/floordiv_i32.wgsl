fn floordiv_i32(a: i32, b: i32) -> i32 {
    let q = a / b;
    let r = a % b;
    return select(q, q - 1i, r != 0i && ((r < 0i) != (b < 0i)));
}
