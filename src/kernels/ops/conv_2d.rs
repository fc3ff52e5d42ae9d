//! CONV_2D (TFLite `kernels/conv.cc`; reference kernels `reference/conv.h`,
//! `reference/integer_ops/conv.h`, and the hybrid `HybridConv` / `HybridConvPerChannel`).
//!
//! Types: float32; uint8 (per-tensor, filter zero point allowed); int8 with per-channel
//! (or per-tensor, broadcast) int8 filters and int32 bias; int16 activations with int8
//! filters and int64 (or int32) bias ("16x8"); hybrid float32 activations with int8 (or
//! uint8, read as int8) filters: per-channel filters quantize each batch of the input
//! asymmetrically, per-tensor filters symmetrically, as TFLite does. Padding SAME / VALID
//! (`ComputePaddingHeightWidth`), strides, dilations, grouped convolution (filter input
//! depth dividing the input depth) and an optional bias; fused activations clamp.
//!
//! Two paths. [`Variant::Reference`] is TFLite's direct loop. The optimized path for
//! ungrouped float32 convolutions is `conv_f32_gemm` (weights packed once per node for the
//! GEMM microkernels, indirect convolution, results within float rounding of the
//! reference); for integer and hybrid convolutions it repacks the filter to
//! `[kh][kw][ic][oc]` (cached per node for constant filters) and accumulates tiles of 4
//! output pixels x 8 channels in the same summation order as the reference (integer
//! results exact), split over `recommended_num_threads` by output rows. Integer inputs and
//! filters are widened to `i16` with their zero points applied. Grouped and 16x8
//! convolutions always use the reference loop.

use super::conv_common::{
    ConvGeom, PackSlot, QuantMul, Requant, affine, check_len, checked_product, compute_padding_height_width, dim,
    legacy_quant_mul, opt_data_cow, parallel_rows, per_channel_multipliers, positive_param, recommended_threads,
    threads_for,
};
use super::conv_qs8_gemm;
use crate::abi::builtin_op_data::{TfLiteConvParams, TfLiteFusedActivation};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::activation::{activation_range_f32, activation_range_quantized, clamp_min_max};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{QuantInt, multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_i64};
use crate::microkernels::f32_gemm::PackedGemm;
use crate::microkernels::packed::Packed;
use crate::microkernels::qs8_gemm::{PackedQs8Gemm, Qs8GemmKernels};
use crate::microkernels::table;

const OP: &str = "CONV_2D";

/// The CONV_2D registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Conv2d>(TfLiteBuiltinOperator::kTfLiteBuiltinConv2d)
}

/// Which implementation computes a convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// TFLite's reference loop, element by element.
    Reference,
    /// Repacked filter, tiled accumulation, threads.
    Optimized,
}

// ---------------------------------------------------------------------------------------
// Reference maths on slices
// ---------------------------------------------------------------------------------------

fn groups(g: &ConvGeom) -> Result<(usize, usize)> {
    if g.f_c == 0 || !g.in_c.is_multiple_of(g.f_c) {
        return Err(Error::new(format!("filter depth {} does not divide input depth {}", g.f_c, g.in_c)));
    }
    let groups = g.in_c / g.f_c;
    if groups == 0 || !g.out_c.is_multiple_of(groups) {
        return Err(Error::new(format!("{} output channels are not a multiple of {groups} groups", g.out_c)));
    }
    Ok((groups, g.out_c / groups))
}

fn check_sizes(g: &ConvGeom, input: usize, filter: usize, bias: Option<usize>, out: usize) -> Result<()> {
    check_len("input", input, g.input_len())?;
    check_len("filter", filter, g.out_c.checked_mul(g.f_h).and_then(|v| v.checked_mul(g.f_w)?.checked_mul(g.f_c)))?;
    check_len("output", out, g.output_len())?;
    if let Some(b) = bias {
        check_len("bias", b, Some(g.out_c))?;
    }
    groups(g).map(|_| ())
}

/// Calls `acc_fn(acc, input_index, filter_index)` over one output element's window in
/// TFLite's order (filter row, filter column, input channel), skipping taps outside the
/// image; returns the accumulator.
#[inline]
#[allow(clippy::too_many_arguments)]
fn window<A>(
    g: &ConvGeom,
    fpg: usize,
    b: usize,
    oy: usize,
    ox: usize,
    oc: usize,
    init: A,
    mut f: impl FnMut(A, usize, usize) -> A,
) -> A {
    let group = oc / fpg;
    let mut acc = init;
    for ky in 0..g.f_h {
        let Some(iy) = g.in_y(oy, ky) else { continue };
        for kx in 0..g.f_w {
            let Some(ix) = g.in_x(ox, kx) else { continue };
            let ibase = ((b * g.in_h + iy) * g.in_w + ix) * g.in_c + group * g.f_c;
            let fbase = ((oc * g.f_h + ky) * g.f_w + kx) * g.f_c;
            for ic in 0..g.f_c {
                acc = f(acc, ibase + ic, fbase + ic);
            }
        }
    }
    acc
}

/// Visits every output element in NHWC order.
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

/// Float convolution, TFLite's `reference_ops::Conv`: `clamp(sum + bias)`.
pub fn conv_f32_reference(
    g: &ConvGeom,
    input: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    out: &mut [f32],
    act: (f32, f32),
) -> Result<()> {
    check_sizes(g, input.len(), filter.len(), bias.map(|b| b.len()), out.len())?;
    let (_, fpg) = groups(g)?;
    for_each_output(g, |o, b, oy, ox, oc| {
        let total = window(g, fpg, b, oy, ox, oc, 0.0f32, |acc, i, f| acc + input[i] * filter[f]);
        let bv = bias.map_or(0.0, |bb| bb[oc]);
        out[o] = clamp_min_max(total + bv, act.0, act.1);
    });
    Ok(())
}

/// Requantization of an 8-bit convolution (uint8 per-tensor or int8 per-channel).
#[derive(Clone, Debug, PartialEq)]
pub struct Quant8Params {
    /// `-input_zero_point`.
    pub input_offset: i32,
    /// `-filter_zero_point` (0 for int8).
    pub filter_offset: i32,
    /// `output_zero_point`.
    pub output_offset: i32,
    /// One multiplier per output channel (uint8 repeats its single one).
    pub mults: Vec<QuantMul>,
    pub act_min: i32,
    pub act_max: i32,
}

impl Quant8Params {
    /// The parameters of an 8-bit conv-like op, with the zero points checked to be 8-bit
    /// offsets (the accumulation's overflow bounds assume it).
    pub fn checked(
        op: &str,
        input_zero_point: i32,
        filter_offset: i32,
        output_zero_point: i32,
        mults: Vec<QuantMul>,
        (act_min, act_max): (i32, i32),
    ) -> Result<Self> {
        let offsets_ok = |v: i32| (-255..=255).contains(&v);
        if !offsets_ok(input_zero_point) || !offsets_ok(filter_offset) {
            return Err(Error::new(format!("{op}: zero points out of the 8-bit range")));
        }
        Ok(Quant8Params {
            input_offset: -input_zero_point,
            filter_offset,
            output_offset: output_zero_point,
            mults,
            act_min,
            act_max,
        })
    }

    #[inline]
    fn finish(&self, acc: i32, bias: Option<&[i32]>, oc: usize) -> i32 {
        let acc = acc.wrapping_add(bias.map_or(0, |b| b[oc]));
        let m = self.mults[oc];
        let v = multiply_by_quantized_multiplier(acc, m.multiplier, m.shift).wrapping_add(self.output_offset);
        v.clamp(self.act_min, self.act_max)
    }
}

/// 8-bit convolution, TFLite's uint8 `reference_ops::Conv` and int8
/// `reference_integer_ops::ConvPerChannel`: `acc += (f + filter_offset) * (x + input_offset)`
/// in wrapping `i32`, plus bias, `MultiplyByQuantizedMultiplier` per channel, plus the
/// output zero point, clamped.
pub fn conv_q8_reference<T: QuantInt, W: QuantInt>(
    g: &ConvGeom,
    input: &[T],
    filter: &[W],
    bias: Option<&[i32]>,
    p: &Quant8Params,
    out: &mut [T],
) -> Result<()> {
    check_sizes(g, input.len(), filter.len(), bias.map(|b| b.len()), out.len())?;
    check_len("multipliers", p.mults.len(), Some(g.out_c))?;
    let (_, fpg) = groups(g)?;
    for_each_output(g, |o, b, oy, ox, oc| {
        let acc = window(g, fpg, b, oy, ox, oc, 0i32, |acc, i, f| {
            let x = input[i].to_i32().wrapping_add(p.input_offset);
            let w = filter[f].to_i32().wrapping_add(p.filter_offset);
            acc.wrapping_add(w.wrapping_mul(x))
        });
        out[o] = T::from_i32(p.finish(acc, bias, oc));
    });
    Ok(())
}

/// The bias of a 16x8 convolution, which also selects the accumulator width.
#[derive(Clone, Copy, Debug)]
pub enum Bias16<'a> {
    /// int64 accumulator (`quantized_bias_type` int64, or unset), optional bias.
    I64(Option<&'a [i64]>),
    /// int32 accumulator (`quantized_bias_type` int32), optional bias.
    I32(Option<&'a [i32]>),
}

/// 16x8 convolution, TFLite's int16 `reference_integer_ops::ConvPerChannel`: the
/// accumulator is `i64` (64-bit `MultiplyByQuantizedMultiplier`) or, with an int32 bias,
/// wrapping `i32` (32-bit one); zero points are 0.
pub fn conv_i16_reference(
    g: &ConvGeom,
    input: &[i16],
    filter: &[i8],
    bias: Bias16<'_>,
    mults: &[QuantMul],
    act: (i32, i32),
    out: &mut [i16],
) -> Result<()> {
    let blen = match bias {
        Bias16::I64(b) => b.map(|b| b.len()),
        Bias16::I32(b) => b.map(|b| b.len()),
    };
    check_sizes(g, input.len(), filter.len(), blen, out.len())?;
    check_len("multipliers", mults.len(), Some(g.out_c))?;
    let (_, fpg) = groups(g)?;
    for_each_output(g, |o, b, oy, ox, oc| {
        let m = mults[oc];
        let scaled = match bias {
            Bias16::I64(bias) => {
                let acc = window(g, fpg, b, oy, ox, oc, 0i64, |acc, i, f| {
                    acc.wrapping_add(input[i] as i64 * filter[f] as i64)
                });
                let acc = acc.wrapping_add(bias.map_or(0, |bb| bb[oc]));
                multiply_by_quantized_multiplier_i64(acc, m.multiplier, m.shift)
            }
            Bias16::I32(bias) => {
                let acc = window(g, fpg, b, oy, ox, oc, 0i32, |acc, i, f| {
                    acc.wrapping_add(input[i] as i32 * filter[f] as i32)
                });
                let acc = acc.wrapping_add(bias.map_or(0, |bb| bb[oc]));
                multiply_by_quantized_multiplier(acc, m.multiplier, m.shift)
            }
        };
        out[o] = scaled.clamp(act.0, act.1) as i16;
    });
    Ok(())
}

/// The per-batch quantization of a hybrid convolution's input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HybridInput<'a> {
    /// The input quantized to int8, same layout as the float input.
    pub data: &'a [i8],
    /// One scaling factor per batch (per-tensor path: already times the filter scale).
    pub scales: &'a [f32],
    /// One zero point per batch (all 0 for the symmetric per-tensor path).
    pub offsets: &'a [i32],
}

