//! A fused attention on the host as a call of the native kernel library,
//! `relax_host.attention`, instead of a generated PrimFunc: the same operands read
//! the same way (permutations, merged head dimensions, shared heads, scalar
//! factors), described by strides that the call carries as `R.shape` integers
//! (symbolic where the shapes are). The library computes the scores and the
//! weighted values with its register-tiled matrix products and the softmax with
//! its own kernels (`relax_host_kernels::attention`), where the generated kernel
//! would run as scalar native code.

use relax_host_kernels::library::HostKernel;

use super::kernel::{Access, Layout, Spec};
use super::*;

/// One index of the kernel's iteration space.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Index {
    /// A row dimension (after a merged first dimension is split in two).
    Row(usize),
    /// The key position.
    Key,
    /// The head (or value) dimension.
    Inner,
}

/// A logical index of an operand: a sum of indices times factors.
type Term = Vec<(Index, PrimExpr)>;

fn mul(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) => x
            .checked_mul(y)
            .map_or_else(|| te::mul(a.clone(), b.clone()), PrimExpr::int),
        (Some(1), _) => b.clone(),
        (_, Some(1)) => a.clone(),
        _ => te::mul(a.clone().cast(DataType::INT64), b.clone().cast(DataType::INT64)),
    }
}

fn add(a: &PrimExpr, b: &PrimExpr) -> PrimExpr {
    match (a.as_int(), b.as_int()) {
        (Some(0), _) => b.clone(),
        (_, Some(0)) => a.clone(),
        (Some(x), Some(y)) => x
            .checked_add(y)
            .map_or_else(|| te::add(a.clone(), b.clone()), PrimExpr::int),
        _ => te::add(a.clone().cast(DataType::INT64), b.clone().cast(DataType::INT64)),
    }
}

/// Row-major strides of `shape`.
fn strides(shape: &[PrimExpr]) -> Vec<PrimExpr> {
    let mut s = vec![PrimExpr::int(1); shape.len()];
    for p in (0..shape.len().saturating_sub(1)).rev() {
        s[p] = mul(&s[p + 1], &shape[p + 1]);
    }
    s
}

/// The iteration space: the rows as the kernel sees them.
struct Space {
    /// The merged first row dimension's second extent, when operands split it.
    split: Option<PrimExpr>,
}

impl Space {
    /// Index of the kernel row for row `r` of the spec (not the split one).
    fn row(&self, r: usize) -> usize {
        r + self.split.is_some() as usize
    }

    /// The logical index of `slot` of an operand (`split`: the operand reads the
    /// first row dimension split in two).
    fn terms(&self, slot: Index, first: bool, split: bool) -> Vec<Term> {
        let one = PrimExpr::int(1);
        match (slot, &self.split) {
            (Index::Row(0), Some(b)) if first && split => {
                vec![vec![(Index::Row(0), one.clone())], vec![(Index::Row(1), one)]]
            }
            (Index::Row(0), Some(b)) => vec![vec![(Index::Row(0), b.clone()), (Index::Row(1), one)]],
            (Index::Row(r), _) => vec![vec![(Index::Row(self.row(r)), one)]],
            (s, _) => vec![vec![(s, one)]],
        }
    }
}

/// An operand's strides: `(stride, divisor)` per kernel row, key stride, inner stride.
struct Strides {
    rows: Vec<(PrimExpr, i64)>,
    key: PrimExpr,
    inner: PrimExpr,
    offset: PrimExpr,
}

