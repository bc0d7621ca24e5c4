//! Inner loops compiled for the CPU's vector extensions, chosen at run time (the
//! crate is built for the baseline target, so plain loops get 4-wide SSE2 only).

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
            let want: f32 = x.iter().zip(&out).map(|(a, b)| a * b).sum();
            assert!((d - want).abs() <= 1e-4 * (1.0 + want.abs()), "dot {d} vs {want}");
        }
    }
}
