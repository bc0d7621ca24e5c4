//! Elementwise, normalization and data-movement kernels.

use rayon::prelude::*;
use smallvec::{smallvec, SmallVec};

use crate::{check_len, for_chunks, simd, KernelError, Result};

/// Per-axis numbers of one operand (shapes, strides): tensors rarely have more
/// than eight axes, so these stay off the heap.
type Dims = SmallVec<[usize; 8]>;

/// Minimum number of elements per parallel task.
const GRAIN: usize = 1 << 14;

/// Work (in the kernels' per-element cost units) per piece when a kernel of at most a
/// few [`GRAIN`]s is split to keep every thread busy.
const PIECE_WORK: usize = 1 << 16;

/// Elements per piece for `len` elements of `work`: [`GRAIN`], or fewer (a multiple
/// of 64, at least 1,024) when whole grains would leave threads idle on work worth
/// splitting: `tanh` of a `[32, 512]` activation (16,384 elements, about 40 us on one
/// core) ran on one thread.
fn grain(len: usize, work: usize) -> usize {
    let threads = rayon::current_num_threads();
    if threads < 2 || work < 2 * PIECE_WORK {
        return GRAIN;
    }
    let pieces = (work / PIECE_WORK).clamp(2, 2 * threads);
    len.div_ceil(pieces).next_multiple_of(64).clamp(1024, GRAIN)
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Strides (in elements) of `shape` broadcast to `out` (numpy rules: shapes aligned
/// on the right, size-1 axes repeat).
fn broadcast_strides(shape: &[usize], out: &[usize]) -> Result<Dims> {
    if shape.len() > out.len() {
        return Err(KernelError(format!("cannot broadcast {shape:?} to {out:?}")));
    }
    let lead = out.len() - shape.len();
    let mut strides: Dims = smallvec![0; out.len()];
    let mut acc = 1;
    for i in (0..shape.len()).rev() {
        let (d, o) = (shape[i], out[lead + i]);
        if d == o {
            strides[lead + i] = if d == 1 { 0 } else { acc };
        } else if d != 1 {
            return Err(KernelError(format!("cannot broadcast {shape:?} to {out:?}")));
        }
        acc *= d;
    }
    Ok(strides)
}

/// Merge adjacent axes of `shape` that every operand walks contiguously (operand
/// `k`'s stride of axis `i` is its stride of axis `i + 1` times that axis's size)
/// and drop size-1 axes, so that inner loops run over long rows. Returns the
/// coalesced shape and each operand's strides for it.
fn coalesce(shape: &[usize], strides: &[&[usize]]) -> (Dims, SmallVec<[Dims; 2]>) {
    let mut out_shape = Dims::new();
    let mut out_strides: SmallVec<[Dims; 2]> = smallvec![Dims::new(); strides.len()];
    for (i, &d) in shape.iter().enumerate() {
        if d == 1 {
            continue;
        }
        let mergeable = out_shape.last().is_some()
            && strides
                .iter()
                .zip(&out_strides)
                .all(|(s, o)| o.last().is_some_and(|&prev| prev == s[i] * d));
        if mergeable {
            if let Some(last) = out_shape.last_mut() {
                *last *= d;
            }
            for (s, o) in strides.iter().zip(out_strides.iter_mut()) {
                if let Some(prev) = o.last_mut() {
                    *prev = s[i];
                }
            }
        } else {
            out_shape.push(d);
            for (s, o) in strides.iter().zip(out_strides.iter_mut()) {
                o.push(s[i]);
            }
        }
    }
    (out_shape, out_strides)
}

/// Offset of element `flat` of `out_shape` in a tensor with `strides`.
fn offset_of(mut flat: usize, out_shape: &[usize], strides: &[usize]) -> usize {
    let mut off = 0;
    for i in (0..out_shape.len()).rev() {
        let d = out_shape[i].max(1);
        off += (flat % d) * strides[i];
        flat /= d;
    }
    off
}

/// The binary operations of [`binary`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b` (IEEE: division by zero gives an infinity or NaN).
    Div,
}

/// `out = a op b` with numpy broadcasting to `out_shape`, optionally clamped at zero.
// Slices with their shapes plus the fused epilogue: a parameter struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn binary(
    op: BinaryOp,
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    out: &mut [f32],
    out_shape: &[usize],
    relu: bool,
) -> Result<()> {
    check_len("binary lhs", a.len(), numel(a_shape))?;
    check_len("binary rhs", b.len(), numel(b_shape))?;
    check_len("binary output", out.len(), numel(out_shape))?;
    let sa = broadcast_strides(a_shape, out_shape)?;
    let sb = broadcast_strides(b_shape, out_shape)?;
    let (out_shape, st) = coalesce(out_shape, &[&sa, &sb]);
    let (out_shape, sa, sb) = (out_shape.as_slice(), &st[0], &st[1]);
    // One monomorphic loop per operator, so that each vectorizes.
    macro_rules! with_op {
        ($f:expr) => {
            binary_loop($f, a, b, out, out_shape, sa, sb)
        };
    }
    match (op, relu) {
        (BinaryOp::Add, false) => with_op!(|x: f32, y: f32| x + y),
        (BinaryOp::Add, true) => with_op!(|x: f32, y: f32| (x + y).max(0.0)),
        (BinaryOp::Sub, false) => with_op!(|x: f32, y: f32| x - y),
        (BinaryOp::Sub, true) => with_op!(|x: f32, y: f32| (x - y).max(0.0)),
        (BinaryOp::Mul, false) => with_op!(|x: f32, y: f32| x * y),
        (BinaryOp::Mul, true) => with_op!(|x: f32, y: f32| (x * y).max(0.0)),
        (BinaryOp::Div, false) => with_op!(|x: f32, y: f32| x / y),
        (BinaryOp::Div, true) => with_op!(|x: f32, y: f32| (x / y).max(0.0)),
    }
    Ok(())
}

