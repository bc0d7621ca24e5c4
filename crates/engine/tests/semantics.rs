//! Evaluation semantics: closures, recursion, tuples, MatchCast, function-boundary
//! checks, packed functions, shapes, null, assert and print.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::text::printing_engine;
use common::*;
use ndarray::{arr0, arr1, arr2, ArrayD, IxDyn};
use relax_engine::{Engine, EngineConfig, EngineError, Loaded, Purity, Tensor, Value};
use relax_ir::tir::{BinOp, PrimExpr};
use relax_ir::{DataType, Function, StructInfo};

/// The element of the 0-d tensor `v`.
fn scalar_of<T: relax_engine::Element>(v: &Value) -> T {
    let t = v.as_tensor().expect("tensor");
    t.to_array::<T>()
        .unwrap()
        .into_dimensionality::<ndarray::Ix0>()
        .unwrap()
        .into_scalar()
}
fn i64_scalar(v: &Value) -> i64 {
    scalar_of(v)
}
fn bool_scalar(v: &Value) -> bool {
    scalar_of(v)
}
fn arg_i64(args: &[Value], i: usize) -> relax_engine::Result<i64> {
    let t = args
        .get(i)
        .ok_or_else(|| EngineError::msg("missing argument"))?
        .expect_tensor("arg")?;
    Ok(t.scalar_value()?.as_int().unwrap_or_default())
}

/// An engine with scalar int64 helpers as packed functions.
fn math_engine() -> Engine {
    let e = Engine::new(EngineConfig::default());
    e.register_packed("test.sub1", Purity::Pure, |a| {
        Ok(Tensor::scalar(arg_i64(a, 0)? - 1).into())
    });
    e.register_packed("test.mul", Purity::Pure, |a| {
        Ok(Tensor::scalar(arg_i64(a, 0)? * arg_i64(a, 1)?).into())
    });
    e.register_packed("test.add", Purity::Pure, |a| {
        Ok(Tensor::scalar(arg_i64(a, 0)? + arg_i64(a, 1)?).into())
    });
    e.register_packed("test.le1", Purity::Pure, |a| {
        Ok(Tensor::scalar(arg_i64(a, 0)? <= 1).into())
    });
    e.register_packed("test.eq0", Purity::Pure, |a| {
        Ok(Tensor::scalar(arg_i64(a, 0)? == 0).into())
    });
    e
}

fn scalar_i64() -> StructInfo {
    tensor(vec![], DataType::INT64)
}
fn scalar_bool() -> StructInfo {
    tensor(vec![], DataType::BOOL)
}
fn pure_call(sym: &str, args: Vec<relax_ir::Expr>, si: StructInfo) -> relax_ir::Expr {
    call_pure_packed(sym, args, si)
}

#[test]
fn local_recursion_factorial() {
    // main(n) { fact = fn(k) { if k <= 1 { 1 } else { k * fact(k - 1) } }; fact(n) }
    let n = var("n", scalar_i64());
    let fact = untyped("fact");
    let k = var("k", scalar_i64());
    let c = var("c", scalar_bool());
    let km1 = var("km1", scalar_i64());
    let r = var("r", scalar_i64());
    let out = var("out", scalar_i64());
    let else_branch = seq1(
        vec![
            bind(&km1, pure_call("test.sub1", vec![v(&k)], scalar_i64())),
            bind(&r, call(v(&fact), vec![v(&km1)])),
            bind(&out, pure_call("test.mul", vec![v(&k), v(&r)], scalar_i64())),
        ],
        v(&out),
    );
    let body = seq1(
        vec![bind(&c, pure_call("test.le1", vec![v(&k)], scalar_bool()))],
        if_(v(&c), seq1(vec![], const_i64(1)), else_branch),
    );
    let fact_fn = func(vec![k], body, Some(scalar_i64()));
    let res = var("res", scalar_i64());
    let main = func(
        vec![n.clone()],
        seq1(
            vec![bind(&fact, func_expr(fact_fn)), bind(&res, call(v(&fact), vec![v(&n)]))],
            v(&res),
        ),
        Some(scalar_i64()),
    );
    let m = module(vec![("main", main)]);
    let loaded = math_engine().load(&m).unwrap();
    for (input, expected) in [(0, 1), (1, 1), (5, 120), (10, 3_628_800)] {
        let got = loaded.run("main", &[Tensor::scalar(input as i64).into()]).unwrap();
        assert_eq!(i64_scalar(&got), expected, "factorial({input})");
    }
}

