//! StructInfo analysis: subtyping (`struct_info_base_check` / `is_base_of`), the LUB
//! (`unify_struct_info`), `check_compatibility`, `erase_to_well_defined`,
//! `get_shape_var_mapping` and the beta-reduction of calls
//! (`derive_call_ret_struct_info`).
//!
//! Shapes are compared with the arithmetic [`Analyzer`]: two dimensions are
//! *definitely* equal when it proves them equal, *definitely* different when it
//! proves them different, and *possibly* equal otherwise.

pub use relax_op::derive_func::{apply_derive_func, DEFAULT_DERIVE, EMPTY_DERIVE};
use std::collections::{HashMap, HashSet};

use relax_ir::arith::{Analyzer, Proof};
use relax_ir::tir::{PrimExprKind, TirVar};
use relax_ir::{
    Call, DataType, Expr, ExprKind, FuncStructInfo, PrimExpr, PrimStructInfo, ShapeStructInfo, StructInfo,
    TensorStructInfo, Var,
};

mod subtyping;
#[allow(unused_imports)]
pub use subtyping::*;

/// The result of a subtyping check `derived <: base`, from worst to best.
///
/// `FailL0`: definitely not a subtype (the value can never match);
/// `FailL1`: the static type of `derived` is coarser than `base` (a cast is
/// needed); `FailL2`: the types agree but symbolic shapes or function
/// signatures could not be proven to match; `Pass`: definitely a subtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BaseCheckResult {
    /// Definitely not a subtype.
    FailL0,
    /// Only a coarser static type is known.
    FailL1,
    /// Could not prove symbolic shapes equal.
    FailL2,
    /// A subtype.
    Pass,
}

impl BaseCheckResult {
    /// The name TVM prints (`PASS`, `FAIL_L0`, ...).
    pub fn name(self) -> &'static str {
        match self {
            BaseCheckResult::FailL0 => "FAIL_L0",
            BaseCheckResult::FailL1 => "FAIL_L1",
            BaseCheckResult::FailL2 => "FAIL_L2",
            BaseCheckResult::Pass => "PASS",
        }
    }
    fn combine(self, other: BaseCheckResult) -> BaseCheckResult {
        self.min(other)
    }
}

// ---------------------------------------------------------------------------
// PrimExpr helpers
// ---------------------------------------------------------------------------

/// The free TIR variables of `e`, in first-occurrence order, appended to `out`.
pub fn prim_expr_vars(e: &PrimExpr, out: &mut Vec<TirVar>) {
    for v in relax_ir::visit::free_tir_vars(e) {
        if !out.contains(&v) {
            out.push(v);
        }
    }
}

/// Replace the variables of `e` for which `f` gives a value. Returns `None` when
/// nothing changed.
pub fn substitute_prim_expr(e: &PrimExpr, f: &mut dyn FnMut(&TirVar) -> Option<PrimExpr>) -> Option<PrimExpr> {
    let new = |k: PrimExprKind| Some(PrimExpr::new(k));
    match e.kind() {
        PrimExprKind::IntImm { .. } | PrimExprKind::FloatImm { .. } | PrimExprKind::StringImm(_) => None,
        PrimExprKind::Var(v) => f(v),
        PrimExprKind::Cast { dtype, value } => {
            let v = substitute_prim_expr(value, f)?;
            new(PrimExprKind::Cast {
                dtype: *dtype,
                value: v,
            })
        }
        PrimExprKind::Binary { op, a, b } => {
            let na = substitute_prim_expr(a, f);
            let nb = substitute_prim_expr(b, f);
            if na.is_none() && nb.is_none() {
                return None;
            }
            new(PrimExprKind::Binary {
                op: *op,
                a: na.unwrap_or_else(|| a.clone()),
                b: nb.unwrap_or_else(|| b.clone()),
            })
        }
        PrimExprKind::Not(a) => new(PrimExprKind::Not(substitute_prim_expr(a, f)?)),
        PrimExprKind::Select { cond, t, f: fv } => {
            let nc = substitute_prim_expr(cond, f);
            let nt = substitute_prim_expr(t, f);
            let nf = substitute_prim_expr(fv, f);
            if nc.is_none() && nt.is_none() && nf.is_none() {
                return None;
            }
            new(PrimExprKind::Select {
                cond: nc.unwrap_or_else(|| cond.clone()),
                t: nt.unwrap_or_else(|| t.clone()),
                f: nf.unwrap_or_else(|| fv.clone()),
            })
        }
        PrimExprKind::Call { op, dtype, args } => {
            let mut changed = false;
            let new_args: Vec<PrimExpr> = args
                .iter()
                .map(|a| match substitute_prim_expr(a, f) {
                    Some(n) => {
                        changed = true;
                        n
                    }
                    None => a.clone(),
                })
                .collect();
            if !changed {
                return None;
            }
            new(PrimExprKind::Call {
                op: op.clone(),
                dtype: *dtype,
                args: new_args,
            })
        }
        // Not used in shapes; left unchanged.
        PrimExprKind::BufferLoad { .. }
        | PrimExprKind::Let { .. }
        | PrimExprKind::Ramp { .. }
        | PrimExprKind::Broadcast { .. } => None,
    }
}

