//! Convolutions with what follows them (`relax_host.conv2d[_bias][_bn][_add][_relu]`),
//! batch normalization on its own and pooling.

use super::*;

impl BlockRewrite<'_> {
    pub(super) fn conv2d(&mut self, i: usize, var: &Var, call: &Call) -> Option<()> {
        let [x, w] = call.args.as_slice() else { return None };
        let xt = self.arg_tensor(x)?;
        let wt = self.arg_tensor(w)?;
        let out = self.var_tensor(var)?;
        if xt.shape.len() != 4 || wt.shape.len() != 4 || out.shape.len() != 4 {
            return None;
        }
        if !is_none_or(call, "data_layout", "NCHW")
            || !is_none_or(call, "kernel_layout", "OIHW")
            || !is_none_or(call, "out_layout", "NCHW")
            || !is_none_or(call, "out_dtype", "float32")
        {
            return None;
        }
        let stride = pair(&ints(call, "strides").unwrap_or(vec![1, 1]))?;
        let pad = padding4(&ints(call, "padding").unwrap_or(vec![0]))?;
        let dil = pair(&ints(call, "dilation").unwrap_or(vec![1, 1]))?;
        let groups = call.attrs.get_int("groups").unwrap_or(1);
        let c_out = out.shape[1];
        let mut params = vec![stride[0], stride[1]];
        params.extend(pad);
        params.extend([dil[0], dil[1], groups]);
        let conv = HostKernel::Conv2d(ConvFusion::default());
        let mut f = Fused::new(conv, vec![x.clone(), w.clone(), shape_arg(&params)], var, i);

        // Bias, then batch normalization.
        let bias_like = |b: &TensorInfo| {
            b.shape.iter().product::<i64>() == c_out
                && (b.shape.as_slice() == [1, c_out, 1, 1] || b.shape.as_slice() == [c_out, 1, 1])
        };
        self.fuse_add(&mut f, &out.shape, HostKernel::with_bias, bias_like);
        let with_bn = f.kernel.with_batch_norm();
        if let (Some(kernel), Some((j, tv, c))) = (with_bn, self.sole_call_user_bn(&f.cur, f.last)) {
            if let Some((k, y, aliases)) = self.bn_getitem(&tv, j, &c, c_out) {
                f.args.extend(c.args[1..5].iter().cloned());
                let eps = c.attrs.get("epsilon").and_then(AttrValue::as_float).unwrap_or(1e-5);
                f.args.push(Expr::new(ExprKind::PrimValue(PrimExpr::float_of(
                    eps,
                    DataType::FLOAT64,
                ))));
                f.absorb(k, &y, kernel);
                f.chain.push(j);
                for (at, alias_var, value) in aliases {
                    self.set(at, &alias_var, value);
                }
            }
        }
        // Residual add.
        self.fuse_add(&mut f, &out.shape, HostKernel::with_residual, |r| r.shape == out.shape);
        self.fuse_relu(&mut f);
        self.finish(f)
    }

    /// The sole user of `var` when it is an inference `batch_norm` on axis 1 with
    /// both `center` and `scale`.
    pub(super) fn sole_call_user_bn(&self, var: &Var, after: usize) -> Option<(usize, Var, Call)> {
        let (j, v, c) = self.sole_call_user(var, after, "relax.nn.batch_norm")?;
        let a = &c.attrs;
        let axis = a.get_int("axis").unwrap_or(1);
        if !(axis == 1 || axis == -3)
            || a.get_bool("training").unwrap_or(true)
            || !a.get_bool("center").unwrap_or(true)
            || !a.get_bool("scale").unwrap_or(true)
            || c.args.len() != 5
        {
            return None;
        }
        Some((j, v.clone(), c.clone()))
    }

    /// The bindings `(index, variable, item)` of every use of the tuple `tv` (bound
    /// at `at`), when each is a later, not yet rewritten `v = tv[item]`.
    pub(super) fn tuple_item_users(&self, tv: &Var, at: usize) -> Option<Vec<(usize, Var, usize)>> {
        let users = self.users.get(&tv.id())?;
        if self.uses.get(&tv.id()).copied() != Some(users.len()) {
            return None;
        }
        let mut out = Vec::with_capacity(users.len());
        for &k in users {
            if k <= at || self.replaced.contains_key(&k) {
                return None;
            }
            let Binding::VarBinding { var, value, .. } = &self.bindings[k] else {
                return None;
            };
            let ExprKind::TupleGetItem { tuple, index } = value.kind() else {
                return None;
            };
            if !is_var(tuple, tv) {
                return None;
            }
            out.push((k, var.clone(), *index));
        }
        Some(out)
    }

    /// For the batch-norm tuple `tv` (bound at `j`): the binding of `tv[0]` (its index
    /// and variable) when every use of `tv` is a `TupleGetItem` binding, and the
    /// rewrites of `tv[1]` / `tv[2]` into aliases of the moving mean and variance
    /// (what inference batch normalization returns).
    #[allow(clippy::type_complexity)]
    pub(super) fn bn_getitem(
        &self,
        tv: &Var,
        j: usize,
        c: &Call,
        c_out: i64,
    ) -> Option<(usize, Var, Vec<(usize, Var, Expr)>)> {
        for p in &c.args[1..5] {
            let t = self.arg_tensor(p)?;
            if t.shape.as_slice() != [c_out] {
                return None;
            }
        }
        let mut first = None;
        let mut aliases = vec![];
        for (k, var, index) in self.tuple_item_users(tv, j)? {
            match index {
                0 if first.is_none() => first = Some((k, var)),
                1 | 2 => aliases.push((k, var, c.args[2 + index].clone())),
                _ => return None,
            }
        }
        let (k, y) = first?;
        self.var_tensor(&y)?;
        Some((k, y, aliases))
    }

    pub(super) fn pool(&mut self, i: usize, var: &Var, call: &Call) -> Option<()> {
        let x = call.args.first()?;
        let t = self.arg_tensor(x)?;
        let out = self.var_tensor(var)?;
        if t.shape.len() != 4
            || out.shape.len() != 4
            || !is_none_or(call, "layout", "NCHW")
            || !is_none_or(call, "out_layout", "NCHW")
            || call.attrs.get_bool("ceil_mode").unwrap_or(false)
        {
            return None;
        }
        let size = pair(&ints(call, "pool_size")?)?;
        let stride = pair(&ints(call, "strides").unwrap_or(vec![1, 1]))?;
        let pad = padding4(&ints(call, "padding").unwrap_or(vec![0]))?;
        let dil = pair(&ints(call, "dilation").unwrap_or(vec![1, 1]))?;
        let include_pad = call.attrs.get_bool("count_include_pad").unwrap_or(false);
        let mut params = vec![size[0], size[1], stride[0], stride[1]];
        params.extend(pad);
        params.extend([dil[0], dil[1], include_pad as i64]);
        let kernel = if op_name(call)? == "relax.nn.max_pool2d" {
            HostKernel::MaxPool2d
        } else {
            HostKernel::AvgPool2d
        };
        let v = dps(kernel, vec![x.clone(), shape_arg(&params)], var)?;
        self.set(i, var, v);
        Some(())
    }

    /// Inference `batch_norm` on axis 1 not fused into a convolution: a per-channel
    /// scale and shift (`relax_host.batch_norm`); `t[1]`, `t[2]` of its tuple become
    /// the moving mean and variance.
    pub(super) fn batch_norm(&mut self, i: usize, tv: &Var, call: &Call) -> Option<()> {
        let x = call.args.first()?;
        let t = self.arg_tensor(x)?;
        if t.shape.len() < 2 {
            return None;
        }
        let a = &call.attrs;
        let axis = a.get_int("axis").unwrap_or(1);
        if !(axis == 1 || axis == 1 - t.shape.len() as i64)
            || a.get_bool("training").unwrap_or(true)
            || !a.get_bool("center").unwrap_or(true)
            || !a.get_bool("scale").unwrap_or(true)
            || call.args.len() != 5
        {
            return None;
        }
        let (k, y, aliases) = self.bn_getitem(tv, i, call, t.shape[1])?;
        let mut args = call.args.clone();
        let eps = a.get("epsilon").and_then(AttrValue::as_float).unwrap_or(1e-5);
        args.push(Expr::new(ExprKind::PrimValue(PrimExpr::float_of(
            eps,
            DataType::FLOAT64,
        ))));
        let value = dps(HostKernel::BatchNorm, args, &y)?;
        for (at, alias_var, v) in aliases {
            self.set(at, &alias_var, v);
        }
        self.remove(i);
        self.set(k, &y, value);
        Some(())
    }
}
