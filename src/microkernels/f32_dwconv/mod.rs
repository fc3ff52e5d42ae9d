//! float32 depthwise convolution microkernels (depth multiplier 1, NHWC).
//!
//! The filter and bias are packed once per node ([`pack`]) into blocks of channels:
//! `[bias; width][tap 0 weights; width]...[tap T-1 weights; width]`, one block per channel
//! tile of the table's kernels; the last block holds the remaining channels, zero-padded to
//! a multiple of the kernel's vector width, so a kernel never reads past a block.
//!
//! A row kernel computes a run of output pixels. For each pixel it gets one pointer per
//! filter tap, each to the `channels` input values that tap reads; taps that fall into
//! the padding point at a buffer of zeros, so the inner loops have no branches. Per
//! channel: `acc = bias + sum(x_tap * w_tap)`, summed in two interleaved partial sums (even
//! taps onto the bias, odd taps from zero, added at the end: two independent dependency
//! chains per vector), then clamped to `[min, max]` (NaN passes through, as TFLite's
//! `std::min(std::max(x, lo), hi)`). The scalar kernels use this order with separate
//! multiply and add; the SIMD ones fuse them, so results differ by rounding only.
//!
//! A direct kernel (where a table has one) computes the pixels whose taps all lie
//! inside the image, the bulk of a large layer, from one base pointer and the fixed tap
//! offsets (`ky * dil_h` rows and `kx * dil_w` columns), so nothing is built per pixel;
//! the pointer kernels take the padded border. A sliding kernel (where a table has one)
//! takes whole output rows of 3x3 and 5x5 filters with dilation 1 and stride 1 or 2
//! along the row, the border included: it gets one pointer per filter row (null for a
//! row above or below the image), loads each input column once for the pixels that
//! share it and reads columns outside the image as zeros. Every kernel sums a pixel's
//! taps in the same order, the padding's zeros included, so which one computes a pixel
//! does not change its bits.
//!
//! [`run_rows`] is the safe driver: it checks every length against the geometry, hands
//! whole rows to the sliding kernel where it applies, otherwise each row's inner pixels
//! to the direct kernel (one checked span of the input per call), and builds the tap
//! pointers of the others a few pixels at a time from bounds-checked slices of the
//! input, picking the kernel specialised for the tap count (3x3 and 5x5 filters) or the
//! general one.

#[cfg(target_arch = "x86_64")]
pub mod avx2;
#[cfg(target_arch = "x86_64")]
pub mod avx512;
pub mod scalar;

use super::Isa;
use super::packed::Packed;
use crate::error::{Error, Result};
use core::ops::Range;

/// A row kernel.
///
/// `kernel(channels, taps, indirection, weights, output, (min, max))` computes
/// `pixels = output.len() / channels` output pixels, pixel `p` reading its tap `t` from
/// `indirection[p * taps + t]` and writing `output[p * channels..(p + 1) * channels]`.
///
/// # Safety
/// - `channels > 0`, `output.len()` is a multiple of `channels` and
///   `indirection.len() == output.len() / channels * taps`;
/// - `taps` is the tap count the kernel was made for (any count `> 0` for the general
///   kernel);
/// - every pointer in `indirection` is valid for reading `channels` consecutive `f32`s,
///   which nothing writes during the call;
/// - `weights.len() >= packed_len(kernels, channels, taps)` for the kernel's table, in
///   that table's layout;
/// - the CPU has the table's instruction set.
pub type DwRowKernel = unsafe fn(usize, usize, &[*const f32], &[f32], &mut [f32], (f32, f32));

/// A direct row kernel: the output pixels of a run whose taps all lie inside the image,
/// found from one base pointer instead of a pointer per tap.
///
/// `kernel(channels, offsets, base, px_step, weights, output, (min, max))` computes
/// `pixels = output.len() / channels` output pixels, pixel `p` reading its tap `t` from
/// `base + p * px_step + offsets[t]` (`offsets.len()` taps) and writing
/// `output[p * channels..(p + 1) * channels]`.
///
/// # Safety
/// - `channels > 0`, `output.len()` is a multiple of `channels`, `offsets` is not empty;
/// - for every pixel `p` and tap `t`, `base + p * px_step + offsets[t]` is readable for
///   `channels` consecutive `f32`s, which nothing writes during the call;
/// - `weights.len() >= packed_len(kernels, channels, offsets.len())` for the kernel's
///   table, in that table's layout;
/// - the CPU has the table's instruction set.
pub type DwDirectKernel = unsafe fn(usize, &[usize], *const f32, usize, &[f32], &mut [f32], (f32, f32));

