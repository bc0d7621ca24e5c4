//! The 30 reproducers of reliability round 3, run through the `relax` binary on the host
//! and (where a wgpu adapter exists, lavapipe included) the GPU: crashes that must be
//! clean errors, silent wrong results that must be TVM 0.27's values, and printed text
//! that must keep its meaning. Each case names its item; the finer tests of each fix
//! live beside the code (named in the case's `what`).
//!
//! `RELAX_BIN=/path/to/relax` runs the same cases against another build (for example
//! one from before the fixes) and reports every case that does not hold, instead of
//! stopping at the first.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::texts::{chained_lets, recursion_in_nested_ifs};
use common::{header, npy_bytes, stderr, stdout, zip_bytes};
use serde_json::{json, Value};

/// What a case must give.
enum Expect {
    /// Exit 0 and, from `--json`, these `data` arrays (numbers to 1e-6 relative).
    Values(Vec<Value>),
    /// Exit 1 (a diagnosed failure, not a signal or a panic) with this in stderr.
    Error(&'static str),
    /// Either of the two: a clean error where the resource runs out.
    ValuesOrError(Vec<Value>, &'static str),
}

struct Case {
    item: u32,
    what: &'static str,
    /// The subcommand and its options (before the file); `run` cases get `--json`
    /// and `--device` added.
    cmd: &'static [&'static str],
    program: String,
    /// `--inputs-json` contents.
    inputs: Option<Value>,
    /// Files written beside the program, and options naming them.
    files: Vec<(&'static str, Vec<u8>)>,
    args: &'static [&'static str],
    /// Environment variables of the run.
    env: &'static [(&'static str, &'static str)],
    devices: &'static [&'static str],
    expect: Expect,
}

const BOTH: &[&str] = &["cpu", "gpu"];
const CPU: &[&str] = &["cpu"];
const GPU: &[&str] = &["gpu"];
const NONE: &[&str] = &[""];

fn t(dtype: &str, shape: &[u64], data: Value) -> Value {
    json!({"dtype": dtype, "shape": shape, "data": data})
}

fn run_case(
    item: u32,
    what: &'static str,
    program: &str,
    inputs: Option<Value>,
    devices: &'static [&'static str],
    expect: Expect,
) -> Case {
    Case {
        item,
        what,
        cmd: &["run"],
        program: program.to_string(),
        inputs,
        files: Vec::new(),
        args: &[],
        env: &[],
        devices,
        expect,
    }
}

const ADD_W: &str = r#"
@R.function
def main(x: R.Tensor((2,), "float32"), w: R.Tensor((2,), "float32")):
    y = R.add(x, w)
    return y
"#;

/// A one-PrimFunc module whose `main` calls `body` (a PrimFunc `k(a, b)` over int32
/// `a: (4,)` writing `b: (4,)`).
fn tir_module(body: &str) -> String {
    format!(
        r#"
@I.ir_module
class Module:
    @T.prim_func
    def k(a: T.Buffer((4,), "int32"), b: T.Buffer((4,), "int32")):
{body}
    @R.function
    def main(x: R.Tensor((4,), "int32")):
        cls = Module
        y = R.call_tir(cls.k, (x,), out_sinfo=R.Tensor((4,), "int32"))
        return y
"#
    )
}

