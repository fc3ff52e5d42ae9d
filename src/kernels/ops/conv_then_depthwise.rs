//! A CONV_2D whose only reader is a DEPTHWISE_CONV_2D, run as one node (the CPU's graph
//! fusion makes it, see `interpreter::fusion`; it is never resolved from a model).
//!
//! In the inverted bottlenecks of MobileNet-style networks a convolution expands a few
//! channels into many, and a depthwise convolution reads the result once. Written out
//! whole, that intermediate is the largest tensor of the network (112x112x96 floats,
//! 4.8 MB, in MobileNet v2): it leaves the cache on the way out and comes back from
//! memory for the depthwise pass. Here each thread instead walks its share of the
//! depthwise output rows in bands and computes just the intermediate rows a band reads
//! into a scratch buffer that stays in the core's L2; rows that the next band reads
//! again move to the front of the buffer rather than being computed twice. The
//! intermediate tensor gets no memory of its own. Only intermediates larger than a core's
//! L2 are fused (see [`pays_off`]): a smaller one stays in cache between the two ops.
//!
//! The answer is bit for bit the unfused one: every intermediate value comes from the
//! same GEMM microkernel with the same packed weights and summation order, and the
//! depthwise rows from the same row driver, on a band's rows instead of the whole image.
//! Float32 activations, an ungrouped convolution with float32 or (dynamic-range) int8
//! weights, and depth multiplier 1 (where both ops take their microkernel paths). A
//! dynamic-range convolution quantizes its whole input once, as the unfused op does,
//! and computes each band's rows from it.

use super::conv_2d;
use super::conv_common::{ConvGeom, PackSlot, threads_for};
use super::conv_f32_gemm;
use super::conv_qs8_gemm;
use super::depthwise_conv_2d;
use crate::abi::builtin_op_data::{TfLiteConvParams, TfLiteDepthwiseConvParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::TfLiteRegistration;
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel, BuiltinParams};
use crate::kernels::threadpool::{parallel_for, recommended_threads};
use crate::microkernels::f32_dwconv::{self, DwGeom};
use crate::microkernels::f32_gemm::PackedGemm;
use crate::microkernels::packed::Packed;
use crate::microkernels::qs8_gemm::{PackedQs8Gemm, Qs8GemmKernels};
use crate::microkernels::table;
use parking_lot::Mutex;

const OP: &str = "CONV_2D+DEPTHWISE_CONV_2D";

/// The fused node's options: both ops' own. The fusion allocates it for the node (it
/// keeps it for as long as the node is fused) in place of the depthwise node's options.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ConvThenDepthwiseParams {
    pub conv: TfLiteConvParams,
    pub depthwise: TfLiteDepthwiseConvParams,
}

// SAFETY: the only nodes whose kernel is `ConvThenDepthwise` are the ones the fusion
// builds, and it points their `builtin_data` at this struct.
unsafe impl BuiltinParams for ConvThenDepthwiseParams {}

/// The registration the fusion gives the pair's depthwise node. Inputs: the
/// convolution's input, filter and bias (`-1`: none), then the depthwise filter and bias
/// (`-1`: none); output: the depthwise output; intermediate 0: the tensor between them
/// (for its type; it gets no memory).
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<ConvThenDepthwise>(TfLiteBuiltinOperator::kTfLiteBuiltinDepthwiseConv2d)
}

/// Scratch a thread's band of intermediate rows may take: half a Zen 4 or recent Intel
/// L2, leaving the rest for the weights and the rows the depthwise pass writes.
const SCRATCH_BYTES: usize = 256 * 1024;

/// The scratches `run_tasks` needs for `threads` threads: one per task, two tasks per
/// pair of threads.
fn scratch_slots(threads: usize) -> usize {
    if threads <= 1 { 1 } else { 2 * threads.div_ceil(2) }
}

/// The smallest intermediate (float32 bytes) worth fusing over: about a core's L2. A
/// smaller one stays in cache between the two ops anyway, and banding it only costs
/// (shorter GEMMs, partial tiles, the rows bands share).
const FUSE_FROM_BYTES: usize = 1 << 20;

/// Whether fusing pays for an intermediate of `elements` float32 values.
pub fn pays_off(elements: usize) -> bool {
    elements.saturating_mul(size_of::<f32>()) >= FUSE_FROM_BYTES
}

