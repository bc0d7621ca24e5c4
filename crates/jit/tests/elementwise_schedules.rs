//! Elementwise kernels with several consecutive elements per thread (along the
//! innermost loop, with a guard when its extent is not a multiple) against the
//! host, and against the same kernels with one element per thread.

mod common;

use common::*;
use relax_ir::PrimFunc;
use relax_jit::Grid;
use relax_jit::{Jit, ScheduleOptions};

/// Options with `per` elements a thread whatever the adapter's worker count.
fn options(per: u32) -> ScheduleOptions {
    ScheduleOptions {
        elementwise_per_thread: per,
        parallel_groups: 1,
        ..ScheduleOptions::default()
    }
}

fn jit(per: u32) -> Option<Jit> {
    Some(jit_with(shared_runtime()?, options(per)))
}

/// The constant workgroup count of the single kernel of `f`.
fn workgroups(f: &PrimFunc, per: u32) -> i64 {
    let src = relax_jit::emit_program(f, &relax_jit::DeviceCaps::ALL, &options(per)).expect("emits");
    assert_eq!(src.kernels.len(), 1);
    match &src.kernels[0].grid {
        Grid::Linear(e) => e.as_int().expect("constant grid"),
        Grid::Dims(_) => panic!("linear grid expected"),
    }
}

/// (Relax parameters, body, whether several elements a thread apply); the input
/// and output shapes and dtypes are those of the legalized PrimFunc's buffers.
type Case = (&'static str, &'static str, bool);

const CASES: [Case; 5] = [
    // Innermost 101: a tail of one element in each row.
    (
        r#"x: R.Tensor((3, 37, 101), "float32"), b: R.Tensor((37, 1), "float32")"#,
        "y = R.add(x, b)",
        true,
    ),
    // Transposed reads, innermost 67.
    (
        r#"x: R.Tensor((67, 129), "float32")"#,
        "y = R.permute_dims(x, axes=[1, 0])",
        true,
    ),
    // Innermost 24: no tail.
    (
        r#"x: R.Tensor((2, 50, 9, 24), "float32")"#,
        "y = R.concat((x, x), axis=1)",
        true,
    ),
    // A cast to int32 (saturating), innermost 333.
    (
        r#"x: R.Tensor((41, 333), "float32")"#,
        r#"y = R.astype(x, "int32")"#,
        true,
    ),
    // Innermost 6 (< 8 and not a multiple of 4): one element a thread.
    (r#"x: R.Tensor((2001, 6), "float32")"#, "y = R.nn.relu(x)", false),
];

#[test]
fn several_elements_per_thread_match_the_host() {
    let gpus: Vec<Jit> = [4, 1].into_iter().filter_map(jit).collect();
    for (n, (params, body, applies)) in CASES.into_iter().enumerate() {
        let fs = legalized(params, body);
        assert_eq!(fs.len(), 1, "{body}");
        let f = &fs[0];
        let (w4, w1) = (workgroups(f, 4), workgroups(f, 1));
        let naive = ScheduleOptions {
            naive: true,
            ..options(4)
        };
        let src = relax_jit::emit_program(f, &relax_jit::DeviceCaps::ALL, &naive).expect("emits");
        assert!(
            matches!(&src.kernels[0].grid, Grid::Linear(e) if e.as_int() == Some(w1)),
            "{body}: naive"
        );
        if applies {
            assert!(w4 * 3 <= w1, "{body}: {w4} workgroups with 4 a thread, {w1} with 1");
        } else {
            assert_eq!(w4, w1, "{body}");
        }
        let mut buffers = buffer_params(f);
        let (out_dt, out_shape) = buffers.pop().expect("an output buffer");
        let ins: Vec<Vec<i64>> = buffers.into_iter().map(|(_, s)| s).collect();
        let inputs = random_f32_inputs(&ins, |i| 5 + (n * 3 + i) as u64, -50.0, 50.0);
        let run = |gpu: Option<&Jit>| run_output(gpu, f, &inputs, out_dt, &out_shape);
        let host = run(None);
        for g in &gpus {
            assert_close(&run(Some(g)), &host, 0.0, 0.0, body);
        }
    }
}
