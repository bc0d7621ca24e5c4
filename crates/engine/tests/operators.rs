//! Built-in operators: call_tir (through a mock kernel executor), call_tir_inplace,
//! call_dps_packed, closures via make_closure/invoke_closure, to_vdevice with a mock
//! device, memory operators, and concurrent runs of one loaded module.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use ndarray::{arr1, arr2, ArrayD, IxDyn};
use relax_engine::{
    BackendError, CompiledKernel, DeviceBackend, DeviceMemory, Engine, EngineConfig, EngineError, JitError, KernelArg,
    KernelExecutor, Purity, Tensor, Value,
};
use relax_ir::relax::TensorStructInfo;
use relax_ir::tir::PrimExpr;
use relax_ir::{AttrValue, Attrs, BaseFunc, DataType, Expr, IRModule, PrimFunc, StructInfo, Target, VDevice, Var};

/// What the mock executor saw in one call.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Read(DataType, Vec<i64>),
    Write(DataType, Vec<i64>),
    Scalar(i64),
    Device(DataType, Vec<i64>),
}

/// A mock kernel executor: records the arguments of every call and, for the kernels
/// the tests define, writes a result so the data flow can be checked:
/// `add_scaled(A, B, n, C)`: C = A + n * B (f32); `bump(A)`: A += 1 in place;
/// `two_outputs(A, S, P)`: S = A + A, P = A * A.
/// Every kernel call: the kernel's name and what it received.
type CallLog = Arc<Mutex<Vec<(String, Vec<Seen>)>>>;

#[derive(Default)]
struct MockExecutor {
    calls: CallLog,
    compiled: Mutex<Vec<String>>,
}

struct MockKernel {
    name: String,
    nparams: usize,
    calls: CallLog,
}

