use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use super::StructInfo;
use crate::attrs::Attrs;
use crate::dtype::DataType;
use crate::id::fresh_id;
use crate::span::Span;
use crate::tir::PrimExpr;

/// A Relax variable (`Var` or `DataflowVar`). Identity is by object.
#[derive(Clone)]
pub struct Var(pub Arc<VarNode>);

/// The data of a [`Var`].
#[derive(Debug)]
pub struct VarNode {
    /// Unique identity.
    pub id: u64,
    /// Name hint.
    pub name: String,
    /// The StructInfo annotation (after normalization: the derived StructInfo).
    pub struct_info: Option<StructInfo>,
    /// `DataflowVar` when true.
    pub is_dataflow: bool,
    /// Where it is defined.
    pub span: Span,
}

impl Var {
    /// A fresh `Var`.
    pub fn new(name: impl Into<String>, struct_info: Option<StructInfo>) -> Var {
        Var::with(name, struct_info, false, Span::NONE)
    }
    /// A fresh `DataflowVar`.
    pub fn new_dataflow(name: impl Into<String>, struct_info: Option<StructInfo>) -> Var {
        Var::with(name, struct_info, true, Span::NONE)
    }
    /// A fresh variable with every field given.
    pub fn with(name: impl Into<String>, struct_info: Option<StructInfo>, is_dataflow: bool, span: Span) -> Var {
        Var(Arc::new(VarNode {
            id: fresh_id(),
            name: name.into(),
            struct_info,
            is_dataflow,
            span,
        }))
    }
    /// The same variable identity is *not* kept: a fresh variable with the same
    /// name and kind but another StructInfo.
    pub fn renew_with_struct_info(&self, struct_info: Option<StructInfo>) -> Var {
        Var::with(self.0.name.clone(), struct_info, self.0.is_dataflow, self.0.span)
    }
    /// Name hint.
    pub fn name(&self) -> &str {
        &self.0.name
    }
    /// The StructInfo annotation.
    pub fn struct_info(&self) -> Option<&StructInfo> {
        self.0.struct_info.as_ref()
    }
    /// Whether this is a `DataflowVar`.
    pub fn is_dataflow(&self) -> bool {
        self.0.is_dataflow
    }
    /// Unique identity.
    pub fn id(&self) -> u64 {
        self.0.id
    }
    /// Definition site.
    pub fn span(&self) -> Span {
        self.0.span
    }
    /// This variable as an expression.
    pub fn to_expr(&self) -> Expr {
        Expr::new(ExprKind::Var(self.clone()))
    }
}

impl fmt::Debug for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}#{}",
            if self.0.is_dataflow { "%" } else { "" },
            self.0.name,
            self.0.id
        )
    }
}

/// A module-level name; equal when the names are equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalVar(pub Arc<str>);

impl GlobalVar {
    /// A global variable named `name`.
    pub fn new(name: &str) -> GlobalVar {
        GlobalVar(Arc::from(name))
    }
    /// The name.
    pub fn name(&self) -> &str {
        &self.0
    }
}

/// Dense tensor data of a `Constant`: little-endian element bytes, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct NDArray {
    /// Element type.
    pub dtype: DataType,
    /// Shape.
    pub shape: Vec<i64>,
    /// `product(shape) * dtype.bytes()` bytes (bool: one byte per element).
    pub data: Vec<u8>,
}

impl NDArray {
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().map(|&d| d.max(0) as usize).product()
    }
    /// A scalar (0-d) array from one element's bytes.
    pub fn scalar(dtype: DataType, bytes: Vec<u8>) -> NDArray {
        NDArray {
            dtype,
            shape: Vec::new(),
            data: bytes,
        }
    }
}

/// A Relax expression. Cheap to clone (reference counted).
#[derive(Clone)]
pub struct Expr(pub Arc<ExprNode>);

/// An expression node with its source location.
#[derive(Debug)]
pub struct ExprNode {
    /// The node.
    pub kind: ExprKind,
    /// Source location, if parsed from text.
    pub span: Span,
}

