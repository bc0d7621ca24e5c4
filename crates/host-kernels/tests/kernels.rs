//! The kernels against naive reference loops on random data.

use relax_host_kernels::elementwise::{self, BinaryOp};
use relax_host_kernels::pool::{pool2d, Pool2dShape, PoolKind};
use relax_host_kernels::{conv2d, matmul, Conv2dShape, Epilogue};

mod common;
use common::random;

fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g == w || (g - w).abs() <= 1e-4 + 1e-4 * w.abs(),
            "{what}: element {i}: got {g}, want {w}"
        );
    }
}

fn conv_ref(s: &Conv2dShape, x: &[f32], w: &[f32], ep: &Epilogue) -> Vec<f32> {
    let (oh, ow) = s.out_hw().unwrap();
    let (icg, ocg) = (s.c_in / s.groups, s.c_out / s.groups);
    let mut out = vec![0f32; s.n * s.c_out * oh * ow];
    for n in 0..s.n {
        for oc in 0..s.c_out {
            let g = oc / ocg;
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = 0f64;
                    for ic in 0..icg {
                        for ky in 0..s.kh {
                            for kx in 0..s.kw {
                                let iy = (oy * s.stride[0] + ky * s.dilation[0]) as isize - s.pad[0] as isize;
                                let ix = (ox * s.stride[1] + kx * s.dilation[1]) as isize - s.pad[1] as isize;
                                if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                                    continue;
                                }
                                let xi = ((n * s.c_in + g * icg + ic) * s.h + iy as usize) * s.w + ix as usize;
                                let wi = ((oc * icg + ic) * s.kh + ky) * s.kw + kx;
                                acc += x[xi] as f64 * w[wi] as f64;
                            }
                        }
                    }
                    let i = ((n * s.c_out + oc) * oh + oy) * ow + ox;
                    let mut v = acc as f32;
                    v = v * ep.scale.map_or(1.0, |s| s[oc]) + ep.shift.map_or(0.0, |b| b[oc]);
                    v += ep.residual.map_or(0.0, |r| r[i]);
                    if ep.relu {
                        v = v.max(0.0);
                    }
                    out[i] = v;
                }
            }
        }
    }
    out
}

/// The convolution of `[n, c_in, h, w, c_out, kh, kw]` with `stride`, `pad`,
/// `dilation` and `groups`.
fn conv_shape(
    dims: [usize; 7],
    stride: [usize; 2],
    pad: [usize; 4],
    dilation: [usize; 2],
    groups: usize,
) -> Conv2dShape {
    let [n, c_in, h, w, c_out, kh, kw] = dims;
    Conv2dShape {
        n,
        c_in,
        h,
        w,
        c_out,
        kh,
        kw,
        stride,
        pad,
        dilation,
        groups,
    }
}

