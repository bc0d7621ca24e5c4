//! Cross-thread reductions on the GPU against the host, with subgroup operations
//! (`subgroupAdd` / `subgroupMax` / `subgroupMin` within each subgroup, then
//! workgroup memory across subgroups) and with the workgroup-memory tree they fall
//! back to. The operators are legalized from Relax (softmax, sum, mean, max, min,
//! layer norm) with reduction extents that are not multiples of the subgroup size.

mod common;

use common::*;
use relax_ir::{DataType, PrimFunc};
use relax_jit::{HostTensor, Jit, KernelArg, ScheduleOptions};

const F32: DataType = DataType::FLOAT32;

/// A JIT on the shared adapter with subgroup reductions (and matrix-vector products) on or off and
/// `reduce_threads` threads a cross-thread workgroup; `None` when there is no
/// adapter, or subgroups are asked for and the adapter lacks them.
fn jit(subgroups: bool, reduce_threads: u32) -> Option<Jit> {
    let rt = shared_runtime_for(subgroups)?;
    let opts = ScheduleOptions {
        subgroups,
        subgroup_matmul: subgroups,
        reduce_threads,
        ..ScheduleOptions::for_adapter(rt.adapter_info())
    };
    Some(jit_with(rt, opts))
}

/// Runs `f` (its last parameter the output) on the host and on `gpu`; returns
/// (host, gpu) outputs.
fn host_and_gpu(f: &PrimFunc, inputs: &[HostTensor], out: &HostTensor, gpu: &Jit) -> (Vec<f64>, Vec<f64>) {
    let mut results = Vec::new();
    for on_gpu in [false, true] {
        let mut ins: Vec<HostTensor> = inputs.to_vec();
        let mut o = out.clone();
        let mut args: Vec<KernelArg> = ins.iter_mut().map(KernelArg::from).collect();
        args.push(KernelArg::from(&mut o));
        if on_gpu {
            gpu.run_gpu(f, &mut args).expect("gpu run");
        } else {
            Jit::new(None).run_host(f, &mut args).expect("host run");
        }
        results.push(o.to_f64_vec());
    }
    let g = results.pop().unwrap_or_default();
    let h = results.pop().unwrap_or_default();
    (h, g)
}

/// One operator case: Relax parameters, body, input shapes, output shape and the
/// subgroup operations its kernels use.
struct Case {
    params: &'static str,
    body: &'static str,
    inputs: Vec<Vec<i64>>,
    out: Vec<i64>,
    ops: &'static [&'static str],
}

/// A case: the Relax parameters and body, input shapes, output shape and the
/// subgroup operations its kernel must use.
fn case(
    params: &'static str,
    body: &'static str,
    inputs: Vec<Vec<i64>>,
    out: Vec<i64>,
    ops: &'static [&'static str],
) -> Case {
    Case {
        params,
        body,
        inputs,
        out,
        ops,
    }
}

fn cases() -> Vec<Case> {
    vec![
        case(
            r#"x: R.Tensor((3, 1001), "float32")"#,
            "y = R.nn.softmax(x, axis=-1)",
            vec![vec![3, 1001]],
            vec![3, 1001],
            &["subgroupMax", "subgroupAdd"],
        ),
        case(
            r#"x: R.Tensor((5, 777), "float32")"#,
            "y = R.sum(x, axis=[1])",
            vec![vec![5, 777]],
            vec![5],
            &["subgroupAdd"],
        ),
        case(
            r#"x: R.Tensor((2, 3, 301), "float32")"#,
            "y = R.mean(x, axis=[1, 2], keepdims=True)",
            vec![vec![2, 3, 301]],
            vec![2, 1, 1],
            &["subgroupAdd"],
        ),
        case(
            r#"x: R.Tensor((2, 1299), "float32")"#,
            "y = R.min(x, axis=[1])",
            vec![vec![2, 1299]],
            vec![2],
            &["subgroupMin"],
        ),
        case(
            r#"x: R.Tensor((4, 515), "float32"), g: R.Tensor((515,), "float32"), b: R.Tensor((515,), "float32")"#,
            "y = R.nn.layer_norm(x, g, b, axes=[-1])",
            vec![vec![4, 515], vec![515], vec![515]],
            vec![4, 515],
            &["subgroupAdd"],
        ),
        // One output; with 512 threads a workgroup, several subgroups get nothing.
        case(
            r#"x: R.Tensor((1, 300), "float32")"#,
            "y = R.max(x, axis=[1])",
            vec![vec![1, 300]],
            vec![1],
            &["subgroupMax"],
        ),
    ]
}

