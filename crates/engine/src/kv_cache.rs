//! The attention KV cache of TVM's runtime (`AttentionKVCacheLegacy`), which
//! `tvm.relax.frontend.nn.KVCache` exports to:
//!
//! - `vm.builtin.attention_kv_cache_create(init, reserve_shape, init_fill_count)`: a cache
//!   whose storage has `reserve_shape` (rows × unit shape) on the device of `init`, holding a
//!   copy of `init`; its fill count is then `init_fill_count` (when it is not negative);
//! - `vm.builtin.attention_kv_cache_append(cache, value)`: `value`'s rows copied after the
//!   filled ones, in place (the same cache object is returned); the capacity doubles until
//!   they fit, keeping the rows already there;
//! - `vm.builtin.attention_kv_cache_view(cache[, shape])`: the filled rows as a tensor
//!   sharing the cache's memory (`shape[0]` must equal the fill count, the other
//!   dimensions the unit shape);
//! - `vm.builtin.attention_kv_cache_update(cache, value)`: `value` replaces the filled rows
//!   (`value.shape[0]` must equal the fill count);
//! - `vm.builtin.attention_kv_cache_array_popn(caches, n)` and
//!   `vm.builtin.attention_kv_cache_array_clear(caches)`.
//!
//! A cache lives where its tensors live: host memory, or a GPU buffer, where appending is a
//! copy between device buffers (no round trip through the host).

use std::sync::{Arc, Mutex};

use relax_ir::DataType;

use crate::engine::{CopyKind, Place};
use crate::error::{EngineError, Result};
use crate::interp::Interp;
use crate::place::device_buffer;
use crate::value::{Object, Tensor, Value};

/// The type name of cache objects (as TVM registers it).
pub const KV_CACHE_TYPE: &str = "relax.vm.AttentionKVCacheLegacy";

/// The packed functions this module implements.
pub(crate) const BUILTINS: &[&str] = &[
    "vm.builtin.attention_kv_cache_create",
    "vm.builtin.attention_kv_cache_append",
    "vm.builtin.attention_kv_cache_view",
    "vm.builtin.attention_kv_cache_update",
    "vm.builtin.attention_kv_cache_array_popn",
    "vm.builtin.attention_kv_cache_array_clear",
];

/// An attention KV cache: a tensor of `capacity` rows of which the first `fill` are
/// valid. Shared by every [`Value`] that holds it (appending mutates it in place).
pub struct KvCache {
    state: Mutex<KvState>,
}

struct KvState {
    /// Storage: `[capacity, unit...]`.
    data: Tensor,
    /// Rows filled.
    fill: i64,
}

impl KvCache {
    /// The number of filled rows.
    pub fn fill_count(&self) -> i64 {
        self.state.lock().map(|s| s.fill).unwrap_or(0)
    }
    /// The number of rows the storage holds before it has to grow.
    pub fn capacity(&self) -> i64 {
        self.state
            .lock()
            .map(|s| s.data.shape().first().copied().unwrap_or(0))
            .unwrap_or(0)
    }
    /// The element type.
    pub fn dtype(&self) -> Option<DataType> {
        self.state.lock().ok().map(|s| s.data.dtype())
    }
    /// Whether the cache's storage is in device memory.
    pub fn is_on_device(&self) -> bool {
        self.state.lock().map(|s| s.data.is_on_device()).unwrap_or(false)
    }
    /// The filled rows, as a tensor sharing the cache's memory.
    pub fn view(&self) -> Result<Tensor> {
        let s = self.lock()?;
        let mut shape = s.data.shape().to_vec();
        shape[0] = s.fill;
        Ok(view_rows(&s.data, shape))
    }
    fn lock(&self) -> Result<std::sync::MutexGuard<'_, KvState>> {
        self.state
            .lock()
            .map_err(|_| EngineError::Internal("KV cache lock poisoned".into()))
    }
}

/// The cache behind a value, if it is one.
pub fn as_kv_cache(v: &Value) -> Option<&KvCache> {
    match v {
        Value::Object(o) => o.downcast::<KvCache>(),
        _ => None,
    }
}

fn invalid(name: &str, msg: String) -> EngineError {
    EngineError::PackedFunc {
        name: name.to_string(),
        message: msg,
    }
}

/// The bytes of one row (the product of the unit shape, times the element size).
fn row_bytes(t: &Tensor) -> usize {
    t.shape().iter().skip(1).map(|&d| d.max(0) as usize).product::<usize>() * t.dtype().bytes()
}

fn view_rows(data: &Tensor, shape: Vec<i64>) -> Tensor {
    Tensor::from_storage(
        data.dtype(),
        shape,
        data.vdevice().cloned(),
        data.0.storage.clone(),
        data.0.offset,
    )
}