/// Where a hybrid kernel quantizes its input: in Invoke, the node's temporaries (see
/// [`hybrid_temporary_bytes`]); in tests, owned vectors.
pub struct HybridBuffers<'a> {
    pub data: &'a mut [i8],
    pub scales: &'a mut [f32],
    pub offsets: &'a mut [i32],
}

/// The byte sizes of the three node temporaries a hybrid kernel requests in Prepare for
/// an input of `input_len` values in `batches` batches: the int8 input, the per-batch
/// scales and the per-batch zero points (TFLite's `input_quantized`, `scaling_factors`
/// and `input_offsets` temporaries).
pub fn hybrid_temporary_bytes(input_len: usize, batches: usize) -> Result<[usize; 3]> {
    let b4 = batches.checked_mul(4).ok_or_else(|| Error::new("hybrid scratch size overflow"))?;
    Ok([input_len, b4, b4])
}

/// The node's hybrid temporaries `first..first + 3` (as requested with
/// [`hybrid_temporary_bytes`]), cut to `input_len` values and `batches` batches.
pub fn hybrid_temporaries<'a>(
    ctx: &OpCtx<'a>,
    first: usize,
    input_len: usize,
    batches: usize,
) -> Result<HybridBuffers<'a>> {
    let data = ctx.temporary_mut::<i8>(first)?;
    let scales = ctx.temporary_mut::<f32>(first + 1)?;
    let offsets = ctx.temporary_mut::<i32>(first + 2)?;
    if data.len() < input_len || scales.len() < batches || offsets.len() < batches {
        return Err(Error::new("hybrid temporaries are smaller than the input needs"));
    }
    Ok(HybridBuffers { data: &mut data[..input_len], scales: &mut scales[..batches], offsets: &mut offsets[..batches] })
}

/// Owned hybrid buffers (tests and reference paths).
pub struct OwnedHybridInput {
    pub data: Vec<i8>,
    pub scales: Vec<f32>,
    pub offsets: Vec<i32>,
}

impl OwnedHybridInput {
    pub fn view(&self) -> HybridInput<'_> {
        HybridInput { data: &self.data, scales: &self.scales, offsets: &self.offsets }
    }
}

/// [`quantize_hybrid_input_into`] into fresh vectors.
pub fn quantize_hybrid_input(
    input: &[f32],
    batch_len: usize,
    per_channel: bool,
    filter_scale: f32,
) -> OwnedHybridInput {
    let batches = input.len().checked_div(batch_len).unwrap_or(0);
    let mut o =
        OwnedHybridInput { data: vec![0i8; input.len()], scales: vec![1.0f32; batches], offsets: vec![0i32; batches] };
    let bufs = HybridBuffers { data: &mut o.data, scales: &mut o.scales, offsets: &mut o.offsets };
    // The buffers have exactly the sizes the function checks.
    let _ = quantize_hybrid_input_into(input, batch_len, per_channel, filter_scale, bufs, 1);
    o
}

/// Quantizes each batch of `input` (`batch_len` values each) into `bufs` (every element
/// written: values past the last whole batch become 0):
/// asymmetrically for the per-channel path, symmetrically (scale times `filter_scale`)
/// for the per-tensor one. Each batch's range scan and quantization split over up to
/// `max_threads` threads.
pub fn quantize_hybrid_input_into<'a>(
    input: &[f32],
    batch_len: usize,
    per_channel: bool,
    filter_scale: f32,
    bufs: HybridBuffers<'a>,
    max_threads: usize,
) -> Result<HybridInput<'a>> {
    let batches = input.len().checked_div(batch_len).unwrap_or(0);
    let HybridBuffers { data, scales, offsets } = bufs;
    check_len("quantized input", data.len(), Some(input.len()))?;
    check_len("batch scales", scales.len(), Some(batches))?;
    check_len("batch offsets", offsets.len(), Some(batches))?;
    // Only the values past the last whole batch are not quantized below.
    data[batches * batch_len..].fill(0);
    for b in 0..batches {
        let r = b * batch_len..(b + 1) * batch_len;
        if per_channel {
            let (s, z) = super::conv_common::asymmetric_quantize_on(max_threads, &input[r.clone()], &mut data[r]);
            scales[b] = s;
            offsets[b] = z;
        } else {
            scales[b] =
                super::conv_common::symmetric_quantize_on(max_threads, &input[r.clone()], &mut data[r]) * filter_scale;
            offsets[b] = 0;
        }
    }
    Ok(HybridInput { data, scales, offsets })
}

/// Hybrid convolution, TFLite's `reference_ops::HybridConvPerChannel` (per-channel
/// scales, asymmetric input) or `HybridConv` (`channel_scales` of length 1 = 1.0 and the
/// filter scale folded into `q.scales`, symmetric input): the integer window sum of
/// `w * (x - offset[b])`, then `acc * channel_scale * batch_scale + bias`, clamped.
pub fn conv_hybrid_reference(
    g: &ConvGeom,
    q: &HybridInput<'_>,
    filter: &[i8],
    channel_scales: &[f32],
    bias: Option<&[f32]>,
    act: (f32, f32),
    out: &mut [f32],
) -> Result<()> {
    check_sizes(g, q.data.len(), filter.len(), bias.map(|b| b.len()), out.len())?;
    check_len("batch scales", q.scales.len(), Some(g.batches))?;
    check_len("batch offsets", q.offsets.len(), Some(g.batches))?;
    if channel_scales.len() != 1 {
        check_len("channel scales", channel_scales.len(), Some(g.out_c))?;
    }
    let (_, fpg) = groups(g)?;
    for_each_output(g, |o, b, oy, ox, oc| {
        let off = q.offsets[b];
        let acc = window(g, fpg, b, oy, ox, oc, 0i32, |acc, i, f| {
            acc.wrapping_add((filter[f] as i32).wrapping_mul((q.data[i] as i32).wrapping_sub(off)))
        });
        out[o] = hybrid_finish(acc, channel_scales, oc, q.scales[b], bias, act);
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
    let v = if channel_scales.len() == 1 {
        // HybridConv: result (0) += dot * scale; then + bias.
        0.0 + acc as f32 * batch_scale
    } else {
        acc as f32 * channel_scales[oc] * batch_scale
    };
    let v = match bias {
        Some(b) => v + b[oc],
        None => v,
    };
    clamp_min_max(v, act.0, act.1)
}

// ---------------------------------------------------------------------------------------
// Optimized maths
// ---------------------------------------------------------------------------------------

/// Multiply-accumulate of the optimized tiles: `f32` exactly as the reference, or `i16`
/// operands into a wrapping `i32` accumulator.
pub trait ConvElem: Copy + Send + Sync + Default + 'static {
    type Acc: Copy + Send + Sync + Default;
    fn mac(acc: Self::Acc, a: Self, w: Self) -> Self::Acc;
}

impl ConvElem for f32 {
    type Acc = f32;
    #[inline(always)]
    fn mac(acc: f32, a: f32, w: f32) -> f32 {
        acc + a * w
    }
}

impl ConvElem for i16 {
    type Acc = i32;
    #[inline(always)]
    fn mac(acc: i32, a: i16, w: i16) -> i32 {
        acc.wrapping_add(a as i32 * w as i32)
    }
}

/// True when the AVX2 build of the optimized loops can run on this CPU.
#[inline]
pub fn have_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Output channels per packed filter block: 16 with AVX2, else 8.
pub fn block_channels() -> usize {
    if have_avx2() { 16 } else { 8 }
}

/// Repacks an `[oc][kh][kw][ic]` filter (groups = 1) into blocks of `nb` output channels,
/// `[block][kh][kw][ic][nb]` (the last block zero-padded), mapping values through `f`.
pub fn pack_filter<S: Copy, E>(g: &ConvGeom, filter: &[S], nb: usize, f: impl Fn(S) -> E) -> Result<Vec<E>>
where
    E: Copy + Default,
{
    check_len(
        "filter",
        filter.len(),
        g.out_c.checked_mul(g.f_h).and_then(|v| v.checked_mul(g.f_w)?.checked_mul(g.f_c)),
    )?;
    if nb == 0 {
        return Err(Error::new("block size must be positive"));
    }
    let k = g.f_h * g.f_w * g.f_c;
    let blocks = g.out_c.div_ceil(nb);
    let mut packed = vec![E::default(); blocks * k * nb];
    for oc in 0..g.out_c {
        let (blk, j) = (oc / nb, oc % nb);
        for i in 0..k {
            packed[(blk * k + i) * nb + j] = f(filter[oc * k + i]);
        }
    }
    Ok(packed)
}

const TILE_P: usize = 4;

/// What the pixel loops read: `input` holds the convolution's input from element
/// `origin` on (the im2col rows of a few pixels, or the whole input with `origin` 0);
/// `packed` is the packed filter; the output slice starts at flattened pixel `q0`.
#[derive(Clone, Copy)]
struct Src<'x, E> {
    input: &'x [E],
    origin: usize,
    packed: &'x [E],
    q0: usize,
}

