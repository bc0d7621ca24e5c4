//! `static-plan-block-memory` (TVM's StaticPlanBlockMemory): storage reuse planned at
//! compile time for the `R.builtin.alloc_tensor`s that `call-tir-rewrite` emits.
//!
//! Three stages, as in TVM:
//! 1. **Tokens.** Every `builtin.alloc_tensor` of a known shape (static, or bounded
//!    through the function's `tir_var_upper_bound` attribute) gets a storage token
//!    with its size in bytes, dtype and storage scope. Its reference count is the
//!    number of PrimFunc (or packed function) call arguments that use it in the
//!    block where it was allocated. A token is discarded (its tensor keeps its own
//!    allocation) when the tensor is returned, used in another block, by an `If`, or
//!    by any other call (an operator or a Relax function might keep it).
//!    `reshape`-like views share their input's token.
//! 2. **Planning.** In program order, each token either reuses a released token of
//!    the same storage scope and dtype (the smallest one at least as large, within a
//!    factor of 16; otherwise the largest smaller one, enlarged) or gets a new
//!    storage. A token is released after the call that drops its count to zero.
//! 3. **Rewrite.** `R.memory.alloc_storage(R.shape([bytes]), device, scope, dtype)`
//!    is emitted before the first tensor of each storage and every planned
//!    `builtin.alloc_tensor` becomes `R.memory.alloc_tensor(storage, 0, shape, dtype,
//!    device)`. Like TVM 0.27, no `kill_tensor`/`kill_storage` is emitted: storage
//!    lives until the function returns.
//!
//! A function with the attribute `relax.memory_plan_dynamic_func_output` also gets
//! upper-bound-sized storage for its dynamically shaped unplanned allocations (the
//! attribute is removed).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use relax_ir::arith::Analyzer;
use relax_ir::mutator::{walk_binding, walk_block, ExprMutator};
use relax_ir::relax::bounds::signature_bounds;
use relax_ir::tir::BinOp;
use relax_ir::{
    Attrs, BaseFunc, Binding, BindingBlock, Call, DataType, Diagnostic, Expr, ExprKind, Function, IRModule, PrimExpr,
    Span, StructInfo, Var,
};

/// The attribute asking for upper-bound storage of dynamically shaped outputs.
const PLAN_DYNAMIC_OUTPUT: &str = "relax.memory_plan_dynamic_func_output";

/// Plan the storage of every Relax function of `module` (see the module docs).
pub fn static_plan_block_memory(module: &IRModule) -> Result<IRModule, Diagnostic> {
    let mut planner = Planner::new(module);
    let funcs: Vec<(&relax_ir::GlobalVar, &Function)> = module
        .functions
        .iter()
        .filter_map(|(g, f)| match f {
            BaseFunc::Relax(func) => Some((g, func)),
            BaseFunc::Prim(_) => None,
        })
        .collect();
    for (_, f) in &funcs {
        planner.init_function(f)?;
    }
    for (_, f) in &funcs {
        planner.pool.clear();
        planner.plan_function(f);
    }
    let mut out = module.clone();
    for (g, f) in funcs {
        let mut token_blocks = HashMap::new();
        token_blocks_of(&f.body, &planner.planned, &mut token_blocks);
        let mut rw = Rewriter {
            plan: &planner.planned,
            tokens: &planner.tokens,
            storage: HashMap::new(),
            dynamic: None,
            token_blocks,
            block: (0, false),
        };
        let mut func = f.clone();
        if f.attrs.get_bool(PLAN_DYNAMIC_OUTPUT).unwrap_or(false) || f.attrs.get_int(PLAN_DYNAMIC_OUTPUT) == Some(1) {
            let mut ana = Analyzer::new();
            bind_signature_bounds(f, &mut ana)?;
            rw.dynamic = Some(ana);
            func.attrs.remove(PLAN_DYNAMIC_OUTPUT);
        }
        let new = rw.visit_function(&func);
        out.functions.insert(g.clone(), BaseFunc::Relax(new));
    }
    Ok(out)
}

/// A block of reusable memory.
#[derive(Clone, Debug)]
struct Token {
    /// Bytes (a constant, or symbolic when the shape has no upper bound).
    bytes: PrimExpr,
    dtype: DataType,
    scope: String,
    /// Uses left.
    refs: i64,
    /// The storage it was given (`None`: a prototype not planned yet).
    storage_id: Option<usize>,
}

