//! `relax cache`: the persistent kernel cache (compiled GPU programs and the
//! driver's pipeline cache, shared by processes), and the `--no-cache` option of
//! the commands that compile kernels.

use relax_engine::CompileConfig;
use relax_jit::disk_cache::{default_dir, DiskCache, CACHE_DIR_ENV};

use crate::common::{EXIT_OK, EXIT_USAGE};

/// What `relax cache` does.
#[derive(clap::Subcommand, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheCommand {
    /// Print the cache folder, its entries and their size.
    Info,
    /// Remove every entry (the folder's other contents stay).
    Clear,
}

/// The cache options of `relax run` and `relax generate`.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct CacheArgs {
    /// Do not use the persistent kernel cache (compiled GPU kernels are then kept in
    /// memory for this process only). The cache lives in `$RELAX_CACHE_DIR`, else the
    /// platform's user cache folder; see `relax cache info`.
    #[arg(long = "no-cache")]
    pub no_cache: bool,
}

impl CacheArgs {
    /// The engine's compile configuration for these options: the persistent cache
    /// in the user's cache folder unless `--no-cache`, a progress line on a terminal.
    pub fn compile_config(&self) -> CompileConfig {
        let base = if self.no_cache {
            CompileConfig::default()
        } else {
            CompileConfig::user_cache()
        };
        CompileConfig { progress: true, ..base }
    }
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}

/// Run `relax cache info` or `relax cache clear`.
pub fn run(cmd: CacheCommand) -> u8 {
    let Some(dir) = default_dir() else {
        eprintln!("error: no cache folder: set {CACHE_DIR_ENV} (the platform has no user cache folder)");
        return EXIT_USAGE;
    };
    let cache = DiskCache::new(dir);
    match cmd {
        CacheCommand::Info => {
            let i = cache.info();
            println!("folder:    {}", i.dir.display());
            println!(
                "kernels:   {} compiled GPU programs, {}",
                i.kernel_entries,
                size(i.kernel_bytes)
            );
            println!(
                "pipelines: {} driver pipeline caches, {}",
                i.pipeline_entries,
                size(i.pipeline_bytes)
            );
            if i.other_bytes > 0 {
                println!("other:     {} (older formats, unfinished writes)", size(i.other_bytes));
            }
            println!(
                "total:     {} of at most {}",
                size(i.kernel_bytes + i.pipeline_bytes + i.other_bytes),
                size(i.max_bytes)
            );
            EXIT_OK
        }
        CacheCommand::Clear => match cache.clear() {
            Ok(freed) => {
                println!("cleared {} ({})", cache.dir().display(), size(freed));
                EXIT_OK
            }
            Err(e) => {
                eprintln!("error: clearing {}: {e}", cache.dir().display());
                EXIT_USAGE
            }
        },
    }
}
