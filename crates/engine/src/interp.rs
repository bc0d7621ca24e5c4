//! The evaluator: every Relax expression kind, in the order the spec's "Detailed
//! Semantics" prescribe, with scoping of Relax and shape variables, closures,
//! recursion and the structural checks at function entry and exit.

use std::collections::HashSet;

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

use relax_ir::relax::{Binding, Call, ExprKind, Function, SeqExpr, StructInfo};
use relax_ir::{BaseFunc, Expr, GlobalVar, Var};

use crate::builtins;
use crate::engine::Program;
use crate::error::{EngineError, Result};
use crate::kernel::StagedArg;
use crate::matching::{MatchCtx, Root};
use crate::packed::Purity;
use crate::prim::{eval_int, eval_prim, ShapeEnv};
use crate::value::{Closure, ClosureFunc, PrimFuncValue, PrimValue, Scalar, Tensor, Value};

/// The variables of one function activation.
#[derive(Default)]
pub(crate) struct Frame {
    /// Relax variables in scope (hashed by identity with `FxHash`: looked up on
    /// every use).
    pub vars: FxHashMap<Var, Value>,
    /// Shape variables in scope.
    pub shapes: ShapeEnv,
    /// Variables bound to a fresh allocation (`builtin.alloc_tensor`,
    /// `memory.alloc_tensor`): the outputs of a destination-passing call.
    pub allocated: FxHashSet<Var>,
}

/// Stack an evaluation keeps in reserve (for kernels, compilers and library code
/// it calls): nesting deeper than the thread's stack allows less this fails cleanly.
const STACK_RESERVE: usize = 512 << 10;

/// An error when less than [`STACK_RESERVE`] of this thread's stack is left: the
/// call-depth limit counts calls, not the stack each one uses (a recursion inside
/// nested `if`s takes several frames per call).
fn check_stack() -> Result<()> {
    match stacker::remaining_stack() {
        Some(left) if left < STACK_RESERVE => Err(EngineError::Invalid(format!(
            "evaluation nested too deeply: less than {} KiB of the run thread's stack is left \
             (deep recursion or nesting; EngineConfig::stack_size sets the stack)",
            STACK_RESERVE >> 10
        ))),
        _ => Ok(()),
    }
}

/// One evaluation (a call stack) over a loaded program.
pub(crate) struct Interp {
    pub prog: Arc<Program>,
    depth: usize,
    /// Whether the binding being evaluated is inside a `DataflowBlock`.
    dataflow: bool,
}

impl Interp {
    /// Fail when a GPU kernel of this run (this thread) accessed a buffer out of
    /// bounds through a data-dependent index (see `relax_jit`'s bounds checks).
    pub(crate) fn check_gpu_bounds(&self) -> Result<()> {
        if let Some(Ok(crate::engine::Opened {
            gpu: Some((_, jit)), ..
        })) = self.prog.backend.cell.get()
        {
            jit.check_gpu_bounds().map_err(|e| EngineError::Device(e.into()))?;
        }
        Ok(())
    }

    pub(crate) fn new(prog: Arc<Program>) -> Interp {
        Interp {
            prog,
            depth: 0,
            dataflow: false,
        }
    }

    fn for_program(&self, prog: &Arc<Program>) -> Interp {
        Interp {
            prog: prog.clone(),
            depth: self.depth,
            dataflow: false,
        }
    }

    // ---------------------------------------------------------------- calls

    /// Call the module function `gv` (Relax function or PrimFunc).
    pub(crate) fn call_global(&mut self, gv: &GlobalVar, args: Vec<Value>) -> Result<Value> {
        let prog = self.prog.clone();
        match prog.module.functions.get(gv) {
            Some(BaseFunc::Relax(f)) => self.invoke(f, gv.name(), Frame::default(), args),
            Some(BaseFunc::Prim(_)) => self.call_prim_func(gv, args, None),
            None => Err(EngineError::UnknownFunction(gv.name().to_string())),
        }
    }

