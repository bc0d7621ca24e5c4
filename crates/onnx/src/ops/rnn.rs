//! ONNX `RNN`, `GRU` and `LSTM`: the recurrence unrolled over the (static) sequence
//! length, each step matrix products and the gates' activations, forward, reverse or
//! both directions, following the operators' definitions.

use crate::error::{convert_err, ConvertError};
use relax_ir::{AttrValue, DataType, Expr};

use crate::convert::{Ctx, TVal};
use crate::ops::{concat_exprs as concat, emit, slice_axis};
use crate::ops::{ints_attr, scalar, tval_leaf, val, x, Node};

fn squeeze0(ctx: &mut Ctx, e: Expr) -> Result<Expr, ConvertError> {
    emit(ctx, "squeeze", vec![e], &[("axis", ints_attr(&[0]))])
}

/// Row `d` of a `(dirs, ...)` tensor.
fn dir_row(ctx: &mut Ctx, e: Expr, d: i64) -> Result<Expr, ConvertError> {
    let s = slice_axis(ctx, e, 0, d, d + 1, 1)?;
    squeeze0(ctx, s)
}

/// Gate `g` (of width `h`) of the last axis.
fn gate(ctx: &mut Ctx, e: Expr, g: i64, h: i64) -> Result<Expr, ConvertError> {
    let axis = match e.kind() {
        relax_ir::ExprKind::Var(v) => v
            .struct_info()
            .and_then(|s| s.as_tensor().map(|t| t.ndim as i64 - 1))
            .unwrap_or(1),
        _ => 1,
    };
    slice_axis(ctx, e, axis, g * h, (g + 1) * h, 1)
}

struct Act {
    name: String,
    alpha: Option<f64>,
    beta: Option<f64>,
}

fn apply(ctx: &mut Ctx, a: &Act, e: Expr, dt: DataType) -> Result<Expr, ConvertError> {
    let s = |v: f64| scalar(dt, v);
    match a.name.to_ascii_lowercase().as_str() {
        "sigmoid" => emit(ctx, "sigmoid", vec![e], &[]),
        "tanh" => emit(ctx, "tanh", vec![e], &[]),
        "relu" => emit(ctx, "nn.relu", vec![e], &[]),
        "leakyrelu" => emit(
            ctx,
            "nn.leakyrelu",
            vec![e],
            &[("alpha", AttrValue::Float(a.alpha.unwrap_or(0.01)))],
        ),
        "hardsigmoid" => {
            let m = emit(ctx, "multiply", vec![e, s(a.alpha.unwrap_or(0.2))], &[])?;
            let m = emit(ctx, "add", vec![m, s(a.beta.unwrap_or(0.5))], &[])?;
            let m = emit(ctx, "maximum", vec![m, s(0.0)], &[])?;
            emit(ctx, "minimum", vec![m, s(1.0)], &[])
        }
        "scaledtanh" => {
            let m = emit(ctx, "multiply", vec![e, s(a.beta.unwrap_or(1.0))], &[])?;
            let t = emit(ctx, "tanh", vec![m], &[])?;
            emit(ctx, "multiply", vec![t, s(a.alpha.unwrap_or(1.0))], &[])
        }
        "affine" => {
            let m = emit(ctx, "multiply", vec![e, s(a.alpha.unwrap_or(1.0))], &[])?;
            emit(ctx, "add", vec![m, s(a.beta.unwrap_or(0.0))], &[])
        }
        "softsign" => {
            let ab = emit(ctx, "abs", vec![e.clone()], &[])?;
            let d = emit(ctx, "add", vec![ab, s(1.0)], &[])?;
            emit(ctx, "divide", vec![e, d], &[])
        }
        "softplus" => emit(ctx, "nn.softplus", vec![e], &[]),
        o => Err(convert_err!(Unsupported;"activation `{o}` is not supported")),
    }
}