/// Structural equality of two `PrimExpr`s (variables by identity), as
/// [`relax_ir::tir::expr_equal`] decides it.
pub fn prim_expr_equal(a: &PrimExpr, b: &PrimExpr) -> bool {
    relax_ir::tir::expr_equal(a, b)
}

/// Whether `a == b` can be proven (structural equality or the analyzer).
pub fn prove_prim_equal(ana: &Analyzer, a: &PrimExpr, b: &PrimExpr) -> bool {
    prim_expr_equal(a, b) || ana.can_prove_equal(a, b)
}

/// Three-way comparison of two dimensions: `Some(true)` proven equal,
/// `Some(false)` proven different, `None` unknown.
pub fn compare_prim(ana: &Analyzer, a: &PrimExpr, b: &PrimExpr) -> Option<bool> {
    if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
        return Some(x == y);
    }
    if prim_expr_equal(a, b) {
        return Some(true);
    }
    match ana.prove_equal(a, b) {
        Proof::True => Some(true),
        Proof::False => Some(false),
        Proof::Unknown => None,
    }
}

// ---------------------------------------------------------------------------
// StructInfo helpers
// ---------------------------------------------------------------------------

/// Structural equality of two StructInfo (shape variables and Relax variables by
/// identity; VDevices by value).
pub fn struct_info_equal(a: &StructInfo, b: &StructInfo) -> bool {
    match (a, b) {
        (StructInfo::Object, StructInfo::Object) => true,
        (StructInfo::Prim(x), StructInfo::Prim(y)) => {
            x.dtype == y.dtype
                && match (&x.value, &y.value) {
                    (None, None) => true,
                    (Some(p), Some(q)) => prim_expr_equal(p, q),
                    _ => false,
                }
        }
        (StructInfo::Shape(x), StructInfo::Shape(y)) => x.ndim == y.ndim && opt_values_equal(&x.values, &y.values),
        (StructInfo::Tensor(x), StructInfo::Tensor(y)) => {
            x.dtype == y.dtype
                && x.ndim == y.ndim
                && x.vdevice == y.vdevice
                && match (&x.shape, &y.shape) {
                    (None, None) => true,
                    (Some(p), Some(q)) => shape_expr_equal(p, q),
                    _ => false,
                }
        }
        (StructInfo::Tuple(x), StructInfo::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| struct_info_equal(p, q))
        }
        (StructInfo::Func(x), StructInfo::Func(y)) => {
            x.purity == y.purity
                && x.derive_func == y.derive_func
                && struct_info_equal(&x.ret, &y.ret)
                && match (&x.params, &y.params) {
                    (None, None) => true,
                    (Some(p), Some(q)) => p.len() == q.len() && p.iter().zip(q).all(|(s, t)| struct_info_equal(s, t)),
                    _ => false,
                }
        }
        _ => false,
    }
}

fn opt_values_equal(a: &Option<Vec<PrimExpr>>, b: &Option<Vec<PrimExpr>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(p), Some(q)) => p.len() == q.len() && p.iter().zip(q).all(|(x, y)| prim_expr_equal(x, y)),
        _ => false,
    }
}

/// Structural equality of the `shape` field of two `TensorStructInfo`s.
pub fn shape_expr_equal(a: &Expr, b: &Expr) -> bool {
    if a.same_as(b) {
        return true;
    }
    match (a.kind(), b.kind()) {
        (ExprKind::ShapeExpr(x), ExprKind::ShapeExpr(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| prim_expr_equal(p, q))
        }
        (ExprKind::Var(x), ExprKind::Var(y)) => x == y,
        _ => false,
    }
}

