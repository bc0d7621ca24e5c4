//! Lowering of TIR `PrimFunc`s to block-free, flat TIR.
//!
//! Blocks become plain statements (iteration variables substituted by their
//! bindings, `T.where` predicates become `if`s, `T.init()` runs under the
//! first-reduction-iteration condition), multi-dimensional buffers are flattened to
//! one dimension using their strides and `elem_offset`, loop ranges are normalised
//! to start at 0, and loops that only drive spatial block axes are marked
//! [`ForKind::Parallel`]. Each root-level statement becomes a [`Stage`]; a stage
//! that is a single reduction block also gets a [`Reduction`] description used by
//! the GPU schedules and the host fast paths.

use std::collections::HashMap;

use relax_ir::mutator::{walk_stmt as rebuild, StmtExprMutator};
use relax_ir::tir::{
    BinOp, Block, Buffer, BufferNode, For, ForKind, Intrinsic, IterKind, PrimExpr, PrimExprKind, Stmt, TirVar,
};
use relax_ir::visit::{walk_stmt, StmtExprVisitor};
use relax_ir::{DataType, PrimFunc, Span};

use crate::error::{JitError, Result};
use crate::expr::{self, VarMap};

/// How a parameter of the lowered function is passed.
#[derive(Clone, Debug)]
pub enum ParamSlot {
    /// A tensor: the original buffer and its flattened (1-D) view.
    Buffer {
        /// The handle parameter.
        var: TirVar,
        /// The buffer as declared.
        orig: Buffer,
        /// The flat buffer used by the lowered body.
        flat: Buffer,
    },
    /// A scalar parameter.
    Scalar(TirVar),
}

/// How a symbolic variable gets its value from the arguments.
#[derive(Clone, Debug)]
pub struct ShapeBind {
    /// The variable.
    pub var: TirVar,
    /// Parameter index.
    pub param: usize,
    /// Dimension of that parameter's buffer.
    pub dim: usize,
}

/// An associative reduction block `C[I] = op(C[I], rhs)` with `C[I] = init`.
#[derive(Clone, Debug)]
pub struct Reduction {
    /// Spatial loops (outermost first): variable and extent.
    pub spatial: Vec<(TirVar, PrimExpr)>,
    /// Reduction loops (outermost first).
    pub reduce: Vec<(TirVar, PrimExpr)>,
    /// The (flat) output buffer.
    pub out: Buffer,
    /// The flat output index (uses only spatial variables).
    pub out_index: PrimExpr,
    /// The init value.
    pub init: PrimExpr,
    /// The combiner.
    pub op: BinOp,
    /// The value combined each iteration (does not read `out`).
    pub rhs: PrimExpr,
    /// Matmul structure, when detected.
    pub matmul: Option<Matmul>,
}

/// A matmul-like reduction: `out[.., i, j] += cast(x[.., i, k]) * cast(y[.., k, j])`.
#[derive(Clone, Debug)]
pub struct Matmul {
    /// Index in `spatial` of the row variable.
    pub i: usize,
    /// Index in `spatial` of the column variable.
    pub j: usize,
    /// The load depending on `i` and `k` (not `j`).
    pub x: PrimExpr,
    /// The load depending on `k` and `j` (not `i`).
    pub y: PrimExpr,
}

/// One root-level statement of the function: one or more GPU kernels.
#[derive(Clone, Debug)]
pub struct Stage {
    /// The lowered body (block-free, flat buffers).
    pub body: Stmt,
    /// Reduction structure, when the stage is one reduction block.
    pub reduction: Option<Reduction>,
}

/// A lowered PrimFunc.
#[derive(Clone, Debug)]
pub struct LoweredFunc {
    /// Name (for messages).
    pub name: String,
    /// Parameters in order.
    pub params: Vec<ParamSlot>,
    /// Symbolic variables defined by argument shapes.
    pub shape_binds: Vec<ShapeBind>,
    /// Shape constraints: `(expected extent, param, dim)` checked against arguments.
    pub shape_checks: Vec<(PrimExpr, usize, usize)>,
    /// Function-level global scratch buffers (flat), live for the whole call.
    pub scratch: Vec<Buffer>,
    /// The stages, run in order.
    pub stages: Vec<Stage>,
    /// Whether the function binds threads itself (`T.thread_binding`, `T.launch_thread`).
    pub has_thread_bindings: bool,
    /// Whether the function synchronises threads (`T.tvm_storage_sync`).
    pub has_barriers: bool,
    /// Whether the function promises that its buffer parameters do not overlap
    /// (`"tirx.noalias"`, as legalized functions do).
    pub noalias: bool,
}