/// is_even(n) = n == 0 ? true : is_odd(n - 1); is_odd(n) = n == 0 ? false : is_even(n - 1)
fn even_odd_module() -> relax_ir::IRModule {
    let mk = |other: &str, base: bool| {
        let n = var("n", scalar_i64());
        let c = var("c", scalar_bool());
        let m1 = var("m1", scalar_i64());
        let r = var("r", scalar_bool());
        let body = seq1(
            vec![bind(&c, pure_call("test.eq0", vec![v(&n)], scalar_bool()))],
            if_(
                v(&c),
                seq1(vec![], const_bool(base)),
                seq1(
                    vec![
                        bind(&m1, pure_call("test.sub1", vec![v(&n)], scalar_i64())),
                        bind(&r, call(gv(other), vec![v(&m1)])),
                    ],
                    v(&r),
                ),
            ),
        );
        func(vec![n], body, Some(scalar_bool()))
    };
    module(vec![("is_even", mk("is_odd", true)), ("is_odd", mk("is_even", false))])
}

#[test]
fn global_mutual_recursion() {
    let loaded = math_engine().load(&even_odd_module()).unwrap();
    for n in [0i64, 1, 2, 7, 10] {
        let even = loaded.run("is_even", &[Tensor::scalar(n).into()]).unwrap();
        let odd = loaded.run("is_odd", &[Tensor::scalar(n).into()]).unwrap();
        assert_eq!(bool_scalar(&even), n % 2 == 0, "is_even({n})");
        assert_eq!(bool_scalar(&odd), n % 2 == 1, "is_odd({n})");
    }
    // Deep recursion runs on the engine's large stack.
    let deep = loaded.run("is_even", &[Tensor::scalar(3001i64).into()]).unwrap();
    assert!(!bool_scalar(&deep));
}

#[test]
fn recursion_limit_is_an_error() {
    let config = EngineConfig {
        max_call_depth: 50,
        ..EngineConfig::default()
    };
    let e = Engine::new(config);
    e.register_packed("test.eq0", Purity::Pure, |a| {
        Ok(Tensor::scalar(arg_i64(a, 0)? == 0).into())
    });
    e.register_packed("test.sub1", Purity::Pure, |a| {
        Ok(Tensor::scalar(arg_i64(a, 0)? - 1).into())
    });
    let loaded = e.load(&even_odd_module()).unwrap();
    assert!(bool_scalar(
        &loaded.run("is_even", &[Tensor::scalar(40i64).into()]).unwrap()
    ));
    let err = loaded.run("is_even", &[Tensor::scalar(100i64).into()]).unwrap_err();
    assert!(matches!(err, EngineError::RecursionLimit(50)), "{err}");
}

