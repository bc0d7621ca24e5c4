//! A small tensor-expression builder: placeholders, `compute` and reduction
//! stages, assembled into an `s_tir` PrimFunc with `T.sblock`s the way TVM's
//! `te.create_prim_func` lays them out.

use relax_ir::tir::{BinOp, Block, BufferRegion, For, ForKind, IterKind, IterVar, PrimExprKind, Range};
use relax_ir::{
    AttrValue, Attrs, Buffer, DataType, Expr, ExprKind, PrimExpr, PrimFunc, Span, Stmt, StructInfo, TirVar,
};

use super::{OrSkip, Skip};
use relax_ir::relax::TensorStructInfo;

/// A value usable inside a compute body: a tensor input or an inlined scalar.
#[derive(Clone, Debug)]
pub enum Operand {
    /// A tensor placeholder.
    Tensor(Buffer),
    /// A scalar constant inlined into the body.
    Scalar(PrimExpr),
}

impl Operand {
    /// The element type.
    pub fn dtype(&self) -> DataType {
        match self {
            Operand::Tensor(b) => b.dtype(),
            Operand::Scalar(e) => e.dtype(),
        }
    }
    /// The shape (empty for a scalar).
    pub fn shape(&self) -> Vec<PrimExpr> {
        match self {
            Operand::Tensor(b) => b.shape().to_vec(),
            Operand::Scalar(_) => Vec::new(),
        }
    }
    /// The rank.
    pub fn ndim(&self) -> usize {
        match self {
            Operand::Tensor(b) => b.shape().len(),
            Operand::Scalar(_) => 0,
        }
    }
    /// The element at `indices`.
    pub fn at(&self, indices: &[PrimExpr]) -> PrimExpr {
        match self {
            Operand::Tensor(b) => PrimExpr::load(b, indices.to_vec()),
            Operand::Scalar(e) => e.clone(),
        }
    }
    /// Broadcast access: `indices` index the output of rank `indices.len()`;
    /// this operand's dimensions align to the right, dimensions of extent 1
    /// (where the output's is not 1) read index 0 (topi's broadcast rule).
    pub fn bcast(&self, indices: &[PrimExpr], out_shape: &[PrimExpr]) -> PrimExpr {
        match self {
            Operand::Scalar(e) => e.clone(),
            Operand::Tensor(b) => {
                let r = b.shape().len();
                let off = indices.len().saturating_sub(r);
                let idx = b
                    .shape()
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let oi = off + i;
                        let out_d = out_shape.get(oi);
                        if d.as_int() == Some(1) && out_d.and_then(|o| o.as_int()) != Some(1) {
                            PrimExpr::int_of(0, d.dtype())
                        } else {
                            indices.get(oi).cloned().unwrap_or_else(|| PrimExpr::int(0))
                        }
                    })
                    .collect();
                PrimExpr::load(b, idx)
            }
        }
    }
}

/// A read of a scalar `R.const`, as an inlined TIR constant.
pub fn scalar_constant(e: &Expr) -> Option<PrimExpr> {
    let ExprKind::Constant { data } = e.kind() else {
        return None;
    };
    if !data.shape.is_empty() {
        return None;
    }
    let dt = data.dtype;
    let b = &data.data;
    let int = |n: usize| -> Option<i64> {
        let s = b.get(..n)?;
        let mut buf = [0u8; 8];
        buf[..n].copy_from_slice(s);
        let v = i64::from_le_bytes(buf);
        // sign-extend
        let shift = 64 - 8 * n as u32;
        Some(if dt.is_int() && n < 8 { (v << shift) >> shift } else { v })
    };
    if dt.is_bool() {
        return Some(PrimExpr::bool(*b.first()? != 0));
    }
    if dt.is_float() {
        let v = match dt.bits {
            32 => f32::from_le_bytes(b.get(..4)?.try_into().ok()?) as f64,
            64 => f64::from_le_bytes(b.get(..8)?.try_into().ok()?),
            16 => {
                let h = u16::from_le_bytes(b.get(..2)?.try_into().ok()?);
                if dt.code == relax_ir::TypeCode::BFloat {
                    // bfloat16 is the upper half of a float32.
                    f32::from_bits(u32::from(h) << 16) as f64
                } else {
                    half_to_f64(h)
                }
            }
            _ => return None,
        };
        return Some(PrimExpr::float_of(v, dt));
    }
    if dt.is_integer() {
        let n = (dt.bits as usize).div_ceil(8);
        return Some(PrimExpr::int_of(int(n)?, dt));
    }
    None
}

