//! Structure of the statistical, search, normalization, convolution and
//! pooling legalizations (the numbers are checked end to end against TVM's
//! outputs by the workspace's e2e programs).

use relax_ir::text::parse;
use relax_ir::tir::{Block, For, IterKind, Stmt};
use relax_ir::{BaseFunc, IRModule, PrimFunc};

use super::legalize_module;
use super::tests::{has, text};
use relax_checker::normalize::normalize_module;

fn legalize(body: &str, params: &str) -> IRModule {
    let src = format!(
        "@I.ir_module\nclass Module:\n    @R.function\n    def main({params}):\n        gv = {body}\n        return gv\n"
    );
    let m = normalize_module(&parse(&src).expect("test input parses").into_module()).module;
    legalize_module(&m).expect("legalize")
}

fn prim<'a>(m: &'a IRModule, name: &str) -> &'a PrimFunc {
    match m.functions.iter().find(|(g, _)| g.name() == name) {
        Some((_, BaseFunc::Prim(f))) => f,
        _ => panic!("no PrimFunc {name} in\n{}", text(m)),
    }
}

/// The block names of PrimFunc `name` of `m`, in stage order.
fn stages(m: &IRModule, name: &str) -> Vec<String> {
    blocks(prim(m, name))
}

/// Visit the blocks of `f` other than `root`, in stage order.
fn each_block(f: &PrimFunc, visit: &mut dyn FnMut(&Block)) {
    fn walk(s: &Stmt, visit: &mut dyn FnMut(&Block)) {
        match s {
            Stmt::BlockRealize { block, .. } => {
                if block.name != "root" {
                    visit(block);
                }
                walk(&block.body, visit);
            }
            Stmt::For(For { body, .. }) | Stmt::Let { body, .. } => walk(body, visit),
            Stmt::Seq(v) => v.iter().for_each(|s| walk(s, visit)),
            _ => {}
        }
    }
    walk(&f.body, visit);
}

/// Block names in stage order.
fn blocks(f: &PrimFunc) -> Vec<String> {
    let mut out = Vec::new();
    each_block(f, &mut |b| out.push(b.name.clone()));
    out
}

const X4: &str = r#"x: R.Tensor((2, 3, 4, 5), dtype="float32")"#;

/// The stages of `variance`: mean, deviations, squares, their mean.
const VARIANCE_STAGES: [&str; 6] = [
    "x_red",
    "T_divide",
    "T_subtract",
    "T_multiply",
    "T_multiply_red",
    "T_divide_1",
];

/// A reduction over `x` (2, 3, 4, 5): the call, its PrimFunc, the PrimFunc's
/// stages where checked, and fragments of the printed module.
struct X4Case {
    call: &'static str,
    func: &'static str,
    stages: Option<Vec<&'static str>>,
    fragments: &'static [&'static str],
}

#[test]
fn reductions_of_x4_stages_and_fragments() {
    let cases = [
        // variance: stages and unique names; the kept-dims mean broadcasts
        // with constant indices
        X4Case {
            call: "R.variance(x, axis=[0, 3], keepdims=True)",
            func: "variance",
            stages: Some(VARIANCE_STAGES.to_vec()),
            fragments: &["T.float32(10.0)", "[T.int64(0), v_ax1, v_ax2, T.int64(0)]"],
        },
        // std of everything is 0-d with `vi`: the stages of variance, then
        // the square root
        X4Case {
            call: "R.std(x)",
            func: "std",
            stages: Some([&VARIANCE_STAGES[..], &["compute"]].concat()),
            fragments: &["vi = T.axis.spatial(T.int64(1), T.int64(0))", "T.sqrt("],
        },
        // argmax: two accumulators
        X4Case {
            call: "R.argmax(x, axis=1)",
            func: "argmax",
            stages: Some(vec!["x_red_temp", "x_red"]),
            fragments: &[
                r#"x_red_temp_v0 = T.sblock_alloc_buffer((T.int64(2), T.int64(4), T.int64(5)), "int64")"#,
                "T.Select(x_red_temp_v1[v_ax0, v_ax1, v_ax2] > x[v_ax0, v_k1, v_ax1, v_ax2] or x_red_temp_v1[v_ax0, v_ax1, v_ax2] == x[v_ax0, v_k1, v_ax1, v_ax2] and x_red_temp_v0[v_ax0, v_ax1, v_ax2] < v_k1",
            ],
        },
        // argmin over all axes flattens the index
        X4Case {
            call: "R.argmin(x)",
            func: "argmin",
            stages: None,
            fragments: &[
                "v_k0 * T.int64(60) + v_k1 * T.int64(20) + v_k2 * T.int64(5) + v_k3",
                "x_red_temp_v0[()] = T.int64(-1)",
            ],
        },
        // cumsum is a linear scan along the axis, the other axes in parallel
        X4Case {
            call: "R.cumsum(x, axis=1, exclusive=True)",
            func: "cumsum",
            stages: Some(vec!["cumsum"]),
            fragments: &[
                "for v_2 in T.parallel(T.int64(5)):",
                "for v_3 in range(T.int64(3)):",
                "cumsum[v, v_3, v_1, v_2] = T.float32(0.0)",
                "cumsum[v, v_3, v_1, v_2] = cumsum[v, v_3 - T.int64(1), v_1, v_2] + x[v, v_3 - T.int64(1), v_1, v_2]",
            ],
        },
    ];
    for case in cases {
        let m = legalize(case.call, X4);
        if let Some(want) = &case.stages {
            assert_eq!(&stages(&m, case.func), want, "{}", case.call);
        }
        let t = text(&m);
        case.fragments.iter().for_each(|f| has(&t, f));
    }
}