/// Where a sliding kernel's pixels read along a row: pixel `p`'s tap `kx` reads input
/// column `first + p * stride + kx`, zeros outside `0..width`.
#[derive(Clone, Copy, Debug)]
pub struct SlideCols {
    /// The input column of the first pixel's tap `kx = 0` (negative: left of the image).
    pub first: isize,
    /// The input row's width in columns.
    pub width: usize,
}

/// A sliding row kernel for `K`x`K` filters (3 or 5, the table entry it sits in) with
/// dilation 1 along the row and its stride (1 or 2): the pixels of one output row, the
/// padding included, each filter row's input vectors loaded once for the pixels that
/// share them.
///
/// `kernel(channels, rows, cols, weights, output, (min, max))` computes
/// `pixels = output.len() / channels` output pixels, pixel `p`'s tap `(ky, kx)` reading
/// input column `j = cols.first + p * stride + kx` of filter row `ky`: the `channels`
/// values at `rows[ky] + j * channels` for `0 <= j < cols.width` when `rows[ky]` is not
/// null, zeros otherwise (a null row is above or below the image). Each output is
/// summed in the pointer kernels' order, taps in the padding included (as zeros), so it
/// has the same bits as theirs.
///
/// # Safety
/// - `channels > 0`, `output.len()` is a multiple of `channels`, `rows.len() == K`, and
///   `cols.first + (pixels + 1) * stride + K` does not overflow `isize`;
/// - every non-null `rows[ky]` is readable for `cols.width * channels` `f32`s, which
///   nothing writes during the call;
/// - `weights.len() >= packed_len(kernels, channels, K * K)` for the kernel's table, in
///   that table's layout;
/// - the CPU has the table's instruction set.
pub type DwSlideKernel = unsafe fn(usize, &[*const f32], SlideCols, &[f32], &mut [f32], (f32, f32));

/// The sliding kernels of a table: `[3x3, 5x5]`, each `[stride 1, stride 2]`.
pub type DwSlideKernels = [[DwSlideKernel; 2]; 2];

/// The depthwise kernels of one instruction set. Only this module makes them (the
/// fields are private), and [`run_rows`] checks that the CPU has `isa` before it calls
/// one, so no safe code can run a kernel the CPU lacks.
#[derive(Clone, Copy)]
pub struct DwKernels {
    /// The instruction set the kernels need.
    isa: Isa,
    /// Channels per packed block (what one step of a kernel's channel loop covers).
    channel_tile: usize,
    /// The last block's width is the remaining channel count rounded up to a multiple
    /// of this (the vector width).
    channel_subtile: usize,
    /// Kernel for 9 taps (3x3 filters).
    taps9: DwRowKernel,
    /// Kernel for 25 taps (5x5 filters).
    taps25: DwRowKernel,
    /// Kernel for any tap count.
    any: DwRowKernel,
    /// Kernel for runs of pixels whose taps are all inside the image (any tap count);
    /// without one, those pixels take tap pointers too.
    direct: Option<DwDirectKernel>,
    /// Sliding kernels for whole rows of 3x3 and 5x5 filters, padding included; where a
    /// table has them they take every row they can (see [`DwKernels::slide_for`]).
    slide: Option<DwSlideKernels>,
}

impl DwKernels {
    /// The kernel for `taps` filter taps.
    fn kernel(&self, taps: usize) -> DwRowKernel {
        match taps {
            9 => self.taps9,
            25 => self.taps25,
            _ => self.any,
        }
    }

