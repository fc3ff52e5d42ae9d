//! FULLY_CONNECTED (TFLite `kernels/fully_connected.cc`; reference kernels
//! `reference/fully_connected.h`, `reference/integer_ops/fully_connected.h`, and the
//! hybrid path through `tensor_utils`), replacing the float-only `fully_connected.rs`.
//!
//! Inputs: the input (any rank, flattened to `[batches, depth]`), weights `[units, depth]`
//! and an optional bias `[units]` (absent, or -1). Output: `keep_num_dims` ? the input's
//! shape with the last dimension replaced by `units` : `[input_elements / depth, units]`.
//!
//! Types, dispatched as TFLite does:
//! - float32: `sum(x * w) + bias`, clamped (the fused activation must be NONE or a RELU).
//! - uint8 / int8 / int16 inputs with uint8 / int8 weights (int8 and int16 may have
//!   per-channel weight scales, symmetric), int32 (or, for int16, int64) bias: the integer
//!   dot product is requantized in double precision, `round(acc * in_scale * w_scale /
//!   out_scale)` (half away from zero), as TFLite's reference kernels do since they do
//!   "requant in float"; uint8 x uint8 -> int16 is the legacy path with the same
//!   requantization. The output's type selects the kernel (uint8, int8 or int16).
//! - hybrid (dynamic range): float32 input and output with int8 (or uint8, read as int8)
//!   weights, per-tensor or per-channel: each batch row is quantized to int8, symmetrically
//!   or (`asymmetric_quantize_inputs`) with a zero point; the output is
//!   `bias + float(dot - row_sum * zero_point) * batch_scale * weight_scale`, then the
//!   fused activation as a function (TANH and SIGMOID included).
//!
//! [`Variant::Reference`] loops as TFLite's reference kernels. The optimized float32 path
//! runs on the GEMM microkernels as a 1x1 convolution (weights packed once per node; the
//! result differs from the reference by float rounding only); the integer paths use
//! weights repacked in blocks of 8 units (cached per node for constant weights) with exact
//! integer sums, split over threads.
//! Sparse weights (constants with sparsity parameters) are expanded to dense once at
//! Prepare. Float32 ones (any layout) then run as dense weights, which is what TFLite's
//! reference kernel computes (it expands them at every Eval). Int8 ones with int8 input
//! and output must be symmetric and in TFLite's 1x16 block layout, the only one its
//! sparse 8-bit kernel takes; their sums are exact integers, requantized in fixed point
//! (`MultiplyByQuantizedMultiplier`, per channel where the weights are) as that kernel
//! does, unlike the dense 8-bit path's double-precision requantization.
//! Sparse hybrid layers (float input, int8 or uint8 weights in the same 1x16 blocks, per
//! tensor or per channel) follow TFLite's sparse hybrid kernel, whose float steps differ
//! from the dense hybrid path's (see [`fc_sparse_hybrid`]).
//! Not supported (an error): shuffled, 16-bit, int4 and int16 weights.

use super::conv_common::{
    PackSlot, checked_product, opt_data_cow, per_channel_multipliers, recommended_threads, threads_for,
};
use crate::abi::builtin_op_data::{
    TfLiteFullyConnectedParams, TfLiteFullyConnectedWeightsFormat, TfLiteFusedActivation,
};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::activation::{activation_range_f32, activation_range_quantized, apply_f32, clamp_min_max};
use crate::kernels::api::{OpCtx, TensorView, TensorViewMut};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::QuantInt;
use crate::kernels::threadpool::parallel_chunks_mut;
use crate::microkernels::f32_gemm::{DenseRows, PackedGemm};
use crate::microkernels::packed::Packed;
use crate::microkernels::qs8_gemm::{self, DenseFilter, PackedQs8Gemm, Qs8GemmKernels};
use crate::microkernels::table;

const OP: &str = "FULLY_CONNECTED";

/// The FULLY_CONNECTED registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<FullyConnected>(TfLiteBuiltinOperator::kTfLiteBuiltinFullyConnected)
}

/// Which implementation computes a fully-connected layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Reference,
    Optimized,
}

/// The sizes of a fully-connected layer: `batches` rows of `depth` inputs, `units` outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FcDims {
    pub batches: usize,
    pub depth: usize,
    pub units: usize,
}

fn check(d: FcDims, input: usize, weights: usize, bias: Option<usize>, out: usize) -> Result<()> {
    let need = |a: usize, b: usize| a.checked_mul(b).ok_or_else(|| Error::new("size overflow"));
    if input < need(d.batches, d.depth)? {
        return Err(Error::new(format!("input holds {input} values, needs {} x {}", d.batches, d.depth)));
    }
    if weights != need(d.units, d.depth)? {
        return Err(Error::new(format!("weights hold {weights} values, expected {} x {}", d.units, d.depth)));
    }
    if out != need(d.batches, d.units)? {
        return Err(Error::new(format!("output holds {out} values, expected {} x {}", d.batches, d.units)));
    }
    if let Some(b) = bias.filter(|&b| b != d.units) {
        return Err(Error::new(format!("bias holds {b} values, expected {}", d.units)));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Reference maths on slices
// ---------------------------------------------------------------------------------------

/// Float layer, TFLite's `reference_ops::FullyConnected`: a sequential `f32` dot product
/// per output, plus the bias, clamped.
pub fn fc_f32_reference(
    input: &[f32],
    weights: &[f32],
    bias: Option<&[f32]>,
    d: FcDims,
    out: &mut [f32],
    act: (f32, f32),
) -> Result<()> {
    check(d, input.len(), weights.len(), bias.map(|b| b.len()), out.len())?;
    for b in 0..d.batches {
        let x = &input[b * d.depth..(b + 1) * d.depth];
        for u in 0..d.units {
            let w = &weights[u * d.depth..(u + 1) * d.depth];
            let mut total = 0.0f32;
            for (&xi, &wi) in x.iter().zip(w) {
                total += xi * wi;
            }
            out[b * d.units + u] = clamp_min_max(total + bias.map_or(0.0, |bb| bb[u]), act.0, act.1);
        }
    }
    Ok(())
}

/// Requantization of a quantized layer, in double precision as TFLite's reference kernels.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantFcParams {
    /// `-input_zero_point`.
    pub input_offset: i32,
    /// `-weights_zero_point` (per-tensor weights; 0 for per-channel).
    pub weights_offset: i32,
    /// `output_zero_point`.
    pub output_offset: i32,
    /// `input_scale * weight_scale / output_scale` per unit (or one for all units).
    pub scales: Vec<f64>,
    pub act_min: i32,
    pub act_max: i32,
    /// The uint8 -> int16 legacy kernel: 16-bit operands, clamp before adding the offset.
    pub legacy_u8_to_i16: bool,
}

impl QuantFcParams {
    /// The effective scale as TFLite computes it: `double(in) * double(w) / double(out)`.
    pub fn effective_scale(input_scale: f32, weight_scale: f32, output_scale: f32) -> f64 {
        input_scale as f64 * weight_scale as f64 / output_scale as f64
    }

    #[inline]
    fn finish(&self, acc: i64, u: usize) -> i32 {
        let s = if self.scales.len() == 1 { self.scales[0] } else { self.scales[u] };
        // `static_cast<int32_t>(round(double(acc) * scale))`; saturating where C is undefined.
        let scaled = (acc as f64 * s).round() as i32;
        if self.legacy_u8_to_i16 {
            scaled
                .clamp(self.act_min.wrapping_sub(self.output_offset), self.act_max.wrapping_sub(self.output_offset))
                .wrapping_add(self.output_offset)
        } else {
            scaled.wrapping_add(self.output_offset).clamp(self.act_min, self.act_max)
        }
    }
}

/// The integer accumulator of a quantized layer: `i32` (wrapping, int32 bias) or `i64`.
#[derive(Clone, Copy, Debug)]
pub enum QBias<'a> {
    I32(Option<&'a [i32]>),
    I64(Option<&'a [i64]>),
}

impl QBias<'_> {
    fn len(&self) -> Option<usize> {
        match self {
            QBias::I32(b) => b.map(|b| b.len()),
            QBias::I64(b) => b.map(|b| b.len()),
        }
    }

    /// `acc` (the dot product, accumulated in the bias type) plus the bias.
    #[inline]
    fn add(&self, dot: i64, u: usize) -> i64 {
        match self {
            QBias::I32(b) => (dot as i32).wrapping_add(b.map_or(0, |b| b[u])) as i64,
            QBias::I64(b) => dot.wrapping_add(b.map_or(0, |b| b[u])),
        }
    }

    fn wide(&self) -> bool {
        matches!(self, QBias::I64(_))
    }
}

/// Quantized layer, TFLite's reference `FullyConnected` / `FullyConnectedPerChannel` with
/// float scales: `acc += (w + weights_offset) * (x + input_offset)` in the bias type, plus
/// the bias, then `round(acc * scale) + output_offset` clamped (see [`QuantFcParams`]).
pub fn fc_quant_reference<T: QuantInt, W: QuantInt, O: QuantInt>(
    input: &[T],
    weights: &[W],
    bias: QBias<'_>,
    d: FcDims,
    p: &QuantFcParams,
    out: &mut [O],
) -> Result<()> {
    check(d, input.len(), weights.len(), bias.len(), out.len())?;
    if p.scales.len() != 1 && p.scales.len() != d.units {
        return Err(Error::new(format!("{} weight scales for {} units", p.scales.len(), d.units)));
    }
    for b in 0..d.batches {
        let x = &input[b * d.depth..(b + 1) * d.depth];
        for u in 0..d.units {
            let w = &weights[u * d.depth..(u + 1) * d.depth];
            let dot = if bias.wide() {
                x.iter()
                    .zip(w)
                    .fold(0i64, |acc, (&xi, &wi)| acc.wrapping_add(operand_product(p, xi.to_i32(), wi.to_i32()) as i64))
            } else {
                x.iter()
                    .zip(w)
                    .fold(0i32, |acc, (&xi, &wi)| acc.wrapping_add(operand_product(p, xi.to_i32(), wi.to_i32())))
                    as i64
            };
            out[b * d.units + u] = O::from_i32(p.finish(bias.add(dot, u), u));
        }
    }
    Ok(())
}

/// `(w + weights_offset) * (x + input_offset)`; the legacy uint8 -> int16 kernel truncates
/// both operands to `int16_t` first.
#[inline]
fn operand_product(p: &QuantFcParams, x: i32, w: i32) -> i32 {
    let (xv, wv) = (x.wrapping_add(p.input_offset), w.wrapping_add(p.weights_offset));
    if p.legacy_u8_to_i16 { (xv as i16 as i32).wrapping_mul(wv as i16 as i32) } else { wv.wrapping_mul(xv) }
}

/// The per-row quantization of a hybrid layer's input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HybridRows<'a> {
    pub data: &'a [i8],
    /// Per batch row; for per-tensor weights already times the weight scale.
    pub scales: &'a [f32],
    pub offsets: &'a [i32],
}