#[test]
fn batch_norm_inference_returns_three_outputs() {
    let params = r#"x: R.Tensor((2, 3, 4, 4), dtype="float32"), g: R.Tensor((3,), dtype="float32"), b: R.Tensor((3,), dtype="float32"), mm: R.Tensor((3,), dtype="float32"), mv: R.Tensor((3,), dtype="float32")"#;
    let m = legalize("R.nn.batch_norm(x, g, b, mm, mv, axis=1, training=False)", params);
    let f = prim(&m, "batch_norm");
    assert_eq!(f.buffer_map.len(), 8);
    assert_eq!(
        blocks(f),
        [
            "T_reshape",
            "T_subtract",
            "T_reshape_1",
            "T_add",
            "compute",
            "T_divide",
            "T_reshape_2",
            "T_multiply",
            "T_reshape_3",
            "T_add_1",
            "T_multiply_1",
            "T_multiply_2"
        ]
    );
    let t = text(&m);
    has(&t, "mm[(v_ax1 + v_ax2 + v_ax3) % T.int64(3)]");
}

#[test]
fn layer_norm_float16_accumulates_in_float32() {
    let params = r#"x: R.Tensor((2, 3, 4, 5), dtype="float16"), g: R.Tensor((4, 5), dtype="float16"), b: R.Tensor((4, 5), dtype="float16")"#;
    let m = legalize("R.nn.layer_norm(x, g, b, axes=[-2, -1])", params);
    assert_eq!(
        blocks(prim(&m, "layer_norm")),
        ["x_sum", "x_mean", "x_var_sum", "T_layer_norm"]
    );
    let t = text(&m);
    has(
        &t,
        r#"x_sum[v_ax0, v_ax1] + T.Cast("float32", x[v_ax0, v_ax1, v_k2, v_k3])"#,
    );
}

#[test]
fn group_conv2d_with_stride_dilation_padding() {
    let params = r#"x: R.Tensor((2, 128, 28, 28), dtype="float32"), w: R.Tensor((64, 16, 3, 3), dtype="float32")"#;
    let m = legalize(
        "R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1], dilation=[2, 2], groups=8)",
        params,
    );
    assert_eq!(stages(&m, "conv2d"), ["pad_temp", "group_conv2d_nchw"]);
    let t = text(&m);
    has(&t, "pad_temp[v_nn, v_ff // T.int64(8) * T.int64(16) + v_rc, v_yy * T.int64(2) + v_ry * T.int64(2), v_xx * T.int64(2) + v_rx * T.int64(2)]");
    has(
        &t,
        "T.if_then_else(T.int64(1) <= v_i2 and v_i2 < T.int64(29) and T.int64(1) <= v_i3 and v_i3 < T.int64(29)",
    );
}

