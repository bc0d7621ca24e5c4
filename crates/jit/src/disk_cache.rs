//! The persistent kernel cache: compiled GPU programs (the WGSL of every kernel and
//! what dispatching it needs) and the driver's pipeline cache data, kept in files
//! across processes.
//!
//! Layout: `<dir>/v<FORMAT_VERSION>/kernels/<hash>.bin` and
//! `<dir>/v<FORMAT_VERSION>/pipelines/<adapter key>.bin`. Every file is an envelope:
//! a magic, the format version, the lengths of the key and the payload, a checksum
//! of both, the full key, then the payload. A lookup reads the file named by the
//! key's hash and returns the payload only when the envelope is intact and the
//! stored key equals the key asked for: a truncated, garbage or colliding entry is a
//! miss (never an error or a panic). Writers write a temporary file in the same
//! folder and rename it over the entry, so readers see a whole entry or none, and
//! concurrent writers of one key leave one of their (equal) entries. The total size
//! is bounded: after a write past the bound the least recently used entries go
//! (a hit refreshes an entry's modification time).

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// The on-disk format version: part of every path and every envelope; a change
/// makes earlier entries invisible (they age out under the size bound or go with
/// `relax cache clear`).
pub const FORMAT_VERSION: u32 = 1;

pub use crate::config::CACHE_DIR_ENV;

/// Default bound on the cache's total size.
pub const DEFAULT_MAX_BYTES: u64 = 512 << 20;

const MAGIC: &[u8; 8] = b"RLXCACHE";
const HEADER: usize = 8 + 4 + 8 + 8 + 8;
/// Entries larger than this are not read (a corrupt length cannot make a lookup
/// allocate without bound).
const MAX_ENTRY_BYTES: u64 = 1 << 30;
/// Temporary files older than this are a crashed writer's leftovers.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// Where the persistent cache lives by default: `$RELAX_CACHE_DIR` when set and not
/// empty, else `relax-wgpu` in the platform's user cache folder (`~/.cache` on
/// Linux, `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on Windows); `None` when
/// neither is known.
pub fn default_dir() -> Option<PathBuf> {
    crate::config::cache_dir().or_else(|| dirs::cache_dir().map(|d| d.join("relax-wgpu")))
}

/// What a cache folder holds (see [`DiskCache::info`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheInfo {
    /// The folder.
    pub dir: PathBuf,
    /// Compiled-program entries of the current format.
    pub kernel_entries: u64,
    /// Their bytes.
    pub kernel_bytes: u64,
    /// Driver pipeline-cache entries of the current format.
    pub pipeline_entries: u64,
    /// Their bytes.
    pub pipeline_bytes: u64,
    /// Bytes of files of other format versions and leftover temporary files.
    pub other_bytes: u64,
    /// The size bound.
    pub max_bytes: u64,
}

/// Counters of a [`DiskCache`] (monotonic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskCacheCounters {
    /// Lookups that returned an entry.
    pub hits: u64,
    /// Lookups that found nothing usable (absent, damaged, another key).
    pub misses: u64,
    /// Lookups that found a damaged entry or one of another key (counted in `misses`).
    pub rejected: u64,
    /// Entries written.
    pub writes: u64,
    /// Entries removed by the size bound.
    pub evicted: u64,
}

/// A persistent cache folder. Cheap to share (`Arc`); every method may be called
/// from several threads and processes at once.
#[derive(Debug)]
pub struct DiskCache {
    dir: PathBuf,
    max_bytes: u64,
    hits: AtomicU64,
    misses: AtomicU64,
    rejected: AtomicU64,
    writes: AtomicU64,
    evicted: AtomicU64,
}

/// The kinds of entries, each in its own subfolder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// Compiled GPU programs.
    Kernels,
    /// The driver's pipeline cache data, one entry per adapter.
    Pipelines,
}

impl EntryKind {
    fn folder(self) -> &'static str {
        match self {
            EntryKind::Kernels => "kernels",
            EntryKind::Pipelines => "pipelines",
        }
    }
}

impl DiskCache {
    /// A cache in `dir` (created on first write) bounded to [`DEFAULT_MAX_BYTES`].
    pub fn new(dir: impl Into<PathBuf>) -> DiskCache {
        DiskCache::with_max_bytes(dir, DEFAULT_MAX_BYTES)
    }

