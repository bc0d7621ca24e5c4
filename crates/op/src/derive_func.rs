//! The built-in `derive_func`s of `FuncStructInfo::opaque_func` (`R.Callable`
//! without parameters) and `call_pure_packed`'s StructInfo arguments.

use relax_ir::{Call, StructInfo};

/// Name of the built-in derivation function of `ExternFunc`s (`default_derive`):
/// the result is given by the call's `sinfo_args`.
pub const DEFAULT_DERIVE: &str = "default_derive";
/// Name of the weakest derivation function (`empty_derive`): always `Object`.
pub const EMPTY_DERIVE: &str = "empty_derive";

/// Apply a built-in `derive_func` to a call.
pub fn apply_derive_func(name: &str, call: &Call) -> StructInfo {
    match name {
        EMPTY_DERIVE => StructInfo::Object,
        _ => match call.sinfo_args.len() {
            0 => StructInfo::Object,
            1 => call.sinfo_args[0].clone(),
            _ => StructInfo::Tuple(call.sinfo_args.clone()),
        },
    }
}
