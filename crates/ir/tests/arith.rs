//! Tests of the arithmetic analyzer: a table of canonical simplifications, prover
//! truth tables, bounds, and property tests against direct evaluation.

use proptest::prelude::*;
use relax_ir::arith::{eval_int, Analyzer, ConstIntBound, Proof};
use relax_ir::tir::{BinOp, PrimExpr, PrimExprKind, TirVar};
use relax_ir::DataType;

fn var(name: &str) -> TirVar {
    TirVar::new(name, DataType::INT64)
}
fn c(v: i64) -> PrimExpr {
    PrimExpr::int(v)
}
fn bin(op: BinOp, a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    PrimExpr::binary(op, a.clone(), b.clone())
}
fn fdiv(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    bin(BinOp::FloorDiv, a, b)
}
fn fmod(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    bin(BinOp::FloorMod, a, b)
}

/// Infix rendering with the names of variables (precedence-aware).
fn show(e: &PrimExpr) -> String {
    fn prec(op: BinOp) -> u8 {
        match op {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 3,
            BinOp::Add | BinOp::Sub => 4,
            _ => 5,
        }
    }
    fn go(e: &PrimExpr, ctx: u8, right: bool) -> String {
        match e.kind() {
            PrimExprKind::IntImm { value, dtype } if dtype.is_bool() => (*value != 0).to_string(),
            PrimExprKind::IntImm { value, .. } => value.to_string(),
            PrimExprKind::Var(v) => v.name().to_string(),
            PrimExprKind::Binary {
                op: op @ (BinOp::Min | BinOp::Max),
                a,
                b,
            } => {
                format!(
                    "{}({}, {})",
                    if *op == BinOp::Min { "min" } else { "max" },
                    go(a, 0, false),
                    go(b, 0, false)
                )
            }
            PrimExprKind::Binary { op, a, b } => {
                let sym = match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Mul => "*",
                    BinOp::Div => "/",
                    BinOp::Mod => "%t",
                    BinOp::FloorDiv => "//",
                    BinOp::FloorMod => "%",
                    BinOp::Eq => "==",
                    BinOp::Ne => "!=",
                    BinOp::Lt => "<",
                    BinOp::Le => "<=",
                    BinOp::Gt => ">",
                    BinOp::Ge => ">=",
                    BinOp::And => "and",
                    BinOp::Or => "or",
                    _ => unreachable!(),
                };
                let p = prec(*op);
                let s = if p == 5 {
                    format!("{}{}{}", go(a, p, false), sym, go(b, p, true))
                } else {
                    format!("{} {} {}", go(a, p, false), sym, go(b, p, true))
                };
                if p < ctx || (p == ctx && right) {
                    format!("({s})")
                } else {
                    s
                }
            }
            other => format!("{other:?}"),
        }
    }
    go(e, 0, false)
}