/// The values of a shape-valued expression: a `ShapeExpr`'s fields, or a shape
/// `Var`'s known values.
pub fn shape_values_of(e: &Expr) -> Option<Vec<PrimExpr>> {
    match e.kind() {
        ExprKind::ShapeExpr(v) => Some(v.clone()),
        ExprKind::Var(v) => v
            .struct_info()
            .and_then(|s| s.as_shape())
            .and_then(|s| s.values.clone()),
        _ => None,
    }
}

/// Whether two shape expressions can be proven equal.
pub fn can_prove_shape_equal(ana: &Analyzer, a: &Expr, b: &Expr) -> bool {
    if shape_expr_equal(a, b) {
        return true;
    }
    match (a.kind(), b.kind()) {
        (ExprKind::ShapeExpr(x), ExprKind::ShapeExpr(y)) => values_provably_equal(ana, x, y),
        _ => false,
    }
}

fn values_provably_equal(ana: &Analyzer, x: &[PrimExpr], y: &[PrimExpr]) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|(p, q)| prove_prim_equal(ana, p, q))
}

/// `TensorStructInfo` with an unknown shape.
pub fn tensor_no_shape(dtype: DataType, ndim: i32, vdevice: Option<relax_ir::VDevice>) -> StructInfo {
    StructInfo::Tensor(TensorStructInfo {
        shape: None,
        dtype,
        vdevice,
        ndim,
    })
}

/// An opaque `FuncStructInfo` (no params, no derivation function).
pub fn opaque_func(ret: StructInfo, purity: bool) -> StructInfo {
    StructInfo::Func(FuncStructInfo {
        params: None,
        ret: Box::new(ret),
        purity,
        derive_func: None,
    })
}

/// The StructInfo with all symbolic information removed (`GetStaticType`).
pub fn get_static_struct_info(s: &StructInfo) -> StructInfo {
    match s {
        StructInfo::Object => StructInfo::Object,
        StructInfo::Prim(p) => StructInfo::prim(p.dtype),
        StructInfo::Shape(sh) => StructInfo::Shape(ShapeStructInfo {
            values: None,
            ndim: sh.ndim,
        }),
        StructInfo::Tensor(t) => tensor_no_shape(t.dtype, t.ndim, t.vdevice.clone()),
        StructInfo::Tuple(f) => StructInfo::Tuple(f.iter().map(get_static_struct_info).collect()),
        StructInfo::Func(f) => match &f.params {
            None => StructInfo::Func(FuncStructInfo {
                params: None,
                ret: Box::new(StructInfo::Object),
                purity: f.purity,
                derive_func: Some(f.derive_func.clone().unwrap_or_else(|| EMPTY_DERIVE.to_string())),
            }),
            Some(params) => StructInfo::Func(FuncStructInfo {
                params: Some(params.iter().map(get_static_struct_info).collect()),
                ret: Box::new(get_static_struct_info(&f.ret)),
                purity: f.purity,
                derive_func: None,
            }),
        },
    }
}

