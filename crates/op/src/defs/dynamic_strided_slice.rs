//! `dynamic_strided_slice(x, begin, end, strides)`: the slice bounds are
//! tensors read at run time, so the output shape is too. As TVM does, the
//! legalization emits a shape function computing the extents, converts its
//! result to a shape, binds fresh variables to it with `match_cast`, and
//! slices into a tensor of that symbolic shape.

use crate::error::infer_err;
use relax_ir::tir::BinOp;
use relax_ir::{Attrs, Call, DataType, Expr, PrimExpr, StructInfo, TirVar};

use crate::common::*;
use crate::index::{if_then_else, lt0};
use crate::legalize::te::Te;
use crate::legalize::{Emitter, LegalizeCtx, Legalized, Lowered, OrSkip, Skip};
use crate::{InferCtx, OpDef};

/// StructInfo: rank-preserving, extents unknown until run time (TVM's
/// `InferStructInfoDynStridedSlice`).
fn infer(call: &Call, args: &[StructInfo], _ctx: &InferCtx) -> Res {
    let ts = tensor_args(call, args, 4)?;
    let data = ts[0];
    if data.ndim == -1 {
        return Ok(tensor_ndim(data.dtype, -1, data.vdevice.clone()));
    }
    for (t, name) in ts[1..].iter().zip(["begin", "end", "strides"]) {
        if t.ndim != 1 {
            return Err(infer_err!(
                "Dynamic strided slice requires {name} to be 1d tensor (list of values)."
            ));
        }
        let Some(s) = shape_of(t) else {
            return Err(infer_err!(
                "Dynamic strided slice requires the input {name} to have well-defined shape."
            ));
        };
        let Some(k) = s[0].as_int() else {
            return Err(infer_err!(
                "Dynamic strided slice requires the input {name} to have a known integer shape value."
            ));
        };
        if k != data.ndim as i64 {
            return Err(infer_err!(
                "Dynamic strided slice requires the number of indices in {name} to equal the number of axes."
            ));
        }
        if !t.dtype.is_void() && t.dtype != DataType::INT64 {
            return Err(infer_err!(
                "Dynamic strided_slice expects the input {name}values to be all int64. However, {name} has dtype {}.",
                t.dtype
            ));
        }
    }
    Ok(tensor_ndim(data.dtype, data.ndim, data.vdevice.clone()))
}

/// `T.Select(c, a, b)`.
fn select(c: PrimExpr, a: PrimExpr, b: PrimExpr) -> PrimExpr {
    PrimExpr::select(c, a, b)
}

/// The extent of axis `i` (a loop variable) among `shape`: nested selects,
/// `-1` past the last axis.
fn extent_of(i: &PrimExpr, shape: &[PrimExpr]) -> PrimExpr {
    let mut len = int(-1);
    for (d, ext) in shape.iter().enumerate() {
        let is_d = PrimExpr::binary(BinOp::Eq, i.clone(), int(d as i64));
        len = select(is_d, ext.clone(), len);
    }
    len
}

/// An index clamped into `[lo, hi]` after wrapping a negative one.
fn clamp(index: &PrimExpr, extent: &PrimExpr, lo: i64, hi: &PrimExpr) -> PrimExpr {
    let wrapped = select(lt0(index), add(index, extent), index.clone());
    min(&max(&wrapped, &int(lo)), hi)
}

/// The shape function: `out[i]` is the length of the slice along axis `i`,
/// `ceildiv(end - begin, stride)` with both bounds canonicalized for the
/// stride's sign.
fn shape_func(ctx: &LegalizeCtx, ndim: usize) -> Result<Lowered, Skip> {
    let mut t = Te::new();
    let x = ctx.placeholder(&mut t, 0)?;
    let mut bes = Vec::new();
    for k in 1..4 {
        bes.push(ctx.placeholder(&mut t, k)?);
    }
    let shape = x.shape().to_vec();
    let names = ["i".to_string()];
    t.compute_named("T_shape_func_strided_slice_dynamic", &[int(ndim as i64)], &names, |i| {
        let i = &i[0];
        let at = |b: &relax_ir::Buffer| PrimExpr::load(b, vec![i.clone()]);
        let (begin, end, stride) = (at(&bes[0]), at(&bes[1]), at(&bes[2]));
        let len = extent_of(i, &shape);
        let last = sub(&len, &int(1));
        // stride < 0: ceildiv(begin - end, -stride) over [-1, len - 1]
        let (b, e) = (clamp(&begin, &len, -1, &last), clamp(&end, &len, -1, &last));
        let negative = PrimExpr::binary(
            BinOp::FloorDiv,
            sub(&sub(&sub(&b, &e), &stride), &int(1)),
            mul(&stride, &int(-1)),
        );
        // stride > 0: ceildiv(end - begin, stride) over [0, len]
        let (b, e) = (clamp(&begin, &len, 0, &len), clamp(&end, &len, 0, &len));
        let positive = PrimExpr::binary(
            BinOp::FloorDiv,
            sub(&sub(&add(&e, &stride), &b), &int(1)),
            stride.clone(),
        );
        select(lt0(&stride), negative, positive)
    });
    let out = StructInfo::tensor(vec![int(ndim as i64)], DataType::INT64);
    Ok(Lowered::from_te("shape_func", t, 1, out))
}

