//! The Relax IR: Relax expressions and `StructInfo`, TIR `PrimFunc`s, `IRModule`s
//! with `VDevice`s, structural equality, the arithmetic analyzer and the TVMScript
//! text format (parser and printer).

pub mod arith;
pub mod attrs;
pub mod diagnostic;
pub mod dtype;
mod id;
pub mod module;
pub mod mutator;
pub mod relax;
pub mod span;
pub mod structural;
pub mod text;
pub mod tir;
pub mod visit;

pub use attrs::{AttrValue, Attrs};
pub use diagnostic::{Diagnostic, Rule, RuleCategory, Severity, StructInfoRule, TirRule, VDeviceRule};
pub use dtype::{DataType, MiniFloat, MiniSpecials, TypeCode};
pub use module::{BaseFunc, GlobalInfo, IRModule, Target, VDevice};
pub use relax::{
    Binding, BindingBlock, Call, Expr, ExprKind, FuncStructInfo, Function, GlobalVar, NDArray, PrimStructInfo, SeqExpr,
    ShapeStructInfo, StructInfo, TensorStructInfo, Var,
};
pub use span::Span;
pub use tir::{Buffer, PrimExpr, PrimExprKind, PrimFunc, Stmt, TirVar};