/// The strides of access `a` read at the logical `slots`.
fn operand(space: &Space, rows: usize, a: &Access, slots: &[Index]) -> Option<Strides> {
    let mut logical: Vec<Term> = Vec::new();
    for (p, &s) in slots.iter().enumerate() {
        logical.extend(space.terms(s, p == 0, a.split.is_some()));
    }
    let r = a.shape.len();
    if logical.len() < r {
        let pad = r - logical.len();
        logical.splice(0..0, std::iter::repeat_n(Vec::new(), pad));
    }
    let logical = &logical[logical.len() - r..];
    let mut phys: Vec<Term> = vec![Vec::new(); r];
    for (k, t) in logical.iter().enumerate() {
        if a.shape[k].as_int() == Some(1) {
            continue;
        }
        let p = match &a.axes {
            Some(axes) => *axes.get(k)?,
            None => k,
        };
        *phys.get_mut(p)? = t.clone();
    }
    let mut div = vec![1i64; rows];
    if let Some((axis, rep)) = a.repeat {
        match phys.get(axis)?.as_slice() {
            [] => {}
            [(Index::Row(x), m)] if m.as_int() == Some(1) => div[*x] = rep,
            _ => return None,
        }
    }
    let (st, offset) = match &a.view {
        Some((st, off)) => (st.clone(), off.clone()),
        None => (strides(a.buf.shape()), PrimExpr::int(0)),
    };
    let zero = PrimExpr::int(0);
    let mut out = Strides {
        rows: vec![(zero.clone(), 1); rows],
        key: zero.clone(),
        inner: zero,
        offset,
    };
    for (p, t) in phys.iter().enumerate() {
        for (ix, m) in t {
            let c = mul(m, &st[p]);
            let slot = match ix {
                Index::Row(x) => &mut out.rows.get_mut(*x)?.0,
                Index::Key => &mut out.key,
                Index::Inner => &mut out.inner,
            };
            *slot = add(slot, &c);
        }
    }
    for (x, d) in div.into_iter().enumerate() {
        out.rows[x].1 = d;
    }
    Some(out)
}