fn half_to_f64(h: u16) -> f64 {
    let sign = if h >> 15 == 1 { -1.0 } else { 1.0 };
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f64;
    if e == 0 {
        sign * m * 2f64.powi(-24)
    } else if e == 31 {
        if m == 0.0 {
            sign * f64::INFINITY
        } else {
            f64::NAN
        }
    } else {
        sign * (1.0 + m / 1024.0) * 2f64.powi(e - 15)
    }
}

/// A constant of `dtype` with value `v` (float or int as the type says).
pub fn konst(v: f64, dtype: DataType) -> PrimExpr {
    if dtype.is_float() {
        PrimExpr::float_of(v, dtype)
    } else if dtype.is_bool() {
        PrimExpr::bool(v != 0.0)
    } else {
        PrimExpr::int_of(v as i64, dtype)
    }
}

/// The lowest value of `dtype` (`T.min_value`), as TVM folds it.
pub fn min_value(dtype: DataType) -> PrimExpr {
    extreme_value(dtype, false)
}

/// The highest value of `dtype` (`T.max_value`).
pub fn max_value(dtype: DataType) -> PrimExpr {
    extreme_value(dtype, true)
}

/// The highest (`highest`) or lowest value of `dtype`: the largest finite float
/// (`65504` for float16), the integer range of the width, `0` and `1` for bool.
fn extreme_value(dtype: DataType, highest: bool) -> PrimExpr {
    if dtype.is_float() {
        let v = match dtype.bits {
            // TVM's `min_value("bfloat16")` is `-f32::MAX`, which rounds to -inf in
            // bfloat16 (65504 would cap a bfloat16 max at -65536)
            16 if dtype.code == relax_ir::TypeCode::BFloat => f32::MAX as f64,
            16 => 65504.0,
            32 => f32::MAX as f64,
            _ => f64::MAX,
        };
        PrimExpr::float_of(if highest { v } else { -v }, dtype)
    } else if dtype.is_bool() {
        PrimExpr::bool(highest)
    } else if dtype.is_uint() {
        let v = match (highest, dtype.bits) {
            (false, _) => 0,
            // 2^64 - 1, held as the bits of -1 (as `T.uint64(18446744073709551615)`).
            (true, 64) => -1,
            (true, b) if b >= 63 => i64::MAX,
            (true, b) => (1i64 << b) - 1,
        };
        PrimExpr::int_of(v, dtype)
    } else {
        let v = match (highest, dtype.bits) {
            (true, b) if b >= 64 => i64::MAX,
            (false, b) if b >= 64 => i64::MIN,
            (true, b) => (1i64 << (b - 1)) - 1,
            (false, b) => -(1i64 << (b - 1)),
        };
        PrimExpr::int_of(v, dtype)
    }
}

/// A reduction's description.
pub struct Reduce<'a> {
    /// Output (block) name.
    pub name: &'a str,
    /// Output shape (spatial extents).
    pub shape: Vec<PrimExpr>,
    /// Prefix of the spatial loop variables (`"ax"`, `"i"`).
    pub spatial_prefix: &'a str,
    /// Reduction axes: loop-variable name and extent.
    pub red_axes: Vec<(String, PrimExpr)>,
    /// Initial value.
    pub init: PrimExpr,
}

impl<'a> Reduce<'a> {
    /// A sum of `dtype` starting from zero.
    pub fn sum(
        name: &'a str,
        shape: Vec<PrimExpr>,
        spatial_prefix: &'a str,
        red_axes: Vec<(String, PrimExpr)>,
        dtype: DataType,
    ) -> Reduce<'a> {
        Reduce {
            name,
            shape,
            spatial_prefix,
            red_axes,
            init: konst(0.0, dtype),
        }
    }
}

/// The PrimFunc under construction.
#[derive(Default)]
pub struct Te {
    /// Input placeholders in parameter order.
    pub inputs: Vec<Buffer>,
    /// The Relax arguments, one per input.
    pub args: Vec<Expr>,
    stages: Vec<Stmt>,
    allocs: Vec<Buffer>,
    outputs: Vec<Buffer>,
    /// Stage names used so far (TVM suffixes repeats: `T_add`, `T_add_1`).
    used_names: Vec<String>,
}

impl Te {
    /// A fresh builder.
    pub fn new() -> Te {
        Te::default()
    }

