//! Inner loops compiled for the CPU's vector extensions, chosen at run time (the
//! crate is built for the baseline target, so plain loops get 4-wide SSE2 only).

/// Whether the CPU has AVX2 (checked once; the answer is cached by std).
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// `f()`, compiled for AVX2 where the CPU has it: for loops written as plain Rust
/// over independent lanes (mark what `f` calls `#[inline(always)]`, so that it is
/// compiled into the AVX2 function). A generic callback passed on through `f` was
/// not inlined there (`map1` written with it ran 10% more instructions on GPT-2
/// tiny), which is why [`map1`] and [`map2`] keep functions of their own.
#[inline]
pub fn with_avx2<R, F: FnOnce() -> R>(f: F) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2() {
            // SAFETY: the CPU has the feature the function is compiled for.
            return unsafe { with_avx2_impl(f) };
        }
    }
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn with_avx2_impl<R, F: FnOnce() -> R>(f: F) -> R {
    f()
}

/// `out[i] = f(x[i])` over the common length, in 8-wide vectors where the CPU has
/// AVX2 (`f` is inlined into a loop compiled for it; the arithmetic is the same
/// IEEE operations in any width, so results do not depend on the path).
#[inline]
pub fn map1<F: Fn(f32) -> f32>(out: &mut [f32], x: &[f32], f: F) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2() {
            // SAFETY: the CPU has the feature the function is compiled for.
            unsafe { map1_avx2(out, x, &f) };
            return;
        }
    }
    map1_body(out, x, &f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn map1_avx2<F: Fn(f32) -> f32>(out: &mut [f32], x: &[f32], f: &F) {
    map1_body(out, x, f)
}

#[inline(always)]
fn map1_body<F: Fn(f32) -> f32>(out: &mut [f32], x: &[f32], f: &F) {
    for (o, v) in out.iter_mut().zip(x) {
        *o = f(*v);
    }
}

/// `out[i] = f(a[i], b[i])` over the common length, as [`map1`].
#[inline]
pub fn map2<F: Fn(f32, f32) -> f32>(out: &mut [f32], a: &[f32], b: &[f32], f: &F) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2() {
            // SAFETY: the CPU has the feature the function is compiled for.
            unsafe { map2_avx2(out, a, b, f) };
            return;
        }
    }
    map2_body(out, a, b, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn map2_avx2<F: Fn(f32, f32) -> f32>(out: &mut [f32], a: &[f32], b: &[f32], f: &F) {
    map2_body(out, a, b, f)
}

#[inline(always)]
fn map2_body<F: Fn(f32, f32) -> f32>(out: &mut [f32], a: &[f32], b: &[f32], f: &F) {
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = f(*x, *y);
    }
}

/// `out[i] += a * x[i]` over the common length.
#[inline]
pub fn axpy(out: &mut [f32], x: &[f32], a: f32) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has the features the function is compiled for.
            unsafe { axpy_avx2(out, x, a) };
            return;
        }
    }
    for (o, v) in out.iter_mut().zip(x) {
        *o += a * v;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn axpy_avx2(out: &mut [f32], x: &[f32], a: f32) {
    for (o, v) in out.iter_mut().zip(x) {
        *o = v.mul_add(a, *o);
    }
}

/// The dot product of `a` and `b` over the common length.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { dot_avx2(a, b) };
        }
    }
    dot_lanes::<false>(a, b)
}

/// Eight independent partial sums (so the loop vectorizes without reassociating a
/// single accumulator), added at the end; fused multiply-adds when `FMA`.
#[inline(always)]
fn dot_lanes<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for l in 0..8 {
            acc[l] = if FMA {
                x[l].mul_add(y[l], acc[l])
            } else {
                acc[l] + x[l] * y[l]
            };
        }
    }
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes::<true>(a, b)
}

/// How far ahead of the rows being summed [`dot4`] prefetches, in bytes: the
/// hardware prefetcher alone leaves a core well below the memory's speed on the
/// short rows of a decoder's weights.
const PREFETCH_BYTES: usize = 4096;

