//! NULL pointers and out-of-range indices passed to the C API give an error value, never
//! a crash. (Real TFLite crashes on most of these, so this is a Rust test of our library
//! only, not one of the C tests that also run against TFLite.)

mod common;
use common::*;
use std::ffi::{c_char, c_int};
use std::ptr::{null, null_mut};

unsafe extern "C" {
    fn TfLiteTensorNumDims(t: *const Opaque) -> i32;
    fn TfLiteTensorDim(t: *const Opaque, i: i32) -> i32;
    fn TfLiteTensorName(t: *const Opaque) -> *const c_char;
    fn TfLiteInterpreterGetTensor(i: *const Opaque, idx: c_int) -> *mut Opaque;
    fn TfLiteInterpreterGetSignatureCount(i: *const Opaque) -> i32;
    fn TfLiteInterpreterGetSignatureKey(i: *const Opaque, idx: i32) -> *const c_char;
    fn TfLiteInterpreterGetSignatureRunner(i: *const Opaque, key: *const c_char) -> *mut Opaque;
    fn TfLiteSignatureRunnerDelete(r: *mut Opaque);
    fn TfLiteInterpreterOptionsSetNumThreads(o: *mut Opaque, n: i32);
}

#[test]
fn null_handles_give_errors() {
    // SAFETY: exercising the C API's documented NULL handling.
    unsafe {
        assert!(TfLiteModelCreate(null(), 0).is_null());
        assert!(TfLiteModelCreate(null(), 100).is_null());
        assert!(TfLiteModelCreateFromFile(null()).is_null());
        TfLiteModelDelete(null_mut());
        TfLiteInterpreterOptionsDelete(null_mut());
        TfLiteInterpreterOptionsSetNumThreads(null_mut(), 4);
        assert!(TfLiteInterpreterCreate(null(), null()).is_null());
        TfLiteInterpreterDelete(null_mut());
        assert_ne!(TfLiteInterpreterAllocateTensors(null_mut()), OK);
        assert_ne!(TfLiteInterpreterInvoke(null_mut()), OK);
        assert_ne!(TfLiteInterpreterResizeInputTensor(null_mut(), 0, null(), 0), OK);
        assert!(TfLiteInterpreterGetInputTensor(null(), 0).is_null());
        assert!(TfLiteInterpreterGetOutputTensor(null(), 0).is_null());
        assert_eq!(TfLiteInterpreterGetInputTensorCount(null()), 0);
        assert_eq!(TfLiteTensorByteSize(null()), 0);
        assert!(TfLiteTensorData(null()).is_null());
        assert!(TfLiteTensorName(null()).is_null());
        assert_ne!(TfLiteTensorCopyFromBuffer(null_mut(), null(), 4), OK);
        assert_ne!(TfLiteTensorCopyToBuffer(null(), null_mut(), 4), OK);
        assert_eq!(TfLiteInterpreterGetSignatureCount(null()), 0);
        assert!(TfLiteInterpreterGetSignatureRunner(null(), null()).is_null());
        TfLiteSignatureRunnerDelete(null_mut());
    }
}

#[test]
fn out_of_range_indices_give_errors() {
    let path = std::ffi::CString::new(corpus().join("capi/add.bin").to_string_lossy().as_bytes()).unwrap();
    let mut messages = 0usize;
    // SAFETY: valid C API calls on live objects, then out-of-range arguments.
    unsafe {
        let model = TfLiteModelCreateFromFile(path.as_ptr());
        assert!(!model.is_null());
        let opts = TfLiteInterpreterOptionsCreate();
        TfLiteInterpreterOptionsSetErrorReporter(opts, Some(counting_reporter), &mut messages as *mut usize as *mut _);
        let interp = TfLiteInterpreterCreate(model, opts);
        assert!(!interp.is_null());
        for bad in [-1, 1, 1000, i32::MIN, i32::MAX] {
            assert!(TfLiteInterpreterGetInputTensor(interp, bad).is_null());
            assert!(TfLiteInterpreterGetOutputTensor(interp, bad).is_null());
            assert!(TfLiteInterpreterGetSignatureKey(interp, bad).is_null());
            assert_ne!(TfLiteInterpreterResizeInputTensor(interp, bad, [2].as_ptr(), 1), OK);
        }
        assert!(TfLiteInterpreterGetTensor(interp, 3).is_null());
        assert!(TfLiteInterpreterGetTensor(interp, -1).is_null());
        // Negative and absurd dimensions are rejected, not allocated.
        assert_ne!(TfLiteInterpreterResizeInputTensor(interp, 0, [-5].as_ptr(), 1), OK);
        assert_ne!(TfLiteInterpreterResizeInputTensor(interp, 0, [1 << 30, 1 << 30].as_ptr(), 2), OK);
        assert_ne!(TfLiteInterpreterResizeInputTensor(interp, 0, null(), 2), OK);
        let t = TfLiteInterpreterGetInputTensor(interp, 0);
        assert_eq!(TfLiteTensorDim(t, 99), -1);
        assert_eq!(TfLiteTensorDim(t, -1), -1);
        assert!(TfLiteTensorNumDims(t) >= 0);
        // Copy with the wrong size is an error, not an overflow.
        let buf = [0u8; 3];
        assert_ne!(TfLiteTensorCopyFromBuffer(t, buf.as_ptr().cast(), buf.len()), OK);
        assert!(messages > 0, "errors were reported to the reporter");
        TfLiteInterpreterDelete(interp);
        TfLiteInterpreterOptionsDelete(opts);
        TfLiteModelDelete(model);
    }
}
