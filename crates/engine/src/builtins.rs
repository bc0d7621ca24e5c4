//! Built-in operators with run-time semantics: `call_tir` and its variants, the
//! packed-call operators, `shape_of`, `null_value`, `print`, `assert_op`, device
//! placement, closures, and the explicit memory operators of lowered programs.

use std::sync::Arc;

use relax_ir::relax::{Call, ExprKind, StructInfo, TensorStructInfo};
use relax_ir::{AttrValue, DataType, GlobalVar, VDevice};

use crate::device::resolve_vdevice;
use crate::engine::Place;
use crate::error::{EngineError, Result};
use crate::interp::{Frame, Interp};
use crate::kernel::StagedArg;
use crate::prim::eval_int;
use crate::value::{Closure, ClosureFunc, HostBytes, PrimValue, Scalar, Storage, StorageObject, Tensor, Value};
use smallvec::SmallVec;

/// Evaluate a call of the operator `name`.
pub(crate) fn call_op(it: &mut Interp, name: &str, call: &Call, frame: &mut Frame) -> Result<Value> {
    let short = name.strip_prefix("relax.").unwrap_or(name);
    match short {
        "call_tir" | "call_tir_with_grad" | "dist.call_tir" => call_tir(it, call, frame, None),
        "call_tir_inplace" => {
            let idx = inplace_indices(call, short)?;
            call_tir(it, call, frame, Some(idx))
        }
        "vm.call_tir_dyn" => call_tir_dyn(it, call, frame),
        "call_dps_packed" => call_dps_packed(it, call, frame),
        "call_pure_packed" | "call_inplace_packed" => {
            let (callee, rest) = call.args.split_first().ok_or_else(|| arity(short, "a callee"))?;
            let f = it.eval(callee, frame)?;
            let args = it.eval_args(rest, frame)?;
            match &f {
                Value::PackedFunc(p) => it.call_packed(p, &args),
                other => it.call_value(other, args),
            }
        }
        "invoke_closure" | "invoke_pure_closure" => {
            let [clo, args] = call.args.as_slice() else {
                return Err(arity(short, "a closure and an argument tuple"));
            };
            let f = it.eval(clo, frame)?;
            let args = tuple_fields(it.eval(args, frame)?, short)?;
            it.call_value(&f, args)
        }
        "make_closure" => {
            let [func, args] = call.args.as_slice() else {
                return Err(arity(short, "a function and a tuple of captured values"));
            };
            let ExprKind::GlobalVar(g) = func.kind() else {
                return Err(EngineError::Type(
                    "make_closure: the function must be a GlobalVar".into(),
                ));
            };
            let bound_args = tuple_fields(it.eval(args, frame)?, short)?;
            Ok(Value::Closure(Arc::new(Closure {
                program: it.prog.clone(),
                func: ClosureFunc::Global(g.clone()),
                captured: Vec::new(),
                captured_shapes: Arc::default(),
                self_var: None,
                bound_args,
            })))
        }
        "shape_of" => {
            let t = one_arg(it, call, frame, short)?;
            let t = t.expect_tensor("shape_of")?;
            Ok(Value::shape(t.shape()))
        }
        "null_value" => Ok(Value::Null),
        "print" => {
            let args = it.eval_args(&call.args, frame)?;
            let (format, values) = format_and_values(call, &args, 0)?;
            let rendered = values.iter().map(Value::render).collect::<Result<Vec<_>>>()?;
            let line = if format.is_empty() {
                rendered.join(" ")
            } else {
                python_format(&format, &rendered)?
            };
            (it.prog.print)(&line);
            Ok(Value::unit())
        }
        "assert_op" => {
            let args = it.eval_args(&call.args, frame)?;
            let cond = args.first().ok_or_else(|| arity(short, "a condition"))?;
            let ok = assert_condition(cond)?;
            if ok {
                return Ok(Value::unit());
            }
            let (format, values) = format_and_values(call, &args, 1)?;
            let rendered = values.iter().map(Value::render).collect::<Result<Vec<_>>>()?;
            let message = if !format.is_empty() {
                python_format(&format, &rendered)?
            } else if !rendered.is_empty() {
                rendered.join(", ")
            } else {
                "Assertion Failed".to_string()
            };
            Err(EngineError::AssertionFailed(message))
        }
        "to_vdevice" => {
            let v = one_arg(it, call, frame, short)?;
            let t = v.expect_tensor("to_vdevice")?;
            let dst = dst_vdevice(it, call)?;
            Ok(Value::Tensor(it.copy_to_vdevice(t, dst)?))
        }
        "hint_on_device" | "builtin.stop_lift_params" => {
            let mut args = it.eval_args(&call.args, frame)?;
            if args.is_empty() {
                return Err(arity(short, "a value"));
            }
            Ok(args.swap_remove(0))
        }
        "shape_to_tensor" => {
            let v = one_arg(it, call, frame, short)?;
            let s = v
                .as_shape()
                .ok_or_else(|| EngineError::Type(format!("shape_to_tensor of {}", v.describe())))?;
            let mut bytes = Vec::with_capacity(s.len() * 8);
            s.iter().for_each(|d| bytes.extend_from_slice(&d.to_le_bytes()));
            Ok(Value::Tensor(Tensor::from_bytes(
                DataType::INT64,
                &[s.len() as i64],
                bytes,
            )?))
        }
        "tensor_to_shape" => {
            let v = one_arg(it, call, frame, short)?;
            tensor_to_shape(v.expect_tensor("tensor_to_shape")?)
        }
        // TVM runs these through their `FCallPacked` functions (`relax.run.nonzero`,
        // `relax.run.unique`), on the host, whatever device holds the input.
        "nonzero" => {
            let v = one_arg(it, call, frame, short)?;
            nonzero(v.expect_tensor("nonzero")?)
        }
        "unique" => {
            let args = it.eval_args(&call.args, frame)?;
            unique(&args)
        }
        // TVM legalizes `size(x)` to `prod(shape_to_tensor(shape_of(x)))`: the
        // element count as a 0-d `int64` tensor.
        "size" => {
            let v = one_arg(it, call, frame, short)?;
            let n = v.expect_tensor("size")?.shape().iter().product::<i64>();
            Ok(Value::Tensor(Tensor::from_bytes(
                DataType::INT64,
                &[],
                n.to_le_bytes().to_vec(),
            )?))
        }
        "builtin.alloc_tensor" => {
            let args = it.eval_args(&call.args, frame)?;
            let shape = args
                .first()
                .and_then(Value::as_shape)
                .ok_or_else(|| arity(short, "a shape"))?;
            let dtype = dtype_arg(&args, 1, short)?;
            let (place, vdevice) = it.alloc_place(args.get(2).and_then(Value::as_int))?;
            Ok(Value::Tensor(it.alloc_tensor(dtype, shape, vdevice, place)?))
        }
        "memory.alloc_storage" | "vm.alloc_storage" => {
            let args = it.eval_args(&call.args, frame)?;
            let size = args
                .first()
                .and_then(Value::as_shape)
                .ok_or_else(|| arity(short, "a size"))?;
            let nbytes = size
                .iter()
                .try_fold(1usize, |a, &d| usize::try_from(d).ok().and_then(|d| a.checked_mul(d)));
            let nbytes = nbytes.ok_or_else(|| EngineError::Invalid(format!("invalid storage size {size:?}")))?;
            let (place, vdevice) = it.alloc_place(args.get(1).and_then(Value::as_int))?;
            let (storage, vdevice) = match it.alloc_device_storage(nbytes, vdevice.clone(), place)? {
                Some(s) => s,
                None => {
                    it.prog.stats.record_alloc(nbytes);
                    // A planned storage is written before it is read (TVM's storage is
                    // uninitialized too): recycled memory avoids fresh pages every run.
                    let bytes = match crate::host_pool::take(nbytes) {
                        Some(b) => b,
                        None => crate::value::alloc_host(nbytes, || format!("a storage of {nbytes} bytes"))?,
                    };
                    (Storage::host(HostBytes::Owned(bytes)), vdevice)
                }
            };
            Ok(Value::Object(crate::value::Object::new(
                "relax.Storage",
                StorageObject { storage, vdevice },
            )))
        }
        "memory.alloc_tensor" | "vm.alloc_tensor" => {
            // The hottest operator of a planned program (one per kernel call): its
            // arguments are read in place, without a vector of values or a shape object.
            let [storage, offset, shape, dtype, rest @ ..] = call.args.as_slice() else {
                return Err(arity(short, "a storage object, an offset, a shape and a data type"));
            };
            let storage = match it.eval(storage, frame)? {
                Value::Object(o) => o.downcast::<StorageObject>().cloned(),
                _ => None,
            }
            .ok_or_else(|| arity(short, "a storage object"))?;
            let offset = it
                .eval(offset, frame)?
                .as_int()
                .ok_or_else(|| arity(short, "an offset"))?;
            let shape: SmallVec<[i64; 6]> = match shape.kind() {
                ExprKind::ShapeExpr(dims) => dims.iter().map(|d| eval_int(d, &frame.shapes)).collect::<Result<_>>()?,
                _ => SmallVec::from_slice(
                    it.eval(shape, frame)?
                        .as_shape()
                        .ok_or_else(|| arity(short, "a shape"))?,
                ),
            };
            let dtype = match dtype.kind() {
                ExprKind::DataTypeImm(d) => *d,
                _ => dtype_arg(&[it.eval(dtype, frame)?], 0, short)?,
            };
            for r in rest {
                it.eval(r, frame)?;
            }
            crate::value::check_dtype(dtype)?;
            let numel = shape
                .iter()
                .try_fold(1usize, |a, &d| usize::try_from(d).ok().and_then(|d| a.checked_mul(d)));
            let nbytes = numel.and_then(|n| n.checked_mul(dtype.bytes()));
            let offset = usize::try_from(offset).ok();
            match (nbytes, offset) {
                (Some(n), Some(o)) if o.checked_add(n).is_some_and(|end| end <= storage.storage.nbytes) => Ok(
                    Value::Tensor(Tensor::from_storage(dtype, shape.to_vec(), storage.vdevice, storage.storage, o)),
                ),
                _ => Err(EngineError::Invalid(format!(
                    "{short}: a {dtype} tensor of shape {shape:?} at offset {offset:?} does not fit in a storage of {} bytes",
                    storage.storage.nbytes
                ))),
            }
        }
        "memory.kill_storage" | "memory.kill_tensor" | "vm.kill_object" => {
            it.eval_args(&call.args, frame)?;
            Ok(Value::unit())
        }
        _ => Err(EngineError::UnsupportedOp(name.to_string())),
    }
}

