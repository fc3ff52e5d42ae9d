//! int8 depthwise convolution microkernels (depth multiplier 1, NHWC, per-channel int8
//! filters, int32 bias), bit-exact with TFLite's reference `DepthwiseConvPerChannel`.
//!
//! TFLite computes, per output channel `c`,
//! `acc = bias[c] + sum over in-image taps t of (x_t - zp_in) * w[t][c]`, then requantizes.
//! Here the input zero point is folded out of the inner loop: taps in the padding read a
//! row filled with `zp_in` (so `x_t - zp_in = 0`, as if skipped), and [`pack`] stores
//! `bias[c] - zp_in * sum_t w[t][c]` as the requantization bias, so a kernel sums only
//! `x_t * w_t` over every tap. All of it wraps mod 2^32, where the two forms are equal, so
//! the result is TFLite's whatever the values.
//!
//! A kernel reads its taps through *slots*: the filter taps in the order of the table's
//! [`Layout`], plus dummy slots (zero weights) where the layout groups taps. Packed
//! weights ([`PackedDw`]) follow the slots, with the requantization tables of
//! [`ChannelRequant`] (adjusted bias, multiplier, shifts):
//! - [`Layout::Wide16`] (the scalar and AVX-512 `mul32` kernels): one slot per tap in
//!   row-major filter order; per block of 16 channels, one row of 16 weights
//!   sign-extended to `i32` per slot;
//! - [`Layout::Dot4x32`] (the AVX-512 VNNI kernels): taps column by column, each
//!   column's taps in groups of 4 slots (the last group of a column padded with dummies),
//!   so a 3x3 filter is 3 groups `(ky 0, ky 1, ky 2, dummy)`; per block of 32 channels and
//!   group, 32 `i32` words, each the group's 4 weights of one channel as bytes (what
//!   `vpdpbusd` multiplies with 4 input bytes and sums), the channels in the order the
//!   kernels' byte interleave produces them. `vpdpbusd` takes its inputs unsigned, so the
//!   kernels flip their sign bit (`x + 128`) and the packing folds `-128 * sum_t w[t][c]`
//!   into the bias as well. The requantization tables of whole blocks are in the
//!   accumulators' order too (see `Layout::table_channel`). A filter column is one group
//!   for filters up to 4 rows, which lets the 3x3 kernel reuse a column's interleaved
//!   input for the next pixels.
//!
//! Weights of channels past the last one are zero.
//!
//! A row kernel computes a run of output pixels of one output row. It gets one pointer
//! per slot to the run's first pixel and a pixel step: slot `s` of pixel `p` reads the
//! `channels` values at `slots[s] + p * step`. Inside the image that is a real input row;
//! taps whose filter row is above or below the image, and dummy slots, point at the
//! zero-point row (long enough for the whole run), and pixels whose taps leave the image
//! on the left or right run one at a time with those taps on the zero-point row. A
//! sliding kernel (3x3 filters, dilation 1 along the row, stride 1 or 2) gets one pointer
//! per filter row instead, loads each input column once for the pixels that share it and
//! reads the columns left and right of the image as the zero point itself, so it takes
//! whole rows. The kernels walk channel blocks in the outer loop (weights and
//! requantization parameters stay in registers) and the run's pixels in the inner one.
//!
//! [`run_rows`] is the safe driver: it checks every length against the geometry and
//! builds each call's pointers from bounds-checked slices of the input.

#[cfg(target_arch = "x86_64")]
pub mod avx512;
#[cfg(target_arch = "x86_64")]
pub mod avx512vnni;
pub mod scalar;

use super::Isa;
use super::f32_dwconv::DwGeom;
use super::packed::Packed;
use super::qs8_float_requant::FloatRequant;
use super::qs8_requant::ChannelRequant;
use crate::error::{Error, Result};
use core::ops::Range;

