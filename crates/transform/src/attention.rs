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
//!   permutation (no transposed copy).
//!
//! Calls the kernel does not cover are left alone for `LegalizeOps`: head
//! dimensions that are not constants, grouped heads, non-float dtypes, a
//! sliding window, batch dimensions that neither agree nor broadcast from 1.
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
//! code (`examples/bench_attention.rs`).

use std::collections::HashMap;

use relax_checker::op::legalize::te::{self, make_iters, nest, Te};
use relax_checker::op::legalize::Lowered;
use relax_ir::mutator::ExprMutator;
use relax_ir::structural::{structural_equal_prim_func, structural_hash_prim_func};
use relax_ir::tir::{BinOp, Block, BufferRegion, ForKind, Intrinsic, IterKind, Range, Stmt, TirVar};
use relax_ir::visit::for_each_expr;
use relax_ir::{
    AttrValue, Attrs, BaseFunc, Binding, BindingBlock, Buffer, DataType, Diagnostic, Expr, ExprKind, GlobalVar,
    IRModule, PrimExpr, PrimFunc, Span, StructInfo,
};

use crate::legalize::arg_struct_info;

/// Name hint of the generated PrimFuncs.
pub const KERNEL_NAME: &str = "fused_attention";

/// Which calls the pass rewrites, by where their result lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuseOptions {
    /// Rewrite calls on the host (a host `VDevice`, or unplaced with
    /// `unplaced_on_host`).
    pub host: bool,
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
            gpu: true,
            unplaced_on_host: true,
        }
    }
}

/// Target kinds whose tensors live in GPU memory.
const GPU_KINDS: &[&str] = &["webgpu", "vulkan", "metal", "cuda", "rocm", "opencl"];

