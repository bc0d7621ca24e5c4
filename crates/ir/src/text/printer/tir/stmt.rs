//! Printing TIR statements: loops, blocks, stores and scoped attributes.

#[allow(unused_imports)]
use super::*;

impl Printer {
    /// Print the whole body of a frame into `out` (sequences flattened). As in TVM,
    /// only a body that is a single statement may use the concise form of
    /// `T.attr` / `T.launch_thread` (no `with`).
    pub(super) fn body(&mut self, s: &Stmt, out: &mut Vec<Doc>) {
        self.items(s, out, true)
    }

    /// Print the statements following a flat declaration (`T.let`, scalars,
    /// `T.alloc_buffer`, `assert`): they are items of a sequence in TVM's IR.
    pub(super) fn cont(&mut self, s: &Stmt, out: &mut Vec<Doc>) {
        self.items(s, out, false)
    }

    /// The items of a sequence, or `s` alone (in the concise form when `concise`).
    fn items(&mut self, s: &Stmt, out: &mut Vec<Doc>, concise: bool) {
        match s {
            Stmt::Seq(items) => {
                for it in items {
                    self.stmt(it, out, false);
                }
            }
            other => self.stmt(other, out, concise),
        }
    }

    pub(super) fn scoped(&mut self, s: &Stmt) -> Vec<Doc> {
        self.push_frame();
        let mut v = Vec::new();
        self.body(s, &mut v);
        self.pop_frame();
        v
    }

    /// `head` on a line of its own followed by `body` (concise), else `with head:`
    /// scoping `body`.
    fn with_stmt(&mut self, head: String, body: &Stmt, out: &mut Vec<Doc>, concise: bool) {
        if concise {
            out.push(Doc::Line(head));
            self.body(body, out);
        } else {
            let b = self.scoped(body);
            out.push(Doc::Scope(format!("with {head}:"), b));
        }
    }

    pub(super) fn stmt(&mut self, s: &Stmt, out: &mut Vec<Doc>, concise: bool) {
        match s {
            Stmt::BufferStore {
                buffer, value, indices, ..
            } => {
                let v = self.e(value);
                let name = self.names.buffer(buffer);
                if self.scalar_sugar && is_scalar_buffer(buffer) && is_zero_index(indices) {
                    out.push(Doc::Line(format!("{name} = {v}")));
                } else if indices.is_empty() {
                    out.push(Doc::Line(format!("{name}[()] = {v}")));
                } else {
                    let idx = self.ep().indices(indices);
                    out.push(Doc::Line(format!("{name}[{idx}] = {v}")));
                }
            }
            Stmt::Let { var, value, body } => {
                let v = self.e(value);
                let n = self.define_var(var);
                out.push(Doc::Line(format!("{n}: T.let[{}] = {v}", type_ann(var))));
                self.cont(body, out);
            }
            Stmt::Attr { node: None, .. } => {
                let mut items = Vec::new();
                let mut cur = s;
                while let Stmt::Attr {
                    node: None,
                    key,
                    value,
                    body,
                } = cur
                {
                    items.push(format!("{}: {}", quote(key), self.e(value)));
                    cur = body;
                }
                let head = format!("T.attr({{{}}})", items.join(", "));
                self.with_stmt(head, cur, out, concise);
            }
            Stmt::Attr { node, key, value, body } => {
                let node = node.as_ref().map(|v| self.names.var(v)).unwrap_or_else(|| "0".into());
                let head = format!("T.attr({node}, {}, {})", quote(key), self.e(value));
                self.with_stmt(head, body, out, concise);
            }
            Stmt::LaunchThread { var, tag, extent, body } => {
                let ext = self.e(extent);
                if concise {
                    let call = if self.is_defined(var) {
                        format!("T.launch_thread({}, {ext})", self.names.var(var))
                    } else {
                        let n = self.define_var(var);
                        format!("{n} = T.launch_thread({}, {ext})", quote(tag))
                    };
                    out.push(Doc::Line(call));
                    self.body(body, out);
                    return;
                }
                self.push_frame();
                let head = if self.is_defined(var) {
                    format!("with T.launch_thread({}, {ext}):", self.names.var(var))
                } else {
                    let n = self.define_var(var);
                    format!("with T.launch_thread({}, {ext}) as {n}:", quote(tag))
                };
                let mut b = Vec::new();
                self.body(body, &mut b);
                self.pop_frame();
                out.push(Doc::Scope(head, b));
            }
            Stmt::Assert { cond, message, body } => {
                out.push(Doc::Line(format!(
                    "assert {}, (\"RuntimeError\", [{}])",
                    self.e(cond),
                    quote(message)
                )));
                self.cont(body, out);
            }
            Stmt::For(f) => self.for_loop(f, out),
            Stmt::While { cond, body } => {
                let c = self.e(cond);
                let b = self.scoped(body);
                out.push(Doc::Scope(format!("while {c}:"), b));
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let c = self.e(cond);
                let t = self.scoped(then_branch);
                out.push(Doc::Scope(format!("if {c}:"), t));
                if let Some(e) = else_branch {
                    let eb = self.scoped(e);
                    out.push(Doc::Scope("else:".into(), eb));
                }
            }
            Stmt::Seq(_) => {
                self.push_frame();
                self.body(s, out);
                self.pop_frame();
            }
            Stmt::Evaluate(e) => match e.kind() {
                PrimExprKind::Call { op, args, .. }
                    if op.intrinsic() == Some(crate::tir::Intrinsic::Ret) && args.len() == 1 =>
                {
                    out.push(Doc::Line(format!("return {}", self.e(&args[0]))));
                }
                PrimExprKind::Call { .. } => out.push(Doc::Line(self.e(e))),
                _ => out.push(Doc::Line(format!("T.evaluate({})", self.e(e)))),
            },
            Stmt::Alloc { buffer, body } => {
                if self.scalar_sugar && is_scalar_buffer(buffer) {
                    let n = self.define_buffer(buffer);
                    let ann = format!("T.{}", buffer.dtype());
                    // Merge the first store into the declaration.
                    let (first, rest): (Option<&Stmt>, Vec<&Stmt>) = match body.as_ref() {
                        Stmt::Seq(items) if !items.is_empty() => (Some(&items[0]), items[1..].iter().collect()),
                        Stmt::Seq(_) => (None, Vec::new()),
                        other => (Some(other), Vec::new()),
                    };
                    if let Some(Stmt::BufferStore {
                        buffer: b,
                        value,
                        indices,
                        ..
                    }) = first
                    {
                        if b == buffer && is_zero_index(indices) && !uses_buffer(value, buffer) {
                            out.push(Doc::Line(format!("{n}: {ann} = {}", self.e(value))));
                            for r in rest {
                                self.stmt(r, out, false);
                            }
                            return;
                        }
                    }
                    out.push(Doc::Line(format!("{n}: {ann}")));
                    self.cont(body, out);
                    return;
                }
                let mut pre = Vec::new();
                let rhs = self.buffer_call(
                    buffer,
                    "alloc_buffer",
                    &[],
                    false,
                    &mut HashSet::new(),
                    &HashSet::new(),
                    &mut pre,
                );
                out.extend(pre);
                let n = self.define_buffer(buffer);
                out.push(Doc::Line(format!("{n} = {rhs}")));
                self.cont(body, out);
            }
            Stmt::BlockRealize {
                iter_values,
                predicate,
                block,
            } => {
                let d = self.block(iter_values, predicate.as_ref(), block);
                out.push(d);
            }
        }
    }

