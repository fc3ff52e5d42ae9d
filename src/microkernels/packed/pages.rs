//! The memory packed weights live in: transparent huge pages where the system offers them.
//!
//! A network's packed weights are megabytes of fresh memory, each byte written once at
//! initialisation. In 4 KiB pages every page's first write traps into the kernel, which
//! allocates, zeroes, charges and maps it: on a 2-vCPU VM the 14 MB of MobileNet v2's
//! packed weights took about 5 ms of page faults, half of its initialisation, and 0.3 ms
//! in 2 MiB pages. The allocator asks for huge pages only if told (a glibc tunable), and
//! then only for blocks of 2 MiB and more, while most layers' weights are smaller. So
//! packed buffers are carved out of chunks: 2 MiB-aligned anonymous mappings marked
//! `MADV_HUGEPAGE`, handed out in order (a bump pointer; freed space is never reused, so
//! every buffer is fresh, zeroed memory).
//!
//! What this costs beyond the buffers themselves stays small:
//! - the huge page at the frontier (the end of the last buffer handed out) is whole once
//!   touched; [`release_spare`] gives its unused part back (the interpreter calls it when
//!   its kernels are prepared);
//! - a freed buffer's whole pages go back at once (`MADV_DONTNEED`), so a chunk that
//!   outlives most of its buffers keeps their address space only;
//! - a chunk is unmapped when its last buffer is freed.
//!
//! Where mapping fails (not Linux, an address-space limit, strict overcommit) or
//! `TFLITE_RS_NO_HUGE_PAGES` is set, [`alloc_zeroed`] returns `None` and the caller uses
//! the ordinary heap.

#[cfg(target_os = "linux")]
pub use linux::{alloc_zeroed, free, release_spare};

#[cfg(not(target_os = "linux"))]
mod portable {
    use core::ptr::NonNull;

    /// No page-level allocation here: always `None`.
    pub fn alloc_zeroed(_bytes: usize) -> Option<NonNull<u8>> {
        None
    }

    /// Never called: nothing is allocated.
    pub fn free(_ptr: NonNull<u8>, _bytes: usize) {}

    /// Nothing to release.
    pub fn release_spare() {}
}

#[cfg(not(target_os = "linux"))]
pub use portable::{alloc_zeroed, free, release_spare};

/// Whether the environment turns huge pages off (`TFLITE_RS_NO_HUGE_PAGES` set, not "0").
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn disabled_by_env() -> bool {
    std::env::var_os("TFLITE_RS_NO_HUGE_PAGES").is_some_and(|v| !v.is_empty() && v != "0")
}

#[cfg(target_os = "linux")]
mod linux {
    use core::ptr::NonNull;
    use parking_lot::Mutex;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A transparent huge page.
    const HUGE: usize = 2 << 20;
    /// Address space each shared chunk takes (only what is written becomes memory).
    const CHUNK: usize = 32 << 20;
    /// Buffers from this size on get a mapping of their own, unmapped when they are freed.
    const OWN_MAPPING_FROM: usize = 8 << 20;
    /// Start alignment of every buffer (what the microkernels' loads want at most).
    const ALIGN: usize = 64;

    /// One mapping: `[base, base + len)`, handed out up to `frontier`, with `live`
    /// buffers still in use.
    struct Chunk {
        base: usize,
        len: usize,
        frontier: usize,
        live: usize,
    }

    impl Chunk {
        fn holds(&self, addr: usize) -> bool {
            (self.base..self.base + self.len).contains(&addr)
        }
    }

    /// The chunk small buffers come from, and every other chunk with buffers alive.
    struct Heap {
        current: Option<Chunk>,
        others: Vec<Chunk>,
    }

    static HEAP: Mutex<Heap> = Mutex::new(Heap { current: None, others: Vec::new() });

    /// Set when the frontier moved since [`release_spare`] last looked.
    static FRONTIER_MOVED: AtomicBool = AtomicBool::new(false);

