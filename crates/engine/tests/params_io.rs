//! Weights and tensors in and out: `.npy` (float16, bfloat16 as `ml_dtypes` saves it,
//! big-endian and Fortran-order data), `.npz` (headers checked before anything is
//! allocated or inflated, against the host memory limit), `.safetensors` (every dtype
//! the engine has; malformed headers are errors), and parameters bound by the names TVM
//! front ends give weights (`m.transformer.wpe.weight`), printed as
//! `m_transformer_wpe_weight`.
//!
//! Every test file is made here, byte by byte; values are compared bit for bit.

mod common;

use common::files::{header, npy_bytes, zip_bytes};

use common::text::parse;
use half::{bf16, f16};
use relax_engine::params::{bind_args, npy, parse_npy, printed_name, Params};
use relax_engine::{EngineError, Tensor, Value};
use relax_ir::{DataType, TypeCode};

const BF16: DataType = DataType::new(TypeCode::BFloat, 16, 1);

/// A fresh temporary directory for one test.
fn tmp(name: &str) -> common::Scratch {
    common::Scratch::new("params-io", name)
}

fn f16_bits(t: &Tensor) -> Vec<u16> {
    t.to_bytes()
        .expect("bytes")
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

fn err_text(r: Result<impl std::fmt::Debug, EngineError>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

// ---------------------------------------------------------------- .npy

#[test]
fn float16_npy_reads_and_writes_bit_exactly() {
    // Ordinary values, the smallest subnormal, -0, infinity and a NaN payload.
    let bits: Vec<u16> = vec![0x3c00, 0xc000, 0x3555, 0x0001, 0x8000, 0x7c00, 0x7e01, 0x7bff];
    let data: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
    let t = parse_npy(&npy_bytes(&header("<f2", "(2, 4)"), &data)).expect("float16 .npy");
    assert_eq!(t.dtype(), DataType::FLOAT16);
    assert_eq!(t.shape(), &[2, 4]);
    assert_eq!(f16_bits(&t), bits);
    // Written back: NumPy's header and the same bytes.
    let out = npy::encode(&t).expect("encode");
    assert_eq!(out, npy_bytes(&header("<f2", "(2, 4)"), &data));
    assert_eq!(out.len() % 64, 16, "the data starts at a multiple of 64 bytes");
    assert_eq!(f16_bits(&parse_npy(&out).expect("round trip")), bits);
    assert_eq!(f16::from_bits(bits[2]).to_f32(), 0.33325195);
}

#[test]
fn bfloat16_npy_is_mldtypes_v2() {
    // `np.save(f, np.array([1.5, -2, 3], dtype=ml_dtypes.bfloat16))` writes this header.
    let bits: Vec<u16> = [1.5f32, -2.0, 3.0]
        .iter()
        .map(|&x| bf16::from_f32(x).to_bits())
        .collect();
    let data: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
    let file = npy_bytes(&header("<V2", "(3,)"), &data);
    let t = parse_npy(&file).expect("bfloat16 .npy");
    assert_eq!(t.dtype(), BF16);
    assert_eq!(f16_bits(&t), bits);
    assert_eq!(npy::encode(&t).expect("encode"), file);
    // NumPy's own two-byte void and ml_dtypes' one-byte types are refused.
    let e = err_text(parse_npy(&npy_bytes(&header("|V2", "(3,)"), &data)));
    assert!(e.contains("unsupported .npy dtype '|V2'"), "{e}");
    let e = err_text(parse_npy(&npy_bytes(&header("<V1", "(3,)"), &[0; 3])));
    assert!(e.contains("ambiguous"), "{e}");
}

#[test]
fn big_endian_and_fortran_order_npy_read_as_row_major() {
    let data: Vec<u8> = [1.0f32, 2.0, 3.0].iter().flat_map(|x| x.to_be_bytes()).collect();
    let t = parse_npy(&npy_bytes(&header(">f4", "(3,)"), &data)).expect(">f4");
    assert_eq!(
        t.to_array::<f32>().expect("f32").into_raw_vec_and_offset().0,
        vec![1.0, 2.0, 3.0]
    );
    // [[1, 2, 3], [4, 5, 6]] stored column by column.
    let data: Vec<u8> = [1i32, 4, 2, 5, 3, 6].iter().flat_map(|x| x.to_le_bytes()).collect();
    let h = "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }";
    let t = parse_npy(&npy_bytes(h, &data)).expect("fortran order");
    assert_eq!(
        t.to_array::<i32>().expect("i32").into_raw_vec_and_offset().0,
        vec![1, 2, 3, 4, 5, 6]
    );
}

#[test]
fn npy_shapes_that_overflow_are_errors_not_panics() {
    // The element count is 0, so a byte-size check passes, but the other dimensions'
    // product overflows (ndarray-npy used to panic on it).
    let h = header("<f4", "(0, 9223372036854775807, 9223372036854775807)");
    let e = err_text(parse_npy(&npy_bytes(&h, &[])));
    assert!(e.contains("too large"), "{e}");
    let h = header("<f4", "(4294967296, 4294967296, 4294967296)");
    assert!(err_text(parse_npy(&npy_bytes(&h, &[]))).contains("overflows"));
    let h = header("<f4", "(18446744073709551616,)");
    assert!(err_text(parse_npy(&npy_bytes(&h, &[]))).contains("overflows"));
    // Data shorter or longer than the header claims.
    let h = header("<f4", "(3,)");
    assert!(err_text(parse_npy(&npy_bytes(&h, &[0; 8]))).contains("needs 12 bytes of data, the file has 8"));
    assert!(err_text(parse_npy(&npy_bytes(&h, &[0; 16]))).contains("needs 12 bytes of data, the file has 16"));
    // A structured dtype.
    let h = "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }";
    assert!(err_text(parse_npy(&npy_bytes(h, &[0; 12]))).contains("structured"));
}

// ---------------------------------------------------------------- .npz

#[test]
fn npz_float16_and_bfloat16_entries_round_trip() {
    let dir = tmp("npz-roundtrip");
    let h = Tensor::from_bytes(
        DataType::FLOAT16,
        &[3],
        [0x3c00u16, 0x0001, 0xfbff]
            .iter()
            .flat_map(|b| b.to_le_bytes())
            .collect(),
    )
    .expect("f16");
    let b = Tensor::from_bytes(
        BF16,
        &[2],
        [0x3fc0u16, 0xc000].iter().flat_map(|b| b.to_le_bytes()).collect(),
    )
    .expect("bf16");
    let mut p = Params::new();
    p.insert("embed_tokens.weight", Value::Tensor(h));
    p.insert("b", Value::Tensor(b));
    let path = dir.join("w.npz");
    p.write_npz(&path).expect("write");
    let q = Params::read_npz(&path).expect("read");
    let names: Vec<&str> = q.iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["embed_tokens.weight", "b"]);
    let t = q
        .get("embed_tokens.weight")
        .and_then(Value::as_tensor)
        .expect("f16 entry");
    assert_eq!(t.dtype(), DataType::FLOAT16);
    assert_eq!(f16_bits(t), [0x3c00, 0x0001, 0xfbff]);
    let t = q.get("b").and_then(Value::as_tensor).expect("bf16 entry");
    assert_eq!(t.dtype(), BF16);
    assert_eq!(f16_bits(t), [0x3fc0, 0xc000]);
    // `Params::read` tells the format from the bytes.
    assert_eq!(Params::read(&path).expect("read").len(), 2);
}

#[test]
fn npz_entry_claiming_1e15_elements_is_an_error_before_allocating() {
    let dir = tmp("npz-huge");
    let entry = npy_bytes(&header("<f4", "(1000000000000000,)"), &[0; 64]);
    let path = dir.join("w.npz");
    std::fs::write(&path, zip_bytes(&[("w.npy", entry)], false)).expect("write");
    let e = err_text(Params::read_npz(&path));
    assert!(e.contains("entry `w`"), "{e}");
    assert!(
        e.contains("needs 4000000000000000 bytes of data, the entry has 64"),
        "{e}"
    );
}

#[test]
fn npz_entry_with_overflowing_empty_shape_is_an_error() {
    let dir = tmp("npz-overflow");
    let entry = npy_bytes(&header("<f4", "(0, 9223372036854775807, 9223372036854775807)"), &[]);
    let path = dir.join("w.npz");
    std::fs::write(&path, zip_bytes(&[("w.npy", entry)], true)).expect("write");
    let e = err_text(Params::read_npz(&path));
    assert!(e.contains("entry `w`") && e.contains("too large"), "{e}");
}

#[test]
fn npz_data_that_differs_from_the_header_is_an_error() {
    let dir = tmp("npz-short");
    // Claims 4 floats, holds 2; then claims 2, holds 4.
    for (shape, n, want) in [
        ("(4,)", 8usize, "needs 16 bytes of data, the entry has 8"),
        ("(2,)", 16, "needs 8 bytes of data, the entry has 16"),
    ] {
        let entry = npy_bytes(&header("<f4", shape), &vec![0; n]);
        let path = dir.join("w.npz");
        std::fs::write(&path, zip_bytes(&[("w.npy", entry)], true)).expect("write");
        let e = err_text(Params::read_npz(&path));
        assert!(e.contains(want), "{e}");
    }
    let path = dir.join("not.npz");
    std::fs::write(&path, b"PK\x03\x04 but no more").expect("write");
    assert!(err_text(Params::read_npz(&path)).contains("not an .npz file"));
}

/// A zip bomb: a small deflated entry of zeros whose header claims (and whose data
/// holds) much more than the host memory limit. It is refused from its header, before
/// anything is inflated; entries that together exceed the limit are refused too.
#[test]
fn npz_bomb_is_capped_by_the_host_memory_limit() {
    let dir = tmp("npz-bomb");
    let claimed: usize = 64 << 20; // 64 MiB of float64 zeros
    let entry = npy_bytes(&header("<f8", &format!("({},)", claimed / 8)), &vec![0u8; claimed]);
    let bomb = zip_bytes(&[("w.npy", entry)], true);
    assert!(bomb.len() < 1 << 20, "the file is small: {} bytes", bomb.len());
    let path = dir.join("bomb.npz");
    std::fs::write(&path, &bomb).expect("write");
    // Two 3 MiB entries: each under a 4 MiB limit, together over it.
    let three = npy_bytes(&header("<f4", "(786432,)"), &vec![0u8; 3 << 20]);
    let pair = dir.join("pair.npz");
    std::fs::write(&pair, zip_bytes(&[("a.npy", three.clone()), ("b.npy", three)], true)).expect("write");

    let before = relax_engine::host_memory_limit();
    relax_engine::set_host_memory_limit(4 << 20);
    let r = Params::read_npz(&path);
    let r2 = Params::read_npz(&pair);
    relax_engine::set_host_memory_limit(before);
    let e = err_text(r);
    assert!(
        e.contains("entry `w`") && e.contains("67108864 bytes") && e.contains("limit of 4194304"),
        "{e}"
    );
    assert!(
        matches!(Params::read_npz(&path), Ok(p) if p.len() == 1),
        "fits the default limit"
    );
    let e = err_text(r2);
    assert!(e.contains("entry `b`") && e.contains("limit of 4194304"), "{e}");
}

// ---------------------------------------------------------------- .safetensors

/// A `.safetensors` file: the 8-byte header length, the JSON header, the data.
fn safetensors_bytes(header: &str, data: &[u8]) -> Vec<u8> {
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend(header.as_bytes());
    b.extend(data);
    b
}

/// The header and data of `tensors` (name, dtype, shape, bytes), laid out in order.
fn safetensors_file(tensors: &[(&str, &str, &[u64], Vec<u8>)]) -> Vec<u8> {
    let mut fields = vec![r#""__metadata__":{"format":"pt"}"#.to_string()];
    let mut data = Vec::new();
    for (name, dtype, shape, bytes) in tensors {
        let start = data.len();
        data.extend(bytes);
        fields.push(format!(
            r#""{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{start},{}]}}"#,
            data.len()
        ));
    }
    safetensors_bytes(&format!("{{{}}}", fields.join(",")), &data)
}

#[test]
fn safetensors_reads_every_engine_dtype_by_name() {
    let dir = tmp("st-dtypes");
    let le16 = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let tensors: Vec<(&str, &str, &[u64], Vec<u8>)> = vec![
        (
            "model.embed_tokens.weight",
            "F16",
            &[2, 2],
            le16(&[0x3c00, 0x0001, 0x7c00, 0x8000]),
        ),
        ("lm_head.weight", "BF16", &[2], le16(&[0x3fc0, 0xff80])),
        (
            "f32",
            "F32",
            &[2],
            [1.5f32, -0.0].iter().flat_map(|x| x.to_le_bytes()).collect(),
        ),
        ("f64", "F64", &[1], 0.1f64.to_le_bytes().to_vec()),
        (
            "i64",
            "I64",
            &[2],
            [-1i64, i64::MAX].iter().flat_map(|x| x.to_le_bytes()).collect(),
        ),
        ("i32", "I32", &[1], (-7i32).to_le_bytes().to_vec()),
        ("i16", "I16", &[1], (-300i16).to_le_bytes().to_vec()),
        ("i8", "I8", &[1], vec![0x80]),
        ("u8", "U8", &[2], vec![0, 255]),
        ("u16", "U16", &[1], 65535u16.to_le_bytes().to_vec()),
        ("u32", "U32", &[1], 7u32.to_le_bytes().to_vec()),
        ("u64", "U64", &[1], u64::MAX.to_le_bytes().to_vec()),
        ("mask", "BOOL", &[3], vec![1, 0, 1]),
        ("scalar", "F32", &[], 2.0f32.to_le_bytes().to_vec()),
        ("empty", "F32", &[0, 3], vec![]),
    ];
    let path = dir.join("model.safetensors");
    std::fs::write(&path, safetensors_file(&tensors)).expect("write");
    let p = Params::read_safetensors(&path).expect("read");
    assert_eq!(p.len(), tensors.len());
    let names: Vec<&str> = p.iter().map(|(n, _)| n).collect();
    let want: Vec<&str> = tensors.iter().map(|t| t.0).collect();
    assert_eq!(names, want, "in file order");
    let dtypes = [
        "float16", "bfloat16", "float32", "float64", "int64", "int32", "int16", "int8", "uint8", "uint16", "uint32",
        "uint64", "bool", "float32", "float32",
    ];
    for ((name, _, shape, bytes), dtype) in tensors.iter().zip(dtypes) {
        let t = p.get(name).and_then(Value::as_tensor).expect("tensor");
        assert_eq!(t.dtype().to_string(), dtype, "{name}");
        let shape: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        assert_eq!(t.shape(), &shape[..], "{name}");
        assert_eq!(&t.to_bytes().expect("bytes"), bytes, "{name}");
    }
    // `Params::read` takes it too.
    assert_eq!(Params::read(&path).expect("read").len(), tensors.len());
}

#[test]
fn malformed_safetensors_are_errors() {
    let dir = tmp("st-bad");
    let path = dir.join("bad.safetensors");
    let read = |bytes: &[u8]| {
        std::fs::write(&path, bytes).expect("write");
        err_text(Params::read_safetensors(&path))
    };
    let h = |s: &str, data: &[u8]| safetensors_bytes(s, data);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![1, 2, 3], "shorter than its 8-byte header length"),
        // A header length of 2^63.
        ([0, 0, 0, 0, 0, 0, 0, 0x80].to_vec(), "over 100000000 bytes"),
        // Past the end of the file.
        (
            [64, 0, 0, 0, 0, 0, 0, 0, b'{', b'}'].to_vec(),
            "past the end of the file",
        ),
        (h("{not json", &[]), "not a valid .safetensors header"),
        // Offsets past the data.
        (
            h(r#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#, &[0; 8]),
            "describes 16 bytes of tensor data, the file holds 8",
        ),
        // Offsets that do not match the shape.
        (
            h(r#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}}"#, &[0; 8]),
            "not a valid .safetensors header",
        ),
        // Offsets that overlap.
        (
            h(
                r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}"#,
                &[0; 6],
            ),
            "not a valid .safetensors header",
        ),
        // A shape whose size overflows.
        (
            h(
                r#"{"w":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,0]}}"#,
                &[],
            ),
            "not a valid .safetensors header",
        ),
        // An empty tensor whose other dimensions overflow an i64.
        (
            h(
                r#"{"w":{"dtype":"F32","shape":[0,9223372036854775807,9223372036854775807],"data_offsets":[0,0]}}"#,
                &[],
            ),
            "overflows",
        ),
        // A huge claim backed by a small file.
        (
            h(
                r#"{"w":{"dtype":"U8","shape":[1000000000000000],"data_offsets":[0,1000000000000000]}}"#,
                &[0; 16],
            ),
            "describes 1000000000000000 bytes of tensor data, the file holds 16",
        ),
        // A dtype the engine does not have.
        (
            h(
                r#"{"w8":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}"#,
                &[0; 2],
            ),
            "tensor `w8` has dtype F8_E4M3",
        ),
        (
            h(r#"{"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}}"#, &[0; 2]),
            "not a valid .safetensors header",
        ),
    ];
    for (bytes, want) in cases {
        let e = read(&bytes);
        assert!(e.contains(want), "{want:?} not in {e:?}");
    }
}

#[test]
fn safetensors_over_the_memory_limit_is_an_error() {
    let dir = tmp("st-limit");
    let path = dir.join("w.safetensors");
    std::fs::write(&path, safetensors_file(&[("w", "U8", &[8 << 20], vec![0; 8 << 20])])).expect("write");
    let before = relax_engine::host_memory_limit();
    relax_engine::set_host_memory_limit(4 << 20);
    let r = Params::read_safetensors(&path);
    relax_engine::set_host_memory_limit(before);
    let e = err_text(r);
    assert!(
        e.contains("8388608 bytes, over the host memory limit of 4194304"),
        "{e}"
    );
}

// ---------------------------------------------------------------- names

const GPT: &str = r#"
# from tvm.script import relax as R
@R.function
def main(input_ids: R.Tensor((2,), dtype="float16"), m_transformer_wpe_weight: R.Tensor((2,), dtype="float16"), embed_tokens_weight: R.Tensor((2,), dtype="float16")) -> R.Tensor((2,), dtype="float16"):
    y = R.add(input_ids, m_transformer_wpe_weight)
    z = R.add(y, embed_tokens_weight)
    return z
"#;

fn f16_tensor(v: &[f32]) -> Value {
    let bytes: Vec<u8> = v.iter().flat_map(|&x| f16::from_f32(x).to_le_bytes()).collect();
    Value::Tensor(Tensor::from_bytes(DataType::FLOAT16, &[v.len() as i64], bytes).expect("f16"))
}

#[test]
fn printed_names_follow_tvm() {
    assert_eq!(printed_name("m.transformer.wpe.weight"), "m_transformer_wpe_weight");
    assert_eq!(printed_name("embed_tokens.weight"), "embed_tokens_weight");
    assert_eq!(printed_name("layers.0/attn-q:w"), "layers_0_attn_q_w");
    assert_eq!(printed_name("é"), "__");
}

#[test]
fn params_bind_by_tvm_names_with_dots() {
    let module = parse(GPT);
    let mut p = Params::new();
    p.insert("m.transformer.wpe.weight", f16_tensor(&[0.5, 0.25]));
    p.insert("embed_tokens_weight", f16_tensor(&[1.0, -1.0]));
    let args = bind_args(&module, "main", &[f16_tensor(&[1.0, 2.0])], &p).expect("bind");
    assert_eq!(args.len(), 3);
    let bits = |v: &Value| f16_bits(v.as_tensor().expect("tensor"));
    assert_eq!(bits(&args[1]), bits(&f16_tensor(&[0.5, 0.25])));
    let engine = common::text::engine(relax_engine::DeviceChoice::Cpu);
    let y = engine
        .load(&module)
        .expect("load")
        .run_named("main", &[f16_tensor(&[1.0, 2.0])], &p)
        .expect("run");
    // 1 + 0.5 + 1 and 2 + 0.25 - 1, exact in float16.
    assert_eq!(bits(&y), [f16::from_f32(2.5).to_bits(), f16::from_f32(1.25).to_bits()]);
}

#[test]
fn unknown_or_doubled_names_are_errors_naming_the_closest() {
    let module = parse(GPT);
    let mut p = Params::new();
    p.insert("m.transformer.wte.weight", f16_tensor(&[0.5, 0.25]));
    let e = err_text(bind_args(&module, "main", &[], &p));
    assert!(
        e.contains("no parameter `m.transformer.wte.weight` (printed `m_transformer_wte_weight`)")
            && e.contains("closest parameter is `m_transformer_wpe_weight`"),
        "{e}"
    );
    let mut p = Params::new();
    p.insert("embed_tokens.weight", f16_tensor(&[0.5, 0.25]));
    p.insert("embed_tokens_weight", f16_tensor(&[0.5, 0.25]));
    let e = err_text(bind_args(&module, "main", &[f16_tensor(&[1.0, 2.0])], &p));
    assert!(e.contains("`embed_tokens_weight` is given twice by name"), "{e}");
}
