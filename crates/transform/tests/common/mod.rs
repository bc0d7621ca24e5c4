//! Helpers shared by the pass tests (each test crate uses some of them).
#![allow(dead_code)]

use ndarray::{ArrayD, IxDyn};
use relax_engine::Value;
use relax_transform::{lookup, Pipeline};

/// The registered passes `names`, in order, verifying the module after each.
pub fn pipeline(names: &[&str]) -> Pipeline {
    let mut p = Pipeline::new().verify(true);
    for n in names {
        p.push(lookup(n).unwrap_or_else(|| panic!("pass {n} is registered")));
    }
    p
}

/// A float32 tensor of `shape` holding deterministic pseudo-random data in [-1, 1).
pub fn random_tensor(shape: &[usize], seed: u64) -> Value {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect();
    tensor(shape, v)
}

/// A float32 tensor of `shape` holding `values`.
pub fn tensor(shape: &[usize], values: Vec<f32>) -> Value {
    let a = ArrayD::from_shape_vec(IxDyn(shape), values).expect("shape");
    Value::Tensor(relax_engine::Tensor::from_array(&a))
}

/// The elements of a float32 tensor value.
pub fn f32s(v: &Value) -> Vec<f32> {
    let t = v.as_tensor().expect("a tensor").to_array::<f32>().expect("f32");
    t.iter().copied().collect()
}

/// Element-wise equality within 1e-4 relative.
pub fn assert_close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "element {i}: {x} vs {y}");
    }
}

/// The JSON object on each non-empty line of `tests/data/<file>` (an oracle's records).
pub fn jsonl_records(file: &str) -> Vec<serde_json::Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect()
}
