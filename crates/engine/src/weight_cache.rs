//! The packed form of a matrix product's shared right operand (a layer's weight),
//! kept between calls so that a model run again packs none of its weights.
//!
//! What is cached belongs to the weight's memory, never to an address alone:
//!
//! - a tensor with its own host bytes keeps its packed forms in its storage's
//!   [`Slot`], tagged with the storage's version: every write to the storage moves
//!   the version on (before the bytes can change), so a form packed before it is
//!   never used after it, and the forms go when the storage does. A storage is packed
//!   the second time it is seen unchanged, so an operand computed afresh on every
//!   run (an activation) is never packed for nothing;
//! - a tensor still sharing a module constant's bytes (a weight bound into the IR)
//!   gets a new storage on every run, so its forms are kept per constant, in a
//!   process-wide table that holds the constant weakly (the allocation stays
//!   reserved, so its address cannot name another constant) and drops the forms of
//!   constants that are gone whenever a constant's form is missed. A constant's bytes never change (a write copies them).
//!
//! A form is keyed by the tensor's byte offset, its `k x n` and whether it is read
//! transposed (`[n, k]`); it is only stored after checking that the bytes packed are
//! the ones the key names.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};

use relax_host_kernels::prepacked::{Layout, PackedB};
use relax_ir::relax::NDArray;

use crate::value::{HostBytes, Storage, StorageData, Tensor};

/// Which packed form of a tensor: its byte offset, `k x n`, and whether the
/// tensor is `[n, k]` (read transposed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    /// Byte offset of the tensor in its storage.
    pub offset: usize,
    /// The summed axis.
    pub k: usize,
    /// Columns of the product.
    pub n: usize,
    /// The tensor is `[n, k]`.
    pub transposed: bool,
    /// The form kept.
    pub layout: Layout,
}

/// One cached form: packed once the tensor was seen unchanged twice.
struct Entry {
    key: Key,
    version: u64,
    packed: Option<Arc<PackedB>>,
}

/// The packed forms kept with one storage (see the module documentation).
#[derive(Default)]
pub(crate) struct Slot(Mutex<Vec<Entry>>);

/// Forms of module constants, by the constant's address (held weakly).
type ConstantForms = HashMap<usize, (Weak<NDArray>, Vec<Entry>)>;

static CONSTANTS: Mutex<Option<ConstantForms>> = Mutex::new(None);

/// Where a tensor's forms live, fixed before its bytes are read.
pub(crate) enum Owner {
    /// The storage's own bytes at `version`.
    Storage(Arc<Storage>, u64),
    /// A module constant's bytes.
    Constant(Arc<NDArray>),
}

/// What to do for one product.
pub(crate) enum Probe {
    /// Use this packed form.
    Hit(Arc<PackedB>),
    /// Pack now and [`store`] the form.
    Pack(Owner, Key),
    /// Compute without packing ahead (first sighting, or not cacheable).
    Skip,
}

/// Look up the form `key` of `t`. Reads the storage's version before any byte of
/// it is read for the product (a write after this point makes what is packed stale,
/// never wrongly fresh).
pub(crate) fn probe(t: &Tensor, key: Key) -> Probe {
    let storage = &t.0.storage;
    let version = storage.version.load(Ordering::Acquire);
    let constant = match storage.data.try_read() {
        Ok(g) => match &*g {
            StorageData::Host(HostBytes::Shared(a)) => Some(a.clone()),
            StorageData::Host(HostBytes::Owned(_)) => None,
            StorageData::Device(_) => return Probe::Skip,
        },
        // Being written (or poisoned): nothing to reuse.
        Err(_) => return Probe::Skip,
    };
    if let Some(c) = constant {
        let Ok(mut guard) = CONSTANTS.lock() else {
            return Probe::Skip;
        };
        let table = guard.get_or_insert_with(HashMap::new);
        if let Some((_, entries)) = table.get(&(Arc::as_ptr(&c) as usize)) {
            if let Some(p) = entries.iter().find(|e| e.key == key).and_then(|e| e.packed.clone()) {
                return Probe::Hit(p);
            }
        }
        // Forms of constants that are gone go with them.
        table.retain(|_, (w, _)| w.strong_count() > 0);
        return Probe::Pack(Owner::Constant(c), key);
    }
    let Ok(mut entries) = storage.derived.0.lock() else {
        return Probe::Skip;
    };
    entries.retain(|e| e.version == version);
    match entries.iter_mut().find(|e| e.key == key) {
        Some(Entry { packed: Some(p), .. }) => Probe::Hit(p.clone()),
        Some(_) => Probe::Pack(Owner::Storage(storage.clone(), version), key),
        None => {
            entries.push(Entry {
                key,
                version,
                packed: None,
            });
            Probe::Skip
        }
    }
}

