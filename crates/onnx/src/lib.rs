//! ONNX import: an ONNX model (`ModelProto`) becomes a Relax `IRModule` whose `main`
//! is in normal form inside one `R.dataflow` block.
//!
//! - The protobuf is decoded with `prost` ([`proto`], the subset of `onnx.proto3` the
//!   importer reads; no `protoc` at build time). Tensors come from the typed fields,
//!   `raw_data` or external data files beside the model, each size and offset checked
//!   before anything is allocated.
//! - Graph inputs become the first parameters of `main`; each ONNX `dim_param` becomes
//!   one symbolic shape variable (fixed to a number by [`ImportOptions::dims`]).
//!   Initializers become parameters named after them (bound by name from
//!   [`Imported::params`]), small ones (at most [`ImportOptions::max_const_elems`]
//!   elements) constants.
//! - Each operator has one converter ([`ops`]); StructInfo of every binding is derived
//!   through the operator registry of `relax-checker`, so symbolic shapes flow through
//!   the program. Shape computations (`Shape`, `Gather`, `Concat`, ... on shapes) are
//!   folded at import time, symbolic dimensions included, so `Reshape` and `Expand` get
//!   shapes such as `(1, seq_len, 4, 16)`.
//! - An operator without a converter is an error naming the node, its op type and the
//!   opset; nothing a model contains makes the importer panic.
//!
//! ```no_run
//! let imported = relax_onnx::import_file("model.onnx".as_ref(), &relax_onnx::ImportOptions::default())?;
//! let text = relax_ir::text::print_program(&relax_ir::text::Program::Module(imported.module));
//! # Ok::<(), relax_onnx::ImportError>(())
//! ```

mod config;
mod convert;
pub mod error;
pub mod ops;
pub mod proto;
pub mod tensor;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use relax_ir::{IRModule, NDArray};

pub use convert::import_model;
pub use error::{ConvertError, ConvertErrorKind};
/// The protobuf crate the messages of [`proto`] are decoded with (to encode or decode them).
pub use prost;

/// An import failure: its kind and a message naming what was wrong (the node, its op
/// type and the opset for operator problems).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    /// What kind of problem it is.
    pub kind: ConvertErrorKind,
    /// The message.
    pub message: String,
}

impl ImportError {
    /// A [`ConvertErrorKind::Invalid`] error with `message` (a problem of the model
    /// as a whole).
    pub fn new(message: impl Into<String>) -> ImportError {
        ImportError {
            kind: ConvertErrorKind::Invalid,
            message: message.into(),
        }
    }

    /// The conversion error `e` of `node`, prefixed with the node's name, op type
    /// and opset.
    pub(crate) fn at_node(node: &ops::Node, e: ConvertError) -> ImportError {
        ImportError {
            kind: e.kind,
            message: format!(
                "node `{}` ({}, opset {}): {}",
                node.name, node.op_type, node.opset, e.message
            ),
        }
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ImportError {}

/// Options of an import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// Fixed values for symbolic dimensions (`dim_param` name, value).
    pub dims: Vec<(String, i64)>,
    /// Initializers with at most this many elements become constants; larger ones
    /// become parameters of `main`.
    pub max_const_elems: usize,
    /// Print progress (reading, converting) on stderr.
    pub progress: bool,
}

impl Default for ImportOptions {
    fn default() -> ImportOptions {
        ImportOptions {
            dims: Vec::new(),
            max_const_elems: 16,
            progress: false,
        }
    }
}

/// What an import counted.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Nodes in the graph.
    pub nodes: usize,
    /// Nodes per op type.
    pub op_counts: BTreeMap<String, usize>,
    /// The default-domain opset the model imports.
    pub opset: i64,
    /// Weight parameters of `main` and their total size in bytes.
    pub params: usize,
    /// Total bytes of the weight parameters.
    pub param_bytes: usize,
    /// Symbolic dimensions left symbolic (by name).
    pub symbolic_dims: Vec<String>,
    /// Bindings in `main`.
    pub bindings: usize,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} nodes ({} op types, opset {}), {} bindings, {} weight parameters ({:.1} MB), symbolic dims: {}",
            self.nodes,
            self.op_counts.len(),
            self.opset,
            self.bindings,
            self.params,
            self.param_bytes as f64 / 1e6,
            if self.symbolic_dims.is_empty() {
                "none".to_string()
            } else {
                self.symbolic_dims.join(", ")
            }
        )
    }
}

/// An imported model.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The module; its function `main` takes the graph inputs, then the weights.
    pub module: IRModule,
    /// The weights, by the name of their parameter of `main`, in parameter order.
    pub params: Vec<(String, NDArray)>,
    /// The number of graph inputs (the first parameters of `main`).
    pub num_inputs: usize,
    /// Counts for a summary line.
    pub summary: Summary,
}

/// Decode an ONNX model from bytes (no external data can be read without `base_dir`).
pub fn decode_model(bytes: &[u8]) -> Result<proto::ModelProto, ImportError> {
    use prost::Message;
    proto::ModelProto::decode(bytes).map_err(|e| ImportError::new(format!("not a valid ONNX model (protobuf): {e}")))
}

/// Import the model in `bytes`; external data files are read from `base_dir`.
pub fn import_bytes(bytes: &[u8], base_dir: Option<&Path>, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let model = decode_model(bytes)?;
    import_model(&model, base_dir, opts)
}

/// Read and import the ONNX model at `path` (external data from its directory).
pub fn import_file(path: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    if opts.progress {
        eprintln!("reading {}", path.display());
    }
    let bytes = std::fs::read(path).map_err(|e| ImportError::new(format!("cannot read `{}`: {e}", path.display())))?;
    let base = path
        .parent()
        .map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
    import_bytes(&bytes, base, opts)
}

/// Whether `path` names an ONNX model (by its extension).
pub fn is_onnx_path(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
}

/// The op types of the default ONNX domain the importer converts, sorted.
pub fn supported_ops() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = ops::CONVERTERS.iter().map(|c| c.0).collect();
    v.sort_unstable();
    v
}