impl FuseOptions {
    fn applies(&self, out: &StructInfo) -> bool {
        let on_host = match out {
            StructInfo::Tensor(t) => match &t.vdevice {
                None => self.unplaced_on_host,
                Some(vd) => !GPU_KINDS.contains(&vd.target.kind.as_str()),
            },
            _ => return false,
        };
        if on_host {
            self.host
        } else {
            self.gpu
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
        let mut uses: HashMap<u64, usize> = HashMap::new();
        for_each_expr(&f.body, &mut |e| {
            if let ExprKind::Var(v) = e.kind() {
                *uses.entry(v.id()).or_default() += 1;
            }
        });
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
                let out = var.struct_info().filter(|si| self.options.applies(si))?;
                match call.op.as_op()? {
                    "relax.nn.attention" => {
                        let l = lower_attention_op(call, out)?;
                        self.n_op += 1;
                        Some(l)
                    }
                    "relax.matmul" if b.is_dataflow => {
                        let l = self.chain(call, out).or_else(|| self.chain_export(call, out))?;
                        self.n_chain += 1;
                        Some(l)
                    }
                    _ => None,
                }
            });
            let value = match new {
                Some(l) => self.call_tir(l),
                None => value.clone(),
            };
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
    fn chain(&self, mm2: &relax_ir::relax::Call, out: &StructInfo) -> Option<Lowered> {
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
        };
        Some(spec.build(t, out.clone()))
    }

    /// The fused kernel for the chain `torch.export` + `from_exported_program`
    /// writes (`scaled_dot_product_attention` decomposed): 4-D operands
    /// reshaped to `(batch * heads, seq, dim)` for both matmuls, the scores
    /// reshaped back for the mask and the softmax, and rows whose scores are all
    /// `-inf` set to zero:
    /// `where(not(astype(max(astype(not(x == -inf), int8), -1), bool)), 0, softmax(x))`.
    fn chain_export(&self, mm2: &relax_ir::relax::Call, out: &StructInfo) -> Option<Lowered> {
        let [p3, v3] = mm2.args.as_slice() else { return None };
        let (z4, b) = self.merged(p3, true)?;
        let w = self.bound_call(&z4, 1, "relax.where")?;
        let [g, zeros, sm] = w.args.as_slice() else { return None };
        let sm_uses = match self.bound_call(zeros, 1, "relax.full_like") {
            Some(f) if f.args.first()?.as_var()? == sm.as_var()? && is_zero(f.args.get(1)?) => 2,
            _ if is_zero(zeros) => 1,
            _ => return None,
        };
        let smc = self.bound_call(sm, sm_uses, "relax.nn.softmax")?;
        let x = smc.args.first()?;
        let rank4 = tensor_of(x)?.1.len() as i64;
        let axis = smc.attrs.get_int("axis").unwrap_or(-1);
        if axis != -1 && axis != rank4 - 1 {
            return None;
        }
        // The guard: logical_not(astype(max(astype(logical_not(equal(x, -inf)), int8), [-1], keepdims), bool)).
        let g1 = self.bound_call(g, 1, "relax.logical_not")?;
        let g2 = self.bound_call(g1.args.first()?, 1, "relax.astype")?;
        let g3 = self.bound_call(g2.args.first()?, 1, "relax.max")?;
        let axes = g3.attrs.get("axis")?.as_int_list()?;
        if axes.len() != 1 || (axes[0] != -1 && axes[0] != rank4 - 1) {
            return None;
        }
        let g4 = self.bound_call(g3.args.first()?, 1, "relax.astype")?;
        let g5 = self.bound_call(g4.args.first()?, 1, "relax.logical_not")?;
        let g6 = self.bound_call(g5.args.first()?, 1, "relax.equal")?;
        let [gx, ginf] = g6.args.as_slice() else { return None };
        if gx.as_var()? != x.as_var()? || scalar_float(ginf) != Some(f64::NEG_INFINITY) {
            return None;
        }
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
        let mut acc = |e: &Expr| -> Option<Access> {
            let mut a = Access::plain(&mut t, e)?;
            a.split = Some(b.clone());
            Some(a)
        };
        let (qa, ka, va, ba) = (acc(&q4)?, acc(&kt4)?, acc(&v4)?, acc(mask)?);
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
        };
        Some(spec.build(t, out.clone()))
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

    /// How the kernel reads operand `e`: through the permutation when `e` is
    /// `permute_dims` of a tensor of known shape.
    fn access(&self, t: &mut Te, e: &Expr) -> Option<Access> {
        if let Some(c) = self.def_call(e) {
            if c.op.as_op() == Some("relax.permute_dims") {
                let x = c.args.first()?;
                let (_, xs) = tensor_of(x)?;
                let (_, es) = tensor_of(e)?;
                let n = xs.len();
                let axes: Vec<usize> = match c.attrs.get("axes") {
                    None | Some(AttrValue::None) => (0..n).rev().collect(),
                    Some(a) => a
                        .as_int_list()?
                        .iter()
                        .map(|&a| if a < 0 { a + n as i64 } else { a })
                        .map(|a| usize::try_from(a).ok().filter(|&a| a < n))
                        .collect::<Option<Vec<usize>>>()?,
                };
                let mut seen = vec![false; n];
                for &a in &axes {
                    if std::mem::replace(&mut seen[a], true) {
                        return None;
                    }
                }
                if axes.len() == n {
                    let si = arg_struct_info(x)?;
                    let buf = t.placeholder(x, si.as_tensor()?).ok()?;
                    return Some(Access {
                        buf,
                        axes: Some(axes),
                        shape: es,
                        split: None,
                    });
                }
            }
        }
        Access::plain(t, e)
    }
}

/// The dtype and shape of a tensor expression of known shape.
fn tensor_of(e: &Expr) -> Option<(DataType, Vec<PrimExpr>)> {
    let si = arg_struct_info(e)?;
    let t = si.as_tensor()?;
    Some((t.dtype, t.shape_values()?.to_vec()))
}

/// The value of a scalar float constant.
fn scalar_float(e: &Expr) -> Option<f64> {
    let c = te::scalar_constant(e)?;
    c.as_float().or_else(|| c.as_int().map(|i| i as f64))
}

fn is_zero(e: &Expr) -> bool {
    scalar_float(e) == Some(0.0)
}

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

