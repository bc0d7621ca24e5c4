//! The differential test's program generator: random Relax programs over every dtype
//! (with edge attributes, special float values and integer extremes in their data),
//! hand-written TIR with wrapping and narrowing-cast indices, and a few programs over
//! more than 8M elements.

use relax_engine::{Tensor, Value};
use relax_ir::DataType;

use crate::common::rng::Rng;

/// Every dtype the generator makes.
pub(crate) const DTYPES: [&str; 13] = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16", "float32",
    "float64",
];

/// A dimension: symbolic `n` (bound by the input) or a constant.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Dim {
    N,
    C(usize),
}

#[derive(Clone, Debug)]
pub(crate) struct Val {
    pub(crate) name: String,
    pub(crate) dims: Vec<Dim>,
    pub(crate) dtype: &'static str,
}

pub(crate) fn is_float(dt: &str) -> bool {
    dt.starts_with("float") || dt == "bfloat16"
}

pub(crate) fn is_bool(dt: &str) -> bool {
    dt == "bool"
}

pub(crate) fn is_signed(dt: &str) -> bool {
    dt.starts_with("int")
}

/// The bit width of an integer dtype.
pub(crate) fn int_bits(dt: &str) -> u32 {
    dt.trim_start_matches("uint")
        .trim_start_matches("int")
        .parse()
        .unwrap_or(1)
}

/// The range of an integer dtype (bool: 0..=1).
pub(crate) fn int_range(dt: &str) -> (i128, i128) {
    let b = int_bits(dt);
    if is_bool(dt) {
        (0, 1)
    } else if is_signed(dt) {
        (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
    } else {
        (0, (1i128 << b) - 1)
    }
}

/// A random dtype: every one, `float32`, `int32` and `int64` more often.
pub(crate) fn pick_dtype(rng: &mut Rng) -> &'static str {
    match rng.below(4) {
        0 => "float32",
        1 => ["int32", "int64", "float32"][rng.below(3)],
        _ => DTYPES[rng.below(DTYPES.len())],
    }
}

/// Attribute and constant values at the edges: `0`, `±1`, `2^31±1`, `2^32+1`, `2^63-1`.
pub(crate) const EDGES: [i128; 10] = [
    0,
    1,
    -1,
    2,
    (1 << 31) - 1,
    1 << 31,
    (1 << 31) + 1,
    -(1 << 31) - 1,
    (1 << 32) + 1,
    (1 << 63) - 1,
];

/// An edge value that `dt` holds (floats hold all of them).
pub(crate) fn edge_for(rng: &mut Rng, dt: &str) -> i128 {
    let (lo, hi) = if is_float(dt) {
        (i128::MIN, i128::MAX)
    } else {
        int_range(dt)
    };
    // The text's integer literals stop at 2^63 - 1 (`R.const(18446744073709551615,
    // "uint64")` does not parse).
    let hi = hi.min(i64::MAX as i128);
    let fits: Vec<i128> = EDGES.iter().copied().filter(|v| (lo..=hi).contains(v)).collect();
    match rng.below(4) {
        0 if !is_float(dt) => lo,
        1 if !is_float(dt) => hi,
        _ => *rng.pick(&fits),
    }
}

/// The literal of `v` as a Relax constant of dtype `dt`.
pub(crate) fn literal(v: i128, dt: &str) -> String {
    if is_bool(dt) {
        if v != 0 { "True" } else { "False" }.to_string()
    } else if is_float(dt) {
        format!("{v}.0")
    } else {
        v.to_string()
    }
}

