//! A PrimFunc specialized to the values its shape variables take in one call: the
//! GPU path compiles such a copy when a tensor of symbolic size turns out larger
//! than one storage binding may hold, so that the emitter, which knows sizes from
//! constants only, binds it in chunks.

use std::collections::HashMap;

use relax_ir::mutator::{walk_prim_expr, StmtExprMutator};
use relax_ir::tir::{Buffer, PrimExpr, PrimExprKind};
use relax_ir::PrimFunc;

/// `f` with every variable of `values` (by id) replaced by its value: in the body,
/// and in the shapes, strides and offsets of every buffer (parameters' included).
pub(crate) fn specialize(f: &PrimFunc, values: &HashMap<u64, i64>) -> PrimFunc {
    let mut m = Specializer {
        values,
        buffers: HashMap::new(),
    };
    PrimFunc {
        params: f.params.clone(),
        buffer_map: f
            .buffer_map
            .iter()
            .map(|(v, b)| (v.clone(), m.visit_buffer(b)))
            .collect(),
        ret_type: f.ret_type,
        body: m.visit_stmt(&f.body),
        attrs: f.attrs.clone(),
        private: f.private,
        s_tir: f.s_tir,
        span: f.span,
    }
}

struct Specializer<'a> {
    values: &'a HashMap<u64, i64>,
    /// Each buffer rewritten once (by id), so every reference sees the same copy.
    buffers: HashMap<u64, Buffer>,
}

impl StmtExprMutator for Specializer<'_> {
    fn visit_prim_expr(&mut self, e: &PrimExpr) -> PrimExpr {
        if let PrimExprKind::Var(v) = e.kind() {
            if let Some(&x) = self.values.get(&v.id()) {
                return PrimExpr::int_of(x, v.dtype());
            }
        }
        walk_prim_expr(self, e)
    }

    fn visit_buffer(&mut self, b: &Buffer) -> Buffer {
        if let Some(nb) = self.buffers.get(&b.id()) {
            return nb.clone();
        }
        let mut node = b.copy_node();
        node.shape = node.shape.iter().map(|e| self.visit_prim_expr(e)).collect();
        node.strides = node.strides.iter().map(|e| self.visit_prim_expr(e)).collect();
        node.elem_offset = node.elem_offset.as_ref().map(|e| self.visit_prim_expr(e));
        let nb = Buffer::from_node(node);
        self.buffers.insert(b.id(), nb.clone());
        nb
    }
}
