//! The host kernel library as packed functions: the `relax_host.*` symbols that
//! `relax_checker::host_dispatch` rewrites operator calls into. Each works in place
//! on the tensors' host memory (no staging copies) with `relax_host_kernels`.

use std::borrow::Cow;
use std::sync::Arc;

use relax_host_kernels::elementwise::{self, BinaryOp, Reduction};
use relax_host_kernels::gemm::{gemv, MatRef, GEMV_ROWS, SERIAL_WORK};
use relax_host_kernels::gemv::{widen_half, Half};
use relax_host_kernels::library::{ConvFusion, HostKernel, MatmulFusion};
use relax_host_kernels::ordered::{self, Product};
use relax_host_kernels::pool::{pool2d, Pool2dShape, PoolKind};
use relax_host_kernels::prepacked::{gemm_prepacked, Layout, PackedB};
use relax_host_kernels::{conv2d, matmul, sgemm_parallel, Conv2dShape, Epilogue, KernelError};
use relax_ir::DataType;

use crate::error::{EngineError, Result};
use crate::kernel::{with_kernel_args, StagedArg, StagingStats};
use crate::packed::{PackedFunc, PackedRegistry, Purity};
use crate::value::{Tensor, Value};
use crate::weight_cache::{self, Probe};
use relax_jit::KernelArg;
use smallvec::SmallVec;

/// Register every kernel of [`HostKernel::all`] under its symbol in `registry`.
pub(crate) fn register(registry: &PackedRegistry) {
    for kernel in HostKernel::all() {
        let symbol = kernel.symbol();
        let name = symbol.clone();
        registry.register(PackedFunc::new(symbol, Purity::Pure, move |args| {
            let call = Call::new(args)?;
            // A kernel with enough work runs on rayon's pool as a whole: one hand-over
            // to the pool per call rather than one per parallel loop inside it. Small
            // ones stay on this thread (handing over costs tens of microseconds).
            let r = if call.wants_pool(kernel) {
                rayon::scope(|_| run_kernel(kernel, &call))
            } else {
                run_kernel(kernel, &call)
            };
            r.map_err(|e| EngineError::Invalid(format!("{name}: {e}")))?;
            Ok(Value::unit())
        }));
    }
    registry.register(PackedFunc::new(
        relax_transform::host_dispatch::RESHAPE_VIEW,
        Purity::Pure,
        reshape_view,
    ));
}