/// The loop of [`binary`] for one operator `f`, over the coalesced shape.
fn binary_loop<F>(f: F, a: &[f32], b: &[f32], out: &mut [f32], out_shape: &[usize], sa: &[usize], sb: &[usize])
where
    F: Fn(f32, f32) -> f32 + Sync + Send,
{
    let inner = out_shape.last().copied().unwrap_or(1).max(1);
    let (ia, ib) = (sa.last().copied().unwrap_or(0), sb.last().copied().unwrap_or(0));
    // Tasks of whole rows, or of GRAIN-element pieces of rows longer than that.
    let chunk = if inner >= GRAIN { GRAIN } else { (GRAIN / inner) * inner };
    let work = out.len();
    for_chunks(out, chunk, work, |(t, seg)| {
        let mut flat = t * chunk;
        let mut done = 0;
        while done < seg.len() {
            let col = flat % inner;
            let len = (inner - col).min(seg.len() - done);
            let row = &mut seg[done..done + len];
            let oa = offset_of(flat - col, out_shape, sa) + col * ia;
            let ob = offset_of(flat - col, out_shape, sb) + col * ib;
            match (ia, ib) {
                (1, 1) => simd::map2(row, &a[oa..oa + len], &b[ob..ob + len], &f),
                (1, 0) => {
                    let y = b[ob];
                    simd::map1(row, &a[oa..oa + len], |x| f(x, y));
                }
                (0, 1) => {
                    let x = a[oa];
                    simd::map1(row, &b[ob..ob + len], |y| f(x, y));
                }
                _ => {
                    for (j, o) in row.iter_mut().enumerate() {
                        *o = f(a[oa + j * ia], b[ob + j * ib]);
                    }
                }
            }
            flat += len;
            done += len;
        }
    });
}

/// `out = max(x, 0)`.
pub fn relu(x: &[f32], out: &mut [f32]) -> Result<()> {
    check_len("relu output", out.len(), x.len())?;
    let work = out.len();
    let g = grain(out.len(), work);
    for_chunks(out, g, work, |(i, o)| {
        o.iter_mut().zip(&x[i * g..]).for_each(|(o, x)| *o = x.max(0.0))
    });
    Ok(())
}

/// The elementwise functions of [`unary`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `e^x`.
    Exp,
    /// Natural logarithm.
    Log,
    /// Square root.
    Sqrt,
    /// `1 / sqrt(x)`.
    Rsqrt,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// Hyperbolic tangent.
    Tanh,
    /// `-x`.
    Negative,
    /// `|x|`.
    Abs,
    /// `x * x`.
    Square,
    /// `x^3`, computed in `f64` and rounded once (as the host JIT computes
    /// `T.pow(x, 3)`); the kernel of `power(x, 3)`.
    Cube,
    /// `x * (0.5 + erf(x / sqrt(2)) * 0.5)` (`R.nn.gelu`).
    Gelu,
    /// `(0.5 x) * (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2)))` (`R.nn.gelu_tanh`).
    GeluTanh,
}

impl UnaryOp {
    /// Every operator.
    pub const ALL: [UnaryOp; 12] = [
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Sigmoid,
        UnaryOp::Tanh,
        UnaryOp::Negative,
        UnaryOp::Abs,
        UnaryOp::Square,
        UnaryOp::Cube,
        UnaryOp::Gelu,
        UnaryOp::GeluTanh,
    ];

    /// The Relax operator's name without `relax.` (`nn.relu` is [`relu`]).
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Negative => "negative",
            UnaryOp::Abs => "abs",
            UnaryOp::Square => "square",
            // Not a Relax operator: `power(x, 3)` dispatches to it.
            UnaryOp::Cube => "cube",
            UnaryOp::Gelu => "nn.gelu",
            UnaryOp::GeluTanh => "nn.gelu_tanh",
        }
    }

    /// The operator of the Relax operator `relax.<name>`.
    pub fn from_name(name: &str) -> Option<UnaryOp> {
        UnaryOp::ALL.into_iter().find(|op| op.name() == name)
    }

    #[inline(always)]
    fn apply(self, x: f32) -> f32 {
        match self {
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => 1.0 / x.sqrt(),
            UnaryOp::Sigmoid => crate::math::sigmoid_f32(x),
            UnaryOp::Tanh => crate::math::tanh_f32(x),
            UnaryOp::Negative => -x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Square => x * x,
            UnaryOp::Cube => {
                let w = f64::from(x);
                (w * w * w) as f32
            }
            UnaryOp::Gelu => crate::math::gelu_f32(x),
            UnaryOp::GeluTanh => crate::math::gelu_tanh_f32(x),
        }
    }
}

