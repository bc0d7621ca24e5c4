//! `image.grid_sample(data, grid, method="bilinear", layout="NCHW",
//! padding_mode="zeros", align_corners=False)`: samples `data` at the
//! normalized coordinates of `grid` (`[batch, 2 | 3, spatial...]`, x first,
//! `-1` and `1` the corner pixels' centers with `align_corners`, their outer
//! edges without), as TVM's `relax.image.grid_sample` and topi's
//! `image.grid_sample`.

use relax_ir::tir::{BinOp, Intrinsic};
use relax_ir::{Call, DataType, PrimExpr, StructInfo};

use crate::attrs::{op_attrs, OpAttrs};
use crate::common::*;
use crate::error::infer_err;
use crate::legalize::te::Te;
use crate::legalize::{Emitter, LegalizeCtx, Legalized, Lowered, OrSkip, Skip};
use crate::{InferCtx, OpDef};

op_attrs! {
    /// The attributes (TVM's `GridSampleAttrs`).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct GridSampleAttrs {
        /// `"bilinear"`, `"nearest"` or `"bicubic"` (2-d only).
        pub method: String = str,
        /// The data layout (`"NCHW"`, `"NCDHW"`).
        pub layout: String = str,
        /// `"zeros"`, `"border"` or `"reflection"`.
        pub padding_mode: String = str,
        /// Whether `-1`/`1` are the corner pixels' centers.
        pub align_corners: bool = bool,
    }
}

/// StructInfo: `data`'s dtype; its batch and channel axes (by the layout) with
/// the grid's spatial extents.
fn infer(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let ts = tensor_args(call, args, 2)?;
    let (data, grid) = (ts[0], ts[1]);
    let attrs = GridSampleAttrs::from_call(call)?;
    let layout = attrs.layout.as_str();
    let nd = layout.len();
    if data.ndim != -1 && data.ndim as usize != nd {
        return Err(infer_err!(
            "In relax.image.grid_sample, layout {layout} requires the input to be {nd}-dim tensor. However, the given input has ndim {}",
            data.ndim
        ));
    }
    let vd = data.vdevice.clone();
    let (Some(ds), Some(gs)) = (shape_of(data), shape_of(grid)) else {
        return Ok(tensor_ndim(data.dtype, nd as i32, vd));
    };
    if gs.len() < nd {
        return Err(infer_err!(
            "relax.image.grid_sample expects a grid of rank {nd}, got rank {}",
            gs.len()
        ));
    }
    let mut spatial = gs[2..nd].iter();
    let out = layout
        .chars()
        .zip(&ds)
        .map(|(c, d)| match c {
            'N' | 'C' => d.clone(),
            _ => spatial.next().cloned().unwrap_or_else(|| d.clone()),
        })
        .collect();
    Ok(tensor(out, data.dtype, vd))
}

/// Scalar arithmetic of the sampling, in `dt` (the data's float type) for
/// coordinates and weights and `int32` for pixel indices, as topi writes it.
struct Ops {
    dt: DataType,
}

