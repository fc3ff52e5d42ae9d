//! DEPTHWISE_CONV_2D (TFLite `kernels/depthwise_conv.cc`; reference kernels
//! `reference/depthwiseconv_float.h`, `reference/depthwiseconv_uint8.h`,
//! `reference/integer_ops/depthwise_conv.h`), versions 1 to 7.
//!
//! Filter `[1, kh, kw, out_c]` with `out_c = in_c * depth_multiplier` (the multiplier is
//! taken from the shapes, as TFLite's `ComputeDepthMultiplier` does); output channel
//! `ic * depth_multiplier + m` reads input channel `ic`. Types: float32; uint8
//! (per-tensor, filter zero point allowed); int8 (per-channel or broadcast per-tensor
//! filter scales, int32 bias); int16 activations with int8 filter and int64 bias; hybrid
//! float32 input with per-channel int8 filter (input quantized asymmetrically per batch).
//! Padding SAME / VALID, strides, dilations (version 2), optional bias, fused activation.
//!
//! [`Variant::Reference`] is TFLite's element loop; the optimized path accumulates whole
//! channel vectors per filter tap in the same order (bit-identical floats, exact
//! integers), split over threads by output rows. 16x8 always uses the reference loop.
//! Float and int8 nodes with depth multiplier 1 run on the depthwise microkernels
//! (`microkernels::f32_dwconv`, `microkernels::qs8_dwconv`: the int8 ones exact, with the
//! input zero point folded into the bias) where the kernel table has them.

use super::conv_2d::{
    ConvElem, HybridBuffers, HybridInput, Quant8Params, hybrid_temporaries, hybrid_temporary_bytes,
    quantize_hybrid_input, quantize_hybrid_input_into, widen,
};
use super::conv_common::PackSlot;
use super::conv_common::{
    ConvGeom, QuantMul, Requant, affine, check_len, checked_product, compute_padding_height_width, dim,
    legacy_quant_mul, opt_data_cow, parallel_rows, per_channel_multipliers, positive_param, recommended_threads,
    threads_for,
};
use crate::abi::builtin_op_data::{TfLiteDepthwiseConvParams, TfLiteFusedActivation};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::activation::{activation_range_f32, activation_range_quantized, clamp_min_max};
use crate::kernels::api::{OpCtx, TensorView, TensorViewMut};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{QuantInt, multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_i64};
use crate::microkernels::f32_dwconv::{self, DwGeom};
use crate::microkernels::packed::Packed;
use crate::microkernels::qs8_dwconv::{self, PackedDw};
use crate::microkernels::table;

const OP: &str = "DEPTHWISE_CONV_2D";

/// The DEPTHWISE_CONV_2D registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<DepthwiseConv2d>(TfLiteBuiltinOperator::kTfLiteBuiltinDepthwiseConv2d)
}

/// Which implementation computes a depthwise convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// TFLite's reference loop.
    Reference,
    /// Channel-vector accumulation per tap, threads.
    Optimized,
}

// ---------------------------------------------------------------------------------------
// Reference maths on slices
// ---------------------------------------------------------------------------------------

/// `out_c / in_c`, checked.
fn multiplier(g: &ConvGeom) -> Result<usize> {
    if g.in_c == 0 || !g.out_c.is_multiple_of(g.in_c) {
        return Err(Error::new(format!("{} output channels are not a multiple of {} input channels", g.out_c, g.in_c)));
    }
    Ok(g.out_c / g.in_c)
}

fn check_sizes(g: &ConvGeom, input: usize, filter: usize, bias: Option<usize>, out: usize) -> Result<usize> {
    check_len("input", input, g.input_len())?;
    check_len("filter", filter, g.f_h.checked_mul(g.f_w).and_then(|v| v.checked_mul(g.out_c)))?;
    check_len("output", out, g.output_len())?;
    if let Some(b) = bias {
        check_len("bias", b, Some(g.out_c))?;
    }
    multiplier(g)
}

/// Calls `f(acc, input_index, filter_index)` over the window of output channel `oc` at
/// `(b, oy, ox)` in TFLite's order, skipping taps outside the image.
#[inline]
#[allow(clippy::too_many_arguments)]
fn window<A>(
    g: &ConvGeom,
    mult: usize,
    b: usize,
    oy: usize,
    ox: usize,
    oc: usize,
    init: A,
    mut f: impl FnMut(A, usize, usize) -> A,
) -> A {
    let ic = oc / mult;
    let mut acc = init;
    for ky in 0..g.f_h {
        for kx in 0..g.f_w {
            let (Some(iy), Some(ix)) = (g.in_y(oy, ky), g.in_x(ox, kx)) else { continue };
            acc = f(acc, ((b * g.in_h + iy) * g.in_w + ix) * g.in_c + ic, (ky * g.f_w + kx) * g.out_c + oc);
        }
    }
    acc
}

fn for_each_output(g: &ConvGeom, mut f: impl FnMut(usize, usize, usize, usize, usize)) {
    let mut o = 0;
    for b in 0..g.batches {
        for oy in 0..g.out_h {
            for ox in 0..g.out_w {
                for oc in 0..g.out_c {
                    f(o, b, oy, ox, oc);
                    o += 1;
                }
            }
        }
    }
}

/// Float depthwise convolution, TFLite's `reference_ops::DepthwiseConv`.
pub fn dw_f32_reference(
    g: &ConvGeom,
    input: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    out: &mut [f32],
    act: (f32, f32),
) -> Result<()> {
    let mult = check_sizes(g, input.len(), filter.len(), bias.map(|b| b.len()), out.len())?;
    for_each_output(g, |o, b, oy, ox, oc| {
        let total = window(g, mult, b, oy, ox, oc, 0.0f32, |acc, i, f| acc + input[i] * filter[f]);
        out[o] = clamp_min_max(total + bias.map_or(0.0, |bb| bb[oc]), act.0, act.1);
    });
    Ok(())
}

/// 8-bit depthwise convolution: uint8 `DepthwiseConvBasicKernel` (rounding away from zero
/// = `MultiplyByQuantizedMultiplier`) and int8 `DepthwiseConvPerChannel`.
pub fn dw_q8_reference<T: QuantInt, W: QuantInt>(
    g: &ConvGeom,
    input: &[T],
    filter: &[W],
    bias: Option<&[i32]>,
    p: &Quant8Params,
    out: &mut [T],
) -> Result<()> {
    let mult = check_sizes(g, input.len(), filter.len(), bias.map(|b| b.len()), out.len())?;
    check_len("multipliers", p.mults.len(), Some(g.out_c))?;
    for_each_output(g, |o, b, oy, ox, oc| {
        let acc = window(g, mult, b, oy, ox, oc, 0i32, |acc, i, f| {
            let x = input[i].to_i32().wrapping_add(p.input_offset);
            let w = filter[f].to_i32().wrapping_add(p.filter_offset);
            acc.wrapping_add(w.wrapping_mul(x))
        });
        out[o] = T::from_i32(q8_finish(p, acc, bias, oc));
    });
    Ok(())
}

#[inline]
fn q8_finish(p: &Quant8Params, acc: i32, bias: Option<&[i32]>, oc: usize) -> i32 {
    let acc = acc.wrapping_add(bias.map_or(0, |b| b[oc]));
    let m = p.mults[oc];
    multiply_by_quantized_multiplier(acc, m.multiplier, m.shift)
        .wrapping_add(p.output_offset)
        .clamp(p.act_min, p.act_max)
}

/// 16x8 depthwise convolution, TFLite's int16 `DepthwiseConvPerChannel` (i64 accumulator,
/// 64-bit `MultiplyByQuantizedMultiplier`, zero points 0).
pub fn dw_i16_reference(
    g: &ConvGeom,
    input: &[i16],
    filter: &[i8],
    bias: Option<&[i64]>,
    mults: &[QuantMul],
    act: (i32, i32),
    out: &mut [i16],
) -> Result<()> {
    let mult = check_sizes(g, input.len(), filter.len(), bias.map(|b| b.len()), out.len())?;
    check_len("multipliers", mults.len(), Some(g.out_c))?;
    for_each_output(g, |o, b, oy, ox, oc| {
        let acc =
            window(g, mult, b, oy, ox, oc, 0i64, |acc, i, f| acc.wrapping_add(input[i] as i64 * filter[f] as i64));
        let acc = acc.wrapping_add(bias.map_or(0, |bb| bb[oc]));
        let m = mults[oc];
        out[o] = multiply_by_quantized_multiplier_i64(acc, m.multiplier, m.shift).clamp(act.0, act.1) as i16;
    });
    Ok(())
}

