//! `fuse-attention`: attention as one fused kernel.
//!
//! Two rewrites, both into `R.call_tir` of one generated PrimFunc that computes
//! attention row by row with an online softmax (flash-attention style): each
//! output row (one query position of one batch and head) walks the keys once,
//! keeping the running maximum of the scores, the running sum of their
//! exponentials and the accumulated weighted values, rescaled whenever the
//! maximum grows. No `seq x seq` score matrix exists anywhere; the per-row state
//! is `head_dim + head_dim_v + 3` floats. Scores, softmax and accumulation are in
//! `float32` whatever the operands' dtype (`float16` operands are widened on
//! load, the result is rounded once when stored).
//!
//! - `R.nn.attention(q, k, v[, bias], scale, causal_mask)` on `(batch, seq,
//!   heads, head_dim)` tensors, with the semantics of TVM 0.27's legalization
//!   (`_te_attention`): scores `q . k * scale` (`1 / sqrt(head_dim)` when no
//!   scale is given), plus the bias broadcast to `(batch, heads, seq, seq_kv)`,
//!   a causal mask keeping key `j <= i + offset` for query `i` (`TopLeft`:
//!   offset 0, `BottomRight`: `|seq - seq_kv|`, as TVM), softmax over the keys,
//!   times `v`.
//! - The explicit chain the front ends spell out (TVM's `nn` module,
//!   `from_onnx`): `matmul(q, kt)`, optionally `/ c` or `* c`, optionally
//!   `astype(float32)`, optionally `+ mask`, `-> softmax(axis=-1)`, optionally
//!   `astype`, optionally `where(isnan(p), 0, p)`,
//!   `-> matmul(p, v)`, each intermediate used only by the next step. The mask is
//!   either any tensor that broadcasts to the scores (added as a bias), or
//!   `triu(full(shape, c), k)` with `k >= 1` and `c <= -1e30` (the `nn` module's
//!   causal mask), which becomes the causal bound `j <= i + k - 1`: the masked
//!   scores' exponentials are exactly 0 in the unfused program as long as a row
//!   keeps a finite score, which `k >= 1` guarantees. `where(isnan(p), 0, p)`
//!   (ONNX's guard for fully masked rows) makes a row whose exponentials all
//!   vanish (or are NaN) an output of zeros, as the unfused program gives.
//!   Operands that are `permute_dims` of another tensor are read through the
//!   permutation (no transposed copy), and keys and values that are
//!   `repeat(x, r, axis)` (grouped-query attention's shared heads) through the
//!   repeat (`x` at index `i / r`). Between the scores and the softmax, an
//!   `R.call_tir` of an elementwise PrimFunc of the scores (the `nn` module's
//!   `causal_mask`: `if_then_else(i < j, min_value, x)`) is applied to each
//!   score inside the kernel (`score_map`).
//!
//! Calls the kernel does not cover are left alone for `LegalizeOps`: head
//! dimensions that are not constants, `R.nn.attention` with grouped heads,
//! non-float dtypes, a sliding window, batch dimensions that neither agree nor
//! broadcast from 1.
//!
//! The kernel is one TIR block over the output rows with serial loops over the
//! keys inside, so the host runs rows in parallel and the GPU's default
//! schedule gives each row one thread (64-thread workgroups; `R.nn.attention`'s
//! rows are ordered batch, head, query, so the threads of a workgroup read the
//! same keys). Loops over a head dimension are unrolled, in chunks of at most
//! 64, so a GPU thread makes one loop trip per key up to head dimension 64 and
//! `1 + 2 * (head_dim / chunk)` beyond (Mesa's lavapipe stops a shader
//! invocation's loops after 65,535 trips in all: with head dimension 64 the
//! fused kernel there covers up to about 65,000 keys).
//!
//! The engine applies it to GPU calls by default and to host calls on request
//! (`EngineConfig::fuse_attention_host`): on the host the legalized form, whose
//! matmuls run as native GEMMs, measured faster than the fused kernel's scalar
//! code (`examples/bench_attention.rs`) - except for a query of one row (a
//! decoding step over a KV cache), where the legalized form is a dozen small
//! kernels per layer (`repeat`, transposes of the cache, two matmuls, the mask,
//! the softmax, casts) and the fused kernel reads the cache once: those are
//! fused on the host too (`EngineConfig::fuse_attention_decode`, on by default).

use std::collections::HashMap;

use relax_ir::mutator::ExprMutator;
use relax_ir::structural::{structural_equal_prim_func, structural_hash_prim_func};
use relax_ir::tir::{BinOp, Block, BufferRegion, ForKind, Intrinsic, IterKind, Range, Stmt, TirVar};
use relax_ir::{
    AttrValue, Attrs, BaseFunc, Binding, BindingBlock, Buffer, DataType, Diagnostic, Expr, ExprKind, GlobalVar,
    IRModule, PrimExpr, PrimFunc, Span, StructInfo,
};
use relax_op::legalize::te::{self, make_iters, nest, Te};
use relax_op::legalize::Lowered;

