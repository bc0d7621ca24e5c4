//! Constructors of Relax IR shared by the integration tests of several crates
//! (included with `#[path]`): binding blocks, sequences and functions.
#![allow(dead_code)]

use relax_ir::{Attrs, Binding, BindingBlock, Expr, ExprKind, Function, SeqExpr, Span, StructInfo, Var};

/// A binding block (`dataflow` for a dataflow block).
fn binding_block(bindings: Vec<Binding>, dataflow: bool) -> BindingBlock {
    BindingBlock {
        bindings,
        is_dataflow: dataflow,
        span: Span::NONE,
    }
}

/// A plain binding block.
pub fn block(bindings: Vec<Binding>) -> BindingBlock {
    binding_block(bindings, false)
}

/// A dataflow block.
pub fn dataflow(bindings: Vec<Binding>) -> BindingBlock {
    binding_block(bindings, true)
}

/// A `SeqExpr` of `blocks` ending in `body`.
pub fn seq(blocks: Vec<BindingBlock>, body: Expr) -> Expr {
    Expr::new(ExprKind::Seq(SeqExpr { blocks, body }))
}

/// A public pure function without a span.
pub fn func(params: Vec<Var>, body: Expr, ret: Option<StructInfo>) -> Function {
    Function {
        params,
        body,
        ret_struct_info: ret,
        is_pure: true,
        attrs: Attrs::new(),
        private: false,
        span: Span::NONE,
    }
}