#[test]
fn max_pool2d_pads_with_the_lowest_value() {
    let params = r#"x: R.Tensor((1, 2, 6, 6), dtype="float32")"#;
    let m = legalize(
        "R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], ceil_mode=True)",
        params,
    );
    let f = prim(&m, "max_pool2d");
    assert_eq!(blocks(f), ["pad_temp", "pool_max"]);
    // ceil mode pads `stride - 1` more at the end: 6 + 1 + 1 + 1
    assert_eq!(f.buffer_map.len(), 2);
    let t = text(&m);
    has(
        &t,
        "pad_temp = T.sblock_alloc_buffer((T.int64(1), T.int64(2), T.int64(9), T.int64(9)))",
    );
    has(&t, "T.float32(-340282346638528859811704183484516925440.0)");
    has(&t, r#"T.sblock_attr({"schedule_rule": "meta_schedule.pool_max"})"#);
}

#[test]
fn reductions_are_marked_reduce() {
    let m = legalize("R.nn.log_softmax(x, axis=1)", X4);
    let f = prim(&m, "log_softmax");
    assert_eq!(blocks(f), ["T_softmax_maxelem", "compute", "compute_1"]);
    let mut k: Vec<Vec<IterKind>> = Vec::new();
    each_block(f, &mut |b| k.push(b.iter_vars.iter().map(|iv| iv.kind).collect()));
    assert_eq!(k[0].last(), Some(&IterKind::CommReduce));
    assert_eq!(k[1].last(), Some(&IterKind::CommReduce));
    assert!(k[2].iter().all(|x| *x == IterKind::DataPar));
}

#[test]
fn conv2d_transpose_dilates_pads_and_flips() {
    let params = r#"x: R.Tensor((2, 128, 28, 28), dtype="float32"), w: R.Tensor((128, 16, 3, 3), dtype="float32")"#;
    let m = legalize(
        "R.nn.conv2d_transpose(x, w, strides=[2, 3], padding=[1, 1, 1, 1], output_padding=[1, 2], groups=8)",
        params,
    );
    assert_eq!(
        stages(&m, "conv2d_transpose"),
        ["data_dilate", "data_pad", "kernel_transform", "compute"]
    );
    let t = text(&m);
    has(
        &t,
        "v_i2 % T.int64(2) == T.int64(0) and v_i3 % T.int64(3) == T.int64(0)",
    );
    has(
        &t,
        "kernel_transform[v_o, v_i, v_h, v_w] = w[v_i, v_o, T.int64(2) - v_h, T.int64(2) - v_w]",
    );
    // 28 dilated by 2 is 55, padded by 1 before and 2 after
    has(
        &t,
        "data_pad = T.sblock_alloc_buffer((T.int64(2), T.int64(128), T.int64(58), T.int64(86)))",
    );
}

#[test]
fn prelu_broadcasts_a_single_slope() {
    let params = r#"x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((1,), dtype="float32")"#;
    let m = legalize("R.nn.prelu(x, y, axis=1)", params);
    assert_eq!(blocks(prim(&m, "prelu")), ["slope_broadcasted", "compute"]);
    let t = text(&m);
    has(&t, "slope_broadcasted[v_c] = y[T.int64(0)]");
}

#[test]
fn adaptive_avg_pool2d_even_windows_are_fixed_reductions() {
    let m = legalize(
        "R.nn.adaptive_avg_pool2d(x, output_size=[1, 1])",
        r#"x: R.Tensor((2, 4, 7, 7), dtype="float32")"#,
    );
    let t = text(&m);
    has(
        &t,
        "x[v_ax0, v_ax1, v_ax2 * T.int64(7) + v_rv0, v_ax3 * T.int64(7) + v_rv1]",
    );
    has(&t, "/ T.float32(49.0)");
}

#[test]
fn nll_loss_mean_divides_by_used_weights() {
    let params =
        r#"p: R.Tensor((3, 5), dtype="float32"), t: R.Tensor((3,), dtype="int64"), w: R.Tensor((5,), dtype="float32")"#;
    let m = legalize("R.nn.nll_loss(p, t, w, reduction=\"mean\", ignore_index=-1)", params);
    assert_eq!(
        blocks(prim(&m, "nll_loss")),
        ["nll_loss", "nll_loss_red", "nll_loss_1", "nll_loss_red_1", "T_divide"]
    );
}
