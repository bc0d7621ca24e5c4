//! Builders for hand-written PrimFuncs in the shape LegalizeOps produces, and
//! comparison helpers.
#![allow(dead_code)]

use std::sync::Arc;

use relax_ir::attrs::Attrs;
use relax_ir::tir::{BinOp, Block, Buffer, For, ForKind, IterKind, IterVar, PrimExpr, Range, Stmt, TirVar};
use relax_ir::{DataType, PrimFunc, Span};
use relax_jit::{Jit, KernelArg};

pub fn i64c(v: i64) -> PrimExpr {
    PrimExpr::int(v)
}

pub fn shape(dims: &[i64]) -> Vec<PrimExpr> {
    dims.iter().map(|&d| i64c(d)).collect()
}

/// Buffers named `names`, all of dtype `dt` and shape `dims`.
pub fn buffers<const N: usize>(names: [&str; N], dt: DataType, dims: &[i64]) -> [Buffer; N] {
    names.map(|name| Buffer::new(name, dt, shape(dims)))
}

pub fn bin(op: BinOp, a: PrimExpr, b: PrimExpr) -> PrimExpr {
    PrimExpr::binary(op, a, b)
}

/// `for v0, v1, ... in T.grid(extents)` around a block binding iteration
/// variables of `kinds` ("S"/"R") to the loop variables.
pub fn grid_block(
    name: &str,
    extents: &[PrimExpr],
    kinds: &str,
    build: impl FnOnce(&[PrimExpr]) -> (Option<Stmt>, Stmt),
) -> Stmt {
    let loops: Vec<TirVar> = (0..extents.len())
        .map(|i| TirVar::new(format!("i{i}"), DataType::INT64))
        .collect();
    let ivs: Vec<IterVar> = kinds
        .chars()
        .enumerate()
        .map(|(i, k)| IterVar {
            var: TirVar::new(format!("v{i}"), DataType::INT64),
            dom: Range::from_extent(extents[i].clone()),
            kind: if k == 'R' {
                IterKind::CommReduce
            } else {
                IterKind::DataPar
            },
        })
        .collect();
    let vexprs: Vec<PrimExpr> = ivs.iter().map(|iv| iv.var.to_expr()).collect();
    let (init, body) = build(&vexprs);
    let block = Block {
        name: name.to_string(),
        iter_vars: ivs,
        reads: vec![],
        writes: vec![],
        init: init.map(Box::new),
        alloc_buffers: vec![],
        match_buffers: vec![],
        annotations: Attrs::new(),
        body: Box::new(body),
    };
    let mut s = Stmt::BlockRealize {
        iter_values: loops.iter().map(|l| l.to_expr()).collect(),
        predicate: None,
        block: Box::new(block),
    };
    for (l, e) in loops.iter().zip(extents).rev() {
        s = Stmt::For(For {
            var: l.clone(),
            min: i64c(0),
            extent: e.clone(),
            kind: ForKind::Serial,
            thread_tag: None,
            annotations: Attrs::new(),
            body: Box::new(s),
        });
    }
    s
}

pub fn store(b: &Buffer, idx: &[PrimExpr], v: PrimExpr) -> Stmt {
    Stmt::BufferStore {
        buffer: b.clone(),
        value: v,
        indices: idx.to_vec(),
        span: Span::NONE,
    }
}

pub fn load(b: &Buffer, idx: &[PrimExpr]) -> PrimExpr {
    PrimExpr::load(b, idx.to_vec())
}

/// A PrimFunc over `buffers` (all parameters) with `body` in a root block
/// allocating `allocs`.
pub fn prim_func(buffers: &[Buffer], scalars: &[TirVar], allocs: Vec<Buffer>, body: Stmt) -> PrimFunc {
    let mut params = Vec::new();
    let mut buffer_map = Vec::new();
    for b in buffers {
        let h = TirVar::new_handle(b.name(), Some(b.dtype()), None);
        params.push(h.clone());
        buffer_map.push((h, b.clone()));
    }
    params.extend(scalars.iter().cloned());
    let root = Block {
        name: "root".into(),
        iter_vars: vec![],
        reads: vec![],
        writes: vec![],
        init: None,
        alloc_buffers: allocs,
        match_buffers: vec![],
        annotations: Attrs::new(),
        body: Box::new(body),
    };
    PrimFunc {
        params,
        buffer_map,
        ret_type: None,
        body: Stmt::BlockRealize {
            iter_values: vec![],
            predicate: None,
            block: Box::new(root),
        },
        attrs: Attrs::new(),
        private: true,
        s_tir: true,
        span: Span::NONE,
    }
}

