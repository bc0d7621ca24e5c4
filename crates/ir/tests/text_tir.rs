//! Unit tests of the TIR half of the text format: parse → print goldens per
//! construct, dtype rules, Relax-context `PrimExpr`s and diagnostics.

use relax_ir::span::{LineIndex, Span};
use relax_ir::text::parser::prim_expr::{parse_prim_expr, PrimEnv};
use relax_ir::text::parser::tir::parse_prim_func;
use relax_ir::text::printer::prim_expr::{print_prim_expr, PrimContext};
use relax_ir::text::printer::tir::{prim_func_type_var_names, prim_func_type_vars, print_prim_func};
use relax_ir::tir::{PrimFunc, Stmt, TirVar};
use relax_ir::{DataType, Diagnostic};
use rustpython_parser::ast;
use rustpython_parser::Parse;

fn parse(src: &str) -> Result<PrimFunc, Diagnostic> {
    let suite = ast::Suite::parse(src, "<test>").expect("python syntax");
    let def = suite
        .iter()
        .find_map(|s| match s {
            ast::Stmt::FunctionDef(f) => Some(f),
            _ => None,
        })
        .expect("a function");
    parse_prim_func(def, &LineIndex::new(src))
}

fn print(name: &str, f: &PrimFunc) -> String {
    let mut out = String::new();
    print_prim_func(name, f, 0, &mut out);
    out
}

/// Parse, print, and check idempotence.
fn rt(src: &str) -> String {
    let f = parse(src).unwrap_or_else(|d| panic!("{d}\n{src}"));
    let out = print("f", &f);
    let again = print("f", &parse(&out).unwrap_or_else(|d| panic!("reparse: {d}\n{out}")));
    assert_eq!(out, again, "printing is not idempotent");
    out
}

/// Printed text must come back unchanged.
fn same(src: &str) {
    assert_eq!(rt(src), src);
}

fn diag(src: &str) -> Diagnostic {
    match parse(src) {
        Ok(_) => panic!("expected an error for\n{src}"),
        Err(d) => d,
    }
}