/// Run `kernel` on the staged arguments of one call.
fn run_kernel(kernel: HostKernel, c: &Call) -> KResult {
    match kernel {
        HostKernel::Conv2d(f) => conv2d_kernel(f, c),
        HostKernel::Matmul(f) => matmul_kernel(f, c),
        HostKernel::Binary { op, relu } => binary_kernel(op, relu, c),
        HostKernel::Relu => c.run(|ins, out, _| elementwise::relu(ins[0].0, out)),
        HostKernel::Unary(op) if c.tensors.first().is_some_and(|t| t.dtype() == DataType::FLOAT16) => {
            c.run_u16(|x, _, out| elementwise::unary_f16(op, x, out))
        }
        HostKernel::Unary(op) => c.run(|ins, out, _| elementwise::unary(op, ins[0].0, out)),
        HostKernel::Power => c.run(|ins, out, _| {
            let [x, (&[y], _)] = ins else {
                return Err(KernelError(
                    "power: expected a tensor and a one-element exponent".into(),
                ));
            };
            elementwise::power_scalar(x.0, y, out)
        }),
        HostKernel::GeluTanhChain => c.run(|ins, out, _| {
            let [x, (&[half], _), (&[p], _), (&[c1], _), (&[c2], _), (&[one], _)] = ins else {
                return Err(KernelError(
                    "gelu_tanh_chain: expected a tensor and five one-element scalars".into(),
                ));
            };
            elementwise::gelu_tanh_chain(x.0, [half, p, c1, c2, one], out)
        }),
        HostKernel::RotaryChain => c.run(|ins, out, shape| {
            let [x, cos, sin] = ins else {
                return Err(KernelError("rotary_chain: expected x, cos and sin".into()));
            };
            elementwise::rotary_chain(x.0, shape.last().copied().unwrap_or(0), cos.0, sin.0, out)
        }),
        HostKernel::RmsNormChain { rsqrt } => c.run(|ins, out, shape| {
            let [x, w, (&[e], _), (&[eps], _)] = ins else {
                return Err(KernelError(
                    "rms_norm_chain: expected a tensor, a weight and two one-element scalars".into(),
                ));
            };
            elementwise::rms_norm_chain(x.0, shape.last().copied().unwrap_or(0), w.0, e, eps, rsqrt, out)
        }),
        HostKernel::RotateHalf => {
            c.run(|ins, out, shape| elementwise::rotate_half(ins[0].0, shape.last().copied().unwrap_or(0), out))
        }
        HostKernel::Softmax | HostKernel::SafeSoftmax => c.run(|ins, out, shape| {
            let cols = shape.last().copied().unwrap_or(1);
            let rows = out.len() / cols.max(1);
            if kernel == HostKernel::SafeSoftmax {
                elementwise::safe_softmax(ins[0].0, rows, cols, out)
            } else {
                elementwise::softmax(ins[0].0, rows, cols, out)
            }
        }),
        HostKernel::SoftmaxNanFill => c.run(|ins, out, shape| {
            let [x, (&[fill], _)] = ins else {
                return Err(KernelError(
                    "softmax_nan_fill: expected a tensor and a one-element fill value".into(),
                ));
            };
            let cols = shape.last().copied().unwrap_or(1);
            let rows = out.len() / cols.max(1);
            elementwise::softmax_nan_fill(x.0, rows, cols, fill, out)
        }),
        HostKernel::Mean => c.run(|ins, out, _| {
            let outer = out.len();
            let inner = ins[0].0.len().checked_div(outer).unwrap_or(0);
            elementwise::mean_inner(ins[0].0, outer, inner, out)
        }),
        HostKernel::Reduce(r) => reduce_kernel(r, c),
        HostKernel::ArgReduce { max } => c.run_i64(|ins, out, _| {
            let rows = out.len();
            let cols = ins[0].0.len().checked_div(rows).unwrap_or(0);
            elementwise::arg_reduce_rows(max, ins[0].0, rows, cols, out)
        }),
        HostKernel::LayerNorm => {
            let k = *c
                .shape_param(0)?
                .first()
                .ok_or_else(|| KernelError("layer_norm: no axes".into()))?;
            let eps = c.floats.first().copied().unwrap_or(1e-5) as f32;
            c.run(|ins, out, shape| {
                let [x, g, b] = ins else {
                    return Err(KernelError("layer_norm: expected x, gamma and beta".into()));
                };
                let cols: usize = shape[shape.len().saturating_sub(k)..].iter().product();
                let rows = out.len().checked_div(cols).unwrap_or(0);
                elementwise::layer_norm(x.0, rows, cols, g.0, b.0, eps, out)
            })
        }
        HostKernel::BatchNorm => {
            let eps = c.floats.first().copied().unwrap_or(1e-5);
            c.run(|ins, out, shape| {
                let [x, g, b, m, v] = ins else {
                    return Err(KernelError(
                        "batch_norm: expected x, gamma, beta, mean and variance".into(),
                    ));
                };
                if shape.len() < 2 {
                    return Err(KernelError("batch_norm: the data needs a channel axis".into()));
                }
                let (scale, shift) = elementwise::batch_norm_fold(g.0, b.0, m.0, v.0, eps)?;
                let inner: usize = shape[2..].iter().product();
                elementwise::channel_affine(x.0, shape[0], shape[1], inner, &scale, &shift, false, out)
            })
        }
        HostKernel::BroadcastTo => c.run(|ins, out, shape| elementwise::broadcast_to(ins[0].0, ins[0].1, out, shape)),
        HostKernel::TakeRows(mode) => c.run_with_indices(1, |ins, idx, out, _| {
            let [(data, &[rows, cols])] = ins else {
                return Err(KernelError("take_rows: expected a matrix and indices".into()));
            };
            elementwise::take_rows(data, rows, cols, idx, mode, out)
        }),
        HostKernel::PermuteDims => {
            let axes = c.shape_param(0)?;
            if c.tensors.first().is_some_and(|t| t.dtype().bits == 16) {
                return c.run_u16(|x, shape, out| elementwise::transpose(x, shape, &axes, out));
            }
            c.run(|ins, out, _| elementwise::transpose(ins[0].0, ins[0].1, &axes, out))
        }
        HostKernel::Concat => {
            let axis = *c
                .shape_param(0)?
                .first()
                .ok_or_else(|| KernelError("concat: no axis".into()))?;
            c.run(|ins, out, shape| {
                if axis >= shape.len() {
                    return Err(KernelError(format!("concat: axis {axis} out of range")));
                }
                let outer: usize = shape[..axis].iter().product();
                let inner: usize = shape[axis + 1..].iter().product();
                let parts: Vec<(&[f32], usize)> = ins
                    .iter()
                    .map(|(d, s)| (*d, s.get(axis).copied().unwrap_or(0)))
                    .collect();
                elementwise::concat(&parts, outer, inner, out)
            })
        }
        HostKernel::MaxPool2d => pool_kernel(true, c),
        HostKernel::AvgPool2d => pool_kernel(false, c),
        HostKernel::Attention => attention_kernel(c),
    }
}

