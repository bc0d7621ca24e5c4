//! `relax_host_kernels::attention` against a plain float64 reference that follows
//! the strides element by element: `[batch, seq, heads, dim]` operands, grouped
//! key/value heads, scalar factors, a broadcast bias, causal bounds, the softmax
//! guards, and the errors for operands the strides would leave.

use relax_host_kernels::attention::{attention, AttentionShape, Operand, Output, SoftmaxGuard};

mod common;
use common::random;

/// Offset of `(rows, j, x)` in an operand.
fn at(o: &Operand<'_>, rows: &[usize], j: usize, x: usize) -> usize {
    o.offset
        + rows
            .iter()
            .zip(o.rows_at)
            .map(|(&r, &(st, d))| r / d * st)
            .sum::<usize>()
        + j * o.key_stride
        + x * o.inner_stride
}

/// The reference: per row, f64 scores, the mask, the guarded softmax, the weighted sum.
fn reference(
    s: &AttentionShape,
    q: &Operand,
    k: &Operand,
    v: &Operand,
    bias: Option<&Operand>,
) -> Vec<(Vec<usize>, Vec<f64>)> {
    let mut out = Vec::new();
    let total: usize = s.rows.iter().product();
    for flat in 0..total {
        let mut idx = vec![0; s.rows.len()];
        let mut f = flat;
        for r in (0..s.rows.len()).rev() {
            idx[r] = f % s.rows[r];
            f /= s.rows[r];
        }
        let i = idx[s.query_axis];
        let mut sc: Vec<f64> = (0..s.keys)
            .map(|j| {
                let dot: f64 = (0..s.head_dim)
                    .map(|x| {
                        let a = (q.data[at(q, &idx, 0, x)] * q.factor) as f64;
                        let b = (k.data[at(k, &idx, j, x)] * k.factor) as f64;
                        a * b
                    })
                    .sum();
                let mut v = dot * s.scale as f64;
                if let Some(b) = bias {
                    v += (b.data[at(b, &idx, j, 0)] * b.factor) as f64;
                }
                if let Some(off) = s.causal {
                    if j as i64 > i as i64 + off {
                        v = f64::NEG_INFINITY;
                    }
                }
                v
            })
            .collect();
        let m = sc.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        sc.iter_mut().for_each(|x| *x = (*x - m).exp());
        let l: f64 = sc.iter().sum();
        let row: Vec<f64> = (0..s.value_dim)
            .map(|x| {
                let acc: f64 = (0..s.keys)
                    .map(|j| sc[j] * (v.data[at(v, &idx, j, x)] * v.factor) as f64)
                    .sum();
                let val = acc / l;
                match s.guard {
                    SoftmaxGuard::None => val,
                    SoftmaxGuard::AllNegInf if m == f64::NEG_INFINITY => 0.0,
                    SoftmaxGuard::NanFill(z) if val.is_nan() => {
                        // Every weight of the row is `z`.
                        (0..s.keys)
                            .map(|j| z as f64 * (v.data[at(v, &idx, j, x)] * v.factor) as f64)
                            .sum()
                    }
                    _ => val,
                }
            })
            .collect();
        out.push((idx, row));
    }
    out
}

/// `attention` into `out` with the given output strides (value stride 1).
fn run_into(
    s: &AttentionShape,
    (q, k, v): (&Operand, &Operand, &Operand),
    bias: Option<&Operand>,
    out: &mut [f32],
    rows_at: &[usize],
) -> Result<(), relax_host_kernels::KernelError> {
    attention(
        s,
        q,
        k,
        v,
        bias,
        Output {
            data: out,
            rows_at,
            inner_stride: 1,
        },
    )
}

fn check(s: &AttentionShape, q: &Operand, k: &Operand, v: &Operand, bias: Option<&Operand>, what: &str) {
    // The output `[rows..., value_dim]` row-major.
    let mut strides = vec![0usize; s.rows.len()];
    let mut acc = s.value_dim;
    for r in (0..s.rows.len()).rev() {
        strides[r] = acc;
        acc *= s.rows[r];
    }
    let mut out = vec![f32::NAN; acc];
    run_into(s, (q, k, v), bias, &mut out, &strides).unwrap_or_else(|e| panic!("{what}: {e}"));
    for (idx, row) in reference(s, q, k, v, bias) {
        let base: usize = idx.iter().zip(&strides).map(|(a, b)| a * b).sum();
        for (x, want) in row.iter().enumerate() {
            let got = out[base + x] as f64;
            let ok = if want.is_nan() {
                got.is_nan()
            } else {
                (got - want).abs() <= 1e-5 + 1e-5 * want.abs()
            };
            assert!(ok, "{what}: at {idx:?}, {x}: got {got}, want {want}");
        }
    }
}

