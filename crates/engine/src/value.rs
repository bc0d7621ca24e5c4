//! Run-time values of Relax: tensors, tuples, shapes, `PrimValue`s, strings, data
//! types, closures, packed functions, TIR `PrimFunc`s, opaque objects and null.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use half::f16;
use ndarray::{ArrayD, IxDyn};
use relax_ir::relax::NDArray;
use relax_ir::{DataType, Expr, GlobalVar, VDevice, Var};

use crate::device::{describe_vdevice, DeviceMemory};
use crate::engine::Program;
use crate::error::{EngineError, Result};
use crate::packed::PackedFunc;

/// A Relax run-time value. Cheap to clone: every payload is reference counted, so
/// clones alias (as the spec's by-reference evaluation requires).
#[derive(Clone)]
pub enum Value {
    /// A tensor (mutable, on the host or on a device).
    Tensor(Tensor),
    /// An immutable tuple.
    Tuple(Arc<[Value]>),
    /// A shape value.
    Shape(Arc<[i64]>),
    /// A boxed scalar.
    Prim(PrimValue),
    /// A string.
    Str(Arc<str>),
    /// A data type.
    DataType(DataType),
    /// A closure (a Relax function with its captured environment).
    Closure(Arc<Closure>),
    /// A packed (external) function.
    PackedFunc(PackedFunc),
    /// A TIR `PrimFunc` of a loaded module.
    PrimFunc(Arc<PrimFuncValue>),
    /// Any other object (returned by packed functions, storage from `alloc_storage`).
    Object(Object),
    /// The null object (`null_value()`).
    Null,
}

/// A boxed scalar: a TIR data type and its value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrimValue {
    /// The data type (`int64`, `float32`, `bool`, ...).
    pub dtype: DataType,
    /// The value.
    pub value: Scalar,
}

/// The numeric payload of a [`PrimValue`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// Integers and booleans (bool: 0 or 1; unsigned 64-bit values wrap).
    Int(i64),
    /// Floating-point values.
    Float(f64),
}

impl PrimValue {
    /// An `int64` value.
    pub fn int64(v: i64) -> PrimValue {
        PrimValue {
            dtype: DataType::INT64,
            value: Scalar::Int(v),
        }
    }
    /// An integer of `dtype`.
    pub fn int(v: i64, dtype: DataType) -> PrimValue {
        PrimValue {
            dtype,
            value: Scalar::Int(v),
        }
    }
    /// A `bool`.
    pub fn bool(v: bool) -> PrimValue {
        PrimValue {
            dtype: DataType::BOOL,
            value: Scalar::Int(v as i64),
        }
    }
    /// A float of `dtype`.
    pub fn float(v: f64, dtype: DataType) -> PrimValue {
        PrimValue {
            dtype,
            value: Scalar::Float(v),
        }
    }
    /// The integer value (floats are not converted).
    pub fn as_int(&self) -> Option<i64> {
        match self.value {
            Scalar::Int(v) => Some(v),
            Scalar::Float(_) => None,
        }
    }
    /// The value as a float.
    pub fn as_f64(&self) -> f64 {
        match self.value {
            Scalar::Int(v) if self.dtype.is_uint() => v as u64 as f64,
            Scalar::Int(v) => v as f64,
            Scalar::Float(v) => v,
        }
    }
    /// Whether two values are numerically equal.
    pub fn numerically_equal(&self, other: &PrimValue) -> bool {
        match (self.value, other.value) {
            (Scalar::Int(a), Scalar::Int(b)) => a == b,
            _ => self.as_f64() == other.as_f64(),
        }
    }
}

impl fmt::Display for PrimValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Scalar::Int(v) if self.dtype.is_bool() => write!(f, "{}", if v != 0 { "True" } else { "False" }),
            Scalar::Int(v) if self.dtype.is_uint() => write!(f, "{}", v as u64),
            Scalar::Int(v) => write!(f, "{v}"),
            Scalar::Float(v) => write!(f, "{}", render_float(v)),
        }
    }
}

/// An opaque object passed through Relax unchanged.
#[derive(Clone)]
pub struct Object {
    /// A type name for messages.
    pub type_name: Arc<str>,
    /// The payload.
    pub inner: Arc<dyn Any + Send + Sync>,
}