/// Evaluate the cache builtin `name` (one of [`BUILTINS`]) on `args`. With an
/// interpreter, device tensors are allocated and copied on their device; without one
/// (a direct call of the packed function from Rust) only host tensors are accepted.
pub(crate) fn call(it: Option<&Interp>, name: &str, args: &[Value]) -> Result<Value> {
    let short = name.strip_prefix("vm.builtin.attention_kv_cache_").unwrap_or(name);
    let cache_arg = |i: usize| -> Result<&KvCache> {
        args.get(i).and_then(as_kv_cache).ok_or_else(|| {
            invalid(
                name,
                format!(
                    "argument {i} must be a KV cache ({KV_CACHE_TYPE}), got {}",
                    args.get(i).map(Value::describe).unwrap_or_else(|| "nothing".into())
                ),
            )
        })
    };
    let tensor_arg = |i: usize| -> Result<&Tensor> {
        args.get(i)
            .and_then(Value::as_tensor)
            .ok_or_else(|| invalid(name, format!("argument {i} must be a tensor")))
    };
    match short {
        "create" => {
            if args.len() != 3 {
                return Err(invalid(name, format!("expects 3 arguments, got {}", args.len())));
            }
            let init = tensor_arg(0)?;
            let reserve = args[1]
                .as_shape()
                .ok_or_else(|| invalid(name, "argument 1 must be a shape (the reserved shape)".into()))?;
            let init_fill = args[2]
                .as_int()
                .ok_or_else(|| invalid(name, "argument 2 must be an integer (the initial fill count)".into()))?;
            if reserve.is_empty() || reserve.iter().any(|&d| d < 0) {
                return Err(invalid(name, format!("invalid reserved shape {reserve:?}")));
            }
            // On the device of `init`; a host constant (the engine folds `R.zeros` into
            // one) goes where the program's unplaced tensors go.
            let on_gpu = match (device_buffer(init)?.is_some(), it) {
                (true, _) => true,
                (false, Some(it)) if init.vdevice().is_none() => it.alloc_place(None)?.0 == Place::Gpu,
                (false, _) => false,
            };
            let data = alloc_like(it, init, reserve, on_gpu)?;
            let cache = KvCache {
                state: Mutex::new(KvState { data, fill: 0 }),
            };
            {
                let mut s = cache.lock()?;
                append(it, name, &mut s, init)?;
                if init_fill >= 0 {
                    if init_fill > s.data.shape()[0] {
                        return Err(invalid(
                            name,
                            format!(
                                "initial fill count {init_fill} exceeds the reserved {} rows",
                                s.data.shape()[0]
                            ),
                        ));
                    }
                    s.fill = init_fill;
                }
            }
            Ok(Value::Object(Object::new(KV_CACHE_TYPE, cache)))
        }
        "append" | "update" => {
            if args.len() != 2 {
                return Err(invalid(name, format!("expects 2 arguments, got {}", args.len())));
            }
            let cache = cache_arg(0)?;
            let value = tensor_arg(1)?;
            let mut s = cache.lock()?;
            if short == "update" {
                if value.shape().first() != Some(&s.fill) {
                    return Err(invalid(
                        name,
                        format!(
                            "the value has {:?} rows but the cache holds {}",
                            value.shape().first(),
                            s.fill
                        ),
                    ));
                }
                s.fill = 0;
            }
            append(it, name, &mut s, value)?;
            drop(s);
            Ok(args[0].clone())
        }
        "view" => {
            if args.is_empty() || args.len() > 2 {
                return Err(invalid(name, format!("expects 1 or 2 arguments, got {}", args.len())));
            }
            let cache = cache_arg(0)?;
            let s = cache.lock()?;
            let data_shape = s.data.shape();
            let shape: Vec<i64> = match args.get(1) {
                None => std::iter::once(s.fill).chain(data_shape[1..].iter().copied()).collect(),
                Some(v) => v
                    .as_shape()
                    .ok_or_else(|| invalid(name, "argument 1 must be a shape".into()))?
                    .to_vec(),
            };
            if shape.len() != data_shape.len() {
                return Err(invalid(
                    name,
                    format!(
                        "a view of rank {} of a cache of rank {} (cache shape {:?})",
                        shape.len(),
                        data_shape.len(),
                        data_shape
                    ),
                ));
            }
            if shape[0] != s.fill {
                return Err(invalid(
                    name,
                    format!(
                        "a view of {} rows of a cache holding {} (the view must cover exactly the filled rows)",
                        shape[0], s.fill
                    ),
                ));
            }
            for i in 1..shape.len() {
                if shape[i] != data_shape[i] {
                    return Err(invalid(
                        name,
                        format!(
                            "dimension {i} mismatch: view shape {shape:?}, cache rows of shape {:?}",
                            &data_shape[1..]
                        ),
                    ));
                }
            }
            Ok(Value::Tensor(view_rows(&s.data, shape)))
        }
        "array_popn" | "array_clear" => {
            let caches = args
                .first()
                .and_then(Value::as_tuple)
                .ok_or_else(|| invalid(name, "argument 0 must be a tuple of KV caches".into()))?;
            let n = if short == "array_popn" {
                Some(
                    args.get(1)
                        .and_then(Value::as_int)
                        .ok_or_else(|| invalid(name, "argument 1 must be an integer".into()))?,
                )
            } else {
                None
            };
            for c in caches {
                let c = as_kv_cache(c).ok_or_else(|| invalid(name, format!("{} is not a KV cache", c.describe())))?;
                let mut s = c.lock()?;
                match n {
                    Some(n) if n < 0 || n > s.fill => {
                        return Err(invalid(
                            name,
                            format!("cannot pop {n} rows of a cache holding {}", s.fill),
                        ))
                    }
                    Some(n) => s.fill -= n,
                    None => s.fill = 0,
                }
            }
            Ok(Value::unit())
        }
        _ => Err(EngineError::UnknownPackedFunc(name.to_string())),
    }
}

