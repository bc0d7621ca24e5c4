//! `Engine`: configuration, packed-function registry and kernel executor; `Loaded`:
//! a prepared module that can be run many times, from many threads.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};

use relax_gpu_runtime::{GpuError, GpuRuntime, RuntimeStats};
use relax_ir::{BaseFunc, Diagnostic, Expr, GlobalVar, IRModule, PrimFunc, Var};
use relax_jit::Jit;

use crate::device::{DeviceBackend, DeviceChoice};
use crate::error::{BackendError, EngineError, Result};
use crate::gpu::{CompileConfig, GpuBackend};
use crate::interp::{free_vars, Interp};
use crate::packed::{PackedFunc, PackedRegistry, Purity};
pub use crate::stats::RunStats;
pub(crate) use crate::stats::{CopyKind, Stats};
use crate::value::Value;
use relax_jit::{CompiledKernel, GpuExecutor, KernelExecutor};

/// Where `R.print` output goes.
pub type PrintSink = Arc<dyn Fn(&str) + Send + Sync>;

/// A module-to-module step run when a module is loaded (normalization, StructInfo
/// derivation, legalization of operators to `call_tir`, ...).
pub type PreparePass = Arc<dyn Fn(IRModule) -> std::result::Result<IRModule, Vec<Diagnostic>> + Send + Sync>;

/// Engine configuration.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Default device for tensor data placed on GPU VDevices.
    pub device: DeviceChoice,
    /// Substring of the GPU adapter name to prefer (`None`: the runtime's default).
    pub adapter: Option<String>,
    /// Keep compiled kernels in memory across runs of a loaded module.
    pub cache_kernels: bool,
    /// Maximum nesting of Relax function calls before a run fails.
    pub max_call_depth: usize,
    /// Stack size of the thread a run executes on (0: the caller's thread).
    pub stack_size: usize,
    /// While a host run lasts, keep the run pool's other threads spinning for work
    /// instead of sleeping between kernels (as ONNX Runtime's `allow_spinning`):
    /// faster when the machine has cores to spare, slower when other processes
    /// want them. Runs on a GPU never spin.
    pub spin_threads: bool,
    /// Check and normalize modules at load (`relax_transform::check_and_realize`):
    /// normal form, StructInfo derivation, purity, well-formedness. A module with
    /// errors is rejected with [`EngineError::Prepare`].
    pub check: bool,
    /// Lower Relax operators to `call_tir` of generated TIR PrimFuncs at load
    /// (`relax_transform::legalize::legalize_module`), after checking.
    pub legalize: bool,
    /// Run the graph optimizations of the default pipeline (with legalization):
    /// `decompose-ops-for-inference` before it, `fuse-ops`, `fuse-tir` and
    /// `dead-code-elimination` after it (see `relax_transform`).
    pub optimize: bool,
    /// Simulated device-memory limit of the GPU the engine opens (a small device for
    /// out-of-memory tests); `None`: the driver's limit.
    pub memory_limit_bytes: Option<u64>,
    /// Wait for every GPU kernel to finish before going on, so that the per-device
    /// times in [`RunStats`] measure execution rather than submission (slower).
    pub profile: bool,
    /// With `optimize`: run operator calls on host tensors through the native host
    /// kernel library (the `dispatch-host-library` pass rewrites them into
    /// `call_dps_packed` of `relax_host.*`) instead of legalized TIR.
    pub host_library: bool,
    /// With `optimize`: plan storage reuse at compile time (`static-plan-block-memory`,
    /// TVM's StaticPlanBlockMemory; on by default). Off, every intermediate tensor is
    /// allocated when it is produced and released after its last use.
    pub static_memory_plan: bool,
    /// Lenient mode: `R.call_packed` of a packed function registered as pure, inside a
    /// dataflow block, runs as `R.call_pure_packed` instead of being rejected by the
    /// purity rule (as `tvm.compile` runs what TVM's importers write; see
    /// `relax_transform::lenient`). Off by default.
    pub lenient: bool,
    /// With `optimize`: compute attention on the GPU (`R.nn.attention` and the
    /// explicit matmul-softmax-matmul chains of the front ends) with one fused
    /// online-softmax kernel (`fuse-attention`); on by default. Off, attention runs
    /// as legalized.
    pub fuse_attention: bool,
    /// With `optimize`: the same on the host, as the generated PrimFunc. Off by
    /// default: with `host_library` host attention is one call of the native kernel
    /// library (`relax_host.attention`: register-tiled products and the library's
    /// softmax, operands read in place through their transposes), faster than the
    /// fused PrimFunc's scalar code (`examples/bench_attention.rs`).
    pub fuse_attention_host: bool,
    /// With `optimize`: fuse host attention whose query is one row (a decoding
    /// step with a KV cache) even without `fuse_attention_host`: there the
    /// legalized form is a dozen small kernels per layer. On by default.
    pub fuse_attention_decode: bool,
    /// Check well-formedness after every pass of the preparation pipeline (`None`:
    /// `relax_transform::config::verify_passes_default`, on in debug builds or with
    /// `RELAX_VERIFY_PASSES=1`).
    pub verify_passes: Option<bool>,
    /// Write the module as TVMScript after every preparation pass into this directory
    /// (`relax_transform::instrument::DumpIr`).
    pub dump_ir: Option<std::path::PathBuf>,
    /// How GPU kernels are compiled: in parallel at load, and kept in a persistent
    /// cache across processes when one is configured (off by default).
    pub compile: CompileConfig,
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            device: DeviceChoice::Auto,
            adapter: None,
            cache_kernels: true,
            max_call_depth: 10_000,
            stack_size: 256 << 20,
            spin_threads: true,
            check: true,
            legalize: true,
            optimize: true,
            memory_limit_bytes: None,
            host_library: true,
            profile: false,
            static_memory_plan: true,
            lenient: false,
            fuse_attention: true,
            fuse_attention_host: false,
            fuse_attention_decode: true,
            verify_passes: None,
            dump_ir: None,
            compile: CompileConfig::default(),
        }
    }
}

