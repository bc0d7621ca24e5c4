//! The ranges a function's attributes give its symbolic variables
//! (`tir_var_lower_bound`, `tir_var_upper_bound`, `tir_non_negative_var`), as TVM's
//! `relax.frontend` writes them for a symbolic sequence length or batch.

use super::{Function, StructInfo};
use crate::attrs::{AttrValue, Attrs};
use crate::tir::TirVar;
use crate::visit::struct_info_tir_vars;

/// The declared range of one symbolic variable of a function's signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarBound {
    /// The variable, as it appears in the parameters' (or result's) StructInfo.
    pub var: TirVar,
    /// `tir_var_lower_bound`, when given.
    pub lower: Option<i64>,
    /// `tir_var_upper_bound`, when given.
    pub upper: Option<i64>,
    /// Listed in `tir_non_negative_var`.
    pub non_negative: bool,
}

/// The bounds `f`'s attributes declare for the symbolic variables of its signature
/// (variables with no attribute are left out); an error names a malformed attribute.
pub fn signature_bounds(f: &Function) -> Result<Vec<VarBound>, String> {
    let sinfos = f
        .params
        .iter()
        .filter_map(|p| p.struct_info())
        .chain(f.ret_struct_info.as_ref());
    bounds_of(&f.attrs, sinfos)
}

/// [`signature_bounds`] of a function with attributes `attrs` whose signature has
/// the StructInfos `sinfos`.
pub fn bounds_of<'a>(attrs: &Attrs, sinfos: impl Iterator<Item = &'a StructInfo>) -> Result<Vec<VarBound>, String> {
    let f = attrs;
    let int_map = |key: &str| -> Result<Vec<(String, i64)>, String> {
        match f.get(key) {
            None => Ok(Vec::new()),
            Some(AttrValue::Map(m)) => m
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        AttrValue::Int(i) => Some(*i),
                        AttrValue::PrimExpr(p) => p.as_int(),
                        _ => None,
                    };
                    v.map(|v| (k.to_string(), v))
                        .ok_or_else(|| format!("`{key}` of `{k}` must be an integer"))
                })
                .collect(),
            Some(other) => Err(format!("`{key}` must be a map from names to integers, got {other:?}")),
        }
    };
    let upper = int_map("tir_var_upper_bound")?;
    let lower = int_map("tir_var_lower_bound")?;
    let nonneg: Vec<String> = match f.get("tir_non_negative_var") {
        Some(AttrValue::List(l)) => l.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    };
    let find = |m: &[(String, i64)], name: &str| m.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
    let mut out: Vec<VarBound> = Vec::new();
    for v in sinfos.flat_map(|s: &StructInfo| struct_info_tir_vars(s)) {
        if out.iter().any(|b| b.var == v) {
            continue;
        }
        let b = VarBound {
            lower: find(&lower, v.name()),
            upper: find(&upper, v.name()),
            non_negative: nonneg.iter().any(|n| n == v.name()),
            var: v,
        };
        if b.lower.is_some() || b.upper.is_some() || b.non_negative {
            out.push(b);
        }
    }
    Ok(out)
}
