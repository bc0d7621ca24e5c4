//! Compiled programs by structure: the JIT's host and GPU caches share this
//! map from a PrimFunc (up to renaming) to the program built from it once.

use dashmap::DashMap;
use std::sync::{Arc, Mutex};

use relax_ir::structural::StructuralEqual;
use relax_ir::PrimFunc;

use crate::error::{JitError, Result};

/// One cached program: the function it was built from and its slot.
type Entry<T> = (PrimFunc, Arc<Mutex<Option<Arc<T>>>>);

/// Compiled programs by structure. A lookup hashes the function (names of the
/// function, variables and buffers aside) and confirms a hash hit with structural
/// equality, so a hash collision builds a second program instead of running the
/// wrong one. Each function is built exactly once, even when several threads ask for
/// it at the same time (they wait for the first); different functions build
/// concurrently. A failed build leaves the slot empty.
pub(crate) struct KernelCache<T>(DashMap<u64, Vec<Entry<T>>>);

impl<T> Default for KernelCache<T> {
    fn default() -> Self {
        KernelCache(DashMap::new())
    }
}

/// The kernel identity: structure up to renaming, the function's name aside.
fn kernel_equality() -> StructuralEqual {
    StructuralEqual::new().ignore_global_symbol(true)
}

impl<T> KernelCache<T> {
    /// The program for `f`, built by `build` if absent; `true` when it was cached.
    pub(crate) fn get_or_build(&self, f: &PrimFunc, build: impl FnOnce() -> Result<Arc<T>>) -> Result<(Arc<T>, bool)> {
        let eq = kernel_equality();
        let slot = {
            let mut bucket = self.0.entry(eq.hash_prim_func(f)).or_default();
            match bucket.iter().find(|(g, _)| eq.prim_func(g, f).is_ok()) {
                Some((_, slot)) => slot.clone(),
                None => {
                    let slot = Arc::new(Mutex::new(None));
                    bucket.push((f.clone(), slot.clone()));
                    slot
                }
            }
        };
        let mut guard = lock(&slot)?;
        if let Some(v) = guard.as_ref() {
            return Ok((v.clone(), true));
        }
        let v = build()?;
        *guard = Some(v.clone());
        Ok((v, false))
    }
}

/// The kernel-cache hash of `f`: equal for functions the JIT compiles to the same
/// program (the same structure up to renaming of the function, its variables and
/// buffers). Tests and benchmarks use it to count distinct kernels.
pub fn kernel_hash(f: &PrimFunc) -> u64 {
    kernel_equality().hash_prim_func(f)
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> Result<std::sync::MutexGuard<'_, T>> {
    m.lock().map_err(|_| JitError::Poisoned)
}
