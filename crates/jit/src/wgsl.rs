//! WGSL emission for scheduled kernels, validated with naga.
//!
//! Conventions (the dispatcher in [`crate::gpu`] follows them):
//! * storage buffer `i` at `@group(0) @binding(i)`; all scalar parameters and
//!   symbolic shape variables in ONE uniform struct after them, so one pipeline
//!   serves every shape;
//! * `int64` index arithmetic is computed in `i32` (the dispatcher checks every
//!   extent fits); `int64` data (loads of `int64` tensors, float-to-int casts) uses
//!   `i64` where the device has it;
//! * `bool`, `int8` and `int16` elements are stored widened to one `i32` word,
//!   `uint8` / `uint16` to one `u32` word; `float16` uses `SHADER_F16` when the
//!   adapter has it, else is stored widened to `f32` words and computed in `f32`,
//!   rounded to float16 at every cast and store;
//!   `float64` / `int64` need `SHADER_F64` / `SHADER_INT64`.

use relax_ir::tir::Intrinsic;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write;

use relax_ir::tir::{BinOp, Buffer, For, PrimExpr, PrimExprKind, Stmt, TirVar};
use relax_ir::{DataType, TypeCode};

use crate::error::{JitError, Result};
use crate::expr;
use crate::lower::{LoweredFunc, ParamSlot};
use crate::math;
use crate::schedule::{sanitize, Builtin, GpuKernel};

mod bounds;
mod intrinsics;
mod types;

pub use bounds::{FLAG_WORDS, SITE_BASE_DECL};
use types::MAX_CHUNKS;
pub use types::*;

/// Compute types of expressions in the shader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum W {
    Bool,
    I32,
    U32,
    I64,
    U64,
    F16,
    F32,
    F64,
}

impl W {
    fn name(self) -> &'static str {
        match self {
            W::Bool => "bool",
            W::I32 => "i32",
            W::U32 => "u32",
            W::I64 => "i64",
            W::U64 => "u64",
            W::F16 => "f16",
            W::F32 => "f32",
            W::F64 => "f64",
        }
    }
    fn is_float(self) -> bool {
        matches!(self, W::F16 | W::F32 | W::F64)
    }
    fn zero(self) -> &'static str {
        match self {
            W::Bool => "false",
            W::I32 => "0i",
            W::U32 => "0u",
            W::I64 => "0li",
            W::U64 => "0lu",
            W::F16 => "0.0h",
            W::F32 => "0.0f",
            W::F64 => "0.0lf",
        }
    }
}

struct Em<'a> {
    caps: DeviceCaps,
    func: String,
    out: String,
    ind: usize,
    vars: HashMap<u64, (String, W)>,
    declared: HashSet<String>,
    bufs: HashMap<u64, (String, DataType, StorageTy)>,
    /// Buffers bound in chunks: elements per chunk (accessed through `ld_`/`st_` helpers).
    chunked: HashMap<u64, i64>,
    /// Buffers with a `vec4` binding: its name.
    vec4_bufs: HashMap<u64, String>,
    chunk_fns: Vec<String>,
    written: HashSet<u64>,
    locals: HashMap<u64, (String, DataType, W)>,
    workgroup_decls: Vec<String>,
    helpers: BTreeSet<&'static str>,
    uses_f16: bool,
    /// The kernel reads subgroup builtins or calls subgroup operations.
    uses_subgroups: bool,
    lf: &'a LoweredFunc,
    /// Bounds-check sites (see `bounds`).
    oob_sites: Vec<String>,
    /// Depth of `select` arms being emitted (accesses there are not checked).
    lazy: usize,
    /// Variables whose value varies across threads or iterations (see `Em::varies`).
    varying: HashSet<u64>,
    /// Depth of int64 comparisons being emitted (their int64 operands use i64).
    wide: usize,
}

