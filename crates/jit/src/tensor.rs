//! [`HostTensor`]: a dense, row-major host tensor (dtype + shape + bytes).

use relax_ir::{DataType, TypeCode};

use crate::error::{JitError, Result};

/// A dense row-major tensor in host memory. Elements are stored little-endian,
/// `bool` as one byte (0 or 1) per element. The byte storage is 8-byte aligned so
/// typed views of any supported element type are always aligned.
#[derive(Clone, PartialEq)]
pub struct HostTensor {
    dtype: DataType,
    shape: Vec<i64>,
    words: Vec<u64>,
    nbytes: usize,
}

impl std::fmt::Debug for HostTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostTensor({}, {:?})", self.dtype, self.shape)
    }
}

/// Scalar element types with a fixed host representation.
pub trait Element: bytemuck::Pod {
    /// The TIR data type of this element type.
    const DTYPE: DataType;
}
macro_rules! elem {
    ($($t:ty => $d:expr),*) => {$(impl Element for $t { const DTYPE: DataType = $d; })*};
}
elem!(f32 => DataType::FLOAT32, f64 => DataType::FLOAT64, i8 => DataType::INT8, i16 => DataType::INT16,
      i32 => DataType::INT32, i64 => DataType::INT64, u8 => DataType::UINT8, u16 => DataType::uint(16),
      u32 => DataType::UINT32, u64 => DataType::uint(64), half::f16 => DataType::FLOAT16);

/// Bytes per element of `dtype` on the host (`bool`: 1).
pub fn host_elem_bytes(dtype: DataType) -> Result<usize> {
    if dtype.lanes != 1 {
        return Err(JitError::UnsupportedDtype {
            dtype,
            context: "as a tensor element type (vector lanes)".into(),
        });
    }
    match (dtype.code, dtype.bits) {
        (TypeCode::UInt, 1) => Ok(1),
        // Sub-byte integers and floats narrower than 16 bits: one element per byte.
        (TypeCode::Int | TypeCode::UInt, 2 | 4) => Ok(1),
        _ if dtype.mini_float().is_some() => Ok(1),
        (TypeCode::Int | TypeCode::UInt, 8 | 16 | 32 | 64) => Ok(dtype.bits as usize / 8),
        (TypeCode::Float, 16 | 32 | 64) => Ok(dtype.bits as usize / 8),
        (TypeCode::BFloat, 16) => Ok(2),
        _ => Err(JitError::UnsupportedDtype {
            dtype,
            context: "as a tensor element type".into(),
        }),
    }
}

