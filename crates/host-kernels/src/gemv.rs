//! Matrix products with a 16-bit float matrix (`float16` or `bfloat16` weights)
//! stored transposed, `[n, k]` row-major, as `nn.Linear` keeps them.
//!
//! [`gemv_bt_half`] serves a few rows of activations (token-by-token decoding): it
//! reads every weight once, in order, widening it to `f32` in registers, so it runs at
//! the speed of memory rather than first copying the matrix. [`matmul_bt_half`] serves
//! any number of rows: larger products widen the matrix a panel of rows at a time into a
//! per-thread buffer and run a GEMM on each panel.

use rayon::prelude::*;

use crate::gemm::MatRef;
use crate::{check_len, Epilogue, KernelError, Result};

/// The 16-bit float format of a matrix's elements (little-endian bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    /// IEEE 754 binary16 (`float16`).
    F16,
    /// bfloat16: the upper half of an `f32` (`bfloat16`).
    Bf16,
}

/// The `f32` value of the 16-bit float `bits` (exact: every value is representable).
#[inline]
pub fn half_to_f32(kind: Half, bits: u16) -> f32 {
    match kind {
        Half::Bf16 => f32::from_bits((bits as u32) << 16),
        Half::F16 => {
            let sign = ((bits as u32) & 0x8000) << 16;
            let exp = ((bits >> 10) & 0x1f) as u32;
            let man = (bits & 0x3ff) as u32;
            let v = match (exp, man) {
                (0, 0) => 0,
                // Subnormal: man * 2^-24, exact in f32.
                (0, m) => (m as f32 * f32::from_bits(0x3380_0000)).to_bits(),
                (0x1f, m) => 0x7f80_0000 | (m << 13),
                (e, m) => ((e + 127 - 15) << 23) | (m << 13),
            };
            f32::from_bits(sign | v)
        }
    }
}

/// Widen the 16-bit floats in `src` (little-endian, 2 bytes each) into `dst`, in
/// parallel.
pub fn widen_half(kind: Half, src: &[u8], dst: &mut [f32]) -> Result<()> {
    check_len("widen source bytes", src.len(), dst.len() * 2)?;
    const CHUNK: usize = 1 << 14;
    dst.par_chunks_mut(CHUNK)
        .zip(src.par_chunks(CHUNK * 2))
        .for_each(|(d, s)| widen_row(kind, s, d));
    Ok(())
}

fn widen_row(kind: Half, src: &[u8], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if kind == Half::F16
            && std::arch::is_x86_feature_detected!("f16c")
            && std::arch::is_x86_feature_detected!("avx")
        {
            // SAFETY: the CPU has the features the function is compiled for.
            unsafe { widen_f16c(src, dst) };
            return;
        }
    }
    for (d, s) in dst.iter_mut().zip(src.chunks_exact(2)) {
        *d = half_to_f32(kind, u16::from_le_bytes([s[0], s[1]]));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn widen_f16c(src: &[u8], dst: &mut [f32]) {
    use std::arch::x86_64::*;
    let n = dst.len().min(src.len() / 2);
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: bytes 2i..2i+16 of `src` and elements i..i+8 of `dst` are in bounds
        // (i + 8 <= n); the loads and stores are unaligned.
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr().add(2 * i) as *const __m128i);
            _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
        }
        i += 8;
    }
    for j in i..n {
        dst[j] = half_to_f32(Half::F16, u16::from_le_bytes([src[2 * j], src[2 * j + 1]]));
    }
}

/// Products with at most this many rows of the left operand run as [`gemv_bt_half`].
pub const HALF_GEMV_ROWS: usize = 4;

/// Rows of the weight matrix a one-row product reads at once (four independent
/// streams of loads and sums).
const W_ROWS: usize = 4;

/// How far ahead of the rows being summed the weights are prefetched, in bytes. The
/// hardware prefetcher alone leaves a single core well below the memory's speed on the
/// short rows of a decoder (1.5 KiB for 768 columns); 8 KiB ahead measured about 1.6x
/// the weight bytes per second of the same loop without it.
const PREFETCH_BYTES: usize = 8192;

