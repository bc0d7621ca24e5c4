//! ONNX models: [`Engine::load_onnx`] imports a model with `relax-onnx` and loads it;
//! the model's weights are bound by name on every run.

use std::path::Path;

use relax_onnx::{ImportOptions, Imported};

use crate::{Engine, EngineError, Loaded, Params, Result, Tensor, Value};

/// An imported and loaded ONNX model.
pub struct OnnxModel {
    /// The loaded module (entry `main`).
    pub loaded: Loaded,
    /// The weights, bound by parameter name.
    pub weights: Params,
    /// The import (module, summary).
    pub imported: Imported,
}

impl OnnxModel {
    /// Run `main` on the graph inputs (in order).
    pub fn run(&self, inputs: &[Value]) -> Result<Value> {
        self.loaded.run_named("main", inputs, &self.weights)
    }
}

/// The weights of an import as [`Params`] (by parameter name).
pub fn weights_of(imported: &Imported) -> Result<Params> {
    let mut p = Params::new();
    for (name, a) in &imported.params {
        p.insert(
            name.clone(),
            Value::Tensor(Tensor::from_bytes(a.dtype, &a.shape, a.data.clone())?),
        );
    }
    Ok(p)
}

impl Engine {
    /// Import the ONNX model at `path` (external data read from beside it) and load it.
    pub fn load_onnx(&self, path: &Path, options: &ImportOptions) -> Result<OnnxModel> {
        let imported =
            relax_onnx::import_file(path, options).map_err(|e| EngineError::msg(format!("{}: {e}", path.display())))?;
        let weights = weights_of(&imported)?;
        let loaded = self.load(&imported.module)?;
        Ok(OnnxModel {
            loaded,
            weights,
            imported,
        })
    }
}
