//! The memory a plan is committed into: one owned, zero-initialised heap block
//! whose start is aligned to [`DEFAULT_TENSOR_ALIGNMENT`] (64) bytes.
//!
//! The interpreter makes one `AlignedBuffer` per arena, of the plan's
//! `arena_bytes` / `persistent_bytes`, and points every tensor at
//! `base + offset` (TFLite's `SimpleMemoryArena::Commit` + `ResolveAlloc`).
//! Since every offset is a multiple of 64, every tensor's data is 64-byte aligned.
//!
//! As TFLite's `ResizableAlignedBuffer`, the block is over-allocated by
//! `alignment - 1` bytes and the pointer rounded up; unlike it, the memory is
//! zeroed, so a kernel reading a tensor nobody wrote sees zeros, not stale heap.
//! The allocation asks for the allocator's natural alignment so that zeroing goes
//! through `calloc`, which gets large blocks as fresh (already zero) pages: asking
//! for 64-byte alignment instead makes `alloc_zeroed` `memset` the whole block, so
//! a model declaring a gigabyte tensor would touch a gigabyte at AllocateTensors.
//!
//! Failure is an `Err`, never an abort: a model whose arena does not fit in
//! memory must make `TfLiteInterpreterAllocateTensors` return an error, so
//! `handle_alloc_error` is never called.
//!
//! An empty buffer (0 bytes) allocates nothing, and its pointer is **null**,
//! matching TFLite, where zero-sized tensors and an empty arena have a NULL data
//! pointer. `as_slice` / `as_mut_slice` still return valid empty slices.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::fmt;
use std::ptr;

use super::DEFAULT_TENSOR_ALIGNMENT;
use crate::error::{Error, Result};

/// An owned, zeroed, 64-byte-aligned block of `len` bytes.
pub struct AlignedBuffer {
    /// Start of the block (64-byte aligned); null iff `len == 0`.
    ptr: *mut u8,
    len: usize,
    /// What the allocator returned (`ptr` rounded down), and the layout it was
    /// allocated with (needed again to free it).
    base: *mut u8,
    layout: Layout,
}

// SAFETY: `AlignedBuffer` uniquely owns its heap block, like `Vec<u8>`; moving it
// to another thread moves that ownership, and nothing else aliases the block
// except through borrows of the buffer, which the borrow checker governs.
unsafe impl Send for AlignedBuffer {}
// SAFETY: `&AlignedBuffer` only allows reads (`as_slice`, `as_ptr`); writes need
// `&mut AlignedBuffer`, so sharing it across threads is as safe as `&Vec<u8>`.
unsafe impl Sync for AlignedBuffer {}

impl AlignedBuffer {
    /// Alignment of the block's start.
    pub const ALIGNMENT: usize = DEFAULT_TENSOR_ALIGNMENT;

    /// Allocates `bytes` zeroed bytes. `Err` if the size is too large for a
    /// `Layout` (more than `isize::MAX` once rounded up to the alignment) or the
    /// allocator has no memory.
    pub fn new(bytes: usize) -> Result<Self> {
        let too_large = || Error::new(format!("cannot allocate an arena of {bytes} bytes: size too large"));
        let layout = bytes
            .checked_add(Self::ALIGNMENT - 1)
            .and_then(|n| Layout::from_size_align(n, 16).ok())
            .ok_or_else(too_large)?;
        if bytes == 0 {
            return Ok(Self { ptr: ptr::null_mut(), len: 0, base: ptr::null_mut(), layout });
        }
        // SAFETY: `layout` has a non-zero size (at least `ALIGNMENT`) and a valid
        // power-of-two alignment (`Layout::from_size_align` succeeded).
        let base = unsafe { alloc_zeroed(layout) };
        if base.is_null() {
            crate::bail!("out of memory allocating an arena of {bytes} bytes");
        }
        // Rounding up moves at most `ALIGNMENT - 1` bytes, which were over-allocated,
        // so `[ptr, ptr + bytes)` lies inside the block (`wrapping_add` needs no unsafe).
        let ptr = base.wrapping_add(base.align_offset(Self::ALIGNMENT));
        Ok(Self { ptr, len: bytes, base, layout })
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Start of the block (null when empty).
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    /// Start of the block (null when empty).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    /// Pointer to `[offset, offset + size)` inside the block, after checking the
    /// range is in bounds (the interpreter's `ResolveAlloc`). A zero-sized range
    /// gives a null pointer, like a zero-sized TFLite tensor.
    pub fn ptr_at(&mut self, offset: usize, size: usize) -> Result<*mut u8> {
        let end = offset.checked_add(size);
        if end.is_none_or(|end| end > self.len()) {
            crate::bail!("range [{offset}, +{size}) is outside an arena of {} bytes", self.len());
        }
        if size == 0 {
            return Ok(ptr::null_mut());
        }
        // `wrapping_add` needs no unsafe; the bounds check above keeps the result
        // inside the allocation (offset < len because size > 0).
        Ok(self.ptr.wrapping_add(offset))
    }

    pub fn as_slice(&self) -> &[u8] {
        if self.ptr.is_null() {
            return &[];
        }
        // SAFETY: `ptr` is non-null, so it points to a live allocation of
        // `len` bytes inside the block made by `new`, fully initialised (zeroed) and
        // owned by `self`; the returned borrow of `self` keeps it alive and
        // prevents mutation through `&mut self` meanwhile.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len()) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        if self.ptr.is_null() {
            return &mut [];
        }
        // SAFETY: as in `as_slice`; the exclusive borrow of `self` makes this the
        // only live reference into the block.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len()) }
    }
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        if !self.base.is_null() {
            // SAFETY: a non-null `base` was returned by `alloc_zeroed(self.layout)`
            // in `new`, has not been freed (only `drop` frees it) and `layout` is
            // unchanged since.
            unsafe { dealloc(self.base, self.layout) };
        }
    }
}

