//! Error paths (each an `Err` with a clear message, never a panic) and concurrent use
//! of one loaded module, on the host and (when an adapter exists) on the GPU.

mod common;

use std::sync::Arc;

use common::text::{engines, f32_tensor, f32_values, loaded_everywhere, parse};
use relax_engine::{DeviceChoice, Engine, EngineConfig, EngineError};
use relax_ir::BaseFunc;

/// `main(x)` returning `call_pure_packed(symbol, x)` for a float32 `x` of 2 elements.
fn packed_call_program(symbol: &str) -> String {
    format!(
        r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        y = R.call_pure_packed("{symbol}", x, sinfo_args=R.Tensor((2,), dtype="float32"))
        return y
"#
    )
}

const MATCH_CAST: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        y = R.match_cast(x, R.Tensor((4,), dtype="float32"))
        z = R.add(y, y)
        return z
"#;

#[test]
fn failed_match_cast_names_the_variable_and_both_shapes() {
    for (dev, loaded) in loaded_everywhere(MATCH_CAST) {
        let ok = loaded.run("main", &[f32_tensor(&[4], |i| i as f32)]).unwrap();
        assert_eq!(f32_values(&ok), vec![0.0, 2.0, 4.0, 6.0]);
        let err = loaded.run("main", &[f32_tensor(&[5], |i| i as f32)]).unwrap_err();
        assert!(matches!(err, EngineError::StructMismatch { .. }), "{dev}: {err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("`y`") && msg.contains('4') && msg.contains('5'),
            "{dev}: {msg}"
        );
    }
}

const ADD: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        z = R.add(x, y)
        return z
"#;

#[test]
fn wrong_input_shape_names_the_argument() {
    for (dev, loaded) in loaded_everywhere(ADD) {
        let err = loaded
            .run("main", &[f32_tensor(&[3, 2], |_| 1.0), f32_tensor(&[2, 3], |_| 1.0)])
            .unwrap_err();
        assert!(matches!(err, EngineError::StructMismatch { .. }), "{dev}: {err:?}");
        let msg = err.to_string();
        assert!(msg.contains("`x`") && msg.contains("main"), "{dev}: {msg}");
        assert!(msg.contains('3') && msg.contains('2'), "{dev}: {msg}");
        let err = loaded.run("main", &[f32_tensor(&[2, 3], |_| 1.0)]).unwrap_err();
        assert!(
            matches!(
                err,
                EngineError::Arity {
                    expected: 2,
                    actual: 1,
                    ..
                }
            ),
            "{dev}: {err:?}"
        );
    }
}

#[test]
fn unknown_extern_symbol_is_named() {
    let src = &packed_call_program("my.missing_kernel");
    let module = parse(src);
    for (dev, e) in engines() {
        let err = e.run(&module, "main", &[f32_tensor(&[2], |_| 0.0)]).unwrap_err();
        assert!(
            matches!(&err, EngineError::UnknownPackedFunc(s) if s == "my.missing_kernel"),
            "{dev}: {err:?}"
        );
        assert!(err
            .to_string()
            .contains("no packed function is registered under the symbol `my.missing_kernel`"));
    }
}