#[test]
fn simplification_table() {
    let (n, m, k) = (var("n"), var("m"), var("k"));
    let (n, m, k) = (n.to_expr(), m.to_expr(), k.to_expr());
    let an = Analyzer::new();
    let shapes = Analyzer::for_shapes();
    let cases: Vec<(PrimExpr, &str, &Analyzer)> = vec![
        (c(3) + c(4), "7", &an),
        (&n * &c(2) - n.clone(), "n", &an),
        ((&n + &c(1)) * c(2) - &c(2) * &n, "2", &an),
        (&(&n + &m) - &n, "m", &an),
        (&m + &n, "m + n", &an),
        (&(&m - &n) + &(&k * &c(2)), "k*2 + m - n", &an),
        (&(&c(8) - &n) + &m, "m + 8 - n", &an),
        (&(&c(1) - &n) - &(&m * &c(3)), "1 - n - m*3", &an),
        (&n + &fdiv(&n, &c(2)), "n//2 + n", &an),
        (bin(BinOp::Min, &(&n + &c(1)), &(&m + &c(1))), "min(n, m) + 1", &an),
        (&(&m - &n) - &c(3), "m - n - 3", &an),
        (&(&m * &c(2)) + &(&(&n * &m) * &k), "m*2 + m*n*k", &an),
        (&c(8) - &n, "8 - n", &an),
        (&n - &m, "n - m", &an),
        (&m - &n, "m - n", &an),
        (&c(0) - &n, "0 - n", &an),
        (&n * &c(3) + &n * &c(4), "n*7", &an),
        ((&n + &m) * (&n - &m), "n*n - m*m", &an),
        (&m * &n - &n * &m, "0", &an),
        (fdiv(&(&n * &c(2)), &c(2)), "n", &an),
        (fdiv(&(&n * &c(4) + c(2)), &c(2)), "n*2 + 1", &an),
        (fmod(&(&n * &c(4) + c(3)), &c(4)), "3", &an),
        (fdiv(&(&n * &c(4) + c(3)), &c(4)), "n", &an),
        (fdiv(&n, &c(1)), "n", &an),
        (fmod(&n, &c(1)), "0", &an),
        (fdiv(&(&n * &c(6) + c(4)), &c(4)), "n*6//4 + 1", &an),
        (fmod(&(&n * &c(6) + c(4)), &c(4)), "n*6%4", &an),
        (fdiv(&(&n + &c(3)), &c(4)), "(n + 3)//4", &an),
        (fdiv(&(&n - &c(1)), &c(4)) + c(1), "(n - 1)//4 + 1", &an),
        (fdiv(&n, &c(4)) * c(4) + fmod(&n, &c(4)), "n", &an),
        (&(&n - &(fdiv(&n, &c(4)) * c(4))) - &fmod(&n, &c(4)), "0", &an),
        (fdiv(&n, &c(-2)), "(0 - n)//2", &an),
        (fdiv(&c(-7), &c(2)), "-4", &an),
        (fmod(&c(-7), &c(2)), "1", &an),
        (bin(BinOp::Div, &c(-7), &c(2)), "-3", &an),
        (bin(BinOp::Mod, &c(-7), &c(2)), "-1", &an),
        (bin(BinOp::Div, &(&n * &c(4)), &c(2)), "n*2", &an),
        (bin(BinOp::Div, &(&n + &c(1)), &c(2)), "(n + 1)/2", &an),
        (bin(BinOp::Div, &(&n + &c(1)), &c(2)), "(n + 1)//2", &shapes),
        (bin(BinOp::Mod, &(&n + &c(1)), &c(2)), "(n + 1)%2", &shapes),
        (fdiv(&n, &c(0)), "n//0", &an),
        (fdiv(&fdiv(&n, &c(4)), &c(2)), "n//8", &an),
        (fdiv(&(&fdiv(&n, &c(4)) + &c(1)), &c(2)), "(n + 4)//8", &an),
        (fmod(&fmod(&n, &c(8)), &c(4)), "n%4", &an),
        (fmod(&fmod(&n, &c(6)), &c(4)), "n%6%4", &an),
        (bin(BinOp::Le, &(fdiv(&n, &c(4)) * c(4)), &n), "true", &an),
        (bin(BinOp::Ge, &(fdiv(&(&n + &c(3)), &c(4)) * c(4)), &n), "true", &an),
        (
            bin(BinOp::Lt, &(fdiv(&(&n + &c(3)), &c(4)) * c(4)), &(&n + &c(4))),
            "true",
            &an,
        ),
        (bin(BinOp::Min, &n, &(&n + &c(1))), "n", &an),
        (bin(BinOp::Max, &(&n + &c(2)), &(&n + &c(1))), "n + 2", &an),
        (bin(BinOp::Min, &m, &n) - bin(BinOp::Min, &n, &m), "0", &an),
        (bin(BinOp::Min, &n, &c(0)), "min(n, 0)", &an),
        (bin(BinOp::Min, &c(3), &m), "min(3, m)", &an),
        (
            &c(8) - &bin(BinOp::Min, &bin(BinOp::Max, &n, &c(0)), &c(8)),
            "max(8 - max(n, 0), 0)",
            &an,
        ),
        (&c(8) - &bin(BinOp::Min, &n, &c(3)), "8 - min(n, 3)", &an),
        (&bin(BinOp::Max, &n, &m) - &n, "max(m - n, 0)", &an),
        (&n - &bin(BinOp::Max, &m, &n), "min(n - m, 0)", &an),
        (
            &(fdiv(&(&n - &c(1)), &c(4)) + c(1)) - &fdiv(&(&n + &c(3)), &c(4)),
            "0",
            &an,
        ),
        (bin(BinOp::Max, &m, &n), "max(m, n)", &an),
        (bin(BinOp::Min, &n, &c(0)), "0", &shapes),
        (bin(BinOp::Max, &n, &c(0)), "n", &shapes),
        (bin(BinOp::Lt, &n, &(&n + &c(1))), "true", &an),
        (bin(BinOp::Ge, &n, &c(0)), "n >= 0", &an),
        (bin(BinOp::Ge, &n, &c(0)), "true", &shapes),
        (bin(BinOp::Eq, &(&n * &c(2)), &(&m * &c(2) + c(1))), "false", &an),
        (
            bin(BinOp::And, &bin(BinOp::Lt, &n, &m), &PrimExpr::bool(true)),
            "n < m",
            &an,
        ),
        (
            bin(BinOp::Or, &bin(BinOp::Lt, &n, &m), &PrimExpr::bool(true)),
            "true",
            &an,
        ),
        (
            PrimExpr::select(bin(BinOp::Lt, &n, &(&n + &c(1))), &n + &c(0), m.clone()),
            "n",
            &an,
        ),
        (
            PrimExpr::select(bin(BinOp::Lt, &n, &m), &k + &c(1), &c(1) + &k),
            "k + 1",
            &an,
        ),
        (c(7).cast(DataType::INT32), "7", &an),
        (PrimExpr::int_of(300, DataType::INT32).cast(DataType::INT8), "44", &an),
        (&(&(&n * &m) * &c(0)) + &k, "k", &an),
    ];
    for (input, want, an) in cases {
        let got = an.simplify(&input);
        assert_eq!(show(&got), want, "simplify({})", show(&input));
        // Canonical forms are fixed points.
        assert_eq!(show(&an.simplify(&got)), want, "re-simplify({})", show(&input));
    }
}

