//! The one definition of the passes and of the pipeline built from them.
//!
//! [`PASSES`] is the table of every registered pass (TVM's `PassInfo`: name,
//! description, optimization level, required passes, constructor) in pipeline
//! order; [`PassContext`] is the configuration a pipeline is built for (TVM's
//! `PassContext`: opt level, switches, verification, instruments). Every entry
//! point builds its pipeline with [`build_pipeline`]: the engine (`relax run`,
//! `relax generate`), `relax wgsl` (through the engine) and the default pipeline of
//! tests; `relax print --pass NAME` and [`lookup`] construct single passes from the
//! same table.

use std::fmt;
use std::sync::Arc;

use relax_ir::IRModule;

use crate::attention::FuseOptions;
use crate::host_dispatch::DispatchOptions;
use crate::pass::{pass_fn, pass_fn_after, Pass, PassInstrument, Pipeline};

/// Optimization levels (TVM's `opt_level`): what a pipeline built for a context of
/// that level includes.
pub mod opt {
    /// Checking and normalization only: the program runs as written (operators
    /// interpreted by the reference path).
    pub const CHECK: u8 = 0;
    /// With legalization: operators become `call_tir` of generated PrimFuncs.
    pub const LEGALIZE: u8 = 1;
    /// With the graph optimizations around legalization: operator decomposition,
    /// folding, fusion, host-library dispatch, explicit allocation and memory planning.
    pub const OPTIMIZE: u8 = 2;
}

/// Whether `R.call_packed` of this global symbol is pure (the lenient pass's query).
pub type PurityQuery = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The configuration a pipeline is built for (TVM's `PassContext`).
#[derive(Clone)]
pub struct PassContext {
    /// Which passes run, by [`PassInfo::opt_level`] (see [`opt`]).
    pub opt_level: u8,
    /// Run `check` first (normalize, derive StructInfo, propagate VDevices, check
    /// well-formedness). Off: the module is taken as it is.
    pub check: bool,
    /// Offload host operator calls to the native kernel library
    /// (`dispatch-host-library`; at [`opt::OPTIMIZE`]), host attention included
    /// (`fuse-attention` makes it one `relax_host.attention` call).
    pub host_library: bool,
    /// Plan storage reuse at compile time (`static-plan-block-memory`; at
    /// [`opt::OPTIMIZE`]).
    pub static_memory_plan: bool,
    /// Fuse attention into one online-softmax kernel for calls on the GPU
    /// (`fuse-attention`; at [`opt::OPTIMIZE`]).
    pub fuse_attention_gpu: bool,
    /// The same for calls on the host.
    pub fuse_attention_host: bool,
    /// Fuse host attention whose query is one row (a decoding step), where the
    /// legalized form is a dozen small kernels, even without
    /// `fuse_attention_host`.
    pub fuse_attention_decode: bool,
    /// Tensors that no VDevice places live on the host (where they run decides
    /// which calls the host library and attention fusion take).
    pub unplaced_on_host: bool,
    /// Lenient mode: `R.call_packed` of a packed function this query calls pure,
    /// inside a dataflow block, becomes `R.call_pure_packed` before `check`
    /// (`lenient-pure-packed`). `None`: off.
    pub lenient: Option<PurityQuery>,
    /// Check well-formedness (and verify TIR) after every pass.
    pub verify: bool,
    /// Called before and after every pass (timing, IR dumps).
    pub instruments: Vec<Arc<dyn PassInstrument>>,
}

impl Default for PassContext {
    /// The engine's defaults: every optimization, the host library for unplaced
    /// tensors, attention fused on the GPU only; verification per
    /// [`crate::config::verify_passes_default`].
    fn default() -> PassContext {
        PassContext {
            opt_level: opt::OPTIMIZE,
            check: true,
            host_library: true,
            static_memory_plan: true,
            fuse_attention_gpu: true,
            fuse_attention_host: false,
            fuse_attention_decode: true,
            unplaced_on_host: true,
            lenient: None,
            verify: crate::config::verify_passes_default(),
            instruments: Vec::new(),
        }
    }
}

impl fmt::Debug for PassContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PassContext")
            .field("opt_level", &self.opt_level)
            .field("check", &self.check)
            .field("host_library", &self.host_library)
            .field("static_memory_plan", &self.static_memory_plan)
            .field("fuse_attention_gpu", &self.fuse_attention_gpu)
            .field("fuse_attention_host", &self.fuse_attention_host)
            .field("fuse_attention_decode", &self.fuse_attention_decode)
            .field("unplaced_on_host", &self.unplaced_on_host)
            .field("lenient", &self.lenient.is_some())
            .field("verify", &self.verify)
            .field("instruments", &self.instruments.len())
            .finish()
    }
}

