//! Shared machinery for the C entry points: the panic boundary, the value each return
//! type falls back to, and the few helpers that turn C pointers into Rust values.

use crate::abi::types::*;
use crate::interpreter::{Reporter, stderr_reporter};
use core::ffi::{c_char, c_int};
use std::ffi::{CStr, CString};

/// The value an entry point returns when it cannot do its job (or a panic was caught):
/// `kTfLiteError` for statuses, NULL for pointers, 0 for sizes, "unknown" for enums.
/// Functions whose documented error value differs (for example -1 for a count) pass it
/// to `ffi_boundary!` explicitly.
pub(crate) trait FfiDefault {
    fn ffi_default() -> Self;
}

impl FfiDefault for TfLiteStatus {
    fn ffi_default() -> Self {
        TfLiteStatus::kTfLiteError
    }
}
impl<T> FfiDefault for *mut T {
    fn ffi_default() -> Self {
        core::ptr::null_mut()
    }
}
impl<T> FfiDefault for *const T {
    fn ffi_default() -> Self {
        core::ptr::null()
    }
}
impl FfiDefault for () {
    fn ffi_default() -> Self {}
}
impl FfiDefault for c_int {
    fn ffi_default() -> Self {
        0
    }
}
impl FfiDefault for usize {
    fn ffi_default() -> Self {
        0
    }
}
impl FfiDefault for u64 {
    fn ffi_default() -> Self {
        0
    }
}
impl FfiDefault for bool {
    fn ffi_default() -> Self {
        false
    }
}
impl FfiDefault for TfLiteType {
    fn ffi_default() -> Self {
        TfLiteType::kTfLiteNoType
    }
}
impl FfiDefault for TfLiteAllocationType {
    fn ffi_default() -> Self {
        TfLiteAllocationType::kTfLiteMemNone
    }
}
impl FfiDefault for TfLiteAllocationStrategy {
    fn ffi_default() -> Self {
        TfLiteAllocationStrategy::kTfLiteAllocationStrategyUnknown
    }
}
impl FfiDefault for TfLiteRunStability {
    fn ffi_default() -> Self {
        TfLiteRunStability::kTfLiteRunStabilityUnknown
    }
}
impl FfiDefault for TfLiteRunStep {
    fn ffi_default() -> Self {
        TfLiteRunStep::kTfLiteRunStepUnknown
    }
}
impl FfiDefault for TfLiteQuantizationParams {
    fn ffi_default() -> Self {
        TfLiteQuantizationParams { scale: 0.0, zero_point: 0 }
    }
}
impl FfiDefault for TfLiteQuantization {
    fn ffi_default() -> Self {
        TfLiteQuantization { r#type: TfLiteQuantizationType::kTfLiteNoQuantization, params: core::ptr::null_mut() }
    }
}
impl FfiDefault for TfLiteDelegate {
    fn ffi_default() -> Self {
        empty_delegate()
    }
}
impl FfiDefault for crate::abi::builtin_ops::TfLiteBuiltinOperator {
    fn ffi_default() -> Self {
        crate::abi::builtin_ops::TfLiteBuiltinOperator::kTfLiteBuiltinCustom
    }
}

/// Runs an entry point's body with a panic boundary: a panic becomes the return type's
/// `FfiDefault` (or the explicit `default = ...`), never an unwind into C. `return`
/// inside the body returns from the body.
macro_rules! ffi_boundary {
    (default = $default:expr, $body:block) => {
        match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| $body)) {
            Ok(v) => v,
            Err(_) => $default,
        }
    };
    ($body:block) => {
        match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| $body)) {
            Ok(v) => v,
            Err(_) => $crate::c_api::ffi::FfiDefault::ffi_default(),
        }
    };
}

/// A `TfLiteDelegate` with every field zero (`TfLiteDelegateCreate`).
pub(crate) fn empty_delegate() -> TfLiteDelegate {
    TfLiteDelegate {
        data_: core::ptr::null_mut(),
        Prepare: None,
        CopyFromBufferHandle: None,
        CopyToBufferHandle: None,
        FreeBufferHandle: None,
        flags: TfLiteDelegateFlags::kTfLiteDelegateFlagsNone as i64,
        opaque_delegate_builder: core::ptr::null_mut(),
    }
}

/// Sends `msg` to `reporter`, or to stderr when there is none.
pub(crate) fn report(reporter: Option<&Reporter>, msg: &str) {
    match reporter {
        Some(r) => r(msg),
        None => stderr_reporter()(msg),
    }
}

/// Reports "`func`: `arg` is NULL" (ARCHITECTURE.md convention 4).
pub(crate) fn report_null(reporter: Option<&Reporter>, func: &str, arg: &str) {
    report(reporter, &format!("{func}: {arg} is NULL"));
}

/// A NUL-terminated C string as `&str`; `None` for NULL or invalid UTF-8.
///
/// # Safety
/// `p` must be NULL or point to a NUL-terminated string that stays valid and unchanged
/// for `'a`.
pub(crate) unsafe fn cstr<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated per the function contract.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// A NUL-terminated C string as `&CStr`; `None` for NULL.
///
/// # Safety
/// As `cstr`.
pub(crate) unsafe fn cstr_raw<'a>(p: *const c_char) -> Option<&'a CStr> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated per the function contract.
    Some(unsafe { CStr::from_ptr(p) })
}

/// A `CString` from arbitrary text; interior NULs (which C cannot represent) are dropped.
pub(crate) fn to_cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

/// `(ptr, len)` from C as a slice. `(NULL, 0)` is the empty slice; `(NULL, n > 0)` is
/// `None`.
///
/// # Safety
/// A non-NULL `p` must point to `len` initialised, readable `T`s that stay valid and
/// unmodified for `'a`.
pub(crate) unsafe fn slice_from_raw<'a, T>(p: *const T, len: usize) -> Option<&'a [T]> {
    if len == 0 {
        return Some(&[]);
    }
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL, `len` readable elements per the function contract.
    Some(unsafe { core::slice::from_raw_parts(p, len) })
}

/// Writes `value` through an out-pointer that was checked non-NULL.
///
/// # Safety
/// `p` must be non-NULL, aligned and writable.
pub(crate) unsafe fn write_out<T>(p: *mut T, value: T) {
    // SAFETY: per the function contract.
    unsafe { p.write(value) }
}

/// `Box::into_raw` for a handle type.
pub(crate) fn into_raw<T>(v: T) -> *mut T {
    Box::into_raw(Box::new(v))
}