impl LoweredFunc {
    /// The flat buffers of all tensor parameters, by parameter index.
    pub fn param_buffers(&self) -> impl Iterator<Item = (usize, &Buffer)> {
        self.params.iter().enumerate().filter_map(|(i, p)| match p {
            ParamSlot::Buffer { flat, .. } => Some((i, flat)),
            ParamSlot::Scalar(_) => None,
        })
    }
}

struct Ctx {
    func: String,
    /// Original buffer id -> (flat buffer, flattening strides, elem offset).
    flat: HashMap<u64, Flat>,
    /// Substitution of block iteration variables / normalised loop variables.
    vmap: VarMap,
    /// Buffers by data variable id (for `T.decl_buffer` style aliases).
    has_threads: bool,
    has_barriers: bool,
    /// The first error met by the statement rewrite ([`StmtExprMutator`] methods
    /// cannot return one).
    err: Option<JitError>,
}

#[derive(Clone)]
struct Flat {
    buf: Buffer,
    strides: Vec<PrimExpr>,
    offset: PrimExpr,
}

fn unsupported(ctx: &Ctx, msg: impl Into<String>) -> JitError {
    JitError::Unsupported {
        func: ctx.func.clone(),
        msg: msg.into(),
    }
}

/// The name of a PrimFunc for messages (`global_symbol` or a placeholder).
pub fn func_name(f: &PrimFunc) -> String {
    f.attrs.get_str("global_symbol").unwrap_or("prim_func").to_string()
}

/// Lower a PrimFunc.
pub fn lower(f: &PrimFunc) -> Result<LoweredFunc> {
    lower_named(f, &func_name(f))
}