#[test]
fn conv2d_matches_reference() {
    // ([n, c_in, h, w, c_out, kh, kw], stride, pad, dilation, groups)
    let cases = [
        conv_shape([1, 3, 17, 19, 8, 3, 3], [2, 2], [0, 0, 0, 0], [1, 1], 1),
        conv_shape([2, 8, 9, 9, 16, 1, 1], [1, 1], [0, 0, 0, 0], [1, 1], 1),
        conv_shape([1, 8, 10, 10, 12, 1, 1], [1, 1], [0, 0, 0, 0], [1, 1], 4),
        conv_shape([1, 6, 11, 13, 6, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 6),
        conv_shape([2, 6, 11, 13, 6, 3, 3], [2, 2], [1, 1, 1, 1], [1, 1], 6),
        conv_shape([1, 4, 10, 9, 4, 3, 3], [1, 2], [2, 1, 0, 3], [2, 1], 4),
        conv_shape([2, 3, 7, 7, 3, 5, 3], [3, 1], [2, 0, 2, 1], [1, 2], 3),
        conv_shape([1, 4, 12, 12, 8, 3, 3], [1, 2], [2, 1, 0, 3], [2, 1], 2),
        conv_shape([1, 3, 20, 20, 5, 7, 7], [2, 2], [3, 3, 3, 3], [1, 1], 1),
        conv_shape([1, 4, 8, 8, 8, 1, 1], [2, 2], [0, 0, 0, 0], [1, 1], 1),
        conv_shape([1, 2, 5, 5, 3, 5, 5], [1, 1], [0, 0, 0, 0], [1, 1], 1),
        conv_shape([1, 64, 9, 9, 96, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 1),
    ];
    for (ci, s) in cases.iter().enumerate() {
        let Conv2dShape {
            n,
            c_in,
            h,
            w,
            c_out,
            kh,
            kw,
            groups,
            ..
        } = *s;
        let (oh, ow) = s.out_hw().unwrap();
        let x = random(n * c_in * h * w, ci as u64);
        let wt = random(c_out * c_in / groups * kh * kw, 100 + ci as u64);
        let scale = random(c_out, 200 + ci as u64);
        let shift = random(c_out, 300 + ci as u64);
        let res = random(n * c_out * oh * ow, 400 + ci as u64);
        let eps = [
            Epilogue::default(),
            Epilogue {
                shift: Some(&shift),
                relu: true,
                ..Epilogue::default()
            },
            Epilogue {
                scale: Some(&scale),
                shift: Some(&shift),
                residual: Some(&res),
                relu: true,
            },
        ];
        for (ei, ep) in eps.iter().enumerate() {
            let mut out = vec![f32::NAN; n * c_out * oh * ow];
            conv2d(s, &x, &wt, ep, &mut out).unwrap();
            assert_close(
                &out,
                &conv_ref(s, &x, &wt, ep),
                &format!("conv case {ci}, epilogue {ei}"),
            );
        }
    }
}

#[test]
fn conv2d_rejects_bad_shapes() {
    let s = Conv2dShape {
        n: 1,
        c_in: 3,
        h: 4,
        w: 4,
        c_out: 4,
        kh: 3,
        kw: 3,
        stride: [1, 1],
        pad: [0; 4],
        dilation: [1, 1],
        groups: 2,
    };
    let mut out = vec![0.0; 16];
    assert!(conv2d(&s, &[0.0; 48], &[0.0; 54], &Epilogue::default(), &mut out).is_err());
    let s = Conv2dShape { groups: 1, ..s };
    assert!(conv2d(&s, &[0.0; 47], &[0.0; 108], &Epilogue::default(), &mut out[..8]).is_err());
}

#[test]
fn matmul_matches_reference() {
    for &(batch, m, k, n, ab, bb) in &[
        (1, 1, 544, 1000, true, true),
        (3, 5, 7, 9, true, false),
        (2, 4, 3, 6, true, true),
        (2, 33, 65, 17, false, true),
        (1, 130, 70, 3, true, true),
    ] {
        let a = random(if ab { batch } else { 1 } * m * k, 1);
        let b = random(if bb { batch } else { 1 } * k * n, 2);
        let mut out = vec![0.0; batch * m * n];
        matmul(batch, m, k, n, &a, ab, &b, bb, &mut out).unwrap();
        let mut want = vec![0.0f32; batch * m * n];
        for t in 0..batch {
            let (ai, bi) = (if ab { t * m * k } else { 0 }, if bb { t * k * n } else { 0 });
            for i in 0..m {
                for j in 0..n {
                    let s: f64 = (0..k)
                        .map(|l| a[ai + i * k + l] as f64 * b[bi + l * n + j] as f64)
                        .sum();
                    want[t * m * n + i * n + j] = s as f32;
                }
            }
        }
        assert_close(&out, &want, &format!("matmul {batch}x{m}x{k}x{n}"));
    }
}

/// `A * B` with `B` read through its transpose (`[n, k]` row-major, as a weight of
/// `x @ permute_dims(W)` is), with a bias and ReLU epilogue: shapes with full and
/// partial register tiles, and products large enough to be split over threads.
#[test]
fn matmul_with_transposed_rhs_matches_reference() {
    use relax_host_kernels::gemm::MatRef;
    for &(m, k, n) in &[
        (32usize, 128usize, 128usize),
        (7, 33, 50),
        (1, 5, 3),
        (45, 16, 7),
        (32, 128, 512),
        (200, 64, 300),
        (5, 0, 4),
        (0, 5, 4),
        (4, 5, 0),
        (6, 1, 1),
        (1, 1, 40),
        (33, 129, 97),
        (130, 300, 70),
    ] {
        let a = random(m * k, 3);
        let bt = random(n * k, 4);
        let bias = random(m, 5);
        let mut out = vec![f32::NAN; m * n];
        let ep = Epilogue {
            shift: Some(&bias),
            relu: true,
            ..Epilogue::default()
        };
        let b = MatRef {
            data: &bt,
            rs: 1,
            cs: k,
        };
        relax_host_kernels::sgemm_parallel(m, k, n, MatRef::row_major(&a, k), b, &mut out, &ep, 0).unwrap();
        let mut want = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let s: f64 = (0..k).map(|l| a[i * k + l] as f64 * bt[j * k + l] as f64).sum();
                want[i * n + j] = (s as f32 + bias[i]).max(0.0);
            }
        }
        assert_close(&out, &want, &format!("matmul_bt {m}x{k}x{n}"));
    }
}

