//! The register tile of the blocked matrix products ([`crate::blocked`]): `MR` rows
//! by `NR` columns of `C` stay in vector registers while `k` runs, reading `NR`
//! consecutive values of a packed panel and broadcasting one element of each of `MR`
//! rows of the other operand per step. Compiled for AVX-512 (`MR = 12`, `NR = 32`: 24
//! of its 32 vector registers accumulate) or AVX2 + FMA (`MR = 6`, `NR = 16`), chosen
//! at run time; other CPUs use `matrixmultiply`.

/// The vector extension the tiles are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {
    /// AVX-512F: tiles of 12 x 32.
    Avx512,
    /// AVX2 and FMA: tiles of 6 x 16.
    Avx2,
}

/// The best [`Isa`] of this CPU, if any.
pub(crate) fn detect() -> Option<Isa> {
    available().next()
}

/// Every [`Isa`] this CPU supports, best first.
pub(crate) fn available() -> impl Iterator<Item = Isa> {
    [Isa::Avx512, Isa::Avx2].into_iter().filter(|&isa| supported(isa))
}

/// Whether this CPU has `isa` (and FMA).
fn supported(isa: Isa) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("fma")
            && match isa {
                Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
                Isa::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        false
    }
}

/// [`tile`] with `W` packed step-major: `W[r][kk]` is `w[kk * MR + r]` (the `MR`
/// values of one step side by side, read as one stream).
///
/// # Safety
/// `w` covers `kc * MR` values, `P` `kc * NR` values, `C` `MR` rows of `NR`.
#[inline(always)]
pub(crate) unsafe fn tile_packed<const MR: usize, const NR: usize>(
    kc: usize,
    w: *const f32,
    p: *const f32,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if NR == 16 {
        // SAFETY: forwarded contract; the 16-column tile is compiled for AVX2 and FMA
        // only. `W[r][kk]` is `w[kk * MR + r]`.
        unsafe { tile_avx2::<MR>(kc, w, 1, MR, p, c, ldc, accumulate) };
        return;
    }
    let mut acc = [[0f32; NR]; MR];
    if accumulate {
        for (r, row) in acc.iter_mut().enumerate() {
            // SAFETY: row `r < MR` of C.
            *row = unsafe { std::ptr::read_unaligned(c.add(r * ldc) as *const [f32; NR]) };
        }
    }
    let mut kk = 0;
    while kk + 4 <= kc {
        for u in 0..4 {
            // SAFETY: step `kk + u < kc` of P and of W.
            let pv: [f32; NR] = unsafe { std::ptr::read_unaligned(p.add((kk + u) * NR) as *const [f32; NR]) };
            let wk = unsafe { w.add((kk + u) * MR) };
            for (r, row) in acc.iter_mut().enumerate() {
                // SAFETY: value `r < MR` of the step.
                let wv = unsafe { *wk.add(r) };
                for (acc, pv) in row.iter_mut().zip(&pv) {
                    *acc = wv.mul_add(*pv, *acc);
                }
            }
        }
        kk += 4;
    }
    while kk < kc {
        // SAFETY: step `kk < kc` of P and of W.
        let pv: [f32; NR] = unsafe { std::ptr::read_unaligned(p.add(kk * NR) as *const [f32; NR]) };
        let wk = unsafe { w.add(kk * MR) };
        for (r, row) in acc.iter_mut().enumerate() {
            // SAFETY: value `r < MR` of the step.
            let wv = unsafe { *wk.add(r) };
            for (acc, pv) in row.iter_mut().zip(&pv) {
                *acc = wv.mul_add(*pv, *acc);
            }
        }
        kk += 1;
    }
    for (r, row) in acc.iter().enumerate() {
        // SAFETY: row `r < MR` of C.
        unsafe { std::ptr::write_unaligned(c.add(r * ldc) as *mut [f32; NR], *row) };
    }
}

