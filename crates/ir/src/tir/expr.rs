use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use super::Buffer;
use crate::dtype::DataType;
use crate::id::fresh_id;

/// A TIR variable: a shape variable in Relax, a loop or parameter variable in TIR.
///
/// Identity is by object (two variables with the same name are different
/// variables); structural equality maps bound variables.
#[derive(Clone)]
pub struct TirVar(pub Arc<TirVarNode>);

/// The data of a [`TirVar`].
#[derive(Debug)]
pub struct TirVarNode {
    /// Unique identity.
    pub id: u64,
    /// Name hint.
    pub name: String,
    /// Data type (`int64` for shape variables; `handle` for buffer data pointers).
    pub dtype: DataType,
    /// For handle variables: the element type pointed to (`T.handle("float32")`), if known.
    pub pointee: Option<DataType>,
    /// For handle variables: the storage scope pointed to (`"global"`, `"shared"`, ...).
    pub storage_scope: Option<String>,
}

impl TirVar {
    /// A fresh variable.
    pub fn new(name: impl Into<String>, dtype: DataType) -> TirVar {
        TirVar(Arc::new(TirVarNode {
            id: fresh_id(),
            name: name.into(),
            dtype,
            pointee: None,
            storage_scope: None,
        }))
    }
    /// A fresh handle variable pointing to `pointee` in `scope`.
    pub fn new_handle(name: impl Into<String>, pointee: Option<DataType>, scope: Option<String>) -> TirVar {
        TirVar(Arc::new(TirVarNode {
            id: fresh_id(),
            name: name.into(),
            dtype: DataType::HANDLE,
            pointee,
            storage_scope: scope,
        }))
    }
    /// The name hint.
    pub fn name(&self) -> &str {
        &self.0.name
    }
    /// The data type.
    pub fn dtype(&self) -> DataType {
        self.0.dtype
    }
    /// The unique identity.
    pub fn id(&self) -> u64 {
        self.0.id
    }
    /// This variable as an expression.
    pub fn to_expr(&self) -> PrimExpr {
        PrimExpr::new(PrimExprKind::Var(self.clone()))
    }
}

impl fmt::Debug for TirVar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.0.name, self.0.id)
    }
}

/// Binary operators of TIR (arithmetic, comparison, logic).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`: truncating division for integers (`T.Div`), true division for floats.
    Div,
    /// `T.truncmod(a, b)` (`%` in C).
    Mod,
    /// `a // b`: floor division.
    FloorDiv,
    /// `a % b`: floor modulo.
    FloorMod,
    /// `T.min(a, b)`
    Min,
    /// `T.max(a, b)`
    Max,
    /// `a == b`
    Eq,
    /// `a != b`
    Ne,
    /// `a < b`
    Lt,
    /// `a <= b`
    Le,
    /// `a > b`
    Gt,
    /// `a >= b`
    Ge,
    /// `a and b`
    And,
    /// `a or b`
    Or,
}

impl BinOp {
    /// Whether this is integer arithmetic (`+ - * / %`, floor division and modulo,
    /// `min`, `max`) rather than a comparison or a logical connective.
    pub fn is_arith(self) -> bool {
        matches!(
            self,
            BinOp::Add
                | BinOp::Sub
                | BinOp::Mul
                | BinOp::Div
                | BinOp::Mod
                | BinOp::FloorDiv
                | BinOp::FloorMod
                | BinOp::Min
                | BinOp::Max
        )
    }

    /// Whether the result is `bool`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
    /// Whether this is `and`/`or`.
    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }
    /// For a comparison, whether operands ordered as `ord` satisfy it; `None` for
    /// the other operators.
    pub fn compare(self, ord: std::cmp::Ordering) -> Option<bool> {
        Some(match self {
            BinOp::Eq => ord.is_eq(),
            BinOp::Ne => ord.is_ne(),
            BinOp::Lt => ord.is_lt(),
            BinOp::Le => ord.is_le(),
            BinOp::Gt => ord.is_gt(),
            BinOp::Ge => ord.is_ge(),
            _ => return None,
        })
    }
    /// For a comparison, `x op y` on floats (IEEE: with a NaN only `!=` holds);
    /// `None` for the other operators.
    pub fn compare_floats(self, x: f64, y: f64) -> Option<bool> {
        match x.partial_cmp(&y) {
            Some(ord) => self.compare(ord),
            None => self.is_comparison().then_some(self == BinOp::Ne),
        }
    }
}