impl HostTensor {
    /// A zero-filled tensor.
    pub fn zeros(dtype: DataType, shape: &[i64]) -> Result<HostTensor> {
        let eb = host_elem_bytes(dtype)?;
        let n = numel(shape)?;
        let nbytes = n
            .checked_mul(eb)
            .ok_or_else(|| JitError::BadArgs("tensor size overflows".into()))?;
        let words = crate::memory::try_zeroed::<u64>(nbytes.div_ceil(8))
            .map_err(|e| JitError::HostMemory(format!("a {dtype} tensor of shape {shape:?}: {e}")))?;
        Ok(HostTensor {
            dtype,
            shape: shape.to_vec(),
            words,
            nbytes,
        })
    }
    /// A tensor from raw little-endian bytes.
    pub fn from_bytes(dtype: DataType, shape: &[i64], bytes: &[u8]) -> Result<HostTensor> {
        let mut t = HostTensor::zeros(dtype, shape)?;
        if bytes.len() != t.nbytes {
            return Err(JitError::BadArgs(format!(
                "{} bytes given for a {} tensor of shape {:?} ({} bytes)",
                bytes.len(),
                dtype,
                shape,
                t.nbytes
            )));
        }
        t.bytes_mut().copy_from_slice(bytes);
        Ok(t)
    }
    /// A tensor from typed values.
    pub fn from_slice<T: Element>(shape: &[i64], values: &[T]) -> Result<HostTensor> {
        HostTensor::from_bytes(T::DTYPE, shape, bytemuck::cast_slice(values))
    }
    /// A `bool` tensor.
    pub fn from_bools(shape: &[i64], values: &[bool]) -> Result<HostTensor> {
        let bytes: Vec<u8> = values.iter().map(|&b| b as u8).collect();
        HostTensor::from_bytes(DataType::BOOL, shape, &bytes)
    }
    /// A tensor of `dtype` from `f64` values (rounded / truncated to the type).
    pub fn from_f64s(dtype: DataType, shape: &[i64], values: &[f64]) -> Result<HostTensor> {
        let mut t = HostTensor::zeros(dtype, shape)?;
        if values.len() != t.numel() {
            return Err(JitError::BadArgs(format!(
                "{} values for shape {:?}",
                values.len(),
                shape
            )));
        }
        for (i, &v) in values.iter().enumerate() {
            t.set_f64(i, v);
        }
        Ok(t)
    }
    /// The element type.
    pub fn dtype(&self) -> DataType {
        self.dtype
    }
    /// The shape.
    pub fn shape(&self) -> &[i64] {
        &self.shape
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product::<i64>().max(0) as usize
    }
    /// The raw bytes.
    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice::<u64, u8>(&self.words)[..self.nbytes]
    }
    /// The raw bytes, mutable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let n = self.nbytes;
        &mut bytemuck::cast_slice_mut::<u64, u8>(&mut self.words)[..n]
    }
    /// A typed view; fails when `T` is not the element type.
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        if T::DTYPE != self.dtype {
            return Err(JitError::BadArgs(format!("tensor is {}, not {}", self.dtype, T::DTYPE)));
        }
        Ok(bytemuck::cast_slice(self.bytes()))
    }
    /// A mutable typed view.
    pub fn as_slice_mut<T: Element>(&mut self) -> Result<&mut [T]> {
        if T::DTYPE != self.dtype {
            return Err(JitError::BadArgs(format!("tensor is {}, not {}", self.dtype, T::DTYPE)));
        }
        Ok(bytemuck::cast_slice_mut(self.bytes_mut()))
    }
    /// Element `i` converted to `f64` (ints exactly up to 2^53, bool as 0/1).
    pub fn get_f64(&self, i: usize) -> f64 {
        read_f64(self.dtype, self.bytes(), i)
    }
    /// Element `i` converted to `i64` (floats truncated).
    pub fn get_i64(&self, i: usize) -> i64 {
        read_i64(self.dtype, self.bytes(), i)
    }
    /// Set element `i` from an `f64`.
    pub fn set_f64(&mut self, i: usize, v: f64) {
        let dt = self.dtype;
        write_f64(dt, self.bytes_mut(), i, v)
    }
    /// All elements as `f64`.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        (0..self.numel()).map(|i| self.get_f64(i)).collect()
    }
    /// Raw pointer to the data (for the host executor).
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.words.as_mut_ptr() as *mut u8
    }
}

impl<'a> From<&'a mut HostTensor> for crate::args::KernelArg<'a> {
    /// The tensor as a writable argument (read, and written in place).
    fn from(t: &'a mut HostTensor) -> Self {
        crate::args::KernelArg::Write {
            dtype: t.dtype,
            shape: &t.shape,
            bytes: &mut bytemuck::cast_slice_mut::<u64, u8>(&mut t.words)[..t.nbytes],
        }
    }
}

impl<'a> From<&'a HostTensor> for crate::args::KernelArg<'a> {
    /// The tensor as a read-only argument.
    fn from(t: &'a HostTensor) -> Self {
        crate::args::KernelArg::Read {
            dtype: t.dtype,
            shape: &t.shape,
            bytes: t.bytes(),
        }
    }
}

/// Product of a shape, checking for negative extents and overflow.
pub fn numel(shape: &[i64]) -> Result<usize> {
    let mut n: usize = 1;
    for &d in shape {
        if d < 0 {
            return Err(JitError::BadArgs(format!("negative extent in shape {shape:?}")));
        }
        n = n
            .checked_mul(d as usize)
            .ok_or_else(|| JitError::BadArgs(format!("shape {shape:?} overflows")))?;
    }
    Ok(n)
}

