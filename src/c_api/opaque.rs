//! c_api_opaque.h: the tensor / node / context accessors for custom ops and delegates
//! written against the opaque API.
//!
//! As in TFLite, a `TfLiteOpaqueTensor*` is a `TfLiteTensor*`, a `TfLiteOpaqueNode*` a
//! `TfLiteNode*` and a `TfLiteOpaqueContext*` a `TfLiteContext*` (ABI.md §1); these
//! functions cast and read the C structs. Functions TFLite implements through the
//! context's function table (execution plan, node registrations, node replacement,
//! subgraph contexts, resizing, metadata) call through that table, so the runtime's rules
//! (for example "delegate Prepare only") apply unchanged. The variadic
//! `TfLiteOpaqueContextReportError{,Va}` are in variadic.c.

use super::common;
use super::ffi::{ReportsErrors, into_raw, slice_from_raw, write_out};
use super::tensor;
use crate::abi::arrays::*;
use crate::abi::types::*;
use crate::ffi::{FfiDefault, try_mut, try_ref};
use crate::interpreter::Subgraph;
use crate::interpreter::context::subgraph_from_context;
use core::ffi::{c_char, c_int, c_void};

impl ReportsErrors for TfLiteOpaqueContext {
    unsafe fn report_error(p: *const Self, msg: &str) {
        // SAFETY: per the function contract, NULL or a live runtime context.
        match unsafe { subgraph(p) } {
            Some(sg) => sg.report(msg),
            None => super::ffi::report(None, msg),
        }
    }
}

/// The subgraph behind an opaque context.
///
/// # Safety
/// `c` must be NULL or a live runtime context.
unsafe fn subgraph<'a>(c: *const TfLiteOpaqueContext) -> Option<&'a mut Subgraph> {
    // SAFETY: per the function contract (an opaque context is a `TfLiteContext`).
    unsafe { subgraph_from_context(c.cast()) }
}

/// Tensor `index` of the context's tensor table, if in range.
///
/// # Safety
/// `c` must be NULL or a live context.
unsafe fn context_tensor(c: *const TfLiteContext, index: c_int) -> Option<*mut TfLiteTensor> {
    if c.is_null() {
        return None;
    }
    // SAFETY: live context; read the two fields without keeping a reference.
    let (base, n) = unsafe { ((*c).tensors, (*c).tensors_size) };
    let i = usize::try_from(index).ok().filter(|&i| i < n)?;
    if base.is_null() {
        return None;
    }
    // SAFETY: `i < tensors_size`, the length of the table at `base`.
    Some(unsafe { base.add(i) })
}

// ---- opaque tensor ------------------------------------------------------------------

/// Returns the tensor's element type (`kTfLiteNoType` for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorType(opaque_tensor: *const TfLiteOpaqueTensor) -> TfLiteType {
    ffi_boundary!({ tensor::tensor_type(try_ref!(opaque_tensor)) })
}

/// Returns the number of dimensions (-1 for NULL or no shape).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorNumDims(opaque_tensor: *const TfLiteOpaqueTensor) -> i32 {
    ffi_boundary!(default = -1, { tensor::num_dims(try_ref!(opaque_tensor, else -1)) })
}

/// Returns dimension `dim_index` (-1 for NULL or out of range).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorDim(opaque_tensor: *const TfLiteOpaqueTensor, dim_index: i32) -> i32 {
    ffi_boundary!(default = -1, { tensor::dim(try_ref!(opaque_tensor, else -1), dim_index) })
}

/// Writes the number of dimensions of the shape signature to `*num_dims` (-1 if the tensor
/// has no signature). kTfLiteError for NULL arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorGetNumDimsSignature(
    opaque_tensor: *const TfLiteOpaqueTensor,
    num_dims: *mut i32,
) -> TfLiteStatus {
    ffi_boundary!({
        let t = try_ref!(opaque_tensor);
        if num_dims.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: a non-NULL signature is a live array owned by the tensor.
        let n = if t.dims_signature.is_null() { -1 } else { unsafe { (*t.dims_signature).size } };
        // SAFETY: checked non-NULL.
        unsafe { write_out(num_dims, n) };
        TfLiteStatus::kTfLiteOk
    })
}

/// Writes dimension `dim_index` of the shape signature (or of the shape, when there is no
/// signature) to `*dim_length`. kTfLiteError for NULL arguments or an index out of range.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorGetDimSignature(
    opaque_tensor: *const TfLiteOpaqueTensor,
    dim_index: i32,
    dim_length: *mut i32,
) -> TfLiteStatus {
    ffi_boundary!({
        let t = try_ref!(opaque_tensor);
        if dim_length.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: the signature (or shape) is NULL or a live array owned by the tensor.
        let sig = unsafe { int_array_slice(common::dims_signature(t)) };
        let Some(&v) = usize::try_from(dim_index).ok().and_then(|i| sig.get(i)) else {
            return TfLiteStatus::kTfLiteError;
        };
        // SAFETY: checked non-NULL.
        unsafe { write_out(dim_length, v) };
        TfLiteStatus::kTfLiteOk
    })
}

/// Returns 1 for a variable tensor, else 0 (0 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorIsVariable(opaque_tensor: *const TfLiteOpaqueTensor) -> c_int {
    ffi_boundary!({ c_int::from(try_ref!(opaque_tensor).is_variable) })
}

/// Returns the size of the tensor's data in bytes (0 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorByteSize(opaque_tensor: *const TfLiteOpaqueTensor) -> usize {
    ffi_boundary!({ try_ref!(opaque_tensor).bytes })
}

/// Returns the tensor's data (NULL for NULL). Owned by the runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorData(opaque_tensor: *const TfLiteOpaqueTensor) -> *mut c_void {
    ffi_boundary!({ try_ref!(opaque_tensor).data_ptr() })
}

/// Returns the tensor's allocation type (`kTfLiteMemNone` for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorGetAllocationType(
    opaque_tensor: *const TfLiteOpaqueTensor,
) -> TfLiteAllocationType {
    ffi_boundary!({ try_ref!(opaque_tensor).allocation().unwrap_or(TfLiteAllocationType::kTfLiteMemNone) })
}

/// As `TfLiteTensorGetAllocationStrategy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorGetAllocationStrategy(
    t: *const TfLiteOpaqueTensor,
) -> TfLiteAllocationStrategy {
    ffi_boundary!({ common::allocation_strategy(try_ref!(t)) })
}

/// As `TfLiteTensorGetBufferAddressStability`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorGetBufferAddressStability(
    t: *const TfLiteOpaqueTensor,
) -> TfLiteRunStability {
    ffi_boundary!({ common::buffer_address_stability(try_ref!(t)) })
}