/// A TIR expression. Cheap to clone (reference counted).
#[derive(Clone)]
pub struct PrimExpr(pub Arc<PrimExprKind>);

/// The node kinds of [`PrimExpr`].
#[derive(Debug)]
pub enum PrimExprKind {
    /// An integer constant of an integer or bool type.
    IntImm {
        /// The value.
        value: i64,
        /// Its type.
        dtype: DataType,
    },
    /// A float constant.
    FloatImm {
        /// The value.
        value: f64,
        /// Its type.
        dtype: DataType,
    },
    /// A string constant (arguments of some intrinsics).
    StringImm(String),
    /// A variable.
    Var(TirVar),
    /// `T.Cast(dtype, value)`.
    Cast {
        /// Target type.
        dtype: DataType,
        /// Operand.
        value: PrimExpr,
    },
    /// A binary operation.
    Binary {
        /// The operator.
        op: BinOp,
        /// Left operand.
        a: PrimExpr,
        /// Right operand.
        b: PrimExpr,
    },
    /// `not a`.
    Not(PrimExpr),
    /// `T.Select(cond, t, f)`: both sides evaluated.
    Select {
        /// Condition.
        cond: PrimExpr,
        /// Value when true.
        t: PrimExpr,
        /// Value when false.
        f: PrimExpr,
    },
    /// An intrinsic call: `op` is the intrinsic's short name as written after `T.`
    /// (`"exp"`, `"if_then_else"`, `"max_value"`, `"tvm_thread_invariant"`, ...).
    Call {
        /// What is called.
        op: super::CallOp,
        /// Result type.
        dtype: DataType,
        /// Arguments.
        args: Vec<PrimExpr>,
    },
    /// `buffer[indices]`.
    BufferLoad {
        /// The buffer read.
        buffer: Buffer,
        /// One index per buffer dimension.
        indices: Vec<PrimExpr>,
    },
    /// `T.let(var, value, body)`.
    Let {
        /// The bound variable.
        var: TirVar,
        /// Its value.
        value: PrimExpr,
        /// The body.
        body: PrimExpr,
    },
    /// `T.Ramp(base, stride, lanes)`.
    Ramp {
        /// First lane.
        base: PrimExpr,
        /// Step between lanes.
        stride: PrimExpr,
        /// Lane count.
        lanes: u16,
    },
    /// `T.Broadcast(value, lanes)`.
    Broadcast {
        /// The scalar.
        value: PrimExpr,
        /// Lane count.
        lanes: u16,
    },
}

