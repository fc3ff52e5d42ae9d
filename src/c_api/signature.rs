//! `TfLiteSignatureRunner*` and the signature accessors of `TfLiteInterpreter` (c_api.h).
//!
//! A runner is a small handle: a pointer back to its interpreter and to one
//! `SignatureDef` the interpreter owns (built once at creation), so names returned by a
//! runner stay valid as long as the interpreter. As in TFLite, a runner's input and
//! output names are sorted (TFLite keeps them in a `std::map`), and a NULL key selects
//! the first signature of the primary subgraph, or, for a model without signatures, a
//! placeholder over the primary subgraph's inputs and outputs named after their tensors.

use super::ffi::{ReportsErrors, cstr_raw, into_raw, report, slice_from_raw};
use super::interpreter::{TfLiteInterpreter, fail, handle_reporter, inner_mut};
use crate::abi::types::*;
use crate::error::Error;
use crate::ffi::{ref_from_ptr, try_ref};
use crate::interpreter::{Interpreter, Subgraph};
use core::ffi::{c_char, c_int};
use std::ffi::{CStr, CString};
use std::sync::atomic::Ordering;

/// One signature as the runners see it.
pub(crate) struct SignatureDef {
    pub(crate) key: CString,
    pub(crate) subgraph: usize,
    /// (name, tensor index), sorted by name.
    pub(crate) inputs: Vec<(CString, i32)>,
    /// (name, tensor index), sorted by name.
    pub(crate) outputs: Vec<(CString, i32)>,
}

fn sorted(mut v: Vec<(CString, i32)>) -> Vec<(CString, i32)> {
    v.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    v
}

/// The interpreter's signatures, and the placeholder for a model without any.
pub(crate) fn build_signature_defs(interp: &mut Interpreter) -> (Vec<SignatureDef>, Option<SignatureDef>) {
    let defs: Vec<SignatureDef> = interp
        .signatures()
        .iter()
        .map(|s| SignatureDef {
            key: s.key.clone(),
            subgraph: s.subgraph,
            inputs: sorted(s.inputs.clone()),
            outputs: sorted(s.outputs.clone()),
        })
        .collect();
    if !defs.is_empty() || interp.subgraph_count() == 0 {
        return (defs, None);
    }
    let sg = interp.primary();
    let name_of = |t: i32, fallback: String| -> CString {
        let name = sg.tensor(t).map_or(core::ptr::null(), |t| t.name);
        // SAFETY: tensor names are NULL or NUL-terminated strings owned by the subgraph.
        match unsafe { cstr_raw(name) } {
            Some(n) if !n.is_empty() => n.to_owned(),
            _ => super::ffi::to_cstring(&fallback),
        }
    };
    let inputs = sg.inputs().iter().enumerate().map(|(i, &t)| (name_of(t, format!("input{i}")), t)).collect();
    let outputs = sg.outputs().iter().enumerate().map(|(i, &t)| (name_of(t, format!("output{i}")), t)).collect();
    let placeholder = SignatureDef {
        key: super::ffi::to_cstring("<placeholder signature>"),
        subgraph: 0,
        inputs: sorted(inputs),
        outputs: sorted(outputs),
    };
    (defs, Some(placeholder))
}

/// A signature runner. Opaque to C.
pub struct TfLiteSignatureRunner {
    interpreter: *mut TfLiteInterpreter,
    /// Points into the interpreter's `signatures` or `placeholder_signature`, which never
    /// change after creation.
    def: *const SignatureDef,
}

// SAFETY: pointers to a `TfLiteSignatureRunner` point to one.
unsafe impl crate::ffi::Handle for TfLiteSignatureRunner {
    type Target = Self;
}

impl ReportsErrors for TfLiteSignatureRunner {
    unsafe fn report_error(p: *const Self, msg: &str) {
        // SAFETY: per the function contract, NULL or a live runner; its interpreter
        // outlives it (API contract).
        match unsafe { ref_from_ptr(p) } {
            // SAFETY: as above.
            Some(r) => unsafe { TfLiteInterpreter::report_error(r.interpreter, msg) },
            None => report(None, msg),
        }
    }
}

