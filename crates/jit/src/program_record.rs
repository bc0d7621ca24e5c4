//! The stored form of a compiled GPU program (see `disk_cache`): the kernels of a
//! [`ProgramSource`] (WGSL, bindings, uniform fields, launch grid, bounds-check
//! sites, loop-trip bound) with every variable that gets a value at dispatch written
//! as its position among the lowered function's dispatch variables (scalar
//! parameters, then shape variables), and the key that identifies it.
//!
//! The lowered function itself is not stored: a hit lowers the PrimFunc again (which
//! is deterministic and cheap) and maps the positions to its variables. Decoding
//! checks every length, tag and index and never panics; a record that does not
//! decode, or does not fit the lowered function, is a miss.

use std::sync::Arc;

use relax_ir::structural::StructuralEqual;
use relax_ir::tir::{BinOp, PrimExpr, PrimExprKind, TirVar};
use relax_ir::{DataType, PrimFunc, TypeCode};

use crate::lower::{LoweredFunc, ParamSlot};
use crate::program::ProgramSource;
use crate::schedule::{Grid, ScheduleOptions};
use crate::wgsl::{Access, BindingInfo, BufRef, DeviceCaps, KernelSource, StorageTy, UniformField, UniformTy};

/// An identifier of this build of the compiler: the crate version and a hash of
/// the sources that decide what it generates (set by the build script).
pub const BUILD_ID: &str = concat!(env!("CARGO_PKG_VERSION"), "+", env!("RELAX_JIT_SOURCE_HASH"));

/// The full cache key of `f` compiled with `caps` and `options`: this build, the
/// device capabilities, the schedule options and the PrimFunc's structure up to
/// renaming (its name aside, as the in-memory cache).
pub fn program_key(f: &PrimFunc, caps: &DeviceCaps, options: &ScheduleOptions) -> Vec<u8> {
    let mut k = Vec::new();
    k.extend_from_slice(b"relax-jit gpu program\0");
    k.extend_from_slice(BUILD_ID.as_bytes());
    k.push(0);
    k.extend_from_slice(format!("{caps:?}\0{options:?}\0").as_bytes());
    k.extend_from_slice(
        &StructuralEqual::new()
            .ignore_global_symbol(true)
            .fingerprint_prim_func(f),
    );
    k
}

/// The variables a dispatch gives values to, in order: scalar parameters, then
/// shape variables.
fn dispatch_vars(lf: &LoweredFunc) -> Vec<TirVar> {
    let mut v: Vec<TirVar> = lf
        .params
        .iter()
        .filter_map(|p| match p {
            ParamSlot::Scalar(v) => Some(v.clone()),
            ParamSlot::Buffer { .. } => None,
        })
        .collect();
    v.extend(lf.shape_binds.iter().map(|b| b.var.clone()));
    v
}

/// The record of `src`'s kernels; `None` when a kernel refers to something the
/// record cannot express (such a program is simply not stored).
pub fn encode(src: &ProgramSource) -> Option<Vec<u8>> {
    let vars = dispatch_vars(&src.lowered);
    let mut w = Writer {
        out: Vec::new(),
        vars: &vars,
    };
    w.u32(src.kernels.len() as u32);
    for k in &src.kernels {
        w.str(&k.name);
        w.str(&k.wgsl);
        for d in k.workgroup_size {
            w.u32(d);
        }
        w.u32(k.bindings.len() as u32);
        for b in &k.bindings {
            match b.buf {
                BufRef::Param(i) => {
                    w.u8(0);
                    w.u64(i as u64);
                }
                BufRef::Scratch(i) => {
                    w.u8(1);
                    w.u64(i as u64);
                }
                BufRef::Bounds => w.u8(2),
            }
            w.str(&b.name);
            w.dtype(b.dtype);
            w.u8(storage_code(b.storage));
            w.u8(match b.access {
                Access::Read => 0,
                Access::ReadWrite => 1,
            });
            match b.chunk {
                Some((first, count)) => {
                    w.u8(1);
                    w.u64(first);
                    w.u64(count);
                }
                None => w.u8(0),
            }
            w.u8(b.vec4 as u8);
        }
        w.u32(k.uniforms.len() as u32);
        for u in &k.uniforms {
            w.var(&u.var)?;
            w.str(&u.name);
            w.u8(match u.ty {
                UniformTy::I32 => 0,
                UniformTy::U32 => 1,
                UniformTy::F32 => 2,
            });
        }
        match &k.grid {
            Grid::Linear(e) => {
                w.u8(0);
                w.expr(e)?;
            }
            Grid::Dims(d) => {
                w.u8(1);
                for e in d {
                    w.expr(e)?;
                }
            }
        }
        w.u32(k.oob_sites.len() as u32);
        for s in &k.oob_sites {
            w.str(s);
        }
        match &k.loop_trips {
            Some(e) => {
                w.u8(1);
                w.expr(e)?;
            }
            None => w.u8(0),
        }
    }
    Some(w.out)
}

