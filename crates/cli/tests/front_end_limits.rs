//! Regression tests for inputs that used to crash or hang the front end: deep nesting,
//! sizes computed from user numbers, and printing round trips. Each asserts the
//! diagnostic (or value) the input gets now, and runs on a test thread's default stack.

use relax_checker::normalize::normalize_module;
use relax_ir::text::{parse, print_program};
use relax_ir::BaseFunc;
use relax_jit::emit_program;
use relax_jit::{DeviceCaps, ScheduleOptions};
use relax_transform::check_and_realize;
use relax_transform::legalize::legalize_module;

/// Parse `src`; the parse diagnostic's message and `line:column` on failure.
fn parse_err(src: &str) -> (String, u32, u32) {
    match parse(src) {
        Ok(_) => panic!("expected a parse error"),
        Err(d) => (d.message.clone(), d.span.line, d.span.col),
    }
}

/// The error messages of `check` on `src` (which must parse).
fn check_errors(src: &str) -> Vec<String> {
    let p = parse(src).unwrap_or_else(|d| panic!("parse failed: {}", d.message));
    let r = check_and_realize(&p.into_module());
    r.errors().map(|d| d.message.clone()).collect()
}

/// Parse, check, print, re-parse, legalize and emit WGSL for every PrimFunc: the whole
/// front end on one input. Returns the number of PrimFuncs compiled.
fn whole_pipeline(src: &str) -> usize {
    let p = parse(src).unwrap_or_else(|d| panic!("parse failed: {}", d.message));
    let text = print_program(&p);
    let module = p.into_module();
    let r = check_and_realize(&module);
    assert!(r.is_valid(), "{:?}", r.errors().map(|d| &d.message).collect::<Vec<_>>());
    parse(&text).unwrap_or_else(|d| panic!("re-parse failed: {}\n{text}", d.message));
    let n = normalize_module(&module);
    let legal = legalize_module(&n.module).unwrap_or_else(|d| panic!("legalize failed: {}", d.message));
    let mut count = 0;
    for (_, f) in legal.functions.iter() {
        if let BaseFunc::Prim(pf) = f {
            // A kernel past 32-bit GPU indexing is refused with a clean diagnostic.
            match emit_program(pf, &DeviceCaps::ALL, &ScheduleOptions::default()) {
                Ok(_) | Err(relax_jit::JitError::TooLarge(_)) => {}
                Err(e) => panic!("WGSL: {e:?}"),
            }
            count += 1;
        }
    }
    count
}

const HEAD: &str = "@R.function\ndef main(x: R.Tensor((2, 3), \"float32\")):\n";

#[test]
fn deep_nesting_is_a_diagnostic() {
    let n = 100_000;
    let cases = [
        format!("    y = R.shape({}{})\n    return x\n", "[".repeat(n), "]".repeat(n)),
        format!("    y = {}x{}\n    return x\n", "(".repeat(n), ",)".repeat(n)),
        format!("    y = x{}\n    return x\n", "[0]".repeat(n)),
        format!("    y = {}x\n    return x\n", "-".repeat(n)),
        format!("    y = x{}\n    return x\n", ".a".repeat(n)),
        format!(
            "    y = {}x{}\n    return y\n",
            "R.add(".repeat(4000),
            ", x)".repeat(4000)
        ),
    ];
    for body in cases {
        let (msg, line, col) = parse_err(&format!("{HEAD}{body}"));
        assert!(msg.contains("nested more than 256 levels"), "{msg}");
        assert_eq!(line, 3);
        assert!(col > 5, "column {col}");
    }
    // A 20,000-term TIR expression.
    let terms = vec!["A[1]"; 20_000].join(" + ");
    let src = format!("@T.prim_func\ndef main(A: T.Buffer((4,), \"float32\")):\n    A[0] = {terms}\n");
    let (msg, line, _) = parse_err(&src);
    assert!(msg.contains("nested more than"), "{msg}");
    assert_eq!(line, 3);
    // Blocks nested deeper than the indentation bound.
    let mut src = String::from("@T.prim_func\ndef main(A: T.Buffer((4,), \"float32\")):\n");
    for d in 0..120 {
        src.push_str(&format!("{}for i{d} in range(1):\n", "    ".repeat(d + 1)));
    }
    src.push_str(&format!("{}A[0] = A[1]\n", "    ".repeat(121)));
    let (msg, _, _) = parse_err(&src);
    assert!(msg.contains("blocks nested more than 100"), "{msg}");
}

