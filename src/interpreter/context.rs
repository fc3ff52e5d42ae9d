//! The functions stored in every subgraph's `TfLiteContext`: what C kernels and
//! delegates call back into. Each one finds its subgraph through `context->impl_` and
//! never unwinds into C.

use super::subgraph::Subgraph;
use crate::abi::arrays::{OwnedIntArray, int_array_free};
use crate::abi::types::*;
use core::ffi::{c_char, c_int};
use std::ffi::CStr;

#[allow(unused_doc_comments, reason = "the doc line is read by cbindgen, not rustdoc")]
/// cbindgen:ignore
unsafe extern "C" {
    /// Implemented in src/c_api/variadic.c: formats and forwards to `tflite_rs_report_message`.
    fn tflite_rs_context_report_error(context: *mut TfLiteContext, format: *const c_char, ...);
}

/// The subgraph a context belongs to.
///
/// # Safety
/// `ctx` must be NULL or a context created by this runtime whose subgraph is alive, and
/// the caller must not hold another reference to that subgraph across the returned one.
pub unsafe fn subgraph_from_context<'a>(ctx: *const TfLiteContext) -> Option<&'a mut Subgraph> {
    if ctx.is_null() {
        return None;
    }
    // SAFETY: per the function contract, `impl_` is the owning subgraph (set by sync_context).
    unsafe { ((*ctx).impl_ as *mut Subgraph).as_mut() }
}

/// A context with TFLite's callbacks and the delegate-only ones set to the "forbidden" stubs.
pub fn new_context(num_threads: i32) -> TfLiteContext {
    TfLiteContext {
        tensors_size: 0,
        GetExecutionPlan: Some(forbidden_get_execution_plan),
        tensors: core::ptr::null_mut(),
        impl_: core::ptr::null_mut(),
        ResizeTensor: Some(resize_tensor),
        ReportError: Some(tflite_rs_context_report_error),
        AddTensors: Some(add_tensors),
        GetNodeAndRegistration: Some(forbidden_get_node_and_registration),
        ReplaceNodeSubsetsWithDelegateKernels: Some(forbidden_replace_node_subsets),
        recommended_num_threads: num_threads,
        GetExternalContext: Some(get_external_context),
        SetExternalContext: Some(set_external_context),
        allow_fp32_relax_to_fp16: false,
        profiler: core::ptr::null_mut(),
        AllocatePersistentBuffer: None,
        AllocateBufferForEval: None,
        RequestScratchBufferInArena: None,
        GetScratchBuffer: None,
        ResizeTensorExplicit: None,
        PreviewDelegatePartitioning: Some(forbidden_preview_partitioning),
        GetTensor: None,
        GetEvalTensor: None,
        GetModelMetadata: Some(get_model_metadata),
        AcquireSubgraphContext: Some(forbidden_acquire_subgraph_context),
        ReleaseSubgraphContext: Some(forbidden_release_subgraph_context),
    }
}

/// Runs the body of the context callback `name` inside the panic boundary: a panic is
/// reported through `context`, as the callback's other errors are, and becomes `default`.
fn guard<R>(context: *const TfLiteContext, name: &str, default: R, body: impl FnOnce() -> R) -> R {
    // SAFETY: `context` is the callback's own argument, NULL or a live runtime context.
    crate::ffi::guard(name, default, |msg| unsafe { report(context, msg) }, body)
}

/// Delivers `msg` to the subgraph's reporter (stderr without one).
///
/// # Safety
/// `context` is NULL or a live runtime context.
unsafe fn report(context: *const TfLiteContext, msg: &str) {
    // SAFETY: per the function contract.
    match unsafe { subgraph_from_context(context) } {
        Some(sg) => sg.report(msg),
        None => eprintln!("ERROR: {msg}"),
    }
}

/// cbindgen:ignore
/// Delivers a formatted message to the subgraph's reporter (stderr without one).
/// Internal: called by src/c_api/variadic.c. Its name is outside the `TfLite*` pattern the
/// version script exports, so the shared library keeps it local.
///
/// # Safety
/// `context` is NULL or a live runtime context; `message` is NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tflite_rs_report_message(context: *mut TfLiteContext, message: *const c_char) {
    guard(context, "ReportError", (), || {
        if message.is_null() {
            return;
        }
        // SAFETY: `message` is NUL-terminated (formatted by variadic.c).
        let msg = unsafe { CStr::from_ptr(message) }.to_string_lossy();
        // SAFETY: per the function contract.
        unsafe { report(context, &msg) }
    })
}

