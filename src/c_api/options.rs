//! `TfLiteInterpreterOptions*` (c_api.h, c_api_experimental.h): settings read once by
//! `TfLiteInterpreterCreate`.

use super::callback_resolver::*;
use super::error_reporter::CReporter;
use super::ffi::{ReportsErrors, cstr, into_raw, report};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::*;
use crate::ffi::{ref_from_ptr, try_mut, try_ref};
use crate::resolver::OpResolver;
use core::ffi::{c_char, c_void};
use std::ffi::CString;
use std::sync::Arc;

/// Interpreter settings. Opaque to C.
#[derive(Clone)]
pub struct TfLiteInterpreterOptions {
    /// -1: let the runtime decide (TFLite's default).
    pub(crate) num_threads: i32,
    /// Delegates to apply, in order (owned by the application).
    pub(crate) delegates: Vec<*mut TfLiteDelegate>,
    pub(crate) reporter: Option<CReporter>,
    /// Ops added with `AddBuiltinOp` / `AddCustomOp` (registrations copied).
    pub(crate) op_resolver: OpResolver,
    /// Names of ops added with `AddCustomOp`; registrations point into them, so they are
    /// shared with (and outlive) every interpreter created from these options.
    pub(crate) custom_names: Vec<Arc<CString>>,
    /// Operators added with `AddOperator` (owned by the application; must outlive the
    /// interpreters).
    pub(crate) operators: Vec<*mut TfLiteOperator>,
    pub(crate) callbacks: OpResolverCallbacks,
    pub(crate) use_nnapi: bool,
    pub(crate) enable_delegate_fallback: bool,
    pub(crate) enable_cancellation: bool,
}

// SAFETY: pointers to `TfLiteInterpreterOptions` point to one.
unsafe impl crate::ffi::Handle for TfLiteInterpreterOptions {
    type Target = Self;
}

impl Default for TfLiteInterpreterOptions {
    fn default() -> Self {
        TfLiteInterpreterOptions {
            num_threads: -1,
            delegates: Vec::new(),
            reporter: None,
            op_resolver: OpResolver::new(),
            custom_names: Vec::new(),
            operators: Vec::new(),
            callbacks: OpResolverCallbacks::default(),
            use_nnapi: false,
            enable_delegate_fallback: false,
            enable_cancellation: false,
        }
    }
}

impl ReportsErrors for TfLiteInterpreterOptions {
    unsafe fn report_error(p: *const Self, msg: &str) {
        // SAFETY: per the function contract, NULL or live options.
        match unsafe { ref_from_ptr(p) } {
            Some(o) => o.report(msg),
            None => report(None, msg),
        }
    }
}

impl TfLiteInterpreterOptions {
    fn report(&self, msg: &str) {
        let r = self.reporter.map(CReporter::to_reporter);
        report(r.as_ref(), msg);
    }

    /// The resolver of every op added to these options: `AddBuiltinOp`/`AddCustomOp`
    /// entries, overridden by `AddOperator` operators (TFLite's order).
    pub(crate) fn added_ops(&self) -> OpResolver {
        let mut r = self.op_resolver.clone();
        for &op in &self.operators {
            // SAFETY: operators added with `AddOperator` are live `TfLiteOperator`s the
            // application keeps alive (TFLite's contract).
            let Some(o) = (unsafe { op.as_ref() }) else { continue };
            let reg = super::operator::registration_for_operator(op);
            if o.builtin_code == TfLiteBuiltinOperator::kTfLiteBuiltinCustom as i32 {
                match o.custom_name.as_ref().and_then(|c| c.to_str().ok()) {
                    Some(name) => r.add_custom(name, reg, o.version, o.version),
                    None => {
                        self.report("TfLiteInterpreterOptionsAddOperator: custom operator without a valid name ignored")
                    }
                }
            } else {
                r.add_builtin(o.builtin_code, reg, o.version, o.version);
            }
        }
        r
    }
}

