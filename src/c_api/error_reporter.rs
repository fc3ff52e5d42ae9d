//! Application error reporters: `void (*)(void* user_data, const char* format, va_list)`.
//!
//! A message is formatted in Rust; `tflite_rs_call_reporter` (variadic.c) then calls the
//! application's function with the format `"%s"` and a `va_list` holding the message,
//! so the reporter sees exactly TFLite's text whatever it does with the format.

use crate::abi::types::va_list;
use crate::interpreter::Reporter;
use core::ffi::{c_char, c_void};
use std::sync::Arc;

/// The C type of an error reporter callback.
pub type TfLiteErrorReporterFn = unsafe extern "C" fn(user_data: *mut c_void, format: *const c_char, args: va_list);

// The doc line below keeps this declaration out of the generated header.
#[allow(unused_doc_comments, reason = "read by cbindgen, not rustdoc")]
/// cbindgen:ignore
unsafe extern "C" {
    /// variadic.c: calls `reporter(user_data, "%s", <va_list holding message>)`;
    /// does nothing when `reporter` is NULL.
    fn tflite_rs_call_reporter(reporter: Option<TfLiteErrorReporterFn>, user_data: *mut c_void, message: *const c_char);
}

/// A C reporter and its user data.
#[derive(Clone, Copy)]
pub(crate) struct CReporter {
    pub(crate) func: TfLiteErrorReporterFn,
    pub(crate) user_data: *mut c_void,
}

// SAFETY: the reporter and its user data belong to the application, which TFLite's API
// makes responsible for them being usable from whatever thread calls into the
// interpreter (TFLite itself calls them from any thread without synchronisation).
unsafe impl Send for CReporter {}
// SAFETY: as above.
unsafe impl Sync for CReporter {}

impl CReporter {
    /// Delivers one message.
    pub(crate) fn call(&self, msg: &str) {
        let c = super::ffi::to_cstring(msg);
        // SAFETY: `func` is the application's reporter with its own `user_data`; `c` is a
        // NUL-terminated string alive for the call.
        unsafe { tflite_rs_call_reporter(Some(self.func), self.user_data, c.as_ptr()) }
    }

    /// The reporter as the interpreter's `Reporter`.
    pub(crate) fn to_reporter(self) -> Reporter {
        // Calling a method keeps the whole `CReporter` (Send + Sync) captured, rather than
        // its raw-pointer fields one by one.
        Arc::new(move |msg: &str| self.call(msg))
    }
}

/// A `Reporter` for an optional C callback: NULL `func` means stderr.
pub(crate) fn reporter_from_c(func: Option<TfLiteErrorReporterFn>, user_data: *mut c_void) -> Option<Reporter> {
    func.map(|func| CReporter { func, user_data }.to_reporter())
}
