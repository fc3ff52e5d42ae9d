//! TRANSPOSE_CONV (TFLite `kernels/transpose_conv.cc`; reference kernels
//! `reference/transpose_conv.h` and `reference/integer_ops/transpose_conv.h`) and
//! MediaPipe's custom op `Convolution2DTransposeBias`
//! (`mediapipe/util/tflite/operations/transpose_conv_bias.cc`).
//!
//! TRANSPOSE_CONV inputs: `output_shape` (int32 `[4]`), weights `[out_c, kh, kw, in_c]`
//! (OHWI), input `[n, h, w, in_c]` and an optional bias `[out_c]` (v1 to v5). Types:
//! float32; hybrid float32 input with int8 weights (per-batch asymmetric input
//! quantization, as TFLite's `HybridTransposeConv`); uint8 (per-tensor); int8 with
//! per-channel int8 weights and int32 bias; int16 activations with int8 weights and an
//! int64 (or int32) bias ("16x8"). Padding SAME / VALID is computed as TFLite does, from
//! the *output* size. The fused activation clamps.
//!
//! `Convolution2DTransposeBias` (float32 only): inputs input, weights (OHWI), bias; its
//! options are MediaPipe's `TfLiteTransposeConvParams` prefix (`padding`, `stride_width`,
//! `stride_height`, three little-endian int32) stored as the custom options; the output
//! size follows from the input size, filter and stride; the accumulation starts from the
//! bias and there is no activation.
//!
//! Two paths with identical results: [`Variant::Reference`] is TFLite's "scatter" loop
//! over input elements with a scratch accumulator; the optimized path "gathers" each output
//! element's contributions in the same order (input row, input column, input channel
//! ascending), so float results are bit-identical and integer results exact, with the
//! weights repacked to `[kh][kw][in_c][out_c]` (cached per node for constant float weights)
//! and output rows split over `num_threads`.

use super::conv_common::{
    PackSlot, QuantMul, affine, asymmetric_quantize, data_cow, legacy_quant_mul, opt_data_cow, parallel_rows,
    per_channel_multipliers, positive_param, recommended_threads, threads_for,
};
use crate::abi::builtin_op_data::{TfLiteFusedActivation, TfLitePadding, TfLiteTransposeConvParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::activation::{activation_range_f32, activation_range_quantized, clamp_min_max};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{QuantInt, multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_i64};
use crate::kernels::shape_util::{int_values, known_at_prepare, plan_declared_output, settle_output_shape};
use crate::microkernels::packed::Packed;

const OP: &str = "TRANSPOSE_CONV";
const CUSTOM_OP: &str = "Convolution2DTransposeBias";

/// The TRANSPOSE_CONV registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<TransposeConv>(TfLiteBuiltinOperator::kTfLiteBuiltinTransposeConv)
}

/// The registration of MediaPipe's custom op `Convolution2DTransposeBias`.
pub fn transpose_conv_bias_registration() -> TfLiteRegistration {
    kernel::registration::<TransposeConvBias>(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
}

/// Which implementation computes a transposed convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// TFLite's scatter loop.
    Reference,
    /// Gather per output element in the same order, repacked weights, threads.
    Optimized,
}

// ---------------------------------------------------------------------------------------
// Geometry
// ---------------------------------------------------------------------------------------

/// The geometry of a transposed convolution on NHWC tensors with OHWI weights.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransposeGeom {
    pub batches: usize,
    pub in_h: usize,
    pub in_w: usize,
    pub in_c: usize,
    pub out_h: usize,
    pub out_w: usize,
    pub out_c: usize,
    pub f_h: usize,
    pub f_w: usize,
    pub stride_h: usize,
    pub stride_w: usize,
    pub pad_h: usize,
    pub pad_w: usize,
}

impl TransposeGeom {
    fn len(&self, dims: &[usize]) -> Option<usize> {
        dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
    }

    /// Checks buffer sizes and that every coordinate the loops form fits in `isize`.
    fn check(&self, input: usize, filter: usize, out: usize) -> Result<()> {
        let want_in = self.len(&[self.batches, self.in_h, self.in_w, self.in_c]);
        let want_f = self.len(&[self.out_c, self.f_h, self.f_w, self.in_c]);
        let want_out = self.len(&[self.batches, self.out_h, self.out_w, self.out_c]);
        if want_in != Some(input) || want_f != Some(filter) || want_out != Some(out) {
            crate::bail!(
                "buffers hold {input}, {filter} and {out} values; the geometry {self:?} needs {want_in:?}, {want_f:?} \
                 and {want_out:?}"
            );
        }
        if self.stride_h == 0 || self.stride_w == 0 {
            crate::bail!("strides must be positive");
        }
        let lim = (i32::MAX as usize) / 2;
        let far_y =
            self.in_h.checked_mul(self.stride_h).and_then(|v| v.checked_add(self.f_h + self.pad_h + self.out_h));
        let far_x =
            self.in_w.checked_mul(self.stride_w).and_then(|v| v.checked_add(self.f_w + self.pad_w + self.out_w));
        match (far_y, far_x) {
            (Some(y), Some(x)) if y <= lim && x <= lim => Ok(()),
            _ => Err(Error::new("window geometry overflows")),
        }
    }

    /// For each output coordinate along one axis, the `(input, filter)` index pairs that
    /// contribute to it, input ascending (the order of TFLite's scatter loop).
    fn taps(out: usize, input: usize, filter: usize, stride: usize, pad: usize) -> Vec<Vec<(usize, usize)>> {
        (0..out)
            .map(|o| {
                let t = (o + pad) as i64;
                let (s, f) = (stride as i64, filter as i64);
                // i * s <= t and t - i * s < f.
                let hi = (t / s).min(input as i64 - 1);
                let lo_num = t - f + 1;
                let lo = if lo_num <= 0 { 0 } else { (lo_num + s - 1) / s };
                (lo..=hi).filter(|&i| i >= 0).map(|i| (i as usize, (t - i * s) as usize)).collect()
            })
            .collect()
    }
}

/// TFLite's `ComputePaddingHeightWidth` as transpose_conv.cc uses it: the padding of the
/// forward convolution whose *input* is the transposed convolution's output.
fn transpose_padding(padding: TfLitePadding, out: usize, filter: usize, stride: usize) -> Result<usize> {
    let (o, f, s) = (out as i64, filter as i64, stride as i64);
    let out_size = match padding {
        TfLitePadding::kTfLitePaddingSame => (o + s - 1) / s,
        TfLitePadding::kTfLitePaddingValid => (o + s - f) / s,
        TfLitePadding::kTfLitePaddingUnknown => crate::bail!("padding is neither SAME nor VALID"),
    };
    let total = ((out_size - 1) * s + f - o).max(0);
    usize::try_from(total / 2).map_err(|_| Error::new("padding overflows"))
}

// ---------------------------------------------------------------------------------------
// The accumulation of each type
// ---------------------------------------------------------------------------------------

/// What differs between the types: the accumulator, how one input value times one weight
/// is added (`mac`), and how an accumulator becomes an output (`finish`).
pub trait TransposeOps: Sync {
    type X: Copy + Sync;
    type W: Copy + Sync;
    type A: Copy + Send;
    type O: Copy + Send;
    /// Start value of output channel `oc`'s accumulator.
    fn init(&self, oc: usize) -> Self::A;
    /// `acc + x * w` for output channel `oc` of batch `b`.
    fn mac(&self, acc: Self::A, x: Self::X, w: Self::W, oc: usize, b: usize) -> Self::A;
    /// The output value of output channel `oc`.
    fn finish(&self, acc: Self::A, oc: usize) -> Self::O;
}