    fn page_size() -> usize {
        static PAGE: OnceLock<usize> = OnceLock::new();
        // SAFETY: sysconf has no preconditions.
        *PAGE.get_or_init(|| match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
            p if p > 0 && (p as usize).is_power_of_two() => p as usize,
            _ => 4096,
        })
    }

    fn enabled() -> bool {
        static ON: OnceLock<bool> = OnceLock::new();
        *ON.get_or_init(|| !super::disabled_by_env() && page_size() < HUGE)
    }

    /// Maps `len` bytes (a multiple of the page size) at a huge-page-aligned address,
    /// marked for huge pages; `None` if the system refuses.
    fn map(len: usize) -> Option<usize> {
        let reserve = len.checked_add(HUGE)?;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing
        // touches no existing memory.
        let raw = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                reserve,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return None;
        }
        let start = raw as usize;
        let base = start.next_multiple_of(HUGE);
        let (head, tail) = (base - start, start + reserve - (base + len));
        // SAFETY: the head and tail lie inside the mapping just made, outside
        // `[base, base + len)`, and nothing refers to them.
        unsafe {
            if head > 0 {
                libc::munmap(start as *mut libc::c_void, head);
            }
            if tail > 0 {
                libc::munmap((base + len) as *mut libc::c_void, tail);
            }
            // Advice only: where the system declines, the memory works in small pages.
            libc::madvise(base as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        Some(base)
    }

    fn unmap(c: &Chunk) {
        // SAFETY: `c` is a mapping made by `map` whose buffers have all been freed.
        unsafe {
            libc::munmap(c.base as *mut libc::c_void, c.len);
        }
    }

    /// Gives back the whole pages inside `[from, to)`, which no live buffer uses.
    fn discard(from: usize, to: usize) {
        let page = page_size();
        let (from, to) = (from.next_multiple_of(page), to / page * page);
        if from < to {
            // SAFETY: `[from, to)` lies inside a live mapping and holds no live buffer's
            // bytes; after MADV_DONTNEED it reads as zeros, as fresh memory does.
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_DONTNEED);
            }
        }
    }

    /// `bytes` zeroed bytes aligned to 64, in memory that may use huge pages; `None`
    /// when `bytes` is 0, huge pages are turned off, or the system refuses a mapping.
    pub fn alloc_zeroed(bytes: usize) -> Option<NonNull<u8>> {
        if bytes == 0 || !enabled() {
            return None;
        }
        let mut heap = HEAP.lock();
        if bytes >= OWN_MAPPING_FROM {
            let len = bytes.checked_next_multiple_of(page_size())?;
            let base = map(len)?;
            heap.others.push(Chunk { base, len, frontier: len, live: 1 });
            return NonNull::new(base as *mut u8);
        }
        let need = bytes.next_multiple_of(ALIGN);
        if heap.current.as_ref().is_none_or(|c| c.len - c.frontier < need) {
            let base = map(CHUNK)?;
            if let Some(old) = heap.current.replace(Chunk { base, len: CHUNK, frontier: 0, live: 0 }) {
                if old.live == 0 {
                    unmap(&old);
                } else {
                    // Nothing more comes from it: the rest of its frontier's huge page goes back.
                    release_frontier(&old);
                    heap.others.push(old);
                }
            }
        }
        let c = heap.current.as_mut()?;
        let addr = c.base + c.frontier;
        c.frontier += need;
        c.live += 1;
        FRONTIER_MOVED.store(true, Ordering::Relaxed);
        NonNull::new(addr as *mut u8)
    }

    /// Frees a buffer [`alloc_zeroed`] returned for `bytes` bytes.
    pub fn free(ptr: NonNull<u8>, bytes: usize) {
        let addr = ptr.as_ptr() as usize;
        let mut heap = HEAP.lock();
        let heap = &mut *heap;
        if let Some(c) = heap.current.as_mut().filter(|c| c.holds(addr)) {
            c.live -= 1;
            if c.live == 0 {
                unmap(c);
                heap.current = None;
            } else {
                discard(addr, addr + bytes);
            }
            return;
        }
        if let Some(i) = heap.others.iter().position(|c| c.holds(addr)) {
            let c = &mut heap.others[i];
            c.live -= 1;
            if c.live == 0 {
                unmap(c);
                heap.others.swap_remove(i);
            } else {
                discard(addr, addr + bytes);
            }
        }
    }

    /// Gives back the unused part of the huge page at the frontier, which became memory
    /// in one piece when the last buffer below it was written. Cheap when nothing was
    /// allocated since the last call.
    pub fn release_spare() {
        if !FRONTIER_MOVED.swap(false, Ordering::Relaxed) {
            return;
        }
        let heap = HEAP.lock();
        if let Some(c) = &heap.current {
            release_frontier(c);
        }
    }

    /// Gives back the pages between `c`'s frontier and the next huge-page boundary.
    fn release_frontier(c: &Chunk) {
        let end = c.base + c.frontier;
        discard(end, end.next_multiple_of(HUGE).min(c.base + c.len));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_zeroed_aligned_disjoint_and_freed() {
        let sizes = [1usize, 63, 64, 4096, 100_000, 3 << 20, 9 << 20, 5];
        let bufs: Vec<_> = sizes.iter().map(|&n| (alloc_zeroed(n), n)).collect();
        if cfg!(target_os = "linux") && !disabled_by_env() {
            assert!(bufs.iter().all(|(p, _)| p.is_some()), "mapping failed");
        }
        let mut ranges = Vec::new();
        for &(p, n) in &bufs {
            let Some(p) = p else { continue };
            assert_eq!(p.as_ptr() as usize % 64, 0);
            // SAFETY: `p` is a fresh buffer of `n` bytes owned by this test.
            let s = unsafe { core::slice::from_raw_parts_mut(p.as_ptr(), n) };
            assert!(s.iter().all(|&b| b == 0), "a fresh buffer of {n} bytes is not zero");
            s.fill(0xAB);
            ranges.push((p.as_ptr() as usize, n));
        }
        ranges.sort();
        assert!(ranges.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0), "buffers overlap");
        release_spare();
        // Every buffer still holds what was written after the spare pages went back.
        for &(p, n) in &bufs {
            let Some(p) = p else { continue };
            // SAFETY: as above; the buffer is still live.
            let s = unsafe { core::slice::from_raw_parts(p.as_ptr(), n) };
            assert!(s.iter().all(|&b| b == 0xAB), "a buffer of {n} bytes changed");
        }
        for (p, n) in bufs {
            if let Some(p) = p {
                free(p, n);
            }
        }
    }
}
