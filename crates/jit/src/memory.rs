//! Fallible host allocation: every host buffer whose size comes from a program (tensors,
//! TIR scratch buffers) is checked against a process-wide limit and reserved with
//! `try_reserve`, so an impossible size is an error and never aborts the process.

use std::sync::atomic::{AtomicU64, Ordering};

/// The limit in bytes; 0 means "not set yet" (the default is computed on first use).
static LIMIT: AtomicU64 = AtomicU64::new(0);

/// The fallback limit where the machine's memory cannot be read: 8 GiB.
const FALLBACK_LIMIT: u64 = 8 << 30;

/// The machine's physical memory in bytes, where the platform says (Linux: `/proc/meminfo`).
pub fn machine_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The default host memory limit: three quarters of the machine's memory (8 GiB where
/// it cannot be read).
pub fn default_host_memory_limit() -> u64 {
    machine_memory_bytes().map_or(FALLBACK_LIMIT, |m| m / 4 * 3)
}

/// The largest host buffer, in bytes, that one allocation may have (and the most a
/// weight file may inflate to): `RELAX_HOST_MEMORY_LIMIT` where set, else the default.
pub fn host_memory_limit() -> u64 {
    match LIMIT.load(Ordering::Relaxed) {
        0 => {
            let d = crate::config::host_memory_limit()
                .unwrap_or_else(default_host_memory_limit)
                .max(1);
            LIMIT.store(d, Ordering::Relaxed);
            d
        }
        v => v,
    }
}

/// Set the host memory limit for the whole process (`0` restores the default).
pub fn set_host_memory_limit(bytes: u64) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// Why a host allocation was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocError {
    /// The size in bytes overflows the address space.
    Overflow,
    /// The size is over the limit.
    OverLimit {
        /// Bytes asked for.
        bytes: u64,
        /// The limit in force.
        limit: u64,
    },
    /// The allocator refused.
    Failed {
        /// Bytes asked for.
        bytes: u64,
    },
}

impl std::fmt::Display for AllocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AllocError::Overflow => write!(f, "its size in bytes overflows"),
            AllocError::OverLimit { bytes, limit } => {
                write!(f, "{bytes} bytes is over the host memory limit of {limit} bytes")
            }
            AllocError::Failed { bytes } => write!(f, "the allocation of {bytes} bytes failed"),
        }
    }
}

/// A zero-filled vector of `n` elements, or an error when `n * size_of::<T>()` overflows,
/// exceeds [`host_memory_limit`] or cannot be reserved.
pub fn try_zeroed<T: Copy + Default>(n: usize) -> Result<Vec<T>, AllocError> {
    let bytes = n.checked_mul(std::mem::size_of::<T>()).ok_or(AllocError::Overflow)?;
    let limit = host_memory_limit();
    if bytes as u64 > limit {
        return Err(AllocError::OverLimit {
            bytes: bytes as u64,
            limit,
        });
    }
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| AllocError::Failed { bytes: bytes as u64 })?;
    v.resize(n, T::default());
    Ok(v)
}

/// [`try_zeroed`] of `elems` elements of `elem_bytes` bytes each, as 8-byte words
/// (aligned storage for any element type); at least one word.
pub fn try_zeroed_words(elems: usize, elem_bytes: usize) -> Result<Vec<u64>, AllocError> {
    let bytes = elems.checked_mul(elem_bytes).ok_or(AllocError::Overflow)?;
    try_zeroed::<u64>(bytes.div_ceil(8).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_that_overflow_or_exceed_the_limit_are_errors() {
        assert_eq!(try_zeroed_words(usize::MAX / 2, 4), Err(AllocError::Overflow));
        assert!(matches!(
            try_zeroed::<u8>(usize::MAX / 2),
            Err(AllocError::OverLimit { .. })
        ));
        let v = try_zeroed_words(3, 4).expect("small");
        assert_eq!(v, vec![0u64; 2]);
        assert!(default_host_memory_limit() > 0);
    }
}