    /// A stage name not used yet in this function: `name`, else `name_1`, `name_2`, ...
    /// (the way `te.create_prim_func` renames repeated stage names).
    pub fn unique_name(&mut self, name: &str) -> String {
        let taken = |n: &str, used: &[String]| used.iter().any(|u| u == n) || n.is_empty();
        let mut out = name.to_string();
        let mut k = 1;
        while taken(&out, &self.used_names) {
            out = format!("{name}_{k}");
            k += 1;
        }
        self.used_names.push(out.clone());
        out
    }

    /// Bind a Relax argument: a scalar constant is inlined, a tensor of known
    /// shape becomes a placeholder. A skip when it is neither.
    pub fn input(&mut self, e: &Expr, sinfo: &StructInfo) -> Result<Operand, Skip> {
        if let Some(c) = scalar_constant(e) {
            return Ok(Operand::Scalar(c));
        }
        let t = sinfo.as_tensor().or_skip("an operand is not a tensor")?;
        let b = self.placeholder(e, t)?;
        Ok(Operand::Tensor(b))
    }

    /// A placeholder for a tensor argument (reused if the same variable
    /// repeats); a skip when its shape or dtype is not known.
    pub fn placeholder(&mut self, e: &Expr, t: &TensorStructInfo) -> Result<Buffer, Skip> {
        let shape = t.shape_values().or_skip("an operand's shape is not known")?.to_vec();
        if t.dtype.is_void() {
            return Err(Skip::new("an operand's dtype is not known"));
        }
        if let Some(v) = e.as_var() {
            for (i, a) in self.args.iter().enumerate() {
                if a.as_var() == Some(v) {
                    return Ok(self.inputs[i].clone());
                }
            }
        }
        let name = match e.kind() {
            ExprKind::Var(v) => v.name().to_string(),
            _ => "A".to_string(),
        };
        let b = Buffer::new(name, t.dtype, shape);
        self.inputs.push(b.clone());
        self.args.push(e.clone());
        Ok(b)
    }

    /// An element-wise stage: `name[i...] = f(i...)` over `shape`; loop
    /// variables are `{prefix}0, {prefix}1, ...`. Intermediate unless it is the last.
    pub fn compute(
        &mut self,
        name: &str,
        shape: &[PrimExpr],
        prefix: &str,
        f: impl FnOnce(&[PrimExpr]) -> PrimExpr,
    ) -> Buffer {
        let names: Vec<String> = (0..shape.len()).map(|i| format!("{prefix}{i}")).collect();
        self.compute_named(name, shape, &names, f)
    }

    /// [`Te::compute`] with explicit loop-variable names.
    pub fn compute_named(
        &mut self,
        name: &str,
        shape: &[PrimExpr],
        names: &[String],
        f: impl FnOnce(&[PrimExpr]) -> PrimExpr,
    ) -> Buffer {
        self.compute_annotated(name, shape, names, Attrs::new(), f)
    }

    /// [`Te::compute_named`] with block annotations.
    pub fn compute_annotated(
        &mut self,
        name: &str,
        shape: &[PrimExpr],
        names: &[String],
        annotations: Attrs,
        f: impl FnOnce(&[PrimExpr]) -> PrimExpr,
    ) -> Buffer {
        let name = &self.unique_name(name);
        let (loops, mut ivs) = make_iters(shape, names, IterKind::DataPar);
        let idx: Vec<PrimExpr> = ivs.iter().map(|iv| iv.var.to_expr()).collect();
        let body = f(&idx);
        let out = Buffer::new(name, body.dtype(), shape.to_vec());
        // A 0-d stage still has one spatial block variable: `vi = T.axis.spatial(1, 0)`.
        let scalar = shape.is_empty();
        if scalar {
            ivs.push(IterVar {
                var: TirVar::new("vi", DataType::INT64),
                dom: Range::new(PrimExpr::int(0), PrimExpr::int(1)),
                kind: IterKind::DataPar,
            });
        }
        let mut reads = Vec::new();
        collect_reads(&body, &out, &mut reads);
        let store = Stmt::BufferStore {
            buffer: out.clone(),
            value: body,
            indices: idx.clone(),
            span: Span::NONE,
        };
        let block = Block {
            name: name.to_string(),
            iter_vars: ivs,
            reads: regions(reads),
            writes: vec![point_region(&out, &idx)],
            init: None,
            alloc_buffers: Vec::new(),
            match_buffers: Vec::new(),
            annotations,
            body: Box::new(store),
        };
        let stage = if scalar {
            Stmt::BlockRealize {
                iter_values: vec![PrimExpr::int(0)],
                predicate: None,
                block: Box::new(block),
            }
        } else {
            nest(loops, block)
        };
        self.stages.push(stage);
        self.outputs.push(out.clone());
        out
    }

