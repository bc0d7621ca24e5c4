//! Shapes and data movement: constants, reshapes, slices, gathers, scatters, pads.

use super::*;

pub(crate) fn constant_node(_ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let out = n.outputs.first().cloned().unwrap_or_default();
    let arr = |dtype: DataType, shape: Vec<i64>, elems: Vec<Vec<u8>>| relax_ir::NDArray {
        dtype,
        shape,
        data: elems.concat(),
    };
    let a = if let Some(t) = n.attr("value").and_then(|a| a.t.as_ref()) {
        tensor::to_ndarray(t, None).map_err(|e| e.message)?
    } else if let Some(a) = n.attr("value_float") {
        arr(
            DataType::FLOAT32,
            vec![],
            vec![tensor::encode(DataType::FLOAT32, a.f as f64)],
        )
    } else if let Some(a) = n.attr("value_floats") {
        let v: Vec<_> = a
            .floats
            .iter()
            .map(|&f| tensor::encode(DataType::FLOAT32, f as f64))
            .collect();
        arr(DataType::FLOAT32, vec![v.len() as i64], v)
    } else if let Some(a) = n.attr("value_int") {
        arr(DataType::INT64, vec![], vec![a.i.to_le_bytes().to_vec()])
    } else if let Some(a) = n.attr("value_ints") {
        let v: Vec<_> = a.ints.iter().map(|i| i.to_le_bytes().to_vec()).collect();
        arr(DataType::INT64, vec![v.len() as i64], v)
    } else {
        return Err(ConvertError::unsupported(
            "only tensor, float(s) and int(s) values are supported",
        ));
    };
    let _ = at::TENSOR;
    out1(array_value(&out, a))
}

pub(crate) fn constant_of_shape(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dims = known_ints(ctx, n, 0)?;
    let (dtype, fill) = match n.attr("value").and_then(|a| a.t.as_ref()) {
        Some(t) => {
            let a = tensor::to_ndarray(t, None).map_err(|e| e.message)?;
            if a.numel() != 1 {
                return Err("value must hold one element".into());
            }
            (a.dtype, tensor::elem_f64(&a, 0).ok_or("bad value")?)
        }
        None => (DataType::FLOAT32, 0.0),
    };
    let consts: Option<Vec<i64>> = dims.iter().map(PrimExpr::as_int).collect();
    if let Some(c) = &consts {
        let numel = const_product(c);
        if (0..=4096).contains(&numel) {
            let k = if dtype.is_float() {
                Known::Float(vec![fill; numel as usize])
            } else {
                Known::Int(vec![PrimExpr::int(fill as i64); numel as usize])
            };
            return out1(TVal::known(dtype, c.clone(), k));
        }
    }
    out1(ctx.op(
        "full",
        vec![Expr::shape(dims), scalar(dtype, fill)],
        &[("dtype", AttrValue::DataType(dtype))],
    )?)
}

pub(crate) fn shape(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dims = shape_of(ctx, n, 0)?;
    let r = dims.len() as i64;
    let clampi = |v: i64| -> usize { (if v < 0 { v + r } else { v }).clamp(0, r) as usize };
    let start = clampi(n.int("start", 0));
    let end = clampi(n.int("end", r));
    let d: Vec<PrimExpr> = if start < end { dims[start..end].to_vec() } else { vec![] };
    let len = d.len() as i64;
    out1(TVal::known(DataType::INT64, vec![len], Known::Int(d)))
}

pub(crate) fn size(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dims = shape_of(ctx, n, 0)?;
    let p = product(ctx, &dims);
    out1(TVal::known(DataType::INT64, vec![], Known::Int(vec![p])))
}

/// ONNX reshape semantics: `0` copies the input dimension (unless `allowzero`),
/// `-1` is inferred.
pub(crate) fn reshape_dims(
    ctx: &Ctx,
    input: &[PrimExpr],
    target: &[PrimExpr],
    allowzero: bool,
) -> Result<Vec<PrimExpr>, ConvertError> {
    let mut out: Vec<Option<PrimExpr>> = Vec::new();
    let mut infer = None;
    for (i, t) in target.iter().enumerate() {
        match t.as_int() {
            Some(0) if !allowzero => out.push(Some(
                input.get(i).cloned().ok_or("0 in the shape beyond the input's rank")?,
            )),
            Some(-1) => {
                if infer.is_some() {
                    return Err("more than one -1 in the shape".into());
                }
                infer = Some(i);
                out.push(None);
            }
            Some(v) if v < -1 => return Err(convert_err!("bad dimension {v} in the shape")),
            _ => out.push(Some(t.clone())),
        }
    }
    if let Some(i) = infer {
        let known: Vec<PrimExpr> = out.iter().flatten().cloned().collect();
        let total = product(ctx, input);
        let part = product(ctx, &known);
        out[i] = Some(ctx.bin(BinOp::FloorDiv, &total, &part));
    }
    Ok(out.into_iter().flatten().collect())
}

pub(crate) fn reshape(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let target = if n.opset < 5 {
        n.ints("shape")
            .ok_or("no shape")?
            .into_iter()
            .map(PrimExpr::int)
            .collect()
    } else {
        known_ints(ctx, n, 1)?
    };
    let input = v.shape.clone().ok_or("input has unknown shape")?;
    let dims = reshape_dims(ctx, &input, &target, n.int("allowzero", 0) != 0)?;
    reshape_to(ctx, n, v, dims)
}