fn i32x4(v: [i32; 4]) -> Option<Value> {
    Some(json!([t("int32", &[4], json!(v))]))
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();

    // ---------------------------------------------------------------- crashes
    v.push(run_case(
        1,
        "host JIT: a narrowing cast between a hoisted check's two ends (jit/tests/hoist.rs)",
        &tir_module("        for i in range(257):\n            b[T.Cast(\"int16\", i * 256)] = a[0]\n"),
        i32x4([7, 0, 0, 0]),
        BOTH,
        Expect::Error("out-of-bounds write of `b` at 256"),
    ));
    let huge = npy_bytes(&header("<f4", "(1000000000000000,)"), &[0u8; 8]);
    v.push(Case {
        args: &["--params", "w.npz"],
        files: vec![("w.npz", zip_bytes(&[("w.npy", huge)], true))],
        ..run_case(
            2,
            "--params .npz entry claiming 10^15 elements (engine/tests/params_io.rs)",
            ADD_W,
            Some(json!([t("float32", &[2], json!([1, 2]))])),
            CPU,
            Expect::Error("w"),
        )
    });
    // 64 MiB of zeros deflated to well under 1 MiB, against a 4 MiB limit: refused
    // from the entry's header before anything is inflated.
    let zeros = npy_bytes(&header("<f8", "(8388608,)"), &vec![0u8; 64 << 20]);
    v.push(Case {
        args: &["--params", "w.npz"],
        env: &[("RELAX_HOST_MEMORY_LIMIT", "4M")],
        files: vec![("w.npz", zip_bytes(&[("w.npy", zeros)], true))],
        ..run_case(
            3,
            "--params .npz entry inflating past the host memory limit (engine/tests/params_io.rs)",
            ADD_W,
            Some(json!([t("float32", &[2], json!([1, 2]))])),
            CPU,
            Expect::Error("limit of 4194304"),
        )
    });
    let overflow = npy_bytes(&header("<f4", "(0, 9223372036854775807, 9223372036854775807)"), &[]);
    v.push(Case {
        args: &["--params", "w.npz"],
        files: vec![("w.npz", zip_bytes(&[("w.npy", overflow.clone())], true))],
        ..run_case(
            4,
            "--params .npz entry of shape (0, 2^63-1, 2^63-1)",
            ADD_W,
            Some(json!([t("float32", &[2], json!([1, 2]))])),
            CPU,
            Expect::Error("w"),
        )
    });
    v.push(Case {
        args: &["--input", "x.npy", "--input", "w.npy"],
        files: vec![
            ("x.npy", npy_bytes(&header("<f4", "(2,)"), &[0u8; 8])),
            ("w.npy", overflow),
        ],
        ..run_case(
            4,
            "--input .npy of shape (0, 2^63-1, 2^63-1)",
            ADD_W,
            None,
            CPU,
            Expect::Error("w.npy"),
        )
    });
    v.push(Case {
        cmd: &["check"],
        ..run_case(
            5,
            "check of a PrimFunc with 10,000 chained lets (checker/tests/wf_prim_funcs.rs)",
            &chained_lets(10_000),
            None,
            NONE,
            Expect::Error("nested deeper than 256"),
        )
    });
    v.push(Case {
        cmd: &["wgsl"],
        ..run_case(
            5,
            "wgsl of a PrimFunc with 5,000 chained lets (jit/tests/deep_lets.rs)",
            &chained_lets(5_000),
            None,
            NONE,
            Expect::Error("nested deeper than 256"),
        )
    });
    let rec = recursion_in_nested_ifs("main", 15);
    v.push(run_case(
        6,
        "recursion 9,900 deep inside 15 nested ifs (engine/tests/host_reliability.rs)",
        &rec,
        Some(json!([t("int64", &[], json!(9900))])),
        BOTH,
        Expect::ValuesOrError(vec![json!(0)], "nested too deeply"),
    ));
    v.push(run_case(
        7,
        "--json of R.zeros((4294967297, 0)) (cli/tests/run_io.rs)",
        "@R.function\ndef main():\n    z = R.zeros(R.shape([4294967297, 0]), \"float32\")\n    return z\n",
        None,
        CPU,
        Expect::Error("4294967297"),
    ));
    v.push(run_case(
        8,
        "argument shape T.floordiv(-2**63, n - 3) with n = 2 (engine/tests/host_reliability.rs)",
        r#"
n = TypeVar("n")
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((n,), "float32"), y: R.Tensor((T.floordiv(T.int64(-9223372036854775807) - T.int64(1), n - T.int64(3)),), "float32")):
        return x
"#,
        Some(json!([t("float32", &[2], json!([1, 2])), t("float32", &[1], json!([1]))])),
        BOTH,
        Expect::Error("overflow"),
    ));

    // ------------------------------------------- silent wrong results, disagreements
    v.push(run_case(
        9,
        "reductions over 8,388,481 elements (engine/tests/gpu_agreement.rs)",
        r#"
@R.function
def main():
    x = R.ones(R.shape([8388481]), "float32")
    s = R.sum(x)
    a = R.arange(0, 8388481, 1, "float32")
    m = R.max(a)
    b = R.arange(0, 8388481, 1, "int32")
    j = R.argmax(b)
    return (s, m, j)
"#,
        None,
        BOTH,
        Expect::Values(vec![json!(8388481), json!(8388480), json!(8388480)]),
    ));
    v.push(run_case(
        10,
        "take with an int64 index 2^32 + 1 (engine/tests/gpu_agreement.rs)",
        "@R.function\ndef main(x: R.Tensor((4,), \"float32\"), i: R.Tensor((1,), \"int64\")):\n    y = R.take(x, i, axis=0)\n    return y\n",
        Some(json!([t("float32", &[4], json!([1, 2, 3, 4])), t("int64", &[1], json!([4294967297i64]))])),
        BOTH,
        Expect::Error("out-of-bounds read of `x` at 4294967297 (size 4)"),
    ));
    v.push(run_case(
        11,
        "out-of-bounds read through a non-affine index A[i * i]",
        &tir_module("        for i in range(4):\n            b[i] = a[i * i]\n"),
        i32x4([1, 2, 3, 4]),
        BOTH,
        Expect::Error("out-of-bounds read of `a` at 4"),
    ));
    v.push(run_case(
        12,
        "A[T.Cast(\"int8\", i * 256)] reads A[0] (no false static refusal)",
        &tir_module("        for i in range(4):\n            b[i] = a[T.Cast(\"int8\", i * 256)]\n"),
        i32x4([5, 6, 7, 8]),
        BOTH,
        Expect::Values(vec![json!([5, 5, 5, 5])]),
    ));
    v.push(run_case(
        13,
        "float floor_mod/mod by 0.0, float16 divide/floor_divide by 0",
        r#"
@R.function
def main(x: R.Tensor((2,), "float32"), z: R.Tensor((2,), "float32"), h: R.Tensor((2,), "float16"), hz: R.Tensor((2,), "float16")):
    a = R.floor_mod(x, z)
    b = R.mod(x, z)
    c = R.divide(h, hz)
    d = R.floor_divide(h, hz)
    e = R.floor_mod(x, R.const(0.0, "float32"))
    f = R.mod(x, R.const(0.0, "float32"))
    g = R.divide(h, R.const(0.0, "float16"))
    k = R.floor_divide(h, R.const(0.0, "float16"))
    return (a, b, c, d, e, f, g, k)
"#,
        Some(json!([
            t("float32", &[2], json!([3, -3])),
            t("float32", &[2], json!([0, 0])),
            t("float16", &[2], json!([3, -3])),
            t("float16", &[2], json!([0, 0]))
        ])),
        BOTH,
        Expect::Values(vec![
            json!(["nan", "nan"]),
            json!(["nan", "nan"]),
            json!(["inf", "-inf"]),
            json!(["inf", "-inf"]),
            json!(["nan", "nan"]),
            json!(["nan", "nan"]),
            json!(["inf", "-inf"]),
            json!(["inf", "-inf"]),
        ]),
    ));
    v.push(run_case(
        14,
        "astype NaN -> bool, int32 -> uint64, cumprod as uint64",
        r#"
@R.function
def main(x: R.Tensor((2,), "float32"), i: R.Tensor((2,), "int32")):
    a = R.astype(x, "bool")
    b = R.astype(i, "uint64")
    c = R.cumprod(i, axis=0, dtype="uint64")
    return (a, b, c)
"#,
        Some(json!([
            t("float32", &[2], json!(["nan", 0])),
            t("int32", &[2], json!([-1, 1]))
        ])),
        BOTH,
        Expect::Values(vec![
            json!([true, false]),
            json!([18446744073709551615u64, 1]),
            json!([18446744073709551615u64, 18446744073709551615u64]),
        ]),
    ));
    v.push(run_case(
        15,
        "tril with k = 2^31 - 1 keeps everything",
        "@R.function\ndef main(x: R.Tensor((2, 2), \"float32\")):\n    y = R.tril(x, 2147483647)\n    return y\n",
        Some(json!([t("float32", &[2, 2], json!([[1, 2], [3, 4]]))])),
        BOTH,
        Expect::Values(vec![json!([1, 2, 3, 4])]),
    ));
    v.push(run_case(
        16,
        "subtract(y, y) of inf/NaN, acosh(1e38), power(NaN, 0) (engine/tests/gpu_agreement.rs)",
        r#"
@R.function
def main(y: R.Tensor((4,), "float32"), z: R.Tensor((4,), "float32")):
    a = R.subtract(y, y)
    b = R.acosh(y)
    c = R.power(y, z)
    return (a, b, c)
"#,
        Some(json!([
            t("float32", &[4], json!(["inf", "nan", 1e38, 2])),
            t("float32", &[4], json!([0, 0, 0, 0]))
        ])),
        BOTH,
        Expect::Values(vec![
            json!(["nan", "nan", 0, 0]),
            json!(["inf", "nan", 88.191376, 1.316958]),
            json!([1, 1, 1, 1]),
        ]),
    ));
    v.push(run_case(
        17,
        "max_pool2d pads with the dtype's minimum, not -inf",
        "@R.function\ndef main(x: R.Tensor((1, 1, 1, 1), \"float32\")):\n    y = R.nn.max_pool2d(x, pool_size=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1])\n    return y\n",
        Some(json!([t("float32", &[1, 1, 1, 1], json!([[[["-inf"]]]]))])),
        BOTH,
        Expect::Values(vec![json!([-3.4028234663852886e38])]),
    ));
    v.push(run_case(
        18,
        "mixed bool/float binary operators: the float operand is not truncated",
        r#"
@R.function
def main(b: R.Tensor((2,), "bool"), f: R.Tensor((2,), "float32")):
    a = R.add(b, f)
    m = R.multiply(b, f)
    return (a, m)
"#,
        Some(json!([
            t("bool", &[2], json!([false, true])),
            t("float32", &[2], json!([0.351, 0.5]))
        ])),
        BOTH,
        // TVM infers the left operand's dtype (bool); the float operand is not truncated
        // first: False + 0.351 is True.
        Expect::Values(vec![json!([true, true]), json!([false, true])]),
    ));
    v.push(run_case(
        19,
        "bitwise_not of bool is the logical not",
        "@R.function\ndef main(b: R.Tensor((2,), \"bool\")):\n    y = R.bitwise_not(b)\n    return y\n",
        Some(json!([t("bool", &[2], json!([true, false]))])),
        BOTH,
        Expect::Values(vec![json!([false, true])]),
    ));
    v.push(Case {
        cmd: &["check"],
        ..run_case(
            20,
            "a loop over a TIR variable nothing binds (checker/tests/wf_prim_funcs.rs)",
            &tir_module("        n = T.int64()\n        for i in range(n):\n            b[i] = a[i]\n"),
            None,
            NONE,
            Expect::Error("undefined variable `n`"),
        )
    });
    v.push(run_case(
        21,
        "conv2d with an empty output",
        "@R.function\ndef main(x: R.Tensor((1, 1, 2, 2), \"float32\"), w: R.Tensor((1, 1, 3, 1), \"float32\")):\n    y = R.nn.conv2d(x, w)\n    return y\n",
        Some(json!([t("float32", &[1, 1, 2, 2], json!([[[[1, 2], [3, 4]]]])), t("float32", &[1, 1, 3, 1], json!([[[[1], [1], [1]]]]))])),
        BOTH,
        Expect::Values(vec![json!([])]),
    ));
    v.push(run_case(
        22,
        "int32 arange with a float step: numpy's rule, large and small alike",
        "@R.function\ndef main():\n    a = R.arange(4, 65536, 0.5, \"int32\")\n    b = R.strided_slice(a, axes=[0], begin=[0], end=[4])\n    c = R.arange(4, 6, 0.5, \"int32\")\n    return (b, c)\n",
        None,
        BOTH,
        Expect::Values(vec![json!([4, 4, 4, 4]), json!([4, 4, 4, 4])]),
    ));
    v.push(run_case(
        23,
        "comparisons, argmax, sign and shifts of bools compile to valid WGSL",
        r#"
@R.function
def main(a: R.Tensor((4,), "bool"), b: R.Tensor((4,), "bool")):
    g = R.greater(a, b)
    l = R.less_equal(a, b)
    m = R.argmax(a)
    s = R.sign(a)
    h = R.left_shift(a, b)
    return (g, l, m, s, h)
"#,
        Some(json!([
            t("bool", &[4], json!([true, false, true, false])),
            t("bool", &[4], json!([false, false, true, true]))
        ])),
        BOTH,
        Expect::Values(vec![
            json!([true, false, false, false]),
            json!([false, true, true, true]),
            json!(0),
            json!([true, false, true, false]),
            // A bool shifted by 1 or more is false (docs/semantics.md; TVM refuses bool shifts).
            json!([true, false, false, false]),
        ]),
    ));
    v.push(Case {
        cmd: &["wgsl"],
        ..run_case(
            23,
            "take from a 2^32-element tensor: too large for 32-bit GPU indexing",
            "@R.function\ndef main(x: R.Tensor((4294967296,), \"int8\"), i: R.Tensor((1,), \"int64\")):\n    y = R.take(x, i, axis=0)\n    return y\n",
            None,
            NONE,
            Expect::Error("too large for 32-bit GPU indexing"),
        )
    });

    // ------------------------------------------------- found by ONNX's node tests
    v.push(run_case(
        26,
        "a call nested in R.match_cast is legalized (transform/tests/legalize_match_cast.rs)",
        "@R.function\ndef main(c: R.Tensor((2,), \"bool\"), x: R.Tensor((2,), \"float32\"), y: R.Tensor((2,), \"float32\")):\n    lv = R.match_cast(R.where(c, x, y), R.Tensor((2,), \"float32\"))\n    return lv\n",
        Some(json!([
            t("bool", &[2], json!([true, false])),
            t("float32", &[2], json!([1, 2])),
            t("float32", &[2], json!([3, 4]))
        ])),
        BOTH,
        Expect::Values(vec![json!([1, 4])]),
    ));
    v.push(run_case(
        27,
        "int8 shifts by the bit width or more (engine/tests/host_reliability.rs)",
        "@R.function\ndef main(x: R.Tensor((4,), \"int8\"), s: R.Tensor((4,), \"int8\")):\n    return (R.left_shift(x, s), R.right_shift(x, s))\n",
        Some(json!([t("int8", &[4], json!([-8, 8, -8, 3])), t("int8", &[4], json!([8, 8, 9, 1]))])),
        BOTH,
        Expect::Values(vec![json!([0, 0, 0, 6]), json!([-1, 0, -1, 1])]),
    ));
    v.push(run_case(
        28,
        "min over uint64",
        "@R.function\ndef main(x: R.Tensor((3,), \"uint64\")):\n    y = R.min(x)\n    return y\n",
        Some(json!([t(
            "uint64",
            &[3],
            json!([18446744073709551615u64, 7, 9223372036854775808u64])
        )])),
        BOTH,
        Expect::Values(vec![json!(7)]),
    ));
    v.push(run_case(
        29,
        "--inputs-json of int4 values",
        "@R.function\ndef main(x: R.Tensor((3,), \"int4\")):\n    y = R.astype(x, \"int32\")\n    return y\n",
        Some(json!([t("int4", &[3], json!([7, -8, -1]))])),
        CPU,
        Expect::Values(vec![json!([7, -8, -1])]),
    ));
    v.push(run_case(
        30,
        "bfloat16 results through --json",
        "@R.function\ndef main(x: R.Tensor((2,), \"float32\")):\n    y = R.astype(x, \"bfloat16\")\n    return y\n",
        Some(json!([t("float32", &[2], json!([1.5, -2]))])),
        CPU,
        Expect::Values(vec![json!([1.5, -2])]),
    ));
    v.push(run_case(
        30,
        "float64 refused on the GPU names the operator",
        "@R.function\ndef main(x: R.Tensor((2,), \"float64\")):\n    y = R.exp(x)\n    return y\n",
        Some(json!([t("float64", &[2], json!([1.5, -2.5]))])),
        GPU,
        Expect::Error("not supported for `T.exp` on the GPU"),
    ));
    v
}

