//! Defaults that the environment may set: the one place this crate reads it.
//! Each is read once per process.

use std::sync::OnceLock;

/// How the native host compiler logs (`RELAX_HOST_JIT_LOG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JitLog {
    /// Nothing (unset).
    Off,
    /// One line per stage that falls back to the interpreter (any other value).
    Fallbacks,
    /// Also the Cranelift IR of every stage (`ir`).
    Ir,
    /// Also the machine code of every stage (`asm`).
    Asm,
}

/// Whether host stages are compiled to native code (`RELAX_HOST_JIT=0` turns it off).
pub fn host_jit() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("RELAX_HOST_JIT").map_or(true, |v| v != "0"))
}

/// Whether native code hoists bounds checks out of innermost loops
/// (`RELAX_HOST_HOIST=0` turns it off: every access is checked where it happens, a
/// mode for comparing whole test runs with and without hoisting).
pub fn host_hoist() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("RELAX_HOST_HOIST").map_or(true, |v| v != "0"))
}

/// What the native host compiler logs to stderr (`RELAX_HOST_JIT_LOG`).
pub fn host_jit_log() -> JitLog {
    static LOG: OnceLock<JitLog> = OnceLock::new();
    *LOG.get_or_init(|| match std::env::var_os("RELAX_HOST_JIT_LOG") {
        None => JitLog::Off,
        Some(v) if v == "ir" => JitLog::Ir,
        Some(v) if v == "asm" => JitLog::Asm,
        Some(_) => JitLog::Fallbacks,
    })
}

/// The host memory limit set by `RELAX_HOST_MEMORY_LIMIT`: bytes, or a number with a
/// `K`, `M` or `G` suffix (powers of 1024). Unset, empty, zero or unreadable: `None`.
pub fn host_memory_limit() -> Option<u64> {
    static N: OnceLock<Option<u64>> = OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("RELAX_HOST_MEMORY_LIMIT")
            .ok()
            .and_then(|v| parse_bytes(&v))
    })
}

/// `1234`, `64K`, `512M`, `2G` (case-insensitive, powers of 1024) as bytes; `None` for
/// anything else, zero or an overflow.
fn parse_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let (digits, shift) = match v.chars().last()?.to_ascii_uppercase() {
        'K' => (&v[..v.len() - 1], 10),
        'M' => (&v[..v.len() - 1], 20),
        'G' => (&v[..v.len() - 1], 30),
        _ => (v, 0),
    };
    let n: u64 = digits.trim().parse().ok()?;
    n.checked_mul(1u64 << shift).filter(|&b| b > 0)
}

/// The worker count Mesa's lavapipe uses (`LP_NUM_THREADS`), when set.
pub fn lavapipe_threads() -> Option<u32> {
    static N: OnceLock<Option<u32>> = OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("LP_NUM_THREADS")
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
    })
}

/// The environment variable naming the cache folder (overrides the platform's
/// user cache folder).
pub const CACHE_DIR_ENV: &str = "RELAX_CACHE_DIR";

/// The kernel cache folder set by `RELAX_CACHE_DIR` (non-empty), if any.
pub fn cache_dir() -> Option<std::path::PathBuf> {
    match std::env::var_os(CACHE_DIR_ENV) {
        Some(d) if !d.is_empty() => Some(std::path::PathBuf::from(d)),
        _ => None,
    }
}

/// The most rows for which a GPU matmul with a symbolic row count runs its few-row
/// kernel (`RELAX_GPU_FEW_ROWS`; 0 turns the few-row kernels off, a mode for
/// comparing whole runs), when set.
pub fn gpu_few_rows() -> Option<u32> {
    static N: OnceLock<Option<u32>> = OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("RELAX_GPU_FEW_ROWS")
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
    })
}

/// Whether GPU programs are compiled generic in their channel counts where that
/// keeps their schedule (`RELAX_GPU_GENERIC=1` turns it on; off by default).
pub fn gpu_generic() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("RELAX_GPU_GENERIC").is_ok_and(|v| v == "1"))
}

/// The fewest workgroups a GPU GEMM aims for before its register tiles shrink
/// (`RELAX_GPU_MIN_GEMM_GROUPS`; 0 keeps the tiles), when set. See
/// `ScheduleOptions::min_gemm_groups`.
pub fn gpu_min_gemm_groups() -> Option<u32> {
    static N: OnceLock<Option<u32>> = OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("RELAX_GPU_MIN_GEMM_GROUPS")
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
    })
}

/// Threads of a GPU GEMM workgroup as `ROWSxCOLS` (`RELAX_GPU_GEMM_THREADS`, such as
/// `16x16`; the product at most 256), when set. See `ScheduleOptions::matmul_threads`.
pub fn gpu_gemm_threads() -> Option<(u32, u32)> {
    static N: OnceLock<Option<(u32, u32)>> = OnceLock::new();
    *N.get_or_init(|| {
        let v = std::env::var("RELAX_GPU_GEMM_THREADS").ok()?;
        let (r, c) = v.trim().split_once('x')?;
        let (r, c) = (r.parse::<u32>().ok()?, c.parse::<u32>().ok()?);
        (r >= 1 && c >= 1 && r * c <= 256).then_some((r, c))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn byte_sizes_parse_with_suffixes() {
        assert_eq!(super::parse_bytes("1234"), Some(1234));
        assert_eq!(super::parse_bytes("4M"), Some(4 << 20));
        assert_eq!(super::parse_bytes(" 2g "), Some(2 << 30));
        assert_eq!(super::parse_bytes("64k"), Some(64 << 10));
        for bad in ["", "0", "M", "-1", "1.5G", "99999999999999999999", "17179869184G"] {
            assert_eq!(super::parse_bytes(bad), None, "{bad}");
        }
    }
}
