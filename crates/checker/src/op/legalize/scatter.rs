//! Imperative ("extern") kernels as topi writes them with its IR builder:
//! one opaque block (no iteration variables, no declared accesses) running a
//! sequence of loops over flat indices under `pragma_scope = "seq"`. Used by
//! `scatter_elements` and `scatter_nd`, whose writes go through indices read
//! at run time.

use relax_ir::tir::BufferNode;
use relax_ir::tir::{BinOp, Block, ForKind};
use relax_ir::{Attrs, Buffer, DataType, Expr, PrimExpr, PrimExprKind, Span, Stmt, TirVar};

use super::te::Te;
use crate::op::common::{floordiv, floormod, max, min, mul};

/// A flat index into a buffer of `shape`, as multi-dimensional indices
/// (topi's `buffer_proxy`: the outermost index is the remaining quotient).
pub(crate) fn unravel(index: &PrimExpr, shape: &[PrimExpr]) -> Vec<PrimExpr> {
    let n = shape.len();
    if n <= 1 {
        return vec![index.clone()];
    }
    let mut out = Vec::with_capacity(n);
    let mut rest = index.clone();
    for (i, d) in shape.iter().rev().enumerate() {
        if i == n - 1 {
            out.push(rest.clone());
        } else {
            out.push(floormod(&rest, d));
            rest = floordiv(&rest, d);
        }
    }
    out.reverse();
    out
}

/// A load of `buf` at a flat index.
pub(crate) fn load_flat(buf: &Buffer, index: &PrimExpr) -> PrimExpr {
    PrimExpr::load(buf, unravel(index, buf.shape()))
}

/// A store into `buf` at a flat index.
pub(crate) fn store_flat(buf: &Buffer, index: &PrimExpr, value: PrimExpr) -> Stmt {
    Stmt::BufferStore {
        buffer: buf.clone(),
        value,
        indices: unravel(index, buf.shape()),
        span: Span::NONE,
    }
}

/// `for var in <kind>(extent): body`.
pub(crate) fn loop_over(var: &TirVar, extent: &PrimExpr, kind: ForKind, body: Stmt) -> Stmt {
    Stmt::For {
        var: var.clone(),
        min: PrimExpr::int_of(0, extent.dtype()),
        extent: extent.clone(),
        kind,
        thread_tag: None,
        annotations: Attrs::new(),
        body: Box::new(body),
    }
}

/// A fresh `int64` loop variable.
pub(crate) fn loop_var() -> TirVar {
    TirVar::new("v", DataType::INT64)
}

/// An extern input: a parameter buffer with a symbolic element offset, as
/// `te.extern` declares the buffers it is handed.
pub(crate) fn extern_input(t: &mut Te, e: &Expr, ts: &relax_ir::TensorStructInfo) -> Option<Buffer> {
    let shape = ts.shape_values()?.to_vec();
    if ts.dtype.is_void() {
        return None;
    }
    let name = e.as_var().map(|v| v.name().to_string()).unwrap_or_else(|| "A".into());
    let data = TirVar::new_handle(name.clone(), Some(ts.dtype), Some("global".into()));
    let b = Buffer::from_node(BufferNode {
        id: 0,
        name,
        data,
        dtype: ts.dtype,
        shape,
        strides: Vec::new(),
        elem_offset: Some(TirVar::new("elem_offset", DataType::INT64).to_expr()),
        scope: "global".into(),
        align: -1,
        offset_factor: 0,
        axis_separators: Vec::new(),
    });
    t.inputs.push(b.clone());
    t.args.push(e.clone());
    Some(b)
}

/// The output buffer of an extern stage (`out_buf`).
pub(crate) fn extern_output(dtype: DataType, shape: Vec<PrimExpr>) -> Buffer {
    Buffer::new("out_buf", dtype, shape)
}

/// Add the extern stage `name` (`"scatter_nd.generic"` becomes the block
/// `scatter_nd_generic`) running `stmts` in order and writing `out`.
pub(crate) fn push_extern(t: &mut Te, name: &str, stmts: Vec<Stmt>, out: &Buffer) {
    let body = Stmt::Attr {
        node: None,
        key: "pragma_scope".into(),
        value: PrimExpr::new(PrimExprKind::StringImm("seq".into())),
        body: Box::new(Stmt::seq(stmts)),
    };
    let block = Block {
        name: name.replace('.', "_"),
        iter_vars: Vec::new(),
        reads: Vec::new(),
        writes: Vec::new(),
        init: None,
        alloc_buffers: Vec::new(),
        match_buffers: Vec::new(),
        annotations: Attrs::new(),
        body: Box::new(body),
    };
    let stage = Stmt::BlockRealize {
        iter_values: Vec::new(),
        predicate: None,
        block: Box::new(block),
    };
    t.push_stage(stage, vec![out.clone()]);
}