impl Object {
    /// Wrap `inner` under `type_name`.
    pub fn new<T: Any + Send + Sync>(type_name: &str, inner: T) -> Object {
        Object {
            type_name: Arc::from(type_name),
            inner: Arc::new(inner),
        }
    }
    /// The payload, if it has type `T`.
    pub fn downcast<T: Any>(&self) -> Option<&T> {
        self.inner.downcast_ref::<T>()
    }
}

/// A TIR `PrimFunc` as a first-class value.
pub struct PrimFuncValue {
    pub(crate) program: Arc<Program>,
    pub(crate) name: GlobalVar,
}

impl PrimFuncValue {
    /// The function's global name.
    pub fn name(&self) -> &str {
        self.name.name()
    }
}

/// Which function a closure calls.
#[derive(Clone)]
pub(crate) enum ClosureFunc {
    /// A module function.
    Global(GlobalVar),
    /// A local `Function` expression (the `Expr` holds `ExprKind::Function`).
    Local(Expr),
}

/// A closure: a function, the values it captured (by reference) and, for a local
/// function bound to a variable, that variable (bound to the closure itself on each
/// call, which makes local recursion work without a reference cycle).
pub struct Closure {
    pub(crate) program: Arc<Program>,
    pub(crate) func: ClosureFunc,
    pub(crate) captured: Vec<(Var, Value)>,
    pub(crate) captured_shapes: Arc<crate::prim::ShapeEnv>,
    pub(crate) self_var: Option<Var>,
    /// Leading arguments bound by `make_closure`.
    pub(crate) bound_args: Vec<Value>,
}

impl Closure {
    /// A name for messages: the global name, the variable it is bound to, or `<lambda>`.
    pub fn name(&self) -> String {
        match (&self.func, &self.self_var) {
            (ClosureFunc::Global(g), _) => g.name().to_string(),
            (ClosureFunc::Local(_), Some(v)) => v.name().to_string(),
            (ClosureFunc::Local(_), None) => "<lambda>".to_string(),
        }
    }
}

// ---------------------------------------------------------------------------
// Tensors

/// The bytes behind one or more tensors.
pub(crate) struct Storage {
    pub(crate) data: RwLock<StorageData>,
    pub(crate) nbytes: usize,
    /// Bumped by every [`Storage::write`]: what was derived from the bytes at one
    /// version (the packed weights of [`crate::weight_cache`]) is stale at another.
    pub(crate) version: std::sync::atomic::AtomicU64,
    /// Data derived from the bytes and kept with them (see [`crate::weight_cache`]).
    pub(crate) derived: crate::weight_cache::Slot,
}

/// Host or device memory.
pub(crate) enum StorageData {
    /// Host memory.
    Host(HostBytes),
    /// Device memory.
    Device(Arc<dyn DeviceMemory>),
}

/// Host bytes, shared with a constant until first written (copy on write).
pub(crate) enum HostBytes {
    Shared(Arc<NDArray>),
    Owned(Vec<u8>),
}

impl HostBytes {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            HostBytes::Shared(a) => &a.data,
            HostBytes::Owned(v) => v,
        }
    }
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        if let HostBytes::Shared(a) = self {
            *self = HostBytes::Owned(a.data.clone());
        }
        match self {
            HostBytes::Owned(v) => v,
            HostBytes::Shared(_) => &mut [],
        }
    }
}

/// Bytes of host tensor memory currently alive in the process (every `Storage` in
/// host memory, whoever made it).
static HOST_LIVE_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Bytes of host memory held by tensors alive now, in the whole process: a run that
/// releases its intermediates returns this to where it was.
pub fn host_live_bytes() -> u64 {
    HOST_LIVE_BYTES.load(std::sync::atomic::Ordering::Relaxed)
}