    /// A cache in `dir` whose entries total at most `max_bytes` after each write.
    pub fn with_max_bytes(dir: impl Into<PathBuf>, max_bytes: u64) -> DiskCache {
        DiskCache {
            dir: dir.into(),
            max_bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        }
    }

    /// The cache in [`default_dir`], if there is one.
    pub fn user_default() -> Option<DiskCache> {
        default_dir().map(DiskCache::new)
    }

    /// The cache folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The size bound.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Current counters.
    pub fn counters(&self) -> DiskCacheCounters {
        DiskCacheCounters {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
        }
    }

    fn version_dir(&self) -> PathBuf {
        self.dir.join(format!("v{FORMAT_VERSION}"))
    }

    fn kind_dir(&self, kind: EntryKind) -> PathBuf {
        self.version_dir().join(kind.folder())
    }

    /// The file of entry `name` of `kind`; `name` is reduced to `[A-Za-z0-9_-]`.
    pub fn entry_path(&self, kind: EntryKind, name: &str) -> PathBuf {
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(120)
            .collect();
        self.kind_dir(kind).join(format!("{clean}.bin"))
    }

    /// The payload stored under `name` for exactly `key`, or `None` (absent,
    /// unreadable, damaged, of another format version or another key).
    pub fn get(&self, kind: EntryKind, name: &str, key: &[u8]) -> Option<Vec<u8>> {
        let path = self.entry_path(kind, name);
        let found = read_entry(&path);
        let r = match found {
            Ok(Some((k, payload))) if k == key => Some(payload),
            Ok(None) => None,
            Ok(Some(_)) | Err(_) => {
                self.rejected.fetch_add(1, Ordering::Relaxed);
                None
            }
        };
        match &r {
            Some(_) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                // Recently used: evicted last.
                if let Ok(f) = fs::OpenOptions::new().append(true).open(&path) {
                    let _ = f.set_modified(SystemTime::now());
                }
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
            }
        }
        r
    }

    /// Store `payload` under `name` for `key` (replacing what was there), then
    /// enforce the size bound.
    pub fn put(&self, kind: EntryKind, name: &str, key: &[u8], payload: &[u8]) -> io::Result<()> {
        let path = self.entry_path(kind, name);
        let dir = self.kind_dir(kind);
        fs::create_dir_all(&dir)?;
        let tmp = dir.join(format!(".tmp-{}-{}", std::process::id(), unique()));
        let written = (|| {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(&encode_envelope(key, payload))?;
            f.sync_data()?;
            drop(f);
            fs::rename(&tmp, &path)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written?;
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.enforce_bound(Some(&path));
        Ok(())
    }

    /// Remove the least recently used entries (any kind, any version, and stale
    /// temporary files) until the total is within the bound; `keep` is removed last.
    fn enforce_bound(&self, keep: Option<&Path>) {
        let mut files = Vec::new();
        collect_files(&self.dir, 0, &mut files);
        let now = SystemTime::now();
        let mut total: u64 = 0;
        let mut entries = Vec::new();
        for (path, len, modified) in files {
            let stale_temp = is_temp(&path) && now.duration_since(modified).is_ok_and(|age| age > STALE_TEMP);
            if stale_temp {
                let _ = fs::remove_file(&path);
                continue;
            }
            total += len;
            if !is_temp(&path) && is_ours(&path) {
                entries.push((path, len, modified));
            }
        }
        if total <= self.max_bytes {
            return;
        }
        entries.sort_by_key(|(p, _, m)| (Some(p.as_path()) == keep, *m));
        for (path, len, _) in entries {
            if total <= self.max_bytes {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                total = total.saturating_sub(len);
                self.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// What the folder holds.
    pub fn info(&self) -> CacheInfo {
        let mut info = CacheInfo {
            dir: self.dir.clone(),
            max_bytes: self.max_bytes,
            ..CacheInfo::default()
        };
        let mut files = Vec::new();
        collect_files(&self.dir, 0, &mut files);
        let kernels = self.kind_dir(EntryKind::Kernels);
        let pipelines = self.kind_dir(EntryKind::Pipelines);
        for (path, len, _) in files {
            if !is_ours(&path) {
                continue;
            }
            let parent = path.parent();
            if is_temp(&path) {
                info.other_bytes += len;
            } else if parent == Some(kernels.as_path()) {
                info.kernel_entries += 1;
                info.kernel_bytes += len;
            } else if parent == Some(pipelines.as_path()) {
                info.pipeline_entries += 1;
                info.pipeline_bytes += len;
            } else {
                info.other_bytes += len;
            }
        }
        info
    }

    /// Remove every entry of every format version (the folder's other contents stay).
    /// Returns the bytes removed.
    pub fn clear(&self) -> io::Result<u64> {
        let mut freed = 0;
        let rd = match fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        for e in rd.flatten() {
            let path = e.path();
            if is_version_dir(&path) {
                let mut files = Vec::new();
                collect_files(&path, 1, &mut files);
                freed += files.iter().map(|f| f.1).sum::<u64>();
                fs::remove_dir_all(&path)?;
            }
        }
        Ok(freed)
    }
}

/// `v<digits>`: a format-version folder of this cache.
fn is_version_dir(p: &Path) -> bool {
    p.is_dir()
        && p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.len() > 1 && n.starts_with('v') && n[1..].bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `p` lies in a format-version folder (the cache never touches other files).
fn is_ours(p: &Path) -> bool {
    p.ancestors().skip(1).take(3).any(is_version_dir)
}

fn is_temp(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(".tmp-"))
}

/// Regular files under `dir` (version folders and their kind folders only):
/// (path, length, modification time).
fn collect_files(dir: &Path, depth: u32, out: &mut Vec<(PathBuf, u64, SystemTime)>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let path = e.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if (depth == 0 && is_version_dir(&path)) || depth == 1 {
                collect_files(&path, depth + 1, out);
            }
        } else if meta.is_file() && depth >= 1 {
            out.push((path, meta.len(), meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)));
        }
    }
}

/// A number unique within this process (temporary file names).
fn unique() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let t = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    NEXT.fetch_add(1, Ordering::Relaxed) ^ t.rotate_left(20)
}

