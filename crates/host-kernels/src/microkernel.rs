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
