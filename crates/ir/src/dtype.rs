//! TIR data types (`DataType` in the spec).

use std::fmt;
use std::str::FromStr;

/// The type code of a [`DataType`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TypeCode {
    /// Signed integer.
    Int,
    /// Unsigned integer (`bool` is `UInt(1)`).
    UInt,
    /// IEEE float.
    Float,
    /// bfloat16.
    BFloat,
    /// Opaque handle; `Handle(0, 0)` is `void`.
    Handle,
    /// `float8_e4m3fn`: 4 exponent bits (bias 7), 3 mantissa bits, no infinity, NaN
    /// `S.1111.111`.
    Float8E4M3FN,
    /// `float8_e4m3fnuz`: bias 8, no infinity, no negative zero, NaN `0x80`.
    Float8E4M3FNUZ,
    /// `float8_e5m2`: IEEE-like (bias 15, infinities and NaNs).
    Float8E5M2,
    /// `float8_e5m2fnuz`: bias 16, no infinity, no negative zero, NaN `0x80`.
    Float8E5M2FNUZ,
    /// `float8_e8m0fnu`: an unsigned power of two `2^(e - 127)`, NaN `0xff`, no zero.
    Float8E8M0FNU,
    /// `float4_e2m1fn`: 2 exponent bits (bias 1), 1 mantissa bit, no infinity or NaN.
    Float4E2M1FN,
}

/// How a float type narrower than 16 bits spends its special encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MiniSpecials {
    /// IEEE: an all-ones exponent is infinity (mantissa 0) or NaN.
    Ieee,
    /// `fn`: finite only; the all-ones pattern (either sign) is NaN.
    Fn,
    /// `fnuz`: finite only, no negative zero; `0x80` is the only NaN.
    Fnuz,
    /// No infinity and no NaN (`float4_e2m1fn`).
    None,
    /// `e8m0fnu`: no sign, no mantissa, no zero; `0xff` is NaN.
    E8M0,
}

/// The layout of a float type narrower than 16 bits (`float8_*`, `float4_e2m1fn`):
/// the element is held in the low `1 + ebits + mbits` bits of one byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MiniFloat {
    /// Exponent bits.
    pub ebits: u32,
    /// Mantissa bits.
    pub mbits: u32,
    /// Exponent bias.
    pub bias: i32,
    /// Infinities, NaNs and zeros.
    pub specials: MiniSpecials,
}

