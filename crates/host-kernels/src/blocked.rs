//! Cache-blocked matrix products on the register tiles of [`crate::microkernel`]:
//! `MR` rows of one operand, read in place (one element of each broadcast per step),
//! times a panel of `NR` columns of the other, packed so that each step's `NR` values
//! lie side by side. Both products block `k` in steps of [`KC`], so that a packed
//! panel (`KC x NR`, 16 KiB for AVX-512) and a tile's rows share L1.
//!
//! [`gemm_nt`]: `C = A Bᵀ` for a weight `B` stored `[n, k]` row-major
//! (`x @ permute_dims(W)`, the products of every `nn.Linear`). The tiles compute
//! `Cᵀ = B Aᵀ`: `MR` weight rows (never copied) times a panel of `A`, which is packed
//! once per call (`m x k` values, small next to the weight for the activations of a
//! layer), in parallel over its panels. The loops, outermost first:
//!
//! - blocks of [`NC_TILES`] x `MR` weight rows, each written out (transposed into
//!   `C`) once all of `k` is summed: the block of `Cᵀ` stays in a per-thread buffer;
//! - blocks of `k`: the block's weights (`NC x KC`) stay in L2 while every panel of
//!   `A` passes over them;
//! - panels of `NR` rows of `A` (in L1);
//! - tiles of `MR` weight rows.
//!
//! Threads split the weight rows.
//!
//! [`gemm_nn`]: `C = A B` for row-major `A` (`m x k`) and `B` (`k x n`): `MR` rows of
//! `A` (read in place) times a panel of `B`, copied into a per-thread buffer one block
//! of `k` at a time (plain row copies, with no transposition), so that `B`'s rows,
//! often a multiple of 4 KiB apart, never compete for the same cache sets. Loops:
//! blocks of `k`, panels of `B` (each packed once), tiles of `MR` rows of `A`
//! (whose block stays in L2). Threads split the panels (or the rows of `A` when
//! there are fewer panels than threads).
//!
//! Edges: partial panels are packed zero-padded, the last partial tile of rows is
//! copied zero-padded per block of `k`, and partial tiles of `C` go through a scratch
//! tile, so every tile runs the same full-size code; the padding never reaches `C`.

use std::cell::RefCell;

use rayon::prelude::*;

use crate::microkernel::{tile, Isa};
use crate::{SendConst, SendPtr};

/// Steps of `k` per block: a block's panel of `A` (`KC x NR`, 16 KiB for AVX-512)
/// and tile of weights (`MR x KC`) share L1.
pub(crate) const KC: usize = 128;

/// Tiles of weight rows per block (the rows whose `Cᵀ` is kept in the buffer).
const NC_TILES: usize = 8;

/// Products of fewer multiply-adds than this run on the calling thread alone.
pub(crate) const SERIAL_WORK: usize = crate::gemm::SERIAL_WORK;

/// The operands: `A` (`m x k`, row stride `lda`), `B` (`n x k` for [`gemm_nt`],
/// `k x n` for [`gemm_nn`]; row stride `ldb`) and `C` (`m x n`, row stride `ldc`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operands {
    /// `A`, read.
    pub a: *const f32,
    /// Row stride of `A`.
    pub lda: usize,
    /// `B`, read.
    pub b: *const f32,
    /// Row stride of `B`.
    pub ldb: usize,
    /// `C`, written.
    pub c: *mut f32,
    /// Row stride of `C`.
    pub ldc: usize,
}

