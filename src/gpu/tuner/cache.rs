//! Persistent work-group tuning cache.
//!
//! TFLite keeps tuned work groups only inside its all-or-nothing serialized model blob
//! (keyed by model token + options, device only checked through the platform version).
//! Ours is a small per-kernel cache: key = (device, driver, kernel source hash, grid) →
//! chosen work group (plus the medians that justified it, for inspection), so identical
//! kernels share entries across layers and models, and a driver update only misses.
//!
//! ## File format (text, UTF-8, version 1)
//! ```text
//! TFLRS-WGTUNE <format version> <tuner version>
//! scope\t<scope>
//! entries\t<N>
//! e\t<device>\t<driver>\t<kernel hash>\t<gx>,<gy>,<gz>\t<wx>,<wy>,<wz>\t<median ns>\t<baseline ns>\t<samples>
//! …N lines…
//! crc32\t<8 lower-case hex digits of the CRC-32 of every byte before this line>
//! ```
//! Strings escape `\\`, tab, CR and LF. The *scope* is the file-level key chosen by the
//! owner (e.g. runtime version + model token); the tuner version changes whenever the
//! candidate generator or the selection changes meaningfully.
//!
//! ## Robustness
//! - Loading never fails hard: a missing file is [`LoadStatus::Missing`]; a file with
//!   another format/tuner version or scope (stale), a bad checksum, a truncated or
//!   garbage file (corrupt), an unreadable or oversized file are all
//!   [`LoadStatus::Ignored`] with the reason, and the cache starts empty (it is rewritten
//!   on the next save).
//! - Saving is atomic: the new content goes to a unique temporary file in the same
//!   directory, is `fsync`ed and `rename`d over the cache, so readers see the old or the
//!   new file, never a torn one. Concurrent writers (threads or processes) serialise on a
//!   `<file>.lock` created with `O_EXCL` (stale after 30 s) and merge with what is on
//!   disk, so nobody's entries are lost; if the lock cannot be had in time the write
//!   still happens atomically, without the merge.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use super::candidates::WorkGroup;
use crate::error::{Error, Result};

pub const MAGIC: &str = "TFLRS-WGTUNE";
pub const FORMAT_VERSION: u32 = 1;
/// Version of the tuning algorithm whose results the file holds.
pub const TUNER_VERSION: u32 = 1;
/// Files above this size are ignored.
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// A lock file older than this is considered left over by a crashed writer.
pub const STALE_LOCK: Duration = Duration::from_secs(30);
/// How long a writer waits for the lock before writing without merging.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// What a tuning result is keyed by.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CacheKey {
    /// Device identity (e.g. platform name + version + device name + compute units).
    pub device: String,
    /// `CL_DRIVER_VERSION` (and anything else that invalidates timings).
    pub driver: String,
    /// Hash of the final kernel source and build options ([`kernel_hash`]).
    pub kernel_hash: String,
    pub grid: WorkGroup,
}

/// A cached choice.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheEntry {
    pub work_group: WorkGroup,
    /// Median time of the chosen work group (ns; NaN when unmeasured).
    pub median_ns: f64,
    /// Median time of the baseline (ns; NaN when unmeasured).
    pub baseline_ns: f64,
    /// Timed launches spent.
    pub samples: u32,
}

/// Result of [`TuneCache::load`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadStatus {
    Loaded {
        entries: usize,
    },
    Missing,
    /// The file was not used; the reason says why (stale, corrupt, unreadable).
    Ignored(String),
}

/// Result of [`TuneCache::save`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaveReport {
    pub entries: usize,
    /// Whether the entries on disk were merged in (under the lock).
    pub merged: bool,
}

