//! common.h helpers (arrays, tensors, types, delegates) and the version functions of
//! c_api.h.
//!
//! Every array and every dynamic tensor buffer is allocated with libc's malloc, because C
//! code frees them with `free()` (or with these functions), and the runtime frees what C
//! hands it the same way (`crate::abi::arrays`).

use super::ffi::{empty_delegate, into_raw};
use crate::abi::arrays::*;
use crate::abi::types::*;
use crate::ffi::{try_mut, try_ref};
use core::ffi::{c_char, c_int, c_void};
use core::mem::size_of;

// ---- version ------------------------------------------------------------------------

/// Returns the TFLite version this library is compatible with, "2.19.0". Static string.
#[unsafe(no_mangle)]
pub extern "C" fn TfLiteVersion() -> *const c_char {
    c"2.19.0".as_ptr()
}

/// Returns the version of the extension APIs (delegates, custom ops), "2.19.0". Static
/// string.
#[unsafe(no_mangle)]
pub extern "C" fn TfLiteExtensionApisVersion() -> *const c_char {
    c"2.19.0".as_ptr()
}

/// Returns the highest model schema version supported: 3.
#[unsafe(no_mangle)]
pub extern "C" fn TfLiteSchemaVersion() -> c_int {
    3
}

// ---- TfLiteIntArray / TfLiteFloatArray ------------------------------------------------

/// Returns the size in bytes of a `TfLiteIntArray` with `size` elements (0 for a negative
/// or overflowing size).
#[unsafe(no_mangle)]
pub extern "C" fn TfLiteIntArrayGetSizeInBytes(size: c_int) -> usize {
    int_array_bytes(size).unwrap_or(0)
}

/// Returns a new array of `size` elements (contents zeroed), or NULL on failure or a
/// negative size. The caller owns it: free with `TfLiteIntArrayFree` (or hand it to an
/// API that takes ownership).
#[unsafe(no_mangle)]
pub extern "C" fn TfLiteIntArrayCreate(size: c_int) -> *mut TfLiteIntArray {
    ffi_boundary!({ int_array_create(size) })
}

/// Returns 1 if `a` and `b` have the same elements (two NULLs are equal), else 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteIntArrayEqual(a: *const TfLiteIntArray, b: *const TfLiteIntArray) -> c_int {
    ffi_boundary!({
        if a == b {
            return 1;
        }
        if a.is_null() || b.is_null() {
            return 0;
        }
        // SAFETY: both are live int arrays, per the API contract.
        let (x, y) = unsafe { (int_array_slice(a), int_array_slice(b)) };
        c_int::from(x == y)
    })
}

/// Returns 1 if `a` holds exactly `b_data[0..b_size]` (a NULL `a` equals an empty array),
/// else 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteIntArrayEqualsArray(
    a: *const TfLiteIntArray,
    b_size: c_int,
    b_data: *const c_int,
) -> c_int {
    ffi_boundary!({
        if a.is_null() {
            return c_int::from(b_size == 0);
        }
        // SAFETY: live int array, per the API contract.
        let x = unsafe { int_array_slice(a) };
        if usize::try_from(b_size).ok() != Some(x.len()) {
            return 0;
        }
        // SAFETY: `b_data` has `b_size` readable ints, per the API contract.
        match unsafe { super::ffi::slice_from_raw(b_data, x.len()) } {
            Some(y) => c_int::from(x == y),
            None => 0,
        }
    })
}

/// Returns a copy of `src` (NULL for NULL or on failure). The caller owns it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteIntArrayCopy(src: *const TfLiteIntArray) -> *mut TfLiteIntArray {
    ffi_boundary!({
        if src.is_null() {
            return core::ptr::null_mut();
        }
        // SAFETY: live int array, per the API contract.
        int_array_from_slice(unsafe { int_array_slice(src) })
    })
}

/// Frees an array made by `TfLiteIntArrayCreate`/`Copy` (or handed out by the runtime for
/// the caller to free). Safe to pass NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteIntArrayFree(a: *mut TfLiteIntArray) {
    ffi_boundary!({
        // SAFETY: NULL or a malloc'ed array, not used afterwards (API contract).
        unsafe { int_array_free(a) }
    })
}

/// Returns the size in bytes of a `TfLiteFloatArray` with `size` elements (0 for a
/// negative or overflowing size).
#[unsafe(no_mangle)]
pub extern "C" fn TfLiteFloatArrayGetSizeInBytes(size: c_int) -> c_int {
    float_array_bytes(size).and_then(|b| c_int::try_from(b).ok()).unwrap_or(0)
}

/// Returns a new float array of `size` elements (zeroed), or NULL on failure. The caller
/// owns it: free with `TfLiteFloatArrayFree`.
#[unsafe(no_mangle)]
pub extern "C" fn TfLiteFloatArrayCreate(size: c_int) -> *mut TfLiteFloatArray {
    ffi_boundary!({ float_array_create(size) })
}

