//! Subtyping: the base check of one StructInfo against another, and their unification.

#[allow(unused_imports)]
use super::*;

pub(super) struct BaseChecker<'a> {
    pub(super) ana: &'a Analyzer,
    /// When set, bare shape variables (and shape `Var`s) of the base are bound to
    /// the derived values on first occurrence (beta-reduction at calls).
    pub(super) populate: bool,
    pub(super) derive_mode: bool,
    pub(super) shape_map: HashMap<TirVar, PrimExpr>,
    pub(super) var_map: HashMap<Var, Expr>,
}

impl<'a> BaseChecker<'a> {
    pub(super) fn new(ana: &'a Analyzer) -> Self {
        BaseChecker {
            ana,
            populate: false,
            derive_mode: false,
            shape_map: HashMap::new(),
            var_map: HashMap::new(),
        }
    }

    pub(super) fn not_same_kind(other: &StructInfo) -> BaseCheckResult {
        if matches!(other, StructInfo::Object) {
            BaseCheckResult::FailL1
        } else {
            BaseCheckResult::FailL0
        }
    }

    pub(super) fn visit(&mut self, lhs: &StructInfo, rhs: &StructInfo) -> BaseCheckResult {
        use BaseCheckResult::*;
        match lhs {
            StructInfo::Object => Pass,
            StructInfo::Prim(l) => {
                let StructInfo::Prim(r) = rhs else {
                    return Self::not_same_kind(rhs);
                };
                if l.dtype != r.dtype {
                    return FailL0;
                }
                self.known_match(&l.value, &r.value, Self::prim_match)
            }
            StructInfo::Shape(l) => {
                let StructInfo::Shape(r) = rhs else {
                    return Self::not_same_kind(rhs);
                };
                if l.ndim == -1 {
                    return Pass;
                }
                if l.ndim != r.ndim {
                    return ndim_mismatch(r.ndim);
                }
                self.known_match(&l.values, &r.values, |c, a, b| c.values_match(a, b))
            }
            StructInfo::Tensor(l) => {
                let StructInfo::Tensor(r) = rhs else {
                    return Self::not_same_kind(rhs);
                };
                if !l.dtype.is_void() && !r.dtype.is_void() && l.dtype != r.dtype {
                    return FailL0;
                }
                if !l.dtype.is_void() && r.dtype.is_void() {
                    return FailL1;
                }
                if l.ndim != -1 && l.ndim != r.ndim {
                    return ndim_mismatch(r.ndim);
                }
                match (&l.vdevice, &r.vdevice) {
                    (Some(_), None) => return FailL1,
                    (Some(a), Some(b)) if a != b => return FailL0,
                    _ => {}
                }
                self.known_match(&l.shape, &r.shape, Self::shape_match)
            }
            StructInfo::Tuple(l) => {
                let StructInfo::Tuple(r) = rhs else {
                    return Self::not_same_kind(rhs);
                };
                self.array_check(l, r)
            }
            StructInfo::Func(l) => {
                let StructInfo::Func(r) = rhs else {
                    return Self::not_same_kind(rhs);
                };
                if l.purity && !r.purity {
                    return FailL0;
                }
                let Some(lp) = &l.params else {
                    if let Some(d) = &l.derive_func {
                        return if r.params.is_none() && r.derive_func.as_deref() == Some(d.as_str()) {
                            Pass
                        } else {
                            FailL2
                        };
                    }
                    return self.visit(&l.ret, &r.ret);
                };
                let Some(rp) = &r.params else { return FailL2 };
                if struct_info_equal(lhs, rhs) {
                    return Pass;
                }
                let saved = self.populate;
                self.populate = false;
                let mut params = self.array_check(lp, rp);
                self.populate = saved;
                if params == FailL1 {
                    params = FailL2;
                }
                params.combine(self.visit(&l.ret, &r.ret))
            }
        }
    }