/// The slice itself into a tensor of the (symbolic) shape `out_shape`.
fn slice(ctx: &LegalizeCtx, out_shape: Vec<PrimExpr>) -> Result<Lowered, Skip> {
    let mut t = Te::new();
    let x = ctx.placeholder(&mut t, 0)?;
    let begin = ctx.placeholder(&mut t, 1)?;
    ctx.placeholder(&mut t, 2)?;
    let strides = ctx.placeholder(&mut t, 3)?;
    let shape = x.shape().to_vec();
    let names: Vec<String> = (0..shape.len()).map(|d| format!("ax{d}")).collect();
    t.compute_named("T_strided_slice_dynamic", &out_shape, &names, |i| {
        let idx = (0..shape.len())
            .map(|d| {
                let at = |b: &relax_ir::Buffer| PrimExpr::load(b, vec![int(d as i64)]);
                let (b, s) = (at(&begin), at(&strides));
                let dim = &shape[d];
                let wrapped = if_then_else(lt0(&b), add(&b, dim), b.clone());
                let lo = if_then_else(lt0(&s), int(-1), int(0));
                let hi = if_then_else(lt0(&s), sub(dim, &int(1)), dim.clone());
                add(&min(&max(&wrapped, &lo), &hi), &mul(&i[d], &s))
            })
            .collect();
        PrimExpr::load(&x, idx)
    });
    // The extents are defined by the output buffer: no `tir_vars`.
    let args = t.args.clone();
    let mut lowered = Lowered {
        name: "dynamic_strided_slice".into(),
        func: t.build(1),
        args,
        out: StructInfo::tensor(out_shape, x.dtype()),
        tir_vars: Vec::new(),
    };
    crate::legalize::index::data_read_first(&mut lowered.func, &x);
    // The data is read at run-time positions: the whole tensor.
    crate::legalize::index::for_each_block(&mut lowered.func.body, &mut |b| {
        for r in b.reads.iter_mut().filter(|r| r.buffer == x) {
            r.region = crate::legalize::te::whole_region(&x).region;
        }
    });
    Ok(lowered)
}

/// Legalization: shape function, `tensor_to_shape`, `match_cast` to fresh
/// extents, then the slice.
fn legalize(ctx: &LegalizeCtx, em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    const UNKNOWN: &str = "the data's shape or dtype is not known";
    let xt = ctx.args.first().and_then(StructInfo::as_tensor).or_skip(UNKNOWN)?;
    if xt.dtype.is_void() || ctx.args.len() != 4 {
        return Err(Skip::new(UNKNOWN));
    }
    let ndim = usize::try_from(xt.ndim).ok().or_skip(UNKNOWN)?;
    for a in &ctx.args[1..] {
        let known = a.as_tensor().is_some_and(|t| {
            t.dtype == DataType::INT64
                && t.shape_values()
                    .is_some_and(|s| s.len() == 1 && s[0].as_int() == Some(ndim as i64))
        });
        if !known {
            return Err(Skip::new(
                "begin, end and strides must be int64 vectors of the data's rank",
            ));
        }
    }
    let sf = shape_func(ctx, ndim)?;
    let sinfo = sf.out.clone();
    let lengths = em.call_tir(sf);
    let lengths = em.emit("gv", lengths, sinfo);
    let as_shape = Expr::call(
        Expr::op("relax.tensor_to_shape"),
        vec![lengths],
        Attrs::new(),
        Vec::new(),
    );
    let shape_sinfo = StructInfo::Shape(relax_ir::relax::ShapeStructInfo {
        values: None,
        ndim: ndim as i32,
    });
    let as_shape = em.emit("gv1", as_shape, shape_sinfo);
    let vars: Vec<PrimExpr> = (0..ndim).map(|_| TirVar::new("s", DataType::INT64).to_expr()).collect();
    em.match_cast("gv2", as_shape, StructInfo::shape(vars.clone()));
    let lowered = slice(ctx, vars)?;
    Ok(Legalized::Expr(em.call_tir(lowered)))
}

/// The operator.
pub const DEF: OpDef = OpDef {
    name: "relax.dynamic_strided_slice",
    pure: true,
    infer,
    legalize: Some(legalize),
};