/// Returns a new options object with default settings, or NULL on failure. The caller
/// owns the result and must call `TfLiteInterpreterOptionsDelete`.
#[unsafe(no_mangle)]
pub extern "C" fn TfLiteInterpreterOptionsCreate() -> *mut TfLiteInterpreterOptions {
    ffi_boundary!({ into_raw(TfLiteInterpreterOptions::default()) })
}

/// Returns a copy of `from` (NULL if `from` is NULL). Delegates, operators and callbacks
/// are shared by pointer, as in TFLite. The caller owns the result and must call
/// `TfLiteInterpreterOptionsDelete`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsCopy(
    from: *const TfLiteInterpreterOptions,
) -> *mut TfLiteInterpreterOptions {
    ffi_boundary!({ into_raw(try_ref!(from).clone()) })
}

/// Destroys the options. Safe to pass NULL. Interpreters already created keep working.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsDelete(options: *mut TfLiteInterpreterOptions) {
    ffi_delete!(options)
}

/// Sets the number of threads kernels may use (-1: let the runtime decide). Ignored for
/// NULL options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsSetNumThreads(
    options: *mut TfLiteInterpreterOptions,
    num_threads: i32,
) {
    ffi_boundary!({
        try_mut!(options).num_threads = num_threads;
    })
}

/// Adds a delegate to apply when creating interpreters. The caller retains ownership of
/// `delegate`; it must outlive every interpreter created with these options. NULL is
/// ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsAddDelegate(
    options: *mut TfLiteInterpreterOptions,
    delegate: *mut TfLiteOpaqueDelegate,
) {
    ffi_boundary!({
        if delegate.is_null() {
            return;
        }
        try_mut!(options).delegates.push(delegate);
    })
}

/// Sets the error reporter of interpreters created with these options (NULL `reporter`:
/// stderr). `reporter(user_data, format, args)` may be called from any thread that uses
/// such an interpreter; `user_data` must outlive the interpreters.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsSetErrorReporter(
    options: *mut TfLiteInterpreterOptions,
    reporter: Option<unsafe extern "C" fn(user_data: *mut c_void, format: *const c_char, args: va_list)>,
    user_data: *mut c_void,
) {
    ffi_boundary!({
        let r = reporter.map(|func| CReporter { func, user_data });
        try_mut!(options).reporter = r;
    })
}

/// Adds an operator (made with `TfLiteOperatorCreate`): a custom op by name
/// (`kTfLiteBuiltinCustom`) or a builtin by code, for exactly its version. The caller
/// retains ownership of `registration`; it must outlive every interpreter created with
/// these options. NULL is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsAddOperator(
    options: *mut TfLiteInterpreterOptions,
    registration: *mut TfLiteOperator,
) {
    ffi_boundary!({
        if registration.is_null() {
            return;
        }
        try_mut!(options).operators.push(registration);
    })
}

/// Enables (or disables) `TfLiteInterpreterCancel` for interpreters created with these
/// options. Returns kTfLiteError for NULL options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsEnableCancellation(
    options: *mut TfLiteInterpreterOptions,
    enable: bool,
) -> TfLiteStatus {
    ffi_boundary!({
        try_mut!(options).enable_cancellation = enable;
        TfLiteStatus::kTfLiteOk
    })
}

/// Registers a builtin op implementation for versions `min_version..=max_version`,
/// overriding the runtime's own kernel. `*registration` is copied; its callbacks must
/// stay valid while interpreters created with these options exist. NULL arguments are
/// ignored, and so is an unknown `op` (with a message on stderr).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsAddBuiltinOp(
    options: *mut TfLiteInterpreterOptions,
    op: RawTfLiteBuiltinOperator,
    registration: *const TfLiteRegistration,
    min_version: i32,
    max_version: i32,
) {
    ffi_boundary!({
        if TfLiteBuiltinOperator::from_raw(op).is_none() {
            let msg = format!("TfLiteInterpreterOptionsAddBuiltinOp: unknown builtin operator code {op}; ignored");
            super::ffi::report(None, &msg);
            return;
        }
        // SAFETY: NULL or a readable registration, per the API contract.
        let Some(reg) = (unsafe { registration.as_ref() }).copied() else { return };
        let mut reg = reg;
        reg.custom_name = core::ptr::null();
        try_mut!(options).op_resolver.add_builtin(op, reg, min_version, max_version);
    })
}