/// The most host tensor memory alive at once since the last [`reset_host_peak_bytes`].
static HOST_PEAK_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The most bytes of host tensor memory alive at once in the process since the last
/// [`reset_host_peak_bytes`] (or since the start).
pub fn host_peak_bytes() -> u64 {
    HOST_PEAK_BYTES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Restart [`host_peak_bytes`] from the memory alive now.
pub fn reset_host_peak_bytes() {
    HOST_PEAK_BYTES.store(host_live_bytes(), std::sync::atomic::Ordering::Relaxed);
}

impl Drop for Storage {
    fn drop(&mut self) {
        let data = match self.data.get_mut() {
            Ok(d) => d,
            Err(poisoned) => poisoned.into_inner(),
        };
        if matches!(data, StorageData::Host(_)) {
            HOST_LIVE_BYTES.fetch_sub(self.nbytes as u64, std::sync::atomic::Ordering::Relaxed);
        }
        if let StorageData::Host(HostBytes::Owned(v)) = data {
            crate::host_pool::give(std::mem::take(v));
        }
    }
}

impl Storage {
    pub(crate) fn host(bytes: HostBytes) -> Arc<Storage> {
        let nbytes = bytes.bytes().len();
        let now = HOST_LIVE_BYTES.fetch_add(nbytes as u64, std::sync::atomic::Ordering::Relaxed) + nbytes as u64;
        HOST_PEAK_BYTES.fetch_max(now, std::sync::atomic::Ordering::Relaxed);
        Arc::new(Storage {
            data: RwLock::new(StorageData::Host(bytes)),
            nbytes,
            version: Default::default(),
            derived: Default::default(),
        })
    }
    pub(crate) fn device(buf: Arc<dyn DeviceMemory>) -> Arc<Storage> {
        let nbytes = buf.len();
        Arc::new(Storage {
            data: RwLock::new(StorageData::Device(buf)),
            nbytes,
            version: Default::default(),
            derived: Default::default(),
        })
    }
    pub(crate) fn read(&self) -> Result<RwLockReadGuard<'_, StorageData>> {
        self.data
            .read()
            .map_err(|_| EngineError::Internal("tensor storage lock poisoned".into()))
    }
    /// Lock the bytes for writing; what was derived from them before is stale from
    /// now on (the version moves on before the bytes can change).
    pub(crate) fn write(&self) -> Result<RwLockWriteGuard<'_, StorageData>> {
        let guard = self
            .data
            .write()
            .map_err(|_| EngineError::Internal("tensor storage lock poisoned".into()))?;
        self.version.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Ok(guard)
    }
}

/// The storage object returned by `memory.alloc_storage` / `vm.alloc_storage`.
#[derive(Clone)]
pub struct StorageObject {
    pub(crate) storage: Arc<Storage>,
    pub(crate) vdevice: Option<VDevice>,
}

/// An n-dimensional array: dtype, shape, optional `VDevice` and a view of host or
/// device memory. Clones alias the same memory.
#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<TensorObj>);

pub(crate) struct TensorObj {
    pub(crate) dtype: DataType,
    pub(crate) shape: Vec<i64>,
    pub(crate) vdevice: Option<VDevice>,
    pub(crate) storage: Arc<Storage>,
    pub(crate) offset: usize,
}

fn numel_of(shape: &[i64]) -> Result<usize> {
    shape.iter().try_fold(1usize, |acc, &d| {
        if d < 0 {
            return Err(EngineError::Invalid(format!(
                "negative dimension {d} in shape {shape:?}"
            )));
        }
        acc.checked_mul(d as usize)
            .ok_or_else(|| EngineError::Invalid(format!("shape {shape:?} is too large")))
    })
}

pub(crate) fn check_dtype(dtype: DataType) -> Result<()> {
    if dtype.is_void() || dtype.is_handle() || dtype.lanes != 1 {
        return Err(EngineError::Invalid(format!(
            "tensors cannot have element type {dtype}"
        )));
    }
    Ok(())
}

/// `n` zero bytes of host memory for `what`, through the fallible path: an `Err` (never
/// an abort) when `n` is over the host memory limit or cannot be reserved.
pub(crate) fn alloc_host(n: usize, what: impl FnOnce() -> String) -> Result<Vec<u8>> {
    relax_jit::memory::try_zeroed::<u8>(n)
        .map_err(|e| EngineError::HostMemory(format!("cannot allocate {} on the host: {e}", what())))
}

/// Zeroed host bytes for a tensor of `dtype` and `shape`, or an error naming both.
pub(crate) fn alloc_host_tensor(dtype: DataType, shape: &[i64]) -> Result<Vec<u8>> {
    let what = || format!("a {dtype} tensor of shape {shape:?}");
    let n = numel_of(shape)?
        .checked_mul(dtype.bytes())
        .ok_or_else(|| EngineError::HostMemory(format!("cannot allocate {}: its size in bytes overflows", what())))?;
    alloc_host(n, what)
}

