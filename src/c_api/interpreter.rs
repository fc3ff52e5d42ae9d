//! `TfLiteInterpreter*` (c_api.h and the interpreter half of c_api_experimental.h).
//!
//! Every function reaches the interpreter's fields through raw-pointer projections
//! (`inner_mut`, `handle_reporter`, ...) rather than one `&mut TfLiteInterpreter`, so
//! `TfLiteInterpreterCancel` (which TFLite allows from another thread while `Invoke`
//! runs) touches only the cancellation fields and never aliases `Invoke`'s borrow.

use super::callback_resolver::CallbackResolver;
use super::ffi::{ReportsErrors, into_raw, report, report_null, slice_from_raw};
use super::model::TfLiteModel;
use super::options::TfLiteInterpreterOptions;
use super::signature::{SignatureDef, build_signature_defs};
use crate::abi::types::*;
use crate::error::Error;
use crate::ffi::ref_from_ptr;
use crate::interpreter::{Interpreter, InterpreterConfig, Reporter, stderr_reporter};
use crate::model::Model;
use crate::resolver::builtin::builtin_op_resolver;
use crate::resolver::{ChainedResolver, OpFinder, OpResolver};
use core::ffi::c_int;
use std::ffi::CString;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// An interpreter. Opaque to C.
pub struct TfLiteInterpreter {
    // Declared first so it is dropped first: everything below outlives it.
    pub(crate) inner: Interpreter,
    pub(crate) reporter: Reporter,
    /// The flag `Invoke` checks between nodes (shared with every subgraph).
    pub(crate) cancel_flag: Arc<AtomicBool>,
    pub(crate) cancellation_enabled: bool,
    /// `TfLiteInterpreterOptionsSetEnableDelegateFallback`: Invoke retries on the CPU.
    pub(crate) enable_delegate_fallback: bool,
    /// The model's signatures (input/output names sorted, as TFLite's `std::map`).
    pub(crate) signatures: Vec<SignatureDef>,
    /// The runner for a NULL key on a model without signatures.
    pub(crate) placeholder_signature: Option<SignatureDef>,
    /// Names that registrations added through the options point into.
    _custom_names: Vec<Arc<CString>>,
    _model: Arc<Model>,
}

// SAFETY: pointers to a `TfLiteInterpreter` point to one.
unsafe impl crate::ffi::Handle for TfLiteInterpreter {
    type Target = Self;
}

impl ReportsErrors for TfLiteInterpreter {
    unsafe fn report_error(p: *const Self, msg: &str) {
        if p.is_null() {
            report(None, msg);
        } else {
            // SAFETY: per the function contract, a live interpreter.
            (unsafe { handle_reporter(p) })(msg);
        }
    }
}

/// The interpreter's `Interpreter`. Not `try_mut!`: entry points borrow only this field,
/// never the whole handle, so that a concurrent `TfLiteInterpreterCancel` (which reads
/// the cancellation fields) does not alias their borrow.
///
/// # Safety
/// `p` must be NULL or a live interpreter from `TfLiteInterpreterCreate*`, and no other
/// reference to its `inner` may be alive (the header forbids concurrent calls).
pub(crate) unsafe fn inner_mut<'a>(p: *const TfLiteInterpreter) -> Option<&'a mut Interpreter> {
    if p.is_null() {
        return None;
    }
    // SAFETY: per the function contract; the pointer came from `Box::into_raw` (mutable
    // provenance), so writing through it is allowed even though C holds it as const.
    Some(unsafe { &mut (*p.cast_mut()).inner })
}

/// The interpreter's reporter.
///
/// # Safety
/// `p` must be a live, non-NULL interpreter.
pub(crate) unsafe fn handle_reporter<'a>(p: *const TfLiteInterpreter) -> &'a Reporter {
    // SAFETY: per the function contract; `reporter` is never mutated after creation.
    unsafe { &(*p).reporter }
}