#[test]
fn simplify_keeps_dtype_and_folds_floats() {
    let x = TirVar::new("x", DataType::INT32).to_expr();
    let e = (&x + &PrimExpr::int_of(1, DataType::INT32)) * PrimExpr::int_of(2, DataType::INT32);
    let s = Analyzer::new().simplify(&e);
    assert_eq!(s.dtype(), DataType::INT32);
    assert_eq!(show(&s), "x*2 + 2");
    let f = PrimExpr::float_of(1.5, DataType::FLOAT32) * PrimExpr::float_of(2.0, DataType::FLOAT32);
    match Analyzer::new().simplify(&f).kind() {
        PrimExprKind::FloatImm { value, dtype } => {
            assert_eq!(*value, 3.0);
            assert_eq!(*dtype, DataType::FLOAT32);
        }
        other => panic!("not folded: {other:?}"),
    }
}

#[test]
fn prover_truth_table() {
    let (n, m) = (var("n").to_expr(), var("m").to_expr());
    let an = Analyzer::new();
    let cases = vec![
        (fdiv(&(&n * &c(2)), &c(2)), n.clone(), Proof::True),
        (&n + &c(1), n.clone(), Proof::False),
        (n.clone(), m.clone(), Proof::Unknown),
        (&n * &c(2), &n + &n, Proof::True),
        (&n * &c(2), &m * &c(2) + c(1), Proof::False),
        (&n * &c(4), &m * &c(4) + c(2), Proof::False),
        (&n * &c(4), &m * &c(2) + c(2), Proof::Unknown),
        (fmod(&(&n * &c(4) + c(3)), &c(4)), c(3), Proof::True),
        (fmod(&n, &c(4)), c(4), Proof::False),
        (fmod(&n, &c(4)), c(3), Proof::Unknown),
        (c(5), c(5), Proof::True),
        // Printed forms keep TVM's layout, proofs normalize divisions fully.
        (
            fdiv(&(&n - &c(1)), &c(4)) + c(1),
            fdiv(&(&n + &c(3)), &c(4)),
            Proof::True,
        ),
        (
            fdiv(&(&n * &c(6) + c(4)), &c(4)),
            &(&n + &fdiv(&n, &c(2))) + &c(1),
            Proof::True,
        ),
        (fmod(&(&n * &c(6) + c(4)), &c(4)), fmod(&n, &c(2)) * c(2), Proof::True),
        (c(5), c(6), Proof::False),
        (fmod(&(&n * &n), &c(1)) + m.clone(), m.clone(), Proof::True),
    ];
    for (a, b, want) in cases {
        assert_eq!(an.prove_equal(&a, &b), want, "prove_equal({}, {})", show(&a), show(&b));
        assert_eq!(an.prove_equal(&b, &a), want, "prove_equal({}, {})", show(&b), show(&a));
        assert_eq!(an.can_prove_equal(&a, &b), want == Proof::True);
    }
}

