// Hand-written reference matmul for the benchmark: C = A @ B for row-major
// n x n f32 matrices, n a multiple of 64. Each invocation computes an 8x8 register
// tile of C (8 rows x two vec4 columns, fully unrolled, B and C read as vec4); a
// workgroup of 8x8 invocations covers a 64x64 block. Dispatch (n / 64, n / 64, 1)
// workgroups.
struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> c: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n = p.n;
    let n4 = n / 4u;
    let row0 = wid.y * 64u + lid.y * 8u;
    let c4 = wid.x * 16u + lid.x * 2u;
    var r0a = vec4<f32>(0.0);
    var r0b = vec4<f32>(0.0);
    var r1a = vec4<f32>(0.0);
    var r1b = vec4<f32>(0.0);
    var r2a = vec4<f32>(0.0);
    var r2b = vec4<f32>(0.0);
    var r3a = vec4<f32>(0.0);
    var r3b = vec4<f32>(0.0);
    var r4a = vec4<f32>(0.0);
    var r4b = vec4<f32>(0.0);
    var r5a = vec4<f32>(0.0);
    var r5b = vec4<f32>(0.0);
    var r6a = vec4<f32>(0.0);
    var r6b = vec4<f32>(0.0);
    var r7a = vec4<f32>(0.0);
    var r7b = vec4<f32>(0.0);
    for (var k = 0u; k < n; k++) {
        let b0 = b[k * n4 + c4];
        let b1 = b[k * n4 + c4 + 1u];
        let base = row0 * n + k;
        let a0 = vec4<f32>(a[base + 0u * n]);
        r0a = fma(a0, b0, r0a);
        r0b = fma(a0, b1, r0b);
        let a1 = vec4<f32>(a[base + 1u * n]);
        r1a = fma(a1, b0, r1a);
        r1b = fma(a1, b1, r1b);
        let a2 = vec4<f32>(a[base + 2u * n]);
        r2a = fma(a2, b0, r2a);
        r2b = fma(a2, b1, r2b);
        let a3 = vec4<f32>(a[base + 3u * n]);
        r3a = fma(a3, b0, r3a);
        r3b = fma(a3, b1, r3b);
        let a4 = vec4<f32>(a[base + 4u * n]);
        r4a = fma(a4, b0, r4a);
        r4b = fma(a4, b1, r4b);
        let a5 = vec4<f32>(a[base + 5u * n]);
        r5a = fma(a5, b0, r5a);
        r5b = fma(a5, b1, r5b);
        let a6 = vec4<f32>(a[base + 6u * n]);
        r6a = fma(a6, b0, r6a);
        r6b = fma(a6, b1, r6b);
        let a7 = vec4<f32>(a[base + 7u * n]);
        r7a = fma(a7, b0, r7a);
        r7b = fma(a7, b1, r7b);
    }
    c[(row0 + 0u) * n4 + c4] = r0a;
    c[(row0 + 0u) * n4 + c4 + 1u] = r0b;
    c[(row0 + 1u) * n4 + c4] = r1a;
    c[(row0 + 1u) * n4 + c4 + 1u] = r1b;
    c[(row0 + 2u) * n4 + c4] = r2a;
    c[(row0 + 2u) * n4 + c4 + 1u] = r2b;
    c[(row0 + 3u) * n4 + c4] = r3a;
    c[(row0 + 3u) * n4 + c4 + 1u] = r3b;
    c[(row0 + 4u) * n4 + c4] = r4a;
    c[(row0 + 4u) * n4 + c4 + 1u] = r4b;
    c[(row0 + 5u) * n4 + c4] = r5a;
    c[(row0 + 5u) * n4 + c4 + 1u] = r5b;
    c[(row0 + 6u) * n4 + c4] = r6a;
    c[(row0 + 6u) * n4 + c4 + 1u] = r6b;
    c[(row0 + 7u) * n4 + c4] = r7a;
    c[(row0 + 7u) * n4 + c4 + 1u] = r7b;
}
