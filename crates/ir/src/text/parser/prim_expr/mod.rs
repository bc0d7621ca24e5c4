//! Parsing `PrimExpr`s (in TIR bodies and in Relax shape annotations).
//!
//! TVMScript evaluates the Python expression with TVM's operator overloads; this
//! module mirrors that: Python numbers stay Python numbers until they meet a
//! `PrimExpr` (then an `int` becomes an `int32` constant, a `float` a `float32`
//! constant), binary arithmetic promotes both sides to a common type and folds
//! constants like TVM's `tvm::add` & co, comparisons take the other side's type
//! for a Python number, `and`/`or`/`not` build their nodes directly.

use rustpython_parser::ast::{self, Ranged};

use crate::diagnostic::Diagnostic;
use crate::dtype::{DataType, TypeCode};
use crate::span::{LineIndex, Span};
use crate::tir::{BinOp, Buffer, BufferRegion, Intrinsic, PrimExpr, PrimExprKind, Range, Signature, TirVar};

mod fold;
#[allow(unused_imports)]
pub(crate) use fold::*;

/// Name resolution for [`parse_prim_expr`].
pub trait PrimEnv {
    /// The TIR variable that `name` denotes here, if any.
    fn lookup(&self, name: &str) -> Option<TirVar>;
}

/// Parse a `PrimExpr` such as `n * 2`, `T.int64(3)`, `T.max(a, b)`.
///
/// Bare integer literals are `int64` (the index type of Relax shapes); names are
/// resolved with `env`.
pub fn parse_prim_expr(expr: &ast::Expr, env: &dyn PrimEnv, lines: &LineIndex) -> Result<PrimExpr, Diagnostic> {
    struct Wrap<'a>(&'a dyn PrimEnv);
    impl Resolver for Wrap<'_> {
        fn resolve(&self, name: &str) -> Option<Value> {
            self.0.lookup(name).map(|v| Value::Expr(v.to_expr()))
        }
        fn undefined(&self, name: &str) -> String {
            format!("undefined symbolic variable `{name}`")
        }
    }
    let ev = Evaluator { res: &Wrap(env), lines };
    let v = ev.eval(expr)?;
    ev.to_prim_as(v, DataType::INT64, expr)
}

/// An error at the start of `node`.
pub(crate) fn err_at(lines: &LineIndex, node: &impl Ranged, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error(msg, span_of(lines, node)).with_rule(crate::diagnostic::Rule::Parse)
}

/// The span of the start of `node`.
pub(crate) fn span_of(lines: &LineIndex, node: &impl Ranged) -> Span {
    lines.span(node.start().to_usize())
}

/// A Python-level value produced while evaluating TVMScript expressions.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    /// `None`.
    None,
    /// A Python bool.
    Bool(bool),
    /// A Python int.
    Int(i64),
    /// A Python float.
    Float(f64),
    /// A Python string.
    Str(String),
    /// A TIR expression.
    Expr(PrimExpr),
    /// A buffer (by name).
    Buffer(Buffer),
    /// A buffer region `A[0:n, i]`.
    Region(BufferRegion),
    /// A data type object (`T.int64`, `T.float32`, `T.bool`, `T.handle`).
    DType(DataType),
    /// A tuple.
    Tuple(Vec<Value>),
    /// A list.
    List(Vec<Value>),
    /// A dict.
    Dict(Vec<(Value, Value)>),
    /// A slice `lo:hi` inside a subscript.
    Slice(Option<Box<Value>>, Option<Box<Value>>),
}

impl Value {
    /// A short description for error messages.
    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "a bool",
            Value::Int(_) => "an int",
            Value::Float(_) => "a float",
            Value::Str(_) => "a string",
            Value::Expr(_) => "a PrimExpr",
            Value::Buffer(_) => "a buffer",
            Value::Region(_) => "a buffer region",
            Value::DType(_) => "a data type",
            Value::Tuple(_) => "a tuple",
            Value::List(_) => "a list",
            Value::Dict(_) => "a dict",
            Value::Slice(..) => "a slice",
        }
    }
}

/// Resolves names and `T.<name>` calls that are not plain expressions.
pub(crate) trait Resolver {
    /// The value of a bare name.
    fn resolve(&self, name: &str) -> Option<Value>;
    /// The value of `base.attr` where `base` is a name (for `A.data`); default: none.
    fn resolve_attr(&self, _base: &Value, _attr: &str) -> Option<Value> {
        None
    }
    /// The message for a name that resolves to nothing.
    fn undefined(&self, name: &str) -> String {
        format!("undefined name `{name}`")
    }
}