/// Emit (and validate) the WGSL of one scheduled kernel.
pub fn emit_kernel(lf: &LoweredFunc, k: &GpuKernel, caps: &DeviceCaps) -> Result<KernelSource> {
    let mut em = Em {
        caps: *caps,
        func: lf.name.clone(),
        out: String::new(),
        ind: 1,
        vars: HashMap::new(),
        declared: HashSet::new(),
        bufs: HashMap::new(),
        chunked: HashMap::new(),
        vec4_bufs: HashMap::new(),
        chunk_fns: Vec::new(),
        written: HashSet::new(),
        locals: HashMap::new(),
        workgroup_decls: Vec::new(),
        helpers: BTreeSet::new(),
        uses_f16: false,
        uses_subgroups: false,
        lf,
        oob_sites: Vec::new(),
        lazy: 0,
        varying: HashSet::new(),
        wide: 0,
    };
    // Storage bindings: every global buffer the kernel touches, in parameter order.
    let mut used: HashSet<u64> = HashSet::new();
    // Loads of each buffer, and of those the ones that are vec4 loads.
    let mut loads: HashMap<u64, usize> = HashMap::new();
    let mut vec4_src: HashMap<u64, usize> = HashMap::new();
    expr::visit_stmts(&k.body, &mut |s| {
        if let Stmt::BufferStore { buffer, .. } = s {
            used.insert(buffer.id());
            em.written.insert(buffer.id());
        }
        if let Some((_, src, _)) = vload4_parts(s) {
            *vec4_src.entry(src.id()).or_default() += 1;
        }
    });
    expr::visit_stmt_exprs(&k.body, &mut |e| {
        expr::visit_expr(e, &mut |x| {
            if let PrimExprKind::BufferLoad { buffer, .. } = x.kind() {
                used.insert(buffer.id());
                *loads.entry(buffer.id()).or_default() += 1;
            }
        })
    });
    let mut bindings = Vec::new();
    let mut globals: Vec<(BufRef, &Buffer)> = lf
        .params
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            ParamSlot::Buffer { flat, .. } => Some((BufRef::Param(i), flat)),
            _ => None,
        })
        .collect();
    globals.extend(lf.scratch.iter().enumerate().map(|(i, b)| (BufRef::Scratch(i), b)));
    for (r, b) in globals {
        if !used.contains(&b.id()) {
            continue;
        }
        let st = StorageTy::of(b.dtype(), caps)?;
        if st == StorageTy::F16 {
            em.uses_f16 = true;
        }
        let access = if em.written.contains(&b.id()) {
            Access::ReadWrite
        } else {
            Access::Read
        };
        let numel = b.shape().first().and_then(|e| e.as_int()).unwrap_or(0).max(0) as u64;
        if numel > i32::MAX as u64 {
            return Err(JitError::TooLarge(format!(
                "buffer `{}` has {numel} elements (GPU kernels index with 32 bits)",
                b.name()
            )));
        }
        let chunks = caps.chunk_elems(numel, st);
        if vec4_src.contains_key(&b.id())
            && !em.written.contains(&b.id())
            && chunks.is_none()
            && st == StorageTy::F32
            && numel.is_multiple_of(4)
        {
            let v4 = format!("b{}_{}_v4", bindings.len(), sanitize(b.name()));
            em.vec4_bufs.insert(b.id(), v4.clone());
            bindings.push(BindingInfo {
                buf: r,
                name: v4,
                dtype: b.dtype(),
                storage: st,
                access: Access::Read,
                chunk: None,
                vec4: true,
            });
            // Read only through its vec4 binding: no scalar binding.
            if loads.get(&b.id()) == vec4_src.get(&b.id()) {
                continue;
            }
        }
        let name = format!("b{}_{}", bindings.len(), sanitize(b.name()));
        em.bufs.insert(b.id(), (name.clone(), b.dtype(), st));
        match chunks {
            None => bindings.push(BindingInfo {
                buf: r,
                name,
                dtype: b.dtype(),
                storage: st,
                access,
                chunk: None,
                vec4: false,
            }),
            Some(per) => {
                let n = numel.div_ceil(per);
                // Chunks are indexed with i32 and each one is a binding: a tensor that
                // needs more than a few is one no adapter can bind.
                if n > MAX_CHUNKS || numel > i32::MAX as u64 {
                    return Err(JitError::TooLarge(format!(
                        "buffer `{}` of {numel} elements ({} bytes) needs {n} bindings of at most {} bytes; at most {MAX_CHUNKS} are supported",
                        b.name(),
                        numel.saturating_mul(st.bytes() as u64),
                        caps.max_binding_bytes
                    )));
                }
                let t = st.wty().name();
                let mut ld = format!("fn ld_{name}(i: i32) -> {t} {{\n");
                let mut stf = format!("fn st_{name}(i: i32, v: {t}) {{\n");
                for c in 0..n {
                    let part = format!("{name}_c{c}");
                    let lo = c * per;
                    if c + 1 < n {
                        let hi = lo + per;
                        let _ = writeln!(ld, "    if (i < {hi}i) {{ return {part}[i - {lo}i]; }}");
                        let _ = writeln!(stf, "    if (i < {hi}i) {{ {part}[i - {lo}i] = v; return; }}");
                    } else {
                        let _ = writeln!(ld, "    return {part}[i - {lo}i];\n}}");
                        let _ = writeln!(stf, "    {part}[i - {lo}i] = v;\n}}");
                    }
                    bindings.push(BindingInfo {
                        buf: r,
                        name: part,
                        dtype: b.dtype(),
                        storage: st,
                        access,
                        chunk: Some((lo, per.min(numel - lo))),
                        vec4: false,
                    });
                }
                em.chunk_fns.push(ld);
                if access == Access::ReadWrite {
                    em.chunk_fns.push(stf);
                }
                em.chunked.insert(b.id(), per as i64);
            }
        }
    }
    // Builtins.
    for (v, b) in &k.builtins {
        let name = format!("{}_{}", sanitize(v.name()), v.id());
        let init = match b {
            Builtin::Local(d) => format!("i32(lid.{})", xyz(*d)),
            Builtin::Group(d) => format!("i32(wid.{})", xyz(*d)),
            Builtin::GroupLinear => "i32(wid.x + wid.y * nwg.x)".to_string(),
            Builtin::SubgroupInvocation => "i32(sg_inv)".to_string(),
            Builtin::SubgroupSize => "i32(sg_size)".to_string(),
            Builtin::SubgroupId => "i32(sg_id)".to_string(),
            Builtin::NumSubgroups => "i32(sg_num)".to_string(),
        };
        em.uses_subgroups |= matches!(
            b,
            Builtin::SubgroupInvocation | Builtin::SubgroupSize | Builtin::SubgroupId | Builtin::NumSubgroups
        );
        let _ = writeln!(em.out, "    let {name}: i32 = {init};");
        em.declared.insert(name.clone());
        em.varying.insert(v.id());
        em.vars.insert(v.id(), (name, W::I32));
    }
    // Uniform fields: free variables of the body, and of the shapes of the buffers it
    // reads and writes (a run-time bounds check reads a buffer's length, `n * 3`).
    let mut uniforms = Vec::new();
    let mut free = expr::free_vars_stmt(&k.body);
    let mut seen: std::collections::HashSet<u64> = free.iter().map(|v| v.id()).collect();
    let mut shape_vars = |b: &Buffer| {
        for e in b.shape() {
            for v in relax_ir::visit::free_tir_vars(e) {
                if seen.insert(v.id()) {
                    free.push(v);
                }
            }
        }
    };
    relax_ir::visit::for_each_stmt(&k.body, &mut |st| {
        if let Stmt::BufferStore { buffer, .. } = st {
            shape_vars(buffer);
        }
    });
    relax_ir::visit::for_each_stmt_expr(&k.body, &mut |e| {
        relax_ir::visit::for_each_prim_expr(e, &mut |x| {
            if let PrimExprKind::BufferLoad { buffer, .. } = x.kind() {
                shape_vars(buffer);
            }
        })
    });
    for v in free {
        if em.vars.contains_key(&v.id()) {
            continue;
        }
        let dt = v.dtype();
        let (ty, w) = if dt.is_float() {
            (UniformTy::F32, W::F32)
        } else if dt.is_uint() && !dt.is_bool() && dt.bits <= 32 {
            (UniformTy::U32, W::U32)
        } else {
            (UniformTy::I32, W::I32)
        };
        let name = format!("{}_{}", sanitize(v.name()), v.id());
        let expr = match (dt.is_bool(), dt.is_float()) {
            (true, _) => format!("(P.{name} != 0i)"),
            (_, true) => {
                let to = em.cty(dt)?;
                em.conv(&format!("P.{name}"), W::F32, to)?
            }
            _ => format!("P.{name}"),
        };
        let wt = if dt.is_bool() {
            W::Bool
        } else if dt.is_float() {
            em.cty(dt)?
        } else {
            w
        };
        em.vars.insert(v.id(), (expr, wt));
        uniforms.push(UniformField { var: v, name, ty });
    }
    em.stmt(&k.body)?;
    if !em.oob_sites.is_empty() {
        bindings.push(BindingInfo {
            buf: BufRef::Bounds,
            name: bounds::FLAG.to_string(),
            dtype: DataType::UINT32,
            storage: StorageTy::U32,
            access: Access::ReadWrite,
            chunk: None,
            vec4: false,
        });
    }
    let mut src = String::new();
    // Subgroup operations need no `enable subgroups;`: naga does not parse that
    // directive yet and takes them under the SUBGROUP capability (see `validate`).
    if em.uses_f16 {
        src.push_str("enable f16;\n\n");
    }
    for (i, b) in bindings.iter().enumerate() {
        let acc = if b.access == Access::ReadWrite {
            "read_write"
        } else {
            "read"
        };
        if b.buf == BufRef::Bounds {
            let _ = writeln!(
                src,
                "@group(0) @binding({i}) var<storage, read_write> {}: array<atomic<u32>, {}>;\n{}",
                b.name,
                bounds::FLAG_WORDS,
                bounds::SITE_BASE_DECL
            );
            continue;
        }
        let ty = if b.vec4 {
            format!("vec4<{}>", b.storage.wty().name())
        } else {
            b.storage.wty().name().to_string()
        };
        let _ = writeln!(
            src,
            "@group(0) @binding({i}) var<storage, {acc}> {}: array<{ty}>;",
            b.name
        );
    }
    if !uniforms.is_empty() {
        src.push_str("\nstruct Params {\n");
        for u in &uniforms {
            let t = match u.ty {
                UniformTy::I32 => "i32",
                UniformTy::U32 => "u32",
                UniformTy::F32 => "f32",
            };
            let _ = writeln!(src, "    {}: {t},", u.name);
        }
        src.push_str("}\n");
        let _ = writeln!(src, "@group(0) @binding({}) var<uniform> P: Params;", bindings.len());
    }
    for d in &em.workgroup_decls {
        let _ = writeln!(src, "{d}");
    }
    src.push('\n');
    for h in &em.helpers {
        src.push_str(helper_src(h));
        src.push('\n');
    }
    for f in &em.chunk_fns {
        src.push_str(f);
        src.push('\n');
    }
    let [x, y, z] = k.workgroup_size;
    let sg_params = if em.uses_subgroups {
        ", @builtin(subgroup_invocation_id) sg_inv: u32, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_id) sg_id: u32, @builtin(num_subgroups) sg_num: u32"
    } else {
        ""
    };
    let _ = writeln!(
        src,
        "@compute @workgroup_size({x}, {y}, {z})\nfn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>{sg_params}) {{"
    );
    src.push_str(&em.out);
    src.push_str("}\n");
    validate(&src, caps)?;
    Ok(KernelSource {
        name: k.name.clone(),
        wgsl: src,
        workgroup_size: k.workgroup_size,
        bindings,
        uniforms,
        grid: k.grid.clone(),
        oob_sites: em.oob_sites,
        loop_trips: crate::loop_trips::loop_trips(&k.body),
    })
}