fn rd<const N: usize>(b: &[u8], i: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[i * N..i * N + N]);
    a
}

/// Read element `i` of a byte buffer of `dtype` as `f64`.
pub fn read_f64(dtype: DataType, b: &[u8], i: usize) -> f64 {
    match (dtype.code, dtype.bits) {
        (TypeCode::Float, 16) => half::f16::from_le_bytes(rd::<2>(b, i)).to_f64(),
        (TypeCode::BFloat, 16) => half::bf16::from_le_bytes(rd::<2>(b, i)).to_f64(),
        (TypeCode::Float, 32) => f32::from_le_bytes(rd::<4>(b, i)) as f64,
        (TypeCode::Float, 64) => f64::from_le_bytes(rd::<8>(b, i)),
        _ => match dtype.mini_float() {
            Some(f) => f.decode(b[i]),
            None => read_i64(dtype, b, i) as f64,
        },
    }
}

/// Read element `i` of a byte buffer of `dtype` as `i64`.
pub fn read_i64(dtype: DataType, b: &[u8], i: usize) -> i64 {
    match (dtype.code, dtype.bits) {
        (TypeCode::UInt, 1) => (b[i] != 0) as i64,
        (TypeCode::Int, 2 | 4 | 8) => crate::expr::wrap_int(b[i] as i8 as i64, dtype),
        (TypeCode::UInt, 2 | 4 | 8) => crate::expr::wrap_int(b[i] as i64, dtype),
        (TypeCode::Int, 16) => i16::from_le_bytes(rd::<2>(b, i)) as i64,
        (TypeCode::UInt, 16) => u16::from_le_bytes(rd::<2>(b, i)) as i64,
        (TypeCode::Int, 32) => i32::from_le_bytes(rd::<4>(b, i)) as i64,
        (TypeCode::UInt, 32) => u32::from_le_bytes(rd::<4>(b, i)) as i64,
        (TypeCode::Int | TypeCode::UInt, 64) => i64::from_le_bytes(rd::<8>(b, i)),
        _ => read_f64(dtype, b, i) as i64,
    }
}

/// Write element `i` of a byte buffer of `dtype` from an `f64`.
pub fn write_f64(dtype: DataType, b: &mut [u8], i: usize, v: f64) {
    match (dtype.code, dtype.bits) {
        (TypeCode::Float, 16) => b[i * 2..i * 2 + 2].copy_from_slice(&half::f16::from_f64(v).to_le_bytes()),
        (TypeCode::BFloat, 16) => {
            b[i * 2..i * 2 + 2].copy_from_slice(&relax_ir::dtype::bf16_bits_from_f64(v).to_le_bytes())
        }
        (TypeCode::Float, 32) => b[i * 4..i * 4 + 4].copy_from_slice(&(v as f32).to_le_bytes()),
        (TypeCode::Float, 64) => b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes()),
        _ if dtype.mini_float().is_some() => b[i] = dtype.mini_float().map_or(0, |f| f.encode(v)),
        _ => write_i64(dtype, b, i, if dtype.is_bool() { (v != 0.0) as i64 } else { v as i64 }),
    }
}

/// Write element `i` of a byte buffer of `dtype` from an `i64` (wrapping).
pub fn write_i64(dtype: DataType, b: &mut [u8], i: usize, v: i64) {
    match (dtype.code, dtype.bits) {
        (TypeCode::UInt, 1) => b[i] = (v != 0) as u8,
        (TypeCode::Int | TypeCode::UInt, 2 | 4 | 8) => b[i] = crate::expr::wrap_int(v, dtype) as u8,
        (TypeCode::Int | TypeCode::UInt, 16) => b[i * 2..i * 2 + 2].copy_from_slice(&(v as u16).to_le_bytes()),
        (TypeCode::Int | TypeCode::UInt, 32) => b[i * 4..i * 4 + 4].copy_from_slice(&(v as u32).to_le_bytes()),
        (TypeCode::Int | TypeCode::UInt, 64) => b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes()),
        _ => write_f64(dtype, b, i, v as f64),
    }
}
