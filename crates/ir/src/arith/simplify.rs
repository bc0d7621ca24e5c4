//! The simplifier: canonical forms for integer expressions, constant folding and
//! comparison decisions for the rest.

use super::bound::Interval;
use super::canonical::{gcd, Poly};
use super::order::{cmp_expr, expr_identical};
use super::{is_integer, Analyzer};
use crate::dtype::{DataType, TypeCode};
use crate::tir::{BinOp, Intrinsic, PrimExpr, PrimExprKind, TirVar};
use crate::visit::map_prim_children;

fn is_signed_scalar(d: DataType) -> bool {
    d.is_int() && d.lanes == 1
}

/// Wrap `v` to the range of integer type `d` (two's complement).
fn wrap_to(v: i128, d: DataType) -> i64 {
    if d.is_bool() {
        return (v != 0) as i64;
    }
    let bits = d.bits.clamp(1, 64) as u32;
    if bits >= 64 {
        return v as i64;
    }
    let m = v & ((1i128 << bits) - 1);
    if d.is_int() && m >= (1i128 << (bits - 1)) {
        (m - (1i128 << bits)) as i64
    } else {
        m as i64
    }
}

impl Analyzer {
    pub(crate) fn var_interval(&self, v: &TirVar) -> Interval {
        let d = v.dtype();
        let base = Interval::of_dtype(d);
        if let Some(iv) = self.bounds.get(&v.id()) {
            return iv.intersect(base);
        }
        if self.vars_nonneg && d.is_int() {
            return base.intersect(Interval::new(0, super::bound::INF));
        }
        base
    }

    /// The constant bounds of `e` (canonicalized first when it is an integer
    /// expression, so that cancelling terms do not widen the bound).
    pub(crate) fn interval(&self, e: &PrimExpr) -> Interval {
        match e.kind() {
            PrimExprKind::IntImm { value, .. } => Interval::point(*value as i128),
            PrimExprKind::Var(v) => self.var_interval(v),
            _ if is_integer(e) => {
                let p = self.poly(e);
                self.poly_interval(&p).intersect(self.expr_interval(e))
            }
            _ => self.expr_interval(e),
        }
    }

    /// Interval evaluation of `e` as written.
    pub(crate) fn expr_interval(&self, e: &PrimExpr) -> Interval {
        use PrimExprKind::*;
        let dt = e.dtype();
        let range = Interval::of_dtype(dt);
        let iv = match e.kind() {
            IntImm { value, .. } => return Interval::point(*value as i128),
            Var(v) => return self.var_interval(v),
            Binary { op, a, b } => {
                if op.is_comparison() || op.is_logical() {
                    return Interval::new(0, 1);
                }
                if !dt.is_integer() {
                    return Interval::EVERYTHING;
                }
                let (x, y) = (self.expr_interval(a), self.expr_interval(b));
                match op {
                    BinOp::Add => x.add(y),
                    BinOp::Sub => x.sub(y),
                    BinOp::Mul => x.mul(y),
                    BinOp::Min => x.min(y),
                    BinOp::Max => x.max(y),
                    BinOp::FloorDiv | BinOp::Div => match y.as_point() {
                        Some(c) if c > 0 => {
                            if *op == BinOp::FloorDiv {
                                x.floordiv(c)
                            } else {
                                x.truncdiv(c)
                            }
                        }
                        Some(c) if c < 0 => {
                            if *op == BinOp::FloorDiv {
                                x.neg().floordiv(-c)
                            } else {
                                x.truncdiv(-c).neg()
                            }
                        }
                        _ if x.lo >= 0 && y.lo >= 1 => Interval::new(0, x.hi),
                        _ => range,
                    },
                    BinOp::FloorMod | BinOp::Mod => match y.as_point() {
                        Some(c) if c != 0 => {
                            if *op == BinOp::FloorMod {
                                if c > 0 {
                                    x.floormod(c)
                                } else {
                                    x.neg().floormod(-c).neg()
                                }
                            } else {
                                x.truncmod(c.abs())
                            }
                        }
                        _ if y.lo >= 1 && !y.hi_inf() => {
                            let m = Interval::new(0, y.hi - 1);
                            if *op == BinOp::FloorMod || x.lo >= 0 {
                                if x.lo >= 0 {
                                    m.intersect(Interval::new(0, x.hi))
                                } else {
                                    m
                                }
                            } else {
                                Interval::new(-(y.hi - 1), y.hi - 1)
                            }
                        }
                        _ => range,
                    },
                    _ => range,
                }
            }
            Not(_) => return Interval::new(0, 1),
            Cast { value, dtype } => {
                let inner = self.expr_interval(value);
                let target = Interval::of_dtype(*dtype);
                if value.dtype().is_integer() && dtype.is_integer() && inner.lo >= target.lo && inner.hi <= target.hi {
                    inner
                } else {
                    target
                }
            }
            Select { t, f, .. } => self.expr_interval(t).union(self.expr_interval(f)),
            Call { args, .. } if e.as_intrinsic() == Some(Intrinsic::IfThenElse) && args.len() == 3 => {
                self.expr_interval(&args[1]).union(self.expr_interval(&args[2]))
            }
            Let { body, .. } => self.expr_interval(body),
            _ => range,
        };
        iv.intersect(range)
    }