#[test]
fn closures_capture_relax_and_shape_vars() {
    // main(x: Tensor((n,), int64)):
    //   y = test.add(x0, x0) on a scalar; f = fn(z) { (test.add(z, y), shape(n * 2)) }; f(s)
    let n = tvar("n");
    let x = var("x", tensor(vec![pe(&n)], DataType::INT64));
    let s = var("s", scalar_i64());
    let y = var("y", scalar_i64());
    let z = var("z", scalar_i64());
    let w = var("w", scalar_i64());
    let inner = seq_fn(
        vec![z.clone()],
        vec![bind(&w, pure_call("test.add", vec![v(&z), v(&y)], scalar_i64()))],
        tuple(vec![v(&w), shape(vec![pe(&n) * c(2)])]),
    );
    let [f, r] = untyped_vars(["f", "r"]);
    let main = seq_fn(
        vec![x.clone(), s.clone()],
        vec![
            bind(&y, pure_call("test.add", vec![v(&s), v(&s)], scalar_i64())),
            bind(&f, func_expr(inner)),
            bind(&r, call(v(&f), vec![v(&s)])),
        ],
        tuple(vec![v(&r), v(&f)]),
    );
    let loaded = math_engine().load(&module(vec![("main", main)])).unwrap();
    let x_val: Value = Tensor::from_array(&arr1(&[1i64, 2, 3]).into_dyn()).into();
    let out = loaded.run("main", &[x_val, Tensor::scalar(5i64).into()]).unwrap();
    let fields = out.as_tuple().unwrap();
    let r = fields[0].as_tuple().unwrap();
    assert_eq!(i64_scalar(&r[0]), 15); // 5 + (5 + 5)
    assert_eq!(r[1].as_shape().unwrap(), &[6]); // n * 2 with n = 3 captured
                                                // The returned closure keeps its captures and can be called later.
    let again = loaded.call(&fields[1], &[Tensor::scalar(1i64).into()]).unwrap();
    assert_eq!(i64_scalar(&again.as_tuple().unwrap()[0]), 11);
    let err = loaded.call(&fields[1], &[]).unwrap_err();
    assert_arity(&err, 1, 0);
}

#[test]
fn tuples_and_tuple_get_item_alias() {
    let x = var("x", tensor_ndim(DataType::FLOAT32, -1));
    let y = var("y", tensor_ndim(DataType::FLOAT32, -1));
    let [t, a, b] = untyped_vars(["t", "a", "b"]);
    let main = seq_fn(
        vec![x.clone(), y.clone()],
        vec![
            bind(&t, tuple(vec![v(&x), tuple(vec![v(&y), v(&x)])])),
            bind(&a, get(v(&t), 1)),
            bind(&b, get(v(&a), 0)),
        ],
        tuple(vec![v(&b), get(v(&t), 0), get(v(&a), 1)]),
    );
    let loaded = Engine::default().load(&module(vec![("main", main)])).unwrap();
    let xt = Tensor::from_array(&arr1(&[1.0f32, 2.0]).into_dyn());
    let yt = Tensor::from_array(&arr2(&[[3.0f32], [4.0]]).into_dyn());
    let out = loaded.run("main", &[xt.clone().into(), yt.clone().into()]).unwrap();
    let f = out.as_tuple().unwrap();
    assert_eq!(f.len(), 3);
    assert!(f[0].as_tensor().unwrap().shares_memory_with(&yt));
    assert!(f[1].as_tensor().unwrap().shares_memory_with(&xt));
    assert_eq!(
        f[2].as_tensor().unwrap().to_array::<f32>().unwrap(),
        arr1(&[1.0f32, 2.0]).into_dyn()
    );
    // Out-of-range TupleGetItem is an error, not a panic.
    let bad = seq_fn(vec![], vec![], get(tuple(vec![]), 0));
    let err = Engine::default()
        .run(&module(vec![("main", bad)]), "main", &[])
        .unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
}

fn match_cast_module(si: StructInfo, out_dims: Vec<PrimExpr>) -> relax_ir::IRModule {
    let x = var("x", tensor_ndim(DataType::FLOAT32, -1));
    let y = var("y", si.clone());
    let s = untyped("s");
    let main = seq_fn(
        vec![x.clone()],
        vec![match_cast(&y, v(&x), si), bind(&s, shape(out_dims))],
        tuple(vec![v(&y), v(&s)]),
    );
    module(vec![("main", main)])
}