    /// A reduction stage: `name[s...] = combine(name[s...], f(s..., r...))` with
    /// `T.init()` setting `init`. Spatial loops first, then reduction loops.
    pub fn reduce(
        &mut self,
        r: Reduce<'_>,
        combine: impl FnOnce(PrimExpr, PrimExpr) -> PrimExpr,
        f: impl FnOnce(&[PrimExpr], &[PrimExpr]) -> PrimExpr,
    ) -> Buffer {
        self.reduce_annotated(r, Attrs::new(), combine, f)
    }

    /// [`Te::reduce`] with block annotations.
    pub fn reduce_annotated(
        &mut self,
        r: Reduce<'_>,
        annotations: Attrs,
        combine: impl FnOnce(PrimExpr, PrimExpr) -> PrimExpr,
        f: impl FnOnce(&[PrimExpr], &[PrimExpr]) -> PrimExpr,
    ) -> Buffer {
        let snames: Vec<String> = (0..r.shape.len()).map(|i| format!("{}{i}", r.spatial_prefix)).collect();
        self.reduce_named(r, &snames, annotations, combine, f)
    }

    /// [`Te::reduce_annotated`] with explicit spatial loop-variable names
    /// (`r.spatial_prefix` is not used).
    pub fn reduce_named(
        &mut self,
        r: Reduce<'_>,
        snames: &[String],
        annotations: Attrs,
        combine: impl FnOnce(PrimExpr, PrimExpr) -> PrimExpr,
        f: impl FnOnce(&[PrimExpr], &[PrimExpr]) -> PrimExpr,
    ) -> Buffer {
        let name = self.unique_name(r.name);
        let (mut loops, mut ivs) = make_iters(&r.shape, snames, IterKind::DataPar);
        let rnames: Vec<String> = r.red_axes.iter().map(|(n, _)| n.clone()).collect();
        let rext: Vec<PrimExpr> = r.red_axes.iter().map(|(_, e)| e.clone()).collect();
        let (rloops, rivs) = make_iters(&rext, &rnames, IterKind::CommReduce);
        let sidx: Vec<PrimExpr> = ivs.iter().map(|iv| iv.var.to_expr()).collect();
        let ridx: Vec<PrimExpr> = rivs.iter().map(|iv| iv.var.to_expr()).collect();
        let val = f(&sidx, &ridx);
        let out = Buffer::new(&name, r.init.dtype(), r.shape.clone());
        let mut reads = Vec::new();
        collect_reads(&val, &out, &mut reads);
        let acc = PrimExpr::load(&out, sidx.clone());
        let store = Stmt::BufferStore {
            buffer: out.clone(),
            value: combine(acc, val),
            indices: sidx.clone(),
            span: Span::NONE,
        };
        let init = Stmt::BufferStore {
            buffer: out.clone(),
            value: r.init,
            indices: sidx.clone(),
            span: Span::NONE,
        };
        loops.extend(rloops);
        ivs.extend(rivs);
        let block = Block {
            name,
            iter_vars: ivs,
            reads: regions(reads),
            writes: vec![point_region(&out, &sidx)],
            init: Some(Box::new(init)),
            alloc_buffers: Vec::new(),
            match_buffers: Vec::new(),
            annotations,
            body: Box::new(store),
        };
        self.stages.push(nest(loops, block));
        self.outputs.push(out.clone());
        out
    }

    /// Add a pre-built stage writing `outputs` (last one is the function output).
    pub fn push_stage(&mut self, stmt: Stmt, outputs: Vec<Buffer>) {
        self.stages.push(stmt);
        self.outputs.extend(outputs);
    }

    /// Make `bufs` (stage outputs) the function's outputs, in this order: they
    /// move to the end of the output list (call [`Te::build`] with their count).
    pub fn mark_outputs(&mut self, bufs: &[Buffer]) {
        self.outputs.retain(|o| !bufs.contains(o));
        self.outputs.extend(bufs.iter().cloned());
    }

