//! `fuse-ops` against TVM 0.27 (`tests/data/fusion_oracle.jsonl`, made by
//! `scripts/fusion_oracle.py`): the `op_pattern` TVM's AnnotateTIROpPattern gives each
//! legalized PrimFunc, and the groups of TVM's FuseOps.
//!
//! Patterns must agree exactly. Our fusion is deliberately coarser than TVM's (see
//! `fuse_ops`), so each TVM group must lie inside one of our groups. Modules of the
//! real networks are read from `RELAX_REALMODELS_DIR` (`<dir>/squeezenet/prog.py`)
//! when it is set, and skipped otherwise.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use relax_ir::{BaseFunc, ExprKind, IRModule};
use relax_transform::pattern::op_pattern;
use relax_transform::{lookup, Pipeline};

#[derive(Debug)]
struct Record {
    module: String,
    op_patterns: BTreeMap<String, i64>,
    groups: Vec<Vec<String>>,
}

fn records() -> Vec<Record> {
    common::jsonl_records("fusion_oracle.jsonl")
        .into_iter()
        .map(|v| Record {
            module: v["module"].as_str().expect("module").to_string(),
            op_patterns: v["op_patterns"]
                .as_object()
                .expect("patterns")
                .iter()
                .map(|(k, x)| (k.clone(), x.as_i64().expect("int")))
                .collect(),
            groups: v["groups"]
                .as_array()
                .expect("groups")
                .iter()
                .map(|g| {
                    g.as_array()
                        .expect("group")
                        .iter()
                        .map(|s| s.as_str().expect("name").to_string())
                        .collect()
                })
                .collect(),
        })
        .collect()
}

fn source(module: &str) -> Option<String> {
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(module);
    if let Ok(s) = std::fs::read_to_string(&local) {
        return Some(s);
    }
    let dir = std::env::var_os("RELAX_REALMODELS_DIR")?;
    std::fs::read_to_string(PathBuf::from(dir).join(module)).ok()
}

fn run(m: IRModule, names: &[&str]) -> IRModule {
    let mut p = Pipeline::new();
    for n in names {
        p.push(lookup(n).expect("registered"));
    }
    p.run(m).expect("pipeline")
}

/// Each `Primitive` function's callees, in order.
fn our_groups(m: &IRModule) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for f in m.functions.values() {
        let BaseFunc::Relax(f) = f else { continue };
        if f.attrs.get("Primitive").is_none() {
            continue;
        }
        let ExprKind::Seq(seq) = f.body.kind() else { continue };
        let callees = seq
            .blocks
            .iter()
            .flat_map(|b| &b.bindings)
            .filter_map(|b| {
                let c = b.value().as_call()?;
                match c.args.first()?.kind() {
                    ExprKind::GlobalVar(g) => Some(g.name().to_string()),
                    _ => None,
                }
            })
            .collect();
        out.push(callees);
    }
    out
}

#[test]
fn patterns_and_groups_agree_with_tvm() {
    let mut checked = 0;
    for rec in records() {
        let Some(src) = source(&rec.module) else {
            eprintln!("{}: not found (set RELAX_REALMODELS_DIR); skipped", rec.module);
            continue;
        };
        let m = relax_ir::text::parse(&src).expect("parses").into_module();
        let legal = run(m, &["check", "legalize"]);
        let mut agree = 0;
        for (name, &code) in &rec.op_patterns {
            let Some(BaseFunc::Prim(p)) = legal.get(name) else {
                panic!("{}: no PrimFunc {name}", rec.module)
            };
            let ours = op_pattern(p).code();
            assert_eq!(ours, code, "{}: pattern of {name}", rec.module);
            agree += 1;
        }
        let fused = run(legal, &["fuse-ops"]);
        let ours = our_groups(&fused);
        let mut contained = 0;
        let mut equal = 0;
        // Our LegalizeOps shares one PrimFunc between identical calls where TVM makes
        // `stack` and `stack1`: compare names without their numeric suffix.
        let base = |n: &String| n.trim_end_matches(|c: char| c.is_ascii_digit()).to_string();
        let ours: Vec<Vec<String>> = ours.iter().map(|g| g.iter().map(base).collect()).collect();
        let mut split = Vec::new();
        for g in &rec.groups {
            let g: Vec<String> = g.iter().map(base).collect();
            match ours.iter().find(|o| g.iter().all(|n| o.contains(n))) {
                Some(home) => {
                    contained += 1;
                    equal += usize::from(*home == g);
                }
                None => split.push(g),
            }
        }
        // Known: TVM also fuses operators with tuple results (`dropout`); we do not.
        split.retain(|g| !g.iter().any(|n| n.starts_with("dropout")));
        assert!(split.is_empty(), "{}: TVM groups split in ours: {split:?}", rec.module);
        eprintln!(
            "{}: patterns {agree}/{} agree; TVM groups {}/{} inside ours, {equal} identical; ours {} groups",
            rec.module,
            rec.op_patterns.len(),
            contained,
            rec.groups.len(),
            ours.len()
        );
        checked += 1;
    }
    assert!(checked >= 3, "the in-repository modules are always checked");
}