    /// The bound of a canonical polynomial.
    pub(crate) fn poly_interval(&self, p: &Poly) -> Interval {
        let mut acc = Interval::point(p.c as i128);
        for (mono, k) in &p.terms {
            let mut m = Interval::point(1);
            let mut i = 0;
            while i < mono.len() {
                // Even powers of one atom are non-negative.
                let a = &mono[i];
                let mut j = i + 1;
                while j < mono.len() && expr_identical(&mono[j], a) {
                    j += 1;
                }
                let base = self.expr_interval(a);
                let mut pw = Interval::point(1);
                for _ in i..j {
                    pw = pw.mul(base);
                }
                if (j - i) % 2 == 0 {
                    pw = pw.intersect(Interval::new(0, super::bound::INF));
                }
                m = m.mul(pw);
                i = j;
            }
            acc = acc.add(m.scale(*k as i128));
        }
        acc
    }

    /// The canonical polynomial of an integer expression.
    pub(crate) fn poly(&self, e: &PrimExpr) -> Poly {
        self.poly_m(e, true)
    }

    /// The polynomial of `e`. `strong` normalizes divisions fully (constants reduced
    /// modulo the divisor, common factors cancelled: the form used for proofs); otherwise
    /// divisions are split only at divisible terms, as TVM prints them
    /// (`(w - 1) // 3 + 1`, `(iw + 3) // 2 + 1 - kw`).
    pub(crate) fn poly_m(&self, e: &PrimExpr, strong: bool) -> Poly {
        use PrimExprKind::*;
        match e.kind() {
            IntImm { value, .. } => Poly::konst(*value),
            Var(_) => Poly::atom(e.clone()),
            Binary { op, a, b } if op.is_arith() && is_signed_scalar(e.dtype()) => {
                let dt = e.dtype();
                let (pa, pb) = (self.poly_m(a, strong), self.poly_m(b, strong));
                let r = match op {
                    BinOp::Add => pa.add(&pb).map(|p| self.merge_divmod(p, strong)),
                    BinOp::Sub => pa.sub(&pb).map(|p| self.merge_divmod(p, strong)),
                    BinOp::Mul => pa.mul(&pb),
                    BinOp::FloorDiv | BinOp::FloorMod | BinOp::Div | BinOp::Mod => {
                        return self.div_poly(*op, &pa, &pb, dt, strong)
                    }
                    BinOp::Min | BinOp::Max => return self.minmax_poly(*op, &pa, &pb, dt, strong),
                    _ => None,
                };
                r.unwrap_or_else(|| Poly::atom(PrimExpr::binary(*op, pa.to_expr(dt), pb.to_expr(dt))))
            }
            _ => {
                let s = self.simplify_other(e);
                match s.kind() {
                    IntImm { value, .. } => Poly::konst(*value),
                    Binary { op, .. } if op.is_arith() && is_signed_scalar(s.dtype()) && !s.same_as(e) => {
                        self.poly_m(&s, strong)
                    }
                    _ => Poly::atom(s),
                }
            }
        }
    }

    fn atom_of(op: BinOp, p: &Poly, c: i64, dt: DataType) -> Poly {
        Poly::atom(PrimExpr::binary(op, p.to_expr(dt), PrimExpr::int_of(c, dt)))
    }

    fn div_poly(&self, op: BinOp, pa: &Poly, pb: &Poly, dt: DataType, strong: bool) -> Poly {
        let fallback = || Poly::atom(PrimExpr::binary(op, pa.to_expr(dt), pb.to_expr(dt)));
        let Some(c) = pb.as_const() else { return fallback() };
        if c == 0 {
            return fallback();
        }
        let r = match op {
            BinOp::FloorDiv => self.floordiv_const(pa, c, dt, strong),
            BinOp::FloorMod => self.floormod_const(pa, c, dt, strong),
            BinOp::Div => self.truncdiv_const(pa, c, dt, strong),
            _ => self.truncmod_const(pa, c, dt, strong),
        };
        r.unwrap_or_else(fallback)
    }