/// `relax_host.attention(q, k, v[, bias], params, scale, factors..)`: see
/// [`relax_host_kernels::attention::decode_params`] for the parameters.
fn attention_kernel(c: &Call) -> KResult {
    use relax_host_kernels::attention::{attention, decode_params, Operand, Output, SoftmaxGuard};
    let params = c
        .shapes
        .first()
        .ok_or_else(|| KernelError("attention: no parameters".into()))?;
    let p = decode_params(params, &c.floats)?;
    let big = relax_host_kernels::attention::work(&p.shape) >= relax_host_kernels::attention::PARALLEL_WORK;
    let body = || {
        c.run_widened(|ins, out, _| {
            let fill = p.fill_tensor as usize;
            if ins.len() != p.operands.len() + fill {
                return Err(KernelError(format!(
                    "attention: {} tensors for {} operands",
                    ins.len(),
                    p.operands.len() + fill
                )));
            }
            let mut shape = p.shape.clone();
            if fill == 1 {
                let Some(&[z]) = ins.last().map(|(d, _)| *d) else {
                    return Err(KernelError("attention: the fill value is not one element".into()));
                };
                shape.guard = SoftmaxGuard::NanFill(z);
            }
            let ops: Vec<Operand<'_>> = ins
                .iter()
                .zip(&p.operands)
                .zip(p.factors)
                .map(|(((data, _), l), factor)| Operand {
                    data,
                    rows_at: &l.rows_at,
                    key_stride: l.key_stride,
                    inner_stride: l.inner_stride,
                    factor,
                    offset: l.offset,
                })
                .collect();
            let output = Output {
                data: out,
                rows_at: &p.out_rows,
                inner_stride: p.out_inner,
            };
            attention(&shape, &ops[0], &ops[1], &ops[2], ops.get(3), output)
        })
    };
    // Enough work: the whole call on rayon's pool (one hand-over, see `register`).
    if big {
        rayon::scope(|_| body())
    } else {
        body()
    }
}

/// `vm.builtin.reshape(x, shape)`: `x` with another shape of the same number of
/// elements, a view of the same memory (no copy).
fn reshape_view(args: &[Value]) -> Result<Value> {
    let [Value::Tensor(t), Value::Shape(shape)] = args else {
        return Err(EngineError::Type(format!(
            "{}: expected a tensor and a shape",
            relax_transform::host_dispatch::RESHAPE_VIEW
        )));
    };
    let count = |s: &[i64]| {
        s.iter()
            .try_fold(1i64, |a, &d| if d < 0 { None } else { a.checked_mul(d) })
    };
    let (from, to) = (count(t.shape()), count(shape));
    if from.is_none() || from != to {
        return Err(EngineError::Invalid(format!(
            "{}: cannot view a tensor of shape {:?} as shape {:?}: the element counts differ",
            relax_transform::host_dispatch::RESHAPE_VIEW,
            t.shape(),
            &shape[..]
        )));
    }
    Ok(Value::Tensor(Tensor::from_storage(
        t.dtype(),
        shape.to_vec(),
        t.0.vdevice.clone(),
        t.0.storage.clone(),
        t.0.offset,
    )))
}

type KResult = std::result::Result<(), KernelError>;

/// Register the reduction `op` over trailing axes (the output's elements are rows).
fn reduce_kernel(r: Reduction, c: &Call) -> KResult {
    c.run(|ins, out, _| {
        let outer = out.len();
        let inner = ins[0].0.len().checked_div(outer).unwrap_or(0);
        elementwise::reduce_inner(r, ins[0].0, outer, inner, out)
    })
}

/// Products of at most this many rows (a short sequence through a linear layer) use
/// the weight packed ahead in panels: there it is faster than packing per call (32 x
/// 128 x 128: 7.5 us against 10-13 us). Taller ones read a `[n, k]` weight in place
/// and a `[k, n]` one from a copy as `[n, k]` rows ([`Layout::Rows`]; BERT-base's
/// 128 x 768 x 3072 through ONNX: 80 against 69 GFLOP/s on one core).
const PREPACKED_MAX_ROWS: i64 = 64;

/// Outputs with at least this many elements are computed on rayon's pool.
const PARALLEL_ELEMENTS: usize = 1 << 15;

/// An input: its elements and shape.
type In<'a> = (&'a [f32], &'a [usize]);

/// The arguments of one library call: tensors (the output last) and the other values.
struct Call {
    tensors: SmallVec<[Tensor; 4]>,
    shapes: SmallVec<[Vec<i64>; 2]>,
    floats: SmallVec<[f64; 4]>,
}

impl Call {
    fn new(args: &[Value]) -> Result<Call> {
        let mut c = Call {
            tensors: SmallVec::new(),
            shapes: SmallVec::new(),
            floats: SmallVec::new(),
        };
        for a in args {
            match a {
                Value::Tensor(t) => c.tensors.push(t.clone()),
                Value::Shape(s) => c.shapes.push(s.to_vec()),
                Value::Prim(p) => c.floats.push(p.as_f64()),
                other => {
                    return Err(EngineError::Type(format!(
                        "host library kernels take tensors, shapes and scalars, got {}",
                        other.describe()
                    )))
                }
            }
        }
        if c.tensors.len() < 2 {
            return Err(EngineError::Type(
                "host library kernels need an input and an output tensor".into(),
            ));
        }
        Ok(c)
    }

    /// Whether the call has enough work to run on rayon's pool as a whole: a
    /// convolution, a matrix product of at least [`SERIAL_WORK`] multiply-adds (a
    /// smaller one runs on this thread alone), or a large output.
    fn wants_pool(&self, kernel: HostKernel) -> bool {
        let out = self.output_len();
        match kernel {
            HostKernel::Matmul(_) => {
                let k = self
                    .tensors
                    .first()
                    .and_then(|t| t.shape().last().copied())
                    .map_or(0, |k| k.max(0) as usize);
                out.saturating_mul(k) >= SERIAL_WORK
            }
            // Decides for itself, from the work its parameters give.
            HostKernel::Attention => false,
            _ => kernel.is_heavy() || out >= PARALLEL_ELEMENTS,
        }
    }