    /// Call a function value (closure, packed function or PrimFunc).
    pub(crate) fn call_value(&mut self, callee: &Value, args: Vec<Value>) -> Result<Value> {
        match callee {
            Value::Closure(c) => self.call_closure(c, args),
            Value::PackedFunc(p) => {
                if self.dataflow && p.purity() == Purity::Impure {
                    return Err(EngineError::Type(format!(
                        "impure packed function `{}` called inside a DataflowBlock (use R.call_pure_packed to assert purity)",
                        p.name()
                    )));
                }
                self.call_packed(p, &args)
            }
            Value::PrimFunc(pf) => {
                if Arc::ptr_eq(&pf.program, &self.prog) {
                    self.call_prim_func(&pf.name, args, None)
                } else {
                    self.for_program(&pf.program).call_prim_func(&pf.name, args, None)
                }
            }
            other => Err(EngineError::Type(format!(
                "cannot call {}: it is not a function",
                other.describe()
            ))),
        }
    }

    pub(crate) fn call_packed(&mut self, p: &crate::packed::PackedFunc, args: &[Value]) -> Result<Value> {
        self.prog
            .stats
            .packed_calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let kv = crate::kv_cache::BUILTINS.contains(&p.name());
        let call = |it: &Self| {
            if kv {
                crate::kv_cache::call(Some(it), p.name(), args)
            } else {
                p.call(args)
            }
        };
        if !self.prog.profile {
            return call(self);
        }
        let t0 = std::time::Instant::now();
        let r = call(self);
        self.prog.host_profile.record_wall(p.name(), t0.elapsed(), None);
        r
    }

    fn call_closure(&mut self, c: &Arc<Closure>, args: Vec<Value>) -> Result<Value> {
        let args = if c.bound_args.is_empty() {
            args
        } else {
            c.bound_args.iter().cloned().chain(args).collect()
        };
        let mut it = self.for_program(&c.program);
        match &c.func {
            ClosureFunc::Global(g) => it.call_global(g, args),
            ClosureFunc::Local(expr) => {
                let ExprKind::Function(f) = expr.kind() else {
                    return Err(EngineError::Internal("closure does not hold a function".into()));
                };
                let mut frame = Frame {
                    vars: c.captured.iter().cloned().collect(),
                    shapes: (*c.captured_shapes).clone(),
                    allocated: FxHashSet::default(),
                };
                if let Some(sv) = &c.self_var {
                    frame.vars.insert(sv.clone(), Value::Closure(c.clone()));
                }
                it.invoke(f, &c.name(), frame, args)
            }
        }
    }

    /// Call a Relax function: bind parameters, check their StructInfo (binding
    /// positions first, then left to right), evaluate the body, check the result.
    fn invoke(&mut self, func: &Function, name: &str, mut frame: Frame, args: Vec<Value>) -> Result<Value> {
        if args.len() != func.params.len() {
            return Err(EngineError::Arity {
                callee: format!("function `{name}`"),
                expected: func.params.len(),
                actual: args.len(),
            });
        }
        if self.depth >= self.prog.max_depth {
            return Err(EngineError::RecursionLimit(self.prog.max_depth));
        }
        for (p, a) in func.params.iter().zip(&args) {
            frame.vars.insert(p.clone(), a.clone());
        }
        {
            let mut newly = Vec::new();
            let Frame { vars, shapes, .. } = &mut frame;
            let mut ctx = MatchCtx {
                shapes,
                vars,
                newly_bound: &mut newly,
            };
            for (p, a) in func.params.iter().zip(&args) {
                if let Some(si) = p.struct_info() {
                    ctx.bind(a, si);
                }
            }
            for (p, a) in func.params.iter().zip(&args) {
                if let Some(si) = p.struct_info() {
                    ctx.check(a, si, Root::Arg { func: name, var: p })?;
                }
            }
        }
        self.depth += 1;
        let saved = std::mem::replace(&mut self.dataflow, false);
        let result = self.eval(&func.body, &mut frame);
        self.dataflow = saved;
        self.depth -= 1;
        let result = result?;
        if let Some(rs) = &func.ret_struct_info {
            let mut newly = Vec::new();
            let Frame { vars, shapes, .. } = &mut frame;
            MatchCtx {
                shapes,
                vars,
                newly_bound: &mut newly,
            }
            .match_value(&result, rs, Root::Return { func: name })?;
        }
        Ok(result)
    }

