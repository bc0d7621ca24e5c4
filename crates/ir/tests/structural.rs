//! Structural equality and hashing: alpha-equivalence, mismatch paths, hashes.

#[path = "common/relax_build.rs"]
mod relax_build;

use relax_build::func;
use relax_ir::relax::{Binding, BindingBlock, Expr, ExprKind, Function, NDArray, SeqExpr, StructInfo, Var};
use relax_ir::structural::*;
use relax_ir::tir::{BinOp, Buffer, For, ForKind, PrimExpr, PrimFunc, Stmt, TirVar};
use relax_ir::{AttrValue, Attrs, BaseFunc, DataType, IRModule, Span};

fn call(op: &str, args: Vec<Expr>) -> Expr {
    Expr::call(Expr::op(op), args, Attrs::new(), vec![])
}

fn seq(bindings: Vec<Binding>, body: Expr, dataflow: bool) -> Expr {
    Expr::new(ExprKind::Seq(SeqExpr {
        blocks: vec![BindingBlock {
            bindings,
            is_dataflow: dataflow,
            span: Span::NONE,
        }],
        body,
    }))
}

fn bind(var: &Var, value: Expr) -> Binding {
    Binding::VarBinding {
        var: var.clone(),
        value,
        span: Span::NONE,
    }
}

/// `main(x: R.Tensor((n, 4), "float32"))`: lv = add(x, x); gv = multiply(lv, x); return gv.
/// `swap` swaps the operands of the multiply.
fn mlp(names: &str, swap: bool) -> Function {
    let n = TirVar::new(format!("n{names}"), DataType::INT64);
    let ty = StructInfo::tensor(vec![n.to_expr(), PrimExpr::int(4)], DataType::FLOAT32);
    let x = Var::new(format!("x{names}"), Some(ty.clone()));
    let lv = Var::new(format!("lv{names}"), Some(ty.clone()));
    let gv = Var::new(format!("gv{names}"), Some(ty.clone()));
    let mul_args = if swap {
        vec![x.to_expr(), lv.to_expr()]
    } else {
        vec![lv.to_expr(), x.to_expr()]
    };
    let body = seq(
        vec![
            bind(&lv, call("relax.add", vec![x.to_expr(), x.to_expr()])),
            bind(&gv, call("relax.multiply", mul_args)),
        ],
        gv.to_expr(),
        false,
    );
    func(vec![x], body, Some(ty))
}

/// A TIR kernel `B[i] = A[i] + 1.0` over `n` elements (or a constant extent).
fn add_one(names: &str, extent: Option<i64>) -> PrimFunc {
    let n = TirVar::new(format!("n{names}"), DataType::INT64);
    let len = extent.map(PrimExpr::int).unwrap_or_else(|| n.to_expr());
    let a = Buffer::new(format!("A{names}"), DataType::FLOAT32, vec![len.clone()]);
    let b = Buffer::new(format!("B{names}"), DataType::FLOAT32, vec![len.clone()]);
    let pa = TirVar::new_handle(format!("a{names}"), None, None);
    let pb = TirVar::new_handle(format!("b{names}"), None, None);
    let i = TirVar::new(format!("i{names}"), DataType::INT64);
    let value = PrimExpr::load(&a, vec![i.to_expr()]) + PrimExpr::float_of(1.0, DataType::FLOAT32);
    let store = Stmt::BufferStore {
        buffer: b.clone(),
        value,
        indices: vec![i.to_expr()],
        span: Span::NONE,
    };
    let body = Stmt::For(For::from_zero(i.clone(), len, ForKind::Serial, store));
    let mut attrs = Attrs::new();
    attrs.set("global_symbol", AttrValue::Str("add_one".into()));
    attrs.set("tir.noalias", AttrValue::Bool(true));
    PrimFunc {
        params: vec![pa.clone(), pb.clone()],
        buffer_map: vec![(pa, a), (pb, b)],
        ret_type: None,
        body,
        attrs,
        private: false,
        s_tir: false,
        span: Span::NONE,
    }
}