impl Token {
    fn const_bytes(&self) -> i64 {
        self.bytes.as_int().unwrap_or(-1)
    }
}

/// The tokens an expression's value uses, shaped like the value.
#[derive(Clone, Debug, Default)]
enum Tokens {
    #[default]
    Null,
    Leaf(usize),
    Nested(Vec<Tokens>),
}

impl Tokens {
    fn leaves(&self, out: &mut Vec<usize>) {
        match self {
            Tokens::Null => {}
            Tokens::Leaf(t) => out.push(*t),
            Tokens::Nested(f) => f.iter().for_each(|x| x.leaves(out)),
        }
    }
    fn leaf_list(&self) -> Vec<usize> {
        let mut v = Vec::new();
        self.leaves(&mut v);
        v
    }
    fn without(&self, gone: &HashSet<usize>) -> Tokens {
        match self {
            Tokens::Leaf(t) if gone.contains(t) => Tokens::Null,
            Tokens::Nested(f) => Tokens::Nested(f.iter().map(|x| x.without(gone)).collect()),
            other => other.clone(),
        }
    }
}

/// Address of an expression node (identity within the unchanged input module).
fn key(e: &Expr) -> usize {
    Arc::as_ptr(&e.0) as usize
}

/// Operators whose result may share its input's memory.
fn is_inplace_memory_op(op: &Expr) -> bool {
    match op.kind() {
        ExprKind::Op(n) => matches!(
            n.as_str(),
            "relax.reshape" | "relax.memory.view" | "relax.memory.ensure_zero_offset"
        ),
        ExprKind::ExternFunc { global_symbol } => global_symbol == "vm.builtin.reshape",
        _ => false,
    }
}

/// A `call_pure_packed(ExternFunc, args...)` as the packed call it stands for
/// (TVM plans memory after RemovePurityChecking has made it one): the callee and
/// its arguments.
fn pure_packed(call: &Call) -> Option<(&Expr, &[Expr])> {
    if call.op.as_op() != Some("relax.call_pure_packed") {
        return None;
    }
    let (f, rest) = call.args.split_first()?;
    matches!(f.kind(), ExprKind::ExternFunc { .. }).then_some((f, rest))
}

/// The callee and arguments of `call`, looking through `call_pure_packed`.
fn callee_args(call: &Call) -> (&Expr, &[Expr]) {
    pure_packed(call).unwrap_or((&call.op, &call.args))
}

fn is_alloc_tensor(op: &Expr) -> bool {
    op.as_op() == Some("relax.builtin.alloc_tensor")
}

/// `a * b` with TVM's constant folding (constants multiplied, a factor 1 dropped).
fn mul(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    fold(BinOp::Mul, a, b, 1, i64::saturating_mul)
}

/// `a + b` with constant folding.
fn add(a: PrimExpr, b: PrimExpr) -> PrimExpr {
    fold(BinOp::Add, a, b, 0, i64::saturating_add)
}

/// `a op b`, computed by `eval` when both are constants, or the other operand
/// when one is the operation's `identity`.
fn fold(op: BinOp, a: PrimExpr, b: PrimExpr, identity: i64, eval: fn(i64, i64) -> i64) -> PrimExpr {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) => PrimExpr::int_of(eval(x, y), a.dtype()),
        (Some(x), _) if x == identity => b,
        (_, Some(y)) if y == identity => a,
        _ => PrimExpr::binary(op, a, b),
    }
}

fn storage_bytes(dtype: DataType) -> i64 {
    (dtype.bits as i64 * dtype.lanes.max(1) as i64 + 7) / 8
}

/// An error about a function attribute (no source location).
fn attr_error(message: String) -> Diagnostic {
    Diagnostic::error(message, Span::NONE)
}