/// The shape variables appearing by themselves in binding positions of `s`
/// (a dimension of a `ShapeExpr` or `ShapeStructInfo`, or a `PrimStructInfo`
/// value), in order, not descending into function signatures.
pub fn definable_tir_vars(s: &StructInfo, out: &mut Vec<TirVar>) {
    let push = |e: &PrimExpr, out: &mut Vec<TirVar>| {
        if let Some(v) = e.as_var() {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
    };
    match s {
        StructInfo::Tuple(fields) => fields.iter().for_each(|f| definable_tir_vars(f, out)),
        _ => for_each_own_value(s, |v| push(v, out)),
    }
}

/// Call `f` on each value a `Prim`, `Shape` or `Tensor` StructInfo holds itself
/// (the value, the values, the dimensions of a `ShapeExpr` shape).
fn for_each_own_value(s: &StructInfo, f: impl FnMut(&PrimExpr)) {
    match s {
        StructInfo::Prim(p) => p.value.iter().for_each(f),
        StructInfo::Shape(sh) => sh.values.iter().flatten().for_each(f),
        StructInfo::Tensor(t) => t.shape_values().into_iter().flatten().for_each(f),
        StructInfo::Tuple(_) | StructInfo::Object | StructInfo::Func(_) => {}
    }
}

/// Every shape variable used in `s` (outside function signatures' own bindings), in order.
pub fn used_tir_vars(s: &StructInfo, out: &mut Vec<TirVar>) {
    match s {
        StructInfo::Prim(_) | StructInfo::Shape(_) | StructInfo::Tensor(_) => {
            for_each_own_value(s, |v| prim_expr_vars(v, out))
        }
        StructInfo::Tuple(fields) => fields.iter().for_each(|f| used_tir_vars(f, out)),
        StructInfo::Func(f) => {
            let mut own = Vec::new();
            if let Some(ps) = &f.params {
                ps.iter().for_each(|p| definable_tir_vars(p, &mut own));
            }
            let mut inner = Vec::new();
            if let Some(ps) = &f.params {
                ps.iter().for_each(|p| used_tir_vars(p, &mut inner));
            }
            used_tir_vars(&f.ret, &mut inner);
            for v in inner {
                if !own.contains(&v) && !out.contains(&v) {
                    out.push(v);
                }
            }
        }
        StructInfo::Object => {}
    }
}

/// Replace shape variables in `s` (and in `ShapeExpr` shapes of tensors).
pub fn substitute_struct_info(s: &StructInfo, f: &mut dyn FnMut(&TirVar) -> Option<PrimExpr>) -> StructInfo {
    let sub_vals = |vals: &[PrimExpr], f: &mut dyn FnMut(&TirVar) -> Option<PrimExpr>| -> Vec<PrimExpr> {
        vals.iter()
            .map(|v| substitute_prim_expr(v, f).unwrap_or_else(|| v.clone()))
            .collect()
    };
    match s {
        StructInfo::Object => StructInfo::Object,
        StructInfo::Prim(p) => StructInfo::Prim(PrimStructInfo {
            dtype: p.dtype,
            value: p
                .value
                .as_ref()
                .map(|v| substitute_prim_expr(v, f).unwrap_or_else(|| v.clone())),
        }),
        StructInfo::Shape(sh) => StructInfo::Shape(ShapeStructInfo {
            values: sh.values.as_ref().map(|v| sub_vals(v, f)),
            ndim: sh.ndim,
        }),
        StructInfo::Tensor(t) => {
            let shape = match t.shape_values() {
                Some(vals) => Some(Expr::with_span(
                    ExprKind::ShapeExpr(sub_vals(vals, f)),
                    span_of(&t.shape),
                )),
                None => t.shape.clone(),
            };
            StructInfo::Tensor(TensorStructInfo {
                shape,
                dtype: t.dtype,
                vdevice: t.vdevice.clone(),
                ndim: t.ndim,
            })
        }
        StructInfo::Tuple(fields) => StructInfo::Tuple(fields.iter().map(|x| substitute_struct_info(x, f)).collect()),
        StructInfo::Func(fi) => StructInfo::Func(FuncStructInfo {
            params: fi
                .params
                .as_ref()
                .map(|ps| ps.iter().map(|p| substitute_struct_info(p, f)).collect()),
            ret: Box::new(substitute_struct_info(&fi.ret, f)),
            purity: fi.purity,
            derive_func: fi.derive_func.clone(),
        }),
    }
}

fn span_of(e: &Option<Expr>) -> relax_ir::Span {
    e.as_ref().map(|e| e.span()).unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Compatibility
// ---------------------------------------------------------------------------

/// The verdict of [`check_compatibility`], from worst to best.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Compatibility {
    /// A definite mismatch: an error.
    Incompatible,
    /// May or may not match: a warning (insert a `MatchCast`).
    PossiblyCompatible,
    /// Definitely accepted.
    Compatible,
}

/// `check_compatibility(s1, s2)`: whether a value described by `given` is
/// accepted where `expected` is expected (the spec's procedure).
pub fn check_compatibility(given: &StructInfo, expected: &StructInfo, ana: &Analyzer) -> Compatibility {
    use Compatibility::*;
    match (given, expected) {
        (_, StructInfo::Object) => Compatible,
        (StructInfo::Tuple(a), StructInfo::Tuple(b)) => {
            if a.len() != b.len() {
                return Incompatible;
            }
            a.iter()
                .zip(b)
                .map(|(x, y)| check_compatibility(x, y, ana))
                .min()
                .unwrap_or(Compatible)
        }
        (StructInfo::Shape(a), StructInfo::Shape(b)) => {
            if b.ndim == -1 {
                return Compatible;
            }
            if a.ndim != b.ndim {
                // An unknown rank may still match.
                return if a.ndim == -1 { PossiblyCompatible } else { Incompatible };
            }
            match (&a.values, &b.values) {
                (_, None) => Compatible,
                (None, Some(_)) => PossiblyCompatible,
                (Some(x), Some(y)) => compare_values(ana, x, y),
            }
        }
        (StructInfo::Prim(a), StructInfo::Prim(b)) => {
            if a.dtype != b.dtype {
                return Incompatible;
            }
            match (&a.value, &b.value) {
                (_, None) => Compatible,
                (None, Some(_)) => PossiblyCompatible,
                (Some(x), Some(y)) => match compare_prim(ana, x, y) {
                    Some(true) => Compatible,
                    Some(false) => Incompatible,
                    None => PossiblyCompatible,
                },
            }
        }
        (StructInfo::Tensor(a), StructInfo::Tensor(b)) => {
            if !a.dtype.is_void() && !b.dtype.is_void() && a.dtype != b.dtype {
                return Incompatible;
            }
            if a.ndim != -1 && b.ndim != -1 && a.ndim != b.ndim {
                return Incompatible;
            }
            if let Some(bv) = &b.vdevice {
                if let Some(av) = &a.vdevice {
                    if av != bv {
                        return Incompatible;
                    }
                }
            }
            let shape_verdict = match (&a.shape, &b.shape) {
                (_, None) => Compatible,
                (None, Some(_)) => PossiblyCompatible,
                (Some(x), Some(y)) => compare_shape_exprs(ana, x, y),
            };
            if shape_verdict == Incompatible {
                return Incompatible;
            }
            let mut v = shape_verdict;
            if a.dtype.is_void() && !b.dtype.is_void() {
                v = v.min(PossiblyCompatible);
            }
            if a.vdevice.is_none() && b.vdevice.is_some() {
                v = v.min(PossiblyCompatible);
            }
            if a.ndim == -1 && b.ndim != -1 {
                v = v.min(PossiblyCompatible);
            }
            v
        }
        (StructInfo::Func(a), StructInfo::Func(b)) => match (&a.params, &b.params) {
            (None, None) => {
                if a.derive_func == b.derive_func {
                    check_compatibility(&a.ret, &b.ret, ana)
                } else {
                    PossiblyCompatible
                }
            }
            (Some(ap), Some(bp)) => {
                if ap.len() != bp.len() {
                    return Incompatible;
                }
                if !a.purity && b.purity {
                    return Incompatible;
                }
                let mut m: HashMap<TirVar, PrimExpr> = HashMap::new();
                for (x, y) in ap.iter().zip(bp) {
                    for (k, v) in get_shape_var_mapping(x, y) {
                        m.entry(k).or_insert(v);
                    }
                }
                let a_sub = substitute_struct_info(given, &mut |v| m.get(v).cloned());
                let StructInfo::Func(a2) = &a_sub else {
                    return Incompatible;
                };
                let a2p = a2.params.as_deref().unwrap_or(&[]);
                let mut v = Compatible;
                for (x, y) in a2p.iter().zip(bp) {
                    v = v.min(check_compatibility(y, x, ana));
                }
                v.min(check_compatibility(&a2.ret, &b.ret, ana))
            }
            _ => Incompatible,
        },
        (StructInfo::Object, _) => PossiblyCompatible,
        _ => Incompatible,
    }
}

fn compare_values(ana: &Analyzer, x: &[PrimExpr], y: &[PrimExpr]) -> Compatibility {
    if x.len() != y.len() {
        return Compatibility::Incompatible;
    }
    let mut v = Compatibility::Compatible;
    for (p, q) in x.iter().zip(y) {
        match compare_prim(ana, p, q) {
            Some(true) => {}
            Some(false) => return Compatibility::Incompatible,
            None => v = Compatibility::PossiblyCompatible,
        }
    }
    v
}

fn compare_shape_exprs(ana: &Analyzer, x: &Expr, y: &Expr) -> Compatibility {
    if shape_expr_equal(x, y) {
        return Compatibility::Compatible;
    }
    match (shape_values_of(x), shape_values_of(y)) {
        (Some(a), Some(b)) => compare_values(ana, &a, &b),
        _ => Compatibility::PossiblyCompatible,
    }
}

// ---------------------------------------------------------------------------
// Shape variable mapping, erasure and call derivation
// ---------------------------------------------------------------------------

/// `get_shape_var_mapping(S1, S2)`: the shape variables standing alone in binding
/// positions of `s1`, mapped to the corresponding dimensions of `s2`.
pub fn get_shape_var_mapping(s1: &StructInfo, s2: &StructInfo) -> Vec<(TirVar, PrimExpr)> {
    let mut out: Vec<(TirVar, PrimExpr)> = Vec::new();
    fn add(out: &mut Vec<(TirVar, PrimExpr)>, a: &[PrimExpr], b: &[PrimExpr]) {
        if a.len() != b.len() {
            return;
        }
        for (x, y) in a.iter().zip(b) {
            if let Some(v) = x.as_var() {
                if !out.iter().any(|(k, _)| k == v) {
                    out.push((v.clone(), y.clone()));
                }
            }
        }
    }
    fn go(out: &mut Vec<(TirVar, PrimExpr)>, s1: &StructInfo, s2: &StructInfo) {
        match (s1, s2) {
            (StructInfo::Tuple(a), StructInfo::Tuple(b)) if a.len() == b.len() => {
                a.iter().zip(b).for_each(|(x, y)| go(out, x, y))
            }
            (StructInfo::Func(a), StructInfo::Func(b)) => {
                if let (Some(ap), Some(bp)) = (&a.params, &b.params) {
                    if ap.len() == bp.len() {
                        ap.iter().zip(bp).for_each(|(x, y)| go(out, x, y));
                    }
                }
            }
            (StructInfo::Shape(a), StructInfo::Shape(b)) => {
                if let (Some(x), Some(y)) = (&a.values, &b.values) {
                    add(out, x, y)
                }
            }
            (StructInfo::Tensor(a), StructInfo::Tensor(b)) => {
                if let (Some(x), Some(y)) = (a.shape_values(), b.shape_values()) {
                    add(out, x, y)
                }
            }
            _ => {}
        }
    }
    go(&mut out, s1, s2);
    out
}

/// `erase_to_well_defined`: weaken `s` so that it only mentions shape variables
/// and Relax variables for which the maps give a value (which replaces them);
/// a shape or value mentioning any other variable becomes unknown.
pub fn erase_to_well_defined(
    s: &StructInfo,
    shape_var_map: &dyn Fn(&TirVar) -> Option<PrimExpr>,
    var_map: &dyn Fn(&Var) -> Option<Expr>,
    ana: &Analyzer,
) -> StructInfo {
    Eraser {
        shape_var_map,
        var_map,
        ana,
        extra: Vec::new(),
    }
    .erase(s)
}

/// [`erase_to_well_defined`] with explicit maps (a variable not in a map is out of scope).
pub fn erase_with_maps(
    s: &StructInfo,
    shape_vars: &HashMap<TirVar, PrimExpr>,
    vars: &HashMap<Var, Expr>,
    ana: &Analyzer,
) -> StructInfo {
    erase_to_well_defined(s, &|v| shape_vars.get(v).cloned(), &|v| vars.get(v).cloned(), ana)
}

/// [`erase_to_well_defined`] keeping exactly the variables in scope.
pub fn erase_in_scope(
    s: &StructInfo,
    shape_scope: &HashSet<TirVar>,
    var_scope: &dyn Fn(&Var) -> bool,
    ana: &Analyzer,
) -> StructInfo {
    erase_to_well_defined(
        s,
        &|v| {
            if shape_scope.contains(v) {
                Some(v.to_expr())
            } else {
                None
            }
        },
        &|v| if var_scope(v) { Some(v.to_expr()) } else { None },
        ana,
    )
}

struct Eraser<'a> {
    shape_var_map: &'a dyn Fn(&TirVar) -> Option<PrimExpr>,
    var_map: &'a dyn Fn(&Var) -> Option<Expr>,
    ana: &'a Analyzer,
    /// Shape variables bound by an enclosing function signature.
    extra: Vec<TirVar>,
}