/// Packed functions of TVM's runtime that lowered programs call by name.
pub(crate) fn register_standard_packed(registry: &crate::packed::PackedRegistry) {
    use crate::packed::{PackedFunc, Purity};
    crate::kv_cache::register(registry);
    registry.register(PackedFunc::new("vm.builtin.shape_of", Purity::Pure, |args| {
        let t = args
            .first()
            .ok_or_else(|| EngineError::msg("expects a tensor"))?
            .expect_tensor("shape_of")?;
        Ok(Value::shape(t.shape()))
    }));
    registry.register(PackedFunc::new("vm.builtin.tensor_to_shape", Purity::Pure, |args| {
        let v = args.first().ok_or_else(|| EngineError::msg("expects a tensor"))?;
        tensor_to_shape(v.expect_tensor("tensor_to_shape")?)
    }));
    registry.register(PackedFunc::new("relax.run.nonzero", Purity::Pure, |args| {
        let v = args.first().ok_or_else(|| EngineError::msg("expects a tensor"))?;
        nonzero(v.expect_tensor("nonzero")?)
    }));
    registry.register(PackedFunc::new("relax.run.unique", Purity::Pure, unique));
}

/// The element size in bytes of a tensor `op` reads element by element; sub-byte
/// types other than `bool` (packed `int4`, `float4_e2m1fn`) are not supported.
fn element_bytes(t: &Tensor, op: &str) -> Result<usize> {
    let d = t.dtype();
    if d.lanes != 1 || (d.bits < 8 && !d.is_bool()) {
        return Err(EngineError::Type(format!("R.{op}: data type {d} is not supported")));
    }
    Ok(d.bytes().max(1))
}

