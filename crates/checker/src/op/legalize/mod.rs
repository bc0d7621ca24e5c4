//! Operator legalizations (TVM's `FLegalize`): how each Relax operator call whose
//! StructInfo is known enough becomes a generated TIR PrimFunc called with
//! `R.call_tir` (or another expression), as in TVM 0.27's `LegalizeOps`.
//!
//! Operators are lowered by one [`LegalizeFn`] each, grouped per family like the
//! inference registry (`unary`, `binary`, ...); a legalization that declines says
//! why ([`Skip`]). The pass that walks a module, asks each call's operator for its
//! legalization and adds the PrimFuncs is `relax_transform::legalize`.

use std::collections::HashSet;

use relax_ir::relax::Call;
use relax_ir::visit::free_tir_vars;
use relax_ir::{DataType, Expr, PrimExpr, PrimFunc, StructInfo, TirVar};

pub mod binary;
pub mod constant;
pub mod conv;
pub mod create;
pub mod extern_kernel;
pub mod index;
pub mod linear_algebra;
pub mod manipulate;
pub mod nn;
pub mod pool;
pub mod search;
pub mod statistical;
pub mod te;
pub mod unary;

/// What a legalization function sees: the call, its arguments' StructInfo and
/// the StructInfo of the result (the bound variable's).
pub struct LegalizeCtx<'a> {
    /// The operator call.
    pub call: &'a Call,
    /// StructInfo of each argument.
    pub args: Vec<StructInfo>,
    /// StructInfo of the result.
    pub out: StructInfo,
}

impl LegalizeCtx<'_> {
    /// Argument `i` (a tensor of known shape and dtype) as an input of `t`.
    pub fn placeholder(&self, t: &mut te::Te, i: usize) -> Option<relax_ir::Buffer> {
        t.placeholder(self.call.args.get(i)?, self.args.get(i)?.as_tensor()?)
    }

    /// The result as a tensor with a known shape: `(shape, dtype)`.
    pub fn out_tensor(&self) -> Option<(Vec<PrimExpr>, DataType)> {
        let t = self.out.as_tensor()?;
        if t.dtype.is_void() {
            return None;
        }
        Some((t.shape_values()?.to_vec(), t.dtype))
    }
}

/// A lowered call: the PrimFunc, its name hint, the Relax arguments passed to it
/// and the output StructInfo.
pub struct Lowered {
    /// Name hint of the PrimFunc (`"add"`, `"tir_exp"`).
    pub name: String,
    /// The PrimFunc.
    pub func: PrimFunc,
    /// Relax arguments (the tensor inputs, in parameter order).
    pub args: Vec<Expr>,
    /// `out_ty`.
    pub out: StructInfo,
    /// Symbolic variables passed as `tir_vars` (output shape variables not
    /// defined by any input).
    pub tir_vars: Vec<PrimExpr>,
}

impl Lowered {
    /// Finish a [`te::Te`] with `n_out` outputs into a lowered call.
    pub fn from_te(name: &str, t: te::Te, n_out: usize, out: StructInfo) -> Lowered {
        let args = t.args.clone();
        let mut func = t.build(n_out);
        // Output shape variables not defined by an input become scalar parameters.
        let mut defined: HashSet<u64> = HashSet::new();
        let n_in = args.len();
        for (_, b) in func.buffer_map.iter().take(n_in) {
            defined.extend(b.shape().iter().flat_map(free_tir_vars).map(|v| v.id()));
        }
        let mut extra: Vec<TirVar> = Vec::new();
        for (_, b) in func.buffer_map.iter().skip(n_in) {
            for v in b.shape().iter().flat_map(free_tir_vars) {
                if !defined.contains(&v.id()) && !extra.contains(&v) {
                    extra.push(v);
                }
            }
        }
        // `call_tir` passes `tir_vars` after the inputs, before the outputs.
        func.params.splice(n_in..n_in, extra.iter().cloned());
        Lowered {
            name: name.to_string(),
            func,
            args,
            out,
            tir_vars: extra.iter().map(|v| v.to_expr()).collect(),
        }
    }
}

/// A PrimFunc builder: lower one call, or `None` when it does not handle the call's
/// shapes, dtypes or attributes. Wrapped into a [`LegalizeFn`] by [`lower_or_skip`]
/// or [`with_known_shapes`].
pub type BuildFn = fn(&LegalizeCtx) -> Option<Lowered>;

/// Why a call was left as it is (shown to the user as a `legalize/skipped` warning).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skip {
    /// What the legalization could not handle.
    pub reason: String,
}

impl Skip {
    /// A skip with `reason`.
    pub fn new(reason: impl Into<String>) -> Skip {
        Skip { reason: reason.into() }
    }
}

/// `Option` to `Result<_, Skip>`.
pub trait OrSkip<T> {
    /// `Some(x)` is `Ok(x)`; `None` is a skip with `reason`.
    fn or_skip(self, reason: &str) -> Result<T, Skip>;
}

impl<T> OrSkip<T> for Option<T> {
    fn or_skip(self, reason: &str) -> Result<T, Skip> {
        self.ok_or_else(|| Skip::new(reason))
    }
}

