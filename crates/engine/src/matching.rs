//! Run-time checks of values against `StructInfo` (`MatchCast`, function entry and
//! exit), binding shape variables.
//!
//! Matching runs in two phases, as the spec prescribes for function signatures (and
//! as TVM does for `MatchCast` too): first every shape variable that appears alone in
//! a binding position (a dimension of a `TensorStructInfo` shape, a field of
//! `ShapeStructInfo` values, the value of a `PrimStructInfo`) and is still unbound is
//! bound from the corresponding part of the value; then every check runs left to
//! right with the bound values.

use relax_ir::relax::{ExprKind, StructInfo};
use relax_ir::text::printer::prim_expr::{print_prim_expr, PrimContext};
use relax_ir::tir::{PrimExpr, PrimExprKind, TirVar};
use relax_ir::Var;

use crate::device::{describe_vdevice, same_vdevice};
use crate::error::{EngineError, Result};
use crate::prim::{eval_prim, wrap_int, ShapeEnv};
use crate::value::{render_shape, PrimValue, Scalar, Value};

/// What is being checked, for messages.
#[derive(Clone, Copy)]
pub(crate) enum Root<'a> {
    /// A function argument.
    Arg {
        /// The function's name.
        func: &'a str,
        /// The parameter.
        var: &'a Var,
    },
    /// A function's return value.
    Return {
        /// The function's name.
        func: &'a str,
    },
    /// A `MatchCast` binding.
    MatchCast {
        /// The bound variable.
        var: &'a Var,
    },
}

/// A position inside the checked value.
#[derive(Clone, Copy)]
enum Seg {
    Field(usize),
    Dim(usize),
}

struct Place<'a> {
    root: Root<'a>,
    path: Vec<Seg>,
}

impl Place<'_> {
    fn render(&self) -> String {
        let mut s = String::new();
        for seg in self.path.iter().rev() {
            match seg {
                Seg::Dim(i) => s.push_str(&format!("dimension {i} of ")),
                Seg::Field(i) => s.push_str(&format!("field {i} of ")),
            }
        }
        match self.root {
            Root::Arg { func, var } => s.push_str(&format!("argument `{}` of function `{func}`", var.name())),
            Root::Return { func } => s.push_str(&format!("return value of function `{func}`")),
            Root::MatchCast { var } => s.push_str(&format!("R.match_cast binding `{}`", var.name())),
        }
        s
    }
    fn mismatch(&self, expected: impl Into<String>, actual: impl Into<String>) -> EngineError {
        EngineError::StructMismatch {
            place: self.render(),
            expected: expected.into(),
            actual: actual.into(),
        }
    }
    fn wrap(&self, e: EngineError) -> EngineError {
        match e {
            EngineError::UnboundShapeVar(_) | EngineError::Arith(_) | EngineError::UnboundVar(_) => {
                EngineError::Type(format!("{}: {e}", self.render()))
            }
            e => e,
        }
    }
}

/// The state matching reads and extends.
pub(crate) struct MatchCtx<'a> {
    /// Shape variables in scope (extended by bindings).
    pub shapes: &'a mut ShapeEnv,
    /// Relax variables in scope (for shapes given as a `Var`).
    pub vars: &'a rustc_hash::FxHashMap<Var, Value>,
    /// Shape variables bound by this match, in order.
    pub newly_bound: &'a mut Vec<TirVar>,
}

/// The text of a `PrimExpr` for messages.
pub(crate) fn expr_text(e: &PrimExpr) -> String {
    match e.kind() {
        PrimExprKind::Var(v) => v.name().to_string(),
        PrimExprKind::IntImm { value, .. } => value.to_string(),
        _ => {
            let s = print_prim_expr(e, PrimContext::Relax);
            if s.is_empty() {
                format!("{e:?}")
            } else {
                s
            }
        }
    }
}

fn unbound_var<'e>(e: &'e PrimExpr, shapes: &ShapeEnv) -> Option<&'e TirVar> {
    e.as_var().filter(|v| !shapes.contains_key(*v))
}