/// `R.nonzero(x)`: the coordinates of the nonzero elements, one row per axis
/// (`int64`, shape `(max(ndim, 1), count)`, in row-major order of the elements);
/// numpy's `np.stack(np.atleast_1d(x).nonzero())`. NaN is nonzero.
fn nonzero(t: &Tensor) -> Result<Value> {
    let n = element_bytes(t, "nonzero")?;
    let d = t.dtype();
    let shape: Vec<i64> = if t.ndim() == 0 { vec![1] } else { t.shape().to_vec() };
    let hits: Vec<usize> = t.with_bytes(|b| {
        b.chunks_exact(n)
            .enumerate()
            .filter(|(_, c)| match crate::value::decode_scalar(d, c).value {
                Scalar::Int(v) => v != 0,
                Scalar::Float(f) => f != 0.0,
            })
            .map(|(i, _)| i)
            .collect()
    })?;
    let (rank, k) = (shape.len(), hits.len());
    let mut coords = vec![0i64; rank * k];
    for (j, &flat) in hits.iter().enumerate() {
        let mut r = flat as i64;
        for a in (0..rank).rev() {
            let e = shape[a].max(1);
            coords[a * k + j] = r % e;
            r /= e;
        }
    }
    let bytes = coords.iter().flat_map(|v| v.to_le_bytes()).collect();
    Ok(Value::Tensor(Tensor::from_bytes(
        DataType::INT64,
        &[rank as i64, k as i64],
        bytes,
    )?))
}