/// `f(x, out)` over pieces of `grain` elements, on rayon's pool when there are
/// enough of them (`f` is costly: a few dozen operations per element).
fn run_slices(x: &[f32], out: &mut [f32], f: fn(&[f32], &mut [f32])) {
    let work = out.len() * 32;
    let g = grain(out.len(), work);
    for_chunks(out, g, work, |(i, o)| f(&x[i * g..], o));
}

/// Whether [`unary_f16`] computes `op` on `float16` tensors.
pub fn unary_has_f16(op: UnaryOp) -> bool {
    matches!(op, UnaryOp::Gelu | UnaryOp::GeluTanh)
}

/// `out = op(x)` element by element on `float16` bit patterns, every step of the
/// operator's legalized form rounded to `float16` (as the host JIT computes the
/// legalized PrimFunc); only the operators of [`unary_has_f16`].
pub fn unary_f16(op: UnaryOp, x: &[u16], out: &mut [u16]) -> Result<()> {
    check_len("unary output", out.len(), x.len())?;
    let f: fn(&[u16], &mut [u16]) = match op {
        UnaryOp::Gelu => crate::math::gelu_f16_slice,
        UnaryOp::GeluTanh => crate::math::gelu_tanh_f16_slice,
        _ => return Err(KernelError(format!("{} has no float16 kernel", op.name()))),
    };
    let work = out.len() * 48;
    let g = grain(out.len(), work);
    for_chunks(out, g, work, |(i, o)| f(&x[i * g..], o));
    Ok(())
}

/// `out = op(x)` element by element.
pub fn unary(op: UnaryOp, x: &[f32], out: &mut [f32]) -> Result<()> {
    check_len("unary output", out.len(), x.len())?;
    // One monomorphic loop per operator, so that each vectorizes.
    fn run(x: &[f32], out: &mut [f32], f: impl Fn(f32) -> f32 + Sync + Send) {
        let work = out.len() * 8;
        let g = grain(out.len(), work);
        for_chunks(out, g, work, |(i, o)| simd::map1(o, &x[i * g..], &f));
    }
    match op {
        UnaryOp::Exp => run(x, out, |v| UnaryOp::Exp.apply(v)),
        UnaryOp::Log => run(x, out, |v| UnaryOp::Log.apply(v)),
        UnaryOp::Sqrt => run(x, out, |v| UnaryOp::Sqrt.apply(v)),
        UnaryOp::Rsqrt => run(x, out, |v| UnaryOp::Rsqrt.apply(v)),
        UnaryOp::Sigmoid => run_slices(x, out, crate::math::sigmoid_slice),
        // The same `tanh_f32` per element, in AVX-512 / AVX2 lanes when the CPU has
        // them (the crate's baseline build gets two f64 lanes).
        UnaryOp::Tanh => run_slices(x, out, crate::math::tanh_slice),
        UnaryOp::Negative => run(x, out, |v| UnaryOp::Negative.apply(v)),
        UnaryOp::Abs => run(x, out, |v| UnaryOp::Abs.apply(v)),
        UnaryOp::Square => run(x, out, |v| UnaryOp::Square.apply(v)),
        UnaryOp::Cube => run(x, out, |v| UnaryOp::Cube.apply(v)),
        UnaryOp::Gelu => run_slices(x, out, crate::math::gelu_slice),
        UnaryOp::GeluTanh => run_slices(x, out, crate::math::gelu_tanh_slice),
    }
    Ok(())
}

/// `out = x ** y` for a scalar exponent `y` read at run time (an ONNX `Pow` whose
/// exponent is a weight): as the host JIT's `T.pow`, a square or a cube is
/// multiplied out in `f64` ([`UnaryOp::Square`], [`UnaryOp::Cube`]), any other
/// exponent is `f64::powf`, each rounded once to `f32`.
pub fn power_scalar(x: &[f32], y: f32, out: &mut [f32]) -> Result<()> {
    match y {
        2.0 => unary(UnaryOp::Square, x, out),
        3.0 => unary(UnaryOp::Cube, x, out),
        _ => {
            check_len("power output", out.len(), x.len())?;
            let work = out.len() * 32;
            let g = grain(out.len(), work);
            for_chunks(out, g, work, |(i, o)| simd::map1(o, &x[i * g..], |v| pow_elem(v, y)));
            Ok(())
        }
    }
}

