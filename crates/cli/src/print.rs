//! `relax print FILE [--pass ...]`.

use std::path::{Path, PathBuf};

use relax_ir::text::{print_program, Program};
use relax_ir::{BaseFunc, IRModule};

use crate::common::{parse_source, read_source, report, EXIT_OK, EXIT_REJECTED};

/// Run `relax print`: parse, apply the registered passes named in `passes` in
/// order (one pipeline, configured by the engine's default pass context), print.
/// With `time_passes`, each pass's time goes to stderr; with `dump_ir`, the module
/// after every pass goes into that directory.
pub fn run(path: &Path, passes: &[String], time_passes: bool, dump_ir: Option<PathBuf>) -> u8 {
    let source = match read_source(path) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let program = match parse_source(&source) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if passes.is_empty() {
        println!("{}", print_program(&program));
        return EXIT_OK;
    }
    let ctx = pass_context(dump_ir);
    let pipeline = match relax_transform::named_pipeline(passes, &ctx) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return crate::common::EXIT_USAGE;
        }
    };
    match pipeline.run_timed(program.clone().into_module()) {
        Ok((module, timings)) => {
            if time_passes {
                crate::common::print_pass_timings(&timings);
            }
            for d in legalize_warnings(program.clone().into_module(), passes, &ctx) {
                report(&source, &d);
            }
            println!("{}", print_program(&rebuild(&program, module)));
            EXIT_OK
        }
        Err(e) => {
            let pass = e.pass.clone();
            for d in e.into_diagnostics() {
                report(&source, &d);
            }
            eprintln!("error: pass `{pass}` failed");
            EXIT_REJECTED
        }
    }
}

/// The `legalize/skipped` warnings of the `legalize` pass among `passes`: the
/// passes before it are run again to obtain its input.
fn legalize_warnings(
    module: IRModule,
    passes: &[String],
    ctx: &relax_transform::PassContext,
) -> Vec<relax_ir::Diagnostic> {
    let Some(at) = passes.iter().position(|p| p == "legalize") else {
        return Vec::new();
    };
    let quiet = relax_transform::PassContext {
        instruments: Vec::new(),
        ..ctx.clone()
    };
    let Ok(prefix) = relax_transform::named_pipeline(&passes[..at], &quiet) else {
        return Vec::new();
    };
    match prefix.run_timed(module) {
        Ok((m, _)) => relax_transform::legalize::legalize_module_report(&m).1,
        Err(_) => Vec::new(),
    }
}

/// The pass context of a host engine with the default configuration (lenient
/// packed-call purity from its registry), dumping IR into `dump_ir` when given.
fn pass_context(dump_ir: Option<PathBuf>) -> relax_transform::PassContext {
    let engine = relax_engine::Engine::new(relax_engine::EngineConfig {
        device: relax_engine::DeviceChoice::Cpu,
        lenient: true,
        dump_ir,
        ..relax_engine::EngineConfig::default()
    });
    engine.pass_context()
}

/// Put a transformed module back in the shape of the original program, so a
/// standalone function prints as a standalone function.
fn rebuild(original: &Program, module: IRModule) -> Program {
    match original {
        Program::Module(_) => Program::Module(module),
        Program::Function { name, .. } => match module.get(name) {
            Some(BaseFunc::Relax(f)) => Program::Function {
                name: name.clone(),
                func: f.clone(),
            },
            _ => Program::Module(module),
        },
        Program::PrimFunc { name, .. } => match module.get(name) {
            Some(BaseFunc::Prim(f)) => Program::PrimFunc {
                name: name.clone(),
                func: f.clone(),
            },
            _ => Program::Module(module),
        },
    }
}