/// A decoded element, ordered as numpy sorts: integers by value, floats by value
/// with NaN last (`-0.0` equals `0.0`).
#[derive(Clone, Copy)]
enum Key {
    Int(i128),
    Float(f64),
}

impl Key {
    fn of(d: DataType, bytes: &[u8]) -> Key {
        let p = crate::value::decode_scalar(d, bytes);
        match p.value {
            Scalar::Int(v) if d.is_uint() => Key::Int(i128::from(v as u64)),
            Scalar::Int(v) => Key::Int(i128::from(v)),
            Scalar::Float(f) => Key::Float(f),
        }
    }
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        match (self, other) {
            (Key::Int(a), Key::Int(b)) => a.cmp(b),
            (Key::Float(a), Key::Float(b)) => a.partial_cmp(b).unwrap_or_else(|| a.is_nan().cmp(&b.is_nan())),
            (Key::Int(_), Key::Float(_)) => std::cmp::Ordering::Less,
            (Key::Float(_), Key::Int(_)) => std::cmp::Ordering::Greater,
        }
    }
    /// Equality; `nan_equal` makes NaN equal to NaN (numpy's flattened `unique`
    /// does, its `axis` form compares rows with NaN unequal to everything).
    fn eq(&self, other: &Key, nan_equal: bool) -> bool {
        match (self, other) {
            (Key::Int(a), Key::Int(b)) => a == b,
            (Key::Float(a), Key::Float(b)) => a == b || (nan_equal && a.is_nan() && b.is_nan()),
            _ => false,
        }
    }
}

