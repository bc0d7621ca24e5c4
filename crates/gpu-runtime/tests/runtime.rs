//! End-to-end tests of the runtime on whatever adapter the machine has
//! (lavapipe in CI). Each test prints "skipped: no GPU adapter" and returns when
//! there is none.

mod common;

use std::sync::Arc;

use common::{runtime, runtime_with, Rng};
use relax_gpu_runtime::{bucket_size, Access, GpuError, GpuRuntime, KernelLayout, RuntimeOptions, STAGING_CHUNK};

const ADD_F32: &str = r#"
struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let i = g.x + g.y * nw.x * 256u;
    if (i < p.n) { c[i] = a[i] + b[i]; }
}
"#;

fn add_layout() -> KernelLayout {
    KernelLayout::new([Access::Read, Access::Read, Access::ReadWrite], 4)
}

/// Workgroup grid for `n` threads of 256, folded into y above the x limit.
fn grid(rt: &GpuRuntime, n: u32) -> [u32; 3] {
    let groups = n.div_ceil(256);
    let max = rt.limits().max_compute_workgroups_per_dimension;
    if groups <= max {
        [groups, 1, 1]
    } else {
        [max, groups.div_ceil(max), 1]
    }
}

#[test]
fn adapter_limits_and_features() {
    let Some(rt) = runtime() else { return };
    let info = rt.adapter_info();
    eprintln!("adapter: {info}; features {:?}", rt.features());
    assert!(!info.name.is_empty());
    assert_ne!(info.backend, wgpu::Backend::Noop);
    let l = rt.limits();
    let d = wgpu::Limits::default();
    // The device got the adapter's limits, never less than wgpu's portable defaults.
    assert!(l.max_storage_buffers_per_shader_stage >= d.max_storage_buffers_per_shader_stage);
    assert!(l.max_storage_buffer_binding_size >= d.max_storage_buffer_binding_size);
    assert!(l.max_compute_workgroup_storage_size >= d.max_compute_workgroup_storage_size);
    assert!(l.max_compute_invocations_per_workgroup >= d.max_compute_invocations_per_workgroup);
    assert!(l.max_compute_workgroups_per_dimension >= d.max_compute_workgroups_per_dimension);
    assert_eq!(rt.max_binding_bytes(), l.max_storage_buffer_binding_size);
    assert_eq!(rt.supports_f16(), rt.features().contains(wgpu::Features::SHADER_F16));
    // Adapter listing contains the chosen adapter.
    let all = GpuRuntime::list_adapters(wgpu::Backends::all());
    assert!(all.iter().any(|a| a.name == info.name), "{all:?}");
    if info.name.contains("llvmpipe") && info.backend == wgpu::Backend::Vulkan {
        // lavapipe: the real limits exceed wgpu's defaults and it has these features.
        assert!(l.max_storage_buffers_per_shader_stage > d.max_storage_buffers_per_shader_stage);
        assert!(rt.supports_f16() && rt.supports_i64() && rt.supports_f64());
        assert!(rt.supports_subgroups() && rt.supports_timestamps());
        assert!(info.is_software());
    }
}

#[test]
fn adapter_selection_by_name_and_index() {
    let Some(rt) = runtime() else { return };
    let name: String = rt.adapter_info().name.chars().take(4).collect();
    let by_name = GpuRuntime::new(RuntimeOptions {
        adapter: relax_gpu_runtime::AdapterSelector::NameContains(name.to_uppercase()),
        ..Default::default()
    })
    .expect("select by name");
    assert!(by_name
        .adapter_info()
        .name
        .to_uppercase()
        .contains(&name.to_uppercase()));
    let missing = GpuRuntime::new(RuntimeOptions {
        adapter: relax_gpu_runtime::AdapterSelector::NameContains("no-such-gpu-xyz".into()),
        ..Default::default()
    });
    match missing {
        Err(GpuError::AdapterNotFound { available, .. }) => assert!(!available.is_empty()),
        other => panic!("expected AdapterNotFound, got {other:?}"),
    }
    let bad_index = GpuRuntime::new(RuntimeOptions {
        adapter: relax_gpu_runtime::AdapterSelector::Index(999),
        ..Default::default()
    });
    assert!(matches!(bad_index, Err(GpuError::AdapterNotFound { .. })));
}

