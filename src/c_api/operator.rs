//! `TfLiteOperator*` (operator.h): operators defined from C.
//!
//! The struct itself is `crate::abi::operator::TfLiteOperator`; node_ops.rs calls its
//! callbacks (the `*WithData` variants first, with the operator's `user_data`).

use super::ffi::{cstr_raw, into_raw};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::*;
use crate::ffi::{try_mut, try_ref};
use core::ffi::{c_char, c_int, c_void};
use parking_lot::Mutex;

/// The registration the interpreter uses for `op`: builtin code, custom name and version
/// from the operator, and `registration_external` pointing at it (TFLite's
/// `InitTfLiteRegistration`).
///
/// `op` must be NULL or a live operator.
pub(crate) fn registration_for_operator(op: *mut TfLiteOperator) -> TfLiteRegistration {
    // SAFETY: per the function contract (callers pass operators the application keeps
    // alive for the interpreter's lifetime, as TFLite requires).
    let Some(o) = (unsafe { op.as_ref() }) else { return TfLiteRegistration::empty() };
    TfLiteRegistration {
        builtin_code: o.builtin_code,
        custom_name: o.custom_name.as_ref().map_or(core::ptr::null(), |c| c.as_ptr()),
        version: o.version,
        registration_external: op,
        inplace_operator: o.inplace_operator,
        ..TfLiteRegistration::empty()
    }
}

/// Operators made on the fly for registrations that did not come from a
/// `TfLiteOperator` (`TfLiteOpaqueContextGetNodeAndRegistration` on builtin kernels).
/// Each is a pure function of the registration's contents, so one is shared by every
/// interpreter whose nodes use that registration; they live for the process (there are
/// as many as distinct kernels).
#[allow(clippy::vec_box, reason = "handed-out pointers must survive the Vec growing")]
struct DerivedOperators(Vec<Box<TfLiteOperator>>);

// SAFETY: the operators hold only function pointers, names and NULL user data, and are
// never mutated after creation.
unsafe impl Send for DerivedOperators {}

static DERIVED: Mutex<DerivedOperators> = Mutex::new(DerivedOperators(Vec::new()));

fn same_fn<T: Copy>(a: Option<T>, b: Option<T>, addr: impl Fn(T) -> usize) -> bool {
    a.map(&addr) == b.map(&addr)
}

/// The operator that describes `reg` (builtin code, custom name, version and its
/// callbacks). The pointer stays valid for the rest of the process.
pub(crate) fn operator_for_registration(reg: &TfLiteRegistration) -> *mut TfLiteOperator {
    // SAFETY: `custom_name` of a runtime registration is NULL or a NUL-terminated name
    // owned by the node, alive during this call.
    let name = unsafe { cstr_raw(reg.custom_name) }.map(|c| c.to_owned());
    // The registration's callbacks take `TfLiteContext*`/`TfLiteNode*`; an operator's take
    // the opaque types, which are the same pointers (ABI.md §1). Fn pointers whose
    // argument types differ only in pointee are ABI-compatible.
    // SAFETY: see above; the signatures otherwise match exactly.
    let init = reg.init.map(|f| unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut TfLiteContext, *const c_char, usize) -> *mut c_void,
            crate::abi::operator::OpInitFn,
        >(f)
    });
    // SAFETY: as above.
    let free = reg.free.map(|f| unsafe {
        core::mem::transmute::<unsafe extern "C" fn(*mut TfLiteContext, *mut c_void), crate::abi::operator::OpFreeFn>(f)
    });
    // SAFETY: as above.
    let prepare = reg.prepare.map(|f| unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut TfLiteContext, *mut TfLiteNode) -> TfLiteStatus,
            crate::abi::operator::OpStepFn,
        >(f)
    });
    // SAFETY: as above.
    let invoke = reg.invoke.map(|f| unsafe {
        core::mem::transmute::<
            unsafe extern "C" fn(*mut TfLiteContext, *mut TfLiteNode) -> TfLiteStatus,
            crate::abi::operator::OpStepFn,
        >(f)
    });
    let mut derived = DERIVED.lock();
    let found = derived.0.iter_mut().find(|o| {
        o.builtin_code == reg.builtin_code
            && o.version == reg.version
            && o.custom_name == name
            && o.inplace_operator == reg.inplace_operator
            && same_fn(o.init, init, |f| f as usize)
            && same_fn(o.free, free, |f| f as usize)
            && same_fn(o.prepare, prepare, |f| f as usize)
            && same_fn(o.invoke, invoke, |f| f as usize)
    });
    if let Some(o) = found {
        return &mut **o;
    }
    let mut op = Box::new(TfLiteOperator::new(reg.builtin_code, name, reg.version, core::ptr::null_mut()));
    op.init = init;
    op.free = free;
    op.prepare = prepare;
    op.invoke = invoke;
    op.inplace_operator = reg.inplace_operator;
    let p: *mut TfLiteOperator = &mut *op;
    derived.0.push(op);
    p
}