/// Printer items (24, 25): the printed text re-parses, prints to itself, computes what
/// the original computes, and holds the given line of TVM's own print (text TVM's parser
/// reads; TVM rejects a parameter `a` beside the TypeVar `a`).
fn print_cases() -> Vec<(u32, &'static str, &'static str, Value, &'static str)> {
    vec![
        (
            24,
            "a parameter named like a symbolic shape variable",
            r#"
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("a",), "float32"), y: R.Tensor(("a",), "float32")) -> R.Tensor(("a",), "float32"):
        gv = R.add(a, y)
        return gv
"#,
            json!([t("float32", &[2], json!([1, 2])), t("float32", &[2], json!([3, 5]))]),
            "def main(a_1: R.Tensor((a,), dtype=\"float32\"), y: R.Tensor((a,), dtype=\"float32\"))",
        ),
        (
            25,
            "TVM's TestVMCompileE2E2: a PrimFunc's n apart from the Relax function's n",
            r#"
@I.ir_module
class Module:
    @T.prim_func
    def add_one(x: T.handle, y: T.handle):
        n = T.int32()
        A = T.match_buffer(x, (n,))
        B = T.match_buffer(y, (n,))
        for i in range(n):
            B[i] = A[i] + T.float32(1)

    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        cls = Module
        y = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((n,), "float32"))
        return y
