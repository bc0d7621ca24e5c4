//! Linear algebra: `matmul`, `einsum`, `outer`.

use crate::error::{infer_err, InferError};
use std::collections::{BTreeMap, HashMap};

use relax_ir::{Call, DataType, PrimExpr, StructInfo, VDevice};

use super::attrs::{MatmulAttrs, OpAttrs};
use super::common::*;
use super::{pure_op, InferCtx, OpDef};

/// `matmul(x1, x2, out_dtype)`: NumPy matmul with broadcast batch dimensions.
fn matmul(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    let ts = tensor_args(call, args, 2)?;
    let (x1, x2) = (ts[0], ts[1]);
    let vdev: Option<VDevice> = match (&x1.vdevice, &x2.vdevice) {
        (Some(a), Some(b)) => (a == b).then(|| a.clone()),
        (Some(a), None) => Some(a.clone()),
        (None, b) => b.clone(),
    };
    let dtype = match MatmulAttrs::from_call(call)?.out_dtype {
        Some(d) => d,
        None => binary_dtype(call, &args[0], &args[1])?,
    };
    if x1.ndim == -1 || x2.ndim == -1 {
        return Ok(tensor_ndim(dtype, -1, vdev));
    }
    let (mut n1, mut n2) = (x1.ndim, x2.ndim);
    if n1 == 0 {
        return Err(infer_err!(
            "Matmul operands must not be scalar.  However, the expression {} has a LHS which is scalar (zero-dimensional) tensor.",
            op_name(call)
        ));
    }
    if n2 == 0 {
        return Err(infer_err!(
            "Matmul operands must not be scalar.  However, the expression {} has a RHS which is scalar (zero-dimensional) tensor.",
            op_name(call)
        ));
    }
    let (mut pre, mut app) = (0, 0);
    if n1 == 1 {
        n1 = 2;
        pre = 1;
    }
    if n2 == 1 {
        n2 = 2;
        app = 1;
    }
    let out_ndim = n1.max(n2) - pre - app;
    let (Some(s1), Some(s2)) = (shape_of(x1), shape_of(x2)) else {
        return Ok(tensor_ndim(dtype, out_ndim, vdev));
    };
    let p1 = &s1[..(s1.len() + pre as usize - 2).min(s1.len())];
    let p2 = &s2[..(s2.len() + app as usize - 2).min(s2.len())];
    let Some(mut out) = broadcast_or_err(call, ctx.analyzer, p1, p2)? else {
        return Ok(tensor_ndim(dtype, out_ndim, vdev));
    };
    let r1 = &s1[x1.ndim as usize - 1];
    let r2 = &s2[n2 as usize - 2];
    if prove_ne(ctx.analyzer, r1, r2) {
        return Err(infer_err!(
            "Matmul requires the reduction length of the operands to be equal.  However, the LHS has shape {}, while the RHS has shape {}.  The reduction dimensions of {} and {} are not equal.",
            show_shape(&s1),
            show_shape(&s2),
            show(r1),
            show(r2)
        ));
    }
    if pre == 0 {
        out.push(s1[n1 as usize - 2].clone());
    }
    if app == 0 {
        out.push(s2[n2 as usize - 1].clone());
    }
    Ok(tensor(out, dtype, vdev))
}

/// Parsed einsum equation: per-input subscripts and the output subscript
/// (`'\0'` marks an ellipsis).
fn parse_einsum(eq: &str) -> Result<(Vec<Vec<char>>, Vec<char>), InferError> {
    let chars: Vec<char> = eq.chars().collect();
    let mut inputs = Vec::new();
    let mut current = Vec::new();
    let mut has_arrow = false;
    let mut has_ellipsis = false;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            ' ' => {}
            '-' | ',' => {
                if chars[i] == '-' {
                    if has_arrow {
                        return Err("Equation can only have one arrow".into());
                    }
                    if chars.get(i + 1) != Some(&'>') {
                        return Err("Cannot parse the Einsum equation: invalid arrow".into());
                    }
                    i += 1;
                    has_arrow = true;
                }
                inputs.push(std::mem::take(&mut current));
                has_ellipsis = false;
            }
            '.' => {
                if has_ellipsis {
                    return Err("Ellipsis can only appear once for each input and output".into());
                }
                if chars.get(i + 1) != Some(&'.') || chars.get(i + 2) != Some(&'.') {
                    return Err("Cannot parse the Einsum equation: invalid ellipsis".into());
                }
                current.push('\0');
                has_ellipsis = true;
                i += 2;
            }
            c if c.is_ascii_alphabetic() => current.push(c),
            c => {
                return Err(infer_err!(
                    "Cannot parse the Einsum equation: invalid character {c} in equation {eq}"
                ))
            }
        }
        i += 1;
    }
    let output = if has_arrow {
        current
    } else {
        inputs.push(current);
        let mut counts: BTreeMap<char, usize> = BTreeMap::new();
        for s in &inputs {
            for &c in s {
                *counts.entry(c).or_default() += 1;
            }
        }
        counts
            .into_iter()
            .filter(|&(c, n)| c == '\0' || n == 1)
            .map(|(c, _)| c)
            .collect()
    };
    Ok((inputs, output))
}

