//! C handles: the pointers C passes back to the runtime, turned into references in one
//! place instead of one helper per type.

use crate::abi::operator::TfLiteOperator;
use crate::abi::types::*;

/// A type C holds by pointer and passes back to the runtime: the runtime's own opaque
/// handles (`TfLiteModel`, `TfLiteInterpreter`, ...) and the C structs it lends out
/// (`TfLiteTensor`, `TfLiteNode`, and TFLite's opaque stand-ins for them).
///
/// # Safety
/// `Target` must be the type a non-NULL pointer to `Self` from C really points to:
/// `Self`, or for one of TFLite's opaque stand-ins the struct behind it (a
/// `TfLiteOpaqueTensor*` is a `TfLiteTensor*`).
pub(crate) unsafe trait Handle {
    type Target;
}

/// The value behind a handle pointer; `None` for NULL.
///
/// # Safety
/// `p` must be NULL or point to a live `H::Target` that nothing mutates while the
/// returned reference lives.
pub(crate) unsafe fn ref_from_ptr<'a, H: Handle>(p: *const H) -> Option<&'a H::Target> {
    // SAFETY: per the function contract; `Handle` says what `p` points to.
    unsafe { p.cast::<H::Target>().as_ref() }
}

/// The value behind a handle pointer, for writing; `None` for NULL.
///
/// # Safety
/// `p` must be NULL or point to a live `H::Target` that nothing else reads or writes
/// while the returned reference lives.
pub(crate) unsafe fn mut_from_ptr<'a, H: Handle>(p: *mut H) -> Option<&'a mut H::Target> {
    // SAFETY: per the function contract; `Handle` says what `p` points to.
    unsafe { p.cast::<H::Target>().as_mut() }
}

/// `try_ref!(p)`: the value behind `p`, a handle argument of the `extern "C"` function
/// being run; when `p` is NULL, returns from the enclosing function (or `ffi_boundary!`
/// body) with the return type's `FfiDefault`, or with `value` for
/// `try_ref!(p, else value)`.
///
/// Only for the pointer arguments C passes to an entry point or callback: their
/// contract (each function's doc; the header's "not thread-safe" rule) is that each is
/// NULL or a live object no other call uses meanwhile, which is what makes this sound.
macro_rules! try_ref {
    ($p:expr) => {
        $crate::ffi::try_ref!($p, else $crate::ffi::FfiDefault::ffi_default())
    };
    ($p:expr, else $fail:expr) => {{
        let p = $p;
        // SAFETY: `p` is a handle argument from C: NULL or live, and not used by another
        // call meanwhile (the C API contract; see `try_ref!`).
        match unsafe { $crate::ffi::ref_from_ptr(p) } {
            Some(r) => r,
            None => return $fail,
        }
    }};
}
pub(crate) use try_ref;

/// As `try_ref!`, for a handle the function changes.
macro_rules! try_mut {
    ($p:expr) => {
        $crate::ffi::try_mut!($p, else $crate::ffi::FfiDefault::ffi_default())
    };
    ($p:expr, else $fail:expr) => {{
        let p = $p;
        // SAFETY: `p` is a handle argument from C: NULL or live, and not used by another
        // call meanwhile (the C API contract; see `try_ref!`).
        match unsafe { $crate::ffi::mut_from_ptr(p) } {
            Some(r) => r,
            None => return $fail,
        }
    }};
}
pub(crate) use try_mut;

// SAFETY: pointers to these types point to them.
unsafe impl Handle for TfLiteTensor {
    type Target = Self;
}
// SAFETY: as above.
unsafe impl Handle for TfLiteNode {
    type Target = Self;
}
// SAFETY: as above.
unsafe impl Handle for TfLiteDelegate {
    type Target = Self;
}
// SAFETY: as above.
unsafe impl Handle for TfLiteOperator {
    type Target = Self;
}
// SAFETY: as in TFLite, an opaque tensor is a `TfLiteTensor`: the runtime hands out
// tensor pointers cast to the opaque type (c_api/opaque.rs).
unsafe impl Handle for TfLiteOpaqueTensor {
    type Target = TfLiteTensor;
}
// SAFETY: as above, an opaque node is a `TfLiteNode`.
unsafe impl Handle for TfLiteOpaqueNode {
    type Target = TfLiteNode;
}