/// Reports `e` to the interpreter's reporter and returns its status.
///
/// # Safety
/// As `handle_reporter`.
pub(crate) unsafe fn fail(p: *const TfLiteInterpreter, e: Error) -> TfLiteStatus {
    // SAFETY: forwarded contract.
    (unsafe { handle_reporter(p) })(&e.message);
    e.status
}

/// # Safety
/// `model` and `options` must each be NULL or live objects of their type.
unsafe fn create(
    model: *const TfLiteModel,
    options: *const TfLiteInterpreterOptions,
    with_builtins: bool,
    func: &str,
) -> *mut TfLiteInterpreter {
    // SAFETY: per the function contract.
    let opts = unsafe { ref_from_ptr(options) };
    let reporter: Reporter = opts.and_then(|o| o.reporter).map_or_else(stderr_reporter, |r| r.to_reporter());
    // SAFETY: per the function contract.
    let Some(model) = (unsafe { ref_from_ptr(model) }) else {
        report_null(Some(&reporter), func, "model");
        return core::ptr::null_mut();
    };

    // Resolver chain: the application's callbacks, then ops added to the options, then
    // (unless CreateWithSelectedOps) the builtin kernels.
    let callbacks = opts.filter(|o| o.callbacks.is_set()).map(|o| CallbackResolver::new(o.callbacks));
    let added: OpResolver = opts.map(|o| o.added_ops()).unwrap_or_default();
    let builtins = with_builtins.then(builtin_op_resolver);
    let mut chain = ChainedResolver::default();
    if let Some(c) = &callbacks {
        chain.links.push(c as &dyn OpFinder);
    }
    chain.links.push(&added);
    if let Some(b) = &builtins {
        chain.links.push(b);
    }

    let cancellation_enabled = opts.is_some_and(|o| o.enable_cancellation);
    let config = InterpreterConfig {
        num_threads: opts.map_or(-1, |o| o.num_threads),
        reporter: reporter.clone(),
        enable_cancellation: cancellation_enabled,
        ..InterpreterConfig::default()
    };
    let mut inner = match Interpreter::new(model.model.clone(), &chain, config) {
        Ok(i) => i,
        Err(e) => {
            reporter(&e.message);
            return core::ptr::null_mut();
        }
    };
    // Delegates, in the order they were added. Any failure to apply one (its Prepare
    // failing with any status included) fails creation, as in TFLite.
    for &d in opts.map_or(&[][..], |o| o.delegates.as_slice()) {
        // SAFETY: delegates added to the options must outlive the interpreter (API contract).
        if let Err(e) = unsafe { inner.modify_graph_with_delegate(d) } {
            reporter(&e.message);
            return core::ptr::null_mut();
        }
    }
    let (signatures, placeholder_signature) = build_signature_defs(&mut inner);
    let cancel_flag = inner.cancellation_flag();
    into_raw(TfLiteInterpreter {
        inner,
        reporter,
        cancel_flag,
        cancellation_enabled,
        enable_delegate_fallback: opts.is_some_and(|o| o.enable_delegate_fallback),
        signatures,
        placeholder_signature,
        _custom_names: opts.map(|o| o.custom_names.clone()).unwrap_or_default(),
        _model: model.model.clone(),
    })
}

/// Returns a new interpreter for `model` with `optional_options` (NULL: defaults), or
/// NULL on failure (reported to the options' error reporter, else stderr). Ops resolve
/// through the options' resolver callbacks, then ops added to the options, then the
/// builtin kernels.
///
/// The caller retains ownership of `model` and `optional_options`; both may be deleted
/// right after this call (the interpreter keeps its own reference to the model, whose
/// buffer must still outlive it for `TfLiteModelCreate`). Delegates, operators and
/// reporter user data in the options must outlive the interpreter. The caller owns the
/// result and must call `TfLiteInterpreterDelete`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterCreate(
    model: *const TfLiteModel,
    optional_options: *const TfLiteInterpreterOptions,
) -> *mut TfLiteInterpreter {
    ffi_boundary!(report_to = optional_options, {
        // SAFETY: forwarded contract.
        unsafe { create(model, optional_options, true, "TfLiteInterpreterCreate") }
    })
}