/// `x ** y` of one element, as [`power_scalar`] computes it: a square or a cube
/// multiplied out, any other exponent through `f64::powf`, rounded once.
#[inline(always)]
fn pow_elem(v: f32, y: f32) -> f32 {
    match y {
        2.0 => UnaryOp::Square.apply(v),
        3.0 => UnaryOp::Cube.apply(v),
        _ => f64::from(v).powf(f64::from(y)) as f32,
    }
}

/// `(x * half) * (tanh((x + x ** p * c1) * c2) + one)`: GELU's tanh form as
/// `torch.export` and ONNX exports spell it, one operator per step, with the
/// scalars read at run time (ONNX keeps them as weights). Every step rounds to
/// `f32` as the separate kernels do ([`binary`], [`power_scalar`], `tanh` of
/// [`unary`]), so the result is the one of running them one by one, bit for bit,
/// without the seven intermediate tensors. `c` is `[half, p, c1, c2, one]`.
pub fn gelu_tanh_chain(x: &[f32], c: [f32; 5], out: &mut [f32]) -> Result<()> {
    check_len("gelu_tanh_chain output", out.len(), x.len())?;
    let [half, p, c1, c2, one] = c;
    const BLOCK: usize = 256;
    let work = out.len() * 40;
    let g = grain(out.len(), work);
    for_chunks(out, g, work, |(i, o)| {
        let xs = &x[i * g..i * g + o.len()];
        for (xb, ob) in xs.chunks(BLOCK).zip(o.chunks_mut(BLOCK)) {
            let n = xb.len();
            let (mut arg, mut t) = ([0f32; BLOCK], [0f32; BLOCK]);
            let arg = &mut arg[..n];
            // One loop per exponent kind, so that each vectorizes.
            match p {
                2.0 => simd::map1(arg, xb, |v| (v + pow_elem(v, 2.0) * c1) * c2),
                3.0 => simd::map1(arg, xb, |v| (v + pow_elem(v, 3.0) * c1) * c2),
                _ => simd::map1(arg, xb, |v| (v + pow_elem(v, p) * c1) * c2),
            }
            crate::math::tanh_slice(arg, &mut t[..n]);
            simd::map2(ob, xb, &t[..n], &|v, t| (v * half) * (t + one));
        }
    });
    Ok(())
}

/// Rotary position embedding as Hugging Face spells it, `x * cos + rotate_half(x) *
/// sin`, over rows of `cols = 2h` elements, with `cos` and `sin` holding `period`
/// rows that repeat over the rows of `x` (shaped `[1, .., 1, seq, cols]` against
/// `x`'s `[.., seq, cols]`). Each product and the sum round to `f32` as the
/// separate kernels round them ([`rotate_half`], [`binary`]): their bits.
pub fn rotary_chain(x: &[f32], cols: usize, cos: &[f32], sin: &[f32], out: &mut [f32]) -> Result<()> {
    check_len("rotary_chain output", out.len(), x.len())?;
    check_len("rotary_chain sin", sin.len(), cos.len())?;
    if cols == 0
        || !cols.is_multiple_of(2)
        || !x.len().is_multiple_of(cols)
        || cos.is_empty()
        || !cos.len().is_multiple_of(cols)
        || !(x.len() / cols).is_multiple_of(cos.len() / cols)
    {
        return Err(KernelError(format!(
            "rotary_chain: rows of {cols} elements (an even number) of {} values and {} of cos and sin, repeating",
            x.len(),
            cos.len()
        )));
    }
    let (h, period) = (cols / 2, cos.len() / cols);
    for (r, (xr, or)) in x.chunks_exact(cols).zip(out.chunks_exact_mut(cols)).enumerate() {
        let t = (r % period) * cols;
        let (c, sn) = (&cos[t..t + cols], &sin[t..t + cols]);
        for k in 0..cols {
            let rh = if k < h { -xr[k + h] } else { xr[k - h] };
            or[k] = xr[k] * c[k] + rh * sn[k];
        }
    }
    Ok(())
}

/// RMS normalization as `torch.export` and ONNX exports spell it (Llama's
/// `LlamaRMSNorm`), one operator per step over rows of `cols` elements:
/// `m = mean(x ** e)`, `a = m + eps`, then `i = rsqrt(a)` (`rsqrt`) or `i = 1 /
/// sqrt(a)`, and `y = w * (x * i)` with `w` of `cols` elements. Every step rounds
/// to `f32` as the separate kernels do ([`power_scalar`], [`mean_inner`], [`binary`],
/// [`unary`]), so the result is theirs, bit for bit.
#[allow(clippy::too_many_arguments)]
pub fn rms_norm_chain(x: &[f32], cols: usize, w: &[f32], e: f32, eps: f32, rsqrt: bool, out: &mut [f32]) -> Result<()> {
    check_len("rms_norm_chain output", out.len(), x.len())?;
    check_len("rms_norm_chain weight", w.len(), cols)?;
    if cols == 0 || !x.len().is_multiple_of(cols) {
        return Err(KernelError(format!(
            "rms_norm_chain: rows of {cols} elements do not divide {}",
            x.len()
        )));
    }
    let work = x.len() * 4;
    let rows_per = (crate::PAR_MIN_WORK / (4 * cols)).max(1);
    for_chunks(out, rows_per * cols, work, |(t, o)| {
        let xs = &x[t * rows_per * cols..t * rows_per * cols + o.len()];
        let mut p = vec![0f32; cols];
        for (xr, or) in xs.chunks_exact(cols).zip(o.chunks_exact_mut(cols)) {
            simd::map1(&mut p, xr, |v| pow_elem(v, e));
            let a = row_sum(&p) / cols as f32 + eps;
            let i = if rsqrt {
                UnaryOp::Rsqrt.apply(a)
            } else {
                1.0 / UnaryOp::Sqrt.apply(a)
            };
            simd::map2(or, xr, w, &|v, g| g * (v * i));
        }
    });
    Ok(())
}