/// Registers a custom op implementation under `name` for versions
/// `min_version..=max_version`. `name` and `*registration` are copied; the callbacks must
/// stay valid while interpreters created with these options exist. NULL arguments are
/// ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsAddCustomOp(
    options: *mut TfLiteInterpreterOptions,
    name: *const c_char,
    registration: *const TfLiteRegistration,
    min_version: i32,
    max_version: i32,
) {
    ffi_boundary!({
        // SAFETY: NULL or a readable registration, per the API contract.
        let Some(mut reg) = (unsafe { registration.as_ref() }).copied() else { return };
        // SAFETY: NULL or NUL-terminated, per the API contract.
        let Some(name) = (unsafe { cstr(name) }) else { return };
        let owned = Arc::new(super::ffi::to_cstring(name));
        reg.builtin_code = TfLiteBuiltinOperator::kTfLiteBuiltinCustom as i32;
        // The CString's buffer does not move when the Arc is cloned or the Vec grows.
        reg.custom_name = owned.as_ptr();
        let o = try_mut!(options);
        o.op_resolver.add_custom(name, reg, min_version, max_version);
        o.custom_names.push(owned);
    })
}

/// Sets an op resolver made of callbacks returning `TfLiteOperator`s (NULL: not found),
/// consulted before the ops added to these options and the builtin kernels. Replaces any
/// resolver callbacks set before. `op_resolver_user_data` is passed back to both
/// callbacks; returned operators must outlive the interpreters.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsSetOpResolverExternal(
    options: *mut TfLiteInterpreterOptions,
    find_builtin_op: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            op: core::ffi::c_int,
            version: core::ffi::c_int,
        ) -> *const TfLiteOperator,
    >,
    find_custom_op: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            custom_op: *const c_char,
            version: core::ffi::c_int,
        ) -> *const TfLiteOperator,
    >,
    op_resolver_user_data: *mut c_void,
) {
    ffi_boundary!({
        let cb = OpResolverCallbacks {
            user_data: op_resolver_user_data,
            find_builtin_op_external: find_builtin_op,
            find_custom_op_external: find_custom_op,
            ..OpResolverCallbacks::default()
        };
        try_mut!(options).callbacks = cb;
    })
}

/// As `TfLiteInterpreterOptionsSetOpResolverExternal`, with `TfLiteRegistration`
/// callbacks consulted when the `TfLiteOperator` ones return NULL. Returned registrations
/// are copied.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsSetOpResolverExternalWithFallback(
    options: *mut TfLiteInterpreterOptions,
    find_builtin_op_external: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            op: core::ffi::c_int,
            version: core::ffi::c_int,
        ) -> *const TfLiteOperator,
    >,
    find_custom_op_external: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            custom_op: *const c_char,
            version: core::ffi::c_int,
        ) -> *const TfLiteOperator,
    >,
    find_builtin_op: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            op: TfLiteBuiltinOperator,
            version: core::ffi::c_int,
        ) -> *const TfLiteRegistration,
    >,
    find_custom_op: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            op: *const c_char,
            version: core::ffi::c_int,
        ) -> *const TfLiteRegistration,
    >,
    op_resolver_user_data: *mut c_void,
) {
    ffi_boundary!({
        let cb = OpResolverCallbacks {
            user_data: op_resolver_user_data,
            find_builtin_op_external,
            find_custom_op_external,
            find_builtin_op,
            find_custom_op,
            ..OpResolverCallbacks::default()
        };
        try_mut!(options).callbacks = cb;
    })
}

