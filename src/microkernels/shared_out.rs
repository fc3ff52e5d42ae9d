//! An output matrix that several threads fill at once, each its own tiles: split in
//! column blocks, the tiles of two threads interleave in memory, so neither can hold a
//! slice of the whole. The GEMM drivers' `igemm_shared` entries write through it.

use core::marker::PhantomData;

/// The caller's output, borrowed mutably for `'a` and handed to several threads.
pub struct SharedOut<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

impl<T> Clone for SharedOut<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedOut<'_, T> {}

// SAFETY: a `SharedOut` hands its pointer only to code in this crate (the drivers'
// `igemm_shared`), whose callers guarantee that no two threads write (or read) the same
// element; `T: Send` values may be written from any thread.
unsafe impl<T: Send> Send for SharedOut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedOut<'_, T> {}

impl<'a, T> SharedOut<'a, T> {
    pub fn new(out: &'a mut [T]) -> Self {
        SharedOut { ptr: out.as_mut_ptr(), len: out.len(), _borrow: PhantomData }
    }

    /// Elements of the whole output.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the output has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first element's address (only offset by the drivers, within `len`).
    pub(crate) fn ptr(&self) -> *mut T {
        self.ptr
    }
}
