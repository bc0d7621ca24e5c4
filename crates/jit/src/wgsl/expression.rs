//! WGSL for TIR expressions: the part of the emitter that turns each expression
//! into WGSL text and its compute type (intrinsic calls in `intrinsics`).

#[allow(unused_imports)]
use super::*;

impl Em<'_> {
    pub(super) fn expr(&mut self, e: &PrimExpr) -> Result<(String, W)> {
        use PrimExprKind as K;
        let dt = e.dtype();
        Ok(match e.kind() {
            K::IntImm { value, dtype } => self.lit_int(expr::wrap_int(*value, *dtype), *dtype)?,
            K::FloatImm { value, dtype } => self.lit_float(*value, *dtype)?,
            K::StringImm(s) => return Err(self.unsupported(format!("string \"{s}\" in an expression"))),
            K::Var(v) => match self.vars.get(&v.id()) {
                Some((n, w)) => (n.clone(), *w),
                None => {
                    return Err(JitError::InvalidIr(format!(
                        "variable `{}` is not defined in the kernel",
                        v.name()
                    )))
                }
            },
            K::Cast { dtype, value } => {
                let (s, from) = self.expr(value)?;
                let to = if dtype.is_integer() && dtype.bits == 64 {
                    if from.is_float() {
                        self.data64(*dtype)?
                    } else if matches!(from, W::I64 | W::U64) || (self.caps.i64 && (dtype.is_uint() || from == W::U32))
                    {
                        // uint64 values keep all 64 bits (an int32 sign-extends, as on
                        // the host), and so do int64 ones from uint32 (4294967295 is not
                        // -1); int64 ones from other 32-bit values stay index arithmetic.
                        if dtype.is_uint() {
                            W::U64
                        } else {
                            W::I64
                        }
                    } else {
                        self.cty(*dtype)?
                    }
                } else {
                    self.cty(*dtype)?
                };
                if (from == W::F64 || to == W::F64) && from != to && !(from.is_float() && to.is_float()) {
                    // f64 <-> int conversions go through f32 / i32 lanes that drivers support.
                }
                if from.is_float() && dtype.is_sub_byte_int() {
                    // Saturated to the sub-byte range as on the host: through the
                    // 8-bit helper (NaN is 0), then clamped.
                    let x = self.conv(&s, from, W::F32)?;
                    let b = dtype.bits;
                    return Ok(if dtype.is_int() {
                        self.helpers.insert("sat_f32_i8");
                        let m = 1i64 << (b - 1);
                        (format!("clamp(sat_f32_i8({x}), {}i, {}i)", -m, m - 1), to)
                    } else {
                        self.helpers.insert("sat_f32_u8");
                        (format!("min(sat_f32_u8({x}), {}u)", (1u64 << b) - 1), to)
                    });
                }
                if let (true, Some(h)) = (from.is_float(), sat_cast_helper(*dtype, to)) {
                    // Out-of-range floats saturate and NaN becomes 0, as on the host
                    // (WGSL's own conversion wraps narrow types and clamps inexactly).
                    let x = self.conv(&s, from, W::F32)?;
                    self.helpers.insert(h);
                    return Ok((format!("{h}({x})"), to));
                }
                let c = self.conv(&s, from, to)?;
                (self.wrap_small(c, *dtype), to)
            }
            K::Binary { op, a, b } => {
                let (s, w) = self.binary(*op, a, b, dt)?;
                (self.round_op(s, dt), w)
            }
            K::Not(a) => {
                let (s, w) = self.expr(a)?;
                (format!("!{}", self.conv(&s, w, W::Bool)?), W::Bool)
            }
            K::Select { cond, t, f } => self.select(cond, t, f)?,
            K::Call { op, args, .. } if op.gpu() == Some(GpuOp::SubgroupShuffleXor) => {
                let [v, m] = args.as_slice() else {
                    return Err(JitError::InvalidIr(format!(
                        "{op} takes 2 arguments, {} given",
                        args.len()
                    )));
                };
                let Some(mask) = m.as_int().filter(|m| (0..=u32::MAX as i64).contains(m)) else {
                    return Err(self.unsupported(format!("{op} with a mask that is not a constant")));
                };
                let (vs, vw) = self.expr(v)?;
                if !matches!(vw, W::F32 | W::I32 | W::U32) {
                    return Err(self.unsupported(format!("{op} of {}", vw.name())));
                }
                self.uses_subgroups = true;
                (format!("subgroupShuffleXor({vs}, {mask}u)"), vw)
            }
            K::Call { op, args, .. } if matches!(op.gpu(), Some(GpuOp::SubgroupReduce(_))) => {
                let Some(GpuOp::SubgroupReduce(c)) = op.gpu() else {
                    return Err(self.unsupported(format!("intrinsic {op}")));
                };
                let wgsl_fn = subgroup_builtin(c);
                let [v] = args.as_slice() else {
                    return Err(JitError::InvalidIr(format!(
                        "{op} takes 1 argument, {} given",
                        args.len()
                    )));
                };
                let (vs, vw) = self.expr(v)?;
                if !matches!(vw, W::F32 | W::I32 | W::U32) {
                    return Err(self.unsupported(format!("{op} of {}", vw.name())));
                }
                self.uses_subgroups = true;
                (format!("{wgsl_fn}({vs})"), vw)
            }
            K::Call { op, dtype, args } => match op.intrinsic() {
                Some(op) => {
                    let (s, w) = self.call(op, *dtype, args)?;
                    (self.round_op(s, *dtype), w)
                }
                None => return Err(self.unsupported(format!("intrinsic T.{op}"))),
            },
            K::BufferLoad { buffer, indices } => {
                if indices.len() != 1 {
                    return Err(JitError::InvalidIr(format!(
                        "unflattened load from `{}`",
                        buffer.name()
                    )));
                }
                let (is, iw) = self.index_expr(buffer, &indices[0])?;
                let idx = self.conv(&is, iw, W::I32)?;
                if let Some((name, bdt, w)) = self.locals.get(&buffer.id()).cloned() {
                    let v = format!("{name}[{idx}]");
                    return Ok(if bdt.is_bool() {
                        // Bool workgroup memory is held as u32 (WGSL has no bool there).
                        (self.conv(&v, w, W::Bool)?, W::Bool)
                    } else {
                        (v, w)
                    });
                }
                let Some((name, bdt, st)) = self.bufs.get(&buffer.id()).cloned() else {
                    return Err(self.unsupported(format!("buffer `{}` is not available in the kernel", buffer.name())));
                };
                let idx = if self.needs_check(&indices[0]) {
                    match iw {
                        W::I64 | W::U64 => self.checked_index(buffer, &is, iw, false)?,
                        _ => self.checked_index(buffer, &idx, W::I32, false)?,
                    }
                } else {
                    idx
                };
                let v = if self.chunked.contains_key(&buffer.id()) {
                    format!("ld_{name}({idx})")
                } else {
                    format!("{name}[{idx}]")
                };
                let sw = st.wty();
                if bdt.is_bool() {
                    (format!("({v} != 0i)"), W::Bool)
                } else if matches!(sw, W::I64 | W::U64) {
                    (v, sw)
                } else {
                    let cw = self.cty(bdt)?;
                    (self.conv(&v, sw, cw)?, cw)
                }
            }
            K::Let { .. } => return Err(self.unsupported("let expressions (T.let) in kernels")),
            K::Ramp { .. } | K::Broadcast { .. } => {
                return Err(self.unsupported("vector expressions (T.Ramp / T.Broadcast)"))
            }
        })
    }

    pub(super) fn binary(&mut self, op: BinOp, a: &PrimExpr, b: &PrimExpr, dt: DataType) -> Result<(String, W)> {
        if let Some(y) = floor_mod_divisor(op, a, b) {
            // `x - floor(x / y) * y` (float `floor_mod` as legalized): drivers with
            // relaxed float semantics fold `inf * 0.0` to 0 (giving `x` for `y == 0`),
            // so it is computed by the helper that tests the divisor.
            if a.dtype().is_float() && matches!(self.cty(a.dtype())?, W::F32 | W::F16) {
                return self.binary(BinOp::FloorMod, a, y, dt);
            }
        }
        // int64 index arithmetic runs in i32; a comparison of int64 values with a
        // huge constant (a mask such as `j <= i + k` with `k` near 2^31) is computed
        // in i64 where the device has it, so that its operands cannot overflow.
        let is_i64 = |d: DataType| d.code == TypeCode::Int && d.bits == 64;
        let widen = self.caps.i64 && op.is_comparison() && is_i64(a.dtype()) && (has_huge_int(a) || has_huge_int(b));
        self.wide += usize::from(widen);
        let operands = self.expr(a).and_then(|x| Ok((x, self.expr(b)?)));
        self.wide -= usize::from(widen);
        let ((sa, wa), (sb, wb)) = operands?;
        if op.is_logical() {
            let o = if op == BinOp::And { "&&" } else { "||" };
            return Ok((
                format!(
                    "({} {o} {})",
                    self.conv(&sa, wa, W::Bool)?,
                    self.conv(&sb, wb, W::Bool)?
                ),
                W::Bool,
            ));
        }
        let adt = a.dtype();
        let w = if adt.is_float() {
            self.cty(adt)?.max(wa.max(wb))
        } else if (widen || self.wide > 0) && is_i64(adt) && !op.is_logical() {
            W::I64.max(wa.max(wb))
        } else {
            wa.max(wb)
        };
        // WGSL orders no bools and has no arithmetic on them: `false < true` as 0 < 1.
        let w = if w == W::Bool && !matches!(op, BinOp::Eq | BinOp::Ne) {
            W::I32
        } else {
            w
        };
        let (x, y) = (self.conv(&sa, wa, w)?, self.conv(&sb, wb, w)?);
        // Every `i64` comparison is judged on the 32-bit halves (`cmp_i64`, exact):
        // lavapipe took `i64(x) >= 16777216li` as true for every `x`, `i64(x) >= 0li`
        // as true for `x = -1` and `0li < i64(select(0i, 1i, c))` as true for a false `c`.
        let sub_form = w == W::I64 && op.is_comparison();
        if sub_form {
            self.helpers.insert("cmp_i64");
        }
        // Float comparisons with a NaN operand are decided on the bits: drivers with
        // relaxed float semantics fold `x != x` to false and `x == x` to true (the
        // host and IEEE: `NaN != y` is true, every other comparison false).
        let nan_test = if matches!(w, W::F32 | W::F16) && op.is_comparison() {
            self.helpers.insert("isnan_f32");
            let (xf, yf) = (self.conv(&x, w, W::F32)?, self.conv(&y, w, W::F32)?);
            Some(format!("(isnan_f32({xf}) || isnan_f32({yf}))"))
        } else {
            None
        };
        let cmp = |o: &str| {
            if sub_form {
                (format!("(cmp_i64({x}, {y}) {o} 0i)"), W::Bool)
            } else if let Some(nan) = &nan_test {
                if o == "!=" {
                    (format!("(({x} != {y}) || {nan})"), W::Bool)
                } else {
                    (format!("(({x} {o} {y}) && !{nan})"), W::Bool)
                }
            } else {
                (format!("({x} {o} {y})"), W::Bool)
            }
        };
        if !w.is_float() && w != W::Bool && b.as_int() == Some(0) {
            // A constant zero divisor: naga rejects `x / 0` at compile time, so the
            // run-time rule (and the host's) is written out: `x / 0 == x`, `x % 0 == 0`.
            match op {
                BinOp::Div | BinOp::FloorDiv => return Ok((x, w)),
                BinOp::Mod | BinOp::FloorMod => return Ok((w.zero().to_string(), w)),
                _ => {}
            }
        }
        Ok(match op {
            // `x - x`: drivers fold it to 0 under relaxed float semantics, where IEEE
            // gives NaN for an infinite or NaN `x`; decided on the bits instead.
            BinOp::Sub if matches!(w, W::F32 | W::F16) && relax_ir::tir::expr_equal(a, b) => {
                self.helpers.insert("isfinite_f32");
                let xf = self.conv(&x, w, W::F32)?;
                let r = format!("select(bitcast<f32>(0x7fc00000u), 0.0f, isfinite_f32({xf}))");
                (self.conv(&r, W::F32, w)?, w)
            }
            // `x * 0.0`: drivers fold it to 0, where IEEE gives NaN for an infinite or
            // NaN `x`; decided on the bits instead (the zero's sign as IEEE's).
            BinOp::Mul if matches!(w, W::F32 | W::F16) && (float_zero(a).is_some() || float_zero(b).is_some()) => {
                let (v, zero) = match float_zero(b) {
                    Some(z) => (&x, z),
                    None => (&y, float_zero(a).unwrap_or(0.0)),
                };
                self.helpers.insert("isfinite_f32");
                let vf = self.conv(v, w, W::F32)?;
                let sign = if zero.is_sign_negative() { "0x80000000u" } else { "0u" };
                let r = format!(
                    "select(bitcast<f32>(0x7fc00000u), bitcast<f32>((bitcast<u32>({vf}) ^ {sign}) & 0x80000000u), isfinite_f32({vf}))"
                );
                (self.conv(&r, W::F32, w)?, w)
            }
            BinOp::Add | BinOp::Sub | BinOp::Mul => {
                let o = match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    _ => "*",
                };
                // A bool first operand with a narrow integer second wraps to the
                // integer's width (`True + uint8 255` is 0, false), as on the host.
                let bdt = b.dtype();
                let wdt = if dt.is_bool() && bdt.is_integer() && !bdt.is_bool() {
                    bdt
                } else {
                    dt
                };
                (self.wrap_small(format!("({x} {o} {y})"), wdt), w)
            }
            // A float divisor that may be zero: IEEE results (±inf, NaN) as on the host,
            // where Vulkan leaves `x / 0.0` undefined. `f16` goes through the `f32`
            // helper (exact: an `f32` quotient rounds to the same `f16`).
            BinOp::Div | BinOp::FloorDiv | BinOp::Mod | BinOp::FloorMod
                if matches!(w, W::F32 | W::F16) && !is_nonzero_const(b) =>
            {
                let helper = match op {
                    BinOp::Div | BinOp::FloorDiv => "fdiv_f32",
                    BinOp::Mod => "fmod_f32",
                    _ => "floormod_f32",
                };
                self.helpers.insert(helper);
                let (x, y) = (self.conv(&x, w, W::F32)?, self.conv(&y, w, W::F32)?);
                let r = format!("{helper}({x}, {y})");
                let r = if op == BinOp::FloorDiv {
                    format!("floor({r})")
                } else {
                    r
                };
                (self.conv(&r, W::F32, w)?, w)
            }
            // float64 truncated modulo: C's fmod, exactly (WGSL's `%` is
            // `x - y * trunc(x / y)`, which rounds)
            BinOp::Mod if w == W::F64 => {
                self.helpers.insert("fmod_f64");
                (format!("fmod_f64({x}, {y})"), w)
            }
            BinOp::Div => (format!("({x} / {y})"), w),
            BinOp::Mod => (format!("({x} % {y})"), w),
            // Signed integers: the helper of that name (see `HELPERS`).
            BinOp::FloorDiv | BinOp::FloorMod if matches!(w, W::I32 | W::I64) => {
                let helper = match (op, w) {
                    (BinOp::FloorDiv, W::I32) => "floordiv_i32",
                    (BinOp::FloorDiv, _) => "floordiv_i64",
                    (_, W::I32) => "floormod_i32",
                    _ => "floormod_i64",
                };
                self.helpers.insert(helper);
                (format!("{helper}({x}, {y})"), w)
            }
            BinOp::FloorDiv => match w {
                W::U32 | W::U64 => (format!("({x} / {y})"), w),
                _ => (format!("floor({x} / {y})"), w),
            },
            BinOp::FloorMod => match w {
                W::U32 | W::U64 => (format!("({x} % {y})"), w),
                _ => (format!("({x} - floor({x} / {y}) * {y})"), w),
            },
            BinOp::Min => (format!("min({x}, {y})"), w),
            BinOp::Max => (format!("max({x}, {y})"), w),
            BinOp::Eq => cmp("=="),
            BinOp::Ne => cmp("!="),
            BinOp::Lt => cmp("<"),
            BinOp::Le => cmp("<="),
            BinOp::Gt => cmp(">"),
            BinOp::Ge => cmp(">="),
            BinOp::And | BinOp::Or => unreachable_logical(),
        })
    }
}
