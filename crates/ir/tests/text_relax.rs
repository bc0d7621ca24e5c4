//! Relax TVMScript: parse → print golden texts, and parser diagnostics.

use relax_ir::relax::{Binding, ExprKind, StructInfo};
use relax_ir::text::{parse, print_program, print_struct_info, Program};
use relax_ir::AttrValue;

/// Parse and print; also check that printing is idempotent.
fn pp(src: &str) -> String {
    let p = parse(src).unwrap_or_else(|d| panic!("parse failed: {d}\n{src}"));
    let t = print_program(&p);
    let t2 = print_program(&parse(&t).unwrap_or_else(|d| panic!("reparse failed: {d}\n{t}")));
    assert_eq!(t, t2, "printing is not idempotent");
    t
}

fn err(src: &str) -> String {
    match parse(src) {
        Ok(_) => panic!("expected a parse error for\n{src}"),
        Err(d) => format!("{}:{} {}", d.span.line, d.span.col, d.message),
    }
}

fn module(p: Program) -> relax_ir::IRModule {
    p.into_module()
}

#[test]
fn printed_module_round_trips_byte_for_byte() {
    let src = r#"# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def func(a: R.Tensor) -> R.Tensor:
        gv: R.Tensor = R.add(a, a)
        return gv

    @R.function
    def main(x: R.Tensor, y: R.Tensor) -> R.Tensor((5, 5)):
        cls = Module
        z: R.Tensor = R.add(x, y)
        _: R.Tensor((5, 5)) = R.match_cast(x, R.Tensor((5, 5)))
        with R.dataflow():
            q: R.Tensor = R.add(z, z)
            p: R.Tensor = cls.func(q)
            r: R.Tensor((5, 5)) = R.match_cast(p, R.Tensor((5, 5)))
            s: R.Tensor((5, 5)) = r
            R.output(s)
        return s"#;
    assert_eq!(pp(src), src);
}

#[test]
fn classic_spellings_print_in_the_0_27_dialect() {
    let src = r#"
from tvm.script import relax as R

@R.function
def foo(x: R.Tensor(("m", "n"), "float32"), y: R.Tensor([16, 32], "float32")) -> R.Object:
    m = T.int64()
    gv = R.call_tir(foo_tir, (x,), out_sinfo=R.Tensor((m, 4), dtype="float32"))
    return x
"#;
    // `foo_tir` is not defined: a diagnostic names it.
    assert!(err(src).contains("undefined variable `foo_tir`"), "{}", err(src));
    let src = r#"
@R.function
def foo(x: R.Tensor(("m", "n"), "float32"), y: R.Tensor([16, 32], "float32")) -> R.Object:
    z = R.add(y, y)
    return x
"#;
    assert_eq!(
        pp(src),
        r#"# from typing import TypeVar
# from tvm.script import relax as R

m = TypeVar("m")
n = TypeVar("n")
@R.function
def foo(x: R.Tensor((m, n), dtype="float32"), y: R.Tensor((16, 32), dtype="float32")) -> R.Any:
    z = R.add(y, y)
    return x"#
    );
}

#[test]
fn struct_info_spellings() {
    let src = r#"
@R.function
def f(a: R.Tensor, b: R.Tensor(dtype="float32", ndim=2), c: R.Tensor((2, 3)), d: R.Shape, e: R.Shape([1, 2]),
      g: R.Shape(ndim=3), h: R.Prim("int32"), i: R.Tuple, j: R.Tuple(R.Tensor, R.Object), k: R.Callable,
      l: R.Callable((R.Tensor((2,), "float32"),), R.Tensor((2,), "float32")), o: R.Object,
      p: R.Callable(ret=R.Tensor(dtype="float32", ndim=2)), q: T.float32):
    return a
"#;
    let t = pp(src);
    assert!(
        t.contains(
            "def f(a: R.Tensor, b: R.Tensor(dtype=\"float32\", ndim=2), c: R.Tensor((2, 3)), d: R.Shape(ndim=-1), \
e: R.Shape([1, 2]), g: R.Shape(ndim=3), h: T.int32, i: R.Tuple, j: R.Tuple(R.Tensor, R.Any), k: R.Callable, \
l: R.Callable((R.Tensor((2,), dtype=\"float32\"),), R.Tensor((2,), dtype=\"float32\"), True), o: R.Any, \
p: R.Callable(ret=R.Tensor(dtype=\"float32\", ndim=2)), q: T.float32):"
        ),
        "{t}"
    );
}