#[test]
fn match_cast_binds_symbolic_dims() {
    let n = tvar("n");
    let m = tvar("m");
    let si = tensor(vec![pe(&n), pe(&m)], DataType::FLOAT32);
    let dims = vec![
        pe(&n) * pe(&m),
        PrimExpr::binary(BinOp::FloorDiv, pe(&n) + c(1), c(2)),
        PrimExpr::binary(BinOp::FloorMod, pe(&m), c(2)),
        PrimExpr::binary(BinOp::Min, pe(&n), pe(&m)),
        PrimExpr::binary(BinOp::Max, pe(&n), pe(&m)),
        PrimExpr::select(
            PrimExpr::binary(BinOp::Lt, pe(&n), pe(&m)),
            pe(&n) - pe(&m),
            pe(&m) - pe(&n),
        ),
    ];
    let loaded = Engine::default().load(&match_cast_module(si, dims)).unwrap();
    let x: Value = zeros::<f32>(&[2, 5]);
    let out = loaded.run("main", std::slice::from_ref(&x)).unwrap();
    let f = out.as_tuple().unwrap();
    assert!(f[0].as_tensor().unwrap().shares_memory_with(x.as_tensor().unwrap()));
    assert_eq!(f[1].as_shape().unwrap(), &[10, 1, 1, 2, 5, -3]);
    let out = loaded.run("main", &[zeros::<f32>(&[7, 4])]).unwrap();
    assert_eq!(out.as_tuple().unwrap()[1].as_shape().unwrap(), &[28, 4, 0, 4, 7, -3]);
}

#[test]
fn match_cast_failures_name_the_binding() {
    let n = tvar("n");
    let square = tensor(vec![pe(&n), pe(&n)], DataType::FLOAT32);
    let loaded = Engine::default()
        .load(&match_cast_module(square, vec![pe(&n)]))
        .unwrap();
    let ok = loaded.run("main", &[zeros::<f32>(&[3, 3])]).unwrap();
    assert_eq!(ok.as_tuple().unwrap()[1].as_shape().unwrap(), &[3]);
    let err = loaded.run("main", &[zeros::<f32>(&[2, 3])]).unwrap_err();
    match &err {
        EngineError::StructMismatch {
            place,
            expected,
            actual,
        } => {
            assert_eq!(place, "dimension 1 of R.match_cast binding `y`");
            assert_eq!(expected, "n = 2");
            assert_eq!(actual, "3");
        }
        other => panic!("unexpected error {other}"),
    }
    for (arg, want) in [
        (zeros::<f32>(&[2]), "expected rank 2, got rank 1"),
        (zeros::<i32>(&[2, 2]), "expected dtype float32, got dtype int32"),
        (Value::shape(&[2, 2]), "expected a tensor, got Shape((2, 2))"),
    ] {
        assert_run_fails(&loaded, "main", &[arg], want);
    }

    // Tuple and shape StructInfo.
    let a = tvar("a");
    let tup = StructInfo::Tuple(vec![
        StructInfo::shape(vec![pe(&a), c(4)]),
        StructInfo::prim(DataType::INT64),
    ]);
    let x = untyped("x");
    let y = var("y", tup.clone());
    let main = seq_fn(
        vec![x.clone()],
        vec![match_cast(&y, v(&x), tup)],
        shape(vec![pe(&a) + c(1)]),
    );
    let loaded = Engine::default().load(&module(vec![("main", main)])).unwrap();
    let good = Value::tuple(vec![Value::shape(&[9, 4]), Value::int(1)]);
    assert_eq!(loaded.run("main", &[good]).unwrap().as_shape().unwrap(), &[10]);
    let bad = Value::tuple(vec![Value::shape(&[9, 5]), Value::int(1)]);
    let err = loaded.run("main", &[bad]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "dimension 1 of field 0 of R.match_cast binding `y`: expected 4, got 5"
    );
    let short = Value::tuple(vec![Value::shape(&[9, 4])]);
    let err = loaded.run("main", &[short]).unwrap_err();
    assert!(err.to_string().contains("expected a tuple of 2 field(s)"), "{err}");
}

fn entry_module() -> relax_ir::IRModule {
    // f(x: Tensor((m * n,)), y: Tensor((m, n))) -> Tensor((n * m,)): returns x
    let m = tvar("m");
    let n = tvar("n");
    let x = var("x", tensor(vec![pe(&m) * pe(&n)], DataType::FLOAT32));
    let y = var("y", tensor(vec![pe(&m), pe(&n)], DataType::FLOAT32));
    let f = func(
        vec![x.clone(), y],
        seq1(vec![], v(&x)),
        Some(tensor(vec![pe(&n) * pe(&m)], DataType::FLOAT32)),
    );
    // g(x: Tensor((n, 4))) -> Tensor((n * n,)): y = test.identity(x) claims (n * n,), which
    // the packed function does not deliver: the return check catches it at run time.
    let n2 = tvar("n");
    let gx = var("x", tensor(vec![pe(&n2), c(4)], DataType::FLOAT32));
    let flat = tensor(vec![pe(&n2) * pe(&n2)], DataType::FLOAT32);
    let gy = var("y", flat.clone());
    let g = func(
        vec![gx.clone()],
        seq1(
            vec![bind(&gy, call_pure_packed("test.identity", vec![v(&gx)], flat.clone()))],
            v(&gy),
        ),
        Some(flat),
    );
    module(vec![("f", f), ("g", g)])
}