impl Ops {
    fn f(&self, v: f64) -> PrimExpr {
        PrimExpr::float_of(v, self.dt)
    }
    fn bin(&self, op: BinOp, a: PrimExpr, b: PrimExpr) -> PrimExpr {
        PrimExpr::binary(op, a, b)
    }
    fn add(&self, a: PrimExpr, b: PrimExpr) -> PrimExpr {
        self.bin(BinOp::Add, a, b)
    }
    fn sub(&self, a: PrimExpr, b: PrimExpr) -> PrimExpr {
        self.bin(BinOp::Sub, a, b)
    }
    fn mul(&self, a: PrimExpr, b: PrimExpr) -> PrimExpr {
        self.bin(BinOp::Mul, a, b)
    }
    /// `x` as a float of `dt` (an `int32` index is cast).
    fn float(&self, x: PrimExpr) -> PrimExpr {
        if x.dtype() == self.dt {
            x
        } else {
            x.cast(self.dt)
        }
    }
    /// `floor(x)` as `int32`.
    fn floor_i32(&self, x: PrimExpr) -> PrimExpr {
        PrimExpr::intrinsic_call(Intrinsic::Floor, self.dt, vec![x]).cast(DataType::INT32)
    }
    /// `nearbyint(x)` as `int32`.
    fn round_i32(&self, x: PrimExpr) -> PrimExpr {
        PrimExpr::intrinsic_call(Intrinsic::Nearbyint, self.dt, vec![x]).cast(DataType::INT32)
    }
    /// `x + k` on an `int32` index.
    fn shift(&self, x: &PrimExpr, k: i64) -> PrimExpr {
        if k == 0 {
            return x.clone();
        }
        self.add(x.clone(), PrimExpr::int_of(k, DataType::INT32))
    }
    /// A grid coordinate mapped to pixels (`_unnormalize`).
    fn unnormalize(&self, g: PrimExpr, size: i64, align: bool) -> PrimExpr {
        let g1 = self.add(g, self.f(1.0));
        if align {
            self.bin(BinOp::Div, self.mul(g1, self.f((size - 1) as f64)), self.f(2.0))
        } else {
            let scaled = self.bin(BinOp::Div, self.mul(g1, self.f(size as f64)), self.f(2.0));
            self.add(self.f(-0.5), scaled)
        }
    }
    /// `min(max(x, 0), size - 1)` (`_clip_coordinates`), in floats.
    fn clip(&self, x: PrimExpr, size: i64) -> PrimExpr {
        let x = self.float(x);
        self.bin(
            BinOp::Min,
            self.bin(BinOp::Max, x, self.f(0.0)),
            self.f((size - 1) as f64),
        )
    }
    /// `_reflect_coordinates`: `x` reflected into `[0, size - 1]` (`align`) or
    /// `[-0.5, size - 0.5]`, in floats (exact for the integer indices of bicubic
    /// sampling too).
    fn reflect(&self, x: PrimExpr, size: i64, align: bool) -> PrimExpr {
        let x = self.float(x);
        let (span, corner) = if align { (size - 1, 0.0) } else { (size, -0.5) };
        let inside = self.bin(
            BinOp::And,
            self.bin(BinOp::Ge, x.clone(), self.f(corner)),
            self.bin(BinOp::Le, x.clone(), self.f(span as f64 + corner)),
        );
        let dist = PrimExpr::intrinsic_call(Intrinsic::Fabs, self.dt, vec![self.sub(self.f(corner), x.clone())]);
        // `trunc(dist) / span` in integers, the number of whole spans.
        let times = self
            .bin(
                BinOp::Div,
                dist.clone().cast(DataType::INT32).cast(DataType::INT64),
                PrimExpr::int_of(span, DataType::INT64),
            )
            .cast(DataType::INT32);
        let odd = self.bin(BinOp::Mod, times.clone(), PrimExpr::int_of(2, DataType::INT32));
        let extra = self.sub(
            dist,
            self.float(self.mul(times.cast(DataType::INT64), PrimExpr::int_of(span, DataType::INT64))),
        );
        let reflected = PrimExpr::intrinsic_call(
            Intrinsic::IfThenElse,
            self.dt,
            vec![
                self.bin(BinOp::Eq, odd, PrimExpr::int_of(0, DataType::INT32)),
                self.add(extra.clone(), self.f(corner)),
                self.add(self.sub(self.f(span as f64), extra), self.f(corner)),
            ],
        );
        PrimExpr::intrinsic_call(Intrinsic::IfThenElse, self.dt, vec![inside, x, reflected])
    }
}