/// Lower a PrimFunc, naming it `name` in messages.
pub fn lower_named(f: &PrimFunc, name: &str) -> Result<LoweredFunc> {
    // Lowering and code generation recurse over statements: a tree built through
    // the API deeper than any parsed one is refused before it can exhaust the stack.
    let depth = f.body.depth();
    if depth > relax_ir::tir::MAX_STMT_TREE_DEPTH {
        return Err(JitError::Unsupported {
            func: name.to_string(),
            msg: format!(
                "statements nested {depth} levels deep (chained lets, scopes, loops); at most {} are compiled",
                relax_ir::tir::MAX_STMT_TREE_DEPTH
            ),
        });
    }
    // Elementwise chains over intermediate buffers become one stage.
    let inlined = crate::inline::inline_elementwise(f);
    let f = &inlined;
    let mut ctx = Ctx {
        func: name.to_string(),
        flat: HashMap::new(),
        vmap: VarMap::new(),
        has_threads: false,
        has_barriers: false,
        err: None,
    };
    let mut params = Vec::new();
    let mut shape_binds: Vec<ShapeBind> = Vec::new();
    let mut shape_checks = Vec::new();
    let mut defined: Vec<u64> = Vec::new();
    for p in &f.params {
        if !p.dtype().is_handle() {
            defined.push(p.id());
        }
    }
    for (pi, p) in f.params.iter().enumerate() {
        if let Some(b) = f.buffer_of(p) {
            for (d, e) in b.shape().iter().enumerate() {
                match e.as_var() {
                    Some(v) if !defined.contains(&v.id()) => {
                        defined.push(v.id());
                        shape_binds.push(ShapeBind {
                            var: v.clone(),
                            param: pi,
                            dim: d,
                        });
                    }
                    _ => shape_checks.push((e.clone(), pi, d)),
                }
            }
            if !b.0.strides.is_empty() {
                // Strides must describe the compact layout the arguments have.
                let compact = compact_strides(b.shape());
                for (s, c) in b.0.strides.iter().zip(&compact) {
                    if let Some(v) = s.as_var() {
                        if !defined.contains(&v.id()) {
                            defined.push(v.id());
                            ctx.vmap.insert(v.id(), c.clone());
                        }
                    }
                }
            }
            if let Some(off) = &b.0.elem_offset {
                if let Some(v) = off.as_var() {
                    if !defined.contains(&v.id()) {
                        defined.push(v.id());
                        ctx.vmap.insert(v.id(), PrimExpr::int_of(0, v.dtype()));
                    }
                }
            }
            let fl = flatten_buffer(&ctx, b)?;
            params.push(ParamSlot::Buffer {
                var: p.clone(),
                orig: b.clone(),
                flat: fl.buf.clone(),
            });
            ctx.flat.insert(b.id(), fl);
        } else if p.dtype().is_handle() {
            return Err(unsupported(
                &ctx,
                format!("handle parameter `{}` without a buffer", p.name()),
            ));
        } else {
            params.push(ParamSlot::Scalar(p.clone()));
        }
    }
    // Peel the root block and function-level allocations into scratch buffers.
    let mut scratch = Vec::new();
    let mut root = f.body.clone();
    let mut wrappers: Vec<Stmt> = Vec::new(); // Let/Assert wrappers kept around every stage
    loop {
        match root {
            Stmt::BlockRealize {
                ref block,
                ref iter_values,
                ..
            } if block.iter_vars.is_empty() && iter_values.is_empty() && block.init.is_none() => {
                if !block.match_buffers.is_empty() {
                    return Err(unsupported(&ctx, "T.match_buffer in the root block"));
                }
                for b in &block.alloc_buffers {
                    let fl = flatten_buffer(&ctx, b)?;
                    if b.scope() == "global" || b.scope().is_empty() {
                        scratch.push(fl.buf.clone());
                    } else {
                        return Err(unsupported(
                            &ctx,
                            format!("root allocation `{}` in scope {}", b.name(), b.scope()),
                        ));
                    }
                    ctx.flat.insert(b.id(), fl);
                }
                root = (*block.body).clone();
            }
            Stmt::Alloc { ref buffer, ref body } if buffer.scope() == "global" || buffer.scope().is_empty() => {
                let fl = flatten_buffer(&ctx, buffer)?;
                scratch.push(fl.buf.clone());
                ctx.flat.insert(buffer.id(), fl);
                root = (**body).clone();
            }
            Stmt::Let { .. } | Stmt::Assert { .. } => {
                let (head, body) = split_wrapper(root);
                wrappers.push(head);
                root = body;
            }
            _ => break,
        }
    }
    let mut has_tb = false;
    expr::visit_stmts(&root, &mut |s| match s {
        Stmt::For(For {
            kind: ForKind::ThreadBinding,
            ..
        })
        | Stmt::LaunchThread { .. } => has_tb = true,
        Stmt::Attr { key, .. } if key == "thread_extent" => has_tb = true,
        _ => {}
    });
    let parts: Vec<Stmt> = if has_tb {
        vec![root]
    } else {
        match root {
            Stmt::Seq(v) => v,
            s => vec![s],
        }
    };
    let mut stages = Vec::new();
    for part in parts {
        let reduction = if wrappers.is_empty() {
            detect_reduction(&mut ctx, &part)?
        } else {
            None
        };
        let body = match &reduction {
            Some(r) => reduction_body(r),
            None => lower_stmt(&mut ctx, &part)?,
        };
        let mut body = body;
        for w in wrappers.iter().rev() {
            body = rewrap(&mut ctx, w, body)?;
        }
        stages.push(Stage { body, reduction });
    }
    Ok(LoweredFunc {
        name: name.to_string(),
        params,
        shape_binds,
        shape_checks,
        scratch,
        stages,
        has_thread_bindings: ctx.has_threads || has_tb,
        has_barriers: ctx.has_barriers,
        noalias: ["tirx.noalias", "tir.noalias"]
            .iter()
            .any(|k| f.attrs.get_bool(k).unwrap_or(false) || f.attrs.get_int(k).is_some_and(|v| v != 0)),
    })
}

fn split_wrapper(s: Stmt) -> (Stmt, Stmt) {
    match s {
        Stmt::Let { var, value, body } => (
            Stmt::Let {
                var,
                value,
                body: Box::new(Stmt::Seq(vec![])),
            },
            *body,
        ),
        Stmt::Assert { cond, message, body } => (
            Stmt::Assert {
                cond,
                message,
                body: Box::new(Stmt::Seq(vec![])),
            },
            *body,
        ),
        other => (Stmt::Seq(vec![]), other),
    }
}

fn rewrap(ctx: &mut Ctx, w: &Stmt, body: Stmt) -> Result<Stmt> {
    Ok(match w {
        Stmt::Let { var, value, .. } => Stmt::Let {
            var: var.clone(),
            value: lower_expr(ctx, value)?,
            body: Box::new(body),
        },
        Stmt::Assert { cond, message, .. } => Stmt::Assert {
            cond: lower_expr(ctx, cond)?,
            message: message.clone(),
            body: Box::new(body),
        },
        _ => body,
    })
}