/// The fused kernel for `R.nn.attention`, or `None` when it does not cover the call.
fn lower_attention_op(call: &relax_ir::relax::Call, out: &StructInfo) -> Option<Lowered> {
    if call.args.len() < 3 || call.args.len() > 4 {
        return None;
    }
    let (dt, qs) = tensor_of(&call.args[0])?;
    let (kdt, ks) = tensor_of(&call.args[1])?;
    let (vdt, vs) = tensor_of(&call.args[2])?;
    if !(dt == DataType::FLOAT32 || dt == DataType::FLOAT16) || kdt != dt || vdt != dt {
        return None;
    }
    if qs.len() != 4 || ks.len() != 4 || vs.len() != 4 {
        return None;
    }
    let os = match out {
        StructInfo::Tensor(t) if t.dtype == dt => t.shape_values()?.to_vec(),
        _ => return None,
    };
    if os.len() != 4 {
        return None;
    }
    // Equal batch and heads (no grouped heads), equal key and value lengths.
    for (a, b) in [
        (&qs[0], &ks[0]),
        (&qs[0], &vs[0]),
        (&qs[2], &ks[2]),
        (&qs[2], &vs[2]),
        (&ks[1], &vs[1]),
        (&qs[3], &ks[3]),
    ] {
        if !same(a, b) {
            return None;
        }
    }
    let (d, dv) = (qs[3].as_int()?, vs[3].as_int()?);
    if d <= 0 || dv <= 0 {
        return None;
    }
    let attr = |k: &str| call.attrs.get(k).cloned().unwrap_or(AttrValue::None);
    let scale = match attr("scale") {
        AttrValue::None => 1.0 / (d as f64).sqrt(),
        AttrValue::Float(f) => f,
        AttrValue::Int(i) => i as f64,
        AttrValue::PrimExpr(p) => p.as_float().or_else(|| p.as_int().map(|i| i as f64))?,
        _ => return None,
    };
    if !matches!(attr("window_size"), AttrValue::None) {
        return None;
    }
    let causal = match attr("causal_mask") {
        AttrValue::None => None,
        AttrValue::Str(s) if s == "TopLeft" => Some(PrimExpr::int(0)),
        AttrValue::Str(s) if s == "BottomRight" => Some(abs_diff(&qs[1], &ks[1])),
        _ => return None,
    };
    let mut t = Te::new();
    let q = Access::plain(&mut t, &call.args[0])?;
    let k = Access::plain(&mut t, &call.args[1])?;
    let v = Access::plain(&mut t, &call.args[2])?;
    let bias = match call.args.get(3) {
        Some(b) => {
            let (bdt, bs) = tensor_of(b)?;
            let full = [&qs[0], &qs[2], &qs[1], &ks[1]];
            if bdt != dt || bs.len() != 4 || bs.iter().zip(full).any(|(x, y)| !same(x, y) && x.as_int() != Some(1)) {
                return None;
            }
            Some(Access::plain(&mut t, b)?)
        }
        None => None,
    };
    let spec = Spec {
        layout: Layout::Bshd,
        rows: vec![os[0].clone(), os[2].clone(), os[1].clone()],
        out_shape: os.clone(),
        dtype: dt,
        q,
        k,
        v,
        bias,
        d,
        dv,
        skv: ks[1].clone(),
        scale,
        causal,
        zero_empty: false,
        fill: None,
        nan_stays: false,
    };
    Some(spec.build(t, out.clone()))
}

/// `|a - b|` of two extents (int64), folded when both are constants.
fn abs_diff(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
        return PrimExpr::int((x - y).abs());
    }
    let i64c = |e: &PrimExpr| e.clone().cast(DataType::INT64);
    let d = te::sub(i64c(a), i64c(b));
    PrimExpr::select(
        PrimExpr::binary(BinOp::Le, PrimExpr::int(0), d.clone()),
        d,
        te::sub(i64c(b), i64c(a)),
    )
}

/// How the kernel reads one operand.
#[derive(Clone)]
struct Access {
    /// The buffer read.
    buf: Buffer,
    /// The operand is `permute_dims(buf, axes)`.
    axes: Option<Vec<usize>>,
    /// The operand's shape (dimensions of extent 1 broadcast).
    shape: Vec<PrimExpr>,
    /// The operand is a reshape merging the first two dimensions of `buf` (whose
    /// second has this extent): logical index `r` reads `buf[r / b, r % b, ..]`.
    split: Option<PrimExpr>,
}

