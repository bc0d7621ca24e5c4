//! The `.npy` format, read and written here rather than through a dependency: the
//! header is a small Python dict literal whose `shape` decides how much memory a
//! reader allocates, so it is parsed with bounds (length, nesting, dimensions, an
//! element count and byte size that must not overflow), and the data is read into
//! memory reserved through the host memory limit.
//!
//! Element types (`descr`): `|b1`; `|i1`, `<i2`, `<i4`, `<i8`; `|u1`, `<u2`, `<u4`,
//! `<u8`; `<f2`, `<f4`, `<f8` (big-endian `>` ones too, swapped on reading); and
//! `<V2`, which is how NumPy saves `ml_dtypes.bfloat16` (NumPy's own two-byte void
//! type is written `|V2`): it reads as `bfloat16`. Other `ml_dtypes` types are saved as
//! `<V1` (int4, uint4, int2, float8 variants alike) and are refused as ambiguous.
//! `fortran_order: True` data is reordered to row-major on reading.
//!
//! Writing: the same descrs, `bfloat16` as `<V2` (load it with
//! `np.load(f).view(ml_dtypes.bfloat16)`), and the sub-byte integers (`int4`,
//! `uint4`, `int2`, ...), which the engine holds one per byte, as `|i1` / `|u1`.

use std::io::Read;

use relax_ir::{DataType, TypeCode};

use crate::error::{EngineError, Result};
use crate::value::Tensor;

/// The longest header accepted (NumPy writes headers of at most a few hundred bytes).
pub const MAX_HEADER: usize = 1 << 16;

/// The most dimensions a shape may have.
pub const MAX_NDIM: usize = 64;

const MAGIC: &[u8] = b"\x93NUMPY";

/// A parsed `.npy` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The element type.
    pub dtype: DataType,
    /// Whether the element bytes are big-endian (`>` in the descr).
    pub big_endian: bool,
    /// Whether the data is in column-major (Fortran) order.
    pub fortran_order: bool,
    /// The dimensions.
    pub shape: Vec<i64>,
    /// The number of elements (checked not to overflow).
    pub numel: u64,
    /// The size of the data in bytes (checked not to overflow).
    pub data_bytes: u64,
    /// Where the data starts: the magic, version, length and header dict.
    pub data_offset: usize,
}

/// The dtypes `.npy` files may hold, for messages.
pub const SUPPORTED: &str = "bool, int8..int64, uint8..uint64, float16, float32, float64, \
                             bfloat16 (ml_dtypes' '<V2')";

/// The length of the preamble (magic, version, header length) and of the header dict,
/// from the first 12 bytes (or fewer for version 1) of a `.npy` file.
fn preamble(bytes: &[u8]) -> Result<(usize, usize)> {
    if bytes.len() < 10 || !bytes.starts_with(MAGIC) {
        return Err(invalid("not a .npy file (no \\x93NUMPY magic string)"));
    }
    let (len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            let b: [u8; 4] = bytes
                .get(8..12)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| EngineError::Invalid("truncated .npy header".into()))?;
            (u32::from_le_bytes(b) as usize, 12)
        }
        v => return Err(invalid(format!("unsupported .npy format version {v}"))),
    };
    if len > MAX_HEADER {
        return Err(invalid(format!(
            "the .npy header is {len} bytes long (at most {MAX_HEADER})"
        )));
    }
    Ok((start, len))
}

/// Parse the header at the start of `bytes` (which need not hold the data).
pub fn parse_header(bytes: &[u8]) -> Result<Header> {
    let (start, len) = preamble(bytes)?;
    let text = bytes
        .get(start..start + len)
        .ok_or_else(|| EngineError::Invalid("truncated .npy header".into()))?;
    let text = std::str::from_utf8(text).map_err(|_| EngineError::Invalid("the .npy header is not text".into()))?;
    let dict = parse_dict(text)?;
    let get = |key: &str| {
        dict.iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .ok_or_else(|| invalid(format!("the .npy header has no '{key}'")))
    };
    let (dtype, big_endian) = match get("descr")? {
        Lit::Str(d) => descr_dtype(d)?,
        _ => {
            return Err(invalid(
                "the .npy header's 'descr' is not a simple dtype string (structured arrays are not supported)",
            ))
        }
    };
    let fortran_order = match get("fortran_order")? {
        Lit::Bool(b) => *b,
        _ => return Err(invalid("the .npy header's 'fortran_order' is not True or False")),
    };
    let dims = match get("shape")? {
        Lit::Tuple(d) => d,
        _ => return Err(invalid("the .npy header's 'shape' is not a tuple")),
    };
    let shown = || {
        let d: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
        d.join(", ")
    };
    let mut numel: u64 = 1;
    for &d in dims {
        numel = numel.checked_mul(d).ok_or_else(|| {
            invalid(format!(
                "the .npy shape ({}) has an element count that overflows",
                shown()
            ))
        })?;
    }
    let data_bytes = numel
        .checked_mul(dtype.bytes() as u64)
        .filter(|&b| b <= i64::MAX as u64)
        .ok_or_else(|| invalid(format!("the .npy shape ({}) has a byte size that overflows", shown())))?;
    let shape = dims
        .iter()
        .map(|&d| {
            i64::try_from(d)
                .map_err(|_| invalid(format!("the .npy shape ({}) has a dimension that overflows", shown())))
        })
        .collect::<Result<Vec<i64>>>()?;
    // As NumPy and ndarray require, the product of the non-zero dimensions fits an
    // `isize` even when a zero dimension makes the array empty: strides stay finite.
    shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1i64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            EngineError::Invalid(format!(
                "the .npy shape ({}) is too large: its dimensions' product overflows",
                shown()
            ))
        })?;
    Ok(Header {
        dtype,
        big_endian,
        fortran_order,
        shape,
        numel,
        data_bytes,
        data_offset: start + len,
    })
}

