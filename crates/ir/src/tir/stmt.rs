use super::{Buffer, BufferRegion, PrimExpr, Range, TirVar};
use crate::attrs::Attrs;
use crate::span::Span;

/// The deepest statement tree that lowering and code generation accept (they
/// recurse over statements). The parser's own bound (`MAX_STMT_DEPTH`, 256
/// scopes) keeps every parsed function far below it; a tree built through the
/// API past it is refused with an error instead of overflowing the stack.
pub const MAX_STMT_TREE_DEPTH: usize = 1024;

/// How a `for` loop runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ForKind {
    /// `range` / `T.serial`.
    Serial,
    /// `T.parallel`.
    Parallel,
    /// `T.vectorized`.
    Vectorized,
    /// `T.unroll`.
    Unrolled,
    /// `T.thread_binding(..., thread="threadIdx.x")`.
    ThreadBinding,
}

/// The role of a block iteration variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IterKind {
    /// `T.axis.spatial` ("S").
    DataPar,
    /// `T.axis.reduce` ("R").
    CommReduce,
    /// `T.axis.scan`.
    Ordered,
    /// `T.axis.opaque`.
    Opaque,
}

/// A block iteration variable with its domain.
#[derive(Clone, Debug)]
pub struct IterVar {
    /// The variable.
    pub var: TirVar,
    /// Its domain.
    pub dom: Range,
    /// Its role.
    pub kind: IterKind,
}

/// `T.match_buffer(region, ...)` inside a block.
#[derive(Clone, Debug)]
pub struct MatchBufferRegion {
    /// The new buffer.
    pub buffer: Buffer,
    /// The region it views.
    pub source: BufferRegion,
}

/// A TIR block (`T.sblock` / `T.block`).
#[derive(Clone, Debug)]
pub struct Block {
    /// The block name.
    pub name: String,
    /// Iteration variables.
    pub iter_vars: Vec<IterVar>,
    /// `T.reads`.
    pub reads: Vec<BufferRegion>,
    /// `T.writes`.
    pub writes: Vec<BufferRegion>,
    /// `T.init()` body, run on the first reduction iteration.
    pub init: Option<Box<Stmt>>,
    /// Buffers allocated in this block.
    pub alloc_buffers: Vec<Buffer>,
    /// `T.match_buffer` regions.
    pub match_buffers: Vec<MatchBufferRegion>,
    /// `T.block_attr` / `T.sblock_attr` annotations.
    pub annotations: Attrs,
    /// The body.
    pub body: Box<Stmt>,
}

/// A `for` loop (TIR `For`).
#[derive(Clone, Debug)]
pub struct For {
    /// The loop variable.
    pub var: TirVar,
    /// First value.
    pub min: PrimExpr,
    /// Trip count.
    pub extent: PrimExpr,
    /// Loop kind.
    pub kind: ForKind,
    /// The thread tag when `kind` is `ThreadBinding`.
    pub thread_tag: Option<String>,
    /// Loop annotations.
    pub annotations: Attrs,
    /// The body.
    pub body: Box<Stmt>,
}

impl For {
    /// A loop `for var in range(0, extent)` of `kind`, without thread tag or annotations.
    pub fn from_zero(var: TirVar, extent: PrimExpr, kind: ForKind, body: Stmt) -> For {
        For {
            var,
            min: PrimExpr::int_of(0, extent.dtype()),
            extent,
            kind,
            thread_tag: None,
            annotations: Attrs::new(),
            body: Box::new(body),
        }
    }

    /// This loop's header (variable, kind, thread tag, annotations) over new bounds and body.
    pub fn rebuild(&self, min: PrimExpr, extent: PrimExpr, body: Stmt) -> For {
        For {
            var: self.var.clone(),
            min,
            extent,
            kind: self.kind,
            thread_tag: self.thread_tag.clone(),
            annotations: self.annotations.clone(),
            body: Box::new(body),
        }
    }

    /// This loop with another body.
    pub fn with_body(&self, body: Stmt) -> For {
        self.rebuild(self.min.clone(), self.extent.clone(), body)
    }
}

impl From<For> for Stmt {
    fn from(f: For) -> Stmt {
        Stmt::For(f)
    }
}

