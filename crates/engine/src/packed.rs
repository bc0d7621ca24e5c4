//! Packed functions: Rust closures registered under a global symbol, reached from
//! `ExternFunc`, `call_packed`, `call_pure_packed`, `call_inplace_packed` and
//! `call_dps_packed`.

use std::fmt;
use std::sync::{Arc, RwLock};

use crate::error::{EngineError, Result};
use crate::value::Value;

/// Whether calling a packed function has visible side effects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purity {
    /// No side effects other than possibly failing.
    Pure,
    /// May have side effects: calling it directly inside a `DataflowBlock` is an error
    /// (wrap it in `call_pure_packed` to assert purity).
    Impure,
}

/// The signature of a packed function: arguments in, one value out (return
/// `Value::unit()` for "nothing"). Outputs of `call_dps_packed` arrive as trailing
/// tensor arguments to be written in place.
pub type PackedFn = dyn Fn(&[Value]) -> Result<Value> + Send + Sync;

struct PackedInner {
    name: String,
    purity: Purity,
    func: Box<PackedFn>,
}

/// A packed function value.
#[derive(Clone)]
pub struct PackedFunc(Arc<PackedInner>);

impl PackedFunc {
    /// Wrap a closure.
    pub fn new(
        name: impl Into<String>,
        purity: Purity,
        func: impl Fn(&[Value]) -> Result<Value> + Send + Sync + 'static,
    ) -> PackedFunc {
        PackedFunc(Arc::new(PackedInner {
            name: name.into(),
            purity,
            func: Box::new(func),
        }))
    }
    /// The global symbol.
    pub fn name(&self) -> &str {
        &self.0.name
    }
    /// Its purity.
    pub fn purity(&self) -> Purity {
        self.0.purity
    }
    /// Call it; an error it returns is reported as [`EngineError::PackedFunc`].
    pub fn call(&self, args: &[Value]) -> Result<Value> {
        (self.0.func)(args).map_err(|e| match e {
            // Errors of nested runs or of other packed functions keep their identity.
            e @ (EngineError::PackedFunc { .. } | EngineError::AssertionFailed(_)) => e,
            e => EngineError::PackedFunc {
                name: self.0.name.clone(),
                message: e.to_string(),
            },
        })
    }
}

impl fmt::Debug for PackedFunc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PackedFunc({}, {:?})", self.0.name, self.0.purity)
    }
}

/// The global table of packed functions, shared by an `Engine` and what it loads.
#[derive(Default)]
pub struct PackedRegistry {
    map: RwLock<rustc_hash::FxHashMap<String, PackedFunc>>,
}

impl PackedRegistry {
    /// Register (or replace) `func` under its name.
    pub fn register(&self, func: PackedFunc) {
        if let Ok(mut m) = self.map.write() {
            m.insert(func.name().to_string(), func);
        }
    }
    /// Look a symbol up.
    pub fn get(&self, name: &str) -> Option<PackedFunc> {
        self.map.read().ok()?.get(name).cloned()
    }
    /// Look a symbol up or fail with [`EngineError::UnknownPackedFunc`].
    pub fn lookup(&self, name: &str) -> Result<PackedFunc> {
        self.get(name)
            .ok_or_else(|| EngineError::UnknownPackedFunc(name.to_string()))
    }
    /// Registered symbols, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.map.read().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        v.sort();
        v
    }
}
