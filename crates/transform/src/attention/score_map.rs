//! Elementwise maps of the attention scores, applied by the fused kernel to each
//! score: `R.call_tir(f, (scores,))` where `f` is one block over the scores'
//! shape computing `out[v] = g(in[v], v, n)`, with `v` the block's indices and
//! `n` the extents of the scores. TVM's `nn` module writes its causal mask so:
//! `T.if_then_else(total_seq_len + v_i <= v_j, min_value, in[v_b, v_h, v_i, v_j])`.

use relax_ir::tir::PrimExprKind;
use relax_ir::visit::{for_each_prim_expr, free_tir_vars, map_prim_children, substitute_prim_expr};

use super::*;

/// One elementwise map of the scores.
pub(super) struct ScoreMap {
    /// `g`, reading `input` at `iters`.
    value: PrimExpr,
    input: Buffer,
    /// The block's indices, one per dimension of the scores, outermost first.
    iters: Vec<TirVar>,
    /// Shape variables of `f` and the dimension of the scores each names.
    dims: Vec<(TirVar, usize)>,
    /// The dtype `g` reads and writes.
    dtype: DataType,
}

impl ScoreMap {
    /// The map `f` computes, when it is one: two buffer parameters of the same
    /// shape and float dtype, a nest of loops from 0 over the input's extents,
    /// one block whose indices are those loops in order, storing `g` at exactly
    /// those indices, where `g` reads only the input at the same indices and
    /// names no variable but the indices and the extents of the input.
    /// `shape` is the scores' shape at the call: a constant extent of `f` must
    /// equal it.
    pub(super) fn of(f: &PrimFunc, shape: &[PrimExpr]) -> Option<ScoreMap> {
        if f.params.len() != 2 || f.buffer_map.len() != 2 || f.ret_type.is_some() {
            return None;
        }
        let input = f.buffer_of(&f.params[0])?.clone();
        let output = f.buffer_of(&f.params[1])?.clone();
        let dtype = input.dtype();
        let rank = input.shape().len();
        if !(dtype == DataType::FLOAT32 || dtype == DataType::FLOAT16)
            || output.dtype() != dtype
            || output.shape().len() != rank
            || shape.len() != rank
            || input.id() == output.id()
        {
            return None;
        }
        let mut dims = Vec::new();
        for (k, (a, b)) in input.shape().iter().zip(output.shape()).enumerate() {
            if !relax_ir::tir::expr_equal(a, b) {
                return None;
            }
            match (a.as_int(), a.as_var()) {
                (Some(x), _) if shape[k].as_int() == Some(x) => {}
                (None, Some(v)) => dims.push((v.clone(), k)),
                _ => return None,
            }
        }
        // The root block, if any, then the loops.
        let mut s = &f.body;
        if let Stmt::BlockRealize { block, .. } = s {
            if block.iter_vars.is_empty() && plain(block) {
                s = &block.body;
            }
        }
        let mut loops = Vec::new();
        while let Stmt::For(l) = s {
            if l.kind == ForKind::ThreadBinding || l.min.as_int() != Some(0) {
                return None;
            }
            loops.push(l);
            s = &l.body;
        }
        let Stmt::BlockRealize {
            iter_values,
            predicate,
            block,
        } = s
        else {
            return None;
        };
        if predicate.as_ref().is_some_and(|p| p.as_int() != Some(1))
            || !plain(block)
            || loops.len() != rank
            || block.iter_vars.len() != rank
            || iter_values.len() != rank
        {
            return None;
        }
        for (k, (iv, val)) in block.iter_vars.iter().zip(iter_values).enumerate() {
            let l = loops[k];
            if iv.kind != IterKind::DataPar
                || val.as_var() != Some(&l.var)
                || !relax_ir::tir::expr_equal(&l.extent, &input.shape()[k])
            {
                return None;
            }
        }
        let iters: Vec<TirVar> = block.iter_vars.iter().map(|iv| iv.var.clone()).collect();
        let at_iters =
            |idx: &[PrimExpr]| idx.len() == rank && idx.iter().zip(&iters).all(|(i, v)| i.as_var() == Some(v));
        let Stmt::BufferStore {
            buffer, value, indices, ..
        } = &*block.body
        else {
            return None;
        };
        if buffer.id() != output.id() || !at_iters(indices) {
            return None;
        }
        let mut loads_ok = true;
        for_each_prim_expr(value, &mut |e| {
            if let PrimExprKind::BufferLoad { buffer, indices } = e.kind() {
                loads_ok &= buffer.id() == input.id() && at_iters(indices);
            }
        });
        let known = |v: &TirVar| iters.contains(v) || dims.iter().any(|(d, _)| d == v);
        if !loads_ok || !free_tir_vars(value).iter().all(known) {
            return None;
        }
        Some(ScoreMap {
            value: value.clone(),
            input,
            iters,
            dims,
            dtype,
        })
    }

    /// `g` of the float32 score `x` at index `idx` of scores of extents `shape`,
    /// as float32.
    pub(super) fn apply(&self, x: PrimExpr, idx: &[PrimExpr], shape: &[PrimExpr]) -> PrimExpr {
        let x = if self.dtype == DataType::FLOAT32 {
            x
        } else {
            x.cast(self.dtype)
        };
        let read = replace_loads(&self.value, &self.input, &x);
        let g = substitute_prim_expr(&read, &|v| {
            let e = match self.iters.iter().position(|i| i == v) {
                Some(k) => idx.get(k)?,
                None => shape.get(self.dims.iter().find(|(d, _)| d == v)?.1)?,
            };
            Some(if e.dtype() == v.dtype() {
                e.clone()
            } else {
                e.clone().cast(v.dtype())
            })
        });
        if self.dtype == DataType::FLOAT32 {
            g
        } else {
            g.cast(DataType::FLOAT32)
        }
    }
}

/// A block without initialisation, allocations or matched buffers.
fn plain(b: &Block) -> bool {
    b.init.is_none() && b.alloc_buffers.is_empty() && b.match_buffers.is_empty()
}

/// `e` with every load of `buf` replaced by `x`.
fn replace_loads(e: &PrimExpr, buf: &Buffer, x: &PrimExpr) -> PrimExpr {
    match e.kind() {
        PrimExprKind::BufferLoad { buffer, .. } if buffer.id() == buf.id() => x.clone(),
        _ => map_prim_children(e, &mut |c| replace_loads(c, buf, x)),
    }
}
