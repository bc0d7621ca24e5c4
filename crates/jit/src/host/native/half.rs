//! `float16` and `bfloat16` in native code: a value lives in an `f32` register
//! and always holds a value of its dtype. Loads widen the stored bits exactly,
//! stores narrow them (exactly, since the value is representable), and every
//! arithmetic result is rounded to the dtype (round to nearest, ties to even),
//! inline with integer and float instructions.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, Endianness, InstBuilder, MemFlagsData, Value};

use super::gen::Gen;

/// The flags of a register `bitcast` (it takes only an endianness).
fn bits() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}
use super::Ty;

impl Gen<'_, '_> {
    fn f32_bits(&mut self, x: Value) -> Value {
        self.b.ins().bitcast(types::I32, bits(), x)
    }

    fn bits_f32(&mut self, u: Value) -> Value {
        self.b.ins().bitcast(types::F32, bits(), u)
    }

    /// Round the `f32` `x` to the precision of `t` (`F16` or `BF16`; other
    /// representations are returned unchanged). A NaN stays a quiet NaN.
    pub(super) fn round_half(&mut self, x: Value, t: Ty) -> Value {
        match t {
            Ty::F16 => self.round_f16(x),
            Ty::BF16 => self.round_bf16(x),
            _ => x,
        }
    }

