//! One positive and one negative program per well-formedness criterion of the
//! spec (built with constructors), checked through `check_module`.

mod common;

use common::build::*;
use relax_checker::check::{check_module, CheckResult};
use relax_ir::tir::BinOp;
use relax_ir::{
    AttrValue, Attrs, BindingBlock, DataType, Expr, ExprKind, FuncStructInfo, GlobalInfo, PrimExpr, PrimStructInfo,
    ShapeStructInfo, Span, StructInfo, Target, TensorStructInfo, VDevice,
};

fn rule_errors(r: &CheckResult, n: usize) -> Vec<String> {
    let prefix = format!("well-formed/{n}:");
    r.diagnostics
        .iter()
        .filter(|d| {
            d.rule
                .map(relax_ir::Rule::as_str)
                .is_some_and(|x| x.starts_with(&prefix))
        })
        .map(|d| d.to_string())
        .collect()
}

fn assert_rule(m: &relax_ir::IRModule, n: usize) -> CheckResult {
    let r = check_module(m);
    assert!(
        !rule_errors(&r, n).is_empty(),
        "expected a well-formed/{n} diagnostic, got {:#?}",
        r.diagnostics
    );
    r
}

fn assert_clean(m: &relax_ir::IRModule) -> CheckResult {
    let r = check_module(m);
    let errs: Vec<_> = r.errors().map(|d| d.to_string()).collect();
    assert!(errs.is_empty(), "unexpected errors: {errs:#?}");
    assert!(r.well_formed);
    r
}

#[test]
fn wf01_dataflow_var_outside_dataflow_block() {
    let x = var("x", Some(tf(&[2])));
    let lv = dvar("lv", None);
    let bad = main_of(vec![x.clone()], vec![block(vec![bind(&lv, e(&x), 3)])], e(&lv));
    let r = assert_rule(&bad, 1);
    let d = r
        .diagnostics
        .iter()
        .find(|d| {
            d.rule
                .map(relax_ir::Rule::as_str)
                .unwrap_or("")
                .starts_with("well-formed/1")
        })
        .unwrap();
    assert_eq!(d.span, Span::new(3, 9), "the diagnostic points at the binding");
    assert!(d.message.contains("lv"), "{}", d.message);
    // Used outside its block.
    let gv = var("gv", None);
    let bad2 = main_of(
        vec![x.clone()],
        vec![dfblock(vec![bind(&lv, e(&x), 3)]), block(vec![bind(&gv, e(&lv), 4)])],
        e(&gv),
    );
    assert_rule(&bad2, 1);
    let good = main_of(
        vec![x.clone()],
        vec![dfblock(vec![bind(&lv, e(&x), 3), bind(&gv, e(&lv), 4)])],
        e(&gv),
    );
    assert_clean(&good);
}

#[test]
fn wf02_variable_bound_twice() {
    let x = var("x", Some(tf(&[2])));
    let y = var("y", None);
    let bad = main_block(vec![x.clone()], vec![bind(&y, e(&x), 3), bind(&y, e(&x), 4)], e(&y));
    let r = assert_rule(&bad, 2);
    assert!(rule_errors(&r, 2)[0].contains("4:9"), "{:?}", rule_errors(&r, 2));
    // The same parameter in two functions.
    let f1 = func(vec![x.clone()], seq(vec![], e(&x)), None);
    let f2 = func(vec![x.clone()], seq(vec![], e(&x)), None);
    assert_rule(&module(vec![("f1", f1), ("f2", f2)]), 2);
}

#[test]
fn wf03_variable_used_before_bound() {
    let x = var("x", Some(tf(&[2])));
    let y = var("y", None);
    let z = var("z", None);
    let bad = main_block(vec![x.clone()], vec![bind(&y, e(&z), 3), bind(&z, e(&x), 4)], e(&y));
    let r = assert_rule(&bad, 3);
    assert!(rule_errors(&r, 3)[0].contains('z'));
    // An undefined global.
    let g = var("g", None);
    let bad_global = main_block(
        vec![x.clone()],
        vec![bind(
            &g,
            Expr::new(ExprKind::GlobalVar(relax_ir::GlobalVar::new("nope"))),
            3,
        )],
        e(&x),
    );
    assert_rule(&bad_global, 3);
    let good = main_block(vec![x.clone()], vec![bind(&z, e(&x), 3), bind(&y, e(&z), 4)], e(&y));
    assert_clean(&good);
}

