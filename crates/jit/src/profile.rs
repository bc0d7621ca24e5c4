//! Per-kernel GPU time: when profiling is on, each PrimFunc's kernels are submitted
//! on their own and waited for, timed with GPU timestamp queries when the adapter
//! has `TIMESTAMP_QUERY` (wall time of the submission otherwise), and summed by
//! PrimFunc.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

use relax_ir::tir::{BinOp, PrimExprKind};

use crate::args::eval_int;
use crate::lower::LoweredFunc;

/// Time spent in one PrimFunc's kernels over all its calls.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelProfile {
    /// The PrimFunc (a legalized operator or a fused group).
    pub name: String,
    /// Calls.
    pub calls: u64,
    /// Total GPU time.
    pub time: Duration,
    /// Floating-point operations of all calls (2 per multiply-add of the
    /// multiply-accumulate reductions: convolutions, matmuls), when known.
    pub flops: Option<f64>,
    /// Whether `time` comes from GPU timestamps (else wall time per submission).
    pub timestamps: bool,
}

impl KernelProfile {
    /// Achieved GFLOP/s, when the flop count is known.
    pub fn gflops(&self) -> Option<f64> {
        let s = self.time.as_secs_f64();
        self.flops.filter(|_| s > 0.0).map(|f| f / s / 1e9)
    }
}

/// Time per kernel name, summed over calls: the GPU profile of a [`Jit`](crate::Jit), and the
/// host profile an engine keeps with the same type.
#[derive(Default)]
pub struct Profiler {
    pub(crate) enabled: AtomicBool,
    records: Mutex<HashMap<String, KernelProfile>>,
}

impl Profiler {
    /// The records so far, most time first.
    pub fn snapshot(&self) -> Vec<KernelProfile> {
        let mut v: Vec<KernelProfile> = self
            .records
            .lock()
            .map(|r| r.values().cloned().collect())
            .unwrap_or_default();
        v.sort_by(|a, b| b.time.cmp(&a.time).then(a.name.cmp(&b.name)));
        v
    }

    /// Add one call of `name` that took `time` (wall time), of `flops` operations
    /// when known.
    pub fn record_wall(&self, name: &str, time: Duration, flops: Option<f64>) {
        self.record(name, time, flops, false)
    }

    pub(crate) fn record(&self, name: &str, time: Duration, flops: Option<f64>, timestamps: bool) {
        if let Ok(mut r) = self.records.lock() {
            let e = r.entry(name.to_string()).or_insert_with(|| KernelProfile {
                name: name.to_string(),
                calls: 0,
                time: Duration::ZERO,
                flops: flops.map(|_| 0.0),
                timestamps,
            });
            e.calls += 1;
            e.time += time;
            e.flops = match (e.flops, flops) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
            e.timestamps &= timestamps;
        }
    }
}

/// Flops of one call: 2 per multiply-add of every reduction stage `out += a * b`
/// (also one fused with its epilogue)
/// (with the shape variables' values in `vars`); `None` when there is none.
pub(crate) fn flops_of(lf: &LoweredFunc, vars: &HashMap<u64, i64>) -> Option<f64> {
    let mut total = 0.0;
    let mut any = false;
    for st in &lf.stages {
        // A reduction block, or a reduction fused with its epilogue.
        let fused = st
            .reduction
            .is_none()
            .then(|| crate::schedule::fused_reduction::detect(&st.body).map(|(r, _)| r))
            .flatten();
        let Some(r) = st.reduction.as_ref().or(fused.as_ref()) else {
            continue;
        };
        let is_mul = matches!(
            r.rhs.without_casts().kind(),
            PrimExprKind::Binary { op: BinOp::Mul, .. }
        );
        if r.op != BinOp::Add || !is_mul {
            continue;
        }
        let mut n = 2.0;
        for (_, ext) in r.spatial.iter().chain(&r.reduce) {
            n *= eval_int(ext, vars).ok()? as f64;
        }
        total += n;
        any = true;
    }
    any.then_some(total)
}