/// As `TfLiteTensorGetDataStability`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorGetDataStability(t: *const TfLiteOpaqueTensor) -> TfLiteRunStability {
    ffi_boundary!({ common::data_stability(try_ref!(t)) })
}

/// As `TfLiteTensorGetDataKnownStep`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorGetDataKnownStep(t: *const TfLiteOpaqueTensor) -> TfLiteRunStep {
    ffi_boundary!({ common::data_known_step(try_ref!(t)) })
}

/// As `TfLiteTensorGetShapeKnownStep`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorGetShapeKnownStep(t: *const TfLiteOpaqueTensor) -> TfLiteRunStep {
    ffi_boundary!({ common::shape_known_step(try_ref!(t)) })
}

/// Returns the tensor's name (NULL for NULL or unnamed). Owned by the runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorName(opaque_tensor: *const TfLiteOpaqueTensor) -> *const c_char {
    ffi_boundary!({ try_ref!(opaque_tensor).name })
}

/// Returns the tensor's quantization by value (its `params` stay owned by the tensor;
/// `kTfLiteNoQuantization` for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorGetQuantization(
    opaque_tensor: *const TfLiteOpaqueTensor,
) -> TfLiteQuantization {
    ffi_boundary!({ try_ref!(opaque_tensor).quantization })
}

/// Returns the tensor's per-tensor quantization parameters ({0, 0} for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorGetQuantizationParams(
    opaque_tensor: *const TfLiteOpaqueTensor,
) -> TfLiteQuantizationParams {
    ffi_boundary!({ try_ref!(opaque_tensor).params })
}

/// As `TfLiteTensorCopyFromBuffer`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorCopyFromBuffer(
    opaque_tensor: *mut TfLiteOpaqueTensor,
    input_data: *const c_void,
    input_data_size: usize,
) -> TfLiteStatus {
    ffi_boundary!({
        let t = try_mut!(opaque_tensor);
        // SAFETY: forwarded contract.
        unsafe { tensor::copy_from_buffer(t, input_data, input_data_size) }
    })
}

/// As `TfLiteTensorCopyToBuffer`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorCopyToBuffer(
    opaque_tensor: *const TfLiteOpaqueTensor,
    output_data: *mut c_void,
    output_data_size: usize,
) -> TfLiteStatus {
    ffi_boundary!({
        let t = try_ref!(opaque_tensor);
        // SAFETY: forwarded contract.
        unsafe { tensor::copy_to_buffer(t, output_data, output_data_size) }
    })
}

/// The bytes of a tensor's data (empty if it has none).
fn tensor_bytes(t: &TfLiteTensor) -> &[u8] {
    let p = t.data_ptr();
    if p.is_null() || t.bytes == 0 {
        return &[];
    }
    // SAFETY: a tensor's non-NULL data holds `bytes` readable bytes.
    unsafe { core::slice::from_raw_parts(p.cast::<u8>(), t.bytes) }
}

fn read_i32(b: &[u8], at: usize) -> Option<i32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(i32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

/// String `index` of a string tensor as (offset, length) within its data, validated.
fn string_at(b: &[u8], index: i32) -> Option<(usize, usize)> {
    let count = read_i32(b, 0)?;
    if index < 0 || index >= count {
        return None;
    }
    let i = usize::try_from(index).ok()?;
    let start = usize::try_from(read_i32(b, 4 + 4 * i)?).ok()?;
    let end = usize::try_from(read_i32(b, 8 + 4 * i)?).ok()?;
    (start <= end && end <= b.len()).then_some((start, end - start))
}

/// Returns the number of strings in a string tensor (0 for NULL or a tensor without data).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorGetStringCount(tensor: *const TfLiteOpaqueTensor) -> c_int {
    ffi_boundary!({
        let t = try_ref!(tensor);
        read_i32(tensor_bytes(t), 0).unwrap_or(0).max(0)
    })
}

/// Writes string `index` of a string tensor to `*str` / `*len` (not NUL-terminated; may
/// contain NULs; owned by the tensor). kTfLiteError for NULL arguments or an index out of
/// range.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorGetString(
    tensor: *const TfLiteOpaqueTensor,
    index: c_int,
    str: *mut *const c_char,
    len: *mut c_int,
) -> TfLiteStatus {
    ffi_boundary!({
        let t = try_ref!(tensor);
        if str.is_null() || len.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        let b = tensor_bytes(t);
        let Some((off, n)) = string_at(b, index) else { return TfLiteStatus::kTfLiteError };
        let Ok(n) = c_int::try_from(n) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: out-pointers checked non-NULL; `off <= b.len()` (validated).
        unsafe {
            write_out(str, b.as_ptr().add(off).cast::<c_char>());
            write_out(len, n);
        }
        TfLiteStatus::kTfLiteOk
    })
}

/// Replaces the contents of a string tensor with `str_array[i]` (`str_n_len[i]` bytes
/// each), making it a dynamic tensor of shape `[str_array_len]`. The strings are copied.
/// kTfLiteError for NULL arguments or negative lengths.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorWriteStrings(
    tensor: *mut TfLiteOpaqueTensor,
    str_array: *const *const c_char,
    str_array_len: c_int,
    str_n_len: *const c_int,
) -> TfLiteStatus {
    ffi_boundary!({
        let t = try_mut!(tensor);
        // SAFETY: forwarded contract.
        unsafe { write_strings(t, str_array, str_array_len, str_n_len) }
    })
}

/// Replaces the contents of a string tensor with one string (`len` bytes of `str`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorWriteString(
    tensor: *mut TfLiteOpaqueTensor,
    str: *const c_char,
    len: c_int,
) -> TfLiteStatus {
    ffi_boundary!({
        let t = try_mut!(tensor);
        // SAFETY: forwarded contract; the one-element arrays live for the call.
        unsafe { write_strings(t, &str, 1, &len) }
    })
}