/// A tensor from the complete bytes of a `.npy` file; the data must be exactly the
/// size the header claims.
pub fn decode(bytes: &[u8]) -> Result<Tensor> {
    let h = parse_header(bytes)?;
    let data = &bytes[h.data_offset.min(bytes.len())..];
    if data.len() as u64 != h.data_bytes {
        return Err(EngineError::Invalid(format!(
            "the .npy shape {} needs {} bytes of data, the file has {}",
            super::shape_text(&h.shape),
            h.data_bytes,
            data.len()
        )));
    }
    let mut buf = crate::value::alloc_host(data.len(), || format!("a {} tensor of shape {:?}", h.dtype, h.shape))?;
    buf.copy_from_slice(data);
    finish(&h, buf)
}

/// Read one `.npy` array from `r` (for example an entry of an `.npz` file), taking at
/// most `budget` bytes of data: the header is read and checked first, the data's
/// memory is reserved through the host memory limit, and exactly the claimed bytes are
/// read, then the end of the stream is checked. `size`, when known, is the stream's
/// whole length, which must match the header's claim (`container` names the stream in
/// that error: `file`, `entry`).
pub fn read_stream(r: &mut dyn Read, size: Option<u64>, budget: u64, container: &str) -> Result<Tensor> {
    let io = |e: std::io::Error| EngineError::Invalid(format!("reading the .npy data failed: {e}"));
    let mut pre = [0u8; 12];
    r.read_exact(&mut pre[..10])
        .map_err(|_| EngineError::Invalid("truncated .npy header".into()))?;
    if pre.starts_with(MAGIC) && matches!(pre[6], 2 | 3) {
        r.read_exact(&mut pre[10..12])
            .map_err(|_| EngineError::Invalid("truncated .npy header".into()))?;
    }
    let (start, len) = preamble(&pre)?;
    let mut head = pre[..start].to_vec();
    head.resize(start + len, 0);
    r.read_exact(&mut head[start..])
        .map_err(|_| EngineError::Invalid("truncated .npy header".into()))?;
    let h = parse_header(&head)?;
    let what = format!("a {} tensor of shape {}", h.dtype, super::shape_text(&h.shape));
    if let Some(size) = size {
        let have = size.saturating_sub(h.data_offset as u64);
        if size < h.data_offset as u64 || have != h.data_bytes {
            return Err(EngineError::Invalid(format!(
                "the .npy shape {} needs {} bytes of data, the {container} has {have}",
                super::shape_text(&h.shape),
                h.data_bytes
            )));
        }
    }
    if h.data_bytes > budget {
        return Err(EngineError::HostMemory(format!(
            "{what} ({} bytes) is over the host memory left to read it ({budget} bytes of the limit of {})",
            h.data_bytes,
            relax_jit::memory::host_memory_limit()
        )));
    }
    let n = usize::try_from(h.data_bytes).map_err(|_| EngineError::HostMemory(format!("{what} is too large")))?;
    let mut buf = crate::value::alloc_host(n, || what.clone())?;
    r.read_exact(&mut buf).map_err(|e| {
        EngineError::Invalid(format!(
            "the .npy data of {what} is shorter than its {} bytes ({e})",
            h.data_bytes
        ))
    })?;
    let mut more = [0u8; 1];
    match r.read(&mut more).map_err(io)? {
        0 => {}
        _ => {
            return Err(EngineError::Invalid(format!(
                "the .npy data of {what} is longer than its {} bytes",
                h.data_bytes
            )))
        }
    }
    finish(&h, buf)
}

