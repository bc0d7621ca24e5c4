//! Relax expressions: operator calls, arguments, attributes and constants.

#[allow(unused_imports)]
use super::*;

impl<'m, 'a> FnCx<'m, 'a> {
    // ----- expressions ------------------------------------------------------------

    pub(crate) fn expr(&mut self, e: &ast::Expr) -> PResult<Expr> {
        let span = self.span(e);
        match e {
            ast::Expr::Name(n) => {
                let name = n.id.as_str();
                if let Some(v) = self.lookup(name) {
                    return Ok(Expr::with_span(ExprKind::Var(v.clone()), span));
                }
                if let Some(t) = self.tir.get(name) {
                    return Ok(Expr::with_span(ExprKind::PrimValue(t.to_expr()), span));
                }
                if self.m.globals.contains(name) {
                    return Ok(Expr::with_span(ExprKind::GlobalVar(GlobalVar::new(name)), span));
                }
                Err(self.err(e, format!("undefined variable `{name}`")))
            }
            ast::Expr::Attribute(a) => {
                let base = dotted_name(&a.value).unwrap_or_default();
                let attr = a.attr.as_str();
                if base == "cls" || Some(base.as_str()) == self.m.class_name.as_deref() {
                    if !self.m.globals.contains(attr) {
                        return Err(self.err(e, format!("the module has no function `{attr}`")));
                    }
                    return Ok(Expr::with_span(ExprKind::GlobalVar(GlobalVar::new(attr)), span));
                }
                Err(self.err(
                    e,
                    format!("unexpected `{base}.{attr}` here: expected a Relax expression"),
                ))
            }
            ast::Expr::Tuple(t) => {
                let fields = t.elts.iter().map(|x| self.expr(x)).collect::<PResult<Vec<_>>>()?;
                Ok(Expr::with_span(ExprKind::Tuple(fields), span))
            }
            ast::Expr::List(t) => {
                let fields = t.elts.iter().map(|x| self.expr(x)).collect::<PResult<Vec<_>>>()?;
                Ok(Expr::with_span(ExprKind::Tuple(fields), span))
            }
            ast::Expr::Constant(_) => self.literal(e, ArgKind::Prim),
            ast::Expr::Subscript(s) => {
                if let ast::Expr::Subscript(inner) = &*s.value {
                    if dotted_name(&inner.value).as_deref() == Some("metadata") {
                        let key = const_str(&inner.slice);
                        let idx = match self.m.attr_value(&s.slice) {
                            Ok(AttrValue::Int(i)) if i >= 0 => Some(i as usize),
                            _ => None,
                        };
                        let (Some(key), Some(idx)) = (key, idx) else {
                            return Err(self.err(e, "expected metadata[\"relax.expr.Constant\"][index]"));
                        };
                        let Some(meta) = &self.m.metadata else {
                            return Err(self.err(
                                e,
                                "metadata[...] constants need the metadata section, which this text does not contain",
                            ));
                        };
                        let data =
                            meta.get(key).and_then(|l| l.get(idx)).cloned().ok_or_else(|| {
                                self.err(e, format!("the metadata section has no constant {key}[{idx}]"))
                            })?;
                        return Ok(Expr::with_span(ExprKind::Constant { data }, span));
                    }
                }
                let tuple = self.expr(&s.value)?;
                let index = match self.m.attr_value(&s.slice) {
                    Ok(AttrValue::Int(i)) if i >= 0 => i as usize,
                    _ => return Err(self.err(&*s.slice, "expected a non-negative integer tuple index")),
                };
                Ok(Expr::with_span(ExprKind::TupleGetItem { tuple, index }, span))
            }
            ast::Expr::Call(c) => self.call(c, e),
            ast::Expr::BinOp(_) | ast::Expr::Compare(_) | ast::Expr::UnaryOp(_) | ast::Expr::BoolOp(_) => {
                if let ast::Expr::UnaryOp(u) = e {
                    if matches!(u.op, ast::UnaryOp::USub) && matches!(&*u.operand, ast::Expr::Constant(_)) {
                        return self.literal(e, ArgKind::Prim);
                    }
                    if matches!(u.op, ast::UnaryOp::UAdd) && !matches!(&*u.operand, ast::Expr::Constant(_)) {
                        // Relax values have no unary `+` (TVM: "bad operand type for unary +").
                        return Err(self.err(e, "unary `+` is not defined on a Relax expression"));
                    }
                }
                match self.prim(e) {
                    Ok(p) => Ok(Expr::with_span(ExprKind::PrimValue(p), span)),
                    Err(d) => match self.relax_operator(e)? {
                        Some(x) => Ok(x),
                        None => Err(d),
                    },
                }
            }
            _ => Err(self.err(e, "expected a Relax expression")),
        }
    }