    /// Assemble the PrimFunc; the last `n_out` stage outputs are the function's
    /// outputs, earlier ones are allocated in the root block.
    pub fn build(self, n_out: usize) -> PrimFunc {
        let Te {
            inputs,
            stages,
            mut allocs,
            outputs,
            ..
        } = self;
        let split = outputs.len().saturating_sub(n_out);
        allocs.extend(outputs[..split].iter().cloned());
        let outs = &outputs[split..];
        let mut params = Vec::new();
        let mut buffer_map = Vec::new();
        for b in inputs.iter().chain(outs.iter()) {
            let h = TirVar::new_handle(b.name(), Some(b.dtype()), Some(b.scope().to_string()));
            params.push(h.clone());
            buffer_map.push((h, b.clone()));
        }
        let mut attrs = Attrs::new();
        attrs.set("tirx.noalias", AttrValue::Bool(true));
        root_prim_func(params, buffer_map, allocs, stages, attrs)
    }
}

/// A private `s_tir` PrimFunc whose body is the root block allocating `allocs` and
/// running `stages` in order.
pub fn root_prim_func(
    params: Vec<TirVar>,
    buffer_map: Vec<(TirVar, Buffer)>,
    allocs: Vec<Buffer>,
    stages: Vec<Stmt>,
    attrs: Attrs,
) -> PrimFunc {
    let body = Stmt::root_block(allocs, Stmt::seq(stages));
    PrimFunc {
        params,
        buffer_map,
        ret_type: None,
        body,
        attrs,
        private: true,
        s_tir: true,
        span: Span::NONE,
    }
}

/// Loops and block iteration variables (`v_{name}`) over `shape`.
pub fn make_iters(shape: &[PrimExpr], names: &[String], kind: IterKind) -> (Vec<(TirVar, PrimExpr)>, Vec<IterVar>) {
    let mut loops = Vec::new();
    let mut ivs = Vec::new();
    for (i, ext) in shape.iter().enumerate() {
        let n = names.get(i).cloned().unwrap_or_else(|| format!("i{i}"));
        let dt = ext.dtype();
        let lv = TirVar::new(n.clone(), dt);
        let bv = TirVar::new(format!("v_{n}"), dt);
        ivs.push(IterVar {
            var: bv,
            dom: Range::new(PrimExpr::int_of(0, dt), ext.clone()),
            kind,
        });
        loops.push((lv, ext.clone()));
    }
    (loops, ivs)
}

/// Wrap `block` in its `BlockRealize` and the loop nest binding its variables.
pub fn nest(loops: Vec<(TirVar, PrimExpr)>, block: Block) -> Stmt {
    let iter_values = loops.iter().map(|(v, _)| v.to_expr()).collect();
    let mut s = Stmt::BlockRealize {
        iter_values,
        predicate: None,
        block: Box::new(block),
    };
    for (v, ext) in loops.into_iter().rev() {
        s = Stmt::For(For::from_zero(v, ext, ForKind::Serial, s));
    }
    s
}

/// The region `buf[idx]` (one element).
pub fn point_region(buf: &Buffer, idx: &[PrimExpr]) -> BufferRegion {
    BufferRegion {
        buffer: buf.clone(),
        region: idx
            .iter()
            .map(|i| Range::new(i.clone(), PrimExpr::int_of(1, i.dtype())))
            .collect(),
    }
}

/// Buffer loads in `e` (first appearance order), skipping `out`.
pub fn collect_reads(e: &PrimExpr, out: &Buffer, acc: &mut Vec<(Buffer, Vec<Vec<PrimExpr>>)>) {
    match e.kind() {
        PrimExprKind::BufferLoad { buffer, indices } => {
            for i in indices {
                collect_reads(i, out, acc);
            }
            if buffer == out {
                return;
            }
            match acc.iter_mut().find(|(b, _)| b == buffer) {
                Some((_, list)) => {
                    // Past a few distinct accesses duplicates are kept rather than searched
                    // for (quadratic in the loads of a many-input concat); `regions` only
                    // asks whether all accesses agree, which duplicates do not change.
                    if list.len() > 64 || !list.iter().any(|l| idx_eq(l, indices)) {
                        list.push(indices.clone());
                    }
                }
                None => acc.push((buffer.clone(), vec![indices.clone()])),
            }
        }
        PrimExprKind::Cast { value, .. } | PrimExprKind::Not(value) => collect_reads(value, out, acc),
        PrimExprKind::Binary { a, b, .. } => {
            collect_reads(a, out, acc);
            collect_reads(b, out, acc);
        }
        PrimExprKind::Select { cond, t, f } => {
            collect_reads(cond, out, acc);
            collect_reads(t, out, acc);
            collect_reads(f, out, acc);
        }
        PrimExprKind::Call { args, .. } => {
            for a in args {
                collect_reads(a, out, acc);
            }
        }
        PrimExprKind::Let { value, body, .. } => {
            collect_reads(value, out, acc);
            collect_reads(body, out, acc);
        }
        _ => {}
    }
}

