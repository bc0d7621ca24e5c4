//! `.safetensors` files: an 8-byte little-endian header length, a JSON header
//! (`{"name": {"dtype", "shape", "data_offsets"}, "__metadata__": {...}}`), then the
//! tensors' bytes. Only the header is read whole; it is validated (by the
//! `safetensors` crate's `Metadata`, then against the file's length) before any
//! tensor's memory is reserved, and each tensor is then read into memory reserved
//! through the host memory limit.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use relax_ir::{DataType, TypeCode};
use safetensors::tensor::Metadata;
use safetensors::Dtype;

use super::Params;
use crate::error::{EngineError, Result};
use crate::value::{Tensor, Value};

/// The longest header accepted: the `safetensors` crate's own bound.
const MAX_HEADER: u64 = 100_000_000;

/// The engine's dtype of a safetensors dtype.
fn dtype_of(d: Dtype) -> Option<DataType> {
    Some(match d {
        Dtype::BOOL => DataType::BOOL,
        Dtype::U8 => DataType::UINT8,
        Dtype::I8 => DataType::INT8,
        Dtype::I16 => DataType::int(16),
        Dtype::U16 => DataType::uint(16),
        Dtype::I32 => DataType::INT32,
        Dtype::U32 => DataType::UINT32,
        Dtype::I64 => DataType::INT64,
        Dtype::U64 => DataType::uint(64),
        Dtype::F16 => DataType::FLOAT16,
        Dtype::BF16 => DataType::new(TypeCode::BFloat, 16, 1),
        Dtype::F32 => DataType::FLOAT32,
        Dtype::F64 => DataType::FLOAT64,
        _ => return None,
    })
}

pub(super) fn read(path: &Path) -> Result<Params> {
    let shown = path.display();
    let invalid = |m: String| EngineError::Invalid(format!("{shown}: {m}"));
    let mut file = std::fs::File::open(path).map_err(|e| EngineError::Invalid(format!("cannot read {shown}: {e}")))?;
    let file_len = file
        .metadata()
        .map_err(|e| EngineError::Invalid(format!("cannot read {shown}: {e}")))?
        .len();
    let mut len = [0u8; 8];
    file.read_exact(&mut len)
        .map_err(|_| invalid("not a .safetensors file (shorter than its 8-byte header length)".into()))?;
    let n = u64::from_le_bytes(len);
    if n > MAX_HEADER {
        return Err(invalid(format!(
            "not a .safetensors file: its header length {n} is over {MAX_HEADER} bytes"
        )));
    }
    if n > file_len - 8 {
        return Err(invalid(format!(
            "not a .safetensors file: its header length {n} is past the end of the file ({file_len} bytes)"
        )));
    }
    let mut header = Vec::new();
    header
        .try_reserve_exact(n as usize)
        .map_err(|_| EngineError::HostMemory(format!("{shown}: cannot allocate its {n}-byte header")))?;
    (&mut file)
        .take(n)
        .read_to_end(&mut header)
        .map_err(|e| invalid(format!("reading the header failed: {e}")))?;
    let text = std::str::from_utf8(&header).map_err(|_| invalid("the header is not UTF-8 text".into()))?;
    let meta: Metadata =
        serde_json::from_str(text).map_err(|e| invalid(format!("not a valid .safetensors header: {e}")))?;
    let data_start = 8 + n;
    let data_len = meta.data_len() as u64;
    if data_start.checked_add(data_len) != Some(file_len) {
        return Err(invalid(format!(
            "the header describes {data_len} bytes of tensor data, the file holds {}",
            file_len - data_start
        )));
    }
    let limit = relax_jit::memory::host_memory_limit();
    // Everything is checked before the first tensor is read: names, dtypes, shapes and
    // the total size.
    let names = meta.offset_keys();
    let mut plan = Vec::with_capacity(names.len());
    for name in names {
        let info = meta
            .info(&name)
            .ok_or_else(|| EngineError::Internal(format!("{shown}: tensor `{name}` vanished from its header")))?;
        let dtype = dtype_of(info.dtype).ok_or_else(|| {
            EngineError::Type(format!(
                "{shown}: tensor `{name}` has dtype {:?}, which the engine does not support \
                 (supported: BOOL, U8, I8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64)",
                info.dtype
            ))
        })?;
        let shape = info
            .shape
            .iter()
            .map(|&d| i64::try_from(d).ok())
            .collect::<Option<Vec<i64>>>()
            .filter(|s| {
                s.iter()
                    .filter(|&&d| d != 0)
                    .try_fold(1i64, |acc, &d| acc.checked_mul(d))
                    .is_some()
            })
            .ok_or_else(|| invalid(format!("tensor `{name}` has a shape {:?} that overflows", info.shape)))?;
        let (start, end) = info.data_offsets;
        plan.push((name, dtype, shape, start as u64, (end - start) as u64));
    }
    if data_len > limit {
        return Err(EngineError::HostMemory(format!(
            "{shown}: its tensors hold {data_len} bytes, over the host memory limit of {limit} bytes"
        )));
    }
    let mut params = Params::new();
    for (name, dtype, shape, start, size) in plan {
        let what = || format!("tensor `{name}` of {shown} ({dtype}, shape {shape:?})");
        let mut buf = crate::value::alloc_host(size as usize, what)?;
        file.seek(SeekFrom::Start(data_start + start))
            .and_then(|_| file.read_exact(&mut buf))
            .map_err(|e| invalid(format!("reading tensor `{name}` failed: {e}")))?;
        if dtype.is_bool() {
            buf.iter_mut().for_each(|b| *b = (*b != 0) as u8);
        }
        let tensor = Tensor::from_bytes(dtype, &shape, buf).map_err(|e| super::in_context(e, &what()))?;
        params.insert(name, Value::Tensor(tensor));
    }
    Ok(params)
}