/// A float constant of dtype `dt` for the program's text: often a special value (NaN,
/// `±inf`, `-0.0`, the smallest denormal, the smallest normal, the largest finite value),
/// else an ordinary one whose bits read differently as IEEE half and as bfloat16 (`1.0`,
/// `0.5`, `-5.0`, `1.875`). Returns the literal and the value (exact in `dt`).
pub(crate) fn float_const(rng: &mut Rng, dt: &str) -> (String, f64) {
    let (denormal, normal, max) = match dt {
        // 2^-24, 2^-14 and 65504.
        "float16" => (5.960_464_477_539_063e-8, 6.103_515_625e-5, 65504.0),
        // 2^-133, 2^-126 and (2 - 2^-7) * 2^127.
        "bfloat16" => (
            9.183_549_615_799_121e-41,
            f32::MIN_POSITIVE as f64,
            3.389_531_389_251_535_5e38,
        ),
        "float32" => (f32::from_bits(1) as f64, f32::MIN_POSITIVE as f64, f32::MAX as f64),
        _ => (f64::from_bits(1), f64::MIN_POSITIVE, f64::MAX),
    };
    let v = *rng.pick(&[
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        denormal,
        -denormal,
        normal,
        max,
        -max,
        1.0,
        0.5,
        -5.0,
        1.875,
    ]);
    let text = if v.is_nan() {
        "float(\"nan\")".to_string()
    } else if v.is_infinite() {
        format!("float(\"{}inf\")", if v < 0.0 { "-" } else { "" })
    } else if v == 0.0 {
        "-0.0".to_string()
    } else {
        // `{:?}` of an f64 reads back to the same f64.
        format!("{v:?}")
    };
    (text, v)
}

/// One element as a number (encoded by [`encode`] for its dtype).
#[derive(Clone, Copy)]
pub(crate) enum Num {
    I(i128),
    F(f64),
}

/// A random element of dtype `dt`; with `special`, sometimes an extreme one (NaN,
/// infinities, `-0.0`, a denormal, the largest finite value; an integer's limits).
pub(crate) fn element(rng: &mut Rng, dt: &str, special: bool) -> Num {
    if is_float(dt) {
        if special && rng.below(5) == 0 {
            let denormal = match dt {
                "float16" => 6.0e-8,
                "bfloat16" | "float32" => 1.0e-40,
                _ => 5.0e-320,
            };
            let max = match dt {
                "float16" => 65504.0,
                "bfloat16" => 3.3e38,
                "float32" => f32::MAX as f64,
                _ => f64::MAX,
            };
            return Num::F(*rng.pick(&[
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                -0.0,
                denormal,
                -denormal,
                max,
            ]));
        }
        Num::F((rng.below(161) as f64 - 80.0) / 16.0)
    } else {
        let (lo, hi) = int_range(dt);
        if special && rng.below(5) == 0 {
            let v = *rng.pick(&[lo, hi, hi - 1, lo + 1, 0, 1]);
            return Num::I(v.clamp(lo, hi));
        }
        Num::I((rng.below(21) as i128 - 10).clamp(lo, hi))
    }
}

/// The little-endian bytes of `x` in dtype `dt`.
pub(crate) fn encode(x: Num, dt: &str, out: &mut Vec<u8>) {
    match (x, dt) {
        (Num::F(f), "float16") => out.extend(half::f16::from_f64(f).to_le_bytes()),
        (Num::F(f), "bfloat16") => out.extend(half::bf16::from_f64(f).to_le_bytes()),
        (Num::F(f), "float32") => out.extend((f as f32).to_le_bytes()),
        (Num::F(f), _) => out.extend(f.to_le_bytes()),
        (Num::I(i), _) => {
            let n = (int_bits(dt) as usize).div_ceil(8);
            out.extend(&i.to_le_bytes()[..n]);
        }
    }
}

/// A tensor of `shape` and dtype `dt` with elements from `f`.
pub(crate) fn tensor(dt: &str, shape: &[usize], mut f: impl FnMut() -> Num) -> Value {
    let count: usize = shape.iter().product();
    let mut bytes = Vec::with_capacity(count * 8);
    for _ in 0..count {
        encode(f(), dt, &mut bytes);
    }
    let dtype: DataType = dt.parse().expect("a known dtype");
    let shape: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    Tensor::from_bytes(dtype, &shape, bytes)
        .expect("bytes match the shape")
        .into()
}

/// One random program: its text and its inputs.
pub(crate) struct Program {
    pub(crate) text: String,
    pub(crate) inputs: Vec<Value>,
    /// Whether the GPU may refuse it for a dtype (`float64`, `bfloat16`).
    pub(crate) gpu_may_refuse: bool,
    /// The float tolerance every float result is compared with at least: that of the
    /// least precise float dtype the program computes with (0 when none is 16-bit).
    pub(crate) float_floor: f64,
    /// Pairs of results (indices into the flattened outputs) that must agree on every
    /// path: the same computation with a float constant written into the program
    /// (`R.const`, inlined into TIR by legalization) and passed as an input.
    pub(crate) twins: Vec<(usize, usize)>,
}