/// Owned [`HybridRows`] (tests).
pub struct OwnedHybridRows {
    pub data: Vec<i8>,
    pub scales: Vec<f32>,
    pub offsets: Vec<i32>,
}

impl OwnedHybridRows {
    pub fn view(&self) -> HybridRows<'_> {
        HybridRows { data: &self.data, scales: &self.scales, offsets: &self.offsets }
    }
}

/// [`quantize_rows_into`] fresh vectors.
pub fn quantize_rows(input: &[f32], d: FcDims, asymmetric: bool, weight_scale: Option<f32>) -> Result<OwnedHybridRows> {
    let n = d.batches.checked_mul(d.depth).ok_or_else(|| Error::new("size overflow"))?;
    let mut o = OwnedHybridRows { data: vec![0i8; n], scales: vec![0.0f32; d.batches], offsets: vec![0i32; d.batches] };
    quantize_rows_into(input, d, asymmetric, weight_scale, &mut o.data, &mut o.scales, &mut o.offsets)?;
    Ok(o)
}

/// The node temporaries a hybrid layer requests in Prepare (byte sizes): the int8 input
/// rows, their scales and zero points (TFLite's `input_quantized`, `scaling_factors`,
/// `input_offsets`) and the rows widened to int16. The weight row sums are computed from
/// the weights once, with their packing.
fn hybrid_temporary_bytes(d: FcDims) -> Result<[usize; 4]> {
    let of = || Error::new(format!("{OP}: scratch size overflow"));
    let n = d.batches.checked_mul(d.depth).ok_or_else(of)?;
    let b4 = d.batches.checked_mul(4).ok_or_else(of)?;
    Ok([n, b4, b4, n.checked_mul(2).ok_or_else(of)?])
}

/// `BatchQuantizeFloats`: each of the `d.batches` rows symmetrically (zero point 0) or
/// asymmetrically into `data`/`scales`/`offsets` (every element written); per-tensor
/// weights fold `weight_scale` into the row scales.
pub fn quantize_rows_into<'a>(
    input: &[f32],
    d: FcDims,
    asymmetric: bool,
    weight_scale: Option<f32>,
    data: &'a mut [i8],
    scales: &'a mut [f32],
    offsets: &'a mut [i32],
) -> Result<HybridRows<'a>> {
    let n = d.batches.checked_mul(d.depth).ok_or_else(|| Error::new("size overflow"))?;
    if input.len() < n {
        return Err(Error::new(format!("input holds {} values, needs {n}", input.len())));
    }
    if data.len() != n || scales.len() != d.batches || offsets.len() != d.batches {
        return Err(Error::new("hybrid buffers do not match the input"));
    }
    scales.fill(0.0);
    offsets.fill(0);
    for b in 0..d.batches {
        let r = b * d.depth..(b + 1) * d.depth;
        if asymmetric {
            let (s, z) = super::conv_common::asymmetric_quantize(&input[r.clone()], &mut data[r]);
            scales[b] = s;
            offsets[b] = z;
        } else {
            scales[b] = super::conv_common::symmetric_quantize(&input[r.clone()], &mut data[r]);
        }
        if let Some(ws) = weight_scale {
            scales[b] *= ws;
        }
    }
    Ok(HybridRows { data, scales, offsets })
}

/// The exact (wrapping) 32-bit dot product of two int8 rows, as the hybrid kernels sum.
#[inline]
fn dot_i8(x: &[i8], w: &[i8]) -> i32 {
    x.iter().zip(w).fold(0i32, |acc, (&xi, &wi)| acc.wrapping_add(i32::from(xi) * i32::from(wi)))
}

/// The (wrapping) 32-bit sum of an int8 weight row: the hybrid kernels' row sum.
#[inline]
fn sum_i8(w: &[i8]) -> i32 {
    w.iter().fold(0i32, |acc, &wi| acc.wrapping_add(i32::from(wi)))
}

#[inline]
fn hybrid_finish(
    dot: i32,
    row_sum: i32,
    offset: i32,
    batch_scale: f32,
    channel_scale: Option<f32>,
    bias: f32,
    act: TfLiteFusedActivation,
) -> f32 {
    let mut scale = batch_scale;
    if let Some(cs) = channel_scale {
        scale *= cs;
    }
    let dot = dot.wrapping_sub(row_sum.wrapping_mul(offset));
    apply_f32(bias + dot as f32 * scale, act)
}