    fn floordiv_const(&self, p: &Poly, c: i64, dt: DataType, strong: bool) -> Option<Poly> {
        if c < 0 {
            return self.floordiv_const(&p.neg()?, c.checked_neg()?, dt, strong);
        }
        if c == 1 {
            return Some(p.clone());
        }
        let g = if strong { gcd(c, p.content()) } else { 1 };
        let (p, c) = if g > 1 { (p.div_exact(g), c / g) } else { (p.clone(), c) };
        if c == 1 {
            return Some(p);
        }
        // floordiv(floordiv(x, c1) + k, c) = floordiv(x + k*c1, c1*c)
        if let Some((x, c1)) = single_atom(&p, BinOp::FloorDiv) {
            if let (Some(off), Some(cc)) = (p.c.checked_mul(c1), c1.checked_mul(c)) {
                if let Some(inner) = self.poly_m(&x, strong).add(&Poly::konst(off)) {
                    return self.floordiv_const(&inner, cc, dt, strong);
                }
            }
        }
        let (q, r) = if strong { p.split(c) } else { p.split_divisible(c) };
        if let Some(v) = r.as_const() {
            return q.add(&Poly::konst(v.div_euclid(c)));
        }
        let b = self.poly_interval(&r);
        if !b.lo_inf() && !b.hi_inf() && b.lo.div_euclid(c as i128) == b.hi.div_euclid(c as i128) {
            return q.add(&Poly::konst(b.lo.div_euclid(c as i128) as i64));
        }
        q.add(&Self::atom_of(BinOp::FloorDiv, &r, c, dt))
    }

    fn floormod_const(&self, p: &Poly, c: i64, dt: DataType, strong: bool) -> Option<Poly> {
        if c < 0 {
            return self.floormod_const(&p.neg()?, c.checked_neg()?, dt, strong)?.neg();
        }
        if c == 1 {
            return Some(Poly::konst(0));
        }
        let g = if strong { gcd(c, p.content()) } else { 1 };
        if g > 1 {
            return self.floormod_const(&p.div_exact(g), c / g, dt, strong)?.scale(g);
        }
        // floormod(floormod(x, c1), c) = floormod(x, c) when c divides c1
        if let Some((x, c1)) = single_atom(p, BinOp::FloorMod) {
            if p.c == 0 && c1 % c == 0 {
                return self.floormod_const(&self.poly_m(&x, strong), c, dt, strong);
            }
        }
        let (_, r) = if strong { p.split(c) } else { p.split_divisible(c) };
        if let Some(v) = r.as_const() {
            return Some(Poly::konst(v.rem_euclid(c)));
        }
        let b = self.poly_interval(&r);
        if !b.lo_inf() && !b.hi_inf() && b.lo.div_euclid(c as i128) == b.hi.div_euclid(c as i128) {
            let k = b.lo.div_euclid(c as i128) as i64;
            return r.sub(&Poly::konst(k.checked_mul(c)?));
        }
        Some(Self::atom_of(BinOp::FloorMod, &r, c, dt))
    }

    fn truncdiv_const(&self, p: &Poly, c: i64, dt: DataType, strong: bool) -> Option<Poly> {
        if c < 0 {
            return self.truncdiv_const(p, c.checked_neg()?, dt, strong)?.neg();
        }
        if c == 1 {
            return Some(p.clone());
        }
        if p.content() % c == 0 {
            return Some(p.div_exact(c));
        }
        self.trunc_by_floor(BinOp::Div, p, c, dt, strong, Self::floordiv_const)
    }

    fn truncmod_const(&self, p: &Poly, c: i64, dt: DataType, strong: bool) -> Option<Poly> {
        let c = c.checked_abs()?;
        if c == 1 || p.content() % c == 0 {
            return Some(Poly::konst(0));
        }
        self.trunc_by_floor(BinOp::Mod, p, c, dt, strong, Self::floormod_const)
    }

    /// The truncating `op` (`Div` or `Mod`) of `p` by `c > 0` through its floor
    /// counterpart `floor`: the same when `p >= 0`, `-floor(-p)` when `p <= 0`, an
    /// opaque atom when the sign of `p` is unknown.
    fn trunc_by_floor(
        &self,
        op: BinOp,
        p: &Poly,
        c: i64,
        dt: DataType,
        strong: bool,
        floor: fn(&Self, &Poly, i64, DataType, bool) -> Option<Poly>,
    ) -> Option<Poly> {
        let b = self.poly_interval(p);
        if b.lo >= 0 {
            return floor(self, p, c, dt, strong);
        }
        if b.hi <= 0 {
            return floor(self, &p.neg()?, c, dt, strong)?.neg();
        }
        Some(Self::atom_of(op, p, c, dt))
    }