/// `concat(-x[..., h:], x[..., :h])` over rows of `cols = 2h` elements: the
/// `rotate_half` of rotary position embeddings (Llama, Mistral, Qwen2, Phi), as
/// Hugging Face writes it and the front ends spell it out (two slices, a negation
/// and a concatenation). Exact: it moves values and flips signs (as the library's
/// `negative`; a NaN's sign bit is not specified, see `docs/semantics.md`).
pub fn rotate_half(x: &[f32], cols: usize, out: &mut [f32]) -> Result<()> {
    check_len("rotate_half output", out.len(), x.len())?;
    if cols == 0 || !cols.is_multiple_of(2) || !x.len().is_multiple_of(cols) {
        return Err(KernelError(format!(
            "rotate_half: rows of {cols} elements (an even number dividing {})",
            x.len()
        )));
    }
    let h = cols / 2;
    for (xr, or) in x.chunks_exact(cols).zip(out.chunks_exact_mut(cols)) {
        let (lo, hi) = or.split_at_mut(h);
        for (o, &v) in lo.iter_mut().zip(&xr[h..]) {
            *o = -v;
        }
        hi.copy_from_slice(&xr[..h]);
    }
    Ok(())
}

/// How [`take_rows`] treats an index outside `[0, rows)` (`R.take`'s `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TakeMode {
    /// An error (TVM leaves the read undefined; the legalized kernel's checked read
    /// fails there too).
    Fast,
    /// Clamped to `[0, rows - 1]`.
    Clip,
    /// Modulo `rows`, negative indices from the end (topi's
    /// `((i % rows) + rows) % rows`).
    Wrap,
}

/// `take(data, idx, axis=0)` of a `rows x cols` matrix: row `idx[i]` of `data` into
/// row `i` of `out` (`idx.len() x cols`), the index treated by `mode` (embedding
/// lookups: a copy of each row rather than a checked read per element).
pub fn take_rows(data: &[f32], rows: usize, cols: usize, idx: &[i64], mode: TakeMode, out: &mut [f32]) -> Result<()> {
    check_len("take data", data.len(), rows * cols)?;
    check_len("take output", out.len(), idx.len() * cols)?;
    if cols == 0 {
        return Ok(());
    }
    let n = rows as i64;
    for (o, &i) in out.chunks_exact_mut(cols).zip(idx) {
        let r = match mode {
            _ if n == 0 => return Err(KernelError(format!("take: index {i} of an empty axis"))),
            TakeMode::Fast if (0..n).contains(&i) => i,
            TakeMode::Fast => return Err(KernelError(format!("take: index {i} is outside [0, {n})"))),
            TakeMode::Clip => i.clamp(0, n - 1),
            TakeMode::Wrap => ((i % n) + n) % n,
        } as usize;
        o.copy_from_slice(&data[r * cols..(r + 1) * cols]);
    }
    Ok(())
}

/// Copy `x` broadcast to `out_shape` into `out` (`broadcast_to`).
pub fn broadcast_to(x: &[f32], x_shape: &[usize], out: &mut [f32], out_shape: &[usize]) -> Result<()> {
    check_len("broadcast_to input", x.len(), numel(x_shape))?;
    check_len("broadcast_to output", out.len(), numel(out_shape))?;
    if x.len() == out.len() {
        out.copy_from_slice(x);
        return Ok(());
    }
    let zero = vec![0.0f32; 1];
    binary(BinaryOp::Add, x, x_shape, &zero, &[], out, out_shape, false)
}

/// The sum of `f(x[i])` in eight interleaved partial sums (element `i` into sum
/// `i % 8`, added pairwise at the end): a loop that vectorises, where one running
/// sum is bound by the latency of each addition.
#[inline(always)]
fn sum_in_lanes(x: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut sums = [0.0f32; 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for (s, v) in sums.iter_mut().zip(c) {
            *s += f(*v);
        }
    }
    for (s, v) in sums.iter_mut().zip(chunks.remainder()) {
        *s += f(*v);
    }
    ((sums[0] + sums[4]) + (sums[1] + sums[5])) + ((sums[2] + sums[6]) + (sums[3] + sums[7]))
}