impl MatchCtx<'_> {
    fn bind_var(&mut self, v: &TirVar, value: PrimValue) {
        let value = match value.value {
            Scalar::Int(i) if v.dtype().is_integer() => PrimValue::int(wrap_int(i, v.dtype()), v.dtype()),
            _ => value,
        };
        self.shapes.insert(v.clone(), value);
        self.newly_bound.push(v.clone());
    }

    /// Bind the unbound variables among `dims` to the `actual` extents (when the
    /// ranks agree).
    fn bind_dims(&mut self, dims: Option<&[PrimExpr]>, actual: &[i64]) {
        let Some(dims) = dims.filter(|d| d.len() == actual.len()) else {
            return;
        };
        for (d, &actual) in dims.iter().zip(actual) {
            if let Some(v) = unbound_var(d, self.shapes) {
                let v = v.clone();
                self.bind_var(&v, PrimValue::int64(actual));
            }
        }
    }

    /// Phase 1: bind unbound shape variables in binding positions; mismatched structure
    /// is skipped here (phase 2 reports it).
    pub(crate) fn bind(&mut self, value: &Value, sinfo: &StructInfo) {
        match (sinfo, value) {
            (StructInfo::Tensor(ts), Value::Tensor(t)) => self.bind_dims(ts.shape_values(), t.shape()),
            (StructInfo::Shape(ss), Value::Shape(s)) => self.bind_dims(ss.values.as_deref(), s),
            (StructInfo::Prim(ps), Value::Prim(p)) => {
                if let Some(v) = ps.value.as_ref().and_then(|e| unbound_var(e, self.shapes)) {
                    let v = v.clone();
                    self.bind_var(&v, *p);
                }
            }
            (StructInfo::Tuple(fields), Value::Tuple(vals)) => {
                for (s, v) in fields.iter().zip(vals.iter()) {
                    self.bind(v, s);
                }
            }
            _ => {}
        }
    }

    /// Phase 2: check `value` against `sinfo` (binding any variable still unbound).
    pub(crate) fn check(&mut self, value: &Value, sinfo: &StructInfo, root: Root<'_>) -> Result<()> {
        let mut place = Place { root, path: Vec::new() };
        self.check_at(value, sinfo, &mut place)
    }

    /// Both phases for one value (a `MatchCast`, a return value).
    pub(crate) fn match_value(&mut self, value: &Value, sinfo: &StructInfo, root: Root<'_>) -> Result<()> {
        self.bind(value, sinfo);
        self.check(value, sinfo, root)
    }

    fn check_dims(&mut self, dims: &[PrimExpr], actual: &[i64], place: &mut Place<'_>) -> Result<()> {
        for (i, (d, &a)) in dims.iter().zip(actual).enumerate() {
            if let Some(v) = unbound_var(d, self.shapes) {
                let v = v.clone();
                self.bind_var(&v, PrimValue::int64(a));
                continue;
            }
            place.path.push(Seg::Dim(i));
            let expected = eval_prim(d, self.shapes).map_err(|e| place.wrap(e))?;
            if !expected.numerically_equal(&PrimValue::int64(a)) {
                let text = expr_text(d);
                let exp = if text == expected.to_string() {
                    text
                } else {
                    format!("{text} = {expected}")
                };
                return Err(place.mismatch(exp, a.to_string()));
            }
            place.path.pop();
        }
        Ok(())
    }

    fn check_at(&mut self, value: &Value, sinfo: &StructInfo, place: &mut Place<'_>) -> Result<()> {
        match sinfo {
            StructInfo::Object => Ok(()),
            StructInfo::Tensor(ts) => {
                let Value::Tensor(t) = value else {
                    return Err(place.mismatch("a tensor", value.describe()));
                };
                if ts.ndim >= 0 && t.ndim() != ts.ndim as usize {
                    return Err(place.mismatch(
                        format!("rank {}", ts.ndim),
                        format!("rank {} ({})", t.ndim(), t.describe()),
                    ));
                }
                if !ts.dtype.is_void() && t.dtype() != ts.dtype {
                    return Err(place.mismatch(
                        format!("dtype {}", ts.dtype),
                        format!("dtype {} ({})", t.dtype(), t.describe()),
                    ));
                }
                if let (Some(want), Some(have)) = (&ts.vdevice, t.vdevice()) {
                    if !same_vdevice(want, have) {
                        return Err(place.mismatch(
                            format!("a tensor on VDevice {}", describe_vdevice(want)),
                            format!("a tensor on VDevice {}", describe_vdevice(have)),
                        ));
                    }
                }
                match ts.shape.as_ref().map(|s| s.kind()) {
                    None => Ok(()),
                    Some(ExprKind::ShapeExpr(dims)) => {
                        if dims.len() != t.ndim() {
                            return Err(place.mismatch(
                                format!("rank {}", dims.len()),
                                format!("rank {} ({})", t.ndim(), t.describe()),
                            ));
                        }
                        self.check_dims(dims, t.shape(), place)
                    }
                    Some(ExprKind::Var(sv)) => {
                        let bound = self
                            .vars
                            .get(sv)
                            .ok_or_else(|| place.wrap(EngineError::UnboundVar(sv.name().to_string())))?;
                        let Value::Shape(s) = bound else {
                            return Err(EngineError::Type(format!(
                                "{}: shape variable `{}` holds {}, not a shape",
                                place.render(),
                                sv.name(),
                                bound.describe()
                            )));
                        };
                        if s.as_ref() != t.shape() {
                            return Err(place.mismatch(
                                format!("shape `{}` = {}", sv.name(), render_shape(s)),
                                format!("shape {}", render_shape(t.shape())),
                            ));
                        }
                        Ok(())
                    }
                    Some(_) => Err(EngineError::Type(format!(
                        "{}: a tensor's shape annotation must be a ShapeExpr or a Var",
                        place.render()
                    ))),
                }
            }
            StructInfo::Shape(ss) => {
                let Value::Shape(s) = value else {
                    return Err(place.mismatch("a shape", value.describe()));
                };
                if ss.ndim >= 0 && s.len() != ss.ndim as usize {
                    return Err(place.mismatch(format!("a shape of {} dimension(s)", ss.ndim), value.describe()));
                }
                if let Some(dims) = &ss.values {
                    if dims.len() != s.len() {
                        return Err(place.mismatch(format!("a shape of {} dimension(s)", dims.len()), value.describe()));
                    }
                    self.check_dims(dims, s, place)?;
                }
                Ok(())
            }
            StructInfo::Prim(ps) => {
                let Value::Prim(p) = value else {
                    return Err(place.mismatch(format!("a PrimValue of dtype {}", ps.dtype), value.describe()));
                };
                if !ps.dtype.is_void() && p.dtype != ps.dtype {
                    return Err(place.mismatch(format!("a PrimValue of dtype {}", ps.dtype), value.describe()));
                }
                if let Some(e) = &ps.value {
                    if let Some(v) = unbound_var(e, self.shapes) {
                        let v = v.clone();
                        self.bind_var(&v, *p);
                        return Ok(());
                    }
                    let expected = eval_prim(e, self.shapes).map_err(|err| place.wrap(err))?;
                    if !expected.numerically_equal(p) {
                        let text = expr_text(e);
                        let exp = if text == expected.to_string() {
                            text
                        } else {
                            format!("{text} = {expected}")
                        };
                        return Err(place.mismatch(format!("the value {exp}"), format!("the value {p}")));
                    }
                }
                Ok(())
            }
            StructInfo::Tuple(fields) => {
                let Value::Tuple(vals) = value else {
                    return Err(place.mismatch(format!("a tuple of {} field(s)", fields.len()), value.describe()));
                };
                if vals.len() != fields.len() {
                    return Err(place.mismatch(format!("a tuple of {} field(s)", fields.len()), value.describe()));
                }
                for (i, (s, v)) in fields.iter().zip(vals.iter()).enumerate() {
                    place.path.push(Seg::Field(i));
                    self.check_at(v, s, place)?;
                    place.path.pop();
                }
                Ok(())
            }
            StructInfo::Func(fs) => {
                let ok = match value {
                    Value::Closure(_) | Value::PrimFunc(_) => true,
                    Value::PackedFunc(_) => fs.params.is_none(),
                    _ => false,
                };
                if ok {
                    Ok(())
                } else if fs.params.is_some() {
                    Err(place.mismatch("a closure", value.describe()))
                } else {
                    Err(place.mismatch("a function", value.describe()))
                }
            }
        }
    }
}
