//! The spec's derivation rules, one test per rule (positive and negative),
//! checked through `check_module`'s per-binding StructInfo.

mod common;

use std::sync::Arc;

use common::build::*;
use relax_checker::analysis::struct_info_equal;
use relax_checker::check::{check_module, CheckResult};
use relax_ir::{
    AttrValue, Attrs, DataType, Expr, ExprKind, FuncStructInfo, Function, NDArray, PrimExpr, ShapeStructInfo,
    StructInfo,
};

fn sinfo_of(r: &CheckResult, name: &str) -> StructInfo {
    r.bindings
        .iter()
        .find(|b| b.var == name)
        .map(|b| b.struct_info.clone())
        .unwrap_or_else(|| panic!("no binding {name}"))
}

fn has(r: &CheckResult, error: bool, rule_prefix: &str) -> bool {
    r.diagnostics.iter().any(|d| {
        d.is_error() == error
            && d.rule
                .map(relax_ir::Rule::as_str)
                .unwrap_or("")
                .starts_with(rule_prefix)
    })
}

fn one_binding(params: Vec<relax_ir::Var>, value: Expr) -> CheckResult {
    let y = var("y", None);
    check_module(&main_module(func(
        params,
        seq(vec![block(vec![bind(&y, value, 3)])], e(&y)),
        None,
    )))
}

fn assert_sinfo(got: &StructInfo, want: &StructInfo) {
    assert!(struct_info_equal(got, want), "got {got:?}, want {want:?}");
}

#[test]
fn rule03_constant() {
    let data = NDArray {
        dtype: DataType::INT32,
        shape: vec![2, 3],
        data: vec![0; 24],
    };
    let r = one_binding(vec![], Expr::new(ExprKind::Constant { data: Arc::new(data) }));
    assert_sinfo(
        &sinfo_of(&r, "y"),
        &StructInfo::tensor(vec![PrimExpr::int(2), PrimExpr::int(3)], DataType::INT32),
    );
}

#[test]
fn rule04_to_08_leaves() {
    let r = one_binding(
        vec![],
        Expr::new(ExprKind::PrimValue(PrimExpr::int_of(3, DataType::INT32))),
    );
    assert_sinfo(&sinfo_of(&r, "y"), &StructInfo::prim(DataType::INT32));
    let r = one_binding(vec![], Expr::new(ExprKind::StringImm("s".into())));
    assert_sinfo(&sinfo_of(&r, "y"), &StructInfo::Object);
    let r = one_binding(vec![], Expr::new(ExprKind::DataTypeImm(DataType::FLOAT16)));
    assert_sinfo(&sinfo_of(&r, "y"), &StructInfo::Object);
    let x = var("x", Some(tf(&[2])));
    let r = one_binding(
        vec![x.clone()],
        Expr::tuple(vec![e(&x), Expr::shape(vec![PrimExpr::int(4)])]),
    );
    assert_sinfo(
        &sinfo_of(&r, "y"),
        &StructInfo::Tuple(vec![tf(&[2]), StructInfo::shape(vec![PrimExpr::int(4)])]),
    );
}

#[test]
fn rule09_if_is_the_lub() {
    let c = var("c", Some(StructInfo::prim(DataType::BOOL)));
    let a = var("a", Some(tf(&[2, 3])));
    let b = var("b", Some(tf(&[2, 4])));
    let ife = Expr::new(ExprKind::If {
        cond: e(&c),
        then_branch: seq(vec![], e(&a)),
        else_branch: seq(vec![], e(&b)),
    });
    let r = one_binding(vec![c.clone(), a.clone(), b.clone()], ife);
    assert_sinfo(&sinfo_of(&r, "y"), &StructInfo::tensor_ndim(F32, 2));
    // A condition that is not a boolean scalar is a warning (evaluation fails).
    let bad = Expr::new(ExprKind::If {
        cond: e(&a),
        then_branch: seq(vec![], e(&a)),
        else_branch: seq(vec![], e(&a)),
    });
    let r = one_binding(vec![a.clone()], bad);
    assert!(
        r.is_valid() && has(&r, false, "struct-info/if-condition"),
        "{:?}",
        r.diagnostics
    );
}

#[test]
fn rule10_seq_expr_erases_inner_shape_vars() {
    let n = sv("n");
    let x = var("x", Some(StructInfo::tensor_ndim(F32, 1)));
    let inner = var("inner", None);
    let body = seq(
        vec![block(vec![cast(&inner, e(&x), t(&[n.to_expr()], F32), 3)])],
        e(&inner),
    );
    let r = check_module(&main_module(func(vec![x.clone()], body, None)));
    assert!(r.is_valid(), "{:?}", r.diagnostics);
    let relax_ir::BaseFunc::Relax(f) = r.module.get("main").unwrap() else {
        panic!()
    };
    // `n` is bound inside the body only: the return StructInfo forgets it.
    assert_sinfo(f.ret_struct_info.as_ref().unwrap(), &StructInfo::tensor_ndim(F32, 1));
    assert_sinfo(&sinfo_of(&r, "inner"), &t(&[n.to_expr()], F32));
}