/// Accumulates one tap for a full tile: `acc[p][j] += x_p[ic] * w[ic][j]`.
#[inline(always)]
fn tap_full<E: ConvElem, const N: usize>(xs: &[&[E]; TILE_P], wtap: &[E], acc: &mut [[E::Acc; N]; TILE_P]) {
    let k = xs[0].len();
    let xs: [&[E]; TILE_P] = [&xs[0][..k], &xs[1][..k], &xs[2][..k], &xs[3][..k]];
    for (ic, w) in wtap.chunks_exact(N).take(k).enumerate() {
        let w: &[E; N] = w.try_into().expect("chunk of N");
        for p in 0..TILE_P {
            let a = xs[p][ic];
            for j in 0..N {
                acc[p][j] = E::mac(acc[p][j], a, w[j]);
            }
        }
    }
}

/// Accumulates one tap for one pixel.
#[inline(always)]
fn tap_one<E: ConvElem, const N: usize>(x: &[E], wtap: &[E], acc: &mut [E::Acc; N]) {
    for (&a, w) in x.iter().zip(wtap.chunks_exact(N)) {
        let w: &[E; N] = w.try_into().expect("chunk of N");
        for j in 0..N {
            acc[j] = E::mac(acc[j], a, w[j]);
        }
    }
}

