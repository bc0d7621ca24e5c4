//! GELU's tanh form as `torch.export` and ONNX exports spell it, one operator per
//! step (GPT-2's `NewGELUActivation`):
//!
//! ```text
//! h = x * half            p = x ** e          a = p * c1     b = x + a
//! c = b * c2              t = tanh(c)         d = t + one    y = h * d
//! ```
//!
//! with one-element scalars (constants, or weights read at run time as ONNX keeps
//! them), every intermediate used once: `relax_host.gelu_tanh_chain(x, half, e, c1,
//! c2, one)`, which rounds each step as the separate kernels do.

use super::*;

impl BlockRewrite<'_> {
    /// The chain around the `tanh` bound to `t` at binding `i`, as one kernel call.
    pub(super) fn gelu_tanh_chain(&mut self, i: usize, t: &Var, call: &Call) -> Option<()> {
        let shape = self.var_tensor(t)?.shape;
        // c = b * c2
        let (ic, c) = self.bound(call.args.first()?, 1, "relax.multiply")?;
        let (b, c2) = self.tensor_and_scalar(c, &shape)?;
        // b = x + a, a = p * c1, p = x ** e
        let (ib, b) = self.bound(&b, 1, "relax.add")?;
        let [l, r] = b.args.as_slice() else { return None };
        let (x, ia, a) = [(l, r), (r, l)]
            .into_iter()
            .find_map(|(x, a)| self.bound(a, 1, "relax.multiply").map(|(ia, a)| (x.clone(), ia, a)))?;
        let (p, c1) = self.tensor_and_scalar(a, &shape)?;
        let (ip, p) = self.bound(&p, 1, "relax.power")?;
        let [px, e] = p.args.as_slice() else { return None };
        let e = self.scalar(e)?;
        let xv = x.as_var()?;
        if !is_var(px, xv) || self.arg_tensor(&x)?.shape != shape {
            return None;
        }
        // d = t + one, y = h * d, h = x * half
        let (jd, d, dc) = self.sole_call_user(t, i, "relax.add")?;
        let one = self.scalar(&other_operand(dc, t)?)?;
        let d = d.clone();
        let (jy, y, yc) = self.sole_call_user(&d, jd, "relax.multiply")?;
        let (y, h) = (y.clone(), other_operand(yc, &d)?);
        let (ih, hc) = self.bound(&h, 1, "relax.multiply")?;
        let (hx, half) = self.tensor_and_scalar(hc, &shape)?;
        if !is_var(&hx, xv) || self.var_tensor(&y)?.shape != shape {
            return None;
        }
        let value = dps(HostKernel::GeluTanhChain, vec![x, half, e, c1, c2, one], &y)?;
        for at in [ic, ib, ia, ip, ih, i, jd] {
            self.remove(at);
        }
        self.set(jy, &y, value);
        Some(())
    }

    /// The operands of the binary call `c` as (a tensor of `shape`, a one-element
    /// host scalar), in either order.
    fn tensor_and_scalar(&self, c: &Call, shape: &[i64]) -> Option<(Expr, Expr)> {
        let [l, r] = c.args.as_slice() else { return None };
        [(l, r), (r, l)].into_iter().find_map(|(t, s)| {
            let full = self.arg_tensor(t)?.shape == shape;
            (full && self.scalar(s).is_some()).then(|| (t.clone(), s.clone()))
        })
    }

    /// `e` when it is a one-element `float32` host tensor.
    pub(super) fn scalar(&self, e: &Expr) -> Option<Expr> {
        self.arg_tensor(e)?.shape.iter().all(|&d| d == 1).then(|| e.clone())
    }
}