#[test]
fn entry_checks_bind_in_binding_positions_first() {
    let loaded = Engine::default().load(&entry_module()).unwrap();
    // m and n are bound from y although x comes first.
    let out = loaded.run("f", &[zeros::<f32>(&[6]), zeros::<f32>(&[2, 3])]).unwrap();
    assert_eq!(out.as_tensor().unwrap().shape(), &[6]);
    let err = loaded
        .run("f", &[zeros::<f32>(&[5]), zeros::<f32>(&[2, 3])])
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("dimension 0 of argument `x` of function `f`: expected "),
        "{msg}"
    );
    assert!(msg.ends_with(" = 6, got 5"), "{msg}");
}

/// A zero tensor of element type `T` and `shape`.
fn zeros<T: Clone + Default>(shape: &[usize]) -> Value
where
    ArrayD<T>: Into<Value>,
{
    ArrayD::from_elem(IxDyn(shape), T::default()).into()
}

/// Runs `name` on `args` and checks that it fails with a message containing `want`.
fn assert_run_fails(loaded: &Loaded, name: &str, args: &[Value], want: &str) {
    let err = loaded.run(name, args).unwrap_err();
    assert!(err.to_string().contains(want), "{err}");
}

#[test]
fn entry_checks_report_wrong_inputs() {
    let engine = Engine::default();
    engine.register_packed("test.identity", Purity::Pure, |a| Ok(a[0].clone()));
    let loaded = engine.load(&entry_module()).unwrap();
    let err = loaded.run("g", &[zeros::<f32>(&[2, 4, 1])]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "argument `x` of function `g`: expected rank 2, got rank 3 (Tensor((2, 4, 1), float32))"
    );
    assert_run_fails(
        &loaded,
        "g",
        &[zeros::<f64>(&[2, 4])],
        "expected dtype float32, got dtype float64",
    );
    let err = loaded.run("g", &[zeros::<f32>(&[2, 5])]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "dimension 1 of argument `x` of function `g`: expected 4, got 5"
    );
    let err = loaded.run("g", &[]).unwrap_err();
    assert_arity(&err, 1, 0);
    // The return value is checked against the return StructInfo.
    let err = loaded.run("g", &[zeros::<f32>(&[2, 4])]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "return value of function `g`: expected rank 1, got rank 2 (Tensor((2, 4), float32))"
    );
    let err = loaded.run("nope", &[]).unwrap_err();
    assert!(matches!(err, EngineError::UnknownFunction(ref f) if f == "nope"));
}

#[test]
fn private_functions_are_not_entry_points() {
    let mut f = seq_fn(vec![], vec![], tuple(vec![]));
    f.private = true;
    let err = Engine::default()
        .run(&module(vec![("hidden", f)]), "hidden", &[])
        .unwrap_err();
    assert!(matches!(err, EngineError::NotAnEntryPoint(_)), "{err}");
}

