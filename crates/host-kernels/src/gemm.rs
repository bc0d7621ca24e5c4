//! Matrix products: cache-blocked, register-tiled AVX-512 / AVX2 kernels on
//! row-major operands and transposed weights (the `blocked` module),
//! `matrixmultiply` for other strides and other CPUs, split over rayon.

use rayon::prelude::*;

use crate::simd::{axpy, dot};
use crate::{blocked, microkernel};
use crate::{check_len, for_chunks, pieces, Epilogue, KernelError, Result, SendConst, SendPtr};

/// A strided read-only matrix operand: element `(i, j)` is `data[i * rs + j * cs]`.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a> {
    /// The elements.
    pub data: &'a [f32],
    /// Row stride, in elements.
    pub rs: usize,
    /// Column stride, in elements.
    pub cs: usize,
}

impl<'a> MatRef<'a> {
    /// A row-major matrix with `cols` columns.
    pub fn row_major(data: &'a [f32], cols: usize) -> MatRef<'a> {
        MatRef { data, rs: cols, cs: 1 }
    }
    pub(crate) fn check(&self, what: &str, rows: usize, cols: usize) -> Result<()> {
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        let last = (rows - 1) * self.rs + (cols - 1) * self.cs;
        if last >= self.data.len() {
            return Err(KernelError(format!(
                "{what}: a {rows}x{cols} matrix with strides ({}, {}) does not fit in {} elements",
                self.rs,
                self.cs,
                self.data.len()
            )));
        }
        Ok(())
    }
}

/// `C = A * B` for `A: m x k`, `B: k x n` and a contiguous row-major `C: m x n`,
/// then `epilogue` per row of `C` (row `i` is channel `channel0 + i`; a residual is
/// indexed like `C`). Runs on rayon's pool, split over columns (or rows when `C`
/// is taller than wide).
#[allow(clippy::too_many_arguments)]
pub fn sgemm_parallel(
    m: usize,
    k: usize,
    n: usize,
    a: MatRef<'_>,
    b: MatRef<'_>,
    c: &mut [f32],
    epilogue: &Epilogue<'_>,
    channel0: usize,
) -> Result<()> {
    Gemm {
        m,
        k,
        n,
        a,
        b,
        epilogue,
        channel0,
    }
    .run(c, true)
}

/// Products of fewer multiply-adds than this stay on the calling thread: about
/// three microseconds of arithmetic. The engine keeps its other threads spinning
/// while a host run lasts, so handing half of a product over costs little more
/// than that; with sleeping threads it cost about ten microseconds, and the bound
/// was four times this (measured on small transformers, whose layers are
/// `32 x 128 x 128` to `32 x 128 x 512`: 1-2.5% faster at this bound).
pub const SERIAL_WORK: usize = 1 << 18;

/// A matrix product `C = A * B` (`A: m x k`, `B: k x n`) with the epilogue of
/// [`sgemm_parallel`], before it is given its output.
#[derive(Clone, Copy)]
pub(crate) struct Gemm<'a> {
    /// Rows of `A` and `C`.
    pub m: usize,
    /// Columns of `A`, rows of `B`.
    pub k: usize,
    /// Columns of `B` and `C`.
    pub n: usize,
    /// The left operand.
    pub a: MatRef<'a>,
    /// The right operand.
    pub b: MatRef<'a>,
    /// Applied per row of `C`.
    pub epilogue: &'a Epilogue<'a>,
    /// The channel of row 0 of `C` for the epilogue.
    pub channel0: usize,
}