/// Installs the functions only a delegate's `Prepare` may call (TFLite's
/// `SwitchToDelegateContext`).
pub(crate) fn install_delegate_functions(ctx: &mut TfLiteContext) {
    ctx.GetExecutionPlan = Some(get_execution_plan);
    ctx.GetNodeAndRegistration = Some(get_node_and_registration);
    ctx.ReplaceNodeSubsetsWithDelegateKernels = Some(replace_node_subsets);
    ctx.PreviewDelegatePartitioning = Some(preview_partitioning);
    ctx.AcquireSubgraphContext = Some(acquire_subgraph_context);
    ctx.ReleaseSubgraphContext = Some(release_subgraph_context);
}

/// Puts the "forbidden" stubs back (TFLite's `SwitchToKernelContext`).
pub(crate) fn install_forbidden_functions(ctx: &mut TfLiteContext) {
    ctx.GetExecutionPlan = Some(forbidden_get_execution_plan);
    ctx.GetNodeAndRegistration = Some(forbidden_get_node_and_registration);
    ctx.ReplaceNodeSubsetsWithDelegateKernels = Some(forbidden_replace_node_subsets);
    ctx.PreviewDelegatePartitioning = Some(forbidden_preview_partitioning);
    ctx.AcquireSubgraphContext = Some(forbidden_acquire_subgraph_context);
    ctx.ReleaseSubgraphContext = Some(forbidden_release_subgraph_context);
}

/// Reports `e` through the subgraph and returns its status.
fn fail(sg: &Subgraph, e: crate::error::Error) -> TfLiteStatus {
    sg.report(&e.message);
    e.status
}

