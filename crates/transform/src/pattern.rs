//! Operator patterns of PrimFuncs, found by analysing their TIR as TVM's
//! `AnnotateTIROpPattern` does (so user PrimFuncs get one too).

use relax_ir::tir::{Block, Buffer, For, ForKind, IterKind, PrimExpr, PrimExprKind, Stmt};
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

/// The pattern of `f`; `Opaque` for a function whose statements are not all
/// blocks with one store each.
pub fn op_pattern(f: &PrimFunc) -> OpPattern {
    op_info(f).0
}

/// The pattern of `f` and whether one of its blocks is a multiply-accumulate
/// (a convolution or matmul rather than pooling or a softmax).
pub fn op_info(f: &PrimFunc) -> (OpPattern, bool) {
    let outputs = f.buffer_map.iter().map(|(_, b)| b.id()).collect();
    let mut a = Analyzer {
        kind: OpPattern::ElemWise,
        any_block: false,
        fma: false,
        outputs,
    };
    a.stmt(&f.body);
    if a.any_block {
        (a.kind, a.fma)
    } else {
        (OpPattern::Opaque, false)
    }
}

struct Analyzer {
    kind: OpPattern,
    any_block: bool,
    fma: bool,
    /// The function's parameter buffers.
    outputs: std::collections::HashSet<u64>,
}

impl Analyzer {
    fn join(&mut self, k: OpPattern) {
        self.kind = self.kind.max(k);
    }
    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::BlockRealize { block, .. } => {
                if contains_block(&block.body) {
                    // The root (or an outer) block: look inside.
                    self.stmt(&block.body);
                } else {
                    self.any_block = true;
                    self.block(block);
                }
            }
            Stmt::For(For { kind, body, .. }) => {
                if *kind == ForKind::ThreadBinding {
                    self.join(OpPattern::Opaque);
                }
                self.stmt(body)
            }
            Stmt::Seq(v) => v.iter().for_each(|x| self.stmt(x)),
            Stmt::Alloc { body, .. } => self.stmt(body),
            // Stores outside blocks, conditions, threads, externs: opaque.
            _ => self.join(OpPattern::Opaque),
        }
    }
    /// TVM's `PatternKindAnalyzer::VisitStmt_(BlockNode)`.
    fn block(&mut self, block: &Block) {
        let Stmt::BufferStore {
            buffer, value, indices, ..
        } = &*block.body
        else {
            return self.join(OpPattern::Opaque);
        };
        let mut ls = Vec::new();
        if loads(value, &mut ls).is_none() {
            return self.join(OpPattern::Opaque);
        }
        // The index pattern of every load against the store.
        let mut pair = Some(OpPattern::ElemWise);
        let mut has_elemwise = false;
        for (buf, idx) in &ls {
            let k = if idx_equal(idx, indices) {
                has_elemwise = true;
                OpPattern::ElemWise
            } else if is_broadcast(buf, idx, indices) {
                OpPattern::Broadcast
            } else if is_injective(idx, indices) {
                OpPattern::Injective
            } else {
                pair = None;
                break;
            };
            pair = pair.map(|p| p.max(k));
        }
        if let Some(mut p) = pair {
            if p == OpPattern::Broadcast && has_elemwise {
                p = OpPattern::ElemWise;
            }
            // Reduce then injective (softmax, mean).
            if self.outputs.contains(&buffer.id()) && self.kind == OpPattern::CommReduce {
                self.kind = OpPattern::OutEWiseFusable;
            } else {
                self.join(p);
            }
            return;
        }
        let reduce = block.iter_vars.iter().any(|iv| iv.kind == IterKind::CommReduce);
        if !reduce {
            return self.join(OpPattern::Opaque);
        }
        if is_fma(buffer, value) {
            self.fma = true;
            return self.join(OpPattern::OutEWiseFusable);
        }
        // Pooling reads at computed indices: not a pure reduction.
        if ls.iter().any(|(_, idx)| idx.iter().any(|i| i.as_var().is_none())) {
            return self.join(OpPattern::OutEWiseFusable);
        }
        self.join(OpPattern::CommReduce);
    }
}

fn var_ids(idx: &[PrimExpr]) -> Option<Vec<u64>> {
    idx.iter().map(|i| i.as_var().map(|v| v.id())).collect()
}

fn idx_equal(a: &[PrimExpr], b: &[PrimExpr]) -> bool {
    match (var_ids(a), var_ids(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Load indices: the store's variables in order, some missing, unit dimensions
/// read at index 0 skipped (TVM's `IsBroadcastPattern`).
fn is_broadcast(buf: &Buffer, idx: &[PrimExpr], store: &[PrimExpr]) -> bool {
    let Some(store) = var_ids(store) else { return false };
    let vars: Option<Vec<u64>> = idx
        .iter()
        .zip(buf.shape())
        .filter(|(i, d)| !(d.as_int() == Some(1) && i.as_int() == Some(0)))
        .map(|(i, _)| i.as_var().map(|v| v.id()))
        .collect();
    let Some(vars) = vars else { return false };
    let mut it = store.iter();
    vars.iter().all(|v| it.any(|s| s == v))
}

/// Load indices use only variables of the store's indices.
fn is_injective(idx: &[PrimExpr], store: &[PrimExpr]) -> bool {
    let allowed: std::collections::HashSet<u64> = store
        .iter()
        .flat_map(relax_ir::visit::free_tir_vars)
        .map(|v| v.id())
        .collect();
    idx.iter()
        .flat_map(relax_ir::visit::free_tir_vars)
        .all(|v| allowed.contains(&v.id()))
}

fn contains_block(s: &Stmt) -> bool {
    match s {
        Stmt::BlockRealize { .. } => true,
        Stmt::For(For { body, .. })
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
        PrimExprKind::Call { op, .. } if op.name().contains("call_extern") || op.name().contains("call_packed") => {
            return None
        }
        _ => {}
    }
    let mut ok = true;
    for_each_prim_child(e, &mut |c| ok &= loads(c, out).is_some());
    ok.then_some(())
}

/// `C[..] = C[..] + a * b` (casts allowed): a multiply-accumulate.
fn is_fma(out: &Buffer, value: &PrimExpr) -> bool {
    use relax_ir::tir::BinOp;
    let PrimExprKind::Binary { op: BinOp::Add, a, b } = value.kind() else {
        return false;
    };
    let reads_out = |e: &PrimExpr| matches!(e.kind(), PrimExprKind::BufferLoad { buffer, .. } if buffer == out);
    let is_mul = |e: &PrimExpr| {
        let e = e.without_casts();
        matches!(e.kind(), PrimExprKind::Binary { op: BinOp::Mul, .. })
    };
    (reads_out(a) && is_mul(b)) || (reads_out(b) && is_mul(a))
}