/// Output pixels `q0..q0 + out.len() / out_c` (flattened over batch, rows and columns) of a
/// groups-1 convolution with a filter packed in blocks of `N` channels; `finish` turns an
/// accumulator of channel `oc` of batch `b` into the output value. Loops: channel block,
/// then tiles of 4 pixels, then filter taps and input channels (the reference order).
#[inline(always)]
fn conv_pixels<E: ConvElem, O, const N: usize>(
    g: &ConvGeom,
    src: Src<'_, E>,
    out: &mut [O],
    finish: &(impl Fn(&[E::Acc], usize, usize, &mut [O]) + Sync),
) {
    let Src { input, origin, packed, q0 } = src;
    let (in_c, out_c) = (g.in_c, g.out_c);
    let taps = g.f_h * g.f_w;
    let k = taps * in_c;
    let npix = out.len() / out_c;
    let plane = g.out_h * g.out_w;
    for blk in 0..out_c.div_ceil(N) {
        let wblk = &packed[blk * k * N..(blk + 1) * k * N];
        let oc0 = blk * N;
        let n = N.min(out_c - oc0);
        let mut q = 0;
        while q < npix {
            let pc = TILE_P.min(npix - q);
            let mut coords = [(0usize, 0usize, 0usize); TILE_P];
            for (p, c) in coords.iter_mut().enumerate().take(pc) {
                let gq = q0 + q + p;
                let (b, r) = (gq / plane, gq % plane);
                *c = (b, r / g.out_w, r % g.out_w);
            }
            let mut acc = [[E::Acc::default(); N]; TILE_P];
            for ky in 0..g.f_h {
                for kx in 0..g.f_w {
                    let mut xs: [&[E]; TILE_P] = [&[]; TILE_P];
                    let mut valid = [false; TILE_P];
                    for p in 0..pc {
                        let (b, oy, ox) = coords[p];
                        if let (Some(iy), Some(ix)) = (g.in_y(oy, ky), g.in_x(ox, kx)) {
                            let base = ((b * g.in_h + iy) * g.in_w + ix) * in_c - origin;
                            xs[p] = &input[base..base + in_c];
                            valid[p] = true;
                        }
                    }
                    let t = ky * g.f_w + kx;
                    let wtap = &wblk[t * in_c * N..(t + 1) * in_c * N];
                    if pc == TILE_P && valid.iter().all(|&v| v) {
                        tap_full::<E, N>(&xs, wtap, &mut acc);
                    } else {
                        for p in 0..pc {
                            if valid[p] {
                                tap_one::<E, N>(xs[p], wtap, &mut acc[p]);
                            }
                        }
                    }
                }
            }
            for p in 0..pc {
                let o = (q + p) * out_c + oc0;
                finish(&acc[p][..n], coords[p].0, oc0, &mut out[o..o + n]);
            }
            q += pc;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn conv_pixels_avx2<E: ConvElem, O>(
    g: &ConvGeom,
    src: Src<'_, E>,
    out: &mut [O],
    finish: &(impl Fn(&[E::Acc], usize, usize, &mut [O]) + Sync),
) {
    conv_pixels::<E, O, 16>(g, src, out, finish)
}

/// [`conv_pixels`] with the block width of [`block_channels`] (the AVX2 build when the
/// CPU has it).
#[inline(always)]
fn conv_pixels_any<E: ConvElem, O>(
    g: &ConvGeom,
    src: Src<'_, E>,
    out: &mut [O],
    finish: &(impl Fn(&[E::Acc], usize, usize, &mut [O]) + Sync),
) {
    if block_channels() == 16 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `block_channels` returns 16 only when the CPU has AVX2.
        unsafe {
            conv_pixels_avx2(g, src, out, finish)
        };
    } else {
        conv_pixels::<E, O, 8>(g, src, out, finish);
    }
}

/// Checks the operands of an optimized convolution; `Ok(false)` when there is nothing to
/// compute.
fn check_optimized(g: &ConvGeom, input: usize, packed: usize, packed_want: Option<usize>, out: usize) -> Result<bool> {
    check_len("input", input, g.input_len())?;
    check_len("packed filter", packed, packed_want)?;
    check_len("output", out, g.output_len())?;
    if g.in_c != g.f_c {
        return Err(Error::new("the optimized convolution needs groups = 1"));
    }
    Ok(out > 0 && g.out_c > 0)
}

/// Threads for `out.len()` outputs of `g`, in tiles of [`TILE_P`] pixels.
fn conv_threads(g: &ConvGeom, out: usize, threads: usize) -> usize {
    let pixels = out / g.out_c.max(1);
    let work = out.saturating_mul(g.f_h * g.f_w * g.in_c);
    threads_for(threads, work, pixels.div_ceil(TILE_P))
}

/// Runs [`conv_pixels`] over every output pixel, split across `threads`, with the AVX2
/// build when the CPU has it (the packed filter must use [`block_channels`]).
fn conv_rows<E: ConvElem, O: Send>(
    g: &ConvGeom,
    input: &[E],
    packed: &[E],
    out: &mut [O],
    threads: usize,
    finish: &(impl Fn(&[E::Acc], usize, usize, &mut [O]) + Sync),
) -> Result<()> {
    let nb = block_channels();
    let want = g.out_c.div_ceil(nb).checked_mul(nb * g.f_h * g.f_w * g.in_c);
    if !check_optimized(g, input.len(), packed.len(), want, out.len())? {
        return Ok(());
    }
    let threads = conv_threads(g, out.len(), threads);
    parallel_rows(threads, out, g.out_c * TILE_P, &|first, chunk: &mut [O]| {
        conv_pixels_any(g, Src { input, origin: 0, packed, q0: first * TILE_P }, chunk, finish);
        Ok(())
    })
}

/// Bytes of im2col rows each thread gathers at a time: the rows of a few pixels stay in
/// cache, and no buffer of the whole im2col matrix is needed.
const IM2COL_BYTES: usize = 128 << 10;

/// Output pixels gathered at a time for rows of `row_bytes`: a multiple of [`TILE_P`],
/// between 4 and 256.
fn im2col_pixels(row_bytes: usize) -> usize {
    (IM2COL_BYTES / row_bytes.max(1)).clamp(TILE_P, 256) / TILE_P * TILE_P
}

/// Writes the im2col rows of output pixels `q..q + rows.len() / k` (flattened over
/// batch, rows and columns): each pixel's window, taps in filter order, `cv(x, batch)`
/// of each input value, zeros outside the image.
fn im2col_into<S: Copy, E: Copy + Default>(
    g: &ConvGeom,
    input: &[S],
    q: usize,
    rows: &mut [E],
    cv: &impl Fn(S, usize) -> E,
) {
    let k = g.f_h * g.f_w * g.in_c;
    let plane = g.out_h * g.out_w;
    if g.f_h == 1
        && g.f_w == 1
        && g.stride_h == 1
        && g.stride_w == 1
        && g.pad_h == 0
        && g.pad_w == 0
        && g.in_h == g.out_h
        && g.in_w == g.out_w
    {
        // Pointwise: the rows are the input pixels themselves, contiguous within a batch.
        let mut i = 0;
        while i < rows.len() {
            let gq = q + i / k;
            let b = gq / plane;
            let n = ((b + 1) * plane - gq).min((rows.len() - i) / k) * k;
            for (d, &x) in rows[i..i + n].iter_mut().zip(&input[gq * k..gq * k + n]) {
                *d = cv(x, b);
            }
            i += n;
        }
        return;
    }
    rows.fill(E::default());
    for (i, row) in rows.chunks_exact_mut(k).enumerate() {
        let gq = q + i;
        let (b, r) = (gq / plane, gq % plane);
        let (oy, ox) = (r / g.out_w, r % g.out_w);
        for ky in 0..g.f_h {
            let Some(iy) = g.in_y(oy, ky) else { continue };
            for kx in 0..g.f_w {
                let Some(ix) = g.in_x(ox, kx) else { continue };
                let src = ((b * g.in_h + iy) * g.in_w + ix) * g.in_c;
                let dst = (ky * g.f_w + kx) * g.in_c;
                for (d, &s) in row[dst..dst + g.in_c].iter_mut().zip(&input[src..src + g.in_c]) {
                    *d = cv(s, b);
                }
            }
        }
    }
}

/// The im2col convolution: each thread gathers a few output pixels' windows (converted by
/// `cv`; [`im2col_pixels`]) into a small buffer of its own, then `kernel(pg, rows,
/// origin, q0, out)` computes them as the 1x1 convolution `pg` ([`rows_geom`]), the rows
/// holding that convolution's input from element `origin` on.
#[allow(clippy::too_many_arguments)]
fn conv_rows_im2col<S: Copy + Sync, E: ConvElem, O: Send>(
    g: &ConvGeom,
    input: &[S],
    cv: &(impl Fn(S, usize) -> E + Sync),
    packed_len: usize,
    packed_want: Option<usize>,
    out: &mut [O],
    threads: usize,
    kernel: &(impl Fn(&ConvGeom, &[E], usize, usize, &mut [O]) + Sync),
) -> Result<()> {
    if !check_optimized(g, input.len(), packed_len, packed_want, out.len())? {
        return Ok(());
    }
    let pg = rows_geom(g);
    let (k, out_c) = (pg.in_c, g.out_c);
    let threads = conv_threads(g, out.len(), threads);
    let step = im2col_pixels(k * core::mem::size_of::<E>());
    parallel_rows(threads, out, out_c * TILE_P, &|first, chunk: &mut [O]| {
        let q0 = first * TILE_P;
        let npix = chunk.len() / out_c;
        let mut rows = vec![E::default(); step.min(npix) * k];
        let mut s = 0;
        while s < npix {
            let n = step.min(npix - s);
            let r = &mut rows[..n * k];
            im2col_into(g, input, q0 + s, r, cv);
            kernel(&pg, r, (q0 + s) * k, q0 + s, &mut chunk[s * out_c..(s + n) * out_c]);
            s += n;
        }
        Ok(())
    })
}

/// Packs an integer filter for [`conv_rows_i16`]: with AVX2, blocks of 16 output channels
/// with pairs of input channels interleaved, `[block][kh][kw][ic / 2][16][2]` (an odd input
/// depth padded with a zero channel), for `vpmaddwd`; otherwise [`pack_filter`]'s layout.
pub fn pack_filter_i16<S: Copy>(g: &ConvGeom, filter: &[S], f: impl Fn(S) -> i16) -> Result<Vec<i16>> {
    if !have_avx2() {
        return pack_filter(g, filter, 8, f);
    }
    check_len(
        "filter",
        filter.len(),
        g.out_c.checked_mul(g.f_h).and_then(|v| v.checked_mul(g.f_w)?.checked_mul(g.f_c)),
    )?;
    let taps = g.f_h * g.f_w;
    let pairs = g.f_c.div_ceil(2);
    let per_block = taps * pairs * 32;
    let mut packed = vec![0i16; g.out_c.div_ceil(16) * per_block];
    for oc in 0..g.out_c {
        let (blk, j) = (oc / 16, oc % 16);
        for t in 0..taps {
            for ic in 0..g.f_c {
                let v = f(filter[(oc * taps + t) * g.f_c + ic]);
                packed[blk * per_block + (t * pairs + ic / 2) * 32 + j * 2 + ic % 2] = v;
            }
        }
    }
    Ok(packed)
}

/// The packed length [`pack_filter_i16`] gives for `g`.
fn packed_i16_len(g: &ConvGeom) -> Option<usize> {
    if have_avx2() {
        g.out_c.div_ceil(16).checked_mul(g.f_h * g.f_w * g.in_c.div_ceil(2) * 32)
    } else {
        g.out_c.div_ceil(8).checked_mul(8 * g.f_h * g.f_w * g.in_c)
    }
}

/// The AVX2 integer convolution: like [`conv_pixels`] for `i16` operands, with pairs of
/// input channels multiplied and summed by `vpmaddwd` (exact: operands are within
/// `[-255, 255]`, so no pair sum overflows).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn conv_pixels_i16_avx2<O>(
    g: &ConvGeom,
    src: Src<'_, i16>,
    out: &mut [O],
    finish: &(impl Fn(&[i32], usize, usize, &mut [O]) + Sync),
) {
    use std::arch::x86_64::*;
    let Src { input, origin, packed, q0 } = src;
    let (in_c, out_c) = (g.in_c, g.out_c);
    let taps = g.f_h * g.f_w;
    let pairs = in_c.div_ceil(2);
    let per_block = taps * pairs * 32;
    let npix = out.len() / out_c;
    let plane = g.out_h * g.out_w;
    // Two input channels as one 32-bit lane (the odd channel past the end is 0).
    let pair = |x: &[i16], i: usize| -> i32 {
        let lo = x[2 * i] as u16 as u32;
        let hi = if 2 * i + 1 < x.len() { x[2 * i + 1] as u16 as u32 } else { 0 };
        (lo | (hi << 16)) as i32
    };
    // SAFETY: AVX2 is available (this function's contract); memory is read through bounds
    // -checked 16-element slices and written through the 16-element local `buf`.
    unsafe {
        macro_rules! w16 {
            ($w:expr, $at:expr) => {{
                let s: &[i16; 16] = $w[$at..$at + 16].try_into().expect("16 weights");
                _mm256_loadu_si256(s.as_ptr().cast())
            }};
        }
        for blk in 0..out_c.div_ceil(16) {
            let wblk = &packed[blk * per_block..(blk + 1) * per_block];
            let oc0 = blk * 16;
            let n = 16.min(out_c - oc0);
            let mut q = 0;
            while q < npix {
                let pc = TILE_P.min(npix - q);
                let mut coords = [(0usize, 0usize, 0usize); TILE_P];
                for (p, c) in coords.iter_mut().enumerate().take(pc) {
                    let gq = q0 + q + p;
                    let (b, r) = (gq / plane, gq % plane);
                    *c = (b, r / g.out_w, r % g.out_w);
                }
                let mut acc = [[_mm256_setzero_si256(); 2]; TILE_P];
                for ky in 0..g.f_h {
                    for kx in 0..g.f_w {
                        let mut xs: [&[i16]; TILE_P] = [&[]; TILE_P];
                        let mut valid = [false; TILE_P];
                        for p in 0..pc {
                            let (b, oy, ox) = coords[p];
                            if let (Some(iy), Some(ix)) = (g.in_y(oy, ky), g.in_x(ox, kx)) {
                                let base = ((b * g.in_h + iy) * g.in_w + ix) * in_c - origin;
                                xs[p] = &input[base..base + in_c];
                                valid[p] = true;
                            }
                        }
                        let t = ky * g.f_w + kx;
                        let wtap = &wblk[t * pairs * 32..(t + 1) * pairs * 32];
                        if pc == TILE_P && valid.iter().all(|&v| v) {
                            for i in 0..pairs {
                                let (w0, w1) = (w16!(wtap, i * 32), w16!(wtap, i * 32 + 16));
                                for p in 0..TILE_P {
                                    let xp = _mm256_set1_epi32(pair(xs[p], i));
                                    acc[p][0] = _mm256_add_epi32(acc[p][0], _mm256_madd_epi16(xp, w0));
                                    acc[p][1] = _mm256_add_epi32(acc[p][1], _mm256_madd_epi16(xp, w1));
                                }
                            }
                        } else {
                            for p in 0..pc {
                                if !valid[p] {
                                    continue;
                                }
                                for i in 0..pairs {
                                    let xp = _mm256_set1_epi32(pair(xs[p], i));
                                    acc[p][0] = _mm256_add_epi32(acc[p][0], _mm256_madd_epi16(xp, w16!(wtap, i * 32)));
                                    acc[p][1] =
                                        _mm256_add_epi32(acc[p][1], _mm256_madd_epi16(xp, w16!(wtap, i * 32 + 16)));
                                }
                            }
                        }
                    }
                }
                for p in 0..pc {
                    let mut buf = [0i32; 16];
                    _mm256_storeu_si256(buf.as_mut_ptr().cast(), acc[p][0]);
                    _mm256_storeu_si256(buf.as_mut_ptr().add(8).cast(), acc[p][1]);
                    let o = (q + p) * out_c + oc0;
                    finish(&buf[..n], coords[p].0, oc0, &mut out[o..o + n]);
                }
                q += pc;
            }
        }
    }
}

/// The integer convolution on operands `x + offsets[b]` (per batch `b`; `offsets` has one
/// entry per batch) and a filter from [`pack_filter_i16`] for [`packing_geom_i16`]: with
/// AVX2 (or for [`use_im2col`]) each thread gathers a few pixels' widened windows at a
/// time into rows (no widened copy of the whole input). Otherwise (no AVX2) the input is
/// widened into a copy first.
fn conv_rows_i16<S: QuantInt, O: Send>(
    g: &ConvGeom,
    input: &[S],
    offsets: &[i32],
    packed: &[i16],
    out: &mut [O],
    threads: usize,
    finish: &(impl Fn(&[i32], usize, usize, &mut [O]) + Sync),
) -> Result<()> {
    check_len("input offsets", offsets.len(), Some(g.batches))?;
    if use_im2col(g) || have_avx2() {
        let cv = |x: S, b: usize| x.to_i32().wrapping_add(offsets[b]) as i16;
        let pg = rows_geom(g);
        return conv_rows_im2col(
            g,
            input,
            &cv,
            packed.len(),
            packed_i16_len(&pg),
            out,
            threads,
            &|pg, rows, origin, q0, o| {
                if have_avx2() {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: `have_avx2()` was checked just above.
                    unsafe {
                        conv_pixels_i16_avx2(pg, Src { input: rows, origin, packed, q0 }, o, finish)
                    };
                } else {
                    conv_pixels::<i16, O, 8>(pg, Src { input: rows, origin, packed, q0 }, o, finish);
                }
            },
        );
    }
    let per_batch = (g.in_h * g.in_w * g.in_c).max(1);
    let wide: Vec<i16> =
        input.iter().enumerate().map(|(i, x)| x.to_i32().wrapping_add(offsets[i / per_batch]) as i16).collect();
    conv_rows(g, &wide, packed, out, threads, finish)
}

/// Whether the optimized path first gathers each output pixel's window into a row
/// (im2col): for shallow inputs (fewer than 8 channels, as a network's first layer), where
/// per-tap overhead would dominate. Padding becomes zeros, which add nothing. The rows
/// are gathered a few pixels at a time ([`IM2COL_PIXELS`]), never for the whole image.
fn use_im2col(g: &ConvGeom) -> bool {
    let k = g.f_h * g.f_w * g.in_c;
    let pixels = g.batches * g.out_h * g.out_w;
    g.in_c < 8 && g.f_h * g.f_w > 1 && g.in_c == g.f_c && pixels.checked_mul(k).is_some_and(|n| n <= 1 << 26)
}

/// The geometry the integer path computes (and whose filter packing it expects): `g`, or
/// a 1x1 convolution over gathered rows of `kh * kw * in_c` values with im2col, and always
/// with AVX2.
pub fn packing_geom_i16(g: &ConvGeom) -> ConvGeom {
    if use_im2col(g) || (have_avx2() && g.in_c == g.f_c) {
        return rows_geom(g);
    }
    *g
}

/// The 1x1 convolution over im2col rows of `kh * kw * in_c` values that computes `g`.
fn rows_geom(g: &ConvGeom) -> ConvGeom {
    let k = g.f_h * g.f_w * g.in_c;
    ConvGeom {
        batches: g.batches,
        in_h: g.out_h,
        in_w: g.out_w,
        in_c: k,
        out_h: g.out_h,
        out_w: g.out_w,
        out_c: g.out_c,
        f_h: 1,
        f_w: 1,
        f_c: k,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        pad_h: 0,
        pad_w: 0,
    }
}

/// Widens 8-bit values with an offset into `i16` (`x + offset`, in `[-255, 255]` for
/// TFLite's zero points).
pub fn widen<T: QuantInt>(values: &[T], offset: i32) -> Vec<i16> {
    values.iter().map(|v| v.to_i32().wrapping_add(offset) as i16).collect()
}

/// 8-bit convolution on the input `x + input_offset` (widened while it is read) and a
/// packed widened filter (`w + filter_offset`); identical to [`conv_q8_reference`].
pub fn conv_q8_optimized<T: QuantInt>(
    g: &ConvGeom,
    input: &[T],
    packed: &[i16],
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
    conv_rows_i16(g, input, &offsets, packed, out, threads, &|acc: &[i32], _b, oc0, out: &mut [T]| {
        rq.apply(oc0, acc, out)
    })
}

/// Hybrid convolution on `x - offset[b]` (widened to `i16` while it is read) and a packed
/// `i16` filter; identical to [`conv_hybrid_reference`].
#[allow(clippy::too_many_arguments)]
pub fn conv_hybrid_optimized(
    g: &ConvGeom,
    q: &HybridInput<'_>,
    packed: &[i16],
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
    conv_rows_i16(g, q.data, &offsets, packed, out, threads, &|acc: &[i32], b, oc0, out: &mut [f32]| {
        for (j, (o, &a)) in out.iter_mut().zip(acc).enumerate() {
            *o = hybrid_finish(a, channel_scales, oc0 + j, q.scales[b], bias, act);
        }
    })
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

/// CONV_2D. State: the geometry, how the node computes (type path, activation range,
/// quantized multipliers, hybrid filter scales), the output shape, and the filter packed
/// for the optimized paths (GEMM blocks for float32, widened `i16` for integer and hybrid).
struct Conv2d;

/// What Prepare derives for a CONV_2D node.
struct State {
    geom: ConvGeom,
    kind: Kind,
    out_shape: [i32; 4],
    /// The float filter and bias packed for the GEMM microkernels (ungrouped float32).
    gemm: PackSlot<PackedGemm>,
    /// The integer or hybrid filter widened and packed for [`conv_rows_i16`] (ungrouped).
    i16s: PackSlot<Packed<i16>>,
    /// The int8 filter packed for the 8-bit GEMM microkernels, with the folded bias
    /// (ungrouped int8, where the CPU's table has them).
    qs8: PackSlot<PackedQs8Gemm>,
    /// The input with its channels padded for the 8-bit kernels (an RGB first layer),
    /// kept between Invokes.
    padded_input: Vec<i8>,
}

/// How the node computes, decided from the types and quantization as conv.cc does.
pub(super) enum Kind {
    F32 {
        act: (f32, f32),
    },
    /// Float input, int8 (or uint8 read as int8) filter.
    Hybrid {
        per_channel: bool,
        channel_scales: Vec<f32>,
        filter_scale: f32,
        act: (f32, f32),
    },
    Quant8(Quant8Params),
    Quant16 {
        mults: Vec<QuantMul>,
        act: (i32, i32),
        bias64: bool,
    },
}

/// The node's input, filter, optional bias and output.
fn operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>, Option<TensorView<'a>>)> {
    let n_in = ctx.num_inputs();
    let input = ctx.input(0)?;
    let filter = ctx.input(1)?;
    let bias = if n_in == 3 { ctx.optional_input(2)? } else { None };
    Ok((input, filter, bias))
}

pub(super) fn plan(
    p: &TfLiteConvParams,
    input: &TensorView<'_>,
    filter: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    output: &TensorView<'_>,
) -> Result<(ConvGeom, Kind)> {
    if input.shape.len() != 4 || filter.shape.len() != 4 {
        return Err(Error::new(format!(
            "{OP}: input {:?} and filter {:?} must have rank 4",
            input.shape, filter.shape
        )));
    }
    let d = |t: &TensorView<'_>, what, i| dim(OP, what, t.shape, i);
    let (batches, in_h, in_w, in_c) =
        (d(input, "input", 0)?, d(input, "input", 1)?, d(input, "input", 2)?, d(input, "input", 3)?);
    let (out_c, f_h, f_w, f_c) =
        (d(filter, "filter", 0)?, d(filter, "filter", 1)?, d(filter, "filter", 2)?, d(filter, "filter", 3)?);
    if in_h == 0 || in_w == 0 || in_c == 0 || out_c == 0 || f_h == 0 || f_w == 0 || f_c == 0 {
        return Err(Error::new(format!(
            "{OP}: input {:?} and filter {:?} need positive spatial and channel dimensions",
            input.shape, filter.shape
        )));
    }
    if in_c % f_c != 0 {
        return Err(Error::new(format!("{OP}: input depth {in_c} is not a multiple of the filter depth {f_c}")));
    }
    if out_c % (in_c / f_c) != 0 {
        return Err(Error::new(format!("{OP}: {out_c} filters cannot be split into {} groups", in_c / f_c)));
    }
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
    let stride_h = positive_param(OP, "stride_height", p.stride_height)?;
    let stride_w = positive_param(OP, "stride_width", p.stride_width)?;
    let dil_h = positive_param(OP, "dilation_height_factor", p.dilation_height_factor)?;
    let dil_w = positive_param(OP, "dilation_width_factor", p.dilation_width_factor)?;
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
        f_c,
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
    if let Some(b) = bias
        && b.num_elements() != out_c
    {
        return Err(Error::new(format!("{OP}: bias has {} elements for {out_c} filters", b.num_elements())));
    }
    let bias_type = bias.map(|b| b.dtype);
    let kind = match dtype {
        TfLiteType::kTfLiteFloat32 => {
            let act = activation_range_f32(p.activation);
            if let Some(bt) = bias_type.filter(|&t| t != TfLiteType::kTfLiteFloat32) {
                return Err(Error::new(format!("{OP}: bias of type {} with float32 input", bt.name())));
            }
            match filter.dtype {
                TfLiteType::kTfLiteFloat32 => Kind::F32 { act },
                TfLiteType::kTfLiteInt8 | TfLiteType::kTfLiteUInt8 => hybrid_kind(filter, out_c, in_c / f_c, act)?,
                other => return Err(Error::new(format!("{OP}: filter type {} with float32 input", other.name()))),
            }
        }
        TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8 => {
            let want_filter = dtype;
            if filter.dtype != want_filter {
                return Err(Error::new(format!(
                    "{OP}: filter type {} with {} input",
                    filter.dtype.name(),
                    dtype.name()
                )));
            }
            if let Some(bt) = bias_type.filter(|&t| t != TfLiteType::kTfLiteInt32) {
                return Err(Error::new(format!("{OP}: bias of type {} with {} input", bt.name(), dtype.name())));
            }
            if let Some(b) = bias
                && b.quant().zero_point != 0
            {
                return Err(Error::new(format!("{OP}: bias zero point must be 0")));
            }
            Kind::Quant8(quant8_params(input, filter, bias, output, out_c, p.activation)?)
        }
        _ => {
            // int16 activations, int8 filter.
            if filter.dtype != TfLiteType::kTfLiteInt8 {
                return Err(Error::new(format!("{OP}: filter type {} with int16 input", filter.dtype.name())));
            }
            if input.quant().zero_point != 0 || output.quant().zero_point != 0 {
                return Err(Error::new(format!("{OP}: int16 input and output zero points must be 0")));
            }
            check_zero_filter_zero_points(filter)?;
            let qbt = p.quantized_bias_type;
            let bias64 = match (bias_type, qbt) {
                (Some(TfLiteType::kTfLiteInt64), _) => true,
                (Some(TfLiteType::kTfLiteInt32), _) => false,
                (Some(other), _) => {
                    return Err(Error::new(format!("{OP}: bias of type {} with int16 input", other.name())));
                }
                (None, TfLiteType::kTfLiteInt32) => false,
                (None, _) => true,
            };
            if let (Some(bt), TfLiteType::kTfLiteInt32 | TfLiteType::kTfLiteInt64) = (bias_type, qbt)
                && bt != qbt
            {
                return Err(Error::new(format!(
                    "{OP}: bias type {} differs from quantized_bias_type {}",
                    bt.name(),
                    qbt.name()
                )));
            }
            if let Some(b) = bias
                && b.quant().zero_point != 0
            {
                return Err(Error::new(format!("{OP}: bias zero point must be 0")));
            }
            let (scales, _, _) = affine(OP, "filter", filter)?;
            let in_q = affine(OP, "input", input).map(|_| input.quant())?;
            let out_q = output.quant();
            let mults = per_channel_multipliers(OP, in_q.scale, scales, out_q.scale, out_c)?;
            let act = activation_range_quantized(p.activation, dtype, out_q.scale, out_q.zero_point)?;
            Kind::Quant16 { mults, act, bias64 }
        }
    };
    Ok((geom, kind))
}

fn check_zero_filter_zero_points(filter: &TensorView<'_>) -> Result<()> {
    let (_, zps, _) = affine(OP, "filter", filter)?;
    if zps.iter().any(|&z| z != 0) {
        return Err(Error::new(format!("{OP}: per-channel filter zero points must be 0")));
    }
    Ok(())
}

fn hybrid_kind(filter: &TensorView<'_>, out_c: usize, groups: usize, act: (f32, f32)) -> Result<Kind> {
    let aq = filter.affine_quant().filter(|(s, _, _)| !s.is_empty());
    let distinct = aq.is_some_and(|(s, _, _)| s.len() > 1 && s.iter().any(|&v| v != s[0]));
    let per_channel = (filter.dtype == TfLiteType::kTfLiteInt8 && distinct) || groups != 1;
    if per_channel {
        let (scales, _, qdim) = affine(OP, "filter", filter)?;
        let scales: Vec<f32> = if scales.len() == 1 {
            vec![scales[0]; out_c]
        } else if scales.len() == out_c && qdim == 0 {
            scales.to_vec()
        } else {
            return Err(Error::new(format!(
                "{OP}: {} filter scales along dimension {qdim} for {out_c} filters",
                scales.len()
            )));
        };
        Ok(Kind::Hybrid { per_channel: true, channel_scales: scales, filter_scale: 1.0, act })
    } else {
        let scale = match aq {
            Some((s, _, _)) if s.len() > 1 => s[0],
            _ => filter.quant().scale,
        };
        Ok(Kind::Hybrid { per_channel: false, channel_scales: vec![1.0], filter_scale: scale, act })
    }
}

fn quant8_params(
    input: &TensorView<'_>,
    filter: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    output: &TensorView<'_>,
    out_c: usize,
    act: TfLiteFusedActivation,
) -> Result<Quant8Params> {
    let (scales, _, qdim) = affine(OP, "filter", filter)?;
    affine(OP, "input", input)?;
    if scales.len() != 1 && scales.len() != out_c {
        return Err(Error::new(format!("{OP}: {} filter scales for {out_c} filters", scales.len())));
    }
    let (in_q, out_q) = (input.quant(), output.quant());
    let mults = if input.dtype == TfLiteType::kTfLiteUInt8 {
        if scales.len() > 1 {
            return Err(Error::new(format!("{OP}: per-channel quantization needs int8 or int16 input")));
        }
        let m = legacy_quant_mul(OP, in_q.scale, filter.quant().scale, bias.map(|b| b.quant().scale), out_q.scale)?;
        vec![m; out_c]
    } else {
        if scales.len() > 1 && qdim != 0 {
            return Err(Error::new(format!("{OP}: per-channel filter scales must be along dimension 0")));
        }
        check_zero_filter_zero_points(filter)?;
        per_channel_multipliers(OP, in_q.scale, scales, out_q.scale, out_c)?
    };
    let (act_min, act_max) = activation_range_quantized(act, input.dtype, out_q.scale, out_q.zero_point)?;
    let filter_offset = if input.dtype == TfLiteType::kTfLiteUInt8 { -filter.quant().zero_point } else { 0 };
    Quant8Params::checked(OP, in_q.zero_point, filter_offset, out_q.zero_point, mults, (act_min, act_max))
}

/// A hybrid filter's values as int8 (TFLite reads a uint8 hybrid filter's bytes as int8).
fn hybrid_filter<'a>(filter: &TensorView<'a>) -> Result<&'a [i8]> {
    match filter.dtype {
        TfLiteType::kTfLiteInt8 => filter.data::<i8>(),
        _ => {
            let raw = filter.data::<u8>()?;
            // SAFETY: u8 and i8 have the same size and alignment, and every bit
            // pattern is a valid i8.
            Ok(unsafe { core::slice::from_raw_parts(raw.as_ptr().cast::<i8>(), raw.len()) })
        }
    }
}