/// Bind the function signature's symbolic variables to the ranges of its
/// `tir_var_upper_bound` / `tir_var_lower_bound` / `tir_non_negative_var` attributes
/// (an upper bound gives `[lower or 0, upper]`; a lower bound alone, non-negative).
fn bind_signature_bounds(f: &Function, ana: &mut Analyzer) -> Result<(), Diagnostic> {
    for b in signature_bounds(f).map_err(attr_error)? {
        match (b.upper, b.lower) {
            (Some(hi), lo) => ana.bind(&b.var, lo.unwrap_or(0), hi),
            (None, Some(lo)) if lo >= 0 => ana.bind_nonneg(&b.var),
            _ if b.non_negative => ana.bind_nonneg(&b.var),
            _ => {}
        }
    }
    Ok(())
}

/// A symbolic interval `[lo, hi]` (`None`: unbounded on that side).
type Interval = (Option<PrimExpr>, Option<PrimExpr>);

/// The interval of `e` when each bounded variable ranges over its bounds and the
/// others are fixed (TVM's `int_set` over the signature's domains).
fn int_set(e: &PrimExpr, ana: &Analyzer) -> Interval {
    use relax_ir::PrimExprKind as K;
    let point = |e: &PrimExpr| (Some(e.clone()), Some(e.clone()));
    match e.kind() {
        K::IntImm { .. } => point(e),
        K::Var(_) => {
            let b = ana.const_int_bound(e);
            let side = |v: i64, inf: i64| {
                if v == inf {
                    Some(e.clone())
                } else {
                    Some(PrimExpr::int_of(v, e.dtype()))
                }
            };
            if b.min_value == i64::MIN && b.max_value == i64::MAX {
                point(e)
            } else if b.max_value == i64::MAX || b.min_value == i64::MIN {
                // Half-bounded: the variable itself is the only symbolic bound.
                point(e)
            } else {
                (side(b.min_value, i64::MIN), side(b.max_value, i64::MAX))
            }
        }
        K::Binary { op: BinOp::Add, a, b } => {
            let ((al, ah), (bl, bh)) = (int_set(a, ana), int_set(b, ana));
            (al.zip(bl).map(|(x, y)| add(x, y)), ah.zip(bh).map(|(x, y)| add(x, y)))
        }
        K::Binary { op: BinOp::Mul, a, b } => {
            let (sa, sb) = (int_set(a, ana), int_set(b, ana));
            let is_point = |s: &Interval| matches!(s, (Some(l), Some(h)) if Arc::ptr_eq(&l.0, &h.0) || (l.as_int().is_some() && l.as_int() == h.as_int()));
            // The interval side times a non-negative point.
            let (range, factor) = if is_point(&sb) {
                (sa, sb.0)
            } else if is_point(&sa) {
                (sb, sa.0)
            } else {
                return (None, None);
            };
            let Some(f) = factor else { return (None, None) };
            if ana.const_int_bound(&f).min_value < 0 {
                return (None, None);
            }
            (range.0.map(|x| mul(x, f.clone())), range.1.map(|x| mul(x, f)))
        }
        _ => (None, None),
    }
}

/// The dimensions with their upper bounds where the analyzer knows one.
fn upper_bound_shape(dims: &[PrimExpr], ana: &Analyzer) -> Vec<PrimExpr> {
    dims.iter()
        .map(|d| {
            let b = ana.const_int_bound(d).max_value;
            if b != i64::MAX {
                return PrimExpr::int_of(b, d.dtype());
            }
            int_set(d, ana).1.unwrap_or_else(|| d.clone())
        })
        .collect()
}

/// Size-ordered pools of released tokens per (storage scope, dtype); equal sizes
/// keep their release order (TVM's multimap).
#[derive(Default)]
struct Pool {
    seq: u64,
    free: HashMap<(String, DataType), BTreeMap<(i64, u64), usize>>,
}

impl Pool {
    fn clear(&mut self) {
        self.free.clear();
    }
}

struct Planner<'m> {
    module: &'m IRModule,
    tokens: Vec<Token>,
    discarded: HashSet<usize>,
    /// Stage 1: the token of each `builtin.alloc_tensor` call.
    init_token: HashMap<usize, usize>,
    token_block: HashMap<usize, usize>,
    var_tokens: HashMap<Var, Tokens>,
    blocks: Vec<usize>,
    next_block: usize,
    analyzer: Analyzer,
    /// Stage 2: the planned token of each planned `builtin.alloc_tensor` call.
    planned: HashMap<usize, usize>,
    plan_var_tokens: HashMap<Var, Tokens>,
    pool: Pool,
    n_storage: usize,
}

