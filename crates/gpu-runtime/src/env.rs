//! Process environment that the Vulkan loader and Mesa expect.

use std::sync::Once;

/// On Linux, when `XDG_RUNTIME_DIR` is unset or not a directory, point it at a private
/// directory (mode 0700) under the temporary directory, once per process.
///
/// The Vulkan loader and Mesa's drivers read the variable while wgpu creates its
/// instance and print `error: XDG_RUNTIME_DIR is invalid or not set` on headless
/// machines, which reads like an error of ours although nothing fails. Setting it is
/// acceptable here: it runs once, before the first instance is created (so before
/// any thread of ours reads the environment for GPU work), it only fills in a value
/// that is missing or unusable, and the directory it names is private to the user.
pub(crate) fn ensure_xdg_runtime_dir() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        #[cfg(target_os = "linux")]
        {
            let usable = std::env::var_os("XDG_RUNTIME_DIR")
                .map(std::path::PathBuf::from)
                .is_some_and(|p| p.is_absolute() && p.is_dir());
            if usable {
                return;
            }
            if let Some(dir) = private_dir() {
                // Once, before the Vulkan loader reads it (see above).
                std::env::set_var("XDG_RUNTIME_DIR", dir);
            }
        }
    });
}

/// `$TMPDIR/relax-xdg-runtime-<uid>`, created with mode 0700 when missing; `None`
/// when it cannot be made private (someone else owns it, or it cannot be created).
#[cfg(target_os = "linux")]
fn private_dir() -> Option<std::path::PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    let dir = std::env::temp_dir().join(format!("relax-xdg-runtime-{uid}"));
    if std::fs::DirBuilder::new().mode(0o700).create(&dir).is_err() && !dir.is_dir() {
        return None;
    }
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    if !meta.is_dir() || meta.uid() != uid {
        return None;
    }
    if meta.permissions().mode() & 0o777 != 0o700 {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).ok()?;
    }
    Some(dir)
}