/// 64-bit FNV-1a.
pub fn fnv1a64(bytes: &[u8], seed: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A 128-bit fingerprint (two independent FNV-1a lanes) of a kernel's final source and
/// build options, as 32 hex digits.
pub fn kernel_hash(source: &str, build_options: &str) -> String {
    let mut data = Vec::with_capacity(source.len() + build_options.len() + 1);
    data.extend_from_slice(source.as_bytes());
    data.push(0);
    data.extend_from_slice(build_options.as_bytes());
    format!("{:016x}{:016x}", fnv1a64(&data, 0), fnv1a64(&data, 0x5bd1_e995_9e37_79b9))
}

const CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// CRC-32 (IEEE 802.3).
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for &b in bytes {
        c = CRC_TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8);
    }
    c ^ 0xFFFF_FFFF
}

fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\\' => o.push_str("\\\\"),
            '\t' => o.push_str("\\t"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            c => o.push(c),
        }
    }
    o
}

fn unescape(s: &str) -> Result<String> {
    let mut o = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(ch) = it.next() {
        if ch != '\\' {
            o.push(ch);
            continue;
        }
        match it.next() {
            Some('\\') => o.push('\\'),
            Some('t') => o.push('\t'),
            Some('n') => o.push('\n'),
            Some('r') => o.push('\r'),
            other => crate::bail!("bad escape \\{other:?}"),
        }
    }
    Ok(o)
}

fn parse_triple(s: &str) -> Result<WorkGroup> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.len() != 3 {
        crate::bail!("bad triple {s:?}");
    }
    let mut out = [0usize; 3];
    for (o, p) in out.iter_mut().zip(parts) {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            crate::bail!("bad number {p:?}");
        }
        *o = p.parse().map_err(|_| Error::new(format!("bad number {p:?}")))?;
    }
    Ok(out)
}

fn parse_f64(s: &str) -> Result<f64> {
    s.parse::<f64>().map_err(|_| Error::new(format!("bad float {s:?}")))
}

/// The in-memory cache; see the module docs for the file.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct TuneCache {
    scope: String,
    entries: BTreeMap<CacheKey, CacheEntry>,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

struct LockGuard {
    path: PathBuf,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

fn lock_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".lock");
    PathBuf::from(p)
}