/// Float: accumulate from 0 and add the bias at the end (TFLite), or start from the bias
/// (MediaPipe's `Convolution2DTransposeBias`, no clamping then).
pub struct FloatOps<'a> {
    pub bias: Option<&'a [f32]>,
    pub bias_first: bool,
    pub act: (f32, f32),
}

impl TransposeOps for FloatOps<'_> {
    type X = f32;
    type W = f32;
    type A = f32;
    type O = f32;
    #[inline(always)]
    fn init(&self, oc: usize) -> f32 {
        match self.bias {
            Some(b) if self.bias_first => b[oc],
            _ => 0.0,
        }
    }
    #[inline(always)]
    fn mac(&self, acc: f32, x: f32, w: f32, _oc: usize, _b: usize) -> f32 {
        acc + x * w
    }
    #[inline(always)]
    fn finish(&self, acc: f32, oc: usize) -> f32 {
        if self.bias_first {
            return acc;
        }
        let v = match self.bias {
            Some(b) => acc + b[oc],
            None => acc,
        };
        clamp_min_max(v, self.act.0, self.act.1)
    }
}

/// 8-bit: `acc += (x + input_offset) * (w + filter_offset)` in wrapping `i32`, then bias,
/// per-channel `MultiplyByQuantizedMultiplier`, output offset and clamp.
pub struct Quant8Ops<'a, T> {
    pub input_offset: i32,
    pub filter_offset: i32,
    pub output_offset: i32,
    pub bias: Option<&'a [i32]>,
    pub mults: &'a [QuantMul],
    pub act: (i32, i32),
    pub _t: core::marker::PhantomData<T>,
}

impl<T: QuantInt> TransposeOps for Quant8Ops<'_, T> {
    type X = T;
    type W = T;
    type A = i32;
    type O = T;
    #[inline(always)]
    fn init(&self, _oc: usize) -> i32 {
        0
    }
    #[inline(always)]
    fn mac(&self, acc: i32, x: T, w: T, _oc: usize, _b: usize) -> i32 {
        let x = x.to_i32().wrapping_add(self.input_offset);
        let w = w.to_i32().wrapping_add(self.filter_offset);
        acc.wrapping_add(x.wrapping_mul(w))
    }
    #[inline(always)]
    fn finish(&self, acc: i32, oc: usize) -> T {
        let acc = acc.wrapping_add(self.bias.map_or(0, |b| b[oc]));
        let m = self.mults[oc];
        let v = multiply_by_quantized_multiplier(acc, m.multiplier, m.shift).wrapping_add(self.output_offset);
        T::from_i32(v.clamp(self.act.0, self.act.1))
    }
}

/// 16x8 with an int64 accumulator (64-bit `MultiplyByQuantizedMultiplier`).
pub struct Quant16x64Ops<'a> {
    pub bias: Option<&'a [i64]>,
    pub mults: &'a [QuantMul],
    pub act: (i32, i32),
}

impl TransposeOps for Quant16x64Ops<'_> {
    type X = i16;
    type W = i8;
    type A = i64;
    type O = i16;
    #[inline(always)]
    fn init(&self, _oc: usize) -> i64 {
        0
    }
    #[inline(always)]
    fn mac(&self, acc: i64, x: i16, w: i8, _oc: usize, _b: usize) -> i64 {
        acc.wrapping_add(x as i64 * w as i64)
    }
    #[inline(always)]
    fn finish(&self, acc: i64, oc: usize) -> i16 {
        let acc = acc.wrapping_add(self.bias.map_or(0, |b| b[oc]));
        let m = self.mults[oc];
        multiply_by_quantized_multiplier_i64(acc, m.multiplier, m.shift).clamp(self.act.0, self.act.1) as i16
    }
}

/// 16x8 with an int32 accumulator (`quantized_bias_type` int32).
pub struct Quant16x32Ops<'a> {
    pub bias: Option<&'a [i32]>,
    pub mults: &'a [QuantMul],
    pub act: (i32, i32),
}

impl TransposeOps for Quant16x32Ops<'_> {
    type X = i16;
    type W = i8;
    type A = i32;
    type O = i16;
    #[inline(always)]
    fn init(&self, _oc: usize) -> i32 {
        0
    }
    #[inline(always)]
    fn mac(&self, acc: i32, x: i16, w: i8, _oc: usize, _b: usize) -> i32 {
        acc.wrapping_add(x as i32 * w as i32)
    }
    #[inline(always)]
    fn finish(&self, acc: i32, oc: usize) -> i16 {
        let acc = acc.wrapping_add(self.bias.map_or(0, |b| b[oc]));
        let m = self.mults[oc];
        multiply_by_quantized_multiplier(acc, m.multiplier, m.shift).clamp(self.act.0, self.act.1) as i16
    }
}

/// Hybrid (`HybridTransposeConv`): the input quantized per batch; each product
/// `(x - offset[b]) * w` is scaled to float by `channel_scale[oc] * batch_scale[b]` and
/// accumulated in float; then bias and clamp.
pub struct HybridOps<'a> {
    pub batch_scales: &'a [f32],
    pub batch_offsets: &'a [i32],
    pub channel_scales: &'a [f32],
    pub bias: Option<&'a [f32]>,
    pub act: (f32, f32),
}

impl TransposeOps for HybridOps<'_> {
    type X = i8;
    type W = i8;
    type A = f32;
    type O = f32;
    #[inline(always)]
    fn init(&self, _oc: usize) -> f32 {
        0.0
    }
    #[inline(always)]
    fn mac(&self, acc: f32, x: i8, w: i8, oc: usize, b: usize) -> f32 {
        let p = (x as i32).wrapping_sub(self.batch_offsets[b]).wrapping_mul(w as i32);
        acc + p as f32 * self.channel_scales[oc] * self.batch_scales[b]
    }
    #[inline(always)]
    fn finish(&self, acc: f32, oc: usize) -> f32 {
        let v = match self.bias {
            Some(b) => acc + b[oc],
            None => acc,
        };
        clamp_min_max(v, self.act.0, self.act.1)
    }
}

// ---------------------------------------------------------------------------------------
// The two paths
// ---------------------------------------------------------------------------------------