/// Reshape input 0 to `dims` (folded for known values).
pub(crate) fn reshape_to(ctx: &mut Ctx, n: &Node, v: TVal, dims: Vec<PrimExpr>) -> Result<Vec<TVal>, ConvertError> {
    if let (Some(k), Some(c)) = (
        &v.known,
        dims.iter().map(PrimExpr::as_int).collect::<Option<Vec<i64>>>(),
    ) {
        if const_product(&c) as usize == k.len() {
            return out1(TVal::known(v.dtype, c, k.clone()));
        }
    }
    if v.shape
        .as_ref()
        .is_some_and(|s| s.len() == dims.len() && s.iter().zip(&dims).all(|(a, b)| ctx.ana.can_prove_equal(a, b)))
    {
        return out1(v);
    }
    // an empty tensor to an empty shape: a new empty tensor (nothing to move)
    let empty = |s: &[PrimExpr]| s.iter().any(|d| d.as_int() == Some(0));
    if v.shape.as_deref().is_some_and(empty) && empty(&dims) {
        let dt = v.dtype;
        return out1(ctx.op(
            "full",
            vec![Expr::shape(dims), scalar(dt, 0.0)],
            &[("dtype", AttrValue::DataType(dt))],
        )?);
    }
    let a = x(ctx, n, 0)?;
    out1(ctx.op("reshape", vec![a, Expr::shape(dims)], &[])?)
}

pub(crate) fn flatten(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let s = v.shape.clone().ok_or("input has unknown shape")?;
    let r = s.len() as i64;
    let a = n.int("axis", 1);
    let axis = if a < 0 { a + r } else { a };
    if !(0..=r).contains(&axis) {
        return Err(convert_err!("axis {a} is out of range"));
    }
    let axis = axis as usize;
    let dims = vec![product(ctx, &s[..axis]), product(ctx, &s[axis..])];
    reshape_to(ctx, n, v, dims)
}

pub(crate) fn transpose(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let perm = n.ints("perm").unwrap_or_else(|| (0..rank as i64).rev().collect());
    if perm.len() != rank {
        return Err("perm does not match the input's rank".into());
    }
    let a = x(ctx, n, 0)?;
    out1(ctx.op("permute_dims", vec![a], &[("axes", ints_attr(&perm))])?)
}

pub(crate) fn unsqueeze(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let axes = axes_input_or_attr(ctx, n, 13, 1)?.ok_or("axes are required")?;
    let s = v.shape.clone().ok_or("input has unknown shape")?;
    let out_rank = s.len() + axes.len();
    let mut norm: Vec<usize> = axes.iter().map(|&a| norm_axis(a, out_rank)).collect::<Result<_, _>>()?;
    norm.sort_unstable();
    norm.dedup();
    if norm.len() != axes.len() {
        return Err("repeated axes".into());
    }
    let mut dims = Vec::with_capacity(out_rank);
    let mut src = s.iter();
    for i in 0..out_rank {
        if norm.contains(&i) {
            dims.push(PrimExpr::int(1));
        } else {
            dims.push(src.next().cloned().ok_or("bad axes")?);
        }
    }
    if v.known.is_some() {
        return reshape_to(ctx, n, v, dims);
    }
    let a = x(ctx, n, 0)?;
    let ax: Vec<i64> = norm.iter().map(|&a| a as i64).collect();
    out1(ctx.op("expand_dims", vec![a], &[("axis", ints_attr(&ax))])?)
}

pub(crate) fn squeeze(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let s = v.shape.clone().ok_or("input has unknown shape")?;
    let axes = axes_input_or_attr(ctx, n, 13, 1)?;
    let norm: Vec<usize> = match &axes {
        Some(a) => a.iter().map(|&a| norm_axis(a, s.len())).collect::<Result<_, _>>()?,
        None => s
            .iter()
            .enumerate()
            .filter(|(_, d)| d.as_int() == Some(1))
            .map(|(i, _)| i)
            .collect(),
    };
    let dims: Vec<PrimExpr> = s
        .iter()
        .enumerate()
        .filter(|(i, _)| !norm.contains(i))
        .map(|(_, d)| d.clone())
        .collect();
    if v.known.is_some() {
        return reshape_to(ctx, n, v, dims);
    }
    let a = x(ctx, n, 0)?;
    let ax: Vec<i64> = norm.iter().map(|&a| a as i64).collect();
    out1(ctx.op("squeeze", vec![a], &[("axis", ints_attr(&ax))])?)
}

pub(crate) fn concat(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let names: Vec<String> = n.inputs.iter().filter(|s| !s.is_empty()).cloned().collect();
    let vals: Vec<TVal> = names.iter().map(|s| ctx.value(s).cloned()).collect::<Result<_, _>>()?;
    let first = vals.first().ok_or("no inputs")?;
    let rank = first.rank().ok_or("input has unknown rank")?;
    let axis = norm_axis(n.int("axis", 0), rank)?;
    // fold 1-D known values (shapes)
    if rank == 1
        && vals
            .iter()
            .all(|v| matches!(v.known, Some(Known::Int(_))) && v.const_shape().is_some())
    {
        let mut all = Vec::new();
        for v in &vals {
            if let Some(Known::Int(k)) = &v.known {
                all.extend(k.iter().cloned());
            }
        }
        let len = all.len() as i64;
        return out1(TVal::known(first.dtype, vec![len], Known::Int(all)));
    }
    let mut args = Vec::new();
    for name in &names {
        // skip empty inputs (shape 0 along the axis)
        let v = ctx.value(name)?;
        if v.shape.as_ref().and_then(|s| s.get(axis)).and_then(PrimExpr::as_int) == Some(0) && names.len() > 1 {
            continue;
        }
        args.push(ctx.tensor(name)?);
    }
    out1(ctx.op(
        "concat",
        vec![Expr::tuple(args)],
        &[("axis", AttrValue::Int(axis as i64))],
    )?)
}

