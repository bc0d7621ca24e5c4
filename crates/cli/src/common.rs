//! Helpers shared by the subcommands: reading input and reporting diagnostics.

use std::io::{IsTerminal, Read};
use std::path::Path;

use relax_ir::text::{parse, Program};
use relax_ir::Diagnostic;

/// Exit status for success.
pub const EXIT_OK: u8 = 0;
/// Exit status for a rejected program (parse error, ill-formed, StructInfo error).
pub const EXIT_REJECTED: u8 = 1;
/// Exit status for usage or I/O errors.
pub const EXIT_USAGE: u8 = 2;

/// A source file read into memory.
pub struct Source {
    /// Name used in diagnostics.
    pub name: String,
    /// Its text.
    pub text: String,
}

/// Read `path` (`-` for standard input), or print an I/O error.
pub fn read_source(path: &Path) -> Result<Source, u8> {
    let name = path.display().to_string();
    let text = if name == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map(|_| s)
    } else {
        std::fs::read_to_string(path)
    };
    match text {
        Ok(text) => Ok(Source { name, text }),
        Err(e) => {
            eprintln!("error: cannot read {name}: {e}");
            Err(EXIT_USAGE)
        }
    }
}

/// Print `diag` rustc-style to standard error.
pub fn report(source: &Source, diag: &Diagnostic) {
    let color = std::io::stderr().is_terminal();
    eprint!("{}", diag.render(&source.name, &source.text, color));
}

/// Parse `source`, reporting a parse error.
pub fn parse_source(source: &Source) -> Result<Program, u8> {
    parse(&source.text).map_err(|d| {
        report(source, &d);
        EXIT_REJECTED
    })
}

/// Print each pass's time, and the total, on stderr.
pub fn print_pass_timings(timings: &[relax_transform::PassTiming]) {
    let mut total = std::time::Duration::ZERO;
    for t in timings {
        eprintln!("pass {:<24} {:>10.3} ms", t.pass, t.time.as_secs_f64() * 1e3);
        total += t.time;
    }
    eprintln!("pass {:<24} {:>10.3} ms", "(total)", total.as_secs_f64() * 1e3);
}

/// Lenient mode (`--lenient`): `R.call_packed` of a packed function the engine
/// registers as pure, inside a dataflow block, rewritten to `R.call_pure_packed`;
/// the module and one warning per rewritten call.
pub fn lenient(module: &relax_ir::IRModule) -> (relax_ir::IRModule, Vec<Diagnostic>) {
    use relax_engine::{DeviceChoice, Engine, EngineConfig, Purity};
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        ..EngineConfig::default()
    });
    let is_pure = |name: &str| engine.packed(name).is_ok_and(|f| f.purity() == Purity::Pure);
    relax_transform::lenient::pure_packed_calls(module, &is_pure)
}