impl Access {
    /// The operand `e` read as it is.
    fn plain(t: &mut Te, e: &Expr) -> Option<Access> {
        let si = arg_struct_info(e)?;
        let tsi = si.as_tensor()?;
        let buf = t.placeholder(e, tsi).ok()?;
        Some(Access {
            shape: buf.shape().to_vec(),
            buf,
            axes: None,
            split: None,
        })
    }

    /// The element at logical index `idx` (right-aligned against the operand's
    /// rank; broadcast dimensions read at 0), widened to float32.
    fn load(&self, idx: &[PrimExpr]) -> PrimExpr {
        let split;
        let idx = match (&self.split, idx.split_first()) {
            (Some(b), Some((r0, rest))) => {
                let r0 = r0.clone().cast(DataType::INT64);
                let b = b.clone().cast(DataType::INT64);
                split = [
                    PrimExpr::binary(BinOp::FloorDiv, r0.clone(), b.clone()),
                    PrimExpr::binary(BinOp::FloorMod, r0, b),
                ]
                .into_iter()
                .chain(rest.iter().cloned())
                .collect::<Vec<_>>();
                &split[..]
            }
            _ => idx,
        };
        let r = self.shape.len();
        let mut tail: Vec<PrimExpr> = idx[idx.len().saturating_sub(r)..].to_vec();
        while tail.len() < r {
            tail.insert(0, PrimExpr::int(0));
        }
        let logical: Vec<PrimExpr> = tail
            .iter()
            .zip(&self.shape)
            .map(|(i, d)| {
                if d.as_int() == Some(1) {
                    PrimExpr::int_of(0, i.dtype())
                } else {
                    i.clone()
                }
            })
            .collect();
        let phys = match &self.axes {
            None => logical,
            Some(axes) => {
                let mut p = logical.clone();
                for (k, &a) in axes.iter().enumerate() {
                    if let (Some(slot), Some(l)) = (p.get_mut(a), logical.get(k)) {
                        *slot = l.clone();
                    }
                }
                p
            }
        };
        let x = PrimExpr::load(&self.buf, phys);
        if self.buf.dtype() == DataType::FLOAT32 {
            x
        } else {
            x.cast(DataType::FLOAT32)
        }
    }
}

/// Where the rows and operands sit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// `R.nn.attention`: rows `(b, h, i)` (neighbouring rows share a head, so
    /// they read the same keys); `q[b, i, h, d]`, `k[b, j, h, d]`,
    /// `v[b, j, h, e]`, `bias[b, h, i, j]`, `out[b, i, h, e]`.
    Bshd,
    /// A matmul chain: rows `(batch.., i)`; `q[.., i, d]`, `kt[.., d, j]`,
    /// `v[.., j, e]`, `mask[.., i, j]`, `out[.., i, e]`.
    Batched,
}

/// One fused attention kernel.
struct Spec {
    layout: Layout,
    /// Extents of the row dimensions.
    rows: Vec<PrimExpr>,
    out_shape: Vec<PrimExpr>,
    /// Operand and result dtype.
    dtype: DataType,
    q: Access,
    k: Access,
    v: Access,
    bias: Option<Access>,
    /// Head dimensions of the query/key and of the value.
    d: i64,
    dv: i64,
    /// Key length.
    skv: PrimExpr,
    /// The factor on `q . k`.
    scale: f64,
    /// Keys `j <= i + offset` only.
    causal: Option<PrimExpr>,
    /// A row whose exponentials sum to 0 (or NaN) gives zeros (`where(isnan(p),
    /// 0, p)`), or with `fill` the scalar `z` times the sum of all values
    /// (`where(isnan(p), z, p)`: every weight of that row is `z`).
    zero_empty: bool,
    fill: Option<Access>,
    /// With `zero_empty`: only a row whose exponentials sum to exactly 0 gives
    /// zeros; a NaN sum stays NaN (torch's guard for rows of `-inf` scores).
    nan_stays: bool,
}