#[test]
fn rule11_annotations_checked() {
    let x = var("x", Some(tf(&[2, 3])));
    // Compatible: the annotation wins.
    let y = var("y", Some(StructInfo::tensor_ndim(F32, 2)));
    let r = check_module(&main_module(func(
        vec![x.clone()],
        seq(vec![block(vec![bind(&y, e(&x), 3)])], e(&y)),
        None,
    )));
    assert!(r.is_valid());
    assert_sinfo(&sinfo_of(&r, "y"), &StructInfo::tensor_ndim(F32, 2));
    // Incompatible: an error at the binding.
    let y = var("y", Some(tf(&[2, 4])));
    let r = check_module(&main_module(func(
        vec![x.clone()],
        seq(vec![block(vec![bind(&y, e(&x), 3)])], e(&y)),
        None,
    )));
    assert!(has(&r, true, "struct-info/annotation"), "{:?}", r.diagnostics);
    let d = r.errors().next().unwrap();
    assert_eq!(d.span, relax_ir::Span::new(3, 9));
    // More specific than derivable: a warning only.
    let z = var("z", Some(StructInfo::tensor_ndim(F32, -1)));
    let w = var("w", Some(tf(&[2, 3])));
    let r = check_module(&main_module(func(
        vec![z.clone()],
        seq(vec![block(vec![bind(&w, e(&z), 3)])], e(&w)),
        None,
    )));
    assert!(r.is_valid(), "{:?}", r.diagnostics);
    assert!(has(&r, false, "struct-info/annotation"), "{:?}", r.diagnostics);
}

#[test]
fn rule11_match_cast() {
    let x = var("x", Some(tf(&[2, 3])));
    let y = var("y", None);
    // Rank 1 can never match a rank-2 tensor: a warning.
    let r = check_module(&main_module(func(
        vec![x.clone()],
        seq(
            vec![block(vec![cast(&y, e(&x), StructInfo::tensor_ndim(F32, 1), 3)])],
            e(&y),
        ),
        None,
    )));
    assert!(has(&r, false, "struct-info/match-cast"), "{:?}", r.diagnostics);
    assert_sinfo(&sinfo_of(&r, "y"), &StructInfo::tensor_ndim(F32, 1));
    // A cast that can succeed binds its shape variables.
    let n = sv("n");
    let y2 = var("y2", None);
    let s = var("s", None);
    let r = check_module(&main_module(func(
        vec![x.clone()],
        seq(
            vec![block(vec![
                cast(&y2, e(&x), t(&[n.to_expr(), PrimExpr::int(3)], F32), 3),
                bind(&s, Expr::shape(vec![n.to_expr() + PrimExpr::int(1)]), 4),
            ])],
            e(&y2),
        ),
        None,
    )));
    assert!(r.is_valid(), "{:?}", r.diagnostics);
    assert!(!has(&r, false, "struct-info/match-cast"));
}

#[test]
fn rule12_tuple_get_item() {
    let tup = var("t", Some(StructInfo::Tuple(vec![tf(&[1]), tf(&[2])])));
    let r = one_binding(
        vec![tup.clone()],
        Expr::new(ExprKind::TupleGetItem {
            tuple: e(&tup),
            index: 1,
        }),
    );
    assert_sinfo(&sinfo_of(&r, "y"), &tf(&[2]));
    let r = one_binding(
        vec![tup.clone()],
        Expr::new(ExprKind::TupleGetItem {
            tuple: e(&tup),
            index: 2,
        }),
    );
    assert!(has(&r, true, "struct-info/tuple-get-item"));
    let x = var("x", Some(tf(&[2])));
    let r = one_binding(
        vec![x.clone()],
        Expr::new(ExprKind::TupleGetItem { tuple: e(&x), index: 0 }),
    );
    assert!(has(&r, true, "struct-info/tuple-get-item"));
}

fn packed(name: &str, args: Vec<Expr>, sinfo_args: Vec<StructInfo>) -> Expr {
    Expr::call(
        Expr::new(ExprKind::ExternFunc {
            global_symbol: name.into(),
        }),
        args,
        Attrs::new(),
        sinfo_args,
    )
}