#[test]
fn pooling_matches_reference() {
    for &(h, w, pool, stride, pad, kind) in &[
        (13, 13, [3, 3], [2, 2], [0, 0, 0, 0], PoolKind::Max),
        (12, 11, [3, 3], [2, 2], [1, 1, 1, 1], PoolKind::Max),
        (111, 111, [3, 3], [2, 2], [0, 0, 0, 0], PoolKind::Max),
        (20, 21, [3, 2], [3, 3], [1, 1, 0, 1], PoolKind::Max),
        (
            12,
            11,
            [3, 3],
            [2, 2],
            [1, 1, 1, 1],
            PoolKind::Avg {
                count_include_pad: false,
            },
        ),
        (
            12,
            11,
            [3, 2],
            [1, 2],
            [1, 0, 1, 1],
            PoolKind::Avg {
                count_include_pad: true,
            },
        ),
        (
            7,
            7,
            [7, 7],
            [1, 1],
            [0, 0, 0, 0],
            PoolKind::Avg {
                count_include_pad: false,
            },
        ),
    ] {
        // ceil_mode: a last, partial window where the stride leaves input over.
        let oh = usize::div_ceil(h + pad[0] + pad[2] - pool[0], stride[0]) + 1;
        let ow = usize::div_ceil(w + pad[1] + pad[3] - pool[1], stride[1]) + 1;
        let s = Pool2dShape {
            planes: 3,
            h,
            w,
            oh,
            ow,
            pool,
            stride,
            pad,
            dilation: [1, 1],
        };
        let mut x = random(3 * h * w, 9);
        if kind == PoolKind::Max {
            // NaN is skipped by max pooling (docs/semantics.md), as `f32::max` does.
            x.iter_mut().step_by(7).for_each(|v| *v = f32::NAN);
        }
        let mut out = vec![0.0; 3 * oh * ow];
        pool2d(&s, kind, &x, &mut out).unwrap();
        let mut want = vec![0.0; 3 * oh * ow];
        for p in 0..3 {
            for oy in 0..oh {
                for ox in 0..ow {
                    let (mut m, mut sum, mut cnt) = (f32::NEG_INFINITY, 0.0f32, 0);
                    for ky in 0..pool[0] {
                        for kx in 0..pool[1] {
                            let iy = (oy * stride[0] + ky) as isize - pad[0] as isize;
                            let ix = (ox * stride[1] + kx) as isize - pad[1] as isize;
                            if iy < 0 || ix < 0 || iy >= h as isize || ix >= w as isize {
                                continue;
                            }
                            let v = x[p * h * w + iy as usize * w + ix as usize];
                            m = m.max(v);
                            sum += v;
                            cnt += 1;
                        }
                    }
                    want[p * oh * ow + oy * ow + ox] = match kind {
                        PoolKind::Max => m,
                        PoolKind::Avg {
                            count_include_pad: true,
                        } => sum / (pool[0] * pool[1]) as f32,
                        PoolKind::Avg { .. } => sum / cnt as f32,
                    };
                }
            }
        }
        assert_close(&out, &want, &format!("pool {kind:?} {h}x{w}"));
    }
}