/// Hybrid layer, TFLite's `EvalHybridDense` with `MatrixBatchVectorMultiplyAccumulate`.
/// `channel_scales` is `None` for per-tensor weights (whose scale is in `q.scales`).
pub fn fc_hybrid_reference(
    q: &HybridRows<'_>,
    weights: &[i8],
    channel_scales: Option<&[f32]>,
    bias: Option<&[f32]>,
    d: FcDims,
    act: TfLiteFusedActivation,
    out: &mut [f32],
) -> Result<()> {
    check(d, q.data.len(), weights.len(), bias.map(|b| b.len()), out.len())?;
    if let Some(cs) = channel_scales.filter(|cs| cs.len() != d.units) {
        return Err(Error::new(format!("{} channel scales for {} units", cs.len(), d.units)));
    }
    for b in 0..d.batches {
        let x = &q.data[b * d.depth..(b + 1) * d.depth];
        for u in 0..d.units {
            let w = &weights[u * d.depth..(u + 1) * d.depth];
            let (dot, row_sum) = (dot_i8(x, w), sum_i8(w));
            out[b * d.units + u] = hybrid_finish(
                dot,
                row_sum,
                q.offsets[b],
                q.scales[b],
                channel_scales.map(|c| c[u]),
                bias.map_or(0.0, |bb| bb[u]),
                act,
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Optimized maths
// ---------------------------------------------------------------------------------------

/// Units per weight block of the optimized layer.
const BLOCK: usize = 8;

/// Repacks `[units][depth]` weights into blocks of [`BLOCK`] units, `[block][depth][BLOCK]`
/// (the last block zero-padded), mapping values through `f`.
pub fn pack_weights<S: Copy, E: Copy + Default>(weights: &[S], d: FcDims, f: impl Fn(S) -> E) -> Result<Vec<E>> {
    let need = d.units.checked_mul(d.depth).ok_or_else(|| Error::new("size overflow"))?;
    if weights.len() != need {
        return Err(Error::new(format!("weights hold {} values, expected {need}", weights.len())));
    }
    let blocks = d.units.div_ceil(BLOCK);
    let mut packed = vec![E::default(); blocks * d.depth * BLOCK];
    for u in 0..d.units {
        let (blk, j) = (u / BLOCK, u % BLOCK);
        for k in 0..d.depth {
            packed[(blk * d.depth + k) * BLOCK + j] = f(weights[u * d.depth + k]);
        }
    }
    Ok(packed)
}

/// Multiply-accumulate of the optimized layer (see `conv_2d::ConvElem`).
trait FcElem: Copy + Send + Sync + Default + 'static {
    type Acc: Copy + Send + Sync + Default;
    fn mac(acc: Self::Acc, a: Self, w: Self) -> Self::Acc;
}

impl FcElem for i16 {
    type Acc = i32;
    #[inline(always)]
    fn mac(acc: i32, a: i16, w: i16) -> i32 {
        acc.wrapping_add(a as i32 * w as i32)
    }
}

/// Computes `out[b][u] = finish(dot(x_b, w_u), b, u)` for the units of blocks
/// `blocks` (of the packed weights), writing `out_units` (the units of those blocks of
/// batch row `b`, starting at `units.start`).
#[inline(always)]
fn fc_block_rows<E: FcElem, O>(
    x: &[E],
    packed: &[E],
    d: FcDims,
    b: usize,
    units: core::ops::Range<usize>,
    out_units: &mut [O],
    finish: &(impl Fn(E::Acc, usize, usize) -> O + Sync),
) {
    let mut u0 = units.start;
    while u0 < units.end {
        let blk = u0 / BLOCK;
        let n = BLOCK.min(d.units - u0).min(units.end - u0);
        let wb = &packed[blk * d.depth * BLOCK..(blk + 1) * d.depth * BLOCK];
        let mut acc = [E::Acc::default(); BLOCK];
        for (&a, w) in x.iter().zip(wb.chunks_exact(BLOCK)) {
            let w: &[E; BLOCK] = w.try_into().expect("chunk of BLOCK");
            for j in 0..BLOCK {
                acc[j] = E::mac(acc[j], a, w[j]);
            }
        }
        for j in 0..n {
            out_units[u0 - units.start + j] = finish(acc[j], b, u0 + j);
        }
        u0 += n;
    }
}

/// [`fc_block_rows`], in the AVX2 build when the CPU has it.
fn fc_chunk<E: FcElem, O>(
    x: &[E],
    packed: &[E],
    d: FcDims,
    b: usize,
    units: core::ops::Range<usize>,
    out_units: &mut [O],
    finish: &(impl Fn(E::Acc, usize, usize) -> O + Sync),
) {
    #[cfg(target_arch = "x86_64")]
    if super::conv_2d::have_avx2() {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { fc_block_rows_avx2(x, packed, d, b, units, out_units, finish) };
        return;
    }
    fc_block_rows(x, packed, d, b, units, out_units, finish)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fc_block_rows_avx2<E: FcElem, O>(
    x: &[E],
    packed: &[E],
    d: FcDims,
    b: usize,
    units: core::ops::Range<usize>,
    out_units: &mut [O],
    finish: &(impl Fn(E::Acc, usize, usize) -> O + Sync),
) {
    fc_block_rows(x, packed, d, b, units, out_units, finish)
}

/// Runs [`fc_block_rows`] over all rows and units, split across threads (by batch rows,
/// or by unit blocks for a single row).
fn fc_optimized<E: FcElem, O: Send>(
    input: &[E],
    packed: &[E],
    d: FcDims,
    out: &mut [O],
    threads: usize,
    finish: &(impl Fn(E::Acc, usize, usize) -> O + Sync),
) -> Result<()> {
    let need = d.batches.checked_mul(d.depth).ok_or_else(|| Error::new("size overflow"))?;
    if input.len() < need || out.len() != d.batches * d.units {
        return Err(Error::new("input or output size does not match the layer"));
    }
    if packed.len() != d.units.div_ceil(BLOCK) * d.depth * BLOCK {
        return Err(Error::new("packed weights do not match the layer"));
    }
    if out.is_empty() {
        return Ok(());
    }
    let work = out.len().saturating_mul(d.depth);
    if d.batches == 1 {
        // One row: split the units, in whole blocks.
        let threads = threads_for(threads, work, d.units.div_ceil(BLOCK));
        let x = &input[..d.depth];
        return super::conv_common::parallel_rows(threads, out, BLOCK, &|first, chunk: &mut [O]| {
            let start = first * BLOCK;
            fc_chunk(x, packed, d, 0, start..start + chunk.len(), chunk, finish);
            Ok(())
        });
    }
    let threads = threads_for(threads, work, d.batches);
    super::conv_common::parallel_rows(threads, out, d.units, &|first, chunk: &mut [O]| {
        for (i, row) in chunk.chunks_mut(d.units).enumerate() {
            let b = first + i;
            fc_chunk(&input[b * d.depth..(b + 1) * d.depth], packed, d, b, 0..d.units, row, finish);
        }
        Ok(())
    })
}

/// Quantized layer on widened operands (`x + input_offset`, packed `w + weights_offset`
/// as `i16`); identical to [`fc_quant_reference`] (except the legacy uint8 -> int16
/// kernel, which has no optimized path).
pub fn fc_quant_optimized<O: QuantInt>(
    input_wide: &[i16],
    packed: &[i16],
    bias: QBias<'_>,
    d: FcDims,
    p: &QuantFcParams,
    out: &mut [O],
    threads: usize,
) -> Result<()> {
    if p.legacy_u8_to_i16 {
        return Err(Error::new("the uint8 -> int16 kernel has no optimized path"));
    }
    if bias.len().is_some_and(|l| l != d.units) || (p.scales.len() != 1 && p.scales.len() != d.units) {
        return Err(Error::new("bias or scales do not match the units"));
    }
    if bias.wide() {
        // i64 accumulation: products are below 2^17, so an i32 sum of fewer than 2^14 terms
        // is exact; longer rows use the reference loop.
        if d.depth >= 1 << 14 {
            return Err(Error::new("rows too long for the optimized int64 path"));
        }
    }
    fc_optimized(input_wide, packed, d, out, threads, &|acc: i32, _b, u| {
        O::from_i32(p.finish(bias.add(acc as i64, u), u))
    })
}

/// Hybrid layer on packed `i16` weights; identical to [`fc_hybrid_reference`].
#[allow(clippy::too_many_arguments)]
pub fn fc_hybrid_optimized(
    q: &HybridRows<'_>,
    packed: &[i16],
    row_sums: &[i32],
    channel_scales: Option<&[f32]>,
    bias: Option<&[f32]>,
    d: FcDims,
    act: TfLiteFusedActivation,
    out: &mut [f32],
    threads: usize,
    wide: &mut [i16],
) -> Result<()> {
    if row_sums.len() != d.units
        || bias.is_some_and(|b| b.len() != d.units)
        || channel_scales.is_some_and(|c| c.len() != d.units)
    {
        return Err(Error::new("row sums, bias or channel scales do not match the units"));
    }
    if q.scales.len() != d.batches || q.offsets.len() != d.batches {
        return Err(Error::new("row scales do not match the batches"));
    }
    if wide.len() != q.data.len() {
        return Err(Error::new("the widened input buffer does not match the input"));
    }
    for (w, &v) in wide.iter_mut().zip(q.data) {
        *w = v as i16;
    }
    fc_optimized(wide, packed, d, out, threads, &|dot: i32, b, u| {
        hybrid_finish(
            dot,
            row_sums[u],
            q.offsets[b],
            q.scales[b],
            channel_scales.map(|c| c[u]),
            bias.map_or(0.0, |bb| bb[u]),
            act,
        )
    })
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

/// The output shape TFLite's Prepare gives (see the module doc); `input` and `weights` are
/// shapes. An input whose size is not a multiple of the depth is truncated to whole rows.
pub fn output_shape(input: &[i32], weights: &[i32], keep_num_dims: bool) -> Result<Vec<i32>> {
    if weights.len() != 2 {
        return Err(Error::new(format!("weights must have rank 2, got shape {weights:?}")));
    }
    let (units, depth) = (weights[0], weights[1]);
    if units < 0 || depth < 0 || input.iter().any(|&d| d < 0) {
        return Err(Error::new(format!("negative dimension in input {input:?} or weights {weights:?}")));
    }
    if keep_num_dims {
        let Some(&last) = input.last() else {
            return Err(Error::new("keep_num_dims needs an input of rank 1 or more"));
        };
        if depth != 0 && last != depth {
            return Err(Error::new(format!(
                "input's last dimension {last} does not match the weights' {depth} (keep_num_dims)"
            )));
        }
        let mut shape = input.to_vec();
        if let Some(l) = shape.last_mut() {
            *l = units;
        }
        return Ok(shape);
    }
    let total = input.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d as i64));
    let batches = if depth == 0 {
        input
            .split_last()
            .map_or(Some(1i64), |(_, lead)| lead.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d as i64)))
    } else {
        total.map(|n| n / depth as i64)
    };
    let batches = batches
        .and_then(|b| i32::try_from(b).ok())
        .ok_or_else(|| Error::new(format!("input shape {input:?} is too large")))?;
    Ok(vec![batches, units])
}

/// FULLY_CONNECTED. State: the layer's dimensions, type path (activation range, quantized
/// scales and offsets, hybrid weight scales), output shape and type, and the weights packed
/// for the optimized paths (GEMM blocks for float32; integer weights widened to `i16` in
/// blocks of units, with the hybrid path's weight row sums).
struct FullyConnected;

/// What Prepare derives for a FULLY_CONNECTED node.
struct State {
    out_shape: Vec<i32>,
    dims: FcDims,
    kind: Kind,
    /// int64 accumulation for int16 layers.
    bias64: bool,
    in_type: TfLiteType,
    out_type: TfLiteType,
    /// Whether an 8-bit layer runs on widened `i16` operands (else the reference loop).
    widen: bool,
    gemm: PackSlot<PackedGemm>,
    wide: PackSlot<WideWeights>,
    /// A hybrid layer's int8 weights packed for the 8-bit GEMM microkernels, where the
    /// CPU's table has them (else `wide` holds them widened).
    hybrid_qs8: PackSlot<HybridQs8>,
    /// int8 weights packed for the 8-bit GEMM microkernels (int8 layers with symmetric
    /// weights, where the CPU's table has them), and the 32-bit sums they produce before
    /// the float requantization.
    qs8: PackSlot<PackedQs8Gemm>,
    sums: Vec<i32>,
    /// Sparse weights, expanded.
    sparse: Option<SparseWeights>,
}

/// A hybrid layer's weights for the 8-bit GEMM microkernels, which give each output's
/// exact 32-bit dot product, and each unit's weight sum.
struct HybridQs8 {
    packed: PackedQs8Gemm,
    row_sums: Vec<i32>,
}

/// Packs a hybrid layer's int8 weights `[units][depth]` for the 8-bit kernels `k` (no
/// bias, zero point 0: the sums are the plain dot products).
fn pack_hybrid_qs8(k: &Qs8GemmKernels, d: FcDims, weights: &TensorView<'_>) -> Result<HybridQs8> {
    let w = hybrid_weights(weights)?;
    if w.len() < d.units * d.depth {
        return Err(Error::new(format!("{OP}: {} weights for {} units of depth {}", w.len(), d.units, d.depth)));
    }
    let packed = qs8_gemm::pack_int32(
        k,
        d.units,
        1,
        d.depth,
        DenseFilter { values: &w[..d.units * d.depth], per_tap: d.depth },
        None,
        0,
    )?;
    let row_sums = w.chunks_exact(d.depth.max(1)).take(d.units).map(sum_i8).collect();
    Ok(HybridQs8 { packed, row_sums })
}

/// Hybrid layer on the 8-bit GEMM kernels: each output's exact dot product from the
/// kernels (in `sums`), finished as [`fc_hybrid_reference`] does; identical to it.
#[allow(clippy::too_many_arguments)]
fn fc_hybrid_qs8(
    k: &Qs8GemmKernels,
    h: &HybridQs8,
    q: &HybridRows<'_>,
    channel_scales: Option<&[f32]>,
    bias: Option<&[f32]>,
    d: FcDims,
    act: TfLiteFusedActivation,
    out: &mut [f32],
    sums: &mut Vec<i32>,
    threads: usize,
) -> Result<()> {
    // The packed weights' own size against the layer's (a weight count, not a tautology).
    let packed = h.packed.n * h.packed.layer_ks * h.packed.layer_kc;
    check(d, q.data.len(), packed, bias.map(|b| b.len()), out.len())?;
    if channel_scales.is_some_and(|c| c.len() != d.units)
        || h.row_sums.len() != d.units
        || q.scales.len() < d.batches
        || q.offsets.len() < d.batches
    {
        return Err(Error::new(format!("{OP}: hybrid scales or sums do not match {} units", d.units)));
    }
    sums.resize(d.batches * d.units, 0);
    qs8_sums(k, d, &h.packed, q.data, sums, threads)?;
    for (b, (out_b, dots)) in out.chunks_exact_mut(d.units).zip(sums.chunks_exact(d.units)).enumerate() {
        for (u, (o, &dot)) in out_b.iter_mut().zip(dots).enumerate() {
            let (cs, bias) = (channel_scales.map(|c| c[u]), bias.map_or(0.0, |bb| bb[u]));
            *o = hybrid_finish(dot, h.row_sums[u], q.offsets[b], q.scales[b], cs, bias, act);
        }
    }
    Ok(())
}

/// Integer weights widened and packed by [`pack_weights`], with each unit's weight sum
/// (hybrid layers).
struct WideWeights {
    packed: Packed<i16>,
    row_sums: Vec<i32>,
}

enum Kind {
    F32 { act: (f32, f32) },
    Quant(QuantFcParams),
    Hybrid { channel_scales: Option<Vec<f32>>, weight_scale: Option<f32> },
}

/// The node's input, weights and optional bias.
fn operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>, Option<TensorView<'a>>)> {
    let input = ctx.input(0)?;
    let weights = ctx.input(1)?;
    let bias = if ctx.num_inputs() == 3 { ctx.optional_input(2)? } else { None };
    Ok((input, weights, bias))
}

