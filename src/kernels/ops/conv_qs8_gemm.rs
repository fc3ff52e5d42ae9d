//! int8 convolution on the 8-bit GEMM microkernels: the filter packed once per node with
//! the input zero point folded into the bias (at Prepare for constant filters), every
//! output pixel a GEMM row whose taps point into the NHWC input, rows split over threads.
//! Used by CONV_2D for ungrouped int8 convolutions where the CPU's table has 8-bit GEMM
//! kernels; results are identical to TFLite's `reference_integer_ops::ConvPerChannel`.

use super::conv_2d::Quant8Params;
use super::conv_common::{ConvGeom, InputQuant, parallel_rows, threads_for, value_range};
use super::tile_split::TileGrid;
use crate::error::{Error, Result};
use crate::kernels::api::TensorView;
use crate::kernels::threadpool::parallel_for;
use crate::microkernels::epilogue::Epilogue;
use crate::microkernels::f32_gemm::DenseRows;
use crate::microkernels::qs8_gemm::{self, DenseFilter, PackedQs8Gemm, Qs8GemmKernels, Qs8Output};
use crate::microkernels::shared_out::SharedOut;
use core::ops::Range;
use parking_lot::Mutex;

/// The input zero point of `p` when it and the output zero point are int8 values (the
/// kernels fold the input's into the bias and pad with it); `None` sends the node to the
/// widening path.
pub fn input_zero_point(p: &Quant8Params) -> Option<i8> {
    i8::try_from(p.output_offset).ok()?;
    i8::try_from(p.input_offset.checked_neg()?).ok()
}

/// Taps the kernels read at a time: a layer with several taps whose channel count is not
/// a multiple of 4 (an RGB first layer; the kernels read four bytes at a time) and whose
/// filter rows are undilated reads each filter row as one span of the input itself (see
/// `qs8_gemm::pack`); 1 otherwise.
pub fn kernel_line(g: &ConvGeom) -> usize {
    let odd = g.f_h * g.f_w > 1 && !g.in_c.is_multiple_of(4);
    if odd && g.dil_w == 1 && g.f_w > 1 { g.f_w } else { 1 }
}

/// Input channels as the kernels read them: any other layer with several taps whose
/// channel count is not a multiple of 4 reads a copy of its input with the channels
/// padded to one, so that its taps can point into it; the padding channels have zero
/// weights.
pub fn kernel_channels(g: &ConvGeom) -> usize {
    let odd = g.f_h * g.f_w > 1 && !g.in_c.is_multiple_of(4);
    if odd && kernel_line(g) == 1 { g.in_c.div_ceil(4) * 4 } else { g.in_c }
}

/// Packs `filter` (OHWI, int8) and `bias` for `kernels`, with `p`'s requantization.
pub fn pack(
    kernels: &Qs8GemmKernels,
    g: &ConvGeom,
    filter: &[i8],
    bias: Option<&[i32]>,
    p: &Quant8Params,
) -> Result<PackedQs8Gemm> {
    let ks = g.f_h * g.f_w;
    let kc = g.in_c;
    let want = g.out_c.checked_mul(ks).and_then(|v| v.checked_mul(kc));
    if want != Some(filter.len()) {
        return Err(Error::new(format!("filter has {} values, the geometry needs {want:?}", filter.len())));
    }
    let zp = input_zero_point(p).ok_or_else(|| Error::new("input zero point is not an int8 value"))?;
    let mults: Vec<(i32, i32)> = p.mults.iter().map(|m| (m.multiplier, m.shift)).collect();
    let out = Qs8Output { mults: &mults, offset: p.output_offset, range: (p.act_min, p.act_max) };
    let filter = DenseFilter { values: filter, per_tap: kc };
    qs8_gemm::pack(kernels, g.out_c, ks, kernel_channels(g), kernel_line(g), filter, bias, i32::from(zp), &out)
}

/// Packs the filter and bias tensors for `kernels`.
pub fn pack_weights(
    kernels: &Qs8GemmKernels,
    g: &ConvGeom,
    filter: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    p: &Quant8Params,
) -> Result<PackedQs8Gemm> {
    let b = bias.map(|b| b.data::<i32>()).transpose()?;
    pack(kernels, g, filter.data::<i8>()?, b, p)
}

