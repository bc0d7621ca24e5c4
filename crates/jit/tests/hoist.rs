//! Bounds checks hoisted out of innermost loops (host native code): an index that
//! wraps inside the loop (a narrowing cast, an overflowing `i * c + d`) must be
//! checked at every access; native code with hoisting on, with hoisting off and
//! the interpreter give the same results and the same errors, on hand-written
//! reproducers, on random affine/cast index expressions and on corpus kernels.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use relax_ir::{BaseFunc, PrimFunc};
use relax_jit::internals::{eval_int, lower, ParamSlot};
use relax_jit::{HostKernel, HostOptions, HostTensor, KernelArg};

fn parse_func(src: &str) -> PrimFunc {
    let module = relax_ir::text::parse(src)
        .unwrap_or_else(|d| panic!("{d}\n{src}"))
        .into_module();
    for f in module.functions.values() {
        if let BaseFunc::Prim(f) = f {
            return f.clone();
        }
    }
    panic!("no PrimFunc in\n{src}")
}

const MODES: [(&str, HostOptions); 3] = [
    (
        "native, hoisted",
        HostOptions {
            native: true,
            hoist_bounds_checks: true,
        },
    ),
    (
        "native, checked",
        HostOptions {
            native: true,
            hoist_bounds_checks: false,
        },
    ),
    (
        "interpreter",
        HostOptions {
            native: false,
            hoist_bounds_checks: false,
        },
    ),
];

/// Run `f` on `inputs` (scalars for `Scalar` params as `ints`) in `opts`.
fn run(
    f: &PrimFunc,
    opts: HostOptions,
    inputs: &[Option<HostTensor>],
    ints: &[i64],
) -> Result<Vec<HostTensor>, String> {
    let lowered = Arc::new(lower(f).map_err(|e| e.to_string())?);
    let k = HostKernel::compile_with_options(lowered, opts).map_err(|e| e.to_string())?;
    if opts.native {
        assert!(k.native_stages() > 0, "compiled natively");
    }
    let mut ts: Vec<Option<HostTensor>> = inputs.to_vec();
    let mut scalars = ints.iter();
    let mut args: Vec<KernelArg> = Vec::new();
    for (p, t) in k.lowered().params.iter().zip(ts.iter_mut()) {
        args.push(match (p, t) {
            (ParamSlot::Scalar(v), _) if v.dtype().is_float() => KernelArg::Float(0.5),
            (ParamSlot::Scalar(_), _) => KernelArg::Int(scalars.next().copied().unwrap_or(0)),
            (_, Some(t)) => KernelArg::from(t),
            _ => return Err("missing tensor".into()),
        });
    }
    k.run(&mut args).map_err(|e| e.to_string())?;
    Ok(ts.into_iter().flatten().collect())
}

/// Every mode gives the same outcome (bit-equal tensors or the same error).
fn agree(f: &PrimFunc, inputs: &[Option<HostTensor>], ints: &[i64], what: &str) -> Result<Vec<HostTensor>, String> {
    let mut first: Option<Result<Vec<Vec<f64>>, String>> = None;
    let mut out = Err(String::new());
    for (name, opts) in MODES {
        let r = run(f, opts, inputs, ints);
        let cmp = r
            .as_ref()
            .map(|ts| ts.iter().map(|t| t.to_f64_vec()).collect::<Vec<_>>())
            .map_err(|e| e.clone());
        match &first {
            None => {
                first = Some(cmp);
                out = r;
            }
            Some(want) => {
                let same = match (want, &cmp) {
                    (Ok(a), Ok(b)) => a
                        .iter()
                        .zip(b)
                        .all(|(x, y)| x.iter().zip(y).all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))),
                    (Err(a), Err(b)) => a == b,
                    _ => false,
                };
                if !same {
                    return Err(format!("{what}: {name} gives {cmp:?}, native hoisted gives {want:?}"));
                }
            }
        }
    }
    out
}