fn f32c(v: f64) -> PrimExpr {
    PrimExpr::float_of(v, DataType::FLOAT32)
}

fn let_(v: &TirVar, value: PrimExpr, body: Stmt) -> Stmt {
    Stmt::Let {
        var: v.clone(),
        value,
        body: Box::new(body),
    }
}

fn store(b: &Buffer, idx: Vec<PrimExpr>, value: PrimExpr) -> Stmt {
    Stmt::BufferStore {
        buffer: b.clone(),
        value,
        indices: idx,
        span: Span::NONE,
    }
}

/// `f(x)` for `x` in `0..n` (a constant): unrolled, in chunks of at most 64.
fn over(name: &str, n: i64, f: &dyn Fn(PrimExpr) -> Stmt) -> Stmt {
    let dt = DataType::INT64;
    if n <= 64 {
        let v = TirVar::new(name, dt);
        return te::loop_over(&v, &PrimExpr::int(n), ForKind::Unrolled, f(v.to_expr()));
    }
    let c = (1..=64).rev().find(|c| n % c == 0).unwrap_or(1);
    let (o, u) = (
        TirVar::new(format!("{name}_o"), dt),
        TirVar::new(format!("{name}_i"), dt),
    );
    let x = te::add(te::mul(o.to_expr(), PrimExpr::int(c)), u.to_expr());
    te::loop_over(
        &o,
        &PrimExpr::int(n / c),
        ForKind::Serial,
        te::loop_over(&u, &PrimExpr::int(c), ForKind::Unrolled, f(x)),
    )
}

fn full_region(b: &Buffer) -> BufferRegion {
    BufferRegion {
        buffer: b.clone(),
        region: b
            .shape()
            .iter()
            .map(|e| Range::new(PrimExpr::int_of(0, e.dtype()), e.clone()))
            .collect(),
    }
}

impl Spec {
    /// Logical indices of the operands for row `rv`.
    fn q_idx(&self, rv: &[PrimExpr], d: PrimExpr) -> Vec<PrimExpr> {
        match self.layout {
            Layout::Bshd => vec![rv[0].clone(), rv[2].clone(), rv[1].clone(), d],
            Layout::Batched => rv.iter().cloned().chain([d]).collect(),
        }
    }
    fn k_idx(&self, rv: &[PrimExpr], j: PrimExpr, d: PrimExpr) -> Vec<PrimExpr> {
        match self.layout {
            Layout::Bshd => vec![rv[0].clone(), j, rv[1].clone(), d],
            Layout::Batched => {
                let n = rv.len() - 1;
                rv[..n].iter().cloned().chain([d, j]).collect()
            }
        }
    }
    fn v_idx(&self, rv: &[PrimExpr], j: PrimExpr, e: PrimExpr) -> Vec<PrimExpr> {
        match self.layout {
            Layout::Bshd => vec![rv[0].clone(), j, rv[1].clone(), e],
            Layout::Batched => {
                let n = rv.len() - 1;
                rv[..n].iter().cloned().chain([j, e]).collect()
            }
        }
    }
    fn bias_idx(&self, rv: &[PrimExpr], j: PrimExpr) -> Vec<PrimExpr> {
        match self.layout {
            Layout::Bshd => vec![rv[0].clone(), rv[1].clone(), rv[2].clone(), j],
            Layout::Batched => rv.iter().cloned().chain([j]).collect(),
        }
    }
    fn out_idx(&self, rv: &[PrimExpr], e: PrimExpr) -> Vec<PrimExpr> {
        match self.layout {
            Layout::Bshd => vec![rv[0].clone(), rv[2].clone(), rv[1].clone(), e],
            Layout::Batched => rv.iter().cloned().chain([e]).collect(),
        }
    }
    fn query_pos(&self, rv: &[PrimExpr]) -> PrimExpr {
        match self.layout {
            Layout::Bshd => rv[2].clone(),
            Layout::Batched => rv[rv.len() - 1].clone(),
        }
    }