fn check_all(gpu: &Jit, subgroups: bool) {
    for (n, c) in cases().iter().enumerate() {
        let fs = legalized(c.params, c.body);
        assert_eq!(fs.len(), 1, "{}: one PrimFunc", c.body);
        let f = &fs[0];
        let inputs = random_f32_inputs(&c.inputs, |i| 31 + (n * 7 + i) as u64, -3.0, 3.0);
        let out = HostTensor::zeros(F32, &c.out).expect("out");
        let (h, g) = host_and_gpu(f, &inputs, &out, gpu);
        assert_close(&g, &h, 1e-4, 1e-5, c.body);
        let wgsl: String = gpu
            .wgsl(f)
            .expect("wgsl")
            .kernels
            .iter()
            .map(|k| k.wgsl.clone())
            .collect();
        for op in c.ops {
            assert_eq!(wgsl.contains(op), subgroups, "{}: {op} in the WGSL", c.body);
        }
        assert_eq!(wgsl.contains("@builtin(subgroup_id)"), subgroups, "{}", c.body);
        assert!(wgsl.contains("var<workgroup>"), "{}: workgroup memory", c.body);
    }
}

#[test]
fn subgroup_reductions_match_the_host() {
    for threads in [128, 512] {
        let Some(gpu) = jit(true, threads) else { return };
        check_all(&gpu, true);
    }
}

#[test]
fn workgroup_tree_fallback_matches_the_host() {
    for threads in [128, 512] {
        let Some(gpu) = jit(false, threads) else { return };
        check_all(&gpu, false);
    }
}

/// The adapter's options turn subgroup reductions on exactly when it has them.
#[test]
fn adapter_options_follow_the_subgroup_feature() {
    let Ok(rt) = relax_gpu_runtime::GpuRuntime::shared_default() else {
        return;
    };
    let opts = ScheduleOptions::for_adapter(rt.adapter_info());
    assert_eq!(opts.subgroups, rt.supports_subgroups());
    assert_eq!(rt.adapter_info().subgroups, rt.supports_subgroups());
    // Subgroup matrix-vector products only on hardware (slower on lavapipe).
    assert_eq!(
        opts.subgroup_matmul,
        rt.supports_subgroups() && !rt.adapter_info().is_software()
    );
}