/// A TIR statement. Cloning follows the chain of scopes that continue with the
/// statements after them (`let`, attributes, asserts, loops, allocations and a
/// sequence's last item) in a loop, so a long chain of `LetStmt`s clones in
/// bounded stack.
#[derive(Debug)]
pub enum Stmt {
    /// `buffer[indices] = value`.
    BufferStore {
        /// Target buffer.
        buffer: Buffer,
        /// Stored value.
        value: PrimExpr,
        /// One index per dimension.
        indices: Vec<PrimExpr>,
        /// Source location.
        span: Span,
    },
    /// `x: T.int32 = value` followed by `body` (TIR `LetStmt`).
    Let {
        /// The variable.
        var: TirVar,
        /// Its value.
        value: PrimExpr,
        /// The scope.
        body: Box<Stmt>,
    },
    /// A generic attribute statement (`T.attr(node, key, value)`).
    Attr {
        /// The annotated node (a variable), if any.
        node: Option<TirVar>,
        /// The key.
        key: String,
        /// The value.
        value: PrimExpr,
        /// The scope.
        body: Box<Stmt>,
    },
    /// `T.launch_thread(var, extent)`: `var` is bound to a thread index of `tag`.
    LaunchThread {
        /// The thread index variable.
        var: TirVar,
        /// `"blockIdx.x"`, `"threadIdx.y"`, `"vthread"`, ...
        tag: String,
        /// Number of threads or workgroups.
        extent: PrimExpr,
        /// The scope.
        body: Box<Stmt>,
    },
    /// `assert cond, message`.
    Assert {
        /// Condition.
        cond: PrimExpr,
        /// Message on failure.
        message: String,
        /// The scope.
        body: Box<Stmt>,
    },
    /// A loop.
    For(For),
    /// `while cond: body`.
    While {
        /// Condition.
        cond: PrimExpr,
        /// Body.
        body: Box<Stmt>,
    },
    /// `if cond: then else: else`.
    If {
        /// Condition.
        cond: PrimExpr,
        /// Then branch.
        then_branch: Box<Stmt>,
        /// Else branch.
        else_branch: Option<Box<Stmt>>,
    },
    /// A sequence.
    Seq(Vec<Stmt>),
    /// `T.evaluate(value)`.
    Evaluate(PrimExpr),
    /// A buffer allocated for the scope of `body` (`T.alloc_buffer` / `T.decl_buffer`
    /// outside blocks, `T.allocate`).
    Alloc {
        /// The buffer.
        buffer: Buffer,
        /// The scope.
        body: Box<Stmt>,
    },
    /// A block with its iteration values (`with T.sblock(...)`).
    BlockRealize {
        /// Values bound to `block.iter_vars`.
        iter_values: Vec<PrimExpr>,
        /// Execution predicate (`T.where`), `true` when absent.
        predicate: Option<PrimExpr>,
        /// The block.
        block: Box<Block>,
    },
}

/// The statements nested in `$s` as (first, second, the rest), borrowed shared or,
/// with `mut`, mutably: one definition for [`Stmt::children`] and [`Stmt::children_mut`].
macro_rules! split_children {
    ($s:expr, $deref:ident $(, $mut:tt)?) => {
        match $s {
            Stmt::Let { body, .. }
            | Stmt::Attr { body, .. }
            | Stmt::LaunchThread { body, .. }
            | Stmt::Assert { body, .. }
            | Stmt::For(For { body, .. })
            | Stmt::While { body, .. }
            | Stmt::Alloc { body, .. } => (Some(&$($mut)? **body), None, &$($mut)? []),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => (Some(&$($mut)? **then_branch), else_branch.$deref(), &$($mut)? []),
            Stmt::Seq(v) => (None, None, &$($mut)? v[..]),
            Stmt::BlockRealize { block, .. } => {
                let block = &$($mut)? **block;
                (block.init.$deref(), Some(&$($mut)? *block.body), &$($mut)? [])
            }
            Stmt::BufferStore { .. } | Stmt::Evaluate(_) => (None, None, &$($mut)? []),
        }
    };
}

impl Stmt {
    /// The statements nested directly in this one, in field order: the body of a
    /// scope, both branches of an `if`, a sequence's items, a realized block's
    /// `init` and body.
    pub fn children(&self) -> impl Iterator<Item = &Stmt> {
        let (first, second, rest): (Option<&Stmt>, Option<&Stmt>, &[Stmt]) = split_children!(self, as_deref);
        first.into_iter().chain(second).chain(rest)
    }

    /// The depth of the statement tree (1 for a leaf), computed without
    /// recursion so that it is safe on any tree; passes that recurse over
    /// statements refuse trees deeper than [`MAX_STMT_TREE_DEPTH`].
    pub fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(self, 1usize)];
        while let Some((s, d)) = stack.pop() {
            deepest = deepest.max(d);
            stack.extend(s.children().map(|c| (c, d + 1)));
        }
        deepest
    }

    /// [`Stmt::children`], mutably.
    pub fn children_mut(&mut self) -> impl Iterator<Item = &mut Stmt> {
        let (first, second, rest): (Option<&mut Stmt>, Option<&mut Stmt>, &mut [Stmt]) =
            split_children!(self, as_deref_mut, mut);
        first.into_iter().chain(second).chain(rest.iter_mut())
    }

    /// The implicit root block of a function (`T.sblock("root")`), allocating
    /// `alloc_buffers` around `body`.
    pub fn root_block(alloc_buffers: Vec<Buffer>, body: Stmt) -> Stmt {
        Stmt::BlockRealize {
            iter_values: Vec::new(),
            predicate: None,
            block: Box::new(Block {
                name: "root".into(),
                iter_vars: Vec::new(),
                reads: Vec::new(),
                writes: Vec::new(),
                init: None,
                alloc_buffers,
                match_buffers: Vec::new(),
                annotations: Attrs::new(),
                body: Box::new(body),
            }),
        }
    }

    /// A sequence, flattening a single statement.
    pub fn seq(mut stmts: Vec<Stmt>) -> Stmt {
        if stmts.len() == 1 {
            stmts.pop().unwrap_or(Stmt::Seq(Vec::new()))
        } else {
            Stmt::Seq(stmts)
        }
    }
}