impl Tensor {
    /// A zero-filled host tensor; an [`EngineError::HostMemory`] when it is too large.
    pub fn zeros(dtype: DataType, shape: &[i64]) -> Result<Tensor> {
        check_dtype(dtype)?;
        let bytes = alloc_host_tensor(dtype, shape)?;
        Ok(Tensor::from_storage(
            dtype,
            shape.to_vec(),
            None,
            Storage::host(HostBytes::Owned(bytes)),
            0,
        ))
    }
    /// A host tensor for a kernel to write completely: memory recycled from a
    /// released tensor of the same size when there is one (stale contents), else
    /// zeroed; an [`EngineError::HostMemory`] when it is too large.
    pub(crate) fn for_output(dtype: DataType, shape: &[i64]) -> Result<Tensor> {
        check_dtype(dtype)?;
        let n = numel_of(shape)?.checked_mul(dtype.bytes());
        let bytes = match n.and_then(crate::host_pool::take) {
            Some(b) => b,
            None => alloc_host_tensor(dtype, shape)?,
        };
        Ok(Tensor::from_storage(
            dtype,
            shape.to_vec(),
            None,
            Storage::host(HostBytes::Owned(bytes)),
            0,
        ))
    }
    /// A host tensor from little-endian row-major element bytes (bool: one byte each).
    pub fn from_bytes(dtype: DataType, shape: &[i64], bytes: Vec<u8>) -> Result<Tensor> {
        check_dtype(dtype)?;
        let n = numel_of(shape)?
            .checked_mul(dtype.bytes())
            .ok_or_else(|| EngineError::Invalid(format!("shape {shape:?} is too large")))?;
        if bytes.len() != n {
            return Err(EngineError::Invalid(format!(
                "tensor of shape {shape:?} and dtype {dtype} needs {n} bytes, got {}",
                bytes.len()
            )));
        }
        Ok(Tensor::from_storage(
            dtype,
            shape.to_vec(),
            None,
            Storage::host(HostBytes::Owned(bytes)),
            0,
        ))
    }
    /// A new tensor holding a constant's data (shared until written).
    pub fn from_constant(data: &Arc<NDArray>) -> Result<Tensor> {
        check_dtype(data.dtype)?;
        let n = numel_of(&data.shape)? * data.dtype.bytes();
        if data.data.len() != n {
            return Err(EngineError::Invalid(format!(
                "constant of shape {:?} and dtype {} has {} bytes, expected {n}",
                data.shape,
                data.dtype,
                data.data.len()
            )));
        }
        Ok(Tensor::from_storage(
            data.dtype,
            data.shape.clone(),
            None,
            Storage::host(HostBytes::Shared(data.clone())),
            0,
        ))
    }
    /// A host tensor from an `ndarray` array.
    pub fn from_array<T: Element>(array: &ArrayD<T>) -> Tensor {
        let shape: Vec<i64> = array.shape().iter().map(|&d| d as i64).collect();
        let mut bytes = Vec::with_capacity(array.len() * T::DTYPE.bytes());
        for x in array.iter() {
            x.write_le(&mut bytes);
        }
        Tensor::from_storage(T::DTYPE, shape, None, Storage::host(HostBytes::Owned(bytes)), 0)
    }
    /// A 0-d host tensor.
    pub fn scalar<T: Element>(value: T) -> Tensor {
        Tensor::from_array(&ArrayD::from_elem(IxDyn(&[]), value))
    }

    pub(crate) fn from_storage(
        dtype: DataType,
        shape: Vec<i64>,
        vdevice: Option<VDevice>,
        storage: Arc<Storage>,
        offset: usize,
    ) -> Tensor {
        Tensor(Arc::new(TensorObj {
            dtype,
            shape,
            vdevice,
            storage,
            offset,
        }))
    }