impl TfLiteSignatureRunner {
    /// The runner's definition.
    fn def(&self) -> &SignatureDef {
        // SAFETY: `def` points into the interpreter's signatures, which never change
        // after creation, and the interpreter outlives its runners (API contract).
        unsafe { &*self.def }
    }
}

/// Returns the number of signatures of the model (0 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetSignatureCount(interpreter: *const TfLiteInterpreter) -> i32 {
    ffi_boundary!(report_to = interpreter, { try_ref!(interpreter).signatures.len() as i32 })
}

/// Returns the key of signature `signature_index`, or NULL if out of range. Owned by the
/// interpreter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetSignatureKey(
    interpreter: *const TfLiteInterpreter,
    signature_index: i32,
) -> *const c_char {
    ffi_boundary!(report_to = interpreter, {
        let i = try_ref!(interpreter);
        usize::try_from(signature_index)
            .ok()
            .and_then(|k| i.signatures.get(k))
            .map_or(core::ptr::null(), |s| s.key.as_ptr())
    })
}

/// Returns a runner for the signature `signature_key`, or NULL if there is none. A NULL
/// key selects the first signature of the primary subgraph, or for a model without
/// signatures a runner over the primary subgraph's inputs and outputs (named after their
/// tensors). `signature_key` is only read during the call. The caller owns the result and
/// must call `TfLiteSignatureRunnerDelete`; it must not outlive the interpreter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetSignatureRunner(
    interpreter: *const TfLiteInterpreter,
    signature_key: *const c_char,
) -> *mut TfLiteSignatureRunner {
    ffi_boundary!(report_to = interpreter, {
        let i = try_ref!(interpreter);
        // SAFETY: NULL or NUL-terminated, per the API contract.
        let def: Option<&SignatureDef> = match unsafe { cstr_raw(signature_key) } {
            Some(key) => i.signatures.iter().find(|s| s.key.as_c_str() == key),
            None => match &i.placeholder_signature {
                Some(p) => Some(p),
                None => {
                    let first = i.signatures.iter().find(|s| s.subgraph == 0);
                    if first.is_none() {
                        (i.reporter)("The model has signature def but none of those points to primary subgraph.");
                    }
                    first
                }
            },
        };
        match def {
            Some(d) if d.subgraph < i.inner.subgraph_count() => {
                into_raw(TfLiteSignatureRunner { interpreter: interpreter.cast_mut(), def: d })
            }
            _ => core::ptr::null_mut(),
        }
    })
}

/// The runner's subgraph and definition, and its interpreter.
///
/// # Safety
/// No other reference into the runner's interpreter may be alive while the subgraph is
/// borrowed.
unsafe fn parts<'a>(
    runner: &TfLiteSignatureRunner,
) -> Option<(&'a mut Subgraph, &SignatureDef, *const TfLiteInterpreter)> {
    let d = runner.def();
    // SAFETY: the runner's interpreter is alive (API contract); per the function contract.
    let interp = unsafe { inner_mut(runner.interpreter) }?;
    let sg = interp.subgraph_mut(d.subgraph)?;
    Some((sg, d, runner.interpreter))
}

fn find(list: &[(CString, i32)], name: &CStr) -> Option<i32> {
    list.iter().find(|(n, _)| n.as_c_str() == name).map(|&(_, t)| t)
}

/// Returns the number of inputs of the runner's signature (0 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteSignatureRunnerGetInputCount(signature_runner: *const TfLiteSignatureRunner) -> usize {
    ffi_boundary!(report_to = signature_runner, { try_ref!(signature_runner).def().inputs.len() })
}

