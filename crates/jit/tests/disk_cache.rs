//! The persistent kernel cache: programs stored by one JIT and taken by another
//! (same WGSL, same results), damaged and foreign entries as misses, concurrent
//! writers (threads and processes), format versions and the size bound. Every test
//! uses its own temporary folder. GPU parts skip when there is no adapter.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use relax_ir::{DataType, PrimFunc};
use relax_jit::disk_cache::{decode_envelope, encode_envelope, DiskCache, EntryKind, FORMAT_VERSION};
use relax_jit::{HostTensor, Jit};

const F32: DataType = DataType::FLOAT32;

/// A fresh folder under the system's temporary folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let d = std::env::temp_dir().join(format!("relax-disk-cache-{what}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&d).expect("temp dir");
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A GPU JIT on the shared adapter using the cache in `dir`.
fn cached_jit(dir: &Path) -> Option<Jit> {
    let rt = shared_runtime()?;
    Some(Jit::new(Some(rt)).with_disk_cache(Some(Arc::new(DiskCache::new(dir)))))
}

/// The kernel entry files in `dir`.
fn kernel_files(dir: &Path) -> Vec<PathBuf> {
    let d = dir.join(format!("v{FORMAT_VERSION}")).join("kernels");
    let mut v: Vec<PathBuf> = std::fs::read_dir(d)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|x| x == "bin"));
    v.sort();
    v
}

/// Functions with constant shapes, and a softmax over a symbolic row count.
fn functions() -> (Vec<PrimFunc>, PrimFunc) {
    let mut fs = Vec::new();
    fs.extend(legalized(
        "x: R.Tensor((8, 32), \"float32\"), w: R.Tensor((32, 24), \"float32\")",
        "y = R.matmul(x, w)",
    ));
    fs.extend(legalized(
        "x: R.Tensor((1, 4, 9, 9), \"float32\"), w: R.Tensor((6, 4, 3, 3), \"float32\")",
        "y = R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1])",
    ));
    fs.extend(legalized("x: R.Tensor((7, 33), \"float32\")", "y = R.sum(x, axis=[1])"));
    fs.extend(legalized("x: R.Tensor((5, 9), \"float32\")", "y = R.cumsum(x, axis=1)"));
    fs.extend(legalized("x: R.Tensor((6, 6), \"float32\")", "y = R.tril(x, 1)"));
    fs.extend(legalized(
        "x: R.Tensor((3, 5), \"float32\"), z: R.Tensor((5,), \"float32\")",
        "y = R.add(x, z)",
    ));
    let sym = legalized("x: R.Tensor((\"n\", 16), \"float32\")", "y = R.nn.softmax(x, axis=-1)");
    (fs, sym.into_iter().next().expect("a softmax PrimFunc"))
}

/// The output of `f` (float32, `out_shape`) on `inputs` with `jit`'s GPU.
fn gpu_out(jit: &Jit, f: &PrimFunc, inputs: &[HostTensor], out_shape: &[i64]) -> Vec<f64> {
    run_output(Some(jit), f, inputs, F32, out_shape)
}

fn inputs_of(f: &PrimFunc, seed: u64) -> (Vec<HostTensor>, Vec<i64>) {
    let mut params = buffer_params(f);
    let (_, out) = params.pop().expect("an output");
    let shapes: Vec<Vec<i64>> = params.into_iter().map(|(_, s)| s).collect();
    (random_f32_inputs(&shapes, |i| seed + i as u64, -1.0, 1.0), out)
}