#[test]
fn wf04_return_annotation_shape_vars() {
    let n = sv("n");
    let m = sv("m");
    let x = var("x", Some(t(&[n.to_expr()], F32)));
    let bad = main_module(func(vec![x.clone()], seq(vec![], e(&x)), Some(t(&[m.to_expr()], F32))));
    assert_rule(&bad, 4);
    let good = main_module(func(vec![x.clone()], seq(vec![], e(&x)), Some(t(&[n.to_expr()], F32))));
    assert_clean(&good);
}

#[test]
fn wf05_shape_var_used_before_bound() {
    let m = sv("m");
    let x = var("x", Some(StructInfo::tensor_ndim(F32, 1)));
    let s = var("s", None);
    let y = var("y", None);
    let bad = main_block(
        vec![x.clone()],
        vec![
            bind(&s, Expr::shape(vec![m.to_expr() * PrimExpr::int(2)]), 3),
            cast(&y, e(&x), t(&[m.to_expr()], F32), 4),
        ],
        e(&y),
    );
    assert_rule(&bad, 5);
    let good = main_block(
        vec![x.clone()],
        vec![
            cast(&y, e(&x), t(&[m.to_expr()], F32), 3),
            bind(&s, Expr::shape(vec![m.to_expr() * PrimExpr::int(2)]), 4),
        ],
        e(&y),
    );
    assert_clean(&good);
}

#[test]
fn wf06_signature_var_in_binding_position() {
    let n = sv("n");
    let x = var("x", Some(t(&[n.to_expr() * PrimExpr::int(2)], F32)));
    let bad = main_of(vec![x.clone()], vec![], e(&x));
    assert_rule(&bad, 6);
    // Any order among the parameters is fine.
    let x2 = var("x", Some(t(&[n.to_expr() * PrimExpr::int(2)], F32)));
    let y = var("y", Some(t(&[n.to_expr()], F32)));
    let good = main_of(vec![x2.clone(), y], vec![], e(&x2));
    assert_clean(&good);
}

#[test]
fn wf07_no_if_or_recursion_in_dataflow() {
    let c = var("c", Some(StructInfo::prim(DataType::BOOL)));
    let x = var("x", Some(tf(&[2])));
    let y = dvar("y", None);
    let ife = Expr::new(ExprKind::If {
        cond: e(&c),
        then_branch: seq(vec![], e(&x)),
        else_branch: seq(vec![], e(&x)),
    });
    let gv = var("gv", None);
    let bad = main_of(
        vec![c.clone(), x.clone()],
        vec![dfblock(vec![bind(&y, ife.clone(), 3), bind(&gv, e(&y), 4)])],
        e(&gv),
    );
    assert_rule(&bad, 7);
    // Recursive call in a dataflow block.
    let gvar = Expr::new(ExprKind::GlobalVar(relax_ir::GlobalVar::new("main")));
    let rec = main_module(func(
        vec![x.clone()],
        seq(
            vec![dfblock(vec![bind(
                &gv,
                Expr::call(gvar, vec![e(&x)], Attrs::new(), vec![]),
                3,
            )])],
            e(&gv),
        ),
        Some(tf(&[2])),
    ));
    assert_rule(&rec, 7);
    let y2 = var("y2", None);
    let good = main_of(vec![c.clone(), x.clone()], vec![block(vec![bind(&y2, ife, 3)])], e(&y2));
    assert_clean(&good);
}

#[test]
fn wf08_recursive_function_needs_return_annotation() {
    let x = var("x", Some(tf(&[2])));
    let gv = var("gv", None);
    let gvar = Expr::new(ExprKind::GlobalVar(relax_ir::GlobalVar::new("main")));
    let body = seq(
        vec![block(vec![bind(
            &gv,
            Expr::call(gvar, vec![e(&x)], Attrs::new(), vec![]),
            3,
        )])],
        e(&gv),
    );
    assert_rule(&main_module(func(vec![x.clone()], body.clone(), None)), 8);
    let r = check_module(&main_module(func(vec![x.clone()], body, Some(tf(&[2])))));
    assert!(rule_errors(&r, 8).is_empty());
}