#[test]
fn alpha_renamed_functions_are_equal_with_equal_hashes() {
    let (f, g) = (mlp("", false), mlp("_other", false));
    assert!(structural_equal_function(&f, &g));
    assert_eq!(structural_hash_function(&f), structural_hash_function(&g));
    let h = mlp("", true);
    let err = StructuralEqual::new().function(&f, &h).unwrap_err();
    assert_eq!(err.path, "body.blocks[0].bindings[1].value.args[0]");
    assert!(err.reason.contains("lv"), "{err}");
    assert_ne!(structural_hash_function(&f), structural_hash_function(&h));
}

#[test]
fn module_equality_reports_paths_and_ignores_order() {
    let mut a = IRModule::new();
    a.add("main", BaseFunc::Relax(mlp("", false)));
    a.add("add_one", BaseFunc::Prim(add_one("", None)));
    let mut b = IRModule::new();
    b.add("add_one", BaseFunc::Prim(add_one("2", None)));
    b.add("main", BaseFunc::Relax(mlp("2", false)));
    assert!(structural_equal_module(&a, &b));
    assert_eq!(structural_hash_module(&a), structural_hash_module(&b));

    let mut c = IRModule::new();
    c.add("main", BaseFunc::Relax(mlp("3", true)));
    c.add("add_one", BaseFunc::Prim(add_one("3", None)));
    let err = check_structural_equal_module(&a, &c).unwrap_err();
    assert_eq!(err.path, "functions[main].body.blocks[0].bindings[1].value.args[0]");

    let mut d = IRModule::new();
    d.add("main", BaseFunc::Relax(mlp("4", false)));
    d.add("add_two", BaseFunc::Prim(add_one("4", None)));
    assert!(!structural_equal_module(&a, &d));
    assert_ne!(structural_hash_module(&a), structural_hash_module(&d));

    let mut e = IRModule::new();
    e.add("main", BaseFunc::Relax(mlp("5", false)));
    e.add("add_one", BaseFunc::Prim(add_one("5", None)));
    e.attrs.set("system_lib_prefix", AttrValue::Str("x".into()));
    let err = check_structural_equal_module(&a, &e).unwrap_err();
    assert_eq!(err.path, "attrs");
}

#[test]
fn prim_funcs_hash_independently_of_variables() {
    let (f, g) = (add_one("", None), add_one("_k", None));
    assert!(structural_equal_prim_func(&f, &g));
    assert_eq!(structural_hash_prim_func(&f), structural_hash_prim_func(&g));
    let (c1, c2, c3) = (add_one("", Some(16)), add_one("x", Some(16)), add_one("", Some(32)));
    assert!(structural_equal_prim_func(&c1, &c2));
    assert_eq!(structural_hash_prim_func(&c1), structural_hash_prim_func(&c2));
    let err = StructuralEqual::new().prim_func(&c1, &c3).unwrap_err();
    assert_eq!(err.path, "buffer_map[0].shape[0]");
    assert_ne!(structural_hash_prim_func(&c1), structural_hash_prim_func(&c3));
    assert!(!structural_equal_prim_func(&f, &c1));
}

#[test]
fn match_cast_defines_shape_vars() {
    let build = |tag: &str, same_dim: bool| {
        let x = Var::new(format!("x{tag}"), Some(StructInfo::tensor_ndim(DataType::FLOAT32, 2)));
        let m = TirVar::new(format!("m{tag}"), DataType::INT64);
        let k = TirVar::new(format!("k{tag}"), DataType::INT64);
        let second = if same_dim { m.to_expr() } else { k.to_expr() };
        let si = StructInfo::tensor(vec![m.to_expr(), second], DataType::FLOAT32);
        let y = Var::new(format!("y{tag}"), Some(si.clone()));
        let mc = Binding::MatchCast {
            var: y.clone(),
            value: x.to_expr(),
            struct_info: si,
            span: Span::NONE,
        };
        let shape = Var::new("s", None);
        let out = bind(&shape, Expr::shape(vec![&m.to_expr() * &PrimExpr::int(2)]));
        func(vec![x], seq(vec![mc, out], shape.to_expr(), false), None)
    };
    assert!(structural_equal_function(&build("a", true), &build("b", true)));
    assert_eq!(
        structural_hash_function(&build("a", true)),
        structural_hash_function(&build("b", true))
    );
    // (m, m) against (m, k): the second dimension maps k to m on one side only.
    assert!(!structural_equal_function(&build("a", true), &build("b", false)));
    assert_ne!(
        structural_hash_function(&build("a", true)),
        structural_hash_function(&build("b", false))
    );
}

