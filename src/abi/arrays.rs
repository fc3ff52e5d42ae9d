//! `TfLiteIntArray` / `TfLiteFloatArray` allocation with libc's malloc.
//!
//! C code frees arrays it hands to the runtime (for example `ResizeTensor`'s `new_size`)
//! and arrays the runtime hands out with `TfLiteIntArrayFree`, which is `free()`; so
//! every array must come from `malloc`, never from Rust's allocator.

use super::types::{TfLiteFloatArray, TfLiteIntArray};
use core::ffi::c_int;
use core::mem::size_of;

/// Bytes of a `TfLiteIntArray` with `n` elements, or `None` on overflow / negative size.
pub fn int_array_bytes(n: c_int) -> Option<usize> {
    let n = usize::try_from(n).ok()?;
    n.checked_mul(size_of::<c_int>())?.checked_add(size_of::<TfLiteIntArray>())
}

/// Allocates an uninitialised-content (zeroed) int array of `n` elements; NULL on failure.
pub fn int_array_create(n: c_int) -> *mut TfLiteIntArray {
    let Some(bytes) = int_array_bytes(n) else { return core::ptr::null_mut() };
    // SAFETY: calloc with a non-overflowing size; the result is checked for NULL.
    let p = unsafe { libc::calloc(1, bytes) } as *mut TfLiteIntArray;
    if !p.is_null() {
        // SAFETY: `p` points to at least `size_of::<TfLiteIntArray>()` writable bytes.
        unsafe { (*p).size = n };
    }
    p
}

/// Allocates an int array holding a copy of `values`; NULL on failure.
pub fn int_array_from_slice(values: &[c_int]) -> *mut TfLiteIntArray {
    let Ok(n) = c_int::try_from(values.len()) else { return core::ptr::null_mut() };
    let p = int_array_create(n);
    if !p.is_null() {
        // SAFETY: `p` has room for `n` elements after the header (allocated above).
        unsafe { core::ptr::copy_nonoverlapping(values.as_ptr(), (*p).data.as_mut_ptr(), values.len()) };
    }
    p
}

/// Views an int array as a slice. NULL or a negative size gives an empty slice.
///
/// # Safety
/// `p` must be NULL or point to a valid `TfLiteIntArray` whose `size` elements are
/// readable, and stay so (unmodified) for the returned lifetime.
pub unsafe fn int_array_slice<'a>(p: *const TfLiteIntArray) -> &'a [c_int] {
    if p.is_null() {
        return &[];
    }
    // SAFETY: caller guarantees `p` is valid with `size` readable elements.
    unsafe {
        let n = usize::try_from((*p).size).unwrap_or(0);
        core::slice::from_raw_parts((*p).data.as_ptr(), n)
    }
}

/// Mutable view of an int array's elements (see `int_array_slice`).
///
/// # Safety
/// As `int_array_slice`, and no other reference to the elements may exist.
pub unsafe fn int_array_slice_mut<'a>(p: *mut TfLiteIntArray) -> &'a mut [c_int] {
    if p.is_null() {
        return &mut [];
    }
    // SAFETY: caller guarantees validity and exclusivity.
    unsafe {
        let n = usize::try_from((*p).size).unwrap_or(0);
        core::slice::from_raw_parts_mut((*p).data.as_mut_ptr(), n)
    }
}

/// Frees an int array made by `int_array_create` (or by C's `TfLiteIntArrayCreate`).
///
/// # Safety
/// `p` must be NULL or come from malloc and not be used afterwards.
pub unsafe fn int_array_free(p: *mut TfLiteIntArray) {
    // SAFETY: the caller guarantees `p` is NULL or a live malloc allocation.
    unsafe { libc::free(p.cast()) }
}

/// Bytes of a `TfLiteFloatArray` with `n` elements, or `None`.
pub fn float_array_bytes(n: c_int) -> Option<usize> {
    let n = usize::try_from(n).ok()?;
    n.checked_mul(size_of::<f32>())?.checked_add(size_of::<TfLiteFloatArray>())
}

/// Allocates a zeroed float array of `n` elements; NULL on failure.
pub fn float_array_create(n: c_int) -> *mut TfLiteFloatArray {
    let Some(bytes) = float_array_bytes(n) else { return core::ptr::null_mut() };
    // SAFETY: calloc with a non-overflowing size; checked for NULL.
    let p = unsafe { libc::calloc(1, bytes) } as *mut TfLiteFloatArray;
    if !p.is_null() {
        // SAFETY: `p` has room for the header.
        unsafe { (*p).size = n };
    }
    p
}

/// Allocates a float array holding a copy of `values`; NULL on failure.
pub fn float_array_from_slice(values: &[f32]) -> *mut TfLiteFloatArray {
    let Ok(n) = c_int::try_from(values.len()) else { return core::ptr::null_mut() };
    let p = float_array_create(n);
    if !p.is_null() {
        // SAFETY: `p` has room for `n` elements.
        unsafe { core::ptr::copy_nonoverlapping(values.as_ptr(), (*p).data.as_mut_ptr(), values.len()) };
    }
    p
}

/// Views a float array as a slice (NULL gives an empty slice).
///
/// # Safety
/// As `int_array_slice`.
pub unsafe fn float_array_slice<'a>(p: *const TfLiteFloatArray) -> &'a [f32] {
    if p.is_null() {
        return &[];
    }
    // SAFETY: caller guarantees validity.
    unsafe {
        let n = usize::try_from((*p).size).unwrap_or(0);
        core::slice::from_raw_parts((*p).data.as_ptr(), n)
    }
}

/// An owned malloc'ed `TfLiteIntArray`, freed on drop.
pub struct OwnedIntArray(*mut TfLiteIntArray);

impl OwnedIntArray {
    /// Copies `values` into a new array. Returns `None` if allocation fails.
    pub fn new(values: &[c_int]) -> Option<OwnedIntArray> {
        let p = int_array_from_slice(values);
        (!p.is_null()).then_some(OwnedIntArray(p))
    }
    /// Takes ownership of a malloc'ed array (NULL gives `None`).
    ///
    /// # Safety
    /// `p` must be NULL or a malloc'ed `TfLiteIntArray` with `size >= 0` valid elements
    /// that nothing else uses or frees afterwards.
    pub unsafe fn from_raw(p: *mut TfLiteIntArray) -> Option<OwnedIntArray> {
        (!p.is_null()).then_some(OwnedIntArray(p))
    }
    /// The raw pointer (still owned by `self`).
    pub fn as_ptr(&self) -> *mut TfLiteIntArray {
        self.0
    }
    /// Gives up ownership.
    pub fn into_raw(self) -> *mut TfLiteIntArray {
        let p = self.0;
        core::mem::forget(self);
        p
    }
    /// The elements.
    pub fn as_slice(&self) -> &[c_int] {
        // SAFETY: `self.0` is a live array we own and nobody else mutates.
        unsafe { int_array_slice(self.0) }
    }
}

impl Drop for OwnedIntArray {
    fn drop(&mut self) {
        // SAFETY: we own the malloc'ed array.
        unsafe { int_array_free(self.0) }
    }
}

// SAFETY: the array is plain data owned exclusively by this value.
unsafe impl Send for OwnedIntArray {}
