//! Inference on parsed TVMScript: built-ins whose inputs only the text format
//! conveniently produces (VDevice specs, extern functions, `out_ty`).

use relax_checker::op::{lookup, InferCtx};
use relax_ir::arith::Analyzer;
use relax_ir::text::{parse, print_struct_info};
use relax_ir::{Binding, ExprKind, FuncStructInfo, IRModule, StructInfo};

const SRC: &str = r#"
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "tag": ""}, 0, "global"), I.vdevice({"keys": ["cuda", "gpu"], "kind": "cuda", "tag": ""}, 0, "global")]})
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32"), c: R.Prim("bool")):
        a = R.to_vdevice(x, "cuda:0:global")
        b = R.call_pure_packed("my_func", x, sinfo_args=R.Tensor((3,), dtype="int32"))
        s = R.shape_of(x)
        p = R.print(x, format="{}")
        t = R.assert_op(c, format="fail")
        return x
"#;

fn sinfo_of(e: &relax_ir::Expr) -> StructInfo {
    match e.kind() {
        ExprKind::Var(v) => v.struct_info().cloned().unwrap_or(StructInfo::Object),
        ExprKind::ShapeExpr(v) => StructInfo::shape(v.clone()),
        ExprKind::PrimValue(p) => StructInfo::prim_value(p.clone()),
        ExprKind::ExternFunc { .. } => StructInfo::Func(FuncStructInfo {
            params: None,
            ret: Box::new(StructInfo::Object),
            purity: false,
            derive_func: Some("tvm.relax.struct_info.infer_by_sinfo_args".into()),
        }),
        _ => StructInfo::Object,
    }
}

fn infer_all(m: &IRModule) -> Vec<(String, Result<String, String>)> {
    let f = m.relax_function("main").expect("main");
    let ExprKind::Seq(seq) = f.body.kind() else {
        panic!("body is a SeqExpr")
    };
    let analyzer = Analyzer::for_shapes();
    let ctx = InferCtx {
        module: Some(m),
        analyzer: &analyzer,
    };
    let mut out = Vec::new();
    for b in seq.blocks.iter().flat_map(|b| b.bindings.iter()) {
        let Binding::VarBinding { var, value, .. } = b else {
            continue;
        };
        let call = value.as_call().expect("a call");
        let def = lookup(call.op.as_op().expect("an operator")).expect("registered");
        let args: Vec<StructInfo> = call.args.iter().map(sinfo_of).collect();
        let r = (def.infer)(call, &args, &ctx)
            .map(|s| print_struct_info(&s, Some(m)))
            .map_err(|e| e.to_string());
        out.push((var.name().to_string(), r));
    }
    out
}

#[test]
fn builtins_from_text() {
    let m = parse(SRC).expect("parses").into_module();
    let got = infer_all(&m);
    let get = |n: &str| {
        got.iter()
            .find(|(k, _)| k == n)
            .map(|(_, r)| r.clone())
            .expect("binding")
    };
    assert_eq!(
        get("a"),
        Ok(r#"R.Tensor((2, 3), dtype="float32", vdevice="cuda:0:global")"#.to_string())
    );
    assert_eq!(get("b"), Ok(r#"R.Tensor((3,), dtype="int32")"#.to_string()));
    assert_eq!(get("s"), Ok("R.Shape([2, 3])".to_string()));
    assert_eq!(get("p"), Ok("R.Tuple".to_string()));
    assert_eq!(get("t"), Ok("R.Tuple".to_string()));
    assert!(!lookup("relax.print").expect("print").pure);
    assert!(!lookup("relax.assert_op").expect("assert_op").pure);
}