    /// The element type.
    pub fn dtype(&self) -> DataType {
        self.0.dtype
    }
    /// The shape.
    pub fn shape(&self) -> &[i64] {
        &self.0.shape
    }
    /// The rank.
    pub fn ndim(&self) -> usize {
        self.0.shape.len()
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.0.shape.iter().map(|&d| d.max(0) as usize).product()
    }
    /// Size of the data in bytes.
    pub fn nbytes(&self) -> usize {
        self.numel() * self.0.dtype.bytes()
    }
    /// The VDevice the tensor is placed on, if any.
    pub fn vdevice(&self) -> Option<&VDevice> {
        self.0.vdevice.as_ref()
    }
    /// Whether the data lives in device memory.
    pub fn is_on_device(&self) -> bool {
        self.0
            .storage
            .read()
            .map(|g| matches!(&*g, StorageData::Device(_)))
            .unwrap_or(false)
    }
    /// Whether two tensors share memory (one is an alias or a view of the other's storage).
    pub fn shares_memory_with(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0.storage, &other.0.storage)
    }
    /// The same data labelled with another VDevice (no copy).
    pub(crate) fn relabel(&self, vdevice: Option<VDevice>) -> Tensor {
        Tensor::from_storage(
            self.0.dtype,
            self.0.shape.clone(),
            vdevice,
            self.0.storage.clone(),
            self.0.offset,
        )
    }
    fn range(&self) -> std::ops::Range<usize> {
        self.0.offset..self.0.offset + self.nbytes()
    }

    /// Run `f` on the element bytes (downloaded first for device tensors).
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let guard = self.0.storage.read()?;
        match &*guard {
            StorageData::Host(h) => {
                let bytes = h.bytes().get(self.range()).ok_or_else(out_of_bounds)?;
                Ok(f(bytes))
            }
            StorageData::Device(buf) => {
                let mut tmp = alloc_host(self.nbytes(), || self.describe())?;
                buf.read(self.0.offset, &mut tmp).map_err(EngineError::Device)?;
                Ok(f(&tmp))
            }
        }
    }
    /// Run `f` on the element bytes, mutably (uploaded afterwards for device tensors).
    /// Writes are visible through every alias of this tensor.
    pub fn with_bytes_mut<R>(&self, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        let range = self.range();
        let mut guard = self.0.storage.write()?;
        match &mut *guard {
            StorageData::Host(h) => {
                let bytes = h.bytes_mut().get_mut(range).ok_or_else(out_of_bounds)?;
                Ok(f(bytes))
            }
            StorageData::Device(buf) => {
                let mut tmp = alloc_host(self.nbytes(), || self.describe())?;
                buf.read(self.0.offset, &mut tmp).map_err(EngineError::Device)?;
                let r = f(&mut tmp);
                buf.write(self.0.offset, &tmp).map_err(EngineError::Device)?;
                Ok(r)
            }
        }
    }
    /// A copy of the element bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.with_bytes(|b| b.to_vec())
    }
    /// The data as an `ndarray` array of element type `T` (which must match the dtype).
    pub fn to_array<T: Element>(&self) -> Result<ArrayD<T>> {
        if self.dtype() != T::DTYPE {
            return Err(EngineError::Type(format!(
                "tensor has dtype {}, cannot read it as {}",
                self.dtype(),
                T::DTYPE
            )));
        }
        let shape: Vec<usize> = self.shape().iter().map(|&d| d as usize).collect();
        let elems = self.with_bytes(|b| b.chunks_exact(T::DTYPE.bytes()).map(T::read_le).collect::<Vec<T>>())?;
        ArrayD::from_shape_vec(IxDyn(&shape), elems).map_err(|e| EngineError::Internal(e.to_string()))
    }
    /// The data as an array of whatever element type the tensor has.
    pub fn to_array_value(&self) -> Result<ArrayValue> {
        let d = self.dtype();
        Ok(match (d.code, d.bits) {
            _ if d.is_bool() => ArrayValue::Bool(self.to_array()?),
            (relax_ir::TypeCode::Int, 8) => ArrayValue::I8(self.to_array()?),
            (relax_ir::TypeCode::Int, 16) => ArrayValue::I16(self.to_array()?),
            (relax_ir::TypeCode::Int, 32) => ArrayValue::I32(self.to_array()?),
            (relax_ir::TypeCode::Int, 64) => ArrayValue::I64(self.to_array()?),
            (relax_ir::TypeCode::UInt, 8) => ArrayValue::U8(self.to_array()?),
            (relax_ir::TypeCode::UInt, 16) => ArrayValue::U16(self.to_array()?),
            (relax_ir::TypeCode::UInt, 32) => ArrayValue::U32(self.to_array()?),
            (relax_ir::TypeCode::UInt, 64) => ArrayValue::U64(self.to_array()?),
            (relax_ir::TypeCode::Float, 16) => ArrayValue::F16(self.to_array()?),
            (relax_ir::TypeCode::Float, 32) => ArrayValue::F32(self.to_array()?),
            (relax_ir::TypeCode::Float, 64) => ArrayValue::F64(self.to_array()?),
            _ => return Err(EngineError::Type(format!("no ndarray element type for dtype {d}"))),
        })
    }
    /// Every element as `f64`, in row-major order, for any dtype (bfloat16 and sub-byte
    /// integers included; bool as 0/1; 64-bit integers rounded to the nearest `f64`).
    pub fn to_f64_values(&self) -> Result<Vec<f64>> {
        let d = self.dtype();
        let size = d.bytes();
        if d.lanes != 1 || !(1..=8).contains(&size) || d.is_handle() || d.is_void() {
            return Err(EngineError::Type(format!("cannot read {d} elements as numbers")));
        }
        self.with_bytes(|b| b.chunks_exact(size).map(|c| decode_scalar(d, c).as_f64()).collect())
    }
    /// Overwrite the data with `array` (same dtype and shape), visible through aliases.
    pub fn assign<T: Element>(&self, array: &ArrayD<T>) -> Result<()> {
        let shape: Vec<i64> = array.shape().iter().map(|&d| d as i64).collect();
        if T::DTYPE != self.dtype() || shape != self.shape() {
            return Err(EngineError::Type(format!(
                "cannot assign a {} array of shape {:?} to a {} tensor of shape {:?}",
                T::DTYPE,
                shape,
                self.dtype(),
                self.shape()
            )));
        }
        let mut bytes = Vec::with_capacity(self.nbytes());
        for x in array.iter() {
            x.write_le(&mut bytes);
        }
        self.with_bytes_mut(|dst| dst.copy_from_slice(&bytes))
    }
    /// The value of a 0-d (or one-element) tensor as a scalar.
    pub fn scalar_value(&self) -> Result<PrimValue> {
        if self.numel() != 1 {
            return Err(EngineError::Type(format!(
                "expected a scalar tensor, got shape {:?}",
                self.shape()
            )));
        }
        let d = self.dtype();
        self.with_bytes(|b| decode_scalar(d, b))
    }
    /// A short description: `Tensor((2, 3), float32)`.
    pub fn describe(&self) -> String {
        let dev = self
            .vdevice()
            .map(|v| format!(", {}", describe_vdevice(v)))
            .unwrap_or_default();
        format!("Tensor({}, {}{dev})", render_shape(self.shape()), self.dtype())
    }
}