impl Gemm<'_> {
    /// Write the product into the contiguous row-major `c`, split over rayon's pool
    /// when `parallel` (else on the calling thread alone, for callers that already
    /// split their work).
    pub(crate) fn run(self, c: &mut [f32], parallel: bool) -> Result<()> {
        let Gemm {
            m,
            k,
            n,
            a,
            b,
            epilogue,
            channel0,
        } = self;
        a.check("gemm A", m, k)?;
        b.check("gemm B", k, n)?;
        check_len("gemm C", c.len(), m * n)?;
        if let Some(r) = epilogue.residual {
            check_len("gemm residual", r.len(), m * n)?;
        }
        if let Some(s) = epilogue.scale {
            if s.len() < channel0 + m {
                return Err(KernelError("gemm epilogue: scale too short".into()));
            }
        }
        if let Some(s) = epilogue.shift {
            if s.len() < channel0 + m {
                return Err(KernelError("gemm epilogue: shift too short".into()));
            }
        }
        if m == 0 || n == 0 {
            return Ok(());
        }
        let work = m * n * k.max(1);
        let isa = microkernel::detect();
        if let (Some(isa), true) = (isa, k > 0) {
            let cp = c.as_mut_ptr();
            let ops = |ldb| blocked::Operands {
                a: a.data.as_ptr(),
                lda: a.rs,
                b: b.data.as_ptr(),
                ldb,
                c: cp,
                ldc: n,
            };
            if let (1, 1, true) = (a.cs, b.rs, b.cs >= k) {
                // `B` is `Bᵀ` stored row-major (`[n, k]`, a weight read untransposed).
                // SAFETY: the operands were bounds-checked above, the CPU has `isa`,
                // `k > 0`, and `c` is borrowed mutably.
                unsafe { blocked::gemm_nt(isa, m, k, n, ops(b.cs), parallel) };
                if !epilogue.is_identity() {
                    for (i, row) in c.chunks_mut(n).enumerate() {
                        epilogue.apply_row(channel0 + i, i * n, row);
                    }
                }
                return Ok(());
            }
            if let (1, 1) = (a.cs, b.cs) {
                let ops = ops(b.rs);
                let rows = |i: usize, cols: std::ops::Range<usize>, row: &mut [f32]| {
                    if !epilogue.is_identity() {
                        epilogue.apply_row(channel0 + i, i * n + cols.start, row);
                    }
                };
                // SAFETY: as above.
                unsafe { blocked::gemm_nn(isa, m, k, n, ops, parallel, &rows) };
                return Ok(());
            }
        }
        let (ap, bp, cp) = (
            SendConst(a.data.as_ptr()),
            SendConst(b.data.as_ptr()),
            SendPtr(c.as_mut_ptr()),
        );
        // One block of C: rows `r0..r1`, columns `c0..c1`.
        let block = |r0: usize, r1: usize, c0: usize, c1: usize| {
            let (ap, bp, cp) = (ap, bp, cp);
            // SAFETY: the operands were bounds-checked above; blocks of C are disjoint.
            unsafe {
                if k == 0 {
                    for i in r0..r1 {
                        std::ptr::write_bytes(cp.0.add(i * n + c0), 0, c1 - c0);
                    }
                } else {
                    matrixmultiply::sgemm(
                        r1 - r0,
                        k,
                        c1 - c0,
                        1.0,
                        ap.0.add(r0 * a.rs),
                        a.rs as isize,
                        a.cs as isize,
                        bp.0.add(c0 * b.cs),
                        b.rs as isize,
                        b.cs as isize,
                        0.0,
                        cp.0.add(r0 * n + c0),
                        n as isize,
                        1,
                    );
                }
                if !epilogue.is_identity() {
                    for i in r0..r1 {
                        let row = std::slice::from_raw_parts_mut(cp.0.add(i * n + c0), c1 - c0);
                        epilogue.apply_row(channel0 + i, i * n + c0, row);
                    }
                }
            }
        };
        // One piece per thread: each piece packs its own copy of the operand that is
        // not split, so more pieces would pack it more often.
        let threads = rayon::current_num_threads().max(1);
        if !parallel || work < SERIAL_WORK || pieces(work, usize::MAX) == 1 {
            block(0, m, 0, n);
        } else if n >= m {
            let p = pieces(work, n.div_ceil(32)).min(threads);
            let step = n.div_ceil(p).next_multiple_of(32).min(n);
            (0..n.div_ceil(step)).into_par_iter().for_each(|t| {
                let c0 = t * step;
                block(0, m, c0, (c0 + step).min(n));
            });
        } else {
            let p = pieces(work, m.div_ceil(8)).min(threads);
            // Whole tiles of rows (6 or 8) per piece where the split allows.
            let step = m.div_ceil(p).next_multiple_of(24).min(m);
            (0..m.div_ceil(step)).into_par_iter().for_each(|t| {
                let r0 = t * step;
                block(r0, (r0 + step).min(m), 0, n);
            });
        }
        Ok(())
    }
}

/// Products with at most this many rows of the left operand run as [`gemv`].
pub const GEMV_ROWS: usize = 4;

