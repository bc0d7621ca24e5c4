//! ONNX tensors (`TensorProto`) as Relax `NDArray`s: element types, the typed data
//! fields, `raw_data`, and external data read from beside the model. Every size and
//! offset is checked before anything is allocated or read.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path};

use relax_ir::{DataType, NDArray, TypeCode};

use crate::proto::{data_type as dt, TensorProto, DATA_LOCATION_EXTERNAL};
use crate::ImportError;

/// The largest tensor the importer reads (bytes): 64 GiB.
const MAX_TENSOR_BYTES: u64 = 1 << 36;

/// The Relax dtype of an ONNX element type, if it has one here.
pub fn dtype_of(onnx: i32) -> Option<DataType> {
    Some(match onnx {
        dt::FLOAT => DataType::FLOAT32,
        dt::UINT8 => DataType::UINT8,
        dt::INT8 => DataType::INT8,
        dt::UINT16 => DataType::uint(16),
        dt::INT16 => DataType::INT16,
        dt::INT32 => DataType::INT32,
        dt::INT64 => DataType::INT64,
        dt::BOOL => DataType::BOOL,
        dt::FLOAT16 => DataType::FLOAT16,
        dt::DOUBLE => DataType::FLOAT64,
        dt::UINT32 => DataType::UINT32,
        dt::UINT64 => DataType::uint(64),
        dt::BFLOAT16 => DataType::new(TypeCode::BFloat, 16, 1),
        dt::FLOAT8E4M3FN => DataType::new(TypeCode::Float8E4M3FN, 8, 1),
        dt::FLOAT8E4M3FNUZ => DataType::new(TypeCode::Float8E4M3FNUZ, 8, 1),
        dt::FLOAT8E5M2 => DataType::new(TypeCode::Float8E5M2, 8, 1),
        dt::FLOAT8E5M2FNUZ => DataType::new(TypeCode::Float8E5M2FNUZ, 8, 1),
        dt::FLOAT8E8M0 => DataType::new(TypeCode::Float8E8M0FNU, 8, 1),
        dt::FLOAT4E2M1 => DataType::new(TypeCode::Float4E2M1FN, 4, 1),
        dt::UINT4 => DataType::uint(4),
        dt::INT4 => DataType::int(4),
        dt::UINT2 => DataType::uint(2),
        dt::INT2 => DataType::int(2),
        _ => return None,
    })
}

/// The name ONNX gives an element type, for messages.
pub fn onnx_type_name(onnx: i32) -> String {
    let n = match onnx {
        dt::UNDEFINED => "UNDEFINED",
        dt::FLOAT => "FLOAT",
        dt::UINT8 => "UINT8",
        dt::INT8 => "INT8",
        dt::UINT16 => "UINT16",
        dt::INT16 => "INT16",
        dt::INT32 => "INT32",
        dt::INT64 => "INT64",
        dt::STRING => "STRING",
        dt::BOOL => "BOOL",
        dt::FLOAT16 => "FLOAT16",
        dt::DOUBLE => "DOUBLE",
        dt::UINT32 => "UINT32",
        dt::UINT64 => "UINT64",
        dt::COMPLEX64 => "COMPLEX64",
        dt::COMPLEX128 => "COMPLEX128",
        dt::BFLOAT16 => "BFLOAT16",
        dt::FLOAT8E4M3FN => "FLOAT8E4M3FN",
        dt::FLOAT8E4M3FNUZ => "FLOAT8E4M3FNUZ",
        dt::FLOAT8E5M2 => "FLOAT8E5M2",
        dt::FLOAT8E5M2FNUZ => "FLOAT8E5M2FNUZ",
        dt::UINT4 => "UINT4",
        dt::INT4 => "INT4",
        dt::FLOAT4E2M1 => "FLOAT4E2M1",
        dt::FLOAT8E8M0 => "FLOAT8E8M0",
        dt::UINT2 => "UINT2",
        dt::INT2 => "INT2",
        27 | 28 => "sub-byte float",
        _ => return format!("element type {onnx}"),
    };
    n.to_string()
}

/// Bytes per element as stored in `NDArray::data` (bool: one byte).
fn elem_bytes(d: DataType) -> u64 {
    d.bytes().max(1) as u64
}