impl PrimExpr {
    /// Wrap a node.
    pub fn new(kind: PrimExprKind) -> PrimExpr {
        PrimExpr(Arc::new(kind))
    }
    /// The node.
    pub fn kind(&self) -> &PrimExprKind {
        &self.0
    }
    /// An `int64` constant.
    pub fn int(value: i64) -> PrimExpr {
        PrimExpr::int_of(value, DataType::INT64)
    }
    /// An integer constant of `dtype`.
    pub fn int_of(value: i64, dtype: DataType) -> PrimExpr {
        PrimExpr::new(PrimExprKind::IntImm { value, dtype })
    }
    /// A bool constant.
    pub fn bool(value: bool) -> PrimExpr {
        PrimExpr::int_of(value as i64, DataType::BOOL)
    }
    /// A float constant of `dtype`.
    pub fn float_of(value: f64, dtype: DataType) -> PrimExpr {
        PrimExpr::new(PrimExprKind::FloatImm { value, dtype })
    }
    /// A binary operation.
    pub fn binary(op: BinOp, a: PrimExpr, b: PrimExpr) -> PrimExpr {
        PrimExpr::new(PrimExprKind::Binary { op, a, b })
    }
    /// `T.Cast(dtype, self)`, or `self` when it already has that type.
    pub fn cast(self, dtype: DataType) -> PrimExpr {
        if self.dtype() == dtype {
            return self;
        }
        PrimExpr::new(PrimExprKind::Cast { dtype, value: self })
    }
    /// A call: of an intrinsic (an [`Intrinsic`](super::Intrinsic), or its name) or of
    /// an external operation by name.
    pub fn call(op: impl Into<super::CallOp>, dtype: DataType, args: Vec<PrimExpr>) -> PrimExpr {
        PrimExpr::new(PrimExprKind::Call {
            op: op.into(),
            dtype,
            args,
        })
    }
    /// A call of a known intrinsic.
    pub fn intrinsic_call(op: super::Intrinsic, dtype: DataType, args: Vec<PrimExpr>) -> PrimExpr {
        PrimExpr::call(op, dtype, args)
    }
    /// The value inside any number of `T.Cast`s (`self` when it is not a cast).
    pub fn without_casts(&self) -> &PrimExpr {
        let mut e = self;
        while let PrimExprKind::Cast { value, .. } = e.kind() {
            e = value;
        }
        e
    }
    /// The intrinsic, if this is a call of a known one.
    pub fn as_intrinsic(&self) -> Option<super::Intrinsic> {
        match self.kind() {
            PrimExprKind::Call { op, .. } => op.intrinsic(),
            _ => None,
        }
    }
    /// `T.Select(cond, t, f)`.
    pub fn select(cond: PrimExpr, t: PrimExpr, f: PrimExpr) -> PrimExpr {
        PrimExpr::new(PrimExprKind::Select { cond, t, f })
    }
    /// `buffer[indices]`.
    pub fn load(buffer: &Buffer, indices: Vec<PrimExpr>) -> PrimExpr {
        PrimExpr::new(PrimExprKind::BufferLoad {
            buffer: buffer.clone(),
            indices,
        })
    }
    /// The constant value, if this is an `IntImm`.
    pub fn as_int(&self) -> Option<i64> {
        match self.kind() {
            PrimExprKind::IntImm { value, .. } => Some(*value),
            _ => None,
        }
    }
    /// The value, if this is a float constant.
    pub fn as_float(&self) -> Option<f64> {
        match self.kind() {
            PrimExprKind::FloatImm { value, .. } => Some(*value),
            _ => None,
        }
    }
    /// The variable, if this is a bare variable.
    pub fn as_var(&self) -> Option<&TirVar> {
        match self.kind() {
            PrimExprKind::Var(v) => Some(v),
            _ => None,
        }
    }
    /// The type of this expression.
    pub fn dtype(&self) -> DataType {
        match self.kind() {
            PrimExprKind::IntImm { dtype, .. } | PrimExprKind::FloatImm { dtype, .. } => *dtype,
            PrimExprKind::StringImm(_) => DataType::HANDLE,
            PrimExprKind::Var(v) => v.dtype(),
            PrimExprKind::Cast { dtype, .. } => *dtype,
            PrimExprKind::Binary { op, a, .. } => {
                if op.is_comparison() || op.is_logical() {
                    DataType::BOOL.with_lanes(a.dtype().lanes.max(1))
                } else {
                    a.dtype()
                }
            }
            PrimExprKind::Not(a) => a.dtype(),
            PrimExprKind::Select { t, .. } => t.dtype(),
            PrimExprKind::Call { dtype, .. } => *dtype,
            PrimExprKind::BufferLoad { buffer, indices } => {
                let lanes = indices.last().map(|i| i.dtype().lanes).unwrap_or(1).max(1);
                buffer.dtype().with_lanes(buffer.dtype().lanes * lanes)
            }
            PrimExprKind::Let { body, .. } => body.dtype(),
            PrimExprKind::Ramp { base, lanes, .. } => base.dtype().with_lanes(*lanes),
            PrimExprKind::Broadcast { value, lanes } => value.dtype().with_lanes(*lanes),
        }
    }
    /// Whether two handles point to the same node (cheap identity test).
    pub fn same_as(&self, other: &PrimExpr) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl From<&TirVar> for PrimExpr {
    fn from(v: &TirVar) -> PrimExpr {
        v.to_expr()
    }
}
impl From<i64> for PrimExpr {
    fn from(v: i64) -> PrimExpr {
        PrimExpr::int(v)
    }
}

macro_rules! bin_ops {
    ($($trait:ident $method:ident $op:ident),*) => {$(
        impl std::ops::$trait for PrimExpr {
            type Output = PrimExpr;
            fn $method(self, rhs: PrimExpr) -> PrimExpr {
                PrimExpr::binary(BinOp::$op, self, rhs)
            }
        }
        impl std::ops::$trait<&PrimExpr> for &PrimExpr {
            type Output = PrimExpr;
            fn $method(self, rhs: &PrimExpr) -> PrimExpr {
                PrimExpr::binary(BinOp::$op, self.clone(), rhs.clone())
            }
        }
    )*};
}
bin_ops!(Add add Add, Sub sub Sub, Mul mul Mul);

impl fmt::Debug for PrimExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            PrimExprKind::IntImm { value, dtype } if *dtype == DataType::INT64 => write!(f, "{value}"),
            PrimExprKind::IntImm { value, dtype } => write!(f, "{dtype}({value})"),
            PrimExprKind::FloatImm { value, dtype } => write!(f, "{dtype}({value})"),
            PrimExprKind::Var(v) => write!(f, "{v:?}"),
            PrimExprKind::Binary { op, a, b } => write!(f, "{op:?}({a:?}, {b:?})"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// Structural equality of expressions: variables and buffers by identity, floats
/// by their bits (`0.0` and `-0.0` differ), every node kind compared.
pub fn expr_equal(a: &PrimExpr, b: &PrimExpr) -> bool {
    use PrimExprKind as K;
    if a.same_as(b) {
        return true;
    }
    match (a.kind(), b.kind()) {
        (K::IntImm { value: x, dtype: d }, K::IntImm { value: y, dtype: e }) => x == y && d == e,
        (K::FloatImm { value: x, dtype: d }, K::FloatImm { value: y, dtype: e }) => {
            x.to_bits() == y.to_bits() && d == e
        }
        (K::StringImm(x), K::StringImm(y)) => x == y,
        (K::Var(x), K::Var(y)) => x == y,
        (K::Cast { dtype: d, value: x }, K::Cast { dtype: e, value: y }) => d == e && expr_equal(x, y),
        (K::Binary { op: o, a: x1, b: x2 }, K::Binary { op: p, a: y1, b: y2 }) => {
            o == p && expr_equal(x1, y1) && expr_equal(x2, y2)
        }
        (K::Not(x), K::Not(y)) => expr_equal(x, y),
        (K::Select { cond: c1, t: t1, f: f1 }, K::Select { cond: c2, t: t2, f: f2 }) => {
            expr_equal(c1, c2) && expr_equal(t1, t2) && expr_equal(f1, f2)
        }
        (
            K::Call {
                op: o,
                dtype: d,
                args: x,
            },
            K::Call {
                op: p,
                dtype: e,
                args: y,
            },
        ) => o == p && d == e && x.len() == y.len() && x.iter().zip(y).all(|(a, b)| expr_equal(a, b)),
        (
            K::BufferLoad {
                buffer: b1,
                indices: i1,
            },
            K::BufferLoad {
                buffer: b2,
                indices: i2,
            },
        ) => b1 == b2 && i1.len() == i2.len() && i1.iter().zip(i2).all(|(a, b)| expr_equal(a, b)),
        (
            K::Ramp {
                base: b1,
                stride: s1,
                lanes: l1,
            },
            K::Ramp {
                base: b2,
                stride: s2,
                lanes: l2,
            },
        ) => l1 == l2 && expr_equal(b1, b2) && expr_equal(s1, s2),
        (K::Broadcast { value: x, lanes: l }, K::Broadcast { value: y, lanes: m }) => l == m && expr_equal(x, y),
        _ => false,
    }
}
