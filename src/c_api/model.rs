//! `TfLiteModel*` (c_api.h): loading and verifying a `.tflite` flatbuffer.

use super::error_reporter::reporter_from_c;
use super::ffi::{report, report_null};
use crate::abi::types::va_list;
use crate::interpreter::Reporter;
use crate::model::Model;
use core::ffi::{c_char, c_void};
use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

/// A verified model. Opaque to C.
///
/// Interpreters created from a model keep their own reference to it, so the model may be
/// deleted right after `TfLiteInterpreterCreate`.
pub struct TfLiteModel {
    pub(crate) model: Arc<Model>,
}

// SAFETY: pointers to a `TfLiteModel` point to one.
unsafe impl crate::ffi::Handle for TfLiteModel {
    type Target = Self;
}

fn finish(result: crate::error::Result<Model>, reporter: Option<&Reporter>) -> *mut TfLiteModel {
    match result {
        Ok(model) => super::ffi::into_raw(TfLiteModel { model: Arc::new(model) }),
        Err(e) => {
            report(reporter, &e.message);
            core::ptr::null_mut()
        }
    }
}

/// # Safety
/// As `TfLiteModelCreate`.
unsafe fn create_from_buffer(
    model_data: *const c_void,
    model_size: usize,
    reporter: Option<&Reporter>,
) -> *mut TfLiteModel {
    // SAFETY: the caller guarantees `model_size` readable bytes at `model_data`, kept
    // alive and unchanged while the model (or an interpreter made from it) exists.
    // `from_borrowed` rejects NULL with TFLite's "not a valid Flatbuffer" message.
    finish(unsafe { Model::from_borrowed(model_data.cast(), model_size) }, reporter)
}

/// # Safety
/// As `TfLiteModelCreateFromFile`.
unsafe fn create_from_file(model_path: *const c_char, reporter: Option<&Reporter>, func: &str) -> *mut TfLiteModel {
    if model_path.is_null() {
        report_null(reporter, func, "model_path");
        return core::ptr::null_mut();
    }
    // SAFETY: non-NULL, NUL-terminated per the API contract.
    let bytes = unsafe { CStr::from_ptr(model_path) }.to_bytes();
    let path = Path::new(OsStr::from_bytes(bytes));
    finish(Model::from_file(path), reporter)
}

/// Returns a model from the provided buffer, or NULL on failure (the reason goes to
/// stderr).
///
/// The buffer is not copied: the caller retains ownership of `model_data`; it must stay
/// valid and unmodified until the model and every interpreter created from it have been
/// deleted. The caller owns the result and must call `TfLiteModelDelete`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteModelCreate(model_data: *const c_void, model_size: usize) -> *mut TfLiteModel {
    ffi_boundary!({
        // SAFETY: forwarded contract.
        unsafe { create_from_buffer(model_data, model_size, None) }
    })
}

/// As `TfLiteModelCreate`, but failures are reported to `reporter(user_data, format,
/// args)` instead of stderr (stderr if `reporter` is NULL). The reporter is only used
/// during this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteModelCreateWithErrorReporter(
    model_data: *const c_void,
    model_size: usize,
    reporter: Option<unsafe extern "C" fn(user_data: *mut c_void, format: *const c_char, args: va_list)>,
    user_data: *mut c_void,
) -> *mut TfLiteModel {
    ffi_boundary!(report = move |msg: &str| report(reporter_from_c(reporter, user_data).as_ref(), msg), {
        let reporter = reporter_from_c(reporter, user_data);
        // SAFETY: forwarded contract.
        unsafe { create_from_buffer(model_data, model_size, reporter.as_ref()) }
    })
}

/// Returns a model memory-mapped from the file at `model_path`, or NULL on failure (the
/// reason goes to stderr). The caller retains ownership of `model_path` (only read during
/// the call). The caller owns the result and must call `TfLiteModelDelete`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteModelCreateFromFile(model_path: *const c_char) -> *mut TfLiteModel {
    ffi_boundary!({
        // SAFETY: forwarded contract.
        unsafe { create_from_file(model_path, None, "TfLiteModelCreateFromFile") }
    })
}

/// As `TfLiteModelCreateFromFile`, but failures are reported to `reporter(user_data,
/// format, args)` instead of stderr (stderr if `reporter` is NULL). The reporter is only
/// used during this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteModelCreateFromFileWithErrorReporter(
    model_path: *const c_char,
    reporter: Option<unsafe extern "C" fn(user_data: *mut c_void, format: *const c_char, args: va_list)>,
    user_data: *mut c_void,
) -> *mut TfLiteModel {
    ffi_boundary!(report = move |msg: &str| report(reporter_from_c(reporter, user_data).as_ref(), msg), {
        let reporter = reporter_from_c(reporter, user_data);
        // SAFETY: forwarded contract.
        unsafe { create_from_file(model_path, reporter.as_ref(), "TfLiteModelCreateFromFileWithErrorReporter") }
    })
}

/// Destroys the model. Safe to pass NULL. Interpreters created from the model keep
/// working: they hold their own reference to it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteModelDelete(model: *mut TfLiteModel) {
    ffi_delete!(model)
}
