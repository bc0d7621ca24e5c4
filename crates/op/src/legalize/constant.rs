//! Element codecs for compile-time constants (`NDArray` bytes, little-endian)
//! used where `LegalizeOps` folds a call into an `R.const`.

use std::sync::Arc;

use relax_ir::relax::NDArray;
use relax_ir::{DataType, Expr, ExprKind};

/// The elements of `a` as `f64` (integers up to 2^53 exactly). `None` for
/// element types without a codec here (`float16`, vectors).
pub fn decode(a: &NDArray) -> Option<Vec<f64>> {
    let dt = a.dtype;
    if dt.lanes != 1 {
        return None;
    }
    let n = if dt.is_bool() {
        1
    } else {
        (dt.bits as usize).div_ceil(8)
    };
    if a.data.len() != a.numel() * n {
        return None;
    }
    a.data
        .chunks(n)
        .map(|c| {
            if dt.is_bool() {
                return Some(f64::from(c[0] != 0));
            }
            if dt.is_float() {
                return match dt.bits {
                    32 => Some(f32::from_le_bytes(c.try_into().ok()?) as f64),
                    64 => Some(f64::from_le_bytes(c.try_into().ok()?)),
                    _ => None,
                };
            }
            let mut buf = [0u8; 8];
            buf[..n].copy_from_slice(c);
            let raw = u64::from_le_bytes(buf);
            if dt.is_uint() {
                return Some(raw as f64);
            }
            let shift = 64 - 8 * n as u32;
            Some((((raw << shift) as i64) >> shift) as f64)
        })
        .collect()
}

/// `values` converted to `dtype` the way numpy's `astype` does for in-range
/// values (floats truncate toward zero into integers, non-zero is `true`) and
/// encoded. `None` for element types without a codec here.
pub fn encode(values: &[f64], dtype: DataType) -> Option<Vec<u8>> {
    if dtype.lanes != 1 {
        return None;
    }
    let mut out = Vec::new();
    for &v in values {
        if dtype.is_bool() {
            out.push(u8::from(v != 0.0));
        } else if dtype.is_float() {
            match dtype.bits {
                32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
                64 => out.extend_from_slice(&v.to_le_bytes()),
                _ => return None,
            }
        } else if dtype.is_int() || dtype.is_uint() {
            let n = (dtype.bits as usize).div_ceil(8);
            if !(1..=8).contains(&n) {
                return None;
            }
            // truncation toward zero, then two's complement wrap-around
            let mut i = v.trunc() as i128 as u64;
            if dtype.bits < 8 {
                // sub-byte integers: wrapped to their bits, held one per byte (sign-
                // or zero-extended)
                let s = 64 - u32::from(dtype.bits);
                i = if dtype.is_int() {
                    (((i << s) as i64) >> s) as u64
                } else {
                    (i << s) >> s
                };
            }
            out.extend_from_slice(&i.to_le_bytes()[..n]);
        } else {
            return None;
        }
    }
    Some(out)
}

/// An `R.const` of `shape` and `dtype` holding `values`.
pub fn constant(values: &[f64], shape: Vec<i64>, dtype: DataType) -> Option<Expr> {
    let data = encode(values, dtype)?;
    Some(Expr::new(ExprKind::Constant {
        data: Arc::new(NDArray { dtype, shape, data }),
    }))
}
