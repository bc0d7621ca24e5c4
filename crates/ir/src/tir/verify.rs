//! The TIR verifier: in every PrimFunc of a module,
//! - each variable an expression uses is defined where it is used: a parameter, a
//!   variable of a parameter buffer's shape (defined by the buffer map), an enclosing
//!   loop, `Let`, thread launch or block iteration variable, or a buffer's data
//!   pointer (TVM's "Invalid use of undefined variable"; a loop whose extent is an
//!   unbound variable is rejected here);
//! - a loop variable is defined once (thread-binding loops may share a thread
//!   variable, as TVM allows);
//! - every buffer access has one index per buffer dimension;
//! - a block realize gives one value per block iteration variable;
//! - the shape, strides and offset of a buffer in the buffer map (a `T.Buffer`
//!   parameter or a function-level `T.match_buffer`) read no buffer: the buffer map
//!   binds them at the function's entry, before any buffer of the body exists (TVM's
//!   parser rejects `A = T.match_buffer(a, (n,))` after `n = T.int64(0)` as not well
//!   formed; reported as an undefined variable, the buffer's data).
//!
//! Each violation is an error (rule `tir/...`) naming the function.

use std::collections::HashSet;

use super::{Block, Buffer, For, ForKind, PrimExpr, PrimExprKind, PrimFunc, Stmt, TirVar};
use crate::visit::free_tir_vars;
use crate::{BaseFunc, Diagnostic, IRModule, Rule, Span, TirRule};

/// Verify every PrimFunc of `module`.
pub fn verify_module(module: &IRModule) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (gv, f) in &module.functions {
        if let BaseFunc::Prim(f) = f {
            out.extend(verify_prim_func(gv.name(), f));
        }
    }
    out
}

/// Verify one PrimFunc (named `name` in the diagnostics).
pub fn verify_prim_func(name: &str, f: &PrimFunc) -> Vec<Diagnostic> {
    let mut v = Verifier {
        func: name,
        span: f.span,
        scope: Vec::new(),
        global: HashSet::new(),
        loops: HashSet::new(),
        errors: Vec::new(),
    };
    v.global.extend(f.params.iter().map(TirVar::id));
    for (_, b) in &f.buffer_map {
        v.define_buffer_globally(b);
    }
    for (_, b) in &f.buffer_map {
        let node = &b.0;
        let read = node
            .shape
            .iter()
            .chain(&node.strides)
            .chain(&node.elem_offset)
            .find_map(first_buffer_read);
        if let Some(read) = read {
            v.error(
                TirRule::UndefinedVar,
                format!(
                    "the shape of buffer `{}` reads buffer `{}`, which is not defined where the buffer map binds \
                     the parameters (a function-level T.match_buffer shape may use parameters and shape variables, \
                     not a buffer's value)",
                    b.name(),
                    read.name()
                ),
            );
        }
    }
    v.stmt(&f.body);
    v.errors
}

/// The first buffer that `e` reads (a `BufferLoad` anywhere inside it).
fn first_buffer_read(e: &PrimExpr) -> Option<Buffer> {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        if let PrimExprKind::BufferLoad { buffer, .. } = e.kind() {
            return Some(buffer.clone());
        }
        crate::visit::for_each_prim_child(e, &mut |c| stack.push(c));
    }
    None
}

struct Verifier<'a> {
    func: &'a str,
    span: Span,
    /// Variables defined by enclosing statements, innermost last.
    scope: Vec<u64>,
    /// Variables defined for the whole function.
    global: HashSet<u64>,
    /// Non-thread loop variables defined so far.
    loops: HashSet<u64>,
    errors: Vec<Diagnostic>,
}

