//! Unit tests and structural comparisons with TVM's `LegalizeOps` outputs
//! (the whole corpus is compared by `tests/legalize_corpus.rs`).

use relax_ir::structural::StructuralEqual;
use relax_ir::text::parse;
use relax_ir::{BaseFunc, IRModule};

use super::legalize_module;
use relax_checker::normalize::normalize_module;

fn load(text: &str) -> Option<IRModule> {
    Some(normalize_module(&parse(text).ok()?.into_module()).module)
}

fn legalize_text(text: &str) -> IRModule {
    let m = load(text).expect("test input parses");
    legalize_module(&m).expect("legalize")
}

/// The module printed as TVMScript.
pub(crate) fn text(m: &IRModule) -> String {
    relax_ir::text::print_program(&relax_ir::text::Program::Module(m.clone()))
}

/// Panic unless the printed module `t` contains `fragment`.
pub(crate) fn has(t: &str, fragment: &str) {
    assert!(t.contains(fragment), "missing {fragment:?} in\n{t}");
}

/// The parameter names and the buffer-map size of the PrimFunc `name` of `m`.
fn params_of<'a>(m: &'a IRModule, name: &str) -> (Vec<&'a str>, usize) {
    let f = m.prim_func(name).unwrap_or_else(|| panic!("{name} legalized"));
    (f.params.iter().map(|p| p.name()).collect(), f.buffer_map.len())
}

/// Panic with our printed module unless `ours` equals `theirs` up to free variables.
fn assert_same_as_tvm(ours: &IRModule, theirs: &IRModule) {
    if let Err(m) = StructuralEqual::new().map_free_vars(true).module(ours, theirs) {
        panic!("differs from TVM: {m:?}\n{}", text(ours));
    }
}

const ADD: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        gv: R.Tensor((2, 3), dtype="float32") = R.add(x, y)
        gv1: R.Tensor((2, 3), dtype="float32") = R.add(gv, y)
        gv2: R.Tensor((2, 3), dtype="float32") = R.exp(gv1)
        return gv2
"#;

#[test]
fn dedup_and_naming() {
    let m = legalize_text(ADD);
    let prims: Vec<&str> = m
        .functions
        .iter()
        .filter(|(_, f)| matches!(f, BaseFunc::Prim(_)))
        .map(|(g, _)| g.name())
        .collect();
    // both adds share one PrimFunc
    assert_eq!(prims, vec!["add", "tir_exp"]);
    let t = text(&m);
    has(&t, "R.call_tir(cls.add, (gv, y)");
    has(&t, "T_add[v_ax0, v_ax1] = x[v_ax0, v_ax1] + y[v_ax0, v_ax1]");
}

#[test]
fn unknown_shape_left_unchanged() {
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=-1)) -> R.Tensor(dtype="float32", ndim=-1):
        gv = R.exp(x)
        return gv
"#;
    let m = legalize_text(src);
    assert_eq!(m.functions.len(), 1);
}

// ---------------------------------------------------------------------------
// Manipulation, creation and indexing operators against TVM 0.27's
// `LegalizeOps` output for the same modules (generated with the TVM wheel).
// ---------------------------------------------------------------------------

/// Legalize `input` and compare it structurally with TVM's legalized module.
pub(crate) fn assert_matches_tvm(input: &str, tvm: &str) {
    let ours = normalize_module(&legalize_text(input)).module;
    let theirs = match parse(tvm) {
        Ok(p) => normalize_module(&p.into_module()).module,
        Err(e) => panic!("TVM's output does not parse: {e:?}"),
    };
    assert_same_as_tvm(&ours, &theirs);
}

const BITWISE_IN: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(i: R.Tensor((4, 5), dtype="int32"), j: R.Tensor((5,), dtype="int32"), b: R.Tensor((4, 5), dtype="bool"), c: R.Tensor((5,), dtype="bool")) -> R.Tuple(R.Tensor((4, 5), dtype="bool"), R.Tensor((4, 5), dtype="int32"), R.Tensor((4, 5), dtype="int32"), R.Tensor((4, 5), dtype="bool")):
        a1: R.Tensor((4, 5), dtype="bool") = R.logical_not(b)
        a2: R.Tensor((4, 5), dtype="int32") = R.bitwise_not(i)
        a3: R.Tensor((4, 5), dtype="int32") = R.left_shift(i, j)
        a4: R.Tensor((4, 5), dtype="bool") = R.logical_xor(b, c)
        return (a1, a2, a3, a4)