    /// `check` on each pair of `l` and `r` combined (`FailL0` when the lengths
    /// differ), stopping at the first `FailL0`.
    fn pairwise<T>(&mut self, l: &[T], r: &[T], check: fn(&mut Self, &T, &T) -> BaseCheckResult) -> BaseCheckResult {
        if l.len() != r.len() {
            return BaseCheckResult::FailL0;
        }
        let mut ret = BaseCheckResult::Pass;
        for (a, b) in l.iter().zip(r) {
            ret = ret.combine(check(self, a, b));
            if ret == BaseCheckResult::FailL0 {
                return ret;
            }
        }
        ret
    }

    pub(super) fn array_check(&mut self, l: &[StructInfo], r: &[StructInfo]) -> BaseCheckResult {
        self.pairwise(l, r, Self::visit)
    }

    pub(super) fn prim_match(&mut self, l: &PrimExpr, r: &PrimExpr) -> BaseCheckResult {
        if self.derive_mode && self.populate {
            if let Some(v) = l.as_var() {
                let ana = self.ana;
                return bind_or_prove(&mut self.shape_map, v, r, |m, r| prove_prim_equal(ana, m, r));
            }
        }
        if let (Some(a), Some(b)) = (l.as_int(), r.as_int()) {
            return if a == b {
                BaseCheckResult::Pass
            } else {
                BaseCheckResult::FailL0
            };
        }
        if prove_prim_equal(self.ana, l, r) {
            BaseCheckResult::Pass
        } else {
            BaseCheckResult::FailL2
        }
    }

    /// A part of the base that may be unknown: unknown in the base passes, known
    /// against unknown fails at L2, else `check` decides.
    fn known_match<T>(
        &mut self,
        l: &Option<T>,
        r: &Option<T>,
        check: impl FnOnce(&mut Self, &T, &T) -> BaseCheckResult,
    ) -> BaseCheckResult {
        match (l, r) {
            (None, _) => BaseCheckResult::Pass,
            (Some(_), None) => BaseCheckResult::FailL2,
            (Some(a), Some(b)) => check(self, a, b),
        }
    }

    pub(super) fn values_match(&mut self, l: &[PrimExpr], r: &[PrimExpr]) -> BaseCheckResult {
        self.pairwise(l, r, Self::prim_match)
    }

    pub(super) fn shape_match(&mut self, l: &Expr, r: &Expr) -> BaseCheckResult {
        if shape_expr_equal(l, r) {
            return BaseCheckResult::Pass;
        }
        if self.derive_mode && self.populate {
            if let ExprKind::Var(v) = l.kind() {
                if !v.is_dataflow() {
                    let ana = self.ana;
                    return bind_or_prove(&mut self.var_map, v, r, |m, r| can_prove_shape_equal(ana, m, r));
                }
            }
        }
        match (l.kind(), r.kind()) {
            (ExprKind::ShapeExpr(a), ExprKind::ShapeExpr(b)) => self.values_match(a, b),
            _ => BaseCheckResult::FailL2,
        }
    }
}

/// The result of ranks that differ: L1 when the derived rank is unknown, else L0.
fn ndim_mismatch(derived_ndim: i32) -> BaseCheckResult {
    if derived_ndim == -1 {
        BaseCheckResult::FailL1
    } else {
        BaseCheckResult::FailL0
    }
}

/// Derive mode's binding of `key` to `value`: a first occurrence binds it
/// (pass); a later one passes when `equal` proves the bound value equal.
fn bind_or_prove<K: std::hash::Hash + Eq + Clone, V: Clone>(
    map: &mut HashMap<K, V>,
    key: &K,
    value: &V,
    equal: impl FnOnce(&V, &V) -> bool,
) -> BaseCheckResult {
    match map.get(key) {
        None => {
            map.insert(key.clone(), value.clone());
            BaseCheckResult::Pass
        }
        Some(m) if equal(m, value) => BaseCheckResult::Pass,
        Some(_) => BaseCheckResult::FailL2,
    }
}

/// `struct_info_base_check(base, derived)`: how well `derived <: base` holds.
pub fn struct_info_base_check(base: &StructInfo, derived: &StructInfo, ana: &Analyzer) -> BaseCheckResult {
    BaseChecker::new(ana).visit(base, derived)
}