/// TFLite's reference loop: scatter every input element's contributions into a scratch
/// accumulator, then finish each output element.
pub fn transpose_conv_reference<P: TransposeOps>(
    g: &TransposeGeom,
    ops: &P,
    input: &[P::X],
    filter: &[P::W],
    out: &mut [P::O],
) -> Result<()> {
    g.check(input.len(), filter.len(), out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    let mut scratch: Vec<P::A> = (0..out.len()).map(|i| ops.init(i % g.out_c)).collect();
    for b in 0..g.batches {
        for iy in 0..g.in_h {
            for ix in 0..g.in_w {
                for ic in 0..g.in_c {
                    let x = input[((b * g.in_h + iy) * g.in_w + ix) * g.in_c + ic];
                    let oy0 = (iy * g.stride_h) as isize - g.pad_h as isize;
                    let ox0 = (ix * g.stride_w) as isize - g.pad_w as isize;
                    for fy in 0..g.f_h {
                        for fx in 0..g.f_w {
                            let (oy, ox) = (oy0 + fy as isize, ox0 + fx as isize);
                            if oy < 0 || ox < 0 || oy as usize >= g.out_h || ox as usize >= g.out_w {
                                continue;
                            }
                            let obase = ((b * g.out_h + oy as usize) * g.out_w + ox as usize) * g.out_c;
                            for oc in 0..g.out_c {
                                let w = filter[((oc * g.f_h + fy) * g.f_w + fx) * g.in_c + ic];
                                scratch[obase + oc] = ops.mac(scratch[obase + oc], x, w, oc, b);
                            }
                        }
                    }
                }
            }
        }
    }
    for (i, (o, &a)) in out.iter_mut().zip(&scratch).enumerate() {
        *o = ops.finish(a, i % g.out_c);
    }
    Ok(())
}

/// Repacks OHWI weights to `[kh][kw][in_c][out_c]`.
pub fn pack_weights<W: Copy>(g: &TransposeGeom, filter: &[W]) -> Result<Vec<W>> {
    let n = g.len(&[g.out_c, g.f_h, g.f_w, g.in_c]);
    if n != Some(filter.len()) {
        crate::bail!("weights hold {} values, expected {n:?}", filter.len());
    }
    let mut packed = Vec::with_capacity(filter.len());
    for fy in 0..g.f_h {
        for fx in 0..g.f_w {
            for ic in 0..g.in_c {
                for oc in 0..g.out_c {
                    packed.push(filter[((oc * g.f_h + fy) * g.f_w + fx) * g.in_c + ic]);
                }
            }
        }
    }
    Ok(packed)
}

/// The optimized path: per output element, the contributions in the reference's order;
/// `packed` is [`pack_weights`]'s layout.
pub fn transpose_conv_optimized<P: TransposeOps>(
    g: &TransposeGeom,
    ops: &P,
    input: &[P::X],
    packed: &[P::W],
    out: &mut [P::O],
    threads: usize,
) -> Result<()> {
    g.check(input.len(), packed.len(), out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    let ytaps = TransposeGeom::taps(g.out_h, g.in_h, g.f_h, g.stride_h, g.pad_h);
    let xtaps = TransposeGeom::taps(g.out_w, g.in_w, g.f_w, g.stride_w, g.pad_w);
    let row_len = g.out_w * g.out_c;
    let work =
        [g.batches, g.in_h, g.in_w, g.in_c, g.f_h, g.f_w, g.out_c].iter().fold(1usize, |a, &d| a.saturating_mul(d));
    let threads = threads_for(threads, work, g.batches * g.out_h);
    parallel_rows(threads, out, row_len, &|first, chunk: &mut [P::O]| {
        let mut acc: Vec<P::A> = (0..g.out_c).map(|oc| ops.init(oc)).collect();
        for (r, orow) in chunk.chunks_mut(row_len).enumerate() {
            let row = first + r;
            let (b, oy) = (row / g.out_h, row % g.out_h);
            for ox in 0..g.out_w {
                for (oc, a) in acc.iter_mut().enumerate() {
                    *a = ops.init(oc);
                }
                for &(iy, fy) in &ytaps[oy] {
                    for &(ix, fx) in &xtaps[ox] {
                        let xbase = ((b * g.in_h + iy) * g.in_w + ix) * g.in_c;
                        let xs = &input[xbase..xbase + g.in_c];
                        let wbase = (fy * g.f_w + fx) * g.in_c * g.out_c;
                        let ws = &packed[wbase..wbase + g.in_c * g.out_c];
                        for (&x, wrow) in xs.iter().zip(ws.chunks_exact(g.out_c)) {
                            for (oc, (a, &w)) in acc.iter_mut().zip(wrow).enumerate() {
                                *a = ops.mac(*a, x, w, oc, b);
                            }
                        }
                    }
                }
                for (oc, (o, &a)) in orow[ox * g.out_c..(ox + 1) * g.out_c].iter_mut().zip(&acc).enumerate() {
                    *o = ops.finish(a, oc);
                }
            }
        }
        Ok(())
    })
}

/// Runs one of the two paths, packing the weights for this call.
#[cfg(test)]
fn run<P: TransposeOps>(
    variant: Variant,
    g: &TransposeGeom,
    ops: &P,
    input: &[P::X],
    filter: &[P::W],
    out: &mut [P::O],
    threads: usize,
) -> Result<()> {
    match variant {
        Variant::Reference => transpose_conv_reference(g, ops, input, filter, out),
        Variant::Optimized => {
            let packed = pack_weights(g, filter)?;
            transpose_conv_optimized(g, ops, input, &packed, out, threads)
        }
    }
}

// ---------------------------------------------------------------------------------------
// TRANSPOSE_CONV glue
// ---------------------------------------------------------------------------------------

fn err(e: Error) -> Error {
    Error::with_status(e.status, format!("{OP}: {}", e.message))
}

/// TRANSPOSE_CONV. State: how the node computes (type path, activation range, quantized
/// multipliers and offsets, hybrid channel scales), the output shape and geometry when
/// `output_shape` is a constant, and the weights packed for the optimized paths (float
/// phases for the GEMM microkernels with the bias, integer weights reordered), with the
/// geometry they were packed for.
struct TransposeConv;

/// What Prepare derives for a TRANSPOSE_CONV node.
struct State {
    kind: Kind,
    /// The output shape and geometry, when `output_shape` is known at Prepare.
    fixed: Option<([i32; 4], TransposeGeom)>,
    /// The geometry the packings were made for (a dynamic output shape may change it).
    packed_for: Option<TransposeGeom>,
    gemm: PackSlot<super::transpose_conv_f32_gemm::Phases>,
    ints: PackSlot<IntWeights>,
}

/// Integer weights reordered by [`pack_weights`].
enum IntWeights {
    U8(Packed<u8>),
    I8(Packed<i8>),
}

enum Kind {
    F32 { act: (f32, f32) },
    Hybrid { channel_scales: Vec<f32>, act: (f32, f32) },
    Quant8 { input_offset: i32, filter_offset: i32, output_offset: i32, mults: Vec<QuantMul>, act: (i32, i32) },
    Quant16 { mults: Vec<QuantMul>, act: (i32, i32), bias64: bool },
}

/// The node's tensors and options.
struct Plan<'a> {
    output_shape: TensorView<'a>,
    weights: TensorView<'a>,
    input: TensorView<'a>,
    bias: Option<TensorView<'a>>,
    p: TfLiteTransposeConvParams,
}

/// The node's tensors (checked at Prepare).
fn operands<'a>(ctx: &OpCtx<'a>, p: &TfLiteTransposeConvParams) -> Result<Plan<'a>> {
    let output_shape = ctx.input(0)?;
    let weights = ctx.input(1)?;
    let input = ctx.input(2)?;
    let bias = if ctx.num_inputs() == 4 { ctx.optional_input(3)? } else { None };
    Ok(Plan { output_shape, weights, input, bias, p: *p })
}

fn dim_of(what: &str, t: &TensorView<'_>, i: usize) -> Result<usize> {
    super::conv_common::dim(OP, what, t.shape, i)
}

