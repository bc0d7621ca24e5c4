//! Functions the generated code calls: math intrinsics (`extern "C"` shims around
//! Rust's `f32` methods; `f64` math goes through a trampoline to the interpreter's
//! own functions, so both paths compute the same values) and the scratch arena of
//! `T.allocate`d buffers.

use relax_ir::tir::Intrinsic as I;

/// Per-call storage of buffers allocated inside a stage (`Stmt::Alloc`): one
/// reusable slot per allocation site, zero-filled on each entry like the
/// interpreter's.
pub(super) struct Arena(Vec<Vec<u64>>);

impl Arena {
    pub(super) fn new(sites: usize) -> Arena {
        Arena(vec![Vec::new(); sites])
    }
}

/// `(arena, site, elements, element bytes) -> pointer`, null when the memory
/// cannot be had.
pub(super) extern "C" fn arena_alloc(arena: *mut Arena, site: u64, n: i64, eb: u64) -> *mut u8 {
    // SAFETY: the generated code passes the arena given to its caller, which is
    // exclusively borrowed for the duration of the call.
    let Some(arena) = (unsafe { arena.as_mut() }) else {
        return std::ptr::null_mut();
    };
    let Some(store) = arena.0.get_mut(site as usize) else {
        return std::ptr::null_mut();
    };
    let words = match (n.max(0) as u64).checked_mul(eb) {
        Some(b) => b.div_ceil(8).max(1) as usize,
        None => return std::ptr::null_mut(),
    };
    store.clear();
    if store.try_reserve_exact(words).is_err() {
        return std::ptr::null_mut();
    }
    store.resize(words, 0);
    store.as_mut_ptr() as *mut u8
}

/// Calls the Rust function `f` (a `fn(f64) -> f64` passed as an address).
pub(super) extern "C" fn call_f64(f: usize, x: f64) -> f64 {
    // SAFETY: `f` was produced from a `fn(f64) -> f64` by `unary_f64_addr`.
    let f: fn(f64) -> f64 = unsafe { std::mem::transmute::<usize, fn(f64) -> f64>(f) };
    f(x)
}

/// Calls the Rust function `f` (a `fn(f64, f64) -> f64` passed as an address).
pub(super) extern "C" fn call_f64x2(f: usize, x: f64, y: f64) -> f64 {
    // SAFETY: `f` was produced from a `fn(f64, f64) -> f64` by `binary_f64_addr`.
    let f: fn(f64, f64) -> f64 = unsafe { std::mem::transmute::<usize, fn(f64, f64) -> f64>(f) };
    f(x, y)
}

/// The address of the interpreter's `f64` function for the unary intrinsic `op`.
pub(super) fn unary_f64_addr(op: I) -> Option<usize> {
    crate::math::unary_f64(op).map(|f| f as usize)
}

/// The address of the interpreter's `f64` function for the binary intrinsic `op`.
pub(super) fn binary_f64_addr(op: I) -> Option<usize> {
    super::super::scalar::binary_f64(op).map(|f| f as usize)
}

extern "C" fn sigmoid_f32(x: f32) -> f32 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

extern "C" fn tanh_f32(x: f32) -> f32 {
    crate::math::tanh_f32(x)
}

extern "C" fn erf_f32(x: f32) -> f32 {
    crate::math::erf(x as f64) as f32
}

extern "C" fn exp10_f32(x: f32) -> f32 {
    10f32.powf(x)
}

macro_rules! f32_shims {
    ($op:ident; $($name:ident => $method:ident),* $(,)?) => {
        $(
            if $op == I::$name {
                extern "C" fn shim(x: f32) -> f32 {
                    x.$method()
                }
                return Some(shim as *const () as usize);
            }
        )*
    };
}

/// The address of an `extern "C" fn(f32) -> f32` computing the unary intrinsic
/// `op` in single precision, when there is one (libm's, or within an ulp of the
/// `f64` result; the inverse hyperbolic functions, which Rust computes in `f32`
/// by formula, go through `f64` instead).
pub(super) fn unary_f32_addr(op: I) -> Option<usize> {
    f32_shims!(op;
        Exp => exp, Exp2 => exp2, Log => ln, Log2 => log2, Log10 => log10,
        Log1p => ln_1p, Expm1 => exp_m1, Sin => sin, Cos => cos, Tan => tan,
        Asin => asin, Acos => acos, Atan => atan, Sinh => sinh, Cosh => cosh,
        Round => round,
    );
    Some(match op {
        I::Tanh => tanh_f32 as *const () as usize,
        I::Sigmoid => sigmoid_f32 as *const () as usize,
        I::Erf => erf_f32 as *const () as usize,
        I::Exp10 => exp10_f32 as *const () as usize,
        _ => return None,
    })
}

/// `v` rounded to `float16` (once, as the interpreter rounds), as an `f32`.
pub(super) extern "C" fn f64_to_f16(v: f64) -> f32 {
    half::f16::from_f64(v).to_f32()
}

/// `v` rounded to `bfloat16` (once, as the interpreter rounds), as an `f32`.
pub(super) extern "C" fn f64_to_bf16(v: f64) -> f32 {
    half::bf16::from_f64(v).to_f32()
}
