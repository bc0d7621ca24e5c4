//! WGSL for TIR intrinsic calls (`T.exp`, `T.if_then_else`, `T.reinterpret`, ...):
//! the part of the expression emitter that maps each intrinsic to WGSL builtins or
//! helper functions.

#[allow(unused_imports)]
use super::*;
use relax_ir::tir::Intrinsic as I;

impl Em<'_> {
    /// A float math call computed in f32 (f16 operands converted) for the intrinsic
    /// `op` (named when the data type is refused).
    pub(super) fn fcall(
        &mut self,
        op: I,
        f: &str,
        args: &[PrimExpr],
        dtype: DataType,
        helper: Option<&'static str>,
    ) -> Result<(String, W)> {
        let out = self.cty(dtype)?;
        if out == W::F64 {
            // WGSL's math builtins have no f64 forms: computing in f32 would silently
            // narrow the result, so the kernel is refused (it runs on the host instead).
            return Err(JitError::UnsupportedDtype {
                dtype,
                context: format!("for `T.{op}` on the GPU (WGSL computes it only in f32; run it on the host)"),
            });
        }
        let native = out == W::F32 || (out == W::F16 && helper.is_none());
        let cw = if native { out } else { W::F32 };
        let mut parts = Vec::new();
        for a in args {
            let (s, w) = self.expr(a)?;
            parts.push(self.conv(&s, w, cw)?);
        }
        if let Some(h) = helper {
            self.helpers.insert(h);
        }
        let call = format!("{f}({})", parts.join(", "));
        Ok((self.conv(&call, cw, out)?, out))
    }

    /// `f` of the one argument (as [`Em::fcall`]) combined with the float constant
    /// `c` (converted to the result's width) by `combine(call, constant)`.
    fn fcall_with(
        &mut self,
        op: I,
        f: &str,
        args: &[PrimExpr],
        dtype: DataType,
        c: &str,
        combine: impl Fn(&str, &str) -> String,
    ) -> Result<(String, W)> {
        let (s, w) = self.fcall(op, f, args, dtype, None)?;
        let c = self.conv(c, W::F32, w)?;
        Ok((combine(&s, &c), w))
    }

    /// `select` of two arms by a condition (`Select` and `T.if_then_else`). WGSL
    /// evaluates both arms, so an access checked in an arm is checked only where
    /// that arm is taken (see `bounds`).
    pub(super) fn select(&mut self, cond: &PrimExpr, t: &PrimExpr, f: &PrimExpr) -> Result<(String, W)> {
        let (c, cw) = self.expr(cond)?;
        let c = self.conv(&c, cw, W::Bool)?;
        self.guards.push(c.clone());
        let ts = self.expr(t);
        self.guards.pop();
        self.guards.push(format!("!{c}"));
        let fs = self.expr(f);
        self.guards.pop();
        let ((ts, tw), (fs, fw)) = (ts?, fs?);
        let w = tw.max(fw);
        Ok((
            format!("select({}, {}, {c})", self.conv(&fs, fw, w)?, self.conv(&ts, tw, w)?),
            w,
        ))
    }

    pub(super) fn call(&mut self, op: I, dtype: DataType, args: &[PrimExpr]) -> Result<(String, W)> {
        let n = |k: usize| crate::error::check_arity(op, args, k);
        // A builtin of the intrinsic table's row (WGSL's `round` rounds half to even,
        // as TVM's `T.round` and `T.nearbyint` do: `llvm.nearbyint` on the host).
        let simple = op.float_math().and_then(|m| m.wgsl);
        if let Some(f) = simple {
            n(1)?;
            if !dtype.is_float() {
                return Err(self.unsupported(format!("T.{op} on {dtype}")));
            }
            if matches!(op, I::Floor | I::Ceil | I::Trunc | I::Nearbyint | I::Round) && self.cty(dtype)? == W::F64 {
                // exact in f64 (GLSL.std.450's Floor, Ceil, Trunc and RoundEven take
                // 64-bit floats), unlike the transcendental builtins
                let (s, w) = self.expr(&args[0])?;
                let s = self.conv(&s, w, W::F64)?;
                if op == I::Trunc {
                    // lavapipe's f64 `trunc` returns its argument past 2^32; toward
                    // zero through floor and ceil instead
                    // (a zero result keeps the sign: trunc(-0.5) is -0)
                    let t = format!("select(floor({s}), ceil({s}), {s} < 0.0lf)");
                    return Ok((format!("select({t}, -0.0lf, {t} == 0.0lf && {s} < 0.0lf)"), W::F64));
                }
                if matches!(op, I::Round | I::Nearbyint) {
                    // lavapipe's f64 `round` is wrong too (3.5 -> 3): half to even from
                    // f = floor(x) and the exact remainder x - f; from 2^52 on every
                    // f64 is an integer
                    let fl = format!("floor({s})");
                    let d = format!("(({s}) - {fl})");
                    let odd = format!("({fl} - 2.0lf * floor({fl} * 0.5lf) == 1.0lf)");
                    let up = format!("({d} > 0.5lf || ({d} == 0.5lf && {odd}))");
                    let r = format!("select({fl}, {fl} + 1.0lf, {up})");
                    // a zero result has the argument's sign (round(-0.5) is -0)
                    let rounded = format!("select({r}, -0.0lf, {r} == 0.0lf && {s} < 0.0lf)");
                    return Ok((
                        format!("select({rounded}, {s}, abs({s}) >= 4503599627370496.0lf)"),
                        W::F64,
                    ));
                }
                return Ok((format!("{f}({s})"), W::F64));
            }
            return self.fcall(op, f, args, dtype, None);
        }
        Ok(match op {
            I::Exp => {
                // exp(x) for |x| <= 2^-25 rounds to 1, as the host's correctly rounded
                // `expf` gives; drivers that compute exp through exp2 of a split
                // exponent return 1 - 2^-24 for tiny negative x (a truncating cast to
                // an integer then gives 0).
                n(1)?;
                if !dtype.is_float() {
                    return Err(self.unsupported(format!("T.{op} on {dtype}")));
                }
                let (x, w) = self.fcall(op, "", args, dtype, None)?;
                let one_ = self.conv("1.0f", W::F32, w)?;
                let xf = self.conv(&x, w, W::F32)?;
                (format!("select(exp({x}), {one_}, abs({xf}) <= 2.9802322e-8f)"), w)
            }
            I::Asin | I::Acos => {
                // atan2 forms are more accurate than some drivers' asin / acos.
                n(1)?;
                let (x, w) = self.fcall(op, "", args, dtype, None)?;
                let one_ = self.conv("1.0f", W::F32, w)?;
                let r = format!("sqrt(max({one_} - {x} * {x}, {}))", w.zero());
                let v = if op == I::Asin {
                    format!("atan2({x}, {r})")
                } else {
                    format!("atan2({r}, {x})")
                };
                // Outside [-1, 1] the result is NaN (as on the host), not the clamped
                // value; a NaN argument is found from its bits (drivers fold the
                // comparisons of a NaN).
                let nan = self.conv("bitcast<f32>(0x7fc00000u)", W::F32, w)?;
                let xf = self.conv(&x, w, W::F32)?;
                (
                    format!(
                        "select({v}, {nan}, abs({x}) > {one_} || (bitcast<u32>({xf}) & 0x7fffffffu) > 0x7f800000u)"
                    ),
                    w,
                )
            }
            I::Atan => {
                // A NaN argument gives NaN (found from its bits: drivers that assume
                // no NaNs return 0).
                n(1)?;
                if !dtype.is_float() {
                    return Err(self.unsupported(format!("T.{op} on {dtype}")));
                }
                let (x, w) = self.fcall(op, "", args, dtype, None)?;
                let xf = self.conv(&x, w, W::F32)?;
                (
                    format!("select(atan({x}), {x}, (bitcast<u32>({xf}) & 0x7fffffffu) > 0x7f800000u)"),
                    w,
                )
            }
            I::Fabs | I::Abs => {
                n(1)?;
                let (s, w) = self.expr(&args[0])?;
                (format!("abs({s})"), w)
            }
            I::Exp10 => {
                n(1)?;
                self.fcall_with(op, "", args, dtype, "10.0f", |s, c| format!("pow({c}, {s})"))?
            }
            I::Log10 => {
                n(1)?;
                self.fcall_with(op, "log2", args, dtype, "0.30102999566398120f", |s, c| {
                    format!("({s} * {c})")
                })?
            }
            I::Log1p => {
                n(1)?;
                self.fcall_with(op, "", args, dtype, "1.0f", |s, c| format!("log({c} + {s})"))?
            }
            I::Expm1 => {
                n(1)?;
                self.fcall_with(op, "exp", args, dtype, "1.0f", |s, c| format!("({s} - {c})"))?
            }
            I::Asinh | I::Acosh => {
                // The textbook formulas overflow for large arguments: helpers of that
                // name switch to `log(2|x|)` there.
                n(1)?;
                if !dtype.is_float() {
                    return Err(self.unsupported(format!("T.{op} on {dtype}")));
                }
                let helper = if op == I::Asinh { "asinh_f32" } else { "acosh_f32" };
                self.fcall(op, helper, args, dtype, Some(helper))?
            }
            I::Tanh | I::Sigmoid | I::Erf => {
                // Helper functions of the same name (see `HELPERS`).
                n(1)?;
                let helper = match op {
                    I::Tanh => "tanh_f32",
                    I::Sigmoid => "sigmoid_f32",
                    _ => "erf_f32",
                };
                self.fcall(op, helper, args, dtype, Some(helper))?
            }
            I::Pow | I::Powf => {
                n(2)?;
                self.fcall(op, "pow_f32", args, dtype, Some("pow_f32"))?
            }
            I::Atan2 => {
                n(2)?;
                self.fcall(op, "atan2", args, dtype, None)?
            }
            I::Copysign => {
                n(2)?;
                self.fcall(op, "copysign_f32", args, dtype, Some("copysign_f32"))?
            }
            I::Hypot => {
                n(2)?;
                let (s, w) = self.fcall(op, "", &args[..1], dtype, None)?;
                let (t, _) = self.fcall(op, "", &args[1..], dtype, None)?;
                (format!("sqrt({s} * {s} + {t} * {t})"), w)
            }
            I::Fmod if self.cty(dtype)? == W::F64 => {
                n(2)?;
                self.binary(BinOp::Mod, &args[0], &args[1], dtype)?
            }
            I::Fmod => {
                n(2)?;
                let (s, w) = self.fcall(op, "", &args[..1], dtype, None)?;
                let (t, _) = self.fcall(op, "", &args[1..], dtype, None)?;
                // `fmod(x, 0)` is NaN (Vulkan leaves `x % 0.0` undefined).
                self.helpers.insert("fmod_f32");
                let (s, t) = (self.conv(&s, w, W::F32)?, self.conv(&t, w, W::F32)?);
                (self.conv(&format!("fmod_f32({s}, {t})"), W::F32, w)?, w)
            }
            I::Isnan | I::Isinf | I::Isfinite => {
                n(1)?;
                let (s, w) = self.expr(&args[0])?;
                if !w.is_float() {
                    return Ok(((if op == I::Isfinite { "true" } else { "false" }).to_string(), W::Bool));
                }
                // float64 keeps its width: the f32 of a finite f64 may be inf
                let cw = if w == W::F64 { W::F64 } else { W::F32 };
                let h = match (op, cw) {
                    (I::Isnan, W::F64) => "isnan_f64",
                    (I::Isinf, W::F64) => "isinf_f64",
                    (_, W::F64) => "isfinite_f64",
                    (I::Isnan, _) => "isnan_f32",
                    (I::Isinf, _) => "isinf_f32",
                    _ => "isfinite_f32",
                };
                self.helpers.insert(h);
                (format!("{h}({})", self.conv(&s, w, cw)?), W::Bool)
            }
            I::IfThenElse => {
                n(3)?;
                self.select(&args[0], &args[1], &args[2])?
            }
            I::Likely | I::TvmThreadInvariant | I::Assume => {
                n(1)?;
                self.expr(&args[0])?
            }
            I::MaxValue | I::MinValue => match math::limit(dtype, op == I::MaxValue) {
                Some(math::Scalar::I(v)) => self.lit_int(v, dtype)?,
                Some(math::Scalar::F(v)) => self.lit_float(v, dtype)?,
                None => {
                    return Err(JitError::UnsupportedDtype {
                        dtype,
                        context: format!("for T.{op}"),
                    })
                }
            },
            I::Infinity => self.lit_float(f64::INFINITY, dtype)?,
            I::Truncdiv | I::Truncmod | I::Floordiv | I::Floormod => {
                n(2)?;
                let bop = op.division_op().unwrap_or(BinOp::FloorMod);
                self.binary(bop, &args[0], &args[1], dtype)?
            }
            I::BitwiseAnd | I::BitwiseOr | I::BitwiseXor => {
                n(2)?;
                let (a, wa) = self.expr(&args[0])?;
                let (b, wb) = self.expr(&args[1])?;
                let w = wa.max(wb);
                let o = match op {
                    I::BitwiseAnd => "&",
                    I::BitwiseOr => "|",
                    _ => "^",
                };
                if w == W::Bool {
                    // WGSL has `&` and `|` on bool but no `^`: exclusive or is `!=`.
                    let o = if o == "^" { "!=" } else { o };
                    (format!("({a} {o} {b})"), W::Bool)
                } else {
                    (format!("({} {o} {})", self.conv(&a, wa, w)?, self.conv(&b, wb, w)?), w)
                }
            }
            I::BitwiseNot => {
                n(1)?;
                let (a, w) = self.expr(&args[0])?;
                if w == W::Bool {
                    (format!("!{a}"), W::Bool)
                } else {
                    (self.wrap_small(format!("(~{a})"), dtype), w)
                }
            }
            I::ShiftLeft | I::ShiftRight => {
                n(2)?;
                let (a, w) = self.expr(&args[0])?;
                let (b, wb) = self.expr(&args[1])?;
                // numpy's rule, as on the host: a shift by the bit width or more (or by a
                // negative count, a huge `u32`) shifts every bit out: 0, and -1 for a
                // signed right shift of a negative value. Narrow integers live
                // sign- or zero-extended in 32 bits, so an arithmetic right shift by
                // `min(c, 31)` already gives that.
                // A 64-bit count is clamped before it narrows to `u32`: `u32(-2^63)`
                // is 0, which shifted nothing.
                let c = match wb {
                    W::I64 => format!("u32(min(bitcast<u64>({b}), 64lu))"),
                    W::U64 => format!("u32(min({b}, 64lu))"),
                    _ => self.conv(&b, wb, W::U32)?,
                };
                let bits = dtype.bits.max(1);
                if w == W::Bool {
                    return Ok((format!("({a} && ({c} == 0u))"), W::Bool));
                }
                if dtype.is_bool() {
                    return Ok((format!("select({}, {a}, {c} == 0u)", w.zero()), w));
                }
                let wide = if matches!(w, W::I64 | W::U64) { 64 } else { 32 };
                let out = if op == I::ShiftRight && matches!(w, W::I32 | W::I64) {
                    format!("({a} >> min({c}, {}u))", wide - 1)
                } else {
                    let o = if op == I::ShiftLeft { "<<" } else { ">>" };
                    format!("select(({a} {o} ({c} % {wide}u)), {}, {c} >= {bits}u)", w.zero())
                };
                (self.wrap_small(out, dtype), w)
            }
            I::Reinterpret => {
                n(1)?;
                let (a, _) = self.expr(&args[0])?;
                let to = self.cty(dtype)?;
                (format!("bitcast<{}>({a})", to.name()), to)
            }
            _ => return Err(self.unsupported(format!("intrinsic T.{op}"))),
        })
    }
}