/// An opened device backend and, for a wgpu one, the JIT that runs kernels on it.
#[derive(Clone)]
pub(crate) struct Opened {
    pub backend: Arc<dyn DeviceBackend>,
    pub gpu: Option<(GpuRuntime, Arc<Jit>)>,
}

impl Opened {
    fn new(backend: Arc<dyn DeviceBackend>, compile: &CompileConfig) -> Opened {
        let gpu = backend.gpu_runtime().map(|rt| (rt.clone(), Arc::new(compile.jit(rt))));
        Opened { backend, gpu }
    }
}

/// The device backend: given by the user, or opened on first use (a GPU through
/// `relax_gpu_runtime` unless the engine is configured for the CPU).
pub(crate) struct BackendSlot {
    pub(crate) cell: OnceLock<std::result::Result<Opened, GpuError>>,
    device: DeviceChoice,
    adapter: Option<String>,
    memory_limit: Option<u64>,
    compile: CompileConfig,
}

impl BackendSlot {
    fn new(config: &EngineConfig) -> BackendSlot {
        BackendSlot {
            cell: OnceLock::new(),
            device: config.device,
            adapter: config.adapter.clone(),
            memory_limit: config.memory_limit_bytes,
            compile: config.compile.clone(),
        }
    }
    fn opened(&self) -> &std::result::Result<Opened, GpuError> {
        self.cell.get_or_init(|| {
            let gpu = if self.adapter.is_none() && self.memory_limit.is_none() {
                relax_gpu_runtime::GpuRuntime::shared_default().map(GpuBackend::from_runtime)
            } else {
                GpuBackend::open_with_limit(self.adapter.as_deref(), self.memory_limit)
            };
            gpu.map(|g| Opened::new(Arc::new(g), &self.compile))
        })
    }
    /// The backend, opening the GPU now if needed; `None` when tensors stay on the host.
    pub(crate) fn get(&self) -> Result<Option<Opened>> {
        if self.device == DeviceChoice::Cpu {
            return Ok(None);
        }
        match (self.opened(), self.device) {
            (Err(e), DeviceChoice::Gpu) => Err(EngineError::Device(
                BackendError::from(e.clone()).context("the engine is configured for a GPU but none could be opened"),
            )),
            (Err(_), _) => Ok(None),
            (Ok(o), _) => Ok(Some(o.clone())),
        }
    }
    /// Under [`DeviceChoice::Auto`]: whether work no VDevice places goes to the opened
    /// backend. Not when there is none, nor when the wgpu adapter is a CPU-type device
    /// (lavapipe, llvmpipe, SwiftShader): the host kernels are faster on the same CPU.
    fn auto_prefers_device(&self) -> bool {
        match self.opened() {
            Ok(o) => !o.gpu.as_ref().is_some_and(|(rt, _)| rt.adapter_info().is_software()),
            Err(_) => false,
        }
    }
    /// A sentence saying where tensors and kernels go.
    pub(crate) fn describe(&self) -> String {
        match (self.device, self.opened()) {
            (DeviceChoice::Cpu, _) => "host (the engine is configured for the CPU)".to_string(),
            (DeviceChoice::Auto, Ok(o)) if !self.auto_prefers_device() => format!(
                "host for unplaced work: the only GPU adapter, {}, is a CPU-type device, slower than the host \
                 kernels (explicit GPU VDevices still use it; --device gpu forces it)",
                o.backend.name()
            ),
            (_, Ok(o)) => {
                let f16 = match &o.gpu {
                    Some((rt, _)) if !rt.supports_f16() => {
                        " (it lacks shader-f16: float16 tensors are held as f32 words and computed in f32, \
                         rounded to float16 at each operation)"
                    }
                    _ => "",
                };
                format!("GPU: {}{f16}", o.backend.name())
            }
            (DeviceChoice::Gpu, Err(e)) => format!("no GPU ({e})"),
            (DeviceChoice::Auto, Err(e)) => format!("host (no GPU adapter: {e})"),
        }
    }
}

