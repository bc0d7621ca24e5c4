//! WGSL for TIR intrinsic calls (`T.exp`, `T.if_then_else`, `T.reinterpret`, ...):
//! the part of the expression emitter that maps each intrinsic to WGSL builtins or
//! helper functions.

#[allow(unused_imports)]
use super::*;

impl Em<'_> {
    /// A float math call computed in f32 (f16 / f64 operands converted).
    pub(super) fn fcall(
        &mut self,
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
                context: format!("for `{f}` on the GPU (WGSL computes it only in f32; run it on the host)"),
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

    pub(super) fn call(&mut self, op: &str, dtype: DataType, args: &[PrimExpr]) -> Result<(String, W)> {
        let n = |k: usize| -> Result<()> {
            if args.len() == k {
                Ok(())
            } else {
                Err(JitError::InvalidIr(format!(
                    "T.{op} takes {k} arguments, {} given",
                    args.len()
                )))
            }
        };
        let simple = match op {
            "exp" => Some("exp"),
            "exp2" => Some("exp2"),
            "log" => Some("log"),
            "log2" => Some("log2"),
            "sqrt" => Some("sqrt"),
            "rsqrt" => Some("inverseSqrt"),
            "sin" => Some("sin"),
            "cos" => Some("cos"),
            "tan" => Some("tan"),
            "atan" => Some("atan"),
            "sinh" => Some("sinh"),
            "cosh" => Some("cosh"),
            "asinh" => Some("asinh"),
            "acosh" => Some("acosh"),
            "atanh" => Some("atanh"),
            "floor" => Some("floor"),
            "ceil" => Some("ceil"),
            "trunc" => Some("trunc"),
            "nearbyint" => Some("round"),
            _ => None,
        };
        if let Some(f) = simple {
            n(1)?;
            if !dtype.is_float() {
                return Err(self.unsupported(format!("T.{op} on {dtype}")));
            }
            return self.fcall(f, args, dtype, None);
        }
        Ok(match op {
            "asin" | "acos" => {
                // atan2 forms are more accurate than some drivers' asin / acos.
                n(1)?;
                let (x, w) = self.fcall("", args, dtype, None)?;
                let one_ = self.conv("1.0f", W::F32, w)?;
                let r = format!("sqrt(max({one_} - {x} * {x}, {}))", w.zero());
                let v = if op == "asin" {
                    format!("atan2({x}, {r})")
                } else {
                    format!("atan2({r}, {x})")
                };
                // Outside [-1, 1] the result is NaN (as on the host), not the clamped value.
                let nan = self.conv("bitcast<f32>(0x7fc00000u)", W::F32, w)?;
                (format!("select({v}, {nan}, abs({x}) > {one_})"), w)
            }
            "fabs" | "abs" => {
                n(1)?;
                let (s, w) = self.expr(&args[0])?;
                (format!("abs({s})"), w)
            }
            "exp10" => {
                n(1)?;
                let (s, w) = self.fcall("", args, dtype, None)?;
                let ten = self.conv("10.0f", W::F32, w)?;
                (format!("pow({ten}, {s})"), w)
            }
            "log10" => {
                n(1)?;
                let (s, w) = self.fcall("log2", args, dtype, None)?;
                let c = self.conv("0.30102999566398120f", W::F32, w)?;
                (format!("({s} * {c})"), w)
            }
            "log1p" => {
                n(1)?;
                let (s, w) = self.fcall("", args, dtype, None)?;
                let one_ = self.conv("1.0f", W::F32, w)?;
                (format!("log({one_} + {s})"), w)
            }
            "expm1" => {
                n(1)?;
                let (s, w) = self.fcall("exp", args, dtype, None)?;
                let one_ = self.conv("1.0f", W::F32, w)?;
                (format!("({s} - {one_})"), w)
            }
            "tanh" => {
                n(1)?;
                self.fcall("tanh_f32", args, dtype, Some("tanh_f32"))?
            }
            "sigmoid" => {
                n(1)?;
                self.fcall("sigmoid_f32", args, dtype, Some("sigmoid_f32"))?
            }
            "erf" => {
                n(1)?;
                self.fcall("erf_f32", args, dtype, Some("erf_f32"))?
            }
            "round" => {
                n(1)?;
                self.fcall("round_f32", args, dtype, Some("round_f32"))?
            }
            "pow" | "powf" => {
                n(2)?;
                self.fcall("pow_f32", args, dtype, Some("pow_f32"))?
            }
            "atan2" => {
                n(2)?;
                self.fcall("atan2", args, dtype, None)?
            }
            "copysign" => {
                n(2)?;
                self.fcall("copysign_f32", args, dtype, Some("copysign_f32"))?
            }
            "hypot" => {
                n(2)?;
                let (s, w) = self.fcall("", &args[..1], dtype, None)?;
                let (t, _) = self.fcall("", &args[1..], dtype, None)?;
                (format!("sqrt({s} * {s} + {t} * {t})"), w)
            }
            "fmod" => {
                n(2)?;
                let (s, w) = self.fcall("", &args[..1], dtype, None)?;
                let (t, _) = self.fcall("", &args[1..], dtype, None)?;
                (format!("({s} % {t})"), w)
            }
            "isnan" | "isinf" | "isfinite" => {
                n(1)?;
                let (s, w) = self.expr(&args[0])?;
                if !w.is_float() {
                    return Ok(((if op == "isfinite" { "true" } else { "false" }).to_string(), W::Bool));
                }
                let h = match op {
                    "isnan" => "isnan_f32",
                    "isinf" => "isinf_f32",
                    _ => "isfinite_f32",
                };
                self.helpers.insert(h);
                (format!("{h}({})", self.conv(&s, w, W::F32)?), W::Bool)
            }
            "if_then_else" => {
                n(3)?;
                let (c, cw) = self.expr(&args[0])?;
                self.lazy += 1;
                let arms = self.expr(&args[1]).and_then(|t| Ok((t, self.expr(&args[2])?)));
                self.lazy -= 1;
                let ((ts, tw), (fs, fw)) = arms?;
                let w = tw.max(fw);
                (
                    format!(
                        "select({}, {}, {})",
                        self.conv(&fs, fw, w)?,
                        self.conv(&ts, tw, w)?,
                        self.conv(&c, cw, W::Bool)?
                    ),
                    w,
                )
            }
            "likely" | "tvm_thread_invariant" | "assume" => {
                n(1)?;
                self.expr(&args[0])?
            }
            "max_value" | "min_value" => match math::limit(dtype, op == "max_value") {
                Some(math::Scalar::I(v)) => self.lit_int(v, dtype)?,
                Some(math::Scalar::F(v)) => self.lit_float(v, dtype)?,
                None => {
                    return Err(JitError::UnsupportedDtype {
                        dtype,
                        context: format!("for T.{op}"),
                    })
                }
            },
            "infinity" => self.lit_float(f64::INFINITY, dtype)?,
            "truncdiv" | "truncmod" | "floordiv" | "floormod" => {
                n(2)?;
                let bop = match op {
                    "truncdiv" => BinOp::Div,
                    "truncmod" => BinOp::Mod,
                    "floordiv" => BinOp::FloorDiv,
                    _ => BinOp::FloorMod,
                };
                self.binary(bop, &args[0], &args[1], dtype)?
            }
            "bitwise_and" | "bitwise_or" | "bitwise_xor" => {
                n(2)?;
                let (a, wa) = self.expr(&args[0])?;
                let (b, wb) = self.expr(&args[1])?;
                let w = wa.max(wb);
                let o = match op {
                    "bitwise_and" => "&",
                    "bitwise_or" => "|",
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
            "bitwise_not" => {
                n(1)?;
                let (a, w) = self.expr(&args[0])?;
                if w == W::Bool {
                    (format!("!{a}"), W::Bool)
                } else {
                    (self.wrap_small(format!("(~{a})"), dtype), w)
                }
            }
            "shift_left" | "shift_right" => {
                n(2)?;
                let (a, w) = self.expr(&args[0])?;
                let (b, wb) = self.expr(&args[1])?;
                let o = if op == "shift_left" { "<<" } else { ">>" };
                let sh = self.conv(&b, wb, W::U32)?;
                (self.wrap_small(format!("({a} {o} {sh})"), dtype), w)
            }
            "reinterpret" => {
                n(1)?;
                let (a, _) = self.expr(&args[0])?;
                let to = self.cty(dtype)?;
                (format!("bitcast<{}>({a})", to.name()), to)
            }
            _ => return Err(self.unsupported(format!("intrinsic T.{op}"))),
        })
    }
}