fn i32s(v: &[i32]) -> Option<HostTensor> {
    Some(HostTensor::from_slice(&[v.len() as i64], v).expect("tensor"))
}

#[test]
fn narrowing_cast_index_is_checked_at_every_access() {
    // i * 256 through int16 is 0 at both ends of the loop (0 and 65536) but 256,
    // 512, ... in between: the write at i = 1 is out of bounds.
    let f = parse_func(
        r#"
@T.prim_func
def wrap16(a: T.Buffer((1,), "int32"), b: T.Buffer((4,), "int32")):
    for i in range(257):
        b[T.Cast("int16", i * 256)] = a[0]
"#,
    );
    let e = agree(&f, &[i32s(&[7]), i32s(&[0; 4])], &[], "wrap16").expect_err("out of bounds");
    assert!(e.contains("out-of-bounds write of `b` at 256 (size 4)"), "{e}");
}

#[test]
fn wrapping_arithmetic_index_is_checked_at_every_access() {
    // int32 `i * 65536 + d`: at both ends (i = 0 and i = 65536, d = 1) the index is
    // 1 (65536 * 65536 wraps to 0); in between it leaves the buffer.
    let f = parse_func(
        r#"
@T.prim_func
def wrap32(a: T.Buffer((1,), "int32"), b: T.Buffer((4,), "int32"), d: T.int32):
    for i in range(65537):
        b[i * 65536 + d] = a[0]
"#,
    );
    let e = agree(&f, &[i32s(&[7]), i32s(&[0; 4]), None], &[1], "wrap32").expect_err("out of bounds");
    assert!(e.contains("out-of-bounds write of `b` at 65537 (size 4)"), "{e}");
    // A narrow loop-invariant offset whose sum with the loop variable overflows
    // int32 only in the middle of the range is caught the same way.
    let f = parse_func(
        r#"
@T.prim_func
def wrap_mixed(a: T.Buffer((1,), "int32"), b: T.Buffer((4,), "int32"), d: T.int32):
    for i in range(2):
        b[T.Cast("int64", i * 1073741824 + d) - T.Cast("int64", d) - T.int64(1073741824) * T.Cast("int64", i)] = a[0]
"#,
    );
    let out = agree(&f, &[i32s(&[7]), i32s(&[0; 4]), None], &[5], "wrap_mixed, small d").expect("runs");
    assert_eq!(out[1].as_slice::<i32>().expect("i32"), &[7, 0, 0, 0]);
    let e = agree(
        &f,
        &[i32s(&[7]), i32s(&[0; 4]), None],
        &[1 << 30],
        "wrap_mixed, large d",
    )
    .expect_err("oob");
    assert!(e.contains("out-of-bounds write of `b`"), "{e}");
}

#[test]
fn in_range_affine_loops_still_run_and_agree() {
    let f = parse_func(
        r#"
@T.prim_func
def affine(a: T.Buffer((64,), "int32"), b: T.Buffer((64,), "int32"), d: T.int32):
    for i in range(16):
        b[T.Cast("int16", i * 3 + d)] = a[T.Cast("int64", 63 - i * 2)] + b[i + d]
"#,
    );
    let a: Vec<i32> = (0..64).collect();
    let out = agree(&f, &[i32s(&a), i32s(&[1; 64]), None], &[2], "affine").expect("runs");
    let b = out[1].as_slice::<i32>().expect("i32");
    assert_eq!(b[2], 63 + 1);
    assert_eq!(b[5], 61 + 1);
    assert_eq!(b[47], 33 + (53 + 1), "reads b[17], written at i = 5");
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
}

const DTYPES: [&str; 7] = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"];

