//! TIR statements: blocks, loops, stores, assignments and scoped attributes.

#[allow(unused_imports)]
use super::*;

/// `body` under one `T.attr` statement without a node per pair, the first outermost.
fn attr_chain(kvs: Vec<(String, PrimExpr)>, body: Stmt) -> Stmt {
    kvs.into_iter().rev().fold(body, |body, (key, value)| Stmt::Attr {
        node: None,
        key,
        value,
        body: Box::new(body),
    })
}

impl<'a> TirParser<'a> {
    /// The `(key, value)` pairs of `T.attr`'s dictionary argument `d`.
    fn attr_items(&self, d: &ast::Expr) -> Result<Vec<(String, PrimExpr)>, Diagnostic> {
        let Value::Dict(items) = self.eval(d)? else {
            return Err(self.err(d, "T.attr expects a dict or (node, key, value)"));
        };
        items
            .into_iter()
            .map(|(k, v)| Ok((self.ev().to_str(&k, d)?, self.ev().to_prim(v, d)?)))
            .collect()
    }

    // ----- statements -----

    pub(super) fn body(&mut self, stmts: &[ast::Stmt]) -> Result<Stmt, Diagnostic> {
        Ok(Stmt::seq(self.stmts(stmts)?))
    }

    pub(super) fn scoped_body(&mut self, stmts: &[ast::Stmt]) -> Result<Stmt, Diagnostic> {
        self.push_scope();
        let r = self.body(stmts);
        self.pop_scope();
        r
    }

    pub(super) fn stmts(&mut self, stmts: &[ast::Stmt]) -> Result<Vec<Stmt>, Diagnostic> {
        let max = crate::text::parser::limits::MAX_STMT_DEPTH;
        if let Some(first) = stmts.first().filter(|_| self.depth >= max) {
            return Err(self.err(
                first,
                format!(
                    "statements nested deeper than {max} levels (counting each `let`, `assert`, `T.attr`, \
                     thread launch or allocation that scopes over the statements after it)"
                ),
            ));
        }
        self.depth += 1;
        let r = self.stmt_list(stmts);
        self.depth -= 1;
        r
    }

    fn stmt_list(&mut self, stmts: &[ast::Stmt]) -> Result<Vec<Stmt>, Diagnostic> {
        let mut out = Vec::new();
        for (i, s) in stmts.iter().enumerate() {
            match self.stmt(s)? {
                Item::Stmt(x) => out.push(x),
                Item::Nothing => {}
                Item::Scoped(wrap) => {
                    let rest = self.stmts(&stmts[i + 1..])?;
                    out.push(wrap(Stmt::seq(rest)));
                    break;
                }
            }
        }
        // Like TVM's sequence flattening, `T.evaluate(<constant>)` is dropped from
        // sequences of several statements.
        if out.len() > 1 {
            out.retain(|s| !matches!(s, Stmt::Evaluate(e) if e.as_int().is_some()));
        }
        Ok(out)
    }

    pub(super) fn stmt(&mut self, s: &ast::Stmt) -> Result<Item, Diagnostic> {
        match s {
            ast::Stmt::Pass(_) => Ok(Item::Nothing),
            ast::Stmt::Expr(e) => self.expr_stmt(&e.value),
            ast::Stmt::Assign(a) => self.assign(a),
            ast::Stmt::AnnAssign(a) => self.ann_assign(a),
            ast::Stmt::For(f) => self.for_stmt(f).map(Item::Stmt),
            ast::Stmt::With(w) => self.with_stmt(w),
            ast::Stmt::If(i) => {
                let cond = self.prim(&i.test)?;
                let then_branch = Box::new(self.scoped_body(&i.body)?);
                let else_branch = if i.orelse.is_empty() {
                    None
                } else {
                    Some(Box::new(self.scoped_body(&i.orelse)?))
                };
                Ok(Item::Stmt(Stmt::If {
                    cond,
                    then_branch,
                    else_branch,
                }))
            }
            ast::Stmt::While(w) => {
                if !w.orelse.is_empty() {
                    return Err(self.err(s, "`while ... else` is not supported"));
                }
                let cond = self.prim(&w.test)?;
                let body = Box::new(self.scoped_body(&w.body)?);
                Ok(Item::Stmt(Stmt::While { cond, body }))
            }
            ast::Stmt::Return(r) => {
                let Some(v) = &r.value else {
                    return Err(self.err(s, "`return` needs a value in TIR"));
                };
                let x = self.prim(v)?;
                Ok(Item::Stmt(Stmt::Evaluate(PrimExpr::intrinsic_call(
                    crate::tir::Intrinsic::Ret,
                    x.dtype(),
                    vec![x],
                ))))
            }
            ast::Stmt::Assert(a) => {
                let cond = self.prim(&a.test)?;
                let message = match &a.msg {
                    None => String::new(),
                    Some(m) => match self.eval(m)? {
                        Value::Str(s) => s,
                        Value::Tuple(t) if t.len() == 2 => match &t[1] {
                            Value::List(parts) => {
                                let mut s = String::new();
                                for p in parts {
                                    s.push_str(&self.ev().to_str(p, m.as_ref())?);
                                }
                                s
                            }
                            _ => return Err(self.err(m.as_ref(), "expected (\"Kind\", [\"message\"])")),
                        },
                        _ => return Err(self.err(m.as_ref(), "expected an assertion message")),
                    },
                };
                Ok(Item::Scoped(Box::new(move |body| Stmt::Assert {
                    cond,
                    message,
                    body: Box::new(body),
                })))
            }
            _ => Err(self.err(s, "unsupported statement in a T.prim_func")),
        }
    }