/// Returns a new operator for `builtin_code` (`kTfLiteBuiltinCustom` for custom ops, with
/// `custom_name`), `version` and `user_data` (passed to the `*WithData` callbacks), or
/// NULL on failure (an unknown `builtin_code` included). `custom_name` (may be NULL) is copied. The caller owns the result and
/// must call `TfLiteOperatorDelete`; an operator given to
/// `TfLiteInterpreterOptionsAddOperator` must outlive the interpreters created with it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorCreate(
    builtin_code: RawTfLiteBuiltinOperator,
    custom_name: *const c_char,
    version: c_int,
    user_data: *mut c_void,
) -> *mut TfLiteOperator {
    ffi_boundary!({
        if TfLiteBuiltinOperator::from_raw(builtin_code).is_none() {
            super::ffi::report(None, &format!("TfLiteOperatorCreate: unknown builtin operator code {builtin_code}"));
            return core::ptr::null_mut();
        }
        // SAFETY: NULL or a NUL-terminated string, per the API contract.
        let name = unsafe { cstr_raw(custom_name) }.map(|c| c.to_owned());
        into_raw(TfLiteOperator::new(builtin_code, name, version, user_data))
    })
}

/// Destroys an operator made by `TfLiteOperatorCreate`. Safe to pass NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorDelete(registration: *mut TfLiteOperator) {
    ffi_delete!(registration)
}

/// Returns the operator's builtin code (`kTfLiteBuiltinCustom` for a NULL operator).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorGetBuiltInCode(registration: *const TfLiteOperator) -> TfLiteBuiltinOperator {
    ffi_boundary!({
        let o = try_ref!(registration);
        TfLiteBuiltinOperator::from_raw(o.builtin_code).unwrap_or(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
    })
}

/// Returns the operator's custom name, or NULL for builtin operators (and a NULL
/// operator). The string is owned by the operator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorGetCustomName(registration: *const TfLiteOperator) -> *const c_char {
    ffi_boundary!({
        let o = try_ref!(registration);
        o.custom_name.as_ref().map_or(core::ptr::null(), |c| c.as_ptr())
    })
}

/// Returns the operator's version, or -1 for a NULL operator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorGetVersion(registration: *const TfLiteOperator) -> c_int {
    ffi_boundary!(default = -1, { try_ref!(registration, else -1).version })
}

/// Returns the `user_data` given to `TfLiteOperatorCreate` (NULL for a NULL operator).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorGetUserData(registration: *const TfLiteOperator) -> *mut c_void {
    ffi_boundary!({ try_ref!(registration).user_data })
}