/// Returns the name of input `input_index` (inputs are sorted by name), or NULL if out of
/// range. Owned by the interpreter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteSignatureRunnerGetInputName(
    signature_runner: *const TfLiteSignatureRunner,
    input_index: i32,
) -> *const c_char {
    ffi_boundary!(report_to = signature_runner, {
        let d = try_ref!(signature_runner).def();
        usize::try_from(input_index).ok().and_then(|k| d.inputs.get(k)).map_or(core::ptr::null(), |(n, _)| n.as_ptr())
    })
}

/// Resizes the input named `input_name` to `input_dims[0..input_dims_size]`; call
/// `TfLiteSignatureRunnerAllocateTensors` afterwards. Arguments are only read during the
/// call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteSignatureRunnerResizeInputTensor(
    signature_runner: *mut TfLiteSignatureRunner,
    input_name: *const c_char,
    input_dims: *const c_int,
    input_dims_size: i32,
) -> TfLiteStatus {
    ffi_boundary!(report_to = signature_runner, {
        let runner = try_ref!(signature_runner);
        // SAFETY: nothing else references the runner's interpreter during the call.
        let Some((sg, d, interp)) = (unsafe { parts(runner) }) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: NULL or NUL-terminated, per the API contract.
        let Some(name) = (unsafe { cstr_raw(input_name) }) else {
            // SAFETY: live interpreter.
            return unsafe { fail(interp, Error::new("TfLiteSignatureRunnerResizeInputTensor: input_name is NULL")) };
        };
        let Some(t) = find(&d.inputs, name) else {
            let msg = format!("Input name {} was not found", name.to_string_lossy());
            // SAFETY: live interpreter.
            return unsafe { fail(interp, Error::new(msg)) };
        };
        // SAFETY: `input_dims` has `input_dims_size` readable ints, per the API contract.
        let dims = usize::try_from(input_dims_size).ok().and_then(|n| unsafe { slice_from_raw(input_dims, n) });
        let Some(dims) = dims else {
            // SAFETY: live interpreter.
            return unsafe { fail(interp, Error::new("TfLiteSignatureRunnerResizeInputTensor: invalid input_dims")) };
        };
        match sg.resize_input_tensor(t, dims) {
            Ok(()) => TfLiteStatus::kTfLiteOk,
            // SAFETY: live interpreter.
            Err(e) => unsafe { fail(interp, e) },
        }
    })
}

/// Plans and allocates the memory of the signature's subgraph.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteSignatureRunnerAllocateTensors(
    signature_runner: *mut TfLiteSignatureRunner,
) -> TfLiteStatus {
    ffi_boundary!(report_to = signature_runner, {
        let runner = try_ref!(signature_runner);
        // SAFETY: nothing else references the runner's interpreter during the call.
        let Some((sg, _, interp)) = (unsafe { parts(runner) }) else { return TfLiteStatus::kTfLiteError };
        match sg.allocate_tensors() {
            Ok(()) => TfLiteStatus::kTfLiteOk,
            // SAFETY: live interpreter.
            Err(e) => unsafe { fail(interp, e) },
        }
    })
}

/// Returns the input tensor named `input_name`, or NULL if there is none. Owned by the
/// interpreter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteSignatureRunnerGetInputTensor(
    signature_runner: *mut TfLiteSignatureRunner,
    input_name: *const c_char,
) -> *mut TfLiteTensor {
    ffi_boundary!(report_to = signature_runner, {
        let runner = try_ref!(signature_runner);
        // SAFETY: nothing else references the runner's interpreter during the call.
        let Some((sg, d, interp)) = (unsafe { parts(runner) }) else { return core::ptr::null_mut() };
        // SAFETY: NULL or NUL-terminated, per the API contract.
        let Some(name) = (unsafe { cstr_raw(input_name) }) else { return core::ptr::null_mut() };
        match find(&d.inputs, name) {
            Some(t) => sg.tensor_ptr(t).unwrap_or(core::ptr::null_mut()),
            None => {
                // SAFETY: live interpreter.
                (unsafe { handle_reporter(interp) })(&format!("Input name {} was not found", name.to_string_lossy()));
                core::ptr::null_mut()
            }
        }
    })
}