/// Evaluates Python expressions to [`Value`]s.
pub(crate) struct Evaluator<'a> {
    pub(crate) res: &'a dyn Resolver,
    pub(crate) lines: &'a LineIndex,
}

/// `T.<name>` when `e` is an attribute access on the name `T`.
pub(crate) fn t_attr(e: &ast::Expr) -> Option<&str> {
    if let ast::Expr::Attribute(a) = e {
        if let ast::Expr::Name(n) = a.value.as_ref() {
            if n.id.as_str() == "T" {
                return Some(a.attr.as_str());
            }
        }
    }
    None
}

/// `T.<a>.<b>` as `"a.b"`.
pub(crate) fn t_attr2(e: &ast::Expr) -> Option<String> {
    if let ast::Expr::Attribute(a) = e {
        if let Some(inner) = t_attr(&a.value) {
            return Some(format!("{inner}.{}", a.attr.as_str()));
        }
    }
    None
}

/// A data type name as written after `T.` (`int64`, `float32`, `bool`, `handle`).
pub(crate) fn dtype_name(name: &str) -> Option<DataType> {
    match name {
        "bool" | "handle" => name.parse().ok(),
        _ if name.starts_with("int")
            || name.starts_with("uint")
            || name.starts_with("float")
            || name.starts_with("bfloat") =>
        {
            name.parse().ok()
        }
        _ => None,
    }
}

impl<'a> Evaluator<'a> {
    fn err(&self, node: &impl Ranged, msg: impl Into<String>) -> Diagnostic {
        err_at(self.lines, node, msg)
    }