fn idx_eq(a: &[PrimExpr], b: &[PrimExpr]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| relax_ir::structural::structural_equal_prim_expr(x, y))
}

/// The region of all of `buf`.
pub fn whole_region(buf: &Buffer) -> BufferRegion {
    BufferRegion {
        buffer: buf.clone(),
        region: buf
            .shape()
            .iter()
            .map(|e| Range::new(PrimExpr::int_of(0, e.dtype()), e.clone()))
            .collect(),
    }
}

/// Access regions: one point region per buffer when all accesses agree; when
/// they differ, the dimensions that differ cover the whole extent.
pub fn regions(reads: Vec<(Buffer, Vec<Vec<PrimExpr>>)>) -> Vec<BufferRegion> {
    reads
        .into_iter()
        .map(|(b, list)| {
            if list.len() == 1 {
                return point_region(&b, &list[0]);
            }
            let first = &list[0];
            let region = (0..first.len())
                .map(|d| {
                    let same = list
                        .iter()
                        .all(|l| relax_ir::structural::structural_equal_prim_expr(&l[d], &first[d]));
                    if same {
                        Range::new(first[d].clone(), PrimExpr::int_of(1, first[d].dtype()))
                    } else {
                        let ext = b.shape().get(d).cloned().unwrap_or_else(|| PrimExpr::int(1));
                        Range::new(PrimExpr::int_of(0, ext.dtype()), ext)
                    }
                })
                .collect();
            BufferRegion { buffer: b, region }
        })
        .collect()
}

/// `a + b`.
pub fn add(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    PrimExpr::binary(BinOp::Add, a, b)
}

/// `a - b`.
pub fn sub(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    PrimExpr::binary(BinOp::Sub, a, b)
}

/// `a * b`.
pub fn mul(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    PrimExpr::binary(BinOp::Mul, a, b)
}

/// `v * c`, or `v` when `c` is 1.
pub fn scale(v: PrimExpr, c: i64) -> PrimExpr {
    if c == 1 {
        v
    } else {
        mul(v, PrimExpr::int(c))
    }
}

/// `for var in <kind>(extent): body`.
pub fn loop_over(var: &TirVar, extent: &PrimExpr, kind: ForKind, body: Stmt) -> Stmt {
    Stmt::For(For::from_zero(var.clone(), extent.clone(), kind, body))
}

#[cfg(test)]
mod scalar_tests {
    use super::scalar_constant;
    use relax_ir::relax::NDArray;
    use relax_ir::{DataType, Expr, ExprKind, TypeCode};

    fn value(dtype: DataType, bytes: Vec<u8>) -> Option<f64> {
        let e = Expr::new(ExprKind::Constant {
            data: std::sync::Arc::new(NDArray::scalar(dtype, bytes)),
        });
        scalar_constant(&e)?.as_float()
    }

    /// A scalar constant inlined into TIR keeps its value in each 16-bit float type:
    /// bfloat16 `1.0` (`0x3F80`) once decoded as IEEE half bits gave `1.875`, so
    /// `x - 1.0` on a bfloat16 tensor subtracted 1.875 (ONNX's Celu node test).
    #[test]
    fn sixteen_bit_float_constants_keep_their_values() {
        let bf16 = DataType::new(TypeCode::BFloat, 16, 1);
        let f16 = DataType::new(TypeCode::Float, 16, 1);
        assert_eq!(value(bf16, 0x3F80u16.to_le_bytes().to_vec()), Some(1.0));
        assert_eq!(value(bf16, 0x3F00u16.to_le_bytes().to_vec()), Some(0.5));
        assert_eq!(value(bf16, 0xC0A0u16.to_le_bytes().to_vec()), Some(-5.0));
        assert_eq!(value(f16, 0x3C00u16.to_le_bytes().to_vec()), Some(1.0));
        assert_eq!(value(f16, 0xB800u16.to_le_bytes().to_vec()), Some(-0.5));
    }
}