fn xyz(d: u8) -> char {
    ['x', 'y', 'z'][d as usize % 3]
}

/// Parse and validate WGSL with naga.
pub fn validate(src: &str, caps: &DeviceCaps) -> Result<()> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| JitError::Naga {
        msg: e.emit_to_string(src),
        wgsl: src.to_string(),
    })?;
    // `pack2x16float` / `unpack2x16float` (float16 rounding without SHADER_F16):
    // every Vulkan, Metal and DX12 adapter has them (wgpu's `SHADER_F16_IN_F32`
    // downlevel flag).
    let mut c = naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    if caps.f16 {
        c |= naga::valid::Capabilities::SHADER_FLOAT16;
    }
    if caps.f64 {
        c |= naga::valid::Capabilities::FLOAT64;
    }
    if caps.i64 {
        c |= naga::valid::Capabilities::SHADER_INT64;
    }
    // Kernels use subgroups only when the schedule was told the device has them.
    if src.contains("@builtin(subgroup_") {
        c |= naga::valid::Capabilities::SUBGROUP;
    }
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), c)
        .validate(&module)
        .map_err(|e| JitError::Naga {
            msg: e.emit_to_string(src),
            wgsl: src.to_string(),
        })?;
    Ok(())
}

/// The value of a float constant zero (`0.0` or `-0.0`).
fn float_zero(e: &PrimExpr) -> Option<f64> {
    match e.kind() {
        PrimExprKind::FloatImm { value, .. } if *value == 0.0 => Some(*value),
        _ => None,
    }
}

