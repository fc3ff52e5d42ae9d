//! The value a function called from C returns when it cannot do its job.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::*;
use core::ffi::c_int;

/// The value an entry point returns when it cannot do its job (a NULL handle, or a panic
/// caught): `kTfLiteError` for statuses, NULL for pointers, 0 for sizes, "unknown" for
/// enums. Functions whose documented error value differs (for example -1 for a count)
/// name it explicitly (`ffi_boundary!(default = -1, ..)`, `try_ref!(p, else -1)`).
pub(crate) trait FfiDefault {
    fn ffi_default() -> Self;
}

impl<T> FfiDefault for *mut T {
    fn ffi_default() -> Self {
        core::ptr::null_mut()
    }
}

impl<T> FfiDefault for *const T {
    fn ffi_default() -> Self {
        core::ptr::null()
    }
}

macro_rules! ffi_defaults {
    ($($t:ty => $v:expr,)+) => {$(
        impl FfiDefault for $t {
            fn ffi_default() -> Self {
                $v
            }
        }
    )+};
}

ffi_defaults! {
    () => (),
    c_int => 0,
    usize => 0,
    TfLiteStatus => TfLiteStatus::kTfLiteError,
    TfLiteType => TfLiteType::kTfLiteNoType,
    TfLiteAllocationType => TfLiteAllocationType::kTfLiteMemNone,
    TfLiteAllocationStrategy => TfLiteAllocationStrategy::kTfLiteAllocationStrategyUnknown,
    TfLiteRunStability => TfLiteRunStability::kTfLiteRunStabilityUnknown,
    TfLiteRunStep => TfLiteRunStep::kTfLiteRunStepUnknown,
    TfLiteQuantizationParams => TfLiteQuantizationParams { scale: 0.0, zero_point: 0 },
    TfLiteQuantization => TfLiteQuantization {
        r#type: TfLiteQuantizationType::kTfLiteNoQuantization,
        params: core::ptr::null_mut(),
    },
    TfLiteBuiltinOperator => TfLiteBuiltinOperator::kTfLiteBuiltinCustom,
}
