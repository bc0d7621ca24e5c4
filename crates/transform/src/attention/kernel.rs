//! The fused attention kernel: one TIR block over the output rows with an online
//! softmax over the keys (see the parent module for the semantics), built from a
//! [`Spec`] of the operands' layouts.

use super::*;

/// The fused kernel for `R.nn.attention`, or `None` when it does not cover the call.
pub(super) fn lower_attention_op(call: &relax_ir::relax::Call, out: &StructInfo) -> Option<(Spec, Te)> {
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
        map: None,
    };
    Some((spec, t))
}

/// `|a - b|` of two extents (int64), folded when both are constants.
pub(super) fn abs_diff(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
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
pub(super) struct Access {
    /// The buffer read.
    pub(super) buf: Buffer,
    /// The operand is `permute_dims(buf, axes)`.
    pub(super) axes: Option<Vec<usize>>,
    /// The operand's shape (dimensions of extent 1 broadcast).
    pub(super) shape: Vec<PrimExpr>,
    /// The operand is a reshape merging the first two dimensions of `buf` (whose
    /// second has this extent): logical index `r` reads `buf[r / b, r % b, ..]`.
    pub(super) split: Option<PrimExpr>,
    /// `buf` is the input of `repeat(buf, repeats, axis)` and the operand (a
    /// permutation of) that repeat: physical index `x` on `axis` reads `x / repeats`.
    pub(super) repeat: Option<(usize, i64)>,
    /// The Relax expression `buf` stands for (the argument of the call).
    pub(super) arg: Expr,
    /// Each element read is multiplied by this (float32) constant: the operand is
    /// `multiply(x, c)` of the tensor read.
    pub(super) factor: Option<f64>,
    /// Read by the library kernel only: `buf`'s elements lie in `arg` at these
    /// strides (one per dimension of `buf`) from this offset (a part of a `split`
    /// read in place, `crate::attention::Rewriter::read_through_split`).
    pub(super) view: Option<(Vec<PrimExpr>, PrimExpr)>,
}

impl Access {
    /// The operand `e` read as it is.
    pub(super) fn plain(t: &mut Te, e: &Expr) -> Option<Access> {
        let si = arg_struct_info(e)?;
        let tsi = si.as_tensor()?;
        let buf = t.placeholder(e, tsi).ok()?;
        Some(Access {
            shape: buf.shape().to_vec(),
            buf,
            axes: None,
            split: None,
            repeat: None,
            arg: e.clone(),
            factor: None,
            view: None,
        })
    }

    /// The element at logical index `idx` (right-aligned against the operand's
    /// rank; broadcast dimensions read at 0), widened to float32.
    pub(super) fn load(&self, idx: &[PrimExpr]) -> PrimExpr {
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
        let phys = match self.repeat {
            None => phys,
            Some((a, r)) => phys
                .into_iter()
                .enumerate()
                .map(|(k, x)| {
                    if k == a {
                        let x = x.cast(DataType::INT64);
                        PrimExpr::binary(BinOp::FloorDiv, x, PrimExpr::int(r))
                    } else {
                        x
                    }
                })
                .collect(),
        };
        let x = PrimExpr::load(&self.buf, phys);
        let x = if self.buf.dtype() == DataType::FLOAT32 {
            x
        } else {
            x.cast(DataType::FLOAT32)
        };
        match self.factor {
            Some(c) => PrimExpr::binary(BinOp::Mul, x, f32c(c)),
            None => x,
        }
    }
}

/// Where the rows and operands sit.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// `R.nn.attention`: rows `(b, h, i)` (neighbouring rows share a head, so
    /// they read the same keys); `q[b, i, h, d]`, `k[b, j, h, d]`,
    /// `v[b, j, h, e]`, `bias[b, h, i, j]`, `out[b, i, h, e]`.
    Bshd,
    /// A matmul chain: rows `(batch.., i)`; `q[.., i, d]`, `kt[.., d, j]`,
    /// `v[.., j, e]`, `mask[.., i, j]`, `out[.., i, e]`.
    Batched,
}

