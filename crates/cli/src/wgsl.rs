//! `relax wgsl FILE [--func NAME]`.

use std::path::Path;
use std::sync::Arc;

use relax_engine::{DeviceChoice, Engine, EngineConfig};
use relax_ir::{BaseFunc, IRModule};
use relax_jit::{Access, BufRef};
use relax_jit::{DeviceCaps, Jit, ScheduleOptions};

use crate::common::{parse_source, read_source, report, EXIT_OK, EXIT_REJECTED};

/// Run `relax wgsl`: the WGSL of every PrimFunc (or only `func`) as `relax run
/// --device gpu` compiles it: after the engine's own pipeline for the GPU (so
/// including the PrimFuncs `LegalizeOps` generates for the module's operator calls,
/// and fused ones), scheduled for this machine's wgpu adapter when there is one (its
/// capabilities and tuning; the default capabilities otherwise). `func` names a
/// PrimFunc of the pipeline's result or, when the pipeline folded or fused it away,
/// of the module as written. Exit 0 on success, 1 when a pass fails, a PrimFunc
/// cannot be compiled (or `func` is not a PrimFunc of the module), 2 on I/O errors.
pub fn run(path: &Path, func: Option<&str>) -> u8 {
    let source = match read_source(path) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let written = match parse_source(&source) {
        Ok(p) => p.into_module(),
        Err(code) => return code,
    };
    // The module goes through the pipeline `relax run --device gpu` uses (operator
    // calls become PrimFuncs, which are then fused); a failing pass is an error.
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Gpu,
        ..EngineConfig::default()
    });
    let module = match engine.pipeline().run(written.clone()) {
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
    // A PrimFunc asked for by name that the pipeline folded away is shown as written.
    let module = match func {
        Some(name) if !prim_func_named(&module, name) && prim_func_named(&written, name) => {
            eprintln!("note: the pipeline removes PrimFunc `{name}` (folded or fused); showing it as written");
            written
        }
        _ => module,
    };
    let jit = match relax_gpu_runtime::GpuRuntime::shared_default() {
        Ok(rt) => {
            println!(
                "// adapter: {} (the kernels `relax run --device gpu` dispatches there)",
                rt.adapter_info()
            );
            Jit::new(Some(Arc::new(rt)))
        }
        Err(_) => {
            println!("// no GPU adapter: default capabilities and schedule options");
            Jit::with_options(None, DeviceCaps::ALL, ScheduleOptions::default())
        }
    };
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
    if func.is_none() && !found {
        println!(
            "// no PrimFunc is left after the pipeline: no kernel runs on the GPU (`--func NAME` shows one as written)"
        );
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

fn prim_func_named(m: &IRModule, name: &str) -> bool {
    m.functions
        .iter()
        .any(|(gv, f)| gv.name() == name && matches!(f, BaseFunc::Prim(_)))
}