#[test]
fn free_variables_compare_by_identity_unless_mapped() {
    let n = TirVar::new("n", DataType::INT64);
    let m = TirVar::new("n", DataType::INT64);
    let e1 = &n.to_expr() + &PrimExpr::int(1);
    let e2 = &m.to_expr() + &PrimExpr::int(1);
    assert!(structural_equal_prim_expr(&e1, &(&n.to_expr() + &PrimExpr::int(1))));
    assert!(!structural_equal_prim_expr(&e1, &e2));
    assert!(StructuralEqual::new().map_free_vars(true).prim_expr(&e1, &e2).is_ok());
    assert_eq!(structural_hash_prim_expr(&e1), structural_hash_prim_expr(&e2));
    // Swapped operands are different.
    let e3 = &PrimExpr::int(1) + &n.to_expr();
    let err = StructuralEqual::new().prim_expr(&e1, &e3).unwrap_err();
    assert_eq!(err.path, "a");
    assert_ne!(structural_hash_prim_expr(&e1), structural_hash_prim_expr(&e3));
    // Dtypes matter.
    assert!(!structural_equal_prim_expr(
        &PrimExpr::int(1),
        &PrimExpr::int_of(1, DataType::INT32)
    ));
    // StructInfo with shared shape variables.
    let s1 = StructInfo::tensor(vec![n.to_expr()], DataType::FLOAT32);
    let s2 = StructInfo::tensor(vec![n.to_expr()], DataType::FLOAT32);
    let s3 = StructInfo::tensor(vec![m.to_expr()], DataType::FLOAT32);
    assert!(structural_equal_struct_info(&s1, &s2));
    assert!(!structural_equal_struct_info(&s1, &s3));
    assert!(!structural_equal_struct_info(
        &s1,
        &StructInfo::tensor(vec![n.to_expr()], DataType::FLOAT16)
    ));
    // Relax free vars.
    let x = Var::new("x", None);
    let y = Var::new("x", None);
    let c1 = call("relax.add", vec![x.to_expr(), x.to_expr()]);
    let c2 = call("relax.add", vec![y.to_expr(), y.to_expr()]);
    let c3 = call("relax.add", vec![x.to_expr(), y.to_expr()]);
    assert!(!structural_equal_expr(&c1, &c2));
    assert!(StructuralEqual::new().map_free_vars(true).expr(&c1, &c2).is_ok());
    assert!(StructuralEqual::new().map_free_vars(true).expr(&c1, &c3).is_err());
    assert_ne!(structural_hash_expr(&c1), structural_hash_expr(&c3));
}

#[test]
fn constants_compare_by_bits_and_attrs_as_maps() {
    let f = |v: f64| PrimExpr::float_of(v, DataType::FLOAT32);
    assert!(structural_equal_prim_expr(&f(f64::NAN), &f(f64::NAN)));
    assert_eq!(
        structural_hash_prim_expr(&f(f64::NAN)),
        structural_hash_prim_expr(&f(f64::NAN))
    );
    assert!(!structural_equal_prim_expr(&f(0.0), &f(-0.0)));
    let t = |bytes: Vec<u8>| {
        Expr::new(ExprKind::Constant {
            data: std::sync::Arc::new(NDArray {
                dtype: DataType::FLOAT32,
                shape: vec![1],
                data: bytes,
            }),
        })
    };
    assert!(structural_equal_expr(&t(vec![0, 0, 128, 63]), &t(vec![0, 0, 128, 63])));
    assert!(!structural_equal_expr(&t(vec![0, 0, 128, 63]), &t(vec![0, 0, 0, 64])));
    let mut a = Attrs::new();
    a.set("axis", AttrValue::Int(1));
    a.set("keepdims", AttrValue::Bool(false));
    let mut b = Attrs::new();
    b.set("keepdims", AttrValue::Bool(false));
    b.set("axis", AttrValue::Int(1));
    assert!(attrs_equal(&a, &b));
    b.set("axis", AttrValue::Int(2));
    assert!(!attrs_equal(&a, &b));
    assert!(attr_value_equal(
        &AttrValue::Float(f64::NAN),
        &AttrValue::Float(f64::NAN)
    ));
    let ca = Expr::call(Expr::op("relax.sum"), vec![], a.clone(), vec![]);
    let mut a2 = Attrs::new();
    a2.set("keepdims", AttrValue::Bool(false));
    a2.set("axis", AttrValue::Int(1));
    let cb = Expr::call(Expr::op("relax.sum"), vec![], a2, vec![]);
    assert!(structural_equal_expr(&ca, &cb));
    assert_eq!(structural_hash_expr(&ca), structural_hash_expr(&cb));
}