/// `c = a * wᵀ` for `m <= HALF_GEMV_ROWS` rows of `a` (`m x k`, `f32`, row-major) and
/// the 16-bit float matrix `w` given as `[n, k]` row-major little-endian bytes: `c`
/// is `m x n` (`f32`). Every weight is read once and widened in registers; parallel
/// over the columns of `c`.
pub fn gemv_bt_half(kind: Half, m: usize, k: usize, n: usize, a: &[f32], w: &[u8], c: &mut [f32]) -> Result<()> {
    if m > HALF_GEMV_ROWS {
        return Err(KernelError(format!("gemv: at most {HALF_GEMV_ROWS} rows, got {m}")));
    }
    check_len("gemv A", a.len(), m * k)?;
    check_len("gemv W bytes", w.len(), 2 * n * k)?;
    check_len("gemv C", c.len(), m * n)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    // Columns of `c` per task: whole rows of `w`, about 64 KiB of weights each (a
    // multiple of the rows one-row products take at once).
    let cols = ((32_768 / k.max(1)) / W_ROWS * W_ROWS).clamp(W_ROWS, n.next_multiple_of(W_ROWS));
    if m == 1 {
        // One row (decoding): each task writes its columns of `c` in place.
        c.par_chunks_mut(cols).enumerate().for_each(|(t, out)| {
            let j0 = t * cols;
            dot_one_row(kind, &w[2 * j0 * k..2 * (j0 + out.len()) * k], a, k, out);
        });
        return Ok(());
    }
    // Each task computes its columns for every row into a local block, then the
    // block is scattered into `c` (rows of `c` are not contiguous across tasks).
    let blocks: Vec<(usize, Vec<f32>)> = (0..n.div_ceil(cols))
        .into_par_iter()
        .map(|t| {
            let j0 = t * cols;
            let j1 = (j0 + cols).min(n);
            let mut out = vec![0f32; m * (j1 - j0)];
            for j in j0..j1 {
                let row = &w[2 * j * k..2 * (j + 1) * k];
                let mut sums = [0f32; HALF_GEMV_ROWS];
                dot_rows(kind, row, a, k, m, &mut sums);
                for (i, s) in sums.iter().take(m).enumerate() {
                    out[i * (j1 - j0) + (j - j0)] = *s;
                }
            }
            (j0, out)
        })
        .collect();
    for (j0, out) in blocks {
        let width = out.len() / m;
        for i in 0..m {
            c[i * n + j0..i * n + j0 + width].copy_from_slice(&out[i * width..(i + 1) * width]);
        }
    }
    Ok(())
}

/// Rows of `w` that [`matmul_bt_half`] widens at once for a product of more than
/// [`HALF_GEMV_ROWS`] rows: one task's panel of `f32` weights (768 KiB for 768 columns)
/// stays in the caches while it is multiplied, and is never the whole matrix.
const PANEL_ROWS: usize = 256;