/// Returns a copy of `src` (NULL for NULL or on failure). The caller owns it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteFloatArrayCopy(src: *const TfLiteFloatArray) -> *mut TfLiteFloatArray {
    ffi_boundary!({
        if src.is_null() {
            return core::ptr::null_mut();
        }
        // SAFETY: live float array, per the API contract.
        float_array_from_slice(unsafe { float_array_slice(src) })
    })
}

/// Frees a float array. Safe to pass NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteFloatArrayFree(a: *mut TfLiteFloatArray) {
    ffi_boundary!({
        // SAFETY: NULL or a malloc'ed array, not used afterwards (API contract).
        unsafe { libc::free(a.cast()) }
    })
}

// ---- types ----------------------------------------------------------------------------

/// cbindgen:ignore
/// Returns the name of `type` ("FLOAT32", ...), or "Unknown type" for a value that is
/// no `TfLiteType`. Static string. C declares the parameter as `TfLiteType` (the
/// prototype is in cbindgen.toml's trailer); it is read here as the raw `int` because C
/// may pass any value (TF_LITE_ENSURE_TYPES_EQ is used with arbitrary integers), and an
/// out-of-range Rust enum would be undefined behaviour.
#[unsafe(no_mangle)]
pub extern "C" fn TfLiteTypeGetName(r#type: c_int) -> *const c_char {
    use TfLiteType::*;
    let Some(t) = TfLiteType::from_raw(r#type) else { return c"Unknown type".as_ptr() };
    let s: &'static core::ffi::CStr = match t {
        kTfLiteNoType => c"NOTYPE",
        kTfLiteFloat32 => c"FLOAT32",
        kTfLiteInt32 => c"INT32",
        kTfLiteUInt8 => c"UINT8",
        kTfLiteInt64 => c"INT64",
        kTfLiteString => c"STRING",
        kTfLiteBool => c"BOOL",
        kTfLiteInt16 => c"INT16",
        kTfLiteComplex64 => c"COMPLEX64",
        kTfLiteInt8 => c"INT8",
        kTfLiteFloat16 => c"FLOAT16",
        kTfLiteFloat64 => c"FLOAT64",
        kTfLiteComplex128 => c"COMPLEX128",
        kTfLiteUInt64 => c"UINT64",
        kTfLiteResource => c"RESOURCE",
        kTfLiteVariant => c"VARIANT",
        kTfLiteUInt32 => c"UINT32",
        kTfLiteUInt16 => c"UINT16",
        kTfLiteInt4 => c"INT4",
        kTfLiteBFloat16 => c"BFLOAT16",
        kTfLiteInt2 => c"INT2",
        kTfLiteUInt4 => c"UINT4",
        kTfLiteFloat8E4M3FN => c"FLOAT8_E4M3FN",
        kTfLiteFloat8E5M2 => c"FLOAT8_E5M2",
    };
    s.as_ptr()
}

// ---- tensors --------------------------------------------------------------------------

/// Extra bytes TFLite allocates past a dynamic tensor's data (XNNPack may read past the
/// end).
const TENSOR_ALLOCATION_EXTRA_BYTES: usize = 16;

