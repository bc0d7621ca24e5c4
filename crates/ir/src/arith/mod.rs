//! The arithmetic analyzer for `PrimExpr`: canonical simplification and a prover
//! answering equal / not equal / unknown.
//!
//! Integer expressions are brought to a canonical sum of products with integer
//! coefficients (`n*2 - n` → `n`, `(n + 1)*2 - 2*n` → `2`) over atoms (variables,
//! divisions that do not simplify, `min`/`max`, loads, calls). Division follows TVM:
//! `FloorDiv`/`FloorMod` round toward −∞, `Div`/`Mod` on integers truncate toward 0.
//! Facts are variable ranges ([`Analyzer::bind`]) and, optionally, the assumption that
//! every integer variable is non-negative (Relax shape variables,
//! [`Analyzer::set_vars_nonneg`]).

mod bound;
mod canonical;
mod eval;
mod order;
mod simplify;

use std::collections::HashMap;

use bound::Interval;

pub use eval::{eval_int, int_binop_exact};
pub use order::{cmp_expr, expr_identical};

use crate::tir::{BinOp, PrimExpr, PrimExprKind, Range, TirVar};

/// The answer of the prover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proof {
    /// Provably true for every value of the free variables.
    True,
    /// Provably false for every value of the free variables.
    False,
    /// Neither could be proven.
    Unknown,
}

impl Proof {
    fn from_opt(v: Option<bool>) -> Proof {
        match v {
            Some(true) => Proof::True,
            Some(false) => Proof::False,
            None => Proof::Unknown,
        }
    }
}

/// Constant bounds of an integer expression: every value lies in
/// `[min_value, max_value]`; `i64::MIN` / `i64::MAX` stand for −∞ / +∞.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstIntBound {
    /// The lower bound (`i64::MIN`: unbounded).
    pub min_value: i64,
    /// The upper bound (`i64::MAX`: unbounded).
    pub max_value: i64,
}

impl ConstIntBound {
    /// −∞ in a bound.
    pub const NEG_INF: i64 = i64::MIN;
    /// +∞ in a bound.
    pub const POS_INF: i64 = i64::MAX;

    fn from_interval(iv: Interval) -> ConstIntBound {
        let conv = |v: i128| {
            if v <= i64::MIN as i128 {
                i64::MIN
            } else if v >= i64::MAX as i128 {
                i64::MAX
            } else {
                v as i64
            }
        };
        ConstIntBound {
            min_value: conv(iv.lo),
            max_value: conv(iv.hi),
        }
    }
}

/// An arithmetic analyzer. Cheap to create; carries known facts (variable bounds and
/// whether integer variables are assumed non-negative).
#[derive(Clone, Debug, Default)]
pub struct Analyzer {
    bounds: HashMap<u64, Interval>,
    vars_nonneg: bool,
}

