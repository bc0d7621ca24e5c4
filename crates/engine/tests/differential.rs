//! Differential testing of `run`: random well-formed Relax programs (operator graphs
//! over elementwise, broadcast, reduction, layout, cast and matmul operators, with
//! random shapes, a symbolic leading dimension and random dtypes) are checked, then run
//! on the host and on the GPU, and the results compared: exactly for integers, with a
//! relative tolerance for floats.
//!
//! The run is bounded by `RELAX_DIFF_PROGRAMS` programs (default 60) so the test takes a
//! few seconds; `RELAX_DIFF_SEED` picks the seed. A long run:
//! `RELAX_DIFF_PROGRAMS=5000 cargo test --release -p relax-engine --test differential -- --nocapture`.
//! `RELAX_DIFF_DUMP=DIR` also writes every program, its inputs and the host's results
//! for `scripts/compare_tvm.py DIR`, which runs them with Apache TVM and compares.
//! Without a GPU adapter only the checking and the host half run.

mod common;

use ndarray::{ArrayD, IxDyn};
use relax_engine::{ArrayValue, DeviceChoice, Value};

use common::rng::{env_or, Rng};

/// A dimension: symbolic `n` (bound by the input) or a constant.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dim {
    N,
    C(usize),
}

#[derive(Clone, Debug)]
struct Val {
    name: String,
    dims: Vec<Dim>,
    dtype: &'static str,
}

fn is_float(dt: &str) -> bool {
    dt.starts_with("float")
}

/// One random program: its text and its inputs.
struct Program {
    text: String,
    inputs: Vec<Value>,
}

