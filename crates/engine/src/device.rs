//! Device memory behind tensors: the traits a GPU runtime implements so that device
//! buffers can sit inside [`Tensor`](crate::Tensor)s, and the choice of default device.

use std::sync::Arc;

use relax_ir::{IRModule, Target, VDevice};

use crate::error::BackendError;

/// A linear block of device memory.
pub trait DeviceMemory: Send + Sync {
    /// Size in bytes.
    fn len(&self) -> usize;
    /// Whether the buffer has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copy `out.len()` bytes starting at `offset` to the host.
    fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), BackendError>;
    /// Copy `data` to the device starting at `offset`.
    fn write(&self, offset: usize, data: &[u8]) -> Result<(), BackendError>;
    /// The wgpu buffer behind this memory, when it is one (kernels then bind it
    /// directly and copies between such buffers stay on the device).
    fn gpu_buffer(&self) -> Option<&relax_gpu_runtime::DeviceBuffer> {
        None
    }
}

/// A device runtime able to allocate memory for some `VDevice`s.
pub trait DeviceBackend: Send + Sync {
    /// A human-readable name (adapter name).
    fn name(&self) -> String;
    /// Whether tensors placed on `vdevice` live in this backend's memory.
    fn accepts(&self, vdevice: &VDevice) -> bool;
    /// Allocate `nbytes` zeroed bytes for `vdevice`.
    fn alloc(&self, vdevice: &VDevice, nbytes: usize) -> Result<Arc<dyn DeviceMemory>, BackendError>;
    /// Allocate `nbytes` for `vdevice` that the caller overwrites completely (kernel
    /// outputs, copy destinations): the contents may be anything, which saves a
    /// clearing pass. Defaults to [`DeviceBackend::alloc`].
    fn alloc_uninit(&self, vdevice: &VDevice, nbytes: usize) -> Result<Arc<dyn DeviceMemory>, BackendError> {
        self.alloc(vdevice, nbytes)
    }
    /// The wgpu runtime behind this backend, when it is one: PrimFuncs whose tensors
    /// live in its memory then run there as WGSL kernels.
    fn gpu_runtime(&self) -> Option<relax_gpu_runtime::GpuRuntime> {
        None
    }
}

/// Target kinds whose tensors live on a GPU (the wgpu adapter).
pub const GPU_KINDS: &[&str] = &["webgpu", "vulkan", "metal", "cuda", "rocm", "opencl"];

/// Whether tensors on a VDevice of target kind `kind` live on the GPU.
pub fn is_gpu_kind(kind: &str) -> bool {
    GPU_KINDS.contains(&kind)
}

/// Resolve a VDevice as TVMScript names it, `"kind:index:scope"` (`"kind"` and
/// `"kind:index"` too): `index` counts the module's VDevices *of that kind* in the
/// order of `I.module_global_infos` (so `"webgpu:0"` is the first webgpu VDevice even
/// when an llvm one comes before it). A module without VDevices gets a fresh one.
pub fn resolve_vdevice(module: &IRModule, spec: &str) -> Result<VDevice, String> {
    let mut parts = spec.split(':');
    let kind = parts.next().unwrap_or_default().trim();
    if kind.is_empty() {
        return Err(format!("invalid VDevice \"{spec}\": expected \"kind:index:scope\""));
    }
    let index: usize = match parts.next() {
        Some(p) => p
            .trim()
            .parse()
            .map_err(|_| format!("invalid VDevice index in \"{spec}\""))?,
        None => 0,
    };
    let scope = parts.next().map(str::to_string);
    let devices = module.vdevices();
    let same_kind: Vec<&VDevice> = devices.iter().copied().filter(|v| v.target.kind == kind).collect();
    match same_kind.get(index) {
        Some(v) => {
            let mut v = (*v).clone();
            if let Some(s) = scope {
                v.memory_scope = s;
            }
            Ok(v)
        }
        None if devices.is_empty() => Ok(VDevice {
            target: Target::from_kind(kind),
            vdevice_id: index as i64,
            memory_scope: scope.unwrap_or_else(|| "global".to_string()),
        }),
        None => Err(format!(
            "VDevice \"{spec}\" does not exist: the module has {} {kind} VDevice(s) among [{}]",
            same_kind.len(),
            devices
                .iter()
                .map(|v| describe_vdevice_in(module, v))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Where tensors and kernels go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceChoice {
    /// The best wgpu adapter when one exists, the host otherwise: kernels not placed
    /// by a VDevice run on the GPU (unless a custom kernel executor was given, or the
    /// adapter is a CPU-type device such as lavapipe, slower than the host kernels),
    /// host VDevices stay on the host, GPU VDevices use the adapter.
    /// [`DeviceChoice::detect`] turns `Auto` into `Gpu` or `Cpu`.
    #[default]
    Auto,
    /// Require a GPU: everything not placed on a host VDevice runs on it.
    Gpu,
    /// Everything on the host; `VDevice`s are labels on host memory.
    Cpu,
}

impl DeviceChoice {
    /// What `Auto` comes to on this machine, with a sentence saying why: `Gpu` when a
    /// wgpu adapter that is not a CPU-type device can be opened; `Auto` when the only
    /// adapter is a CPU-type device (lavapipe, llvmpipe, SwiftShader: unplaced work
    /// runs on the faster host kernels, explicit GPU VDevices still use the adapter);
    /// `Cpu` when there is no adapter.
    pub fn detect() -> (DeviceChoice, String) {
        match relax_gpu_runtime::GpuRuntime::shared_default() {
            Ok(rt) if rt.adapter_info().is_software() => (
                DeviceChoice::Auto,
                format!(
                    "the only GPU adapter, {}, is a CPU-type device: unplaced work runs on the host kernels, \
                     which are faster (explicit GPU VDevices still use it; --device gpu forces it)",
                    rt.adapter_info()
                ),
            ),
            Ok(rt) => (DeviceChoice::Gpu, format!("GPU adapter {}", rt.adapter_info())),
            Err(e) => (DeviceChoice::Cpu, format!("{e}; running on the host")),
        }
    }
}

impl std::str::FromStr for DeviceChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<DeviceChoice, String> {
        match s {
            "auto" => Ok(DeviceChoice::Auto),
            "gpu" => Ok(DeviceChoice::Gpu),
            "cpu" | "host" => Ok(DeviceChoice::Cpu),
            other => Err(format!("unknown device `{other}` (expected auto, gpu or cpu)")),
        }
    }
}

/// Whether two VDevices denote the same device: same target (kind and configuration),
/// index and memory scope.
pub fn same_vdevice(a: &VDevice, b: &VDevice) -> bool {
    a == b
}

/// `kind:id:scope` (the target kind, the VDevice's `vdevice_id` and memory scope).
pub fn describe_vdevice(v: &VDevice) -> String {
    format!("{}:{}:{}", v.target.kind, v.vdevice_id, v.memory_scope)
}

/// `kind:index:scope`, as TVMScript names a VDevice of `module` (the index counts
/// the module's VDevices of the same kind; `vdevice_id` when it is not one of them).
pub fn describe_vdevice_in(module: &IRModule, v: &VDevice) -> String {
    let index = module
        .vdevices()
        .into_iter()
        .filter(|d| d.target.kind == v.target.kind)
        .position(|d| d == v)
        .map(|i| i as i64)
        .unwrap_or(v.vdevice_id);
    format!("{}:{}:{}", v.target.kind, index, v.memory_scope)
}