/// As `TfLiteInterpreterCreate`, but without the builtin kernels: only ops added to the
/// options (or found by its resolver callbacks) are available.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterCreateWithSelectedOps(
    model: *const TfLiteModel,
    options: *const TfLiteInterpreterOptions,
) -> *mut TfLiteInterpreter {
    ffi_boundary!(report_to = options, {
        // SAFETY: forwarded contract.
        unsafe { create(model, options, false, "TfLiteInterpreterCreateWithSelectedOps") }
    })
}

/// Destroys the interpreter. Safe to pass NULL. Tensors and signature runners obtained
/// from it must not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterDelete(interpreter: *mut TfLiteInterpreter) {
    ffi_delete!(interpreter)
}

/// Returns the number of input tensors (0 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetInputTensorCount(interpreter: *const TfLiteInterpreter) -> i32 {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        unsafe { inner_mut(interpreter) }.map_or(0, |i| i.primary().inputs().len() as i32)
    })
}

/// Returns the tensor indices of the inputs (`TfLiteInterpreterGetInputTensorCount` of
/// them), or NULL for NULL. Owned by the interpreter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterInputTensorIndices(interpreter: *const TfLiteInterpreter) -> *const c_int {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        unsafe { inner_mut(interpreter) }.map_or(core::ptr::null(), |i| i.primary().inputs().as_ptr())
    })
}

/// Returns input `input_index` (0-based, not a tensor index), or NULL if out of range.
/// The tensor is owned by the interpreter and valid until it is deleted (its data until
/// the next `TfLiteInterpreterAllocateTensors`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetInputTensor(
    interpreter: *const TfLiteInterpreter,
    input_index: i32,
) -> *mut TfLiteTensor {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return core::ptr::null_mut() };
        let sg = i.primary_mut();
        let Some(&t) = usize::try_from(input_index).ok().and_then(|k| sg.inputs().get(k)) else {
            return core::ptr::null_mut();
        };
        sg.tensor_ptr(t).unwrap_or(core::ptr::null_mut())
    })
}

/// Resizes input `input_index` (0-based, not a tensor index) to `input_dims[0..input_dims_size]`.
/// Takes effect at the next `TfLiteInterpreterAllocateTensors`, which must be called
/// before `Invoke`. `input_dims` is only read during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterResizeInputTensor(
    interpreter: *mut TfLiteInterpreter,
    input_index: i32,
    input_dims: *const c_int,
    input_dims_size: i32,
) -> TfLiteStatus {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return TfLiteStatus::kTfLiteError };
        let Ok(n) = usize::try_from(input_dims_size) else {
            // SAFETY: non-NULL interpreter.
            return unsafe {
                fail(interpreter, Error::new("TfLiteInterpreterResizeInputTensor: negative input_dims_size"))
            };
        };
        // SAFETY: `input_dims` has `input_dims_size` readable ints, per the API contract.
        let Some(dims) = (unsafe { slice_from_raw(input_dims, n) }) else {
            // SAFETY: non-NULL interpreter.
            return unsafe { fail(interpreter, Error::new("TfLiteInterpreterResizeInputTensor: input_dims is NULL")) };
        };
        let Some(&t) = usize::try_from(input_index).ok().and_then(|k| i.primary().inputs().get(k)) else {
            let msg = format!("TfLiteInterpreterResizeInputTensor: input index {input_index} out of range");
            // SAFETY: non-NULL interpreter.
            return unsafe { fail(interpreter, Error::new(msg)) };
        };
        match i.resize_input_tensor(t, dims) {
            Ok(()) => TfLiteStatus::kTfLiteOk,
            // SAFETY: non-NULL interpreter.
            Err(e) => unsafe { fail(interpreter, e) },
        }
    })
}

/// Plans and allocates tensor memory; needed after creation and after any resize.
/// Tensor data pointers obtained before may change.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterAllocateTensors(interpreter: *mut TfLiteInterpreter) -> TfLiteStatus {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return TfLiteStatus::kTfLiteError };
        match i.allocate_tensors() {
            Ok(()) => TfLiteStatus::kTfLiteOk,
            // SAFETY: non-NULL interpreter.
            Err(e) => unsafe { fail(interpreter, e) },
        }
    })
}