#[test]
fn device_out_of_memory_is_an_error() {
    if let Err(e) = relax_gpu_runtime::GpuRuntime::shared_default() {
        eprintln!("no GPU adapter: out-of-memory not checked ({e})");
        return;
    }
    // A 64 KiB device; the program needs 1 MiB outputs.
    let small = Engine::new(EngineConfig {
        device: DeviceChoice::Gpu,
        memory_limit_bytes: Some(64 << 10),
        ..EngineConfig::default()
    });
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((512, 512), dtype="float32")) -> R.Tensor((512, 512), dtype="float32"):
        y = R.add(x, x)
        return y

    @R.function
    def tiny(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        y = R.add(x, x)
        return y
"#;
    let loaded = small.load(&parse(src)).unwrap();
    let err = loaded.run("main", &[f32_tensor(&[512, 512], |_| 1.0)]).unwrap_err();
    assert!(
        matches!(err, EngineError::Device(_) | EngineError::Kernel { .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("out of memory") || msg.contains("memory limit"), "{msg}");
    assert!(msg.contains("1048576") || msg.contains("bytes"), "{msg}");
    // The GPU runtime's typed error is reachable through the source chain, sizes included.
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    let mut oom = None;
    while let Some(c) = cause {
        if let Some(g) = c.downcast_ref::<relax_gpu_runtime::GpuError>() {
            oom = Some(g.clone());
        }
        cause = c.source();
    }
    match oom {
        Some(relax_gpu_runtime::GpuError::OutOfMemory { requested, limit, .. }) => {
            assert!(requested >= 1 << 20, "requested {requested}");
            assert_eq!(limit, Some(64 << 10));
        }
        other => panic!("no GpuError::OutOfMemory in the source chain of {err:?}: {other:?}"),
    }
    // The engine still works for what fits.
    let out = loaded.run("tiny", &[f32_tensor(&[4], |i| i as f32)]).unwrap();
    assert_eq!(f32_values(&out), vec![0.0, 2.0, 4.0, 6.0]);
}

const THREE_OPS: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32"), y: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        with R.dataflow():
            a = R.add(x, y)
            b = R.multiply(a, x)
            c = R.matmul(b, y)
            R.output(c)
        return c
"#;

fn reference(x: &[f32], y: &[f32]) -> Vec<f32> {
    let b: Vec<f32> = x.iter().zip(y).map(|(x, y)| (x + y) * x).collect();
    let mut c = vec![0.0f32; 16];
    for i in 0..4 {
        for j in 0..4 {
            c[i * 4 + j] = (0..4).map(|k| b[i * 4 + k] * y[k * 4 + j]).sum();
        }
    }
    c
}

#[test]
fn eight_threads_share_one_loaded_module() {
    for (dev, loaded) in loaded_everywhere(THREE_OPS) {
        let loaded = Arc::new(loaded);
        let prim_funcs = loaded
            .module()
            .functions
            .values()
            .filter(|f| matches!(f, BaseFunc::Prim(_)))
            .count() as u64;
        // add and multiply are fused into one PrimFunc by the default pipeline; on the
        // host, all three run in the host kernel library.
        let want = if dev == "cpu" { 0 } else { 2 };
        assert_eq!(prim_funcs, want, "{dev}: PrimFuncs after legalization and fusion");
        let xs: Vec<f32> = (0..16).map(|i| (i as f32) * 0.25 - 1.0).collect();
        let ys: Vec<f32> = (0..16).map(|i| 1.0 - (i % 5) as f32 * 0.5).collect();
        let want = reference(&xs, &ys);
        let (x, y) = (f32_tensor(&[4, 4], |i| xs[i]), f32_tensor(&[4, 4], |i| ys[i]));
        let results: Vec<Vec<Vec<f32>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    let (loaded, x, y) = (loaded.clone(), x.clone(), y.clone());
                    s.spawn(move || {
                        (0..100)
                            .map(|_| {
                                let out = loaded.run("main", &[x.clone(), y.clone()]).unwrap();
                                out.as_tensor()
                                    .unwrap()
                                    .to_array::<f32>()
                                    .unwrap()
                                    .iter()
                                    .copied()
                                    .collect()
                            })
                            .collect()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let first = &results[0][0];
        for (i, (g, w)) in first.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-5 * w.abs() + 1e-6, "{dev}: element {i}: {g} vs {w}");
        }
        for r in results.iter().flatten() {
            assert_eq!(r, first, "{dev}: every run gives the same bits");
        }
        let s = loaded.stats();
        assert_eq!(s.runs, 800, "{dev}");
        assert_eq!(s.kernels_run, 800 * prim_funcs, "{dev}");
        assert_eq!(
            s.kernels_compiled, prim_funcs,
            "{dev}: each PrimFunc compiled exactly once: {s:?}"
        );
        assert_eq!(s.kernel_cache_hits, 800 * prim_funcs - prim_funcs, "{dev}: {s:?}");
        if dev == "gpu" {
            assert_eq!(s.gpu_kernels_run, 800 * prim_funcs, "{s:?}");
            let jit = loaded.jit_counters().unwrap();
            assert_eq!(jit.gpu_programs_compiled, prim_funcs, "{jit:?}");
        }
    }
}

/// No `catch_unwind` turns a panic into an error: a panicking packed function (a bug
/// in user code) propagates to the caller, and the engine runs the next program.
#[test]
fn a_panic_in_a_packed_function_propagates_and_the_engine_stays_usable() {
    let src = &packed_call_program("test.boom");
    let module = std::sync::Arc::new(parse(src));
    let engine = std::sync::Arc::new(relax_engine::Engine::new(relax_engine::EngineConfig {
        device: relax_engine::DeviceChoice::Cpu,
        ..relax_engine::EngineConfig::default()
    }));
    let armed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let a = armed.clone();
    engine.register_packed("test.boom", relax_engine::Purity::Pure, move |args| {
        if a.load(std::sync::atomic::Ordering::SeqCst) {
            panic!("boom from a packed function");
        }
        Ok(args[0].clone())
    });
    let (e, m) = (engine.clone(), module.clone());
    let joined = std::thread::spawn(move || e.run(&m, "main", &[f32_tensor(&[2], |i| i as f32)])).join();
    assert!(
        joined.is_err(),
        "the panic must reach the caller, not become an error value"
    );
    armed.store(false, std::sync::atomic::Ordering::SeqCst);
    let out = engine
        .run(&module, "main", &[f32_tensor(&[2], |i| i as f32 + 1.0)])
        .expect("the engine still runs");
    let t = out.as_tensor().expect("tensor").to_array::<f32>().expect("f32");
    assert_eq!(t.iter().copied().collect::<Vec<_>>(), [1.0, 2.0]);
}

const BIG_MATMUL: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 256), dtype="float32"), w: R.Tensor((256, 256), dtype="float32")) -> R.Tensor((64, 256), dtype="float32"):
        with R.dataflow():
            a = R.matmul(x, w)
            b = R.matmul(a, w)
            R.output(b)
        return b
