//! `nn.attention(query, key, value, bias=None, scale=None, causal_mask=None,
//! window_size=None)`: multi-head attention on `(batch, seq, heads, dim)`
//! tensors. Not legalized (TVM lowers it through a library kernel).

use relax_ir::{Call, StructInfo};

use crate::op::common::*;
use crate::op::{InferCtx, OpDef};

/// StructInfo (TVM's `InferStructInfoAttention`): `(B, S, N, H_v)` with the
/// query's dtype, after checking that the batch sizes, the head counts, the
/// query/key head dimension and the key/value sequence lengths agree.
fn infer(call: &Call, args: &[StructInfo], ctx: &InferCtx) -> Res {
    if args.len() < 3 || args.len() > 4 {
        return Err(format!(
            "{} expects 3 or 4 arguments, got {}",
            op_name(call),
            args.len()
        ));
    }
    let q = tensor_arg(call, args, 0)?;
    let k = tensor_arg(call, args, 1)?;
    let v = tensor_arg(call, args, 2)?;
    for (t, role) in [(q, "query"), (k, "key"), (v, "value")] {
        if t.ndim != -1 && t.ndim != 4 {
            return Err(format!(
                "The {role} should have 4 dimensions (batch, sequence, heads, head dim), but has {}",
                t.ndim
            ));
        }
    }
    let vd = q.vdevice.clone();
    let (Some(qs), Some(ks), Some(vs)) = (shape_of(q), shape_of(k), shape_of(v)) else {
        return Ok(tensor_ndim(q.dtype, 4, vd));
    };
    let an = ctx.analyzer;
    let checks = [
        (&qs[0], &ks[0], "batch size of query and key"),
        (&qs[0], &vs[0], "batch size of query and value"),
        (&qs[2], &ks[2], "number of heads of query and key"),
        (&qs[3], &ks[3], "head dimension of query and key"),
        (&ks[1], &vs[1], "sequence length of key and value"),
    ];
    for (a, b, what) in checks {
        if prove_ne(an, a, b) {
            return Err(format!("The {what} must agree, but are {} and {}", show(a), show(b)));
        }
    }
    Ok(tensor(
        vec![qs[0].clone(), qs[1].clone(), qs[2].clone(), vs[3].clone()],
        q.dtype,
        vd,
    ))
}

/// The operator.
pub const DEF: OpDef = OpDef {
    name: "relax.nn.attention",
    pure: true,
    infer,
    legalize: None,
};