use crate::legalize::arg_struct_info;
use crate::safe_softmax::{is_zero, scalar_float};

mod kernel;
mod library;
mod score_map;
use kernel::{lower_attention_op, Access, Layout, Spec};
use score_map::ScoreMap;

/// Name hint of the generated PrimFuncs.
pub const KERNEL_NAME: &str = "fused_attention";

/// Which calls the pass rewrites, by where their result lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuseOptions {
    /// Rewrite calls on the host (a host `VDevice`, or unplaced with
    /// `unplaced_on_host`).
    pub host: bool,
    /// Rewrite host calls whose query is one row (a decoding step), even without
    /// `host`.
    pub host_one_query: bool,
    /// Rewrite host calls that neither `host` nor `host_one_query` takes into a
    /// call of the native kernel library (`relax_host.attention`) where it covers
    /// them (float32).
    pub host_library: bool,
    /// Rewrite calls on a GPU `VDevice` (or unplaced without `unplaced_on_host`).
    pub gpu: bool,
    /// Unplaced tensors live on the host.
    pub unplaced_on_host: bool,
}

impl Default for FuseOptions {
    /// Every call, wherever it runs.
    fn default() -> FuseOptions {
        FuseOptions {
            host: true,
            host_one_query: true,
            host_library: false,
            gpu: true,
            unplaced_on_host: true,
        }
    }
}

/// Target kinds whose tensors live in GPU memory.
const GPU_KINDS: &[&str] = &["webgpu", "vulkan", "metal", "cuda", "rocm", "opencl"];

/// What a fused attention becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// A generated PrimFunc (`R.call_tir`).
    Tir,
    /// The host library's kernel (`R.call_dps_packed("relax_host.attention")`).
    Library,
}

impl FuseOptions {
    /// What a call whose result is `out` (its query rows counted by dimension
    /// `query_axis`) is rewritten into, if anything.
    fn target(&self, out: &StructInfo, query_axis: usize) -> Option<Target> {
        let on_host = match out {
            StructInfo::Tensor(t) => match &t.vdevice {
                None => self.unplaced_on_host,
                Some(vd) => !GPU_KINDS.contains(&vd.target.kind.as_str()),
            },
            _ => return None,
        };
        if on_host {
            if self.host || (self.host_one_query && query_rows(out, query_axis) == Some(1)) {
                Some(Target::Tir)
            } else {
                self.host_library.then_some(Target::Library)
            }
        } else {
            self.gpu.then_some(Target::Tir)
        }
    }
}

/// Rewrite every `R.nn.attention` call and every explicit attention chain of the
/// module's Relax functions into a call of one fused attention PrimFunc.
pub fn fuse_attention(module: &IRModule) -> Result<IRModule, Vec<Diagnostic>> {
    Ok(fuse_attention_report(module, FuseOptions::default())?.0)
}

/// [`fuse_attention`] for the calls `options` selects.
pub fn fuse_attention_with(module: &IRModule, options: FuseOptions) -> Result<IRModule, Vec<Diagnostic>> {
    Ok(fuse_attention_report(module, options)?.0)
}

/// [`fuse_attention_with`], also returning how many calls were rewritten:
/// `(R.nn.attention calls, explicit matmul-softmax-matmul chains)`.
pub fn fuse_attention_report(
    module: &IRModule,
    options: FuseOptions,
) -> Result<(IRModule, usize, usize), Vec<Diagnostic>> {
    let mut out = module.clone();
    let mut generated: Vec<(String, u64)> = Vec::new();
    let (mut n_op, mut n_chain) = (0, 0);
    let keys: Vec<GlobalVar> = module.functions.keys().cloned().collect();
    for gv in keys {
        let Some(BaseFunc::Relax(f)) = module.functions.get(&gv) else {
            continue;
        };
        if f.attrs.get("Primitive").is_some() {
            continue;
        }
        let uses = relax_ir::visit::var_use_counts(&f.body);
        let mut r = Rewriter {
            options,
            module: &mut out,
            generated: &mut generated,
            uses,
            defs: HashMap::new(),
            n_op: 0,
            n_chain: 0,
        };
        let nf = r.visit_function(f);
        let (a, b) = (r.n_op, r.n_chain);
        if a + b > 0 {
            out.functions.insert(gv, BaseFunc::Relax(nf));
            n_op += a;
            n_chain += b;
        }
    }
    if n_op + n_chain == 0 {
        return Ok((out, 0, 0));
    }
    let n = relax_checker::normalize::normalize_module(&out);
    let errors: Vec<Diagnostic> = n.diagnostics.into_iter().filter(|d| d.is_error()).collect();
    if errors.is_empty() {
        Ok((n.module, n_op, n_chain))
    } else {
        Err(errors)
    }
}