#[inline]
fn hybrid_finish(
    acc: i32,
    channel_scales: &[f32],
    oc: usize,
    batch_scale: f32,
    bias: Option<&[f32]>,
    act: (f32, f32),
) -> f32 {
    let cs = if channel_scales.len() == 1 { channel_scales[0] } else { channel_scales[oc] };
    let mut v = acc as f32;
    v *= cs * batch_scale;
    if let Some(b) = bias {
        v += b[oc];
    }
    clamp_min_max(v, act.0, act.1)
}

/// Hybrid depthwise convolution, TFLite's `DepthwiseConvHybridPerChannel`:
/// `acc = sum w * (x - offset[b])`, then `acc * (channel_scale * batch_scale) + bias`.
pub fn dw_hybrid_reference(
    g: &ConvGeom,
    q: &HybridInput<'_>,
    filter: &[i8],
    channel_scales: &[f32],
    bias: Option<&[f32]>,
    act: (f32, f32),
    out: &mut [f32],
) -> Result<()> {
    let mult = check_sizes(g, q.data.len(), filter.len(), bias.map(|b| b.len()), out.len())?;
    check_len("batch scales", q.scales.len(), Some(g.batches))?;
    check_len("batch offsets", q.offsets.len(), Some(g.batches))?;
    if channel_scales.len() != 1 {
        check_len("channel scales", channel_scales.len(), Some(g.out_c))?;
    }
    for_each_output(g, |o, b, oy, ox, oc| {
        let off = q.offsets[b];
        let acc = window(g, mult, b, oy, ox, oc, 0i32, |acc, i, f| {
            acc.wrapping_add((filter[f] as i32).wrapping_mul((q.data[i] as i32).wrapping_sub(off)))
        });
        out[o] = hybrid_finish(acc, channel_scales, oc, q.scales[b], bias, act);
    });
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Optimized maths
// ---------------------------------------------------------------------------------------

/// One output row `(b, oy)`: for each pixel, channel-vector accumulation over the taps in
/// reference order, then `finish(accumulators, b, 0, output pixel)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn dw_row<S: Copy, E: ConvElem, O>(
    g: &ConvGeom,
    mult: usize,
    input: &[S],
    cv: &impl Fn(S, i32) -> E,
    off: i32,
    filter: &[E],
    b: usize,
    oy: usize,
    out_row: &mut [O],
    acc: &mut Vec<E::Acc>,
    finish: &(impl Fn(&[E::Acc], usize, usize, &mut [O]) + Sync),
) {
    let (in_c, out_c) = (g.in_c, g.out_c);
    acc.clear();
    acc.resize(out_c, E::Acc::default());
    for ox in 0..g.out_w {
        acc.iter_mut().for_each(|a| *a = E::Acc::default());
        for ky in 0..g.f_h {
            let Some(iy) = g.in_y(oy, ky) else { continue };
            for kx in 0..g.f_w {
                let Some(ix) = g.in_x(ox, kx) else { continue };
                let base = ((b * g.in_h + iy) * g.in_w + ix) * in_c;
                let x = &input[base..base + in_c];
                let t = ky * g.f_w + kx;
                let w = &filter[t * out_c..(t + 1) * out_c];
                if mult == 1 {
                    for ((a, &xv), &wv) in acc.iter_mut().zip(x).zip(w) {
                        *a = E::mac(*a, cv(xv, off), wv);
                    }
                } else {
                    for ((a, ws), &xv) in acc.chunks_exact_mut(mult).zip(w.chunks_exact(mult)).zip(x) {
                        let xv = cv(xv, off);
                        for (aj, &wv) in a.iter_mut().zip(ws) {
                            *aj = E::mac(*aj, xv, wv);
                        }
                    }
                }
            }
        }
        let o = ox * out_c;
        finish(acc, b, 0, &mut out_row[o..o + out_c]);
    }
}

/// The optimized depthwise loop over every output row, split across `threads`. The input
/// is converted while it is read: operand `cv(x, offsets[b])` for a value `x` of batch `b`
/// (`offsets` has one entry per batch), so no converted copy of the input is needed.
#[allow(clippy::too_many_arguments)]
fn dw_rows<S: Copy + Sync, E: ConvElem, O: Send>(
    g: &ConvGeom,
    input: &[S],
    cv: &(impl Fn(S, i32) -> E + Sync),
    offsets: &[i32],
    filter: &[E],
    out: &mut [O],
    threads: usize,
    finish: &(impl Fn(&[E::Acc], usize, usize, &mut [O]) + Sync),
) -> Result<()> {
    let mult = check_sizes(g, input.len(), filter.len(), None, out.len())?;
    check_len("input offsets", offsets.len(), Some(g.batches))?;
    let row_len = g.out_w * g.out_c;
    let rows = g.batches * g.out_h;
    let work = out.len().saturating_mul(g.f_h * g.f_w);
    let threads = threads_for(threads, work, rows);
    parallel_rows(threads, out, row_len, &|first, chunk: &mut [O]| {
        if super::conv_2d::have_avx2() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX2 (checked above).
            unsafe {
                dw_chunk_avx2(g, mult, input, cv, offsets, filter, first, chunk, finish)
            };
            #[cfg(not(target_arch = "x86_64"))]
            dw_chunk(g, mult, input, cv, offsets, filter, first, chunk, finish);
        } else {
            dw_chunk(g, mult, input, cv, offsets, filter, first, chunk, finish);
        }
        Ok(())
    })
}