/// A tensor of `shape` and `like`'s dtype (and VDevice label), in GPU memory when
/// `on_gpu`, host memory otherwise.
fn alloc_like(it: Option<&Interp>, like: &Tensor, shape: &[i64], on_gpu: bool) -> Result<Tensor> {
    if on_gpu {
        let it = it.ok_or_else(|| {
            EngineError::Invalid("a KV cache on a device can only be made inside a running program".into())
        })?;
        let t = it.alloc_tensor(like.dtype(), shape, like.vdevice().cloned(), Place::Gpu)?;
        if device_buffer(&t)?.is_none() {
            return Err(EngineError::Internal(
                "the device is no longer available for a KV cache".into(),
            ));
        }
        return Ok(t);
    }
    if let Some(it) = it {
        it.prog
            .stats
            .record_alloc(shape.iter().map(|&d| d as usize).product::<usize>() * like.dtype().bytes());
    }
    let t = Tensor::zeros(like.dtype(), shape)?;
    Ok(match like.vdevice() {
        Some(v) => t.relabel(Some(v.clone())),
        None => t,
    })
}

/// TVM's `Append`: grow by doubling until `value` fits, then copy it after the filled rows.
fn append(it: Option<&Interp>, name: &str, s: &mut KvState, value: &Tensor) -> Result<()> {
    if value.dtype() != s.data.dtype() {
        return Err(invalid(
            name,
            format!(
                "dtype mismatch: the cache holds {}, the value is {}",
                s.data.dtype(),
                value.dtype()
            ),
        ));
    }
    let data_shape = s.data.shape().to_vec();
    if value.ndim() != data_shape.len() || value.shape()[1..] != data_shape[1..] {
        return Err(invalid(
            name,
            format!(
                "shape mismatch: a value of shape {:?} appended to a cache of rows of shape {:?}",
                value.shape(),
                &data_shape[1..]
            ),
        ));
    }
    let rows = value.shape()[0];
    let need = s
        .fill
        .checked_add(rows)
        .ok_or_else(|| invalid(name, "the cache length overflows".into()))?;
    let mut cap = data_shape[0];
    if need > cap {
        cap = cap.max(1);
        while need > cap {
            cap = cap
                .checked_mul(2)
                .ok_or_else(|| invalid(name, "the cache capacity overflows".into()))?;
        }
        let mut new_shape = data_shape.clone();
        new_shape[0] = cap;
        let on_gpu = device_buffer(&s.data)?.is_some();
        let grown = alloc_like(it, &s.data, &new_shape, on_gpu)?;
        copy_bytes(it, &s.data, 0, &grown, 0, s.data.nbytes())?;
        s.data = grown;
    }
    let rb = row_bytes(&s.data);
    let dst_off = usize::try_from(s.fill).unwrap_or(0) * rb;
    copy_bytes(it, value, 0, &s.data, dst_off, value.nbytes())?;
    s.fill = need;
    Ok(())
}

