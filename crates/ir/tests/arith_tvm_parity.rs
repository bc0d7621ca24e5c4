//! Facts that TVM 0.27's arithmetic analyzer proves (`can_prove_equal(a, b)`,
//! `can_prove(a >= b)`, `can_prove(a >= 0)`) for random expressions over `x`, `y`, `z`,
//! with (`nonneg`) or without the facts `x, y, z >= 0`. The analyzer must prove them
//! too. Expressions are in prefix form: `(op a b)`, `vN` is variable N, integers are
//! int64 constants; `fdiv`/`fmod` are floor division and modulo.

use relax_ir::arith::{eval_int, Analyzer, Proof};
use relax_ir::tir::{BinOp, PrimExpr, TirVar};
use relax_ir::DataType;

/// The recorded cases: `(nonneg, kind, a, b)` per line of the data file.
fn cases() -> Vec<(bool, String, String, String)> {
    include_str!("data/arith_tvm_parity.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut it = l.splitn(3, ' ');
            let (facts, kind, rest) = (
                it.next().unwrap_or(""),
                it.next().unwrap_or(""),
                it.next().unwrap_or(""),
            );
            let (a, b) = rest.split_once(" ; ").unwrap_or_else(|| panic!("no ' ; ' in {l}"));
            (facts == "nonneg", kind.to_string(), a.to_string(), b.to_string())
        })
        .collect()
}

fn parse(s: &str, vars: &[TirVar]) -> PrimExpr {
    fn go(t: &[&str], p: &mut usize, vars: &[TirVar]) -> PrimExpr {
        let tok = t[*p];
        *p += 1;
        if tok == "(" {
            let op = match t[*p] {
                "add" => BinOp::Add,
                "sub" => BinOp::Sub,
                "mul" => BinOp::Mul,
                "fdiv" => BinOp::FloorDiv,
                "fmod" => BinOp::FloorMod,
                "min" => BinOp::Min,
                "max" => BinOp::Max,
                other => panic!("unknown operator {other}"),
            };
            *p += 1;
            let a = go(t, p, vars);
            let b = go(t, p, vars);
            assert_eq!(t[*p], ")");
            *p += 1;
            PrimExpr::binary(op, a, b)
        } else if let Some(i) = tok.strip_prefix('v') {
            vars[i.parse::<usize>().expect("variable index")].to_expr()
        } else {
            PrimExpr::int(tok.parse().expect("integer"))
        }
    }
    let spaced = s.replace('(', " ( ").replace(')', " ) ");
    let toks: Vec<&str> = spaced.split_whitespace().collect();
    let mut pos = 0;
    let e = go(&toks, &mut pos, vars);
    assert_eq!(pos, toks.len(), "trailing tokens in {s}");
    e
}

#[test]
fn proves_what_tvm_proves() {
    let vars: Vec<TirVar> = ["x", "y", "z"]
        .iter()
        .map(|n| TirVar::new(*n, DataType::INT64))
        .collect();
    let cases = cases();
    assert_eq!(cases.len(), 60, "the case table was not read whole");
    for (nonneg, kind, a, b) in &cases {
        let (nonneg, kind, a, b) = (*nonneg, kind.as_str(), a.as_str(), b.as_str());
        let an = if nonneg {
            Analyzer::for_shapes()
        } else {
            Analyzer::new()
        };
        let (ea, eb) = (parse(a, &vars), parse(b, &vars));
        let proven = match kind {
            "eq" => an.prove_equal(&ea, &eb) == Proof::True,
            "ge" => an.can_prove(&PrimExpr::binary(BinOp::Ge, ea.clone(), eb.clone())),
            _ => an.can_prove(&PrimExpr::binary(BinOp::Ge, ea.clone(), PrimExpr::int(0))),
        };
        assert!(proven, "{kind} not proven (nonneg={nonneg}): {a} vs {b}");
        // The recorded fact holds on sample points (a check of the table itself).
        let lo = if nonneg { 0 } else { -7 };
        for x in lo..8 {
            for y in [lo, 3, 7] {
                let env = |v: &TirVar| vars.iter().position(|w| w == v).map(|i| [x, y, 5][i]);
                let (va, vb) = (eval_int(&ea, &env), eval_int(&eb, &env));
                let (Some(va), Some(vb)) = (va, vb) else { continue };
                match kind {
                    "eq" => assert_eq!(va, vb, "{a} vs {b} at x={x} y={y}"),
                    "ge" => assert!(va >= vb, "{a} >= {b} at x={x} y={y}"),
                    _ => assert!(va >= 0, "{a} >= 0 at x={x} y={y}"),
                }
            }
        }
    }
}
