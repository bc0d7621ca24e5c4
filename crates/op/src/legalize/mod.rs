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
    pub fn placeholder(&self, t: &mut te::Te, i: usize) -> Result<relax_ir::Buffer, Skip> {
        let e = self.call.args.get(i).or_skip("an argument is missing")?;
        let si = self.args.get(i).or_skip("an argument is missing")?;
        t.placeholder(e, si.as_tensor().or_skip("an argument is not a tensor")?)
    }

    /// The operator's name without the `relax.` prefix (`"nn.conv2d"`).
    pub fn op_name(&self) -> &str {
        let name = self.call.op.as_op().unwrap_or("operator");
        name.strip_prefix("relax.").unwrap_or(name)
    }

    /// Argument `i` of the call.
    pub fn arg(&self, i: usize) -> Result<&Expr, Skip> {
        self.call.args.get(i).or_skip("an argument is missing")
    }

    /// The dtype of tensor argument `i`.
    pub fn arg_dtype(&self, i: usize) -> Result<DataType, Skip> {
        let si = self.args.get(i).or_skip("an argument is missing")?;
        Ok(si.as_tensor().or_skip("an argument is not a tensor")?.dtype)
    }

    /// The dtype of tensor argument `i` when `supported` accepts it, else a skip
    /// naming the dtype and the operator.
    pub fn arg_dtype_if(&self, i: usize, supported: fn(&DataType) -> bool) -> Result<DataType, Skip> {
        let dt = self.arg_dtype(i)?;
        if supported(&dt) {
            Ok(dt)
        } else {
            Err(self.unsupported_dtype(dt))
        }
    }

    /// The skip of a call whose dtype `dt` the lowering does not handle.
    pub fn unsupported_dtype(&self, dt: DataType) -> Skip {
        Skip::new(format!("dtype {dt} is not supported by {}", self.op_name()))
    }

    /// The result as a tensor with a known shape: `(shape, dtype)`.
    pub fn out_tensor(&self) -> Result<(Vec<PrimExpr>, DataType), Skip> {
        let t = self.out.as_tensor().or_skip("the result is not a tensor")?;
        if t.dtype.is_void() {
            return Err(Skip::new("the output dtype is not known"));
        }
        let shape = t.shape_values().or_skip("the output shape is not known")?;
        Ok((shape.to_vec(), t.dtype))
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
        // As TVM's `call_te`: a variable is bound when it is itself a dimension of an
        // input or output buffer; every other variable a buffer shape uses (`n` in
        // `n * 17`) is unbound and becomes a scalar parameter passed as `tir_vars`.
        let mut defined: HashSet<u64> = HashSet::new();
        for (_, b) in func.buffer_map.iter() {
            defined.extend(b.shape().iter().filter_map(|d| d.as_var()).map(|v| v.id()));
        }
        let mut extra: Vec<TirVar> = Vec::new();
        for (_, b) in func.buffer_map.iter() {
            for v in b.shape().iter().flat_map(free_tir_vars) {
                if !defined.contains(&v.id()) && !extra.contains(&v) {
                    extra.push(v);
                }
            }
        }
        // `call_tir` passes `tir_vars` after the inputs, before the outputs.
        func.params.splice(args.len()..args.len(), extra.iter().cloned());
        Lowered {
            name: name.to_string(),
            func,
            args,
            out,
            tir_vars: extra.iter().map(|v| v.to_expr()).collect(),
        }
    }
}

/// A PrimFunc builder: lower one call, or say which of the call's shapes, dtypes
/// or attributes it does not handle. Wrapped into a [`LegalizeFn`] by
/// [`lower_or_skip`] or [`with_known_shapes`].
pub type BuildFn = fn(&LegalizeCtx) -> Result<Lowered, Skip>;

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

/// An attribute error (`"axis must be an integer"`) is the reason of a skip.
impl From<String> for Skip {
    fn from(reason: String) -> Skip {
        Skip { reason }
    }
}

