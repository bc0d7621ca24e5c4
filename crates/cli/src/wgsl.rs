//! `relax wgsl FILE [--func NAME]`.

use std::path::Path;

use relax_ir::BaseFunc;
use relax_jit::{Access, BufRef};
use relax_jit::{DeviceCaps, Jit, ScheduleOptions};

use crate::common::{parse_source, read_source, report, EXIT_OK, EXIT_REJECTED};

/// Run `relax wgsl`: the WGSL of every PrimFunc (or only `func`) after the default
/// schedule, after the default pipeline (so including the PrimFuncs `LegalizeOps`
/// generates for the module's operator calls and the fused ones). Exit 0 on success,
/// 1 when a pass fails, a PrimFunc cannot be compiled (or `func` is not a PrimFunc of
/// the module), 2 on I/O errors.
pub fn run(path: &Path, func: Option<&str>) -> u8 {
    let source = match read_source(path) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let module = match parse_source(&source) {
        Ok(p) => p.into_module(),
        Err(code) => return code,
    };
    // The module goes through the engine's pipeline (operator calls become PrimFuncs,
    // which are then fused); a failing pass is an error.
    let module = match relax_transform::default_pipeline().run(module) {
        Ok(m) => m,
        Err(e) => {
            let pass = e.pass.clone();
            for d in e.into_diagnostics() {
                report(&source, &d);
            }
            eprintln!("error: pass `{pass}` failed");
            return EXIT_REJECTED;
        }
    };
    let jit = Jit::with_options(None, DeviceCaps::ALL, ScheduleOptions::default());
    let mut found = false;
    let mut failed = false;
    for (gv, f) in module.functions.iter() {
        let BaseFunc::Prim(pf) = f else { continue };
        if func.is_some_and(|n| n != gv.name()) {
            continue;
        }
        found = true;
        match jit.wgsl(pf) {
            Ok(program) => {
                for k in &program.kernels {
                    println!("// PrimFunc {}: kernel {}", gv.name(), k.name);
                    println!(
                        "// workgroup_size ({}, {}, {})",
                        k.workgroup_size[0], k.workgroup_size[1], k.workgroup_size[2]
                    );
                    for (i, b) in k.bindings.iter().enumerate() {
                        let buf = match b.buf {
                            BufRef::Param(p) => format!("param {p}"),
                            BufRef::Scratch(s) => format!("scratch {s}"),
                            BufRef::Bounds => "out-of-bounds flags".to_string(),
                        };
                        let access = match b.access {
                            Access::Read => "read",
                            Access::ReadWrite => "read_write",
                        };
                        println!("// @group(0) @binding({i}) {}: {buf}, {}, {access}", b.name, b.dtype);
                    }
                    if !k.uniforms.is_empty() {
                        let fields: Vec<_> = k.uniforms.iter().map(|u| u.name.as_str()).collect();
                        println!(
                            "// @group(0) @binding({}) uniform: {}",
                            k.bindings.len(),
                            fields.join(", ")
                        );
                    }
                    println!("{}", k.wgsl.trim_end());
                    println!();
                }
            }
            Err(e) => {
                eprintln!("error: cannot generate WGSL for PrimFunc `{}`: {e}", gv.name());
                failed = true;
            }
        }
    }
    if let (Some(name), false) = (func, found) {
        eprintln!("error: the module has no PrimFunc named `{name}`");
        return EXIT_REJECTED;
    }
    if failed {
        EXIT_REJECTED
    } else {
        EXIT_OK
    }
}