#[test]
fn prover_comparisons_and_facts() {
    let nv = var("n");
    let (n, m) = (nv.to_expr(), var("m").to_expr());
    let an = Analyzer::new();
    assert!(an.can_prove(&bin(BinOp::Gt, &(&n + &c(1)), &n)));
    assert!(!an.can_prove(&bin(BinOp::Ge, &n, &c(0))));
    assert_eq!(an.prove(&bin(BinOp::Lt, &(&n + &c(1)), &n)), Proof::False);
    assert_eq!(an.prove(&bin(BinOp::Lt, &n, &m)), Proof::Unknown);
    let shapes = Analyzer::for_shapes();
    assert!(shapes.can_prove(&bin(BinOp::Ge, &n, &c(0))));
    assert!(shapes.can_prove(&bin(BinOp::Ge, &(&n * &m), &c(0))));
    assert!(shapes.prove_greater_equal(&(&n * &c(2)), &n));
    assert!(!an.prove_greater_equal(&(&n * &c(2)), &n));
    assert_eq!(shapes.prove_equal(&(&n + &c(1)), &c(0)), Proof::False);
    assert_eq!(an.prove_equal(&(&n + &c(1)), &c(0)), Proof::Unknown);
    // n*n is never negative.
    assert!(an.can_prove(&bin(BinOp::Ge, &(&n * &n), &c(0))));
    // Bound facts.
    let mut b = Analyzer::new();
    b.bind(&nv, 0, 7);
    assert!(b.can_prove(&bin(BinOp::Lt, &n, &c(8))));
    assert_eq!(show(&b.simplify(&fdiv(&n, &c(8)))), "0");
    assert_eq!(show(&b.simplify(&fmod(&n, &c(8)))), "n");
    assert_eq!(
        b.const_int_bound(&(&n * &c(2) + c(1))),
        ConstIntBound {
            min_value: 1,
            max_value: 15
        }
    );
    assert_eq!(
        an.const_int_bound(&fmod(&n, &c(8))),
        ConstIntBound {
            min_value: 0,
            max_value: 7
        }
    );
    assert_eq!(
        an.const_int_bound(&(&n - &n)),
        ConstIntBound {
            min_value: 0,
            max_value: 0
        }
    );
    // and / or / not
    let t = bin(BinOp::Gt, &(&n + &c(1)), &n);
    let u = bin(BinOp::Lt, &n, &m);
    assert!(an.can_prove(&bin(BinOp::Or, &u, &t)));
    assert_eq!(an.prove(&bin(BinOp::And, &u, &t)), Proof::Unknown);
    assert_eq!(an.prove(&PrimExpr::new(PrimExprKind::Not(t.clone()))), Proof::False);
    // Substitution then simplification.
    let mv = var("m");
    let e = &nv.to_expr() * &c(2) - mv.to_expr();
    let s = an.substitute(&e, &|x| (x == &mv).then(|| &nv.to_expr() + &nv.to_expr()));
    assert_eq!(show(&s), "0");
}