impl fmt::Debug for AlignedBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuffer").field("ptr", &self.ptr).field("len", &self.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_zeroed_and_aligned() {
        for bytes in [1usize, 63, 64, 65, 4096, 1 << 20] {
            let mut buf = AlignedBuffer::new(bytes).expect("allocation");
            assert_eq!(buf.len(), bytes);
            assert_eq!(buf.as_ptr() as usize % 64, 0, "{bytes} bytes: misaligned");
            assert!(buf.as_slice().iter().all(|&b| b == 0));
            buf.as_mut_slice()[bytes - 1] = 7;
            assert_eq!(buf.as_slice()[bytes - 1], 7);
        }
    }

    #[test]
    fn a_large_buffer_is_not_touched_until_used() {
        // Found by the mutation test: a model declaring a 1 GiB tensor made
        // AllocateTensors memset the whole arena (64-byte-aligned `alloc_zeroed`
        // does not use calloc). 1 GiB must now cost (next to) no resident memory.
        fn rss_kib() -> Option<u64> {
            let s = std::fs::read_to_string("/proc/self/status").ok()?;
            let l = s.lines().find(|l| l.starts_with("VmRSS:"))?;
            l.split_whitespace().nth(1)?.parse().ok()
        }
        let before = rss_kib();
        let buf = AlignedBuffer::new(1 << 30).expect("allocation");
        assert_eq!(buf.as_ptr() as usize % 64, 0);
        if let (Some(b), Some(a)) = (before, rss_kib()) {
            assert!(a < b + (128 << 10), "RSS grew from {b} KiB to {a} KiB");
        }
        assert_eq!(buf.as_slice()[(1 << 30) - 1], 0);
    }

    #[test]
    fn empty_buffer_has_null_pointer_and_empty_slices() {
        let mut buf = AlignedBuffer::new(0).expect("empty buffer");
        assert!(buf.is_empty());
        assert!(buf.as_ptr().is_null());
        assert!(buf.as_mut_ptr().is_null());
        assert!(buf.as_slice().is_empty());
        assert!(buf.as_mut_slice().is_empty());
        assert_eq!(buf.ptr_at(0, 0), Ok(ptr::null_mut()));
        assert!(buf.ptr_at(0, 1).is_err());
    }

    #[test]
    fn impossible_sizes_are_errors_not_aborts() {
        assert!(AlignedBuffer::new(usize::MAX).is_err());
        assert!(AlignedBuffer::new(isize::MAX as usize).is_err());
        // Representable as a Layout, but no allocator can serve 2^62 bytes.
        #[cfg(target_pointer_width = "64")]
        assert!(AlignedBuffer::new(1usize << 62).is_err());
    }

    #[test]
    fn ptr_at_checks_bounds() {
        let mut buf = AlignedBuffer::new(256).expect("allocation");
        let base = buf.as_mut_ptr();
        assert_eq!(buf.ptr_at(64, 192), Ok(base.wrapping_add(64)));
        assert_eq!(buf.ptr_at(256, 0), Ok(ptr::null_mut()));
        assert!(buf.ptr_at(64, 193).is_err());
        assert!(buf.ptr_at(usize::MAX, 2).is_err());
    }

    #[test]
    fn is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<AlignedBuffer>();
    }
}