/// The sum of a row as [`sum_in_lanes`] adds it, unless the row is large enough
/// that some partial sum could reach the float range (`max|x| * len > f32::MAX / 4`)
/// or the sum is not finite: then in order from 0, as TVM's legalized reduction
/// adds (so an overflow or `inf - inf` comes out as it does there).
fn row_sum(x: &[f32]) -> f32 {
    let (mut sums, mut big) = ([0.0f32; 8], [0.0f32; 8]);
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for ((s, m), v) in sums.iter_mut().zip(&mut big).zip(c) {
            *s += *v;
            *m = m.max(v.abs());
        }
    }
    for ((s, m), v) in sums.iter_mut().zip(&mut big).zip(chunks.remainder()) {
        *s += *v;
        *m = m.max(v.abs());
    }
    let s = ((sums[0] + sums[4]) + (sums[1] + sums[5])) + ((sums[2] + sums[6]) + (sums[3] + sums[7]));
    let m = big.iter().copied().fold(0.0f32, f32::max);
    if s.is_finite() && m * x.len() as f32 <= f32::MAX / 4.0 {
        s
    } else {
        x.iter().sum()
    }
}

/// Softmax along the last axis of `x: [rows, cols]`: the row's maximum (NaN
/// ignored, as `f32::max` does), `exp(x - max)` in vector lanes
/// ([`crate::math::exp_nonpositive_f32`]), their sum in eight interleaved partial
/// sums, each multiplied by its inverse. Rows run on rayon's pool in pieces of
/// whole rows (see `grain`) when there is enough work.
pub fn softmax(x: &[f32], rows: usize, cols: usize, out: &mut [f32]) -> Result<()> {
    softmax_rows(x, rows, cols, out, Guard::None)
}

/// [`softmax`], except that a row whose elements are all `-inf` gives zeros where
/// [`softmax`] gives NaN: torch's `_safe_softmax` (what `torch.export` spells out
/// after every attention softmax: `where(all(x == -inf, axis=-1), 0, softmax(x))`).
/// Every other row is [`softmax`]'s, to the bit.
pub fn safe_softmax(x: &[f32], rows: usize, cols: usize, out: &mut [f32]) -> Result<()> {
    softmax_rows(x, rows, cols, out, Guard::AllNegInf)
}

/// [`softmax`] with every NaN of the result replaced by `fill`: ONNX exports'
/// `where(isnan(p), fill, p)` after an attention softmax (a fully masked row, all
/// `-inf`, gives NaN in [`softmax`], so `fill` there). Every other value is
/// [`softmax`]'s, to the bit.
pub fn softmax_nan_fill(x: &[f32], rows: usize, cols: usize, fill: f32, out: &mut [f32]) -> Result<()> {
    softmax_rows(x, rows, cols, out, Guard::NanFill(fill))
}

/// What a softmax kernel does past [`softmax_row`].
#[derive(Clone, Copy)]
pub(crate) enum Guard {
    /// Nothing.
    None,
    /// Rows of only `-inf` give zeros.
    AllNegInf,
    /// NaN results become this value.
    NanFill(f32),
}

fn softmax_rows(x: &[f32], rows: usize, cols: usize, out: &mut [f32], guard: Guard) -> Result<()> {
    check_len("softmax input", x.len(), rows * cols)?;
    check_len("softmax output", out.len(), rows * cols)?;
    if cols == 0 {
        return Ok(());
    }
    let work = rows * cols * 24;
    let rows_per_piece = grain(rows * cols, work).div_ceil(cols);
    for_chunks(out, rows_per_piece * cols, work, |(p, o)| {
        let x = &x[p * rows_per_piece * cols..];
        softmax_piece(x, o, cols, guard);
    });
    Ok(())
}

/// The rows of one piece of [`softmax_rows`] (on the calling thread).
pub(crate) fn softmax_piece(x: &[f32], o: &mut [f32], cols: usize, guard: Guard) {
    for (o, x) in o.chunks_exact_mut(cols).zip(x.chunks_exact(cols)) {
        match guard {
            Guard::AllNegInf if x.iter().all(|&v| v == f32::NEG_INFINITY) => o.fill(0.0),
            Guard::NanFill(fill) => {
                softmax_row(x, o);
                for v in o.iter_mut() {
                    if v.is_nan() {
                        *v = fill;
                    }
                }
            }
            _ => softmax_row(x, o),
        }
    }
}

/// One row of [`softmax`].
fn softmax_row(x: &[f32], o: &mut [f32]) {
    let mut lanes = [f32::NEG_INFINITY; 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for (m, v) in lanes.iter_mut().zip(c) {
            *m = m.max(*v);
        }
    }
    let m = chunks
        .remainder()
        .iter()
        .chain(&lanes)
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    for (o, x) in o.iter_mut().zip(x) {
        *o = x - m;
    }
    crate::math::exp_nonpositive_slice_in_place(o);
    let inv = 1.0 / sum_in_lanes(o, |v| v);
    o.iter_mut().for_each(|v| *v *= inv);
}