pub(crate) fn split(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let s = shape_of(ctx, n, 0)?;
    let axis = norm_axis(n.int("axis", 0), s.len())?;
    let nout = n.outputs.len();
    let sizes = if n.opset >= 13 {
        if n.has(1) {
            Some(const_ints(ctx, n, 1)?)
        } else {
            None
        }
    } else {
        n.ints("split")
    };
    // a known 1-D tensor (a shape) splits into known parts
    let v = val(ctx, n, 0)?;
    if let (Some(Known::Int(k)), 1, Some(d)) = (&v.known, s.len(), s[0].as_int()) {
        let parts = if n.opset >= 18 {
            n.int("num_outputs", nout as i64)
        } else {
            nout as i64
        };
        let lens: Vec<i64> = match &sizes {
            Some(sz) => sz.clone(),
            None if parts > 0 => {
                let chunk = (d + parts - 1) / parts;
                (0..parts).map(|i| (d - i * chunk).clamp(0, chunk)).collect()
            }
            None => vec![],
        };
        if lens.len() == nout && lens.iter().sum::<i64>() == d && lens.iter().all(|&l| l >= 0) {
            let mut start = 0usize;
            let mut outs = Vec::new();
            for &l in &lens {
                let part = k[start..start + l as usize].to_vec();
                start += l as usize;
                outs.push(TVal::known(v.dtype, vec![l], Known::Int(part)));
            }
            return Ok(outs);
        }
    }
    let a = x(ctx, n, 0)?;
    let ios = match sizes {
        Some(sz) => {
            if sz.len() != nout {
                return Err(convert_err!("split has {} sizes for {nout} outputs", sz.len()));
            }
            let mut idx = Vec::new();
            let mut acc = 0;
            for v in &sz[..sz.len() - 1] {
                acc += v;
                idx.push(acc);
            }
            ints_attr(&idx)
        }
        None => {
            let parts = if n.opset >= 18 {
                n.int("num_outputs", nout as i64)
            } else {
                nout as i64
            };
            if let Some(d) = s[axis].as_int() {
                if d % parts != 0 {
                    // uneven: the last part is smaller (opset 18)
                    let chunk = (d + parts - 1) / parts;
                    let idx: Vec<i64> = (1..parts).map(|i| (i * chunk).min(d)).collect();
                    ints_attr(&idx)
                } else {
                    AttrValue::Int(parts)
                }
            } else {
                AttrValue::Int(parts)
            }
        }
    };
    let t = ctx.op_tuple(
        "split",
        vec![a],
        &[("indices_or_sections", ios), ("axis", AttrValue::Int(axis as i64))],
    )?;
    let mut outs = Vec::new();
    for i in 0..nout {
        outs.push(ctx.item(&t, i)?);
    }
    Ok(outs)
}

/// `Slice`'s starts, ends, axes and steps.
type SliceSpec = (Vec<PrimExpr>, Vec<PrimExpr>, Option<Vec<i64>>, Option<Vec<i64>>);

pub(crate) fn slice(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let s = v.shape.clone().ok_or("input has unknown shape")?;
    let rank = s.len();
    let (starts, ends, axes, steps): SliceSpec = if n.opset < 10 {
        (
            n.ints("starts")
                .ok_or("no starts")?
                .into_iter()
                .map(PrimExpr::int)
                .collect(),
            n.ints("ends")
                .ok_or("no ends")?
                .into_iter()
                .map(PrimExpr::int)
                .collect(),
            n.ints("axes"),
            None,
        )
    } else {
        (
            known_ints(ctx, n, 1)?,
            known_ints(ctx, n, 2)?,
            if n.has(3) { Some(const_ints(ctx, n, 3)?) } else { None },
            if n.has(4) { Some(const_ints(ctx, n, 4)?) } else { None },
        )
    };
    if starts.len() != ends.len() {
        return Err("starts and ends differ in length".into());
    }
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if axes.len() != starts.len() || steps.len() != starts.len() {
        return Err("axes or steps differ in length from starts".into());
    }
    let mut ax = Vec::new();
    let mut b = Vec::new();
    let mut e = Vec::new();
    // normalized (begin, end, step) per axis, for folding
    let mut per_axis: Vec<(usize, PrimExpr, PrimExpr, i64)> = Vec::new();
    for i in 0..starts.len() {
        let a = norm_axis(axes[i], rank)?;
        let st = steps[i];
        if st == 0 {
            return Err("step 0".into());
        }
        let dim = &s[a];
        let norm = |p: &PrimExpr, is_end: bool| -> PrimExpr {
            match p.as_int() {
                Some(c) if c >= i64::MAX / 2 => {
                    if st > 0 {
                        dim.clone()
                    } else {
                        ctx.bin(BinOp::Sub, dim, &PrimExpr::int(1))
                    }
                }
                Some(c) if c <= i64::MIN / 2 => {
                    if st > 0 {
                        PrimExpr::int(0)
                    } else {
                        PrimExpr::int(-1)
                    }
                }
                Some(c) if c < 0 && st > 0 => {
                    let r = ctx.bin(BinOp::Add, dim, &PrimExpr::int(c));
                    ctx.bin(BinOp::Max, &r, &PrimExpr::int(0))
                }
                Some(c) if st > 0 => match dim.as_int() {
                    Some(d) => PrimExpr::int(c.min(d)),
                    None => {
                        let _ = is_end;
                        ctx.bin(BinOp::Min, &PrimExpr::int(c), dim)
                    }
                },
                _ => p.clone(),
            }
        };
        let (bb, ee) = (norm(&starts[i], false), norm(&ends[i], true));
        ax.push(a);
        b.push(bb.clone());
        e.push(ee.clone());
        per_axis.push((a, bb, ee, st));
    }
    // fold 1-D known values
    if let (Some(Known::Int(k)), Some(cs)) = (&v.known, v.const_shape()) {
        if cs.len() == 1 && per_axis.len() == 1 {
            let (_, bb, ee, st) = &per_axis[0];
            if let (Some(bi), Some(ei)) = (bb.as_int(), ee.as_int()) {
                let d = cs[0];
                let mut out = Vec::new();
                let mut i = bi;
                if *st > 0 {
                    let (lo, hi) = (bi.clamp(0, d), ei.clamp(0, d));
                    i = lo;
                    while i < hi {
                        out.push(k[i as usize].clone());
                        i += st;
                    }
                } else {
                    let (hi, lo) = (bi.clamp(-1, d - 1), ei.clamp(-1, d - 1));
                    i = i.min(hi);
                    while i > lo {
                        out.push(k[i as usize].clone());
                        i += st;
                    }
                }
                let len = out.len() as i64;
                return out1(TVal::known(v.dtype, vec![len], Known::Int(out)));
            }
        }
    }
    let a = x(ctx, n, 0)?;
    let tuple = |v: Vec<Expr>| Expr::tuple(v);
    out1(ctx.op(
        "strided_slice",
        vec![
            a,
            tuple(ax.iter().map(|&i| prim_int(PrimExpr::int(i as i64))).collect()),
            tuple(b.into_iter().map(prim_int).collect()),
            tuple(e.into_iter().map(prim_int).collect()),
            tuple(steps.iter().map(|&i| prim_int(PrimExpr::int(i))).collect()),
        ],
        &[],
    )?)
}

