//! Matrix products for data near or past the float range, summed in TVM's order.
//!
//! The fast kernels ([`crate::gemm`], [`crate::gemv`]) use fused multiply-adds and
//! split the sum over `k` into blocks and vector lanes. For ordinary data that only
//! moves the last bits, but where a product or a partial sum overflows it changes the
//! kind of the result: TVM's legalized `matmul` multiplies, rounds and adds in order
//! (`acc = acc + a * b` for `k = 0, 1, ...`, from `acc = 0`), so `inf + (-inf)` is NaN
//! where a fused multiply-add keeps `inf`, and a product that rounds to `inf` can be
//! absorbed into a finite fused sum.
//!
//! [`finish`] runs after a fast product and makes it agree with that order:
//!
//! - every output that is `inf` or NaN is recomputed in order (an exact product with
//!   an infinite or NaN operand makes every order's sum non-finite, so no other output
//!   can have such an operand);
//! - when the finite operands are large enough that some product or partial sum could
//!   reach `f32::MAX` (`max|a| * max|b| * k > f32::MAX / 4`), every output is
//!   recomputed in order, since a finite fast result may then stand for an overflow.
//!   Finding that out reads both operands, so it is done only where that costs little
//!   next to the product: operands of at most [`SCAN_ALWAYS`] elements, or at most
//!   1/[`SCAN_RATIO`] of the multiply-adds. A matrix-vector product over a large
//!   weight skips it (the scan would cost as much as the product), and there a finite
//!   fast result stands even where TVM's order overflows in a partial sum.
//!
//! Ordinary data costs one pass over the output (and, where scanned, one over each
//! operand); only data near the float range pays for the sequential loop.

use crate::{check_len, KernelError, Result};

/// Operands of at most this many elements (both together) are always scanned for
/// magnitudes that could overflow.
pub const SCAN_ALWAYS: usize = 1 << 14;

/// Larger operands are scanned when their elements number at most this fraction of
/// the product's multiply-adds.
pub const SCAN_RATIO: usize = 256;

/// The operands of a (batched) matrix product `out[b] = a[b] @ b[b]`: `a` is
/// `[batch, m, k]` (or one `[m, k]` shared by every batch), `b` is `[batch, k, n]`,
/// one shared `[k, n]`, or with `b_transposed` one shared `[n, k]`; `out` is
/// `[batch, m, n]`, all row-major.
#[derive(Clone, Copy, Debug)]
pub struct Product<'a> {
    /// Number of products.
    pub batch: usize,
    /// Rows of each `a` and of each output.
    pub m: usize,
    /// The summed axis.
    pub k: usize,
    /// Columns of each output.
    pub n: usize,
    /// The left operand.
    pub a: &'a [f32],
    /// `a` holds one matrix per batch (else one shared matrix).
    pub a_batched: bool,
    /// The right operand.
    pub b: &'a [f32],
    /// `b` holds one matrix per batch (else one shared matrix).
    pub b_batched: bool,
    /// `b` is stored `[n, k]` (a shared weight read transposed).
    pub b_transposed: bool,
}

impl Product<'_> {
    fn check(&self, out_len: usize) -> Result<()> {
        if self.b_transposed && self.b_batched {
            return Err(KernelError(
                "ordered matmul: a transposed right operand is shared".into(),
            ));
        }
        let count = |batched: bool| if batched { self.batch } else { 1 };
        let mk = self.m.checked_mul(self.k);
        let kn = self.k.checked_mul(self.n);
        let mn = self.m.checked_mul(self.n);
        let total = |per: Option<usize>, times: usize| per.and_then(|p| p.checked_mul(times));
        let (Some(la), Some(lb), Some(lo)) = (
            total(mk, count(self.a_batched)),
            total(kn, count(self.b_batched)),
            total(mn, self.batch),
        ) else {
            return Err(KernelError("ordered matmul: operand sizes overflow".into()));
        };
        check_len("ordered matmul A", self.a.len(), la)?;
        check_len("ordered matmul B", self.b.len(), lb)?;
        check_len("ordered matmul output", out_len, lo)
    }

    /// Output `(bi, i, j)` as TVM's legalized loop computes it.
    fn ordered(&self, bi: usize, i: usize, j: usize) -> f32 {
        let (m, k, n) = (self.m, self.k, self.n);
        let a0 = (if self.a_batched { bi * m } else { 0 } + i) * k;
        let arow = &self.a[a0..a0 + k];
        let mut acc = 0.0f32;
        if self.b_transposed {
            let brow = &self.b[j * k..(j + 1) * k];
            for (x, y) in arow.iter().zip(brow) {
                acc += x * y;
            }
        } else {
            let b0 = if self.b_batched { bi * k * n } else { 0 };
            for (kk, x) in arow.iter().enumerate() {
                acc += x * self.b[b0 + kk * n + j];
            }
        }
        acc
    }

    /// Whether scanning the operands costs little next to the product.
    fn worth_scanning(&self) -> bool {
        let elems = self.a.len().saturating_add(self.b.len());
        let madds = self
            .batch
            .saturating_mul(self.m)
            .saturating_mul(self.n)
            .saturating_mul(self.k);
        elems <= SCAN_ALWAYS || elems.saturating_mul(SCAN_RATIO) <= madds
    }

    /// Whether the finite operands are small enough that no product and no partial
    /// sum of `k` products comes near `f32::MAX`, in any order.
    fn stays_finite(&self) -> bool {
        let (ma, mb) = (max_finite_abs(self.a), max_finite_abs(self.b));
        f64::from(ma) * f64::from(mb) * self.k.max(1) as f64 <= f64::from(f32::MAX) / 4.0
    }
}