#[test]
fn wf09_op_only_as_callee() {
    let x = var("x", Some(tf(&[2])));
    let y = var("y", None);
    let bad = main_binding(&x, &y, Expr::tuple(vec![e(&x), Expr::op("relax.add")]));
    assert_rule(&bad, 9);
}

#[test]
fn wf10_annotation_ndim_matches_shape() {
    let x = var("x", Some(tf(&[2])));
    let bad_si = StructInfo::Tensor(TensorStructInfo {
        shape: Some(Expr::shape(vec![PrimExpr::int(2)])),
        dtype: F32,
        vdevice: None,
        ndim: 3,
    });
    let y = var("y", Some(bad_si));
    let bad = main_of(vec![x.clone()], vec![block(vec![bind(&y, e(&x), 3)])], e(&y));
    assert_rule(&bad, 10);
    let y2 = var("y", Some(tf(&[2])));
    assert_clean(&main_block(vec![x.clone()], vec![bind(&y2, e(&x), 3)], e(&y2)));
}

#[test]
fn wf11_closure_in_dataflow_block_captures_dataflow_var() {
    let x = var("x", Some(tf(&[2])));
    let lv = dvar("lv", None);
    let f = var("f", None);
    let inner = relax_ir::Function {
        params: vec![],
        ..func(vec![], seq(vec![], e(&lv)), None)
    };
    let gv = var("gv", None);
    let bad = main_of(
        vec![x.clone()],
        vec![dfblock(vec![
            bind(&lv, e(&x), 3),
            bind(&f, Expr::new(ExprKind::Function(inner)), 4),
            bind(&gv, e(&x), 5),
        ])],
        e(&gv),
    );
    assert_rule(&bad, 11);
}

#[test]
fn wf12_entry_point_warning() {
    let x = var("x", Some(tf(&[2])));
    let mut f = func(vec![x.clone()], seq(vec![], e(&x)), None);
    f.private = true;
    let r = check_module(&main_module(f));
    assert!(r.is_valid(), "criterion 12 is only a warning");
    assert!(r.diagnostics.iter().any(|d| !d.is_error()
        && d.rule
            .map(relax_ir::Rule::as_str)
            .unwrap_or("")
            .starts_with("well-formed/12")));
}

#[test]
fn wf13_global_symbol_matches_name() {
    let x = var("x", Some(tf(&[2])));
    let mut f = func(vec![x.clone()], seq(vec![], e(&x)), None);
    f.attrs.set("global_symbol", AttrValue::Str("other".into()));
    assert_rule(&main_module(f.clone()), 13);
    f.attrs.set("global_symbol", AttrValue::Str("main".into()));
    assert_clean(&main_module(f));
}

#[test]
fn wf14_tensor_shape_in_scope() {
    let x = var("x", Some(tf(&[2])));
    let s = var("s", Some(StructInfo::Shape(ShapeStructInfo { values: None, ndim: 1 })));
    let ann = StructInfo::Tensor(TensorStructInfo {
        shape: Some(e(&s)),
        dtype: F32,
        vdevice: None,
        ndim: 1,
    });
    let y = var("y", Some(ann.clone()));
    let bad = main_of(vec![x.clone()], vec![block(vec![bind(&y, e(&x), 3)])], e(&x));
    assert_rule(&bad, 14);
    let y2 = var("y", Some(ann));
    let good = main_block(vec![x.clone(), s.clone()], vec![bind(&y2, e(&x), 3)], e(&x));
    let r = check_module(&good);
    assert!(rule_errors(&r, 14).is_empty(), "{:?}", r.diagnostics);
}

#[test]
fn wf15_shape_values() {
    let k = sv("k");
    let x = var("x", Some(tf(&[2])));
    // A shape variable out of scope (criterion 5 covers shape annotations).
    let s = var("s", Some(StructInfo::shape(vec![k.to_expr() + PrimExpr::int(1)])));
    let bad = main_binding(&x, &s, Expr::shape(vec![PrimExpr::int(2)]));
    assert_rule(&bad, 5);
    // ndim must match the number of values.
    let bad_si = StructInfo::Shape(ShapeStructInfo {
        values: Some(vec![PrimExpr::int(2)]),
        ndim: 2,
    });
    let sh = var(
        "sh",
        Some(StructInfo::Shape(ShapeStructInfo { values: None, ndim: -1 })),
    );
    let c = var("c", None);
    assert_rule(
        &main_block(vec![x.clone(), sh.clone()], vec![cast(&c, e(&sh), bad_si, 3)], e(&x)),
        15,
    );
}