/// `v` wrapped to `dt`.
fn wrap(v: i64, dt: &str) -> i64 {
    match dt {
        "int8" => v as i8 as i64,
        "int16" => v as i16 as i64,
        "int32" => v as i32 as i64,
        "uint8" => v as u8 as i64,
        "uint16" => v as u16 as i64,
        "uint32" => v as u32 as i64,
        _ => v,
    }
}

fn cast(e: String, from: &str, to: &str) -> String {
    if from == to {
        e
    } else {
        format!("T.Cast(\"{to}\", {e})")
    }
}

/// A random integer expression over the loop variable `i` and the scalar `d`
/// (both int32): `+`, `-`, `*` by constants and casts. Returns it and its dtype.
fn gen(r: &mut Rng, depth: u32) -> (String, &'static str) {
    let leaf = depth == 0 || r.below(4) == 0;
    if leaf {
        return match r.below(3) {
            0 => ("i".into(), "int32"),
            1 => ("d".into(), "int32"),
            _ => (format!("T.int32({})", r.below(9) as i64 - 4), "int32"),
        };
    }
    match r.below(4) {
        0 => {
            let (e, t) = gen(r, depth - 1);
            let to = *r.pick(&DTYPES);
            (cast(e, t, to), to)
        }
        1 | 2 => {
            let (a, ta) = gen(r, depth - 1);
            let (b, tb) = gen(r, depth - 1);
            let op = if r.below(2) == 0 { "+" } else { "-" };
            (format!("({a} {op} {})", cast(b, tb, ta)), ta)
        }
        _ => {
            let (a, ta) = gen(r, depth - 1);
            let c = *r.pick(&[
                -3i64,
                -1,
                0,
                1,
                2,
                3,
                7,
                100,
                256,
                4096,
                65536,
                1 << 24,
                1 << 30,
                1 << 32,
            ]);
            let c = wrap(c, ta);
            (format!("({a} * T.{ta}({c}))"), ta)
        }
    }
}

#[test]
fn random_affine_and_cast_indices_agree_and_never_crash() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut ran, mut failed) = (0usize, 0usize);
    for case in 0..400 {
        let n = *r.pick(&[4i64, 16, 64]);
        let ext = *r.pick(&[1i64, 3, 17, 64, 257, 4097, 65537]);
        let (w, tw) = gen(&mut r, 3);
        let (x, tx) = gen(&mut r, 3);
        let wi = cast(w, tw, r.pick::<&str>(&["int32", "int64"]));
        let xi = cast(x, tx, r.pick::<&str>(&["int32", "int64"]));
        let src = format!(
            r#"
@T.prim_func
def fuzz(a: T.Buffer(({n},), "int32"), b: T.Buffer(({n},), "int32"), d: T.int32):
    for i in range({ext}):
        b[{wi}] = a[{xi}] + b[{wi}] + i
"#
        );
        let f = parse_func(&src);
        let d = *r.pick(&[0i64, 1, 2, -1, 100, 1 << 20, (1 << 31) - 1, -(1 << 31)]);
        let a: Vec<i32> = (0..n as i32).map(|k| k * 3 + 1).collect();
        match agree(
            &f,
            &[i32s(&a), i32s(&vec![0; n as usize]), None],
            &[d],
            &format!("case {case}"),
        ) {
            Ok(_) => ran += 1,
            Err(e) if e.contains(" gives ") => panic!("{e}\nd = {d}\n{src}"),
            Err(_) => failed += 1,
        }
    }
    println!("{ran} random kernels ran, {failed} failed the same way in every mode");
    assert!(
        ran > 20 && failed > 20,
        "both outcomes exercised: {ran} ran, {failed} failed"
    );
}

fn corpus_dir() -> Option<std::path::PathBuf> {
    if let Ok(d) = std::env::var("RELAX_CORPUS_DIR") {
        return Some(d.into());
    }
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/tvm");
    p.join("legalize.jsonl").exists().then_some(p)
}