impl KernelExecutor for MockExecutor {
    fn compile(&self, name: &str, func: &PrimFunc) -> Result<Arc<dyn CompiledKernel>, JitError> {
        self.compiled.lock().unwrap().push(name.to_string());
        if name == "uncompilable" {
            return Err(JitError::Custom("unsupported TIR".into()));
        }
        Ok(Arc::new(MockKernel {
            name: name.to_string(),
            nparams: func.params.len(),
            calls: self.calls.clone(),
        }))
    }
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
fn put_f32s(dst: &mut [u8], v: &[f32]) {
    for (c, x) in dst.chunks_exact_mut(4).zip(v) {
        c.copy_from_slice(&x.to_le_bytes());
    }
}

impl CompiledKernel for MockKernel {
    fn run(&self, args: &mut [KernelArg<'_>]) -> Result<(), JitError> {
        let name = self.name.as_str();
        if args.len() != self.nparams {
            let n = args.len();
            return Err(JitError::Custom(format!(
                "{n} arguments for {} parameters",
                self.nparams
            )));
        }
        let seen: Vec<Seen> = args
            .iter()
            .map(|a| match a {
                KernelArg::Read { dtype, shape, .. } => Seen::Read(*dtype, shape.to_vec()),
                KernelArg::Write { dtype, shape, .. } => Seen::Write(*dtype, shape.to_vec()),
                KernelArg::Device { dtype, shape, .. } => Seen::Device(*dtype, shape.to_vec()),
                KernelArg::Int(i) => Seen::Scalar(*i),
                KernelArg::Float(_) => Seen::Scalar(-999),
            })
            .collect();
        self.calls.lock().unwrap().push((name.to_string(), seen));
        let fail = |m: &str| JitError::Custom(m.to_string());
        let input = |a: &KernelArg<'_>| a.host_bytes().map(f32s).ok_or_else(|| fail("a tensor in host memory"));
        match name {
            "add_scaled" => {
                let [a, b, KernelArg::Int(n), KernelArg::Write { bytes: out, .. }] = args else {
                    return Err(fail("add_scaled: bad arguments"));
                };
                let n = *n as f32;
                let r: Vec<f32> = input(a)?.iter().zip(input(b)?).map(|(x, y)| x + n * y).collect();
                put_f32s(out, &r);
            }
            "bump" => {
                let [KernelArg::Write { bytes, .. }] = args else {
                    return Err(fail("bump: in-place argument not writable"));
                };
                let r: Vec<f32> = f32s(bytes).iter().map(|x| x + 1.0).collect();
                put_f32s(bytes, &r);
            }
            "two_outputs" => {
                let [a, KernelArg::Write { bytes: s, .. }, KernelArg::Write { bytes: p, .. }] = args else {
                    return Err(fail("two_outputs: outputs not writable"));
                };
                let x = input(a)?;
                put_f32s(s, &x.iter().map(|v| v + v).collect::<Vec<_>>());
                put_f32s(p, &x.iter().map(|v| v * v).collect::<Vec<_>>());
            }
            "fails" => return Err(fail("kernel trapped")),
            _ => {}
        }
        Ok(())
    }
}

/// `main(x)` binding `r` to the operator call `name(args)` with StructInfo
/// arguments `sinfo`, and returning `r`.
fn single_op_main(x: &Var, r: &Var, name: &str, args: Vec<Expr>, sinfo: Vec<StructInfo>) -> relax_ir::relax::Function {
    seq_fn(
        vec![x.clone()],
        vec![bind(r, op(name, args, Attrs::new(), sinfo))],
        v(r),
    )
}

fn f32_tensor(dims: Vec<PrimExpr>) -> StructInfo {
    tensor(dims, DataType::FLOAT32)
}

/// main(x: Tensor((n,)), y: Tensor((n,))) -> call_tir(add_scaled, (x, y, k), out (n,)): the
/// scalar `k` travels in the argument tuple (TVM 0.27's form of symbolic arguments).
fn call_tir_module(k: i64) -> IRModule {
    call_tir_module_named("add_scaled", k)
}

fn call_tir_module_named(kernel: &str, k: i64) -> IRModule {
    let n = tvar("n");
    let x = var("x", f32_tensor(vec![pe(&n)]));
    let y = var("y", f32_tensor(vec![pe(&n)]));
    let r = var("r", f32_tensor(vec![pe(&n)]));
    let gv = dvar("gv", f32_tensor(vec![pe(&n)]));
    let call = op(
        "relax.call_tir",
        vec![common::gv(kernel), tuple(vec![v(&x), v(&y), prim(c(k))])],
        Attrs::new(),
        vec![f32_tensor(vec![pe(&n)])],
    );
    let main = func(
        vec![x.clone(), y.clone()],
        seq(vec![dataflow(vec![bind(&gv, call), bind(&r, v(&gv))])], v(&r)),
        Some(f32_tensor(vec![pe(&n)])),
    );
    let m_ = tvar("m");
    let kv = relax_ir::TirVar::new("k", DataType::INT64);
    let mut m = module(vec![("main", main)]);
    let pf = prim_func(
        vec![
            ("A", DataType::FLOAT32, vec![pe(&m_)]),
            ("B", DataType::FLOAT32, vec![pe(&m_)]),
            ("C", DataType::FLOAT32, vec![pe(&m_)]),
        ],
        vec![],
    );
    // Parameter order A, B, k, C.
    let mut pf = pf;
    pf.params.insert(2, kv);
    m.add(kernel, BaseFunc::Prim(pf));
    m
}

#[test]
fn call_tir_allocates_outputs_and_passes_tir_vars() {
    let mock = Arc::new(MockExecutor::default());
    let engine = Engine::default().with_kernel_executor(mock.clone());
    let loaded = engine.load(&call_tir_module(3)).unwrap();
    let x: Value = arr1(&[1.0f32, 2.0, 3.0]).into_dyn().into();
    let y: Value = arr1(&[10.0f32, 20.0, 30.0]).into_dyn().into();
    let out = loaded.run("main", &[x.clone(), y]).unwrap();
    let t = out.as_tensor().unwrap();
    assert!(!t.shares_memory_with(x.as_tensor().unwrap()));
    assert_eq!(t.to_array::<f32>().unwrap(), arr1(&[31.0f32, 62.0, 93.0]).into_dyn());
    let calls = mock.calls.lock().unwrap();
    assert_eq!(
        *calls,
        vec![(
            "add_scaled".to_string(),
            vec![
                Seen::Read(DataType::FLOAT32, vec![3]),
                Seen::Read(DataType::FLOAT32, vec![3]),
                Seen::Scalar(3),
                Seen::Write(DataType::FLOAT32, vec![3]),
            ]
        )]
    );
    let stats = loaded.stats();
    assert_eq!(
        (
            stats.kernels_run,
            stats.allocations,
            stats.bytes_allocated,
            stats.copies
        ),
        (1, 1, 12, 0)
    );
}

#[test]
fn call_tir_with_trailing_tir_vars_shape() {
    // The spec's form `call_tir(f, args, packed_ints)`: the dimensions of a trailing shape
    // follow the tensor arguments. (TVM 0.27's checker only accepts the two-argument form.)
    let m = call_tir_module(0);
    let main = m.relax_function("main").unwrap();
    let mut m2 = m.clone();
    let x = main.params[0].clone();
    let y = main.params[1].clone();
    let n = tvar("n");
    let r = untyped("r");
    let call = op(
        "relax.call_tir",
        vec![gv("add_scaled"), tuple(vec![v(&x), v(&y)]), shape(vec![c(4)])],
        Attrs::new(),
        vec![f32_tensor(vec![pe(&n)])],
    );
    let body = seq1(vec![match_cast(&r, call, StructInfo::Object)], v(&r));
    m2.add("main", BaseFunc::Relax(func(vec![x, y], body, None)));
    let mock = Arc::new(MockExecutor::default());
    let engine = Engine::new(EngineConfig {
        check: false,
        ..EngineConfig::default()
    })
    .with_kernel_executor(mock.clone());
    let out = engine.run(
        &m2,
        "main",
        &[arr1(&[1.0f32]).into_dyn().into(), arr1(&[2.0f32]).into_dyn().into()],
    );
    // `n` is not bound in `main` here: the output shape cannot be evaluated.
    let err = out.unwrap_err();
    assert!(matches!(err, EngineError::UnboundShapeVar(ref v) if v == "n"), "{err}");
    let sized = op(
        "relax.call_tir",
        vec![
            gv("add_scaled"),
            tuple(vec![v(&main.params[0]), v(&main.params[1])]),
            shape(vec![c(4)]),
        ],
        Attrs::new(),
        vec![f32_tensor(vec![c(1)])],
    );
    let r = untyped("r");
    let body = seq1(vec![bind(&r, sized)], v(&r));
    m2.add("main", BaseFunc::Relax(func(main.params.clone(), body, None)));
    let out = engine
        .run(
            &m2,
            "main",
            &[arr1(&[1.0f32]).into_dyn().into(), arr1(&[2.0f32]).into_dyn().into()],
        )
        .unwrap();
    assert_eq!(
        out.as_tensor().unwrap().to_array::<f32>().unwrap(),
        arr1(&[9.0f32]).into_dyn()
    );
    assert_eq!(mock.calls.lock().unwrap()[0].1[2], Seen::Scalar(4));
}

#[test]
fn call_tir_with_the_same_tensor_twice() {
    let mock = Arc::new(MockExecutor::default());
    let loaded = Engine::default()
        .with_kernel_executor(mock)
        .load(&call_tir_module(1))
        .unwrap();
    let x: Value = arr1(&[1.0f32, 2.0]).into_dyn().into();
    let out = loaded.run("main", &[x.clone(), x]).unwrap();
    assert_eq!(
        out.as_tensor().unwrap().to_array::<f32>().unwrap(),
        arr1(&[2.0f32, 4.0]).into_dyn()
    );
}

#[test]
fn call_tir_errors() {
    // A failing kernel: its message and name come back.
    let mock = Arc::new(MockExecutor::default());
    let engine = Engine::default().with_kernel_executor(mock);
    let args: Vec<Value> = vec![arr1(&[1.0f32]).into_dyn().into(), arr1(&[1.0f32]).into_dyn().into()];
    let err = engine
        .run(&call_tir_module_named("fails", 1), "main", &args)
        .unwrap_err();
    assert_eq!(err.to_string(), "kernel `fails`: kernel trapped");
    let err = engine
        .run(&call_tir_module_named("uncompilable", 1), "main", &args)
        .unwrap_err();
    assert_eq!(err.to_string(), "kernel `uncompilable`: unsupported TIR");
    // Mismatched input shapes are caught by the entry check before any kernel runs.
    let err = engine
        .run(
            &call_tir_module(1),
            "main",
            &[args[0].clone(), arr1(&[1.0f32, 2.0]).into_dyn().into()],
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "dimension 0 of argument `y` of function `main`: expected n = 1, got 2"
    );
}

/// `C[i] = A[i] + B[i]` for `i < n`, with `n` bound by the buffers' shape.
fn tir_add() -> PrimFunc {
    use relax_ir::tir::{For, ForKind, Stmt};
    let n = tvar("n");
    let mut f = prim_func(
        vec![
            ("A", DataType::FLOAT32, vec![pe(&n)]),
            ("B", DataType::FLOAT32, vec![pe(&n)]),
            ("C", DataType::FLOAT32, vec![pe(&n)]),
        ],
        vec![],
    );
    let bufs: Vec<_> = f.buffer_map.iter().map(|(_, b)| b.clone()).collect();
    let i = relax_ir::TirVar::new("i", DataType::INT64);
    let value = PrimExpr::load(&bufs[0], vec![pe(&i)]) + PrimExpr::load(&bufs[1], vec![pe(&i)]);
    f.body = Stmt::For(For {
        var: i.clone(),
        min: c(0),
        extent: pe(&n),
        kind: ForKind::Serial,
        thread_tag: None,
        annotations: Attrs::new(),
        body: Box::new(Stmt::BufferStore {
            buffer: bufs[2].clone(),
            value,
            indices: vec![pe(&i)],
            span: relax_ir::Span::NONE,
        }),
    });
    f
}

#[test]
fn call_tir_runs_on_the_jit_host_executor() {
    let n = tvar("n");
    let x = var("x", f32_tensor(vec![pe(&n)]));
    let r = untyped("r");
    let (args, out) = (
        vec![gv("add"), tuple(vec![v(&x), const_f32(vec![3], &[0.5, 0.25, 0.125])])],
        vec![f32_tensor(vec![pe(&n)])],
    );
    let main = single_op_main(&x, &r, "relax.call_tir", args, out);
    let mut m = module(vec![("main", main)]);
    m.add("add", BaseFunc::Prim(tir_add()));
    let loaded = Engine::default().load(&m).unwrap();
    let out = loaded
        .run("main", &[arr1(&[1.0f32, 2.0, 3.0]).into_dyn().into()])
        .unwrap();
    assert_eq!(
        out.as_tensor().unwrap().to_array::<f32>().unwrap(),
        arr1(&[1.5f32, 2.25, 3.125]).into_dyn()
    );
    // The kernel's own shape check rejects a mismatch between n and the constant's length.
    let err = loaded
        .run("main", &[arr1(&[1.0f32, 2.0]).into_dyn().into()])
        .unwrap_err();
    assert!(
        matches!(err, EngineError::Kernel { ref name, .. } if name == "add"),
        "{err}"
    );
    assert_eq!(loaded.stats().kernels_run, 1);
}

#[test]
fn call_tir_inplace_and_multiple_outputs() {
    let x = var("x", f32_tensor(vec![c(2)]));
    let [a, b] = untyped_vars(["a", "b"]);
    let mut attrs = Attrs::new();
    attrs.set("inplace_indices", AttrValue::List(vec![AttrValue::Int(0)]));
    let main = seq_fn(
        vec![x.clone()],
        vec![
            bind(
                &a,
                op(
                    "relax.call_tir_inplace",
                    vec![gv("bump"), tuple(vec![v(&x)])],
                    attrs,
                    vec![f32_tensor(vec![c(2)])],
                ),
            ),
            bind(
                &b,
                op(
                    "relax.call_tir",
                    vec![gv("two_outputs"), tuple(vec![v(&a)])],
                    Attrs::new(),
                    vec![StructInfo::Tuple(vec![f32_tensor(vec![c(2)]), f32_tensor(vec![c(2)])])],
                ),
            ),
        ],
        tuple(vec![v(&a), v(&b)]),
    );
    let mut m = module(vec![("main", main)]);
    m.add(
        "bump",
        BaseFunc::Prim(prim_func(vec![("A", DataType::FLOAT32, vec![c(2)])], vec![])),
    );
    m.add(
        "two_outputs",
        BaseFunc::Prim(prim_func(
            vec![
                ("A", DataType::FLOAT32, vec![c(2)]),
                ("S", DataType::FLOAT32, vec![c(2)]),
                ("P", DataType::FLOAT32, vec![c(2)]),
            ],
            vec![],
        )),
    );
    let mock = Arc::new(MockExecutor::default());
    let loaded = Engine::default().with_kernel_executor(mock.clone()).load(&m).unwrap();
    let xt = Tensor::from_array(&arr1(&[1.0f32, 2.0]).into_dyn());
    let out = loaded.run("main", &[xt.clone().into()]).unwrap();
    let f = out.as_tuple().unwrap();
    // The in-place result is the argument itself, mutated.
    assert!(f[0].as_tensor().unwrap().shares_memory_with(&xt));
    assert_eq!(xt.to_array::<f32>().unwrap(), arr1(&[2.0f32, 3.0]).into_dyn());
    let outs = f[1].as_tuple().unwrap();
    assert_eq!(
        outs[0].as_tensor().unwrap().to_array::<f32>().unwrap(),
        arr1(&[4.0f32, 6.0]).into_dyn()
    );
    assert_eq!(
        outs[1].as_tensor().unwrap().to_array::<f32>().unwrap(),
        arr1(&[4.0f32, 9.0]).into_dyn()
    );
    let calls = mock.calls.lock().unwrap();
    assert_eq!(calls[0].1, vec![Seen::Write(DataType::FLOAT32, vec![2])]);
}

#[test]
fn constants_are_fresh_tensors() {
    // An in-place kernel on a constant must not change the constant for the next run.
    let a = untyped("a");
    let mut attrs = Attrs::new();
    attrs.set("inplace_indices", AttrValue::List(vec![AttrValue::Int(0)]));
    let main = seq_fn(
        vec![],
        vec![bind(
            &a,
            op(
                "relax.call_tir_inplace",
                vec![gv("bump"), tuple(vec![const_f32(vec![2], &[5.0, 6.0])])],
                attrs,
                vec![f32_tensor(vec![c(2)])],
            ),
        )],
        v(&a),
    );
    let mut m = module(vec![("main", main)]);
    m.add(
        "bump",
        BaseFunc::Prim(prim_func(vec![("A", DataType::FLOAT32, vec![c(2)])], vec![])),
    );
    let loaded = Engine::default()
        .with_kernel_executor(Arc::new(MockExecutor::default()))
        .load(&m)
        .unwrap();
    for _ in 0..3 {
        let out = loaded.run("main", &[]).unwrap();
        assert_eq!(
            out.as_tensor().unwrap().to_array::<f32>().unwrap(),
            arr1(&[6.0f32, 7.0]).into_dyn()
        );
    }
}

#[test]
fn call_dps_packed_writes_outputs() {
    let engine = Engine::default();
    engine.register_packed("test.matmul_t", Purity::Pure, |args| {
        let [a, out] = args else {
            return Err(EngineError::msg("two arguments expected"));
        };
        let a = a
            .expect_tensor("a")?
            .to_array::<f32>()?
            .into_dimensionality::<ndarray::Ix2>()
            .map_err(|e| EngineError::msg(e.to_string()))?;
        out.expect_tensor("out")?.assign(&a.t().dot(&a).into_dyn())?;
        Ok(Value::unit())
    });
    let n = tvar("n");
    let m_ = tvar("m");
    let x = var("x", f32_tensor(vec![pe(&n), pe(&m_)]));
    let r = var("r", f32_tensor(vec![pe(&m_), pe(&m_)]));
    let (args, out) = (
        vec![extern_fn("test.matmul_t"), tuple(vec![v(&x)])],
        vec![f32_tensor(vec![pe(&m_), pe(&m_)])],
    );
    let main = single_op_main(&x, &r, "relax.call_dps_packed", args, out);
    let out = engine
        .run(
            &module(vec![("main", main)]),
            "main",
            &[arr2(&[[1.0f32, 2.0], [3.0, 4.0], [5.0, 6.0]]).into_dyn().into()],
        )
        .unwrap();
    assert_eq!(
        out.as_tensor().unwrap().to_array::<f32>().unwrap(),
        arr2(&[[35.0f32, 44.0], [44.0, 56.0]]).into_dyn()
    );
}

#[test]
fn make_closure_and_invoke_closure() {
    // add_k(k, x) = test.add(x, k); main(x) = invoke_closure(make_closure(add_k, (k0,)), (x,))
    let engine = Engine::default();
    engine.register_packed("test.add", Purity::Pure, |a| {
        let x = a[0].expect_tensor("x")?.scalar_value()?.as_int().unwrap_or_default();
        let y = a[1].expect_tensor("y")?.scalar_value()?.as_int().unwrap_or_default();
        Ok(Tensor::scalar(x + y).into())
    });
    let s = tensor(vec![], DataType::INT64);
    let k = var("k", s.clone());
    let x = var("x", s.clone());
    let r = var("r", s.clone());
    let add_k = seq_fn(
        vec![k.clone(), x.clone()],
        vec![bind(&r, call_pure_packed("test.add", vec![v(&x), v(&k)], s.clone()))],
        v(&r),
    );
    let x2 = var("x", s.clone());
    let [clo, out] = untyped_vars(["clo", "out"]);
    let main = impure(seq_fn(
        vec![x2.clone()],
        vec![
            bind(
                &clo,
                plain_op("relax.make_closure", vec![gv("add_k"), tuple(vec![const_i64(100)])]),
            ),
            bind(
                &out,
                op(
                    "relax.invoke_closure",
                    vec![v(&clo), tuple(vec![v(&x2)])],
                    Attrs::new(),
                    vec![s.clone()],
                ),
            ),
        ],
        v(&out),
    ));
    let got = engine
        .run(
            &module(vec![("main", main), ("add_k", add_k)]),
            "main",
            &[Tensor::scalar(5i64).into()],
        )
        .unwrap();
    assert_eq!(got.as_tensor().unwrap().scalar_value().unwrap().as_int(), Some(105));
}

/// A device whose buffers live in host vectors, counting transfers.
#[derive(Default)]
struct MockDevice {
    uploads: Mutex<usize>,
}
struct MockBuffer(Mutex<Vec<u8>>, Arc<MockDevice>);
impl DeviceMemory for MockBuffer {
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
    fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), BackendError> {
        let b = self.0.lock().unwrap();
        out.copy_from_slice(b.get(offset..offset + out.len()).ok_or("out of range")?);
        Ok(())
    }
    fn write(&self, offset: usize, data: &[u8]) -> Result<(), BackendError> {
        *self.1.uploads.lock().unwrap() += 1;
        self.0
            .lock()
            .unwrap()
            .get_mut(offset..offset + data.len())
            .ok_or("out of range")?
            .copy_from_slice(data);
        Ok(())
    }
}
struct MockBackend(Arc<MockDevice>);
impl DeviceBackend for MockBackend {
    fn name(&self) -> String {
        "mock".into()
    }
    fn accepts(&self, v: &VDevice) -> bool {
        v.target.kind == "webgpu"
    }
    fn alloc(&self, _: &VDevice, nbytes: usize) -> Result<Arc<dyn DeviceMemory>, BackendError> {
        Ok(Arc::new(MockBuffer(Mutex::new(vec![0; nbytes]), self.0.clone())))
    }
}

/// Device 0 of `kind`, global memory.
fn global_vdevice(kind: &str) -> VDevice {
    VDevice {
        target: Target::from_kind(kind),
        vdevice_id: 0,
        memory_scope: "global".into(),
    }
}

/// `R.to_vdevice(x, dst_vdevice=dst)` (`dst`: `"kind:index:scope"`).
fn to_vdevice(x: &Var, dst: &str) -> Expr {
    let mut a = Attrs::new();
    a.set("dst_vdevice", AttrValue::Str(dst.into()));
    op("relax.to_vdevice", vec![v(x)], a, vec![])
}

#[test]
fn to_vdevice_copies_between_devices() {
    let gpu = global_vdevice("webgpu");
    let cpu = global_vdevice("llvm");
    let x = var("x", f32_tensor(vec![c(3)]));
    let [g, h] = untyped_vars(["g", "h"]);
    let gpu_si = StructInfo::Tensor(TensorStructInfo {
        shape: Some(shape(vec![c(3)])),
        dtype: DataType::FLOAT32,
        vdevice: Some(gpu.clone()),
        ndim: 1,
    });
    let g2 = var("g2", gpu_si.clone());
    let main = seq_fn(
        vec![x.clone()],
        vec![
            // The index counts VDevices of the same kind: webgpu:0 is the
            // module's second VDevice.
            bind(&g, to_vdevice(&x, "webgpu:0:global")),
            match_cast(&g2, v(&g), gpu_si),
            bind(&h, to_vdevice(&g2, "llvm:0:global")),
        ],
        tuple(vec![v(&g), v(&h)]),
    );
    let mut m = module(vec![("main", main)]);
    m.global_infos.insert(
        "vdevice".into(),
        vec![
            relax_ir::GlobalInfo::VDevice(cpu.clone()),
            relax_ir::GlobalInfo::VDevice(gpu.clone()),
        ],
    );
    let dev = Arc::new(MockDevice::default());
    let engine = Engine::default().with_backend(Arc::new(MockBackend(dev.clone())));
    let loaded = engine.load(&m).unwrap();
    let out = loaded
        .run("main", &[arr1(&[1.0f32, 2.0, 3.0]).into_dyn().into()])
        .unwrap();
    let f = out.as_tuple().unwrap();
    let (g, h) = (f[0].as_tensor().unwrap(), f[1].as_tensor().unwrap());
    assert!(g.is_on_device() && !h.is_on_device());
    assert_eq!(g.vdevice().unwrap().target.kind, "webgpu");
    assert_eq!(h.vdevice().unwrap().target.kind, "llvm");
    assert_eq!(g.to_array::<f32>().unwrap(), arr1(&[1.0f32, 2.0, 3.0]).into_dyn());
    assert_eq!(h.to_array::<f32>().unwrap(), arr1(&[1.0f32, 2.0, 3.0]).into_dyn());
    assert_eq!(*dev.uploads.lock().unwrap(), 1);
    let stats = loaded.stats();
    assert_eq!((stats.copies, stats.bytes_copied), (2, 24));

    // A tensor on the wrong VDevice fails the MatchCast.
    let x = var("x", f32_tensor(vec![c(3)]));
    let y = var(
        "y",
        StructInfo::Tensor(TensorStructInfo {
            shape: None,
            dtype: DataType::FLOAT32,
            vdevice: Some(gpu),
            ndim: 1,
        }),
    );
    let z = untyped("z");
    let main = seq_fn(
        vec![x.clone()],
        vec![
            bind(&z, to_vdevice(&x, "llvm:0")),
            match_cast(&y, v(&z), y.struct_info().unwrap().clone()),
        ],
        v(&y),
    );
    let infos = m.global_infos.clone();
    let mut m = module(vec![("main", main)]);
    m.global_infos = infos;
    let err = engine
        .run(&m, "main", &[arr1(&[1.0f32, 2.0, 3.0]).into_dyn().into()])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "R.match_cast binding `y`: expected a tensor on VDevice webgpu:0:global, got a tensor on VDevice llvm:0:global"
    );
}