    /// The sliding kernel for `g`, if the table has one and the geometry slides: a 3x3 or
    /// 5x5 filter, dilation 1 along the row, stride 1 or 2 along it, and not a stride-1
    /// run whose pixels fit several to a block (the direct kernel reads those as flat
    /// arrays).
    fn slide_for(&self, g: &DwGeom) -> Option<DwSlideKernel> {
        let k = match (g.k_h, g.k_w) {
            (3, 3) => 0,
            (5, 5) => 1,
            _ => return None,
        };
        let flat = g.stride_w == 1 && g.channels < self.channel_tile && self.channel_tile.is_multiple_of(g.channels);
        if g.dil_w != 1 || !(1..=2).contains(&g.stride_w) || flat {
            return None;
        }
        self.slide.map(|s| s[k][g.stride_w - 1])
    }

    /// The packed blocks for `channels`: `(first channel, channels, width)` each.
    fn blocks(&self, channels: usize) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        let tile = self.channel_tile.max(1);
        let sub = self.channel_subtile.max(1);
        (0..channels.div_ceil(tile)).map(move |i| {
            let c0 = i * tile;
            let n = (channels - c0).min(tile);
            (c0, n, n.div_ceil(sub) * sub)
        })
    }
}

/// Length of the packed weights for `channels` channels and `taps` taps, or `None` if it
/// overflows.
pub fn packed_len(kernels: &DwKernels, channels: usize, taps: usize) -> Option<usize> {
    let per_channel = taps.checked_add(1)?;
    kernels.blocks(channels).try_fold(0usize, |acc, (_, _, width)| acc.checked_add(width.checked_mul(per_channel)?))
}

/// Packs depthwise weights for `kernels`: `weights(tap, channel)` for taps in row-major
/// filter order, `bias` (zero when absent) with one value per channel.
pub fn pack(
    kernels: &DwKernels,
    channels: usize,
    taps: usize,
    weights: impl Fn(usize, usize) -> f32,
    bias: Option<&[f32]>,
) -> Result<Packed<f32>> {
    if channels == 0 || taps == 0 {
        return Err(Error::new(format!(
            "depthwise weights need channels and taps, got {channels} channels and {taps} taps"
        )));
    }
    if let Some(b) = bias
        && b.len() != channels
    {
        return Err(Error::new(format!("bias has {} values for {channels} channels", b.len())));
    }
    let len = packed_len(kernels, channels, taps).ok_or_else(|| {
        Error::new(format!("packed depthwise weights for {channels} channels and {taps} taps overflow"))
    })?;
    let mut data = Packed::<f32>::zeroed(len)?;
    let mut slots = data.iter_mut();
    for (c0, n, width) in kernels.blocks(channels) {
        // Each block: its bias, then every tap's weights, `width` lanes each (lanes past
        // the last channel stay zero).
        let mut block = (&mut slots).take(width * (taps + 1));
        for (j, slot) in (&mut block).take(width).enumerate() {
            if j < n {
                *slot = bias.map_or(0.0, |b| b[c0 + j]);
            }
        }
        for (i, slot) in block.enumerate() {
            let (t, j) = (i / width, i % width);
            if j < n {
                *slot = weights(t, c0 + j);
            }
        }
    }
    debug_assert!(slots.next().is_none());
    Ok(data)
}

/// The geometry of an NHWC depthwise convolution with depth multiplier 1.
///
/// Input pixel `(iy, ix)` of output pixel `(oy, ox)` and tap `(ky, kx)` is
/// `iy = oy * stride_h + ky * dil_h - pad_top` (likewise `ix`); outside the image it reads
/// zeros.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DwGeom {
    pub batches: usize,
    pub in_h: usize,
    pub in_w: usize,
    pub channels: usize,
    pub out_h: usize,
    pub out_w: usize,
    pub k_h: usize,
    pub k_w: usize,
    pub stride_h: usize,
    pub stride_w: usize,
    pub dil_h: usize,
    pub dil_w: usize,
    pub pad_top: usize,
    pub pad_left: usize,
}

/// A run of output pixels `first..end` (over all rows and batches, row after row) of an
/// image `out_w` pixels wide; made by [`DwGeom::pixel_run`].
pub(crate) struct PixelRun {
    first: usize,
    end: usize,
    out_w: usize,
}