#[test]
fn upload_readback_roundtrip_exact() {
    let Some(rt) = runtime() else { return };
    let mut rng = Rng::new(1);
    let big = STAGING_CHUNK as usize * 2 + 12_345; // crosses staging chunks, odd tail
    for n in [0usize, 1, 3, 4, 255, 256, 1000, (1 << 20) + 3, big] {
        let data = rng.bytes(n);
        let buf = rt.upload(&data).unwrap();
        assert_eq!(buf.len(), n as u64);
        assert_eq!(buf.capacity(), bucket_size(n as u64));
        let back = rt.read(&buf).unwrap();
        assert!(back == data, "round trip of {n} bytes differs");
    }
    // Partial write and read at offsets.
    let base = rng.bytes(4096);
    let buf = rt.upload(&base).unwrap();
    let patch = rng.bytes(100);
    rt.write(&buf, 1000, &patch).unwrap();
    let mut expect = base.clone();
    expect[1000..1100].copy_from_slice(&patch);
    assert_eq!(rt.read(&buf).unwrap(), expect);
    assert_eq!(rt.read_range(&buf, 996, 108).unwrap(), expect[996..1104]);
    // Typed helpers.
    let v: Vec<u32> = (0..777u32).map(|i| i.wrapping_mul(2654435761)).collect();
    let b = rt.upload_pod(&v).unwrap();
    assert_eq!(rt.read_pod::<u32>(&b).unwrap(), v);
    rt.write_pod(&b, 8, &[7u32, 9]).unwrap();
    let mut host = vec![0u8; 12];
    rt.read_into(&b, 4, &mut host).unwrap();
    assert_eq!(
        host,
        [v[1].to_le_bytes(), 7u32.to_le_bytes(), 9u32.to_le_bytes()].concat()
    );
    // Bad ranges are errors, not panics.
    assert!(matches!(
        rt.write(&buf, 2, &[1, 2, 3, 4]),
        Err(GpuError::InvalidArgument(_))
    ));
    assert!(matches!(
        rt.write(&buf, 4092, &[0; 8]),
        Err(GpuError::InvalidArgument(_))
    ));
    assert!(matches!(rt.write(&buf, 0, &[0; 3]), Err(GpuError::InvalidArgument(_))));
    assert!(matches!(
        rt.read_range(&buf, 4000, 100),
        Err(GpuError::InvalidArgument(_))
    ));
    assert!(matches!(
        rt.read_pod::<u64>(&rt.upload(&[0; 12]).unwrap()),
        Err(GpuError::InvalidArgument(_))
    ));
    let s = rt.stats();
    assert!(
        s.bytes_uploaded >= big as u64 && s.bytes_downloaded >= big as u64,
        "{s:?}"
    );
}

#[test]
fn add_kernel_1m_f32_matches_cpu() {
    let Some(rt) = runtime() else { return };
    let n = 1usize << 20;
    let mut rng = Rng::new(2);
    let a: Vec<f32> = (0..n).map(|_| rng.f32() * 1000.0).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let da = rt.upload_pod(&a).unwrap();
    let db = rt.upload_pod(&b).unwrap();
    let dc = rt.alloc((n * 4) as u64).unwrap();
    let k = rt.create_kernel(ADD_F32, "main", &add_layout()).unwrap();
    rt.dispatch(&k, &[&da, &db, &dc], &(n as u32).to_le_bytes(), grid(&rt, n as u32))
        .unwrap();
    let c: Vec<f32> = rt.read_pod(&dc).unwrap();
    for i in 0..n {
        // IEEE f32 addition is correctly rounded on both sides: bit-exact.
        assert_eq!(c[i].to_bits(), (a[i] + b[i]).to_bits(), "element {i}");
    }
}

#[test]
fn integer_kernel_exact() {
    let Some(rt) = runtime() else { return };
    let src = r#"
@group(0) @binding(0) var<storage, read> a: array<i32>;
@group(0) @binding(1) var<storage, read> b: array<i32>;
@group(0) @binding(2) var<storage, read_write> c: array<i32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    if (i < arrayLength(&c)) {
        let x = a[i];
        let y = b[i];
        c[i] = (x * y + (x >> 3u)) ^ (y & 0x7fff) - select(0, x / y, y != 0);
    }
}
"#;
    let layout = KernelLayout::new([Access::Read, Access::Read, Access::ReadWrite], 0);
    let n = 100_003usize; // not a multiple of the workgroup size
    let mut rng = Rng::new(3);
    let a: Vec<i32> = (0..n).map(|_| rng.i32()).collect();
    let b: Vec<i32> = (0..n)
        .map(|i| if i % 7 == 0 { 0 } else { rng.i32() >> (i % 20) })
        .collect();
    let k = rt.create_kernel(src, "main", &layout).unwrap();
    let (da, db) = (rt.upload_pod(&a).unwrap(), rt.upload_pod(&b).unwrap());
    let dc = rt.alloc((n * 4) as u64).unwrap();
    rt.dispatch(&k, &[&da, &db, &dc], &[], [(n as u32).div_ceil(64), 1, 1])
        .unwrap();
    let c: Vec<i32> = rt.read_pod(&dc).unwrap();
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        // WGSL: wrapping mul/sub, arithmetic shift, truncating division, MIN/-1 == MIN.
        let div = if y != 0 { x.wrapping_div(y) } else { 0 };
        let expect = (x.wrapping_mul(y).wrapping_add(x >> 3)) ^ ((y & 0x7fff).wrapping_sub(div));
        assert_eq!(c[i], expect, "element {i}: a={x} b={y}");
    }
}