#[test]
fn op_calls_fill_defaults_and_convert_python_values() {
    let src = r#"
@R.function
def f(x: R.Tensor((1, 4, 8, 8), "float32"), w: R.Tensor((4, 4, 3, 3), "float32")):
    a = R.sum(x, axis=1)
    b = R.nn.conv2d(x, w, padding=1, strides=2)
    c = R.reshape(x, (4, 64))
    d = R.nn.pad(x, [0, 0, 0, 0, 1, 1, 1, 1])
    e = R.take(x, R.const([0, 1], "int64"), axis=1)
    g = R.add(x, 1.5)
    h = R.tril(x)
    i = R.arange(10)
    j = R.permute_dims(x)
    k = x * R.const(2, "float32")
    return x
"#;
    let t = pp(src);
    for line in [
        "a = R.sum(x, axis=[1], keepdims=False)",
        "b = R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout=\"NCHW\", \
kernel_layout=\"OIHW\", out_layout=\"NCHW\", out_dtype=None)",
        "c = R.reshape(x, R.shape([4, 64]))",
        "d = R.nn.pad(x, pad_width=[0, 0, 0, 0, 1, 1, 1, 1], pad_value=0.0, pad_mode=\"constant\")",
        "e = R.take(x, R.const([0, 1], \"int64\"), axis=1, mode=\"fast\")",
        "g = R.add(x, T.float32(1.5))",
        "h = R.tril(x, 0)",
        "i = R.arange(0, 10, 1, dtype=None)",
        "j = R.permute_dims(x, axes=None)",
        "k = R.multiply(x, R.const(2.0, \"float32\"))",
    ] {
        assert!(t.contains(line), "missing `{line}` in\n{t}");
    }
    let m = module(parse(src).unwrap());
    let f = m.relax_function("f").unwrap();
    let ExprKind::Seq(seq) = f.body.kind() else { panic!() };
    let Binding::VarBinding { value, .. } = &seq.blocks[0].bindings[0] else {
        panic!()
    };
    let call = value.as_call().unwrap();
    assert_eq!(call.op.as_op(), Some("relax.sum"));
    assert_eq!(call.args.len(), 1);
    assert_eq!(call.attrs.get("axis").and_then(AttrValue::as_int_list), Some(vec![1]));
    assert_eq!(call.attrs.get_bool("keepdims"), Some(false));
}

#[test]
fn packed_calls_call_tir_and_closures() {
    let src = r#"# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        a: R.Any = R.call_packed("pk", x)
        b: R.Tensor((2,), dtype="float32") = R.call_packed("pk", x, ty_args=(R.Tensor((2,), dtype="float32"),))
        b1: R.Tuple(R.Tensor((2,), dtype="float32"), R.Shape(ndim=-1)) = R.call_pure_packed("pk", x, ty_args=(R.Tensor((2,), dtype="float32"), R.Shape(ndim=-1)))
        e = R.call_dps_packed("ext", (x,), out_ty=R.Tensor((2, 3), dtype="float32"))
        g: R.Callable = R.ExternFunc("foo")
        h: R.Any = g(x)
        t = R.call_tir(cls.main, (x, x), out_ty=[R.Tensor((2, 3), dtype="float32"), R.Tensor((3,), dtype="float32")])
        t0: R.Tensor((2, 3), dtype="float32") = t[0]
        R.print(x, format=R.str("hi {}"))
        R.assert_op(R.const(True, "bool"), x, format=R.str("c {}"))
        u: R.Tensor((2, 3), dtype="float32") = R.hint_on_device(t0, R.device(device_type=1, index=0), "global")
        return u"#;
    assert_eq!(pp(src), src);
}

#[test]
fn if_else_and_nested_functions() {
    let src = r#"# from tvm.script import relax as R

@R.function(private=True)
def main(cond: R.Tensor((), dtype="bool"), x: R.Tensor((1,), dtype="float32")) -> R.Tensor((1,), dtype="float32"):
    # from tvm.script import relax as R
    
    @R.function
    def local(y: R.Tensor((1,), dtype="float32")) -> R.Tensor((1,), dtype="float32"):
        return y

    if cond:
        gv: R.Tensor((1,), dtype="float32") = R.add(x, x)
        y: R.Tensor((1,), dtype="float32") = gv
    else:
        gv: R.Tensor((1,), dtype="float32") = R.multiply(x, x)
        y: R.Tensor((1,), dtype="float32") = gv
    z: R.Tensor((1,), dtype="float32") = local(y)
    return z"#;
    assert_eq!(pp(src), src);
    let p = parse(src).unwrap();
    let Program::Function { func, .. } = p else { panic!() };
    assert!(func.private);
    assert!(func.attrs.get("global_symbol").is_none());
}

