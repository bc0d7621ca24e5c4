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
