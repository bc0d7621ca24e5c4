//! The `relax` command-line tool: parse, print, check, compile to WGSL and run
//! Relax programs written in TVMScript.

mod cache;
mod check;
mod common;
mod generate;
mod import;
mod npy;
mod print;
mod run;
mod summary;
mod wgsl;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Relax tensor IR tools: TVMScript in, checked IR, WGSL or results out.
#[derive(Parser, Debug)]
#[command(
    name = "relax",
    version,
    about,
    long_about = None,
    after_help = "Exit status (every subcommand): 0 success; 1 the program is rejected (parse error, \
ill-formed, StructInfo error), cannot be compiled, or a run fails (including wrong inputs); \
2 usage or I/O error (missing file, bad option). `relax help <command>` gives details."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse, normalize, check well-formedness and derive StructInfo.
    ///
    /// Exit status: 0 when the program is valid (warnings allowed), 1 when it is rejected
    /// (parse error, ill-formed, or a StructInfo error), 2 on usage or I/O errors.
    /// Diagnostics go to stderr, rustc style.
    Check {
        /// The TVMScript file (`-` reads standard input).
        file: PathBuf,
        /// Print one JSON object on stdout: `well_formed`, `diagnostics` and every binding's StructInfo.
        #[arg(long)]
        json: bool,
        /// Lenient mode: `R.call_packed` of a packed function the engine knows to be pure
        /// (such as `vm.builtin.tensor_to_shape`), inside a dataflow block, is taken as
        /// `R.call_pure_packed` with a warning instead of a purity error (TVM's importers
        /// write such calls; `tvm.compile` runs them).
        #[arg(long)]
        lenient: bool,
    },
    /// Parse a TVMScript file and print it back in TVM 0.27's dialect.
    ///
    /// Exit status: 0 on success, 1 on a parse error (diagnostic on stderr), 2 on I/O errors.
    Print {
        /// The TVMScript file (`-` reads standard input).
        file: PathBuf,
        /// Passes to apply before printing, in order (repeatable; a pass's required
        /// passes that have not run go first). Every registered pass:
        #[arg(long = "pass", value_parser = pass_names())]
        passes: Vec<String>,
        /// Print each pass's time on stderr.
        #[arg(long = "time-passes")]
        time_passes: bool,
        /// Write the module after every pass into this directory (`NN-PASS.py`).
        #[arg(long = "dump-ir")]
        dump_ir: Option<PathBuf>,
    },
    /// Print the WGSL compute shaders of the module's TIR PrimFuncs (default schedule).
    ///
    /// Each kernel is preceded by comments naming its PrimFunc, workgroup size and binding
    /// layout (storage buffers in binding order, then the uniform parameter struct).
    /// Exit status: 0 on success, 1 on a parse error or when a PrimFunc cannot be compiled
    /// (the diagnostic names the function and why; the others are still printed), 2 on I/O errors.
    Wgsl {
        /// The TVMScript file (`-` reads standard input).
        file: PathBuf,
        /// Only this PrimFunc.
        #[arg(long = "func")]
        func: Option<String>,
    },
    /// Run a Relax function of the module with the engine and print its result.
    ///
    /// Inputs, in parameter order, come from `--input` `.npy` files or from `--inputs-json`, a
    /// JSON list of `{"dtype": str, "shape": [int], "data": nested list}` (floats may also be
    /// "nan", "inf", "-inf"). A wrong number, dtype or shape of inputs is an error naming the
    /// parameter. `--json` prints `{"outputs": [{"dtype", "shape", "data"}...], "structure": S,
    /// "device": str}`: tuple results are flattened in order into `outputs`, and S is the string
    /// "tensor" for a single (non-tuple) result, otherwise a nested list with the shape of the
    /// tuple whose leaves are the indices of the corresponding entries of `outputs`, e.g.
    /// `[0, [1, 2]]`. Scalars (PrimValue) are output as 0-d tensors and shapes as 1-d int64 tensors.
    /// Exit status: 0 on success, 1 when the program is rejected or the run fails, 2 on usage or
    /// I/O errors.
    Run(run::RunOptions),
    /// Greedy generation with a decoder that `tvm.relax.frontend.nn` exported with KV
    /// caches: `_initialize_effect`, `prefill` on the prompt, then `decode` steps.
    ///
    /// Prints the new token ids, the prefill time and the decode time per token.
    /// Exit status: 0 on success, 1 when the program is rejected or the run fails, 2 on
    /// usage or I/O errors.
    Generate(generate::GenerateOptions),
    /// Import an ONNX model: print it as a TVMScript program whose `main` takes the graph
    /// inputs, then the weights (bound by name); each symbolic dimension (`dim_param`)
    /// stays a shape variable unless `--dim` fixes it. Progress and a summary go to stderr.
    ///
    /// Exit status: 0 on success, 1 when the model cannot be imported (the message names
    /// the node, its op type and the opset), 2 on usage or I/O errors.
    Import(import::ImportArgs),
    /// The persistent kernel cache: compiled GPU kernels kept across processes (in
    /// `$RELAX_CACHE_DIR`, else the platform's user cache folder; `relax run` and
    /// `relax generate` use it unless given `--no-cache`).
    ///
    /// Exit status: 0 on success, 2 when the folder cannot be found or cleared.
    Cache {
        #[command(subcommand)]
        action: cache::CacheCommand,
    },
}

/// The names `--pass` accepts: every registered pass, with its description.
fn pass_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        relax_transform::registered_passes()
            .into_iter()
            .map(|(name, help)| clap::builder::PossibleValue::new(name).help(help)),
    )
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let code = match cli.command {
        Command::Print {
            file,
            passes,
            time_passes,
            dump_ir,
        } => print::run(&file, &passes, time_passes, dump_ir),
        Command::Check { file, json, lenient } => check::run(&file, json, lenient),
        Command::Wgsl { file, func } => wgsl::run(&file, func.as_deref()),
        Command::Run(options) => run::run(&options),
        Command::Generate(options) => generate::run(&options),
        Command::Import(args) => import::run(&args),
        Command::Cache { action } => cache::run(action),
    };
    ExitCode::from(code)
}