/// One fused attention kernel.
pub(super) struct Spec {
    pub(super) layout: Layout,
    /// Extents of the row dimensions.
    pub(super) rows: Vec<PrimExpr>,
    pub(super) out_shape: Vec<PrimExpr>,
    /// Operand and result dtype.
    pub(super) dtype: DataType,
    pub(super) q: Access,
    pub(super) k: Access,
    pub(super) v: Access,
    pub(super) bias: Option<Access>,
    /// Head dimensions of the query/key and of the value.
    pub(super) d: i64,
    pub(super) dv: i64,
    /// Key length.
    pub(super) skv: PrimExpr,
    /// The factor on `q . k`.
    pub(super) scale: f64,
    /// Keys `j <= i + offset` only.
    pub(super) causal: Option<PrimExpr>,
    /// A row whose exponentials sum to 0 (or NaN) gives zeros (`where(isnan(p),
    /// 0, p)`), or with `fill` the scalar `z` times the sum of all values
    /// (`where(isnan(p), z, p)`: every weight of that row is `z`).
    pub(super) zero_empty: bool,
    pub(super) fill: Option<Access>,
    /// With `zero_empty`: only a row whose exponentials sum to exactly 0 gives
    /// zeros; a NaN sum stays NaN (torch's guard for rows of `-inf` scores).
    pub(super) nan_stays: bool,
    /// An elementwise map of the scores (after the bias), with the scores' shape.
    pub(super) map: Option<(ScoreMap, Vec<PrimExpr>)>,
}

pub(super) fn f32c(v: f64) -> PrimExpr {
    PrimExpr::float_of(v, DataType::FLOAT32)
}

pub(super) fn let_(v: &TirVar, value: PrimExpr, body: Stmt) -> Stmt {
    Stmt::Let {
        var: v.clone(),
        value,
        body: Box::new(body),
    }
}

pub(super) fn store(b: &Buffer, idx: Vec<PrimExpr>, value: PrimExpr) -> Stmt {
    Stmt::BufferStore {
        buffer: b.clone(),
        value,
        indices: idx,
        span: Span::NONE,
    }
}

/// `f(x)` for `x` in `0..n` (a constant): unrolled, in chunks of at most 64.
pub(super) fn over(name: &str, n: i64, f: &dyn Fn(PrimExpr) -> Stmt) -> Stmt {
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

pub(super) fn full_region(b: &Buffer) -> BufferRegion {
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
    pub(super) fn q_idx(&self, rv: &[PrimExpr], d: PrimExpr) -> Vec<PrimExpr> {
        match self.layout {
            Layout::Bshd => vec![rv[0].clone(), rv[2].clone(), rv[1].clone(), d],
            Layout::Batched => rv.iter().cloned().chain([d]).collect(),
        }
    }
    pub(super) fn k_idx(&self, rv: &[PrimExpr], j: PrimExpr, d: PrimExpr) -> Vec<PrimExpr> {
        match self.layout {
            Layout::Bshd => vec![rv[0].clone(), j, rv[1].clone(), d],
            Layout::Batched => {
                let n = rv.len() - 1;
                rv[..n].iter().cloned().chain([d, j]).collect()
            }
        }
    }
    pub(super) fn v_idx(&self, rv: &[PrimExpr], j: PrimExpr, e: PrimExpr) -> Vec<PrimExpr> {
        match self.layout {
            Layout::Bshd => vec![rv[0].clone(), j, rv[1].clone(), e],
            Layout::Batched => {
                let n = rv.len() - 1;
                rv[..n].iter().cloned().chain([j, e]).collect()
            }
        }
    }
    pub(super) fn bias_idx(&self, rv: &[PrimExpr], j: PrimExpr) -> Vec<PrimExpr> {
        match self.layout {
            Layout::Bshd => vec![rv[0].clone(), rv[1].clone(), rv[2].clone(), j],
            Layout::Batched => rv.iter().cloned().chain([j]).collect(),
        }
    }
    pub(super) fn out_idx(&self, rv: &[PrimExpr], e: PrimExpr) -> Vec<PrimExpr> {
        match self.layout {
            Layout::Bshd => vec![rv[0].clone(), rv[2].clone(), rv[1].clone(), e],
            Layout::Batched => rv.iter().cloned().chain([e]).collect(),
        }
    }
    pub(super) fn query_pos(&self, rv: &[PrimExpr]) -> PrimExpr {
        match self.layout {
            Layout::Bshd => rv[2].clone(),
            Layout::Batched => rv[rv.len() - 1].clone(),
        }
    }

    /// The PrimFunc and its call.
    pub(super) fn build(self, mut t: Te, out_sinfo: StructInfo) -> Lowered {
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
        if let Some((map, shape)) = &self.map {
            score = map.apply(score, &self.bias_idx(&rv, je.clone()), shape);
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