/// The program under construction: parameters, inputs and bindings.
pub(crate) struct Builder {
    pub(crate) n: usize,
    pub(crate) vals: Vec<Val>,
    pub(crate) params: Vec<String>,
    pub(crate) inputs: Vec<Value>,
    pub(crate) body: Vec<String>,
    pub(crate) special: bool,
    pub(crate) dtypes: Vec<&'static str>,
    /// The twin binding [`step`] just wrote, to be paired with the binding it returns.
    pub(crate) pending_twin: Option<String>,
    /// Names of bindings that must agree (see [`Program::twins`]).
    pub(crate) twins: Vec<(String, String)>,
}

impl Builder {
    fn shape_of(&self, dims: &[Dim]) -> Vec<usize> {
        dims.iter()
            .map(|d| match d {
                Dim::N => self.n,
                Dim::C(c) => *c,
            })
            .collect()
    }

    fn annotation(dims: &[Dim]) -> String {
        let ann: Vec<String> = dims
            .iter()
            .map(|d| match d {
                Dim::N => "\"n\"".to_string(),
                Dim::C(c) => c.to_string(),
            })
            .collect();
        format!("({}{})", ann.join(", "), if ann.len() == 1 { "," } else { "" })
    }

    /// A new parameter `name` of `dims` and `dtype` holding `value`.
    fn param(&mut self, name: String, dims: Vec<Dim>, dtype: &'static str, value: Value) -> Val {
        self.params
            .push(format!("{name}: R.Tensor({}, \"{dtype}\")", Builder::annotation(&dims)));
        self.inputs.push(value);
        self.dtypes.push(dtype);
        Val { name, dims, dtype }
    }
}