    fn minmax_poly(&self, op: BinOp, pa: &Poly, pb: &Poly, dt: DataType, strong: bool) -> Poly {
        if let Some(d) = pa.sub(pb) {
            let b = self.poly_interval(&d);
            let a_le_b = b.hi <= 0;
            let a_ge_b = b.lo >= 0;
            match op {
                BinOp::Min if a_le_b => return pa.clone(),
                BinOp::Min if a_ge_b => return pb.clone(),
                BinOp::Max if a_le_b => return pb.clone(),
                BinOp::Max if a_ge_b => return pa.clone(),
                _ => {}
            }
        }
        // max(x, min(x, y)) = x, min(x, max(x, y)) = x
        let inverse = if op == BinOp::Min { BinOp::Max } else { BinOp::Min };
        for (x, other) in [(pa, pb), (pb, pa)] {
            if other.c == 0 && other.terms.len() == 1 && other.terms[0].1 == 1 && other.terms[0].0.len() == 1 {
                if let PrimExprKind::Binary { op: o, a, b } = other.terms[0].0[0].kind() {
                    let xe = x.to_expr(dt);
                    if *o == inverse && (expr_identical(a, &xe) || expr_identical(b, &xe)) {
                        return x.clone();
                    }
                }
            }
        }
        // min(x + c, y + c) = min(x, y) + c
        if pa.c == pb.c && pa.c != 0 {
            let (mut xa, mut xb) = (pa.clone(), pb.clone());
            xa.c = 0;
            xb.c = 0;
            if let Some(r) = self.minmax_poly(op, &xa, &xb, dt, strong).add(&Poly::konst(pa.c)) {
                return r;
            }
        }
        let (mut x, mut y) = (pa.to_expr(dt), pb.to_expr(dt));
        // Proofs sort the operands; printed forms keep them as written (as TVM does).
        if strong && cmp_expr(&x, &y) == std::cmp::Ordering::Greater {
            std::mem::swap(&mut x, &mut y);
        }
        Poly::atom(PrimExpr::binary(op, x, y))
    }

