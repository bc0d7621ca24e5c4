//! `fuse-transpose-matmul` (TVM's `FuseTransposeMatmul`, as MLC-LLM runs it):
//! `y = R.matmul(x, wt)` with `wt = R.permute_dims(w)` the transpose of a 2-D matrix
//! becomes `R.call_tir(cls.NT_matmul, (x, w), ...)`, one PrimFunc reading `w[j, k]`.
//!
//! A linear layer as `relax.frontend.nn` and `torch.export` print it is exactly this
//! pair, with `w` a weight parameter; legalized separately, the transpose copies every
//! weight on every call (a decode step would move each weight three times instead of
//! once). Runs before `legalize`, after `dispatch-host-library` (host calls that the
//! kernel library takes are already `relax_host.matmul_bt`); the transpose binding is
//! left to dead-code elimination when nothing else reads it.

use std::collections::HashMap;

use relax_ir::attrs::AttrValue;
use relax_ir::mutator::{walk_binding, ExprMutator};
use relax_ir::relax::Call;
use relax_ir::structural::structural_equal_prim_func;
use relax_ir::{BaseFunc, Binding, Diagnostic, Expr, IRModule, PrimFunc, StructInfo};
use relax_op::legalize::linear_algebra::nt_matmul;
use relax_op::legalize::{LegalizeCtx, Lowered};

use crate::legalize::{arg_struct_info, call_tir_of};

/// Rewrite every `matmul(x, permute_dims(w))` of a 2-D `w` in the module's Relax
/// functions into a call of an `NT_matmul` PrimFunc.
pub fn fuse_transpose_matmul(module: &IRModule) -> Result<IRModule, Vec<Diagnostic>> {
    let mut fuser = Fuser {
        taken: module.functions.keys().map(|g| g.name().to_string()).collect(),
        added: Vec::new(),
        transposes: HashMap::new(),
        changed: false,
    };
    let mut out = module.clone();
    for f in out.functions.values_mut() {
        if let BaseFunc::Relax(func) = f {
            fuser.changed = false;
            let nf = fuser.visit_function(func);
            if fuser.changed {
                *func = nf;
            }
        }
    }
    if fuser.added.is_empty() {
        return Ok(module.clone());
    }
    for (name, func) in fuser.added {
        out.add(&name, BaseFunc::Prim(func));
    }
    let n = relax_checker::normalize::normalize_module(&out);
    let errors: Vec<Diagnostic> = n.diagnostics.into_iter().filter(|d| d.is_error()).collect();
    if errors.is_empty() {
        Ok(n.module)
    } else {
        Err(errors)
    }
}

struct Fuser {
    /// Names of the module's functions and of those added.
    taken: Vec<String>,
    /// The PrimFuncs made, by name (structurally equal ones are shared).
    added: Vec<(String, PrimFunc)>,
    /// Variables bound to the transpose of a 2-D matrix, with the matrix.
    transposes: HashMap<u64, Expr>,
    changed: bool,
}

/// The matrix `w` when `c` is `permute_dims(w)` swapping the two axes of a 2-D
/// tensor (also what `dispatch-host-library` reads untransposed).
pub(crate) fn transposed_matrix(c: &Call) -> Option<Expr> {
    if c.op.as_op()? != "relax.permute_dims" {
        return None;
    }
    let w = c.args.first()?;
    match arg_struct_info(w)? {
        StructInfo::Tensor(t) if t.ndim == 2 => {}
        _ => return None,
    }
    match c.attrs.get("axes") {
        None | Some(AttrValue::None) => {}
        Some(a) if a.as_int_list()? == [1, 0] => {}
        _ => return None,
    }
    Some(w.clone())
}

impl Fuser {
    /// `R.call_tir` of `lowered`, its PrimFunc added (or an equal one reused).
    fn call_tir(&mut self, lowered: Lowered) -> Expr {
        let existing = self
            .added
            .iter()
            .find(|(_, f)| structural_equal_prim_func(f, &lowered.func))
            .map(|(n, _)| n.clone());
        let name = existing.unwrap_or_else(|| {
            let mut name = lowered.name.clone();
            let mut k = 1;
            while self.taken.contains(&name) {
                name = format!("{}{k}", lowered.name);
                k += 1;
            }
            self.taken.push(name.clone());
            self.added.push((name.clone(), lowered.func.clone()));
            name
        });
        call_tir_of(&name, lowered)
    }

