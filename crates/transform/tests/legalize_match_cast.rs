//! `LegalizeOps` lowers a call nested in `R.match_cast` the way TVM 0.27 does: the
//! legalized call is bound to a fresh `gv` first and the cast applies to it (TVM's
//! output below, from `relax.transform.LegalizeOps()(mod).script()`).

use relax_checker::normalize::normalize_module;
use relax_ir::text::{parse, print_program, Program};
use relax_ir::{BaseFunc, Binding, ExprKind};
use relax_transform::legalize::{legalize_module, legalize_module_report};

const SRC: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((4,), "bool"), x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        lv = R.match_cast(R.where(c, x, y), R.Tensor((4,), "float32"))
        return lv
"#;

/// TVM 0.27's legalized `main` of `SRC`.
const TVM_MAIN: &str = r#"    @R.function
    def main(c: R.Tensor((4,), dtype="bool"), x: R.Tensor((4,), dtype="float32"), y: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        gv = R.call_tir(cls.where, (c, x, y), out_ty=R.Tensor((4,), dtype="float32"))
        lv: R.Tensor((4,), dtype="float32") = R.match_cast(gv, R.Tensor((4,), dtype="float32"))
        return lv"#;

fn legalized(src: &str) -> relax_ir::IRModule {
    let n = normalize_module(&parse(src).expect("parses").into_module());
    assert!(n.diagnostics.iter().all(|d| !d.is_error()), "{:?}", n.diagnostics);
    let (m, skipped) = legalize_module_report(&n.module);
    assert!(skipped.is_empty(), "{skipped:?}");
    m
}

#[test]
fn call_in_match_cast_is_bound_then_cast_like_tvm() {
    let m = legalized(SRC);
    let text = print_program(&Program::Module(m.clone()));
    assert!(text.contains(TVM_MAIN), "{text}");
    assert!(matches!(m.get("where"), Some(BaseFunc::Prim(_))), "{text}");
    // Legalizing again changes nothing.
    let again = legalize_module(&m).expect("legalizes");
    assert_eq!(print_program(&Program::Module(again)), text);
}

#[test]
fn call_in_match_cast_inside_dataflow_binds_a_dataflow_var() {
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        with R.dataflow():
            lv = R.match_cast(R.reshape(x, R.shape([6])), R.Tensor((n,), "float32"))
            R.output(lv)
        return lv
"#;
    let m = legalized(src);
    let Some(BaseFunc::Relax(main)) = m.get("main") else {
        panic!("main");
    };
    let ExprKind::Seq(seq) = main.body.kind() else {
        panic!("a SeqExpr body");
    };
    let b = &seq.blocks[0];
    assert!(b.is_dataflow);
    let [Binding::VarBinding { var: gv, value, .. }, Binding::MatchCast { value: cast, .. }] = &b.bindings[..] else {
        panic!("two bindings: {:?}", b.bindings);
    };
    assert!(gv.is_dataflow(), "the fresh variable is a dataflow variable");
    let call = value.as_call().expect("a call");
    assert_eq!(call.op.as_op(), Some("relax.call_tir"));
    assert_eq!(cast.as_var(), Some(gv));
}
