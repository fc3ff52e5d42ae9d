//! Shared test helpers: the corpus location (a missing corpus is a loud failure) and the
//! C API functions the tests call, declared as a C user would see them.
#![allow(dead_code, non_snake_case)]

pub mod golden;

// Link the library so the C functions below resolve against it.
extern crate tensorflowlite_c;

use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;

pub type Status = c_int;
pub const OK: Status = 0;

#[repr(C)]
pub struct Opaque {
    _p: [u8; 0],
}

unsafe extern "C" {
    pub fn TfLiteModelCreate(data: *const c_void, size: usize) -> *mut Opaque;
    pub fn TfLiteModelCreateFromFile(path: *const c_char) -> *mut Opaque;
    pub fn TfLiteModelCreateWithErrorReporter(
        data: *const c_void,
        size: usize,
        reporter: Option<unsafe extern "C" fn(*mut c_void, *const c_char, *mut c_void)>,
        user_data: *mut c_void,
    ) -> *mut Opaque;
    pub fn TfLiteModelDelete(m: *mut Opaque);
    pub fn TfLiteInterpreterOptionsCreate() -> *mut Opaque;
    pub fn TfLiteInterpreterOptionsDelete(o: *mut Opaque);
    pub fn TfLiteInterpreterOptionsSetErrorReporter(
        o: *mut Opaque,
        reporter: Option<unsafe extern "C" fn(*mut c_void, *const c_char, *mut c_void)>,
        user_data: *mut c_void,
    );
    pub fn TfLiteInterpreterCreate(m: *const Opaque, o: *const Opaque) -> *mut Opaque;
    pub fn TfLiteInterpreterDelete(i: *mut Opaque);
    pub fn TfLiteInterpreterGetInputTensorCount(i: *const Opaque) -> i32;
    pub fn TfLiteInterpreterGetOutputTensorCount(i: *const Opaque) -> i32;
    pub fn TfLiteInterpreterInputTensorIndices(i: *const Opaque) -> *const c_int;
    pub fn TfLiteInterpreterOutputTensorIndices(i: *const Opaque) -> *const c_int;
    pub fn TfLiteInterpreterGetInputTensor(i: *const Opaque, idx: i32) -> *mut Opaque;
    pub fn TfLiteInterpreterGetOutputTensor(i: *const Opaque, idx: i32) -> *const Opaque;
    pub fn TfLiteInterpreterResizeInputTensor(i: *mut Opaque, idx: i32, dims: *const c_int, n: i32) -> Status;
    pub fn TfLiteInterpreterAllocateTensors(i: *mut Opaque) -> Status;
    pub fn TfLiteInterpreterInvoke(i: *mut Opaque) -> Status;
    pub fn TfLiteTensorByteSize(t: *const Opaque) -> usize;
    pub fn TfLiteTensorType(t: *const Opaque) -> c_int;
    pub fn TfLiteTensorData(t: *const Opaque) -> *mut c_void;
    pub fn TfLiteTensorCopyFromBuffer(t: *mut Opaque, data: *const c_void, n: usize) -> Status;
    pub fn TfLiteTensorCopyToBuffer(t: *const Opaque, data: *mut c_void, n: usize) -> Status;
    pub fn TfLiteTensorRealloc(num_bytes: usize, t: *mut Opaque) -> Status;
}

/// The shared corpus, or a panic saying where it was looked for.
pub fn corpus() -> PathBuf {
    let dir = std::env::var_os("TFLITE_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    assert!(
        dir.join("README.md").is_file(),
        "the shared corpus is missing at {} (set TFLITE_CORPUS_DIR or put ../shared beside the repo)",
        dir.display()
    );
    dir
}

/// A reporter that swallows messages and counts them (user_data: *mut usize).
pub unsafe extern "C" fn counting_reporter(user: *mut c_void, _fmt: *const c_char, _args: *mut c_void) {
    if !user.is_null() {
        // SAFETY: the tests pass a live `usize` as user data.
        unsafe { *(user as *mut usize) += 1 };
    }
}