#[test]
fn symbolic_variables_and_vdevices() {
    let src = r#"# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "tag": ""}, 0, "global"), I.vdevice({"arch": "sm_50", "keys": ["cuda", "gpu"], "kind": "cuda", "tag": ""}, 0, "global"), I.vdevice({"arch": "sm_80", "keys": ["cuda", "gpu"], "kind": "cuda", "tag": ""}, 0, "global")]})
    @R.function
    def foo(x: R.Tensor(dtype="float32")) -> R.Shape(ndim=2):
        n = T.int64()
        m = T.int64()
        _: R.Tensor((n, m), dtype="float32", vdevice="cuda:1:global") = R.match_cast(x, R.Tensor((n, m), dtype="float32", vdevice="cuda:1:global"))
        y: R.Tensor((n, m), dtype="float32", vdevice="llvm:0:global") = R.to_vdevice(_, dst_vdevice="llvm:0:global")
        return R.shape([n * 2, m * 3])"#;
    assert_eq!(pp(src), src);
    let m = module(parse(src).unwrap());
    let f = m.relax_function("foo").unwrap();
    let ExprKind::Seq(seq) = f.body.kind() else { panic!() };
    let Binding::MatchCast {
        struct_info: StructInfo::Tensor(t),
        ..
    } = &seq.blocks[0].bindings[0]
    else {
        panic!()
    };
    let vd = t.vdevice.as_ref().unwrap();
    assert_eq!(vd.target.config.get_str("arch"), Some("sm_80"));
    assert_eq!(
        print_struct_info(&seq.blocks[0].bindings[0].var().struct_info().unwrap().clone(), None),
        "R.Tensor((n, m), dtype=\"float32\", vdevice=\"cuda:-1:global\")"
    );
}

#[test]
fn constants_print_like_tvm() {
    let src = r#"
@R.function
def f() -> R.Tuple:
    a = R.const(1, "int32")
    b = R.const(0.1, "float32")
    c = R.const(True, "bool")
    d = R.const(1e-5, "float64")
    e = R.const([[1.5, 2], [3, 4]], "float16")
    g = R.const(3, "uint8")
    return R.tuple()
"#;
    let t = pp(src);
    for line in [
        "a = R.const(1, \"int32\")",
        "b = R.const(0.10000000149011612, \"float32\")",
        "c = R.const(True, \"bool\")",
        "d = R.const(1.0000000000000001e-05, \"float64\")",
        "e = R.const([[1.5, 2.0], [3.0, 4.0]], \"float16\")",
        "g = R.const(3, \"uint8\")",
    ] {
        assert!(t.contains(line), "missing `{line}` in\n{t}");
    }
}

#[test]
fn diagnostics_name_the_problem_and_location() {
    assert_eq!(
        err("@R.function\ndef f(x: R.Tensor((2,), \"float32\")):\n    y = R.frobnicate(x)\n    return y\n"),
        "3:9 unknown Relax operator `R.frobnicate`"
    );
    assert_eq!(
        err("@R.function\ndef f(x: R.Tensor((2,), \"float32\")):\n    return y\n"),
        "3:12 undefined variable `y`"
    );
    assert_eq!(
        err("@R.function\ndef f(x):\n    return x\n"),
        "2:7 parameter `x` needs a StructInfo annotation like R.Tensor(...)"
    );
    assert_eq!(
        err("@R.function\ndef f(x: R.Tensr((2,))):\n    return x\n"),
        "2:10 expected a StructInfo annotation like R.Tensor(...), found `R.Tensr`"
    );
    assert_eq!(
        err("@R.function\ndef f(x: R.Tensor((2,), \"float32\")):\n    y = R.sum(x, axis=1, keep=True)\n    return y\n"),
        "3:31 R.sum has no parameter `keep`"
    );
    assert!(
        err("@R.function\ndef f(x: R.Tensor((n,), \"float32\")):\n    return x\n")
            .contains("undefined symbolic variable `n`")
    );
    assert!(err("def f(:\n").starts_with("1:"));
    assert!(err("@R.function\ndef f(x: R.Tensor):\n    if x:\n        y = x\n    return x\n").contains("else"));
    assert!(
        err("@R.function\ndef f(x: R.Tensor):\n    y = metadata[\"relax.expr.Constant\"][0]\n    return y\n")
            .contains("metadata section")
    );
    assert!(err("@R.function\ndef f(x: R.Tensor):\n    y = x\n").contains("return"));
}

