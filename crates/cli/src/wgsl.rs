//! `relax wgsl FILE [--func NAME]`.

use std::path::Path;

use relax_checker::normalize::normalize_module;
use relax_checker::op::legalize::legalize_module;
use relax_ir::BaseFunc;
use relax_jit::wgsl::{Access, BufRef};
use relax_jit::{DeviceCaps, Jit, ScheduleOptions};

use crate::common::{parse_source, read_source, EXIT_OK, EXIT_REJECTED};

/// Run `relax wgsl`: the WGSL of every PrimFunc (or only `func`) after the default
/// schedule, including those `LegalizeOps` generates for the module's operator calls. Exit 0 on success, 1 when a PrimFunc cannot be compiled (or `func` is
/// not a PrimFunc of the module), 2 on I/O errors.
pub fn run(path: &Path, func: Option<&str>) -> u8 {
    let source = match read_source(path) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let module = match parse_source(&source) {
        Ok(p) => p.into_module(),
        Err(code) => return code,
    };
    // Operator calls become PrimFuncs first, as they do when the engine runs the module.
    let normalized = normalize_module(&module);
    let module = match normalized.diagnostics.iter().any(|d| d.is_error()) {
        true => module,
        false => legalize_module(&normalized.module).unwrap_or(module),
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