#[test]
fn packed_functions_pure_and_impure() {
    let engine = Engine::default();
    let counter = Arc::new(AtomicUsize::new(0));
    let c2 = counter.clone();
    engine.register_packed("test.tick", Purity::Impure, move |_| {
        c2.fetch_add(1, Ordering::SeqCst);
        Ok(Value::unit())
    });
    engine.register_packed("test.twice", Purity::Pure, |a| {
        let t = a[0].expect_tensor("x")?;
        Ok(Tensor::from_array(&t.to_array::<f32>()?.mapv(|x| 2.0 * x)).into())
    });
    engine.register_packed("test.fail", Purity::Pure, |_| Err(EngineError::msg("bad input")));
    let x = var("x", tensor(vec![c(2)], DataType::FLOAT32));
    let y = dvar("y", tensor(vec![c(2)], DataType::FLOAT32));
    let z = var("z", tensor(vec![c(2)], DataType::FLOAT32));
    let [u, u2] = untyped_vars(["u", "u2"]);
    let main = impure(func(
        vec![x.clone()],
        seq(
            vec![
                dataflow(vec![
                    bind(
                        &y,
                        call_pure_packed("test.twice", vec![v(&x)], tensor(vec![c(2)], DataType::FLOAT32)),
                    ),
                    bind(&z, v(&y)),
                ]),
                block(vec![
                    bind(&u, call_packed("test.tick", vec![], StructInfo::unit())),
                    bind(&u2, call_packed("test.tick", vec![], StructInfo::unit())),
                ]),
            ],
            v(&z),
        ),
        None,
    ));
    let loaded = engine.load(&module(vec![("main", main)])).unwrap();
    let out = loaded.run("main", &[arr1(&[1.5f32, -2.0]).into_dyn().into()]).unwrap();
    assert_eq!(
        out.as_tensor().unwrap().to_array::<f32>().unwrap(),
        arr1(&[3.0f32, -4.0]).into_dyn()
    );
    assert_eq!(counter.load(Ordering::SeqCst), 2);
    assert_eq!(loaded.stats().packed_calls, 3);

    // An impure packed function called directly inside a DataflowBlock is rejected by the
    // checker at load, and (without the checker) refused at run time.
    let w = dvar("w", StructInfo::unit());
    let bad = func(
        vec![],
        seq(
            vec![dataflow(vec![bind(
                &w,
                call_packed("test.tick", vec![], StructInfo::unit()),
            )])],
            tuple(vec![]),
        ),
        None,
    );
    let bad = module(vec![("main", bad)]);
    let err = engine.load(&bad).err().expect("rejected");
    assert!(
        matches!(&err, EngineError::Prepare(d) if d[0].message.contains("test.tick")),
        "{err}"
    );
    let unchecked = Engine::new(EngineConfig {
        check: false,
        ..EngineConfig::default()
    });
    unchecked.register_packed("test.tick", Purity::Impure, |_| Ok(Value::unit()));
    let err = unchecked.run(&bad, "main", &[]).unwrap_err();
    assert!(err.to_string().contains("impure packed function `test.tick`"), "{err}");
    assert_eq!(counter.load(Ordering::SeqCst), 2);

    // Errors of packed functions carry the symbol and the binding.
    let failing = returns_packed_call("test.fail");
    let err = engine.run(&module(vec![("main", failing)]), "main", &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "packed function `test.fail` failed: binding `r`: bad input"
    );
}

#[test]
fn unknown_extern_symbol_is_an_error() {
    let main = returns_packed_call("no.such.func");
    let err = Engine::default()
        .run(&module(vec![("main", main)]), "main", &[])
        .unwrap_err();
    assert!(
        matches!(&err, EngineError::UnknownPackedFunc(s) if s == "no.such.func"),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "no packed function is registered under the symbol `no.such.func`"
    );
}

#[test]
fn shape_of_and_symbolic_shape_arithmetic() {
    let a = tvar("a");
    let b = tvar("b");
    let x = var("x", tensor_ndim(DataType::FLOAT32, 2));
    let s = untyped("s");
    let s2 = var("s2", StructInfo::shape(vec![pe(&a), pe(&b)]));
    let r = untyped("r");
    let main = seq_fn(
        vec![x.clone()],
        vec![
            bind(&s, plain_op("relax.shape_of", vec![v(&x)])),
            match_cast(&s2, v(&s), StructInfo::shape(vec![pe(&a), pe(&b)])),
            bind(
                &r,
                shape(vec![
                    pe(&a) * pe(&b) - c(1),
                    PrimExpr::binary(BinOp::FloorDiv, pe(&a) - c(10), c(3)),
                    PrimExpr::binary(BinOp::FloorMod, pe(&a) - c(10), c(3)),
                ]),
            ),
        ],
        tuple(vec![v(&s), v(&r), prim(pe(&a) + pe(&b))]),
    );
    let loaded = Engine::default().load(&module(vec![("main", main)])).unwrap();
    let out = loaded.run("main", &[zeros::<f32>(&[4, 6])]).unwrap();
    let f = out.as_tuple().unwrap();
    assert_eq!(f[0].as_shape().unwrap(), &[4, 6]);
    assert_eq!(f[1].as_shape().unwrap(), &[23, -2, 0]);
    assert_eq!(f[2].as_int(), Some(10));
    let err = loaded.run("main", &[zeros::<f32>(&[4])]).unwrap_err();
    assert!(
        err.to_string()
            .contains("argument `x` of function `main`: expected rank 2"),
        "{err}"
    );
}

