//! `DispatchHostLibrary`: offload eligible operator calls to the host kernel library,
//! the way TVM's BYOC flow offloads to BLAS or DNNL.
//!
//! Every `float32` call of a supported operator with static shapes whose tensors are
//! on the host (placed on a host `VDevice`, or unplaced when unplaced work runs on the
//! host, see [`DispatchOptions`]) becomes
//! `R.call_dps_packed("relax_host.<kernel>", (args...), out_sinfo=...)`; attributes
//! travel as `R.shape([...])` (integers) and `R.prim_value(...)` (floats) arguments,
//! so the result prints and re-parses as TVMScript. Runs on a normalized module
//! (every bound variable carries its StructInfo), before `LegalizeOps`; calls it
//! does not rewrite are left for legalization.
//!
//! Patterns fused into one library call (intermediate results used exactly once):
//! - `conv2d -> (add bias)? -> batch_norm[0]? -> (add residual)? -> relu?`
//!   (`relax_host.conv2d[_bias][_bn][_add][_relu]`)
//! - `matmul -> (add bias)? -> relu?` (`relax_host.matmul[_bt][_bias][_relu]`),
//!   reading the untransposed matrix (`_bt`) when the right operand is the transpose
//!   of a 2-D matrix used only there (ONNX `Gemm` with `transB`, `nn.Linear`). This
//!   one form, `x @ permute_dims(W)` -> `relax_host.matmul_bt(x, W)`, also takes `x`
//!   with symbolic leading axes (prefill over a symbolic sequence length) and
//!   `float16` / `bfloat16` operands (the kernel reads the 16-bit weights directly,
//!   computing in `f32`), so no transposed copy of a weight is made per call
//! - `add | subtract | multiply | divide -> relu?` (broadcasting,
//!   `relax_host.<op>[_relu]`), and ONNX's two-operand `Sum` as TVM imports it,
//!   `sum(stack((a, b)), axis=[0])`, as an `add`
//!
//! - `softmax -> where(guard, 0 | full_like(p, 0), p)` with torch's guard for fully
//!   masked rows (`_safe_softmax`, see `safe_softmax.rs`): `relax_host.safe_softmax`
//! - `softmax -> where(isnan(p), fill, p)` with a one-element `fill` (ONNX exports'
//!   guard, `fill` a weight or a constant): `relax_host.softmax_nan_fill`
//! - GELU's tanh form spelled out step by step (`(x * 0.5) * (tanh((x + x ** 3 *
//!   0.044715) * sqrt(2 / pi)) + 1)`, the scalars constants or weights):
//!   `relax_host.gelu_tanh_chain` (see `gelu.rs`); RMS normalization spelled out,
//!   `relax_host.rms_norm_chain` (see `rms_norm.rs`)
//! - rotary embeddings' `rotate_half`, `concat((-x[..., h:], x[..., :h]), axis=-1)`
//!   spelled as two slices and a negation: `relax_host.rotate_half` (see `rotary.rs`)
//!
//! `power(x, y)` with a constant `y` of 2 or 3 (`relax_host.square`, `cube`) or a
//! one-element `y` read at run time (`relax_host.power`, ONNX's `Pow` exponent kept
//! as a weight).
//! `argmax`/`argmin` over the last axis or all elements (`relax_host.argmax`, `argmin`).
//! `take(data, indices, axis=0)` of a `float32` matrix with `int64`/`int32` indices
//! (embedding lookups): `relax_host.take_rows`, `take_rows_clip`, `take_rows_wrap` by `mode`.
//! Unary elementwise operators: `exp`, `log`, `sqrt`, `rsqrt`, `sigmoid`, `tanh`,
//! `negative`, `abs`, `square` (`relax_host.<op>`), `nn.gelu` and `nn.gelu_tanh`
//! (`relax_host.gelu`, `gelu_tanh`: TVM's legalized formulas, step for step, in vector
//! lanes).
//! `reshape` and `squeeze` (and `expand_dims` on the host) become a view of the same memory on whatever device
//! (`vm.builtin.reshape`, as TVM's VM lowers reshape), which checks at run time that the
//! element count is kept (symbolic shapes included); a squeeze only where nothing writes
//! its input or result in place. Single operators: `relu`, `add`, inference `dropout` (an alias of its input), `max_pool2d`, `avg_pool2d`, `softmax` over the last axis, `permute_dims`, `concat`,
//! `broadcast_to` (an identity `broadcast_to` becomes an alias).
//!
//! Argument conventions of the kernels (outputs are appended by `call_dps_packed`):
//! - `conv2d*`: `x, w, R.shape([stride_h, stride_w, pad_top, pad_left, pad_bottom,
//!   pad_right, dilation_h, dilation_w, groups])`, then `bias` (`_bias`: any tensor of
//!   `C_out` elements), then `gamma, beta, mean, var, R.prim_value(eps)` (`_bn`), then
//!   the residual (`_add`).
//! - `matmul*`: `a, b` (`_bt`: `b` is `[N, K]`, transposed), then `bias` (`_bias`: `N`
//!   elements).
//! - `max_pool2d`, `avg_pool2d`: `x, R.shape([pool_h, pool_w, stride_h, stride_w,
//!   pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w,
//!   count_include_pad])`.
//! - `permute_dims`: `x, R.shape(axes)`; `concat`: the parts, then `R.shape([axis])`.
//! - `layer_norm`: `x, gamma, beta, R.shape([normalized axes]), R.prim_value(eps)`;
//!   `batch_norm`: `x, gamma, beta, mean, var, R.prim_value(eps)`.
//! - elementwise operators, `sum`/`mean`/`max`/`min`, `softmax`, `broadcast_to`: the
//!   tensor operands.
//!
//! Attention is made a library call (`relax_host.attention`) by `fuse-attention`,
//! which recognises it (`crate::attention`); a `permute_dims` of a `permute_dims`
//! used only there becomes one call with the composed axes.