/// One registered pass (TVM's `PassInfo`).
pub struct PassInfo {
    /// The registered name (`fuse-ops`), as `--pass` takes it.
    pub name: &'static str,
    /// One line for `--pass` help and the docs.
    pub description: &'static str,
    /// The lowest [`PassContext::opt_level`] whose pipeline includes it.
    pub opt_level: u8,
    /// Passes that must have run before it; a pipeline built by [`lookup`] for a
    /// single pass runs those first.
    pub required: &'static [&'static str],
    /// Whether a pipeline for `ctx` includes it (beyond the opt level).
    enabled: fn(&PassContext) -> bool,
    /// In [`build_pipeline`] (false: only by name, as `relax print --pass` runs it).
    in_pipeline: bool,
    make: fn(&str, &PassContext) -> Arc<dyn Pass>,
}

impl fmt::Debug for PassInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PassInfo")
            .field("name", &self.name)
            .field("opt_level", &self.opt_level)
            .field("required", &self.required)
            .finish()
    }
}

impl PassInfo {
    /// The pass, configured by `ctx`.
    pub fn make(&self, ctx: &PassContext) -> Arc<dyn Pass> {
        (self.make)(self.name, ctx)
    }
    /// Whether [`build_pipeline`] includes it for `ctx`.
    pub fn in_pipeline_for(&self, ctx: &PassContext) -> bool {
        self.in_pipeline && self.opt_level <= ctx.opt_level && (self.enabled)(ctx)
    }
}

fn always(_: &PassContext) -> bool {
    true
}

fn errors_only(diags: Vec<relax_ir::Diagnostic>) -> Result<(), Vec<relax_ir::Diagnostic>> {
    if diags.iter().any(|d| d.is_error()) {
        Err(diags.into_iter().filter(|d| d.is_error()).collect())
    } else {
        Ok(())
    }
}

fn fuse_options(ctx: &PassContext) -> FuseOptions {
    FuseOptions {
        host: ctx.fuse_attention_host,
        host_one_query: ctx.fuse_attention_decode,
        host_library: ctx.host_library,
        gpu: ctx.fuse_attention_gpu,
        unplaced_on_host: ctx.unplaced_on_host,
    }
}

