//! Arguments bound by parameter name: the weights of a real network are hundreds of
//! parameters of `main`, kept in one `.npz` file keyed by parameter name.
//!
//! [`Params`] holds named tensors (read with [`Params::read_npz`] or built by hand);
//! [`bind_args`] turns named and positional arguments into the argument list of a
//! function, checking each against its parameter's StructInfo; [`Loaded::run_named`]
//! does both and runs.
//!
//! ```
//! use relax_engine::{params::Params, Engine, Tensor, Value};
//! # fn main() -> Result<(), relax_engine::EngineError> {
//! let src = r#"
//! # from tvm.script import relax as R
//! @R.function
//! def main(x: R.Tensor((2,), dtype="float32"), w: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
//!     return R.add(x, w)
//! "#;
//! let module = relax_ir::text::parse(src).map_err(|d| relax_engine::EngineError::msg(d.to_string()))?.into_module();
//! let loaded = Engine::default().load(&module)?;
//! let mut weights = Params::new();
//! weights.insert("w", Value::Tensor(Tensor::from_array(&ndarray::arr1(&[10.0f32, 20.0]).into_dyn())));
//! let x = Value::Tensor(Tensor::from_array(&ndarray::arr1(&[1.0f32, 2.0]).into_dyn()));
//! let y = loaded.run_named("main", &[x], &weights)?;
//! assert_eq!(y.as_tensor().map(|t| t.shape().to_vec()), Some(vec![2]));
//! # Ok(()) }
//! ```

use std::path::Path;

use ndarray::ArrayD;
use ndarray_npy::{NpzReader, ReadNpyExt, ReadableElement};
use relax_ir::{BaseFunc, Function, GlobalVar, IRModule, StructInfo, TensorStructInfo};

use crate::engine::Loaded;
use crate::error::{EngineError, Result};
use crate::value::{Element, Tensor, Value};

/// Values keyed by name, in insertion order (for example a model's weights keyed by
/// the names of `main`'s parameters).
#[derive(Clone, Debug, Default)]
pub struct Params {
    entries: Vec<(String, Value)>,
}

impl Params {
    /// No entries.
    pub fn new() -> Params {
        Params::default()
    }

    /// Set `name` to `value`, replacing an earlier value of the same name.
    pub fn insert(&mut self, name: impl Into<String>, value: Value) {
        let name = name.into();
        match self.entries.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.entries.push((name, value)),
        }
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// Every array of an `.npz` file (as written by `numpy.savez` or
    /// `numpy.savez_compressed`), keyed by its name without the `.npy` suffix.
    pub fn read_npz(path: &Path) -> Result<Params> {
        let file = std::fs::File::open(path)
            .map_err(|e| EngineError::Invalid(format!("cannot read {}: {e}", path.display())))?;
        let mut npz = NpzReader::new(file)
            .map_err(|e| EngineError::Invalid(format!("{}: not an .npz file: {e}", path.display())))?;
        let names = npz
            .names()
            .map_err(|e| EngineError::Invalid(format!("{}: {e}", path.display())))?;
        let mut params = Params::new();
        for (i, name) in names.into_iter().enumerate() {
            let tensor = read_npz_entry(&mut npz, i).ok_or_else(|| {
                EngineError::Invalid(format!(
                    "{}: entry `{name}` is not an array of a supported dtype ({SUPPORTED})",
                    path.display()
                ))
            })?;
            params.insert(name, Value::Tensor(tensor));
        }
        Ok(params)
    }
}

impl FromIterator<(String, Value)> for Params {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Params {
        let mut p = Params::new();
        for (n, v) in iter {
            p.insert(n, v);
        }
        p
    }
}

/// The dtypes `.npy` files may hold.
const SUPPORTED: &str = "bool, int8..int64, uint8..uint64, float32, float64; C order";

fn try_npz<T: ReadableElement + Element>(npz: &mut NpzReader<std::fs::File>, i: usize) -> Option<Tensor> {
    npz.by_index::<ndarray::OwnedRepr<T>, ndarray::IxDyn>(i)
        .ok()
        .map(|a| Tensor::from_array(&a))
}