/// The element count and byte size of a tensor of `dims`, checked.
pub fn checked_size(name: &str, dims: &[i64], dtype: DataType) -> Result<(usize, usize), ImportError> {
    let mut n: u64 = 1;
    for &d in dims {
        if d < 0 {
            return Err(ImportError::new(format!(
                "tensor `{name}` has a negative dimension {d} in {dims:?}"
            )));
        }
        n = n
            .checked_mul(d as u64)
            .ok_or_else(|| ImportError::new(format!("tensor `{name}`: the shape {dims:?} overflows")))?;
    }
    let bytes = n
        .checked_mul(elem_bytes(dtype))
        .filter(|&b| b <= MAX_TENSOR_BYTES)
        .ok_or_else(|| {
            ImportError::new(format!(
                "tensor `{name}`: {n} elements of {dtype} exceed the importer's limit of {MAX_TENSOR_BYTES} bytes"
            ))
        })?;
    let as_usize = |v: u64| usize::try_from(v).map_err(|_| ImportError::new(format!("tensor `{name}` is too large")));
    Ok((as_usize(n)?, as_usize(bytes)?))
}

/// Read `t` into an `NDArray`; external data is looked up relative to `base_dir`.
pub fn to_ndarray(t: &TensorProto, base_dir: Option<&Path>) -> Result<NDArray, ImportError> {
    let name = &t.name;
    let dtype = dtype_of(t.data_type).ok_or_else(|| {
        ImportError::new(format!(
            "tensor `{name}` has element type {}, which the importer does not support",
            onnx_type_name(t.data_type)
        ))
    })?;
    if t.segment.is_some() {
        return Err(ImportError::new(format!(
            "tensor `{name}` is segmented, which is not supported"
        )));
    }
    let (numel, held) = checked_size(name, &t.dims, dtype)?;
    // Sub-byte elements are packed in the file (low bits first), one per byte here.
    let per_byte = packed_per_byte(dtype);
    let nbytes = if per_byte > 1 { numel.div_ceil(per_byte) } else { held };
    let shape = t.dims.clone();
    let data = if t.data_location == DATA_LOCATION_EXTERNAL {
        unpack(dtype, &read_external(t, base_dir, nbytes)?, numel)
    } else if !t.raw_data.is_empty() || numel == 0 {
        if t.raw_data.len() != nbytes {
            return Err(ImportError::new(format!(
                "tensor `{name}`: raw_data holds {} bytes, its shape {:?} of {dtype} needs {nbytes}",
                t.raw_data.len(),
                t.dims
            )));
        }
        unpack(dtype, &t.raw_data, numel)
    } else if per_byte > 1 {
        // `int32_data`: one packed byte per value.
        if t.int32_data.len() != nbytes {
            return Err(count_mismatch(name, "int32_data", t.int32_data.len(), nbytes));
        }
        let packed: Vec<u8> = t.int32_data.iter().map(|&v| v as u8).collect();
        unpack(dtype, &packed, numel)
    } else {
        typed_data(t, dtype, numel)?
    };
    Ok(NDArray { dtype, shape, data })
}

/// Elements per byte of `dtype` in ONNX's packed form (4-bit types two, 2-bit types
/// four; others one).
fn packed_per_byte(dtype: DataType) -> usize {
    match dtype.bits {
        4 => 2,
        2 => 4,
        _ => 1,
    }
}

/// `numel` packed sub-byte elements as one byte each: integers sign- or
/// zero-extended, `float4_e2m1fn` codes in the low bits. Other dtypes as they are.
pub fn unpack(dtype: DataType, packed: &[u8], numel: usize) -> Vec<u8> {
    let per = packed_per_byte(dtype);
    if per == 1 {
        return packed.to_vec();
    }
    let bits = dtype.bits as u32;
    let mask = (1u8 << bits) - 1;
    (0..numel)
        .map(|i| {
            let b = packed.get(i / per).copied().unwrap_or(0);
            let v = (b >> ((i % per) as u32 * bits)) & mask;
            if dtype.is_int() && v >> (bits - 1) == 1 {
                v | !mask
            } else {
                v
            }
        })
        .collect()
}

/// One-byte-per-element data of a sub-byte `dtype` packed as ONNX stores it (low bits
/// first); other dtypes as they are.
pub fn pack(dtype: DataType, data: &[u8]) -> Vec<u8> {
    let per = packed_per_byte(dtype);
    if per == 1 {
        return data.to_vec();
    }
    let bits = dtype.bits as u32;
    let mask = (1u8 << bits) - 1;
    data.chunks(per)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u8, |acc, (k, &v)| acc | ((v & mask) << (k as u32 * bits)))
        })
        .collect()
}