    /// Replace `k*c*floordiv(x, c) + k*floormod(x, c)` by `k*x`.
    fn merge_divmod(&self, mut p: Poly, strong: bool) -> Poly {
        if p.terms.len() < 2 {
            return p;
        }
        'outer: loop {
            for i in 0..p.terms.len() {
                let (m, k) = &p.terms[i];
                if m.len() != 1 {
                    continue;
                }
                let PrimExprKind::Binary {
                    op: BinOp::FloorMod,
                    a: x,
                    b: cm,
                } = m[0].kind()
                else {
                    continue;
                };
                let Some(c) = cm.as_int() else { continue };
                let Some(want) = k.checked_mul(c) else { continue };
                let found = p.terms.iter().position(|(m2, k2)| {
                    *k2 == want
                        && m2.len() == 1
                        && matches!(m2[0].kind(), PrimExprKind::Binary { op: BinOp::FloorDiv, a: x2, b: c2 }
                            if c2.as_int() == Some(c) && expr_identical(x, x2))
                });
                let Some(j) = found else { continue };
                let k = *k;
                let px = self.poly_m(x, strong);
                let Some(add) = px.scale(k) else { continue };
                let mut rest = p.clone();
                let (hi, lo) = if i > j { (i, j) } else { (j, i) };
                rest.terms.remove(hi);
                rest.terms.remove(lo);
                match rest.add(&add) {
                    Some(np) => {
                        p = np;
                        continue 'outer;
                    }
                    None => continue,
                }
            }
            return p;
        }
    }

    /// Decide `d op 0` for a difference polynomial `d`.
    pub(crate) fn decide_cmp(&self, op: BinOp, d: &Poly) -> Option<bool> {
        if d.is_zero() {
            return Some(matches!(op, BinOp::Eq | BinOp::Le | BinOp::Ge));
        }
        let mut iv = self.poly_interval(d);
        let first = decide_with(op, d, iv);
        if first.is_some() {
            return first;
        }
        // Retry with `k*c*floordiv(x, c)` written as `k*(x - floormod(x, c))`, which
        // proves facts such as `floordiv(x, 4)*4 <= x` and `floordiv(x + 3, 4)*4 >= x`.
        if let Some(expanded) = self.expand_floordiv(d) {
            if expanded.is_zero() {
                return Some(matches!(op, BinOp::Eq | BinOp::Le | BinOp::Ge));
            }
            iv = iv.intersect(self.poly_interval(&expanded));
            if let Some(r) = decide_with(op, &expanded, iv) {
                return Some(r);
            }
        }
        // Retry with min/max terms replaced by one of their operands where that gives
        // a valid bound (`max(a, b) >= a`, `min(a, b) <= a`).
        iv = iv.intersect(self.minmax_interval(d));
        decide_with(op, d, iv)
    }

    /// A bound of `d` from replacing (at most three) `min`/`max` terms by one of their
    /// operands: a lower bound replaces `k*max` (k > 0) and `k*min` (k < 0), an upper
    /// bound `k*min` (k > 0) and `k*max` (k < 0).
    fn minmax_interval(&self, d: &Poly) -> Interval {
        let idx: Vec<(usize, PrimExpr, PrimExpr, bool)> = d
            .terms
            .iter()
            .enumerate()
            .filter_map(|(i, (m, _))| match (m.len(), m[0].kind()) {
                (
                    1,
                    PrimExprKind::Binary {
                        op: op @ (BinOp::Min | BinOp::Max),
                        a,
                        b,
                    },
                ) => Some((i, a.clone(), b.clone(), *op == BinOp::Max)),
                _ => None,
            })
            .take(3)
            .collect();
        if idx.is_empty() {
            return Interval::EVERYTHING;
        }
        let ops: Vec<(Poly, Poly)> = idx.iter().map(|(_, a, b, _)| (self.poly(a), self.poly(b))).collect();
        let mut lo = -super::bound::INF;
        let mut hi = super::bound::INF;
        for lower in [true, false] {
            // Each eligible term: keep (0), first operand (1), second operand (2).
            let n = idx.len() as u32;
            for combo in 1..3usize.pow(n) {
                let mut rest = Poly {
                    c: d.c,
                    terms: Vec::new(),
                };
                let mut ok = true;
                let mut code = combo;
                let mut choice = vec![0usize; idx.len()];
                for (j, ch) in choice.iter_mut().enumerate() {
                    *ch = code % 3;
                    code /= 3;
                    let (i, _, _, is_max) = idx[j];
                    let k = d.terms[i].1;
                    let eligible = if lower { (k > 0) == is_max } else { (k > 0) != is_max };
                    if *ch != 0 && !eligible {
                        ok = false;
                    }
                }
                if !ok {
                    continue;
                }
                let mut acc = Some(Poly::konst(0));
                for (i, t) in d.terms.iter().enumerate() {
                    match idx.iter().position(|x| x.0 == i) {
                        Some(j) if choice[j] != 0 => {
                            let operand = if choice[j] == 1 { &ops[j].0 } else { &ops[j].1 };
                            acc = acc.and_then(|a| a.add(&operand.scale(t.1)?));
                        }
                        _ => rest.terms.push(t.clone()),
                    }
                }
                let Some(cand) = acc.and_then(|a| a.add(&rest)) else {
                    continue;
                };
                let b = self.poly_interval(&cand);
                if lower {
                    lo = lo.max(b.lo);
                } else {
                    hi = hi.min(b.hi);
                }
            }
        }
        Interval { lo, hi }
    }

    fn expand_floordiv(&self, d: &Poly) -> Option<Poly> {
        let mut out = Poly::konst(d.c);
        let mut changed = false;
        for (m, k) in &d.terms {
            let term = Poly {
                c: 0,
                terms: vec![(m.clone(), *k)],
            };
            if m.len() == 1 {
                if let PrimExprKind::Binary {
                    op: BinOp::FloorDiv,
                    a: x,
                    b: cb,
                } = m[0].kind()
                {
                    if let Some(c) = cb.as_int().filter(|&c| c > 0 && k % c == 0) {
                        let fm = Poly::atom(PrimExpr::binary(BinOp::FloorMod, x.clone(), cb.clone()));
                        let repl = self.poly(x).sub(&fm)?.scale(k / c)?;
                        out = out.add(&repl)?;
                        changed = true;
                        continue;
                    }
                }
            }
            out = out.add(&term)?;
        }
        changed.then_some(out)
    }

    pub(crate) fn decide_cmp_exprs(&self, op: BinOp, a: &PrimExpr, b: &PrimExpr) -> Option<bool> {
        if is_integer(a) && is_integer(b) {
            let d = self.poly(a).sub(&self.poly(b))?;
            if let Some(r) = self.decide_cmp(op, &d) {
                return Some(r);
            }
            // The bounds of the expressions as written can be tighter than those of the
            // canonical form (`floordiv(0 - 3*x, 2)` splits into `floordiv(x, 2) - 2*x`).
            let raw = self.expr_interval(a).sub(self.expr_interval(b));
            return decide_with(op, &d, raw.intersect(self.poly_interval(&d)));
        }
        // Not integers: compare the simplified operands when both are float constants
        // (simplifying the comparison itself would come back here).
        let (sa, sb) = (self.simplify_expr(a), self.simplify_expr(b));
        match (sa.kind(), sb.kind()) {
            (PrimExprKind::FloatImm { value: x, .. }, PrimExprKind::FloatImm { value: y, .. }) => {
                op.compare_floats(*x, *y)
            }
            _ => None,
        }
    }

    /// Decide a boolean condition.
    pub(crate) fn decide(&self, e: &PrimExpr) -> Option<bool> {
        match e.kind() {
            PrimExprKind::IntImm { value, .. } => Some(*value != 0),
            PrimExprKind::Binary { op, a, b } if op.is_comparison() => self.decide_cmp_exprs(*op, a, b),
            PrimExprKind::Binary { op: BinOp::And, a, b } => match (self.decide(a), self.decide(b)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            PrimExprKind::Binary { op: BinOp::Or, a, b } => match (self.decide(a), self.decide(b)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            PrimExprKind::Not(a) => self.decide(a).map(|v| !v),
            _ => self.simplify(e).as_int().map(|v| v != 0),
        }
    }

    /// Simplify any expression.
    pub(crate) fn simplify_expr(&self, e: &PrimExpr) -> PrimExpr {
        use PrimExprKind::*;
        match e.kind() {
            IntImm { .. } | FloatImm { .. } | StringImm(_) | Var(_) => e.clone(),
            Binary { op, .. } if op.is_arith() && is_signed_scalar(e.dtype()) => {
                let dt = e.dtype();
                let mut p = self.poly_m(e, false);
                // Terms that only cancel in the fully normalized form (`min(m, n) - min(n, m)`,
                // `(n - 1)//4 - (n + 3)//4`): use it when it is a constant.
                if p.terms.len() >= 2 && p.terms.iter().any(|(m, _)| m.iter().any(|a| a.as_var().is_none())) {
                    let strong = self.poly_m(e, true);
                    if strong.as_const().is_some() {
                        p = strong;
                    }
                }
                if let Some(r) = self.rewrite_sub_minmax(&p, dt) {
                    return r;
                }
                if p.fits(dt) {
                    if p.terms.len() < 2 && p.terms.iter().all(|t| t.0.len() < 2) {
                        return p.to_expr(dt);
                    }
                    // Keep the order in which variables appear in the input (as TVM does).
                    let mut seen = Vec::new();
                    var_order(e, &mut seen);
                    let rank = |a: &PrimExpr| {
                        let mut first = Vec::new();
                        first_var(a, &mut first);
                        first
                            .first()
                            .and_then(|id| seen.iter().position(|x| x == id))
                            .unwrap_or(usize::MAX)
                    };
                    p.to_expr_ranked(dt, &rank)
                } else {
                    map_prim_children(e, &mut |c| self.simplify_expr(c))
                }
            }
            _ => self.simplify_other(e),
        }
    }

    /// Simplify an expression that is not an integer sum/product: comparisons,
    /// logic, casts, selects, floating-point and unsigned arithmetic, calls.
    pub(crate) fn simplify_other(&self, e: &PrimExpr) -> PrimExpr {
        use PrimExprKind::*;
        match e.kind() {
            IntImm { .. } | FloatImm { .. } | StringImm(_) | Var(_) => e.clone(),
            Binary { op, a, b } if op.is_comparison() => {
                if let Some(v) = self.decide_cmp_exprs(*op, a, b) {
                    return PrimExpr::int_of(v as i64, e.dtype());
                }
                let (sa, sb) = (self.simplify_expr(a), self.simplify_expr(b));
                if let (Some(x), Some(y)) = (sa.as_float(), sb.as_float()) {
                    if let Some(v) = op.compare_floats(x, y) {
                        return PrimExpr::int_of(v as i64, e.dtype());
                    }
                }
                rebuild2(e, *op, sa, sb, a, b)
            }
            Binary {
                op: op @ (BinOp::And | BinOp::Or),
                a,
                b,
            } => {
                let (sa, sb) = (self.simplify_expr(a), self.simplify_expr(b));
                let is_and = *op == BinOp::And;
                for (x, y) in [(&sa, &sb), (&sb, &sa)] {
                    if let Some(v) = x.as_int() {
                        return if (v != 0) == is_and {
                            y.clone()
                        } else {
                            PrimExpr::int_of(v, e.dtype())
                        };
                    }
                }
                if expr_identical(&sa, &sb) {
                    return sa;
                }
                rebuild2(e, *op, sa, sb, a, b)
            }
            Not(a) => {
                let sa = self.simplify_expr(a);
                if let Some(v) = sa.as_int() {
                    return PrimExpr::int_of((v == 0) as i64, e.dtype());
                }
                match sa.kind() {
                    Not(inner) => inner.clone(),
                    Binary { op, a: x, b: y } if op.is_comparison() => {
                        let flipped = match op {
                            BinOp::Eq => BinOp::Ne,
                            BinOp::Ne => BinOp::Eq,
                            BinOp::Lt => BinOp::Ge,
                            BinOp::Le => BinOp::Gt,
                            BinOp::Gt => BinOp::Le,
                            _ => BinOp::Lt,
                        };
                        // Only integers: `not (x < y)` differs from `x >= y` for NaN.
                        if x.dtype().is_integer() {
                            PrimExpr::binary(flipped, x.clone(), y.clone())
                        } else if sa.same_as(a) {
                            e.clone()
                        } else {
                            PrimExpr::new(Not(sa))
                        }
                    }
                    _ if sa.same_as(a) => e.clone(),
                    _ => PrimExpr::new(Not(sa)),
                }
            }
            Binary { op, a, b } => {
                let (sa, sb) = (self.simplify_expr(a), self.simplify_expr(b));
                if let Some(v) = fold_binary(*op, &sa, &sb, e.dtype()) {
                    return v;
                }
                rebuild2(e, *op, sa, sb, a, b)
            }
            Select { cond, t, f } => self.simplify_select(e, cond, t, f),
            Call { args, .. } if e.as_intrinsic() == Some(Intrinsic::IfThenElse) && args.len() == 3 => {
                self.simplify_select(e, &args[0], &args[1], &args[2])
            }
            Cast { dtype, value } => {
                let sv = self.simplify_expr(value);
                if sv.dtype() == *dtype {
                    return sv;
                }
                if let Some(c) = fold_cast(&sv, *dtype) {
                    return c;
                }
                if sv.same_as(value) {
                    e.clone()
                } else {
                    PrimExpr::new(Cast {
                        dtype: *dtype,
                        value: sv,
                    })
                }
            }
            _ => map_prim_children(e, &mut |c| self.simplify_expr(c)),
        }
    }

    /// TVM's rewrites `x - min(x, y)` → `max(x - y, 0)`, `x - max(x, y)` →
    /// `min(x - y, 0)`, `min(x, y) - x` → `min(y - x, 0)`, `max(x, y) - x` →
    /// `max(y - x, 0)` on a polynomial that is exactly of that shape.
    fn rewrite_sub_minmax(&self, p: &Poly, dt: DataType) -> Option<PrimExpr> {
        for (i, (m, k)) in p.terms.iter().enumerate() {
            if m.len() != 1 || k.abs() != 1 {
                continue;
            }
            let PrimExprKind::Binary {
                op: op @ (BinOp::Min | BinOp::Max),
                a,
                b,
            } = m[0].kind()
            else {
                continue;
            };
            let mut rest = p.clone();
            rest.terms.remove(i);
            // k = -1: rest - op(a, b); k = +1: op(a, b) - x with rest = -x.
            let x = if *k == -1 { rest } else { rest.neg()? };
            if x.is_zero() {
                continue;
            }
            let (pa, pb) = (self.poly_m(a, false), self.poly_m(b, false));
            let other = if poly_eq(&x, &pa) {
                pb
            } else if poly_eq(&x, &pb) {
                pa
            } else {
                continue;
            };
            let (diff, out_op) = match (*k, *op) {
                (-1, BinOp::Min) => (x.sub(&other)?, BinOp::Max),
                (-1, _) => (x.sub(&other)?, BinOp::Min),
                (_, BinOp::Min) => (other.sub(&x)?, BinOp::Min),
                _ => (other.sub(&x)?, BinOp::Max),
            };
            let e = PrimExpr::binary(out_op, diff.to_expr(dt), PrimExpr::int_of(0, dt));
            return Some(self.simplify_expr(&e));
        }
        None
    }

    fn simplify_select(&self, e: &PrimExpr, cond: &PrimExpr, t: &PrimExpr, f: &PrimExpr) -> PrimExpr {
        match self.decide(cond) {
            Some(true) => return self.simplify_expr(t),
            Some(false) => return self.simplify_expr(f),
            None => {}
        }
        let (st, sf) = (self.simplify_expr(t), self.simplify_expr(f));
        if expr_identical(&st, &sf) {
            return st;
        }
        let sc = self.simplify_expr(cond);
        match e.kind() {
            PrimExprKind::Select { .. } => {
                if sc.same_as(cond) && st.same_as(t) && sf.same_as(f) {
                    e.clone()
                } else {
                    PrimExpr::select(sc, st, sf)
                }
            }
            PrimExprKind::Call { op, dtype, .. } => PrimExpr::call(op.clone(), *dtype, vec![sc, st, sf]),
            _ => e.clone(),
        }
    }
}

fn poly_eq(a: &Poly, b: &Poly) -> bool {
    a.c == b.c
        && a.terms.len() == b.terms.len()
        && a.terms
            .iter()
            .zip(&b.terms)
            .all(|(x, y)| x.1 == y.1 && super::canonical::cmp_mono(&x.0, &y.0).is_eq())
}

/// Decide `d op 0` given a bound `b` of `d`.
fn decide_with(op: BinOp, d: &Poly, b: Interval) -> Option<bool> {
    let never_zero = || {
        if b.lo > 0 || b.hi < 0 {
            return true;
        }
        let g = d.term_content();
        g > 1 && d.c % g != 0
    };
    match op {
        BinOp::Lt if b.hi < 0 => Some(true),
        BinOp::Lt if b.lo >= 0 => Some(false),
        BinOp::Le if b.hi <= 0 => Some(true),
        BinOp::Le if b.lo > 0 => Some(false),
        BinOp::Gt if b.lo > 0 => Some(true),
        BinOp::Gt if b.hi <= 0 => Some(false),
        BinOp::Ge if b.lo >= 0 => Some(true),
        BinOp::Ge if b.hi < 0 => Some(false),
        BinOp::Eq if never_zero() => Some(false),
        BinOp::Ne if never_zero() => Some(true),
        _ => None,
    }
}

/// `(x, c)` when `p` is exactly `op(x, c)` plus a constant, `c > 0` a constant.
fn single_atom(p: &Poly, op: BinOp) -> Option<(PrimExpr, i64)> {
    if p.terms.len() != 1 || p.terms[0].1 != 1 || p.terms[0].0.len() != 1 {
        return None;
    }
    match p.terms[0].0[0].kind() {
        PrimExprKind::Binary { op: o, a, b } if *o == op => b.as_int().filter(|&c| c > 0).map(|c| (a.clone(), c)),
        _ => None,
    }
}

/// Variable identities in order of first appearance (pre-order, left to right).
fn var_order(e: &PrimExpr, out: &mut Vec<u64>) {
    if let PrimExprKind::Var(v) = e.kind() {
        if !out.contains(&v.id()) {
            out.push(v.id());
        }
        return;
    }
    crate::visit::for_each_prim_child(e, &mut |c| var_order(c, out));
}

/// The first variable of `e` (pre-order), pushed onto `out`.
fn first_var(e: &PrimExpr, out: &mut Vec<u64>) {
    if !out.is_empty() {
        return;
    }
    if let PrimExprKind::Var(v) = e.kind() {
        out.push(v.id());
        return;
    }
    crate::visit::for_each_prim_child(e, &mut |c| first_var(c, out));
}

fn rebuild2(e: &PrimExpr, op: BinOp, sa: PrimExpr, sb: PrimExpr, a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    if sa.same_as(a) && sb.same_as(b) {
        e.clone()
    } else {
        PrimExpr::binary(op, sa, sb)
    }
}

/// Constant-fold a binary arithmetic operation on constants (integers of any width,
/// floats). Division by zero is not folded.
fn fold_binary(op: BinOp, a: &PrimExpr, b: &PrimExpr, dt: DataType) -> Option<PrimExpr> {
    use PrimExprKind::*;
    match (a.kind(), b.kind()) {
        (IntImm { value: x, .. }, IntImm { value: y, .. }) if dt.is_integer() && dt.lanes == 1 => {
            let (x, y) = (*x as i128, *y as i128);
            let v = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x.checked_mul(y)?,
                BinOp::Div if y != 0 => x / y,
                BinOp::Mod if y != 0 => x % y,
                BinOp::FloorDiv if y != 0 => floor_div_i128(x, y),
                BinOp::FloorMod if y != 0 => x - y * floor_div_i128(x, y),
                BinOp::Min => x.min(y),
                BinOp::Max => x.max(y),
                _ => return None,
            };
            Some(PrimExpr::int_of(wrap_to(v, dt), dt))
        }
        (FloatImm { value: x, .. }, FloatImm { value: y, .. }) if dt.is_float() && dt.lanes == 1 => {
            let v = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Div => x / y,
                BinOp::Min => x.min(*y),
                BinOp::Max => x.max(*y),
                _ => return None,
            };
            let v = if dt.bits == 32 { v as f32 as f64 } else { v };
            Some(PrimExpr::float_of(v, dt))
        }
        _ => None,
    }
}

