//! Reading the graph through the `TfLiteContext` a delegate receives, the way a C
//! delegate would: execution plan, nodes, registrations and tensors, copied into the
//! plain data of [`crate::gpu::graph`]. All raw-pointer access of the delegate is here.

use core::ffi::{c_char, c_int};
use std::collections::HashMap;
use std::ffi::CString;

use crate::abi::arrays::int_array_slice;
use crate::abi::builtin_op_data::*;
use crate::abi::builtin_ops::TfLiteBuiltinOperator as B;
use crate::abi::types::*;
use crate::error::{Error, Result};
use crate::gpu::graph::{NodeDesc, Params, TensorDesc, TensorId};

/// Reports `msg` through the context's error reporter.
///
/// # Safety
/// `context` is NULL or a live context.
pub unsafe fn report(context: *mut TfLiteContext, msg: &str) {
    // SAFETY: NULL or live, by the caller.
    let Some(ctx) = (unsafe { context.as_ref() }) else { return };
    let Some(f) = ctx.ReportError else { return };
    let text = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // SAFETY: a printf-style reporter called with "%s" and one NUL-terminated string.
    unsafe { f(context, c"%s".as_ptr(), text.as_ptr()) };
}

/// # Safety
/// `p` is NULL or a live `TfLiteIntArray`.
pub unsafe fn ints(p: *const TfLiteIntArray) -> Vec<i32> {
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: live array by the caller's contract.
    unsafe { int_array_slice(p) }.to_vec()
}

/// The execution plan (delegate Prepare only).
///
/// # Safety
/// `context` is live and inside the delegate's Prepare.
pub unsafe fn execution_plan(context: *mut TfLiteContext) -> Result<Vec<i32>> {
    // SAFETY: live context.
    let f = unsafe { (*context).GetExecutionPlan }.ok_or_else(|| Error::new("GetExecutionPlan is missing"))?;
    let mut plan: *mut TfLiteIntArray = core::ptr::null_mut();
    // SAFETY: valid out-pointer; the array stays owned by the runtime.
    if unsafe { f(context, &mut plan) } != TfLiteStatus::kTfLiteOk {
        crate::bail!("GetExecutionPlan failed");
    }
    // SAFETY: returned by the runtime, live during Prepare.
    Ok(unsafe { ints(plan) })
}

/// Reads `n` consecutive 32-bit ints at `p`.
///
/// # Safety
/// `p` points to at least `n` readable ints (any alignment).
unsafe fn words(p: *const core::ffi::c_void, n: usize) -> Vec<i32> {
    // SAFETY: by the caller's contract; read_unaligned copes with any alignment.
    (0..n).map(|i| unsafe { p.cast::<i32>().add(i).read_unaligned() }).collect()
}

fn padding(v: i32) -> TfLitePadding {
    match v {
        1 => TfLitePadding::kTfLitePaddingSame,
        2 => TfLitePadding::kTfLitePaddingValid,
        _ => TfLitePadding::kTfLitePaddingUnknown,
    }
}

fn activation(v: i32) -> Result<TfLiteFusedActivation> {
    use TfLiteFusedActivation::*;
    Ok(match v {
        0 => kTfLiteActNone,
        1 => kTfLiteActRelu,
        2 => kTfLiteActReluN1To1,
        3 => kTfLiteActRelu6,
        4 => kTfLiteActTanh,
        5 => kTfLiteActSignBit,
        6 => kTfLiteActSigmoid,
        _ => crate::bail!("unknown fused activation {v}"),
    })
}