/// `c = a * b` for a few rows of `a` (`m x k`, row-major) with `b` given as
/// `b: [k, n]` row-major, or transposed (`bt`: `[n, k]` row-major): matrix-vector
/// products that read every operand once, in order, instead of packing the matrix
/// the way a GEMM does. Parallel over the columns of `c` (`m x n`). Transposed, each
/// task reads four rows of `bt` side by side, prefetched ahead, once for all rows of
/// `a` (see [`crate::simd::dot4`]).
#[allow(clippy::too_many_arguments)]
pub fn gemv(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], transposed: bool, c: &mut [f32]) -> Result<()> {
    check_len("gemv A", a.len(), m * k)?;
    check_len("gemv B", b.len(), k * n)?;
    check_len("gemv C", c.len(), m * n)?;
    const COLS: usize = 256;
    if transposed {
        if m == 0 || n == 0 {
            return Ok(());
        }
        // Columns of `c` per task: whole groups of four rows of `bt`, about 128 KiB
        // of weights each.
        let cols = ((32_768 / k.max(1)) / 4 * 4).clamp(4, n.next_multiple_of(4));
        let cp = SendPtr(c.as_mut_ptr());
        let task = |t: usize| {
            let (j0, j1) = (t * cols, ((t + 1) * cols).min(n));
            let mut j = j0;
            while j < j1 {
                let rows = 4.min(j1 - j);
                let w = &b[j * k..(j + rows) * k];
                for (i, ai) in a.chunks_exact(k.max(1)).take(m).enumerate() {
                    let mut sums = [0f32; 4];
                    if rows == 4 {
                        crate::simd::dot4(w, ai, &mut sums);
                    } else {
                        for (r, s) in sums.iter_mut().enumerate().take(rows) {
                            *s = dot(ai, &w[r * k..(r + 1) * k]);
                        }
                    }
                    for (r, s) in sums.iter().enumerate().take(rows) {
                        // SAFETY: row `i < m`, column `j + r < j1 <= n` of `c`, which
                        // holds `m * n` values; tasks write disjoint columns.
                        unsafe { *cp.get().add(i * n + j + r) = *s };
                    }
                }
                j += rows;
            }
        };
        let tasks = n.div_ceil(cols);
        if tasks > 1 && m * n * k >= crate::PAR_MIN_WORK {
            (0..tasks).into_par_iter().for_each(task);
        } else {
            (0..tasks).for_each(task);
        }
        return Ok(());
    }
    for (i, row) in c.chunks_mut(n.max(1)).enumerate().take(m) {
        let ai = &a[i * k..(i + 1) * k];
        for_chunks(row, COLS, n * k, |(t, out)| {
            let j0 = t * COLS;
            out.fill(0.0);
            for (kk, &av) in ai.iter().enumerate() {
                axpy(out, &b[kk * n + j0..kk * n + j0 + out.len()], av);
            }
        });
    }
    Ok(())
}

/// Batched row-major matrix product `out[b] = a[b] * rhs[b]` of `batch` pairs of
/// `m x k` and `k x n` matrices; `a_batched` / `b_batched` false means one matrix
/// shared by every batch (broadcast).
#[allow(clippy::too_many_arguments)]
pub fn matmul(
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    a_batched: bool,
    b: &[f32],
    b_batched: bool,
    out: &mut [f32],
) -> Result<()> {
    check_len("matmul A", a.len(), if a_batched { batch } else { 1 } * m * k)?;
    check_len("matmul B", b.len(), if b_batched { batch } else { 1 } * k * n)?;
    check_len("matmul output", out.len(), batch * m * n)?;
    if !b_batched && (if a_batched { batch * m } else { m }) <= GEMV_ROWS && (a_batched || batch == 1) {
        let rows = if a_batched { batch * m } else { m };
        return gemv(rows, k, n, &a[..rows * k], b, false, out);
    }
    if !b_batched && a_batched && batch > 1 {
        // One tall product: (batch * m) x k times k x n.
        return sgemm_parallel(
            batch * m,
            k,
            n,
            MatRef::row_major(a, k),
            MatRef::row_major(b, n),
            out,
            &Epilogue::default(),
            0,
        );
    }
    for (i, o) in out.chunks_mut((m * n).max(1)).enumerate().take(batch) {
        let ai = if a_batched { i * m * k } else { 0 };
        let bi = if b_batched { i * k * n } else { 0 };
        sgemm_parallel(
            m,
            k,
            n,
            MatRef::row_major(&a[ai..ai + m * k], k),
            MatRef::row_major(&b[bi..bi + k * n], n),
            o,
            &Epilogue::default(),
            0,
        )?;
    }
    Ok(())
}