/// The largest magnitude among the finite elements of `v` (0 for none). Sixteen
/// independent lanes, so that the loop runs in vector registers (a scan of the
/// operands of a small product costs about as much as the product otherwise), in
/// AVX2 where the CPU has it.
fn max_finite_abs(v: &[f32]) -> f32 {
    crate::simd::with_avx2(|| max_finite_abs_lanes(v))
}

#[inline(always)]
fn max_finite_abs_lanes(v: &[f32]) -> f32 {
    // NaN and inf fail `a <= MAX` and count as 0.
    let finite_abs = |x: f32| {
        let a = x.abs();
        if a <= f32::MAX {
            a
        } else {
            0.0
        }
    };
    let mut lanes = [0f32; 16];
    let mut chunks = v.chunks_exact(16);
    for c in &mut chunks {
        for (l, &x) in lanes.iter_mut().zip(c) {
            let a = finite_abs(x);
            *l = if a > *l { a } else { *l };
        }
    }
    lanes
        .iter()
        .copied()
        .chain(chunks.remainder().iter().map(|&x| finite_abs(x)))
        .fold(0.0f32, |m, a| if a > m { a } else { m })
}

/// Whether every element of `v` is finite, sixteen independent lanes at a time (in
/// AVX2 where the CPU has it).
fn all_finite(v: &[f32]) -> bool {
    crate::simd::with_avx2(|| all_finite_lanes(v))
}

#[inline(always)]
fn all_finite_lanes(v: &[f32]) -> bool {
    const EXP: u32 = 0x7f80_0000;
    let mut chunks = v.chunks_exact(16);
    for c in &mut chunks {
        let mut bad = 0u32;
        for &x in c {
            bad |= u32::from(x.to_bits() & EXP == EXP);
        }
        if bad != 0 {
            return false;
        }
    }
    chunks.remainder().iter().all(|x| x.is_finite())
}