/// One tile: `C[r][0..NR] (+)= Σ_kk W[r][kk] * P[kk][0..NR]` for `r < MR`, with `W`'s
/// rows `ldw` apart, `P` packed (`NR` values per step) and `C`'s rows `ldc` apart;
/// `C` is added to when `accumulate`, else overwritten.
///
/// # Safety
/// `W` covers `MR` rows of `kc`, `P` `kc * NR` values, `C` `MR` rows of `NR`.
#[inline(always)]
pub(crate) unsafe fn tile<const MR: usize, const NR: usize>(
    kc: usize,
    w: *const f32,
    ldw: usize,
    p: *const f32,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if NR == 16 {
        // SAFETY: forwarded contract; the 16-column tile is compiled for AVX2 and FMA
        // only. `W[r][kk]` is `w[r * ldw + kk]`.
        unsafe { tile_avx2::<MR>(kc, w, ldw, 1, p, c, ldc, accumulate) };
        return;
    }
    let mut acc = [[0f32; NR]; MR];
    if accumulate {
        for (r, row) in acc.iter_mut().enumerate() {
            // SAFETY: row `r < MR` of C.
            *row = unsafe { std::ptr::read_unaligned(c.add(r * ldc) as *const [f32; NR]) };
        }
    }
    // Four steps at a time: each row's address is computed once per four steps.
    let mut kk = 0;
    while kk + 4 <= kc {
        for u in 0..4 {
            // SAFETY: step `kk + u < kc` of P.
            let pv: [f32; NR] = unsafe { std::ptr::read_unaligned(p.add((kk + u) * NR) as *const [f32; NR]) };
            for (r, row) in acc.iter_mut().enumerate() {
                // SAFETY: row `r < MR`, column `kk + u < kc` of W.
                let wv = unsafe { *w.add(r * ldw + kk + u) };
                for (acc, pv) in row.iter_mut().zip(&pv) {
                    *acc = wv.mul_add(*pv, *acc);
                }
            }
        }
        kk += 4;
    }
    while kk < kc {
        // SAFETY: step `kk < kc` of P.
        let pv: [f32; NR] = unsafe { std::ptr::read_unaligned(p.add(kk * NR) as *const [f32; NR]) };
        for (r, row) in acc.iter_mut().enumerate() {
            // SAFETY: row `r < MR`, column `kk < kc` of W.
            let wv = unsafe { *w.add(r * ldw + kk) };
            for (acc, pv) in row.iter_mut().zip(&pv) {
                *acc = wv.mul_add(*pv, *acc);
            }
        }
        kk += 1;
    }
    for (r, row) in acc.iter().enumerate() {
        // SAFETY: row `r < MR` of C.
        unsafe { std::ptr::write_unaligned(c.add(r * ldc) as *mut [f32; NR], *row) };
    }
}

/// The AVX2 tile (`NR = 16`: two 8-lane registers per row) written with the
/// intrinsics: `C[r][0..16] (+)= Σ_kk W[r][kk] * P[kk][0..16]` for `r < MR`, with
/// `W[r][kk]` at `w[r * rs + kk * ks]` (`rs = ldw, ks = 1`: a row-major operand read
/// in place; `rs = 1, ks = MR`: a step-major packed one) and `P` packed 16 values
/// per step. The same fused multiply-adds in the same order as [`tile`] and
/// [`tile_packed`] (so the same bits), with the `2 * MR` accumulators held in
/// registers: [`tile`] and [`tile_packed`] take this path for `NR = 16`. Written
/// with arrays of `f32`, the tile inlined into the prepacked product's loops was
/// compiled with its accumulators spilled to the stack and half-width FMAs (31
/// GFLOP/s on one core where this reaches 90).
///
/// # Safety
/// The CPU has AVX2 and FMA; `w` covers `MR` rows of `kc` steps at those strides,
/// `p` `kc * 16` values, `c` `MR` rows of 16 at stride `ldc`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn tile_avx2<const MR: usize>(
    kc: usize,
    w: *const f32,
    rs: usize,
    ks: usize,
    p: *const f32,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    use std::arch::x86_64::{
        _mm256_broadcast_ss, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    };
    // SAFETY: the caller's contract (AVX2 and FMA; every pointer within its operand).
    unsafe {
        let mut lo = [_mm256_setzero_ps(); MR];
        let mut hi = [_mm256_setzero_ps(); MR];
        if accumulate {
            for r in 0..MR {
                lo[r] = _mm256_loadu_ps(c.add(r * ldc));
                hi[r] = _mm256_loadu_ps(c.add(r * ldc + 8));
            }
        }
        for kk in 0..kc {
            let p0 = _mm256_loadu_ps(p.add(kk * 16));
            let p1 = _mm256_loadu_ps(p.add(kk * 16 + 8));
            let wk = w.add(kk * ks);
            for r in 0..MR {
                let wv = _mm256_broadcast_ss(&*wk.add(r * rs));
                lo[r] = _mm256_fmadd_ps(wv, p0, lo[r]);
                hi[r] = _mm256_fmadd_ps(wv, p1, hi[r]);
            }
        }
        for r in 0..MR {
            _mm256_storeu_ps(c.add(r * ldc), lo[r]);
            _mm256_storeu_ps(c.add(r * ldc + 8), hi[r]);
        }
    }
}