/// # Safety
/// The tensor's owned members are NULL or malloc'ed; the arrays are NULL or hold `n`
/// readable elements, each string `str_n_len[i]` readable bytes.
unsafe fn write_strings(
    t: &mut TfLiteTensor,
    strs: *const *const c_char,
    n: c_int,
    lens: *const c_int,
) -> TfLiteStatus {
    let Ok(count) = usize::try_from(n) else { return TfLiteStatus::kTfLiteError };
    // SAFETY: per the function contract.
    let (Some(strs), Some(lens)) = (unsafe { slice_from_raw(strs, count) }, unsafe { slice_from_raw(lens, count) })
    else {
        return TfLiteStatus::kTfLiteError;
    };
    let mut pieces: Vec<&[u8]> = Vec::with_capacity(count);
    for (&s, &l) in strs.iter().zip(lens) {
        let Ok(l) = usize::try_from(l) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: each string has `l` readable bytes, per the function contract.
        let Some(bytes) = (unsafe { slice_from_raw(s.cast::<u8>(), l) }) else { return TfLiteStatus::kTfLiteError };
        pieces.push(bytes);
    }
    // Layout (TFLite string_util): count, count + 1 offsets, then the bytes.
    let header = 4 * (count + 2);
    let total: usize = header + pieces.iter().map(|p| p.len()).sum::<usize>();
    if i32::try_from(total).is_err() {
        return TfLiteStatus::kTfLiteError;
    }
    let mut buf = Vec::with_capacity(total);
    buf.extend_from_slice(&(count as i32).to_ne_bytes());
    let mut off = header;
    for p in &pieces {
        buf.extend_from_slice(&(off as i32).to_ne_bytes());
        off += p.len();
    }
    buf.extend_from_slice(&(off as i32).to_ne_bytes());
    for p in &pieces {
        buf.extend_from_slice(p);
    }
    // SAFETY: plain allocation (at least 1 byte so the result is non-NULL), checked.
    let data = unsafe { libc::malloc(total.max(1)) }.cast::<u8>();
    if data.is_null() {
        return TfLiteStatus::kTfLiteError;
    }
    // SAFETY: `data` has room for `total` bytes.
    unsafe { core::ptr::copy_nonoverlapping(buf.as_ptr(), data, total) };
    let dims = int_array_from_slice(&[n]);
    if dims.is_null() {
        // SAFETY: allocated above, not handed out.
        unsafe { libc::free(data.cast()) };
        return TfLiteStatus::kTfLiteError;
    }
    let (ty, name, params, allocation, is_variable) = (t.r#type, t.name, t.params, t.allocation, t.is_variable);
    // As TFLite's DynamicBuffer::WriteToTensor: free what the tensor owns, then reset it
    // as a dynamic tensor owning the new buffer and shape.
    // SAFETY: the tensor's owned members are NULL or malloc'ed (runtime invariant).
    unsafe { common::tensor_free(t) };
    t.r#type = ty;
    t.name = name;
    t.dims = dims;
    t.params = params;
    t.data.data = data.cast();
    t.bytes = total;
    t.allocation_type = TfLiteAllocationType::kTfLiteDynamic;
    t.allocation = allocation;
    t.is_variable = is_variable;
    TfLiteStatus::kTfLiteOk
}

/// Makes the tensor dynamic (its arena memory, if any, is no longer used; allocate with
/// `TfLiteOpaqueContextResizeTensor`). Ignored for NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorSetAllocationTypeToDynamic(tensor: *mut TfLiteOpaqueTensor) {
    ffi_boundary!({
        let t = try_mut!(tensor);
        if t.allocation() != Some(TfLiteAllocationType::kTfLiteDynamic) {
            // SAFETY: the tensor's dynamic data (if any) is malloc'ed and owned by it.
            unsafe { common::tensor_data_free(t) };
            t.allocation_type = TfLiteAllocationType::kTfLiteDynamic;
        }
    })
}

/// Marks the tensor's memory as living outside the CPU (`kTfLiteNonCpu`). Ignored for
/// NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorSetNonCpuAllocation(tensor: *mut TfLiteOpaqueTensor) {
    ffi_boundary!({ try_mut!(tensor).allocation_type = TfLiteAllocationType::kTfLiteNonCpu })
}

// ---- tensor builder -------------------------------------------------------------------

/// The description of a tensor for `TfLiteOpaqueContextAddTensor`. Opaque to C.
pub struct TfLiteOpaqueTensorBuilder {
    /// As C passed them; checked when the tensor is added.
    r#type: RawTfLiteType,
    data: *mut c_void,
    allocation_type: RawTfLiteAllocationType,
    quantization_params: TfLiteQuantizationParams,
    quantization: TfLiteQuantization,
}

// SAFETY: pointers to a `TfLiteOpaqueTensorBuilder` point to one.
unsafe impl crate::ffi::Handle for TfLiteOpaqueTensorBuilder {
    type Target = Self;
}

/// Returns a new tensor builder (no type, no data, `kTfLiteMemNone`), or NULL on failure.
/// The caller owns it and must call `TfLiteOpaqueTensorBuilderDelete`.
#[unsafe(no_mangle)]
pub extern "C" fn TfLiteOpaqueTensorBuilderCreate() -> *mut TfLiteOpaqueTensorBuilder {
    ffi_boundary!({
        into_raw(TfLiteOpaqueTensorBuilder {
            r#type: TfLiteType::kTfLiteNoType as RawTfLiteType,
            data: core::ptr::null_mut(),
            allocation_type: TfLiteAllocationType::kTfLiteMemNone as RawTfLiteAllocationType,
            quantization_params: TfLiteQuantizationParams::default(),
            quantization: FfiDefault::ffi_default(),
        })
    })
}

/// Destroys a tensor builder. Safe to pass NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorBuilderDelete(builder: *mut TfLiteOpaqueTensorBuilder) {
    ffi_delete!(builder)
}

/// Sets the element type. Returns `builder` (for chaining).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorBuilderSetType(
    builder: *mut TfLiteOpaqueTensorBuilder,
    r#type: RawTfLiteType,
) -> *mut TfLiteOpaqueTensorBuilder {
    ffi_boundary!({
        try_mut!(builder).r#type = r#type;
        builder
    })
}

/// Sets the data pointer (required for `kTfLiteDynamic`, forbidden for arena tensors; a
/// dynamic tensor takes ownership of malloc'ed data). Returns `builder`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorBuilderSetData(
    builder: *mut TfLiteOpaqueTensorBuilder,
    data: *mut c_void,
) -> *mut TfLiteOpaqueTensorBuilder {
    ffi_boundary!({
        try_mut!(builder).data = data;
        builder
    })
}

/// Sets the allocation type: `kTfLiteDynamic`, `kTfLiteArenaRw` or
/// `kTfLiteArenaRwPersistent` (others make `TfLiteOpaqueContextAddTensor` fail). Returns
/// `builder`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorBuilderSetAllocationType(
    builder: *mut TfLiteOpaqueTensorBuilder,
    allocation_type: RawTfLiteAllocationType,
) -> *mut TfLiteOpaqueTensorBuilder {
    ffi_boundary!({
        try_mut!(builder).allocation_type = allocation_type;
        builder
    })
}