    /// `x` rounded to `float16` (as `half::f16::from_f32(x).to_f32()`).
    fn round_f16(&mut self, x: Value) -> Value {
        let u = self.f32_bits(x);
        let sign = self.b.ins().band_imm_u(u, 0x8000_0000i64);
        let a = self.b.ins().band_imm_u(u, 0x7fff_ffff);
        // Normal results: round off the 13 low mantissa bits (a carry moves into
        // the exponent); past the largest finite value they overflow to infinity.
        let odd = self.b.ins().ushr_imm_u(a, 13);
        let odd = self.b.ins().band_imm_u(odd, 1);
        let n = self.b.ins().iadd_imm_u(a, 0xfff);
        let n = self.b.ins().iadd(n, odd);
        let n = self.b.ins().band_imm_u(n, 0x7fff_e000);
        let inf = self.b.ins().iconst(types::I32, 0x7f80_0000);
        let big = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, n, 0x4780_0000);
        let n = self.b.ins().select(big, inf, n);
        // Subnormal results (below 2^-14): multiples of 2^-24, which the `f32`
        // addition of 0.5 rounds to exactly.
        let ax = self.bits_f32(a);
        let half = self.b.ins().f32const(0.5);
        let s = self.b.ins().fadd(ax, half);
        let s = self.b.ins().fsub(s, half);
        let s = self.f32_bits(s);
        let small = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, a, 0x3880_0000);
        let r = self.b.ins().select(small, s, n);
        // NaN: quiet, payload cut to the `float16` mantissa.
        let nan = self.b.ins().bor_imm_u(a, 0x0040_0000);
        let nan = self.b.ins().band_imm_u(nan, 0x7fff_e000);
        let is_nan = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThan, a, 0x7f80_0000);
        let r = self.b.ins().select(is_nan, nan, r);
        let r = self.b.ins().bor(r, sign);
        self.bits_f32(r)
    }

    /// `x` rounded to `bfloat16` (as `half::bf16::from_f32(x).to_f32()`).
    fn round_bf16(&mut self, x: Value) -> Value {
        let u = self.f32_bits(x);
        let odd = self.b.ins().ushr_imm_u(u, 16);
        let odd = self.b.ins().band_imm_u(odd, 1);
        let n = self.b.ins().iadd_imm_u(u, 0x7fff);
        let n = self.b.ins().iadd(n, odd);
        let n = self.b.ins().band_imm_u(n, 0xffff_0000i64);
        let a = self.b.ins().band_imm_u(u, 0x7fff_ffff);
        let nan = self.b.ins().bor_imm_u(u, 0x0040_0000);
        let nan = self.b.ins().band_imm_u(nan, 0xffff_0000i64);
        let is_nan = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThan, a, 0x7f80_0000);
        let r = self.b.ins().select(is_nan, nan, n);
        self.bits_f32(r)
    }

    /// The `f32` value of the 16 stored bits `h` (an `i32`) of a `t` element.
    pub(super) fn half_from_bits(&mut self, h: Value, t: Ty) -> Value {
        if t == Ty::BF16 {
            let u = self.b.ins().ishl_imm_u(h, 16);
            return self.bits_f32(u);
        }
        let a = self.b.ins().band_imm_u(h, 0x7fff);
        let m = self.b.ins().ishl_imm_u(a, 13);
        // Finite values (subnormals included): the bits as an `f32` scaled by 2^112.
        let f = self.bits_f32(m);
        let scale = self.b.ins().f32const(f32::from_bits(0x7780_0000));
        let f = self.b.ins().fmul(f, scale);
        let f = self.f32_bits(f);
        let special = self.b.ins().bor_imm_u(m, 0x7f80_0000);
        let is_special = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, a, 0x7c00);
        let r = self.b.ins().select(is_special, special, f);
        let sign = self.b.ins().band_imm_u(h, 0x8000);
        let sign = self.b.ins().ishl_imm_u(sign, 16);
        let r = self.b.ins().bor(r, sign);
        self.bits_f32(r)
    }

    /// The 16 bits (in an `i32`) of the `t` value `x` (an `f32` holding a value
    /// of the dtype, so no rounding happens).
    pub(super) fn half_to_bits(&mut self, x: Value, t: Ty) -> Value {
        let u = self.f32_bits(x);
        if t == Ty::BF16 {
            return self.b.ins().ushr_imm_u(u, 16);
        }
        let sign = self.b.ins().ushr_imm_u(u, 16);
        let sign = self.b.ins().band_imm_u(sign, 0x8000);
        let a = self.b.ins().band_imm_u(u, 0x7fff_ffff);
        // Normal: rebias the exponent.
        let n = self.b.ins().ushr_imm_u(a, 13);
        let n = self.b.ins().iadd_imm_s(n, -((127 - 15) << 10));
        // Subnormal: the count of 2^-24 steps, as `float16` subnormal bits.
        let ax = self.bits_f32(a);
        let half = self.b.ins().f32const(0.5);
        let s = self.b.ins().fadd(ax, half);
        let s = self.f32_bits(s);
        let s = self.b.ins().iadd_imm_s(s, -0x3f00_0000);
        let small = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, a, 0x3880_0000);
        let r = self.b.ins().select(small, s, n);
        // Infinity and NaN (payload cut, quiet).
        let m = self.b.ins().ushr_imm_u(a, 13);
        let m = self.b.ins().band_imm_u(m, 0x3ff);
        let nan = self.b.ins().bor_imm_u(m, 0x7e00);
        let is_nan = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThan, a, 0x7f80_0000);
        let inf = self.b.ins().iconst(types::I32, 0x7c00);
        let is_inf = self.b.ins().icmp_imm_u(IntCC::Equal, a, 0x7f80_0000);
        let r = self.b.ins().select(is_inf, inf, r);
        let r = self.b.ins().select(is_nan, nan, r);
        self.b.ins().bor(r, sign)
    }
}

/// The same conversions on four lanes (`F32X4` values, `I32X4` bits), for the
/// vector loops of `simd.rs`: lane by lane the bits of the scalar functions above.
impl Gen<'_, '_> {
    fn splat_i32(&mut self, c: u32) -> Value {
        let k = self.b.ins().iconst(types::I32, i64::from(c as i32));
        self.b.ins().splat(types::I32X4, k)
    }

    fn splat_f32(&mut self, c: f32) -> Value {
        let k = self.b.ins().f32const(c);
        self.b.ins().splat(types::F32X4, k)
    }

    fn x4_bits(&mut self, x: Value) -> Value {
        self.b.ins().bitcast(types::I32X4, bits(), x)
    }

    fn x4_f32(&mut self, u: Value) -> Value {
        self.b.ins().bitcast(types::F32X4, bits(), u)
    }

    fn and_x4(&mut self, u: Value, c: u32) -> Value {
        let k = self.splat_i32(c);
        self.b.ins().band(u, k)
    }

    fn or_x4(&mut self, u: Value, c: u32) -> Value {
        let k = self.splat_i32(c);
        self.b.ins().bor(u, k)
    }