    /// `a + b`, `a * b`, `-a`, `a < b` on Relax values: the matching operator call.
    pub(super) fn relax_operator(&mut self, e: &ast::Expr) -> PResult<Option<Expr>> {
        let span = self.span(e);
        let (op, operands): (&str, Vec<&ast::Expr>) = match e {
            ast::Expr::BinOp(b) => (
                match b.op {
                    ast::Operator::Add => "relax.add",
                    ast::Operator::Sub => "relax.subtract",
                    ast::Operator::Mult => "relax.multiply",
                    ast::Operator::Div => "relax.divide",
                    ast::Operator::FloorDiv => "relax.floor_divide",
                    ast::Operator::Mod => "relax.floor_mod",
                    ast::Operator::Pow => "relax.power",
                    _ => return Ok(None),
                },
                vec![&*b.left, &*b.right],
            ),
            ast::Expr::Compare(c) if c.ops.len() == 1 => (
                match c.ops[0] {
                    ast::CmpOp::Eq => "relax.equal",
                    ast::CmpOp::NotEq => "relax.not_equal",
                    ast::CmpOp::Lt => "relax.less",
                    ast::CmpOp::LtE => "relax.less_equal",
                    ast::CmpOp::Gt => "relax.greater",
                    ast::CmpOp::GtE => "relax.greater_equal",
                    _ => return Ok(None),
                },
                vec![&*c.left, &c.comparators[0]],
            ),
            ast::Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::USub) => ("relax.negative", vec![&*u.operand]),
            _ => return Ok(None),
        };
        let mut any_relax = false;
        let mut args = Vec::new();
        for o in operands {
            let x = self.arg(o, ArgKind::Expr)?;
            if !matches!(x.kind(), ExprKind::PrimValue(_)) {
                any_relax = true;
            }
            args.push(x);
        }
        if !any_relax {
            return Ok(None);
        }
        Ok(Some(Expr::with_span(
            ExprKind::Call(Call {
                op: Expr::op(op),
                args,
                attrs: Attrs::new(),
                sinfo_args: Vec::new(),
            }),
            span,
        )))
    }

    /// A Python literal as an expression of `kind`.
    pub(super) fn literal(&mut self, e: &ast::Expr, kind: ArgKind) -> PResult<Expr> {
        let span = self.span(e);
        let v = self.m.attr_value(e)?;
        let (int_t, float_t) = match kind {
            ArgKind::Expr => (DataType::INT32, DataType::FLOAT32),
            _ => (DataType::INT64, DataType::FLOAT64),
        };
        Ok(Expr::with_span(
            match v {
                AttrValue::Bool(b) => ExprKind::PrimValue(PrimExpr::bool(b)),
                AttrValue::Int(i) => ExprKind::PrimValue(PrimExpr::int_of(i, int_t)),
                AttrValue::Float(f) => ExprKind::PrimValue(PrimExpr::float_of(f, float_t)),
                AttrValue::Str(s) => ExprKind::StringImm(s),
                _ => return Err(self.err(e, "expected a Relax expression")),
            },
            span,
        ))
    }

    /// An argument of an operator call.
    pub(super) fn arg(&mut self, e: &ast::Expr, kind: ArgKind) -> PResult<Expr> {
        let span = self.span(e);
        match (kind, e) {
            (
                ArgKind::Shape,
                ast::Expr::Tuple(ast::ExprTuple { elts, .. }) | ast::Expr::List(ast::ExprList { elts, .. }),
            ) => {
                let dims = elts.iter().map(|d| self.dim(d, false)).collect::<PResult<Vec<_>>>()?;
                Ok(Expr::with_span(ExprKind::ShapeExpr(dims), span))
            }
            (
                ArgKind::Tuple,
                ast::Expr::Tuple(ast::ExprTuple { elts, .. }) | ast::Expr::List(ast::ExprList { elts, .. }),
            ) => {
                let fields = elts
                    .iter()
                    .map(|x| self.arg(x, ArgKind::Prim))
                    .collect::<PResult<Vec<_>>>()?;
                Ok(Expr::with_span(ExprKind::Tuple(fields), span))
            }
            (ArgKind::DType, _) if const_str(e).is_some() => {
                Ok(Expr::with_span(ExprKind::DataTypeImm(self.dtype_literal(e)?), span))
            }
            (_, ast::Expr::Constant(_)) => self.literal(e, kind),
            (_, ast::Expr::UnaryOp(u))
                if matches!(u.op, ast::UnaryOp::USub) && matches!(&*u.operand, ast::Expr::Constant(_)) =>
            {
                self.literal(e, kind)
            }
            _ => self.expr(e),
        }
    }

    pub(super) fn sinfo_list(&mut self, e: &ast::Expr) -> PResult<Vec<StructInfo>> {
        match e {
            ast::Expr::Tuple(ast::ExprTuple { elts, .. }) | ast::Expr::List(ast::ExprList { elts, .. }) => {
                elts.iter().map(|x| self.sinfo(x, false)).collect()
            }
            other => Ok(vec![self.sinfo(other, false)?]),
        }
    }

    /// `out_ty=`: a single StructInfo, or a list of them (a tuple result).
    pub(super) fn out_ty(&mut self, e: &ast::Expr) -> PResult<StructInfo> {
        match e {
            ast::Expr::List(ast::ExprList { elts, .. }) | ast::Expr::Tuple(ast::ExprTuple { elts, .. }) => Ok(
                StructInfo::Tuple(elts.iter().map(|x| self.sinfo(x, false)).collect::<PResult<_>>()?),
            ),
            other => self.sinfo(other, false),
        }
    }

    /// The argument tuple of `call_tir`-like calls: a tuple, or an expression (a tensor
    /// variable is wrapped into a one-element tuple).
    pub(super) fn args_tuple(&mut self, e: &ast::Expr) -> PResult<Expr> {
        let x = self.arg(e, ArgKind::Tuple)?;
        let wrap = match x.kind() {
            ExprKind::Tuple(_) => false,
            ExprKind::Var(v) => !matches!(v.struct_info(), Some(StructInfo::Tuple(_)) | None),
            _ => true,
        };
        Ok(if wrap {
            Expr::with_span(ExprKind::Tuple(vec![x.clone()]), x.span())
        } else {
            x
        })
    }

    pub(super) fn extern_func(&mut self, e: &ast::Expr) -> PResult<Expr> {
        match const_str(e) {
            Some(s) => Ok(Expr::with_span(
                ExprKind::ExternFunc {
                    global_symbol: s.to_string(),
                },
                self.span(e),
            )),
            None => self.expr(e),
        }
    }

    pub(super) fn call(&mut self, c: &ast::ExprCall, whole: &ast::Expr) -> PResult<Expr> {
        let span = self.span(whole);
        let name = dotted_name(&c.func);
        if let Some(n) = name.as_deref() {
            if let Some(op) = n.strip_prefix("R.").or_else(|| n.strip_prefix("relax.")) {
                return self.relax_call(op, c, whole);
            }
            if n.starts_with("T.") {
                return Ok(Expr::with_span(ExprKind::PrimValue(self.prim(whole)?), span));
            }
        }
        let callee = self.expr(&c.func)?;
        let mut args = Vec::new();
        for a in &c.args {
            args.push(self.arg(a, ArgKind::Prim)?);
        }
        let mut sinfo_args = Vec::new();
        for k in &c.keywords {
            match kw_name(k).as_str() {
                "ty_args" | "sinfo_args" => sinfo_args = self.sinfo_list(&k.value)?,
                other => return Err(self.err(&k.value, format!("unexpected keyword argument `{other}` in a call"))),
            }
        }
        Ok(Expr::with_span(
            ExprKind::Call(Call {
                op: callee,
                args,
                attrs: Attrs::new(),
                sinfo_args,
            }),
            span,
        ))
    }

    /// Gather positional and keyword arguments by parameter name.
    /// [`Self::bind_args`] for a function that takes no other keyword argument.
    fn bind_exact_args<'e>(
        &self,
        c: &'e ast::ExprCall,
        names: &[&str],
        fname: &str,
    ) -> PResult<Vec<Option<&'e ast::Expr>>> {
        let (vals, extra) = self.bind_args(c, names, fname)?;
        match extra.first() {
            Some(k) => Err(self.err(
                &k.value,
                format!("unexpected keyword argument `{}` of R.{fname}", kw_name(k)),
            )),
            None => Ok(vals),
        }
    }

    pub(super) fn bind_args<'e>(
        &self,
        c: &'e ast::ExprCall,
        names: &[&str],
        fname: &str,
    ) -> PResult<(Vec<Option<&'e ast::Expr>>, Vec<&'e ast::Keyword>)> {
        let mut vals: Vec<Option<&ast::Expr>> = vec![None; names.len()];
        for (i, a) in c.args.iter().enumerate() {
            if i >= names.len() {
                return Err(self.err(a, format!("too many arguments for R.{fname}")));
            }
            vals[i] = Some(a);
        }
        let mut extra = Vec::new();
        for k in &c.keywords {
            let key = kw_name(k);
            match names.iter().position(|n| *n == key) {
                Some(i) => {
                    if vals[i].is_some() {
                        return Err(self.err(&k.value, format!("argument `{key}` of R.{fname} given twice")));
                    }
                    vals[i] = Some(&k.value);
                }
                None => extra.push(k),
            }
        }
        Ok((vals, extra))
    }

    pub(super) fn relax_call(&mut self, op: &str, c: &ast::ExprCall, whole: &ast::Expr) -> PResult<Expr> {
        let span = self.span(whole);
        let mk = |kind: ExprKind| Expr::with_span(kind, span);
        let call = |op_name: &str, args: Vec<Expr>, attrs: Attrs, sinfo_args: Vec<StructInfo>| {
            Expr::with_span(
                ExprKind::Call(Call {
                    op: Expr::op(op_name),
                    args,
                    attrs,
                    sinfo_args,
                }),
                span,
            )
        };
        let one_arg = |cx: &Self| -> PResult<&ast::Expr> {
            match (c.args.as_slice(), c.keywords.as_slice()) {
                ([a], []) => Ok(a),
                _ => Err(cx.err(whole, format!("R.{op} expects one argument"))),
            }
        };
        match op {
            "const" => self.constant(c, whole),
            "shape" | "ShapeExpr" => {
                let a = one_arg(self)?;
                let (ast::Expr::List(ast::ExprList { elts, .. }) | ast::Expr::Tuple(ast::ExprTuple { elts, .. })) = a
                else {
                    return Err(self.err(a, "R.shape expects a list of dimensions like [n, 4]"));
                };
                let dims = elts.iter().map(|d| self.dim(d, false)).collect::<PResult<Vec<_>>>()?;
                Ok(mk(ExprKind::ShapeExpr(dims)))
            }
            "emit_with_ty" => match c.args.as_slice() {
                [name, args, tys] => {
                    let op_name = const_str(name).ok_or_else(|| self.err(name, "expected an operator name string"))?;
                    let (ast::Expr::Tuple(ast::ExprTuple { elts, .. }) | ast::Expr::List(ast::ExprList { elts, .. })) =
                        args
                    else {
                        return Err(self.err(args, "expected a tuple of arguments"));
                    };
                    let args = elts
                        .iter()
                        .map(|a| self.arg(a, ArgKind::Prim))
                        .collect::<PResult<Vec<_>>>()?;
                    let sinfo_args = self.sinfo_list(tys)?;
                    Ok(call(op_name, args, Attrs::new(), sinfo_args))
                }
                _ => Err(self.err(
                    whole,
                    "R.emit_with_ty expects an operator name, an argument tuple and StructInfo",
                )),
            },
            "TupleGetItem" => match c.args.as_slice() {
                [t, i] => {
                    let tuple = self.expr(t)?;
                    let index = match self.m.attr_value(i) {
                        Ok(AttrValue::Int(i)) if i >= 0 => i as usize,
                        _ => return Err(self.err(i, "expected a non-negative integer tuple index")),
                    };
                    Ok(mk(ExprKind::TupleGetItem { tuple, index }))
                }
                _ => Err(self.err(whole, "R.TupleGetItem expects a tuple and an index")),
            },
            "str" => {
                let a = one_arg(self)?;
                let s = const_str(a).ok_or_else(|| self.err(a, "R.str expects a string"))?;
                Ok(mk(ExprKind::StringImm(s.to_string())))
            }
            "dtype" => {
                let a = one_arg(self)?;
                Ok(mk(ExprKind::DataTypeImm(self.dtype_literal(a)?)))
            }
            "prim_value" => {
                let a = one_arg(self)?;
                match self.arg(a, ArgKind::Prim)? {
                    x if matches!(x.kind(), ExprKind::PrimValue(_)) => Ok(x),
                    _ => Err(self.err(a, "R.prim_value expects a scalar PrimExpr")),
                }
            }
            "tuple" => {
                if !c.keywords.is_empty() {
                    return Err(self.err(whole, "R.tuple takes positional arguments only"));
                }
                let fields = c
                    .args
                    .iter()
                    .map(|a| self.arg(a, ArgKind::Prim))
                    .collect::<PResult<Vec<_>>>()?;
                Ok(mk(ExprKind::Tuple(fields)))
            }
            "ExternFunc" => {
                let a = c
                    .args
                    .first()
                    .ok_or_else(|| self.err(whole, "R.ExternFunc expects a symbol name"))?;
                let s = const_str(a).ok_or_else(|| self.err(a, "R.ExternFunc expects a string"))?;
                Ok(mk(ExprKind::ExternFunc {
                    global_symbol: s.to_string(),
                }))
            }
            "call_packed" | "call_pure_packed" | "call_inplace_packed" => {
                let first = c
                    .args
                    .first()
                    .ok_or_else(|| self.err(whole, format!("R.{op} expects a function name")))?;
                let func = self.extern_func(first)?;
                let mut args = Vec::new();
                for a in &c.args[1..] {
                    args.push(self.arg(a, ArgKind::Prim)?);
                }
                let mut sinfo_args = Vec::new();
                let mut attrs = Attrs::new();
                for k in &c.keywords {
                    match kw_name(k).as_str() {
                        "ty_args" | "sinfo_args" => sinfo_args = self.sinfo_list(&k.value)?,
                        "inplace_indices" if op == "call_inplace_packed" => {
                            attrs.set("inplace_indices", self.attr_conv(AttrKind::Ints, &k.value)?);
                        }
                        other => {
                            return Err(self.err(&k.value, format!("unexpected keyword argument `{other}` of R.{op}")))
                        }
                    }
                }
                if op == "call_packed" {
                    Ok(mk(ExprKind::Call(Call {
                        op: func,
                        args,
                        attrs: Attrs::new(),
                        sinfo_args,
                    })))
                } else {
                    let mut all = vec![func];
                    all.extend(args);
                    Ok(call(&format!("relax.{op}"), all, attrs, sinfo_args))
                }
            }
            "call_tir" | "dist.call_tir" | "call_dps_packed" | "call_tir_inplace" | "call_tir_with_grad" => {
                let names: &[&str] = match op {
                    "call_tir_inplace" => &["gvar", "args", "inplace_indices", "out_ty", "tir_vars"],
                    "call_tir_with_grad" => &["gvar", "args", "out_ty", "te_grad_name", "te_grad_kwargs", "tir_vars"],
                    "call_dps_packed" => &["func", "args", "out_ty"],
                    _ => &["gvar", "args", "out_ty", "tir_vars"],
                };
                let (vals, extra) = self.bind_args(c, names, op)?;
                let mut out_e = vals[names.iter().position(|n| *n == "out_ty").unwrap_or(2)];
                for k in extra {
                    match kw_name(k).as_str() {
                        "out_sinfo" | "out_ty" | "out_struct_info" if out_e.is_none() => out_e = Some(&k.value),
                        other => {
                            return Err(self.err(&k.value, format!("unexpected keyword argument `{other}` of R.{op}")))
                        }
                    }
                }
                let func_e = vals[0].ok_or_else(|| self.err(whole, format!("R.{op} expects a function")))?;
                let func = self.extern_func(func_e)?;
                let args_e = vals[1].ok_or_else(|| self.err(whole, format!("R.{op} expects an argument tuple")))?;
                let args = self.args_tuple(args_e)?;
                let out = out_e.ok_or_else(|| self.err(whole, format!("R.{op} expects out_ty=")))?;
                let out = self.out_ty(out)?;
                let mut all = vec![func, args];
                if let Some(tv) = names.iter().position(|n| *n == "tir_vars").and_then(|i| vals[i]) {
                    if !is_none_const(tv) {
                        all.push(self.arg(tv, ArgKind::Shape)?);
                    }
                }
                let mut attrs = Attrs::new();
                if op == "call_tir_inplace" {
                    let ii = vals[2].ok_or_else(|| self.err(whole, "R.call_tir_inplace expects inplace_indices"))?;
                    attrs.set("inplace_indices", self.attr_conv(AttrKind::Ints, ii)?);
                }
                if op == "call_tir_with_grad" {
                    let name_e = vals[3].ok_or_else(|| self.err(whole, "R.call_tir_with_grad expects te_grad_name"))?;
                    attrs.set("te_grad_name", self.attr_conv(AttrKind::Str, name_e)?);
                    let kw = match vals[4] {
                        Some(k) if !is_none_const(k) => self.attr_conv(AttrKind::Map, k)?,
                        _ => AttrValue::Map(Attrs::new()),
                    };
                    attrs.set("te_grad_kwargs", kw);
                }
                let op_name = match op {
                    "dist.call_tir" => "relax.dist.call_tir",
                    _ => &format!("relax.{op}"),
                };
                Ok(call(op_name, all, attrs, vec![out]))
            }
            "invoke_closure" | "invoke_pure_closure" => {
                let (vals, extra) = self.bind_args(c, &["closure", "args", "ty_args"], op)?;
                let mut ty = vals[2];
                for k in extra {
                    match kw_name(k).as_str() {
                        "sinfo_args" if ty.is_none() => ty = Some(&k.value),
                        other => {
                            return Err(self.err(&k.value, format!("unexpected keyword argument `{other}` of R.{op}")))
                        }
                    }
                }
                let clo = self.expr(vals[0].ok_or_else(|| self.err(whole, "expected a closure"))?)?;
                let args = self.args_tuple(vals[1].ok_or_else(|| self.err(whole, "expected an argument tuple"))?)?;
                let sinfo_args = match ty {
                    Some(t) => self.sinfo_list(t)?,
                    None => return Err(self.err(whole, format!("R.{op} expects ty_args="))),
                };
                Ok(call(&format!("relax.{op}"), vec![clo, args], Attrs::new(), sinfo_args))
            }
            "print" => {
                let mut format = mk(ExprKind::StringImm(String::new()));
                for k in &c.keywords {
                    match kw_name(k).as_str() {
                        "format" => format = self.arg(&k.value, ArgKind::Str)?,
                        other => {
                            return Err(self.err(&k.value, format!("unexpected keyword argument `{other}` of R.print")))
                        }
                    }
                }
                let mut args = vec![format];
                for a in &c.args {
                    args.push(self.arg(a, ArgKind::Expr)?);
                }
                Ok(call("relax.print", args, Attrs::new(), Vec::new()))
            }
            "assert_op" => {
                let vals = self.bind_exact_args(c, &["condition", "format_args", "format"], op)?;
                let cond = self.arg(
                    vals[0].ok_or_else(|| self.err(whole, "R.assert_op expects a condition"))?,
                    ArgKind::Expr,
                )?;
                let format = match vals[2] {
                    Some(f) => self.arg(f, ArgKind::Str)?,
                    None => mk(ExprKind::StringImm(String::new())),
                };
                let mut args = vec![cond, format];
                match vals[1] {
                    None => {}
                    Some(f) if is_none_const(f) => {}
                    Some(
                        ast::Expr::List(ast::ExprList { elts, .. }) | ast::Expr::Tuple(ast::ExprTuple { elts, .. }),
                    ) => {
                        for x in elts {
                            args.push(self.arg(x, ArgKind::Expr)?);
                        }
                    }
                    Some(f) => args.push(self.arg(f, ArgKind::Expr)?),
                }
                Ok(call("relax.assert_op", args, Attrs::new(), Vec::new()))
            }
            "hint_on_device" => {
                let vals = self.bind_exact_args(c, &["data", "dst_vdevice", "memory_scope"], op)?;
                let data = self.expr(vals[0].ok_or_else(|| self.err(whole, "R.hint_on_device expects a value"))?)?;
                let dev = vals[1].ok_or_else(|| self.err(whole, "R.hint_on_device expects a device"))?;
                let (dt, idx) = self.device(dev)?;
                let scope = match vals[2] {
                    Some(s) => const_str(s)
                        .ok_or_else(|| self.err(s, "expected a memory scope string"))?
                        .to_string(),
                    None => "global".to_string(),
                };
                let mut attrs = Attrs::new();
                attrs.set("device_type", AttrValue::Int(dt));
                attrs.set("index", AttrValue::Int(idx));
                attrs.set("memory_scope", AttrValue::Str(scope));
                Ok(call("relax.hint_on_device", vec![data], attrs, Vec::new()))
            }
            "linear" => {
                // TVMScript's `R.linear` is sugar, expanded at parse time as TVM does:
                // `matmul(data, permute_dims(weight), out_dtype)` plus `bias` when given.
                let (vals, extra) = self.bind_args(c, &["data", "weight", "bias", "out_dtype"], op)?;
                if let Some(k) = extra.first() {
                    return Err(self.err(&k.value, format!("R.linear has no parameter `{}`", kw_name(k))));
                }
                let data = self.expr(vals[0].ok_or_else(|| self.err(whole, "R.linear expects data"))?)?;
                let weight = self.expr(vals[1].ok_or_else(|| self.err(whole, "R.linear expects a weight"))?)?;
                let bias = match vals[2] {
                    Some(b) if !is_none_const(b) => Some(self.expr(b)?),
                    _ => None,
                };
                let out_dtype = match vals[3] {
                    Some(d) => self.attr_conv(AttrKind::OptDType, d)?,
                    None => AttrValue::None,
                };
                let mut pattrs = Attrs::new();
                pattrs.set("axes", AttrValue::None);
                let wt = call("relax.permute_dims", vec![weight], pattrs, Vec::new());
                let mut mattrs = Attrs::new();
                mattrs.set("out_dtype", out_dtype);
                let mm = call("relax.matmul", vec![data, wt], mattrs, Vec::new());
                Ok(match bias {
                    Some(b) => call("relax.add", vec![mm, b], Attrs::new(), Vec::new()),
                    None => mm,
                })
            }
            "match_cast" => Err(self.err(whole, "R.match_cast must be the whole right-hand side of a binding")),
            "output" => Err(self.err(whole, "R.output(...) must be the last statement of a dataflow block")),
            "func_attr" => Err(self.err(whole, "R.func_attr(...) must be a statement at the start of a function")),
            "dataflow" => Err(self.err(whole, "R.dataflow() must be used as `with R.dataflow():`")),
            _ => self.op_call(op, c, whole),
        }
    }

    pub(super) fn device(&self, e: &ast::Expr) -> PResult<(i64, i64)> {
        let ast::Expr::Call(c) = e else {
            return Err(self.err(e, "expected R.device(device_type=..., index=...)"));
        };
        let fname = dotted_name(&c.func).unwrap_or_default();
        let by_name = match fname.as_str() {
            "tvm.cpu" | "R.cpu" => Some(1),
            "tvm.cuda" | "tvm.gpu" | "R.cuda" => Some(2),
            "tvm.opencl" | "tvm.cl" | "R.opencl" => Some(4),
            "tvm.vulkan" | "R.vulkan" => Some(7),
            "tvm.metal" | "R.metal" => Some(8),
            "tvm.rocm" | "R.rocm" => Some(10),
            "tvm.webgpu" | "R.webgpu" => Some(15),
            _ => None,
        };
        if let Some(dt) = by_name {
            let idx = match c.args.first() {
                Some(a) => self.int_literal(a)?,
                None => 0,
            };
            return Ok((dt, idx));
        }
        if fname != "R.device" {
            return Err(self.err(e, "expected R.device(device_type=..., index=...)"));
        }
        let vals = self.bind_exact_args(c, &["device_type", "index"], "device")?;
        let dt = match vals[0] {
            Some(v) => self.int_literal(v)?,
            None => return Err(self.err(e, "R.device expects device_type")),
        };
        let idx = match vals[1] {
            Some(v) => self.int_literal(v)?,
            None => 0,
        };
        Ok((dt, idx))
    }

    pub(super) fn op_call(&mut self, op: &str, c: &ast::ExprCall, whole: &ast::Expr) -> PResult<Expr> {
        let span = self.span(whole);
        let sig = ops::lookup(op).ok_or_else(|| self.err(&*c.func, format!("unknown Relax operator `R.{op}`")))?;
        let names: Vec<&str> = sig.params.iter().map(|p| p.name.as_str()).collect();
        let (vals, extra) = self.bind_args(c, &names, op)?;
        let mut sinfo_args = Vec::new();
        for k in extra {
            match kw_name(k).as_str() {
                "ty_args" | "sinfo_args" => sinfo_args = self.sinfo_list(&k.value)?,
                other => return Err(self.err(&k.value, format!("R.{op} has no parameter `{other}`"))),
            }
        }
        let mut args = Vec::new();
        let mut attr_vals: HashMap<&str, AttrValue> = HashMap::new();
        let mut arg_vals: HashMap<&str, Expr> = HashMap::new();
        for (p, v) in sig.params.iter().zip(&vals) {
            match p.kind {
                ParamKind::Arg(kind) => {
                    let x = match v {
                        Some(e) if is_none_const(e) => None,
                        Some(e) => Some(self.arg(e, kind)?),
                        None => match &p.default {
                            Default::Required => {
                                return Err(self.err(whole, format!("R.{op} is missing the argument `{}`", p.name)))
                            }
                            Default::None => None,
                            d => Some(default_arg(kind, d, span)),
                        },
                    };
                    let x = match (op, p.name.as_str(), x) {
                        // R.eye(n): m defaults to n
                        ("eye", "m", None) => arg_vals.get("n").cloned(),
                        (_, _, x) => x,
                    };
                    if let Some(x) = x {
                        arg_vals.insert(p.name.as_str(), x.clone());
                        args.push(x);
                    }
                }
                ParamKind::Attr(kind) => {
                    let val = match v {
                        Some(e) => self.attr_conv(kind, e)?,
                        None => match &p.default {
                            Default::Required => {
                                return Err(self.err(whole, format!("R.{op} is missing the argument `{}`", p.name)))
                            }
                            Default::SameAs(other) => attr_vals.get(other.as_str()).cloned().unwrap_or(AttrValue::None),
                            d => crate::text::ops::default_attr(kind, d),
                        },
                    };
                    attr_vals.insert(p.name.as_str(), val);
                }
            }
        }
        // R.arange(end): start defaults to 0
        if op == "arange" && !arg_vals.contains_key("end") && !args.is_empty() {
            let end = args.remove(0);
            args.insert(0, Expr::with_span(ExprKind::PrimValue(PrimExpr::int(0)), span));
            args.insert(1, end);
        }
        let mut attrs = Attrs::new();
        for a in &sig.attr_order {
            attrs.set(a.clone(), attr_vals.remove(a.as_str()).unwrap_or(AttrValue::None));
        }
        Ok(Expr::with_span(
            ExprKind::Call(Call {
                op: Expr::op(&sig.op_name()),
                args,
                attrs,
                sinfo_args,
            }),
            span,
        ))
    }

    pub(super) fn pyval(&self, e: &ast::Expr) -> PResult<PyVal> {
        Ok(match e {
            ast::Expr::Constant(_) | ast::Expr::UnaryOp(_) if self.m.attr_value(e).is_ok() => {
                match self.m.attr_value(e)? {
                    AttrValue::None => PyVal::None,
                    AttrValue::Bool(b) => PyVal::Bool(b),
                    AttrValue::Int(i) => PyVal::Int(i),
                    AttrValue::Float(f) => PyVal::Float(f),
                    AttrValue::Str(s) => PyVal::Str(s),
                    _ => return Err(self.err(e, "unexpected attribute value")),
                }
            }
            ast::Expr::List(ast::ExprList { elts, .. }) | ast::Expr::Tuple(ast::ExprTuple { elts, .. }) => {
                PyVal::List(elts.iter().map(|x| self.pyval(x)).collect::<PResult<_>>()?)
            }
            ast::Expr::Dict(_) => PyVal::Map(self.m.attrs_dict(e)?),
            ast::Expr::Call(c) if matches!(dotted_name(&c.func).as_deref(), Some("R.str")) => match c.args.as_slice() {
                [a] => PyVal::Str(
                    const_str(a)
                        .ok_or_else(|| self.err(a, "R.str expects a string"))?
                        .to_string(),
                ),
                _ => return Err(self.err(e, "R.str expects one string")),
            },
            ast::Expr::Call(c) if matches!(dotted_name(&c.func).as_deref(), Some("R.dtype")) => {
                match c.args.as_slice() {
                    [a] => PyVal::Str(self.dtype_literal(a)?.to_string()),
                    _ => return Err(self.err(e, "R.dtype expects one string")),
                }
            }
            _ => PyVal::Prim(self.prim(e)?),
        })
    }

    pub(super) fn attr_conv(&mut self, kind: AttrKind, e: &ast::Expr) -> PResult<AttrValue> {
        if kind == AttrKind::IndexMap {
            return self.index_map(e);
        }
        let v = self.pyval(e)?;
        let bad = |cx: &Self, what: &str| Err(cx.err(e, format!("expected {what}")));
        let int_of = |v: &PyVal| -> Option<i64> {
            match v {
                PyVal::Int(i) => Some(*i),
                PyVal::Bool(b) => Some(*b as i64),
                PyVal::Prim(p) => p.as_int(),
                _ => None,
            }
        };
        let ints_of = |v: &PyVal| -> Option<Vec<i64>> {
            match v {
                PyVal::List(l) => l.iter().map(int_of).collect(),
                other => int_of(other).map(|i| vec![i]),
            }
        };
        let list = |l: Vec<i64>| AttrValue::List(l.into_iter().map(AttrValue::Int).collect());
        Ok(match kind {
            AttrKind::Int => match int_of(&v) {
                Some(i) => AttrValue::Int(i),
                None => return bad(self, "an integer"),
            },
            AttrKind::OptInt => match (&v, int_of(&v)) {
                (PyVal::None, _) => AttrValue::None,
                (_, Some(i)) => AttrValue::Int(i),
                _ => return bad(self, "an integer or None"),
            },
            AttrKind::Ints | AttrKind::OptInts => match (&v, ints_of(&v)) {
                (PyVal::None, _) if kind == AttrKind::OptInts => AttrValue::None,
                (_, Some(l)) => list(l),
                _ => return bad(self, "a list of integers"),
            },
            AttrKind::IntOrInts => match (&v, int_of(&v), ints_of(&v)) {
                (PyVal::List(_), _, Some(l)) => list(l),
                (_, Some(i), _) => AttrValue::Int(i),
                _ => return bad(self, "an integer or a list of integers"),
            },
            AttrKind::Rep(n) => match (&v, ints_of(&v)) {
                (PyVal::None, _) => AttrValue::None,
                (PyVal::List(_), Some(l)) => list(l),
                (_, Some(l)) => list(vec![l[0]; n as usize]),
                _ => return bad(self, "an integer or a list of integers"),
            },
            AttrKind::Pad(n) => match (&v, ints_of(&v)) {
                (PyVal::List(_), Some(l)) if l.len() == n as usize => list([l.clone(), l].concat()),
                (PyVal::List(_), Some(l)) => list(l),
                (_, Some(l)) => list(vec![l[0]; 2 * n as usize]),
                _ => return bad(self, "an integer or a list of integers"),
            },
            AttrKind::Float => match v {
                PyVal::Int(i) => AttrValue::Float(i as f64),
                PyVal::Float(f) => AttrValue::Float(f),
                PyVal::Prim(p) => match p.kind() {
                    PrimExprKind::FloatImm { value, .. } => AttrValue::Float(*value),
                    PrimExprKind::IntImm { value, .. } => AttrValue::Float(*value as f64),
                    _ => return bad(self, "a number"),
                },
                _ => return bad(self, "a number"),
            },
            AttrKind::FloatImms(n) => {
                // Python numbers become `float32` constants (TVM's conversion of a
                // float to `FloatImm`); a `T.float32(...)` is kept as written.
                let one = |v: &PyVal| -> Option<AttrValue> {
                    let f = |x: f64| Some(AttrValue::PrimExpr(PrimExpr::float_of(x, DataType::FLOAT32)));
                    match v {
                        PyVal::Int(i) => f(*i as f64),
                        PyVal::Float(x) => f(*x),
                        PyVal::Prim(p) => match p.kind() {
                            PrimExprKind::FloatImm { .. } => Some(AttrValue::PrimExpr(p.clone())),
                            PrimExprKind::IntImm { value, .. } => f(*value as f64),
                            _ => None,
                        },
                        _ => None,
                    }
                };
                let items = match &v {
                    PyVal::None => Some(vec![
                        AttrValue::PrimExpr(PrimExpr::float_of(0.0, DataType::FLOAT32));
                        n as usize
                    ]),
                    PyVal::List(l) => l.iter().map(one).collect(),
                    single => one(single).map(|x| vec![x; n as usize]),
                };
                match items {
                    Some(items) => AttrValue::List(items),
                    None => return bad(self, "a number or a list of numbers"),
                }
            }
            AttrKind::OptFloatImm | AttrKind::OptPrim => match v {
                PyVal::None => AttrValue::None,
                PyVal::Int(i) if kind == AttrKind::OptPrim => AttrValue::PrimExpr(PrimExpr::int(i)),
                PyVal::Int(i) => AttrValue::PrimExpr(PrimExpr::float_of(i as f64, DataType::FLOAT64)),
                PyVal::Float(f) => AttrValue::PrimExpr(PrimExpr::float_of(f, DataType::FLOAT64)),
                PyVal::Bool(b) => AttrValue::PrimExpr(PrimExpr::bool(b)),
                PyVal::Prim(p) => AttrValue::PrimExpr(p),
                _ => return bad(self, "a number or None"),
            },
            AttrKind::Bool => match v {
                PyVal::Bool(b) => AttrValue::Bool(b),
                PyVal::Int(i) => AttrValue::Bool(i != 0),
                PyVal::Prim(p) if p.as_int().is_some() => AttrValue::Bool(p.as_int() != Some(0)),
                _ => return bad(self, "True or False"),
            },
            AttrKind::Str | AttrKind::OptStr => match v {
                PyVal::None if kind == AttrKind::OptStr => AttrValue::None,
                PyVal::Str(s) => AttrValue::Str(s),
                _ => return bad(self, "a string"),
            },
            AttrKind::DType | AttrKind::OptDType => match v {
                PyVal::None if kind == AttrKind::OptDType => AttrValue::None,
                PyVal::Str(s) => {
                    AttrValue::DataType(s.parse().map_err(|_| self.err(e, format!("unknown dtype \"{s}\"")))?)
                }
                _ => match dotted_name(e)
                    .as_deref()
                    .and_then(|n| n.strip_prefix("T."))
                    .and_then(|n| n.parse().ok())
                {
                    Some(d) => AttrValue::DataType(d),
                    None => return bad(self, "a dtype string like \"float32\""),
                },
            },
            AttrKind::VDevice => match v {
                PyVal::Str(s) => {
                    let vd = self.m.resolve_vdevice(&s, e)?;
                    AttrValue::Str(crate::text::printer::vdevice_spec(&vd, Some(&self.m.module)))
                }
                _ => return bad(self, "a vdevice string like \"cuda:0:global\""),
            },
            AttrKind::Map => match v {
                PyVal::Map(m) => AttrValue::Map(m),
                PyVal::None => AttrValue::Map(Attrs::new()),
                _ => return bad(self, "a dictionary"),
            },
            AttrKind::IndexMap => unreachable!("handled above"),
        })
    }

    /// `T.index_map(lambda i, j: (j, i))` or a bare lambda.
    pub(super) fn index_map(&mut self, e: &ast::Expr) -> PResult<AttrValue> {
        let lam = match e {
            ast::Expr::Lambda(l) => l,
            ast::Expr::Call(c) if dotted_name(&c.func).as_deref() == Some("T.index_map") => match c.args.first() {
                Some(ast::Expr::Lambda(l)) => l,
                _ => return Err(self.err(e, "expected T.index_map(lambda ...: (...))")),
            },
            _ => return Err(self.err(e, "expected an index map like T.index_map(lambda i, j: (j, i))")),
        };
        let saved = self.tir.clone();
        let mut params = Vec::new();
        for a in lam.args.posonlyargs.iter().chain(&lam.args.args) {
            let v = TirVar::new(a.def.arg.to_string(), DataType::INT64);
            self.tir.insert(a.def.arg.to_string(), v.clone());
            params.push(AttrValue::PrimExpr(v.to_expr()));
        }
        let results: PResult<Vec<AttrValue>> = match &*lam.body {
            ast::Expr::Tuple(t) => t
                .elts
                .iter()
                .map(|x| self.prim(x).map(|p| AttrValue::PrimExpr(to_i64(p))))
                .collect(),
            other => self.prim(other).map(|p| vec![AttrValue::PrimExpr(to_i64(p))]),
        };
        self.tir = saved;
        let mut m = Attrs::new();
        m.set("params", AttrValue::List(params));
        m.set("results", AttrValue::List(results?));
        Ok(AttrValue::Map(m))
    }

    /// `R.const(value, dtype)`.
    pub(super) fn constant(&mut self, c: &ast::ExprCall, whole: &ast::Expr) -> PResult<Expr> {
        let vals = self.bind_exact_args(c, &["value", "dtype"], "const")?;
        let value = vals[0].ok_or_else(|| self.err(whole, "R.const expects a value"))?;
        let mut shape = Vec::new();
        let mut elems = Vec::new();
        self.flatten_const(value, 0, &mut shape, &mut elems)?;
        let dtype = match vals[1] {
            Some(d) if !is_none_const(d) => self.dtype_literal(d)?,
            _ => {
                if elems.iter().all(|(_, s)| matches!(s, ConstElem::Bool(_))) && !elems.is_empty() {
                    DataType::BOOL
                } else if elems.iter().any(|(_, s)| matches!(s, ConstElem::Float(_))) {
                    DataType::FLOAT32
                } else {
                    DataType::INT32
                }
            }
        };
        let mut data = Vec::new();
        for (node, el) in &elems {
            let s = match el {
                ConstElem::Bool(b) => Scalar::Int(*b as i64),
                ConstElem::Int(i) => Scalar::Int(*i),
                ConstElem::Float(f) => Scalar::Float(*f),
            };
            let bytes = encode(dtype, s).ok_or_else(|| {
                Diagnostic::error(format!("unsupported constant dtype {dtype}"), *node)
                    .with_rule(crate::diagnostic::Rule::Parse)
            })?;
            data.extend(bytes);
        }
        let arr = NDArray { dtype, shape, data };
        Ok(Expr::with_span(
            ExprKind::Constant { data: Arc::new(arr) },
            self.span(whole),
        ))
    }

    pub(super) fn flatten_const(
        &self,
        e: &ast::Expr,
        depth: usize,
        shape: &mut Vec<i64>,
        out: &mut Vec<(Span, ConstElem)>,
    ) -> PResult<()> {
        match e {
            ast::Expr::List(ast::ExprList { elts, .. }) | ast::Expr::Tuple(ast::ExprTuple { elts, .. }) => {
                if shape.len() == depth {
                    shape.push(elts.len() as i64);
                } else if shape.get(depth) != Some(&(elts.len() as i64)) {
                    return Err(self.err(e, "R.const: nested lists must be rectangular"));
                }
                for x in elts {
                    self.flatten_const(x, depth + 1, shape, out)?;
                }
                Ok(())
            }
            _ => {
                if depth != shape.len() {
                    return Err(self.err(e, "R.const: nested lists must be rectangular"));
                }
                // `float("-inf")`: how a non-finite element is printed, so that Python reads it
                if let ast::Expr::Call(c) = e {
                    if dotted_name(&c.func).as_deref() == Some("float") {
                        let f = match c.args.as_slice() {
                            [a] => const_str(a).and_then(|s| match s {
                                "inf" => Some(f64::INFINITY),
                                "-inf" => Some(f64::NEG_INFINITY),
                                "nan" => Some(f64::NAN),
                                _ => None,
                            }),
                            _ => None,
                        };
                        let f = f.ok_or_else(|| self.err(e, "float() expects \"inf\", \"-inf\" or \"nan\""))?;
                        out.push((self.span(e), ConstElem::Float(f)));
                        return Ok(());
                    }
                }
                let el = match self.m.attr_value(e) {
                    Ok(AttrValue::Bool(b)) => ConstElem::Bool(b),
                    Ok(AttrValue::Int(i)) => ConstElem::Int(i),
                    Ok(AttrValue::Float(f)) => ConstElem::Float(f),
                    Ok(AttrValue::Str(s)) if matches!(s.as_str(), "inf" | "-inf" | "nan") => {
                        ConstElem::Float(s.parse().unwrap_or(f64::NAN))
                    }
                    _ => return Err(self.err(e, "R.const expects a number, a boolean or a nested list of them")),
                };
                out.push((self.span(e), el));
                Ok(())
            }
        }
    }
}

