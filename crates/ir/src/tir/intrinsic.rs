//! The TIR intrinsics (`T.exp`, `T.if_then_else`, `T.tvm_storage_sync`, ...):
//! one variant each, with the name written after `T.` in the text format and
//! stored in [`PrimExprKind::Call`](super::PrimExprKind::Call).

use std::fmt;

use super::BinOp;

/// What a TIR call (`PrimExprKind::Call`) calls: an intrinsic of TVM's table, or an
/// operation known only by its name (an external or packed function, or a back end's
/// own operation such as the GPU schedules' vector loads).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CallOp {
    /// A TIR intrinsic.
    Intrinsic(Intrinsic),
    /// Anything else, by name.
    Extern(String),
}

impl CallOp {
    /// The intrinsic called `name`, else an external call of that name.
    pub fn from_name(name: &str) -> CallOp {
        Intrinsic::from_name(name).map_or_else(|| CallOp::Extern(name.to_string()), CallOp::Intrinsic)
    }

    /// The name written in the text format (after `T.` for an intrinsic).
    pub fn name(&self) -> &str {
        match self {
            CallOp::Intrinsic(i) => i.name(),
            CallOp::Extern(n) => n,
        }
    }

    /// The intrinsic, when this calls one.
    pub fn intrinsic(&self) -> Option<Intrinsic> {
        match self {
            CallOp::Intrinsic(i) => Some(*i),
            CallOp::Extern(_) => None,
        }
    }
}

impl From<Intrinsic> for CallOp {
    fn from(i: Intrinsic) -> CallOp {
        CallOp::Intrinsic(i)
    }
}

impl From<&str> for CallOp {
    fn from(name: &str) -> CallOp {
        CallOp::from_name(name)
    }
}

impl From<String> for CallOp {
    fn from(name: String) -> CallOp {
        match Intrinsic::from_name(&name) {
            Some(i) => CallOp::Intrinsic(i),
            None => CallOp::Extern(name),
        }
    }
}

impl From<&String> for CallOp {
    fn from(name: &String) -> CallOp {
        CallOp::from_name(name)
    }
}