pub(crate) fn gather(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let data = val(ctx, n, 0)?;
    let idx = val(ctx, n, 1)?;
    let s = data.shape.clone().ok_or("data has unknown shape")?;
    let axis = norm_axis(n.int("axis", 0), s.len())?;
    let dim = s[axis].as_int();
    // fold: gather from a known 1-D value with constant indices
    if let (Some(Known::Int(k)), Some(ci), Some(ishape)) = (&data.known, idx.const_ints(), idx.const_shape()) {
        if s.len() == 1 {
            let d = k.len() as i64;
            let picked: Option<Vec<PrimExpr>> = ci
                .iter()
                .map(|&i| {
                    let j = if i < 0 { i + d } else { i };
                    (0..d).contains(&j).then(|| k[j as usize].clone())
                })
                .collect();
            if let Some(p) = picked {
                return out1(TVal::known(data.dtype, ishape, Known::Int(p)));
            }
        }
    }
    let a = x(ctx, n, 0)?;
    // constant negative indices are normalized here
    let ie = match (idx.const_ints(), dim, idx.const_shape()) {
        (Some(ci), Some(d), Some(ishape)) if ci.iter().any(|&i| i < 0) => {
            let fixed: Vec<Vec<u8>> = ci
                .iter()
                .map(|&i| tensor::encode_int(DataType::INT64, if i < 0 { i + d } else { i }))
                .collect();
            crate::convert::constant(DataType::INT64, ishape, fixed.into_iter())
        }
        (None, Some(d), _) => {
            let i = x(ctx, n, 1)?;
            wrap_negative(ctx, i, idx.dtype, d)?
        }
        _ => x(ctx, n, 1)?,
    };
    out1(ctx.op("take", vec![a, ie], &[("axis", AttrValue::Int(axis as i64))])?)
}

/// `where(i < 0, i + dim, i)`: ONNX's negative indices count from the end.
pub(crate) fn wrap_negative(ctx: &mut Ctx, i: Expr, dtype: DataType, dim: i64) -> Result<Expr, ConvertError> {
    if dtype.is_uint() {
        return Ok(i);
    }
    wrap_below_zero(ctx, i, dtype, scalar(dtype, dim as f64))
}

/// `where(i < 0, i + bound, i)` (`bound` a scalar or a tensor broadcast against `i`).
fn wrap_below_zero(ctx: &mut Ctx, i: Expr, dtype: DataType, bound: Expr) -> Result<Expr, ConvertError> {
    let c = emit2(ctx, "less", i.clone(), scalar(dtype, 0.0))?;
    let cl = leaf(ctx, &c)?;
    let s = emit2(ctx, "add", i.clone(), bound)?;
    let sl = leaf(ctx, &s)?;
    let w = ctx.op("where", vec![cl, sl, i], &[])?;
    leaf(ctx, &w)
}

/// GatherND's indices with negative components counted from the end of the axis each
/// indexes (ONNX allows `[-s, s - 1]`; Relax's `gather_nd` reads them as they are):
/// `where(i < 0, i + dims, i)` with `dims` the extents of the indexed data axes,
/// broadcast along the last axis. Left as they are when those extents or the index
/// tuple's length are not known at import, or the indices are unsigned.
fn wrap_negative_nd(ctx: &mut Ctx, n: &Node, batch_dims: i64) -> Result<Expr, ConvertError> {
    let i = x(ctx, n, 1)?;
    let it = val(ctx, n, 1)?;
    if it.dtype.is_uint() || it.const_ints().is_some_and(|c| c.iter().all(|&v| v >= 0)) {
        return Ok(i);
    }
    let (ds, is) = (shape_of(ctx, n, 0)?, shape_of(ctx, n, 1)?);
    let (Some(k), Ok(b)) = (is.last().and_then(|d| d.as_int()), usize::try_from(batch_dims)) else {
        return Ok(i);
    };
    let dims: Option<Vec<i64>> = (0..k.max(0) as usize)
        .map(|j| ds.get(b + j).and_then(|d| d.as_int()))
        .collect();
    let Some(dims) = dims.filter(|d| !d.is_empty()) else {
        return Ok(i);
    };
    let bound = crate::convert::constant(
        it.dtype,
        vec![dims.len() as i64],
        dims.iter().map(|&d| tensor::encode_int(it.dtype, d)),
    );
    wrap_below_zero(ctx, i, it.dtype, bound)
}