/// Checks the node; its dimensions, kind, output shape and whether int64 accumulates.
fn plan(
    p: &TfLiteFullyConnectedParams,
    input: &TensorView<'_>,
    weights: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    output: &TensorView<'_>,
) -> Result<(FcDims, Kind, Vec<i32>, bool)> {
    use TfLiteType::*;
    let wq = matches!(weights.dtype, kTfLiteUInt8 | kTfLiteInt8);
    let hybrid = wq && input.dtype == kTfLiteFloat32;
    let bias_type = bias.map(|b| b.dtype);
    if wq {
        if hybrid {
            if output.dtype != kTfLiteFloat32 || bias_type.is_some_and(|t| t != kTfLiteFloat32) {
                return Err(Error::new(format!("{OP}: a hybrid layer needs float32 output and bias")));
            }
        } else {
            if !matches!(input.dtype, kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16) {
                return Err(Error::new(format!("{OP}: input type {} is not supported", input.dtype.name())));
            }
            if !matches!(output.dtype, kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16) {
                return Err(Error::new(format!("{OP}: output type {} is not supported", output.dtype.name())));
            }
            if bias_type.is_some_and(|t| t != kTfLiteInt32 && t != kTfLiteInt64) {
                return Err(Error::new(format!("{OP}: quantized layers need an int32 or int64 bias")));
            }
        }
    } else {
        if weights.dtype != kTfLiteFloat32 {
            return Err(Error::new(format!("{OP}: weights of type {} are not supported", weights.dtype.name())));
        }
        if input.dtype != kTfLiteFloat32
            || output.dtype != kTfLiteFloat32
            || bias_type.is_some_and(|t| t != kTfLiteFloat32)
        {
            return Err(Error::new(format!("{OP}: float32 weights need float32 input, output and bias")));
        }
    }
    if !hybrid {
        use TfLiteFusedActivation::*;
        if !matches!(p.activation, kTfLiteActNone | kTfLiteActRelu | kTfLiteActReluN1To1 | kTfLiteActRelu6) {
            return Err(Error::new(format!("{OP}: fused activation {:?} is not supported", p.activation)));
        }
    }
    let out_shape = output_shape(input.shape, weights.shape, p.keep_num_dims)?;
    let (units, depth) = (weights.shape[0] as usize, weights.shape[1] as usize);
    let total = checked_product(OP, &input.shape.iter().map(|&d| d as usize).collect::<Vec<_>>())?;
    if depth == 0 && total != 0 {
        // TFLite divides the input's size by this depth (and crashes); an empty input has
        // nothing to multiply and still gives its empty output.
        return Err(Error::new(format!(
            "{OP}: weights of shape {:?} have a zero depth but the input {:?} has {total} elements",
            weights.shape, input.shape
        )));
    }
    let batches =
        total.checked_div(depth).unwrap_or_else(|| out_shape.iter().rev().skip(1).map(|&d| d as usize).product());
    checked_product(OP, &[batches, units])?;
    if let Some(b) = bias
        && b.num_elements() != units
    {
        return Err(Error::new(format!("{OP}: bias shape {:?} does not match {units} units", b.shape)));
    }
    let mut bias64 = false;
    let kind = if hybrid {
        hybrid_kind(weights, units)?
    } else if wq {
        let (q, b64) = quant_kind(input, weights, bias, output, units, p)?;
        bias64 = b64;
        Kind::Quant(q)
    } else {
        Kind::F32 { act: activation_range_f32(p.activation) }
    };
    Ok((FcDims { batches, depth, units }, kind, out_shape, bias64))
}

fn hybrid_kind(weights: &TensorView<'_>, units: usize) -> Result<Kind> {
    match weights.affine_quant() {
        Some((s, _, qdim)) if s.len() > 1 => {
            if s.len() != units || qdim != 0 {
                return Err(Error::new(format!(
                    "{OP}: {} weight scales along dimension {qdim} for {units} units",
                    s.len()
                )));
            }
            Ok(Kind::Hybrid { channel_scales: Some(s.to_vec()), weight_scale: None })
        }
        _ => Ok(Kind::Hybrid { channel_scales: None, weight_scale: Some(weights.quant().scale) }),
    }
}

fn quant_kind(
    input: &TensorView<'_>,
    weights: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    output: &TensorView<'_>,
    units: usize,
    p: &TfLiteFullyConnectedParams,
) -> Result<(QuantFcParams, bool)> {
    use TfLiteType::*;
    let (Some(_), Some((scales, zps, qdim))) = (input.affine_quant(), weights.affine_quant()) else {
        return Err(Error::new(format!("{OP}: quantized layers need affine quantization on input and weights")));
    };
    if scales.is_empty() {
        return Err(Error::new(format!("{OP}: weights have no scale")));
    }
    let (in_q, w_q, out_q) = (input.quant(), weights.quant(), output.quant());
    let per_channel = scales.len() > 1;
    // Which kernel: by output type, with the input and weight types it supports.
    let (legacy, ok) = match output.dtype {
        kTfLiteUInt8 => (false, input.dtype == kTfLiteUInt8 && weights.dtype == kTfLiteUInt8),
        kTfLiteInt8 => (false, input.dtype == kTfLiteInt8 && weights.dtype == kTfLiteInt8),
        _ => match input.dtype {
            kTfLiteInt16 => (false, weights.dtype == kTfLiteInt8),
            kTfLiteUInt8 => (true, weights.dtype == kTfLiteUInt8),
            _ => (false, false),
        },
    };
    if !ok {
        return Err(Error::new(format!(
            "{OP}: {} input with {} weights and {} output is not supported",
            input.dtype.name(),
            weights.dtype.name(),
            output.dtype.name()
        )));
    }
    let scales_f64 = if per_channel {
        if !matches!(input.dtype, kTfLiteInt8 | kTfLiteInt16) || weights.dtype != kTfLiteInt8 {
            return Err(Error::new(format!(
                "{OP}: per-channel quantization needs int8 or int16 input and int8 weights"
            )));
        }
        if qdim != 0 || scales.len() != units {
            return Err(Error::new(format!(
                "{OP}: {} weight scales along dimension {qdim} for {units} units",
                scales.len()
            )));
        }
        // TFLite also derives fixed-point multipliers here (used by its optimized kernels);
        // computing them checks the scales the same way.
        per_channel_multipliers(OP, in_q.scale, scales, out_q.scale, units)?;
        scales.iter().map(|&s| QuantFcParams::effective_scale(in_q.scale, s, out_q.scale)).collect()
    } else {
        // GetQuantizedConvolutionMultipler's checks (bias scale, sign), as TFLite's Prepare.
        super::conv_common::legacy_quant_mul(OP, in_q.scale, w_q.scale, bias.map(|b| b.quant().scale), out_q.scale)?;
        vec![QuantFcParams::effective_scale(in_q.scale, w_q.scale, out_q.scale)]
    };
    if scales_f64.iter().any(|s| !s.is_finite()) {
        return Err(Error::new(format!("{OP}: invalid quantization scales")));
    }
    let (act_min, act_max) = activation_range_quantized(p.activation, output.dtype, out_q.scale, out_q.zero_point)?;
    let mut bias64 = false;
    if input.dtype == kTfLiteInt16 && output.dtype == kTfLiteInt16 {
        if in_q.zero_point != 0 || out_q.zero_point != 0 {
            return Err(Error::new(format!("{OP}: int16 input and output zero points must be 0")));
        }
        let qbt = p.quantized_bias_type;
        if matches!(qbt, kTfLiteInt32 | kTfLiteInt64) {
            if bias.is_some_and(|b| b.dtype != qbt) {
                return Err(Error::new(format!("{OP}: bias type differs from quantized_bias_type {}", qbt.name())));
            }
        } else if qbt != kTfLiteFloat32 && qbt != kTfLiteNoType {
            return Err(Error::new(format!("{OP}: quantized_bias_type {} is not int32 or int64", qbt.name())));
        }
        bias64 = match bias {
            Some(b) => b.dtype == kTfLiteInt64,
            None => qbt != kTfLiteInt32,
        };
    } else if bias.is_some_and(|b| b.dtype != kTfLiteInt32) {
        return Err(Error::new(format!("{OP}: 8-bit layers need an int32 bias")));
    }
    let _ = zps;
    let weights_offset = if per_channel { 0 } else { -w_q.zero_point };
    if !(-255..=255).contains(&weights_offset) || !(-255..=255).contains(&in_q.zero_point) {
        return Err(Error::new(format!("{OP}: zero points out of the 8-bit range")));
    }
    Ok((
        QuantFcParams {
            input_offset: -in_q.zero_point,
            weights_offset,
            output_offset: out_q.zero_point,
            scales: scales_f64,
            act_min,
            act_max,
            legacy_u8_to_i16: legacy,
        },
        bias64,
    ))
}