/// Every registered pass, in the order a pipeline runs them. A pass that appears
/// twice in the pipeline (dead-code elimination, before and after fusion) has two
/// rows with the same name.
pub static PASSES: &[PassInfo] = &[
    PassInfo {
        name: "lenient-pure-packed",
        description:
            "lenient mode: R.call_packed of a pure packed function inside a dataflow block becomes R.call_pure_packed",
        opt_level: opt::CHECK,
        required: &[],
        enabled: |c| c.lenient.is_some(),
        in_pipeline: true,
        make: |name, ctx| {
            let query = ctx.lenient.clone();
            pass_fn(name, move |m: &IRModule| {
                let pure = |n: &str| query.as_ref().is_some_and(|q| q(n));
                Ok::<_, String>(crate::lenient::pure_packed_calls(m, &pure).0)
            })
        },
    },
    PassInfo {
        name: "check",
        description: "normalize, derive StructInfo, propagate VDevices and check well-formedness",
        opt_level: opt::CHECK,
        required: &[],
        enabled: |c| c.check,
        in_pipeline: true,
        make: |name, _| {
            pass_fn(name, |m: &IRModule| {
                let r = crate::check::check_and_realize(m);
                errors_only(r.diagnostics).map(|()| r.module)
            })
        },
    },
    PassInfo {
        name: "normalize",
        description: "put the program in normal form with StructInfo filled in",
        opt_level: opt::CHECK,
        required: &[],
        enabled: always,
        in_pipeline: false,
        make: |name, _| {
            pass_fn(name, |m: &IRModule| {
                let r = relax_checker::normalize::normalize_module(m);
                // TVM's Normalize does not check purity.
                let diags = r
                    .diagnostics
                    .into_iter()
                    .filter(|d| d.rule != Some(relax_checker::derive::rules::PURITY))
                    .collect();
                errors_only(diags).map(|()| r.module)
            })
        },
    },
    PassInfo {
        name: "realize-vdevice",
        description: "propagate virtual devices and desugar hint_on_device (part of check)",
        opt_level: opt::CHECK,
        required: &[],
        enabled: always,
        in_pipeline: false,
        make: |name, _| {
            pass_fn(name, |m: &IRModule| {
                let r = crate::realize_vdevice::realize_vdevice(m);
                errors_only(r.diagnostics).map(|()| r.module)
            })
        },
    },
    PassInfo {
        name: "fuse-attention",
        description:
            "attention (R.nn.attention, explicit matmul-softmax-matmul) becomes one fused online-softmax kernel",
        opt_level: opt::OPTIMIZE,
        required: &[],
        enabled: |c| c.fuse_attention_gpu || c.fuse_attention_host || c.fuse_attention_decode || c.host_library,
        in_pipeline: true,
        make: |name, ctx| {
            let options = fuse_options(ctx);
            pass_fn(name, move |m: &IRModule| {
                crate::attention::fuse_attention_with(m, options)
            })
        },
    },
    PassInfo {
        name: "dispatch-host-library",
        description: "offload host operator calls to the native kernel library (call_dps_packed relax_host.*)",
        opt_level: opt::OPTIMIZE,
        required: &[],
        enabled: |c| c.host_library,
        in_pipeline: true,
        make: |name, ctx| {
            let options = DispatchOptions {
                unplaced_on_host: ctx.unplaced_on_host,
            };
            pass_fn(name, move |m: &IRModule| {
                crate::host_dispatch::dispatch_host_library_with(m, options)
            })
        },
    },
    PassInfo {
        name: "fuse-transpose-matmul",
        description: "matmul(x, permute_dims(w)) of a 2-D w becomes one NT_matmul PrimFunc reading w untransposed (FuseTransposeMatmul)",
        opt_level: opt::OPTIMIZE,
        required: &[],
        enabled: always,
        in_pipeline: true,
        make: |name, _| pass_fn(name, crate::transpose_matmul::fuse_transpose_matmul),
    },
    PassInfo {
        name: "decompose-ops-for-inference",
        description: "inference batch norm becomes elementwise arithmetic (DecomposeOpsForInference)",
        opt_level: opt::OPTIMIZE,
        required: &[],
        enabled: always,
        in_pipeline: true,
        make: |name, _| pass_fn(name, crate::decompose::decompose_ops_for_inference),
    },
    PassInfo {
        name: "simplify-stack-sum",
        description: "sum over a stack of tensors becomes additions (an ONNX residual Sum)",
        opt_level: opt::OPTIMIZE,
        required: &[],
        enabled: always,
        in_pipeline: true,
        make: |name, _| pass_fn(name, crate::simplify::simplify_stack_sum),
    },
    PassInfo {
        name: "dead-code-elimination",
        description: "remove unused pure bindings and unreachable private functions",
        opt_level: opt::OPTIMIZE,
        required: &[],
        enabled: always,
        in_pipeline: true,
        make: dead_code_elimination,
    },
    PassInfo {
        name: "bind-symbolic-shapes",
        description: "match_cast ranked tensors of unknown shape to fresh symbolic dimensions before legalization",
        opt_level: opt::LEGALIZE,
        required: &[],
        enabled: always,
        in_pipeline: true,
        make: |name, _| pass_fn(name, crate::bind_shapes::bind_symbolic_shapes),
    },
    PassInfo {
        name: "legalize",
        description: "lower operators to call_tir of generated PrimFuncs (LegalizeOps)",
        opt_level: opt::LEGALIZE,
        required: &[],
        enabled: always,
        in_pipeline: true,
        make: |name, _| pass_fn(name, crate::legalize::legalize_module),
    },
    PassInfo {
        name: "fold-constant",
        description: "evaluate call_tir of constants at compile time (FoldConstant)",
        opt_level: opt::OPTIMIZE,
        required: &["check", "legalize"],
        enabled: always,
        in_pipeline: true,
        make: |name, _| pass_fn_after(name, &["check", "legalize"], crate::fold::fold_constant),
    },
    PassInfo {
        name: "fuse-ops",
        description: "group call_tir chains into private Primitive functions (FuseOps)",
        opt_level: opt::OPTIMIZE,
        // FuseOps works on `call_tir`s: it runs after LegalizeOps, as in TVM's pipeline.
        required: &["check", "legalize"],
        enabled: always,
        in_pipeline: true,
        make: |name, _| {
            pass_fn_after(name, &["check", "legalize"], |m: &IRModule| {
                Ok::<_, String>(crate::fuse_ops::fuse_ops(m))
            })
        },
    },
    PassInfo {
        name: "fuse-tir",
        description: "turn each Primitive function into one PrimFunc (FuseTIR)",
        opt_level: opt::OPTIMIZE,
        required: &[],
        enabled: always,
        in_pipeline: true,
        make: |name, _| pass_fn(name, crate::fuse_tir::fuse_tir),
    },
    PassInfo {
        name: "dead-code-elimination",
        description: "remove unused pure bindings and unreachable private functions",
        opt_level: opt::OPTIMIZE,
        required: &[],
        enabled: always,
        in_pipeline: true,
        make: dead_code_elimination,
    },
    PassInfo {
        name: "call-tir-rewrite",
        description: "make destination passing explicit: call_tir outputs become builtin.alloc_tensor (CallTIRRewrite)",
        opt_level: opt::OPTIMIZE,
        required: &[],
        enabled: always,
        in_pipeline: true,
        make: |name, _| pass_fn(name, crate::call_tir_rewrite::call_tir_rewrite),
    },
    PassInfo {
        name: "static-plan-block-memory",
        description:
            "plan storage reuse of tensors of known size (memory.alloc_storage/alloc_tensor; StaticPlanBlockMemory)",
        opt_level: opt::OPTIMIZE,
        required: &[],
        enabled: |c| c.static_memory_plan,
        in_pipeline: true,
        make: |name, _| pass_fn(name, crate::static_plan::static_plan_block_memory),
    },
];