    fn add_x4(&mut self, u: Value, c: u32) -> Value {
        let k = self.splat_i32(c);
        self.b.ins().iadd(u, k)
    }

    fn ushr_x4(&mut self, u: Value, n: i64) -> Value {
        let k = self.b.ins().iconst(types::I32, n);
        self.b.ins().ushr(u, k)
    }

    fn shl_x4(&mut self, u: Value, n: i64) -> Value {
        let k = self.b.ins().iconst(types::I32, n);
        self.b.ins().ishl(u, k)
    }

    /// The lane mask of `u cc c` for lanes and `c` below 2^31 (a signed compare).
    fn cmp_x4(&mut self, cc: IntCC, u: Value, c: u32) -> Value {
        let k = self.splat_i32(c);
        self.b.ins().icmp(cc, u, k)
    }

    /// [`Gen::round_half`] of four lanes.
    pub(super) fn round_half_x4(&mut self, x: Value, t: Ty) -> Value {
        match t {
            Ty::F16 => self.round_f16_x4(x),
            Ty::BF16 => self.round_bf16_x4(x),
            _ => x,
        }
    }

    fn round_f16_x4(&mut self, x: Value) -> Value {
        let u = self.x4_bits(x);
        let sign = self.and_x4(u, 0x8000_0000);
        let a = self.and_x4(u, 0x7fff_ffff);
        let odd = self.ushr_x4(a, 13);
        let odd = self.and_x4(odd, 1);
        let n = self.add_x4(a, 0xfff);
        let n = self.b.ins().iadd(n, odd);
        // The wrapped sum of a NaN's bits is masked below 2^31 and replaced later.
        let n = self.and_x4(n, 0x7fff_e000);
        let inf = self.splat_i32(0x7f80_0000);
        let big = self.cmp_x4(IntCC::SignedGreaterThanOrEqual, n, 0x4780_0000);
        let n = self.b.ins().bitselect(big, inf, n);
        let ax = self.x4_f32(a);
        let half = self.splat_f32(0.5);
        let s = self.b.ins().fadd(ax, half);
        let s = self.b.ins().fsub(s, half);
        let s = self.x4_bits(s);
        let small = self.cmp_x4(IntCC::SignedLessThan, a, 0x3880_0000);
        let r = self.b.ins().bitselect(small, s, n);
        let nan = self.or_x4(a, 0x0040_0000);
        let nan = self.and_x4(nan, 0x7fff_e000);
        let is_nan = self.cmp_x4(IntCC::SignedGreaterThan, a, 0x7f80_0000);
        let r = self.b.ins().bitselect(is_nan, nan, r);
        let r = self.b.ins().bor(r, sign);
        self.x4_f32(r)
    }

    fn round_bf16_x4(&mut self, x: Value) -> Value {
        let u = self.x4_bits(x);
        let odd = self.ushr_x4(u, 16);
        let odd = self.and_x4(odd, 1);
        let n = self.add_x4(u, 0x7fff);
        let n = self.b.ins().iadd(n, odd);
        let n = self.and_x4(n, 0xffff_0000);
        let a = self.and_x4(u, 0x7fff_ffff);
        let nan = self.or_x4(u, 0x0040_0000);
        let nan = self.and_x4(nan, 0xffff_0000);
        let is_nan = self.cmp_x4(IntCC::SignedGreaterThan, a, 0x7f80_0000);
        let r = self.b.ins().bitselect(is_nan, nan, n);
        self.x4_f32(r)
    }

    /// [`Gen::half_from_bits`] of four lanes (`I32X4` holding 16-bit patterns).
    pub(super) fn half_from_bits_x4(&mut self, h: Value, t: Ty) -> Value {
        if t == Ty::BF16 {
            let u = self.shl_x4(h, 16);
            return self.x4_f32(u);
        }
        let a = self.and_x4(h, 0x7fff);
        let m = self.shl_x4(a, 13);
        let f = self.x4_f32(m);
        let scale = self.splat_f32(f32::from_bits(0x7780_0000));
        let f = self.b.ins().fmul(f, scale);
        let f = self.x4_bits(f);
        let special = self.or_x4(m, 0x7f80_0000);
        let is_special = self.cmp_x4(IntCC::SignedGreaterThanOrEqual, a, 0x7c00);
        let r = self.b.ins().bitselect(is_special, special, f);
        let sign = self.and_x4(h, 0x8000);
        let sign = self.shl_x4(sign, 16);
        let r = self.b.ins().bor(r, sign);
        self.x4_f32(r)
    }

