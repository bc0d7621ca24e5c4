//! Attention as one call: `softmax(q kᵀ * scale + bias) v` per group of rows,
//! each operand read in place through strides (the transposes, head splits,
//! grouped-query head sharing and scalar factors a front end spells out around
//! an attention are never materialised).
//!
//! The index space is a list of *row dimensions* (batch, heads, query position,
//! in any order and number), the key position `j` and the head dimension. Every
//! operand gives, per row dimension, a stride and a divisor (element offset
//! `(index / divisor) * stride`: a divisor `r` reads grouped-query attention's
//! shared key/value heads, `r` query heads per key head), plus the strides of its
//! key position and head dimension. Per group of rows (every row index but the
//! query position) the kernel computes the scores as one matrix product
//! ([`crate::gemm`]'s register-tiled kernels), scales them, adds the bias, masks
//! keys past the causal bound to `-inf`, takes the softmax of each row
//! ([`crate::elementwise::softmax`] and its guarded forms, to the bit), and
//! multiplies by the values (another product). So the result is what the
//! separate operators compute (the library's own matmul, add and softmax), with
//! the scores never leaving a per-thread buffer; groups run on rayon's pool when
//! there is enough work.

use std::cell::RefCell;

use rayon::prelude::*;

use crate::elementwise::{softmax_piece, Guard};
use crate::gemm::{Gemm, MatRef};
use crate::{Epilogue, KernelError, Result, SendPtr};

/// What the softmax does with rows it cannot normalise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SoftmaxGuard {
    /// Nothing: a row of only `-inf` scores (or with a NaN) gives NaN.
    None,
    /// A row of only `-inf` scores gives zeros ([`crate::elementwise::safe_softmax`], torch's guard).
    AllNegInf,
    /// Every NaN probability becomes this value ([`crate::elementwise::softmax_nan_fill`], ONNX
    /// exports' `where(isnan(p), fill, p)`).
    NanFill(f32),
}

/// The shape of one attention call.
#[derive(Clone, Debug)]
pub struct AttentionShape {
    /// Extents of the row dimensions.
    pub rows: Vec<usize>,
    /// Which row dimension is the query position.
    pub query_axis: usize,
    /// Number of keys (and values).
    pub keys: usize,
    /// Head dimension of the queries and keys.
    pub head_dim: usize,
    /// Head dimension of the values (and the output).
    pub value_dim: usize,
    /// The factor on `q . k`.
    pub scale: f32,
    /// Keys `j <= i + offset` only, for query position `i`.
    pub causal: Option<i64>,
    /// The softmax's guard.
    pub guard: SoftmaxGuard,
}

/// How one operand is read: element `(rows, j, x)` is at
/// `sum((rows[r] / rows_at[r].1) * rows_at[r].0) + j * key_stride + x * inner_stride`.
#[derive(Clone, Copy, Debug)]
pub struct Operand<'a> {
    /// The elements.
    pub data: &'a [f32],
    /// `(stride, divisor)` per row dimension.
    pub rows_at: &'a [(usize, usize)],
    /// Stride of the key position (`k`, `v`, the bias; ignored for `q`).
    pub key_stride: usize,
    /// Stride of the head dimension (`q`, `k`, `v`; ignored for the bias).
    pub inner_stride: usize,
    /// Each element is multiplied by this as it is read (a scalar `multiply` the
    /// front end applied to the operand: the same rounding as that operator).
    pub factor: f32,
    /// Added to every element's offset (a part of a larger tensor).
    pub offset: usize,
}

/// Where the output goes: element `(rows, x)` at
/// `sum(rows[r] * rows_at[r]) + x * inner_stride`.
#[derive(Debug)]
pub struct Output<'a> {
    /// The elements.
    pub data: &'a mut [f32],
    /// Stride per row dimension.
    pub rows_at: &'a [usize],
    /// Stride of the value dimension.
    pub inner_stride: usize,
}