#[test]
fn memory_operators_create_views() {
    let [st, a, b] = untyped_vars(["st", "a", "b"]);
    let dt = |d: DataType| relax_ir::Expr::new(relax_ir::ExprKind::DataTypeImm(d));
    let main = seq_fn(
        vec![],
        vec![
            bind(
                &st,
                plain_op(
                    "relax.memory.alloc_storage",
                    vec![shape(vec![c(16)]), prim(c(0)), string("global"), dt(DataType::UINT8)],
                ),
            ),
            bind(
                &a,
                plain_op(
                    "relax.memory.alloc_tensor",
                    vec![v(&st), prim(c(0)), shape(vec![c(2)]), dt(DataType::FLOAT32)],
                ),
            ),
            bind(
                &b,
                plain_op(
                    "relax.memory.alloc_tensor",
                    vec![v(&st), prim(c(8)), shape(vec![c(2)]), dt(DataType::FLOAT32)],
                ),
            ),
        ],
        tuple(vec![v(&a), v(&b)]),
    );
    let out = Engine::default()
        .run(&module(vec![("main", main)]), "main", &[])
        .unwrap();
    let f = out.as_tuple().unwrap();
    let (a, b) = (f[0].as_tensor().unwrap(), f[1].as_tensor().unwrap());
    assert!(a.shares_memory_with(b));
    b.assign(&arr1(&[7.0f32, 8.0]).into_dyn()).unwrap();
    assert_eq!(a.to_array::<f32>().unwrap(), arr1(&[0.0f32, 0.0]).into_dyn());
    assert_eq!(b.to_array::<f32>().unwrap(), arr1(&[7.0f32, 8.0]).into_dyn());
}