    /// The cached packed form of a matrix product's shared 2-D right operand (the
    /// second tensor; `[n, k]` when `transposed`), when the product has rows enough
    /// to use one (panels up to [`PREPACKED_MAX_ROWS`], rows of a `[k, n]` operand
    /// past it), and the operand is not also
    /// the output's memory.
    fn weight_probe(&self, transposed: bool) -> Probe {
        let (Some(a), Some(w), Some(o)) = (self.tensors.first(), self.tensors.get(1), self.tensors.last()) else {
            return Probe::Skip;
        };
        let (ashape, wshape) = (a.shape(), w.shape());
        let rows: i64 = ashape.iter().rev().skip(1).product();
        // A few rows: panels; many: a `[k, n]` weight as `[n, k]` rows (a `[n, k]`
        // one is read in place).
        let layout = match (rows <= PREPACKED_MAX_ROWS, transposed) {
            (true, _) => Layout::Panels,
            (false, false) => Layout::Rows,
            (false, true) => return Probe::Skip,
        };
        if w.dtype() != DataType::FLOAT32
            || a.dtype() != DataType::FLOAT32
            || wshape.len() != 2
            || ashape.len() < 2
            || rows <= GEMV_ROWS as i64
            || w.shares_memory_with(o)
        {
            return Probe::Skip;
        }
        let (k, n) = if transposed {
            (wshape[1], wshape[0])
        } else {
            (wshape[0], wshape[1])
        };
        let (Ok(k), Ok(n)) = (usize::try_from(k), usize::try_from(n)) else {
            return Probe::Skip;
        };
        if k == 0 || n == 0 {
            return Probe::Skip;
        }
        let key = weight_cache::Key {
            offset: w.0.offset,
            k,
            n,
            transposed,
            layout,
        };
        weight_cache::probe(w, key)
    }

    /// Elements of the output (the last tensor argument).
    fn output_len(&self) -> usize {
        self.tensors
            .last()
            .map_or(0, |t| t.shape().iter().map(|&d| d.max(0) as usize).product())
    }

    /// The `i`-th shape argument as non-negative integers.
    fn shape_param(&self, i: usize) -> std::result::Result<Vec<usize>, KernelError> {
        let s = self
            .shapes
            .get(i)
            .ok_or_else(|| KernelError(format!("missing shape argument {i}")))?;
        s.iter()
            .map(|&v| usize::try_from(v).map_err(|_| KernelError(format!("negative parameter {v}"))))
            .collect()
    }