/// Sets the per-tensor quantization parameters. Returns `builder`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorBuilderSetQuantizationParams(
    builder: *mut TfLiteOpaqueTensorBuilder,
    params: TfLiteQuantizationParams,
) -> *mut TfLiteOpaqueTensorBuilder {
    ffi_boundary!({
        try_mut!(builder).quantization_params = params;
        builder
    })
}

/// Sets the quantization; the tensor added from this builder takes ownership of
/// `quantization.params` (malloc'ed). Returns `builder`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueTensorBuilderSetQuantization(
    builder: *mut TfLiteOpaqueTensorBuilder,
    quantization: TfLiteQuantization,
) -> *mut TfLiteOpaqueTensorBuilder {
    ffi_boundary!({
        try_mut!(builder).quantization = quantization;
        builder
    })
}

// ---- opaque node ----------------------------------------------------------------------

/// Node input `index` as a tensor of `context`, or NULL (absent optional input, index
/// out of range, NULL arguments).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueNodeGetInput(
    opaque_context: *const TfLiteOpaqueContext,
    opaque_node: *const TfLiteOpaqueNode,
    index: c_int,
) -> *const TfLiteOpaqueTensor {
    ffi_boundary!({
        let n = try_ref!(opaque_node);
        // SAFETY: the node's arrays are live and owned by it.
        let ins = unsafe { int_array_slice(n.inputs) };
        let Some(&t) = usize::try_from(index).ok().and_then(|i| ins.get(i)) else { return core::ptr::null() };
        // SAFETY: NULL or a live context.
        unsafe { context_tensor(opaque_context.cast(), t) }.map_or(core::ptr::null(), |p| p.cast_const().cast())
    })
}

/// Node output `index` as a tensor of `context`, or NULL (index out of range, NULL
/// arguments).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueNodeGetOutput(
    opaque_context: *mut TfLiteOpaqueContext,
    opaque_node: *const TfLiteOpaqueNode,
    index: c_int,
) -> *mut TfLiteOpaqueTensor {
    ffi_boundary!({
        let n = try_ref!(opaque_node);
        // SAFETY: the node's arrays are live and owned by it.
        let outs = unsafe { int_array_slice(n.outputs) };
        let Some(&t) = usize::try_from(index).ok().and_then(|i| outs.get(i)) else { return core::ptr::null_mut() };
        // SAFETY: NULL or a live context.
        unsafe { context_tensor(opaque_context.cast_const().cast(), t) }.map_or(core::ptr::null_mut(), |p| p.cast())
    })
}

/// Returns the number of node inputs (-1 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueNodeNumberOfInputs(opaque_node: *const TfLiteOpaqueNode) -> c_int {
    ffi_boundary!(default = -1, {
        let n = try_ref!(opaque_node, else -1);
        // SAFETY: the node owns its arrays.
        unsafe { int_array_slice(n.inputs) }.len() as c_int
    })
}

/// Returns the number of node outputs (-1 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueNodeNumberOfOutputs(opaque_node: *const TfLiteOpaqueNode) -> c_int {
    ffi_boundary!(default = -1, {
        let n = try_ref!(opaque_node, else -1);
        // SAFETY: the node owns its arrays.
        unsafe { int_array_slice(n.outputs) }.len() as c_int
    })
}

/// Returns what the operator's `init` returned for this node (NULL for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueNodeGetUserData(opaque_node: *const TfLiteOpaqueNode) -> *mut c_void {
    ffi_boundary!({ try_ref!(opaque_node).user_data })
}

/// Returns the node's builtin parameters (a `TfLite*Params` struct), or NULL. Owned by the
/// runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueNodeGetBuiltinData(opaque_node: *const TfLiteOpaqueNode) -> *mut c_void {
    ffi_boundary!({ try_ref!(opaque_node).builtin_data })
}

/// Writes the node's custom options and their size to `*init_data` / `*size` (NULL / 0
/// when there are none). Owned by the runtime. kTfLiteError for NULL arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueNodeGetCustomInitialData(
    opaque_node: *const TfLiteOpaqueNode,
    init_data: *mut *const c_void,
    size: *mut c_int,
) -> TfLiteStatus {
    ffi_boundary!({
        let n = try_ref!(opaque_node);
        if init_data.is_null() || size.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: out-pointers checked non-NULL.
        unsafe {
            write_out(init_data, n.custom_initial_data);
            write_out(size, n.custom_initial_data_size);
        }
        TfLiteStatus::kTfLiteOk
    })
}

/// Writes an int array's data pointer and size through out-pointers.
///
/// # Safety
/// `a` NULL or a live array; out-pointers NULL or writable.
unsafe fn array_out(a: *const TfLiteIntArray, data: *mut *const c_int, size: *mut c_int) -> TfLiteStatus {
    if data.is_null() || size.is_null() {
        return TfLiteStatus::kTfLiteError;
    }
    // SAFETY: per the function contract.
    let s = unsafe { int_array_slice(a) };
    // SAFETY: out-pointers checked non-NULL.
    unsafe {
        write_out(data, if a.is_null() { core::ptr::null() } else { s.as_ptr() });
        write_out(size, s.len() as c_int);
    }
    TfLiteStatus::kTfLiteOk
}

/// Writes the node's input tensor indices and their count. Owned by the runtime.
/// kTfLiteError for NULL arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueNodeInputs(
    opaque_node: *const TfLiteOpaqueNode,
    inputs: *mut *const c_int,
    num_inputs: *mut c_int,
) -> TfLiteStatus {
    ffi_boundary!({
        let n = try_ref!(opaque_node);
        // SAFETY: the node owns its arrays; out-pointers are the caller's.
        unsafe { array_out(n.inputs, inputs, num_inputs) }
    })
}

/// Writes the node's output tensor indices and their count. Owned by the runtime.
/// kTfLiteError for NULL arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueNodeOutputs(
    opaque_node: *const TfLiteOpaqueNode,
    outputs: *mut *const c_int,
    num_outputs: *mut c_int,
) -> TfLiteStatus {
    ffi_boundary!({
        let n = try_ref!(opaque_node);
        // SAFETY: the node owns its arrays; out-pointers are the caller's.
        unsafe { array_out(n.outputs, outputs, num_outputs) }
    })
}

