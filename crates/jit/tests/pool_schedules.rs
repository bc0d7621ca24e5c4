//! Pooling schedules chosen from the TIR pattern: window reductions (max / average
//! pooling) with several outputs per thread, and plane reductions (global average
//! pooling, `mean` over `H x W`) with a subgroup's lanes per output. Legalized
//! operators and hand-written PrimFuncs of the same shape, on the GPU against the
//! host, with subgroups on and off.

mod common;

use common::*;
use relax_ir::tir::{BinOp, Buffer, PrimExpr};
use relax_ir::{DataType, PrimFunc};
use relax_jit::{Jit, ScheduleOptions};

const F32: DataType = DataType::FLOAT32;

/// Options of a lavapipe-like adapter (subgroups of 8 when `subgroups`), with
/// workgroups not limited by a worker count.
fn options(subgroups: bool) -> ScheduleOptions {
    ScheduleOptions {
        subgroups,
        subgroup_min_size: if subgroups { 8 } else { 0 },
        parallel_groups: 1,
        ..ScheduleOptions::default()
    }
}

fn jit(subgroups: bool) -> Option<Jit> {
    let rt = shared_runtime_for(subgroups)?;
    let mut opts = options(subgroups);
    if subgroups {
        opts.subgroup_min_size = rt.subgroup_sizes().0;
    }
    Some(jit_with(rt, opts))
}

/// Which stages of `f` get a pooling schedule under `opts`.
fn pooled_stages(f: &PrimFunc, opts: &ScheduleOptions) -> Vec<bool> {
    let lowered = relax_jit::internals::lower(f).expect("lowers");
    lowered
        .stages
        .iter()
        .map(|st| {
            st.reduction
                .as_ref()
                .is_some_and(|r| relax_jit::internals::pool_kernel(r, "k", opts).is_some())
        })
        .collect()
}

/// Host and GPU results of `f` on pseudo-random inputs of `ins`, output `out`.
fn compare(f: &PrimFunc, ins: &[Vec<i64>], out: &[i64], gpu: &Jit, what: &str) {
    let inputs = random_f32_inputs(ins, |i| 77 + i as u64, -2.0, 2.0);
    let run = |g: Option<&Jit>| run_output(g, f, &inputs, F32, out);
    assert_close(&run(Some(gpu)), &run(None), 1e-5, 1e-5, what);
}