/// Where a kernel runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Place {
    /// The host executor.
    Host,
    /// WGSL kernels on the engine's GPU.
    Gpu,
}

/// A compiled PrimFunc: a host kernel of the engine's kernel executor, or a GPU
/// kernel of the JIT's [`GpuExecutor`] (whose pipelines live in the JIT's cache).
pub(crate) type Compiled = Arc<dyn CompiledKernel>;

/// A kernel compiled at most once (its error is kept too).
type KernelSlot = Arc<OnceLock<std::result::Result<Compiled, BackendError>>>;

/// A loaded module and everything a run needs.
pub(crate) struct Program {
    pub module: IRModule,
    pub registry: Arc<PackedRegistry>,
    pub executor: Option<Arc<dyn KernelExecutor>>,
    pub backend: Arc<BackendSlot>,
    pub device: DeviceChoice,
    /// Kernels that no VDevice places run on the GPU (when one is open): `Gpu`, and
    /// `Auto` unless a custom kernel executor was given.
    pub default_gpu: bool,
    pub profile: bool,
    /// Host time per kernel and packed function, while `profile` is on.
    pub host_profile: relax_jit::Profiler,
    pub stats: Stats,
    pub print: PrintSink,
    pub max_depth: usize,
    /// PrimFuncs reachable as `ExternFunc` through their `global_symbol`.
    pub prim_symbols: HashMap<String, GlobalVar>,
    /// Free variables of local functions, by the address of their `Function` node.
    free_var_cache: Mutex<rustc_hash::FxHashMap<usize, Arc<[Var]>>>,
    /// Memory plans of dataflow blocks, by the address of their bindings.
    release_plans: Mutex<rustc_hash::FxHashMap<usize, Arc<Vec<Vec<Var>>>>>,
    /// Which parameters each PrimFunc stores to (see [`Program::written_params`]).
    written_cache: Mutex<rustc_hash::FxHashMap<GlobalVar, Option<Arc<[bool]>>>>,
    /// Compiled kernels, by PrimFunc name and device (compiled on first use).
    kernels: Mutex<rustc_hash::FxHashMap<(GlobalVar, Place), KernelSlot>>,
    cache_kernels: bool,
}

impl Program {
    /// The compiled kernel of the PrimFunc `gv` for `place`: compiled on first use,
    /// once, even when several runs ask for it at the same time.
    pub(crate) fn kernel(
        &self,
        gv: &GlobalVar,
        func: &PrimFunc,
        place: Place,
        jit: Option<&Arc<Jit>>,
    ) -> Result<Compiled> {
        let name = gv.name();
        let compile = || -> std::result::Result<Compiled, BackendError> {
            let c = match place {
                Place::Host => {
                    let exec = self
                        .executor
                        .as_ref()
                        .ok_or_else(|| BackendError::from("no kernel executor is configured for this engine"))?;
                    exec.compile(name, func)?
                }
                Place::Gpu => {
                    let jit = jit.ok_or_else(|| BackendError::from("no GPU is available to this engine"))?;
                    GpuExecutor::new(jit.clone()).compile(name, func)?
                }
            };
            self.stats.kernels_compiled.fetch_add(1, Ordering::Relaxed);
            Ok(c)
        };
        let compiled = if self.cache_kernels {
            let slot = self
                .kernels
                .lock()
                .map_err(|_| EngineError::Internal("kernel cache lock poisoned".into()))?
                .entry((gv.clone(), place))
                .or_default()
                .clone();
            let mut fresh = false;
            let r = slot
                .get_or_init(|| {
                    fresh = true;
                    compile()
                })
                .clone();
            if !fresh {
                self.stats.kernel_cache_hits.fetch_add(1, Ordering::Relaxed);
            }
            r
        } else {
            compile()
        };
        compiled.map_err(|source| EngineError::Kernel {
            name: name.to_string(),
            source,
        })
    }

