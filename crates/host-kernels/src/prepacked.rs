//! Matrix products with a right operand packed once, ahead of the products that use
//! it: a layer's weight is packed the first time and every later call reads the
//! panels as they are, with no packing per call.
//!
//! [`PackedB`] holds `B` (`k x n`, from any strides: a row-major `[k, n]` weight or
//! a `[n, k]` one read transposed) as panels of `NR` columns, each `k` steps of
//! `NR` values side by side (zero past column `n`): the layout the register tiles
//! of the crate's microkernel read. [`gemm_prepacked`] computes `C = A B` for a
//! row-major `A`: per group of panels (whose block of `C` stays in L2) and block of
//! `KC` steps, each panel's block (in L1) passes under
//! every tile of `MR` rows of `A`, read in place; a last partial tile of rows is
//! copied step-major into a tile of fewer rows (a third or two thirds of `MR`, where
//! that holds it) rather than padded to `MR`. Threads take groups of panels (or of
//! rows, when there are fewer panels than threads), a few per thread, as they come
//! free.
//!
//! The sums are the same as those of [`crate::gemm::sgemm_parallel`]'s blocked
//! kernels: each output is one fused multiply-add chain over `k` in order, blocked
//! at the same `KC` steps, so the results are bit for bit those of the unpacked
//! product on the same CPU.

use std::cell::RefCell;

use rayon::prelude::*;

use crate::gemm::MatRef;
use crate::microkernel::{self, tile, tile_packed, Isa};
use crate::{KernelError, Result, SendConst, SendPtr};

/// Values of `C` per group of panels (256 KiB, in L2 with the panels' blocks).
const C_BLOCK: usize = 1 << 16;

/// Tasks per thread of a parallel product.
const TASKS_PER_THREAD: usize = 4;

/// Steps of `k` per block (as in the unpacked kernels, so that sums agree).
const KC: usize = crate::blocked::KC;

thread_local! {
    /// Each thread's step-major copy of the last, partial tile of rows of `A`.
    static PACKED_ROWS: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// A right operand `B` (`k x n`) packed into the panels of this CPU's register
/// tiles (see the module documentation).
#[derive(Clone, Debug)]
pub struct PackedB {
    isa: Isa,
    k: usize,
    n: usize,
    layout: Layout,
    data: Vec<f32>,
}

/// How a [`PackedB`] holds `B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Panels of the register tiles' `NR` columns ([`PackedB::pack`]): fastest for
    /// products of a few rows, where nothing else is packed per call.
    Panels,
    /// `Bᵀ` row-major (`[n, k]`, [`PackedB::rows`]): what the blocked product of a
    /// `[n, k]` weight reads in place, packing only `A` per call. For a `[k, n]`
    /// weight and a tall `A` (a sequence of 128 tokens) this was 5-15% faster than
    /// packing panels of `B` per call (`128 x 768 x 3072`: 80 against 69 GFLOP/s on
    /// one core), and faster than [`Layout::Panels`] there too.
    Rows,
}

impl PackedB {
    /// Pack `B` (`k x n`; element `(l, j)` at `b.data[l * b.rs + j * b.cs]`), or
    /// `None` on a CPU without the register tiles (AVX-512 or AVX2 with FMA) or for
    /// an empty `B`.
    pub fn pack(k: usize, n: usize, b: MatRef<'_>) -> Result<Option<PackedB>> {
        b.check("packed B", k, n)?;
        match microkernel::detect() {
            Some(isa) => PackedB::pack_for(isa, k, n, b),
            None => Ok(None),
        }
    }

    /// [`PackedB::pack`] for the tiles of `isa` (which the CPU must have).
    pub(crate) fn pack_for(isa: Isa, k: usize, n: usize, b: MatRef<'_>) -> Result<Option<PackedB>> {
        b.check("packed B", k, n)?;
        if k == 0 || n == 0 {
            return Ok(None);
        }
        let nr = tile_shape(isa).1;
        let len = n
            .div_ceil(nr)
            .checked_mul(k)
            .and_then(|v| v.checked_mul(nr))
            .ok_or_else(|| KernelError(format!("packed B: {k} x {n} is too large")))?;
        let mut data = vec![0f32; len];
        let pack = |(p, dst): (usize, &mut [f32])| {
            let j0 = p * nr;
            let cols = nr.min(n - j0);
            if b.cs == 1 {
                for (l, d) in dst.chunks_exact_mut(nr).enumerate() {
                    let s = l * b.rs + j0;
                    d[..cols].copy_from_slice(&b.data[s..s + cols]);
                }
            } else {
                // Sixteen steps at a time: one cache line of each of the panel's
                // columns (rows of a transposed weight) per pass.
                for l0 in (0..k).step_by(16) {
                    let l1 = (l0 + 16).min(k);
                    for c in 0..cols {
                        let col = (j0 + c) * b.cs;
                        for l in l0..l1 {
                            dst[l * nr + c] = b.data[l * b.rs + col];
                        }
                    }
                }
            }
        };
        if k * n >= crate::PAR_MIN_WORK {
            data.par_chunks_mut(k * nr).enumerate().for_each(pack);
        } else {
            data.chunks_mut(k * nr).enumerate().for_each(pack);
        }
        Ok(Some(PackedB {
            isa,
            k,
            n,
            layout: Layout::Panels,
            data,
        }))
    }