pub(crate) fn generate(rng: &mut Rng) -> Program {
    let mut b = Builder {
        n: 1 + rng.below(5),
        vals: Vec::new(),
        params: Vec::new(),
        inputs: Vec::new(),
        body: Vec::new(),
        special: rng.below(3) == 0,
        dtypes: Vec::new(),
        pending_twin: None,
        twins: Vec::new(),
    };
    let n_inputs = 1 + rng.below(3);
    for i in 0..n_inputs {
        let rank = 1 + rng.below(3);
        let mut dims: Vec<Dim> = (0..rank).map(|_| Dim::C(1 + rng.below(4))).collect();
        if rng.below(2) == 0 {
            dims[0] = Dim::N;
        }
        // Often a second input of the same shape, for binary operators.
        if i > 0 && rng.below(2) == 0 {
            dims = b.vals[0].dims.clone();
        }
        let dtype = pick_dtype(rng);
        let special = b.special;
        let shape = b.shape_of(&dims);
        let value = tensor(dtype, &shape, || element(rng, dtype, special));
        let v = b.param(format!("x{i}"), dims, dtype, value);
        b.vals.push(v);
    }
    let steps = 2 + rng.below(6);
    for k in 0..steps {
        let a = rng.pick(&b.vals).clone();
        let name = format!("v{k}");
        let Some((expr, dims, dtype)) = step(rng, &mut b, &a) else {
            continue;
        };
        b.body.push(format!("    {name} = {expr}"));
        b.dtypes.push(dtype);
        if let Some(t) = b.pending_twin.take() {
            b.twins.push((name.clone(), t));
        }
        b.vals.push(Val { name, dims, dtype });
    }
    if b.vals.len() == n_inputs {
        let a = b.vals[0].clone();
        b.body.push(format!("    v = R.negative({})", a.name));
        b.vals.push(Val {
            name: "v".into(),
            dims: a.dims.clone(),
            dtype: a.dtype,
        });
    }
    let outs: Vec<String> = b.vals[n_inputs..].iter().map(|v| v.name.clone()).collect();
    let mut text = format!("@R.function\ndef main({}):\n", b.params.join(", "));
    if b.vals.iter().any(|v| v.dims.contains(&Dim::N)) || b.params.iter().any(|p| p.contains("\"n\"")) {
        text.push_str("    n = T.int64()\n");
    }
    for line in &b.body {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(&format!("    return ({},)\n", outs.join(", ")));
    let gpu_may_refuse = b.dtypes.contains(&"float64");
    let at = |n: &str| outs.iter().position(|o| o == n);
    let twins = b.twins.iter().filter_map(|(x, y)| Some((at(x)?, at(y)?))).collect();
    let float_floor = if b.dtypes.contains(&"bfloat16") {
        4e-2
    } else if b.dtypes.contains(&"float16") {
        1e-2
    } else {
        0.0
    };
    Program {
        text,
        inputs: b.inputs,
        gpu_may_refuse,
        float_floor,
        twins,
    }
}

/// One binding over `a` (and maybe other values): its expression, dims and dtype.
pub(crate) fn step(rng: &mut Rng, b: &mut Builder, a: &Val) -> Option<(String, Vec<Dim>, &'static str)> {
    let dt = a.dtype;
    Some(match rng.below(17) {
        0 | 1 => {
            // A binary operator on two values of the same shape and dtype (or itself).
            let same: Vec<&Val> = b.vals.iter().filter(|v| v.dims == a.dims && v.dtype == dt).collect();
            let o = (*rng.pick(&same)).clone();
            let ops: &[&str] = if is_float(dt) {
                &[
                    "add",
                    "subtract",
                    "multiply",
                    "maximum",
                    "minimum",
                    "divide",
                    "floor_divide",
                ]
            } else if is_bool(dt) {
                &[
                    "logical_and",
                    "logical_or",
                    "logical_xor",
                    "bitwise_and",
                    "bitwise_or",
                    "maximum",
                    "minimum",
                ]
            } else {
                &[
                    "add",
                    "subtract",
                    "multiply",
                    "maximum",
                    "minimum",
                    "floor_divide",
                    "floor_mod",
                    "bitwise_and",
                    "bitwise_or",
                    "bitwise_xor",
                    "left_shift",
                    "right_shift",
                ]
            };
            let op = rng.pick(ops);
            (format!("R.{op}({}, {})", a.name, o.name), a.dims.clone(), dt)
        }
        2 => {
            // A comparison: a bool result.
            let same: Vec<&Val> = b.vals.iter().filter(|v| v.dims == a.dims && v.dtype == dt).collect();
            let o = (*rng.pick(&same)).clone();
            let op = rng.pick(&["greater", "less", "equal", "not_equal", "greater_equal", "less_equal"]);
            (format!("R.{op}({}, {})", a.name, o.name), a.dims.clone(), "bool")
        }
        3 => {
            // Mixed dtypes: a bool and another dtype (either order); the result has the
            // first operand's dtype (docs/semantics.md, mixed bool/float arithmetic).
            let bools: Vec<&Val> = b
                .vals
                .iter()
                .filter(|v| v.dims == a.dims && (is_bool(v.dtype) != is_bool(dt)))
                .collect();
            if bools.is_empty() {
                let special = b.special;
                let shape = b.shape_of(&a.dims);
                let value = tensor("bool", &shape, || element(rng, "bool", special));
                let name = format!("m{}", b.params.len());
                let v = b.param(name, a.dims.clone(), "bool", value);
                b.vals.push(v);
                return None;
            }
            let o = (*rng.pick(&bools)).clone();
            let op = rng.pick(&["add", "multiply", "maximum", "minimum", "subtract"]);
            let (x, y) = if rng.below(2) == 0 { (a, &o) } else { (&o, a) };
            (format!("R.{op}({}, {})", x.name, y.name), a.dims.clone(), x.dtype)
        }
        4 => {
            let ops: &[&str] = if is_float(dt) {
                &[
                    "exp", "tanh", "sigmoid", "negative", "abs", "floor", "ceil", "round", "sqrt", "square", "sign",
                    "sin", "cos", "isnan", "isinf", "isfinite",
                ]
            } else if is_bool(dt) {
                &["logical_not", "bitwise_not"]
            } else {
                &["negative", "abs", "square", "sign", "bitwise_not"]
            };
            let op = *rng.pick(ops);
            let out = if op.starts_with("is") { "bool" } else { dt };
            let e = match op {
                // Keep the argument where both devices compute well.
                "exp" => format!("R.exp(R.clip({}, -4.0, 4.0))", a.name),
                "sqrt" => format!("R.sqrt(R.abs({}))", a.name),
                "sin" | "cos" => format!("R.{op}(R.clip({}, -8.0, 8.0))", a.name),
                _ => format!("R.{op}({})", a.name),
            };
            (e, a.dims.clone(), out)
        }
        5 if is_float(dt) && rng.below(2) == 0 => {
            // A broadcast against a float constant at a special value (NaN, inf, -0.0,
            // denormals, the largest finite value), either order.
            let (c, _) = float_const(rng, dt);
            let op = *rng.pick(&[
                "add",
                "subtract",
                "multiply",
                "divide",
                "maximum",
                "minimum",
                "floor_divide",
            ]);
            let k = format!("R.const({c}, \"{dt}\")");
            let (x, y) = if rng.below(2) == 0 {
                (a.name.clone(), k)
            } else {
                (k, a.name.clone())
            };
            (format!("R.{op}({x}, {y})"), a.dims.clone(), dt)
        }
        5 => {
            // A broadcast against a constant at an edge value the dtype holds.
            let c = edge_for(rng, dt);
            let op = if is_bool(dt) {
                *rng.pick(&["logical_and", "logical_or"])
            } else {
                *rng.pick(&["add", "subtract", "multiply", "maximum", "minimum"])
            };
            (
                format!("R.{op}({}, R.const({}, \"{dt}\"))", a.name, literal(c, dt)),
                a.dims.clone(),
                dt,
            )
        }
        6 if !a.dims.is_empty() => {
            let axis = rng.below(a.dims.len());
            let keep = rng.below(2) == 0;
            let ops: &[&str] = if is_float(dt) {
                &["sum", "max", "min", "mean", "prod", "argmax", "argmin"]
            } else if is_bool(dt) {
                &["max", "min", "argmax", "argmin"]
            } else {
                &["sum", "max", "min", "prod", "argmax", "argmin"]
            };
            let op = *rng.pick(ops);
            let mut dims = a.dims.clone();
            if keep {
                dims[axis] = Dim::C(1);
            } else {
                dims.remove(axis);
            }
            let (e, out) = if op.starts_with("arg") {
                let e = format!(
                    "R.{op}({}, axis={axis}, keepdims={})",
                    a.name,
                    if keep { "True" } else { "False" }
                );
                (e, "int64")
            } else {
                let e = format!(
                    "R.{op}({}, axis=[{axis}], keepdims={})",
                    a.name,
                    if keep { "True" } else { "False" }
                );
                (e, dt)
            };
            (e, dims, out)
        }
        7 => {
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
                dt,
            )
        }
        8 => {
            // Casts between every pair of dtypes (narrowing, widening, float/int, bool).
            let to = *rng.pick(&DTYPES);
            (format!("R.astype({}, \"{to}\")", a.name), a.dims.clone(), to)
        }
        9 if a.dims.len() == 2 && is_float(dt) => {
            // x @ x^T. A 16-bit float product accumulates in float32 (`out_dtype`): in
            // its own dtype the host kernel library sums in f32 and rounds once, where
            // the TIR rounds after every add (docs/semantics.md, "float16 matmul
            // accumulation"), and a cancelling sum differs past any tolerance (case 863
            // of seed 20261128: bfloat16 1.125 / 1.03125).
            let t = format!("R.permute_dims({}, axes=[1, 0])", a.name);
            let dims = vec![a.dims[0], a.dims[0]];
            if dt.ends_with("16") {
                (
                    format!("R.matmul({}, {t}, out_dtype=\"float32\")", a.name),
                    dims,
                    "float32",
                )
            } else {
                (format!("R.matmul({}, {t})", a.name), dims, dt)
            }
        }
        10 if a.dims.len() >= 2 => {
            // tril/triu with a diagonal at an edge value (k past the int32 limits).
            let k = *rng.pick(&EDGES);
            let k = if rng.below(2) == 0 { -k } else { k };
            let op = rng.pick(&["tril", "triu"]);
            (format!("R.{op}({}, k={k})", a.name), a.dims.clone(), dt)
        }
        11 if is_float(dt) && rng.below(2) == 0 => {
            // clip with float bounds at special values (attributes of the tensor's
            // dtype or of another float dtype), converted to the tensor's dtype.
            let bound = |rng: &mut Rng| {
                let bdt = if rng.below(2) == 0 {
                    dt
                } else {
                    *rng.pick(&["float16", "bfloat16", "float32", "float64"])
                };
                let (c, v) = float_const(rng, bdt);
                let c = if v.is_nan() {
                    "\"nan\"".to_string()
                } else if v.is_infinite() {
                    format!("\"{}inf\"", if v < 0.0 { "-" } else { "" })
                } else {
                    c
                };
                format!("R.prim_value(T.{bdt}({c}))")
            };
            let (lo, hi) = (bound(rng), bound(rng));
            (format!("R.clip({}, {lo}, {hi})", a.name), a.dims.clone(), dt)
        }
        11 if !is_bool(dt) => {
            // clip with bounds at edge values.
            let (lo, hi) = (edge_for(rng, "int64"), edge_for(rng, "int64"));
            let (lo, hi) = (lo.min(hi), lo.max(hi));
            let lo = if rng.below(2) == 0 && hi > 0 { -hi } else { lo };
            (format!("R.clip({}, {lo}, {hi})", a.name), a.dims.clone(), dt)
        }
        12 if !a.dims.is_empty() => {
            // take along axis 0 with int64 (or int32) indices from the data: mostly in
            // range, sometimes negative, at the end or past 2^32.
            let len = b.shape_of(&a.dims[..1])[0] as i128;
            let count = 1 + rng.below(4);
            let idt = if rng.below(3) == 0 { "int32" } else { "int64" };
            let wild = rng.below(3) == 0;
            let value = tensor(idt, &[count], || {
                let (lo, hi) = int_range(idt);
                let v = if wild && rng.below(2) == 0 {
                    *rng.pick(&[-1, len, (1 << 32) + 1, -(1 << 32) + 1, (1 << 63) - 1, -(1 << 63)])
                } else {
                    rng.below(len as usize) as i128
                };
                Num::I(v.clamp(lo, hi))
            });
            let name = format!("i{}", b.params.len());
            let idx = b.param(name, vec![Dim::C(count)], idt, value);
            let mut dims = a.dims.clone();
            dims[0] = Dim::C(count);
            (format!("R.take({}, {}, axis=0)", a.name, idx.name), dims, dt)
        }
        13 => {
            // where(cond, a, other): cond a bool of the same shape.
            let conds: Vec<&Val> = b.vals.iter().filter(|v| v.dims == a.dims && is_bool(v.dtype)).collect();
            let others: Vec<&Val> = b.vals.iter().filter(|v| v.dims == a.dims && v.dtype == dt).collect();
            let o = (*rng.pick(&others)).clone();
            let c = if conds.is_empty() {
                format!("R.less({}, {})", a.name, o.name)
            } else {
                rng.pick(&conds).name.clone()
            };
            (format!("R.where({c}, {}, {})", o.name, a.name), a.dims.clone(), dt)
        }
        14 | 15 if is_float(dt) || rng.below(3) == 0 => {
            // Twins: a scalar float constant (often float16/bfloat16, often special)
            // written into the program, which legalization inlines into TIR, and the same
            // value passed as a 0-d input. Both results must agree on every path.
            let cdt = if is_float(dt) {
                dt
            } else {
                *rng.pick(&["float16", "bfloat16"])
            };
            let (lit, v) = float_const(rng, cdt);
            let x = if cdt == dt {
                a.name.clone()
            } else {
                format!("R.astype({}, \"{cdt}\")", a.name)
            };
            let name = format!("c{}", b.params.len());
            let value = tensor(cdt, &[], || Num::F(v));
            let p = b.param(name, Vec::new(), cdt, value);
            let k = format!("R.const({lit}, \"{cdt}\")");
            let form = rng.below(4);
            let op = *rng.pick(&["add", "subtract", "multiply", "divide", "maximum", "minimum"]);
            let make = |c: &str| match form {
                0 => format!("R.full_like({x}, {c})"),
                1 => {
                    let op = ["less", "greater_equal"][(v.to_bits() % 2) as usize];
                    format!("R.where(R.{op}({x}, {c}), {x}, {c})")
                }
                _ => format!("R.{op}({x}, {c})"),
            };
            let twin = format!("t{}", b.body.len());
            b.body.push(format!("    {twin} = {}", make(&p.name)));
            b.dtypes.push(cdt);
            b.vals.push(Val {
                name: twin.clone(),
                dims: a.dims.clone(),
                dtype: cdt,
            });
            b.pending_twin = Some(twin);
            (make(&k), a.dims.clone(), cdt)
        }
        _ if a.dims.iter().all(|d| *d != Dim::N) => {
            let count: usize = b.shape_of(&a.dims).iter().product();
            (
                format!("R.reshape({}, R.shape([{count}]))", a.name),
                vec![Dim::C(count)],
                dt,
            )
        }
        _ => (format!("R.negative({})", a.name), a.dims.clone(), dt),
    })
}