/// Sets an op resolver made of callbacks returning `TfLiteRegistration`s (NULL: not
/// found), consulted before the ops added to these options and the builtin kernels.
/// Replaces any resolver callbacks set before. Returned registrations are copied.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsSetOpResolver(
    options: *mut TfLiteInterpreterOptions,
    find_builtin_op: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            op: TfLiteBuiltinOperator,
            version: core::ffi::c_int,
        ) -> *const TfLiteRegistration,
    >,
    find_custom_op: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            op: *const c_char,
            version: core::ffi::c_int,
        ) -> *const TfLiteRegistration,
    >,
    op_resolver_user_data: *mut c_void,
) {
    ffi_boundary!({
        let cb = OpResolverCallbacks {
            user_data: op_resolver_user_data,
            find_builtin_op,
            find_custom_op,
            ..OpResolverCallbacks::default()
        };
        try_mut!(options).callbacks = cb;
    })
}

/// Legacy form of `TfLiteInterpreterOptionsSetOpResolver` for `TfLiteRegistration_V3`
/// (TF 2.13-2.14 layout).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsSetOpResolverV3(
    options: *mut TfLiteInterpreterOptions,
    find_builtin_op_v3: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            op: TfLiteBuiltinOperator,
            version: core::ffi::c_int,
        ) -> *const TfLiteRegistration_V3,
    >,
    find_custom_op_v3: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            op: *const c_char,
            version: core::ffi::c_int,
        ) -> *const TfLiteRegistration_V3,
    >,
    op_resolver_user_data: *mut c_void,
) {
    ffi_boundary!({
        let cb = OpResolverCallbacks {
            user_data: op_resolver_user_data,
            find_builtin_op_v3,
            find_custom_op_v3,
            ..OpResolverCallbacks::default()
        };
        try_mut!(options).callbacks = cb;
    })
}

/// Legacy form of `TfLiteInterpreterOptionsSetOpResolver` for `TfLiteRegistration_V2`
/// (TF 2.11-2.12 layout).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsSetOpResolverV2(
    options: *mut TfLiteInterpreterOptions,
    find_builtin_op_v2: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            op: TfLiteBuiltinOperator,
            version: core::ffi::c_int,
        ) -> *const TfLiteRegistration_V2,
    >,
    find_custom_op_v2: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            op: *const c_char,
            version: core::ffi::c_int,
        ) -> *const TfLiteRegistration_V2,
    >,
    op_resolver_user_data: *mut c_void,
) {
    ffi_boundary!({
        let cb = OpResolverCallbacks {
            user_data: op_resolver_user_data,
            find_builtin_op_v2,
            find_custom_op_v2,
            ..OpResolverCallbacks::default()
        };
        try_mut!(options).callbacks = cb;
    })
}

/// Legacy form of `TfLiteInterpreterOptionsSetOpResolver` for `TfLiteRegistration_V1`
/// (the 8-field layout of TF <= 2.10).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsSetOpResolverV1(
    options: *mut TfLiteInterpreterOptions,
    find_builtin_op_v1: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            op: TfLiteBuiltinOperator,
            version: core::ffi::c_int,
        ) -> *const TfLiteRegistration_V1,
    >,
    find_custom_op_v1: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            op: *const c_char,
            version: core::ffi::c_int,
        ) -> *const TfLiteRegistration_V1,
    >,
    op_resolver_user_data: *mut c_void,
) {
    ffi_boundary!({
        let cb = OpResolverCallbacks {
            user_data: op_resolver_user_data,
            find_builtin_op_v1,
            find_custom_op_v1,
            ..OpResolverCallbacks::default()
        };
        try_mut!(options).callbacks = cb;
    })
}

/// Accepted for compatibility; NNAPI is Android-only and never used by this runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsSetUseNNAPI(options: *mut TfLiteInterpreterOptions, enable: bool) {
    ffi_boundary!({
        try_mut!(options).use_nnapi = enable;
    })
}

/// Enables falling back to CPU kernels when a delegate fails during Invoke (the failing
/// Invoke returns kTfLiteDelegateError; later ones run without delegates).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteInterpreterOptionsSetEnableDelegateFallback(
    options: *mut TfLiteInterpreterOptions,
    enable: bool,
) {
    ffi_boundary!({
        try_mut!(options).enable_delegate_fallback = enable;
    })
}