impl fmt::Display for CallOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Declares [`Intrinsic`] with each variant's TIR name.
macro_rules! intrinsics {
    ($($variant:ident = $name:literal,)*) => {
        /// A TIR intrinsic, named as in TVM (`T.<name>`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Intrinsic {
            $(
                #[doc = concat!("`T.", $name, "`.")]
                $variant,
            )*
        }

        impl Intrinsic {
            /// Every intrinsic, in declaration order.
            pub const ALL: &'static [Intrinsic] = &[$(Intrinsic::$variant),*];

            /// The name written after `T.` (`"exp"`, `"if_then_else"`).
            pub fn name(self) -> &'static str {
                match self {
                    $(Intrinsic::$variant => $name,)*
                }
            }

            /// The intrinsic called `name`, if any.
            pub fn from_name(name: &str) -> Option<Intrinsic> {
                match name {
                    $($name => Some(Intrinsic::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

intrinsics! {
    // Unary math, computed on the operand's type.
    Exp = "exp",
    Exp2 = "exp2",
    Exp10 = "exp10",
    Expm1 = "expm1",
    Log = "log",
    Log2 = "log2",
    Log10 = "log10",
    Log1p = "log1p",
    Sqrt = "sqrt",
    Rsqrt = "rsqrt",
    Tanh = "tanh",
    Sigmoid = "sigmoid",
    Fabs = "fabs",
    Abs = "abs",
    Floor = "floor",
    Ceil = "ceil",
    Round = "round",
    Nearbyint = "nearbyint",
    Trunc = "trunc",
    Erf = "erf",
    Sin = "sin",
    Cos = "cos",
    Tan = "tan",
    Sinh = "sinh",
    Cosh = "cosh",
    Asin = "asin",
    Acos = "acos",
    Atan = "atan",
    Asinh = "asinh",
    Acosh = "acosh",
    Atanh = "atanh",
    Popcount = "popcount",
    Clz = "clz",
    BitwiseNot = "bitwise_not",
    // Binary math.
    Pow = "pow",
    Powf = "powf",
    Atan2 = "atan2",
    Fmod = "fmod",
    Hypot = "hypot",
    Copysign = "copysign",
    Nextafter = "nextafter",
    Ldexp = "ldexp",
    ShiftLeft = "shift_left",
    ShiftRight = "shift_right",
    BitwiseAnd = "bitwise_and",
    BitwiseOr = "bitwise_or",
    BitwiseXor = "bitwise_xor",
    // Integer division as calls.
    Truncdiv = "truncdiv",
    Truncmod = "truncmod",
    Floordiv = "floordiv",
    Floormod = "floormod",
    // Float classification.
    Isnan = "isnan",
    Isinf = "isinf",
    Isfinite = "isfinite",
    // Values and hints.
    IfThenElse = "if_then_else",
    MaxValue = "max_value",
    MinValue = "min_value",
    Infinity = "infinity",
    Reinterpret = "reinterpret",
    Likely = "likely",
    Assume = "assume",
    Ret = "ret",
    TvmThreadInvariant = "tvm_thread_invariant",
    TvmStorageSync = "tvm_storage_sync",
    // Runtime and foreign calls.
    TvmStructGet = "tvm_struct_get",
    TvmStructSet = "tvm_struct_set",
    CallExtern = "call_extern",
    CallPureExtern = "call_pure_extern",
    CallIntrin = "call_intrin",
    CallLlvmIntrin = "call_llvm_intrin",
    CallLlvmPureIntrin = "call_llvm_pure_intrin",
    CallPacked = "call_packed",
    CallCpacked = "call_cpacked",
    TvmStackMakeShape = "tvm_stack_make_shape",
    TvmStackMakeArray = "tvm_stack_make_array",
    TvmStackAlloca = "tvm_stack_alloca",
    AddressOf = "address_of",
}

/// Where an intrinsic's result dtype is written in the text format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtypeAt {
    /// Not written (derived from the arguments).
    None,
    /// As the first argument (`T.call_extern("float32", ...)`).
    First,
    /// As the last argument (`T.tvm_struct_get(h, 0, 5, "uint8")`).
    Last,
}

/// How an intrinsic's result type is derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetType {
    /// The (type-matched) first argument's type.
    Arg0,
    /// `bool`.
    Bool,
    /// `int32`.
    Int32,
    /// `handle`.
    Handle,
    /// The written dtype.
    Given,
}

/// The signature of a generic `T.<intrinsic>(...)` call in the text format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signature {
    /// Where the result dtype is written.
    pub dtype_at: DtypeAt,
    /// How the result type is derived.
    pub ret: RetType,
    /// The number of arguments, when fixed.
    pub arity: Option<usize>,
}

impl Intrinsic {
    /// The signature of the generic call form, or `None` for intrinsics the text
    /// format writes otherwise (`T.if_then_else`, `T.max_value(dtype)`,
    /// `T.truncdiv` as an operator) or does not accept.
    pub fn signature(self) -> Option<Signature> {
        use Intrinsic::*;
        let s = |dtype_at, ret, arity| Some(Signature { dtype_at, ret, arity });
        match self {
            Exp | Exp2 | Exp10 | Expm1 | Log | Log2 | Log10 | Log1p | Sqrt | Rsqrt | Tanh | Sigmoid | Fabs | Floor
            | Ceil | Round | Nearbyint | Trunc | Erf | Sin | Cos | Tan | Sinh | Cosh | Asin | Acos | Atan | Asinh
            | Acosh | Atanh | Popcount | Clz | BitwiseNot => s(DtypeAt::None, RetType::Arg0, Some(1)),
            Pow | Atan2 | Fmod | Hypot | Copysign | Nextafter | Ldexp | ShiftLeft | ShiftRight | BitwiseAnd
            | BitwiseOr | BitwiseXor => s(DtypeAt::None, RetType::Arg0, Some(2)),
            Isnan | Isinf | Isfinite => s(DtypeAt::None, RetType::Bool, Some(1)),
            Likely | Ret => s(DtypeAt::None, RetType::Arg0, Some(1)),
            TvmStructGet => s(DtypeAt::Last, RetType::Given, Some(3)),
            CallExtern | CallPureExtern | CallIntrin | CallLlvmIntrin | CallLlvmPureIntrin | Reinterpret => {
                s(DtypeAt::First, RetType::Given, None)
            }
            CallPacked | CallCpacked | TvmStructSet => s(DtypeAt::None, RetType::Int32, None),
            TvmStackMakeShape | TvmStackMakeArray | TvmStackAlloca | AddressOf => {
                s(DtypeAt::None, RetType::Handle, None)
            }
            Abs | Powf | Truncdiv | Truncmod | Floordiv | Floormod | IfThenElse | MaxValue | MinValue | Infinity
            | Assume | TvmThreadInvariant | TvmStorageSync => None,
        }
    }
}

impl Intrinsic {
    /// The binary operation a division intrinsic computes (`T.truncdiv` is
    /// [`BinOp::Div`], `T.floormod` is [`BinOp::FloorMod`], ...).
    pub fn division_op(self) -> Option<BinOp> {
        Some(match self {
            Intrinsic::Truncdiv => BinOp::Div,
            Intrinsic::Truncmod => BinOp::Mod,
            Intrinsic::Floordiv => BinOp::FloorDiv,
            Intrinsic::Floormod => BinOp::FloorMod,
            _ => return None,
        })
    }
}

impl fmt::Display for Intrinsic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Intrinsic;

    #[test]
    fn names_and_variants_map_both_ways() {
        for &i in Intrinsic::ALL {
            assert_eq!(Intrinsic::from_name(i.name()), Some(i), "{i}");
        }
        let mut names: Vec<&str> = Intrinsic::ALL.iter().map(|i| i.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Intrinsic::ALL.len(), "a name is declared twice");
        assert_eq!(Intrinsic::from_name("if_then_else"), Some(Intrinsic::IfThenElse));
        assert_eq!(Intrinsic::from_name("T.exp"), None);
        assert_eq!(Intrinsic::TvmStorageSync.to_string(), "tvm_storage_sync");
    }
}
