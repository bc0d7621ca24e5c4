//! `relax cache info` / `relax cache clear` and `relax run --no-cache`, each on a
//! temporary folder given in `RELAX_CACHE_DIR`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    p.to_str().expect("utf-8 path").to_string()
}

fn relax(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relax"))
        .args(args)
        .env("RELAX_CACHE_DIR", cache)
        .output()
        .expect("the relax binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp(what: &str) -> TempDir {
    let d = std::env::temp_dir().join(format!("relax-cli-cache-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    TempDir(d)
}

/// The number of compiled programs `relax cache info` reports.
fn kernel_entries(cache: &Path) -> u64 {
    let o = relax(cache, &["cache", "info"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let s = stdout(&o);
    assert!(s.contains(&cache.display().to_string()), "{s}");
    let line = s.lines().find(|l| l.starts_with("kernels:")).expect("a kernels line");
    line.split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("an entry count")
}

#[test]
fn run_fills_the_cache_unless_told_not_to_and_clear_empties_it() {
    let dir = temp("run");
    assert_eq!(kernel_entries(&dir.0), 0, "a missing folder is an empty cache");
    let f = data("add_one.py");
    let inputs = data("add_one_inputs.json");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            f.as_str(),
            "--device",
            "gpu",
            "--inputs-json",
            inputs.as_str(),
            "--json",
        ];
        args.extend_from_slice(extra);
        relax(&dir.0, &args)
    };
    let o = run(&["--no-cache"]);
    if o.status.code() != Some(0) {
        eprintln!("no GPU: {}", String::from_utf8_lossy(&o.stderr));
        return;
    }
    let no_cache = stdout(&o);
    assert_eq!(kernel_entries(&dir.0), 0, "--no-cache writes nothing");
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), no_cache);
    let n = kernel_entries(&dir.0);
    assert!(n > 0, "the run stored its kernels");
    // A second process takes them and prints the same result.
    let o = run(&[]);
    assert_eq!(stdout(&o), no_cache);
    assert_eq!(kernel_entries(&dir.0), n);
    let o = relax(&dir.0, &["cache", "clear"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("cleared"), "{}", stdout(&o));
    assert_eq!(kernel_entries(&dir.0), 0);
}
