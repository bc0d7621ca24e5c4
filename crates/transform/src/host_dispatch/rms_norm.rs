//! RMS normalization as `torch.export` and ONNX exports spell it (Llama, Mistral,
//! Qwen2, Gemma's `RMSNorm`), one operator per step over the last axis:
//!
//! ```text
//! p = x ** e     m = mean(p, axis=-1, keepdims)     a = m + eps
//! i = rsqrt(a)   (or  r = sqrt(a), i = 1 / r)       y = x * i     out = w * y
//! ```
//!
//! with one-element `e` and `eps` (constants, or weights read at run time as ONNX
//! keeps them), `w` of the last axis's length, every intermediate used once:
//! `relax_host.rms_norm_chain[_rsqrt](x, w, e, eps)`, which rounds each step as the
//! separate kernels do.

use super::*;

impl BlockRewrite<'_> {
    /// The chain around the `mean` bound to `m` at binding `i`, as one kernel call.
    pub(super) fn rms_norm_chain(&mut self, i: usize, m: &Var, call: &Call) -> Option<()> {
        let keep = call.attrs.get("keepdims").and_then(AttrValue::as_bool) == Some(true);
        let axes = call.attrs.get("axis")?.as_int_list()?;
        let (ip, p) = self.bound(call.args.first()?, 1, "relax.power")?;
        let [x, e] = p.args.as_slice() else { return None };
        let e = self.scalar(e)?;
        let xv = x.as_var()?;
        let shape = self.arg_tensor(x)?.shape;
        let nd = shape.len() as i64;
        let cols = *shape.last()?;
        if !keep || nd == 0 || !(axes == [-1] || axes == [nd - 1]) {
            return None;
        }
        // a = m + eps
        let (ja, a, ac) = self.sole_call_user(m, i, "relax.add")?;
        let eps = self.scalar(&other_operand(ac, m)?)?;
        let a = a.clone();
        // i = rsqrt(a), or r = sqrt(a) and i = 1 / r
        let (inv, inv_at, rsqrt, mut gone) = match self.sole_call_user(&a, ja, "relax.rsqrt") {
            Some((j, v, _)) => (v.clone(), j, true, vec![]),
            None => {
                let (jr, r, _) = self.sole_call_user(&a, ja, "relax.sqrt")?;
                let r = r.clone();
                let (jd, d, dc) = self.sole_call_user(&r, jr, "relax.divide")?;
                let [one, den] = dc.args.as_slice() else { return None };
                if !is_var(den, &r) || crate::safe_softmax::scalar_float(one) != Some(1.0) {
                    return None;
                }
                (d.clone(), jd, false, vec![jr])
            }
        };
        // y = x * i, out = w * y
        let (jy, y, yc) = self.sole_call_user(&inv, inv_at, "relax.multiply")?;
        if !is_var(&other_operand(yc, &inv)?, xv) {
            return None;
        }
        let y = y.clone();
        let (jo, out, oc) = self.sole_call_user(&y, jy, "relax.multiply")?;
        let w = other_operand(oc, &y)?;
        let out = out.clone();
        let wt = self.arg_tensor(&w)?;
        if wt.shape.iter().product::<i64>() != cols
            || wt.shape.last() != Some(&cols)
            || self.var_tensor(&out)?.shape != shape
            || self.var_tensor(&y)?.shape != shape
        {
            return None;
        }
        let value = dps(HostKernel::RmsNormChain { rsqrt }, vec![x.clone(), w, e, eps], &out)?;
        gone.extend([ip, i, ja, inv_at, jy]);
        for at in gone {
            self.remove(at);
        }
        self.set(jo, &out, value);
        Some(())
    }
}