/// Frees quantization parameters (affine, blockwise, multi-axis) and resets `q` to none.
///
/// # Safety
/// `q.params` must be NULL or the malloc'ed parameters of `q.type`, with malloc'ed arrays.
pub(crate) unsafe fn quantization_free(q: &mut TfLiteQuantization) {
    // SAFETY: the type tag is a 4-byte C enum; read it raw since C may have written any value.
    let ty = unsafe { core::ptr::addr_of!(q.r#type).cast::<c_int>().read() };
    let p = q.params;
    if !p.is_null() {
        // SAFETY: per the function contract, `p` matches its tag.
        unsafe {
            match ty {
                1 => {
                    let aq = p.cast::<TfLiteAffineQuantization>();
                    libc::free((*aq).scale.cast());
                    int_array_free((*aq).zero_point);
                    libc::free(p);
                }
                // Blockwise: four int32 tensor indices, nothing nested.
                2 => libc::free(p),
                // Multi-axis (LiteRT): `TfLiteIntArray* quantized_dimensions` after three int32s.
                3 => {
                    let dims = p.cast::<u8>().add(16).cast::<*mut TfLiteIntArray>().read();
                    int_array_free(dims);
                    libc::free(p);
                }
                _ => {}
            }
        }
    }
    q.params = core::ptr::null_mut();
    q.r#type = TfLiteQuantizationType::kTfLiteNoQuantization;
}

/// Frees sparsity parameters and the struct itself.
///
/// # Safety
/// `s` must be NULL or a malloc'ed `TfLiteSparsity` with malloc'ed members.
pub(crate) unsafe fn sparsity_free(s: *mut TfLiteSparsity) {
    if s.is_null() {
        return;
    }
    // SAFETY: per the function contract.
    unsafe {
        int_array_free((*s).traversal_order);
        int_array_free((*s).block_map);
        let md = (*s).dim_metadata;
        if !md.is_null() {
            for i in 0..usize::try_from((*s).dim_metadata_size).unwrap_or(0) {
                let m = md.add(i);
                // Only CSR dimensions own their arrays (TFLite).
                if core::ptr::addr_of!((*m).format).cast::<c_int>().read()
                    == TfLiteDimensionType::kTfLiteDimSparseCSR as c_int
                {
                    int_array_free((*m).array_segments);
                    int_array_free((*m).array_indices);
                }
            }
            libc::free(md.cast());
        }
        libc::free(s.cast());
    }
}

/// Frees a dynamic / persistent-read-only tensor's data and sets `data` to NULL.
///
/// # Safety
/// `t`'s data, when dynamic or persistent-RO, must be malloc'ed and owned by it.
pub(crate) unsafe fn tensor_data_free(t: &mut TfLiteTensor) {
    match t.allocation() {
        Some(TfLiteAllocationType::kTfLiteDynamic) | Some(TfLiteAllocationType::kTfLitePersistentRo) => {
            // SAFETY: per the function contract.
            unsafe { libc::free(t.data_ptr()) }
        }
        // Variant objects are C++ objects in TFLite; this runtime never creates them, so
        // there is nothing it could destroy here.
        _ => {}
    }
    t.data.data = core::ptr::null_mut();
}

/// `TfLiteTensorFree` on a reference.
///
/// # Safety
/// As `TfLiteTensorFree`.
pub(crate) unsafe fn tensor_free(t: &mut TfLiteTensor) {
    // SAFETY: per the function contract every owned member is NULL or malloc'ed.
    unsafe {
        tensor_data_free(t);
        int_array_free(t.dims);
        t.dims = core::ptr::null_mut();
        int_array_free(t.dims_signature.cast_mut());
        t.dims_signature = core::ptr::null();
        quantization_free(&mut t.quantization);
        sparsity_free(t.sparsity);
        t.sparsity = core::ptr::null_mut();
    }
}

/// Frees the tensor's data if it is dynamic (or persistent read-only) and sets `data` to
/// NULL. Safe to pass NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorDataFree(t: *mut TfLiteTensor) {
    ffi_boundary!({
        let t = try_mut!(t);
        // SAFETY: the tensor's owned members are malloc'ed (API contract).
        unsafe { tensor_data_free(t) }
    })
}

/// Frees the quantization parameters and resets `quantization` to
/// `kTfLiteNoQuantization`. Safe to pass NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteQuantizationFree(quantization: *mut TfLiteQuantization) {
    ffi_boundary!({
        // SAFETY: NULL or live, malloc'ed parameters (API contract).
        if let Some(q) = unsafe { quantization.as_mut() } {
            // SAFETY: as above.
            unsafe { quantization_free(q) }
        }
    })
}

/// Frees `sparsity` and everything it owns. Safe to pass NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteSparsityFree(sparsity: *mut TfLiteSparsity) {
    ffi_boundary!({
        // SAFETY: NULL or malloc'ed sparsity (API contract).
        unsafe { sparsity_free(sparsity) }
    })
}

/// Frees everything the tensor owns (dynamic data, dims, dims signature, quantization,
/// sparsity); the struct itself is not freed. Safe to pass NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorFree(t: *mut TfLiteTensor) {
    ffi_boundary!({
        let t = try_mut!(t);
        // SAFETY: the tensor's owned members are malloc'ed (API contract).
        unsafe { tensor_free(t) }
    })
}