fn read_npz_entry(npz: &mut NpzReader<std::fs::File>, i: usize) -> Option<Tensor> {
    try_npz::<f32>(npz, i)
        .or_else(|| try_npz::<f64>(npz, i))
        .or_else(|| try_npz::<i64>(npz, i))
        .or_else(|| try_npz::<i32>(npz, i))
        .or_else(|| try_npz::<i16>(npz, i))
        .or_else(|| try_npz::<i8>(npz, i))
        .or_else(|| try_npz::<u8>(npz, i))
        .or_else(|| try_npz::<u16>(npz, i))
        .or_else(|| try_npz::<u32>(npz, i))
        .or_else(|| try_npz::<u64>(npz, i))
        .or_else(|| try_npz::<bool>(npz, i))
}

fn try_npy<T: ReadableElement + Element>(bytes: &[u8]) -> Option<Tensor> {
    ArrayD::<T>::read_npy(bytes).ok().map(|a| Tensor::from_array(&a))
}

/// A tensor from the bytes of a `.npy` file.
pub fn parse_npy(bytes: &[u8]) -> Option<Tensor> {
    try_npy::<f32>(bytes)
        .or_else(|| try_npy::<f64>(bytes))
        .or_else(|| try_npy::<i32>(bytes))
        .or_else(|| try_npy::<i64>(bytes))
        .or_else(|| try_npy::<i8>(bytes))
        .or_else(|| try_npy::<i16>(bytes))
        .or_else(|| try_npy::<u8>(bytes))
        .or_else(|| try_npy::<u16>(bytes))
        .or_else(|| try_npy::<u32>(bytes))
        .or_else(|| try_npy::<u64>(bytes))
        .or_else(|| try_npy::<bool>(bytes))
}

/// A tensor read from a `.npy` file.
pub fn read_npy(path: &Path) -> Result<Tensor> {
    let bytes =
        std::fs::read(path).map_err(|e| EngineError::Invalid(format!("cannot read {}: {e}", path.display())))?;
    parse_npy(&bytes).ok_or_else(|| {
        EngineError::Invalid(format!(
            "{}: not a .npy file of a supported dtype ({SUPPORTED})",
            path.display()
        ))
    })
}

/// The `in*.npy` files of `dir` in name order, as tensors: the positional arguments
/// of a network prepared by `prep.py` (`in0000.npy`, `in0001.npy`, ...).
pub fn read_npy_inputs(dir: &Path) -> Result<Vec<Tensor>> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| EngineError::Invalid(format!("cannot list {}: {e}", dir.display())))?;
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("in") && n.ends_with(".npy"))
        })
        .collect();
    files.sort();
    files.iter().map(|p| read_npy(p)).collect()
}

/// The public Relax function `func` of `module`.
fn entry_function<'m>(module: &'m IRModule, func: &str) -> Result<&'m Function> {
    match module.functions.get(&GlobalVar::new(func)) {
        Some(BaseFunc::Relax(f)) => Ok(f),
        Some(BaseFunc::Prim(_)) => Err(EngineError::Type(format!(
            "`{func}` is a TIR PrimFunc; entry points are Relax functions"
        ))),
        None => Err(EngineError::UnknownFunction(func.to_string())),
    }
}

/// The argument list of `module`'s function `func`: each parameter takes the entry
/// of `named` with its name, and the parameters left take `positional` in order.
///
/// Errors name the parameter: an entry of `named` that is no parameter, a parameter
/// neither named nor given positionally, positional arguments left over, and a tensor
/// whose dtype, rank or static shape differs from its parameter's StructInfo (with
/// the expected and the given dtype or shape).
pub fn bind_args(module: &IRModule, func: &str, positional: &[Value], named: &Params) -> Result<Vec<Value>> {
    let f = entry_function(module, func)?;
    let names: Vec<&str> = f.params.iter().map(|p| p.name()).collect();
    for (name, _) in named.iter() {
        match names.iter().filter(|n| **n == name).count() {
            0 => {
                return Err(EngineError::Invalid(format!(
                    "`{func}` has no parameter `{name}` (given by name)"
                )))
            }
            1 => {}
            _ => {
                return Err(EngineError::Invalid(format!(
                    "`{func}` has several parameters named `{name}`; give them positionally"
                )))
            }
        }
    }
    let mut rest = positional.iter();
    let mut args = Vec::with_capacity(f.params.len());
    for (i, param) in f.params.iter().enumerate() {
        let name = param.name();
        let value = match named.get(name) {
            Some(v) => v.clone(),
            None => rest.next().cloned().ok_or_else(|| {
                let missing: Vec<&str> = names[i..].iter().copied().filter(|n| named.get(n).is_none()).collect();
                EngineError::Invalid(format!(
                    "`{func}`: parameter `{name}` (parameter {i}) has no argument: not given by name \
                     and only {} positional argument(s) given ({} parameter(s) unbound: {})",
                    positional.len(),
                    missing.len(),
                    abbreviate(&missing)
                ))
            })?,
        };
        check_arg(func, i, param.name(), param.struct_info(), &value)?;
        args.push(value);
    }
    let extra = rest.count();
    if extra > 0 {
        return Err(EngineError::Invalid(format!(
            "`{func}` takes {} parameter(s), {} given by name; {extra} positional argument(s) too many",
            f.params.len(),
            named.len()
        )));
    }
    Ok(args)
}