/// The program of the record `bytes` for `lowered` (the PrimFunc lowered again);
/// `None` when the record is damaged or does not fit `lowered`.
pub fn decode(bytes: &[u8], lowered: Arc<LoweredFunc>) -> Option<ProgramSource> {
    let vars = dispatch_vars(&lowered);
    let mut r = Reader {
        b: bytes,
        vars: &vars,
        depth: 0,
    };
    let n = r.len()?;
    let mut kernels = Vec::with_capacity(n.min(1024));
    let params = lowered.params.len() as u64;
    let scratch = lowered.scratch.len() as u64;
    for _ in 0..n {
        let name = r.str()?;
        let wgsl = r.str()?;
        let workgroup_size = [r.u32()?, r.u32()?, r.u32()?];
        let nb = r.len()?;
        let mut bindings = Vec::with_capacity(nb.min(1024));
        for _ in 0..nb {
            let buf = match r.u8()? {
                0 => BufRef::Param(usize::try_from(r.u64()?).ok().filter(|&i| (i as u64) < params)?),
                1 => BufRef::Scratch(usize::try_from(r.u64()?).ok().filter(|&i| (i as u64) < scratch)?),
                2 => BufRef::Bounds,
                _ => return None,
            };
            let name = r.str()?;
            let dtype = r.dtype()?;
            let storage = storage_of(r.u8()?)?;
            let access = match r.u8()? {
                0 => Access::Read,
                1 => Access::ReadWrite,
                _ => return None,
            };
            let chunk = match r.u8()? {
                0 => None,
                1 => Some((r.u64()?, r.u64()?)),
                _ => return None,
            };
            let vec4 = r.bool()?;
            bindings.push(BindingInfo {
                buf,
                name,
                dtype,
                storage,
                access,
                chunk,
                vec4,
            });
        }
        let nu = r.len()?;
        let mut uniforms = Vec::with_capacity(nu.min(1024));
        for _ in 0..nu {
            let var = r.var()?;
            let name = r.str()?;
            let ty = match r.u8()? {
                0 => UniformTy::I32,
                1 => UniformTy::U32,
                2 => UniformTy::F32,
                _ => return None,
            };
            uniforms.push(UniformField { var, name, ty });
        }
        let grid = match r.u8()? {
            0 => Grid::Linear(r.expr()?),
            1 => Grid::Dims([r.expr()?, r.expr()?, r.expr()?]),
            _ => return None,
        };
        let ns = r.len()?;
        let mut oob_sites = Vec::with_capacity(ns.min(1024));
        for _ in 0..ns {
            oob_sites.push(r.str()?);
        }
        let loop_trips = match r.u8()? {
            0 => None,
            1 => Some(r.expr()?),
            _ => return None,
        };
        kernels.push(KernelSource {
            name,
            wgsl,
            workgroup_size,
            bindings,
            uniforms,
            grid,
            oob_sites,
            loop_trips,
        });
    }
    if !r.b.is_empty() {
        return None;
    }
    Some(ProgramSource { lowered, kernels })
}