    pub(super) fn block_frame(&mut self, node: &impl Ranged, what: &str) -> Result<&mut BlockFrame, Diagnostic> {
        let lines = self.lines;
        self.blocks
            .last_mut()
            .ok_or_else(|| err_at(lines, node, format!("{what} must be inside a T.sblock")))
    }

    pub(super) fn expr_stmt(&mut self, e: &ast::Expr) -> Result<Item, Diagnostic> {
        let ast::Expr::Call(c) = e else {
            let x = self.prim(e)?;
            return Ok(Item::Stmt(Stmt::Evaluate(x)));
        };
        let Some(name) = t_attr(&c.func) else {
            return Err(self.err(e, "unsupported statement in a T.prim_func"));
        };
        match name {
            "func_attr" => {
                let [d] = &c.args[..] else {
                    return Err(self.err(e, "T.func_attr expects one dict"));
                };
                let v = self.eval(d)?;
                let Value::Dict(items) = v else {
                    return Err(self.err(d, "T.func_attr expects a dict"));
                };
                for (k, v) in items {
                    let k = self.ev().to_str(&k, d)?;
                    let v = self.attr_value(v, d)?;
                    self.attrs.set(k, v);
                }
                Ok(Item::Nothing)
            }
            "reads" | "writes" => {
                let mut regions = Vec::new();
                for a in &c.args {
                    let v = self.eval(a)?;
                    let items = match v {
                        Value::List(l) | Value::Tuple(l) => l,
                        other => vec![other],
                    };
                    for it in items {
                        regions.push(self.region(it, a)?);
                    }
                }
                let f = self.block_frame(e, &format!("T.{name}"))?;
                if name == "reads" {
                    f.reads = Some(regions);
                } else {
                    f.writes = Some(regions);
                }
                Ok(Item::Nothing)
            }
            "where" => {
                let [p] = &c.args[..] else {
                    return Err(self.err(e, "T.where expects one condition"));
                };
                let x = self.prim(p)?;
                self.block_frame(e, "T.where")?.predicate = Some(x);
                Ok(Item::Nothing)
            }
            "sblock_attr" | "block_attr" => {
                let [d] = &c.args[..] else {
                    return Err(self.err(e, "T.sblock_attr expects one dict"));
                };
                let Value::Dict(items) = self.eval(d)? else {
                    return Err(self.err(d, "T.sblock_attr expects a dict"));
                };
                let mut attrs = Vec::new();
                for (k, v) in items {
                    attrs.push((self.ev().to_str(&k, d)?, self.attr_value(v, d)?));
                }
                let f = self.block_frame(e, "T.sblock_attr")?;
                for (k, v) in attrs {
                    f.annotations.set(k, v);
                }
                Ok(Item::Nothing)
            }
            "evaluate" => {
                let [x] = &c.args[..] else {
                    return Err(self.err(e, "T.evaluate expects one argument"));
                };
                Ok(Item::Stmt(Stmt::Evaluate(self.prim(x)?)))
            }
            "attr" => {
                let (node, key, value) = match &c.args[..] {
                    [d] => {
                        let kvs = self.attr_items(d)?;
                        return Ok(Item::Scoped(Box::new(move |body| attr_chain(kvs, body))));
                    }
                    [n, k, v] => {
                        let node = match self.eval(n)? {
                            Value::Expr(x) => x.as_var().cloned(),
                            _ => None,
                        };
                        (node, self.ev().to_str(&self.eval(k)?, k)?, self.prim(v)?)
                    }
                    _ => return Err(self.err(e, "T.attr expects a dict or (node, key, value)")),
                };
                Ok(Item::Scoped(Box::new(move |body| Stmt::Attr {
                    node,
                    key,
                    value,
                    body: Box::new(body),
                })))
            }
            "launch_thread" => {
                let (var, tag, extent) = self.launch_thread(c, e, None)?;
                Ok(Item::Scoped(Box::new(move |body| Stmt::LaunchThread {
                    var,
                    tag,
                    extent,
                    body: Box::new(body),
                })))
            }
            _ => {
                let x = self.prim(e)?;
                Ok(Item::Stmt(Stmt::Evaluate(x)))
            }
        }
    }