/// A float layer as the 1x1 convolution it is: each batch row an output pixel, the
/// `[units][depth]` weights an OHWI filter of 1x1 taps, so it runs on the GEMM
/// microkernels with weights packed once per node.
fn as_conv(d: FcDims) -> super::conv_common::ConvGeom {
    super::conv_common::ConvGeom {
        batches: 1,
        in_h: 1,
        in_w: d.batches,
        in_c: d.depth,
        out_h: 1,
        out_w: d.batches,
        out_c: d.units,
        f_h: 1,
        f_w: 1,
        f_c: d.depth,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        pad_h: 0,
        pad_w: 0,
    }
}

/// Sparse weights, expanded: float32 ones run as dense weights; int8 ones on the
/// integer sums of TFLite's sparse kernel with its fixed-point multipliers (one, or one
/// per unit).
enum SparseWeights {
    F32(Vec<f32>),
    I8 {
        dense: Vec<i8>,
        muls: Vec<super::conv_common::QuantMul>,
    },
    /// Hybrid layers (float input): the weights and each unit's weight sum.
    Hybrid {
        dense: Vec<i8>,
        row_sums: Vec<i32>,
    },
}

impl SparseWeights {
    fn f32(s: &Option<SparseWeights>) -> Option<&[f32]> {
        match s {
            Some(SparseWeights::F32(w)) => Some(w),
            _ => None,
        }
    }
}

/// Whether sparse weights are in TFLite's 1x16 block layout (rows dense, blocks of 16
/// columns compressed), the only one its sparse 8-bit and hybrid kernels read.
fn blocks_1x16(sp: &crate::model::sparsity::Sparsity) -> bool {
    use crate::model::sparsity::DimMetadata;
    sp.traversal_order == [0, 1, 2]
        && sp.block_map == [1]
        && matches!(sp.dim_metadata[..], [DimMetadata::Dense(_), DimMetadata::Csr { .. }, DimMetadata::Dense(16)])
}

/// The node's sparse weights expanded; `None` for dense ones.
fn sparse_weights(
    weights: &TensorView<'_>,
    input: &TensorView<'_>,
    output: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    kind: &Kind,
) -> Result<Option<SparseWeights>> {
    use TfLiteType::*;
    let Some(sp) = weights.sparsity().map_err(|e| Error::new(format!("{OP}: {e}")))? else {
        return Ok(None);
    };
    let in_op = |e: Error| Error::new(format!("{OP}: sparse weights: {e}"));
    let plan = sp.plan(weights.shape).map_err(in_op)?;
    let raw = weights.raw()?;
    match (weights.dtype, kind) {
        (kTfLiteFloat32, Kind::F32 { .. }) => {
            let values: Vec<f32> = raw.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            Ok(Some(SparseWeights::F32(plan.to_dense(&values, 0.0).map_err(in_op)?)))
        }
        (kTfLiteInt8 | kTfLiteUInt8, Kind::Hybrid { .. }) => {
            if !blocks_1x16(&sp) {
                return Err(Error::new(format!(
                    "{OP}: sparse hybrid weights must be in 1x16 blocks (rows dense, blocks compressed)"
                )));
            }
            // uint8 hybrid weights are read as int8, as for dense ones.
            let values: Vec<i8> = raw.iter().map(|&b| b as i8).collect();
            let dense = plan.to_dense(&values, 0).map_err(in_op)?;
            let depth = weights.shape[1] as usize;
            let row_sums = dense.chunks(depth.max(1)).map(sum_i8).collect();
            Ok(Some(SparseWeights::Hybrid { dense, row_sums }))
        }
        (kTfLiteInt8, Kind::Quant(_)) if input.dtype == kTfLiteInt8 && output.dtype == kTfLiteInt8 => {
            if weights.quant().zero_point != 0 {
                return Err(Error::new(format!(
                    "{OP}: Quantized and sparse fully-connected format supports symmetric weight quantization only."
                )));
            }
            if !blocks_1x16(&sp) {
                return Err(Error::new(format!(
                    "{OP}: sparse int8 weights must be in 1x16 blocks (rows dense, blocks compressed)"
                )));
            }
            let units = weights.shape[0] as usize;
            let (in_s, out_s) = (input.quant().scale, output.quant().scale);
            let muls = match weights.affine_quant() {
                Some((scales, _, _)) if scales.len() > 1 => {
                    super::conv_common::per_channel_multipliers(OP, in_s, scales, out_s, units)?
                }
                _ => vec![super::conv_common::legacy_quant_mul(
                    OP,
                    in_s,
                    weights.quant().scale,
                    bias.map(|b| b.quant().scale),
                    out_s,
                )?],
            };
            let values: Vec<i8> = raw.iter().map(|&b| b as i8).collect();
            Ok(Some(SparseWeights::I8 { dense: plan.to_dense(&values, 0).map_err(in_op)?, muls }))
        }
        (t, _) => Err(Error::new(format!(
            "{OP}: sparse {} weights with {} input and {} output are not supported",
            t.name(),
            input.dtype.name(),
            output.dtype.name()
        ))),
    }
}

/// TFLite's sparse 8-bit kernel on expanded weights: per unit, the exact integer sum of
/// `w * (x + input_offset)` plus the bias, requantized in fixed point, offset and clamped.
fn fc_sparse_i8(
    qp: &QuantFcParams,
    muls: &[super::conv_common::QuantMul],
    weights: &[i8],
    input: &[i8],
    bias: Option<&[i32]>,
    d: FcDims,
    out: &mut [i8],
) -> Result<()> {
    if weights.len() != d.units * d.depth || input.len() < d.batches * d.depth || out.len() < d.batches * d.units {
        return Err(Error::new(format!("{OP}: buffers do not match the layer's sizes")));
    }
    for b in 0..d.batches {
        let x = &input[b * d.depth..(b + 1) * d.depth];
        for u in 0..d.units {
            let row = &weights[u * d.depth..(u + 1) * d.depth];
            let mut acc = 0i32;
            for (&w, &v) in row.iter().zip(x) {
                acc = acc.wrapping_add(i32::from(w) * i32::from(v)).wrapping_add(i32::from(w) * qp.input_offset);
            }
            acc = acc.wrapping_add(bias.map_or(0, |b| b[u]));
            let m = muls.get(u).or(muls.first()).ok_or_else(|| Error::new("internal error: no multiplier"))?;
            let v = crate::kernels::quant::multiply_by_quantized_multiplier(acc, m.multiplier, m.shift)
                .wrapping_add(qp.output_offset);
            out[b * d.units + u] = v.clamp(qp.act_min, qp.act_max) as i8;
        }
    }
    Ok(())
}

/// TFLite's sparse hybrid kernel (`EvalSparseHybridImpl`) on expanded weights. Its
/// float steps differ from the dense hybrid path's, so they are kept in its order: the
/// output starts at the bias; with input zero points, `scale * zero_point * row_sum` is
/// subtracted in float; then `float(dot) * scale` is added, `scale` being the row's scale
/// (already times a per-tensor weight scale) times the unit's channel scale, if any. An
/// all-zero input leaves the bias. The sums are exact integers, so blocks of zeros add
/// nothing and the expanded weights give the kernel's bits.
#[allow(clippy::too_many_arguments)]
fn fc_sparse_hybrid(
    q: &HybridRows<'_>,
    input: &[f32],
    weights: &[i8],
    row_sums: &[i32],
    channel_scales: Option<&[f32]>,
    bias: Option<&[f32]>,
    d: FcDims,
    asymmetric: bool,
    act: TfLiteFusedActivation,
    out: &mut [f32],
) -> Result<()> {
    check(d, q.data.len(), weights.len(), bias.map(|b| b.len()), out.len())?;
    if row_sums.len() != d.units || channel_scales.is_some_and(|c| c.len() != d.units) {
        return Err(Error::new(format!("{OP}: sparse hybrid weights do not match {} units", d.units)));
    }
    let out = &mut out[..d.batches * d.units];
    for row in out.chunks_exact_mut(d.units) {
        match bias {
            Some(b) => row.copy_from_slice(b),
            None => row.fill(0.0),
        }
    }
    let input = input.get(..d.batches * d.depth).ok_or_else(|| {
        Error::new(format!("{OP}: input holds {} values, needs {}", input.len(), d.batches * d.depth))
    })?;
    if input.iter().all(|&v| v == 0.0) {
        out.iter_mut().for_each(|o| *o = apply_f32(*o, act));
        return Ok(());
    }
    for (b, o_row) in out.chunks_exact_mut(d.units).enumerate() {
        let x = &q.data[b * d.depth..(b + 1) * d.depth];
        let batch_scale = q.scales[b];
        if asymmetric {
            let scaled_zp = batch_scale * q.offsets[b] as f32;
            for (u, o) in o_row.iter_mut().enumerate() {
                let zp_scale = channel_scales.map_or(scaled_zp, |c| scaled_zp * c[u]);
                *o -= zp_scale * row_sums[u] as f32;
            }
        }
        for (u, o) in o_row.iter_mut().enumerate() {
            let w = &weights[u * d.depth..(u + 1) * d.depth];
            let dot = dot_i8(x, w);
            let scale = channel_scales.map_or(batch_scale, |c| c[u] * batch_scale);
            *o += dot as f32 * scale;
            *o = apply_f32(*o, act);
        }
    }
    Ok(())
}

/// Packs float weights (expanded sparse ones when given) with the bias.
fn pack_f32(
    g: &super::conv_common::ConvGeom,
    weights: &TensorView<'_>,
    dense: Option<&[f32]>,
    bias: Option<&TensorView<'_>>,
) -> Result<PackedGemm> {
    match dense {
        Some(w) => {
            let b = bias.map(|b| b.data::<f32>()).transpose()?;
            super::conv_f32_gemm::pack(table(), g, w, b)
        }
        None => super::conv_f32_gemm::pack_weights(g, weights, bias),
    }
}

/// The first `n` input values (the whole rows); an error if the input holds fewer.
fn rows<T>(input: &[T], n: usize) -> Result<&[T]> {
    input.get(..n).ok_or_else(|| Error::new(format!("input holds {} values, the layer needs {n}", input.len())))
}