/// `R.unique(x, sorted, return_index, return_inverse, return_counts[, axis])`, as
/// TVM's `relax.run.unique` (numpy's `np.unique`): the unique elements (or the
/// unique slices along `axis`), ascending or, unsorted, in order of first
/// occurrence; then, as asked, the index of each one's first occurrence, the
/// position of every input element (slice) among them (1-d), and their counts
/// (all `int64`). A 0-d input counts as a 1-element vector.
fn unique(args: &[Value]) -> Result<Value> {
    let t = args
        .first()
        .ok_or_else(|| arity("unique", "a tensor"))?
        .expect_tensor("unique")?;
    let flag = |i: usize| -> Result<bool> {
        args.get(i).and_then(Value::as_int).map(|v| v != 0).ok_or_else(|| {
            arity(
                "unique",
                "the flags sorted, return_index, return_inverse and return_counts",
            )
        })
    };
    let (sorted, want_index, want_inverse, want_counts) = (flag(1)?, flag(2)?, flag(3)?, flag(4)?);
    let axis = match args.get(5) {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_int()
                .ok_or_else(|| EngineError::Type(format!("R.unique: axis must be an integer, got {}", v.describe())))?,
        ),
    };
    let n = element_bytes(t, "unique")?;
    let d = t.dtype();
    let shape = t.shape().to_vec();
    // Items: the elements (flattened), or the slices along `axis`: `outer` blocks of
    // `len` items of `inner` elements.
    let (outer, len, inner, axis) = match axis {
        None => (1usize, t.numel().max(1), 1usize, None),
        Some(a) => {
            let nd = shape.len() as i64;
            let a = if a < 0 { a + nd } else { a };
            if a < 0 || a >= nd {
                return Err(EngineError::Type(format!(
                    "R.unique: axis {a} is out of range for a tensor of rank {nd}"
                )));
            }
            let a = a as usize;
            let dims = |s: &[i64]| s.iter().map(|&x| x.max(0) as usize).product::<usize>();
            (
                dims(&shape[..a]),
                shape[a].max(0) as usize,
                dims(&shape[a + 1..]),
                Some(a),
            )
        }
    };
    let bytes = t.to_bytes()?;
    let keys: Vec<Key> = bytes.chunks_exact(n).map(|c| Key::of(d, c)).collect();
    let elem = |item: usize, o: usize, k: usize| (o * len + item) * inner + k;
    let row_cmp = |a: usize, b: usize| {
        for o in 0..outer {
            for k in 0..inner {
                let c = keys[elem(a, o, k)].cmp(&keys[elem(b, o, k)]);
                if c != std::cmp::Ordering::Equal {
                    return c;
                }
            }
        }
        std::cmp::Ordering::Equal
    };
    let nan_equal = axis.is_none();
    let row_eq = |a: usize, b: usize| {
        (0..outer).all(|o| (0..inner).all(|k| keys[elem(a, o, k)].eq(&keys[elem(b, o, k)], nan_equal)))
    };
    let items = if t.numel() == 0 && axis.is_none() { 0 } else { len };
    let mut perm: Vec<usize> = (0..items).collect();
    perm.sort_by(|&a, &b| row_cmp(a, b)); // stable: equal items keep their order
                                          // Groups of equal items: (first index, count), in sorted order.
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut group_of = vec![0usize; items];
    for (pos, &i) in perm.iter().enumerate() {
        let same = pos > 0 && row_eq(perm[pos - 1], i);
        if !same {
            groups.push((i, 0));
        }
        let g = groups.len() - 1;
        groups[g].1 += 1;
        group_of[i] = g;
    }
    // Unsorted: groups in order of first occurrence.
    let mut order: Vec<usize> = (0..groups.len()).collect();
    if !sorted {
        order.sort_by_key(|&g| groups[g].0);
    }
    let mut rank = vec![0usize; groups.len()];
    for (r, &g) in order.iter().enumerate() {
        rank[g] = r;
    }
    let ng = groups.len();
    let mut values = Vec::with_capacity(ng * outer * inner * n);
    for o in 0..outer {
        for &g in &order {
            let first = groups[g].0;
            for k in 0..inner {
                let e = elem(first, o, k) * n;
                values.extend_from_slice(&bytes[e..e + n]);
            }
        }
    }
    let vshape: Vec<i64> = match axis {
        None => vec![ng as i64],
        Some(a) => {
            let mut s = shape.clone();
            s[a] = ng as i64;
            s
        }
    };
    let ints = |v: Vec<i64>| -> Result<Value> {
        let len = v.len() as i64;
        let b = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        Ok(Value::Tensor(Tensor::from_bytes(DataType::INT64, &[len], b)?))
    };
    let mut out = vec![Value::Tensor(Tensor::from_bytes(d, &vshape, values)?)];
    if want_index {
        out.push(ints(order.iter().map(|&g| groups[g].0 as i64).collect())?);
    }
    if want_inverse {
        out.push(ints(group_of.iter().map(|&g| rank[g] as i64).collect())?);
    }
    if want_counts {
        out.push(ints(order.iter().map(|&g| groups[g].1 as i64).collect())?);
    }
    if out.len() == 1 {
        return Ok(out.remove(0));
    }
    Ok(Value::tuple(out))
}

fn tensor_to_shape(t: &Tensor) -> Result<Value> {
    if t.ndim() != 1 || !t.dtype().is_integer() {
        return Err(EngineError::Type(format!(
            "tensor_to_shape needs a 1-d integer tensor, got {}",
            t.describe()
        )));
    }
    let (d, n) = (t.dtype(), t.dtype().bytes());
    let dims = t.with_bytes(|b| {
        b.chunks_exact(n)
            .map(|c| crate::value::decode_scalar(d, c).as_int().unwrap_or(0))
            .collect::<Vec<_>>()
    })?;
    Ok(Value::shape(&dims))
}

fn arity(op: &str, what: &str) -> EngineError {
    EngineError::Type(format!("R.{op} expects {what}"))
}

fn one_arg(it: &mut Interp, call: &Call, frame: &mut Frame, op: &str) -> Result<Value> {
    let first = call.args.first().ok_or_else(|| arity(op, "an argument"))?;
    it.eval(first, frame)
}

fn tuple_fields(v: Value, op: &str) -> Result<Vec<Value>> {
    match v {
        Value::Tuple(f) => Ok(f.to_vec()),
        other => Err(EngineError::Type(format!(
            "R.{op}: expected a tuple of arguments, got {}",
            other.describe()
        ))),
    }
}