    /// The PrimFunc and its call.
    fn build(self, mut t: Te, out_sinfo: StructInfo) -> Lowered {
        let f32t = DataType::FLOAT32;
        let out = Buffer::new("attention_out", self.dtype, self.out_shape.clone());
        let names: Vec<String> = (0..self.rows.len()).map(|i| format!("r{i}")).collect();
        let (loops, ivs) = make_iters(&self.rows, &names, IterKind::DataPar);
        let rv: Vec<PrimExpr> = ivs.iter().map(|iv| iv.var.to_expr()).collect();
        let qrow = Buffer::with_scope("q_row", f32t, vec![PrimExpr::int(self.d)], "local");
        let acc = Buffer::with_scope("acc", f32t, vec![PrimExpr::int(self.dv)], "local");
        let st = Buffer::with_scope("state", f32t, vec![PrimExpr::int(3)], "local");
        let at = |b: &Buffer, i: i64| PrimExpr::load(b, vec![PrimExpr::int(i)]);
        let ld = |b: &Buffer, i: PrimExpr| PrimExpr::load(b, vec![i]);
        let bin = PrimExpr::binary;

        // One key: the score, the online-softmax update, the weighted value.
        let j = TirVar::new("j", DataType::INT64);
        let je = j.to_expr();
        let dot = over("kd", self.d, &|x| {
            let kv = self.k.load(&self.k_idx(&rv, je.clone(), x.clone()));
            store(
                &st,
                vec![PrimExpr::int(2)],
                bin(BinOp::Add, at(&st, 2), bin(BinOp::Mul, ld(&qrow, x), kv)),
            )
        });
        let (s, m, e, gt, corr, p) = (
            TirVar::new("s", f32t),
            TirVar::new("m", f32t),
            TirVar::new("e", f32t),
            TirVar::new("gt", DataType::BOOL),
            TirVar::new("corr", f32t),
            TirVar::new("p", f32t),
        );
        let mut score = bin(BinOp::Mul, at(&st, 2), f32c(self.scale));
        if let Some(b) = &self.bias {
            score = bin(BinOp::Add, score, b.load(&self.bias_idx(&rv, je.clone())));
        }
        let accumulate = over("ve", self.dv, &|x| {
            let vv = self.v.load(&self.v_idx(&rv, je.clone(), x.clone()));
            store(
                &acc,
                vec![x.clone()],
                bin(
                    BinOp::Add,
                    bin(BinOp::Mul, ld(&acc, x), corr.to_expr()),
                    bin(BinOp::Mul, p.to_expr(), vv),
                ),
            )
        });
        let update = Stmt::seq(vec![
            store(
                &st,
                vec![PrimExpr::int(1)],
                bin(BinOp::Add, bin(BinOp::Mul, at(&st, 1), corr.to_expr()), p.to_expr()),
            ),
            store(&st, vec![PrimExpr::int(0)], bin(BinOp::Max, m.to_expr(), s.to_expr())),
            accumulate,
        ]);
        // exp(min(s, m) - max(s, m)): the one exponential of this key. When the
        // score beats the running maximum it rescales the state (corr) and the
        // key weighs 1; else the key weighs it.
        let key = Stmt::seq(vec![
            store(&st, vec![PrimExpr::int(2)], f32c(0.0)),
            dot,
            let_(
                &s,
                score,
                let_(
                    &m,
                    at(&st, 0),
                    let_(
                        &e,
                        PrimExpr::intrinsic_call(
                            Intrinsic::Exp,
                            f32t,
                            vec![bin(
                                BinOp::Sub,
                                bin(BinOp::Min, s.to_expr(), m.to_expr()),
                                bin(BinOp::Max, s.to_expr(), m.to_expr()),
                            )],
                        ),
                        let_(
                            &gt,
                            bin(BinOp::Gt, s.to_expr(), m.to_expr()),
                            let_(
                                &corr,
                                PrimExpr::select(gt.to_expr(), e.to_expr(), f32c(1.0)),
                                let_(&p, PrimExpr::select(gt.to_expr(), f32c(1.0), e.to_expr()), update),
                            ),
                        ),
                    ),
                ),
            ),
        ]);
        let keys_end = match &self.causal {
            None => self.skv.clone(),
            Some(off) => {
                let i = self.query_pos(&rv).cast(DataType::INT64);
                let lim = te::add(te::add(i, off.clone()), PrimExpr::int(1));
                bin(BinOp::Min, self.skv.clone().cast(DataType::INT64), lim)
            }
        };
        let key_loop = te::loop_over(&j, &keys_end, ForKind::Serial, key);
        let l = TirVar::new("l", f32t);
        let write = |val: &dyn Fn(PrimExpr) -> PrimExpr| {
            over("oe", self.dv, &|x| {
                let v = val(x.clone());
                let v = if self.dtype != f32t { v.cast(self.dtype) } else { v };
                store(&out, self.out_idx(&rv, x), v)
            })
        };
        let normal = write(&|x| {
            let val = bin(BinOp::Div, ld(&acc, x), l.to_expr());
            if self.zero_empty && self.fill.is_none() {
                let op = if self.nan_stays { BinOp::Ne } else { BinOp::Gt };
                PrimExpr::select(bin(op, l.to_expr(), f32c(0.0)), val, f32c(0.0))
            } else {
                val
            }
        });
        let finish_rows = match &self.fill {
            None => normal,
            Some(z) => {
                // A row with no weight (or NaN): z * sum_j v[j].
                let j2 = TirVar::new("j", DataType::INT64);
                let sum_v = te::loop_over(
                    &j2,
                    &self.skv,
                    ForKind::Serial,
                    over("se", self.dv, &|x| {
                        let vv = self.v.load(&self.v_idx(&rv, j2.to_expr(), x.clone()));
                        store(&acc, vec![x.clone()], bin(BinOp::Add, ld(&acc, x), vv))
                    }),
                );
                let zv = z.load(&[]);
                let empty = Stmt::seq(vec![
                    over("ze", self.dv, &|x| store(&acc, vec![x], f32c(0.0))),
                    sum_v,
                    write(&|x| bin(BinOp::Mul, zv.clone(), ld(&acc, x))),
                ]);
                Stmt::If {
                    cond: bin(BinOp::Gt, l.to_expr(), f32c(0.0)),
                    then_branch: Box::new(normal),
                    else_branch: Some(Box::new(empty)),
                }
            }
        };
        let finish = let_(&l, at(&st, 1), finish_rows);
        let body = Stmt::seq(vec![
            over("qd", self.d, &|x| {
                store(&qrow, vec![x.clone()], self.q.load(&self.q_idx(&rv, x)))
            }),
            over("ie", self.dv, &|x| store(&acc, vec![x], f32c(0.0))),
            store(&st, vec![PrimExpr::int(0)], te::min_value(f32t)),
            store(&st, vec![PrimExpr::int(1)], f32c(0.0)),
            key_loop,
            finish,
        ]);
        let mut reads: Vec<BufferRegion> = [&self.q, &self.k, &self.v]
            .into_iter()
            .chain(self.bias.as_ref())
            .chain(self.fill.as_ref())
            .map(|a| full_region(&a.buf))
            .collect();
        reads.dedup_by(|a, b| a.buffer == b.buffer);
        let mut out_at = self.out_idx(&rv, PrimExpr::int(0));
        out_at.pop();
        let mut writes_region: Vec<Range> = out_at
            .into_iter()
            .map(|x| Range::new(x.clone(), PrimExpr::int_of(1, x.dtype())))
            .collect();
        writes_region.push(Range::new(PrimExpr::int(0), PrimExpr::int(self.dv)));
        let block = Block {
            name: "attention".into(),
            iter_vars: ivs,
            reads,
            writes: vec![BufferRegion {
                buffer: out.clone(),
                region: writes_region,
            }],
            init: None,
            alloc_buffers: vec![qrow, acc, st],
            match_buffers: Vec::new(),
            annotations: Attrs::new(),
            body: Box::new(body),
        };
        t.push_stage(nest(loops, block), vec![out]);
        Lowered::from_te(KERNEL_NAME, t, 1, out_sinfo)
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