impl<'m> Planner<'m> {
    fn new(module: &'m IRModule) -> Planner<'m> {
        Planner {
            module,
            tokens: Vec::new(),
            discarded: HashSet::new(),
            init_token: HashMap::new(),
            token_block: HashMap::new(),
            var_tokens: HashMap::new(),
            blocks: Vec::new(),
            next_block: 0,
            analyzer: Analyzer::new(),
            planned: HashMap::new(),
            plan_var_tokens: HashMap::new(),
            pool: Pool::default(),
            n_storage: 0,
        }
    }

    fn discard(&mut self, t: &Tokens) {
        for l in t.leaf_list() {
            self.discarded.insert(l);
        }
    }

    fn is_prim_func(&self, op: &Expr) -> bool {
        match op.kind() {
            ExprKind::GlobalVar(g) => matches!(self.module.get(g.name()), Some(BaseFunc::Prim(_))),
            _ => false,
        }
    }

    // ------------------------------------------------------------ stage 1

    fn init_function(&mut self, f: &Function) -> Result<(), Diagnostic> {
        bind_signature_bounds(f, &mut self.analyzer)?;
        let body = self.init_expr(&f.body)?;
        self.discard(&body);
        Ok(())
    }

    fn init_expr(&mut self, e: &Expr) -> Result<Tokens, Diagnostic> {
        Ok(match e.kind() {
            ExprKind::Var(v) => self
                .var_tokens
                .get(v)
                .map(|t| t.without(&self.discarded))
                .unwrap_or_default(),
            ExprKind::Tuple(fields) => {
                let mut out = Vec::with_capacity(fields.len());
                for f in fields {
                    out.push(self.init_expr(f)?);
                }
                Tokens::Nested(out)
            }
            ExprKind::TupleGetItem { tuple, index } => match self.init_expr(tuple)? {
                Tokens::Nested(f) => f.get(*index).cloned().unwrap_or_default(),
                _ => Tokens::Null,
            },
            ExprKind::Seq(seq) => {
                for b in &seq.blocks {
                    self.init_block(b)?;
                }
                let body = self.init_expr(&seq.body)?;
                self.discard(&body);
                Tokens::Null
            }
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                for x in [cond, then_branch, else_branch] {
                    let t = self.init_expr(x)?;
                    self.discard(&t);
                }
                Tokens::Null
            }
            ExprKind::Function(f) => {
                self.init_function(f)?;
                Tokens::Null
            }
            ExprKind::Call(call) => self.init_call(e, call)?,
            _ => Tokens::Null,
        })
    }

    fn init_block(&mut self, b: &BindingBlock) -> Result<(), Diagnostic> {
        self.next_block += 1;
        self.blocks.push(self.next_block);
        for binding in &b.bindings {
            match binding {
                Binding::VarBinding { var, value, .. } => {
                    let t = self.init_expr(value)?;
                    self.var_tokens.insert(var.clone(), t);
                }
                // A match_cast is its value (the same memory): uses of the new
                // variable keep the value's storage alive, as TVM forwards the tokens.
                Binding::MatchCast { var, value, .. } => {
                    let t = self.init_expr(value)?;
                    self.var_tokens.insert(var.clone(), t);
                }
            }
        }
        self.blocks.pop();
        Ok(())
    }

    fn init_call(&mut self, e: &Expr, call: &Call) -> Result<Tokens, Diagnostic> {
        if is_alloc_tensor(&call.op) {
            return Ok(self.create_token(e, call));
        }
        let (op, args) = callee_args(call);
        if is_inplace_memory_op(op) {
            return match args.first() {
                Some(a) => self.init_expr(a),
                None => Ok(Tokens::Null),
            };
        }
        let counted = self.is_prim_func(op)
            || matches!(op.kind(), ExprKind::ExternFunc { .. })
            || op.as_op() == Some("relax.vm.call_tir_dyn");
        for a in args {
            let t = self.init_expr(a)?;
            match (counted, self.blocks.last().copied()) {
                (true, Some(block)) => {
                    for l in t.leaf_list() {
                        if self.token_block.get(&l) != Some(&block) {
                            self.discarded.insert(l);
                        }
                    }
                    for l in t.without(&self.discarded).leaf_list() {
                        self.tokens[l].refs += 1;
                    }
                }
                _ => self.discard(&t),
            }
        }
        Ok(Tokens::Null)
    }