fn storage_code(s: StorageTy) -> u8 {
    match s {
        StorageTy::F16 => 0,
        StorageTy::F32 => 1,
        StorageTy::F64 => 2,
        StorageTy::I32 => 3,
        StorageTy::U32 => 4,
        StorageTy::I64 => 5,
        StorageTy::U64 => 6,
    }
}

fn storage_of(c: u8) -> Option<StorageTy> {
    Some(match c {
        0 => StorageTy::F16,
        1 => StorageTy::F32,
        2 => StorageTy::F64,
        3 => StorageTy::I32,
        4 => StorageTy::U32,
        5 => StorageTy::I64,
        6 => StorageTy::U64,
        _ => return None,
    })
}

/// Every binary operator, by its code in a record.
const BIN_OPS: [BinOp; 17] = [
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Div,
    BinOp::Mod,
    BinOp::FloorDiv,
    BinOp::FloorMod,
    BinOp::Min,
    BinOp::Max,
    BinOp::Eq,
    BinOp::Ne,
    BinOp::Lt,
    BinOp::Le,
    BinOp::Gt,
    BinOp::Ge,
    BinOp::And,
    BinOp::Or,
];

fn bin_code(op: BinOp) -> u8 {
    match op {
        BinOp::Add => 0,
        BinOp::Sub => 1,
        BinOp::Mul => 2,
        BinOp::Div => 3,
        BinOp::Mod => 4,
        BinOp::FloorDiv => 5,
        BinOp::FloorMod => 6,
        BinOp::Min => 7,
        BinOp::Max => 8,
        BinOp::Eq => 9,
        BinOp::Ne => 10,
        BinOp::Lt => 11,
        BinOp::Le => 12,
        BinOp::Gt => 13,
        BinOp::Ge => 14,
        BinOp::And => 15,
        BinOp::Or => 16,
    }
}

struct Writer<'a> {
    out: Vec<u8>,
    vars: &'a [TirVar],
}

impl Writer<'_> {
    fn u8(&mut self, x: u8) {
        self.out.push(x);
    }
    fn u32(&mut self, x: u32) {
        self.out.extend_from_slice(&x.to_le_bytes());
    }
    fn u64(&mut self, x: u64) {
        self.out.extend_from_slice(&x.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.out.extend_from_slice(s.as_bytes());
    }
    fn dtype(&mut self, d: DataType) {
        self.u8(match d.code {
            TypeCode::Int => 0,
            TypeCode::UInt => 1,
            TypeCode::Float => 2,
            TypeCode::BFloat => 3,
            TypeCode::Handle => 4,
            TypeCode::Float8E4M3FN => 5,
            TypeCode::Float8E4M3FNUZ => 6,
            TypeCode::Float8E5M2 => 7,
            TypeCode::Float8E5M2FNUZ => 8,
            TypeCode::Float8E8M0FNU => 9,
            TypeCode::Float4E2M1FN => 10,
        });
        self.u8(d.bits);
        self.out.extend_from_slice(&d.lanes.to_le_bytes());
    }
    /// A dispatch variable by its position; any other variable (one bound inside
    /// the kernel) by name and type: it never has a value at dispatch, and neither
    /// has the fresh variable it decodes to.
    fn var(&mut self, v: &TirVar) -> Option<()> {
        match self.vars.iter().position(|x| x.id() == v.id()) {
            Some(i) => {
                self.u8(0);
                self.u32(i as u32);
            }
            None => {
                self.u8(1);
                self.str(v.name());
                self.dtype(v.dtype());
            }
        }
        Some(())
    }
    fn expr(&mut self, e: &PrimExpr) -> Option<()> {
        match e.kind() {
            PrimExprKind::IntImm { value, dtype } => {
                self.u8(0);
                self.dtype(*dtype);
                self.u64(*value as u64);
            }
            PrimExprKind::FloatImm { value, dtype } => {
                self.u8(1);
                self.dtype(*dtype);
                self.u64(value.to_bits());
            }
            PrimExprKind::Var(v) => {
                self.u8(2);
                self.var(v)?;
            }
            PrimExprKind::Cast { dtype, value } => {
                self.u8(3);
                self.dtype(*dtype);
                self.expr(value)?;
            }
            PrimExprKind::Binary { op, a, b } => {
                self.u8(4);
                self.u8(bin_code(*op));
                self.expr(a)?;
                self.expr(b)?;
            }
            PrimExprKind::Not(a) => {
                self.u8(5);
                self.expr(a)?;
            }
            PrimExprKind::Select { cond, t, f } => {
                self.u8(6);
                self.expr(cond)?;
                self.expr(t)?;
                self.expr(f)?;
            }
            PrimExprKind::Call { op, dtype, args } => {
                self.u8(7);
                self.str(op.name());
                self.dtype(*dtype);
                self.u32(args.len() as u32);
                for a in args {
                    self.expr(a)?;
                }
            }
            // Not expected in launch grids and loop bounds: such a program is not stored.
            _ => return None,
        }
        Some(())
    }
}

