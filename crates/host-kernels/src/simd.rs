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
        }
    }
}
