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
    /// or `.safetensors` file (by the extension), keyed by parameter name
    /// (`relax run prog.py --params weights.npz` binds them).
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
    let text = tvm_parsable(&print_program(&Program::Module(imported.module.clone())));
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
        let ext = p.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
        let written = match ext.as_deref() {
            Some("npz") => relax_engine::onnx::weights_of(&imported)
                .and_then(|w| w.write_npz(p))
                .map_err(|e| e.to_string()),
            Some("safetensors") => write_safetensors(&imported.params, p),
            _ => {
                eprintln!(
                    "error: --params-out {}: the file must end in .npz or .safetensors",
                    p.display()
                );
                return EXIT_USAGE;
            }
        };
        if let Err(e) = written {
            eprintln!("error: {e}");
            return EXIT_REJECTED;
        }
        eprintln!("wrote {} weights to {}", imported.params.len(), p.display());
    }
    EXIT_OK
}

/// The safetensors name of `dtype`, if the format has one.
fn safetensors_dtype(dtype: relax_ir::DataType) -> Option<&'static str> {
    use relax_ir::TypeCode;
    if dtype.lanes != 1 {
        return None;
    }
    Some(match (dtype.code, dtype.bits) {
        (TypeCode::Float, 16) => "F16",
        (TypeCode::Float, 32) => "F32",
        (TypeCode::Float, 64) => "F64",
        (TypeCode::BFloat, 16) => "BF16",
        (TypeCode::Int, 8) => "I8",
        (TypeCode::Int, 16) => "I16",
        (TypeCode::Int, 32) => "I32",
        (TypeCode::Int, 64) => "I64",
        (TypeCode::UInt, 1) => "BOOL",
        (TypeCode::UInt, 8) => "U8",
        (TypeCode::UInt, 16) => "U16",
        (TypeCode::UInt, 32) => "U32",
        (TypeCode::UInt, 64) => "U64",
        _ => return None,
    })
}

/// The bytes of a `.safetensors` file holding `params` (an 8-byte little-endian
/// header length, the JSON header with each tensor's dtype, shape and byte range, the
/// data), in parameter order.
pub fn safetensors_bytes(params: &[(String, relax_ir::NDArray)]) -> Result<Vec<u8>, String> {
    let mut header = serde_json::Map::new();
    let mut offset = 0usize;
    for (name, a) in params {
        let dtype =
            safetensors_dtype(a.dtype).ok_or_else(|| format!("`{name}`: {} has no safetensors type", a.dtype))?;
        let expected = a.numel() * a.dtype.bytes();
        if a.data.len() != expected {
            return Err(format!("`{name}`: {} bytes of data, expected {expected}", a.data.len()));
        }
        header.insert(
            name.clone(),
            serde_json::json!({
                "dtype": dtype,
                "shape": a.shape,
                "data_offsets": [offset, offset + a.data.len()],
            }),
        );
        offset += a.data.len();
    }
    let mut h = serde_json::Value::Object(header).to_string().into_bytes();
    // the data starts 8-byte aligned, the header padded with spaces
    while !(8 + h.len()).is_multiple_of(8) {
        h.push(b' ');
    }
    let mut out = Vec::with_capacity(8 + h.len() + offset);
    out.extend_from_slice(&(h.len() as u64).to_le_bytes());
    out.extend_from_slice(&h);
    for (_, a) in params {
        out.extend_from_slice(&a.data);
    }
    Ok(out)
}

fn write_safetensors(params: &[(String, relax_ir::NDArray)], path: &Path) -> Result<(), String> {
    let bytes = safetensors_bytes(params)?;
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `text` with the non-finite elements of constants written `float("-inf")`: TVM prints
/// them as strings (`R.const("-inf", "float32")`), which its own parser rejects;
/// `float("-inf")` parses in TVM and here. Only the arguments of `R.const(...)` change.
pub fn tvm_parsable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("R.const(") {
        let (head, tail) = rest.split_at(i + "R.const(".len());
        out.push_str(head);
        // the call's arguments: up to the matching parenthesis, outside strings
        let (mut depth, mut in_str, mut end) = (1usize, false, tail.len());
        for (k, ch) in tail.char_indices() {
            match ch {
                '"' => in_str = !in_str,
                '(' | '[' if !in_str => depth += 1,
                ')' | ']' if !in_str => {
                    depth -= 1;
                    if depth == 0 {
                        end = k;
                        break;
                    }
                }
                _ => {}
            }
        }
        let mut args = tail[..end].to_string();
        for w in ["\"-inf\"", "\"inf\"", "\"nan\""] {
            args = args.replace(w, &format!("float({w})"));
        }
        out.push_str(&args);
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_constants_are_written_as_float_calls() {
        let text = "x = R.const(\"-inf\", \"float32\")\ny = R.const([1.0, \"nan\", \"inf\"], \"float32\")\nz = R.call_pure_packed(\"inf\")";
        assert_eq!(
            tvm_parsable(text),
            "x = R.const(float(\"-inf\"), \"float32\")\ny = R.const([1.0, float(\"nan\"), float(\"inf\")], \"float32\")\nz = R.call_pure_packed(\"inf\")"
        );
        assert_eq!(
            tvm_parsable("R.Tensor((2,), dtype=\"float32\")"),
            "R.Tensor((2,), dtype=\"float32\")"
        );
    }

    /// The rewritten constants parse here (TVM 0.27 parses them too; it rejects
    /// `R.const("-inf", ...)`).
    #[test]
    fn float_calls_parse() {
        let src = tvm_parsable(
            "# from tvm.script import relax as R\n\n@R.function\ndef main(x: R.Tensor((2,), dtype=\"float32\")) -> R.Tensor((2,), dtype=\"float32\"):\n    y: R.Tensor((2,), dtype=\"float32\") = R.add(x, R.const(\"-inf\", \"float32\"))\n    return y\n",
        );
        assert!(src.contains("R.const(float(\"-inf\"), \"float32\")"), "{src}");
        let m = relax_ir::text::parse(&src).unwrap_or_else(|d| panic!("{d}\n{src}"));
        let again = print_program(&m);
        assert!(again.contains("R.const(\"-inf\", \"float32\")"), "{again}");
    }

    #[test]
    fn safetensors_layout() {
        let a = relax_ir::NDArray {
            dtype: relax_ir::DataType::FLOAT32,
            shape: vec![2],
            data: [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect(),
        };
        let b = relax_ir::NDArray {
            dtype: relax_ir::DataType::INT64,
            shape: vec![],
            data: 7i64.to_le_bytes().to_vec(),
        };
        let bytes = safetensors_bytes(&[("w".into(), a), ("n".into(), b)]).expect("writes");
        let len = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
        assert!((8 + len).is_multiple_of(8));
        let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + len]).expect("json");
        assert_eq!(header["w"]["dtype"], "F32");
        assert_eq!(header["w"]["shape"], serde_json::json!([2]));
        assert_eq!(header["w"]["data_offsets"], serde_json::json!([0, 8]));
        assert_eq!(header["n"]["dtype"], "I64");
        assert_eq!(header["n"]["data_offsets"], serde_json::json!([8, 16]));
        assert_eq!(&bytes[8 + len + 8..], &7i64.to_le_bytes());
        let bad = relax_ir::NDArray {
            dtype: relax_ir::DataType::FLOAT32,
            shape: vec![3],
            data: vec![0; 4],
        };
        assert!(safetensors_bytes(&[("bad".into(), bad)]).is_err());
    }
}
