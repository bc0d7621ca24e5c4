//! Pass instruments: [`DumpIr`] writes the module after every pass.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use relax_ir::text::{print_program, Program};
use relax_ir::IRModule;

use crate::pass::PassInstrument;

/// Writes the module as TVMScript after every pass to `dir/NN-PASS.py` (`NN` counts
/// the passes run). A file that cannot be written is reported once on stderr; the
/// pipeline goes on.
#[derive(Debug)]
pub struct DumpIr {
    dir: PathBuf,
    count: AtomicUsize,
    failed: Mutex<bool>,
}

impl DumpIr {
    /// Dump into `dir` (created when missing).
    pub fn new(dir: impl Into<PathBuf>) -> DumpIr {
        DumpIr {
            dir: dir.into(),
            count: AtomicUsize::new(0),
            failed: Mutex::new(false),
        }
    }
}

impl PassInstrument for DumpIr {
    fn after_pass(&self, pass: &str, module: &IRModule, _time: Duration) {
        let n = self.count.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{n:02}-{pass}.py"));
        let text = print_program(&Program::Module(module.clone()));
        let written = std::fs::create_dir_all(&self.dir).and_then(|()| std::fs::write(&path, text));
        if let Err(e) = written {
            let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            if !*failed {
                eprintln!("warning: cannot write the IR dump {}: {e}", path.display());
                *failed = true;
            }
        }
    }
}