/// What a legalization produces.
pub enum Legalized {
    /// A PrimFunc called with `R.call_tir`.
    Call(Box<Lowered>),
    /// An expression (bindings it needs were emitted through the [`Emitter`]).
    Expr(Expr),
}

impl Legalized {
    /// A lowered call.
    pub fn call(lowered: Lowered) -> Legalized {
        Legalized::Call(Box::new(lowered))
    }
}

/// `FLegalize`: lower one call, or say why not.
pub type LegalizeFn = fn(&LegalizeCtx, &mut dyn Emitter) -> Result<Legalized, Skip>;

/// An operator's legalization.
pub type Legalizer = LegalizeFn;

/// A legalization by a PrimFunc builder: its PrimFunc, or a skip when the builder
/// declines.
pub fn lower_or_skip(ctx: &LegalizeCtx, f: BuildFn) -> Result<Legalized, Skip> {
    f(ctx)
        .map(Legalized::call)
        .or_skip("the shapes, dtypes or attributes of this call are not supported")
}

/// A legalization whose preconditions are known shapes: the output and every
/// tensor argument must have a known shape and dtype; `f` builds the PrimFunc
/// (reading the call's typed attributes), `None` meaning an unsupported dtype.
pub fn with_known_shapes(ctx: &LegalizeCtx, f: BuildFn) -> Result<Legalized, Skip> {
    ctx.out_tensor().or_skip("the output shape or dtype is not known")?;
    for a in &ctx.args {
        if let StructInfo::Tensor(t) = a {
            if t.dtype.is_void() || t.shape_values().is_none() {
                return Err(Skip::new("an operand's shape or dtype is not known"));
            }
        }
    }
    f(ctx)
        .map(Legalized::call)
        .or_skip("the operand dtypes are not supported")
}

/// Typed legalizations `name(ctx, em)` for operators whose PrimFunc builder
/// `super::name` is a [`BuildFn`] (see [`with_known_shapes`]).
macro_rules! typed_legalizations {
    ($($f:ident),* $(,)?) => {
        use $crate::op::legalize::{with_known_shapes, Emitter, LegalizeCtx, Legalized, Skip};
        $(
            #[doc = concat!("`", stringify!($f), "`.")]
            pub fn $f(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
                with_known_shapes(ctx, super::$f)
            }
        )*
    };
}
pub(crate) use typed_legalizations;

/// Legalizations `name(ctx, em)` by the PrimFunc builders `super::name` (or the
/// builder expression given after `=>`), through [`lower_or_skip`].
macro_rules! lowered_legalizations {
    ($($f:ident $(=> $build:expr)?),* $(,)?) => {
        use $crate::op::legalize::{lower_or_skip, Emitter, LegalizeCtx, Legalized, Skip};
        $(
            #[doc = concat!("`", stringify!($f), "`.")]
            pub fn $f(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
                lower_or_skip(ctx, $crate::op::legalize::lowered_legalizations!(@build $f $(, $build)?))
            }
        )*
    };
    (@build $f:ident) => { super::$f };
    (@build $f:ident, $build:expr) => { $build };
}
pub(crate) use lowered_legalizations;

/// The legalization of operator `name` (`"relax.add"`), if any.
pub fn lookup(name: &str) -> Option<Legalizer> {
    crate::op::OpId::of(name).and_then(|id| id.get().legalize)
}

/// Whether operator `name` (`"relax.add"`) has a legalization.
pub fn has_legalization(name: &str) -> bool {
    lookup(name).is_some()
}

/// A legalization that replaces the call by an expression computed at
/// compile time (TVM folds `arange` of constant bounds and `astype` of a
/// constant into constants), or `None` to lower it with its [`LegalizeFn`].
pub type FoldFn = fn(&LegalizeCtx) -> Option<Expr>;

/// The folding legalizations, tried before the operator's [`LegalizeFn`].
pub static FOLDS: &[(&str, FoldFn)] = &[
    ("relax.arange", create::fold_arange),
    ("relax.astype", unary::fold_astype),
];

/// The folding legalization of operator `name`, if any.
pub fn lookup_fold(name: &str) -> Option<FoldFn> {
    FOLDS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// What a legalization can do besides returning its result (TVM's
/// `BlockBuilder` inside `FLegalize`): add PrimFuncs, emit bindings before the call.
pub trait Emitter {
    /// `R.call_tir` of `lowered`, its PrimFunc added to the module.
    fn call_tir(&mut self, lowered: Lowered) -> Expr;
    /// Bind `value` to a fresh variable (named `name`) emitted before the call.
    fn emit(&mut self, name: &str, value: Expr, sinfo: StructInfo) -> Expr;
    /// `name = R.match_cast(value, sinfo)` emitted before the call.
    fn match_cast(&mut self, name: &str, value: Expr, sinfo: StructInfo) -> Expr;
}

// The legalizations are tested through the pass that runs them (a dev-dependency).
#[cfg(test)]
pub(crate) use relax_transform::legalize::{legalize_module, legalize_module_report};

#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_nn;