use std::collections::{HashMap, HashSet};

use relax_ir::relax::{BindingBlock, Call, Function, SeqExpr};
use relax_ir::visit::for_each_expr;
use relax_ir::{
    AttrValue, Attrs, BaseFunc, Binding, DataType, Diagnostic, Expr, ExprKind, IRModule, PrimExpr, StructInfo, VDevice,
    Var,
};

use relax_host_kernels::elementwise::{BinaryOp, Reduction, TakeMode, UnaryOp};
use relax_host_kernels::library::{ConvFusion, HostKernel, MatmulFusion, SYMBOL_PREFIX};

use crate::legalize::arg_struct_info;

mod conv;
mod gelu;
mod matmul;
mod rms_norm;
mod rotary;

/// Prefix of the global symbols of the host kernel library.
pub const PREFIX: &str = SYMBOL_PREFIX;

/// The host-library operator of the Relax elementwise operator `name`
/// (`relax.exp` ...).
fn relax_unary(name: &str) -> Option<UnaryOp> {
    UnaryOp::from_name(name.strip_prefix("relax.")?)
}

/// The runtime builtin that reshapes a tensor as a view of the same memory (TVM's
/// name): `reshape` of a host tensor becomes
/// `R.call_pure_packed("vm.builtin.reshape", x, R.shape([...]), sinfo_args=...)`.
pub const RESHAPE_VIEW: &str = "vm.builtin.reshape";

/// Target kinds whose tensors live in GPU memory: calls touching them stay put.
const GPU_KINDS: &[&str] = &["webgpu", "vulkan", "metal", "cuda", "rocm", "opencl"];

/// Where the dispatch applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchOptions {
    /// Tensors without a `VDevice` live on the host (the engine runs unplaced work
    /// there); when false only tensors placed on a host `VDevice` qualify.
    pub unplaced_on_host: bool,
}

impl Default for DispatchOptions {
    fn default() -> DispatchOptions {
        DispatchOptions { unplaced_on_host: true }
    }
}

/// Rewrite eligible operator calls of every Relax function of `module` into calls of
/// the host kernel library (see the module documentation), treating unplaced tensors
/// as host tensors. The module must be normalized.
pub fn dispatch_host_library(module: &IRModule) -> Result<IRModule, Diagnostic> {
    dispatch_host_library_with(module, DispatchOptions::default())
}

/// [`dispatch_host_library`] with explicit [`DispatchOptions`].
pub fn dispatch_host_library_with(module: &IRModule, options: DispatchOptions) -> Result<IRModule, Diagnostic> {
    let mut out = module.clone();
    for (gv, f) in &module.functions {
        if let BaseFunc::Relax(f) = f {
            out.functions.insert(gv.clone(), BaseFunc::Relax(function(f, options)));
        }
    }
    Ok(out)
}

fn function(f: &Function, options: DispatchOptions) -> Function {
    let uses = relax_ir::visit::var_use_counts(&f.body);
    let inplace = inplace_targets(&f.body);
    Function {
        body: expr(&f.body, &uses, &inplace, options),
        ..f.clone()
    }
}

/// Variables some call of the function writes in place (`call_tir_inplace`,
/// `call_inplace_packed` at their `inplace_indices`): a view of one of them (or one of
/// them being a view) would see writes that a copy does not.
fn inplace_targets(body: &Expr) -> HashSet<u64> {
    let mut out = HashSet::new();
    for_each_expr(body, &mut |e| {
        let ExprKind::Call(c) = e.kind() else { return };
        let args: Vec<&Expr> = match c.op.as_op() {
            Some("relax.call_tir_inplace") => match c.args.get(1).map(|a| a.kind()) {
                Some(ExprKind::Tuple(items)) => items.iter().collect(),
                Some(_) => c.args.get(1).into_iter().collect(),
                None => vec![],
            },
            Some("relax.call_inplace_packed") => c.args.iter().skip(1).collect(),
            _ => return,
        };
        // Unreadable indices: every argument counts as written.
        let indices = match c.attrs.get("inplace_indices") {
            Some(AttrValue::List(v)) => v.iter().map(|a| a.as_int().unwrap_or(-1)).collect(),
            Some(a) => vec![a.as_int().unwrap_or(-1)],
            None => vec![],
        };
        let indices: Vec<i64> = if indices.iter().any(|&i| i < 0) {
            (0..args.len() as i64).collect()
        } else {
            indices
        };
        for i in indices {
            if let Some(ExprKind::Var(v)) = usize::try_from(i).ok().and_then(|i| args.get(i)).map(|a| a.kind()) {
                out.insert(v.id());
            }
        }
    });
    out
}

fn expr(e: &Expr, uses: &HashMap<u64, usize>, inplace: &HashSet<u64>, options: DispatchOptions) -> Expr {
    match e.kind() {
        ExprKind::Seq(s) => Expr::with_span(
            ExprKind::Seq(SeqExpr {
                blocks: s.blocks.iter().map(|b| block(b, uses, inplace, options)).collect(),
                body: s.body.clone(),
            }),
            e.span(),
        ),
        ExprKind::If {
            cond,
            then_branch,
            else_branch,
        } => Expr::with_span(
            ExprKind::If {
                cond: cond.clone(),
                then_branch: expr(then_branch, uses, inplace, options),
                else_branch: expr(else_branch, uses, inplace, options),
            },
            e.span(),
        ),
        _ => e.clone(),
    }
}

/// A static float32 tensor: its shape and VDevice.
struct TensorInfo {
    shape: Vec<i64>,
    vdevice: Option<VDevice>,
}