impl PixelRun {
    /// Each output row the run touches (over all batches), with the run's columns in it:
    /// whole rows but at the run's ends.
    pub(crate) fn rows(&self) -> impl Iterator<Item = (usize, Range<usize>)> + use<> {
        let (first, end, w) = (self.first, self.end, self.out_w);
        (first / w..end.div_ceil(w)).map(move |r| (r, first.max(r * w) - r * w..end.min((r + 1) * w) - r * w))
    }
}

impl DwGeom {
    /// Filter taps (`k_h * k_w`).
    pub fn taps(&self) -> usize {
        self.k_h.saturating_mul(self.k_w)
    }

    /// Output rows over all batches (`batches * out_h`).
    pub fn rows(&self) -> usize {
        self.batches.saturating_mul(self.out_h)
    }

    /// Values per output row (`out_w * channels`).
    pub fn row_len(&self) -> usize {
        self.out_w.saturating_mul(self.channels)
    }

    /// The run of output pixels from `first_pixel` (over all rows and batches) that
    /// `values` output values make, checked to be whole pixels inside the output; `None`
    /// when it is empty.
    pub(crate) fn pixel_run(&self, first_pixel: usize, values: usize) -> Result<Option<PixelRun>> {
        let c = self.channels;
        if c == 0 || !values.is_multiple_of(c) {
            return Err(Error::new(format!("depthwise output of {values} values is not whole pixels of {c}")));
        }
        let pixels = values / c;
        let all = self.rows().saturating_mul(self.out_w);
        if first_pixel.checked_add(pixels).is_none_or(|end| end > all) {
            return Err(Error::new(format!("depthwise pixels {first_pixel}+{pixels} exceed the {all} output pixels")));
        }
        Ok((pixels > 0).then_some(PixelRun { first: first_pixel, end: first_pixel + pixels, out_w: self.out_w }))
    }

    /// Checks that the sizes are positive and that every length and coordinate the driver
    /// forms fits in `isize`.
    fn check(&self) -> Result<()> {
        let dims = [
            self.batches,
            self.in_h,
            self.in_w,
            self.channels,
            self.out_h,
            self.out_w,
            self.k_h,
            self.k_w,
            self.stride_h,
            self.stride_w,
            self.dil_h,
            self.dil_w,
        ];
        if dims.contains(&0) {
            return Err(Error::new(format!("depthwise geometry has a zero size or step: {self:?}")));
        }
        let limit = isize::MAX as usize / 2;
        let far = |out: usize, stride: usize, k: usize, dil: usize, pad: usize| {
            (out - 1).checked_mul(stride)?.checked_add((k - 1).checked_mul(dil)?)?.checked_add(pad)
        };
        let lens = [
            self.input_len(),
            self.output_len(),
            self.rows().checked_mul(self.k_h),
            far(self.out_h, self.stride_h, self.k_h, self.dil_h, self.pad_top),
            far(self.out_w, self.stride_w, self.k_w, self.dil_w, self.pad_left),
            self.k_h.checked_mul(self.k_w),
        ];
        if lens.iter().any(|l| l.is_none_or(|v| v > limit)) {
            return Err(Error::new(format!("depthwise geometry overflows: {self:?}")));
        }
        Ok(())
    }

    /// Input values (`batches * in_h * in_w * channels`).
    pub fn input_len(&self) -> Option<usize> {
        self.batches.checked_mul(self.in_h)?.checked_mul(self.in_w)?.checked_mul(self.channels)
    }

    /// Output values (`batches * out_h * out_w * channels`).
    pub fn output_len(&self) -> Option<usize> {
        self.batches.checked_mul(self.out_h)?.checked_mul(self.out_w)?.checked_mul(self.channels)
    }
}

/// Output pixels per kernel call: bounds the tap pointer buffer (at most this many pixels
/// times the taps) so it stays in L1 next to the input rows it points into.
const PIXELS_PER_CALL: usize = 64;