/// Output rows `first..` filling `chunk`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn dw_chunk<S: Copy, E: ConvElem, O>(
    g: &ConvGeom,
    mult: usize,
    input: &[S],
    cv: &impl Fn(S, i32) -> E,
    offsets: &[i32],
    filter: &[E],
    first: usize,
    chunk: &mut [O],
    finish: &(impl Fn(&[E::Acc], usize, usize, &mut [O]) + Sync),
) {
    let row_len = g.out_w * g.out_c;
    let mut acc = Vec::new();
    for (i, row) in chunk.chunks_mut(row_len).enumerate() {
        let r = first + i;
        let b = r / g.out_h;
        dw_row(g, mult, input, cv, offsets[b], filter, b, r % g.out_h, row, &mut acc, finish);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn dw_chunk_avx2<S: Copy, E: ConvElem, O>(
    g: &ConvGeom,
    mult: usize,
    input: &[S],
    cv: &impl Fn(S, i32) -> E,
    offsets: &[i32],
    filter: &[E],
    first: usize,
    chunk: &mut [O],
    finish: &(impl Fn(&[E::Acc], usize, usize, &mut [O]) + Sync),
) {
    dw_chunk(g, mult, input, cv, offsets, filter, first, chunk, finish)
}

/// Float depthwise convolution, bit-identical to [`dw_f32_reference`].
pub fn dw_f32_optimized(
    g: &ConvGeom,
    input: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    out: &mut [f32],
    act: (f32, f32),
    threads: usize,
) -> Result<()> {
    if let Some(b) = bias {
        check_len("bias", b.len(), Some(g.out_c))?;
    }
    let zeros = vec![0i32; g.batches];
    dw_rows(g, input, &|x: f32, _| x, &zeros, filter, out, threads, &|acc: &[f32], _b, _c0, out: &mut [f32]| match bias
    {
        Some(bb) => {
            for ((o, &a), &bv) in out.iter_mut().zip(acc).zip(bb) {
                *o = clamp_min_max(a + bv, act.0, act.1);
            }
        }
        None => {
            for (o, &a) in out.iter_mut().zip(acc) {
                *o = clamp_min_max(a + 0.0, act.0, act.1);
            }
        }
    })
}

/// The microkernels' geometry of a depthwise convolution with depth multiplier 1.
pub(super) fn dw_geom(g: &ConvGeom) -> Result<DwGeom> {
    if g.in_c != g.out_c {
        return Err(Error::new(format!(
            "the depthwise microkernels need depth multiplier 1, not {} to {} channels",
            g.in_c, g.out_c
        )));
    }
    Ok(DwGeom {
        batches: g.batches,
        in_h: g.in_h,
        in_w: g.in_w,
        channels: g.in_c,
        out_h: g.out_h,
        out_w: g.out_w,
        k_h: g.f_h,
        k_w: g.f_w,
        stride_h: g.stride_h,
        stride_w: g.stride_w,
        dil_h: g.dil_h,
        dil_w: g.dil_w,
        pad_top: g.pad_h,
        pad_left: g.pad_w,
    })
}

/// Packs a float filter `[1, f_h, f_w, channels]` and bias for the depthwise
/// microkernels of this CPU (depth multiplier 1).
pub fn pack_f32(g: &ConvGeom, filter: &[f32], bias: Option<&[f32]>) -> Result<Packed<f32>> {
    let dg = dw_geom(g)?;
    let (c, taps) = (dg.channels, dg.taps());
    check_len("filter", filter.len(), taps.checked_mul(c))?;
    f32_dwconv::pack(&table().f32_dwconv, c, taps, |t, ch| filter[t * c + ch], bias)
}

/// Float depthwise convolution with depth multiplier 1 on the microkernels, `packed` made
/// by [`pack_f32`]; output rows (or pixels, see [`pixels_per_share_unit`]) split across
/// `threads`. Sums in a different order than [`dw_f32_reference`] (bias first, two
/// partial sums, fused multiply-adds where the CPU has them), so results agree up to
/// float rounding.
pub fn dw_f32_microkernel(
    g: &ConvGeom,
    input: &[f32],
    packed: &[f32],
    out: &mut [f32],
    act: (f32, f32),
    threads: usize,
) -> Result<()> {
    let dg = dw_geom(g)?;
    check_len("input", input.len(), g.input_len())?;
    check_len("output", out.len(), g.output_len())?;
    let kernels = &table().f32_dwconv;
    let work = out.len().saturating_mul(dg.taps());
    let threads = threads_for(threads, work, dg.rows());
    let px = pixels_per_share_unit(&dg, threads);
    parallel_rows(threads, out, px * dg.channels, &|first, chunk: &mut [f32]| {
        f32_dwconv::run_pixels(kernels, &dg, input, packed, first * px, chunk, act)
    })
}

/// The output pixels `threads` threads split the depthwise output in units of: whole
/// rows, or single pixels where the rows do not divide among the threads (a 7x7 image's
/// 7 rows split 4/3 over two threads, its 49 pixels 25/24, as the convolution before it
/// split them).
fn pixels_per_share_unit(dg: &DwGeom, threads: usize) -> usize {
    if threads > 1 && !dg.rows().is_multiple_of(threads) { 1 } else { dg.out_w }
}

/// Packs an int8 filter `[1, f_h, f_w, channels]` (filter zero point 0) and bias for the
/// int8 depthwise microkernels (depth multiplier 1), with the input zero point folded
/// into the bias and `p`'s requantization.
pub fn pack_q8(g: &ConvGeom, filter: &[i8], bias: Option<&[i32]>, p: &Quant8Params) -> Result<PackedDw> {
    let dg = dw_geom(g)?;
    let (c, taps) = (dg.channels, dg.taps());
    check_len("filter", filter.len(), taps.checked_mul(c))?;
    check_len("multipliers", p.mults.len(), Some(c))?;
    if p.filter_offset != 0 {
        return Err(Error::new(format!(
            "the int8 depthwise microkernels need filter offset 0, not {}",
            p.filter_offset
        )));
    }
    let k_w = dg.k_w;
    qs8_dwconv::pack(
        q8_kernels()?,
        c,
        (dg.k_h, k_w),
        |ky, kx, ch| filter[(ky * k_w + kx) * c + ch],
        bias,
        p.input_offset.wrapping_neg(),
        |ch| (p.mults[ch].multiplier, p.mults[ch].shift),
        p.output_offset,
        (p.act_min, p.act_max),
    )
}

/// The int8 depthwise microkernels of this CPU's table.
fn q8_kernels() -> Result<&'static qs8_dwconv::DwKernels> {
    table()
        .qs8_dwconv
        .as_ref()
        .ok_or_else(|| Error::new(format!("{OP}: no int8 depthwise microkernels for this instruction set")))
}

/// int8 depthwise convolution with depth multiplier 1 on the microkernels, `packed` made
/// by [`pack_q8`]; output rows (or pixels, see [`pixels_per_share_unit`]) split across
/// `threads`. Identical to [`dw_q8_reference`].
pub fn dw_q8_microkernel(g: &ConvGeom, input: &[i8], packed: &PackedDw, out: &mut [i8], threads: usize) -> Result<()> {
    let kernels = q8_kernels()?;
    let dg = dw_geom(g)?;
    check_len("input", input.len(), g.input_len())?;
    check_len("output", out.len(), g.output_len())?;
    let work = out.len().saturating_mul(dg.taps());
    let threads = threads_for(threads, work, dg.rows());
    let px = pixels_per_share_unit(&dg, threads);
    parallel_rows(threads, out, px * dg.channels, &|first, chunk: &mut [i8]| {
        qs8_dwconv::run_pixels(kernels, &dg, input, packed, first * px, chunk)
    })
}

/// 8-bit depthwise convolution on the operands `x + input_offset` (widened while the
/// input is read) and `w + filter_offset` (`filter_wide`, as `i16`); identical to
/// [`dw_q8_reference`].
pub fn dw_q8_optimized<T: QuantInt>(
    g: &ConvGeom,
    input: &[T],
    filter_wide: &[i16],
    bias: Option<&[i32]>,
    p: &Quant8Params,
    out: &mut [T],
    threads: usize,
) -> Result<()> {
    dw_q8_wide(g, input, &WideFilter::new(filter_wide.to_vec()), bias, p, out, threads)
}

/// An integer depthwise filter widened to `i16` (offset applied), with its values as
/// `f32` and its largest magnitude, for the float loop of [`exact_in_f32`] sums.
pub struct WideFilter {
    wide: Packed<i16>,
    as_f32: Packed<f32>,
    max_abs: u64,
}

impl WideFilter {
    /// The filter `wide` (values `w + filter_offset`).
    pub fn new(wide: Vec<i16>) -> WideFilter {
        let max_abs = wide.iter().map(|&x| (x as i32).unsigned_abs() as u64).max().unwrap_or(0);
        WideFilter { as_f32: Packed::new(to_f32(&wide)), wide: Packed::new(wide), max_abs }
    }
}

/// [`dw_q8_optimized`] on a filter widened ahead.
fn dw_q8_wide<T: QuantInt>(
    g: &ConvGeom,
    input: &[T],
    filter: &WideFilter,
    bias: Option<&[i32]>,
    p: &Quant8Params,
    out: &mut [T],
    threads: usize,
) -> Result<()> {
    if let Some(b) = bias {
        check_len("bias", b.len(), Some(g.out_c))?;
    }
    check_len("multipliers", p.mults.len(), Some(g.out_c))?;
    let rq = Requant::new(&p.mults, bias, p.output_offset, p.act_min, p.act_max);
    let offsets = vec![p.input_offset; g.batches];
    if exact_in_f32(g, max_abs_wide(g, input, &offsets), filter.max_abs) {
        let cv = |x: T, off: i32| wide(x, off) as f32;
        return dw_rows(
            g,
            input,
            &cv,
            &offsets,
            &filter.as_f32,
            out,
            threads,
            &|acc: &[f32], _b, c0, out: &mut [T]| rq.apply(c0, acc, out),
        );
    }
    dw_rows(g, input, &wide::<T>, &offsets, &filter.wide, out, threads, &|acc: &[i32], _b, c0, out: &mut [T]| {
        rq.apply(c0, acc, out)
    })
}

/// An 8-bit value widened with an offset (`x + off` as `i16`).
#[inline(always)]
fn wide<T: QuantInt>(x: T, off: i32) -> i16 {
    x.to_i32().wrapping_add(off) as i16
}

/// The largest `|x + offsets[b]|` (widened as [`wide`]) over the input's values.
fn max_abs_wide<T: QuantInt>(g: &ConvGeom, input: &[T], offsets: &[i32]) -> u64 {
    let per_batch = (g.in_h * g.in_w * g.in_c).max(1);
    input
        .chunks(per_batch)
        .zip(offsets)
        .map(|(xs, &off)| xs.iter().map(|&x| (wide(x, off) as i32).unsigned_abs() as u64).max().unwrap_or(0))
        .max()
        .unwrap_or(0)
}

/// True when a depthwise window sum of these integer operands is computed exactly in
/// `f32`: every product and partial sum is an integer below 2^24 in magnitude (the window
/// has at most `2^24 / max|x| / max|w|` taps). The optimized integer kernels then use the
/// (faster) float loop and convert the exact sums back.
fn exact_in_f32(g: &ConvGeom, input_max_abs: u64, filter_max_abs: u64) -> bool {
    let taps = (g.f_h * g.f_w) as u64;
    taps.saturating_mul(input_max_abs).saturating_mul(filter_max_abs) < 1 << 24
}

fn to_f32(v: &[i16]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// Hybrid depthwise convolution; identical to [`dw_hybrid_reference`].
#[allow(clippy::too_many_arguments)]
pub fn dw_hybrid_optimized(
    g: &ConvGeom,
    q: &HybridInput<'_>,
    filter: &[i8],
    channel_scales: &[f32],
    bias: Option<&[f32]>,
    act: (f32, f32),
    out: &mut [f32],
    threads: usize,
) -> Result<()> {
    let fw = WideFilter::new(filter.iter().map(|&w| w as i16).collect());
    dw_hybrid_wide(g, q, &fw, channel_scales, bias, act, out, threads)
}

/// [`dw_hybrid_optimized`] on the filter widened ahead.
#[allow(clippy::too_many_arguments)]
fn dw_hybrid_wide(
    g: &ConvGeom,
    q: &HybridInput<'_>,
    filter: &WideFilter,
    channel_scales: &[f32],
    bias: Option<&[f32]>,
    act: (f32, f32),
    out: &mut [f32],
    threads: usize,
) -> Result<()> {
    check_len("batch scales", q.scales.len(), Some(g.batches))?;
    check_len("batch offsets", q.offsets.len(), Some(g.batches))?;
    check_len("quantized input", q.data.len(), g.input_len())?;
    if channel_scales.len() != 1 {
        check_len("channel scales", channel_scales.len(), Some(g.out_c))?;
    }
    if let Some(b) = bias {
        check_len("bias", b.len(), Some(g.out_c))?;
    }
    let offsets: Vec<i32> = q.offsets.iter().map(|&o| o.wrapping_neg()).collect();
    if exact_in_f32(g, max_abs_wide(g, q.data, &offsets), filter.max_abs) {
        let cv = |x: i8, off: i32| wide(x, off) as f32;
        return dw_rows(
            g,
            q.data,
            &cv,
            &offsets,
            &filter.as_f32,
            out,
            threads,
            &|acc: &[f32], b, c0, out: &mut [f32]| {
                for (j, (o, &a)) in out.iter_mut().zip(acc).enumerate() {
                    *o = hybrid_finish(a as i32, channel_scales, c0 + j, q.scales[b], bias, act);
                }
            },
        );
    }
    dw_rows(g, q.data, &wide::<i8>, &offsets, &filter.wide, out, threads, &|acc: &[i32], b, c0, out: &mut [f32]| {
        for (j, (o, &a)) in out.iter_mut().zip(acc).enumerate() {
            *o = hybrid_finish(a, channel_scales, c0 + j, q.scales[b], bias, act);
        }
    })
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

/// DEPTHWISE_CONV_2D. State: the geometry, how the node computes (type path, activation
/// range, quantized multipliers, hybrid channel scales), the output shape, and the filter
/// packed for the optimized paths (float filter and bias for the depthwise microkernels,
/// int8 filter and bias with the input zero point folded in for the int8 microkernels,
/// other integer filters widened to `i16` and `f32`).
struct DepthwiseConv2d;

/// What Prepare derives for a DEPTHWISE_CONV_2D node.
struct State {
    geom: ConvGeom,
    kind: Kind,
    out_shape: [i32; 4],
    /// Float filter and bias packed for the microkernels (float32, depth multiplier 1).
    f32s: PackSlot<Packed<f32>>,
    /// The 8-bit or hybrid filter widened with its offset.
    wide: PackSlot<WideFilter>,
    /// int8 filter and bias packed for the int8 microkernels (see [`q8_microkernel`]).
    q8s: PackSlot<PackedDw>,
}

pub(super) enum Kind {
    F32 { act: (f32, f32) },
    Hybrid { channel_scales: Vec<f32>, act: (f32, f32) },
    Quant8(Quant8Params),
    Quant16 { mults: Vec<QuantMul>, act: (i32, i32) },
}

/// The node's input, filter and optional bias.
fn operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>, Option<TensorView<'a>>)> {
    let input = ctx.input(0)?;
    let filter = ctx.input(1)?;
    let bias = if ctx.num_inputs() == 3 { ctx.optional_input(2)? } else { None };
    Ok((input, filter, bias))
}

/// The node's geometry and type path. `in_shape` is the input's shape (the input
/// tensor's own, or what a fused producer will write); types and quantization come from
/// `input`.
pub(super) fn plan(
    p: &TfLiteDepthwiseConvParams,
    in_shape: &[i32],
    input: &TensorView<'_>,
    filter: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    output: &TensorView<'_>,
) -> Result<(ConvGeom, Kind)> {
    if in_shape.len() != 4 || filter.shape.len() != 4 {
        return Err(Error::new(format!("{OP}: input {in_shape:?} and filter {:?} must have rank 4", filter.shape)));
    }
    let d = |t: &TensorView<'_>, what, i| dim(OP, what, t.shape, i);
    let di = |i| dim(OP, "input", in_shape, i);
    let (batches, in_h, in_w, in_c) = (di(0)?, di(1)?, di(2)?, di(3)?);
    let (f_n, f_h, f_w, out_c) =
        (d(filter, "filter", 0)?, d(filter, "filter", 1)?, d(filter, "filter", 2)?, d(filter, "filter", 3)?);
    if in_h == 0 || in_w == 0 || in_c == 0 || f_h == 0 || f_w == 0 || out_c == 0 {
        return Err(Error::new(format!(
            "{OP}: input {in_shape:?} and filter {:?} need positive spatial and channel dimensions",
            filter.shape
        )));
    }
    if f_n != 1 {
        return Err(Error::new(format!("{OP}: filter shape {:?} must be [1, height, width, channels]", filter.shape)));
    }
    if out_c % in_c != 0 {
        return Err(Error::new(format!("{OP}: {out_c} filter channels are not a multiple of {in_c} input channels")));
    }
    let limit = |what, v: i32| -> Result<usize> {
        let u = positive_param(OP, what, v)?;
        if u > i16::MAX as usize {
            return Err(Error::new(format!("{OP}: {what} {v} is too large")));
        }
        Ok(u)
    };
    let stride_h = limit("stride_height", p.stride_height)?;
    let stride_w = limit("stride_width", p.stride_width)?;
    let dil_h = limit("dilation_height_factor", p.dilation_height_factor)?;
    let dil_w = limit("dilation_width_factor", p.dilation_width_factor)?;
    let dtype = input.dtype;
    if !matches!(
        dtype,
        TfLiteType::kTfLiteFloat32 | TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8 | TfLiteType::kTfLiteInt16
    ) {
        return Err(Error::new(format!("{OP}: input type {} is not supported", dtype.name())));
    }
    if output.dtype != dtype {
        return Err(Error::new(format!(
            "{OP}: output type {} differs from input type {}",
            output.dtype.name(),
            dtype.name()
        )));
    }
    let hybrid = dtype == TfLiteType::kTfLiteFloat32 && filter.dtype == TfLiteType::kTfLiteInt8;
    let filter_ok = hybrid
        || filter.dtype == dtype
        || (dtype == TfLiteType::kTfLiteInt16 && filter.dtype == TfLiteType::kTfLiteInt8);
    if !filter_ok {
        return Err(Error::new(format!("{OP}: filter type {} with {} input", filter.dtype.name(), dtype.name())));
    }
    if dtype == TfLiteType::kTfLiteInt16 && (input.quant().zero_point != 0 || output.quant().zero_point != 0) {
        return Err(Error::new(format!("{OP}: int16 input and output zero points must be 0")));
    }
    if let Some(b) = bias {
        let want = match dtype {
            TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8 => TfLiteType::kTfLiteInt32,
            TfLiteType::kTfLiteInt16 => TfLiteType::kTfLiteInt64,
            _ => TfLiteType::kTfLiteFloat32,
        };
        if b.dtype != want {
            return Err(Error::new(format!("{OP}: bias of type {} with {} input", b.dtype.name(), dtype.name())));
        }
        if want != TfLiteType::kTfLiteFloat32 && b.quant().zero_point != 0 {
            return Err(Error::new(format!("{OP}: bias zero point must be 0")));
        }
        if b.shape.len() != 1 || b.num_elements() != out_c {
            return Err(Error::new(format!("{OP}: bias shape {:?} does not match {out_c} channels", b.shape)));
        }
    }
    let (out_h, out_w, pad) =
        compute_padding_height_width(stride_h, stride_w, dil_h, dil_w, in_h, in_w, f_h, f_w, p.padding)?;
    let geom = ConvGeom {
        batches,
        in_h,
        in_w,
        in_c,
        out_h,
        out_w,
        out_c,
        f_h,
        f_w,
        f_c: out_c,
        stride_h,
        stride_w,
        dil_h,
        dil_w,
        pad_h: pad.height,
        pad_w: pad.width,
    };
    geom.check_index_range(OP)?;
    checked_product(OP, &[batches, out_h, out_w, out_c])?;
    checked_product(OP, &[batches, in_h, in_w, in_c])?;
    let kind = if dtype == TfLiteType::kTfLiteFloat32 {
        let act = activation_range_f32(p.activation);
        if hybrid {
            let (scales, _, qdim) = affine(OP, "filter", filter)?;
            let channel_scales = if scales.len() == out_c && (qdim == 3 || out_c == 1) {
                scales.to_vec()
            } else if scales.len() == 1 {
                vec![scales[0]]
            } else {
                return Err(Error::new(format!(
                    "{OP}: {} filter scales along dimension {qdim} for {out_c} channels",
                    scales.len()
                )));
            };
            Kind::Hybrid { channel_scales, act }
        } else {
            Kind::F32 { act }
        }
    } else {
        quant_kind(input, filter, bias, output, out_c, p.activation)?
    };
    Ok((geom, kind))
}

fn quant_kind(
    input: &TensorView<'_>,
    filter: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    output: &TensorView<'_>,
    out_c: usize,
    act: TfLiteFusedActivation,
) -> Result<Kind> {
    let (scales, _, qdim) = affine(OP, "filter", filter)?;
    affine(OP, "input", input)?;
    if scales.len() != 1 && scales.len() != out_c {
        return Err(Error::new(format!("{OP}: {} filter scales for {out_c} channels", scales.len())));
    }
    if scales.len() > 1 && qdim != 3 {
        return Err(Error::new(format!("{OP}: per-channel filter scales must be along dimension 3, not {qdim}")));
    }
    let (in_q, out_q) = (input.quant(), output.quant());
    let (act_min, act_max) = activation_range_quantized(act, input.dtype, out_q.scale, out_q.zero_point)?;
    match input.dtype {
        TfLiteType::kTfLiteInt16 => {
            let mults = per_channel_multipliers(OP, in_q.scale, scales, out_q.scale, out_c)?;
            Ok(Kind::Quant16 { mults, act: (act_min, act_max) })
        }
        dt => {
            let mults = if dt == TfLiteType::kTfLiteUInt8 {
                if scales.len() > 1 {
                    return Err(Error::new(format!("{OP}: per-channel quantization needs int8 or int16 input")));
                }
                let m =
                    legacy_quant_mul(OP, in_q.scale, filter.quant().scale, bias.map(|b| b.quant().scale), out_q.scale)?;
                vec![m; out_c]
            } else {
                per_channel_multipliers(OP, in_q.scale, scales, out_q.scale, out_c)?
            };
            let filter_offset = if dt == TfLiteType::kTfLiteUInt8 { -filter.quant().zero_point } else { 0 };
            Ok(Kind::Quant8(Quant8Params::checked(
                OP,
                in_q.zero_point,
                filter_offset,
                out_q.zero_point,
                mults,
                (act_min, act_max),
            )?))
        }
    }
}

/// Widens the filter of an 8-bit or hybrid node with its offset.
fn widen_filter(kind: &Kind, filter: &TensorView<'_>) -> Result<WideFilter> {
    let wide = match kind {
        Kind::Hybrid { .. } => filter.data::<i8>()?.iter().map(|&w| w as i16).collect(),
        Kind::Quant8(p) => match filter.dtype {
            TfLiteType::kTfLiteUInt8 => widen(filter.data::<u8>()?, p.filter_offset),
            _ => widen(filter.data::<i8>()?, p.filter_offset),
        },
        _ => return Err(Error::new(format!("{OP}: internal error: no integer filter to widen"))),
    };
    Ok(WideFilter::new(wide))
}

/// True when the int8 depthwise microkernels compute this node: int8 input and filter,
/// depth multiplier 1, an input zero point that is an int8 value (the padding row holds
/// it) and a kernel table that has them. Other 8-bit nodes keep the widened loop.
fn q8_microkernel(g: &ConvGeom, kind: &Kind, input: &TensorView<'_>, filter: &TensorView<'_>) -> bool {
    let Kind::Quant8(p) = kind else { return false };
    input.dtype == TfLiteType::kTfLiteInt8
        && filter.dtype == TfLiteType::kTfLiteInt8
        && g.in_c == g.out_c
        && p.filter_offset == 0
        && i8::try_from(p.input_offset.wrapping_neg()).is_ok()
        && table().qs8_dwconv.is_some()
}

/// Packs the int8 filter and bias for the int8 microkernels.
fn pack_q8_views(
    g: &ConvGeom,
    p: &Quant8Params,
    filter: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
) -> Result<PackedDw> {
    let b = opt_data_cow::<i32>(bias)?;
    pack_q8(g, filter.data::<i8>()?, b.as_deref(), p)
}

/// Packs the float filter and bias for the microkernels.
fn pack_views(g: &ConvGeom, filter: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> Result<Packed<f32>> {
    let b = opt_data_cow::<f32>(bias)?;
    pack_f32(g, filter.data::<f32>()?, b.as_deref())
}

impl BuiltinKernel for DepthwiseConv2d {
    const NAME: &'static str = OP;
    type Params = TfLiteDepthwiseConvParams;
    type State = State;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteDepthwiseConvParams) -> Result<State> {
        let n_in = ctx.num_inputs();
        if n_in != 2 && n_in != 3 {
            return Err(Error::new(format!("{OP}: expected 2 or 3 inputs, got {n_in}")));
        }
        if ctx.num_outputs() != 1 {
            return Err(Error::new(format!("{OP}: expected 1 output, got {}", ctx.num_outputs())));
        }
        let (input, filter, bias) = operands(ctx)?;
        let output = ctx.output(0)?;
        let (geom, kind) = plan(p, input.shape, &input, &filter, bias.as_ref(), &output)?;
        // Hybrid: the quantized input and its per-batch parameters are node temporaries.
        let temps = match kind {
            Kind::Hybrid { .. } => hybrid_temporary_bytes(geom.input_len().unwrap_or(0), geom.batches)?.to_vec(),
            _ => Vec::new(),
        };
        ctx.request_temporaries(&temps)?;
        // Constant weights are packed here, so the first Invoke does not pay for it.
        let (mut f32s, mut wide, mut q8s) = (PackSlot::default(), PackSlot::default(), PackSlot::default());
        match &kind {
            Kind::F32 { .. } if geom.in_c == geom.out_c => {
                f32s = PackSlot::prepare(&filter, bias.as_ref(), || pack_views(&geom, &filter, bias.as_ref()))?;
            }
            Kind::Quant8(p) if q8_microkernel(&geom, &kind, &input, &filter) => {
                q8s = PackSlot::prepare(&filter, bias.as_ref(), || pack_q8_views(&geom, p, &filter, bias.as_ref()))?;
            }
            Kind::Hybrid { .. } | Kind::Quant8(_) => {
                // The widened filter does not hold the bias.
                wide = PackSlot::prepare(&filter, None, || widen_filter(&kind, &filter))?;
            }
            _ => {}
        }
        let out_shape = geom.output_shape(OP)?;
        ctx.resize_output(0, &out_shape)?;
        Ok(State { geom, kind, out_shape, f32s, wide, q8s })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteDepthwiseConvParams, state: &mut State) -> Result<()> {
        let (input, filter, bias) = operands(ctx)?;
        let mut out = ctx.output(0)?;
        if out.shape != state.out_shape {
            return Err(Error::new(format!(
                "{OP}: output shape {:?} does not match the expected {:?}",
                out.shape, state.out_shape
            )));
        }
        if state.geom.output_len() == Some(0) {
            return Ok(());
        }
        let scratch = match state.kind {
            Kind::Hybrid { .. } => {
                Some(hybrid_temporaries(ctx, 0, state.geom.input_len().unwrap_or(0), state.geom.batches)?)
            }
            _ => None,
        };
        run(state, &input, &filter, bias.as_ref(), &mut out, recommended_threads(ctx), scratch)
    }
}

fn run(
    state: &mut State,
    input: &TensorView<'_>,
    filter: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    out: &mut TensorViewMut<'_>,
    threads: usize,
    scratch: Option<HybridBuffers<'_>>,
) -> Result<()> {
    let State { geom, kind, f32s, wide, q8s, .. } = state;
    let g = &*geom;
    match &*kind {
        Kind::Quant8(p) if q8_microkernel(g, kind, input, filter) => {
            let mut fresh = None;
            let packed = q8s.get(filter, bias, &mut fresh, || pack_q8_views(g, p, filter, bias))?;
            dw_q8_microkernel(g, input.data::<i8>()?, packed, out.data_mut::<i8>()?, threads)
        }
        Kind::F32 { act } if g.in_c == g.out_c => {
            let mut fresh = None;
            let packed = f32s.get(filter, bias, &mut fresh, || pack_views(g, filter, bias))?;
            dw_f32_microkernel(g, input.data::<f32>()?, packed, out.data_mut::<f32>()?, *act, threads)
        }
        Kind::F32 { act } => {
            let (input, filter) = (input.data::<f32>()?, filter.data::<f32>()?);
            let bias_c = opt_data_cow::<f32>(bias)?;
            dw_f32_optimized(g, input, filter, bias_c.as_deref(), out.data_mut::<f32>()?, *act, threads)
        }
        Kind::Hybrid { channel_scales, act } => {
            let input = input.data::<f32>()?;
            let bias_c = opt_data_cow::<f32>(bias)?;
            let bias_s = bias_c.as_deref();
            let out = out.data_mut::<f32>()?;
            let batch_len = g.in_h * g.in_w * g.in_c;
            let owned;
            let q = match scratch {
                Some(bufs) => quantize_hybrid_input_into(input, batch_len, true, 1.0, bufs, threads)?,
                None => {
                    owned = quantize_hybrid_input(input, batch_len, true, 1.0);
                    owned.view()
                }
            };
            let mut fresh = None;
            let fw = wide.get(filter, None, &mut fresh, || widen_filter(kind, filter))?;
            dw_hybrid_wide(g, &q, fw, channel_scales, bias_s, *act, out, threads)
        }
        Kind::Quant8(p) => {
            let bias_c = opt_data_cow::<i32>(bias)?;
            let bias_s = bias_c.as_deref();
            let mut fresh = None;
            let fw = wide.get(filter, None, &mut fresh, || widen_filter(kind, filter))?;
            match input.dtype {
                TfLiteType::kTfLiteUInt8 => {
                    dw_q8_wide(g, input.data::<u8>()?, fw, bias_s, p, out.data_mut::<u8>()?, threads)
                }
                _ => dw_q8_wide(g, input.data::<i8>()?, fw, bias_s, p, out.data_mut::<i8>()?, threads),
            }
        }
        Kind::Quant16 { mults, act } => {
            let (input, filter) = (input.data::<i16>()?, filter.data::<i8>()?);
            let bias_c = opt_data_cow::<i64>(bias)?;
            dw_i16_reference(g, input, filter, bias_c.as_deref(), mults, *act, out.data_mut::<i16>()?)
        }
    }
}

/// 8-bit depthwise convolution by `variant` (the reference loop, or the optimized one on
/// the filter widened for this call).
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
fn q8<T: QuantInt>(
    g: &ConvGeom,
    input: &[T],
    filter: &[T],
    bias: Option<&[i32]>,
    p: &Quant8Params,
    out: &mut [T],
    threads: usize,
    variant: Variant,
) -> Result<()> {
    match variant {
        Variant::Reference => dw_q8_reference(g, input, filter, bias, p, out),
        Variant::Optimized => {
            let fw = widen(filter, p.filter_offset);
            dw_q8_optimized(g, input, &fw, bias, p, out, threads)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::builtin_op_data::TfLitePadding;

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

    #[allow(clippy::too_many_arguments)]
    fn geom(
        b: usize,
        h: usize,
        w: usize,
        c: usize,
        m: usize,
        fh: usize,
        fw: usize,
        s: usize,
        d: usize,
        pad: TfLitePadding,
    ) -> ConvGeom {
        crate::kernels::ops::conv_common::test_conv_geom(b, h, w, c, c * m, fh, fw, c * m, s, d, pad)
    }

    #[test]
    fn tflite_simple_float() {
        // depthwise_conv_test.cc SimpleTest: input [1,3,2,2], filter [1,2,2,4], multiplier 2.
        let input = [1.0f32, 2.0, 7.0, 8.0, 3.0, 4.0, 9.0, 10.0, 5.0, 6.0, 11.0, 12.0];
        let filter = [1.0f32, 2.0, 3.0, 4.0, -9.0, 10.0, -11.0, 12.0, 5.0, 6.0, 7.0, 8.0, 13.0, -14.0, 15.0, -16.0];
        let bias = [1.0f32, 2.0, 3.0, 4.0];
        let g = geom(1, 3, 2, 2, 2, 2, 2, 1, 1, TfLitePadding::kTfLitePaddingValid);
        let mut out = [0.0f32; 8];
        dw_f32_reference(&g, &input, &filter, Some(&bias), &mut out, (f32::MIN, f32::MAX)).unwrap();
        assert_eq!(out, [71.0, -34.0, 99.0, -20.0, 91.0, -26.0, 127.0, -4.0]);
        let mut out2 = [0.0f32; 8];
        dw_f32_optimized(&g, &input, &filter, Some(&bias), &mut out2, (f32::MIN, f32::MAX), 2).unwrap();
        assert_eq!(out, out2);
    }

    fn shapes() -> Vec<ConvGeom> {
        use TfLitePadding::*;
        vec![
            geom(1, 7, 9, 8, 1, 3, 3, 1, 1, kTfLitePaddingSame),
            geom(2, 8, 8, 5, 2, 3, 3, 2, 1, kTfLitePaddingSame),
            geom(1, 9, 9, 6, 1, 3, 3, 1, 2, kTfLitePaddingValid),
            geom(1, 6, 11, 3, 3, 5, 3, 2, 2, kTfLitePaddingSame),
        ]
    }

    #[test]
    fn optimized_matches_reference() {
        let mut r = Lcg(3);
        for g in shapes() {
            let n_in = g.input_len().unwrap();
            let n_f = g.f_h * g.f_w * g.out_c;
            let n = g.output_len().unwrap();
            // float
            let input: Vec<f32> = (0..n_in).map(|_| r.f32()).collect();
            let filter: Vec<f32> = (0..n_f).map(|_| r.f32()).collect();
            let bias: Vec<f32> = (0..g.out_c).map(|_| r.f32()).collect();
            let (mut a, mut b) = (vec![0.0f32; n], vec![0.0f32; n]);
            dw_f32_reference(&g, &input, &filter, Some(&bias), &mut a, (-1.0, 1.0)).unwrap();
            dw_f32_optimized(&g, &input, &filter, Some(&bias), &mut b, (-1.0, 1.0), 3).unwrap();
            assert_eq!(a, b, "{g:?}");
            // int8 per channel
            let scales: Vec<f32> = (0..g.out_c).map(|c| 0.002 + 0.0005 * c as f32).collect();
            let mults = per_channel_multipliers("T", 0.05, &scales, 0.02, g.out_c).unwrap();
            let p = Quant8Params {
                input_offset: 5,
                filter_offset: 0,
                output_offset: -7,
                mults,
                act_min: -128,
                act_max: 127,
            };
            let qi: Vec<i8> = (0..n_in).map(|_| r.int(-128, 127) as i8).collect();
            let qf: Vec<i8> = (0..n_f).map(|_| r.int(-127, 127) as i8).collect();
            let qb: Vec<i32> = (0..g.out_c).map(|_| r.int(-2000, 2000)).collect();
            let (mut a, mut b) = (vec![0i8; n], vec![0i8; n]);
            dw_q8_reference(&g, &qi, &qf, Some(&qb), &p, &mut a).unwrap();
            q8(&g, &qi, &qf, Some(&qb), &p, &mut b, 2, Variant::Optimized).unwrap();
            assert_eq!(a, b);
            // uint8 with zero points
            let p = Quant8Params {
                input_offset: -128,
                filter_offset: -120,
                output_offset: 130,
                mults: vec![p.mults[0]; g.out_c],
                act_min: 0,
                act_max: 255,
            };
            let ui: Vec<u8> = (0..n_in).map(|_| r.int(0, 255) as u8).collect();
            let uf: Vec<u8> = (0..n_f).map(|_| r.int(0, 255) as u8).collect();
            let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
            dw_q8_reference(&g, &ui, &uf, Some(&qb), &p, &mut a).unwrap();
            q8(&g, &ui, &uf, Some(&qb), &p, &mut b, 1, Variant::Optimized).unwrap();
            assert_eq!(a, b);
            // hybrid
            let q = quantize_hybrid_input(&input, g.in_h * g.in_w * g.in_c, true, 1.0);
            let q = q.view();
            let (mut a, mut b) = (vec![0.0f32; n], vec![0.0f32; n]);
            dw_hybrid_reference(&g, &q, &qf, &scales, Some(&bias), (f32::MIN, f32::MAX), &mut a).unwrap();
            dw_hybrid_optimized(&g, &q, &qf, &scales, Some(&bias), (f32::MIN, f32::MAX), &mut b, 2).unwrap();
            assert_eq!(a, b);
        }
    }

    /// The microkernel path against the reference loop, within `1e-5` of each output's
    /// magnitude (the reference run on absolute values, unclamped).
    #[test]
    fn microkernel_matches_reference() {
        use TfLitePadding::*;
        let mut r = Lcg(9);
        let mut cases = 0;
        for c in [1usize, 3, 7, 8, 9, 15, 16, 17, 24, 33, 144] {
            for (fh, fw) in [(3, 3), (5, 5), (3, 5), (1, 1), (7, 7)] {
                for (s, d, pad) in [
                    (1, 1, kTfLitePaddingSame),
                    (2, 1, kTfLitePaddingValid),
                    (2, 2, kTfLitePaddingSame),
                    (1, 2, kTfLitePaddingValid),
                ] {
                    let b = 1 + (r.next() % 2) as usize;
                    let (h, w) = (7 + (r.next() % 6) as usize, 7 + (r.next() % 7) as usize);
                    if compute_padding_height_width(s, s, d, d, h, w, fh, fw, pad).is_err() {
                        continue;
                    }
                    let g = geom(b, h, w, c, 1, fh, fw, s, d, pad);
                    if g.out_h == 0 || g.out_w == 0 {
                        continue;
                    }
                    let act = [(f32::MIN, f32::MAX), (0.0, 6.0), (-0.25, 0.25)][(r.next() % 3) as usize];
                    let input: Vec<f32> = (0..g.input_len().unwrap()).map(|_| r.f32()).collect();
                    let filter: Vec<f32> = (0..fh * fw * c).map(|_| r.f32()).collect();
                    let bias: Vec<f32> = (0..c).map(|_| r.f32()).collect();
                    let n = g.output_len().unwrap();
                    let (mut want, mut got, mut mag) = (vec![0.0f32; n], vec![0.0f32; n], vec![0.0f32; n]);
                    dw_f32_reference(&g, &input, &filter, Some(&bias), &mut want, act).unwrap();
                    let abs = |v: &[f32]| v.iter().map(|x| x.abs()).collect::<Vec<f32>>();
                    dw_f32_reference(
                        &g,
                        &abs(&input),
                        &abs(&filter),
                        Some(&abs(&bias)),
                        &mut mag,
                        (f32::MIN, f32::MAX),
                    )
                    .unwrap();
                    let packed = pack_f32(&g, &filter, Some(&bias)).unwrap();
                    dw_f32_microkernel(&g, &input, &packed, &mut got, act, 1 + (r.next() % 3) as usize).unwrap();
                    for i in 0..n {
                        let tol = 1e-5 * mag[i].max(1e-3);
                        assert!((got[i] - want[i]).abs() <= tol, "{g:?} output {i}: {} vs {}", got[i], want[i]);
                    }
                    cases += 1;
                }
            }
        }
        assert!(cases > 150, "{cases} cases");
    }

    /// The int8 microkernel path against TFLite's reference loop, exactly: channel tails,
    /// windows, strides, dilations, SAME / VALID, per-channel and per-tensor scales, input
    /// zero points at both ends of the int8 range, extreme inputs and weights.
    #[test]
    fn int8_microkernel_matches_reference() {
        use TfLitePadding::*;
        if table().qs8_dwconv.is_none() {
            eprintln!("skipping: the {} table keeps the widened int8 loop", table().name());
            return;
        }
        let mut r = Lcg(19);
        let mut cases = 0;
        for c in [1usize, 3, 8, 15, 16, 17, 31, 32, 40, 96, 144] {
            for (fh, fw) in [(3, 3), (5, 5), (1, 1), (3, 5), (7, 7)] {
                for (s, d, pad) in [
                    (1, 1, kTfLitePaddingSame),
                    (2, 1, kTfLitePaddingSame),
                    (2, 1, kTfLitePaddingValid),
                    (1, 2, kTfLitePaddingSame),
                    (2, 2, kTfLitePaddingValid),
                ] {
                    let b = 1 + (r.next() % 2) as usize;
                    let (h, w) = (3 + (r.next() % 10) as usize, 3 + (r.next() % 12) as usize);
                    if compute_padding_height_width(s, s, d, d, h, w, fh, fw, pad).is_err() {
                        continue;
                    }
                    let g = geom(b, h, w, c, 1, fh, fw, s, d, pad);
                    if g.out_h == 0 || g.out_w == 0 {
                        continue;
                    }
                    let extreme = cases % 4 == 0;
                    let per_tensor = cases % 3 == 0;
                    let scales: Vec<f32> =
                        (0..c).map(|ch| if per_tensor { 0.004 } else { 0.001 + 0.0007 * (ch % 13) as f32 }).collect();
                    let out_scale = if extreme { 2.0 } else { 0.05 };
                    let mults = per_channel_multipliers("T", 0.05, &scales, out_scale, c).unwrap();
                    let zp = if extreme { [-128, 127][cases % 2] } else { r.int(-128, 127) };
                    let (act_min, act_max) = [(-128, 127), (-20, 127), (-128, 60)][cases % 3];
                    let p = Quant8Params {
                        input_offset: -zp,
                        filter_offset: 0,
                        output_offset: r.int(-30, 30),
                        mults,
                        act_min,
                        act_max,
                    };
                    let val = |r: &mut Lcg, lo: i32| {
                        if extreme { [lo, 127][(r.next() % 2) as usize] } else { r.int(lo, 127) }
                    };
                    let qi: Vec<i8> = (0..g.input_len().unwrap()).map(|_| val(&mut r, -128) as i8).collect();
                    let qf: Vec<i8> = (0..fh * fw * c).map(|_| val(&mut r, -127) as i8).collect();
                    let qb: Option<Vec<i32>> = (cases % 5 != 0).then(|| (0..c).map(|_| r.int(-5000, 5000)).collect());
                    let n = g.output_len().unwrap();
                    let (mut want, mut got) = (vec![0i8; n], vec![1i8; n]);
                    dw_q8_reference(&g, &qi, &qf, qb.as_deref(), &p, &mut want).unwrap();
                    let packed = pack_q8(&g, &qf, qb.as_deref(), &p).unwrap();
                    dw_q8_microkernel(&g, &qi, &packed, &mut got, 1 + (r.next() % 3) as usize).unwrap();
                    assert_eq!(got, want, "{g:?} zp {zp}");
                    cases += 1;
                }
            }
        }
        assert!(cases > 200, "{cases} cases");
    }

    #[test]
    fn int8_microkernel_rejects_bad_arguments() {
        let g = geom(1, 5, 5, 4, 1, 3, 3, 1, 1, TfLitePadding::kTfLitePaddingSame);
        let mults = per_channel_multipliers("T", 0.5, &[0.5; 4], 0.25, 4).unwrap();
        let p =
            Quant8Params { input_offset: 3, filter_offset: 0, output_offset: 0, mults, act_min: -128, act_max: 127 };
        let filter = vec![1i8; 36];
        if table().qs8_dwconv.is_none() {
            assert!(pack_q8(&g, &filter, None, &p).is_err());
            return;
        }
        let packed = pack_q8(&g, &filter, None, &p).unwrap();
        let (input, mut out) = (vec![-3i8; 100], vec![0i8; 100]);
        assert!(pack_q8(&g, &filter[1..], None, &p).is_err());
        assert!(pack_q8(&g, &filter, Some(&[0; 3]), &p).is_err());
        assert!(pack_q8(&g, &filter, None, &Quant8Params { filter_offset: 1, ..p.clone() }).is_err());
        assert!(pack_q8(&g, &filter, None, &Quant8Params { input_offset: -128, ..p.clone() }).is_err());
        assert!(dw_q8_microkernel(&g, &input[1..], &packed, &mut out, 1).is_err());
        assert!(dw_q8_microkernel(&g, &input, &packed, &mut out[1..], 1).is_err());
        let g2 = geom(1, 5, 5, 2, 2, 3, 3, 1, 1, TfLitePadding::kTfLitePaddingSame);
        assert!(pack_q8(&g2, &filter, None, &p).is_err());
        assert!(dw_q8_microkernel(&g2, &input, &packed, &mut out, 1).is_err());
        // Inputs equal to the zero point: every output is the bias (0) requantized to 0.
        dw_q8_microkernel(&g, &input, &packed, &mut out, 2).unwrap();
        assert!(out.iter().all(|&v| v == 0));
    }

    #[test]
    fn microkernel_rejects_bad_arguments() {
        let g = geom(1, 5, 5, 4, 1, 3, 3, 1, 1, TfLitePadding::kTfLitePaddingSame);
        let filter = vec![0.5f32; 36];
        let packed = pack_f32(&g, &filter, None).unwrap();
        let (input, mut out) = (vec![1.0f32; 100], vec![0.0f32; 100]);
        assert!(pack_f32(&g, &filter[1..], None).is_err());
        assert!(pack_f32(&g, &filter, Some(&[0.0; 3])).is_err());
        assert!(dw_f32_microkernel(&g, &input[1..], &packed, &mut out, (0.0, 6.0), 1).is_err());
        assert!(dw_f32_microkernel(&g, &input, &packed, &mut out[1..], (0.0, 6.0), 1).is_err());
        assert!(dw_f32_microkernel(&g, &input, &packed[1..], &mut out, (0.0, 6.0), 1).is_err());
        let g2 = geom(1, 5, 5, 2, 2, 3, 3, 1, 1, TfLitePadding::kTfLitePaddingSame);
        assert!(pack_f32(&g2, &filter, None).is_err());
        assert!(dw_f32_microkernel(&g, &input, &packed, &mut out, (0.0, 6.0), 2).is_ok());
        // Centre pixel: 9 taps of 0.5; corner: 4 taps.
        assert_eq!(out[(2 * 5 + 2) * 4], 4.5);
        assert_eq!(out[0], 2.0);
    }

    #[test]
    fn int16_reference() {
        let g = geom(1, 1, 2, 1, 2, 1, 2, 1, 1, TfLitePadding::kTfLitePaddingValid);
        let m = per_channel_multipliers("T", 1.0, &[1.0, 0.5], 1.0, 2).unwrap();
        let mut out = [0i16; 2];
        dw_i16_reference(&g, &[100, -20], &[1, 2, 3, 4], Some(&[7, 8]), &m, (-32768, 32767), &mut out).unwrap();
        assert_eq!(out, [100 - 60 + 7, ((200 - 80 + 8) as f64 * 0.5).round() as i16]);
    }

    #[test]
    fn registration_glue() {
        use crate::abi::types::TfLiteStatus;
        use crate::kernels::test_util::{Graph, qp};
        use TfLiteType::*;
        let reg = registration();
        let params = |stride: i32, dil: i32| {
            Some(TfLiteDepthwiseConvParams {
                padding: TfLitePadding::kTfLitePaddingValid,
                stride_width: stride,
                stride_height: stride,
                depth_multiplier: 2,
                activation: TfLiteFusedActivation::kTfLiteActNone,
                dilation_width_factor: dil,
                dilation_height_factor: dil,
            })
        };
        let mut g = Graph::new();
        let x = g.tensor(
            kTfLiteFloat32,
            &[1, 3, 2, 2],
            &[1.0f32, 2.0, 7.0, 8.0, 3.0, 4.0, 9.0, 10.0, 5.0, 6.0, 11.0, 12.0],
            None,
            false,
        );
        let w = g.tensor(
            kTfLiteFloat32,
            &[1, 2, 2, 4],
            &[1.0f32, 2.0, 3.0, 4.0, -9.0, 10.0, -11.0, 12.0, 5.0, 6.0, 7.0, 8.0, 13.0, -14.0, 15.0, -16.0],
            None,
            true,
        );
        let b = g.tensor(kTfLiteFloat32, &[4], &[1.0f32, 2.0, 3.0, 4.0], None, true);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[x, w, b], &[o], params(1, 1)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![1, 2, 1, 4]);
        assert_eq!(g.data::<f32>(o), vec![71.0, -34.0, 99.0, -20.0, 91.0, -26.0, 127.0, -4.0]);
        // Depth multiplier 1 (the microkernel path): 2 channels, 2x2 filter, VALID.
        let mut p1 = params(1, 1);
        if let Some(p) = p1.as_mut() {
            p.depth_multiplier = 1;
            p.activation = TfLiteFusedActivation::kTfLiteActRelu;
        }
        let w1 = g.tensor(kTfLiteFloat32, &[1, 2, 2, 2], &[1.0f32, -1.0, 2.0, -2.0, 3.0, -3.0, 4.0, 4.0], None, true);
        let b1 = g.tensor(kTfLiteFloat32, &[2], &[0.5f32, -0.5], None, true);
        let o1 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[x, w1, b1], &[o1], p1), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o1), vec![1, 2, 1, 2]);
        // Row 0: ch0 = 1*1 + 7*2 + 3*3 + 9*4 + 0.5 = 60.5; ch1 = -2 - 16 - 12 + 40 - 0.5 = 9.5.
        // Row 1: ch0 = 3 + 18 + 15 + 44 + 0.5 = 80.5; ch1 = -4 - 20 - 18 + 48 - 0.5 = 5.5.
        assert_eq!(g.data::<f32>(o1), vec![60.5, 9.5, 80.5, 5.5]);
        // Errors: stride 0, dilation 0, bias of the wrong size, filter batch != 1.
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[x, w, b], &[o], params(0, 1)), TfLiteStatus::kTfLiteError);
        assert_eq!(g.run(&reg, &[x, w, b], &[o], params(1, 0)), TfLiteStatus::kTfLiteError);
        let b3 = g.tensor(kTfLiteFloat32, &[3], &[0.0f32; 3], None, true);
        assert_eq!(g.run(&reg, &[x, w, b3], &[o], params(1, 1)), TfLiteStatus::kTfLiteError);
        let w2 = g.tensor(kTfLiteFloat32, &[2, 1, 1, 4], &[0.0f32; 8], None, true);
        assert_eq!(g.run(&reg, &[x, w2, b], &[o], params(1, 1)), TfLiteStatus::kTfLiteError);
        let w3 = g.tensor(kTfLiteFloat32, &[1, 1, 1, 3], &[0.0f32; 3], None, true);
        assert_eq!(g.run(&reg, &[x, w3], &[o], params(1, 1)), TfLiteStatus::kTfLiteError);
        // int8, per-tensor scales broadcast: 0.5 * 0.5 / 0.25 = 1.
        let xi = g.tensor(kTfLiteInt8, &[1, 1, 1, 2], &[3i8, -4], Some(qp(0.5, 1)), false);
        let wi = g.tensor(kTfLiteInt8, &[1, 1, 1, 2], &[2i8, -3], Some(qp(0.5, 0)), true);
        let oi = g.output(kTfLiteInt8, Some(qp(0.25, 5)));
        assert_eq!(g.run(&reg, &[xi, wi], &[oi], params(1, 1)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i8>(oi), vec![2 * 2 + 5, -3 * -5 + 5]);
    }
}
