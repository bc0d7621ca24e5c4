//! The metadata section of a TVMScript text: `metadata = tvm.ir.load_json("""...""")`
//! holding the tensor constants referenced as `metadata["relax.expr.Constant"][i]`.
//!
//! The section is TVM's JSON object graph (`root`, `nodes`, `b64ndarrays`); tensors are
//! base64-encoded in TVM's NDArray save format (magic, device, ndim, dtype, shape,
//! byte size, little-endian data).

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use serde_json::Value;

use crate::dtype::{DataType, TypeCode};
use crate::relax::NDArray;

/// Constants by metadata key (`"relax.expr.Constant"`), in index order.
pub(crate) type Metadata = HashMap<String, Vec<Arc<NDArray>>>;

/// Why a metadata section could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MetadataError {
    /// What is wrong with the section.
    pub message: String,
}

impl MetadataError {
    /// An error with `message`.
    pub(crate) fn new(message: impl Into<String>) -> MetadataError {
        MetadataError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for MetadataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<String> for MetadataError {
    fn from(message: String) -> MetadataError {
        MetadataError { message }
    }
}

impl From<&str> for MetadataError {
    fn from(message: &str) -> MetadataError {
        MetadataError::new(message)
    }
}

const NDARRAY_MAGIC: u64 = 0xDD5E_40F0_96B4_A13F;

/// Decode a metadata JSON text.
pub(crate) fn decode(json: &str) -> Result<Metadata, MetadataError> {
    let v: Value = serde_json::from_str(json).map_err(|e| format!("the metadata section is not valid JSON: {e}"))?;
    let nodes = v["nodes"]
        .as_array()
        .ok_or("the metadata section has no `nodes` list")?;
    let arrays: Vec<Arc<NDArray>> = match v["b64ndarrays"].as_array() {
        Some(l) => l
            .iter()
            .map(|s| decode_ndarray(s.as_str().unwrap_or("")).map(Arc::new))
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let root = v["root"].as_u64().ok_or("the metadata section has no `root`")? as usize;
    let node = |i: usize| nodes.get(i).ok_or_else(|| format!("metadata node {i} does not exist"));
    let map = node(root)?;
    let keys = map["keys"].as_array().cloned().unwrap_or_default();
    let data = map["data"].as_array().cloned().unwrap_or_default();
    let mut out = Metadata::new();
    for (k, d) in keys.iter().zip(&data) {
        let key = match k {
            Value::String(s) => s.clone(),
            Value::Number(n) => node(n.as_u64().unwrap_or(u64::MAX) as usize)?["repr_str"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            _ => continue,
        };
        let list = node(d.as_u64().ok_or("bad metadata map value")? as usize)?;
        let mut consts = Vec::new();
        for item in list["data"].as_array().cloned().unwrap_or_default() {
            let n = node(item.as_u64().ok_or("bad metadata list item")? as usize)?;
            let idx: usize = match &n["attrs"]["data"] {
                Value::String(s) => s.parse().map_err(|_| MetadataError::from("bad constant data index"))?,
                Value::Number(x) => x.as_u64().unwrap_or(u64::MAX) as usize,
                _ => return Err("a metadata constant has no data".into()),
            };
            consts.push(
                arrays
                    .get(idx)
                    .cloned()
                    .ok_or_else(|| format!("metadata tensor {idx} does not exist"))?,
            );
        }
        out.insert(key, consts);
    }
    Ok(out)
}

fn decode_ndarray(b64: &str) -> Result<NDArray, MetadataError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| format!("a metadata tensor is not valid base64: {e}"))?;
    let mut r = Reader { b: &bytes, pos: 0 };
    if r.u64()? != NDARRAY_MAGIC {
        return Err("a metadata tensor does not start with TVM's NDArray magic number".into());
    }
    let _reserved = r.u64()?;
    let _device = (r.u32()?, r.u32()?);
    let ndim = r.u32()? as usize;
    let code = r.take(1)?[0];
    let bits = r.take(1)?[0];
    let lanes = u16::from_le_bytes([r.take(1)?[0], r.take(1)?[0]]);
    let code = match code {
        0 => TypeCode::Int,
        1 => TypeCode::UInt,
        2 => TypeCode::Float,
        4 => TypeCode::BFloat,
        10 => TypeCode::Float8E4M3FN,
        11 => TypeCode::Float8E4M3FNUZ,
        12 => TypeCode::Float8E5M2,
        13 => TypeCode::Float8E5M2FNUZ,
        14 => TypeCode::Float8E8M0FNU,
        17 => TypeCode::Float4E2M1FN,
        other => {
            return Err(MetadataError::new(format!(
                "unsupported metadata tensor type code {other}"
            )))
        }
    };
    if ndim > 32 {
        return Err("a metadata tensor has too many dimensions".into());
    }
    let mut shape = Vec::with_capacity(ndim);
    for _ in 0..ndim {
        shape.push(r.u64()? as i64);
    }
    let size = r.u64()? as usize;
    let data = r.take(size)?.to_vec();
    let dtype = DataType::new(code, bits, lanes);
    let arr = NDArray { dtype, shape, data };
    if arr.numel() * dtype.bytes().max(1) != arr.data.len() {
        return Err("a metadata tensor's data size does not match its shape".into());
    }
    Ok(arr)
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], MetadataError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or("a metadata tensor is truncated")?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u64(&mut self) -> Result<u64, MetadataError> {
        let s = self.take(8)?;
        Ok(u64::from_le_bytes(s.try_into().map_err(|_| "truncated")?))
    }
    fn u32(&mut self) -> Result<u32, MetadataError> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes(s.try_into().map_err(|_| "truncated")?))
    }
}