fn dtype_arg(args: &[Value], i: usize, op: &str) -> Result<DataType> {
    match args.get(i) {
        Some(Value::DataType(d)) => Ok(*d),
        Some(Value::Str(s)) => s
            .parse()
            .map_err(|e: relax_ir::dtype::ParseDataTypeError| EngineError::Type(e.to_string())),
        _ => Err(arity(op, "a data type")),
    }
}

fn inplace_indices(call: &Call, op: &str) -> Result<Vec<i64>> {
    call.attrs
        .get("inplace_indices")
        .and_then(AttrValue::as_int_list)
        .ok_or_else(|| EngineError::Type(format!("R.{op} needs an `inplace_indices` attribute")))
}

/// Allocate the output described by a `TensorStructInfo` of `sinfo_args`, in the
/// memory of `place`.
fn alloc_output(it: &Interp, ts: &TensorStructInfo, frame: &Frame, op: &str, place: Place) -> Result<Tensor> {
    if ts.dtype.is_void() {
        return Err(EngineError::Type(format!(
            "R.{op}: output StructInfo needs a known dtype"
        )));
    }
    let dims = match ts.shape.as_ref().map(|s| s.kind()) {
        Some(ExprKind::ShapeExpr(dims)) => dims
            .iter()
            .map(|d| eval_int(d, &frame.shapes))
            .collect::<Result<Vec<_>>>()?,
        Some(ExprKind::Var(v)) => match frame.vars.get(v) {
            Some(Value::Shape(s)) => s.to_vec(),
            Some(other) => {
                return Err(EngineError::Type(format!(
                    "R.{op}: output shape `{}` is {}",
                    v.name(),
                    other.describe()
                )))
            }
            None => return Err(EngineError::UnboundVar(v.name().to_string())),
        },
        _ => return Err(EngineError::Type(format!("R.{op}: output StructInfo needs a shape"))),
    };
    it.alloc_tensor(ts.dtype, &dims, ts.vdevice.clone(), place)
}

/// The outputs of a destination-passing call: one tensor, or a tuple of tensors.
fn output_infos<'a>(sinfo_args: &'a [StructInfo], op: &str) -> Result<(Vec<&'a TensorStructInfo>, bool)> {
    let as_tensor = |s: &'a StructInfo| {
        s.as_tensor()
            .ok_or_else(|| EngineError::Type(format!("R.{op}: outputs must be tensors with a shape")))
    };
    match sinfo_args {
        [StructInfo::Tuple(fields)] => Ok((fields.iter().map(as_tensor).collect::<Result<_>>()?, true)),
        [single] => Ok((vec![as_tensor(single)?], false)),
        many => Ok((many.iter().map(as_tensor).collect::<Result<_>>()?, true)),
    }
}

fn pack_outputs(outs: Vec<Tensor>, as_tuple: bool) -> Value {
    if as_tuple {
        Value::tuple(outs.into_iter().map(Value::Tensor).collect())
    } else {
        outs.into_iter().next().map(Value::Tensor).unwrap_or_else(Value::unit)
    }
}

/// Symbolic `tir_vars` of `call_tir`: the dimensions of a shape value.
fn packed_ints(v: Value, op: &str) -> Result<Vec<StagedArg>> {
    match v {
        Value::Shape(s) => Ok(s.iter().map(|&d| StagedArg::Scalar(PrimValue::int64(d))).collect()),
        other => Err(EngineError::Type(format!(
            "R.{op}: tir_vars must be a shape, got {}",
            other.describe()
        ))),
    }
}

fn prim_func_of(it: &mut Interp, call: &Call, frame: &mut Frame, op: &str) -> Result<GlobalVar> {
    let f = call.args.first().ok_or_else(|| arity(op, "a PrimFunc"))?;
    if let ExprKind::GlobalVar(g) = f.kind() {
        return Ok(g.clone());
    }
    match it.eval(f, frame)? {
        Value::PrimFunc(p) if Arc::ptr_eq(&p.program, &it.prog) => Ok(p.name.clone()),
        other => Err(EngineError::Type(format!(
            "R.{op}: the callee must be a PrimFunc, got {}",
            other.describe()
        ))),
    }
}

