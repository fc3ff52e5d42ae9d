//! Fuzz target: the bytes are a `.tflite` model, driven through the C API as an
//! application would: TfLiteModelCreate → TfLiteInterpreterCreate → AllocateTensors →
//! fill the inputs → Invoke (twice) → read the outputs → delete everything.
//!
//! What counts as a failure: any crash, sanitizer report or panic (libfuzzer-sys aborts on
//! a panic even when the library's ABI boundary would have turned it into an error
//! status), a rejection without a message to the error reporter, or an Invoke that runs on
//! after cancellation. A legal model may still ask for a lot of work (huge shapes, a WHILE
//! that never ends, as in TFLite), so Invoke is skipped above `MAX_TENSOR_BYTES` of tensors,
//! and a watchdog cancels any Invoke that runs longer than `CANCEL_AFTER` (and aborts one
//! still running after `STUCK_AFTER`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// Links the library: the C API symbols below resolve to it.
use tensorflowlite_c as _;

type Status = c_int;
const OK: Status = 0;
const CANCELLED: Status = 8;
const FLOAT32: c_int = 1;
const INT32: c_int = 2;
/// Invoke is skipped when the allocated tensors total more than this.
const MAX_TENSOR_BYTES: usize = 16 << 20;
const CANCEL_AFTER: Duration = Duration::from_millis(500);
/// Cancellation takes effect between operators and inside pooling, between output rows
/// (a pooling window as wide as a mutated filter size allows can keep one operator busy
/// for seconds in a release build, and 70 times that with sanitizer and coverage
/// instrumentation); an Invoke still running this long after it started is stuck.
const STUCK_AFTER: Duration = Duration::from_secs(100);

#[repr(C)]
struct Opaque {
    _p: [u8; 0],
}

type Reporter = unsafe extern "C" fn(*mut c_void, *const c_char, *mut c_void);

unsafe extern "C" {
    fn TfLiteModelCreateWithErrorReporter(
        data: *const c_void,
        size: usize,
        reporter: Option<Reporter>,
        user: *mut c_void,
    ) -> *mut Opaque;
    fn TfLiteModelDelete(m: *mut Opaque);
    fn TfLiteInterpreterOptionsCreate() -> *mut Opaque;
    fn TfLiteInterpreterOptionsDelete(o: *mut Opaque);
    fn TfLiteInterpreterOptionsSetNumThreads(o: *mut Opaque, n: c_int);
    fn TfLiteInterpreterOptionsSetErrorReporter(o: *mut Opaque, reporter: Option<Reporter>, user: *mut c_void);
    fn TfLiteInterpreterOptionsEnableCancellation(o: *mut Opaque, enable: bool) -> Status;
    fn TfLiteInterpreterCreate(m: *const Opaque, o: *const Opaque) -> *mut Opaque;
    fn TfLiteInterpreterDelete(i: *mut Opaque);
    fn TfLiteInterpreterAllocateTensors(i: *mut Opaque) -> Status;
    fn TfLiteInterpreterInvoke(i: *mut Opaque) -> Status;
    fn TfLiteInterpreterCancel(i: *const Opaque) -> Status;
    fn TfLiteInterpreterGetInputTensorCount(i: *const Opaque) -> c_int;
    fn TfLiteInterpreterGetInputTensor(i: *const Opaque, index: c_int) -> *mut Opaque;
    fn TfLiteInterpreterGetOutputTensorCount(i: *const Opaque) -> c_int;
    fn TfLiteInterpreterGetOutputTensor(i: *const Opaque, index: c_int) -> *const Opaque;
    fn TfLiteInterpreterGetTensor(i: *const Opaque, index: c_int) -> *mut Opaque;
    fn TfLiteTensorType(t: *const Opaque) -> c_int;
    fn TfLiteTensorByteSize(t: *const Opaque) -> usize;
    fn TfLiteTensorData(t: *const Opaque) -> *mut c_void;
    fn TfLiteTensorCopyToBuffer(t: *const Opaque, dst: *mut c_void, size: usize) -> Status;
}

/// Messages the library reported for the current input.
static MESSAGES: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn count_message(_user: *mut c_void, _format: *const c_char, _args: *mut c_void) {
    MESSAGES.fetch_add(1, Ordering::Relaxed);
}

/// The interpreter now in Invoke (as an address) and when that Invoke started.
static RUNNING: Mutex<Option<(usize, Instant)>> = Mutex::new(None);

fn start_watchdog() {
    std::thread::spawn(|| {
        loop {
            std::thread::sleep(Duration::from_millis(50));
            let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((interp, since)) = *running {
                if since.elapsed() > CANCEL_AFTER {
                    // SAFETY: the fuzzed thread clears RUNNING under this lock before it
                    // deletes the interpreter, so the pointer is live; Cancel sets a flag.
                    unsafe { TfLiteInterpreterCancel(interp as *const Opaque) };
                }
                if since.elapsed() > STUCK_AFTER {
                    eprintln!("Invoke still running {:?} after cancellation", since.elapsed());
                    std::process::abort();
                }
            }
        }
    });
}