fn plan<'a>(ctx: &OpCtx<'a>, p: &TfLiteTransposeConvParams) -> Result<(Plan<'a>, Kind)> {
    let p = *p;
    let n_in = ctx.num_inputs();
    if n_in != 3 && n_in != 4 {
        return Err(Error::new(format!("{OP}: expected 3 or 4 inputs, got {n_in}")));
    }
    if ctx.num_outputs() != 1 {
        return Err(Error::new(format!("{OP}: expected 1 output, got {}", ctx.num_outputs())));
    }
    let output_shape = ctx.input(0).map_err(err)?;
    let weights = ctx.input(1).map_err(err)?;
    let input = ctx.input(2).map_err(err)?;
    let bias = if n_in == 4 { ctx.optional_input(3).map_err(err)? } else { None };
    let output = ctx.output(0).map_err(err)?;
    if output_shape.shape.len() != 1 || output_shape.dtype != TfLiteType::kTfLiteInt32 {
        return Err(Error::new(format!(
            "{OP}: output_shape must be an int32 vector, is {} {:?}",
            output_shape.dtype.name(),
            output_shape.shape
        )));
    }
    if output_shape.shape[0] != 4 {
        return Err(Error::new(format!("{OP}: output_shape must hold 4 values, holds {}", output_shape.shape[0])));
    }
    if input.shape.len() != 4 || weights.shape.len() != 4 {
        return Err(Error::new(format!(
            "{OP}: input {:?} and weights {:?} must have rank 4",
            input.shape, weights.shape
        )));
    }
    let in_c = dim_of("input", &input, 3)?;
    let out_c = dim_of("weights", &weights, 0)?;
    dim_of("input", &input, 0)?;
    dim_of("input", &input, 1)?;
    dim_of("input", &input, 2)?;
    dim_of("weights", &weights, 1)?;
    dim_of("weights", &weights, 2)?;
    if dim_of("weights", &weights, 3)? != in_c {
        return Err(Error::new(format!(
            "{OP}: weights {:?} and input {:?} have different channel counts",
            weights.shape, input.shape
        )));
    }
    positive_param(OP, "stride_height", p.stride_height)?;
    positive_param(OP, "stride_width", p.stride_width)?;
    if p.padding == TfLitePadding::kTfLitePaddingUnknown {
        return Err(Error::new(format!("{OP}: padding is neither SAME nor VALID")));
    }
    use TfLiteType::*;
    let dtype = input.dtype;
    if !matches!(dtype, kTfLiteFloat32 | kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16) {
        return Err(Error::new(format!("{OP}: input type {} is not supported", dtype.name())));
    }
    if output.dtype != dtype {
        return Err(Error::new(format!(
            "{OP}: output type {} differs from input type {}",
            output.dtype.name(),
            dtype.name()
        )));
    }
    if let Some(b) = &bias
        && b.num_elements() != out_c
    {
        return Err(Error::new(format!("{OP}: bias has {} elements for {out_c} output channels", b.num_elements())));
    }
    let bias_type = bias.as_ref().map(|b| b.dtype);
    let kind = match dtype {
        kTfLiteFloat32 => {
            if let Some(bt) = bias_type.filter(|&t| t != kTfLiteFloat32) {
                return Err(Error::new(format!("{OP}: bias of type {} with float32 input", bt.name())));
            }
            let act = activation_range_f32(p.activation);
            match weights.dtype {
                kTfLiteFloat32 => Kind::F32 { act },
                kTfLiteInt8 => {
                    let (scales, _, qdim) = affine(OP, "weights", &weights)?;
                    let channel_scales = if scales.len() == 1 {
                        vec![weights.quant().scale; out_c]
                    } else if scales.len() == out_c && qdim == 0 {
                        scales.to_vec()
                    } else {
                        return Err(Error::new(format!(
                            "{OP}: {} weight scales along dimension {qdim} for {out_c} output channels",
                            scales.len()
                        )));
                    };
                    Kind::Hybrid { channel_scales, act }
                }
                other => return Err(Error::new(format!("{OP}: weights of type {} with float32 input", other.name()))),
            }
        }
        kTfLiteUInt8 | kTfLiteInt8 => {
            if weights.dtype != dtype {
                return Err(Error::new(format!(
                    "{OP}: weights of type {} with {} input",
                    weights.dtype.name(),
                    dtype.name()
                )));
            }
            if let Some(bt) = bias_type.filter(|&t| t != kTfLiteInt32) {
                return Err(Error::new(format!("{OP}: bias of type {} with {} input", bt.name(), dtype.name())));
            }
            if dtype == kTfLiteInt8 && bias.as_ref().is_some_and(|b| b.quant().zero_point != 0) {
                return Err(Error::new(format!("{OP}: bias zero point must be 0")));
            }
            quant8_kind(&input, &weights, bias.as_ref(), &output, out_c, p.activation)?
        }
        _ => {
            if weights.dtype != kTfLiteInt8 {
                return Err(Error::new(format!("{OP}: weights of type {} with int16 input", weights.dtype.name())));
            }
            if input.quant().zero_point != 0 || output.quant().zero_point != 0 {
                return Err(Error::new(format!("{OP}: int16 input and output zero points must be 0")));
            }
            let qbt = p.quantized_bias_type;
            if !matches!(qbt, kTfLiteFloat32 | kTfLiteNoType | kTfLiteInt32 | kTfLiteInt64) {
                return Err(Error::new(format!("{OP}: quantized_bias_type {} is not int32 or int64", qbt.name())));
            }
            let bias64 = match (bias_type, qbt) {
                (Some(kTfLiteInt64), _) => true,
                (Some(kTfLiteInt32), _) => false,
                (Some(other), _) => {
                    return Err(Error::new(format!("{OP}: bias of type {} with int16 input", other.name())));
                }
                (None, kTfLiteInt32) => false,
                (None, _) => true,
            };
            if let (Some(bt), kTfLiteInt32 | kTfLiteInt64) = (bias_type, qbt)
                && bt != qbt
            {
                return Err(Error::new(format!(
                    "{OP}: bias type {} differs from quantized_bias_type {}",
                    bt.name(),
                    qbt.name()
                )));
            }
            if bias.as_ref().is_some_and(|b| b.quant().zero_point != 0) {
                return Err(Error::new(format!("{OP}: bias zero point must be 0")));
            }
            let (scales, zps, qdim) = affine(OP, "weights", &weights)?;
            check_weight_scales(scales, zps, qdim, out_c)?;
            affine(OP, "input", &input)?;
            let (in_q, out_q) = (input.quant(), output.quant());
            let mults = per_channel_multipliers(OP, in_q.scale, scales, out_q.scale, out_c)?;
            let act = activation_range_quantized(p.activation, dtype, out_q.scale, out_q.zero_point).map_err(err)?;
            Kind::Quant16 { mults, act, bias64 }
        }
    };
    Ok((Plan { output_shape, weights, input, bias, p }, kind))
}

fn check_weight_scales(scales: &[f32], zps: &[i32], qdim: i32, out_c: usize) -> Result<()> {
    if scales.len() != 1 && scales.len() != out_c {
        return Err(Error::new(format!("{OP}: {} weight scales for {out_c} output channels", scales.len())));
    }
    if scales.len() > 1 && qdim != 0 {
        return Err(Error::new(format!("{OP}: per-channel weight scales must be along dimension 0")));
    }
    if zps.iter().any(|&z| z != 0) {
        return Err(Error::new(format!("{OP}: per-channel weight zero points must be 0")));
    }
    Ok(())
}

fn quant8_kind(
    input: &TensorView<'_>,
    weights: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    output: &TensorView<'_>,
    out_c: usize,
    act: TfLiteFusedActivation,
) -> Result<Kind> {
    let (scales, zps, qdim) = affine(OP, "weights", weights)?;
    affine(OP, "input", input)?;
    let (in_q, out_q) = (input.quant(), output.quant());
    let (mults, filter_offset) = if input.dtype == TfLiteType::kTfLiteUInt8 {
        if scales.len() > 1 {
            return Err(Error::new(format!("{OP}: per-channel quantization needs int8 or int16 input")));
        }
        let m = legacy_quant_mul(OP, in_q.scale, weights.quant().scale, bias.map(|b| b.quant().scale), out_q.scale)?;
        (vec![m; out_c], -weights.quant().zero_point)
    } else {
        check_weight_scales(scales, zps, qdim, out_c)?;
        (per_channel_multipliers(OP, in_q.scale, scales, out_q.scale, out_c)?, 0)
    };
    let in_range = |v: i32| (-255..=255).contains(&v);
    if !in_range(in_q.zero_point) || !in_range(filter_offset) {
        return Err(Error::new(format!("{OP}: zero points out of the 8-bit range")));
    }
    let act = activation_range_quantized(act, input.dtype, out_q.scale, out_q.zero_point).map_err(err)?;
    Ok(Kind::Quant8 { input_offset: -in_q.zero_point, filter_offset, output_offset: out_q.zero_point, mults, act })
}