#[test]
fn strided_heads_factors_bias_and_causal_bounds_match_the_reference() {
    // q, k, v as [batch 2, seq, heads 3, dim]: rows (batch, head, query).
    let (b, s, h, d) = (2, 7, 3, 5);
    let x = random(b * s * h * d, 1);
    let y = random(b * s * h * d, 2);
    let z = random(b * s * h * d, 3);
    let mask = random(s * s, 4);
    let q_rows = [(s * h * d, 1), (d, 1), (h * d, 1)];
    let kv_rows = [(s * h * d, 1), (d, 1), (0, 1)];
    // The bias is [seq, seq], shared by batches and heads.
    let b_rows = [(0, 1), (0, 1), (s, 1)];
    let op = |data: &'static [f32], rows: &'static [(usize, usize)], f: f32| Operand {
        data,
        rows_at: rows,
        key_stride: h * d,
        inner_stride: 1,
        factor: f,
        offset: 0,
    };
    let leak = |v: Vec<f32>| -> &'static [f32] { Box::leak(v.into_boxed_slice()) };
    let leak_rows = |v: &[(usize, usize)]| -> &'static [(usize, usize)] { Box::leak(v.to_vec().into_boxed_slice()) };
    let (x, y, z, mask) = (leak(x), leak(y), leak(z), leak(mask));
    let q = op(x, leak_rows(&q_rows), 0.42);
    let k = op(y, leak_rows(&kv_rows), 0.42);
    let v = op(z, leak_rows(&kv_rows), 1.0);
    let bias = Operand {
        data: mask,
        rows_at: leak_rows(&b_rows),
        key_stride: 1,
        inner_stride: 0,
        factor: 1.0,
        offset: 0,
    };
    for causal in [None, Some(0), Some(2)] {
        for with_bias in [false, true] {
            let shape = AttentionShape {
                rows: vec![b, h, s],
                query_axis: 2,
                keys: s,
                head_dim: d,
                value_dim: d,
                scale: 0.7,
                causal,
                guard: SoftmaxGuard::None,
            };
            let what = format!("causal {causal:?}, bias {with_bias}");
            check(&shape, &q, &k, &v, with_bias.then_some(&bias), &what);
        }
    }
    // Grouped heads: one key/value head for three query heads (divisor 3), keys
    // read transposed (`[dim, keys]` per batch), the query axis first.
    let kt_rows = [(0, 1), (s * d, 1), (0, 3)];
    let kt = Operand {
        data: y,
        rows_at: leak_rows(&kt_rows),
        key_stride: 1,
        inner_stride: s,
        factor: 1.0,
        offset: 0,
    };
    let q2_rows = [(h * d, 1), (s * h * d, 1), (d, 1)];
    let q2 = op(x, leak_rows(&q2_rows), 1.0);
    let v2_rows = [(0, 1), (s * d, 1), (0, 3)];
    let v2 = Operand {
        data: z,
        rows_at: leak_rows(&v2_rows),
        key_stride: d,
        inner_stride: 1,
        factor: 1.0,
        offset: 0,
    };
    let shape = AttentionShape {
        rows: vec![s, b, h],
        query_axis: 0,
        keys: s,
        head_dim: d,
        value_dim: d,
        scale: 1.0,
        causal: Some(1),
        guard: SoftmaxGuard::None,
    };
    check(&shape, &q2, &kt, &v2, None, "grouped heads, transposed keys");
    // Queries, keys and values side by side in one `[batch, seq, 3 * heads * dim]`
    // projection (GPT-2's), each read at its offset.
    let qkv = leak(random(b * s * 3 * h * d, 5));
    let w = 3 * h * d;
    let rows_q = leak_rows(&[(s * w, 1), (d, 1), (w, 1)]);
    let rows_kv = leak_rows(&[(s * w, 1), (d, 1), (0, 1)]);
    let part = |rows: &'static [(usize, usize)], k: usize| Operand {
        data: qkv,
        rows_at: rows,
        key_stride: w,
        inner_stride: 1,
        factor: 1.0,
        offset: k * h * d,
    };
    let shape = AttentionShape {
        rows: vec![b, h, s],
        query_axis: 2,
        keys: s,
        head_dim: d,
        value_dim: d,
        scale: 0.5,
        causal: Some(0),
        guard: SoftmaxGuard::None,
    };
    check(
        &shape,
        &part(rows_q, 0),
        &part(rows_kv, 1),
        &part(rows_kv, 2),
        None,
        "one projection, three offsets",
    );
    // A value offset whose last element lies past the buffer is an error, not a read.
    let (q3, k3, v3) = (part(rows_q, 0), part(rows_kv, 1), part(rows_kv, 3));
    let mut out = vec![0f32; b * s * h * d];
    let e = run_into(&shape, (&q3, &k3, &v3), None, &mut out, &[s * h * d, d, h * d]).unwrap_err();
    assert!(e.0.contains("v does not hold"), "{e}");
}

