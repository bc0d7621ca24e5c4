//! Constructors for test IR.

#![allow(dead_code)]

use relax_ir::tir::TirVar;
use relax_ir::{Attrs, BaseFunc, Binding, DataType, Expr, Function, IRModule, PrimExpr, Span, StructInfo, Var};

pub const F32: DataType = DataType::FLOAT32;

/// A shape variable.
pub fn sv(name: &str) -> TirVar {
    TirVar::new(name, DataType::INT64)
}

/// `R.Tensor(dims, dtype)`.
pub fn t(dims: &[PrimExpr], dtype: DataType) -> StructInfo {
    StructInfo::tensor(dims.to_vec(), dtype)
}

/// A static-shape float32 tensor.
pub fn tf(dims: &[i64]) -> StructInfo {
    StructInfo::tensor(dims.iter().map(|&d| PrimExpr::int(d)).collect(), F32)
}

/// A variable.
pub fn var(name: &str, s: Option<StructInfo>) -> Var {
    Var::new(name, s)
}

/// A dataflow variable.
pub fn dvar(name: &str, s: Option<StructInfo>) -> Var {
    Var::new_dataflow(name, s)
}

/// An expression of a variable.
pub fn e(v: &Var) -> Expr {
    v.to_expr()
}

/// `R.<op>(args)`.
pub fn call(op: &str, args: Vec<Expr>) -> Expr {
    Expr::call(Expr::op(op), args, Attrs::new(), Vec::new())
}

/// `var = value` at line `line`.
pub fn bind(v: &Var, value: Expr, line: u32) -> Binding {
    Binding::VarBinding {
        var: v.clone(),
        value,
        span: Span::new(line, 9),
    }
}

/// `var = R.match_cast(value, s)` at line `line`.
pub fn cast(v: &Var, value: Expr, s: StructInfo, line: u32) -> Binding {
    Binding::MatchCast {
        var: v.clone(),
        value,
        struct_info: s,
        span: Span::new(line, 9),
    }
}

#[allow(unused_imports)]
pub use super::relax_build::{block, dataflow as dfblock, seq};

/// A public pure function (spanning line 2, column 5).
pub fn func(params: Vec<Var>, body: Expr, ret: Option<StructInfo>) -> Function {
    Function {
        span: Span::new(2, 5),
        ..super::relax_build::func(params, body, ret)
    }
}

/// A module of Relax functions.
pub fn module(funcs: Vec<(&str, Function)>) -> IRModule {
    let mut m = IRModule::new();
    for (n, f) in funcs {
        m.add(n, BaseFunc::Relax(f));
    }
    m
}

/// The one-function module `main`.
pub fn main_module(f: Function) -> IRModule {
    module(vec![("main", f)])
}
