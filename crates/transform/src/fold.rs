//! `bind_params` (TVM's `BindParams`): parameters known at load time become
//! constants; `fold-constant` (TVM's `FoldConstant`): `call_tir`s whose arguments
//! are all constants are evaluated once, on the host, and replaced by their result
//! (a constant, or a tuple of constants for a kernel with several outputs).

use std::collections::HashMap;
use std::sync::Arc;

use relax_ir::mutator::{walk_expr, ExprMutator};
use relax_ir::{
    BaseFunc, Binding, DataType, Diagnostic, Expr, ExprKind, IRModule, NDArray, PrimExpr, Span, StructInfo, Var,
};
use relax_jit::{HostTensor, Jit, KernelArg};

/// Replace the parameters of `func` named in `params` by constants, remove them from
/// its signature and re-normalize. A name that is no parameter, or a tensor whose
/// dtype or shape does not match the parameter's annotation, is an error.
pub fn bind_params(
    module: &IRModule,
    func: &str,
    params: &HashMap<String, Arc<NDArray>>,
) -> Result<IRModule, Diagnostic> {
    let Some(BaseFunc::Relax(f)) = module.get(func) else {
        return Err(Diagnostic::error(
            format!("bind_params: no Relax function `{func}`"),
            Span::NONE,
        ));
    };
    let mut consts: HashMap<u64, Expr> = HashMap::new();
    for (name, data) in params {
        let Some(p) = f.params.iter().find(|p| p.name() == name) else {
            return Err(Diagnostic::error(
                format!("bind_params: `{func}` has no parameter `{name}`"),
                Span::NONE,
            ));
        };
        if let Some(StructInfo::Tensor(t)) = p.struct_info() {
            let shape_ok = t.shape_values().is_none_or(|s| {
                s.len() == data.shape.len()
                    && s.iter()
                        .zip(&data.shape)
                        .all(|(a, b)| a.as_int().is_none_or(|a| a == *b))
            });
            if t.dtype != data.dtype || !shape_ok {
                return Err(Diagnostic::error(
                    format!(
                        "bind_params: parameter `{name}` of `{func}` is not a {} tensor of shape {:?}",
                        data.dtype, data.shape
                    ),
                    Span::NONE,
                ));
            }
        }
        consts.insert(p.id(), Expr::new(ExprKind::Constant { data: data.clone() }));
    }
    let mut sub = Substitute { map: consts };
    let mut nf = sub.visit_function(f);
    nf.params.retain(|p| !sub.map.contains_key(&p.id()));
    let mut out = module.clone();
    out.add(func, BaseFunc::Relax(nf));
    let n = relax_checker::normalize::normalize_module(&out);
    match n.diagnostics.into_iter().find(|d| d.is_error()) {
        Some(d) => Err(d),
        None => Ok(n.module),
    }
}

/// Replace variables by expressions.
struct Substitute {
    map: HashMap<u64, Expr>,
}

impl ExprMutator for Substitute {
    fn visit_var_use(&mut self, v: &Var, e: &Expr) -> Expr {
        self.map.get(&v.id()).cloned().unwrap_or_else(|| e.clone())
    }
    fn visit_expr(&mut self, e: &Expr) -> Expr {
        walk_expr(self, e)
    }
}

/// Evaluate every `call_tir` of constants in the module's Relax functions (on the
/// host; a kernel the host executor cannot run is left as it is).
pub fn fold_constant(module: &IRModule) -> Result<IRModule, Diagnostic> {
    let jit = Jit::new(None);
    let mut out = module.clone();
    let mut changed = false;
    for f in out.functions.values_mut() {
        let BaseFunc::Relax(func) = f else { continue };
        let mut folder = Folder {
            module,
            jit: &jit,
            map: HashMap::new(),
            tuples: HashMap::new(),
            refined: HashMap::new(),
        };
        let nf = folder.visit_function(func);
        if !folder.map.is_empty() || !folder.tuples.is_empty() {
            *func = nf;
            changed = true;
        }
    }
    Ok(if changed {
        crate::dce::dead_code_elimination(&out)
    } else {
        out
    })
}

/// The most elements a creation operator's result (a `call_tir` without tensor
/// arguments: `zeros`, `full`, `arange`) may have to be folded; larger fills stay
/// kernels rather than become large constants (TVM's limit).
const MAX_CREATION_FOLD_ELEMENTS: i64 = 1024;

/// The most bytes a reshape view of a constant may have to be folded into a
/// constant of the new shape (a copy).
const MAX_VIEW_FOLD_BYTES: usize = 1 << 20;

struct Folder<'a> {
    module: &'a IRModule,
    jit: &'a Jit,
    /// Variables bound to a folded constant.
    map: HashMap<u64, Expr>,
    /// Variables bound to a folded tuple of constants (kept as variables, as TVM
    /// does; their fields fold where they are taken).
    tuples: HashMap<u64, Vec<Expr>>,
    /// Variables rebound with a more specific StructInfo, derived from their
    /// rewritten value (a `reshape` by a folded shape gets its static shape).
    refined: HashMap<u64, Expr>,
}

