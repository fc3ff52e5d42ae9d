//! `TfLiteTensor*` accessors (c_api.h). The opaque-tensor functions (opaque.rs) share
//! these helpers, since a `TfLiteOpaqueTensor*` is a `TfLiteTensor*`.
//!
//! Where TFLite would dereference NULL (or index out of range) these return an error
//! value instead: `kTfLiteNoType`, -1, 0, NULL or `kTfLiteError`, as documented per
//! function.

use crate::abi::arrays::int_array_slice;
use crate::abi::types::*;
use crate::ffi::{try_mut, try_ref};
use core::ffi::{c_char, c_void};

/// The element type; `kTfLiteNoType` for a value outside the enum.
pub(crate) fn tensor_type(t: &TfLiteTensor) -> TfLiteType {
    t.data_type().unwrap_or(TfLiteType::kTfLiteNoType)
}

/// The shape, if the tensor has one.
fn dims(t: &TfLiteTensor) -> Option<&[i32]> {
    if t.dims.is_null() {
        return None;
    }
    // SAFETY: a tensor's non-NULL `dims` is a valid int array it owns.
    Some(unsafe { int_array_slice(t.dims) })
}

/// Number of dimensions; -1 for a tensor without a shape.
pub(crate) fn num_dims(t: &TfLiteTensor) -> i32 {
    dims(t).map_or(-1, |d| d.len() as i32)
}

/// Dimension `i`; -1 for a tensor without a shape or `i` out of range.
pub(crate) fn dim(t: &TfLiteTensor, i: i32) -> i32 {
    let Some(d) = dims(t) else { return -1 };
    usize::try_from(i).ok().and_then(|i| d.get(i).copied()).unwrap_or(-1)
}

/// Copies `size` bytes from `src` into the tensor's data (sizes must match).
///
/// # Safety
/// `t`'s data (if any) has `bytes` writable bytes; `src` is NULL or has `size` readable
/// bytes.
pub(crate) unsafe fn copy_from_buffer(t: &mut TfLiteTensor, src: *const c_void, size: usize) -> TfLiteStatus {
    if t.bytes != size {
        return TfLiteStatus::kTfLiteError;
    }
    if size == 0 {
        return TfLiteStatus::kTfLiteOk;
    }
    let dst = t.data_ptr();
    if dst.is_null() || src.is_null() {
        return TfLiteStatus::kTfLiteError;
    }
    // SAFETY: both regions have `size` bytes (checked against `bytes` above); `copy`
    // tolerates overlap.
    unsafe { core::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), size) };
    TfLiteStatus::kTfLiteOk
}

/// Copies the tensor's data into `dst` (`size` must equal the tensor's byte size).
///
/// # Safety
/// `t`'s data (if any) has `bytes` readable bytes; `dst` is NULL or has `size` writable
/// bytes.
pub(crate) unsafe fn copy_to_buffer(t: &TfLiteTensor, dst: *mut c_void, size: usize) -> TfLiteStatus {
    if t.bytes != size {
        return TfLiteStatus::kTfLiteError;
    }
    if size == 0 {
        return TfLiteStatus::kTfLiteOk;
    }
    let src = t.data_ptr();
    if dst.is_null() || src.is_null() {
        return TfLiteStatus::kTfLiteError;
    }
    // SAFETY: both regions have `size` bytes; `copy` tolerates overlap.
    unsafe { core::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), size) };
    TfLiteStatus::kTfLiteOk
}

/// Returns the tensor's element type (`kTfLiteNoType` for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorType(tensor: *const TfLiteTensor) -> TfLiteType {
    ffi_boundary!({ tensor_type(try_ref!(tensor)) })
}

/// Returns the number of dimensions, or -1 for NULL or a tensor without a shape.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorNumDims(tensor: *const TfLiteTensor) -> i32 {
    ffi_boundary!(default = -1, { num_dims(try_ref!(tensor, else -1)) })
}

/// Returns the length of dimension `dim_index`, or -1 for NULL or an index out of range.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorDim(tensor: *const TfLiteTensor, dim_index: i32) -> i32 {
    ffi_boundary!(default = -1, { dim(try_ref!(tensor, else -1), dim_index) })
}

/// Returns the size of the tensor's data in bytes (0 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorByteSize(tensor: *const TfLiteTensor) -> usize {
    ffi_boundary!({ try_ref!(tensor).bytes })
}

/// Returns the tensor's data (NULL for NULL, or before `AllocateTensors`). Owned by the
/// interpreter; valid until the next `AllocateTensors` or resize.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorData(tensor: *const TfLiteTensor) -> *mut c_void {
    ffi_boundary!({ try_ref!(tensor).data_ptr() })
}

/// Returns the tensor's name (NULL for NULL or an unnamed tensor). Owned by the tensor.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorName(tensor: *const TfLiteTensor) -> *const c_char {
    ffi_boundary!({ try_ref!(tensor).name })
}

/// Returns the tensor's per-tensor quantization parameters by value ({0, 0} for NULL or
/// an unquantized tensor).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorQuantizationParams(tensor: *const TfLiteTensor) -> TfLiteQuantizationParams {
    ffi_boundary!({ try_ref!(tensor).params })
}

/// Copies `input_data_size` bytes from `input_data` into the tensor. Returns kTfLiteError
/// unless `input_data_size` equals `TfLiteTensorByteSize(tensor)` (and the tensor has
/// data). The caller retains ownership of `input_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorCopyFromBuffer(
    tensor: *mut TfLiteTensor,
    input_data: *const c_void,
    input_data_size: usize,
) -> TfLiteStatus {
    ffi_boundary!({
        let t = try_mut!(tensor);
        // SAFETY: forwarded contract.
        unsafe { copy_from_buffer(t, input_data, input_data_size) }
    })
}

/// Copies the tensor's data into `output_data`. Returns kTfLiteError unless
/// `output_data_size` equals `TfLiteTensorByteSize(tensor)` (and the tensor has data).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorCopyToBuffer(
    output_tensor: *const TfLiteTensor,
    output_data: *mut c_void,
    output_data_size: usize,
) -> TfLiteStatus {
    ffi_boundary!({
        let t = try_ref!(output_tensor);
        // SAFETY: forwarded contract.
        unsafe { copy_to_buffer(t, output_data, output_data_size) }
    })
}