impl Eraser<'_> {
    /// The expression with mapped variables replaced, or `None` if it uses an unmapped one.
    fn prim(&self, e: &PrimExpr) -> Option<PrimExpr> {
        let mut undefined = false;
        let out = substitute_prim_expr(e, &mut |v| {
            if self.extra.contains(v) {
                return None;
            }
            match (self.shape_var_map)(v) {
                Some(val) => {
                    if prim_expr_equal(&val, &v.to_expr()) {
                        None
                    } else {
                        Some(match val.as_int() {
                            Some(i) => PrimExpr::int(i),
                            None => val,
                        })
                    }
                }
                None => {
                    undefined = true;
                    None
                }
            }
        });
        if undefined {
            return None;
        }
        Some(match out {
            Some(changed) => self.ana.simplify(&changed),
            None => e.clone(),
        })
    }

    fn values(&self, vals: &[PrimExpr]) -> Option<Vec<PrimExpr>> {
        vals.iter().map(|v| self.prim(v)).collect()
    }

    fn erase(&mut self, s: &StructInfo) -> StructInfo {
        match s {
            StructInfo::Object => StructInfo::Object,
            StructInfo::Prim(p) => match &p.value {
                None => s.clone(),
                Some(v) => StructInfo::Prim(PrimStructInfo {
                    dtype: p.dtype,
                    value: self.prim(v),
                }),
            },
            StructInfo::Shape(sh) => match &sh.values {
                None => s.clone(),
                Some(vals) => match self.values(vals) {
                    Some(v) => StructInfo::Shape(ShapeStructInfo {
                        values: Some(v),
                        ndim: sh.ndim,
                    }),
                    None => StructInfo::Shape(ShapeStructInfo {
                        values: None,
                        ndim: sh.ndim,
                    }),
                },
            },
            StructInfo::Tensor(t) => {
                let Some(shape) = &t.shape else { return s.clone() };
                let new_shape = match shape.kind() {
                    ExprKind::ShapeExpr(vals) => self
                        .values(vals)
                        .map(|v| Expr::with_span(ExprKind::ShapeExpr(v), shape.span())),
                    ExprKind::Var(v) => (self.var_map)(v),
                    _ => None,
                };
                match new_shape {
                    Some(shape) => {
                        let ndim = match shape.kind() {
                            ExprKind::ShapeExpr(v) => v.len() as i32,
                            _ => t.ndim,
                        };
                        StructInfo::Tensor(TensorStructInfo {
                            shape: Some(shape),
                            dtype: t.dtype,
                            vdevice: t.vdevice.clone(),
                            ndim,
                        })
                    }
                    None => tensor_no_shape(t.dtype, t.ndim, t.vdevice.clone()),
                }
            }
            StructInfo::Tuple(fields) => StructInfo::Tuple(fields.iter().map(|f| self.erase(f)).collect()),
            StructInfo::Func(f) => {
                let depth = self.extra.len();
                if let Some(ps) = &f.params {
                    let mut own = Vec::new();
                    ps.iter().for_each(|p| definable_tir_vars(p, &mut own));
                    self.extra.extend(own);
                }
                let params = f.params.as_ref().map(|ps| ps.iter().map(|p| self.erase(p)).collect());
                let ret = self.erase(&f.ret);
                self.extra.truncate(depth);
                StructInfo::Func(FuncStructInfo {
                    params,
                    ret: Box::new(ret),
                    purity: f.purity,
                    derive_func: f.derive_func.clone(),
                })
            }
        }
    }
}

