//! The XNNPACK delegate entry points (TF 2.19 layout of the options: 32 bytes).
//!
//! Callers such as `tflitec --features xnnpack`, go-tflite and edgefirst-tflite create
//! this delegate unconditionally. Until our optimized CPU kernels exist it claims no
//! nodes: applying it is a no-op and every node runs on the builtin kernels. That is the
//! honest meaning of "XNNPACK delegate" here; the README says so.

use crate::abi::types::*;
use crate::ffi::try_ref;
use core::ffi::{c_char, c_int, c_void};

/// Opaque weights cache (not used by this implementation).
#[repr(C)]
pub struct TfLiteXNNPackDelegateWeightsCache {
    _private: [u8; 0],
}

/// Options of the XNNPACK delegate, TF 2.19 layout (32 bytes).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct TfLiteXNNPackDelegateOptions {
    /// Number of threads (values <= 1 mean single-threaded).
    pub num_threads: i32,
    /// Bitfield of TFLITE_XNNPACK_DELEGATE_FLAG_* values.
    pub flags: u32,
    /// Weights cache, or NULL.
    pub weights_cache: *mut TfLiteXNNPackDelegateWeightsCache,
    /// Whether variable ops are handled by the delegate.
    pub handle_variable_ops: bool,
    /// Path of a weight cache file, or NULL.
    pub weight_cache_file_path: *const c_char,
}

/// Quantized signed 8-bit inference.
pub const TFLITE_XNNPACK_DELEGATE_FLAG_QS8: u32 = 1;
/// Quantized unsigned 8-bit inference.
pub const TFLITE_XNNPACK_DELEGATE_FLAG_QU8: u32 = 2;

unsafe extern "C" fn claim_nothing(_context: *mut TfLiteContext, _delegate: *mut TfLiteDelegate) -> TfLiteStatus {
    TfLiteStatus::kTfLiteOk
}

/// Returns the default options (by value).
#[unsafe(no_mangle)]
pub extern "C" fn TfLiteXNNPackDelegateOptionsDefault() -> TfLiteXNNPackDelegateOptions {
    TfLiteXNNPackDelegateOptions {
        num_threads: 1,
        flags: TFLITE_XNNPACK_DELEGATE_FLAG_QS8 | TFLITE_XNNPACK_DELEGATE_FLAG_QU8,
        weights_cache: core::ptr::null_mut(),
        handle_variable_ops: false,
        weight_cache_file_path: core::ptr::null(),
    }
}

/// Creates the delegate (NULL options: defaults). It currently claims no nodes.
/// The caller owns the result and must call `TfLiteXNNPackDelegateDelete`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteXNNPackDelegateCreate(
    options: *const TfLiteXNNPackDelegateOptions,
) -> *mut TfLiteDelegate {
    ffi_boundary!({
        // SAFETY: NULL or a live options struct from the caller.
        let opts = unsafe { options.as_ref() }.copied().unwrap_or_else(|| TfLiteXNNPackDelegateOptionsDefault());
        let data = Box::into_raw(Box::new(opts)) as *mut c_void;
        Box::into_raw(Box::new(TfLiteDelegate {
            data_: data,
            Prepare: Some(claim_nothing),
            CopyFromBufferHandle: None,
            CopyToBufferHandle: None,
            FreeBufferHandle: None,
            flags: 0,
            opaque_delegate_builder: core::ptr::null_mut(),
        }))
    })
}

/// Returns the options the delegate was created with, or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteXNNPackDelegateGetOptions(
    delegate: *mut TfLiteDelegate,
) -> *const TfLiteXNNPackDelegateOptions {
    ffi_boundary!({ try_ref!(delegate).data_ as *const TfLiteXNNPackDelegateOptions })
}

/// Returns the delegate's flags (0 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteXNNPackDelegateGetFlags(delegate: *mut TfLiteDelegate) -> c_int {
    ffi_boundary!({
        // SAFETY: NULL or a delegate made by TfLiteXNNPackDelegateCreate.
        let opts = unsafe { TfLiteXNNPackDelegateGetOptions(delegate).as_ref() };
        opts.map_or(0, |o| o.flags as c_int)
    })
}

/// Destroys a delegate made by `TfLiteXNNPackDelegateCreate`. Safe to pass NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteXNNPackDelegateDelete(delegate: *mut TfLiteDelegate) {
    ffi_boundary!({
        if delegate.is_null() {
            return;
        }
        // SAFETY: `delegate` and its options came from Box::into_raw in Create; the caller
        // does not use them afterwards.
        unsafe {
            let d = Box::from_raw(delegate);
            if !d.data_.is_null() {
                drop(Box::from_raw(d.data_ as *mut TfLiteXNNPackDelegateOptions));
            }
        }
    })
}