#[test]
fn undefined_variable_declarations_are_kept() {
    let src = r#"# from tvm.script import relax as R

@R.function
def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
    gv0: R.Tensor((2,), dtype="float32")
    y: R.Tensor((2,), dtype="float32") = R.add(x, gv0)
    return y"#;
    assert_eq!(pp(src), src);
}

#[test]
fn garbage_inputs_do_not_panic() {
    for src in [
        "",
        "x = 1",
        "@I.ir_module\nclass M:\n    x = 1\n",
        "@R.function\ndef f() -> R.Tensor((\"n +\",)):\n    return R.tuple()\n",
        "@R.function\ndef f(x: R.Tensor((1,), \"float32\")):\n    return x[99999999999999999999]\n",
        "@R.function\ndef f(x: R.Tensor(\"floaty\")):\n    return x\n",
        "@R.function\ndef f(x: R.Tensor((1,), \"float32\")):\n    a, b = x\n    return R.nn.conv2d(a)\n",
        "@R.function\ndef f():\n    return R.const([[1], [2, 3]])\n",
    ] {
        let _ = parse(src).map(|p| print_program(&p));
    }
}

/// Rebinding a name prints unique names per function, like TVM's printer
/// (`h`, `h_1`, `h_2`, ...), and a name already taken by the source is skipped.
#[test]
fn rebound_names_print_unique() {
    let src = r#"@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 8), "float32")) -> R.Tensor((4, 8), "float32"):
        with R.dataflow():
            h = R.matmul(x, w)
            h = R.add(h, x)
            h_1 = R.nn.relu(h)
            h = R.add(h_1, h)
            y = R.multiply(h, h)
            y = R.add(y, x)
            out = R.nn.softmax(y, axis=-1)
            R.output(out)
        return out
"#;
    let t = pp(src);
    // TVM 0.27 prints these names (it also annotates the inferred types, which this
    // parser does not infer).
    let tvm = r#"            h = R.matmul(x, w, out_dtype=None)
            h_1 = R.add(h, x)
            h_1_1 = R.nn.relu(h_1)
            h_2 = R.add(h_1_1, h_1)
            y = R.multiply(h_2, h_2)
            y_1 = R.add(y, x)
            out = R.nn.softmax(y_1, axis=-1)
            R.output(out)
"#;
    assert!(t.contains(tvm), "got\n{t}");
}

