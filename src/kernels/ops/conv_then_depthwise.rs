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
//! intermediate tensor gets no memory of its own (one small enough to stay in cache is
//! computed whole into the node's scratch when several threads share the op; see
//! [`WHOLE_BELOW_BYTES`]).
//!
//! The answer is bit for bit the unfused one: every intermediate value comes from the
//! same GEMM microkernel with the same packed weights and summation order, and the
//! depthwise rows from the same row driver, on a band's rows instead of the whole image.
//! Float32, an ungrouped convolution and depth multiplier 1 (where both ops take their
//! microkernel paths).

use super::conv_2d;
use super::conv_common::{ConvGeom, PackSlot, threads_for};
use super::conv_f32_gemm;
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

/// An intermediate up to this size is computed whole when several threads share the op:
/// it stays in cache anyway, and each op then splits its rows over the threads as it
/// would alone. Banded, so few rows split into bands that both ends of a segment compute
/// the rows where they meet twice, and the bands' short GEMMs end in partial tiles.
const WHOLE_BELOW_BYTES: usize = 512 * 1024;

/// The scratches `run_tasks` needs for `threads` threads: one per task, two tasks per
/// pair of threads.
fn scratch_slots(threads: usize) -> usize {
    if threads <= 1 { 1 } else { 2 * threads.div_ceil(2) }
}

/// Bands each thread should get at least, where the rows allow.
const BANDS_PER_THREAD: usize = 3;

struct ConvThenDepthwise;

struct State {
    conv: ConvGeom,
    conv_act: (f32, f32),
    conv_packed: PackSlot<PackedGemm>,
    dw: DwGeom,
    /// The depthwise op's geometry as a convolution (for packing).
    dw_conv: ConvGeom,
    dw_act: (f32, f32),
    dw_packed: PackSlot<Packed<f32>>,
    /// Depthwise output rows per band.
    band: usize,
    /// Floats of one thread's scratch.
    scratch_len: usize,
    /// Whether several threads compute the whole intermediate into the scratch, then the
    /// depthwise output from it (see [`WHOLE_BELOW_BYTES`]).
    whole: bool,
    out_shape: [i32; 4],
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

fn pack_conv(g: &ConvGeom, filter: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> Result<PackedGemm> {
    conv_f32_gemm::pack_weights(g, filter, bias)
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
        let conv_act = match conv_kind {
            conv_2d::Kind::F32 { act } if conv.f_c == conv.in_c => act,
            _ => return Err(Error::new(format!("{OP}: only an ungrouped float32 convolution fuses"))),
        };
        let mid_shape = conv.output_shape(OP)?;
        let (dw_conv, dw_kind) =
            depthwise_conv_2d::plan(&p.depthwise, &mid_shape, &mid, &dw_filter, dw_bias.as_ref(), &output)?;
        let dw_act = match dw_kind {
            depthwise_conv_2d::Kind::F32 { act } => act,
            _ => return Err(Error::new(format!("{OP}: only a float32 depthwise convolution fuses"))),
        };
        let dw = depthwise_conv_2d::dw_geom(&dw_conv)?;
        let conv_packed =
            PackSlot::prepare(&conv_filter, conv_bias.as_ref(), || pack_conv(&conv, &conv_filter, conv_bias.as_ref()))?;
        let dw_packed =
            PackSlot::prepare(&dw_filter, dw_bias.as_ref(), || pack_dw(&dw_conv, &dw_filter, dw_bias.as_ref()))?;
        let tasks = recommended_threads(ctx).min(dw.rows()).max(1);
        // With threads, at least a few bands per thread, so that the threads can even out.
        let band = match tasks {
            1 => band_rows(&dw),
            _ => band_rows(&dw).min(dw.rows().div_ceil(BANDS_PER_THREAD * tasks).max(1)),
        };
        let scratch_len = band_input_rows(&dw, band) * dw.in_w * dw.channels;
        let mid_len = conv.output_len().ok_or_else(|| Error::new(format!("{OP}: intermediate size overflows")))?;
        let whole = tasks > 1 && mid_len.saturating_mul(size_of::<f32>()) <= WHOLE_BELOW_BYTES;
        let slots = scratch_slots(tasks);
        let floats = match whole {
            true => mid_len.max(scratch_len),
            false => {
                slots.checked_mul(scratch_len).ok_or_else(|| Error::new(format!("{OP}: scratch size overflows")))?
            }
        };
        let bytes =
            floats.checked_mul(size_of::<f32>()).ok_or_else(|| Error::new(format!("{OP}: scratch size overflows")))?;
        ctx.request_temporaries(&[bytes])?;
        let out_shape = dw_conv.output_shape(OP)?;
        ctx.resize_output(0, &out_shape)?;
        Ok(State { conv, conv_act, conv_packed, dw, dw_conv, dw_act, dw_packed, band, scratch_len, whole, out_shape })
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
        let (mut fresh_conv, mut fresh_dw) = (None, None);
        let State { conv, conv_act, conv_packed, dw, dw_conv, dw_act, dw_packed, band, scratch_len, whole, .. } = st;
        let conv_packed = conv_packed.get(&conv_filter, conv_bias.as_ref(), &mut fresh_conv, || {
            pack_conv(conv, &conv_filter, conv_bias.as_ref())
        })?;
        let dw_packed = dw_packed
            .get(&dw_filter, dw_bias.as_ref(), &mut fresh_dw, || pack_dw(dw_conv, &dw_filter, dw_bias.as_ref()))?;
        let fused = Fused {
            conv,
            conv_act: *conv_act,
            conv_packed,
            dw,
            dw_conv,
            dw_act: *dw_act,
            dw_packed,
            band: *band,
            scratch_len: *scratch_len,
            whole: *whole,
        };
        fused.run(input.data::<f32>()?, out.data_mut::<f32>()?, scratch, threads)
    }
}

/// What one Invoke of the fused pair needs.
struct Fused<'a> {
    conv: &'a ConvGeom,
    conv_act: (f32, f32),
    conv_packed: &'a PackedGemm,
    dw: &'a DwGeom,
    dw_conv: &'a ConvGeom,
    dw_act: (f32, f32),
    dw_packed: &'a [f32],
    band: usize,
    scratch_len: usize,
    whole: bool,
}