/// Computes output rows `first_row..first_row + output.len() / g.row_len()` (rows over all
/// batches, `batches * out_h` in all) of the depthwise convolution of `input` (NHWC, the
/// whole tensor) with `packed` (made by [`pack`] for `kernels`, `g.channels` and
/// `g.taps()`), clamping to `clamp = (min, max)`.
pub fn run_rows(
    kernels: &DwKernels,
    g: &DwGeom,
    input: &[f32],
    packed: &[f32],
    first_row: usize,
    output: &mut [f32],
    clamp: (f32, f32),
) -> Result<()> {
    let row_len = g.row_len();
    if row_len == 0 || !output.len().is_multiple_of(row_len) {
        return Err(Error::new(format!("depthwise output of {} values is not whole rows of {row_len}", output.len())));
    }
    let first = first_row.checked_mul(g.out_w).ok_or_else(|| Error::new("depthwise row index overflows"))?;
    run_pixels(kernels, g, input, packed, first, output, clamp)
}

/// [`run_rows`] on output pixels `first_pixel..first_pixel + output.len() / g.channels`
/// (pixels over all rows and batches, row after row), which may start and end inside a
/// row: threads can then split a few rows evenly (7 rows of 7 pixels split 25/24 pixels
/// over two threads, not 4/3 rows).
pub fn run_pixels(
    kernels: &DwKernels,
    g: &DwGeom,
    input: &[f32],
    packed: &[f32],
    first_pixel: usize,
    output: &mut [f32],
    clamp: (f32, f32),
) -> Result<()> {
    if !kernels.isa.is_available() {
        return Err(Error::new(format!("this CPU cannot run the {} depthwise kernels", kernels.isa.name())));
    }
    g.check()?;
    let (c, taps, row_len) = (g.channels, g.taps(), g.row_len());
    if Some(input.len()) != g.input_len() {
        return Err(Error::new(format!(
            "depthwise input has {} values, the geometry needs {:?}",
            input.len(),
            g.input_len()
        )));
    }
    let want_packed = packed_len(kernels, c, taps);
    if Some(packed.len()) != want_packed {
        return Err(Error::new(format!("packed depthwise weights have {} values, need {want_packed:?}", packed.len())));
    }
    let Some(run) = g.pixel_run(first_pixel, output.len())? else { return Ok(()) };
    let kernel = kernels.kernel(taps);
    let zeros = vec![0.0f32; c];
    let batch_len = g.in_h * g.in_w * c;
    let in_row_len = g.in_w * c;
    let edges = Edges { g, kernel, zero: zeros.as_ptr(), packed, clamp };
    // Tap `(ky, kx)` of a pixel whose taps are all inside the image reads
    // `ky * dil_h` rows and `kx * dil_w` columns past its first tap.
    let offsets: Vec<usize> =
        (0..g.k_h).flat_map(|ky| (0..g.k_w).map(move |kx| ky * g.dil_h * in_row_len + kx * g.dil_w * c)).collect();
    let last_offset = offsets.last().copied().unwrap_or(0);
    let (inner_lo, inner_hi) = inner_columns(g);
    // The input row each filter row reads for the current output row (`None`: padding).
    let mut tap_rows: Vec<Option<&[f32]>> = vec![None; g.k_h];
    let slide = kernels.slide_for(g);
    // Rows the sliding kernel takes build no tap pointers.
    let pointer_slots = if slide.is_some() { 0 } else { PIXELS_PER_CALL.min(g.out_w) * taps };
    let mut indirection: Vec<*const f32> = vec![edges.zero; pointer_slots];
    let mut rest = output;
    for (r, Range { start: x0, end: x1 }) in run.rows() {
        let (out_row, tail) = core::mem::take(&mut rest).split_at_mut((x1 - x0) * c);
        rest = tail;
        // The next row's output lines, ahead of the stores (see `prefetch_for_write`).
        if !rest.is_empty() {
            let next = rest.len().min(row_len) * 4;
            crate::microkernels::prefetch_rows_for_write(rest.as_ptr().cast(), 1, next, next);
        }
        let (b, oy) = (r / g.out_h, r % g.out_h);
        let image = &input[b * batch_len..(b + 1) * batch_len];
        for (ky, slot) in tap_rows.iter_mut().enumerate() {
            let iy = (oy * g.stride_h + ky * g.dil_h).checked_sub(g.pad_top);
            *slot = iy.filter(|&y| y < g.in_h).map(|y| &image[y * in_row_len..(y + 1) * in_row_len]);
        }
        if let Some(slide) = slide {
            // `slide_for` took only 3x3 and 5x5 filters: at most 5 filter rows.
            let mut rows = [core::ptr::null(); 5];
            for (slot, row) in rows.iter_mut().zip(&tap_rows) {
                *slot = row.map_or(core::ptr::null(), <[f32]>::as_ptr);
            }
            let rows = &rows[..g.k_h];
            for (run, out_px) in out_row.chunks_mut(DIRECT_PIXELS_PER_CALL * c).enumerate() {
                let ox0 = x0 + run * DIRECT_PIXELS_PER_CALL;
                // `g.check` keeps every column the geometry forms below `isize::MAX / 2`.
                let cols = SlideCols { first: (ox0 * g.stride_w) as isize - g.pad_left as isize, width: g.in_w };
                // SAFETY: the CPU has the kernels' instruction set (checked above); `c > 0`
                // (checked by `g.check`); `out_px` holds whole pixels of `c` values;
                // `slide_for` chose the kernel for this filter size and stride and `rows`
                // has one entry per filter row, each null or the start of a whole input
                // row (`in_w * c` values) borrowed immutably from `input` for the call,
                // while `out_px` is a distinct `&mut`; the columns stay within
                // `isize::MAX / 2` (`g.check`); `packed` has
                // `packed_len(kernels, c, taps)` values (checked above).
                unsafe { slide(c, rows, cols, packed, out_px, clamp) };
            }
            continue;
        }
        // The direct kernel takes the pixels whose taps are all inside the image: rows
        // with no padding tap, columns `inner_lo..inner_hi`.
        let first_iy = (oy * g.stride_h).checked_sub(g.pad_top).filter(|_| tap_rows.iter().all(Option::is_some));
        let direct = kernels.direct.zip(first_iy).filter(|_| inner_lo < inner_hi);
        let Some((direct, iy0)) = direct else {
            edges.run(&tap_rows, x0, out_row, &mut indirection);
            continue;
        };
        // The run's columns left of, inside and right of `inner_lo..inner_hi`.
        let (lo, hi) = (inner_lo.clamp(x0, x1), inner_hi.clamp(x0, x1).max(inner_lo.clamp(x0, x1)));
        let (left, rest) = out_row.split_at_mut((lo - x0) * c);
        let (inner, right) = rest.split_at_mut((hi - lo) * c);
        edges.run(&tap_rows, x0, left, &mut indirection);
        edges.run(&tap_rows, hi, right, &mut indirection);
        let step = g.stride_w * c;
        for (run, out_px) in inner.chunks_mut(DIRECT_PIXELS_PER_CALL * c).enumerate() {
            let pixels = out_px.len() / c;
            let ox0 = lo + run * DIRECT_PIXELS_PER_CALL;
            // The run's first tap reads input `(iy0, ox0 * stride_w - pad_left)`; its last
            // pixel's last tap ends `last_offset + c` past that pixel's first tap.
            let start = iy0 * in_row_len + (ox0 * g.stride_w - g.pad_left) * c;
            let need = (pixels - 1) * step + last_offset + c;
            let span = image
                .get(start..)
                .and_then(|s| s.get(..need))
                .ok_or_else(|| Error::new(format!("depthwise direct run at row {oy} column {ox0} leaves the input")))?;
            // SAFETY: the CPU has the kernels' instruction set (checked above); `c > 0`
            // and `offsets` has `taps > 0` entries (checked by `g.check`); `out_px` holds
            // whole pixels of `c` values; pixel `p`'s tap `t` starts at
            // `p * step + offsets[t] <= need - c` inside `span` (offsets grow with `t`),
            // borrowed immutably from `input` for the whole call while `out_px` is a
            // distinct `&mut`; `packed` has `packed_len(kernels, c, taps)` values
            // (checked above).
            unsafe { direct(c, &offsets, span.as_ptr(), step, packed, out_px, clamp) };
        }
    }
    Ok(())
}