/// Frees what `tensor` owns (as `TfLiteTensorFree`), then sets its fields. The tensor takes
/// ownership of `dims` and (if dynamic) of `buffer`; `name` and `allocation` are borrowed
/// and must outlive it. Quantization is reset to none. NULL `tensor` is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorReset(
    r#type: RawTfLiteType,
    name: *const c_char,
    dims: *mut TfLiteIntArray,
    quantization: TfLiteQuantizationParams,
    buffer: *mut c_char,
    size: usize,
    allocation_type: RawTfLiteAllocationType,
    allocation: *const c_void,
    is_variable: bool,
    tensor: *mut TfLiteTensor,
) {
    ffi_boundary!({
        let t = try_mut!(tensor);
        let (Some(r#type), Some(allocation_type)) =
            (TfLiteType::from_raw(r#type), TfLiteAllocationType::from_raw(allocation_type))
        else {
            let msg = format!(
                "TfLiteTensorReset: unknown type {} or allocation type {allocation_type}; tensor unchanged",
                r#type
            );
            super::ffi::report(None, &msg);
            return;
        };
        // SAFETY: as `TfLiteTensorFree`.
        unsafe { tensor_free(t) };
        t.r#type = r#type;
        t.name = name;
        t.dims = dims;
        t.params = quantization;
        t.data.raw = buffer;
        t.bytes = size;
        t.allocation_type = allocation_type;
        t.allocation = allocation;
        t.is_variable = is_variable;
        t.quantization =
            TfLiteQuantization { r#type: TfLiteQuantizationType::kTfLiteNoQuantization, params: core::ptr::null_mut() };
    })
}

/// Copies `src`'s type, shape, data, buffer handle and delegate into `dst`. Both must have
/// the same byte size (kTfLiteError otherwise). Returns kTfLiteOk if either is NULL (as
/// TFLite). Variant tensors are not supported (kTfLiteError).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorCopy(src: *const TfLiteTensor, dst: *mut TfLiteTensor) -> TfLiteStatus {
    ffi_boundary!({
        if src.is_null() || dst.is_null() {
            return TfLiteStatus::kTfLiteOk;
        }
        if core::ptr::eq(src, dst) {
            return TfLiteStatus::kTfLiteOk;
        }
        // SAFETY: distinct live tensors (API contract).
        let (s, d) = unsafe { (&*src, &mut *dst) };
        if s.bytes != d.bytes {
            return TfLiteStatus::kTfLiteError;
        }
        let variant = Some(TfLiteAllocationType::kTfLiteVariantObject);
        if s.allocation() == variant || d.allocation() == variant {
            return TfLiteStatus::kTfLiteError;
        }
        if s.bytes > 0 {
            let (sp, dp) = (s.data_ptr(), d.data_ptr());
            if sp.is_null() || dp.is_null() {
                return TfLiteStatus::kTfLiteError;
            }
            // SAFETY: both buffers hold `bytes` bytes; `copy` tolerates overlap.
            unsafe { core::ptr::copy(sp.cast::<u8>(), dp.cast::<u8>(), s.bytes) };
        }
        d.r#type = s.r#type;
        let new_dims = if s.dims.is_null() {
            core::ptr::null_mut()
        } else {
            // SAFETY: `src.dims` is a live array (checked non-NULL); dst owns its malloc'ed dims.
            int_array_from_slice(unsafe { int_array_slice(s.dims) })
        };
        // SAFETY: dst owns its dims.
        unsafe { int_array_free(d.dims) };
        d.dims = new_dims;
        d.buffer_handle = s.buffer_handle;
        d.data_is_stale = s.data_is_stale;
        d.delegate = s.delegate;
        TfLiteStatus::kTfLiteOk
    })
}

/// # Safety
/// `t`'s data, when dynamic or persistent read-only, must be malloc'ed and owned by it.
unsafe fn resize_maybe_copy(num_bytes: usize, t: &mut TfLiteTensor, preserve_data: bool) -> TfLiteStatus {
    if !matches!(
        t.allocation(),
        Some(TfLiteAllocationType::kTfLiteDynamic) | Some(TfLiteAllocationType::kTfLitePersistentRo)
    ) {
        return TfLiteStatus::kTfLiteOk;
    }
    let Some(alloc_bytes) = num_bytes.checked_add(TENSOR_ALLOCATION_EXTRA_BYTES) else {
        return TfLiteStatus::kTfLiteError;
    };
    let old = t.data_ptr();
    if !old.is_null() && num_bytes <= t.bytes {
        t.bytes = num_bytes;
        return TfLiteStatus::kTfLiteOk;
    }
    let new = if old.is_null() {
        // SAFETY: plain allocation.
        unsafe { libc::malloc(alloc_bytes) }
    } else if preserve_data {
        // SAFETY: `old` is the tensor's malloc'ed buffer (dynamic / persistent-RO).
        unsafe { libc::realloc(old, alloc_bytes) }
    } else {
        // SAFETY: plain allocation.
        unsafe { libc::malloc(alloc_bytes) }
    };
    if new.is_null() {
        return TfLiteStatus::kTfLiteError;
    }
    if !old.is_null() && !preserve_data {
        // SAFETY: the old buffer is owned by the tensor and replaced.
        unsafe { libc::free(old) };
    }
    t.data.data = new;
    t.bytes = num_bytes;
    TfLiteStatus::kTfLiteOk
}

/// Resizes a dynamic (or persistent read-only) tensor's buffer to at least `num_bytes`,
/// keeping its contents if `preserve_data`. Does nothing for other allocation types.
/// Returns kTfLiteError for NULL or when allocation fails.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorResizeMaybeCopy(
    num_bytes: usize,
    tensor: *mut TfLiteTensor,
    preserve_data: bool,
) -> TfLiteStatus {
    ffi_boundary!({
        let t = try_mut!(tensor);
        // SAFETY: forwarded contract.
        unsafe { resize_maybe_copy(num_bytes, t, preserve_data) }
    })
}

/// `TfLiteTensorResizeMaybeCopy(num_bytes, tensor, true)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorRealloc(num_bytes: usize, tensor: *mut TfLiteTensor) -> TfLiteStatus {
    ffi_boundary!({
        let t = try_mut!(tensor);
        // SAFETY: forwarded contract.
        unsafe { resize_maybe_copy(num_bytes, t, true) }
    })
}

/// Returns the tensor's shape signature (-1 for unknown dimensions), or its shape when it
/// has no (or an empty) signature; NULL for NULL. Owned by the tensor.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorGetDimsSignature(t: *const TfLiteTensor) -> *const TfLiteIntArray {
    ffi_boundary!({ dims_signature(try_ref!(t)) })
}

/// The shape signature, falling back to the shape.
pub(crate) fn dims_signature(t: &TfLiteTensor) -> *const TfLiteIntArray {
    // SAFETY: a non-NULL `dims_signature` is a live array owned by the tensor.
    if !t.dims_signature.is_null() && unsafe { (*t.dims_signature).size } != 0 { t.dims_signature } else { t.dims }
}

pub(crate) fn allocation_strategy(t: &TfLiteTensor) -> TfLiteAllocationStrategy {
    use TfLiteAllocationStrategy::*;
    use TfLiteAllocationType::*;
    match t.allocation() {
        Some(kTfLiteMemNone) => kTfLiteAllocationStrategyNone,
        Some(kTfLiteMmapRo) => kTfLiteAllocationStrategyMMap,
        Some(kTfLiteArenaRw | kTfLiteArenaRwPersistent) => kTfLiteAllocationStrategyArena,
        Some(kTfLiteDynamic | kTfLitePersistentRo) => kTfLiteAllocationStrategyMalloc,
        Some(kTfLiteVariantObject) => kTfLiteAllocationStrategyNew,
        Some(kTfLiteCustom | kTfLiteNonCpu) | None => kTfLiteAllocationStrategyUnknown,
    }
}

pub(crate) fn buffer_address_stability(t: &TfLiteTensor) -> TfLiteRunStability {
    use TfLiteAllocationType::*;
    use TfLiteRunStability::*;
    match t.allocation() {
        Some(kTfLiteMemNone | kTfLiteMmapRo | kTfLiteVariantObject) => kTfLiteRunStabilityAcrossRuns,
        Some(kTfLiteArenaRw | kTfLiteArenaRwPersistent) => kTfLiteRunStabilityUnstable,
        Some(kTfLiteDynamic | kTfLitePersistentRo) => kTfLiteRunStabilitySingleRun,
        Some(kTfLiteCustom | kTfLiteNonCpu) | None => kTfLiteRunStabilityUnknown,
    }
}

pub(crate) fn data_stability(t: &TfLiteTensor) -> TfLiteRunStability {
    use TfLiteAllocationType::*;
    use TfLiteRunStability::*;
    match t.allocation() {
        Some(kTfLiteMemNone | kTfLiteMmapRo | kTfLiteArenaRwPersistent) => kTfLiteRunStabilityAcrossRuns,
        Some(kTfLiteArenaRw | kTfLiteDynamic | kTfLitePersistentRo | kTfLiteVariantObject) => {
            kTfLiteRunStabilitySingleRun
        }
        Some(kTfLiteCustom | kTfLiteNonCpu) | None => kTfLiteRunStabilityUnknown,
    }
}

pub(crate) fn data_known_step(t: &TfLiteTensor) -> TfLiteRunStep {
    use TfLiteAllocationType::*;
    use TfLiteRunStep::*;
    match t.allocation() {
        Some(kTfLiteMemNone | kTfLiteMmapRo) => kTfLiteRunStepInit,
        Some(kTfLitePersistentRo) => kTfLiteRunStepPrepare,
        Some(kTfLiteArenaRw | kTfLiteArenaRwPersistent | kTfLiteDynamic | kTfLiteVariantObject) => kTfLiteRunStepEval,
        Some(kTfLiteCustom | kTfLiteNonCpu) | None => kTfLiteRunStepUnknown,
    }
}

pub(crate) fn shape_known_step(t: &TfLiteTensor) -> TfLiteRunStep {
    use TfLiteAllocationType::*;
    use TfLiteRunStep::*;
    match t.allocation() {
        Some(kTfLiteMemNone | kTfLiteMmapRo) => kTfLiteRunStepInit,
        Some(kTfLiteArenaRw | kTfLiteArenaRwPersistent | kTfLitePersistentRo) => kTfLiteRunStepPrepare,
        Some(kTfLiteDynamic | kTfLiteVariantObject) => kTfLiteRunStepEval,
        Some(kTfLiteCustom | kTfLiteNonCpu) | None => kTfLiteRunStepUnknown,
    }
}

/// Returns how the tensor's data is allocated (Unknown for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorGetAllocationStrategy(t: *const TfLiteTensor) -> TfLiteAllocationStrategy {
    ffi_boundary!({ allocation_strategy(try_ref!(t)) })
}

