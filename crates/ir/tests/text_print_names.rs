//! Printing keeps names apart where one namespace holds two variables: a Relax
//! variable named like a symbolic shape variable (renamed `a_1`, as TVM 0.27's printer
//! does), and a PrimFunc's own shape variable named like a module-level `TypeVar`
//! (renamed, since read back it would be the module's `int64` TypeVar). The printed
//! text re-parses to the same program and printing it again gives the same text.

use relax_ir::structural::StructuralEqual;
use relax_ir::text::{parse, print_program};
use relax_ir::tir::{PrimExprKind, Stmt};
use relax_ir::BaseFunc;

/// Parse, print; check re-parsing gives a structurally equal module and that printing
/// is a fixed point. The printed text.
fn print_stable(src: &str) -> String {
    let p = parse(src).expect("parses");
    let printed = print_program(&p);
    let again = parse(&printed).unwrap_or_else(|d| panic!("printed text re-parses: {d}\n{printed}"));
    let reprinted = print_program(&again);
    assert_eq!(printed, reprinted, "print is a fixed point");
    StructuralEqual::new()
        .map_free_vars(true)
        .module(&p.into_module(), &again.into_module())
        .unwrap_or_else(|e| panic!("re-parsed module differs: {e:?}\n{printed}"));
    printed
}

#[test]
fn relax_parameter_named_like_a_shape_variable_is_renamed() {
    // Built the way TVM's BlockBuilder can (a parameter `a` of shape `(a,)`); the
    // source form our parser accepts writes the dimension quoted.
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("a",), "float32"), y: R.Tensor(("a",), "float32")) -> R.Tensor(("a",), "float32"):
        gv = R.add(a, y)
        return gv
"#;
    let printed = print_stable(src);
    // TVM 0.27 prints this module (built with relax.BlockBuilder) as:
    let tvm = r#"a = TypeVar("a")
@I.ir_module
class Module:
    @R.function
    def main(a_1: R.Tensor((a,), dtype="float32"), y: R.Tensor((a,), dtype="float32")) -> R.Tensor((a,), dtype="float32"):
        gv = R.add(a_1, y)
        return gv"#;
    assert!(printed.ends_with(tvm), "{printed}");
}

#[test]
fn relax_binding_named_like_a_body_shape_variable_is_renamed() {
    // `m` names a symbolic variable (declared in the body) and a Relax variable.
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32"), z: R.Tensor(ndim=1, dtype="float32")):
        m = T.int64()
        m = R.add(x, x)
        y = R.match_cast(z, R.Tensor((m,), "float32"))
        return (m, y)
"#;
    let printed = print_stable(src);
    assert!(printed.contains("        m = T.int64()\n"), "{printed}");
    assert!(printed.contains("        m_1 = R.add(x, x)\n"), "{printed}");
    assert!(printed.contains("return (m_1, y)"), "{printed}");
}