fn acquire_lock(path: &Path, wait: Duration) -> Option<LockGuard> {
    let lp = lock_path(path);
    let start = Instant::now();
    loop {
        match OpenOptions::new().write(true).create_new(true).open(&lp) {
            Ok(mut f) => {
                let _ = writeln!(f, "{}", std::process::id());
                return Some(LockGuard { path: lp });
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let stale = fs::metadata(&lp)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| SystemTime::now().duration_since(t).ok())
                    .is_some_and(|age| age > STALE_LOCK);
                if stale {
                    let _ = fs::remove_file(&lp);
                    continue;
                }
            }
            Err(_) => return None,
        }
        if start.elapsed() > wait {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

impl TuneCache {
    /// An empty cache for files of this `scope` (the file-level key).
    pub fn new(scope: impl Into<String>) -> Self {
        TuneCache { scope: scope.into(), entries: BTreeMap::new() }
    }

    pub fn scope(&self) -> &str {
        &self.scope
    }

    pub fn get(&self, key: &CacheKey) -> Option<&CacheEntry> {
        self.entries.get(key)
    }

    pub fn insert(&mut self, key: CacheKey, entry: CacheEntry) {
        self.entries.insert(key, entry);
    }

    pub fn remove(&mut self, key: &CacheKey) -> Option<CacheEntry> {
        self.entries.remove(key)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&CacheKey, &CacheEntry)> {
        self.entries.iter()
    }

    /// Drops the entries of `device` measured with another driver (obsolete after a driver
    /// update); other devices' entries are kept.
    pub fn retain_driver(&mut self, device: &str, driver: &str) {
        self.entries.retain(|k, _| k.device != device || k.driver == driver);
    }

    /// The file content.
    pub fn encode(&self) -> Vec<u8> {
        let mut s = format!(
            "{MAGIC} {FORMAT_VERSION} {TUNER_VERSION}\nscope\t{}\nentries\t{}\n",
            escape(&self.scope),
            self.entries.len()
        );
        for (k, v) in &self.entries {
            s.push_str(&format!(
                "e\t{}\t{}\t{}\t{},{},{}\t{},{},{}\t{:e}\t{:e}\t{}\n",
                escape(&k.device),
                escape(&k.driver),
                escape(&k.kernel_hash),
                k.grid[0],
                k.grid[1],
                k.grid[2],
                v.work_group[0],
                v.work_group[1],
                v.work_group[2],
                v.median_ns,
                v.baseline_ns,
                v.samples
            ));
        }
        let crc = crc32(s.as_bytes());
        s.push_str(&format!("crc32\t{crc:08x}\n"));
        s.into_bytes()
    }

    /// Parses a file's content; `Err(reason)` when it is stale or corrupt.
    pub fn decode(bytes: &[u8], scope: &str) -> Result<TuneCache> {
        let text = std::str::from_utf8(bytes).map_err(|_| Error::new("corrupt: not UTF-8"))?;
        if !text.ends_with('\n') {
            crate::bail!("corrupt: truncated (no final newline)");
        }
        // Header first: a stale version is reported as such even if the rest differs.
        let first = text.split('\n').next().unwrap_or("");
        let mut hf = first.split(' ');
        if hf.next() != Some(MAGIC) {
            crate::bail!("corrupt: not a work-group tuning cache (bad magic)");
        }
        let (fv, tv) = (hf.next().unwrap_or(""), hf.next().unwrap_or(""));
        if hf.next().is_some() {
            crate::bail!("corrupt: bad header");
        }
        if fv != FORMAT_VERSION.to_string() || tv != TUNER_VERSION.to_string() {
            crate::bail!(
                "stale: file has format {fv:?} tuner {tv:?}, expected format {FORMAT_VERSION} tuner {TUNER_VERSION}"
            );
        }
        let body_end = text.rfind("crc32\t").ok_or_else(|| Error::new("corrupt: no checksum line"))?;
        if body_end == 0 || !text[..body_end].ends_with('\n') {
            crate::bail!("corrupt: checksum line misplaced");
        }
        let crc_line = &text[body_end + "crc32\t".len()..text.len() - 1];
        if crc_line.len() != 8 || !crc_line.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            crate::bail!("corrupt: bad checksum field");
        }
        let want = u32::from_str_radix(crc_line, 16).map_err(|_| Error::new("corrupt: bad checksum field"))?;
        let got = crc32(&text.as_bytes()[..body_end]);
        if want != got {
            crate::bail!("corrupt: checksum mismatch (file {want:08x}, content {got:08x})");
        }
        let mut lines = text[..body_end - 1].split('\n');
        lines.next(); // header, checked above
        let scope_line = lines.next().ok_or_else(|| Error::new("corrupt: no scope line"))?;
        let file_scope =
            unescape(scope_line.strip_prefix("scope\t").ok_or_else(|| Error::new("corrupt: bad scope line"))?)?;
        if file_scope != scope {
            crate::bail!("stale: file scope {file_scope:?} is not {scope:?}");
        }
        let count_line = lines.next().ok_or_else(|| Error::new("corrupt: no entries line"))?;
        let count: usize = count_line
            .strip_prefix("entries\t")
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| Error::new("corrupt: bad entries line"))?;
        let mut cache = TuneCache::new(scope);
        let mut seen = 0usize;
        for (i, line) in lines.enumerate() {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() != 9 || f[0] != "e" {
                crate::bail!("corrupt: bad entry line {}", i + 1);
            }
            let key = CacheKey {
                device: unescape(f[1])?,
                driver: unescape(f[2])?,
                kernel_hash: unescape(f[3])?,
                grid: parse_triple(f[4])?,
            };
            let entry = CacheEntry {
                work_group: parse_triple(f[5])?,
                median_ns: parse_f64(f[6])?,
                baseline_ns: parse_f64(f[7])?,
                samples: f[8].parse().map_err(|_| Error::new(format!("corrupt: bad sample count {:?}", f[8])))?,
            };
            cache.entries.insert(key, entry);
            seen += 1;
        }
        if seen != count || cache.entries.len() != count {
            crate::bail!("corrupt: {seen} entry lines, header says {count}");
        }
        Ok(cache)
    }

    /// Loads `path` for `scope`. Never fails: see [`LoadStatus`].
    pub fn load(path: &Path, scope: &str) -> (TuneCache, LoadStatus) {
        let empty = || TuneCache::new(scope);
        let meta = match fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return (empty(), LoadStatus::Missing),
            Err(e) => return (empty(), LoadStatus::Ignored(format!("unreadable: {e}"))),
        };
        if meta.len() > MAX_FILE_BYTES {
            return (empty(), LoadStatus::Ignored(format!("too large: {} bytes", meta.len())));
        }
        let bytes = match fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return (empty(), LoadStatus::Missing),
            Err(e) => return (empty(), LoadStatus::Ignored(format!("unreadable: {e}"))),
        };
        match TuneCache::decode(&bytes, scope) {
            Ok(c) => {
                let n = c.len();
                (c, LoadStatus::Loaded { entries: n })
            }
            Err(reason) => (empty(), LoadStatus::Ignored(reason.message)),
        }
    }

    /// Writes the cache to `path` atomically, merging with the valid entries already there
    /// (ours win on equal keys); afterwards `self` holds the merged entries.
    pub fn save(&mut self, path: &Path) -> io::Result<SaveReport> {
        self.save_filtered(path, &|_| true)
    }

    /// [`TuneCache::save`], merging only the disk entries for which `keep` is true (e.g.
    /// not those of an obsolete driver).
    pub fn save_filtered(&mut self, path: &Path, keep: &dyn Fn(&CacheKey) -> bool) -> io::Result<SaveReport> {
        let guard = acquire_lock(path, LOCK_WAIT);
        let merged = guard.is_some();
        if merged && let (disk, LoadStatus::Loaded { .. }) = TuneCache::load(path, &self.scope) {
            for (k, v) in disk.entries {
                if keep(&k) {
                    self.entries.entry(k).or_insert(v);
                }
            }
        }
        write_atomically(path, &self.encode())?;
        drop(guard);
        Ok(SaveReport { entries: self.entries.len(), merged })
    }
}