    /// Evaluate `e`.
    pub(crate) fn eval(&self, e: &ast::Expr) -> Result<Value, Diagnostic> {
        match e {
            ast::Expr::Constant(c) => self.constant(&c.value, e),
            ast::Expr::Name(n) => {
                let name = n.id.as_str();
                if let Some(v) = self.res.resolve(name) {
                    return Ok(v);
                }
                match name {
                    "True" => Ok(Value::Bool(true)),
                    "False" => Ok(Value::Bool(false)),
                    "None" => Ok(Value::None),
                    _ => Err(self.err(e, self.res.undefined(name))),
                }
            }
            ast::Expr::Attribute(a) => {
                if let Some(name) = t_attr(e) {
                    if let Some(dt) = dtype_name(name) {
                        return Ok(Value::DType(dt));
                    }
                    return Err(self.err(e, format!("unsupported TIR builtin `T.{name}` here")));
                }
                let base = self.eval(&a.value)?;
                if let Some(v) = self.res.resolve_attr(&base, a.attr.as_str()) {
                    return Ok(v);
                }
                Err(self.err(
                    e,
                    format!("unsupported attribute `.{}` of {}", a.attr.as_str(), base.kind_name()),
                ))
            }
            ast::Expr::Tuple(t) => Ok(Value::Tuple(
                t.elts.iter().map(|x| self.eval(x)).collect::<Result<_, _>>()?,
            )),
            ast::Expr::List(t) => Ok(Value::List(
                t.elts.iter().map(|x| self.eval(x)).collect::<Result<_, _>>()?,
            )),
            ast::Expr::Dict(d) => {
                let mut items = Vec::new();
                for (k, v) in d.keys.iter().zip(d.values.iter()) {
                    let Some(k) = k else {
                        return Err(self.err(v, "dict unpacking is not supported"));
                    };
                    items.push((self.eval(k)?, self.eval(v)?));
                }
                Ok(Value::Dict(items))
            }
            ast::Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::USub) && is_int64_min_magnitude(&u.operand) => {
                Ok(Value::Int(i64::MIN))
            }
            ast::Expr::UnaryOp(u) => {
                let v = self.eval(&u.operand)?;
                match u.op {
                    ast::UnaryOp::USub => match v {
                        Value::Int(i) => Ok(Value::Int(
                            i.checked_neg().ok_or_else(|| self.err(e, "integer overflow"))?,
                        )),
                        Value::Float(f) => Ok(Value::Float(-f)),
                        Value::Bool(b) => Ok(Value::Int(-(b as i64))),
                        Value::Expr(x) => {
                            let m1 = const_of(-1, x.dtype());
                            Ok(Value::Expr(arith(BinOp::Mul, x, m1)))
                        }
                        other => Err(self.err(e, format!("cannot negate {}", other.kind_name()))),
                    },
                    ast::UnaryOp::UAdd => match v {
                        Value::Int(_) | Value::Float(_) | Value::Expr(_) => Ok(v),
                        Value::Bool(b) => Ok(Value::Int(b as i64)),
                        other => Err(self.err(e, format!("bad operand type for unary `+`: {}", other.kind_name()))),
                    },
                    ast::UnaryOp::Not => match v {
                        Value::Bool(b) => Ok(Value::Bool(!b)),
                        Value::Int(i) => Ok(Value::Bool(i == 0)),
                        Value::Expr(x) => Ok(Value::Expr(PrimExpr::new(PrimExprKind::Not(x)))),
                        other => Err(self.err(e, format!("cannot apply `not` to {}", other.kind_name()))),
                    },
                    ast::UnaryOp::Invert => match v {
                        Value::Int(i) => Ok(Value::Int(!i)),
                        Value::Expr(x) => {
                            let dtype = x.dtype();
                            Ok(Value::Expr(PrimExpr::intrinsic_call(
                                Intrinsic::BitwiseNot,
                                dtype,
                                vec![x],
                            )))
                        }
                        other => Err(self.err(e, format!("cannot apply `~` to {}", other.kind_name()))),
                    },
                }
            }
            ast::Expr::BinOp(b) => {
                let l = self.eval(&b.left)?;
                let r = self.eval(&b.right)?;
                self.binop(b.op, l, r, e)
            }
            ast::Expr::BoolOp(b) => {
                let mut acc: Option<Value> = None;
                for v in &b.values {
                    let x = self.eval(v)?;
                    acc = Some(match acc {
                        None => x,
                        Some(prev) => self.boolop(b.op, prev, x, v)?,
                    });
                }
                acc.ok_or_else(|| self.err(e, "empty boolean expression"))
            }
            ast::Expr::Compare(c) => {
                if c.ops.len() != 1 || c.comparators.len() != 1 {
                    return Err(self.err(e, "chained comparisons are not supported"));
                }
                let l = self.eval(&c.left)?;
                let r = self.eval(&c.comparators[0])?;
                self.compare(c.ops[0], l, r, e)
            }
            ast::Expr::Subscript(s) => {
                let base = self.eval(&s.value)?;
                self.subscript(base, &s.slice, e)
            }
            ast::Expr::Slice(s) => {
                let lo = s.lower.as_ref().map(|x| self.eval(x)).transpose()?.map(Box::new);
                let hi = s.upper.as_ref().map(|x| self.eval(x)).transpose()?.map(Box::new);
                if s.step.is_some() {
                    return Err(self.err(e, "slices with a step are not supported"));
                }
                Ok(Value::Slice(lo, hi))
            }
            ast::Expr::Call(c) => self.call(c, e),
            _ => Err(self.err(e, "unsupported expression in TIR")),
        }
    }

    fn constant(&self, c: &ast::Constant, e: &ast::Expr) -> Result<Value, Diagnostic> {
        Ok(match c {
            ast::Constant::None => Value::None,
            ast::Constant::Bool(b) => Value::Bool(*b),
            ast::Constant::Str(s) => Value::Str(s.clone()),
            ast::Constant::Int(i) => {
                Value::Int(i64::try_from(i).map_err(|_| self.err(e, "integer literal out of the int64 range"))?)
            }
            ast::Constant::Float(f) => Value::Float(*f),
            ast::Constant::Tuple(t) => Value::Tuple(t.iter().map(|x| self.constant(x, e)).collect::<Result<_, _>>()?),
            _ => return Err(self.err(e, "unsupported constant")),
        })
    }

    /// Convert to a `PrimExpr` (Python ints become `int32`, or `int64` when large).
    pub(crate) fn to_prim(&self, v: Value, node: &impl Ranged) -> Result<PrimExpr, Diagnostic> {
        self.to_prim_as(v, DataType::INT32, node)
    }

    /// Convert to a `PrimExpr`, Python ints becoming constants of `int_dtype`.
    pub(crate) fn to_prim_as(&self, v: Value, int_dtype: DataType, node: &impl Ranged) -> Result<PrimExpr, Diagnostic> {
        match v {
            Value::Expr(x) => Ok(x),
            Value::Int(i) => Ok(py_int(i, int_dtype)),
            Value::Bool(b) => Ok(PrimExpr::bool(b)),
            Value::Float(f) => Ok(PrimExpr::float_of(f, DataType::FLOAT32)),
            Value::Str(s) => Ok(PrimExpr::new(PrimExprKind::StringImm(s))),
            Value::Buffer(b) if is_unit_buffer(&b) => Ok(unit_load(&b)),
            other => Err(self.err(node, format!("expected a PrimExpr, found {}", other.kind_name()))),
        }
    }

    /// A Python int (or something constant) as an `i64`.
    pub(crate) fn to_int(&self, v: &Value, node: &impl Ranged) -> Result<i64, Diagnostic> {
        match v {
            Value::Int(i) => Ok(*i),
            Value::Bool(b) => Ok(*b as i64),
            Value::Expr(x) => x.as_int().ok_or_else(|| self.err(node, "expected an integer constant")),
            other => Err(self.err(node, format!("expected an integer, found {}", other.kind_name()))),
        }
    }

    /// A string value.
    pub(crate) fn to_str(&self, v: &Value, node: &impl Ranged) -> Result<String, Diagnostic> {
        match v {
            Value::Str(s) => Ok(s.clone()),
            Value::Expr(x) => match x.kind() {
                PrimExprKind::StringImm(s) => Ok(s.clone()),
                _ => Err(self.err(node, "expected a string")),
            },
            other => Err(self.err(node, format!("expected a string, found {}", other.kind_name()))),
        }
    }

    /// A data type given as a string (`"float32"`) or a type object (`T.float32`).
    pub(crate) fn to_dtype(&self, v: &Value, node: &impl Ranged) -> Result<DataType, Diagnostic> {
        match v {
            Value::DType(d) => Ok(*d),
            Value::Str(s) => s
                .parse()
                .map_err(|_| self.err(node, format!("unknown data type \"{s}\""))),
            other => Err(self.err(node, format!("expected a data type, found {}", other.kind_name()))),
        }
    }

    fn binop(&self, op: ast::Operator, l: Value, r: Value, e: &ast::Expr) -> Result<Value, Diagnostic> {
        let (l, r) = (scalarize(l), scalarize(r));
        // Pure Python arithmetic first.
        let as_num = |v: &Value| match v {
            Value::Int(i) => Some(Num::I(*i)),
            Value::Bool(b) => Some(Num::I(*b as i64)),
            Value::Float(f) => Some(Num::F(*f)),
            _ => None,
        };
        if let (Some(a), Some(b)) = (as_num(&l), as_num(&r)) {
            return self.py_arith(op, a, b, e);
        }
        let intrinsic = match op {
            ast::Operator::LShift => Some("shift_left"),
            ast::Operator::RShift => Some("shift_right"),
            ast::Operator::BitAnd => Some("bitwise_and"),
            ast::Operator::BitOr => Some("bitwise_or"),
            ast::Operator::BitXor => Some("bitwise_xor"),
            _ => None,
        };
        if let Some(name) = intrinsic {
            // `a << b`, `a & b`, ...: the intrinsic calls TVM prints as operators.
            let (a, b) = match_types(self.to_prim(l, e)?, self.to_prim(r, e)?);
            let dtype = a.dtype();
            return Ok(Value::Expr(PrimExpr::call(name, dtype, vec![a, b])));
        }
        let bop = match op {
            ast::Operator::Add => BinOp::Add,
            ast::Operator::Sub => BinOp::Sub,
            ast::Operator::Mult => BinOp::Mul,
            ast::Operator::Div => BinOp::Div,
            ast::Operator::FloorDiv => BinOp::FloorDiv,
            ast::Operator::Mod => BinOp::FloorMod,
            _ => return Err(self.err(e, "unsupported operator in TIR")),
        };
        let a = self.to_prim(l, e)?;
        let b = self.to_prim(r, e)?;
        if bop == BinOp::Div && a.dtype().is_integer() && b.dtype().is_integer() {
            return Err(self.err(
                e,
                "integer `/` is ambiguous: use `//` (floordiv), T.truncdiv or T.floordiv",
            ));
        }
        Ok(Value::Expr(arith(bop, a, b)))
    }

    fn py_arith(&self, op: ast::Operator, a: Num, b: Num, e: &ast::Expr) -> Result<Value, Diagnostic> {
        let zero = || self.err(e, "division by zero");
        let ovf = || self.err(e, "integer overflow");
        Ok(match (a, b) {
            (Num::I(x), Num::I(y)) => match op {
                ast::Operator::Add => Value::Int(x.checked_add(y).ok_or_else(ovf)?),
                ast::Operator::Sub => Value::Int(x.checked_sub(y).ok_or_else(ovf)?),
                ast::Operator::Mult => Value::Int(x.checked_mul(y).ok_or_else(ovf)?),
                ast::Operator::FloorDiv => {
                    if y == 0 {
                        return Err(zero());
                    }
                    Value::Int(floordiv_i64(x, y))
                }
                ast::Operator::Mod => {
                    if y == 0 {
                        return Err(zero());
                    }
                    Value::Int(floormod_i64(x, y))
                }
                ast::Operator::Div => {
                    if y == 0 {
                        return Err(zero());
                    }
                    Value::Float(x as f64 / y as f64)
                }
                ast::Operator::Pow if y >= 0 => Value::Int(x.checked_pow(y as u32).ok_or_else(ovf)?),
                _ => return Err(self.err(e, "unsupported operator on Python numbers")),
            },
            (a, b) => {
                let (x, y) = (a.f(), b.f());
                match op {
                    ast::Operator::Add => Value::Float(x + y),
                    ast::Operator::Sub => Value::Float(x - y),
                    ast::Operator::Mult => Value::Float(x * y),
                    ast::Operator::Div => Value::Float(x / y),
                    ast::Operator::FloorDiv => Value::Float((x / y).floor()),
                    ast::Operator::Mod => Value::Float(x - y * (x / y).floor()),
                    ast::Operator::Pow => Value::Float(x.powf(y)),
                    _ => return Err(self.err(e, "unsupported operator on Python numbers")),
                }
            }
        })
    }

    fn boolop(&self, op: ast::BoolOp, l: Value, r: Value, node: &ast::Expr) -> Result<Value, Diagnostic> {
        if let (Value::Bool(a), Value::Bool(b)) = (&l, &r) {
            return Ok(Value::Bool(match op {
                ast::BoolOp::And => *a && *b,
                ast::BoolOp::Or => *a || *b,
            }));
        }
        let a = self.to_prim(l, node)?;
        let b = self.to_prim(r, node)?;
        let bop = match op {
            ast::BoolOp::And => BinOp::And,
            ast::BoolOp::Or => BinOp::Or,
        };
        Ok(Value::Expr(PrimExpr::binary(bop, a, b)))
    }

    fn compare(&self, op: ast::CmpOp, l: Value, r: Value, e: &ast::Expr) -> Result<Value, Diagnostic> {
        let (l, r) = (scalarize(l), scalarize(r));
        let bop = match op {
            ast::CmpOp::Eq => BinOp::Eq,
            ast::CmpOp::NotEq => BinOp::Ne,
            ast::CmpOp::Lt => BinOp::Lt,
            ast::CmpOp::LtE => BinOp::Le,
            ast::CmpOp::Gt => BinOp::Gt,
            ast::CmpOp::GtE => BinOp::Ge,
            _ => return Err(self.err(e, "unsupported comparison in TIR")),
        };
        let is_py = |v: &Value| matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_));
        if is_py(&l) && is_py(&r) {
            let res = bop.compare_floats(num_f(&l), num_f(&r)).unwrap_or(false);
            return Ok(Value::Bool(res));
        }
        // A Python number takes the type of the other side.
        let (a, b) = match (l, r) {
            (l, Value::Expr(b)) if is_py(&l) => (py_as(&l, b.dtype()), b),
            (Value::Expr(a), r) if is_py(&r) => {
                let b = py_as(&r, a.dtype());
                (a, b)
            }
            (l, r) => (self.to_prim(l, e)?, self.to_prim(r, e)?),
        };
        Ok(Value::Expr(PrimExpr::binary(bop, a, b)))
    }

    fn subscript(&self, base: Value, slice: &ast::Expr, e: &ast::Expr) -> Result<Value, Diagnostic> {
        let Value::Buffer(buf) = base else {
            return Err(self.err(e, format!("cannot index {}", base.kind_name())));
        };
        let items: Vec<&ast::Expr> = match slice {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            other => vec![other],
        };
        let mut vals = Vec::new();
        for it in &items {
            vals.push((self.eval(it)?, *it));
        }
        if vals.iter().any(|(v, _)| matches!(v, Value::Slice(..))) {
            let mut region = Vec::new();
            for (i, (v, node)) in vals.into_iter().enumerate() {
                match v {
                    Value::Slice(lo, hi) => {
                        let lo = match lo {
                            Some(x) => self.index(*x, node)?,
                            None => const_of(0, index_dtype(&buf, i)),
                        };
                        let hi = match hi {
                            Some(x) => self.index(*x, node)?,
                            None => buf
                                .shape()
                                .get(i)
                                .cloned()
                                .ok_or_else(|| self.err(node, "too many indices for the buffer"))?,
                        };
                        let extent = extent_between(&lo, hi);
                        region.push(Range::new(lo, extent));
                    }
                    other => {
                        let x = self.index(other, node)?;
                        let one = const_of(1, x.dtype());
                        region.push(Range::new(x, one));
                    }
                }
            }
            return Ok(Value::Region(BufferRegion { buffer: buf, region }));
        }
        // `A[()]`: a zero-dimensional access.
        if vals.len() == 1 && matches!(&vals[0].0, Value::Tuple(t) if t.is_empty()) {
            return Ok(Value::Expr(PrimExpr::load(&buf, Vec::new())));
        }
        let mut idx = Vec::new();
        for (v, node) in vals {
            idx.push(self.index(v, node)?);
        }
        Ok(Value::Expr(PrimExpr::load(&buf, idx)))
    }

    /// A buffer index or region bound: an integer expression (TVM refuses others too).
    fn index(&self, v: Value, node: &ast::Expr) -> Result<PrimExpr, Diagnostic> {
        let x = self.to_prim(v, node)?;
        integer_index(x).map_err(|m| self.err(node, m))
    }

    fn call(&self, c: &ast::ExprCall, e: &ast::Expr) -> Result<Value, Diagnostic> {
        let Some(name) = t_attr(&c.func) else {
            return Err(self.err(e, "unsupported call in a TIR expression"));
        };
        let kw = |k: &str| {
            c.keywords
                .iter()
                .find(|x| x.arg.as_ref().map(|a| a.as_str()) == Some(k))
        };
        let args: Vec<&ast::Expr> = c.args.iter().collect();
        let argn = |n: usize| -> Result<(), Diagnostic> {
            if args.len() != n {
                Err(self.err(e, format!("T.{name} expects {n} argument(s), found {}", args.len())))
            } else {
                Ok(())
            }
        };
        // Typed constants and casts: `T.int64(3)`, `T.float32(x)`, `T.bool(True)`, `T.int32()`.
        if let Some(dt) = dtype_name(name) {
            if args.is_empty() && c.keywords.is_empty() {
                return Err(self.err(e, format!("`T.{name}()` declares a variable and is not an expression")));
            }
            argn(1)?;
            let v = self.eval(args[0])?;
            return Ok(Value::Expr(self.typed_const(dt, v, args[0])?));
        }
        let eval_prim = |i: usize| -> Result<PrimExpr, Diagnostic> {
            let v = self.eval(args[i])?;
            self.to_prim(v, args[i])
        };
        let eval_lanes = |i: usize| -> Result<u16, Diagnostic> {
            let lanes = self.to_int(&self.eval(args[i])?, args[i])?;
            u16::try_from(lanes).map_err(|_| self.err(args[i], "invalid lane count"))
        };
        match name {
            "Cast" => {
                argn(2)?;
                let dt = self.to_dtype(&self.eval(args[0])?, args[0])?;
                Ok(Value::Expr(eval_prim(1)?.cast(dt)))
            }
            "Select" => {
                argn(3)?;
                let cond = eval_prim(0)?;
                let (t, f) = match_types(eval_prim(1)?, eval_prim(2)?);
                Ok(Value::Expr(PrimExpr::select(cond, t, f)))
            }
            "if_then_else" => {
                argn(3)?;
                let cond = eval_prim(0)?;
                let (t, f) = match_types(eval_prim(1)?, eval_prim(2)?);
                let dt = t.dtype();
                Ok(Value::Expr(PrimExpr::intrinsic_call(
                    Intrinsic::IfThenElse,
                    dt,
                    vec![cond, t, f],
                )))
            }
            "max" | "min" | "floordiv" | "floormod" | "truncdiv" | "truncmod" => {
                argn(2)?;
                let a = self.eval(args[0])?;
                let b = self.eval(args[1])?;
                let (a, b) = self.operands(a, b, e)?;
                let op = match name {
                    "max" => BinOp::Max,
                    "min" => BinOp::Min,
                    "floordiv" => BinOp::FloorDiv,
                    "floormod" => BinOp::FloorMod,
                    "truncdiv" => BinOp::Div,
                    _ => BinOp::Mod,
                };
                Ok(Value::Expr(arith(op, a, b)))
            }
            "Add" | "Sub" | "Mul" | "Div" | "FloorDiv" | "FloorMod" | "LT" | "LE" | "GT" | "GE" | "EQ" | "NE"
            | "And" | "Or" => {
                argn(2)?;
                let op = match name {
                    "Add" => BinOp::Add,
                    "Sub" => BinOp::Sub,
                    "Mul" => BinOp::Mul,
                    "Div" => BinOp::Div,
                    "FloorDiv" => BinOp::FloorDiv,
                    "FloorMod" => BinOp::FloorMod,
                    "LT" => BinOp::Lt,
                    "LE" => BinOp::Le,
                    "GT" => BinOp::Gt,
                    "GE" => BinOp::Ge,
                    "EQ" => BinOp::Eq,
                    "NE" => BinOp::Ne,
                    "And" => BinOp::And,
                    _ => BinOp::Or,
                };
                Ok(Value::Expr(PrimExpr::binary(op, eval_prim(0)?, eval_prim(1)?)))
            }
            "Not" => {
                argn(1)?;
                Ok(Value::Expr(PrimExpr::new(PrimExprKind::Not(eval_prim(0)?))))
            }
            "Let" => {
                argn(1)?;
                Err(self.err(e, "T.Let expressions are not supported"))
            }
            "Ramp" => {
                argn(3)?;
                Ok(Value::Expr(PrimExpr::new(PrimExprKind::Ramp {
                    base: eval_prim(0)?,
                    stride: eval_prim(1)?,
                    lanes: eval_lanes(2)?,
                })))
            }
            "Broadcast" => {
                argn(2)?;
                Ok(Value::Expr(PrimExpr::new(PrimExprKind::Broadcast {
                    value: eval_prim(0)?,
                    lanes: eval_lanes(1)?,
                })))
            }
            "max_value" | "min_value" => {
                argn(1)?;
                let dt = self.to_dtype(&self.eval(args[0])?, args[0])?;
                limit_value(dt, name == "max_value")
                    .map(Value::Expr)
                    .ok_or_else(|| self.err(args[0], format!("no {name} for {dt}")))
            }
            "target" => {
                argn(1)?;
                match self.eval(args[0])? {
                    Value::Dict(d) => Ok(Value::Dict(d)),
                    Value::Str(s) => Ok(Value::Dict(vec![(Value::Str("kind".into()), Value::Str(s))])),
                    other => Err(self.err(
                        args[0],
                        format!("T.target expects a dict or a string, found {}", other.kind_name()),
                    )),
                }
            }
            "tvm_thread_invariant" => {
                argn(1)?;
                let x = eval_prim(0)?;
                Ok(Value::Expr(PrimExpr::call(name, x.dtype(), vec![x])))
            }
            _ => {
                let Some(sig) = intrinsic(name) else {
                    return Err(self.err(&*c.func, format!("unknown TIR intrinsic `T.{name}`")));
                };
                let mut vals = Vec::new();
                for a in &args {
                    vals.push(self.eval(a)?);
                }
                let dtype_kw = match kw("dtype") {
                    Some(k) => Some(self.to_dtype(&self.eval(&k.value)?, &k.value)?),
                    None => None,
                };
                self.intrinsic_call(name, sig, vals, &args, dtype_kw, e)
                    .map(Value::Expr)
            }
        }
    }

    fn operands(&self, a: Value, b: Value, node: &ast::Expr) -> Result<(PrimExpr, PrimExpr), Diagnostic> {
        let a = self.to_prim(a, node)?;
        let b = self.to_prim(b, node)?;
        Ok((a, b))
    }

    /// `T.<dtype>(value)`: a constant of that type, or a cast of an expression.
    pub(crate) fn typed_const(&self, dt: DataType, v: Value, node: &impl Ranged) -> Result<PrimExpr, Diagnostic> {
        Ok(match v {
            Value::Int(i) => const_of(i, dt),
            Value::Bool(b) => const_of(b as i64, dt),
            Value::Float(f) => {
                if dt.is_float() {
                    PrimExpr::float_of(f, dt)
                } else {
                    const_of(f as i64, dt)
                }
            }
            Value::Str(s) if dt.is_float() => {
                let f = match s.as_str() {
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    "nan" => f64::NAN,
                    "-nan" => -f64::NAN,
                    other => other
                        .parse()
                        .map_err(|_| self.err(node, format!("invalid float \"{other}\"")))?,
                };
                PrimExpr::float_of(f, dt)
            }
            Value::Expr(x) => x.cast(dt),
            other => return Err(self.err(node, format!("T.{dt} expects a number, found {}", other.kind_name()))),
        })
    }

    fn intrinsic_call(
        &self,
        name: &str,
        sig: Signature,
        vals: Vec<Value>,
        nodes: &[&ast::Expr],
        dtype_kw: Option<DataType>,
        e: &ast::Expr,
    ) -> Result<PrimExpr, Diagnostic> {
        let mut vals = vals;
        let mut dtype = dtype_kw;
        match sig.dtype_at {
            DtypeAt::First => {
                if dtype.is_none() {
                    if vals.is_empty() {
                        return Err(self.err(e, format!("T.{name} expects a dtype first")));
                    }
                    let v = vals.remove(0);
                    dtype = Some(self.to_dtype(&v, nodes[0])?);
                }
            }
            DtypeAt::Last => {
                if dtype.is_none() {
                    let Some(v) = vals.pop() else {
                        return Err(self.err(e, format!("T.{name} expects a dtype last")));
                    };
                    dtype = Some(self.to_dtype(&v, nodes[nodes.len() - 1])?);
                }
            }
            DtypeAt::None => {}
        }
        let off = if matches!(sig.dtype_at, DtypeAt::First) && dtype_kw.is_none() {
            1
        } else {
            0
        };
        if let Some(n) = sig.arity {
            if vals.len() != n {
                return Err(self.err(e, format!("T.{name} expects {n} argument(s), found {}", vals.len())));
            }
        }
        let mut args = Vec::new();
        for (i, v) in vals.into_iter().enumerate() {
            let node = nodes.get(i + off).copied().unwrap_or(e);
            args.push(self.to_prim(v, node)?);
        }
        let dt = match sig.ret {
            Ret::Arg0 => {
                if args.len() == 2 {
                    let b = args.pop();
                    let a = args.pop();
                    if let (Some(a), Some(b)) = (a, b) {
                        let (a, b) = match_types(a, b);
                        args = vec![a, b];
                    }
                }
                args.first()
                    .map(|a| a.dtype())
                    .ok_or_else(|| self.err(e, format!("T.{name} expects arguments")))?
            }
            Ret::Bool => DataType::BOOL,
            Ret::Int32 => DataType::INT32,
            Ret::Handle => DataType::HANDLE,
            Ret::Given => dtype.unwrap_or(DataType::INT32),
        };
        Ok(PrimExpr::call(name, dt, args))
    }
}

pub(crate) use crate::tir::{DtypeAt, RetType as Ret};

/// The signature of a generic `T.<intrinsic>` call (`T.exp`, `T.tvm_struct_get`, ...).
pub(crate) fn intrinsic(name: &str) -> Option<Signature> {
    Intrinsic::from_name(name).and_then(Intrinsic::signature)
}

/// Whether `e` is the literal 9223372036854775808, which only exists negated (`-2**63`).
pub(crate) fn is_int64_min_magnitude(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Constant(ast::ExprConstant { value: ast::Constant::Int(i), .. })
        if i.to_string() == "9223372036854775808")
}

/// `x` if it can index a buffer (an integer expression), else the message saying why not.
pub(crate) fn integer_index(x: PrimExpr) -> Result<PrimExpr, String> {
    let dt = x.dtype();
    if dt.is_int() || dt.is_uint() {
        Ok(x)
    } else {
        Err(format!("a buffer index must be an integer expression, not a {dt}"))
    }
}