    /// The `NT_matmul` call replacing `c` (bound to a variable of StructInfo `out`).
    fn fused(&mut self, c: &Call, out: &StructInfo) -> Option<Expr> {
        if c.op.as_op()? != "relax.matmul" || c.args.len() != 2 {
            return None;
        }
        let w = self.transposes.get(&c.args[1].as_var()?.id())?.clone();
        let call = Call {
            args: vec![c.args[0].clone(), w.clone()],
            ..c.clone()
        };
        let args = vec![arg_struct_info(&c.args[0])?, arg_struct_info(&w)?];
        let ctx = LegalizeCtx {
            call: &call,
            args,
            out: out.clone(),
        };
        let lowered = nt_matmul(&ctx).ok()?;
        Some(self.call_tir(lowered))
    }
}

impl ExprMutator for Fuser {
    fn visit_binding(&mut self, b: &Binding) -> Vec<Binding> {
        let b = walk_binding(self, b);
        let Binding::VarBinding { var, value, span } = &b else {
            return vec![b];
        };
        let Some(c) = value.as_call() else {
            return vec![b];
        };
        if let Some(w) = transposed_matrix(c) {
            self.transposes.insert(var.id(), w);
            return vec![b];
        }
        match var.struct_info().and_then(|out| self.fused(c, out)) {
            Some(new) => {
                self.changed = true;
                vec![Binding::VarBinding {
                    var: var.clone(),
                    value: new,
                    span: *span,
                }]
            }
            None => vec![b],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relax_ir::ExprKind;

    const SRC: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, "n", 8), "float32"), w: R.Tensor((6, 8), "float32"), u: R.Tensor((8, 6), "float32"), c: R.Tensor((2, 8, 6), "float32")):
        n = T.int64()
        with R.dataflow():
            wt = R.permute_dims(w, axes=None)
            y = R.matmul(x, wt)
            z = R.matmul(x, R.permute_dims(w, axes=[1, 0]))
            kept = R.matmul(x, u)
            ct = R.permute_dims(c, axes=[0, 2, 1])
            batched = R.matmul(x, R.permute_dims(ct, axes=[0, 2, 1]))
            R.output(y, z, kept, batched)
        return (y, z, kept, batched)
"#;

    /// The called function of each `main` binding's `call_tir`, or the operator.
    fn callees(m: &IRModule) -> Vec<String> {
        crate::test_util::main_bindings(m)
            .iter()
            .map(|b| match b.value().as_call() {
                Some(c) if c.op.as_op() == Some("relax.call_tir") => match c.args[0].kind() {
                    ExprKind::GlobalVar(g) => g.name().to_string(),
                    _ => "?".into(),
                },
                Some(c) => c.op.as_op().unwrap_or("?").to_string(),
                None => "-".into(),
            })
            .collect()
    }

    #[test]
    fn transposed_two_d_operands_become_one_nt_matmul() {
        let m = relax_ir::text::parse(SRC).expect("parses").into_module();
        let m = relax_checker::check::check_module(&m).module;
        let out = fuse_transpose_matmul(&m).expect("rewrites");
        // Both spellings of the 2-D transpose share one PrimFunc; a plain matmul and
        // a transpose of a 3-D tensor are left alone.
        assert_eq!(
            callees(&out),
            [
                "relax.permute_dims",
                "NT_matmul",
                "relax.permute_dims",
                "NT_matmul",
                "relax.matmul",
                "relax.permute_dims",
                "relax.permute_dims",
                "relax.matmul",
            ]
        );
        let Some(BaseFunc::Prim(f)) = out.get("NT_matmul") else {
            panic!("no NT_matmul")
        };
        // x, w (untransposed: [6, 8]) and the output.
        assert_eq!(f.params.len(), 3);
        let w: Vec<Option<i64>> = f.buffer_map[1].1.shape().iter().map(|d| d.as_int()).collect();
        assert_eq!(w, [Some(6), Some(8)]);
        assert!(out.get("NT_matmul1").is_none());
    }
}