#[test]
fn eval_matches_tvm_semantics() {
    let env = |_: &TirVar| None;
    let e = |op, a, b| eval_int(&bin(op, &c(a), &c(b)), &env);
    assert_eq!(e(BinOp::FloorDiv, -7, 2), Some(-4));
    assert_eq!(e(BinOp::FloorMod, -7, 2), Some(1));
    assert_eq!(e(BinOp::FloorDiv, 7, -2), Some(-4));
    assert_eq!(e(BinOp::FloorMod, 7, -2), Some(-1));
    assert_eq!(e(BinOp::Div, -7, 2), Some(-3));
    assert_eq!(e(BinOp::Mod, -7, 2), Some(-1));
    assert_eq!(e(BinOp::Mod, 7, -2), Some(1));
    assert_eq!(e(BinOp::FloorDiv, 7, 0), None);
}

#[test]
fn simplify_is_fast_for_shape_expressions() {
    let (n, m) = (var("n").to_expr(), var("m").to_expr());
    let an = Analyzer::for_shapes();
    let exprs = [
        n.clone(),
        c(4),
        &n * &c(2),
        &n + &m,
        fdiv(&(&n * &c(4) + c(2)), &c(2)),
        &(&n + &c(1)) * &c(2),
    ];
    let start = std::time::Instant::now();
    let mut acc = 0usize;
    for i in 0..100_000 {
        let e = &exprs[i % exprs.len()];
        acc += matches!(an.simplify(e).kind(), PrimExprKind::Var(_)) as usize;
        acc += an.can_prove_equal(e, e) as usize;
    }
    let el = start.elapsed();
    assert!(acc > 0);
    // Generous for unoptimized builds; the release budget is far below this.
    assert!(el.as_secs_f64() < 5.0, "100k simplifications took {el:?}");
}

// ---- property tests ----

#[derive(Clone, Debug)]
enum T {
    Var(usize),
    Const(i64),
    Bin(BinOp, Box<T>, Box<T>),
    Select(Box<T>, Box<T>, Box<T>, Box<T>),
}

fn arb_tree() -> impl Strategy<Value = T> {
    let leaf = prop_oneof![(0usize..3).prop_map(T::Var), (-9i64..10).prop_map(T::Const)];
    leaf.prop_recursive(4, 24, 2, |inner| {
        let ops = prop_oneof![
            Just(BinOp::Add),
            Just(BinOp::Sub),
            Just(BinOp::Mul),
            Just(BinOp::FloorDiv),
            Just(BinOp::FloorMod),
            Just(BinOp::Div),
            Just(BinOp::Mod),
            Just(BinOp::Min),
            Just(BinOp::Max),
        ];
        prop_oneof![
            4 => (ops, inner.clone(), inner.clone()).prop_map(|(op, a, b)| T::Bin(op, Box::new(a), Box::new(b))),
            // Divisions by a constant are the interesting case for the rules.
            3 => (prop_oneof![Just(BinOp::FloorDiv), Just(BinOp::FloorMod), Just(BinOp::Div), Just(BinOp::Mod)],
                  inner.clone(), prop_oneof![-5i64..-1, 1i64..9])
                .prop_map(|(op, a, k)| T::Bin(op, Box::new(a), Box::new(T::Const(k)))),
            1 => (inner.clone(), inner.clone(), inner.clone(), inner)
                .prop_map(|(a, b, t, f)| T::Select(Box::new(a), Box::new(b), Box::new(t), Box::new(f))),
        ]
    })
}

fn build(t: &T, vars: &[TirVar]) -> PrimExpr {
    match t {
        T::Var(i) => vars[*i].to_expr(),
        T::Const(v) => c(*v),
        T::Bin(op, a, b) => bin(*op, &build(a, vars), &build(b, vars)),
        T::Select(a, b, x, y) => PrimExpr::select(
            bin(BinOp::Lt, &build(a, vars), &build(b, vars)),
            build(x, vars),
            build(y, vars),
        ),
    }
}

/// Three variables `x, y, z` with sample values `vals`.
struct Sample {
    vars: [TirVar; 3],
    vals: Vec<i64>,
}