/// Legalization, as topi's `grid_sample`: one `compute` stage over the output,
/// each element an interpolation of guarded reads of `data`.
fn legalize(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    let attrs = GridSampleAttrs::from_call(ctx.call).map_err(Skip::from)?;
    let three_d = match attrs.layout.as_str() {
        "NCHW" => false,
        "NCDHW" => true,
        other => return Err(Skip::new(format!("layout {other} (only NCHW and NCDHW)"))),
    };
    let method = attrs.method.as_str();
    let supported = match method {
        "bilinear" | "nearest" => true,
        "bicubic" => !three_d,
        _ => false,
    };
    if !supported {
        return Err(Skip::new(format!("method {method} with layout {}", attrs.layout)));
    }
    let pad = attrs.padding_mode.as_str();
    if !matches!(pad, "zeros" | "border" | "reflection") {
        return Err(Skip::new(format!("padding mode {pad}")));
    }
    let (out_shape, _) = ctx.out_tensor()?;
    let mut t = Te::new();
    let data = ctx.placeholder(&mut t, 0)?;
    let grid = ctx.placeholder(&mut t, 1)?;
    let dt = data.dtype();
    if !(dt.code == relax_ir::TypeCode::Float && dt.bits >= 16) || grid.dtype() != dt {
        return Err(Skip::new("data and grid must be of the same float dtype"));
    }
    let nsp = if three_d { 3 } else { 2 };
    let dims: Vec<i64> = data.shape()[2..]
        .iter()
        .map(|d| d.as_int())
        .collect::<Option<_>>()
        .or_skip("the data's spatial extents are not constant")?;
    if dims.len() != nsp || grid.shape().len() != nsp + 2 || out_shape.len() != nsp + 2 {
        return Err(Skip::new("the data, grid and output ranks do not match the layout"));
    }
    let o = Ops { dt };
    let align = attrs.align_corners;
    let i64c = |v: i64| PrimExpr::int_of(v, DataType::INT64);
    t.compute_named(
        "compute",
        &out_shape,
        &if three_d {
            &["n", "c", "d", "h", "w"][..]
        } else {
            &["n", "c", "h", "w"][..]
        }
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
        |i| {
            let (n, c) = (i[0].clone(), i[1].clone());
            let sp = &i[2..];
            // The pixel at `idx` (int32 per spatial axis), zero outside.
            let pixel = |idx: &[PrimExpr]| {
                let mut cond: Option<PrimExpr> = None;
                let mut conj = |e: PrimExpr| {
                    cond = Some(match cond.take() {
                        None => e,
                        Some(c) => PrimExpr::binary(BinOp::And, c, e),
                    });
                };
                for x in idx {
                    conj(PrimExpr::binary(
                        BinOp::Ge,
                        x.clone(),
                        PrimExpr::int_of(0, DataType::INT32),
                    ));
                }
                for (x, &size) in idx.iter().zip(&dims) {
                    conj(PrimExpr::binary(BinOp::Lt, x.clone().cast(DataType::INT64), i64c(size)));
                }
                let mut at = vec![n.clone(), c.clone()];
                at.extend(idx.iter().map(|x| x.clone().cast(DataType::INT64)));
                PrimExpr::intrinsic_call(
                    Intrinsic::IfThenElse,
                    dt,
                    vec![
                        cond.unwrap_or_else(|| PrimExpr::bool(true)),
                        PrimExpr::load(&data, at),
                        o.f(0.0),
                    ],
                )
            };
            // Grid coordinate `k` (0 = x, the last axis) at this output point.
            let coord = |k: usize| {
                let mut at = vec![n.clone(), i64c(k as i64)];
                at.extend(sp.iter().cloned());
                PrimExpr::load(&grid, at)
            };
            // Source coordinates, axis order (z,) y, x; with the padding applied.
            let src: Vec<PrimExpr> = (0..nsp)
                .map(|a| {
                    let size = dims[a];
                    let u = o.unnormalize(coord(nsp - 1 - a), size, align);
                    if method == "bicubic" {
                        return u;
                    }
                    match pad {
                        "reflection" => o.clip(o.reflect(u, size, align), size),
                        "border" => o.clip(u, size),
                        _ => u,
                    }
                })
                .collect();
            match method {
                "nearest" => {
                    let idx: Vec<PrimExpr> = src.iter().map(|s| o.round_i32(s.clone())).collect();
                    pixel(&idx)
                }
                "bilinear" => {
                    let lo: Vec<PrimExpr> = src.iter().map(|s| o.floor_i32(s.clone())).collect();
                    // Fractions and their complements per axis.
                    let frac: Vec<PrimExpr> = src
                        .iter()
                        .zip(&lo)
                        .map(|(s, l)| o.sub(s.clone(), o.float(l.clone())))
                        .collect();
                    let w = |a: usize, hi: bool| {
                        if hi {
                            frac[a].clone()
                        } else {
                            o.sub(o.f(1.0), frac[a].clone())
                        }
                    };
                    // topi's corner order and weight order.
                    let corners: Vec<Vec<bool>> = if three_d {
                        // (z, y, x) high flags, in topi's order of the eight terms.
                        [
                            [false, false, false],
                            [false, false, true],
                            [true, true, false],
                            [true, true, true],
                            [false, true, false],
                            [true, false, true],
                            [true, false, false],
                            [false, true, true],
                        ]
                        .iter()
                        .map(|c| c.to_vec())
                        .collect()
                    } else {
                        [[false, false], [false, true], [true, false], [true, true]]
                            .iter()
                            .map(|c| c.to_vec())
                            .collect()
                    };
                    let mut sum: Option<PrimExpr> = None;
                    for hi in corners {
                        let idx: Vec<PrimExpr> = lo.iter().zip(&hi).map(|(l, &h)| o.shift(l, h as i64)).collect();
                        // 2-d: pixel * wy * wx; 3-d: pixel * wx * wy * wz.
                        let order: Vec<usize> = if three_d { vec![2, 1, 0] } else { vec![0, 1] };
                        let term = order.into_iter().fold(pixel(&idx), |acc, a| o.mul(acc, w(a, hi[a])));
                        sum = Some(match sum {
                            None => term,
                            Some(s) => o.add(s, term),
                        });
                    }
                    sum.unwrap_or_else(|| o.f(0.0))
                }
                _ => {
                    // bicubic (2-d)
                    let a = -0.75;
                    let w1 = |f: PrimExpr| {
                        let t = o.sub(o.mul(o.f(a + 2.0), f.clone()), o.f(a + 3.0));
                        o.add(o.mul(o.mul(t, f.clone()), f), o.f(1.0))
                    };
                    let w2 = |f: PrimExpr| {
                        let t = o.sub(o.mul(o.f(a), f.clone()), o.f(5.0 * a));
                        let t = o.add(o.mul(t, f.clone()), o.f(8.0 * a));
                        o.sub(o.mul(t, f), o.f(4.0 * a))
                    };
                    let interp = |p: [PrimExpr; 4], f: PrimExpr| {
                        let ws = [
                            w2(o.add(f.clone(), o.f(1.0))),
                            w1(f.clone()),
                            w1(o.sub(o.f(1.0), f.clone())),
                            w2(o.sub(o.f(2.0), f)),
                        ];
                        let [p0, p1, p2, p3] = p;
                        let [a0, a1, a2, a3] = ws;
                        o.add(o.add(o.add(o.mul(p0, a0), o.mul(p1, a1)), o.mul(p2, a2)), o.mul(p3, a3))
                    };
                    let (y, x) = (src[0].clone(), src[1].clone());
                    let (yf, xf) = (o.floor_i32(y.clone()), o.floor_i32(x.clone()));
                    let y_frac = o.sub(y, o.float(yf.clone()));
                    let x_frac = o.sub(x, o.float(xf.clone()));
                    let place = |v: PrimExpr, size: i64| match pad {
                        "border" => o.clip(v, size).cast(DataType::INT32),
                        "reflection" => o.clip(o.reflect(v, size, align), size).cast(DataType::INT32),
                        _ => v,
                    };
                    let row = |r: i64| {
                        let yr = place(o.shift(&yf, r - 1), dims[0]);
                        let px = |k: i64| pixel(&[yr.clone(), place(o.shift(&xf, k - 1), dims[1])]);
                        interp([px(0), px(1), px(2), px(3)], x_frac.clone())
                    };
                    interp([row(0), row(1), row(2), row(3)], y_frac)
                }
            }
        },
    );
    Ok(Legalized::call(Lowered::from_te("grid_sample", t, 1, ctx.out.clone())))
}

/// The operator.
pub const DEF: OpDef = OpDef {
    name: "relax.image.grid_sample",
    pure: true,
    infer,
    legalize: Some(legalize),
};