    /// The token of `builtin.alloc_tensor(shape, dtype, device, scope)`; none for a
    /// shape that is not a `ShapeExpr` or an unknown dtype.
    fn create_token(&mut self, e: &Expr, call: &Call) -> Tokens {
        let dims = match call.args.first().map(|a| a.kind()) {
            Some(ExprKind::ShapeExpr(d)) => d.clone(),
            _ => return Tokens::Null,
        };
        let dtype = match call.args.get(1).map(|a| a.kind()) {
            Some(ExprKind::DataTypeImm(d)) if !d.is_void() => *d,
            _ => return Tokens::Null,
        };
        let scope = match call.args.get(3).map(|a| a.kind()) {
            Some(ExprKind::StringImm(s)) => s.clone(),
            _ => "global".to_string(),
        };
        let Some(&block) = self.blocks.last() else {
            return Tokens::Null;
        };
        let mut coeff = storage_bytes(dtype);
        let mut size = PrimExpr::int(1);
        for d in upper_bound_shape(&dims, &self.analyzer) {
            match d.as_int() {
                Some(v) => coeff = coeff.saturating_mul(v),
                None => size = mul(size, d),
            }
        }
        let bytes = mul(PrimExpr::int(coeff), size);
        let id = self.tokens.len();
        self.tokens.push(Token {
            bytes,
            dtype,
            scope,
            refs: 0,
            storage_id: None,
        });
        self.init_token.insert(key(e), id);
        self.token_block.insert(id, block);
        Tokens::Leaf(id)
    }

    // ------------------------------------------------------------ stage 2

    fn plan_function(&mut self, f: &Function) {
        self.plan_expr(&f.body);
    }

    fn plan_tokens(&self, e: &Expr) -> Tokens {
        match e.kind() {
            ExprKind::Var(v) => self
                .plan_var_tokens
                .get(v)
                .or_else(|| self.var_tokens.get(v))
                .map(|t| t.without(&self.discarded))
                .unwrap_or_default(),
            ExprKind::Tuple(fields) => Tokens::Nested(fields.iter().map(|f| self.plan_tokens(f)).collect()),
            ExprKind::TupleGetItem { tuple, index } => match self.plan_tokens(tuple) {
                Tokens::Nested(f) => f.get(*index).cloned().unwrap_or_default(),
                _ => Tokens::Null,
            },
            _ => Tokens::Null,
        }
    }

    /// Visit nested blocks (branches, local functions, sequences) for planning.
    fn plan_expr(&mut self, e: &Expr) {
        match e.kind() {
            ExprKind::Seq(seq) => {
                for b in &seq.blocks {
                    self.plan_block(b);
                }
            }
            ExprKind::If {
                then_branch,
                else_branch,
                ..
            } => {
                self.plan_expr(then_branch);
                self.plan_expr(else_branch);
            }
            ExprKind::Function(f) => self.plan_function(f),
            _ => {}
        }
    }

    fn plan_block(&mut self, b: &BindingBlock) {
        for binding in &b.bindings {
            let (var, value) = match binding {
                Binding::VarBinding { var, value, .. } => (var, value),
                Binding::MatchCast { var, value, .. } => {
                    self.plan_expr(value);
                    let t = self.plan_tokens(value);
                    self.plan_var_tokens.insert(var.clone(), t);
                    continue;
                }
            };
            let tokens = match value.as_call() {
                Some(call) if is_alloc_tensor(&call.op) => match self.init_token.get(&key(value)) {
                    Some(&t) if !self.discarded.contains(&t) => {
                        let planned = self.reuse_or_alloc(t);
                        self.planned.insert(key(value), planned);
                        Tokens::Leaf(planned)
                    }
                    _ => Tokens::Null,
                },
                Some(call) if is_inplace_memory_op(callee_args(call).0) => callee_args(call)
                    .1
                    .first()
                    .map(|a| self.plan_tokens(a))
                    .unwrap_or_default(),
                Some(call) => {
                    for a in callee_args(call).1 {
                        for l in self.plan_tokens(a).leaf_list() {
                            let t = &mut self.tokens[l];
                            if t.refs > 0 {
                                t.refs -= 1;
                                if t.refs == 0 {
                                    self.release(l);
                                }
                            }
                        }
                    }
                    Tokens::Null
                }
                None => {
                    self.plan_expr(value);
                    self.plan_tokens(value)
                }
            };
            self.plan_var_tokens.insert(var.clone(), tokens);
        }
    }