    /// `B` (`k x n`, any strides) copied as `Bᵀ` row-major ([`Layout::Rows`]), or
    /// `None` on a CPU without the register tiles or for an empty `B`.
    pub fn rows(k: usize, n: usize, b: MatRef<'_>) -> Result<Option<PackedB>> {
        b.check("packed B", k, n)?;
        let Some(isa) = microkernel::detect() else {
            return Ok(None);
        };
        if k == 0 || n == 0 {
            return Ok(None);
        }
        let len = k
            .checked_mul(n)
            .ok_or_else(|| KernelError(format!("packed B: {k} x {n} is too large")))?;
        let mut data = vec![0f32; len];
        // Blocks of sixteen rows of `Bᵀ`: one cache line of each row of `B` read per
        // sixteen values written.
        let copy = |(blk, dst): (usize, &mut [f32])| {
            let j0 = blk * 16;
            let rows = dst.len() / k;
            for l in 0..k {
                for r in 0..rows {
                    dst[r * k + l] = b.data[l * b.rs + (j0 + r) * b.cs];
                }
            }
        };
        if k * n >= crate::PAR_MIN_WORK {
            data.par_chunks_mut(16 * k).enumerate().for_each(copy);
        } else {
            data.chunks_mut(16 * k).enumerate().for_each(copy);
        }
        Ok(Some(PackedB {
            isa,
            k,
            n,
            layout: Layout::Rows,
            data,
        }))
    }

    /// How `B` is held.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Rows of `B` (the summed axis).
    pub fn k(&self) -> usize {
        self.k
    }

    /// Columns of `B`.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Bytes of the packed panels.
    pub fn bytes(&self) -> usize {
        self.data.len() * std::mem::size_of::<f32>()
    }
}

/// `(MR, NR)` of `isa`'s tiles.
fn tile_shape(isa: Isa) -> (usize, usize) {
    match isa {
        Isa::Avx512 => (12, 32),
        Isa::Avx2 => (6, 16),
    }
}

/// `C = A B` for a row-major `A` (`m x b.k()`, row stride `lda`) and a packed `B`,
/// into the contiguous row-major `c` (`m x b.n()`), on rayon's pool when `parallel`
/// and the product is large enough (else on the calling thread).
pub fn gemm_prepacked(m: usize, a: &[f32], lda: usize, b: &PackedB, c: &mut [f32], parallel: bool) -> Result<()> {
    let (k, n) = (b.k, b.n);
    MatRef {
        data: a,
        rs: lda,
        cs: 1,
    }
    .check("gemm A", m, k)?;
    if lda < k && m > 1 {
        return Err(KernelError(format!(
            "gemm A: row stride {lda} is below its {k} columns"
        )));
    }
    crate::check_len("gemm C", c.len(), m * n)?;
    if m == 0 {
        return Ok(());
    }
    if b.layout == Layout::Rows {
        let gemm = crate::gemm::Gemm {
            m,
            k,
            n,
            a: MatRef {
                data: a,
                rs: lda,
                cs: 1,
            },
            b: MatRef {
                data: &b.data,
                rs: 1,
                cs: k,
            },
            epilogue: &crate::Epilogue::default(),
            channel0: 0,
        };
        return gemm.run(c, parallel);
    }
    let isa = b.isa;
    let (mr, nr) = tile_shape(isa);
    let panels = n.div_ceil(nr);
    let work = m.saturating_mul(n).saturating_mul(k);
    let threads = rayon::current_num_threads().max(1);
    let parallel = parallel && threads > 1 && work >= crate::gemm::SERIAL_WORK;
    let (ap, bp, cp) = (
        SendConst(a.as_ptr()),
        SendConst(b.data.as_ptr()),
        SendPtr(c.as_mut_ptr()),
    );
    let block = |rows: (usize, usize), panels: (usize, usize)| {
        let ops = Prepacked {
            k,
            n,
            a: ap.get(),
            lda,
            b: bp.get(),
            c: cp.get(),
            ldc: n,
        };
        // SAFETY: `a` covers `m` rows of `k` at stride `lda` and `c` `m * n` values
        // (checked above), `b` holds every panel; blocks of `C` are disjoint; the CPU
        // has `isa` (detected when `b` was packed).
        unsafe { pp_block(isa, ops, rows, panels) };
    };
    // Up to `TASKS_PER_THREAD` tasks per thread, taken as threads come free: nothing
    // is packed per task, so a thread slowed by other work on its core leaves the
    // rest of the product to the others instead of holding every one up.
    let tasks = threads * TASKS_PER_THREAD;
    if !parallel {
        block((0, m), (0, panels));
    } else if panels >= threads {
        let per = panels.div_ceil(tasks.min(panels));
        (0..panels.div_ceil(per))
            .into_par_iter()
            .with_max_len(1)
            .for_each(|t| block((0, m), (t * per, ((t + 1) * per).min(panels))));
    } else {
        let per = m.div_ceil(tasks).next_multiple_of(mr);
        (0..m.div_ceil(per))
            .into_par_iter()
            .with_max_len(1)
            .for_each(|t| block((t * per, ((t + 1) * per).min(m)), (0, panels)));
    }
    Ok(())
}

