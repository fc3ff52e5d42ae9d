//! The op-resolver callbacks of `TfLiteInterpreterOptionsSetOpResolver*` as an `OpFinder`
//! (TFLite's `CallbackOpResolver`).
//!
//! Lookup order, as TFLite: the `TfLiteOperator` callbacks first (an operator counts only
//! if it has at least one callback); then the `TfLiteRegistration` callback, whose answer
//! (even NULL) is final when it is set; then the legacy V3, V2 and V1 callbacks.
//! Registrations are copied: the application keeps ownership of what the callbacks
//! return, and of `TfLiteOperator`s, which must outlive the interpreter.

use super::operator::registration_for_operator;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::*;
use crate::resolver::OpFinder;
use core::ffi::{c_char, c_int, c_void};
use std::ffi::CString;

/// `TfLiteRegistration` as of TF 2.11: the first 8 fields plus `registration_external`
/// (72 bytes). Consumed only by `TfLiteInterpreterOptionsSetOpResolverV2`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct TfLiteRegistration_V2 {
    pub init:
        Option<unsafe extern "C" fn(context: *mut TfLiteContext, buffer: *const c_char, length: usize) -> *mut c_void>,
    pub free: Option<unsafe extern "C" fn(context: *mut TfLiteContext, buffer: *mut c_void)>,
    pub prepare: Option<unsafe extern "C" fn(context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus>,
    pub invoke: Option<unsafe extern "C" fn(context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus>,
    pub profiling_string:
        Option<unsafe extern "C" fn(context: *const TfLiteContext, node: *const TfLiteNode) -> *const c_char>,
    pub builtin_code: i32,
    pub custom_name: *const c_char,
    pub version: c_int,
    pub registration_external: *mut TfLiteOperator,
}

/// `TfLiteRegistration` as of TF 2.13: `TfLiteRegistration_V2` plus `async_kernel`
/// (80 bytes). Consumed only by `TfLiteInterpreterOptionsSetOpResolverV3`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct TfLiteRegistration_V3 {
    pub init:
        Option<unsafe extern "C" fn(context: *mut TfLiteContext, buffer: *const c_char, length: usize) -> *mut c_void>,
    pub free: Option<unsafe extern "C" fn(context: *mut TfLiteContext, buffer: *mut c_void)>,
    pub prepare: Option<unsafe extern "C" fn(context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus>,
    pub invoke: Option<unsafe extern "C" fn(context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus>,
    pub profiling_string:
        Option<unsafe extern "C" fn(context: *const TfLiteContext, node: *const TfLiteNode) -> *const c_char>,
    pub builtin_code: i32,
    pub custom_name: *const c_char,
    pub version: c_int,
    pub registration_external: *mut TfLiteOperator,
    pub async_kernel:
        Option<unsafe extern "C" fn(context: *mut TfLiteContext, node: *mut TfLiteNode) -> *mut TfLiteAsyncKernel>,
}

pub(crate) type FindBuiltinOp = unsafe extern "C" fn(
    user_data: *mut c_void,
    op: TfLiteBuiltinOperator,
    version: c_int,
) -> *const TfLiteRegistration;
pub(crate) type FindCustomOp =
    unsafe extern "C" fn(user_data: *mut c_void, op: *const c_char, version: c_int) -> *const TfLiteRegistration;
pub(crate) type FindBuiltinOpExternal =
    unsafe extern "C" fn(user_data: *mut c_void, op: c_int, version: c_int) -> *const TfLiteOperator;
pub(crate) type FindCustomOpExternal =
    unsafe extern "C" fn(user_data: *mut c_void, op: *const c_char, version: c_int) -> *const TfLiteOperator;
pub(crate) type FindBuiltinOpV1 = unsafe extern "C" fn(
    user_data: *mut c_void,
    op: TfLiteBuiltinOperator,
    version: c_int,
) -> *const TfLiteRegistration_V1;
pub(crate) type FindCustomOpV1 =
    unsafe extern "C" fn(user_data: *mut c_void, op: *const c_char, version: c_int) -> *const TfLiteRegistration_V1;
pub(crate) type FindBuiltinOpV2 = unsafe extern "C" fn(
    user_data: *mut c_void,
    op: TfLiteBuiltinOperator,
    version: c_int,
) -> *const TfLiteRegistration_V2;
pub(crate) type FindCustomOpV2 =
    unsafe extern "C" fn(user_data: *mut c_void, op: *const c_char, version: c_int) -> *const TfLiteRegistration_V2;
pub(crate) type FindBuiltinOpV3 = unsafe extern "C" fn(
    user_data: *mut c_void,
    op: TfLiteBuiltinOperator,
    version: c_int,
) -> *const TfLiteRegistration_V3;
pub(crate) type FindCustomOpV3 =
    unsafe extern "C" fn(user_data: *mut c_void, op: *const c_char, version: c_int) -> *const TfLiteRegistration_V3;

/// The callbacks stored in `TfLiteInterpreterOptions` (TFLite's `TfLiteOpResolverCallbacks`).
/// Every `SetOpResolver*` call replaces all of them.
#[derive(Clone, Copy)]
pub(crate) struct OpResolverCallbacks {
    pub(crate) user_data: *mut c_void,
    pub(crate) find_builtin_op: Option<FindBuiltinOp>,
    pub(crate) find_custom_op: Option<FindCustomOp>,
    pub(crate) find_builtin_op_external: Option<FindBuiltinOpExternal>,
    pub(crate) find_custom_op_external: Option<FindCustomOpExternal>,
    pub(crate) find_builtin_op_v1: Option<FindBuiltinOpV1>,
    pub(crate) find_custom_op_v1: Option<FindCustomOpV1>,
    pub(crate) find_builtin_op_v2: Option<FindBuiltinOpV2>,
    pub(crate) find_custom_op_v2: Option<FindCustomOpV2>,
    pub(crate) find_builtin_op_v3: Option<FindBuiltinOpV3>,
    pub(crate) find_custom_op_v3: Option<FindCustomOpV3>,
}

impl Default for OpResolverCallbacks {
    fn default() -> Self {
        OpResolverCallbacks {
            user_data: core::ptr::null_mut(),
            find_builtin_op: None,
            find_custom_op: None,
            find_builtin_op_external: None,
            find_custom_op_external: None,
            find_builtin_op_v1: None,
            find_custom_op_v1: None,
            find_builtin_op_v2: None,
            find_custom_op_v2: None,
            find_builtin_op_v3: None,
            find_custom_op_v3: None,
        }
    }
}

impl OpResolverCallbacks {
    /// True if any callback is set (then the resolver is consulted).
    pub(crate) fn is_set(&self) -> bool {
        self.find_builtin_op.is_some()
            || self.find_custom_op.is_some()
            || self.find_builtin_op_external.is_some()
            || self.find_custom_op_external.is_some()
            || self.find_builtin_op_v1.is_some()
            || self.find_custom_op_v1.is_some()
            || self.find_builtin_op_v2.is_some()
            || self.find_custom_op_v2.is_some()
            || self.find_builtin_op_v3.is_some()
            || self.find_custom_op_v3.is_some()
    }
}

/// An operator returned by a callback counts only if it defines some behaviour
/// (TFLite: otherwise the `TfLiteRegistration` fallback is tried).
fn operator_has_callbacks(op: &TfLiteOperator) -> bool {
    op.init.is_some()
        || op.init_with_data.is_some()
        || op.free.is_some()
        || op.free_with_data.is_some()
        || op.prepare.is_some()
        || op.prepare_with_data.is_some()
        || op.invoke.is_some()
        || op.invoke_with_data.is_some()
        || op.async_kernel.is_some()
        || op.async_kernel_with_data.is_some()
}

/// A registration for an operator a callback returned, if it has callbacks.
fn from_operator(op: *const TfLiteOperator) -> Option<TfLiteRegistration> {
    // SAFETY: a non-NULL result of a resolver callback is a live `TfLiteOperator` made by
    // `TfLiteOperatorCreate`, which the application keeps alive (TFLite's contract).
    let o = unsafe { op.as_ref() }?;
    operator_has_callbacks(o).then(|| registration_for_operator(op.cast_mut()))
}

/// Copies a registration a callback returned (NULL → `None`).
///
/// # Safety
/// `reg` must be NULL or point to a readable `TfLiteRegistration`.
unsafe fn copy_registration(reg: *const TfLiteRegistration) -> Option<TfLiteRegistration> {
    // SAFETY: per the function contract.
    unsafe { reg.as_ref() }.copied()
}

fn from_v1(r: &TfLiteRegistration_V1) -> TfLiteRegistration {
    TfLiteRegistration {
        init: r.init,
        free: r.free,
        prepare: r.prepare,
        invoke: r.invoke,
        profiling_string: r.profiling_string,
        builtin_code: r.builtin_code,
        custom_name: r.custom_name,
        version: r.version,
        ..TfLiteRegistration::empty()
    }
}

fn from_v2(r: &TfLiteRegistration_V2) -> TfLiteRegistration {
    TfLiteRegistration {
        init: r.init,
        free: r.free,
        prepare: r.prepare,
        invoke: r.invoke,
        profiling_string: r.profiling_string,
        builtin_code: r.builtin_code,
        custom_name: r.custom_name,
        version: r.version,
        registration_external: r.registration_external,
        ..TfLiteRegistration::empty()
    }
}

fn from_v3(r: &TfLiteRegistration_V3) -> TfLiteRegistration {
    TfLiteRegistration {
        init: r.init,
        free: r.free,
        prepare: r.prepare,
        invoke: r.invoke,
        profiling_string: r.profiling_string,
        builtin_code: r.builtin_code,
        custom_name: r.custom_name,
        version: r.version,
        registration_external: r.registration_external,
        async_kernel: r.async_kernel,
        inplace_operator: 0,
    }
}

/// An `OpFinder` that asks the application's callbacks.
pub(crate) struct CallbackResolver {
    callbacks: OpResolverCallbacks,
}

impl CallbackResolver {
    pub(crate) fn new(callbacks: OpResolverCallbacks) -> CallbackResolver {
        CallbackResolver { callbacks }
    }

    fn builtin(&self, code: i32, version: i32) -> Option<TfLiteRegistration> {
        let cb = &self.callbacks;
        let ud = cb.user_data;
        if let Some(f) = cb.find_builtin_op_external {
            // SAFETY: calling the application's resolver with its own user data.
            let op = unsafe { f(ud, code, version) };
            if let Some(r) = from_operator(op) {
                return Some(r);
            }
        }
        // The remaining callbacks take the enum; a code outside it cannot be asked for.
        let op = TfLiteBuiltinOperator::from_raw(code)?;
        if let Some(f) = cb.find_builtin_op {
            // SAFETY: as above; a non-NULL result points to a registration the
            // application keeps alive at least for this call.
            return unsafe { copy_registration(f(ud, op, version)) };
        }
        if let Some(f) = cb.find_builtin_op_v3 {
            // SAFETY: as above.
            if let Some(r) = unsafe { f(ud, op, version).as_ref() } {
                return Some(from_v3(r));
            }
        }
        if let Some(f) = cb.find_builtin_op_v2 {
            // SAFETY: as above.
            if let Some(r) = unsafe { f(ud, op, version).as_ref() } {
                return Some(from_v2(r));
            }
        }
        if let Some(f) = cb.find_builtin_op_v1 {
            // SAFETY: as above.
            if let Some(r) = unsafe { f(ud, op, version).as_ref() } {
                return Some(from_v1(r));
            }
        }
        None
    }

    fn custom(&self, name: &str, version: i32) -> Option<TfLiteRegistration> {
        let cb = &self.callbacks;
        let ud = cb.user_data;
        let cname = CString::new(name).ok()?;
        let n = cname.as_ptr();
        if let Some(f) = cb.find_custom_op_external {
            // SAFETY: calling the application's resolver with its own user data and a
            // NUL-terminated name alive for the call.
            let op = unsafe { f(ud, n, version) };
            if let Some(r) = from_operator(op) {
                return Some(r);
            }
        }
        if let Some(f) = cb.find_custom_op {
            // SAFETY: as above.
            return unsafe { copy_registration(f(ud, n, version)) };
        }
        if let Some(f) = cb.find_custom_op_v3 {
            // SAFETY: as above.
            if let Some(r) = unsafe { f(ud, n, version).as_ref() } {
                return Some(from_v3(r));
            }
        }
        if let Some(f) = cb.find_custom_op_v2 {
            // SAFETY: as above.
            if let Some(r) = unsafe { f(ud, n, version).as_ref() } {
                return Some(from_v2(r));
            }
        }
        if let Some(f) = cb.find_custom_op_v1 {
            // SAFETY: as above.
            if let Some(r) = unsafe { f(ud, n, version).as_ref() } {
                return Some(from_v1(r));
            }
        }
        None
    }
}

impl OpFinder for CallbackResolver {
    fn find_builtin(&self, code: i32, version: i32) -> Option<TfLiteRegistration> {
        let mut r = self.builtin(code, version)?;
        r.builtin_code = code;
        r.version = version;
        Some(r)
    }

    fn find_custom(&self, name: &str, version: i32) -> Option<TfLiteRegistration> {
        let mut r = self.custom(name, version)?;
        r.builtin_code = TfLiteBuiltinOperator::kTfLiteBuiltinCustom as i32;
        r.version = version;
        Some(r)
    }
}
