//! Relax expressions, bindings, functions and `StructInfo`.

pub mod bounds;
mod expr;
mod struct_info;

pub use expr::{
    Binding, BindingBlock, Call, Expr, ExprKind, ExprNode, Function, GlobalVar, NDArray, SeqExpr, Var, VarNode,
};
pub use struct_info::{FuncStructInfo, PrimStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo};