#[test]
fn rows_without_keys_follow_the_guard() {
    // Two query rows, three keys; a bias of -inf on every key of row 0.
    let q = [1.0f32, 0.5, -1.0, 2.0];
    let k = [0.3f32, 0.1, -0.2, 0.4, 0.5, 0.6];
    let v = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let ninf = f32::NEG_INFINITY;
    let bias = [ninf, ninf, ninf, 0.0, 0.0, 0.0];
    let rows = [(2usize, 1usize)];
    let o = |data: &'static [f32], key: usize, inner: usize| Operand {
        data,
        rows_at: Box::leak(Box::new(rows)),
        key_stride: key,
        inner_stride: inner,
        factor: 1.0,
        offset: 0,
    };
    let (q, k, v, b) = (
        o(Box::leak(Box::new(q)), 0, 1),
        Operand {
            rows_at: &[(0, 1)],
            ..o(Box::leak(Box::new(k)), 2, 1)
        },
        Operand {
            rows_at: &[(0, 1)],
            ..o(Box::leak(Box::new(v)), 2, 1)
        },
        Operand {
            rows_at: &[(3, 1)],
            ..o(Box::leak(Box::new(bias)), 1, 0)
        },
    );
    for (guard, row0) in [
        (SoftmaxGuard::None, [f32::NAN; 2]),
        (SoftmaxGuard::AllNegInf, [0.0; 2]),
        (SoftmaxGuard::NanFill(0.0), [0.0; 2]),
        // Every weight 0.5: half the sum of the values.
        (
            SoftmaxGuard::NanFill(0.5),
            [0.5 * (1.0 + 3.0 + 5.0), 0.5 * (2.0 + 4.0 + 6.0)],
        ),
    ] {
        let shape = AttentionShape {
            rows: vec![2],
            query_axis: 0,
            keys: 3,
            head_dim: 2,
            value_dim: 2,
            scale: 1.0,
            causal: None,
            guard,
        };
        let mut out = [7.0f32; 4];
        run_into(&shape, (&q, &k, &v), Some(&b), &mut out, &[2]).expect("runs");
        for (got, want) in out[..2].iter().zip(row0) {
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{guard:?}: {out:?}"
            );
        }
        check(&shape, &q, &k, &v, Some(&b), &format!("{guard:?}"));
        // A causal bound that leaves row 0 no key gives the same.
        let causal = AttentionShape {
            causal: Some(-1),
            ..shape.clone()
        };
        let mut out = [7.0f32; 4];
        run_into(&causal, (&q, &k, &v), None, &mut out, &[2]).expect("runs");
        for (got, want) in out[..2].iter().zip(row0) {
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "causal {guard:?}: {out:?}"
            );
        }
        check(&causal, &q, &k, &v, None, &format!("causal {guard:?}"));
    }
}