/// The value of a WGSL 32-bit integer literal as the emitter writes them (`5i`,
/// `(-5i)`, `7u`, `bitcast<i32>(0x80000000u)`).
fn int_literal(s: &str) -> Option<i64> {
    if s == "bitcast<i32>(0x80000000u)" {
        return Some(i64::from(i32::MIN));
    }
    let t = s.strip_prefix('(').and_then(|t| t.strip_suffix(')')).unwrap_or(s);
    if let Some(d) = t.strip_suffix('u') {
        return d.parse::<u32>().ok().map(i64::from);
    }
    t.strip_suffix('i')?.parse::<i32>().ok().map(i64::from)
}

/// Whether `e` holds an integer constant of magnitude at least 2^24 (a mask such
/// as `tril`'s `j <= i + k` with a huge `k`, whose sum may leave `i32`).
fn has_huge_int(e: &PrimExpr) -> bool {
    let mut found = false;
    expr::visit_expr(e, &mut |x| {
        if let PrimExprKind::IntImm { value, .. } = x.kind() {
            found |= value.unsigned_abs() >= 1 << 24;
        }
    });
    found
}

/// `y` when `a - b` is `x - floor(x / y) * y`.
fn floor_mod_divisor<'e>(op: BinOp, a: &PrimExpr, b: &'e PrimExpr) -> Option<&'e PrimExpr> {
    use relax_ir::tir::expr_equal;
    if op != BinOp::Sub {
        return None;
    }
    let PrimExprKind::Binary {
        op: BinOp::Mul,
        a: fl,
        b: y,
    } = b.kind()
    else {
        return None;
    };
    let PrimExprKind::Call { args, .. } = fl.kind() else {
        return None;
    };
    if fl.as_intrinsic() != Some(Intrinsic::Floor) {
        return None;
    }
    let [q] = args.as_slice() else { return None };
    let PrimExprKind::Binary {
        op: BinOp::Div,
        a: x,
        b: d,
    } = q.kind()
    else {
        return None;
    };
    (expr_equal(x, a) && expr_equal(d, y)).then_some(y)
}

