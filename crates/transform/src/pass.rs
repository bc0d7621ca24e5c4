//! Named module passes, the [`Pipeline`] that runs them (with per-pass timings and
//! an optional well-formedness check after each), and the registry of passes by name.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use relax_checker::well_formed::{self, WfOptions};
use relax_ir::{BaseFunc, Diagnostic, Function, IRModule, Span};

/// A module-to-module transformation with a name.
pub trait Pass: Send + Sync {
    /// The registered name (`fuse-ops`).
    fn name(&self) -> &str;
    /// Transform `module`; a failure is reported as diagnostics.
    fn run(&self, module: IRModule) -> Result<IRModule, Vec<Diagnostic>>;
    /// Registered passes that must have run before this one (TVM's
    /// `PassInfo.required`): a [`Pipeline`] runs those it has not run yet first.
    fn required(&self) -> &[&'static str] {
        &[]
    }
}

/// A pass that failed, or a module that a pass left ill-formed.
#[derive(Clone, Debug)]
pub struct PassError {
    /// The pass's name.
    pub pass: String,
    /// What went wrong.
    pub diagnostics: Vec<Diagnostic>,
}

impl PassError {
    /// The diagnostics, each message prefixed with the pass's name.
    pub fn into_diagnostics(self) -> Vec<Diagnostic> {
        let pass = self.pass;
        self.diagnostics
            .into_iter()
            .map(|mut d| {
                d.message = format!("pass `{pass}`: {}", d.message);
                d
            })
            .collect()
    }
}

impl fmt::Display for PassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pass `{}` failed", self.pass)?;
        for d in self.diagnostics.iter().filter(|d| d.is_error()) {
            write!(f, ": {}", d.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for PassError {}

/// Something a plain pass function may fail with.
pub trait IntoDiagnostics {
    /// As diagnostics.
    fn into_diagnostics(self) -> Vec<Diagnostic>;
}
impl IntoDiagnostics for Diagnostic {
    fn into_diagnostics(self) -> Vec<Diagnostic> {
        vec![self]
    }
}
impl IntoDiagnostics for Vec<Diagnostic> {
    fn into_diagnostics(self) -> Vec<Diagnostic> {
        self
    }
}
impl IntoDiagnostics for String {
    fn into_diagnostics(self) -> Vec<Diagnostic> {
        vec![Diagnostic::error(self, Span::NONE)]
    }
}

type PassFn = dyn Fn(IRModule) -> Result<IRModule, Vec<Diagnostic>> + Send + Sync;

struct FnPass {
    name: String,
    f: Box<PassFn>,
    required: &'static [&'static str],
}

impl Pass for FnPass {
    fn name(&self) -> &str {
        &self.name
    }
    fn run(&self, module: IRModule) -> Result<IRModule, Vec<Diagnostic>> {
        (self.f)(module)
    }
    fn required(&self) -> &[&'static str] {
        self.required
    }
}

/// A named pass from a plain function `fn(&IRModule) -> Result<IRModule, E>`.
pub fn pass_fn<E, F>(name: &str, f: F) -> Arc<dyn Pass>
where
    E: IntoDiagnostics,
    F: Fn(&IRModule) -> Result<IRModule, E> + Send + Sync + 'static,
{
    pass_fn_after(name, &[], f)
}

/// Apply `rewrite` to every Relax function of `module` (`None`: unchanged); when
/// one changed, re-normalize the module and fail with its errors.
pub(crate) fn rewrite_relax_functions(
    module: &IRModule,
    mut rewrite: impl FnMut(&Function) -> Option<Function>,
) -> Result<IRModule, Vec<Diagnostic>> {
    let mut out = module.clone();
    let mut changed = false;
    for f in out.functions.values_mut() {
        if let BaseFunc::Relax(func) = f {
            if let Some(nf) = rewrite(func) {
                *func = nf;
                changed = true;
            }
        }
    }
    if !changed {
        return Ok(out);
    }
    let n = relax_checker::normalize::normalize_module(&out);
    let errors: Vec<Diagnostic> = n.diagnostics.into_iter().filter(|d| d.is_error()).collect();
    if errors.is_empty() {
        Ok(n.module)
    } else {
        Err(errors)
    }
}

/// [`pass_fn`] with passes that must run before it.
fn pass_fn_after<E, F>(name: &str, required: &'static [&'static str], f: F) -> Arc<dyn Pass>
where
    E: IntoDiagnostics,
    F: Fn(&IRModule) -> Result<IRModule, E> + Send + Sync + 'static,
{
    Arc::new(FnPass {
        name: name.to_string(),
        f: Box::new(move |m: IRModule| f(&m).map_err(IntoDiagnostics::into_diagnostics)),
        required,
    })
}

/// The time one pass took.
#[derive(Clone, Debug)]
pub struct PassTiming {
    /// The pass.
    pub pass: String,
    /// Wall-clock time of its `run` (the well-formedness check excluded).
    pub time: Duration,
}

/// An ordered sequence of passes (TVM's `Sequential`).
#[derive(Clone)]
pub struct Pipeline {
    passes: Vec<Arc<dyn Pass>>,
    verify: bool,
    add_required: bool,
}

