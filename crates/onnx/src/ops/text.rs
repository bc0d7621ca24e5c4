//! Text features: `TfIdfVectorizer` of integer tokens.

use super::*;

/// `TfIdfVectorizer` of integer tokens: for each n-gram of the pool (sizes
/// `min_gram_length` to `max_gram_length`), its count in each row, taken at every skip
/// distance 1 to `max_skip_count + 1` (unigrams once), as equality tests of strided
/// slices against the pool; the counts placed at `ngram_indexes` and weighted by
/// `mode` (TF, IDF, TFIDF), in float32.
pub(crate) fn tfidf_vectorizer(ctx: &mut Ctx, n: &Node) -> Result<Vec<TVal>, ConvertError> {
    let v = val(ctx, n, 0)?;
    let dt = v.dtype;
    let shape = v.const_shape().ok_or("a static input shape is needed")?;
    let pool = n
        .ints("pool_int64s")
        .filter(|p| !p.is_empty())
        .ok_or_else(|| ConvertError::unsupported("only integer pools (`pool_int64s`) are supported"))?;
    let counts = n.ints("ngram_counts").unwrap_or_default();
    let indexes = n.ints("ngram_indexes").unwrap_or_default();
    let (min_n, max_n) = (n.int("min_gram_length", 1), n.int("max_gram_length", 1));
    let max_skip = n.int("max_skip_count", 0);
    let mode = n.string("mode").unwrap_or_default();
    let weights: Vec<f64> = n
        .attr("weights")
        .map(|a| a.floats.iter().map(|&f| f as f64).collect())
        .unwrap_or_default();
    let out_size = indexes.iter().copied().max().ok_or("no ngram_indexes")? + 1;
    if min_n < 1 || max_n < min_n || max_skip < 0 || !dt.is_integer() || indexes.iter().any(|&i| i < 0) {
        return Err("invalid attributes or input type".into());
    }
    let (rows, len) = match shape.as_slice() {
        [l] => (1, *l),
        [r, l] => (*r, *l),
        _ => return Err("the input must be 1-D or 2-D".into()),
    };
    let a = x(ctx, n, 0)?;
    let a = reshape_expr(ctx, a, ints(&[rows, len]))?;
    // the pool's n-grams by size: (global index, tokens)
    let mut grams: Vec<(usize, i64, Vec<i64>)> = Vec::new();
    let mut id = 0usize;
    for (i, &start) in counts.iter().enumerate() {
        let size = i as i64 + 1;
        let end = counts.get(i + 1).copied().unwrap_or(pool.len() as i64);
        let (s, e) = (start.max(0) as usize, (end.max(0) as usize).min(pool.len()));
        for c in pool.get(s..e).unwrap_or(&[]).chunks_exact(size as usize) {
            grams.push((id, size, c.to_vec()));
            id += 1;
        }
    }
    if indexes.len() < id {
        return Err("fewer ngram_indexes than n-grams in the pool".into());
    }
    // counts (rows, G) per size, concatenated in pool order; the placement matrix
    let mut parts = Vec::new();
    let mut place: Vec<f32> = Vec::new();
    let mut used = 0i64;
    for size in min_n..=max_n {
        let gs: Vec<&(usize, i64, Vec<i64>)> = grams.iter().filter(|g| g.1 == size).collect();
        if gs.is_empty() {
            continue;
        }
        let g = gs.len() as i64;
        let dists: Vec<i64> = if size == 1 {
            vec![1]
        } else {
            (1..=max_skip + 1).collect()
        };
        let mut total: Option<Expr> = None;
        for d in dists {
            let p = len - (size - 1) * d;
            if p <= 0 {
                continue;
            }
            let mut all: Option<Expr> = None;
            for k in 0..size {
                let sl = slice_axis(ctx, a.clone(), 1, k * d, k * d + p, 1)?;
                let sl = emit(ctx, "expand_dims", vec![sl], &[("axis", ints_attr(&[2]))])?;
                let tok = crate::convert::constant(
                    dt,
                    vec![g],
                    gs.iter().map(|gr| tensor::encode_int(dt, gr.2[k as usize])),
                );
                let eq = emit(ctx, "equal", vec![sl, tok], &[])?;
                all = Some(match all {
                    Some(prev) => emit(ctx, "logical_and", vec![prev, eq], &[])?,
                    None => eq,
                });
            }
            let Some(all) = all else { continue };
            let f = astype(ctx, all, DataType::BOOL, DataType::FLOAT32)?;
            let c = emit(
                ctx,
                "sum",
                vec![f],
                &[("axis", ints_attr(&[1])), ("keepdims", AttrValue::Bool(false))],
            )?;
            total = Some(match total {
                Some(t) => emit(ctx, "add", vec![t, c], &[])?,
                None => c,
            });
        }
        let Some(total) = total else { continue };
        parts.push(total);
        for gr in gs {
            let mut row = vec![0f32; out_size as usize];
            row[indexes[gr.0] as usize] = 1.0;
            place.extend(row);
            used += 1;
        }
    }
    let counts = if parts.is_empty() {
        None
    } else {
        let c = concat_exprs(ctx, parts, 1)?;
        let m = crate::convert::constant(
            DataType::FLOAT32,
            vec![used, out_size],
            place.iter().map(|v| v.to_le_bytes().to_vec()),
        );
        Some(emit(ctx, "matmul", vec![c, m], &[])?)
    };
    let counts = match counts {
        Some(c) => c,
        None => crate::convert::constant(
            DataType::FLOAT32,
            vec![rows, out_size],
            (0..rows * out_size).map(|_| 0f32.to_le_bytes().to_vec()),
        ),
    };
    let w = if weights.is_empty() {
        None
    } else {
        if weights.len() < out_size as usize {
            return Err("fewer weights than outputs".into());
        }
        Some(crate::convert::constant(
            DataType::FLOAT32,
            vec![out_size],
            weights
                .iter()
                .take(out_size as usize)
                .map(|&v| (v as f32).to_le_bytes().to_vec()),
        ))
    };
    let y = match mode.as_str() {
        "TF" => counts,
        "IDF" => {
            let hit = emit(ctx, "greater", vec![counts, scalar(DataType::FLOAT32, 0.0)], &[])?;
            let one = w.unwrap_or_else(|| scalar(DataType::FLOAT32, 1.0));
            emit(ctx, "where", vec![hit, one, scalar(DataType::FLOAT32, 0.0)], &[])?
        }
        "TFIDF" => match w {
            Some(w) => emit(ctx, "multiply", vec![counts, w], &[])?,
            None => counts,
        },
        m => return Err(convert_err!("unknown mode `{m}`")),
    };
    let dims = if shape.len() == 1 {
        vec![out_size]
    } else {
        vec![rows, out_size]
    };
    out1(ctx.op("reshape", vec![y, Expr::shape(ints(&dims))], &[])?)
}