"#;

/// Process CPU time (user + system) in clock ticks, from `/proc/self/stat`.
#[cfg(target_os = "linux")]
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which may hold spaces) start after ") ".
    let rest = &stat[stat.rfind(") ").unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// Host runs keep the run pool's other threads spinning while they last (parallel
/// matrix products start without waking a sleeping thread): runs from several
/// threads at once still finish with the right values, and once they are over no
/// thread keeps spinning (the process uses next to no CPU while it sleeps).
#[test]
fn spinning_pool_threads_stop_when_host_runs_end() {
    let x = f32_tensor(&[64, 256], |i| ((i % 13) as f32 - 6.0) * 0.01);
    let w = f32_tensor(&[256, 256], |i| ((i % 7) as f32 - 3.0) * 0.02);
    let mut results = vec![];
    for spin_threads in [true, false] {
        let engine = Engine::new(EngineConfig {
            device: DeviceChoice::Cpu,
            spin_threads,
            ..EngineConfig::default()
        });
        let loaded = Arc::new(engine.load(&parse(BIG_MATMUL)).unwrap());
        let first = f32_values(&loaded.run("main", &[x.clone(), w.clone()]).unwrap());
        std::thread::scope(|s| {
            for _ in 0..4 {
                let (loaded, x, w, first) = (loaded.clone(), x.clone(), w.clone(), &first);
                s.spawn(move || {
                    for _ in 0..25 {
                        let out = loaded.run("main", &[x.clone(), w.clone()]).unwrap();
                        assert_eq!(&f32_values(&out), first);
                    }
                });
            }
        });
        results.push(first);
    }
    assert_eq!(results[0], results[1], "spinning or not, the same bits");
    #[cfg(target_os = "linux")]
    {
        std::thread::sleep(std::time::Duration::from_millis(100));
        // A spinner left running would use every half second whole (50 ticks at the
        // usual 100 Hz); an idle process uses about none. The other tests of this
        // binary may still be running beside this one, so a window they fill is
        // measured again: one quiet window out of five suffices, a stuck spinner
        // fills them all.
        let mut used = Vec::new();
        for _ in 0..5 {
            let before = cpu_ticks();
            std::thread::sleep(std::time::Duration::from_millis(500));
            used.push(cpu_ticks() - before);
            if used.last().is_some_and(|&u| u < 15) {
                break;
            }
        }
        assert!(
            used.last().is_some_and(|&u| u < 15),
            "{used:?} ticks of CPU time per idle half second: a pool thread keeps spinning"
        );
    }
}