    /// Run a PrimFunc called directly. The tensor arguments it may write: the
    /// parameters its body stores to; when the body cannot tell, the arguments that
    /// `allocated` marks as fresh allocations (destination passing), or all of them.
    fn call_prim_func(&mut self, gv: &GlobalVar, args: Vec<Value>, allocated: Option<Vec<bool>>) -> Result<Value> {
        let written = self
            .prog
            .written_params(gv)
            .or_else(|| allocated.filter(|a| a.iter().any(|&x| x)).map(Arc::from));
        let mut staged = Vec::with_capacity(args.len());
        let mut seen: smallvec::SmallVec<[*const crate::value::Storage; 8]> = smallvec::SmallVec::new();
        for (i, a) in args.into_iter().enumerate() {
            staged.push(match a {
                Value::Tensor(t) => {
                    let p = Arc::as_ptr(&t.0.storage);
                    let first = !seen.contains(&p);
                    seen.push(p);
                    // Inputs the PrimFunc never stores to stay read-only (no write lock,
                    // no copy of shared constants); every argument is writable when
                    // that cannot be told.
                    let w = written.as_ref().and_then(|w| w.get(i).copied()).unwrap_or(true);
                    StagedArg::Tensor(t, first && w)
                }
                Value::Prim(p) => StagedArg::Scalar(p),
                Value::Shape(s) if s.len() == 1 => StagedArg::Scalar(PrimValue::int64(s[0])),
                other => {
                    return Err(EngineError::Type(format!(
                        "PrimFunc `{}` cannot take {} as an argument",
                        gv.name(),
                        other.describe()
                    )))
                }
            });
        }
        self.run_kernel(gv, &staged)?;
        Ok(Value::unit())
    }

    /// Run the PrimFunc `gv` on staged arguments where they live (see [`crate::place`]).
    pub(crate) fn run_kernel(&mut self, gv: &GlobalVar, args: &[StagedArg]) -> Result<()> {
        let place = self.place_kernel(&[], args)?;
        self.run_kernel_at(gv, args, place)
    }

    // ---------------------------------------------------------------- expressions