fn static_tensor(si: &StructInfo) -> Option<TensorInfo> {
    static_tensor_if(si, |d| d == DataType::FLOAT32)
}

/// Data movement (`permute_dims`) takes 16-bit floats too: it moves bits.
fn movable(d: DataType) -> bool {
    d == DataType::FLOAT32 || (d.is_float() && d.bits == 16 && d.lanes == 1)
}

/// Dtypes of the matrix `W` of `relax_host.matmul_bt(x, W)`: the kernel reads
/// 16-bit floats directly, widening them in registers.
fn gemm_dtype(d: DataType) -> bool {
    movable(d)
}

/// A static tensor whose dtype `ok` accepts.
fn static_tensor_if(si: &StructInfo, ok: impl Fn(DataType) -> bool) -> Option<TensorInfo> {
    let t = si.as_tensor()?;
    if !ok(t.dtype) {
        return None;
    }
    let shape = t
        .shape_values()?
        .iter()
        .map(PrimExpr::as_int)
        .collect::<Option<Vec<_>>>()?;
    Some(TensorInfo {
        shape,
        vdevice: t.vdevice.clone(),
    })
}

fn ints(call: &Call, key: &str) -> Option<Vec<i64>> {
    call.attrs.get(key).and_then(AttrValue::as_int_list)
}

fn shape_arg(values: &[i64]) -> Expr {
    Expr::shape(values.iter().map(|&v| PrimExpr::int(v)).collect())
}

fn op_name(call: &Call) -> Option<&str> {
    call.op.as_op()
}

/// Padding as (top, left, bottom, right) from TVM's 1-, 2- or 4-element forms.
fn padding4(p: &[i64]) -> Option<[i64; 4]> {
    match p {
        [a] => Some([*a; 4]),
        [a, b] => Some([*a, *b, *a, *b]),
        [a, b, c, d] => Some([*a, *b, *c, *d]),
        _ => None,
    }
}

fn pair(p: &[i64]) -> Option<[i64; 2]> {
    match p {
        [a] => Some([*a, *a]),
        [a, b] => Some([*a, *b]),
        _ => None,
    }
}

/// Whether attribute `key` of `call` is unset (absent, `None`, empty or `"void"`) or `want`.
fn is_none_or(call: &Call, key: &str, want: &str) -> bool {
    match call.attrs.get(key) {
        None | Some(AttrValue::None) => true,
        // "void" is TVM's unset dtype (the operands' own, which callers check).
        Some(AttrValue::Str(s)) => s.is_empty() || s == "void" || s == want,
        Some(AttrValue::DataType(d)) => d.is_void() || d.to_string() == want,
        _ => false,
    }
}

fn dps(kernel: HostKernel, args: Vec<Expr>, out: &Var) -> Option<Expr> {
    let out_sinfo = out.struct_info()?.clone();
    Some(Expr::call(
        Expr::op("relax.call_dps_packed"),
        vec![
            Expr::new(ExprKind::ExternFunc {
                global_symbol: kernel.symbol(),
            }),
            Expr::tuple(args),
        ],
        Attrs::new(),
        vec![out_sinfo],
    ))
}

/// A kernel call being grown along a chain of single-use bindings: its kernel
/// (`conv2d_bias_relu`...), its arguments, the variable its result reaches so far
/// (`cur`, bound at `last`) and the bindings it has absorbed.
struct Fused {
    kernel: HostKernel,
    args: Vec<Expr>,
    cur: Var,
    last: usize,
    chain: Vec<usize>,
}

impl Fused {
    /// A call of `kernel` on `args` producing `var`, bound at `at`.
    fn new(kernel: HostKernel, args: Vec<Expr>, var: &Var, at: usize) -> Fused {
        Fused {
            kernel,
            args,
            cur: var.clone(),
            last: at,
            chain: vec![],
        }
    }

    /// Absorb the binding `at` (of `var`): the call becomes one of `kernel`.
    fn absorb(&mut self, at: usize, var: &Var, kernel: HostKernel) {
        self.kernel = kernel;
        self.chain.push(self.last);
        (self.cur, self.last) = (var.clone(), at);
    }
}

/// The rewriting of one binding block.
struct BlockRewrite<'a> {
    bindings: &'a [Binding],
    uses: &'a HashMap<u64, usize>,
    /// Variables written in place somewhere in the function (see `inplace_targets`).
    inplace: &'a HashSet<u64>,
    options: DispatchOptions,
    /// Index of the binding defining each variable of the block.
    def: HashMap<u64, usize>,
    /// Indices of the bindings (of this block) using each variable.
    users: HashMap<u64, Vec<usize>>,
    /// Bindings replaced (`Some`) or removed (`None`).
    replaced: HashMap<usize, Option<Binding>>,
}

fn block(
    b: &BindingBlock,
    uses: &HashMap<u64, usize>,
    inplace: &HashSet<u64>,
    options: DispatchOptions,
) -> BindingBlock {
    let mut rw = BlockRewrite {
        bindings: &b.bindings,
        uses,
        inplace,
        options,
        def: HashMap::new(),
        users: HashMap::new(),
        replaced: HashMap::new(),
    };
    for (i, bd) in b.bindings.iter().enumerate() {
        rw.def.insert(bd.var().id(), i);
        let mut seen = HashSet::new();
        for_each_expr(bd.value(), &mut |e| {
            if let ExprKind::Var(v) = e.kind() {
                if seen.insert(v.id()) {
                    rw.users.entry(v.id()).or_default().push(i);
                }
            }
        });
    }
    for i in 0..b.bindings.len() {
        if rw.replaced.contains_key(&i) {
            continue;
        }
        rw.rewrite(i);
    }
    let bindings = b
        .bindings
        .iter()
        .enumerate()
        .filter_map(|(i, bd)| match rw.replaced.remove(&i) {
            Some(new) => new,
            None => Some(bd.clone()),
        })
        .collect();
    BindingBlock {
        bindings,
        is_dataflow: b.is_dataflow,
        span: b.span,
    }
}

