//! The operator registry: one entry per Relax operator holding its purity, its
//! StructInfo inference (`FInferStructInfo`) and (later) its legalization.
//!
//! Operators are grouped in one module per family (`unary`, `binary`, ...); each
//! family lists its [`OpDef`]s in a static table, and [`OPERATORS`] collects
//! them, each under an interned [`OpId`]. Newer operators live in one file
//! each under [`defs`] (see `docs/operators.md`).

use std::collections::HashMap;
use std::sync::LazyLock;

use relax_ir::arith::Analyzer;
use relax_ir::{Call, IRModule, StructInfo};

pub use error::{InferError, InferErrorKind};

pub mod attrs;
mod common;
pub mod defs;
pub mod derive_func;
pub mod error;

pub mod binary;
pub mod builtin;
pub mod create;
pub mod datatype;
pub mod index;
pub mod legalize;
pub mod linear_algebra;
pub mod manipulate;
pub mod nn;
pub mod search;
pub mod sorting;
pub mod statistical;
pub mod ternary;
pub mod unary;

/// What inference may consult besides the call itself.
pub struct InferCtx<'a> {
    /// The module being checked (to resolve `GlobalVar`s, VDevices), if any.
    pub module: Option<&'a IRModule>,
    /// The arithmetic analyzer (with the facts known at the call site).
    pub analyzer: &'a Analyzer,
}

/// `FInferStructInfo`: given the call and the StructInfo of its (normalized)
/// arguments, the StructInfo of the result, or why it has none.
pub type InferFn = fn(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Result<StructInfo, InferError>;

/// One operator's definition: its name, purity, StructInfo inference and
/// (when it has one of its own) its legalization. Attributes are typed per
/// operator ([`attrs`]); their defaults are the parser's schema
/// (`relax_ir::text::ops`), declared once.
pub struct OpDef {
    /// Full name, e.g. `"relax.add"`.
    pub name: &'static str,
    /// Whether a call of this operator is pure.
    pub pure: bool,
    /// StructInfo inference.
    pub infer: InferFn,
    /// Its legalization, if it has one.
    pub legalize: Option<legalize::LegalizeFn>,
}

/// An operator, interned: an index into the registry. Obtained once from the
/// name with [`OpId::of`]; everything else is read through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpId(u32);

/// A registered operator: its definition with its legalization and
/// compile-time folding resolved.
pub struct Operator {
    /// The interned id.
    pub id: OpId,
    /// The definition.
    pub def: &'static OpDef,
    /// The family (`"unary"`, `"nn"`, ...).
    pub family: &'static str,
    /// How calls are lowered to `call_tir`, if they are.
    pub legalize: Option<legalize::Legalizer>,
    /// A folding tried before the legalization (`arange` of constants, ...).
    pub fold: Option<legalize::FoldFn>,
}

impl OpId {
    /// The id of the operator named `name` (`"relax.add"`).
    pub fn of(name: &str) -> Option<OpId> {
        IDS.get(name).copied()
    }
    /// The registered operator.
    pub fn get(self) -> &'static Operator {
        &OPERATORS[self.0 as usize]
    }
    /// Its full name.
    pub fn name(self) -> &'static str {
        self.get().def.name
    }
}

/// Every registered operator, in family order; `OPERATORS[id]` is `id`'s entry.
pub static OPERATORS: LazyLock<Vec<Operator>> = LazyLock::new(|| {
    let mut out: Vec<Operator> = Vec::new();
    for (family, defs) in FAMILIES {
        for def in defs.iter() {
            out.push(Operator {
                id: OpId(out.len() as u32),
                def,
                family,
                legalize: def.legalize,
                fold: legalize::lookup_fold(def.name),
            });
        }
    }
    out
});

static IDS: LazyLock<HashMap<&'static str, OpId>> =
    LazyLock::new(|| OPERATORS.iter().map(|o| (o.def.name, o.id)).collect());

/// Look up an operator by its full name (`"relax.add"`).
pub fn lookup(name: &str) -> Option<&'static OpDef> {
    OpId::of(name).map(|id| id.get().def)
}

/// The operator families: a name and the family's table.
pub static FAMILIES: &[(&str, &[OpDef])] = &[
    ("unary", unary::OPS),
    ("unary", unary::FLOAT_MATH),
    ("binary", binary::OPS),
    ("ternary", ternary::OPS),
    ("datatype", datatype::OPS),
    ("linear_algebra", linear_algebra::OPS),
    ("statistical", statistical::OPS),
    ("search", search::OPS),
    ("sorting", sorting::OPS),
    ("manipulate", manipulate::OPS),
    ("index", index::OPS),
    ("create", create::OPS),
    ("nn", nn::OPS),
    ("builtin", builtin::OPS),
    ("scatter", &[defs::scatter_elements::DEF, defs::scatter_nd::DEF]),
    ("index", &[defs::dynamic_strided_slice::DEF]),
    ("manipulate", &[defs::index_tensor::DEF, defs::slice_scatter::DEF]),
    ("nn", &[defs::attention::DEF]),
    ("qdq", &[defs::qdq::QUANTIZE, defs::qdq::DEQUANTIZE]),
    ("image", &[defs::grid_sample::DEF, defs::resize2d::DEF]),
    ("vision", &[defs::roi_align::DEF]),
];

/// Every registered operator's definition, family by family.
pub static REGISTRY: LazyLock<Vec<&'static OpDef>> = LazyLock::new(|| OPERATORS.iter().map(|o| o.def).collect());

/// The family (`"unary"`, `"nn"`, ...) an operator belongs to.
pub fn family_of(name: &str) -> Option<&'static str> {
    OpId::of(name).map(|id| id.get().family)
}

/// Shorthand to declare a pure operator.
macro_rules! pure_op {
    ($name:literal, $f:expr) => {
        $crate::OpDef {
            name: $name,
            pure: true,
            infer: $f,
            legalize: None,
        }
    };
    ($name:expr, $f:expr, $legalize:expr) => {
        $crate::OpDef {
            name: $name,
            pure: true,
            infer: $f,
            legalize: Some($legalize),
        }
    };
}
pub(crate) use pure_op;

/// `relax.<name>` with inference `infer` and the typed legalization of the
/// same name in `legalize::<family>::typed` (the element-wise families, the
/// reductions).
macro_rules! ew {
    ($family:ident, $name:ident, $infer:ident) => {
        $crate::pure_op!(
            concat!("relax.", stringify!($name)),
            $infer,
            $crate::legalize::$family::typed::$name
        )
    };
}
pub(crate) use ew;

/// The [`ew`] definitions of a family's element-wise operators as an array,
/// grouped by their inference function: `family; infer: name, name; ...`
/// (`name = "relax.op"` when the operator's name is not the builder's).
macro_rules! ew_ops {
    ($family:ident; $($infer:ident: $($name:ident $(= $op:literal)?),+;)+) => {
        [$($($crate::ew_ops!(@one $family, $name, $infer $(, $op)?)),+),+]
    };
    (@one $family:ident, $name:ident, $infer:ident) => {
        $crate::ew!($family, $name, $infer)
    };
    (@one $family:ident, $name:ident, $infer:ident, $op:literal) => {
        $crate::pure_op!($op, $infer, $crate::legalize::$family::typed::$name)
    };
}
pub(crate) use ew_ops;