/// The tensor of a checked header and its data bytes: byte order, bool values and
/// Fortran order normalised.
fn finish(h: &Header, mut data: Vec<u8>) -> Result<Tensor> {
    let size = h.dtype.bytes();
    if h.big_endian && size > 1 {
        data.chunks_exact_mut(size).for_each(|c| c.reverse());
    }
    if h.dtype.is_bool() {
        data.iter_mut().for_each(|b| *b = (*b != 0) as u8);
    }
    if h.fortran_order && h.shape.len() > 1 && h.numel > 1 {
        data = fortran_to_c(&data, &h.shape, size)?;
    }
    Tensor::from_bytes(h.dtype, &h.shape, data)
}

/// Reorder column-major element bytes of `shape` into row-major order.
fn fortran_to_c(data: &[u8], shape: &[i64], size: usize) -> Result<Vec<u8>> {
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let mut out = crate::value::alloc_host(data.len(), || "a reordered .npy array".to_string())?;
    // Column-major strides (in elements).
    let mut fstride = vec![1usize; dims.len()];
    for k in 1..dims.len() {
        fstride[k] = fstride[k - 1] * dims[k - 1];
    }
    let mut idx = vec![0usize; dims.len()];
    for dst in out.chunks_exact_mut(size) {
        let src: usize = idx.iter().zip(&fstride).map(|(i, s)| i * s).sum();
        dst.copy_from_slice(&data[src * size..(src + 1) * size]);
        // Next row-major index.
        for k in (0..dims.len()).rev() {
            idx[k] += 1;
            if idx[k] < dims[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    Ok(out)
}

/// An [`EngineError::Invalid`] with `message` (a malformed `.npy` file).
fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::Invalid(message.into())
}

/// The dtype of a `descr` string, and whether it is big-endian.
fn descr_dtype(descr: &str) -> Result<(DataType, bool)> {
    let bad = || invalid(format!("unsupported .npy dtype '{descr}' (supported: {SUPPORTED})"));
    let (order, code) = match descr.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &descr[1..]),
        _ => ('=', descr),
    };
    let big = order == '>' || (order == '=' && cfg!(target_endian = "big"));
    let dtype = match code {
        "b1" | "?" => DataType::BOOL,
        "i1" => DataType::INT8,
        "i2" => DataType::int(16),
        "i4" => DataType::INT32,
        "i8" => DataType::INT64,
        "u1" => DataType::UINT8,
        "u2" => DataType::uint(16),
        "u4" => DataType::UINT32,
        "u8" => DataType::uint(64),
        "f2" => DataType::FLOAT16,
        "f4" => DataType::FLOAT32,
        "f8" => DataType::FLOAT64,
        "V2" if order == '<' => DataType::new(TypeCode::BFloat, 16, 1),
        "V1" => {
            return Err(invalid(format!(
                "the .npy dtype '{descr}' is ambiguous: ml_dtypes saves int4, uint4, int2 and the float8 \
                 types all as '<V1'; save the array as int8/uint8 (or float32) instead"
            )))
        }
        _ => return Err(bad()),
    };
    Ok((dtype, big))
}

/// The `descr` written for `dtype`.
pub fn dtype_descr(dtype: DataType) -> Result<&'static str> {
    let d = match (dtype.code, dtype.bits) {
        _ if dtype.lanes != 1 => None,
        _ if dtype.is_bool() => Some("|b1"),
        (TypeCode::Int, 1..=8) => Some("|i1"),
        (TypeCode::Int, 16) => Some("<i2"),
        (TypeCode::Int, 32) => Some("<i4"),
        (TypeCode::Int, 64) => Some("<i8"),
        (TypeCode::UInt, 2..=8) => Some("|u1"),
        (TypeCode::UInt, 16) => Some("<u2"),
        (TypeCode::UInt, 32) => Some("<u4"),
        (TypeCode::UInt, 64) => Some("<u8"),
        (TypeCode::Float, 16) => Some("<f2"),
        (TypeCode::Float, 32) => Some("<f4"),
        (TypeCode::Float, 64) => Some("<f8"),
        (TypeCode::BFloat, 16) => Some("<V2"),
        _ => None,
    };
    d.ok_or_else(|| EngineError::Type(format!("a {dtype} tensor cannot be written as .npy")))
}