/// Returns how stable the tensor's data address is across runs (Unknown for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorGetBufferAddressStability(t: *const TfLiteTensor) -> TfLiteRunStability {
    ffi_boundary!({ buffer_address_stability(try_ref!(t)) })
}

/// Returns how stable the tensor's data contents are across runs (Unknown for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorGetDataStability(t: *const TfLiteTensor) -> TfLiteRunStability {
    ffi_boundary!({ data_stability(try_ref!(t)) })
}

/// Returns the step at which the tensor's data becomes known (Unknown for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorGetDataKnownStep(t: *const TfLiteTensor) -> TfLiteRunStep {
    ffi_boundary!({ data_known_step(try_ref!(t)) })
}

/// Returns the step at which the tensor's shape becomes known (Unknown for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteTensorGetShapeKnownStep(t: *const TfLiteTensor) -> TfLiteRunStep {
    ffi_boundary!({ shape_known_step(try_ref!(t)) })
}

// ---- delegates ------------------------------------------------------------------------

/// Returns a `TfLiteDelegate` by value with every field zero / NULL
/// (`kTfLiteDelegateFlagsNone`).
#[unsafe(no_mangle)]
pub extern "C" fn TfLiteDelegateCreate() -> TfLiteDelegate {
    empty_delegate()
}

