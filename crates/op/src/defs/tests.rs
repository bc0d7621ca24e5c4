//! The operators defined under `defs/`: legalizations against TVM 0.27's
//! `LegalizeOps` output for the same modules (generated with the TVM wheel),
//! inference, and the reasons a legalization gives when it declines.

use crate::legalize::tests::{assert_matches_tvm, has, text};

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

pub(super) fn check(src: &str) -> relax_checker::check::CheckResult {
    let m = relax_ir::text::parse(src).expect("parses").into_module();
    relax_checker::check::check_module(&m)
}

/// The StructInfo inferred for binding `var`.
pub(super) fn sinfo_of(r: &relax_checker::check::CheckResult, var: &str) -> String {
    let b = r.bindings.iter().find(|b| b.var == var).expect("binding");
    relax_ir::text::print_struct_info(&b.struct_info, None)
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
    let (out, skipped) = crate::legalize::legalize_module_report(&r.module);
    has(&text(&out), "cls.scatter_elements");
    let msgs: Vec<String> = skipped.iter().map(|d| d.message.clone()).collect();
    assert!(skipped
        .iter()
        .all(|d| d.rule.map(relax_ir::Rule::as_str) == Some("legalize/skipped") && !d.is_error()));
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

const QDQ_IN: &str = r#"
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), s: R.Tensor((3,), dtype="float32"), z: R.Tensor((3,), dtype="uint8"), s0: R.Tensor((), dtype="float16"), z0: R.Tensor((1,), dtype="float16"), q: R.Tensor((2, 3), dtype="int8"), q8: R.Tensor((2, 3), dtype="float8_e5m2")) -> R.Tuple(R.Tensor((2, 3), dtype="uint8"), R.Tensor((2, 3), dtype="int8"), R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float16"), R.Tensor((2, 3), dtype="float8_e4m3fn"), R.Tensor((2, 3), dtype="float32")):
        a: R.Tensor((2, 3), dtype="uint8") = R.quantize(x, s, z, out_dtype="uint8", axis=1)
        b: R.Tensor((2, 3), dtype="int8") = R.quantize(x, R.const(0.5, "float32"), R.const(3, "int8"), out_dtype="int8", axis=-1)
        c: R.Tensor((2, 3), dtype="float32") = R.dequantize(q, s, z, out_dtype="float32", axis=-1)
        d: R.Tensor((2, 3), dtype="float16") = R.dequantize(q, s0, z0, out_dtype="float16", axis=0)
        e: R.Tensor((2, 3), dtype="float8_e4m3fn") = R.quantize(x, s0, z0, out_dtype="float8_e4m3fn", axis=0)
        f: R.Tensor((2, 3), dtype="float32") = R.dequantize(q8, s, R.const(2, "int8"), out_dtype="float32", axis=1)
        return (a, b, c, d, e, f)
"#;

/// TVM 0.27's `LegalizeOps` output for [`QDQ_IN`].
const QDQ_TVM: &str = r#"
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def dequantize(q: T.Buffer((T.int64(2), T.int64(3)), "int8"), s: T.Buffer((T.int64(3),), "float32"), z: T.Buffer((T.int64(3),), "uint8"), dequantized: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("dequantized"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(q[v_i0, v_i1], z[v_i1], s[v_i1])
                T.writes(dequantized[v_i0, v_i1])
                dequantized[v_i0, v_i1] = T.Cast("float32", T.Cast("int32", q[v_i0, v_i1]) - T.Cast("int32", z[v_i1])) * s[v_i1]

    @T.prim_func(private=True, s_tir=True)
    def dequantize1(q: T.Buffer((T.int64(2), T.int64(3)), "int8"), s0: T.Buffer((), "float16"), z0: T.Buffer((T.int64(1),), "float16"), dequantized: T.Buffer((T.int64(2), T.int64(3)), "float16")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("dequantized"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(q[v_i0, v_i1], z0[T.int64(0)], s0[()])
                T.writes(dequantized[v_i0, v_i1])
                dequantized[v_i0, v_i1] = T.Cast("float16", T.max(T.min(T.Cast("float32", T.Cast("float16", T.Cast("int32", q[v_i0, v_i1])) - z0[T.int64(0)]) * T.Cast("float32", s0[()]), T.float32(65504.0)), T.float32(-65504.0)))

    @T.prim_func(private=True, s_tir=True)
    def dequantize2(q8: T.Buffer((T.int64(2), T.int64(3)), "float8_e5m2"), s: T.Buffer((T.int64(3),), "float32"), dequantized: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("dequantized"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(q8[v_i0, v_i1], s[v_i1])
                T.writes(dequantized[v_i0, v_i1])
                dequantized[v_i0, v_i1] = T.Cast("float32", T.Cast("int32", q8[v_i0, v_i1]) - 2) * s[v_i1]

    @T.prim_func(private=True, s_tir=True)
    def quantize(x: T.Buffer((T.int64(2), T.int64(3)), "float32"), s: T.Buffer((T.int64(3),), "float32"), z: T.Buffer((T.int64(3),), "uint8"), quantized: T.Buffer((T.int64(2), T.int64(3)), "uint8")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("quantized"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(x[v_i0, v_i1], s[v_i1], z[v_i1])
                T.writes(quantized[v_i0, v_i1])
                quantized[v_i0, v_i1] = T.Cast("uint8", T.max(T.min(T.round(x[v_i0, v_i1] / s[v_i1]) + T.Cast("float32", z[v_i1]), T.float32(255.0)), T.float32(0.0)))

    @T.prim_func(private=True, s_tir=True)
    def quantize1(x: T.Buffer((T.int64(2), T.int64(3)), "float32"), quantized: T.Buffer((T.int64(2), T.int64(3)), "int8")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("quantized"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(x[v_i0, v_i1])
                T.writes(quantized[v_i0, v_i1])
                quantized[v_i0, v_i1] = T.Cast("int8", T.max(T.min(T.round(x[v_i0, v_i1] / T.float32(0.5)) + T.float32(3.0), T.float32(127.0)), T.float32(-128.0)))

    @T.prim_func(private=True, s_tir=True)
    def quantize2(x: T.Buffer((T.int64(2), T.int64(3)), "float32"), s0: T.Buffer((), "float16"), z0: T.Buffer((T.int64(1),), "float16"), quantized: T.Buffer((T.int64(2), T.int64(3)), "float8_e4m3fn")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("quantized"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(x[v_i0, v_i1], s0[()], z0[T.int64(0)])
                T.writes(quantized[v_i0, v_i1])
                quantized[v_i0, v_i1] = T.Cast("float8_e4m3fn", T.max(T.min(x[v_i0, v_i1] / T.Cast("float32", s0[()]) + T.Cast("float32", z0[T.int64(0)]), T.float32(448.0)), T.float32(-448.0)))

    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), s: R.Tensor((3,), dtype="float32"), z: R.Tensor((3,), dtype="uint8"), s0: R.Tensor((), dtype="float16"), z0: R.Tensor((1,), dtype="float16"), q: R.Tensor((2, 3), dtype="int8"), q8: R.Tensor((2, 3), dtype="float8_e5m2")) -> R.Tuple(R.Tensor((2, 3), dtype="uint8"), R.Tensor((2, 3), dtype="int8"), R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float16"), R.Tensor((2, 3), dtype="float8_e4m3fn"), R.Tensor((2, 3), dtype="float32")):
        cls = Module
        a = R.call_tir(cls.quantize, (x, s, z), out_ty=R.Tensor((2, 3), dtype="uint8"))
        b = R.call_tir(cls.quantize1, (x,), out_ty=R.Tensor((2, 3), dtype="int8"))
        c = R.call_tir(cls.dequantize, (q, s, z), out_ty=R.Tensor((2, 3), dtype="float32"))
        d = R.call_tir(cls.dequantize1, (q, s0, z0), out_ty=R.Tensor((2, 3), dtype="float16"))
        e = R.call_tir(cls.quantize2, (x, s0, z0), out_ty=R.Tensor((2, 3), dtype="float8_e4m3fn"))
        f = R.call_tir(cls.dequantize2, (q8, s), out_ty=R.Tensor((2, 3), dtype="float32"))
        return (a, b, c, d, e, f)
"#;

/// `quantize`/`dequantize`: per-axis, singleton and scalar-constant parameters,
/// float16 and float8 outputs, a float8 input (read through `int32`).
#[test]
fn quantize_dequantize_match_tvm() {
    assert_matches_tvm(QDQ_IN, QDQ_TVM);
}

const GATHER_ND_BATCH_IN: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(data: R.Tensor((2, 2, 2), dtype="int32"), indices: R.Tensor((2, 1), dtype="int64")) -> R.Tensor((2, 2), dtype="int32"):
        with R.dataflow():
            gv: R.Tensor((2, 2), dtype="int32") = R.gather_nd(data, indices, batch_dims=1)
            R.output(gv)
        return gv
"#;

const GATHER_ND_BATCH_TVM: &str = r#"
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def te_gather_nd(data: T.Buffer((T.int64(2), T.int64(2), T.int64(2)), "int32"), indices: T.Buffer((T.int64(2), T.int64(1)), "int64"), T_gather_nd: T.Buffer((T.int64(2), T.int64(2)), "int32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        T_transpose = T.sblock_alloc_buffer((T.int64(1), T.int64(2)), "int64")
        for ax0, ax1 in T.grid(T.int64(1), T.int64(2)):
            with T.sblock("T_transpose"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(indices[v_ax1, v_ax0])
                T.writes(T_transpose[v_ax0, v_ax1])
                T_transpose[v_ax0, v_ax1] = indices[v_ax1, v_ax0]
        for ax0, ax1 in T.grid(T.int64(2), T.int64(2)):
            with T.sblock("T_gather_nd"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(data[v_ax0, T_transpose[T.int64(0), v_ax0], v_ax1], T_transpose[T.int64(0), v_ax0])
                T.writes(T_gather_nd[v_ax0, v_ax1])
                T_gather_nd[v_ax0, v_ax1] = data[v_ax0, T_transpose[T.int64(0), v_ax0], v_ax1]

    @R.function
    def main(data: R.Tensor((2, 2, 2), dtype="int32"), indices: R.Tensor((2, 1), dtype="int64")) -> R.Tensor((2, 2), dtype="int32"):
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.te_gather_nd, (data, indices), out_ty=R.Tensor((2, 2), dtype="int32"))
            R.output(gv)
        return gv
"#;

/// `gather_nd` with `batch_dims = 1` (ONNX's `GatherND` example): the leading
/// output axis indexes the batch axis of the data.
#[test]
fn gather_nd_batch_dims_matches_tvm() {
    assert_matches_tvm(GATHER_ND_BATCH_IN, GATHER_ND_BATCH_TVM);
}

/// `quantize`/`dequantize` inference: TVM 0.27's dtype, axis and size rules and
/// messages.
#[test]
fn quantize_dequantize_inference() {
    let src = |op: &str, x: &str, s: &str, z: &str, axis: i64, od: &str| {
        format!(
            r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor({x}), s: R.Tensor({s}), z: R.Tensor({z})):
        r = R.{op}(x, s, z, axis={axis}, out_dtype="{od}")
        return r
"#
        )
    };
    let f32x = r#"(2, 3), dtype="float32""#;
    let ok = check(&src(
        "quantize",
        f32x,
        r#"(3,), dtype="float32""#,
        r#"(3,), dtype="uint8""#,
        1,
        "uint8",
    ));
    assert!(ok.is_valid(), "{:?}", ok.diagnostics);
    assert_eq!(sinfo_of(&ok, "r"), r#"R.Tensor((2, 3), dtype="uint8")"#);
    // Every dimension 1: applies to every element, whatever the axis's extent.
    let ok = check(&src(
        "quantize",
        f32x,
        r#"(1, 1), dtype="float16""#,
        r#"(1,), dtype="int16""#,
        -1,
        "float8_e5m2",
    ));
    assert!(ok.is_valid(), "{:?}", ok.diagnostics);
    assert_eq!(sinfo_of(&ok, "r"), r#"R.Tensor((2, 3), dtype="float8_e5m2")"#);
    let ok = check(&src(
        "dequantize",
        r#"(2, 3), dtype="float8_e4m3fn""#,
        r#"(), dtype="float32""#,
        r#"(), dtype="float16""#,
        0,
        "float16",
    ));
    assert!(ok.is_valid(), "{:?}", ok.diagnostics);
    assert_eq!(sinfo_of(&ok, "r"), r#"R.Tensor((2, 3), dtype="float16")"#);
    let scalar = r#"(), dtype="float32""#;
    let zp = r#"(), dtype="int8""#;
    for (op, x, s, z, axis, od, msg) in [
        ("quantize", f32x, scalar, zp, 0, "int32", "Unsupported output datatype attribute for operation: 'int32"),
        ("quantize", r#"(2, 3), dtype="float64""#, scalar, zp, 0, "int8", "Unsupported input datatype for operation: float64"),
        ("quantize", f32x, r#"(), dtype="bfloat16""#, zp, 0, "int8", "scale param datatype should be one of [float16, float32], but got bfloat16"),
        ("quantize", f32x, scalar, r#"(), dtype="float32""#, 0, "int8", "zero_point param datatype should be one of ['int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'float16'], but got float32"),
        ("quantize", f32x, scalar, zp, 2, "int8", "relax.quantize: axis param is out of range (2)"),
        ("quantize", f32x, r#"(2,), dtype="float32""#, zp, 1, "int8", "Size mismatch: relax.quantize: the input shape at dim 1 is 'T.int64(3)', but size of scale param is 'T.int64(2)'"),
        ("quantize", f32x, r#"(1, 3), dtype="float32""#, zp, 1, "int8", "but size of scale param is 'T.int64(1)'"),
        ("quantize", f32x, scalar, r#"dtype="int8", ndim=1"#, 1, "int8", "must be known"),
        ("dequantize", r#"(2, 3), dtype="int8""#, scalar, zp, 0, "bfloat16", "Unsupported output datatype attribute for operation: bfloat16"),
        ("dequantize", r#"(2, 3), dtype="int64""#, scalar, zp, 0, "float32", "Unsupported input datatype for operation: float32"),
        ("dequantize", r#"(2, 3), dtype="int8""#, scalar, r#"(2,), dtype="int8""#, -3, "float32", "relax.dequantize: axis param is out of range (-3)"),
    ] {
        let bad = check(&src(op, x, s, z, axis, od));
        let got = format!("{:?}", bad.diagnostics);
        assert!(!bad.is_valid() && got.contains(msg), "{op} {x} {s} {z} {axis} {od}: {got}");
    }
}

/// `image.grid_sample` inference: the data's batch and channels with the grid's
/// spatial extents, by layout; a rank other than the layout's is an error.
#[test]
fn grid_sample_inference() {
    let src = |x: &str, g: &str, extra: &str| {
        format!(
            r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor({x}), g: R.Tensor({g})):
        r = R.image.grid_sample(x, g{extra})
        return r
"#
        )
    };
    for (x, g, extra, want) in [
        (
            r#"(1, 3, 4, 5), dtype="float32""#,
            r#"(1, 2, 6, 7), dtype="float32""#,
            "",
            r#"R.Tensor((1, 3, 6, 7), dtype="float32")"#,
        ),
        (
            r#"(1, 3, 4, 5, 6), dtype="float32""#,
            r#"(1, 3, 6, 7, 8), dtype="float32""#,
            r#", layout="NCDHW""#,
            r#"R.Tensor((1, 3, 6, 7, 8), dtype="float32")"#,
        ),
        (
            r#"(1, 4, 5, 3), dtype="float16""#,
            r#"(1, 2, 6, 7), dtype="float32""#,
            r#", layout="NHWC""#,
            r#"R.Tensor((1, 6, 7, 3), dtype="float16")"#,
        ),
        (
            r#"dtype="float32", ndim=4"#,
            r#"(1, 2, 6, 7), dtype="float32""#,
            "",
            r#"R.Tensor(dtype="float32", ndim=4)"#,
        ),
    ] {
        let ok = check(&src(x, g, extra));
        assert!(ok.is_valid(), "{x}: {:?}", ok.diagnostics);
        assert_eq!(sinfo_of(&ok, "r"), want);
    }
    let bad = check(&src(
        r#"(1, 3, 4), dtype="float32""#,
        r#"(1, 2, 6, 7), dtype="float32""#,
        "",
    ));
    let got = format!("{:?}", bad.diagnostics);
    assert!(
        !bad.is_valid()
            && got.contains("layout NCHW requires the input to be 4-dim tensor. However, the given input has ndim 3"),
        "{got}"
    );
    // An unsupported layout is left as a call, with the reason.
    let r = check(&src(
        r#"(1, 4, 5, 3), dtype="float32""#,
        r#"(1, 2, 6, 7), dtype="float32""#,
        r#", layout="NHWC""#,
    ));
    let (_, skipped) = crate::legalize::legalize_module_report(&r.module);
    assert!(skipped.iter().any(|d| d.message.contains("layout NHWC")), "{skipped:?}");
}

/// `vision.roi_align` inference as TVM 0.27: `(num_roi, C, ph, pw)` (NCHW) or
/// `(num_roi, ph, pw, C)` (NHWC) of the data's dtype, a symbolic region count
/// kept, `ndim=4` when a shape is unknown; TVM's messages for a wrong rank, a
/// rois row that is not 5 wide, another layout or mode.
#[test]
fn roi_align_inference() {
    let src = |x: &str, r: &str, extra: &str| {
        format!(
            r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor({x}), r: R.Tensor({r})):
        n = T.int64()
        y = R.vision.roi_align(x, r, pooled_size=(2, 3), spatial_scale=0.5{extra})
        return y
"#
        )
    };
    for (x, r, extra, want) in [
        (
            r#"(1, 2, 5, 6), dtype="float32""#,
            r#"(3, 5), dtype="float32""#,
            "",
            r#"R.Tensor((3, 2, 2, 3), dtype="float32")"#,
        ),
        (
            r#"(1, 5, 6, 2), dtype="float16""#,
            r#"("n", 5), dtype="float16""#,
            r#", layout="NHWC", mode="max""#,
            r#"R.Tensor((n, 2, 3, 2), dtype="float16")"#,
        ),
        (
            r#"dtype="float32", ndim=4"#,
            r#"(3, 5), dtype="float32""#,
            "",
            r#"R.Tensor(dtype="float32", ndim=4)"#,
        ),
        (
            r#"(1, 2, 5, 6), dtype="float32""#,
            r#"dtype="float32", ndim=2"#,
            "",
            r#"R.Tensor(dtype="float32", ndim=4)"#,
        ),
    ] {
        let ok = check(&src(x, r, extra));
        assert!(ok.is_valid(), "{x}: {:?}", ok.diagnostics);
        assert_eq!(sinfo_of(&ok, "y"), want);
    }
    for (x, r, extra, msg) in [
        (
            "(1, 2, 5, 6)",
            "(3, 4)",
            "",
            "ROIAlign expects rois to have shape (num_roi, 5), but got last dimension 4",
        ),
        (
            "(1, 2, 5)",
            "(3, 5)",
            "",
            "ROIAlign expects the input data to be 4-D, while the given data has ndim 3",
        ),
        (
            "(1, 2, 5, 6)",
            "(3, 5, 1)",
            "",
            "ROIAlign expects the rois tensor to be 2-D, while the given rois has ndim 3",
        ),
        (
            "(1, 2, 5, 6)",
            "(3, 5)",
            r#", layout="NCDHW""#,
            "ROIAlign only supports NCHW and NHWC layout, but got NCDHW",
        ),
        (
            "(1, 2, 5, 6)",
            "(3, 5)",
            r#", mode="min""#,
            "ROIAlign only supports avg and max mode, but got min",
        ),
    ] {
        let bad = check(&src(&format!("{x}, \"float32\""), &format!("{r}, \"float32\""), extra));
        let got = format!("{:?}", bad.diagnostics);
        assert!(!bad.is_valid() && got.contains(msg), "{x} {r} {extra}: {got}");
    }
}

/// `image.resize2d` inference as TVM 0.27: the data's shape with the layout's
/// `H` and `W` set to `size` (a symbolic size kept; a split spatial axis's outer
/// part `ceil(size / factor)`), `out_dtype` or the data's dtype, the rank only when
/// the data's shape or the size's values are unknown; TVM's messages for a rank
/// other than the layout's, a size of other than two values, a layout that is not
/// `NCHW` reordered, a data argument that is not a tensor.
#[test]
fn resize2d_inference() {
    let src = |x: &str, size: &str, extra: &str| {
        format!(
            r#"
@I.ir_module
class Module:
    @R.function
    def main(x: {x}, y: R.Tensor(("n", "m"), dtype="float32"), s: R.Shape(ndim=2)):
        n = T.int64()
        m = T.int64()
        r = R.image.resize2d(x, {size}{extra})
        return r
"#
        )
    };
    let t = |s: &str| format!("R.Tensor({s})");
    for (x, size, extra, want) in [
        (
            t(r#"(1, 2, 5, 6), dtype="float32""#),
            "R.shape([7, 9])",
            "",
            r#"R.Tensor((1, 2, 7, 9), dtype="float32")"#,
        ),
        (
            t(r#"(1, 5, 6, 2), dtype="int32""#),
            "R.shape([3, 4])",
            r#", layout="NHWC", method="nearest_neighbor""#,
            r#"R.Tensor((1, 3, 4, 2), dtype="int32")"#,
        ),
        (
            t(r#"(1, 2, 5, 6), dtype="float32""#),
            "R.shape([n, m])",
            r#", out_dtype="float16""#,
            r#"R.Tensor((1, 2, n, m), dtype="float16")"#,
        ),
        (
            t(r#"dtype="float32", ndim=-1"#),
            "R.shape([7, 9])",
            "",
            r#"R.Tensor(dtype="float32", ndim=4)"#,
        ),
        (
            t(r#"(1, 2, 5, 6), dtype="float32""#),
            "s",
            "",
            r#"R.Tensor(dtype="float32", ndim=4)"#,
        ),
        (
            t(r#"(1, 2, 3, 6, 4), dtype="float32""#),
            "R.shape([5, 7])",
            r#", layout="NCHW4c""#,
            r#"R.Tensor((1, 2, 5, 7, 4), dtype="float32")"#,
        ),
        (
            t(r#"(1, 2, 3, 6, 2), dtype="float32""#),
            "R.shape([5, n])",
            r#", layout="NCHW2w""#,
            r#"R.Tensor((1, 2, 5, (n + 1) // 2, 2), dtype="float32")"#,
        ),
        (
            t(r#"(6, 5, 2, 1), dtype="float32""#),
            "R.shape([3, 7])",
            r#", layout="WHCN""#,
            r#"R.Tensor((7, 3, 2, 1), dtype="float32")"#,
        ),
    ] {
        let ok = check(&src(&x, size, extra));
        assert!(ok.is_valid(), "{x} {extra}: {:?}", ok.diagnostics);
        assert_eq!(sinfo_of(&ok, "r"), want, "{x} {extra}");
    }
    for (x, size, extra, msg) in [
        (
            t(r#"(1, 2, 5), dtype="float32""#),
            "R.shape([7, 9])",
            "",
            "In relax.image.resize2d, layout NCHW requires the input to be 4-dim tensor. However, the given input has ndim 3",
        ),
        (
            t(r#"(1, 2, 5, 6), dtype="float32""#),
            "R.shape([7, 9, 2])",
            "",
            "Resize2D expects the given output image size to be a 2-dim shape, while the given one has ndim 3",
        ),
        (
            t(r#"(1, 2, 5), dtype="float32""#),
            "R.shape([7, 9])",
            r#", layout="NCH""#,
            "relax.image.resize2d requires the given data layout to be convertible from NCHW layout. However, the given layout NCH is not convertible.",
        ),
        (
            r#"R.Tuple(R.Tensor((1, 2, 5, 6), dtype="float32"))"#.to_string(),
            "R.shape([7, 9])",
            "",
            "Resize2D expects the input data to be a Tensor, while the given data is ir.Var",
        ),
    ] {
        let bad = check(&src(&x, size, extra));
        let got = format!("{:?}", bad.diagnostics);
        assert!(!bad.is_valid() && got.contains(msg), "{x} {size} {extra}: {got}");
    }
    // What the legalization does not cover is left as a call, with the reason.
    for (x, extra, reason) in [
        (
            r#"(1, 2, 3, 6, 4), dtype="float32""#,
            r#", layout="NCHW4c""#,
            "layout NCHW4c",
        ),
        (
            r#"(1, 2, 5, 6), dtype="float32""#,
            r#", method="area""#,
            "method \"area\"",
        ),
        (r#"(1, 2, 5, 6), dtype="bool""#, "", "dtype bool"),
        (
            r#"(1, 2, 5, 6), dtype="float32""#,
            r#", method="nearest_neighbor", rounding_method="up""#,
            "rounding method \"up\"",
        ),
    ] {
        let r = check(&src(&t(x), "R.shape([7, 9])", extra));
        let (_, skipped) = crate::legalize::legalize_module_report(&r.module);
        assert!(
            skipped.iter().any(|d| d.message.contains(reason)),
            "{extra}: {skipped:?}"
        );
    }
    // `align_corners` to an extent of 1 divides by zero in TVM: left as a call.
    let r = check(&src(
        &t(r#"(1, 2, 5, 6), dtype="float32""#),
        "R.shape([1, 9])",
        r#", coordinate_transformation_mode="align_corners""#,
    ));
    let (_, skipped) = crate::legalize::legalize_module_report(&r.module);
    assert!(
        skipped
            .iter()
            .any(|d| d.message.contains("align_corners to an extent of 1")),
        "{skipped:?}"
    );
}

/// `image.resize2d` attributes print back as TVM prints them (`roi` a list of
/// `float32` constants with the values as written, defaults filled in), and the
/// parser takes a Python number or list for `roi` as TVM's `resize2d` does.
#[test]
fn resize2d_prints_as_tvm() {
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 5, 6), dtype="float32")):
        a = R.image.resize2d(x, R.shape([7, 9]))
        b = R.image.resize2d(x, R.shape([3, 4]), roi=[0.1, 0.2, 0.8, 1], method="cubic", coordinate_transformation_mode="tf_crop_and_resize", out_dtype="float16")
        c = R.image.resize2d(x, R.shape([3, 4]), roi=0.5)
        return (a, b, c)
"#;
    let m = relax_ir::text::parse(src).expect("parses").into_module();
    let printed = text(&m);
    for want in [
        r#"R.image.resize2d(x, R.shape([7, 9]), roi=[T.float32(0.0), T.float32(0.0), T.float32(0.0), T.float32(0.0)], layout="NCHW", method="linear", coordinate_transformation_mode="half_pixel", rounding_method="round", cubic_alpha=-0.75, cubic_exclude=0, extrapolation_value=0.0, out_dtype=None)"#,
        r#"R.image.resize2d(x, R.shape([3, 4]), roi=[T.float32(0.10000000000000001), T.float32(0.20000000000000001), T.float32(0.80000000000000004), T.float32(1.0)], layout="NCHW", method="cubic", coordinate_transformation_mode="tf_crop_and_resize", rounding_method="round", cubic_alpha=-0.75, cubic_exclude=0, extrapolation_value=0.0, out_dtype="float16")"#,
        r#"roi=[T.float32(0.5), T.float32(0.5), T.float32(0.5), T.float32(0.5)]"#,
    ] {
        has(&printed, want);
    }
}

/// `slice_scatter`: the input's StructInfo, and TVM 0.27's messages for a rank,
/// dtype, axis, slice length or other extent that does not fit.
#[test]
fn slice_scatter_inference() {
    let src = |s: &str, dtype: &str, call: &str| {
        format!(
            r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 5), dtype="float32"), s: R.Tensor({s}, dtype="{dtype}")):
        r = R.slice_scatter(x, s, {call})
        return r
"#
        )
    };
    let ok = check(&src("(2, 5)", "float32", "1, 3, 1, axis=0"));
    assert!(ok.is_valid(), "{:?}", ok.diagnostics);
    assert_eq!(sinfo_of(&ok, "r"), r#"R.Tensor((4, 5), dtype="float32")"#);
    for (s, dtype, call, msg) in [
        ("(2,)", "float32", "1, 3, 1, axis=0", "SliceScatter op requires the data tensor to have the same rank as the src tensor. However, the given dimensions are src: 1, data: 2"),
        ("(2, 5)", "float32", "1, 3, 1, axis=2", "SliceScatter requires the input axis to be in the range [-2, 1]. However, the input axis is 2, while ndim is 2"),
        ("(2, 5)", "int32", "1, 3, 1, axis=0", "SliceScatter op requires the input data to have the same type as src. However, the given types are data: T.float32, src: T.int32"),
        ("(3, 5)", "float32", "1, 3, 1, axis=0", "SliceScatter op requires the src tensor's dimension at scatter axis (0) to match the number of elements in the slice. Actual src dimension at axis 0: T.int64(3), Expected elements in slice (num_elem): T.int64(2)"),
        ("(2, 4)", "float32", "1, 3, 1, axis=0", "SliceScatter op requires the data tensor to have the same shape as the src tensor except at the scatter axis (0). Mismatch at dimension 1. data shape: (T.int64(4), T.int64(5)), src shape: (T.int64(2), T.int64(4))"),
    ] {
        let bad = check(&src(s, dtype, call));
        let got = format!("{:?}", bad.diagnostics);
        assert!(!bad.is_valid() && got.contains(msg), "{s} {dtype} {call}: {got}");
    }
}
