//! `relax import model.onnx`: an ONNX model as a TVMScript program (and its weights).

use std::path::{Path, PathBuf};

use relax_ir::text::{print_program, Program};
use relax_onnx::{ImportOptions, Imported};

use crate::common::{EXIT_OK, EXIT_REJECTED, EXIT_USAGE};

/// Options of `relax import`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The ONNX model (`.onnx`; external data files are read from its directory).
    #[arg(required_unless_present = "list_ops")]
    pub file: Option<PathBuf>,
    /// Write the program here instead of standard output.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Write the weights (the parameters of `main` after the graph inputs) as an `.npz`
    /// file, keyed by parameter name (`relax run prog.py --params weights.npz` binds them).
    #[arg(long = "params-out")]
    pub params_out: Option<PathBuf>,
    /// Fix a symbolic dimension: `--dim seq_len=128` (repeatable).
    #[arg(long = "dim", value_parser = parse_dim)]
    pub dims: Vec<(String, i64)>,
    /// Initializers with at most this many elements become constants of the program;
    /// larger ones become parameters.
    #[arg(long = "max-const-elems", default_value_t = 16)]
    pub max_const_elems: usize,
    /// Print the ONNX operators the importer converts, and exit.
    #[arg(long = "list-ops")]
    pub list_ops: bool,
}

/// Parse `NAME=VALUE`.
pub fn parse_dim(s: &str) -> Result<(String, i64), String> {
    let (name, value) = s.split_once('=').ok_or_else(|| format!("`{s}`: expected NAME=VALUE"))?;
    let v: i64 = value
        .trim()
        .parse()
        .map_err(|_| format!("`{s}`: `{value}` is not an integer"))?;
    if v < 0 {
        return Err(format!("`{s}`: a dimension cannot be negative"));
    }
    Ok((name.trim().to_string(), v))
}

/// Import `path` with progress and the summary line on stderr.
pub fn import(path: &Path, dims: &[(String, i64)], max_const_elems: usize) -> Result<Imported, String> {
    let opts = ImportOptions {
        dims: dims.to_vec(),
        max_const_elems,
        progress: true,
    };
    let t = std::time::Instant::now();
    let imported = relax_onnx::import_file(path, &opts).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!(
        "imported {} in {:.3} s: {}",
        path.display(),
        t.elapsed().as_secs_f64(),
        imported.summary
    );
    Ok(imported)
}

/// Run `relax import`.
pub fn run(args: &ImportArgs) -> u8 {
    if args.list_ops {
        for op in relax_onnx::supported_ops() {
            println!("{op}");
        }
        return EXIT_OK;
    }
    let Some(path) = &args.file else {
        eprintln!("error: no model given");
        return EXIT_USAGE;
    };
    if !path.is_file() {
        eprintln!("error: cannot read {}: no such file", path.display());
        return EXIT_USAGE;
    }
    let imported = match import(path, &args.dims, args.max_const_elems) {
        Ok(i) => i,
        Err(m) => {
            eprintln!("error: {m}");
            return EXIT_REJECTED;
        }
    };
    let text = print_program(&Program::Module(imported.module.clone()));
    match &args.output {
        Some(out) => {
            if let Err(e) = std::fs::write(out, format!("{text}\n")) {
                eprintln!("error: cannot write {}: {e}", out.display());
                return EXIT_USAGE;
            }
            eprintln!("wrote {}", out.display());
        }
        None => println!("{text}"),
    }
    if let Some(p) = &args.params_out {
        if !p.extension().is_some_and(|e| e.eq_ignore_ascii_case("npz")) {
            eprintln!("error: --params-out {}: only .npz is written", p.display());
            return EXIT_USAGE;
        }
        let written = relax_engine::onnx::weights_of(&imported).and_then(|w| w.write_npz(p));
        if let Err(e) = written {
            eprintln!("error: {e}");
            return EXIT_REJECTED;
        }
        eprintln!("wrote {} weights to {}", imported.params.len(), p.display());
    }
    EXIT_OK
}