/// Returns a new delegate whose behaviour is `*opaque_delegate_builder` (copied), or NULL
/// if the builder is NULL. The caller owns the result and must call
/// `TfLiteOpaqueDelegateDelete`; it must outlive interpreters it is added to.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueDelegateCreate(
    opaque_delegate_builder: *const TfLiteOpaqueDelegateBuilder,
) -> *mut TfLiteOpaqueDelegate {
    ffi_boundary!({
        if opaque_delegate_builder.is_null() {
            return core::ptr::null_mut();
        }
        // SAFETY: non-NULL and readable (API contract); the builder is plain data
        // (pointers, function pointers, an integer), so a bitwise copy is a valid copy.
        let builder = unsafe { core::ptr::read(opaque_delegate_builder) };
        let mut d = empty_delegate();
        d.opaque_delegate_builder = into_raw(builder);
        into_raw(d)
    })
}

/// Destroys a delegate made by `TfLiteOpaqueDelegateCreate`. Safe to pass NULL. Must not
/// be given a delegate made any other way.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueDelegateDelete(delegate: *mut TfLiteOpaqueDelegate) {
    ffi_boundary!({
        if delegate.is_null() {
            return;
        }
        // SAFETY: non-NULL; came from `Box::into_raw` in `TfLiteOpaqueDelegateCreate`, as did
        // its builder; neither is used afterwards.
        unsafe {
            let d = Box::from_raw(delegate);
            if !d.opaque_delegate_builder.is_null() {
                drop(Box::from_raw(d.opaque_delegate_builder));
            }
        }
    })
}

/// Returns the builder's `data` for a delegate made by `TfLiteOpaqueDelegateCreate`,
/// else the delegate's `data_`; NULL for NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueDelegateGetData(delegate: *const TfLiteOpaqueDelegate) -> *mut c_void {
    ffi_boundary!({
        let d = try_ref!(delegate);
        // SAFETY: a non-NULL builder pointer is a live builder.
        match unsafe { d.opaque_delegate_builder.as_ref() } {
            Some(b) => b.data,
            None => d.data_,
        }
    })
}