#[test]
fn elementwise_kernels_match_reference() {
    // Broadcasting add with ReLU: [2, 3, 4, 5] + [3, 1, 1].
    let a = random(120, 1);
    let b = random(3, 2);
    let mut out = vec![0.0; 120];
    elementwise::binary(
        BinaryOp::Add,
        &a,
        &[2, 3, 4, 5],
        &b,
        &[3, 1, 1],
        &mut out,
        &[2, 3, 4, 5],
        true,
    )
    .unwrap();
    let want: Vec<f32> = (0..120).map(|i| (a[i] + b[(i / 20) % 3]).max(0.0)).collect();
    assert_close(&out, &want, "broadcast add");
    // Scalar-like lhs broadcast: [1, 5] * [4, 1].
    let (x, y) = (random(5, 3), random(4, 4));
    let mut out = vec![0.0; 20];
    elementwise::binary(BinaryOp::Mul, &x, &[1, 5], &y, &[4, 1], &mut out, &[4, 5], false).unwrap();
    let want: Vec<f32> = (0..20).map(|i| x[i % 5] * y[i / 5]).collect();
    assert_close(&out, &want, "outer product");
    assert!(elementwise::binary(BinaryOp::Add, &x, &[5], &y, &[4], &mut out, &[4, 5], false).is_err());

    // Transpose [2, 3, 4] by (1, 2, 0).
    let t = random(24, 5);
    let mut out = vec![0.0; 24];
    elementwise::transpose(&t, &[2, 3, 4], &[1, 2, 0], &mut out).unwrap();
    let mut want = vec![0.0; 24];
    for i in 0..2 {
        for j in 0..3 {
            for k in 0..4 {
                want[(j * 4 + k) * 2 + i] = t[(i * 3 + j) * 4 + k];
            }
        }
    }
    assert_close(&out, &want, "transpose");
    assert!(elementwise::transpose(&t, &[2, 3, 4], &[1, 1, 0], &mut out).is_err());

    // Concat of [2, 1, 3] and [2, 2, 3] on axis 1.
    let (p, q) = (random(6, 6), random(12, 7));
    let mut out = vec![0.0; 18];
    elementwise::concat(&[(&p[..], 1), (&q[..], 2)], 2, 3, &mut out).unwrap();
    let want: Vec<f32> = [&p[0..3], &q[0..6], &p[3..6], &q[6..12]].concat();
    assert_close(&out, &want, "concat");

    // Softmax rows, mean, batch-norm affine.
    let s = random(12, 8);
    let mut out = vec![0.0; 12];
    elementwise::softmax(&s, 3, 4, &mut out).unwrap();
    for r in 0..3 {
        let e: Vec<f64> = s[r * 4..r * 4 + 4].iter().map(|v| (*v as f64).exp()).collect();
        let z: f64 = e.iter().sum();
        let want: Vec<f32> = e.iter().map(|v| (v / z) as f32).collect();
        assert_close(&out[r * 4..r * 4 + 4], &want, "softmax");
    }
    let mut m = vec![0.0; 3];
    elementwise::mean_inner(&s, 3, 4, &mut m).unwrap();
    assert_close(
        &m,
        &[0, 1, 2].map(|r| s[r * 4..r * 4 + 4].iter().sum::<f32>() / 4.0),
        "mean",
    );
    // Long rows (summed in vector lanes) and rows near the float range (summed in
    // order, as TVM's legalized reduction: the first row overflows on the way, the
    // second holds `inf - inf`, the third a NaN).
    let long = random(3 * 1000, 14);
    let mut m = vec![0.0; 3];
    elementwise::mean_inner(&long, 3, 1000, &mut m).unwrap();
    let want: Vec<f32> = (0..3)
        .map(|r| (long[r * 1000..r * 1000 + 1000].iter().map(|v| *v as f64).sum::<f64>() / 1000.0) as f32)
        .collect();
    assert_close(&m, &want, "mean of long rows");
    let mut big = vec![0.0f32; 3 * 16];
    big[..4].copy_from_slice(&[3e38, 3e38, -3e38, -3e38]);
    big[16..20].copy_from_slice(&[f32::INFINITY, 1.0, f32::NEG_INFINITY, 2.0]);
    big[32] = f32::NAN;
    let mut sums = vec![0.0; 3];
    elementwise::reduce_inner(elementwise::Reduction::Sum, &big, 3, 16, &mut sums).unwrap();
    let in_order: Vec<f32> = big.chunks(16).map(|r| r.iter().sum::<f32>()).collect();
    assert_eq!(sums[0], f32::INFINITY, "in order, 3e38 + 3e38 overflows");
    assert_eq!(format!("{sums:?}"), format!("{in_order:?}"));
    elementwise::mean_inner(&big, 3, 16, &mut m).unwrap();
    assert_eq!(m[0], f32::INFINITY);
    assert!(m[1].is_nan() && m[2].is_nan());
    let (g, be, mu, var) = (random(2, 10), random(2, 11), random(2, 12), [0.5f32, 2.0]);
    let (sc, sh) = elementwise::batch_norm_fold(&g, &be, &mu, &var, 1e-5).unwrap();
    let x = random(2 * 2 * 3, 13);
    let mut out = vec![0.0; 12];
    elementwise::channel_affine(&x, 2, 2, 3, &sc, &sh, false, &mut out).unwrap();
    let want: Vec<f32> = (0..12)
        .map(|i| {
            let c = (i / 3) % 2;
            (x[i] - mu[c]) / (var[c] + 1e-5).sqrt() * g[c] + be[c]
        })
        .collect();
    assert_close(&out, &want, "batch norm");
}