/// How a scatter combines the value already at the target with the update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reduction {
    /// Replace.
    Update,
    /// Add.
    Add,
    /// Multiply.
    Mul,
    /// The mean of the two (`(old + new) / 2`).
    Mean,
    /// The smaller.
    Min,
    /// The larger.
    Max,
}

impl Reduction {
    /// Parse the `reduction` attribute; `mean` only where `allow_mean`.
    pub(crate) fn parse(s: &str, allow_mean: bool) -> Option<Reduction> {
        Some(match s {
            "update" => Reduction::Update,
            "add" => Reduction::Add,
            "mul" => Reduction::Mul,
            "mean" if allow_mean => Reduction::Mean,
            "min" => Reduction::Min,
            "max" => Reduction::Max,
            _ => return None,
        })
    }

    /// The store `out[index] = combine(out[index], update)`.
    pub(crate) fn store(self, out: &Buffer, index: &PrimExpr, update: PrimExpr) -> Stmt {
        let old = || load_flat(out, index);
        let value = match self {
            Reduction::Update => update,
            Reduction::Add => PrimExpr::binary(BinOp::Add, old(), update),
            Reduction::Mul => PrimExpr::binary(BinOp::Mul, old(), update),
            Reduction::Mean => {
                let dt = out.dtype();
                let two = if dt.is_float() {
                    PrimExpr::float_of(2.0, dt)
                } else {
                    PrimExpr::int_of(2, dt)
                };
                PrimExpr::binary(BinOp::Div, PrimExpr::binary(BinOp::Add, old(), update), two)
            }
            Reduction::Min => min(&old(), &update),
            Reduction::Max => max(&old(), &update),
        };
        store_flat(out, index, value)
    }
}

/// The product of `dims` (1 for none), folded.
pub(crate) fn fused(dims: &[PrimExpr]) -> PrimExpr {
    dims.iter().fold(PrimExpr::int(1), |acc, d| mul(&acc, d))
}

fn norm_axis(a: i64, nd: usize) -> Option<usize> {
    let a = if a < 0 { a + nd as i64 } else { a };
    (0..nd as i64).contains(&a).then_some(a as usize)
}

/// `scatter_elements(data, indices, updates, axis, reduction)` as topi's
/// generic kernel: copy `data`, then for every index position write
/// `updates` at the position with the `axis` coordinate replaced by the index
/// (negative indices count from the end).
pub(crate) fn scatter_elements(ctx: &super::LegalizeCtx) -> Option<super::Lowered> {
    use crate::op::common::{add, attr_int, attr_str};
    let reduction = Reduction::parse(attr_str(ctx.call, "reduction", "update"), true)?;
    let mut t = Te::new();
    let data = extern_input(&mut t, ctx.call.args.first()?, ctx.args.first()?.as_tensor()?)?;
    let indices = extern_input(&mut t, ctx.call.args.get(1)?, ctx.args.get(1)?.as_tensor()?)?;
    let updates = extern_input(&mut t, ctx.call.args.get(2)?, ctx.args.get(2)?.as_tensor()?)?;
    let shape = data.shape().to_vec();
    let ishape = indices.shape().to_vec();
    let nd = shape.len();
    if ishape.len() != nd || updates.shape().len() != nd || updates.dtype() != data.dtype() {
        return None;
    }
    let axis = norm_axis(attr_int(ctx.call, "axis", 0).ok()?, nd)?;
    let idt = indices.dtype();
    let axis_range = shape[axis].clone();
    let after = fused(&shape[axis + 1..]);
    let full = fused(&shape);
    let before_stride = mul(&axis_range, &after);
    let ind_axis = ishape[axis].clone();
    let ind_before = fused(&ishape[..axis]);
    let ind_after = fused(&ishape[axis + 1..]);
    let ind_before_stride = mul(&ind_axis, &ind_after);

    let out = extern_output(data.dtype(), shape.clone());
    let i = loop_var();
    let copy = loop_over(
        &i,
        &full,
        ForKind::Parallel,
        store_flat(&out, &i.to_expr(), load_flat(&data, &i.to_expr())),
    );
    let f = loop_var();
    let k = loop_var();
    let fe = f.to_expr();
    let (oi, oj) = (floordiv(&fe, &ind_after), floormod(&fe, &ind_after));
    let pre1 = add(&mul(&oi, &ind_before_stride), &oj);
    let pre2 = add(&mul(&oi, &before_stride), &oj);
    let index1 = add(&pre1, &mul(&k.to_expr(), &ind_after));
    let k_new = load_flat(&indices, &index1);
    let negative = PrimExpr::binary(BinOp::Lt, k_new.clone(), PrimExpr::int_of(0, idt));
    // narrower indices are widened to the shape's type (TVM's operand matching)
    let wide = axis_range.dtype();
    let k_wide = if idt == wide { k_new } else { k_new.cast(wide) };
    let shifted = add(&k_wide, &mul(&negative.cast(wide), &axis_range));
    let index2 = add(&pre2, &mul(&shifted, &after));
    let write = reduction.store(&out, &index2, load_flat(&updates, &index1));
    let scatter = loop_over(
        &f,
        &mul(&ind_before, &ind_after),
        ForKind::Parallel,
        loop_over(&k, &ind_axis, ForKind::Serial, write),
    );
    push_extern(&mut t, "scatter_elements.generic", vec![copy, scatter], &out);
    let mut lowered = super::manipulate::finish("scatter_elements", t, 1, Vec::new(), ctx.out.clone());
    drop_trivial_root(&mut lowered.func);
    Some(lowered)
}

