//! Greedy generation with a decoder that Apache TVM 0.27 exported with a KV cache
//! (`tvm.relax.frontend.nn`, `nn.KVCache` per layer, `export_tvm(debug=False)`), compared
//! with TVM's own run of the same loop (`tvm.compile(mod, "llvm")`): the same tokens and
//! logits (rtol 1e-3) on the host and on the GPU; the KV-cache builtins' edge cases; the
//! kernels compiled once for every length.
//!
//! `tests/generate/` (`prog.py`, `params.npz`, `reference.json`) is made by
//! `scripts/gen_decoder.py tests/generate` (tiny preset, float32, prompt 1,2,3,4, 17 new
//! tokens: prefill then 16 decode steps; the caches start with 8 rows and grow twice), and
//! `tests/generate/f16/` by `scripts/gen_decoder.py tests/generate/f16 --dtype float16`
//! (float16 weights, activations and caches; float32 logits compared with atol and rtol 1e-2;
//! a step where TVM's two best logits are closer than that may pick either, and ends the
//! comparison).

use std::path::{Path, PathBuf};

use relax_engine::generate::{Decoder, DecoderFunctions, Generation};
use relax_engine::kv_cache::as_kv_cache;
use relax_engine::params::Params;
use relax_engine::{DeviceChoice, Engine, EngineConfig, Loaded, Tensor, Value};
use relax_ir::DataType;
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    prompt: Vec<i64>,
    tokens: Vec<i64>,
    logits: Vec<Vec<f32>>,
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/generate")
}

fn reference_in(dir: &Path) -> Reference {
    let text = std::fs::read_to_string(dir.join("reference.json")).expect("reading reference.json");
    serde_json::from_str(&text).expect("parsing reference.json")
}

fn reference() -> Reference {
    reference_in(&dir())
}

fn load_from(dir: &Path, device: DeviceChoice) -> (Loaded, Params) {
    let src = std::fs::read_to_string(dir.join("prog.py")).expect("reading prog.py");
    let module = relax_ir::text::parse(&src).expect("parsing prog.py").into_module();
    let engine = Engine::new(EngineConfig {
        device,
        ..EngineConfig::default()
    });
    let loaded = engine.load(&module).expect("loading the decoder");
    let params = Params::read(&dir.join("params.npz")).expect("reading params.npz");
    (loaded, params)
}

fn load(device: DeviceChoice) -> (Loaded, Params) {
    load_from(&dir(), device)
}

fn gpu_available() -> bool {
    match relax_gpu_runtime::GpuRuntime::shared_default() {
        Ok(_) => true,
        Err(e) => {
            println!("no wgpu adapter ({e}): skipping the GPU generation test");
            false
        }
    }
}

/// Tokens and logits against TVM's, `|ours - tvm| <= atol + rtol * |tvm|`. A token may
/// differ only where TVM's logit for ours is within that tolerance of its best (a tie at
/// this precision); the comparison stops there.
fn check_against_tvm(g: &Generation, r: &Reference, what: &str, (atol, rtol): (f32, f32)) -> usize {
    assert_eq!(g.tokens.len(), r.tokens.len(), "{what}: number of tokens");
    for (step, (ours, theirs)) in g.logits.iter().zip(&r.logits).enumerate() {
        assert_eq!(ours.len(), theirs.len(), "{what}: vocabulary size at step {step}");
        for (i, (&a, &b)) in ours.iter().zip(theirs).enumerate() {
            let tol = atol + rtol * b.abs();
            assert!(
                (a - b).abs() <= tol,
                "{what}: step {step}, logit {i}: ours {a}, TVM {b}"
            );
        }
        let (ours_tok, tvm_tok) = (g.tokens[step], r.tokens[step]);
        if ours_tok != tvm_tok {
            let best = theirs[tvm_tok as usize];
            let mine = theirs[ours_tok as usize];
            assert!(
                best - mine <= atol + rtol * best.abs(),
                "{what}: step {step}: token {ours_tok}, TVM's {tvm_tok} (TVM's logits {mine} and {best})"
            );
            println!(
                "{what}: step {step} is a tie at this precision ({ours_tok} vs TVM's {tvm_tok}); compared up to it"
            );
            return step;
        }
    }
    g.tokens.len()
}

fn generate_on(device: DeviceChoice, what: &str) {
    generate_case(&dir(), device, what, (1e-4, 1e-3), 17);
}