/// A hybrid layer's weights as int8 (TFLite reads uint8 hybrid weights as int8 too).
fn hybrid_weights<'a>(weights: &TensorView<'a>) -> Result<&'a [i8]> {
    match weights.dtype {
        TfLiteType::kTfLiteInt8 => weights.data::<i8>(),
        _ => {
            let raw = weights.data::<u8>()?;
            // SAFETY: u8 and i8 have the same layout and every bit pattern is a
            // valid i8.
            Ok(unsafe { core::slice::from_raw_parts(raw.as_ptr().cast::<i8>(), raw.len()) })
        }
    }
}

/// Widens and packs the weights of a hybrid or 8-bit layer (with the hybrid row sums).
fn widen_weights(d: FcDims, kind: &Kind, weights: &TensorView<'_>) -> Result<WideWeights> {
    match kind {
        Kind::Hybrid { .. } => {
            let w = hybrid_weights(weights)?;
            let row_sums =
                w.chunks_exact(d.depth.max(1)).map(|r| r.iter().fold(0i32, |a, &v| a.wrapping_add(v as i32))).collect();
            Ok(WideWeights { packed: Packed::new(pack_weights(w, d, |v| v as i16)?), row_sums })
        }
        Kind::Quant(qp) => {
            let off = qp.weights_offset;
            let packed = match weights.dtype {
                TfLiteType::kTfLiteUInt8 => {
                    pack_weights(weights.data::<u8>()?, d, |v| v.to_i32().wrapping_add(off) as i16)?
                }
                _ => pack_weights(weights.data::<i8>()?, d, |v| v.to_i32().wrapping_add(off) as i16)?,
            };
            Ok(WideWeights { packed: Packed::new(packed), row_sums: Vec::new() })
        }
        Kind::F32 { .. } => Err(Error::new(format!("{OP}: internal error: no integer weights to widen"))),
    }
}

impl BuiltinKernel for FullyConnected {
    const NAME: &'static str = OP;
    type Params = TfLiteFullyConnectedParams;
    type State = State;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteFullyConnectedParams) -> Result<State> {
        let n_in = ctx.num_inputs();
        if n_in != 2 && n_in != 3 {
            return Err(Error::new(format!("{OP}: expected 2 or 3 inputs, got {n_in}")));
        }
        if p.weights_format != TfLiteFullyConnectedWeightsFormat::kTfLiteFullyConnectedWeightsFormatDefault {
            return Err(Error::new(format!(
                "{OP}: shuffled weights (format {:?}) are not supported",
                p.weights_format
            )));
        }
        if ctx.num_outputs() != 1 {
            return Err(Error::new(format!("{OP}: expected 1 output, got {}", ctx.num_outputs())));
        }
        let (input, weights, bias) = operands(ctx)?;
        let output = ctx.output(0)?;
        let (d, kind, out_shape, bias64) = plan(p, &input, &weights, bias.as_ref(), &output)?;
        let sparse = sparse_weights(&weights, &input, &output, bias.as_ref(), &kind)?;
        let nonempty = d.batches * d.units * d.depth != 0;
        let (mut gemm, mut wide, mut qs8) = (PackSlot::default(), PackSlot::default(), PackSlot::default());
        let mut hybrid_qs8 = PackSlot::default();
        // The optimized path widens to i16; int16 inputs (16x8) stay on the reference loop.
        let widen = match (input.dtype, output.dtype) {
            (TfLiteType::kTfLiteUInt8, TfLiteType::kTfLiteUInt8)
            | (TfLiteType::kTfLiteInt8, TfLiteType::kTfLiteInt8) => !(bias64 && d.depth >= 1 << 14),
            _ => false,
        };
        match &kind {
            _ if matches!(sparse, Some(SparseWeights::I8 { .. } | SparseWeights::Hybrid { .. })) => {}
            Kind::F32 { .. } if nonempty => {
                gemm = PackSlot::prepare(&weights, bias.as_ref(), || {
                    pack_f32(&as_conv(d), &weights, SparseWeights::f32(&sparse), bias.as_ref())
                })?;
            }
            Kind::Hybrid { .. } if nonempty => match table().qs8_gemm {
                Some(k) => hybrid_qs8 = PackSlot::prepare(&weights, None, || pack_hybrid_qs8(k, d, &weights))?,
                None => wide = PackSlot::prepare(&weights, None, || widen_weights(d, &kind, &weights))?,
            },
            Kind::Quant(qp) if nonempty && qs8_kernels(qp, input.dtype, output.dtype, bias64).is_some() => {
                let k = qs8_kernels(qp, input.dtype, output.dtype, bias64)
                    .ok_or_else(|| Error::new("internal error: 8-bit kernels vanished"))?;
                qs8 = PackSlot::prepare(&weights, bias.as_ref(), || pack_qs8(k, d, qp, &weights, bias.as_ref()))?;
            }
            Kind::Quant(_) if nonempty && widen => {
                wide = PackSlot::prepare(&weights, None, || widen_weights(d, &kind, &weights))?;
            }
            _ => {}
        }
        let temps = match kind {
            Kind::Hybrid { .. } => hybrid_temporary_bytes(d)?.to_vec(),
            _ => Vec::new(),
        };
        ctx.request_temporaries(&temps)?;
        ctx.resize_output(0, &out_shape)?;
        let (in_type, out_type) = (input.dtype, output.dtype);
        Ok(State {
            out_shape,
            dims: d,
            kind,
            bias64,
            in_type,
            out_type,
            widen,
            gemm,
            wide,
            hybrid_qs8,
            qs8,
            sums: Vec::new(),
            sparse,
        })
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteFullyConnectedParams, state: &mut State) -> Result<()> {
        let (input, weights, bias) = operands(ctx)?;
        let mut out = ctx.output(0)?;
        if out.shape != state.out_shape.as_slice() {
            return Err(Error::new(format!(
                "{OP}: output shape {:?} does not match the expected {:?}",
                out.shape, state.out_shape
            )));
        }
        if input.dtype != state.in_type {
            return Err(Error::new(format!("{OP}: input type changed since Prepare")));
        }
        let d = state.dims;
        let scratch = match state.kind {
            Kind::Hybrid { .. } if d.batches * d.units * d.depth != 0 => {
                let n = d.batches * d.depth;
                let (data, scales, offsets) =
                    (ctx.temporary_mut::<i8>(0)?, ctx.temporary_mut::<f32>(1)?, ctx.temporary_mut::<i32>(2)?);
                let wide = ctx.temporary_mut::<i16>(3)?;
                if data.len() < n || scales.len() < d.batches || offsets.len() < d.batches || wide.len() < n {
                    return Err(Error::new(format!("{OP}: hybrid temporaries are smaller than the input needs")));
                }
                Some(HybridScratch {
                    data: &mut data[..n],
                    scales: &mut scales[..d.batches],
                    offsets: &mut offsets[..d.batches],
                    wide: &mut wide[..n],
                })
            }
            _ => None,
        };
        run(state, p, &input, &weights, bias.as_ref(), &mut out, recommended_threads(ctx), scratch)
    }
}

/// A hybrid layer's per-invoke buffers (the node's temporaries).
struct HybridScratch<'a> {
    data: &'a mut [i8],
    scales: &'a mut [f32],
    offsets: &'a mut [i32],
    wide: &'a mut [i16],
}

#[allow(clippy::too_many_arguments)]
fn run(
    state: &mut State,
    p: &TfLiteFullyConnectedParams,
    input: &TensorView<'_>,
    weights: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    out: &mut TensorViewMut<'_>,
    threads: usize,
    scratch: Option<HybridScratch<'_>>,
) -> Result<()> {
    let State { dims, kind, bias64, out_type, widen, gemm, wide, hybrid_qs8, qs8, sums, in_type, sparse, .. } = state;
    let d = *dims;
    if d.batches * d.units == 0 {
        return Ok(());
    }
    if d.depth == 0 {
        // TFLite zero-fills the output when the weights have no columns.
        match *out_type {
            TfLiteType::kTfLiteFloat32 => out.data_mut::<f32>()?.fill(0.0),
            TfLiteType::kTfLiteInt16 => out.data_mut::<i16>()?.fill(0),
            TfLiteType::kTfLiteInt8 => out.data_mut::<i8>()?.fill(0),
            _ => out.data_mut::<u8>()?.fill(0),
        }
        return Ok(());
    }
    let input_n = d.batches * d.depth;
    if let (Some(SparseWeights::I8 { dense, muls }), Kind::Quant(qp)) = (&*sparse, &*kind) {
        let bias_c = opt_data_cow::<i32>(bias)?;
        return fc_sparse_i8(
            qp,
            muls,
            dense,
            rows(input.data::<i8>()?, input_n)?,
            bias_c.as_deref(),
            d,
            out.data_mut()?,
        );
    }
    match &*kind {
        Kind::F32 { act } => {
            let input = rows(input.data::<f32>()?, input_n)?;
            let out = out.data_mut::<f32>()?;
            let g = as_conv(d);
            let mut fresh = None;
            let packed =
                gemm.get(weights, bias, &mut fresh, || pack_f32(&g, weights, SparseWeights::f32(sparse), bias))?;
            super::conv_f32_gemm::compute(table(), &g, input, packed, out, *act, threads)
        }
        Kind::Hybrid { channel_scales, weight_scale } => {
            let input = rows(input.data::<f32>()?, input_n)?;
            let bias_c = opt_data_cow::<f32>(bias)?;
            let bias_s = bias_c.as_deref();
            let out = out.data_mut::<f32>()?;
            let n = input_n;
            let mut owned = None;
            let HybridScratch { data, scales, offsets, wide: wide_rows } = match scratch {
                Some(s) => s,
                None => {
                    let o = owned.insert((vec![0i8; n], vec![0f32; d.batches], vec![0i32; d.batches], vec![0i16; n]));
                    HybridScratch { data: &mut o.0, scales: &mut o.1, offsets: &mut o.2, wide: &mut o.3 }
                }
            };
            let q = quantize_rows_into(input, d, p.asymmetric_quantize_inputs, *weight_scale, data, scales, offsets)?;
            let cs = channel_scales.as_deref();
            if let Some(SparseWeights::Hybrid { dense, row_sums }) = &*sparse {
                let asym = p.asymmetric_quantize_inputs;
                return fc_sparse_hybrid(&q, input, dense, row_sums, cs, bias_s, d, asym, p.activation, out);
            }
            if let Some(k) = table().qs8_gemm {
                let mut fresh = None;
                let h = hybrid_qs8.get(weights, None, &mut fresh, || pack_hybrid_qs8(k, d, weights))?;
                return fc_hybrid_qs8(k, h, &q, cs, bias_s, d, p.activation, out, sums, threads);
            }
            let mut fresh = None;
            let w = wide.get(weights, None, &mut fresh, || widen_weights(d, kind, weights))?;
            fc_hybrid_optimized(&q, &w.packed, &w.row_sums, cs, bias_s, d, p.activation, out, threads, wide_rows)
        }
        Kind::Quant(qp) if qs8_kernels(qp, *in_type, *out_type, *bias64).is_some() => {
            let k = qs8_kernels(qp, *in_type, *out_type, *bias64)
                .ok_or_else(|| Error::new("internal error: 8-bit kernels vanished"))?;
            let mut fresh = None;
            let packed = qs8.get(weights, bias, &mut fresh, || pack_qs8(k, d, qp, weights, bias))?;
            let input = rows(input.data::<i8>()?, input_n)?;
            sums.resize(d.batches * d.units, 0);
            qs8_sums(k, d, packed, input, sums, threads)?;
            let out = out.data_mut::<i8>()?;
            for (o_row, s_row) in out.chunks_exact_mut(d.units).zip(sums.chunks_exact(d.units)) {
                for (u, (o, &acc)) in o_row.iter_mut().zip(s_row).enumerate() {
                    *o = qp.finish(i64::from(acc), u) as i8;
                }
            }
            Ok(())
        }
        Kind::Quant(qp) => {
            let (bias_i64, bias_i32) =
                if *bias64 { (opt_data_cow::<i64>(bias)?, None) } else { (None, opt_data_cow::<i32>(bias)?) };
            let bias_q = if *bias64 { QBias::I64(bias_i64.as_deref()) } else { QBias::I32(bias_i32.as_deref()) };
            let mut fresh = None;
            let packed = if *widen {
                Some(&*wide.get(weights, None, &mut fresh, || widen_weights(d, kind, weights))?.packed)
            } else {
                None
            };
            use TfLiteType::*;
            match (input.dtype, *out_type) {
                (kTfLiteUInt8, kTfLiteUInt8) => {
                    quant::<u8, u8, u8>(input, weights, d, bias_q, qp, out.data_mut()?, threads, packed)
                }
                (kTfLiteInt8, kTfLiteInt8) => {
                    quant::<i8, i8, i8>(input, weights, d, bias_q, qp, out.data_mut()?, threads, packed)
                }
                (kTfLiteInt16, kTfLiteInt16) => {
                    quant::<i16, i8, i16>(input, weights, d, bias_q, qp, out.data_mut()?, threads, packed)
                }
                (kTfLiteUInt8, kTfLiteInt16) => {
                    let input = rows(input.data::<u8>()?, input_n)?;
                    fc_quant_reference(input, weights.data::<u8>()?, bias_q, d, qp, out.data_mut::<i16>()?)
                }
                (i, o) => Err(Error::new(format!("{} input with {} output is not supported", i.name(), o.name()))),
            }
        }
    }
}