#[test]
fn nesting_just_under_the_bound_goes_through_the_whole_front_end() {
    // 127 nested R.add (2 levels each: `.` and `(`) and 250 unary minuses.
    let src = format!(
        "{HEAD}    y = {}x{}\n    return y\n",
        "R.add(".repeat(127),
        ", x)".repeat(127)
    );
    assert!(whole_pipeline(&src) >= 1);
    let src = format!(
        "{HEAD}    y = R.prim_value({}T.int64(1))\n    return x\n",
        "-".repeat(250)
    );
    whole_pipeline(&src);
    // 10,000 chained bindings are flat, not nested.
    let mut src = String::from(HEAD);
    src.push_str("    y0 = x\n");
    for i in 1..=2000 {
        src.push_str(&format!("    y{i} = R.add(y{}, y{})\n", i - 1, i - 1));
    }
    src.push_str("    return y2000\n");
    assert!(check_errors(&src).is_empty());
}

#[test]
fn float_dimensions_do_not_recurse_forever() {
    // Refused when parsed, as TVM refuses them ("the value in ShapeType can only have
    // dtype of int64"), with the dimension's position.
    for dims in ["[-0.0]", "[1.5, 4.0]"] {
        let (msg, line, col) = parse_err(&format!("{HEAD}    y = R.reshape(x, R.shape({dims}))\n    return y\n"));
        assert!(msg.contains("shape dimension must be an integer expression"), "{msg}");
        assert_eq!((line, col), (HEAD.lines().count() as u32 + 1, 31), "{msg}");
    }
}

#[test]
fn negative_or_huge_ndim_is_rejected() {
    for (ann, op) in [
        ("R.Tensor(ndim=-1000, dtype=\"float32\")", "R.squeeze(x)"),
        ("R.Tensor(ndim=-2, dtype=\"float32\")", "R.permute_dims(x)"),
        ("R.Tensor(ndim=4294967296, dtype=\"float32\")", "R.max(x)"),
        ("R.Shape(ndim=-1000)", "x"),
    ] {
        let (msg, line, col) = parse_err(&format!(
            "@R.function\ndef main(x: {ann}):\n    y = {op}\n    return y\n"
        ));
        assert!(
            msg.contains("ndim must be -1 (unknown) or a rank between 0 and 65536"),
            "{msg}"
        );
        assert_eq!(line, 2);
        assert!(col > 15);
    }
    // ndim=-1 is "unknown" and still fine.
    let ok = "@R.function\ndef main(x: R.Tensor(ndim=-1, dtype=\"float32\")):\n    y = R.argmin(x)\n    return y\n";
    assert!(check_errors(ok).is_empty());
}

