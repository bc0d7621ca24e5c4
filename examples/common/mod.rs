//! Shared pieces of the demo programs: engine construction with a GPU when one exists
//! (host fallback with a message otherwise) and small numeric helpers. Placement of
//! tensors and kernels on VDevices is the engine's: the demos only read its statistics.

#![allow(dead_code)]

use relax_wgpu::engine::{DeviceChoice, Engine, EngineConfig};
use relax_wgpu::ir::IRModule;

/// Parse a TVMScript module.
pub fn parse_module(source: &str) -> Result<IRModule, String> {
    relax_wgpu::ir::text::parse(source)
        .map(|p| p.into_module())
        .map_err(|d| format!("{d:?}"))
}

/// The device to run on: the GPU when `use_gpu` and a wgpu adapter exists (lavapipe
/// counts), else the host. Prints which when `verbose`, and how to get lavapipe when
/// there is no adapter.
pub fn choose_device(use_gpu: bool, verbose: bool) -> DeviceChoice {
    if !use_gpu {
        return DeviceChoice::Cpu;
    }
    let (auto, why) = DeviceChoice::detect();
    if verbose {
        println!("--device auto: {why}");
    }
    match auto {
        DeviceChoice::Cpu => {
            if verbose {
                println!("  falling back to the host for every kernel and tensor");
            }
            DeviceChoice::Cpu
        }
        // A CPU-type adapter: `auto` would keep unplaced work on the host, but the
        // demos show the GPU path, as `--device gpu` does.
        DeviceChoice::Auto => {
            if verbose {
                println!("  this demo asks for the GPU explicitly (as --device gpu does), so it runs there");
            }
            DeviceChoice::Gpu
        }
        DeviceChoice::Gpu => DeviceChoice::Gpu,
    }
}

/// An engine for `device` that waits for GPU kernels so per-device times are real.
pub fn engine(device: DeviceChoice) -> Engine {
    Engine::new(EngineConfig {
        device,
        profile: true,
        ..EngineConfig::default()
    })
}

/// A deterministic pseudo-random vector in [-scale, scale) (xorshift).
pub fn pseudo_random(len: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

/// Largest absolute difference between two slices.
pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// A float32 tensor value of `shape` holding `data`.
pub fn tensor_f32(shape: &[i64], data: &[f32]) -> Result<relax_wgpu::engine::Value, String> {
    let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    relax_wgpu::engine::Tensor::from_bytes(relax_wgpu::ir::DataType::FLOAT32, shape, bytes)
        .map(relax_wgpu::engine::Value::Tensor)
        .map_err(|e| e.to_string())
}

/// The float32 elements and shape of a tensor value.
pub fn read_f32(v: &relax_wgpu::engine::Value) -> Result<(Vec<i64>, Vec<f32>), String> {
    let t = v.as_tensor().ok_or_else(|| format!("expected a tensor, got {v:?}"))?;
    let bytes = t.to_bytes().map_err(|e| e.to_string())?;
    let data = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((t.shape().to_vec(), data))
}

pub mod attention;
pub mod hetero_mlp;
pub mod symbolic_batch;