#[test]
fn dataflow_and_binding_kinds_matter() {
    let build = |dataflow: bool| {
        let x = Var::new("x", Some(StructInfo::prim(DataType::INT64)));
        let y = if dataflow {
            Var::new_dataflow("y", None)
        } else {
            Var::new("y", None)
        };
        func(
            vec![x.clone()],
            seq(vec![bind(&y, x.to_expr())], x.to_expr(), dataflow),
            None,
        )
    };
    assert!(structural_equal_function(&build(true), &build(true)));
    let err = StructuralEqual::new()
        .function(&build(true), &build(false))
        .unwrap_err();
    assert_eq!(err.path, "body.blocks[0]");
    // A free TIR var used in a parameter annotation is a definition.
    let p = |name: &str| {
        let n = TirVar::new(name, DataType::INT64);
        let x = Var::new("x", Some(StructInfo::prim_value(n.to_expr())));
        func(
            vec![x],
            Expr::new(ExprKind::PrimValue(&n.to_expr() * &PrimExpr::int(2))),
            None,
        )
    };
    assert!(structural_equal_function(&p("n"), &p("m")));
    assert_eq!(structural_hash_function(&p("n")), structural_hash_function(&p("m")));
}

/// A kernel using every TIR statement kind. `mutation` (1..) changes one detail.
fn rich_kernel(mutation: u32) -> PrimFunc {
    use relax_ir::tir::{Block, BufferRegion, IterKind, IterVar, MatchBufferRegion, Range};
    let mu = |k: u32| mutation == k;
    let n = TirVar::new("n", DataType::INT64);
    let a = Buffer::new("A", DataType::FLOAT32, vec![n.to_expr(), PrimExpr::int(8)]);
    let b = Buffer::new("B", DataType::FLOAT32, vec![n.to_expr()]);
    let pa = TirVar::new_handle("a", None, None);
    let pb = TirVar::new_handle("b", None, None);
    let scratch = Buffer::with_scope(
        "S",
        DataType::FLOAT32,
        vec![PrimExpr::int(8)],
        if mu(1) { "shared" } else { "local" },
    );
    let sub = Buffer::new("sub", DataType::FLOAT32, vec![PrimExpr::int(8)]);
    let (vi, vk) = (TirVar::new("vi", DataType::INT64), TirVar::new("vk", DataType::INT64));
    let (i, k) = (TirVar::new("i", DataType::INT64), TirVar::new("k", DataType::INT64));
    let tx = TirVar::new("tx", DataType::INT64);
    let t = TirVar::new("t", DataType::FLOAT32);
    let f32 = |v: f64| PrimExpr::float_of(v, DataType::FLOAT32);
    let load_a = PrimExpr::load(&a, vec![vi.to_expr(), vk.to_expr()]);
    let load_a = if mu(2) {
        PrimExpr::load(&a, vec![vk.to_expr(), vi.to_expr()])
    } else {
        load_a
    };
    let update = Stmt::Let {
        var: t.clone(),
        value: PrimExpr::call(if mu(3) { "log" } else { "exp" }, DataType::FLOAT32, vec![load_a]),
        body: Box::new(Stmt::BufferStore {
            buffer: b.clone(),
            value: PrimExpr::load(&b, vec![vi.to_expr()]) + t.to_expr(),
            indices: vec![vi.to_expr()],
            span: Span::NONE,
        }),
    };
    let full = |buf: &Buffer, dims: Vec<PrimExpr>| BufferRegion {
        buffer: buf.clone(),
        region: dims.into_iter().map(Range::from_extent).collect(),
    };
    let mut ann = Attrs::new();
    if mu(4) {
        ann.set("meta_schedule.unroll", AttrValue::Int(16));
    }
    let block = Block {
        name: if mu(5) { "reduce2".into() } else { "reduce".into() },
        iter_vars: vec![
            IterVar {
                var: vi.clone(),
                dom: Range::from_extent(n.to_expr()),
                kind: IterKind::DataPar,
            },
            IterVar {
                var: vk.clone(),
                dom: Range::from_extent(PrimExpr::int(8)),
                kind: if mu(6) { IterKind::DataPar } else { IterKind::CommReduce },
            },
        ],
        reads: vec![full(&a, vec![n.to_expr(), PrimExpr::int(8)])],
        writes: vec![full(&b, vec![n.to_expr()])],
        init: Some(Box::new(Stmt::BufferStore {
            buffer: b.clone(),
            value: f32(if mu(7) { -0.0 } else { 0.0 }),
            indices: vec![vi.to_expr()],
            span: Span::NONE,
        })),
        alloc_buffers: vec![scratch.clone()],
        match_buffers: vec![MatchBufferRegion {
            buffer: sub,
            source: full(&a, vec![PrimExpr::int(1), PrimExpr::int(8)]),
        }],
        annotations: ann,
        body: Box::new(update),
    };
    let realize = Stmt::BlockRealize {
        iter_values: vec![i.to_expr(), k.to_expr()],
        predicate: if mu(8) {
            Some(PrimExpr::binary(BinOp::Lt, i.to_expr(), n.to_expr()))
        } else {
            None
        },
        block: Box::new(block),
    };
    let kind = if mu(9) { ForKind::Unrolled } else { ForKind::Serial };
    let inner = Stmt::For(For::from_zero(k.clone(), PrimExpr::int(8), kind, realize));
    let guarded = Stmt::If {
        cond: PrimExpr::binary(BinOp::Lt, i.to_expr(), n.to_expr()),
        then_branch: Box::new(inner),
        else_branch: if mu(10) {
            Some(Box::new(Stmt::Evaluate(PrimExpr::int_of(0, DataType::INT32))))
        } else {
            None
        },
    };
    let outer = Stmt::For(For::from_zero(i.clone(), n.to_expr(), ForKind::Serial, guarded));
    let launched = Stmt::LaunchThread {
        var: tx.clone(),
        tag: if mu(11) {
            "threadIdx.y".into()
        } else {
            "threadIdx.x".into()
        },
        extent: PrimExpr::int(64),
        body: Box::new(Stmt::Seq(vec![
            Stmt::Assert {
                cond: PrimExpr::binary(BinOp::Ge, n.to_expr(), PrimExpr::int(0)),
                message: if mu(12) { "bad".into() } else { "n must be >= 0".into() },
                body: Box::new(Stmt::Evaluate(PrimExpr::int_of(0, DataType::INT32))),
            },
            Stmt::Alloc {
                buffer: Buffer::new("tmp", DataType::FLOAT32, vec![PrimExpr::int(4)]),
                body: Box::new(outer),
            },
        ])),
    };
    let body = Stmt::Attr {
        node: Some(n.clone()),
        key: "pragma".into(),
        value: PrimExpr::int(if mu(13) { 2 } else { 1 }),
        body: Box::new(Stmt::While {
            cond: PrimExpr::bool(mutation != 14),
            body: Box::new(launched),
        }),
    };
    let mut attrs = Attrs::new();
    attrs.set("global_symbol", AttrValue::Str("rich".into()));
    PrimFunc {
        params: vec![pa.clone(), pb.clone(), n.clone()],
        buffer_map: vec![(pa, a), (pb, b)],
        ret_type: None,
        body,
        attrs,
        private: false,
        s_tir: true,
        span: Span::NONE,
    }
}