    /// Evaluate `e` in `frame`.
    pub(crate) fn eval(&mut self, e: &Expr, frame: &mut Frame) -> Result<Value> {
        if matches!(
            e.kind(),
            ExprKind::If { .. } | ExprKind::Seq(_) | ExprKind::Call(_) | ExprKind::Tuple(_)
        ) {
            check_stack()?;
        }
        match e.kind() {
            ExprKind::Constant { data } => {
                let t = Tensor::from_constant(data)?;
                Ok(Value::Tensor(t))
            }
            ExprKind::Var(v) => frame
                .vars
                .get(v)
                .cloned()
                .ok_or_else(|| EngineError::UnboundVar(v.name().to_string())),
            ExprKind::GlobalVar(g) => self.global_value(g),
            ExprKind::Tuple(fields) => {
                let vals = fields.iter().map(|f| self.eval(f, frame)).collect::<Result<Vec<_>>>()?;
                Ok(Value::tuple(vals))
            }
            ExprKind::Seq(seq) => self.eval_seq(seq, frame),
            ExprKind::PrimValue(p) => Ok(Value::Prim(eval_prim(p, &frame.shapes)?)),
            ExprKind::StringImm(s) => Ok(Value::Str(Arc::from(s.as_str()))),
            ExprKind::DataTypeImm(d) => Ok(Value::DataType(*d)),
            ExprKind::Function(_) => self.make_closure(e, frame, None),
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let c = self.eval(cond, frame)?;
                if condition(&c)? {
                    self.eval(then_branch, frame)
                } else {
                    self.eval(else_branch, frame)
                }
            }
            ExprKind::ExternFunc { global_symbol } => self.extern_func(global_symbol),
            ExprKind::Call(call) => self.eval_call(call, frame),
            ExprKind::ShapeExpr(dims) => {
                let vals = dims
                    .iter()
                    .map(|d| eval_int(d, &frame.shapes))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Value::Shape(Arc::from(vals)))
            }
            ExprKind::TupleGetItem { tuple, index } => {
                let t = self.eval(tuple, frame)?;
                let Value::Tuple(fields) = &t else {
                    return Err(EngineError::Type(format!(
                        "TupleGetItem [{index}] of {}, not a tuple",
                        t.describe()
                    )));
                };
                fields
                    .get(*index)
                    .cloned()
                    .ok_or_else(|| EngineError::Type(format!("tuple index {index} out of range for {}", t.describe())))
            }
            ExprKind::Op(name) => Err(EngineError::Type(format!(
                "operator `{name}` can only be called, not used as a value"
            ))),
        }
    }

    /// The value of a `GlobalVar`: a closure over a Relax function, or a PrimFunc.
    fn global_value(&self, g: &GlobalVar) -> Result<Value> {
        match self.prog.module.functions.get(g) {
            Some(BaseFunc::Relax(_)) => Ok(Value::Closure(Arc::new(Closure {
                program: self.prog.clone(),
                func: ClosureFunc::Global(g.clone()),
                captured: Vec::new(),
                captured_shapes: Arc::default(),
                self_var: None,
                bound_args: Vec::new(),
            }))),
            Some(BaseFunc::Prim(_)) => Ok(Value::PrimFunc(Arc::new(PrimFuncValue {
                program: self.prog.clone(),
                name: g.clone(),
            }))),
            None => Err(EngineError::UnknownFunction(g.name().to_string())),
        }
    }

    /// `ExternFunc(symbol)`: a registered packed function, or a PrimFunc of the module
    /// whose `global_symbol` is `symbol`.
    pub(crate) fn extern_func(&self, symbol: &str) -> Result<Value> {
        if let Some(p) = self.prog.registry.get(symbol) {
            return Ok(Value::PackedFunc(p));
        }
        if let Some(g) = self.prog.prim_symbols.get(symbol) {
            return Ok(Value::PrimFunc(Arc::new(PrimFuncValue {
                program: self.prog.clone(),
                name: g.clone(),
            })));
        }
        Err(EngineError::UnknownPackedFunc(symbol.to_string()))
    }

    /// A closure for the `Function` expression `e`, capturing its free variables.
    pub(crate) fn make_closure(&mut self, e: &Expr, frame: &Frame, self_var: Option<&Var>) -> Result<Value> {
        let free = self.prog.free_vars_of(e);
        let captured = free
            .iter()
            .filter(|v| Some(*v) != self_var)
            .filter_map(|v| frame.vars.get(v).map(|val| (v.clone(), val.clone())))
            .collect();
        Ok(Value::Closure(Arc::new(Closure {
            program: self.prog.clone(),
            func: ClosureFunc::Local(e.clone()),
            captured,
            captured_shapes: Arc::new(frame.shapes.clone()),
            self_var: self_var.cloned(),
            bound_args: Vec::new(),
        })))
    }

    fn eval_seq(&mut self, seq: &SeqExpr, frame: &mut Frame) -> Result<Value> {
        let mut scope_vars = Vec::new();
        let mut scope_shapes = Vec::new();
        for block in &seq.blocks {
            let saved = self.dataflow;
            self.dataflow = block.is_dataflow;
            let mut block_vars = Vec::new();
            let mut r = Ok(());
            let plan = block.is_dataflow.then(|| self.prog.release_plan(block));
            for (i, b) in block.bindings.iter().enumerate() {
                // The name errors give is worked out only for an error.
                let name = || user_binding_name(&block.bindings, i);
                r = self.eval_binding(b, frame, &mut scope_shapes, &name);
                if r.is_err() {
                    break;
                }
                // Release intermediates after their last use (memory planning).
                if let Some(dead) = plan.as_ref().and_then(|p| p.get(i)) {
                    for v in dead {
                        frame.vars.remove(v);
                    }
                }
                let v = b.var().clone();
                if v.is_dataflow() {
                    block_vars.push(v);
                } else {
                    scope_vars.push(v);
                }
            }
            self.dataflow = saved;
            r?;
            if block.is_dataflow {
                for v in block_vars {
                    frame.vars.remove(&v);
                }
            } else {
                scope_vars.extend(block_vars);
            }
        }
        let result = self.eval(&seq.body, frame);
        for v in scope_vars {
            frame.vars.remove(&v);
        }
        for s in scope_shapes {
            frame.shapes.remove(&s);
        }
        result
    }

    /// Evaluate one binding; errors name the binding `name()`.
    fn eval_binding<'n>(
        &mut self,
        b: &Binding,
        frame: &mut Frame,
        scope_shapes: &mut Vec<relax_ir::TirVar>,
        name: &dyn Fn() -> &'n str,
    ) -> Result<()> {
        match b {
            Binding::VarBinding { var, value, .. } => {
                let v = if matches!(value.kind(), ExprKind::Function(_)) {
                    self.make_closure(value, frame, Some(var))?
                } else {
                    self.eval(value, frame).map_err(|e| e.in_binding(name()))?
                };
                // `extent: T.int64 = source` also binds the symbolic variable `extent`.
                if let Some(relax_ir::StructInfo::Prim(p)) = var.struct_info() {
                    if let Some(tv) = p.value.as_ref().and_then(relax_ir::PrimExpr::as_var) {
                        if tv.name() == var.name() && !frame.shapes.contains_key(tv) {
                            let Frame { vars, shapes, .. } = frame;
                            MatchCtx {
                                shapes,
                                vars,
                                newly_bound: scope_shapes,
                            }
                            .match_value(
                                &v,
                                &relax_ir::StructInfo::Prim(p.clone()),
                                Root::MatchCast { var },
                            )?;
                        }
                    }
                }
                let fresh = value.as_call().and_then(|c| c.op.as_op()).is_some_and(|o| {
                    matches!(
                        o,
                        "relax.builtin.alloc_tensor" | "relax.memory.alloc_tensor" | "relax.vm.alloc_tensor"
                    )
                });
                if fresh {
                    frame.allocated.insert(var.clone());
                } else if !frame.allocated.is_empty() {
                    frame.allocated.remove(var);
                }
                frame.vars.insert(var.clone(), v);
            }
            Binding::MatchCast {
                var,
                value,
                struct_info,
                ..
            } => {
                let v = self.eval(value, frame)?;
                let Frame { vars, shapes, .. } = frame;
                MatchCtx {
                    shapes,
                    vars,
                    newly_bound: scope_shapes,
                }
                .match_value(&v, struct_info, Root::MatchCast { var })?;
                frame.vars.insert(var.clone(), v);
            }
        }
        Ok(())
    }

    fn eval_call(&mut self, call: &Call, frame: &mut Frame) -> Result<Value> {
        match call.op.kind() {
            ExprKind::Op(name) => builtins::call_op(self, name, call, frame),
            ExprKind::GlobalVar(g) => {
                let args = self.eval_args(&call.args, frame)?;
                if let Some(BaseFunc::Prim(_)) = self.prog.module.functions.get(g) {
                    let allocated = call
                        .args
                        .iter()
                        .map(|a| a.as_var().is_some_and(|v| frame.allocated.contains(v)))
                        .collect();
                    return self.call_prim_func(g, args, Some(allocated));
                }
                self.call_global(g, args)
            }
            _ => {
                let f = self.eval(&call.op, frame)?;
                let args = self.eval_args(&call.args, frame)?;
                // A destination-passing call into a fresh allocation (what
                // `call-tir-rewrite` makes of `call_dps_packed`): its callee is asserted
                // pure, as `call_dps_packed`'s is.
                let dps = matches!(call.op.kind(), ExprKind::ExternFunc { .. })
                    && call
                        .args
                        .last()
                        .and_then(Expr::as_var)
                        .is_some_and(|v| frame.allocated.contains(v));
                if let (true, Value::PackedFunc(p)) = (dps, &f) {
                    return self.call_packed(p, &args);
                }
                self.call_value(&f, args)
            }
        }
    }

    pub(crate) fn eval_args(&mut self, args: &[Expr], frame: &mut Frame) -> Result<Vec<Value>> {
        args.iter().map(|a| self.eval(a, frame)).collect()
    }
}