thread_local! {
    /// Each thread's buffers: gathered operands, scores, probabilities, output rows.
    static SCRATCH: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Below this many multiply-adds in all, groups run on the calling thread
/// (handing work to rayon's pool from outside it costs tens of microseconds).
pub const PARALLEL_WORK: usize = 1 << 20;

/// The multiply-adds of a call of this shape.
pub fn work(s: &AttentionShape) -> usize {
    s.rows
        .iter()
        .product::<usize>()
        .saturating_mul(s.keys)
        .saturating_mul(s.head_dim + s.value_dim)
}

/// Attention (see the module documentation) into `out`.
pub fn attention(
    s: &AttentionShape,
    q: &Operand<'_>,
    k: &Operand<'_>,
    v: &Operand<'_>,
    bias: Option<&Operand<'_>>,
    out: Output<'_>,
) -> Result<()> {
    let nr = s.rows.len();
    if s.query_axis >= nr {
        return Err(KernelError(format!(
            "attention: query axis {} of {nr} row dimensions",
            s.query_axis
        )));
    }
    let err = |what: &str| KernelError(format!("attention: {what}"));
    for (name, o) in [("q", Some(q)), ("k", Some(k)), ("v", Some(v)), ("bias", bias)] {
        let Some(o) = o else { continue };
        if o.rows_at.len() != nr {
            return Err(err(&format!(
                "{name} has {} row strides for {nr} rows",
                o.rows_at.len()
            )));
        }
        if o.rows_at.iter().any(|&(_, d)| d == 0) {
            return Err(err(&format!("{name} has a zero divisor")));
        }
    }
    if out.rows_at.len() != nr {
        return Err(err("the output's row strides"));
    }
    let qa = s.query_axis;
    if q.rows_at[qa].1 != 1 || bias.is_some_and(|b| b.rows_at[qa].1 != 1) {
        return Err(err("the query position cannot be divided"));
    }
    if k.rows_at[qa].0 != 0 || v.rows_at[qa].0 != 0 {
        return Err(err("keys and values cannot depend on the query position"));
    }
    let (sq, skv, d, dv) = (s.rows[qa], s.keys, s.head_dim, s.value_dim);
    if s.rows.contains(&0) || dv == 0 {
        return Ok(());
    }
    // Every operand's largest offset lies inside it.
    let span = |o: &Operand<'_>, keys: usize, inner: usize| -> Option<usize> {
        let mut last = o.offset;
        for (&e, &(st, dvs)) in s.rows.iter().zip(o.rows_at) {
            last = last.checked_add(((e - 1) / dvs).checked_mul(st)?)?;
        }
        last = last.checked_add(keys.saturating_sub(1).checked_mul(o.key_stride)?)?;
        last.checked_add(inner.saturating_sub(1).checked_mul(o.inner_stride)?)
    };
    let inside = |name: &str, o: &Operand<'_>, keys: usize, inner: usize| -> Result<()> {
        match span(o, keys, inner) {
            Some(last) if last < o.data.len() || (keys == 0 || inner == 0) => Ok(()),
            _ => Err(err(&format!("{name} does not hold the elements its strides reach"))),
        }
    };
    inside("q", q, 1, d)?;
    inside("k", k, skv, d)?;
    inside("v", v, skv, dv)?;
    if let Some(b) = bias {
        inside("bias", b, skv, 1)?;
    }
    // The output: inside, and no two elements at one place (groups are written in
    // parallel).
    let mut dims: Vec<(usize, usize)> = s.rows.iter().copied().zip(out.rows_at.iter().copied()).collect();
    dims.push((dv, out.inner_stride));
    dims.retain(|&(e, _)| e > 1);
    dims.sort_by_key(|&(_, st)| st);
    let mut reach = 0usize;
    for &(e, st) in &dims {
        if st <= reach && reach > 0 || st == 0 {
            return Err(err("the output's strides overlap"));
        }
        reach = (e - 1)
            .checked_mul(st)
            .and_then(|x| x.checked_add(reach))
            .ok_or_else(|| err("the output's strides overflow"))?;
    }
    if reach >= out.data.len() {
        return Err(err("the output does not hold the elements its strides reach"));
    }

    // Groups: every row index but the query position, in row-major order.
    let outer: Vec<usize> = (0..nr).filter(|&r| r != qa).collect();
    let groups: usize = outer.iter().map(|&r| s.rows[r]).product();
    let offset = |g: usize, at: &dyn Fn(usize) -> (usize, usize), base: usize| -> usize {
        let mut g = g;
        let mut off = base;
        for &r in outer.iter().rev() {
            let e = s.rows[r];
            let (st, dvs) = at(r);
            off += (g % e) / dvs * st;
            g /= e;
        }
        off
    };
    let optr = SendPtr(out.data.as_mut_ptr());
    let out_rows = out.rows_at;
    let o_inner = out.inner_stride;
    let run = |g: usize| -> Result<()> {
        let at = |o: &Operand<'_>| offset(g, &|r| o.rows_at[r], o.offset);
        let (q0, k0, v0) = (at(q), at(k), at(v));
        let b0 = bias.map(at);
        let o0 = offset(g, &|r| (out_rows[r], 1), 0);
        // Query rows in tiles of at most `SCORE_TILE` scores: the buffers stay
        // bounded however long the sequence.
        let tile = (SCORE_TILE / skv.max(1)).clamp(1, sq);
        let need = [tile * d, skv * d, skv * dv, 2 * tile * skv, tile * dv]
            .iter()
            .try_fold(0usize, |a, &x| a.checked_add(x))
            .ok_or_else(|| err("the buffers' size overflows"))?;
        with_scratch(need, |buf| {
            let (qb, rest) = buf.split_at_mut(tile * d);
            let (kb, rest) = rest.split_at_mut(skv * d);
            let (vb, rest) = rest.split_at_mut(skv * dv);
            let (scores_all, rest) = rest.split_at_mut(tile * skv);
            let (probs_all, ob_all) = rest.split_at_mut(tile * skv);
            // Keys as `[skv, d]` rows (`B` of `q kᵀ` read transposed), values
            // `[skv, dv]`, queries `[rows, d]`: in place when contiguous along the
            // head dimension and not scaled, else gathered.
            let km = view(k, k0, k.key_stride, skv, d, kb);
            let vm = view(v, v0, v.key_stride, skv, dv, vb);
            let kt = MatRef {
                data: km.data,
                rs: km.cs,
                cs: km.rs,
            };
            let none = Epilogue::default();
            let guard = match s.guard {
                SoftmaxGuard::None => Guard::None,
                SoftmaxGuard::AllNegInf => Guard::AllNegInf,
                SoftmaxGuard::NanFill(z) => Guard::NanFill(z),
            };
            let qs = q.rows_at[qa].0;
            for i0 in (0..sq).step_by(tile) {
                let rows = tile.min(sq - i0);
                let (scores, probs) = (&mut scores_all[..rows * skv], &mut probs_all[..rows * skv]);
                let ob = &mut ob_all[..rows * dv];
                let qm = view(q, q0 + i0 * qs, qs, rows, d, &mut qb[..rows * d]);
                Gemm {
                    m: rows,
                    k: d,
                    n: skv,
                    a: qm,
                    b: kt,
                    epilogue: &none,
                    channel0: 0,
                }
                .run(scores, false)?;
                for (r, row) in scores.chunks_exact_mut(skv.max(1)).enumerate().take(rows) {
                    let i = i0 + r;
                    if s.scale != 1.0 {
                        row.iter_mut().for_each(|x| *x *= s.scale);
                    }
                    if let (Some(b), Some(b0)) = (bias, b0) {
                        let base = b0 + i * b.rows_at[qa].0;
                        for (j, x) in row.iter_mut().enumerate() {
                            *x += b.data[base + j * b.key_stride] * b.factor;
                        }
                    }
                    if s.causal.is_some() {
                        // Keys past the causal bound are masked.
                        row[causal_keys(s.causal, i, skv)..].fill(f32::NEG_INFINITY);
                    }
                }
                // Row by row on this thread (groups are the parallel unit). Without
                // keys there is no softmax: the product below gives zeros.
                if skv > 0 {
                    for r in 0..rows {
                        let (x, p) = (&scores[r * skv..(r + 1) * skv], &mut probs[r * skv..(r + 1) * skv]);
                        // Only the keys up to a causal bound: the masked ones' `-inf`
                        // add exact zeros to the sums, so the prefix's softmax is the
                        // row's, to the bit; a row with no key is one of `-inf`.
                        match causal_keys(s.causal, i0 + r, skv) {
                            n if n == skv || n == 0 => softmax_piece(x, p, skv, guard),
                            n => {
                                softmax_piece(&x[..n], &mut p[..n], n, guard);
                                p[n..].fill(0.0);
                            }
                        }
                    }
                }
                Gemm {
                    m: rows,
                    k: skv,
                    n: dv,
                    a: MatRef::row_major(probs, skv),
                    b: vm,
                    epilogue: &none,
                    channel0: 0,
                }
                .run(ob, false)?;
                let (qo, po) = (out_rows[qa], optr);
                for (r, row) in ob.chunks_exact(dv).enumerate() {
                    let at = o0 + (i0 + r) * qo;
                    if o_inner == 1 {
                        // SAFETY: the output's strides were checked to stay inside it and
                        // to give every element its own place, so groups write disjoint
                        // elements; this row's `dv` elements are contiguous.
                        unsafe { std::ptr::copy_nonoverlapping(row.as_ptr(), po.get().add(at), dv) };
                        continue;
                    }
                    for (x, &val) in row.iter().enumerate() {
                        // SAFETY: as above.
                        unsafe { *po.get().add(at + x * o_inner) = val };
                    }
                }
            }
            Ok(())
        })?
    };
    if groups > 1 && work(s) >= PARALLEL_WORK && rayon::current_num_threads() > 1 {
        (0..groups).into_par_iter().try_for_each(run)
    } else {
        (0..groups).try_for_each(run)
    }
}