#[test]
fn strides_past_an_operand_or_overlapping_outputs_are_errors() {
    let data = vec![0.5f32; 16];
    let rows = [(4usize, 1usize)];
    let op = |key: usize| Operand {
        data: &data,
        rows_at: &rows,
        key_stride: key,
        inner_stride: 1,
        factor: 1.0,
        offset: 0,
    };
    let shape = AttentionShape {
        rows: vec![4],
        query_axis: 0,
        keys: 4,
        head_dim: 4,
        value_dim: 4,
        scale: 1.0,
        causal: None,
        guard: SoftmaxGuard::None,
    };
    let kv_rows = [(0usize, 1usize)];
    let kv = |key: usize| Operand {
        rows_at: &kv_rows,
        ..op(key)
    };
    let run = |q: &Operand, k: &Operand, out_rows: &[usize], out_len: usize| {
        let mut out = vec![0f32; out_len];
        run_into(&shape, (q, k, &kv(4)), None, &mut out, out_rows)
    };
    assert!(run(&op(0), &kv(4), &[4], 16).is_ok());
    // Keys four apart past the first reach element 15 + 4.
    let e = run(&op(0), &kv(5), &[4], 16).unwrap_err();
    assert!(e.0.contains("k does not hold"), "{e}");
    // Output rows two apart overlap their four values.
    let e = run(&op(0), &kv(4), &[2], 16).unwrap_err();
    assert!(e.0.contains("overlap"), "{e}");
    // An output too short.
    let e = run(&op(0), &kv(4), &[4], 15).unwrap_err();
    assert!(e.0.contains("output does not hold"), "{e}");
    // Keys that depend on the query position.
    let e = run(&op(0), &op(4), &[4], 16).unwrap_err();
    assert!(e.0.contains("cannot depend"), "{e}");
    // A zero divisor.
    let zero = [(0usize, 0usize)];
    let e = run(
        &op(0),
        &Operand {
            rows_at: &zero,
            ..kv(4)
        },
        &[4],
        16,
    )
    .unwrap_err();
    assert!(e.0.contains("zero divisor"), "{e}");
}

#[test]
fn long_rows_in_tiles_and_no_keys_match_the_reference() {
    // 300 queries x 300 keys: more scores than one tile holds.
    let (s, d) = (300, 4);
    let leak = |v: Vec<f32>| -> &'static [f32] { Box::leak(v.into_boxed_slice()) };
    let (x, y, z, m) = (
        leak(random(s * d, 11)),
        leak(random(s * d, 12)),
        leak(random(s * d, 13)),
        leak(random(s * s, 14)),
    );
    let q_rows: &'static [(usize, usize)] = &[(4, 1)];
    let kv_rows: &'static [(usize, usize)] = &[(0, 1)];
    let op = |data: &'static [f32], rows: &'static [(usize, usize)]| Operand {
        data,
        rows_at: rows,
        key_stride: d,
        inner_stride: 1,
        factor: 1.0,
        offset: 0,
    };
    let bias = Operand {
        data: m,
        rows_at: &[(s, 1)],
        key_stride: 1,
        inner_stride: 0,
        factor: 1.0,
        offset: 0,
    };
    let shape = AttentionShape {
        rows: vec![s],
        query_axis: 0,
        keys: s,
        head_dim: d,
        value_dim: d,
        scale: 0.5,
        causal: Some(3),
        guard: SoftmaxGuard::None,
    };
    check(
        &shape,
        &op(x, q_rows),
        &op(y, kv_rows),
        &op(z, kv_rows),
        Some(&bias),
        "tiles",
    );
    // No keys: the weighted sum of nothing is zero (as the unfused product gives),
    // whatever the guard.
    let none = AttentionShape {
        keys: 0,
        causal: None,
        ..shape.clone()
    };
    let mut out = vec![7.0f32; s * d];
    let (q, k, v) = (op(x, q_rows), op(&[], kv_rows), op(&[], kv_rows));
    run_into(&none, (&q, &k, &v), None, &mut out, &[d]).expect("runs");
    assert!(out.iter().all(|&v| v == 0.0));
}

#[test]
fn parameters_that_do_not_decode_are_errors() {
    use relax_host_kernels::attention::decode_params;
    // One row dimension of 2; q, k, v; the output.
    let mut p: Vec<i64> = vec![1, 2, 0, 2, 4, 4, 0, 0, 0, 0];
    for _ in 0..3 {
        p.extend([4, 1, 4, 1, 0]);
    }
    p.extend([4, 1]);
    let ok = decode_params(&p, &[0.5]).expect("decodes");
    assert_eq!((ok.shape.keys, ok.shape.scale, ok.fill_tensor), (2, 0.5, false));
    for (what, bad) in [
        ("missing", p[..p.len() - 1].to_vec()),
        ("too many", [p.clone(), vec![0]].concat()),
        ("is -1", {
            let mut b = p.clone();
            b[3] = -1;
            b
        }),
        ("guard 7", {
            let mut b = p.clone();
            b[8] = 7;
            b
        }),
        ("more than 8", vec![9]),
    ] {
        let e = decode_params(&bad, &[]).unwrap_err();
        assert!(e.0.contains(what), "{what}: {e}");
    }
}
