//! Operators whose output shape depends on the input values (`NonZero`, `Unique`,
//! `NonMaxSuppression`): evaluated when the model is imported, from inputs known
//! then (constants, initializers, values folded from shapes). An input computed at
//! run time is an error naming it: the program's shapes would not be known.

use super::*;

/// Input `i` as an array, when its contents are known at import time.
fn known_array(ctx: &Ctx, n: &Node, i: usize) -> Result<NDArray, ConvertError> {
    let v = val(ctx, n, i)?;
    if let Some((_, a)) = &v.init {
        return Ok(NDArray::clone(a));
    }
    let shape = v.const_shape().ok_or_else(|| must_be_known(n, i))?;
    let data: Vec<u8> = if v.dtype.is_float() {
        let f = v.const_floats().ok_or_else(|| must_be_known(n, i))?;
        f.iter().flat_map(|&x| tensor::encode(v.dtype, x)).collect()
    } else {
        let k = v.const_ints().ok_or_else(|| must_be_known(n, i))?;
        k.iter().flat_map(|&x| tensor::encode_int(v.dtype, x)).collect()
    };
    let a = NDArray {
        dtype: v.dtype,
        shape,
        data,
    };
    if a.data.len() != a.numel() * a.dtype.bytes().max(1) {
        return Err(must_be_known(n, i));
    }
    Ok(a)
}

/// Element `k` of a known array as `f64` (an error for a type it cannot read).
fn elem(a: &NDArray, k: usize) -> Result<f64, ConvertError> {
    tensor::elem_f64(a, k).ok_or_else(|| convert_err!("cannot read elements of type {}", a.dtype))
}

