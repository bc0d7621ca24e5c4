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

/// Calls the Rust function `f` (a `fn(f32) -> f32` passed as an address).
pub(super) extern "C" fn call_f32(f: usize, x: f32) -> f32 {
    // SAFETY: `f` was produced from a `fn(f32) -> f32` by `unary_f32_addr`.
    let f: fn(f32) -> f32 = unsafe { std::mem::transmute::<usize, fn(f32) -> f32>(f) };
    f(x)
}

/// The address of the `fn(f32) -> f32` computing the unary intrinsic `op` in single
/// precision ([`crate::math::unary_f32`]), called through [`call_f32`].
pub(super) fn unary_f32_addr(op: I) -> Option<usize> {
    crate::math::unary_f32(op).map(|f| f as usize)
}

/// `v` rounded to `float16` (once, as the interpreter rounds), as an `f32`.
pub(super) extern "C" fn f64_to_f16(v: f64) -> f32 {
    half::f16::from_f64(v).to_f32()
}

/// `v` rounded to `bfloat16` (once, as the interpreter rounds), as an `f32`.
pub(super) extern "C" fn f64_to_bf16(v: f64) -> f32 {
    super::super::scalar::bf16_from_f64(v).to_f32()
}

/// Applies the Rust function `f` (a `fn(f32) -> f32` passed as an address) to the
/// four `f32` lanes at `p` in place (vector lanes that have no four-lane function).
pub(super) extern "C" fn call_f32x4(f: usize, p: *mut [f32; 4]) -> i64 {
    // SAFETY: `f` was produced from a `fn(f32) -> f32` by `unary_f32x4_addr`.
    let f: fn(f32) -> f32 = unsafe { std::mem::transmute::<usize, fn(f32) -> f32>(f) };
    // SAFETY: the generated code passes its own 16-byte stack slot, not otherwise
    // referenced during the call.
    if let Some(v) = unsafe { p.as_mut() } {
        for x in v.iter_mut() {
            *x = f(*x);
        }
    }
    0
}

/// `erf` of the four `f32` lanes at `p` in place (vectorised; the same bits as
/// [`relax_host_kernels::math::erf_f32`], which scalar code calls).
extern "C" fn erf_x4(_: usize, p: *mut [f32; 4]) -> i64 {
    // SAFETY: as in `call_f32x4`.
    if let Some(v) = unsafe { p.as_mut() } {
        relax_host_kernels::math::erf_f32x4(v);
    }
    0
}

/// `tanh` of the four `f32` lanes at `p` in place (the same bits as
/// [`relax_host_kernels::math::tanh_f32`], which scalar code calls).
extern "C" fn tanh_x4(_: usize, p: *mut [f32; 4]) -> i64 {
    // SAFETY: as in `call_f32x4`.
    if let Some(v) = unsafe { p.as_mut() } {
        relax_host_kernels::math::tanh_f32x4(v);
    }
    0
}

/// `(trampoline, function)` addresses computing the unary intrinsic `op` on four
/// `f32` lanes in memory, with the same bits per lane as [`unary_f32_addr`]'s
/// function: called as `trampoline(function, lanes)`.
pub(super) fn unary_f32x4_addr(op: I) -> Option<(usize, usize)> {
    let tramp = |f: extern "C" fn(usize, *mut [f32; 4]) -> i64| f as usize;
    match op {
        I::Erf => Some((tramp(erf_x4), 0)),
        I::Tanh => Some((tramp(tanh_x4), 0)),
        _ => unary_f32_addr(op).map(|f| (tramp(call_f32x4), f)),
    }
}