#[test]
fn uniform_params_per_dispatch_in_one_batch() {
    let Some(rt) = runtime() else { return };
    let src = r#"
struct Params { n: u32, scale: f32, offset: f32, shift: i32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < p.n) { y[g.x] = x[g.x] * p.scale + p.offset + f32(p.shift); }
}
"#;
    let layout = KernelLayout::new([Access::Read, Access::ReadWrite], 16);
    let k = rt.create_kernel(src, "main", &layout).unwrap();
    let n = 1000u32;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let dx = rt.upload_pod(&x).unwrap();
    let params = [(2.0f32, 1.0f32, 0i32), (-1.0, 0.25, 3), (0.5, -8.0, -2)];
    let outs: Vec<_> = params.iter().map(|_| rt.alloc(n as u64 * 4).unwrap()).collect();
    let mut batch = rt.batch();
    for (i, (scale, offset, shift)) in params.iter().enumerate() {
        let mut u = Vec::new();
        u.extend_from_slice(&n.to_le_bytes());
        u.extend_from_slice(&scale.to_le_bytes());
        u.extend_from_slice(&offset.to_le_bytes());
        u.extend_from_slice(&shift.to_le_bytes());
        batch
            .dispatch(&k, &[&dx, &outs[i]], &u, [n.div_ceil(64), 1, 1])
            .unwrap();
    }
    assert_eq!(batch.len(), 3);
    batch.submit().unwrap();
    for (i, (scale, offset, shift)) in params.iter().enumerate() {
        let y: Vec<f32> = rt.read_pod(&outs[i]).unwrap();
        for j in 0..n as usize {
            assert_eq!(y[j], x[j] * scale + offset + *shift as f32, "dispatch {i} element {j}");
        }
    }
    // A shorter parameter block is zero-padded: n = 0 -> nothing written.
    let out = rt.alloc_zeroed(n as u64 * 4).unwrap();
    rt.dispatch(&k, &[&dx, &out], &[], [n.div_ceil(64), 1, 1]).unwrap();
    assert!(rt.read_pod::<f32>(&out).unwrap().iter().all(|&v| v == 0.0));
    // Too long a block is an error.
    assert!(matches!(
        rt.dispatch(&k, &[&dx, &out], &[0; 20], [1, 1, 1]),
        Err(GpuError::InvalidArgument(_))
    ));
}

#[test]
fn pool_reuses_buckets() {
    let Some(rt) = runtime() else { return };
    let s0 = rt.stats();
    let a = rt.alloc(1000).unwrap();
    let id = a.id();
    assert_eq!(a.capacity(), 1024);
    let s1 = rt.stats();
    assert_eq!(s1.buffer_creations, s0.buffer_creations + 1);
    assert_eq!(s1.live_buffers, 1);
    assert_eq!(s1.live_bytes, 1024);
    drop(a);
    let s2 = rt.stats();
    assert_eq!((s2.live_buffers, s2.free_buffers, s2.allocated_bytes), (0, 1, 1024));
    // 900 bytes fall in the same 1024 bucket: served from the pool.
    let b = rt.alloc(900).unwrap();
    assert_eq!(b.id(), id);
    let s3 = rt.stats();
    assert_eq!(s3.pool_reuse_hits, s2.pool_reuse_hits + 1);
    assert_eq!(s3.buffer_creations, s1.buffer_creations);
    // A different bucket creates a new buffer.
    let c = rt.alloc(2000).unwrap();
    assert_ne!(c.id(), id);
    assert_eq!(rt.stats().buffer_creations, s1.buffer_creations + 1);
    // Reused memory can be zeroed explicitly.
    drop(b);
    let w = rt.upload(&[0xAB; 1000]).unwrap();
    drop(w);
    let z = rt.alloc_zeroed(1000).unwrap();
    assert_eq!(z.id(), id);
    assert!(rt.read(&z).unwrap().iter().all(|&v| v == 0));
    drop((c, z));
    rt.trim();
    let s4 = rt.stats();
    assert_eq!((s4.allocated_bytes, s4.free_buffers), (0, 0));
    assert!(s4.pool_evictions >= 2);
}

