//! Printing `PrimExpr`s in TIR bodies and in Relax annotations.

use super::consts::format_g17;
use crate::dtype::DataType;
use crate::text::parser::prim_expr::{intrinsic, match_types, try_fold, DtypeAt};
use crate::tir::{BinOp, Buffer, PrimExpr, PrimExprKind, TirVar};

/// Where a `PrimExpr` is printed: constants print differently (`T.int64(3)` in TIR
/// buffer shapes, `3` in Relax shapes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrimContext {
    /// Inside a `@T.prim_func`.
    Tir,
    /// Inside a Relax function (shape annotations, `R.shape`, `R.prim_value`).
    Relax,
}

/// Print `e` as TVM 0.27 does in `ctx`.
pub fn print_prim_expr(e: &PrimExpr, ctx: PrimContext) -> String {
    struct Plain;
    impl Names for Plain {
        fn var(&self, v: &TirVar) -> String {
            v.name().to_string()
        }
        fn buffer(&self, b: &Buffer) -> String {
            b.name().to_string()
        }
    }
    ExprPrinter {
        names: &Plain,
        ctx,
        scalar_sugar: false,
    }
    .print(e)
}

/// Names of variables and buffers while printing.
pub(crate) trait Names {
    /// The printed name of a variable.
    fn var(&self, v: &TirVar) -> String;
    /// The printed name of a buffer.
    fn buffer(&self, b: &Buffer) -> String;
}

/// A one-element local buffer, printed as a scalar variable outside `s_tir` functions.
pub(crate) fn is_scalar_buffer(b: &Buffer) -> bool {
    b.scope() == "local" && b.shape().len() == 1 && b.shape()[0].as_int() == Some(1)
}

/// Operator precedence of printed Python expressions (TVM's `ExprPrecedence`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Prec {
    Or = 3,
    And = 4,
    Not = 5,
    Cmp = 6,
    BitOr = 7,
    BitXor = 8,
    BitAnd = 9,
    Shift = 10,
    Add = 11,
    Mul = 12,
    Unary = 13,
    Atom = 15,
}

/// Prints expressions with a name source.
pub(crate) struct ExprPrinter<'a> {
    pub(crate) names: &'a dyn Names,
    pub(crate) ctx: PrimContext,
    /// Print one-element local buffers by name (`x` for `x[0]`), as in non-`s_tir` functions.
    pub(crate) scalar_sugar: bool,
}

/// TVM's printing of a float literal: integral values as `%.1f`, others as `%.17g`.
pub(crate) fn format_float(v: f64) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() {
            "\"-nan\"".into()
        } else {
            "\"nan\"".into()
        };
    }
    if v.is_infinite() {
        return if v < 0.0 { "\"-inf\"".into() } else { "\"inf\"".into() };
    }
    if v.round() == v {
        return format!("{v:.1}");
    }
    format_g17(v)
}

/// A Python string literal as TVM prints it.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The Python operator TVM prints for a bitwise or shift intrinsic.
fn bitwise_sugar(op: &str) -> Option<(&'static str, Prec)> {
    Some(match op {
        "bitwise_or" => ("|", Prec::BitOr),
        "bitwise_xor" => ("^", Prec::BitXor),
        "bitwise_and" => ("&", Prec::BitAnd),
        "shift_left" => ("<<", Prec::Shift),
        "shift_right" => (">>", Prec::Shift),
        _ => return None,
    })
}

fn sugar(op: BinOp) -> Option<(&'static str, Prec)> {
    Some(match op {
        BinOp::Add => ("+", Prec::Add),
        BinOp::Sub => ("-", Prec::Add),
        BinOp::Mul => ("*", Prec::Mul),
        BinOp::FloorDiv => ("//", Prec::Mul),
        BinOp::FloorMod => ("%", Prec::Mul),
        BinOp::Lt => ("<", Prec::Cmp),
        BinOp::Le => ("<=", Prec::Cmp),
        BinOp::Gt => (">", Prec::Cmp),
        BinOp::Ge => (">=", Prec::Cmp),
        BinOp::Eq => ("==", Prec::Cmp),
        BinOp::Ne => ("!=", Prec::Cmp),
        BinOp::And => ("and", Prec::And),
        BinOp::Or => ("or", Prec::Or),
        _ => return None,
    })
}