pub(crate) fn gather_elements(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let shape = shape_of(ctx, n, 0)?;
    let axis = norm_axis(n.int("axis", 0), shape.len())?;
    let a = x(ctx, n, 0)?;
    let i = x(ctx, n, 1)?;
    let it = val(ctx, n, 1)?;
    let i = match (it.const_ints(), shape[axis].as_int()) {
        (None, Some(d)) => wrap_negative(ctx, i, it.dtype, d)?,
        _ => i,
    };
    out1(ctx.op("gather_elements", vec![a, i], &[("axis", AttrValue::Int(axis as i64))])?)
}

pub(crate) fn gather_nd(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = x(ctx, n, 0)?;
    let b = n.int("batch_dims", 0);
    let i = wrap_negative_nd(ctx, n, b)?;
    let (Some(ds), Some(is)) = (val(ctx, n, 0)?.const_shape(), val(ctx, n, 1)?.const_shape()) else {
        return out1(ctx.op("gather_nd", vec![a, i], &[("batch_dims", AttrValue::Int(b))])?);
    };
    if b <= 0 || b as usize >= is.len() || b as usize > ds.len() || ds[..b as usize] != is[..b as usize] {
        return out1(ctx.op("gather_nd", vec![a, i], &[("batch_dims", AttrValue::Int(b))])?);
    }
    // batch dimensions as a leading index: the data's batch axes flattened into one,
    // each index tuple prefixed with its flat batch number
    let b = b as usize;
    let batches: i64 = ds[..b].iter().product();
    let mut dshape = vec![batches];
    dshape.extend_from_slice(&ds[b..]);
    let a = reshape_expr(ctx, a, ints(&dshape))?;
    let idt = val(ctx, n, 1)?.dtype;
    let i = if idt == DataType::INT64 {
        i
    } else {
        emit(
            ctx,
            "astype",
            vec![i],
            &[("dtype", AttrValue::DataType(DataType::INT64))],
        )?
    };
    let mut one = is.clone();
    *one.last_mut().ok_or("indices must have a last axis")? = 1;
    let inner: i64 = one[b..].iter().product();
    let flat: Vec<i64> = (0..batches)
        .flat_map(|k| std::iter::repeat_n(k, inner as usize))
        .collect();
    let prefix = crate::convert::constant(DataType::INT64, one, flat.iter().map(|v| v.to_le_bytes().to_vec()));
    let i = concat_exprs(ctx, vec![prefix, i], -1)?;
    out1(ctx.op("gather_nd", vec![a, i], &[("batch_dims", AttrValue::Int(0))])?)
}

pub(crate) fn reduction_attr(n: &Node) -> Result<AttrValue, ConvertError> {
    Ok(AttrValue::Str(match n.string("reduction").as_deref() {
        None | Some("none") => "update".into(),
        Some("add") => "add".into(),
        Some("mul") => "mul".into(),
        Some("max") => "max".into(),
        Some("min") => "min".into(),
        Some(o) => return Err(convert_err!(Unsupported;"reduction `{o}` is not supported")),
    }))
}

pub(crate) fn scatter_elements(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let axis = norm_axis(n.int("axis", 0), rank)?;
    let (a, i, u) = (x(ctx, n, 0)?, x(ctx, n, 1)?, x(ctx, n, 2)?);
    out1(ctx.op(
        "scatter_elements",
        vec![a, i, u],
        &[("axis", AttrValue::Int(axis as i64)), ("reduction", reduction_attr(n)?)],
    )?)
}

pub(crate) fn scatter_nd(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let (a, i, u) = (x(ctx, n, 0)?, x(ctx, n, 1)?, x(ctx, n, 2)?);
    out1(ctx.op("scatter_nd", vec![a, i, u], &[("reduction", reduction_attr(n)?)])?)
}

pub(crate) fn expand(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let s = v.shape.clone().ok_or("input has unknown shape")?;
    let target = known_ints(ctx, n, 1)?;
    let r = s.len().max(target.len());
    let mut dims = Vec::with_capacity(r);
    for i in 0..r {
        let di = (i + s.len()).checked_sub(r).map(|j| s[j].clone());
        let dt = (i + target.len()).checked_sub(r).map(|j| target[j].clone());
        dims.push(match (di, dt) {
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (Some(a), Some(b)) => {
                if b.as_int() == Some(1) {
                    a
                } else if a.as_int() == Some(1) {
                    b
                } else if ctx.ana.can_prove_equal(&a, &b) {
                    a
                } else {
                    // -1 or a symbolic target: keep the input's dimension
                    if b.as_int().is_some_and(|x| x < 0) {
                        a
                    } else {
                        b
                    }
                }
            }
            (None, None) => unreachable_dim()?,
        });
    }
    if v.shape
        .as_ref()
        .is_some_and(|s| s.len() == dims.len() && s.iter().zip(&dims).all(|(a, b)| ctx.ana.can_prove_equal(a, b)))
    {
        return out1(v);
    }
    // fold known values broadcast to constant shapes
    if let (Some(Known::Int(k)), Some(cs)) = (&v.known, v.const_shape()) {
        if let Some(cd) = dims.iter().map(PrimExpr::as_int).collect::<Option<Vec<i64>>>() {
            let numel = const_product(&cd);
            if (0..=4096).contains(&numel) {
                let vals = (0..numel as usize)
                    .map(|j| k[bcast_index(j, &cd, &cs)].clone())
                    .collect();
                return out1(TVal::known(v.dtype, cd, Known::Int(vals)));
            }
        }
    }
    let a = x(ctx, n, 0)?;
    out1(ctx.op("broadcast_to", vec![a, Expr::shape(dims)], &[])?)
}