impl Folder<'_> {
    /// The constant a `call_tir` of constants computes.
    fn eval(&mut self, value: &Expr, var: &Var) -> Option<Expr> {
        let c = value.as_call()?;
        if c.op.as_op() != Some("relax.call_tir") || c.args.len() != 2 {
            return None;
        }
        let ExprKind::GlobalVar(g) = c.args[0].kind() else {
            return None;
        };
        let pf = self.module.prim_func(g.name())?;
        let ExprKind::Tuple(args) = c.args[1].kind() else {
            return None;
        };
        let mut tensors = Vec::new();
        for a in args {
            let ExprKind::Constant { data } = a.kind() else {
                return None;
            };
            tensors.push(HostTensor::from_bytes(data.dtype, &data.shape, &data.data).ok()?);
        }
        // One tensor result, or a tuple of them; static shapes.
        let sinfo = var.struct_info()?;
        let fields: Vec<&StructInfo> = match sinfo {
            StructInfo::Tensor(_) => vec![sinfo],
            StructInfo::Tuple(fields) => fields.iter().collect(),
            _ => return None,
        };
        let mut outs = Vec::with_capacity(fields.len());
        for f in fields {
            let StructInfo::Tensor(t) = f else { return None };
            let shape: Vec<i64> = t.shape_values()?.iter().map(|d| d.as_int()).collect::<Option<_>>()?;
            outs.push((t.dtype, shape));
        }
        if args.is_empty()
            && outs
                .iter()
                .any(|(_, s)| s.iter().product::<i64>() > MAX_CREATION_FOLD_ELEMENTS)
        {
            // A large constant fill (`zeros`) stays a kernel rather than a large constant.
            return None;
        }
        let inputs = tensors.len();
        for (dtype, shape) in &outs {
            tensors.push(HostTensor::zeros(*dtype, shape).ok()?);
        }
        let mut call_args: Vec<KernelArg<'_>> = tensors.iter_mut().map(KernelArg::from).collect();
        // A kernel the host executor cannot run now stays for run time.
        self.jit.run_host(pf, &mut call_args).ok()?;
        let mut results: Vec<Expr> = tensors
            .split_off(inputs)
            .into_iter()
            .zip(outs)
            .map(|(t, (dtype, shape))| {
                Expr::new(ExprKind::Constant {
                    data: Arc::new(NDArray {
                        dtype,
                        shape,
                        data: t.bytes().to_vec(),
                    }),
                })
            })
            .collect();
        Some(match sinfo {
            StructInfo::Tuple(_) => Expr::tuple(results),
            _ => results.pop()?,
        })
    }

    /// The value of a shape conversion of a constant: `R.shape_to_tensor` of a static
    /// shape is an `int64` constant, `R.tensor_to_shape` of an integer constant a
    /// static shape.
    fn shape_conversion(&self, value: &Expr) -> Option<Expr> {
        let c = value.as_call()?;
        let [arg] = c.args.as_slice() else { return None };
        match (c.op.as_op()?, arg.kind()) {
            ("relax.shape_to_tensor", ExprKind::ShapeExpr(dims)) => {
                let dims: Vec<i64> = dims.iter().map(|d| d.as_int()).collect::<Option<_>>()?;
                Some(Expr::new(ExprKind::Constant {
                    data: Arc::new(NDArray {
                        dtype: DataType::INT64,
                        shape: vec![dims.len() as i64],
                        data: dims.iter().flat_map(|d| d.to_le_bytes()).collect(),
                    }),
                }))
            }
            ("relax.tensor_to_shape", ExprKind::Constant { data }) if data.shape.len() == 1 => {
                let width = data.dtype.bytes();
                if !data.dtype.is_int() || !(width == 4 || width == 8) {
                    return None;
                }
                let dims = data.data.chunks_exact(width).map(|b| {
                    let v = if width == 8 {
                        i64::from_le_bytes(b.try_into().unwrap_or([0; 8]))
                    } else {
                        i64::from(i32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
                    };
                    PrimExpr::int(v)
                });
                Some(Expr::shape(dims.collect()))
            }
            _ => None,
        }
    }

    /// The constant a view of a constant with another shape is
    /// (`R.call_pure_packed("vm.builtin.reshape", c, R.shape([...]))`, what
    /// `dispatch-host-library` makes of `reshape`, `expand_dims` and `squeeze` on
    /// the host): the same bytes with the static shape, when the counts agree.
    fn reshape_view(&self, value: &Expr) -> Option<Expr> {
        let c = value.as_call()?;
        if c.op.as_op() != Some("relax.call_pure_packed") {
            return None;
        }
        let [f, x, shape] = c.args.as_slice() else { return None };
        match f.kind() {
            ExprKind::ExternFunc { global_symbol } if global_symbol == crate::host_dispatch::RESHAPE_VIEW => {}
            _ => return None,
        }
        let (ExprKind::Constant { data }, ExprKind::ShapeExpr(dims)) = (x.kind(), shape.kind()) else {
            return None;
        };
        let dims: Vec<i64> = dims
            .iter()
            .map(|d| d.as_int().filter(|&d| d >= 0))
            .collect::<Option<_>>()?;
        let count = |s: &[i64]| s.iter().try_fold(1i64, |a, &d| a.checked_mul(d));
        // A large constant (a bound weight) stays a view at run time rather than be
        // copied here.
        if count(&dims)? != count(&data.shape)? || data.data.len() > MAX_VIEW_FOLD_BYTES {
            return None;
        }
        Some(Expr::new(ExprKind::Constant {
            data: Arc::new(NDArray {
                dtype: data.dtype,
                shape: dims,
                data: data.data.clone(),
            }),
        }))
    }

    /// The constant `value` is when it takes a field of a folded tuple (or of a
    /// tuple of constants written out).
    fn tuple_field(&self, value: &Expr) -> Option<Expr> {
        let ExprKind::TupleGetItem { tuple, index } = value.kind() else {
            return None;
        };
        match tuple.kind() {
            ExprKind::Var(v) => self.tuples.get(&v.id())?.get(*index).cloned(),
            // A field of a tuple written out (`(a, b)[0]`, as index_tensor's
            // legalization takes its indices) that is a constant.
            ExprKind::Tuple(fields) => fields
                .get(*index)
                .filter(|f| matches!(f.kind(), ExprKind::Constant { .. }))
                .cloned(),
            _ => None,
        }
    }
}