/// A root block holding nothing but one opaque block is left out (as
/// `create_prim_func` does for a lone extern stage).
fn drop_trivial_root(f: &mut relax_ir::PrimFunc) {
    let Stmt::BlockRealize { block, .. } = &f.body else {
        return;
    };
    if block.name != "root" || !block.alloc_buffers.is_empty() {
        return;
    }
    if let Stmt::BlockRealize { block: inner, .. } = block.body.as_ref() {
        if inner.iter_vars.is_empty() {
            f.body = block.body.as_ref().clone();
        }
    }
}

/// `scatter_nd(data, indices, updates, reduction)`: TVM moves the last axis
/// of `indices` to the front (`T_transpose`), then runs topi's generic kernel.
pub(crate) fn scatter_nd(ctx: &super::LegalizeCtx) -> Option<super::Lowered> {
    use crate::op::common::{add, attr_str};
    let reduction = Reduction::parse(attr_str(ctx.call, "reduction", "update"), false)?;
    let mut t = Te::new();
    let data = extern_input(&mut t, ctx.call.args.first()?, ctx.args.first()?.as_tensor()?)?;
    let ind = t.placeholder(ctx.call.args.get(1)?, ctx.args.get(1)?.as_tensor()?)?;
    let updates = extern_input(&mut t, ctx.call.args.get(2)?, ctx.args.get(2)?.as_tensor()?)?;
    if !crate::op::common::is_int_or_uint(ind.dtype()) || updates.dtype() != data.dtype() {
        return None;
    }
    let is = ind.shape().to_vec();
    let k = is.len();
    if k == 0 {
        return None;
    }
    let m = usize::try_from(is[k - 1].as_int()?).ok()?;
    let shape = data.shape().to_vec();
    if m > shape.len() {
        return None;
    }
    // T_transpose: axes (k-1, 0, 1, ..., k-2)
    let mut tshape = vec![is[k - 1].clone()];
    tshape.extend(is[..k - 1].iter().cloned());
    let tr = t.compute("T_transpose", &tshape, "ax", |i| {
        let mut idx: Vec<PrimExpr> = i[1..].to_vec();
        idx.push(i[0].clone());
        PrimExpr::load(&ind, idx)
    });
    let fused_indices = fused(&tshape[1..]);
    let fused_updates = fused(updates.shape().get(k - 1..)?);
    let out = extern_output(data.dtype(), shape.clone());
    let i = loop_var();
    let copy = loop_over(
        &i,
        &fused(&shape),
        ForKind::Serial,
        store_flat(&out, &i.to_expr(), load_flat(&data, &i.to_expr())),
    );
    let (iv, jv) = (loop_var(), loop_var());
    let (ie, je) = (iv.to_expr(), jv.to_expr());
    let mut offset = fused_updates.clone();
    let mut index = je.clone();
    for l in (0..m).rev() {
        let at = add(&ie, &mul(&PrimExpr::int(l as i64), &fused_indices));
        let mut coord = load_flat(&tr, &at);
        if coord.dtype() != index.dtype() {
            coord = coord.cast(index.dtype());
        }
        index = add(&index, &mul(&offset, &coord));
        offset = mul(&offset, &shape[l]);
    }
    let upd = load_flat(&updates, &add(&mul(&ie, &fused_updates), &je));
    let write = reduction.store(&out, &index, upd);
    let scatter = loop_over(
        &iv,
        &fused_indices,
        ForKind::Serial,
        loop_over(&jv, &fused_updates, ForKind::Parallel, write),
    );
    push_extern(&mut t, "scatter_nd.generic", vec![copy, scatter], &out);
    Some(super::manipulate::finish(
        "scatter_nd",
        t,
        1,
        Vec::new(),
        ctx.out.clone(),
    ))
}

/// The scatter operators.
pub static OPS: &[(&str, super::LegalizeFn)] = &[
    ("relax.scatter_elements", scatter_elements),
    ("relax.scatter_nd", scatter_nd),
];