#[test]
fn wf16_prim_value_vars_in_scope() {
    let k = sv("k");
    let x = var("x", Some(tf(&[2])));
    let p = var("p", Some(StructInfo::prim_value(k.to_expr() + PrimExpr::int(1))));
    let bad = main_binding(&x, &p, Expr::new(ExprKind::PrimValue(PrimExpr::int(3))));
    assert_rule(&bad, 16);
}

#[test]
fn wf17_func_struct_info_params_xor_derive() {
    let x = var("x", Some(tf(&[2])));
    let bad_fsi = StructInfo::Func(FuncStructInfo {
        params: Some(vec![]),
        ret: Box::new(StructInfo::Object),
        purity: false,
        derive_func: Some("default_derive".into()),
    });
    let f = var("f", Some(bad_fsi));
    let bad = main_of(vec![x.clone(), f], vec![], e(&x));
    assert_rule(&bad, 17);
}

#[test]
fn wf18_prim_value_is_scalar_constant() {
    let fv = relax_ir::TirVar::new("a", DataType::FLOAT32);
    let x = var("x", Some(tf(&[2])));
    let p = var("p", None);
    let pv = Expr::new(ExprKind::PrimValue(PrimExpr::binary(
        BinOp::Add,
        fv.to_expr(),
        PrimExpr::float_of(1.0, DataType::FLOAT32),
    )));
    let bad = main_of(vec![x.clone()], vec![block(vec![bind(&p, pv, 3)])], e(&x));
    assert_rule(&bad, 18);
    let ok = Expr::new(ExprKind::PrimValue(PrimExpr::float_of(1.0, DataType::FLOAT32)));
    assert_clean(&main_of(vec![x.clone()], vec![block(vec![bind(&p, ok, 3)])], e(&x)));
}

#[test]
fn wf19_prim_struct_info_dtype() {
    let x = var("x", Some(tf(&[2])));
    let h = var("h", Some(StructInfo::prim(DataType::HANDLE)));
    assert_rule(&main_of(vec![x.clone(), h], vec![], e(&x)), 19);
}

#[test]
fn wf20_supported_dtypes() {
    let x = var("x", Some(StructInfo::tensor_ndim(DataType::FLOAT32.with_lanes(4), 1)));
    assert_rule(&main_of(vec![x.clone()], vec![], e(&x)), 20);
    let y = var("y", Some(StructInfo::tensor_ndim(DataType::int(7), 1)));
    assert_rule(&main_of(vec![y.clone()], vec![], e(&y)), 20);
}

#[test]
fn wf21_force_pure_requires_pure() {
    let x = var("x", Some(tf(&[2])));
    let mut f = func(vec![x.clone()], seq(vec![], e(&x)), None);
    f.attrs.set("relax.force_pure", AttrValue::Bool(true));
    f.is_pure = false;
    assert_rule(&main_module(f.clone()), 21);
    f.is_pure = true;
    assert_clean(&main_module(f));
}

#[test]
fn wf22_prim_value_dtype_matches() {
    let k = sv("k");
    let x = var("x", Some(tf(&[2])));
    let bad = StructInfo::Prim(PrimStructInfo {
        dtype: DataType::INT32,
        value: Some(k.to_expr()),
    });
    let p = var("p", Some(bad));
    assert_rule(&main_of(vec![x.clone(), p], vec![], e(&x)), 22);
}