/// A row kernel.
///
/// `kernel(channels, slots, step, weights, requant, output)` computes
/// `pixels = output.len() / channels` output pixels, pixel `p` reading its slot `s` from
/// `slots[s] + p * step` and writing `output[p * channels..(p + 1) * channels]`.
///
/// # Safety
/// - `channels > 0`, `output.len()` is a multiple of `channels`, `slots` is not empty and
///   has the slot count the kernel was made for (any count for the general kernel; a
///   multiple of 4 in [`Layout::Dot4x32`]);
/// - for every pixel `p` and slot `s`, `slots[s] + p * step` is readable for `channels`
///   consecutive `i8`s, which nothing writes during the call;
/// - `weights.len() >= layout.padded(channels) * layout.rows(slots.len())` for the
///   kernels' layout, packed by [`pack`], and
///   `requant.padded_channels() >= layout.padded(channels)`;
/// - the CPU has the table's instruction set.
pub type DwKernel = unsafe fn(usize, &[*const i8], usize, &[i32], &DwRequant, &mut [i8]);

/// The input columns a sliding kernel call reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlideCols {
    /// Input columns from one output pixel to the next: 1 or 2.
    pub stride: usize,
    /// The input column of the first pixel's tap `kx = 0` (negative: left of the image).
    pub first: isize,
    /// The input row's width in columns; columns outside `0..width` read the zero point.
    pub width: usize,
    /// The input zero point.
    pub zero_point: i8,
}

/// A sliding row kernel for 3x3 filters with dilation 1 along the row ([`Layout::Dot4x32`]).
///
/// `kernel(channels, rows, cols, weights, requant, output)` computes
/// `pixels = output.len() / channels` output pixels, pixel `p`'s tap `(ky, kx)` reading
/// input column `j = cols.first + p * cols.stride + kx` of row `ky`: the `channels` values
/// at `rows[ky] + j * channels` for `0 <= j < cols.width`, the zero point elsewhere; it
/// writes `output[p * channels..(p + 1) * channels]`.
///
/// # Safety
/// - `channels > 0`, `output.len()` is a multiple of `channels`, `rows.len() == 3`,
///   `cols.stride` is 1 or 2, and `cols.first + (pixels + 1) * cols.stride + 3` does not
///   overflow `isize`;
/// - `rows[ky]` is readable for `cols.width * channels` `i8`s, which nothing writes
///   during the call;
/// - `weights.len() >= layout.padded(channels) * 3`, packed by [`pack`] for a 3x3 filter,
///   and `requant.exact.padded_channels() >= layout.padded(channels)` (and as many
///   entries in each float table, if any);
/// - the CPU has the table's instruction set.
pub type DwSlideKernel = unsafe fn(usize, &[*const i8], SlideCols, &[i32], &DwRequant, &mut [i8]);

/// The int8 depthwise kernels of one instruction set. Only this module makes them (the
/// fields are private), and [`run_rows`] checks that the CPU has `isa` before it calls
/// one, so no safe code can run a kernel the CPU lacks.
#[derive(Clone, Copy)]
pub struct DwKernels {
    /// The instruction set the kernels need.
    isa: Isa,
    /// How the kernels want their weights packed and their slots ordered.
    layout: Layout,
    /// Kernels for fixed slot counts (a 3x3 and a 5x5 filter's), as `(slots, kernel)`.
    fixed: [(usize, DwKernel); 2],
    /// Kernel for any slot count.
    any: DwKernel,
    /// Sliding kernel for 3x3 filters, dilation 1 along the row, stride 1 or 2.
    slide3x3: Option<DwSlideKernel>,
}

impl DwKernels {
    /// The kernel for `slots` slots.
    fn kernel(&self, slots: usize) -> DwKernel {
        self.fixed.iter().find(|(n, _)| *n == slots).map_or(self.any, |&(_, k)| k)
    }

    /// The instruction set these kernels need.
    pub fn isa(&self) -> Isa {
        self.isa
    }
}

/// The order of slots and packed weights (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// 16-channel blocks, one slot per tap, one `i32` weight per slot and channel.
    Wide16,
    /// 32-channel blocks, slots in groups of 4 by filter column, one `i32` word of 4 byte
    /// weights per group and channel.
    Dot4x32,
}

impl Layout {
    /// Channels per block.
    fn block(self) -> usize {
        match self {
            Layout::Wide16 => 16,
            Layout::Dot4x32 => 32,
        }
    }