fn out_of_bounds() -> EngineError {
    EngineError::Internal("tensor view exceeds its storage".into())
}

/// Decode one little-endian element of `dtype`.
pub(crate) fn decode_scalar(dtype: DataType, b: &[u8]) -> PrimValue {
    use relax_ir::TypeCode::*;
    let mut buf = [0u8; 8];
    let n = dtype.bytes().min(8).min(b.len());
    buf[..n].copy_from_slice(&b[..n]);
    let raw = u64::from_le_bytes(buf);
    let value = match dtype.code {
        _ if dtype.is_bool() => Scalar::Int((raw & 1) as i64),
        Int => {
            let shift = 64 - 8 * n as u32;
            Scalar::Int(((raw << shift) as i64) >> shift)
        }
        UInt => Scalar::Int(raw as i64),
        _ if dtype.mini_float().is_some() => {
            Scalar::Float(dtype.mini_float().map_or(f64::NAN, |f| f.decode(raw as u8)))
        }
        Float if dtype.bits == 16 => Scalar::Float(f16::from_bits(raw as u16).to_f64()),
        Float if dtype.bits == 32 => Scalar::Float(f32::from_bits(raw as u32) as f64),
        BFloat => Scalar::Float(f32::from_bits((raw as u32) << 16) as f64),
        _ => Scalar::Float(f64::from_bits(raw)),
    };
    PrimValue { dtype, value }
}

/// Element types convertible to and from tensor bytes.
pub trait Element: Copy + Send + Sync + 'static {
    /// The matching Relax dtype.
    const DTYPE: DataType;
    /// Append the little-endian bytes of `self`.
    fn write_le(&self, out: &mut Vec<u8>);
    /// Read one element from little-endian bytes.
    fn read_le(bytes: &[u8]) -> Self;
}