/// At most eight names, then a count.
fn abbreviate(names: &[&str]) -> String {
    let shown: Vec<String> = names.iter().take(8).map(|n| format!("`{n}`")).collect();
    if names.len() > 8 {
        format!("{}, ... ({} more)", shown.join(", "), names.len() - 8)
    } else {
        shown.join(", ")
    }
}

/// `(1, 3, 224, 224)`, as TVMScript writes shapes.
fn shape_text(shape: &[i64]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    }
}

/// How a tensor argument fails its parameter's annotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgMismatch {
    /// Another dtype.
    Dtype,
    /// Another number of dimensions.
    Rank,
    /// A static dimension differs.
    Dims,
}

/// The first way (dtype, then rank, then a static dimension) in which `tensor`
/// fails the annotation `t`, if any.
pub fn arg_mismatch(t: &TensorStructInfo, tensor: &Tensor) -> Option<ArgMismatch> {
    if !t.dtype.is_void() && t.dtype != tensor.dtype() {
        return Some(ArgMismatch::Dtype);
    }
    if t.ndim >= 0 && t.ndim as usize != tensor.ndim() {
        return Some(ArgMismatch::Rank);
    }
    let dims_ok = t.shape_values().is_none_or(|d| {
        d.len() == tensor.ndim()
            && d.iter()
                .zip(tensor.shape())
                .all(|(e, &v)| e.as_int().is_none_or(|e| e == v))
    });
    (!dims_ok).then_some(ArgMismatch::Dims)
}

/// The dimensions of `t` as TVMScript writes them (`n`, `3`), when its shape is known.
pub fn dims_text(t: &TensorStructInfo) -> Option<Vec<String>> {
    use relax_ir::text::printer::prim_expr::{print_prim_expr, PrimContext};
    let dims = t.shape_values()?;
    Some(dims.iter().map(|e| print_prim_expr(e, PrimContext::Relax)).collect())
}

/// Check a tensor argument against its parameter's dtype, rank and static dimensions.
fn check_arg(func: &str, i: usize, name: &str, sinfo: Option<&StructInfo>, value: &Value) -> Result<()> {
    let (Some(StructInfo::Tensor(t)), Some(tensor)) = (sinfo, value.as_tensor()) else {
        return Ok(());
    };
    let place = format!("`{func}`: parameter `{name}` (parameter {i})");
    let got = shape_text(tensor.shape());
    let message = match arg_mismatch(t, tensor) {
        None => return Ok(()),
        Some(ArgMismatch::Dtype) => format!(
            "{place}: expected dtype {}, got {} (shape {got})",
            t.dtype,
            tensor.dtype()
        ),
        Some(ArgMismatch::Rank | ArgMismatch::Dims) => {
            let expected = match dims_text(t) {
                Some(shown) if shown.len() == 1 => format!("shape ({},)", shown[0]),
                Some(shown) => format!("shape ({})", shown.join(", ")),
                None => format!("{} dimension(s)", t.ndim),
            };
            format!("{place}: expected {expected}, got shape {got}")
        }
    };
    Err(EngineError::Invalid(message))
}

impl Loaded {
    /// Call the public Relax function `func`: parameters named in `named` take those
    /// values, the others take `positional` in order (see [`bind_args`]).
    pub fn run_named(&self, func: &str, positional: &[Value], named: &Params) -> Result<Value> {
        let args = bind_args(self.module(), func, positional, named)?;
        self.run(func, &args)
    }
}