impl Fused<'_> {
    /// Computes the depthwise output `out` from the convolution's `input`, the depthwise
    /// output rows split into one contiguous share per thread, each with its own slice of
    /// `scratch`.
    fn run(&self, input: &[f32], out: &mut [f32], scratch: &mut [f32], max_threads: usize) -> Result<()> {
        let (conv, dw) = (self.conv, self.dw);
        let conv_rows =
            conv.check_gemm_buffers(Some(input.len()), conv.output_len().unwrap_or(0), self.conv_packed.n)?;
        if Some(out.len()) != dw.output_len() {
            return Err(Error::new(format!("{OP}: output has {} values, expected {:?}", out.len(), dw.output_len())));
        }
        if out.is_empty() {
            return Ok(());
        }
        let conv_work = conv_rows.saturating_mul(conv.out_c).saturating_mul(conv.f_h * conv.f_w * conv.in_c);
        let work = conv_work.saturating_add(out.len().saturating_mul(dw.taps()));
        let threads = threads_for(max_threads, work, dw.rows());
        if self.whole && threads > 1 {
            return self.run_whole(input, out, scratch, threads);
        }
        // Threads in pairs take two scratches per pair (see `run_tasks`).
        let slots = scratch.len() / self.scratch_len.max(1);
        let usable = if slots < 2 { slots } else { slots & !1 };
        self.run_tasks(input, out, scratch, threads.min(usable))
    }

    /// The convolution into the whole intermediate in `scratch`, then the depthwise
    /// convolution from it, each split over `threads` as the unfused ops split.
    fn run_whole(&self, input: &[f32], out: &mut [f32], scratch: &mut [f32], threads: usize) -> Result<()> {
        let mid_len = self.conv.output_len().unwrap_or(usize::MAX);
        let have = scratch.len();
        let mid = scratch
            .get_mut(..mid_len)
            .ok_or_else(|| Error::new(format!("{OP}: scratch of {have} values cannot hold {mid_len}")))?;
        conv_f32_gemm::compute(table(), self.conv, input, self.conv_packed, mid, self.conv_act, threads)?;
        depthwise_conv_2d::dw_f32_microkernel(self.dw_conv, mid, self.dw_packed, out, self.dw_act, threads)
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
    fn run_tasks(&self, input: &[f32], out: &mut [f32], scratch: &mut [f32], threads: usize) -> Result<()> {
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
                self.run_band(input, band_rows(g), chunk, &mut slot, &mut held)?;
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
        input: &[f32],
        (b, oy0, oy1): (usize, usize, usize),
        out: &mut [f32],
        scratch: &mut [f32],
        held: &mut Option<(usize, usize, usize)>,
    ) -> Result<()> {
        let (conv, dw) = (self.conv, self.dw);
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
        let gemm_row = |y: usize| (b * conv.out_h + y) * conv.out_w;
        let mut compute = |rows: core::ops::Range<usize>| -> Result<()> {
            if rows.is_empty() {
                return Ok(());
            }
            conv_f32_gemm::compute_rows(
                table(),
                conv,
                input,
                self.conv_packed,
                gemm_row(rows.start)..gemm_row(rows.end),
                &mut scratch[(rows.start - lo) * in_row_len..(rows.end - lo) * in_row_len],
                self.conv_act,
            )
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

    #[test]
    fn every_band_height_and_thread_count_gives_the_unfused_bits() {
        // (convolution, depthwise kernel size, stride, dilation, padding)
        let cases: [(ConvGeom, usize, usize, usize, TfLitePadding); 7] = [
            (test_conv_geom(1, 9, 7, 3, 8, 1, 1, 3, 1, 1, kTfLitePaddingValid), 3, 1, 1, kTfLitePaddingSame),
            (test_conv_geom(2, 11, 6, 4, 5, 3, 3, 4, 2, 1, kTfLitePaddingSame), 3, 2, 1, kTfLitePaddingSame),
            (test_conv_geom(1, 10, 10, 5, 16, 1, 1, 5, 1, 1, kTfLitePaddingValid), 5, 1, 1, kTfLitePaddingSame),
            (test_conv_geom(1, 13, 8, 2, 7, 3, 3, 2, 1, 1, kTfLitePaddingSame), 3, 1, 2, kTfLitePaddingSame),
            (test_conv_geom(1, 12, 9, 6, 9, 1, 1, 6, 1, 1, kTfLitePaddingValid), 3, 2, 1, kTfLitePaddingValid),
            (test_conv_geom(2, 7, 7, 8, 24, 1, 1, 8, 1, 1, kTfLitePaddingValid), 3, 2, 1, kTfLitePaddingSame),
            (test_conv_geom(1, 8, 5, 3, 17, 2, 2, 3, 2, 1, kTfLitePaddingValid), 5, 2, 1, kTfLitePaddingValid),
        ];
        let mut seed = 11u64;
        let (conv_act, dw_act) = ((0.0, 6.0), (-1.0, 1.5));
        for (cg, k, s, d, pad) in cases {
            let c = cg.out_c;
            let dw_conv = test_conv_geom(cg.batches, cg.out_h, cg.out_w, c, c, k, k, c, s, d, pad);
            let dw = depthwise_conv_2d::dw_geom(&dw_conv).unwrap();
            let x = values(cg.input_len().unwrap(), &mut seed);
            let cf = values(c * cg.f_h * cg.f_w * cg.in_c, &mut seed);
            let cb = values(c, &mut seed);
            let wf = values(k * k * c, &mut seed);
            let wb = values(c, &mut seed);
            let conv_packed = conv_f32_gemm::pack(table(), &cg, &cf, Some(&cb)).unwrap();
            let dw_packed = depthwise_conv_2d::pack_f32(&dw_conv, &wf, Some(&wb)).unwrap();
            let mut mid = vec![0f32; cg.output_len().unwrap()];
            conv_f32_gemm::compute(table(), &cg, &x, &conv_packed, &mut mid, conv_act, 1).unwrap();
            let mut want = vec![0f32; dw.output_len().unwrap()];
            depthwise_conv_2d::dw_f32_microkernel(&dw_conv, &mid, &dw_packed, &mut want, dw_act, 1).unwrap();
            let fused = |band: usize, whole: bool| Fused {
                conv: &cg,
                conv_act,
                conv_packed: &conv_packed,
                dw: &dw,
                dw_conv: &dw_conv,
                dw_act,
                dw_packed: &dw_packed,
                band,
                scratch_len: band_input_rows(&dw, band) * dw.in_w * dw.channels,
                whole,
            };
            for band in 1..=dw.out_h.min(4) {
                let fused = fused(band, false);
                let scratch_len = fused.scratch_len;
                for threads in 1..=4 {
                    let mut scratch = vec![f32::NAN; scratch_len * scratch_slots(threads)];
                    let mut got = vec![f32::NAN; want.len()];
                    fused.run_tasks(&x, &mut got, &mut scratch, threads).unwrap();
                    let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{cg:?} then {k}x{k}/{s} dilation {d}: band {band}, {threads} threads");
                }
            }
            for threads in 2..=3 {
                let fused = fused(1, true);
                let mut scratch = vec![f32::NAN; mid.len()];
                let mut got = vec![f32::NAN; want.len()];
                fused.run_whole(&x, &mut got, &mut scratch, threads).unwrap();
                let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{cg:?} then {k}x{k}/{s} dilation {d}: whole, {threads} threads");
            }
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
}