/// The 8-bit GEMM kernels for an int8 layer they can compute exactly: symmetric weights,
/// an int8 input zero point, int32 accumulation; `None` when the CPU's table has none.
fn qs8_kernels(
    qp: &QuantFcParams,
    input: TfLiteType,
    output: TfLiteType,
    bias64: bool,
) -> Option<&'static Qs8GemmKernels> {
    let int8 = input == TfLiteType::kTfLiteInt8 && output == TfLiteType::kTfLiteInt8;
    if !int8 || bias64 || qp.legacy_u8_to_i16 || qp.weights_offset != 0 || i8::try_from(-qp.input_offset).is_err() {
        return None;
    }
    table().qs8_gemm
}

/// Packs an int8 layer's weights `[units][depth]` and bias for the 8-bit kernels.
fn pack_qs8(
    k: &Qs8GemmKernels,
    d: FcDims,
    qp: &QuantFcParams,
    weights: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
) -> Result<PackedQs8Gemm> {
    let w = weights.data::<i8>()?;
    if w.len() < d.units * d.depth {
        return Err(Error::new(format!("{OP}: {} weights for {} units of depth {}", w.len(), d.units, d.depth)));
    }
    let b = bias.map(|b| b.data::<i32>()).transpose()?;
    qs8_gemm::pack_int32(
        k,
        d.units,
        1,
        d.depth,
        DenseFilter { values: &w[..d.units * d.depth], per_tap: d.depth },
        b,
        -qp.input_offset,
    )
}

/// Each output's exact 32-bit sum (bias included) into `sums`, split over threads: by
/// output channels for one batch row, by rows otherwise.
fn qs8_sums(
    k: &Qs8GemmKernels,
    d: FcDims,
    packed: &PackedQs8Gemm,
    input: &[i8],
    sums: &mut [i32],
    max_threads: usize,
) -> Result<()> {
    let taps = DenseRows { stride: d.depth };
    let work = d.batches.saturating_mul(d.units).saturating_mul(d.depth);
    let n = d.units;
    if d.batches == 1 {
        let nr = packed.nr;
        let threads = threads_for(max_threads, work, n.div_ceil(nr));
        let per = n.div_ceil(nr).div_ceil(threads) * nr;
        return parallel_chunks_mut(threads, sums, per, &|i, chunk: &mut [i32]| {
            let c0 = i * per;
            qs8_gemm::igemm_int32(k, packed, input, &taps, 0..1, c0..c0 + chunk.len(), chunk, n)
        });
    }
    let threads = threads_for(max_threads, work, d.batches);
    crate::kernels::threadpool::parallel_rows(threads, sums, n, &|first, chunk: &mut [i32]| {
        qs8_gemm::igemm_int32(k, packed, input, &taps, first..first + chunk.len() / n, 0..n, chunk, n)
    })
}

/// A quantized layer: on `packed` weights (widened by [`widen_weights`]) when given, else
/// TFLite's reference loop.
#[allow(clippy::too_many_arguments)]
fn quant<
    T: QuantInt + crate::kernels::api::Element,
    W: QuantInt + crate::kernels::api::Element,
    O: QuantInt + crate::kernels::api::Element,