/// Bands each thread should get at least, where the rows allow.
const BANDS_PER_THREAD: usize = 3;

struct ConvThenDepthwise;

struct State {
    conv: ConvGeom,
    conv_act: (f32, f32),
    conv_weights: FirstWeights,
    dw: DwGeom,
    /// The depthwise op's geometry as a convolution (for packing).
    dw_conv: ConvGeom,
    dw_act: (f32, f32),
    dw_packed: PackSlot<Packed<f32>>,
    /// Depthwise output rows per band.
    band: usize,
    /// Floats of one thread's scratch.
    scratch_len: usize,
    out_shape: [i32; 4],
}

/// The first convolution's packed weights, by its kind.
enum FirstWeights {
    F32(PackSlot<PackedGemm>),
    Hybrid(Box<HybridWeights>),
}

/// Int8 weights on float32 activations (dynamic range): the convolution's input is
/// quantized once per Invoke, per image (asymmetrically when `per_channel`, else
/// symmetrically with the filter's one scale folded in), as the unfused op does; `padded`
/// holds it with its pixels padded to the kernels' channel count where they need that.
struct HybridWeights {
    per_channel: bool,
    filter_scale: f32,
    channel_scales: Vec<f32>,
    packed: PackSlot<PackedQs8Gemm>,
    padded: Vec<i8>,
}

/// The node's operands: convolution input, filter and bias, depthwise filter and bias.
type Operands<'a> = (TensorView<'a>, TensorView<'a>, Option<TensorView<'a>>, TensorView<'a>, Option<TensorView<'a>>);

fn operands<'a>(ctx: &OpCtx<'a>) -> Result<Operands<'a>> {
    if ctx.num_inputs() != 5 || ctx.num_outputs() != 1 {
        return Err(Error::new(format!(
            "{OP}: expected 5 inputs and 1 output, got {} and {}",
            ctx.num_inputs(),
            ctx.num_outputs()
        )));
    }
    Ok((ctx.input(0)?, ctx.input(1)?, ctx.optional_input(2)?, ctx.input(3)?, ctx.optional_input(4)?))
}

/// Intermediate rows a band of `band` depthwise output rows reads at most.
fn band_input_rows(dw: &DwGeom, band: usize) -> usize {
    ((band - 1) * dw.stride_h + (dw.k_h - 1) * dw.dil_h + 1).min(dw.in_h)
}

/// The most depthwise output rows per band whose input rows fit [`SCRATCH_BYTES`] (at
/// least one).
fn band_rows(dw: &DwGeom) -> usize {
    let row_bytes = dw.in_w * dw.channels * size_of::<f32>();
    let mut band = 1;
    while band < dw.out_h && band_input_rows(dw, band + 1) * row_bytes <= SCRATCH_BYTES {
        band += 1;
    }
    band
}

/// Rows per band when `tasks` tasks share `rows` rows, bands of at most `most` rows: at
/// least [`BANDS_PER_THREAD`] bands per task, so that the tasks can even out, and a
/// multiple of `tasks` bands, so that tasks as fast as each other end together (112 rows
/// in bands of 16 make 7 bands, and one of two threads works the seventh alone; 8 bands
/// of 14 do not).
fn shared_band_rows(rows: usize, most: usize, tasks: usize) -> usize {
    let bands = rows.div_ceil(most.max(1)).max(BANDS_PER_THREAD * tasks).next_multiple_of(tasks.max(1));
    rows.div_ceil(bands).max(1)
}

fn pack_conv(g: &ConvGeom, filter: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> Result<PackedGemm> {
    conv_f32_gemm::pack_weights(g, filter, bias)
}

fn qs8_kernels() -> Result<&'static Qs8GemmKernels> {
    table().qs8_gemm.ok_or_else(|| Error::new(format!("{OP}: no 8-bit GEMM kernels for int8 weights")))
}