/// The options of a builtin node, read field by field as ints (C may hold any value in
/// an enum field, so none is read as a Rust enum).
///
/// # Safety
/// `data` is NULL or the node's `builtin_data` of the struct type `op` implies.
unsafe fn params(op: i32, data: *const core::ffi::c_void, custom: Option<&[u8]>) -> Result<Params> {
    let is = |b: B| op == b as i32;
    if is(B::kTfLiteBuiltinCustom) {
        let Some(c) = custom.filter(|c| c.len() >= 12) else { return Ok(Params::None) };
        let w = |i: usize| i32::from_le_bytes([c[4 * i], c[4 * i + 1], c[4 * i + 2], c[4 * i + 3]]);
        return Ok(Params::TransposeConv(TfLiteTransposeConvParams {
            padding: padding(w(0)),
            stride_width: w(1),
            stride_height: w(2),
            activation: TfLiteFusedActivation::kTfLiteActNone,
            quantized_bias_type: TfLiteType::kTfLiteNoType,
        }));
    }
    if data.is_null() {
        return Ok(Params::None);
    }
    // Each read below stays inside the C options struct of the op tested for: `data` is
    // non-NULL and, by the caller's contract, that struct's builtin_data.
    let p = if is(B::kTfLiteBuiltinConv2d) {
        // SAFETY: TfLiteConvParams starts with 7 4-byte fields; 6 are read.
        let w = unsafe { words(data, 6) };
        Params::Conv(TfLiteConvParams {
            padding: padding(w[0]),
            stride_width: w[1],
            stride_height: w[2],
            activation: activation(w[3])?,
            dilation_width_factor: w[4],
            dilation_height_factor: w[5],
            quantized_bias_type: TfLiteType::kTfLiteNoType,
        })
    } else if is(B::kTfLiteBuiltinDepthwiseConv2d) {
        // SAFETY: TfLiteDepthwiseConvParams starts with 7 4-byte fields; all 7 are read.
        let w = unsafe { words(data, 7) };
        Params::Depthwise(TfLiteDepthwiseConvParams {
            padding: padding(w[0]),
            stride_width: w[1],
            stride_height: w[2],
            depth_multiplier: w[3],
            activation: activation(w[4])?,
            dilation_width_factor: w[5],
            dilation_height_factor: w[6],
        })
    } else if is(B::kTfLiteBuiltinAveragePool2d) || is(B::kTfLiteBuiltinMaxPool2d) {
        // SAFETY: TfLitePoolParams starts with 6 4-byte fields (padding to activation).
        let w = unsafe { words(data, 6) };
        Params::Pool(TfLitePoolParams {
            padding: padding(w[0]),
            stride_width: w[1],
            stride_height: w[2],
            filter_width: w[3],
            filter_height: w[4],
            activation: activation(w[5])?,
            ..Default::default()
        })
    } else if is(B::kTfLiteBuiltinFullyConnected) {
        // SAFETY: TfLiteFullyConnectedParams starts with two 4-byte enums
        // (activation, weights_format)...
        let w = unsafe { words(data, 2) };
        // SAFETY: ...followed by the `bool keep_num_dims` at byte 8.
        let keep = unsafe { data.cast::<u8>().add(8).read() } != 0;
        let mut f =
            TfLiteFullyConnectedParams { activation: activation(w[0])?, keep_num_dims: keep, ..Default::default() };
        if w[1] != 0 {
            f.weights_format = TfLiteFullyConnectedWeightsFormat::kTfLiteFullyConnectedWeightsFormatShuffled4x16Int8;
        }
        Params::FullyConnected(f)
    } else if is(B::kTfLiteBuiltinAdd)
        || is(B::kTfLiteBuiltinSub)
        || is(B::kTfLiteBuiltinMul)
        || is(B::kTfLiteBuiltinDiv)
    {
        // SAFETY: the Add, Sub, Mul and Div params all start with the 4-byte activation.
        Params::Binary(activation(unsafe { words(data, 1) }[0])?)
    } else if is(B::kTfLiteBuiltinConcatenation) {
        // SAFETY: TfLiteConcatenationParams is two 4-byte fields (axis, activation).
        let w = unsafe { words(data, 2) };
        Params::Concat(TfLiteConcatenationParams { axis: w[0], activation: activation(w[1])? })
    } else if is(B::kTfLiteBuiltinSoftmax) {
        // SAFETY: TfLiteSoftmaxParams is one 4-byte float (beta).
        Params::Softmax(f32::from_bits(unsafe { words(data, 1) }[0] as u32))
    } else if is(B::kTfLiteBuiltinMean) {
        // SAFETY: TfLiteReducerParams starts with the `bool keep_dims`.
        Params::Reducer(unsafe { data.cast::<u8>().read() } != 0)
    } else if is(B::kTfLiteBuiltinResizeBilinear) {
        // SAFETY: TfLiteResizeBilinearParams is two bools (align_corners, half_pixel_centers).
        let b = unsafe { [data.cast::<u8>().read(), data.cast::<u8>().add(1).read()] };
        Params::ResizeBilinear(TfLiteResizeBilinearParams { align_corners: b[0] != 0, half_pixel_centers: b[1] != 0 })
    } else if is(B::kTfLiteBuiltinTransposeConv) {
        // SAFETY: TfLiteTransposeConvParams starts with 5 4-byte fields; 4 are read.
        let w = unsafe { words(data, 4) };
        Params::TransposeConv(TfLiteTransposeConvParams {
            padding: padding(w[0]),
            stride_width: w[1],
            stride_height: w[2],
            activation: activation(w[3])?,
            quantized_bias_type: TfLiteType::kTfLiteNoType,
        })
    } else {
        Params::None
    };
    Ok(p)
}