    pub(super) fn for_loop(&mut self, s: &For, out: &mut Vec<Doc>) {
        // `T.grid` for perfectly nested serial loops from 0.
        let mut grid: Vec<&For> = Vec::new();
        let mut grid_vars: HashSet<u64> = HashSet::new();
        let mut cur = s;
        loop {
            let mut dep = false;
            collect_vars(&cur.extent, &mut |v| dep |= grid_vars.contains(&v.id()));
            if cur.kind != ForKind::Serial || !is_zero(&cur.min) || !cur.annotations.is_empty() || dep {
                break;
            }
            grid.push(cur);
            grid_vars.insert(cur.var.id());
            match &*cur.body {
                Stmt::For(f) => cur = f,
                _ => break,
            }
        }
        self.push_frame();
        let doc = if grid.len() > 1 {
            let mut vars = Vec::new();
            let mut exts = Vec::new();
            for g in &grid {
                exts.push(self.e(&g.extent));
                vars.push(self.define_var(&g.var));
                self.loops.push((g.var.clone(), g.min.clone(), g.extent.clone()));
            }
            let inner = grid.last().map_or(&*s.body, |g| &*g.body);
            let mut b = Vec::new();
            self.body(inner, &mut b);
            for _ in &grid {
                self.loops.pop();
            }
            Doc::Scope(format!("for {} in T.grid({}):", vars.join(", "), exts.join(", ")), b)
        } else {
            let For {
                var,
                min,
                extent,
                kind,
                thread_tag,
                annotations,
                body,
            } = s;
            let n = self.define_var(var);
            let mut args = Vec::new();
            if is_zero(min) {
                args.push(self.e(extent));
            } else {
                args.push(self.e(min));
                args.push(self.e(&arith(BinOp::Add, min.clone(), extent.clone())));
            }
            let prefix = match kind {
                ForKind::Serial if annotations.is_empty() => "range".to_string(),
                ForKind::Serial => "T.serial".into(),
                ForKind::Parallel => "T.parallel".into(),
                ForKind::Unrolled => "T.unroll".into(),
                ForKind::Vectorized => "T.vectorized".into(),
                ForKind::ThreadBinding => "T.thread_binding".into(),
            };
            if *kind == ForKind::ThreadBinding {
                args.push(format!("thread={}", quote(thread_tag.as_deref().unwrap_or(""))));
            }
            if !annotations.is_empty() {
                args.push(format!("annotations={}", self.attrs_dict(annotations, false)));
            }
            self.loops.push((var.clone(), min.clone(), extent.clone()));
            let mut b = Vec::new();
            self.body(body, &mut b);
            self.loops.pop();
            Doc::Scope(format!("for {n} in {prefix}({}):", args.join(", ")), b)
        };
        self.pop_frame();
        out.push(doc);
    }