impl Verifier<'_> {
    fn error(&mut self, rule: TirRule, msg: String) {
        let d = Diagnostic::error(format!("in PrimFunc `{}`: {msg}", self.func), self.span).with_rule(Rule::Tir(rule));
        self.errors.push(d);
    }

    /// A buffer's data pointer and the variables of its shape, strides and offset
    /// are defined wherever the buffer is known (the buffer map or a match defines them).
    fn define_buffer_globally(&mut self, b: &Buffer) {
        self.global.insert(b.0.data.id());
        let node = &b.0;
        for e in node.shape.iter().chain(&node.strides).chain(&node.elem_offset) {
            self.global.extend(free_tir_vars(e).iter().map(TirVar::id));
        }
    }

    fn defined(&self, v: &TirVar) -> bool {
        self.global.contains(&v.id()) || self.scope.contains(&v.id())
    }

    fn scoped(&mut self, vars: &[&TirVar], f: impl FnOnce(&mut Self)) {
        let n = self.scope.len();
        self.scope.extend(vars.iter().map(|v| v.id()));
        f(self);
        self.scope.truncate(n);
    }

    fn access(&mut self, buffer: &Buffer, indices: &[PrimExpr]) {
        // Buffers met in the body (allocations, matches) define their data pointer.
        self.global.insert(buffer.0.data.id());
        let nd = buffer.shape().len();
        if indices.len() != nd {
            self.error(
                TirRule::IndexArity,
                format!(
                    "`{}` has {nd} dimension(s) but is accessed with {} index(es)",
                    buffer.name(),
                    indices.len()
                ),
            );
        }
        for i in indices {
            self.expr(i);
        }
    }

    fn expr(&mut self, e: &PrimExpr) {
        match e.kind() {
            PrimExprKind::Var(v) => {
                if !self.defined(v) {
                    self.error(
                        TirRule::UndefinedVar,
                        format!("Invalid use of undefined variable `{}`", v.name()),
                    );
                }
            }
            PrimExprKind::BufferLoad { buffer, indices } => self.access(buffer, indices),
            PrimExprKind::Let { var, value, body } => {
                self.expr(value);
                self.scoped(&[var], |s| s.expr(body));
            }
            _ => crate::visit::for_each_prim_child(e, &mut |c| self.expr(c)),
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::BufferStore {
                buffer, value, indices, ..
            } => {
                self.expr(value);
                self.access(buffer, indices);
            }
            Stmt::Let { var, value, body } => {
                self.expr(value);
                self.scoped(&[var], |v| v.stmt(body));
            }
            Stmt::Attr { value, body, .. } => {
                self.expr(value);
                self.stmt(body);
            }
            Stmt::LaunchThread { var, extent, body, .. } => {
                self.expr(extent);
                self.scoped(&[var], |v| v.stmt(body));
            }
            Stmt::Assert { cond, body, .. } => {
                self.expr(cond);
                self.stmt(body);
            }
            Stmt::For(For {
                var,
                min,
                extent,
                kind,
                body,
                ..
            }) => {
                self.expr(min);
                self.expr(extent);
                if *kind != ForKind::ThreadBinding && !self.loops.insert(var.id()) {
                    self.error(
                        TirRule::LoopVarRedefined,
                        format!("loop variable `{}` is defined more than once", var.name()),
                    );
                }
                self.scoped(&[var], |v| v.stmt(body));
            }
            Stmt::While { cond, body } => {
                self.expr(cond);
                self.stmt(body);
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
            } => {
                self.expr(cond);
                self.stmt(then_branch);
                if let Some(e) = else_branch {
                    self.stmt(e);
                }
            }
            Stmt::Seq(v) => v.iter().for_each(|x| self.stmt(x)),
            Stmt::Evaluate(e) => self.expr(e),
            Stmt::Alloc { buffer, body } => {
                self.define_buffer_globally(buffer);
                self.stmt(body);
            }
            Stmt::BlockRealize {
                iter_values,
                predicate,
                block,
            } => {
                iter_values.iter().for_each(|e| self.expr(e));
                if let Some(p) = predicate {
                    self.expr(p);
                }
                if iter_values.len() != block.iter_vars.len() {
                    self.error(
                        TirRule::BlockIterValues,
                        format!(
                            "block `{}` has {} iteration variable(s) but is given {} value(s)",
                            block.name,
                            block.iter_vars.len(),
                            iter_values.len()
                        ),
                    );
                }
                self.block(block);
            }
        }
    }

    fn block(&mut self, b: &Block) {
        for iv in &b.iter_vars {
            self.expr(&iv.dom.min);
            self.expr(&iv.dom.extent);
        }
        for buf in b.alloc_buffers.iter().chain(b.match_buffers.iter().map(|m| &m.buffer)) {
            self.define_buffer_globally(buf);
        }
        let vars: Vec<&TirVar> = b.iter_vars.iter().map(|iv| &iv.var).collect();
        self.scoped(&vars, |v| {
            for m in &b.match_buffers {
                for r in &m.source.region {
                    v.expr(&r.min);
                    v.expr(&r.extent);
                }
            }
            for r in b.reads.iter().chain(&b.writes) {
                v.global.insert(r.buffer.0.data.id());
                for rg in &r.region {
                    v.expr(&rg.min);
                    v.expr(&rg.extent);
                }
            }
            if let Some(init) = &b.init {
                v.stmt(init);
            }
            v.stmt(&b.body);
        });
    }
}