    fn reuse_or_alloc(&mut self, proto: usize) -> usize {
        if let Some(t) = self.request_reuse(proto) {
            return t;
        }
        self.tokens[proto].storage_id = Some(self.n_storage);
        self.n_storage += 1;
        proto
    }

    /// TVM's `TokenAllocatorMixed::RequestReuse`.
    fn request_reuse(&mut self, proto: usize) -> Option<usize> {
        const MATCH_RANGE: i64 = 16;
        let p = self.tokens[proto].clone();
        if p.refs == 0 {
            return None;
        }
        let pool = self.pool.free.entry((p.scope.clone(), p.dtype)).or_default();
        let size = p.const_bytes();
        let found = if size == -1 {
            let ana = &self.analyzer;
            let tokens = &self.tokens;
            pool.range((-1, 0)..=(-1, u64::MAX))
                .find(|(_, &t)| ana.can_prove_equal(&p.bytes, &tokens[t].bytes))
                .map(|(k, &t)| (*k, t, false))
        } else {
            let hi = size.saturating_mul(MATCH_RANGE);
            match pool.range((size, 0)..).next() {
                Some((k, &t)) if k.0 <= hi => Some((*k, t, false)),
                _ => pool
                    .range((size / MATCH_RANGE, 0)..(size, 0))
                    .next_back()
                    .map(|(k, &t)| (*k, t, true)),
            }
        };
        let (k, t, enlarge) = found?;
        pool.remove(&k);
        if enlarge {
            self.tokens[t].bytes = PrimExpr::int(size);
        }
        self.tokens[t].refs = p.refs;
        Some(t)
    }

    fn release(&mut self, t: usize) {
        let tok = &self.tokens[t];
        if tok.storage_id.is_none() {
            return;
        }
        self.pool.seq += 1;
        let seq = self.pool.seq;
        self.pool
            .free
            .entry((tok.scope.clone(), tok.dtype))
            .or_default()
            .insert((tok.const_bytes(), seq), t);
    }
}

// ---------------------------------------------------------------- stage 3

/// The blocks (by address) where each planned token's tensors are allocated.
fn token_blocks_of(e: &Expr, plan: &HashMap<usize, usize>, out: &mut HashMap<usize, HashSet<usize>>) {
    match e.kind() {
        ExprKind::Seq(seq) => {
            for b in &seq.blocks {
                let bk = b.bindings.as_ptr() as usize;
                for binding in &b.bindings {
                    if let Some(&t) = plan.get(&key(binding.value())) {
                        out.entry(t).or_default().insert(bk);
                    }
                    token_blocks_of(binding.value(), plan, out);
                }
            }
        }
        ExprKind::If {
            then_branch,
            else_branch,
            ..
        } => {
            token_blocks_of(then_branch, plan, out);
            token_blocks_of(else_branch, plan, out);
        }
        ExprKind::Function(f) => token_blocks_of(&f.body, plan, out),
        _ => {}
    }
}

struct Rewriter<'p> {
    /// The blocks each token is used in.
    token_blocks: HashMap<usize, HashSet<usize>>,
    /// The block being rewritten: its address and whether it is a dataflow block.
    block: (usize, bool),
    plan: &'p HashMap<usize, usize>,
    tokens: &'p [Token],
    /// The storage variable of each token in the current function.
    storage: HashMap<usize, Var>,
    /// Upper bounds of the signature's variables, when dynamically shaped outputs
    /// get storage too.
    dynamic: Option<Analyzer>,
}

fn alloc_storage(size: PrimExpr, device: Expr, scope: Expr, dtype: DataType) -> Expr {
    Expr::call(
        Expr::op("relax.memory.alloc_storage"),
        vec![
            Expr::shape(vec![size]),
            device,
            scope,
            Expr::new(ExprKind::DataTypeImm(dtype)),
        ],
        Attrs::new(),
        Vec::new(),
    )
}