#[test]
fn pipeline_and_bind_group_caches() {
    let Some(rt) = runtime() else { return };
    let k1 = rt.create_kernel(ADD_F32, "main", &add_layout()).unwrap();
    let k2 = rt.create_kernel(ADD_F32, "main", &add_layout()).unwrap();
    assert!(Arc::ptr_eq(&k1, &k2));
    let s = rt.stats();
    assert_eq!((s.kernels_compiled, s.kernel_cache_hits), (1, 1));
    // Same source, other layout: compiled again.
    let other = KernelLayout::new([Access::Read, Access::Read, Access::ReadWrite], 8);
    let k3 = rt.create_kernel(ADD_F32, "main", &other).unwrap();
    assert!(!Arc::ptr_eq(&k1, &k3));
    assert_eq!(rt.stats().kernels_compiled, 2);
    assert_eq!(rt.cached_kernels(), 2);

    let a = rt.upload_pod(&[1.0f32; 64]).unwrap();
    let b = rt.upload_pod(&[2.0f32; 64]).unwrap();
    let c = rt.alloc(256).unwrap();
    for _ in 0..3 {
        rt.dispatch(&k1, &[&a, &b, &c], &64u32.to_le_bytes(), [1, 1, 1])
            .unwrap();
    }
    assert_eq!(rt.read_pod::<f32>(&c).unwrap(), vec![3.0f32; 64]);
    let s = rt.stats();
    assert_eq!(s.bind_groups_created, 1, "{s:?}");
    assert_eq!(s.bind_group_cache_hits, 2, "{s:?}");
    assert_eq!(s.dispatches, 3);
    // Other buffers -> new bind group.
    rt.dispatch(&k1, &[&b, &a, &c], &64u32.to_le_bytes(), [1, 1, 1])
        .unwrap();
    assert_eq!(rt.stats().bind_groups_created, 2);
}

#[test]
fn buffer_to_buffer_copy() {
    let Some(rt) = runtime() else { return };
    let mut rng = Rng::new(4);
    let src_data = rng.bytes(10_000);
    let src = rt.upload(&src_data).unwrap();
    let dst = rt.alloc_zeroed(8_000).unwrap();
    rt.copy(&src, 400, &dst, 1000, 4000).unwrap();
    let mut expect = vec![0u8; 8000];
    expect[1000..5000].copy_from_slice(&src_data[400..4400]);
    assert_eq!(rt.read(&dst).unwrap(), expect);
    let dup = rt.duplicate(&src).unwrap();
    assert_eq!(rt.read(&dup).unwrap(), src_data);
    // Odd length copies must end both buffers.
    let odd_src = rt.upload(&[1, 2, 3, 4, 5, 6, 7]).unwrap();
    let odd_dst = rt.alloc(7).unwrap();
    rt.copy(&odd_src, 0, &odd_dst, 0, 7).unwrap();
    assert_eq!(rt.read(&odd_dst).unwrap(), vec![1, 2, 3, 4, 5, 6, 7]);
    assert!(matches!(
        rt.copy(&src, 0, &src, 4, 4),
        Err(GpuError::InvalidArgument(_))
    ));
    assert!(matches!(
        rt.copy(&src, 0, &dst, 7996, 8),
        Err(GpuError::InvalidArgument(_))
    ));
    assert!(matches!(
        rt.copy(&src, 2, &dst, 0, 8),
        Err(GpuError::InvalidArgument(_))
    ));
    assert!(rt.stats().bytes_copied >= 4000 + 10_000 + 7);
}

/// Options with bindings of at most `bytes`.
fn binding_cap(bytes: u64) -> RuntimeOptions {
    RuntimeOptions {
        max_binding_bytes: Some(bytes),
        ..Default::default()
    }
}

/// Options with a device memory limit of `bytes`.
fn memory_cap(bytes: u64) -> RuntimeOptions {
    RuntimeOptions {
        memory_limit_bytes: Some(bytes),
        ..Default::default()
    }
}

#[test]
fn binding_size_error_names_sizes() {
    let Some(rt) = runtime_with(binding_cap(1 << 20)) else {
        return;
    };
    assert_eq!(rt.max_binding_bytes(), 1 << 20);
    // A buffer over the binding size can be allocated, but not bound whole.
    let n = (1 << 18) + 1;
    let big = rt.alloc(n * 4).unwrap();
    let small = rt.alloc(16).unwrap();
    let k = rt.create_kernel(ADD_F32, "main", &add_layout()).unwrap();
    let err = rt
        .dispatch(&k, &[&big, &small, &small], &1u32.to_le_bytes(), [1, 1, 1])
        .unwrap_err();
    assert_eq!(
        err,
        GpuError::BindingTooLarge {
            requested: (1 << 20) + 4,
            limit: 1 << 20
        }
    );
    let msg = err.to_string();
    assert!(msg.contains("1048580") && msg.contains("1048576"), "{msg}");
    // Beyond max_buffer_size the allocation itself fails, before allocating.
    let Some(rt2) = runtime() else { return };
    let limit = rt2.limits().max_buffer_size;
    assert!(matches!(
        rt2.alloc(limit + 1),
        Err(GpuError::BufferTooLarge { requested, limit: l }) if requested == limit + 1 && l == limit
    ));
    assert_eq!(rt2.stats().allocated_bytes, 0);
}

