//! Print the SqueezeNet program of `tests/models/squeezenet/` (TVMScript, as Apache
//! TVM 0.27 imports the ONNX model), for the `relax` command line:
//! `cargo run --release --example squeezenet_program > squeezenet.py`.

#[path = "../tests/models/squeezenet/program.rs"]
mod program;

fn main() {
    println!("{}", program::squeezenet_program());
}
