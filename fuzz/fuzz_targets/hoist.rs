//! Hoisted bounds checks of the host's native code: the input picks an innermost loop
//! (extent, an optional outer loop) whose store and load indices are random integer
//! expressions over the loop variables and a scalar (`+`, `-`, `*` by constants, casts
//! to every integer width, so indices wrap inside the loop). The PrimFunc runs as native
//! code with hoisting on, with hoisting off, and on the interpreter: the three must give
//! bit-equal results or the same error. Built with AddressSanitizer (cargo-fuzz's
//! default), an unchecked access outside a buffer is also reported as a crash.

#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use relax_ir::BaseFunc;
use relax_jit::internals::{lower, ParamSlot};
use relax_jit::{HostKernel, HostOptions, HostTensor, KernelArg};

/// Choices drawn from the fuzzer's bytes (zeros once they run out).
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn below(&mut self, n: usize) -> usize {
        let v = u16::from_le_bytes([self.byte(), self.byte()]) as usize;
        v % n.max(1)
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

const DTYPES: [&str; 8] = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"];

const CONSTS: [i64; 16] = [
    -3,
    -1,
    0,
    1,
    2,
    3,
    7,
    100,
    255,
    256,
    4096,
    65535,
    65536,
    1 << 24,
    1 << 30,
    1 << 32,
];

/// `v` as a literal of `dt` (wrapped to its width, as the text's constants must fit).
fn wrap(v: i64, dt: &str) -> i64 {
    match dt {
        "int8" => v as i8 as i64,
        "int16" => v as i16 as i64,
        "int32" => v as i32 as i64,
        "uint8" => v as u8 as i64,
        "uint16" => v as u16 as i64,
        "uint32" => v as u32 as i64,
        "uint64" => v.max(0),
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

/// A random integer expression over the loop variables and `d`, with its dtype.
fn gen(r: &mut Bytes, depth: u32, vars: &[&'static str]) -> (String, &'static str) {
    if depth == 0 || r.below(4) == 0 {
        return match r.below(3) {
            0 => (r.pick(vars).to_string(), "int32"),
            1 => ("d".into(), "int32"),
            _ => (format!("T.int32({})", r.below(9) as i64 - 4), "int32"),
        };
    }
    match r.below(4) {
        0 => {
            let (e, t) = gen(r, depth - 1, vars);
            let to = *r.pick(&DTYPES);
            (cast(e, t, to), to)
        }
        1 | 2 => {
            let (a, ta) = gen(r, depth - 1, vars);
            let (b, tb) = gen(r, depth - 1, vars);
            let op = if r.below(2) == 0 { "+" } else { "-" };
            (format!("({a} {op} {})", cast(b, tb, ta)), ta)
        }
        _ => {
            let (a, ta) = gen(r, depth - 1, vars);
            let c = wrap(*r.pick(&CONSTS), ta);
            (format!("({a} * T.{ta}({c}))"), ta)
        }
    }
}

/// Run the PrimFunc of `src` with `opts` on fresh buffers: their contents after the
/// run, or the error's text.
fn run(src: &str, opts: HostOptions, n: usize, d: i64) -> Result<Vec<Vec<u8>>, String> {
    let module = relax_ir::text::parse(src).map_err(|e| e.message)?.into_module();
    let Some(f) = module.functions.values().find_map(|f| match f {
        BaseFunc::Prim(f) => Some(f.clone()),
        _ => None,
    }) else {
        return Err("no PrimFunc".into());
    };
    let lowered = Arc::new(lower(&f).map_err(|e| e.to_string())?);
    let k = HostKernel::compile_with_options(lowered, opts).map_err(|e| e.to_string())?;
    let a: Vec<i32> = (0..n as i32).map(|k| k * 3 + 1).collect();
    let mut ts = vec![
        HostTensor::from_slice(&[n as i64], &a).map_err(|e| e.to_string())?,
        HostTensor::from_slice(&[n as i64], &vec![0i32; n]).map_err(|e| e.to_string())?,
    ];
    let mut args: Vec<KernelArg> = Vec::new();
    let mut tensors = ts.iter_mut();
    for p in k.lowered().params.iter() {
        args.push(match p {
            ParamSlot::Scalar(_) => KernelArg::Int(d),
            _ => KernelArg::from(tensors.next().ok_or("too many buffers")?),
        });
    }
    k.run(&mut args).map_err(|e| e.to_string())?;
    drop(args);
    Ok(ts
        .iter()
        .map(|t| t.to_f64_vec().iter().flat_map(|x| x.to_le_bytes()).collect())
        .collect())
}

fuzz_target!(|data: &[u8]| {
    let mut r = Bytes(data);
    let n = *r.pick(&[1usize, 4, 16, 64, 256]);
    let ext = *r.pick(&[1i64, 2, 3, 17, 64, 255, 256, 257, 4097, 65537]);
    let outer = *r.pick(&[0i64, 0, 2, 3, 17]);
    let vars: &[&str] = if outer > 0 { &["i", "j"] } else { &["i"] };
    let (w, tw) = gen(&mut r, 3, vars);
    let (x, tx) = gen(&mut r, 3, vars);
    let wi = cast(w, tw, r.pick::<&str>(&["int32", "int64"]));
    let xi = cast(x, tx, r.pick::<&str>(&["int32", "int64"]));
    let d = *r.pick(&[0i64, 1, 2, -1, 100, 1 << 20, (1 << 31) - 1, -(1 << 31)]);
    let body = if r.below(2) == 0 {
        format!("b[{wi}] = a[{xi}] + b[{wi}] + i")
    } else {
        format!("b[{wi}] = a[{xi}]")
    };
    let src = if outer > 0 {
        format!(
            "@T.prim_func\ndef fuzz(a: T.Buffer(({n},), \"int32\"), b: T.Buffer(({n},), \"int32\"), d: T.int32):\n    for j in range({outer}):\n        for i in range({ext}):\n            {body}\n"
        )
    } else {
        format!(
            "@T.prim_func\ndef fuzz(a: T.Buffer(({n},), \"int32\"), b: T.Buffer(({n},), \"int32\"), d: T.int32):\n    for i in range({ext}):\n        {body}\n"
        )
    };
    let modes = [
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
    let want = run(&src, modes[0].1, n, d);
    for (name, opts) in &modes[1..] {
        let got = run(&src, *opts, n, d);
        assert!(
            got == want,
            "{name} differs from native hoisted (d = {d})\n{src}\nhoisted: {:?}\n{name}: {:?}",
            want.as_ref().map(|_| "ok"),
            got.as_ref().map(|_| "ok")
        );
    }
});