#[test]
fn buffer_over_binding_size_binds_in_ranges() {
    let Some(rt) = runtime_with(binding_cap(1 << 20)) else {
        return;
    };
    let align = u64::from(rt.limits().min_storage_buffer_offset_alignment);
    // a: 1.5 MiB of floats; c[i] = a[off + i] + b[i] over the second half.
    let n = 3 << 17;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let a_buf = rt.upload_pod(&a).unwrap();
    let half = (n / 2) as u64 * 4;
    assert!(half.is_multiple_of(align));
    let m = n / 2;
    let b: Vec<f32> = (0..m).map(|i| 0.5 * i as f32).collect();
    let b_buf = rt.upload_pod(&b).unwrap();
    let c_buf = rt.alloc(m as u64 * 4).unwrap();
    let k = rt.create_kernel(ADD_F32, "main", &add_layout()).unwrap();
    let ranges = [
        relax_gpu_runtime::BufferRange {
            buf: &a_buf,
            offset: half,
            size: half,
        },
        relax_gpu_runtime::BufferRange::whole(&b_buf),
        relax_gpu_runtime::BufferRange::whole(&c_buf),
    ];
    let mut batch = rt.batch();
    batch
        .dispatch_ranges(&k, &ranges, &(m as u32).to_le_bytes(), grid(&rt, m as u32))
        .unwrap();
    batch.submit().unwrap();
    let c: Vec<f32> = bytemuck::cast_slice(&rt.read(&c_buf).unwrap()).to_vec();
    for i in (0..m).step_by(997) {
        assert_eq!(c[i], a[m + i] + b[i], "at {i}");
    }
    // A misaligned offset is an error, not a validation failure.
    let bad = [
        relax_gpu_runtime::BufferRange {
            buf: &a_buf,
            offset: 4,
            size: 64,
        },
        relax_gpu_runtime::BufferRange::whole(&b_buf),
        relax_gpu_runtime::BufferRange::whole(&c_buf),
    ];
    assert!(matches!(
        rt.batch().dispatch_ranges(&k, &bad, &[], [1, 1, 1]),
        Err(GpuError::InvalidArgument(_))
    ));
}