/// Row-major strides of `shape`.
fn strides_of(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// The multi-index of element `flat` of `shape`.
fn index_of(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for i in (0..shape.len()).rev() {
        idx[i] = flat % shape[i];
        flat /= shape[i];
    }
    idx
}

#[test]
fn broadcasting_and_transposes_over_coalescable_axes_match_reference() {
    // Shapes whose axes merge (same shapes, per-channel operands, size-1 axes) and
    // ones that do not (broadcast in the middle).
    let cases: &[(&[usize], &[usize])] = &[
        (&[1, 8, 7, 7], &[1, 8, 7, 7]),
        (&[2, 6, 5, 3], &[1, 6, 1, 1]),
        (&[2, 6, 5, 3], &[6, 5, 1]),
        (&[3, 1, 4], &[3, 2, 1]),
        (&[1, 1, 1], &[1]),
        (&[4, 5], &[]),
    ];
    for (i, &(sa, sb)) in cases.iter().enumerate() {
        let out_shape: Vec<usize> = {
            let n = sa.len().max(sb.len());
            (0..n)
                .map(|k| {
                    let da = if k + sa.len() >= n { sa[k + sa.len() - n] } else { 1 };
                    let db = if k + sb.len() >= n { sb[k + sb.len() - n] } else { 1 };
                    da.max(db)
                })
                .collect()
        };
        let total: usize = out_shape.iter().product();
        let a = random(sa.iter().product(), 10 + i as u64);
        let b = random(sb.iter().product(), 20 + i as u64);
        let mut out = vec![0.0; total];
        elementwise::binary(BinaryOp::Add, &a, sa, &b, sb, &mut out, &out_shape, true).unwrap();
        let pick = |x: &[f32], s: &[usize], idx: &[usize]| {
            let lead = idx.len() - s.len();
            let st = strides_of(s);
            let off: usize = s
                .iter()
                .enumerate()
                .map(|(k, &d)| if d == 1 { 0 } else { idx[lead + k] * st[k] })
                .sum();
            x[off]
        };
        let want: Vec<f32> = (0..total)
            .map(|f| {
                let idx = index_of(f, &out_shape);
                (pick(&a, sa, &idx) + pick(&b, sb, &idx)).max(0.0)
            })
            .collect();
        assert_close(&out, &want, &format!("add {sa:?} + {sb:?}"));
    }

    // Channel shuffle [1, 4, 3, 5, 5] -> axes (0, 2, 1, 3, 4), and a full reversal.
    for (shape, axes) in [
        (vec![1usize, 4, 3, 5, 5], vec![0usize, 2, 1, 3, 4]),
        (vec![2, 3, 4], vec![2, 1, 0]),
        (vec![3, 1, 4, 2], vec![0, 2, 1, 3]),
    ] {
        let n: usize = shape.iter().product();
        let x = random(n, 99);
        let mut out = vec![0.0; n];
        elementwise::transpose(&x, &shape, &axes, &mut out).unwrap();
        let out_shape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
        let st = strides_of(&shape);
        let want: Vec<f32> = (0..n)
            .map(|f| {
                let idx = index_of(f, &out_shape);
                x[axes.iter().zip(&idx).map(|(&a, &i)| i * st[a]).sum::<usize>()]
            })
            .collect();
        assert_close(&out, &want, &format!("transpose {shape:?} by {axes:?}"));
    }
}

#[test]
fn gemv_matches_reference_in_both_orientations() {
    use relax_host_kernels::gemm::gemv;
    for &(m, k, n) in &[
        (1usize, 37usize, 300usize),
        (3, 8, 5),
        (2, 1, 513),
        (1, 2048, 1000),
        (4, 768, 771),
        (1, 17, 1),
        (2, 5, 0),
        (0, 5, 3),
    ] {
        let a = random(m * k, 40);
        let b = random(k * n, 41);
        let want: Vec<f32> = (0..m * n)
            .map(|f| (0..k).map(|kk| a[(f / n) * k + kk] * b[kk * n + f % n]).sum())
            .collect();
        let mut out = vec![0.0; m * n];
        gemv(m, k, n, &a, &b, false, &mut out).unwrap();
        assert_close(&out, &want, &format!("gemv {m}x{k}x{n}"));
        // The same product with the right operand stored transposed ([n, k]).
        let bt: Vec<f32> = (0..n * k).map(|f| b[(f % k) * n + f / k]).collect();
        let mut out = vec![0.0; m * n];
        gemv(m, k, n, &a, &bt, true, &mut out).unwrap();
        assert_close(&out, &want, &format!("gemv transposed {m}x{k}x{n}"));
    }
    // Through `matmul`: one row of a batched left operand per batch.
    let (a, b) = (random(2 * 6, 42), random(6 * 9, 43));
    let mut out = vec![0.0; 2 * 9];
    matmul(2, 1, 6, 9, &a, true, &b, false, &mut out).unwrap();
    let want: Vec<f32> = (0..18)
        .map(|f| (0..6).map(|kk| a[(f / 9) * 6 + kk] * b[kk * 9 + f % 9]).sum())
        .collect();
    assert_close(&out, &want, "matmul of single rows");
}

#[test]
fn binary_over_rows_longer_than_a_task() {
    // Rows of 40,000 elements are split into several tasks; the pieces must line up
    // with the broadcast operand.
    let (rows, cols) = (3usize, 40_000usize);
    let a = random(rows * cols, 50);
    let b = random(cols, 51);
    let mut out = vec![0.0; rows * cols];
    elementwise::binary(
        BinaryOp::Sub,
        &a,
        &[rows, cols],
        &b,
        &[1, cols],
        &mut out,
        &[rows, cols],
        false,
    )
    .unwrap();
    let want: Vec<f32> = (0..rows * cols).map(|i| a[i] - b[i % cols]).collect();
    assert_close(&out, &want, "long-row broadcast subtract");
    let s = [2.5f32];
    elementwise::binary(
        BinaryOp::Div,
        &a,
        &[rows, cols],
        &s,
        &[1],
        &mut out,
        &[rows, cols],
        false,
    )
    .unwrap();
    let want: Vec<f32> = a.iter().map(|x| x / 2.5).collect();
    assert_close(&out, &want, "long-row scalar divide");
}

#[test]
fn arg_reduce_rows_follows_tvm_legalization() {
    // Rows: ties (first wins), a NaN restarting the scan, all -inf (no element beats
    // the initial lowest finite value: -1), and a long row over the parallel size.
    let nan = f32::NAN;
    let ninf = f32::NEG_INFINITY;
    let x = [
        1.0, 3.0, 3.0, 2.0, //
        1.0, nan, -3.0, -5.0, //
        ninf, ninf, ninf, ninf, //
        5.0, -1.0, 5.0, -2.0,
    ];
    let mut out = [0i64; 4];
    elementwise::arg_reduce_rows(true, &x, 4, 4, &mut out).expect("argmax");
    assert_eq!(out, [1, 2, -1, 0]);
    elementwise::arg_reduce_rows(false, &x, 4, 4, &mut out).expect("argmin");
    assert_eq!(out, [0, 3, 0, 3]);
    let (rows, cols) = (300, 1001);
    let big = random(rows * cols, 9);
    let mut out = vec![0i64; rows];
    elementwise::arg_reduce_rows(true, &big, rows, cols, &mut out).expect("argmax");
    for (r, row) in big.chunks(cols).enumerate() {
        let want = row
            .iter()
            .enumerate()
            .fold(
                (0, f32::MIN),
                |(bi, bv), (k, &v)| if v > bv { (k, v) } else { (bi, bv) },
            )
            .0;
        assert_eq!(out[r], want as i64, "row {r}");
    }
    assert!(elementwise::arg_reduce_rows(true, &big, rows, cols + 1, &mut out).is_err());
}

/// The GELU-tanh chain kernel gives, bit for bit, what its seven operators give run
/// one by one through the library's own kernels (square, cube and other exponents;
/// signed zeros, infinities, NaN, values where tanh saturates; a length that is not
/// a multiple of the kernel's block).
#[test]
fn gelu_tanh_chain_is_the_operators_one_by_one() {
    let mut x: Vec<f32> = random(1000, 7).iter().map(|v| v * 8.0).collect();
    x.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-30,
        -1e30,
        12.5,
        -12.5,
        3.0e5,
    ]);
    let n = x.len();
    let scalar = |op: BinaryOp, a: &[f32], s: f32| {
        let mut out = vec![0f32; a.len()];
        elementwise::binary(op, a, &[a.len()], &[s], &[], &mut out, &[a.len()], false).unwrap();
        out
    };
    for (c1, p) in [(0.044715f32, 3.0f32), (0.044715, 2.0), (0.5, 1.5)] {
        let (half, c2, one) = (0.5f32, 0.797_884_6_f32, 1.0f32);
        let mut pw = vec![0f32; n];
        elementwise::power_scalar(&x, p, &mut pw).unwrap();
        let a = scalar(BinaryOp::Mul, &pw, c1);
        let mut b = vec![0f32; n];
        elementwise::binary(BinaryOp::Add, &x, &[n], &a, &[n], &mut b, &[n], false).unwrap();
        let c = scalar(BinaryOp::Mul, &b, c2);
        let mut t = vec![0f32; n];
        elementwise::unary(elementwise::UnaryOp::Tanh, &c, &mut t).unwrap();
        let d = scalar(BinaryOp::Add, &t, one);
        let h = scalar(BinaryOp::Mul, &x, half);
        let mut want = vec![0f32; n];
        elementwise::binary(BinaryOp::Mul, &h, &[n], &d, &[n], &mut want, &[n], false).unwrap();
        let mut got = vec![0f32; n];
        elementwise::gelu_tanh_chain(&x, [half, p, c1, c2, one], &mut got).unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                "p {p}: x {} gives {g}, the operators {w}",
                x[i]
            );
        }
    }
    assert!(elementwise::gelu_tanh_chain(&x, [0.5, 3.0, 0.1, 0.1, 1.0], &mut [0f32; 3]).is_err());
}