/// The most scores (query rows times keys) computed at once per group.
const SCORE_TILE: usize = 1 << 16;

/// The keys query `i` sees: `j <= i + offset`, at most `keys`.
fn causal_keys(causal: Option<i64>, i: usize, keys: usize) -> usize {
    match causal {
        None => keys,
        Some(off) => (i as i64).saturating_add(off).saturating_add(1).clamp(0, keys as i64) as usize,
    }
}

/// Operand `o` from `base` as an `rows x cols` matrix with row stride `rs`: read in
/// place when its columns are contiguous and it is not scaled, else gathered
/// (and scaled) into `buf`.
fn view<'a>(o: &Operand<'a>, base: usize, rs: usize, rows: usize, cols: usize, buf: &'a mut [f32]) -> MatRef<'a> {
    if o.inner_stride == 1 && o.factor == 1.0 {
        return MatRef {
            data: &o.data[base..],
            rs,
            cs: 1,
        };
    }
    let f = o.factor;
    for (r, dst) in buf.chunks_exact_mut(cols).enumerate().take(rows) {
        let at = base + r * rs;
        if o.inner_stride == 1 {
            for (x, &y) in dst.iter_mut().zip(&o.data[at..at + cols]) {
                *x = y * f;
            }
        } else {
            for (c, x) in dst.iter_mut().enumerate() {
                *x = o.data[at + c * o.inner_stride] * f;
            }
        }
    }
    MatRef::row_major(buf, cols)
}