impl BlockRewrite<'_> {
    fn on_host(&self, t: &TensorInfo) -> bool {
        match &t.vdevice {
            None => self.options.unplaced_on_host,
            Some(vd) => !GPU_KINDS.contains(&vd.target.kind.as_str()),
        }
    }

    /// Whether `si` is a `float32` (or, with `f16`, `float16`) tensor of known rank
    /// on the host (static or symbolic extents).
    fn host_tensor_of(&self, si: &StructInfo, f16: bool) -> bool {
        si.as_tensor().is_some_and(|t| {
            (t.dtype == DataType::FLOAT32 || (f16 && t.dtype == DataType::FLOAT16))
                && t.shape_values().is_some()
                && self.on_host(&TensorInfo {
                    shape: vec![],
                    vdevice: t.vdevice.clone(),
                })
        })
    }

    /// The static float32 host tensor an argument is.
    fn arg_tensor(&self, e: &Expr) -> Option<TensorInfo> {
        static_tensor(&arg_struct_info(e)?).filter(|t| self.on_host(t))
    }

    fn var_tensor(&self, v: &Var) -> Option<TensorInfo> {
        static_tensor(v.struct_info()?).filter(|t| self.on_host(t))
    }

    fn call_at(&self, i: usize) -> Option<(&Var, &Call)> {
        match &self.bindings[i] {
            Binding::VarBinding { var, value, .. } => Some((var, value.as_call()?)),
            Binding::MatchCast { .. } => None,
        }
    }

    /// The single binding after `i` that uses `var` (which nothing else uses).
    fn sole_user(&self, var: &Var, after: usize) -> Option<usize> {
        if self.uses.get(&var.id()).copied() != Some(1) {
            return None;
        }
        match self.users.get(&var.id())?.as_slice() {
            [j] if *j > after && !self.replaced.contains_key(j) => Some(*j),
            _ => None,
        }
    }

    /// The sole user of `var` if it is a call of `op`, with the call's other
    /// operand when it is a binary operator.
    fn sole_call_user(&self, var: &Var, after: usize, op: &str) -> Option<(usize, &Var, &Call)> {
        let j = self.sole_user(var, after)?;
        let (v, c) = self.call_at(j)?;
        (op_name(c)? == op).then_some((j, v, c))
    }

    fn set(&mut self, at: usize, var: &Var, value: Expr) {
        let span = self.bindings[at].span();
        self.replaced.insert(
            at,
            Some(Binding::VarBinding {
                var: var.clone(),
                value,
                span,
            }),
        );
    }

    fn remove(&mut self, at: usize) {
        self.replaced.insert(at, None);
    }

    /// Absorb an `add` of the fused result and an operand accepted by `operand`
    /// (which becomes the next argument), when its result has the shape `shape`.
    fn fuse_add(
        &self,
        f: &mut Fused,
        shape: &[i64],
        fused: fn(HostKernel) -> Option<HostKernel>,
        operand: impl Fn(&TensorInfo) -> bool,
    ) {
        let Some(kernel) = fused(f.kernel) else { return };
        let Some((j, v, c)) = self.sole_call_user(&f.cur, f.last, "relax.add") else {
            return;
        };
        let other = other_operand(c, &f.cur).unwrap_or_else(|| f.cur.to_expr());
        if !is_var(&other, &f.cur)
            && self.arg_tensor(&other).is_some_and(|t| operand(&t))
            && self.var_tensor(v).is_some_and(|t| t.shape == shape)
        {
            f.args.push(other);
            f.absorb(j, v, kernel);
        }
    }

    /// Absorb a following `relu`.
    fn fuse_relu(&self, f: &mut Fused) {
        let Some(kernel) = f.kernel.with_relu() else { return };
        if let Some((j, v, _)) = self.sole_call_user(&f.cur, f.last, "relax.nn.relu") {
            if self.var_tensor(v).is_some() {
                f.absorb(j, v, kernel);
            }
        }
    }

    /// Replace the chain `f` absorbed by one call of its kernel.
    fn finish(&mut self, f: Fused) -> Option<()> {
        let value = dps(f.kernel, f.args, &f.cur)?;
        for at in f.chain {
            self.remove(at);
        }
        self.set(f.last, &f.cur, value);
        Some(())
    }

    fn rewrite(&mut self, i: usize) -> Option<()> {
        let (var, call) = self.call_at(i)?;
        let (var, call) = (var.clone(), call.clone());
        if op_name(&call) == Some("relax.tanh") && self.gelu_tanh_chain(i, &var, &call).is_some() {
            return Some(());
        }
        if op_name(&call) == Some("relax.mean") && self.rms_norm_chain(i, &var, &call).is_some() {
            return Some(());
        }
        match op_name(&call)? {
            "relax.nn.conv2d" => self.conv2d(i, &var, &call),
            "relax.matmul" => self.matmul(i, &var, &call),
            "relax.add" | "relax.subtract" | "relax.multiply" | "relax.divide" => {
                let [a, b] = call.args.as_slice() else { return None };
                let op = BinaryOp::from_name(op_name(&call)?.strip_prefix("relax.")?)?;
                self.binary(op, i, &var, a.clone(), b.clone())
            }
            "relax.stack" => self.stack_sum(i, &var, &call),
            "relax.nn.relu" => {
                let x = call.args.first()?;
                self.arg_tensor(x)?;
                self.var_tensor(&var)?;
                let v = dps(HostKernel::Relu, vec![x.clone()], &var)?;
                self.set(i, &var, v);
                Some(())
            }
            name if relax_unary(name).is_some() => {
                let op = relax_unary(name)?;
                let x = call.args.first()?;
                // Elementwise: the kernel reads the shape at run time, so symbolic
                // extents (a prefill's sequence length) are fine.
                // `float16` only for the operators with a kernel for it.
                let f16 = relax_host_kernels::elementwise::unary_has_f16(op);
                let ok = |si: &StructInfo| self.host_tensor_of(si, f16);
                if !(arg_struct_info(x).is_some_and(|si| ok(&si)) && var.struct_info().is_some_and(ok)) {
                    return None;
                }
                // Input and output of one dtype.
                if arg_struct_info(x).and_then(|si| si.as_tensor().map(|t| t.dtype))
                    != var.struct_info().and_then(|si| si.as_tensor().map(|t| t.dtype))
                {
                    return None;
                }
                let v = dps(HostKernel::Unary(op), vec![x.clone()], &var)?;
                self.set(i, &var, v);
                Some(())
            }
            "relax.power" => {
                // `x ** 2` and `x ** 3` with a constant exponent (RMSNorm's square,
                // GPT-2's GELU): the same values as the legalized `T.pow`, which the
                // host JIT multiplies out (a square is exact in `f32` before its one
                // rounding; a cube is computed in `f64`).
                // Any other exponent, or one read at run time (ONNX keeps it as a
                // weight): `relax_host.power` on a one-element exponent.
                let [x, e] = call.args.as_slice() else { return None };
                if self.arg_tensor(x)?.shape != self.var_tensor(&var)?.shape {
                    return None;
                }
                let v = match crate::safe_softmax::scalar_float(e) {
                    Some(2.0) => dps(HostKernel::Unary(UnaryOp::Square), vec![x.clone()], &var)?,
                    Some(3.0) => dps(HostKernel::Unary(UnaryOp::Cube), vec![x.clone()], &var)?,
                    _ if self.arg_tensor(e)?.shape.iter().all(|&d| d == 1) => {
                        dps(HostKernel::Power, vec![x.clone(), e.clone()], &var)?
                    }
                    _ => return None,
                };
                self.set(i, &var, v);
                Some(())
            }
            "relax.nn.max_pool2d" | "relax.nn.avg_pool2d" => self.pool(i, &var, &call),
            "relax.nn.dropout" => self.dropout(i, &var, &call),
            "relax.mean" | "relax.sum" | "relax.max" | "relax.min" => self.reduce(i, &var, &call),
            "relax.argmax" | "relax.argmin" => self.arg_reduce(i, &var, &call),
            "relax.take" => self.take_rows(i, &var, &call),
            "relax.nn.layer_norm" => self.layer_norm(i, &var, &call),
            "relax.nn.batch_norm" => self.batch_norm(i, &var, &call),
            "relax.nn.softmax" => {
                let x = call.args.first()?;
                let t = self.arg_tensor(x)?;
                self.var_tensor(&var)?;
                let axis = call.attrs.get_int("axis").unwrap_or(-1);
                let nd = t.shape.len() as i64;
                if nd == 0 || (axis != -1 && axis != nd - 1) {
                    return None;
                }
                if self.safe_softmax(i, &var, x, nd).is_some() || self.softmax_nan_fill(i, &var, x).is_some() {
                    return Some(());
                }
                let v = dps(HostKernel::Softmax, vec![x.clone()], &var)?;
                self.set(i, &var, v);
                Some(())
            }
            "relax.permute_dims" => {
                let x = call.args.first()?;
                if self.feeds_matmul_as_transposed_rhs(i, &var) {
                    // The matmul reads the untransposed matrix instead.
                    return None;
                }
                let t = static_tensor_if(&arg_struct_info(x)?, movable).filter(|t| self.on_host(t))?;
                static_tensor_if(var.struct_info()?, movable).filter(|t| self.on_host(t))?;
                let nd = t.shape.len() as i64;
                let axes = match call.attrs.get("axes") {
                    None | Some(AttrValue::None) => (0..nd).rev().collect(),
                    Some(a) => a.as_int_list()?,
                };
                let axes: Vec<i64> = axes.iter().map(|&a| if a < 0 { a + nd } else { a }).collect();
                if axes.len() as i64 != nd || axes.iter().any(|&a| a < 0 || a >= nd) {
                    return None;
                }
                // A transpose of a transpose used only here is one transpose (the
                // attention output's `[2, 0, 1, 3]`, `[1, 2, 0, 3]`, `[0, 2, 1, 3]` of
                // GPT-2's export): `x = permute(y, a)` gives `y`'s axis `a[axes[k]]`.
                let (x, axes) = match self.dispatched_permute(x) {
                    Some((j, y, a)) if a.len() == axes.len() => {
                        let composed: Vec<i64> = axes.iter().map(|&k| a[k as usize]).collect();
                        self.remove(j);
                        (y, composed)
                    }
                    _ => (x.clone(), axes),
                };
                let v = dps(HostKernel::PermuteDims, vec![x, shape_arg(&axes)], &var)?;
                self.set(i, &var, v);
                Some(())
            }
            "relax.concat" => {
                if self.rotate_half(i, &var, &call).is_some() {
                    return Some(());
                }
                let ExprKind::Tuple(parts) = call.args.first()?.kind() else {
                    return None;
                };
                let out = self.var_tensor(&var)?;
                for p in parts {
                    self.arg_tensor(p)?;
                }
                let nd = out.shape.len() as i64;
                let axis = call.attrs.get_int("axis").unwrap_or(0);
                let axis = if axis < 0 { axis + nd } else { axis };
                if parts.is_empty() || axis < 0 || axis >= nd {
                    return None;
                }
                let mut args = parts.clone();
                args.push(shape_arg(&[axis]));
                let v = dps(HostKernel::Concat, args, &var)?;
                self.set(i, &var, v);
                Some(())
            }
            "relax.reshape" | "relax.squeeze" | "relax.expand_dims" => {
                // Any dtype, static or symbolic shapes, any device: a view of the same
                // memory, as TVM's VM lowers reshape; the builtin checks at run time
                // that the element count is kept. Squeezing keeps the row-major order
                // too: the same view of the result's shape (TVM legalizes it to a copy
                // kernel; a decoding step ran 20 of them per token). `expand_dims` only
                // on the host: on the GPU, left to fusion, it is folded into its
                // consumers' kernels, while as views ONNX's grid_sample gave a fused
                // kernel more storage buffers than a GPU stage may bind.
                let x = call.args.first()?;
                if op_name(&call) == Some("relax.expand_dims") {
                    let vdevice = var.struct_info()?.as_tensor()?.vdevice.clone();
                    if !self.on_host(&TensorInfo { shape: vec![], vdevice }) {
                        return None;
                    }
                }
                // TVM copies for a squeeze: a view only where nothing writes the input
                // or the result in place (the copy would not see it).
                if op_name(&call) != Some("relax.reshape") {
                    let written = |e: &Expr| matches!(e.kind(), ExprKind::Var(v) if self.inplace.contains(&v.id()));
                    if written(x) || self.inplace.contains(&var.id()) {
                        return None;
                    }
                }
                let xt = arg_struct_info(x)?;
                let xt = xt.as_tensor()?;
                let o = var.struct_info()?.as_tensor()?;
                // Only metadata changes, so this holds on every device (the view
                // shares the GPU buffer too), but not across devices.
                if xt.vdevice != o.vdevice || xt.dtype != o.dtype || o.dtype.is_void() {
                    return None;
                }
                let dims = o.shape_values()?.to_vec();
                let statics = |d: &[PrimExpr]| d.iter().map(PrimExpr::as_int).collect::<Option<Vec<_>>>();
                if let (Some(a), Some(b)) = (xt.shape_values().and_then(statics), statics(&dims)) {
                    if a.iter().product::<i64>() != b.iter().product::<i64>() {
                        return None;
                    }
                }
                let out_sinfo = var.struct_info()?.clone();
                let v = Expr::call(
                    Expr::op("relax.call_pure_packed"),
                    vec![
                        Expr::new(ExprKind::ExternFunc {
                            global_symbol: RESHAPE_VIEW.to_string(),
                        }),
                        x.clone(),
                        Expr::shape(dims),
                    ],
                    Attrs::new(),
                    vec![out_sinfo],
                );
                self.set(i, &var, v);
                Some(())
            }
            "relax.broadcast_to" => {
                let x = call.args.first()?;
                let (Some(t), Some(o)) = (self.arg_tensor(x), self.var_tensor(&var)) else {
                    // Symbolic extents (a shape read from a tensor at run time, as ONNX's
                    // Expand gives): the kernel reads the shapes at run time.
                    let host = |si: &StructInfo| self.host_tensor_of(si, false);
                    if !(arg_struct_info(x).is_some_and(|si| host(&si)) && var.struct_info().is_some_and(host)) {
                        return None;
                    }
                    let v = dps(HostKernel::BroadcastTo, vec![x.clone()], &var)?;
                    self.set(i, &var, v);
                    return Some(());
                };
                if t.shape == o.shape && t.vdevice.is_none() && o.vdevice.is_none() {
                    // Broadcasting to the same shape is the identity: alias.
                    self.set(i, &var, x.clone());
                } else {
                    let v = dps(HostKernel::BroadcastTo, vec![x.clone()], &var)?;
                    self.set(i, &var, v);
                }
                Some(())
            }
            _ => None,
        }
    }

    /// A broadcasting binary operator (`add`, `subtract`, `multiply`, `divide`),
    /// fused with a following `relu`.
    fn binary(&mut self, op: BinaryOp, i: usize, var: &Var, a: Expr, b: Expr) -> Option<()> {
        self.arg_tensor(&a)?;
        self.arg_tensor(&b)?;
        self.var_tensor(var)?;
        let mut f = Fused::new(HostKernel::Binary { op, relu: false }, vec![a, b], var, i);
        self.fuse_relu(&mut f);
        self.finish(f)
    }

    /// `sum(stack((a, b), axis=0), axis=[0])` is `add(a, b)`.
    fn stack_sum(&mut self, i: usize, var: &Var, call: &Call) -> Option<()> {
        let ExprKind::Tuple(parts) = call.args.first()?.kind() else {
            return None;
        };
        let [a, b] = parts.as_slice() else { return None };
        if call.attrs.get_int("axis").unwrap_or(0) != 0 {
            return None;
        }
        let (at, bt) = (self.arg_tensor(a)?, self.arg_tensor(b)?);
        if at.shape != bt.shape {
            return None;
        }
        let (j, v, c) = self.sole_call_user(var, i, "relax.sum")?;
        if ints(c, "axis")? != [0] || c.attrs.get_bool("keepdims").unwrap_or(false) {
            return None;
        }
        if self.var_tensor(v)?.shape != at.shape {
            return None;
        }
        let v = v.clone();
        self.binary(BinaryOp::Add, j, &v, a.clone(), b.clone())?;
        self.remove(i);
        Some(())
    }

    /// `p = softmax(x)` (binding `i`) followed by torch's guard for fully masked
    /// rows, `where(guard(x), full_like(p, 0) | 0, p)`: one `relax_host.safe_softmax`
    /// bound to the `where`'s variable, the guard's bindings removed.
    fn safe_softmax(&mut self, i: usize, p: &Var, x: &Expr, rank: i64) -> Option<()> {
        let (w, wvar, wcall) = self.where_user(i, p)?;
        let [cond, zeros, sm] = wcall.args.as_slice() else {
            return None;
        };
        if !is_var(sm, p) || is_var(cond, p) || is_var(zeros, p) {
            return None;
        }
        // The zeros: a scalar constant, or `full_like(p, 0)` used only here.
        let (fill, p_uses) = crate::safe_softmax::zeros_of(zeros, p, |e, n, op| self.bound(e, n, op).map(|(_, c)| c))?;
        let mut removed = vec![];
        if let Some(f) = fill {
            removed.push(*self.def.get(&f.id())?);
        }
        if self.uses.get(&p.id()).copied() != Some(p_uses) || self.var_tensor(&wvar)?.shape != self.var_tensor(p)?.shape
        {
            return None;
        }
        let guard =
            crate::safe_softmax::guard_vars(cond, x.as_var()?, rank, |e, n, op| self.bound(e, n, op).map(|(_, c)| c))?;
        for v in &guard {
            removed.push(*self.def.get(&v.id())?);
        }
        if removed.iter().any(|j| self.replaced.contains_key(j)) {
            return None;
        }
        let v = dps(HostKernel::SafeSoftmax, vec![x.clone()], &wvar)?;
        self.remove(i);
        for j in removed {
            self.remove(j);
        }
        self.set(w, &wvar, v);
        Some(())
    }

    /// `p = softmax(x)` (binding `i`) followed by `where(isnan(p), fill, p)` with a
    /// one-element `fill` (ONNX exports' guard after an attention softmax, `fill` a
    /// weight or a constant): one `relax_host.softmax_nan_fill` bound to the
    /// `where`'s variable, the `isnan` removed.
    fn softmax_nan_fill(&mut self, i: usize, p: &Var, x: &Expr) -> Option<()> {
        if self.uses.get(&p.id()).copied() != Some(2) {
            return None;
        }
        let (w, wvar, wcall) = self.where_user(i, p)?;
        let [cond, fill, sm] = wcall.args.as_slice() else {
            return None;
        };
        if !is_var(sm, p) || is_var(fill, p) {
            return None;
        }
        let (n, isnan) = self.bound(cond, 1, "relax.isnan")?;
        if !isnan.args.first().is_some_and(|a| is_var(a, p))
            || self.arg_tensor(fill)?.shape.iter().any(|&d| d != 1)
            || self.var_tensor(&wvar)?.shape != self.var_tensor(p)?.shape
            || self.replaced.contains_key(&n)
        {
            return None;
        }
        let v = dps(HostKernel::SoftmaxNanFill, vec![x.clone(), fill.clone()], &wvar)?;
        self.remove(i);
        self.remove(n);
        self.set(w, &wvar, v);
        Some(())
    }

    /// A `where` after binding `i` that uses `p` (its binding index, variable and
    /// call): the guard that follows a softmax.
    fn where_user(&self, i: usize, p: &Var) -> Option<(usize, Var, Call)> {
        self.users.get(&p.id())?.iter().find_map(|&j| {
            let (v, c) = self.call_at(j)?;
            (j > i && op_name(c)? == "relax.where").then(|| (j, v.clone(), c.clone()))
        })
    }

    /// The call of `op` bound in this block to the variable `e` (binding index and
    /// call), when the variable has `uses` uses.
    /// `(j, y, axes)` when `e` is used once and bound at `j` to a `permute_dims(y,
    /// axes)` this pass has made a library call.
    fn dispatched_permute(&self, e: &Expr) -> Option<(usize, Expr, Vec<i64>)> {
        let v = e.as_var()?;
        if self.uses.get(&v.id()).copied().unwrap_or(0) != 1 {
            return None;
        }
        let j = *self.def.get(&v.id())?;
        let Some(Some(Binding::VarBinding { value, .. })) = self.replaced.get(&j) else {
            return None;
        };
        let c = value.as_call()?;
        let [f, args] = c.args.as_slice() else { return None };
        match f.kind() {
            ExprKind::ExternFunc { global_symbol } if *global_symbol == HostKernel::PermuteDims.symbol() => {}
            _ => return None,
        }
        let ExprKind::Tuple(a) = args.kind() else { return None };
        let [y, axes] = a.as_slice() else { return None };
        let ExprKind::ShapeExpr(dims) = axes.kind() else {
            return None;
        };
        let axes: Vec<i64> = dims.iter().map(|d| d.as_int()).collect::<Option<_>>()?;
        Some((j, y.clone(), axes))
    }

    fn bound(&self, e: &Expr, uses: usize, op: &str) -> Option<(usize, &Call)> {
        let v = e.as_var()?;
        if self.uses.get(&v.id()).copied().unwrap_or(0) != uses {
            return None;
        }
        let j = *self.def.get(&v.id())?;
        let (_, c) = self.call_at(j)?;
        (op_name(c)? == op).then_some((j, c))
    }

    /// Inference `dropout` is the identity: `t[0]` of its tuple `t` becomes an alias
    /// of the input (the mask `t[1]` must be unused).
    fn dropout(&mut self, i: usize, tv: &Var, call: &Call) -> Option<()> {
        let x = call.args.first()?;
        self.arg_tensor(x)?;
        let mut plan = vec![];
        for (k, var, index) in self.tuple_item_users(tv, i)? {
            match index {
                0 => plan.push((k, Some(var))),
                1 if self.uses.get(&var.id()).copied().unwrap_or(0) == 0 => plan.push((k, None)),
                _ => return None,
            }
        }
        for (k, v) in plan {
            match v {
                Some(v) => self.set(k, &v, x.clone()),
                None => self.remove(k),
            }
        }
        self.remove(i);
        Some(())
    }

    /// `mean` over trailing axes (global average pooling).
    fn reduce(&mut self, i: usize, var: &Var, call: &Call) -> Option<()> {
        let x = call.args.first()?;
        let t = self.arg_tensor(x)?;
        self.var_tensor(var)?;
        trailing_axes(&ints(call, "axis")?, t.shape.len())?;
        let kernel = match op_name(call)?.strip_prefix("relax.")? {
            "mean" => HostKernel::Mean,
            other => HostKernel::Reduce(Reduction::from_name(other)?),
        };
        let v = dps(kernel, vec![x.clone()], var)?;
        self.set(i, var, v);
        Some(())
    }

    /// `argmax`/`argmin` over the last axis, or over all elements (`axis=None`), of a
    /// float32 tensor (`relax_host.argmax`/`argmin`: one `int64` per row).
    fn arg_reduce(&mut self, i: usize, var: &Var, call: &Call) -> Option<()> {
        let x = call.args.first()?;
        let t = self.arg_tensor(x)?;
        let out = var.struct_info()?.as_tensor()?;
        if out.dtype != DataType::INT64
            || !self.on_host(&TensorInfo {
                shape: vec![],
                vdevice: out.vdevice.clone(),
            })
        {
            return None;
        }
        match call.attrs.get("axis") {
            None | Some(AttrValue::None) => {}
            Some(a) => {
                let axis = a.as_int()?;
                let nd = t.shape.len() as i64;
                if axis != nd - 1 && axis != -1 {
                    return None;
                }
            }
        }
        let kernel = HostKernel::ArgReduce {
            max: op_name(call)? == "relax.argmax",
        };
        let v = dps(kernel, vec![x.clone()], var)?;
        self.set(i, var, v);
        Some(())
    }

    /// `take(data, indices, axis=0)` of a `float32` matrix (an embedding lookup) with
    /// `int64` or `int32` indices: `relax_host.take_rows`, `take_rows_clip` or
    /// `take_rows_wrap` by `mode`.
    fn take_rows(&mut self, i: usize, var: &Var, call: &Call) -> Option<()> {
        let [data, idx] = call.args.as_slice() else {
            return None;
        };
        let t = self.arg_tensor(data)?;
        let it = static_tensor_if(&arg_struct_info(idx)?, |d| d == DataType::INT64 || d == DataType::INT32)
            .filter(|t| self.on_host(t))?;
        // (Without an axis `take` is of 1-D data only, as TVM's inference requires.)
        let axis = call.attrs.get("axis").and_then(AttrValue::as_int)?;
        if t.shape.len() != 2 || (axis != 0 && axis != -2) {
            return None;
        }
        let mode = match call.attrs.get("mode").and_then(AttrValue::as_str) {
            None | Some("fast") => TakeMode::Fast,
            Some("clip") => TakeMode::Clip,
            Some("wrap") => TakeMode::Wrap,
            Some(_) => return None,
        };
        let want: Vec<i64> = it.shape.iter().copied().chain([t.shape[1]]).collect();
        if self.var_tensor(var)?.shape != want {
            return None;
        }
        let v = dps(HostKernel::TakeRows(mode), vec![data.clone(), idx.clone()], var)?;
        self.set(i, var, v);
        Some(())
    }

    /// `layer_norm` over trailing axes.
    fn layer_norm(&mut self, i: usize, var: &Var, call: &Call) -> Option<()> {
        let [x, gamma, beta] = call.args.as_slice() else {
            return None;
        };
        let t = self.arg_tensor(x)?;
        self.var_tensor(var)?;
        let k = trailing_axes(&ints(call, "axes").unwrap_or(vec![-1]), t.shape.len())?;
        let cols: i64 = t.shape[t.shape.len() - k..].iter().product();
        for p in [gamma, beta] {
            if self.arg_tensor(p)?.shape.iter().product::<i64>() != cols {
                return None;
            }
        }
        if !call.attrs.get_bool("center").unwrap_or(true) || !call.attrs.get_bool("scale").unwrap_or(true) {
            return None;
        }
        let eps = call.attrs.get("epsilon").and_then(AttrValue::as_float).unwrap_or(1e-5);
        let eps = Expr::new(ExprKind::PrimValue(PrimExpr::float_of(eps, DataType::FLOAT64)));
        let v = dps(
            HostKernel::LayerNorm,
            vec![x.clone(), gamma.clone(), beta.clone(), shape_arg(&[k as i64]), eps],
            var,
        )?;
        self.set(i, var, v);
        Some(())
    }
}

/// The number of axes when `axes` (possibly negative, in any order) are the last
/// ones of a tensor of rank `nd`.
fn trailing_axes(axes: &[i64], nd: usize) -> Option<usize> {
    let nd = nd as i64;
    let mut axes: Vec<i64> = axes.iter().map(|&a| if a < 0 { a + nd } else { a }).collect();
    axes.sort_unstable();
    axes.dedup();
    let k = axes.len() as i64;
    (k > 0 && axes.iter().enumerate().all(|(j, &a)| a == nd - k + j as i64)).then_some(k as usize)
}

fn is_var(e: &Expr, v: &Var) -> bool {
    matches!(e.kind(), ExprKind::Var(x) if x.id() == v.id())
}

/// The operand of the binary call `c` that is not `v` (`None` when both are).
fn other_operand(c: &Call, v: &Var) -> Option<Expr> {
    let [a, b] = c.args.as_slice() else { return None };
    match (is_var(a, v), is_var(b, v)) {
        (true, false) => Some(b.clone()),
        (false, true) => Some(a.clone()),
        _ => None,
    }
}