#[test]
fn call_inplace_packed_null_value_and_device_shorthands() {
    let src = r#"@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        n = R.null_value()
        h = R.hint_on_device(x, R.cpu(0))
        e = R.call_inplace_packed("test.double_inplace", h, inplace_indices=[0], ty_args=(R.Tensor((2, 3), dtype="float32"),))
        return e
"#;
    let out = pp(src);
    assert!(out.contains("n = R.null_value()"), "{out}");
    assert!(
        out.contains(r#"R.hint_on_device(x, R.device(device_type=1, index=0), "global")"#),
        "{out}"
    );
    assert!(
        out.contains(r#"R.call_inplace_packed("test.double_inplace", h, inplace_indices=[0], ty_args=(R.Tensor((2, 3), dtype="float32"),))"#),
        "{out}"
    );
    // The printed text parses back to the same text.
    assert_eq!(pp(&out), out);
}

/// `n = T.int64()` in a Relax function names the `n` a parameter's StructInfo already
/// bound (TVM's parser reuses the variable in scope), so later uses are the same var.
#[test]
fn redeclared_symbolic_variable_is_the_parameter_one() {
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        y: R.Tensor((n, 4), dtype="float32") = R.add(x, x)
        return y
"#;
    let m = module(parse(src).unwrap_or_else(|d| panic!("{d}")));
    let f = m.relax_function("main").unwrap();
    let param_n = match f.params[0].struct_info() {
        Some(StructInfo::Tensor(t)) => t.shape_values().unwrap()[0].clone(),
        other => panic!("{other:?}"),
    };
    let ExprKind::Seq(seq) = f.body.kind() else {
        panic!("body")
    };
    let Binding::VarBinding { var, .. } = &seq.blocks[0].bindings[0] else {
        panic!("binding")
    };
    let y_n = match var.struct_info() {
        Some(StructInfo::Tensor(t)) => t.shape_values().unwrap()[0].clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        param_n.as_var().map(|v| v.id()),
        y_n.as_var().map(|v| v.id()),
        "one variable `n`"
    );
    assert!(param_n.as_var().is_some());
    let e = err(&src.replace("n = T.int64()", "n = T.int32()"));
    assert!(e.contains("Expected the same dtype for PrimType values"), "{e}");
}

/// TVM 0.27's printing of `R.stack`, `R.log_add_exp`, `R.nn.selu` and
/// `R.nn.instance_norm` parses and prints back byte for byte.
#[test]
fn stack_log_add_exp_selu_instance_norm_round_trip() {
    let tvm = r#"# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((2, 3, 4, 4), dtype="float32"), g: R.Tensor((3,), dtype="float32"), b: R.Tensor((3,), dtype="float32")) -> R.Tuple(R.Tensor((2, 2, 3, 4, 4), dtype="float32"), R.Tensor((2, 3, 4, 4), dtype="float32"), R.Tensor((2, 3, 4, 4), dtype="float32"), R.Tensor((2, 3, 4, 4), dtype="float32")):
        s: R.Tensor((2, 2, 3, 4, 4), dtype="float32") = R.stack((a, a), axis=1)
        l: R.Tensor((2, 3, 4, 4), dtype="float32") = R.log_add_exp(a, a)
        e: R.Tensor((2, 3, 4, 4), dtype="float32") = R.nn.selu(a)
        n: R.Tensor((2, 3, 4, 4), dtype="float32") = R.nn.instance_norm(a, g, b, channel_axis=1, axes=[2, 3], epsilon=1.0000000000000001e-05, center=True, scale=True)
        return (s, l, e, n)"#;
    assert_eq!(pp(tvm), tvm);
}

/// `R.linear(data, weight, bias)` is TVMScript sugar: it parses to
/// `add(matmul(data, permute_dims(weight)), bias)`, as TVM's parser builds it.
#[test]
fn linear_is_expanded_at_parse_time() {
    let src = r#"@R.function
def foo(x: R.Tensor((2, 5), "float32"), w: R.Tensor((3, 5), "float32"), b: R.Tensor((3,), "float32")):
    gv = R.linear(x, w, b)
    nb = R.linear(x, w, out_dtype="float16")
    return (gv, nb)
"#;
    let out = pp(src);
    assert!(
        out.contains("gv = R.add(R.matmul(x, R.permute_dims(w, axes=None), out_dtype=None), b)"),
        "{out}"
    );
    assert!(
        out.contains(r#"nb = R.matmul(x, R.permute_dims(w, axes=None), out_dtype="float16")"#),
        "{out}"
    );
    assert!(err(
        "@R.function\ndef f(x: R.Tensor((2, 5), \"float32\")):\n    y = R.linear(x, x, scale=2)\n    return y\n"
    )
    .contains("no parameter `scale`"));
}

/// Parse, print, parse again: the two modules must be structurally equal.
fn exact_round_trip(src: &str) -> String {
    let a = module(parse(src).unwrap_or_else(|d| panic!("{d}\n{src}")));
    let text = print_program(&Program::Module(a.clone()));
    let b = module(parse(&text).unwrap_or_else(|d| panic!("reparse: {d}\n{text}")));
    if let Err(m) = relax_ir::structural::check_structural_equal_module(&a, &b) {
        panic!("{m:?}\n{text}");
    }
    text
}

/// Three classes of print → parse mismatches found by the round-trip fuzzer.
#[test]
fn fuzzer_round_trip_classes_parse_back_equal() {
    // An annotated, unused unit binding keeps its annotation (an unannotated `_` still
    // prints as an expression statement, as TVM prints it).
    let text = exact_round_trip(
        r#"@I.ir_module
class Module:
    @R.function(private=True)
    def quux(x: R.Tensor((), "int32")) -> R.Tensor((), "int32"):
        R.func_attr({"relax.force_pure": True})
        y: R.Tuple = R.print(format="Lol")
        R.print(format="bare")
        z: R.Tensor((), dtype="int32") = R.multiply(x, x)
        return z
"#,
    );
    assert!(text.contains("y: R.Tuple = R.print("), "{text}");
    assert!(text.contains("\n        R.print(format=R.str(\"bare\"))\n"), "{text}");
    // A module `TypeVar` inside a quoted signature dimension is the int64 variable.
    let text = exact_round_trip(
        r#"@I.ir_module
class Module:
    @T.prim_func(private=True)
    def neg(var_x: T.handle, var_y: T.handle):
        a = T.int64()
        X = T.match_buffer(var_x, (-a,))
        Y = T.match_buffer(var_y, (a,))
        for i in range(a):
            Y[i] = X[i]

    @R.function
    def main(x: R.Tensor(("a",), dtype="float32")) -> R.Tensor(("a",), dtype="float32"):
        a = T.int64()
        gv = R.call_tir(Module.neg, (x,), out_ty=R.Tensor((a,), dtype="float32"))
        return gv
"#,
    );
    assert!(text.contains("\"a * T.int64(-1)\""), "{text}");
    // A quoted dimension with quotes inside is escaped, as TVM escapes it.
    let text = exact_round_trip(
        r#"@I.ir_module
class Module:
    @T.prim_func(private=True)
    def f(var_x: T.handle, var_y: T.handle):
        a = T.int32()
        X = T.match_buffer(var_x, (T.Cast("int64", a) * 2,))
        Y = T.match_buffer(var_y, (T.Cast("int64", a) * 2,))
        for i in range(T.Cast("int64", a) * 2):
            Y[i] = X[i]
"#,
    );
    assert!(
        text.contains(r#"T.Buffer(("T.Cast(\"int64\", a) * T.int64(2)",)"#),
        "{text}"
    );
    // A string is not a shape dimension (TVM refuses `+"n"` too).
    let e = err("@R.function\ndef f(y: R.Tensor((\"m\", +\"n\"), dtype=\"float32\")):\n    return y\n");
    assert!(e.contains("bad operand type for unary `+`: a string"), "{e}");
}

/// A shape variable only the return annotation names is a `TypeVar` in a standalone
/// function too (it was declared in the body, after the signature that uses it).
#[test]
fn standalone_function_return_only_variable_is_a_typevar() {
    let src = r#"@R.function(private=True)
def main(A: R.Tensor(("extent",))) -> R.Tensor(("ext",)):
    extent = T.int64()
    output: R.Tensor((extent - 1,)) = R.strided_slice(A, (0,), (0,), (extent - 1,), assume_inbound=False)
    return output
"#;
    let a = parse(src).unwrap_or_else(|d| panic!("{d}"));
    let text = print_program(&a);
    assert!(text.contains("ext = TypeVar(\"ext\")"), "{text}");
    assert!(!text.contains("ext = T.int64()"), "{text}");
    let b = parse(&text).unwrap_or_else(|d| panic!("reparse: {d}\n{text}"));
    let (Program::Function { func: fa, .. }, Program::Function { func: fb, .. }) = (&a, &b) else {
        panic!("expected functions");
    };
    // `ext` is free in both (nothing binds it), so free variables are mapped.
    let eq = relax_ir::structural::StructuralEqual::new().map_free_vars(true);
    if let Err(m) = eq.function(fa, fb) {
        panic!("{m:?}\n{text}");
    }
}

#[test]
fn unary_plus_on_a_relax_value_is_refused() {
    let e = err("@R.function\ndef f(n: T.int64) -> T.int64:\n    a: T.int64 = n + 1\n    return +  a\n");
    assert_eq!(e, "4:12 unary `+` is not defined on a Relax expression");
}

/// More classes from the round-trip fuzzer: a string under unary `+`, a TIR float
/// attribute that overflows to infinity, and a PrimValue used as a callee.
#[test]
fn fuzzer_round_trip_classes_two() {
    let e = err("@R.function\ndef f(x: R.Tensor((2,), \"float32\")):\n    y = R.call_dps_packed(+ \"k\", (x,), out_ty=R.Tensor((2,), \"float32\"))\n    return y\n");
    assert!(e.contains("bad operand type for unary `+`"), "{e}");
    let text = exact_round_trip(
        "@I.ir_module\nclass Module:\n    @T.prim_func\n    def f(a: T.Buffer((2,), \"float32\")):\n        T.func_attr({\"k\": 1e400, \"m\": -1e400})\n        a[0] = T.float32(1)\n",
    );
    assert!(text.contains("\"k\": 1e999, \"m\": -1e999"), "{text}");
    let text = exact_round_trip(
        r#"@R.function(pure=False, private=True)
def g(x: R.Tensor(["N"], "float32")):
    N = T.int64()
    _ = R.assert_op(R.prim_value(N % 16 == 0)(N % 16 == 0))
    return x
"#,
    );
    assert!(text.contains("R.prim_value(N % 16 == 0)(N % 16 == 0)"), "{text}");
}