/// Replaces the node's temporary tensor indices with a copy of
/// `temporaries[0..num_temporaries]`. kTfLiteError for a negative count or NULL
/// arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueNodeSetTemporaries(
    opaque_node: *mut TfLiteOpaqueNode,
    temporaries: *const c_int,
    num_temporaries: c_int,
) -> TfLiteStatus {
    ffi_boundary!({
        let n = try_mut!(opaque_node);
        let Ok(count) = usize::try_from(num_temporaries) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: `temporaries` has `num_temporaries` readable ints (API contract).
        let Some(values) = (unsafe { slice_from_raw(temporaries, count) }) else { return TfLiteStatus::kTfLiteError };
        let arr = int_array_from_slice(values);
        if arr.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: the node owns its malloc'ed temporaries array, replaced here.
        unsafe { int_array_free(n.temporaries) };
        n.temporaries = arr;
        TfLiteStatus::kTfLiteOk
    })
}

/// Writes the node's temporary tensor indices and their count. Owned by the runtime.
/// kTfLiteError for NULL arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueNodeTemporaries(
    opaque_node: *const TfLiteOpaqueNode,
    temporaries: *mut *const c_int,
    num_temporaries: *mut c_int,
) -> TfLiteStatus {
    ffi_boundary!({
        let n = try_ref!(opaque_node);
        // SAFETY: the node owns its arrays; out-pointers are the caller's.
        unsafe { array_out(n.temporaries, temporaries, num_temporaries) }
    })
}

/// Returns the tensor index of node input `index_of_input`, or -1 if out of range (or
/// NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueNodeGetInputTensorIndex(
    opaque_node: *const TfLiteOpaqueNode,
    index_of_input: c_int,
) -> c_int {
    ffi_boundary!(default = -1, {
        let n = try_ref!(opaque_node, else -1);
        // SAFETY: the node owns its arrays.
        let a = unsafe { int_array_slice(n.inputs) };
        usize::try_from(index_of_input).ok().and_then(|i| a.get(i).copied()).unwrap_or(-1)
    })
}

/// Returns the tensor index of node output `index_of_output`, or -1 if out of range (or
/// NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueNodeGetOutputTensorIndex(
    opaque_node: *const TfLiteOpaqueNode,
    index_of_output: c_int,
) -> c_int {
    ffi_boundary!(default = -1, {
        let n = try_ref!(opaque_node, else -1);
        // SAFETY: the node owns its arrays.
        let a = unsafe { int_array_slice(n.outputs) };
        usize::try_from(index_of_output).ok().and_then(|i| a.get(i).copied()).unwrap_or(-1)
    })
}

// ---- opaque context -------------------------------------------------------------------

fn as_ctx(c: *mut TfLiteOpaqueContext) -> *mut TfLiteContext {
    c.cast()
}

/// Writes the execution plan (node indices; owned by the runtime, valid until the graph
/// changes) to `*execution_plan`. Only valid during a delegate's Prepare.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextGetExecutionPlan(
    opaque_context: *mut TfLiteOpaqueContext,
    execution_plan: *mut *mut TfLiteIntArray,
) -> TfLiteStatus {
    ffi_boundary!(report_to = opaque_context, {
        let ctx = as_ctx(opaque_context);
        if ctx.is_null() || execution_plan.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: live context; copy the function pointer without keeping a reference.
        let Some(f) = (unsafe { (*ctx).GetExecutionPlan }) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: calling the runtime's own context function with its context.
        unsafe { f(ctx, execution_plan) }
    })
}

/// Writes the external context of type `type` (or NULL if none is set) to
/// `*external_context`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextGetExternalContext(
    opaque_context: *mut TfLiteOpaqueContext,
    external_context: *mut *mut c_void,
    r#type: RawTfLiteExternalContextType,
) -> TfLiteStatus {
    ffi_boundary!(report_to = opaque_context, {
        let ctx = as_ctx(opaque_context);
        if ctx.is_null() || external_context.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: live context; copy the function pointer.
        let Some(f) = (unsafe { (*ctx).GetExternalContext }) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: runtime function with its own context; out-pointer checked non-NULL.
        unsafe { write_out(external_context, f(ctx, r#type).cast()) };
        TfLiteStatus::kTfLiteOk
    })
}

/// Writes node `node_index` and its operator to `*node` / `*registration_external`. For
/// builtin kernels the operator is made by the runtime (owned by it; its builtin code,
/// custom name and version can be queried). Only valid during a delegate's Prepare.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextGetNodeAndRegistration(
    opaque_context: *mut TfLiteOpaqueContext,
    node_index: c_int,
    node: *mut *mut TfLiteOpaqueNode,
    registration_external: *mut *mut TfLiteOperator,
) -> TfLiteStatus {
    ffi_boundary!(report_to = opaque_context, {
        let ctx = as_ctx(opaque_context);
        if ctx.is_null() || node.is_null() || registration_external.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: live context; copy the function pointer.
        let Some(f) = (unsafe { (*ctx).GetNodeAndRegistration }) else { return TfLiteStatus::kTfLiteError };
        let mut n: *mut TfLiteNode = core::ptr::null_mut();
        let mut r: *mut TfLiteRegistration = core::ptr::null_mut();
        // SAFETY: runtime function with its own context and local out-pointers.
        let status = unsafe { f(ctx, node_index, &mut n, &mut r) };
        if status != TfLiteStatus::kTfLiteOk {
            return status;
        }
        // SAFETY: on success the runtime returned a live registration (or NULL).
        let Some(reg) = (unsafe { r.as_ref() }) else { return TfLiteStatus::kTfLiteError };
        let op = if reg.registration_external.is_null() {
            super::operator::operator_for_registration(reg)
        } else {
            reg.registration_external
        };
        // SAFETY: out-pointers checked non-NULL.
        unsafe {
            write_out(node, n.cast());
            write_out(registration_external, op);
        }
        TfLiteStatus::kTfLiteOk
    })
}

/// Replaces the nodes in `nodes_to_replace` with kernels of `registration_external`: the
/// execution plan is partitioned and each delegated partition becomes one node whose
/// `init` receives a `TfLiteOpaqueDelegateParams*` (delegate, the builder's data, the
/// partition's nodes, input and output tensors). When `opaque_delegate` was made by
/// `TfLiteOpaqueDelegateCreate` the runtime takes ownership of `registration_external`
/// (even when no node is replaced); the caller must not delete it. Only valid during a
/// delegate's Prepare.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextReplaceNodeSubsetsWithDelegateKernels(
    opaque_context: *mut TfLiteOpaqueContext,
    registration_external: *mut TfLiteOperator,
    nodes_to_replace: *const TfLiteIntArray,
    opaque_delegate: *mut TfLiteOpaqueDelegate,
) -> TfLiteStatus {
    ffi_boundary!(report_to = opaque_context, {
        let ctx = as_ctx(opaque_context);
        if ctx.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: live context; copy the function pointer.
        let Some(f) = (unsafe { (*ctx).ReplaceNodeSubsetsWithDelegateKernels }) else {
            return TfLiteStatus::kTfLiteError;
        };
        let registration = TfLiteRegistration { registration_external, ..TfLiteRegistration::empty() };
        // SAFETY: runtime function with its own context; the other arguments are passed on
        // unchanged under the same contract.
        unsafe { f(ctx, registration, nodes_to_replace, opaque_delegate) }
    })
}

/// Returns tensor `index` of the context, or NULL if out of range. Owned by the runtime;
/// invalidated when tensors are added.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextGetOpaqueTensor(
    opaque_context: *const TfLiteOpaqueContext,
    index: c_int,
) -> *mut TfLiteOpaqueTensor {
    ffi_boundary!(report_to = opaque_context, {
        // SAFETY: NULL or a live context.
        unsafe { context_tensor(opaque_context.cast(), index) }.map_or(core::ptr::null_mut(), |p| p.cast())
    })
}