/// An inference error (a bad attribute, an argument of the wrong kind) is the
/// reason of a skip.
impl From<crate::InferError> for Skip {
    fn from(e: crate::InferError) -> Skip {
        Skip { reason: e.message }
    }
}

/// `axis` (negative counts from the end) as an index below `nd`, or a skip
/// saying it is out of range.
pub fn norm_axis(axis: i64, nd: usize) -> Result<usize, Skip> {
    let a = if axis < 0 { axis + nd as i64 } else { axis };
    if (0..nd as i64).contains(&a) {
        Ok(a as usize)
    } else {
        Err(Skip::new(format!("axis {axis} is out of range for rank {nd}")))
    }
}

/// [`norm_axis`] of each of `axes`, sorted, without repeats.
pub fn norm_axes(axes: &[i64], nd: usize) -> Result<Vec<usize>, Skip> {
    let mut out = axes.iter().map(|&a| norm_axis(a, nd)).collect::<Result<Vec<_>, _>>()?;
    out.sort_unstable();
    out.dedup();
    Ok(out)
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
    f(ctx).map(Legalized::call)
}

/// A legalization whose preconditions are known shapes: the output and every
/// tensor argument must have a known shape and dtype; `f` builds the PrimFunc
/// (reading the call's typed attributes) or says which dtype it does not support.
pub fn with_known_shapes(ctx: &LegalizeCtx, f: BuildFn) -> Result<Legalized, Skip> {
    ctx.out_tensor()?;
    for a in &ctx.args {
        if let StructInfo::Tensor(t) = a {
            if t.dtype.is_void() {
                return Err(Skip::new("an operand's dtype is not known"));
            }
            if t.shape_values().is_none() {
                return Err(Skip::new("an operand's shape is not known"));
            }
        }
    }
    f(ctx).map(Legalized::call)
}

/// Typed legalizations `name(ctx, em)` for operators whose PrimFunc builder
/// `super::name` is a [`BuildFn`] (see [`with_known_shapes`]).
macro_rules! typed_legalizations {
    ($($f:ident),* $(,)?) => {
        use $crate::legalize::{with_known_shapes, Emitter, LegalizeCtx, Legalized, Skip};
        $(
            #[doc = concat!("`", stringify!($f), "`.")]
            pub fn $f(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
                with_known_shapes(ctx, super::$f)
            }
        )*
    };
}
pub(crate) use typed_legalizations;

/// PrimFunc builders `$f(ctx)` that call `$helper(ctx, $fname, $intr)`: one
/// family helper parameterized by the PrimFunc's name and a TIR intrinsic.
macro_rules! by_intrinsic {
    ($helper:ident: $($f:ident $fname:literal $intr:ident),* $(,)?) => {$(
        fn $f(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
            $helper(ctx, $fname, relax_ir::tir::Intrinsic::$intr)
        }
    )*};
}
pub(crate) use by_intrinsic;

/// Legalizations `name(ctx, em)` by the PrimFunc builders `super::name` (or the
/// builder expression given after `=>`), through [`lower_or_skip`].
macro_rules! lowered_legalizations {
    ($($f:ident $(=> $build:expr)?),* $(,)?) => {
        use $crate::legalize::{lower_or_skip, Emitter, LegalizeCtx, Legalized, Skip};
        $(
            #[doc = concat!("`", stringify!($f), "`.")]
            pub fn $f(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
                lower_or_skip(ctx, $crate::legalize::lowered_legalizations!(@build $f $(, $build)?))
            }
        )*
    };
    (@build $f:ident) => { super::$f };
    (@build $f:ident, $build:expr) => { $build };
}
pub(crate) use lowered_legalizations;

/// The legalization of operator `name` (`"relax.add"`), if any.
pub fn lookup(name: &str) -> Option<Legalizer> {
    crate::OpId::of(name).and_then(|id| id.get().legalize)
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
#[cfg(test)]
mod tests_skip;
