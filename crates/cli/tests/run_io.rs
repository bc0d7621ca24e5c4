//! `relax run`'s tensor and weight files: float16 and bfloat16 `.npy`/`.npz` in and out
//! (compared bit for bit), `--params model.safetensors` with the names TVM front ends
//! give weights (`m.transformer.wpe.weight`), `--json` of float16/bfloat16/int4
//! results, `--inputs-json` of sub-byte integers, and malformed or hostile files and
//! results (huge claimed shapes, overflowing shapes, billions of empty lists) as
//! errors rather than aborts.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{header, npy_bytes, stderr, stdout, zip_bytes, Scratch};
use half::{bf16, f16};
use serde_json::json;

/// A fresh directory for one test (removed at its end).
fn dir(name: &str) -> Scratch {
    Scratch::new("run-io", name)
}

fn relax(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relax"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the relax binary runs")
}

fn le16(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f16_bits(v: &[f32]) -> Vec<u16> {
    v.iter().map(|&x| f16::from_f32(x).to_bits()).collect()
}

/// The data of a `.npy` file, after checking that its header is `want`.
fn npy_data<'a>(file: &'a [u8], want: &str) -> &'a [u8] {
    assert!(file.starts_with(b"\x93NUMPY\x01\x00"), "a .npy 1.0 file");
    let len = u16::from_le_bytes([file[8], file[9]]) as usize;
    let h = std::str::from_utf8(&file[10..10 + len]).expect("text");
    assert_eq!(h.trim_end(), want);
    assert_eq!((10 + len) % 64, 0, "the data is aligned to 64 bytes");
    &file[10 + len..]
}

const F16_ADD: &str = r#"# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((2, 2), dtype="float16"), m_transformer_wpe_weight: R.Tensor((2, 2), dtype="float16")) -> R.Tensor((2, 2), dtype="float16"):
    y = R.add(x, m_transformer_wpe_weight)
    return y
"#;

const X: [f32; 4] = [1.0, -2.5, 1365.0 / 4096.0, 1024.0];
const W: [f32; 4] = [0.5, 0.25, 1.0 / 4096.0, -1.0];

/// `x + w` in float16: every sum here is exact.
fn expected_sum() -> Vec<u16> {
    let s: Vec<f32> = X.iter().zip(W).map(|(a, b)| a + b).collect();
    f16_bits(&s)
}