/// FNV-1a, 64 bits (entry names and checksums; stable across processes and builds).
pub fn fnv64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The file bytes of an entry.
pub fn encode_envelope(key: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER + key.len() + payload.len());
    v.extend_from_slice(MAGIC);
    v.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    v.extend_from_slice(&(key.len() as u64).to_le_bytes());
    v.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    v.extend_from_slice(&fnv64(&[key, payload]).to_le_bytes());
    v.extend_from_slice(key);
    v.extend_from_slice(payload);
    v
}

/// (key, payload) of entry file bytes; `None` when damaged or of another version.
pub fn decode_envelope(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let head = bytes.get(..HEADER)?;
    if &head[..8] != MAGIC {
        return None;
    }
    let word = |at: usize| -> Option<u64> { Some(u64::from_le_bytes(head.get(at..at + 8)?.try_into().ok()?)) };
    let version = u32::from_le_bytes(head.get(8..12)?.try_into().ok()?);
    if version != FORMAT_VERSION {
        return None;
    }
    let klen = usize::try_from(word(12)?).ok()?;
    let plen = usize::try_from(word(20)?).ok()?;
    let sum = word(28)?;
    let rest = &bytes[HEADER..];
    if klen.checked_add(plen)? != rest.len() {
        return None;
    }
    let (key, payload) = rest.split_at(klen);
    (fnv64(&[key, payload]) == sum).then_some((key, payload))
}

/// A stored (key, payload).
type Entry = (Vec<u8>, Vec<u8>);

/// Read and check one entry file: `Ok(None)` when absent, `Err` when unreadable or
/// damaged.
fn read_entry(path: &Path) -> Result<Option<Entry>, ()> {
    let mut f = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(()),
    };
    let len = f.metadata().map_err(|_| ())?.len();
    if len > MAX_ENTRY_BYTES {
        return Err(());
    }
    let mut bytes = Vec::with_capacity(len as usize);
    f.read_to_end(&mut bytes).map_err(|_| ())?;
    let (k, p) = decode_envelope(&bytes).ok_or(())?;
    Ok(Some((k.to_vec(), p.to_vec())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trip_and_damage() {
        let e = encode_envelope(b"key", b"payload");
        assert_eq!(decode_envelope(&e), Some((&b"key"[..], &b"payload"[..])));
        for cut in 0..e.len() {
            assert_eq!(decode_envelope(&e[..cut]), None, "truncated at {cut}");
        }
        for i in 0..e.len() {
            let mut d = e.clone();
            d[i] ^= 0x5a;
            assert_eq!(decode_envelope(&d), None, "byte {i} flipped");
        }
    }
}
