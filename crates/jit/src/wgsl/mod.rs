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
use crate::schedule::{sanitize, Builtin, GpuKernel, GpuOp, SubgroupReduce};

mod bounds;
mod expression;
mod intrinsics;
mod statement;
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
    /// The conditions under which the `select` arms being emitted are taken (WGSL
    /// bool expressions, outermost first): an access there is checked only where
    /// all of them hold.
    guards: Vec<String>,
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
        guards: Vec::new(),
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
        &[$((stringify!($name), include_str!(concat!("../../../../shaders/helpers/", stringify!($name), ".wgsl")))),*]
    };
}

/// Every WGSL helper a kernel may include, by name, from `shaders/helpers/`.
pub const HELPERS: &[(&str, &str)] = helpers![
    sat_f32_i8,
    sat_f32_i16,
    sat_f32_i32,
    fdiv_f32,
    fmod_f32,
    fmod_f64,
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
    isnan_f32,
    isinf_f32,
    isfinite_f32,
    isnan_f64,
    isinf_f64,
    isfinite_f64,
    copysign_f32,
    relax_chk,
    relax_chk_i64,
    relax_chk_if,
    relax_chk_i64_if,
    sign_i64,
    cmp_i64,
    to_f16_f32,
    to_bf16_f32,
    to_mini_f32,
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
            (TypeCode::Int, 2 | 4 | 8 | 16 | 32 | 64) => W::I32,
            (TypeCode::UInt, 2 | 4 | 8 | 16 | 32) => W::U32,
            // Floats narrower than 16 bits are computed in f32 and rounded to their
            // format at casts and stores (`to_mini_f32`).
            _ if dt.mini_float().is_some() => W::F32,
            (TypeCode::UInt, 64) => W::U32,
            // Without SHADER_F16, float16 is computed in f32 and rounded to
            // float16 at casts and stores (`to_f16_f32`).
            (TypeCode::Float, 16) if !self.caps.f16 => W::F32,
            // bfloat16 is computed in f32 and rounded at casts and stores (`to_bf16_f32`).
            (TypeCode::BFloat, 16) => W::F32,
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

    /// The result of an operation of `dt`: a `bfloat16` one (or, without
    /// `shader-f16`, a `float16` one) is held in an `f32` word and rounded to its
    /// dtype, as every operation's result is on the host and in TVM (which stores
    /// each intermediate value of a fused chain in that dtype): `exp(x / 3)` of a
    /// bfloat16 `x` rounds the quotient before the `exp`. Other dtypes pass.
    fn round_op(&mut self, s: String, dt: DataType) -> String {
        let widened = (dt.code == TypeCode::BFloat && dt.bits == 16)
            || (dt.code == TypeCode::Float && dt.bits == 16 && !self.caps.f16);
        let done = ["to_bf16_f32(", "to_f16_f32("].iter().any(|f| wraps_whole(&s, f));
        if widened && !done {
            self.wrap_small(s, dt)
        } else {
            s
        }
    }

    fn wrap_small(&mut self, s: String, dt: DataType) -> String {
        if dt.code == TypeCode::Float && dt.bits == 16 && !self.caps.f16 {
            self.helpers.insert("to_f16_f32");
            format!("to_f16_f32({s})")
        } else if dt.code == TypeCode::BFloat && dt.bits == 16 {
            self.helpers.insert("to_bf16_f32");
            format!("to_bf16_f32({s})")
        } else if let Some(f) = dt.mini_float() {
            self.helpers.insert("to_mini_f32");
            // (mantissa bits, smallest normal exponent, largest value, specials)
            let kind = match f.specials {
                relax_ir::MiniSpecials::Ieee => 0,
                relax_ir::MiniSpecials::Fn => 1,
                relax_ir::MiniSpecials::Fnuz => 2,
                relax_ir::MiniSpecials::None => 3,
                relax_ir::MiniSpecials::E8M0 => 4,
            };
            format!(
                "to_mini_f32({s}, {}i, {}i, {:?}f, {kind}u)",
                f.mbits,
                1 - f.bias,
                f.max() as f32
            )
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
            || (dt.code == TypeCode::BFloat
                && half::bf16::from_bits(relax_ir::dtype::bf16_bits_from_f64(v)).is_infinite())
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
                // bfloat16: the bfloat16 value.
                W::F32 if dt.code == TypeCode::BFloat => {
                    return Ok((
                        float_lit(
                            half::bf16::from_bits(relax_ir::dtype::bf16_bits_from_f64(v)).to_f64(),
                            "f",
                        ),
                        W::F32,
                    ))
                }
                W::F32 => return Ok((float_lit(v as f32 as f64, "f"), W::F32)),
                W::F16 => return Ok((float_lit(half::f16::from_f64(v).to_f64(), "h"), W::F16)),
                _ => return Ok((float_lit(v, "lf"), W::F64)),
            }
        };
        Ok((self.conv(&s, W::F32, w)?, w))
    }
}

/// The WGSL builtin of a subgroup reduction (with `enable subgroups;`).
fn subgroup_builtin(c: SubgroupReduce) -> &'static str {
    match c {
        SubgroupReduce::Add => "subgroupAdd",
        SubgroupReduce::Mul => "subgroupMul",
        SubgroupReduce::Max => "subgroupMax",
        SubgroupReduce::Min => "subgroupMin",
    }
}

/// The destination buffer, source buffer and (destination offset, source vec4
/// index) of a [`GpuOp::VLoad4`] statement.
fn vload4_parts(s: &Stmt) -> Option<(&Buffer, &Buffer, [&PrimExpr; 2])> {
    let Stmt::Evaluate(e) = s else { return None };
    let PrimExprKind::Call { op, args, .. } = e.kind() else {
        return None;
    };
    if op.gpu() != Some(GpuOp::VLoad4) {
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

/// Whether `s` is one call of `f` (`"to_bf16_f32("`) over all of it: `s` starts
/// with `f` and the parenthesis `f` opens closes at the end.
fn wraps_whole(s: &str, f: &str) -> bool {
    let Some(rest) = s.strip_prefix(f) else { return false };
    let mut depth = 1usize;
    for (i, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1 == rest.len();
                }
            }
            _ => {}
        }
    }
    false
}
