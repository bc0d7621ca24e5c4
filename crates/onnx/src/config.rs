//! Defaults that the environment may set: the one place this crate reads it.

use std::sync::OnceLock;

/// Whether every converted node's outputs are traced to stderr (`RELAX_ONNX_TRACE`
/// set), for debugging the importer.
pub fn trace() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("RELAX_ONNX_TRACE").is_some())
}