#[test]
fn unknown_operator_is_reported() {
    let x = var("x", f32_tensor(vec![c(2)]));
    let y = untyped("y");
    let main = seq_fn(
        vec![x.clone()],
        vec![bind(&y, plain_op("relax.add", vec![v(&x), v(&x)]))],
        v(&y),
    );
    // With LegalizeOps off, a high-level operator reaches the interpreter unlowered.
    let err = Engine::new(EngineConfig {
        legalize: false,
        ..EngineConfig::default()
    })
    .run(
        &module(vec![("main", main)]),
        "main",
        &[arr1(&[1.0f32, 2.0]).into_dyn().into()],
    )
    .unwrap_err();
    assert!(
        matches!(err, EngineError::UnsupportedOp(ref o) if o == "relax.add"),
        "{err}"
    );
}

#[test]
fn eight_threads_share_one_loaded_module() {
    let mock = Arc::new(MockExecutor::default());
    let engine = Engine::new(EngineConfig {
        stack_size: 8 << 20,
        ..EngineConfig::default()
    })
    .with_kernel_executor(mock.clone());
    let loaded = engine.load(&call_tir_module(2)).unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let loaded = &loaded;
                s.spawn(move || {
                    for i in 0..25 {
                        let len = 1 + (t + i) % 5;
                        let x = ArrayD::from_shape_fn(IxDyn(&[len]), |ix| (t * 100 + ix[0]) as f32);
                        let y = ArrayD::from_shape_fn(IxDyn(&[len]), |ix| (i + ix[0]) as f32);
                        let expected = &x + &(&y * 2.0);
                        let out = loaded.run("main", &[x.into(), y.into()]).unwrap();
                        assert_eq!(out.as_tensor().unwrap().to_array::<f32>().unwrap(), expected);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
    let stats = loaded.stats();
    assert_eq!((stats.runs, stats.kernels_run), (200, 200));
    assert_eq!(mock.calls.lock().unwrap().len(), 200);
    assert_eq!(
        *mock.compiled.lock().unwrap(),
        vec!["add_scaled".to_string()],
        "compiled once per loaded module"
    );
}

#[test]
fn loaded_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<relax_engine::Loaded>();
    assert_send_sync::<Value>();
    assert_send_sync::<Engine>();
}

#[test]
fn to_vdevice_on_the_gpu_runtime() {
    let backend = match relax_engine::gpu::GpuBackend::open(None) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("no GPU adapter available, GPU placement not checked: {e}");
            return;
        }
    };
    let gpu = global_vdevice("webgpu");
    let x = var("x", f32_tensor(vec![c(5)]));
    let [g, r] = untyped_vars(["g", "r"]);
    let main = seq_fn(
        vec![x.clone()],
        vec![
            bind(&g, to_vdevice(&x, "webgpu:0:global")),
            bind(
                &r,
                op(
                    "relax.call_tir",
                    vec![gv("add"), tuple(vec![v(&g), v(&x)])],
                    Attrs::new(),
                    vec![f32_tensor(vec![c(5)])],
                ),
            ),
        ],
        tuple(vec![v(&g), v(&r)]),
    );
    let mut m = module(vec![("main", main)]);
    m.add("add", BaseFunc::Prim(tir_add()));
    m.global_infos
        .insert("vdevice".into(), vec![relax_ir::GlobalInfo::VDevice(gpu)]);
    let engine = Engine::new(EngineConfig {
        check: false,
        ..EngineConfig::default()
    })
    .with_backend(Arc::new(backend));
    let loaded = engine.load(&m).unwrap();
    let out = loaded
        .run("main", &[arr1(&[1.0f32, 2.0, 3.0, 4.0, 5.0]).into_dyn().into()])
        .unwrap();
    let f = out.as_tuple().unwrap();
    let g = f[0].as_tensor().unwrap();
    assert!(g.is_on_device());
    assert_eq!(
        g.to_array::<f32>().unwrap(),
        arr1(&[1.0f32, 2.0, 3.0, 4.0, 5.0]).into_dyn()
    );
    // The host kernel read the device tensor through a staging copy.
    assert_eq!(
        f[1].as_tensor().unwrap().to_array::<f32>().unwrap(),
        arr1(&[2.0f32, 4.0, 6.0, 8.0, 10.0]).into_dyn()
    );
    let stats = loaded.stats();
    assert_eq!((stats.copies, stats.bytes_copied), (2, 40));
}