/// `R.call_dps_packed("relax_host.attention", ...)` computing `spec`, or `None`
/// when the library does not cover it (a dtype other than float32 or float16, an elementwise
/// map of the scores, layouts it cannot stride).
pub(super) fn library_call(spec: &Spec, out: &StructInfo) -> Option<Expr> {
    let (f32t, f16t) = (DataType::FLOAT32, DataType::FLOAT16);
    let operands: Vec<&Access> = [&spec.q, &spec.k, &spec.v]
        .into_iter()
        .chain(spec.bias.as_ref())
        .collect();
    // float32, or float16 computed in float32 (widened as read, the result rounded
    // once, as the fused PrimFunc computes it).
    if !(spec.dtype == f32t || spec.dtype == f16t)
        || spec.map.is_some()
        || operands
            .iter()
            .copied()
            .chain(spec.fill.as_ref())
            .any(|a| a.buf.dtype() != spec.dtype && a.buf.dtype() != f32t)
    {
        return None;
    }
    // A merged first row dimension split the same way by every operand that splits it.
    let mut split: Option<PrimExpr> = None;
    for a in &operands {
        if let Some(b) = &a.split {
            match &split {
                Some(s) if !same(s, b) => return None,
                _ => split = Some(b.clone()),
            }
        }
    }
    let nr = spec.rows.len();
    let (mut rows, query) = match spec.layout {
        Layout::Bshd => (spec.rows.clone(), 2),
        Layout::Batched => (spec.rows.clone(), nr.checked_sub(1)?),
    };
    if let Some(b) = &split {
        if query == 0 {
            return None;
        }
        let merged = rows.first()?.clone();
        let a = match (merged.as_int(), b.as_int()) {
            (Some(m), Some(bb)) if bb > 0 && m % bb == 0 => PrimExpr::int(m / bb),
            (Some(_), Some(_)) => return None,
            _ => PrimExpr::binary(
                BinOp::FloorDiv,
                merged.cast(DataType::INT64),
                b.clone().cast(DataType::INT64),
            ),
        };
        rows.splice(0..1, [a, b.clone()]);
    }
    let space = Space { split: split.clone() };
    let kq = space.row(query);
    let kr = rows.len();
    let row_slots: Vec<Index> = (0..nr).map(Index::Row).collect();
    // The logical index of q, k, v, the bias and the output.
    let [q_slots, k_slots, v_slots, b_slots, o_slots]: [Vec<Index>; 5] = match spec.layout {
        Layout::Bshd => {
            use Index::*;
            [
                vec![Row(0), Row(2), Row(1), Inner],
                vec![Row(0), Key, Row(1), Inner],
                vec![Row(0), Key, Row(1), Inner],
                vec![Row(0), Row(1), Row(2), Key],
                vec![Row(0), Row(2), Row(1), Inner],
            ]
        }
        Layout::Batched => {
            let batch = &row_slots[..nr - 1];
            let with = |tail: &[Index]| batch.iter().copied().chain(tail.iter().copied()).collect::<Vec<_>>();
            [
                with(&[Index::Row(nr - 1), Index::Inner]),
                with(&[Index::Inner, Index::Key]),
                with(&[Index::Key, Index::Inner]),
                with(&[Index::Row(nr - 1), Index::Key]),
                with(&[Index::Row(nr - 1), Index::Inner]),
            ]
        }
    };
    let q = operand(&space, kr, &spec.q, &q_slots)?;
    let k = operand(&space, kr, &spec.k, &k_slots)?;
    let v = operand(&space, kr, &spec.v, &v_slots)?;
    let bias = match &spec.bias {
        Some(b) => Some(operand(&space, kr, b, &b_slots)?),
        None => None,
    };
    // The output: the call's own row-major tensor.
    let o_st = strides(&spec.out_shape);
    let mut o_rows = vec![PrimExpr::int(0); kr];
    let mut o_inner = PrimExpr::int(0);
    let mut o_terms: Vec<Term> = Vec::new();
    for (p, &s) in o_slots.iter().enumerate() {
        o_terms.extend(space.terms(s, p == 0, false));
    }
    if o_terms.len() != spec.out_shape.len() {
        return None;
    }
    for (p, t) in o_terms.iter().enumerate() {
        for (ix, m) in t {
            let c = mul(m, &o_st[p]);
            match ix {
                Index::Row(x) => o_rows[*x] = add(&o_rows[*x], &c),
                Index::Inner => o_inner = add(&o_inner, &c),
                Index::Key => return None,
            }
        }
    }
    let i64c = |e: &PrimExpr| match e.as_int() {
        Some(v) => PrimExpr::int(v),
        None => e.clone().cast(DataType::INT64),
    };
    let (causal_on, causal_off) = match &spec.causal {
        Some(off) => (1, i64c(off)),
        None => (0, PrimExpr::int(0)),
    };
    let guard = match (spec.zero_empty, spec.nan_stays) {
        (false, _) => 0,
        (true, true) if spec.fill.is_none() => 1,
        (true, false) if spec.fill.is_none() => 2,
        (true, false) => 3,
        (true, true) => return None,
    };
    let mut p: Vec<PrimExpr> = vec![PrimExpr::int(kr as i64)];
    p.extend(rows.iter().map(i64c));
    p.extend([
        PrimExpr::int(kq as i64),
        i64c(&spec.skv),
        PrimExpr::int(spec.d),
        PrimExpr::int(spec.dv),
        PrimExpr::int(causal_on),
        causal_off,
        PrimExpr::int(guard),
        PrimExpr::int(bias.is_some() as i64),
    ]);
    for s in [Some(&q), Some(&k), Some(&v), bias.as_ref()].into_iter().flatten() {
        for (st, d) in &s.rows {
            p.push(i64c(st));
            p.push(PrimExpr::int(*d));
        }
        p.push(i64c(&s.key));
        p.push(i64c(&s.inner));
        p.push(i64c(&s.offset));
    }
    p.extend(o_rows.iter().map(i64c));
    p.push(i64c(&o_inner));
    let float = |v: f64| Expr::new(ExprKind::PrimValue(PrimExpr::float_of(v, DataType::FLOAT64)));
    // A fill other than zero is read from its tensor, after the operands.
    let mut args: Vec<Expr> = operands
        .iter()
        .copied()
        .chain(spec.fill.as_ref())
        .map(|a| a.arg.clone())
        .collect();
    args.push(Expr::shape(p));
    args.push(float(spec.scale));
    for a in &operands {
        args.push(float(a.factor.unwrap_or(1.0)));
    }
    Some(Expr::call(
        Expr::op("relax.call_dps_packed"),
        vec![
            Expr::new(ExprKind::ExternFunc {
                global_symbol: HostKernel::Attention.symbol(),
            }),
            Expr::tuple(args),
        ],
        Attrs::new(),
        vec![out.clone()],
    ))
}