    /// [`Gen::half_to_bits`] of four lanes (values of the dtype): `I32X4` bits.
    pub(super) fn half_to_bits_x4(&mut self, x: Value, t: Ty) -> Value {
        let u = self.x4_bits(x);
        if t == Ty::BF16 {
            return self.ushr_x4(u, 16);
        }
        let sign = self.ushr_x4(u, 16);
        let sign = self.and_x4(sign, 0x8000);
        let a = self.and_x4(u, 0x7fff_ffff);
        let n = self.ushr_x4(a, 13);
        let n = self.add_x4(n, (-((127 - 15) << 10)) as u32);
        let ax = self.x4_f32(a);
        let half = self.splat_f32(0.5);
        let s = self.b.ins().fadd(ax, half);
        let s = self.x4_bits(s);
        let s = self.add_x4(s, (-0x3f00_0000i32) as u32);
        let small = self.cmp_x4(IntCC::SignedLessThan, a, 0x3880_0000);
        let r = self.b.ins().bitselect(small, s, n);
        let m = self.ushr_x4(a, 13);
        let m = self.and_x4(m, 0x3ff);
        let nan = self.or_x4(m, 0x7e00);
        let is_nan = self.cmp_x4(IntCC::SignedGreaterThan, a, 0x7f80_0000);
        let inf = self.splat_i32(0x7c00);
        let is_inf = self.cmp_x4(IntCC::Equal, a, 0x7f80_0000);
        let r = self.b.ins().bitselect(is_inf, inf, r);
        let r = self.b.ins().bitselect(is_nan, nan, r);
        self.b.ins().bor(r, sign)
    }

    /// The `float16` bits (an `I32X4`) of four `f32` lanes rounded to nearest, ties
    /// to even: in one step the bits `half_to_bits_x4(round_half_x4(x, F16))` gives.
    pub(super) fn f16_bits_rne_x4(&mut self, x: Value) -> Value {
        let u = self.x4_bits(x);
        let sign = self.ushr_x4(u, 16);
        let sign = self.and_x4(sign, 0x8000);
        let a = self.and_x4(u, 0x7fff_ffff);
        // Normal: round off the 13 low mantissa bits, then rebias the exponent (a
        // carry moves into it).
        let odd = self.ushr_x4(a, 13);
        let odd = self.and_x4(odd, 1);
        let n = self.add_x4(a, 0xfff);
        let n = self.b.ins().iadd(n, odd);
        let n = self.ushr_x4(n, 13);
        let n = self.add_x4(n, (-((127 - 15) << 10)) as u32);
        // Below 2^-14: the `f32` addition of 0.5 rounds to a multiple of 2^-24.
        let ax = self.x4_f32(a);
        let half = self.splat_f32(0.5);
        let s = self.b.ins().fadd(ax, half);
        let s = self.x4_bits(s);
        let s = self.add_x4(s, (-0x3f00_0000i32) as u32);
        let small = self.cmp_x4(IntCC::SignedLessThan, a, 0x3880_0000);
        let r = self.b.ins().bitselect(small, s, n);
        // From 65520 (halfway past the largest finite value) up: infinity.
        let inf = self.splat_i32(0x7c00);
        let big = self.cmp_x4(IntCC::SignedGreaterThanOrEqual, a, 0x477f_f000);
        let r = self.b.ins().bitselect(big, inf, r);
        // NaN: quiet, the top of the payload kept.
        let m = self.ushr_x4(a, 13);
        let m = self.and_x4(m, 0x3ff);
        let nan = self.or_x4(m, 0x7e00);
        let is_nan = self.cmp_x4(IntCC::SignedGreaterThan, a, 0x7f80_0000);
        let r = self.b.ins().bitselect(is_nan, nan, r);
        self.b.ins().bor(r, sign)
    }
}