"#;

/// TVM 0.27's output, as it prints it (`<<`, `^` and `~` for the intrinsics).
const BITWISE_TVM: &str = r#"
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def left_shift(i: T.Buffer((T.int64(4), T.int64(5)), "int32"), j: T.Buffer((T.int64(5),), "int32"), T_left_shift: T.Buffer((T.int64(4), T.int64(5)), "int32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(T.int64(4), T.int64(5)):
            with T.sblock("T_left_shift"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(i[v_ax0, v_ax1], j[v_ax1])
                T.writes(T_left_shift[v_ax0, v_ax1])
                T_left_shift[v_ax0, v_ax1] = i[v_ax0, v_ax1] << j[v_ax1]

    @T.prim_func(private=True, s_tir=True)
    def logical_xor(b: T.Buffer((T.int64(4), T.int64(5)), "bool"), c: T.Buffer((T.int64(5),), "bool"), T_logical_xor: T.Buffer((T.int64(4), T.int64(5)), "bool")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(T.int64(4), T.int64(5)):
            with T.sblock("T_logical_xor"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(b[v_ax0, v_ax1], c[v_ax1])
                T.writes(T_logical_xor[v_ax0, v_ax1])
                T_logical_xor[v_ax0, v_ax1] = b[v_ax0, v_ax1] ^ c[v_ax1]

    @T.prim_func(private=True, s_tir=True)
    def tir_bitwise_not(i: T.Buffer((T.int64(4), T.int64(5)), "int32"), T_bitwise_not: T.Buffer((T.int64(4), T.int64(5)), "int32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(T.int64(4), T.int64(5)):
            with T.sblock("T_bitwise_not"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(i[v_ax0, v_ax1])
                T.writes(T_bitwise_not[v_ax0, v_ax1])
                T_bitwise_not[v_ax0, v_ax1] = ~i[v_ax0, v_ax1]

    @T.prim_func(private=True, s_tir=True)
    def tir_logical_not(b: T.Buffer((T.int64(4), T.int64(5)), "bool"), T_logical_not: T.Buffer((T.int64(4), T.int64(5)), "bool")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(T.int64(4), T.int64(5)):
            with T.sblock("T_logical_not"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(b[v_ax0, v_ax1])
                T.writes(T_logical_not[v_ax0, v_ax1])
                T_logical_not[v_ax0, v_ax1] = not b[v_ax0, v_ax1]

    @R.function
    def main(i: R.Tensor((4, 5), dtype="int32"), j: R.Tensor((5,), dtype="int32"), b: R.Tensor((4, 5), dtype="bool"), c: R.Tensor((5,), dtype="bool")) -> R.Tuple(R.Tensor((4, 5), dtype="bool"), R.Tensor((4, 5), dtype="int32"), R.Tensor((4, 5), dtype="int32"), R.Tensor((4, 5), dtype="bool")):
        cls = Module
        a1 = R.call_tir(cls.tir_logical_not, (b,), out_ty=R.Tensor((4, 5), dtype="bool"))
        a2 = R.call_tir(cls.tir_bitwise_not, (i,), out_ty=R.Tensor((4, 5), dtype="int32"))
        a3 = R.call_tir(cls.left_shift, (i, j), out_ty=R.Tensor((4, 5), dtype="int32"))
        a4 = R.call_tir(cls.logical_xor, (b, c), out_ty=R.Tensor((4, 5), dtype="bool"))
        return (a1, a2, a3, a4)
"#;

const TAKE_MODES_IN: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 5), dtype="float32"), idx: R.Tensor((2, 3), dtype="int64")) -> R.Tuple(R.Tensor((4, 2, 3), dtype="float32"), R.Tensor((2, 3, 5), dtype="float32")):
        a: R.Tensor((4, 2, 3), dtype="float32") = R.take(x, idx, axis=1, mode="clip")
        b: R.Tensor((2, 3, 5), dtype="float32") = R.take(x, idx, axis=0, mode="wrap")
        return (a, b)
"#;

const TAKE_MODES_TVM: &str = r#"
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def take(x: T.Buffer((T.int64(4), T.int64(5)), "float32"), idx: T.Buffer((T.int64(2), T.int64(3)), "int64"), T_take: T.Buffer((T.int64(4), T.int64(2), T.int64(3)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1, ax2 in T.grid(T.int64(4), T.int64(2), T.int64(3)):
            with T.sblock("T_take"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(x[v_ax0, T.min(T.max(T.int64(0), idx[v_ax1, v_ax2]), T.int64(4))], idx[v_ax1, v_ax2])
                T.writes(T_take[v_ax0, v_ax1, v_ax2])
                T_take[v_ax0, v_ax1, v_ax2] = x[v_ax0, T.min(T.max(T.int64(0), idx[v_ax1, v_ax2]), T.int64(4))]

    @T.prim_func(private=True, s_tir=True)
    def take1(x: T.Buffer((T.int64(4), T.int64(5)), "float32"), idx: T.Buffer((T.int64(2), T.int64(3)), "int64"), T_take: T.Buffer((T.int64(2), T.int64(3), T.int64(5)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1, ax2 in T.grid(T.int64(2), T.int64(3), T.int64(5)):
            with T.sblock("T_take"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(x[T.truncmod(T.truncmod(idx[v_ax0, v_ax1], T.int64(4)) + T.int64(4), T.int64(4)), v_ax2], idx[v_ax0, v_ax1])
                T.writes(T_take[v_ax0, v_ax1, v_ax2])
                T_take[v_ax0, v_ax1, v_ax2] = x[T.truncmod(T.truncmod(idx[v_ax0, v_ax1], T.int64(4)) + T.int64(4), T.int64(4)), v_ax2]

    @R.function
    def main(x: R.Tensor((4, 5), dtype="float32"), idx: R.Tensor((2, 3), dtype="int64")) -> R.Tuple(R.Tensor((4, 2, 3), dtype="float32"), R.Tensor((2, 3, 5), dtype="float32")):
        cls = Module
        a = R.call_tir(cls.take, (x, idx), out_ty=R.Tensor((4, 2, 3), dtype="float32"))
        b = R.call_tir(cls.take1, (x, idx), out_ty=R.Tensor((2, 3, 5), dtype="float32"))
        return (a, b)
"#;

const SLICE_PAD_EYE_IN: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 5), dtype="float32")) -> R.Tuple(R.Tensor((2, 2), dtype="float32"), R.Tensor((6, 6), dtype="float32"), R.Tensor((3, 4), dtype="float32"), R.Tensor((4, 5), dtype="float32")):
        a: R.Tensor((2, 2), dtype="float32") = R.strided_slice(x, (0, 1), (3, 4), (0, 0), (-2, -3), assume_inbound=False)
        b: R.Tensor((6, 6), dtype="float32") = R.nn.pad(x, pad_width=[2, 0, 0, 1], pad_value=1.5, pad_mode="constant")
        c: R.Tensor((3, 4), dtype="float32") = R.eye(3, 4, 1, dtype="float32")
        d: R.Tensor((4, 5), dtype="float32") = R.eye_like(x, -1)
        return (a, b, c, d)
"#;

const SLICE_PAD_EYE_TVM: &str = r#"
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def eye(eye: T.Buffer((T.int64(3), T.int64(4)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i, j in T.grid(T.int64(3), T.int64(4)):
            with T.sblock("eye"):
                v_i, v_j = T.axis.remap("SS", [i, j])
                T.reads()
                T.writes(eye[v_i, v_j])
                eye[v_i, v_j] = T.if_then_else(v_i == v_j - T.int64(1), T.float32(1.0), T.float32(0.0))

    @T.prim_func(private=True, s_tir=True)
    def eye_like(eye: T.Buffer((T.int64(4), T.int64(5)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i, j in T.grid(T.int64(4), T.int64(5)):
            with T.sblock("eye"):
                v_i, v_j = T.axis.remap("SS", [i, j])
                T.reads()
                T.writes(eye[v_i, v_j])
                eye[v_i, v_j] = T.if_then_else(v_i == v_j + T.int64(1), T.float32(1.0), T.float32(0.0))

    @T.prim_func(private=True, s_tir=True)
    def pad(x: T.Buffer((T.int64(4), T.int64(5)), "float32"), PadInput: T.Buffer((T.int64(6), T.int64(6)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1 in T.grid(T.int64(6), T.int64(6)):
            with T.sblock("PadInput"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(x[v_i0 - T.int64(2), v_i1])
                T.writes(PadInput[v_i0, v_i1])
                PadInput[v_i0, v_i1] = T.if_then_else(T.int64(2) <= v_i0 and v_i0 < T.int64(6) and T.int64(0) <= v_i1 and v_i1 < T.int64(5), x[v_i0 - T.int64(2), v_i1], T.float32(1.5))

    @T.prim_func(private=True, s_tir=True)
    def strided_slice(x: T.Buffer((T.int64(4), T.int64(5)), "float32"), T_strided_slice_with_axes: T.Buffer((T.int64(2), T.int64(2)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(T.int64(2), T.int64(2)):
            with T.sblock("T_strided_slice_with_axes"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(x[T.int64(3) - v_ax0 * T.int64(2), T.int64(4) - v_ax1 * T.int64(3)])
                T.writes(T_strided_slice_with_axes[v_ax0, v_ax1])
                T_strided_slice_with_axes[v_ax0, v_ax1] = x[T.int64(3) - v_ax0 * T.int64(2), T.int64(4) - v_ax1 * T.int64(3)]

    @R.function
    def main(x: R.Tensor((4, 5), dtype="float32")) -> R.Tuple(R.Tensor((2, 2), dtype="float32"), R.Tensor((6, 6), dtype="float32"), R.Tensor((3, 4), dtype="float32"), R.Tensor((4, 5), dtype="float32")):
        cls = Module
        a = R.call_tir(cls.strided_slice, (x,), out_ty=R.Tensor((2, 2), dtype="float32"))
        b = R.call_tir(cls.pad, (x,), out_ty=R.Tensor((6, 6), dtype="float32"))
        c = R.call_tir(cls.eye, R.tuple(), out_ty=R.Tensor((3, 4), dtype="float32"))
        d = R.call_tir(cls.eye_like, R.tuple(), out_ty=R.Tensor((4, 5), dtype="float32"))
        return (a, b, c, d)
"#;

const REPEAT_FLAT_CONCAT_IN: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), t: R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 1), dtype="float32"))) -> R.Tuple(R.Tensor((12,), dtype="float32"), R.Tensor((2, 4), dtype="float32"), R.Tensor((3, 2), dtype="float32")):
        a: R.Tensor((12,), dtype="float32") = R.repeat(x, repeats=2)
        b: R.Tensor((2, 4), dtype="float32") = R.concat(t, axis=1)
        c: R.Tensor((3, 2), dtype="float32") = R.reshape(x, R.shape([3, 2]))
        return (a, b, c)
"#;

const REPEAT_FLAT_CONCAT_TVM: &str = r#"
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def concatenate(gv: T.Buffer((T.int64(2), T.int64(3)), "float32"), gv1: T.Buffer((T.int64(2), T.int64(1)), "float32"), T_concat: T.Buffer((T.int64(2), T.int64(4)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(T.int64(2), T.int64(4)):
            with T.sblock("T_concat"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(gv1[v_ax0, v_ax1 - T.int64(3)], gv[v_ax0, v_ax1])
                T.writes(T_concat[v_ax0, v_ax1])
                T_concat[v_ax0, v_ax1] = T.if_then_else(T.int64(3) <= v_ax1, gv1[v_ax0, v_ax1 - T.int64(3)], gv[v_ax0, v_ax1])

    @T.prim_func(private=True, s_tir=True)
    def repeat(x: T.Buffer((T.int64(2), T.int64(3)), "float32"), T_repeat: T.Buffer((T.int64(12),), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        T_reshape = T.sblock_alloc_buffer((T.int64(6),))
        for ax0 in range(T.int64(6)):
            with T.sblock("T_reshape"):
                v_ax0 = T.axis.spatial(T.int64(6), ax0)
                T.reads(x[v_ax0 % T.int64(6) // T.int64(3), v_ax0 % T.int64(3)])
                T.writes(T_reshape[v_ax0])
                T_reshape[v_ax0] = x[v_ax0 % T.int64(6) // T.int64(3), v_ax0 % T.int64(3)]
        for ax0 in range(T.int64(12)):
            with T.sblock("T_repeat"):
                v_ax0 = T.axis.spatial(T.int64(12), ax0)
                T.reads(T_reshape[v_ax0 // T.int64(2)])
                T.writes(T_repeat[v_ax0])
                T_repeat[v_ax0] = T_reshape[v_ax0 // T.int64(2)]

    @T.prim_func(private=True, s_tir=True)
    def reshape(x: T.Buffer((T.int64(2), T.int64(3)), "float32"), T_reshape: T.Buffer((T.int64(3), T.int64(2)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(T.int64(3), T.int64(2)):
            with T.sblock("T_reshape"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(x[(v_ax0 * T.int64(2) + v_ax1) % T.int64(6) // T.int64(3), (v_ax0 * T.int64(2) + v_ax1) % T.int64(3)])
                T.writes(T_reshape[v_ax0, v_ax1])
                T_reshape[v_ax0, v_ax1] = x[(v_ax0 * T.int64(2) + v_ax1) % T.int64(6) // T.int64(3), (v_ax0 * T.int64(2) + v_ax1) % T.int64(3)]

    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), t: R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 1), dtype="float32"))) -> R.Tuple(R.Tensor((12,), dtype="float32"), R.Tensor((2, 4), dtype="float32"), R.Tensor((3, 2), dtype="float32")):
        cls = Module
        a = R.call_tir(cls.repeat, (x,), out_ty=R.Tensor((12,), dtype="float32"))
        gv: R.Tensor((2, 3), dtype="float32") = t[0]
        gv1: R.Tensor((2, 1), dtype="float32") = t[1]
        b = R.call_tir(cls.concatenate, (gv, gv1), out_ty=R.Tensor((2, 4), dtype="float32"))
        c = R.call_tir(cls.reshape, (x,), out_ty=R.Tensor((3, 2), dtype="float32"))
        return (a, b, c)
"#;

#[test]
fn bitwise_and_logical_ops_match_tvm() {
    assert_matches_tvm(BITWISE_IN, BITWISE_TVM);
}

#[test]
fn take_clip_and_wrap_match_tvm() {
    assert_matches_tvm(TAKE_MODES_IN, TAKE_MODES_TVM);
}

#[test]
fn negative_strides_pad_and_eye_match_tvm() {
    assert_matches_tvm(SLICE_PAD_EYE_IN, SLICE_PAD_EYE_TVM);
}

#[test]
fn repeat_concat_of_tuple_var_and_reshape_match_tvm() {
    assert_matches_tvm(REPEAT_FLAT_CONCAT_IN, REPEAT_FLAT_CONCAT_TVM);
}

/// A symbolic extent no buffer dimension defines becomes a scalar parameter
/// between the inputs and the outputs, passed in the argument tuple.
#[test]
fn symbolic_arange_takes_its_bound_as_a_parameter() {
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n // 2",), dtype="int64"):
        n = T.int64()
        gv: R.Tensor((n // 2,), dtype="int64") = R.arange(R.prim_value(1), R.prim_value(n), R.prim_value(2), dtype="int64")
        return gv
"#;
    let m = legalize_text(src);
    assert_eq!(params_of(&m, "arange"), (vec!["n", "T_arange"], 1));
    let t = text(&m);
    has(&t, "T_arange[v_ax0] = v_ax0 * T.int64(2) + T.int64(1)");
    has(&t, "R.call_tir(cls.arange, (n,)");
}

/// A variable of `R.Prim` type used as an operand becomes a scalar parameter
/// between the tensor inputs and the output, and is passed in the argument
/// tuple (TVM: `multiply(x: T.Buffer(...), s: T.float32, T_multiply: ...)`).
#[test]
fn prim_variable_operand_is_a_scalar_parameter() {
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), s: R.Prim("float32"), k: R.Prim("int64")) -> R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2,), dtype="float32")):
        a: R.Tensor((2, 3), dtype="float32") = R.multiply(x, s)
        c: R.Tensor((2,), dtype="float32") = R.take(x, k, axis=1)
        return (a, c)
"#;
    let m = legalize_text(src);
    assert_eq!(params_of(&m, "multiply"), (vec!["x", "s", "T_multiply"], 2));
    assert_eq!(params_of(&m, "take").0, vec!["x", "k", "T_take"]);
    let t = text(&m);
    has(&t, "T_multiply[v_ax0, v_ax1] = x[v_ax0, v_ax1] * s");
    has(&t, "T_take[v_ax0] = x[v_ax0, k]");
    has(&t, "R.call_tir(cls.multiply, (x, s)");
    has(&t, "R.call_tir(cls.take, (x, k)");
}

const STACK_TVM: &str = r#"
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def stack(x: T.Buffer((T.int64(2), T.int64(3)), "float32"), y: T.Buffer((T.int64(2), T.int64(3)), "float32"), z: T.Buffer((T.int64(2), T.int64(3)), "float32"), T_stack: T.Buffer((T.int64(2), T.int64(3), T.int64(3)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1, ax2 in T.grid(T.int64(2), T.int64(3), T.int64(3)):
            with T.sblock("T_stack"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(z[v_ax0, v_ax1], y[v_ax0, v_ax1], x[v_ax0, v_ax1])
                T.writes(T_stack[v_ax0, v_ax1, v_ax2])
                T_stack[v_ax0, v_ax1, v_ax2] = T.if_then_else(v_ax2 == T.int64(2), z[v_ax0, v_ax1], T.if_then_else(v_ax2 == T.int64(1), y[v_ax0, v_ax1], x[v_ax0, v_ax1]))

    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32"), z: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3, 3), dtype="float32"):
        cls = Module
        gv = R.call_tir(cls.stack, (x, y, z), out_ty=R.Tensor((2, 3, 3), dtype="float32"))
        return gv
"#;

/// `R.stack` has no TVMScript spelling in this parser: the call is built from
/// a `concat` with its operator renamed, then normalized and legalized.
#[test]
fn stack_matches_tvm() {
    use relax_ir::relax::SeqExpr;
    use relax_ir::{Binding, Expr, ExprKind};
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32"), z: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3, 3), dtype="float32"):
        gv: R.Tensor((2, 3, 3), dtype="float32") = R.concat((x, y, z), axis=2)
        return gv
"#;
    let mut m = parse(src).expect("parses").into_module();
    for f in m.functions.values_mut() {
        let BaseFunc::Relax(f) = f else { continue };
        let ExprKind::Seq(seq) = f.body.kind() else { continue };
        let mut blocks = seq.blocks.clone();
        for b in blocks.iter_mut().flat_map(|b| b.bindings.iter_mut()) {
            if let Binding::VarBinding { value, .. } = b {
                if let Some(c) = value.as_call() {
                    *value = Expr::call(Expr::op("relax.stack"), c.args.clone(), c.attrs.clone(), Vec::new());
                }
            }
        }
        f.body = Expr::new(ExprKind::Seq(SeqExpr {
            blocks,
            body: seq.body.clone(),
        }));
    }
    let n = normalize_module(&m);
    assert!(n.diagnostics.is_empty(), "{:?}", n.diagnostics);
    let ours = normalize_module(&legalize_module(&n.module).expect("legalize")).module;
    let theirs = load(STACK_TVM).expect("TVM's output parses");
    assert_same_as_tvm(&ours, &theirs);
}

const PAD_EDGE_IN: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4), dtype="float32")) -> R.Tensor((5, 6), dtype="float32"):
        b: R.Tensor((5, 6), dtype="float32") = R.nn.pad(x, pad_width=[1, 1, 2, 0], pad_value=0.0, pad_mode="edge")
        return b
"#;
const PAD_EDGE_TVM: &str = r#"
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def pad(x: T.Buffer((T.int64(3), T.int64(4)), "float32"), PadInput: T.Buffer((T.int64(5), T.int64(6)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1 in T.grid(T.int64(5), T.int64(6)):
            with T.sblock("PadInput"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(x[v_i0 - T.int64(1), v_i1 - T.int64(2)])
                T.writes(PadInput[v_i0, v_i1])
                PadInput[v_i0, v_i1] = T.if_then_else(T.int64(1) <= v_i0 and v_i0 < T.int64(4) and T.int64(2) <= v_i1 and v_i1 < T.int64(6), x[v_i0 - T.int64(1), v_i1 - T.int64(2)], T.float32(0.0))

    @R.function
    def main(x: R.Tensor((3, 4), dtype="float32")) -> R.Tensor((5, 6), dtype="float32"):
        cls = Module
        b = R.call_tir(cls.pad, (x,), out_ty=R.Tensor((5, 6), dtype="float32"))
        return b
"#;

/// Modes other than `reflect` pad with the constant, as TVM lowers them
/// (`reflect` is checked numerically by the `pad_modes` end-to-end program:
/// TVM's read regions of `reflect_pad` come from its bound analysis).
#[test]
fn edge_pad_lowers_like_tvm() {
    assert_matches_tvm(PAD_EDGE_IN, PAD_EDGE_TVM);
}

/// The values of the constant bound to `name` in `main`.
fn bound_constant(m: &IRModule, name: &str) -> Option<(relax_ir::DataType, Vec<i64>, Vec<f64>)> {
    use relax_ir::{Binding, ExprKind};
    let BaseFunc::Relax(f) = m.get("main")? else {
        return None;
    };
    let ExprKind::Seq(seq) = f.body.kind() else { return None };
    for b in seq.blocks.iter().flat_map(|b| b.bindings.iter()) {
        if let Binding::VarBinding { var, value, .. } = b {
            if var.name() == name {
                let ExprKind::Constant { data } = value.kind() else {
                    return None;
                };
                return Some((data.dtype, data.shape.clone(), super::constant::decode(data)?));
            }
        }
    }
    None
}

/// `arange` of constant bounds and `astype` of a constant fold into constants.
#[test]
fn constant_arange_and_astype_fold() {
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main() -> R.Tuple(R.Tensor((5,), dtype="int64"), R.Tensor((4,), dtype="float32"), R.Tensor((3,), dtype="int32"), R.Tensor((), dtype="bool")):
        a: R.Tensor((5,), dtype="int64") = R.arange(R.prim_value(1), R.prim_value(11), R.prim_value(2), dtype="int64")
        b: R.Tensor((4,), dtype="float32") = R.arange(R.prim_value(T.float32(0.0)), R.prim_value(T.float32(2.0)), R.prim_value(T.float32(0.5)), dtype="float32")
        c: R.Tensor((3,), dtype="int32") = R.astype(R.const([1.5, -2.7, 300.0], "float32"), dtype="int32")
        d: R.Tensor((), dtype="bool") = R.astype(R.const(3, "int8"), dtype="bool")
        return (a, b, c, d)
"#;
    let m = legalize_text(src);
    assert!(m.prim_func("arange").is_none() && m.prim_func("cast").is_none());
    let i64_ = relax_ir::DataType::INT64;
    assert_eq!(
        bound_constant(&m, "a"),
        Some((i64_, vec![5], vec![1.0, 3.0, 5.0, 7.0, 9.0]))
    );
    let f32_ = relax_ir::DataType::FLOAT32;
    assert_eq!(bound_constant(&m, "b"), Some((f32_, vec![4], vec![0.0, 0.5, 1.0, 1.5])));
    let i32_ = relax_ir::DataType::INT32;
    assert_eq!(bound_constant(&m, "c"), Some((i32_, vec![3], vec![1.0, -2.0, 300.0])));
    let b = relax_ir::DataType::BOOL;
    assert_eq!(bound_constant(&m, "d"), Some((b, vec![], vec![1.0])));
}

fn out_shape_of(src: &str) -> Result<String, Vec<String>> {
    let n = normalize_module(&parse(src).expect("parses").into_module());
    if !n.diagnostics.is_empty() {
        return Err(n.diagnostics.iter().map(|d| d.message.clone()).collect());
    }
    let legal = legalize_module(&n.module).expect("legalize");
    let line = text(&legal)
        .lines()
        .find(|l| l.contains("T_reshape: T.Buffer"))
        .unwrap_or_default()
        .to_string();
    Ok(line)
}

fn reshape_src(shape: &str) -> String {
    format!(
        r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4), dtype="float32")):
        gv = R.reshape(x, R.shape([{shape}]))
        return gv
"#
    )
}

/// `-1` is inferred from the element count and `0` copies the input's
/// dimension, as `R.reshape` converts them; invalid special values are errors.
#[test]
fn reshape_special_values() {
    let valid = [
        ("3, -1", "T.Buffer((T.int64(3), T.int64(8))"),
        ("0, -1", "T.Buffer((T.int64(2), T.int64(12))"),
        ("-1", "T.Buffer((T.int64(24),)"),
    ];
    for (shape, buffer) in valid {
        let line = out_shape_of(&reshape_src(shape)).expect("valid");
        has(&line, buffer);
    }
    // two -1; -2; 24 is not a multiple of 5
    let invalid = [
        ("-1, -1", "at most one \"-1\""),
        ("-2, 12", "positive except a single"),
        ("5, -1", "convertible from the old shape"),
    ];
    for (shape, reason) in invalid {
        let e = out_shape_of(&reshape_src(shape)).expect_err(shape);
        assert!(e.iter().any(|m| m.contains(reason)), "{shape}: {e:?}");
    }
}

const SELU_IN: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((2, 3), "float32")):
        e = R.nn.selu(a)
        return e
"#;

/// TVM 0.27's `LegalizeOps` output for `R.nn.selu`.
const SELU_TVM: &str = r#"
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def selu(a: T.Buffer((T.int64(2), T.int64(3)), "float32"), T_multiply: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        T_maximum = T.sblock_alloc_buffer((T.int64(2), T.int64(3)))
        compute = T.sblock_alloc_buffer((T.int64(2), T.int64(3)))
        T_subtract = T.sblock_alloc_buffer((T.int64(2), T.int64(3)))
        T_multiply_1 = T.sblock_alloc_buffer((T.int64(2), T.int64(3)))
        T_minimum = T.sblock_alloc_buffer((T.int64(2), T.int64(3)))
        T_add = T.sblock_alloc_buffer((T.int64(2), T.int64(3)))
        for ax0, ax1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("T_maximum"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(a[v_ax0, v_ax1])
                T.writes(T_maximum[v_ax0, v_ax1])
                T_maximum[v_ax0, v_ax1] = T.max(a[v_ax0, v_ax1], T.float32(0.0))
        for i0, i1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("compute"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(a[v_i0, v_i1])
                T.writes(compute[v_i0, v_i1])
                compute[v_i0, v_i1] = T.exp(a[v_i0, v_i1])
        for ax0, ax1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("T_subtract"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(compute[v_ax0, v_ax1])
                T.writes(T_subtract[v_ax0, v_ax1])
                T_subtract[v_ax0, v_ax1] = compute[v_ax0, v_ax1] - T.float32(1.0)
        for ax0, ax1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("T_multiply"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(T_subtract[v_ax0, v_ax1])
                T.writes(T_multiply_1[v_ax0, v_ax1])
                T_multiply_1[v_ax0, v_ax1] = T.float32(1.6732632423543772) * T_subtract[v_ax0, v_ax1]
        for ax0, ax1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("T_minimum"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(T_multiply_1[v_ax0, v_ax1])
                T.writes(T_minimum[v_ax0, v_ax1])
                T_minimum[v_ax0, v_ax1] = T.min(T.float32(0.0), T_multiply_1[v_ax0, v_ax1])
        for ax0, ax1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("T_add"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(T_maximum[v_ax0, v_ax1], T_minimum[v_ax0, v_ax1])
                T.writes(T_add[v_ax0, v_ax1])
                T_add[v_ax0, v_ax1] = T_maximum[v_ax0, v_ax1] + T_minimum[v_ax0, v_ax1]
        for ax0, ax1 in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("T_multiply_1"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(T_add[v_ax0, v_ax1])
                T.writes(T_multiply[v_ax0, v_ax1])
                T_multiply[v_ax0, v_ax1] = T.float32(1.0507009873554805) * T_add[v_ax0, v_ax1]

    @R.function
    def main(a: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        e = R.call_tir(cls.selu, (a,), out_ty=R.Tensor((2, 3), dtype="float32"))
        return e
"#;

#[test]
fn selu_matches_tvm() {
    assert_matches_tvm(SELU_IN, SELU_TVM);
}
