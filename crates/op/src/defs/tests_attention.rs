//! `nn.attention` and `index_tensor`, the transformer front ends' operators:
//! legalizations against TVM 0.27's `LegalizeOps` output and inference with TVM's
//! messages.

use super::tests::{check, sinfo_of};
use crate::legalize::tests::assert_matches_tvm;

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
        !bad.is_valid() && msg.contains("The key sequence length and the value sequence length should be the same"),
        "{msg}"
    );
}

const INDEX_TENSOR_IN: &str = r#"
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((5, 6, 7), dtype="float32"), i: R.Tensor((2, 1), dtype="int64"), j: R.Tensor((3,), dtype="int32"), m: R.Tensor((4, 6), dtype="bool")) -> R.Tuple(R.Tensor((2, 3, 7), dtype="float32"), R.Tensor((3, 6), dtype="bool")):
        a: R.Tensor((2, 3, 7), dtype="float32") = R.index_tensor(x, (i, j))
        b: R.Tensor((3, 6), dtype="bool") = R.index_tensor(m, (j,))
        return (a, b)"#;

const INDEX_TENSOR_TVM: &str = r#"
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def index_tensor(x: T.Buffer((T.int64(5), T.int64(6), T.int64(7)), "float32"), gv: T.Buffer((T.int64(2), T.int64(1)), "int64"), gv1: T.Buffer((T.int64(3),), "int32"), advanced_index: T.Buffer((T.int64(2), T.int64(3), T.int64(7)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        T_broadcast_to = T.sblock_alloc_buffer((T.int64(2), T.int64(3)), "int64")
        T_broadcast_to_1 = T.sblock_alloc_buffer((T.int64(2), T.int64(3)), "int32")
        for ax0, ax1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("T_broadcast_to"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(gv[v_ax0, T.int64(0)])
                T.writes(T_broadcast_to[v_ax0, v_ax1])
                T_broadcast_to[v_ax0, v_ax1] = gv[v_ax0, T.int64(0)]
        for ax0, ax1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("T_broadcast_to_1"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(gv1[v_ax1])
                T.writes(T_broadcast_to_1[v_ax0, v_ax1])
                T_broadcast_to_1[v_ax0, v_ax1] = gv1[v_ax1]
        for ax0, ax1, ax2 in T.grid(T.int64(2), T.int64(3), T.int64(7)):
            with T.sblock("advanced_index"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(x[T_broadcast_to[v_ax0, v_ax1], T_broadcast_to_1[v_ax0, v_ax1], v_ax2], T_broadcast_to[v_ax0, v_ax1], T_broadcast_to_1[v_ax0, v_ax1])
                T.writes(advanced_index[v_ax0, v_ax1, v_ax2])
                advanced_index[v_ax0, v_ax1, v_ax2] = x[T_broadcast_to[v_ax0, v_ax1], T_broadcast_to_1[v_ax0, v_ax1], v_ax2]

    @T.prim_func(private=True, s_tir=True)
    def index_tensor1(m: T.Buffer((T.int64(4), T.int64(6)), "bool"), gv2: T.Buffer((T.int64(3),), "int32"), advanced_index: T.Buffer((T.int64(3), T.int64(6)), "bool")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(T.int64(3), T.int64(6)):
            with T.sblock("advanced_index"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(m[gv2[v_ax0], v_ax1], gv2[v_ax0])
                T.writes(advanced_index[v_ax0, v_ax1])
                advanced_index[v_ax0, v_ax1] = m[gv2[v_ax0], v_ax1]

    @R.function
    def main(x: R.Tensor((5, 6, 7), dtype="float32"), i: R.Tensor((2, 1), dtype="int64"), j: R.Tensor((3,), dtype="int32"), m: R.Tensor((4, 6), dtype="bool")) -> R.Tuple(R.Tensor((2, 3, 7), dtype="float32"), R.Tensor((3, 6), dtype="bool")):
        cls = Module
        gv: R.Tensor((2, 1), dtype="int64") = (i, j)[0]
        gv1: R.Tensor((3,), dtype="int32") = (i, j)[1]
        a = R.call_tir(cls.index_tensor, (x, gv, gv1), out_ty=R.Tensor((2, 3, 7), dtype="float32"))
        gv2: R.Tensor((3,), dtype="int32") = (j,)[0]
        b = R.call_tir(cls.index_tensor1, (m, gv2), out_ty=R.Tensor((3, 6), dtype="bool"))
        return (a, b)"#;

/// Two broadcast indices of different integer types (`T_broadcast_to`
/// stages) and a single index into bool data (no broadcast stage); the
/// indices are bound with `TupleGetItem` first.
#[test]
fn index_tensor_matches_tvm() {
    assert_matches_tvm(INDEX_TENSOR_IN, INDEX_TENSOR_TVM);
}

/// TVM's inference: broadcast index shapes, the unknown cases and the errors.
#[test]
fn index_tensor_inference() {
    let ok = check(
        r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((5, 6, 7), dtype="float32"), i: R.Tensor((2, 1), dtype="int64"), j: R.Tensor((3,), dtype="int32"), u: R.Tensor(dtype="float32", ndim=3), v: R.Tensor(dtype="int64", ndim=2)):
        n = T.int64()
        m = T.int64()
        a = R.index_tensor(x, (i, j))
        b = R.index_tensor(u, (j,))
        c = R.index_tensor(x, (v,))
        w = R.match_cast(v, R.Tensor((n,), dtype="int64"))
        y = R.match_cast(v, R.Tensor((m,), dtype="int64"))
        d = R.index_tensor(x, (w, y))
        e = R.index_tensor(x, (w, w))
        return (a, b, c, d, e)
"#,
    );
    assert!(ok.is_valid(), "{:?}", ok.diagnostics);
    assert_eq!(sinfo_of(&ok, "a"), r#"R.Tensor((2, 3, 7), dtype="float32")"#);
    assert_eq!(sinfo_of(&ok, "b"), r#"R.Tensor(dtype="float32", ndim=3)"#);
    assert_eq!(sinfo_of(&ok, "c"), r#"R.Tensor(dtype="float32")"#);
    assert_eq!(sinfo_of(&ok, "d"), r#"R.Tensor(dtype="float32")"#);
    assert_eq!(sinfo_of(&ok, "e"), r#"R.Tensor((n, 7), dtype="float32")"#);
    for (args, msg) in [
        (
            "(b,)",
            "index_tensor requires every index tensor to have an integer dtype; index 0 has dtype T.bool",
        ),
        ("(f,)", "index 0 has dtype T.float32"),
        (
            "(k, k, k, k)",
            "index_tensor received 4 index tensors, but data has only 3 dimensions",
        ),
        (
            "(k, j)",
            "index_tensor: cannot broadcast index shapes. Mismatch at axis 0: T.int64(2) vs T.int64(3)",
        ),
        ("()", "index_tensor expects a non\u{2011}empty tuple of index tensors"),
    ] {
        let src = format!(
            r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((5, 6, 7), dtype="float32"), j: R.Tensor((3,), dtype="int32"), k: R.Tensor((2,), dtype="int64"), b: R.Tensor((2,), dtype="bool"), f: R.Tensor((2,), dtype="float32")):
        a = R.index_tensor(x, {args})
        return a
"#
        );
        let bad = check(&src);
        let got = format!("{:?}", bad.diagnostics);
        assert!(!bad.is_valid() && got.contains(msg), "{args}: {got}");
    }
}

const ATTENTION_IN: &str = r#"
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((2, 3, 2, 4), dtype="float32"), k: R.Tensor((2, 5, 2, 4), dtype="float32"), v: R.Tensor((2, 5, 2, 6), dtype="float32"), b: R.Tensor((2, 1, 3, 5), dtype="float32")) -> R.Tuple(R.Tensor((2, 3, 2, 6), dtype="float32"), R.Tensor((2, 3, 2, 6), dtype="float32"), R.Tensor((2, 3, 2, 6), dtype="float32")):
        a: R.Tensor((2, 3, 2, 6), dtype="float32") = R.nn.attention(q, k, v, scale=None, causal_mask=None, window_size=None)
        c: R.Tensor((2, 3, 2, 6), dtype="float32") = R.nn.attention_bias(q, k, v, b, scale=T.float32(0.5), causal_mask="TopLeft", window_size=None)
        d: R.Tensor((2, 3, 2, 6), dtype="float32") = R.nn.attention(q, k, v, scale=None, causal_mask="BottomRight", window_size=None)
        return (a, c, d)"#;

const ATTENTION_TVM: &str = r#"
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def attention(q: T.Buffer((T.int64(2), T.int64(3), T.int64(2), T.int64(4)), "float32"), k: T.Buffer((T.int64(2), T.int64(5), T.int64(2), T.int64(4)), "float32"), v: T.Buffer((T.int64(2), T.int64(5), T.int64(2), T.int64(6)), "float32"), T_transpose: T.Buffer((T.int64(2), T.int64(3), T.int64(2), T.int64(6)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        T_transpose_1 = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(3), T.int64(4)))
        T_reshape = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(4)))
        T_transpose_2 = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(5), T.int64(4)))
        T_reshape_1 = T.sblock_alloc_buffer((T.int64(4), T.int64(5), T.int64(4)))
        T_batch_matmul_NT = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        T_divide = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        T_softmax_maxelem = T.sblock_alloc_buffer((T.int64(4), T.int64(3)))
        T_softmax_exp = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        T_softmax_expsum = T.sblock_alloc_buffer((T.int64(4), T.int64(3)))
        T_softmax_norm = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        T_transpose_3 = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(5), T.int64(6)))
        T_reshape_2 = T.sblock_alloc_buffer((T.int64(4), T.int64(5), T.int64(6)))
        T_batch_matmul_NN = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(6)))
        T_reshape_3 = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(3), T.int64(6)))
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(3), T.int64(4)):
            with T.sblock("T_transpose"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(q[v_ax0, v_ax2, v_ax1, v_ax3])
                T.writes(T_transpose_1[v_ax0, v_ax1, v_ax2, v_ax3])
                T_transpose_1[v_ax0, v_ax1, v_ax2, v_ax3] = q[v_ax0, v_ax2, v_ax1, v_ax3]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(3), T.int64(4)):
            with T.sblock("T_reshape"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(T_transpose_1[((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(48) // T.int64(24), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(24) // T.int64(12), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(12) // T.int64(4), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(4)])
                T.writes(T_reshape[v_ax0, v_ax1, v_ax2])
                T_reshape[v_ax0, v_ax1, v_ax2] = T_transpose_1[((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(48) // T.int64(24), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(24) // T.int64(12), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(12) // T.int64(4), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(4)]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(5), T.int64(4)):
            with T.sblock("T_transpose_1"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(k[v_ax0, v_ax2, v_ax1, v_ax3])
                T.writes(T_transpose_2[v_ax0, v_ax1, v_ax2, v_ax3])
                T_transpose_2[v_ax0, v_ax1, v_ax2, v_ax3] = k[v_ax0, v_ax2, v_ax1, v_ax3]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(5), T.int64(4)):
            with T.sblock("T_reshape_1"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(T_transpose_2[((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(80) // T.int64(40), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(40) // T.int64(20), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(20) // T.int64(4), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(4)])
                T.writes(T_reshape_1[v_ax0, v_ax1, v_ax2])
                T_reshape_1[v_ax0, v_ax1, v_ax2] = T_transpose_2[((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(80) // T.int64(40), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(40) // T.int64(20), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(20) // T.int64(4), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(4)]
        for b, i, j, k_1 in T.grid(T.int64(4), T.int64(3), T.int64(5), T.int64(4)):
            with T.sblock("T_batch_matmul_NT"):
                v_b, v_i, v_j, v_k = T.axis.remap("SSSR", [b, i, j, k_1])
                T.reads(T_reshape[v_b, v_i, v_k], T_reshape_1[v_b, v_j, v_k])
                T.writes(T_batch_matmul_NT[v_b, v_i, v_j])
                T.sblock_attr({"layout_free_placeholders": [T_reshape_1]})
                with T.init():
                    T_batch_matmul_NT[v_b, v_i, v_j] = T.float32(0.0)
                T_batch_matmul_NT[v_b, v_i, v_j] = T_batch_matmul_NT[v_b, v_i, v_j] + T_reshape[v_b, v_i, v_k] * T_reshape_1[v_b, v_j, v_k]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("T_divide"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(T_batch_matmul_NT[v_ax0, v_ax1, v_ax2])
                T.writes(T_divide[v_ax0, v_ax1, v_ax2])
                T_divide[v_ax0, v_ax1, v_ax2] = T_batch_matmul_NT[v_ax0, v_ax1, v_ax2] / T.sqrt(T.float32(4.0))
        for i0, i1, k_1 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("T_softmax_maxelem"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k_1])
                T.reads(T_divide[v_i0, v_i1, v_k])
                T.writes(T_softmax_maxelem[v_i0, v_i1])
                with T.init():
                    T_softmax_maxelem[v_i0, v_i1] = T.float32(-340282346638528859811704183484516925440.0)
                T_softmax_maxelem[v_i0, v_i1] = T.max(T_softmax_maxelem[v_i0, v_i1], T_divide[v_i0, v_i1, v_k])
        for i0, i1, i2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("T_softmax_exp"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(T_divide[v_i0, v_i1, v_i2], T_softmax_maxelem[v_i0, v_i1])
                T.writes(T_softmax_exp[v_i0, v_i1, v_i2])
                T_softmax_exp[v_i0, v_i1, v_i2] = T.exp(T_divide[v_i0, v_i1, v_i2] - T_softmax_maxelem[v_i0, v_i1])
        for i0, i1, k_1 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("T_softmax_expsum"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k_1])
                T.reads(T_softmax_exp[v_i0, v_i1, v_k])
                T.writes(T_softmax_expsum[v_i0, v_i1])
                with T.init():
                    T_softmax_expsum[v_i0, v_i1] = T.float32(0.0)
                T_softmax_expsum[v_i0, v_i1] = T_softmax_expsum[v_i0, v_i1] + T_softmax_exp[v_i0, v_i1, v_k]
        for i0, i1, i2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("T_softmax_norm"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(T_softmax_exp[v_i0, v_i1, v_i2], T_softmax_expsum[v_i0, v_i1])
                T.writes(T_softmax_norm[v_i0, v_i1, v_i2])
                T.sblock_attr({"axis": 2})
                T_softmax_norm[v_i0, v_i1, v_i2] = T_softmax_exp[v_i0, v_i1, v_i2] / T_softmax_expsum[v_i0, v_i1]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(5), T.int64(6)):
            with T.sblock("T_transpose_2"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(v[v_ax0, v_ax2, v_ax1, v_ax3])
                T.writes(T_transpose_3[v_ax0, v_ax1, v_ax2, v_ax3])
                T_transpose_3[v_ax0, v_ax1, v_ax2, v_ax3] = v[v_ax0, v_ax2, v_ax1, v_ax3]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(5), T.int64(6)):
            with T.sblock("T_reshape_2"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(T_transpose_3[((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(120) // T.int64(60), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(60) // T.int64(30), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(30) // T.int64(6), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(6)])
                T.writes(T_reshape_2[v_ax0, v_ax1, v_ax2])
                T_reshape_2[v_ax0, v_ax1, v_ax2] = T_transpose_3[((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(120) // T.int64(60), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(60) // T.int64(30), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(30) // T.int64(6), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(6)]
        for b, i, j, k_1 in T.grid(T.int64(4), T.int64(3), T.int64(6), T.int64(5)):
            with T.sblock("T_batch_matmul_NN"):
                v_b, v_i, v_j, v_k = T.axis.remap("SSSR", [b, i, j, k_1])
                T.reads(T_softmax_norm[v_b, v_i, v_k], T_reshape_2[v_b, v_k, v_j])
                T.writes(T_batch_matmul_NN[v_b, v_i, v_j])
                T.sblock_attr({"layout_free_placeholders": [T_reshape_2]})
                with T.init():
                    T_batch_matmul_NN[v_b, v_i, v_j] = T.float32(0.0)
                T_batch_matmul_NN[v_b, v_i, v_j] = T_batch_matmul_NN[v_b, v_i, v_j] + T_softmax_norm[v_b, v_i, v_k] * T_reshape_2[v_b, v_k, v_j]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(3), T.int64(6)):
            with T.sblock("T_reshape_3"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(T_batch_matmul_NN[(((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(72) // T.int64(18), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(18) // T.int64(6), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(6)])
                T.writes(T_reshape_3[v_ax0, v_ax1, v_ax2, v_ax3])
                T_reshape_3[v_ax0, v_ax1, v_ax2, v_ax3] = T_batch_matmul_NN[(((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(72) // T.int64(18), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(18) // T.int64(6), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(6)]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(3), T.int64(2), T.int64(6)):
            with T.sblock("T_transpose_3"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(T_reshape_3[v_ax0, v_ax2, v_ax1, v_ax3])
                T.writes(T_transpose[v_ax0, v_ax1, v_ax2, v_ax3])
                T_transpose[v_ax0, v_ax1, v_ax2, v_ax3] = T_reshape_3[v_ax0, v_ax2, v_ax1, v_ax3]

    @T.prim_func(private=True, s_tir=True)
    def attention1(q: T.Buffer((T.int64(2), T.int64(3), T.int64(2), T.int64(4)), "float32"), k: T.Buffer((T.int64(2), T.int64(5), T.int64(2), T.int64(4)), "float32"), v: T.Buffer((T.int64(2), T.int64(5), T.int64(2), T.int64(6)), "float32"), T_transpose: T.Buffer((T.int64(2), T.int64(3), T.int64(2), T.int64(6)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        T_transpose_1 = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(3), T.int64(4)))
        T_reshape = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(4)))
        T_transpose_2 = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(5), T.int64(4)))
        T_reshape_1 = T.sblock_alloc_buffer((T.int64(4), T.int64(5), T.int64(4)))
        T_batch_matmul_NT = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        T_divide = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        trilu = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        trilu_red = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(1)))
        T_subtract = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        compute = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        trilu_1 = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        trilu_red_1 = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(1)))
        T_divide_1 = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        T_transpose_3 = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(5), T.int64(6)))
        T_reshape_2 = T.sblock_alloc_buffer((T.int64(4), T.int64(5), T.int64(6)))
        T_batch_matmul_NN = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(6)))
        T_reshape_3 = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(3), T.int64(6)))
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(3), T.int64(4)):
            with T.sblock("T_transpose"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(q[v_ax0, v_ax2, v_ax1, v_ax3])
                T.writes(T_transpose_1[v_ax0, v_ax1, v_ax2, v_ax3])
                T_transpose_1[v_ax0, v_ax1, v_ax2, v_ax3] = q[v_ax0, v_ax2, v_ax1, v_ax3]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(3), T.int64(4)):
            with T.sblock("T_reshape"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(T_transpose_1[((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(48) // T.int64(24), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(24) // T.int64(12), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(12) // T.int64(4), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(4)])
                T.writes(T_reshape[v_ax0, v_ax1, v_ax2])
                T_reshape[v_ax0, v_ax1, v_ax2] = T_transpose_1[((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(48) // T.int64(24), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(24) // T.int64(12), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(12) // T.int64(4), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(4)]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(5), T.int64(4)):
            with T.sblock("T_transpose_1"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(k[v_ax0, v_ax2, v_ax1, v_ax3])
                T.writes(T_transpose_2[v_ax0, v_ax1, v_ax2, v_ax3])
                T_transpose_2[v_ax0, v_ax1, v_ax2, v_ax3] = k[v_ax0, v_ax2, v_ax1, v_ax3]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(5), T.int64(4)):
            with T.sblock("T_reshape_1"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(T_transpose_2[((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(80) // T.int64(40), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(40) // T.int64(20), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(20) // T.int64(4), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(4)])
                T.writes(T_reshape_1[v_ax0, v_ax1, v_ax2])
                T_reshape_1[v_ax0, v_ax1, v_ax2] = T_transpose_2[((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(80) // T.int64(40), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(40) // T.int64(20), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(20) // T.int64(4), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(4)]
        for b, i, j, k_1 in T.grid(T.int64(4), T.int64(3), T.int64(5), T.int64(4)):
            with T.sblock("T_batch_matmul_NT"):
                v_b, v_i, v_j, v_k = T.axis.remap("SSSR", [b, i, j, k_1])
                T.reads(T_reshape[v_b, v_i, v_k], T_reshape_1[v_b, v_j, v_k])
                T.writes(T_batch_matmul_NT[v_b, v_i, v_j])
                T.sblock_attr({"layout_free_placeholders": [T_reshape_1]})
                with T.init():
                    T_batch_matmul_NT[v_b, v_i, v_j] = T.float32(0.0)
                T_batch_matmul_NT[v_b, v_i, v_j] = T_batch_matmul_NT[v_b, v_i, v_j] + T_reshape[v_b, v_i, v_k] * T_reshape_1[v_b, v_j, v_k]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("T_divide"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(T_batch_matmul_NT[v_ax0, v_ax1, v_ax2])
                T.writes(T_divide[v_ax0, v_ax1, v_ax2])
                T_divide[v_ax0, v_ax1, v_ax2] = T_batch_matmul_NT[v_ax0, v_ax1, v_ax2] / T.sqrt(T.float32(4.0))
        for i0, i1, i2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("trilu"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(T_divide[v_i0, v_i1, v_i2])
                T.writes(trilu[v_i0, v_i1, v_i2])
                trilu[v_i0, v_i1, v_i2] = T.Select(v_i2 <= v_i1 + T.int64(2), T_divide[v_i0, v_i1, v_i2], T.float32(0.0))
        for ax0, ax1, ax2, k2 in T.grid(T.int64(4), T.int64(3), T.int64(1), T.int64(5)):
            with T.sblock("trilu_red"):
                v_ax0, v_ax1, v_ax2, v_k2 = T.axis.remap("SSSR", [ax0, ax1, ax2, k2])
                T.reads(trilu[v_ax0, v_ax1, v_k2])
                T.writes(trilu_red[v_ax0, v_ax1, v_ax2])
                with T.init():
                    trilu_red[v_ax0, v_ax1, v_ax2] = T.float32(-340282346638528859811704183484516925440.0)
                trilu_red[v_ax0, v_ax1, v_ax2] = T.max(trilu_red[v_ax0, v_ax1, v_ax2], trilu[v_ax0, v_ax1, v_k2])
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("T_subtract"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(trilu[v_ax0, v_ax1, v_ax2], trilu_red[v_ax0, v_ax1, T.int64(0)])
                T.writes(T_subtract[v_ax0, v_ax1, v_ax2])
                T_subtract[v_ax0, v_ax1, v_ax2] = trilu[v_ax0, v_ax1, v_ax2] - trilu_red[v_ax0, v_ax1, T.int64(0)]
        for i0, i1, i2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("compute"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(T_subtract[v_i0, v_i1, v_i2])
                T.writes(compute[v_i0, v_i1, v_i2])
                compute[v_i0, v_i1, v_i2] = T.exp(T_subtract[v_i0, v_i1, v_i2])
        for i0, i1, i2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("trilu_1"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(compute[v_i0, v_i1, v_i2])
                T.writes(trilu_1[v_i0, v_i1, v_i2])
                trilu_1[v_i0, v_i1, v_i2] = T.Select(v_i2 <= v_i1 + T.int64(2), compute[v_i0, v_i1, v_i2], T.float32(0.0))
        for ax0, ax1, ax2, k2 in T.grid(T.int64(4), T.int64(3), T.int64(1), T.int64(5)):
            with T.sblock("trilu_red_1"):
                v_ax0, v_ax1, v_ax2, v_k2 = T.axis.remap("SSSR", [ax0, ax1, ax2, k2])
                T.reads(trilu_1[v_ax0, v_ax1, v_k2])
                T.writes(trilu_red_1[v_ax0, v_ax1, v_ax2])
                with T.init():
                    trilu_red_1[v_ax0, v_ax1, v_ax2] = T.float32(0.0)
                trilu_red_1[v_ax0, v_ax1, v_ax2] = trilu_red_1[v_ax0, v_ax1, v_ax2] + trilu_1[v_ax0, v_ax1, v_k2]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("T_divide_1"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(trilu_1[v_ax0, v_ax1, v_ax2], trilu_red_1[v_ax0, v_ax1, T.int64(0)])
                T.writes(T_divide_1[v_ax0, v_ax1, v_ax2])
                T_divide_1[v_ax0, v_ax1, v_ax2] = trilu_1[v_ax0, v_ax1, v_ax2] / trilu_red_1[v_ax0, v_ax1, T.int64(0)]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(5), T.int64(6)):
            with T.sblock("T_transpose_2"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(v[v_ax0, v_ax2, v_ax1, v_ax3])
                T.writes(T_transpose_3[v_ax0, v_ax1, v_ax2, v_ax3])
                T_transpose_3[v_ax0, v_ax1, v_ax2, v_ax3] = v[v_ax0, v_ax2, v_ax1, v_ax3]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(5), T.int64(6)):
            with T.sblock("T_reshape_2"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(T_transpose_3[((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(120) // T.int64(60), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(60) // T.int64(30), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(30) // T.int64(6), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(6)])
                T.writes(T_reshape_2[v_ax0, v_ax1, v_ax2])
                T_reshape_2[v_ax0, v_ax1, v_ax2] = T_transpose_3[((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(120) // T.int64(60), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(60) // T.int64(30), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(30) // T.int64(6), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(6)]
        for b, i, j, k_1 in T.grid(T.int64(4), T.int64(3), T.int64(6), T.int64(5)):
            with T.sblock("T_batch_matmul_NN"):
                v_b, v_i, v_j, v_k = T.axis.remap("SSSR", [b, i, j, k_1])
                T.reads(T_divide_1[v_b, v_i, v_k], T_reshape_2[v_b, v_k, v_j])
                T.writes(T_batch_matmul_NN[v_b, v_i, v_j])
                T.sblock_attr({"layout_free_placeholders": [T_reshape_2]})
                with T.init():
                    T_batch_matmul_NN[v_b, v_i, v_j] = T.float32(0.0)
                T_batch_matmul_NN[v_b, v_i, v_j] = T_batch_matmul_NN[v_b, v_i, v_j] + T_divide_1[v_b, v_i, v_k] * T_reshape_2[v_b, v_k, v_j]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(3), T.int64(6)):
            with T.sblock("T_reshape_3"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(T_batch_matmul_NN[(((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(72) // T.int64(18), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(18) // T.int64(6), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(6)])
                T.writes(T_reshape_3[v_ax0, v_ax1, v_ax2, v_ax3])
                T_reshape_3[v_ax0, v_ax1, v_ax2, v_ax3] = T_batch_matmul_NN[(((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(72) // T.int64(18), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(18) // T.int64(6), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(6)]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(3), T.int64(2), T.int64(6)):
            with T.sblock("T_transpose_3"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(T_reshape_3[v_ax0, v_ax2, v_ax1, v_ax3])
                T.writes(T_transpose[v_ax0, v_ax1, v_ax2, v_ax3])
                T_transpose[v_ax0, v_ax1, v_ax2, v_ax3] = T_reshape_3[v_ax0, v_ax2, v_ax1, v_ax3]

    @T.prim_func(private=True, s_tir=True)
    def attention_bias(q: T.Buffer((T.int64(2), T.int64(3), T.int64(2), T.int64(4)), "float32"), k: T.Buffer((T.int64(2), T.int64(5), T.int64(2), T.int64(4)), "float32"), v: T.Buffer((T.int64(2), T.int64(5), T.int64(2), T.int64(6)), "float32"), b: T.Buffer((T.int64(2), T.int64(1), T.int64(3), T.int64(5)), "float32"), T_transpose: T.Buffer((T.int64(2), T.int64(3), T.int64(2), T.int64(6)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        T_transpose_1 = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(3), T.int64(4)))
        T_reshape = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(4)))
        T_transpose_2 = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(5), T.int64(4)))
        T_reshape_1 = T.sblock_alloc_buffer((T.int64(4), T.int64(5), T.int64(4)))
        T_batch_matmul_NT = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        T_multiply = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        T_reshape_2 = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(3), T.int64(5)))
        T_add = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(3), T.int64(5)))
        T_reshape_3 = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        trilu = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        trilu_red = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(1)))
        T_subtract = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        compute = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        trilu_1 = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        trilu_red_1 = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(1)))
        T_divide = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(5)))
        T_transpose_3 = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(5), T.int64(6)))
        T_reshape_4 = T.sblock_alloc_buffer((T.int64(4), T.int64(5), T.int64(6)))
        T_batch_matmul_NN = T.sblock_alloc_buffer((T.int64(4), T.int64(3), T.int64(6)))
        T_reshape_5 = T.sblock_alloc_buffer((T.int64(2), T.int64(2), T.int64(3), T.int64(6)))
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(3), T.int64(4)):
            with T.sblock("T_transpose"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(q[v_ax0, v_ax2, v_ax1, v_ax3])
                T.writes(T_transpose_1[v_ax0, v_ax1, v_ax2, v_ax3])
                T_transpose_1[v_ax0, v_ax1, v_ax2, v_ax3] = q[v_ax0, v_ax2, v_ax1, v_ax3]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(3), T.int64(4)):
            with T.sblock("T_reshape"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(T_transpose_1[((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(48) // T.int64(24), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(24) // T.int64(12), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(12) // T.int64(4), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(4)])
                T.writes(T_reshape[v_ax0, v_ax1, v_ax2])
                T_reshape[v_ax0, v_ax1, v_ax2] = T_transpose_1[((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(48) // T.int64(24), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(24) // T.int64(12), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(12) // T.int64(4), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(4) + v_ax2) % T.int64(4)]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(5), T.int64(4)):
            with T.sblock("T_transpose_1"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(k[v_ax0, v_ax2, v_ax1, v_ax3])
                T.writes(T_transpose_2[v_ax0, v_ax1, v_ax2, v_ax3])
                T_transpose_2[v_ax0, v_ax1, v_ax2, v_ax3] = k[v_ax0, v_ax2, v_ax1, v_ax3]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(5), T.int64(4)):
            with T.sblock("T_reshape_1"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(T_transpose_2[((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(80) // T.int64(40), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(40) // T.int64(20), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(20) // T.int64(4), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(4)])
                T.writes(T_reshape_1[v_ax0, v_ax1, v_ax2])
                T_reshape_1[v_ax0, v_ax1, v_ax2] = T_transpose_2[((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(80) // T.int64(40), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(40) // T.int64(20), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(20) // T.int64(4), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(4) + v_ax2) % T.int64(4)]
        for b_1, i, j, k_1 in T.grid(T.int64(4), T.int64(3), T.int64(5), T.int64(4)):
            with T.sblock("T_batch_matmul_NT"):
                v_b, v_i, v_j, v_k = T.axis.remap("SSSR", [b_1, i, j, k_1])
                T.reads(T_reshape[v_b, v_i, v_k], T_reshape_1[v_b, v_j, v_k])
                T.writes(T_batch_matmul_NT[v_b, v_i, v_j])
                T.sblock_attr({"layout_free_placeholders": [T_reshape_1]})
                with T.init():
                    T_batch_matmul_NT[v_b, v_i, v_j] = T.float32(0.0)
                T_batch_matmul_NT[v_b, v_i, v_j] = T_batch_matmul_NT[v_b, v_i, v_j] + T_reshape[v_b, v_i, v_k] * T_reshape_1[v_b, v_j, v_k]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("T_multiply"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(T_batch_matmul_NT[v_ax0, v_ax1, v_ax2])
                T.writes(T_multiply[v_ax0, v_ax1, v_ax2])
                T_multiply[v_ax0, v_ax1, v_ax2] = T_batch_matmul_NT[v_ax0, v_ax1, v_ax2] * T.float32(0.5)
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(3), T.int64(5)):
            with T.sblock("T_reshape_2"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(T_multiply[(((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(5) + v_ax3) % T.int64(60) // T.int64(15), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(5) + v_ax3) % T.int64(15) // T.int64(5), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(5) + v_ax3) % T.int64(5)])
                T.writes(T_reshape_2[v_ax0, v_ax1, v_ax2, v_ax3])
                T_reshape_2[v_ax0, v_ax1, v_ax2, v_ax3] = T_multiply[(((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(5) + v_ax3) % T.int64(60) // T.int64(15), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(5) + v_ax3) % T.int64(15) // T.int64(5), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(5) + v_ax3) % T.int64(5)]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(3), T.int64(5)):
            with T.sblock("T_add"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(T_reshape_2[v_ax0, v_ax1, v_ax2, v_ax3], b[v_ax0, T.int64(0), v_ax2, v_ax3])
                T.writes(T_add[v_ax0, v_ax1, v_ax2, v_ax3])
                T_add[v_ax0, v_ax1, v_ax2, v_ax3] = T_reshape_2[v_ax0, v_ax1, v_ax2, v_ax3] + b[v_ax0, T.int64(0), v_ax2, v_ax3]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("T_reshape_3"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(T_add[((v_ax0 * T.int64(3) + v_ax1) * T.int64(5) + v_ax2) % T.int64(60) // T.int64(30), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(5) + v_ax2) % T.int64(30) // T.int64(15), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(5) + v_ax2) % T.int64(15) // T.int64(5), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(5) + v_ax2) % T.int64(5)])
                T.writes(T_reshape_3[v_ax0, v_ax1, v_ax2])
                T_reshape_3[v_ax0, v_ax1, v_ax2] = T_add[((v_ax0 * T.int64(3) + v_ax1) * T.int64(5) + v_ax2) % T.int64(60) // T.int64(30), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(5) + v_ax2) % T.int64(30) // T.int64(15), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(5) + v_ax2) % T.int64(15) // T.int64(5), ((v_ax0 * T.int64(3) + v_ax1) * T.int64(5) + v_ax2) % T.int64(5)]
        for i0, i1, i2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("trilu"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(T_reshape_3[v_i0, v_i1, v_i2])
                T.writes(trilu[v_i0, v_i1, v_i2])
                trilu[v_i0, v_i1, v_i2] = T.Select(v_i2 <= v_i1, T_reshape_3[v_i0, v_i1, v_i2], T.float32(0.0))
        for ax0, ax1, ax2, k2 in T.grid(T.int64(4), T.int64(3), T.int64(1), T.int64(5)):
            with T.sblock("trilu_red"):
                v_ax0, v_ax1, v_ax2, v_k2 = T.axis.remap("SSSR", [ax0, ax1, ax2, k2])
                T.reads(trilu[v_ax0, v_ax1, v_k2])
                T.writes(trilu_red[v_ax0, v_ax1, v_ax2])
                with T.init():
                    trilu_red[v_ax0, v_ax1, v_ax2] = T.float32(-340282346638528859811704183484516925440.0)
                trilu_red[v_ax0, v_ax1, v_ax2] = T.max(trilu_red[v_ax0, v_ax1, v_ax2], trilu[v_ax0, v_ax1, v_k2])
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("T_subtract"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(trilu[v_ax0, v_ax1, v_ax2], trilu_red[v_ax0, v_ax1, T.int64(0)])
                T.writes(T_subtract[v_ax0, v_ax1, v_ax2])
                T_subtract[v_ax0, v_ax1, v_ax2] = trilu[v_ax0, v_ax1, v_ax2] - trilu_red[v_ax0, v_ax1, T.int64(0)]
        for i0, i1, i2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("compute"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(T_subtract[v_i0, v_i1, v_i2])
                T.writes(compute[v_i0, v_i1, v_i2])
                compute[v_i0, v_i1, v_i2] = T.exp(T_subtract[v_i0, v_i1, v_i2])
        for i0, i1, i2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("trilu_1"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(compute[v_i0, v_i1, v_i2])
                T.writes(trilu_1[v_i0, v_i1, v_i2])
                trilu_1[v_i0, v_i1, v_i2] = T.Select(v_i2 <= v_i1, compute[v_i0, v_i1, v_i2], T.float32(0.0))
        for ax0, ax1, ax2, k2 in T.grid(T.int64(4), T.int64(3), T.int64(1), T.int64(5)):
            with T.sblock("trilu_red_1"):
                v_ax0, v_ax1, v_ax2, v_k2 = T.axis.remap("SSSR", [ax0, ax1, ax2, k2])
                T.reads(trilu_1[v_ax0, v_ax1, v_k2])
                T.writes(trilu_red_1[v_ax0, v_ax1, v_ax2])
                with T.init():
                    trilu_red_1[v_ax0, v_ax1, v_ax2] = T.float32(0.0)
                trilu_red_1[v_ax0, v_ax1, v_ax2] = trilu_red_1[v_ax0, v_ax1, v_ax2] + trilu_1[v_ax0, v_ax1, v_k2]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(3), T.int64(5)):
            with T.sblock("T_divide"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(trilu_1[v_ax0, v_ax1, v_ax2], trilu_red_1[v_ax0, v_ax1, T.int64(0)])
                T.writes(T_divide[v_ax0, v_ax1, v_ax2])
                T_divide[v_ax0, v_ax1, v_ax2] = trilu_1[v_ax0, v_ax1, v_ax2] / trilu_red_1[v_ax0, v_ax1, T.int64(0)]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(5), T.int64(6)):
            with T.sblock("T_transpose_2"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(v[v_ax0, v_ax2, v_ax1, v_ax3])
                T.writes(T_transpose_3[v_ax0, v_ax1, v_ax2, v_ax3])
                T_transpose_3[v_ax0, v_ax1, v_ax2, v_ax3] = v[v_ax0, v_ax2, v_ax1, v_ax3]
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(5), T.int64(6)):
            with T.sblock("T_reshape_4"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(T_transpose_3[((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(120) // T.int64(60), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(60) // T.int64(30), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(30) // T.int64(6), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(6)])
                T.writes(T_reshape_4[v_ax0, v_ax1, v_ax2])
                T_reshape_4[v_ax0, v_ax1, v_ax2] = T_transpose_3[((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(120) // T.int64(60), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(60) // T.int64(30), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(30) // T.int64(6), ((v_ax0 * T.int64(5) + v_ax1) * T.int64(6) + v_ax2) % T.int64(6)]
        for b_1, i, j, k_1 in T.grid(T.int64(4), T.int64(3), T.int64(6), T.int64(5)):
            with T.sblock("T_batch_matmul_NN"):
                v_b, v_i, v_j, v_k = T.axis.remap("SSSR", [b_1, i, j, k_1])
                T.reads(T_divide[v_b, v_i, v_k], T_reshape_4[v_b, v_k, v_j])
                T.writes(T_batch_matmul_NN[v_b, v_i, v_j])
                T.sblock_attr({"layout_free_placeholders": [T_reshape_4]})
                with T.init():
                    T_batch_matmul_NN[v_b, v_i, v_j] = T.float32(0.0)
                T_batch_matmul_NN[v_b, v_i, v_j] = T_batch_matmul_NN[v_b, v_i, v_j] + T_divide[v_b, v_i, v_k] * T_reshape_4[v_b, v_k, v_j]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(2), T.int64(3), T.int64(6)):
            with T.sblock("T_reshape_5"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(T_batch_matmul_NN[(((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(72) // T.int64(18), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(18) // T.int64(6), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(6)])
                T.writes(T_reshape_5[v_ax0, v_ax1, v_ax2, v_ax3])
                T_reshape_5[v_ax0, v_ax1, v_ax2, v_ax3] = T_batch_matmul_NN[(((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(72) // T.int64(18), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(18) // T.int64(6), (((v_ax0 * T.int64(2) + v_ax1) * T.int64(3) + v_ax2) * T.int64(6) + v_ax3) % T.int64(6)]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(2), T.int64(3), T.int64(2), T.int64(6)):
            with T.sblock("T_transpose_3"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(T_reshape_5[v_ax0, v_ax2, v_ax1, v_ax3])
                T.writes(T_transpose[v_ax0, v_ax1, v_ax2, v_ax3])
                T_transpose[v_ax0, v_ax1, v_ax2, v_ax3] = T_reshape_5[v_ax0, v_ax2, v_ax1, v_ax3]

    @R.function
    def main(q: R.Tensor((2, 3, 2, 4), dtype="float32"), k: R.Tensor((2, 5, 2, 4), dtype="float32"), v: R.Tensor((2, 5, 2, 6), dtype="float32"), b: R.Tensor((2, 1, 3, 5), dtype="float32")) -> R.Tuple(R.Tensor((2, 3, 2, 6), dtype="float32"), R.Tensor((2, 3, 2, 6), dtype="float32"), R.Tensor((2, 3, 2, 6), dtype="float32")):
        cls = Module
        a = R.call_tir(cls.attention, (q, k, v), out_ty=R.Tensor((2, 3, 2, 6), dtype="float32"))
        c = R.call_tir(cls.attention_bias, (q, k, v, b), out_ty=R.Tensor((2, 3, 2, 6), dtype="float32"))
        d = R.call_tir(cls.attention1, (q, k, v), out_ty=R.Tensor((2, 3, 2, 6), dtype="float32"))
        return (a, c, d)
"#;

/// `nn.attention` without a mask (softmax stages, divided by `sqrt(head_dim)`),
/// with a broadcast bias, an explicit scale and a `TopLeft` mask
/// (`attention_bias`), and with a `BottomRight` mask where the key length
/// differs from the query length.
///
/// TVM's output as printed, except the index expressions of the fourteen
/// `T_reshape` stages: TVM prints them simplified by its canonical
/// simplifier (`((v_ax2 // 4 + v_ax1) // 3 + v_ax0) % 4 // 2`); here they are
/// the unsimplified `unravel(ravel(i))` that `R.reshape`'s legalization builds
/// (the same values; the e2e program `attention_ops` checks the results).
#[test]
fn attention_matches_tvm() {
    assert_matches_tvm(ATTENTION_IN, ATTENTION_TVM);
}

/// TVM accepts grouped heads (a query head count that is a multiple of the
/// key's) and rejects other head counts and bad biases, with its messages;
/// the legalization declines grouped heads.
#[test]
fn attention_grouped_heads_and_bias_checks() {
    let src = |k_heads: i64, bias: &str| {
        format!(
            r#"
@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((1, 3, 4, 2), dtype="float32"), k: R.Tensor((1, 5, {k_heads}, 2), dtype="float32"), v: R.Tensor((1, 5, {k_heads}, 7), dtype="float32"), b: R.Tensor({bias}, dtype="float32")):
        a = R.nn.attention(q, k, v, b)
        return a
"#
        )
    };
    let ok = check(&src(2, "(1, 1, 1, 5)"));
    assert!(ok.is_valid(), "{:?}", ok.diagnostics);
    assert_eq!(sinfo_of(&ok, "a"), r#"R.Tensor((1, 3, 4, 7), dtype="float32")"#);
    let (_, skipped) = crate::legalize::legalize_module_report(&ok.module);
    let msgs: Vec<String> = skipped.iter().map(|d| d.message.clone()).collect();
    assert!(msgs.iter().any(|m| m.contains("grouped-query attention")), "{msgs:?}");
    for (k_heads, bias, msg) in [
        (3, "(1, 1, 1, 5)", "The query number of heads should be a multiple of key number of heads. However, the number of heads of query is T.int64(4) while the number of heads of key is T.int64(3)"),
        (4, "(2, 1, 1, 5)", "The query batch size and the bias batch size should be the same or broadcastable. However, the batch size of query is T.int64(1) while the batch size of bias is T.int64(2)"),
        (4, "(1, 1, 1, 4)", "The key sequence length and the bias sequence length should be the same. However, the sequence length of key is T.int64(5) while the sequence length of bias is T.int64(4)"),
        (4, "(1, 3, 5)", "The bias should have 4 dimensions.However, the bias input has 3 dimensions."),
    ] {
        let bad = check(&src(k_heads, bias));
        let got = format!("{:?}", bad.diagnostics);
        assert!(!bad.is_valid() && got.contains(msg), "{bias}: {got}");
    }
}