/// A program whose PrimFunc indexes through a narrowing cast (`A[int8(i * c + d)]`,
/// or stores `B[int16(i * c + d)] = A[0]` after zeroing `B`), called from Relax: the
/// cast wraps inside the loop, so a bounds check hoisted from the loop's ends is
/// unsound there; every executor must give the same values or the same error.
pub(crate) fn generate_tir(rng: &mut Rng) -> Program {
    let dt = *rng.pick(&["float32", "int32", "int8", "uint16", "int64", "float16"]);
    let m = 1 + rng.below(300);
    let l = 1 + rng.below(300);
    let narrow = *rng.pick(&["int8", "uint8", "int16", "uint16", "int32"]);
    let c = *rng.pick(&[1i64, -1, 2, 3, 64, 127, 128, 255, 256, 257, 65536, 1 << 24]);
    let d = *rng.pick(&[0i64, 1, -1, 3, 100, -128, 255, 32767]);
    let idx = format!("T.Cast(\"int32\", T.Cast(\"{narrow}\", vi * {c} + {d}))");
    let (out_len, body) = if rng.below(2) == 0 {
        (
            l,
            format!(
                "        for i in range({l}):\n            with T.block(\"b\"):\n                vi = T.axis.spatial({l}, i)\n                B[vi] = A[{idx}]\n"
            ),
        )
    } else {
        let n = 1 + rng.below(300);
        (
            n,
            format!(
                "        for j in range({n}):\n            with T.block(\"z\"):\n                vj = T.axis.spatial({n}, j)\n                B[vj] = A[0] * T.{dt}(0)\n        for i in range({l}):\n            with T.block(\"b\"):\n                vi = T.axis.spatial({l}, i)\n                B[{idx}] = A[0]\n"
            ),
        )
    };
    let text = format!(
        "@I.ir_module\nclass Module:\n    @T.prim_func\n    def k(A: T.Buffer(({m},), \"{dt}\"), B: T.Buffer(({out_len},), \"{dt}\")):\n{body}    @R.function\n    def main(x: R.Tensor(({m},), \"{dt}\")):\n        cls = Module\n        y = R.call_tir(cls.k, (x,), out_sinfo=R.Tensor(({out_len},), \"{dt}\"))\n        return (y,)\n"
    );
    let mut k = 0;
    let inputs = vec![tensor(dt, &[m], || {
        k += 1;
        if is_float(dt) {
            Num::F(k as f64)
        } else {
            Num::I(k as i128 % 100)
        }
    })];
    Program {
        text,
        inputs,
        gpu_may_refuse: false,
        float_floor: 0.0,
        twins: Vec::new(),
    }
}

