//! Arguments bound by parameter name: the weights of a real network are hundreds of
//! parameters of `main`, kept in one `.npz` file keyed by parameter name.
//!
//! [`Params`] holds named tensors (read with [`Params::read_npz`],
//! [`Params::read_safetensors`] or [`Params::read`], or built by hand);
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

pub mod npy;
mod safetensors_io;

use std::path::Path;

use relax_ir::{BaseFunc, Function, GlobalVar, IRModule, StructInfo, TensorStructInfo};

use crate::engine::Loaded;
use crate::error::{EngineError, Result};
use crate::value::{Tensor, Value};

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
    ///
    /// Each entry's `.npy` header is read and checked before its data: a shape whose
    /// size overflows, data that the header claims but the entry does not hold, and
    /// entries that together claim more than the host memory limit
    /// ([`crate::host_memory_limit`]) are errors, found before anything is allocated or
    /// inflated. See [`npy`] for the element types.
    pub fn read_npz(path: &Path) -> Result<Params> {
        let file = std::fs::File::open(path)
            .map_err(|e| EngineError::Invalid(format!("cannot read {}: {e}", path.display())))?;
        let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
            .map_err(|e| EngineError::Invalid(format!("{}: not an .npz file: {e}", path.display())))?;
        let limit = relax_jit::memory::host_memory_limit();
        let mut used: u64 = 0;
        let mut params = Params::new();
        for i in 0..zip.len() {
            let mut entry = zip
                .by_index(i)
                .map_err(|e| EngineError::Invalid(format!("{}: entry {i}: {e}", path.display())))?;
            if entry.is_dir() {
                continue;
            }
            let file_name = entry.name().to_string();
            let name = file_name.strip_suffix(".npy").unwrap_or(&file_name).to_string();
            let size = entry.size();
            let tensor = npy::read_stream(&mut entry, Some(size), limit.saturating_sub(used), "entry")
                .map_err(|e| in_context(e, &format!("{}: entry `{name}`", path.display())))?;
            used = used.saturating_add(tensor.nbytes() as u64);
            if params.get(&name).is_some() {
                return Err(EngineError::Invalid(format!(
                    "{}: entry `{name}` appears twice",
                    path.display()
                )));
            }
            params.insert(name, Value::Tensor(tensor));
        }
        Ok(params)
    }

    /// Every tensor of a `.safetensors` file (the format Hugging Face ships weights
    /// in), keyed by its name, in the file's order.
    ///
    /// The header is read and validated by the `safetensors` crate's own rules (at
    /// most 100 MB of JSON; offsets contiguous and in bounds; each tensor's byte size,
    /// computed without overflow, equal to its offsets' span) and against the file's
    /// length before any tensor's memory is reserved; tensors that together exceed the
    /// host memory limit are an error. Dtypes: `BOOL`, `U8`, `I8`, `I16`, `U16`, `I32`,
    /// `U32`, `I64`, `U64`, `F16`, `BF16`, `F32`, `F64` (the float8/float4/float6 and
    /// complex ones are refused, naming the tensor).
    pub fn read_safetensors(path: &Path) -> Result<Params> {
        safetensors_io::read(path)
    }

    /// The weights in the file at `path`: `.safetensors` ([`Params::read_safetensors`])
    /// or `.npz` ([`Params::read_npz`]), told apart by the file's first bytes (a zip
    /// archive is an `.npz`).
    pub fn read(path: &Path) -> Result<Params> {
        use std::io::Read;
        let mut magic = [0u8; 4];
        let n = std::fs::File::open(path)
            .and_then(|mut f| f.read(&mut magic))
            .map_err(|e| EngineError::Invalid(format!("cannot read {}: {e}", path.display())))?;
        if n == 4 && (magic == *b"PK\x03\x04" || magic == *b"PK\x05\x06") {
            Params::read_npz(path)
        } else if path.extension().is_some_and(|e| e == "npz") {
            Err(EngineError::Invalid(format!(
                "{}: not an .npz file (no zip signature)",
                path.display()
            )))
        } else {
            Params::read_safetensors(path)
        }
    }

    /// Write the tensors as an `.npz` file (uncompressed, as `numpy.savez` does), each
    /// entry `<name>.npy`; see [`npy::encode`] for the element types.
    pub fn write_npz(&self, path: &Path) -> Result<()> {
        let io = |e: &dyn std::fmt::Display| EngineError::Invalid(format!("cannot write {}: {e}", path.display()));
        let file = std::fs::File::create(path).map_err(|e| io(&e))?;
        let mut z = zip::ZipWriter::new(std::io::BufWriter::new(file));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(true);
        for (name, value) in self.iter() {
            let t = value
                .as_tensor()
                .ok_or_else(|| EngineError::Type(format!("`{name}` is a {}, not a tensor", value.describe())))?;
            let bytes = npy::encode(t).map_err(|e| in_context(e, &format!("`{name}`")))?;
            z.start_file(format!("{name}.npy"), options).map_err(|e| io(&e))?;
            std::io::Write::write_all(&mut z, &bytes).map_err(|e| io(&e))?;
        }
        let mut w = z.finish().map_err(|e| io(&e))?;
        std::io::Write::flush(&mut w).map_err(|e| io(&e))
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

/// `e` with `context: ` before its message (errors without a message of their own are
/// returned as they are).
pub(crate) fn in_context(e: EngineError, context: &str) -> EngineError {
    match e {
        EngineError::Invalid(m) => EngineError::Invalid(format!("{context}: {m}")),
        EngineError::HostMemory(m) => EngineError::HostMemory(format!("{context}: {m}")),
        EngineError::Type(m) => EngineError::Type(format!("{context}: {m}")),
        e => e,
    }
}

/// A tensor from the bytes of a `.npy` file (see [`npy`] for the element types);
/// the header is checked before anything is allocated.
pub fn parse_npy(bytes: &[u8]) -> Result<Tensor> {
    npy::decode(bytes)
}

/// A tensor read from a `.npy` file.
pub fn read_npy(path: &Path) -> Result<Tensor> {
    let file =
        std::fs::File::open(path).map_err(|e| EngineError::Invalid(format!("cannot read {}: {e}", path.display())))?;
    let size = file.metadata().ok().map(|m| m.len());
    let mut r = std::io::BufReader::new(file);
    npy::read_stream(&mut r, size, relax_jit::memory::host_memory_limit(), "file")
        .map_err(|e| in_context(e, &path.display().to_string()))
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
/// A name binds the parameter of that name, or else the parameter that TVM's printer
/// names after it: the printer replaces every character other than an ASCII letter,
/// digit or `_` with `_` (see [`printed_name`]), so a weight saved as
/// `m.transformer.wpe.weight` binds the parameter `m_transformer_wpe_weight`.
///
/// Errors name the parameter: an entry of `named` that is no parameter (with the
/// closest parameter name), two entries binding one parameter, a parameter neither
/// named nor given positionally, positional arguments left over, and a tensor whose
/// dtype, rank or static shape differs from its parameter's StructInfo (with the
/// expected and the given dtype or shape).
pub fn bind_args(module: &IRModule, func: &str, positional: &[Value], named: &Params) -> Result<Vec<Value>> {
    let f = entry_function(module, func)?;
    let names: Vec<&str> = f.params.iter().map(|p| p.name()).collect();
    let mut bound: Vec<Option<(&str, &Value)>> = vec![None; names.len()];
    for (name, value) in named.iter() {
        let i = resolve_name(func, &names, name)?;
        if let Some((earlier, _)) = bound[i] {
            return Err(EngineError::Invalid(format!(
                "`{func}`: parameter `{}` is given twice by name (`{earlier}` and `{name}`)",
                names[i]
            )));
        }
        bound[i] = Some((name, value));
    }
    let mut rest = positional.iter();
    let mut args = Vec::with_capacity(f.params.len());
    for (i, param) in f.params.iter().enumerate() {
        let name = param.name();
        let value = match bound[i] {
            Some((_, v)) => v.clone(),
            None => rest.next().cloned().ok_or_else(|| {
                let missing: Vec<&str> = (i..names.len())
                    .filter(|&k| bound[k].is_none())
                    .map(|k| names[k])
                    .collect();
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

/// The name TVM's TVMScript printer gives a variable named `name`: every byte that is
/// not an ASCII letter, digit or `_` becomes `_` (`embed_tokens.weight` ->
/// `embed_tokens_weight`; a non-ASCII character becomes one `_` per UTF-8 byte). The
/// printer then appends `_1`, `_2`, ... to names already taken; those are not undone.
pub fn printed_name(name: &str) -> String {
    name.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'_' {
                b as char
            } else {
                '_'
            }
        })
        .collect()
}

/// The index of the parameter that the entry `name` binds: the parameter of that
/// name, else the one named [`printed_name`]`(name)`.
fn resolve_name(func: &str, params: &[&str], name: &str) -> Result<usize> {
    let printed = printed_name(name);
    for candidate in [name, printed.as_str()] {
        let hits: Vec<usize> = (0..params.len()).filter(|&i| params[i] == candidate).collect();
        match hits[..] {
            [i] => return Ok(i),
            [] => {}
            _ => {
                return Err(EngineError::Invalid(format!(
                    "`{func}` has several parameters named `{candidate}`; give them positionally"
                )))
            }
        }
    }
    let printed_note = if printed != name {
        format!(" (printed `{printed}`)")
    } else {
        String::new()
    };
    let closest = params
        .iter()
        .min_by_key(|p| edit_distance(p.as_bytes(), printed.as_bytes()))
        .map(|p| format!("; the closest parameter is `{p}`"))
        .unwrap_or_else(|| format!("; `{func}` has no parameters"));
    Err(EngineError::Invalid(format!(
        "`{func}` has no parameter `{name}`{printed_note} (given by name){closest}"
    )))
}

/// The Levenshtein distance between `a` and `b` (insertions, deletions and
/// substitutions of bytes).
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
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

/// `(1, 3, 224, 224)`, `(3,)`, `()`, as TVMScript and NumPy write shapes.
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