/// Runs the model. Requires a successful `TfLiteInterpreterAllocateTensors` since the
/// last resize. Returns kTfLiteCancelled if `TfLiteInterpreterCancel` stopped it. With
/// delegate fallback enabled in the options, a run that fails while delegates are
/// applied removes every delegate, runs again on the CPU and returns
/// kTfLiteDelegateError if that succeeded (outputs are then valid); later runs use the
/// CPU only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterInvoke(interpreter: *mut TfLiteInterpreter) -> TfLiteStatus {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: non-NULL interpreter; the flag is never mutated after creation.
        let fallback = unsafe { (*interpreter).enable_delegate_fallback };
        let result = if fallback {
            i.invoke_with_cpu_fallback()
                .map(|fell_back| if fell_back { TfLiteStatus::kTfLiteDelegateError } else { TfLiteStatus::kTfLiteOk })
        } else {
            i.invoke().map(|()| TfLiteStatus::kTfLiteOk)
        };
        match result {
            Ok(status) => status,
            // SAFETY: non-NULL interpreter.
            Err(e) => unsafe { fail(interpreter, e) },
        }
    })
}

/// Returns the number of output tensors (0 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetOutputTensorCount(interpreter: *const TfLiteInterpreter) -> i32 {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        unsafe { inner_mut(interpreter) }.map_or(0, |i| i.primary().outputs().len() as i32)
    })
}

/// Returns the tensor indices of the outputs (`TfLiteInterpreterGetOutputTensorCount` of
/// them), or NULL for NULL. Owned by the interpreter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOutputTensorIndices(interpreter: *const TfLiteInterpreter) -> *const c_int {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        unsafe { inner_mut(interpreter) }.map_or(core::ptr::null(), |i| i.primary().outputs().as_ptr())
    })
}

/// Returns output `output_index` (0-based, not a tensor index), or NULL if out of range.
/// Owned by the interpreter; read it after `Invoke`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetOutputTensor(
    interpreter: *const TfLiteInterpreter,
    output_index: i32,
) -> *const TfLiteTensor {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return core::ptr::null() };
        let sg = i.primary_mut();
        let Some(&t) = usize::try_from(output_index).ok().and_then(|k| sg.outputs().get(k)) else {
            return core::ptr::null();
        };
        sg.tensor_ptr(t).map_or(core::ptr::null(), |p| p.cast_const())
    })
}

/// Returns the tensor with index `index` in the primary subgraph, or NULL if out of
/// range. Owned by the interpreter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetTensor(
    interpreter: *const TfLiteInterpreter,
    index: c_int,
) -> *mut TfLiteTensor {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return core::ptr::null_mut() };
        i.primary_mut().tensor_ptr(index).unwrap_or(core::ptr::null_mut())
    })
}

/// Asks a running `Invoke` (on another thread) to stop at the next node; it then returns
/// kTfLiteCancelled. Returns kTfLiteError if cancellation was not enabled with
/// `TfLiteInterpreterOptionsEnableCancellation`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterCancel(interpreter: *const TfLiteInterpreter) -> TfLiteStatus {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: forwarded contract.
        unsafe { cancel(interpreter) }
    })
}

/// Sets the cancellation flag, touching only the cancellation fields.
///
/// # Safety
/// `p` must be NULL or a live interpreter.
pub(crate) unsafe fn cancel(p: *const TfLiteInterpreter) -> TfLiteStatus {
    if p.is_null() {
        return TfLiteStatus::kTfLiteError;
    }
    // SAFETY: live interpreter; these fields are never mutated after creation, and
    // reading them does not overlap the `inner` borrow a concurrent `Invoke` holds.
    let (enabled, flag) = unsafe { ((*p).cancellation_enabled, &(*p).cancel_flag) };
    if !enabled {
        return TfLiteStatus::kTfLiteError;
    }
    flag.store(true, Ordering::SeqCst);
    TfLiteStatus::kTfLiteOk
}