    pub(super) fn launch_thread(
        &self,
        c: &ast::ExprCall,
        e: &ast::Expr,
        name: Option<&str>,
    ) -> Result<(TirVar, String, PrimExpr), Diagnostic> {
        let [t, ext] = &c.args[..] else {
            return Err(self.err(e, "T.launch_thread expects (thread, extent)"));
        };
        let extent = self.prim(ext)?;
        if let ast::Expr::Name(n) = t {
            let scopes = self.scopes.borrow();
            for s in scopes.iter().rev() {
                if let Some(Binding::Thread(v, tag)) = s.get(n.id.as_str()) {
                    return Ok((v.clone(), tag.clone(), extent));
                }
            }
            return Err(self.err(t, "expected a thread from T.env_thread"));
        }
        let tag = self.ev().to_str(&self.eval(t)?, t)?;
        let vname = name.map(str::to_string).unwrap_or_else(|| tag.replace('.', "_"));
        let var = TirVar::new(vname.clone(), extent.dtype());
        self.bind(&vname, Binding::Thread(var.clone(), tag.clone()));
        Ok((var, tag, extent))
    }

    pub(super) fn attr_value(&self, v: Value, node: &ast::Expr) -> Result<AttrValue, Diagnostic> {
        Ok(match v {
            Value::None => AttrValue::None,
            Value::Bool(b) => AttrValue::Bool(b),
            Value::Int(i) => AttrValue::Int(i),
            Value::Float(f) => AttrValue::Float(f),
            Value::Str(s) => AttrValue::Str(s),
            Value::Expr(x) => AttrValue::PrimExpr(x),
            Value::Buffer(b) => AttrValue::PrimExpr(b.0.data.to_expr()),
            Value::DType(d) => AttrValue::DataType(d),
            Value::List(l) | Value::Tuple(l) => AttrValue::List(
                l.into_iter()
                    .map(|x| self.attr_value(x, node))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Dict(items) => {
                let mut a = Attrs::new();
                for (k, v) in items {
                    a.set(self.ev().to_str(&k, node)?, self.attr_value(v, node)?);
                }
                AttrValue::Map(a)
            }
            other => return Err(self.err(node, format!("unsupported attribute value: {}", other.kind_name()))),
        })
    }

    pub(super) fn region(&self, v: Value, node: &ast::Expr) -> Result<BufferRegion, Diagnostic> {
        match v {
            Value::Region(r) => Ok(r),
            Value::Buffer(b) => {
                let region = b.shape().iter().map(|s| Range::from_extent(s.clone())).collect();
                Ok(BufferRegion { buffer: b, region })
            }
            Value::Expr(x) => match x.kind() {
                PrimExprKind::BufferLoad { buffer, indices } => Ok(BufferRegion {
                    buffer: buffer.clone(),
                    region: indices
                        .iter()
                        .map(|i| Range::new(i.clone(), const_of(1, i.dtype())))
                        .collect(),
                }),
                _ => Err(self.err(node, "expected a buffer region")),
            },
            other => Err(self.err(node, format!("expected a buffer region, found {}", other.kind_name()))),
        }
    }

    pub(super) fn assign(&mut self, a: &ast::StmtAssign) -> Result<Item, Diagnostic> {
        let [target] = &a.targets[..] else {
            return Err(self.err(a, "chained assignments are not supported"));
        };
        let value = a.value.as_ref();
        // Buffer store.
        if let ast::Expr::Subscript(sub) = target {
            return self.store(sub, value).map(Item::Stmt);
        }
        // Declarations by call.
        if let ast::Expr::Call(c) = value {
            if let Some(name) = t_attr2(&c.func) {
                if let Some(kind) = name.strip_prefix("axis.") {
                    return self.axis(target, kind, c, value);
                }
            }
            if let Some(name) = t_attr(&c.func) {
                match name {
                    "sblock_alloc_buffer" | "alloc_buffer" | "alloc_local" | "alloc_shared" | "decl_buffer" => {
                        let ast::Expr::Name(n) = target else {
                            return Err(self.err(target, "expected a buffer name"));
                        };
                        let shape_e = c.args.first().or_else(|| kwarg(c, "shape"));
                        let shape = match shape_e {
                            Some(s) => self.shape_of(s)?,
                            None => return Err(self.err(value, format!("T.{name} needs a shape"))),
                        };
                        let mut buf = self.buffer_from_call(n.id.as_str(), c, shape, 1)?;
                        if name == "alloc_local" || name == "alloc_shared" {
                            let scope = if name == "alloc_local" { "local" } else { "shared" };
                            let mut node = buf.copy_node();
                            node.scope = scope.to_string();
                            node.data = TirVar::new_handle(node.name.clone(), Some(node.dtype), Some(scope.into()));
                            buf = Buffer::from_node(node);
                        }
                        self.bind(n.id.as_str(), Binding::Buffer(buf.clone()));
                        let in_block = self.blocks.len() > 1 || name == "sblock_alloc_buffer";
                        if in_block && name != "decl_buffer" {
                            self.block_frame(value, "T.sblock_alloc_buffer")?
                                .alloc_buffers
                                .push(buf);
                            return Ok(Item::Nothing);
                        }
                        return Ok(Item::Scoped(Box::new(move |body| Stmt::Alloc {
                            buffer: buf,
                            body: Box::new(body),
                        })));
                    }
                    "match_buffer" => return self.match_buffer(target, c, value),
                    "meta_var" => {
                        let [x] = &c.args[..] else {
                            return Err(self.err(value, "T.meta_var expects one argument"));
                        };
                        let v = self.eval(x)?;
                        let ast::Expr::Name(n) = target else {
                            return Err(self.err(target, "expected a name"));
                        };
                        self.bind(n.id.as_str(), Binding::Const(v));
                        return Ok(Item::Nothing);
                    }
                    "env_thread" => {
                        let [t] = &c.args[..] else {
                            return Err(self.err(value, "T.env_thread expects a thread tag"));
                        };
                        let tag = self.ev().to_str(&self.eval(t)?, t)?;
                        let ast::Expr::Name(n) = target else {
                            return Err(self.err(target, "expected a name"));
                        };
                        let v = TirVar::new(n.id.as_str(), DataType::INT32);
                        self.bind(n.id.as_str(), Binding::Thread(v, tag));
                        return Ok(Item::Nothing);
                    }
                    "launch_thread" => {
                        let ast::Expr::Name(n) = target else {
                            return Err(self.err(target, "expected a name"));
                        };
                        let (var, tag, extent) = self.launch_thread(c, value, Some(n.id.as_str()))?;
                        return Ok(Item::Scoped(Box::new(move |body| Stmt::LaunchThread {
                            var,
                            tag,
                            extent,
                            body: Box::new(body),
                        })));
                    }
                    _ => {}
                }
            }
        }
        // Variable declarations `n = T.int32()` / `a, b = T.int64(), T.int64()`.
        let decls: Option<Vec<(&ast::Expr, DataType)>> = match (target, value) {
            (ast::Expr::Tuple(t), ast::Expr::Tuple(v)) if t.elts.len() == v.elts.len() => t
                .elts
                .iter()
                .zip(v.elts.iter())
                .map(|(n, x)| is_dtype_call(x).map(|d| (n, d)))
                .collect(),
            (n, x) => is_dtype_call(x).map(|d| vec![(n, d)]),
        };
        if let Some(decls) = decls {
            for (n, d) in decls {
                let ast::Expr::Name(n) = n else {
                    return Err(self.err(n, "expected a variable name"));
                };
                // A variable already created by a quoted signature shape is reused.
                if let Some(Value::Expr(x)) = self.resolve(n.id.as_str()) {
                    match x.as_var() {
                        Some(v) if v.dtype() == d => continue,
                        // Another variable of that name would silently hide the
                        // signature's in the rest of the body (TVM rejects it too).
                        Some(v) if self.signature_vars.contains(&v.id()) => {
                            return Err(self.err(
                                n,
                                format!(
                                    "`{}` is defined by the signature with dtype {}; it cannot be declared again with dtype {d}",
                                    n.id.as_str(),
                                    v.dtype()
                                ),
                            ))
                        }
                        _ => {}
                    }
                }
                self.bind(n.id.as_str(), Binding::Var(TirVar::new(n.id.as_str(), d)));
            }
            return Ok(Item::Nothing);
        }
        let ast::Expr::Name(n) = target else {
            return Err(self.err(target, "unsupported assignment target in TIR"));
        };
        let name = n.id.as_str();
        // Assignment to an existing scalar.
        if let Some(Value::Buffer(b)) = self.resolve(name) {
            if is_unit_buffer(&b) {
                let v = self.prim(value)?;
                let v = cast_fold(v, b.dtype());
                return Ok(Item::Stmt(Stmt::BufferStore {
                    buffer: b,
                    value: v,
                    indices: vec![PrimExpr::int_of(0, DataType::INT32)],
                    span: span_of(self.lines, a),
                }));
            }
        }
        let v = self.prim(value)?;
        if v.dtype().is_handle() || matches!(v.kind(), PrimExprKind::StringImm(_)) {
            let var = TirVar::new(name, v.dtype());
            self.bind(name, Binding::Var(var.clone()));
            return Ok(Item::Scoped(Box::new(move |body| Stmt::Let {
                var,
                value: v,
                body: Box::new(body),
            })));
        }
        let span = span_of(self.lines, a);
        self.scalar(name, v.dtype(), Some(v), span)
    }

    pub(super) fn scalar(
        &self,
        name: &str,
        dtype: DataType,
        value: Option<PrimExpr>,
        span: crate::span::Span,
    ) -> Result<Item, Diagnostic> {
        let buf = Buffer::with_scope(name, dtype, vec![PrimExpr::int_of(1, DataType::INT32)], "local");
        self.bind(name, Binding::Buffer(buf.clone()));
        Ok(Item::Scoped(Box::new(move |body| {
            let body = match value {
                Some(v) => {
                    let store = Stmt::BufferStore {
                        buffer: buf.clone(),
                        value: cast_fold(v, dtype),
                        indices: vec![PrimExpr::int_of(0, DataType::INT32)],
                        span,
                    };
                    match body {
                        Stmt::Seq(mut items) => {
                            items.insert(0, store);
                            Stmt::Seq(items)
                        }
                        other => Stmt::Seq(vec![store, other]),
                    }
                }
                None => body,
            };
            Stmt::Alloc {
                buffer: buf,
                body: Box::new(body),
            }
        })))
    }

    pub(super) fn ann_assign(&mut self, a: &ast::StmtAnnAssign) -> Result<Item, Diagnostic> {
        let ast::Expr::Name(n) = a.target.as_ref() else {
            return Err(self.err(a.target.as_ref(), "expected a variable name"));
        };
        let name = n.id.as_str();
        let ann = a.annotation.as_ref();
        // `x: T.let[T.float32] = v` / `x: T.let = v`
        let let_ty = match ann {
            ast::Expr::Subscript(s) if t_attr(&s.value) == Some("let") => Some(Some(s.slice.as_ref())),
            e if t_attr(e) == Some("let") => Some(None),
            _ => None,
        };
        if let Some(ty) = let_ty {
            let Some(v) = &a.value else {
                return Err(self.err(a, "T.let needs a value"));
            };
            let value = self.prim(v)?;
            let dt = match ty {
                Some(t) => match self.eval(t)? {
                    Value::DType(d) => d,
                    _ => return Err(self.err(t, "expected a type such as T.float32")),
                },
                None => value.dtype(),
            };
            let var = if dt.is_handle() {
                TirVar::new_handle(name, None, None)
            } else {
                TirVar::new(name, dt)
            };
            let value = if dt.is_handle() { value } else { cast_fold(value, dt) };
            self.bind(name, Binding::Var(var.clone()));
            return Ok(Item::Scoped(Box::new(move |body| Stmt::Let {
                var,
                value,
                body: Box::new(body),
            })));
        }
        let dt = match self.eval(ann)? {
            Value::DType(d) => d,
            _ => return Err(self.err(ann, "expected a scalar type such as T.int32, or T.let[...]")),
        };
        if dt.is_handle() {
            return Err(self.err(ann, "use T.let[T.handle] for handles"));
        }
        let value = match &a.value {
            Some(v) => Some(self.prim(v)?),
            None => None,
        };
        self.scalar(name, dt, value, span_of(self.lines, a))
    }

    pub(super) fn store(&mut self, sub: &ast::ExprSubscript, value: &ast::Expr) -> Result<Stmt, Diagnostic> {
        let Value::Buffer(buf) = self.eval(&sub.value)? else {
            return Err(self.err(sub.value.as_ref(), "expected a buffer"));
        };
        let idx_exprs: Vec<&ast::Expr> = match sub.slice.as_ref() {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            other => vec![other],
        };
        let mut indices = Vec::new();
        let empty = idx_exprs.len() == 1 && matches!(idx_exprs[0], ast::Expr::Tuple(t) if t.elts.is_empty());
        if !empty {
            for i in idx_exprs {
                let x = self.prim(i)?;
                indices.push(crate::text::parser::prim_expr::integer_index(x).map_err(|m| self.err(i, m))?);
            }
        }
        let v = self.eval(value)?;
        let v = match v {
            Value::Int(i) => const_of(i, buf.dtype()),
            Value::Float(f) => {
                if buf.dtype().is_float() {
                    PrimExpr::float_of(f, buf.dtype())
                } else {
                    const_of(f as i64, buf.dtype())
                }
            }
            Value::Bool(b) => const_of(b as i64, buf.dtype()),
            other => {
                let x = self.ev().to_prim(other, value)?;
                if x.dtype().lanes == buf.dtype().lanes && x.dtype() != buf.dtype() {
                    cast_fold(x, buf.dtype())
                } else {
                    x
                }
            }
        };
        Ok(Stmt::BufferStore {
            buffer: buf,
            value: v,
            indices,
            span: span_of(self.lines, sub),
        })
    }

    pub(super) fn match_buffer(
        &mut self,
        target: &ast::Expr,
        c: &ast::ExprCall,
        value: &ast::Expr,
    ) -> Result<Item, Diagnostic> {
        let ast::Expr::Name(n) = target else {
            return Err(self.err(target, "expected a buffer name"));
        };
        let Some(src) = c.args.first() else {
            return Err(self.err(value, "T.match_buffer needs a source"));
        };
        let Some(shape_e) = c.args.get(1).or_else(|| kwarg(c, "shape")) else {
            return Err(self.err(value, "T.match_buffer needs a shape"));
        };
        let shape = self.shape_of(shape_e)?;
        let buf = self.buffer_from_call(n.id.as_str(), c, shape, 2)?;
        match self.eval(src)? {
            Value::Expr(x) if x.as_var().is_some_and(|v| v.dtype().is_handle()) => {
                let Some(h) = x.as_var().cloned() else {
                    return Err(self.err(src, "expected a handle parameter"));
                };
                if !self.params.contains(&h) {
                    return Err(self.err(src, "T.match_buffer on a handle that is not a parameter"));
                }
                if self.buffer_map.iter().any(|(p, _)| *p == h) {
                    return Err(self.err(src, "this parameter is already bound to a buffer"));
                }
                self.buffer_map.push((h, buf.clone()));
                // Keep parameter order: the buffer map follows `params`.
                let order: Vec<TirVar> = self.params.clone();
                self.buffer_map
                    .sort_by_key(|(p, _)| order.iter().position(|q| q == p).unwrap_or(usize::MAX));
            }
            other => {
                let region = self.region(other, src)?;
                let frame = self.block_frame(value, "T.match_buffer of a region")?;
                frame.match_buffers.push(MatchBufferRegion {
                    buffer: buf.clone(),
                    source: region,
                });
            }
        }
        self.bind(n.id.as_str(), Binding::Buffer(buf));
        Ok(Item::Nothing)
    }

    pub(super) fn axis(
        &mut self,
        target: &ast::Expr,
        kind: &str,
        c: &ast::ExprCall,
        e: &ast::Expr,
    ) -> Result<Item, Diagnostic> {
        let names: Vec<&str> = match target {
            ast::Expr::Name(n) => vec![n.id.as_str()],
            ast::Expr::Tuple(t) => t
                .elts
                .iter()
                .map(|x| match x {
                    ast::Expr::Name(n) => Ok(n.id.as_str()),
                    _ => Err(self.err(x, "expected a name")),
                })
                .collect::<Result<_, _>>()?,
            _ => return Err(self.err(target, "expected block variable names")),
        };
        let mut new_vars: Vec<(String, IterVar, PrimExpr)> = Vec::new();
        if kind == "remap" {
            let [kinds, vars] = &c.args[..] else {
                return Err(self.err(e, "T.axis.remap expects (kinds, [loop vars])"));
            };
            let kinds = self.ev().to_str(&self.eval(kinds)?, kinds)?;
            let vals = match self.eval(vars)? {
                Value::List(l) | Value::Tuple(l) => l,
                _ => return Err(self.err(vars, "expected a list of loop variables")),
            };
            if kinds.len() != vals.len() || names.len() != vals.len() {
                return Err(self.err(e, "T.axis.remap: kinds, variables and names differ in number"));
            }
            for ((k, v), name) in kinds.chars().zip(vals).zip(&names) {
                let x = self.ev().to_prim(v, vars)?;
                let Some(lv) = x.as_var() else {
                    return Err(self.err(vars, "T.axis.remap expects loop variables"));
                };
                let Some((_, min, ext)) = self.loops.iter().rev().find(|(v, _, _)| v == lv).cloned() else {
                    return Err(self.err(vars, format!("`{}` is not an enclosing loop variable", lv.name())));
                };
                let kind = match k {
                    'S' => IterKind::DataPar,
                    'R' => IterKind::CommReduce,
                    _ => return Err(self.err(e, format!("unknown axis kind `{k}` (expected S or R)"))),
                };
                let var = TirVar::new(*name, lv.dtype());
                new_vars.push((
                    name.to_string(),
                    IterVar {
                        var,
                        dom: Range::new(min, ext),
                        kind,
                    },
                    x.clone(),
                ));
            }
        } else {
            let kind = match kind {
                "spatial" | "S" => IterKind::DataPar,
                "reduce" | "R" => IterKind::CommReduce,
                "scan" => IterKind::Ordered,
                "opaque" => IterKind::Opaque,
                _ => return Err(self.err(e, format!("unknown block axis `T.axis.{kind}`"))),
            };
            let [dom, binding] = &c.args[..] else {
                return Err(self.err(e, format!("T.axis.{kind:?} expects (domain, binding)")));
            };
            let [name] = &names[..] else {
                return Err(self.err(target, "expected one name"));
            };
            let dom = match self.eval(dom)? {
                Value::Tuple(t) if t.len() == 2 => {
                    let mut it = t.into_iter();
                    let lo = self.ev().to_prim(it.next().unwrap_or(Value::Int(0)), dom)?;
                    let hi = self.ev().to_prim(it.next().unwrap_or(Value::Int(0)), dom)?;
                    let (lo, hi) = match_types(lo, hi);
                    let ext = arith(BinOp::Sub, hi, lo.clone());
                    Range::new(lo, ext)
                }
                other => Range::from_extent(self.ev().to_prim(other, dom)?),
            };
            let b = self.prim(binding)?;
            let var = TirVar::new(*name, dom.extent.dtype());
            new_vars.push((name.to_string(), IterVar { var, dom, kind }, b));
        }
        for (name, iv, value) in new_vars {
            self.bind(&name, Binding::Var(iv.var.clone()));
            let f = self.block_frame(e, "T.axis")?;
            f.iter_vars.push(iv);
            f.iter_values.push(value);
        }
        Ok(Item::Nothing)
    }

    pub(super) fn for_stmt(&mut self, f: &ast::StmtFor) -> Result<Stmt, Diagnostic> {
        if !f.orelse.is_empty() {
            return Err(self.err(f, "`for ... else` is not supported"));
        }
        let ast::Expr::Call(c) = f.iter.as_ref() else {
            return Err(self.err(f.iter.as_ref(), "expected range(...) or a T loop such as T.grid"));
        };
        let names: Vec<&ast::Expr> = match f.target.as_ref() {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            other => vec![other],
        };
        let fname = match c.func.as_ref() {
            ast::Expr::Name(n) if n.id.as_str() == "range" => "serial".to_string(),
            other => match t_attr(other) {
                Some(n) => n.to_string(),
                None => return Err(self.err(other, "expected range(...) or a T loop such as T.grid")),
            },
        };
        // (min, extent) per loop.
        let mut loops: Vec<(PrimExpr, PrimExpr, ForKind, Option<String>)> = Vec::new();
        let mut annotations = Attrs::new();
        match fname.as_str() {
            "grid" => {
                for a in &c.args {
                    let exts = match a {
                        ast::Expr::Starred(st) => match self.eval(&st.value)? {
                            Value::Tuple(t) | Value::List(t) => t,
                            other => return Err(self.err(a, format!("cannot unpack {}", other.kind_name()))),
                        },
                        other => vec![self.eval(other)?],
                    };
                    for x in exts {
                        let ext = self.ev().to_prim(x, a)?;
                        loops.push((const_of(0, ext.dtype()), ext, ForKind::Serial, None));
                    }
                }
            }
            "serial" | "parallel" | "vectorized" | "unroll" | "thread_binding" => {
                let kind = match fname.as_str() {
                    "serial" => ForKind::Serial,
                    "parallel" => ForKind::Parallel,
                    "vectorized" => ForKind::Vectorized,
                    "unroll" => ForKind::Unrolled,
                    _ => ForKind::ThreadBinding,
                };
                let (min, ext) = match &c.args[..] {
                    [x] => {
                        let e = self.prim(x)?;
                        (const_of(0, e.dtype()), e)
                    }
                    [a, b] => {
                        let (lo, hi) = match_types(self.prim(a)?, self.prim(b)?);
                        let ext = arith(BinOp::Sub, hi, lo.clone());
                        (lo, ext)
                    }
                    _ => return Err(self.err(c, format!("{fname} expects (extent) or (start, stop)"))),
                };
                let mut tag = None;
                for k in &c.keywords {
                    match k.arg.as_ref().map(|a| a.as_str()) {
                        Some("thread") => tag = Some(self.ev().to_str(&self.eval(&k.value)?, &k.value)?),
                        Some("annotations") => {
                            if let Value::Dict(items) = self.eval(&k.value)? {
                                for (kk, vv) in items {
                                    annotations.set(self.ev().to_str(&kk, &k.value)?, self.attr_value(vv, &k.value)?);
                                }
                            }
                        }
                        _ => return Err(self.err(&k.value, "unsupported loop argument")),
                    }
                }
                if kind == ForKind::ThreadBinding && tag.is_none() {
                    return Err(self.err(c, "T.thread_binding needs thread=\"...\""));
                }
                loops.push((min, ext, kind, tag));
            }
            other => return Err(self.err(c.func.as_ref(), format!("unknown loop kind `T.{other}`"))),
        }
        // `for iters in T.grid(...)`: one name for all loop variables (`iters_0`, ...).
        let tuple_name = match (&names[..], loops.len()) {
            ([ast::Expr::Name(n)], k) if k > 1 => Some(n.id.to_string()),
            _ => None,
        };
        let var_names: Vec<String> = match &tuple_name {
            Some(t) => (0..loops.len()).map(|i| format!("{t}_{i}")).collect(),
            None => {
                if loops.len() != names.len() {
                    return Err(self.err(f.target.as_ref(), format!("expected {} loop variable(s)", loops.len())));
                }
                names
                    .iter()
                    .map(|n| match n {
                        ast::Expr::Name(n) => Ok(n.id.to_string()),
                        other => Err(self.err(*other, "expected a loop variable name")),
                    })
                    .collect::<Result<_, _>>()?
            }
        };
        self.push_scope();
        let mut vars = Vec::new();
        for (n, (min, ext, _, _)) in var_names.iter().zip(&loops) {
            let (min, ext) = match_types(min.clone(), ext.clone());
            let v = TirVar::new(n.as_str(), ext.dtype());
            if tuple_name.is_none() {
                self.bind(n, Binding::Var(v.clone()));
            }
            self.loops.push((v.clone(), min, ext));
            vars.push(v);
        }
        if let Some(t) = &tuple_name {
            self.bind(
                t,
                Binding::Const(Value::Tuple(vars.iter().map(|v| Value::Expr(v.to_expr())).collect())),
            );
        }
        let body = self.body(&f.body);
        for _ in &vars {
            self.loops.pop();
        }
        self.pop_scope();
        let mut body = body?;
        for (i, (v, (min, ext, kind, tag))) in vars.into_iter().zip(loops).enumerate().rev() {
            let (min, ext) = match_types(min, ext);
            let ann = if i == 0 {
                std::mem::take(&mut annotations)
            } else {
                Attrs::new()
            };
            body = Stmt::For(For {
                var: v,
                min,
                extent: ext,
                kind,
                thread_tag: tag,
                annotations: ann,
                body: Box::new(body),
            });
        }
        Ok(body)
    }

    pub(super) fn with_stmt(&mut self, w: &ast::StmtWith) -> Result<Item, Diagnostic> {
        let [item] = &w.items[..] else {
            return Err(self.err(w, "expected a single `with` item"));
        };
        let ctx = &item.context_expr;
        let ast::Expr::Call(c) = ctx else {
            return Err(self.err(ctx, "unsupported `with` in TIR"));
        };
        let Some(name) = t_attr(&c.func) else {
            return Err(self.err(ctx, "unsupported `with` in TIR"));
        };
        match name {
            "sblock" | "block" => {
                let bname = match c.args.first() {
                    Some(a) => self.ev().to_str(&self.eval(a)?, a)?,
                    None => String::new(),
                };
                if kwarg(c, "no_realize").is_some() {
                    return Err(self.err(ctx, "blocks without realize are not supported"));
                }
                self.blocks.push(BlockFrame {
                    name: bname,
                    ..Default::default()
                });
                self.push_scope();
                let body = self.body(&w.body);
                self.pop_scope();
                let frame = self.blocks.pop().unwrap_or_default();
                let body = body?;
                let mask = frame.reads.is_none() as i64 | ((frame.writes.is_none() as i64) << 1);
                let mut annotations = frame.annotations;
                if mask != 0 {
                    annotations.set(tir_access::DETECT_KEY, AttrValue::Int(mask));
                }
                let (reads, writes) = (frame.reads.unwrap_or_default(), frame.writes.unwrap_or_default());
                Ok(Item::Stmt(Stmt::BlockRealize {
                    iter_values: frame.iter_values,
                    predicate: frame.predicate,
                    block: Box::new(Block {
                        name: frame.name,
                        iter_vars: frame.iter_vars,
                        reads,
                        writes,
                        init: frame.init.map(Box::new),
                        alloc_buffers: frame.alloc_buffers,
                        match_buffers: frame.match_buffers,
                        annotations,
                        body: Box::new(body),
                    }),
                }))
            }
            "init" => {
                let body = self.scoped_body(&w.body)?;
                self.block_frame(ctx, "T.init()")?.init = Some(body);
                Ok(Item::Nothing)
            }
            "launch_thread" => {
                let vname = match &item.optional_vars {
                    Some(v) => match v.as_ref() {
                        ast::Expr::Name(n) => Some(n.id.to_string()),
                        _ => return Err(self.err(v.as_ref(), "expected a name")),
                    },
                    None => None,
                };
                self.push_scope();
                let r = self.launch_thread(c, ctx, vname.as_deref());
                let body = match r {
                    Ok(x) => self.body(&w.body).map(|b| (x, b)),
                    Err(e) => Err(e),
                };
                self.pop_scope();
                let ((var, tag, extent), body) = body?;
                Ok(Item::Stmt(Stmt::LaunchThread {
                    var,
                    tag,
                    extent,
                    body: Box::new(body),
                }))
            }
            "attr" => {
                if let [d] = &c.args[..] {
                    let kvs = self.attr_items(d)?;
                    let body = attr_chain(kvs, self.scoped_body(&w.body)?);
                    return Ok(Item::Stmt(body));
                }
                let [n, k, v] = &c.args[..] else {
                    return Err(self.err(ctx, "T.attr expects a dict or (node, key, value)"));
                };
                let node = match self.eval(n)? {
                    Value::Expr(x) => x.as_var().cloned(),
                    _ => None,
                };
                let key = self.ev().to_str(&self.eval(k)?, k)?;
                let value = self.prim(v)?;
                let body = self.scoped_body(&w.body)?;
                Ok(Item::Stmt(Stmt::Attr {
                    node,
                    key,
                    value,
                    body: Box::new(body),
                }))
            }
            _ => Err(self.err(ctx, format!("unsupported `with T.{name}(...)`"))),
        }
    }
}