/// The GPU JIT, or `None` (with a message) when no adapter is available.
pub fn gpu_jit() -> Option<Jit> {
    match relax_gpu_runtime::GpuRuntime::shared_default() {
        Ok(rt) => Some(Jit::new(Some(Arc::new(rt)))),
        Err(e) => {
            eprintln!("no GPU adapter ({e}); GPU comparisons skipped in this test");
            None
        }
    }
}

/// The shared GPU runtime, or `None` (with a message) when no adapter is available.
pub fn shared_runtime() -> Option<Arc<relax_gpu_runtime::GpuRuntime>> {
    match relax_gpu_runtime::GpuRuntime::shared_default() {
        Ok(rt) => Some(Arc::new(rt)),
        Err(e) => {
            eprintln!("no GPU adapter ({e}); GPU comparisons skipped");
            None
        }
    }
}

/// The shared GPU runtime when it has subgroups (or `subgroups` is off); `None`,
/// with a message, otherwise.
pub fn shared_runtime_for(subgroups: bool) -> Option<Arc<relax_gpu_runtime::GpuRuntime>> {
    let rt = shared_runtime()?;
    if subgroups && !rt.supports_subgroups() {
        eprintln!("the adapter has no subgroups; subgroup schedules not tested");
        return None;
    }
    Some(rt)
}

/// The PrimFuncs `LegalizeOps` generates for `body` (the statements of a Relax
/// function over `params`, one a line, returning `y`).
pub fn legalized(params: &str, body: &str) -> Vec<PrimFunc> {
    let src = format!(
        "@I.ir_module\nclass Module:\n    @R.function\n    def main({params}):\n{}\n        return y\n",
        body.lines()
            .map(|l| format!("        {}", l.trim()))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let module = relax_ir::text::parse(&src).expect("module parses").into_module();
    let normalized = relax_checker::normalize::normalize_module(&module).module;
    let legalized = relax_transform::legalize::legalize_module(&normalized).expect("legalizes");
    legalized
        .functions
        .values()
        .filter_map(|f| match f {
            relax_ir::BaseFunc::Prim(p) => Some(p.clone()),
            _ => None,
        })
        .collect()
}

/// The dtype and constant shape of each buffer parameter of `f`, in order.
pub fn buffer_params(f: &PrimFunc) -> Vec<(DataType, Vec<i64>)> {
    f.buffer_map
        .iter()
        .map(|(_, b)| {
            let dims = b
                .shape()
                .iter()
                .map(|d| d.as_int().expect("a constant extent"))
                .collect();
            (b.dtype(), dims)
        })
        .collect()
}

/// The capabilities of the runtime `rt` as the JIT reads them.
pub fn device_caps(rt: &relax_gpu_runtime::GpuRuntime) -> relax_jit::DeviceCaps {
    relax_jit::DeviceCaps {
        f16: rt.supports_f16(),
        f64: rt.supports_f64(),
        i64: rt.supports_i64(),
        max_binding_bytes: rt.max_binding_bytes(),
        binding_align: u64::from(rt.limits().min_storage_buffer_offset_alignment),
    }
}

/// A JIT on the runtime `rt` with the schedule options `opts`.
pub fn jit_with(rt: Arc<relax_gpu_runtime::GpuRuntime>, opts: relax_jit::ScheduleOptions) -> Jit {
    let caps = device_caps(&rt);
    Jit::with_options(Some(rt), caps, opts)
}

/// A JIT on the shared adapter with the schedule options `opts`; `None` without an
/// adapter.
pub fn gpu_jit_with(opts: relax_jit::ScheduleOptions) -> Option<Jit> {
    let rt = Arc::new(relax_gpu_runtime::GpuRuntime::shared_default().ok()?);
    Some(jit_with(rt, opts))
}

/// Float32 tensors of `shapes` with pseudo-random values in `[lo, hi)`, the `i`-th
/// seeded with `seed(i)`.
pub fn random_f32_inputs<S: AsRef<[i64]>>(
    shapes: &[S],
    seed: impl Fn(usize) -> u64,
    lo: f64,
    hi: f64,
) -> Vec<relax_jit::HostTensor> {
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let s = s.as_ref();
            let numel = s.iter().product::<i64>() as usize;
            relax_jit::HostTensor::from_f64s(DataType::FLOAT32, s, &rand_vec(numel, seed(i), lo, hi)).expect("tensor")
        })
        .collect()
}

