use super::{Buffer, Stmt, TirVar};
use crate::attrs::Attrs;
use crate::dtype::DataType;
use crate::span::Span;

/// A TIR function (`@T.prim_func`). Its body is dropped without recursion
/// ([`Stmt::drop_iteratively`]) and cloned along chains of scopes in a loop, so a
/// function of very deep statements is safe to drop and clone.
#[derive(Clone, Debug)]
pub struct PrimFunc {
    /// Parameters: scalars and handles.
    pub params: Vec<TirVar>,
    /// Buffers bound to handle parameters, in parameter order.
    pub buffer_map: Vec<(TirVar, Buffer)>,
    /// Return type (`-> T.bool`), `None` for void.
    pub ret_type: Option<DataType>,
    /// Body.
    pub body: Stmt,
    /// `T.func_attr({...})`.
    pub attrs: Attrs,
    /// `@T.prim_func(private=True)`: no `global_symbol`.
    pub private: bool,
    /// `@T.prim_func(s_tir=True)`: schedulable TIR with blocks.
    pub s_tir: bool,
    /// Source location of the definition.
    pub span: Span,
}

impl PrimFunc {
    /// The buffer bound to parameter `param`, if any.
    pub fn buffer_of(&self, param: &TirVar) -> Option<&Buffer> {
        self.buffer_map.iter().find(|(v, _)| v == param).map(|(_, b)| b)
    }
}

impl Drop for PrimFunc {
    fn drop(&mut self) {
        std::mem::replace(&mut self.body, Stmt::Seq(Vec::new())).drop_iteratively();
    }
}