/// Compact row-major strides of `shape`.
pub fn compact_strides(shape: &[PrimExpr]) -> Vec<PrimExpr> {
    let mut out = vec![PrimExpr::int(1); shape.len()];
    let mut acc: Option<PrimExpr> = None;
    for d in (0..shape.len()).rev() {
        let s = match &acc {
            None => expr::int_like(&shape[d], 1),
            Some(a) => a.clone(),
        };
        out[d] = s.clone();
        acc = Some(expr::mul(s, shape[d].clone()));
    }
    out
}

fn flatten_buffer(ctx: &Ctx, b: &Buffer) -> Result<Flat> {
    let shape: Vec<PrimExpr> = b
        .shape()
        .iter()
        .map(|e| expr::simplify(&expr::subst(e, &ctx.vmap)))
        .collect();
    let strides = if b.0.strides.is_empty() {
        compact_strides(&shape)
    } else {
        if b.0.strides.len() != shape.len() {
            return Err(JitError::InvalidIr(format!(
                "buffer `{}` has {} strides for rank {}",
                b.name(),
                b.0.strides.len(),
                shape.len()
            )));
        }
        b.0.strides
            .iter()
            .map(|e| expr::simplify(&expr::subst(e, &ctx.vmap)))
            .collect()
    };
    let offset = match &b.0.elem_offset {
        Some(e) => expr::simplify(&expr::subst(e, &ctx.vmap)),
        None => PrimExpr::int(0),
    };
    // Total extent of the flat allocation.
    let mut size: PrimExpr = PrimExpr::int(1);
    for s in &shape {
        size = expr::mul(size, expr::cast(s.clone(), DataType::INT64));
    }
    if !b.0.strides.is_empty() && !shape.is_empty() {
        // size = 1 + sum((shape-1)*stride)
        let mut s = PrimExpr::int(1);
        for (e, st) in shape.iter().zip(&strides) {
            let ext = expr::bin(BinOp::Sub, expr::cast(e.clone(), DataType::INT64), PrimExpr::int(1));
            s = expr::add(s, expr::mul(ext, expr::cast(st.clone(), DataType::INT64)));
        }
        size = s;
    }
    let size = expr::simplify(&size);
    let node = BufferNode {
        id: 0,
        name: b.name().to_string(),
        data: b.0.data.clone(),
        dtype: b.dtype(),
        shape: vec![size],
        strides: vec![],
        elem_offset: None,
        scope: b.scope().to_string(),
        align: b.0.align,
        offset_factor: 0,
        axis_separators: vec![],
    };
    Ok(Flat {
        buf: Buffer::from_node(node),
        strides,
        offset,
    })
}

fn flat_index(ctx: &mut Ctx, buffer: &Buffer, indices: &[PrimExpr]) -> Result<(Buffer, PrimExpr)> {
    let fl = match ctx.flat.get(&buffer.id()) {
        Some(f) => f.clone(),
        None => {
            // A buffer declared by data pointer elsewhere (`T.decl_buffer` alias of a param).
            let found = ctx.flat.values().find(|f| f.buf.0.data == buffer.0.data).cloned();
            match found {
                Some(base) if buffer.0.strides.is_empty() && buffer.0.elem_offset.is_none() => {
                    let mut f = flatten_buffer(ctx, buffer)?;
                    f.buf = base.buf.clone();
                    ctx.flat.insert(buffer.id(), f.clone());
                    f
                }
                _ => {
                    return Err(unsupported(
                        ctx,
                        format!("buffer `{}` is not defined here", buffer.name()),
                    ))
                }
            }
        }
    };
    if indices.len() != fl.strides.len() {
        return Err(JitError::InvalidIr(format!(
            "buffer `{}` of rank {} accessed with {} indices",
            buffer.name(),
            fl.strides.len(),
            indices.len()
        )));
    }
    let mut idx = fl.offset.clone();
    for (i, s) in indices.iter().zip(&fl.strides) {
        let i = lower_expr(ctx, i)?;
        if i.dtype().lanes > 1 {
            return Err(unsupported(ctx, "vector (Ramp) buffer indices"));
        }
        let i = expr::cast(i, DataType::INT64);
        idx = expr::add(idx, expr::mul(i, expr::cast(s.clone(), DataType::INT64)));
    }
    Ok((fl.buf, expr::simplify(&idx)))
}