/// The child of `s` that the rest of a chain continues in: the body of a scope,
/// a sequence's last item.
fn chain_tail(s: &Stmt) -> Option<&Stmt> {
    match s {
        Stmt::Let { body, .. }
        | Stmt::Attr { body, .. }
        | Stmt::LaunchThread { body, .. }
        | Stmt::Assert { body, .. }
        | Stmt::For(For { body, .. })
        | Stmt::While { body, .. }
        | Stmt::Alloc { body, .. } => Some(body),
        Stmt::Seq(v) => v.last(),
        _ => None,
    }
}

/// A copy of `s` whose [`chain_tail`] is `tail` (the other children cloned).
fn clone_with_tail(s: &Stmt, tail: Option<Stmt>) -> Stmt {
    let boxed = |t: Option<Stmt>| Box::new(t.unwrap_or_else(|| Stmt::Seq(Vec::new())));
    match s {
        Stmt::BufferStore {
            buffer,
            value,
            indices,
            span,
        } => Stmt::BufferStore {
            buffer: buffer.clone(),
            value: value.clone(),
            indices: indices.clone(),
            span: *span,
        },
        Stmt::Let { var, value, .. } => Stmt::Let {
            var: var.clone(),
            value: value.clone(),
            body: boxed(tail),
        },
        Stmt::Attr { node, key, value, .. } => Stmt::Attr {
            node: node.clone(),
            key: key.clone(),
            value: value.clone(),
            body: boxed(tail),
        },
        Stmt::LaunchThread { var, tag, extent, .. } => Stmt::LaunchThread {
            var: var.clone(),
            tag: tag.clone(),
            extent: extent.clone(),
            body: boxed(tail),
        },
        Stmt::Assert { cond, message, .. } => Stmt::Assert {
            cond: cond.clone(),
            message: message.clone(),
            body: boxed(tail),
        },
        Stmt::For(f) => Stmt::For(For {
            var: f.var.clone(),
            min: f.min.clone(),
            extent: f.extent.clone(),
            kind: f.kind,
            thread_tag: f.thread_tag.clone(),
            annotations: f.annotations.clone(),
            body: boxed(tail),
        }),
        Stmt::While { cond, .. } => Stmt::While {
            cond: cond.clone(),
            body: boxed(tail),
        },
        Stmt::If {
            cond,
            then_branch,
            else_branch,
        } => Stmt::If {
            cond: cond.clone(),
            then_branch: then_branch.clone(),
            else_branch: else_branch.clone(),
        },
        Stmt::Seq(v) => {
            let mut items: Vec<Stmt> = v.iter().take(v.len().saturating_sub(1)).cloned().collect();
            items.extend(tail);
            Stmt::Seq(items)
        }
        Stmt::Evaluate(e) => Stmt::Evaluate(e.clone()),
        Stmt::Alloc { buffer, .. } => Stmt::Alloc {
            buffer: buffer.clone(),
            body: boxed(tail),
        },
        Stmt::BlockRealize {
            iter_values,
            predicate,
            block,
        } => Stmt::BlockRealize {
            iter_values: iter_values.clone(),
            predicate: predicate.clone(),
            block: block.clone(),
        },
    }
}

impl Clone for Stmt {
    fn clone(&self) -> Stmt {
        let mut chain = Vec::new();
        let mut cur = self;
        while let Some(t) = chain_tail(cur) {
            chain.push(cur);
            cur = t;
        }
        let mut out = clone_with_tail(cur, None);
        while let Some(s) = chain.pop() {
            out = clone_with_tail(s, Some(out));
        }
        out
    }
}

impl Stmt {
    /// Drop `self` without recursion: every nested statement is taken out of its
    /// parent before the parent is dropped, so arbitrarily deep trees (a chain of
    /// 100,000 `LetStmt`s) drop in bounded stack. [`PrimFunc`](super::PrimFunc)
    /// drops its body this way.
    pub fn drop_iteratively(self) {
        let mut stack = vec![self];
        while let Some(mut s) = stack.pop() {
            for c in s.children_mut() {
                stack.push(std::mem::replace(c, Stmt::Seq(Vec::new())));
            }
        }
    }
}