/// Without a device the subgroup WGSL is still emitted and validated by naga
/// (with the subgroup capability), and the fallback has no subgroup operation.
#[test]
fn subgroup_wgsl_validates_without_a_device() {
    let fs = legalized(r#"x: R.Tensor((3, 1001), "float32")"#, "y = R.nn.softmax(x, axis=-1)");
    for subgroups in [true, false] {
        let opts = ScheduleOptions {
            subgroups,
            ..ScheduleOptions::default()
        };
        let src = relax_jit::emit_program(&fs[0], &relax_jit::DeviceCaps::ALL, &opts).expect("emits");
        let all: String = src.kernels.iter().map(|k| k.wgsl.clone()).collect();
        assert_eq!(all.contains("subgroupMax("), subgroups);
        assert_eq!(all.contains("subgroupAdd("), subgroups);
        for k in &src.kernels {
            relax_jit::internals::validate(&k.wgsl, &relax_jit::DeviceCaps::ALL).expect("valid WGSL");
        }
    }
}

/// The PrimFunc `fuse-tir` makes of a batch-1 dense layer with its bias
/// (`R.matmul` then `R.add`, as in a classifier).
const FUSED_DENSE: &str = r#"
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def fused_matmul_add(x: T.Buffer((T.int64(1), T.int64(2048)), "float32"), w: T.Buffer((T.int64(2048), T.int64(1000)), "float32"), b: T.Buffer((T.int64(1000),), "float32"), gv: T.Buffer((T.int64(1), T.int64(1000)), "float32")):
        T.func_attr({"tirx.noalias": True})
        y = T.sblock_alloc_buffer((T.int64(1), T.int64(1000)))
        for i0, i1, k in T.grid(T.int64(1), T.int64(1000), T.int64(2048)):
            with T.sblock("matmul"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
                T.reads(x[v_i0, v_k], w[v_k, v_i1])
                T.writes(y[v_i0, v_i1])
                with T.init():
                    y[v_i0, v_i1] = T.float32(0.0)
                y[v_i0, v_i1] = y[v_i0, v_i1] + x[v_i0, v_k] * w[v_k, v_i1]
        for ax0, ax1 in T.grid(T.int64(1), T.int64(1000)):
            with T.sblock("T_add"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(y[v_ax0, v_ax1], b[v_ax1])
                T.writes(gv[v_ax0, v_ax1])
                gv[v_ax0, v_ax1] = y[v_ax0, v_ax1] + b[v_ax1]
"#;

/// Matrix-vector products (a legalized batch-1 matmul, and the fused dense layer
/// with its bias) split each output's reduction over a workgroup and combine it with
/// `subgroupAdd` when the adapter has subgroups; without them they keep the
/// register-tiled GEMM. Both match the host.
#[test]
fn matrix_vector_products_on_subgroups_match_the_host() {
    let fused = relax_ir::text::parse(FUSED_DENSE).expect("parses").into_module();
    let fused: Vec<PrimFunc> = fused
        .functions
        .values()
        .filter_map(|f| match f {
            relax_ir::BaseFunc::Prim(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    let plain = legalized(
        r#"x: R.Tensor((1, 2048), "float32"), w: R.Tensor((2048, 1000), "float32")"#,
        "y = R.matmul(x, w)",
    );
    let cases = [
        (&plain[0], vec![vec![1, 2048], vec![2048, 1000]]),
        (&fused[0], vec![vec![1, 2048], vec![2048, 1000], vec![1000]]),
    ];
    for subgroups in [true, false] {
        // The schedule chosen, with and without a device.
        for (n, (f, _)) in cases.iter().enumerate() {
            let opts = ScheduleOptions {
                subgroups,
                subgroup_matmul: true,
                ..ScheduleOptions::default()
            };
            let src = relax_jit::emit_program(f, &relax_jit::DeviceCaps::ALL, &opts).expect("emits");
            let all: String = src.kernels.iter().map(|k| k.wgsl.clone()).collect();
            assert_eq!(all.contains("subgroupAdd("), subgroups, "case {n}");
            // Without `subgroup_matmul` (a software adapter) the GEMM keeps it.
            let plain = ScheduleOptions {
                subgroup_matmul: false,
                ..opts
            };
            let src = relax_jit::emit_program(f, &relax_jit::DeviceCaps::ALL, &plain).expect("emits");
            assert!(src.kernels.iter().all(|k| !k.wgsl.contains("subgroupAdd(")), "case {n}");
            for k in &src.kernels {
                relax_jit::internals::validate(&k.wgsl, &relax_jit::DeviceCaps::ALL).expect("valid WGSL");
            }
        }
        let Some(gpu) = jit(subgroups, 256) else { continue };
        for (n, (f, shapes)) in cases.iter().enumerate() {
            let inputs = random_f32_inputs(shapes, |i| 5 + (n * 3 + i) as u64, -1.0, 1.0);
            let out = HostTensor::zeros(F32, &[1, 1000]).expect("out");
            let (h, g) = host_and_gpu(f, &inputs, &out, &gpu);
            assert_close(&g, &h, 1e-4, 1e-4, "matrix-vector product");
        }
    }
}

/// A linear layer over a batch of sequences with its bias and a residual, as
/// `fuse-tir` makes of `R.matmul([B, M, K], [K, N])`, `R.add`, `R.add`: the
/// residual reads the batch and row, which the GEMM has folded into one row index.
const FUSED_BATCHED_LINEAR: &str = r#"
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def fused_matmul_add_add(x: T.Buffer((T.int64(3), T.int64(20), T.int64(64)), "float32"), w: T.Buffer((T.int64(64), T.int64(48)), "float32"), b: T.Buffer((T.int64(48),), "float32"), res: T.Buffer((T.int64(3), T.int64(20), T.int64(48)), "float32"), gv: T.Buffer((T.int64(3), T.int64(20), T.int64(48)), "float32")):
        T.func_attr({"tirx.noalias": True})
        y = T.sblock_alloc_buffer((T.int64(3), T.int64(20), T.int64(48)))
        for i0, i1, i2, k in T.grid(T.int64(3), T.int64(20), T.int64(48), T.int64(64)):
            with T.sblock("matmul"):
                v_i0, v_i1, v_i2, v_k = T.axis.remap("SSSR", [i0, i1, i2, k])
                T.reads(x[v_i0, v_i1, v_k], w[v_k, v_i2])
                T.writes(y[v_i0, v_i1, v_i2])
                with T.init():
                    y[v_i0, v_i1, v_i2] = T.float32(0.0)
                y[v_i0, v_i1, v_i2] = y[v_i0, v_i1, v_i2] + x[v_i0, v_i1, v_k] * w[v_k, v_i2]
        for ax0, ax1, ax2 in T.grid(T.int64(3), T.int64(20), T.int64(48)):
            with T.sblock("T_add"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(y[v_ax0, v_ax1, v_ax2], b[v_ax2], res[v_ax0, v_ax1, v_ax2])
                T.writes(gv[v_ax0, v_ax1, v_ax2])
                gv[v_ax0, v_ax1, v_ax2] = y[v_ax0, v_ax1, v_ax2] + b[v_ax2] + res[v_ax0, v_ax1, v_ax2]
"#;

/// A `[B, M, K] x [K, N]` matmul (a linear layer over a batch of sequences) is one
/// GEMM over `B*M` rows: the row operand is read four elements at a time as in the
/// 2-D product, and the result, with 20-row batches straddling the row tiles,
/// matches the host, fused with a residual that reads the batch and row, and plain.
/// A product whose right operand has the batch too (`[B, M, K] x [B, K, N]`) keeps
/// its batch loop.
#[test]
fn batched_linear_layers_fold_the_batch_into_the_rows() {
    let fused = relax_ir::text::parse(FUSED_BATCHED_LINEAR)
        .expect("parses")
        .into_module();
    let fused: Vec<PrimFunc> = fused
        .functions
        .values()
        .filter_map(|f| match f {
            relax_ir::BaseFunc::Prim(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    let plain = legalized(
        r#"x: R.Tensor((3, 20, 64), "float32"), w: R.Tensor((64, 48), "float32")"#,
        "y = R.matmul(x, w)",
    );
    let batched = legalized(
        r#"x: R.Tensor((3, 20, 64), "float32"), w: R.Tensor((3, 64, 48), "float32")"#,
        "y = R.matmul(x, w)",
    );
    let cases = [
        (&plain[0], vec![vec![3, 20, 64], vec![64, 48]], true),
        (
            &fused[0],
            vec![vec![3, 20, 64], vec![64, 48], vec![48], vec![3, 20, 48]],
            true,
        ),
        (&batched[0], vec![vec![3, 20, 64], vec![3, 64, 48]], false),
    ];
    let opts = ScheduleOptions {
        subgroups: false,
        subgroup_matmul: false,
        ..ScheduleOptions::default()
    };
    for (n, (f, _, folds)) in cases.iter().enumerate() {
        let src = relax_jit::emit_program(f, &relax_jit::DeviceCaps::ALL, &opts).expect("emits");
        let gemm = &src.kernels[0].wgsl;
        assert_eq!(
            gemm.contains("b0_x_v4"),
            *folds,
            "case {n}: row operand read as vec4:\n{gemm}"
        );
        for k in &src.kernels {
            relax_jit::internals::validate(&k.wgsl, &relax_jit::DeviceCaps::ALL).expect("valid WGSL");
        }
    }
    let Some(gpu) = jit(false, 256) else { return };
    for (n, (f, shapes, _)) in cases.iter().enumerate() {
        let inputs = random_f32_inputs(shapes, |i| 11 + (n * 5 + i) as u64, -1.0, 1.0);
        let out = HostTensor::zeros(F32, &[3, 20, 48]).expect("out");
        let (h, g) = host_and_gpu(f, &inputs, &out, &gpu);
        assert_close(&g, &h, 1e-4, 1e-4, "batched linear layer");
        // The host result is the product itself (not two equal wrong answers).
        let x = inputs[0].to_f64_vec();
        let w = inputs[1].to_f64_vec();
        let (bb, i, j) = (2usize, 19usize, 47usize);
        let mut want = 0.0;
        for k in 0..64 {
            let wk = if shapes[1].len() == 3 {
                w[(bb * 64 + k) * 48 + j]
            } else {
                w[k * 48 + j]
            };
            want += x[(bb * 20 + i) * 64 + k] * wk;
        }
        if shapes.len() == 4 {
            want += inputs[2].to_f64_vec()[j] + inputs[3].to_f64_vec()[(bb * 20 + i) * 48 + j];
        }
        assert_close(&g[(bb * 20 + i) * 48 + j..][..1], &[want], 1e-4, 1e-4, "last element");
    }
}

/// A batch of one (`[1, M, K] x [K, N]`, how `from_onnx` writes every linear layer of
/// a batch-1 encoder) folds as well: no batch index stays in the row addresses (with
/// it, the GEMM ran 2-3x slower on lavapipe), and the result matches the host and the
/// product computed here.
#[test]
fn a_batch_of_one_folds_into_the_rows() {
    let f = legalized(
        r#"x: R.Tensor((1, 20, 64), "float32"), w: R.Tensor((64, 48), "float32")"#,
        "y = R.matmul(x, w)",
    );
    let opts = ScheduleOptions {
        subgroups: false,
        subgroup_matmul: false,
        ..ScheduleOptions::default()
    };
    let src = relax_jit::emit_program(&f[0], &relax_jit::DeviceCaps::ALL, &opts).expect("emits");
    let gemm = &src.kernels[0].wgsl;
    assert!(gemm.contains("b0_x_v4"), "row operand read as vec4:\n{gemm}");
    assert!(
        !gemm.contains("1280i"),
        "no batch stride (20 x 64) in the addresses:\n{gemm}"
    );
    let Some(gpu) = jit(false, 256) else { return };
    let inputs = random_f32_inputs(&[vec![1, 20, 64], vec![64, 48]], |i| 91 + i as u64, -1.0, 1.0);
    let out = HostTensor::zeros(F32, &[1, 20, 48]).expect("out");
    let (h, g) = host_and_gpu(&f[0], &inputs, &out, &gpu);
    assert_close(&g, &h, 1e-4, 1e-4, "batch-1 linear layer");
    let (x, w) = (inputs[0].to_f64_vec(), inputs[1].to_f64_vec());
    let want: f64 = (0..64).map(|k| x[19 * 64 + k] * w[k * 48 + 47]).sum();
    assert_close(&g[19 * 48 + 47..][..1], &[want], 1e-4, 1e-4, "last element");
}

/// `NT_matmul` (a weight read untransposed, `w[j, k]`, as `fuse-transpose-matmul`
/// writes a linear layer): the weight's four reduction steps come in one vec4 load
/// per column, with the row operand in vec4 loads too (with a symbolic row count as
/// well); both match the host and a product computed here.
#[test]
fn an_untransposed_weight_is_read_four_steps_at_a_time() {
    for (params, rows) in [
        (
            r#"x: R.Tensor((1, 3, 64), "float32"), w: R.Tensor((40, 64), "float32")"#,
            None,
        ),
        (
            r#"x: R.Tensor((1, "n", 64), "float32"), w: R.Tensor((40, 64), "float32")"#,
            Some(3),
        ),
    ] {
        let src = format!(
            "@I.ir_module\nclass Module:\n    @R.function\n    def main({params}):\n        wt = R.permute_dims(w)\n        y = R.matmul(x, wt)\n        return y\n"
        );
        let module = relax_ir::text::parse(&src).expect("module parses").into_module();
        let normalized = relax_checker::normalize::normalize_module(&module).module;
        let fused = relax_transform::transpose_matmul::fuse_transpose_matmul(&normalized).expect("fuses");
        let legalized = relax_transform::legalize::legalize_module(&fused).expect("legalizes");
        let Some(relax_ir::BaseFunc::Prim(f)) = legalized.get("NT_matmul") else {
            panic!("no NT_matmul")
        };
        let opts = ScheduleOptions {
            subgroups: false,
            subgroup_matmul: false,
            vec4_reduction: true,
            ..ScheduleOptions::default()
        };
        let src = relax_jit::emit_program(f, &relax_jit::DeviceCaps::ALL, &opts).expect("emits");
        let wgsl = &src.kernels[0].wgsl;
        assert!(wgsl.contains("b1_w_v4"), "weight read as vec4:\n{wgsl}");
        // A symbolic count of 64-element rows is a multiple of 4 elements too.
        assert!(wgsl.contains("b0_x_v4"), "rows as vec4 ({rows:?}):\n{wgsl}");
        let Some(gpu) = jit(false, 256) else { return };
        let inputs = random_f32_inputs(&[vec![1, 3, 64], vec![40, 64]], |i| 17 + i as u64, -1.0, 1.0);
        let out = HostTensor::zeros(F32, &[1, 3, 40]).expect("out");
        let (h, g) = host_and_gpu(f, &inputs, &out, &gpu);
        assert_close(&g, &h, 1e-4, 1e-4, "NT_matmul");
        let (x, w) = (inputs[0].to_f64_vec(), inputs[1].to_f64_vec());
        let want: f64 = (0..64).map(|k| x[2 * 64 + k] * w[39 * 64 + k]).sum();
        assert_close(&g[2 * 40 + 39..][..1], &[want], 1e-4, 1e-4, "last element");
    }
}