impl Sample {
    fn new(vals: Vec<i64>) -> Self {
        Sample {
            vars: [var("x"), var("y"), var("z")],
            vals,
        }
    }
    fn build(&self, t: &T) -> PrimExpr {
        build(t, &self.vars)
    }
    fn eval(&self, e: &PrimExpr) -> Option<i64> {
        eval_int(e, &|v: &TirVar| {
            self.vars.iter().position(|w| w == v).map(|i| self.vals[i])
        })
    }
    /// An analyzer that knows `lo <= v <= hi` for every variable.
    fn bounded(&self, lo: i64, hi: i64) -> Analyzer {
        let mut an = Analyzer::new();
        for v in &self.vars {
            an.bind(v, lo, hi);
        }
        an
    }
    /// `an.simplify(e)` evaluates to `e`'s value at the sample.
    fn check_simplify(&self, an: &Analyzer, e: &PrimExpr) -> Result<(), TestCaseError> {
        let s = an.simplify(e);
        if let Some(want) = self.eval(e) {
            prop_assert_eq!(self.eval(&s), Some(want), "{} simplified to {}", show(e), show(&s));
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn simplify_preserves_value(t in arb_tree(), vals in prop::collection::vec(-20i64..20, 3)) {
        let s = Sample::new(vals);
        s.check_simplify(&Analyzer::new(), &s.build(&t))?;
    }

    #[test]
    fn simplify_with_nonneg_facts_preserves_value(t in arb_tree(), vals in prop::collection::vec(0i64..30, 3)) {
        let s = Sample::new(vals);
        s.check_simplify(&Analyzer::for_shapes(), &s.build(&t))?;
    }

    #[test]
    fn simplify_with_range_facts_preserves_value(t in arb_tree(), vals in prop::collection::vec(-6i64..6, 3)) {
        let s = Sample::new(vals);
        s.check_simplify(&s.bounded(-6, 5), &s.build(&t))?;
    }

    #[test]
    fn prover_is_sound(a in arb_tree(), b in arb_tree(), vals in prop::collection::vec(-20i64..20, 3)) {
        let s = Sample::new(vals);
        let (ea, eb) = (s.build(&a), s.build(&b));
        let an = Analyzer::new();
        if let (Some(x), Some(y)) = (s.eval(&ea), s.eval(&eb)) {
            match an.prove_equal(&ea, &eb) {
                Proof::True => prop_assert_eq!(x, y, "{} == {} claimed", show(&ea), show(&eb)),
                Proof::False => prop_assert_ne!(x, y, "{} != {} claimed", show(&ea), show(&eb)),
                Proof::Unknown => {}
            }
            for op in [BinOp::Lt, BinOp::Le, BinOp::Gt, BinOp::Ge] {
                let cond = bin(op, &ea, &eb);
                let truth = s.eval(&cond) == Some(1);
                match an.prove(&cond) {
                    Proof::True => prop_assert!(truth, "{} claimed true", show(&cond)),
                    Proof::False => prop_assert!(!truth, "{} claimed false", show(&cond)),
                    Proof::Unknown => {}
                }
            }
        }
    }

    #[test]
    fn bounds_contain_values(t in arb_tree(), vals in prop::collection::vec(-20i64..20, 3)) {
        let s = Sample::new(vals);
        let e = s.build(&t);
        if let Some(x) = s.eval(&e) {
            let b = s.bounded(-20, 19).const_int_bound(&e);
            prop_assert!(b.min_value <= x && x <= b.max_value, "{} = {} outside {:?}", show(&e), x, b);
        }
    }
}

#[test]
fn deep_nesting_stays_linear() {
    // A chain of 200 nested selects over min/max (a tree, no shared subterms): each level
    // must be simplified once.
    let n = var("n").to_expr();
    let mut e = n.clone();
    for i in 0..200 {
        let cond = bin(BinOp::Lt, &n, &c(i));
        let inner = if i % 2 == 0 {
            &e + &c(1)
        } else {
            bin(BinOp::Max, &e, &c(i))
        };
        e = PrimExpr::select(cond, inner, c(i));
    }
    let start = std::time::Instant::now();
    let s = Analyzer::new().simplify(&e);
    assert!(start.elapsed().as_secs_f64() < 2.0, "took {:?}", start.elapsed());
    let env = |_: &TirVar| Some(7);
    assert_eq!(eval_int(&s, &env), eval_int(&e, &env));
}

#[test]
fn loop_index_arithmetic_with_ranges() {
    use relax_ir::tir::Range;
    let (iv, jv) = (var("i"), var("j"));
    let (i, j) = (iv.to_expr(), jv.to_expr());
    let mut an = Analyzer::new();
    an.bind_range(&iv, &Range::from_extent(c(16)));
    an.bind_range(&jv, &Range::from_extent(c(8)));
    let flat = &(&i * &c(8)) + &j;
    assert_eq!(show(&an.simplify(&fdiv(&flat, &c(8)))), "i");
    assert_eq!(show(&an.simplify(&fmod(&flat, &c(8)))), "j");
    assert_eq!(show(&an.simplify(&fdiv(&flat, &c(4)))), "i*2 + j//4");
    assert_eq!(show(&an.simplify(&fmod(&flat, &c(4)))), "j%4");
    assert_eq!(show(&an.simplify(&bin(BinOp::Div, &flat, &c(8)))), "i");
    assert_eq!(show(&an.simplify(&bin(BinOp::Mod, &flat, &c(8)))), "j");
    assert!(an.can_prove(&bin(BinOp::Lt, &flat, &c(128))));
    assert_eq!(an.prove(&bin(BinOp::Ge, &flat, &c(128))), Proof::False);
    assert_eq!(
        an.const_int_bound(&flat),
        ConstIntBound {
            min_value: 0,
            max_value: 127
        }
    );
    // Without the ranges nothing is known about j.
    assert_eq!(show(&Analyzer::new().simplify(&fdiv(&flat, &c(8)))), "j//8 + i");
}

#[test]
fn integer_binary_ops_follow_tvm_division_and_stay_exact() {
    use relax_ir::arith::int_binop_exact as f;
    assert_eq!(f(BinOp::FloorDiv, -7, 2), Some(-4));
    assert_eq!(f(BinOp::FloorMod, -7, 2), Some(1));
    assert_eq!(f(BinOp::FloorMod, 7, -2), Some(-1));
    assert_eq!(f(BinOp::Div, -7, 2), Some(-3));
    assert_eq!(f(BinOp::Mod, -7, 2), Some(-1));
    for op in [BinOp::Div, BinOp::Mod, BinOp::FloorDiv, BinOp::FloorMod] {
        assert_eq!(f(op, 5, 0), None, "{op:?}");
    }
    assert_eq!(f(BinOp::Mul, i64::MAX, 2), Some(2 * i64::MAX as i128));
    assert_eq!(f(BinOp::Div, i64::MIN, -1), Some(-(i64::MIN as i128)));
    assert_eq!(f(BinOp::Le, 3, 3), Some(1));
    assert_eq!(f(BinOp::Gt, 3, 3), Some(0));
    assert_eq!(f(BinOp::And, 2, 0), Some(0));
    assert_eq!(f(BinOp::Or, 0, -1), Some(1));
    assert_eq!(f(BinOp::Min, -1, 4), Some(-1));
}

#[test]
fn float_comparisons_are_false_with_nan_but_not_equal() {
    assert_eq!(BinOp::Lt.compare_floats(1.0, 2.0), Some(true));
    assert_eq!(BinOp::Ge.compare_floats(-0.0, 0.0), Some(true));
    assert_eq!(BinOp::Eq.compare_floats(f64::NAN, f64::NAN), Some(false));
    assert_eq!(BinOp::Ne.compare_floats(f64::NAN, 1.0), Some(true));
    assert_eq!(BinOp::Le.compare_floats(1.0, f64::NAN), Some(false));
    assert_eq!(BinOp::Add.compare_floats(1.0, 2.0), None);
}