/// Packs a hybrid layer's int8 `filter` (OHWI), per-channel `scales` (or one for all) and
/// float `bias` for `kernels`.
pub fn pack_hybrid(
    kernels: &Qs8GemmKernels,
    g: &ConvGeom,
    filter: &[i8],
    scales: &[f32],
    bias: Option<&[f32]>,
) -> Result<PackedQs8Gemm> {
    let ks = g.f_h * g.f_w;
    let kc = g.in_c;
    let want = g.out_c.checked_mul(ks).and_then(|v| v.checked_mul(kc));
    if want != Some(filter.len()) {
        return Err(Error::new(format!("filter has {} values, the geometry needs {want:?}", filter.len())));
    }
    let filter = DenseFilter { values: filter, per_tap: kc };
    qs8_gemm::pack_hybrid(kernels, g.out_c, ks, kernel_channels(g), kernel_line(g), filter, scales, bias)
}

/// `input` (pixels of `g.in_c` channels) with each pixel padded to `in_c` channels of
/// value `pad`, in `scratch`; `input` itself when no padding is needed.
fn pad_channels<'a>(g: &ConvGeom, input: &'a [i8], in_c: usize, pad: i8, scratch: &'a mut Vec<i8>) -> &'a [i8] {
    if in_c == g.in_c {
        return input;
    }
    let pixels = input.len() / g.in_c.max(1);
    // Every byte is written below: no clearing first.
    scratch.resize(pixels * in_c, pad);
    pad_pixels(input, g.in_c, pad, scratch, in_c);
    scratch
}

/// Copies the pixels of `input` (`from_c` values each) to `out` (`to_c >= from_c` each),
/// filling each pixel's extra values with `pad`.
fn pad_pixels(input: &[i8], from_c: usize, pad: i8, out: &mut [i8], to_c: usize) {
    if from_c == 3 && to_c == 4 {
        // RGB: one 4-byte store per pixel.
        for (dst, src) in out.chunks_exact_mut(4).zip(input.chunks_exact(3)) {
            dst.copy_from_slice(&[src[0], src[1], src[2], pad]);
        }
    } else if from_c > 0 && to_c > 0 {
        // Pixels are a few bytes: copied byte by byte (a `memcpy` call each costs more).
        for (dst, src) in out.chunks_exact_mut(to_c).zip(input.chunks_exact(from_c)) {
            for (j, d) in dst.iter_mut().enumerate() {
                *d = src.get(j).copied().unwrap_or(pad);
            }
        }
    }
}

/// A hybrid convolution on weights packed by [`pack_hybrid`]: `input` is the int8 input,
/// quantized per batch with `scales[b]` and zero point `zero_points[b]`.
#[allow(clippy::too_many_arguments)]
pub fn compute_hybrid(
    kernels: &Qs8GemmKernels,
    g: &ConvGeom,
    input: &[i8],
    scales: &[f32],
    zero_points: &[i32],
    packed: &PackedQs8Gemm,
    out: &mut [f32],
    act: (f32, f32),
    max_threads: usize,
    scratch: &mut Vec<i8>,
) -> Result<()> {
    let pixels = g.out_h * g.out_w;
    let n = g.out_c;
    g.check_gemm_buffers(None, out.len(), packed.n)?;
    if g.input_len() != Some(input.len()) || scales.len() != g.batches || zero_points.len() != g.batches {
        return Err(Error::new("hybrid input, scales or zero points do not match the geometry"));
    }
    let batch_in = g.in_h * g.in_w * g.in_c;
    let in_c = kernel_channels(g);
    let work = pixels.saturating_mul(n).saturating_mul(packed.layer_ks * packed.layer_kc);
    let threads = threads_for(max_threads, work, pixels);
    for (b, out_b) in out.chunks_exact_mut(pixels * n).enumerate() {
        let (scale, zp) = (scales[b], zero_points[b]);
        let pad = i8::try_from(zp).map_err(|_| Error::new(format!("hybrid input zero point {zp} is not int8")))?;
        let input_b = pad_channels(g, &input[b * batch_in..(b + 1) * batch_in], in_c, pad, scratch);
        parallel_rows(threads, out_b, n, &|first, chunk: &mut [f32]| {
            let r = first..first + chunk.len() / n;
            compute_hybrid_rows(kernels, g, input_b, scale, zp, packed, r, chunk, act)
        })?;
    }
    Ok(())
}

/// One task of [`compute_hybrid_dense`]: its rows' output, float input and quantized copy.
type RowsTask<'a> = (&'a mut [f32], &'a [f32], &'a mut [i8]);

