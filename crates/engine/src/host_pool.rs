//! Recycled host buffers for kernel outputs. A released tensor's memory goes back
//! to a bounded pool keyed by its exact size, and the next kernel output of that
//! size takes it as it is: no page faults on fresh memory and no clearing pass (a
//! kernel writes its whole output; outputs start uninitialized, as on the GPU and
//! in TVM). Inference runs the same sizes every time, so after the first run
//! nearly every output comes from here.

use std::collections::HashMap;
use std::sync::Mutex;

/// Buffers smaller than this are left to the allocator (cheap to get anyway).
const MIN_BYTES: usize = 16 << 10;

struct Pool {
    free: HashMap<usize, Vec<Vec<u8>>>,
    bytes: usize,
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);

/// The most bytes the pool keeps: 1/16 of the host memory limit, at most 1 GiB.
fn capacity() -> usize {
    let limit = relax_jit::memory::host_memory_limit();
    usize::try_from(limit / 16).unwrap_or(usize::MAX).min(1 << 30)
}

/// A buffer of exactly `n` bytes from the pool, with stale contents.
pub(crate) fn take(n: usize) -> Option<Vec<u8>> {
    if n < MIN_BYTES {
        return None;
    }
    let mut guard = POOL.lock().ok()?;
    let pool = guard.as_mut()?;
    let v = pool.free.get_mut(&n)?.pop()?;
    pool.bytes -= v.len();
    Some(v)
}

/// Keep `v` for a later [`take`] when there is room.
pub(crate) fn give(v: Vec<u8>) {
    let n = v.len();
    if n < MIN_BYTES {
        return;
    }
    let Ok(mut guard) = POOL.lock() else { return };
    let pool = guard.get_or_insert_with(|| Pool {
        free: HashMap::new(),
        bytes: 0,
    });
    if pool.bytes + n <= capacity() {
        pool.bytes += n;
        pool.free.entry(n).or_default().push(v);
    }
}

/// Bytes held by the pool now.
#[cfg(test)]
fn pooled_bytes() -> usize {
    POOL.lock().ok().and_then(|g| g.as_ref().map(|p| p.bytes)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn buffers_come_back_by_exact_size() {
        let n = super::MIN_BYTES * 3 + 4;
        let before = super::pooled_bytes();
        super::give(vec![7u8; n]);
        assert_eq!(super::pooled_bytes(), before + n);
        let v = super::take(n).expect("the buffer given back");
        assert_eq!(v.len(), n);
        // Small buffers are not kept.
        super::give(vec![0u8; 16]);
        assert!(super::take(16).is_none());
    }
}