fn broadcast_extent(a: &PrimExpr, b: &PrimExpr) -> Result<PrimExpr, InferError> {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) if x == y => Ok(a.clone()),
        (Some(x), Some(y)) if x == 1 || y == 1 => Ok(PrimExpr::int_of(x.max(y), DataType::INT32)),
        (Some(x), Some(y)) => Err(infer_err!("Cannot broadcast extents {x} and {y}")),
        (Some(_), None) => Ok(b.clone()),
        (None, Some(_)) => Ok(a.clone()),
        (None, None) => Ok(max(a, b)),
    }
}

/// `einsum(operands, subscripts)`.
fn einsum(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    if args.len() != 1 {
        return Err("Einsum op should take 1 argument".into());
    }
    let ts = tuple_of_tensors(call, &args[0])?;
    if ts.is_empty() {
        return Err(
            "Einsum op expects at least one tensor in the input Tuple. However, the given input Tuple is empty.".into(),
        );
    }
    let vdev = merged_vdevice(ts.iter().copied());
    let dtype = ts[0].dtype;
    let mut shapes = Vec::new();
    for t in &ts {
        if t.dtype != dtype {
            return Err(infer_err!(
                "Einsum expects all input tensors to have the same dtype. However, the input contains tensors with dtype {} and {}",
                dtype, t.dtype
            ));
        }
        match shape_of(t) {
            Some(s) => shapes.push(s),
            None => return Ok(tensor_ndim(dtype, t.ndim, vdev)),
        }
    }
    let subscripts = attr_str(call, "subscripts", "");
    let (inputs, output) = parse_einsum(subscripts)?;
    if inputs.len() != shapes.len() {
        return Err("Number of operands does not match the equation".into());
    }
    let mut extents: HashMap<char, PrimExpr> = HashMap::new();
    let mut ellipses: Vec<Vec<PrimExpr>> = Vec::new();
    for (sub, shape) in inputs.iter().zip(&shapes) {
        let mut dim = 0usize;
        for &label in sub {
            if label == '\0' {
                let n = (shape.len() + 1)
                    .checked_sub(sub.len())
                    .ok_or("einsum: subscripts longer than the operand")?;
                ellipses.push(shape[dim..dim + n].to_vec());
                dim += n;
            } else {
                let e = shape
                    .get(dim)
                    .ok_or("einsum: subscripts longer than the operand")?
                    .clone();
                dim += 1;
                let new = match extents.get(&label) {
                    None => e,
                    Some(old) => broadcast_extent(old, &e)?,
                };
                extents.insert(label, new);
            }
        }
        if dim != shape.len() {
            return Err("einsum: the subscripts do not cover the operand's dimensions".into());
        }
    }
    let mut ell: Vec<PrimExpr> = ellipses.iter().max_by_key(|s| s.len()).cloned().unwrap_or_default();
    for s in &ellipses {
        let n = ell.len().max(s.len());
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let a = (i + ell.len()).checked_sub(n).map(|k| ell[k].clone());
            let b = (i + s.len()).checked_sub(n).map(|k| s[k].clone());
            out.push(match (a, b) {
                (Some(a), Some(b)) => broadcast_extent(&a, &b)?,
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => int(1),
            });
        }
        ell = out;
    }
    let mut out = Vec::new();
    for label in output {
        if label == '\0' {
            out.extend(ell.iter().cloned());
        } else {
            out.push(
                extents
                    .get(&label)
                    .cloned()
                    .ok_or_else(|| format!("einsum: unknown output label {label}"))?,
            );
        }
    }
    Ok(tensor(out, dtype, vdev))
}

/// `outer(x1, x2)` of two vectors.
fn outer(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let ts = tensor_args(call, args, 2)?;
    if ts[0].ndim != 1 || ts[1].ndim != 1 {
        return Err("torch.outer requires both inputs to be 1D tensors.".into());
    }
    match (shape_of(ts[0]), shape_of(ts[1])) {
        (Some(a), Some(b)) => Ok(tensor(vec![a[0].clone(), b[0].clone()], ts[0].dtype, None)),
        _ => Ok(tensor_ndim(ts[0].dtype, 2, None)),
    }
}

/// The linear algebra operators.
pub static OPS: &[OpDef] = &[
    pure_op!("relax.matmul", matmul, super::legalize::linear_algebra::matmul),
    pure_op!("relax.einsum", einsum),
    pure_op!("relax.outer", outer),
];