fn dead_code_elimination(name: &str, _: &PassContext) -> Arc<dyn Pass> {
    pass_fn(name, |m: &IRModule| {
        Ok::<_, String>(crate::dce::dead_code_elimination(m))
    })
}

/// Every registered pass once, in pipeline order.
pub fn pass_infos() -> impl Iterator<Item = &'static PassInfo> {
    PASSES
        .iter()
        .enumerate()
        .filter(|(i, p)| !PASSES[..*i].iter().any(|q| q.name == p.name))
        .map(|(_, p)| p)
}

/// The registered passes: name and one-line description, each once.
pub fn registered_passes() -> Vec<(&'static str, &'static str)> {
    pass_infos().map(|p| (p.name, p.description)).collect()
}

/// The table row of the pass registered as `name`.
pub fn pass_info(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.name == name)
}

/// The pass registered as `name`, configured by the default [`PassContext`].
pub fn lookup(name: &str) -> Option<Arc<dyn Pass>> {
    lookup_in(name, &PassContext::default())
}

/// The pass registered as `name`, configured by `ctx`.
pub fn lookup_in(name: &str, ctx: &PassContext) -> Option<Arc<dyn Pass>> {
    pass_info(name).map(|p| p.make(ctx))
}

/// The pipeline for `ctx`: every row of [`PASSES`] that
/// [`PassInfo::in_pipeline_for`] `ctx`, in order, exactly (required passes are
/// already in place), verifying and instrumented as `ctx` says.
pub fn build_pipeline(ctx: &PassContext) -> Pipeline {
    let mut p = Pipeline::new()
        .add_required(false)
        .verify(ctx.verify)
        .instruments(ctx.instruments.clone());
    for info in PASSES.iter().filter(|p| p.in_pipeline_for(ctx)) {
        p.push(info.make(ctx));
    }
    p
}

