//! A scratch directory removed when the test is done (shared by the cli and engine tests).

use std::path::PathBuf;

/// A scratch directory for one test, removed (with everything in it) when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    /// A fresh, empty `relax-{prefix}-{pid}-{name}` under the system's temporary folder.
    pub fn new(prefix: &str, name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("relax-{prefix}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        Scratch(d)
    }
}

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