/// A call: `op(args...)` with attributes and StructInfo arguments.
#[derive(Clone, Debug)]
pub struct Call {
    /// The callee: an `Op`, an `ExternFunc`, a `GlobalVar` or any expression.
    pub op: Expr,
    /// Arguments.
    pub args: Vec<Expr>,
    /// Operator attributes (keyword arguments that are not expressions), in the
    /// operator's parameter order.
    pub attrs: Attrs,
    /// StructInfo arguments (`out_ty=` of `call_tir`, `R.call_packed(..., sinfo_args=...)`).
    pub sinfo_args: Vec<StructInfo>,
}

/// A Relax function.
#[derive(Clone, Debug)]
pub struct Function {
    /// Parameters.
    pub params: Vec<Var>,
    /// Body (a `SeqExpr` in normal form).
    pub body: Expr,
    /// Return StructInfo annotation.
    pub ret_struct_info: Option<StructInfo>,
    /// Purity (`@R.function(pure=False)` makes it false).
    pub is_pure: bool,
    /// Attributes (`R.func_attr`), including `global_symbol` for public functions.
    pub attrs: Attrs,
    /// `@R.function(private=True)`.
    pub private: bool,
    /// Source location.
    pub span: Span,
}

/// A sequence of binding blocks and a result.
#[derive(Clone, Debug)]
pub struct SeqExpr {
    /// Binding blocks, in order.
    pub blocks: Vec<BindingBlock>,
    /// The result.
    pub body: Expr,
}

/// A `BindingBlock` or (when `is_dataflow`) a `DataflowBlock`.
#[derive(Clone, Debug)]
pub struct BindingBlock {
    /// Bindings in order.
    pub bindings: Vec<Binding>,
    /// Whether this is a `DataflowBlock`.
    pub is_dataflow: bool,
    /// Source location (of `with R.dataflow()`).
    pub span: Span,
}

/// A binding.
#[derive(Clone, Debug)]
pub enum Binding {
    /// `var = value`.
    VarBinding {
        /// The bound variable.
        var: Var,
        /// The value.
        value: Expr,
        /// Source location.
        span: Span,
    },
    /// `var = R.match_cast(value, struct_info)`.
    MatchCast {
        /// The bound variable.
        var: Var,
        /// The value checked.
        value: Expr,
        /// The StructInfo it must match.
        struct_info: StructInfo,
        /// Source location.
        span: Span,
    },
}

impl Binding {
    /// The bound variable.
    pub fn var(&self) -> &Var {
        match self {
            Binding::VarBinding { var, .. } | Binding::MatchCast { var, .. } => var,
        }
    }
    /// The right-hand side.
    pub fn value(&self) -> &Expr {
        match self {
            Binding::VarBinding { value, .. } | Binding::MatchCast { value, .. } => value,
        }
    }
    /// Source location.
    pub fn span(&self) -> Span {
        match self {
            Binding::VarBinding { span, .. } | Binding::MatchCast { span, .. } => *span,
        }
    }
    /// A binding of the same kind and span binding `var` to `value`; a
    /// `match_cast` checks what `struct_info` makes of its StructInfo.
    pub fn rebuild(&self, var: Var, value: Expr, struct_info: impl FnOnce(&StructInfo) -> StructInfo) -> Binding {
        match self {
            Binding::VarBinding { span, .. } => Binding::VarBinding {
                var,
                value,
                span: *span,
            },
            Binding::MatchCast {
                struct_info: si, span, ..
            } => Binding::MatchCast {
                var,
                value,
                struct_info: struct_info(si),
                span: *span,
            },
        }
    }
}

/// The node kinds of [`Expr`].
#[derive(Debug)]
pub enum ExprKind {
    /// A tensor constant; `struct_info` is an optional annotation (`R.const` infers it).
    Constant {
        /// The data.
        data: Arc<NDArray>,
    },
    /// A `Var` or `DataflowVar`.
    Var(Var),
    /// A reference to a module function.
    GlobalVar(GlobalVar),
    /// A tuple.
    Tuple(Vec<Expr>),
    /// A `SeqExpr`.
    Seq(SeqExpr),
    /// A boxed scalar.
    PrimValue(PrimExpr),
    /// A string.
    StringImm(String),
    /// A data type value.
    DataTypeImm(DataType),
    /// A function (local or global).
    Function(Function),
    /// A conditional.
    If {
        /// Condition (a bool scalar).
        cond: Expr,
        /// Then branch.
        then_branch: Expr,
        /// Else branch.
        else_branch: Expr,
    },
    /// A packed function named by a global symbol.
    ExternFunc {
        /// The symbol.
        global_symbol: String,
    },
    /// A call.
    Call(Call),
    /// A shape value.
    ShapeExpr(Vec<PrimExpr>),
    /// `tuple[index]`.
    TupleGetItem {
        /// The tuple.
        tuple: Expr,
        /// The index.
        index: usize,
    },
    /// A built-in operator by its full name (`"relax.add"`, `"relax.call_tir"`).
    Op(String),
}