#[test]
fn sizes_from_user_numbers_are_bounded() {
    let errs = check_errors(&format!(
        "{HEAD}    y = R.split(x, indices_or_sections=4294967296)\n    return y\n"
    ));
    assert!(
        errs.iter()
            .any(|e| e.contains("4294967296 sections is more than the supported 65536")),
        "{errs:?}"
    );

    let errs = check_errors(
        "@R.function\ndef main(x: R.Tensor((2, 5), \"float32\")):\n    y = R.tile(x, repeats=[4611686018427387904, 4])\n    return y\n",
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("2 * 4611686018427387904, overflows int64")),
        "{errs:?}"
    );

    let errs = check_errors(&format!(
        "{HEAD}    y = R.strided_slice(x, axes=[1], begin=[0], end=[3], strides=[0])\n    return y\n"
    ));
    assert!(errs.iter().any(|e| e.contains("a stride is zero")), "{errs:?}");
    let errs = check_errors(
        "@R.function\ndef main(x: R.Tensor((1, 1, 4, 4), \"float32\"), w: R.Tensor((1, 1, 3, 3), \"float32\")):\n    y = R.nn.conv2d(x, w, strides=[0, 0])\n    return y\n",
    );
    assert!(
        errs.iter().any(|e| e.contains("`strides` must be positive, got 0")),
        "{errs:?}"
    );

    // A huge constant arange is legalized to a kernel, not folded into a constant.
    let src = "@R.function\ndef main():\n    y = R.arange(0, 9000000000000, 1, \"float32\")\n    return y\n";
    assert_eq!(whole_pipeline(src), 1);
    // An adaptive pool to 2^63-1 rows legalizes without iterating over them.
    let src = "@R.function\ndef main(x: R.Tensor((1, 1, 4, 4), \"float32\")):\n    y = R.nn.adaptive_avg_pool2d(x, output_size=[9223372036854775807, 1])\n    return y\n";
    assert_eq!(whole_pipeline(src), 1);
}

#[test]
fn squeeze_with_a_disagreeing_annotation_is_not_legalized() {
    let src = "@R.function\ndef main(x: R.Tensor((\"n\", 1, 3), \"float32\")):\n    y: R.Tensor((5,), \"float32\") = R.squeeze(x, axis=None)\n    return y\n";
    let module = parse(src).expect("parses").into_module();
    let n = normalize_module(&module);
    assert!(n.diagnostics.iter().all(|d| !d.is_error()));
    let legal = legalize_module(&n.module).expect("legalize");
    // The call stays an operator call: no PrimFunc was generated for it.
    assert_eq!(
        legal
            .functions
            .iter()
            .filter(|(_, f)| matches!(f, BaseFunc::Prim(_)))
            .count(),
        0
    );
}

#[test]
fn int64_minimum_round_trips() {
    let src = format!(
        "{HEAD}    y = R.prim_value(T.int64(-9223372036854775808))\n    R.func_attr({{\"k\": -9223372036854775808}})\n    return x\n"
    );
    let p = parse(&src).expect("the int64 minimum parses");
    let text = print_program(&p);
    assert!(text.contains("-9223372036854775808"), "{text}");
    let again = print_program(&parse(&text).expect("re-parses"));
    assert_eq!(text, again);
}

#[test]
fn nested_local_functions_print_in_linear_time() {
    let n = 26;
    let mut src = String::from("@R.function\ndef main(x: R.Tensor((2,), \"float32\")):\n");
    for i in 0..n {
        let ind = "    ".repeat(i + 1);
        src.push_str(&format!(
            "{ind}@R.function\n{ind}def f{i}(y{i}: R.Tensor((2,), \"float32\")):\n"
        ));
    }
    src.push_str(&format!("{}return x\n", "    ".repeat(n + 1)));
    for i in (0..n).rev() {
        src.push_str(&format!("{}return f{i}\n", "    ".repeat(i + 1)));
    }
    let start = std::time::Instant::now();
    let p = parse(&src).expect("parses");
    let text = print_program(&p);
    assert_eq!(print_program(&parse(&text).expect("re-parses")), text);
    // It took 9 s (tripling every two levels) when each level re-walked the ones inside.
    assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
}

#[test]
fn a_concat_of_ten_thousand_tensors_compiles() {
    let names = vec!["x"; 10_000].join(", ");
    let src = format!(
        "@R.function\ndef main(x: R.Tensor((1,), \"float32\")):\n    y = R.concat([{names}], axis=0)\n    return y\n"
    );
    let start = std::time::Instant::now();
    assert_eq!(whole_pipeline(&src), 1);
    // Nearly all of the time is naga validating the 2 MB kernel (`Typifier::grow`, 96% of
    // a profile); our own passes take well under a second. A quadratic pass of ours over
    // the 10,000 operands would take minutes.
    assert!(start.elapsed().as_secs() < 60, "{:?}", start.elapsed());
}