/// Lower an expression: substitute, flatten loads, simplify.
fn lower_expr(ctx: &mut Ctx, e: &PrimExpr) -> Result<PrimExpr> {
    let mut err = None;
    let out = expr::map_expr(e, &mut |x| match x.kind() {
        PrimExprKind::Var(v) => ctx.vmap.get(&v.id()).cloned(),
        PrimExprKind::BufferLoad { buffer, indices } => {
            if err.is_some() {
                return Some(x.clone());
            }
            match flat_index(ctx, buffer, indices) {
                Ok((b, i)) => Some(PrimExpr::load(&b, vec![i])),
                Err(e) => {
                    err = Some(e);
                    Some(x.clone())
                }
            }
        }
        PrimExprKind::Ramp { .. } | PrimExprKind::Broadcast { .. } => {
            err.get_or_insert(unsupported(ctx, "vector expressions (T.Ramp / T.Broadcast)"));
            Some(x.clone())
        }
        PrimExprKind::Call { .. } if x.as_intrinsic() == Some(Intrinsic::TvmStorageSync) => {
            ctx.has_barriers = true;
            None
        }
        _ => None,
    });
    match err {
        Some(e) => Err(e),
        None => Ok(expr::simplify(&out)),
    }
}

/// Whether loop variable `v` may run in parallel: every block under `body` binds it
/// only to spatial iteration variables, and no store happens outside a block.
fn loop_is_parallel(v: &TirVar, body: &Stmt) -> bool {
    let mut check = ParallelCheck {
        var: v,
        in_block: false,
        ok: true,
        saw_block: false,
    };
    check.visit_stmt(body);
    check.ok && check.saw_block
}

struct ParallelCheck<'v> {
    var: &'v TirVar,
    in_block: bool,
    ok: bool,
    saw_block: bool,
}

impl<'a> StmtExprVisitor<'a> for ParallelCheck<'_> {
    fn visit_prim_expr(&mut self, _: &'a PrimExpr) {}
    fn visit_stmt(&mut self, s: &'a Stmt) {
        match s {
            Stmt::BlockRealize { iter_values, block, .. } => {
                self.saw_block = true;
                for (iv, val) in block.iter_vars.iter().zip(iter_values) {
                    if iv.kind != IterKind::DataPar && expr::uses_var(val, self.var) {
                        self.ok = false;
                    }
                }
                let outer = std::mem::replace(&mut self.in_block, true);
                walk_stmt(self, s);
                self.in_block = outer;
            }
            Stmt::BufferStore { .. } | Stmt::Evaluate(_) if !self.in_block => self.ok = false,
            Stmt::For(For {
                kind: ForKind::ThreadBinding,
                ..
            })
            | Stmt::LaunchThread { .. }
            | Stmt::While { .. } => self.ok = false,
            _ => walk_stmt(self, s),
        }
    }
}