"#,
            json!([t("float32", &[3], json!([1, 2, 3]))]),
            "",
        ),
    ]
}

fn relax_bin() -> PathBuf {
    std::env::var_os("RELAX_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_relax")), PathBuf::from)
}

fn relax(dir: &Path, args: &[&str]) -> Output {
    relax_env(dir, args, &[])
}

fn relax_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(relax_bin())
        .current_dir(dir)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the relax binary runs")
}

/// Whether a wgpu adapter exists (lavapipe counts).
fn gpu_available() -> bool {
    match relax_gpu_runtime::GpuRuntime::shared_default() {
        Ok(_) => true,
        Err(e) => {
            eprintln!("no GPU adapter: GPU runs not checked ({e})");
            false
        }
    }
}

fn close(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            // Integers exactly (uint64 past 2^53 included); floats to 1e-6 relative.
            if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                return x == y;
            }
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return x == y;
            }
            let (x, y) = (x.as_f64().unwrap_or(f64::NAN), y.as_f64().unwrap_or(f64::NAN));
            (x - y).abs() <= 1e-6 * y.abs().max(1e-30)
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| close(a, b)),
        _ => a == b,
    }
}

/// `v` with nested lists flattened into one list (a scalar stays as it is).
fn flatten(v: &Value) -> Value {
    fn push(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Array(a) => a.iter().for_each(|x| push(x, out)),
            x => out.push(x.clone()),
        }
    }
    match v {
        Value::Array(_) => {
            let mut f = Vec::new();
            push(v, &mut f);
            Value::Array(f)
        }
        x => x.clone(),
    }
}