impl MiniFloat {
    /// The largest finite value.
    pub fn max(&self) -> f64 {
        let emax_field = (1i32 << self.ebits) - 1;
        let (e, m) = match self.specials {
            MiniSpecials::Ieee => (emax_field - 1, (1u32 << self.mbits) - 1),
            MiniSpecials::Fn => (emax_field, (1u32 << self.mbits) - 2),
            MiniSpecials::Fnuz | MiniSpecials::None => (emax_field, (1u32 << self.mbits) - 1),
            MiniSpecials::E8M0 => (emax_field - 1, 0),
        };
        (1.0 + f64::from(m) / f64::from(1u32 << self.mbits)) * 2f64.powi(e - self.bias)
    }
    fn sign_bit(&self) -> u8 {
        if self.specials == MiniSpecials::E8M0 {
            0
        } else {
            1 << (self.ebits + self.mbits)
        }
    }
    /// The value of the encoding `bits` (bits above the format's width ignored).
    pub fn decode(&self, bits: u8) -> f64 {
        let (eb, mb) = (self.ebits, self.mbits);
        if self.specials == MiniSpecials::E8M0 {
            return if bits == 0xff {
                f64::NAN
            } else {
                2f64.powi(i32::from(bits) - self.bias)
            };
        }
        let width = 1 + eb + mb;
        let bits = if width >= 8 { bits } else { bits & ((1u8 << width) - 1) };
        let neg = bits & self.sign_bit() != 0;
        let e = i32::from((bits >> mb) & ((1u8 << eb) - 1));
        let m = u32::from(bits & ((1u8 << mb) - 1));
        let all_e = (1i32 << eb) - 1;
        let mag = match self.specials {
            MiniSpecials::Ieee if e == all_e => {
                if m == 0 {
                    f64::INFINITY
                } else {
                    f64::NAN
                }
            }
            MiniSpecials::Fn if e == all_e && m == (1 << mb) - 1 => f64::NAN,
            MiniSpecials::Fnuz if neg && e == 0 && m == 0 => return f64::NAN,
            _ if e == 0 => f64::from(m) * 2f64.powi(1 - self.bias - mb as i32),
            _ => (1.0 + f64::from(m) / f64::from(1u32 << mb)) * 2f64.powi(e - self.bias),
        };
        if neg {
            -mag
        } else {
            mag
        }
    }
    /// `v` rounded to the nearest value of the format (ties to even), as `ml_dtypes`
    /// converts (no saturation): past the largest finite value (after rounding) an
    /// IEEE format gives an infinity, `fn`/`fnuz` formats NaN, `float4_e2m1fn` (which
    /// has neither) its largest value; NaN is the format's NaN (`float4_e2m1fn`:
    /// the zero of the opposite sign, as `ml_dtypes`); `fnuz` formats have no `-0`.
    pub fn encode(&self, v: f64) -> u8 {
        if self.specials == MiniSpecials::E8M0 {
            return self.encode_e8m0(v);
        }
        let (eb, mb) = (self.ebits, self.mbits);
        let all_e = (1u8 << eb) - 1;
        let sign = if v.is_sign_negative() { self.sign_bit() } else { 0 };
        let nan = match self.specials {
            MiniSpecials::Ieee => sign | (all_e << mb) | (1 << (mb - 1)),
            MiniSpecials::Fn => sign | (all_e << mb) | ((1 << mb) - 1),
            MiniSpecials::Fnuz => 0x80,
            MiniSpecials::None | MiniSpecials::E8M0 => sign ^ self.sign_bit(),
        };
        if v.is_nan() {
            return nan;
        }
        let a = v.abs();
        let emin = 1 - self.bias;
        // The spacing of values around `a` (subnormals share the smallest exponent's).
        let e = if a == 0.0 || a.is_infinite() {
            emin
        } else {
            ((a.to_bits() >> 52) as i32 - 1023).max(emin)
        };
        let q = 2f64.powi(e - mb as i32);
        let r = if a.is_infinite() {
            f64::INFINITY
        } else {
            (a / q).round_ties_even() * q
        };
        let zero = if self.specials == MiniSpecials::Fnuz { 0 } else { sign };
        if r == 0.0 {
            return zero;
        }
        if r > self.max() {
            return match self.specials {
                MiniSpecials::Ieee => sign | (all_e << mb),
                MiniSpecials::None => sign | (all_e << mb) | ((1 << mb) - 1),
                _ => nan,
            };
        }
        // `r` is a value of the format: its exponent field and mantissa.
        let re = ((r.to_bits() >> 52) as i32 - 1023).max(emin);
        let field = if (r.to_bits() >> 52) as i32 - 1023 < emin {
            0
        } else {
            re - emin + 1
        };
        let m = (r / 2f64.powi(re - mb as i32)) as u32 & ((1 << mb) - 1);
        sign | ((field as u8) << mb) | m as u8
    }
    fn encode_e8m0(&self, v: f64) -> u8 {
        if v.is_nan() || v <= 0.0 || v.is_infinite() {
            return 0xff;
        }
        // The nearest power of two, ties (a mantissa of exactly 1.5) to the larger one.
        let e = (v.to_bits() >> 52) as i32 - 1023;
        let m = v / 2f64.powi(e);
        let e = if m >= 1.5 { e + 1 } else { e };
        (e + self.bias).clamp(0, 0xfe) as u8
    }
}