/// One node of the execution plan.
///
/// # Safety
/// `context` is live and inside the delegate's Prepare.
pub unsafe fn node(context: *mut TfLiteContext, index: i32) -> Result<NodeDesc> {
    // SAFETY: live context.
    let f =
        unsafe { (*context).GetNodeAndRegistration }.ok_or_else(|| Error::new("GetNodeAndRegistration is missing"))?;
    let mut node: *mut TfLiteNode = core::ptr::null_mut();
    let mut reg: *mut TfLiteRegistration = core::ptr::null_mut();
    // SAFETY: valid out-pointers.
    if unsafe { f(context, index as c_int, &mut node, &mut reg) } != TfLiteStatus::kTfLiteOk
        || node.is_null()
        || reg.is_null()
    {
        crate::bail!("GetNodeAndRegistration({index}) failed");
    }
    // SAFETY: both returned non-NULL by the runtime and live during Prepare.
    let (n, r) = unsafe { (&*node, &*reg) };
    let custom_name = if r.custom_name.is_null() {
        String::new()
    } else {
        // SAFETY: a registration's custom_name is NUL-terminated.
        unsafe { core::ffi::CStr::from_ptr(r.custom_name as *const c_char) }.to_string_lossy().into_owned()
    };
    let custom: Option<&[u8]> = if n.custom_initial_data.is_null() || n.custom_initial_data_size <= 0 {
        None
    } else {
        // SAFETY: the runtime guarantees custom_initial_data_size readable bytes.
        Some(unsafe {
            core::slice::from_raw_parts(n.custom_initial_data.cast::<u8>(), n.custom_initial_data_size as usize)
        })
    };
    Ok(NodeDesc {
        index,
        op: r.builtin_code,
        custom_name,
        version: r.version,
        // SAFETY: the node's arrays are NULL or live while the node is (all of Prepare).
        inputs: unsafe { ints(n.inputs) },
        // SAFETY: as above, NULL or the node's live output array.
        outputs: unsafe { ints(n.outputs) },
        // SAFETY: builtin_data belongs to this node's builtin op.
        params: unsafe { params(r.builtin_code, n.builtin_data, custom) }?,
    })
}

/// # Safety
/// `context` is live; `t` is checked against `tensors_size` here.
pub unsafe fn tensor_ptr(context: *mut TfLiteContext, t: TensorId) -> Result<*mut TfLiteTensor> {
    // SAFETY: live context.
    let ctx = unsafe { &*context };
    let i = usize::try_from(t)
        .ok()
        .filter(|&i| i < ctx.tensors_size)
        .ok_or_else(|| Error::new(format!("tensor index {t} is out of range")))?;
    if ctx.tensors.is_null() {
        crate::bail!("the context has no tensors");
    }
    // SAFETY: in range of the live tensor table.
    Ok(unsafe { ctx.tensors.add(i) })
}

/// What the delegate needs of one tensor (constant contents copied).
///
/// # Safety
/// `context` is live.
pub unsafe fn tensor(context: *mut TfLiteContext, t: TensorId) -> Result<TensorDesc> {
    // SAFETY: `tensor_ptr` checked the index.
    let tp = unsafe { &*tensor_ptr(context, t)? };
    let ty = tp.data_type().ok_or_else(|| Error::new(format!("tensor {t} has an unknown type")))?;
    // SAFETY: dims is NULL or the tensor's live shape array.
    let dims = unsafe { ints(tp.dims) };
    let constant = tp.allocation() == Some(TfLiteAllocationType::kTfLiteMmapRo);
    // SAFETY: every member of the `data` union is a pointer, so reading `raw_const` is
    // reading that pointer.
    let data = if constant && !unsafe { tp.data.raw_const }.is_null() {
        // SAFETY: `data.raw_const` of a non-NULL read-only tensor points to `bytes` bytes.
        Some(unsafe { core::slice::from_raw_parts(tp.data.raw_const.cast::<u8>(), tp.bytes) }.to_vec())
    } else {
        None
    };
    let (mut scale, mut zero_point, mut per_channel) = (0.0, 0, false);
    if tp.quantization_type_raw() == TfLiteQuantizationType::kTfLiteAffineQuantization as c_int
        && !tp.quantization.params.is_null()
    {
        // SAFETY: affine quantization params are a TfLiteAffineQuantization.
        let q = unsafe { &*(tp.quantization.params as *const TfLiteAffineQuantization) };
        let scales = if q.scale.is_null() {
            Vec::new()
        } else {
            // SAFETY: `scale` is the live array of the same params (checked non-NULL).
            unsafe { crate::abi::arrays::float_array_slice(q.scale) }.to_vec()
        };
        // SAFETY: zero_point is NULL or the live array of the same params.
        let zps = unsafe { ints(q.zero_point) };
        per_channel = scales.len() > 1;
        scale = scales.first().copied().unwrap_or(0.0);
        zero_point = zps.first().copied().unwrap_or(0);
    } else if tp.params.scale != 0.0 {
        scale = tp.params.scale;
        zero_point = tp.params.zero_point;
    }
    Ok(TensorDesc { ty, dims, data, scale, zero_point, per_channel })
}

/// Tensor descriptions of every tensor the nodes touch.
///
/// # Safety
/// `context` is live.
pub unsafe fn tensors_of(context: *mut TfLiteContext, nodes: &[NodeDesc]) -> Result<HashMap<TensorId, TensorDesc>> {
    let mut m = HashMap::new();
    for n in nodes {
        for &t in n.inputs.iter().chain(&n.outputs) {
            if t >= 0 && !m.contains_key(&t) {
                // SAFETY: forwarded.
                m.insert(t, unsafe { tensor(context, t) }?);
            }
        }
    }
    Ok(m)
}