/// Whether `e` is a constant other than zero.
fn is_nonzero_const(e: &PrimExpr) -> bool {
    match e.kind() {
        PrimExprKind::FloatImm { value, .. } => *value != 0.0,
        PrimExprKind::IntImm { value, .. } => *value != 0,
        PrimExprKind::Cast { value, .. } => is_nonzero_const(value),
        _ => false,
    }
}

/// The saturating float-to-integer conversion helper for a cast to `dtype` computed in
/// `to` (integers of at most 32 bits), if there is one.
fn sat_cast_helper(dtype: DataType, to: W) -> Option<&'static str> {
    if !dtype.is_integer() || dtype.is_bool() {
        return None;
    }
    if matches!(to, W::I64 | W::U64) {
        return Some(if to == W::U64 { "sat_f32_u64" } else { "sat_f32_i64" });
    }
    if !matches!(to, W::I32 | W::U32) {
        return None;
    }
    Some(match (dtype.is_uint(), dtype.bits) {
        (false, 8) => "sat_f32_i8",
        (false, 16) => "sat_f32_i16",
        (false, 32) => "sat_f32_i32",
        (true, 8) => "sat_f32_u8",
        (true, 16) => "sat_f32_u16",
        (true, 32) => "sat_f32_u32",
        _ => return None,
    })
}

