//! Fusion on a small MLP: the fused functions have the expected shape, and the
//! fused program computes what the unfused one does, on the host and on the GPU.

use std::path::PathBuf;

use relax_engine::{DeviceChoice, Engine, EngineConfig, Value};
use relax_ir::{BaseFunc, ExprKind, IRModule};
use relax_transform::pattern::{op_pattern, OpPattern};

mod common;
use common::{assert_close, f32s, pipeline, random_tensor, tensor};

fn data(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn module(name: &str) -> IRModule {
    relax_ir::text::parse(&data(name)).expect("parses").into_module()
}

fn mlp_args() -> Vec<Value> {
    vec![
        random_tensor(&[4, 8], 1),
        random_tensor(&[8, 16], 2),
        random_tensor(&[16], 3),
        random_tensor(&[16, 3], 4),
        random_tensor(&[3], 5),
    ]
}

fn run(m: &IRModule, device: DeviceChoice, optimize: bool, args: &[Value]) -> Option<(Vec<f32>, u64)> {
    // Fusion of legalized TIR is under test: keep the host kernel library out.
    let engine = Engine::new(EngineConfig {
        device,
        optimize,
        host_library: false,
        ..EngineConfig::default()
    });
    if device == DeviceChoice::Gpu && engine.gpu_runtime().is_none() {
        eprintln!("no GPU adapter: the GPU comparison is skipped");
        return None;
    }
    let loaded = engine.load(m).expect("loads");
    let out = loaded.run("main", args).expect("runs");
    Some((f32s(&out), loaded.stats().kernels_run))
}

#[test]
fn patterns_of_legalized_operators() {
    let m = pipeline(&["check", "legalize"])
        .run(module("mlp.py"))
        .expect("legalizes");
    let pat = |n: &str| match m.get(n) {
        Some(BaseFunc::Prim(p)) => op_pattern(p),
        _ => panic!("no PrimFunc {n}"),
    };
    assert_eq!(pat("matmul"), OpPattern::OutEWiseFusable);
    assert_eq!(pat("add"), OpPattern::ElemWise);
    assert_eq!(pat("relu"), OpPattern::ElemWise);
    assert_eq!(pat("tir_exp"), OpPattern::ElemWise);
}

#[test]
fn fuse_ops_groups_matmul_with_its_epilogue() {
    let m = pipeline(&["check", "legalize", "fuse-ops"])
        .run(module("mlp.py"))
        .expect("fuses");
    let Some(BaseFunc::Relax(f)) = m.get("fused_matmul_add_relu") else {
        panic!("no fused_matmul_add_relu: {:?}", m.functions.keys().collect::<Vec<_>>())
    };
    assert_eq!(f.attrs.get_int("Primitive"), Some(1));
    assert!(f.private);
    assert_eq!(f.params.len(), 3);
    let ExprKind::Seq(seq) = f.body.kind() else {
        panic!("body")
    };
    assert_eq!(seq.blocks[0].bindings.len(), 3);
    assert!(m.get("fused_matmul1_add1_tir_exp_multiply").is_some());
    // main calls the two groups.
    let Some(BaseFunc::Relax(main)) = m.get("main") else {
        panic!("main")
    };
    let ExprKind::Seq(seq) = main.body.kind() else {
        panic!("body")
    };
    let calls = seq.blocks[0]
        .bindings
        .iter()
        .filter(|b| matches!(b.value().as_call().map(|c| c.op.kind()), Some(ExprKind::GlobalVar(_))))
        .count();
    assert_eq!(calls, 2);
}

#[test]
fn fuse_tir_makes_one_prim_func_per_group() {
    let m = pipeline(&["check", "legalize", "fuse-ops", "fuse-tir", "dead-code-elimination"])
        .run(module("mlp.py"))
        .expect("fuses");
    let names: Vec<&str> = m.functions.keys().map(|g| g.name()).collect();
    assert_eq!(
        names.len(),
        3,
        "main and two fused PrimFuncs are left after dead-code elimination: {names:?}"
    );
    let Some(BaseFunc::Prim(p)) = m.get("fused_matmul_add_relu") else {
        panic!("{names:?}")
    };
    let text = relax_ir::text::print_program(&relax_ir::text::Program::Module(m.clone()));
    // The add and relu are computed inline in one loop nest after the matmul.
    assert!(
        text.contains("T.max(lv0[v_i0, v_i1] + b0[v_i1], T.float32(0.0))"),
        "{text}"
    );
    assert_eq!(op_pattern(p), OpPattern::OutEWiseFusable);
}

#[test]
fn fused_mlp_computes_the_same_on_host_and_gpu() {
    let m = module("mlp.py");
    let args = mlp_args();
    let (reference, unfused_kernels) = run(&m, DeviceChoice::Cpu, false, &args).expect("host");
    let (host, fused_kernels) = run(&m, DeviceChoice::Cpu, true, &args).expect("host");
    assert_close(&host, &reference);
    assert_eq!(unfused_kernels, 7);
    assert_eq!(fused_kernels, 2);
    if let Some((gpu, k)) = run(&m, DeviceChoice::Gpu, true, &args) {
        assert_close(&gpu, &reference);
        assert_eq!(k, 2);
    }
}

#[test]
fn batch_norm_and_residual_sum_fuse_into_the_convolution() {
    let m = module("bn_residual.py");
    let opt = relax_transform::build_pipeline(&relax_transform::PassContext {
        // TIR kernels only (no native host library), allocations not planned.
        host_library: false,
        static_memory_plan: false,
        ..Default::default()
    })
    .verify(true)
    .run(m.clone())
    .expect("default pipeline");
    let prims: Vec<&str> = opt
        .functions
        .iter()
        .filter(|(_, f)| matches!(f, BaseFunc::Prim(_)))
        .map(|(g, _)| g.name())
        .collect();
    assert_eq!(prims.len(), 1, "one fused PrimFunc: {prims:?}");
    assert!(prims[0].starts_with("fused_conv2d"), "{prims:?}");
    // One loop nest: the padding, batch norm, residual add and relu are computed in
    // the convolution's loops, with no intermediate buffer.
    let Some(BaseFunc::Prim(p)) = opt.get(prims[0]) else {
        panic!("PrimFunc")
    };
    let relax_ir::Stmt::BlockRealize { block, .. } = &p.body else {
        panic!("root block")
    };
    assert!(block.alloc_buffers.is_empty(), "{:?}", block.alloc_buffers);
    assert!(matches!(&*block.body, relax_ir::Stmt::For(_)), "one stage");
    let args = bn_residual_args();
    let (reference, unfused) = run(&m, DeviceChoice::Cpu, false, &args).expect("host");
    let (host, fused) = run(&m, DeviceChoice::Cpu, true, &args).expect("host");
    assert_close(&host, &reference);
    assert!(unfused >= 4, "{unfused}");
    assert_eq!(fused, 1);
    if let Some((gpu, k)) = run(&m, DeviceChoice::Gpu, true, &args) {
        assert_close(&gpu, &reference);
        assert_eq!(k, 1);
    }
}

/// The arguments of `bn_residual.py`: data, weights, then the batch norm's gamma,
/// beta, mean and (positive) variance.
fn bn_residual_args() -> Vec<Value> {
    // The variance is positive: (v + 1.5) squared.
    let v = f32s(&random_tensor(&[4], 6))
        .iter()
        .map(|x| (x + 1.5) * (x + 1.5))
        .collect();
    vec![
        random_tensor(&[1, 4, 6, 6], 1),
        random_tensor(&[4, 4, 3, 3], 2),
        random_tensor(&[4], 3),
        random_tensor(&[4], 4),
        random_tensor(&[4], 5),
        tensor(&[4], v),
    ]
}

#[test]
fn bound_batch_norm_statistics_fold_to_constants() {
    use std::collections::HashMap;
    use std::sync::Arc;
    let m = module("bn_residual.py");
    let args = bn_residual_args();
    let (reference, _) = run(&m, DeviceChoice::Cpu, false, &args).expect("host");
    let nd = |v: &Value| {
        let t = v.as_tensor().expect("tensor");
        Arc::new(relax_ir::NDArray {
            dtype: t.dtype(),
            shape: t.shape().to_vec(),
            data: t.to_bytes().expect("bytes"),
        })
    };
    let params: HashMap<String, Arc<relax_ir::NDArray>> = ["g", "b", "m", "v"]
        .iter()
        .zip(&args[2..])
        .map(|(n, v)| (n.to_string(), nd(v)))
        .collect();
    let checked = pipeline(&["check"]).run(m).expect("checks");
    let bound = relax_transform::fold::bind_params(&checked, "main", &params).expect("binds");
    let Some(BaseFunc::Relax(main)) = bound.get("main") else {
        panic!("main")
    };
    assert_eq!(main.params.len(), 2, "x and w remain");
    // The statistics' reshapes, the epsilon add and the square root fold away.
    let folded = pipeline(&["decompose-ops-for-inference", "legalize", "fold-constant"])
        .run(bound.clone())
        .expect("folds");
    let text = relax_ir::text::print_program(&relax_ir::text::Program::Module(folded));
    assert!(!text.contains("tir_sqrt"), "{text}");
    let (host, _) = run(&bound, DeviceChoice::Cpu, true, &args[..2]).expect("host");
    assert_close(&host, &reference);
    assert!(
        relax_transform::fold::bind_params(&checked, "main", &HashMap::from([("nope".to_string(), nd(&args[2]))]))
            .is_err()
    );
    // With the convolution's weights bound too, the batch norm folds into them: the
    // program is a convolution plus a bias, no normalisation arithmetic is left.
    let mut all = params.clone();
    all.insert("w".to_string(), nd(&args[1]));
    let bound = relax_transform::fold::bind_params(&checked, "main", &all).expect("binds");
    let folded = pipeline(&["decompose-ops-for-inference", "dead-code-elimination"])
        .run(bound.clone())
        .expect("folds");
    let text = relax_ir::text::print_program(&relax_ir::text::Program::Module(folded));
    assert!(
        !text.contains("batch_norm") && !text.contains("R.sqrt") && !text.contains("R.divide"),
        "{text}"
    );
    let (host, k) = run(&bound, DeviceChoice::Cpu, true, &args[..1]).expect("host");
    assert_close(&host, &reference);
    assert_eq!(k, 1);
    if let Some((gpu, _)) = run(&bound, DeviceChoice::Gpu, true, &args[..1]) {
        assert_close(&gpu, &reference);
    }
}

/// A chain of 40 additions, each of a new parameter: fusion stops adding producers
/// before a group has more than `MAX_GROUP_INPUTS` inputs (every input is a storage
/// buffer of the fused GPU kernel), and the fused program computes the sum.
#[test]
fn fused_groups_keep_their_inputs_bindable() {
    let n = 40;
    let params: Vec<String> = (0..n).map(|i| format!("x{i}: R.Tensor((8,), \"float32\")")).collect();
    let mut body = vec![
        "        with R.dataflow():".to_string(),
        "            y0 = R.add(x0, x1)".to_string(),
    ];
    for i in 2..n {
        body.push(format!("            y{} = R.add(y{}, x{i})", i - 1, i - 2));
    }
    body.push(format!("            R.output(y{})", n - 2));
    body.push(format!("        return y{}", n - 2));
    let text = format!(
        "@I.ir_module\nclass Module:\n    @R.function\n    def main({}):\n{}\n",
        params.join(", "),
        body.join("\n")
    );
    let m = relax_ir::text::parse(&text).expect("parses").into_module();
    let fused = pipeline(&["check", "legalize", "fuse-ops"])
        .run(m.clone())
        .expect("fuses");
    let groups: Vec<usize> = fused
        .functions
        .values()
        .filter_map(|f| match f {
            BaseFunc::Relax(f) if f.attrs.get_int("Primitive") == Some(1) => Some(f.params.len()),
            _ => None,
        })
        .collect();
    assert!(groups.len() >= 2, "the chain is split: {groups:?}");
    assert!(
        groups.iter().all(|&p| p <= relax_transform::fuse_ops::MAX_GROUP_INPUTS),
        "{groups:?}"
    );
    let args: Vec<Value> = (0..n).map(|i| random_tensor(&[8], 100 + i as u64)).collect();
    let want: Vec<f32> = (0..8)
        .map(|j| args.iter().map(|a| f32s(a)[j]).fold(0.0f32, |s, v| s + v))
        .collect();
    for device in [DeviceChoice::Cpu, DeviceChoice::Gpu] {
        if let Some((got, _)) = run(&m, device, true, &args) {
            assert_close(&got, &want);
        }
    }
}