fn generate(rng: &mut Rng) -> Program {
    let n = 1 + rng.below(5);
    let dtypes = ["float32", "float32", "int32", "int64"];
    let mut vals: Vec<Val> = Vec::new();
    let mut params = Vec::new();
    let mut inputs = Vec::new();
    let n_inputs = 1 + rng.below(3);
    for i in 0..n_inputs {
        let rank = 1 + rng.below(3);
        let mut dims: Vec<Dim> = (0..rank).map(|_| Dim::C(1 + rng.below(4))).collect();
        if rng.below(2) == 0 {
            dims[0] = Dim::N;
        }
        let dtype = *rng.pick(&dtypes);
        let name = format!("x{i}");
        let ann: Vec<String> = dims
            .iter()
            .map(|d| match d {
                Dim::N => "\"n\"".to_string(),
                Dim::C(c) => c.to_string(),
            })
            .collect();
        params.push(format!("{name}: R.Tensor(({},), \"{dtype}\")", ann.join(", ")));
        let shape: Vec<usize> = dims
            .iter()
            .map(|d| match d {
                Dim::N => n,
                Dim::C(c) => *c,
            })
            .collect();
        let count: usize = shape.iter().product();
        let v: Value = if is_float(dtype) {
            let data: Vec<f32> = (0..count).map(|_| (rng.below(161) as f32 - 80.0) / 16.0).collect();
            ArrayD::from_shape_vec(IxDyn(&shape), data).expect("shape").into()
        } else if dtype == "int32" {
            let data: Vec<i32> = (0..count).map(|_| rng.below(21) as i32 - 10).collect();
            ArrayD::from_shape_vec(IxDyn(&shape), data).expect("shape").into()
        } else {
            let data: Vec<i64> = (0..count).map(|_| rng.below(21) as i64 - 10).collect();
            ArrayD::from_shape_vec(IxDyn(&shape), data).expect("shape").into()
        };
        inputs.push(v);
        vals.push(Val { name, dims, dtype });
    }
    let mut body = Vec::new();
    let steps = 2 + rng.below(6);
    for k in 0..steps {
        let a = rng.pick(&vals).clone();
        let name = format!("v{k}");
        let choice = rng.below(9);
        let (expr, dims, dtype) = match choice {
            0 | 1 => {
                // A binary operator on two values of the same shape and dtype (or itself).
                let same: Vec<&Val> = vals.iter().filter(|v| v.dims == a.dims && v.dtype == a.dtype).collect();
                let b = (*rng.pick(&same)).clone();
                let ops: &[&str] = if is_float(a.dtype) {
                    &["add", "subtract", "multiply", "maximum", "minimum", "divide"]
                } else {
                    &[
                        "add",
                        "subtract",
                        "multiply",
                        "maximum",
                        "minimum",
                        "floor_divide",
                        "floor_mod",
                    ]
                };
                let op = rng.pick(ops);
                (format!("R.{op}({}, {})", a.name, b.name), a.dims.clone(), a.dtype)
            }
            2 => {
                let ops: &[&str] = if is_float(a.dtype) {
                    &[
                        "exp", "tanh", "sigmoid", "negative", "abs", "floor", "ceil", "sqrt", "square",
                    ]
                } else {
                    &["negative", "abs", "square"]
                };
                let op = *rng.pick(ops);
                let arg = if op == "sqrt" || op == "exp" {
                    // Keep the argument in a range both devices compute well.
                    format!("R.clip({}, -4.0, 4.0)", a.name)
                } else {
                    a.name.clone()
                };
                let e = if op == "sqrt" {
                    format!("R.sqrt(R.abs({arg}))")
                } else {
                    format!("R.{op}({arg})")
                };
                (e, a.dims.clone(), a.dtype)
            }
            3 => {
                // A broadcast against a constant.
                let c = if is_float(a.dtype) { "1.5" } else { "3" };
                (
                    format!("R.add({}, R.const({c}, \"{}\"))", a.name, a.dtype),
                    a.dims.clone(),
                    a.dtype,
                )
            }
            4 if !a.dims.is_empty() => {
                let axis = rng.below(a.dims.len());
                let keep = rng.below(2) == 0;
                let ops: &[&str] = if is_float(a.dtype) {
                    &["sum", "max", "min", "mean"]
                } else {
                    &["sum", "max", "min"]
                };
                let op = rng.pick(ops);
                let mut dims = a.dims.clone();
                if keep {
                    dims[axis] = Dim::C(1);
                } else {
                    dims.remove(axis);
                }
                let e = format!(
                    "R.{op}({}, axis=[{axis}], keepdims={})",
                    a.name,
                    if keep { "True" } else { "False" }
                );
                (e, dims, a.dtype)
            }
            5 => {
                let mut perm: Vec<usize> = (0..a.dims.len()).collect();
                for i in (1..perm.len()).rev() {
                    let j = rng.below(i + 1);
                    perm.swap(i, j);
                }
                let dims = perm.iter().map(|&p| a.dims[p]).collect();
                let axes: Vec<String> = perm.iter().map(|p| p.to_string()).collect();
                (
                    format!("R.permute_dims({}, axes=[{}])", a.name, axes.join(", ")),
                    dims,
                    a.dtype,
                )
            }
            6 => {
                let to = *rng.pick(&["float32", "int32", "int64"]);
                (format!("R.astype({}, \"{to}\")", a.name), a.dims.clone(), to)
            }
            7 if a.dims.len() == 2 && is_float(a.dtype) => {
                // x @ x^T
                let t = format!("R.permute_dims({}, axes=[1, 0])", a.name);
                (
                    format!("R.matmul({}, {t})", a.name),
                    vec![a.dims[0], a.dims[0]],
                    a.dtype,
                )
            }
            _ if a.dims.iter().all(|d| *d != Dim::N) => {
                let count: usize = a
                    .dims
                    .iter()
                    .map(|d| match d {
                        Dim::C(c) => *c,
                        Dim::N => 1,
                    })
                    .product();
                (
                    format!("R.reshape({}, R.shape([{count}]))", a.name),
                    vec![Dim::C(count)],
                    a.dtype,
                )
            }
            _ => (format!("R.negative({})", a.name), a.dims.clone(), a.dtype),
        };
        body.push(format!("    {name} = {expr}"));
        vals.push(Val { name, dims, dtype });
    }
    let outs: Vec<String> = vals[n_inputs..].iter().map(|v| v.name.clone()).collect();
    let mut text = format!("@R.function\ndef main({}):\n", params.join(", "));
    if vals.iter().any(|v| v.dims.contains(&Dim::N)) {
        text.push_str("    n = T.int64()\n");
    }
    for b in body {
        text.push_str(&b);
        text.push('\n');
    }
    text.push_str(&format!("    return ({},)\n", outs.join(", ")));
    Program { text, inputs }
}

/// Flattened values as f64 plus whether the dtype is an integer type.
fn flat(v: &Value) -> Vec<(Vec<usize>, Vec<f64>, bool)> {
    match v {
        Value::Tuple(fs) => fs.iter().flat_map(flat).collect(),
        Value::Tensor(t) => {
            let a = t.to_array_value().expect("readable");
            let shape = t.shape().iter().map(|&d| d as usize).collect();
            let (vals, int): (Vec<f64>, bool) = match a {
                ArrayValue::F32(a) => (a.iter().map(|&x| x as f64).collect(), false),
                ArrayValue::F64(a) => (a.iter().copied().collect(), false),
                ArrayValue::I32(a) => (a.iter().map(|&x| x as f64).collect(), true),
                ArrayValue::I64(a) => (a.iter().map(|&x| x as f64).collect(), true),
                ArrayValue::Bool(a) => (a.iter().map(|&x| x as u8 as f64).collect(), true),
                other => panic!("unexpected result dtype: {other:?}"),
            };
            vec![(shape, vals, int)]
        }
        other => panic!("unexpected result: {other:?}"),
    }
}