/// `call_tir` (inplace: `Some(indices)` for `call_tir_inplace`).
fn call_tir(it: &mut Interp, call: &Call, frame: &mut Frame, inplace: Option<Vec<i64>>) -> Result<Value> {
    let op = if inplace.is_some() {
        "call_tir_inplace"
    } else {
        "call_tir"
    };
    let gv = prim_func_of(it, call, frame, op)?;
    let args_expr = call.args.get(1).ok_or_else(|| arity(op, "a tuple of arguments"))?;
    let inputs = tuple_fields(it.eval(args_expr, frame)?, op)?;
    let tir_vars = match call.args.get(2) {
        Some(e) => packed_ints(it.eval(e, frame)?, op)?,
        None => Vec::new(),
    };
    let (infos, as_tuple) = output_infos(&call.sinfo_args, op)?;
    let written: Vec<usize> = match &inplace {
        Some(idx) => {
            if idx.len() != infos.len() {
                return Err(EngineError::Type(format!(
                    "R.{op}: {} inplace_indices for {} outputs",
                    idx.len(),
                    infos.len()
                )));
            }
            idx.iter().filter_map(|&i| usize::try_from(i).ok()).collect()
        }
        None => Vec::new(),
    };
    let mut staged = Vec::with_capacity(inputs.len() + tir_vars.len() + infos.len());
    for (i, a) in inputs.iter().enumerate() {
        staged.push(match a {
            Value::Tensor(t) => StagedArg::Tensor(t.clone(), written.contains(&i)),
            Value::Prim(p) => StagedArg::Scalar(*p),
            other => {
                return Err(EngineError::Type(format!(
                    "R.{op}: argument {i} of `{}` must be a tensor, got {}",
                    gv.name(),
                    other.describe()
                )))
            }
        });
    }
    staged.extend(tir_vars);
    let out_vdevices: Vec<Option<&VDevice>> = infos.iter().map(|ts| ts.vdevice.as_ref()).collect();
    let place = it.place_kernel(&out_vdevices, &staged)?;
    let mut outs = Vec::with_capacity(infos.len());
    for (k, ts) in infos.iter().enumerate() {
        let target = inplace.as_ref().map(|idx| idx[k]).unwrap_or(-1);
        if target < 0 {
            let t = alloc_output(it, ts, frame, op, place)?;
            staged.push(StagedArg::Tensor(t.clone(), true));
            outs.push(t);
        } else {
            let t = inputs.get(target as usize).and_then(Value::as_tensor).ok_or_else(|| {
                EngineError::Type(format!(
                    "R.{op}: inplace index {target} does not name a tensor argument"
                ))
            })?;
            outs.push(t.clone());
        }
    }
    it.run_kernel_at(&gv, &staged, place)?;
    Ok(pack_outputs(outs, as_tuple))
}

/// `vm.call_tir_dyn(func, (args..., shape))`: explicit destination passing.
fn call_tir_dyn(it: &mut Interp, call: &Call, frame: &mut Frame) -> Result<Value> {
    let op = "vm.call_tir_dyn";
    let gv = prim_func_of(it, call, frame, op)?;
    let args_expr = call.args.get(1).ok_or_else(|| arity(op, "a tuple of arguments"))?;
    let mut args = tuple_fields(it.eval(args_expr, frame)?, op)?;
    let tir_vars = match args.last() {
        Some(Value::Shape(_)) => args.pop().map(|s| packed_ints(s, op)).transpose()?.unwrap_or_default(),
        _ => Vec::new(),
    };
    let mut staged = Vec::new();
    let mut seen = Vec::new();
    for a in args {
        match a {
            Value::Tensor(t) => {
                let p = Arc::as_ptr(&t.0.storage);
                let first = !seen.contains(&p);
                seen.push(p);
                staged.push(StagedArg::Tensor(t, first));
            }
            Value::Prim(p) => staged.push(StagedArg::Scalar(p)),
            other => {
                return Err(EngineError::Type(format!(
                    "R.{op}: unexpected argument {}",
                    other.describe()
                )))
            }
        }
    }
    staged.extend(tir_vars);
    it.run_kernel(&gv, &staged)?;
    Ok(Value::unit())
}

/// `call_dps_packed(func, args, sinfo_args)`: allocate outputs, call `func(args..., outs...)`.
fn call_dps_packed(it: &mut Interp, call: &Call, frame: &mut Frame) -> Result<Value> {
    let op = "call_dps_packed";
    let callee = call.args.first().ok_or_else(|| arity(op, "a packed function"))?;
    let f = it.eval(callee, frame)?;
    let args_expr = call.args.get(1).ok_or_else(|| arity(op, "a tuple of arguments"))?;
    let mut args = tuple_fields(it.eval(args_expr, frame)?, op)?;
    let (infos, as_tuple) = output_infos(&call.sinfo_args, op)?;
    let outs = infos
        .iter()
        .map(|ts| alloc_output(it, ts, frame, op, Place::Host))
        .collect::<Result<Vec<_>>>()?;
    args.extend(outs.iter().cloned().map(Value::Tensor));
    match &f {
        Value::PackedFunc(p) => {
            it.call_packed(p, &args)?;
        }
        other => {
            it.call_value(other, args)?;
        }
    }
    Ok(pack_outputs(outs, as_tuple))
}