/// What calling a function with `FuncStructInfo` gives: the result StructInfo and
/// warnings for arguments whose match could not be proven.
#[derive(Clone, Debug)]
pub struct CallDerivation {
    /// The StructInfo of the call.
    pub ret: StructInfo,
    /// Warnings (argument matches only possibly holding), as messages.
    pub warnings: Vec<String>,
}

/// `derive_call_ret_struct_info`: beta-reduce the callee's signature against the
/// arguments' StructInfo (`args`) and return the call's StructInfo.
///
/// Errors when the argument count differs or an argument is
/// definitely (`FailL0`) or statically (`FailL1`) not a subtype of its parameter.
pub fn derive_call_ret_struct_info(
    finfo: &FuncStructInfo,
    call: &Call,
    args: &[StructInfo],
    ana: &Analyzer,
) -> Result<CallDerivation, crate::op::InferError> {
    let Some(params) = &finfo.params else {
        let ret = match &finfo.derive_func {
            Some(d) => apply_derive_func(d, call),
            None => (*finfo.ret).clone(),
        };
        return Ok(CallDerivation {
            ret,
            warnings: Vec::new(),
        });
    };
    if params.len() != args.len() {
        return Err(crate::op::InferError::new(crate::op::InferErrorKind::Arity, format!("number of arguments and parameters mismatch: the callee accepts {} parameters, but was called with {} arguments",
            params.len(),
            args.len())));
    }
    let mut checker = BaseChecker::new(ana);
    checker.derive_mode = true;
    checker.populate = true;
    let mut warnings = Vec::new();
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        match checker.visit(p, a) {
            BaseCheckResult::FailL0 | BaseCheckResult::FailL1 => {
                return Err(crate::op::InferError::new(
                    crate::op::InferErrorKind::ArgKind,
                    format!(
                        "argument {i} type mismatch: expected {}, given {}",
                        display_struct_info(p),
                        display_struct_info(a)
                    ),
                ));
            }
            BaseCheckResult::FailL2 => warnings.push(format!(
                "argument {i} may not match its parameter: expected {}, given {}",
                display_struct_info(p),
                display_struct_info(a)
            )),
            BaseCheckResult::Pass => {}
        }
    }
    let shape_map = checker.shape_map;
    let var_map = checker.var_map;
    let ret = erase_with_maps(&finfo.ret, &shape_map, &var_map, ana);
    Ok(CallDerivation { ret, warnings })
}