#[test]
fn a_second_jit_takes_the_stored_programs() {
    let dir = TempDir::new("reuse");
    let Some(first) = cached_jit(&dir.0) else { return };
    let (fs, softmax) = functions();
    let soft_in = random_f32_inputs(&[[5i64, 16]], |i| 90 + i as u64, -3.0, 3.0);
    let mut outs = Vec::new();
    let mut sources = Vec::new();
    for (i, f) in fs.iter().enumerate() {
        let (ins, out) = inputs_of(f, 10 * i as u64);
        outs.push(gpu_out(&first, f, &ins, &out));
        sources.push(first.gpu_program(f).expect("compiles").source.to_string());
    }
    outs.push(gpu_out(&first, &softmax, &soft_in, &[5, 16]));
    sources.push(first.gpu_program(&softmax).expect("compiles").source.to_string());
    let c1 = first.counters();
    assert_eq!(c1.disk_cache_hits, 0);
    assert_eq!(c1.disk_cache_misses, c1.gpu_programs_compiled);
    assert_eq!(
        c1.disk_cache_writes, c1.gpu_programs_compiled,
        "every program is stored"
    );
    assert_eq!(kernel_files(&dir.0).len() as u64, c1.disk_cache_writes);

    // A second JIT (as in a second process): every program from the cache, the same
    // WGSL and bindings, the same results, equal to the host's.
    let Some(second) = cached_jit(&dir.0) else { return };
    for (i, f) in fs.iter().enumerate() {
        let (ins, out) = inputs_of(f, 10 * i as u64);
        let got = gpu_out(&second, f, &ins, &out);
        assert_eq!(got, outs[i], "function {i}: results differ from the first JIT's");
        let host = run_output(None, f, &ins, F32, &out);
        assert_close(&got, &host, 1e-4, 1e-4, &format!("function {i} against the host"));
        assert_eq!(second.gpu_program(f).expect("compiles").source.to_string(), sources[i]);
    }
    let got = gpu_out(&second, &softmax, &soft_in, &[5, 16]);
    assert_eq!(&got, outs.last().expect("softmax output"));
    let host = run_output(None, &softmax, &soft_in, F32, &[5, 16]);
    assert_close(&got, &host, 1e-5, 1e-5, "softmax against the host");
    // Another row count: the same program, its shape variable bound at dispatch.
    let soft7 = random_f32_inputs(&[[7i64, 16]], |i| 70 + i as u64, -3.0, 3.0);
    let got7 = gpu_out(&second, &softmax, &soft7, &[7, 16]);
    assert_close(
        &got7,
        &run_output(None, &softmax, &soft7, F32, &[7, 16]),
        1e-5,
        1e-5,
        "softmax n=7",
    );
    assert_eq!(
        second.gpu_program(&softmax).expect("compiles").source.to_string(),
        *sources.last().expect("softmax source")
    );
    let c2 = second.counters();
    assert_eq!(c2.disk_cache_hits, c1.gpu_programs_compiled, "{c2:?}");
    assert_eq!(c2.disk_cache_misses, 0);
    assert_eq!(c2.disk_cache_writes, 0);
}

#[test]
fn damaged_entries_are_misses() {
    let dir = TempDir::new("damage");
    let Some(jit) = cached_jit(&dir.0) else { return };
    let f = matmul_func(4, 8, 5);
    let (ins, out) = inputs_of(&f, 3);
    let want = gpu_out(&jit, &f, &ins, &out);
    let files = kernel_files(&dir.0);
    assert_eq!(files.len(), 1);
    let path = &files[0];
    let good = std::fs::read(path).expect("entry");
    let (key, payload) = decode_envelope(&good).expect("a whole entry");
    let (key, payload) = (key.to_vec(), payload.to_vec());
    let mut other_key = key.clone();
    other_key.push(1);
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x40;
    let mut version = good.clone();
    version[8] = version[8].wrapping_add(1);
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("truncated header", good[..10].to_vec()),
        ("truncated payload", good[..good.len() / 2].to_vec()),
        ("one byte flipped", flipped),
        ("another format version", version),
        ("garbage", (0..5000u32).map(|i| (i * 37 % 251) as u8).collect()),
        (
            "a record that does not decode",
            encode_envelope(&key, b"not a program record"),
        ),
        (
            "a truncated record",
            encode_envelope(&key, &payload[..payload.len() / 3]),
        ),
        ("another key under the same name", encode_envelope(&other_key, &payload)),
    ];
    for (what, bytes) in damaged {
        std::fs::write(path, &bytes).expect("write damaged entry");
        let Some(fresh) = cached_jit(&dir.0) else { return };
        let got = gpu_out(&fresh, &f, &ins, &out);
        assert_eq!(got, want, "{what}");
        let c = fresh.counters();
        assert_eq!((c.disk_cache_hits, c.disk_cache_misses), (0, 1), "{what}: {c:?}");
        assert_eq!(c.disk_cache_writes, 1, "{what}: the entry is written again");
        // Rewritten whole, for the same key (the WGSL's local names may differ).
        let again = std::fs::read(path).expect("entry");
        assert_eq!(
            decode_envelope(&again).map(|(k, _)| k.to_vec()),
            Some(key.clone()),
            "{what}"
        );
    }
    // The rewritten entry serves the next JIT.
    let Some(fresh) = cached_jit(&dir.0) else { return };
    assert_eq!(gpu_out(&fresh, &f, &ins, &out), want);
    assert_eq!(fresh.counters().disk_cache_hits, 1);
}

