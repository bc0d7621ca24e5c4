//! Named module passes and the [`Pipeline`] that runs them (with per-pass timings,
//! [`PassInstrument`]s and an optional well-formedness check after each). The table
//! of registered passes and the pipeline built from it are in [`crate::registry`].

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
pub(crate) fn pass_fn_after<E, F>(name: &str, required: &'static [&'static str], f: F) -> Arc<dyn Pass>
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

/// Watches a pipeline run (TVM's `PassInstrument`): called before and after every
/// pass, for timing, IR dumps or logging.
pub trait PassInstrument: Send + Sync {
    /// Before `pass` runs on `module`.
    fn before_pass(&self, _pass: &str, _module: &IRModule) {}
    /// After `pass` produced `module` in `time`.
    fn after_pass(&self, _pass: &str, _module: &IRModule, _time: Duration) {}
}

/// An ordered sequence of passes (TVM's `Sequential`).
#[derive(Clone)]
pub struct Pipeline {
    passes: Vec<Arc<dyn Pass>>,
    verify: bool,
    add_required: bool,
    instruments: Vec<Arc<dyn PassInstrument>>,
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
    /// An empty pipeline. It checks well-formedness after each pass (the TIR
    /// verifier [`crate::tir_verify`] included) when
    /// [`crate::config::verify_passes_default`] says so.
    pub fn new() -> Pipeline {
        Pipeline {
            passes: Vec::new(),
            verify: crate::config::verify_passes_default(),
            add_required: true,
            instruments: Vec::new(),
        }
    }
    /// Call `instruments` before and after every pass.
    pub fn instruments(mut self, instruments: Vec<Arc<dyn PassInstrument>>) -> Pipeline {
        self.instruments = instruments;
        self
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
                        if let Some(p) = crate::registry::lookup(r) {
                            queue.push(p);
                        }
                    }
                }
            }
            queue.push(pass.clone());
        }
        for pass in &queue {
            for i in &self.instruments {
                i.before_pass(pass.name(), &module);
            }
            let t = Instant::now();
            module = pass.run(module).map_err(|diagnostics| PassError {
                pass: pass.name().to_string(),
                diagnostics,
            })?;
            let time = t.elapsed();
            for i in &self.instruments {
                i.after_pass(pass.name(), &module, time);
            }
            timings.push(PassTiming {
                pass: pass.name().to_string(),
                time,
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut p = crate::registry::default_pipeline();
        p.insert_before("legalize", pass_fn("mine", |m: &IRModule| Ok::<_, String>(m.clone())));
        let names = p.names();
        let at = names.iter().position(|n| n == "mine").expect("inserted");
        assert_eq!(names[at + 1], "legalize");
        let (_, t) = p.verify(true).run_timed(IRModule::new()).expect("empty module");
        assert_eq!(t.len(), names.len());
    }
}