#[test]
fn float16_npy_input_npz_weights_and_npy_output_are_bit_exact() {
    let d = dir("f16");
    std::fs::write(d.join("prog.py"), F16_ADD).expect("prog");
    std::fs::write(
        d.join("x.npy"),
        npy_bytes(&header("<f2", "(2, 2)"), &le16(&f16_bits(&X))),
    )
    .expect("x");
    let w = npy_bytes(&header("<f2", "(2, 2)"), &le16(&f16_bits(&W)));
    // The weight under its front-end name, with dots.
    std::fs::write(d.join("w.npz"), zip_bytes(&[("m.transformer.wpe.weight.npy", w)], true)).expect("w");
    let o = relax(
        &d,
        &[
            "run", "prog.py", "--device", "cpu", "--input", "x.npy", "--params", "w.npz", "--output", "out.npy",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("shape (2, 2), float16"), "{}", stdout(&o));
    let out = std::fs::read(d.join("out.npy")).expect("out.npy");
    assert_eq!(npy_data(&out, &header("<f2", "(2, 2)")), le16(&expected_sum()));

    // Several results go to an .npz, float16 included.
    let o = relax(
        &d,
        &[
            "run", "prog.py", "--device", "cpu", "--input", "x.npy", "--params", "w.npz", "--output", "out.npz",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut z = zip::ZipArchive::new(std::fs::File::open(d.join("out.npz")).expect("out.npz")).expect("zip");
    let mut entry = Vec::new();
    std::io::Read::read_to_end(&mut z.by_name("arr_0.npy").expect("arr_0"), &mut entry).expect("read");
    assert_eq!(npy_data(&entry, &header("<f2", "(2, 2)")), le16(&expected_sum()));

    // --json prints the float16 values (the shortest decimals that read back).
    let o = relax(
        &d,
        &[
            "run", "prog.py", "--device", "cpu", "--input", "x.npy", "--params", "w.npz", "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(j["outputs"][0]["dtype"], json!("float16"));
    let data: Vec<u16> = j["outputs"][0]["data"]
        .as_array()
        .expect("rows")
        .iter()
        .flat_map(|r| r.as_array().expect("row").clone())
        .map(|v| f16::from_f64(v.as_f64().expect("number")).to_bits())
        .collect();
    assert_eq!(data, expected_sum());
}

/// The same program with its weight from a `.safetensors` file, named as Hugging Face
/// and TVM's front ends name it.
#[test]
fn safetensors_params_bind_by_dotted_name() {
    let d = dir("safetensors");
    std::fs::write(d.join("prog.py"), F16_ADD).expect("prog");
    std::fs::write(
        d.join("x.npy"),
        npy_bytes(&header("<f2", "(2, 2)"), &le16(&f16_bits(&X))),
    )
    .expect("x");
    let head = r#"{"__metadata__":{"format":"pt"},"m.transformer.wpe.weight":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]}}"#;
    let mut file = (head.len() as u64).to_le_bytes().to_vec();
    file.extend(head.as_bytes());
    file.extend(le16(&f16_bits(&W)));
    std::fs::write(d.join("model.safetensors"), &file).expect("model");
    let o = relax(
        &d,
        &[
            "run",
            "prog.py",
            "--device",
            "cpu",
            "--input",
            "x.npy",
            "--params",
            "model.safetensors",
            "--output",
            "out.npy",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = std::fs::read(d.join("out.npy")).expect("out.npy");
    assert_eq!(npy_data(&out, &header("<f2", "(2, 2)")), le16(&expected_sum()));

    // A name that binds nothing names the closest parameter.
    let head = r#"{"m.transformer.wte.weight":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]}}"#;
    let mut file = (head.len() as u64).to_le_bytes().to_vec();
    file.extend(head.as_bytes());
    file.extend([0u8; 8]);
    std::fs::write(d.join("wrong.safetensors"), &file).expect("wrong");
    let o = relax(
        &d,
        &[
            "run",
            "prog.py",
            "--device",
            "cpu",
            "--input",
            "x.npy",
            "--params",
            "wrong.safetensors",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("closest parameter is `m_transformer_wpe_weight`"),
        "{}",
        stderr(&o)
    );
    // A malformed header is an error, not a panic.
    let mut bad = u64::MAX.to_le_bytes().to_vec();
    bad.extend(b"{}");
    std::fs::write(d.join("bad.safetensors"), &bad).expect("bad");
    let o = relax(
        &d,
        &[
            "run",
            "prog.py",
            "--device",
            "cpu",
            "--input",
            "x.npy",
            "--params",
            "bad.safetensors",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("header length"), "{}", stderr(&o));
}

const TO_BF16: &str = r#"# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((3,), dtype="float32")) -> R.Tensor((3,), dtype="bfloat16"):
    y = R.astype(x, "bfloat16")
    return y
"#;

#[test]
fn bfloat16_results_are_written_and_printed() {
    let d = dir("bf16");
    std::fs::write(d.join("prog.py"), TO_BF16).expect("prog");
    // Exactly representable in bfloat16.
    let x = [1.5f32, -2.0, 0.15625];
    let data: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(d.join("x.npy"), npy_bytes(&header("<f4", "(3,)"), &data)).expect("x");
    let o = relax(
        &d,
        &[
            "run", "prog.py", "--device", "cpu", "--input", "x.npy", "--output", "out.npy",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("shape (3,), bfloat16, first [1.500000, -2.000000, 0.156250], min -2.000000, max 1.500000"),
        "{}",
        stdout(&o)
    );
    let out = std::fs::read(d.join("out.npy")).expect("out.npy");
    let bits: Vec<u16> = x.iter().map(|&v| bf16::from_f32(v).to_bits()).collect();
    // As `np.save` writes an `ml_dtypes.bfloat16` array.
    assert_eq!(npy_data(&out, &header("<V2", "(3,)")), le16(&bits));
    // ... and it reads back as bfloat16.
    std::fs::write(d.join("id.py"), ID_BF16).expect("id");
    let o = relax(&d, &["run", "id.py", "--device", "cpu", "--input", "out.npy", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(j["outputs"][0]["dtype"], json!("bfloat16"));
    assert_eq!(j["outputs"][0]["data"], json!([1.5, -2.0, 0.15625]));
    assert_eq!(j["structure"], json!("tensor"));
    assert_eq!(j["device"], json!("cpu"));
}

const ID_BF16: &str = r#"# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((3,), dtype="bfloat16")) -> R.Tensor((3,), dtype="bfloat16"):
    return x
"#;

/// int4, uint4 and int2 inputs from JSON (every value of their range), printed back,
/// through parameters that leave the dtype open (the JSON names it).
#[test]
fn sub_byte_integers_from_inputs_json() {
    let d = dir("int4");
    let prog = r#"# from tvm.script import relax as R
@R.function
def main(a: R.Tensor((16,)), b: R.Tensor((16,)), c: R.Tensor((4,))):
    return (a, b, c)
"#;
    std::fs::write(d.join("prog.py"), prog).expect("prog");
    let a: Vec<i64> = (-8..8).collect();
    let b: Vec<i64> = (0..16).collect();
    let c: Vec<i64> = (-2..2).collect();
    let inputs = json!([
        {"dtype": "int4", "shape": [16], "data": a},
        {"dtype": "uint4", "shape": [16], "data": b},
        {"dtype": "int2", "shape": [4], "data": c},
    ]);
    std::fs::write(d.join("in.json"), inputs.to_string()).expect("inputs");
    let o = relax(
        &d,
        &[
            "run",
            "prog.py",
            "--device",
            "cpu",
            "--inputs-json",
            "in.json",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(j["outputs"][0]["data"], json!(a));
    assert_eq!(j["outputs"][1]["data"], json!(b));
    assert_eq!(j["outputs"][2]["data"], json!(c));
    assert_eq!(j["outputs"][0]["dtype"], json!("int4"));
    assert_eq!(j["structure"], json!([0, 1, 2]));
    // Out of range is still an error.
    for (dtype, v) in [("int4", 8), ("int4", -9), ("uint4", 16), ("uint4", -1), ("int2", 2)] {
        let bad = json!([{"dtype": dtype, "shape": [16], "data": vec![v; 16]}]);
        std::fs::write(d.join("bad.json"), bad.to_string()).expect("bad");
        let o = relax(&d, &["run", "prog.py", "--device", "cpu", "--inputs-json", "bad.json"]);
        assert_eq!(o.status.code(), Some(1), "{dtype} {v}");
        assert!(
            stderr(&o).contains(&format!("value {v} does not fit dtype {dtype}")),
            "{}",
            stderr(&o)
        );
    }
    // Written to .npy as int8 / uint8 values.
    let o = relax(
        &d,
        &[
            "run",
            "prog.py",
            "--device",
            "cpu",
            "--inputs-json",
            "in.json",
            "--output",
            "out.npz",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("int4, first [-8.000000, -7.000000,"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("uint4, first [0.000000, 1.000000,") && stdout(&o).contains("max 15.000000"),
        "{}",
        stdout(&o)
    );
    let mut z = zip::ZipArchive::new(std::fs::File::open(d.join("out.npz")).expect("out.npz")).expect("zip");
    let mut entry = Vec::new();
    std::io::Read::read_to_end(&mut z.by_name("arr_0.npy").expect("arr_0"), &mut entry).expect("read");
    let want: Vec<u8> = a.iter().map(|&v| v as i8 as u8).collect();
    assert_eq!(npy_data(&entry, &header("|i1", "(16,)")), want);
}

const PROG_F32: &str = r#"# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((2,), dtype="float32"), w: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
    y = R.add(x, w)
    return y
"#;

/// `--params` entries whose headers claim 10^15 elements or an overflowing shape, and
/// `--input` files with an overflowing shape of zero elements: errors, not aborts.
#[test]
fn hostile_npy_and_npz_headers_are_errors() {
    let d = dir("hostile");
    std::fs::write(d.join("prog.py"), PROG_F32).expect("prog");
    let x: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(d.join("x.npy"), npy_bytes(&header("<f4", "(2,)"), &x)).expect("x");
    let overflow = "(0, 9223372036854775807, 9223372036854775807)";
    let cases = [
        (
            "huge.npz",
            header("<f4", "(1000000000000000,)"),
            64,
            "4000000000000000 bytes",
        ),
        ("overflow.npz", header("<f4", overflow), 0, "too large"),
        (
            "overflow2.npz",
            header("<f4", "(4294967296, 4294967296, 4294967296)"),
            0,
            "overflows",
        ),
    ];
    for (name, h, n, want) in cases {
        let entry = npy_bytes(&h, &vec![0u8; n]);
        std::fs::write(d.join(name), zip_bytes(&[("w.npy", entry)], true)).expect("npz");
        let o = relax(
            &d,
            &[
                "run", "prog.py", "--device", "cpu", "--input", "x.npy", "--params", name,
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("entry `w`") && e.contains(want), "{name}: {e}");
    }
    std::fs::write(d.join("bad.npy"), npy_bytes(&header("<f4", overflow), &[])).expect("bad");
    let o = relax(
        &d,
        &[
            "run", "prog.py", "--device", "cpu", "--input", "x.npy", "--input", "bad.npy",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("bad.npy") && stderr(&o).contains("too large"),
        "{}",
        stderr(&o)
    );
    // Unsupported and ambiguous dtypes say which.
    std::fs::write(d.join("v1.npy"), npy_bytes(&header("<V1", "(2,)"), &[0, 0])).expect("v1");
    let o = relax(
        &d,
        &[
            "run", "prog.py", "--device", "cpu", "--input", "x.npy", "--input", "v1.npy",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("ambiguous"), "{}", stderr(&o));
}

/// `--json` of a result whose JSON form would be billions of empty lists is an error
/// (found before printing anything) that suggests `--output`, which writes it.
#[test]
fn json_of_huge_empty_results_is_bounded() {
    let d = dir("json-bound");
    let prog = r#"# from tvm.script import relax as R
@R.function
def main() -> R.Tensor((4294967297, 0), dtype="float32"):
    y = R.zeros(R.shape([4294967297, 0]), dtype="float32")
    return y
"#;
    std::fs::write(d.join("prog.py"), prog).expect("prog");
    let t = std::time::Instant::now();
    let o = relax(&d, &["run", "prog.py", "--device", "cpu", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(t.elapsed().as_secs() < 60, "bounded time");
    let e = stderr(&o);
    assert!(e.contains("too large for --json") && e.contains("--output"), "{e}");
    assert!(stdout(&o).is_empty(), "nothing printed: {}", stdout(&o));
    let o = relax(&d, &["run", "prog.py", "--device", "cpu", "--output", "out.npy"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = std::fs::read(d.join("out.npy")).expect("out.npy");
    assert!(npy_data(&out, &header("<f4", "(4294967297, 0)")).is_empty());
    // Small empty results still print as nested lists.
    let prog = r#"# from tvm.script import relax as R
@R.function
def main() -> R.Tensor((2, 0), dtype="float32"):
    y = R.zeros(R.shape([2, 0]), dtype="float32")
    return y
"#;
    std::fs::write(d.join("small.py"), prog).expect("prog");
    let o = relax(&d, &["run", "small.py", "--device", "cpu", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(j["outputs"][0]["data"], json!([[], []]));
    assert_eq!(j["outputs"][0]["shape"], json!([2, 0]));
}

/// float8 and float4 inputs from JSON (rounded to the nearest value of the type) and
/// results as JSON (their exact values), on the host and the GPU: the values
/// `ml_dtypes` 0.6 gives for the same casts.
#[test]
fn low_precision_floats_through_inputs_json() {
    let d = dir("float8");
    let prog = r#"# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((6,), dtype="float32"), y: R.Tensor((4,), dtype="float8_e5m2")):
    a = R.astype(x, dtype="float8_e4m3fn")
    b = R.astype(x, dtype="float4_e2m1fn")
    c = R.astype(y, dtype="float32")
    return (a, b, c, y)
"#;
    std::fs::write(d.join("prog.py"), prog).expect("prog");
    let inputs = json!([
        {"dtype": "float32", "shape": [6], "data": [0.3, 1.0, -2.5, 500.0, "nan", 0.75]},
        {"dtype": "float8_e5m2", "shape": [4], "data": [1.5, -0.1, "inf", 60000]},
    ]);
    std::fs::write(d.join("in.json"), inputs.to_string()).expect("inputs");
    // ml_dtypes: x.astype(float8_e4m3fn), x.astype(float4_e2m1fn), y.astype(float8_e5m2).
    let e4m3 = json!([0.3125, 1.0, -2.5, "nan", "nan", 0.75]);
    let e2m1 = json!([0.5, 1.0, -2.0, 6.0, -0.0, 1.0]);
    let e5m2 = json!([1.5, -0.09375, "inf", 57344.0]);
    for device in ["cpu", "gpu"] {
        let o = relax(
            &d,
            &[
                "run",
                "prog.py",
                "--device",
                device,
                "--inputs-json",
                "in.json",
                "--json",
            ],
        );
        if device == "gpu" && o.status.code() != Some(0) && stderr(&o).contains("adapter") {
            println!("no wgpu adapter: skipping the GPU half");
            continue;
        }
        assert_eq!(o.status.code(), Some(0), "{device}: {}", stderr(&o));
        let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
        assert_eq!(j["outputs"][0]["dtype"], json!("float8_e4m3fn"), "{device}");
        assert_eq!(j["outputs"][0]["data"], e4m3, "{device}");
        assert_eq!(j["outputs"][1]["data"], e2m1, "{device}");
        assert_eq!(j["outputs"][2]["data"], e5m2, "{device}");
        assert_eq!(j["outputs"][3]["data"], e5m2, "{device}");
    }
}