/// Output pixels per direct kernel call: long enough to spread each call's weight loads
/// over many pixels, short enough that the input rows it reads stay in L1.
const DIRECT_PIXELS_PER_CALL: usize = 128;

/// The output columns `lo..hi` whose taps all read real input columns (`lo >= hi` when
/// there are none).
fn inner_columns(g: &DwGeom) -> (usize, usize) {
    let lo = g.pad_left.div_ceil(g.stride_w);
    let reach = (g.k_w - 1) * g.dil_w + 1;
    let hi = match (g.in_w + g.pad_left).checked_sub(reach) {
        Some(last_start) => (last_start / g.stride_w + 1).min(g.out_w),
        None => 0,
    };
    (lo, hi)
}

/// What the pointer kernel needs for a row's pixels that may read padding.
struct Edges<'a> {
    g: &'a DwGeom,
    kernel: DwRowKernel,
    /// `channels` zeros, read by taps in the padding.
    zero: *const f32,
    packed: &'a [f32],
    clamp: (f32, f32),
}

impl Edges<'_> {
    /// Computes the output pixels of `out` (whole pixels of the current row, starting at
    /// column `ox_start`) with tap pointers into `tap_rows` (`None`: a padding row),
    /// `PIXELS_PER_CALL` at a time through `indirection`.
    fn run(&self, tap_rows: &[Option<&[f32]>], ox_start: usize, out: &mut [f32], indirection: &mut [*const f32]) {
        let g = self.g;
        let (c, taps, zero) = (g.channels, g.taps(), self.zero);
        let row_of_nothing: [f32; 0] = [];
        for (run, out_px) in out.chunks_mut(PIXELS_PER_CALL * c).enumerate() {
            let pixels = out_px.len() / c;
            let ind = &mut indirection[..pixels * taps];
            let ox0 = ox_start + run * PIXELS_PER_CALL;
            for (ky, row) in tap_rows.iter().enumerate() {
                for kx in 0..g.k_w {
                    let t = ky * g.k_w + kx;
                    // Pixel `p` of the run reads input column
                    // `start + p * stride_w - pad_left`: zeros for the first `left` pixels,
                    // then up to `inside` columns of the row, then zeros again.
                    let start = ox0 * g.stride_w + kx * g.dil_w;
                    let left = g.pad_left.saturating_sub(start).div_ceil(g.stride_w).min(pixels);
                    let first_ix = start + left * g.stride_w - g.pad_left;
                    let (inside, columns) = match row {
                        Some(row) if first_ix < g.in_w => {
                            ((g.in_w - 1 - first_ix) / g.stride_w + 1, &row[first_ix * c..])
                        }
                        _ => (0, &row_of_nothing[..]),
                    };
                    let mut slots = ind.chunks_exact_mut(taps);
                    slots.by_ref().take(left).for_each(|px| px[t] = zero);
                    // The pixels that read real columns: their pointers step by one input
                    // stride from the first, and the last one's `c` values lie inside
                    // `span` (checked once), so every pointer reads inside `columns`.
                    let step = g.stride_w * c;
                    let real = inside.min(pixels - left);
                    let span = real.checked_sub(1).and_then(|n| columns.get(..n * step + c));
                    match span {
                        Some(span) => {
                            let first = span.as_ptr();
                            for (p, px) in slots.by_ref().take(real).enumerate() {
                                px[t] = first.wrapping_add(p * step);
                            }
                        }
                        None => {
                            // Columns first: `zip` polls its first iterator first, so no
                            // slot is taken (and left unwritten) when the columns run out.
                            for (x, px) in columns.chunks(step).take(inside).zip(slots.by_ref()) {
                                px[t] = x.get(..c).map_or(zero, |x| x.as_ptr());
                            }
                        }
                    }
                    slots.for_each(|px| px[t] = zero);
                }
            }
            // SAFETY: the CPU has the kernels' instruction set (checked by `run_rows`);
            // `c > 0` (checked by `g.check`); `out_px` holds whole pixels of `c` values
            // and `ind` has `taps` pointers per pixel; `kernel` was chosen for `taps`;
            // each pointer is the start of a `c`-long chunk of the input (inside a
            // checked span when stepped) or of the zeros, both borrowed immutably for the
            // whole call, so they are readable and nothing writes them (`out_px` is a
            // distinct `&mut`); `packed` has exactly `packed_len(kernels, c, taps)`
            // values (checked by `run_rows`).
            unsafe { (self.kernel)(c, taps, ind, self.packed, out_px, self.clamp) };
        }
    }
}

#[cfg(test)]
mod tests;