    /// The memory plan of a dataflow block (cached): after binding `i`, the dataflow
    /// variables in entry `i` are not used again, so their tensors are released and
    /// their storage can serve later bindings (the GPU buffer pool and the host
    /// allocator reuse it). Dataflow variables never leave their block, so a
    /// variable's last use in the block is its last use.
    pub(crate) fn release_plan(&self, block: &relax_ir::BindingBlock) -> Arc<Vec<Vec<Var>>> {
        let key = block.bindings.as_ptr() as usize;
        if let Ok(cache) = self.release_plans.lock() {
            if let Some(p) = cache.get(&key) {
                return p.clone();
            }
        }
        let mut last: HashMap<Var, usize> = HashMap::new();
        for (i, b) in block.bindings.iter().enumerate() {
            if b.var().is_dataflow() {
                last.insert(b.var().clone(), i);
            }
            relax_ir::visit::for_each_expr(b.value(), &mut |e| {
                if let relax_ir::ExprKind::Var(v) = e.kind() {
                    if v.is_dataflow() {
                        last.insert(v.clone(), i);
                    }
                }
            });
        }
        let mut plan = vec![Vec::new(); block.bindings.len()];
        for (v, i) in last {
            plan[i].push(v);
        }
        let plan = Arc::new(plan);
        if let Ok(mut cache) = self.release_plans.lock() {
            cache.insert(key, plan.clone());
        }
        plan
    }

    /// Which parameters of the PrimFunc `gv` its body stores to, computed once per
    /// PrimFunc; `None` when that cannot be told (every argument is then writable).
    pub(crate) fn written_params(&self, gv: &GlobalVar) -> Option<Arc<[bool]>> {
        if let Ok(cache) = self.written_cache.lock() {
            if let Some(w) = cache.get(gv) {
                return w.clone();
            }
        }
        let w: Option<Arc<[bool]>> = match self.module.functions.get(gv) {
            Some(BaseFunc::Prim(f)) => crate::interp::written_params(f).map(Arc::from),
            _ => None,
        };
        if let Ok(mut cache) = self.written_cache.lock() {
            cache.insert(gv.clone(), w.clone());
        }
        w
    }

    /// The free Relax variables of the function expression `e` (cached).
    pub(crate) fn free_vars_of(&self, e: &Expr) -> Arc<[Var]> {
        let key = Arc::as_ptr(&e.0) as usize;
        if let Ok(cache) = self.free_var_cache.lock() {
            if let Some(v) = cache.get(&key) {
                return v.clone();
            }
        }
        let vars: Arc<[Var]> = Arc::from(free_vars(e));
        if let Ok(mut cache) = self.free_var_cache.lock() {
            cache.insert(key, vars.clone());
        }
        vars
    }
}

/// The Relax runtime: holds configuration, the packed-function registry, the TIR
/// kernel executor and an optional GPU backend.
pub struct Engine {
    config: EngineConfig,
    registry: Arc<PackedRegistry>,
    executor: Option<Arc<dyn KernelExecutor>>,
    /// Set by [`Engine::with_kernel_executor`]: kernels without a placement then stay
    /// with that executor under `DeviceChoice::Auto`.
    custom_executor: bool,
    backend: Arc<BackendSlot>,
    print: PrintSink,
    passes: Vec<PreparePass>,
    /// Passes inserted into the pipeline before a named pass.
    inserted: Vec<(String, Arc<dyn relax_transform::Pass>)>,
}