/// A program of windowed and scanning operators on a 4-d input (pooling with random
/// windows, strides and padding, a convolution whose window may exceed the padded
/// input, cumulative sums and products, softmax), with NaN/inf data at times: the
/// host kernel library and the legalized TIR must agree, as must the GPU.
pub(crate) fn generate_nn(rng: &mut Rng) -> Program {
    let dt = *rng.pick(&["float32", "float32", "float16", "int32"]);
    let special = rng.below(3) == 0;
    let (c, h, w) = (1 + rng.below(3), 1 + rng.below(6), 1 + rng.below(6));
    let x = tensor(dt, &[1, c, h, w], || element(rng, dt, special));
    let mut inputs = vec![x];
    let mut params = vec![format!("x: R.Tensor((1, {c}, {h}, {w}), \"{dt}\")")];
    let mut lines = Vec::new();
    let list = |rng: &mut Rng, n: usize, lo: usize, hi: usize| -> String {
        let v: Vec<String> = (0..n).map(|_| (lo + rng.below(hi - lo + 1)).to_string()).collect();
        v.join(", ")
    };
    for k in 0..1 + rng.below(3) {
        let e = match rng.below(6) {
            0 if is_float(dt) || dt == "int32" => format!(
                "R.nn.max_pool2d(x, pool_size=[{}], strides=[{}], padding=[{}], ceil_mode={})",
                list(rng, 2, 1, 3),
                list(rng, 2, 1, 2),
                list(rng, 4, 0, 1),
                if rng.below(2) == 0 { "True" } else { "False" }
            ),
            1 if is_float(dt) => format!(
                "R.nn.avg_pool2d(x, pool_size=[{}], strides=[{}], padding=[{}], count_include_pad={})",
                list(rng, 2, 1, 3),
                list(rng, 2, 1, 2),
                list(rng, 4, 0, 1),
                if rng.below(2) == 0 { "True" } else { "False" }
            ),
            2 if is_float(dt) => {
                // The window may exceed the padded input: an empty output.
                let (kh, kw) = (1 + rng.below(h + 2), 1 + rng.below(w + 2));
                let (ph, pw) = (rng.below(2), rng.below(2));
                if kh > h + 2 * ph || kw > w + 2 * pw {
                    continue;
                }
                let o = 1 + rng.below(3);
                let name = format!("w{k}");
                params.push(format!("{name}: R.Tensor(({o}, {c}, {kh}, {kw}), \"{dt}\")"));
                inputs.push(tensor(dt, &[o, c, kh, kw], || element(rng, dt, special)));
                format!(
                    "R.nn.conv2d(x, {name}, strides=[{}], padding=[{ph}, {pw}, {ph}, {pw}])",
                    list(rng, 2, 1, 2)
                )
            }
            3 => format!("R.cumsum(x, axis={})", rng.below(4)),
            4 if dt != "float16" => format!("R.cumprod(x, axis={})", rng.below(4)),
            5 if is_float(dt) => format!("R.nn.softmax(x, axis={})", rng.below(4)),
            _ => "R.nn.relu(x)".to_string(),
        };
        lines.push(format!("    v{k} = {e}\n"));
    }
    if lines.is_empty() {
        lines.push("    v = R.nn.relu(x)\n".into());
    }
    let outs: Vec<String> = lines
        .iter()
        .map(|l| l.trim_start().split(' ').next().unwrap_or("v").to_string())
        .collect();
    let text = format!(
        "@R.function\ndef main({}):\n{}    return ({},)\n",
        params.join(", "),
        lines.concat(),
        outs.join(", ")
    );
    Program {
        text,
        inputs,
        gpu_may_refuse: false,
        float_floor: 0.0,
        twins: Vec::new(),
    }
}