/// Zeroes every variable tensor.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterResetVariableTensors(interpreter: *mut TfLiteInterpreter) -> TfLiteStatus {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return TfLiteStatus::kTfLiteError };
        match i.reset_variable_tensors() {
            Ok(()) => TfLiteStatus::kTfLiteOk,
            // SAFETY: non-NULL interpreter.
            Err(e) => unsafe { fail(interpreter, e) },
        }
    })
}

/// Returns the number of variable tensors of the primary subgraph (0 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetVariableTensorCount(interpreter: *const TfLiteInterpreter) -> i32 {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        unsafe { inner_mut(interpreter) }.map_or(0, |i| i.primary().variables().len() as i32)
    })
}

/// Returns variable tensor `variable_index` (0-based), or NULL if out of range. Owned by
/// the interpreter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetVariableTensor(
    interpreter: *const TfLiteInterpreter,
    variable_index: i32,
) -> *mut TfLiteTensor {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return core::ptr::null_mut() };
        let sg = i.primary_mut();
        let Some(&t) = usize::try_from(variable_index).ok().and_then(|k| sg.variables().get(k)) else {
            return core::ptr::null_mut();
        };
        sg.tensor_ptr(t).unwrap_or(core::ptr::null_mut())
    })
}

/// Returns the tensor index of input `input_index`, or -1 if out of range (or NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetInputTensorIndex(
    interpreter: *const TfLiteInterpreter,
    input_index: i32,
) -> i32 {
    ffi_boundary!(default = -1, report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return -1 };
        usize::try_from(input_index).ok().and_then(|k| i.primary().inputs().get(k).copied()).unwrap_or(-1)
    })
}

/// Returns the tensor index of output `output_index`, or -1 if out of range (or NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetOutputTensorIndex(
    interpreter: *const TfLiteInterpreter,
    output_index: i32,
) -> i32 {
    ffi_boundary!(default = -1, report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return -1 };
        usize::try_from(output_index).ok().and_then(|k| i.primary().outputs().get(k).copied()).unwrap_or(-1)
    })
}

/// Makes tensor `tensor_index` use `allocation->data` (at least `allocation->bytes` long,
/// 64-byte aligned unless `flags` has `kTfLiteCustomAllocationFlagsSkipAlignCheck`)
/// instead of arena memory. Call `TfLiteInterpreterAllocateTensors` afterwards. The
/// caller retains ownership of the memory; it must outlive the interpreter or the next
/// resize of that tensor. `allocation` itself is only read during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterSetCustomAllocationForTensor(
    interpreter: *mut TfLiteInterpreter,
    tensor_index: c_int,
    allocation: *const TfLiteCustomAllocation,
    flags: i64,
) -> TfLiteStatus {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: NULL or a readable allocation, per the API contract.
        let Some(a) = (unsafe { allocation.as_ref() }).copied() else {
            // SAFETY: non-NULL interpreter.
            return unsafe {
                fail(interpreter, Error::new("TfLiteInterpreterSetCustomAllocationForTensor: allocation is NULL"))
            };
        };
        let skip_align = flags & TfLiteCustomAllocationFlags::kTfLiteCustomAllocationFlagsSkipAlignCheck as i64 != 0;
        match i.primary_mut().set_custom_allocation(tensor_index, a.data, a.bytes, skip_align) {
            Ok(()) => TfLiteStatus::kTfLiteOk,
            // SAFETY: non-NULL interpreter.
            Err(e) => unsafe { fail(interpreter, e) },
        }
    })
}