#[test]
fn other_format_versions_are_ignored_and_cleared() {
    let dir = TempDir::new("version");
    let Some(jit) = cached_jit(&dir.0) else { return };
    let f = add_func(&[6, 7]);
    let (ins, out) = inputs_of(&f, 5);
    let want = gpu_out(&jit, &f, &ins, &out);
    // The same files under an older format's folder.
    let current = dir.0.join(format!("v{FORMAT_VERSION}"));
    let older = dir.0.join(format!("v{}", FORMAT_VERSION - 1));
    std::fs::rename(&current, &older).expect("rename");
    let unrelated = dir.0.join("notes.txt");
    std::fs::write(&unrelated, "not the cache's").expect("write");
    let Some(fresh) = cached_jit(&dir.0) else { return };
    assert_eq!(gpu_out(&fresh, &f, &ins, &out), want);
    let c = fresh.counters();
    assert_eq!((c.disk_cache_hits, c.disk_cache_misses, c.disk_cache_writes), (0, 1, 1));
    let cache = DiskCache::new(&dir.0);
    let info = cache.info();
    assert_eq!(info.kernel_entries, 1);
    assert!(info.other_bytes > 0, "{info:?}");
    let freed = cache.clear().expect("clear");
    assert!(freed > 0);
    let info = cache.info();
    assert_eq!((info.kernel_entries, info.kernel_bytes, info.other_bytes), (0, 0, 0));
    assert!(!older.exists() && !current.exists());
    assert!(unrelated.exists(), "clear leaves other files alone");
    // Clearing an empty or missing folder is fine.
    assert_eq!(cache.clear().expect("clear again"), 0);
    assert_eq!(DiskCache::new(dir.0.join("absent")).clear().expect("clear absent"), 0);
}

/// A payload every byte of which is `id`, of a length that names `id`.
fn payload(id: u8) -> Vec<u8> {
    vec![id; 20_000 + id as usize]
}

/// Whether `p` is one of the payloads written by the writers `ids`.
fn whole(p: &[u8], ids: &[u8]) -> bool {
    ids.iter().any(|&id| p == payload(id).as_slice())
}

