//! The operators defined under `defs/`: legalizations against TVM 0.27's
//! `LegalizeOps` output for the same modules (generated with the TVM wheel),
//! inference, and the reasons a legalization gives when it declines.

use crate::op::legalize::tests::{assert_matches_tvm, has, text};

const SCATTER_IN: &str = r#"
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4), dtype="float32"), i: R.Tensor((2, 2, 4), dtype="int32"), u: R.Tensor((2, 2, 4), dtype="float32"), d: R.Tensor((3, 4, 5), dtype="float32"), j: R.Tensor((2, 2), dtype="int64"), v: R.Tensor((2, 5), dtype="float32")) -> R.Tuple(R.Tensor((2, 3, 4), dtype="float32"), R.Tensor((3, 4, 5), dtype="float32")):
        a = R.scatter_elements(x, i, u, axis=1, reduction="add")
        b = R.scatter_nd(d, j, v, reduction="mul")
        return (a, b)
"#;

const SCATTER_TVM: &str = r#"

elem_offset = TypeVar("elem_offset")
elem_offset_1 = TypeVar("elem_offset_1")
elem_offset_2 = TypeVar("elem_offset_2")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def scatter_elements(x: T.Buffer((T.int64(2), T.int64(3), T.int64(4)), "float32", elem_offset=elem_offset_2), i: T.Buffer((T.int64(2), T.int64(2), T.int64(4)), "int32", elem_offset=elem_offset_1), u: T.Buffer((T.int64(2), T.int64(2), T.int64(4)), "float32", elem_offset=elem_offset), out_buf: T.Buffer((T.int64(2), T.int64(3), T.int64(4)), "float32")):
        T.func_attr({"tirx.noalias": True})
        with T.sblock("scatter_elements_generic"):
            T.reads()
            T.writes()
            T.attr({"pragma_scope": "seq"})
            for v in T.parallel(T.int64(24)):
                out_buf[v // T.int64(4) // T.int64(3), v // T.int64(4) % T.int64(3), v % T.int64(4)] = x[v // T.int64(4) // T.int64(3), v // T.int64(4) % T.int64(3), v % T.int64(4)]
            for v in T.parallel(T.int64(8)):
                for v_1 in range(T.int64(2)):
                    out_buf[(v // T.int64(4) * T.int64(12) + v % T.int64(4) + (T.Cast("int64", i[(v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) // T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) % T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) % T.int64(4)]) + T.Cast("int64", i[(v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) // T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) % T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) % T.int64(4)] < 0) * T.int64(3)) * T.int64(4)) // T.int64(4) // T.int64(3), (v // T.int64(4) * T.int64(12) + v % T.int64(4) + (T.Cast("int64", i[(v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) // T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) % T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) % T.int64(4)]) + T.Cast("int64", i[(v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) // T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) % T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) % T.int64(4)] < 0) * T.int64(3)) * T.int64(4)) // T.int64(4) % T.int64(3), (v // T.int64(4) * T.int64(12) + v % T.int64(4) + (T.Cast("int64", i[(v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) // T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) % T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) % T.int64(4)]) + T.Cast("int64", i[(v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) // T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) % T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) % T.int64(4)] < 0) * T.int64(3)) * T.int64(4)) % T.int64(4)] = out_buf[(v // T.int64(4) * T.int64(12) + v % T.int64(4) + (T.Cast("int64", i[(v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) // T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) % T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) % T.int64(4)]) + T.Cast("int64", i[(v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) // T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) % T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) % T.int64(4)] < 0) * T.int64(3)) * T.int64(4)) // T.int64(4) // T.int64(3), (v // T.int64(4) * T.int64(12) + v % T.int64(4) + (T.Cast("int64", i[(v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) // T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) % T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) % T.int64(4)]) + T.Cast("int64", i[(v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) // T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) % T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) % T.int64(4)] < 0) * T.int64(3)) * T.int64(4)) // T.int64(4) % T.int64(3), (v // T.int64(4) * T.int64(12) + v % T.int64(4) + (T.Cast("int64", i[(v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) // T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) % T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) % T.int64(4)]) + T.Cast("int64", i[(v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) // T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) % T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) % T.int64(4)] < 0) * T.int64(3)) * T.int64(4)) % T.int64(4)] + u[(v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) // T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) // T.int64(4) % T.int64(2), (v // T.int64(4) * T.int64(8) + v % T.int64(4) + v_1 * T.int64(4)) % T.int64(4)]

    @T.prim_func(private=True, s_tir=True)
    def scatter_nd(d: T.Buffer((T.int64(3), T.int64(4), T.int64(5)), "float32", elem_offset=elem_offset_1), j: T.Buffer((T.int64(2), T.int64(2)), "int64"), v: T.Buffer((T.int64(2), T.int64(5)), "float32", elem_offset=elem_offset), out_buf: T.Buffer((T.int64(3), T.int64(4), T.int64(5)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        T_transpose = T.sblock_alloc_buffer((T.int64(2), T.int64(2)), "int64")
        for ax0, ax1 in T.grid(T.int64(2), T.int64(2)):
            with T.sblock("T_transpose"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(j[v_ax1, v_ax0])
                T.writes(T_transpose[v_ax0, v_ax1])
                T_transpose[v_ax0, v_ax1] = j[v_ax1, v_ax0]
        with T.sblock("scatter_nd_generic"):
            T.reads()
            T.writes()
            T.attr({"pragma_scope": "seq"})
            for v_1 in range(T.int64(60)):
                out_buf[v_1 // T.int64(5) // T.int64(4), v_1 // T.int64(5) % T.int64(4), v_1 % T.int64(5)] = d[v_1 // T.int64(5) // T.int64(4), v_1 // T.int64(5) % T.int64(4), v_1 % T.int64(5)]
            for v_1 in range(T.int64(2)):
                for v_2 in T.parallel(T.int64(5)):
                    out_buf[(v_2 + T.int64(5) * T_transpose[(v_1 + T.int64(2)) // T.int64(2), (v_1 + T.int64(2)) % T.int64(2)] + T.int64(20) * T_transpose[v_1 // T.int64(2), v_1 % T.int64(2)]) // T.int64(5) // T.int64(4), (v_2 + T.int64(5) * T_transpose[(v_1 + T.int64(2)) // T.int64(2), (v_1 + T.int64(2)) % T.int64(2)] + T.int64(20) * T_transpose[v_1 // T.int64(2), v_1 % T.int64(2)]) // T.int64(5) % T.int64(4), (v_2 + T.int64(5) * T_transpose[(v_1 + T.int64(2)) // T.int64(2), (v_1 + T.int64(2)) % T.int64(2)] + T.int64(20) * T_transpose[v_1 // T.int64(2), v_1 % T.int64(2)]) % T.int64(5)] = out_buf[(v_2 + T.int64(5) * T_transpose[(v_1 + T.int64(2)) // T.int64(2), (v_1 + T.int64(2)) % T.int64(2)] + T.int64(20) * T_transpose[v_1 // T.int64(2), v_1 % T.int64(2)]) // T.int64(5) // T.int64(4), (v_2 + T.int64(5) * T_transpose[(v_1 + T.int64(2)) // T.int64(2), (v_1 + T.int64(2)) % T.int64(2)] + T.int64(20) * T_transpose[v_1 // T.int64(2), v_1 % T.int64(2)]) // T.int64(5) % T.int64(4), (v_2 + T.int64(5) * T_transpose[(v_1 + T.int64(2)) // T.int64(2), (v_1 + T.int64(2)) % T.int64(2)] + T.int64(20) * T_transpose[v_1 // T.int64(2), v_1 % T.int64(2)]) % T.int64(5)] * v[(v_1 * T.int64(5) + v_2) // T.int64(5), (v_1 * T.int64(5) + v_2) % T.int64(5)]

    @R.function
    def main(x: R.Tensor((2, 3, 4), dtype="float32"), i: R.Tensor((2, 2, 4), dtype="int32"), u: R.Tensor((2, 2, 4), dtype="float32"), d: R.Tensor((3, 4, 5), dtype="float32"), j: R.Tensor((2, 2), dtype="int64"), v: R.Tensor((2, 5), dtype="float32")) -> R.Tuple(R.Tensor((2, 3, 4), dtype="float32"), R.Tensor((3, 4, 5), dtype="float32")):
        cls = Module
        a = R.call_tir(cls.scatter_elements, (x, i, u), out_ty=R.Tensor((2, 3, 4), dtype="float32"))
        b = R.call_tir(cls.scatter_nd, (d, j, v), out_ty=R.Tensor((3, 4, 5), dtype="float32"))
        return (a, b)
"#;

/// 3-d `scatter_elements` with `int32` indices and `add`, `scatter_nd` of
/// rows of a 3-d tensor with `mul`.
#[test]
fn scatter_3d_matches_tvm() {
    assert_matches_tvm(SCATTER_IN, SCATTER_TVM);
}

const DYN_SLICE_IN: &str = r#"

n = TypeVar("n")
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10, n), dtype="float32"), begin: R.Tensor((2,), dtype="int64"), end: R.Tensor((2,), dtype="int64"), strides: R.Tensor((2,), dtype="int64")) -> R.Tensor(dtype="float32", ndim=2):
        gv: R.Tensor(dtype="float32", ndim=2) = R.dynamic_strided_slice(x, begin, end, strides)
        return gv"#;

const DYN_SLICE_TVM: &str = r#"

n = TypeVar("n")
s = TypeVar("s")
s_1 = TypeVar("s_1")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def dynamic_strided_slice(x: T.Buffer((T.int64(10), n), "float32"), begin: T.Buffer((T.int64(2),), "int64"), end: T.Buffer((T.int64(2),), "int64"), strides: T.Buffer((T.int64(2),), "int64"), T_strided_slice_dynamic: T.Buffer((s, s_1), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(s, s_1):
            with T.sblock("T_strided_slice_dynamic"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(x[T.int64(0):T.int64(10), T.int64(0):n], begin[T.int64(0):T.int64(2)], strides[T.int64(0):T.int64(2)])
                T.writes(T_strided_slice_dynamic[v_ax0, v_ax1])
                T_strided_slice_dynamic[v_ax0, v_ax1] = x[T.min(T.max(T.if_then_else(begin[T.int64(0)] < T.int64(0), begin[T.int64(0)] + T.int64(10), begin[T.int64(0)]), T.if_then_else(strides[T.int64(0)] < T.int64(0), T.int64(-1), T.int64(0))), T.if_then_else(strides[T.int64(0)] < T.int64(0), T.int64(9), T.int64(10))) + v_ax0 * strides[T.int64(0)], T.min(T.max(T.if_then_else(begin[T.int64(1)] < T.int64(0), begin[T.int64(1)] + n, begin[T.int64(1)]), T.if_then_else(strides[T.int64(1)] < T.int64(0), T.int64(-1), T.int64(0))), T.if_then_else(strides[T.int64(1)] < T.int64(0), n - T.int64(1), n)) + v_ax1 * strides[T.int64(1)]]

    @T.prim_func(private=True, s_tir=True)
    def shape_func(x: T.Buffer((T.int64(10), n), "float32"), begin: T.Buffer((T.int64(2),), "int64"), end: T.Buffer((T.int64(2),), "int64"), strides: T.Buffer((T.int64(2),), "int64"), T_shape_func_strided_slice_dynamic: T.Buffer((T.int64(2),), "int64")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i in range(T.int64(2)):
            with T.sblock("T_shape_func_strided_slice_dynamic"):
                v_i = T.axis.spatial(T.int64(2), i)
                T.reads(strides[v_i], begin[v_i], end[v_i])
                T.writes(T_shape_func_strided_slice_dynamic[v_i])
                T_shape_func_strided_slice_dynamic[v_i] = T.Select(strides[v_i] < T.int64(0), (T.min(T.max(T.Select(begin[v_i] < T.int64(0), begin[v_i] + T.Select(v_i == T.int64(1), n, T.Select(v_i == T.int64(0), T.int64(10), T.int64(-1))), begin[v_i]), T.int64(-1)), T.Select(v_i == T.int64(1), n, T.Select(v_i == T.int64(0), T.int64(10), T.int64(-1))) - T.int64(1)) - T.min(T.max(T.Select(end[v_i] < T.int64(0), end[v_i] + T.Select(v_i == T.int64(1), n, T.Select(v_i == T.int64(0), T.int64(10), T.int64(-1))), end[v_i]), T.int64(-1)), T.Select(v_i == T.int64(1), n, T.Select(v_i == T.int64(0), T.int64(10), T.int64(-1))) - T.int64(1)) - strides[v_i] - T.int64(1)) // (strides[v_i] * T.int64(-1)), (T.min(T.max(T.Select(end[v_i] < T.int64(0), end[v_i] + T.Select(v_i == T.int64(1), n, T.Select(v_i == T.int64(0), T.int64(10), T.int64(-1))), end[v_i]), T.int64(0)), T.Select(v_i == T.int64(1), n, T.Select(v_i == T.int64(0), T.int64(10), T.int64(-1)))) + strides[v_i] - T.min(T.max(T.Select(begin[v_i] < T.int64(0), begin[v_i] + T.Select(v_i == T.int64(1), n, T.Select(v_i == T.int64(0), T.int64(10), T.int64(-1))), begin[v_i]), T.int64(0)), T.Select(v_i == T.int64(1), n, T.Select(v_i == T.int64(0), T.int64(10), T.int64(-1)))) - T.int64(1)) // strides[v_i])

    @R.function
    def main(x: R.Tensor((10, n), dtype="float32"), begin: R.Tensor((2,), dtype="int64"), end: R.Tensor((2,), dtype="int64"), strides: R.Tensor((2,), dtype="int64")) -> R.Tensor(dtype="float32", ndim=2):
        cls = Module
        s = T.int64()
        s_1 = T.int64()
        gv = R.call_tir(cls.shape_func, (x, begin, end, strides), out_ty=R.Tensor((2,), dtype="int64"))
        gv1: R.Shape(ndim=2) = R.tensor_to_shape(gv)
        gv2: R.Shape([s, s_1]) = R.match_cast(gv1, R.Shape([s, s_1]))
        gv_1 = R.call_tir(cls.dynamic_strided_slice, (x, begin, end, strides), out_ty=R.Tensor((s, s_1), dtype="float32"))
        return gv_1"#;

const SCATTER_ND_IN: &str = r#"

@I.ir_module
class Module:
    @R.function
    def main(data: R.Tensor((8,), dtype="float32"), indices: R.Tensor((4, 1), dtype="int64"), updates: R.Tensor((4,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        gv: R.Tensor((8,), dtype="float32") = R.scatter_nd(data, indices, updates, reduction="update")
        return gv"#;

const SCATTER_ND_TVM: &str = r#"

elem_offset = TypeVar("elem_offset")
elem_offset_1 = TypeVar("elem_offset_1")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def scatter_nd(data: T.Buffer((T.int64(8),), "float32", elem_offset=elem_offset_1), indices: T.Buffer((T.int64(4), T.int64(1)), "int64"), updates: T.Buffer((T.int64(4),), "float32", elem_offset=elem_offset), out_buf: T.Buffer((T.int64(8),), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        T_transpose = T.sblock_alloc_buffer((T.int64(1), T.int64(4)), "int64")
        for ax0, ax1 in T.grid(T.int64(1), T.int64(4)):
            with T.sblock("T_transpose"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(indices[v_ax1, v_ax0])
                T.writes(T_transpose[v_ax0, v_ax1])
                T_transpose[v_ax0, v_ax1] = indices[v_ax1, v_ax0]
        with T.sblock("scatter_nd_generic"):
            T.reads()
            T.writes()
            T.attr({"pragma_scope": "seq"})
            for v in range(T.int64(8)):
                out_buf[v] = data[v]
            for v in range(T.int64(4)):
                for v_1 in T.parallel(T.int64(1)):
                    out_buf[v_1 + T_transpose[v // T.int64(4), v % T.int64(4)]] = updates[v + v_1]

    @R.function
    def main(data: R.Tensor((8,), dtype="float32"), indices: R.Tensor((4, 1), dtype="int64"), updates: R.Tensor((4,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        cls = Module
        gv = R.call_tir(cls.scatter_nd, (data, indices, updates), out_ty=R.Tensor((8,), dtype="float32"))
        return gv"#;

/// `scatter_nd` of single elements (TVM's own test).
#[test]
fn scatter_nd_matches_tvm() {
    assert_matches_tvm(SCATTER_ND_IN, SCATTER_ND_TVM);
}

/// `dynamic_strided_slice` on a symbolic shape: shape function,
/// `tensor_to_shape`, `match_cast`, slice (TVM's own test).
#[test]
fn dynamic_strided_slice_matches_tvm() {
    assert_matches_tvm(DYN_SLICE_IN, DYN_SLICE_TVM);
}

fn check(src: &str) -> crate::check::CheckResult {
    let m = relax_ir::text::parse(src).expect("parses").into_module();
    crate::check::check_module(&m)
}

/// The StructInfo inferred for binding `var`.
fn sinfo_of(r: &crate::check::CheckResult, var: &str) -> String {
    let b = r.bindings.iter().find(|b| b.var == var).expect("binding");
    relax_ir::text::print_struct_info(&b.struct_info, None)
}

#[test]
fn attention_inference() {
    let ok = check(
        r#"
@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((2, 5, 4, 8), dtype="float32"), k: R.Tensor((2, 7, 4, 8), dtype="float32"), v: R.Tensor((2, 7, 4, 6), dtype="float32")):
        a = R.nn.attention(q, k, v, causal_mask="TopLeft")
        return a
"#,
    );
    assert!(ok.is_valid(), "{:?}", ok.diagnostics);
    assert_eq!(sinfo_of(&ok, "a"), r#"R.Tensor((2, 5, 4, 6), dtype="float32")"#);
    let bad = check(
        r#"
@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((2, 5, 4, 8), dtype="float32"), k: R.Tensor((2, 7, 4, 8), dtype="float32"), v: R.Tensor((2, 6, 4, 6), dtype="float32")):
        a = R.nn.attention(q, k, v)
        return a
"#,
    );
    let msg = format!("{:?}", bad.diagnostics);
    assert!(
        !bad.is_valid() && msg.contains("sequence length of key and value"),
        "{msg}"
    );
}

/// A declined legalization is reported once, with its reason and rule.
#[test]
fn skipped_legalizations_are_reported() {
    let r = check(
        r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 5), dtype="float32"), i: R.Tensor((2, 5), dtype="int64"), u: R.Tensor((2, 5), dtype="float32"), d: R.Tensor(dtype="float32", ndim=2)):
        a = R.scatter_elements(x, i, u, reduction="mean")
        b = R.scatter_nd(x, R.astype(i, "int64"), u, reduction="mean")
        c = R.exp(d)
        return (a, b, c)
"#,
    );
    let (out, skipped) = crate::op::legalize::legalize_module_report(&r.module);
    has(&text(&out), "cls.scatter_elements");
    let msgs: Vec<String> = skipped.iter().map(|d| d.message.clone()).collect();
    assert!(skipped
        .iter()
        .all(|d| d.rule.as_deref() == Some("legalize/skipped") && !d.is_error()));
    assert!(
        msgs.iter()
            .any(|m| m.contains("relax.scatter_nd") && m.contains("unknown reduction")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter().any(|m| m.contains("relax.exp") && m.contains("shape")),
        "{msgs:?}"
    );
}
