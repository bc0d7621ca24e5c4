//! Helpers shared by the benchmarks (no criterion): medians of repeated runs and raw
//! wgpu pipelines and bind groups.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// The median of `v` (the upper one of an even count); `v` must not be empty.
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The median time of `reps` runs of `f` after `warmups` untimed runs.
pub fn median_time(warmups: usize, reps: usize, mut f: impl FnMut()) -> Duration {
    for _ in 0..warmups {
        f();
    }
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

/// A compute pipeline of the WGSL `source` (entry point `main`, layout derived from
/// the shader) built with raw wgpu, for the raw-dispatch baselines.
pub fn raw_pipeline(device: &wgpu::Device, source: &str) -> wgpu::ComputePipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    })
}

/// A bind group of `pipeline`'s group 0 with `buffers[i]` whole at binding `i`.
pub fn raw_bind_group(
    device: &wgpu::Device,
    pipeline: &wgpu::ComputePipeline,
    buffers: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    })
}