#[test]
fn simulated_memory_limit_gives_oom() {
    let Some(rt) = runtime_with(memory_cap(1 << 20)) else {
        return;
    };
    let a = rt.alloc(512 << 10).unwrap();
    let b = rt.alloc(512 << 10).unwrap();
    match rt.alloc(1000) {
        Err(GpuError::OutOfMemory {
            requested,
            allocated,
            limit,
            ..
        }) => {
            assert_eq!((requested, allocated, limit), (1024, 1 << 20, Some(1 << 20)));
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    drop(a);
    // The freed 512 KiB buffer is reused for the same bucket...
    let c = rt.alloc(500 << 10).unwrap();
    assert_eq!(c.capacity(), 512 << 10);
    drop(c);
    // ... and evicted to make room for another bucket.
    let d = rt.alloc(300 << 10).unwrap();
    let s = rt.stats();
    assert!(s.pool_evictions >= 1, "{s:?}");
    assert!(s.allocated_bytes <= 1 << 20);
    drop((b, d));
    let err = rt.alloc((1 << 20) + 4).unwrap_err();
    assert!(err.to_string().contains("out of GPU memory"), "{err}");
    // Everything still works after the errors.
    let e = rt.upload(&[7u8; 64]).unwrap();
    assert_eq!(rt.read(&e).unwrap(), vec![7u8; 64]);
}

#[test]
fn invalid_wgsl_is_an_error_with_naga_message() {
    let Some(rt) = runtime() else { return };
    let layout = KernelLayout::new([Access::ReadWrite], 0);
    // Parse error.
    let err = rt
        .create_kernel("@compute @workgroup_size(1) fn main() { let x = ; }", "main", &layout)
        .unwrap_err();
    match &err {
        GpuError::ShaderRejected { entry_point, message } => {
            assert_eq!(entry_point, "main");
            assert!(message.contains("expected"), "{message}");
        }
        other => panic!("expected ShaderRejected, got {other:?}"),
    }
    // Validation (type) error.
    let bad_type = r#"
@group(0) @binding(0) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(1) fn main() { y[0] = 1.5; }
"#;
    match rt.create_kernel(bad_type, "main", &layout) {
        Err(GpuError::ShaderRejected { message, .. }) => {
            eprintln!("naga says: {message}");
            assert!(!message.is_empty());
        }
        other => panic!("expected ShaderRejected, got {other:?}"),
    }
    let good = r#"
@group(0) @binding(0) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(1) fn main() { y[0] = 1u; }
"#;
    // Missing entry point.
    assert!(matches!(
        rt.create_kernel(good, "nope", &layout),
        Err(GpuError::PipelineRejected { .. })
    ));
    // Binding declared read_write in WGSL but read-only in the layout.
    assert!(matches!(
        rt.create_kernel(good, "main", &KernelLayout::new([Access::Read], 0)),
        Err(GpuError::PipelineRejected { .. })
    ));
    // Failed compiles are not cached; the runtime keeps working.
    assert_eq!(rt.cached_kernels(), 0);
    let k = rt.create_kernel(good, "main", &layout).unwrap();
    let y = rt.alloc_zeroed(4).unwrap();
    rt.dispatch(&k, &[&y], &[], [1, 1, 1]).unwrap();
    assert_eq!(rt.read_pod::<u32>(&y).unwrap(), vec![1]);
    assert_eq!(rt.take_uncaptured_error(), None);
    assert_eq!(rt.stats().uncaptured_errors, 0);
}

#[test]
fn dispatch_argument_errors() {
    let Some(rt) = runtime() else { return };
    let k = rt.create_kernel(ADD_F32, "main", &add_layout()).unwrap();
    let a = rt.alloc(64).unwrap();
    let c = rt.alloc(64).unwrap();
    let n = 16u32.to_le_bytes();
    assert!(matches!(
        rt.dispatch(&k, &[&a, &c], &n, [1, 1, 1]),
        Err(GpuError::InvalidArgument(_))
    ));
    // The read_write output aliases an input.
    assert!(matches!(
        rt.dispatch(&k, &[&a, &a, &a], &n, [1, 1, 1]),
        Err(GpuError::InvalidArgument(_))
    ));
    // Aliasing two read-only inputs is fine.
    rt.dispatch(&k, &[&a, &a, &c], &n, [1, 1, 1]).unwrap();
    let too_many = rt.limits().max_compute_workgroups_per_dimension + 1;
    assert!(matches!(
        rt.dispatch(&k, &[&a, &a, &c], &n, [too_many, 1, 1]),
        Err(GpuError::TooManyWorkgroups { .. })
    ));
    // Buffers of another runtime are refused.
    let Some(other) = runtime() else { return };
    let foreign = other.alloc(64).unwrap();
    assert!(matches!(
        rt.dispatch(&k, &[&a, &a, &foreign], &n, [1, 1, 1]),
        Err(GpuError::InvalidArgument(_))
    ));
    assert!(matches!(rt.read(&foreign), Err(GpuError::InvalidArgument(_))));
    rt.synchronize().unwrap();
}

#[test]
fn concurrent_use_from_8_threads() {
    let Some(rt) = runtime() else { return };
    std::thread::scope(|scope| {
        for t in 0..8u64 {
            let rt = rt.clone();
            scope.spawn(move || {
                let mut rng = Rng::new(100 + t);
                for round in 0..5 {
                    let n = 4096 + (t as usize) * 100 + round * 7;
                    let a: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
                    let b: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
                    let k = rt.create_kernel(ADD_F32, "main", &add_layout()).unwrap();
                    let da = rt.upload_pod(&a).unwrap();
                    let db = rt.upload_pod(&b).unwrap();
                    let dc = rt.alloc((n * 4) as u64).unwrap();
                    let mut batch = rt.batch();
                    batch
                        .dispatch(
                            &k,
                            &[&da, &db, &dc],
                            &(n as u32).to_le_bytes(),
                            [(n as u32).div_ceil(256), 1, 1],
                        )
                        .unwrap();
                    batch.submit().unwrap();
                    let c: Vec<f32> = rt.read_pod(&dc).unwrap();
                    for i in 0..n {
                        assert_eq!(c[i], a[i] + b[i], "thread {t} round {round} element {i}");
                    }
                }
            });
        }
    });
    let s = rt.stats();
    assert_eq!(s.kernels_compiled, 1, "{s:?}");
    assert_eq!(s.kernel_cache_hits, 39);
    assert_eq!(s.dispatches, 40);
    assert_eq!(s.live_buffers, 0);
    assert_eq!(s.uncaptured_errors, 0);
}

#[test]
fn timing_reports_wall_and_gpu_time() {
    let Some(rt) = runtime() else { return };
    let k = rt.create_kernel(ADD_F32, "main", &add_layout()).unwrap();
    let n = 1u32 << 16;
    let a = rt.alloc(n as u64 * 4).unwrap();
    let c = rt.alloc(n as u64 * 4).unwrap();
    let d = rt.alloc(n as u64 * 4).unwrap();
    let mut batch = rt.batch();
    batch
        .dispatch(&k, &[&a, &a, &c], &n.to_le_bytes(), [n / 256, 1, 1])
        .unwrap();
    batch.copy(&c, 0, &d, 0, n as u64 * 4).unwrap();
    batch
        .dispatch(&k, &[&c, &d, &a], &n.to_le_bytes(), [n / 256, 1, 1])
        .unwrap();
    let t = batch.submit_timed().unwrap();
    eprintln!("timing: {t:?}");
    assert!(t.wall.as_nanos() > 0);
    if rt.supports_timestamps() {
        let gpu = t.gpu.expect("GPU time with TIMESTAMP_QUERY");
        assert!(gpu.as_nanos() > 0 && gpu <= t.wall, "{t:?}");
    }
    // Without dispatches there is no GPU time.
    let mut batch = rt.batch();
    batch.clear(&d).unwrap();
    assert_eq!(batch.submit_timed().unwrap().gpu, None);
    assert!(rt.read_pod::<f32>(&d).unwrap().iter().all(|&v| v == 0.0));
}

#[test]
fn f16_kernel_when_supported() {
    let Some(rt) = runtime() else { return };
    if !rt.supports_f16() {
        eprintln!("skipped: adapter lacks SHADER_F16");
        return;
    }
    let src = r#"
enable f16;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&y)) { y[g.x] = f32(f16(x[g.x]) * 2.0h); }
}
"#;
    let k = rt
        .create_kernel(src, "main", &KernelLayout::new([Access::Read, Access::ReadWrite], 0))
        .unwrap();
    let x = [1.0f32, 0.1, 1000.0, -3.0, 65504.0];
    let dx = rt.upload_pod(&x).unwrap();
    let dy = rt.alloc(20).unwrap();
    rt.dispatch(&k, &[&dx, &dy], &[], [1, 1, 1]).unwrap();
    let y: Vec<f32> = rt.read_pod(&dy).unwrap();
    // 0.1 rounds to f16 1638/16384; 65504*2 overflows to +inf.
    assert_eq!(y, vec![2.0, 1638.0 / 8192.0, 2000.0, -6.0, f32::INFINITY]);
}