/// The output (of dtype `dt` and shape `shape`) of `f` on copies of `inputs`, run on
/// `gpu`'s GPU, or on the host when `gpu` is `None`.
pub fn run_output(
    gpu: Option<&Jit>,
    f: &PrimFunc,
    inputs: &[relax_jit::HostTensor],
    dt: DataType,
    shape: &[i64],
) -> Vec<f64> {
    let mut ins = inputs.to_vec();
    let mut o = relax_jit::HostTensor::zeros(dt, shape).expect("out");
    let mut args: Vec<relax_jit::KernelArg> = ins.iter_mut().map(relax_jit::KernelArg::from).collect();
    args.push(relax_jit::KernelArg::from(&mut o));
    match gpu {
        Some(g) => g.run_gpu(f, &mut args).expect("gpu run"),
        None => Jit::new(None).run_host(f, &mut args).expect("host run"),
    }
    o.to_f64_vec()
}

/// Run `f` on `tensors` (its inputs, then its outputs, written in place) with
/// `jit`'s GPU when `gpu`, else on the host.
pub fn run_tensors(jit: &Jit, gpu: bool, f: &PrimFunc, tensors: &mut [&mut relax_jit::HostTensor]) {
    let mut args: Vec<relax_jit::KernelArg> = tensors
        .iter_mut()
        .map(|t| relax_jit::KernelArg::from(&mut **t))
        .collect();
    if gpu {
        jit.run_gpu(f, &mut args).expect("gpu run");
    } else {
        jit.run_host(f, &mut args).expect("host run");
    }
}

/// The output `f` writes from `inputs` (its last parameter, of `out_shape`, float32)
/// on the host and then with `gpu`, as `[host, gpu]`.
pub fn host_and_gpu(gpu: &Jit, f: &PrimFunc, inputs: &[relax_jit::HostTensor], out_shape: &[i64]) -> [Vec<f64>; 2] {
    [false, true].map(|on_gpu| {
        let mut ins = inputs.to_vec();
        let mut out = relax_jit::HostTensor::zeros(DataType::FLOAT32, out_shape).expect("output tensor");
        let mut args: Vec<relax_jit::KernelArg> = ins.iter_mut().map(relax_jit::KernelArg::from).collect();
        args.push(relax_jit::KernelArg::from(&mut out));
        if on_gpu {
            gpu.run_gpu(f, &mut args).expect("gpu run");
        } else {
            Jit::new(None).run_host(f, &mut args).expect("host run");
        }
        out.to_f64_vec()
    })
}

/// Panic unless `gpu` computes what the host does (1e-4 relative and absolute).
pub fn assert_gpu_matches_host(
    gpu: &Jit,
    f: &PrimFunc,
    inputs: &[relax_jit::HostTensor],
    out_shape: &[i64],
    what: &str,
) {
    let [host, on_gpu] = host_and_gpu(gpu, f, inputs, out_shape);
    assert_close(&on_gpu, &host, 1e-4, 1e-4, what);
}

/// [`assert_gpu_matches_host`] on float32 inputs in `[-1, 1)` of the shapes of
/// `f`'s buffer parameters but the last (its output), the `i`-th seeded with
/// `seed + i`.
pub fn assert_gpu_matches_host_on_random(gpu: &Jit, f: &PrimFunc, seed: u64, what: &str) {
    let mut params = buffer_params(f);
    let (_, out_shape) = params.pop().expect("an output buffer");
    let shapes: Vec<Vec<i64>> = params.into_iter().map(|(_, s)| s).collect();
    let inputs = random_f32_inputs(&shapes, |i| seed + i as u64, -1.0, 1.0);
    assert_gpu_matches_host(gpu, f, &inputs, &out_shape, what);
}

/// Deterministic pseudo-random values in [lo, hi).
pub fn rand_vec(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            lo + (hi - lo) * u
        })
        .collect()
}