impl Engine {
    /// An engine with `config`. With `DeviceChoice::Auto` the first wgpu adapter is
    /// opened on first use and runs the kernels no host VDevice claims (the JIT's host
    /// executor runs everything when there is no adapter); `DeviceChoice::Gpu`
    /// requires an adapter at load; `DeviceChoice::Cpu` keeps everything on the host.
    pub fn new(config: EngineConfig) -> Engine {
        let engine = Engine {
            backend: Arc::new(BackendSlot::new(&config)),
            config,
            registry: Arc::new(PackedRegistry::default()),
            executor: Some(Arc::new(relax_jit::HostExecutor)),
            custom_executor: false,
            print: Arc::new(|s: &str| println!("{s}")),
            passes: Vec::new(),
            inserted: Vec::new(),
        };
        crate::builtins::register_standard_packed(&engine.registry);
        crate::host_lib::register(&engine.registry);
        engine
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Use `executor` to run TIR PrimFuncs placed on the host (`call_tir` and direct
    /// PrimFunc calls whose tensors are not on the GPU).
    pub fn with_kernel_executor(mut self, executor: Arc<dyn KernelExecutor>) -> Engine {
        self.executor = Some(executor);
        self.custom_executor = true;
        self
    }

    /// Use `backend` for device memory (instead of opening a GPU on first use):
    /// tensors moved with `to_vdevice` to a VDevice it accepts live in its memory
    /// (unless the engine is configured for the CPU).
    pub fn with_backend(mut self, backend: Arc<dyn DeviceBackend>) -> Engine {
        let slot = BackendSlot::new(&self.config);
        let _ = slot.cell.set(Ok(Opened::new(backend, &self.config.compile)));
        self.backend = Arc::new(slot);
        self
    }

    /// Run on a GPU (the first adapter whose name contains `adapter`, or the best one):
    /// the engine is configured for [`DeviceChoice::Gpu`], so PrimFuncs not placed on a
    /// host VDevice become WGSL kernels through the JIT and their tensors live in GPU
    /// memory. Fails when no GPU can be opened.
    pub fn with_gpu(mut self, adapter: Option<&str>) -> Result<Engine> {
        let gpu = GpuBackend::open_with_limit(adapter, self.config.memory_limit_bytes)
            .map_err(|e| EngineError::Device(e.into()))?;
        self.config.device = DeviceChoice::Gpu;
        Ok(self.with_backend(Arc::new(gpu)))
    }

    /// Where tensors and kernels go, in words: the GPU adapter's name, or why
    /// computation stays on the host (this opens the GPU unless configured for the CPU).
    pub fn device_summary(&self) -> String {
        self.backend.describe()
    }

    /// The wgpu runtime the engine uses, if it has opened one (or can).
    pub fn gpu_runtime(&self) -> Option<GpuRuntime> {
        self.backend.get().ok().flatten().and_then(|o| o.gpu.map(|(rt, _)| rt))
    }

    /// Send `R.print` output to `sink` instead of standard output.
    pub fn with_print_sink(mut self, sink: impl Fn(&str) + Send + Sync + 'static) -> Engine {
        self.print = Arc::new(sink);
        self
    }

    /// Append a step to the preparation pipeline run by [`Engine::load`].
    pub fn with_prepare_pass(mut self, pass: PreparePass) -> Engine {
        self.passes.push(pass);
        self
    }

    /// Insert `pass` into the preparation pipeline before the pass named `before`
    /// (for example a library-dispatch pass before `legalize`); at the end of the
    /// built-in passes when there is none of that name.
    pub fn with_pass_before(mut self, before: &str, pass: Arc<dyn relax_transform::Pass>) -> Engine {
        self.inserted.push((before.to_string(), pass));
        self
    }

    /// Whether kernels and tensors that no VDevice places run on the GPU: always with
    /// [`DeviceChoice::Gpu`], never with `Cpu`; with `Auto` when an adapter that is not
    /// a CPU-type device exists (this opens it) and no custom kernel executor was given.
    pub fn unplaced_on_gpu(&self) -> bool {
        match self.config.device {
            DeviceChoice::Gpu => true,
            DeviceChoice::Cpu => false,
            DeviceChoice::Auto => !self.custom_executor && self.backend.auto_prefers_device(),
        }
    }

    /// The [`relax_transform::PassContext`] this engine's configuration stands for:
    /// opt level from `check`/`legalize`/`optimize`, the host library, memory plan,
    /// attention fusion and lenient switches, where unplaced tensors live, verification
    /// and IR dumps.
    pub fn pass_context(&self) -> relax_transform::PassContext {
        use relax_transform::registry::opt;
        let c = &self.config;
        let mut ctx = relax_transform::PassContext {
            opt_level: match (c.legalize, c.optimize) {
                (false, _) => opt::CHECK,
                (true, false) => opt::LEGALIZE,
                (true, true) => opt::OPTIMIZE,
            },
            check: c.check,
            host_library: c.host_library,
            static_memory_plan: c.static_memory_plan,
            fuse_attention_gpu: c.fuse_attention,
            fuse_attention_host: c.fuse_attention_host,
            fuse_attention_decode: c.fuse_attention_decode,
            unplaced_on_host: !self.unplaced_on_gpu(),
            lenient: None,
            verify: c
                .verify_passes
                .unwrap_or_else(relax_transform::config::verify_passes_default),
            instruments: Vec::new(),
        };
        if c.lenient {
            let registry = self.registry.clone();
            ctx.lenient = Some(Arc::new(move |name: &str| {
                registry.get(name).is_some_and(|f| f.purity() == Purity::Pure)
            }));
        }
        if let Some(dir) = &c.dump_ir {
            ctx.instruments
                .push(Arc::new(relax_transform::instrument::DumpIr::new(dir.clone())));
        }
        ctx
    }

    /// The preparation pipeline [`Engine::load`] runs: the one built by
    /// [`relax_transform::build_pipeline`] for [`Engine::pass_context`], with the passes
    /// inserted by [`Engine::with_pass_before`], then those added with
    /// [`Engine::with_prepare_pass`] in order.
    pub fn pipeline(&self) -> relax_transform::Pipeline {
        let mut p = relax_transform::build_pipeline(&self.pass_context());
        for (before, pass) in &self.inserted {
            p.insert_before(before, pass.clone());
        }
        for (i, pass) in self.passes.iter().enumerate() {
            let pass = pass.clone();
            p.push(relax_transform::pass_fn(
                &format!("prepare-pass-{i}"),
                move |m: &IRModule| pass(m.clone()),
            ));
        }
        p
    }

    /// Register `func` under the global symbol `name` (replacing an earlier one).
    /// Modules loaded before or after see it.
    pub fn register_packed(
        &self,
        name: &str,
        purity: Purity,
        func: impl Fn(&[Value]) -> Result<Value> + Send + Sync + 'static,
    ) {
        self.registry.register(PackedFunc::new(name, purity, func));
    }

    /// The registered packed function `name`.
    pub fn packed(&self, name: &str) -> Result<PackedFunc> {
        self.registry.lookup(name)
    }

    /// Prepare `module` for execution: the preparation passes, then the run-time
    /// indexes. The result can be run many times, from several threads.
    pub fn load(&self, module: &IRModule) -> Result<Loaded> {
        if self.config.device == DeviceChoice::Gpu {
            self.backend.get()?;
        }
        let (module, pass_timings) = self.prepare(module.clone())?;
        if self.config.compile.prewarm && self.unplaced_on_gpu() {
            if let Ok(Some(Opened {
                gpu: Some((_, jit)), ..
            })) = self.backend.get()
            {
                crate::gpu::prewarm(&jit, &module, &self.config.compile);
            }
        }
        let prim_symbols = module
            .functions
            .iter()
            .filter_map(|(g, f)| match f {
                BaseFunc::Prim(p) => p.attrs.get_str("global_symbol").map(|s| (s.to_string(), g.clone())),
                BaseFunc::Relax(_) => None,
            })
            .collect();
        Ok(Loaded {
            program: Arc::new(Program {
                module,
                registry: self.registry.clone(),
                executor: self.executor.clone(),
                backend: self.backend.clone(),
                device: self.config.device,
                default_gpu: self.unplaced_on_gpu(),
                profile: self.config.profile,
                host_profile: relax_jit::Profiler::default(),
                stats: Stats::default(),
                print: self.print.clone(),
                max_depth: self.config.max_call_depth,
                prim_symbols,
                free_var_cache: Mutex::default(),
                release_plans: Mutex::default(),
                written_cache: Mutex::default(),
                kernels: Mutex::default(),
                cache_kernels: self.config.cache_kernels,
            }),
            stack_size: self.config.stack_size,
            spin_threads: self.config.spin_threads,
            pass_timings,
        })
    }

    /// Run [`Engine::pipeline`] on `module`; a failing pass rejects the module.
    fn prepare(&self, module: IRModule) -> Result<(IRModule, Vec<relax_transform::PassTiming>)> {
        self.pipeline().run_timed(module).map_err(|e| {
            if e.pass == "check" || e.pass.starts_with("prepare-pass-") {
                EngineError::Prepare(e.diagnostics)
            } else {
                EngineError::Prepare(e.into_diagnostics())
            }
        })
    }

    /// Load `module` and call its function `func` once.
    pub fn run(&self, module: &IRModule, func: &str, args: &[Value]) -> Result<Value> {
        self.load(module)?.run(func, args)
    }
}

impl Default for Engine {
    fn default() -> Engine {
        Engine::new(EngineConfig::default())
    }
}

/// A prepared module. `Send + Sync`: share it (`Arc<Loaded>` or `&Loaded` in scoped
/// threads) and run it concurrently.
pub struct Loaded {
    program: Arc<Program>,
    stack_size: usize,
    spin_threads: bool,
    pass_timings: Vec<relax_transform::PassTiming>,
}

impl Loaded {
    /// The prepared module.
    pub fn module(&self) -> &IRModule {
        &self.program.module
    }

    /// How long each preparation pass took when the module was loaded.
    pub fn pass_timings(&self) -> &[relax_transform::PassTiming] {
        &self.pass_timings
    }

    /// Call the public Relax function `func` with `args`; returns once the call's
    /// device work has completed.
    pub fn run(&self, func: &str, args: &[Value]) -> Result<Value> {
        let gv = GlobalVar::new(func);
        match self.program.module.functions.get(&gv) {
            Some(BaseFunc::Relax(f)) if f.private => return Err(EngineError::NotAnEntryPoint(func.to_string())),
            Some(BaseFunc::Relax(_)) => {}
            Some(BaseFunc::Prim(_)) => {
                return Err(EngineError::Type(format!(
                    "`{func}` is a TIR PrimFunc; entry points are Relax functions"
                )))
            }
            None => return Err(EngineError::UnknownFunction(func.to_string())),
        }
        let args = args.to_vec();
        let result = self.on_run_thread(move |it| {
            let args = it.place_entry_args(&gv, args)?;
            it.call_global(&gv, args)
        });
        let result = result.and_then(|v| self.synchronize().map(|()| v));
        if result.is_ok() {
            self.program.stats.runs.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    /// Wait until the GPU work submitted so far has completed (nothing to do when no
    /// GPU is open). [`Loaded::run`] calls it before returning, so a run's wall time
    /// is its time to completion and its device errors surface as its own.
    pub fn synchronize(&self) -> Result<()> {
        if let Some(Ok(Opened { gpu: Some((rt, _)), .. })) = self.program.backend.cell.get() {
            rt.synchronize().map_err(|e| EngineError::Device(e.into()))?;
        }
        Ok(())
    }

    /// A copy of `tensor` placed on the module's VDevice `vdevice` (`"kind:index:scope"`,
    /// as in `R.to_vdevice`): in GPU memory for a GPU kind when the engine has a GPU,
    /// host memory otherwise. Use it to keep weights resident across runs; the copy is
    /// counted in [`Loaded::stats`].
    pub fn to_vdevice(&self, tensor: &crate::value::Tensor, vdevice: &str) -> Result<crate::value::Tensor> {
        let dst = crate::device::resolve_vdevice(&self.program.module, vdevice).map_err(EngineError::Invalid)?;
        let t = tensor.clone();
        let v = self.on_run_thread(move |it| it.copy_to_vdevice(&t, dst).map(Value::Tensor))?;
        match v {
            Value::Tensor(t) => Ok(t),
            other => Err(EngineError::Internal(format!(
                "to_vdevice produced {}",
                other.describe()
            ))),
        }
    }

    /// Call a function value (a closure returned by an earlier run, a packed function).
    pub fn call(&self, callee: &Value, args: &[Value]) -> Result<Value> {
        let callee = callee.clone();
        let args = args.to_vec();
        self.on_run_thread(move |it| it.call_value(&callee, args))
    }

    /// A snapshot of the statistics of all runs so far.
    pub fn stats(&self) -> RunStats {
        self.program.stats.snapshot()
    }

    /// Counters of the GPU runtime this module's tensors use (device memory held by
    /// the buffer pool, bytes moved, pipelines), when a GPU is open.
    pub fn gpu_runtime_stats(&self) -> Option<RuntimeStats> {
        let opened = self.program.backend.get().ok().flatten()?;
        opened.gpu.map(|(rt, _)| rt.stats())
    }

    /// Counters of the JIT that compiles this module's GPU kernels, when a GPU is open.
    pub fn jit_counters(&self) -> Option<relax_jit::JitCounters> {
        let opened = self.program.backend.get().ok().flatten()?;
        opened.gpu.map(|(_, jit)| jit.counters())
    }

    /// GPU time per PrimFunc, most first, recorded while [`EngineConfig::profile`]
    /// is on (empty without a GPU).
    pub fn gpu_profile(&self) -> Vec<relax_jit::KernelProfile> {
        let opened = self.program.backend.get().ok().flatten();
        opened
            .and_then(|o| o.gpu)
            .map(|(_, jit)| jit.profile())
            .unwrap_or_default()
    }

    /// Host time per PrimFunc and per packed function (the host kernel library's
    /// calls), most first, recorded while [`EngineConfig::profile`] is on (wall time).
    pub fn host_profile(&self) -> Vec<relax_jit::KernelProfile> {
        self.program.host_profile.snapshot()
    }

    /// Evaluate on a thread with the configured stack (deep recursion needs it): a
    /// thread of the run pool (see [`run_on_pool`]), reused for every run (spawning a
    /// thread per run would cost more than running a small program). A panic is a
    /// bug and propagates to the caller like any Rust panic.
    fn on_run_thread(&self, f: impl FnOnce(&mut Interp) -> Result<Value> + Send + 'static) -> Result<Value> {
        let program = self.program.clone();
        let body = move || {
            let mut it = Interp::new(program);
            let v = f(&mut it);
            // A GPU kernel's out-of-bounds record fails the work that made it; always
            // look (and clear), so a failed call's record never reaches the next.
            let bounds = it.check_gpu_bounds();
            let v = v?;
            bounds.map(|()| v)
        };
        // Spinning threads would take the CPU from a GPU driver that runs on it
        // (lavapipe) and only wait on a real GPU: host runs only.
        let gpu = matches!(self.program.backend.cell.get(), Some(Ok(Opened { gpu: Some(_), .. })));
        if self.stack_size == 0 {
            body()
        } else {
            run_on_pool(self.stack_size, self.spin_threads && !gpu, body)
        }
    }
}

/// The rayon pool whose threads (with `stack_size` stacks) evaluate runs, one per
/// stack size in use, created on first use with rayon's default number of threads.
fn run_pool(stack_size: usize) -> Option<Arc<rayon::ThreadPool>> {
    static POOLS: Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());
    let mut pools = POOLS.lock().ok()?;
    if let Some((_, p)) = pools.iter().find(|(s, _)| *s == stack_size) {
        return Some(p.clone());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .stack_size(stack_size)
        .thread_name(|i| format!("relax-run-{i}"))
        .build()
        .ok()?;
    let pool = Arc::new(pool);
    pools.push((stack_size, pool.clone()));
    Some(pool)
}

/// Run `body` on a thread of the run pool with a `stack_size` stack (and with
/// `spin`, the pool's other threads kept spinning meanwhile: [`KeepWarm`]). The host kernel
/// library's parallel loops then run on that pool from inside it: the run's own
/// thread takes part in the work, and no kernel pays for handing itself over to
/// another thread and waiting to be woken (tens of microseconds per call). Runs
/// started from several threads at once share the pool's threads. When the pool
/// cannot be created the run stays on the calling thread.
fn run_on_pool<T: Send>(stack_size: usize, spin: bool, body: impl FnOnce() -> T + Send) -> T {
    match run_pool(stack_size) {
        Some(pool) => pool.install(|| {
            let _warm = KeepWarm::start(spin);
            body()
        }),
        None => body(),
    }
}

thread_local! {
    /// Whether this thread is evaluating a run (see [`KeepWarm`]).
    static IN_RUN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// While a run lasts, the run pool's other threads keep looking for work instead
/// of going to sleep between kernels: a parallel kernel then starts at once on
/// every thread, where waking a sleeping thread costs tens of microseconds on a
/// virtual machine, as much as a small matrix product takes (ONNX Runtime's
/// thread pool spins between operators too). Each idle thread runs one spinner
/// job, which executes whatever work the pool has (`rayon::yield_now`) until the
/// run ends; a spinner that lands on a thread busy with a run returns at once, so
/// a run never waits on another's spinner.
struct KeepWarm {
    /// Cleared when the run ends; `None` when no spinner was started.
    running: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Whether this is the thread's outermost run (it clears [`IN_RUN`] at the end).
    outermost: bool,
}

impl KeepWarm {
    /// Mark this thread as running, and with `spin`, start the spinners.
    fn start(spin: bool) -> KeepWarm {
        use std::sync::atomic::AtomicBool;
        let outermost = !IN_RUN.with(|r| r.replace(true));
        let others = rayon::current_num_threads().saturating_sub(1);
        if !spin || !outermost || others == 0 {
            return KeepWarm {
                running: None,
                outermost,
            };
        }
        let running = Arc::new(AtomicBool::new(true));
        for _ in 0..others {
            let running = running.clone();
            rayon::spawn(move || {
                if IN_RUN.with(|r| r.get()) {
                    return;
                }
                // Look for work every few hundred cycles: looking touches the
                // pool's shared queues, which slows the run's own thread when done
                // without a pause.
                while running.load(Ordering::Relaxed) {
                    if rayon::yield_now() != Some(rayon::Yield::Executed) {
                        for _ in 0..64 {
                            std::hint::spin_loop();
                        }
                    }
                }
            });
        }
        KeepWarm {
            running: Some(running),
            outermost,
        }
    }
}

impl Drop for KeepWarm {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.store(false, Ordering::Relaxed);
        }
        if self.outermost {
            IN_RUN.with(|r| r.set(false));
        }
    }
}
