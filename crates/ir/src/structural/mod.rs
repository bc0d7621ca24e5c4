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
//! matched by name, each compared with fresh variable mappings.
//!
//! Hashes are consistent with equality: variables hash by the order in which they are
//! first met, never by identity or name.

use std::fmt;

use crate::attrs::{AttrValue, Attrs};
use crate::module::IRModule;
use crate::relax::{Expr, Function, StructInfo};
use crate::tir::{PrimExpr, PrimFunc, Stmt};

mod equal;
mod hash;

use equal::Eq;
use hash::Hash;

// ---------------------------------------------------------------------------
// Free-variable-by-identity helpers kept for existing callers.

/// Structural equality of attribute dictionaries (order-insensitive; `PrimExpr`
/// values compare structurally with free variables by identity).
pub fn attrs_equal(a: &Attrs, b: &Attrs) -> bool {
    Eq::new(false).attrs(a, b).is_ok()
}

/// Structural equality of attribute values.
pub fn attr_value_equal(a: &AttrValue, b: &AttrValue) -> bool {
    Eq::new(false).attr_value(a, b).is_ok()
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

/// A mismatch being unwound: path segments innermost first.
#[derive(Debug)]
struct Fail {
    segs: Vec<String>,
    reason: String,
}

impl Fail {
    fn into_mismatch(self) -> Mismatch {
        let mut path = String::new();
        for s in self.segs.iter().rev() {
            if !path.is_empty() && !s.starts_with('[') {
                path.push('.');
            }
            path.push_str(s);
        }
        Mismatch {
            path,
            reason: self.reason,
        }
    }
}

type R = Result<(), Box<Fail>>;

fn fail<T>(reason: impl Into<String>) -> Result<T, Box<Fail>> {
    Err(Box::new(Fail {
        segs: Vec::new(),
        reason: reason.into(),
    }))
}

fn same<T: PartialEq + fmt::Debug>(a: &T, b: &T, what: &str) -> R {
    if a == b {
        Ok(())
    } else {
        fail(format!("{what}: {a:?} vs {b:?}"))
    }
}

trait At {
    fn at(self, seg: &str) -> Self;
    fn at_i(self, seg: &str, i: usize) -> Self;
}

impl At for R {
    fn at(self, seg: &str) -> R {
        self.map_err(|mut f| {
            f.segs.push(seg.to_string());
            f
        })
    }
    fn at_i(self, seg: &str, i: usize) -> R {
        self.map_err(|mut f| {
            f.segs.push(format!("{seg}[{i}]"));
            f
        })
    }
}

fn list<T>(a: &[T], b: &[T], seg: &str, mut f: impl FnMut(&T, &T) -> R) -> R {
    if a.len() != b.len() {
        return fail(format!("{seg}: length {} vs {}", a.len(), b.len()));
    }
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        f(x, y).at_i(seg, i)?;
    }
    Ok(())
}

fn opt<T>(a: &Option<T>, b: &Option<T>, seg: &str, f: impl FnOnce(&T, &T) -> R) -> R {
    match (a, b) {
        (None, None) => Ok(()),
        (Some(x), Some(y)) => f(x, y).at(seg),
        (Some(_), None) => fail(format!("{seg}: present vs absent")),
        (None, Some(_)) => fail(format!("{seg}: absent vs present")),
    }
}

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
    fn run(&self, f: impl FnOnce(&mut Eq) -> R) -> Result<(), Mismatch> {
        let mut eq = Eq::new(self.map_free_vars);
        eq.ignore_global_symbol = self.ignore_global_symbol;
        f(&mut eq).map_err(|e| e.into_mismatch())
    }
    /// A hash of `f` consistent with [`StructuralEqual::prim_func`] under these
    /// options: functions this comparison calls equal hash equally.
    pub fn hash_prim_func(&self, f: &PrimFunc) -> u64 {
        let mut h = Hash::default();
        h.ignore_global_symbol = self.ignore_global_symbol;
        h.prim_func(f);
        h.finish()
    }
    /// Compare two modules.
    pub fn module(&self, a: &IRModule, b: &IRModule) -> Result<(), Mismatch> {
        self.run(|e| e.module(a, b))
    }
    /// Compare two Relax expressions.
    pub fn expr(&self, a: &Expr, b: &Expr) -> Result<(), Mismatch> {
        self.run(|e| e.expr(a, b))
    }
    /// Compare two Relax functions.
    pub fn function(&self, a: &Function, b: &Function) -> Result<(), Mismatch> {
        self.run(|e| e.function(a, b))
    }
    /// Compare two StructInfos.
    pub fn struct_info(&self, a: &StructInfo, b: &StructInfo) -> Result<(), Mismatch> {
        self.run(|e| e.sinfo(a, b))
    }
    /// Compare two TIR functions.
    pub fn prim_func(&self, a: &PrimFunc, b: &PrimFunc) -> Result<(), Mismatch> {
        self.run(|e| e.prim_func(a, b))
    }
    /// Compare two TIR expressions.
    pub fn prim_expr(&self, a: &PrimExpr, b: &PrimExpr) -> Result<(), Mismatch> {
        self.run(|e| e.prim(a, b))
    }
    /// Compare two TIR statements.
    pub fn stmt(&self, a: &Stmt, b: &Stmt) -> Result<(), Mismatch> {
        self.run(|e| e.stmt(a, b))
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
    let mut h = Hash::default();
    h.module(m);
    h.finish()
}
/// Structural hash of a Relax expression.
pub fn structural_hash_expr(e: &Expr) -> u64 {
    let mut h = Hash::default();
    h.expr(e);
    h.finish()
}
/// Structural hash of a Relax function.
pub fn structural_hash_function(f: &Function) -> u64 {
    let mut h = Hash::default();
    h.function(f);
    h.finish()
}
/// Structural hash of a StructInfo.
pub fn structural_hash_struct_info(s: &StructInfo) -> u64 {
    let mut h = Hash::default();
    h.sinfo(s);
    h.finish()
}
/// Structural hash of a TIR function: independent of variable identities and names
/// (suitable as a kernel cache key together with [`structural_equal_prim_func`]).
pub fn structural_hash_prim_func(f: &PrimFunc) -> u64 {
    let mut h = Hash::default();
    h.prim_func(f);
    h.finish()
}
/// Structural hash of a TIR expression.
pub fn structural_hash_prim_expr(e: &PrimExpr) -> u64 {
    let mut h = Hash::default();
    h.prim(e);
    h.finish()
}

/// `attrs` less its `global_symbol` entry.
fn without_global_symbol(attrs: &Attrs) -> Attrs {
    Attrs(
        attrs
            .iter()
            .filter(|(k, _)| *k != "global_symbol")
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}
