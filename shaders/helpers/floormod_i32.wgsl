fn floormod_i32(a: i32, b: i32) -> i32 {
    let r = a % b;
    return select(r, r + b, r != 0i && ((r < 0i) != (b < 0i)));
}