#[test]
fn every_statement_kind_participates() {
    let base = rich_kernel(0);
    let again = rich_kernel(0);
    StructuralEqual::new().prim_func(&base, &again).unwrap();
    assert_eq!(structural_hash_prim_func(&base), structural_hash_prim_func(&again));
    let paths = [
        (
            1,
            "body.body.body.body.seq[1].body.body.then_branch.body.block.alloc_buffers[0].data",
        ),
        (
            2,
            "body.body.body.body.seq[1].body.body.then_branch.body.block.body.value.args[0].indices[0]",
        ),
        (
            3,
            "body.body.body.body.seq[1].body.body.then_branch.body.block.body.value",
        ),
        (
            4,
            "body.body.body.body.seq[1].body.body.then_branch.body.block.annotations",
        ),
        (5, "body.body.body.body.seq[1].body.body.then_branch.body.block"),
        (
            6,
            "body.body.body.body.seq[1].body.body.then_branch.body.block.iter_vars[1]",
        ),
        (
            7,
            "body.body.body.body.seq[1].body.body.then_branch.body.block.init.value",
        ),
        (8, "body.body.body.body.seq[1].body.body.then_branch.body.predicate"),
        (9, "body.body.body.body.seq[1].body.body.then_branch"),
        (10, "body.body.body.body.seq[1].body.body"),
        (11, "body.body.body"),
        (12, "body.body.body.body.seq[0]"),
        (13, "body.value"),
        (14, "body.body.cond"),
    ];
    for (m, want) in paths {
        let other = rich_kernel(m);
        let err = StructuralEqual::new().prim_func(&base, &other).unwrap_err();
        assert_eq!(err.path, want, "mutation {m}: {err}");
        assert_ne!(
            structural_hash_prim_func(&base),
            structural_hash_prim_func(&other),
            "mutation {m}"
        );
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;
    use relax_ir::tir::PrimExprKind;

    #[derive(Clone, Debug, PartialEq)]
    enum T {
        Free(usize),
        Bound(usize),
        Int(i64),
        Float(u8),
        Bin(u8, Box<T>, Box<T>),
        Let(Box<T>, Box<T>),
    }

    fn arb() -> impl Strategy<Value = T> {
        let leaf = prop_oneof![
            (0usize..2).prop_map(T::Free),
            (0usize..2).prop_map(T::Bound),
            (-3i64..3).prop_map(T::Int),
            (0u8..3).prop_map(T::Float),
        ];
        leaf.prop_recursive(4, 20, 2, |inner| {
            prop_oneof![
                (0u8..4, inner.clone(), inner.clone()).prop_map(|(o, a, b)| T::Bin(o, Box::new(a), Box::new(b))),
                (inner.clone(), inner).prop_map(|(v, b)| T::Let(Box::new(v), Box::new(b))),
            ]
        })
    }

    /// Build with the given free variables; `Let` binds a fresh variable, `Bound(i)` is
    /// the i-th innermost let variable (or the constant `100 + i` when there is none).
    fn build(t: &T, free: &[TirVar], lets: &mut Vec<TirVar>) -> PrimExpr {
        match t {
            T::Free(i) => free[*i].to_expr(),
            T::Bound(i) => match lets.iter().rev().nth(*i) {
                Some(v) => v.to_expr(),
                None => PrimExpr::int(100 + *i as i64),
            },
            T::Int(v) => PrimExpr::int(*v),
            T::Float(k) => PrimExpr::float_of([0.0, -0.0, f64::NAN][*k as usize], DataType::FLOAT32),
            T::Bin(o, a, b) => {
                let op = [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Lt][*o as usize];
                PrimExpr::binary(op, build(a, free, lets), build(b, free, lets))
            }
            T::Let(v, b) => {
                let value = build(v, free, lets);
                let var = TirVar::new("t", DataType::INT64);
                lets.push(var.clone());
                let body = build(b, free, lets);
                lets.pop();
                PrimExpr::new(PrimExprKind::Let { var, value, body })
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]
        #[test]
        fn equality_matches_tree_identity(a in arb(), b in arb()) {
            let free = [TirVar::new("x", DataType::INT64), TirVar::new("y", DataType::INT64)];
            let (ea, eb) = (build(&a, &free, &mut vec![]), build(&b, &free, &mut vec![]));
            let ea2 = build(&a, &free, &mut vec![]);
            // Let variables are fresh on every build: alpha-equivalent.
            prop_assert!(structural_equal_prim_expr(&ea, &ea2));
            prop_assert_eq!(structural_hash_prim_expr(&ea), structural_hash_prim_expr(&ea2));
            // Different trees are different, same trees are equal.
            let eq = structural_equal_prim_expr(&ea, &eb);
            prop_assert_eq!(eq, a == b, "{:?} vs {:?}", a, b);
            if eq {
                prop_assert_eq!(structural_hash_prim_expr(&ea), structural_hash_prim_expr(&eb));
            }
            // Other free variables: equal only when mapped.
            let other = [TirVar::new("x", DataType::INT64), TirVar::new("y", DataType::INT64)];
            let ec = build(&a, &other, &mut vec![]);
            let uses_free = !relax_ir::visit::free_tir_vars(&ea).is_empty();
            prop_assert_eq!(structural_equal_prim_expr(&ea, &ec), !uses_free);
            prop_assert!(StructuralEqual::new().map_free_vars(true).prim_expr(&ea, &ec).is_ok());
            prop_assert_eq!(structural_hash_prim_expr(&ea), structural_hash_prim_expr(&ec));
        }
    }
}

#[test]
fn kernel_identity_ignores_the_function_name() {
    let f = add_one("", Some(16));
    let mut g = add_one("x", Some(16));
    g.attrs.set("global_symbol", AttrValue::Str("renamed".into()));
    g.private = !f.private;
    assert!(!structural_equal_prim_func(&f, &g));
    let kernel = StructuralEqual::new().ignore_global_symbol(true);
    assert_eq!(kernel.prim_func(&f, &g), Ok(()));
    assert_eq!(kernel.hash_prim_func(&f), kernel.hash_prim_func(&g));
    let h = add_one("", Some(32));
    assert!(kernel.prim_func(&f, &h).is_err());
    assert_ne!(kernel.hash_prim_func(&f), kernel.hash_prim_func(&h));
}

/// Random Relax functions with symbolic shapes: parameters, annotated bindings,
/// `MatchCast`s and shape expressions define and use the same TIR variables.
mod relax_props {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Dim {
        Sym(u8),
        Lit(u8),
    }

    #[derive(Clone, Debug)]
    enum Value {
        Call(u8, Vec<u8>),
        Tuple(Vec<u8>),
        Get(u8, u8),
        Shape(Vec<Dim>),
        Cast(u8, Vec<Dim>),
    }

    /// A binding: its value and the optional tensor annotation of its variable.
    #[derive(Clone, Debug)]
    struct Bind(Value, Option<Vec<Dim>>);

    #[derive(Clone, Debug)]
    struct F {
        params: Vec<Vec<Dim>>,
        body: Vec<Bind>,
        dataflow: bool,
    }

    fn dims() -> impl Strategy<Value = Vec<Dim>> {
        vec(
            prop_oneof![(0u8..3).prop_map(Dim::Sym), (1u8..4).prop_map(Dim::Lit)],
            1..3,
        )
    }

    fn func_tree() -> impl Strategy<Value = F> {
        let value = prop_oneof![
            (0u8..3, vec(any::<u8>(), 1..3)).prop_map(|(o, a)| Value::Call(o, a)),
            vec(any::<u8>(), 0..3).prop_map(Value::Tuple),
            (any::<u8>(), 0u8..2).prop_map(|(t, i)| Value::Get(t, i)),
            dims().prop_map(Value::Shape),
            (any::<u8>(), dims()).prop_map(|(x, d)| Value::Cast(x, d)),
        ];
        let bind = (value, proptest::option::of(dims())).prop_map(|(v, a)| Bind(v, a));
        (vec(dims(), 1..3), vec(bind, 1..5), any::<bool>()).prop_map(|(params, body, dataflow)| F {
            params,
            body,
            dataflow,
        })
    }

    /// Build with fresh variables (Relax and TIR) on every call.
    fn build(f: &F) -> Function {
        let syms: Vec<TirVar> = (0..3).map(|i| TirVar::new(format!("n{i}"), DataType::INT64)).collect();
        let dim = |d: &Dim| match d {
            Dim::Sym(k) => syms[*k as usize].to_expr(),
            Dim::Lit(n) => PrimExpr::int(*n as i64),
        };
        let tensor = |ds: &[Dim]| StructInfo::tensor(ds.iter().map(dim).collect(), DataType::FLOAT32);
        let params: Vec<Var> = f.params.iter().map(|ds| Var::new("p", Some(tensor(ds)))).collect();
        let mut vars = params.clone();
        let mut bindings = Vec::new();
        for Bind(value, ann) in &f.body {
            let pick = |k: &u8| vars[*k as usize % vars.len()].to_expr();
            let ann = ann.as_deref().map(tensor);
            let var = if f.dataflow {
                Var::new_dataflow("v", ann)
            } else {
                Var::new("v", ann)
            };
            let value = match value {
                Value::Call(o, a) => call(
                    ["relax.add", "relax.multiply", "relax.nn.relu"][*o as usize],
                    a.iter().map(pick).collect(),
                ),
                Value::Tuple(a) => Expr::tuple(a.iter().map(pick).collect()),
                Value::Get(t, i) => Expr::new(ExprKind::TupleGetItem {
                    tuple: pick(t),
                    index: *i as usize,
                }),
                Value::Shape(ds) => Expr::shape(ds.iter().map(dim).collect()),
                Value::Cast(x, ds) => {
                    bindings.push(Binding::MatchCast {
                        var: var.clone(),
                        value: pick(x),
                        struct_info: tensor(ds),
                        span: Span::NONE,
                    });
                    vars.push(var);
                    continue;
                }
            };
            bindings.push(bind(&var, value));
            vars.push(var);
        }
        let ret = vars[vars.len() - 1].to_expr();
        func(params, seq(bindings, ret, f.dataflow), None)
    }

    /// Whether a shape expression uses a TIR variable before any definition defines
    /// it (parameters, binding annotations and `MatchCast` StructInfo define).
    fn has_free_use(f: &F) -> bool {
        let mut defined = [false; 3];
        let define = |ds: &[Dim], defined: &mut [bool; 3]| {
            for d in ds {
                if let Dim::Sym(k) = d {
                    defined[*k as usize] = true;
                }
            }
        };
        f.params.iter().for_each(|ds| define(ds, &mut defined));
        for Bind(value, ann) in &f.body {
            match value {
                Value::Cast(_, ds) => define(ds, &mut defined),
                Value::Shape(ds) => {
                    if let Some(a) = ann {
                        define(a, &mut defined);
                    }
                    if ds.iter().any(|d| matches!(d, Dim::Sym(k) if !defined[*k as usize])) {
                        return true;
                    }
                }
                _ => {}
            }
            if let (Some(a), false) = (ann, matches!(value, Value::Shape(_))) {
                define(a, &mut defined);
            }
        }
        false
    }

    /// Change the first literal dimension: the result is never equal.
    fn mutate(f: &F) -> Option<F> {
        let mut g = f.clone();
        let mut lits: Vec<&mut Dim> = g.params.iter_mut().flatten().collect();
        for Bind(value, ann) in &mut g.body {
            if let Value::Shape(ds) | Value::Cast(_, ds) = value {
                lits.extend(ds.iter_mut());
            }
            lits.extend(ann.iter_mut().flatten());
        }
        let lit = lits.into_iter().find(|d| matches!(d, Dim::Lit(_)))?;
        if let Dim::Lit(n) = lit {
            *n += 1;
        }
        Some(g)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]
        #[test]
        fn alpha_equivalence_and_hashes(a in func_tree(), b in func_tree()) {
            let (x, x2) = (build(&a), build(&a));
            let mapped = StructuralEqual::new().map_free_vars(true);
            prop_assert!(mapped.function(&x, &x2).is_ok());
            prop_assert_eq!(structural_hash_function(&x), structural_hash_function(&x2));
            // Fresh TIR variables differ by identity only where a use is free.
            prop_assert_eq!(structural_equal_function(&x, &x2), !has_free_use(&a));
            // Symmetry, and equal implies equal hashes.
            let y = build(&b);
            for opts in [StructuralEqual::new(), mapped] {
                let eq = opts.function(&x, &y).is_ok();
                prop_assert_eq!(eq, opts.function(&y, &x).is_ok());
                if eq {
                    prop_assert_eq!(structural_hash_function(&x), structural_hash_function(&y));
                }
            }
            if let Some(m) = mutate(&a) {
                let err = mapped.function(&x, &build(&m));
                prop_assert!(err.is_err(), "{:?} vs {:?}", a, m);
                prop_assert_ne!(structural_hash_function(&x), structural_hash_function(&build(&m)));
            }
        }
    }
}