/// Sets the operator's `init`, called once per node with the builtin params (length 0)
/// or the custom options; its result is the node's `user_data`. Ignored for NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorSetInit(
    registration: *mut TfLiteOperator,
    init: Option<
        unsafe extern "C" fn(context: *mut TfLiteOpaqueContext, buffer: *const c_char, length: usize) -> *mut c_void,
    >,
) {
    ffi_boundary!({
        try_mut!(registration).init = init;
    })
}

/// As `TfLiteOperatorSetInit`, with the operator's `user_data` as first argument; takes
/// precedence over `init`. Returns kTfLiteError for a NULL operator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorSetInitWithData(
    registration: *mut TfLiteOperator,
    init: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            context: *mut TfLiteOpaqueContext,
            buffer: *const c_char,
            length: usize,
        ) -> *mut c_void,
    >,
) -> TfLiteStatus {
    ffi_boundary!({
        try_mut!(registration).init_with_data = init;
        TfLiteStatus::kTfLiteOk
    })
}

/// Sets the operator's `free`, called with what `init` returned. Ignored for NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorSetFree(
    registration: *mut TfLiteOperator,
    free: Option<unsafe extern "C" fn(context: *mut TfLiteOpaqueContext, data: *mut c_void)>,
) {
    ffi_boundary!({
        try_mut!(registration).free = free;
    })
}

/// As `TfLiteOperatorSetFree`, with the operator's `user_data` as first argument; takes
/// precedence over `free`. Returns kTfLiteError for a NULL operator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorSetFreeWithData(
    registration: *mut TfLiteOperator,
    free: Option<unsafe extern "C" fn(user_data: *mut c_void, context: *mut TfLiteOpaqueContext, data: *mut c_void)>,
) -> TfLiteStatus {
    ffi_boundary!({
        try_mut!(registration).free_with_data = free;
        TfLiteStatus::kTfLiteOk
    })
}

/// Sets the operator's `prepare` (check inputs, resize outputs). Ignored for NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorSetPrepare(
    registration: *mut TfLiteOperator,
    prepare: Option<
        unsafe extern "C" fn(context: *mut TfLiteOpaqueContext, node: *mut TfLiteOpaqueNode) -> TfLiteStatus,
    >,
) {
    ffi_boundary!({
        try_mut!(registration).prepare = prepare;
    })
}

/// As `TfLiteOperatorSetPrepare`, with the operator's `user_data` as first argument;
/// takes precedence over `prepare`. Returns kTfLiteError for a NULL operator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorSetPrepareWithData(
    registration: *mut TfLiteOperator,
    prepare: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            context: *mut TfLiteOpaqueContext,
            node: *mut TfLiteOpaqueNode,
        ) -> TfLiteStatus,
    >,
) -> TfLiteStatus {
    ffi_boundary!({
        try_mut!(registration).prepare_with_data = prepare;
        TfLiteStatus::kTfLiteOk
    })
}

/// Sets the operator's `invoke` (compute the outputs). Ignored for NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorSetInvoke(
    registration: *mut TfLiteOperator,
    invoke: Option<
        unsafe extern "C" fn(context: *mut TfLiteOpaqueContext, node: *mut TfLiteOpaqueNode) -> TfLiteStatus,
    >,
) {
    ffi_boundary!({
        try_mut!(registration).invoke = invoke;
    })
}

/// As `TfLiteOperatorSetInvoke`, with the operator's `user_data` as first argument;
/// takes precedence over `invoke`. Returns kTfLiteError for a NULL operator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorSetInvokeWithData(
    registration: *mut TfLiteOperator,
    invoke: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            context: *mut TfLiteOpaqueContext,
            node: *mut TfLiteOpaqueNode,
        ) -> TfLiteStatus,
    >,
) -> TfLiteStatus {
    ffi_boundary!({
        try_mut!(registration).invoke_with_data = invoke;
        TfLiteStatus::kTfLiteOk
    })
}