#[test]
fn concurrent_writers_in_threads_leave_whole_entries() {
    let dir = TempDir::new("threads");
    let cache = Arc::new(DiskCache::new(&dir.0));
    let ids: Vec<u8> = (1..=6).collect();
    std::thread::scope(|s| {
        for &id in &ids {
            let cache = cache.clone();
            s.spawn(move || {
                for _ in 0..40 {
                    cache
                        .put(EntryKind::Kernels, "same", b"key", &payload(id))
                        .expect("put");
                }
            });
        }
        let cache = cache.clone();
        let ids = ids.clone();
        s.spawn(move || {
            for _ in 0..200 {
                if let Some(p) = cache.get(EntryKind::Kernels, "same", b"key") {
                    assert!(whole(&p, &ids), "a read saw a partial entry of {} bytes", p.len());
                }
            }
        });
    });
    let p = cache.get(EntryKind::Kernels, "same", b"key").expect("an entry");
    assert!(whole(&p, &ids));
    assert_eq!(cache.counters().rejected, 0);
    let info = cache.info();
    assert_eq!(info.kernel_entries, 1, "no temporary file is left: {info:?}");
    assert_eq!(info.other_bytes, 0, "{info:?}");

    // JITs in several threads compiling the same function into one folder.
    let Some(rt) = shared_runtime() else { return };
    let f = matmul_func(6, 10, 7);
    let (ins, out) = inputs_of(&f, 11);
    let host = run_output(None, &f, &ins, F32, &out);
    let results: Vec<Vec<f64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let rt = rt.clone();
                let (f, ins, out, dir) = (&f, &ins, &out, &dir.0);
                s.spawn(move || {
                    let jit = Jit::new(Some(rt)).with_disk_cache(Some(Arc::new(DiskCache::new(dir.join("jit")))));
                    gpu_out(&jit, f, ins, out)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    for r in &results {
        assert_close(r, &host, 1e-4, 1e-4, "matmul from a thread");
    }
    assert_eq!(kernel_files(&dir.0.join("jit")).len(), 1);
}

const CHILD_DIR: &str = "RELAX_DISK_CACHE_TEST_CHILD_DIR";
const CHILD_ID: &str = "RELAX_DISK_CACHE_TEST_CHILD_ID";

/// Run as a child process by `concurrent_writers_in_processes_leave_whole_entries`
/// (does nothing otherwise): writes its payload under the shared key many times.
#[test]
fn concurrent_writer_child() {
    let (Some(dir), Some(id)) = (std::env::var_os(CHILD_DIR), std::env::var(CHILD_ID).ok()) else {
        return;
    };
    let id: u8 = id.parse().expect("child id");
    let cache = DiskCache::new(PathBuf::from(dir));
    for _ in 0..150 {
        cache
            .put(EntryKind::Kernels, "same", b"key", &payload(id))
            .expect("put");
    }
}

#[test]
fn concurrent_writers_in_processes_leave_whole_entries() {
    let dir = TempDir::new("processes");
    let exe = std::env::current_exe().expect("test executable");
    let ids = [7u8, 8u8];
    let mut children: Vec<_> = ids
        .iter()
        .map(|id| {
            std::process::Command::new(&exe)
                .args(["--exact", "concurrent_writer_child", "--test-threads=1"])
                .env(CHILD_DIR, &dir.0)
                .env(CHILD_ID, id.to_string())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn a writer process")
        })
        .collect();
    let cache = DiskCache::new(&dir.0);
    let mut seen = 0;
    loop {
        if let Some(p) = cache.get(EntryKind::Kernels, "same", b"key") {
            assert!(whole(&p, &ids), "a read saw a partial entry of {} bytes", p.len());
            seen += 1;
        }
        if children.iter_mut().all(|c| c.try_wait().ok().flatten().is_some()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    for mut c in children {
        assert!(c.wait().expect("child").success(), "a writer process failed");
    }
    let p = cache.get(EntryKind::Kernels, "same", b"key").expect("an entry");
    assert!(whole(&p, &ids));
    assert!(seen > 0);
    assert_eq!(cache.counters().rejected, 0);
    assert_eq!(cache.info().other_bytes, 0, "no temporary file is left");
}

#[test]
fn the_size_bound_evicts_the_least_recently_used() {
    let dir = TempDir::new("bound");
    let entry = encode_envelope(b"k", &[0u8; 1000]).len() as u64;
    let cache = DiskCache::with_max_bytes(&dir.0, 10 * entry);
    let put = |i: usize| {
        cache
            .put(EntryKind::Kernels, &format!("e{i}"), b"k", &[i as u8; 1000])
            .expect("put")
    };
    for i in 0..10 {
        put(i);
        std::thread::sleep(Duration::from_millis(15));
    }
    assert_eq!(cache.info().kernel_entries, 10);
    // A hit makes entry 0 the most recently used.
    assert!(cache.get(EntryKind::Kernels, "e0", b"k").is_some());
    std::thread::sleep(Duration::from_millis(15));
    for i in 10..15 {
        put(i);
        std::thread::sleep(Duration::from_millis(15));
    }
    let info = cache.info();
    assert!(info.kernel_bytes <= 10 * entry, "{info:?}");
    assert_eq!(info.kernel_entries, 10);
    assert_eq!(cache.counters().evicted, 5);
    assert!(
        cache.get(EntryKind::Kernels, "e0", b"k").is_some(),
        "recently used: kept"
    );
    for i in 1..=5 {
        assert!(
            cache.get(EntryKind::Kernels, &format!("e{i}"), b"k").is_none(),
            "e{i}: evicted"
        );
    }
    for i in 6..15 {
        assert_eq!(
            cache.get(EntryKind::Kernels, &format!("e{i}"), b"k"),
            Some(vec![i as u8; 1000]),
            "e{i}: kept"
        );
    }
    // An entry larger than the bound is written and then evicted, never an error.
    cache
        .put(EntryKind::Kernels, "huge", b"k", &vec![1u8; 20 * entry as usize])
        .expect("put");
    assert!(cache.info().kernel_bytes <= 10 * entry);
}