fn pack_dw(g: &ConvGeom, filter: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> Result<Packed<f32>> {
    let b = bias.map(|b| b.data::<f32>()).transpose()?;
    depthwise_conv_2d::pack_f32(g, filter.data::<f32>()?, b)
}

impl BuiltinKernel for ConvThenDepthwise {
    const NAME: &'static str = OP;
    type Params = ConvThenDepthwiseParams;
    type State = State;

    fn prepare(ctx: &OpCtx<'_>, p: &ConvThenDepthwiseParams) -> Result<State> {
        let (input, conv_filter, conv_bias, dw_filter, dw_bias) = operands(ctx)?;
        let mid = ctx.intermediate(0)?;
        let output = ctx.output(0)?;
        let (conv, conv_kind) = conv_2d::plan(&p.conv, &input, &conv_filter, conv_bias.as_ref(), &mid)?;
        let (conv_act, conv_weights) = match conv_kind {
            conv_2d::Kind::F32 { act } if conv.f_c == conv.in_c => {
                let packed = PackSlot::prepare(&conv_filter, conv_bias.as_ref(), || {
                    pack_conv(&conv, &conv_filter, conv_bias.as_ref())
                })?;
                (act, FirstWeights::F32(packed))
            }
            conv_2d::Kind::Hybrid { per_channel, channel_scales, filter_scale, act } if conv.f_c == conv.in_c => {
                let k = qs8_kernels()?;
                let packed = PackSlot::prepare(&conv_filter, conv_bias.as_ref(), || {
                    conv_2d::pack_qs8_hybrid(k, &conv, &channel_scales, &conv_filter, conv_bias.as_ref())
                })?;
                let padded = Vec::new();
                (
                    act,
                    FirstWeights::Hybrid(Box::new(HybridWeights {
                        per_channel,
                        filter_scale,
                        channel_scales,
                        packed,
                        padded,
                    })),
                )
            }
            _ => return Err(Error::new(format!("{OP}: only an ungrouped float32 or hybrid convolution fuses"))),
        };
        let mid_shape = conv.output_shape(OP)?;
        let (dw_conv, dw_kind) =
            depthwise_conv_2d::plan(&p.depthwise, &mid_shape, &mid, &dw_filter, dw_bias.as_ref(), &output)?;
        let dw_act = match dw_kind {
            depthwise_conv_2d::Kind::F32 { act } => act,
            _ => return Err(Error::new(format!("{OP}: only a float32 depthwise convolution fuses"))),
        };
        let dw = depthwise_conv_2d::dw_geom(&dw_conv)?;
        let dw_packed =
            PackSlot::prepare(&dw_filter, dw_bias.as_ref(), || pack_dw(&dw_conv, &dw_filter, dw_bias.as_ref()))?;
        let tasks = recommended_threads(ctx).min(dw.rows()).max(1);
        let band = match tasks {
            1 => band_rows(&dw),
            _ => shared_band_rows(dw.rows(), band_rows(&dw), tasks),
        };
        let scratch_len = band_input_rows(&dw, band) * dw.in_w * dw.channels;
        let floats = scratch_slots(tasks)
            .checked_mul(scratch_len)
            .ok_or_else(|| Error::new(format!("{OP}: scratch size overflows")))?;
        let bytes =
            floats.checked_mul(size_of::<f32>()).ok_or_else(|| Error::new(format!("{OP}: scratch size overflows")))?;
        // A hybrid convolution's quantized input and its per-image parameters follow.
        let mut temporaries = vec![bytes];
        if let FirstWeights::Hybrid(_) = conv_weights {
            let in_len = conv.input_len().ok_or_else(|| Error::new(format!("{OP}: input size overflows")))?;
            temporaries.extend(conv_2d::hybrid_temporary_bytes(in_len, conv.batches)?);
        }
        ctx.request_temporaries(&temporaries)?;
        let out_shape = dw_conv.output_shape(OP)?;
        ctx.resize_output(0, &out_shape)?;
        Ok(State { conv, conv_act, conv_weights, dw, dw_conv, dw_act, dw_packed, band, scratch_len, out_shape })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &ConvThenDepthwiseParams, st: &mut State) -> Result<()> {
        let (input, conv_filter, conv_bias, dw_filter, dw_bias) = operands(ctx)?;
        let mut out = ctx.output(0)?;
        if out.shape != st.out_shape {
            return Err(Error::new(format!(
                "{OP}: output shape {:?} does not match the expected {:?}",
                out.shape, st.out_shape
            )));
        }
        let scratch = ctx.temporary_mut::<f32>(0)?;
        let threads = recommended_threads(ctx);
        let (mut fresh_conv, mut fresh_hybrid, mut fresh_dw) = (None, None, None);
        let State { conv, conv_act, conv_weights, dw, dw_conv, dw_act, dw_packed, band, scratch_len, .. } = st;
        let input = input.data::<f32>()?;
        let first = match conv_weights {
            FirstWeights::F32(packed) => {
                let packed = packed.get(&conv_filter, conv_bias.as_ref(), &mut fresh_conv, || {
                    pack_conv(conv, &conv_filter, conv_bias.as_ref())
                })?;
                FirstConv::F32 { input, packed }
            }
            FirstWeights::Hybrid(h) => {
                let HybridWeights { per_channel, filter_scale, channel_scales, packed, padded } = &mut **h;
                let kernels = qs8_kernels()?;
                let packed = packed.get(&conv_filter, conv_bias.as_ref(), &mut fresh_hybrid, || {
                    conv_2d::pack_qs8_hybrid(kernels, conv, channel_scales, &conv_filter, conv_bias.as_ref())
                })?;
                let image_len = conv.in_h * conv.in_w * conv.in_c;
                let bufs = conv_2d::hybrid_temporaries(ctx, 1, input.len(), conv.batches)?;
                let q =
                    conv_2d::quantize_hybrid_input_into(input, image_len, *per_channel, *filter_scale, bufs, threads)?;
                let images = pad_images(conv, q.data, q.offsets, padded)?;
                FirstConv::Hybrid { kernels, packed, images, scales: q.scales, zero_points: q.offsets }
            }
        };
        let dw_packed = dw_packed
            .get(&dw_filter, dw_bias.as_ref(), &mut fresh_dw, || pack_dw(dw_conv, &dw_filter, dw_bias.as_ref()))?;
        let fused = Fused {
            conv,
            first,
            conv_act: *conv_act,
            dw,
            dw_act: *dw_act,
            dw_packed,
            band: *band,
            scratch_len: *scratch_len,
        };
        fused.run(out.data_mut::<f32>()?, scratch, threads)
    }
}

/// The quantized images as the 8-bit kernels read them: `data` itself where the pixels
/// need no padding, else a copy in `padded` with each image's pixels padded with its
/// zero point.
fn pad_images<'a>(g: &ConvGeom, data: &'a [i8], zero_points: &[i32], padded: &'a mut Vec<i8>) -> Result<&'a [i8]> {
    let in_c = conv_qs8_gemm::kernel_channels(g);
    if in_c == g.in_c {
        return Ok(data);
    }
    let (image, padded_image) = (g.in_h * g.in_w * g.in_c, g.in_h * g.in_w * in_c);
    padded.resize(g.batches * padded_image, 0);
    for (b, (dst, src)) in padded.chunks_exact_mut(padded_image).zip(data.chunks_exact(image)).enumerate() {
        let zp = zero_points.get(b).copied().unwrap_or(0);
        let pad = i8::try_from(zp).map_err(|_| Error::new(format!("{OP}: input zero point {zp} is not int8")))?;
        conv_qs8_gemm::pad_image_channels(g, src, pad, dst)?;
    }
    Ok(padded)
}

/// The first convolution of one Invoke: its input and packed weights.
#[derive(Clone, Copy)]
enum FirstConv<'a> {
    F32 {
        input: &'a [f32],
        packed: &'a PackedGemm,
    },
    /// The input quantized per image (`images`: each image's pixels padded as the
    /// kernels read them), with each image's scale and zero point.
    Hybrid {
        kernels: &'static Qs8GemmKernels,
        packed: &'a PackedQs8Gemm,
        images: &'a [i8],
        scales: &'a [f32],
        zero_points: &'a [i32],
    },
}