/// The WGSL source of helper `name` (`shaders/helpers/<name>.wgsl`), empty when unknown.
fn helper_src(name: &str) -> &'static str {
    HELPERS.iter().find(|(n, _)| *n == name).map_or("", |(_, src)| src)
}

/// `(name, source)` of each named helper, read from `shaders/helpers/<name>.wgsl`.
macro_rules! helpers {
    ($($name:ident),* $(,)?) => {
        &[$((stringify!($name), include_str!(concat!("../../../shaders/helpers/", stringify!($name), ".wgsl")))),*]
    };
}

/// Every WGSL helper a kernel may include, by name, from `shaders/helpers/`.
pub const HELPERS: &[(&str, &str)] = helpers![
    sat_f32_i8,
    sat_f32_i16,
    sat_f32_i32,
    fdiv_f32,
    fmod_f32,
    floormod_f32,
    acosh_f32,
    asinh_f32,
    sat_f32_i64,
    sat_f32_u64,
    sat_f32_u8,
    sat_f32_u16,
    sat_f32_u32,
    floordiv_i32,
    floormod_i32,
    floordiv_i64,
    floormod_i64,
    tanh_f32,
    sigmoid_f32,
    erf_f32,
    pow_f32,
    round_f32,
    isnan_f32,
    isinf_f32,
    isfinite_f32,
    copysign_f32,
    relax_chk,
    relax_chk_i64,
    sign_i64,
    cmp_i64,
    to_f16_f32,
];