thread_local! {
    /// Each thread's widened panel, reused from call to call.
    static PANEL: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `c = a * wᵀ` for any number `m` of rows of `a` (`m x k`, `f32`, row-major) and the
/// 16-bit float matrix `w` (`[n, k]` row-major little-endian bytes); `c` is `m x n`.
/// Up to [`HALF_GEMV_ROWS`] rows run as [`gemv_bt_half`]; more widen `w` a panel of
/// rows at a time into a per-thread buffer and multiply each panel there (parallel over
/// the panels), so the weights are read once and no `f32` copy of the whole matrix is
/// made.
pub fn matmul_bt_half(kind: Half, m: usize, k: usize, n: usize, a: &[f32], w: &[u8], c: &mut [f32]) -> Result<()> {
    if m <= HALF_GEMV_ROWS {
        return gemv_bt_half(kind, m, k, n, a, w, c);
    }
    check_len("matmul A", a.len(), m * k)?;
    check_len("matmul W bytes", w.len(), 2 * n * k)?;
    check_len("matmul C", c.len(), m * n)?;
    if n == 0 {
        return Ok(());
    }
    let panel = PANEL_ROWS.min(n);
    let blocks: Vec<Result<(usize, Vec<f32>)>> = (0..n.div_ceil(panel))
        .into_par_iter()
        .map(|t| {
            let (j0, j1) = (t * panel, ((t + 1) * panel).min(n));
            let nb = j1 - j0;
            let mut out = vec![0f32; m * nb];
            PANEL.with(|buf| {
                let mut buf = buf.borrow_mut();
                if buf.len() < nb * k {
                    buf.resize(nb * k, 0.0);
                }
                let wide = &mut buf[..nb * k];
                widen_row(kind, &w[2 * j0 * k..2 * j1 * k], wide);
                // The panel is `[nb, k]`: as the right operand (`k x nb`) it is
                // column-major. Serial: the panels are the parallel work.
                crate::gemm::Gemm {
                    m,
                    k,
                    n: nb,
                    a: MatRef::row_major(a, k),
                    b: MatRef {
                        data: wide,
                        rs: 1,
                        cs: k,
                    },
                    epilogue: &Epilogue::default(),
                    channel0: 0,
                }
                .run(&mut out, false)
            })?;
            Ok((j0, out))
        })
        .collect();
    for block in blocks {
        let (j0, out) = block?;
        let width = out.len() / m;
        for i in 0..m {
            c[i * n + j0..i * n + j0 + width].copy_from_slice(&out[i * width..(i + 1) * width]);
        }
    }
    Ok(())
}

/// `out[j] = dot(a, widen(w[j]))` for the rows `w[j]` (`k` 16-bit floats each) of `w`
/// (`out.len()` rows) and the one row `a` (`k` values).
fn dot_one_row(kind: Half, w: &[u8], a: &[f32], k: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            let mut j = 0;
            while j + W_ROWS <= out.len() {
                // SAFETY: the CPU has the features the function is compiled for.
                unsafe { dot_rows4_avx2(kind, &w[2 * j * k..2 * (j + W_ROWS) * k], a, k, &mut out[j..j + W_ROWS]) };
                j += W_ROWS;
            }
            for (jj, o) in out.iter_mut().enumerate().skip(j) {
                let mut sums = [0f32; HALF_GEMV_ROWS];
                dot_rows(kind, &w[2 * jj * k..2 * (jj + 1) * k], a, k, 1, &mut sums);
                *o = sums[0];
            }
            return;
        }
    }
    for (j, o) in out.iter_mut().enumerate() {
        let mut sums = [0f32; HALF_GEMV_ROWS];
        dot_rows(kind, &w[2 * j * k..2 * (j + 1) * k], a, k, 1, &mut sums);
        *o = sums[0];
    }
}

/// Eight 16-bit floats at `p`, widened.
///
/// # Safety
/// `p` points at 16 readable bytes, and the CPU has AVX2 and F16C.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn load8(kind: Half, p: *const u8) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    // SAFETY: as the function's contract says.
    unsafe {
        let h = _mm_loadu_si128(p as *const __m128i);
        match kind {
            Half::F16 => _mm256_cvtph_ps(h),
            Half::Bf16 => _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)),
        }
    }
}

/// The sum of the eight lanes of `v`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn hsum(v: std::arch::x86_64::__m256) -> f32 {
    let mut lanes = [0f32; 8];
    // SAFETY: `lanes` holds 8 floats.
    unsafe { std::arch::x86_64::_mm256_storeu_ps(lanes.as_mut_ptr(), v) };
    lanes.iter().sum()
}

/// [`dot_one_row`] for exactly [`W_ROWS`] rows (`w` holds `W_ROWS * k` 16-bit floats,
/// `out` `W_ROWS` values): the rows are read side by side, 16 columns at a time, with
/// the weights [`PREFETCH_BYTES`] ahead prefetched.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_rows4_avx2(kind: Half, w: &[u8], a: &[f32], k: usize, out: &mut [f32]) {
    use std::arch::x86_64::*;
    // Callers pass `w` of `2 * W_ROWS * k` bytes, `a` of `k` values.
    let k = k.min(w.len() / (2 * W_ROWS)).min(a.len());
    let wp = w.as_ptr();
    let mut acc = [[_mm256_setzero_ps(); 2]; W_ROWS];
    let mut x = 0;
    while x + 16 <= k {
        for r in 0..W_ROWS {
            // A prefetch never faults: the address may lie past the end of `w` (hence
            // `wrapping_add`, which makes no in-bounds claim).
            _mm_prefetch::<_MM_HINT_T0>(wp.wrapping_add(2 * (r * k + x) + PREFETCH_BYTES) as *const i8);
        }
        // SAFETY: x + 16 <= k: elements x..x+16 of `a` and bytes 2(rk+x)..2(rk+x)+32 of
        // `w` (r < W_ROWS) are in bounds.
        unsafe {
            let a0 = _mm256_loadu_ps(a.as_ptr().add(x));
            let a1 = _mm256_loadu_ps(a.as_ptr().add(x + 8));
            for (r, acc_r) in acc.iter_mut().enumerate() {
                let p = wp.add(2 * (r * k + x));
                acc_r[0] = _mm256_fmadd_ps(a0, load8(kind, p), acc_r[0]);
                acc_r[1] = _mm256_fmadd_ps(a1, load8(kind, p.add(16)), acc_r[1]);
            }
        }
        x += 16;
    }
    for (r, acc_r) in acc.iter().enumerate() {
        // SAFETY: the CPU has AVX (checked by the caller).
        let mut s = unsafe { hsum(_mm256_add_ps(acc_r[0], acc_r[1])) };
        for (t, &av) in a.iter().enumerate().take(k).skip(x) {
            let o = 2 * (r * k + t);
            s += av * half_to_f32(kind, u16::from_le_bytes([w[o], w[o + 1]]));
        }
        out[r] = s;
    }
}