/// The flattened `data` of every output of a `--json` result.
fn outputs(text: &str) -> Result<Vec<Value>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e}): {text}"))?;
    let outs = v["outputs"].as_array().ok_or_else(|| format!("no outputs: {text}"))?;
    Ok(outs.iter().map(|o| flatten(&o["data"])).collect())
}

/// Check one finished command against `expect`; `Err` says how it differs.
fn judge(o: &Output, expect: &Expect) -> Result<(), String> {
    let code = o.status.code();
    let err = stderr(o);
    let values = |want: &[Value]| -> Result<(), String> {
        if code != Some(0) {
            return Err(format!("exit {code:?}: {}", err.trim()));
        }
        let got = outputs(&stdout(o))?;
        let want: Vec<Value> = want.iter().map(flatten).collect();
        // A 0-d result prints its data as a number or as a one-element list.
        let same = got.len() == want.len()
            && got
                .iter()
                .zip(&want)
                .all(|(g, w)| close(g, w) || matches!(g, Value::Array(a) if a.len() == 1 && close(&a[0], w)));
        if same {
            Ok(())
        } else {
            Err(format!("got {got:?}, want {want:?}"))
        }
    };
    let error = |msg: &str| -> Result<(), String> {
        if code == Some(1) && err.contains(msg) && !err.contains("panicked") {
            Ok(())
        } else {
            Err(format!("want exit 1 with `{msg}`; exit {code:?}: {}", err.trim()))
        }
    };
    match expect {
        Expect::Values(want) => values(want),
        Expect::Error(msg) => error(msg),
        Expect::ValuesOrError(want, msg) => values(want).or_else(|_| error(msg)),
    }
}