/// Packs the filter of an ungrouped hybrid or 8-bit node for [`conv_rows_i16`] (8-bit
/// filters widened with their offset).
fn pack_i16(g: &ConvGeom, kind: &Kind, filter: &TensorView<'_>) -> Result<Packed<i16>> {
    let pg = packing_geom_i16(g);
    let packed = match kind {
        Kind::Hybrid { .. } => pack_filter_i16(&pg, hybrid_filter(filter)?, |v| v as i16)?,
        Kind::Quant8(p) => match filter.dtype {
            TfLiteType::kTfLiteUInt8 => {
                pack_filter_i16(&pg, filter.data::<u8>()?, |v| v.to_i32().wrapping_add(p.filter_offset) as i16)?
            }
            _ => pack_filter_i16(&pg, filter.data::<i8>()?, |v| v.to_i32().wrapping_add(p.filter_offset) as i16)?,
        },
        _ => return Err(Error::new(format!("{OP}: internal error: no integer filter to pack"))),
    };
    Ok(Packed::new(packed))
}

impl BuiltinKernel for Conv2d {
    const NAME: &'static str = OP;
    type Params = TfLiteConvParams;
    type State = State;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteConvParams) -> Result<State> {
        let n_in = ctx.num_inputs();
        if n_in != 2 && n_in != 3 {
            return Err(Error::new(format!("{OP}: expected 2 or 3 inputs, got {n_in}")));
        }
        if ctx.num_outputs() != 1 {
            return Err(Error::new(format!("{OP}: expected 1 output, got {}", ctx.num_outputs())));
        }
        let (input, filter, bias) = operands(ctx)?;
        let output = ctx.output(0)?;
        let (geom, kind) = plan(p, &input, &filter, bias.as_ref(), &output)?;
        // Hybrid: the quantized input and its per-batch parameters are node temporaries.
        let temps = match kind {
            Kind::Hybrid { .. } => hybrid_temporary_bytes(geom.input_len().unwrap_or(0), geom.batches)?.to_vec(),
            _ => Vec::new(),
        };
        ctx.request_temporaries(&temps)?;
        let ungrouped = geom.f_c == geom.in_c;
        let (mut gemm, mut i16s, mut qs8) = (PackSlot::default(), PackSlot::default(), PackSlot::default());
        match &kind {
            Kind::F32 { .. } if ungrouped => {
                gemm = PackSlot::prepare(&filter, bias.as_ref(), || {
                    super::conv_f32_gemm::pack_weights(&geom, &filter, bias.as_ref())
                })?;
            }
            Kind::Hybrid { channel_scales, .. } if ungrouped && table().qs8_gemm.is_some() => {
                let k = table().qs8_gemm.ok_or_else(|| Error::new("internal error: 8-bit kernels vanished"))?;
                qs8 = PackSlot::prepare(&filter, bias.as_ref(), || {
                    pack_qs8_hybrid(k, &geom, channel_scales, &filter, bias.as_ref())
                })?;
            }
            Kind::Quant8(p) if ungrouped && qs8_kernels(&input, p).is_some() => {
                let k = qs8_kernels(&input, p).ok_or_else(|| Error::new("internal error: 8-bit kernels vanished"))?;
                qs8 = PackSlot::prepare(&filter, bias.as_ref(), || {
                    conv_qs8_gemm::pack_weights(k, &geom, &filter, bias.as_ref(), p)
                })?;
            }
            Kind::Hybrid { .. } | Kind::Quant8(_) if ungrouped => {
                // The widened filter does not hold the bias.
                i16s = PackSlot::prepare(&filter, None, || pack_i16(&geom, &kind, &filter))?;
            }
            _ => {}
        }
        let out_shape = geom.output_shape(OP)?;
        ctx.resize_output(0, &out_shape)?;
        Ok(State { geom, kind, out_shape, gemm, i16s, qs8, padded_input: Vec::new() })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteConvParams, state: &mut State) -> Result<()> {
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
        let threads = recommended_threads(ctx);
        let scratch = match state.kind {
            Kind::Hybrid { .. } => {
                Some(hybrid_temporaries(ctx, 0, state.geom.input_len().unwrap_or(0), state.geom.batches)?)
            }
            _ => None,
        };
        run(state, &input, &filter, bias.as_ref(), &mut out, threads, Variant::Optimized, scratch)
    }
}