#[test]
fn elementwise_grid_root_block() {
    same(
        r#"@T.prim_func(private=True, s_tir=True)
def f(A: T.Buffer((T.int64(2), T.int64(3)), "float32"), B: T.Buffer((T.int64(2), T.int64(3)), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    for ax0, ax1 in T.grid(T.int64(2), T.int64(3)):
        with T.sblock("T_add"):
            v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(A[v_ax0, v_ax1])
            T.writes(B[v_ax0, v_ax1])
            B[v_ax0, v_ax1] = A[v_ax0, v_ax1] + T.float32(1.0)
"#,
    );
}

#[test]
fn reduction_init_alloc_and_axes() {
    same(
        r#"@T.prim_func(private=True, s_tir=True)
def f(x: T.Buffer((T.int64(2), T.int64(3)), "float32"), out: T.Buffer((), "float32")):
    # with T.sblock("root"):
    red = T.sblock_alloc_buffer(())
    tmp = T.sblock_alloc_buffer((T.int64(4),), "int64", scope="shared")
    for k0, k1 in T.grid(T.int64(2), T.int64(3)):
        with T.sblock("red"):
            v_k0, v_k1 = T.axis.remap("RR", [k0, k1])
            T.reads(x[v_k0, v_k1])
            T.writes(red[()])
            with T.init():
                red[()] = T.float32(0.0)
            red[()] = red[()] + x[v_k0, v_k1]
    with T.sblock("out"):
        vi = T.axis.spatial(1, T.int64(0))
        T.reads(red[()])
        T.writes(out[()])
        out[()] = red[()]
"#,
    );
}

#[test]
fn single_axes_where_attr_and_regions() {
    same(
        r#"@T.prim_func(s_tir=True)
def f(A: T.Buffer((T.int64(16), T.int64(8)), "float32"), B: T.Buffer((T.int64(4),), "float32")):
    # with T.sblock("root"):
    for i in range(T.int64(5)):
        with T.sblock("b"):
            vi = T.axis.spatial(T.int64(4), i)
            vk = T.axis.reduce((T.int64(1), T.int64(3)), i)
            T.where(i < T.int64(4))
            T.reads(A[vi:vi + T.int64(4), T.int64(0):T.int64(8)])
            T.writes(B[vi])
            T.sblock_attr({"axis": 2, "schedule_rule": "x"})
            B[vi] = A[vi, vk]
"#,
    );
}

#[test]
fn loop_kinds() {
    same(
        r#"@T.prim_func
def f(A: T.Buffer((64,), "float32")):
    for i in T.parallel(4):
        for j in T.unroll(2):
            for k in T.vectorized(2, 6):
                for t in T.thread_binding(2, thread="threadIdx.x"):
                    for s in range(1, 3):
                        A[i * 16 + j * 8 + k + t + s] = T.float32(0.0)
    for i in T.serial(4, annotations={"pragma_auto_unroll_max_step": 16}):
        A[i] = T.float32(1.0)
"#,
    );
}

#[test]
fn grid_stops_at_dependent_extent() {
    same(
        r#"@T.prim_func
def f(A: T.Buffer((16,), "float32")):
    for i in range(4):
        for j in range(i):
            A[i * 4 + j] = T.float32(0.0)
"#,
    );
}

#[test]
fn host_function_scalars_let_return() {
    same(
        r#"@T.prim_func
def f(tensor: T.handle) -> T.bool:
    T.func_attr({"tirx.is_host_func": True, "tirx.is_scheduled": True})
    type_code: T.uint8 = T.tvm_struct_get(tensor, 0, 5, "uint8")
    n: T.let[T.int64] = T.int64(3)
    is_bfloat16: T.bool = type_code == T.uint8(4) and n == T.int64(1)
    return is_bfloat16
"#,
    );
}

#[test]
fn control_flow_and_statements() {
    same(
        r#"@T.prim_func
def f(A: T.Buffer((16,), "int32"), n: T.int32):
    x: T.int32 = 0
    while x < n:
        x = x + 1
    if x > 3:
        A[0] = x
    else:
        A[1] = x
    assert x >= 0, ("RuntimeError", ["negative"])
    T.call_extern("float32", "foo", 1, 2)
    with T.attr({"pragma_scope": "seq"}):
        for i in range(4):
            A[i] = T.if_then_else(i < 2, 1, 2)
"#,
    );
}

#[test]
fn launch_thread_and_alloc() {
    same(
        r#"@T.prim_func
def f(A: T.Buffer((32,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    buf = T.alloc_shared((32,))
    loc: T.int32
    buf[tx] = A[tx]
    loc = T.Cast("int32", buf[tx])
    A[tx] = T.Cast("float32", loc)
"#,
    );
    same(
        r#"@T.prim_func
def f(A: T.Buffer((32,), "float32")):
    A[0] = T.float32(1.0)
    with T.launch_thread("threadIdx.x", 32) as tx:
        T.attr({"pragma_scope": "seq"})
        A[tx] = T.float32(0.0)
"#,
    );
}

#[test]
fn typed_constants_and_floats() {
    same(
        r#"@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((4,), "float16"), C: T.Buffer((2,), "bool"), D: T.Buffer((2,), "uint8")):
    A[0] = T.float32("inf")
    A[1] = T.float32("-inf")
    A[2] = T.float32("nan")
    A[3] = T.float32(-340282346638528859811704183484516925440.0)
    A[4] = T.float32(0.10000000000000001)
    A[5] = T.float32(1.0000000000000001e-05)
    B[0] = T.float16(2.5)
    C[0] = T.bool(True)
    D[0] = T.uint8(4)
    A[6] = T.Cast("float32", D[0])
    A[7] = T.Select(C[1], T.exp(A[0]), T.max_value("float32"))
"#
        .replace("T.max_value(\"float32\")", "T.float32(340282346638528859811704183484516925440.0)")
        .as_str(),
    );
}

#[test]
fn operator_precedence_and_sugar() {
    same(
        r#"@T.prim_func
def f(A: T.Buffer((16,), "int64"), B: T.Buffer((16,), "bool"), a: T.int64, b: T.int64, c: T.int64):
    A[0] = (a + b) * c
    A[1] = a - (b - c)
    A[2] = a - b - c
    A[3] = a // b % c
    A[4] = T.truncmod(a, b) + T.Div(a, b)
    A[5] = T.max(a, b) - T.min(a, c)
    A[6] = T.Add(a, T.int64(0))
    B[0] = not a < b
    B[1] = a < b or b < c and c < a
    B[2] = (a < b or b < c) and c < a
    B[3] = not (B[4] and B[5])
"#,
    );
}

#[test]
fn dtype_rules() {
    let out = rt(r#"@T.prim_func
def f(A: T.Buffer((T.int64(16),), "float32"), n: T.int64):
    for i in range(n):
        A[i * 2 // 4 + 1] = A[-i + n - 1] / 2.0 + 1
    a: T.int8 = T.int8(3)
    b = a + 1
    c = T.float16(1) + 1
    d = T.int64(3) // 2 + T.int64(7) % 4
"#);
    assert_eq!(
        out,
        r#"@T.prim_func
def f(A: T.Buffer((T.int64(16),), "float32"), n: T.int64):
    for i in range(n):
        A[i * T.int64(2) // T.int64(4) + T.int64(1)] = A[i * T.int64(-1) + n - T.int64(1)] / T.float32(2.0) + T.float32(1.0)
    a: T.int8 = T.int8(3)
    b: T.int32 = T.Cast("int32", a) + 1
    c: T.float16 = T.float16(1.0) + T.float16(1.0)
    d: T.int64 = T.int64(4)
"#
    );
}

#[test]
fn match_buffer_and_quoted_shapes_print_as_buffer_params() {
    let out = rt(r#"@T.prim_func(s_tir=True)
def f(a: T.handle, n: T.int64, B: T.Buffer((4,), "float32")):
    m = T.int32()
    A = T.match_buffer(a, (n, m), "float32")
    for i in range(4):
        with T.sblock("x"):
            vi = T.axis.spatial(4, i)
            B[vi] = A[0, vi] + T.float32(1)
"#);
    assert_eq!(
        out,
        r#"@T.prim_func(s_tir=True)
def f(A: T.Buffer(("n", "m"), "float32"), n: T.int64, B: T.Buffer((4,), "float32")):
    m = T.int32()
    # with T.sblock("root"):
    for i in range(4):
        with T.sblock("x"):
            vi = T.axis.spatial(4, i)
            T.reads(A[0, vi])
            T.writes(B[vi])
            B[vi] = A[0, vi] + T.float32(1.0)
"#
    );
}

#[test]
fn type_vars_and_name_collisions() {
    let src = r#"@T.prim_func(private=True, s_tir=True)
def f(x: T.Buffer((a, T.int64(4)), "float32"), x_1: T.Buffer((a, b), "float32")):
    # with T.sblock("root"):
    for i, k in T.grid(a, T.int64(4)):
        with T.sblock("c"):
            v_i, v_k = T.axis.remap("SS", [i, k])
            T.reads(x[v_i, v_k])
            T.writes(x_1[v_i, v_k])
            x_1[v_i, v_k] = x[v_i, v_k]
"#;
    same(src);
    let f = parse(src).unwrap();
    let tv: Vec<String> = prim_func_type_vars(&f).iter().map(|v| v.name().to_string()).collect();
    assert_eq!(tv, ["a", "b"]);
    assert!(prim_func_type_vars(&f).iter().all(|v| v.dtype() == DataType::INT64));
    assert_eq!(prim_func_type_var_names(&f), ["a", "b"]);
    // Offsets created by `offset_factor` get distinct names.
    let f = parse(
        r#"@T.prim_func
def g(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (T.int64(4),), offset_factor=1)
    B = T.match_buffer(b, (T.int64(4),), offset_factor=1)
    C = T.match_buffer(c, (4,), offset_factor=1)
    A[0] = B[0] + C[0]
"#,
    )
    .unwrap();
    assert_eq!(prim_func_type_var_names(&f), ["elem_offset", "elem_offset_1"]);
    let out = print("g", &f);
    assert!(
        out.contains(concat!(
            "def g(A: T.Buffer((T.int64(4),), \"float32\", elem_offset=elem_offset), ",
            "B: T.Buffer((T.int64(4),), \"float32\", elem_offset=elem_offset_1), ",
            "C: T.Buffer((4,), \"float32\", offset_factor=1)):"
        )),
        "{out}"
    );
    assert_eq!(print("g", &parse(&out).unwrap()), out);
}

#[test]
fn unbound_variables_are_declared() {
    use relax_ir::tir::{Buffer, PrimExpr};
    let n = TirVar::new("n", DataType::INT32);
    let a = Buffer::new("A", DataType::FLOAT32, vec![PrimExpr::int_of(16, DataType::INT32)]);
    let h = TirVar::new_handle("A", Some(DataType::FLOAT32), Some("global".into()));
    let body = Stmt::BufferStore {
        buffer: a.clone(),
        value: PrimExpr::float_of(0.0, DataType::FLOAT32),
        indices: vec![n.to_expr()],
        span: Span::NONE,
    };
    let f = PrimFunc {
        params: vec![h.clone()],
        buffer_map: vec![(h, a)],
        ret_type: None,
        body,
        attrs: Default::default(),
        private: false,
        s_tir: false,
        span: Span::NONE,
    };
    let out = print("f", &f);
    assert_eq!(
        out,
        "@T.prim_func\ndef f(A: T.Buffer((16,), \"float32\")):\n    n = T.int32()\n    A[n] = T.float32(0.0)\n"
    );
    same(&out);
}

#[test]
fn nested_loops_with_same_name_are_renamed() {
    let out = rt(r#"@T.prim_func
def f(A: T.Buffer((16,), "float32")):
    for i in range(4):
        for i in T.parallel(4):
            A[i] = T.float32(0.0)
"#);
    assert!(out.contains("for i_1 in T.parallel(4):"), "{out}");
    assert!(out.contains("A[i_1] = T.float32(0.0)"), "{out}");
}

#[test]
fn source_sugar_is_normalized() {
    let out = rt(r#"@T.prim_func(s_tir=True)
def f(A: T.Buffer((4, 4), "float32"), C: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 4):
        with T.block("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = 0.0
            C[vi] = C[vi] + A[vi, vk]
"#);
    assert_eq!(
        out,
        r#"@T.prim_func(s_tir=True)
def f(A: T.Buffer((4, 4), "float32"), C: T.Buffer((4,), "float32")):
    # with T.sblock("root"):
    for i, k in T.grid(4, 4):
        with T.sblock("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            T.reads(A[vi, vk])
            T.writes(C[vi])
            with T.init():
                C[vi] = T.float32(0.0)
            C[vi] = C[vi] + A[vi, vk]
"#
    );
}

#[test]
fn evaluate_of_constant_is_dropped_from_sequences() {
    let out = rt("@T.prim_func\ndef f(A: T.Buffer((4,), \"int32\")):\n    T.evaluate(0)\n    A[0] = 1\n");
    assert_eq!(
        out,
        "@T.prim_func\ndef f(A: T.Buffer((4,), \"int32\")):\n    A[0] = 1\n"
    );
    same("@T.prim_func\ndef f(A: T.Buffer((4,), \"int32\")):\n    T.evaluate(0)\n");
}

#[test]
fn ir_shape_of_scalars_and_lets() {
    let f = parse(
        r#"@T.prim_func
def f(n: T.int32) -> T.int32:
    x: T.int32 = n
    y: T.let[T.int32] = x + 1
    return y
"#,
    )
    .unwrap();
    let Stmt::Alloc { buffer, body } = &f.body else {
        panic!("{:?}", f.body)
    };
    assert_eq!(buffer.shape().len(), 1);
    assert_eq!(buffer.shape()[0].as_int(), Some(1));
    assert_eq!(buffer.scope(), "local");
    let Stmt::Seq(items) = body.as_ref() else { panic!() };
    assert!(matches!(items[0], Stmt::BufferStore { .. }));
    assert!(matches!(items[1], Stmt::Let { .. }));
    assert_eq!(f.ret_type, Some(DataType::INT32));
}

struct Env(Vec<TirVar>);
impl PrimEnv for Env {
    fn lookup(&self, name: &str) -> Option<TirVar> {
        self.0.iter().find(|v| v.name() == name).cloned()
    }
}

fn relax_expr(src: &str, env: &Env) -> Result<String, Diagnostic> {
    let e = ast::Expr::parse(src, "<e>").expect("python syntax");
    let x = parse_prim_expr(&e, env, &LineIndex::new(src))?;
    Ok(print_prim_expr(&x, PrimContext::Relax))
}

#[test]
fn relax_context_expressions() {
    let env = Env(vec![
        TirVar::new("n", DataType::INT64),
        TirVar::new("m", DataType::INT64),
    ]);
    assert_eq!(relax_expr("n * 2 + T.int64(3)", &env).unwrap(), "n * 2 + 3");
    assert_eq!(relax_expr("n // 2", &env).unwrap(), "n // 2");
    assert_eq!(relax_expr("T.max(n, m) - 1", &env).unwrap(), "T.max(n, m) - 1");
    assert_eq!(relax_expr("(n + m) * 4", &env).unwrap(), "(n + m) * 4");
    assert_eq!(relax_expr("T.int64(3)", &env).unwrap(), "3");
    assert_eq!(relax_expr("n % 3 == 0", &env).unwrap(), "n % 3 == 0");
    assert_eq!(
        relax_expr("T.tvm_thread_invariant(n > 1)", &env).unwrap(),
        "T.tvm_thread_invariant(n > 1)"
    );
    assert_eq!(relax_expr("T.float32(1.5)", &env).unwrap(), "T.float32(1.5)");
    assert_eq!(relax_expr("2 * 3", &env).unwrap(), "6");
    let e = relax_expr("k + 1", &env).unwrap_err();
    assert_eq!(e.span, Span::new(1, 1));
    assert!(e.message.contains("undefined symbolic variable `k`"), "{}", e.message);
    // Shape expressions are int64; the TIR printer shows the type.
    let x = parse_prim_expr(
        &ast::Expr::parse("n + 1", "<e>").unwrap(),
        &env,
        &LineIndex::new("n + 1"),
    )
    .unwrap();
    assert_eq!(x.dtype(), DataType::INT64);
    assert_eq!(print_prim_expr(&x, PrimContext::Tir), "n + T.int64(1)");
}

#[test]
fn diagnostics_point_at_the_offending_node() {
    let d = diag("@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    A[0] = B[0]\n");
    assert_eq!(d.span, Span::new(3, 12));
    assert!(d.message.contains("undefined name `B`"), "{}", d.message);

    let d = diag("@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    A[0] = T.frobnicate(A[1])\n");
    assert_eq!(d.span, Span::new(3, 12));
    assert!(d.message.contains("T.frobnicate"), "{}", d.message);

    let d = diag("@T.prim_func\ndef f(a: T.int32, b: T.int32, A: T.Buffer((4,), \"int32\")):\n    A[0] = a / b\n");
    assert_eq!(d.span.line, 3);
    assert!(d.message.contains("ambiguous"), "{}", d.message);

    let d = diag("@T.prim_func\ndef f(A):\n    pass\n");
    assert_eq!(d.span, Span::new(2, 7));
    assert!(d.message.contains("type annotation"), "{}", d.message);

    let d = diag("def f(A: T.Buffer((4,), \"float32\")):\n    pass\n");
    assert!(d.message.contains("@T.prim_func"), "{}", d.message);

    let d = diag("@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    for i in range(4):\n        vi = T.axis.remap(\"SX\", [i])\n");
    assert_eq!(d.span.line, 4);

    let d = diag("@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    with T.sblock(\"b\"):\n        vi = T.axis.remap(\"S\", [j])\n");
    assert!(d.message.contains("undefined name `j`"), "{}", d.message);

    let d = diag("@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    for i, j in range(4):\n        pass\n");
    assert!(d.message.contains("loop variable"), "{}", d.message);
    assert_eq!(d.rule.map(relax_ir::Rule::as_str), Some("parse"));
}

#[test]
fn malformed_inputs_never_panic() {
    let bodies = [
        "A[0] = ",
        "A[0:2] = 1",
        "A[0] = T.int64()",
        "A[0] = T.Cast(A)",
        "x: T.let = ",
        "for i in T.grid(*A): pass",
        "for i in T.thread_binding(4): pass",
        "with T.sblock(): T.reads(A[0:]); T.writes(A[:2])",
        "T.func_attr(3)",
        "A[()] = A[()]",
        "A[0] = T.Ramp(0, 1, -3)",
        "A[0] = T.float32('xyz')",
        "A[0] = 99999999999999999999999",
        "A[0] = T.max_value('handle')",
        "x = T.launch_thread(A, 3)",
        "T.attr(1, 2)",
        "return",
        "y = A.nothing",
        "A[0] = 1 // 0",
        "A[0] = -(-9223372036854775807 - 1)",
        "with T.init(): pass",
        "T.where(True)",
        "z = T.match_buffer(A, (4,))",
        "T.reads(1)",
        "A[0] = [1, 2]",
        "A[0] = {1: 2}",
        "A[0] = lambda: 1",
        "A[0] = (-9223372036854775807 - 1) // -1",
        "A[0] = T.floordiv(T.int64(-9223372036854775807) - T.int64(1), T.int64(-1))",
        "A[0] = T.floormod(T.int64(-9223372036854775807) - T.int64(1), T.int64(-1))",
        "A[0] = T.truncmod(T.int64(-9223372036854775807) - T.int64(1), T.int64(-1))",
        "A[0] = T.truncdiv(T.int64(5), T.int64(0))",
        "A[0] = T.int64(5) // T.int64(0) + 5 % 0",
        "A[0] = T.int7(3) + T.uint64(2) + T.int128(1)",
    ];
    for b in bodies {
        let src = format!("@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    {b}\n");
        let Ok(suite) = ast::Suite::parse(&src, "<x>") else {
            continue;
        };
        let Some(ast::Stmt::FunctionDef(def)) = suite.first() else {
            continue;
        };
        if let Ok(f) = parse_prim_func(def, &LineIndex::new(&src)) {
            let _ = print("f", &f);
        }
    }
}

/// Every prefix-truncation and line deletion of the test programs is rejected or
/// parsed without a panic, and whatever parses also prints.
#[test]
fn mutated_programs_never_panic() {
    let src = include_str!("text_tir.rs");
    let programs: Vec<&str> = src
        .split("r#\"")
        .skip(1)
        .filter_map(|p| p.split("\"#").next())
        .collect();
    assert!(programs.len() > 10);
    for p in programs {
        let lines: Vec<&str> = p.lines().collect();
        for i in 0..lines.len() {
            let mut without = lines.clone();
            without.remove(i);
            let variants = [
                without.join("\n"),
                lines[..i].join("\n"),
                p[..p.len() * i / lines.len().max(1)].to_string(),
            ];
            for v in variants {
                let Ok(suite) = ast::Suite::parse(&v, "<m>") else {
                    continue;
                };
                for s in &suite {
                    if let ast::Stmt::FunctionDef(def) = s {
                        if let Ok(f) = parse_prim_func(def, &LineIndex::new(&v)) {
                            let _ = print("f", &f);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn access_regions_are_completed_like_tvm() {
    // Inner loops of a block are relaxed over their ranges.
    let out = rt(r#"@T.prim_func(s_tir=True)
def f(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(4):
        with T.sblock("outer"):
            vi = T.axis.spatial(4, i)
            for j, k in T.grid(4, 8):
                B[vi * 4 + j] = B[vi * 4 + j] + A[vi * 4 + j, k]
"#);
    assert_eq!(
        out,
        r#"@T.prim_func(s_tir=True)
def f(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16,), "float32")):
    # with T.sblock("root"):
    for i in range(4):
        with T.sblock("outer"):
            vi = T.axis.spatial(4, i)
            T.reads(B[vi * 4:vi * 4 + 4], A[vi * 4:vi * 4 + 4, 0:8])
            T.writes(B[vi * 4:vi * 4 + 4])
            for j, k in T.grid(4, 8):
                B[vi * 4 + j] = B[vi * 4 + j] + A[vi * 4 + j, k]
"#
    );
    // The outermost block is the root: its regions are not detected.
    let out = rt(r#"@T.prim_func(s_tir=True)
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    with T.sblock("top"):
        for i in range(16):
            B[i] = A[i]
"#);
    assert!(
        out.contains("    with T.sblock(\"top\"):\n        T.reads()\n        T.writes()\n"),
        "{out}"
    );
}

/// TVM prints the bitwise and shift intrinsics as Python operators with its
/// precedence; the parser reads them back as the same calls.
#[test]
fn bitwise_and_shift_operators_round_trip() {
    same(
        r#"@T.prim_func
def f(a: T.Buffer((4,), "int32"), b: T.Buffer((4,), "int32"), c: T.Buffer((4,), "int32")):
    for i in range(4):
        c[i] = (a[i] << b[i]) + (a[i] ^ b[i]) + ~a[i] + (a[i] & b[i]) + (a[i] | b[i]) + (a[i] >> b[i])
"#,
    );
    same(
        r#"@T.prim_func
def f(a: T.Buffer((4,), "int32"), c: T.Buffer((4,), "int32")):
    for i in range(4):
        c[i] = a[i] & 255 | (a[i] ^ 7) << 2
"#,
    );
    let f = parse(
        r#"@T.prim_func
def f(a: T.Buffer((4,), "int32"), c: T.Buffer((4,), "int32")):
    for i in range(4):
        c[i] = a[i] << 1
"#,
    )
    .unwrap();
    let found = format!("{:?}", f.body).contains("Intrinsic(ShiftLeft)");
    assert!(found, "`<<` parses to T.shift_left");
}

/// A parameter bound in the buffer map has the buffer's type, as in TVM: `T.handle` plus
/// `T.match_buffer` and an inline `T.Buffer` parameter are the same function (the printer
/// turns the first into the second), with the same structural hash.
#[test]
fn match_buffer_handle_equals_buffer_parameter() {
    use relax_ir::structural::{structural_equal_prim_func, structural_hash_prim_func};
    let handle = parse(
        "@T.prim_func
def copy(var_x: T.handle, n: T.int64, var_y: T.handle):
    X = T.match_buffer(var_x, (n * 2,), dtype=\"float32\")
    Y = T.match_buffer(var_y, (n * 2,), dtype=\"float32\")
    for i in range(n * 2):
        Y[i] = X[i]
",
    )
    .unwrap_or_else(|d| panic!("{d}"));
    let printed = print("copy", &handle);
    assert!(printed.contains("X: T.Buffer(("), "{printed}");
    let inline = parse(&printed).unwrap_or_else(|d| panic!("{d}\n{printed}"));
    assert!(structural_equal_prim_func(&handle, &inline));
    assert_eq!(structural_hash_prim_func(&handle), structural_hash_prim_func(&inline));
    // A different buffer dtype is still a difference.
    let other = parse(&printed.replace("\"float32\"", "\"int32\"")).unwrap_or_else(|d| panic!("{d}"));
    assert!(!structural_equal_prim_func(&handle, &other));
}

/// A float buffer index is refused when parsed, with its position (a float region bound
/// `1e4002` printed as `inf:inf` and came back with a NaN extent).
#[test]
fn float_buffer_index_is_refused() {
    let refused_at = |src: &str, at: (u32, u32)| {
        let d = parse(src).expect_err("a float index");
        assert!(
            d.message.contains("buffer index must be an integer expression"),
            "{}",
            d.message
        );
        assert_eq!((d.span.line, d.span.col), at, "{}", d.message);
    };
    for idx in ["1e4002", "T.float32(0.5)", "0.5:2"] {
        refused_at(
            &format!(
                "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\"), B: T.Buffer((4,), \"float32\")):\n    B[0] = A[{idx}]\n"
            ),
            (3, 14),
        );
    }
    refused_at(
        "@T.prim_func\ndef f(B: T.Buffer((4,), \"float32\")):\n    B[1 - 0.0] = T.float32(1)\n",
        (3, 7),
    );
}