/// Make `out`, computed by a fast kernel from `p`'s operands, agree with TVM's
/// sequential order wherever the order decides more than rounding (see the module
/// documentation). `out` is the bare product, before any bias or activation.
pub fn finish(p: &Product<'_>, out: &mut [f32]) -> Result<()> {
    p.check(out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    let all = p.worth_scanning() && !p.stays_finite();
    if !all && all_finite(out) {
        return Ok(());
    }
    let (m, n) = (p.m, p.n);
    for (idx, v) in out.iter_mut().enumerate() {
        if all || !v.is_finite() {
            let (bi, r) = (idx / (m * n), idx % (m * n));
            *v = p.ordered(bi, r / n, r % n);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product<'a>(m: usize, k: usize, n: usize, a: &'a [f32], b: &'a [f32], bt: bool) -> Product<'a> {
        Product {
            batch: 1,
            m,
            k,
            n,
            a,
            a_batched: false,
            b,
            b_batched: false,
            b_transposed: bt,
        }
    }

    #[test]
    fn an_overflowing_product_after_inf_is_nan() {
        let big = f32::MAX;
        // Row 0 of a times column 0 of b: inf * 1 + big * -2 is inf + -inf = NaN in
        // order; a fused multiply-add keeps inf.
        let a = [f32::INFINITY, big];
        let b = [1.0f32, -2.0];
        let mut out = [f32::INFINITY];
        finish(&product(1, 2, 1, &a, &b, false), &mut out).unwrap();
        assert!(out[0].is_nan());
        let mut out = [f32::INFINITY];
        finish(&product(1, 2, 1, &a, &b, true), &mut out).unwrap();
        assert!(out[0].is_nan());
    }

    #[test]
    fn a_finite_fused_sum_of_an_overflowing_product_is_inf() {
        let big = f32::MAX;
        // -big + 2 * big: the product rounds to inf first, so the sum is inf; a
        // fused multiply-add gives big.
        let a = [1.0f32, 2.0];
        let b = [-big, big];
        let mut out = [big];
        finish(&product(1, 2, 1, &a, &b, false), &mut out).unwrap();
        assert_eq!(out[0], f32::INFINITY);
    }

    #[test]
    fn vector_scans_match_plain_loops() {
        for len in [0usize, 1, 15, 16, 17, 40] {
            let mut v: Vec<f32> = (0..len).map(|i| (i as f32 - 7.5) * 1e30).collect();
            let want = v.iter().map(|x| x.abs()).fold(0.0f32, f32::max);
            assert_eq!(max_finite_abs(&v), want, "len {len}");
            assert!(all_finite(&v));
            for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                if let Some(last) = v.last_mut() {
                    *last = bad;
                    assert!(!all_finite(&v), "len {len} {bad}");
                    assert!(max_finite_abs(&v) <= want);
                    assert!(max_finite_abs(&v).is_finite());
                }
            }
        }
    }

    #[test]
    fn ordinary_data_is_left_alone() {
        let a: Vec<f32> = (0..12).map(|i| i as f32 - 5.5).collect();
        let b: Vec<f32> = (0..12).map(|i| 0.25 * i as f32).collect();
        // Deliberately not the product: finite outputs of ordinary data are kept.
        let mut out = [7.0f32; 9];
        finish(&product(3, 4, 3, &a, &b, false), &mut out).unwrap();
        assert_eq!(out, [7.0; 9]);
        // A non-finite one is recomputed: row 1 of a times column 2 of b.
        out[5] = f32::NAN;
        finish(&product(3, 4, 3, &a, &b, false), &mut out).unwrap();
        let want: f32 = (0..4).map(|kk| a[4 + kk] * b[kk * 3 + 2]).sum();
        assert_eq!(out[5], want);
    }

    #[test]
    fn large_vector_products_recompute_only_non_finite_outputs() {
        // A 1 x k times k x n product over more than `SCAN_ALWAYS` elements is not
        // scanned: a finite output stands, a non-finite one is recomputed.
        let (k, n) = (128, 256);
        let a = vec![1.0f32; k];
        let mut b = vec![0.0f32; k * n];
        b[0] = f32::MAX;
        b[n] = f32::MAX;
        let p = product(1, k, n, &a, &b, false);
        assert!(!p.worth_scanning());
        let mut out = vec![0.0f32; n];
        out[0] = 5.0;
        out[1] = f32::NAN;
        finish(&p, &mut out).unwrap();
        assert_eq!((out[0], out[1]), (5.0, 0.0));
        // Few rows over a small weight are scanned, and so is a large enough product.
        assert!(product(1, 64, 64, &a[..64], &b[..64 * 64], false).worth_scanning());
        let big = vec![0.0f32; 512 * 512];
        assert!(product(512, 512, 512, &big, &big, false).worth_scanning());
    }

    #[test]
    fn batched_operands_and_bad_lengths() {
        let a = [1.0f32, 2.0, 3.0, 4.0];
        let b = [f32::MAX, f32::MAX, -f32::MAX, 1.0];
        let p = Product {
            batch: 2,
            m: 1,
            k: 2,
            n: 1,
            a: &a,
            a_batched: true,
            b: &b,
            b_batched: true,
            b_transposed: false,
        };
        let mut out = [0.0f32; 2];
        finish(&p, &mut out).unwrap();
        // 1 * max + 2 * max overflows; 3 * -max is -inf before 4 * 1 is added.
        assert_eq!(out, [f32::INFINITY, f32::NEG_INFINITY]);
        assert!(finish(&p, &mut [0.0f32; 3]).is_err());
        assert!(finish(
            &Product {
                b_transposed: true,
                ..p
            },
            &mut out
        )
        .is_err());
    }
}
