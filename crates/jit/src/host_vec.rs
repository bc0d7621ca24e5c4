//! Chunked ("vector") execution of innermost float loops on the host: the body
//! `out[i + c] = f(loads...)` is evaluated 256 iterations at a time, each
//! expression node running a tight loop over the chunk, so elementwise kernels run
//! close to memory speed instead of paying closure calls per element.

use relax_ir::tir::Intrinsic;
use relax_ir::tir::{BinOp, PrimExpr, PrimExprKind, Stmt, TirVar};
use relax_ir::{DataType, TypeCode};

use super::host::{BufPtr, Env, Frame, IFn};

/// Chunk length.
pub const CH: usize = 256;

/// Computes the values of an expression for iterations `start .. start + len`.
pub(crate) type VFn = Box<dyn Fn(&mut Frame, i64, usize, &mut [f64; CH]) -> bool + Send + Sync>;

/// The coefficient of `v` in `e` when `e` is affine in `v` with a constant
/// coefficient (0 when `e` does not use `v`).
fn stride_of(e: &PrimExpr, v: &TirVar) -> Option<i64> {
    use PrimExprKind as K;
    if !crate::expr::uses_var(e, v) {
        return Some(0);
    }
    match e.kind() {
        K::Var(w) if w == v => Some(1),
        K::Cast { value, dtype } if dtype.is_int() && value.dtype().is_int() => stride_of(value, v),
        K::Binary { op: BinOp::Add, a, b } => Some(stride_of(a, v)?.checked_add(stride_of(b, v)?)?),
        K::Binary { op: BinOp::Sub, a, b } => Some(stride_of(a, v)?.checked_sub(stride_of(b, v)?)?),
        K::Binary { op: BinOp::Mul, a, b } => match (a.as_int(), b.as_int()) {
            (Some(c), _) => stride_of(b, v)?.checked_mul(c),
            (_, Some(c)) => stride_of(a, v)?.checked_mul(c),
            _ => None,
        },
        _ => None,
    }
}

fn round_chunk(dt: DataType, x: &mut [f64; CH], len: usize) {
    match (dt.code, dt.bits) {
        (TypeCode::Float, 32) => x[..len].iter_mut().for_each(|v| *v = *v as f32 as f64),
        (TypeCode::Float, 16) => x[..len].iter_mut().for_each(|v| *v = half::f16::from_f64(*v).to_f64()),
        _ => {}
    }
}