/// Runs the signature's subgraph, then copies outputs a delegate left stale back from
/// their buffer handles. Returns kTfLiteCancelled if cancelled.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteSignatureRunnerInvoke(signature_runner: *mut TfLiteSignatureRunner) -> TfLiteStatus {
    ffi_boundary!(report_to = signature_runner, {
        let runner = try_ref!(signature_runner);
        // SAFETY: nothing else references the runner's interpreter during the call.
        let Some((sg, _, interp)) = (unsafe { parts(runner) }) else { return TfLiteStatus::kTfLiteError };
        // A cancel that arrived while nothing ran must not stop this run (as Interpreter::invoke).
        // SAFETY: live interpreter; the flag is never replaced after creation.
        unsafe { &(*interp).cancel_flag }.store(false, Ordering::SeqCst);
        let outputs = sg.outputs().to_vec();
        match sg
            .invoke()
            .and_then(|()| outputs.iter().filter(|&&o| o >= 0).try_for_each(|&o| sg.ensure_tensor_data_is_readable(o)))
        {
            Ok(()) => TfLiteStatus::kTfLiteOk,
            // SAFETY: live interpreter.
            Err(e) => unsafe { fail(interp, e) },
        }
    })
}

/// Returns the number of outputs of the runner's signature (0 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteSignatureRunnerGetOutputCount(signature_runner: *const TfLiteSignatureRunner) -> usize {
    ffi_boundary!(report_to = signature_runner, { try_ref!(signature_runner).def().outputs.len() })
}

/// Returns the name of output `output_index` (outputs are sorted by name), or NULL if out
/// of range. Owned by the interpreter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteSignatureRunnerGetOutputName(
    signature_runner: *const TfLiteSignatureRunner,
    output_index: i32,
) -> *const c_char {
    ffi_boundary!(report_to = signature_runner, {
        let d = try_ref!(signature_runner).def();
        usize::try_from(output_index).ok().and_then(|k| d.outputs.get(k)).map_or(core::ptr::null(), |(n, _)| n.as_ptr())
    })
}

/// Returns the output tensor named `output_name`, or NULL if there is none. Owned by the
/// interpreter; read it after `TfLiteSignatureRunnerInvoke`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteSignatureRunnerGetOutputTensor(
    signature_runner: *const TfLiteSignatureRunner,
    output_name: *const c_char,
) -> *const TfLiteTensor {
    ffi_boundary!(report_to = signature_runner, {
        let runner = try_ref!(signature_runner);
        // SAFETY: nothing else references the runner's interpreter during the call.
        let Some((sg, d, interp)) = (unsafe { parts(runner) }) else { return core::ptr::null() };
        // SAFETY: NULL or NUL-terminated, per the API contract.
        let Some(name) = (unsafe { cstr_raw(output_name) }) else { return core::ptr::null() };
        match find(&d.outputs, name) {
            Some(t) => sg.tensor_ptr(t).map_or(core::ptr::null(), |p| p.cast_const()),
            None => {
                // SAFETY: live interpreter.
                (unsafe { handle_reporter(interp) })(&format!("Output name {} was not found", name.to_string_lossy()));
                core::ptr::null()
            }
        }
    })
}

/// Destroys the runner (not the interpreter). Safe to pass NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteSignatureRunnerDelete(signature_runner: *mut TfLiteSignatureRunner) {
    ffi_delete!(signature_runner)
}

/// Asks a running `TfLiteSignatureRunnerInvoke` (on another thread) to stop; see
/// `TfLiteInterpreterCancel`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteSignatureRunnerCancel(signature_runner: *mut TfLiteSignatureRunner) -> TfLiteStatus {
    ffi_boundary!(report_to = signature_runner, {
        let r = try_ref!(signature_runner);
        // SAFETY: the runner's interpreter is alive.
        unsafe { super::interpreter::cancel(r.interpreter) }
    })
}