#[test]
fn wf23_call_tir_inplace_normalization() {
    let x = var("x", Some(tf(&[2])));
    let y = var("y", None);
    let mut attrs = Attrs::new();
    attrs.set(
        "inplace_indices",
        AttrValue::List(vec![AttrValue::Int(0), AttrValue::Int(0)]),
    );
    let callee = Expr::new(ExprKind::GlobalVar(relax_ir::GlobalVar::new("main")));
    let c = Expr::call(
        Expr::op("relax.call_tir_inplace"),
        vec![callee, Expr::tuple(vec![e(&x), e(&x)])],
        attrs,
        vec![StructInfo::Tuple(vec![tf(&[2]), tf(&[2])])],
    );
    let bad = main_module(func(
        vec![x.clone()],
        seq(vec![block(vec![bind(&y, c, 3)])], e(&x)),
        Some(tf(&[2])),
    ));
    let r = assert_rule(&bad, 23);
    assert!(rule_errors(&r, 23)[0].contains("unique"), "{:?}", rule_errors(&r, 23));
}

#[test]
fn wf24_vdevice_declared() {
    let vd = VDevice {
        target: Target::from_kind("cuda"),
        vdevice_id: 0,
        memory_scope: "global".into(),
    };
    let ann = StructInfo::Tensor(TensorStructInfo {
        shape: None,
        dtype: F32,
        vdevice: Some(vd.clone()),
        ndim: 1,
    });
    let x = var("x", Some(ann));
    let m = main_of(vec![x.clone()], vec![], e(&x));
    assert_rule(&m, 24);
    let mut m2 = m.clone();
    m2.global_infos.insert("vdevice".into(), vec![GlobalInfo::VDevice(vd)]);
    let r = check_module(&m2);
    assert!(rule_errors(&r, 24).is_empty(), "{:?}", r.diagnostics);
}

#[test]
fn normal_form_nested_calls_are_fine_after_normalization() {
    let x = var("x", Some(tf(&[2])));
    let body = call("relax.add", vec![call("relax.add", vec![e(&x), e(&x)]), e(&x)]);
    let r = assert_clean(&main_module(func(vec![x.clone()], body.clone(), None)));
    let names: Vec<String> = r.bindings.iter().map(|b| b.var.clone()).collect();
    assert_eq!(names, vec!["gv", "gv1"]);
    // The raw module violates the normal form.
    let raw = main_module(func(vec![x.clone()], body, None));
    assert_normal_form_violation(&raw, "normal-form/");
}

#[test]
fn normal_form_blocks_consolidated() {
    let x = var("x", Some(tf(&[2])));
    let a = var("a", None);
    let b = var("b", None);
    let raw = main_of(
        vec![x.clone()],
        vec![
            block(vec![bind(&a, e(&x), 3)]),
            block(vec![]),
            block(vec![bind(&b, e(&a), 4)]),
        ],
        e(&b),
    );
    assert_normal_form_violation(&raw, "normal-form/4");
    // The normalizer merges them.
    let r = assert_clean(&raw);
    let relax_ir::BaseFunc::Relax(f) = r.module.get("main").unwrap() else {
        panic!()
    };
    let ExprKind::Seq(s) = f.body.kind() else { panic!() };
    assert_eq!(s.blocks.len(), 1);
    assert_eq!(s.blocks[0].bindings.len(), 2);
}

/// Panic unless the well-formedness check of `raw` reports a rule starting with `rule`.
fn assert_normal_form_violation(raw: &relax_ir::IRModule, rule: &str) {
    let diags = relax_checker::well_formed::check_module(raw, Default::default());
    assert!(
        diags
            .iter()
            .any(|d| d.rule.map(relax_ir::Rule::as_str).unwrap_or("").starts_with(rule)),
        "{diags:?}"
    );
}

/// The module of one public pure function `main(params)` whose body is `blocks`
/// then `body`.
fn main_of(params: Vec<relax_ir::Var>, blocks: Vec<BindingBlock>, body: Expr) -> relax_ir::IRModule {
    main_module(func(params, seq(blocks, body), None))
}

/// `main(x)` that binds `v = value` (at line 3) and returns `x`.
fn main_binding(x: &relax_ir::Var, v: &relax_ir::Var, value: Expr) -> relax_ir::IRModule {
    main_block(vec![x.clone()], vec![bind(v, value, 3)], e(x))
}

/// [`main_of`] with one (non-dataflow) block of `bindings`.
fn main_block(params: Vec<relax_ir::Var>, bindings: Vec<relax_ir::Binding>, body: Expr) -> relax_ir::IRModule {
    main_of(params, vec![block(bindings)], body)
}