/// Applies `delegate` to the interpreter's graph after creation (the delegate's
/// `Prepare` runs now and may replace nodes). The caller retains ownership of `delegate`;
/// it must outlive the interpreter. Returns kTfLiteDelegateError if the delegate failed:
/// every delegate is then removed and the graph runs on the CPU;
/// kTfLiteApplicationError if the delegate cannot handle the graph's dynamic tensors.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterModifyGraphWithDelegate(
    interpreter: *const TfLiteInterpreter,
    delegate: *mut TfLiteDelegate,
) -> TfLiteStatus {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: `delegate` is NULL or live and outlives the interpreter (API contract).
        match unsafe { i.modify_graph_with_delegate(delegate) } {
            Ok(()) => TfLiteStatus::kTfLiteOk,
            // SAFETY: non-NULL interpreter.
            Err(e) => unsafe { fail(interpreter, e) },
        }
    })
}

/// Associates `buffer_handle` (owned by `delegate`) with `tensor`, a tensor of this
/// interpreter. Fails if the tensor already belongs to another delegate. A handle the
/// tensor had is first given back to the delegate (`FreeBufferHandle`); the interpreter
/// gives the new one back when it is deleted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterSetBufferHandle(
    interpreter: *mut TfLiteInterpreter,
    tensor: *mut TfLiteTensor,
    buffer_handle: TfLiteBufferHandle,
    delegate: *mut TfLiteOpaqueDelegate,
) -> TfLiteStatus {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return TfLiteStatus::kTfLiteError };
        let ctx = i.primary_mut().context_ptr();
        // SAFETY: `tensor` is NULL or a live tensor of the interpreter (API contract);
        // `ctx` is its primary context.
        match unsafe { crate::interpreter::delegation::set_buffer_handle(ctx, tensor, buffer_handle, delegate) } {
            Ok(()) => TfLiteStatus::kTfLiteOk,
            // SAFETY: non-NULL interpreter.
            Err(e) => unsafe { fail(interpreter, e) },
        }
    })
}

/// Writes tensor `tensor_index`'s buffer handle and delegate (NULL if none) to
/// `*buffer_handle` / `*delegate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetBufferHandle(
    interpreter: *mut TfLiteInterpreter,
    tensor_index: c_int,
    buffer_handle: *mut TfLiteBufferHandle,
    delegate: *mut *mut TfLiteOpaqueDelegate,
) -> TfLiteStatus {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return TfLiteStatus::kTfLiteError };
        let Some(t) = i.primary().tensor(tensor_index) else {
            // SAFETY: non-NULL interpreter.
            return unsafe {
                fail(
                    interpreter,
                    Error::new(format!("TfLiteInterpreterGetBufferHandle: tensor index {tensor_index} out of range")),
                )
            };
        };
        if buffer_handle.is_null() || delegate.is_null() {
            // SAFETY: non-NULL interpreter.
            return unsafe { fail(interpreter, Error::new("TfLiteInterpreterGetBufferHandle: NULL output pointer")) };
        }
        // SAFETY: non-NULL out-pointers supplied by the caller.
        unsafe {
            buffer_handle.write(t.buffer_handle);
            delegate.write(t.delegate);
        }
        TfLiteStatus::kTfLiteOk
    })
}

/// Sets whether `TfLiteInterpreterInvoke` may leave outputs in delegate buffers
/// (`allow_buffer_handle_output` true); by default stale outputs are copied back with the
/// delegate's `CopyFromBufferHandle` after every run.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteSetAllowBufferHandleOutput(
    interpreter: *const TfLiteInterpreter,
    allow_buffer_handle_output: bool,
) {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        if let Some(i) = unsafe { inner_mut(interpreter) } {
            i.set_allow_buffer_handle_output(allow_buffer_handle_output);
        }
    })
}

/// Makes tensor `tensor_index`'s data readable: if it is stale, its delegate copies it
/// from the buffer handle (`CopyFromBufferHandle`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterEnsureTensorDataIsReadable(
    interpreter: *mut TfLiteInterpreter,
    tensor_index: c_int,
) -> TfLiteStatus {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return TfLiteStatus::kTfLiteError };
        match i.primary_mut().ensure_tensor_data_is_readable(tensor_index) {
            Ok(()) => TfLiteStatus::kTfLiteOk,
            // SAFETY: non-NULL interpreter.
            Err(e) => unsafe { fail(interpreter, e) },
        }
    })
}

