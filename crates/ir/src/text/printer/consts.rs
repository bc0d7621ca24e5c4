//! Number formatting and tensor-constant encoding shared by the parser and printer.

use crate::dtype::{DataType, TypeCode};
use crate::relax::NDArray;

/// Format a float as TVM prints it: integral values as `123.0`, others with 17
/// significant digits (`%.17g`), `inf`/`nan` as such.
pub fn format_float(v: f64) -> String {
    if v.is_nan() {
        return "nan".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".to_string() } else { "-inf".to_string() };
    }
    if v == v.trunc() && v.abs() < 1e300 {
        let s = format!("{v:.0}");
        return format!("{s}.0");
    }
    format_g17(v)
}

/// C's `%.17g`.
pub(crate) fn format_g17(v: f64) -> String {
    let sci = format!("{v:.16e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..17).contains(&exp) {
        let mant = trim_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (16 - exp).max(0) as usize;
        trim_zeros(&format!("{v:.decimals$}")).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// `f32` to IEEE half bits (round to nearest even).
pub fn f32_to_f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let mant = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if mant != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = mant | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rem = m & ((1 << shift) - 1);
        let mut r = m >> shift;
        if rem > half || (rem == half && (r & 1) == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (mant >> 13);
    let rem = mant & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && (r & 1) == 1) {
        r += 1;
    }
    sign | r as u16
}

/// IEEE half bits to `f32`.
pub fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x3ff) as u32;
    let bits = if exp == 0 {
        if mant == 0 {
            sign
        } else {
            let mut e = 127 - 15 + 1;
            let mut m = mant;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | ((e as u32) << 23) | ((m & 0x3ff) << 13)
        }
    } else if exp == 0x1f {
        sign | 0x7f80_0000 | (mant << 13)
    } else {
        sign | ((exp + 127 - 15) << 23) | (mant << 13)
    };
    f32::from_bits(bits)
}

/// A scalar element value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// An integer or boolean.
    Int(i64),
    /// A float.
    Float(f64),
}

/// Encode one element of `dtype` (little-endian); `None` for unsupported types.
pub fn encode(dtype: DataType, v: Scalar) -> Option<Vec<u8>> {
    let (i, f) = match v {
        Scalar::Int(i) => (i, i as f64),
        Scalar::Float(f) => (f as i64, f),
    };
    Some(match (dtype.code, dtype.bits) {
        (TypeCode::UInt, 1) => vec![(i != 0 || f != 0.0) as u8],
        (TypeCode::Int, 8) | (TypeCode::UInt, 8) => vec![i as u8],
        (TypeCode::Int, 16) | (TypeCode::UInt, 16) => (i as u16).to_le_bytes().to_vec(),
        (TypeCode::Int, 32) | (TypeCode::UInt, 32) => (i as u32).to_le_bytes().to_vec(),
        (TypeCode::Int, 64) | (TypeCode::UInt, 64) => i.to_le_bytes().to_vec(),
        (TypeCode::Float, 16) => f32_to_f16_bits(f as f32).to_le_bytes().to_vec(),
        (TypeCode::Float, 32) => (f as f32).to_le_bytes().to_vec(),
        (TypeCode::Float, 64) => f.to_le_bytes().to_vec(),
        (TypeCode::BFloat, 16) => crate::dtype::bf16_bits_from_f64(f).to_le_bytes().to_vec(),
        // sub-byte integers: wrapped to their bits, one per byte (sign- or zero-extended)
        (TypeCode::Int, 2 | 4) => vec![((i << (64 - dtype.bits)) >> (64 - dtype.bits)) as u8],
        (TypeCode::UInt, 2 | 4) => vec![(i as u8) & ((1u8 << dtype.bits) - 1)],
        _ => vec![dtype.mini_float()?.encode(f)],
    })
}

/// Decode element `idx` of an array.
pub fn decode(arr: &NDArray, idx: usize) -> Option<Scalar> {
    let n = arr.dtype.bytes().max(1);
    let b = arr.data.get(idx * n..idx * n + n)?;
    let d = arr.dtype;
    Some(match (d.code, d.bits) {
        (TypeCode::UInt, 1) => Scalar::Int((b[0] != 0) as i64),
        (TypeCode::Int, 8) => Scalar::Int(b[0] as i8 as i64),
        (TypeCode::UInt, 8) => Scalar::Int(b[0] as i64),
        (TypeCode::Int, 16) => Scalar::Int(i16::from_le_bytes([b[0], b[1]]) as i64),
        (TypeCode::UInt, 16) => Scalar::Int(u16::from_le_bytes([b[0], b[1]]) as i64),
        (TypeCode::Int, 32) => Scalar::Int(i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64),
        (TypeCode::UInt, 32) => Scalar::Int(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64),
        (TypeCode::Int, 64) | (TypeCode::UInt, 64) => Scalar::Int(i64::from_le_bytes(b.try_into().ok()?)),
        (TypeCode::Float, 16) => Scalar::Float(f16_bits_to_f32(u16::from_le_bytes([b[0], b[1]])) as f64),
        (TypeCode::Float, 32) => Scalar::Float(f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64),
        (TypeCode::Float, 64) => Scalar::Float(f64::from_le_bytes(b.try_into().ok()?)),
        (TypeCode::BFloat, 16) => Scalar::Float(f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16) as f64),
        (TypeCode::Int, 2 | 4) => Scalar::Int(b[0] as i8 as i64),
        (TypeCode::UInt, 2 | 4) => Scalar::Int(b[0] as i64),
        _ => Scalar::Float(d.mini_float()?.decode(b[0])),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_tvm() {
        assert_eq!(format_float(1.0), "1.0");
        assert_eq!(format_float(-0.0), "-0.0");
        assert_eq!(format_float(0.5), "0.5");
        assert_eq!(format_float(1e-5), "1.0000000000000001e-05");
        assert_eq!(format_float(0.1), "0.10000000000000001");
        assert_eq!(format_float(0.1f32 as f64), "0.10000000149011612");
        assert_eq!(format_float(1e20), "100000000000000000000.0");
        assert_eq!(format_float(2.3), "2.2999999999999998");
        assert_eq!(format_float(0.01), "0.01");
        assert_eq!(format_float(1e-7), "9.9999999999999995e-08");
        assert_eq!(format_float(f64::INFINITY), "inf");
    }

    #[test]
    fn half_round_trips() {
        for v in [0.0f32, 1.0, -2.5, 1.145_507_8, 65504.0, 6.103_515_6e-5, 5.960_464_5e-8] {
            assert_eq!(f16_bits_to_f32(f32_to_f16_bits(v)), v, "{v}");
        }
    }
}