/// Write case `case`: `caseN.py`, its inputs `caseN_inI.npy` and the host's results
/// `caseN_outK.npy` (float64, with a `caseN_outK.int` marker for integer results).
fn dump_case(dir: &std::path::Path, case: usize, p: &Program, host: &Value) {
    use ndarray_npy::WriteNpyExt;
    let file = |name: String| std::fs::File::create(dir.join(name)).expect("a dump file");
    std::fs::write(dir.join(format!("case{case}.py")), &p.text).expect("program written");
    for (i, v) in p.inputs.iter().enumerate() {
        let t = v.as_tensor().expect("inputs are tensors");
        let w = file(format!("case{case}_in{i}.npy"));
        match t.to_array_value().expect("readable") {
            ArrayValue::F32(a) => a.write_npy(w),
            ArrayValue::F64(a) => a.write_npy(w),
            ArrayValue::I32(a) => a.write_npy(w),
            ArrayValue::I64(a) => a.write_npy(w),
            other => panic!("unexpected input dtype: {other:?}"),
        }
        .expect("input written");
    }
    for (k, (shape, vals, int)) in flat(host).into_iter().enumerate() {
        let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), vals).expect("shape");
        a.write_npy(file(format!("case{case}_out{k}.npy")))
            .expect("result written");
        if int {
            std::fs::write(dir.join(format!("case{case}_out{k}.int")), "").expect("marker written");
        }
    }
}

fn agree(x: f64, y: f64, int: bool) -> bool {
    if int {
        return x == y;
    }
    if x.is_nan() || y.is_nan() {
        return x.is_nan() && y.is_nan();
    }
    if x.is_infinite() || y.is_infinite() {
        return x == y;
    }
    (x - y).abs() <= 1e-3 * x.abs().max(y.abs()).max(1.0)
}

#[test]
fn random_programs_agree_on_host_and_gpu() {
    let count: usize = env_or("RELAX_DIFF_PROGRAMS", 60);
    let seed: u64 = env_or("RELAX_DIFF_SEED", 0x5eed_1234);
    let cpu = common::text::engine(DeviceChoice::Cpu);
    let gpu = common::text::gpu_engine("host runs only");
    // `RELAX_DIFF_DUMP=DIR` writes every program with its inputs and host results,
    // for `scripts/compare_tvm.py DIR` (never in CI).
    let dump = std::env::var("RELAX_DIFF_DUMP").ok().map(std::path::PathBuf::from);
    if let Some(dir) = &dump {
        std::fs::create_dir_all(dir).expect("the dump directory can be created");
    }
    let mut rng = Rng(seed | 1);
    let (mut compared, mut values) = (0usize, 0usize);
    for case in 0..count {
        let p = generate(&mut rng);
        let module = match relax_ir::text::parse(&p.text) {
            Ok(m) => m.into_module(),
            Err(d) => panic!("case {case}: generated text does not parse: {}\n{}", d.message, p.text),
        };
        let checked = relax_checker::check::check_module(&module);
        let errors: Vec<_> = checked.errors().map(|d| d.message.clone()).collect();
        assert!(
            errors.is_empty(),
            "case {case}: generated program rejected: {errors:?}\n{}",
            p.text
        );
        let host = cpu
            .run(&module, "main", &p.inputs)
            .unwrap_or_else(|e| panic!("case {case}: host run failed: {e}\n{}", p.text));
        if let Some(dir) = &dump {
            dump_case(dir, case, &p, &host);
        }
        let Some(gpu) = &gpu else { continue };
        let dev = gpu
            .run(&module, "main", &p.inputs)
            .unwrap_or_else(|e| panic!("case {case}: GPU run failed: {e}\n{}", p.text));
        let (h, g) = (flat(&host), flat(&dev));
        assert_eq!(h.len(), g.len(), "case {case}: result count\n{}", p.text);
        for (k, ((hs, hv, int), (gs, gv, _))) in h.iter().zip(&g).enumerate() {
            assert_eq!(hs, gs, "case {case}: shape of result {k}\n{}", p.text);
            for (i, (x, y)) in hv.iter().zip(gv).enumerate() {
                assert!(
                    agree(*x, *y, *int),
                    "case {case}: result {k}[{i}]: host {x}, GPU {y}\n{}",
                    p.text
                );
            }
            values += hv.len();
        }
        compared += 1;
    }
    eprintln!("differential: {count} programs checked and run on the host, {compared} compared with the GPU ({values} values)");
}