/// A scalar or vector data type: code, bits and lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DataType {
    /// The type code.
    pub code: TypeCode,
    /// Bits per lane.
    pub bits: u8,
    /// Number of lanes (1 for scalars, 0 for `void`).
    pub lanes: u16,
}

impl DataType {
    /// `bool` (`UInt(1)`).
    pub const BOOL: DataType = DataType::new(TypeCode::UInt, 1, 1);
    /// `int8`.
    pub const INT8: DataType = DataType::new(TypeCode::Int, 8, 1);
    /// `int16`.
    pub const INT16: DataType = DataType::new(TypeCode::Int, 16, 1);
    /// `int32`.
    pub const INT32: DataType = DataType::new(TypeCode::Int, 32, 1);
    /// `int64`.
    pub const INT64: DataType = DataType::new(TypeCode::Int, 64, 1);
    /// `uint8`.
    pub const UINT8: DataType = DataType::new(TypeCode::UInt, 8, 1);
    /// `uint32`.
    pub const UINT32: DataType = DataType::new(TypeCode::UInt, 32, 1);
    /// `float16`.
    pub const FLOAT16: DataType = DataType::new(TypeCode::Float, 16, 1);
    /// `float32`.
    pub const FLOAT32: DataType = DataType::new(TypeCode::Float, 32, 1);
    /// `float64`.
    pub const FLOAT64: DataType = DataType::new(TypeCode::Float, 64, 1);
    /// `handle` (an opaque 64-bit pointer).
    pub const HANDLE: DataType = DataType::new(TypeCode::Handle, 64, 1);
    /// `void`: the unknown data type of Relax (`Handle(0, 0)`).
    pub const VOID: DataType = DataType::new(TypeCode::Handle, 0, 0);

    /// A data type from its parts.
    pub const fn new(code: TypeCode, bits: u8, lanes: u16) -> DataType {
        DataType { code, bits, lanes }
    }
    /// `int<bits>`.
    pub const fn int(bits: u8) -> DataType {
        DataType::new(TypeCode::Int, bits, 1)
    }
    /// `uint<bits>`.
    pub const fn uint(bits: u8) -> DataType {
        DataType::new(TypeCode::UInt, bits, 1)
    }
    /// `float<bits>`.
    pub const fn float(bits: u8) -> DataType {
        DataType::new(TypeCode::Float, bits, 1)
    }
    /// Whether this is `void` (unknown dtype in Relax).
    pub fn is_void(&self) -> bool {
        self.code == TypeCode::Handle && self.bits == 0
    }
    /// Whether this is `bool`.
    pub fn is_bool(&self) -> bool {
        self.code == TypeCode::UInt && self.bits == 1
    }
    /// Signed integer.
    pub fn is_int(&self) -> bool {
        self.code == TypeCode::Int
    }
    /// Unsigned integer, including bool.
    pub fn is_uint(&self) -> bool {
        self.code == TypeCode::UInt
    }
    /// Signed or unsigned integer (including bool).
    pub fn is_integer(&self) -> bool {
        matches!(self.code, TypeCode::Int | TypeCode::UInt)
    }
    /// Float, bfloat or one of the float types narrower than 16 bits.
    pub fn is_float(&self) -> bool {
        matches!(self.code, TypeCode::Float | TypeCode::BFloat) || self.mini_float().is_some()
    }
    /// The layout of a float type narrower than 16 bits (`float8_*`, `float4_e2m1fn`).
    pub fn mini_float(&self) -> Option<MiniFloat> {
        let (ebits, mbits, bias, specials) = match self.code {
            TypeCode::Float8E4M3FN => (4, 3, 7, MiniSpecials::Fn),
            TypeCode::Float8E4M3FNUZ => (4, 3, 8, MiniSpecials::Fnuz),
            TypeCode::Float8E5M2 => (5, 2, 15, MiniSpecials::Ieee),
            TypeCode::Float8E5M2FNUZ => (5, 2, 16, MiniSpecials::Fnuz),
            TypeCode::Float8E8M0FNU => (8, 0, 127, MiniSpecials::E8M0),
            TypeCode::Float4E2M1FN => (2, 1, 1, MiniSpecials::None),
            _ => return None,
        };
        Some(MiniFloat {
            ebits,
            mbits,
            bias,
            specials,
        })
    }
    /// An integer type narrower than 8 bits (`int4`, `uint4`, `int2`, `uint2`; not
    /// `bool`), held one element per byte, sign- or zero-extended.
    pub fn is_sub_byte_int(&self) -> bool {
        self.is_integer() && self.bits > 1 && self.bits < 8
    }
    /// A non-void handle.
    pub fn is_handle(&self) -> bool {
        self.code == TypeCode::Handle && self.bits != 0
    }
    /// The same type with `lanes` lanes.
    pub fn with_lanes(&self, lanes: u16) -> DataType {
        DataType { lanes, ..*self }
    }
    /// The scalar element type (one lane).
    pub fn element_of(&self) -> DataType {
        self.with_lanes(1)
    }
    /// Bytes per element (rounded up; bool counts as one byte).
    pub fn bytes(&self) -> usize {
        (self.bits as usize).div_ceil(8) * (self.lanes.max(1) as usize)
    }
}