/// Compile `e` (a float expression) for chunked evaluation over loop variable `v`
/// (int slot `slot`); `None` when it uses something the chunked path does not
/// handle.
fn vcompile(env: &mut Env, e: &PrimExpr, v: &TirVar, slot: usize) -> Option<VFn> {
    use PrimExprKind as K;
    let dt = e.dtype();
    if !dt.is_float() || dt.lanes != 1 || dt.code == TypeCode::BFloat || dt.mini_float().is_some() {
        return None;
    }
    if !crate::expr::uses_var(e, v) {
        // Loop-invariant: evaluate once per chunk.
        let f = super::host::compile_f_pub(env, e).ok()?;
        return Some(Box::new(move |fr, _, len, out| {
            let x = f(fr);
            out[..len].iter_mut().for_each(|o| *o = x);
            true
        }));
    }
    Some(match e.kind() {
        K::Cast { dtype, value } if value.dtype().is_float() => {
            let f = vcompile(env, value, v, slot)?;
            let d = *dtype;
            Box::new(move |fr, s, len, out| {
                let ok = f(fr, s, len, out);
                round_chunk(d, out, len);
                ok
            })
        }
        K::Binary { op, a, b } if a.dtype().is_float() => {
            let (fa, fb) = (vcompile(env, a, v, slot)?, vcompile(env, b, v, slot)?);
            let d = dt;
            macro_rules! vb {
                (|$x:ident, $y:ident| $body:expr) => {
                    Box::new(move |fr, s, len, out| {
                        let mut tmp = [0f64; CH];
                        if !fa(fr, s, len, out) || !fb(fr, s, len, &mut tmp) {
                            return false;
                        }
                        for (o, t) in out[..len].iter_mut().zip(&tmp[..len]) {
                            let ($x, $y) = (*o, *t);
                            *o = $body;
                        }
                        round_chunk(d, out, len);
                        true
                    })
                };
            }
            match op {
                BinOp::Add => vb!(|x, y| x + y),
                BinOp::Sub => vb!(|x, y| x - y),
                BinOp::Mul => vb!(|x, y| x * y),
                BinOp::Div => vb!(|x, y| x / y),
                BinOp::Min => vb!(|x, y| crate::math::fmin(x, y)),
                BinOp::Max => vb!(|x, y| crate::math::fmax(x, y)),
                _ => return None,
            }
        }
        K::Call { op, args, dtype } if args.len() == 1 => {
            let iop = op.intrinsic()?;
            let f = crate::math::unary_f64(iop)?;
            // As the scalar interpreter: half-precision math and `float32` `erf` in
            // the `f32` functions native code calls.
            let half = dtype.bits == 16 && dtype.is_float();
            let g = crate::math::unary_f32(iop)
                .filter(|_| half || (iop == Intrinsic::Erf && *dtype == relax_ir::DataType::FLOAT32));
            let a = vcompile(env, &args[0], v, slot)?;
            let d = *dtype;
            Box::new(move |fr, s, len, out| {
                if !a(fr, s, len, out) {
                    return false;
                }
                match g {
                    Some(g) => out[..len].iter_mut().for_each(|o| *o = f64::from(g(*o as f32))),
                    None => out[..len].iter_mut().for_each(|o| *o = f(*o)),
                }
                round_chunk(d, out, len);
                true
            })
        }
        K::BufferLoad { buffer, indices } if indices.len() == 1 => {
            let st = stride_of(&indices[0], v)?;
            let bslot = env.buf_slot(buffer);
            let idx: IFn = super::host::compile_i_pub(env, &indices[0]).ok()?;
            let bdt = buffer.dtype();
            macro_rules! vl {
                ($t:ty, $conv:expr) => {
                    Box::new(
                        move |fr: &mut Frame, s: i64, len: usize, out: &mut [f64; CH]| {
                            fr.ints[slot] = s;
                            let i0 = idx(fr);
                            let b: BufPtr = fr.bufs[bslot];
                            let last = i0 + st * (len as i64 - 1);
                            if i0.min(last) < 0 || i0.max(last) as usize >= b.len {
                                return false;
                            }
                            let p = b.ptr as *const $t;
                            for (k, o) in out[..len].iter_mut().enumerate() {
                                // SAFETY: the whole strided range was bounds-checked above.
                                let x = unsafe { *p.offset((i0 + st * k as i64) as isize) };
                                *o = $conv(x);
                            }
                            true
                        },
                    )
                };
            }
            match (bdt.code, bdt.bits) {
                (TypeCode::Float, 32) => vl!(f32, |x: f32| x as f64),
                (TypeCode::Float, 64) => vl!(f64, |x: f64| x),
                (TypeCode::Float, 16) => vl!(u16, |x: u16| half::f16::from_bits(x).to_f64()),
                _ => return None,
            }
        }
        _ => return None,
    })
}

/// A compiled chunk runner: `(frame, start, end) -> handled`.
pub(crate) type ChunkFn = Box<dyn Fn(&mut Frame, i64, i64) -> bool + Send + Sync>;

/// A chunked innermost loop `for v in 0..extent: buf[idx] = value`, or `None`.
pub(crate) fn try_vector_loop(env: &mut Env, var: &TirVar, slot: usize, body: &Stmt) -> Option<ChunkFn> {
    let Stmt::BufferStore {
        buffer, value, indices, ..
    } = body
    else {
        return None;
    };
    if indices.len() != 1 || crate::expr::loads_buffer(value, buffer) {
        return None;
    }
    let st = stride_of(&indices[0], var)?;
    if st != 1 {
        return None;
    }
    let bdt = buffer.dtype();
    let val = vcompile(env, value, var, slot)?;
    let idx = super::host::compile_i_pub(env, &indices[0]).ok()?;
    let bslot = env.buf_slot(buffer);
    macro_rules! vs {
        ($t:ty, $conv:expr) => {
            Box::new(move |fr: &mut Frame, lo: i64, hi: i64| {
                let mut buf = [0f64; CH];
                let mut s = lo;
                while s < hi {
                    let len = ((hi - s) as usize).min(CH);
                    if !val(fr, s, len, &mut buf) {
                        return false;
                    }
                    fr.ints[slot] = s;
                    let i0 = idx(fr);
                    let b = fr.bufs[bslot];
                    if i0 < 0 || (i0 as usize + len) > b.len {
                        return false;
                    }
                    let p = b.ptr as *mut $t;
                    for (k, x) in buf[..len].iter().enumerate() {
                        // SAFETY: range bounds-checked above.
                        unsafe { *p.add(i0 as usize + k) = $conv(*x) };
                    }
                    s += len as i64;
                }
                true
            })
        };
    }
    Some(match (bdt.code, bdt.bits) {
        (TypeCode::Float, 32) => vs!(f32, |x: f64| x as f32),
        (TypeCode::Float, 64) => vs!(f64, |x: f64| x),
        (TypeCode::Float, 16) => vs!(u16, |x: f64| half::f16::from_f64(x).to_bits()),
        _ => return None,
    })
}