/// Keep `packed`, the form `key` of `owner` packed from the bytes at `packed_from`
/// (the start of the tensor's bytes as the product read them). Nothing is kept
/// when those are not the owner's own bytes (a copy staged for the call).
pub(crate) fn store(owner: Owner, key: Key, packed_from: *const u8, packed: Arc<PackedB>) {
    match owner {
        Owner::Constant(c) => {
            if c.data.as_ptr().wrapping_add(key.offset) != packed_from {
                return;
            }
            let Ok(mut guard) = CONSTANTS.lock() else { return };
            let table = guard.get_or_insert_with(HashMap::new);
            let (_, entries) = table
                .entry(Arc::as_ptr(&c) as usize)
                .or_insert_with(|| (Arc::downgrade(&c), Vec::new()));
            entries.retain(|e| e.key != key);
            entries.push(Entry {
                key,
                version: 0,
                packed: Some(packed),
            });
        }
        Owner::Storage(s, version) => {
            let own = match s.data.try_read() {
                Ok(g) => match &*g {
                    StorageData::Host(h) => h.bytes().as_ptr().wrapping_add(key.offset) == packed_from,
                    StorageData::Device(_) => false,
                },
                Err(_) => false,
            };
            if !own {
                return;
            }
            let Ok(mut entries) = s.derived.0.lock() else { return };
            entries.retain(|e| e.version == version && e.key != key);
            entries.push(Entry {
                key,
                version,
                packed: Some(packed),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use ndarray::{ArrayD, IxDyn};

    use super::*;
    use crate::{DeviceChoice, Engine, EngineConfig, Value};

    const K: usize = 48;
    const N: usize = 40;
    const NC: usize = 24;

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 7 + seed * 13) % 23) as f32 * 0.125 - 1.375)
            .collect()
    }

    fn array(shape: &[usize], v: Vec<f32>) -> ArrayD<f32> {
        ArrayD::from_shape_vec(IxDyn(shape), v).expect("shape fits")
    }

    /// `y = x @ wᵀ` (a `[n, k]` weight), `z = x @ v + b` (a `[k, n]` weight) and
    /// `u = x @ c` for a constant `c` of the module.
    fn module(m: usize, c: &[f32]) -> relax_ir::IRModule {
        let rows: Vec<String> = c
            .chunks(NC)
            .map(|r| {
                format!(
                    "[{}]",
                    r.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", ")
                )
            })
            .collect();
        let src = format!(
            r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(({m}, {K}), "float32"), w: R.Tensor(({N}, {K}), "float32"), v: R.Tensor(({K}, {N}), "float32"), b: R.Tensor(({N},), "float32")):
        with R.dataflow():
            wt = R.permute_dims(w)
            y = R.matmul(x, wt)
            z0 = R.matmul(x, v)
            z = R.add(z0, b)
            u = R.matmul(x, R.const([{}], "float32"))
            out = (y, z, u)
            R.output(out)
        return out
"#,
            rows.join(", ")
        );
        match relax_ir::text::parse(&src) {
            Ok(p) => p.into_module(),
            Err(d) => panic!("{}", d.render("test.py", &src, false)),
        }
    }

    fn product(m: usize, k: usize, n: usize, a: &[f32], b: impl Fn(usize, usize) -> f32) -> Vec<f64> {
        (0..m * n)
            .map(|e| (0..k).map(|l| a[(e / n) * k + l] as f64 * b(l, e % n) as f64).sum())
            .collect()
    }

    fn outputs(v: &Value) -> Vec<Vec<f32>> {
        let Value::Tuple(fields) = v else {
            panic!("a tuple, got {}", v.describe())
        };
        fields
            .iter()
            .map(|f| match f {
                Value::Tensor(t) => t.to_array::<f32>().expect("f32").iter().copied().collect(),
                other => panic!("a tensor, got {}", other.describe()),
            })
            .collect()
    }

    fn close(got: &[f32], want: &[f64], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()),
                "{what}[{i}]: {g} vs {w}"
            );
        }
    }

    fn packed_forms(t: &Tensor) -> usize {
        let entries = t.0.storage.derived.0.lock().expect("not poisoned");
        entries.iter().filter(|e| e.packed.is_some()).count()
    }

    /// Weights packed on one run are reused by the next ones with the same results
    /// bit for bit; a weight written between runs, or a new weight tensor, gives the
    /// new answer; a module constant is packed once for every run. With a few rows
    /// both weights are packed in panels; with many, the `[k, n]` weight and the
    /// constant are kept as `[n, k]` rows and the `[n, k]` weight is read in place.
    #[test]
    fn packed_weights_are_reused_until_written() {
        if relax_host_kernels::prepacked::PackedB::pack(1, 1, relax_host_kernels::gemm::MatRef::row_major(&[1.0], 1))
            .expect("fits")
            .is_none()
        {
            eprintln!("no AVX2/AVX-512: weights are not packed on this CPU");
            return;
        }
        reuse_until_written(20, Layout::Panels);
        reuse_until_written(80, Layout::Rows);
    }

    fn reuse_until_written(m: usize, layout: Layout) {
        let c = values(K * NC, 4);
        let module = module(m, &c);
        let engine = Engine::new(EngineConfig {
            device: DeviceChoice::Cpu,
            ..EngineConfig::default()
        });
        let loaded = engine.load(&module).expect("loads");
        let (x, w, v, b) = (values(m * K, 1), values(N * K, 2), values(K * N, 3), values(N, 5));
        let tensors = [
            Tensor::from_array(&array(&[m, K], x.clone())),
            Tensor::from_array(&array(&[N, K], w.clone())),
            Tensor::from_array(&array(&[K, N], v.clone())),
            Tensor::from_array(&array(&[N], b.clone())),
        ];
        let args: Vec<Value> = tensors.iter().cloned().map(Value::Tensor).collect();
        let want = |w: &[f32], v: &[f32]| {
            let y = product(m, K, N, &x, |l, j| w[j * K + l]);
            let z: Vec<f64> = product(m, K, N, &x, |l, j| v[l * N + j])
                .iter()
                .enumerate()
                .map(|(e, z)| z + b[e % N] as f64)
                .collect();
            let u = product(m, K, NC, &x, |l, j| c[l * NC + j]);
            [y, z, u]
        };
        let check = |out: &[Vec<f32>], w: &[f32], v: &[f32], what: &str| {
            for (i, (g, e)) in out.iter().zip(want(w, v)).enumerate() {
                close(g, &e, &format!("{what}: output {i}"));
            }
        };
        let first = outputs(&loaded.run("main", &args).expect("runs"));
        check(&first, &w, &v, "first run");
        assert_eq!(
            packed_forms(&tensors[1]) + packed_forms(&tensors[2]),
            0,
            "packed on first sight"
        );
        for run in 0..3 {
            let again = outputs(&loaded.run("main", &args).expect("runs"));
            assert_eq!(again, first, "run {run}: the packed weights give the unpacked results");
        }
        let w_forms = usize::from(layout == Layout::Panels);
        assert_eq!(packed_forms(&tensors[1]), w_forms, "w is packed ({layout:?})");
        assert_eq!(packed_forms(&tensors[2]), 1, "v is packed");
        let entries = tensors[2].0.storage.derived.0.lock().expect("not poisoned");
        assert!(
            entries
                .iter()
                .all(|e| e.key.layout == layout && e.packed.as_ref().is_none_or(|p| p.layout() == layout)),
            "v is kept as {layout:?}"
        );
        drop(entries);
        let constants = CONSTANTS.lock().expect("not poisoned");
        let kept = constants.as_ref().map_or(0, |t| {
            t.values()
                .filter(|(c, e)| c.strong_count() > 0 && e.iter().any(|e| e.key.n == NC && e.key.layout == layout))
                .count()
        });
        drop(constants);
        assert!(kept >= 1, "the constant is packed");

        // Written in place: the next runs use the new weights.
        let (w2, v2) = (values(N * K, 7), values(K * N, 8));
        tensors[1].assign(&array(&[N, K], w2.clone())).expect("assigned");
        tensors[2].assign(&array(&[K, N], v2.clone())).expect("assigned");
        for run in 0..3 {
            let out = outputs(&loaded.run("main", &args).expect("runs"));
            check(&out, &w2, &v2, &format!("run {run} after the writes"));
        }
        // A new tensor in place of `v`.
        let v3 = values(K * N, 9);
        let mut args3 = args.clone();
        args3[2] = Value::Tensor(Tensor::from_array(&array(&[K, N], v3.clone())));
        for run in 0..3 {
            let out = outputs(&loaded.run("main", &args3).expect("runs"));
            check(&out, &w2, &v3, &format!("run {run} with a new v"));
        }
        // And the old one again.
        let out = outputs(&loaded.run("main", &args).expect("runs"));
        check(&out, &w2, &v2, "the old v again");
    }
}