macro_rules! element {
    ($($t:ty => $dt:expr),* $(,)?) => {$(
        impl Element for $t {
            const DTYPE: DataType = $dt;
            fn write_le(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Self {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b.copy_from_slice(&bytes[..std::mem::size_of::<$t>()]);
                <$t>::from_le_bytes(b)
            }
        }
    )*};
}
element!(
    i8 => DataType::INT8, i16 => DataType::int(16), i32 => DataType::INT32, i64 => DataType::INT64,
    u8 => DataType::UINT8, u16 => DataType::uint(16), u32 => DataType::UINT32, u64 => DataType::uint(64),
    f16 => DataType::FLOAT16, f32 => DataType::FLOAT32, f64 => DataType::FLOAT64,
);

impl Element for bool {
    const DTYPE: DataType = DataType::BOOL;
    fn write_le(&self, out: &mut Vec<u8>) {
        out.push(*self as u8);
    }
    fn read_le(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

/// An `ndarray` array of any supported element type.
#[derive(Clone, Debug, PartialEq)]
pub enum ArrayValue {
    /// `bool`
    Bool(ArrayD<bool>),
    /// `int8`
    I8(ArrayD<i8>),
    /// `int16`
    I16(ArrayD<i16>),
    /// `int32`
    I32(ArrayD<i32>),
    /// `int64`
    I64(ArrayD<i64>),
    /// `uint8`
    U8(ArrayD<u8>),
    /// `uint16`
    U16(ArrayD<u16>),
    /// `uint32`
    U32(ArrayD<u32>),
    /// `uint64`
    U64(ArrayD<u64>),
    /// `float16`
    F16(ArrayD<f16>),
    /// `float32`
    F32(ArrayD<f32>),
    /// `float64`
    F64(ArrayD<f64>),
}

impl ArrayValue {
    /// The array as a host tensor.
    pub fn to_tensor(&self) -> Tensor {
        match self {
            ArrayValue::Bool(a) => Tensor::from_array(a),
            ArrayValue::I8(a) => Tensor::from_array(a),
            ArrayValue::I16(a) => Tensor::from_array(a),
            ArrayValue::I32(a) => Tensor::from_array(a),
            ArrayValue::I64(a) => Tensor::from_array(a),
            ArrayValue::U8(a) => Tensor::from_array(a),
            ArrayValue::U16(a) => Tensor::from_array(a),
            ArrayValue::U32(a) => Tensor::from_array(a),
            ArrayValue::U64(a) => Tensor::from_array(a),
            ArrayValue::F16(a) => Tensor::from_array(a),
            ArrayValue::F32(a) => Tensor::from_array(a),
            ArrayValue::F64(a) => Tensor::from_array(a),
        }
    }
}

impl<T: Element> From<ArrayD<T>> for Tensor {
    fn from(a: ArrayD<T>) -> Tensor {
        Tensor::from_array(&a)
    }
}
impl<T: Element> From<ArrayD<T>> for Value {
    fn from(a: ArrayD<T>) -> Value {
        Value::Tensor(Tensor::from_array(&a))
    }
}
impl From<Tensor> for Value {
    fn from(t: Tensor) -> Value {
        Value::Tensor(t)
    }
}
impl From<PrimValue> for Value {
    fn from(p: PrimValue) -> Value {
        Value::Prim(p)
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(Arc::from(s))
    }
}
impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Value {
        Value::Tuple(Arc::from(v))
    }
}
impl From<PackedFunc> for Value {
    fn from(f: PackedFunc) -> Value {
        Value::PackedFunc(f)
    }
}

impl Value {
    /// The empty tuple (unit).
    pub fn unit() -> Value {
        Value::Tuple(Arc::from(Vec::new()))
    }
    /// A shape value.
    pub fn shape(dims: &[i64]) -> Value {
        Value::Shape(Arc::from(dims))
    }
    /// A tuple value.
    pub fn tuple(fields: Vec<Value>) -> Value {
        Value::Tuple(Arc::from(fields))
    }
    /// An `int64` `PrimValue`.
    pub fn int(v: i64) -> Value {
        Value::Prim(PrimValue::int64(v))
    }
    /// The tensor, if this is one.
    pub fn as_tensor(&self) -> Option<&Tensor> {
        match self {
            Value::Tensor(t) => Some(t),
            _ => None,
        }
    }
    /// The tuple fields, if this is a tuple.
    pub fn as_tuple(&self) -> Option<&[Value]> {
        match self {
            Value::Tuple(t) => Some(t),
            _ => None,
        }
    }
    /// The dimensions, if this is a shape.
    pub fn as_shape(&self) -> Option<&[i64]> {
        match self {
            Value::Shape(s) => Some(s),
            _ => None,
        }
    }
    /// The scalar, if this is a `PrimValue`.
    pub fn as_prim(&self) -> Option<PrimValue> {
        match self {
            Value::Prim(p) => Some(*p),
            _ => None,
        }
    }
    /// The integer, if this is an integer `PrimValue`.
    pub fn as_int(&self) -> Option<i64> {
        self.as_prim()?.as_int()
    }
    /// The string, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    /// The tensor, or a type error naming `what`.
    pub fn expect_tensor(&self, what: &str) -> Result<&Tensor> {
        self.as_tensor()
            .ok_or_else(|| EngineError::Type(format!("{what}: expected a tensor, got {}", self.describe())))
    }
    /// Whether this is the null object.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    /// The kind of value, for messages (`tensor`, `tuple`, `shape`, ...).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Tensor(_) => "tensor",
            Value::Tuple(_) => "tuple",
            Value::Shape(_) => "shape",
            Value::Prim(_) => "PrimValue",
            Value::Str(_) => "string",
            Value::DataType(_) => "data type",
            Value::Closure(_) => "closure",
            Value::PackedFunc(_) => "packed function",
            Value::PrimFunc(_) => "PrimFunc",
            Value::Object(_) => "object",
            Value::Null => "null",
        }
    }
    /// A short description of the value's structure (no tensor data).
    pub fn describe(&self) -> String {
        match self {
            Value::Tensor(t) => t.describe(),
            Value::Tuple(f) => format!(
                "Tuple({})",
                f.iter().map(Value::describe).collect::<Vec<_>>().join(", ")
            ),
            Value::Shape(s) => format!("Shape({})", render_shape(s)),
            Value::Prim(p) => format!("Prim({}, {p})", p.dtype),
            Value::Str(s) => format!("String({s:?})"),
            Value::DataType(d) => format!("DataType({d})"),
            Value::Closure(c) => format!("Closure({})", c.name()),
            Value::PackedFunc(p) => format!("PackedFunc({})", p.name()),
            Value::PrimFunc(p) => format!("PrimFunc({})", p.name()),
            Value::Object(o) => format!("Object({})", o.type_name),
            Value::Null => "null".to_string(),
        }
    }
    /// Render like TVM's `R.print` (numpy-style tensors, Python-style tuples).
    pub fn render(&self) -> Result<String> {
        Ok(match self {
            Value::Tensor(t) => render_tensor(t)?,
            Value::Tuple(f) => {
                let parts = f.iter().map(Value::render).collect::<Result<Vec<_>>>()?;
                format!("({})", parts.join(", "))
            }
            Value::Shape(s) => render_shape(s),
            Value::Prim(p) => p.to_string(),
            Value::Str(s) => s.to_string(),
            Value::DataType(d) => d.to_string(),
            Value::Null => "None".to_string(),
            other => other.describe(),
        })
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}
impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// `(2, 3)`, `(3,)`, `()`.
pub(crate) fn render_shape(s: &[i64]) -> String {
    match s {
        [d] => format!("({d},)"),
        _ => format!("({})", s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

fn render_float(v: f64) -> String {
    if v.is_finite() && v == v.trunc() && v.abs() < 1e16 {
        format!("{v:.0}.")
    } else if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{v}")
    }
}

fn render_tensor(t: &Tensor) -> Result<String> {
    let d = t.dtype();
    let n = d.bytes();
    let elems: Vec<String> = t.with_bytes(|b| {
        b.chunks_exact(n)
            .map(|c| {
                let p = decode_scalar(d, c);
                match p.value {
                    Scalar::Float(v) => render_float(v),
                    Scalar::Int(_) => p.to_string(),
                }
            })
            .collect()
    })?;
    fn nest(shape: &[i64], elems: &[String]) -> String {
        match shape {
            [] => elems.first().cloned().unwrap_or_default(),
            [_] => format!("[{}]", elems.join(" ")),
            [d0, rest @ ..] => {
                let chunk = (elems.len() / (*d0).max(1) as usize).max(1);
                let inner: Vec<String> = elems.chunks(chunk).map(|c| nest(rest, c)).collect();
                format!("[{}]", inner.join(" "))
            }
        }
    }
    Ok(nest(t.shape(), &elems))
}