// ---------------------------------------------------------------------------
// Display
// ---------------------------------------------------------------------------

/// StructInfo as TVMScript text (the printer's output; a compact fallback when
/// the printer gives nothing).
pub fn display_struct_info(s: &StructInfo) -> String {
    let printed = relax_ir::text::print_struct_info(s, None);
    if !printed.is_empty() {
        return printed;
    }
    fallback_display(s)
}

fn fallback_prim(e: &PrimExpr) -> String {
    let printed =
        relax_ir::text::printer::prim_expr::print_prim_expr(e, relax_ir::text::printer::prim_expr::PrimContext::Relax);
    if !printed.is_empty() {
        return printed;
    }
    match e.kind() {
        PrimExprKind::IntImm { value, .. } => value.to_string(),
        PrimExprKind::Var(v) => v.name().to_string(),
        PrimExprKind::Binary { op, a, b } => {
            let sym = match op {
                relax_ir::tir::BinOp::Add => "+",
                relax_ir::tir::BinOp::Sub => "-",
                relax_ir::tir::BinOp::Mul => "*",
                relax_ir::tir::BinOp::FloorDiv => "//",
                relax_ir::tir::BinOp::FloorMod => "%",
                _ => "?",
            };
            format!("{} {sym} {}", fallback_prim(a), fallback_prim(b))
        }
        _ => format!("{e:?}"),
    }
}