/// The operands of [`gemm_prepacked`] as raw parts.
#[derive(Clone, Copy)]
struct Prepacked {
    k: usize,
    n: usize,
    a: *const f32,
    lda: usize,
    b: *const f32,
    c: *mut f32,
    ldc: usize,
}

/// Rows `i0..i1` and panels `p0..p1` of `C`.
///
/// # Safety
/// As for [`gemm_prepacked`]'s checked operands; the CPU has `isa`.
unsafe fn pp_block(isa: Isa, ops: Prepacked, rows: (usize, usize), panels: (usize, usize)) {
    let run = |buf: &mut Vec<f32>| match isa {
        // SAFETY: the caller's contract.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { pp_avx512(ops, rows, panels, buf) },
        // SAFETY: the caller's contract.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { pp_avx2(ops, rows, panels, buf) },
        #[cfg(not(target_arch = "x86_64"))]
        _ => unreachable!("no vector ISA is detected off x86_64"),
    };
    PACKED_ROWS.with(|cell| match cell.try_borrow_mut() {
        Ok(mut b) => run(&mut b),
        Err(_) => run(&mut Vec::new()),
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn pp_avx512(ops: Prepacked, rows: (usize, usize), panels: (usize, usize), buf: &mut Vec<f32>) {
    // SAFETY: forwarded contract.
    unsafe { pp_tiled::<12, 32, 4, 8>(ops, rows, panels, buf) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn pp_avx2(ops: Prepacked, rows: (usize, usize), panels: (usize, usize), buf: &mut Vec<f32>) {
    // SAFETY: forwarded contract.
    unsafe { pp_tiled::<6, 16, 2, 4>(ops, rows, panels, buf) }
}

/// The rows of the tile that starts at row `i` (of `i1`): `MR`, or for the last
/// tile the least of `M1 < M2 < MR` that holds what is left.
#[inline(always)]
fn tile_rows<const MR: usize, const M1: usize, const M2: usize>(i: usize, i1: usize) -> usize {
    match i1 - i {
        r if r >= MR => MR,
        r if r > M2 => MR,
        r if r > M1 => M2,
        _ => M1,
    }
}

/// [`tile_packed`] with `mr` (one of `M1`, `M2`, `MR`) rows.
///
/// # Safety
/// As for [`tile_packed`] with `mr` rows.
#[inline(always)]
unsafe fn tile_mr<const MR: usize, const NR: usize, const M1: usize, const M2: usize>(
    mr: usize,
    kc: usize,
    w: *const f32,
    p: *const f32,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    // SAFETY: forwarded contract.
    unsafe {
        if mr == M1 {
            tile_packed::<M1, NR>(kc, w, p, c, ldc, accumulate)
        } else if mr == M2 {
            tile_packed::<M2, NR>(kc, w, p, c, ldc, accumulate)
        } else {
            tile_packed::<MR, NR>(kc, w, p, c, ldc, accumulate)
        }
    }
}

/// The loops of [`gemm_prepacked`] over rows `i0..i1` and panels `p0..p1`: tiles of
/// `MR` rows of `A` read in place, and a last partial tile copied step-major into
/// `buf` (`M1`, `M2` or `MR` rows, zero-padded) per block of `k`.
#[inline(always)]
unsafe fn pp_tiled<const MR: usize, const NR: usize, const M1: usize, const M2: usize>(
    ops: Prepacked,
    (i0, i1): (usize, usize),
    (p0, p1): (usize, usize),
    buf: &mut Vec<f32>,
) {
    let Prepacked {
        k,
        n,
        a,
        lda,
        b,
        c,
        ldc,
    } = ops;
    let tiles = (i1 - i0).div_ceil(MR);
    let full = (i1 - i0) / MR;
    // The last tile's rows and the rows its kernel computes.
    let last = i0 + full * MR;
    let (rows_last, mr_last) = (i1 - last, tile_rows::<MR, M1, M2>(last, i1));
    buf.clear();
    buf.resize(mr_last * KC.min(k), 0.0);
    let mut scratch = [[0f32; NR]; MR];
    // Groups of panels whose block of `C` (at most `C_BLOCK` values) stays in L2
    // while every block of `k` adds to it.
    let group = (C_BLOCK / ((i1 - i0) * NR)).max(1);
    let mut g0 = p0;
    while g0 < p1 {
        let g1 = (g0 + group).min(p1);
        let mut kb0 = 0;
        while kb0 < k {
            let kc = KC.min(k - kb0);
            if full < tiles {
                // The last tile, step-major: `buf[kk * mr_last + r]`.
                let dst = &mut buf[..mr_last * kc];
                dst.fill(0.0);
                for r in 0..rows_last {
                    // SAFETY: row `last + r < i1 <= m` of `A`, columns `kb0..kb0 + kc <= k`.
                    let src = unsafe { std::slice::from_raw_parts(a.add((last + r) * lda + kb0), kc) };
                    for (kk, &v) in src.iter().enumerate() {
                        dst[kk * mr_last + r] = v;
                    }
                }
            }
            for p in g0..g1 {
                let j0 = p * NR;
                let cols = NR.min(n - j0);
                // SAFETY: panel `p` holds `k * NR` values; steps `kb0..kb0 + kc`.
                let bp = unsafe { b.add(p * k * NR + kb0 * NR) };
                for t in 0..tiles {
                    let i = i0 + t * MR;
                    let (rows, mr) = if t < full { (MR, MR) } else { (rows_last, mr_last) };
                    // SAFETY: row `i < m`, column `j0 < n` of `C`.
                    let cij = unsafe { c.add(i * ldc + j0) };
                    // The tile into `C` itself, or through `scratch` where partial.
                    let partial = rows != mr || cols != NR;
                    let (dst, ldd) = if partial {
                        if kb0 > 0 {
                            for (r, srow) in scratch.iter_mut().enumerate().take(rows) {
                                // SAFETY: row `i + r < i1`, columns `j0..j0 + cols` of `C`.
                                unsafe { std::ptr::copy_nonoverlapping(cij.add(r * ldc), srow.as_mut_ptr(), cols) };
                            }
                        }
                        (scratch.as_mut_ptr() as *mut f32, NR)
                    } else {
                        (cij, ldc)
                    };
                    // (No closure here: it would not inherit the caller's target features.)
                    if t < full {
                        // SAFETY: rows `i..i + MR <= i1` of `A`, columns from `kb0`; `dst`
                        // holds `MR` rows of `NR`.
                        unsafe { tile::<MR, NR>(kc, a.add(i * lda + kb0), lda, bp, dst, ldd, kb0 > 0) };
                    } else {
                        // SAFETY: `buf` holds the step-major tile; `dst` `mr` rows of `NR`.
                        unsafe { tile_mr::<MR, NR, M1, M2>(mr, kc, buf.as_ptr(), bp, dst, ldd, kb0 > 0) };
                    }
                    if partial {
                        for (r, srow) in scratch.iter().enumerate().take(rows) {
                            // SAFETY: as above.
                            unsafe { std::ptr::copy_nonoverlapping(srow.as_ptr(), cij.add(r * ldc), cols) };
                        }
                    }
                }
            }
            kb0 += kc;
        }
        g0 = g1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{sgemm_parallel, Epilogue};

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 7 + seed * 13) % 23) as f32 * 0.125 - 1.375 + (i % 5) as f32 * 1e-3)
            .collect()
    }

    /// At shapes that are not multiples of the tiles or of the blocks of `k`, with
    /// one row, column or step, for a weight stored `[k, n]` and one stored `[n, k]`,
    /// serial and split over threads (with a row stride of `A` longer than its rows),
    /// the product from the weight packed in either layout is bit for bit the
    /// unpacked kernels' (the same fused sums in the same order), and close to the
    /// sum in `f64`.
    #[test]
    fn prepacked_products_equal_the_unpacked_kernels() {
        let shapes = [
            (1usize, 1usize, 1usize),
            (5, 7, 1),
            (5, 1, 9),
            (13, 17, 33),
            (32, 128, 128),
            (33, 129, 97),
            (65, 300, 200),
            (70, 257, 131),
            (128, 64, 13),
            (7, 40, 300),
            (200, 96, 64),
            (16, 33, 40),
            (20, 260, 64),
            // One panel, rows split over threads.
            (300, 400, 20),
        ];
        for (isa, &(m, k, n)) in microkernel::available().flat_map(|i| shapes.iter().map(move |s| (i, s))) {
            for transposed in [false, true] {
                let w = values(k * n, 2);
                let bm = if transposed {
                    MatRef { data: &w, rs: 1, cs: k }
                } else {
                    MatRef::row_major(&w, n)
                };
                let mut forms = vec![PackedB::pack_for(isa, k, n, bm).expect("valid shapes").expect("packed")];
                if microkernel::detect() == Some(isa) {
                    forms.push(PackedB::rows(k, n, bm).expect("valid shapes").expect("packed"));
                }
                let lda = k + 3;
                let a = values(m * lda, 1);
                let dense: Vec<f32> = (0..m * k).map(|i| a[(i / k) * lda + i % k]).collect();
                let mut want = vec![0f32; m * n];
                let ops = crate::blocked::Operands {
                    a: dense.as_ptr(),
                    lda: k,
                    b: w.as_ptr(),
                    ldb: if transposed { k } else { n },
                    c: want.as_mut_ptr(),
                    ldc: n,
                };
                // SAFETY: the buffers hold the operands; the CPU has `isa`.
                unsafe {
                    if transposed {
                        crate::blocked::gemm_nt(isa, m, k, n, ops, false)
                    } else {
                        crate::blocked::gemm_nn(isa, m, k, n, ops, false, &|_, _, _: &mut [f32]| {})
                    }
                }
                if microkernel::detect() == Some(isa) {
                    let mut via_gemm = vec![0f32; m * n];
                    sgemm_parallel(
                        m,
                        k,
                        n,
                        MatRef::row_major(&dense, k),
                        bm,
                        &mut via_gemm,
                        &Epilogue::default(),
                        0,
                    )
                    .expect("valid shapes");
                    assert_eq!(via_gemm, want);
                }
                for (packed, parallel) in forms.iter().flat_map(|p| [(p, false), (p, true)]) {
                    assert_eq!((packed.k(), packed.n()), (k, n));
                    let layout = packed.layout();
                    let mut got = vec![-7f32; m * n];
                    gemm_prepacked(m, &a, lda, packed, &mut got, parallel).expect("valid shapes");
                    for i in 0..m {
                        for j in 0..n {
                            let (g, u) = (got[i * n + j], want[i * n + j]);
                            assert_eq!(
                                g.to_bits(),
                                u.to_bits(),
                                "{isa:?} {layout:?} {m}x{k}x{n} transposed {transposed} parallel {parallel} [{i},{j}]: {g} vs {u}"
                            );
                            let exact: f64 = (0..k)
                                .map(|l| {
                                    let b = if transposed { w[j * k + l] } else { w[l * n + j] };
                                    a[i * lda + l] as f64 * b as f64
                                })
                                .sum();
                            assert!((g as f64 - exact).abs() <= 1e-4 * (1.0 + exact.abs()));
                        }
                    }
                }
            }
        }
    }

    /// Operands that do not fit their shapes are errors, not panics.
    #[test]
    fn mismatched_operands_are_errors() {
        let w = values(12, 0);
        assert!(PackedB::pack(4, 4, MatRef::row_major(&w, 4)).is_err());
        let Some(p) = PackedB::pack(3, 4, MatRef::row_major(&w, 4)).expect("fits") else {
            return;
        };
        let a = values(6, 1);
        let mut c = vec![0f32; 8];
        assert!(gemm_prepacked(2, &a, 3, &p, &mut c[..7], false).is_err());
        assert!(gemm_prepacked(3, &a, 3, &p, &mut [0f32; 12], false).is_err());
        assert!(gemm_prepacked(2, &a, 2, &p, &mut c, false).is_err());
        gemm_prepacked(2, &a, 3, &p, &mut c, false).expect("fits");
        gemm_prepacked(0, &[], 3, &p, &mut [], false).expect("empty");
    }
}