/// `sums[r] = dot(w[r], a)` for the four rows `w[r]` (`a.len()` values each) of `w`,
/// read side by side, sixteen columns at a time, with the weights ahead prefetched.
#[inline]
pub fn dot4(w: &[f32], a: &[f32], sums: &mut [f32; 4]) {
    let k = a.len();
    if w.len() < 4 * k {
        // Fewer than four rows: not this function's shape; sum what is there.
        for (r, s) in sums.iter_mut().enumerate() {
            *s = dot(a, w.get(r * k..(r + 1) * k).unwrap_or(&[]));
        }
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has the features the function is compiled for; `w`
            // holds at least `4 * k` values.
            unsafe { dot4_avx2(w, a, sums) };
            return;
        }
    }
    for (r, s) in sums.iter_mut().enumerate() {
        *s = dot_lanes::<false>(a, &w[r * k..(r + 1) * k]);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot4_avx2(w: &[f32], a: &[f32], sums: &mut [f32; 4]) {
    use std::arch::x86_64::*;
    let k = a.len().min(w.len() / 4);
    let wp = w.as_ptr();
    let mut acc = [[_mm256_setzero_ps(); 2]; 4];
    let mut x = 0;
    while x + 16 <= k {
        for r in 0..4 {
            // A prefetch never faults: the address may lie past the end of `w` (hence
            // `wrapping_add`, which makes no in-bounds claim).
            _mm_prefetch::<_MM_HINT_T0>(wp.wrapping_add(r * k + x).wrapping_byte_add(PREFETCH_BYTES) as *const i8);
        }
        // SAFETY: x + 16 <= k: elements x..x+16 of `a` and of each row `r < 4` of `w`
        // (`r * k + x + 16 <= 4 * k <= w.len()`) are in bounds; the loads are unaligned.
        unsafe {
            let a0 = _mm256_loadu_ps(a.as_ptr().add(x));
            let a1 = _mm256_loadu_ps(a.as_ptr().add(x + 8));
            for (r, acc_r) in acc.iter_mut().enumerate() {
                let p = wp.add(r * k + x);
                acc_r[0] = _mm256_fmadd_ps(a0, _mm256_loadu_ps(p), acc_r[0]);
                acc_r[1] = _mm256_fmadd_ps(a1, _mm256_loadu_ps(p.add(8)), acc_r[1]);
            }
        }
        x += 16;
    }
    for (r, acc_r) in acc.iter().enumerate() {
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` holds eight values.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), _mm256_add_ps(acc_r[0], acc_r[1])) };
        let tail: f32 = a[x..k].iter().zip(&w[r * k + x..r * k + k]).map(|(p, q)| p * q).sum();
        sums[r] = lanes.iter().sum::<f32>() + tail;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn axpy_matches_plain_arithmetic() {
        for n in [0usize, 1, 7, 8, 9, 31, 100] {
            let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 3.0).collect();
            let mut out: Vec<f32> = (0..n).map(|i| 1.0 - i as f32).collect();
            let want: Vec<f32> = out.iter().zip(&x).map(|(o, v)| o + 1.5 * v).collect();
            super::axpy(&mut out, &x, 1.5);
            for (g, w) in out.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{g} vs {w}");
            }
            let d = super::dot(&x, &out);
            // Four rows at once: row r is `out` scaled by r + 1.
            if n > 0 {
                let w: Vec<f32> = (0..4)
                    .flat_map(|r| out.iter().map(move |v| v * (r + 1) as f32))
                    .collect();
                let mut sums = [0f32; 4];
                super::dot4(&w, &x, &mut sums);
                for (r, s) in sums.iter().enumerate() {
                    let want: f32 = x.iter().zip(&out).map(|(a, b)| a * b * (r + 1) as f32).sum();
                    assert!(
                        (s - want).abs() <= 1e-4 * (1.0 + want.abs()),
                        "dot4 row {r}: {s} vs {want}"
                    );
                }
            }
            let want: f32 = x.iter().zip(&out).map(|(a, b)| a * b).sum();
            assert!((d - want).abs() <= 1e-4 * (1.0 + want.abs()), "dot {d} vs {want}");
        }
    }
}