/// A program over a tensor of more than `2^23` elements (reductions whose partial
/// sums leave `f32`'s exact integers, GPU grids past one dispatch). `argmax`/`argmin`
/// over such an axis are left out: lavapipe stops serial loops after 65,535 trips
/// (docs/semantics.md, "Serial loops of more than 65,535 trips on lavapipe").
pub(crate) fn generate_large(rng: &mut Rng) -> Program {
    let count = (1usize << 23) + 1 + rng.below(4096);
    let dt = *rng.pick(&["float32", "int32", "int64"]);
    let op = *rng.pick(&["sum", "max", "min"]);
    let mut k = 0usize;
    let input = tensor(dt, &[count], || {
        k += 1;
        if is_float(dt) {
            // Small integers: sums stay exact in f64 and close in f32.
            Num::F((k % 3) as f64)
        } else {
            Num::I((k % 7) as i128 - 3)
        }
    });
    let text = format!(
        "@R.function\ndef main(x: R.Tensor(({count},), \"{dt}\")):\n    a = R.{op}(x)\n    b = R.add(x, x)\n    c = R.{op}(R.reshape(b, R.shape([1, {count}])), axis=[1])\n    return (a, c)\n"
    );
    Program {
        text,
        inputs: vec![input],
        gpu_may_refuse: false,
        float_floor: 0.0,
        twins: Vec::new(),
    }
}