pub(crate) fn unreachable_dim() -> Result<PrimExpr, ConvertError> {
    Err(ConvertError::internal("internal: broadcast dimension"))
}

pub(crate) fn tile(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let reps = const_ints(ctx, n, 1)?;
    let a = x(ctx, n, 0)?;
    out1(ctx.op("tile", vec![a], &[("repeats", ints_attr(&reps))])?)
}

pub(crate) fn range(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let dt = val(ctx, n, 0)?.dtype;
    let scalar_of = |ctx: &Ctx, i: usize| -> Result<PrimExpr, ConvertError> {
        let v = val(ctx, n, i)?;
        match &v.known {
            Some(Known::Int(k)) if k.len() == 1 => Ok(k[0].clone()),
            // integral float bounds count in integers, so the length stays exact
            Some(Known::Float(k)) if k.len() == 1 && k[0].fract() == 0.0 && k[0].abs() < 1e15 => {
                Ok(PrimExpr::int(k[0] as i64))
            }
            Some(Known::Float(k)) if k.len() == 1 => Ok(PrimExpr::float_of(k[0], DataType::FLOAT64)),
            _ => Err(must_be_known(n, i)),
        }
    };
    let (start, limit, delta) = (scalar_of(ctx, 0)?, scalar_of(ctx, 1)?, scalar_of(ctx, 2)?);
    if let (Some(s), Some(l), Some(d)) = (start.as_int(), limit.as_int(), delta.as_int()) {
        if d != 0 {
            let count = ((l - s) as f64 / d as f64).ceil().max(0.0) as i64;
            if count <= 4096 {
                let vals = (0..count).map(|i| PrimExpr::int(s + i * d)).collect();
                return out1(TVal::known(dt, vec![count], Known::Int(vals)));
            }
        }
    }
    let p = |e: PrimExpr| {
        if e.dtype().is_int() {
            prim_int(e)
        } else {
            Expr::new(ExprKind::PrimValue(e))
        }
    };
    out1(ctx.op(
        "arange",
        vec![p(start), p(limit), p(delta)],
        &[("dtype", AttrValue::DataType(dt))],
    )?)
}

pub(crate) fn pad(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let rank = v.rank().ok_or("input has unknown rank")?;
    let (pads, value) = if n.opset < 11 {
        (n.ints("pads").ok_or("no pads")?, n.float("value", 0.0))
    } else {
        let pads = const_ints(ctx, n, 1)?;
        let value = if n.has(2) {
            val(ctx, n, 2)?
                .const_floats()
                .and_then(|v| v.first().copied())
                .ok_or_else(|| must_be_known(n, 2))?
        } else {
            0.0
        };
        (pads, value)
    };
    let axes: Vec<usize> = if n.opset >= 18 && n.has(3) {
        const_ints(ctx, n, 3)?
            .iter()
            .map(|&a| norm_axis(a, rank))
            .collect::<Result<_, _>>()?
    } else {
        (0..rank).collect()
    };
    if pads.len() != 2 * axes.len() {
        return Err("pads do not match the axes".into());
    }
    let mut width = vec![0i64; 2 * rank];
    for (i, &a) in axes.iter().enumerate() {
        width[2 * a] = pads[i];
        width[2 * a + 1] = pads[i + axes.len()];
    }
    let mode = match n.string("mode").as_deref() {
        None | Some("constant") => "constant",
        Some("reflect") => "reflect",
        Some(m @ ("edge" | "wrap")) => {
            let shape = v.const_shape().ok_or("edge and wrap padding need a static shape")?;
            let a = x(ctx, n, 0)?;
            return out1(pad_by_slices(ctx, a, &shape, &width, m == "wrap")?);
        }
        Some(o) => return Err(convert_err!(Unsupported;"mode `{o}` is not supported")),
    };
    let a = x(ctx, n, 0)?;
    out1(ctx.op(
        "nn.pad",
        vec![a],
        &[
            ("pad_width", ints_attr(&width)),
            ("pad_value", AttrValue::Float(value)),
            ("pad_mode", AttrValue::Str(mode.into())),
        ],
    )?)
}

pub(crate) fn trilu(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let k = if n.has(1) {
        known_ints(ctx, n, 1)?.first().cloned().ok_or("k must hold one value")?
    } else {
        PrimExpr::int(0)
    };
    let a = x(ctx, n, 0)?;
    let op = if n.int("upper", 1) != 0 { "triu" } else { "tril" };
    out1(ctx.op(op, vec![a, prim_int(k)], &[])?)
}

/// `EyeLike`: ones on the `k`-th diagonal of a 2-D tensor of the input's shape, a
/// constant.
pub(crate) fn eye_like(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let s = v.const_shape().ok_or("EyeLike needs a static shape")?;
    if s.len() != 2 {
        return Err("the input must be 2-D".into());
    }
    let dt = match n.attr_i("dtype") {
        Some(t) => tensor::dtype_of(t as i32).ok_or_else(|| convert_err!(Unsupported;"dtype {t} is not supported"))?,
        None => v.dtype,
    };
    let k = n.int("k", 0);
    let mut data = Vec::new();
    for i in 0..s[0] {
        for j in 0..s[1] {
            data.extend(tensor::encode(dt, (j - i == k) as i64 as f64));
        }
    }
    let out = n.outputs.first().cloned().unwrap_or_default();
    out1(array_value(
        &out,
        NDArray {
            dtype: dt,
            shape: s,
            data,
        },
    ))
}