fn node_name(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "Add",
        BinOp::Sub => "Sub",
        BinOp::Mul => "Mul",
        BinOp::Div => "Div",
        BinOp::Mod => "truncmod",
        BinOp::FloorDiv => "FloorDiv",
        BinOp::FloorMod => "FloorMod",
        BinOp::Min => "min",
        BinOp::Max => "max",
        BinOp::Eq => "EQ",
        BinOp::Ne => "NE",
        BinOp::Lt => "LT",
        BinOp::Le => "LE",
        BinOp::Gt => "GT",
        BinOp::Ge => "GE",
        BinOp::And => "And",
        BinOp::Or => "Or",
    }
}

/// Whether TVM's operator function would rebuild `a op b` unchanged (so the
/// operator sugar re-parses to the same node).
fn rebuilds_same(op: BinOp, a: &PrimExpr, b: &PrimExpr) -> bool {
    if a.dtype() != b.dtype() {
        return false;
    }
    try_fold(op, a, b).is_none()
}

impl ExprPrinter<'_> {
    /// Print `e`.
    pub(crate) fn print(&self, e: &PrimExpr) -> String {
        self.doc(e).0
    }

    fn child(&self, e: &PrimExpr, parent: Prec, paren_same: bool) -> String {
        let (s, p) = self.doc(e);
        if p < parent || (paren_same && p == parent) {
            format!("({s})")
        } else {
            s
        }
    }

    fn t(&self, name: &str, args: &[String]) -> String {
        format!("T.{name}({})", args.join(", "))
    }

    fn int_lit(&self, value: i64, dtype: DataType) -> String {
        match self.ctx {
            PrimContext::Relax => {
                if dtype.is_bool() {
                    if value != 0 { "True" } else { "False" }.to_string()
                } else {
                    value.to_string()
                }
            }
            PrimContext::Tir => {
                if dtype == DataType::INT32 {
                    value.to_string()
                } else if dtype.is_bool() {
                    format!("T.bool({})", if value != 0 { "True" } else { "False" })
                } else {
                    format!("T.{dtype}({value})")
                }
            }
        }
    }

    /// The printed text and its precedence.
    pub(crate) fn doc(&self, e: &PrimExpr) -> (String, Prec) {
        let atom = |s: String| (s, Prec::Atom);
        match e.kind() {
            PrimExprKind::IntImm { value, dtype } => atom(self.int_lit(*value, *dtype)),
            PrimExprKind::FloatImm { value, dtype } => atom(format!("T.{dtype}({})", format_float(*value))),
            PrimExprKind::StringImm(s) => atom(quote(s)),
            PrimExprKind::Var(v) => atom(self.names.var(v)),
            PrimExprKind::Cast { dtype, value } => {
                atom(self.t("Cast", &[quote(&dtype.to_string()), self.print(value)]))
            }
            PrimExprKind::Binary { op, a, b } => self.binary(*op, a, b),
            PrimExprKind::Not(a) => {
                let (s, p) = self.doc(a);
                let literal = match a.kind() {
                    PrimExprKind::IntImm { dtype, .. } => self.ctx == PrimContext::Relax || *dtype == DataType::INT32,
                    PrimExprKind::StringImm(_) => true,
                    _ => false,
                };
                if literal {
                    return atom(self.t("Not", &[s]));
                }
                let s = if p < Prec::Not { format!("({s})") } else { s };
                (format!("not {s}"), Prec::Not)
            }
            PrimExprKind::Select { cond, t, f } => {
                atom(self.t("Select", &[self.print(cond), self.print(t), self.print(f)]))
            }
            PrimExprKind::Call { op, dtype, args } => match (bitwise_sugar(op.name()), args.as_slice()) {
                // TVM prints the bitwise and shift intrinsics as Python operators.
                (Some((tok, prec)), [a, b]) => {
                    let l = self.child(a, prec, false);
                    let r = self.child(b, prec, true);
                    (format!("{l} {tok} {r}"), prec)
                }
                _ if op.intrinsic() == Some(crate::tir::Intrinsic::BitwiseNot) && args.len() == 1 => {
                    (format!("~{}", self.child(&args[0], Prec::Unary, false)), Prec::Unary)
                }
                _ => atom(self.call(op.name(), *dtype, args)),
            },
            PrimExprKind::BufferLoad { buffer, indices } => atom(self.load(buffer, indices)),
            PrimExprKind::Let { var, value, body } => atom(format!(
                "T.Let({}, where={{{}: {}}})",
                self.print(body),
                self.names.var(var),
                self.print(value)
            )),
            PrimExprKind::Ramp { base, stride, lanes } => {
                atom(self.t("Ramp", &[self.print(base), self.print(stride), lanes.to_string()]))
            }
            PrimExprKind::Broadcast { value, lanes } => {
                atom(self.t("Broadcast", &[self.print(value), lanes.to_string()]))
            }
        }
    }

    fn binary(&self, op: BinOp, a: &PrimExpr, b: &PrimExpr) -> (String, Prec) {
        if op == BinOp::Div {
            let folds = {
                let (x, y) = match_types(a.clone(), b.clone());
                try_fold(BinOp::Div, &x, &y).is_some()
            };
            if folds || (a.dtype().is_integer() && b.dtype().is_integer()) {
                return (self.t("Div", &[self.print(a), self.print(b)]), Prec::Atom);
            }
            let l = self.child(a, Prec::Mul, false);
            let r = self.child(b, Prec::Mul, true);
            return (format!("{l} / {r}"), Prec::Mul);
        }
        if let Some((tok, prec)) = sugar(op) {
            if rebuilds_same(op, a, b) {
                let l = self.child(a, prec, false);
                let r = self.child(b, prec, true);
                return (format!("{l} {tok} {r}"), prec);
            }
        }
        (self.t(node_name(op), &[self.print(a), self.print(b)]), Prec::Atom)
    }

    fn call(&self, op: &str, dtype: DataType, args: &[PrimExpr]) -> String {
        let mut parts: Vec<String> = args.iter().map(|a| self.print(a)).collect();
        match intrinsic(op).map(|i| i.dtype_at) {
            Some(DtypeAt::First) => parts.insert(0, quote(&dtype.to_string())),
            Some(DtypeAt::Last) => parts.push(quote(&dtype.to_string())),
            _ => {}
        }
        self.t(op, &parts)
    }

    fn load(&self, buffer: &Buffer, indices: &[PrimExpr]) -> String {
        let name = self.names.buffer(buffer);
        if self.scalar_sugar && is_scalar_buffer(buffer) && indices.len() == 1 && indices[0].as_int() == Some(0) {
            return name;
        }
        if indices.is_empty() {
            return format!("{name}[()]");
        }
        format!("{name}[{}]", self.indices(indices))
    }

    /// Print buffer indices (ramps with a constant stride as slices).
    pub(crate) fn indices(&self, indices: &[PrimExpr]) -> String {
        indices
            .iter()
            .map(|i| match i.kind() {
                PrimExprKind::Ramp { base, stride, lanes } if stride.as_int().is_some() => {
                    let l = PrimExpr::int_of(*lanes as i64, base.dtype());
                    let stop = crate::text::parser::prim_expr::arith(
                        BinOp::Add,
                        base.clone(),
                        crate::text::parser::prim_expr::arith(BinOp::Mul, l, stride.clone()),
                    );
                    let mut s = format!("{}:{}", self.print(base), self.print(&stop));
                    if stride.as_int() != Some(1) {
                        s.push(':');
                        s.push_str(&self.print(stride));
                    }
                    s
                }
                _ => self.print(i),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_tvm() {
        assert_eq!(format_float(0.9), "0.90000000000000002");
        assert_eq!(format_float(1e-5), "1.0000000000000001e-05");
        assert_eq!(
            format_float(-3.4028234663852886e38),
            "-340282346638528859811704183484516925440.0"
        );
        assert_eq!(format_float(1e-300), "1e-300");
        assert_eq!(format_float(2.5), "2.5");
        assert_eq!(format_float(3.0), "3.0");
        assert_eq!(format_float(0.1), "0.10000000000000001");
        assert_eq!(format_float(5e-324), "4.9406564584124654e-324");
        assert_eq!(format_float(f64::INFINITY), "\"inf\"");
        assert_eq!(format_float(f64::NAN), "\"nan\"");
        assert_eq!(format_float(-0.0), "-0.0");
        assert_eq!(format_float(123.456), "123.456");
    }
}