impl Expr {
    /// Call `f` on the Relax expressions nested directly in this one, in order: a
    /// call's operator and arguments, tuple fields, a SeqExpr's binding values and
    /// body, a function's body, a condition and its branches, the tuple of a
    /// `TupleGetItem`. The other nodes (variables, constants, PrimValues, shapes,
    /// operators, ...) hold no Relax expression; StructInfo is not visited.
    pub fn for_each_child<'a>(&'a self, mut f: impl FnMut(&'a Expr)) {
        match self.kind() {
            ExprKind::Tuple(fields) => fields.iter().for_each(&mut f),
            ExprKind::Seq(seq) => {
                seq.blocks.iter().flat_map(|b| &b.bindings).for_each(|b| f(b.value()));
                f(&seq.body);
            }
            ExprKind::Function(func) => f(&func.body),
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => [cond, then_branch, else_branch].into_iter().for_each(f),
            ExprKind::Call(call) => {
                f(&call.op);
                call.args.iter().for_each(f);
            }
            ExprKind::TupleGetItem { tuple, .. } => f(tuple),
            _ => {}
        }
    }
    /// Wrap a node with no location.
    pub fn new(kind: ExprKind) -> Expr {
        Expr(Arc::new(ExprNode { kind, span: Span::NONE }))
    }
    /// Wrap a node with a location.
    pub fn with_span(kind: ExprKind, span: Span) -> Expr {
        Expr(Arc::new(ExprNode { kind, span }))
    }
    /// The node.
    pub fn kind(&self) -> &ExprKind {
        &self.0.kind
    }
    /// Source location.
    pub fn span(&self) -> Span {
        self.0.span
    }
    /// `Op(name)`.
    pub fn op(name: &str) -> Expr {
        Expr::new(ExprKind::Op(name.to_string()))
    }
    /// A call of `op` with `args`.
    pub fn call(op: Expr, args: Vec<Expr>, attrs: Attrs, sinfo_args: Vec<StructInfo>) -> Expr {
        Expr::new(ExprKind::Call(Call {
            op,
            args,
            attrs,
            sinfo_args,
        }))
    }
    /// A tuple.
    pub fn tuple(fields: Vec<Expr>) -> Expr {
        Expr::new(ExprKind::Tuple(fields))
    }
    /// A shape.
    pub fn shape(values: Vec<PrimExpr>) -> Expr {
        Expr::new(ExprKind::ShapeExpr(values))
    }
    /// The variable, if this is a `Var`/`DataflowVar`.
    pub fn as_var(&self) -> Option<&Var> {
        match self.kind() {
            ExprKind::Var(v) => Some(v),
            _ => None,
        }
    }
    /// The call, if this is a `Call`.
    pub fn as_call(&self) -> Option<&Call> {
        match self.kind() {
            ExprKind::Call(c) => Some(c),
            _ => None,
        }
    }
    /// The operator name, if this is an `Op`.
    pub fn as_op(&self) -> Option<&str> {
        match self.kind() {
            ExprKind::Op(name) => Some(name),
            _ => None,
        }
    }
    /// Whether two handles point to the same node.
    pub fn same_as(&self, other: &Expr) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    /// Whether this is a leaf expression of the normal form (variables, constants,
    /// shapes, prim values, strings, dtypes and tuples of leaves).
    pub fn is_leaf(&self) -> bool {
        match self.kind() {
            ExprKind::Var(_)
            | ExprKind::GlobalVar(_)
            | ExprKind::Constant { .. }
            | ExprKind::ShapeExpr(_)
            | ExprKind::PrimValue(_)
            | ExprKind::StringImm(_)
            | ExprKind::DataTypeImm(_)
            | ExprKind::ExternFunc { .. }
            | ExprKind::Op(_) => true,
            ExprKind::Tuple(fields) => fields.iter().all(Expr::is_leaf),
            _ => false,
        }
    }
}

impl fmt::Debug for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.kind.fmt(f)
    }
}