impl ExprMutator for Folder<'_> {
    fn visit_var_use(&mut self, v: &Var, e: &Expr) -> Expr {
        self.map
            .get(&v.id())
            .or_else(|| self.refined.get(&v.id()))
            .cloned()
            .unwrap_or_else(|| e.clone())
    }
    fn visit_expr(&mut self, e: &Expr) -> Expr {
        walk_expr(self, e)
    }
    fn visit_binding(&mut self, b: &Binding) -> Vec<Binding> {
        let out = self.fold_binding(b);
        // A rewritten value may have a more specific StructInfo than the variable's
        // annotation (TVM re-derives it when it re-emits the binding).
        out.into_iter()
            .map(|nb| match &nb {
                Binding::VarBinding { var, value, span } if !b.value().same_as(value) => {
                    match self.refine(var, value) {
                        Some(nv) => {
                            self.refined.insert(var.id(), nv.to_expr());
                            Binding::VarBinding {
                                var: nv,
                                value: value.clone(),
                                span: *span,
                            }
                        }
                        None => nb,
                    }
                }
                _ => nb,
            })
            .collect()
    }
}

impl Folder<'_> {
    /// A copy of `var` with the StructInfo derived from `value`, when that is
    /// strictly more specific than its own.
    fn refine(&self, var: &Var, value: &Expr) -> Option<Var> {
        let old = var.struct_info()?;
        let (_, derived, diags) = relax_checker::normalize::normalize_expr(value, Some(self.module));
        if diags.iter().any(|d| d.is_error()) {
            return None;
        }
        let ana = relax_ir::arith::Analyzer::for_shapes();
        let more_specific = relax_checker::analysis::is_base_of(old, &derived, &ana)
            && !relax_checker::analysis::is_base_of(&derived, old, &ana);
        if !more_specific {
            return None;
        }
        Some(if var.is_dataflow() {
            Var::new_dataflow(var.name(), Some(derived))
        } else {
            Var::new(var.name(), Some(derived))
        })
    }

    /// Fold one binding: its value becomes a constant (or a tuple of constants)
    /// when it can be evaluated.
    fn fold_binding(&mut self, b: &Binding) -> Vec<Binding> {
        let nb = relax_ir::mutator::walk_binding(self, b);
        if let Binding::VarBinding { var, value, span } = &nb {
            // A variable bound to a constant (legalization makes `arange` one) is
            // one wherever it is used.
            if let ExprKind::Constant { .. } = value.kind() {
                self.map.insert(var.id(), value.clone());
                return vec![nb];
            }
            if let Some(k) = self
                .eval(value, var)
                .or_else(|| self.tuple_field(value))
                .or_else(|| self.shape_conversion(value))
                .or_else(|| self.reshape_view(value))
            {
                if let ExprKind::Tuple(fields) = k.kind() {
                    self.tuples.insert(var.id(), fields.clone());
                } else {
                    self.map.insert(var.id(), k.clone());
                }
                return vec![Binding::VarBinding {
                    var: var.clone(),
                    value: k,
                    span: *span,
                }];
            }
        }
        vec![nb]
    }
}