/// The converter of `RNN`, `GRU` and `LSTM`.
pub fn rnn(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let kind = n.op_type.as_str();
    let gates: i64 = match kind {
        "RNN" => 1,
        "GRU" => 3,
        _ => 4,
    };
    let xv = val(ctx, n, 0)?;
    let dt = xv.dtype;
    let shape = xv.const_shape().ok_or("a static input shape is needed")?;
    if shape.len() != 3 {
        return Err("X must be 3-D".into());
    }
    let layout = n.int("layout", 0);
    let mut xe = x(ctx, n, 0)?;
    let (seq, batch) = if layout == 0 {
        (shape[0], shape[1])
    } else {
        xe = emit(ctx, "permute_dims", vec![xe], &[("axes", ints_attr(&[1, 0, 2]))])?;
        (shape[1], shape[0])
    };
    let wshape = val(ctx, n, 1)?.const_shape().ok_or("W needs a static shape")?;
    let hidden = match n.attr_i("hidden_size") {
        Some(h) => h,
        None => wshape.get(1).copied().ok_or("W must be 3-D")? / gates,
    };
    let direction = n.string("direction").unwrap_or_else(|| "forward".into());
    let dirs: Vec<bool> = match direction.as_str() {
        "forward" => vec![false],
        "reverse" => vec![true],
        "bidirectional" => vec![false, true],
        o => return Err(convert_err!(Unsupported;"direction `{o}` is not supported")),
    };
    if n.has(4) {
        let lens = val(ctx, n, 4)?
            .const_ints()
            .ok_or_else(|| crate::ops::must_be_known(n, 4))?;
        if lens.iter().any(|&l| l != seq) {
            return Err(ConvertError::unsupported(
                "sequence_lens shorter than the sequence are not supported",
            ));
        }
    }
    let per_dir = match kind {
        "RNN" => 1,
        "GRU" => 2,
        _ => 3,
    };
    let names: Vec<String> = match n.attr("activations") {
        Some(a) if !a.strings.is_empty() => a
            .strings
            .iter()
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect(),
        _ => {
            let d: &[&str] = match kind {
                "RNN" => &["Tanh"],
                "GRU" => &["Sigmoid", "Tanh"],
                _ => &["Sigmoid", "Tanh", "Tanh"],
            };
            (0..dirs.len()).flat_map(|_| d.iter().map(|s| s.to_string())).collect()
        }
    };
    let alphas = n.attr("activation_alpha").map(|a| a.floats.clone()).unwrap_or_default();
    let betas = n.attr("activation_beta").map(|a| a.floats.clone()).unwrap_or_default();
    let acts: Vec<Act> = names
        .iter()
        .enumerate()
        .map(|(i, s)| Act {
            name: s.clone(),
            alpha: alphas.get(i).map(|&v| v as f64),
            beta: betas.get(i).map(|&v| v as f64),
        })
        .collect();
    if acts.len() < per_dir * dirs.len() {
        return Err("too few activations".into());
    }
    let clip = n.attr_f("clip");
    let lbr = n.int("linear_before_reset", 0) != 0;
    if kind == "LSTM" && n.int("input_forget", 0) != 0 {
        return Err(ConvertError::unsupported("input_forget is not supported"));
    }
    let (w_all, r_all) = (x(ctx, n, 1)?, x(ctx, n, 2)?);
    let b_all = if n.has(3) { Some(x(ctx, n, 3)?) } else { None };
    let h0_all = if n.has(5) { Some(x(ctx, n, 5)?) } else { None };
    let c0_all = if kind == "LSTM" && n.has(6) {
        Some(x(ctx, n, 6)?)
    } else {
        None
    };
    let p_all = if kind == "LSTM" && n.has(7) {
        Some(x(ctx, n, 7)?)
    } else {
        None
    };
    let zeros = |_: &mut Ctx| -> Result<Expr, ConvertError> {
        Ok(crate::convert::constant(
            dt,
            vec![batch, hidden],
            (0..batch * hidden).map(|_| crate::tensor::encode(dt, 0.0)),
        ))
    };
    let gh = gates * hidden;
    let (mut ys, mut hs, mut cs) = (Vec::new(), Vec::new(), Vec::new());
    for (di, &rev) in dirs.iter().enumerate() {
        let d = di as i64;
        let act = &acts[di * per_dir..(di + 1) * per_dir];
        let w = dir_row(ctx, w_all.clone(), d)?;
        let wt = emit(ctx, "permute_dims", vec![w], &[("axes", ints_attr(&[1, 0]))])?;
        let r = dir_row(ctx, r_all.clone(), d)?;
        let rt = emit(ctx, "permute_dims", vec![r], &[("axes", ints_attr(&[1, 0]))])?;
        // X W^T + Wb for every step at once: (seq, batch, G*H)
        let mut xw = emit(ctx, "matmul", vec![xe.clone(), wt], &[])?;
        let mut rb = None;
        if let Some(b) = &b_all {
            let b = dir_row(ctx, b.clone(), d)?;
            let wb = slice_axis(ctx, b.clone(), 0, 0, gh, 1)?;
            xw = emit(ctx, "add", vec![xw, wb], &[])?;
            rb = Some(slice_axis(ctx, b, 0, gh, 2 * gh, 1)?);
        }
        let mut h = match &h0_all {
            Some(h0) => dir_row(ctx, h0.clone(), d)?,
            None => zeros(ctx)?,
        };
        let mut c = match &c0_all {
            Some(c0) => dir_row(ctx, c0.clone(), d)?,
            None => zeros(ctx)?,
        };
        let p = match &p_all {
            Some(p) => Some(dir_row(ctx, p.clone(), d)?),
            None => None,
        };
        let clipped = |ctx: &mut Ctx, e: Expr| -> Result<Expr, ConvertError> {
            match clip {
                Some(cl) => {
                    let e = emit(ctx, "maximum", vec![e, scalar(dt, -cl)], &[])?;
                    emit(ctx, "minimum", vec![e, scalar(dt, cl)], &[])
                }
                None => Ok(e),
            }
        };
        let mut outs: Vec<Option<Expr>> = vec![None; seq as usize];
        let steps: Vec<i64> = if rev {
            (0..seq).rev().collect()
        } else {
            (0..seq).collect()
        };
        for t in steps {
            let xt = slice_axis(ctx, xw.clone(), 0, t, t + 1, 1)?;
            let xt = squeeze0(ctx, xt)?;
            let mut hr = emit(ctx, "matmul", vec![h.clone(), rt.clone()], &[])?;
            if let Some(rb) = &rb {
                hr = emit(ctx, "add", vec![hr, rb.clone()], &[])?;
            }
            match kind {
                "RNN" => {
                    let s = emit(ctx, "add", vec![xt, hr], &[])?;
                    let s = clipped(ctx, s)?;
                    h = apply(ctx, &act[0], s, dt)?;
                }
                "GRU" => {
                    let (xz, xr, xh) = (
                        gate(ctx, xt.clone(), 0, hidden)?,
                        gate(ctx, xt.clone(), 1, hidden)?,
                        gate(ctx, xt, 2, hidden)?,
                    );
                    let (hz, hrr) = (gate(ctx, hr.clone(), 0, hidden)?, gate(ctx, hr.clone(), 1, hidden)?);
                    let z = emit(ctx, "add", vec![xz, hz], &[])?;
                    let z = clipped(ctx, z)?;
                    let z = apply(ctx, &act[0], z, dt)?;
                    let rg = emit(ctx, "add", vec![xr, hrr], &[])?;
                    let rg = clipped(ctx, rg)?;
                    let rg = apply(ctx, &act[0], rg, dt)?;
                    let hh = if lbr {
                        let hh = gate(ctx, hr, 2, hidden)?;
                        let m = emit(ctx, "multiply", vec![rg, hh], &[])?;
                        emit(ctx, "add", vec![xh, m], &[])?
                    } else {
                        let rh = emit(ctx, "multiply", vec![rg, h.clone()], &[])?;
                        let rt_h = slice_axis(ctx, rt.clone(), 1, 2 * hidden, 3 * hidden, 1)?;
                        let mut m = emit(ctx, "matmul", vec![rh, rt_h], &[])?;
                        if let Some(rb) = &rb {
                            let rbh = slice_axis(ctx, rb.clone(), 0, 2 * hidden, 3 * hidden, 1)?;
                            m = emit(ctx, "add", vec![m, rbh], &[])?;
                        }
                        emit(ctx, "add", vec![xh, m], &[])?
                    };
                    let hh = clipped(ctx, hh)?;
                    let hh = apply(ctx, &act[1], hh, dt)?;
                    // (1 - z) * hh + z * h
                    let one_minus = emit(ctx, "subtract", vec![scalar(dt, 1.0), z.clone()], &[])?;
                    let a = emit(ctx, "multiply", vec![one_minus, hh], &[])?;
                    let b = emit(ctx, "multiply", vec![z, h.clone()], &[])?;
                    h = emit(ctx, "add", vec![a, b], &[])?;
                }
                _ => {
                    let s = emit(ctx, "add", vec![xt, hr], &[])?;
                    let peep = |ctx: &mut Ctx, g: Expr, k: i64, cc: &Expr| -> Result<Expr, ConvertError> {
                        match &p {
                            Some(p) => {
                                let pk = slice_axis(ctx, p.clone(), 0, k * hidden, (k + 1) * hidden, 1)?;
                                let m = emit(ctx, "multiply", vec![pk, cc.clone()], &[])?;
                                emit(ctx, "add", vec![g, m], &[])
                            }
                            None => Ok(g),
                        }
                    };
                    let i = gate(ctx, s.clone(), 0, hidden)?;
                    let i = peep(ctx, i, 0, &c)?;
                    let i = clipped(ctx, i)?;
                    let i = apply(ctx, &act[0], i, dt)?;
                    let f = gate(ctx, s.clone(), 2, hidden)?;
                    let f = peep(ctx, f, 2, &c)?;
                    let f = clipped(ctx, f)?;
                    let f = apply(ctx, &act[0], f, dt)?;
                    let g = gate(ctx, s.clone(), 3, hidden)?;
                    let g = clipped(ctx, g)?;
                    let g = apply(ctx, &act[1], g, dt)?;
                    let fc = emit(ctx, "multiply", vec![f, c.clone()], &[])?;
                    let ig = emit(ctx, "multiply", vec![i, g], &[])?;
                    c = emit(ctx, "add", vec![fc, ig], &[])?;
                    let o = gate(ctx, s, 1, hidden)?;
                    let o = peep(ctx, o, 1, &c)?;
                    let o = clipped(ctx, o)?;
                    let o = apply(ctx, &act[0], o, dt)?;
                    let hc = apply(ctx, &act[2], c.clone(), dt)?;
                    h = emit(ctx, "multiply", vec![o, hc], &[])?;
                }
            }
            outs[t as usize] = Some(emit(ctx, "expand_dims", vec![h.clone()], &[("axis", ints_attr(&[0]))])?);
        }
        let outs: Vec<Expr> = outs.into_iter().collect::<Option<_>>().ok_or("a missing step")?;
        let y = if outs.len() == 1 {
            outs[0].clone()
        } else {
            concat(ctx, outs, 0)?
        };
        // (seq, 1, batch, hidden)
        ys.push(emit(ctx, "expand_dims", vec![y], &[("axis", ints_attr(&[1]))])?);
        hs.push(emit(ctx, "expand_dims", vec![h], &[("axis", ints_attr(&[0]))])?);
        cs.push(emit(ctx, "expand_dims", vec![c], &[("axis", ints_attr(&[0]))])?);
    }
    let join = |ctx: &mut Ctx, v: Vec<Expr>, axis: i64| -> Result<Expr, ConvertError> {
        if v.len() == 1 {
            Ok(v[0].clone())
        } else {
            concat(ctx, v, axis)
        }
    };
    let mut y = join(ctx, ys, 1)?;
    let mut yh = join(ctx, hs, 0)?;
    let mut yc = join(ctx, cs, 0)?;
    if layout != 0 {
        y = emit(ctx, "permute_dims", vec![y], &[("axes", ints_attr(&[2, 0, 1, 3]))])?;
        yh = emit(ctx, "permute_dims", vec![yh], &[("axes", ints_attr(&[1, 0, 2]))])?;
        yc = emit(ctx, "permute_dims", vec![yc], &[("axes", ints_attr(&[1, 0, 2]))])?;
    }
    let mut out = vec![tval_leaf(ctx, y)?, tval_leaf(ctx, yh)?];
    if kind == "LSTM" {
        out.push(tval_leaf(ctx, yc)?);
    }
    Ok(out)
}
