//! Matrix products with what follows them (`relax_host.matmul[_bt][_bias][_relu]`),
//! reading the untransposed weight of `x @ permute_dims(W)`.

use super::*;

impl BlockRewrite<'_> {
    pub(super) fn matmul(&mut self, i: usize, var: &Var, call: &Call) -> Option<()> {
        let [a, b] = call.args.as_slice() else { return None };
        if self.arg_tensor(a).is_none() || self.var_tensor(var).is_none() {
            // Symbolic or 16-bit float operands: only `x @ permute_dims(W)`.
            let (d, w) = self.transposed_matrix(b)?;
            if !self.bt_operands_ok(call, var, b) {
                return None;
            }
            let bt = HostKernel::Matmul(MatmulFusion {
                transposed_b: true,
                ..MatmulFusion::default()
            });
            let mut f = Fused::new(bt, vec![a.clone(), w], var, i);
            f.chain.push(d);
            return self.finish(f);
        }
        let at = self.arg_tensor(a)?;
        let bt = self.arg_tensor(b)?;
        let out = self.var_tensor(var)?;
        if !is_none_or(call, "out_dtype", "float32") || at.shape.len() < 2 || bt.shape.len() < 2 {
            return None;
        }
        // Supported: `b` 2-D, or equal batch dimensions.
        let (ab, bb) = (&at.shape[..at.shape.len() - 2], &bt.shape[..bt.shape.len() - 2]);
        if !(bb.is_empty() || ab == bb) {
            return None;
        }
        let n = *out.shape.last()?;
        let mm = HostKernel::Matmul(MatmulFusion::default());
        let mut f = Fused::new(mm, vec![a.clone(), b.clone()], var, i);
        if let Some((d, w)) = self.transposed_matrix(b) {
            f.args[1] = w;
            f.kernel = HostKernel::Matmul(MatmulFusion {
                transposed_b: true,
                ..MatmulFusion::default()
            });
            f.chain.push(d);
        }
        let bias_like = |bias: &TensorInfo| {
            bias.shape.iter().product::<i64>() == n
                && bias.shape.len() <= out.shape.len()
                && bias.shape.last() == Some(&n)
        };
        self.fuse_add(&mut f, &out.shape, HostKernel::with_bias, bias_like);
        self.fuse_relu(&mut f);
        self.finish(f)
    }

    /// The binding index and operand of `e` when it is a variable of this block bound
    /// to the transpose of a static 2-D host matrix and used only once.
    pub(super) fn transposed_matrix(&self, e: &Expr) -> Option<(usize, Expr)> {
        let ExprKind::Var(v) = e.kind() else { return None };
        if self.uses.get(&v.id()).copied() != Some(1) {
            return None;
        }
        let d = *self.def.get(&v.id())?;
        if self.replaced.contains_key(&d) {
            return None;
        }
        let (_, c) = self.call_at(d)?;
        let x = crate::transpose_matmul::transposed_matrix(c)?;
        static_tensor_if(&arg_struct_info(&x)?, gemm_dtype).filter(|t| self.on_host(t))?;
        Some((d, x))
    }

    /// Whether `var` (bound at `i`) is the right operand of its only user, a 2-D
    /// `matmul` that will read the untransposed matrix (see [`Self::matmul`]).
    pub(super) fn feeds_matmul_as_transposed_rhs(&self, i: usize, var: &Var) -> bool {
        let Some((_, _, c)) = self.sole_call_user(var, i, "relax.matmul") else {
            return false;
        };
        let Some(j) = self.sole_user(var, i) else { return false };
        let Some((out, _)) = self.call_at(j) else { return false };
        c.args.get(1).is_some_and(|b| is_var(b, var))
            && self.transposed_matrix(&var.to_expr()).is_some()
            && self.bt_operands_ok(c, out, &var.to_expr())
    }

    /// Whether `a @ b` (the matmul `c`, whose result is `out`), with `b` the
    /// transpose of a static 2-D host matrix `W` of `[N, K]`, can run as
    /// `relax_host.matmul_bt(a, W)`: `a` is a host tensor of `W`'s dtype
    /// (`float32`, `float16` or `bfloat16`) of rank >= 2 whose last axis is `K`
    /// (its other axes may be symbolic), and the result is a host tensor of that
    /// dtype whose last axis is `N`.
    pub(super) fn bt_operands_ok(&self, c: &Call, out: &Var, b: &Expr) -> bool {
        let Some(a) = c.args.first() else { return false };
        let Some(w) = arg_struct_info(b).and_then(|si| static_tensor_if(&si, gemm_dtype)) else {
            return false;
        };
        let Some(dtype) = arg_struct_info(b).and_then(|si| si.as_tensor().map(|t| t.dtype)) else {
            return false;
        };
        let [k, n] = w.shape.as_slice() else { return false };
        let host_with = |si: &StructInfo, last: i64| {
            si.as_tensor().is_some_and(|t| {
                t.dtype == dtype
                    && self.on_host(&TensorInfo {
                        shape: vec![],
                        vdevice: t.vdevice.clone(),
                    })
                    && t.shape_values()
                        .is_some_and(|s| s.len() >= 2 && s.last().and_then(PrimExpr::as_int) == Some(last))
            })
        };
        let same_dtype = match c.attrs.get("out_dtype") {
            None | Some(AttrValue::None) => true,
            Some(AttrValue::Str(s)) => s.is_empty() || *s == dtype.to_string(),
            Some(AttrValue::DataType(d)) => d.is_void() || *d == dtype,
            _ => false,
        };
        same_dtype
            && arg_struct_info(a).is_some_and(|si| host_with(&si, *k))
            && out.struct_info().is_some_and(|si| host_with(si, *n))
    }
}