    /// Slot groups per filter column of `k_h` taps.
    fn groups_per_column(self, k_h: usize) -> usize {
        match self {
            Layout::Wide16 => k_h,
            Layout::Dot4x32 => k_h.div_ceil(4),
        }
    }

    /// Slots of a `k_h` x `k_w` filter, or `None` if the count overflows.
    fn slots(self, k_h: usize, k_w: usize) -> Option<usize> {
        match self {
            Layout::Wide16 => k_h.checked_mul(k_w),
            Layout::Dot4x32 => k_h.div_ceil(4).checked_mul(k_w)?.checked_mul(4),
        }
    }

    /// The slot of tap `(ky, kx)` of a `k_h` x `k_w` filter.
    fn slot(self, (ky, kx): (usize, usize), (k_h, k_w): (usize, usize)) -> usize {
        match self {
            Layout::Wide16 => ky * k_w + kx,
            Layout::Dot4x32 => (kx * self.groups_per_column(k_h) + ky / 4) * 4 + ky % 4,
        }
    }

    /// Rows of packed weights per channel block (`block()` words each) for `slots` slots.
    fn rows(self, slots: usize) -> usize {
        match self {
            Layout::Wide16 => slots,
            Layout::Dot4x32 => slots / 4,
        }
    }

    /// `channels` rounded up to whole blocks.
    pub fn padded(self, channels: usize) -> usize {
        channels.div_ceil(self.block()) * self.block()
    }

    /// What the kernels add to every input value (`x + 128` for `vpdpbusd`'s unsigned
    /// operand), so what the packing subtracts times the weight sums.
    fn input_bias(self) -> i32 {
        match self {
            Layout::Wide16 => 0,
            Layout::Dot4x32 => 128,
        }
    }

    /// The position in a block's row of channel `j` of the block: for
    /// [`Layout::Dot4x32`], the interleave of 4 slot vectors of 32 bytes by byte and then
    /// by 16-bit pair, within 16-byte halves, gives four vectors of 8 words holding
    /// channels `4k..4k + 4` and `16 + 4k..16 + 4k + 4`.
    fn position(self, j: usize) -> usize {
        match self {
            Layout::Wide16 => j,
            Layout::Dot4x32 => {
                let (half, k, i) = (j / 16, (j % 16) / 4, j % 4);
                k * 8 + half * 4 + i
            }
        }
    }

    /// The channel whose requantization parameters entry `i` of the tables holds, of
    /// `channels`. [`Layout::Dot4x32`] kernels requantize a whole block's accumulators
    /// without putting them back in channel order first: entries `32b..32b + 16` of a
    /// full block `b` are its accumulator vectors 0 and 2 (lane `4L + j` of 128-bit half
    /// `L` of the pair: channel `16 (L % 2) + 8 (L / 2) + j`), entries `32b + 16..` vectors
    /// 1 and 3 (the same channels plus 4). The last block, if partial, is in channel order.
    fn table_channel(self, i: usize, channels: usize) -> usize {
        match self {
            Layout::Wide16 => i,
            Layout::Dot4x32 => {
                let (b, e) = (i / 32, i % 32);
                if (b + 1) * 32 > channels {
                    return i;
                }
                let (pair, l, j) = (e / 16, (e % 16) / 4, e % 4);
                b * 32 + 16 * (l % 2) + 8 * (l / 2) + 4 * pair + j
            }
        }
    }
}

/// Length of the packed weights (in `i32` words) for `channels` channels and a `k_h` x
/// `k_w` filter in `layout`, or `None` if it overflows.
pub fn packed_len(layout: Layout, channels: usize, (k_h, k_w): (usize, usize)) -> Option<usize> {
    layout.padded(channels).checked_mul(layout.rows(layout.slots(k_h, k_w)?))
}

/// A layer's requantization: exact, and the float shortcut where the layer allows it and
/// the kernels use one (same entries, in the tables' order).
#[derive(Clone, Debug)]
pub struct DwRequant {
    pub exact: ChannelRequant,
    pub float: Option<FloatRequant>,
}