/// `OneHot`: `values[1]` where the (wrapped) index equals the position along `axis`,
/// else `values[0]`; the depth must be known when importing.
pub(crate) fn one_hot(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let iv = val(ctx, n, 0)?;
    let rank = iv.rank().ok_or("indices of unknown rank")?;
    let depth = match val(ctx, n, 1)?.known {
        Some(Known::Int(v)) if v.len() == 1 => v[0].as_int().ok_or("a symbolic depth")?,
        Some(Known::Float(v)) if v.len() == 1 => v[0] as i64,
        _ => return Err(super::must_be_known(n, 1)),
    };
    let axis = norm_axis(n.int("axis", -1), rank + 1)?;
    let i = x(ctx, n, 0)?;
    let i = astype(ctx, i, iv.dtype, DataType::INT64)?;
    let neg = emit(ctx, "less", vec![i.clone(), scalar(DataType::INT64, 0.0)], &[])?;
    let wrapped = emit(ctx, "add", vec![i.clone(), scalar(DataType::INT64, depth as f64)], &[])?;
    let i = emit(ctx, "where", vec![neg, wrapped, i], &[])?;
    let p = |v: i64| Expr::new(ExprKind::PrimValue(PrimExpr::int(v)));
    let oh = emit(
        ctx,
        "one_hot",
        vec![i, p(1), p(0)],
        &[("depth", AttrValue::Int(depth)), ("axis", AttrValue::Int(axis as i64))],
    )?;
    let cond = emit(
        ctx,
        "astype",
        vec![oh],
        &[("dtype", AttrValue::DataType(DataType::BOOL))],
    )?;
    let values = x(ctx, n, 2)?;
    let take = |ctx: &mut Ctx, k: i64| -> Result<Expr, ConvertError> {
        let idx = crate::convert::constant(DataType::INT64, vec![], std::iter::once(k.to_le_bytes().to_vec()));
        emit(ctx, "take", vec![values.clone(), idx], &[("axis", AttrValue::Int(0))])
    };
    let (off, on) = (take(ctx, 0)?, take(ctx, 1)?);
    out1(ctx.op("where", vec![cond, on, off], &[])?)
}

/// `ReverseSequence`: `R.reverse_sequence`.
pub(crate) fn reverse_sequence(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let (a, l) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    out1(ctx.op(
        "reverse_sequence",
        vec![a, l],
        &[
            ("seq_axis", AttrValue::Int(n.int("time_axis", 0))),
            ("batch_axis", AttrValue::Int(n.int("batch_axis", 1))),
        ],
    )?)
}

/// `CenterCropPad`: a centered slice where the target is smaller, a centered zero pad
/// where it is larger.
pub(crate) fn center_crop_pad(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let shape = val(ctx, n, 0)?.const_shape().ok_or("a static input shape is needed")?;
    let r = shape.len();
    let target: Vec<i64> = match val(ctx, n, 1)?.const_ints() {
        Some(t) => t,
        None => return Err(super::must_be_known(n, 1)),
    };
    let axes: Vec<usize> = match n.ints("axes") {
        Some(a) => a.iter().map(|&v| norm_axis(v, r)).collect::<Result<_, _>>()?,
        None => (0..r).collect(),
    };
    if target.len() != axes.len() {
        return Err("shape does not match the axes".into());
    }
    let mut cur = x(ctx, n, 0)?;
    let mut width = vec![0i64; 2 * r];
    for (&a, &sh) in axes.iter().zip(&target) {
        let dim = shape[a];
        if sh < dim {
            let d = (dim - sh) / 2;
            cur = slice_axis(ctx, cur, a as i64, d, d + sh, 1)?;
        } else if sh > dim {
            let d = (sh - dim) / 2;
            width[2 * a] = d;
            width[2 * a + 1] = sh - dim - d;
        }
    }
    if width.iter().any(|&w| w != 0) {
        cur = emit(
            ctx,
            "nn.pad",
            vec![cur],
            &[
                ("pad_width", ints_attr(&width)),
                ("pad_value", AttrValue::Float(0.0)),
                ("pad_mode", AttrValue::Str("constant".into())),
            ],
        )?;
    }
    out1(tval_leaf(ctx, cur).or_else(|_| val(ctx, n, 0))?)
}

