//! Long chains of TIR `LetStmt`s built through the API (the parser bounds the
//! depth of what it reads; programs built in code have no such bound): cloning
//! and dropping them stays within a test thread's default 2 MiB stack.

use relax_ir::tir::{BinOp, Buffer, PrimExpr, Stmt, TirVar};
use relax_ir::{Attrs, DataType, PrimFunc, Span};

/// `x0 = 0; x1 = x0 + 1; ...; B[0] = x{n-1}`, each `let` scoping over the rest;
/// with `stores`, each `let`'s body is a sequence of a store and the next `let`.
fn chain(n: usize, stores: bool) -> Stmt {
    let b = Buffer::new("B", DataType::INT32, vec![PrimExpr::int(1)]);
    let vars: Vec<TirVar> = (0..n).map(|k| TirVar::new(format!("x{k}"), DataType::INT32)).collect();
    let store = |v: &TirVar| Stmt::BufferStore {
        buffer: b.clone(),
        value: v.to_expr(),
        indices: vec![PrimExpr::int_of(0, DataType::INT32)],
        span: Span::NONE,
    };
    let mut s = store(&vars[n - 1]);
    for k in (0..n).rev() {
        let value = if k == 0 {
            PrimExpr::int_of(0, DataType::INT32)
        } else {
            PrimExpr::binary(BinOp::Add, vars[k - 1].to_expr(), PrimExpr::int_of(1, DataType::INT32))
        };
        let body = if stores && k + 1 < n {
            Stmt::Seq(vec![store(&vars[k]), s])
        } else {
            s
        };
        s = Stmt::Let {
            var: vars[k].clone(),
            value,
            body: Box::new(body),
        };
    }
    s
}

/// The number of `let`s from the root down the chain (iteratively).
fn lets(s: &Stmt) -> usize {
    let mut n = 0;
    let mut cur = s;
    loop {
        match cur {
            Stmt::Let { body, .. } => {
                n += 1;
                cur = body;
            }
            Stmt::Seq(v) if !v.is_empty() => cur = &v[v.len() - 1],
            _ => return n,
        }
    }
}

/// On a thread with the default test stack (2 MiB), not the main thread's.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("thread")
        .join()
        .expect("no stack overflow");
}

#[test]
fn ten_thousand_chained_lets_clone_and_drop() {
    on_small_stack(|| {
        for stores in [false, true] {
            let s = chain(10_000, stores);
            let c = s.clone();
            assert_eq!(lets(&c), 10_000);
            drop(s);
            let again = c.clone();
            drop(c);
            assert_eq!(lets(&again), 10_000);
        }
    });
}

/// A function body of 100,000 chained `let`s: cloned along the chain, dropped
/// without recursion.
#[test]
fn a_hundred_thousand_chained_lets_in_a_prim_func() {
    on_small_stack(|| {
        let f = PrimFunc {
            params: Vec::new(),
            buffer_map: Vec::new(),
            ret_type: None,
            body: chain(100_000, true),
            attrs: Attrs::new(),
            private: true,
            s_tir: false,
            span: Span::NONE,
        };
        let g = f.clone();
        drop(f);
        assert_eq!(lets(&g.body), 100_000);
        drop(g);
        chain(100_000, false).drop_iteratively();
    });
}