/// Mean over the innermost `inner` elements of each of `outer` rows (global average
/// pooling is `mean(x, axis=[2, 3])` of NCHW data): each row's sum in vector lanes
/// (see `row_sum`: in order where it could overflow), divided by `inner`.
pub fn mean_inner(x: &[f32], outer: usize, inner: usize, out: &mut [f32]) -> Result<()> {
    check_len("mean input", x.len(), outer * inner)?;
    check_len("mean output", out.len(), outer)?;
    if inner == 0 {
        out.fill(f32::NAN);
        return Ok(());
    }
    // Rows summed by `row_sum`, on rayon's pool only when there is enough work to
    // pay for waking it.
    for_chunks(out, 64, outer * inner, |(t, o)| {
        for (r, o) in o.iter_mut().enumerate() {
            let row = &x[(t * 64 + r) * inner..(t * 64 + r + 1) * inner];
            *o = row_sum(row) / inner as f32;
        }
    });
    Ok(())
}

/// The reductions of [`reduce_inner`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// Sum.
    Sum,
    /// Maximum (NaN-ignoring, as `f32::max`).
    Max,
    /// Minimum (NaN-ignoring, as `f32::min`).
    Min,
}

/// Reduce the innermost `inner` elements of each of `outer` rows (sums in vector
/// lanes, in order where they could overflow: see `row_sum`). A max starts from
/// the lowest `float32` and a min from the highest, TVM's initial values (as the
/// legalized reduction): an empty row gives 0 for a sum, -3.4028235e38 for a max and
/// 3.4028235e38 for a min, and `min([inf])` is 3.4028235e38.
pub fn reduce_inner(op: Reduction, x: &[f32], outer: usize, inner: usize, out: &mut [f32]) -> Result<()> {
    check_len("reduce input", x.len(), outer * inner)?;
    check_len("reduce output", out.len(), outer)?;
    let work = outer * inner;
    for_chunks(out, 64, work, |(t, o)| {
        for (r, o) in o.iter_mut().enumerate() {
            let row = &x[(t * 64 + r) * inner..(t * 64 + r + 1) * inner];
            *o = match op {
                Reduction::Sum => row_sum(row),
                Reduction::Max => row.iter().copied().fold(f32::MIN, f32::max),
                Reduction::Min => row.iter().copied().fold(f32::MAX, f32::min),
            };
        }
    });
    Ok(())
}

/// `argmax` (`max`) or `argmin` over each of `rows` rows of `cols` elements, as TVM
/// legalizes them: the running value starts at the lowest (highest) finite float and
/// index -1, and an element replaces it unless the running value is at least (at
/// most) as large (small) — so the first of equal extremes wins, and a NaN, which no
/// comparison keeps, restarts the scan (`argmax([1, NaN, -3])` is 2). An empty row
/// gives -1.
pub fn arg_reduce_rows(max: bool, x: &[f32], rows: usize, cols: usize, out: &mut [i64]) -> Result<()> {
    check_len("argmax input", x.len(), rows * cols)?;
    check_len("argmax output", out.len(), rows)?;
    let scan = |row: &[f32]| -> i64 {
        let (mut bi, mut bv) = (-1i64, if max { f32::MIN } else { f32::MAX });
        for (k, &v) in row.iter().enumerate() {
            let keep = if max { bv >= v } else { bv <= v };
            if !keep {
                bi = k as i64;
                bv = v;
            }
        }
        bi
    };
    for_chunks(out, 64, rows * cols, |(t, o)| {
        for (r, o) in o.iter_mut().enumerate() {
            let i = t * 64 + r;
            *o = scan(&x[i * cols..(i + 1) * cols]);
        }
    });
    Ok(())
}

/// Layer normalization of each of `rows` rows of `cols` elements:
/// `(x - mean) / sqrt(var + eps) * gamma + beta` with the population variance, and
/// `gamma`, `beta` of `cols` elements.
pub fn layer_norm(
    x: &[f32],
    rows: usize,
    cols: usize,
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
    out: &mut [f32],
) -> Result<()> {
    check_len("layer_norm input", x.len(), rows * cols)?;
    check_len("layer_norm output", out.len(), rows * cols)?;
    check_len("layer_norm gamma", gamma.len(), cols)?;
    check_len("layer_norm beta", beta.len(), cols)?;
    if cols == 0 {
        return Ok(());
    }
    let work = rows * cols * 4;
    for_chunks(out, cols, work, |(r, o)| {
        let row = &x[r * cols..(r + 1) * cols];
        let mean = sum_in_lanes(row, |v| v) / cols as f32;
        let var = sum_in_lanes(row, |v| (v - mean) * (v - mean)) / cols as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for (((o, v), g), b) in o.iter_mut().zip(row).zip(gamma).zip(beta) {
            *o = (v - mean) * inv * g + b;
        }
    });
    Ok(())
}