fn alloc_tensor(storage: &Var, shape: Expr, dtype: DataType, device: Expr) -> Expr {
    Expr::call(
        Expr::op("relax.memory.alloc_tensor"),
        vec![
            storage.to_expr(),
            Expr::new(ExprKind::PrimValue(PrimExpr::int(0))),
            shape,
            Expr::new(ExprKind::DataTypeImm(dtype)),
            device,
        ],
        Attrs::new(),
        Vec::new(),
    )
}

/// A storage variable: a `DataflowVar` in a dataflow block (as TVM's block builder
/// makes it; the engine then frees the storage once its last tensor is dead),
/// unless `shared`, a storage that serves later blocks too.
fn storage_var(in_dataflow: bool, shared: bool) -> Var {
    Var::with("storage", Some(StructInfo::Object), in_dataflow && !shared, Span::NONE)
}

impl Rewriter<'_> {
    /// The replacement bindings of `var = builtin.alloc_tensor(...)`, if planned.
    fn rewrite_alloc(&mut self, var: &Var, value: &Expr, call: &Call, span: Span) -> Option<Vec<Binding>> {
        let shape = call.args.first()?.clone();
        let dtype = match call.args.get(1)?.kind() {
            ExprKind::DataTypeImm(d) => *d,
            _ => return None,
        };
        let device = call
            .args
            .get(2)
            .cloned()
            .unwrap_or_else(|| Expr::new(ExprKind::PrimValue(PrimExpr::int(0))));
        let mut out = Vec::new();
        let storage = if let Some(&t) = self.plan.get(&key(value)) {
            match self.storage.get(&t) {
                Some(s) => s.clone(),
                None => {
                    let tok = &self.tokens[t];
                    let shared = self.token_blocks.get(&t).is_some_and(|b| b.len() > 1);
                    let s = storage_var(self.block.1, shared);
                    out.push(Binding::VarBinding {
                        var: s.clone(),
                        value: alloc_storage(
                            tok.bytes.clone(),
                            device.clone(),
                            Expr::new(ExprKind::StringImm(tok.scope.clone())),
                            tok.dtype,
                        ),
                        span,
                    });
                    self.storage.insert(t, s.clone());
                    s
                }
            }
        } else {
            let ana = self.dynamic.as_ref()?;
            let ExprKind::ShapeExpr(dims) = shape.kind() else {
                return None;
            };
            if dims.iter().all(|d| d.as_int().is_some()) {
                return None;
            }
            let ub = upper_bound_shape(dims, ana);
            let mut bytes = ub.first().cloned().unwrap_or_else(|| PrimExpr::int(1));
            for d in ub.iter().skip(1) {
                bytes = mul(bytes, d.clone());
            }
            bytes = mul(bytes, PrimExpr::int(storage_bytes(dtype)));
            let scope = call
                .args
                .get(3)
                .cloned()
                .unwrap_or_else(|| Expr::new(ExprKind::StringImm("global".into())));
            let s = storage_var(self.block.1, false);
            out.push(Binding::VarBinding {
                var: s.clone(),
                value: alloc_storage(bytes, device.clone(), scope, dtype),
                span,
            });
            s
        };
        out.push(Binding::VarBinding {
            var: var.clone(),
            value: alloc_tensor(&storage, shape, dtype, device),
            span,
        });
        Some(out)
    }
}

impl ExprMutator for Rewriter<'_> {
    fn visit_block(&mut self, b: &BindingBlock) -> BindingBlock {
        let saved = std::mem::replace(&mut self.block, (b.bindings.as_ptr() as usize, b.is_dataflow));
        let out = walk_block(self, b);
        self.block = saved;
        out
    }
    fn visit_binding(&mut self, b: &Binding) -> Vec<Binding> {
        if let Binding::VarBinding { var, value, span } = b {
            if let Some(call) = value.as_call().filter(|c| is_alloc_tensor(&c.op)) {
                if let Some(v) = self.rewrite_alloc(var, value, call, *span) {
                    return v;
                }
            }
        }
        vec![walk_binding(self, b)]
    }
}