/// The destination of `to_vdevice`: `kind:index[:scope]` as TVMScript writes it (the
/// index counts the module's VDevices of that kind), or an index into the module's
/// VDevice list.
fn dst_vdevice(it: &Interp, call: &Call) -> Result<VDevice> {
    let attr = call
        .attrs
        .get("dst_vdevice")
        .ok_or_else(|| EngineError::Type("R.to_vdevice needs a `dst_vdevice` attribute".into()))?;
    match attr {
        AttrValue::Int(i) => usize::try_from(*i)
            .ok()
            .and_then(|i| it.prog.module.vdevices().get(i).map(|v| (*v).clone()))
            .ok_or_else(|| EngineError::Type(format!("R.to_vdevice: no VDevice with index {i} in the module"))),
        AttrValue::Str(s) => {
            resolve_vdevice(&it.prog.module, s).map_err(|e| EngineError::Type(format!("R.to_vdevice: {e}")))
        }
        other => Err(EngineError::Type(format!(
            "R.to_vdevice: cannot read a VDevice from {other:?}"
        ))),
    }
}

/// The format string and the values of `print`/`assert_op`: TVM puts the format
/// first among `args[skip..]`; an explicit `format` attribute is honoured too.
fn format_and_values<'a>(call: &Call, args: &'a [Value], skip: usize) -> Result<(String, &'a [Value])> {
    if let Some(f) = call.attrs.get_str("format") {
        return Ok((f.to_string(), &args[skip.min(args.len())..]));
    }
    match args.get(skip) {
        Some(Value::Str(s)) => Ok((s.to_string(), &args[skip + 1..])),
        Some(other) => Err(EngineError::Type(format!(
            "the format argument must be a string, got {}",
            other.describe()
        ))),
        None => Ok((String::new(), &[])),
    }
}

fn assert_condition(v: &Value) -> Result<bool> {
    match v {
        Value::Prim(p) if p.dtype.is_integer() => Ok(matches!(p.value, Scalar::Int(i) if i != 0)),
        Value::Tensor(t) if t.dtype().is_bool() && t.ndim() == 0 => {
            Ok(matches!(t.scalar_value()?.value, Scalar::Int(i) if i != 0))
        }
        Value::Tensor(t) if !t.dtype().is_bool() => Err(EngineError::Type(format!(
            "The condition must be a bool scalar, but given a {} tensor",
            t.dtype()
        ))),
        Value::Tensor(t) => Err(EngineError::Type(format!(
            "The condition must be a scalar, but it has a shape of {:?}",
            t.shape()
        ))),
        other => Err(EngineError::Type(format!(
            "The condition must be a bool, got {}",
            other.describe()
        ))),
    }
}

/// Python's `str.format` for `{}`, `{0}` and `{{`/`}}` (format specs are ignored).
pub(crate) fn python_format(fmt: &str, args: &[String]) -> Result<String> {
    let mut out = String::new();
    let mut next = 0usize;
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut field = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(ch) => field.push(ch),
                        None => return Err(EngineError::Type(format!("unterminated `{{` in format string {fmt:?}"))),
                    }
                }
                let name = field.split([':', '!']).next().unwrap_or("");
                let idx = if name.is_empty() {
                    next += 1;
                    next - 1
                } else {
                    name.parse::<usize>()
                        .map_err(|_| EngineError::Type(format!("unsupported format field {{{field}}} in {fmt:?}")))?
                };
                let arg = args.get(idx).ok_or_else(|| {
                    EngineError::Type(format!(
                        "format string {fmt:?} needs argument {idx}, only {} given",
                        args.len()
                    ))
                })?;
                out.push_str(arg);
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::python_format;

    #[test]
    fn formats_like_python() {
        let a = vec!["1".to_string(), "x".to_string()];
        assert_eq!(python_format("a={} b={}", &a).unwrap(), "a=1 b=x");
        assert_eq!(python_format("{1}{0} {{}}", &a).unwrap(), "x1 {}");
        assert!(python_format("{} {} {}", &a).is_err());
        assert!(python_format("{", &a).is_err());
    }
}