#[test]
fn rule13_extern_func_default_derive_and_purity() {
    let x = var("x", Some(tf(&[2])));
    let y = var("y", None);
    let body = seq(
        vec![block(vec![bind(&y, packed("f", vec![e(&x)], vec![tf(&[5])]), 3)])],
        e(&y),
    );
    // Impure in a pure function: an error.
    let r = check_module(&main_module(func(vec![x.clone()], body.clone(), None)));
    assert!(has(&r, true, "struct-info/purity"), "{:?}", r.diagnostics);
    // pure=False: accepted, the result comes from sinfo_args.
    let mut f = func(vec![x.clone()], body.clone(), None);
    f.is_pure = false;
    let r = check_module(&main_module(f));
    assert!(r.is_valid(), "{:?}", r.diagnostics);
    assert_sinfo(&sinfo_of(&r, "y"), &tf(&[5]));
    // relax.force_pure: accepted.
    let mut f = func(vec![x.clone()], body, None);
    f.attrs.set("relax.force_pure", AttrValue::Bool(true));
    assert!(check_module(&main_module(f)).is_valid());
    // Two sinfo_args: a tuple; none: Object.
    let mut f = func(
        vec![x.clone()],
        seq(
            vec![block(vec![bind(&y, packed("g", vec![], vec![tf(&[1]), tf(&[2])]), 3)])],
            e(&y),
        ),
        None,
    );
    f.is_pure = false;
    assert_sinfo(
        &sinfo_of(&check_module(&main_module(f)), "y"),
        &StructInfo::Tuple(vec![tf(&[1]), tf(&[2])]),
    );
}

#[test]
fn rule14_impure_op_in_dataflow_block() {
    let x = var("x", Some(tf(&[2])));
    let y = dvar("y", None);
    let gv = var("gv", None);
    let mut attrs = Attrs::new();
    attrs.set("format", AttrValue::Str("{}".into()));
    let pr = Expr::call(Expr::op("relax.print"), vec![e(&x)], attrs, vec![]);
    let mut f = func(
        vec![x.clone()],
        seq(vec![dfblock(vec![bind(&y, pr, 3), bind(&gv, e(&x), 4)])], e(&gv)),
        None,
    );
    f.attrs.set("relax.force_pure", AttrValue::Bool(true));
    let r = check_module(&main_module(f));
    assert!(has(&r, true, "struct-info/purity"), "{:?}", r.diagnostics);
}

/// Check `main(x: x_sinfo)` whose body binds `f = callee` (line 3) and `y = f(x)`
/// (line 4) and returns `y`.
fn check_local_call(callee: Function, x_sinfo: StructInfo) -> CheckResult {
    let fv = var("f", None);
    let x = var("x", Some(x_sinfo));
    let y = var("y", None);
    let body = seq(
        vec![block(vec![
            bind(&fv, Expr::new(ExprKind::Function(callee)), 3),
            bind(&y, Expr::call(e(&fv), vec![e(&x)], Attrs::new(), vec![]), 4),
        ])],
        e(&y),
    );
    check_module(&main_module(func(vec![x.clone()], body, None)))
}

#[test]
fn rule14_beta_reduction_at_calls() {
    let n = sv("n");
    let p = var("p", Some(t(&[n.to_expr()], F32)));
    let callee = Function {
        ret_struct_info: Some(t(&[n.to_expr() + PrimExpr::int(1)], F32)),
        ..func(vec![p.clone()], seq(vec![], e(&p)), None)
    };
    let r = check_local_call(callee, tf(&[4]));
    // n := 4, the result is (4 + 1,) simplified to (5,).
    assert_sinfo(&sinfo_of(&r, "y"), &tf(&[5]));
    // The body of the callee returns (n,) where (n + 1,) is annotated: incompatible.
    assert!(has(&r, true, "struct-info/return"), "{:?}", r.diagnostics);
}

#[test]
fn rule14_argument_mismatch() {
    let p = var("p", Some(tf(&[3])));
    let callee = func(vec![p.clone()], seq(vec![], e(&p)), Some(tf(&[3])));
    let r = check_local_call(callee, StructInfo::shape(vec![PrimExpr::int(3)]));
    assert!(has(&r, true, "struct-info/call"), "{:?}", r.diagnostics);
}

#[test]
fn rule15_function_struct_info() {
    let p = var("p", Some(tf(&[3])));
    let callee = func(vec![p.clone()], seq(vec![], e(&p)), None);
    let r = one_binding(vec![], Expr::new(ExprKind::Function(callee)));
    let want = StructInfo::Func(FuncStructInfo {
        params: Some(vec![tf(&[3])]),
        ret: Box::new(tf(&[3])),
        purity: true,
        derive_func: None,
    });
    assert_sinfo(&sinfo_of(&r, "y"), &want);
}

