//! Symbolic shapes through legalization: variables used only inside an expression
//! of a kernel's shapes are passed as `tir_vars`; ranked tensors of unknown shape
//! and unprovable broadcasts get symbolic dimensions (`bind-symbolic-shapes`);
//! lenient mode runs a pure packed builtin written with `R.call_packed` inside a
//! dataflow block. Each runs on the host and, when an adapter exists, the GPU, for
//! several lengths with one loaded module, against values computed here.

mod common;

use common::text::{engines, f32_tensor, f32_values, parse};
use relax_engine::{DeviceChoice, Engine, EngineConfig, Value};

fn close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-4 + 1e-4 * w.abs(),
            "{what}: element {i}: {g} vs {w}"
        );
    }
}

/// `exp(reshape(x, [n * 17, 64]) @ w)`: `n` reaches the matmul and exp kernels only
/// through `n * 17`.
const RESHAPE_MATMUL: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 17, 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            lv = R.reshape(x, R.shape([n * 17, 8]))
            lv1 = R.matmul(lv, w)
            gv = R.exp(lv1)
            R.output(gv)
        return gv
"#;

#[test]
fn variable_only_inside_a_shape_expression_is_passed_to_the_kernel() {
    let module = parse(RESHAPE_MATMUL);
    let w = f32_tensor(&[8, 8], |i| ((i % 7) as f32 - 3.0) / 16.0);
    let wv = f32_values(&w);
    for (dev, engine) in engines() {
        let loaded = engine.load(&module).unwrap_or_else(|e| panic!("{dev}: {e}"));
        for n in [1usize, 2, 5] {
            let x = f32_tensor(&[n, 17, 8], |i| (i % 11) as f32 / 11.0);
            let xv = f32_values(&x);
            let out = loaded
                .run("main", &[x, w.clone()])
                .unwrap_or_else(|e| panic!("{dev} n={n}: {e}"));
            let mut want = vec![0f32; n * 17 * 8];
            for r in 0..n * 17 {
                for c in 0..8 {
                    let s: f32 = (0..8).map(|k| xv[r * 8 + k] * wv[k * 8 + c]).sum();
                    want[r * 8 + c] = s.exp();
                }
            }
            close(&f32_values(&out), &want, &format!("{dev} n={n}"));
        }
    }
}

/// As `from_exported_program` writes BERT's embeddings with a symbolic length: the
/// position embedding has length `min(s, 4)`, so `add` cannot prove the broadcast and
/// its result is only `ndim=2`; `layer_norm`-like arithmetic follows on that.
const UNPROVABLE_BROADCAST: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("s", 3), dtype="float32"), pos: R.Tensor((4, 3), dtype="float32")):
        s = T.int64()
        with R.dataflow():
            p: R.Tensor((T.min(s, 4), 3), dtype="float32") = R.strided_slice(pos, (0,), (0,), (s,), (1,), assume_inbound=False)
            a: R.Tensor(dtype="float32", ndim=2) = R.add(x, p)
            b: R.Tensor(dtype="float32", ndim=2) = R.multiply(a, a)
            gv: R.Tensor(dtype="float32", ndim=2) = R.exp(b)
            R.output(gv)
        return gv
"#;

#[test]
fn unknown_shapes_and_unprovable_broadcasts_get_symbolic_dimensions() {
    let module = parse(UNPROVABLE_BROADCAST);
    let pos = f32_tensor(&[4, 3], |i| i as f32 / 24.0);
    let pv = f32_values(&pos);
    for (dev, engine) in engines() {
        let loaded = engine.load(&module).unwrap_or_else(|e| panic!("{dev}: {e}"));
        for s in [1usize, 3, 4] {
            let x = f32_tensor(&[s, 3], |i| (i as f32 - 2.0) / 10.0);
            let xv = f32_values(&x);
            let out = loaded
                .run("main", &[x, pos.clone()])
                .unwrap_or_else(|e| panic!("{dev} s={s}: {e}"));
            let want: Vec<f32> = (0..s * 3).map(|i| (xv[i] + pv[i]).powi(2).exp()).collect();
            close(&f32_values(&out), &want, &format!("{dev} s={s}"));
        }
        // s = 5: the slice has 4 rows, x has 5; the broadcast taken as equal is checked
        // at run time (an error, never a wrong result).
        let x = f32_tensor(&[5, 3], |_| 0.0);
        let err = loaded.run("main", &[x, pos.clone()]).expect_err("5 rows against 4");
        assert!(err.to_string().contains("match_cast"), "{dev}: {err}");
    }
}

const PACKED_IN_DATAFLOW: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((6,), dtype="float32"), s: R.Tensor((2,), dtype="int64")):
        a = T.int64()
        b = T.int64()
        with R.dataflow():
            sh: R.Shape(ndim=2) = R.call_packed("vm.builtin.tensor_to_shape", s, sinfo_args=(R.Shape(ndim=2),))
            sh1: R.Shape([a, b]) = R.match_cast(sh, R.Shape([a, b]))
            gv = R.reshape(x, R.shape([a, b]))
            R.output(gv)
        return gv
"#;

#[test]
fn lenient_mode_runs_a_pure_builtin_called_with_call_packed_in_a_dataflow_block() {
    let module = parse(PACKED_IN_DATAFLOW);
    let x = f32_tensor(&[6], |i| i as f32);
    let s: Value = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[2]), vec![3i64, 2])
        .unwrap()
        .into();
    // Strict (the default): rejected by the purity rule, as TVM's well-formedness check does.
    let err = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        ..EngineConfig::default()
    })
    .load(&module)
    .err()
    .expect("strict mode rejects the impure call");
    assert!(err.to_string().contains("purity"), "{err}");
    for device in [DeviceChoice::Cpu, DeviceChoice::Auto] {
        let engine = Engine::new(EngineConfig {
            device,
            lenient: true,
            ..EngineConfig::default()
        });
        let out = engine
            .run(&module, "main", &[x.clone(), s.clone()])
            .expect("lenient run");
        let t = out.as_tensor().expect("tensor");
        assert_eq!(t.shape(), &[3, 2]);
        assert_eq!(f32_values(&out), (0..6).map(|i| i as f32).collect::<Vec<_>>());
    }
    // A packed function not known to be pure stays an error in lenient mode.
    let other = PACKED_IN_DATAFLOW.replace("vm.builtin.tensor_to_shape", "my.unknown_func");
    let err = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        lenient: true,
        ..EngineConfig::default()
    })
    .load(&parse(&other))
    .err()
    .expect("unknown packed function stays impure");
    assert!(err.to_string().contains("purity"), "{err}");
}