/// Depthwise weights packed for the kernels, with the zero-point-adjusted requantization.
#[derive(Clone, Debug)]
pub struct PackedDw {
    layout: Layout,
    channels: usize,
    filter: (usize, usize),
    weights: Packed<i32>,
    requant: DwRequant,
    zero_point: i8,
}

impl PackedDw {
    /// Channels packed.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The filter's height and width.
    pub fn filter(&self) -> (usize, usize) {
        self.filter
    }

    /// The input zero point folded into the bias (what padding reads).
    pub fn zero_point(&self) -> i8 {
        self.zero_point
    }

    /// Bytes held by the packed weights and tables.
    pub fn bytes(&self) -> usize {
        let float = if self.requant.float.is_some() { 5 } else { 0 };
        self.weights.bytes() + 4 * (4 + float) * self.requant.exact.padded_channels()
    }
}

/// Packs int8 depthwise weights for `kernels`: `weights(ky, kx, channel)` of a `k_h` x
/// `k_w` filter, `bias` (zero when absent) with one value per channel, the input zero
/// point `input_zero_point` (folded into the bias; it must be an int8 value), each
/// channel's quantized multiplier and shift from `mult_shift` (TFLite's
/// `QuantizeMultiplier` form), and the output zero point and clamp range (within
/// `-128..=127`).
#[allow(clippy::too_many_arguments)]
pub fn pack(
    kernels: &DwKernels,
    channels: usize,
    (k_h, k_w): (usize, usize),
    weights: impl Fn(usize, usize, usize) -> i8,
    bias: Option<&[i32]>,
    input_zero_point: i32,
    mult_shift: impl Fn(usize) -> (i32, i32),
    output_offset: i32,
    (min, max): (i32, i32),
) -> Result<PackedDw> {
    if channels == 0 || k_h == 0 || k_w == 0 {
        return Err(Error::new(format!(
            "int8 depthwise weights need channels and taps, got {channels} channels and a {k_h}x{k_w} filter"
        )));
    }
    if let Some(b) = bias
        && b.len() != channels
    {
        return Err(Error::new(format!("bias has {} values for {channels} channels", b.len())));
    }
    let zero_point = i8::try_from(input_zero_point)
        .map_err(|_| Error::new(format!("input zero point {input_zero_point} is not an int8 value")))?;
    if min > max || min < i8::MIN as i32 || max > i8::MAX as i32 {
        return Err(Error::new(format!("int8 clamp range [{min}, {max}] is not within [-128, 127]")));
    }
    let layout = kernels.layout;
    let len = packed_len(layout, channels, (k_h, k_w)).ok_or_else(|| {
        Error::new(format!("packed depthwise weights for {channels} channels and a {k_h}x{k_w} filter overflow"))
    })?;
    let mut data = Vec::new();
    data.try_reserve_exact(len)
        .map_err(|_| Error::new(format!("cannot allocate {len} packed int8 depthwise weights")))?;
    data.resize(len, 0i32);
    let mut sums = vec![0i32; channels];
    let mut abs_sums = vec![0u64; channels];
    let block = layout.block();
    let rows = len / layout.padded(channels);
    for (c, sum) in sums.iter_mut().enumerate() {
        let (b, j) = (c / block, c % block);
        for ky in 0..k_h {
            for kx in 0..k_w {
                let w = weights(ky, kx, c);
                *sum = sum.wrapping_add(w as i32);
                abs_sums[c] += u64::from(w.unsigned_abs());
                let s = layout.slot((ky, kx), (k_h, k_w));
                let (row, word) = match layout {
                    Layout::Wide16 => (s, w as i32),
                    Layout::Dot4x32 => (s / 4, ((w as u8 as u32) << (8 * (s % 4))) as i32),
                };
                data[(b * rows + row) * block + layout.position(j)] |= word;
            }
        }
    }
    // `acc = sum_t (x_t + input_bias) * w_t` over every tap, padding included; TFLite's is
    // `sum over in-image taps of (x_t - zp) * w_t`, and padding reads `zp`, so the two
    // differ by `(zp + input_bias) * sum_t w_t`, taken off the bias (mod 2^32, as both
    // sums wrap).
    let fold = input_zero_point + layout.input_bias();
    let channel = |i: usize| Some(layout.table_channel(i, channels)).filter(|&c| c < channels);
    let requant = ChannelRequant::new(
        layout.padded(channels),
        |i| channel(i).map_or((0, 0), &mult_shift),
        |i| channel(i).map_or(0, |c| bias.map_or(0, |b| b[c]).wrapping_sub(fold.wrapping_mul(sums[c]))),
        output_offset,
        (min, max),
    );
    // The VNNI kernels sum `(x + 128) * w`, 0..=255 times each weight; the others keep
    // the exact path.
    let float = match layout {
        Layout::Dot4x32 => FloatRequant::new(&requant, |i| channel(i).map_or(0, |c| 255 * abs_sums[c])),
        Layout::Wide16 => None,
    };
    let requant = DwRequant { exact: requant, float };
    Ok(PackedDw { layout, channels, filter: (k_h, k_w), weights: Packed::new(data), requant, zero_point })
}

