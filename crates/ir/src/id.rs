//! Process-wide unique identities for variables and buffers.

use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh identity, never returned before in this process.
pub fn fresh_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// `PartialEq`, `Eq` and `Hash` by identity (`id()`) for the handle types whose
/// equality is by object: two variables with the same name are different variables.
macro_rules! identity_by_id {
    ($($t:ty),* $(,)?) => {$(
        impl PartialEq for $t {
            fn eq(&self, other: &Self) -> bool {
                self.id() == other.id()
            }
        }
        impl Eq for $t {}
        impl std::hash::Hash for $t {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.id().hash(state)
            }
        }
    )*};
}

identity_by_id!(crate::relax::Var, crate::tir::TirVar, crate::tir::Buffer);
