//! Weights repacked into a microkernel's layout, with a process-wide byte count.
//!
//! Packing happens once per node (at Prepare, or at the first Invoke for weights that
//! only become known then); the packed copy lives beside the arena, so its size is
//! reported with it (`tflite-bench` prints it next to the arena bytes).

mod pages;

pub use pages::release_spare;

use crate::error::{Error, Result};
use core::fmt;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE_PACKED_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Bytes of packed weights alive in this process right now.
pub fn live_packed_bytes() -> usize {
    LIVE_PACKED_BYTES.load(Ordering::Relaxed)
}

/// The element types packed weights are made of: plain numbers, whose all-zero bytes are
/// the value zero (what [`Packed::zeroed`] hands out).
pub trait Plain: Copy + Default + 'static + sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Plain for $t {}
    )*};
}
plain!(f32, i8, u8, i16, i32);

/// Where a packed buffer's elements live.
enum Store<T> {
    /// The ordinary heap.
    Heap(Vec<T>),
    /// `len` elements in memory from [`pages`].
    Pages { ptr: NonNull<T>, len: usize },
}

/// A packed weight buffer; its bytes count in [`live_packed_bytes`] while it lives.
pub struct Packed<T: Plain> {
    store: Store<T>,
}

// SAFETY: a `Packed` uniquely owns its elements, as a `Vec` does (the `Pages` memory is
// handed out to one buffer only and freed by its drop), so it may move to or be shared
// with other threads exactly when its elements may.
unsafe impl<T: Plain + Send> Send for Packed<T> {}
// SAFETY: as above; `&Packed` gives only shared access to the elements.
unsafe impl<T: Plain + Sync> Sync for Packed<T> {}

impl<T: Plain> Packed<T> {
    /// Takes ownership of packed data.
    pub fn new(data: Vec<T>) -> Self {
        LIVE_PACKED_BYTES.fetch_add(core::mem::size_of_val(data.as_slice()), Ordering::Relaxed);
        Packed { store: Store::Heap(data) }
    }

    /// `len` zeros to pack into, in huge pages where the system has them (see [`pages`]).
    /// An error if the size overflows or the memory cannot be had.
    pub fn zeroed(len: usize) -> Result<Self> {
        let bytes = len
            .checked_mul(core::mem::size_of::<T>())
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| Error::new(format!("packed weights of {len} values overflow")))?;
        if let Some(raw) = pages::alloc_zeroed(bytes) {
            LIVE_PACKED_BYTES.fetch_add(bytes, Ordering::Relaxed);
            return Ok(Packed { store: Store::Pages { ptr: raw.cast(), len } });
        }
        let mut data = Vec::new();
        data.try_reserve_exact(len)
            .map_err(|_| Error::new(format!("cannot allocate {bytes} bytes of packed weights")))?;
        data.resize(len, T::default());
        Ok(Packed::new(data))
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        core::mem::size_of_val(&**self)
    }
}

impl<T: Plain> Default for Packed<T> {
    fn default() -> Self {
        Packed::new(Vec::new())
    }
}

impl<T: Plain> fmt::Debug for Packed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Packed({} bytes)", self.bytes())
    }
}

impl<T: Plain> Clone for Packed<T> {
    fn clone(&self) -> Self {
        match Packed::zeroed(self.len()) {
            Ok(mut copy) => {
                copy.copy_from_slice(self);
                copy
            }
            // No memory for a copy in either place: the heap's own failure path.
            Err(_) => Packed::new(self.to_vec()),
        }
    }
}

impl<T: Plain> Drop for Packed<T> {
    fn drop(&mut self) {
        LIVE_PACKED_BYTES.fetch_sub(self.bytes(), Ordering::Relaxed);
        if let Store::Pages { ptr, len } = self.store {
            pages::free(ptr.cast(), len * core::mem::size_of::<T>());
        }
    }
}

impl<T: Plain> Deref for Packed<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.store {
            Store::Heap(v) => v,
            // SAFETY: `ptr` points to `len` initialised elements (zeroed memory is zero
            // for every `Plain` type) that this buffer owns until it drops.
            Store::Pages { ptr, len } => unsafe { core::slice::from_raw_parts(ptr.as_ptr(), *len) },
        }
    }
}

impl<T: Plain> DerefMut for Packed<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.store {
            Store::Heap(v) => v,
            // SAFETY: as for `deref`; `&mut self` makes the access exclusive.
            Store::Pages { ptr, len } => unsafe { core::slice::from_raw_parts_mut(ptr.as_ptr(), *len) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_while_alive() {
        let before = live_packed_bytes();
        let p = Packed::new(vec![0f32; 1000]);
        assert_eq!(p.bytes(), 4000);
        assert!(live_packed_bytes() >= before + 4000 || live_packed_bytes() >= 4000);
        drop(p);
    }

    #[test]
    fn zeroed_buffers_are_zero_writable_and_counted() {
        for len in [0usize, 1, 1000, 300_000, 3_000_000] {
            let before = live_packed_bytes();
            let mut p = Packed::<f32>::zeroed(len).unwrap();
            assert_eq!(p.len(), len);
            assert!(p.iter().all(|&v| v == 0.0));
            assert!(live_packed_bytes() >= before.min(len * 4));
            p.iter_mut().enumerate().for_each(|(i, v)| *v = i as f32);
            let q = p.clone();
            assert_eq!(&q[..], &p[..]);
            assert_eq!(q.bytes(), len * 4);
        }
        assert!(Packed::<i32>::zeroed(usize::MAX / 2).is_err());
    }
}