/// A hybrid 1x1 convolution (dense rows, channels needing no padding) on weights packed
/// by [`pack_hybrid`], straight from the float input: each image's range is scanned, then
/// every thread quantizes the input pixels of its own output rows into its part of
/// `quantized` (the input's length) and multiplies them at once. An output pixel reads
/// only its own input pixel, so one parallel pass does what otherwise takes two (the
/// quantization, then the GEMM), and each thread's quantized rows are still in its cache
/// when it reads them. `asymmetric`: per-batch zero points (the per-channel layers);
/// otherwise symmetric, the scale times `filter_scale`. The same values as quantizing
/// the whole input first.
#[allow(clippy::too_many_arguments)]
pub fn compute_hybrid_dense(
    kernels: &Qs8GemmKernels,
    g: &ConvGeom,
    input: &[f32],
    asymmetric: bool,
    filter_scale: f32,
    packed: &PackedQs8Gemm,
    out: &mut [f32],
    act: (f32, f32),
    max_threads: usize,
    quantized: &mut [i8],
) -> Result<()> {
    let pixels = g.out_h * g.out_w;
    let (n, in_c) = (g.out_c, g.in_c);
    g.check_gemm_buffers(None, out.len(), packed.n)?;
    if !g.is_dense() || kernel_channels(g) != in_c || in_c == 0 || n == 0 {
        return Err(Error::new("the direct hybrid path needs a 1x1 convolution on dense rows"));
    }
    if g.input_len() != Some(input.len()) || quantized.len() != input.len() {
        return Err(Error::new("hybrid input or its quantized copy does not match the geometry"));
    }
    let work = pixels.saturating_mul(n).saturating_mul(packed.layer_ks * packed.layer_kc);
    let threads = threads_for(max_threads, work, pixels);
    let per = pixels.div_ceil(threads.max(1)).max(1);
    let batch_in = pixels * in_c;
    for ((image, q_image), out_b) in
        input.chunks_exact(batch_in).zip(quantized.chunks_exact_mut(batch_in)).zip(out.chunks_exact_mut(pixels * n))
    {
        let (lo, hi) = value_range(max_threads, image);
        let mut q = if asymmetric { InputQuant::asymmetric(lo, hi) } else { InputQuant::symmetric(lo, hi) };
        if !asymmetric {
            q.scale *= filter_scale;
        }
        let zp = i8::try_from(q.zero_point)
            .map_err(|_| Error::new(format!("hybrid input zero point {} is not int8", q.zero_point)))?;
        let scales = [q.scale];
        let zero_points = [q.zero_point];
        let rows = qs8_gemm::HybridRows { scales: &scales, zero_points: &zero_points };
        let taps = DenseRows { stride: in_c };
        // Each task takes its rows' output, float input and quantized copy.
        let parts: Vec<Mutex<Option<RowsTask<'_>>>> = out_b
            .chunks_mut(per * n)
            .zip(image.chunks(per * in_c))
            .zip(q_image.chunks_mut(per * in_c))
            .map(|((o, x), qx)| Mutex::new(Some((o, x, qx))))
            .collect();
        let first_error: Mutex<Option<Error>> = Mutex::new(None);
        parallel_for(threads, parts.len(), &|i| {
            let Some((o, x, qx)) = parts[i].lock().take() else { return };
            q.quantize(x, qx);
            let r = qs8_gemm::igemm_hybrid(kernels, packed, qx, &taps, 0..o.len() / n, 0..n, &rows, zp, o, n, act);
            if let Err(e) = r {
                first_error.lock().get_or_insert(e);
            }
        })?;
        if let Some(e) = first_error.into_inner() {
            return Err(e);
        }
    }
    Ok(())
}

/// Output pixels `rows` of one image of a hybrid convolution on weights packed by
/// [`pack_hybrid`], into `out` (`rows.len() * out_c` values): `image` is the image's int8
/// input with its pixels padded to [`kernel_channels`] (see [`pad_image_channels`]),
/// quantized with `scale` and `zero_point`.
#[allow(clippy::too_many_arguments)]
pub fn compute_hybrid_rows(
    kernels: &Qs8GemmKernels,
    g: &ConvGeom,
    image: &[i8],
    scale: f32,
    zero_point: i32,
    packed: &PackedQs8Gemm,
    rows: core::ops::Range<usize>,
    out: &mut [f32],
    act: (f32, f32),
) -> Result<()> {
    let pad = i8::try_from(zero_point)
        .map_err(|_| Error::new(format!("hybrid input zero point {zero_point} is not int8")))?;
    let quant = qs8_gemm::HybridRows { scales: &[scale], zero_points: &[zero_point] };
    let taps = g.gemm_rows(kernel_channels(g));
    qs8_gemm::igemm_hybrid(kernels, packed, image, &taps, rows, 0..g.out_c, &quant, pad, out, g.out_c, act)
}