/// The name errors of binding `i` give: its variable's, except for the explicit
/// allocation and destination-passing call that `call-tir-rewrite` makes of one
/// `y = call_tir(...)`, which name `y`, the binding that receives the output
/// (`alloc = builtin.alloc_tensor(..)`, `_ = f(.., alloc)`, `y = alloc`).
fn user_binding_name(bindings: &[Binding], i: usize) -> &str {
    let b = &bindings[i];
    let own = b.var().name();
    let Some(call) = b.value().as_call() else {
        return own;
    };
    let alloc = match call.op.kind() {
        ExprKind::Op(o) if o == "relax.builtin.alloc_tensor" || o == "relax.memory.alloc_tensor" => b.var(),
        ExprKind::GlobalVar(_) | ExprKind::ExternFunc { .. } => match call.args.last().and_then(|a| a.as_var()) {
            Some(v) => v,
            None => return own,
        },
        _ => return own,
    };
    for later in bindings.iter().skip(i + 1).take(4) {
        if later.value().as_var() == Some(alloc) {
            return later.var().name();
        }
    }
    own
}

/// Which parameters of `f` it may write: those whose buffer a `BufferStore` targets.
/// `None` (all writable) when a statement could write through a pointer instead
/// (an `Evaluate` of an external call, a block's `match_buffer` alias) or when the
/// body stores nothing.
pub(crate) fn written_params(f: &relax_ir::PrimFunc) -> Option<Vec<bool>> {
    let mut stored = HashSet::new();
    let mut opaque = false;
    relax_ir::visit::for_each_stmt(&f.body, &mut |s| match s {
        relax_ir::Stmt::BufferStore { buffer, .. } => {
            stored.insert(buffer.0.data.id());
        }
        relax_ir::Stmt::Evaluate(e) => opaque |= !matches!(e.kind(), relax_ir::PrimExprKind::IntImm { .. }),
        relax_ir::Stmt::BlockRealize { block, .. } => opaque |= !block.match_buffers.is_empty(),
        _ => {}
    });
    // A body that stores nothing is opaque too (a stub run by a custom executor).
    if opaque || stored.is_empty() {
        return None;
    }
    Some(
        f.params
            .iter()
            .map(|p| match f.buffer_of(p) {
                Some(b) => stored.contains(&b.0.data.id()),
                None => true,
            })
            .collect(),
    )
}