#[allow(clippy::too_many_arguments)]
fn run(
    state: &mut State,
    input: &TensorView<'_>,
    filter: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    out: &mut crate::kernels::api::TensorViewMut<'_>,
    threads: usize,
    variant: Variant,
    scratch: Option<HybridBuffers<'_>>,
) -> Result<()> {
    let State { geom, kind, gemm, i16s, qs8, padded_input, .. } = state;
    let g = &*geom;
    let grouped = g.f_c != g.in_c;
    let variant = if grouped { Variant::Reference } else { variant };
    let (mut fresh_gemm, mut fresh_i16, mut fresh_qs8) = (None, None, None);
    match &*kind {
        Kind::F32 { act } => {
            let input = input.data::<f32>()?;
            let out = out.data_mut::<f32>()?;
            match variant {
                Variant::Reference => {
                    let bias_c = opt_data_cow::<f32>(bias)?;
                    conv_f32_reference(g, input, filter.data::<f32>()?, bias_c.as_deref(), out, *act)
                }
                Variant::Optimized => {
                    let packed = gemm
                        .get(filter, bias, &mut fresh_gemm, || super::conv_f32_gemm::pack_weights(g, filter, bias))?;
                    super::conv_f32_gemm::compute(table(), g, input, packed, out, *act, threads)
                }
            }
        }
        Kind::Hybrid { per_channel, channel_scales, filter_scale, act } => {
            let input = input.data::<f32>()?;
            let bias_c = opt_data_cow::<f32>(bias)?;
            let bias_s = bias_c.as_deref();
            let out = out.data_mut::<f32>()?;
            let batch_len = g.in_h * g.in_w * g.in_c;
            let direct = variant == Variant::Optimized && g.is_dense() && conv_qs8_gemm::kernel_channels(g) == g.in_c;
            if let (true, Some(k), true) = (direct, table().qs8_gemm, scratch.is_some()) {
                // A 1x1 layer quantizes each thread's rows as it multiplies them.
                let packed =
                    qs8.get(filter, bias, &mut fresh_qs8, || pack_qs8_hybrid(k, g, channel_scales, filter, bias))?;
                let HybridBuffers { data, .. } =
                    scratch.ok_or_else(|| Error::new("internal error: the hybrid buffers vanished"))?;
                return conv_qs8_gemm::compute_hybrid_dense(
                    k,
                    g,
                    input,
                    *per_channel,
                    *filter_scale,
                    packed,
                    out,
                    *act,
                    threads,
                    data,
                );
            }
            let owned;
            let q = match scratch {
                Some(bufs) => quantize_hybrid_input_into(input, batch_len, *per_channel, *filter_scale, bufs, threads)?,
                None => {
                    owned = quantize_hybrid_input(input, batch_len, *per_channel, *filter_scale);
                    owned.view()
                }
            };
            match variant {
                Variant::Reference => {
                    conv_hybrid_reference(g, &q, hybrid_filter(filter)?, channel_scales, bias_s, *act, out)
                }
                Variant::Optimized if table().qs8_gemm.is_some() => {
                    let k = table().qs8_gemm.ok_or_else(|| Error::new("internal error: 8-bit kernels vanished"))?;
                    let packed =
                        qs8.get(filter, bias, &mut fresh_qs8, || pack_qs8_hybrid(k, g, channel_scales, filter, bias))?;
                    conv_qs8_gemm::compute_hybrid(
                        k,
                        g,
                        q.data,
                        q.scales,
                        q.offsets,
                        packed,
                        out,
                        *act,
                        threads,
                        padded_input,
                    )
                }
                Variant::Optimized => {
                    let packed = i16s.get(filter, None, &mut fresh_i16, || pack_i16(g, kind, filter))?;
                    conv_hybrid_optimized(g, &q, packed, channel_scales, bias_s, *act, out, threads)
                }
            }
        }
        Kind::Quant8(p) if variant == Variant::Optimized && qs8_kernels(input, p).is_some() => {
            let k = qs8_kernels(input, p).ok_or_else(|| Error::new("internal error: 8-bit kernels vanished"))?;
            let packed =
                qs8.get(filter, bias, &mut fresh_qs8, || conv_qs8_gemm::pack_weights(k, g, filter, bias, p))?;
            conv_qs8_gemm::compute(k, g, input.data::<i8>()?, packed, out.data_mut::<i8>()?, threads, padded_input)
        }
        Kind::Quant8(p) => {
            let bias_c = opt_data_cow::<i32>(bias)?;
            let bias_s = bias_c.as_deref();
            let packed = match variant {
                Variant::Reference => None,
                Variant::Optimized => Some(&**i16s.get(filter, None, &mut fresh_i16, || pack_i16(g, kind, filter))?),
            };
            match input.dtype {
                TfLiteType::kTfLiteUInt8 => {
                    let (input, filter) = (input.data::<u8>()?, filter.data::<u8>()?);
                    q8(g, input, filter, bias_s, p, out.data_mut::<u8>()?, threads, packed)
                }
                _ => {
                    let (input, filter) = (input.data::<i8>()?, filter.data::<i8>()?);
                    q8(g, input, filter, bias_s, p, out.data_mut::<i8>()?, threads, packed)
                }
            }
        }
        Kind::Quant16 { mults, act, bias64 } => {
            let input = input.data::<i16>()?;
            let filter = filter.data::<i8>()?;
            let out = out.data_mut::<i16>()?;
            let (bias_i64, bias_i32) =
                if *bias64 { (opt_data_cow::<i64>(bias)?, None) } else { (None, opt_data_cow::<i32>(bias)?) };
            let bias = if *bias64 { Bias16::I64(bias_i64.as_deref()) } else { Bias16::I32(bias_i32.as_deref()) };
            conv_i16_reference(g, input, filter, bias, mults, *act, out)
        }
    }
}