/// Non-TFLite extension (experimental): the primary subgraph's memory plan after the last
/// `TfLiteInterpreterAllocateTensors`: the read-write arena size, the persistent arena
/// size, and a lower bound on the read-write arena (the most bytes live at once). Each
/// out-pointer may be NULL; they are written only on kTfLiteOk.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterGetArenaStats(
    interpreter: *const TfLiteInterpreter,
    arena_bytes: *mut usize,
    persistent_bytes: *mut usize,
    lower_bound_bytes: *mut usize,
) -> TfLiteStatus {
    ffi_boundary!(report_to = interpreter, {
        // SAFETY: NULL or a live interpreter.
        let Some(i) = (unsafe { inner_mut(interpreter) }) else { return TfLiteStatus::kTfLiteError };
        let s = i.primary().memory_stats();
        for (p, v) in [
            (arena_bytes, s.arena_bytes),
            (persistent_bytes, s.persistent_bytes),
            (lower_bound_bytes, s.lower_bound_bytes),
        ] {
            if !p.is_null() {
                // SAFETY: non-NULL out-pointer supplied by the caller.
                unsafe { p.write(v) };
            }
        }
        TfLiteStatus::kTfLiteOk
    })
}

#[cfg(test)]
mod tests {
    use super::super::model::{TfLiteModelCreate, TfLiteModelDelete};
    use super::*;
    use crate::ffi::panic::test_hook::panic_next_at;

    #[test]
    fn null_handles_are_rejected() {
        // SAFETY: NULL handles are part of every function's contract.
        unsafe {
            assert!(TfLiteInterpreterCreate(core::ptr::null(), core::ptr::null()).is_null());
            assert_eq!(TfLiteInterpreterGetInputTensorCount(core::ptr::null()), 0);
            assert_eq!(TfLiteInterpreterGetInputTensorIndex(core::ptr::null(), 0), -1);
            assert!(TfLiteInterpreterGetTensor(core::ptr::null(), 0).is_null());
            assert_eq!(TfLiteInterpreterInvoke(core::ptr::null_mut()), TfLiteStatus::kTfLiteError);
            assert_eq!(TfLiteInterpreterCancel(core::ptr::null()), TfLiteStatus::kTfLiteError);
            TfLiteInterpreterDelete(core::ptr::null_mut());
        }
    }

    #[test]
    fn a_panic_in_an_entry_point_reaches_the_interpreters_reporter() {
        let bytes = crate::model::writer::relu_model(8);
        let got = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
        // SAFETY: `bytes` outlives the model and the interpreter; every handle comes from
        // these functions and is deleted once.
        unsafe {
            let model = TfLiteModelCreate(bytes.as_ptr().cast(), bytes.len());
            let interp = TfLiteInterpreterCreate(model, core::ptr::null());
            assert!(!interp.is_null());
            let sink = got.clone();
            (*interp).reporter = Arc::new(move |m: &str| sink.lock().push(m.to_string()));

            panic_next_at("TfLiteInterpreterAllocateTensors");
            assert_eq!(TfLiteInterpreterAllocateTensors(interp), TfLiteStatus::kTfLiteError);
            assert_eq!(*got.lock(), ["internal error: TfLiteInterpreterAllocateTensors panicked: injected panic"]);
            // A function whose error value is not the default one returns that value.
            panic_next_at("TfLiteInterpreterGetInputTensorIndex");
            assert_eq!(TfLiteInterpreterGetInputTensorIndex(interp, 0), -1);
            assert_eq!(got.lock().len(), 2);
            // The interpreter keeps working after the caught panics.
            assert_eq!(TfLiteInterpreterAllocateTensors(interp), TfLiteStatus::kTfLiteOk);
            assert_eq!(TfLiteInterpreterInvoke(interp), TfLiteStatus::kTfLiteOk);
            assert_eq!(got.lock().len(), 2);

            TfLiteInterpreterDelete(interp);
            TfLiteModelDelete(model);
        }
    }
}