#[test]
fn prim_func_shape_variable_named_like_a_module_type_var_keeps_its_meaning() {
    // The PrimFunc's `n` (int32, matched from its buffers) and the Relax function's
    // `n` (a module-level TypeVar when printed) are different variables.
    let src = r#"
@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def add_one(x: T.handle, y: T.handle):
        n = T.int32()
        X = T.match_buffer(x, (n,), "float32")
        Y = T.match_buffer(y, (n,), "float32")
        for i in range(n):
            with T.sblock("b"):
                vi = T.axis.spatial(n, i)
                Y[vi] = X[vi] + T.float32(1)

    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        cls = Module
        y = R.call_tir(cls.add_one, (x,), R.Tensor((n,), "float32"))
        return y
"#;
    let printed = print_stable(src);
    assert!(
        printed.contains(r#"def add_one(X: T.Buffer(("n_1",), "float32"), Y: T.Buffer((n_1,), "float32")):"#),
        "{printed}"
    );
    // Read back, the loop runs to the buffers' own extent variable.
    let m = parse(&printed).expect("parses").into_module();
    let Some(BaseFunc::Prim(f)) = m.get("add_one") else {
        panic!("add_one is a PrimFunc");
    };
    let extent_var = f.buffer_map[0].1.shape()[0].as_var().expect("a variable").clone();
    let mut loop_extents = Vec::new();
    find_loops(&f.body, &mut loop_extents);
    assert_eq!(loop_extents.len(), 1);
    match loop_extents[0].kind() {
        PrimExprKind::Var(v) => assert_eq!(v, &extent_var, "the loop's extent is the buffer's `n`"),
        other => panic!("extent {other:?}"),
    }
}

fn find_loops(s: &Stmt, out: &mut Vec<relax_ir::tir::PrimExpr>) {
    if let Stmt::For(f) = s {
        out.push(f.extent.clone());
    }
    for c in s.children() {
        find_loops(c, out);
    }
}

/// TVM's own printed form of its test module `TestVMCompileE2E2` declares the
/// PrimFunc's `m, n` (int32, defined by the quoted signature shape) again in the body,
/// where the module also declares `m`, `n` and `k` as TypeVars: TVM's parser rejects it
/// ("Variable m already defined"); ours rejects it too instead of silently giving the
/// body fresh variables (which made the matmul compute zeros).
#[test]
fn redeclaring_a_signature_variable_with_another_dtype_is_an_error() {
    let tvm_printed = r#"
k = TypeVar("k")
m = TypeVar("m")
n = TypeVar("n")
@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def tir_matmul(A: T.Buffer(("m", "n"), "float32"), B: T.Buffer((n, "k"), "float32"), C: T.Buffer((m, k), "float32")):
        m, n = T.int32(), T.int32()
        k = T.int32()
        for i, j, k_1 in T.grid(m, k, n):
            with T.sblock("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k_1])
                with T.init():
                    C[vi, vj] = T.float32(0.0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"#;
    let err = parse(tvm_printed).expect_err("the body cannot redefine the signature's `m`");
    assert!(
        err.message.contains("`m` is defined by the signature"),
        "{}",
        err.message
    );
    // Without module TypeVars the same declaration names the signature's variable.
    let plain = tvm_printed
        .lines()
        .filter(|l| !l.contains("TypeVar"))
        .collect::<Vec<_>>()
        .join("\n");
    print_stable(&plain);
}

/// The source of TVM's `TestVMCompileE2E2` (without its `global_symbol` attribute, which
/// the printer leaves out where it is the function's name): printed, its PrimFunc's
/// variables take names apart from the Relax function's TypeVars.
#[test]
fn tvm_vm_compile_e2e2_prints_to_a_fixed_point() {
    let src = r#"
@I.ir_module
class TestVMCompileE2E2:
    @T.prim_func(s_tir=True)
    def tir_matmul(x: T.handle, y: T.handle, z: T.handle) -> None:
        m = T.int32()
        n = T.int32()
        k = T.int32()
        A = T.match_buffer(x, (m, n))
        B = T.match_buffer(y, (n, k))
        C = T.match_buffer(z, (m, k))

        for i, j, k in T.grid(m, k, n):
            with T.sblock("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @R.function
    def func(
        x: R.Tensor(("m", "n"), "float32"), w: R.Tensor(("n", "k"), "float32")
    ) -> R.Tensor:
        m, k = T.int64(), T.int64()
        cls = TestVMCompileE2E2
        gv0 = R.call_tir(cls.tir_matmul, (x, w), R.Tensor((m, k), dtype="float32"))
        return gv0
"#;
    let printed = print_stable(src);
    assert!(
        printed.contains(r#"def tir_matmul(A: T.Buffer(("m_1", "n_1"), "float32"), B: T.Buffer((n_1, "k_1"), "float32"), C: T.Buffer((m_1, k_1), "float32")):"#),
        "{printed}"
    );
}

/// TVM 0.27's own text (its parser test corpus): a PrimFunc's scalar parameter `n`
/// defines that name in the function, so it keeps it next to the module's TypeVar `n`
/// (renaming only where the name would read back as another variable).
const TVM_SCALAR_PARAM: &str = r#"# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

n = TypeVar("n")
@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def copy(X: T.Buffer(("n * T.int64(2)",), "float32"), n: T.int64, Y: T.Buffer((n * T.int64(2),), "float32")):
        # with T.sblock("root"):
        for i in range(n * T.int64(2)):
            with T.sblock("block"):
                vi = T.axis.spatial(n * T.int64(2), i)
                T.reads(X[vi])
                T.writes(Y[vi])
                Y[vi] = X[vi]

    @R.function
    def main(dumb_param: R.Tensor((n,), dtype="float32"), x: R.Tensor(("n * 2",), dtype="float32")) -> R.Tensor(("n * 2",), dtype="float32"):
        cls = Module
        y = R.call_tir(cls.copy, (x, n), out_ty=R.Tensor((n * 2,), dtype="float32"))
        return y"#;

#[test]
fn prim_func_scalar_parameter_keeps_its_name_next_to_a_module_type_var() {
    let printed = print_stable(TVM_SCALAR_PARAM);
    assert_eq!(printed, TVM_SCALAR_PARAM);
    // Read back, the buffers' shapes and the loop use the parameter, not the TypeVar.
    let m = parse(&printed).expect("parses").into_module();
    let Some(BaseFunc::Prim(f)) = m.get("copy") else {
        panic!("copy is a PrimFunc");
    };
    let n = &f.params[1];
    for (_, b) in &f.buffer_map {
        let mut vars = Vec::new();
        relax_ir::visit::for_each_prim_expr(&b.shape()[0], &mut |e| {
            if let PrimExprKind::Var(v) = e.kind() {
                vars.push(v.clone());
            }
        });
        assert_eq!(vars, vec![n.clone()], "{} is shaped by the parameter", b.name());
    }
}

/// TVM 0.27 lists the module's TypeVars function by function in printing order, each
/// function's sorted, a name once (its printing of this module, built by its parser).
#[test]
fn type_vars_are_listed_per_function_in_printing_order() {
    for tvm in [TVM_TYPE_VARS_RELAX, TVM_TYPE_VARS_MIXED] {
        assert_eq!(print_stable(tvm), tvm);
    }
}

const TVM_TYPE_VARS_RELAX: &str = r#"# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import relax as R

y = TypeVar("y")
z = TypeVar("z")
a = TypeVar("a")
b = TypeVar("b")
@I.ir_module
class Module:
    @R.function
    def f1(x: R.Tensor((z, y), dtype="float32")) -> R.Tensor((z, y), dtype="float32"):
        return x

    @R.function
    def f2(x: R.Tensor((b, a), dtype="float32"), w: R.Tensor((z,), dtype="float32")) -> R.Tensor((b, a), dtype="float32"):
        return x"#;

const TVM_TYPE_VARS_MIXED: &str = r#"# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

c = TypeVar("c")
m = TypeVar("m")
z = TypeVar("z")
a = TypeVar("a")
b = TypeVar("b")
k = TypeVar("k")
y = TypeVar("y")
@I.ir_module
class Module:
    @T.prim_func
    def p(X: T.Buffer((m, c), "float32"), Y: T.Buffer((m, c), "float32")):
        for i, j in T.grid(m, c):
            Y[i, j] = X[i, j]

    @R.function
    def f1(x: R.Tensor((z,), dtype="float32")) -> R.Tensor((z,), dtype="float32"):
        return x

    @R.function
    def f2(x: R.Tensor((b, a), dtype="float32")) -> R.Tensor((b, a), dtype="float32"):
        return x

    @R.function
    def f3(x: R.Tensor((y, k), dtype="float32")) -> R.Tensor((y, k), dtype="float32"):
        return x"#;

/// A parameter is named before the symbolic variables the body declares: TVM 0.27
/// keeps the parameter `m` and prints the body's `m` as `m_1` (its printing of this
/// module, built with `relax.BlockBuilder`).
#[test]
fn body_shape_variable_named_like_a_parameter_is_renamed() {
    assert_eq!(print_stable(TVM_PARAM_BEFORE_BODY_VAR), TVM_PARAM_BEFORE_BODY_VAR);
}

const TVM_PARAM_BEFORE_BODY_VAR: &str = r#"# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(m: R.Tensor((4,), dtype="float32"), z: R.Tensor(dtype="float32", ndim=1)) -> R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor(dtype="float32", ndim=1)):
        m_1 = T.int64()
        gv: R.Tensor((m_1,), dtype="float32") = R.match_cast(z, R.Tensor((m_1,), dtype="float32"))
        gv1: R.Tensor((4,), dtype="float32") = R.add(m, m)
        return (gv1, gv)"#;

/// A buffer matched in the body (its shape has a variable of a dtype the signature
/// cannot spell, here `int16`) whose shape also has an `int64` variable that no buffer
/// of the signature defines: the printed body declared the `int16` one only, and the
/// bare `int64` name did not re-parse (`undefined name c`; found by the `parse`
/// libFuzzer target from a TVM corpus program). Both are declared in the body now.
#[test]
fn int64_shape_variable_of_a_body_matched_buffer_is_declared() {
    let src = r#"
@I.ir_module
class Module:
    @T.prim_func
    def f(var_x: T.handle, y: T.Buffer((4,), "float32")):
        n, c = T.int16(), T.int64()
        x = T.match_buffer(var_x, (n, c))
        for i in range(c):
            y[0] = x[0, i]
"#;
    let printed = print_stable(src);
    assert!(printed.contains("c = T.int64()"), "{printed}");
    assert!(printed.contains("n = T.int16()"), "{printed}");
}