/// Checks that the sizes are positive and that every length and coordinate the driver
/// forms fits in `isize`.
fn check_geom(g: &DwGeom) -> Result<()> {
    let dims = [
        g.batches, g.in_h, g.in_w, g.channels, g.out_h, g.out_w, g.k_h, g.k_w, g.stride_h, g.stride_w, g.dil_h, g.dil_w,
    ];
    if dims.contains(&0) {
        return Err(Error::new(format!("depthwise geometry has a zero size or step: {g:?}")));
    }
    let limit = isize::MAX as usize / 4;
    let far = |out: usize, stride: usize, k: usize, dil: usize, pad: usize| {
        (out - 1).checked_mul(stride)?.checked_add((k - 1).checked_mul(dil)?)?.checked_add(pad)?.checked_add(1)
    };
    let lens = [
        g.input_len(),
        g.output_len(),
        g.rows().checked_mul(g.k_h),
        far(g.out_h, g.stride_h, g.k_h, g.dil_h, g.pad_top),
        far(g.out_w, g.stride_w, g.k_w, g.dil_w, g.pad_left).and_then(|w| w.checked_mul(g.channels)),
        g.k_h.checked_mul(g.k_w),
    ];
    if lens.iter().any(|l| l.is_none_or(|v| v > limit)) {
        return Err(Error::new(format!("depthwise geometry overflows: {g:?}")));
    }
    Ok(())
}

/// Output pixels per kernel call: the input rows a call reads (a filter's rows of this
/// many pixels) stay in L1 while the kernel revisits them for each channel block.
const PIXELS_PER_CALL: usize = 64;

/// Computes output rows `first_row..first_row + output.len() / g.row_len()` (rows over all
/// batches, `batches * out_h` in all) of the int8 depthwise convolution of `input` (NHWC,
/// the whole tensor) with `packed` (made by [`pack`] for `kernels`, `g.channels` and the
/// `g.k_h` x `g.k_w` filter).
pub fn run_rows(
    kernels: &DwKernels,
    g: &DwGeom,
    input: &[i8],
    packed: &PackedDw,
    first_row: usize,
    output: &mut [i8],
) -> Result<()> {
    let row_len = g.row_len();
    if row_len == 0 || !output.len().is_multiple_of(row_len) {
        return Err(Error::new(format!("depthwise output of {} values is not whole rows of {row_len}", output.len())));
    }
    let first = first_row.checked_mul(g.out_w).ok_or_else(|| Error::new("depthwise row index overflows"))?;
    run_pixels(kernels, g, input, packed, first, output)
}