/// Deepest expression a record may hold (a damaged record cannot overflow the stack).
const MAX_DEPTH: u32 = 200;

struct Reader<'a> {
    b: &'a [u8],
    vars: &'a [TirVar],
    depth: u32,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if n > self.b.len() {
            return None;
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn bool(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    /// A count of items that each take at least one byte: at most the bytes left.
    fn len(&mut self) -> Option<usize> {
        let n = self.u32()? as usize;
        (n <= self.b.len()).then_some(n)
    }
    fn str(&mut self) -> Option<String> {
        let n = usize::try_from(self.u64()?).ok()?;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
    fn dtype(&mut self) -> Option<DataType> {
        let code = match self.u8()? {
            0 => TypeCode::Int,
            1 => TypeCode::UInt,
            2 => TypeCode::Float,
            3 => TypeCode::BFloat,
            4 => TypeCode::Handle,
            5 => TypeCode::Float8E4M3FN,
            6 => TypeCode::Float8E4M3FNUZ,
            7 => TypeCode::Float8E5M2,
            8 => TypeCode::Float8E5M2FNUZ,
            9 => TypeCode::Float8E8M0FNU,
            10 => TypeCode::Float4E2M1FN,
            _ => return None,
        };
        let bits = self.u8()?;
        let lanes = u16::from_le_bytes(self.take(2)?.try_into().ok()?);
        Some(DataType::new(code, bits, lanes))
    }
    fn var(&mut self) -> Option<TirVar> {
        match self.u8()? {
            0 => {
                let i = self.u32()? as usize;
                self.vars.get(i).cloned()
            }
            1 => {
                let name = self.str()?;
                Some(TirVar::new(name, self.dtype()?))
            }
            _ => None,
        }
    }
    fn expr(&mut self) -> Option<PrimExpr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let e = match self.u8()? {
            0 => {
                let dtype = self.dtype()?;
                PrimExpr::int_of(self.u64()? as i64, dtype)
            }
            1 => {
                let dtype = self.dtype()?;
                PrimExpr::float_of(f64::from_bits(self.u64()?), dtype)
            }
            2 => PrimExpr::new(PrimExprKind::Var(self.var()?)),
            3 => {
                let dtype = self.dtype()?;
                let value = self.expr()?;
                PrimExpr::new(PrimExprKind::Cast { dtype, value })
            }
            4 => {
                let op = *BIN_OPS.get(self.u8()? as usize)?;
                let a = self.expr()?;
                let b = self.expr()?;
                PrimExpr::binary(op, a, b)
            }
            5 => PrimExpr::new(PrimExprKind::Not(self.expr()?)),
            6 => {
                let cond = self.expr()?;
                let t = self.expr()?;
                let f = self.expr()?;
                PrimExpr::new(PrimExprKind::Select { cond, t, f })
            }
            7 => {
                let op = self.str()?;
                let dtype = self.dtype()?;
                let n = self.len()?;
                let mut args = Vec::with_capacity(n);
                for _ in 0..n {
                    args.push(self.expr()?);
                }
                PrimExpr::call(op, dtype, args)
            }
            _ => return None,
        };
        self.depth -= 1;
        Some(e)
    }
}