/// Sets the operator's `async_kernel` (stored; this runtime has no async execution).
/// Ignored for NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorSetAsyncKernel(
    registration: *mut TfLiteOperator,
    async_kernel: Option<
        unsafe extern "C" fn(context: *mut TfLiteOpaqueContext, node: *mut TfLiteOpaqueNode) -> *mut TfLiteAsyncKernel,
    >,
) {
    ffi_boundary!({
        try_mut!(registration).async_kernel = async_kernel;
    })
}

/// As `TfLiteOperatorSetAsyncKernel`, with the operator's `user_data` as first argument.
/// Returns kTfLiteError for a NULL operator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorSetAsyncKernelWithData(
    registration: *mut TfLiteOperator,
    async_kernel: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            context: *mut TfLiteOpaqueContext,
            node: *mut TfLiteOpaqueNode,
        ) -> *mut TfLiteAsyncKernel,
    >,
) -> TfLiteStatus {
    ffi_boundary!({
        try_mut!(registration).async_kernel_with_data = async_kernel;
        TfLiteStatus::kTfLiteOk
    })
}

/// Sets the operator's in-place bitmask (`TfLiteInPlaceOp` values). Ignored for NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOperatorSetInplaceOperator(registration: *mut TfLiteOperator, inplace_operator: u64) {
    ffi_boundary!({
        try_mut!(registration).inplace_operator = inplace_operator;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_query_delete() {
        // SAFETY: pointers from these functions, deleted once; NULL is part of the contract.
        unsafe {
            let mut ud = 5_i32;
            // Codes C might pass that name no operator: no operator, no undefined behaviour.
            for bad in [-1, 100_000] {
                assert!(TfLiteOperatorCreate(bad, c"Sinh".as_ptr(), 1, core::ptr::null_mut()).is_null());
            }
            let op = TfLiteOperatorCreate(
                TfLiteBuiltinOperator::kTfLiteBuiltinCustom as RawTfLiteBuiltinOperator,
                c"Sinh".as_ptr(),
                2,
                (&raw mut ud).cast(),
            );
            assert!(!op.is_null());
            assert_eq!(TfLiteOperatorGetBuiltInCode(op), TfLiteBuiltinOperator::kTfLiteBuiltinCustom);
            assert_eq!(core::ffi::CStr::from_ptr(TfLiteOperatorGetCustomName(op)), c"Sinh");
            assert_eq!(TfLiteOperatorGetVersion(op), 2);
            assert_eq!(TfLiteOperatorGetUserData(op), (&raw mut ud).cast());
            assert_eq!(TfLiteOperatorSetPrepareWithData(op, None), TfLiteStatus::kTfLiteOk);
            assert_eq!(TfLiteOperatorSetPrepareWithData(core::ptr::null_mut(), None), TfLiteStatus::kTfLiteError);
            let reg = registration_for_operator(op);
            assert_eq!(reg.registration_external, op);
            assert_eq!(reg.version, 2);
            TfLiteOperatorDelete(op);
            TfLiteOperatorDelete(core::ptr::null_mut());
            assert_eq!(TfLiteOperatorGetVersion(core::ptr::null()), -1);
            assert!(TfLiteOperatorGetCustomName(core::ptr::null()).is_null());
        }
    }

    #[test]
    fn derived_operators_are_shared() {
        let reg = TfLiteRegistration { builtin_code: 0, version: 1, ..TfLiteRegistration::empty() };
        let a = operator_for_registration(&reg);
        let b = operator_for_registration(&reg);
        assert_eq!(a, b);
        let c = operator_for_registration(&TfLiteRegistration { version: 2, ..reg });
        assert_ne!(a, c);
        // SAFETY: derived operators live for the process.
        unsafe {
            assert_eq!(TfLiteOperatorGetBuiltInCode(a), TfLiteBuiltinOperator::kTfLiteBuiltinAdd);
            assert_eq!(TfLiteOperatorGetVersion(c), 2);
            assert!(TfLiteOperatorGetCustomName(a).is_null());
        }
    }
}