impl Default for Pipeline {
    fn default() -> Pipeline {
        Pipeline::new()
    }
}

impl fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("passes", &self.names())
            .field("verify", &self.verify)
            .finish()
    }
}

impl Pipeline {
    /// An empty pipeline. It checks well-formedness after each pass in debug builds,
    /// or when the environment variable `RELAX_VERIFY_PASSES` is `1`; it includes the
    /// TIR verifier ([`crate::tir_verify`]).
    pub fn new() -> Pipeline {
        Pipeline {
            passes: Vec::new(),
            verify: cfg!(debug_assertions) || std::env::var("RELAX_VERIFY_PASSES").is_ok_and(|v| v == "1"),
            add_required: true,
        }
    }
    /// Append `pass`.
    pub fn with(mut self, pass: Arc<dyn Pass>) -> Pipeline {
        self.passes.push(pass);
        self
    }
    /// Append `pass`.
    pub fn push(&mut self, pass: Arc<dyn Pass>) {
        self.passes.push(pass);
    }
    /// Insert `pass` before the first pass named `before` (at the end if none is).
    pub fn insert_before(&mut self, before: &str, pass: Arc<dyn Pass>) {
        let at = self
            .passes
            .iter()
            .position(|p| p.name() == before)
            .unwrap_or(self.passes.len());
        self.passes.insert(at, pass);
    }
    /// Remove every pass named `name`.
    pub fn remove(&mut self, name: &str) {
        self.passes.retain(|p| p.name() != name);
    }
    /// Check the spec's well-formedness criteria after each pass (on or off).
    pub fn verify(mut self, on: bool) -> Pipeline {
        self.verify = on;
        self
    }
    /// Whether a pass's [`Pass::required`] passes that have not run yet are run
    /// before it (on by default); off, the pipeline runs exactly its passes.
    pub fn add_required(mut self, on: bool) -> Pipeline {
        self.add_required = on;
        self
    }
    /// The passes' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.passes.iter().map(|p| p.name().to_string()).collect()
    }
    /// Run every pass in order. A failing pass, or (when verifying) a module left
    /// ill-formed, stops the pipeline with an error naming the pass.
    pub fn run(&self, module: IRModule) -> Result<IRModule, PassError> {
        self.run_timed(module).map(|(m, _)| m)
    }
    /// [`Pipeline::run`], also returning each pass's time.
    pub fn run_timed(&self, mut module: IRModule) -> Result<(IRModule, Vec<PassTiming>), PassError> {
        let mut timings = Vec::with_capacity(self.passes.len());
        let mut queue: Vec<Arc<dyn Pass>> = Vec::new();
        for pass in &self.passes {
            if self.add_required {
                for r in pass.required() {
                    if !queue.iter().any(|q| q.name() == *r) {
                        if let Some(p) = lookup(r) {
                            queue.push(p);
                        }
                    }
                }
            }
            queue.push(pass.clone());
        }
        for pass in &queue {
            let t = Instant::now();
            module = pass.run(module).map_err(|diagnostics| PassError {
                pass: pass.name().to_string(),
                diagnostics,
            })?;
            timings.push(PassTiming {
                pass: pass.name().to_string(),
                time: t.elapsed(),
            });
            if self.verify {
                let errors: Vec<Diagnostic> = well_formed::check_module(&module, WfOptions::default())
                    .into_iter()
                    .chain(crate::tir_verify::verify_module(&module))
                    .filter(|d| d.is_error())
                    .collect();
                if !errors.is_empty() {
                    let mut diagnostics = vec![Diagnostic::error("the module is not well-formed after it", Span::NONE)];
                    diagnostics.extend(errors);
                    return Err(PassError {
                        pass: pass.name().to_string(),
                        diagnostics,
                    });
                }
            }
        }
        Ok((module, timings))
    }
}

/// The registered passes: name and one-line description.
pub fn registered_passes() -> &'static [(&'static str, &'static str)] {
    &[
        (
            "check",
            "normalize, derive StructInfo, propagate VDevices and check well-formedness",
        ),
        ("normalize", "put the program in normal form with StructInfo filled in"),
        (
            "fuse-attention",
            "attention (R.nn.attention, explicit matmul-softmax-matmul) becomes one fused online-softmax kernel",
        ),
        (
            "realize-vdevice",
            "propagate virtual devices and desugar hint_on_device",
        ),
        (
            "decompose-ops-for-inference",
            "inference batch norm becomes elementwise arithmetic (DecomposeOpsForInference)",
        ),
        (
            "simplify-stack-sum",
            "sum over a stack of tensors becomes additions (an ONNX residual Sum)",
        ),
        (
            "fold-constant",
            "evaluate call_tir of constants at compile time (FoldConstant)",
        ),
        (
            "bind-symbolic-shapes",
            "match_cast ranked tensors of unknown shape to fresh symbolic dimensions before legalization",
        ),
        (
            "legalize",
            "lower operators to call_tir of generated PrimFuncs (LegalizeOps)",
        ),
        (
            "dead-code-elimination",
            "remove unused pure bindings and unreachable private functions",
        ),
        (
            "fuse-ops",
            "group call_tir chains into private Primitive functions (FuseOps)",
        ),
        ("fuse-tir", "turn each Primitive function into one PrimFunc (FuseTIR)"),
        (
            "call-tir-rewrite",
            "make destination passing explicit: call_tir outputs become builtin.alloc_tensor (CallTIRRewrite)",
        ),
        (
            "static-plan-block-memory",
            "plan storage reuse of tensors of known size (memory.alloc_storage/alloc_tensor; StaticPlanBlockMemory)",
        ),
        (
            "dispatch-host-library",
            "offload host operator calls to the native kernel library (call_dps_packed relax_host.*)",
        ),
    ]
}