/// # Safety
/// `c` NULL or a live context; out-pointers NULL or writable.
unsafe fn list_out(
    c: *const TfLiteOpaqueContext,
    pick: impl FnOnce(&Subgraph) -> &[i32],
    data: *mut *const c_int,
    size: *mut c_int,
) -> TfLiteStatus {
    if data.is_null() || size.is_null() {
        return TfLiteStatus::kTfLiteError;
    }
    // SAFETY: per the function contract.
    let Some(sg) = (unsafe { subgraph(c) }) else { return TfLiteStatus::kTfLiteError };
    let v = pick(sg);
    // SAFETY: out-pointers checked non-NULL; the list is owned by the subgraph.
    unsafe {
        write_out(data, v.as_ptr());
        write_out(size, v.len() as c_int);
    }
    TfLiteStatus::kTfLiteOk
}

/// Writes the subgraph's input tensor indices and count. Owned by the runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextGetInputs(
    opaque_context: *const TfLiteOpaqueContext,
    inputs: *mut *const c_int,
    num_inputs: *mut c_int,
) -> TfLiteStatus {
    ffi_boundary!(report_to = opaque_context, {
        // SAFETY: forwarded contract.
        unsafe { list_out(opaque_context, |s| s.inputs(), inputs, num_inputs) }
    })
}

/// Writes the subgraph's output tensor indices and count. Owned by the runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextGetOutputs(
    opaque_context: *const TfLiteOpaqueContext,
    outputs: *mut *const c_int,
    num_outputs: *mut c_int,
) -> TfLiteStatus {
    ffi_boundary!(report_to = opaque_context, {
        // SAFETY: forwarded contract.
        unsafe { list_out(opaque_context, |s| s.outputs(), outputs, num_outputs) }
    })
}

/// Writes the subgraph's variable tensor indices and count. Owned by the runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextGetVariables(
    opaque_context: *const TfLiteOpaqueContext,
    variables: *mut *const c_int,
    num_variables: *mut c_int,
) -> TfLiteStatus {
    ffi_boundary!(report_to = opaque_context, {
        // SAFETY: forwarded contract.
        unsafe { list_out(opaque_context, |s| s.variables(), variables, num_variables) }
    })
}

/// Returns the number of nodes of the subgraph (0 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextGetNumNodes(opaque_context: *const TfLiteOpaqueContext) -> usize {
    ffi_boundary!(report_to = opaque_context, {
        // SAFETY: NULL or a live context.
        unsafe { subgraph(opaque_context) }.map_or(0, |s| s.nodes_len())
    })
}

/// Returns the number of tensors of the subgraph (0 for NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextGetNumTensors(opaque_context: *const TfLiteOpaqueContext) -> usize {
    ffi_boundary!(report_to = opaque_context, {
        // SAFETY: NULL or a live context.
        unsafe { subgraph(opaque_context) }.map_or(0, |s| s.tensors_len())
    })
}

/// Returns the subgraph's name (NULL for NULL). Owned by the runtime.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextGetName(opaque_context: *const TfLiteOpaqueContext) -> *const c_char {
    ffi_boundary!(report_to = opaque_context, {
        // SAFETY: NULL or a live context.
        unsafe { subgraph(opaque_context) }.map_or(core::ptr::null(), |s| s.name().as_ptr())
    })
}

/// Resizes `tensor` to `new_size`. Takes ownership of `new_size` in every case.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextResizeTensor(
    context: *mut TfLiteOpaqueContext,
    tensor: *mut TfLiteOpaqueTensor,
    new_size: *mut TfLiteIntArray,
) -> TfLiteStatus {
    ffi_boundary!(report_to = context, {
        let ctx = as_ctx(context);
        // SAFETY: NULL or a live context; copy the function pointer.
        let f = if ctx.is_null() { None } else { unsafe { (*ctx).ResizeTensor } };
        let Some(f) = f else {
            // SAFETY: we own `new_size` (malloc'ed by the caller) and must release it.
            unsafe { int_array_free(new_size) };
            return TfLiteStatus::kTfLiteError;
        };
        // SAFETY: runtime function with its own context; it takes ownership of `new_size`.
        unsafe { f(ctx, tensor.cast(), new_size) }
    })
}

/// Writes the context of subgraph `subgraph_index` to `*acquired_opaque_context`; pair with
/// `TfLiteOpaqueContextReleaseSubgraphContext`. Only valid during a delegate's Prepare.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextAcquireSubgraphContext(
    opaque_context: *mut TfLiteOpaqueContext,
    subgraph_index: c_int,
    acquired_opaque_context: *mut *mut TfLiteOpaqueContext,
) -> TfLiteStatus {
    ffi_boundary!(report_to = opaque_context, {
        let ctx = as_ctx(opaque_context);
        if ctx.is_null() || acquired_opaque_context.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: live context; copy the function pointer.
        let Some(f) = (unsafe { (*ctx).AcquireSubgraphContext }) else { return TfLiteStatus::kTfLiteError };
        let mut acquired: *mut TfLiteContext = core::ptr::null_mut();
        // SAFETY: runtime function with its own context and a local out-pointer.
        let status = unsafe { f(ctx, subgraph_index, &mut acquired) };
        if status == TfLiteStatus::kTfLiteOk {
            // SAFETY: checked non-NULL.
            unsafe { write_out(acquired_opaque_context, acquired.cast()) };
        }
        status
    })
}

/// Releases a context acquired with `TfLiteOpaqueContextAcquireSubgraphContext`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextReleaseSubgraphContext(
    opaque_context: *mut TfLiteOpaqueContext,
    subgraph_index: c_int,
) -> TfLiteStatus {
    ffi_boundary!(report_to = opaque_context, {
        let ctx = as_ctx(opaque_context);
        if ctx.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: live context; copy the function pointer.
        let Some(f) = (unsafe { (*ctx).ReleaseSubgraphContext }) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: runtime function with its own context.
        unsafe { f(ctx, subgraph_index) }
    })
}

