//! The GPU delegate's C API (tensorflow/lite/delegates/gpu/delegate.h).
//!
//! `TfLiteGpuDelegateV2Create` returns NULL when there is no usable OpenCL platform or
//! device (or the options are invalid), after printing why to stderr (TFLite logs the
//! same way); the library itself loads and works without OpenCL.

use crate::abi::types::TfLiteDelegate;
pub use crate::gpu::delegate::options::TfLiteGpuDelegateOptionsV2;
use crate::gpu::delegate::{self, GpuDelegate};

/// TFLite's default options, by value. Start from these: fields get appended.
#[unsafe(no_mangle)]
pub extern "C" fn TfLiteGpuDelegateOptionsV2Default() -> TfLiteGpuDelegateOptionsV2 {
    TfLiteGpuDelegateOptionsV2::default()
}

/// Creates the OpenCL GPU delegate (NULL options: defaults), or returns NULL and prints
/// why. Delete it with `TfLiteGpuDelegateV2Delete` after every interpreter using it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteGpuDelegateV2Create(options: *const TfLiteGpuDelegateOptionsV2) -> *mut TfLiteDelegate {
    ffi_boundary!({
        // SAFETY: NULL or a live options struct from the caller.
        let opts = unsafe { options.as_ref() }.copied().unwrap_or_default();
        match delegate::create(&opts) {
            Ok(d) => {
                let raw = Box::into_raw(d);
                // SAFETY: just allocated; `base` is the first field of the repr(C) struct.
                unsafe { &raw mut (*raw).base }
            }
            Err(e) => {
                eprintln!("ERROR: TfLiteGpuDelegateV2Create: {e}");
                core::ptr::null_mut()
            }
        }
    })
}

/// Destroys a delegate made by `TfLiteGpuDelegateV2Create`. Safe to pass NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteGpuDelegateV2Delete(delegate: *mut TfLiteDelegate) {
    ffi_boundary!({
        // SAFETY: NULL or a live delegate from the caller.
        if unsafe { GpuDelegate::from_raw(delegate) }.is_none() {
            return;
        }
        // SAFETY: made by Box::into_raw in Create, and `base` (at offset 0) is what the
        // caller holds; the caller does not use it afterwards.
        drop(unsafe { Box::from_raw(delegate.cast::<GpuDelegate>()) });
    })
}