/// The pipeline for the default [`PassContext`] (what the engine runs for
/// unplaced tensors on the host).
pub fn default_pipeline() -> Pipeline {
    build_pipeline(&PassContext::default())
}

/// A pipeline of the passes named in `names`, in order, configured by `ctx`,
/// each preceded by its [`PassInfo::required`] passes that have not run (as
/// `relax print --pass` runs them). Fails with the first unknown name.
pub fn named_pipeline(names: &[String], ctx: &PassContext) -> Result<Pipeline, String> {
    let mut p = Pipeline::new().verify(ctx.verify).instruments(ctx.instruments.clone());
    for name in names {
        p.push(lookup_in(name, ctx).ok_or_else(|| format!("no pass named `{name}`"))?);
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_pass_can_be_looked_up() {
        for (name, _) in registered_passes() {
            let p = lookup(name).unwrap_or_else(|| panic!("{name} is not registered"));
            assert_eq!(p.name(), name);
        }
        assert!(lookup("no-such-pass").is_none());
        // Names are unique in the listing, and the listing has every row's name.
        let names: Vec<&str> = registered_passes().iter().map(|(n, _)| *n).collect();
        for row in PASSES {
            assert_eq!(names.iter().filter(|n| **n == row.name).count(), 1, "{}", row.name);
        }
    }

    #[test]
    fn the_default_pipeline_in_order() {
        assert_eq!(
            default_pipeline().names(),
            [
                "check",
                "fuse-attention",
                "dispatch-host-library",
                "fuse-transpose-matmul",
                "decompose-ops-for-inference",
                "simplify-stack-sum",
                "dead-code-elimination",
                "bind-symbolic-shapes",
                "legalize",
                "fold-constant",
                "fuse-ops",
                "fuse-tir",
                "dead-code-elimination",
                "call-tir-rewrite",
                "static-plan-block-memory",
            ]
        );
    }

    #[test]
    fn opt_levels_and_switches_select_passes() {
        let names = |ctx: PassContext| build_pipeline(&ctx).names();
        let base = PassContext::default();
        assert_eq!(
            names(PassContext {
                opt_level: opt::CHECK,
                ..base.clone()
            }),
            ["check"]
        );
        assert_eq!(
            names(PassContext {
                opt_level: opt::LEGALIZE,
                check: false,
                ..base.clone()
            }),
            ["bind-symbolic-shapes", "legalize"]
        );
        let some = names(PassContext {
            host_library: false,
            static_memory_plan: false,
            fuse_attention_gpu: false,
            fuse_attention_decode: false,
            lenient: Some(Arc::new(|_: &str| true)),
            ..base.clone()
        });
        assert_eq!(some.first().map(String::as_str), Some("lenient-pure-packed"));
        for gone in ["dispatch-host-library", "static-plan-block-memory", "fuse-attention"] {
            assert!(!some.iter().any(|n| n == gone), "{gone} in {some:?}");
        }
    }

    #[test]
    fn named_pipelines_reject_unknown_names() {
        let e = named_pipeline(&["legalize".into(), "nope".into()], &PassContext::default()).expect_err("unknown");
        assert!(e.contains("`nope`"), "{e}");
    }
}