impl Analyzer {
    /// A fresh analyzer with no facts.
    pub fn new() -> Analyzer {
        Analyzer::default()
    }
    /// A fresh analyzer assuming every integer variable is non-negative (the facts
    /// of Relax shape variables).
    pub fn for_shapes() -> Analyzer {
        Analyzer {
            vars_nonneg: true,
            ..Analyzer::default()
        }
    }
    /// Assume (or stop assuming) that every integer variable is non-negative.
    pub fn set_vars_nonneg(&mut self, on: bool) {
        self.vars_nonneg = on;
    }
    /// Builder form of [`Analyzer::set_vars_nonneg`].
    pub fn with_vars_nonneg(mut self, on: bool) -> Analyzer {
        self.vars_nonneg = on;
        self
    }
    /// Whether integer variables are assumed non-negative.
    pub fn vars_nonneg(&self) -> bool {
        self.vars_nonneg
    }
    /// Record that `min <= var <= max` (inclusive; `i64::MIN`/`i64::MAX` for
    /// unbounded). A later call for the same variable replaces the fact.
    pub fn bind(&mut self, var: &TirVar, min: i64, max: i64) {
        let conv = |v: i64, inf: i128| {
            if v == i64::MIN || v == i64::MAX {
                inf
            } else {
                v as i128
            }
        };
        self.bounds
            .insert(var.id(), Interval::new(conv(min, -bound::INF), conv(max, bound::INF)));
    }
    /// Builder form of [`Analyzer::bind`].
    pub fn with_bound(mut self, var: &TirVar, min: i64, max: i64) -> Analyzer {
        self.bind(var, min, max);
        self
    }
    /// Record that `var` is non-negative.
    pub fn bind_nonneg(&mut self, var: &TirVar) {
        self.bind(var, 0, i64::MAX);
    }
    /// Record that `var` lies in the half-open range `[min, min + extent)` (a loop or
    /// block iteration domain), using the constant bounds of `min` and `extent`.
    pub fn bind_range(&mut self, var: &TirVar, range: &Range) {
        let lo = self.interval(&range.min);
        let end = self.interval(&(&range.min + &range.extent));
        let iv = Interval::new(lo.lo, end.hi.saturating_sub(1));
        self.bounds.insert(var.id(), iv);
    }
    /// Assume the boolean `cond` holds: comparisons of a variable with an expression of
    /// constant bounds (`i < 16`, `n >= 1`, `4 <= k`, `i == 3`) and conjunctions of them
    /// narrow the variables' ranges; other conditions are ignored. Returns whether any
    /// fact was recorded.
    pub fn assume(&mut self, cond: &PrimExpr) -> bool {
        let PrimExprKind::Binary { op, a, b } = cond.kind() else {
            return false;
        };
        if *op == BinOp::And {
            let x = self.assume(a);
            let y = self.assume(b);
            return x || y;
        }
        if !op.is_comparison() || *op == BinOp::Ne {
            return false;
        }
        let (var, other, op) = match (a.as_var(), b.as_var()) {
            (Some(v), _) if is_integer(a) => (v, b, *op),
            (_, Some(v)) if is_integer(b) => {
                let flipped = match op {
                    BinOp::Lt => BinOp::Gt,
                    BinOp::Le => BinOp::Ge,
                    BinOp::Gt => BinOp::Lt,
                    BinOp::Ge => BinOp::Le,
                    o => *o,
                };
                (v, a, flipped)
            }
            _ => return false,
        };
        let o = self.interval(other);
        let cur = self.var_interval(var);
        let inf = bound::INF;
        let fact = match op {
            BinOp::Lt if !o.hi_inf() => Interval::new(-inf, o.hi - 1),
            BinOp::Gt if !o.lo_inf() => Interval::new(o.lo + 1, inf),
            BinOp::Lt | BinOp::Gt => return false,
            BinOp::Le => Interval::new(-inf, o.hi),
            BinOp::Ge => Interval::new(o.lo, inf),
            _ => o,
        };
        self.bounds.insert(var.id(), cur.intersect(fact));
        true
    }
    /// Forget the facts about `var`.
    pub fn unbind(&mut self, var: &TirVar) {
        self.bounds.remove(&var.id());
    }

    /// Simplify `e` to its canonical form.
    pub fn simplify(&self, e: &PrimExpr) -> PrimExpr {
        self.simplify_expr(e)
    }
    /// Replace variables (where `f` returns a value) and simplify.
    pub fn substitute(&self, e: &PrimExpr, f: &dyn Fn(&TirVar) -> Option<PrimExpr>) -> PrimExpr {
        self.simplify(&crate::visit::substitute_prim_expr(e, f))
    }
    /// The constant bounds of an integer expression under the known facts.
    pub fn const_int_bound(&self, e: &PrimExpr) -> ConstIntBound {
        ConstIntBound::from_interval(self.interval(e))
    }
    /// The constant value of `e` after simplification, if it is one.
    pub fn as_const_int(&self, e: &PrimExpr) -> Option<i64> {
        if let Some(v) = e.as_int() {
            return Some(v);
        }
        self.simplify(e).as_int()
    }