/// `sums[i] = dot(a[i], widen(row))` for the `m` rows of `a` (`k` each).
fn dot_rows(kind: Half, row: &[u8], a: &[f32], k: usize, m: usize, sums: &mut [f32; HALF_GEMV_ROWS]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            // SAFETY: the CPU has the features the functions are compiled for.
            unsafe {
                match m {
                    1 => dot_rows_avx2::<1, 4>(kind, row, a, k, sums),
                    2 => dot_rows_avx2::<2, 2>(kind, row, a, k, sums),
                    3 => dot_rows_avx2::<3, 1>(kind, row, a, k, sums),
                    _ => dot_rows_avx2::<4, 1>(kind, row, a, k, sums),
                }
            }
            return;
        }
    }
    // Without AVX2: widen the row (allocates; not the fast path).
    let mut wide = vec![0f32; k];
    widen_row(kind, row, &mut wide);
    for (i, s) in sums.iter_mut().take(m).enumerate() {
        *s = crate::simd::dot(&a[i * k..(i + 1) * k], &wide);
    }
}

/// [`dot_rows`] for `M` rows with `U` independent 8-lane accumulators per row.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_rows_avx2<const M: usize, const U: usize>(
    kind: Half,
    row: &[u8],
    a: &[f32],
    k: usize,
    sums: &mut [f32; HALF_GEMV_ROWS],
) {
    use std::arch::x86_64::*;
    // Callers pass `row` of `2k` bytes and `a` of `M * k` elements.
    let k = k.min(row.len() / 2).min(a.len() / M);
    let mut acc = [[_mm256_setzero_ps(); U]; M];
    let step = 8 * U;
    let mut x = 0;
    while x + step <= k {
        _mm_prefetch::<_MM_HINT_T0>(row.as_ptr().wrapping_add(2 * x + PREFETCH_BYTES) as *const i8);
        for u in 0..U {
            let o = x + 8 * u;
            // SAFETY: o + 8 <= k, so bytes 2o..2o+16 of `row` and elements
            // i*k+o..i*k+o+8 of `a` (i < M) are in bounds.
            unsafe {
                let wv = load8(kind, row.as_ptr().add(2 * o));
                for (i, acc_i) in acc.iter_mut().enumerate() {
                    let av = _mm256_loadu_ps(a.as_ptr().add(i * k + o));
                    acc_i[u] = _mm256_fmadd_ps(av, wv, acc_i[u]);
                }
            }
        }
        x += step;
    }
    while x + 8 <= k {
        // SAFETY: as above, x + 8 <= k.
        unsafe {
            let wv = load8(kind, row.as_ptr().add(2 * x));
            for (i, acc_i) in acc.iter_mut().enumerate() {
                let av = _mm256_loadu_ps(a.as_ptr().add(i * k + x));
                acc_i[0] = _mm256_fmadd_ps(av, wv, acc_i[0]);
            }
        }
        x += 8;
    }
    for (i, acc_i) in acc.iter().enumerate() {
        let mut v = acc_i[0];
        for a_u in acc_i.iter().skip(1) {
            v = _mm256_add_ps(v, *a_u);
        }
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` holds 8 floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), v) };
        let mut s: f32 = lanes.iter().sum();
        for t in x..k {
            s += a[i * k + t] * half_to_f32(kind, u16::from_le_bytes([row[2 * t], row[2 * t + 1]]));
        }
        sums[i] = s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f16_bits(v: f32) -> u16 {
        // Round-to-nearest for the normal range used here.
        let b = v.to_bits();
        let sign = ((b >> 16) & 0x8000) as u16;
        let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
        let man = b & 0x7f_ffff;
        if v == 0.0 {
            return sign;
        }
        assert!((1..31).contains(&exp));
        let mut h = ((exp as u32) << 10) | (man >> 13);
        if man & 0x1000 != 0 && (man & 0x2fff) != 0 {
            h += 1;
        }
        sign | h as u16
    }

    #[test]
    fn half_conversion_is_exact() {
        for v in [0.0f32, 1.0, -2.5, 0.099975586, 65504.0, -0.000061035156] {
            assert_eq!(half_to_f32(Half::F16, f16_bits(v)), v);
        }
        assert_eq!(half_to_f32(Half::F16, 0x0001), 2f32.powi(-24));
        assert!(half_to_f32(Half::F16, 0x7c00).is_infinite());
        assert_eq!(half_to_f32(Half::Bf16, 0x3f80), 1.0);
        assert_eq!(half_to_f32(Half::Bf16, 0xc020), -2.5);
    }

    /// An `n x k` weight of values exact in float16 and bfloat16, as `f32` and as the
    /// little-endian bytes of `kind`.
    fn half_weights(kind: Half, n: usize, k: usize) -> (Vec<f32>, Vec<u8>) {
        let wf: Vec<f32> = (0..n * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0).collect();
        let bytes = wf
            .iter()
            .flat_map(|&v| {
                let bits = match kind {
                    Half::F16 => f16_bits(v),
                    Half::Bf16 => (v.to_bits() >> 16) as u16,
                };
                bits.to_le_bytes()
            })
            .collect();
        (wf, bytes)
    }

    #[test]
    fn gemv_matches_reference_for_every_row_count() {
        for ((k, n), kind) in [(77, 301), (64, 9), (768, 43)]
            .into_iter()
            .flat_map(|s| [(s, Half::F16), (s, Half::Bf16)])
        {
            let (wf, bytes) = half_weights(kind, n, k);
            let mut wide = vec![0f32; n * k];
            widen_half(kind, &bytes, &mut wide).unwrap();
            assert_eq!(wide, wf, "values chosen to be exact in both formats");
            for m in 1..=HALF_GEMV_ROWS {
                let a: Vec<f32> = (0..m * k).map(|i| ((i * 13 % 29) as f32 - 14.0) / 8.0).collect();
                let mut c = vec![0f32; m * n];
                gemv_bt_half(kind, m, k, n, &a, &bytes, &mut c).unwrap();
                for i in 0..m {
                    for j in 0..n {
                        let want: f32 = (0..k).map(|t| a[i * k + t] * wf[j * k + t]).sum();
                        assert!((c[i * n + j] - want).abs() <= 1e-4 * want.abs().max(1.0), "{m} {i} {j}");
                    }
                }
            }
        }
        let mut c = vec![0f32; 5];
        assert!(gemv_bt_half(Half::F16, 5, 1, 1, &[0.0; 5], &[0; 2], &mut c).is_err());
        assert!(matmul_bt_half(Half::F16, 5, 1, 1, &[0.0; 4], &[0; 2], &mut c).is_err());
        assert!(gemv_bt_half(Half::F16, 1, 2, 1, &[0.0; 2], &[0; 2], &mut c[..1]).is_err());
    }

    #[test]
    fn matmul_by_panels_matches_reference() {
        // n spans two panels and a part; m beyond the GEMV's rows; k with a tail.
        let (k, n) = (77, 2 * PANEL_ROWS + 45);
        for kind in [Half::F16, Half::Bf16] {
            let (wf, bytes) = half_weights(kind, n, k);
            for m in [1, HALF_GEMV_ROWS, HALF_GEMV_ROWS + 1, 13] {
                let a: Vec<f32> = (0..m * k).map(|i| ((i * 13 % 29) as f32 - 14.0) / 8.0).collect();
                let mut c = vec![0f32; m * n];
                matmul_bt_half(kind, m, k, n, &a, &bytes, &mut c).unwrap();
                for i in 0..m {
                    for j in 0..n {
                        let want: f32 = (0..k).map(|t| a[i * k + t] * wf[j * k + t]).sum();
                        assert!((c[i * n + j] - want).abs() <= 1e-4 * want.abs().max(1.0), "{m} {i} {j}");
                    }
                }
            }
        }
    }
}