#[derive(Clone, Copy)]
pub(super) enum ConstElem {
    Bool(bool),
    Int(i64),
    Float(f64),
}

pub(super) struct LineShift {
    pub(super) inner: crate::span::LineIndex,
}

pub(super) fn to_i64(p: PrimExpr) -> PrimExpr {
    match p.kind() {
        PrimExprKind::IntImm { value, dtype } if dtype.is_int() && *dtype != DataType::INT64 => PrimExpr::int(*value),
        _ => p,
    }
}

pub(super) fn default_arg(kind: ArgKind, d: &Default, span: Span) -> Expr {
    let k = match (kind, d) {
        (ArgKind::Str, Default::Str(s)) => ExprKind::StringImm(s.clone()),
        (ArgKind::DType, Default::Str(s)) => ExprKind::DataTypeImm(s.parse().unwrap_or(DataType::VOID)),
        (_, Default::Bool(b)) => ExprKind::PrimValue(PrimExpr::bool(*b)),
        (_, Default::Int(i)) => ExprKind::PrimValue(PrimExpr::int(*i)),
        (_, Default::Float(f)) => ExprKind::PrimValue(PrimExpr::float_of(*f, DataType::FLOAT64)),
        (ArgKind::Shape, Default::Ints(l)) => ExprKind::ShapeExpr(l.iter().map(|i| PrimExpr::int(*i)).collect()),
        (_, Default::Ints(l)) => ExprKind::Tuple(
            l.iter()
                .map(|i| Expr::new(ExprKind::PrimValue(PrimExpr::int(*i))))
                .collect(),
        ),
        (_, Default::Str(s)) => ExprKind::StringImm(s.clone()),
        _ => ExprKind::Tuple(Vec::new()),
    };
    Expr::with_span(k, span)
}
