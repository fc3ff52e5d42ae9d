//! Shared machinery for the C entry points: `ffi_boundary!` and `ffi_delete!` (the panic
//! boundary of `crate::ffi` as each entry point uses it), error reporting, and the few
//! helpers that turn C strings, arrays and out-pointers into Rust values.

use crate::abi::types::*;
use crate::interpreter::{Reporter, stderr_reporter};
use core::ffi::c_char;
use std::ffi::{CStr, CString};

/// Runs an entry point's body inside the panic boundary (`crate::ffi::guard`): a panic
/// never unwinds into C; it becomes the return type's `FfiDefault` (or the explicit
/// `default = ...`) and "internal error: <function> panicked: <message>" is reported.
/// `return` inside the body returns from the body.
///
/// The message goes where the function reports its other errors: stderr by default;
/// the reporter of the handle `report_to = p` (see `ReportsErrors`); or any
/// `report = |msg: &str| ...`.
macro_rules! ffi_boundary {
    (@guard $default:expr, $report:expr, $body:block) => {
        $crate::ffi::guard($crate::ffi::fn_name!(), $default, $report, || $body)
    };
    ($body:block) => {
        ffi_boundary!(default = $crate::ffi::FfiDefault::ffi_default(), $body)
    };
    (default = $default:expr, $body:block) => {
        ffi_boundary!(@guard $default, |msg: &str| $crate::c_api::ffi::report(None, msg), $body)
    };
    (report = $report:expr, $body:block) => {
        ffi_boundary!(@guard $crate::ffi::FfiDefault::ffi_default(), $report, $body)
    };
    (report_to = $handle:expr, $body:block) => {
        ffi_boundary!(default = $crate::ffi::FfiDefault::ffi_default(), report_to = $handle, $body)
    };
    (default = $default:expr, report_to = $handle:expr, $body:block) => {{
        let handle: *const _ = $handle;
        ffi_boundary!(@guard $default, move |msg: &str| {
            // SAFETY: `handle` is the entry point's own handle argument: NULL or live for
            // the whole call (the C API contract).
            unsafe { $crate::c_api::ffi::ReportsErrors::report_error(handle, msg) }
        }, $body)
    }};
}

/// The body of a `*Delete` function for a handle made with `into_raw`: NULL is ignored;
/// anything else is the pointer the matching create function returned, which C does not
/// use afterwards (the contract of every `*Delete` function), so it is dropped.
macro_rules! ffi_delete {
    ($handle:ident) => {
        ffi_boundary!({
            let p = $handle;
            if !p.is_null() {
                // SAFETY: see `ffi_delete!`: made by `Box::into_raw` and given back once.
                drop(unsafe { Box::from_raw(p) });
            }
        })
    };
}

/// Handles whose entry points report errors to a reporter of their own (an
/// interpreter's, a context's): a panic caught in such an entry point is reported there
/// too (`ffi_boundary!(report_to = handle, ..)`).
pub(crate) trait ReportsErrors {
    /// Delivers `msg` to `p`'s reporter, or to stderr for NULL.
    ///
    /// # Safety
    /// `p` must be NULL or a live handle.
    unsafe fn report_error(p: *const Self, msg: &str);
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
