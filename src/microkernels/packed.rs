//! Weights repacked into a microkernel's layout, with a process-wide byte count.
//!
//! Packing happens once per node (at Prepare, or at the first Invoke for weights that
//! only become known then); the packed copy lives beside the arena, so its size is
//! reported with it (`tflite-bench` prints it next to the arena bytes).

use core::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE_PACKED_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Bytes of packed weights alive in this process right now.
pub fn live_packed_bytes() -> usize {
    LIVE_PACKED_BYTES.load(Ordering::Relaxed)
}

/// A packed weight buffer; its bytes count in [`live_packed_bytes`] while it lives.
#[derive(Debug, Default)]
pub struct Packed<T> {
    data: Vec<T>,
}

impl<T> Packed<T> {
    /// Takes ownership of packed data.
    pub fn new(data: Vec<T>) -> Self {
        LIVE_PACKED_BYTES.fetch_add(core::mem::size_of_val(data.as_slice()), Ordering::Relaxed);
        Packed { data }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        core::mem::size_of_val(self.data.as_slice())
    }
}

impl<T: Clone> Clone for Packed<T> {
    fn clone(&self) -> Self {
        Packed::new(self.data.clone())
    }
}

impl<T> Drop for Packed<T> {
    fn drop(&mut self) {
        LIVE_PACKED_BYTES.fetch_sub(self.bytes(), Ordering::Relaxed);
    }
}

impl<T> Deref for Packed<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.data
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
}