/// [`run_rows`] on output pixels `first_pixel..first_pixel + output.len() / g.channels`
/// (pixels over all rows and batches, row after row), which may start and end inside a
/// row: threads can then split a few rows evenly (7 rows of 7 pixels split 25/24 pixels
/// over two threads, not 4/3 rows).
pub fn run_pixels(
    kernels: &DwKernels,
    g: &DwGeom,
    input: &[i8],
    packed: &PackedDw,
    first_pixel: usize,
    output: &mut [i8],
) -> Result<()> {
    if !kernels.isa.is_available() {
        return Err(Error::new(format!("this CPU cannot run the {} int8 depthwise kernels", kernels.isa.name())));
    }
    check_geom(g)?;
    let (c, row_len, layout) = (g.channels, g.row_len(), kernels.layout);
    if Some(input.len()) != g.input_len() {
        return Err(Error::new(format!(
            "depthwise input has {} values, the geometry needs {:?}",
            input.len(),
            g.input_len()
        )));
    }
    let filter = (g.k_h, g.k_w);
    let padded = layout.padded(c);
    if packed.layout != layout
        || packed.channels != c
        || packed.filter != filter
        || Some(packed.weights.len()) != packed_len(layout, c, filter)
        || packed.requant.exact.padded_channels() != padded
        || [&packed.requant.exact.bias, &packed.requant.exact.left, &packed.requant.exact.right]
            .iter()
            .any(|t| t.len() != padded)
        || packed.requant.float.as_ref().is_some_and(|f| f.scale.len() != padded)
    {
        return Err(Error::new(format!(
            "packed int8 depthwise weights for {} channels and a {:?} filter ({:?}) do not fit {c} channels and a \
             {filter:?} filter ({layout:?})",
            packed.channels, packed.filter, packed.layout
        )));
    }
    let Some(run) = g.pixel_run(first_pixel, output.len())? else { return Ok(()) };
    let slots = layout.slots(g.k_h, g.k_w).ok_or_else(|| Error::new("depthwise filter slots overflow"))?;
    let slide =
        kernels.slide3x3.filter(|_| layout == Layout::Dot4x32 && filter == (3, 3) && g.dil_w == 1 && g.stride_w <= 2);
    let step = g.stride_w * c;
    let max_run = PIXELS_PER_CALL.min(g.out_w);
    let batch_len = g.in_h * g.in_w * c;
    let in_row_len = g.in_w * c;
    // The zero-point row: long enough for a whole run of pixels stepping through it, and
    // for a whole input row (what the sliding kernel reads for a row in the padding).
    let zeros = vec![packed.zero_point; ((max_run - 1) * step + c).max(in_row_len)];
    let (inner_lo, inner_hi) = inner_columns(g);
    let mut tap_rows: Vec<Option<&[i8]>> = vec![None; g.k_h];
    // Dummy slots keep pointing at the zeros.
    let mut ptrs: Vec<*const i8> = vec![zeros.as_ptr(); slots];
    let call = Call { kernel: kernels.kernel(slots), c, step, packed };
    let mut rest = output;
    for (r, Range { start: x0, end: x1 }) in run.rows() {
        let (out_row, tail) = core::mem::take(&mut rest).split_at_mut((x1 - x0) * c);
        rest = tail;
        // The next row's output lines, ahead of the stores (see `prefetch_for_write`).
        if !rest.is_empty() {
            let next = rest.len().min(row_len);
            crate::microkernels::prefetch_rows_for_write(rest.as_ptr().cast(), 1, next, next);
        }
        let (b, oy) = (r / g.out_h, r % g.out_h);
        let image = &input[b * batch_len..(b + 1) * batch_len];
        for (ky, slot) in tap_rows.iter_mut().enumerate() {
            let iy = (oy * g.stride_h + ky * g.dil_h).checked_sub(g.pad_top);
            *slot = iy.filter(|&y| y < g.in_h).map(|y| &image[y * in_row_len..(y + 1) * in_row_len]);
        }
        if let Some(kernel) = slide {
            // Whole rows: the kernel reads the padding columns as the zero point itself.
            let row = |ky: usize| tap_rows[ky].unwrap_or(&zeros[..in_row_len]).as_ptr();
            let rows = [row(0), row(1), row(2)];
            for (run, out) in out_row.chunks_mut(max_run * c).enumerate() {
                // `check_geom` keeps every column index far below `isize::MAX`.
                let first = ((x0 + run * max_run) * g.stride_w) as isize - g.pad_left as isize;
                let cols = SlideCols { stride: g.stride_w, first, width: g.in_w, zero_point: packed.zero_point };
                // SAFETY: the CPU has the kernels' instruction set (checked above);
                // `c > 0` (checked by `check_geom`); `out` holds whole pixels of `c`
                // values; `rows` are 3 pointers, each the start of an input row or of the
                // zero-point row, `in_w * c` values borrowed immutably for the whole call
                // while `out` is a distinct `&mut`; the stride is 1 or 2 and the column
                // indices stay far from overflow (`check_geom`); the weights and
                // requantization tables have the lengths of `c` channels and a 3x3 filter
                // in the kernels' layout (checked above).
                unsafe { kernel(c, &rows, cols, &packed.weights, &packed.requant, out) };
            }
            continue;
        }
        // Pixels with a tap left or right of the image, one at a time.
        let edges = (0..inner_lo.min(g.out_w)).chain(inner_hi.max(inner_lo).min(g.out_w)..g.out_w);
        for ox in edges.filter(|ox| (x0..x1).contains(ox)) {
            for (ky, row) in tap_rows.iter().enumerate() {
                for kx in 0..g.k_w {
                    let ix = (ox * g.stride_w + kx * g.dil_w).checked_sub(g.pad_left).filter(|&x| x < g.in_w);
                    let px = row.zip(ix).and_then(|(row, x)| row.get(x * c..(x + 1) * c));
                    ptrs[layout.slot((ky, kx), filter)] = px.map_or(zeros.as_ptr(), |s| s.as_ptr());
                }
            }
            call.run(&ptrs, &mut out_row[(ox - x0) * c..(ox - x0 + 1) * c]);
        }
        // The other pixels in runs: each tap steps through one real row (or the zeros).
        let (mut ox0, inner_end) = (inner_lo.max(x0), inner_hi.min(x1));
        while ox0 < inner_end {
            let n = (inner_end - ox0).min(max_run);
            // Filter row `ky`, column `kx`: the span from the run's first pixel's tap to
            // its last pixel's, or the zeros.
            let span = |ky: usize, kx: usize| {
                let need = (n - 1) * step + c;
                let span = match tap_rows[ky] {
                    Some(row) => (ox0 * g.stride_w + kx * g.dil_w)
                        .checked_sub(g.pad_left)
                        .and_then(|start| row.get(start * c..))
                        .and_then(|s| s.get(..need)),
                    None => zeros.get(..need),
                };
                span.ok_or_else(|| Error::new(format!("depthwise run at row {oy} column {ox0} leaves the input")))
            };
            for ky in 0..g.k_h {
                for kx in 0..g.k_w {
                    ptrs[layout.slot((ky, kx), filter)] = span(ky, kx)?.as_ptr();
                }
            }
            call.run(&ptrs, &mut out_row[(ox0 - x0) * c..(ox0 - x0 + n) * c]);
            ox0 += n;
        }
    }
    Ok(())
}

