//! The pass table drives every entry point: each registered pass runs from
//! `relax print --pass`, `--pass` help lists them all, `--dump-ir` writes the
//! module after each pass, and the engine's pipeline is the table's.

use std::path::PathBuf;
use std::process::Command;

use relax_engine::{DeviceChoice, Engine, EngineConfig};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn relax(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_relax"))
        .args(args)
        .output()
        .expect("the relax binary runs");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn every_registered_pass_runs_from_print() {
    let file = data("tiny_cnn.py");
    let file = file.to_str().expect("utf-8 path");
    for (name, _) in relax_transform::registered_passes() {
        let (code, out, err) = relax(&["print", "--pass", name, file]);
        assert_eq!(code, Some(0), "--pass {name}: {err}");
        assert!(out.contains("def main"), "--pass {name} printed {out}");
        // What it prints parses again.
        relax_ir::text::parse(&out).unwrap_or_else(|e| panic!("--pass {name}: {e:?}\n{out}"));
    }
    // The whole default pipeline, pass by pass, in one run.
    let mut args = vec!["print"];
    let names = relax_transform::default_pipeline().names();
    for n in &names {
        args.extend(["--pass", n.as_str()]);
    }
    args.push(file);
    let (code, out, err) = relax(&args);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("R.builtin.alloc_tensor") || out.contains("R.memory.alloc_storage"),
        "{out}"
    );
}

#[test]
fn pass_help_lists_every_pass_with_its_description() {
    let (code, out, _) = relax(&["print", "--help"]);
    assert_eq!(code, Some(0));
    for (name, help) in relax_transform::registered_passes() {
        assert!(out.contains(name), "{name} missing from\n{out}");
        let first_words: String = help.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
        assert!(
            out.contains(&first_words),
            "{name}: {first_words:?} missing from\n{out}"
        );
    }
}

#[test]
fn dump_ir_writes_the_module_after_every_pass() {
    let dir = std::env::temp_dir().join(format!("relax-dump-ir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let file = data("tiny_cnn.py");
    let (code, _, err) = relax(&[
        "print",
        "--pass",
        "check",
        "--pass",
        "legalize",
        "--dump-ir",
        dir.to_str().expect("utf-8"),
        file.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("the dump directory exists")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    files.sort();
    assert_eq!(files, ["00-check.py", "01-legalize.py"]);
    let legalized = std::fs::read_to_string(dir.join("01-legalize.py")).expect("readable");
    assert!(legalized.contains("R.call_tir"), "{legalized}");
    relax_ir::text::parse(&legalized).expect("the dump parses");
    // `relax run --dump-ir` dumps the engine's pipeline.
    let run_dir = dir.join("run");
    let (code, _, err) = relax(&[
        "run",
        "--device",
        "cpu",
        "--dump-ir",
        run_dir.to_str().expect("utf-8"),
        data("add_one.py").to_str().expect("utf-8"),
        "--inputs-json",
        data("add_one_inputs.json").to_str().expect("utf-8"),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let run_files = std::fs::read_dir(&run_dir).expect("dumped").count();
    // `relax run` is lenient by default (as `tvm.compile`), so its pipeline starts
    // with the lenient rewrite.
    let engine = Engine::new(EngineConfig {
        device: DeviceChoice::Cpu,
        lenient: true,
        ..EngineConfig::default()
    });
    assert_eq!(run_files, engine.pipeline().names().len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_engine_builds_its_pipeline_from_the_table() {
    let names = |config: EngineConfig| Engine::new(config).pipeline().names();
    let cpu = EngineConfig {
        device: DeviceChoice::Cpu,
        ..EngineConfig::default()
    };
    assert_eq!(names(cpu.clone()), relax_transform::default_pipeline().names());
    assert_eq!(
        names(EngineConfig {
            optimize: false,
            ..cpu.clone()
        }),
        ["check", "bind-symbolic-shapes", "legalize"]
    );
    assert_eq!(
        names(EngineConfig {
            legalize: false,
            ..cpu.clone()
        }),
        ["check"]
    );
    let lenient = names(EngineConfig {
        lenient: true,
        host_library: false,
        static_memory_plan: false,
        ..cpu.clone()
    });
    assert_eq!(lenient[..2], ["lenient-pure-packed", "check"]);
    assert!(!lenient
        .iter()
        .any(|n| n == "dispatch-host-library" || n == "static-plan-block-memory"));
    // Every name the engine runs is a row of the table, in the table's order.
    let table: Vec<&str> = relax_transform::registry::PASSES.iter().map(|p| p.name).collect();
    let mut at = 0;
    for n in names(cpu) {
        let Some(k) = table[at..].iter().position(|t| *t == n) else {
            panic!("{n} out of the table's order");
        };
        at += k + 1;
    }
}