/// `TensorScatter`: the update written into the cache along `axis` from each batch
/// entry's write index (wrapping around in `circular` mode), a `scatter_elements`.
pub(crate) fn tensor_scatter(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let cache = val(ctx, n, 0)?.const_shape().ok_or("a static cache shape is needed")?;
    let upd = val(ctx, n, 1)?.const_shape().ok_or("a static update shape is needed")?;
    let r = cache.len();
    if upd.len() != r || r < 2 {
        return Err("the cache and the update must have the same rank (at least 2)".into());
    }
    let axis = norm_axis(n.int("axis", -2), r)?;
    if axis == 0 {
        return Err("the axis cannot be the batch axis".into());
    }
    let i64t = DataType::INT64;
    let mut pos_shape = vec![1i64; r];
    pos_shape[axis] = upd[axis];
    let pos = crate::convert::constant(i64t, pos_shape, (0..upd[axis]).map(|v| v.to_le_bytes().to_vec()));
    let idx = if n.has(2) {
        let wv = val(ctx, n, 2)?;
        let w = x(ctx, n, 2)?;
        let w = astype(ctx, w, wv.dtype, i64t)?;
        let mut ws = vec![1i64; r];
        ws[0] = cache[0];
        let w = reshape_expr(ctx, w, ints(&ws))?;
        emit(ctx, "add", vec![w, pos], &[])?
    } else {
        pos
    };
    let idx = match n.string("mode").as_deref() {
        None | Some("linear") => idx,
        Some("circular") => emit(ctx, "floor_mod", vec![idx, scalar(i64t, cache[axis] as f64)], &[])?,
        Some(o) => return Err(convert_err!(Unsupported;"mode `{o}` is not supported")),
    };
    let idx = emit(ctx, "broadcast_to", vec![idx, Expr::shape(ints(&upd))], &[])?;
    let (c, u) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    out1(ctx.op(
        "scatter_elements",
        vec![c, idx, u],
        &[
            ("axis", AttrValue::Int(axis as i64)),
            ("reduction", AttrValue::Str("update".into())),
        ],
    )?)
}

/// `ArrayFeatureExtractor` (domain `ai.onnx.ml`): the elements at the given indices of
/// the last axis.
pub(crate) fn array_feature_extractor(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let rank = rank_of(ctx, n, 0)?;
    let (a, i) = (x(ctx, n, 0)?, x(ctx, n, 1)?);
    let iv = val(ctx, n, 1)?;
    let i = astype(ctx, i, iv.dtype, DataType::INT64)?;
    let count: i64 = iv
        .const_shape()
        .ok_or("the indices need a static shape")?
        .iter()
        .product();
    let i = reshape_expr(ctx, i, ints(&[count]))?;
    out1(ctx.op("take", vec![a, i], &[("axis", AttrValue::Int(rank as i64 - 1))])?)
}

/// Edge or wrap padding of `a` (static `shape`) by ONNX-ordered `width`
/// (`[begin_0, end_0, begin_1, ...]` in Relax's order), built from slices and concats.
pub(crate) fn pad_by_slices(
    ctx: &mut Ctx,
    a: Expr,
    shape: &[i64],
    width: &[i64],
    wrap: bool,
) -> Result<TVal, ConvertError> {
    let mut cur = a;
    for (ax, &d) in shape.iter().enumerate() {
        let (lo, hi) = (width[2 * ax], width[2 * ax + 1]);
        if lo < 0 || hi < 0 {
            return Err(ConvertError::unsupported(
                "negative pads are not supported with edge or wrap",
            ));
        }
        if lo == 0 && hi == 0 {
            continue;
        }
        if d == 0 || (wrap && (lo > d || hi > d)) {
            return Err("the padding exceeds the axis".into());
        }
        let ax = ax as i64;
        let mut parts = Vec::new();
        if lo > 0 {
            parts.push(if wrap {
                slice_axis(ctx, cur.clone(), ax, d - lo, d, 1)?
            } else {
                let s = slice_axis(ctx, cur.clone(), ax, 0, 1, 1)?;
                emit(
                    ctx,
                    "repeat",
                    vec![s],
                    &[("repeats", AttrValue::Int(lo)), ("axis", AttrValue::Int(ax))],
                )?
            });
        }
        parts.push(cur.clone());
        if hi > 0 {
            parts.push(if wrap {
                slice_axis(ctx, cur.clone(), ax, 0, hi, 1)?
            } else {
                let s = slice_axis(ctx, cur.clone(), ax, d - 1, d, 1)?;
                emit(
                    ctx,
                    "repeat",
                    vec![s],
                    &[("repeats", AttrValue::Int(hi)), ("axis", AttrValue::Int(ax))],
                )?
            });
        }
        cur = concat_exprs(ctx, parts, ax)?;
    }
    tval_leaf(ctx, cur)
}

/// `Compress`: the slices along `axis` (the flattened input without one) whose
/// condition is true; the condition must be known when importing.
pub(crate) fn compress(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let cond = val(ctx, n, 1)?.const_ints().ok_or_else(|| super::must_be_known(n, 1))?;
    let shape = val(ctx, n, 0)?.const_shape().ok_or("a static input shape is needed")?;
    let mut a = x(ctx, n, 0)?;
    let (axis, len) = match n.attr_i("axis") {
        Some(ax) => {
            let axis = norm_axis(ax, shape.len())?;
            (axis, shape[axis])
        }
        None => {
            let numel: i64 = shape.iter().product();
            a = reshape_expr(ctx, a, ints(&[numel]))?;
            (0, numel)
        }
    };
    let keep: Vec<i64> = cond
        .iter()
        .take(len as usize)
        .enumerate()
        .filter(|(_, &c)| c != 0)
        .map(|(i, _)| i as i64)
        .collect();
    let idx = crate::convert::constant(
        DataType::INT64,
        vec![keep.len() as i64],
        keep.iter().map(|v| v.to_le_bytes().to_vec()),
    );
    out1(ctx.op("take", vec![a, idx], &[("axis", AttrValue::Int(axis as i64))])?)
}

/// `OptionalHasElement`: whether the (tensor) input is given, a constant.
pub(crate) fn optional_has_element(_ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let out = n.outputs.first().cloned().unwrap_or_default();
    let has = n.has(0) as u8;
    out1(array_value(
        &out,
        NDArray {
            dtype: DataType::BOOL,
            shape: vec![],
            data: vec![has],
        },
    ))
}

/// `OptionalGetElement` of a tensor: the tensor.
pub(crate) fn optional_get_element(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    out1(val(ctx, n, 0)?)
}