/// One row kernel with what stays the same across its calls.
struct Call<'a> {
    kernel: DwKernel,
    c: usize,
    step: usize,
    packed: &'a PackedDw,
}

impl Call<'_> {
    /// Runs the kernel on the pixels of `out` with slot pointers `ptrs`, each of which the
    /// caller took from a slice holding `(pixels - 1) * step + c` values.
    fn run(&self, ptrs: &[*const i8], out: &mut [i8]) {
        debug_assert!(out.len().is_multiple_of(self.c) && !out.is_empty());
        // SAFETY: the CPU has the kernels' instruction set (checked by `run_rows`); `c > 0`
        // (checked by `check_geom`); `out` holds whole pixels of `c` values; `ptrs` has
        // one pointer per slot of the layout and the kernel was chosen for that count;
        // each pointer is the start of a slice of `(pixels - 1) * step + c` values of the
        // input or of the zero-point row (for a single pixel, of `c` values), both
        // borrowed immutably for the whole call while `out` is a distinct `&mut`; the
        // weights and requantization tables have the lengths of `c` channels and this
        // filter in the kernels' layout (checked by `run_rows`).
        unsafe { (self.kernel)(self.c, ptrs, self.step, &self.packed.weights, &self.packed.requant, out) };
    }
}

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

#[cfg(test)]
mod tests;