#[cfg(test)]
mod tests {
    /// The AVX2 tile, for each row count the products use (2, 4, 6), both operand
    /// layouts, fresh and accumulating into `C` with a row stride past 16: bit for
    /// bit the scalar fused multiply-adds in step order, and nothing outside the
    /// tile written.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_tile_is_the_scalar_fused_sum() {
        if !super::supported(super::Isa::Avx2) {
            println!("no AVX2 and FMA here: nothing to check");
            return;
        }
        fn check<const MR: usize>() {
            let kc = 37;
            let ldc = 21;
            let val = |i: usize, s: usize| ((i * 7 + s * 11) % 29) as f32 * 0.37 - 5.1 + (i % 3) as f32 * 1e-4;
            let p: Vec<f32> = (0..kc * 16).map(|i| val(i, 1)).collect();
            // (row stride, step stride) of W: read in place (`ldw = kc + 3`) and step-major.
            for (rs, ks) in [(kc + 3, 1), (1, MR)] {
                let w: Vec<f32> = (0..MR * (kc + 3)).map(|i| val(i, 2)).collect();
                for accumulate in [false, true] {
                    let c0: Vec<f32> = (0..MR * ldc).map(|i| val(i, 3)).collect();
                    let mut want = c0.clone();
                    for r in 0..MR {
                        for j in 0..16 {
                            let mut acc = if accumulate { c0[r * ldc + j] } else { 0.0 };
                            for kk in 0..kc {
                                acc = w[r * rs + kk * ks].mul_add(p[kk * 16 + j], acc);
                            }
                            want[r * ldc + j] = acc;
                        }
                    }
                    let mut got = c0.clone();
                    // SAFETY: AVX2 and FMA are present (checked above); `w` covers `MR`
                    // rows of `kc` steps at (`rs`, `ks`), `p` `kc * 16` values, `got`
                    // `MR` rows of `ldc >= 16`.
                    unsafe { avx2::<MR>(kc, w.as_ptr(), rs, ks, p.as_ptr(), got.as_mut_ptr(), ldc, accumulate) };
                    let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "MR {MR}, strides ({rs}, {ks}), accumulate {accumulate}");
                }
            }
        }
        /// The tile compiled with the features it needs.
        #[target_feature(enable = "avx2,fma")]
        #[allow(clippy::too_many_arguments)]
        unsafe fn avx2<const MR: usize>(
            kc: usize,
            w: *const f32,
            rs: usize,
            ks: usize,
            p: *const f32,
            c: *mut f32,
            ldc: usize,
            accumulate: bool,
        ) {
            // SAFETY: forwarded contract.
            unsafe { super::tile_avx2::<MR>(kc, w, rs, ks, p, c, ldc, accumulate) }
        }
        check::<2>();
        check::<4>();
        check::<6>();
    }
}