#[test]
fn call_inplace_packed_mutates_its_argument() {
    let engine = Engine::default();
    engine.register_packed("test.negate", Purity::Impure, |a| {
        let t = a[0].expect_tensor("x")?;
        t.assign(&t.to_array::<f32>()?.mapv(|v| -v))?;
        Ok(a[0].clone())
    });
    let x = var("x", f32_tensor(vec![c(2)]));
    let y = var("y", f32_tensor(vec![c(2)]));
    let mut attrs = Attrs::new();
    attrs.set("inplace_indices", AttrValue::List(vec![AttrValue::Int(0)]));
    let main = func(
        vec![x.clone()],
        seq(
            vec![dataflow(vec![bind(
                &y,
                op(
                    "relax.call_inplace_packed",
                    vec![extern_fn("test.negate"), v(&x)],
                    attrs,
                    vec![f32_tensor(vec![c(2)])],
                ),
            )])],
            v(&y),
        ),
        None,
    );
    let xt = Tensor::from_array(&arr1(&[1.0f32, -2.0]).into_dyn());
    let out = engine
        .run(&module(vec![("main", main)]), "main", &[xt.clone().into()])
        .unwrap();
    assert!(out.as_tensor().unwrap().shares_memory_with(&xt));
    assert_eq!(xt.to_array::<f32>().unwrap(), arr1(&[-1.0f32, 2.0]).into_dyn());
}