#[test]
fn every_reliability_item_holds() {
    let dir = std::env::temp_dir().join(format!("relax-reliability-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let gpu = gpu_available();
    let mut failures = Vec::new();
    let mut runs = 0;
    for (n, case) in cases().into_iter().enumerate() {
        let program = format!("case{n}.py");
        std::fs::write(dir.join(&program), &case.program).expect("write program");
        for (name, bytes) in &case.files {
            std::fs::write(dir.join(name), bytes).expect("write file");
        }
        let inputs = format!("case{n}.json");
        if let Some(i) = &case.inputs {
            std::fs::write(dir.join(&inputs), i.to_string()).expect("write inputs");
        }
        for dev in case.devices {
            if *dev == "gpu" && !gpu {
                continue;
            }
            let mut args: Vec<&str> = case.cmd.to_vec();
            if case.cmd == ["run"] {
                args.extend(["--json", "--device", dev]);
                if case.inputs.is_some() {
                    args.extend(["--inputs-json", inputs.as_str()]);
                }
            }
            args.extend(case.args);
            args.push(program.as_str());
            let o = relax_env(&dir, &args, case.env);
            runs += 1;
            let verdict = judge(&o, &case.expect);
            let dev = if dev.is_empty() { "-" } else { dev };
            eprintln!(
                "item {:>2} {:<4} {:<4} {}",
                case.item,
                dev,
                if verdict.is_ok() { "ok" } else { "FAIL" },
                case.what
            );
            if let Err(e) = verdict {
                failures.push(format!("item {} ({}) on {dev}: {e}", case.item, case.what));
            }
        }
    }
    for (item, what, src, inputs, tvm_line) in print_cases() {
        std::fs::write(dir.join("p.py"), src).expect("write");
        std::fs::write(dir.join("p.json"), inputs.to_string()).expect("write");
        let printed = relax(&dir, &["print", "p.py"]);
        let mut verdict = if printed.status.success() {
            Ok(())
        } else {
            Err(format!("print failed: {}", stderr(&printed).trim()))
        };
        if verdict.is_ok() {
            std::fs::write(dir.join("q.py"), &printed.stdout).expect("write");
            let again = relax(&dir, &["print", "q.py"]);
            let original = relax(
                &dir,
                &["run", "--json", "--device", "cpu", "--inputs-json", "p.json", "p.py"],
            );
            let reprinted = relax(
                &dir,
                &["run", "--json", "--device", "cpu", "--inputs-json", "p.json", "q.py"],
            );
            verdict = if !stdout(&printed).contains(tvm_line) {
                Err(format!("TVM prints `{tvm_line}`; ours:\n{}", stdout(&printed)))
            } else if again.stdout != printed.stdout {
                Err(format!(
                    "print is not a fixed point:\n{}\n---\n{}{}",
                    stdout(&printed),
                    stdout(&again),
                    stderr(&again)
                ))
            } else {
                match (outputs(&stdout(&original)), outputs(&stdout(&reprinted))) {
                    (Ok(a), Ok(b)) if a == b => Ok(()),
                    (a, b) => Err(format!("original {a:?}, printed {b:?}: {}", stderr(&reprinted).trim())),
                }
            };
        }
        runs += 1;
        eprintln!(
            "item {item:>2} -    {:<4} {what}",
            if verdict.is_ok() { "ok" } else { "FAIL" }
        );
        if let Err(e) = verdict {
            failures.push(format!("item {item} ({what}): {e}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("{} runs, {} failed", runs, failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