#[test]
fn null_value_and_prim_values() {
    let n = untyped("n");
    let main = seq_fn(
        vec![],
        vec![bind(&n, plain_op("relax.null_value", vec![]))],
        tuple(vec![v(&n), string("hi"), prim(c(7))]),
    );
    let out = Engine::default()
        .run(&module(vec![("main", main)]), "main", &[])
        .unwrap();
    let f = out.as_tuple().unwrap();
    assert!(f[0].is_null());
    assert_eq!(f[1].as_str(), Some("hi"));
    assert_eq!(f[2].as_int(), Some(7));
}

fn assert_module(format: &str) -> relax_ir::IRModule {
    let cond = var("cond", scalar_bool());
    let x = var("x", tensor(vec![c(2)], DataType::FLOAT32));
    let u = untyped("u");
    let main = impure(seq_fn(
        vec![cond.clone(), x.clone()],
        vec![bind(
            &u,
            plain_op("relax.assert_op", vec![v(&cond), string(format), v(&x), prim(c(3))]),
        )],
        v(&x),
    ));
    module(vec![("main", main)])
}

#[test]
fn assert_op_passes_and_fails_with_message() {
    let x: Value = arr1(&[1.5f32, 2.0]).into_dyn().into();
    let loaded = Engine::default().load(&assert_module("x={} k={}")).unwrap();
    assert!(loaded.run("main", &[Tensor::scalar(true).into(), x.clone()]).is_ok());
    let err = loaded
        .run("main", &[Tensor::scalar(false).into(), x.clone()])
        .unwrap_err();
    assert_eq!(err.to_string(), "assertion failed: x=[1.5 2.] k=3");
    let loaded = Engine::default().load(&assert_module("")).unwrap();
    let err = loaded
        .run("main", &[Tensor::scalar(false).into(), x.clone()])
        .unwrap_err();
    assert!(
        matches!(&err, EngineError::AssertionFailed(m) if m == "[1.5 2.], 3"),
        "{err}"
    );
    // A non-bool condition is a type error (the entry check catches it first here).
    let err = loaded.run("main", &[Tensor::scalar(1i64).into(), x]).unwrap_err();
    assert!(err.to_string().contains("expected dtype bool"), "{err}");
}

#[test]
fn print_formats_values() {
    let (engine, lines) = printing_engine();
    let x = var("x", tensor(vec![c(2), c(2)], DataType::INT32));
    let [u, u2] = untyped_vars(["u", "u2"]);
    let main = impure(seq_fn(
        vec![x.clone()],
        vec![
            bind(
                &u,
                plain_op(
                    "relax.print",
                    vec![string("a={} b={} c={}"), v(&x), shape(vec![c(1), c(2)]), prim(c(3))],
                ),
            ),
            bind(
                &u2,
                plain_op(
                    "relax.print",
                    vec![string(""), string("hello"), tuple(vec![prim(c(1)), shape(vec![c(5)])])],
                ),
            ),
        ],
        tuple(vec![]),
    ));
    engine
        .run(
            &module(vec![("main", main)]),
            "main",
            &[arr2(&[[1i32, 2], [3, 4]]).into_dyn().into()],
        )
        .unwrap();
    assert_eq!(
        *lines.lock().unwrap(),
        vec![
            "a=[[1 2] [3 4]] b=(1, 2) c=3".to_string(),
            "hello (1, (5,))".to_string()
        ]
    );
}