/// (input shape, the operator applied to `x`, the stages a pooling schedule takes
/// with subgroups, and without; stages past those listed take none).
type Case = ([i64; 4], &'static str, &'static [bool], &'static [bool]);

const CASES: [Case; 5] = [
    // 3x3 stride 2 without padding; 18 output columns (a tail of 2 past 16).
    (
        [1, 24, 37, 37],
        "R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[0, 0, 0, 0])",
        &[true],
        &[true],
    ),
    // With padding (the window reads a padded copy or guards).
    (
        [2, 16, 29, 29],
        "R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])",
        &[false, true],
        &[false, true],
    ),
    // Average pooling without the padding in the count: a sum, then a division.
    (
        [1, 16, 30, 30],
        "R.nn.avg_pool2d(x, pool_size=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1], count_include_pad=False)",
        &[false, true, false],
        &[false, true, false],
    ),
    // Global average pooling over 7 x 7 and a mean over 13 x 13 (the output
    // count not a multiple of a workgroup's 32 outputs).
    (
        [1, 1400, 7, 7],
        "R.nn.adaptive_avg_pool2d(x, output_size=[1, 1])",
        &[true, false],
        &[false, false],
    ),
    (
        [2, 401, 13, 13],
        "R.mean(x, axis=[2, 3], keepdims=True)",
        &[true, false],
        &[false, false],
    ),
];

/// `listed` padded with `false` (or cut) to `len` stages.
fn padded(listed: &[bool], len: usize) -> Vec<bool> {
    listed
        .iter()
        .copied()
        .chain(std::iter::repeat(false))
        .take(len)
        .collect()
}

#[test]
fn legalized_poolings_take_pool_schedules_and_match_the_host() {
    let gpus: Vec<(bool, Jit)> = [true, false]
        .into_iter()
        .filter_map(|sg| jit(sg).map(|j| (sg, j)))
        .collect();
    for (ins, op, with_sg, without_sg) in CASES {
        let params = format!(
            "x: R.Tensor(({}, {}, {}, {}), \"float32\")",
            ins[0], ins[1], ins[2], ins[3]
        );
        let fs = legalized(&params, &format!("y = {op}"));
        assert_eq!(fs.len(), 1, "{op}");
        let f = &fs[0];
        let (a, b) = (pooled_stages(f, &options(true)), pooled_stages(f, &options(false)));
        assert_eq!(a, padded(with_sg, a.len()), "{op}: pooled stages with subgroups");
        assert_eq!(b, padded(without_sg, b.len()), "{op}: pooled stages without subgroups");
        let (_, out) = buffer_params(f).pop().expect("an output buffer");
        for (sg, g) in &gpus {
            compare(f, &[ins.to_vec()], &out, g, &format!("{op} (subgroups {sg})"));
        }
    }
}

/// `out[n, c] = sum(x[n, c, h, w])` over `h, w` written by hand (a 2-D output,
/// no keepdims): the plane pattern is recognised from the TIR, not from its origin.
fn hand_gap(n: i64, c: i64, hw: i64) -> PrimFunc {
    let x = Buffer::new("X", F32, shape(&[n, c, hw, hw]));
    let out = Buffer::new("S", F32, shape(&[n, c]));
    let body = grid_block("gap", &shape(&[n, c, hw, hw]), "SSRR", |v| {
        let oi = [v[0].clone(), v[1].clone()];
        let init = store(&out, &oi, PrimExpr::float_of(0.0, F32));
        let upd = store(&out, &oi, load(&out, &oi) + load(&x, v));
        (Some(init), upd)
    });
    prim_func(&[x, out], &[], vec![], body)
}

/// `out[c, i, j] = max(x[c, 2i + a, 2j + b])` over a 2 x 2 window, by hand.
fn hand_max_pool(c: i64, hw: i64) -> PrimFunc {
    let o = hw / 2;
    let x = Buffer::new("X", F32, shape(&[c, hw, hw]));
    let out = Buffer::new("P", F32, shape(&[c, o, o]));
    let body = grid_block("pool", &shape(&[c, o, o, 2, 2]), "SSSRR", |v| {
        let oi = [v[0].clone(), v[1].clone(), v[2].clone()];
        let init = store(&out, &oi, PrimExpr::float_of(-3.0e38, F32));
        let xi = [
            v[0].clone(),
            v[1].clone() * i64c(2) + v[3].clone(),
            v[2].clone() * i64c(2) + v[4].clone(),
        ];
        let upd = store(&out, &oi, bin(BinOp::Max, load(&out, &oi), load(&x, &xi)));
        (Some(init), upd)
    });
    prim_func(&[x, out], &[], vec![], body)
}

#[test]
fn hand_written_poolings_take_pool_schedules_and_match_the_host() {
    let gap = hand_gap(4, 501, 6);
    assert_eq!(pooled_stages(&gap, &options(true)), vec![true]);
    assert_eq!(pooled_stages(&gap, &options(false)), vec![false]);
    // Too little work in all (ShuffleNet's last pooling): the generic schedule.
    assert_eq!(pooled_stages(&hand_gap(1, 544, 7), &options(true)), vec![false]);
    let mp = hand_max_pool(40, 38);
    assert_eq!(pooled_stages(&mp, &options(true)), vec![true]);
    for sg in [true, false] {
        let Some(g) = jit(sg) else { continue };
        compare(&gap, &[vec![4, 501, 6, 6]], &[4, 501], &g, "hand-written global sum");
        compare(&mp, &[vec![40, 38, 38]], &[40, 19, 19], &g, "hand-written 2x2 max pool");
    }
}

/// The subgroup kernels' WGSL validates without a device (shuffles under the
/// subgroup capability).
#[test]
fn pool_wgsl_validates_without_a_device() {
    for f in [hand_gap(4, 501, 6), hand_max_pool(40, 38)] {
        let src = relax_jit::emit_program(&f, &relax_jit::DeviceCaps::ALL, &options(true)).expect("emits");
        for k in &src.kernels {
            relax_jit::internals::validate(&k.wgsl, &relax_jit::DeviceCaps::ALL).expect("valid WGSL");
        }
    }
    let src =
        relax_jit::emit_program(&hand_gap(4, 501, 6), &relax_jit::DeviceCaps::ALL, &options(true)).expect("emits");
    assert!(src.kernels[0].wgsl.contains("subgroupShuffleXor("));
}

/// A grouped 1x1 convolution (4 groups, 14 x 14 outputs: a tail of 2 past 12) and
/// a depthwise 3x3 one with padding (29 x 29), each fused with its epilogue, as
/// TIR fusion writes them.
const FUSED_CONVS: &str = r#"
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def gconv(x: T.Buffer((T.int64(1), T.int64(24), T.int64(14), T.int64(14)), "float32"), w: T.Buffer((T.int64(24), T.int64(6), T.int64(1), T.int64(1)), "float32"), m: T.Buffer((T.int64(24),), "float32"), gv: T.Buffer((T.int64(1), T.int64(24), T.int64(14), T.int64(14)), "float32")):
        T.func_attr({"tirx.noalias": True})
        with T.sblock("root"):
            T.reads()
            T.writes()
            for nn in T.parallel(T.int64(1)):
                for ff in T.parallel(T.int64(24)):
                    for yy in T.parallel(T.int64(14)):
                        for xx in T.parallel(T.int64(14)):
                            acc: T.float32 = T.float32(0.0)
                            for rc, ry, rx in T.grid(T.int64(6), T.int64(1), T.int64(1)):
                                acc = acc + x[nn, ff // T.int64(6) * T.int64(6) + rc, yy + ry, xx + rx] * w[ff, rc, ry, rx]
                            gv[nn, ff, yy, xx] = T.max(acc - m[ff], T.float32(0.0))

    @T.prim_func(private=True, s_tir=True)
    def dwconv(x: T.Buffer((T.int64(1), T.int64(16), T.int64(29), T.int64(29)), "float32"), w: T.Buffer((T.int64(16), T.int64(1), T.int64(3), T.int64(3)), "float32"), m: T.Buffer((T.int64(16),), "float32"), gv: T.Buffer((T.int64(1), T.int64(16), T.int64(29), T.int64(29)), "float32")):
        T.func_attr({"tirx.noalias": True})
        with T.sblock("root"):
            T.reads()
            T.writes()
            for nn in T.parallel(T.int64(1)):
                for ff in T.parallel(T.int64(16)):
                    for yy in T.parallel(T.int64(29)):
                        for xx in T.parallel(T.int64(29)):
                            acc: T.float32 = T.float32(0.0)
                            for ry, rx in T.grid(T.int64(3), T.int64(3)):
                                acc = acc + T.if_then_else(T.int64(1) <= yy + ry and yy + ry < T.int64(30) and T.int64(1) <= xx + rx and xx + rx < T.int64(30), x[nn, ff, yy + ry - T.int64(1), xx + rx - T.int64(1)], T.float32(0.0)) * w[ff, 0, ry, rx]
                            gv[nn, ff, yy, xx] = acc * m[ff]
"#;

#[test]
fn fused_grouped_and_depthwise_convs_take_the_window_schedule_and_match_the_host() {
    let module = relax_ir::text::parse(FUSED_CONVS).expect("parses").into_module();
    let mut funcs: Vec<(String, PrimFunc)> = module
        .functions
        .iter()
        .filter_map(|(name, f)| match f {
            relax_ir::BaseFunc::Prim(p) => Some((name.0.to_string(), p.clone())),
            _ => None,
        })
        .collect();
    funcs.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(funcs.len(), 2);
    let gpus: Vec<Jit> = [true, false].into_iter().filter_map(jit).collect();
    for (name, f) in &funcs {
        let lowered = relax_jit::internals::lower(f).expect("lowers");
        let [st] = lowered.stages.as_slice() else {
            panic!("{name}: one stage")
        };
        let (r, epi) = relax_jit::internals::detect_fused_reduction(&st.body).expect("a fused reduction");
        assert!(
            relax_jit::internals::fused_window_kernel(&r, &epi, "k", &options(false)).is_some(),
            "{name}: window schedule"
        );
        let (x, w, out) = if name.contains("gconv") {
            (vec![1, 24, 14, 14], vec![24, 6, 1, 1], vec![1, 24, 14, 14])
        } else {
            (vec![1, 16, 29, 29], vec![16, 1, 3, 3], vec![1, 16, 29, 29])
        };
        let c = out[1];
        for g in &gpus {
            compare(f, &[x.clone(), w.clone(), vec![c]], &out, g, name);
        }
    }
}
