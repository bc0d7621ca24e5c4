//! The GEMM schedules as a hardware GPU gets them (`ScheduleOptions::for_adapter` on a
//! non-software adapter: register-tile loops unrolled, smaller tiles for GEMMs too
//! small to fill the device), run on whatever adapter there is and checked against
//! the host.

mod common;

use common::*;
use relax_jit::ScheduleOptions;

/// The options `for_adapter` gives a hardware adapter, on top of `rt`'s own.
fn hardware(rt: &relax_gpu_runtime::GpuRuntime) -> ScheduleOptions {
    ScheduleOptions {
        unroll_tiles: true,
        min_gemm_groups: relax_jit::HARDWARE_MIN_GEMM_GROUPS,
        parallel_groups: 0,
        ..ScheduleOptions::for_adapter(rt.adapter_info())
    }
}

/// The register tile (rows x cols per thread) of the first kernel, from the size of
/// its accumulator array, and whether any loop over the tile's rows is left.
fn tile_of(wgsl: &str) -> (usize, bool) {
    let acc = wgsl
        .lines()
        .find_map(|l| {
            let at = l.find("_acc: array<f32, ")?;
            l[at + 17..].split('>').next()?.trim().parse().ok()
        })
        .expect("an accumulator array");
    (acc, wgsl.contains("for (var ii_"))
}

/// Matmuls and convolutions of sizes that fill a GPU and of sizes that do not (a
/// linear layer over 128 tokens, 7x7 and 14x14 convolutions): the same values as the
/// host, with the tile shrunk only where the grid is small and no row loop left.
#[test]
fn small_gemms_take_smaller_unrolled_tiles_and_match_the_host() {
    let Some(rt) = shared_runtime() else { return };
    let opts = hardware(&rt);
    let gpu = jit_with(rt.clone(), opts);
    let cases = [
        ("matmul 1024x64x2048", matmul_func(1024, 64, 2048), 64),
        ("matmul 512^3", matmul_func(512, 512, 512), 8),
        ("matmul 128x256x768", matmul_func(128, 256, 768), 2),
        ("matmul 40x72x24", matmul_func(40, 72, 24), 1),
        ("conv 7x7 3x3 64->96", conv_func(1, 64, 9, 96, 3, 1, 1), 1),
        ("conv 14x14 1x1 32->64", conv_func(1, 32, 14, 64, 1, 1, 1), 1),
    ];
    for (seed, (what, f, want_tile)) in cases.into_iter().enumerate() {
        let src = gpu.wgsl(&f).expect("emits");
        let (tile, row_loop) = tile_of(&src.kernels[0].wgsl);
        assert_eq!(tile, want_tile, "{what}: register tile");
        assert!(!row_loop, "{what}: a loop over the tile's rows is left");
        assert_gpu_matches_host_on_random(&gpu, &f, 10 * seed as u64, what);
    }
    // A software adapter's options keep the 8x8 tiles and their row loops.
    let soft = ScheduleOptions::default();
    let src = jit_with(rt, soft).wgsl(&matmul_func(128, 256, 768)).expect("emits");
    assert_eq!(tile_of(&src.kernels[0].wgsl), (64, true));
}

/// A float16 matmul small enough to take the smallest tiles, unrolled: the GPU gives
/// the host's values (within float16 rounding of the sum).
#[test]
fn small_f16_gemm_with_hardware_options_matches_the_host() {
    use relax_ir::DataType;
    use relax_jit::{HostTensor, Jit, KernelArg};
    let Some(rt) = shared_runtime() else { return };
    let gpu = jit_with(rt.clone(), hardware(&rt));
    let f = legalized(
        r#"a: R.Tensor((40, 72), "float16"), b: R.Tensor((72, 24), "float16")"#,
        "y = R.matmul(a, b)",
    )
    .into_iter()
    .next()
    .expect("a PrimFunc");
    let f16 = DataType::FLOAT16;
    let inputs = [
        HostTensor::from_f64s(f16, &[40, 72], &rand_vec(40 * 72, 1, -1.0, 1.0)).expect("a"),
        HostTensor::from_f64s(f16, &[72, 24], &rand_vec(72 * 24, 2, -1.0, 1.0)).expect("b"),
    ];
    let run = |on_gpu: bool| {
        let mut ins = inputs.to_vec();
        let mut out = HostTensor::zeros(f16, &[40, 24]).expect("out");
        let mut args: Vec<KernelArg> = ins.iter_mut().map(KernelArg::from).collect();
        args.push(KernelArg::from(&mut out));
        if on_gpu {
            gpu.run_gpu(&f, &mut args).expect("gpu run");
        } else {
            Jit::new(None).run_host(&f, &mut args).expect("host run");
        }
        out.to_f64_vec()
    };
    assert_close(&run(true), &run(false), 1e-2, 1e-2, "f16 matmul 40x72x24");
}
