//! Micro-benchmarks (no criterion): submit+wait overhead of a tiny dispatch, raw
//! wgpu vs this crate, and upload/readback bandwidth. Prints medians.
//! Run: `cargo bench -p relax-gpu-runtime` (prints "skipped" without an adapter).

#[path = "common/bench.rs"]
mod bench;

use std::time::Duration;

use relax_gpu_runtime::{Access, GpuError, GpuRuntime, KernelLayout, RuntimeOptions};

const TINY: &str = r#"
struct Params { n: u32 }
@group(0) @binding(0) var<storage, read_write> y: array<u32>;
@group(0) @binding(1) var<uniform> p: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < p.n) { y[g.x] = y[g.x] + 1u; }
}
"#;

/// The median time of `n` runs of `f` after up to 10 warm-up runs.
fn time_n(n: usize, f: impl FnMut()) -> Duration {
    bench::median_time(n.min(10), n, f)
}

/// [`time_n`] of a fallible step: the time, or the first error.
fn try_time_n(n: usize, mut f: impl FnMut() -> Result<(), GpuError>) -> Result<Duration, GpuError> {
    let mut err = None;
    let d = time_n(n, || {
        if let Err(e) = f() {
            err.get_or_insert(e);
        }
    });
    err.map_or(Ok(d), Err)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() -> Result<(), GpuError> {
    let rt = match GpuRuntime::new(RuntimeOptions::default()) {
        Ok(rt) => rt,
        Err(e @ GpuError::NoAdapter { .. }) => {
            println!("skipped: no GPU adapter ({e})");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    println!("adapter: {}", rt.adapter_info());
    let iters = 300;

    // --- raw wgpu: one tiny dispatch, submit, wait ---------------------------------
    let device = rt.device();
    let queue = rt.queue();
    let raw_y = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 256,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let raw_u = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 16,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    queue.write_buffer(&raw_u, 0, &64u32.to_le_bytes());
    let pipeline = bench::raw_pipeline(device, TINY);
    let bg = bench::raw_bind_group(device, &pipeline, &[&raw_y, &raw_u]);
    let raw_dispatch = |count: usize| {
        let mut enc = device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bg, &[]);
            for _ in 0..count {
                pass.dispatch_workgroups(1, 1, 1);
            }
        }
        queue.submit([enc.finish()]);
        let _ = device.poll(wgpu::PollType::wait_indefinitely());
    };
    let raw = time_n(iters, || raw_dispatch(1));

    // --- the same through this crate ------------------------------------------------
    let k = rt.create_kernel(TINY, "main", &KernelLayout::new([Access::ReadWrite], 4))?;
    let y = rt.alloc_zeroed(256)?;
    let n = 64u32.to_le_bytes();
    let run = |count: usize| -> Result<(), GpuError> {
        let mut b = rt.batch();
        for _ in 0..count {
            b.dispatch(&k, &[&y], &n, [1, 1, 1])?;
        }
        b.submit_and_wait()
    };
    let api = try_time_n(iters, || run(1))?;
    println!(
        "submit+wait of one tiny dispatch: raw wgpu {:.1} us, relax-gpu-runtime {:.1} us (ratio {:.2})",
        us(raw),
        us(api),
        api.as_secs_f64() / raw.as_secs_f64()
    );

    // --- 100 dispatches in one submit ---------------------------------------------
    let raw100 = time_n(50, || raw_dispatch(100));
    let api100 = try_time_n(50, || run(100))?;
    println!(
        "100 dispatches in one submit: raw wgpu {:.1} us/dispatch, relax-gpu-runtime {:.1} us/dispatch (ratio {:.2})",
        us(raw100) / 100.0,
        us(api100) / 100.0,
        api100.as_secs_f64() / raw100.as_secs_f64()
    );
    let got: Vec<u32> = rt.read_pod(&y)?;
    if got.iter().any(|&v| v != got[0]) || got[0] == 0 {
        println!("warning: unexpected kernel results {:?}", &got[..4]);
    }

    // --- bandwidth ------------------------------------------------------------------
    let size = 64usize << 20;
    let data: Vec<u8> = (0..size).map(|i| (i * 31 % 251) as u8).collect();
    let buf = rt.alloc(size as u64)?;
    let gbs = |d: Duration| size as f64 / d.as_secs_f64() / 1e9;
    let up = try_time_n(10, || rt.write(&buf, 0, &data).and_then(|_| rt.synchronize()))?;
    let wb = time_n(10, || {
        queue.write_buffer(buf.raw(), 0, &data);
        queue.submit([]);
        let _ = device.poll(wgpu::PollType::wait_indefinitely());
    });
    let mut back = vec![0u8; size];
    let down = try_time_n(10, || rt.read_into(&buf, 0, &mut back))?;
    let down_vec = try_time_n(10, || {
        back = rt.read(&buf)?;
        Ok(())
    })?;
    assert!(back == data, "readback differs");
    println!(
        "64 MiB upload: staging {:.2} GB/s (raw queue.write_buffer {:.2} GB/s, ratio {:.2}); \
         readback into reused memory {:.2} GB/s, into a new Vec {:.2} GB/s",
        gbs(up),
        gbs(wb),
        wb.as_secs_f64() / up.as_secs_f64(),
        gbs(down),
        gbs(down_vec)
    );
    println!("stats: {:?}", rt.stats());
    Ok(())
}