/// Writes `bytes` to a unique temporary file next to `path`, syncs it and renames it over
/// `path` (then syncs the directory, best effort).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name =
        path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "cache path has no file name"))?;
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let mut tmp_name = name.to_owned();
    tmp_name.push(format!(".tmp.{}.{n}.{nanos}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
        return result;
    }
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::tuner::profiler::XorShift64;

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "wgtune-{name}-{}-{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn key(i: usize) -> CacheKey {
        CacheKey {
            device: "Adreno (TM) 640\tOpenCL 2.0".into(),
            driver: "OpenCL 2.0 QUALCOMM build: commit #\\n 512.415".into(),
            kernel_hash: kernel_hash(&format!("__kernel void k{i}() {{}}"), "-cl-fast-relaxed-math"),
            grid: [64, 64, i],
        }
    }

    fn entry(i: usize) -> CacheEntry {
        CacheEntry { work_group: [8, 4, i % 4 + 1], median_ns: 1234.5 + i as f64, baseline_ns: 2e6, samples: 17 }
    }

    fn sample_cache() -> TuneCache {
        let mut c = TuneCache::new("tensorflowlite_c 0.1.0 model=abc");
        for i in 0..5 {
            c.insert(key(i), entry(i));
        }
        c.insert(
            CacheKey {
                device: "weird\\dev\nice\r".into(),
                driver: String::new(),
                kernel_hash: "x".into(),
                grid: [1, 1, 1],
            },
            CacheEntry { work_group: [1, 1, 1], median_ns: f64::NAN, baseline_ns: f64::INFINITY, samples: 0 },
        );
        c
    }

    #[test]
    fn crc_and_hash() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        assert_eq!(kernel_hash("a", "b"), kernel_hash("a", "b"));
        assert_ne!(kernel_hash("a", "b"), kernel_hash("a", "c"));
        assert_ne!(kernel_hash("ab", ""), kernel_hash("a", "b"));
        assert_eq!(kernel_hash("a", "b").len(), 32);
    }

    #[test]
    fn round_trip() {
        let d = tmpdir("rt");
        let path = d.join("cache.wgtune");
        let mut c = sample_cache();
        let r = c.save(&path).unwrap();
        assert_eq!(r.entries, 6);
        assert!(r.merged);
        assert!(!lock_path(&path).exists(), "lock released");
        let (l, st) = TuneCache::load(&path, c.scope());
        assert_eq!(st, LoadStatus::Loaded { entries: 6 });
        for (k, v) in c.iter() {
            let got = l.get(k).unwrap();
            assert_eq!(got.work_group, v.work_group);
            assert_eq!(got.samples, v.samples);
            assert!(got.median_ns == v.median_ns || got.median_ns.is_nan() && v.median_ns.is_nan());
            assert_eq!(got.baseline_ns, v.baseline_ns);
        }
        // Byte-identical re-encode.
        assert_eq!(l.encode(), c.encode());
        // No temp files left behind.
        let names: Vec<_> = fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn missing_and_key_changes() {
        let d = tmpdir("key");
        let path = d.join("c.wgtune");
        assert_eq!(TuneCache::load(&path, "s").1, LoadStatus::Missing);
        let mut c = sample_cache();
        c.save(&path).unwrap();
        let (l, _) = TuneCache::load(&path, c.scope());
        let k = key(2);
        assert!(l.get(&k).is_some());
        // Any field of the key changes -> miss.
        assert!(l.get(&CacheKey { driver: "new driver".into(), ..k.clone() }).is_none());
        assert!(l.get(&CacheKey { device: "other".into(), ..k.clone() }).is_none());
        assert!(l.get(&CacheKey { kernel_hash: kernel_hash("changed", ""), ..k.clone() }).is_none());
        assert!(l.get(&CacheKey { grid: [64, 64, 3], ..k.clone() }).is_none());
        // Another scope: the whole file is stale.
        let (l2, st) = TuneCache::load(&path, "another model");
        assert!(l2.is_empty());
        assert!(matches!(&st, LoadStatus::Ignored(r) if r.starts_with("stale")), "{st:?}");
        // Another tuner/format version: stale.
        let text = String::from_utf8(c.encode()).unwrap();
        let old = text.replacen(
            &format!("{MAGIC} {FORMAT_VERSION} {TUNER_VERSION}"),
            &format!("{MAGIC} {FORMAT_VERSION} 0"),
            1,
        );
        let r = TuneCache::decode(old.as_bytes(), c.scope()).unwrap_err();
        assert!(r.message.starts_with("stale"), "{r}");
        // Driver update: retain_driver drops that device's old entries only.
        let mut m = sample_cache();
        m.retain_driver(&key(0).device, "new driver");
        assert_eq!(m.len(), 1);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn corruption_is_ignored_never_fatal() {
        let c = sample_cache();
        let good = c.encode();
        assert!(TuneCache::decode(&good, c.scope()).is_ok());
        // Every truncation.
        for len in 0..good.len() {
            let r = TuneCache::decode(&good[..len], c.scope());
            assert!(r.is_err(), "truncated to {len} accepted");
        }
        // Every single-byte change (several patterns).
        for pos in 0..good.len() {
            for x in [0x01u8, 0x20, 0x80, 0xFF] {
                let mut b = good.clone();
                b[pos] ^= x;
                let r = TuneCache::decode(&b, c.scope());
                assert!(r.is_err(), "flip {x:#x} at {pos} accepted");
            }
        }
        // Garbage.
        let mut rng = XorShift64::new(99);
        for n in [0usize, 1, 7, 100, 5000] {
            for _ in 0..50 {
                let b: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                assert!(TuneCache::decode(&b, c.scope()).is_err());
            }
        }
        // Garbage that looks like the format.
        let mut b = good.clone();
        b.extend_from_slice(b"e\tjunk\n");
        assert!(TuneCache::decode(&b, c.scope()).is_err());
        // Through the file system: ignored with a reason, cache empty, then rewritten.
        let d = tmpdir("corrupt");
        let path = d.join("c.wgtune");
        fs::write(&path, &good[..good.len() / 2]).unwrap();
        let (mut l, st) = TuneCache::load(&path, c.scope());
        assert!(matches!(&st, LoadStatus::Ignored(r) if r.starts_with("corrupt")), "{st:?}");
        assert!(l.is_empty());
        l.insert(key(9), entry(9));
        let r = l.save(&path).unwrap();
        assert_eq!(r.entries, 1, "corrupt file not merged");
        assert_eq!(TuneCache::load(&path, c.scope()).1, LoadStatus::Loaded { entries: 1 });
        // A directory where the file should be: ignored, not fatal.
        let dpath = d.join("dir.wgtune");
        fs::create_dir_all(&dpath).unwrap();
        assert!(matches!(TuneCache::load(&dpath, "s").1, LoadStatus::Ignored(_)));
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn stale_lock_is_broken_and_busy_lock_does_not_block_forever() {
        let d = tmpdir("lock");
        let path = d.join("c.wgtune");
        let lp = lock_path(&path);
        fs::write(&lp, "12345\n").unwrap();
        // Busy (fresh) lock: a short wait gives up.
        assert!(acquire_lock(&path, Duration::from_millis(20)).is_none());
        // (Breaking a lock older than STALE_LOCK needs an old mtime, which std cannot set;
        // that path is exercised by hand.) Released lock: acquired at once, removed on drop.
        fs::remove_file(&lp).unwrap();
        let g = acquire_lock(&path, Duration::from_millis(20));
        assert!(g.is_some());
        drop(g);
        assert!(!lp.exists());
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn concurrent_writers_never_tear_and_merge() {
        let d = tmpdir("conc");
        let path = d.join("shared.wgtune");
        let scope = "conc";
        let writers = 8;
        let per = 15;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let path = path.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut loads = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    let (_, st) = TuneCache::load(&path, scope);
                    assert!(matches!(st, LoadStatus::Loaded { .. } | LoadStatus::Missing), "reader saw {st:?}");
                    loads += 1;
                }
                loads
            })
        };
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for i in 0..per {
                        let (mut c, st) = TuneCache::load(&path, scope);
                        assert!(matches!(st, LoadStatus::Loaded { .. } | LoadStatus::Missing), "{st:?}");
                        c.insert(
                            CacheKey {
                                device: format!("dev{w}"),
                                driver: "d".into(),
                                kernel_hash: format!("k{i}"),
                                grid: [w, i, 1],
                            },
                            CacheEntry { work_group: [w + 1, i + 1, 1], median_ns: 1.0, baseline_ns: 2.0, samples: 3 },
                        );
                        let r = c.save(&path).unwrap();
                        assert!(r.merged);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        let loads = reader.join().unwrap();
        let (c, st) = TuneCache::load(&path, scope);
        assert_eq!(st, LoadStatus::Loaded { entries: writers * per }, "after {loads} concurrent loads");
        for w in 0..writers {
            for i in 0..per {
                let k = CacheKey {
                    device: format!("dev{w}"),
                    driver: "d".into(),
                    kernel_hash: format!("k{i}"),
                    grid: [w, i, 1],
                };
                assert_eq!(c.get(&k).unwrap().work_group, [w + 1, i + 1, 1]);
            }
        }
        let leftovers: Vec<_> = fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");
        let _ = fs::remove_dir_all(&d);
    }
}