/// The bytes of a `.npy` file (format 1.0, header padded to 64 bytes as NumPy does)
/// holding `tensor`.
pub fn encode(tensor: &Tensor) -> Result<Vec<u8>> {
    let descr = dtype_descr(tensor.dtype())?;
    let mut dict = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}",
        super::shape_text(tensor.shape())
    );
    // Version 1.0 has a 2-byte header length; longer headers take version 2.0.
    let (version, pre) = if dict.len() + 64 < u16::MAX as usize {
        (1u8, 10)
    } else {
        (2u8, 12)
    };
    while !(pre + dict.len() + 1).is_multiple_of(64) {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = Vec::new();
    out.try_reserve_exact(pre + dict.len() + tensor.nbytes())
        .map_err(|_| EngineError::HostMemory(format!("cannot allocate the .npy bytes of {}", tensor.describe())))?;
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    tensor.with_bytes(|b| out.extend_from_slice(b))?;
    Ok(out)
}

// ---------------------------------------------------------------- the header dict

/// A value of the header dict.
#[derive(Debug)]
enum Lit {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
}

/// Parse a flat Python dict literal of string keys and string, `True`/`False` or
/// integer-tuple values.
fn parse_dict(text: &str) -> Result<Vec<(String, Lit)>> {
    let not_dict =
        || invalid("the .npy header is not a flat dict {'descr': ..., 'fortran_order': ..., 'shape': (...)}");
    let mut p = Lexer {
        s: text.as_bytes(),
        i: 0,
    };
    p.skip_ws();
    if !p.eat(b'{') {
        return Err(not_dict());
    }
    let mut out: Vec<(String, Lit)> = Vec::new();
    loop {
        p.skip_ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string().ok_or_else(not_dict)?;
        p.skip_ws();
        if !p.eat(b':') {
            return Err(not_dict());
        }
        p.skip_ws();
        let value = match p.peek() {
            Some(b'\'' | b'"') => Lit::Str(p.string().ok_or_else(not_dict)?),
            Some(b'(') => Lit::Tuple(p.tuple(&key)?),
            Some(b'T') if p.word("True") => Lit::Bool(true),
            Some(b'F') if p.word("False") => Lit::Bool(false),
            _ => {
                if key == "descr" {
                    return Err(invalid(
                        "the .npy header's 'descr' is not a simple dtype string (structured arrays are not supported)",
                    ));
                }
                return Err(not_dict());
            }
        };
        if out.iter().any(|(k, _)| *k == key) {
            return Err(invalid(format!("the .npy header has '{key}' twice")));
        }
        out.push((key, value));
        p.skip_ws();
        if p.eat(b',') {
            continue;
        }
        p.skip_ws();
        if p.eat(b'}') {
            break;
        }
        return Err(not_dict());
    }
    p.skip_ws();
    if p.i != p.s.len() {
        return Err(not_dict());
    }
    Ok(out)
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn word(&mut self, w: &str) -> bool {
        if self.s[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            true
        } else {
            false
        }
    }
    /// A quoted string without escapes.
    fn string(&mut self) -> Option<String> {
        let q = self.peek().filter(|&c| c == b'\'' || c == b'"')?;
        self.i += 1;
        let start = self.i;
        while let Some(c) = self.peek() {
            if c == q {
                let s = std::str::from_utf8(&self.s[start..self.i]).ok()?.to_string();
                self.i += 1;
                return Some(s);
            }
            if c == b'\\' {
                return None;
            }
            self.i += 1;
        }
        None
    }
    /// `(d0, d1, ...)` of non-negative integers (a trailing comma and Python 2's `L`
    /// suffix allowed).
    fn tuple(&mut self, key: &str) -> Result<Vec<u64>> {
        self.i += 1;
        let mut dims = Vec::new();
        loop {
            self.skip_ws();
            if self.eat(b')') {
                return Ok(dims);
            }
            let start = self.i;
            while self
                .peek()
                .is_some_and(|c| !matches!(c, b',' | b')') && !c.is_ascii_whitespace())
            {
                self.i += 1;
            }
            let tok = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("?");
            let digits = tok.strip_suffix('L').unwrap_or(tok);
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return Err(invalid(format!(
                    "the .npy header's '{key}' has a dimension `{tok}` that is not a non-negative integer"
                )));
            }
            let d: u64 = digits.parse().map_err(|_| {
                invalid(format!(
                    "the .npy header's '{key}' has a dimension {tok} that overflows"
                ))
            })?;
            dims.push(d);
            if dims.len() > MAX_NDIM {
                return Err(invalid(format!("the .npy shape has more than {MAX_NDIM} dimensions")));
            }
            self.skip_ws();
            if self.eat(b',') {
                continue;
            }
            self.skip_ws();
            if self.eat(b')') {
                return Ok(dims);
            }
            return Err(invalid(format!("the .npy header's '{key}' is not a tuple of integers")));
        }
    }
}