fn fallback_display(s: &StructInfo) -> String {
    let vals = |v: &[PrimExpr]| v.iter().map(fallback_prim).collect::<Vec<_>>().join(", ");
    match s {
        StructInfo::Object => "R.Any".into(),
        StructInfo::Prim(p) => match &p.value {
            None => format!("R.Prim(\"{}\")", p.dtype),
            Some(v) => format!("R.Prim(value={})", fallback_prim(v)),
        },
        StructInfo::Shape(sh) => match &sh.values {
            Some(v) => format!("R.Shape([{}])", vals(v)),
            None => format!("R.Shape(ndim={})", sh.ndim),
        },
        StructInfo::Tensor(t) => {
            let mut parts = Vec::new();
            if let Some(e) = &t.shape {
                match e.kind() {
                    ExprKind::ShapeExpr(v) if v.len() == 1 => parts.push(format!("({},)", vals(v))),
                    ExprKind::ShapeExpr(v) => parts.push(format!("({})", vals(v))),
                    ExprKind::Var(v) => parts.push(v.name().to_string()),
                    _ => {}
                }
            }
            if !t.dtype.is_void() {
                parts.push(format!("dtype=\"{}\"", t.dtype));
            }
            if t.shape.is_none() && t.ndim != -1 {
                parts.push(format!("ndim={}", t.ndim));
            }
            if let Some(vd) = &t.vdevice {
                parts.push(format!(
                    "vdevice=\"{}:{}:{}\"",
                    vd.target.kind, vd.vdevice_id, vd.memory_scope
                ));
            }
            format!("R.Tensor({})", parts.join(", "))
        }
        StructInfo::Tuple(f) => format!(
            "R.Tuple({})",
            f.iter().map(fallback_display).collect::<Vec<_>>().join(", ")
        ),
        StructInfo::Func(f) => match &f.params {
            Some(ps) => format!(
                "R.Callable(({}), {}, {})",
                ps.iter().map(fallback_display).collect::<Vec<_>>().join(", "),
                fallback_display(&f.ret),
                if f.purity { "True" } else { "False" }
            ),
            None => "R.Callable".into(),
        },
    }
}