/// What one Invoke of the fused pair needs.
struct Fused<'a> {
    conv: &'a ConvGeom,
    first: FirstConv<'a>,
    conv_act: (f32, f32),
    dw: &'a DwGeom,
    dw_act: (f32, f32),
    dw_packed: &'a [f32],
    band: usize,
    scratch_len: usize,
}

impl Fused<'_> {
    /// Computes the depthwise output `out`, the depthwise output rows split into one
    /// contiguous share per thread, each with its own slice of `scratch`.
    fn run(&self, out: &mut [f32], scratch: &mut [f32], max_threads: usize) -> Result<()> {
        let (conv, dw) = (self.conv, self.dw);
        self.check_first()?;
        if Some(out.len()) != dw.output_len() {
            return Err(Error::new(format!("{OP}: output has {} values, expected {:?}", out.len(), dw.output_len())));
        }
        if out.is_empty() {
            return Ok(());
        }
        let conv_rows = conv.output_len().unwrap_or(0) / conv.out_c.max(1);
        let conv_work = conv_rows.saturating_mul(conv.out_c).saturating_mul(conv.f_h * conv.f_w * conv.in_c);
        let work = conv_work.saturating_add(out.len().saturating_mul(dw.taps()));
        let threads = threads_for(max_threads, work, dw.rows());
        // Threads in pairs take two scratches per pair (see `run_tasks`).
        let slots = scratch.len() / self.scratch_len.max(1);
        let usable = if slots < 2 { slots } else { slots & !1 };
        self.run_tasks(out, scratch, threads.min(usable))
    }

    /// Checks the first convolution's input and weights against its geometry.
    fn check_first(&self) -> Result<()> {
        let conv = self.conv;
        match self.first {
            FirstConv::F32 { input, packed } => {
                conv.check_gemm_buffers(Some(input.len()), conv.output_len().unwrap_or(0), packed.n)?;
            }
            FirstConv::Hybrid { packed, images, scales, zero_points, .. } => {
                conv.check_gemm_buffers(None, conv.output_len().unwrap_or(0), packed.n)?;
                let image = conv.in_h * conv.in_w * conv_qs8_gemm::kernel_channels(conv);
                if Some(images.len()) != image.checked_mul(conv.batches)
                    || scales.len() != conv.batches
                    || zero_points.len() != conv.batches
                {
                    return Err(Error::new(format!("{OP}: quantized input does not match the geometry")));
                }
            }
        }
        Ok(())
    }

    /// Intermediate rows `ys` of image `b` into `out` (`ys.len()` rows).
    fn conv_rows(&self, b: usize, ys: core::ops::Range<usize>, out: &mut [f32]) -> Result<()> {
        let conv = self.conv;
        match self.first {
            FirstConv::F32 { input, packed } => {
                let gemm_row = |y: usize| (b * conv.out_h + y) * conv.out_w;
                let rows = gemm_row(ys.start)..gemm_row(ys.end);
                conv_f32_gemm::compute_rows(table(), conv, input, packed, rows, out, self.conv_act)
            }
            FirstConv::Hybrid { kernels, packed, images, scales, zero_points } => {
                let image_len = images.len() / conv.batches.max(1);
                let image = images
                    .get(b * image_len..(b + 1) * image_len)
                    .ok_or_else(|| Error::new(format!("{OP}: image {b} out of range")))?;
                let rows = ys.start * conv.out_w..ys.end * conv.out_w;
                let (&scale, &zp) = scales
                    .get(b)
                    .zip(zero_points.get(b))
                    .ok_or_else(|| Error::new(format!("{OP}: image {b} has no quantization")))?;
                conv_qs8_gemm::compute_hybrid_rows(kernels, conv, image, scale, zp, packed, rows, out, self.conv_act)
            }
        }
    }

    /// [`Fused::run`] on up to `threads` threads.
    ///
    /// The bands (over all images) are cut into one segment per two threads, and each
    /// segment is worked from both ends at once, one task going down from its top and one
    /// going up from its bottom, each claiming its next band until they meet. A task's
    /// bands are consecutive, so the rows one band shares with the next are computed once
    /// (only where two tasks meet are they computed twice), and a thread that runs slow
    /// (a worker that starts late, or a vCPU the host shares) simply ends up with fewer
    /// bands instead of holding back the whole op.
    fn run_tasks(&self, out: &mut [f32], scratch: &mut [f32], threads: usize) -> Result<()> {
        let dw = self.dw;
        let per_image = dw.out_h.div_ceil(self.band);
        let bands = dw.batches * per_image;
        let threads = threads.min(bands);
        let segments = threads.div_ceil(2);
        let tasks = scratch_slots(threads);
        if threads == 0 || scratch.len() < tasks * self.scratch_len {
            return Err(Error::new(format!(
                "{OP}: scratch of {} values cannot serve {threads} threads",
                scratch.len()
            )));
        }
        // Band `g` holds output rows `band_rows(g)` of image `g / per_image`; consecutive
        // bands are consecutive rows of the output.
        let band_rows = |g: usize| {
            let oy0 = (g % per_image) * self.band;
            (g / per_image, oy0, (oy0 + self.band).min(dw.out_h))
        };
        let row_len = dw.row_len();
        let mut chunks = Vec::with_capacity(bands);
        let mut rest = out;
        for g in 0..bands {
            let (_, oy0, oy1) = band_rows(g);
            let (chunk, tail) = core::mem::take(&mut rest).split_at_mut((oy1 - oy0) * row_len);
            rest = tail;
            chunks.push(Mutex::new(Some(chunk)));
        }
        // Task `i` always works in scratch `i`, and the pool runs task `i` on the same
        // thread every Invoke: the scratch stays in that core's cache. (Taking whichever
        // scratch is free let two threads trade them between Invokes, and each trade
        // pulled 256 KB from the other core, dearly on vCPUs placed far apart.)
        let slots: Vec<Mutex<&mut [f32]>> =
            scratch.chunks_exact_mut(self.scratch_len).take(tasks).map(Mutex::new).collect();
        // Per segment: the next band from the top, and one past the next from the bottom.
        let ends: Vec<Mutex<(usize, usize)>> =
            (0..segments).map(|s| Mutex::new((bands * s / segments, bands * (s + 1) / segments))).collect();
        let first_error: Mutex<Option<Error>> = Mutex::new(None);
        let task = |i: usize| -> Result<()> {
            let (segment, upward) = (i / 2, i % 2 == 1);
            let mut slot = slots
                .get(i)
                .and_then(|s| s.try_lock())
                .ok_or_else(|| Error::new(format!("{OP}: internal error: scratch {i} is missing or taken")))?;
            let mut held = None;
            loop {
                let g = {
                    let mut e = ends[segment].lock();
                    if e.0 >= e.1 {
                        return Ok(());
                    }
                    if upward {
                        e.1 -= 1;
                        e.1
                    } else {
                        e.0 += 1;
                        e.0 - 1
                    }
                };
                let chunk = chunks[g]
                    .lock()
                    .take()
                    .ok_or_else(|| Error::new(format!("{OP}: internal error: band {g} claimed twice")))?;
                self.run_band(band_rows(g), chunk, &mut slot, &mut held)?;
            }
        };
        if tasks == 1 {
            return task(0);
        }
        parallel_for(threads, tasks, &|i| {
            if let Err(e) = task(i) {
                first_error.lock().get_or_insert(e);
            }
        })?;
        match first_error.into_inner() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Computes depthwise output rows `oy0..oy1` of image `b` into `out`, with the
    /// intermediate rows they read in `scratch`. `held` names the intermediate rows
    /// `scratch` holds from this task's previous band (image, first row, end row): those
    /// this band reads again are moved, not computed.
    fn run_band(
        &self,
        (b, oy0, oy1): (usize, usize, usize),
        out: &mut [f32],
        scratch: &mut [f32],
        held: &mut Option<(usize, usize, usize)>,
    ) -> Result<()> {
        let dw = self.dw;
        let in_row_len = dw.in_w * dw.channels;
        // The intermediate rows the band reads: `lo..hi` (padding rows excluded).
        let lo = (oy0 * dw.stride_h).saturating_sub(dw.pad_top);
        let reach = (oy1 - 1) * dw.stride_h + (dw.k_h - 1) * dw.dil_h + 1;
        let hi = reach.saturating_sub(dw.pad_top).min(dw.in_h);
        if lo >= hi || (hi - lo) * in_row_len > scratch.len() {
            return Err(Error::new(format!("{OP}: band of rows {oy0}..{oy1} reads intermediate rows {lo}..{hi}")));
        }
        // Row `y` of `lo..hi` lives at `(y - lo) * in_row_len`; the rows shared with the
        // previous band move there.
        let mut kept = lo..lo;
        if let Some((hb, hlo, hhi)) = *held
            && hb == b
        {
            let (from, to) = (lo.max(hlo), hi.min(hhi));
            if from < to {
                scratch.copy_within((from - hlo) * in_row_len..(to - hlo) * in_row_len, (from - lo) * in_row_len);
                kept = from..to;
            }
        }
        *held = None;
        let mut compute = |rows: core::ops::Range<usize>| -> Result<()> {
            if rows.is_empty() {
                return Ok(());
            }
            let at = (rows.start - lo) * in_row_len..(rows.end - lo) * in_row_len;
            self.conv_rows(b, rows, &mut scratch[at])
        };
        if kept.is_empty() {
            compute(lo..hi)?;
        } else {
            compute(lo..kept.start)?;
            compute(kept.end..hi)?;
        }
        *held = Some((b, lo, hi));
        // The band as a depthwise convolution of its own over rows `lo..hi`: output row
        // `j` reads row `(oy0 + j) * stride - pad_top + ky * dil`, i.e. band row
        // `j * stride + ky * dil - band_pad`.
        let band =
            DwGeom { batches: 1, in_h: hi - lo, out_h: oy1 - oy0, pad_top: dw.pad_top + lo - oy0 * dw.stride_h, ..*dw };
        f32_dwconv::run_rows(
            &table().f32_dwconv,
            &band,
            &scratch[..(hi - lo) * in_row_len],
            self.dw_packed,
            0,
            out,
            self.dw_act,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::builtin_op_data::TfLitePadding::{self, kTfLitePaddingSame, kTfLitePaddingValid};
    use crate::kernels::ops::conv_common::test_conv_geom;

    fn values(n: usize, seed: &mut u64) -> Vec<f32> {
        (0..n)
            .map(|_| {
                *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((*seed >> 33) % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    /// (convolution, depthwise kernel size, stride, dilation, padding)
    fn cases() -> [(ConvGeom, usize, usize, usize, TfLitePadding); 7] {
        [
            (test_conv_geom(1, 9, 7, 3, 8, 1, 1, 3, 1, 1, kTfLitePaddingValid), 3, 1, 1, kTfLitePaddingSame),
            (test_conv_geom(2, 11, 6, 4, 5, 3, 3, 4, 2, 1, kTfLitePaddingSame), 3, 2, 1, kTfLitePaddingSame),
            (test_conv_geom(1, 10, 10, 5, 16, 1, 1, 5, 1, 1, kTfLitePaddingValid), 5, 1, 1, kTfLitePaddingSame),
            (test_conv_geom(1, 13, 8, 2, 7, 3, 3, 2, 1, 1, kTfLitePaddingSame), 3, 1, 2, kTfLitePaddingSame),
            (test_conv_geom(1, 12, 9, 6, 9, 1, 1, 6, 1, 1, kTfLitePaddingValid), 3, 2, 1, kTfLitePaddingValid),
            (test_conv_geom(2, 7, 7, 8, 24, 1, 1, 8, 1, 1, kTfLitePaddingValid), 3, 2, 1, kTfLitePaddingSame),
            (test_conv_geom(1, 8, 5, 3, 17, 2, 2, 3, 2, 1, kTfLitePaddingValid), 5, 2, 1, kTfLitePaddingValid),
        ]
    }

    /// Runs the fused pair (first convolution `first`, whose unfused output is `mid`) with
    /// every band height up to 4 on 1 to 4 threads, and checks each
    /// against the unfused depthwise output, bit for bit.
    fn check_against_unfused(case: (ConvGeom, usize, usize, usize, TfLitePadding), first: FirstConv<'_>, mid: &[f32]) {
        let (cg, k, s, d, pad) = case;
        let c = cg.out_c;
        let mut seed = 5u64 + c as u64;
        let dw_conv = test_conv_geom(cg.batches, cg.out_h, cg.out_w, c, c, k, k, c, s, d, pad);
        let dw = depthwise_conv_2d::dw_geom(&dw_conv).unwrap();
        let (conv_act, dw_act) = ((0.0, 6.0), (-1.0, 1.5));
        let wf = values(k * k * c, &mut seed);
        let wb = values(c, &mut seed);
        let dw_packed = depthwise_conv_2d::pack_f32(&dw_conv, &wf, Some(&wb)).unwrap();
        let mut want = vec![0f32; dw.output_len().unwrap()];
        depthwise_conv_2d::dw_f32_microkernel(&dw_conv, mid, &dw_packed, &mut want, dw_act, 1).unwrap();
        let fused = |band: usize| Fused {
            conv: &cg,
            first,
            conv_act,
            dw: &dw,
            dw_act,
            dw_packed: &dw_packed,
            band,
            scratch_len: band_input_rows(&dw, band) * dw.in_w * dw.channels,
        };
        for band in 1..=dw.out_h.min(4) {
            let fused = fused(band);
            fused.check_first().unwrap();
            let scratch_len = fused.scratch_len;
            for threads in 1..=4 {
                let mut scratch = vec![f32::NAN; scratch_len * scratch_slots(threads)];
                let mut got = vec![f32::NAN; want.len()];
                fused.run_tasks(&mut got, &mut scratch, threads).unwrap();
                let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{cg:?} then {k}x{k}/{s} dilation {d}: band {band}, {threads} threads");
            }
        }
    }

    #[test]
    fn every_band_height_and_thread_count_gives_the_unfused_bits() {
        let mut seed = 11u64;
        for case in cases() {
            let cg = case.0;
            let x = values(cg.input_len().unwrap(), &mut seed);
            let cf = values(cg.out_c * cg.f_h * cg.f_w * cg.in_c, &mut seed);
            let cb = values(cg.out_c, &mut seed);
            let packed = conv_f32_gemm::pack(table(), &cg, &cf, Some(&cb)).unwrap();
            let mut mid = vec![0f32; cg.output_len().unwrap()];
            conv_f32_gemm::compute(table(), &cg, &x, &packed, &mut mid, (0.0, 6.0), 1).unwrap();
            check_against_unfused(case, FirstConv::F32 { input: &x, packed: &packed }, &mid);
        }
    }

    #[test]
    fn a_hybrid_first_convolution_gives_the_unfused_bits() {
        let Some(kernels) = table().qs8_gemm else {
            eprintln!("SKIPPED: this CPU's table has no 8-bit GEMM kernels, so hybrid convolutions do not fuse");
            return;
        };
        let mut seed = 23u64;
        for (i, case) in cases().into_iter().enumerate() {
            let cg = case.0;
            let x = values(cg.input_len().unwrap(), &mut seed);
            let cf: Vec<i8> =
                values(cg.out_c * cg.f_h * cg.f_w * cg.in_c, &mut seed).iter().map(|v| (v * 127.0) as i8).collect();
            let scales: Vec<f32> = (0..cg.out_c).map(|o| 0.004 + 0.001 * o as f32).collect();
            let cb = values(cg.out_c, &mut seed);
            let packed = conv_qs8_gemm::pack_hybrid(kernels, &cg, &cf, &scales, Some(&cb)).unwrap();
            // Per-channel (asymmetric input) and per-tensor (symmetric) alike.
            let per_channel = i % 2 == 0;
            let image_len = cg.in_h * cg.in_w * cg.in_c;
            let q = conv_2d::quantize_hybrid_input(&x, image_len, per_channel, 1.0);
            let mut mid = vec![0f32; cg.output_len().unwrap()];
            let mut pad_scratch = Vec::new();
            conv_qs8_gemm::compute_hybrid(
                kernels,
                &cg,
                &q.data,
                &q.scales,
                &q.offsets,
                &packed,
                &mut mid,
                (0.0, 6.0),
                1,
                &mut pad_scratch,
            )
            .unwrap();
            let mut padded = Vec::new();
            let images = pad_images(&cg, &q.data, &q.offsets, &mut padded).unwrap();
            let first =
                FirstConv::Hybrid { kernels, packed: &packed, images, scales: &q.scales, zero_points: &q.offsets };
            check_against_unfused(case, first, &mid);
        }
    }

    #[test]
    fn bands_fit_the_scratch_budget() {
        let g = test_conv_geom(1, 112, 112, 96, 96, 3, 3, 96, 2, 1, kTfLitePaddingSame);
        let dw = depthwise_conv_2d::dw_geom(&g).unwrap();
        let band = band_rows(&dw);
        assert!(band >= 1);
        assert!(band_input_rows(&dw, band) * dw.in_w * dw.channels * 4 <= SCRATCH_BYTES);
        assert!(band_input_rows(&dw, band + 1) * dw.in_w * dw.channels * 4 > SCRATCH_BYTES);
    }

    #[test]
    fn shared_bands_come_in_multiples_of_the_tasks() {
        // 112 rows, at most 16 per band, 2 tasks: 8 bands of 14, not 7 of 16.
        assert_eq!(shared_band_rows(112, 16, 2), 14);
        // At least three bands per task.
        assert_eq!(shared_band_rows(56, 56, 2), 10);
        for (rows, most, tasks) in [(112, 16, 2), (56, 6, 2), (28, 3, 2), (112, 16, 4), (7, 7, 3), (1, 1, 2)] {
            let band = shared_band_rows(rows, most, tasks);
            assert!(band >= 1 && band <= most, "{rows} rows, at most {most}, {tasks} tasks: {band}");
        }
    }
}
