//! Builders for test modules (IR constructors).
#![allow(dead_code)]

#[path = "../../../cli/tests/common/files.rs"]
pub mod files;
#[path = "../../../ir/tests/common/relax_build.rs"]
mod relax_build;
pub mod rng;
#[path = "../../../cli/tests/common/scratch.rs"]
mod scratch;
#[path = "../../../ir/tests/common/texts.rs"]
pub mod texts;
#[allow(unused_imports)]
pub use scratch::Scratch;
pub mod text;

#[allow(unused_imports)]
pub use relax_build::{block, dataflow, func, seq};

use std::sync::Arc;

use relax_ir::relax::{NDArray, TensorStructInfo};
use relax_ir::tir::{Buffer, PrimExpr, Stmt, TirVar};
use relax_ir::{
    Attrs, BaseFunc, Binding, Call, DataType, Expr, ExprKind, Function, IRModule, PrimFunc, Span, StructInfo, Var,
};

pub fn tvar(name: &str) -> TirVar {
    TirVar::new(name, DataType::INT64)
}
pub fn pe(v: &TirVar) -> PrimExpr {
    v.to_expr()
}
pub fn c(v: i64) -> PrimExpr {
    PrimExpr::int(v)
}
pub fn tensor(dims: Vec<PrimExpr>, dtype: DataType) -> StructInfo {
    StructInfo::tensor(dims, dtype)
}
pub fn tensor_ndim(dtype: DataType, ndim: i32) -> StructInfo {
    StructInfo::tensor_ndim(dtype, ndim)
}
pub fn var(name: &str, si: StructInfo) -> Var {
    Var::new(name, Some(si))
}
pub fn dvar(name: &str, si: StructInfo) -> Var {
    Var::new_dataflow(name, Some(si))
}
pub fn untyped(name: &str) -> Var {
    Var::new(name, None)
}
/// Untyped (struct-info-free) variables named `names`, in order.
pub fn untyped_vars<const N: usize>(names: [&str; N]) -> [Var; N] {
    names.map(untyped)
}
pub fn bind(var: &Var, value: Expr) -> Binding {
    Binding::VarBinding {
        var: var.clone(),
        value,
        span: Span::NONE,
    }
}
pub fn match_cast(var: &Var, value: Expr, si: StructInfo) -> Binding {
    Binding::MatchCast {
        var: var.clone(),
        value,
        struct_info: si,
        span: Span::NONE,
    }
}
pub fn seq1(bindings: Vec<Binding>, body: Expr) -> Expr {
    seq(vec![block(bindings)], body)
}
/// A function of `params` whose body is one binding block `bindings` returning `body`,
/// with its return struct info left to deduction.
pub fn seq_fn(params: Vec<Var>, bindings: Vec<Binding>, body: Expr) -> Function {
    func(params, seq1(bindings, body), None)
}
pub fn v(var: &Var) -> Expr {
    var.to_expr()
}
pub fn impure(mut f: Function) -> Function {
    f.is_pure = false;
    f
}
pub fn func_expr(f: Function) -> Expr {
    Expr::new(ExprKind::Function(f))
}
pub fn gv(name: &str) -> Expr {
    Expr::new(ExprKind::GlobalVar(relax_ir::GlobalVar::new(name)))
}
pub fn call(callee: Expr, args: Vec<Expr>) -> Expr {
    Expr::call(callee, args, Attrs::new(), Vec::new())
}
/// A call of operator `name` on `args` with no attributes and no StructInfo arguments.
pub fn plain_op(name: &str, args: Vec<Expr>) -> Expr {
    op(name, args, Attrs::new(), Vec::new())
}
pub fn op(name: &str, args: Vec<Expr>, attrs: Attrs, sinfo: Vec<StructInfo>) -> Expr {
    Expr::call(Expr::op(name), args, attrs, sinfo)
}
pub fn extern_fn(sym: &str) -> Expr {
    Expr::new(ExprKind::ExternFunc {
        global_symbol: sym.to_string(),
    })
}
/// `R.call_packed(sym, args..., sinfo_args=[sinfo])`
pub fn call_packed(sym: &str, args: Vec<Expr>, sinfo: StructInfo) -> Expr {
    Expr::call(extern_fn(sym), args, Attrs::new(), vec![sinfo])
}
/// `R.call_pure_packed(sym, args..., sinfo_args=[sinfo])`
pub fn call_pure_packed(sym: &str, args: Vec<Expr>, sinfo: StructInfo) -> Expr {
    let mut all = vec![extern_fn(sym)];
    all.extend(args);
    op("relax.call_pure_packed", all, Attrs::new(), vec![sinfo])
}
pub fn if_(cond: Expr, t: Expr, f: Expr) -> Expr {
    Expr::new(ExprKind::If {
        cond,
        then_branch: t,
        else_branch: f,
    })
}
pub fn tuple(fields: Vec<Expr>) -> Expr {
    Expr::tuple(fields)
}
pub fn get(t: Expr, i: usize) -> Expr {
    Expr::new(ExprKind::TupleGetItem { tuple: t, index: i })
}
pub fn shape(dims: Vec<PrimExpr>) -> Expr {
    Expr::shape(dims)
}
pub fn prim(p: PrimExpr) -> Expr {
    Expr::new(ExprKind::PrimValue(p))
}
pub fn string(s: &str) -> Expr {
    Expr::new(ExprKind::StringImm(s.to_string()))
}
pub fn constant(dtype: DataType, shape: Vec<i64>, data: Vec<u8>) -> Expr {
    Expr::new(ExprKind::Constant {
        data: Arc::new(NDArray { dtype, shape, data }),
    })
}
pub fn const_bool(b: bool) -> Expr {
    constant(DataType::BOOL, vec![], vec![b as u8])
}
pub fn const_i64(x: i64) -> Expr {
    constant(DataType::INT64, vec![], x.to_le_bytes().to_vec())
}
pub fn const_f32(shape: Vec<i64>, data: &[f32]) -> Expr {
    constant(
        DataType::FLOAT32,
        shape,
        data.iter().flat_map(|x| x.to_le_bytes()).collect(),
    )
}
pub fn module(funcs: Vec<(&str, Function)>) -> IRModule {
    let mut m = IRModule::new();
    for (name, f) in funcs {
        m.add(name, BaseFunc::Relax(f));
    }
    m
}
/// A PrimFunc signature: buffer params (name, dtype, shape) then scalar params.
/// The body is empty: the tests' mock executors give it meaning.
pub fn prim_func(buffers: Vec<(&str, DataType, Vec<PrimExpr>)>, scalars: Vec<TirVar>) -> PrimFunc {
    let mut params = Vec::new();
    let mut buffer_map = Vec::new();
    for (name, dtype, shape) in buffers {
        let h = TirVar::new_handle(name, None, None);
        params.push(h.clone());
        buffer_map.push((h, Buffer::new(name, dtype, shape)));
    }
    params.extend(scalars);
    PrimFunc {
        params,
        buffer_map,
        ret_type: None,
        body: Stmt::Seq(Vec::new()),
        attrs: Attrs::new(),
        private: false,
        s_tir: false,
        span: Span::NONE,
    }
}
pub fn tensor_si_of(si: &StructInfo) -> &TensorStructInfo {
    si.as_tensor().expect("tensor struct info")
}
pub fn call_expr(e: &Expr) -> &Call {
    e.as_call().expect("call")
}