/// Marks subgraph `subgraph_index` (> 0) as not needing delegation: delegates applied to
/// the interpreter afterwards skip it. Only valid during a delegate's Prepare.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextMarkSubgraphAsDelegationSkippable(
    opaque_context: *mut TfLiteOpaqueContext,
    subgraph_index: c_int,
) -> TfLiteStatus {
    ffi_boundary!(report_to = opaque_context, {
        // SAFETY: NULL or a live context.
        let Some(sg) = (unsafe { subgraph(opaque_context) }) else { return TfLiteStatus::kTfLiteError };
        if !sg.mark_sibling_delegation_skippable(subgraph_index) {
            sg.report(&format!("MarkSubgraphAsDelegationSkippable: subgraph index {subgraph_index} is invalid"));
            return TfLiteStatus::kTfLiteError;
        }
        TfLiteStatus::kTfLiteOk
    })
}

/// Would give the file descriptor, offset and size of the node's custom options inside a
/// memory-mapped model file. This runtime does not expose its mapping: always
/// kTfLiteError (TFLite's answer when the model is not an mmapped file); nothing is
/// written.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextGetNodeInitDataMmapInfo(
    context: *const TfLiteOpaqueContext,
    node: *const TfLiteOpaqueNode,
    fd: *mut c_int,
    custom_initial_data_offset_in_file: *mut i64,
    custom_initial_data_size: *mut i64,
) -> TfLiteStatus {
    ffi_boundary!(report_to = context, {
        let _ = (context, node, fd, custom_initial_data_offset_in_file, custom_initial_data_size);
        TfLiteStatus::kTfLiteError
    })
}