/// Assert `got` ≈ `want` elementwise: |g - w| <= abs + rel * |w|.
pub fn assert_close(got: &[f64], want: &[f64], rel: f64, abs: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= abs + rel * w.abs();
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

/// The median seconds of `reps` runs of `f` on the device-resident float32 tensors
/// `(buffer, shape)`, after one warm-up run, waiting for each to complete.
pub fn time_resident(
    gpu: &Jit,
    f: &PrimFunc,
    tensors: &[(&relax_gpu_runtime::DeviceBuffer, &[i64])],
    reps: usize,
) -> f64 {
    let rt = gpu.gpu().expect("a GPU JIT");
    let mut args: Vec<relax_jit::KernelArg<'_>> = tensors
        .iter()
        .map(|&(buf, shape)| relax_jit::KernelArg::Device {
            buf,
            dtype: DataType::FLOAT32,
            shape,
        })
        .collect();
    gpu.run_gpu(f, &mut args).expect("runs");
    rt.synchronize().expect("completes");
    let mut ts: Vec<f64> = (0..reps)
        .map(|_| {
            let t = std::time::Instant::now();
            gpu.run_gpu(f, &mut args).expect("runs");
            rt.synchronize().expect("completes");
            t.elapsed().as_secs_f64()
        })
        .collect();
    ts.sort_by(f64::total_cmp);
    ts[reps / 2]
}

/// `C = A + B` in float32, elementwise over `dims`.
pub fn add_func(dims: &[i64]) -> PrimFunc {
    let a = Buffer::new("A", DataType::FLOAT32, shape(dims));
    let b = Buffer::new("B", DataType::FLOAT32, shape(dims));
    let c = Buffer::new("C", DataType::FLOAT32, shape(dims));
    let kinds: String = "S".repeat(dims.len());
    let body = grid_block("add", &shape(dims), &kinds, |v| {
        (None, store(&c, v, load(&a, v) + load(&b, v)))
    });
    prim_func(&[a, b, c], &[], vec![], body)
}

/// `C[m, n] = sum(A[m, k] * B[k, n])` in float32.
pub fn matmul_func(m: i64, k: i64, n: i64) -> PrimFunc {
    matmul_func_named("matmul", m, k, n)
}

/// [`matmul_func`] with the block named `block`.
pub fn matmul_func_named(block: &str, m: i64, k: i64, n: i64) -> PrimFunc {
    let a = Buffer::new("A", DataType::FLOAT32, shape(&[m, k]));
    let b = Buffer::new("B", DataType::FLOAT32, shape(&[k, n]));
    let c = Buffer::new("C", DataType::FLOAT32, shape(&[m, n]));
    let body = grid_block(block, &shape(&[m, n, k]), "SSR", |v| {
        let (i, j, r) = (v[0].clone(), v[1].clone(), v[2].clone());
        let init = store(&c, &[i.clone(), j.clone()], PrimExpr::float_of(0.0, DataType::FLOAT32));
        let upd = store(
            &c,
            &[i.clone(), j.clone()],
            load(&c, &[i.clone(), j.clone()]) + load(&a, &[i, r.clone()]) * load(&b, &[r, j]),
        );
        (Some(init), upd)
    });
    prim_func(&[a, b, c], &[], vec![], body)
}

/// `out[n, co, h, w] = sum(x[n, g*cig + ci, h*s + kh, w*s + kw] * wt[co, ci, kh, kw])`
/// with `g = co / (co_n / groups)`, `cig = ci_n / groups` (no padding: the input is
/// taken as already padded, as TVM's legalized conv2d reads its `pad_temp`).
pub fn conv_func(n: i64, ci: i64, hw: i64, co: i64, k: i64, s: i64, groups: i64) -> PrimFunc {
    let o = (hw - k) / s + 1;
    let cig = ci / groups;
    let cog = co / groups;
    let x = Buffer::new("X", DataType::FLOAT32, shape(&[n, ci, hw, hw]));
    let w = Buffer::new("Wt", DataType::FLOAT32, shape(&[co, cig, k, k]));
    let out = Buffer::new("Out", DataType::FLOAT32, shape(&[n, co, o, o]));
    let body = grid_block("conv", &shape(&[n, co, o, o, cig, k, k]), "SSSSRRR", |v| {
        let oi: Vec<PrimExpr> = v[..4].to_vec();
        let init = store(&out, &oi, PrimExpr::float_of(0.0, DataType::FLOAT32));
        let sc = i64c(s);
        let chan = if groups == 1 {
            v[4].clone()
        } else {
            bin(relax_ir::tir::BinOp::FloorDiv, v[1].clone(), i64c(cog)) * i64c(cig) + v[4].clone()
        };
        let xi = [
            v[0].clone(),
            chan,
            v[2].clone() * sc.clone() + v[5].clone(),
            v[3].clone() * sc + v[6].clone(),
        ];
        let wi = [v[1].clone(), v[4].clone(), v[5].clone(), v[6].clone()];
        let upd = store(&out, &oi, load(&out, &oi) + load(&x, &xi) * load(&w, &wi));
        (Some(init), upd)
    });
    prim_func(&[x, w, out], &[], vec![], body)
}

/// Little-endian bytes of `f32`s.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The `f32`s of little-endian bytes.
pub fn f32_values(b: &[u8]) -> Vec<f32> {
    b.chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// A read-only host argument.
pub fn read<'a>(dtype: DataType, shape: &'a [i64], bytes: &'a [u8]) -> KernelArg<'a> {
    KernelArg::Read { dtype, shape, bytes }
}

/// A written host argument.
pub fn write<'a>(dtype: DataType, shape: &'a [i64], bytes: &'a mut [u8]) -> KernelArg<'a> {
    KernelArg::Write { dtype, shape, bytes }
}