/// Copy `n` bytes from `src` (at byte `src_off` of its data) into `dst` (at `dst_off`):
/// between GPU buffers on the device, otherwise through host memory (uploads and
/// downloads counted in the run statistics).
fn copy_bytes(it: Option<&Interp>, src: &Tensor, src_off: usize, dst: &Tensor, dst_off: usize, n: usize) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let sb = device_buffer(src)?;
    let db = device_buffer(dst)?;
    let s_at = src.0.offset + src_off;
    let d_at = dst.0.offset + dst_off;
    let stats = it.map(|it| &it.prog.stats);
    match (sb, db) {
        (Some(sb), Some(db)) => {
            let gpu = match it {
                Some(it) => it.gpu()?,
                None => None,
            };
            if let (Some((rt, _)), Some(s), Some(d)) = (&gpu, sb.gpu_buffer(), db.gpu_buffer()) {
                if s_at.is_multiple_of(4) && d_at.is_multiple_of(4) && n.is_multiple_of(4) {
                    rt.copy(s, s_at as u64, d, d_at as u64, n as u64)
                        .map_err(|e| EngineError::Device(e.into()))?;
                    if let Some(st) = stats {
                        st.record_copy(CopyKind::Device, n as u64);
                    }
                    return Ok(());
                }
            }
            let mut tmp = crate::value::alloc_host(n, || format!("{n} bytes of a KV cache"))?;
            sb.read(s_at, &mut tmp).map_err(EngineError::Device)?;
            db.write(d_at, &tmp).map_err(EngineError::Device)?;
            if let Some(st) = stats {
                st.record_copy(CopyKind::Download, n as u64);
                st.record_copy(CopyKind::Upload, n as u64);
            }
        }
        (Some(sb), None) => {
            let mut tmp = crate::value::alloc_host(n, || format!("{n} bytes of a KV cache"))?;
            sb.read(s_at, &mut tmp).map_err(EngineError::Device)?;
            write_host(dst, d_at, &tmp)?;
            if let Some(st) = stats {
                st.record_copy(CopyKind::Download, n as u64);
            }
        }
        (None, Some(db)) => {
            let bytes = read_host(src, s_at, n)?;
            db.write(d_at, &bytes).map_err(EngineError::Device)?;
            if let Some(st) = stats {
                st.record_copy(CopyKind::Upload, n as u64);
            }
        }
        (None, None) => {
            if Arc::ptr_eq(&src.0.storage, &dst.0.storage) {
                let bytes = read_host(src, s_at, n)?;
                write_host(dst, d_at, &bytes)?;
            } else {
                let sg = src.0.storage.read()?;
                let crate::value::StorageData::Host(h) = &*sg else {
                    return Err(EngineError::Internal("KV cache storage changed kind".into()));
                };
                let from = h.bytes().get(s_at..s_at + n).ok_or_else(short_storage)?;
                let mut dg = dst.0.storage.write()?;
                let crate::value::StorageData::Host(h) = &mut *dg else {
                    return Err(EngineError::Internal("KV cache storage changed kind".into()));
                };
                h.bytes_mut()
                    .get_mut(d_at..d_at + n)
                    .ok_or_else(short_storage)?
                    .copy_from_slice(from);
            }
            if let Some(st) = stats {
                st.record_copy(CopyKind::Host, n as u64);
            }
        }
    }
    Ok(())
}

fn short_storage() -> EngineError {
    EngineError::Internal("a KV cache copy runs past the end of its storage".into())
}

fn read_host(t: &Tensor, at: usize, n: usize) -> Result<Vec<u8>> {
    let g = t.0.storage.read()?;
    match &*g {
        crate::value::StorageData::Host(h) => Ok(h.bytes().get(at..at + n).ok_or_else(short_storage)?.to_vec()),
        crate::value::StorageData::Device(_) => Err(EngineError::Internal("expected host memory".into())),
    }
}

fn write_host(t: &Tensor, at: usize, bytes: &[u8]) -> Result<()> {
    let mut g = t.0.storage.write()?;
    match &mut *g {
        crate::value::StorageData::Host(h) => {
            h.bytes_mut()
                .get_mut(at..at + bytes.len())
                .ok_or_else(short_storage)?
                .copy_from_slice(bytes);
            Ok(())
        }
        crate::value::StorageData::Device(_) => Err(EngineError::Internal("expected host memory".into())),
    }
}

/// Register the cache builtins (for direct calls; programs reach them through the
/// interpreter, which gives them the device).
pub(crate) fn register(registry: &crate::packed::PackedRegistry) {
    use crate::packed::{PackedFunc, Purity};
    for &name in BUILTINS {
        let purity = if name.ends_with("_view") || name.ends_with("_create") {
            Purity::Pure
        } else {
            Purity::Impure
        };
        registry.register(PackedFunc::new(name, purity, move |args| call(None, name, args)));
    }
}