/// The error of parsing a dtype string.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown data type \"{0}\"")]
pub struct ParseDataTypeError(pub String);

/// The names TVM gives the float types narrower than 16 bits, with their codes and bits
/// (longest first where one name starts another).
const MINI_FLOAT_NAMES: [(&str, TypeCode, u8); 6] = [
    ("float8_e4m3fnuz", TypeCode::Float8E4M3FNUZ, 8),
    ("float8_e4m3fn", TypeCode::Float8E4M3FN, 8),
    ("float8_e5m2fnuz", TypeCode::Float8E5M2FNUZ, 8),
    ("float8_e5m2", TypeCode::Float8E5M2, 8),
    ("float8_e8m0fnu", TypeCode::Float8E8M0FNU, 8),
    ("float4_e2m1fn", TypeCode::Float4E2M1FN, 4),
];

impl FromStr for DataType {
    type Err = ParseDataTypeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseDataTypeError(s.to_string());
        match s {
            "bool" => return Ok(DataType::BOOL),
            "void" | "" => return Ok(DataType::VOID),
            "handle" => return Ok(DataType::HANDLE),
            _ => {}
        }
        for (name, code, bits) in MINI_FLOAT_NAMES {
            if let Some(rest) = s.strip_prefix(name) {
                let lanes = match rest.strip_prefix('x') {
                    None if rest.is_empty() => 1,
                    Some(l) => l.parse::<u16>().map_err(|_| err())?,
                    None => return Err(err()),
                };
                if lanes == 0 {
                    return Err(err());
                }
                return Ok(DataType::new(code, bits, lanes));
            }
        }
        let (base, lanes) = match s.split_once('x') {
            Some((b, l)) if !b.is_empty() && b.ends_with(|c: char| c.is_ascii_digit()) => {
                (b, l.parse::<u16>().map_err(|_| err())?)
            }
            _ => (s, 1),
        };
        let (code, rest) = if let Some(r) = base.strip_prefix("uint") {
            (TypeCode::UInt, r)
        } else if let Some(r) = base.strip_prefix("int") {
            (TypeCode::Int, r)
        } else if let Some(r) = base.strip_prefix("bfloat") {
            (TypeCode::BFloat, r)
        } else if let Some(r) = base.strip_prefix("float") {
            (TypeCode::Float, r)
        } else if base == "bool" {
            return Ok(DataType::BOOL.with_lanes(lanes));
        } else {
            return Err(err());
        };
        let bits = if rest.is_empty() {
            match code {
                TypeCode::BFloat => 16,
                _ => 32,
            }
        } else {
            rest.parse::<u8>().map_err(|_| err())?
        };
        if bits == 0 || lanes == 0 {
            return Err(err());
        }
        Ok(DataType::new(code, bits, lanes))
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_void() {
            return write!(f, "void");
        }
        if *self == DataType::BOOL {
            return write!(f, "bool");
        }
        match self.code {
            TypeCode::Int => write!(f, "int{}", self.bits)?,
            TypeCode::UInt if self.bits == 1 => write!(f, "bool")?,
            TypeCode::UInt => write!(f, "uint{}", self.bits)?,
            TypeCode::Float => write!(f, "float{}", self.bits)?,
            TypeCode::BFloat => write!(f, "bfloat{}", self.bits)?,
            TypeCode::Handle => write!(f, "handle")?,
            code => {
                let name = MINI_FLOAT_NAMES
                    .iter()
                    .find(|(_, c, _)| *c == code)
                    .map_or("float8", |(n, _, _)| n);
                write!(f, "{name}")?
            }
        }
        if self.lanes > 1 {
            write!(f, "x{}", self.lanes)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_names() {
        for s in [
            "bool",
            "void",
            "handle",
            "int8",
            "int64",
            "uint8",
            "float16",
            "float32x4",
            "bfloat16",
        ] {
            let d: DataType = s.parse().unwrap();
            assert_eq!(d.to_string(), s);
        }
        assert_eq!("float".parse::<DataType>().unwrap(), DataType::FLOAT32);
        assert!("floaty".parse::<DataType>().is_err());
        assert!("int0".parse::<DataType>().is_err());
    }

    /// The values `ENCODED` rounds, in order.
    const VALUES: [f64; 33] = [
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.0,
        -1.0,
        448.0,
        464.0,
        465.0,
        240.0,
        248.0,
        57344.0,
        61440.0,
        61439.0,
        6.0,
        7.0,
        1e6,
        -1e6,
        1e-7,
        -1e-7,
        0.001953125,
        0.0009765625,
        0.0029296875,
        7.62939453125e-06,
        3.814697265625e-06,
        1.1444091796875e-05,
        0.25,
        0.75,
        1.25,
        0.4765625,
        0.1,
        -3.5,
    ];

    /// `np.array(VALUES, np.float64).astype(ml_dtypes.<name>).view(np.uint8)`
    /// (ml_dtypes 0.6.0): special values, overflow, rounding ties (464 and 248 for
    /// e4m3, 61440 for e5m2, 0.25 and 0.75 for e2m1, 2^-18 for e5m2fnuz), subnormals.
    const ENCODED: [(&str, [u8; 33]); 5] = [
        (
            "float8_e4m3fn",
            [
                0x00, 0x80, 0x7f, 0x7f, 0xff, 0x38, 0xb8, 0x7e, 0x7e, 0x7f, 0x77, 0x78, 0x7f, 0x7f, 0x7f, 0x4c, 0x4e,
                0x7f, 0xff, 0x00, 0x80, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x28, 0x34, 0x3a, 0x2f, 0x1d, 0xc6,
            ],
        ),
        (
            "float8_e4m3fnuz",
            [
                0x00, 0x00, 0x80, 0x80, 0x80, 0x40, 0xc0, 0x80, 0x80, 0x80, 0x7f, 0x80, 0x80, 0x80, 0x80, 0x54, 0x56,
                0x80, 0x80, 0x00, 0x00, 0x02, 0x01, 0x03, 0x00, 0x00, 0x00, 0x30, 0x3c, 0x42, 0x37, 0x25, 0xce,
            ],
        ),
        (
            "float8_e5m2",
            [
                0x00, 0x80, 0x7e, 0x7c, 0xfc, 0x3c, 0xbc, 0x5f, 0x5f, 0x5f, 0x5c, 0x5c, 0x7b, 0x7c, 0x7b, 0x46, 0x47,
                0x7c, 0xfc, 0x00, 0x80, 0x18, 0x14, 0x1a, 0x00, 0x00, 0x01, 0x34, 0x3a, 0x3d, 0x38, 0x2e, 0xc3,
            ],
        ),
        (
            "float8_e5m2fnuz",
            [
                0x00, 0x00, 0x80, 0x80, 0x80, 0x40, 0xc0, 0x63, 0x63, 0x63, 0x60, 0x60, 0x7f, 0x80, 0x7f, 0x4a, 0x4b,
                0x80, 0x80, 0x00, 0x00, 0x1c, 0x18, 0x1e, 0x01, 0x00, 0x02, 0x38, 0x3e, 0x41, 0x3c, 0x32, 0xc7,
            ],
        ),
        (
            "float4_e2m1fn",
            [
                0x00, 0x08, 0x08, 0x07, 0x0f, 0x02, 0x0a, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07,
                0x07, 0x0f, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x01, 0x00, 0x0e,
            ],
        ),
    ];

    #[test]
    fn mini_float_names_round_trip() {
        for (name, _) in ENCODED {
            let d: DataType = name.parse().unwrap();
            assert_eq!(d.to_string(), name);
            assert!(d.is_float() && d.mini_float().is_some(), "{name}");
            assert_eq!(d.bytes(), 1);
            let v: DataType = format!("{name}x4").parse().unwrap();
            assert_eq!((v.lanes, v.to_string()), (4, format!("{name}x4")));
        }
        assert_eq!(
            "float8_e8m0fnu".parse::<DataType>().unwrap().to_string(),
            "float8_e8m0fnu"
        );
        assert_eq!("float4_e2m1fn".parse::<DataType>().unwrap().bits, 4);
        assert!("float8_e4m3fnq".parse::<DataType>().is_err());
        assert!("float8_e4m3fnx0".parse::<DataType>().is_err());
        for s in ["int4", "uint4", "int2", "uint2"] {
            let d: DataType = s.parse().unwrap();
            assert!(d.is_sub_byte_int() && !d.is_float());
            assert_eq!(d.to_string(), s);
        }
    }

    #[test]
    fn mini_float_encodings_match_ml_dtypes() {
        for (name, want) in ENCODED {
            let f = name.parse::<DataType>().unwrap().mini_float().unwrap();
            for (i, (&v, &b)) in VALUES.iter().zip(want.iter()).enumerate() {
                assert_eq!(f.encode(v), b, "{name}: value {i} ({v})");
            }
        }
    }

    /// Every code decodes as ml_dtypes does: NaN codes, infinity codes, the largest
    /// value, the smallest positive one, the sum of all finite magnitudes; and every
    /// code other than NaN encodes back to itself (`fnuz`: `0x80` is NaN).
    #[test]
    fn mini_float_decodings_match_ml_dtypes() {
        type Row = (&'static str, &'static [u32], &'static [u32], f64, f64, f64);
        let rows: [Row; 5] = [
            ("float8_e4m3fn", &[127, 255], &[], 448.0, 0.001953125, 10815.75),
            ("float8_e4m3fnuz", &[128], &[], 240.0, 0.0009765625, 5887.875),
            (
                "float8_e5m2",
                &[125, 126, 127, 253, 254, 255],
                &[124, 252],
                57344.0,
                1.52587890625e-05,
                720895.9995117188,
            ),
            (
                "float8_e5m2fnuz",
                &[128],
                &[],
                57344.0,
                7.62939453125e-06,
                720895.9997558594,
            ),
            ("float4_e2m1fn", &[], &[], 6.0, 0.5, 36.0),
        ];
        for (name, nans, infs, max, minpos, sum) in rows {
            let f = name.parse::<DataType>().unwrap().mini_float().unwrap();
            let n = if name.starts_with("float4") { 16u32 } else { 256 };
            let vals: Vec<f64> = (0..n).map(|c| f.decode(c as u8)).collect();
            let got_nans: Vec<u32> = (0..n).filter(|&c| vals[c as usize].is_nan()).collect();
            let got_infs: Vec<u32> = (0..n).filter(|&c| vals[c as usize].is_infinite()).collect();
            assert_eq!((got_nans.as_slice(), got_infs.as_slice()), (nans, infs), "{name}");
            let finite: Vec<f64> = vals.iter().copied().filter(|v| v.is_finite()).collect();
            assert_eq!(f.max(), max, "{name}");
            assert_eq!(finite.iter().copied().fold(f64::MIN, f64::max), max, "{name}");
            let mp = finite.iter().copied().filter(|&v| v > 0.0).fold(f64::MAX, f64::min);
            assert_eq!(mp, minpos, "{name}");
            assert_eq!(finite.iter().map(|v| v.abs()).sum::<f64>(), sum, "{name}");
            for c in 0..n {
                if !vals[c as usize].is_nan() {
                    assert_eq!(u32::from(f.encode(vals[c as usize])), c, "{name}: code {c:#x}");
                }
            }
        }
    }
}

/// The bits of the `bfloat16` nearest `v` (ties to even), rounded once: through `f32`
/// rounded to odd, which keeps what the second rounding needs. (Rounding to `f32`
/// first and then to `bfloat16` can round a value just above a tie down; truncating
/// an `f32`'s low half rounds toward zero.) NaN stays a quiet NaN; values past
/// `bfloat16`'s range become infinities.
pub fn bf16_bits_from_f64(v: f64) -> u16 {
    let f = v as f32;
    let mut b = f.to_bits();
    if f.is_nan() {
        return ((b >> 16) as u16) | 0x0040;
    }
    if !f.is_infinite() && f64::from(f) != v {
        // Inexact: the truncation toward zero, with its last bit set (round to odd).
        if f64::from(f).abs() > v.abs() {
            b -= 1;
        }
        b |= 1;
    }
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

#[cfg(test)]
mod bf16_tests {
    use super::bf16_bits_from_f64;

    #[test]
    fn bfloat16_rounds_once_to_nearest_even() {
        // 0.1: 0x3DCCCCCD as f32, bfloat16 0x3DCD (0.10009765625), not the truncated 0x3DCC.
        assert_eq!(bf16_bits_from_f64(0.1), 0x3DCD);
        assert_eq!(bf16_bits_from_f64(1.0), 0x3F80);
        assert_eq!(bf16_bits_from_f64(-2.0), 0xC000);
        // Exactly halfway between 1.0 (0x3F80) and the next (0x3F81): ties to even.
        assert_eq!(bf16_bits_from_f64(1.0 + 1.0 / 256.0), 0x3F80);
        assert_eq!(bf16_bits_from_f64(1.0 + 3.0 / 256.0), 0x3F82);
        // Just above the tie, by less than an f32 ulp: rounds up (double rounding
        // through f32 would land on the tie and round down to even).
        assert_eq!(bf16_bits_from_f64(1.0 + 1.0 / 256.0 + 1e-12), 0x3F81);
        assert_eq!(bf16_bits_from_f64(f64::INFINITY), 0x7F80);
        assert_eq!(bf16_bits_from_f64(-1e39), 0xFF80);
        assert_eq!(bf16_bits_from_f64(3.4e38), 0x7F80);
        assert_eq!(bf16_bits_from_f64(3.38e38), 0x7F7E);
        assert!(bf16_bits_from_f64(f64::NAN) & 0x7FFF > 0x7F80);
        assert_eq!(bf16_bits_from_f64(-0.0), 0x8000);
        assert_eq!(bf16_bits_from_f64(9.183549615799121e-41), 0x0001);
    }
}