/// The truth value of an `If` condition: a bool (or integer) scalar tensor or PrimValue.
fn condition(v: &Value) -> Result<bool> {
    let bad = || EngineError::Type(format!("If condition must be a bool scalar, got {}", v.describe()));
    let p = match v {
        Value::Tensor(t) if t.ndim() == 0 && (t.dtype().is_bool() || t.dtype().is_integer()) => t.scalar_value()?,
        Value::Prim(p) if p.dtype.is_integer() => *p,
        _ => return Err(bad()),
    };
    Ok(matches!(p.value, Scalar::Int(i) if i != 0))
}

/// The Relax variables a function expression uses but does not bind (its captures),
/// in the shapes of its StructInfo annotations too.
pub(crate) fn free_vars(e: &Expr) -> Vec<Var> {
    let mut uses: Vec<Var> = Vec::new();
    let mut defs = HashSet::new();
    let mut annotations: Vec<StructInfo> = Vec::new();
    relax_ir::visit::for_each_expr(e, &mut |x| match x.kind() {
        ExprKind::Var(v) => uses.push(v.clone()),
        ExprKind::Seq(seq) => {
            for b in seq.blocks.iter().flat_map(|b| &b.bindings) {
                defs.insert(b.var().clone());
                if let Binding::MatchCast { struct_info, .. } = b {
                    annotations.push(struct_info.clone());
                }
            }
        }
        ExprKind::Function(f) => {
            for p in &f.params {
                defs.insert(p.clone());
                annotations.extend(p.struct_info().cloned());
            }
            annotations.extend(f.ret_struct_info.clone());
        }
        ExprKind::Call(c) => annotations.extend(c.sinfo_args.iter().cloned()),
        _ => {}
    });
    let mut shapes = Vec::new();
    annotations.iter().for_each(|s| sinfo_shapes(s, &mut shapes));
    for shape in &shapes {
        relax_ir::visit::for_each_expr(shape, &mut |x| {
            if let ExprKind::Var(v) = x.kind() {
                uses.push(v.clone());
            }
        });
    }
    let mut seen = HashSet::new();
    uses.into_iter()
        .filter(|v| !defs.contains(v) && seen.insert(v.clone()))
        .collect()
}

/// The shape expressions in a StructInfo annotation.
fn sinfo_shapes(s: &StructInfo, out: &mut Vec<Expr>) {
    match s {
        StructInfo::Tensor(t) => out.extend(t.shape.clone()),
        StructInfo::Tuple(fields) => fields.iter().for_each(|f| sinfo_shapes(f, out)),
        StructInfo::Func(f) => {
            for p in f.params.iter().flatten() {
                sinfo_shapes(p, out);
            }
            sinfo_shapes(&f.ret, out);
        }
        _ => {}
    }
}