/// `GetExecutionPlan` during a delegate's Prepare: a copy owned by the subgraph.
unsafe extern "C" fn get_execution_plan(
    context: *mut TfLiteContext,
    execution_plan: *mut *mut TfLiteIntArray,
) -> TfLiteStatus {
    guard(context, "GetExecutionPlan", TfLiteStatus::kTfLiteError, || {
        // SAFETY: C passes a context it got from us.
        let Some(sg) = (unsafe { subgraph_from_context(context) }) else { return TfLiteStatus::kTfLiteError };
        if execution_plan.is_null() {
            sg.report("GetExecutionPlan: execution_plan is NULL");
            return TfLiteStatus::kTfLiteError;
        }
        let a = sg.execution_plan_array();
        if a.is_null() {
            sg.report("GetExecutionPlan: out of memory");
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: non-NULL out-pointer from the caller.
        unsafe { *execution_plan = a };
        TfLiteStatus::kTfLiteOk
    })
}

/// `GetNodeAndRegistration` during a delegate's Prepare (any node of the table).
unsafe extern "C" fn get_node_and_registration(
    context: *mut TfLiteContext,
    node_index: c_int,
    node: *mut *mut TfLiteNode,
    registration: *mut *mut TfLiteRegistration,
) -> TfLiteStatus {
    guard(context, "GetNodeAndRegistration", TfLiteStatus::kTfLiteError, || {
        // SAFETY: C passes a context it got from us.
        let Some(sg) = (unsafe { subgraph_from_context(context) }) else { return TfLiteStatus::kTfLiteError };
        if node.is_null() || registration.is_null() {
            sg.report("GetNodeAndRegistration: node != nullptr && registration != nullptr was not true.");
            return TfLiteStatus::kTfLiteError;
        }
        let Some((n, r)) = sg.node_and_registration(node_index) else {
            sg.report(&format!("GetNodeAndRegistration: node index {node_index} is out of range"));
            return TfLiteStatus::kTfLiteError;
        };
        // SAFETY: non-NULL out-pointers from the caller; the node is boxed and lives as
        // long as it stays in the table.
        unsafe {
            *node = n;
            *registration = r;
        }
        TfLiteStatus::kTfLiteOk
    })
}

/// `ReplaceNodeSubsetsWithDelegateKernels` during a delegate's Prepare.
unsafe extern "C" fn replace_node_subsets(
    context: *mut TfLiteContext,
    registration: TfLiteRegistration,
    nodes_to_replace: *const TfLiteIntArray,
    delegate: *mut TfLiteDelegate,
) -> TfLiteStatus {
    guard(context, "ReplaceNodeSubsetsWithDelegateKernels", TfLiteStatus::kTfLiteError, || {
        // SAFETY: C passes a context it got from us.
        let Some(sg) = (unsafe { subgraph_from_context(context) }) else { return TfLiteStatus::kTfLiteError };
        let sg: *mut Subgraph = sg;
        // SAFETY: `sg` is live; the kernel inits this calls reach it only through the
        // context, and no other reference to it is held here.
        match unsafe { (*sg).replace_node_subsets(registration, nodes_to_replace, delegate) } {
            Ok(()) => TfLiteStatus::kTfLiteOk,
            // SAFETY: as above.
            Err(e) => fail(unsafe { &*sg }, e),
        }
    })
}

/// `PreviewDelegatePartitioning` during a delegate's Prepare.
unsafe extern "C" fn preview_partitioning(
    context: *mut TfLiteContext,
    nodes_to_replace: *const TfLiteIntArray,
    partition_params_array: *mut *mut TfLiteDelegateParams,
    num_partitions: *mut c_int,
) -> TfLiteStatus {
    guard(context, "PreviewDelegatePartitioning", TfLiteStatus::kTfLiteError, || {
        // SAFETY: C passes a context it got from us.
        let Some(sg) = (unsafe { subgraph_from_context(context) }) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: the arguments are the caller's, under the function's contract.
        match unsafe { sg.preview_partitioning(nodes_to_replace, partition_params_array, num_partitions) } {
            Ok(()) => TfLiteStatus::kTfLiteOk,
            Err(e) => fail(sg, e),
        }
    })
}

/// `AcquireSubgraphContext`: switches subgraph `subgraph_index` to its delegate context.
unsafe extern "C" fn acquire_subgraph_context(
    context: *mut TfLiteContext,
    subgraph_index: c_int,
    acquired_context: *mut *mut TfLiteContext,
) -> TfLiteStatus {
    guard(context, "AcquireSubgraphContext", TfLiteStatus::kTfLiteError, || {
        // SAFETY: C passes a context it got from us.
        let Some(sg) = (unsafe { subgraph_from_context(context) }) else { return TfLiteStatus::kTfLiteError };
        if acquired_context.is_null() {
            sg.report("AcquireSubgraphContext: acquired_context is NULL");
            return TfLiteStatus::kTfLiteError;
        }
        let me: *mut Subgraph = sg;
        // SAFETY: `me` is live and no reference to it is used across the call.
        match unsafe { Subgraph::acquire_sibling_context(me, subgraph_index, true) } {
            Some(c) => {
                // SAFETY: non-NULL out-pointer from the caller.
                unsafe { *acquired_context = c };
                TfLiteStatus::kTfLiteOk
            }
            None => {
                // SAFETY: as above.
                unsafe {
                    (*me).report(&format!("AcquireSubgraphContext: subgraph index {subgraph_index} is out of range"))
                };
                TfLiteStatus::kTfLiteError
            }
        }
    })
}

/// `ReleaseSubgraphContext`: undoes `AcquireSubgraphContext`.
unsafe extern "C" fn release_subgraph_context(context: *mut TfLiteContext, subgraph_index: c_int) -> TfLiteStatus {
    guard(context, "ReleaseSubgraphContext", TfLiteStatus::kTfLiteError, || {
        // SAFETY: C passes a context it got from us.
        let Some(sg) = (unsafe { subgraph_from_context(context) }) else { return TfLiteStatus::kTfLiteError };
        let me: *mut Subgraph = sg;
        // SAFETY: as in `acquire_subgraph_context`.
        match unsafe { Subgraph::acquire_sibling_context(me, subgraph_index, false) } {
            Some(_) => TfLiteStatus::kTfLiteOk,
            None => {
                // SAFETY: as above.
                unsafe {
                    (*me).report(&format!(
                        "ReleaseSubgraphContext: subgraph index {subgraph_index} is out of range or not acquired"
                    ))
                };
                TfLiteStatus::kTfLiteError
            }
        }
    })
}

const FORBIDDEN: &str = "The function is forbidden if not calling in delegate.";

fn report_forbidden(context: *mut TfLiteContext) -> TfLiteStatus {
    // SAFETY: the context was passed to us by C code that got it from the runtime.
    if let Some(sg) = unsafe { subgraph_from_context(context) } {
        sg.report(FORBIDDEN);
    }
    TfLiteStatus::kTfLiteError
}

unsafe extern "C" fn forbidden_get_execution_plan(
    context: *mut TfLiteContext,
    _p: *mut *mut TfLiteIntArray,
) -> TfLiteStatus {
    guard(context, "GetExecutionPlan", TfLiteStatus::kTfLiteError, || report_forbidden(context))
}

unsafe extern "C" fn forbidden_get_node_and_registration(
    context: *mut TfLiteContext,
    _i: c_int,
    _n: *mut *mut TfLiteNode,
    _r: *mut *mut TfLiteRegistration,
) -> TfLiteStatus {
    guard(context, "GetNodeAndRegistration", TfLiteStatus::kTfLiteError, || report_forbidden(context))
}

unsafe extern "C" fn forbidden_replace_node_subsets(
    context: *mut TfLiteContext,
    _reg: TfLiteRegistration,
    _nodes: *const TfLiteIntArray,
    _d: *mut TfLiteDelegate,
) -> TfLiteStatus {
    guard(context, "ReplaceNodeSubsetsWithDelegateKernels", TfLiteStatus::kTfLiteError, || report_forbidden(context))
}

unsafe extern "C" fn forbidden_preview_partitioning(
    context: *mut TfLiteContext,
    _nodes: *const TfLiteIntArray,
    _p: *mut *mut TfLiteDelegateParams,
    _n: *mut c_int,
) -> TfLiteStatus {
    guard(context, "PreviewDelegatePartitioning", TfLiteStatus::kTfLiteError, || report_forbidden(context))
}

unsafe extern "C" fn forbidden_acquire_subgraph_context(
    context: *mut TfLiteContext,
    _i: c_int,
    _c: *mut *mut TfLiteContext,
) -> TfLiteStatus {
    guard(context, "AcquireSubgraphContext", TfLiteStatus::kTfLiteError, || report_forbidden(context))
}

unsafe extern "C" fn forbidden_release_subgraph_context(context: *mut TfLiteContext, _i: c_int) -> TfLiteStatus {
    guard(context, "ReleaseSubgraphContext", TfLiteStatus::kTfLiteError, || report_forbidden(context))
}

/// `ResizeTensor`: takes ownership of `new_size` in every case, as TFLite documents. On
/// success `new_size` becomes the tensor's `dims` (as in TFLite, so a caller may still
/// read it afterwards).
pub(super) unsafe extern "C" fn resize_tensor(
    context: *mut TfLiteContext,
    tensor: *mut TfLiteTensor,
    new_size: *mut TfLiteIntArray,
) -> TfLiteStatus {
    guard(context, "ResizeTensor", TfLiteStatus::kTfLiteError, || {
        // SAFETY: C passes a context it got from us.
        let Some(sg) = (unsafe { subgraph_from_context(context) }) else {
            // SAFETY: we own `new_size` from here on.
            unsafe { int_array_free(new_size) };
            return TfLiteStatus::kTfLiteError;
        };
        if new_size.is_null() {
            sg.report("ResizeTensor: new_size is NULL");
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: `new_size` is a malloc'ed int array handed to us (TFLite's contract).
        let Some(arr) = (unsafe { OwnedIntArray::from_raw(new_size) }) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: a live array we now own.
        if unsafe { (*arr.as_ptr()).size } < 0 {
            sg.report("ResizeTensor: new_size has a negative size");
            return TfLiteStatus::kTfLiteError;
        }
        let Some(index) = sg.tensor_index_of(tensor) else {
            sg.report("ResizeTensor: tensor does not belong to this context");
            return TfLiteStatus::kTfLiteError;
        };
        match sg.resize_tensor(index, arr) {
            Ok(()) => TfLiteStatus::kTfLiteOk,
            Err(e) => {
                sg.report(&e.message);
                e.status
            }
        }
    })
}

unsafe extern "C" fn add_tensors(context: *mut TfLiteContext, n: c_int, first: *mut c_int) -> TfLiteStatus {
    guard(context, "AddTensors", TfLiteStatus::kTfLiteError, || {
        // SAFETY: C passes a context it got from us.
        let Some(sg) = (unsafe { subgraph_from_context(context) }) else { return TfLiteStatus::kTfLiteError };
        let Ok(n) = usize::try_from(n) else {
            sg.report("AddTensors: negative count");
            return TfLiteStatus::kTfLiteError;
        };
        match sg.add_tensors(n) {
            Ok(idx) => {
                if !first.is_null() {
                    // SAFETY: non-NULL out-pointer supplied by the caller.
                    unsafe { *first = idx as c_int };
                }
                TfLiteStatus::kTfLiteOk
            }
            Err(e) => {
                sg.report(&e.message);
                TfLiteStatus::kTfLiteError
            }
        }
    })
}

unsafe extern "C" fn get_external_context(
    context: *mut TfLiteContext,
    ty: RawTfLiteExternalContextType,
) -> *mut TfLiteExternalContext {
    guard(context, "GetExternalContext", core::ptr::null_mut(), || {
        // SAFETY: C passes a context it got from us.
        let Some(sg) = (unsafe { subgraph_from_context(context) }) else { return core::ptr::null_mut() };
        // An unknown type has no context (NULL), as in TFLite.
        let Some(ty) = TfLiteExternalContextType::from_raw(ty) else { return core::ptr::null_mut() };
        sg.external_contexts.get(ty as usize).copied().unwrap_or(core::ptr::null_mut())
    })
}

unsafe extern "C" fn set_external_context(
    context: *mut TfLiteContext,
    ty: RawTfLiteExternalContextType,
    ctx: *mut TfLiteExternalContext,
) {
    guard(context, "SetExternalContext", (), || {
        // SAFETY: C passes a context it got from us.
        let Some(sg) = (unsafe { subgraph_from_context(context) }) else { return };
        // An unknown type is ignored, as in TFLite.
        let Some(ty) = TfLiteExternalContextType::from_raw(ty) else { return };
        if let Some(slot) = sg.external_contexts.get_mut(ty as usize) {
            *slot = ctx;
        }
    })
}

unsafe extern "C" fn get_model_metadata(
    context: *const TfLiteContext,
    name: *const c_char,
    ptr: *mut *const c_char,
    bytes: *mut usize,
) -> TfLiteStatus {
    guard(context, "GetModelMetadata", TfLiteStatus::kTfLiteError, || {
        // SAFETY: C passes a context it got from us.
        let Some(sg) = (unsafe { subgraph_from_context(context) }) else { return TfLiteStatus::kTfLiteError };
        if name.is_null() || ptr.is_null() || bytes.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: NUL-terminated name from the caller.
        let Ok(name) = (unsafe { CStr::from_ptr(name) }).to_str() else { return TfLiteStatus::kTfLiteError };
        match sg.model().metadata(name) {
            Some(data) => {
                // SAFETY: out-pointers checked non-NULL; the data lives as long as the model,
                // which the interpreter keeps alive.
                unsafe {
                    *ptr = data.as_ptr() as *const c_char;
                    *bytes = data.len();
                }
                TfLiteStatus::kTfLiteOk
            }
            None => TfLiteStatus::kTfLiteError,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::panic::test_hook::panic_next_at;
    use crate::interpreter::{Interpreter, InterpreterConfig};
    use crate::model::Model;
    use crate::resolver::builtin::builtin_op_resolver;
    use std::sync::Arc;

    #[test]
    fn a_panic_in_a_context_callback_reaches_the_subgraphs_reporter() {
        let bytes = crate::model::writer::relu_model(8);
        let got = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
        let sink = got.clone();
        let config = InterpreterConfig {
            reporter: Arc::new(move |m: &str| sink.lock().push(m.to_string())),
            ..InterpreterConfig::default()
        };
        let model = Arc::new(Model::from_vec(bytes).expect("model"));
        let mut interp = Interpreter::new(model, &builtin_op_resolver(), config).expect("interpreter");
        let ctx = interp.primary_mut().context_ptr();
        panic_next_at("AddTensors");
        let mut first = -1;
        // SAFETY: the interpreter's own live context and a local out-pointer.
        let status = unsafe { (*ctx).AddTensors.expect("AddTensors")(ctx, 1, &mut first) };
        assert_eq!(status, TfLiteStatus::kTfLiteError);
        assert_eq!(first, -1);
        assert_eq!(*got.lock(), ["internal error: AddTensors panicked: injected panic"]);
    }
}