struct Rewriter<'a> {
    options: FuseOptions,
    module: &'a mut IRModule,
    generated: &'a mut Vec<(String, u64)>,
    /// Uses of each variable in the function.
    uses: HashMap<u64, usize>,
    /// The value bound to each variable seen so far.
    defs: HashMap<u64, Expr>,
    n_op: usize,
    n_chain: usize,
}

impl ExprMutator for Rewriter<'_> {
    fn visit_block(&mut self, b: &BindingBlock) -> BindingBlock {
        let b = relax_ir::mutator::walk_block(self, b);
        let mut bindings = Vec::with_capacity(b.bindings.len());
        for binding in &b.bindings {
            let Binding::VarBinding { var, value, span } = binding else {
                bindings.push(binding.clone());
                continue;
            };
            let new = value.as_call().and_then(|call| {
                let out = var.struct_info()?;
                let rank = match out {
                    StructInfo::Tensor(t) if t.ndim >= 2 => t.ndim as usize,
                    _ => return None,
                };
                let (target, (spec, t), is_op) = match call.op.as_op()? {
                    // (batch, seq, heads, head_dim)
                    "relax.nn.attention" => (self.options.target(out, 1)?, lower_attention_op(call, out)?, true),
                    "relax.matmul" if b.is_dataflow => {
                        let target = self.options.target(out, rank - 2)?;
                        let st = self.chain(call, out).or_else(|| self.chain_export(call, out))?;
                        (target, st, false)
                    }
                    _ => return None,
                };
                let value = match target {
                    Target::Tir => self.call_tir(spec.build(t, out.clone())),
                    Target::Library => {
                        let mut spec = spec;
                        for a in [&mut spec.q, &mut spec.k, &mut spec.v] {
                            self.read_through_split(a);
                        }
                        library::library_call(&spec, out)?
                    }
                };
                if is_op {
                    self.n_op += 1;
                } else {
                    self.n_chain += 1;
                }
                Some(value)
            });
            let value = new.unwrap_or_else(|| value.clone());
            self.defs.insert(var.id(), value.clone());
            bindings.push(Binding::VarBinding {
                var: var.clone(),
                value,
                span: *span,
            });
        }
        BindingBlock {
            bindings,
            is_dataflow: b.is_dataflow,
            span: b.span,
        }
    }
}