#[test]
fn device_loss_makes_calls_fail() {
    let Some(rt) = runtime() else { return };
    let buf = rt.upload(&[1u8; 16]).unwrap();
    rt.simulate_device_loss();
    assert!(rt.is_lost());
    assert!(matches!(rt.alloc(16), Err(GpuError::DeviceLost(_))));
    assert!(matches!(rt.read(&buf), Err(GpuError::DeviceLost(_))));
    assert!(matches!(rt.synchronize(), Err(GpuError::DeviceLost(_))));
    assert!(matches!(
        rt.create_kernel(ADD_F32, "main", &add_layout()),
        Err(GpuError::DeviceLost(_))
    ));
    drop(buf);
    assert_eq!(rt.stats().live_buffers, 0);
}

#[test]
fn dropping_a_buffer_after_submit_is_safe() {
    let Some(rt) = runtime() else { return };
    let k = rt.create_kernel(ADD_F32, "main", &add_layout()).unwrap();
    let n = 1u32 << 18;
    let mut outs = Vec::new();
    for round in 0..4 {
        let a = rt.upload_pod(&vec![round as f32; n as usize]).unwrap();
        let b = rt.upload_pod(&vec![1.0f32; n as usize]).unwrap();
        let c = rt.alloc(n as u64 * 4).unwrap();
        rt.dispatch(&k, &[&a, &b, &c], &n.to_le_bytes(), grid(&rt, n)).unwrap();
        let (a_id, b_id) = (a.id(), b.id());
        // Drop the inputs while the dispatch may still be running; the next
        // round's uploads reuse their buffers (queue order keeps this correct).
        drop((a, b));
        let again = rt.alloc(n as u64 * 4).unwrap();
        assert!(again.id() == a_id || again.id() == b_id);
        rt.write(&again, 0, &vec![0xFFu8; n as usize * 4]).unwrap();
        outs.push((round, c));
    }
    for (round, c) in outs {
        let v: Vec<f32> = rt.read_pod(&c).unwrap();
        assert!(v.iter().all(|&x| x == round as f32 + 1.0), "round {round}: {}", v[0]);
    }
}

/// With no adapter for the requested backends the error says which drivers to install.
#[cfg(target_os = "linux")]
#[test]
fn no_adapter_error_names_drivers() {
    let r = GpuRuntime::new(RuntimeOptions {
        backends: wgpu::Backends::METAL | wgpu::Backends::DX12,
        ..Default::default()
    });
    match r {
        Err(e @ GpuError::NoAdapter { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("Vulkan") && msg.contains("mesa-vulkan-drivers libvulkan1"),
                "{msg}"
            );
        }
        other => panic!("expected NoAdapter on Linux with only Metal/DX12 enabled, got {other:?}"),
    }
}

