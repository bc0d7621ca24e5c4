//! Structural equality and hashing with alpha-equivalence of bound variables.
//!
//! A variable in a definition position on both sides (function parameters, binding
//! variables, TIR variables first seen in a parameter's or a `MatchCast`'s
//! StructInfo, TIR loop / block iteration / let variables, buffers and their data
//! variables) is mapped to its counterpart; later uses must then agree with the
//! mapping. Free variables compare by identity unless `map_free_vars` is set. Names of
//! variables and buffers and source locations are ignored; `GlobalVar` names,
//! attribute keys and block names are compared. Float constants compare by bits.
//! Attribute dictionaries compare as maps (order-insensitive); module functions are
//! matched by name, each compared with fresh variable mappings. Map entries are
//! visited in key order, so the first difference reported is the first in that order.
//!
//! Both services run one walk (`walk.rs`), which lists each node's fields once and
//! reports them as events to a reducer (`reduce.rs`), as TVM's SEqual/SHash reducers
//! share a node's field list. Hashing mixes the events of one walk; equality records
//! the walk of the left side and checks the walk of the right side against it event
//! by event, stopping at the first difference. Hashes are consistent with equality:
//! variables hash by the order in which they are first met, never by identity or
//! name.

use std::fmt;

use crate::attrs::{AttrValue, Attrs};
use crate::module::IRModule;
use crate::relax::{Expr, Function, StructInfo};
use crate::tir::{PrimExpr, PrimFunc, Stmt};

mod reduce;
mod walk;

use reduce::{ByteRecorder, Comparer, Recorder, Reducer, StructHasher, R};
use walk::Walk;

/// IR objects a structural walk can start from.
trait Node {
    fn walk<'a, S: Reducer<'a>>(&'a self, w: &mut Walk<S>) -> R;
}

/// For each root type: where the walk starts, and the [`StructuralEqual`] method
/// comparing two of them.
macro_rules! nodes {
    ($($(#[$doc:meta])* $method:ident($t:ty) => $walk:ident;)*) => {
        $(
            impl Node for $t {
                fn walk<'a, S: Reducer<'a>>(&'a self, w: &mut Walk<S>) -> R {
                    w.$walk(self)
                }
            }
        )*
        impl StructuralEqual {
            $(
                $(#[$doc])*
                pub fn $method(&self, a: &$t, b: &$t) -> Result<(), Mismatch> {
                    self.check(a, b)
                }
            )*
        }
    };
}

nodes! {
    /// Compare two modules.
    module(IRModule) => module;
    /// Compare two attribute dictionaries.
    attrs(Attrs) => attrs;
    /// Compare two attribute values.
    attr_value(AttrValue) => attr_value;
    /// Compare two Relax expressions.
    expr(Expr) => expr;
    /// Compare two Relax functions.
    function(Function) => function;
    /// Compare two StructInfos.
    struct_info(StructInfo) => sinfo;
    /// Compare two TIR functions.
    prim_func(PrimFunc) => prim_func;
    /// Compare two TIR expressions.
    prim_expr(PrimExpr) => prim;
    /// Compare two TIR statements.
    stmt(Stmt) => stmt;
}

// ---------------------------------------------------------------------------
// Free-variable-by-identity helpers kept for existing callers.

/// Structural equality of attribute dictionaries (order-insensitive; `PrimExpr`
/// values compare structurally with free variables by identity).
pub fn attrs_equal(a: &Attrs, b: &Attrs) -> bool {
    StructuralEqual::new().attrs(a, b).is_ok()
}

/// Structural equality of attribute values.
pub fn attr_value_equal(a: &AttrValue, b: &AttrValue) -> bool {
    StructuralEqual::new().attr_value(a, b).is_ok()
}

// ---------------------------------------------------------------------------
// Mismatch reporting.

/// Where and why two IR objects differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The path to the first difference, e.g.
    /// `functions[main].body.blocks[0].bindings[2].value.args[1]`.
    pub path: String,
    /// What differs there.
    pub reason: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "at {}: {}", self.path, self.reason)
        }
    }
}

impl std::error::Error for Mismatch {}

// ---------------------------------------------------------------------------
// Public entry points.

/// Options of structural equality.
#[derive(Clone, Copy, Debug, Default)]
pub struct StructuralEqual {
    /// Map free variables (not bound in a definition position) on first use instead
    /// of comparing them by identity.
    pub map_free_vars: bool,
    /// Leave a `PrimFunc`'s `global_symbol` attribute and privacy out of the
    /// comparison (and of [`StructuralEqual::hash_prim_func`]): two kernels that
    /// differ only in their name are the same code.
    pub ignore_global_symbol: bool,
}