    /// Call `f` on the inputs' `f32` elements and the output's, in place when the
    /// memory is suitably aligned (copied otherwise).
    fn run(&self, f: impl FnOnce(&[In<'_>], &mut [f32], &[usize]) -> KResult) -> KResult {
        self.with_args(DataType::FLOAT32, |ins, bytes, shape| {
            as_f32_out(bytes, |out| f(ins, out, shape))
        })
    }

    /// Call `f` on the one input's and the output's 16-bit elements (bits, for data
    /// movement), both of the same 16-bit dtype.
    fn run_u16(&self, f: impl FnOnce(&[u16], &[usize], &mut [u16]) -> KResult) -> KResult {
        let [x, o] = self.tensors.as_slice() else {
            return Err(KernelError("expected one input and an output tensor".into()));
        };
        if x.dtype() != o.dtype() || x.dtype().bits != 16 {
            return Err(KernelError(format!(
                "expected 16-bit tensors of one dtype, got {} and {}",
                x.dtype(),
                o.dtype()
            )));
        }
        let staged = [StagedArg::Tensor(x.clone(), false), StagedArg::Tensor(o.clone(), true)];
        let mut stats = StagingStats::default();
        let r = with_kernel_args(&staged, &mut stats, |kargs| {
            let [a, out] = kargs else {
                return Err(KernelError("expected two tensors".into()));
            };
            let (Some(bytes), Some((_, shape))) = (a.host_bytes(), a.tensor_meta()) else {
                return Err(KernelError("scalar among tensor arguments".into()));
            };
            let xs: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]))
                .collect();
            let shape = dims(shape);
            let KernelArg::Write { bytes: ob, .. } = out else {
                return Err(KernelError("the output is not a writable tensor".into()));
            };
            let mut res = vec![0u16; ob.len() / 2];
            f(&xs, &shape, &mut res)?;
            for (d, v) in ob.chunks_exact_mut(2).zip(&res) {
                d.copy_from_slice(&v.to_le_bytes());
            }
            Ok(())
        });
        r.map_err(|e| KernelError(e.to_string()))?
    }

    /// `out = a @ wᵀ` with `a`, `w` (`[n, k]`) and `out` all of the 16-bit float
    /// dtype `kind`: computed in `f32` (every product and sum), rounded once at the end.
    /// `w` is read in place (`relax_host_kernels::gemv::matmul_bt_half`).
    fn matmul_bt_half(&self, kind: Half) -> KResult {
        let [a, w, o] = self.tensors.as_slice() else {
            return Err(KernelError("matmul_bt: expected two inputs and an output".into()));
        };
        if a.dtype() != w.dtype() || a.dtype() != o.dtype() {
            return Err(KernelError(format!(
                "matmul_bt: expected tensors of one dtype, got {}, {} and {}",
                a.dtype(),
                w.dtype(),
                o.dtype()
            )));
        }
        let staged = [
            StagedArg::Tensor(a.clone(), false),
            StagedArg::Tensor(w.clone(), false),
            StagedArg::Tensor(o.clone(), true),
        ];
        let mut stats = StagingStats::default();
        let r = with_kernel_args(&staged, &mut stats, |kargs| {
            let [ka, kw, ko] = kargs else {
                return Err(KernelError("matmul_bt: expected three tensors".into()));
            };
            let (Some(ab), Some((_, ashape)), Some(wb), Some((_, wshape))) =
                (ka.host_bytes(), ka.tensor_meta(), kw.host_bytes(), kw.tensor_meta())
            else {
                return Err(KernelError("matmul_bt: scalar among tensor arguments".into()));
            };
            let (ashape, wshape) = (dims(ashape), dims(wshape));
            let KernelArg::Write { shape, bytes: ob, .. } = ko else {
                return Err(KernelError("matmul_bt: the output is not a writable tensor".into()));
            };
            let oshape = dims(shape);
            let (&[n, k], Some(&ka_k), true) = (wshape.as_slice(), ashape.last(), ashape.len() >= 2) else {
                return Err(KernelError(format!(
                    "matmul_bt: expected a matrix of rank >= 2 and a 2-D weight, got {ashape:?} and {wshape:?}"
                )));
            };
            let rows: usize = ashape[..ashape.len() - 1].iter().product();
            let mut want = ashape.clone();
            if let Some(l) = want.last_mut() {
                *l = n;
            }
            if ka_k != k || oshape != want {
                return Err(KernelError(format!(
                    "matmul_bt: operands {ashape:?} x {wshape:?}^T do not give the output {oshape:?}"
                )));
            }
            let mut af = vec![0f32; rows * k];
            widen_half(kind, ab, &mut af)?;
            let mut out = vec![0f32; rows * n];
            relax_host_kernels::gemv::matmul_bt_half(kind, rows, k, n, &af, wb, &mut out)?;
            if ob.len() != out.len() * 2 {
                return Err(KernelError("matmul_bt: output size mismatch".into()));
            }
            store_half(kind, &out, ob);
            Ok(())
        });
        r.map_err(|e| KernelError(e.to_string()))?
    }

    /// Every tensor as a staged kernel argument, the last (the output) written.
    fn staged(&self) -> SmallVec<[StagedArg; 6]> {
        let n = self.tensors.len();
        self.tensors
            .iter()
            .enumerate()
            .map(|(i, t)| StagedArg::Tensor(t.clone(), i + 1 == n))
            .collect()
    }

    /// [`Call::run`] for tensors of `float32`, `float16` or `bfloat16`: 16-bit inputs
    /// are widened to `f32` (exactly), and `f`'s `f32` result is rounded once to the
    /// output's dtype (to nearest, ties to even).
    fn run_widened(&self, f: impl FnOnce(&[In<'_>], &mut [f32], &[usize]) -> KResult) -> KResult {
        let kinds: SmallVec<[Option<Half>; 6]> = self.tensors.iter().map(|t| half_kind(t.dtype())).collect();
        if kinds.iter().all(Option::is_none) {
            return self.run(f);
        }
        for t in &self.tensors {
            if t.dtype() != DataType::FLOAT32 && half_kind(t.dtype()).is_none() {
                return Err(KernelError(format!("expected float tensors, got {}", t.dtype())));
            }
        }
        let staged = self.staged();
        let mut stats = StagingStats::default();
        let r = with_kernel_args(&staged, &mut stats, |kargs| {
            let (outs, ins) = kargs.split_last_mut().ok_or_else(|| KernelError("no output".into()))?;
            let mut inputs: SmallVec<[(Cow<'_, [f32]>, Dims); 4]> = SmallVec::new();
            for (a, kind) in ins.iter().zip(&kinds) {
                inputs.push(read_input(a, *kind)?);
            }
            let KernelArg::Write { shape, bytes, .. } = outs else {
                return Err(KernelError("the output is not a writable tensor".into()));
            };
            let out_shape = dims(shape);
            let refs: SmallVec<[In<'_>; 4]> = inputs.iter().map(|(d, s)| (d.as_ref(), &s[..])).collect();
            match kinds.last().copied().flatten() {
                None => as_f32_out(bytes, |out| f(&refs, out, &out_shape)),
                Some(kind) => {
                    let mut out = vec![0f32; bytes.len() / 2];
                    f(&refs, &mut out, &out_shape)?;
                    store_half(kind, &out, bytes);
                    Ok(())
                }
            }
        });
        r.map_err(|e| KernelError(e.to_string()))?
    }

    /// [`Call::run`] for an `int64` output (computed aside, then stored).
    /// [`Call::run`] for a kernel whose argument `at` is an `int64` or `int32` tensor
    /// of indices, given to `f` as `i64`s apart from the other inputs.
    fn run_with_indices(
        &self,
        at: usize,
        f: impl FnOnce(&[In<'_>], &[i64], &mut [f32], &[usize]) -> KResult,
    ) -> KResult {
        let t = self
            .tensors
            .get(at)
            .ok_or_else(|| KernelError(format!("missing index argument {at}")))?;
        let read = |e: EngineError| KernelError(e.to_string());
        let idx: Vec<i64> = match t.dtype() {
            d if d == DataType::INT64 => t.to_array::<i64>().map_err(read)?.iter().copied().collect(),
            d if d == DataType::INT32 => t
                .to_array::<i32>()
                .map_err(read)?
                .iter()
                .map(|&v| i64::from(v))
                .collect(),
            d => return Err(KernelError(format!("indices of {d}, expected int64 or int32"))),
        };
        self.with_args_except(DataType::FLOAT32, Some(at), |ins, bytes, shape| {
            as_f32_out(bytes, |out| f(ins, &idx, out, shape))
        })
    }

    fn run_i64(&self, f: impl FnOnce(&[In<'_>], &mut [i64], &[usize]) -> KResult) -> KResult {
        self.with_args(DataType::INT64, |ins, bytes, shape| {
            let mut tmp = vec![0i64; bytes.len() / 8];
            f(ins, &mut tmp, shape)?;
            for (dst, v) in bytes.chunks_exact_mut(8).zip(&tmp) {
                dst.copy_from_slice(&v.to_le_bytes());
            }
            Ok(())
        })
    }

    /// Call `f` on the inputs' `f32` elements (borrowed when aligned) and the output's
    /// bytes, after checking that the inputs are `float32` and the output `out`.
    fn with_args(&self, out: DataType, f: impl FnOnce(&[In<'_>], &mut [u8], &[usize]) -> KResult) -> KResult {
        self.with_args_except(out, None, f)
    }

    /// [`Call::with_args`] leaving out input `skip` (read by the caller).
    fn with_args_except(
        &self,
        out: DataType,
        skip: Option<usize>,
        f: impl FnOnce(&[In<'_>], &mut [u8], &[usize]) -> KResult,
    ) -> KResult {
        let n = self.tensors.len();
        for (i, t) in self.tensors.iter().enumerate() {
            if Some(i) == skip {
                continue;
            }
            let want = if i + 1 == n { out } else { DataType::FLOAT32 };
            if t.dtype() != want {
                return Err(KernelError(format!("expected {want} tensors, got {}", t.dtype())));
            }
        }
        let staged = self.staged();
        let mut stats = StagingStats::default();
        let r = with_kernel_args(&staged, &mut stats, |kargs| {
            let (outs, ins) = kargs.split_last_mut().ok_or_else(|| KernelError("no output".into()))?;
            let mut inputs: SmallVec<[(Cow<'_, [f32]>, Dims); 4]> = SmallVec::new();
            for (_, a) in ins.iter().enumerate().filter(|&(i, _)| Some(i) != skip) {
                inputs.push(read_input(a, None)?);
            }
            let KernelArg::Write { shape, bytes, .. } = outs else {
                return Err(KernelError("the output is not a writable tensor".into()));
            };
            let out_shape = dims(shape);
            let refs: SmallVec<[In<'_>; 4]> = inputs.iter().map(|(d, s)| (d.as_ref(), &s[..])).collect();
            f(&refs, bytes, &out_shape)
        });
        r.map_err(|e| KernelError(e.to_string()))?
    }
}

/// `f` on the output bytes as `f32`s: in place when aligned, else through a copy
/// written back.
fn as_f32_out(bytes: &mut [u8], f: impl FnOnce(&mut [f32]) -> KResult) -> KResult {
    match bytemuck_cast_mut(bytes) {
        Some(out) => f(out),
        None => {
            let mut tmp = vec![0f32; bytes.len() / 4];
            f(&mut tmp)?;
            for (dst, v) in bytes.chunks_exact_mut(4).zip(&tmp) {
                dst.copy_from_slice(&v.to_le_bytes());
            }
            Ok(())
        }
    }
}

/// The 16-bit float format of `d`, if it is `float16` or `bfloat16`.
/// A staged input tensor's elements as `f32` (widened from the 16-bit float `kind`)
/// and its shape.
fn read_input<'a>(
    a: &'a KernelArg<'_>,
    kind: Option<Half>,
) -> std::result::Result<(Cow<'a, [f32]>, Dims), KernelError> {
    let (Some(bytes), Some((_, shape))) = (a.host_bytes(), a.tensor_meta()) else {
        return Err(KernelError("scalar among tensor arguments".into()));
    };
    let data = match kind {
        None => as_f32(bytes),
        Some(k) => {
            let mut v = vec![0f32; bytes.len() / 2];
            widen_half(k, bytes, &mut v)?;
            Cow::Owned(v)
        }
    };
    Ok((data, dims(shape)))
}

/// `out` rounded to the 16-bit float `kind` (to nearest, ties to even) into the
/// little-endian `bytes` (two per value).
fn store_half(kind: Half, out: &[f32], bytes: &mut [u8]) {
    let bits: Vec<u16> = match kind {
        Half::F16 => {
            let mut bits = vec![0u16; out.len()];
            relax_host_kernels::math::narrow_f16_slice(out, &mut bits);
            bits
        }
        Half::Bf16 => out.iter().map(|v| half::bf16::from_f32(*v).to_bits()).collect(),
    };
    for (d, b) in bytes.chunks_exact_mut(2).zip(&bits) {
        d.copy_from_slice(&b.to_le_bytes());
    }
}

fn half_kind(d: DataType) -> Option<Half> {
    if d == DataType::FLOAT16 {
        Some(Half::F16)
    } else if d.is_float() && d.bits == 16 && d.lanes == 1 {
        Some(Half::Bf16)
    } else {
        None
    }
}

/// A shape as non-negative extents (no heap allocation up to rank 6).
type Dims = SmallVec<[usize; 6]>;

fn dims(shape: &[i64]) -> Dims {
    shape.iter().map(|&d| d.max(0) as usize).collect()
}

/// The bytes as `f32`s: borrowed when aligned, else decoded.
fn as_f32(bytes: &[u8]) -> Cow<'_, [f32]> {
    if bytes.as_ptr().align_offset(std::mem::align_of::<f32>()) == 0 && bytes.len().is_multiple_of(4) {
        // SAFETY: aligned, the length is a multiple of 4 and every bit pattern is an f32.
        Cow::Borrowed(unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const f32, bytes.len() / 4) })
    } else {
        Cow::Owned(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
    }
}

fn bytemuck_cast_mut(bytes: &mut [u8]) -> Option<&mut [f32]> {
    if bytes.as_ptr().align_offset(std::mem::align_of::<f32>()) == 0 && bytes.len().is_multiple_of(4) {
        // SAFETY: as in `as_f32`, and the borrow is exclusive.
        Some(unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut f32, bytes.len() / 4) })
    } else {
        None
    }
}

fn conv2d_kernel(f: ConvFusion, c: &Call) -> KResult {
    let p = c.shape_param(0)?;
    let [sh, sw, pt, pl, pb, pr, dh, dw, groups] = p.as_slice() else {
        return Err(KernelError(format!("conv2d: expected 9 parameters, got {}", p.len())));
    };
    let (bias, bn, residual, relu) = (f.bias, f.bn, f.add, f.relu);
    let eps = c.floats.first().copied().unwrap_or(1e-5);
    c.run(|ins, out, out_shape| {
        let want = 2 + bias as usize + 4 * bn as usize + residual as usize;
        if ins.len() != want {
            return Err(KernelError(format!(
                "conv2d: expected {want} inputs, got {}",
                ins.len()
            )));
        }
        let (xs, ws) = (&ins[0].1, &ins[1].1);
        if xs.len() != 4 || ws.len() != 4 || out_shape.len() != 4 {
            return Err(KernelError("conv2d: expected 4-D data, weight and output".into()));
        }
        let s = Conv2dShape {
            n: xs[0],
            c_in: xs[1],
            h: xs[2],
            w: xs[3],
            c_out: ws[0],
            kh: ws[2],
            kw: ws[3],
            stride: [*sh, *sw],
            pad: [*pt, *pl, *pb, *pr],
            dilation: [*dh, *dw],
            groups: *groups,
        };
        let (oh, ow) = s.out_hw()?;
        if out_shape != [s.n, s.c_out, oh, ow] || s.c_in != ws[1] * s.groups.max(1) {
            return Err(KernelError(format!(
                "conv2d: data {xs:?}, weight {ws:?} and output {out_shape:?} do not match"
            )));
        }
        let folded;
        let mut ep = Epilogue {
            relu,
            ..Epilogue::default()
        };
        let mut next = 2;
        let bias_v = bias.then(|| ins[2].0);
        next += bias as usize;
        if bn {
            let (scale, mut shift) =
                elementwise::batch_norm_fold(ins[next].0, ins[next + 1].0, ins[next + 2].0, ins[next + 3].0, eps)?;
            if let Some(b) = bias_v {
                // bn(y + b) = s (y + b) + t = s y + (s b + t).
                if b.len() != shift.len() {
                    return Err(KernelError("conv2d: bias and batch norm sizes differ".into()));
                }
                for ((t, s), b) in shift.iter_mut().zip(&scale).zip(b) {
                    *t += s * b;
                }
            }
            folded = (scale, shift);
            ep.scale = Some(&folded.0);
            ep.shift = Some(&folded.1);
            next += 4;
        } else {
            ep.shift = bias_v;
        }
        if residual {
            ep.residual = Some(ins[next].0);
        }
        conv2d(&s, ins[0].0, ins[1].0, &ep, out)
    })
}

fn matmul_kernel(f: MatmulFusion, c: &Call) -> KResult {
    let (bt, bias, relu) = (f.transposed_b, f.bias, f.relu);
    if let Some(kind) = c.tensors.first().and_then(|t| half_kind(t.dtype())) {
        if !bt || bias || relu {
            return Err(KernelError("16-bit floats only as `matmul_bt`".into()));
        }
        return c.matmul_bt_half(kind);
    }
    let probe = c.weight_probe(bt);
    c.run(|ins, out, out_shape| {
        if ins.len() != 2 + bias as usize {
            return Err(KernelError("matmul: wrong number of inputs".into()));
        }
        let (a, b) = (&ins[0], &ins[1]);
        let (ra, rb) = (a.1.len(), b.1.len());
        if ra < 2 || rb < 2 {
            return Err(KernelError("matmul: operands must be at least 2-D".into()));
        }
        let (m, k) = (a.1[ra - 2], a.1[ra - 1]);
        let (k2, n) = if bt {
            (b.1[rb - 1], b.1[rb - 2])
        } else {
            (b.1[rb - 2], b.1[rb - 1])
        };
        if k != k2 {
            return Err(KernelError(format!("matmul: inner dimensions {k} and {k2} differ")));
        }
        let batch: usize = a.1[..ra - 2].iter().product();
        let b_batched = rb > 2;
        if b_batched && (bt || b.1[..rb - 2] != a.1[..ra - 2]) {
            return Err(KernelError("matmul: batch dimensions differ".into()));
        }
        if out.len() != batch * m * n || out_shape.last() != Some(&n) {
            return Err(KernelError(format!("matmul: output {out_shape:?} does not match")));
        }
        let prepacked = match probe {
            Probe::Hit(p) if (p.k(), p.n()) == (k, n) => Some(p),
            Probe::Pack(owner, key) if (key.k, key.n) == (k, n) => {
                let bm = if bt {
                    MatRef {
                        data: b.0,
                        rs: 1,
                        cs: k,
                    }
                } else {
                    MatRef::row_major(b.0, n)
                };
                let packed = match key.layout {
                    Layout::Panels => PackedB::pack(k, n, bm)?,
                    Layout::Rows => PackedB::rows(k, n, bm)?,
                };
                packed.map(|p| {
                    let p = Arc::new(p);
                    weight_cache::store(owner, key, b.0.as_ptr() as *const u8, p.clone());
                    p
                })
            }
            _ => None,
        };
        if let Some(p) = prepacked.filter(|_| !b_batched && batch * m > GEMV_ROWS) {
            // The weight packed ahead (this call or an earlier one).
            gemm_prepacked(batch * m, a.0, k, &p, out, true)?;
        } else if bt && batch * m <= GEMV_ROWS {
            // A few rows: dot products with the rows of `b` (`[n, k]`), read in order.
            gemv(batch * m, k, n, a.0, b.0, true, out)?;
        } else if bt {
            // `b` is `[n, k]`: read it with swapped strides.
            let bm = MatRef {
                data: b.0,
                rs: 1,
                cs: k,
            };
            sgemm_parallel(
                batch * m,
                k,
                n,
                MatRef::row_major(a.0, k),
                bm,
                out,
                &Epilogue::default(),
                0,
            )?;
        } else {
            matmul(batch, m, k, n, a.0, true, b.0, b_batched, out)?;
        }
        // Outputs whose data overflows take TVM's sequential order.
        let product = Product {
            batch,
            m,
            k,
            n,
            a: a.0,
            a_batched: true,
            b: b.0,
            b_batched,
            b_transposed: bt,
        };
        ordered::finish(&product, out)?;
        if bias || relu {
            let bv = if bias { Some(ins[2].0) } else { None };
            if bv.is_some_and(|b| b.len() != n) {
                return Err(KernelError(
                    "matmul: bias length differs from the output's last axis".into(),
                ));
            }
            for row in out.chunks_mut(n.max(1)) {
                if let Some(b) = bv {
                    row.iter_mut().zip(b).for_each(|(o, b)| *o += b);
                }
                if relu {
                    row.iter_mut().for_each(|o| *o = o.max(0.0));
                }
            }
        }
        Ok(())
    })
}

fn binary_kernel(op: BinaryOp, relu: bool, c: &Call) -> KResult {
    c.run(|ins, out, shape| {
        let [a, b] = ins else {
            return Err(KernelError("expected two inputs".into()));
        };
        elementwise::binary(op, a.0, a.1, b.0, b.1, out, shape, relu)
    })
}

fn pool_kernel(max: bool, c: &Call) -> KResult {
    let p = c.shape_param(0)?;
    let [ph, pw, sh, sw, pt, pl, pb, pr, dh, dw, include_pad] = p.as_slice() else {
        return Err(KernelError(format!("pool2d: expected 11 parameters, got {}", p.len())));
    };
    let kind = if max {
        PoolKind::Max
    } else {
        PoolKind::Avg {
            count_include_pad: *include_pad != 0,
        }
    };
    c.run(|ins, out, os| {
        let xs = &ins[0].1;
        if xs.len() != 4 || os.len() != 4 || xs[..2] != os[..2] {
            return Err(KernelError(format!(
                "pool2d: input {xs:?} and output {os:?} do not match"
            )));
        }
        let s = Pool2dShape {
            planes: xs[0] * xs[1],
            h: xs[2],
            w: xs[3],
            oh: os[2],
            ow: os[3],
            pool: [*ph, *pw],
            stride: [*sh, *sw],
            pad: [*pt, *pl, *pb, *pr],
            dilation: [*dh, *dw],
        };
        pool2d(&s, kind, ins[0].0, out)
    })
}