fn count_mismatch(name: &str, field: &str, have: usize, want: usize) -> ImportError {
    ImportError::new(format!(
        "tensor `{name}`: {field} holds {have} values, its shape needs {want}"
    ))
}

/// The typed fields (`float_data`, `int32_data`, ...) as little-endian bytes.
fn typed_data(t: &TensorProto, dtype: DataType, numel: usize) -> Result<Vec<u8>, ImportError> {
    let name = &t.name;
    let check = |field: &str, have: usize| {
        if have == numel {
            Ok(())
        } else {
            Err(count_mismatch(name, field, have, numel))
        }
    };
    let mut out = Vec::with_capacity(numel.saturating_mul(dtype.bytes().max(1)));
    match t.data_type {
        dt::FLOAT => {
            check("float_data", t.float_data.len())?;
            t.float_data
                .iter()
                .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        }
        dt::DOUBLE => {
            check("double_data", t.double_data.len())?;
            t.double_data
                .iter()
                .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        }
        dt::INT64 => {
            check("int64_data", t.int64_data.len())?;
            t.int64_data
                .iter()
                .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        }
        dt::UINT32 | dt::UINT64 => {
            check("uint64_data", t.uint64_data.len())?;
            for &v in &t.uint64_data {
                if t.data_type == dt::UINT32 {
                    out.extend_from_slice(&(v as u32).to_le_bytes());
                } else {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
        dt::INT32 => {
            check("int32_data", t.int32_data.len())?;
            t.int32_data
                .iter()
                .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        }
        dt::INT8
        | dt::UINT8
        | dt::BOOL
        | dt::FLOAT8E4M3FN
        | dt::FLOAT8E4M3FNUZ
        | dt::FLOAT8E5M2
        | dt::FLOAT8E5M2FNUZ
        | dt::FLOAT8E8M0 => {
            check("int32_data", t.int32_data.len())?;
            t.int32_data.iter().for_each(|&v| out.push(v as u8));
        }
        dt::INT16 | dt::UINT16 | dt::FLOAT16 | dt::BFLOAT16 => {
            check("int32_data", t.int32_data.len())?;
            t.int32_data
                .iter()
                .for_each(|&v| out.extend_from_slice(&(v as u16).to_le_bytes()));
        }
        other => {
            return Err(ImportError::new(format!(
                "tensor `{name}`: element type {} has no typed data field here",
                onnx_type_name(other)
            )))
        }
    }
    Ok(out)
}

/// External data: `location` (a relative path beside the model), `offset`, `length`.
fn read_external(t: &TensorProto, base_dir: Option<&Path>, nbytes: usize) -> Result<Vec<u8>, ImportError> {
    let name = &t.name;
    let err = |m: String| ImportError::new(format!("tensor `{name}`: external data: {m}"));
    let mut location = None;
    let mut offset: u64 = 0;
    let mut length: Option<u64> = None;
    for e in &t.external_data {
        match e.key.as_str() {
            "location" => location = Some(e.value.clone()),
            "offset" => {
                offset = e
                    .value
                    .trim()
                    .parse()
                    .map_err(|_| err(format!("bad offset `{}`", e.value)))?
            }
            "length" => {
                length = Some(
                    e.value
                        .trim()
                        .parse()
                        .map_err(|_| err(format!("bad length `{}`", e.value)))?,
                )
            }
            _ => {}
        }
    }
    let location = location.ok_or_else(|| err("no `location`".to_string()))?;
    let rel = Path::new(&location);
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        || location.is_empty()
    {
        return Err(err(format!(
            "location `{location}` must be a relative path inside the model's directory"
        )));
    }
    let base = base_dir.ok_or_else(|| err("the model was not read from a file, so there is no directory".into()))?;
    let path = base.join(rel);
    if let Some(len) = length {
        if len != nbytes as u64 {
            return Err(err(format!(
                "length {len} differs from the {nbytes} bytes its shape needs"
            )));
        }
    }
    let mut f = File::open(&path).map_err(|e| err(format!("cannot open `{location}`: {e}")))?;
    let file_len = f
        .metadata()
        .map_err(|e| err(format!("cannot read `{location}`: {e}")))?
        .len();
    let end = offset
        .checked_add(nbytes as u64)
        .ok_or_else(|| err("offset + length overflows".into()))?;
    if end > file_len {
        return Err(err(format!(
            "bytes {offset}..{end} lie beyond the end of `{location}` ({file_len} bytes)"
        )));
    }
    f.seek(SeekFrom::Start(offset))
        .map_err(|e| err(format!("cannot seek in `{location}`: {e}")))?;
    let mut buf = vec![0u8; nbytes];
    f.read_exact(&mut buf)
        .map_err(|e| err(format!("cannot read `{location}`: {e}")))?;
    Ok(buf)
}

/// Element `i` of `a` as an `i64` (integer and bool dtypes; floats truncated).
pub fn elem_i64(a: &NDArray, i: usize) -> Option<i64> {
    let b = a.dtype.bytes().max(1);
    let s = a.data.get(i * b..(i + 1) * b)?;
    Some(match (a.dtype.code, a.dtype.bits) {
        (TypeCode::Int, 2 | 4 | 8) => s[0] as i8 as i64,
        (TypeCode::Int, 16) => i16::from_le_bytes([s[0], s[1]]) as i64,
        (TypeCode::Int, 32) => i32::from_le_bytes(s.try_into().ok()?) as i64,
        (TypeCode::Int, 64) => i64::from_le_bytes(s.try_into().ok()?),
        (TypeCode::UInt, 1 | 2 | 4 | 8) => s[0] as i64,
        (TypeCode::UInt, 16) => u16::from_le_bytes([s[0], s[1]]) as i64,
        (TypeCode::UInt, 32) => u32::from_le_bytes(s.try_into().ok()?) as i64,
        (TypeCode::UInt, 64) => u64::from_le_bytes(s.try_into().ok()?) as i64,
        _ => elem_f64(a, i)? as i64,
    })
}

/// Element `i` of `a` as an `f64`.
pub fn elem_f64(a: &NDArray, i: usize) -> Option<f64> {
    let b = a.dtype.bytes().max(1);
    let s = a.data.get(i * b..(i + 1) * b)?;
    Some(match (a.dtype.code, a.dtype.bits) {
        (TypeCode::Float, 32) => f32::from_le_bytes(s.try_into().ok()?) as f64,
        (TypeCode::Float, 64) => f64::from_le_bytes(s.try_into().ok()?),
        (TypeCode::Float, 16) => half::f16::from_bits(u16::from_le_bytes([s[0], s[1]])).to_f64(),
        (TypeCode::BFloat, 16) => half::bf16::from_bits(u16::from_le_bytes([s[0], s[1]])).to_f64(),
        _ if a.dtype.mini_float().is_some() => a.dtype.mini_float()?.decode(s[0]),
        _ => elem_i64(a, i)? as f64,
    })
}

/// Encode `v` as one element of `dtype` (little-endian), for constants the importer makes.
pub fn encode(dtype: DataType, v: f64) -> Vec<u8> {
    match (dtype.code, dtype.bits) {
        (TypeCode::Float, 32) => (v as f32).to_le_bytes().to_vec(),
        (TypeCode::Float, 64) => v.to_le_bytes().to_vec(),
        (TypeCode::Float, 16) => half::f16::from_f64(v).to_bits().to_le_bytes().to_vec(),
        (TypeCode::BFloat, 16) => relax_ir::dtype::bf16_bits_from_f64(v).to_le_bytes().to_vec(),
        (TypeCode::UInt, 1) => vec![(v != 0.0) as u8],
        _ if dtype.mini_float().is_some() => vec![dtype.mini_float().map_or(0, |f| f.encode(v))],
        (TypeCode::Int, 2 | 4) => vec![(((v as i64) << (64 - dtype.bits)) >> (64 - dtype.bits)) as u8],
        (TypeCode::UInt, 2 | 4) => vec![(v as i64 as u8) & ((1u8 << dtype.bits) - 1)],
        (_, 8) => vec![v as i64 as u8],
        (_, 16) => (v as i64 as u16).to_le_bytes().to_vec(),
        (_, 32) => (v as i64 as u32).to_le_bytes().to_vec(),
        _ => {
            if dtype.code == TypeCode::UInt {
                (v as u64).to_le_bytes().to_vec()
            } else {
                (v as i64).to_le_bytes().to_vec()
            }
        }
    }
}

/// Encode an integer element exactly (no round trip through `f64`).
pub fn encode_int(dtype: DataType, v: i64) -> Vec<u8> {
    match (dtype.code, dtype.bits) {
        (TypeCode::Int | TypeCode::UInt, 64) => v.to_le_bytes().to_vec(),
        (TypeCode::Int | TypeCode::UInt, _) => encode(dtype, v as f64),
        _ => encode(dtype, v as f64),
    }
}