/// The output shape the `output_shape` values give, checked against the input batch and
/// the weights' output channels.
fn wanted_shape(plan: &Plan<'_>) -> Result<[i32; 4]> {
    let v = int_values(&plan.output_shape, false).map_err(err)?;
    if v.len() != 4 || v.iter().any(|&d| d < 0 || d > i32::MAX as i64) {
        return Err(Error::new(format!("{OP}: output_shape {v:?} is not a valid 4-D shape")));
    }
    let s = [v[0] as i32, v[1] as i32, v[2] as i32, v[3] as i32];
    if s[0] != plan.input.shape[0] {
        return Err(Error::new(format!(
            "{OP}: output batch {} differs from the input batch {}",
            s[0], plan.input.shape[0]
        )));
    }
    if s[3] != plan.weights.shape[0] {
        return Err(Error::new(format!(
            "{OP}: output depth {} differs from the weights' output channels {}",
            s[3], plan.weights.shape[0]
        )));
    }
    Ok(s)
}

fn geometry(plan: &Plan<'_>, out: [i32; 4]) -> Result<TransposeGeom> {
    let (i, w) = (plan.input.shape, plan.weights.shape);
    let (out_h, out_w) = (out[1] as usize, out[2] as usize);
    let (f_h, f_w) = (w[1] as usize, w[2] as usize);
    let (stride_h, stride_w) = (plan.p.stride_height as usize, plan.p.stride_width as usize);
    let g = TransposeGeom {
        batches: i[0] as usize,
        in_h: i[1] as usize,
        in_w: i[2] as usize,
        in_c: i[3] as usize,
        out_h,
        out_w,
        out_c: out[3] as usize,
        f_h,
        f_w,
        stride_h,
        stride_w,
        pad_h: transpose_padding(plan.p.padding, out_h, f_h, stride_h).map_err(err)?,
        pad_w: transpose_padding(plan.p.padding, out_w, f_w, stride_w).map_err(err)?,
    };
    Ok(g)
}

/// Reorders the integer weights for `g`.
fn pack_int(g: &TransposeGeom, kind: &Kind, weights: &TensorView<'_>) -> Result<IntWeights> {
    match kind {
        Kind::Quant8 { .. } if weights.dtype == TfLiteType::kTfLiteUInt8 => {
            Ok(IntWeights::U8(Packed::new(pack_weights(g, weights.data::<u8>()?)?)))
        }
        _ => Ok(IntWeights::I8(Packed::new(pack_weights(g, weights.data::<i8>()?)?))),
    }
}

/// Packs constant weights for `g` into fresh slots.
fn pack_slots(
    g: &TransposeGeom,
    kind: &Kind,
    plan: &Plan<'_>,
) -> Result<(PackSlot<super::transpose_conv_f32_gemm::Phases>, PackSlot<IntWeights>)> {
    let (w, b) = (&plan.weights, plan.bias.as_ref());
    Ok(match kind {
        Kind::F32 { .. } => {
            (PackSlot::prepare(w, b, || super::transpose_conv_f32_gemm::pack(g, w, b))?, PackSlot::default())
        }
        // Reordered integer weights do not hold the bias.
        _ => (PackSlot::default(), PackSlot::prepare(w, None, || pack_int(g, kind, w))?),
    })
}

impl BuiltinKernel for TransposeConv {
    const NAME: &'static str = OP;
    type Params = TfLiteTransposeConvParams;
    type State = State;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteTransposeConvParams) -> Result<State> {
        let (plan, kind) = plan(ctx, p)?;
        // Hybrid: the quantized input and its per-batch parameters are node temporaries
        // (sized by the input, known even when the output shape is not).
        let temps = match kind {
            Kind::Hybrid { .. } => {
                let batches = plan.input.shape.first().map_or(0, |&d| d.max(0) as usize);
                super::conv_2d::hybrid_temporary_bytes(plan.input.num_elements(), batches)?.to_vec()
            }
            _ => Vec::new(),
        };
        ctx.request_temporaries(&temps)?;
        if !known_at_prepare(&plan.output_shape) {
            plan_declared_output(ctx, OP, 0)?;
            return Ok(State {
                kind,
                fixed: None,
                packed_for: None,
                gemm: PackSlot::default(),
                ints: PackSlot::default(),
            });
        }
        let shape = wanted_shape(&plan)?;
        let g = geometry(&plan, shape)?;
        check_geometry(&g)?;
        ctx.resize_output(0, &shape)?;
        let (gemm, ints) = pack_slots(&g, &kind, &plan)?;
        Ok(State { kind, fixed: Some((shape, g)), packed_for: Some(g), gemm, ints })
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteTransposeConvParams, state: &mut State) -> Result<()> {
        run_node(ctx, p, state, Variant::Optimized, recommended_threads(ctx))
    }
}

/// Checks the tensor sizes a geometry implies.
fn check_geometry(g: &TransposeGeom) -> Result<()> {
    g.check(
        g.len(&[g.batches, g.in_h, g.in_w, g.in_c]).unwrap_or(usize::MAX),
        g.len(&[g.out_c, g.f_h, g.f_w, g.in_c]).unwrap_or(usize::MAX),
        g.len(&[g.batches, g.out_h, g.out_w, g.out_c]).unwrap_or(usize::MAX),
    )
}