/// Whether `derived <: base` definitely holds.
pub fn is_base_of(base: &StructInfo, derived: &StructInfo, ana: &Analyzer) -> bool {
    struct_info_base_check(base, derived, ana) == BaseCheckResult::Pass
}

// ---------------------------------------------------------------------------
// LUB
// ---------------------------------------------------------------------------

/// The least upper bound of two StructInfo (modulo arithmetic reasoning).
pub fn unify_struct_info(lhs: &StructInfo, rhs: &StructInfo, ana: &Analyzer) -> StructInfo {
    match lhs {
        StructInfo::Object => StructInfo::Object,
        StructInfo::Prim(l) => {
            let StructInfo::Prim(r) = rhs else {
                return StructInfo::Object;
            };
            if l.dtype != r.dtype {
                return StructInfo::Object;
            }
            match (&l.value, &r.value) {
                (Some(a), Some(b)) if prove_prim_equal(ana, a, b) => lhs.clone(),
                _ => StructInfo::prim(l.dtype),
            }
        }
        StructInfo::Shape(l) => {
            let StructInfo::Shape(r) = rhs else {
                return StructInfo::Object;
            };
            let ndim = if l.ndim == r.ndim { l.ndim } else { -1 };
            let equal = l.ndim == r.ndim
                && match (&l.values, &r.values) {
                    (Some(a), Some(b)) => values_provably_equal(ana, a, b),
                    _ => false,
                };
            if equal {
                lhs.clone()
            } else {
                StructInfo::Shape(ShapeStructInfo { values: None, ndim })
            }
        }
        StructInfo::Tensor(l) => {
            let StructInfo::Tensor(r) = rhs else {
                return StructInfo::Object;
            };
            let dtype = if l.dtype == r.dtype { l.dtype } else { DataType::VOID };
            let ndim = if l.ndim == r.ndim { l.ndim } else { -1 };
            let vdev = match (&l.vdevice, &r.vdevice) {
                (Some(a), Some(b)) if a == b => Some(a.clone()),
                _ => None,
            };
            let shape_equal = l.ndim == r.ndim
                && match (&l.shape, &r.shape) {
                    (Some(a), Some(b)) => can_prove_shape_equal(ana, a, b),
                    _ => false,
                };
            if !shape_equal {
                return tensor_no_shape(dtype, ndim, vdev);
            }
            StructInfo::Tensor(TensorStructInfo {
                shape: l.shape.clone(),
                dtype,
                vdevice: vdev,
                ndim: l.ndim,
            })
        }
        StructInfo::Tuple(l) => {
            let StructInfo::Tuple(r) = rhs else {
                return StructInfo::Object;
            };
            if l.len() != r.len() {
                return StructInfo::Object;
            }
            StructInfo::Tuple(l.iter().zip(r).map(|(a, b)| unify_struct_info(a, b, ana)).collect())
        }
        StructInfo::Func(l) => {
            let StructInfo::Func(r) = rhs else {
                return StructInfo::Object;
            };
            let purity = l.purity && r.purity;
            let Some(lp) = &l.params else {
                if let Some(d) = &l.derive_func {
                    if r.params.is_none() && r.derive_func.as_deref() == Some(d.as_str()) {
                        return lhs.clone();
                    }
                    return opaque_func(StructInfo::Object, purity);
                }
                let ret = unify_struct_info(&l.ret, &r.ret, ana);
                return opaque_func(ret, purity);
            };
            let Some(rp) = &r.params else {
                let ret = unify_struct_info(&l.ret, &r.ret, ana);
                return opaque_func(ret, purity);
            };
            if struct_info_equal(lhs, rhs) {
                return lhs.clone();
            }
            let ret = unify_struct_info(&l.ret, &r.ret, ana);
            if lp.len() != rp.len() {
                return opaque_func(ret, purity);
            }
            let params: Vec<StructInfo> = lp.iter().zip(rp).map(|(a, b)| unify_struct_info(a, b, ana)).collect();
            StructInfo::Func(FuncStructInfo {
                params: Some(params),
                ret: Box::new(ret),
                purity,
                derive_func: None,
            })
        }
    }
}