impl StructuralEqual {
    /// Free variables compare by identity.
    pub fn new() -> StructuralEqual {
        StructuralEqual::default()
    }
    /// Set whether free variables are mapped.
    pub fn map_free_vars(mut self, on: bool) -> StructuralEqual {
        self.map_free_vars = on;
        self
    }
    /// Set whether a `PrimFunc`'s `global_symbol` attribute is ignored.
    pub fn ignore_global_symbol(mut self, on: bool) -> StructuralEqual {
        self.ignore_global_symbol = on;
        self
    }
    /// Walk `a` into a recording, then check the walk of `b` against it.
    fn check<T: Node>(&self, a: &T, b: &T) -> Result<(), Mismatch> {
        let (map_free, ignore) = (self.map_free_vars, self.ignore_global_symbol);
        let mut left = Walk::new(Recorder::default(), map_free, ignore);
        a.walk(&mut left)?;
        let mut right = Walk::new(Comparer::new(left.sink.0), map_free, ignore);
        b.walk(&mut right)?;
        right.sink.finish()
    }
    /// A hash consistent with [`StructuralEqual::check`] under these options and
    /// whether or not free variables are mapped.
    fn hash<T: Node>(&self, x: &T) -> u64 {
        let mut w = Walk::new(StructHasher::default(), true, self.ignore_global_symbol);
        // The hasher takes every event: the walk never stops early.
        let _ = x.walk(&mut w);
        std::hash::Hasher::finish(&w.sink)
    }
    /// A hash of `f` consistent with [`StructuralEqual::prim_func`] under these
    /// options: functions this comparison calls equal hash equally.
    pub fn hash_prim_func(&self, f: &PrimFunc) -> u64 {
        self.hash(f)
    }
    /// Every byte [`StructuralEqual::hash_prim_func`] mixes, in order: an encoding of
    /// `f` up to renaming (variables as the order in which they are first met), equal
    /// for functions this comparison calls equal. A persistent kernel cache stores it
    /// as its full key and compares it, so that a hash collision is a miss.
    pub fn fingerprint_prim_func(&self, f: &PrimFunc) -> Vec<u8> {
        let mut w = Walk::new(ByteRecorder::default(), true, self.ignore_global_symbol);
        // The recorder takes every event: the walk never stops early.
        let _ = f.walk(&mut w);
        w.sink.0
    }
}

/// Compare two modules, reporting the first difference.
pub fn check_structural_equal_module(a: &IRModule, b: &IRModule) -> Result<(), Mismatch> {
    StructuralEqual::new().module(a, b)
}
/// Whether two modules are structurally equal.
pub fn structural_equal_module(a: &IRModule, b: &IRModule) -> bool {
    check_structural_equal_module(a, b).is_ok()
}
/// Whether two Relax expressions are structurally equal (free variables by identity).
pub fn structural_equal_expr(a: &Expr, b: &Expr) -> bool {
    StructuralEqual::new().expr(a, b).is_ok()
}
/// Whether two Relax functions are structurally equal.
pub fn structural_equal_function(a: &Function, b: &Function) -> bool {
    StructuralEqual::new().function(a, b).is_ok()
}
/// Whether two StructInfos are structurally equal (free TIR variables by identity).
pub fn structural_equal_struct_info(a: &StructInfo, b: &StructInfo) -> bool {
    StructuralEqual::new().struct_info(a, b).is_ok()
}
/// Whether two TIR functions are structurally equal.
pub fn structural_equal_prim_func(a: &PrimFunc, b: &PrimFunc) -> bool {
    StructuralEqual::new().prim_func(a, b).is_ok()
}
/// Whether two TIR expressions are structurally equal (free variables by identity).
pub fn structural_equal_prim_expr(a: &PrimExpr, b: &PrimExpr) -> bool {
    StructuralEqual::new().prim_expr(a, b).is_ok()
}

// ---------------------------------------------------------------------------
// Hashing.

/// Structural hash of a module (consistent with [`structural_equal_module`]).
pub fn structural_hash_module(m: &IRModule) -> u64 {
    StructuralEqual::new().hash(m)
}
/// Structural hash of a Relax expression.
pub fn structural_hash_expr(e: &Expr) -> u64 {
    StructuralEqual::new().hash(e)
}
/// Structural hash of a Relax function.
pub fn structural_hash_function(f: &Function) -> u64 {
    StructuralEqual::new().hash(f)
}
/// Structural hash of a StructInfo.
pub fn structural_hash_struct_info(s: &StructInfo) -> u64 {
    StructuralEqual::new().hash(s)
}
/// Structural hash of a TIR function: independent of variable identities and names
/// (suitable as a kernel cache key together with [`structural_equal_prim_func`]).
pub fn structural_hash_prim_func(f: &PrimFunc) -> u64 {
    StructuralEqual::new().hash(f)
}
/// Structural hash of a TIR expression.
pub fn structural_hash_prim_expr(e: &PrimExpr) -> u64 {
    StructuralEqual::new().hash(e)
}
