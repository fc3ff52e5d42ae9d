//! Calling a node's lifecycle functions exactly as TFLite does: a registration made from
//! a `TfLiteOperator` (C, operator.h) dispatches to the operator's callbacks — the
//! `*WithData` variants first, passing the operator's `user_data` — and a plain
//! registration calls its own function pointers.

use crate::abi::types::*;
use core::ffi::{c_char, c_void};

fn operator(reg: &TfLiteRegistration) -> Option<&TfLiteOperator> {
    // SAFETY: `registration_external` is either NULL or a `TfLiteOperator` that the
    // application keeps alive for the interpreter's lifetime (TFLite's contract for
    // `TfLiteInterpreterOptionsAddOperator` and operator-returning resolvers).
    unsafe { reg.registration_external.as_ref() }
}

/// Calls `init`; returns the node's `user_data`.
///
/// # Safety
/// `context` must be the live context of the node's subgraph; `buffer`/`length` as TFLite
/// passes them (builtin params with length 0, or custom options).
pub unsafe fn init(
    reg: &TfLiteRegistration,
    context: *mut TfLiteContext,
    buffer: *const c_char,
    length: usize,
) -> *mut c_void {
    // SAFETY: calling application/kernel callbacks with the arguments TFLite passes.
    unsafe {
        if let Some(op) = operator(reg) {
            if let Some(f) = op.init_with_data {
                return f(op.user_data, context.cast(), buffer, length);
            }
            if let Some(f) = op.init {
                return f(context.cast(), buffer, length);
            }
            return core::ptr::null_mut();
        }
        match reg.init {
            Some(f) => f(context, buffer, length),
            None => core::ptr::null_mut(),
        }
    }
}

/// Calls `free` with the node's `user_data`; never with NULL data (as TFLite's OpFree).
///
/// # Safety
/// As `init`; `data` is what `init` returned.
pub unsafe fn free(reg: &TfLiteRegistration, context: *mut TfLiteContext, data: *mut c_void) {
    if data.is_null() {
        return;
    }
    // SAFETY: as in `init`.
    unsafe {
        if let Some(op) = operator(reg) {
            if let Some(f) = op.free_with_data {
                f(op.user_data, context.cast(), data);
            } else if let Some(f) = op.free {
                f(context.cast(), data);
            }
            return;
        }
        if let Some(f) = reg.free {
            f(context, data);
        }
    }
}

/// Calls `prepare` (absent → ok).
///
/// # Safety
/// `context` and `node` must be live and belong together.
pub unsafe fn prepare(reg: &TfLiteRegistration, context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus {
    // SAFETY: as in `init`.
    unsafe {
        if let Some(op) = operator(reg) {
            if let Some(f) = op.prepare_with_data {
                return f(op.user_data, context.cast(), node.cast());
            }
            if let Some(f) = op.prepare {
                return f(context.cast(), node.cast());
            }
            return TfLiteStatus::kTfLiteOk;
        }
        match reg.prepare {
            Some(f) => f(context, node),
            None => TfLiteStatus::kTfLiteOk,
        }
    }
}

/// Calls `invoke`; a registration without one is an error.
///
/// # Safety
/// As `prepare`.
pub unsafe fn invoke(reg: &TfLiteRegistration, context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus {
    // SAFETY: as in `init`.
    unsafe {
        if let Some(op) = operator(reg) {
            if let Some(f) = op.invoke_with_data {
                return f(op.user_data, context.cast(), node.cast());
            }
            if let Some(f) = op.invoke {
                return f(context.cast(), node.cast());
            }
            return TfLiteStatus::kTfLiteError;
        }
        match reg.invoke {
            Some(f) => f(context, node),
            None => TfLiteStatus::kTfLiteError,
        }
    }
}