impl Em<'_> {
    fn unsupported(&self, msg: impl Into<String>) -> JitError {
        JitError::Unsupported {
            func: self.func.clone(),
            msg: msg.into(),
        }
    }

    /// Compute type of a TIR dtype (int64 as i32 index arithmetic).
    fn cty(&mut self, dt: DataType) -> Result<W> {
        if dt.lanes > 1 {
            return Err(JitError::UnsupportedDtype {
                dtype: dt,
                context: "on the GPU (vector lanes)".into(),
            });
        }
        // An adapter feature the type needs.
        let need = |has: bool, feature: &str| -> Result<()> {
            if has {
                return Ok(());
            }
            Err(JitError::UnsupportedDtype {
                dtype: dt,
                context: format!("on this GPU (it lacks {feature})"),
            })
        };
        Ok(match (dt.code, dt.bits) {
            (TypeCode::UInt, 1) => W::Bool,
            (TypeCode::Int, 8 | 16 | 32 | 64) => W::I32,
            (TypeCode::UInt, 8 | 16 | 32) => W::U32,
            (TypeCode::UInt, 64) => W::U32,
            // Without SHADER_F16, float16 is computed in f32 and rounded to
            // float16 at casts and stores (`to_f16_f32`).
            (TypeCode::Float, 16) if !self.caps.f16 => W::F32,
            (TypeCode::Float, 16) => {
                self.uses_f16 = true;
                W::F16
            }
            (TypeCode::Float, 32) => W::F32,
            (TypeCode::Float, 64) => {
                need(self.caps.f64, "SHADER_F64")?;
                W::F64
            }
            _ => {
                return Err(JitError::UnsupportedDtype {
                    dtype: dt,
                    context: "on the GPU".into(),
                })
            }
        })
    }

    /// The compute type of a 64-bit integer *data* value.
    fn data64(&self, dt: DataType) -> Result<W> {
        if !self.caps.i64 {
            return Err(JitError::UnsupportedDtype {
                dtype: dt,
                context: "on this GPU (it lacks SHADER_INT64)".into(),
            });
        }
        Ok(if dt.is_uint() { W::U64 } else { W::I64 })
    }

    fn conv(&self, s: &str, from: W, to: W) -> Result<String> {
        if from == to {
            return Ok(s.to_string());
        }
        // A 32-bit integer literal widens as a 64-bit literal: lavapipe compares
        // `i64(16777216i) <= i64(i)` as true for every `i`.
        if let (W::I32 | W::U32, W::I64 | W::U64, Some(v)) = (from, to, int_literal(s)) {
            return Ok(match to {
                W::I64 if v == i64::from(i32::MIN) => "(-2147483647li - 1li)".to_string(),
                W::I64 => format!("({v}li)"),
                _ => format!("{}lu", v as u64),
            });
        }
        Ok(match (from, to) {
            (W::Bool, t) => format!("select({}, {}, {s})", t.zero(), one(t)),
            // Truthiness of a float on its bits: NaN is true, where drivers with
            // relaxed float semantics fold `NaN != 0.0` to false.
            (W::F32, W::Bool) => format!("((bitcast<u32>({s}) & 0x7fffffffu) != 0u)"),
            (W::F16, W::Bool) => format!("((bitcast<u32>(f32({s})) & 0x7fffffffu) != 0u)"),
            (f, W::Bool) => format!("({s} != {})", f.zero()),
            // Sign-extend first: `u64(i32)` would zero-extend on some paths.
            (W::I32, W::U64) => format!("bitcast<u64>(i64({s}))"),
            // Zero-extend through `u64`: `i64(u32)` sign-extended on lavapipe
            // (4294967295 became -1).
            (W::U32, W::I64) => format!("bitcast<i64>(u64({s}))"),
            (_, t) => format!("{}({s})", t.name()),
        })
    }

    fn wrap_small(&mut self, s: String, dt: DataType) -> String {
        if dt.code == TypeCode::Float && dt.bits == 16 && !self.caps.f16 {
            self.helpers.insert("to_f16_f32");
            format!("to_f16_f32({s})")
        } else if dt.is_integer() && !dt.is_bool() && dt.bits < 32 {
            if dt.is_int() {
                format!("extractBits({s}, 0u, {}u)", dt.bits)
            } else {
                format!("({s} & {}u)", (1u64 << dt.bits) - 1)
            }
        } else {
            s
        }
    }

    fn lit_int(&self, v: i64, dt: DataType) -> Result<(String, W)> {
        if dt.is_bool() {
            return Ok(((if v != 0 { "true" } else { "false" }).to_string(), W::Bool));
        }
        if dt.is_uint() {
            if (0..=u32::MAX as i64).contains(&v) {
                return Ok((format!("{v}u"), W::U32));
            }
            let w = self.data64(dt)?;
            return Ok((format!("{}lu", v as u64), w));
        }
        if v == i32::MIN as i64 {
            return Ok(("bitcast<i32>(0x80000000u)".into(), W::I32));
        }
        if (i32::MIN as i64..=i32::MAX as i64).contains(&v) {
            return Ok((if v < 0 { format!("({v}i)") } else { format!("{v}i") }, W::I32));
        }
        let w = self.data64(dt)?;
        if v == i64::MIN {
            return Ok(("bitcast<i64>(0x8000000000000000lu)".into(), w));
        }
        Ok((format!("({v}li)"), w))
    }

    fn lit_float(&mut self, v: f64, dt: DataType) -> Result<(String, W)> {
        let w = self.cty(dt)?;
        let s = if v.is_nan() {
            "bitcast<f32>(0x7fc00000u)".to_string()
        } else if v.is_infinite()
            || (w == W::F32 && (v as f32).is_infinite())
            || (dt.code == TypeCode::Float && dt.bits == 16 && half::f16::from_f64(v).is_infinite())
        {
            if v > 0.0 {
                "bitcast<f32>(0x7f800000u)".to_string()
            } else {
                "bitcast<f32>(0xff800000u)".to_string()
            }
        } else {
            match w {
                // float16 computed in f32 (no SHADER_F16): the float16 value.
                W::F32 if dt.code == TypeCode::Float && dt.bits == 16 => {
                    return Ok((float_lit(half::f16::from_f64(v).to_f64(), "f"), W::F32))
                }
                W::F32 => return Ok((float_lit(v as f32 as f64, "f"), W::F32)),
                W::F16 => return Ok((float_lit(half::f16::from_f64(v).to_f64(), "h"), W::F16)),
                _ => return Ok((float_lit(v, "lf"), W::F64)),
            }
        };
        Ok((self.conv(&s, W::F32, w)?, w))
    }

    fn expr(&mut self, e: &PrimExpr) -> Result<(String, W)> {
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
            K::Binary { op, a, b } => self.binary(*op, a, b, dt)?,
            K::Not(a) => {
                let (s, w) = self.expr(a)?;
                (format!("!{}", self.conv(&s, w, W::Bool)?), W::Bool)
            }
            K::Select { cond, t, f } => self.select(cond, t, f)?,
            K::Call { op, args, .. } if op == SUBGROUP_SHUFFLE_XOR => {
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
            K::Call { op, args, .. } if SUBGROUP_OPS.iter().any(|(_, n, _)| n == op) => {
                let Some((_, _, wgsl_fn)) = SUBGROUP_OPS.iter().find(|(_, n, _)| n == op) else {
                    return Err(self.unsupported(format!("intrinsic {op}")));
                };
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
            K::Call { op, dtype, args } => match Intrinsic::from_name(op) {
                Some(op) => self.call(op, *dtype, args)?,
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

    fn binary(&mut self, op: BinOp, a: &PrimExpr, b: &PrimExpr, dt: DataType) -> Result<(String, W)> {
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

    fn line(&mut self, s: &str) {
        for _ in 0..self.ind {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn bind_var(&mut self, v: &TirVar, w: W) -> String {
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
    fn stmt(&mut self, s: &Stmt) -> Result<()> {
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

    fn let_line(&mut self, var: &TirVar, value: &PrimExpr) -> Result<()> {
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

    fn alloc_line(&mut self, buffer: &Buffer) -> Result<()> {
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

    fn stmt_node(&mut self, s: &Stmt) -> Result<()> {
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
                } else if bdt.code == TypeCode::Float && bdt.bits == 16 && st == StorageTy::F32 {
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

    fn scoped(&mut self, s: &Stmt) -> Result<()> {
        let saved = self.declared.clone();
        let r = self.stmt(s);
        self.declared = saved;
        r
    }

    #[allow(dead_code)]
    fn lowered(&self) -> &LoweredFunc {
        self.lf
    }
}

/// The destination buffer, source buffer and (destination offset, source vec4
/// index) of a [`VLOAD4`] statement.
fn vload4_parts(s: &Stmt) -> Option<(&Buffer, &Buffer, [&PrimExpr; 2])> {
    let Stmt::Evaluate(e) = s else { return None };
    let PrimExprKind::Call { op, args, .. } = e.kind() else {
        return None;
    };
    if op != VLOAD4 {
        return None;
    }
    let [d, src] = args.as_slice() else { return None };
    let (
        PrimExprKind::BufferLoad {
            buffer: db,
            indices: di,
        },
        PrimExprKind::BufferLoad {
            buffer: sb,
            indices: si,
        },
    ) = (d.kind(), src.kind())
    else {
        return None;
    };
    match (di.as_slice(), si.as_slice()) {
        ([off], [i4]) => Some((db, sb, [off, i4])),
        _ => None,
    }
}

fn unreachable_logical() -> (String, W) {
    // Logical operators return early in `binary`.
    (String::from("false"), W::Bool)
}

fn one(w: W) -> &'static str {
    match w {
        W::Bool => "true",
        W::I32 => "1i",
        W::U32 => "1u",
        W::I64 => "1li",
        W::U64 => "1lu",
        W::F16 => "1.0h",
        W::F32 => "1.0f",
        W::F64 => "1.0lf",
    }
}

fn float_lit(v: f64, suffix: &str) -> String {
    let s = if suffix == "f" {
        format!("{:?}", v as f32)
    } else {
        format!("{v:?}")
    };
    let s = if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    };
    if v < 0.0 {
        format!("({s}{suffix})")
    } else {
        format!("{s}{suffix}")
    }
}