/// `Batch::submit` holds its work back: a chain of dispatches, each with its own
/// parameter block (how many elements it adds), reaches the queue in one submission
/// together with the read that needs it, in the order recorded; a write made after
/// them is ordered after them too.
#[test]
fn held_batches_go_in_one_submission_in_order() {
    let Some(rt) = runtime() else { return };
    let k = rt.create_kernel(ADD_F32, "main", &add_layout()).unwrap();
    let ones = rt.upload_pod(&[1.0f32; 64]).unwrap();
    let (x, y) = (rt.upload_pod(&[0.0f32; 64]).unwrap(), rt.alloc(256).unwrap());
    let before = rt.stats().submits;
    // x -> y -> x -> ... : step i adds 1 to the first 8*(i+1) elements (the rest
    // keeps the buffer's previous value, so wrong order or parameters show).
    for i in 0..10u32 {
        let (src, dst) = if i % 2 == 0 { (&x, &y) } else { (&y, &x) };
        if i == 0 {
            rt.copy(&x, 0, &y, 0, 256).unwrap();
        }
        let mut b = rt.batch();
        b.dispatch(&k, &[src, &ones, dst], &(8 * (i + 1)).to_le_bytes(), [1, 1, 1])
            .unwrap();
        b.submit().unwrap();
    }
    assert_eq!(rt.stats().submits, before, "nothing submitted before it is needed");
    // A write after the held work: x's new contents must not reach the dispatches above.
    rt.write_pod(&ones, 0, &[100.0f32; 64]).unwrap();
    assert_eq!(
        rt.stats().submits,
        before + 1,
        "held work and the write in one submission"
    );
    // Ten steps alternate x->y, y->x; the last (i = 9) wrote x. Element j got +1 from
    // each step i with 8*(i+1) > j, but only along the chain it belongs to.
    let got = rt.read_pod::<f32>(&x).unwrap();
    let mut want_x = [0.0f32; 64];
    let mut want_y = [0.0f32; 64];
    for i in 0..10usize {
        let (src, dst) = if i % 2 == 0 {
            (want_x, &mut want_y)
        } else {
            (want_y, &mut want_x)
        };
        for j in 0..64 {
            if j < 8 * (i + 1) {
                dst[j] = src[j] + 1.0;
            }
        }
    }
    assert_eq!(got, want_x.to_vec());
    assert_eq!(rt.read_pod::<f32>(&ones).unwrap(), vec![100.0f32; 64]);
}

/// At most `MAX_PENDING_BATCHES` batches are held; `flush` submits the rest.
#[test]
fn held_batches_are_bounded_and_flushed() {
    let Some(rt) = runtime() else { return };
    let k = rt.create_kernel(ADD_F32, "main", &add_layout()).unwrap();
    let (a, b) = (
        rt.upload_pod(&[1.0f32; 64]).unwrap(),
        rt.upload_pod(&[2.0f32; 64]).unwrap(),
    );
    let c = rt.alloc(256).unwrap();
    let before = rt.stats().submits;
    for _ in 0..relax_gpu_runtime::MAX_PENDING_BATCHES + 3 {
        rt.dispatch(&k, &[&a, &b, &c], &64u32.to_le_bytes(), [1, 1, 1]).unwrap();
    }
    assert_eq!(
        rt.stats().submits,
        before + 1,
        "one submission when the bound is reached"
    );
    rt.flush().unwrap();
    assert_eq!(rt.stats().submits, before + 2, "flush submits the 3 held batches");
    rt.flush().unwrap();
    assert_eq!(rt.stats().submits, before + 2, "nothing held: nothing submitted");
    assert_eq!(rt.read_pod::<f32>(&c).unwrap(), vec![3.0f32; 64]);
    let s = rt.stats();
    assert_eq!(s.bind_groups_created, 1, "one uniform arena: one bind group: {s:?}");
}

/// The reference measurements run and give plausible figures: the copy bandwidth is
/// positive and finite, the hand matmul's too, and bad sizes are errors.
#[test]
fn reference_measurements() {
    let Some(rt) = runtime() else { return };
    let bw = relax_gpu_runtime::reference::copy_bandwidth(&rt, 1 << 20, 2).expect("copy bandwidth");
    assert!(bw.is_finite() && bw > 1e6, "{bw} bytes/s");
    assert!(relax_gpu_runtime::reference::copy_bandwidth(&rt, 3, 1).is_err());
    let g = relax_gpu_runtime::reference::hand_matmul_gflops(&rt, 64, 1).expect("hand matmul");
    assert!(g.is_finite() && g > 0.0, "{g} GFLOP/s");
    assert!(relax_gpu_runtime::reference::hand_matmul_gflops(&rt, 65, 1).is_err());
}
