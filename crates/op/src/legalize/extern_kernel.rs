//! Imperative ("extern") kernels as topi writes them with its IR builder:
//! one opaque block (no iteration variables, no declared accesses) running a
//! sequence of loops over flat indices under `pragma_scope = "seq"`. Used by
//! `scatter_elements` and `scatter_nd`, whose writes go through indices read
//! at run time.

use relax_ir::PrimFunc;

use relax_ir::tir::BufferNode;
use relax_ir::tir::{BinOp, Block};
use relax_ir::{Attrs, Buffer, DataType, Expr, PrimExpr, PrimExprKind, Span, Stmt, TirVar};

pub(crate) use super::te::loop_over;
use super::te::Te;
use super::{LegalizeCtx, OrSkip, Skip};
use crate::common::{floordiv, floormod, max, min, mul};

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

/// A root block holding nothing but one opaque block is left out (as
/// `create_prim_func` does for a lone extern stage).
pub(crate) fn drop_trivial_root(f: &mut PrimFunc) {
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

/// The start of a scatter legalization: the `reduction` attribute (`mean`
/// allowed when `with_mean`), a builder, and `data` (argument 0) as its input.
pub(crate) fn scatter_start(
    ctx: &LegalizeCtx,
    reduction: &str,
    with_mean: bool,
) -> Result<(Reduction, Te, Buffer), Skip> {
    let reduction = Reduction::parse(reduction, with_mean).or_skip("unknown reduction")?;
    let mut t = Te::new();
    let data = tensor_input(&mut t, ctx, 0)?;
    Ok((reduction, t, data))
}

/// The reason given when an argument's shape or dtype is not known.
pub(crate) const UNKNOWN: &str = "an argument's shape or dtype is not known";

/// Argument `i` of the call as an extern input buffer.
pub(crate) fn tensor_input(t: &mut Te, ctx: &super::LegalizeCtx, i: usize) -> Result<Buffer, super::Skip> {
    use super::OrSkip;
    let e = ctx.call.args.get(i).or_skip("missing argument")?;
    let ts = ctx
        .args
        .get(i)
        .and_then(|s| s.as_tensor())
        .or_skip("an argument is not a tensor")?;
    extern_input(t, e, ts).or_skip(UNKNOWN)
}