fn errors_only(diags: Vec<Diagnostic>) -> Result<(), Vec<Diagnostic>> {
    if diags.iter().any(|d| d.is_error()) {
        Err(diags.into_iter().filter(|d| d.is_error()).collect())
    } else {
        Ok(())
    }
}

/// The pass registered as `name`.
pub fn lookup(name: &str) -> Option<Arc<dyn Pass>> {
    Some(match name {
        "check" => pass_fn(name, |m: &IRModule| {
            let r = crate::check::check_and_realize(m);
            errors_only(r.diagnostics).map(|()| r.module)
        }),
        "normalize" => pass_fn(name, |m: &IRModule| {
            let r = relax_checker::normalize::normalize_module(m);
            // TVM's Normalize does not check purity.
            let diags = r
                .diagnostics
                .into_iter()
                .filter(|d| !d.rule.as_deref().is_some_and(|r| r.starts_with("struct-info/purity")))
                .collect();
            errors_only(diags).map(|()| r.module)
        }),
        "realize-vdevice" => pass_fn(name, |m: &IRModule| {
            let r = crate::realize_vdevice::realize_vdevice(m);
            errors_only(r.diagnostics).map(|()| r.module)
        }),
        "legalize" => pass_fn(name, crate::legalize::legalize_module),
        "bind-symbolic-shapes" => pass_fn(name, crate::bind_shapes::bind_symbolic_shapes),
        "fuse-attention" => pass_fn(name, crate::attention::fuse_attention),
        "decompose-ops-for-inference" => pass_fn(name, crate::decompose::decompose_ops_for_inference),
        "simplify-stack-sum" => pass_fn(name, crate::simplify::simplify_stack_sum),
        "fold-constant" => pass_fn_after(name, &["check", "legalize"], crate::fold::fold_constant),
        "dead-code-elimination" => pass_fn(name, |m: &IRModule| {
            Ok::<_, String>(crate::dce::dead_code_elimination(m))
        }),
        // FuseOps works on `call_tir`s: it runs after LegalizeOps, as in TVM's pipeline.
        "fuse-ops" => pass_fn_after(name, &["check", "legalize"], |m: &IRModule| {
            Ok::<_, String>(crate::fuse_ops::fuse_ops(m))
        }),
        "fuse-tir" => pass_fn(name, crate::fuse_tir::fuse_tir),
        "dispatch-host-library" => pass_fn(name, crate::host_dispatch::dispatch_host_library),
        "call-tir-rewrite" => pass_fn(name, crate::call_tir_rewrite::call_tir_rewrite),
        "static-plan-block-memory" => pass_fn(name, crate::static_plan::static_plan_block_memory),
        _ => return None,
    })
}

/// The passes of [`default_pipeline`], in order.
pub const DEFAULT_PASSES: &[&str] = &[
    "check",
    "fuse-attention",
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
];

/// The pipeline a module goes through before it runs: [`DEFAULT_PASSES`].
pub fn default_pipeline() -> Pipeline {
    let mut p = Pipeline::new();
    for name in DEFAULT_PASSES {
        if let Some(pass) = lookup(name) {
            p.push(pass);
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_pass_can_be_looked_up() {
        for (name, _) in registered_passes() {
            let p = lookup(name).unwrap_or_else(|| panic!("{name} is not registered"));
            assert_eq!(p.name(), *name);
        }
        assert!(lookup("no-such-pass").is_none());
    }

    #[test]
    fn a_failing_pass_is_an_error_naming_it() {
        let p = Pipeline::new().with(pass_fn("boom", |_m: &IRModule| {
            Err::<IRModule, _>("broken".to_string())
        }));
        let e = p.run(IRModule::new()).expect_err("the pass fails");
        assert_eq!(e.pass, "boom");
        assert!(e.to_string().contains("pass `boom` failed: broken"), "{e}");
    }

    #[test]
    fn insert_before_and_timings() {
        let mut p = default_pipeline();
        p.insert_before("legalize", pass_fn("mine", |m: &IRModule| Ok::<_, String>(m.clone())));
        let names = p.names();
        let at = names.iter().position(|n| n == "mine").expect("inserted");
        assert_eq!(names[at + 1], "legalize");
        let (_, t) = p.verify(true).run_timed(IRModule::new()).expect("empty module");
        assert_eq!(t.len(), names.len());
    }
}