/// Copies one image's int8 `input` into `out` with each pixel padded to [`kernel_channels`]
/// values of `pad` (`out` holds exactly that many).
pub fn pad_image_channels(g: &ConvGeom, input: &[i8], pad: i8, out: &mut [i8]) -> Result<()> {
    let in_c = kernel_channels(g);
    let pixels = g.in_h * g.in_w;
    if input.len() != pixels * g.in_c || out.len() != pixels * in_c {
        return Err(Error::new("hybrid image and its channel-padded copy do not match the geometry"));
    }
    pad_pixels(input, g.in_c, pad, out, in_c);
    Ok(())
}

/// The convolution on weights packed for `kernels`; `scratch` keeps the channel-padded
/// copy of the input between calls (see [`kernel_channels`]).
pub fn compute(
    kernels: &Qs8GemmKernels,
    g: &ConvGeom,
    input: &[i8],
    packed: &PackedQs8Gemm,
    out: &mut [i8],
    max_threads: usize,
    scratch: &mut Vec<i8>,
) -> Result<()> {
    compute_then(kernels, g, input, packed, out, max_threads, scratch, None)
}

/// [`compute`], each finished chunk of output rows then handed to `epilogue` (where given)
/// while it is in cache. The epilogue sees output rows as GEMM rows: pixels over all
/// batches, `g.out_c` channels each.
#[allow(clippy::too_many_arguments)]
pub fn compute_then(
    kernels: &Qs8GemmKernels,
    g: &ConvGeom,
    input: &[i8],
    packed: &PackedQs8Gemm,
    out: &mut [i8],
    max_threads: usize,
    scratch: &mut Vec<i8>,
    epilogue: Option<&dyn Epilogue<i8>>,
) -> Result<()> {
    let rows = g.check_gemm_buffers(Some(input.len()), out.len(), packed.n)?;
    let n = g.out_c;
    let work = rows.saturating_mul(n).saturating_mul(packed.layer_ks * packed.layer_kc);
    let in_c = kernel_channels(g);
    let input = pad_channels(g, input, in_c, packed.input_zero_point, scratch);
    let grid = tile_grid(kernels, g, packed, rows);
    let weights = (packed.layer_ks * packed.layer_kc).saturating_mul(n);
    let threads = threads_for(max_threads, work, grid.tiles());
    if grid.split_by_blocks(threads, weights, input.len()) {
        return compute_by_blocks(kernels, g, input, packed, out, grid, threads, epilogue);
    }
    let threads = threads_for(max_threads, work, rows);
    parallel_rows(threads, out, n, &|first, chunk: &mut [i8]| {
        let r = first..first + chunk.len() / n;
        let out = SharedOut::new(chunk);
        // SAFETY: `out` borrows this run's own chunk mutably for the call.
        unsafe { gemm_shared(kernels, g, input, packed, r, 0..n, out, 0, epilogue) }
    })
}

/// The output's tiles for `kernels` on `rows` rows.
fn tile_grid(kernels: &Qs8GemmKernels, g: &ConvGeom, packed: &PackedQs8Gemm, rows: usize) -> TileGrid {
    TileGrid { rows, cols: g.out_c, mr: kernels.for_outputs(packed.n).mr, nr: packed.nr }
}

/// The convolution split over `threads` threads in column-block order (see
/// `tile_split`), on `input` with its pixels padded to [`kernel_channels`].
#[allow(clippy::too_many_arguments)]
fn compute_by_blocks(
    kernels: &Qs8GemmKernels,
    g: &ConvGeom,
    input: &[i8],
    packed: &PackedQs8Gemm,
    out: &mut [i8],
    grid: TileGrid,
    threads: usize,
    epilogue: Option<&dyn Epilogue<i8>>,
) -> Result<()> {
    grid.fill_by_blocks(threads, out, &|rs, cs, out, offset| {
        // SAFETY: `fill_by_blocks` hands out pieces that no other call touches.
        unsafe { gemm_shared(kernels, g, input, packed, rs, cs, out, offset, epilogue) }
    })
}