impl Rewriter<'_> {
    /// `R.call_tir` of `l`, its PrimFunc added to the module (an identical one is reused).
    fn call_tir(&mut self, l: Lowered) -> Expr {
        let h = structural_hash_prim_func(&l.func);
        let mut name = None;
        for (n, hash) in self.generated.iter() {
            if *hash == h
                && self
                    .module
                    .prim_func(n)
                    .is_some_and(|e| structural_equal_prim_func(e, &l.func))
            {
                name = Some(n.clone());
                break;
            }
        }
        let name = name.unwrap_or_else(|| {
            let mut n = l.name.clone();
            let mut k = 1;
            while self.module.get(&n).is_some() {
                n = format!("{}{k}", l.name);
                k += 1;
            }
            self.module.add(&n, BaseFunc::Prim(l.func));
            self.generated.push((n.clone(), h));
            n
        });
        let mut args = vec![
            Expr::new(ExprKind::GlobalVar(GlobalVar::new(&name))),
            Expr::tuple(l.args),
        ];
        if !l.tir_vars.is_empty() {
            args.push(Expr::shape(l.tir_vars));
        }
        Expr::call(Expr::op("relax.call_tir"), args, Attrs::new(), vec![l.out])
    }

    /// The call bound to `e` when `e` is a variable bound in this function and
    /// used `uses` times.
    fn bound_call(&self, e: &Expr, uses: usize, op: &str) -> Option<relax_ir::relax::Call> {
        let v = e.as_var()?;
        if self.uses.get(&v.id()).copied().unwrap_or(0) != uses {
            return None;
        }
        let c = self.defs.get(&v.id())?.as_call()?;
        (c.op.as_op()? == op).then(|| c.clone())
    }

    /// Any call bound to `e` (a variable of this function), whatever its uses.
    fn def_call(&self, e: &Expr) -> Option<&relax_ir::relax::Call> {
        self.defs.get(&e.as_var()?.id())?.as_call()
    }

    /// The fused kernel for the chain ending in `mm2 = matmul(p, v)`, when the
    /// chain is one this pass proves equivalent.
    fn chain(&self, mm2: &relax_ir::relax::Call, out: &StructInfo) -> Option<(Spec, Te)> {
        let [p, v] = mm2.args.as_slice() else { return None };
        let mut cur = p.clone();
        let mut zero_empty = false;
        let mut fill: Option<Expr> = None;
        // where(isnan(s), z, s)
        if let Some(w) = self.bound_call(&cur, 1, "relax.where") {
            let [c, z, s] = w.args.as_slice() else { return None };
            let isn = self.bound_call(c, 1, "relax.isnan")?;
            if isn.args.first()?.as_var()? != s.as_var()? {
                return None;
            }
            if !is_zero(z) {
                let (zdt, zs) = tensor_of(z)?;
                if zdt != tensor_of(s)?.0 || zs.iter().any(|d| d.as_int() != Some(1)) {
                    return None;
                }
                fill = Some(z.clone());
            }
            zero_empty = true;
            cur = s.clone();
        }
        let sm_uses = if zero_empty { 2 } else { 1 };
        // astype after the softmax
        if let Some(a) = self.bound_call(&cur, sm_uses, "relax.astype") {
            if zero_empty {
                return None;
            }
            cur = a.args.first()?.clone();
        }
        let sm = self.bound_call(&cur, sm_uses, "relax.nn.softmax")?;
        let x = sm.args.first()?;
        let rank = tensor_of(x)?.1.len() as i64;
        let axis = sm.attrs.get_int("axis").unwrap_or(-1);
        if axis != -1 && axis != rank - 1 {
            return None;
        }
        let mut cur = x.clone();
        // An elementwise map of the scores (a mask PrimFunc).
        let mut map_fn: Option<ScoreMap> = None;
        if let Some(c) = self.bound_call(&cur, 1, "relax.call_tir") {
            let (gv, arg) = match c.args.as_slice() {
                [f, args] => match (f.kind(), args.kind()) {
                    (ExprKind::GlobalVar(g), ExprKind::Tuple(a)) if a.len() == 1 => {
                        (g.name().to_string(), a[0].clone())
                    }
                    _ => return None,
                },
                _ => return None,
            };
            let (_, ss) = tensor_of(&arg)?;
            map_fn = Some(ScoreMap::of(self.module.prim_func(&gv)?, &ss)?);
            cur = arg;
        }
        // + mask
        let mut mask: Option<Expr> = None;
        if let Some(add) = self.bound_call(&cur, 1, "relax.add") {
            let [a, b] = add.args.as_slice() else { return None };
            if self.scores(a).is_some() {
                cur = a.clone();
                mask = Some(b.clone());
            } else if self.scores(b).is_some() {
                cur = b.clone();
                mask = Some(a.clone());
            } else {
                return None;
            }
        }
        let (mm1, scale) = self.scores(&cur)?;
        let [q, kt] = mm1.args.as_slice() else { return None };
        // Shapes and dtypes.
        let (dt, qs) = tensor_of(q)?;
        let (kdt, ks) = tensor_of(kt)?;
        let (vdt, vs) = tensor_of(v)?;
        let (odt, os) = match out {
            StructInfo::Tensor(t) => (t.dtype, t.shape_values()?.to_vec()),
            _ => return None,
        };
        let r = qs.len();
        if !(dt == DataType::FLOAT32 || dt == DataType::FLOAT16)
            || kdt != dt
            || vdt != dt
            || odt != dt
            || r < 2
            || ks.len() != r
            || vs.len() != r
            || os.len() != r
        {
            return None;
        }
        let (s, d, skv, dv) = (&qs[r - 2], &qs[r - 1], &ks[r - 1], &vs[r - 1]);
        if !same(&ks[r - 2], d) || !same(&vs[r - 2], skv) || !same(&os[r - 2], s) || !same(&os[r - 1], dv) {
            return None;
        }
        for t in [&qs, &ks, &vs] {
            for (a, o) in t[..r - 2].iter().zip(&os[..r - 2]) {
                if !same(a, o) && a.as_int() != Some(1) {
                    return None;
                }
            }
        }
        let (d, dv) = (d.as_int()?, dv.as_int()?);
        if d <= 0 || dv <= 0 {
            return None;
        }
        // The mask.
        let mut causal = None;
        let mut bias = None;
        if let Some(m) = mask {
            match self.causal_mask(&m, s, skv) {
                Some(off) => causal = Some(PrimExpr::int(off)),
                None => {
                    let (mdt, ms) = tensor_of(&m)?;
                    if mdt != DataType::FLOAT32 && mdt != dt {
                        return None;
                    }
                    let full: Vec<PrimExpr> = os[..r - 1].iter().cloned().chain([skv.clone()]).collect();
                    if ms.len() > r {
                        return None;
                    }
                    for (a, o) in ms.iter().zip(&full[r - ms.len()..]) {
                        if !same(a, o) && a.as_int() != Some(1) {
                            return None;
                        }
                    }
                    bias = Some(m);
                }
            }
        }
        let mut t = Te::new();
        let qa = self.access(&mut t, q)?;
        let ka = self.access(&mut t, kt)?;
        let va = self.access(&mut t, v)?;
        let ba = match &bias {
            Some(b) => Some(Access::plain(&mut t, b)?),
            None => None,
        };
        let fa = match &fill {
            Some(z) => Some(Access::plain(&mut t, z)?),
            None => None,
        };
        let spec = Spec {
            fill: fa,
            nan_stays: false,
            layout: Layout::Batched,
            rows: os[..r - 1].to_vec(),
            out_shape: os.clone(),
            dtype: dt,
            q: qa,
            k: ka,
            v: va,
            bias: ba,
            d,
            dv,
            skv: skv.clone(),
            scale,
            causal,
            zero_empty,
            map: map_fn.map(|m| (m, os[..r - 1].iter().cloned().chain([skv.clone()]).collect())),
        };
        Some((spec, t))
    }

    /// The fused kernel for the chain `torch.export` + `from_exported_program`
    /// writes (`scaled_dot_product_attention` decomposed): 4-D operands
    /// reshaped to `(batch * heads, seq, dim)` for both matmuls, the scores
    /// reshaped back for the mask and the softmax, and rows whose scores are all
    /// `-inf` set to zero:
    /// `where(not(astype(max(astype(not(x == -inf), int8), -1), bool)), 0, softmax(x))`.
    fn chain_export(&self, mm2: &relax_ir::relax::Call, out: &StructInfo) -> Option<(Spec, Te)> {
        let [p3, v3] = mm2.args.as_slice() else { return None };
        let (z4, b) = self.merged(p3, true)?;
        let w = self.bound_call(&z4, 1, "relax.where")?;
        let [g, zeros, sm] = w.args.as_slice() else { return None };
        let (_, sm_uses) = crate::safe_softmax::zeros_of(zeros, sm.as_var()?, |e, n, op| self.bound_call(e, n, op))?;
        let smc = self.bound_call(sm, sm_uses, "relax.nn.softmax")?;
        let x = smc.args.first()?;
        let rank4 = tensor_of(x)?.1.len() as i64;
        let axis = smc.attrs.get_int("axis").unwrap_or(-1);
        if axis != -1 && axis != rank4 - 1 {
            return None;
        }
        crate::safe_softmax::guard_vars(g, x.as_var()?, rank4, |e, n, op| self.bound_call(e, n, op))?;
        // x = reshape(matmul(q3, kt3)) + mask
        let add = self.bound_call(x, 2, "relax.add")?;
        let [a0, a1] = add.args.as_slice() else { return None };
        let (s4, mask) = if self.bound_call(a0, 1, "relax.reshape").is_some() {
            (a0, a1)
        } else {
            (a1, a0)
        };
        let rs = self.bound_call(s4, 1, "relax.reshape")?;
        let mm1e = rs.args.first()?;
        let (_, s4s) = tensor_of(s4)?;
        let (_, m3s) = tensor_of(mm1e)?;
        if s4s.len() != 4 || m3s.len() != 3 || !merges(&m3s[0], &s4s[0], &s4s[1]) || !same(&s4s[1], &b) {
            return None;
        }
        if !same(&m3s[1], &s4s[2]) || !same(&m3s[2], &s4s[3]) {
            return None;
        }
        let mm1 = self.bound_call(mm1e, 1, "relax.matmul")?;
        let [q3, kt3] = mm1.args.as_slice() else { return None };
        let (q4, bq) = self.merged(q3, false)?;
        let (kt4, bk) = self.merged(kt3, false)?;
        let (v4, bv) = self.merged(v3, false)?;
        if !same(&bq, &b) || !same(&bk, &b) || !same(&bv, &b) {
            return None;
        }
        let (dt, qs) = tensor_of(&q4)?;
        let (kdt, ks) = tensor_of(&kt4)?;
        let (vdt, vs) = tensor_of(&v4)?;
        let (odt, os) = match out {
            StructInfo::Tensor(t) => (t.dtype, t.shape_values()?.to_vec()),
            _ => return None,
        };
        if !(dt == DataType::FLOAT32 || dt == DataType::FLOAT16) || kdt != dt || vdt != dt || odt != dt {
            return None;
        }
        if qs.len() != 4 || ks.len() != 4 || vs.len() != 4 || os.len() != 3 {
            return None;
        }
        let (s, d, skv, dv) = (&qs[2], &qs[3], &ks[3], &vs[3]);
        if !same(&ks[2], d) || !same(&vs[2], skv) || !same(&os[1], s) || !same(&os[2], dv) {
            return None;
        }
        for t in [&qs, &ks, &vs] {
            if !same(&t[0], &s4s[0]) || !same(&t[1], &s4s[1]) {
                return None;
            }
        }
        let (d, dv) = (d.as_int()?, dv.as_int()?);
        if d <= 0 || dv <= 0 {
            return None;
        }
        let (mdt, ms) = tensor_of(mask)?;
        if mdt != tensor_of(x)?.0 || ms.len() > 4 {
            return None;
        }
        for (a, o) in ms.iter().zip(&s4s[4 - ms.len()..]) {
            if !same(a, o) && a.as_int() != Some(1) {
                return None;
            }
        }
        let mut t = Te::new();
        let mut acc = |e: &Expr, through: bool| -> Option<Access> {
            let mut a = if through {
                self.access(&mut t, e)?
            } else {
                Access::plain(&mut t, e)?
            };
            a.split = Some(b.clone());
            Some(a)
        };
        let (qa, ka, va, ba) = (acc(&q4, true)?, acc(&kt4, true)?, acc(&v4, true)?, acc(mask, false)?);
        let spec = Spec {
            layout: Layout::Batched,
            rows: os[..2].to_vec(),
            out_shape: os.clone(),
            dtype: dt,
            q: qa,
            k: ka,
            v: va,
            bias: Some(ba),
            d,
            dv,
            skv: skv.clone(),
            scale: 1.0,
            causal: None,
            zero_empty: true,
            fill: None,
            nan_stays: true,
            map: None,
        };
        Some((spec, t))
    }

    /// `(x, b)` when `e` is `reshape(x)` (or of an identity `broadcast_to(x)`)
    /// merging `x`'s first two dimensions `(a, b)` into one; with `single`, each
    /// step must be used only there.
    fn merged(&self, e: &Expr, single: bool) -> Option<(Expr, PrimExpr)> {
        let c = if single {
            self.bound_call(e, 1, "relax.reshape")?
        } else {
            let c = self.def_call(e)?;
            (c.op.as_op()? == "relax.reshape").then(|| c.clone())?
        };
        let mut x = c.args.first()?.clone();
        let bc = if single {
            self.bound_call(&x, 1, "relax.broadcast_to")
        } else {
            self.def_call(&x)
                .filter(|c| c.op.as_op() == Some("relax.broadcast_to"))
                .cloned()
        };
        if let Some(bc) = bc {
            let y = bc.args.first()?;
            let (_, ys) = tensor_of(y)?;
            let (_, xs) = tensor_of(&x)?;
            if ys.len() != xs.len() || ys.iter().zip(&xs).any(|(a, b)| !same(a, b)) {
                return None;
            }
            x = y.clone();
        }
        let (_, xs) = tensor_of(&x)?;
        let (_, es) = tensor_of(e)?;
        if xs.len() != es.len() + 1 || xs.len() < 3 || !merges(&es[0], &xs[0], &xs[1]) {
            return None;
        }
        if xs[2..].iter().zip(&es[1..]).any(|(a, b)| !same(a, b)) {
            return None;
        }
        Some((x, xs[1].clone()))
    }

    /// `(matmul(q, kt), scale)` when `e` is that product, scaled by a constant,
    /// optionally widened to float32, each step used once.
    fn scores(&self, e: &Expr) -> Option<(relax_ir::relax::Call, f64)> {
        let mut cur = e.clone();
        let mut scale = 1.0;
        if let Some(a) = self.bound_call(&cur, 1, "relax.astype") {
            let x = a.args.first()?;
            if tensor_of(&cur)?.0 != DataType::FLOAT32 {
                return None;
            }
            cur = x.clone();
        }
        for op in ["relax.divide", "relax.multiply"] {
            if let Some(c) = self.bound_call(&cur, 1, op) {
                let [a, b] = c.args.as_slice() else { return None };
                let (x, k) = match (scalar_float(b), scalar_float(a)) {
                    (Some(k), _) => (a, k),
                    (None, Some(k)) if op == "relax.multiply" => (b, k),
                    _ => return None,
                };
                if !k.is_finite() || k == 0.0 {
                    return None;
                }
                scale = if op == "relax.divide" { 1.0 / k } else { k };
                cur = x.clone();
                break;
            }
        }
        let mm = self.bound_call(&cur, 1, "relax.matmul")?;
        Some((mm, scale))
    }

    /// The causal offset `k - 1` when `m` is `triu(full(shape, c), k)` with
    /// `k >= 1` and `c <= -1e30`, its last two dimensions `(s, skv)`.
    fn causal_mask(&self, m: &Expr, s: &PrimExpr, skv: &PrimExpr) -> Option<i64> {
        let tr = self.def_call(m)?;
        if tr.op.as_op()? != "relax.triu" {
            return None;
        }
        let k = match tr.args.get(1) {
            Some(e) => match e.kind() {
                ExprKind::PrimValue(p) => p.as_int()?,
                _ => te::scalar_constant(e)?.as_int()?,
            },
            None => 0,
        };
        if k < 1 {
            return None;
        }
        let full = self.def_call(tr.args.first()?)?;
        if full.op.as_op()? != "relax.full" {
            return None;
        }
        let c = scalar_float(full.args.get(1)?)?;
        if c > -1e30 {
            return None;
        }
        let (_, ms) = tensor_of(m)?;
        let n = ms.len();
        if n < 2 || !same(&ms[n - 2], s) || !same(&ms[n - 1], skv) {
            return None;
        }
        Some(k - 1)
    }

    /// How the kernel reads operand `e`: through the permutations when `e` is
    /// `permute_dims` (of `permute_dims` ...) of a tensor of known shape, through
    /// the repeat of grouped heads, and with the factor when `e` is a float32
    /// `multiply` of such an operand by a scalar constant (each element read is
    /// multiplied as that operator would: the same rounding).
    fn access(&self, t: &mut Te, e: &Expr) -> Option<Access> {
        let es = tensor_of(e)?.1;
        let mut cur = e.clone();
        let mut factor = None;
        if let Some(c) = self.def_call(&cur).filter(|c| c.op.as_op() == Some("relax.multiply")) {
            if let ([a, b], Some((DataType::FLOAT32, _))) = (c.args.as_slice(), tensor_of(&cur)) {
                let x = match (scalar_float(b), scalar_float(a)) {
                    (Some(k), _) => Some((a, k)),
                    (None, Some(k)) => Some((b, k)),
                    _ => None,
                };
                if let Some((x, k)) = x {
                    let xs = tensor_of(x)?.1;
                    if xs.len() == es.len() && xs.iter().zip(&es).all(|(p, q)| same(p, q)) {
                        factor = Some(k);
                        cur = x.clone();
                    }
                }
            }
        }
        // `e[k] = cur[axes[k]]` through every permutation.
        let mut axes: Option<Vec<usize>> = None;
        while let Some(c) = self
            .def_call(&cur)
            .filter(|c| c.op.as_op() == Some("relax.permute_dims"))
        {
            let x = c.args.first()?;
            let n = tensor_of(x)?.1.len();
            let a: Vec<usize> = match c.attrs.get("axes") {
                None | Some(AttrValue::None) => (0..n).rev().collect(),
                Some(a) => a
                    .as_int_list()?
                    .iter()
                    .map(|&a| if a < 0 { a + n as i64 } else { a })
                    .map(|a| usize::try_from(a).ok().filter(|&a| a < n))
                    .collect::<Option<Vec<usize>>>()?,
            };
            let mut seen = vec![false; n];
            for &i in &a {
                if std::mem::replace(&mut seen[i], true) {
                    return None;
                }
            }
            if a.len() != n || n != es.len() {
                break;
            }
            axes = Some(match axes {
                None => a,
                Some(prev) => prev.iter().map(|&m| a[m]).collect(),
            });
            cur = x.clone();
        }
        let (x, repeat) = match self.repeated(&cur) {
            Some((y, r)) => (y, Some(r)),
            None => (cur, None),
        };
        let si = arg_struct_info(&x)?;
        let buf = t.placeholder(&x, si.as_tensor()?).ok()?;
        Some(Access {
            buf,
            axes,
            shape: es,
            split: None,
            repeat,
            arg: x,
            factor,
            view: None,
        })
    }

    /// Read operand `a` from the tensor a `split` along its last axis cut it from,
    /// when `a` reads `t = split(x, ..)[i]` or a `reshape` of `t` that divides its
    /// last axis (GPT-2's fused query-key-value projection, split in three and
    /// reshaped into heads): the split's copy is then not needed for it.
    fn read_through_split(&self, a: &mut Access) {
        if a.view.is_some() {
            return;
        }
        if let Some((x, strides, offset)) = self.split_view(&a.arg, a.buf.shape()) {
            a.arg = x;
            a.view = Some((strides, offset));
        }
    }

    /// `(x, strides, offset)` placing the elements of `e` (of shape `shape`) in `x`
    /// (see [`Rewriter::read_through_split`]).
    fn split_view(&self, e: &Expr, shape: &[PrimExpr]) -> Option<(Expr, Vec<PrimExpr>, PrimExpr)> {
        let mut t = e.clone();
        if let Some(c) = self.def_call(&t).filter(|c| c.op.as_op() == Some("relax.reshape")) {
            t = c.args.first()?.clone();
        }
        let ExprKind::TupleGetItem { tuple, index } = self.defs.get(&t.as_var()?.id())?.kind() else {
            return None;
        };
        let sp = self.def_call(tuple).filter(|c| c.op.as_op() == Some("relax.split"))?;
        let x = sp.args.first()?;
        let xs: Vec<i64> = tensor_of(x)?.1.iter().map(|d| d.as_int()).collect::<Option<_>>()?;
        let ts: Vec<i64> = tensor_of(&t)?.1.iter().map(|d| d.as_int()).collect::<Option<_>>()?;
        let es: Vec<i64> = shape.iter().map(|d| d.as_int()).collect::<Option<_>>()?;
        let n = xs.len();
        let axis = sp.attrs.get_int("axis").unwrap_or(0);
        if n == 0 || ts.len() != n || (axis != -1 && axis != n as i64 - 1) {
            return None;
        }
        let last = xs[n - 1];
        let starts: Vec<i64> = match sp.attrs.get("indices_or_sections")? {
            AttrValue::Int(k) if *k > 0 && last % *k == 0 => (0..*k).map(|i| i * (last / *k)).collect(),
            a => std::iter::once(0).chain(a.as_int_list()?).collect(),
        };
        let start = *starts.get(*index)?;
        let (lead, w) = (&ts[..n - 1], ts[n - 1]);
        // `e` keeps `t`'s leading dimensions and divides its last one.
        if xs[..n - 1] != *lead || es.len() < n - 1 || es[..n - 1] != *lead || es[n - 1..].iter().product::<i64>() != w
        {
            return None;
        }
        if start < 0 || start + w > last {
            return None;
        }
        let mut strides = vec![0i64; es.len()];
        let mut acc = 1i64;
        for p in (n - 1..es.len()).rev() {
            strides[p] = acc;
            acc *= es[p];
        }
        let mut acc = last;
        for p in (0..n - 1).rev() {
            strides[p] = acc;
            acc *= xs[p];
        }
        Some((
            x.clone(),
            strides.into_iter().map(PrimExpr::int).collect(),
            PrimExpr::int(start),
        ))
    }

    /// `(x, (axis, r))` when `e` is `repeat(x, r, axis)` with a constant `r >= 1`
    /// and an axis (grouped-query attention's key and value heads).
    fn repeated(&self, e: &Expr) -> Option<(Expr, (usize, i64))> {
        let c = self.def_call(e).filter(|c| c.op.as_op() == Some("relax.repeat"))?;
        let x = c.args.first()?;
        let n = tensor_of(x)?.1.len() as i64;
        let r = c.attrs.get_int("repeats")?;
        let a = c.attrs.get_int("axis")?;
        let a = if a < 0 { a + n } else { a };
        if r < 1 || !(0..n).contains(&a) {
            return None;
        }
        Some((x.clone(), (a as usize, r)))
    }
}