#[cfg(test)]
pub(crate) fn encode_ndarray_for_test(a: &NDArray) -> String {
    let mut b = Vec::new();
    b.extend(NDARRAY_MAGIC.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.extend(1u32.to_le_bytes());
    b.extend(0u32.to_le_bytes());
    b.extend((a.shape.len() as u32).to_le_bytes());
    let code = match a.dtype.code {
        TypeCode::Int => 0u8,
        TypeCode::UInt => 1,
        TypeCode::Float => 2,
        // TVM's codes (`DataType::TypeCode`).
        TypeCode::Float8E4M3FN => 10,
        TypeCode::Float8E4M3FNUZ => 11,
        TypeCode::Float8E5M2 => 12,
        TypeCode::Float8E5M2FNUZ => 13,
        TypeCode::Float8E8M0FNU => 14,
        TypeCode::Float4E2M1FN => 17,
        _ => 4,
    };
    b.extend([code, a.dtype.bits]);
    b.extend(a.dtype.lanes.to_le_bytes());
    for d in &a.shape {
        b.extend(d.to_le_bytes());
    }
    b.extend((a.data.len() as u64).to_le_bytes());
    b.extend(&a.data);
    base64::engine::general_purpose::STANDARD.encode(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_constants() {
        let arr = NDArray {
            dtype: DataType::FLOAT32,
            shape: vec![2],
            data: [1.5f32.to_le_bytes(), 2.0f32.to_le_bytes()].concat(),
        };
        let json = format!(
            r#"{{"root": 1, "nodes": [{{"type_key": ""}}, {{"type_key": "Map", "keys": ["relax.expr.Constant"], "data": [2]}},
            {{"type_key": "Array", "data": [3]}}, {{"type_key": "relax.expr.Constant", "attrs": {{"data": "0"}}}}],
            "b64ndarrays": ["{}"], "attrs": {{"tvm_version": "0.14.dev0"}}}}"#,
            encode_ndarray_for_test(&arr)
        );
        let m = decode(&json).unwrap();
        assert_eq!(*m["relax.expr.Constant"][0], arr);
        assert!(decode("{}").is_err());
        let src = format!(
            "metadata = tvm.ir.load_json(\"\"\"{json}\"\"\")\n@R.function\ndef f():\n    c = metadata[\"relax.expr.Constant\"][0]\n    return c\n"
        );
        let p = crate::text::parse(&src).unwrap();
        let printed = crate::text::print_program(&p);
        assert!(printed.contains("c = R.const([1.5, 2.0], \"float32\")"), "{printed}");
        let bad = src.replace("[0]\n", "[1]\n");
        let err = crate::text::parse(&bad).unwrap_err();
        assert!(err.message.contains("no constant relax.expr.Constant[1]"), "{err}");
        assert!(decode_ndarray("AAAA").is_err());
    }
}