/// Random inputs for `f` (symbolic extents 8, integer scalars 0): floats in
/// [-1, 1), integers in [0, 3).
fn make_args(f: &PrimFunc, seed: u64) -> Option<Vec<Option<HostTensor>>> {
    let lf = lower(f).ok()?;
    let mut vars: HashMap<u64, i64> = HashMap::new();
    for p in &lf.params {
        if let ParamSlot::Scalar(v) = p {
            vars.insert(v.id(), 0);
        }
    }
    for b in &lf.shape_binds {
        vars.entry(b.var.id()).or_insert(8);
    }
    let mut out = Vec::new();
    for (i, p) in lf.params.iter().enumerate() {
        match p {
            ParamSlot::Scalar(_) => out.push(None),
            ParamSlot::Buffer { orig, .. } => {
                let shape: Vec<i64> = orig
                    .shape()
                    .iter()
                    .map(|e| eval_int(e, &vars).ok())
                    .collect::<Option<_>>()?;
                let n: i64 = shape.iter().product();
                if n > 1 << 20 {
                    return None;
                }
                let dt = orig.dtype();
                let (lo, hi) = if dt.is_float() { (-1.0, 1.0) } else { (0.0, 3.0) };
                let mut vals = common::rand_vec(n as usize, seed + i as u64, lo, hi);
                if !dt.is_float() {
                    vals.iter_mut().for_each(|x| *x = x.floor());
                }
                out.push(Some(HostTensor::from_f64s(dt, &shape, &vals).ok()?));
            }
        }
    }
    Some(out)
}

/// Corpus kernels (the LegalizeOps expected modules) with hoisting on and off give
/// bit-equal results; skipped without the corpus.
#[test]
fn corpus_kernels_hoisted_and_checked_agree() {
    let Some(dir) = corpus_dir() else {
        eprintln!("corpus not found (set RELAX_CORPUS_DIR): test not run");
        return;
    };
    let Ok(text) = std::fs::read_to_string(dir.join("legalize.jsonl")) else {
        eprintln!("cannot read legalize.jsonl: test not run");
        return;
    };
    let mut seen = HashSet::new();
    let mut compared = 0usize;
    for line in text.lines() {
        let Ok(case) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(expected) = case["expected"].as_str() else {
            continue;
        };
        let Ok(p) = relax_ir::text::parse(expected) else {
            continue;
        };
        for f in p.into_module().functions.values() {
            let BaseFunc::Prim(f) = f else { continue };
            if !seen.insert(relax_jit::internals::kernel_hash(f)) || compared >= 300 {
                continue;
            }
            let Some(inputs) = make_args(f, 3) else { continue };
            let run_in = |hoist: bool| {
                run(
                    f,
                    HostOptions {
                        native: true,
                        hoist_bounds_checks: hoist,
                    },
                    &inputs,
                    &[],
                )
            };
            let lowered = match lower(f) {
                Ok(l) => Arc::new(l),
                Err(_) => continue,
            };
            let nk = HostKernel::compile_with(lowered, true);
            if nk.map_or(true, |k| k.native_stages() == 0) {
                continue;
            }
            let (a, b) = (run_in(true), run_in(false));
            match (&a, &b) {
                (Ok(x), Ok(y)) => {
                    for (k, (s, t)) in x.iter().zip(y).enumerate() {
                        let (s, t) = (s.to_f64_vec(), t.to_f64_vec());
                        let same = s.iter().zip(&t).all(|(p, q)| p == q || (p.is_nan() && q.is_nan()));
                        assert!(same, "{}: argument {k} differs with hoisting on and off", case["id"]);
                    }
                }
                (Err(x), Err(y)) => assert_eq!(x, y, "{}", case["id"]),
                _ => panic!("{}: hoisted {a:?}, checked {b:?}", case["id"]),
            }
            compared += 1;
        }
    }
    println!("{compared} corpus kernels agree with hoisting on and off");
    assert!(compared > 50, "only {compared} corpus kernels compared");
}