/// Deterministic input values from the model's own bytes: small floats and integers
/// (so that index and shape inputs are sometimes valid), raw bytes for other types.
///
/// # Safety
/// `interp` is a live interpreter whose tensors are allocated.
unsafe fn fill_inputs(interp: *mut Opaque, seed: &[u8]) {
    // SAFETY: each input tensor's data holds ByteSize bytes (allocated above).
    unsafe {
        let mut k = 0usize;
        let mut next = || {
            k += 1;
            seed.get(k % seed.len().max(1)).copied().unwrap_or(0)
        };
        for i in 0..TfLiteInterpreterGetInputTensorCount(interp) {
            let t = TfLiteInterpreterGetInputTensor(interp, i);
            let (p, n) = (TfLiteTensorData(t).cast::<u8>(), TfLiteTensorByteSize(t));
            if p.is_null() || n == 0 {
                continue;
            }
            let data = std::slice::from_raw_parts_mut(p, n);
            match TfLiteTensorType(t) {
                FLOAT32 => data
                    .chunks_exact_mut(4)
                    .for_each(|c| c.copy_from_slice(&((f32::from(next()) - 128.0) / 64.0).to_le_bytes())),
                INT32 => data.chunks_exact_mut(4).for_each(|c| c.copy_from_slice(&i32::from(next() % 5).to_le_bytes())),
                _ => data.iter_mut().for_each(|b| *b = next()),
            }
        }
    }
}

/// Total bytes of the primary subgraph's tensors.
///
/// # Safety
/// `interp` is a live interpreter.
unsafe fn tensor_bytes(interp: *mut Opaque) -> usize {
    let mut total = 0usize;
    for i in 0.. {
        // SAFETY: an out-of-range index gives NULL, which ends the walk.
        let t = unsafe { TfLiteInterpreterGetTensor(interp, i) };
        if t.is_null() {
            break;
        }
        // SAFETY: `t` is a tensor of the live interpreter.
        total = total.saturating_add(unsafe { TfLiteTensorByteSize(t) });
    }
    total
}

fn run(bytes: &[u8]) {
    MESSAGES.store(0, Ordering::Relaxed);
    // SAFETY: C API calls with valid arguments; `bytes` outlives the model; the watchdog
    // sees the interpreter only between the RUNNING store and clear below.
    unsafe {
        let model = TfLiteModelCreateWithErrorReporter(
            bytes.as_ptr().cast(),
            bytes.len(),
            Some(count_message),
            std::ptr::null_mut(),
        );
        if model.is_null() {
            assert!(MESSAGES.load(Ordering::Relaxed) > 0, "model rejected without a message");
            return;
        }
        let options = TfLiteInterpreterOptionsCreate();
        TfLiteInterpreterOptionsSetErrorReporter(options, Some(count_message), std::ptr::null_mut());
        TfLiteInterpreterOptionsSetNumThreads(options, 1);
        assert_eq!(TfLiteInterpreterOptionsEnableCancellation(options, true), OK);
        let interp = TfLiteInterpreterCreate(model, options);
        TfLiteInterpreterOptionsDelete(options);
        let mut failed = interp.is_null();
        if !interp.is_null() {
            if TfLiteInterpreterAllocateTensors(interp) != OK {
                failed = true;
            } else if tensor_bytes(interp) <= MAX_TENSOR_BYTES {
                fill_inputs(interp, bytes);
                *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) = Some((interp as usize, Instant::now()));
                for _ in 0..2 {
                    let status = TfLiteInterpreterInvoke(interp);
                    if status != OK {
                        failed = status != CANCELLED;
                        break;
                    }
                }
                *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) = None;
                if !failed {
                    for i in 0..TfLiteInterpreterGetOutputTensorCount(interp) {
                        // An output may be the optional tensor (-1): NULL, as in TFLite.
                        let t = TfLiteInterpreterGetOutputTensor(interp, i);
                        if t.is_null() {
                            continue;
                        }
                        let mut out = vec![0u8; TfLiteTensorByteSize(t)];
                        let status = TfLiteTensorCopyToBuffer(t, out.as_mut_ptr().cast(), out.len());
                        assert_eq!(status, OK, "output {i} of {} bytes has no data", out.len());
                    }
                }
            }
            TfLiteInterpreterDelete(interp);
        }
        if failed {
            assert!(MESSAGES.load(Ordering::Relaxed) > 0, "a failure was reported without a message");
        }
        TfLiteModelDelete(model);
    }
}

fuzz_target!(
    init: {
        start_watchdog();
    },
    |bytes: &[u8]| run(bytes)
);
