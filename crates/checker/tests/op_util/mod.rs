//! Shared helpers of the operator unit tests: building arguments and calls, running
//! inference, and rendering StructInfo compactly for comparisons.

#![allow(dead_code)]

use relax_checker::op::{lookup, InferCtx};
use relax_ir::arith::Analyzer;
use relax_ir::tir::BinOp;
use relax_ir::{
    AttrValue, Attrs, Call, DataType, Expr, ExprKind, PrimExpr, PrimExprKind, ShapeStructInfo, StructInfo,
    TensorStructInfo, TirVar, Var,
};

/// A dimension given to [`tensor`]: a constant or a symbolic variable.
pub enum D<'a> {
    /// A constant.
    C(i64),
    /// A shape variable.
    V(&'a TirVar),
}

impl From<i64> for D<'_> {
    fn from(v: i64) -> Self {
        D::C(v)
    }
}
impl<'a> From<&'a TirVar> for D<'a> {
    fn from(v: &'a TirVar) -> Self {
        D::V(v)
    }
}

/// A fresh `int64` shape variable.
pub fn sym(name: &str) -> TirVar {
    TirVar::new(name, DataType::INT64)
}

/// Parses a dtype name.
pub fn dt(s: &str) -> DataType {
    s.parse().expect("dtype")
}

/// A tensor StructInfo with a known shape.
pub fn tensor(dims: Vec<D>, dtype: &str) -> StructInfo {
    StructInfo::tensor(
        dims.into_iter()
            .map(|d| match d {
                D::C(c) => PrimExpr::int(c),
                D::V(v) => v.to_expr(),
            })
            .collect(),
        dt(dtype),
    )
}

/// A tensor StructInfo of known rank (or `-1`) only.
pub fn tensor_nd(ndim: i32, dtype: &str) -> StructInfo {
    StructInfo::tensor_ndim(dt(dtype), ndim)
}

/// A tensor StructInfo whose shape is the shape variable `s`.
pub fn tensor_var_shape(s: &Var, ndim: i32, dtype: &str) -> StructInfo {
    StructInfo::Tensor(TensorStructInfo {
        shape: Some(s.to_expr()),
        dtype: dt(dtype),
        vdevice: None,
        ndim,
    })
}

/// A shape variable of rank `ndim`.
pub fn shape_var(name: &str, ndim: i32) -> Var {
    Var::new(name, Some(StructInfo::Shape(ShapeStructInfo { values: None, ndim })))
}

/// A variable with StructInfo `s`, as an argument expression.
pub fn arg(name: &str, s: StructInfo) -> Expr {
    Var::new(name, Some(s)).to_expr()
}

/// A `ShapeExpr` argument of constants.
pub fn shape_expr(dims: &[i64]) -> Expr {
    Expr::shape(dims.iter().map(|&d| PrimExpr::int(d)).collect())
}

/// A `PrimValue` argument.
pub fn prim(v: PrimExpr) -> Expr {
    Expr::new(ExprKind::PrimValue(v))
}

/// An integer list attribute.
pub fn ints(v: &[i64]) -> AttrValue {
    AttrValue::List(v.iter().map(|&i| AttrValue::Int(i)).collect())
}

/// A string attribute.
pub fn s(v: &str) -> AttrValue {
    AttrValue::Str(v.to_string())
}

/// A call of the operator `op`.
pub fn call(op: &str, args: Vec<Expr>, attrs: Vec<(&str, AttrValue)>) -> Call {
    Call {
        op: Expr::op(op),
        args,
        attrs: Attrs(attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
        sinfo_args: Vec::new(),
    }
}

/// The StructInfo an argument expression carries (variables: their annotation).
pub fn sinfo_of(e: &Expr) -> StructInfo {
    match e.kind() {
        ExprKind::Var(v) => v.struct_info().cloned().unwrap_or(StructInfo::Object),
        ExprKind::ShapeExpr(v) => StructInfo::shape(v.clone()),
        ExprKind::PrimValue(p) => StructInfo::prim_value(p.clone()),
        ExprKind::Tuple(f) => StructInfo::Tuple(f.iter().map(sinfo_of).collect()),
        _ => StructInfo::Object,
    }
}

/// Runs the registered inference of `c`.
pub fn infer(c: &Call) -> Result<StructInfo, String> {
    let name = c.op.as_op().expect("operator call");
    let def = lookup(name).unwrap_or_else(|| panic!("{name} is not registered"));
    let args: Vec<StructInfo> = c.args.iter().map(sinfo_of).collect();
    let analyzer = Analyzer::new();
    (def.infer)(
        c,
        &args,
        &InferCtx {
            module: None,
            analyzer: &analyzer,
        },
    )
    .map_err(|e| e.to_string())
}

/// Infers and renders; panics on an inference error.
pub fn ok(c: &Call) -> String {
    match infer(c) {
        Ok(s) => show(&s),
        Err(e) => panic!("inference failed: {e}"),
    }
}

/// Asserts that inference rejects `c`, returning the message.
pub fn err(c: &Call) -> String {
    match infer(c) {
        Ok(s) => panic!("expected an error, inferred {}", show(&s)),
        Err(e) => e,
    }
}

fn show_prim(e: &PrimExpr) -> String {
    match e.kind() {
        PrimExprKind::IntImm { value, .. } => value.to_string(),
        PrimExprKind::Var(v) => v.name().to_string(),
        PrimExprKind::Binary { op, a, b } => {
            let o = match op {
                BinOp::Add => "+",
                BinOp::Sub => "-",
                BinOp::Mul => "*",
                BinOp::FloorDiv => "//",
                BinOp::FloorMod => "%",
                _ => return format!("{op:?}({}, {})", show_prim(a), show_prim(b)),
            };
            format!("({} {} {})", show_prim(a), o, show_prim(b))
        }
        _ => format!("{e:?}"),
    }
}

/// A compact, TVMScript-like rendering (`R.Tensor((2, n), "float32")`).
pub fn show(s: &StructInfo) -> String {
    match s {
        StructInfo::Object => "R.Object".into(),
        StructInfo::Prim(p) => format!("R.Prim({})", p.dtype),
        StructInfo::Shape(sh) => match &sh.values {
            Some(v) => format!("R.Shape([{}])", v.iter().map(show_prim).collect::<Vec<_>>().join(", ")),
            None => format!("R.Shape(ndim={})", sh.ndim),
        },
        StructInfo::Tensor(t) => {
            let dev = t
                .vdevice
                .as_ref()
                .map(|v| format!(", vdevice={}", v.target.kind))
                .unwrap_or_default();
            match t.shape.as_ref().map(|e| e.kind()) {
                Some(ExprKind::ShapeExpr(v)) => {
                    let dims: Vec<String> = v.iter().map(show_prim).collect();
                    let inner = if dims.len() == 1 {
                        format!("{},", dims[0])
                    } else {
                        dims.join(", ")
                    };
                    format!("R.Tensor(({inner}), \"{}\"{dev})", t.dtype)
                }
                Some(ExprKind::Var(v)) => format!("R.Tensor({}, \"{}\"{dev})", v.name(), t.dtype),
                _ => format!("R.Tensor(\"{}\", ndim={}{dev})", t.dtype, t.ndim),
            }
        }
        StructInfo::Tuple(f) => format!("R.Tuple({})", f.iter().map(show).collect::<Vec<_>>().join(", ")),
        StructInfo::Func(_) => "R.Callable".into(),
    }
}