const _: () = assert!(size_of::<TfLiteDelegate>() == 56);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_arrays() {
        // SAFETY: every pointer below comes from these functions and is freed once.
        unsafe {
            let a = TfLiteIntArrayCreate(2);
            assert!(!a.is_null());
            int_array_slice_mut(a).copy_from_slice(&[3, 4]);
            let b = TfLiteIntArrayCopy(a);
            assert_eq!(TfLiteIntArrayEqual(a, b), 1);
            assert_eq!(TfLiteIntArrayEqualsArray(a, 2, [3, 4].as_ptr()), 1);
            assert_eq!(TfLiteIntArrayEqualsArray(a, 1, [3].as_ptr()), 0);
            assert_eq!(TfLiteIntArrayEqualsArray(core::ptr::null(), 0, core::ptr::null()), 1);
            assert_eq!(TfLiteIntArrayEqual(a, core::ptr::null()), 0);
            assert_eq!(TfLiteIntArrayEqual(core::ptr::null(), core::ptr::null()), 1);
            assert!(TfLiteIntArrayCopy(core::ptr::null()).is_null());
            assert!(TfLiteIntArrayCreate(-1).is_null());
            TfLiteIntArrayFree(a);
            TfLiteIntArrayFree(b);
            TfLiteIntArrayFree(core::ptr::null_mut());
        }
        assert_eq!(TfLiteIntArrayGetSizeInBytes(3), 16);
        assert_eq!(TfLiteFloatArrayGetSizeInBytes(0), 4);
        assert_eq!(TfLiteIntArrayGetSizeInBytes(-1), 0);
    }

    #[test]
    fn versions_and_names() {
        // SAFETY: static NUL-terminated strings.
        let s = |p: *const c_char| unsafe { core::ffi::CStr::from_ptr(p) }.to_str().unwrap_or("");
        assert_eq!(s(TfLiteVersion()), "2.19.0");
        assert_eq!(s(TfLiteExtensionApisVersion()), "2.19.0");
        assert_eq!(TfLiteSchemaVersion(), 3);
        assert_eq!(s(TfLiteTypeGetName(TfLiteType::kTfLiteFloat32 as c_int)), "FLOAT32");
        assert_eq!(s(TfLiteTypeGetName(49)), "Unknown type");
        assert_eq!(s(TfLiteTypeGetName(-1)), "Unknown type");
        assert_eq!(s(TfLiteTypeGetName(TfLiteType::kTfLiteBFloat16 as c_int)), "BFLOAT16");
    }

    #[test]
    fn stability_tables() {
        use TfLiteAllocationStrategy as S;
        use TfLiteAllocationType::*;
        use TfLiteRunStability as R;
        use TfLiteRunStep as P;
        // (type, strategy, address stability, data stability, data known, shape known):
        // common_test.cc's expectations.
        let table = [
            (
                kTfLiteMemNone,
                S::kTfLiteAllocationStrategyNone,
                R::kTfLiteRunStabilityAcrossRuns,
                R::kTfLiteRunStabilityAcrossRuns,
                P::kTfLiteRunStepInit,
                P::kTfLiteRunStepInit,
            ),
            (
                kTfLiteMmapRo,
                S::kTfLiteAllocationStrategyMMap,
                R::kTfLiteRunStabilityAcrossRuns,
                R::kTfLiteRunStabilityAcrossRuns,
                P::kTfLiteRunStepInit,
                P::kTfLiteRunStepInit,
            ),
            (
                kTfLiteArenaRw,
                S::kTfLiteAllocationStrategyArena,
                R::kTfLiteRunStabilityUnstable,
                R::kTfLiteRunStabilitySingleRun,
                P::kTfLiteRunStepEval,
                P::kTfLiteRunStepPrepare,
            ),
            (
                kTfLiteArenaRwPersistent,
                S::kTfLiteAllocationStrategyArena,
                R::kTfLiteRunStabilityUnstable,
                R::kTfLiteRunStabilityAcrossRuns,
                P::kTfLiteRunStepEval,
                P::kTfLiteRunStepPrepare,
            ),
            (
                kTfLiteDynamic,
                S::kTfLiteAllocationStrategyMalloc,
                R::kTfLiteRunStabilitySingleRun,
                R::kTfLiteRunStabilitySingleRun,
                P::kTfLiteRunStepEval,
                P::kTfLiteRunStepEval,
            ),
            (
                kTfLitePersistentRo,
                S::kTfLiteAllocationStrategyMalloc,
                R::kTfLiteRunStabilitySingleRun,
                R::kTfLiteRunStabilitySingleRun,
                P::kTfLiteRunStepPrepare,
                P::kTfLiteRunStepPrepare,
            ),
            (
                kTfLiteCustom,
                S::kTfLiteAllocationStrategyUnknown,
                R::kTfLiteRunStabilityUnknown,
                R::kTfLiteRunStabilityUnknown,
                P::kTfLiteRunStepUnknown,
                P::kTfLiteRunStepUnknown,
            ),
            (
                kTfLiteVariantObject,
                S::kTfLiteAllocationStrategyNew,
                R::kTfLiteRunStabilityAcrossRuns,
                R::kTfLiteRunStabilitySingleRun,
                P::kTfLiteRunStepEval,
                P::kTfLiteRunStepEval,
            ),
        ];
        for (at, s, a, d, dk, sk) in table {
            let mut t = TfLiteTensor::empty();
            t.allocation_type = at;
            // SAFETY: a live stack tensor.
            unsafe {
                assert_eq!(TfLiteTensorGetAllocationStrategy(&t), s, "{at:?}");
                assert_eq!(TfLiteTensorGetBufferAddressStability(&t), a, "{at:?}");
                assert_eq!(TfLiteTensorGetDataStability(&t), d, "{at:?}");
                assert_eq!(TfLiteTensorGetDataKnownStep(&t), dk, "{at:?}");
                assert_eq!(TfLiteTensorGetShapeKnownStep(&t), sk, "{at:?}");
            }
        }
        assert_eq!(
            // SAFETY: NULL is accepted.
            unsafe { TfLiteTensorGetAllocationStrategy(core::ptr::null()) },
            S::kTfLiteAllocationStrategyUnknown
        );
    }

    #[test]
    fn realloc_and_copy() {
        let mut t = TfLiteTensor::empty();
        // SAFETY: a live stack tensor whose owned members are malloc'ed by these calls.
        unsafe {
            // Not dynamic: a no-op.
            assert_eq!(TfLiteTensorRealloc(8, &mut t), TfLiteStatus::kTfLiteOk);
            assert!(t.data_ptr().is_null());
            t.allocation_type = TfLiteAllocationType::kTfLiteDynamic;
            assert_eq!(TfLiteTensorRealloc(4, &mut t), TfLiteStatus::kTfLiteOk);
            assert_eq!(t.bytes, 4);
            t.data_ptr().cast::<u32>().write_unaligned(0xdead_beef);
            assert_eq!(TfLiteTensorRealloc(64, &mut t), TfLiteStatus::kTfLiteOk);
            assert_eq!(t.data_ptr().cast::<u32>().read_unaligned(), 0xdead_beef);
            assert_eq!(TfLiteTensorRealloc(2, &mut t), TfLiteStatus::kTfLiteOk);
            assert_eq!(t.bytes, 2);
            assert_eq!(TfLiteTensorRealloc(usize::MAX, &mut t), TfLiteStatus::kTfLiteError);
            assert_eq!(TfLiteTensorRealloc(1, core::ptr::null_mut()), TfLiteStatus::kTfLiteError);

            let mut u = TfLiteTensor::empty();
            u.allocation_type = TfLiteAllocationType::kTfLiteDynamic;
            assert_eq!(TfLiteTensorRealloc(2, &mut u), TfLiteStatus::kTfLiteOk);
            t.dims = int_array_from_slice(&[2]);
            assert_eq!(TfLiteTensorCopy(&t, &mut u), TfLiteStatus::kTfLiteOk);
            assert_eq!(int_array_slice(u.dims), &[2]);
            assert_eq!(u.data_ptr().cast::<u16>().read_unaligned(), t.data_ptr().cast::<u16>().read_unaligned());
            assert_eq!(TfLiteTensorRealloc(3, &mut u), TfLiteStatus::kTfLiteOk);
            assert_eq!(TfLiteTensorCopy(&t, &mut u), TfLiteStatus::kTfLiteError);
            assert_eq!(TfLiteTensorCopy(core::ptr::null(), &mut u), TfLiteStatus::kTfLiteOk);

            let dims = int_array_from_slice(&[-1, 3]);
            t.dims_signature = dims;
            assert_eq!(TfLiteTensorGetDimsSignature(&t), dims.cast_const());
            TfLiteTensorFree(&mut t);
            TfLiteTensorFree(&mut u);
            TfLiteTensorFree(core::ptr::null_mut());
            assert!(t.dims.is_null() && t.dims_signature.is_null() && t.data_ptr().is_null());
        }
    }

    #[test]
    fn delegates() {
        let d = TfLiteDelegateCreate();
        assert!(d.data_.is_null() && d.Prepare.is_none() && d.opaque_delegate_builder.is_null() && d.flags == 0);
        let mut data = 7_i32;
        let builder = TfLiteOpaqueDelegateBuilder {
            data: (&raw mut data).cast(),
            Prepare: None,
            CopyFromBufferHandle: None,
            CopyToBufferHandle: None,
            FreeBufferHandle: None,
            flags: 0,
        };
        // SAFETY: pointers from these functions, deleted once.
        unsafe {
            let od = TfLiteOpaqueDelegateCreate(&builder);
            assert!(!od.is_null());
            assert_eq!(TfLiteOpaqueDelegateGetData(od), (&raw mut data).cast());
            TfLiteOpaqueDelegateDelete(od);
            TfLiteOpaqueDelegateDelete(core::ptr::null_mut());
            assert!(TfLiteOpaqueDelegateCreate(core::ptr::null()).is_null());
            let mut plain = TfLiteDelegateCreate();
            plain.data_ = (&raw mut data).cast();
            assert_eq!(TfLiteOpaqueDelegateGetData(&plain), (&raw mut data).cast());
            assert!(TfLiteOpaqueDelegateGetData(core::ptr::null()).is_null());
        }
    }
}
