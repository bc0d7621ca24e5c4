//! The `relax` command-line tool: parse, print, check, compile to WGSL and run
//! Relax programs written in TVMScript.

mod check;
mod common;
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
    },
    /// Parse a TVMScript file and print it back in TVM 0.27's dialect.
    ///
    /// Exit status: 0 on success, 1 on a parse error (diagnostic on stderr), 2 on I/O errors.
    Print {
        /// The TVMScript file (`-` reads standard input).
        file: PathBuf,
        /// Passes to apply before printing, in order (repeatable): check, normalize,
        /// realize-vdevice, legalize, dead-code-elimination, fuse-ops, fuse-tir.
        #[arg(long = "pass", value_parser = pass_names())]
        passes: Vec<String>,
        /// Print each pass's time on stderr.
        #[arg(long = "time-passes")]
        time_passes: bool,
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
    Run {
        /// The TVMScript file (`-` reads standard input).
        file: PathBuf,
        /// The Relax function to call.
        #[arg(long, default_value = "main")]
        entry: String,
        /// Where to run: `auto` takes the first wgpu adapter (software adapters such as lavapipe
        /// count) and says which on stderr, or falls back to the host with a note; `gpu` requires
        /// an adapter (kernels become WGSL); `cpu` runs everything on the host. Tensors on a
        /// module's VDevices follow their StructInfo in every mode except `cpu`.
        #[arg(long, value_enum, default_value = "auto")]
        device: run::DeviceArg,
        /// An input tensor as a `.npy` file (repeat, in parameter order).
        #[arg(long = "input")]
        inputs: Vec<PathBuf>,
        /// All inputs as a JSON file (see above).
        #[arg(long = "inputs-json")]
        inputs_json: Option<PathBuf>,
        /// An `.npz` file whose entries bind to the parameters of the same name (the weights of
        /// a model); the parameters left take `--input`/`--inputs-json` in order. A missing,
        /// extra or mis-shaped entry is an error naming the parameter.
        #[arg(long)]
        params: Option<PathBuf>,
        /// Print the result as JSON on stdout.
        #[arg(long)]
        json: bool,
        /// Run this many times (the last result is printed).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        repeat: u32,
        /// Print engine statistics on stderr (runs, kernels run per device, kernels compiled
        /// and cache hits, packed calls, copies and bytes moved by kind, allocations, time).
        #[arg(long)]
        stats: bool,
        /// Write the result: `.npy` for a single tensor, `.npz` (arr_0, arr_1, ...) for several.
        /// Stdout then shows a summary of each tensor (shape, dtype, first values, min, max,
        /// mean) instead of every value, unless `--json` is given.
        #[arg(long)]
        output: Option<PathBuf>,
        /// Print each preparation pass's time on stderr.
        #[arg(long = "time-passes")]
        time_passes: bool,
        /// Skip the graph optimizations (operator fusion, dead-code elimination).
        #[arg(long = "no-optimize")]
        no_optimize: bool,
        /// Print the GPU time of each kernel on stderr, most first, with the PrimFunc
        /// (legalized operator or fused group) it runs and its GFLOP/s where the flop
        /// count is known (GPU timestamps when the adapter has them, else wall time
        /// per submission; every kernel then waits for completion).
        #[arg(long)]
        profile: bool,
        /// Do not plan storage reuse at compile time (`static-plan-block-memory`, as TVM's
        /// StaticPlanBlockMemory, on by default): allocate each intermediate tensor when
        /// it is produced and release it after its last use instead.
        #[arg(long = "no-static-memory-plan")]
        no_static_memory_plan: bool,
    },
}

/// The names `--pass` accepts: every registered pass.
fn pass_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(relax_transform::registered_passes().iter().map(|(n, _)| *n))
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
        } => print::run(&file, &passes, time_passes),
        Command::Check { file, json } => check::run(&file, json),
        Command::Wgsl { file, func } => wgsl::run(&file, func.as_deref()),
        Command::Run {
            file,
            entry,
            device,
            inputs,
            inputs_json,
            params,
            json,
            repeat,
            stats,
            output,
            time_passes,
            no_optimize,
            profile,
            no_static_memory_plan,
        } => run::run(&run::RunOptions {
            file,
            entry,
            device,
            inputs,
            inputs_json,
            params,
            json,
            repeat: repeat as usize,
            stats,
            output,
            time_passes,
            no_optimize,
            profile,
            static_memory_plan: !no_static_memory_plan,
        }),
    };
    ExitCode::from(code)
}
