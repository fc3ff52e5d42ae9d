//! `TfLiteOperator`: an operator defined from C through operator.h
//! (`TfLiteOperatorCreate` + `TfLiteOperatorSet*`). Opaque to C.

use super::types::{TfLiteAsyncKernel, TfLiteOpaqueContext, TfLiteOpaqueNode, TfLiteStatus};
use core::ffi::{c_char, c_void};
use std::ffi::CString;

pub type OpInitFn = unsafe extern "C" fn(*mut TfLiteOpaqueContext, *const c_char, usize) -> *mut c_void;
pub type OpInitWithDataFn =
    unsafe extern "C" fn(*mut c_void, *mut TfLiteOpaqueContext, *const c_char, usize) -> *mut c_void;
pub type OpFreeFn = unsafe extern "C" fn(*mut TfLiteOpaqueContext, *mut c_void);
pub type OpFreeWithDataFn = unsafe extern "C" fn(*mut c_void, *mut TfLiteOpaqueContext, *mut c_void);
pub type OpStepFn = unsafe extern "C" fn(*mut TfLiteOpaqueContext, *mut TfLiteOpaqueNode) -> TfLiteStatus;
pub type OpStepWithDataFn =
    unsafe extern "C" fn(*mut c_void, *mut TfLiteOpaqueContext, *mut TfLiteOpaqueNode) -> TfLiteStatus;
pub type OpAsyncKernelFn =
    unsafe extern "C" fn(*mut TfLiteOpaqueContext, *mut TfLiteOpaqueNode) -> *mut TfLiteAsyncKernel;
pub type OpAsyncKernelWithDataFn =
    unsafe extern "C" fn(*mut c_void, *mut TfLiteOpaqueContext, *mut TfLiteOpaqueNode) -> *mut TfLiteAsyncKernel;

/// An operator registered from C. The `*_with_data` callbacks take precedence over the
/// plain ones, as in TFLite.
pub struct TfLiteOperator {
    pub builtin_code: i32,
    pub custom_name: Option<CString>,
    pub version: i32,
    pub user_data: *mut c_void,
    pub init: Option<OpInitFn>,
    pub init_with_data: Option<OpInitWithDataFn>,
    pub free: Option<OpFreeFn>,
    pub free_with_data: Option<OpFreeWithDataFn>,
    pub prepare: Option<OpStepFn>,
    pub prepare_with_data: Option<OpStepWithDataFn>,
    pub invoke: Option<OpStepFn>,
    pub invoke_with_data: Option<OpStepWithDataFn>,
    pub async_kernel: Option<OpAsyncKernelFn>,
    pub async_kernel_with_data: Option<OpAsyncKernelWithDataFn>,
    pub inplace_operator: u64,
}

impl TfLiteOperator {
    /// A new operator with no callbacks.
    pub fn new(builtin_code: i32, custom_name: Option<CString>, version: i32, user_data: *mut c_void) -> Self {
        TfLiteOperator {
            builtin_code,
            custom_name,
            version,
            user_data,
            init: None,
            init_with_data: None,
            free: None,
            free_with_data: None,
            prepare: None,
            prepare_with_data: None,
            invoke: None,
            invoke_with_data: None,
            async_kernel: None,
            async_kernel_with_data: None,
            inplace_operator: 0,
        }
    }

    /// A copy with the same callbacks and name.
    pub fn duplicate(&self) -> TfLiteOperator {
        TfLiteOperator {
            custom_name: self.custom_name.clone(),
            builtin_code: self.builtin_code,
            version: self.version,
            user_data: self.user_data,
            init: self.init,
            init_with_data: self.init_with_data,
            free: self.free,
            free_with_data: self.free_with_data,
            prepare: self.prepare,
            prepare_with_data: self.prepare_with_data,
            invoke: self.invoke,
            invoke_with_data: self.invoke_with_data,
            async_kernel: self.async_kernel,
            async_kernel_with_data: self.async_kernel_with_data,
            inplace_operator: self.inplace_operator,
        }
    }
}
