//! WGSL for TIR statements: the part of the emitter that writes a kernel body's
//! lines (declarations, stores, loops, branches, barriers, `vec4` loads).

#[allow(unused_imports)]
use super::*;

impl Em<'_> {
    pub(super) fn line(&mut self, s: &str) {
        for _ in 0..self.ind {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    pub(super) fn bind_var(&mut self, v: &TirVar, w: W) -> String {
        let mut name = format!("{}_{}", sanitize(v.name()), v.id());
        let mut k = 0;
        while self.declared.contains(&name) {
            k += 1;
            name = format!("{}_{}_{k}", sanitize(v.name()), v.id());
        }
        self.declared.insert(name.clone());
        self.vars.insert(v.id(), (name.clone(), w));
        name
    }

    /// Emit `s`. Scopes that continue with the statements after them (`let`,
    /// attributes, asserts, allocations, and a sequence's last item) are followed
    /// in a loop, not by recursion, so a long chain of `let`s emits flat `let`
    /// lines in bounded stack.
    pub(super) fn stmt(&mut self, s: &Stmt) -> Result<()> {
        let mut s = s;
        loop {
            s = match s {
                Stmt::Let { var, value, body } => {
                    self.let_line(var, value)?;
                    body
                }
                Stmt::Attr { body, .. } | Stmt::Assert { body, .. } => body,
                Stmt::Alloc { buffer, body } => {
                    self.alloc_line(buffer)?;
                    body
                }
                Stmt::Seq(v) => match v.split_last() {
                    Some((last, rest)) => {
                        for x in rest {
                            self.stmt(x)?;
                        }
                        last
                    }
                    None => return Ok(()),
                },
                _ => return self.stmt_node(s),
            };
        }
    }

    pub(super) fn let_line(&mut self, var: &TirVar, value: &PrimExpr) -> Result<()> {
        let (vs, vw) = self.expr(value)?;
        let w = if var.dtype().is_float() {
            self.cty(var.dtype())?
        } else {
            vw
        };
        let v = self.conv(&vs, vw, w)?;
        if self.varies(value) {
            self.varying.insert(var.id());
        }
        let name = self.bind_var(var, w);
        self.line(&format!("let {name}: {} = {v};", w.name()));
        Ok(())
    }

    pub(super) fn alloc_line(&mut self, buffer: &Buffer) -> Result<()> {
        let n = buffer.shape()[0].as_int().ok_or_else(|| {
            self.unsupported(format!(
                "allocation `{}` of non-constant size in a kernel",
                buffer.name()
            ))
        })?;
        if n <= 0 || n > (1 << 16) {
            return Err(self.unsupported(format!("allocation `{}` of {n} elements in a kernel", buffer.name())));
        }
        let dt = buffer.dtype();
        let shared = buffer.scope().starts_with("shared");
        // WGSL allows no bool in workgroup memory: such a buffer holds 0u / 1u.
        let w = match dt.is_bool() {
            true if shared => W::U32,
            true => W::Bool,
            false => self.cty(dt)?,
        };
        let w = match (dt.code, dt.bits) {
            (TypeCode::Int, 64) if self.caps.i64 => W::I64,
            (TypeCode::UInt, 64) if self.caps.i64 => W::U64,
            _ => w,
        };
        let name = format!("l{}_{}", buffer.id(), sanitize(buffer.name()));
        self.locals.insert(buffer.id(), (name.clone(), dt, w));
        if shared {
            self.workgroup_decls
                .push(format!("var<workgroup> {name}: array<{}, {n}>;", w.name()));
        } else {
            self.line(&format!("var {name}: array<{}, {n}>;", w.name()));
        }
        Ok(())
    }

    pub(super) fn stmt_node(&mut self, s: &Stmt) -> Result<()> {
        match s {
            Stmt::BufferStore {
                buffer, value, indices, ..
            } => {
                if indices.len() != 1 {
                    return Err(JitError::InvalidIr(format!("unflattened store to `{}`", buffer.name())));
                }
                let (is, iw) = self.index_expr(buffer, &indices[0])?;
                let idx = self.conv(&is, iw, W::I32)?;
                let (vs, vw) = self.expr(value)?;
                if let Some((name, bdt, w)) = self.locals.get(&buffer.id()).cloned() {
                    let v = if bdt.is_bool() {
                        let b = self.conv(&vs, vw, W::Bool)?;
                        self.conv(&b, W::Bool, w)?
                    } else {
                        self.conv(&vs, vw, w)?
                    };
                    self.line(&format!("{name}[{idx}] = {v};"));
                    return Ok(());
                }
                let Some((name, bdt, st)) = self.bufs.get(&buffer.id()).cloned() else {
                    return Err(self.unsupported(format!("buffer `{}` is not available in the kernel", buffer.name())));
                };
                let v = if bdt.is_bool() {
                    let b = self.conv(&vs, vw, W::Bool)?;
                    format!("select(0i, 1i, {b})")
                } else if (matches!(bdt.code, TypeCode::Float | TypeCode::BFloat) && bdt.bits == 16
                    || bdt.mini_float().is_some())
                    && st == StorageTy::F32
                {
                    let x = self.conv(&vs, vw, W::F32)?;
                    self.wrap_small(x, bdt)
                } else {
                    self.conv(&vs, vw, st.wty())?
                };
                let store = if self.chunked.contains_key(&buffer.id()) {
                    format!("st_{name}({idx}, {v});")
                } else {
                    format!("{name}[{idx}] = {v};")
                };
                if self.needs_check(&indices[0]) {
                    // Robust buffer access may redirect an out-of-range store anywhere
                    // in the buffer: skip it instead.
                    let ok = match iw {
                        W::I64 | W::U64 => self.checked_index(buffer, &is, iw, true)?,
                        _ => self.checked_index(buffer, &idx, W::I32, true)?,
                    };
                    self.line(&format!("if ({ok} >= 0i) {{ {store} }}"));
                } else {
                    self.line(&store);
                }
            }
            Stmt::Let { .. } | Stmt::Attr { .. } | Stmt::Assert { .. } | Stmt::Alloc { .. } | Stmt::Seq(_) => {
                self.stmt(s)?
            }
            Stmt::LaunchThread { .. } => return Err(JitError::InvalidIr("launch_thread left after scheduling".into())),
            Stmt::For(For {
                var,
                min,
                extent,
                kind,
                body,
                ..
            }) => {
                if let Some(n) = crate::loop_trips::straight_line(*kind, min, extent) {
                    for k in 0..n {
                        let mut m = expr::VarMap::new();
                        m.insert(var.id(), PrimExpr::int_of(k, var.dtype()));
                        let b = expr::map_stmt(body, &mut |e| expr::simplify(&expr::subst(e, &m)));
                        let mut declares = false;
                        expr::visit_stmts(&b, &mut |x| {
                            declares |= matches!(x, Stmt::Let { .. } | Stmt::Alloc { .. })
                        });
                        if declares {
                            self.line("{");
                            self.ind += 1;
                            self.scoped(&b)?;
                            self.ind -= 1;
                            self.line("}");
                        } else {
                            self.stmt(&b)?;
                        }
                    }
                    return Ok(());
                }
                let (ms, mw) = self.expr(min)?;
                let (es, ew) = self.expr(extent)?;
                let w = if mw == W::I64 || ew == W::I64 { W::I64 } else { W::I32 };
                let (m, e) = (self.conv(&ms, mw, w)?, self.conv(&es, ew, w)?);
                let name = self.bind_var(var, w);
                self.varying.insert(var.id());
                let one_ = one(w);
                self.line(&format!(
                    "for (var {name}: {} = {m}; {name} < {m} + {e}; {name} = {name} + {one_}) {{",
                    w.name()
                ));
                self.ind += 1;
                self.stmt(body)?;
                self.ind -= 1;
                self.line("}");
                self.declared.remove(&name);
            }
            Stmt::While { cond, body } => {
                self.line("loop {");
                self.ind += 1;
                let (c, w) = self.expr(cond)?;
                let c = self.conv(&c, w, W::Bool)?;
                self.line(&format!("if (!({c})) {{ break; }}"));
                self.stmt(body)?;
                self.ind -= 1;
                self.line("}");
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let (c, w) = self.expr(cond)?;
                let c = self.conv(&c, w, W::Bool)?;
                self.line(&format!("if ({c}) {{"));
                self.ind += 1;
                self.scoped(then_branch)?;
                self.ind -= 1;
                if let Some(e) = else_branch {
                    self.line("} else {");
                    self.ind += 1;
                    self.scoped(e)?;
                    self.ind -= 1;
                }
                self.line("}");
            }
            Stmt::Evaluate(_) if vload4_parts(s).is_some() => {
                let Some((dst, src, [off, i4])) = vload4_parts(s) else {
                    return Ok(());
                };
                let (os, ow) = self.expr(off)?;
                let off = self.conv(&os, ow, W::I32)?;
                let (is, iw) = self.expr(i4)?;
                let i4 = self.conv(&is, iw, W::I32)?;
                let Some((dname, _, dw)) = self.locals.get(&dst.id()).cloned() else {
                    return Err(self.unsupported(format!("vec4 load into `{}`, not a local buffer", dst.name())));
                };
                self.line("{");
                self.ind += 1;
                match self.vec4_bufs.get(&src.id()).cloned() {
                    Some(v4) => {
                        self.line(&format!("let v = {v4}[{i4}];"));
                        for l in 0..4 {
                            let v = self.conv(&format!("v[{l}]"), W::F32, dw)?;
                            self.line(&format!("{dname}[{off} + {l}i] = {v};"));
                        }
                    }
                    None => {
                        let Some((sname, _, st)) = self.bufs.get(&src.id()).cloned() else {
                            return Err(
                                self.unsupported(format!("buffer `{}` is not available in the kernel", src.name()))
                            );
                        };
                        self.line(&format!("let i = 4i * ({i4});"));
                        for l in 0..4 {
                            let at = if self.chunked.contains_key(&src.id()) {
                                format!("ld_{sname}(i + {l}i)")
                            } else {
                                format!("{sname}[i + {l}i]")
                            };
                            let v = self.conv(&at, st.wty(), dw)?;
                            self.line(&format!("{dname}[{off} + {l}i] = {v};"));
                        }
                    }
                }
                self.ind -= 1;
                self.line("}");
            }
            Stmt::Evaluate(e) => match e.kind() {
                PrimExprKind::Call { .. } if e.as_intrinsic() == Some(Intrinsic::TvmStorageSync) => {
                    self.line("workgroupBarrier();");
                }
                PrimExprKind::IntImm { .. } => {}
                _ => {
                    let (s, _) = self.expr(e)?;
                    self.line(&format!("_ = {s};"));
                }
            },
            Stmt::BlockRealize { .. } => return Err(JitError::InvalidIr("block left after lowering".into())),
        }
        Ok(())
    }

    pub(super) fn scoped(&mut self, s: &Stmt) -> Result<()> {
        let saved = self.declared.clone();
        let r = self.stmt(s);
        self.declared = saved;
        r
    }

    #[allow(dead_code)]
    pub(super) fn lowered(&self) -> &LoweredFunc {
        self.lf
    }
}
