//! Fusion with symbolic sizes. `fuse-tir` of kernels written with symbolic sizes
//! and called with static shapes: the fused PrimFunc takes the sizes of the call (a
//! loop over `n` must run `n` times, not be left with `n` unbound) and passes the
//! TIR verifier. `fuse-ops` of a group whose sizes no tensor parameter gives: the
//! fused function takes them as a shape parameter. Each result is compared with the
//! unfused module and with a host reference.

use relax_engine::{DeviceChoice, Engine, EngineConfig, Value};
use relax_ir::{BaseFunc, IRModule};
use relax_transform::tir_verify::verify_module;
mod common;
use common::{assert_close, f32s, pipeline, tensor};

fn parse(src: &str) -> IRModule {
    relax_ir::text::parse(src).expect("parses").into_module()
}

/// `check` (which normalizes the parsed module), then `fuse-tir`, verifying after each.
fn fuse_tir(m: &IRModule) -> IRModule {
    passes(m, &["check", "fuse-tir"])
}

/// Run the passes `names`, verifying the module after each.
fn passes(m: &IRModule, names: &[&str]) -> IRModule {
    pipeline(names)
        .run(m.clone())
        .expect("the passes run and their output verifies")
}

fn vector(values: &[f32]) -> Value {
    tensor(&[values.len()], values.to_vec())
}

fn run(m: &IRModule, args: &[&[f32]]) -> Vec<f32> {
    run_values(m, args.iter().map(|a| vector(a)).collect())
}

fn run_values(m: &IRModule, args: Vec<Value>) -> Vec<f32> {
    f32s(&run_main(m, args))
}

/// `main` of `m` on the host, unoptimized (the module as the passes left it).
fn run_main(m: &IRModule, args: Vec<Value>) -> Value {
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        optimize: false,
        host_library: false,
        ..EngineConfig::default()
    });
    engine.load(m).expect("loads").run("main", &args).expect("runs")
}

fn prim_funcs(m: &IRModule) -> Vec<String> {
    m.functions
        .iter()
        .filter(|(_, f)| matches!(f, BaseFunc::Prim(_)))
        .map(|(g, _)| g.name().to_string())
        .collect()
}

fn ramp(n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| ((i * 7 % 11) as f32 - 3.0) * scale).collect()
}

/// A reduction over a symbolic length, called with 48 and 20 elements in one group.
const SUM_TWO_SIZES: &str = r#"
from typing import TypeVar
from tvm.script import ir as I
from tvm.script import tirx as T
from tvm.script import relax as R