/// Output rows `rows`, channels `cols` into `out` from `offset` (rows `g.out_c` apart;
/// see [`qs8_gemm::igemm_shared`]), on `input` with its pixels padded to
/// [`kernel_channels`]: dense rows where the convolution is a plain matrix product, else
/// each row's window taps.
///
/// # Safety
/// As [`qs8_gemm::igemm_shared`]: no other thread touches the elements written.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_shared(
    kernels: &Qs8GemmKernels,
    g: &ConvGeom,
    input: &[i8],
    packed: &PackedQs8Gemm,
    rows: Range<usize>,
    cols: Range<usize>,
    out: SharedOut<'_, i8>,
    offset: usize,
    epilogue: Option<&dyn Epilogue<i8>>,
) -> Result<()> {
    let n = g.out_c;
    // SAFETY: the caller's contract.
    unsafe {
        if g.is_dense() {
            let taps = DenseRows { stride: g.in_c };
            qs8_gemm::igemm_shared(kernels, packed, input, &taps, rows, cols, out, offset, n, epilogue)
        } else {
            let taps = g.gemm_rows(kernel_channels(g));
            qs8_gemm::igemm_shared(kernels, packed, input, &taps, rows, cols, out, offset, n, epilogue)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::builtin_op_data::TfLitePadding;
    use crate::kernels::ops::conv_2d::conv_q8_reference;
    use crate::kernels::ops::conv_common::{QuantMul, test_conv_geom};
    use crate::microkernels::available_tables;
    use crate::microkernels::test_rng::Lcg;

    #[test]
    fn every_table_matches_the_reference_loop() {
        use TfLitePadding::*;
        let shapes = [
            test_conv_geom(1, 9, 9, 3, 32, 3, 3, 3, 2, 1, kTfLitePaddingSame),
            test_conv_geom(2, 6, 7, 16, 24, 1, 1, 16, 1, 1, kTfLitePaddingValid),
            test_conv_geom(1, 8, 8, 8, 17, 3, 3, 8, 1, 2, kTfLitePaddingSame),
            test_conv_geom(1, 5, 5, 6, 40, 5, 5, 6, 1, 1, kTfLitePaddingSame),
            test_conv_geom(1, 1, 1, 64, 70, 1, 1, 64, 1, 1, kTfLitePaddingValid),
            test_conv_geom(1, 7, 7, 20, 96, 1, 1, 20, 2, 1, kTfLitePaddingSame),
            // A 7x7 layer whose weights outweigh its input many times (split by column
            // blocks on nearby cores), and a 3x3 one.
            test_conv_geom(1, 7, 7, 24, 200, 1, 1, 24, 1, 1, kTfLitePaddingValid),
            test_conv_geom(1, 5, 5, 16, 72, 3, 3, 16, 1, 1, kTfLitePaddingSame),
        ];
        let mut rng = Lcg(4242);
        for (i, g) in shapes.iter().enumerate() {
            let input: Vec<i8> = (0..g.input_len().unwrap()).map(|_| rng.next() as i8).collect();
            let filter: Vec<i8> =
                (0..g.out_c * g.f_h * g.f_w * g.in_c).map(|_| (rng.below(255) as i32 - 127) as i8).collect();
            let bias: Vec<i32> = (0..g.out_c).map(|_| rng.below(20001) as i32 - 10000).collect();
            let mults: Vec<QuantMul> = (0..g.out_c)
                .map(|_| QuantMul {
                    multiplier: (1 << 30) + (rng.next() >> 2) as i32,
                    shift: -(rng.below(6) as i32) - 6,
                })
                .collect();
            let zp = [-128, 3, 127][i % 3];
            let p = Quant8Params::checked("CONV_2D", zp, 0, -2, mults, (-128, 127)).unwrap();
            let mut want = vec![0i8; g.output_len().unwrap()];
            conv_q8_reference(g, &input, &filter, Some(&bias), &p, &mut want).unwrap();
            for t in available_tables() {
                let Some(k) = t.qs8_gemm else { continue };
                let packed = pack(k, g, &filter, Some(&bias), &p).unwrap();
                for threads in [1, 2, 3] {
                    let mut got = vec![0x33i8; want.len()];
                    compute(k, g, &input, &packed, &mut got, threads, &mut Vec::new()).unwrap();
                    assert_eq!(got, want, "{} shape {i} threads {threads}", t.name());
                    // The column-block split on any shape, whatever `compute` chose.
                    let mut padded = Vec::new();
                    let kernel_input =
                        pad_channels(g, &input, kernel_channels(g), packed.input_zero_point, &mut padded);
                    let grid = tile_grid(k, g, &packed, g.batches * g.out_h * g.out_w);
                    let mut got = vec![0x33i8; want.len()];
                    compute_by_blocks(k, g, kernel_input, &packed, &mut got, grid, threads, None).unwrap();
                    assert_eq!(got, want, "{} shape {i} by column blocks on {threads} threads", t.name());
                    // An epilogue sees each output once, at its row and column, both ways.
                    let marked: Vec<i8> =
                        want.iter().enumerate().map(|(j, &v)| v ^ mark(j / g.out_c, j % g.out_c)).collect();
                    let mut got = vec![0x33i8; want.len()];
                    compute_then(k, g, &input, &packed, &mut got, threads, &mut Vec::new(), Some(&MarkRowsAndColumns))
                        .unwrap();
                    assert_eq!(got, marked, "{} shape {i} with an epilogue on {threads} threads", t.name());
                    let mut got = vec![0x33i8; want.len()];
                    let epilogue: Option<&dyn Epilogue<i8>> = Some(&MarkRowsAndColumns);
                    compute_by_blocks(k, g, kernel_input, &packed, &mut got, grid, threads, epilogue).unwrap();
                    assert_eq!(got, marked, "{} shape {i} by column blocks with an epilogue", t.name());
                }
            }
        }
    }

    /// What [`MarkRowsAndColumns`] flips in the output at `row`, `col`.
    fn mark(row: usize, col: usize) -> i8 {
        ((row * 31 + col * 7) & 0x7f) as i8
    }

    /// Flips bits of every output by its row and column: where an epilogue is handed rows
    /// and columns other than those it gets, or an output twice, the result shows it.
    struct MarkRowsAndColumns;

    impl Epilogue<i8> for MarkRowsAndColumns {
        fn apply(&self, rows: Range<usize>, cols: Range<usize>, out: &mut [i8]) -> Result<()> {
            assert_eq!(out.len(), rows.len() * cols.len());
            for (r, row) in rows.zip(out.chunks_exact_mut(cols.len())) {
                for (c, v) in cols.clone().zip(row) {
                    *v ^= mark(r, c);
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod hybrid_tests {
    use super::*;
    use crate::abi::builtin_op_data::TfLitePadding;
    use crate::kernels::ops::conv_2d::{conv_hybrid_reference, quantize_hybrid_input};
    use crate::kernels::ops::conv_common::test_conv_geom;
    use crate::microkernels::available_tables;
    use crate::microkernels::test_rng::Lcg;

    /// `len` symmetric int8 weights (in -127..=127, as hybrid filters are).
    fn random_filter(rng: &mut Lcg, len: usize) -> Vec<i8> {
        (0..len).map(|_| (rng.below(255) as i32 - 127) as i8).collect()
    }

    /// One scale per output channel for a per-channel layer, else the single 1.0 of a
    /// per-tensor one (its filter scale is applied to the input's scale instead).
    fn random_scales(rng: &mut Lcg, out_c: usize, per_channel: bool) -> Vec<f32> {
        if per_channel { (0..out_c).map(|_| 0.002 + rng.below(100) as f32 * 1e-4).collect() } else { vec![1.0] }
    }

    #[test]
    fn every_table_matches_the_hybrid_reference() {
        use TfLitePadding::*;
        let shapes = [
            test_conv_geom(2, 9, 9, 3, 32, 3, 3, 3, 2, 1, kTfLitePaddingSame),
            test_conv_geom(1, 6, 7, 16, 24, 1, 1, 16, 1, 1, kTfLitePaddingValid),
            test_conv_geom(2, 5, 5, 8, 17, 3, 3, 8, 1, 1, kTfLitePaddingSame),
        ];
        let mut rng = Lcg(808);
        for (i, g) in shapes.iter().enumerate() {
            let input: Vec<f32> = (0..g.input_len().unwrap()).map(|_| rng.f32() * 3.0 + 0.5).collect();
            let filter = random_filter(&mut rng, g.out_c * g.f_h * g.f_w * g.in_c);
            let bias: Vec<f32> = (0..g.out_c).map(|_| rng.f32()).collect();
            let per_channel = i % 2 == 0;
            let scales = random_scales(&mut rng, g.out_c, per_channel);
            let q = quantize_hybrid_input(&input, g.in_h * g.in_w * g.in_c, per_channel, 0.01);
            let act = (-1.0, 6.0);
            let mut want = vec![0f32; g.output_len().unwrap()];
            conv_hybrid_reference(g, &q.view(), &filter, &scales, Some(&bias), act, &mut want).unwrap();
            for t in available_tables() {
                let Some(k) = t.qs8_gemm else { continue };
                let packed = pack_hybrid(k, g, &filter, &scales, Some(&bias)).unwrap();
                for threads in [1, 2] {
                    let mut got = vec![f32::NAN; want.len()];
                    let mut scratch = Vec::new();
                    compute_hybrid(k, g, &q.data, &q.scales, &q.offsets, &packed, &mut got, act, threads, &mut scratch)
                        .unwrap();
                    assert_eq!(got, want, "{} shape {i} threads {threads}", t.name());
                }
            }
        }
    }

    #[test]
    fn the_direct_dense_path_matches_the_hybrid_reference() {
        use TfLitePadding::*;
        let shapes = [
            test_conv_geom(2, 6, 7, 16, 24, 1, 1, 16, 1, 1, kTfLitePaddingValid),
            test_conv_geom(1, 9, 5, 20, 70, 1, 1, 20, 1, 1, kTfLitePaddingSame),
            test_conv_geom(1, 1, 1, 64, 33, 1, 1, 64, 1, 1, kTfLitePaddingValid),
            test_conv_geom(3, 4, 4, 8, 16, 1, 1, 8, 1, 1, kTfLitePaddingValid),
        ];
        let mut rng = Lcg(909);
        for (i, g) in shapes.iter().enumerate() {
            let len = g.input_len().unwrap();
            // One image all zeros in the last shape: the empty range's path.
            let input: Vec<f32> =
                (0..len).map(|j| if i == 3 && j < len / 3 { 0.0 } else { rng.f32() * 3.0 - 0.7 }).collect();
            let filter = random_filter(&mut rng, g.out_c * g.in_c);
            let bias: Vec<f32> = (0..g.out_c).map(|_| rng.f32()).collect();
            for per_channel in [true, false] {
                let scales = random_scales(&mut rng, g.out_c, per_channel);
                let filter_scale = if per_channel { 1.0 } else { 0.01 };
                let q = quantize_hybrid_input(&input, g.in_h * g.in_w * g.in_c, per_channel, filter_scale);
                let act = (-1.0, 6.0);
                let mut want = vec![0f32; g.output_len().unwrap()];
                conv_hybrid_reference(g, &q.view(), &filter, &scales, Some(&bias), act, &mut want).unwrap();
                for t in available_tables() {
                    let Some(k) = t.qs8_gemm else { continue };
                    let packed = pack_hybrid(k, g, &filter, &scales, Some(&bias)).unwrap();
                    for threads in [1, 2, 3] {
                        let mut got = vec![f32::NAN; want.len()];
                        let mut quantized = vec![0x55i8; len];
                        compute_hybrid_dense(
                            k,
                            g,
                            &input,
                            per_channel,
                            filter_scale,
                            &packed,
                            &mut got,
                            act,
                            threads,
                            &mut quantized,
                        )
                        .unwrap();
                        assert_eq!(got, want, "{} shape {i} per-channel {per_channel} threads {threads}", t.name());
                        assert_eq!(quantized, q.data, "{} shape {i} quantized input", t.name());
                    }
                }
            }
        }
        // Not a dense layer: refused, not computed wrongly.
        let g = test_conv_geom(1, 5, 5, 8, 8, 3, 3, 8, 1, 1, kTfLitePaddingSame);
        let k = crate::microkernels::table().qs8_gemm.unwrap_or(&crate::microkernels::qs8_gemm::scalar::KERNELS);
        let packed = pack_hybrid(k, &g, &[1; 8 * 9 * 8], &[1.0], None).unwrap();
        let mut out = vec![0f32; g.output_len().unwrap()];
        let input = vec![0.5f32; g.input_len().unwrap()];
        let mut quantized = vec![0i8; input.len()];
        let e =
            compute_hybrid_dense(k, &g, &input, true, 1.0, &packed, &mut out, (f32::MIN, f32::MAX), 2, &mut quantized);
        assert!(e.is_err());
    }
}