/// `f` on `n` values of this thread's scratch buffer (a fresh one when the thread
/// already uses it further up its stack); an error when the memory cannot be had.
fn with_scratch<R>(n: usize, f: impl FnOnce(&mut [f32]) -> R) -> Result<R> {
    let grow = |b: &mut Vec<f32>| -> Result<()> {
        if b.len() < n {
            b.try_reserve(n - b.len())
                .map_err(|_| KernelError(format!("attention: cannot allocate {n} floats of buffers")))?;
            b.resize(n, 0.0);
        }
        Ok(())
    };
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut b) => {
            grow(&mut b)?;
            Ok(f(&mut b[..n]))
        }
        Err(_) => {
            let mut b = Vec::new();
            grow(&mut b)?;
            Ok(f(&mut b))
        }
    })
}

/// The layout of one operand as [`decode_params`] reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OperandLayout {
    /// `(stride, divisor)` per row dimension.
    pub rows_at: Vec<(usize, usize)>,
    /// Stride of the key position.
    pub key_stride: usize,
    /// Stride of the head dimension.
    pub inner_stride: usize,
    /// Offset of the first element.
    pub offset: usize,
}

/// A call's parameters, decoded.
#[derive(Clone, Debug)]
pub struct AttentionParams {
    /// The shape.
    pub shape: AttentionShape,
    /// `q`, `k`, `v` and the bias (when there is one), in this order.
    pub operands: Vec<OperandLayout>,
    /// The factors of `q`, `k`, `v` and the bias.
    pub factors: [f32; 4],
    /// The output's stride per row dimension.
    pub out_rows: Vec<usize>,
    /// The output's value-dimension stride.
    pub out_inner: usize,
    /// The guard's fill value is the one element of a tensor after the operands.
    pub fill_tensor: bool,
}