fn run_node(
    ctx: &OpCtx<'_>,
    p: &TfLiteTransposeConvParams,
    state: &mut State,
    variant: Variant,
    threads: usize,
) -> Result<()> {
    let plan = operands(ctx, p)?;
    let (shape, g) = match state.fixed {
        Some(f) => f,
        None => {
            // The output shape comes from `output_shape`'s values, known only now.
            let shape = wanted_shape(&plan)?;
            let g = geometry(&plan, shape)?;
            check_geometry(&g)?;
            (shape, g)
        }
    };
    settle_output_shape(ctx, OP, 0, "output_shape values", &shape)?;
    if state.packed_for != Some(g) {
        state.gemm = PackSlot::default();
        state.ints = PackSlot::default();
        state.packed_for = Some(g);
    }
    let mut out = ctx.output(0)?;
    let input = &plan.input;
    let weights = &plan.weights;
    let bias = plan.bias.as_ref();
    let State { kind, gemm, ints, .. } = state;
    let mut fresh_ints = None;
    let int_weights = match (&*kind, variant) {
        (Kind::F32 { .. }, _) | (_, Variant::Reference) => None,
        _ => Some(ints.get(weights, None, &mut fresh_ints, || pack_int(&g, kind, weights))?),
    };
    match &*kind {
        Kind::F32 { act } => {
            let (x, o) = (input.data::<f32>()?, out.data_mut::<f32>()?);
            match variant {
                Variant::Reference => {
                    let b = opt_data_cow::<f32>(bias)?;
                    let ops = FloatOps { bias: b.as_deref(), bias_first: false, act: *act };
                    transpose_conv_reference(&g, &ops, x, weights.data::<f32>()?, o)
                }
                Variant::Optimized => {
                    let mut fresh = None;
                    let packed = gemm
                        .get(weights, bias, &mut fresh, || super::transpose_conv_f32_gemm::pack(&g, weights, bias))?;
                    super::transpose_conv_f32_gemm::compute(packed, &g, x, o, *act, threads)
                }
            }
        }
        Kind::Hybrid { channel_scales, act } => {
            let x = input.data::<f32>()?;
            if g.batches == 0 {
                return Ok(());
            }
            let per = x.len() / g.batches;
            let super::conv_2d::HybridBuffers { data: q, scales, offsets } =
                super::conv_2d::hybrid_temporaries(ctx, 0, x.len(), g.batches)?;
            q.fill(0);
            scales.fill(1.0);
            offsets.fill(0);
            if per > 0 {
                for (bi, (xs, qs)) in x.chunks(per).zip(q.chunks_mut(per)).enumerate() {
                    let (s, z) = asymmetric_quantize(xs, qs);
                    scales[bi] = s;
                    offsets[bi] = z;
                }
            }
            let b = opt_data_cow::<f32>(bias)?;
            let ops = HybridOps {
                batch_scales: scales,
                batch_offsets: offsets,
                channel_scales,
                bias: b.as_deref(),
                act: *act,
            };
            let o = out.data_mut::<f32>()?;
            match int_weights {
                Some(IntWeights::I8(w)) => transpose_conv_optimized(&g, &ops, q, w, o, threads),
                _ => transpose_conv_reference(&g, &ops, q, weights.data::<i8>()?, o),
            }
        }
        Kind::Quant8 { input_offset, filter_offset, output_offset, mults, act } => {
            let b = opt_data_cow::<i32>(bias)?;
            macro_rules! q8 {
                ($t:ty, $v:ident) => {{
                    let ops = Quant8Ops::<$t> {
                        input_offset: *input_offset,
                        filter_offset: *filter_offset,
                        output_offset: *output_offset,
                        bias: b.as_deref(),
                        mults,
                        act: *act,
                        _t: core::marker::PhantomData,
                    };
                    let (x, o) = (input.data::<$t>()?, out.data_mut::<$t>()?);
                    match int_weights {
                        Some(IntWeights::$v(w)) => transpose_conv_optimized(&g, &ops, x, w, o, threads),
                        _ => transpose_conv_reference(&g, &ops, x, weights.data::<$t>()?, o),
                    }
                }};
            }
            if input.dtype == TfLiteType::kTfLiteUInt8 { q8!(u8, U8) } else { q8!(i8, I8) }
        }
        Kind::Quant16 { mults, act, bias64 } => {
            let (x, o) = (input.data::<i16>()?, out.data_mut::<i16>()?);
            let w = match int_weights {
                Some(IntWeights::I8(w)) => Some(&**w),
                _ => None,
            };
            if *bias64 {
                let b = opt_data_cow::<i64>(bias)?;
                let ops = Quant16x64Ops { bias: b.as_deref(), mults, act: *act };
                match w {
                    Some(w) => transpose_conv_optimized(&g, &ops, x, w, o, threads),
                    None => transpose_conv_reference(&g, &ops, x, weights.data::<i8>()?, o),
                }
            } else {
                let b = opt_data_cow::<i32>(bias)?;
                let ops = Quant16x32Ops { bias: b.as_deref(), mults, act: *act };
                match w {
                    Some(w) => transpose_conv_optimized(&g, &ops, x, w, o, threads),
                    None => transpose_conv_reference(&g, &ops, x, weights.data::<i8>()?, o),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Convolution2DTransposeBias glue
// ---------------------------------------------------------------------------------------

/// `Convolution2DTransposeBias`: its state is the geometry worked out at Prepare from
/// the custom options and shapes, and the packed weights.
struct TransposeConvBias;

impl BuiltinKernel for TransposeConvBias {
    const NAME: &'static str = CUSTOM_OP;
    type Params = ();
    type State = CustomState;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<CustomState> {
        let options = parse_custom_options(ctx.custom_initial_data());
        let plan = custom_plan(ctx, options)?;
        ctx.resize_output(0, &custom_out_shape(&plan.geom)).map_err(custom_err)?;
        let gemm = PackSlot::prepare(&plan.weights, Some(&plan.bias), || {
            super::transpose_conv_f32_gemm::pack(&plan.geom, &plan.weights, Some(&plan.bias))
        })?;
        Ok(CustomState { options, geom: plan.geom, gemm })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), state: &mut CustomState) -> Result<()> {
        custom_run(ctx, state, Variant::Optimized, recommended_threads(ctx))
    }
}

/// What Prepare keeps for a `Convolution2DTransposeBias` node.
struct CustomState {
    /// `(padding, stride_width, stride_height)`, or `None` when the options are too short.
    options: Option<(i32, i32, i32)>,
    geom: TransposeGeom,
    gemm: PackSlot<super::transpose_conv_f32_gemm::Phases>,
}

/// Parses the custom options: MediaPipe casts them to `TfLiteTransposeConvParams` and reads
/// the first three int32 fields. `None` when they are shorter.
fn parse_custom_options(b: &[u8]) -> Option<(i32, i32, i32)> {
    let word = |i: usize| Some(i32::from_le_bytes(b.get(4 * i..4 * i + 4)?.try_into().ok()?));
    Some((word(0)?, word(1)?, word(2)?))
}

fn custom_err(e: Error) -> Error {
    Error::with_status(e.status, format!("{CUSTOM_OP}: {}", e.message))
}

/// MediaPipe's output size and padding along one axis: `(out, pad_before)`.
fn custom_axis(same: bool, input: usize, filter: usize, stride: usize) -> Result<(usize, usize)> {
    if input == 0 {
        crate::bail!("input spatial dimensions must be positive");
    }
    let pad = if same { (filter as i64 - ((input - 1) % stride) as i64 - 1).max(0) as usize } else { 0 };
    let out = (input - 1)
        .checked_mul(stride)
        .and_then(|v| v.checked_add(filter))
        .and_then(|v| v.checked_sub(pad))
        .filter(|&v| v <= i32::MAX as usize)
        .ok_or_else(|| Error::new("output size overflows"))?;
    Ok((out, pad / 2))
}

struct CustomPlan<'a> {
    input: TensorView<'a>,
    weights: TensorView<'a>,
    bias: TensorView<'a>,
    geom: TransposeGeom,
}

fn custom_plan<'a>(ctx: &OpCtx<'a>, options: Option<(i32, i32, i32)>) -> Result<CustomPlan<'a>> {
    let (padding, stride_w, stride_h) =
        options.ok_or_else(|| Error::new(format!("{CUSTOM_OP}: custom options are missing or too short")))?;
    if ctx.num_inputs() != 3 || ctx.num_outputs() != 1 {
        return Err(Error::new(format!(
            "{CUSTOM_OP}: expected 3 inputs and 1 output, got {} and {}",
            ctx.num_inputs(),
            ctx.num_outputs()
        )));
    }
    let input = ctx.input(0).map_err(custom_err)?;
    let weights = ctx.input(1).map_err(custom_err)?;
    let bias = ctx.input(2).map_err(custom_err)?;
    let output = ctx.output(0).map_err(custom_err)?;
    if input.shape.len() != 4 || weights.shape.len() != 4 || bias.shape.len() != 1 {
        return Err(Error::new(format!(
            "{CUSTOM_OP}: input {:?}, weights {:?} and bias {:?} must have ranks 4, 4 and 1",
            input.shape, weights.shape, bias.shape
        )));
    }
    let f32t = TfLiteType::kTfLiteFloat32;
    if input.dtype != f32t || weights.dtype != f32t || bias.dtype != f32t || output.dtype != f32t {
        return Err(Error::new(format!("{CUSTOM_OP}: only float32 tensors are supported")));
    }
    let d = |t: &TensorView<'_>, i: usize| super::conv_common::dim(CUSTOM_OP, "tensor", t.shape, i);
    let (batches, in_h, in_w, in_c) = (d(&input, 0)?, d(&input, 1)?, d(&input, 2)?, d(&input, 3)?);
    let (out_c, f_h, f_w, f_c) = (d(&weights, 0)?, d(&weights, 1)?, d(&weights, 2)?, d(&weights, 3)?);
    if f_c != in_c {
        return Err(Error::new(format!(
            "{CUSTOM_OP}: weights {:?} and input {:?} have different channel counts",
            weights.shape, input.shape
        )));
    }
    if d(&bias, 0)? != out_c {
        return Err(Error::new(format!("{CUSTOM_OP}: bias {:?} does not match {out_c} output channels", bias.shape)));
    }
    let stride_h = positive_param(CUSTOM_OP, "stride_height", stride_h)?;
    let stride_w = positive_param(CUSTOM_OP, "stride_width", stride_w)?;
    let same = match padding {
        1 => true,
        2 => false,
        other => return Err(Error::new(format!("{CUSTOM_OP}: padding {other} is neither SAME (1) nor VALID (2)"))),
    };
    let (out_h, pad_h) = custom_axis(same, in_h, f_h, stride_h).map_err(custom_err)?;
    let (out_w, pad_w) = custom_axis(same, in_w, f_w, stride_w).map_err(custom_err)?;
    let geom =
        TransposeGeom { batches, in_h, in_w, in_c, out_h, out_w, out_c, f_h, f_w, stride_h, stride_w, pad_h, pad_w };
    geom.check(
        input.num_elements(),
        weights.num_elements(),
        geom.len(&[batches, out_h, out_w, out_c]).unwrap_or(usize::MAX),
    )
    .map_err(custom_err)?;
    Ok(CustomPlan { input, weights, bias, geom })
}

fn custom_out_shape(g: &TransposeGeom) -> [i32; 4] {
    [g.batches as i32, g.out_h as i32, g.out_w as i32, g.out_c as i32]
}

fn custom_run(ctx: &OpCtx<'_>, state: &mut CustomState, variant: Variant, threads: usize) -> Result<()> {
    let plan = custom_plan(ctx, state.options)?;
    let g = plan.geom;
    if g != state.geom {
        return Err(Error::new(format!("{CUSTOM_OP}: the tensors changed shape since Prepare")));
    }
    let mut out = ctx.output(0).map_err(custom_err)?;
    if out.shape != custom_out_shape(&g) {
        return Err(Error::new(format!("{CUSTOM_OP}: output shape {:?} was not prepared", out.shape)));
    }
    let bias = data_cow::<f32>(&plan.bias)?;
    let ops = FloatOps { bias: Some(&bias), bias_first: true, act: (f32::MIN, f32::MAX) };
    let (x, o) = (plan.input.data::<f32>()?, out.data_mut::<f32>()?);
    let r = match variant {
        Variant::Reference => transpose_conv_reference(&g, &ops, x, plan.weights.data::<f32>()?, o),
        Variant::Optimized => {
            let (w, b) = (&plan.weights, Some(&plan.bias));
            let mut fresh = None;
            let packed = state.gemm.get(w, b, &mut fresh, || super::transpose_conv_f32_gemm::pack(&g, w, b))?;
            super::transpose_conv_f32_gemm::compute(packed, &g, x, o, (f32::MIN, f32::MAX), threads)
        }
    };
    r.map_err(custom_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    fn lcg(seed: &mut u64) -> u32 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*seed >> 33) as u32
    }

    #[test]
    fn float_matches_tflite_test() {
        // transpose_conv_test.cc SimpleTest: 1x4x4x1 input 1..16, 1x3x3x1 weights 1..9,
        // SAME, stride 1.
        let g = TransposeGeom {
            batches: 1,
            in_h: 4,
            in_w: 4,
            in_c: 1,
            out_h: 4,
            out_w: 4,
            out_c: 1,
            f_h: 3,
            f_w: 3,
            stride_h: 1,
            stride_w: 1,
            pad_h: transpose_padding(TfLitePadding::kTfLitePaddingSame, 4, 3, 1).unwrap(),
            pad_w: transpose_padding(TfLitePadding::kTfLitePaddingSame, 4, 3, 1).unwrap(),
        };
        let x: Vec<f32> = (1..=16).map(|v| v as f32).collect();
        let w: Vec<f32> = (1..=9).map(|v| v as f32).collect();
        let ops = FloatOps { bias: None, bias_first: false, act: (f32::MIN, f32::MAX) };
        let mut out = vec![0f32; 16];
        transpose_conv_reference(&g, &ops, &x, &w, &mut out).unwrap();
        assert_eq!(out, [29., 62., 83., 75., 99., 192., 237., 198., 207., 372., 417., 330., 263., 446., 485., 365.]);
        let mut out2 = vec![0f32; 16];
        transpose_conv_optimized(&g, &ops, &x, &pack_weights(&g, &w).unwrap(), &mut out2, 2).unwrap();
        assert_eq!(out, out2);
    }

    #[test]
    fn float_two_strides_valid() {
        // transpose_conv_test.cc SimpleTestWithStrideAndVALID-like: 1x2x2x1, 3x3, stride 2,
        // VALID, output 5x5: weights 1..9 and input [1,2,3,4].
        let g = TransposeGeom {
            batches: 1,
            in_h: 2,
            in_w: 2,
            in_c: 1,
            out_h: 5,
            out_w: 5,
            out_c: 1,
            f_h: 3,
            f_w: 3,
            stride_h: 2,
            stride_w: 2,
            pad_h: 0,
            pad_w: 0,
        };
        assert_eq!(transpose_padding(TfLitePadding::kTfLitePaddingValid, 5, 3, 2).unwrap(), 0);
        let ops = FloatOps { bias: None, bias_first: false, act: (f32::MIN, f32::MAX) };
        let w: Vec<f32> = (1..=9).map(|v| v as f32).collect();
        let mut out = vec![0f32; 25];
        transpose_conv_reference(&g, &ops, &[1., 2., 3., 4.], &w, &mut out).unwrap();
        assert_eq!(
            out,
            [
                1., 2., 5., 4., 6., 4., 5., 14., 10., 12., 10., 14., 36., 24., 30., 12., 15., 34., 20., 24., 21., 24.,
                55., 32., 36.
            ]
        );
    }

    #[test]
    fn paths_agree_on_random_geometries() {
        let mut seed = 7u64;
        for case in 0..40 {
            let mut r = |m: u32| (lcg(&mut seed) % m) as usize;
            let (batches, in_h, in_w, in_c) = (1 + r(2), 1 + r(5), 1 + r(5), 1 + r(4));
            let (out_c, f_h, f_w, s_h, s_w) = (1 + r(5), 1 + r(4), 1 + r(4), 1 + r(3), 1 + r(3));
            let padding =
                if case % 2 == 0 { TfLitePadding::kTfLitePaddingSame } else { TfLitePadding::kTfLitePaddingValid };
            let out_h = (in_h - 1) * s_h + f_h - r(2);
            let out_w = (in_w - 1) * s_w + f_w - r(2);
            let g = TransposeGeom {
                batches,
                in_h,
                in_w,
                in_c,
                out_h,
                out_w,
                out_c,
                f_h,
                f_w,
                stride_h: s_h,
                stride_w: s_w,
                pad_h: transpose_padding(padding, out_h, f_h, s_h).unwrap(),
                pad_w: transpose_padding(padding, out_w, f_w, s_w).unwrap(),
            };
            let n_in = batches * in_h * in_w * in_c;
            let n_w = out_c * f_h * f_w * in_c;
            let n_out = batches * out_h * out_w * out_c;
            // Float, both bias conventions.
            let x: Vec<f32> = (0..n_in).map(|_| (lcg(&mut seed) % 2001) as f32 / 1000.0 - 1.0).collect();
            let w: Vec<f32> = (0..n_w).map(|_| (lcg(&mut seed) % 2001) as f32 / 997.0 - 1.0).collect();
            let bias: Vec<f32> = (0..out_c).map(|i| i as f32 * 0.37 - 0.5).collect();
            for bias_first in [false, true] {
                let ops = FloatOps { bias: Some(&bias), bias_first, act: (-2.0, 3.0) };
                let (mut a, mut b) = (vec![0f32; n_out], vec![0f32; n_out]);
                transpose_conv_reference(&g, &ops, &x, &w, &mut a).unwrap();
                transpose_conv_optimized(&g, &ops, &x, &pack_weights(&g, &w).unwrap(), &mut b, 3).unwrap();
                assert_eq!(
                    a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
            }
            // int8.
            let xq: Vec<i8> = (0..n_in).map(|_| lcg(&mut seed) as i8).collect();
            let wq: Vec<i8> = (0..n_w).map(|_| lcg(&mut seed) as i8).collect();
            let bq: Vec<i32> = (0..out_c).map(|i| i as i32 * 1000 - 2000).collect();
            let mults: Vec<QuantMul> = (0..out_c)
                .map(|i| {
                    let (multiplier, shift) = crate::kernels::quant::quantize_multiplier(0.0004 * (i + 1) as f64);
                    QuantMul { multiplier, shift }
                })
                .collect();
            let ops = Quant8Ops::<i8> {
                input_offset: 3,
                filter_offset: 0,
                output_offset: -5,
                bias: Some(&bq),
                mults: &mults,
                act: (-128, 127),
                _t: core::marker::PhantomData,
            };
            let (mut a, mut b) = (vec![0i8; n_out], vec![0i8; n_out]);
            transpose_conv_reference(&g, &ops, &xq, &wq, &mut a).unwrap();
            run(Variant::Optimized, &g, &ops, &xq, &wq, &mut b, 2).unwrap();
            assert_eq!(a, b);
            // 16x8, both accumulators.
            let x16: Vec<i16> = (0..n_in).map(|_| lcg(&mut seed) as i16).collect();
            let b64: Vec<i64> = (0..out_c).map(|i| i as i64 * 100_000 - 7).collect();
            let ops = Quant16x64Ops { bias: Some(&b64), mults: &mults, act: (-32768, 32767) };
            let (mut a, mut b) = (vec![0i16; n_out], vec![0i16; n_out]);
            transpose_conv_reference(&g, &ops, &x16, &wq, &mut a).unwrap();
            run(Variant::Optimized, &g, &ops, &x16, &wq, &mut b, 2).unwrap();
            assert_eq!(a, b);
            let ops = Quant16x32Ops { bias: Some(&bq), mults: &mults, act: (-32768, 32767) };
            transpose_conv_reference(&g, &ops, &x16, &wq, &mut a).unwrap();
            run(Variant::Optimized, &g, &ops, &x16, &wq, &mut b, 2).unwrap();
            assert_eq!(a, b);
            // Hybrid.
            let cs: Vec<f32> = (0..out_c).map(|i| 0.01 + i as f32 * 0.003).collect();
            let bs: Vec<f32> = (0..batches).map(|i| 0.02 + i as f32 * 0.01).collect();
            let bo: Vec<i32> = (0..batches).map(|i| i as i32 * 3 - 2).collect();
            let ops = HybridOps {
                batch_scales: &bs,
                batch_offsets: &bo,
                channel_scales: &cs,
                bias: Some(&bias),
                act: (-5.0, 5.0),
            };
            let (mut a, mut b) = (vec![0f32; n_out], vec![0f32; n_out]);
            transpose_conv_reference(&g, &ops, &xq, &wq, &mut a).unwrap();
            run(Variant::Optimized, &g, &ops, &xq, &wq, &mut b, 2).unwrap();
            assert_eq!(
                a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn sizes_are_checked() {
        let g = TransposeGeom {
            batches: 1,
            in_h: 2,
            in_w: 2,
            in_c: 1,
            out_h: 4,
            out_w: 4,
            out_c: 1,
            f_h: 2,
            f_w: 2,
            stride_h: 2,
            stride_w: 2,
            pad_h: 0,
            pad_w: 0,
        };
        let ops = FloatOps { bias: None, bias_first: false, act: (f32::MIN, f32::MAX) };
        let mut out = vec![0f32; 15];
        assert!(transpose_conv_reference(&g, &ops, &[1.0; 4], &[1.0; 4], &mut out).is_err());
        assert!(transpose_conv_optimized(&g, &ops, &[1.0; 3], &[1.0; 4], &mut [0f32; 16], 1).is_err());
        assert_eq!(custom_axis(true, 128, 2, 2).unwrap(), (256, 0));
        assert_eq!(custom_axis(true, 5, 3, 1).unwrap(), (5, 1));
        assert_eq!(custom_axis(false, 5, 3, 2).unwrap(), (11, 0));
        assert!(custom_axis(true, 0, 3, 1).is_err());
    }

    #[test]
    fn glue_int8() {
        let mut g = Graph::new();
        let shape = g.tensor(kTfLiteInt32, &[4], &[1i32, 4, 4, 1], None, true);
        let w = g.tensor(kTfLiteInt8, &[1, 3, 3, 1], &[1i8, 2, 3, 4, 5, 6, 7, 8, 9], Some(qp(1.0, 0)), true);
        let x: Vec<i8> = (1..=16).collect();
        let xi = g.tensor(kTfLiteInt8, &[1, 4, 4, 1], &x, Some(qp(1.0, 0)), false);
        let o = g.output(kTfLiteInt8, Some(qp(4.0, 0)));
        let p = TfLiteTransposeConvParams {
            padding: TfLitePadding::kTfLitePaddingSame,
            stride_width: 1,
            stride_height: 1,
            ..Default::default()
        };
        assert_eq!(g.run(&registration(), &[shape, w, xi], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![1, 4, 4, 1]);
        // The float answers times 1/4 through TFLite's double-rounding requantization.
        let (m, sh) = crate::kernels::quant::quantize_multiplier(0.25);
        let want: Vec<i8> = [29, 62, 83, 75, 99, 192, 237, 198, 207, 372, 417, 330, 263, 446, 485, 365]
            .iter()
            .map(|&v| multiply_by_quantized_multiplier(v, m, sh).clamp(-128, 127) as i8)
            .collect();
        assert_eq!(g.data::<i8>(o), want);
        // A wrong output depth is refused.
        let bad = g.tensor(kTfLiteInt32, &[4], &[1i32, 4, 4, 2], None, true);
        let o2 = g.output(kTfLiteInt8, Some(qp(4.0, 0)));
        assert_eq!(g.run(&registration(), &[bad, w, xi], &[o2], Some(p)), TfLiteStatus::kTfLiteError);
        // Zero stride is refused.
        let p0 = TfLiteTransposeConvParams { stride_width: 0, ..p };
        let o3 = g.output(kTfLiteInt8, Some(qp(4.0, 0)));
        assert_eq!(g.run(&registration(), &[shape, w, xi], &[o3], Some(p0)), TfLiteStatus::kTfLiteError);
    }

    #[test]
    fn custom_op_without_init_fails_cleanly() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[1, 2, 2, 1], &[1f32; 4], None, false);
        let w = g.tensor(kTfLiteFloat32, &[1, 2, 2, 1], &[1f32; 4], None, true);
        let b = g.tensor(kTfLiteFloat32, &[1], &[0.5f32], None, true);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(
            g.run::<()>(&transpose_conv_bias_registration(), &[x, w, b], &[o], None),
            TfLiteStatus::kTfLiteError
        );
    }

    #[test]
    fn custom_options_are_parsed() {
        let opts: [u8; 12] = [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0];
        assert_eq!(parse_custom_options(&opts), Some((1, 2, 3)));
        assert_eq!(parse_custom_options(&opts[..11]), None);
        assert_eq!(parse_custom_options(&[]), None);
    }
}