/// Per-channel scale and shift of inference batch normalization:
/// `scale = gamma / sqrt(var + eps)`, `shift = beta - mean * scale`.
pub fn batch_norm_fold(
    gamma: &[f32],
    beta: &[f32],
    mean: &[f32],
    var: &[f32],
    eps: f64,
) -> Result<(Vec<f32>, Vec<f32>)> {
    let c = gamma.len();
    check_len("batch_norm beta", beta.len(), c)?;
    check_len("batch_norm mean", mean.len(), c)?;
    check_len("batch_norm variance", var.len(), c)?;
    let scale: Vec<f32> = gamma
        .iter()
        .zip(var)
        .map(|(g, v)| g / (v + eps as f32).sqrt())
        .collect();
    let shift = beta.iter().zip(mean).zip(&scale).map(|((b, m), s)| b - m * s).collect();
    Ok((scale, shift))
}

/// `out[o, c, i] = x[o, c, i] * scale[c] + shift[c]` for `x: [outer, channels, inner]`,
/// optionally clamped at zero.
// Slices with their shapes plus the fused epilogue: a parameter struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn channel_affine(
    x: &[f32],
    outer: usize,
    channels: usize,
    inner: usize,
    scale: &[f32],
    shift: &[f32],
    relu: bool,
    out: &mut [f32],
) -> Result<()> {
    check_len("affine input", x.len(), outer * channels * inner)?;
    check_len("affine output", out.len(), x.len())?;
    check_len("affine scale", scale.len(), channels)?;
    check_len("affine shift", shift.len(), channels)?;
    if inner == 0 {
        return Ok(());
    }
    out.par_chunks_mut(inner)
        .zip(x.par_chunks(inner))
        .enumerate()
        .for_each(|(r, (o, x))| {
            let c = r % channels;
            let (s, b) = (scale[c], shift[c]);
            for (o, x) in o.iter_mut().zip(x) {
                let v = x * s + b;
                *o = if relu { v.max(0.0) } else { v };
            }
        });
    Ok(())
}

/// `out = permute_dims(x, axes)`: `out` axis `i` is `x` axis `axes[i]`. Works on
/// elements of any type (`T` is the element's storage).
pub fn transpose<T: Copy + Send + Sync>(x: &[T], x_shape: &[usize], axes: &[usize], out: &mut [T]) -> Result<()> {
    let nd = x_shape.len();
    let mut seen = vec![false; nd];
    if axes.len() != nd || axes.iter().any(|&a| a >= nd || std::mem::replace(&mut seen[a], true)) {
        return Err(KernelError(format!(
            "transpose: {axes:?} is not a permutation of {nd} axes"
        )));
    }
    check_len("transpose input", x.len(), numel(x_shape))?;
    check_len("transpose output", out.len(), x.len())?;
    let mut in_strides = vec![1usize; nd];
    for i in (0..nd.saturating_sub(1)).rev() {
        in_strides[i] = in_strides[i + 1] * x_shape[i + 1];
    }
    let out_shape: Vec<usize> = axes.iter().map(|&a| x_shape[a]).collect();
    let strides: Vec<usize> = axes.iter().map(|&a| in_strides[a]).collect();
    let (out_shape, st) = coalesce(&out_shape, &[&strides]);
    let strides = &st[0];
    let inner = out_shape.last().copied().unwrap_or(1).max(1);
    let istride = strides.last().copied().unwrap_or(1);
    let rows_per_task = (GRAIN / inner).max(1);
    let work = out.len();
    for_chunks(out, rows_per_task * inner, work, |(t, chunk)| {
        for (r, row) in chunk.chunks_mut(inner).enumerate() {
            let base = offset_of((t * rows_per_task + r) * inner, &out_shape, strides);
            if istride == 1 {
                row.copy_from_slice(&x[base..base + inner]);
            } else {
                for (j, o) in row.iter_mut().enumerate() {
                    *o = x[base + j * istride];
                }
            }
        }
    });
    Ok(())
}

/// Concatenate `parts` along an axis: each part is `[outer, len_i * inner]` in
/// row-major order (`len_i` its size on the axis); `out` is `[outer, sum len_i * inner]`.
pub fn concat<T: Copy + Send + Sync>(parts: &[(&[T], usize)], outer: usize, inner: usize, out: &mut [T]) -> Result<()> {
    let total: usize = parts.iter().map(|(_, l)| l * inner).sum();
    for (p, l) in parts {
        check_len("concat input", p.len(), outer * l * inner)?;
    }
    check_len("concat output", out.len(), outer * total)?;
    if total == 0 {
        return Ok(());
    }
    let work = out.len();
    for_chunks(out, total, work, |(o, row)| {
        let mut at = 0;
        for (p, l) in parts {
            let n = l * inner;
            row[at..at + n].copy_from_slice(&p[o * n..(o + 1) * n]);
            at += n;
        }
    });
    Ok(())
}