/// `rotate_half` moves the halves of each row, the upper one negated.
#[test]
fn rotate_half_moves_halves_and_negates_by_product() {
    let x = [1.0f32, 2.0, 3.0, f32::NAN, 5.0, -0.0, 0.0, 8.0];
    let mut out = [0f32; 8];
    elementwise::rotate_half(&x, 4, &mut out).unwrap();
    let bits = |v: &[f32]| {
        v.iter()
            .map(|x| if x.is_nan() { 0x7fc0_0000 } else { x.to_bits() })
            .collect::<Vec<_>>()
    };
    assert_eq!(bits(&out), bits(&[-3.0, f32::NAN, 1.0, 2.0, -0.0, -8.0, 5.0, -0.0]));
    assert!(elementwise::rotate_half(&x, 3, &mut out).is_err());
    assert!(elementwise::rotate_half(&x, 4, &mut out[..4]).is_err());
}

#[test]
fn rms_norm_chain_checks_its_rows_and_weight() {
    let x = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let mut out = [0f32; 6];
    // Rows of 3: each row times 1 / sqrt(mean(x^2) + eps), times the weight.
    elementwise::rms_norm_chain(&x, 3, &[1.0, 2.0, 0.5], 2.0, 0.0, true, &mut out).expect("runs");
    let inv = 1.0 / ((1.0f32 + 4.0 + 9.0) / 3.0).sqrt();
    assert_eq!(out[1], 2.0 * (2.0 * inv));
    let e = elementwise::rms_norm_chain(&x, 4, &[1.0; 4], 2.0, 0.0, true, &mut out).unwrap_err();
    assert!(e.0.contains("do not divide"), "{e}");
    let e = elementwise::rms_norm_chain(&x, 3, &[1.0; 2], 2.0, 0.0, false, &mut out).unwrap_err();
    assert!(e.0.contains("weight"), "{e}");
}

#[test]
fn rotary_chain_checks_its_rows_and_period() {
    let x = [1.0f32, 2.0, 3.0, 4.0];
    let (cos, sin) = ([0.5f32, 0.5], [0.25f32, 0.25]);
    let mut out = [0f32; 4];
    elementwise::rotary_chain(&x, 2, &cos, &sin, &mut out).expect("runs");
    // Row 1: [3, 4] * 0.5 + [-4, 3] * 0.25.
    assert_eq!(out[2..], [3.0 * 0.5 + -4.0 * 0.25, 4.0 * 0.5 + 3.0 * 0.25]);
    let e = elementwise::rotary_chain(&x, 3, &cos, &sin, &mut out).unwrap_err();
    assert!(e.0.contains("rotary_chain"), "{e}");
    let e = elementwise::rotary_chain(&x, 2, &cos, &sin[..1], &mut out).unwrap_err();
    assert!(e.0.contains("sin"), "{e}");
    let e = elementwise::rotary_chain(&x, 4, &[1.0; 8], &[1.0; 8], &mut out).unwrap_err();
    assert!(e.0.contains("repeating"), "{e}");
}