/// The extent of dimension `axis` of tensor `out`, when a constant.
fn query_rows(out: &StructInfo, axis: usize) -> Option<i64> {
    match out {
        StructInfo::Tensor(t) => t.shape_values()?.get(axis)?.as_int(),
        _ => None,
    }
}

/// The dtype and shape of a tensor expression of known shape.
fn tensor_of(e: &Expr) -> Option<(DataType, Vec<PrimExpr>)> {
    let si = arg_struct_info(e)?;
    let t = si.as_tensor()?;
    Some((t.dtype, t.shape_values()?.to_vec()))
}

/// The value of a scalar float constant.
/// Whether extent `m` is `a * b`.
fn merges(m: &PrimExpr, a: &PrimExpr, b: &PrimExpr) -> bool {
    match (m.as_int(), a.as_int(), b.as_int()) {
        (Some(m), Some(a), Some(b)) => a.checked_mul(b) == Some(m),
        (_, Some(1), _) => same(m, b),
        (_, _, Some(1)) => same(m, a),
        _ => false,
    }
}

/// The same extent: equal constants or the same expression.
fn same(a: &PrimExpr, b: &PrimExpr) -> bool {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) => x == y,
        _ => relax_ir::tir::expr_equal(a, b),
    }
}

/// The generated fused kernels of `module` (their names start with [`KERNEL_NAME`]).
pub fn fused_kernels(module: &IRModule) -> Vec<&PrimFunc> {
    module
        .functions
        .iter()
        .filter(|(g, _)| g.name().starts_with(KERNEL_NAME))
        .filter_map(|(_, f)| match f {
            BaseFunc::Prim(p) => Some(p),
            _ => None,
        })
        .collect()
}