    /// Whether `a == b` for all values of the free variables: `True` when the
    /// difference simplifies to zero, `False` when it is provably non-zero (a non-zero
    /// constant, a bound excluding zero, or a constant not divisible by the gcd of the
    /// coefficients), `Unknown` otherwise.
    pub fn prove_equal(&self, a: &PrimExpr, b: &PrimExpr) -> Proof {
        if expr_identical(a, b) {
            return Proof::True;
        }
        if is_integer(a) && is_integer(b) {
            return match self.poly(a).sub(&self.poly(b)) {
                Some(d) => Proof::from_opt(self.decide_cmp(BinOp::Eq, &d)),
                None => Proof::Unknown,
            };
        }
        let (sa, sb) = (self.simplify(a), self.simplify(b));
        if expr_identical(&sa, &sb) {
            return Proof::True;
        }
        match (sa.kind(), sb.kind()) {
            (PrimExprKind::IntImm { value: x, .. }, PrimExprKind::IntImm { value: y, .. }) => {
                Proof::from_opt(Some(x == y))
            }
            (PrimExprKind::FloatImm { value: x, .. }, PrimExprKind::FloatImm { value: y, .. }) => {
                Proof::from_opt(Some(x == y))
            }
            _ => Proof::Unknown,
        }
    }
    /// Shorthand for `prove_equal(a, b) == Proof::True`.
    pub fn can_prove_equal(&self, a: &PrimExpr, b: &PrimExpr) -> bool {
        self.prove_equal(a, b) == Proof::True
    }
    /// Whether `a != b` can be proven (`prove_equal(a, b) == Proof::False`).
    pub fn can_prove_not_equal(&self, a: &PrimExpr, b: &PrimExpr) -> bool {
        self.prove_equal(a, b) == Proof::False
    }
    /// Prove or disprove the boolean `cond` (comparisons, `and`, `or`, `not`, constants).
    pub fn prove(&self, cond: &PrimExpr) -> Proof {
        Proof::from_opt(self.decide(cond))
    }
    /// Whether the boolean `cond` holds for all values of the free variables.
    pub fn can_prove(&self, cond: &PrimExpr) -> bool {
        self.decide(cond) == Some(true)
    }
    /// Prove or disprove `a op b` for a comparison operator `op`.
    pub fn prove_cmp(&self, op: BinOp, a: &PrimExpr, b: &PrimExpr) -> Proof {
        Proof::from_opt(self.decide_cmp_exprs(op, a, b))
    }
    /// Whether `a >= b` can be proven.
    pub fn prove_greater_equal(&self, a: &PrimExpr, b: &PrimExpr) -> bool {
        self.decide_cmp_exprs(BinOp::Ge, a, b) == Some(true)
    }
    /// Whether `a < b` can be proven.
    pub fn prove_less(&self, a: &PrimExpr, b: &PrimExpr) -> bool {
        self.decide_cmp_exprs(BinOp::Lt, a, b) == Some(true)
    }
    /// Whether `e >= 0` can be proven.
    pub fn prove_nonneg(&self, e: &PrimExpr) -> bool {
        self.interval(e).lo >= 0 || self.decide_cmp_exprs(BinOp::Ge, e, &PrimExpr::int_of(0, e.dtype())) == Some(true)
    }
}

/// Whether `e` has a scalar integer type (signed, or unsigned wider than bool).
pub(crate) fn is_integer(e: &PrimExpr) -> bool {
    let d = e.dtype();
    d.lanes == 1 && (d.is_int() || (d.is_uint() && d.bits > 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DataType;

    #[test]
    fn bind_range_gives_loop_bounds() {
        let i = TirVar::new("i", DataType::INT64);
        let mut an = Analyzer::new();
        an.bind_range(&i, &Range::from_extent(PrimExpr::int(16)));
        assert_eq!(
            an.const_int_bound(&i.to_expr()),
            ConstIntBound {
                min_value: 0,
                max_value: 15
            }
        );
        let e = PrimExpr::binary(BinOp::FloorDiv, i.to_expr(), PrimExpr::int(16));
        assert_eq!(an.simplify(&e).as_int(), Some(0));
        an.unbind(&i);
        assert_eq!(an.simplify(&e).as_int(), None);
    }

    #[test]
    fn assumed_conditions_narrow_ranges() {
        let (i, n) = (TirVar::new("i", DataType::INT64), TirVar::new("n", DataType::INT64));
        let mut an = Analyzer::new();
        let lt = PrimExpr::binary(BinOp::Lt, i.to_expr(), PrimExpr::int(16));
        let ge = PrimExpr::binary(BinOp::Le, PrimExpr::int(2), i.to_expr());
        assert!(an.assume(&PrimExpr::binary(BinOp::And, lt, ge)));
        assert_eq!(
            an.const_int_bound(&i.to_expr()),
            ConstIntBound {
                min_value: 2,
                max_value: 15
            }
        );
        assert!(an.assume(&PrimExpr::binary(BinOp::Ge, n.to_expr(), PrimExpr::int(1))));
        assert!(an.can_prove(&PrimExpr::binary(BinOp::Gt, n.to_expr(), PrimExpr::int(0))));
        assert!(!an.assume(&PrimExpr::binary(BinOp::Ne, n.to_expr(), PrimExpr::int(1))));
        // A variable bound from another variable's range.
        let mut b = Analyzer::new();
        b.bind(&n, 0, 10);
        b.assume(&PrimExpr::binary(BinOp::Lt, i.to_expr(), n.to_expr()));
        assert_eq!(b.const_int_bound(&i.to_expr()).max_value, 9);
    }
}