/// A hybrid node's int8 filter, channel scales and float bias packed for `k`.
pub(super) fn pack_qs8_hybrid(
    k: &Qs8GemmKernels,
    g: &ConvGeom,
    channel_scales: &[f32],
    filter: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
) -> Result<PackedQs8Gemm> {
    let b = bias.map(|b| b.data::<f32>()).transpose()?;
    conv_qs8_gemm::pack_hybrid(k, g, hybrid_filter(filter)?, channel_scales, b)
}

/// The 8-bit GEMM kernels for an int8 node whose input zero point they can fold, if the
/// CPU's table has them.
fn qs8_kernels(input: &TensorView<'_>, p: &Quant8Params) -> Option<&'static Qs8GemmKernels> {
    if input.dtype != TfLiteType::kTfLiteInt8 || conv_qs8_gemm::input_zero_point(p).is_none() {
        return None;
    }
    table().qs8_gemm
}

/// 8-bit convolution: the reference loop, or the optimized one on `packed` (the filter
/// packed by [`pack_i16`]).
#[allow(clippy::too_many_arguments)]
fn q8<T: QuantInt>(
    g: &ConvGeom,
    input: &[T],
    filter: &[T],
    bias: Option<&[i32]>,
    p: &Quant8Params,
    out: &mut [T],
    threads: usize,
    packed: Option<&[i16]>,
) -> Result<()> {
    match packed {
        None => conv_q8_reference(g, input, filter, bias, p, out),
        Some(packed) => conv_q8_optimized(g, input, packed, bias, p, out, threads),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::builtin_op_data::TfLitePadding;

    /// A deterministic pseudo-random sequence for tests.
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

    use crate::kernels::ops::conv_common::test_conv_geom as geom;

    #[test]
    fn tflite_simple_float() {
        // conv_test.cc SimpleTestFloat32: input [2,2,4,1], filter [3,2,2,1], stride 2, VALID.
        let input = [1.0f32, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0];
        let filter = [1.0f32, 2.0, 3.0, 4.0, -1.0, 1.0, -1.0, 1.0, -1.0, -1.0, 1.0, 1.0];
        let bias = [1.0f32, 2.0, 3.0];
        let g = geom(2, 2, 4, 1, 3, 2, 2, 1, 2, 1, TfLitePadding::kTfLitePaddingValid);
        assert_eq!((g.out_h, g.out_w), (1, 2));
        let want = [18.0f32, 2.0, 5.0, 18.0, 2.0, 5.0, 17.0, 4.0, 3.0, 37.0, 4.0, 3.0];
        let mut out = [0.0f32; 12];
        conv_f32_reference(&g, &input, &filter, Some(&bias), &mut out, (f32::MIN, f32::MAX)).unwrap();
        assert_eq!(out, want);
        // RELU6 clamps.
        conv_f32_reference(&g, &input, &filter, Some(&bias), &mut out, (0.0, 6.0)).unwrap();
        assert_eq!(out, [6.0, 2.0, 5.0, 6.0, 2.0, 5.0, 6.0, 4.0, 3.0, 6.0, 4.0, 3.0]);
    }

    fn shapes() -> Vec<ConvGeom> {
        use TfLitePadding::*;
        vec![
            geom(1, 5, 7, 3, 4, 3, 3, 3, 1, 1, kTfLitePaddingSame),
            geom(2, 9, 6, 5, 11, 3, 2, 5, 2, 1, kTfLitePaddingSame),
            geom(1, 8, 8, 4, 9, 3, 3, 4, 1, 2, kTfLitePaddingValid),
            geom(1, 10, 9, 16, 17, 1, 1, 16, 1, 1, kTfLitePaddingValid),
            geom(1, 7, 7, 2, 8, 5, 5, 2, 2, 1, kTfLitePaddingSame),
            geom(1, 6, 13, 8, 24, 3, 3, 8, 1, 3, kTfLitePaddingSame),
        ]
    }

    #[test]
    fn optimized_quantized_is_identical() {
        let mut r = Lcg(11);
        for g in shapes() {
            let n_in = g.input_len().unwrap();
            let n_f = g.out_c * g.f_h * g.f_w * g.f_c;
            let n = g.output_len().unwrap();
            let bias: Vec<i32> = (0..g.out_c).map(|_| r.int(-3000, 3000)).collect();
            let mults = per_channel_multipliers(
                "T",
                0.02,
                &(0..g.out_c).map(|c| 0.001 + c as f32 * 0.0003).collect::<Vec<_>>(),
                0.05,
                g.out_c,
            )
            .unwrap();
            // int8 per channel.
            let p = Quant8Params {
                input_offset: 7,
                filter_offset: 0,
                output_offset: -3,
                mults: mults.clone(),
                act_min: -128,
                act_max: 127,
            };
            let input: Vec<i8> = (0..n_in).map(|_| r.int(-128, 127) as i8).collect();
            let filter: Vec<i8> = (0..n_f).map(|_| r.int(-127, 127) as i8).collect();
            let (mut a, mut b) = (vec![0i8; n], vec![0i8; n]);
            conv_q8_reference(&g, &input, &filter, Some(&bias), &p, &mut a).unwrap();
            let packed = pack_filter_i16(&packing_geom_i16(&g), &filter, |v| v as i16).unwrap();
            conv_q8_optimized(&g, &input, &packed, Some(&bias), &p, &mut b, 2).unwrap();
            assert_eq!(a, b, "{g:?}");
            // uint8 per tensor with a filter zero point.
            let p = Quant8Params {
                input_offset: -120,
                filter_offset: -131,
                output_offset: 128,
                mults: vec![mults[0]; g.out_c],
                act_min: 10,
                act_max: 250,
            };
            let input: Vec<u8> = (0..n_in).map(|_| r.int(0, 255) as u8).collect();
            let filter: Vec<u8> = (0..n_f).map(|_| r.int(0, 255) as u8).collect();
            let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
            conv_q8_reference(&g, &input, &filter, Some(&bias), &p, &mut a).unwrap();
            let packed =
                pack_filter_i16(&packing_geom_i16(&g), &filter, |v| (v as i32 + p.filter_offset) as i16).unwrap();
            conv_q8_optimized(&g, &input, &packed, None.or(Some(&bias[..])), &p, &mut b, 1).unwrap();
            assert_eq!(a, b);
            assert!(a.iter().any(|&v| v != 10 && v != 250), "requantization saturates everything");
        }
    }

    #[test]
    fn optimized_hybrid_is_identical() {
        let mut r = Lcg(5);
        for g in shapes() {
            let input: Vec<f32> = (0..g.input_len().unwrap()).map(|_| r.f32() * 3.0 + 0.5).collect();
            let filter: Vec<i8> = (0..g.out_c * g.f_h * g.f_w * g.f_c).map(|_| r.int(-127, 127) as i8).collect();
            let bias: Vec<f32> = (0..g.out_c).map(|_| r.f32()).collect();
            let scales: Vec<f32> = (0..g.out_c).map(|c| 0.01 + 0.001 * c as f32).collect();
            let n = g.output_len().unwrap();
            let packed = pack_filter_i16(&packing_geom_i16(&g), &filter, |v| v as i16).unwrap();
            for per_channel in [true, false] {
                let q = quantize_hybrid_input(&input, g.in_h * g.in_w * g.in_c, per_channel, 0.02);
                let q = q.view();
                let cs = if per_channel { scales.clone() } else { vec![1.0] };
                let (mut a, mut b) = (vec![0.0f32; n], vec![0.0f32; n]);
                conv_hybrid_reference(&g, &q, &filter, &cs, Some(&bias), (f32::MIN, f32::MAX), &mut a).unwrap();
                conv_hybrid_optimized(&g, &q, &packed, &cs, Some(&bias), (f32::MIN, f32::MAX), &mut b, 2).unwrap();
                assert_eq!(a, b);
                // Close to the float convolution.
                let ff: Vec<f32> = filter
                    .iter()
                    .enumerate()
                    .map(|(i, &w)| w as f32 * if per_channel { scales[i / (g.f_h * g.f_w * g.f_c)] } else { 0.02 })
                    .collect();
                let mut c = vec![0.0f32; n];
                conv_f32_reference(&g, &input, &ff, Some(&bias), &mut c, (f32::MIN, f32::MAX)).unwrap();
                let max = c.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                let diff = a.iter().zip(&c).fold(0.0f32, |m, (x, y)| m.max((x - y).abs()));
                assert!(diff <= 0.05 * max.max(1.0), "hybrid error {diff} vs {max}");
            }
        }
    }

    #[test]
    fn grouped_and_16x8() {
        // Two groups: input depth 4, filter depth 2, 4 filters (2 per group), 1x1.
        let g = geom(1, 1, 1, 4, 4, 1, 1, 2, 1, 1, TfLitePadding::kTfLitePaddingValid);
        let input = [1.0f32, 2.0, 3.0, 4.0];
        let filter = [1.0f32, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0];
        let mut out = [0.0f32; 4];
        conv_f32_reference(&g, &input, &filter, None, &mut out, (f32::MIN, f32::MAX)).unwrap();
        assert_eq!(out, [1.0, 2.0, 3.0, 4.0]);
        // 16x8: scale 1 (multiplier 2^30, shift 1).
        let g = geom(1, 1, 2, 2, 1, 1, 1, 2, 1, 1, TfLitePadding::kTfLitePaddingValid);
        let m = per_channel_multipliers("T", 1.0, &[1.0], 1.0, 1).unwrap();
        let mut out = [0i16; 2];
        conv_i16_reference(
            &g,
            &[1000, 2000, -300, 7],
            &[3, -2],
            Bias16::I64(Some(&[5])),
            &m,
            (-32768, 32767),
            &mut out,
        )
        .unwrap();
        assert_eq!(out, [1000 * 3 - 4000 + 5, -900 - 14 + 5]);
        conv_i16_reference(&g, &[30000, 30000, 0, 0], &[127, 127], Bias16::I32(None), &m, (-32768, 32767), &mut out)
            .unwrap();
        assert_eq!(out, [32767, 0]);
    }

    #[test]
    fn size_errors() {
        let g = geom(1, 3, 3, 1, 1, 2, 2, 1, 1, 1, TfLitePadding::kTfLitePaddingValid);
        let mut out = [0.0f32; 4];
        assert!(conv_f32_reference(&g, &[0.0; 8], &[0.0; 4], None, &mut out, (0.0, 1.0)).is_err());
        assert!(conv_f32_reference(&g, &[0.0; 9], &[0.0; 3], None, &mut out, (0.0, 1.0)).is_err());
        assert!(conv_f32_reference(&g, &[0.0; 9], &[0.0; 4], Some(&[0.0; 2]), &mut out, (0.0, 1.0)).is_err());
        assert!(conv_f32_reference(&g, &[0.0; 9], &[0.0; 4], None, &mut out[..3], (0.0, 1.0)).is_err());
    }

    #[test]
    fn registration_glue() {
        use crate::abi::types::TfLiteStatus;
        use crate::kernels::test_util::{Graph, qp};
        use TfLiteType::*;
        let reg = registration();
        assert_eq!(reg.builtin_code, TfLiteBuiltinOperator::kTfLiteBuiltinConv2d as i32);
        let params = |stride: i32, padding| {
            Some(TfLiteConvParams {
                padding,
                stride_width: stride,
                stride_height: stride,
                activation: TfLiteFusedActivation::kTfLiteActNone,
                dilation_width_factor: 1,
                dilation_height_factor: 1,
                quantized_bias_type: kTfLiteFloat32,
            })
        };
        let mut g = Graph::new();
        let input = [1.0f32, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0];
        let x = g.tensor(kTfLiteFloat32, &[2, 2, 4, 1], &input, None, false);
        let w = g.tensor(
            kTfLiteFloat32,
            &[3, 2, 2, 1],
            &[1.0f32, 2.0, 3.0, 4.0, -1.0, 1.0, -1.0, 1.0, -1.0, -1.0, 1.0, 1.0],
            None,
            true,
        );
        let b = g.tensor(kTfLiteFloat32, &[3], &[1.0f32, 2.0, 3.0], None, true);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(
            g.run(&reg, &[x, w, b], &[o], params(2, TfLitePadding::kTfLitePaddingValid)),
            TfLiteStatus::kTfLiteOk
        );
        assert_eq!(g.shape(o), vec![2, 1, 2, 3]);
        assert_eq!(g.data::<f32>(o), vec![18.0, 2.0, 5.0, 18.0, 2.0, 5.0, 17.0, 4.0, 3.0, 37.0, 4.0, 3.0]);
        // SAME padding, no bias.
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[x, w], &[o], params(1, TfLitePadding::kTfLitePaddingSame)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 2, 4, 3]);
        // Errors: zero stride, unknown padding, wrong bias size, rank 3 input, channel mismatch,
        // missing params, int8 without quantization.
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(
            g.run(&reg, &[x, w, b], &[o], params(0, TfLitePadding::kTfLitePaddingValid)),
            TfLiteStatus::kTfLiteError
        );
        assert_eq!(
            g.run(&reg, &[x, w, b], &[o], params(1, TfLitePadding::kTfLitePaddingUnknown)),
            TfLiteStatus::kTfLiteError
        );
        let b2 = g.tensor(kTfLiteFloat32, &[2], &[1.0f32, 2.0], None, true);
        assert_eq!(
            g.run(&reg, &[x, w, b2], &[o], params(1, TfLitePadding::kTfLitePaddingValid)),
            TfLiteStatus::kTfLiteError
        );
        let x3 = g.tensor(kTfLiteFloat32, &[2, 4, 2], &input, None, false);
        assert_eq!(
            g.run(&reg, &[x3, w, b], &[o], params(1, TfLitePadding::kTfLitePaddingValid)),
            TfLiteStatus::kTfLiteError
        );
        let w2 = g.tensor(kTfLiteFloat32, &[3, 1, 1, 2], &[0.0f32; 6], None, true);
        assert_eq!(
            g.run(&reg, &[x, w2, b], &[o], params(1, TfLitePadding::kTfLitePaddingValid)),
            TfLiteStatus::kTfLiteError
        );
        assert_eq!(g.run::<TfLiteConvParams>(&reg, &[x, w, b], &[o], None), TfLiteStatus::kTfLiteError);
        let xi = g.tensor(kTfLiteInt8, &[1, 2, 2, 1], &[1i8; 4], None, false);
        let wi = g.tensor(kTfLiteInt8, &[1, 1, 1, 1], &[1i8], None, true);
        let oi = g.output(kTfLiteInt8, None);
        assert_eq!(
            g.run(&reg, &[xi, wi], &[oi], params(1, TfLitePadding::kTfLitePaddingValid)),
            TfLiteStatus::kTfLiteError
        );
        // int8 per-tensor: scales 0.5 * 0.5 / 0.25 = 1, input zero point 1.
        let xi = g.tensor(kTfLiteInt8, &[1, 1, 2, 1], &[3i8, -5], Some(qp(0.5, 1)), false);
        let wi = g.tensor(kTfLiteInt8, &[1, 1, 1, 1], &[2i8], Some(qp(0.5, 0)), true);
        let bi = g.tensor(kTfLiteInt32, &[1], &[10i32], Some(qp(0.25, 0)), true);
        let oi = g.output(kTfLiteInt8, Some(qp(0.25, -2)));
        assert_eq!(
            g.run(&reg, &[xi, wi, bi], &[oi], params(1, TfLitePadding::kTfLitePaddingValid)),
            TfLiteStatus::kTfLiteOk
        );
        assert_eq!(g.data::<i8>(oi), vec![2 * 2 + 10 - 2, 2 * -6 + 10 - 2]);
        // uint8 with filter zero point.
        let xu = g.tensor(kTfLiteUInt8, &[1, 1, 2, 1], &[130u8, 120], Some(qp(0.5, 128)), false);
        let wu = g.tensor(kTfLiteUInt8, &[1, 1, 1, 1], &[132u8], Some(qp(0.5, 128)), true);
        let bu = g.tensor(kTfLiteInt32, &[1], &[-4i32], Some(qp(0.25, 0)), true);
        let ou = g.output(kTfLiteUInt8, Some(qp(0.25, 100)));
        assert_eq!(
            g.run(&reg, &[xu, wu, bu], &[ou], params(1, TfLitePadding::kTfLitePaddingValid)),
            TfLiteStatus::kTfLiteOk
        );
        assert_eq!(g.data::<u8>(ou), vec![104, 64]);
        // Hybrid: float input, int8 filter (scale 0.5), symmetric per-batch quantization.
        let xh = g.tensor(kTfLiteFloat32, &[1, 1, 2, 1], &[1.0f32, -0.5], None, false);
        let wh = g.tensor(kTfLiteInt8, &[1, 1, 1, 1], &[4i8], Some(qp(0.5, 0)), true);
        let oh = g.output(kTfLiteFloat32, None);
        assert_eq!(
            g.run(&reg, &[xh, wh], &[oh], params(1, TfLitePadding::kTfLitePaddingValid)),
            TfLiteStatus::kTfLiteOk
        );
        let got = g.data::<f32>(oh);
        assert!((got[0] - 2.0).abs() < 1e-2 && (got[1] + 1.0).abs() < 2e-2, "{got:?}");
    }
}
