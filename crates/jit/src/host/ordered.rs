//! TVM's summation order for the matmul-like reductions the host hands to a GEMM.
//!
//! The legalized TIR sums `acc = acc + x * y` for `k = 0, 1, ...`, each product rounded
//! before it is added; the GEMM kernels fuse the multiply-add and block the sum. That
//! moves only the last bits of ordinary data, but where a product or a partial sum
//! reaches the float range it changes the kind of the result (`inf + (-inf)` is NaN
//! in order, `inf` fused). Such a stage runs its compiled TIR instead: when any output
//! of the GEMM is `inf` or NaN, and, where reading the operands costs little next to
//! the product (the kernel library's rule, [`relax_host_kernels::ordered`]), when
//! `max|x| * max|y| * k` could reach the float range.

use relax_host_kernels::ordered::{SCAN_ALWAYS, SCAN_RATIO};

use super::BufPtr;

/// One product of a stage: the output's, `x`'s and `y`'s base and strides
/// (`(i, j)`, `(i, k)`, `(k, j)`).
pub(super) type Plan = (i64, Vec<i64>, i64, Vec<i64>, i64, Vec<i64>);

/// The magnitude of element `at` of `b` when it is finite, else 0.
///
/// # Safety
/// `at` must address an element of `b`'s buffer, whose elements are `f64` when
/// `wide`, else `f32`.
unsafe fn finite_mag(b: &BufPtr, at: i64, wide: bool) -> f64 {
    // SAFETY: in bounds by the caller's contract.
    let v = unsafe {
        if wide {
            *(b.ptr as *const f64).offset(at as isize)
        } else {
            f64::from(*(b.ptr as *const f32).offset(at as isize))
        }
    };
    if v.is_finite() {
        v.abs()
    } else {
        0.0
    }
}

/// The largest finite magnitude of the `rows x cols` matrix at `base` with strides `c`.
///
/// # Safety
/// As [`finite_mag`], for every element of the matrix.
unsafe fn max_finite(b: &BufPtr, base: i64, c: &[i64], rows: i64, cols: i64, wide: bool) -> f64 {
    let mut m = 0.0f64;
    for r in 0..rows {
        for q in 0..cols {
            // SAFETY: an element of the matrix.
            m = m.max(unsafe { finite_mag(b, base + r * c[0] + q * c[1], wide) });
        }
    }
    m
}

/// Before the GEMM: whether the finite operands of `plans` (`m x k` times `k x n`
/// each) could make a product or a partial sum reach the float range, judged only
/// where reading them costs little next to the product (else `false`).
///
/// # Safety
/// Every element the plans address in `x` and `y` must lie in those buffers, of
/// `f64` elements when `wide`, else `f32`.
pub(super) unsafe fn operands_may_overflow(
    wide: bool,
    x: &BufPtr,
    y: &BufPtr,
    plans: &[Plan],
    (m, n, k): (i64, i64, i64),
) -> bool {
    if m <= 0 || n <= 0 || k <= 0 {
        return false;
    }
    let count = plans.len() as i64;
    let elems = count.saturating_mul(m.saturating_mul(k).saturating_add(k.saturating_mul(n)));
    let madds = count.saturating_mul(m).saturating_mul(n).saturating_mul(k);
    if elems > SCAN_ALWAYS as i64 && elems.saturating_mul(SCAN_RATIO as i64) > madds {
        return false;
    }
    let limit = if wide { f64::MAX } else { f64::from(f32::MAX) } / 4.0;
    plans.iter().any(|(_, _, xb, xc, yb, yc)| {
        // SAFETY: the plans' elements are in bounds by the caller's contract.
        let (mx, my) = unsafe { (max_finite(x, *xb, xc, m, k, wide), max_finite(y, *yb, yc, k, n, wide)) };
        mx * my * k as f64 > limit
    })
}

/// After the GEMM: whether any output of `plans` (`m x n` each) is `inf` or NaN.
///
/// # Safety
/// Every output element the plans address must lie in `out`, of `f64` elements when
/// `wide`, else `f32`.
pub(super) unsafe fn any_non_finite(wide: bool, out: &BufPtr, plans: &[Plan], m: i64, n: i64) -> bool {
    plans.iter().any(|(ob, oc, ..)| {
        (0..m).any(|i| {
            (0..n).any(|j| {
                let at = (ob + i * oc[0] + j * oc[1]) as isize;
                // SAFETY: an output element, in bounds by the caller's contract.
                unsafe {
                    if wide {
                        !(*(out.ptr as *const f64).offset(at)).is_finite()
                    } else {
                        !(*(out.ptr as *const f32).offset(at)).is_finite()
                    }
                }
            })
        })
    })
}
