//! `matmul` with NumPy broadcasting of the batch dimensions (`topi.matmul`
//! as the Relax legalizer writes it: one `matmul` block, reduction loop `k`), and
//! the `NT_matmul` that `fuse-transpose-matmul` makes of `matmul(x,
//! permute_dims(w))` (TVM's `FuseTransposeMatmul`): the same product reading the
//! untransposed 2-D `w` as `w[j, k]`.

use relax_ir::tir::BinOp;
use relax_ir::PrimExpr;

use super::te::{Reduce, Te};
use super::{Emitter, LegalizeCtx, Legalized, Lowered, Skip};
use crate::attrs::{MatmulAttrs, OpAttrs};

/// `matmul`: the accumulation runs in the output dtype (`out_dtype`, else the
/// operands' common dtype, as inference decided).
pub(crate) fn matmul(ctx: &LegalizeCtx, _em: &mut dyn Emitter) -> Result<Legalized, Skip> {
    MatmulAttrs::from_call(ctx.call).map_err(Skip::from)?;
    Ok(Legalized::call(product(ctx, false)?))
}

/// `NT_matmul`: `matmul(x, permute_dims(w))` for a 2-D `w` of shape `[N, K]`, as one
/// PrimFunc reading `w[j, k]` (no transposed copy). `ctx.call` is the `matmul`
/// with `w` itself as its second argument, `ctx.args` their StructInfo and
/// `ctx.out` the product's.
pub fn nt_matmul(ctx: &LegalizeCtx) -> Result<Lowered, Skip> {
    MatmulAttrs::from_call(ctx.call).map_err(Skip::from)?;
    product(ctx, true)
}

/// The product `x @ y` (`y` read as `y[j, k]` when `transposed`), accumulated in the
/// output dtype.
fn product(ctx: &LegalizeCtx, transposed: bool) -> Result<Lowered, Skip> {
    let (out_shape, odt) = ctx.out_tensor()?;
    let mut t = Te::new();
    let x = ctx.placeholder(&mut t, 0)?;
    let y = ctx.placeholder(&mut t, 1)?;
    let (a, b) = (x.shape().len(), y.shape().len());
    if a == 0 || b == 0 {
        return Err(Skip::new("a 0-d operand"));
    }
    let kdim = x.shape()[a - 1].clone();
    if transposed && b != 2 {
        return Err(Skip::new("the transposed operand is not 2-D"));
    }
    let r = out_shape.len();
    // Number of output dimensions that are batch dimensions.
    let nbatch = r - usize::from(a > 1) - usize::from(b > 1);
    let (xb, yb) = (x.clone(), y.clone());
    let oshape = out_shape.clone();
    let access = |buf: &relax_ir::Buffer, s: &[PrimExpr], k: &PrimExpr, is_x: bool| -> PrimExpr {
        let rank = buf.shape().len();
        let mut idx = Vec::new();
        if rank > 1 {
            let nb = rank - 2;
            for i in 0..nb {
                let oi = nbatch - nb + i;
                let d = &buf.shape()[i];
                if d.as_int() == Some(1) && oshape[oi].as_int() != Some(1) {
                    idx.push(PrimExpr::int(0));
                } else {
                    idx.push(s[oi].clone());
                }
            }
            if is_x {
                idx.push(s[nbatch].clone());
                idx.push(k.clone());
            } else if transposed {
                idx.push(s[r - 1].clone());
                idx.push(k.clone());
            } else {
                idx.push(k.clone());
                idx.push(s[r - 1].clone());
            }
        } else {
            idx.push(k.clone());
        }
        let v = PrimExpr::load(buf, idx);
        v.cast(odt)
    };
    t.reduce(
        Reduce::sum("matmul", out_shape.clone(), "i", vec![("k".into(), kdim)], odt),
        |acc, v| PrimExpr::binary(BinOp::Add, acc, v),
        |s, k| PrimExpr::binary(BinOp::Mul, access(&xb, s, &k[0], true), access(&yb, s, &k[0], false)),
    );
    let name = if transposed { "NT_matmul" } else { "matmul" };
    Ok(Lowered::from_te(name, t, 1, ctx.out.clone()))
}
