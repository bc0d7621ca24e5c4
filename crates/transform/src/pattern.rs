//! Operator patterns of PrimFuncs, found by analysing their TIR as TVM's
//! `AnnotateTIROpPattern` does (so user PrimFuncs get one too).

use relax_ir::tir::{Block, Buffer, ForKind, IterKind, PrimExpr, PrimExprKind, Stmt};
use relax_ir::visit::for_each_prim_child;
use relax_ir::PrimFunc;

/// TVM's `OpPatternKind`, ordered from the most to the least fusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpPattern {
    /// Every input is read at the output's index.
    ElemWise = 0,
    /// Inputs are read at a subsequence of the output's indices.
    Broadcast = 1,
    /// Any index mapping, no reduction.
    Injective = 2,
    /// A reduction (sum, max, pooling).
    CommReduce = 3,
    /// A multiply-accumulate reduction (convolution, matmul): elementwise
    /// consumers can be fused into it.
    OutEWiseFusable = 4,
    /// Not fusable.
    Opaque = 8,
}

impl OpPattern {
    /// TVM's integer code (`kElemWise` = 0, ..., `kOpaque` = 8).
    pub fn code(self) -> i64 {
        self as i64
    }
}

/// The pattern of `f`: the least fusable pattern of its blocks; `Opaque` for a
/// function whose statements are not all blocks with one store each.
pub fn op_pattern(f: &PrimFunc) -> OpPattern {
    let mut a = Analyzer {
        kind: OpPattern::ElemWise,
        any_block: false,
    };
    a.stmt(&f.body, false);
    if a.any_block {
        a.kind
    } else {
        OpPattern::Opaque
    }
}

struct Analyzer {
    kind: OpPattern,
    any_block: bool,
}

impl Analyzer {
    fn join(&mut self, k: OpPattern) {
        self.kind = self.kind.max(k);
    }
    fn stmt(&mut self, s: &Stmt, in_block: bool) {
        match s {
            Stmt::BlockRealize { block, .. } => {
                if contains_block(&block.body) {
                    // The root (or an outer) block: look inside.
                    self.stmt(&block.body, true);
                } else {
                    self.any_block = true;
                    let k = block_pattern(block);
                    self.join(k);
                }
            }
            Stmt::For { kind, body, .. } => {
                if *kind == ForKind::ThreadBinding {
                    self.join(OpPattern::Opaque);
                }
                self.stmt(body, in_block)
            }
            Stmt::Seq(v) => v.iter().for_each(|x| self.stmt(x, in_block)),
            Stmt::Alloc { body, .. } => self.stmt(body, in_block),
            // Stores outside blocks, conditions, threads, externs: opaque.
            _ => self.join(OpPattern::Opaque),
        }
    }
}

fn contains_block(s: &Stmt) -> bool {
    match s {
        Stmt::BlockRealize { .. } => true,
        Stmt::For { body, .. }
        | Stmt::Alloc { body, .. }
        | Stmt::Let { body, .. }
        | Stmt::Attr { body, .. }
        | Stmt::LaunchThread { body, .. }
        | Stmt::Assert { body, .. }
        | Stmt::While { body, .. } => contains_block(body),
        Stmt::If {
            then_branch,
            else_branch,
            ..
        } => contains_block(then_branch) || else_branch.as_deref().is_some_and(contains_block),
        Stmt::Seq(v) => v.iter().any(contains_block),
        Stmt::BufferStore { .. } | Stmt::Evaluate(_) => false,
    }
}

/// Every buffer load in `e`, with its indices; `None` when `e` calls external code.
fn loads(e: &PrimExpr, out: &mut Vec<(Buffer, Vec<PrimExpr>)>) -> Option<()> {
    match e.kind() {
        PrimExprKind::BufferLoad { buffer, indices } => out.push((buffer.clone(), indices.clone())),
        PrimExprKind::Call { op, .. } if op.contains("call_extern") || op.contains("call_packed") => return None,
        _ => {}
    }
    let mut ok = true;
    for_each_prim_child(e, &mut |c| ok &= loads(c, out).is_some());
    ok.then_some(())
}

/// The pattern of one leaf block.
fn block_pattern(block: &Block) -> OpPattern {
    let Stmt::BufferStore {
        buffer, value, indices, ..
    } = &*block.body
    else {
        return OpPattern::Opaque;
    };
    if block
        .iter_vars
        .iter()
        .any(|iv| matches!(iv.kind, IterKind::Ordered | IterKind::Opaque))
    {
        return OpPattern::Opaque;
    }
    let mut ls = Vec::new();
    if loads(value, &mut ls).is_none() {
        return OpPattern::Opaque;
    }
    let reduce = block.iter_vars.iter().any(|iv| iv.kind == IterKind::CommReduce);
    if reduce || block.init.is_some() {
        return if is_fma(buffer, value) {
            OpPattern::OutEWiseFusable
        } else {
            OpPattern::CommReduce
        };
    }
    let store_vars: Option<Vec<u64>> = indices.iter().map(|i| i.as_var().map(|v| v.id())).collect();
    let Some(store_vars) = store_vars else {
        return OpPattern::Injective;
    };
    let mut kind = OpPattern::ElemWise;
    for (buf, idx) in &ls {
        // Unit dimensions read at index 0 do not count (TVM's IsBroadcastPattern).
        let vars: Option<Vec<u64>> = idx
            .iter()
            .zip(buf.shape())
            .filter(|(i, d)| !(d.as_int() == Some(1) && i.as_int() == Some(0)))
            .map(|(i, _)| i.as_var().map(|v| v.id()))
            .collect();
        let Some(vars) = vars else {
            return OpPattern::Injective;
        };
        if vars == store_vars {
            continue;
        }
        // A subsequence of the store's indices, in order.
        let mut it = store_vars.iter();
        if vars.iter().all(|v| it.any(|s| s == v)) {
            kind = kind.max(OpPattern::Broadcast);
        } else {
            return OpPattern::Injective;
        }
    }
    kind
}

/// `C[..] = C[..] + a * b` (casts allowed): a multiply-accumulate.
fn is_fma(out: &Buffer, value: &PrimExpr) -> bool {
    use relax_ir::tir::BinOp;
    let PrimExprKind::Binary { op: BinOp::Add, a, b } = value.kind() else {
        return false;
    };
    let reads_out = |e: &PrimExpr| matches!(e.kind(), PrimExprKind::BufferLoad { buffer, .. } if buffer == out);
    let is_mul = |e: &PrimExpr| {
        let e = strip_cast(e);
        matches!(e.kind(), PrimExprKind::Binary { op: BinOp::Mul, .. })
    };
    (reads_out(a) && is_mul(b)) || (reads_out(b) && is_mul(a))
}

fn strip_cast(e: &PrimExpr) -> &PrimExpr {
    match e.kind() {
        PrimExprKind::Cast { value, .. } => strip_cast(value),
        _ => e,
    }
}
