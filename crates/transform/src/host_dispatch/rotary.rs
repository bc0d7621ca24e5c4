//! `rotate_half` of rotary position embeddings as the front ends spell it
//! (Hugging Face's `torch.cat((-x[..., h:], x[..., :h]), dim=-1)`):
//!
//! ```text
//! s1 = strided_slice(x, [-1], [h], [end >= 2h])    n = negative(s1)
//! s0 = strided_slice(x, [-1], [0], [h])            r = concat((n, s0), axis=-1)
//! ```
//!
//! every intermediate used once: `relax_host.rotate_half(x)`; and when the whole
//! embedding follows, `a = x * cos`, `b = r * sin`, `y = a + b` (`cos` and `sin`
//! of shape `[1, .., 1, seq, 2h]`, each product used once):
//! `relax_host.rotary_chain(x, cos, sin)`.

use super::*;

impl BlockRewrite<'_> {
    /// The chain ending in the `concat` bound to `r` at binding `i`, as one call.
    pub(super) fn rotate_half(&mut self, i: usize, r: &Var, call: &Call) -> Option<()> {
        let ExprKind::Tuple(parts) = call.args.first()?.kind() else {
            return None;
        };
        let [neg, s0] = parts.as_slice() else { return None };
        let shape = self.var_tensor(r)?.shape;
        let nd = shape.len() as i64;
        let cols = *shape.last()?;
        let axis = call.attrs.get_int("axis").unwrap_or(0);
        if nd == 0 || (axis != -1 && axis != nd - 1) || cols % 2 != 0 {
            return None;
        }
        let h = cols / 2;
        let (ineg, n) = self.bound(neg, 1, "relax.negative")?;
        let (i1, s1) = self.bound(n.args.first()?, 1, "relax.strided_slice")?;
        let (i0, s0) = self.bound(s0, 1, "relax.strided_slice")?;
        let x = s1.args.first()?.clone();
        let xv = x.as_var()?;
        // A slice of the last axis from `begin` with stride 1: its end bound.
        let slice_end = |s: &Call, begin: i64| -> Option<i64> {
            let field = |k: usize| s.args.get(k).and_then(int_tuple);
            let axes_ok = field(1).is_some_and(|a| a == [-1] || a == [nd - 1]);
            let strides_ok = s.args.len() == 4 || field(4).is_some_and(|st| st == [1]);
            match field(3)?.as_slice() {
                &[end] if axes_ok && strides_ok && field(2)? == [begin] => Some(end),
                _ => None,
            }
        };
        // `s1` runs to the end of the axis (any bound past it), `s0` stops at `h`.
        if !is_var(s0.args.first()?, xv)
            || self.arg_tensor(&x)?.shape != shape
            || slice_end(s1, h)? < cols
            || slice_end(s0, 0)? != h
        {
            return None;
        }
        for at in [ineg, i1, i0] {
            self.remove(at);
        }
        if let Some((j, y, value)) = self.rotary_rest(i, r, &x, &shape) {
            self.remove(i);
            self.set(j, &y, value);
            return Some(());
        }
        let value = dps(HostKernel::RotateHalf, vec![x], r)?;
        self.set(i, r, value);
        Some(())
    }

    /// `(j, y, call)` when `r = rotate_half(x)` (bound at `i`) is used once, by
    /// `b = r * sin`, and `y = x * cos + b` (bound at `j`) follows: the call of
    /// `rotary_chain`; the products' bindings are removed.
    fn rotary_rest(&mut self, i: usize, r: &Var, x: &Expr, shape: &[i64]) -> Option<(usize, Var, Expr)> {
        let (jb, b, bc) = self.sole_call_user(r, i, "relax.multiply")?;
        let sin = other_operand(bc, r)?;
        let b = b.clone();
        let (jy, y, yc) = self.sole_call_user(&b, jb, "relax.add")?;
        let y = y.clone();
        let (ia, ac) = self.bound(&other_operand(yc, &b)?, 1, "relax.multiply")?;
        let [p, q] = ac.args.as_slice() else { return None };
        let xv = x.as_var()?;
        let cos = match (is_var(p, xv), is_var(q, xv)) {
            (true, false) => q.clone(),
            (false, true) => p.clone(),
            _ => return None,
        };
        // cos and sin: `[1, .., 1, seq, cols]` against x's `[.., seq, cols]`.
        let n = shape.len();
        let trig = |e: &Expr| -> Option<()> {
            let t = self.arg_tensor(e)?.shape;
            let ok = n >= 2
                && t.len() <= n
                && t.len() >= 2
                && t[t.len() - 2..] == shape[n - 2..]
                && t[..t.len() - 2].iter().all(|&d| d == 1);
            ok.then_some(())
        };
        trig(&cos)?;
        trig(&sin)?;
        if self.var_tensor(&y)?.shape != shape || self.var_tensor(&b)?.shape != shape {
            return None;
        }
        let value = dps(HostKernel::RotaryChain, vec![x.clone(), cos, sin], &y)?;
        self.remove(ia);
        self.remove(jb);
        Some((jy, y, value))
    }
}

/// The integers of a tuple of `R.prim_value` integers.
fn int_tuple(e: &Expr) -> Option<Vec<i64>> {
    let ExprKind::Tuple(fields) = e.kind() else { return None };
    fields
        .iter()
        .map(|f| match f.kind() {
            ExprKind::PrimValue(p) => p.as_int(),
            _ => None,
        })
        .collect()
}
