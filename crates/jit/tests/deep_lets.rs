//! A PrimFunc built in code with thousands of chained `LetStmt`s (the parser
//! refuses such depth in text; the API does not) compiles to WGSL as flat `let`
//! lines that naga validates, within a test thread's default 2 MiB stack.

mod common;

use common::{buffers, i64c, load, prim_func, store};
use relax_ir::tir::{BinOp, For, ForKind, PrimExpr, Stmt, TirVar};
use relax_ir::DataType;
use relax_jit::{DeviceCaps, Jit};

/// `for i in 0..4: x0 = A[i]; x1 = x0 + 1; ...; B[i] = x{n-1}`.
fn chained(n: usize) -> relax_ir::PrimFunc {
    let [a, b] = buffers(["A", "B"], DataType::FLOAT32, &[4]);
    let i = TirVar::new("i", DataType::INT64);
    let vars: Vec<TirVar> = (0..n)
        .map(|k| TirVar::new(format!("x{k}"), DataType::FLOAT32))
        .collect();
    let mut s = store(&b, &[i.to_expr()], vars[n - 1].to_expr());
    for k in (0..n).rev() {
        let value = if k == 0 {
            load(&a, &[i.to_expr()])
        } else {
            PrimExpr::binary(
                BinOp::Add,
                vars[k - 1].to_expr(),
                PrimExpr::float_of(1.0, DataType::FLOAT32),
            )
        };
        s = Stmt::Let {
            var: vars[k].clone(),
            value,
            body: Box::new(s),
        };
    }
    let body = Stmt::For(For::from_zero(i, i64c(4), ForKind::Serial, s));
    prim_func(&[a, b], &[], vec![], body)
}

/// Run `f` on a thread with a test thread's default 2 MiB stack.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("thread")
        .join()
        .expect("no stack overflow");
}

#[test]
fn a_thousand_chained_lets_emit_flat_wgsl() {
    on_small_stack(|| {
        let f = chained(1_000);
        let src = Jit::new(None).wgsl(&f).expect("wgsl");
        let wgsl = &src.kernels[0].wgsl;
        let lets = wgsl.lines().filter(|l| l.trim_start().starts_with("let x")).count();
        assert_eq!(lets, 1_000, "{}", &wgsl[..wgsl.len().min(2000)]);
        relax_jit::internals::validate(wgsl, &DeviceCaps::ALL).expect("naga validates");
    });
}

#[test]
fn fifty_thousand_chained_lets_are_an_error_not_a_stack_overflow() {
    on_small_stack(|| {
        let f = chained(50_000);
        let Err(err) = Jit::new(None).wgsl(&f).map(|_| ()) else {
            panic!("50,000 chained lets compiled");
        };
        let err = err.to_string();
        assert!(err.contains("nested 5000") && err.contains("levels deep"), "{err}");
        let err = relax_jit::HostKernel::for_prim_func(&f, "chained")
            .err()
            .expect("refused");
        assert!(err.to_string().contains("levels deep"), "{err}");
    });
}