thread_local! {
    /// The calling thread's packed `A`, reused from call to call.
    static PACKED_A: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
    /// Each thread's block of `Cᵀ` (or packed panel of `B`) and zero-padded partial
    /// tile of rows.
    static SCRATCH: RefCell<(Vec<f32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Run `f` on this thread's buffer `cell`, or on a fresh one if the thread already
/// uses it further up its stack (a thread waiting in rayon may run another task).
fn with_buffer<T: Default, R>(cell: &'static std::thread::LocalKey<RefCell<T>>, f: impl FnOnce(&mut T) -> R) -> R {
    cell.with(|c| match c.try_borrow_mut() {
        Ok(mut b) => f(&mut b),
        Err(_) => f(&mut T::default()),
    })
}

/// `C = A Bᵀ` (see the module documentation), on rayon's pool when `parallel` and
/// the product is large enough, else on the calling thread.
///
/// # Safety
/// The pointers must cover the operands as [`Operands`] describes them, the CPU
/// must support `isa`, `k > 0`, and no other thread may access `C` meanwhile.
pub(crate) unsafe fn gemm_nt(isa: Isa, m: usize, k: usize, n: usize, ops: Operands, parallel: bool) {
    if m == 0 || n == 0 {
        return;
    }
    let (mr, nr) = tile_shape(isa);
    let panels = m.div_ceil(nr);
    let work = m.saturating_mul(n).saturating_mul(k);
    let threads = rayon::current_num_threads().max(1);
    let parallel = parallel && threads > 1 && work >= SERIAL_WORK;
    with_buffer(&PACKED_A, |packed| {
        // Every value is written by `pack_panel` (no clearing pass).
        grow(packed, panels * k * nr);
        let packed = &mut packed[..panels * k * nr];
        let (a, lda) = (SendConst(ops.a), ops.lda);
        let pack = |(p, dst): (usize, &mut [f32])| {
            // SAFETY: rows `p * nr ..` below `m` of `A` are covered (the caller's
            // contract); `dst` is this panel's `k * nr` values.
            unsafe { pack_panel(a.get(), lda, m, k, p * nr, nr, dst) }
        };
        if parallel && panels > 1 {
            packed.par_chunks_mut(k * nr).enumerate().for_each(pack);
        } else {
            packed.chunks_mut(k * nr).enumerate().for_each(pack);
        }
        let pa = SendConst(packed.as_ptr());
        let (b, ldb, c, ldc) = (SendConst(ops.b), ops.ldb, SendPtr(ops.c), ops.ldc);
        let range = |(r0, r1): (usize, usize)| {
            // `A` as packed (what the tiles read of it).
            let ops = Operands {
                a: pa.get(),
                lda: 0,
                b: b.get(),
                ldb,
                c: c.get(),
                ldc,
            };
            // SAFETY: the caller's contract; the ranges of weight rows (columns of
            // `C`) are disjoint.
            unsafe { rows(isa, m, k, ops.a, ops, (r0, r1)) }
        };
        let tiles = n.div_ceil(mr);
        if parallel && tiles > 1 {
            let per = tiles.div_ceil(threads) * mr;
            (0..n.div_ceil(per))
                .into_par_iter()
                .for_each(|t| range((t * per, ((t + 1) * per).min(n))));
        } else {
            range((0, n));
        }
    });
}

/// `(MR, NR)` of `isa`'s tiles.
fn tile_shape(isa: Isa) -> (usize, usize) {
    match isa {
        Isa::Avx512 => (12, 32),
        Isa::Avx2 => (6, 16),
    }
}

/// Make `v` at least `n` long (new values zero, old ones kept: the callers write
/// every value they read).
fn grow(v: &mut Vec<f32>, n: usize) {
    if v.len() < n {
        v.resize(n, 0.0);
    }
}

/// Pack rows `i0 .. i0 + nr` of `A` (`m x k`, row stride `lda`) into `dst`
/// (`k * nr` values, `dst[kk * nr + j] = A[i0 + j][kk]`, zero past row `m`).
///
/// # Safety
/// The rows of `A` below `m` of the panel are readable, `k` elements each.
unsafe fn pack_panel(a: *const f32, lda: usize, m: usize, k: usize, i0: usize, nr: usize, dst: &mut [f32]) {
    let rows = nr.min(m - i0);
    if rows < nr {
        for step in dst.chunks_exact_mut(nr) {
            step[rows..].fill(0.0);
        }
    }
    // Sixteen columns of `A` at a time: one cache line of each row read while
    // sixteen rows of the panel are written.
    for k0 in (0..k).step_by(16) {
        let k1 = (k0 + 16).min(k);
        for j in 0..rows {
            // SAFETY: row `i0 + j < m`, columns `k0..k1 <= k`.
            let src = unsafe { std::slice::from_raw_parts(a.add((i0 + j) * lda + k0), k1 - k0) };
            for (kk, &v) in src.iter().enumerate() {
                dst[(k0 + kk) * nr + j] = v;
            }
        }
    }
}

/// Columns `r0..r1` of `C` (rows of the weight) for every row of `A`.
///
/// # Safety
/// As for [`gemm_nt`]; `packed` is `A` packed by [`pack_panel`] for `isa`'s `NR`.
unsafe fn rows(isa: Isa, m: usize, k: usize, packed: *const f32, ops: Operands, range: (usize, usize)) {
    with_buffer(&SCRATCH, |(ct, tail)| match isa {
        // SAFETY: the caller's contract; the CPU supports `isa`.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { rows_avx512(m, k, packed, ops, range, ct, tail) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { rows_avx2(m, k, packed, ops, range, ct, tail) },
        #[cfg(not(target_arch = "x86_64"))]
        _ => unreachable!("no vector ISA is detected off x86_64"),
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn rows_avx512(
    m: usize,
    k: usize,
    packed: *const f32,
    ops: Operands,
    range: (usize, usize),
    ct: &mut Vec<f32>,
    tail: &mut Vec<f32>,
) {
    // SAFETY: forwarded contract.
    unsafe { rows_tiled::<12, 32>(m, k, packed, ops, range, ct, tail) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2(
    m: usize,
    k: usize,
    packed: *const f32,
    ops: Operands,
    range: (usize, usize),
    ct: &mut Vec<f32>,
    tail: &mut Vec<f32>,
) {
    // SAFETY: forwarded contract.
    unsafe { rows_tiled::<6, 16>(m, k, packed, ops, range, ct, tail) }
}

/// The blocked loops of the module documentation over weight rows `n0..n1`.
#[inline(always)]
unsafe fn rows_tiled<const MR: usize, const NR: usize>(
    m: usize,
    k: usize,
    packed: *const f32,
    ops: Operands,
    (n0, n1): (usize, usize),
    ct: &mut Vec<f32>,
    tail: &mut Vec<f32>,
) {
    let Operands { b, ldb, c, ldc, .. } = ops;
    let panels = m.div_ceil(NR);
    let mpad = panels * NR;
    let nc = MR * NC_TILES;
    // Every value of `Cᵀ` read is written by a tile first; `tail` is cleared where used.
    grow(ct, nc * mpad);
    grow(tail, MR * KC);
    let mut nb0 = n0;
    while nb0 < n1 {
        let nb1 = (nb0 + nc).min(n1);
        let tiles = (nb1 - nb0).div_ceil(MR);
        let full = (nb1 - nb0) / MR;
        let mut kb0 = 0;
        while kb0 < k {
            let kc = KC.min(k - kb0);
            if full < tiles {
                // The last tile's rows, zero-padded to MR rows of `kc`.
                let r0 = nb0 + full * MR;
                tail.fill(0.0);
                for r in 0..nb1 - r0 {
                    // SAFETY: weight row `r0 + r < n1 <= n`, columns `kb0..kb0 + kc <= k`.
                    unsafe {
                        std::ptr::copy_nonoverlapping(b.add((r0 + r) * ldb + kb0), tail.as_mut_ptr().add(r * kc), kc)
                    };
                }
            }
            for p in 0..panels {
                // SAFETY: panel `p` holds `k * NR` values; steps `kb0..kb0 + kc`.
                let bp = unsafe { packed.add(p * k * NR + kb0 * NR) };
                for t in 0..tiles {
                    let (w, ldw) = if t < full {
                        // SAFETY: weight rows below `nb1`, columns from `kb0`.
                        (unsafe { b.add((nb0 + t * MR) * ldb + kb0) }, ldb)
                    } else {
                        (tail.as_ptr(), kc)
                    };
                    // SAFETY: `ct` holds `nc * mpad` values: rows `t * MR ..` of
                    // `NR` values from column `p * NR`.
                    unsafe {
                        tile::<MR, NR>(
                            kc,
                            w,
                            ldw,
                            bp,
                            ct.as_mut_ptr().add(t * MR * mpad + p * NR),
                            mpad,
                            kb0 > 0,
                        )
                    };
                }
            }
            kb0 += kc;
        }
        // C[i][nb0 + r] = Cᵀ[r][i], sixteen columns of C at a time (sixteen rows of Cᵀ
        // read while one cache line of each row of C is written).
        for r0 in (0..nb1 - nb0).step_by(16) {
            let r1 = (r0 + 16).min(nb1 - nb0);
            for i in 0..m {
                // SAFETY: row `i < m` of C, columns `nb0 + r0 .. nb0 + r1 <= n`.
                let dst = unsafe { std::slice::from_raw_parts_mut(c.add(i * ldc + nb0 + r0), r1 - r0) };
                for (r, d) in dst.iter_mut().enumerate() {
                    *d = ct[(r0 + r) * mpad + i];
                }
            }
        }
        nb0 = nb1;
    }
}

/// `C = A B` (see the module documentation), on rayon's pool when `parallel` and the
/// product is large enough, else on the calling thread; then `epilogue(i, row)` on
/// each row `i` of `C` (columns in `cols`), by the thread that computed it.
///
/// # Safety
/// The pointers must cover the operands as [`Operands`] describes them, the CPU
/// must support `isa`, `k > 0`, and no other thread may access `C` meanwhile.
pub(crate) unsafe fn gemm_nn<E>(isa: Isa, m: usize, k: usize, n: usize, ops: Operands, parallel: bool, epilogue: &E)
where
    E: Fn(usize, std::ops::Range<usize>, &mut [f32]) + Sync,
{
    if m == 0 || n == 0 {
        return;
    }
    let (mr, nr) = tile_shape(isa);
    let panels = n.div_ceil(nr);
    let work = m.saturating_mul(n).saturating_mul(k);
    let threads = rayon::current_num_threads().max(1);
    let parallel = parallel && threads > 1 && work >= SERIAL_WORK;
    let (a, lda, b, ldb, c, ldc) = (
        SendConst(ops.a),
        ops.lda,
        SendConst(ops.b),
        ops.ldb,
        SendPtr(ops.c),
        ops.ldc,
    );
    let block = |rows: (usize, usize), panels: (usize, usize)| {
        let ops = Operands {
            a: a.get(),
            lda,
            b: b.get(),
            ldb,
            c: c.get(),
            ldc,
        };
        // SAFETY: the caller's contract; the blocks of `C` are disjoint.
        unsafe { nn_block(isa, k, n, ops, rows, panels) };
        let cols = panels.0 * nr..(panels.1 * nr).min(n);
        for i in rows.0..rows.1 {
            // SAFETY: row `i < m` of `C`, columns below `n`; this block's own.
            let row = unsafe { std::slice::from_raw_parts_mut(c.get().add(i * ldc + cols.start), cols.len()) };
            epilogue(i, cols.clone(), row);
        }
    };
    if !parallel {
        block((0, m), (0, panels));
    } else if panels >= threads {
        let per = panels.div_ceil(threads);
        (0..panels.div_ceil(per))
            .into_par_iter()
            .for_each(|t| block((0, m), (t * per, ((t + 1) * per).min(panels))));
    } else {
        let per = m.div_ceil(threads).next_multiple_of(mr);
        (0..m.div_ceil(per))
            .into_par_iter()
            .for_each(|t| block((t * per, ((t + 1) * per).min(m)), (0, panels)));
    }
}

/// Rows `i0..i1` and panels `p0..p1` (columns `p0 * NR ..`) of `C = A B`.
///
/// # Safety
/// As for [`gemm_nn`].
unsafe fn nn_block(isa: Isa, k: usize, n: usize, ops: Operands, rows: (usize, usize), panels: (usize, usize)) {
    with_buffer(&SCRATCH, |(pb, tail)| match isa {
        // SAFETY: the caller's contract; the CPU supports `isa`.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { nn_avx512(k, n, ops, rows, panels, pb, tail) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { nn_avx2(k, n, ops, rows, panels, pb, tail) },
        #[cfg(not(target_arch = "x86_64"))]
        _ => unreachable!("no vector ISA is detected off x86_64"),
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn nn_avx512(
    k: usize,
    n: usize,
    ops: Operands,
    rows: (usize, usize),
    panels: (usize, usize),
    pb: &mut Vec<f32>,
    tail: &mut Vec<f32>,
) {
    // SAFETY: forwarded contract.
    unsafe { nn_tiled::<12, 32>(k, n, ops, rows, panels, pb, tail) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn nn_avx2(
    k: usize,
    n: usize,
    ops: Operands,
    rows: (usize, usize),
    panels: (usize, usize),
    pb: &mut Vec<f32>,
    tail: &mut Vec<f32>,
) {
    // SAFETY: forwarded contract.
    unsafe { nn_tiled::<6, 16>(k, n, ops, rows, panels, pb, tail) }
}

/// The blocked loops of [`gemm_nn`] over rows `i0..i1` and panels `p0..p1`.
#[inline(always)]
unsafe fn nn_tiled<const MR: usize, const NR: usize>(
    k: usize,
    n: usize,
    ops: Operands,
    (i0, i1): (usize, usize),
    (p0, p1): (usize, usize),
    pb: &mut Vec<f32>,
    tail: &mut Vec<f32>,
) {
    let Operands { a, lda, b, ldb, c, ldc } = ops;
    // Both are cleared where a partial panel or tile needs zeros.
    grow(pb, KC * NR);
    grow(tail, MR * KC);
    let tiles = (i1 - i0).div_ceil(MR);
    let full = (i1 - i0) / MR;
    let mut scratch = [[0f32; NR]; MR];
    let mut kb0 = 0;
    while kb0 < k {
        let kc = KC.min(k - kb0);
        if full < tiles {
            // The last tile's rows of `A`, zero-padded to MR rows of `kc`.
            let r0 = i0 + full * MR;
            tail.fill(0.0);
            for r in 0..i1 - r0 {
                // SAFETY: row `r0 + r < i1 <= m` of `A`, columns `kb0..kb0 + kc <= k`.
                unsafe {
                    std::ptr::copy_nonoverlapping(a.add((r0 + r) * lda + kb0), tail.as_mut_ptr().add(r * kc), kc)
                };
            }
        }
        for p in p0..p1 {
            let j0 = p * NR;
            let cols = NR.min(n - j0);
            if cols < NR {
                pb.fill(0.0);
            }
            for kk in 0..kc {
                // SAFETY: row `kb0 + kk < k` of `B`, columns `j0..j0 + cols <= n`;
                // `pb` holds `KC * NR` values.
                unsafe {
                    let (src, dst) = (b.add((kb0 + kk) * ldb + j0), pb.as_mut_ptr().add(kk * NR));
                    if cols == NR {
                        // A whole row of the panel as one fixed-size copy (vector
                        // moves in place, not a call to `memcpy` per row).
                        std::ptr::write_unaligned(
                            dst as *mut [f32; NR],
                            std::ptr::read_unaligned(src as *const [f32; NR]),
                        );
                    } else {
                        std::ptr::copy_nonoverlapping(src, dst, cols);
                    }
                }
            }
            for t in 0..tiles {
                let i = i0 + t * MR;
                let rows = MR.min(i1 - i);
                let (w, ldw) = if t < full {
                    // SAFETY: rows `i..i + MR <= i1` of `A`, columns from `kb0`.
                    (unsafe { a.add(i * lda + kb0) }, lda)
                } else {
                    (tail.as_ptr(), kc)
                };
                // SAFETY: row `i < m`, column `j0 < n` of `C`.
                let cij = unsafe { c.add(i * ldc + j0) };
                if rows == MR && cols == NR {
                    // SAFETY: `C` holds this whole tile.
                    unsafe { tile::<MR, NR>(kc, w, ldw, pb.as_ptr(), cij, ldc, kb0 > 0) };
                } else {
                    // A partial tile of `C` through `scratch`.
                    for (r, srow) in scratch.iter_mut().enumerate().take(rows) {
                        if kb0 > 0 {
                            // SAFETY: row `i + r < i1`, columns `j0..j0 + cols` of `C`.
                            unsafe { std::ptr::copy_nonoverlapping(cij.add(r * ldc), srow.as_mut_ptr(), cols) };
                        }
                    }
                    // SAFETY: `scratch` is a whole tile.
                    unsafe { tile::<MR, NR>(kc, w, ldw, pb.as_ptr(), scratch.as_mut_ptr() as *mut f32, NR, kb0 > 0) };
                    for (r, srow) in scratch.iter().enumerate().take(rows) {
                        // SAFETY: as above.
                        unsafe { std::ptr::copy_nonoverlapping(srow.as_ptr(), cij.add(r * ldc), cols) };
                    }
                }
            }
        }
        kb0 += kc;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 7 + seed * 13) % 23) as f32 * 0.125 - 1.375)
            .collect()
    }

    /// Every ISA this CPU has, serial and split over threads, on shapes that are
    /// not multiples of the tile, the blocks of `k` or of weight rows, with `k`,
    /// `m` or `n` of one, and with row strides longer than the rows; every output
    /// is compared with the sum in `f64`, and the padding of `C` is left alone.
    #[test]
    fn nt_products_match_reference_at_awkward_sizes() {
        let isas: Vec<Isa> = crate::microkernel::available().collect();
        if isas.is_empty() {
            eprintln!("no AVX2/AVX-512: the register-tiled kernels are not used on this CPU");
        }
        let shapes = [
            (1usize, 1usize, 1usize),
            (1, 7, 1),
            (5, 1, 9),
            (13, 17, 1),
            (1, 300, 45),
            (33, 129, 97),
            (32, 128, 128),
            (65, 300, 200),
            (70, 257, 131),
            (128, 64, 13),
        ];
        for isa in isas {
            for &(m, k, n) in &shapes {
                for (pad_a, pad_b, pad_c) in [(0usize, 0usize, 0usize), (3, 5, 2)] {
                    let (lda, ldb, ldc) = (k + pad_a, k + pad_b, n + pad_c);
                    let a = values(m * lda, 1);
                    let b = values(n * ldb, 2);
                    for parallel in [false, true] {
                        let mut c = vec![-7.0f32; m * ldc];
                        let ops = Operands {
                            a: a.as_ptr(),
                            lda,
                            b: b.as_ptr(),
                            ldb,
                            c: c.as_mut_ptr(),
                            ldc,
                        };
                        // SAFETY: the buffers hold the strided operands; the CPU has `isa`.
                        unsafe { gemm_nt(isa, m, k, n, ops, parallel) };
                        for i in 0..m {
                            for j in 0..ldc {
                                let got = c[i * ldc + j];
                                if j >= n {
                                    assert_eq!(got, -7.0, "{isa:?} {m}x{k}x{n} padding [{i},{j}]");
                                    continue;
                                }
                                let want: f64 = (0..k).map(|l| a[i * lda + l] as f64 * b[j * ldb + l] as f64).sum();
                                assert!(
                                    (got as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()),
                                    "{isa:?} {m}x{k}x{n} strides ({lda}, {ldb}, {ldc}) parallel {parallel} [{i},{j}]: {got} vs {want}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// [`gemm_nn`] as [`nt_products_match_reference_at_awkward_sizes`] tests
    /// [`gemm_nt`], with an epilogue that must see every element of `C` exactly once
    /// (it adds a value that depends on the row and the column).
    #[test]
    fn nn_products_match_reference_at_awkward_sizes() {
        let shapes = [
            (1usize, 1usize, 1usize),
            (1, 7, 1),
            (5, 1, 9),
            (13, 17, 1),
            (1, 300, 45),
            (33, 129, 97),
            (32, 128, 128),
            (65, 300, 200),
            (70, 257, 131),
            (130, 64, 13),
            (7, 40, 300),
        ];
        for isa in crate::microkernel::available() {
            for &(m, k, n) in &shapes {
                for (pad_a, pad_b, pad_c) in [(0usize, 0usize, 0usize), (3, 5, 2)] {
                    let (lda, ldb, ldc) = (k + pad_a, n + pad_b, n + pad_c);
                    let a = values(m * lda, 1);
                    let b = values(k * ldb, 2);
                    let mark = |i: usize, j: usize| i as f32 + j as f32 * 0.5;
                    let epilogue = |i: usize, cols: std::ops::Range<usize>, row: &mut [f32]| {
                        for (j, v) in cols.zip(row.iter_mut()) {
                            *v += mark(i, j);
                        }
                    };
                    for parallel in [false, true] {
                        let mut c = vec![-7.0f32; m * ldc];
                        let ops = Operands {
                            a: a.as_ptr(),
                            lda,
                            b: b.as_ptr(),
                            ldb,
                            c: c.as_mut_ptr(),
                            ldc,
                        };
                        // SAFETY: the buffers hold the strided operands; the CPU has `isa`.
                        unsafe { gemm_nn(isa, m, k, n, ops, parallel, &epilogue) };
                        for i in 0..m {
                            for j in 0..ldc {
                                let got = c[i * ldc + j];
                                if j >= n {
                                    assert_eq!(got, -7.0, "{isa:?} {m}x{k}x{n} padding [{i},{j}]");
                                    continue;
                                }
                                let want: f64 = (0..k)
                                    .map(|l| a[i * lda + l] as f64 * b[l * ldb + j] as f64)
                                    .sum::<f64>()
                                    + mark(i, j) as f64;
                                assert!(
                                    (got as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()),
                                    "{isa:?} {m}x{k}x{n} strides ({lda}, {ldb}, {ldc}) parallel {parallel} [{i},{j}]: {got} vs {want}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// Nothing is written for an empty product.
    #[test]
    fn empty_products_write_nothing() {
        for isa in crate::microkernel::available() {
            for (m, n) in [(0usize, 5usize), (4, 0)] {
                let (a, b) = (vec![1.0f32; m * 3], vec![1.0f32; n * 3]);
                let mut c = vec![-7.0f32; 4];
                let ops = Operands {
                    a: a.as_ptr(),
                    lda: 3,
                    b: b.as_ptr(),
                    ldb: 3,
                    c: c.as_mut_ptr(),
                    ldc: n,
                };
                // SAFETY: nothing is read or written for an empty product.
                unsafe { gemm_nt(isa, m, 3, n, ops, true) };
                assert_eq!(c, [-7.0; 4]);
                let ops = Operands { ldb: n, ..ops };
                // SAFETY: as above.
                unsafe { gemm_nn(isa, m, 3, n, ops, true, &|_, _, _: &mut [f32]| panic!("no rows")) };
                assert_eq!(c, [-7.0; 4]);
            }
        }
    }
}
