//! The TIR intrinsics (`T.exp`, `T.if_then_else`, `T.tvm_storage_sync`, ...):
//! one variant each, with the name written after `T.` in the text format and
//! stored in [`PrimExprKind::Call`](super::PrimExprKind::Call).

use std::fmt;

use super::{BinOp, GpuOp};

/// What a TIR call (`PrimExprKind::Call`) calls: an intrinsic of TVM's table, a GPU
/// schedule's own operation, or an operation known only by its name (an external or
/// packed function).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CallOp {
    /// A TIR intrinsic.
    Intrinsic(Intrinsic),
    /// A GPU-specific operation of a scheduled kernel (vector loads, subgroup operations).
    Gpu(GpuOp),
    /// Anything else, by name.
    Extern(String),
}

impl CallOp {
    /// The intrinsic or GPU operation called `name`, else an external call of that name.
    pub fn from_name(name: &str) -> CallOp {
        CallOp::known(name).unwrap_or_else(|| CallOp::Extern(name.to_string()))
    }

    /// The intrinsic or GPU operation called `name`.
    fn known(name: &str) -> Option<CallOp> {
        Intrinsic::from_name(name)
            .map(CallOp::Intrinsic)
            .or_else(|| GpuOp::from_name(name).map(CallOp::Gpu))
    }

    /// The name written in the text format (after `T.` for an intrinsic).
    pub fn name(&self) -> &str {
        match self {
            CallOp::Intrinsic(i) => i.name(),
            CallOp::Gpu(g) => g.name(),
            CallOp::Extern(n) => n,
        }
    }

    /// The intrinsic, when this calls one.
    pub fn intrinsic(&self) -> Option<Intrinsic> {
        match self {
            CallOp::Intrinsic(i) => Some(*i),
            _ => None,
        }
    }

    /// The GPU operation, when this calls one.
    pub fn gpu(&self) -> Option<GpuOp> {
        match self {
            CallOp::Gpu(g) => Some(*g),
            _ => None,
        }
    }
}

impl From<GpuOp> for CallOp {
    fn from(g: GpuOp) -> CallOp {
        CallOp::Gpu(g)
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
        CallOp::known(&name).unwrap_or(CallOp::Extern(name))
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

/// What a unary float intrinsic means, declared with its variant in the `intrinsics!` table
/// and read by the host executors and the WGSL emitter through
/// [`Intrinsic::float_math`].
#[derive(Clone, Copy, Debug)]
pub struct FloatMath {
    /// The value in double precision: the host's reference, and its `float64` code.
    pub f64: fn(f64) -> f64,
    /// The value in single precision, where the host computes `float32` (and
    /// `float16`) in `f32` rather than rounding the `f64` result.
    pub f32: Option<fn(f32) -> f32>,
    /// The WGSL builtin of the same meaning; `None` where the emitter spells it
    /// otherwise (a guarded formula or a helper of `shaders/helpers`).
    pub wgsl: Option<&'static str>,
}

/// A [`FloatMath`] row: the `f64` function, the `f32` one and the WGSL builtin.
const fn math(f64: fn(f64) -> f64, f32: Option<fn(f32) -> f32>, wgsl: Option<&'static str>) -> FloatMath {
    FloatMath { f64, f32, wgsl }
}

/// Declares [`Intrinsic`] with each variant's TIR name and, for unary float math,
/// its meaning (`=> math(f64, f32, wgsl)`): one row is the whole definition of an
/// intrinsic that a Rust function and a WGSL builtin compute.
macro_rules! intrinsics {
    (@math) => { None };
    (@math $m:expr) => { Some($m) };
    ($($variant:ident = $name:literal $(=> $math:expr)?,)*) => {
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

            /// What a unary float intrinsic computes, where its row declares it.
            pub fn float_math(self) -> Option<FloatMath> {
                match self {
                    $(Intrinsic::$variant => intrinsics!(@math $($math)?),)*
                }
            }
        }
    };
}

intrinsics! {
    // Unary math, computed on the operand's type. `T.tanh`, `T.sigmoid` and `T.erf`
    // have no Rust or WGSL function of their own: the JIT's `math` module and WGSL
    // helpers define them.
    Exp = "exp" => math(f64::exp, Some(f32::exp), None),
    Exp2 = "exp2" => math(f64::exp2, Some(f32::exp2), Some("exp2")),
    Exp10 = "exp10" => math(|x| 10f64.powf(x), Some(|x| 10f32.powf(x)), None),
    Expm1 = "expm1" => math(f64::exp_m1, Some(f32::exp_m1), None),
    Log = "log" => math(f64::ln, Some(f32::ln), Some("log")),
    Log2 = "log2" => math(f64::log2, Some(f32::log2), Some("log2")),
    Log10 = "log10" => math(f64::log10, Some(f32::log10), None),
    Log1p = "log1p" => math(f64::ln_1p, Some(f32::ln_1p), None),
    Sqrt = "sqrt" => math(f64::sqrt, None, Some("sqrt")),
    Rsqrt = "rsqrt" => math(|x| 1.0 / x.sqrt(), None, Some("inverseSqrt")),
    Tanh = "tanh",
    Sigmoid = "sigmoid",
    Fabs = "fabs" => math(f64::abs, None, None),
    Abs = "abs" => math(f64::abs, None, None),
    Floor = "floor" => math(f64::floor, None, Some("floor")),
    Ceil = "ceil" => math(f64::ceil, None, Some("ceil")),
    // Both round half to even: TVM 0.27 lowers both to `llvm.nearbyint` on the host,
    // and WGSL's `round` rounds half to even.
    Round = "round" => math(f64::round_ties_even, Some(f32::round_ties_even), Some("round")),
    Nearbyint = "nearbyint" => math(f64::round_ties_even, None, Some("round")),
    Trunc = "trunc" => math(f64::trunc, None, Some("trunc")),
    Erf = "erf",
    Sin = "sin" => math(f64::sin, Some(f32::sin), Some("sin")),
    Cos = "cos" => math(f64::cos, Some(f32::cos), Some("cos")),
    Tan = "tan" => math(f64::tan, Some(f32::tan), Some("tan")),
    Sinh = "sinh" => math(f64::sinh, Some(f32::sinh), Some("sinh")),
    Cosh = "cosh" => math(f64::cosh, Some(f32::cosh), Some("cosh")),
    Asin = "asin" => math(f64::asin, Some(f32::asin), None),
    Acos = "acos" => math(f64::acos, Some(f32::acos), None),
    Atan = "atan" => math(f64::atan, Some(f32::atan), None),
    Asinh = "asinh" => math(f64::asinh, None, None),
    Acosh = "acosh" => math(f64::acosh, None, None),
    Atanh = "atanh" => math(f64::atanh, None, Some("atanh")),
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