/// Decode the integer parameters of `relax_host.attention` (its shape argument)
/// and its float parameters. The integers, in order: the number of row
/// dimensions `n`; their `n` extents; the query axis; keys; head dimension;
/// value dimension; causal (0 or 1); the causal offset; the guard (0 none, 1 rows
/// of `-inf` give zeros, 2 NaN gives zero, 3 NaN gives a fill value, which the
/// caller reads from a one-element tensor after the operands: [`AttentionParams::fill_tensor`]);
/// whether there is a bias (0 or 1); then
/// for `q`, `k`, `v` and the bias (when there is one) `n` pairs (stride, divisor),
/// the key stride, the head-dimension stride and the offset of the first element; then the output's `n` strides and
/// its value-dimension stride. The floats: the scale, then the factors of `q`, `k`,
/// `v` and the bias.
pub fn decode_params(p: &[i64], floats: &[f64]) -> Result<AttentionParams> {
    let bad = |what: &str| KernelError(format!("attention parameters: {what}"));
    let mut it = p.iter().copied();
    let mut next = |what: &str| -> Result<usize> {
        let v = it.next().ok_or_else(|| bad(&format!("{what} missing")))?;
        usize::try_from(v).map_err(|_| bad(&format!("{what} is {v}")))
    };
    let n = next("row count")?;
    if n > 8 {
        return Err(bad("more than 8 row dimensions"));
    }
    let rows = (0..n).map(|_| next("row extent")).collect::<Result<Vec<_>>>()?;
    let query_axis = next("query axis")?;
    let keys = next("keys")?;
    let head_dim = next("head dimension")?;
    let value_dim = next("value dimension")?;
    let causal_on = next("causal flag")? != 0;
    let off = next("causal offset")?;
    let guard_code = next("guard")?;
    let guard = match guard_code {
        0 => SoftmaxGuard::None,
        1 => SoftmaxGuard::AllNegInf,
        2 | 3 => SoftmaxGuard::NanFill(0.0),
        g => return Err(bad(&format!("guard {g}"))),
    };
    let has_bias = next("bias flag")? != 0;
    let mut operands = Vec::new();
    for _ in 0..3 + has_bias as usize {
        let mut rows_at = Vec::with_capacity(n);
        for _ in 0..n {
            rows_at.push((next("stride")?, next("divisor")?));
        }
        operands.push(OperandLayout {
            rows_at,
            key_stride: next("key stride")?,
            inner_stride: next("inner stride")?,
            offset: next("offset")?,
        });
    }
    let out_rows = (0..n).map(|_| next("output stride")).collect::<Result<Vec<_>>>()?;
    let out_inner = next("output inner stride")?;
    if it.next().is_some() {
        return Err(bad("too many"));
    }
    let f = |i: usize| floats.get(i).copied().unwrap_or(1.0) as f32;
    let causal = if causal_on {
        Some(i64::try_from(off).map_err(|_| bad("causal offset"))?)
    } else {
        None
    };
    Ok(AttentionParams {
        shape: AttentionShape {
            rows,
            query_axis,
            keys,
            head_dim,
            value_dim,
            scale: f(0),
            causal,
            guard,
        },
        operands,
        factors: [f(1), f(2), f(3), f(4)],
        out_rows,
        out_inner,
        fill_tensor: guard_code == 3,
    })
}