    pub(super) fn block(&mut self, iter_values: &[PrimExpr], predicate: Option<&PrimExpr>, block: &Block) -> Doc {
        self.push_frame();
        let mut docs = Vec::new();
        let n = block.iter_vars.len();
        let mut remap: Vec<usize> = Vec::new();
        let flush = |p: &mut Printer, remap: &mut Vec<usize>, docs: &mut Vec<Doc>| {
            if remap.is_empty() {
                return;
            }
            if remap.len() == 1 {
                let i = remap[0];
                let d = p.single_iter(block, iter_values, i);
                docs.push(d);
            } else {
                let mut lhs = Vec::new();
                let mut vals = Vec::new();
                let mut kinds = String::new();
                for &i in remap.iter() {
                    let iv = &block.iter_vars[i];
                    vals.push(iter_values.get(i).map(|v| p.e(v)).unwrap_or_default());
                    lhs.push(p.define_var(&iv.var));
                    kinds.push(if iv.kind == IterKind::DataPar { 'S' } else { 'R' });
                }
                docs.push(Doc::Line(format!(
                    "{} = T.axis.remap(\"{kinds}\", [{}])",
                    lhs.join(", "),
                    vals.join(", ")
                )));
            }
            remap.clear();
        };
        for i in 0..n {
            if self.remappable(block, iter_values, i) {
                remap.push(i);
            } else {
                flush(self, &mut remap, &mut docs);
                let d = self.single_iter(block, iter_values, i);
                docs.push(d);
            }
        }
        flush(self, &mut remap, &mut docs);
        if let Some(p) = predicate {
            if !(is_one(p) && p.as_int().is_some()) {
                docs.push(Doc::Line(format!("T.where({})", self.e(p))));
            }
        }
        let reads: Vec<String> = block.reads.iter().map(|r| self.region(r)).collect();
        docs.push(Doc::Line(format!("T.reads({})", reads.join(", "))));
        let writes: Vec<String> = block.writes.iter().map(|r| self.region(r)).collect();
        docs.push(Doc::Line(format!("T.writes({})", writes.join(", "))));
        if !block.annotations.is_empty() {
            let d = self.attrs_dict(&block.annotations, false);
            docs.push(Doc::Line(format!("T.sblock_attr({d})")));
        }
        for b in &block.alloc_buffers {
            self.alloc_buffer(b, &mut docs);
        }
        for m in &block.match_buffers {
            let src = self.region(&m.source);
            let mut pre = Vec::new();
            let n = self.define_buffer(&m.buffer);
            let rhs = self.buffer_call(
                &m.buffer,
                "match_buffer",
                &[src],
                false,
                &mut HashSet::new(),
                &HashSet::new(),
                &mut pre,
            );
            docs.extend(pre);
            docs.push(Doc::Line(format!("{n} = {rhs}")));
        }
        if let Some(init) = &block.init {
            let b = self.scoped(init);
            docs.push(Doc::Scope("with T.init():".into(), b));
        }
        self.body(&block.body, &mut docs);
        self.pop_frame();
        Doc::Scope(format!("with T.sblock({}):", quote(&block.name)), docs)
    }

    pub(super) fn remappable(&self, block: &Block, iter_values: &[PrimExpr], i: usize) -> bool {
        let iv = &block.iter_vars[i];
        if !matches!(iv.kind, IterKind::DataPar | IterKind::CommReduce) {
            return false;
        }
        let Some(v) = iter_values.get(i).and_then(|x| x.as_var()) else {
            return false;
        };
        match self.loops.iter().rev().find(|(lv, _, _)| lv == v) {
            Some((_, min, ext)) => expr_equal(min, &iv.dom.min) && expr_equal(ext, &iv.dom.extent),
            None => false,
        }
    }

    pub(super) fn single_iter(&mut self, block: &Block, iter_values: &[PrimExpr], i: usize) -> Doc {
        let iv = &block.iter_vars[i];
        let kind = match iv.kind {
            IterKind::DataPar => "spatial",
            IterKind::CommReduce => "reduce",
            IterKind::Ordered => "scan",
            IterKind::Opaque => "opaque",
        };
        let dom = if is_zero(&iv.dom.min) {
            self.e(&iv.dom.extent)
        } else {
            let hi = arith(BinOp::Add, iv.dom.min.clone(), iv.dom.extent.clone());
            format!("({}, {})", self.e(&iv.dom.min), self.e(&hi))
        };
        let binding = iter_values
            .get(i)
            .map(|v| format!(", {}", self.e(v)))
            .unwrap_or_default();
        let n = self.define_var(&iv.var);
        Doc::Line(format!("{n} = T.axis.{kind}({dom}{binding})"))
    }
}