pub(crate) fn floor_div_i128(x: i128, y: i128) -> i128 {
    let q = x / y;
    if (x % y != 0) && ((x < 0) != (y < 0)) {
        q - 1
    } else {
        q
    }
}

fn fold_cast(v: &PrimExpr, dt: DataType) -> Option<PrimExpr> {
    use PrimExprKind::*;
    if dt.lanes != 1 {
        return None;
    }
    match (v.kind(), dt.code) {
        (IntImm { value, .. }, TypeCode::Int | TypeCode::UInt) => {
            Some(PrimExpr::int_of(wrap_to(*value as i128, dt), dt))
        }
        (IntImm { value, dtype }, TypeCode::Float) => {
            let f = if dtype.is_uint() && dtype.bits == 64 {
                *value as u64 as f64
            } else {
                *value as f64
            };
            let f = if dt.bits == 32 { f as f32 as f64 } else { f };
            Some(PrimExpr::float_of(f, dt))
        }
        (FloatImm { value, .. }, TypeCode::Float) => {
            let f = if dt.bits == 32 { *value as f32 as f64 } else { *value };
            Some(PrimExpr::float_of(f, dt))
        }
        (FloatImm { value, .. }, TypeCode::Int | TypeCode::UInt) if value.is_finite() => {
            if dt.is_bool() {
                return Some(PrimExpr::int_of((*value != 0.0) as i64, dt));
            }
            let t = value.trunc();
            let r = Interval::of_dtype(dt);
            if t < r.lo as f64 || t > r.hi as f64 {
                return None;
            }
            Some(PrimExpr::int_of(t as i64, dt))
        }
        _ => None,
    }
}