>(
    input: &TensorView<'_>,
    weights: &TensorView<'_>,
    d: FcDims,
    bias: QBias<'_>,
    qp: &QuantFcParams,
    out: &mut [O],
    threads: usize,
    packed: Option<&[i16]>,
) -> Result<()> {
    let input = rows(input.data::<T>()?, d.batches * d.depth)?;
    let Some(packed) = packed else {
        return fc_quant_reference(input, weights.data::<W>()?, bias, d, qp, out);
    };
    let wide: Vec<i16> = input.iter().map(|v| v.to_i32().wrapping_add(qp.input_offset) as i16).collect();
    fc_quant_optimized(&wide, packed, bias, d, qp, out, threads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use TfLiteFusedActivation::*;

    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u32 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) as u32
        }
        fn f32(&mut self) -> f32 {
            (self.next() % 2001) as f32 / 1000.0 - 1.0
        }
        fn int(&mut self, lo: i32, hi: i32) -> i32 {
            lo + (self.next() % (hi - lo + 1) as u32) as i32
        }
    }

    #[test]
    fn simple_float() {
        // fully_connected_test.cc SimpleTest: 3 units, 10 inputs, 2 batches, RELU.
        let weights: Vec<f32> = (0..3).flat_map(|_| (1..=10).map(|x| x as f32)).collect();
        let bias = [1.0f32, 2.0, 3.0];
        let input = [
            1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, -9.0, -10.0, //
            1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, -8.0, 9.0, -10.0,
        ];
        let d = FcDims { batches: 2, depth: 10, units: 3 };
        let mut out = [0.0f32; 6];
        fc_f32_reference(&input, &weights, Some(&bias), d, &mut out, (0.0, f32::MAX)).unwrap();
        assert_eq!(out, [24.0, 25.0, 26.0, 58.0, 59.0, 60.0]);
        let mut out2 = [0.0f32; 6];
        gemm_fc(crate::microkernels::table(), &input, &weights, &bias, d, &mut out2, (0.0, f32::MAX), 2);
        assert_eq!(out, out2);
    }

    /// The float layer on `t`'s GEMM kernels, as the optimized path runs it.
    #[allow(clippy::too_many_arguments)]
    fn gemm_fc(
        t: &crate::microkernels::Table,
        x: &[f32],
        w: &[f32],
        bias: &[f32],
        d: FcDims,
        out: &mut [f32],
        act: (f32, f32),
        threads: usize,
    ) {
        let g = as_conv(d);
        let packed = crate::microkernels::f32_gemm::pack(
            &t.f32_gemm,
            d.units,
            1,
            d.depth,
            |o, _, k| w[o * d.depth + k],
            Some(bias),
        )
        .unwrap();
        super::super::conv_f32_gemm::compute(t, &g, x, &packed, out, act, threads).unwrap();
    }

    #[test]
    fn optimized_matches_reference() {
        let mut r = Lcg(9);
        for (batches, depth, units) in [(1, 37, 21), (3, 64, 8), (5, 9, 30), (1, 300, 1001), (2, 1, 3)] {
            let d = FcDims { batches, depth, units };
            let x: Vec<f32> = (0..batches * depth).map(|_| r.f32()).collect();
            let w: Vec<f32> = (0..units * depth).map(|_| r.f32()).collect();
            let bias: Vec<f32> = (0..units).map(|_| r.f32()).collect();
            let (mut a, mut b) = (vec![0.0f32; batches * units], vec![0.0f32; batches * units]);
            fc_f32_reference(&x, &w, Some(&bias), d, &mut a, (-2.0, 2.0)).unwrap();
            for t in crate::microkernels::available_tables() {
                for threads in [1, 2, 4] {
                    b.fill(f32::NAN);
                    gemm_fc(t, &x, &w, &bias, d, &mut b, (-2.0, 2.0), threads);
                    for (i, (p, q)) in a.iter().zip(&b).enumerate() {
                        assert!((p - q).abs() <= 1e-4 * (1.0 + p.abs()), "{} {d:?} element {i}: {p} vs {q}", t.name());
                    }
                }
            }
            // int8 per-channel.
            let qx: Vec<i8> = (0..batches * depth).map(|_| r.int(-128, 127) as i8).collect();
            let qw: Vec<i8> = (0..units * depth).map(|_| r.int(-127, 127) as i8).collect();
            let qb: Vec<i32> = (0..units).map(|_| r.int(-5000, 5000)).collect();
            let p = QuantFcParams {
                input_offset: 3,
                weights_offset: 0,
                output_offset: -5,
                scales: (0..units).map(|u| 0.001 + 0.0001 * u as f64).collect(),
                act_min: -128,
                act_max: 127,
                legacy_u8_to_i16: false,
            };
            let (mut a, mut b) = (vec![0i8; batches * units], vec![0i8; batches * units]);
            fc_quant_reference(&qx, &qw, QBias::I32(Some(&qb)), d, &p, &mut a).unwrap();
            let wide: Vec<i16> = qx.iter().map(|&v| v as i16 + 3).collect();
            let packed = pack_weights(&qw, d, |v| v as i16).unwrap();
            fc_quant_optimized(&wide, &packed, QBias::I32(Some(&qb)), d, &p, &mut b, 3).unwrap();
            assert_eq!(a, b);
            // hybrid, both quantizations.
            for asym in [false, true] {
                let scales: Vec<f32> = (0..units).map(|u| 0.01 + 0.001 * u as f32).collect();
                let q = quantize_rows(&x, d, asym, None).unwrap();
                let q = q.view();
                let (mut a, mut b) = (vec![0.0f32; batches * units], vec![0.0f32; batches * units]);
                fc_hybrid_reference(&q, &qw, Some(&scales), Some(&bias), d, kTfLiteActTanh, &mut a).unwrap();
                let rs: Vec<i32> = qw.chunks_exact(depth).map(|w| w.iter().map(|&v| v as i32).sum()).collect();
                let packed = pack_weights(&qw, d, |v| v as i16).unwrap();
                fc_hybrid_optimized(
                    &q,
                    &packed,
                    &rs,
                    Some(&scales),
                    Some(&bias),
                    d,
                    kTfLiteActTanh,
                    &mut b,
                    2,
                    &mut vec![0; q.data.len()],
                )
                .unwrap();
                assert_eq!(a, b);
                for t in crate::microkernels::available_tables() {
                    let Some(k) = t.qs8_gemm else { continue };
                    let h = HybridQs8 {
                        packed: qs8_gemm::pack_int32(
                            k,
                            units,
                            1,
                            depth,
                            DenseFilter { values: &qw, per_tap: depth },
                            None,
                            0,
                        )
                        .unwrap(),
                        row_sums: rs.clone(),
                    };
                    for threads in [1, 2] {
                        b.fill(f32::NAN);
                        let cs = Some(&scales[..]);
                        fc_hybrid_qs8(k, &h, &q, cs, Some(&bias), d, kTfLiteActTanh, &mut b, &mut Vec::new(), threads)
                            .unwrap();
                        assert_eq!(a, b, "{} {d:?} asymmetric {asym} threads {threads}", t.name());
                    }
                }
            }
        }
    }

    #[test]
    fn double_requantization() {
        // acc 5 * scale 0.5 = 2.5 -> 3 (half away from zero); -2.5 -> -3.
        let d = FcDims { batches: 2, depth: 1, units: 1 };
        let p = QuantFcParams {
            input_offset: 0,
            weights_offset: 0,
            output_offset: 0,
            scales: vec![0.5],
            act_min: -128,
            act_max: 127,
            legacy_u8_to_i16: false,
        };
        let mut out = [0i8; 2];
        fc_quant_reference(&[5i8, -5], &[1i8], QBias::I32(None), d, &p, &mut out).unwrap();
        assert_eq!(out, [3, -3]);
        // int64 accumulation for int16.
        let mut out16 = [0i16; 2];
        let p = QuantFcParams { scales: vec![1.0 / 64.0], act_min: -32768, act_max: 32767, ..p };
        fc_quant_reference(&[32767i16, -32768], &[127i8], QBias::I64(Some(&[1 << 20])), d, &p, &mut out16).unwrap();
        assert_eq!(
            out16,
            [
                ((32767 * 127 + (1 << 20)) as f64 / 64.0).round() as i16,
                ((-32768 * 127 + (1 << 20)) as f64 / 64.0).round() as i16
            ]
        );
    }

    #[test]
    fn hybrid_close_to_float() {
        let mut r = Lcg(2);
        let d = FcDims { batches: 2, depth: 50, units: 7 };
        let x: Vec<f32> = (0..100).map(|_| r.f32() * 4.0).collect();
        let qw: Vec<i8> = (0..350).map(|_| r.int(-127, 127) as i8).collect();
        let fw: Vec<f32> = qw.iter().map(|&v| v as f32 * 0.01).collect();
        let mut want = vec![0.0f32; 14];
        fc_f32_reference(&x, &fw, None, d, &mut want, (f32::MIN, f32::MAX)).unwrap();
        for asym in [false, true] {
            let q = quantize_rows(&x, d, asym, Some(0.01)).unwrap();
            let q = q.view();
            let mut got = vec![0.0f32; 14];
            fc_hybrid_reference(&q, &qw, None, None, d, kTfLiteActNone, &mut got).unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 0.2, "{g} vs {w}");
            }
        }
    }

    #[test]
    fn shapes() {
        assert_eq!(output_shape(&[2, 10], &[3, 10], false).unwrap(), vec![2, 3]);
        assert_eq!(output_shape(&[1, 2, 5, 10], &[3, 10], false).unwrap(), vec![10, 3]);
        assert_eq!(output_shape(&[1, 2, 5, 10], &[3, 10], true).unwrap(), vec![1, 2, 5, 3]);
        assert_eq!(output_shape(&[4, 0], &[3, 0], false).unwrap(), vec![4, 3]);
        assert_eq!(output_shape(&[7], &[3, 5], false).unwrap(), vec![1, 3]);
        assert!(output_shape(&[2, 10], &[3, 9], true).is_err());
        assert!(output_shape(&[2, 10], &[30], false).is_err());
        assert!(output_shape(&[], &[3, 1], true).is_err());
    }

    #[test]
    fn registration_glue() {
        use crate::abi::types::TfLiteStatus;
        use crate::kernels::test_util::{Graph, qp};
        use TfLiteType::*;
        let reg = registration();
        assert_eq!(reg.builtin_code, TfLiteBuiltinOperator::kTfLiteBuiltinFullyConnected as i32);
        let params = |keep_num_dims, activation, asym| {
            Some(TfLiteFullyConnectedParams {
                activation,
                weights_format: TfLiteFullyConnectedWeightsFormat::kTfLiteFullyConnectedWeightsFormatDefault,
                keep_num_dims,
                asymmetric_quantize_inputs: asym,
                quantized_bias_type: kTfLiteNoType,
            })
        };
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[2, 1, 2], &[1.0f32, 2.0, 3.0, 4.0], None, false);
        let w = g.tensor(kTfLiteFloat32, &[3, 2], &[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0], None, true);
        let b = g.tensor(kTfLiteFloat32, &[3], &[0.5f32, 0.0, -1.0], None, true);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[x, w, b], &[o], params(false, kTfLiteActNone, false)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 3]);
        assert_eq!(g.data::<f32>(o), vec![1.5, 2.0, 2.0, 3.5, 4.0, 6.0]);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[x, w, -1], &[o], params(true, kTfLiteActNone, false)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 1, 3]);
        assert_eq!(g.data::<f32>(o), vec![1.0, 2.0, 3.0, 3.0, 4.0, 7.0]);
        // TANH is refused for float layers; wrong bias size; missing params.
        assert_eq!(g.run(&reg, &[x, w], &[o], params(false, kTfLiteActTanh, false)), TfLiteStatus::kTfLiteError);
        let bad = g.tensor(kTfLiteFloat32, &[2], &[0.0f32; 2], None, true);
        assert_eq!(g.run(&reg, &[x, w, bad], &[o], params(false, kTfLiteActNone, false)), TfLiteStatus::kTfLiteError);
        assert_eq!(g.run::<TfLiteFullyConnectedParams>(&reg, &[x, w], &[o], None), TfLiteStatus::kTfLiteError);
        // int8: scales 0.5 * 0.5 / 0.25 = 1; input zero point 1, output zero point -1.
        let xi = g.tensor(kTfLiteInt8, &[1, 2], &[3i8, 5], Some(qp(0.5, 1)), false);
        let wi = g.tensor(kTfLiteInt8, &[2, 2], &[1i8, 2, -3, 1], Some(qp(0.5, 0)), true);
        let bi = g.tensor(kTfLiteInt32, &[2], &[10i32, -20], Some(qp(0.25, 0)), true);
        let oi = g.output(kTfLiteInt8, Some(qp(0.25, -1)));
        assert_eq!(g.run(&reg, &[xi, wi, bi], &[oi], params(false, kTfLiteActNone, false)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i8>(oi), vec![2 + 8 + 10 - 1, -6 + 4 - 20 - 1]);
        // uint8 with a weight zero point and RELU.
        let xu = g.tensor(kTfLiteUInt8, &[1, 2], &[130u8, 126], Some(qp(0.5, 128)), false);
        let wu = g.tensor(kTfLiteUInt8, &[1, 2], &[129u8, 125], Some(qp(0.5, 127)), true);
        let ou = g.output(kTfLiteUInt8, Some(qp(0.25, 10)));
        assert_eq!(g.run(&reg, &[xu, wu], &[ou], params(false, kTfLiteActRelu, false)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<u8>(ou), vec![10 + 2 * 2 + 2 * 2]);
        // Hybrid with float output.
        let wh = g.tensor(kTfLiteInt8, &[1, 2], &[127i8, -127], Some(qp(1.0 / 127.0, 0)), true);
        let oh = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[x, wh], &[oh], params(false, kTfLiteActNone, true)), TfLiteStatus::kTfLiteOk);
        let got = g.data::<f32>(oh);
        assert!((got[0] + 1.0).abs() < 0.05 && (got[1] + 1.0).abs() < 0.05, "{got:?}");
    }
}