len_x = TypeVar("len_x")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def total(X: T.Buffer((len_x,), "float32"), S: T.Buffer((T.int64(1),), "float32")):
        for i in range(len_x):
            with T.sblock("total"):
                vi = T.axis.reduce(len_x, i)
                T.reads(X[vi])
                T.writes(S[0])
                with T.init():
                    S[0] = T.float32(0.0)
                S[0] = S[0] + X[vi]

    @T.prim_func(private=True, s_tir=True)
    def sub1(X: T.Buffer((T.int64(1),), "float32"), Y: T.Buffer((T.int64(1),), "float32"), D: T.Buffer((T.int64(1),), "float32")):
        for i in range(T.int64(1)):
            with T.sblock("sub"):
                vi = T.axis.spatial(T.int64(1), i)
                T.reads(X[vi], Y[vi])
                T.writes(D[vi])
                D[vi] = X[vi] - Y[vi]

    @R.function(private=True)
    def fused(x: R.Tensor((48,), dtype="float32"), y: R.Tensor((20,), dtype="float32")) -> R.Tensor((1,), dtype="float32"):
        R.func_attr({"Primitive": True})
        cls = Module
        with R.dataflow():
            sx = R.call_tir(cls.total, (x,), out_ty=R.Tensor((1,), dtype="float32"))
            sy = R.call_tir(cls.total, (y,), out_ty=R.Tensor((1,), dtype="float32"))
            gv = R.call_tir(cls.sub1, (sx, sy), out_ty=R.Tensor((1,), dtype="float32"))
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((48,), dtype="float32"), y: R.Tensor((20,), dtype="float32")) -> R.Tensor((1,), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((1,), dtype="float32") = cls.fused(x, y)
            R.output(gv)
        return gv
"#;

#[test]
fn symbolic_length_takes_each_calls_static_size() {
    let input = parse(SUM_TWO_SIZES);
    let out = fuse_tir(&input);
    assert_eq!(
        prim_funcs(&out),
        vec!["fused".to_string()],
        "one fused PrimFunc is left"
    );
    assert!(verify_module(&out).is_empty());
    let (x, y) = (ramp(48, 0.25), ramp(20, 0.5));
    let want = x.iter().sum::<f32>() - y.iter().sum::<f32>();
    assert!(want.abs() > 1.0, "the reference is not trivially zero");
    let ours = run(&out, &[&x, &y]);
    assert_close(&ours, &[want]);
    assert_close(&ours, &run(&input, &[&x, &y]));
}

/// A kernel whose buffer sizes are expressions (`m * n`) of the sizes given by its
/// other buffers, chained twice.
const PRODUCT_SIZES: &str = r#"
from typing import TypeVar
from tvm.script import ir as I
from tvm.script import tirx as T
from tvm.script import relax as R

m = TypeVar("m")
n = TypeVar("n")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def scale_shift(A: T.Buffer(("m * n",), "float32"), B: T.Buffer((m,), "float32"), C: T.Buffer((n,), "float32"), D: T.Buffer(("m * n",), "float32")):
        for i, j in T.grid(m, n):
            with T.sblock("compute"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi * n + vj], B[vi], C[vj])
                T.writes(D[vi * n + vj])
                D[vi * n + vj] = A[vi * n + vj] * B[vi] + C[vj]

    @R.function(private=True)
    def fused(x: R.Tensor((24,), dtype="float32"), b: R.Tensor((4,), dtype="float32"), c: R.Tensor((6,), dtype="float32")) -> R.Tensor((24,), dtype="float32"):
        R.func_attr({"Primitive": True})
        cls = Module
        with R.dataflow():
            y = R.call_tir(cls.scale_shift, (x, b, c), out_ty=R.Tensor((24,), dtype="float32"))
            z = R.call_tir(cls.scale_shift, (y, b, c), out_ty=R.Tensor((24,), dtype="float32"))
            R.output(z)
        return z

    @R.function
    def main(x: R.Tensor((24,), dtype="float32"), b: R.Tensor((4,), dtype="float32"), c: R.Tensor((6,), dtype="float32")) -> R.Tensor((24,), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((24,), dtype="float32") = cls.fused(x, b, c)
            R.output(gv)
        return gv
"#;

#[test]
fn expression_sizes_are_evaluated_from_bound_sizes() {
    let input = parse(PRODUCT_SIZES);
    let out = fuse_tir(&input);
    assert_eq!(prim_funcs(&out), vec!["fused".to_string()]);
    let (x, b, c) = (ramp(24, 0.5), ramp(4, 0.75), ramp(6, 0.125));
    let mut want = x.clone();
    for _ in 0..2 {
        want = (0..24).map(|k| want[k] * b[k / 6] + c[k % 6]).collect();
    }
    let ours = run(&out, &[&x, &b, &c]);
    assert_close(&ours, &want);
    assert_close(&ours, &run(&input, &[&x, &b, &c]));
}

/// A PrimFunc whose loop runs over a size no parameter gives is rejected.
#[test]
fn verifier_rejects_an_unbound_loop_extent() {
    let input = parse(SUM_TWO_SIZES);
    let Some(BaseFunc::Prim(total)) = input
        .functions
        .iter()
        .find(|(g, _)| g.name() == "total")
        .map(|(_, f)| f)
    else {
        panic!("no PrimFunc `total`");
    };
    // Give the kernel a static input buffer: `len_x` is no longer defined anywhere.
    let mut broken = total.clone();
    let (h, b) = broken.buffer_map[0].clone();
    let fixed = relax_ir::tir::Buffer::new(b.name(), b.dtype(), vec![relax_ir::tir::PrimExpr::int(48)]);
    broken.buffer_map[0] = (h, fixed);
    let errors = relax_transform::tir_verify::verify_prim_func("total", &broken);
    assert!(
        errors.iter().any(|e| e.message.contains("`len_x`")),
        "expected an undefined-variable error, got {errors:?}"
    );
    assert!(relax_transform::tir_verify::verify_prim_func("total", total).is_empty());
}

/// A chain over a size given only as a shape argument: `iota` fills `(n,)` with
/// its indices and `square` squares it.
const SHAPE_ONLY_GROUP: &str = r#"
from typing import TypeVar
from tvm.script import ir as I
from tvm.script import tirx as T
from tvm.script import relax as R

n = TypeVar("n")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def iota(O: T.Buffer((n,), "float32")):
        T.func_attr({"op_pattern": 0, "tirx.noalias": True})
        for i in range(n):
            with T.sblock("iota"):
                vi = T.axis.spatial(n, i)
                T.reads()
                T.writes(O[vi])
                O[vi] = T.Cast("float32", vi)

    @T.prim_func(private=True, s_tir=True)
    def square(A: T.Buffer((n,), "float32"), O: T.Buffer((n,), "float32")):
        T.func_attr({"op_pattern": 0, "tirx.noalias": True})
        for i in range(n):
            with T.sblock("square"):
                vi = T.axis.spatial(n, i)
                T.reads(A[vi])
                T.writes(O[vi])
                O[vi] = A[vi] * A[vi]

    @R.function
    def main(s: R.Shape([n])) -> R.Tensor((n,), dtype="float32"):
        cls = Module
        with R.dataflow():
            a = R.call_tir(cls.iota, R.tuple(), out_ty=R.Tensor((n,), dtype="float32"))
            b = R.call_tir(cls.square, (a,), out_ty=R.Tensor((n,), dtype="float32"))
            R.output(b)
        return b
"#;

#[test]
fn fused_group_takes_its_shape_variables_as_a_parameter() {
    let input = passes(&parse(SHAPE_ONLY_GROUP), &["check"]);
    let fused = passes(&input, &["fuse-ops"]);
    let Some(BaseFunc::Relax(group)) = fused
        .functions
        .iter()
        .find(|(g, _)| g.name().starts_with("fused_"))
        .map(|(_, f)| f)
    else {
        panic!("no fused function");
    };
    assert_eq!(
        group.params.len(),
        1,
        "the group's only parameter is its shape variables"
    );
    assert!(matches!(
        group.params[0].struct_info(),
        Some(relax_ir::StructInfo::Shape(_))
    ));
    let want: Vec<f32> = (0..7).map(|i| (i * i) as f32).collect();
    let shape = || vec![Value::Shape(std::sync::Arc::from(vec![7i64]))];
    assert_close(&run_values(&input, shape()), &want);
    assert_close(&run_values(&fused, shape()), &want);
    let lowered = passes(&fused, &["fuse-tir"]);
    assert_close(&run_values(&lowered, shape()), &want);
}

/// A linear layer whose rows are a product of a symbolic size (`n * 17`, a vision
/// transformer with a symbolic batch) and attention over `n * 9` windows (Swin):
/// the GPU pipeline's `fuse-transpose-matmul` and `fuse-attention` build `call_tir`s
/// that take `n` as a `tir_vars` argument, which call_tir's inference refused
/// ("expects two arguments [callee, arg_tuple], but has 3"). Both now pass and
/// compute what the unfused module computes.
const COMPOUND_ROWS: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 17, 16), dtype="float32"), w: R.Tensor((16, 16), dtype="float32"), q0: R.Tensor(("n", 9, 2, 9, 4), dtype="float32"), k0: R.Tensor(("n", 9, 2, 4, 9), dtype="float32"), v0: R.Tensor(("n", 9, 2, 9, 4), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            a: R.Tensor((n * 17, 16), dtype="float32") = R.reshape(x, R.shape([n * 17, 16]))
            wt: R.Tensor((16, 16), dtype="float32") = R.permute_dims(w, axes=[1, 0])
            y: R.Tensor((n * 17, 16), dtype="float32") = R.matmul(a, wt, out_dtype="float32")
            q: R.Tensor((n * 9, 2, 9, 4), dtype="float32") = R.reshape(q0, R.shape([n * 9, 2, 9, 4]))
            k: R.Tensor((n * 9, 2, 4, 9), dtype="float32") = R.reshape(k0, R.shape([n * 9, 2, 4, 9]))
            v: R.Tensor((n * 9, 2, 9, 4), dtype="float32") = R.reshape(v0, R.shape([n * 9, 2, 9, 4]))
            s: R.Tensor((n * 9, 2, 9, 9), dtype="float32") = R.matmul(q, k, out_dtype="void")
            p: R.Tensor((n * 9, 2, 9, 9), dtype="float32") = R.nn.softmax(s, axis=-1)
            o: R.Tensor((n * 9, 2, 9, 4), dtype="float32") = R.matmul(p, v, out_dtype="void")
            gv = (y, o)
            R.output(gv)
        return gv
"#;

#[test]
fn fused_calls_with_compound_symbolic_rows_pass_tir_vars() {
    let input = passes(&parse(COMPOUND_ROWS), &["check"]);
    let fused = passes(&input, &["fuse-transpose-matmul", "fuse-attention", "legalize"]);
    let text = relax_ir::text::print_program(&relax_ir::text::Program::Module(fused.clone()));
    assert!(text.contains("tir_vars"), "a fused call takes n as tir_vars:\n{text}");
    let args = || {
        vec![
            common::random_tensor(&[2, 17, 16], 1),
            common::random_tensor(&[16, 16], 2),
            common::random_tensor(&[2, 9, 2, 9, 4], 3),
            common::random_tensor(&[2, 9, 2, 4, 9], 4),
            common::random_tensor(&[2, 9, 2, 9, 4], 5),
        ]
    };
    let unfused = passes(&input, &["legalize"]);
    let (want, got) = (run_tuple(&unfused, args()), run_tuple(&fused, args()));
    assert_eq!(want.len(), 2);
    for (w, g) in want.iter().zip(&got) {
        assert_close(g, w);
    }
}

/// The fields of `main`'s tuple result, as float32 values.
fn run_tuple(m: &IRModule, args: Vec<Value>) -> Vec<Vec<f32>> {
    let out = run_main(m, args);
    out.as_tuple().expect("a tuple").iter().map(f32s).collect()
}
