//! The GPU compile stage: a PrimFunc lowered, scheduled and emitted as WGSL
//! ([`emit_program`]), giving its [`ProgramSource`].

use std::sync::Arc;

use relax_ir::PrimFunc;

use crate::error::Result;
use crate::lower::{self, LoweredFunc};
use crate::schedule::{self, ScheduleOptions};
use crate::wgsl::{self, DeviceCaps, KernelSource};

/// All kernels generated for one PrimFunc (run in order).
#[derive(Clone, Debug)]
pub struct ProgramSource {
    /// The lowered function.
    pub lowered: Arc<LoweredFunc>,
    /// One kernel per stage.
    pub kernels: Vec<KernelSource>,
}

impl std::fmt::Display for ProgramSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for k in &self.kernels {
            writeln!(
                f,
                "// kernel {} workgroup_size {:?} grid {:?}",
                k.name, k.workgroup_size, k.grid
            )?;
            for (i, b) in k.bindings.iter().enumerate() {
                writeln!(
                    f,
                    "//   binding {i}: {:?} {} {:?} {:?}",
                    b.buf, b.dtype, b.storage, b.access
                )?;
            }
            writeln!(f, "{}", k.wgsl)?;
        }
        Ok(())
    }
}

/// Lower, schedule and emit WGSL for `f`.
pub fn emit_program(f: &PrimFunc, caps: &DeviceCaps, options: &ScheduleOptions) -> Result<ProgramSource> {
    let lowered = Arc::new(lower::lower(f)?);
    let kernels = schedule::schedule(&lowered, options)?;
    let kernels = kernels
        .iter()
        .map(|k| wgsl::emit_kernel(&lowered, k, caps))
        .collect::<Result<Vec<_>>>()?;
    Ok(ProgramSource { lowered, kernels })
}