/// An int64 array of `shape`.
fn i64_array(shape: Vec<i64>, v: &[i64]) -> NDArray {
    NDArray {
        dtype: DataType::INT64,
        shape,
        data: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

fn out_name(n: &Node, k: usize) -> String {
    n.outputs.get(k).cloned().unwrap_or_default()
}

/// `NonZero`: the indices of the nonzero elements, `(rank, count)` int64 in row-major
/// order (as `R.nonzero`).
pub(crate) fn nonzero(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = known_array(ctx, n, 0)?;
    let shape = a.shape.clone();
    let rank = shape.len();
    let mut hits = Vec::new();
    for k in 0..a.numel() {
        if elem(&a, k)? != 0.0 {
            hits.push(k as i64);
        }
    }
    let mut idx = vec![0i64; rank.max(1) * hits.len()];
    for (j, &flat) in hits.iter().enumerate() {
        let mut rem = flat;
        for d in (0..rank).rev() {
            let s = shape[d].max(1);
            idx[d * hits.len() + j] = rem % s;
            rem /= s;
        }
    }
    // a scalar counts as one axis of length one (ONNX's reference and TVM agree)
    let rows = rank.max(1) as i64;
    if rank == 0 {
        idx.iter_mut().for_each(|v| *v = 0);
    }
    let out = i64_array(vec![rows, hits.len() as i64], &idx);
    out1(array_value(&out_name(n, 0), out))
}

/// Compare two keys (slices of `f64`) lexicographically; -0 equals 0, NaN last.
fn cmp_keys(a: &[f64], b: &[f64]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match x.partial_cmp(y) {
            Some(o) => o,
            None => x.is_nan().cmp(&y.is_nan()),
        };
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    std::cmp::Ordering::Equal
}

/// `Unique`: the distinct elements (or slices along `axis`) sorted ascending or in
/// order of first occurrence (`sorted = 0`), with the index of each one's first
/// occurrence, each input element's index in the result, and the counts (as
/// `R.unique` with every output returned).
pub(crate) fn unique(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let a = known_array(ctx, n, 0)?;
    let sorted = n.int("sorted", 1) != 0;
    let eb = a.dtype.bytes().max(1);
    // (outer, len, inner): the slices along the axis, or every element
    let (axis, outer, len, inner) = match n.attr_i("axis") {
        Some(ax) => {
            let axis = norm_axis(ax, a.shape.len())?;
            let outer: i64 = a.shape[..axis].iter().product();
            let inner: i64 = a.shape[axis + 1..].iter().product();
            (Some(axis), outer as usize, a.shape[axis] as usize, inner as usize)
        }
        None => (None, 1, a.numel(), 1),
    };
    // the key of slice j: its elements in row-major order of the other axes
    let pos = |j: usize, o: usize, i: usize| (o * len + j) * inner + i;
    let mut keys: Vec<Vec<f64>> = Vec::with_capacity(len);
    for j in 0..len {
        let mut k = Vec::with_capacity(outer * inner);
        for o in 0..outer {
            for i in 0..inner {
                let v = elem(&a, pos(j, o, i))?;
                k.push(if v == 0.0 { 0.0 } else { v });
            }
        }
        keys.push(k);
    }
    // first occurrences in order
    let mut firsts: Vec<usize> = Vec::new();
    let mut inverse_first = vec![0usize; len];
    for j in 0..len {
        match firsts
            .iter()
            .position(|&f| cmp_keys(&keys[f], &keys[j]) == std::cmp::Ordering::Equal)
        {
            Some(p) => inverse_first[j] = p,
            None => {
                inverse_first[j] = firsts.len();
                firsts.push(j);
            }
        }
    }
    let mut order: Vec<usize> = (0..firsts.len()).collect();
    if sorted {
        order.sort_by(|&p, &q| cmp_keys(&keys[firsts[p]], &keys[firsts[q]]));
    }
    let mut rank_of_first = vec![0usize; firsts.len()];
    for (r, &p) in order.iter().enumerate() {
        rank_of_first[p] = r;
    }
    let u = order.len();
    let mut counts = vec![0i64; u];
    let inverse: Vec<i64> = inverse_first
        .iter()
        .map(|&p| {
            counts[rank_of_first[p]] += 1;
            rank_of_first[p] as i64
        })
        .collect();
    let indices: Vec<i64> = order.iter().map(|&p| firsts[p] as i64).collect();
    // Y: the chosen slices, bytes copied
    let mut data = Vec::with_capacity(outer * u * inner * eb);
    for o in 0..outer {
        for &p in &order {
            let j = firsts[p];
            for i in 0..inner {
                let s = pos(j, o, i) * eb;
                data.extend_from_slice(a.data.get(s..s + eb).ok_or("input data too short")?);
            }
        }
    }
    let yshape = match axis {
        Some(ax) => {
            let mut s = a.shape.clone();
            s[ax] = u as i64;
            s
        }
        None => vec![u as i64],
    };
    let y = NDArray {
        dtype: a.dtype,
        shape: yshape,
        data,
    };
    Ok(vec![
        array_value(&out_name(n, 0), y),
        array_value(&out_name(n, 1), i64_array(vec![u as i64], &indices)),
        array_value(&out_name(n, 2), i64_array(vec![len as i64], &inverse)),
        array_value(&out_name(n, 3), i64_array(vec![u as i64], &counts)),
    ])
}

/// Corners `(x1, y1, x2, y2)` of box `b` (ordered) in either box format.
fn corners(b: [f32; 4], center: bool) -> [f32; 4] {
    if center {
        let [xc, yc, w, h] = b;
        [xc - w / 2.0, yc - h / 2.0, xc + w / 2.0, yc + h / 2.0]
    } else {
        let [y1, x1, y2, x2] = b;
        [x1.min(x2), y1.min(y2), x1.max(x2), y1.max(y2)]
    }
}

/// Whether boxes `a` and `b` (corners) overlap by more than `threshold` (IoU).
fn suppresses(a: [f32; 4], b: [f32; 4], threshold: f32) -> bool {
    let area = |c: [f32; 4]| (c[2] - c[0]) * (c[3] - c[1]);
    let (aa, ab) = (area(a), area(b));
    if aa <= 0.0 || ab <= 0.0 {
        return false;
    }
    let w = a[2].min(b[2]) - a[0].max(b[0]);
    let h = a[3].min(b[3]) - a[1].max(b[1]);
    if w <= 0.0 || h <= 0.0 {
        return false;
    }
    let inter = w * h;
    inter / (aa + ab - inter) > threshold
}

/// `NonMaxSuppression`: per batch and class, the boxes scoring above
/// `score_threshold` taken greedily by descending score (ties by index), each dropped
/// when it overlaps a kept one by more than `iou_threshold`, at most
/// `max_output_boxes_per_class`; `(count, 3)` rows of (batch, class, box) in int64
/// (as onnxruntime, which ONNX's reference follows).
pub(crate) fn non_max_suppression(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let boxes = known_array(ctx, n, 0)?;
    let scores = known_array(ctx, n, 1)?;
    let scalar_in = |ctx: &Ctx, i: usize| -> Result<Option<f64>, ConvertError> {
        if !n.has(i) {
            return Ok(None);
        }
        let a = known_array(ctx, n, i)?;
        if a.numel() == 0 {
            return Ok(None);
        }
        elem(&a, 0).map(Some)
    };
    let max_out = scalar_in(ctx, 2)?.unwrap_or(0.0).max(0.0) as usize;
    let iou = scalar_in(ctx, 3)?.unwrap_or(0.0) as f32;
    let score_th = scalar_in(ctx, 4)?.map(|v| v as f32);
    let center = n.int("center_point_box", 0) != 0;
    let (bs, ss) = (&boxes.shape, &scores.shape);
    if bs.len() != 3 || bs[2] != 4 || ss.len() != 3 || ss[0] != bs[0] || ss[2] != bs[1] {
        return Err(convert_err!(
            "boxes {bs:?} and scores {ss:?} must be (batches, boxes, 4) and (batches, classes, boxes)"
        ));
    }
    let (nb, nc, nbox) = (ss[0] as usize, ss[1] as usize, ss[2] as usize);
    let mut rows: Vec<i64> = Vec::new();
    for b in 0..nb {
        for c in 0..nc {
            if max_out == 0 {
                break;
            }
            let mut cand: Vec<(f32, usize)> = Vec::new();
            for i in 0..nbox {
                let s = elem(&scores, (b * nc + c) * nbox + i)? as f32;
                if score_th.is_none_or(|t| s > t) {
                    cand.push((s, i));
                }
            }
            cand.sort_by(|p, q| {
                q.0.partial_cmp(&p.0)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(p.1.cmp(&q.1))
            });
            let mut kept: Vec<[f32; 4]> = Vec::new();
            for (_, i) in cand {
                if kept.len() >= max_out {
                    break;
                }
                let mut r = [0f32; 4];
                for (k, v) in r.iter_mut().enumerate() {
                    *v = elem(&boxes, (b * nbox + i) * 4 + k)? as f32;
                }
                let r = corners(r, center);
                if kept.iter().any(|&k| suppresses(k, r, iou)) {
                    continue;
                }
                kept.push(r);
                rows.extend([b as i64, c as i64, i as i64]);
            }
        }
    }
    let count = rows.len() as i64 / 3;
    out1(array_value(&out_name(n, 0), i64_array(vec![count, 3], &rows)))
}