#[test]
fn rule16_prim_func_struct_info() {
    use relax_ir::tir::{Buffer, TirVar};
    let a = TirVar::new_handle("A", Some(F32), None);
    let buf = Buffer::new("A", F32, vec![PrimExpr::int(8)]);
    let s = TirVar::new("s", DataType::INT32);
    let pf = relax_ir::PrimFunc {
        params: vec![a.clone(), s.clone()],
        buffer_map: vec![(a, buf)],
        ret_type: None,
        body: relax_ir::Stmt::Evaluate(PrimExpr::int(0)),
        attrs: Attrs::new(),
        private: false,
        s_tir: false,
        span: relax_ir::Span::NONE,
    };
    let got = relax_checker::derive::prim_func_struct_info(&pf);
    let want = StructInfo::Func(FuncStructInfo {
        params: Some(vec![tf(&[8]), StructInfo::prim(DataType::INT32)]),
        ret: Box::new(StructInfo::unit()),
        purity: false,
        derive_func: None,
    });
    assert_sinfo(&got, &want);
}

#[test]
fn shape_var_shape_is_kept_in_scope() {
    let s = var("s", Some(StructInfo::Shape(ShapeStructInfo { values: None, ndim: 2 })));
    let r = one_binding(vec![s.clone()], e(&s));
    assert_sinfo(
        &sinfo_of(&r, "y"),
        &StructInfo::Shape(ShapeStructInfo { values: None, ndim: 2 }),
    );
}

#[test]
fn registry_ops_infer_through_the_registry() {
    let n = sv("n");
    let x = var("x", Some(t(&[n.to_expr(), PrimExpr::int(4)], F32)));
    let r = one_binding(vec![x.clone()], call("relax.add", vec![e(&x), e(&x)]));
    assert!(r.is_valid(), "{:?}", r.diagnostics);
    assert_sinfo(&sinfo_of(&r, "y"), &t(&[n.to_expr(), PrimExpr::int(4)], F32));
}

#[test]
fn from_text_diagnostics_carry_parser_spans() {
    let src = r#"@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            lv = R.add(x, x)
            z: R.Tensor((2, 4), dtype="float32") = lv
            R.output(z)
        w = R.print(x, format="{}")
        return x
"#;
    let module = relax_ir::text::parse(src).expect("parses").into_module();
    let r = check_module(&module);
    assert!(!r.is_valid());
    let ann = r
        .errors()
        .find(|d| {
            d.rule
                .map(relax_ir::Rule::as_str)
                .unwrap_or("")
                .starts_with("struct-info/annotation")
        })
        .expect("annotation error");
    assert_eq!(ann.span.line, 7, "{ann}");
    let pur = r
        .errors()
        .find(|d| {
            d.rule
                .map(relax_ir::Rule::as_str)
                .unwrap_or("")
                .starts_with("struct-info/purity")
        })
        .expect("purity error");
    assert_eq!(pur.span.line, 9, "{pur}");
    let names: Vec<&str> = r.bindings.iter().map(|b| b.var.as_str()).collect();
    assert_eq!(names, vec!["lv", "z", "w"]);
    assert_sinfo(&sinfo_of(&r, "lv"), &tf(&[2, 3]));
}

/// The function's `tir_var_lower_bound` / `tir_var_upper_bound` attributes take part
/// in derivation, as in TVM: with `n >= 2`, `strided_slice(x, [1], [0], [1])` of a
/// `(1, n)` tensor derives `(1, T.min(1, n))` (`T.min(0, n)` is 0), which the
/// torch.export front end writes as the annotation (Falcon, Gemma and GPT-NeoX with
/// a symbolic length); without the bound it stays `T.min(1, n) - T.min(0, n)` and the
/// annotation is flagged as more specific than derivable.
#[test]
fn rule14_signature_bounds_simplify_derived_shapes() {
    let program = |attrs: &str| {
        format!(
            r#"
@R.function
def main(x: R.Tensor((1, "n"), dtype="int64")):
    n = T.int64()
    R.func_attr({{{attrs}}})
    with R.dataflow():
        y: R.Tensor((1, T.min(1, n)), dtype="int64") = R.strided_slice(x, (1,), (0,), (1,), (1,), assume_inbound=False)
        R.output(y)
    return y
"#
        )
    };
    let check = |src: &str| {
        let m = relax_ir::text::parse(src).expect("parses").into_module();
        check_module(&m)
    };
    let bounded = check(&program(
        r#""tir_var_lower_bound": {"n": 2}, "tir_var_upper_bound": {"n": 16}"#,
    ));
    assert!(bounded.diagnostics.is_empty(), "{:?}", bounded.diagnostics);
    let unbounded = check(&program(r#""num_input": 1"#));
    assert!(
        has(&unbounded, false, "struct-info/annotation"),
        "{:?}",
        unbounded.diagnostics
    );
}
