//! The counters of a loaded module: one definition ([`relax_jit::counters!`]) gives the live
//! atomic counters the engine updates and the [`RunStats`] snapshot users read.

use std::sync::atomic::{AtomicU64, Ordering};

relax_jit::counters! {
    /// Counters of work done by a loaded module (all runs together).
    live Stats;
    /// A snapshot of a loaded module's statistics (all runs together).
    snapshot RunStats;
    {
        /// Completed calls of `Loaded::run`.
        runs,
        /// TIR kernels executed (host and GPU).
        kernels_run,
        /// Kernels executed on the host.
        host_kernels_run,
        /// Kernels executed on the GPU.
        gpu_kernels_run,
        /// PrimFuncs compiled (once per PrimFunc and device).
        kernels_compiled,
        /// Kernel calls served by an already compiled kernel.
        kernel_cache_hits,
        /// Nanoseconds spent running host kernels.
        host_kernel_ns,
        /// Nanoseconds spent running GPU kernels (submission only, unless
        /// [`EngineConfig::profile`](crate::EngineConfig::profile) waits for completion).
        gpu_kernel_ns,
        /// Packed-function calls.
        packed_calls,
        /// Data copies of every kind (`to_vdevice`, arguments placed on their device,
        /// staging of kernel arguments).
        copies,
        /// Bytes moved by those copies.
        bytes_copied,
        /// Host-to-device copies (part of `copies`).
        uploads,
        /// Bytes uploaded.
        bytes_uploaded,
        /// Device-to-host copies (part of `copies`).
        downloads,
        /// Bytes read back.
        bytes_downloaded,
        /// Device-to-device copies (part of `copies`).
        device_copies,
        /// Bytes copied on the device.
        bytes_device_copied,
        /// Tensor and storage allocations made by operators.
        allocations,
        /// Bytes allocated by those.
        bytes_allocated,
        /// Of those allocations, the ones in device memory.
        device_allocations,
    }
}

/// The kind of a data copy, for the statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyKind {
    /// Host memory to host memory.
    Host,
    /// Host to device.
    Upload,
    /// Device to host.
    Download,
    /// Device to device.
    Device,
}

impl Stats {
    pub(crate) fn record_copy(&self, kind: CopyKind, bytes: u64) {
        let add = |a: &AtomicU64, n: u64| {
            a.fetch_add(n, Ordering::Relaxed);
        };
        add(&self.copies, 1);
        add(&self.bytes_copied, bytes);
        match kind {
            CopyKind::Host => {}
            CopyKind::Upload => {
                add(&self.uploads, 1);
                add(&self.bytes_uploaded, bytes);
            }
            CopyKind::Download => {
                add(&self.downloads, 1);
                add(&self.bytes_downloaded, bytes);
            }
            CopyKind::Device => {
                add(&self.device_copies, 1);
                add(&self.bytes_device_copied, bytes);
            }
        }
    }
    pub(crate) fn record_alloc(&self, bytes: usize) {
        self.allocations.fetch_add(1, Ordering::Relaxed);
        self.bytes_allocated.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

impl std::fmt::Display for RunStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "runs:              {}", self.runs)?;
        writeln!(
            f,
            "kernels run:       {} ({} host, {} GPU)",
            self.kernels_run, self.host_kernels_run, self.gpu_kernels_run
        )?;
        writeln!(
            f,
            "kernels compiled:  {} (cache hits {})",
            self.kernels_compiled, self.kernel_cache_hits
        )?;
        writeln!(
            f,
            "kernel time:       host {:.3} ms, GPU {:.3} ms",
            self.host_kernel_ns as f64 / 1e6,
            self.gpu_kernel_ns as f64 / 1e6
        )?;
        writeln!(
            f,
            "copies:            {} ({} bytes): {} uploads ({} B), {} readbacks ({} B), {} device-to-device ({} B)",
            self.copies,
            self.bytes_copied,
            self.uploads,
            self.bytes_uploaded,
            self.downloads,
            self.bytes_downloaded,
            self.device_copies,
            self.bytes_device_copied
        )?;
        writeln!(
            f,
            "allocations:       {} ({} bytes; {} on the device)",
            self.allocations, self.bytes_allocated, self.device_allocations
        )?;
        write!(f, "packed calls:      {}", self.packed_calls)
    }
}