/// Adds a tensor described by `builder` (the builder is only read; delete it afterwards)
/// and writes its index to `*new_tensor_index` (if not NULL). The allocation type must be
/// `kTfLiteDynamic` (with data), `kTfLiteArenaRw` or `kTfLiteArenaRwPersistent` (without
/// data). The tensor takes ownership of the builder's quantization params and dynamic
/// data. Tensor pointers obtained before are invalidated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextAddTensor(
    context: *mut TfLiteOpaqueContext,
    builder: *mut TfLiteOpaqueTensorBuilder,
    new_tensor_index: *mut c_int,
) -> TfLiteStatus {
    ffi_boundary!(report_to = context, {
        let ctx = as_ctx(context);
        let b = try_ref!(builder);
        // SAFETY: NULL or a live context.
        let Some(sg) = (unsafe { subgraph(context) }) else { return TfLiteStatus::kTfLiteError };
        use TfLiteAllocationType::*;
        let at = match TfLiteAllocationType::from_raw(b.allocation_type) {
            Some(at @ (kTfLiteDynamic | kTfLiteArenaRw | kTfLiteArenaRwPersistent)) => at,
            _ => {
                sg.report(&format!(
                    "Invalid allocation type '{}'.  Allocation type for TfLiteOpaqueContextAddTensor must be one of: 'kTfLiteDynamic', 'kTfLiteArenaRw' or 'kTfLiteArenaRwPersistent'.",
                    b.allocation_type
                ));
                return TfLiteStatus::kTfLiteError;
            }
        };
        let Some(dtype) = TfLiteType::from_raw(b.r#type) else {
            sg.report(&format!("TfLiteOpaqueContextAddTensor: unknown tensor type {}", b.r#type));
            return TfLiteStatus::kTfLiteError;
        };
        if at == kTfLiteDynamic && b.data.is_null() {
            sg.report("For tensors of allocation type 'kTfLiteDynamic' 'data' must be provided.");
            return TfLiteStatus::kTfLiteError;
        }
        if matches!(at, kTfLiteArenaRw | kTfLiteArenaRwPersistent) && !b.data.is_null() {
            sg.report("For tensors of allocation type 'kTfLiteArenaRw' or 'kTfLiteArenaRwPersistent' 'data' must not be provided.");
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: live context; copy the function pointer.
        let Some(add) = (unsafe { (*ctx).AddTensors }) else { return TfLiteStatus::kTfLiteError };
        let mut index: c_int = -1;
        // SAFETY: runtime function with its own context and a local out-pointer.
        let status = unsafe { add(ctx, 1, &mut index) };
        if status != TfLiteStatus::kTfLiteOk {
            return status;
        }
        // The table may have moved: look the tensor up again.
        // SAFETY: live context.
        let Some(t) = (unsafe { context_tensor(ctx, index) }) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: `t` points into the live tensor table; nothing else references it now.
        let t = unsafe { &mut *t };
        t.r#type = dtype;
        t.data.data = b.data;
        t.allocation_type = at;
        t.params = b.quantization_params;
        t.quantization = b.quantization;
        if !new_tensor_index.is_null() {
            // SAFETY: checked non-NULL.
            unsafe { write_out(new_tensor_index, index) };
        }
        TfLiteStatus::kTfLiteOk
    })
}

/// Writes the size in bytes of one element of `type` to `*bytes`. kTfLiteError (reported)
/// for types without a fixed element size, or a NULL `bytes`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextGetSizeOfType(
    context: *mut TfLiteOpaqueContext,
    r#type: RawTfLiteType,
    bytes: *mut usize,
) -> TfLiteStatus {
    ffi_boundary!(report_to = context, {
        if bytes.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        match TfLiteType::from_raw(r#type).and_then(|t| t.element_size()) {
            Some(n) => {
                // SAFETY: checked non-NULL.
                unsafe { write_out(bytes, n) };
                TfLiteStatus::kTfLiteOk
            }
            None => {
                let msg = format!("Type {} is not supported by GetSizeOfType.", r#type);
                // SAFETY: NULL or a live context.
                match unsafe { subgraph(context) } {
                    Some(sg) => sg.report(&msg),
                    None => super::ffi::report(None, &msg),
                }
                TfLiteStatus::kTfLiteError
            }
        }
    })
}

/// Writes the model metadata entry `name` (bytes owned by the model, alive as long as the
/// interpreter) to `*ptr` / `*bytes`. kTfLiteError if there is no such entry.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TfLiteOpaqueContextGetMetadata(
    context: *mut TfLiteOpaqueContext,
    name: *const c_char,
    ptr: *mut *const c_char,
    bytes: *mut usize,
) -> TfLiteStatus {
    ffi_boundary!(report_to = context, {
        let ctx = as_ctx(context);
        if ctx.is_null() {
            return TfLiteStatus::kTfLiteError;
        }
        // SAFETY: live context; copy the function pointer.
        let Some(f) = (unsafe { (*ctx).GetModelMetadata }) else { return TfLiteStatus::kTfLiteError };
        // SAFETY: runtime function with its own context; it checks the other arguments.
        unsafe { f(ctx, name, ptr, bytes) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip() {
        let mut t = TfLiteTensor::empty();
        t.r#type = TfLiteType::kTfLiteString;
        let p: *mut TfLiteOpaqueTensor = (&raw mut t).cast();
        let strs: [*const c_char; 2] = [c"ab".as_ptr(), b"c\0d".as_ptr().cast()];
        let lens = [2, 3];
        // SAFETY: a live stack tensor; arrays of the stated lengths.
        unsafe {
            assert_eq!(TfLiteOpaqueTensorWriteStrings(p, strs.as_ptr(), 2, lens.as_ptr()), TfLiteStatus::kTfLiteOk);
            assert_eq!(TfLiteOpaqueTensorGetStringCount(p), 2);
            let (mut s, mut l) = (core::ptr::null(), 0);
            assert_eq!(TfLiteOpaqueTensorGetString(p, 1, &mut s, &mut l), TfLiteStatus::kTfLiteOk);
            assert_eq!(core::slice::from_raw_parts(s.cast::<u8>(), l as usize), b"c\0d");
            assert_eq!(TfLiteOpaqueTensorGetString(p, 2, &mut s, &mut l), TfLiteStatus::kTfLiteError);
            assert_eq!(int_array_slice(t.dims), &[2]);
            assert_eq!(t.allocation(), Some(TfLiteAllocationType::kTfLiteDynamic));
            assert_eq!(TfLiteOpaqueTensorWriteString(p, c"xyz".as_ptr(), 3), TfLiteStatus::kTfLiteOk);
            assert_eq!(TfLiteOpaqueTensorGetStringCount(p), 1);
            assert_eq!(TfLiteOpaqueTensorWriteStrings(p, strs.as_ptr(), -1, lens.as_ptr()), TfLiteStatus::kTfLiteError);
            common::tensor_free(&mut t);
        }
    }

    #[test]
    fn node_accessors() {
        let mut node = TfLiteNode {
            inputs: int_array_from_slice(&[0, -1]),
            outputs: int_array_from_slice(&[2]),
            intermediates: int_array_create(0),
            temporaries: int_array_create(0),
            user_data: core::ptr::null_mut(),
            builtin_data: core::ptr::null_mut(),
            custom_initial_data: core::ptr::null(),
            custom_initial_data_size: 0,
            delegate: core::ptr::null_mut(),
            might_have_side_effect: false,
        };
        let n: *mut TfLiteOpaqueNode = (&raw mut node).cast();
        // SAFETY: a live stack node whose arrays are malloc'ed; freed at the end.
        unsafe {
            assert_eq!(TfLiteOpaqueNodeNumberOfInputs(n), 2);
            assert_eq!(TfLiteOpaqueNodeGetInputTensorIndex(n, 1), -1);
            assert_eq!(TfLiteOpaqueNodeGetInputTensorIndex(n, 5), -1);
            assert_eq!(TfLiteOpaqueNodeGetOutputTensorIndex(n, 0), 2);
            assert_eq!(TfLiteOpaqueNodeNumberOfInputs(core::ptr::null()), -1);
            let t = [7, 8];
            assert_eq!(TfLiteOpaqueNodeSetTemporaries(n, t.as_ptr(), -1), TfLiteStatus::kTfLiteError);
            assert_eq!(TfLiteOpaqueNodeSetTemporaries(n, t.as_ptr(), 0), TfLiteStatus::kTfLiteOk);
            assert_eq!(TfLiteOpaqueNodeSetTemporaries(n, t.as_ptr(), 2), TfLiteStatus::kTfLiteOk);
            let (mut p, mut k) = (core::ptr::null(), 0);
            assert_eq!(TfLiteOpaqueNodeTemporaries(n, &mut p, &mut k), TfLiteStatus::kTfLiteOk);
            assert_eq!(core::slice::from_raw_parts(p, k as usize), &[7, 8]);
            // No context: no tensor.
            assert!(TfLiteOpaqueNodeGetInput(core::ptr::null(), n, 0).is_null());
            for a in [node.inputs, node.outputs, node.intermediates, node.temporaries] {
                int_array_free(a);
            }
        }
    }

    #[test]
    fn builder_and_null_context() {
        // SAFETY: pointers from these functions; NULL contexts are part of the contract.
        unsafe {
            let b = TfLiteOpaqueTensorBuilderCreate();
            assert_eq!(TfLiteOpaqueTensorBuilderSetType(b, TfLiteType::kTfLiteInt8 as RawTfLiteType), b);
            assert_eq!(
                TfLiteOpaqueTensorBuilderSetAllocationType(
                    b,
                    TfLiteAllocationType::kTfLiteArenaRw as RawTfLiteAllocationType
                ),
                b
            );
            assert_eq!(
                TfLiteOpaqueContextAddTensor(core::ptr::null_mut(), b, core::ptr::null_mut()),
                TfLiteStatus::kTfLiteError
            );
            TfLiteOpaqueTensorBuilderDelete(b);
            assert!(
                TfLiteOpaqueTensorBuilderSetType(core::ptr::null_mut(), TfLiteType::kTfLiteInt8 as RawTfLiteType)
                    .is_null()
            );
            let mut bytes = 0usize;
            assert_eq!(
                TfLiteOpaqueContextGetSizeOfType(
                    core::ptr::null_mut(),
                    TfLiteType::kTfLiteInt16 as RawTfLiteType,
                    &mut bytes
                ),
                TfLiteStatus::kTfLiteOk
            );
            assert_eq!(bytes, 2);
            // Values C might pass that name no type: an error, not undefined behaviour.
            for bad in [-1, 24, 1 << 20] {
                assert_eq!(
                    TfLiteOpaqueContextGetSizeOfType(core::ptr::null_mut(), bad, &mut bytes),
                    TfLiteStatus::kTfLiteError
                );
            }
            assert!(TfLiteOpaqueContextGetOpaqueTensor(core::ptr::null(), 0).is_null());
            assert_eq!(TfLiteOpaqueContextGetNumTensors(core::ptr::null()), 0);
            // Ownership of new_size passes even on failure (no leak, no crash).
            assert_eq!(
                TfLiteOpaqueContextResizeTensor(core::ptr::null_mut(), core::ptr::null_mut(), int_array_create(1)),
                TfLiteStatus::kTfLiteError
            );
        }
    }
}