#[test]
fn two_hundred_chained_symbolic_multiplications_check_quickly() {
    let names: Vec<String> = (0..200).map(|i| format!("n{i}")).collect();
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let mut src = format!(
        "@R.function\ndef main(x: R.Tensor(({},), \"float32\")):\n",
        quoted.join(", ")
    );
    for n in &names {
        src.push_str(&format!("    {n} = T.int64()\n"));
    }
    // One 200-factor product, and 200 bindings each multiplying one more factor.
    src.push_str(&format!("    y = R.reshape(x, R.shape([{}]))\n", names.join(" * ")));
    for i in 1..=names.len() {
        src.push_str(&format!("    s{i} = R.shape([{}])\n", names[..i].join(" * ")));
    }
    src.push_str("    return y\n");
    let start = std::time::Instant::now();
    assert_eq!(check_errors(&src), Vec::<String>::new());
    // Legalization and WGSL finish quickly too. The reshape's index expression
    // repeats the 200-factor products (quadratic text), past naga's parser
    // recursion limit: that is an error from `emit_program`, not a crash or hang.
    let p = parse(&src).unwrap_or_else(|d| panic!("parse failed: {}", d.message));
    let n = normalize_module(&p.into_module());
    let legal = legalize_module(&n.module).unwrap_or_else(|d| panic!("legalize failed: {}", d.message));
    let mut prims = 0;
    for (_, f) in legal.functions.iter() {
        if let BaseFunc::Prim(pf) = f {
            prims += 1;
            if let Err(e) = emit_program(pf, &DeviceCaps::ALL, &ScheduleOptions::default()) {
                let msg = format!("{e:?}");
                assert!(msg.contains("recursion limit"), "{}", &msg[..msg.len().min(300)]);
            }
        }
    }
    assert_eq!(prims, 1);
    let secs = start.elapsed().as_secs_f64();
    assert!(secs < 20.0, "200 chained multiplications took {secs:.1} s");
}

/// A private function with an explicit `global_symbol` attribute (found by the
/// round-trip fuzzer): the printer kept eliding the attribute as if the parser would
/// add it again, which it does not for a private function.
#[test]
fn a_private_function_keeps_its_global_symbol_attribute() {
    let src = "@I.ir_module\nclass Module:\n    @R.function(private=True)\n    def main(x: R.Tensor((), \"int32\")) -> R.Tensor((), \"int32\"):\n        R.func_attr({\"global_symbol\": \"main\"})\n        y = R.add(x, x)\n        return y\n";
    let p = parse(src).expect("parses");
    let text = print_program(&p);
    assert!(text.contains("\"global_symbol\": \"main\""), "{text}");
    let again = parse(&text).unwrap_or_else(|d| panic!("re-parse failed: {}\n{text}", d.message));
    relax_ir::structural::StructuralEqual::new()
        .map_free_vars(true)
        .module(&p.into_module(), &again.into_module())
        .unwrap_or_else(|m| panic!("round trip differs: {m:?}\n{text}"));
}

/// An infinite float attribute (an overflowing literal such as `11e400024`, found by
/// the round-trip fuzzer) printed as `inf`, which does not re-parse.
#[test]
fn an_infinite_float_attribute_round_trips() {
    let src = format!("{HEAD}    R.func_attr({{\"a\": 11e400024, \"b\": -1e999}})\n    return x\n");
    let p = parse(&src).expect("parses");
    let text = print_program(&p);
    let again = parse(&text).unwrap_or_else(|d| panic!("re-parse failed: {}\n{text}", d.message));
    assert_eq!(text, print_program(&again));
    relax_ir::structural::StructuralEqual::new()
        .map_free_vars(true)
        .module(&p.into_module(), &again.into_module())
        .unwrap_or_else(|m| panic!("round trip differs: {m:?}\n{text}"));
}