/// Lower a statement (blocks, flat buffers, normalised loops); the first error
/// met on the way is returned.
fn lower_stmt(ctx: &mut Ctx, s: &Stmt) -> Result<Stmt> {
    let out = ctx.visit_stmt(s);
    match ctx.err.take() {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

impl Ctx {
    /// Keep the first error; later ones follow from it.
    fn fail(&mut self, e: JitError) {
        self.err.get_or_insert(e);
    }

    /// `x`, or `fallback` with the error kept.
    fn or_keep<T>(&mut self, x: Result<T>, fallback: impl FnOnce() -> T) -> T {
        x.unwrap_or_else(|e| {
            self.fail(e);
            fallback()
        })
    }

    /// A loop: bounds lowered, kind decided, variable shifted to start at 0.
    fn lower_for(&mut self, s: &Stmt) -> Stmt {
        let Stmt::For(f) = s else {
            return rebuild(self, s);
        };
        let min = self.visit_prim_expr(&f.min);
        let extent = self.visit_prim_expr(&f.extent);
        let (var, body) = (&f.var, &f.body);
        let mut kind = f.kind;
        if kind == ForKind::ThreadBinding {
            self.has_threads = true;
            if f.thread_tag.as_deref() == Some("vthread") || f.thread_tag.is_none() {
                kind = ForKind::Serial;
            }
        } else if kind == ForKind::Serial || kind == ForKind::Parallel || kind == ForKind::Vectorized {
            kind = if loop_is_parallel(var, body) || kind == ForKind::Parallel {
                ForKind::Parallel
            } else {
                ForKind::Serial
            };
        }
        let nv = if min.as_int() == Some(0) {
            var.clone()
        } else {
            let nv = TirVar::new(var.name(), var.dtype());
            self.vmap.insert(var.id(), expr::add(nv.to_expr(), min));
            nv
        };
        let body = self.visit_stmt(body);
        Stmt::For(For {
            var: nv,
            kind,
            ..f.rebuild(expr::int_like(&extent, 0), extent, body)
        })
    }
}

/// Lowering is a [`StmtExprMutator`]: the statements it changes are rewritten
/// here, the others are rebuilt by the default recursion; every expression is
/// lowered by [`lower_expr`].
impl StmtExprMutator for Ctx {
    fn visit_prim_expr(&mut self, e: &PrimExpr) -> PrimExpr {
        let r = lower_expr(self, e);
        self.or_keep(r, || e.clone())
    }

    fn visit_stmt(&mut self, s: &Stmt) -> Stmt {
        match s {
            Stmt::BufferStore {
                buffer,
                value,
                indices,
                span,
            } => {
                let value = self.visit_prim_expr(value);
                let flat = flat_index(self, buffer, indices).map(|(buffer, idx)| Stmt::BufferStore {
                    buffer,
                    value,
                    indices: vec![idx],
                    span: *span,
                });
                self.or_keep(flat, || s.clone())
            }
            Stmt::Attr {
                key,
                body,
                value,
                node: Some(v),
            } if key == "thread_extent" => {
                // Old-style launch: `T.attr(iter_var, "thread_extent", n)`.
                let extent = self.visit_prim_expr(value);
                Stmt::LaunchThread {
                    var: v.clone(),
                    tag: v.name().to_string(),
                    extent,
                    body: Box::new(self.visit_stmt(body)),
                }
            }
            Stmt::Attr { body, .. } => self.visit_stmt(body),
            Stmt::LaunchThread { .. } => {
                self.has_threads = true;
                rebuild(self, s)
            }
            Stmt::For(_) => self.lower_for(s),
            Stmt::If { .. } => match rebuild(self, s) {
                Stmt::If {
                    cond,
                    then_branch,
                    else_branch,
                } => match cond.as_int() {
                    Some(0) => else_branch.map(|b| *b).unwrap_or(Stmt::Seq(vec![])),
                    Some(_) => *then_branch,
                    None => Stmt::If {
                        cond,
                        then_branch,
                        else_branch,
                    },
                },
                other => other,
            },
            Stmt::Alloc { buffer, body } => {
                let fl = flatten_buffer(self, buffer);
                let Some(fl) = self.or_keep(fl.map(Some), || None) else {
                    return s.clone();
                };
                self.flat.insert(buffer.id(), fl.clone());
                Stmt::Alloc {
                    buffer: fl.buf,
                    body: Box::new(self.visit_stmt(body)),
                }
            }
            Stmt::BlockRealize {
                iter_values,
                predicate,
                block,
            } => {
                let r = lower_block(self, iter_values, predicate.as_ref(), block);
                self.or_keep(r, || s.clone())
            }
            _ => rebuild(self, s),
        }
    }
}

fn lower_block(ctx: &mut Ctx, iter_values: &[PrimExpr], predicate: Option<&PrimExpr>, block: &Block) -> Result<Stmt> {
    if iter_values.len() != block.iter_vars.len() {
        return Err(JitError::InvalidIr(format!(
            "block `{}` binds {} values to {} iteration variables",
            block.name,
            iter_values.len(),
            block.iter_vars.len()
        )));
    }
    if !block.match_buffers.is_empty() {
        return Err(unsupported(ctx, format!("T.match_buffer in block `{}`", block.name)));
    }
    let mut first_iter: PrimExpr = PrimExpr::bool(true);
    for (iv, val) in block.iter_vars.iter().zip(iter_values) {
        let v = lower_expr(ctx, val)?;
        if iv.kind == IterKind::CommReduce || iv.kind == IterKind::Ordered {
            let min = lower_expr(ctx, &iv.dom.min)?;
            let c = expr::bin(BinOp::Eq, v.clone(), expr::cast(min, v.dtype()));
            first_iter = expr::and(first_iter, c);
        }
        ctx.vmap.insert(iv.var.id(), v);
    }
    let mut allocs = Vec::new();
    for b in &block.alloc_buffers {
        let fl = flatten_buffer(ctx, b)?;
        ctx.flat.insert(b.id(), fl.clone());
        allocs.push(fl.buf);
    }
    let mut body = lower_stmt(ctx, &block.body)?;
    if let Some(init) = &block.init {
        let init = lower_stmt(ctx, init)?;
        let guarded = match first_iter.as_int() {
            Some(0) => Stmt::Seq(vec![]),
            Some(_) => init,
            None => Stmt::If {
                cond: first_iter,
                then_branch: Box::new(init),
                else_branch: None,
            },
        };
        body = Stmt::Seq(vec![guarded, body]);
    }
    for b in allocs.into_iter().rev() {
        body = Stmt::Alloc {
            buffer: b,
            body: Box::new(body),
        };
    }
    if let Some(p) = predicate {
        let p = lower_expr(ctx, p)?;
        match p.as_int() {
            Some(0) => body = Stmt::Seq(vec![]),
            Some(_) => {}
            None => {
                body = Stmt::If {
                    cond: p,
                    then_branch: Box::new(body),
                    else_branch: None,
                }
            }
        }
    }
    Ok(body)
}

pub use relax_ir::tir::expr_equal as expr_eq;

/// Recognise a stage that is a perfect loop nest around one reduction block.
fn detect_reduction(ctx: &mut Ctx, s: &Stmt) -> Result<Option<Reduction>> {
    let mut loops: Vec<(TirVar, PrimExpr, PrimExpr)> = Vec::new();
    let mut cur = s;
    loop {
        match cur {
            Stmt::For(For {
                var,
                min,
                extent,
                kind: ForKind::Serial | ForKind::Parallel,
                body,
                ..
            }) => {
                loops.push((var.clone(), min.clone(), extent.clone()));
                cur = body;
            }
            Stmt::BlockRealize { .. } => break,
            _ => return Ok(None),
        }
    }
    let Stmt::BlockRealize {
        iter_values,
        predicate,
        block,
    } = cur
    else {
        return Ok(None);
    };
    if predicate.as_ref().is_some_and(|p| p.as_int() != Some(1))
        || block.init.is_none()
        || !block.alloc_buffers.is_empty()
        || !block.match_buffers.is_empty()
        || iter_values.len() != block.iter_vars.len()
    {
        return Ok(None);
    }
    let (
        Some(Stmt::BufferStore {
            buffer: ib,
            value: ival,
            indices: iidx,
            ..
        }),
        Stmt::BufferStore {
            buffer: cb,
            value: cval,
            indices: cidx,
            ..
        },
    ) = (block.init.as_deref(), block.body.as_ref())
    else {
        return Ok(None);
    };
    if ib != cb {
        return Ok(None);
    }
    // Classify loops.
    let mut spatial = Vec::new();
    let mut reduce = Vec::new();
    for (v, _, ext) in &loops {
        let mut sp = false;
        let mut rd = false;
        for (iv, val) in block.iter_vars.iter().zip(iter_values) {
            if expr::uses_var(val, v) {
                match iv.kind {
                    IterKind::DataPar => sp = true,
                    IterKind::CommReduce => rd = true,
                    _ => return Ok(None),
                }
            }
        }
        if sp && rd {
            return Ok(None);
        }
        if rd {
            reduce.push((v.clone(), ext.clone()));
        } else {
            if !reduce.is_empty() {
                return Ok(None); // spatial loop inside a reduction loop
            }
            spatial.push((v.clone(), ext.clone()));
        }
    }
    if reduce.is_empty() {
        return Ok(None);
    }
    // Normalise loop mins and bind block variables.
    let saved = ctx.vmap.clone();
    let mut nspatial = Vec::new();
    let mut nreduce = Vec::new();
    for (v, min, _) in &loops {
        let min = lower_expr(ctx, min)?;
        let ext = lower_expr(
            ctx,
            &loops
                .iter()
                .find(|l| &l.0 == v)
                .map(|l| l.2.clone())
                .unwrap_or_else(|| PrimExpr::int(1)),
        )?;
        let nv = if min.as_int() == Some(0) {
            v.clone()
        } else {
            TirVar::new(v.name(), v.dtype())
        };
        if min.as_int() != Some(0) {
            ctx.vmap.insert(v.id(), expr::add(nv.to_expr(), min));
        }
        if spatial.iter().any(|(w, _)| w == v) {
            nspatial.push((nv, ext));
        } else {
            nreduce.push((nv, ext));
        }
    }
    for (iv, val) in block.iter_vars.iter().zip(iter_values) {
        let v = lower_expr(ctx, val)?;
        ctx.vmap.insert(iv.var.id(), v);
    }
    let result = (|| -> Result<Option<Reduction>> {
        let (out, out_index) = flat_index(ctx, cb, cidx)?;
        let (_, init_index) = flat_index(ctx, ib, iidx)?;
        if !expr_eq(&out_index, &init_index) {
            return Ok(None);
        }
        if nreduce.iter().any(|(r, _)| expr::uses_var(&out_index, r)) {
            return Ok(None);
        }
        let init = lower_expr(ctx, ival)?;
        let cval = lower_expr(ctx, cval)?;
        let PrimExprKind::Binary { op, a, b } = cval.kind() else {
            return Ok(None);
        };
        if !matches!(op, BinOp::Add | BinOp::Mul | BinOp::Min | BinOp::Max) {
            return Ok(None);
        }
        let is_acc = |e: &PrimExpr| match e.kind() {
            PrimExprKind::BufferLoad { buffer, indices } => buffer == &out && expr_eq(&indices[0], &out_index),
            _ => false,
        };
        let rhs = if is_acc(a) {
            b.clone()
        } else if is_acc(b) {
            a.clone()
        } else {
            return Ok(None);
        };
        if expr::loads_buffer(&rhs, &out) || expr::loads_buffer(&init, &out) {
            return Ok(None);
        }
        let matmul = detect_matmul(*op, &rhs, &nspatial, &nreduce, &out_index);
        Ok(Some(Reduction {
            spatial: nspatial.clone(),
            reduce: nreduce.clone(),
            out,
            out_index,
            init,
            op: *op,
            rhs,
            matmul,
        }))
    })();
    if !matches!(result, Ok(Some(_))) {
        ctx.vmap = saved;
    }
    result
}

fn detect_matmul(
    op: BinOp,
    rhs: &PrimExpr,
    spatial: &[(TirVar, PrimExpr)],
    reduce: &[(TirVar, PrimExpr)],
    out_index: &PrimExpr,
) -> Option<Matmul> {
    if op != BinOp::Add || reduce.len() != 1 || spatial.len() < 2 {
        return None;
    }
    let PrimExprKind::Binary { op: BinOp::Mul, a, b } = rhs.without_casts().kind() else {
        return None;
    };
    let (la, lb) = (a.without_casts(), b.without_casts());
    if !matches!(la.kind(), PrimExprKind::BufferLoad { .. }) || !matches!(lb.kind(), PrimExprKind::BufferLoad { .. }) {
        return None;
    }
    let k = &reduce[0].0;
    let n = spatial.len();
    let (iv, jv) = (&spatial[n - 2].0, &spatial[n - 1].0);
    let uses = |e: &PrimExpr, v: &TirVar| expr::uses_var(e, v);
    if !(uses(out_index, iv) && uses(out_index, jv)) {
        return None;
    }
    let x_ok = |x: &PrimExpr| uses(x, iv) && uses(x, k) && !uses(x, jv);
    let y_ok = |y: &PrimExpr| uses(y, jv) && uses(y, k) && !uses(y, iv);
    let (x, y) = if x_ok(a) && y_ok(b) {
        (a.clone(), b.clone())
    } else if x_ok(b) && y_ok(a) {
        (b.clone(), a.clone())
    } else {
        return None;
    };
    Some(Matmul {
        i: n - 2,
        j: n - 1,
        x,
        y,
    })
}

/// The host/GPU-generic body of a reduction stage: parallel spatial loops around a
/// local accumulator.
pub fn reduction_body(r: &Reduction) -> Stmt {
    let acc = Buffer::with_scope("acc", r.out.dtype(), vec![PrimExpr::int(1)], "local");
    let zero = PrimExpr::int(0);
    let acc_load = PrimExpr::load(&acc, vec![zero.clone()]);
    let store_acc = |v: PrimExpr| Stmt::BufferStore {
        buffer: acc.clone(),
        value: v,
        indices: vec![zero.clone()],
        span: Span::NONE,
    };
    let mut inner = store_acc(PrimExpr::binary(r.op, acc_load.clone(), r.rhs.clone()));
    for (v, ext) in r.reduce.iter().rev() {
        inner = for_loop(v, ext.clone(), ForKind::Serial, inner);
    }
    let body = Stmt::Seq(vec![
        store_acc(r.init.clone()),
        inner,
        Stmt::BufferStore {
            buffer: r.out.clone(),
            value: acc_load,
            indices: vec![r.out_index.clone()],
            span: Span::NONE,
        },
    ]);
    let mut s = Stmt::Alloc {
        buffer: acc,
        body: Box::new(body),
    };
    for (v, ext) in r.spatial.iter().rev() {
        s = for_loop(v, ext.clone(), ForKind::Parallel, s);
    }
    s
}

/// A loop `for v in range(extent)`.
pub fn for_loop(v: &TirVar, extent: PrimExpr, kind: ForKind, body: Stmt) -> Stmt {
    Stmt::For(For::from_zero(v.clone(), extent, kind, body))
}