#[test]
fn if_condition_must_be_a_bool_scalar() {
    let x = var("x", tensor_ndim(DataType::FLOAT32, -1));
    let x = untyped(x.name());
    let main = seq_fn(
        vec![x.clone()],
        vec![],
        if_(v(&x), seq1(vec![], prim(c(1))), seq1(vec![], prim(c(2)))),
    );
    let loaded = Engine::default().load(&module(vec![("main", main)])).unwrap();
    assert_eq!(
        loaded.run("main", &[Tensor::scalar(true).into()]).unwrap().as_int(),
        Some(1)
    );
    assert_eq!(
        loaded.run("main", &[Tensor::scalar(false).into()]).unwrap().as_int(),
        Some(2)
    );
    let err = loaded
        .run("main", &[arr1(&[1.0f32, 0.0]).into_dyn().into()])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "If condition must be a bool scalar, got Tensor((2,), float32)"
    );
}

#[test]
fn tensors_round_trip_every_dtype() {
    fn check<T: relax_engine::Element + PartialEq + std::fmt::Debug>(a: ArrayD<T>) {
        let t = Tensor::from_array(&a);
        assert_eq!(t.dtype(), T::DTYPE);
        assert_eq!(t.to_array::<T>().unwrap(), a);
        assert_eq!(
            t.to_array_value().unwrap().to_tensor().to_bytes().unwrap(),
            t.to_bytes().unwrap()
        );
    }
    check(arr1(&[true, false, true]).into_dyn());
    check(arr1(&[-1i8, 127]).into_dyn());
    check(arr1(&[-1i16, 300]).into_dyn());
    check(arr1(&[-1i32, 1 << 30]).into_dyn());
    check(arr1(&[-1i64, 1 << 40]).into_dyn());
    check(arr1(&[255u8, 1]).into_dyn());
    check(arr1(&[65535u16, 1]).into_dyn());
    check(arr1(&[u32::MAX, 1]).into_dyn());
    check(arr1(&[u64::MAX, 1]).into_dyn());
    check(arr1(&[half::f16::from_f32(1.5), half::f16::from_f32(-0.25)]).into_dyn());
    check(arr2(&[[1.5f32, 2.0], [3.0, 4.0]]).into_dyn());
    check(arr0(2.5f64).into_dyn());
    let t = Tensor::from_array(&arr1(&[1.0f32]).into_dyn());
    assert!(t.to_array::<f64>().is_err());
    assert!(Tensor::from_bytes(DataType::FLOAT32, &[3], vec![0; 11]).is_err());
}

#[test]
fn standard_runtime_packed_functions() {
    let engine = Engine::default();
    let t: Value = arr1(&[2i64, 5, 7]).into_dyn().into();
    let shape = engine
        .packed("vm.builtin.tensor_to_shape")
        .unwrap()
        .call(std::slice::from_ref(&t))
        .unwrap();
    assert_eq!(shape.as_shape().unwrap(), &[2, 5, 7]);
    let s = engine.packed("vm.builtin.shape_of").unwrap().call(&[t]).unwrap();
    assert_eq!(s.as_shape().unwrap(), &[3]);
    let err = engine
        .packed("vm.builtin.tensor_to_shape")
        .unwrap()
        .call(&[Value::int(1)])
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("packed function `vm.builtin.tensor_to_shape` failed"),
        "{err}"
    );
}

/// `err` is an arity error: `expected` arguments asked for, `actual` given.
fn assert_arity(err: &EngineError, expected: usize, actual: usize) {
    assert!(
        matches!(err, EngineError::Arity { expected: e, actual: a, .. } if *e == expected && *a == actual),
        "{err}"
    );
}

/// An impure function `r = R.call_packed(symbol); return r` without parameters.
fn returns_packed_call(symbol: &str) -> Function {
    let r = untyped("r");
    impure(seq_fn(
        vec![],
        vec![bind(&r, call_packed(symbol, vec![], StructInfo::Object))],
        v(&r),
    ))
}