/// Generate in `dir` on `device`, compare with TVM; at least `min_equal` tokens must agree.
fn generate_case(dir: &Path, device: DeviceChoice, what: &str, tol: (f32, f32), min_equal: usize) {
    let r = reference_in(dir);
    let (loaded, params) = load_from(dir, device);
    let mut dec = Decoder::new(&loaded, &params, DecoderFunctions::default()).expect("matching parameters");
    if device == DeviceChoice::Gpu {
        dec.weights_to_vdevice("webgpu").expect("weights to the GPU");
    }
    let g = dec.generate(&r.prompt, r.tokens.len()).expect("generation");
    println!(
        "{what}: tokens {:?}, prefill {:.2} ms, decode {:.3} ms/token",
        g.tokens, g.prefill_ms, g.decode_ms_per_token
    );
    let equal = check_against_tvm(&g, &r, what, tol);
    assert!(equal >= min_equal, "{what}: only {equal} tokens equal TVM's");
    // Every step after the first reuses the kernels compiled for the first.
    let compiled = loaded.stats().kernels_compiled;
    let g2 = dec.generate(&r.prompt, r.tokens.len()).expect("second generation");
    assert_eq!(g2.tokens, g.tokens, "{what}: second generation");
    assert_eq!(
        loaded.stats().kernels_compiled,
        compiled,
        "{what}: a second generation compiled kernels again"
    );
}

#[test]
fn host_generation_matches_tvm() {
    generate_on(DeviceChoice::Cpu, "host");
}

#[test]
fn gpu_generation_matches_tvm() {
    if !gpu_available() {
        return;
    }
    generate_on(DeviceChoice::Gpu, "gpu");
}

#[test]
fn host_generation_f16_matches_tvm() {
    generate_case(&dir().join("f16"), DeviceChoice::Cpu, "host f16", (1e-2, 1e-2), 8);
}

#[test]
fn gpu_generation_f16_matches_tvm() {
    if !gpu_available() {
        return;
    }
    generate_case(&dir().join("f16"), DeviceChoice::Gpu, "gpu f16", (1e-2, 1e-2), 8);
}

#[test]
fn gpu_caches_stay_on_the_device() {
    if !gpu_available() {
        return;
    }
    let r = reference();
    let (loaded, params) = load(DeviceChoice::Gpu);
    let caches = loaded.run("_initialize_effect", &[]).unwrap();
    let caches = caches.as_tuple().unwrap();
    assert_eq!(caches.len(), 4);
    for c in caches {
        let c = as_kv_cache(c).expect("a KV cache");
        assert!(c.is_on_device(), "a cache of a GPU run is in host memory");
        assert_eq!((c.fill_count(), c.capacity()), (0, 8));
    }
    let mut dec = Decoder::new(&loaded, &params, DecoderFunctions::default()).unwrap();
    dec.weights_to_vdevice("webgpu").unwrap();
    dec.generate(&r.prompt, r.tokens.len()).unwrap();
    let before = loaded.stats();
    let g = dec.generate(&r.prompt, r.tokens.len()).unwrap();
    let after = loaded.stats();
    assert_eq!(g.tokens, r.tokens);
    let weight_bytes: u64 = params.iter().map(|(_, v)| v.as_tensor().unwrap().nbytes() as u64).sum();
    let uploaded = after.bytes_uploaded - before.bytes_uploaded;
    let downloaded = after.bytes_downloaded - before.bytes_downloaded;
    let device_copies = after.device_copies - before.device_copies;
    println!("gpu generation: {uploaded} bytes uploaded, {downloaded} read back, {device_copies} device copies");
    // Appends (4 caches, 17 calls) and growth are copies between device buffers.
    assert!(device_copies >= 4 * 17, "{device_copies} device copies");
    // The weights are not uploaded again; only token ids go up and logits come back.
    assert!(uploaded < weight_bytes / 10, "{uploaded} bytes uploaded per generation");
    let logits_bytes = 17 * 128 * 4;
    assert!(
        downloaded <= 2 * logits_bytes,
        "{downloaded} bytes read back per generation"
    );
}

#[test]
fn kernels_are_compiled_once_for_every_length() {
    let r = reference();
    let (loaded, params) = load(DeviceChoice::Cpu);
    let dec = Decoder::new(&loaded, &params, DecoderFunctions::default()).unwrap();
    // Two tokens: prefill and one decode step compile everything either needs.
    dec.generate(&r.prompt, 2).unwrap();
    let after_two = loaded.stats().kernels_compiled;
    assert!(after_two > 0);
    // Fifteen more decode steps at fifteen new lengths, and a longer prompt.
    dec.generate(&r.prompt, 17).unwrap();
    dec.generate(&[5, 6, 7, 8, 9, 10, 11], 3).unwrap();
    assert_eq!(
        loaded.stats().kernels_compiled,
        after_two,
        "a new length recompiled a kernel"
    );
}

#[test]
fn run_once_is_prefill_with_fresh_caches() {
    let r = reference();
    let (loaded, params) = load(DeviceChoice::Cpu);
    let dec = Decoder::new(&loaded, &params, DecoderFunctions::default()).unwrap();
    // TVM's first logits row is prefill's; each call starts from new, empty caches, so a
    // second call gives the same row (a filled cache would make the view too long).
    for _ in 0..2 {
        let (logits, ms) = dec.run_once("prefill", &r.prompt).expect("prefill");
        assert!(ms >= 0.0);
        assert_eq!(logits.len(), r.logits[0].len());
        for (i, (&ours, &tvm)) in logits.iter().zip(&r.logits[0]).enumerate() {
            assert!(
                (ours - tvm).abs() <= 1e-4 + 1e-3 * tvm.abs(),
                "logit {i}: ours {ours}, TVM {tvm}"
            );
        }
    }
    assert!(dec.run_once("prefill", &[]).is_err(), "an empty sequence");
    assert!(dec.run_once("no_such_function", &r.prompt).is_err());
}

