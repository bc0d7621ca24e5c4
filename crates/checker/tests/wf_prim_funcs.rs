//! Well-formedness of PrimFunc bodies (criterion 25): a variable that nothing
//! defines, such as a loop extent `n = T.int64()` that no buffer shape binds, makes
//! the module ill-formed with TVM's message; a symbolic extent bound by a buffer's
//! shape does not. TIR statement trees deeper than the parser's bound are a parse
//! error rather than a stack overflow later.

#[path = "../../ir/tests/common/texts.rs"]
mod texts;

use relax_checker::check::check_module;
use relax_ir::text::parse;
use texts::chained_lets;

const UNBOUND_EXTENT: &str = r#"
@I.ir_module
class Module:
    @T.prim_func
    def f(a: T.Buffer((4,), "float32")):
        n = T.int64()
        for i in range(n):
            a[i] = T.float32(1)

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        cls = Module
        y = R.call_tir(cls.f, (x,), out_ty=R.Tensor((4,), "float32"))
        return y
"#;

const BOUND_EXTENT: &str = r#"
@I.ir_module
class Module:
    @T.prim_func
    def f(a: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        for i in range(n):
            A[i] = T.float32(1)
"#;

#[test]
fn loop_over_an_unbound_variable_is_not_well_formed() {
    let m = parse(UNBOUND_EXTENT).expect("parses").into_module();
    let r = check_module(&m);
    assert!(!r.well_formed, "{:?}", r.diagnostics);
    let d = r
        .errors()
        .find(|d| {
            d.rule
                .map(relax_ir::Rule::as_str)
                .is_some_and(|x| x.starts_with("well-formed/25"))
        })
        .unwrap_or_else(|| panic!("no well-formed/25 error: {:?}", r.diagnostics));
    assert!(
        d.message.contains("Invalid use of undefined variable `n`"),
        "{}",
        d.message
    );
    assert!(d.message.contains("PrimFunc `f`"), "{}", d.message);

    let m = parse(BOUND_EXTENT).expect("parses").into_module();
    let r = check_module(&m);
    assert!(r.well_formed, "{:?}", r.diagnostics);
}

#[test]
fn ten_thousand_chained_lets_are_a_diagnostic_not_a_stack_overflow() {
    // Parsed on this (small) test thread: the parser itself must stay shallow.
    let Err(err) = parse(&chained_lets(10_000)) else {
        panic!("10,000 chained lets parse")
    };
    assert!(err.message.contains("nested deeper than 256"), "{}", err.message);
    let ok = parse(&chained_lets(200)).expect("200 lets parse").into_module();
    let r = check_module(&ok);
    assert!(r.well_formed, "{:?}", r.diagnostics);
}

/// A function-level `T.match_buffer` whose shape reads a buffer: a local scalar
/// (`n = T.int64(0)`, a zero-dimensional buffer), an allocated buffer, a parameter
/// buffer. TVM 0.27's parser rejects each as not well formed (the buffer map binds
/// the shape at the function's entry, before the body defines the buffer). Found by
/// the print round-trip fuzzer: the printed signature read `n` as a new shape variable.
#[test]
fn buffer_map_shape_reading_a_buffer_is_not_well_formed() {
    let cases = [
        (
            "local scalar",
            "    n = T.int64(0)\n    A = T.match_buffer(a, (n,), \"float32\")\n",
            "",
            "n",
        ),
        (
            "allocated buffer",
            "    s = T.alloc_buffer((1,), \"int64\")\n    A = T.match_buffer(a, (s[0] + 1,), \"float32\")\n",
            "",
            "s",
        ),
        (
            "parameter buffer",
            "    A = T.match_buffer(a, (T.max(p[0], 4),), \"float32\")\n",
            ", p: T.Buffer((1,), \"int64\")",
            "p",
        ),
    ];
    for (what, head, extra, read) in cases {
        let src = format!(
            "@T.prim_func\ndef f(a: T.handle{extra}):\n{head}    for i in range(4):\n        A[i] = T.float32(1)\n"
        );
        let m = parse(&src)
            .unwrap_or_else(|e| panic!("{what}: {}", e.message))
            .into_module();
        let r = check_module(&m);
        assert!(!r.well_formed, "{what}: {:?}", r.diagnostics);
        let d = r
            .errors()
            .find(|d| {
                d.rule
                    .map(relax_ir::Rule::as_str)
                    .is_some_and(|x| x.starts_with("well-formed/25"))
            })
            .unwrap_or_else(|| panic!("{what}: no well-formed/25 error: {:?}", r.diagnostics));
        assert!(
            d.message
                .contains(&format!("the shape of buffer `A` reads buffer `{read}`")),
            "{what}: {}",
            d.message
        );
    }
    // A shape variable, or a buffer read in the body, stays well formed.
    let ok = "@T.prim_func\ndef f(a: T.handle, p: T.Buffer((1,), \"int64\")):\n    n = T.int64()\n    A = T.match_buffer(a, (n,), \"float32\")\n    for i in range(n):\n        A[i] = T.Cast(\"float32\", p[0])\n";
    let r = check_module(&parse(ok).expect("parses").into_module());
    assert!(r.well_formed, "{:?}", r.diagnostics);
}