// ---------------------------------------------------------------- the cache builtins

fn f32_tensor(shape: &[i64], start: f32) -> Tensor {
    let n: i64 = shape.iter().product();
    let mut bytes = Vec::new();
    for i in 0..n {
        bytes.extend_from_slice(&(start + i as f32).to_le_bytes());
    }
    Tensor::from_bytes(DataType::FLOAT32, shape, bytes).unwrap()
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_f64_values().unwrap().into_iter().map(|x| x as f32).collect()
}

struct Builtins {
    engine: Engine,
}

impl Builtins {
    fn new() -> Builtins {
        Builtins {
            engine: Engine::new(EngineConfig {
                device: DeviceChoice::Cpu,
                ..EngineConfig::default()
            }),
        }
    }
    fn call(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        let f = self
            .engine
            .packed(&format!("vm.builtin.attention_kv_cache_{name}"))
            .unwrap();
        f.call(args).map_err(|e| e.to_string())
    }
    fn create(&self, cap: i64) -> Value {
        let init = Tensor::zeros(DataType::FLOAT32, &[cap, 2, 3]).unwrap();
        self.call(
            "create",
            &[Value::Tensor(init), Value::shape(&[cap, 2, 3]), Value::int(0)],
        )
        .unwrap()
    }
}

#[test]
fn cache_appends_in_place_and_grows_past_its_capacity() {
    let b = Builtins::new();
    let cache = b.create(2);
    let c = as_kv_cache(&cache).unwrap();
    assert_eq!((c.fill_count(), c.capacity()), (0, 2));
    // Three rows into two: the capacity doubles to 4, the object stays the same.
    let out = b
        .call("append", &[cache.clone(), Value::Tensor(f32_tensor(&[3, 2, 3], 0.0))])
        .unwrap();
    assert!(as_kv_cache(&out).is_some_and(|o| std::ptr::eq(o, c)));
    assert_eq!((c.fill_count(), c.capacity()), (3, 4));
    // Two more: 5 > 4, doubles to 8, keeping the rows there.
    b.call("append", &[cache.clone(), Value::Tensor(f32_tensor(&[2, 2, 3], 100.0))])
        .unwrap();
    assert_eq!((c.fill_count(), c.capacity()), (5, 8));
    let view = b.call("view", &[cache.clone(), Value::shape(&[5, 2, 3])]).unwrap();
    let view = view.as_tensor().unwrap();
    assert_eq!(view.shape(), &[5, 2, 3]);
    let mut expected: Vec<f32> = (0..18).map(|i| i as f32).collect();
    expected.extend((0..12).map(|i| 100.0 + i as f32));
    assert_eq!(values(view), expected);
    // A view without a shape: the filled rows.
    let whole = b.call("view", std::slice::from_ref(&cache)).unwrap();
    assert_eq!(whole.as_tensor().unwrap().shape(), &[5, 2, 3]);
    // Pop two rows, clear.
    b.call("array_popn", &[Value::tuple(vec![cache.clone()]), Value::int(2)])
        .unwrap();
    assert_eq!(c.fill_count(), 3);
    b.call("array_clear", &[Value::tuple(vec![cache.clone()])]).unwrap();
    assert_eq!(c.fill_count(), 0);
}

#[test]
fn cache_errors() {
    let b = Builtins::new();
    let cache = b.create(4);
    b.call("append", &[cache.clone(), Value::Tensor(f32_tensor(&[2, 2, 3], 0.0))])
        .unwrap();
    // A view longer than the filled rows.
    let e = b.call("view", &[cache.clone(), Value::shape(&[3, 2, 3])]).unwrap_err();
    assert!(e.contains("a view of 3 rows of a cache holding 2"), "{e}");
    // A view whose rows have another shape.
    let e = b.call("view", &[cache.clone(), Value::shape(&[2, 3, 2])]).unwrap_err();
    assert!(e.contains("dimension 1 mismatch"), "{e}");
    // Appending another dtype.
    let f16 = Tensor::zeros(DataType::FLOAT16, &[1, 2, 3]).unwrap();
    let e = b.call("append", &[cache.clone(), Value::Tensor(f16)]).unwrap_err();
    assert!(e.contains("dtype mismatch"), "{e}");
    // Appending rows of another shape.
    let e = b
        .call("append", &[cache.clone(), Value::Tensor(f32_tensor(&[1, 3, 3], 0.0))])
        .unwrap_err();
    assert!(e.contains("shape mismatch"), "{e}");
    // Not a cache.
    let e = b.call("view", &[Value::int(3)]).unwrap_err();
    assert!(e.contains("must be a KV cache"), "{e}");
    // Nothing changed by the failed calls.
    assert_eq!(as_kv_cache(&cache).unwrap().fill_count(), 2);
}
